/* text.c - text mode for humans on telnet or netcat: probe, greeting, commands, keys,
 * redraws. */
#include "text.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "accounts.h"

#include "command.h"
#include "journal.h"
#include "lobby.h"
#include "session.h"
#include "render.h"
#include "telnet.h"
#include "text_replay.h"
#include "view.h"

/* How long the probe's answer may take before the greeting. */
#define GREET_WAIT_MS 500
/* Once telnet answers, the rest of its answer (window size) follows at once. */
#define GREET_SETTLE_MS 30
/* At most one redraw per this many ms, so a fast bot cannot flood a terminal. */
#define REDRAW_MS 50
/* An Esc with nothing after it this long is a lone Esc, not an arrow key. */
#define ESC_MS 80
/* What a terminal that reports no size (netcat) is assumed to have. */
#define DEFAULT_COLS 80
#define DEFAULT_ROWS 24

/* A player's last end screen, kept because a solo game's room is gone by the
 * time the human looks at it. */
typedef struct text_result {
    uint64_t id;
    char name[PROTO_NAME_MAX + 1];
    eng_board board;
    uint64_t score;
    uint32_t moves;
    proto_status status;
} text_result;

/* The verdict an end screen shows. */
typedef struct text_end {
    char room[PROTO_ROOM_MAX + 1];
    proto_end_reason reason;
    uint64_t winner;
    int n;
    text_result results[PROTO_PLAYERS_MAX];
    eng_seed seed;
    char salt[33];
    char commit[65];
} text_end;

typedef struct text_session {
    proto_telnet tn;
    proto_keys keys;
    bool greeted;
    bool any_command; /* a line was typed: a '{' line is no longer a late JSON client */
    proto_color color;
    bool prompt;    /* in a game, ':' opened the command line */
    char line[128]; /* the command line being typed in character mode */
    size_t line_len;
    char status[192]; /* what just happened, shown under the boards */
    bool show_help;   /* the lobby shows the whole command list */
    /* The lobby shows an account screen (register's key, top, profile), made
     * from the reply; freed at the next command, so a key is shown once. */
    char *account_screen;
    bool named;       /* the status says the new name: the lobby need not */
    bool resuming;    /* a resume was asked: its `start` keeps the status */
    bool logging_out; /* logout was asked: its `welcome` says so */
    /* The room it is in or watches, as the last message about it showed it
     * (a reference); NULL in the lobby. Text mode reads no room. */
    srv_view *view;
    char resume_code[PROTO_RESUME_CODE_LEN + 1]; /* its seat's, from its `start` */
    /* Deadlines in loop time (ms), 0 = none; one timer serves them all.
     * tick_at: a grace countdown on screen changes its second. */
    uint64_t greet_at, draw_at, esc_at, tick_at;
    uint64_t last_draw;
    bool dirty;
    /* The end screen. */
    bool has_end;
    bool end_now;  /* the `end` came in reply to the request being handled */
    text_end *end; /* made by the first `end`: an idle session holds none */
    /* The record: `history` lists games in the lobby; `replay ID` plays one
     * back (text_replay.c), a frame at replay_at unless paused. */
    bool show_history;
    /* In cluster mode the list and the game come from every node, as JSON's
     * do: asked (history_asked, replay_asked: the id) and shown when the
     * answer comes; the list is kept (history) while the screen shows it. */
    bool history_asked;
    uint64_t replay_asked;
    struct text_history *history;
    struct text_replay *replay;
    uint64_t replay_at;
    bool replay_paused;
} text_session;

/* The cluster's history list as its answer came (at most 10 games). */
#define TEXT_HISTORY_MAX 10
typedef struct text_history {
    int n;
    char entries[TEXT_HISTORY_MAX][TEXT_HISTORY_ENTRY];
} text_history;

static void text_arm(conn *c);
static bool awake(conn *c);
static bool can_sleep(const conn *c);
static void on_sleep_due(conn *c);
static void draw(conn *c);

/* --------------------------------------------------------------- output --- */

/* Writes bytes for a human; on telnet a 0xFF data byte goes out doubled. */
static void out(conn *c, const char *data, size_t len) {
    text_session *s = c->text;
    if (!s || !s->tn.seen || !memchr(data, 0xff, len)) {
        conn_write(c, data, len);
        return;
    }
    unsigned char *esc = malloc(proto_telnet_escaped_len(data, len));
    if (!esc) {
        conn_close(c);
        return;
    }
    size_t n = proto_telnet_escape(data, len, esc);
    conn_write(c, (const char *)esc, n);
    free(esc);
}

static void outs(conn *c, const char *str) {
    out(c, str, strlen(str));
}

/* A closing line's end: netcat waits for Enter after the server closes. */
#define NETCAT_HINT " (press Enter to close netcat)"

/* Ends the last line before a close: plainly on telnet, with the hint for netcat. */
static void end_last_line(conn *c) {
    outs(c, c->text && c->text->tn.seen ? "\r\n" : NETCAT_HINT "\r\n");
}

/* The last line before the connection closes; netcat notices the close only
 * when Enter is pressed, so it is told to. */
static void say_last(conn *c, const char *line) {
    outs(c, "\r\n");
    outs(c, line);
    end_last_line(c);
}

/* A continuation byte of a UTF-8 character (10xxxxxx). */
static bool utf8_tail(char ch) {
    return ((unsigned char)ch & 0xc0) == 0x80;
}

/* The command line being typed, as its echo showed it: ASCII as typed, a
 * '?' for each non-ASCII character (it is refused anyway, and a terminal
 * never gets bytes it could take for a control). */
static void typed_line(proto_buf *b, const char *line, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)line[i] < 0x80)
            proto_buf_append(b, &line[i], 1);
        else if (!utf8_tail(line[i]))
            proto_buf_puts(b, "?");
    }
}

static void set_status(text_session *s, const char *msg) {
    snprintf(s->status, sizeof s->status, "%s", msg);
}

/* Asks for a redraw: now if the last one is old enough, else at the pace. */
static void request_draw(conn *c) {
    text_session *s = c->text;
    if (!s->greeted || !conn_is_open(c)) return;
    s->dirty = true;
    uint64_t now = uv_now(c->srv->loop);
    if (now >= s->last_draw + REDRAW_MS) {
        draw(c);
        return;
    }
    s->draw_at = s->last_draw + REDRAW_MS;
    text_arm(c);
}

/* ---------------------------------------------------------- what it is --- */

/* The room whose boards the human sees, if any: a running game it plays or
 * watches. A spectator sees the last boards until the `end` reaches it
 * (fanout.h), as its view is the last broadcast's. */
static srv_view *shown(const text_session *s) {
    return s->view && s->view->state == SRV_VIEW_RUNNING ? s->view : NULL;
}

/* c's seat in the room of its view, NULL for a spectator or in the lobby. A
 * seat that left is not its any more: the room lets it go right after the
 * messages of the leave. */
static const srv_view_seat *my_seat(const conn *c) {
    if (!c->text || !c->player) return NULL;
    const srv_view_seat *seat = srv_view_seat_of(c->text->view, c->player->id);
    return seat && seat->seated && seat->status != PROTO_LEFT ? seat : NULL;
}

/* "In a game" (protocol/README.md): playing or won in a running game; such a
 * player's keys are moves in character mode. */
static bool in_game(const conn *c) {
    const srv_view_seat *seat = my_seat(c);
    return seat && shown(c->text) &&
           (seat->status == PROTO_PLAYING || seat->status == PROTO_WON);
}

/* Forgets the room: the player left it (or never gets another message of it). */
static void forget_room(text_session *s) {
    srv_view_set(&s->view, NULL);
    s->resume_code[0] = '\0';
}

static bool char_mode(const text_session *s) {
    return s->tn.echo;
}

/* True where a key is a move at once (telnet, in a game): a command is
 * typed after ':' there, so what the screen tells to type says ":help". */
static bool keys_play(const conn *c) {
    return c->text && char_mode(c->text) && in_game(c);
}

/* The command word as it is typed where the message is shown ("leave" or,
 * where keys play, ":leave"), for the messages below. */
static const char *typed(const conn *c) {
    return keys_play(c) ? ":" : "";
}

/* -------------------------------------------------------------- screens --- */

/* Rows of `top`: with the title, a heading and the status, 24 rows. */
#define TEXT_TOP_ROWS 15

static const char *title = "race2048 - race your friends at 2048";

static int term_cols(const text_session *s) {
    return s->tn.width ? s->tn.width : DEFAULT_COLS;
}

/* Lines a screen may end with CRLF: the terminal's rows but the last, where
 * the cursor (and the prompt) stays. */
static int term_lines(const text_session *s) {
    int rows = s->tn.height ? s->tn.height : DEFAULT_ROWS;
    return rows > 2 ? rows - 1 : 1;
}

/* The lobby's commands: two columns where they fit, else one. */
static const char *const lobby_commands[][2] = {
    {"solo [SIZE]", "play alone (3-8, default 4)"},
    {"quick [N]", "race the next who ask"},
    {"create [N]", "make a room for N players"},
    {"join CODE", "join a friend's room"},
    {"watch CODE", "watch a race"},
    {"rooms", "list the rooms"},
    {"leave", "leave a room, queue or game"},
    {"rematch", "race them again"},
    {"name NAME", "choose your name"},
    {"resume CODE", "seat back after a drop"},
    {"history", "the games that ended lately"},
    {"replay ID", "watch one again"},
    {"color on|off", "colours"},
    {"bot [LEVEL]", "race a bot now (1-5)"},
    {"help", "every command"},
    {"quit", "leave the server"},
};
#define LOBBY_COMMANDS (int)(sizeof lobby_commands / sizeof lobby_commands[0])

static const char lobby_rules[] =
    "Slide the tiles with the arrow keys (or w a s d, h j k l): equal tiles merge and "
    "score. In a race everyone gets the same tiles in the same places; the first to "
    "make the target tile wins, or the best score once every board is stuck or the "
    "time is up.";

static const char lobby_keys[] =
    "On telnet, in a game, every key is a move at once (h and l too): type : first "
    "for a command (:leave, :help).";

/* Two columns need 80: 2 + 12 + 2 + 27 on the left, 2 + 11 + 1 + 22 on the
 * right. */
static void lobby_command_list(proto_buf *b, int cols) {
    if (cols >= 80) {
        for (int i = 0; i < LOBBY_COMMANDS; i += 2) {
            if (i + 1 == LOBBY_COMMANDS) {
                proto_render_linef(b, "  %-12s  %s", lobby_commands[i][0],
                                   lobby_commands[i][1]);
                break;
            }
            proto_render_linef(b, "  %-12s  %-27s  %-11s %s", lobby_commands[i][0],
                               lobby_commands[i][1], lobby_commands[i + 1][0],
                               lobby_commands[i + 1][1]);
        }
        return;
    }
    for (int i = 0; i < LOBBY_COMMANDS; i++) {
        char line[64];
        snprintf(line, sizeof line, "  %-12s  %s", lobby_commands[i][0],
                 lobby_commands[i][1]);
        proto_render_wrapped(b, line, cols);
    }
}

/* What the lobby says about where the player stands: name, queue, room. */
static void lobby_situation(conn *c, proto_buf *b, int cols) {
    text_session *s = c->text;
    srv_player *p = c->player;
    if (p && !s->named) {
        char line[80];
        if (p->account)
            snprintf(line, sizeof line, "You are %s (rating %d).", p->name,
                     acct_rating(p->account));
        else
            snprintf(line, sizeof line, "You are %s.", p->name);
        proto_render_wrapped(b, line, cols);
    }
    if (p && p->queued) {
        char line[160];
        int waiting = lobby_queue_waiting(p);
        snprintf(line, sizeof line,
                 "Looking for a %d-player race (%dx%d to %u): %d of %d here.\nType leave "
                 "to stop waiting.",
                 p->queue_key.players, p->queue_key.size, p->queue_key.size,
                 p->queue_key.target, waiting, p->queue_key.players);
        proto_render_wrapped(b, line, cols);
    }
    /* A waiting room that nobody is left in closes now: not shown. */
    const srv_view *v = s->view;
    if (v && v->state == SRV_VIEW_WAITING && v->nseats > 0) {
        proto_buf t;
        proto_buf_init(&t);
        proto_buf_printf(&t, "Room %s (%dx%d to %u): %d of %d players are here:", v->code,
                         v->settings.size, v->settings.size, v->settings.target,
                         v->nseats, v->settings.players);
        for (int i = 0; i < v->nseats; i++)
            proto_buf_printf(&t, "%s %s", i ? "," : "", v->seats[i].name);
        proto_buf_printf(&t, ".\nTell a friend to type:  join %s", v->code);
        if (!t.failed) proto_render_wrapped(b, t.data, cols);
        if (t.failed) b->failed = true;
        proto_buf_free(&t);
    }
    if (s->status[0]) proto_render_wrapped(b, s->status, cols);
}

/* Cuts what b holds from `from` on after `rows` terminal rows at cols
 * columns (a line wider than cols takes more than one). */
static void clip_rows(proto_buf *b, size_t from, int rows, int cols) {
    if (b->failed) return;
    size_t line = from;
    for (size_t i = from; i + 1 < b->len; i++) {
        if (b->data[i] != '\r' || b->data[i + 1] != '\n') continue;
        rows -= proto_render_count_rows(b->data + line, i + 2 - line, cols);
        if (rows < 0) {
            b->len = line;
            b->data[b->len] = '\0';
            return;
        }
        line = i + 2;
    }
}

/* The lobby fits the terminal: the rules, the commands and where the player
 * stands, dropping the rules first, then the commands, when it is short.
 * What was asked for (help, history) keeps the screen before the rules: as
 * much of it as fits. */
static void draw_lobby(conn *c, proto_buf *b) {
    text_session *s = c->text;
    int cols = term_cols(s), lines = term_lines(s);
    proto_buf situation, commands;
    proto_buf_init(&situation);
    proto_buf_init(&commands);
    lobby_situation(c, &situation, cols);
    int n_title = proto_render_wrapped(NULL, title, cols);
    int n_situation = proto_render_count_lines(situation.data, situation.len);
    bool asked = s->show_history || s->show_help || s->account_screen;
    /* Rows for what was asked: the rest but the blank lines around it. */
    int room_for = lines - n_title - n_situation - 2;
    if (s->show_history) {
        static const char heading[] = "Recently finished games (replay ID watches one):";
        int n_heading = proto_render_wrapped(NULL, heading, cols);
        proto_render_wrapped(&commands, heading, cols);
        int rows = room_for > n_heading ? room_for - n_heading : 0;
        const proto_game_record *games[TEXT_HISTORY_MAX];
        int listed;
        if (s->history) { /* every node's, as the cluster answered */
            listed = text_replay_history_lines(
                (const char(*)[TEXT_HISTORY_ENTRY])s->history->entries, s->history->n,
                &commands, cols, rows);
        } else {
            int n = journal_history(c->srv->journal, TEXT_HISTORY_MAX, games);
            listed = n < 0 ? -1 : text_replay_history(games, n, &commands, cols, rows);
        }
        if (listed == 0 && rows > 0) proto_render_wrapped(&commands, "  none yet", cols);
        if (listed < 0) commands.failed = true;
    } else if (s->show_help) {
        proto_render_wrapped(&commands, proto_command_help(), cols);
    } else if (s->account_screen) {
        proto_render_wrapped(&commands, s->account_screen, cols);
    } else {
        lobby_command_list(&commands, cols);
    }
    if (asked && !commands.failed && room_for > 0)
        clip_rows(&commands, 0, room_for, cols);
    int n_commands = proto_render_count_lines(commands.data, commands.len);
    int n_rules = proto_render_wrapped(NULL, lobby_rules, cols);
    int n_keys = proto_render_wrapped(NULL, lobby_keys, cols);

    size_t start = b->len;
    proto_buf_puts(b, "\x1b[H\x1b[2J");
    proto_render_wrapped(b, title, cols);
    int left = lines - n_title - n_situation;
    if (!asked && left >= 1 + n_rules + 1 + n_commands + n_keys + 1) {
        proto_render_linef(b, "%s", "");
        proto_render_wrapped(b, lobby_rules, cols);
        left -= 1 + n_rules;
    }
    if (left >= 1 + n_commands + 1) {
        proto_render_linef(b, "%s", "");
        if (commands.len) proto_buf_append(b, commands.data, commands.len);
        left -= 1 + n_commands;
        if (!asked && left >= n_keys + 1) {
            proto_render_wrapped(b, lobby_keys, cols);
            left -= n_keys;
        }
        proto_render_linef(b, "%s", "");
    } else if (asked && left >= n_commands) {
        if (commands.len) proto_buf_append(b, commands.data, commands.len);
    } else if (left >= 2) {
        proto_render_wrapped(b, "Type help for the commands, or bot to race a bot now.",
                             cols);
    }
    if (situation.len) proto_buf_append(b, situation.data, situation.len);
    if (situation.failed || commands.failed) b->failed = true;
    proto_buf_free(&situation);
    proto_buf_free(&commands);
    /* Whatever still does not fit (a very short terminal) is cut off at the
     * bottom, so that the title stays on the top line. */
    clip_rows(b, start + 7, lines, cols);
}

/* Seconds left of a seat's grace period, rounded up; sets *change_at to the
 * loop time at which that number next changes. */
static uint64_t grace_seconds(const srv_view_seat *seat, uint64_t now,
                              uint64_t *change_at) {
    uint64_t left = seat->grace_until > now ? seat->grace_until - now : 0;
    uint64_t secs = (left + 999) / 1000;
    *change_at = secs ? now + left - (secs - 1) * 1000 : 0;
    return secs;
}

/* Under each dropped racer's board, until it is back or given up: its
 * grace period's countdown. Sets s->tick_at to when a number changes. */
static void grace_notes(conn *c, const srv_view *v, char text[][48], const char **notes) {
    text_session *s = c->text;
    uint64_t now = uv_now(c->srv->loop);
    for (int i = 0; i < v->nseats; i++) {
        const srv_view_seat *seat = &v->seats[i];
        notes[i] = NULL;
        if (seat->connected || !seat->seated || seat->status == PROTO_LEFT || v->solo)
            continue;
        uint64_t change_at;
        uint64_t secs = grace_seconds(seat, now, &change_at);
        snprintf(text[i], sizeof text[i], "connection lost, %llu s",
                 (unsigned long long)secs);
        notes[i] = text[i];
        if (change_at && (!s->tick_at || change_at < s->tick_at)) s->tick_at = change_at;
    }
}

/* A time limit's countdown, in the title: "0:58 left" (text of cap bytes),
 * or NULL for a race without one. On telnet the screen is redrawn as the
 * number changes (each second); netcat scrolls what it is sent, so there it
 * shows on the redraws that happen anyway and on one at 30 s and one at 10 s
 * left. Sets s->tick_at to that redraw's time. */
static const char *time_left(conn *c, const srv_view *v, char *text, size_t cap) {
    text_session *s = c->text;
    if (!v->ends_at) return NULL;
    uint64_t now = uv_now(c->srv->loop);
    uint64_t left = v->ends_at > now ? v->ends_at - now : 0;
    uint64_t secs = (left + 999) / 1000;
    snprintf(text, cap, "%llu:%02llu left", (unsigned long long)(secs / 60),
             (unsigned long long)(secs % 60));
    uint64_t change_at = 0;
    if (char_mode(s) && secs > 0)
        change_at = now + left - (secs - 1) * 1000;
    else if (secs > 30)
        change_at = v->ends_at - 30000;
    else if (secs > 10)
        change_at = v->ends_at - 10000;
    if (change_at && (!s->tick_at || change_at < s->tick_at)) s->tick_at = change_at;
    return text;
}

/* The seconds a screen's countdown shows (time_left), 0 for none. */
static uint32_t clock_shown(const conn *c, const srv_view *v) {
    if (!v->ends_at) return 0;
    uint64_t now = uv_now(c->srv->loop);
    uint64_t left = v->ends_at > now ? v->ends_at - now : 0;
    return (uint32_t)((left + 999) / 1000) + 1;
}

/* What a game's screen says to do (hint of cap bytes). */
static void game_hint(conn *c, const srv_view *v, char *hint, size_t cap) {
    bool seated = my_seat(c) != NULL;
    if (!in_game(c) && seated && !v->solo)
        snprintf(hint, cap,
                 "Your board is stuck; the race goes on until the others finish (or "
                 "type leave).");
    else if (!in_game(c))
        snprintf(hint, cap, "%s",
                 seated ? "Your game is over; type leave."
                        : "Watching. Type leave to stop, or another command.");
    else if (char_mode(c->text))
        snprintf(hint, cap,
                 "Arrows / wasd / hjkl move at once.  : for a command (:help).  Ctrl-C "
                 "quits.");
    else
        snprintf(
            hint, cap,
            "Type w a s d (or h j k l) and Enter to move; several at once work too.");
}

/* "resume CODE" under a racer's hint (line of cap bytes). It is never split
 * over two lines (it is copied or typed as one): the sentence before it gets
 * shorter instead. */
static void resume_line(conn *c, char *line, size_t cap) {
    unsigned long long grace = (unsigned long long)(c->srv->cfg.grace_ms / 1000);
    const char *code = c->text->resume_code;
    for (int form = 0; form < 4; form++) {
        if (form == 0)
            snprintf(line, cap,
                     "Dropped? Connect again within %llu s and type:  resume %s", grace,
                     code);
        else if (form == 1)
            snprintf(line, cap, "Dropped? Reconnect within %llu s:  resume %s", grace,
                     code);
        else if (form == 2)
            snprintf(line, cap, "If dropped (%llu s):  resume %s", grace, code);
        else
            snprintf(line, cap, "resume %s", code);
        if ((int)strlen(line) <= term_cols(c->text)) break;
    }
}

static void draw_game(conn *c, proto_buf *b, const srv_view *v) {
    text_session *s = c->text;
    proto_player views[PROTO_PLAYERS_MAX];
    char note_text[PROTO_PLAYERS_MAX][48];
    const char *notes[PROTO_PLAYERS_MAX];
    s->tick_at = 0;
    for (int i = 0; i < v->nseats; i++)
        srv_view_player(&v->seats[i], &views[i]);
    grace_notes(c, v, note_text, notes);
    bool seated = my_seat(c) != NULL;
    char hint[256];
    game_hint(c, v, hint, sizeof hint);
    if (seated && !v->solo && s->resume_code[0]) {
        char line[96];
        resume_line(c, line, sizeof line);
        size_t at = strlen(hint);
        snprintf(hint + at, sizeof hint - at, "\n%s", line);
    }
    char clock[32];
    proto_view pv = {.players = views,
                     .clock = time_left(c, v, clock, sizeof clock),
                     .n = v->nseats,
                     .you = seated ? c->player->id : 0,
                     .room = v->solo ? NULL : v->code,
                     .target = v->settings.target,
                     .width = term_cols(s),
                     .color = s->color,
                     .status = s->status[0] ? s->status : NULL,
                     .hint = hint,
                     .height = term_lines(s),
                     .notes = notes,
                     .commit = v->solo ? NULL : v->commit};
    proto_render_game(b, &pv);
}

/* What the end screen says to do next; for a race, who is waiting for whom
 * to type rematch. */
static void end_hint(conn *c, char *out, size_t cap) {
    text_session *s = c->text;
    const srv_view *v = s->view;
    const srv_view_seat *mine = my_seat(c);
    if (!s->end->room[0] || !v || v->state != SRV_VIEW_ENDED || v->solo || !mine) {
        snprintf(out, cap, "Type solo, quick, create or help.");
        return;
    }
    char asked[160] = "", waiting[160] = "";
    int n_asked = 0, n_waiting = 0;
    for (int i = 0; i < v->nseats; i++) {
        const srv_view_seat *seat = &v->seats[i];
        /* Those still here: seated, connected and not leaving. */
        if (seat == mine || !seat->seated || !seat->connected ||
            seat->status == PROTO_LEFT)
            continue;
        char *list = seat->rematch ? asked : waiting;
        int *n = seat->rematch ? &n_asked : &n_waiting;
        size_t at = strlen(list);
        snprintf(list + at, 160 - at, "%s%s", *n ? ", " : "", seat->name);
        (*n)++;
    }
    if (mine->rematch)
        snprintf(out, cap, "Waiting for %s to type rematch (or type leave).",
                 n_waiting ? waiting : "the others");
    else if (n_asked)
        snprintf(out, cap, "%s %s a rematch: type rematch (or leave).", asked,
                 n_asked == 1 ? "wants" : "want");
    else if (n_waiting)
        snprintf(out, cap, "Type rematch to race the same players again, or leave.");
    else
        snprintf(out, cap,
                 "Everyone else has gone. Type rematch to wait for them in a new room, "
                 "or quick, solo or leave.");
}

static void draw_end(conn *c, proto_buf *b) {
    text_session *s = c->text;
    int cols = term_cols(s);
    proto_player views[PROTO_PLAYERS_MAX];
    for (int i = 0; i < s->end->n; i++) {
        const text_result *t = &s->end->results[i];
        views[i] = (proto_player){.id = t->id,
                                  .name = t->name,
                                  .board = &t->board,
                                  .score = t->score,
                                  .moves = t->moves,
                                  .status = t->status};
    }
    uint64_t you = c->player ? c->player->id : 0;
    const char *code = s->end->room[0] ? s->end->room : NULL;
    proto_end_view e = {.room = code,
                        .reason = s->end->reason,
                        .winner = s->end->winner,
                        .you = you,
                        .results = views,
                        .n = s->end->n,
                        .salt = s->end->salt[0] ? s->end->salt : NULL,
                        .color = s->color,
                        .seed = s->end->seed,
                        .commit = s->end->commit[0] ? s->end->commit : NULL,
                        .width = cols};
    char hint[256];
    end_hint(c, hint, sizeof hint);
    /* What to type next and the verdict come first, then the status, the
     * ranking and the seed (proto_render_end keeps their order); the boards
     * get what is left. */
    int rows = term_lines(s);
    int hint_rows = proto_render_wrapped(NULL, hint, cols);
    int status_rows = s->status[0] ? proto_render_wrapped(NULL, s->status, cols) : 0;
    int avail = rows - hint_rows;
    bool with_status = status_rows && status_rows < avail - 1;
    e.height = avail - (with_status ? status_rows : 0);
    if (e.height < 1) e.height = 1;
    proto_buf tail;
    proto_buf_init(&tail);
    proto_render_end(&tail, &e);
    if (with_status) proto_render_wrapped(&tail, s->status, cols);
    proto_render_wrapped(&tail, hint, cols);
    int left = rows - proto_render_count_rows(tail.data, tail.len, cols);
    proto_view v = {.players = views,
                    .n = s->end->n,
                    .you = you,
                    .room = code,
                    .width = cols,
                    .color = s->color,
                    .height = left};
    /* The boards only if the viewer's fits whole (compact: its name, its
     * rows and its score), with the title and a blank line. */
    int size = s->end->n > 0 ? s->end->results[0].board.size : 4;
    if (left - 1 >= size + 3) {
        v.height = left - 1;
        proto_render_game(b, &v);
        proto_render_linef(b, "%s", ""); /* between the boards and the verdict */
    } else {
        proto_buf_puts(b, "\x1b[H\x1b[2J");
    }
    if (tail.failed) b->failed = true;
    if (tail.len) proto_buf_append(b, tail.data, tail.len);
    proto_buf_free(&tail);
}

/* The whole screen, written at once; then the command line being typed. */
static void draw_replay(conn *c, proto_buf *b) {
    text_session *s = c->text;
    char caption[192];
    text_replay_caption(s->replay, caption, sizeof caption);
    /* Once the last move is shown, pause and pace mean nothing: say how to go on. */
    const char *hint;
    if (text_replay_done(s->replay))
        hint = char_mode(s) ? "Replay over: q for the lobby, : for a command."
                            : "Replay over: type q, or a command.";
    else
        hint = char_mode(s)
                   ? "Keys: space pause, + faster, - slower, q stop."
                   : "Type p (pause), + (faster), - (slower) or q (stop) and Enter.";
    char status[256];
    snprintf(status, sizeof status, "%s%s%s", caption, s->replay_paused ? " Paused." : "",
             s->status[0] ? "" : "");
    proto_buf_puts(b, "\x1b[H\x1b[2J");
    text_replay_render(s->replay, b, term_cols(s), term_lines(s), s->color,
                       s->status[0] ? s->status : status, hint);
}

/* What a spectator's screen of a room depends on besides the room's state:
 * screens with equal shapes are equal bytes. Compared whole, so it is
 * zeroed before it is filled (padding included). */
typedef struct text_shape {
    uint64_t now; /* loop time if a countdown is on screen, else 0 */
    int32_t cols, lines;
    uint8_t color, telnet, char_mode, prompt;
    uint32_t line_len;
    uint32_t clock; /* the countdown's seconds shown, plus one; 0 for none */
    char status[sizeof((text_session *)0)->status];
    char line[sizeof((text_session *)0)->line];
} text_shape;

static void shape_of(const conn *c, const srv_view *v, text_shape *k) {
    const text_session *s = c->text;
    memset(k, 0, sizeof *k);
    for (int i = 0; i < v->nseats; i++) {
        const srv_view_seat *seat = &v->seats[i];
        if (!seat->connected && seat->seated && seat->status != PROTO_LEFT)
            k->now = uv_now(c->srv->loop); /* a grace countdown (grace_notes) */
    }
    k->cols = term_cols(s);
    k->lines = term_lines(s);
    k->color = (uint8_t)s->color;
    k->telnet = s->tn.seen;
    k->char_mode = char_mode(s);
    k->prompt = s->prompt;
    k->line_len = (uint32_t)s->line_len;
    k->clock = clock_shown(c, v);
    memcpy(k->status, s->status, strnlen(s->status, sizeof s->status));
    memcpy(k->line, s->line, s->line_len);
}

/* On telnet a race's command line is the terminal's last row (the screen
 * may end higher up): the cursor goes there first. netcat scrolls: its
 * prompt follows the screen. */
static void prompt_at_bottom(const text_session *s, proto_buf *b) {
    if (char_mode(s))
        proto_buf_printf(b, "\x1b[%d;1H", s->tn.height ? s->tn.height : DEFAULT_ROWS);
}

/* A spectator's screen of a race: the view's rendering for this shape if
 * another spectator had it made, else made and kept for the next. Queued by
 * reference either way. Returns false (nothing sent) if memory runs out. */
static bool draw_watched(conn *c, srv_view *v, proto_buf *b) {
    text_session *s = c->text;
    text_shape key;
    shape_of(c, v, &key);
    uint64_t tick_at = 0;
    srv_buf *screen = srv_view_screen_find(v, &key, sizeof key, &tick_at);
    if (screen) {
        c->srv->metrics.text_screens_shared++;
        s->tick_at = tick_at;
        conn_send_framed(c, NULL, 0, screen, screen->len);
        return true;
    }
    draw_game(c, b, v);
    prompt_at_bottom(s, b);
    proto_buf_puts(b, s->prompt ? ": " : "> ");
    proto_buf_append(b, s->line, s->line_len);
    if (b->failed || !b->len) return false;
    size_t len = b->len;
    char *bytes;
    if (s->tn.seen && memchr(b->data, 0xff, b->len)) { /* as out() does */
        bytes = malloc(proto_telnet_escaped_len(b->data, b->len));
        if (bytes) len = proto_telnet_escape(b->data, b->len, (unsigned char *)bytes);
    } else if ((bytes = malloc(len))) {
        memcpy(bytes, b->data, len);
    }
    if (!(screen = srv_buf_take(bytes, len))) return false;
    c->srv->metrics.text_screens_rendered++;
    srv_view_screen_keep(v, &key, sizeof key, screen, s->tick_at);
    conn_send_framed(c, NULL, 0, screen, len);
    srv_buf_unref(screen);
    return true;
}

static void draw(conn *c) {
    text_session *s = c->text;
    srv_player *p = c->player;
    srv_view *v = shown(s);
    /* Every screen is made in one buffer kept for the process: a redraw
     * allocates only its copy in the output queue, and a crowd being greeted
     * leaves no trail of freed, growing buffers between the connections and
     * players made meanwhile. */
    static proto_buf screen;
    proto_buf *b = &screen;
    b->len = 0;
    b->failed = false;
    s->tick_at = 0;
    if (s->replay && v) { /* a game of one's own comes first */
        text_replay_free(s->replay);
        s->replay = NULL;
        s->replay_at = 0;
    }
    if (v && !my_seat(c)) {
        if (!draw_watched(c, v, b)) {
            proto_buf_free(b);
            conn_close(c);
            return;
        }
        s->dirty = false;
        s->draw_at = 0;
        s->last_draw = uv_now(c->srv->loop);
        if (s->tick_at) text_arm(c);
        return;
    }
    if (s->replay)
        draw_replay(c, b);
    else if (v)
        draw_game(c, b, v);
    else if (s->has_end && !(p && p->queued))
        draw_end(c, b);
    else
        draw_lobby(c, b);
    if (!in_game(c) || s->prompt) {
        if (v && !s->replay) prompt_at_bottom(s, b);
        proto_buf_puts(b, s->prompt ? ": " : "> ");
        typed_line(b, s->line, s->line_len);
    }
    if (b->failed || !b->len) {
        proto_buf_free(b);
        conn_close(c);
        return;
    }
    out(c, b->data, b->len);
    s->dirty = false;
    s->draw_at = 0;
    s->last_draw = uv_now(c->srv->loop);
    if (s->tick_at) text_arm(c);
}

/* ------------------------------------------------------------- commands --- */

static void quit(conn *c, const char *why) {
    text_session *s = c->text;
    srv_player *p = c->player;
    /* Quitting is leaving: a racer forfeits rather than idling out a grace period. */
    if (p) {
        proto_request req = {.type = PROTO_REQ_LEAVE};
        if (p->room || p->watching || p->queued || p->home) {
            s->greeted = false; /* no redraws for what leaving sends */
            session_request(c, &req);
        }
    }
    say_last(c, why);
    conn_close_after_flush(c);
}

static void request(conn *c, proto_request *req) {
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
        if (!in_game(c)) {
            if (i == 0) {
                /* A stuck board's hint says it already: the status stays empty. */
                bool stuck = my_seat(c) && shown(c->text);
                if (!stuck)
                    set_status(
                        c->text,
                        c->text->has_end
                            ? "That game is over."
                            : "You are not in a game: type solo or quick to play.");
                request_draw(c);
            }
            return;
        }
        proto_request req = {.type = PROTO_REQ_MOVE, .dir = (eng_dir)cmd->moves[i]};
        request(c, &req);
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
                 "resume is for a new connection: type %sleave first.", typed(c));
        request_draw(c);
        return;
    }
    proto_request req = {.type = PROTO_REQ_RESUME};
    if (cmd->token[0])
        snprintf(req.token, sizeof req.token, "%s", cmd->token);
    else
        memcpy(req.code, cmd->code, sizeof req.code);
    /* In cluster mode the answer may come seconds later (a race being taken
     * over): until its `start` or error, the resume is what is going on. */
    set_status(s, "Looking for your seat...");
    s->resuming = true;
    request(c, &req);
}

/* The next frame of a playing replay is due ms from now. */
static void replay_schedule(conn *c) {
    text_session *s = c->text;
    s->replay_at = s->replay && !s->replay_paused && !text_replay_done(s->replay)
                       ? uv_now(c->srv->loop) + (uint64_t)text_replay_ms(s->replay)
                       : 0;
    text_arm(c);
}

static void replay_stop(conn *c) {
    text_session *s = c->text;
    text_replay_free(s->replay);
    s->replay = NULL;
    s->replay_at = 0;
}

/* A replay's controls: pause, faster, slower, stop. Returns false for
 * anything else (which stops the replay and is run as a command). */
static bool replay_control(conn *c, char key) {
    text_session *s = c->text;
    switch (key) {
    case ' ':
    case 'p':
    case 'P':
        s->replay_paused = !s->replay_paused;
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
        replay_stop(c);
        set_status(s, "Replay stopped. Type history for more games.");
        break;
    default:
        return false;
    }
    replay_schedule(c);
    request_draw(c);
    return true;
}

/* Plays finished game g back (NULL: there is none). */
static void open_replay(conn *c, const proto_game_record *g) {
    text_session *s = c->text;
    const char *why;
    text_replay *t = text_replay_open(g, &why);
    if (!t) {
        set_status(s, why);
        return;
    }
    replay_stop(c);
    s->replay = t;
    s->replay_paused = false;
    s->has_end = false;
    replay_schedule(c);
}

static void start_replay(conn *c, uint64_t id) {
    text_session *s = c->text;
    if (shown(s)) {
        snprintf(s->status, sizeof s->status,
                 "You are in a game: type %sleave first to watch a replay.", typed(c));
        return;
    }
    const proto_game_record *g = journal_replay(c->srv->journal, id);
    if (!g && c->srv->remote && id) {
        /* Another node's game, maybe: asked as JSON's replay is; the answer
         * (on_replay) or the error (on_error) says. */
        proto_request req = {.type = PROTO_REQ_REPLAY, .has_game = true, .game = id};
        set_status(s, "Looking for that game on the other servers...");
        s->replay_asked = id;
        request(c, &req);
        return;
    }
    open_replay(c, g);
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
    if (len == 0 && replay_control(c, 'p')) return true;
    if (len == 1 && replay_control(c, line[0])) return true;
    replay_stop(c);
    return false;
}

/* "... - type help": where keys play, help is typed ":help". */
static void command_error(conn *c, const proto_command *cmd) {
    static const char suffix[] = " - type help";
    size_t n = strlen(cmd->error), k = sizeof suffix - 1;
    if (keys_play(c) && n >= k && !strcmp(cmd->error + n - k, suffix))
        snprintf(c->text->status, sizeof c->text->status, "%.*s - type :help",
                 (int)(n - k), cmd->error);
    else
        set_status(c->text, cmd->error);
}

/* help and history: in a game the board keeps the screen (help says in one
 * line what can be typed there); elsewhere the lobby shows what was asked. */
static void show_in_lobby(conn *c, proto_cmd_type type) {
    text_session *s = c->text;
    if (!shown(s)) {
        s->has_end = false;
        s->show_help = type == PROTO_CMD_HELP;
        s->show_history = type == PROTO_CMD_HISTORY;
        if (s->show_history && c->srv->remote) {
            /* Every node's games, as JSON's history: this node's show until
             * the answer comes (on_history). */
            proto_request req = {.type = PROTO_REQ_HISTORY, .limit = TEXT_HISTORY_MAX};
            s->history_asked = true;
            request(c, &req);
        }
    } else if (type == PROTO_CMD_HELP) {
        set_status(s, proto_command_help_in_game(char_mode(s)));
    } else {
        snprintf(s->status, sizeof s->status,
                 "history is for the lobby: type %sleave first.", typed(c));
    }
}

/* The account screen goes, wiped first: it may hold a key. */
static void forget_account_screen(text_session *s) {
    if (!s->account_screen) return;
    memset(s->account_screen, 0, strlen(s->account_screen));
    free(s->account_screen);
    s->account_screen = NULL;
}

/* logout: a guest again, under a guest's name (an account's name is the
 * account's alone). */
static void logout(conn *c) {
    srv_player *p = c->player;
    if (!p || !p->account) {
        set_status(c->text, "You are not logged in (register keeps a name).");
        request_draw(c);
        return;
    }
    proto_request req = {.type = PROTO_REQ_HELLO};
    snprintf(req.name, sizeof req.name, "player-%llu", (unsigned long long)p->id);
    c->text->logging_out = true;
    request(c, &req);
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
        set_status(c->text, "profile takes a player's name (you are not logged in).");
        request_draw(c);
        return;
    }
    request(c, &req);
}

static void run_command(conn *c, const char *line, size_t len) {
    text_session *s = c->text;
    s->status[0] = '\0';
    forget_account_screen(s); /* a key is shown once */
    s->logging_out = false;
    s->named = false;
    s->show_help = false;
    s->show_history = false;
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
        if (shown(s) && (cmd.type == PROTO_CMD_TOP || cmd.type == PROTO_CMD_TOP_DAILY ||
                         cmd.type == PROTO_CMD_REGISTER)) {
            /* The board keeps the screen: these are for the lobby. */
            memset(&req, 0, sizeof req);
            snprintf(s->status, sizeof s->status,
                     "That is for the lobby: type %sleave first.", typed(c));
            request_draw(c);
            return;
        }
        request(c, &req);
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
        quit(c, "Goodbye!");
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
        if (shown(s)) {
            snprintf(s->status, sizeof s->status,
                     "That is for the lobby: type %sleave first.", typed(c));
            break;
        }
        profile(c, &cmd);
        return;
    case PROTO_CMD_COLOR:
        s->color = cmd.on ? PROTO_COLOR_256 : PROTO_COLOR_OFF;
        set_status(s, cmd.on ? "Colour is on." : "Colour is off.");
        break;
    default: /* empty */
        break;
    }
    request_draw(c);
}

/* ----------------------------------------------------------------- input --- */

static int on_text_line(void *ctx, const char *line, size_t len) {
    conn *c = ctx;
    text_session *s = c->text;
    if (len == 0) {
        /* Enter alone: a replay's pause (protocol/README.md); elsewhere
         * nothing (not even a request), but whoever typed it is a human. */
        s->any_command = true;
        if (s->replay) {
            conn_request_done(c);
            run_command(c, line, len);
        }
        return !conn_is_open(c);
    }
    conn_request_done(c);
    if (line[0] == '{' && !s->any_command && !s->tn.seen) {
        /* A JSON client that spoke after the detection window: no codes. */
        if (c->player) c->player->wants_resume_code = false;
        conn_become_json(c, line, len);
        return 1;
    }
    /* Only a first line may switch to JSON: whoever typed anything before
     * (help, colour, an unknown word, an empty line) is a human. */
    s->any_command = true;
    run_command(c, line, len);
    return !conn_is_open(c);
}

static int on_text_too_long(void *ctx) {
    /* Not a quit: like a JSON client's, a racer's seat is kept for the grace
     * period (protocol/README.md treats it as disconnected). */
    conn_too_long(ctx);
    return 1;
}

/* ':' opens the command line on the screen's last line. */
static void open_prompt(conn *c) {
    c->text->prompt = true;
    c->text->line_len = 0;
    request_draw(c);
}

/* A key while a replay plays (no command line open): it steers the replay;
 * Esc stops it too. */
static void replay_key(conn *c, const proto_key *k) {
    conn_request_done(c);
    if (k->type == PROTO_KEY_ESCAPE)
        replay_control(c, 'q');
    else if ((k->type == PROTO_KEY_CHAR || k->type == PROTO_KEY_MOVE) && k->ch)
        replay_control(c, k->ch);
}

/* A key in a game (no command line open): a move at once. */
static void game_key(conn *c, const proto_key *k) {
    text_session *s = c->text;
    conn_request_done(c); /* a key in a game is a complete request */
    if (k->type == PROTO_KEY_MOVE) {
        proto_request req = {.type = PROTO_REQ_MOVE, .dir = k->dir};
        s->status[0] = '\0';
        request(c, &req);
    } else if (k->type == PROTO_KEY_COLON) {
        open_prompt(c);
    } else if (k->type == PROTO_KEY_CHAR && k->ch != ' ') {
        /* A command typed without ':' (its h and l were moves). */
        set_status(s, "In a game every key is a move; type : first for a command "
                      "(:help).");
        request_draw(c);
    }
}

/* A racer whose board is stuck in a race still running: it types command
 * lines (protocol/README.md), but its fingers still play. */
static bool stuck(const conn *c) {
    return my_seat(c) && shown(c->text) && !in_game(c);
}

/* True if the line so far plus ch can still become a command. */
static bool begins_command(const char *line, size_t len, char ch) {
    char typed[sizeof((text_session *)0)->line + 1];
    if (len + 1 >= sizeof typed) return false;
    memcpy(typed, line, len);
    typed[len] = ch;
    return proto_command_begins(typed, len + 1);
}

/* Shows the command line again in place (after Ctrl-U, or a stuck racer's
 * moves dropped): the prompt, what is typed, the rest of the row erased. */
static void retype_line(conn *c) {
    text_session *s = c->text;
    proto_buf b;
    proto_buf_init(&b);
    proto_buf_puts(&b, s->prompt ? "\r: " : "\r> ");
    typed_line(&b, s->line, s->line_len);
    proto_buf_puts(&b, "\x1b[K");
    if (!b.failed) out(c, b.data, b.len);
    proto_buf_free(&b);
}

/* A stuck racer's move key on the command line: kept only while the line
 * can still be a command ("l", "le", ... for leave); a move that cannot
 * starts the line again if it begins a command itself, else it is dropped.
 * So "dsawd" then "leave" is leave. Returns true if k was handled here. */
static bool stuck_move(conn *c, const proto_key *k) {
    text_session *s = c->text;
    if (k->type != PROTO_KEY_MOVE || s->prompt || !stuck(c)) return false;
    if (!k->ch || begins_command(s->line, s->line_len, k->ch)) return false;
    bool restart = begins_command("", 0, k->ch);
    if (!s->line_len && !restart) return true; /* nothing to show again */
    s->line_len = 0;
    if (restart) s->line[s->line_len++] = k->ch;
    retype_line(c);
    return true;
}

/* A key typed into the command line, echoed as the line shows it. */
static void line_key(conn *c, const proto_key *k) {
    text_session *s = c->text;
    if (stuck_move(c, k)) return;
    switch (k->type) {
    case PROTO_KEY_KILL_LINE:
        s->line_len = 0;
        retype_line(c);
        break;
    case PROTO_KEY_ENTER: {
        char line[sizeof s->line];
        size_t len = s->line_len;
        memcpy(line, s->line, len);
        s->line_len = 0;
        s->prompt = false;
        conn_request_done(c); /* the line is a complete request */
        outs(c, "\r\n");
        run_command(c, line, len);
        break;
    }
    case PROTO_KEY_BACKSPACE:
        if (s->line_len) {
            /* One character: a non-ASCII one with all its bytes. */
            while (s->line_len > 1 && utf8_tail(s->line[s->line_len - 1]))
                s->line_len--;
            s->line_len--;
            outs(c, "\b \b");
        }
        break;
    case PROTO_KEY_ESCAPE:
        if (s->prompt) {
            s->prompt = false;
            s->line_len = 0;
            request_draw(c);
        }
        break;
    default:
        /* Move letters, ':' and other printable bytes are text here; arrows are not. */
        if (k->ch && s->line_len < sizeof s->line - 1) {
            s->line[s->line_len++] = k->ch;
            if ((unsigned char)k->ch < 0x80)
                out(c, &k->ch, 1);
            else if (!utf8_tail(k->ch))
                outs(c, "?"); /* one column per character, whatever its bytes */
        }
        break;
    }
}

/* One key in character mode. */
static void on_key(conn *c, const proto_key *k) {
    text_session *s = c->text;
    if (k->type == PROTO_KEY_CTRL_C || k->type == PROTO_KEY_CTRL_D)
        quit(c, "Goodbye!");
    else if (s->replay && !s->prompt && k->type == PROTO_KEY_COLON)
        open_prompt(c);
    else if (s->replay && !s->prompt)
        replay_key(c, k);
    else if (!s->prompt && in_game(c))
        game_key(c, k);
    else
        line_key(c, k);
}

static void feed_keys(conn *c, const unsigned char *data, size_t n) {
    for (size_t i = 0; i < n && c->text && conn_is_open(c); i++) {
        proto_key keys[2];
        int got = proto_keys_feed(&c->text->keys, data[i], keys);
        for (int k = 0; k < got && c->text && conn_is_open(c); k++)
            on_key(c, &keys[k]);
    }
    if (c->text && proto_keys_pending(&c->text->keys)) {
        c->text->esc_at = uv_now(c->srv->loop) + ESC_MS;
        text_arm(c);
    }
}

static void greet(conn *c) {
    text_session *s = c->text;
    s->greeted = true;
    s->greet_at = 0;
    if (!session_player(c, false)) return;
    c->player->welcomed = true;          /* a human needs no JSON welcome */
    c->player->wants_resume_code = true; /* ... but a code to type after a drop */
    draw(c);
}

static void handle_events(conn *c, unsigned events) {
    text_session *s = c->text;
    if (events & PROTO_TN_EV_TELNET && !s->greeted) {
        s->greet_at = uv_now(c->srv->loop) + GREET_SETTLE_MS;
        text_arm(c);
    }
    if (events & PROTO_TN_EV_INTERRUPT) {
        quit(c, "Interrupted. Goodbye!");
        return;
    }
    if (events & (PROTO_TN_EV_RESIZE | PROTO_TN_EV_ECHO)) request_draw(c);
}

void text_input(conn *c, const char *data, size_t n) {
    if (!awake(c)) return;
    const unsigned char *in = (const unsigned char *)data;
    unsigned char plain[4096];
    while (n > 0 && c->text && conn_is_open(c)) {
        text_session *s = c->text;
        size_t chunk = n < sizeof plain ? n : sizeof plain;
        size_t plain_len;
        unsigned events;
        size_t used = proto_telnet_feed(&s->tn, in, chunk, plain, &plain_len, &events);
        in += used;
        n -= used;
        size_t reply_len;
        const unsigned char *reply = proto_telnet_replies(&s->tn, &reply_len);
        if (reply_len) conn_write(c, (const char *)reply, reply_len);
        if (char_mode(s)) {
            feed_keys(c, plain, plain_len);
        } else {
            size_t fed = proto_framer_feed(&c->framer, (const char *)plain, plain_len,
                                           on_text_line, on_text_too_long, c);
            if (c->mode == CONN_JSON) { /* the rest belongs to the JSON client */
                conn_feed_json(c, (const char *)plain + fed, plain_len - fed);
                conn_feed_json(c, (const char *)in, n);
                return;
            }
        }
        if (c->text && events) handle_events(c, events);
    }
}

/* --------------------------------------------------------------- timer --- */

static void on_timer(conn *c) {
    text_session *s = c->text;
    if (!s || !conn_is_open(c)) return;
    uint64_t now = uv_now(c->srv->loop);
    if (s->esc_at && s->esc_at <= now) {
        s->esc_at = 0;
        proto_key k;
        if (proto_keys_flush(&s->keys, &k)) on_key(c, &k);
        if (!c->text || !conn_is_open(c)) return;
    }
    if (s->replay && s->replay_at && s->replay_at <= now) {
        text_replay_step(s->replay);
        s->dirty = true;
        s->draw_at = now;
        replay_schedule(c);
    }
    if (!s->greeted && s->greet_at && s->greet_at <= now)
        greet(c);
    else if ((s->dirty && s->draw_at && s->draw_at <= now) ||
             (s->tick_at && s->tick_at <= now))
        draw(c);
    if (c->text && conn_is_open(c)) text_arm(c);
}

/* Arms the connection's timer for the earliest pending deadline. */
static void text_arm(conn *c) {
    text_session *s = c->text;
    /* A draining connection's timer is its flush deadline: leave it be. */
    if (!conn_is_open(c)) return;
    uint64_t next = 0;
    uint64_t deadlines[5] = {s->greeted ? 0 : s->greet_at, s->dirty ? s->draw_at : 0,
                             s->esc_at, s->tick_at, s->replay_at};
    for (int i = 0; i < 5; i++)
        if (deadlines[i] && (!next || deadlines[i] < next)) next = deadlines[i];
    uint64_t now = uv_now(c->srv->loop);
    if (!next && can_sleep(c)) {
        /* Given back from a timer: the caller may still use the session. */
        uint64_t at = s->last_draw + REDRAW_MS;
        if (conn_timer_start(c, on_sleep_due, at > now ? at - now : 0) < 0) conn_close(c);
        return;
    }
    if (!next) {
        conn_timer_stop(c);
        return;
    }
    if (conn_timer_start(c, on_timer, next > now ? next - now : 0) < 0) conn_close(c);
}

/* ------------------------------------------------------------ lifecycle --- */

/* ---------------------------------------------------------------- sleep ---
 *
 * Most idle text connections are netcat left open or scanners that never
 * speak: their session is exactly as the telnet offer or the greeting left
 * it. Such a session is given back (c->text_asleep says which of the two it
 * was) and made again, the same, when input or a message comes: an idle
 * human then costs no session (about 700 bytes). */
enum { ASLEEP_OFFERED = 1, ASLEEP_GREETED = 2 };

/* A session as text_begin makes it, after the telnet offer. */
static void offered_session(text_session *s) {
    memset(s, 0, sizeof *s);
    proto_telnet_init(&s->tn);
    proto_keys_init(&s->keys);
    s->color = PROTO_COLOR_256;
    proto_telnet_offered(&s->tn);
}

/* ... and as the greeting leaves it when nothing else happened. */
static void greeted_session(text_session *s) {
    offered_session(s);
    s->greeted = true;
}

/* True if c's session is as the greeting left it, nothing pending. */
static bool can_sleep(const conn *c) {
    const text_session *s = c->text;
    if (!s || !conn_is_open(c) || c->framer.len || c->framer.discarding) return false;
    text_session fresh;
    greeted_session(&fresh);
    fresh.last_draw = s->last_draw; /* the sleep waits until it no longer matters */
    fresh.draw_at = s->draw_at;     /* read only while dirty, and it is not */
    return memcmp(&fresh, s, sizeof fresh) == 0;
}

void text_sleep(conn *c) {
    /* A redraw right after waking is paced as it would have been. */
    if (conn_timer_armed(c) || !can_sleep(c) ||
        uv_now(c->srv->loop) < c->text->last_draw + REDRAW_MS)
        return;
    free(c->text);
    c->text = NULL;
    c->text_asleep = ASLEEP_GREETED;
}

static void on_sleep_due(conn *c) {
    text_sleep(c);
}

/* Makes an asleep session again; false if c has none (or no memory: closed). */
static bool awake(conn *c) {
    if (c->text) return true;
    if (!c->text_asleep) return false;
    text_session *s = malloc(sizeof *s);
    if (!s) {
        conn_close(c);
        return false;
    }
    if (c->text_asleep == ASLEEP_GREETED) {
        greeted_session(s);
        /* Asleep since a redraw less than REDRAW_MS ago: the pace holds. */
        if (conn_timer_runs(c, on_sleep_due))
            s->last_draw = conn_timer_due(c) - REDRAW_MS;
    } else {
        /* The greeting's deadline is the connection's timer (on_greet_due). */
        offered_session(s);
        s->greet_at = conn_timer_armed(c) ? conn_timer_due(c) : uv_now(c->srv->loop);
    }
    c->text = s;
    c->text_asleep = 0;
    if (!s->greeted) text_arm(c); /* its deadline is the session's now */
    return true;
}

/* The greeting of a client that sent nothing is made in a session on the
 * stack, kept only if it holds more than a fresh greeted one: a crowd of
 * silent clients allocates no session at all. */
static void on_greet_due(conn *c) {
    if (c->text) { /* woken meanwhile: its own deadline rules */
        text_arm(c);
        return;
    }
    text_session tmp;
    offered_session(&tmp);
    tmp.greet_at = uv_now(c->srv->loop);
    c->text = &tmp;
    c->text_asleep = 0;
    on_timer(c); /* greets; then text_arm sets the pace for sleeping */
    c->text = NULL;
    if (conn_is_open(c) && conn_timer_runs(c, on_sleep_due)) {
        c->text = &tmp;
        bool sleeps = can_sleep(c);
        c->text = NULL;
        if (sleeps) {
            c->text_asleep = ASLEEP_GREETED;
            return;
        }
    }
    text_session *s = malloc(sizeof *s);
    if (!s) {
        conn_close(c);
        return;
    }
    memcpy(s, &tmp, sizeof *s); /* padding too: can_sleep compares bytes */
    c->text = s;
}

void text_begin(conn *c, bool telnet_first) {
    proto_framer_set_text(&c->framer, true);
    /* The plain offer to a client that already speaks telnet; wrapped in a
     * DCS string that terminals ignore for everyone else (netcat). */
    if (telnet_first) {
        text_session *s = malloc(sizeof *s);
        if (!s) {
            conn_close(c);
            return;
        }
        offered_session(s);
        c->text = s;
        conn_write(c, PROTO_TELNET_OFFER, PROTO_TELNET_OFFER_LEN);
        s->greet_at = uv_now(c->srv->loop) + GREET_WAIT_MS;
        text_arm(c);
        return;
    }
    /* Nothing to keep until the client answers or the greeting is due. */
    c->text_asleep = ASLEEP_OFFERED;
    conn_write(c, PROTO_TELNET_OFFER_DCS, PROTO_TELNET_OFFER_DCS_LEN);
    if (!conn_is_closing(c) && conn_timer_start(c, on_greet_due, GREET_WAIT_MS) < 0)
        conn_close(c);
}

/* Keeps the verdict so the end screen outlives the room. */
static void keep_end(text_session *s, const srv_msg *m) {
    const srv_view *v = m->view;
    /* Out of memory (here or for the view): no end screen, the lobby shows. */
    if (!v || !v->has_verdict) return;
    if (!s->end && !(s->end = malloc(sizeof *s->end))) return;
    s->has_end = true;
    snprintf(s->end->room, sizeof s->end->room, "%s", v->solo ? "" : v->code);
    s->end->reason = m->reason;
    s->end->winner = m->subject;
    s->end->n = v->nseats;
    for (int i = 0; i < v->nseats; i++) {
        const srv_view_seat *ranked = &v->seats[v->ranking[i]];
        text_result *t = &s->end->results[i];
        t->id = ranked->id;
        memcpy(t->name, ranked->name, sizeof t->name);
        t->board = ranked->board;
        t->score = ranked->score;
        t->moves = ranked->moves;
        t->status = ranked->status;
    }
    s->end->seed = v->seed;
    memcpy(s->end->salt, v->salt, sizeof s->end->salt);
    memcpy(s->end->commit, v->commit, sizeof s->end->commit);
}

/* An error: the lobby's words are for JSON ("send leave first"), a human
 * types it, after ':' where keys play. One that closes the connection is
 * its last line, not a screen. */
/* The node that ran this racer's room (cluster mode) is gone: the race
 * screen would only go stale. The lobby shows instead, saying how the seat
 * comes back. */
static void race_gone(conn *c) {
    text_session *s = c->text;
    char code[sizeof s->resume_code];
    memcpy(code, s->resume_code, sizeof code);
    forget_room(s);
    s->has_end = false;
    s->prompt = false;
    s->line_len = 0;
    if (code[0])
        snprintf(s->status, sizeof s->status,
                 "The server that ran your race stopped. The race goes on on another "
                 "server within seconds, with your board: type  resume %s",
                 code);
    else
        set_status(s, "The server that ran your race stopped. The race goes on on "
                      "another server within seconds: connect again and resume.");
}

static void on_error(conn *c, const srv_msg *m) {
    text_session *s = c->text;
    srv_player *p = c->player;
    if (m->error == PROTO_ERR_UNAVAILABLE && !m->closes && p && !p->room && !p->home &&
        my_seat(c)) {
        /* A seat shown whose room is neither here nor reached elsewhere. */
        race_gone(c);
        return;
    }
    const char *text = m->text ? m->text : "That did not work.";
    if (s->replay_asked && m->error == PROTO_ERR_GAME_NOT_FOUND)
        text = "No finished game has that number in this cluster (type history).";
    s->replay_asked = 0;
    /* The daily challenge's refusals, in text mode's words. */
    if (m->error == PROTO_ERR_ACCOUNT_NEEDED)
        text = "Only accounts play the daily challenge: type register (or login NAME "
               "KEY) first.";
    else if (m->error == PROTO_ERR_DAILY_PLAYED)
        text = "You have played today's daily game of that size: type top daily to see "
               "the board.";
    const char *send = strstr(text, "send leave");
    if (send)
        snprintf(s->status, sizeof s->status, "%.*stype %sleave%s", (int)(send - text),
                 text, typed(c), send + 10);
    else
        set_status(s, text);
    if (m->closes) say_last(c, s->status);
}

/* Someone's connection or seat changed: the status says so. */
static void on_player(conn *c, const srv_msg *m) {
    text_session *s = c->text;
    const srv_view_seat *seat = srv_view_seat_of(m->view, m->subject);
    if (!seat) return;
    snprintf(s->status, sizeof s->status, "%s %s.", seat->name,
             seat->status == PROTO_LEFT ? "left the race"
             : seat->connected          ? "is back"
                                        : "lost the connection");
    /* Its own seat given up (--move-timeout): it is out of the race. */
    if (c->player && seat->id == c->player->id && seat->status == PROTO_LEFT)
        forget_room(s);
}

/* The `rooms` reply, in one status line. */
static void on_rooms(text_session *s, const srv_rooms *rooms) {
    if (!rooms) {
        set_status(s, "The rooms could not be listed: try again.");
        return;
    }
    if (rooms->n == 0) {
        set_status(s, "No rooms right now: type create to make one, or quick.");
        return;
    }
    size_t at = (size_t)snprintf(s->status, sizeof s->status, "Rooms:");
    for (int i = 0; i < rooms->n && i < 8 && at < sizeof s->status; i++) {
        const srv_room_row *row = &rooms->rows[i];
        at += (size_t)snprintf(s->status + at, sizeof s->status - at, " %s (%d/%d%s)",
                               row->code, row->players, row->settings.players,
                               row->started ? ", racing: watch" : ", join");
    }
}

/* The cluster's history list (text mode asked for it). */
static void on_history(text_session *s, const srv_msg *m) {
    if (!s->history_asked) return; /* another command came since */
    s->history_asked = false;
    if (!s->history && !(s->history = malloc(sizeof *s->history)))
        return; /* this node's list stays on the screen */
    int n = m->ngames < TEXT_HISTORY_MAX ? m->ngames : TEXT_HISTORY_MAX;
    for (int i = 0; i < n; i++)
        text_replay_history_entry(m->games[i], s->history->entries[i]);
    s->history->n = n;
}

/* A game another node keeps, asked for by `replay ID`: it plays. */
static void on_replay(conn *c, const srv_msg *m) {
    text_session *s = c->text;
    if (!s->replay_asked || m->ngames < 1 || m->games[0]->game != s->replay_asked) return;
    s->replay_asked = 0;
    s->status[0] = '\0';
    if (shown(s)) return; /* in a game meanwhile: the game comes first */
    open_replay(c, m->games[0]);
}

/* A game starts, or is shown again (a resume, a watch). */
static void on_start(text_session *s, const srv_msg *m) {
    s->has_end = false;
    if (!s->resuming) s->status[0] = '\0';
    s->prompt = false;
    s->line_len = 0;
    /* A racer's code for getting the seat back after a drop. */
    memcpy(s->resume_code, m->resume_code, sizeof s->resume_code);
}

/* A daily board's screen: its day and size, then rank, name, score, max tile
 * and moves, as many rows as the top screen has. */
static void daily_screen(proto_buf *b, json_t *j) {
    const char *date = json_string_value(json_object_get(j, "date"));
    proto_daily_row row[TEXT_TOP_ROWS];
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(j, "rows"), i, r) {
        if (n == TEXT_TOP_ROWS) break;
        const char *rn = json_string_value(json_object_get(r, "name"));
        if (!rn) continue;
        row[n++] = (proto_daily_row){
            .rank = (uint64_t)json_integer_value(json_object_get(r, "rank")),
            .name = rn,
            .score = (uint32_t)json_integer_value(json_object_get(r, "score")),
            .max_tile = (uint32_t)json_integer_value(json_object_get(r, "max_tile")),
            .moves = (uint32_t)json_integer_value(json_object_get(r, "moves"))};
    }
    proto_render_daily_board(b, date ? date : "today",
                             (int)json_integer_value(json_object_get(j, "size")), row, n);
}

/* The screen of a `registered`, `leaderboard` or `profile` reply (read back
 * from its line, as any client reads it). */
static void account_screen(proto_buf *b, json_t *j) {
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!type) return;
    const char *board = json_string_value(json_object_get(j, "board"));
    if (!strcmp(type, "registered")) {
        const char *key = json_string_value(json_object_get(j, "key"));
        if (name && key) proto_render_registered(b, name, key);
    } else if (!strcmp(type, "leaderboard") && board && !strcmp(board, "daily")) {
        daily_screen(b, j);
    } else if (!strcmp(type, "leaderboard")) {
        json_t *rows = json_object_get(j, "rows");
        proto_board_row row[TEXT_TOP_ROWS];
        int n = 0;
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) {
            if (n == TEXT_TOP_ROWS) break;
            const char *rn = json_string_value(json_object_get(r, "name"));
            if (!rn) continue;
            row[n++] = (proto_board_row){
                .rank = (uint64_t)json_integer_value(json_object_get(r, "rank")),
                .name = rn,
                .rating = (int)json_integer_value(json_object_get(r, "rating")),
                .games = (uint32_t)json_integer_value(json_object_get(r, "games"))};
        }
        proto_render_leaderboard(b, row, n);
    } else if (!strcmp(type, "profile") && name) {
        json_t *r = json_object_get(j, "rating");
        int32_t chart[32];
        uint64_t recent[32];
        int nchart = 0, nrecent = 0;
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "chart"), i, v) {
            if (nchart < 32) chart[nchart++] = (int32_t)json_integer_value(v);
        }
        json_array_foreach(json_object_get(j, "recent"), i, v) {
            if (nrecent < 32) recent[nrecent++] = (uint64_t)json_integer_value(v);
        }
        proto_profile p = {
            .name = name,
            .rating = {.rating = (int)json_integer_value(json_object_get(r, "rating")),
                       .provisional = json_is_true(json_object_get(r, "provisional"))},
            .races = (uint32_t)json_integer_value(json_object_get(j, "races")),
            .wins = (uint32_t)json_integer_value(json_object_get(j, "wins")),
            .recent = recent,
            .nrecent = nrecent,
            .chart = chart,
            .nchart = nchart};
        proto_render_profile(b, &p);
    }
}

static void on_account(text_session *s, const srv_msg *m) {
    if (!m->json) return;
    json_t *j = json_loadb(m->json->data, m->json->len, 0, NULL);
    if (!j) return;
    proto_buf b;
    proto_buf_init(&b);
    account_screen(&b, j);
    json_decref(j);
    size_t len;
    char *screen = b.failed || !b.len ? NULL : proto_buf_take(&b, &len);
    proto_buf_free(&b);
    if (!screen) return;
    forget_account_screen(s);
    s->account_screen = screen;
    s->has_end = false;
}

void text_deliver(conn *c, const srv_msg *m) {
    if (!awake(c)) return;
    text_session *s = c->text;
    /* The room as the message shows it; an `end` always replaces it (the
     * game is over even if its view could not be made). */
    if (m->view || m->type == SRV_MSG_END) srv_view_set(&s->view, m->view);
    switch (m->type) {
    case SRV_MSG_WELCOME:
        if (c->player && s->logging_out)
            snprintf(s->status, sizeof s->status, "You logged out: you are %s, a guest.",
                     c->player->name);
        else if (c->player && c->player->account && !s->resuming)
            snprintf(s->status, sizeof s->status,
                     "You are now %s (rating %d): logged in.", c->player->name,
                     acct_rating(c->player->account));
        else if (c->player)
            snprintf(s->status, sizeof s->status,
                     s->resuming ? "Welcome back, %s: the seat is yours again."
                                 : "You are now %s.",
                     c->player->name);
        s->logging_out = false;
        s->named = !s->resuming;
        break;
    case SRV_MSG_START:
        on_start(s, m);
        s->resuming = false;
        break;
    case SRV_MSG_END:
        /* What was typed during the race (keys of a stuck board) is not a
         * command for the end screen. */
        s->line_len = 0;
        s->prompt = false;
        s->end_now = true;
        s->status[0] = '\0'; /* what was said during the game is over too */
        keep_end(s, m);
        break;
    case SRV_MSG_ERROR:
        s->resuming = false;
        on_error(c, m);
        if (m->closes) return; /* said; no screen after it */
        break;
    case SRV_MSG_LEFT: {
        bool solo =
            (s->view && s->view->solo) || (s->has_end && s->end && !s->end->room[0]);
        forget_room(s);
        /* A leave that ended the race came with its `end`: keep showing it. */
        if (!s->end_now) s->has_end = false;
        set_status(s, !s->end_now ? "You left. Type solo, quick, create or help."
                      : solo      ? "You left the game."
                                  : "You left the race.");
        break;
    }
    case SRV_MSG_ROOM:
        /* About the race that ended (a rematch is asked for): the end
         * screen stays and says who is waiting. */
        if (!(m->view && m->view->state == SRV_VIEW_ENDED)) s->has_end = false;
        break;
    case SRV_MSG_QUEUED:
        forget_room(s);
        s->has_end = false; /* `quick` from an end screen: the queue screen */
        break;
    case SRV_MSG_PLAYER:
        on_player(c, m);
        break;
    case SRV_MSG_ROOMS:
        on_rooms(s, m->rooms);
        break;
    case SRV_MSG_STATE:
    case SRV_MSG_VIEW:
    case SRV_MSG_PONG:
    case SRV_MSG_BYE:
        break;
    case SRV_MSG_ACCOUNT:
        on_account(s, m);
        break;
    case SRV_MSG_HISTORY:
        on_history(s, m);
        break;
    case SRV_MSG_REPLAY:
        on_replay(c, m);
        break;
    }
    request_draw(c);
}

void text_say(conn *c, conn_say why) {
    if (!text_has_session(c)) return;
    char line[96];
    switch (why) {
    case CONN_SAY_SHUTDOWN:
        outs(c, "\r\nThe server is stopping. Goodbye!");
        break;
    case CONN_SAY_IDLE: /* with netcat's suffix, 73 columns */
        outs(c, "\r\nClosing: nothing was typed for a long time.");
        break;
    case CONN_SAY_SLOW:
        outs(c, "\r\nClosing this connection: a line took too long to arrive.");
        break;
    case CONN_SAY_TOO_LONG:
        snprintf(line, sizeof line,
                 "\r\nThat line is longer than %zu bytes; closing the connection.",
                 c->srv->cfg.max_line);
        outs(c, line);
        break;
    }
    end_last_line(c);
}

bool text_midway(const conn *c) {
    return c->text && proto_telnet_midway(&c->text->tn);
}

void text_free(conn *c) {
    if (c->text) {
        text_replay_free(c->text->replay);
        free(c->text->history);
        free(c->text->end);
        forget_account_screen(c->text);
        srv_view_unref(c->text->view);
    }
    free(c->text);
    c->text = NULL;
    c->text_asleep = 0;
}
