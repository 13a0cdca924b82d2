/* text_commands.c - text mode's commands: a typed line made into a request, or
 * answered here (help, history, replay, resume, moves, quit...). */
#include "text_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "session.h"

/* ------------------------------------------------------------- commands --- */

void text_quit(conn *c, const char *why) {
    text_session *s = c->text;
    srv_player *p = c->player;
    text_set_screen(s, TEXT_CLOSING); /* no redraws for what leaving sends */
    /* Quitting is leaving: a racer forfeits rather than idling out a grace period. */
    if (p) {
        proto_request req = {.type = PROTO_REQ_LEAVE};
        if (p->room || p->watching || p->queued || p->home) session_request(c, &req);
    }
    text_say_last(c, why);
    conn_close_after_flush(c);
}

void text_request(conn *c, proto_request *req) {
    c->text->any_command = true;
    c->text->end_now = false;
    session_request(c, req);
}

static proto_settings settings_for(int players, int size) {
    return (proto_settings){.players = players ? players : 2,
                            .size = size ? size : 4,
                            .target = 2048,
                            .time_limit = 0};
}

/* Plays a line's moves in order, stopping quietly when the game stops. */
static void play_moves(conn *c, const proto_command *cmd) {
    for (size_t i = 0; i < cmd->n_moves && !conn_is_closing(c); i++) {
        if (!text_in_game(c)) {
            if (i == 0) {
                /* A stuck board's hint says it already: the status stays empty. */
                bool stuck = text_my_seat(c) && text_shown(c->text);
                if (!stuck)
                    text_set_status(
                        c->text,
                        c->text->screen == TEXT_END
                            ? "That game is over."
                            : "You are not in a game: type solo or quick to play.");
                text_request_draw(c);
            }
            return;
        }
        proto_request req = {.type = PROTO_REQ_MOVE, .dir = (eng_dir)cmd->moves[i]};
        text_request(c, &req);
    }
}

/* `resume CODE` (or a token): takes back a seat waiting out its grace
 * period, from the lobby of this connection. The lobby guards both (codes
 * cannot be guessed: guard.h) and says what went wrong as an error. */
static void resume(conn *c, const proto_command *cmd) {
    text_session *s = c->text;
    srv_player *me = c->player;
    if (me && (me->room || me->watching || me->queued || me->home)) {
        snprintf(s->status, sizeof s->status,
                 "resume is for a new connection: type %sleave first.", text_typed(c));
        text_request_draw(c);
        return;
    }
    proto_request req = {.type = PROTO_REQ_RESUME};
    if (cmd->token[0])
        snprintf(req.token, sizeof req.token, "%s", cmd->token);
    else
        memcpy(req.code, cmd->code, sizeof req.code);
    /* In cluster mode the answer may come seconds later (a race being taken
     * over): until its `start` or error, the resume is what is going on. */
    text_set_status(s, "Looking for your seat...");
    s->resuming = true;
    text_request(c, &req);
}

/* The next frame of a playing replay is due ms from now. */
void text_replay_schedule(conn *c) {
    text_session *s = c->text;
    s->replay_at =
        s->replay && s->screen != TEXT_REPLAY_PAUSED && !text_replay_done(s->replay)
            ? uv_now(c->srv->loop) + (uint64_t)text_replay_ms(s->replay)
            : 0;
    text_arm(c);
}

void text_replay_stop(conn *c) {
    text_session *s = c->text;
    if (s->replay) text_set_screen(s, TEXT_LOBBY);
}

/* A replay's controls: pause, faster, slower, stop. Returns false for
 * anything else (which stops the replay and is run as a command). */
bool text_replay_control(conn *c, char key) {
    text_session *s = c->text;
    assert(s->replay);
    switch (key) {
    case ' ':
    case 'p':
    case 'P':
        text_set_screen(s, s->screen == TEXT_REPLAY ? TEXT_REPLAY_PAUSED : TEXT_REPLAY);
        break;
    case '+':
    case '=':
    case 'f':
        text_replay_pace(s->replay, 1);
        break;
    case '-':
    case '_':
        text_replay_pace(s->replay, -1);
        break;
    case 'q':
    case 'Q':
        text_replay_stop(c);
        text_set_status(s, "Replay stopped. Type history for more games.");
        break;
    default:
        return false;
    }
    text_replay_schedule(c);
    text_request_draw(c);
    return true;
}

/* Plays finished game g back (NULL: there is none). */
void text_replay_show(conn *c, const proto_game_record *g) {
    text_session *s = c->text;
    const char *why;
    text_replay *t = text_replay_open(g, &why);
    if (!t) {
        text_set_status(s, why);
        return;
    }
    text_replay_stop(c);
    text_show_replay(s, t);
    text_replay_schedule(c);
}

static void start_replay(conn *c, uint64_t id) {
    text_session *s = c->text;
    if (text_shown(s)) {
        snprintf(s->status, sizeof s->status,
                 "You are in a game: type %sleave first to watch a replay.",
                 text_typed(c));
        return;
    }
    const proto_game_record *g = journal_replay(c->srv->journal, id);
    if (!g && c->srv->remote && id) {
        /* Another node's game, maybe: asked as JSON's replay is; the answer
         * (on_replay) or the error (on_error) says. */
        proto_request req = {.type = PROTO_REQ_REPLAY, .has_game = true, .game = id};
        text_set_status(s, "Looking for that game on the other servers...");
        s->replay_asked = id;
        text_request(c, &req);
        return;
    }
    text_replay_show(c, g);
}

/* The request a lobby command makes; false for the commands text mode
 * answers itself. */
static bool request_of(const proto_command *cmd, proto_request *req) {
    memset(req, 0, sizeof *req);
    switch (cmd->type) {
    case PROTO_CMD_NAME:
        req->type = PROTO_REQ_HELLO;
        memcpy(req->name, cmd->name, sizeof req->name);
        return true;
    case PROTO_CMD_SOLO:
        req->type = PROTO_REQ_SOLO;
        req->settings = settings_for(1, cmd->number);
        return true;
    case PROTO_CMD_CREATE:
    case PROTO_CMD_QUICK:
        req->type = cmd->type == PROTO_CMD_CREATE ? PROTO_REQ_CREATE : PROTO_REQ_QUICK;
        req->settings = settings_for(cmd->number, cmd->size);
        if (cmd->target) req->settings.target = cmd->target; /* create's third */
        return true;
    case PROTO_CMD_BOT: /* a race against one bot, at once */
        req->type = PROTO_REQ_CREATE;
        req->settings = settings_for(2, 0);
        req->bots = 1;
        req->level = cmd->number ? cmd->number : PROTO_BOT_LEVEL_DEFAULT;
        return true;
    case PROTO_CMD_JOIN:
    case PROTO_CMD_WATCH:
        req->type = cmd->type == PROTO_CMD_JOIN ? PROTO_REQ_JOIN : PROTO_REQ_WATCH;
        memcpy(req->room, cmd->room, sizeof req->room);
        return true;
    case PROTO_CMD_ROOMS:
        req->type = PROTO_REQ_ROOMS;
        return true;
    case PROTO_CMD_LEAVE:
        req->type = PROTO_REQ_LEAVE;
        return true;
    case PROTO_CMD_REMATCH:
        req->type = PROTO_REQ_REMATCH;
        return true;
    case PROTO_CMD_REGISTER:
        req->type = PROTO_REQ_REGISTER;
        return true;
    case PROTO_CMD_LOGIN: /* hello with the key */
        req->type = PROTO_REQ_HELLO;
        memcpy(req->name, cmd->name, sizeof req->name);
        req->has_key = true;
        memcpy(req->key, cmd->key, sizeof req->key);
        return true;
    case PROTO_CMD_TOP: /* what fits a 24-row terminal with the title */
        req->type = PROTO_REQ_LEADERBOARD;
        req->board = PROTO_BOARD_RATING;
        req->limit = TEXT_TOP_ROWS;
        return true;
    case PROTO_CMD_TOP_DAILY: /* today's (date "" is today) */
        req->type = PROTO_REQ_LEADERBOARD;
        req->board = PROTO_BOARD_DAILY;
        req->settings.size = cmd->number ? cmd->number : 4;
        req->limit = TEXT_TOP_ROWS;
        return true;
    case PROTO_CMD_DAILY:
        req->type = PROTO_REQ_DAILY;
        req->settings = settings_for(1, cmd->number);
        return true;
    case PROTO_CMD_ARENAS:
        req->type = PROTO_REQ_ARENAS;
        return true;
    case PROTO_CMD_ARENA:
        req->type = PROTO_REQ_ARENA_JOIN;
        memcpy(req->room, cmd->room, sizeof req->room);
        return true;
    case PROTO_CMD_ARENA_NEW: /* starts in a minute, as JSON's default */
        req->type = PROTO_REQ_ARENA_CREATE;
        snprintf(req->arena_name, sizeof req->arena_name, "arena");
        req->minutes = cmd->number;
        req->settings = (proto_settings){.players = cmd->size ? cmd->size : 4,
                                         .size = 4,
                                         .target = 2048,
                                         .rated = true};
        req->starts_in = PROTO_ARENA_STARTS_DEF;
        return true;
    default:
        return false;
    }
}

/* Line mode in a replay: one control per line, an empty line pauses too.
 * Returns true if the line was one; any other line stops the replay (and is
 * then run as a command). */
static bool replay_line(conn *c, const char *line, size_t len) {
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    while (len && (line[0] == ' ' || line[0] == '\t'))
        line++, len--;
    if (len == 0 && text_replay_control(c, 'p')) return true;
    if (len == 1 && text_replay_control(c, line[0])) return true;
    text_replay_stop(c);
    return false;
}

/* "... - type help": where keys play, help is typed ":help". */
static void command_error(conn *c, const proto_command *cmd) {
    static const char suffix[] = " - type help";
    size_t n = strlen(cmd->error), k = sizeof suffix - 1;
    if (text_keys_play(c) && n >= k && !strcmp(cmd->error + n - k, suffix))
        snprintf(c->text->status, sizeof c->text->status, "%.*s - type :help",
                 (int)(n - k), cmd->error);
    else
        text_set_status(c->text, cmd->error);
}

/* help and history: in a game the board keeps the screen (help says in one
 * line what can be typed there); elsewhere the lobby shows what was asked. */
static void show_in_lobby(conn *c, proto_cmd_type type) {
    text_session *s = c->text;
    if (!text_shown(s)) {
        text_drop_end(s);
        text_set_screen(s, type == PROTO_CMD_HELP ? TEXT_HELP : TEXT_HISTORY);
        if (s->screen == TEXT_HISTORY && c->srv->remote) {
            /* Every node's games, as JSON's history: this node's show until
             * the answer comes (on_history). */
            proto_request req = {.type = PROTO_REQ_HISTORY, .limit = TEXT_HISTORY_MAX};
            s->history_asked = true;
            text_request(c, &req);
        }
    } else if (type == PROTO_CMD_HELP) {
        text_set_status(s, proto_command_help_in_game(text_char_mode(s)));
    } else {
        snprintf(s->status, sizeof s->status,
                 "history is for the lobby: type %sleave first.", text_typed(c));
    }
}

/* logout: a guest again, under a guest's name (an account's name is the
 * account's alone). */
static void logout(conn *c) {
    srv_player *p = c->player;
    if (!p || !p->account) {
        text_set_status(c->text, "You are not logged in (register keeps a name).");
        text_request_draw(c);
        return;
    }
    proto_request req = {.type = PROTO_REQ_HELLO};
    snprintf(req.name, sizeof req.name, "player-%llu", (unsigned long long)p->id);
    c->text->logging_out = true;
    text_request(c, &req);
}

/* profile [NAME]: without a name, one's own (an account's). */
static void profile(conn *c, const proto_command *cmd) {
    srv_player *p = c->player;
    proto_request req = {.type = PROTO_REQ_PROFILE};
    if (cmd->name[0])
        memcpy(req.name, cmd->name, sizeof req.name);
    else if (p && p->account)
        snprintf(req.name, sizeof req.name, "%s", p->name);
    else {
        text_set_status(c->text,
                        "profile takes a player's name (you are not logged in).");
        text_request_draw(c);
        return;
    }
    text_request(c, &req);
}

void text_run_command(conn *c, const char *line, size_t len) {
    text_session *s = c->text;
    s->status[0] = '\0';
    text_forget_account_screen(s); /* a key is shown once */
    s->logging_out = false;
    s->named = false;
    if (s->screen == TEXT_HELP || s->screen == TEXT_HISTORY)
        text_set_screen(s, TEXT_LOBBY);
    /* An answer to an earlier history or replay is no longer awaited. */
    s->history_asked = false;
    s->replay_asked = 0;
    free(s->history);
    s->history = NULL;
    if (s->replay && replay_line(c, line, len)) return;
    proto_command cmd;
    proto_request req;
    proto_command_parse(line, len, &cmd);
    bool made = request_of(&cmd, &req);
    memset(cmd.key, 0, sizeof cmd.key); /* a login's key is not kept */
    if (made) {
        if (text_shown(s) &&
            (cmd.type == PROTO_CMD_TOP || cmd.type == PROTO_CMD_TOP_DAILY ||
             cmd.type == PROTO_CMD_REGISTER)) {
            /* The board keeps the screen: these are for the lobby. */
            memset(&req, 0, sizeof req);
            snprintf(s->status, sizeof s->status,
                     "That is for the lobby: type %sleave first.", text_typed(c));
            text_request_draw(c);
            return;
        }
        if (req.type == PROTO_REQ_ARENA_CREATE && c->player) /* named after its host */
            snprintf(req.arena_name, sizeof req.arena_name, "%s's arena",
                     c->player->name);
        text_request(c, &req);
        memset(req.key, 0, sizeof req.key);
        return;
    }
    switch (cmd.type) {
    case PROTO_CMD_MOVES:
        play_moves(c, &cmd);
        return;
    case PROTO_CMD_RESUME:
        resume(c, &cmd);
        return;
    case PROTO_CMD_QUIT:
        text_quit(c, "Goodbye!");
        return;
    case PROTO_CMD_ERROR:
        command_error(c, &cmd);
        break;
    case PROTO_CMD_HELP:
    case PROTO_CMD_HISTORY:
        show_in_lobby(c, cmd.type);
        break;
    case PROTO_CMD_REPLAY:
        start_replay(c, cmd.game);
        break;
    case PROTO_CMD_LOGOUT:
        logout(c);
        return;
    case PROTO_CMD_PROFILE:
        if (text_shown(s)) {
            snprintf(s->status, sizeof s->status,
                     "That is for the lobby: type %sleave first.", text_typed(c));
            break;
        }
        profile(c, &cmd);
        return;
    case PROTO_CMD_COLOR:
        s->color = cmd.on ? PROTO_COLOR_256 : PROTO_COLOR_OFF;
        text_set_status(s, cmd.on ? "Colour is on." : "Colour is off.");
        break;
    default: /* empty */
        break;
    }
    text_request_draw(c);
}
