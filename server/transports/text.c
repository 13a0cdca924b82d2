/* text.c - text mode's session: its state, begin, sleep and wake, free, and the
 * bytes it writes. */
#include "text_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* --------------------------------------------------------------- output --- */

/* Writes bytes for a human; on telnet a 0xFF data byte goes out doubled. */
void text_out(conn *c, const char *data, size_t len) {
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
    assert(n <= proto_telnet_escaped_len(data, len));
    conn_write(c, (const char *)esc, n);
    free(esc);
}

void text_outs(conn *c, const char *str) {
    text_out(c, str, strlen(str));
}

/* A closing line's end: netcat waits for Enter after the server closes. */
#define NETCAT_HINT " (press Enter to close netcat)"

/* Ends the last line before a close: plainly on telnet, with the hint for netcat. */
static void end_last_line(conn *c) {
    text_outs(c, c->text && c->text->tn.seen ? "\r\n" : NETCAT_HINT "\r\n");
}

/* The last line before the connection closes; netcat notices the close only
 * when Enter is pressed, so it is told to. */
void text_say_last(conn *c, const char *line) {
    text_outs(c, "\r\n");
    text_outs(c, line);
    end_last_line(c);
}

/* A continuation byte of a UTF-8 character (10xxxxxx). */
bool text_utf8_tail(char ch) {
    return ((unsigned char)ch & 0xc0) == 0x80;
}

/* The command line being typed, as its echo showed it: ASCII as typed, a
 * '?' for each non-ASCII character (it is refused anyway, and a terminal
 * never gets bytes it could take for a control). */
void text_typed_line(proto_buf *b, const char *line, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)line[i] < 0x80)
            proto_buf_append(b, &line[i], 1);
        else if (!text_utf8_tail(line[i]))
            proto_buf_puts(b, "?");
    }
}

void text_set_status(text_session *s, const char *msg) {
    snprintf(s->status, sizeof s->status, "%s", msg);
}

/* ---------------------------------------------------------- what it is --- */

/* The room whose boards the human sees, if any: a running game it plays or
 * watches. A spectator sees the last boards until the `end` reaches it
 * (fanout.h), as its view is the last broadcast's. */
srv_view *text_shown(const text_session *s) {
    return s->view && s->view->state == SRV_VIEW_RUNNING ? s->view : NULL;
}

/* c's seat in the room of its view, NULL for a spectator or in the lobby. A
 * seat that left is not its any more: the room lets it go right after the
 * messages of the leave. */
const srv_view_seat *text_my_seat(const conn *c) {
    if (!c->text || !c->player) return NULL;
    const srv_view_seat *seat = srv_view_seat_of(c->text->view, c->player->id);
    return seat && seat->seated && seat->status != PROTO_LEFT ? seat : NULL;
}

/* "In a game" (protocol/README.md): playing or won in a running game; such a
 * player's keys are moves in character mode. */
bool text_in_game(const conn *c) {
    const srv_view_seat *seat = text_my_seat(c);
    return seat && text_shown(c->text) &&
           (seat->status == PROTO_PLAYING || seat->status == PROTO_WON);
}

/* Forgets the room: the player left it (or never gets another message of it). */
void text_forget_room(text_session *s) {
    srv_view_set(&s->view, NULL);
    s->resume_code[0] = '\0';
}

bool text_char_mode(const text_session *s) {
    return s->tn.echo;
}

/* True where a key is a move at once (telnet, in a game): a command is
 * typed after ':' there, so what the screen tells to type says ":help". */
bool text_keys_play(const conn *c) {
    return c->text && text_char_mode(c->text) && text_in_game(c);
}

/* The command word as it is typed where the message is shown ("leave" or,
 * where keys play, ":leave"), for the messages below. */
const char *text_typed(const conn *c) {
    return text_keys_play(c) ? ":" : "";
}

/* ---------------------------------------------------------- the screen --- */

#define SCREEN(x)     (1u << (x))
#define LOBBY_SCREENS (SCREEN(TEXT_LOBBY) | SCREEN(TEXT_HELP) | SCREEN(TEXT_HISTORY))

/* The moves each screen allows (a bit per screen it may go to). A replay
 * is left for the lobby first (any command but a replay's controls stops
 * it); a new end may replace an end screen; closing is final. */
static const unsigned text_screen_moves[TEXT_SCREENS] = {
    [TEXT_LOBBY] =
        LOBBY_SCREENS | SCREEN(TEXT_END) | SCREEN(TEXT_REPLAY) | SCREEN(TEXT_CLOSING),
    [TEXT_HELP] =
        LOBBY_SCREENS | SCREEN(TEXT_END) | SCREEN(TEXT_REPLAY) | SCREEN(TEXT_CLOSING),
    [TEXT_HISTORY] =
        LOBBY_SCREENS | SCREEN(TEXT_END) | SCREEN(TEXT_REPLAY) | SCREEN(TEXT_CLOSING),
    [TEXT_END] =
        LOBBY_SCREENS | SCREEN(TEXT_END) | SCREEN(TEXT_REPLAY) | SCREEN(TEXT_CLOSING),
    /* An `end` can come before the race's first redraw took the replay away. */
    [TEXT_REPLAY] = SCREEN(TEXT_REPLAY_PAUSED) | SCREEN(TEXT_LOBBY) | SCREEN(TEXT_END) |
                    SCREEN(TEXT_CLOSING),
    [TEXT_REPLAY_PAUSED] = SCREEN(TEXT_REPLAY) | SCREEN(TEXT_LOBBY) | SCREEN(TEXT_END) |
                           SCREEN(TEXT_CLOSING),
    [TEXT_CLOSING] = 0,
};

static bool is_replay(text_screen screen) {
    return screen == TEXT_REPLAY || screen == TEXT_REPLAY_PAUSED;
}

void text_check(const text_session *s) {
    assert(s->screen < TEXT_SCREENS);
    assert((s->screen == TEXT_END) == (s->end != NULL));
    assert(is_replay(s->screen) == (s->replay != NULL));
    assert(s->line_len < sizeof s->line);
    (void)s;
}

/* The one place s->screen changes. end and replay are what `to` holds (the
 * end's view, a new playback); a move between playing and paused keeps the
 * playback. Returns false (nothing changed) once closing. */
static bool move_screen(text_session *s, text_screen to, srv_view *end,
                        text_replay *replay) {
    text_check(s);
    if (s->screen == TEXT_CLOSING) return false; /* what quitting sends shows nothing */
    assert(to < TEXT_SCREENS);
    assert(text_screen_moves[s->screen] & SCREEN(to));
    (void)text_screen_moves; /* read by the assert only */
    assert((to == TEXT_END) == (end != NULL));
    assert((to == TEXT_REPLAY && !is_replay(s->screen)) == (replay != NULL));
    srv_view_set(&s->end, end);
    if (!is_replay(to) || replay) {
        text_replay_free(s->replay);
        s->replay = replay;
        s->replay_at = 0;
    }
    s->screen = to;
    text_check(s);
    return true;
}

void text_set_screen(text_session *s, text_screen to) {
    move_screen(s, to, NULL, NULL);
}

void text_show_end(text_session *s, srv_view *end, proto_end_reason reason,
                   uint64_t winner) {
    assert(end && end->has_verdict && end->nseats <= PROTO_PLAYERS_MAX);
    if (!move_screen(s, TEXT_END, end, NULL)) return;
    s->end_reason = reason;
    s->end_winner = winner;
}

void text_show_replay(text_session *s, text_replay *replay) {
    if (!move_screen(s, TEXT_REPLAY, NULL, replay)) text_replay_free(replay);
}

void text_drop_end(text_session *s) {
    if (s->screen == TEXT_END) text_set_screen(s, TEXT_LOBBY);
}

/* The account screen goes, wiped first: it may hold a key. */
void text_forget_account_screen(text_session *s) {
    if (!s->account_screen) return;
    memset(s->account_screen, 0, strlen(s->account_screen));
    free(s->account_screen);
    s->account_screen = NULL;
}

void text_greet(conn *c) {
    text_session *s = c->text;
    s->greeted = true;
    s->greet_at = 0;
    if (!session_player(c, false)) return;
    c->player->welcomed = true;          /* a human needs no JSON welcome */
    c->player->wants_resume_code = true; /* ... but a code to type after a drop */
    text_draw(c);
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
bool text_can_sleep(const conn *c) {
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
    if (conn_timer_armed(c) || !text_can_sleep(c) ||
        uv_now(c->srv->loop) < c->text->last_draw + REDRAW_MS)
        return;
    free(c->text);
    c->text = NULL;
    c->text_asleep = ASLEEP_GREETED;
}

void text_on_sleep_due(conn *c) {
    text_sleep(c);
}

/* Makes an asleep session again; false if c has none (or no memory: closed). */
bool text_awake(conn *c) {
    if (c->text) return true;
    if (!c->text_asleep) return false;
    assert(c->text_asleep == ASLEEP_OFFERED || c->text_asleep == ASLEEP_GREETED);
    text_session *s = malloc(sizeof *s);
    if (!s) {
        conn_close(c);
        return false;
    }
    if (c->text_asleep == ASLEEP_GREETED) {
        greeted_session(s);
        /* Asleep since a redraw less than REDRAW_MS ago: the pace holds. */
        if (conn_timer_runs(c, text_on_sleep_due))
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
    text_on_timer(c); /* greets; then text_arm sets the pace for sleeping */
    c->text = NULL;
    conn_flush_now(c);
    if (conn_is_open(c) && conn_timer_runs(c, text_on_sleep_due)) {
        c->text = &tmp;
        bool sleeps = text_can_sleep(c);
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
    assert(!text_has_session(c));
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

void text_say(conn *c, conn_say why) {
    if (!text_has_session(c)) return;
    char line[96];
    switch (why) {
    case CONN_SAY_SHUTDOWN:
        text_outs(c, "\r\nThe server is stopping. Goodbye!");
        break;
    case CONN_SAY_IDLE: /* with netcat's suffix, 73 columns */
        text_outs(c, "\r\nClosing: nothing was typed for a long time.");
        break;
    case CONN_SAY_SLOW:
        text_outs(c, "\r\nClosing this connection: a line took too long to arrive.");
        break;
    case CONN_SAY_TOO_LONG:
        snprintf(line, sizeof line,
                 "\r\nThat line is longer than %zu bytes; closing the connection.",
                 c->srv->cfg->max_line);
        text_outs(c, line);
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
        srv_view_unref(c->text->end);
        text_forget_account_screen(c->text);
        srv_view_unref(c->text->view);
    }
    free(c->text);
    c->text = NULL;
    c->text_asleep = 0;
}
