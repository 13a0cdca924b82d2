/* text_messages.c - text mode's reading of server messages: what each does to the
 * session and its screen (the end kept, errors in a human's words, account screens). */
#include "text_internal.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "accounts.h"
#include "journal.h"
#include "room.h"

/* Keeps the view of the verdict so the end screen outlives the room. */
static void keep_end(text_session *s, const srv_msg *m) {
    srv_view *v = m->view;
    /* Out of memory (for the view): no end screen, the lobby shows. */
    if (!v || !v->has_verdict) return;
    text_show_end(s, v, m->reason, m->subject);
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
    text_forget_room(s);
    text_drop_end(s);
    s->prompt = false;
    s->line_len = 0;
    if (code[0])
        snprintf(s->status, sizeof s->status,
                 "The server that ran your race stopped. The race goes on on another "
                 "server within seconds, with your board: type  resume %s",
                 code);
    else
        text_set_status(s, "The server that ran your race stopped. The race goes on on "
                           "another server within seconds: connect again and resume.");
}

static void on_error(conn *c, const srv_msg *m) {
    text_session *s = c->text;
    srv_player *p = c->player;
    if (m->error == PROTO_ERR_UNAVAILABLE && !m->closes && p && !p->room && !p->home &&
        text_my_seat(c)) {
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
                 text, text_typed(c), send + 10);
    else
        text_set_status(s, text);
    if (m->closes) text_say_last(c, s->status);
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
        text_forget_room(s);
}

/* The `rooms` reply, in one status line. */
static void on_rooms(text_session *s, const srv_rooms *rooms) {
    if (!rooms) {
        text_set_status(s, "The rooms could not be listed: try again.");
        return;
    }
    if (rooms->n == 0) {
        text_set_status(s, "No rooms right now: type create to make one, or quick.");
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
    if (text_shown(s)) return; /* in a game meanwhile: the game comes first */
    text_replay_show(c, m->games[0]);
}

/* A game starts, or is shown again (a resume, a watch). */
static void on_start(text_session *s, const srv_msg *m) {
    text_drop_end(s);
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

static proto_arena_row arena_row_of_json(const json_t *r) {
    const char *name = json_string_value(json_object_get(r, "name"));
    return (proto_arena_row){
        .rank = (int)json_integer_value(json_object_get(r, "rank")),
        .id = (uint64_t)json_integer_value(json_object_get(r, "id")),
        .name = name ? name : "?",
        .points = json_integer_value(json_object_get(r, "points")),
        .races = (int)json_integer_value(json_object_get(r, "races")),
        .wins = (int)json_integer_value(json_object_get(r, "wins")),
        .streak = (int)json_integer_value(json_object_get(r, "streak")),
        .waiting = json_is_true(json_object_get(r, "waiting"))};
}

static proto_arena_info arena_info_of_json(const json_t *j) {
    const char *code = json_string_value(json_object_get(j, "arena"));
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *status = json_string_value(json_object_get(j, "status"));
    return (proto_arena_info){
        .code = code ? code : "?",
        .name = name ? name : "",
        .status = status && !strcmp(status, "finished")  ? PROTO_ARENA_FINISHED
                  : status && !strcmp(status, "running") ? PROTO_ARENA_RUNNING
                                                         : PROTO_ARENA_UPCOMING,
        .starts_ms = json_integer_value(json_object_get(j, "starts")),
        .ends_ms = json_integer_value(json_object_get(j, "ends")),
        .players = (int)json_integer_value(json_object_get(j, "players")),
        .size = (int)json_integer_value(json_object_get(j, "size")),
        .target = (uint32_t)json_integer_value(json_object_get(j, "target")),
        .entrants = (uint64_t)json_integer_value(json_object_get(j, "entrants"))};
}

/* An `arena` (the standings, the top TEXT_TOP_ROWS, and your row) or `arenas`. */
static void arena_screen(proto_buf *b, json_t *j, const char *type) {
    int64_t now = journal_wall_ms();
    if (!strcmp(type, "arenas")) {
        proto_arena_info list[TEXT_TOP_ROWS];
        int n = 0;
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(j, "arenas"), i, a) {
            if (n < TEXT_TOP_ROWS) list[n++] = arena_info_of_json(a);
        }
        proto_render_arenas(b, list, n, now);
        return;
    }
    proto_arena_info info = arena_info_of_json(j);
    proto_arena_row rows[TEXT_TOP_ROWS];
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(j, "standings"), i, r) {
        if (info.nrows < TEXT_TOP_ROWS) rows[info.nrows++] = arena_row_of_json(r);
    }
    info.rows = rows;
    const json_t *you = json_object_get(j, "you");
    proto_arena_row own = you ? arena_row_of_json(you) : (proto_arena_row){0};
    proto_render_arena(b, &info, you ? &own : NULL, now);
}

/* The screen of a `registered`, `leaderboard` or `profile` reply (read back
 * from its line, as any client reads it). */
static void account_screen(proto_buf *b, json_t *j) {
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!type) return;
    const char *board = json_string_value(json_object_get(j, "board"));
    if (!strcmp(type, "arena") || !strcmp(type, "arenas")) {
        arena_screen(b, j, type);
    } else if (!strcmp(type, "registered")) {
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

static void on_account(conn *c, const srv_msg *m) {
    text_session *s = c->text;
    if (!m->json) return;
    json_t *j = json_loadb(m->json->data, m->json->len, 0, NULL);
    if (!j) return;
    proto_buf b;
    proto_buf_init(&b);
    account_screen(&b, j);
    /* An arena's standings during a race wait for the lobby: the race keeps
     * its screen. Between races (the end screen) they replace it. */
    const char *type = json_string_value(json_object_get(j, "type"));
    bool racing =
        type && !strcmp(type, "arena") && c->player && room_in_running_race(c->player);
    json_decref(j);
    size_t len;
    char *screen = b.failed || !b.len ? NULL : proto_buf_take(&b, &len);
    proto_buf_free(&b);
    if (!screen) return;
    text_forget_account_screen(s);
    s->account_screen = screen;
    if (!racing) text_drop_end(s);
}

void text_deliver(conn *c, const srv_msg *m) {
    if (!text_awake(c)) return;
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
        bool solo = (s->view && s->view->solo) ||
                    (s->screen == TEXT_END && !text_end_room(s->end));
        text_forget_room(s);
        /* A leave that ended the race came with its `end`: keep showing it. */
        if (!s->end_now) text_drop_end(s);
        text_set_status(s, !s->end_now ? "You left. Type solo, quick, create or help."
                           : solo      ? "You left the game."
                                       : "You left the race.");
        break;
    }
    case SRV_MSG_ROOM:
        /* About the race that ended (a rematch is asked for): the end
         * screen stays and says who is waiting. */
        if (!(m->view && m->view->state == SRV_VIEW_ENDED)) text_drop_end(s);
        break;
    case SRV_MSG_QUEUED:
        text_forget_room(s);
        text_drop_end(s); /* `quick` from an end screen: the queue screen */
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
        on_account(c, m);
        break;
    case SRV_MSG_HISTORY:
        on_history(s, m);
        break;
    case SRV_MSG_REPLAY:
        on_replay(c, m);
        break;
    }
    text_request_draw(c);
}
