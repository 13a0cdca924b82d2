/* text_screens.c - text mode's screens but the lobby: a race, a watched race (shared
 * renderings), the end screen, a replay; and draw, which picks one. */
#include "text_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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
    if (text_char_mode(s) && secs > 0)
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
    bool seated = text_my_seat(c) != NULL;
    if (!text_in_game(c) && seated && !v->solo)
        snprintf(hint, cap,
                 "Your board is stuck; the race goes on until the others finish (or "
                 "type leave).");
    else if (!text_in_game(c))
        snprintf(hint, cap, "%s",
                 seated ? "Your game is over; type leave."
                        : "Watching. Type leave to stop, or another command.");
    else if (text_char_mode(c->text))
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
    unsigned long long grace = (unsigned long long)(c->srv->cfg->grace_ms / 1000);
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
    assert(v->nseats <= PROTO_PLAYERS_MAX);
    char note_text[PROTO_PLAYERS_MAX][48];
    const char *notes[PROTO_PLAYERS_MAX];
    s->tick_at = 0;
    for (int i = 0; i < v->nseats; i++)
        srv_view_player(&v->seats[i], &views[i]);
    grace_notes(c, v, note_text, notes);
    bool seated = text_my_seat(c) != NULL;
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
    const srv_view_seat *mine = text_my_seat(c);
    if (!text_end_room(s->end) || !v || v->state != SRV_VIEW_ENDED || v->solo || !mine) {
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
    const srv_view *end = s->end;
    int cols = term_cols(s);
    /* The seats best first, as the view of the `end` ranks them. */
    proto_player views[PROTO_PLAYERS_MAX];
    for (int i = 0; i < end->nseats; i++) {
        assert(end->ranking[i] < end->nseats);
        srv_view_player(&end->seats[end->ranking[i]], &views[i]);
    }
    uint64_t you = c->player ? c->player->id : 0;
    const char *code = text_end_room(end);
    proto_end_view e = {.room = code,
                        .reason = s->end_reason,
                        .winner = s->end_winner,
                        .you = you,
                        .results = views,
                        .n = end->nseats,
                        .salt = end->salt[0] ? end->salt : NULL,
                        .color = s->color,
                        .seed = end->seed,
                        .commit = end->commit[0] ? end->commit : NULL,
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
                    .n = end->nseats,
                    .you = you,
                    .room = code,
                    .width = cols,
                    .color = s->color,
                    .height = left};
    /* The boards only if the viewer's fits whole (compact: its name, its
     * rows and its score), with the title and a blank line. */
    int size = end->nseats > 0 ? views[0].board->size : 4;
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
        hint = text_char_mode(s) ? "Replay over: q for the lobby, : for a command."
                                 : "Replay over: type q, or a command.";
    else
        hint = text_char_mode(s)
                   ? "Keys: space pause, + faster, - slower, q stop."
                   : "Type p (pause), + (faster), - (slower) or q (stop) and Enter.";
    char status[256];
    snprintf(status, sizeof status, "%s%s%s", caption,
             s->screen == TEXT_REPLAY_PAUSED ? " Paused." : "", s->status[0] ? "" : "");
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
    k->char_mode = text_char_mode(s);
    k->prompt = s->prompt;
    k->line_len = (uint32_t)s->line_len;
    k->clock = clock_shown(c, v);
    memcpy(k->status, s->status, strnlen(s->status, sizeof s->status));
    assert(s->line_len <= sizeof k->line);
    memcpy(k->line, s->line, s->line_len);
}

/* On telnet a race's command line is the terminal's last row (the screen
 * may end higher up): the cursor goes there first. netcat scrolls: its
 * prompt follows the screen. */
static void prompt_at_bottom(const text_session *s, proto_buf *b) {
    if (text_char_mode(s))
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
    if (s->tn.seen && memchr(b->data, 0xff, b->len)) { /* as text_out() does */
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

void text_draw(conn *c) {
    text_session *s = c->text;
    srv_player *p = c->player;
    srv_view *v = text_shown(s);
    /* Every screen is made in one buffer kept for the process: a redraw
     * allocates only its copy in the output queue, and a crowd being greeted
     * leaves no trail of freed, growing buffers between the connections and
     * players made meanwhile. */
    static proto_buf screen;
    proto_buf *b = &screen;
    b->len = 0;
    b->failed = false;
    s->tick_at = 0;
    text_check(s);
    if (s->replay && v) /* a game of one's own comes first */
        text_set_screen(s, TEXT_LOBBY);
    if (v && !text_my_seat(c)) {
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
    else if (s->screen == TEXT_END && !(p && p->queued))
        draw_end(c, b);
    else
        text_draw_lobby(c, b);
    if (!text_in_game(c) || s->prompt) {
        if (v && !s->replay) prompt_at_bottom(s, b);
        proto_buf_puts(b, s->prompt ? ": " : "> ");
        text_typed_line(b, s->line, s->line_len);
    }
    if (b->failed || !b->len) {
        proto_buf_free(b);
        conn_close(c);
        return;
    }
    text_out(c, b->data, b->len);
    s->dirty = false;
    s->draw_at = 0;
    s->last_draw = uv_now(c->srv->loop);
    if (s->tick_at) text_arm(c);
}
