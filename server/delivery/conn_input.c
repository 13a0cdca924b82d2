/* conn_input.c - reading a connection, in its fair share of each loop turn. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "conn_internal.h"
#include "fanout.h"
#include "transport.h"

static void on_turn_idle(uv_idle_t *h);

/* A turn that read from at most this many connections was a quiet one. In the
 * turn after a quiet one, replies are written as soon as a read's requests are
 * handled: at 2 clients, waiting for the end of the turn added about 15 us to
 * each reply (p50 43 -> 58 us). A busy loop keeps writing once per turn, where
 * coalescing saves a third of the CPU per move. */
#define QUIET_READS 4

/* All connections read into one buffer: libuv hands it back to us before the
 * next read. Input left over when a connection's turn is up is copied aside
 * (and reading stops until it is handled), so a connection holds at most one
 * read's worth. */
static char read_buf[16 * 1024];

void conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

/* Handles input within the connection's budget for this turn; returns the
 * bytes used (0 once the budget is spent, or when bytes were handed back
 * to go first). */
static size_t handle(conn *c, const char *data, size_t n) {
    srv *s = c->srv;
    if (!conn_is_open(c)) return n;
    if (conn_over_half(c)) return 0; /* requests wait until the client reads */
    if (c->budget_turn != (uint32_t)s->turn) {
        c->budget_turn = (uint32_t)s->turn;
        c->budget = conn_transport_of(c)->turn_share;
    }
    if (!c->budget) return 0;
    /* A racer whose room's spectators are far behind waits (fanout.h). */
    if (c->player && fanout_holds(c->player)) return 0;
    /* A hello waits for the cluster's copy of an account (accounts_kv.h). */
    if (c->player && c->player->account_wait) return 0;
    return conn_transport_of(c)->input(c, data, n);
}

/* Notes when an unfinished request began (a partial line, a telnet command
 * cut short), for --request-timeout. */
static void note_partial(conn *c) {
    const conn_transport *t = conn_transport_of(c);
    bool partial =
        c->framer.len > 0 || c->framer.discarding || (t->midway && t->midway(c));
    if (!partial)
        c->partial_since = 0;
    else if (!c->partial_since)
        c->partial_since = uv_now(c->srv->loop);
}

/* Gives back the bytes handed back (they joined `in`, or the connection
 * ends). */
static void free_front(conn *c) {
    if (!c->in_front) return;
    byte_buf_free(c->in_front);
    free(c->in_front);
    c->in_front = NULL;
}

/* Keeps input for a later turn: data goes after what is held, and bytes
 * handed back by conn_feed_json before it. Returns -1 (closing the
 * connection) if memory runs out. */
static int keep(conn *c, const char *data, size_t n) {
    size_t held = c->in.len - c->in_off;
    size_t front = c->in_front ? c->in_front->len : 0;
    assert(!c->in_front || front > 0); /* made by a hand-back of bytes, freed here */
    if (!front && !n) return 0;
    byte_buf merged = {0};
    if (byte_buf_reserve(&merged, front + held + n) < 0) {
        conn_close(c);
        return -1;
    }
    /* Within the reservation: these cannot fail. */
    if (front) byte_buf_append(&merged, c->in_front->data, front);
    if (held) byte_buf_append(&merged, c->in.data + c->in_off, held);
    if (n) byte_buf_append(&merged, data, n);
    free_front(c);
    byte_buf_free(&c->in);
    c->in = merged;
    c->in_off = 0;
    if (c->input_link.next == &c->input_link) {
        srv_list_push(&c->srv->input_list, &c->input_link);
        uv_idle_start(&c->srv->turn_idle, on_turn_idle);
    }
    conn_update_reading(c);
    return 0;
}

void conn_release_input(conn *c) {
    byte_buf_free(&c->in);
    free_front(c);
    c->in_off = 0;
    srv_list_remove(&c->input_link);
}

/* Is input held for a later turn (read, or handed back)? */
static bool holds_input(const conn *c) {
    return c->in_off < c->in.len || c->in_front;
}

/* Fresh bytes from the socket: handled now as far as the budget goes. */
static void take_input(conn *c, const char *data, size_t n) {
    while (n && conn_is_open(c) && !c->in_front) {
        size_t used = handle(c, data, n);
        data += used;
        n -= used;
        if (!used) break;
    }
    if (conn_is_open(c) && (n || c->in_front)) keep(c, data, n);
    note_partial(c);
}

/* Held input's turn: handled as far as the budget goes. While the client
 * has not read half the output limit its requests wait out of the turn (so
 * the loop does not spin on them); update_reading puts them back. */
static void take_held(conn *c) {
    if (conn_is_open(c) && conn_over_half(c)) {
        srv_list_remove(&c->input_link);
        return;
    }
    while (conn_is_open(c) && holds_input(c)) {
        if (c->in_front && keep(c, NULL, 0) < 0) return;
        size_t used = handle(c, c->in.data + c->in_off, c->in.len - c->in_off);
        if (!conn_is_open(c)) break;
        c->in_off += (uint32_t)used;
        if (!used) break;
    }
    if (!conn_is_open(c) || !holds_input(c)) {
        conn_release_input(c);
        conn_update_reading(c);
    }
    note_partial(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0) {
        if (nread != UV_EOF)
            srv_log(SRV_LOG_DEBUG, "read error on %s: %s", conn_peer(c),
                    uv_strerror((int)nread));
        conn_close(c);
        return;
    }
    if (nread == 0 || !conn_is_open(c)) return;
    srv *s = c->srv;
    s->metrics.bytes_in += (uint64_t)nread;
    take_input(c, buf->base, (size_t)nread);
    if (++s->reads_this_turn <= QUIET_READS && s->reads_last_turn <= QUIET_READS)
        conn_flush_all(s);
}

void conn_feed_json(conn *c, const char *data, size_t n) {
    conn_hand_back(c, data, n);
}

/* Bytes to be handled before anything else the connection holds. */
void conn_hand_back(conn *c, const char *data, size_t n) {
    if (!conn_is_open(c) || !n) return;
    byte_buf *front = c->in_front ? c->in_front : calloc(1, sizeof *front);
    if (!front || byte_buf_append(front, data, n) < 0) {
        if (front != c->in_front) free(front);
        conn_close(c);
        return;
    }
    c->in_front = front;
}

size_t conn_take_share(conn *c, size_t n) {
    size_t k = n < c->budget ? n : c->budget;
    c->budget -= (unsigned)k;
    return k;
}

void conn_set_transport(conn *c, conn_mode mode) {
    unsigned old_share = conn_transport_of(c)->turn_share;
    c->mode = (uint8_t)mode;
    /* What is left of a share in bytes means nothing in lines (text to
     * JSON), so a different share starts afresh for this turn; the same
     * share (HTTP to WebSocket) goes on being spent. A budget of an earlier
     * turn is renewed now, as handle would. */
    if (c->srv->transports[mode]->turn_share != old_share ||
        c->budget_turn != (uint32_t)c->srv->turn) {
        c->budget = c->srv->transports[mode]->turn_share;
        c->budget_turn = (uint32_t)c->srv->turn;
    }
}

/* Held input: every connection with some gets one budget per turn. */
static void on_turn_idle(uv_idle_t *h) {
    srv *s = h->loop->data;
    srv_link todo;
    srv_list_init(&todo);
    if (!srv_list_empty(&s->input_list)) { /* move the list to todo */
        todo.next = s->input_list.next;
        todo.prev = s->input_list.prev;
        todo.next->prev = todo.prev->next = &todo;
        srv_list_init(&s->input_list);
    }
    while (!srv_list_empty(&todo)) {
        conn *c = srv_container(todo.next, conn, input_link);
        srv_list_remove(&c->input_link);
        srv_list_push(&s->input_list, &c->input_link); /* back unless done */
        take_held(c);
    }
    if (srv_list_empty(&s->input_list)) uv_idle_stop(&s->turn_idle);
}

/* Reads while nothing holds it back: input waiting for its turn, output over
 * half the limit, closing. */
void conn_update_reading(conn *c) {
    if (c->refused) return;
    bool over = conn_over_half(c);
    bool want = conn_is_open(c) && !holds_input(c) && !over;
    /* Since when the output, over half the limit, has not moved. */
    if (!over)
        c->stalled_since = 0;
    else if (!c->stalled_since)
        c->stalled_since = uv_now(c->srv->loop);
    /* Held requests parked by take_held: their turn comes again. */
    if (!over && conn_is_open(c) && holds_input(c) &&
        c->input_link.next == &c->input_link) {
        srv_list_push(&c->srv->input_list, &c->input_link);
        uv_idle_start(&c->srv->turn_idle, on_turn_idle);
    }
    if (want == c->reading) return;
    c->reading = want;
    if (want)
        uv_read_start((uv_stream_t *)&c->tcp, conn_on_alloc, on_read);
    else
        uv_read_stop((uv_stream_t *)&c->tcp);
}
