/* text_input.c - text mode's input: telnet bytes, lines in line mode, keys and the
 * command line being edited in character mode. */
#include "text_internal.h"

#include <assert.h>
#include <string.h>

#include "session.h"

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
            text_run_command(c, line, len);
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
    text_run_command(c, line, len);
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
    text_request_draw(c);
}

/* A key while a replay plays (no command line open): it steers the replay;
 * Esc stops it too. */
static void replay_key(conn *c, const proto_key *k) {
    conn_request_done(c);
    if (k->type == PROTO_KEY_ESCAPE)
        text_replay_control(c, 'q');
    else if ((k->type == PROTO_KEY_CHAR || k->type == PROTO_KEY_MOVE) && k->ch)
        text_replay_control(c, k->ch);
}

/* A key in a game (no command line open): a move at once. */
static void game_key(conn *c, const proto_key *k) {
    text_session *s = c->text;
    conn_request_done(c); /* a key in a game is a complete request */
    if (k->type == PROTO_KEY_MOVE) {
        proto_request req = {.type = PROTO_REQ_MOVE, .dir = k->dir};
        s->status[0] = '\0';
        text_request(c, &req);
    } else if (k->type == PROTO_KEY_COLON) {
        open_prompt(c);
    } else if (k->type == PROTO_KEY_CHAR && k->ch != ' ') {
        /* A command typed without ':' (its h and l were moves). */
        text_set_status(s, "In a game every key is a move; type : first for a command "
                           "(:help).");
        text_request_draw(c);
    }
}

/* A racer whose board is stuck in a race still running: it types command
 * lines (protocol/README.md), but its fingers still play. */
static bool stuck(const conn *c) {
    return text_my_seat(c) && text_shown(c->text) && !text_in_game(c);
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
    text_typed_line(&b, s->line, s->line_len);
    proto_buf_puts(&b, "\x1b[K");
    if (!b.failed) text_out(c, b.data, b.len);
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
        text_outs(c, "\r\n");
        text_run_command(c, line, len);
        break;
    }
    case PROTO_KEY_BACKSPACE:
        if (s->line_len) {
            /* One character: a non-ASCII one with all its bytes. */
            while (s->line_len > 1 && text_utf8_tail(s->line[s->line_len - 1]))
                s->line_len--;
            s->line_len--;
            text_outs(c, "\b \b");
        }
        break;
    case PROTO_KEY_ESCAPE:
        if (s->prompt) {
            s->prompt = false;
            s->line_len = 0;
            text_request_draw(c);
        }
        break;
    default:
        /* Move letters, ':' and other printable bytes are text here; arrows are not. */
        if (k->ch && s->line_len < sizeof s->line - 1) {
            s->line[s->line_len++] = k->ch;
            assert(s->line_len < sizeof s->line); /* room for begins_command's byte */
            if ((unsigned char)k->ch < 0x80)
                text_out(c, &k->ch, 1);
            else if (!text_utf8_tail(k->ch))
                text_outs(c, "?"); /* one column per character, whatever its bytes */
        }
        break;
    }
}

/* One key in character mode. */
void text_on_key(conn *c, const proto_key *k) {
    text_session *s = c->text;
    if (k->type == PROTO_KEY_CTRL_C || k->type == PROTO_KEY_CTRL_D)
        text_quit(c, "Goodbye!");
    else if (s->replay && !s->prompt && k->type == PROTO_KEY_COLON)
        open_prompt(c);
    else if (s->replay && !s->prompt)
        replay_key(c, k);
    else if (!s->prompt && text_in_game(c))
        game_key(c, k);
    else
        line_key(c, k);
}

static void feed_keys(conn *c, const unsigned char *data, size_t n) {
    for (size_t i = 0; i < n && c->text && conn_is_open(c); i++) {
        proto_key keys[2];
        int got = proto_keys_feed(&c->text->keys, data[i], keys);
        assert(got >= 0 && got <= 2);
        for (int k = 0; k < got && c->text && conn_is_open(c); k++)
            text_on_key(c, &keys[k]);
    }
    if (c->text && proto_keys_pending(&c->text->keys)) {
        c->text->esc_at = uv_now(c->srv->loop) + ESC_MS;
        text_arm(c);
    }
}

static void handle_events(conn *c, unsigned events) {
    text_session *s = c->text;
    if (events & PROTO_TN_EV_TELNET && !s->greeted) {
        s->greet_at = uv_now(c->srv->loop) + GREET_SETTLE_MS;
        text_arm(c);
    }
    if (events & PROTO_TN_EV_INTERRUPT) {
        text_quit(c, "Interrupted. Goodbye!");
        return;
    }
    if (events & (PROTO_TN_EV_RESIZE | PROTO_TN_EV_ECHO)) text_request_draw(c);
}

void text_input(conn *c, const char *data, size_t n) {
    if (!text_awake(c)) return;
    const unsigned char *in = (const unsigned char *)data;
    unsigned char plain[4096];
    while (n > 0 && c->text && conn_is_open(c)) {
        text_session *s = c->text;
        size_t chunk = n < sizeof plain ? n : sizeof plain;
        size_t plain_len;
        unsigned events;
        size_t used = proto_telnet_feed(&s->tn, in, chunk, plain, &plain_len, &events);
        assert(used <= chunk && plain_len <= chunk);
        in += used;
        n -= used;
        size_t reply_len;
        const unsigned char *reply = proto_telnet_replies(&s->tn, &reply_len);
        if (reply_len) conn_write(c, (const char *)reply, reply_len);
        if (text_char_mode(s)) {
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
