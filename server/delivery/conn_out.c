/* conn_out.c - a connection's output ring, its bounds, its barrier and its flush. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "conn_internal.h"
#include "transport.h"

/* What an entry holds besides its bytes: the shared buffer's header and the
 * allocator's share of its two blocks (counted for every connection it is
 * queued to, so a shared buffer is over-counted, never under). */
#define ENTRY_OVERHEAD (sizeof(srv_buf) + 32)

/* --max-output bounds what waits for a client that does not read, not the
 * size of one reply: anything may be queued while the queue holds at most
 * half the limit (requests are handled only then, so every reply fits), and
 * past that only what keeps the queue within the limit. A non-reader holds
 * at most half the limit plus one message. */
static bool fits(const conn *c, size_t cost) {
    return !conn_over_half(c) || c->out_bytes + cost <= c->srv->cfg->max_output;
}

/* Asks for the queue to be written at the end of this loop turn. */
static void want_flush(conn *c) {
    if (c->flush_link.next == &c->flush_link)
        srv_list_push(&c->srv->flush_list, &c->flush_link);
}

static conn_out *entry(conn *c, unsigned i) {
    return &c->out[(c->out_first + i) & (c->out_cap - 1)];
}

/* What the queue's entries charge against --max-output, counted afresh. */
static size_t charged(const conn *c) {
    size_t n = c->out == &c->out_one ? 0 : (size_t)c->out_cap * sizeof(conn_out);
    for (uint32_t i = 0; i < c->out_count; i++) {
        const conn_out *e = &c->out[(c->out_first + i) & (c->out_cap - 1)];
        n += e->head_len + e->len + ENTRY_OVERHEAD;
    }
    return n;
}

/* The ring's invariants (asserts: on in development and sanitizer builds).
 * out_bytes is counted afresh only for a short queue, so that a Debug build
 * stays linear in what it queues. */
static void check_ring(const conn *c) {
    (void)c;
    (void)charged;
    assert(c->out_cap && (c->out_cap & (c->out_cap - 1)) == 0); /* a power of two */
    assert((c->out == &c->out_one) == (c->out_cap == 1));
    assert(c->out_count <= c->out_cap);
    assert(c->out_inflight <= c->out_count);
    assert(c->out_count || !c->out_skip);
    assert(!c->out_count ||
           c->out_skip <= c->out[c->out_first & (c->out_cap - 1)].len +
                              c->out[c->out_first & (c->out_cap - 1)].head_len);
    assert(c->out_count > 64 || c->out_bytes == charged(c));
    /* Nothing behind the barrier's first gate is being written. */
    assert(!c->barrier.first_until ||
           c->out_inflight <= (uint32_t)(c->barrier.first_from - c->out_first));
}

void conn_slow_consumer(conn *c) {
    c->srv->metrics.slow_consumers++;
    srv_log_client(SRV_LOG_WARN, "slow_consumer: closing %s, %zu bytes queued",
                   conn_peer(c), c->out_bytes);
    conn_close(c);
}

/* The queue starts as the connection's one inline entry (a ring of 1): most
 * connections never hold two messages at once, and an idle one holds no
 * allocated ring. */
void conn_use_inline(conn *c) {
    c->out = &c->out_one;
    c->out_cap = 1; /* out_first runs on: it numbers messages for the barrier */
}

static bool ring_allocated(const conn *c) {
    return c->out != &c->out_one;
}

/* Doubles the ring, or moves the inline entry into a first ring of 4. */
static int grow(conn *c) {
    if (!c->out) conn_use_inline(c);
    unsigned cap = ring_allocated(c) ? c->out_cap * 2 : 4;
    size_t old = ring_allocated(c) ? c->out_cap : 0;
    size_t extra = (size_t)(cap - old) * sizeof(conn_out);
    if (!fits(c, extra)) return -1;
    conn_out *ring = malloc((size_t)cap * sizeof *ring);
    if (!ring) return -1;
    for (uint32_t i = 0; i < c->out_count; i++)
        ring[(c->out_first + i) & (cap - 1)] = *entry(c, i);
    if (ring_allocated(c)) free(c->out);
    c->out = ring;
    c->out_cap = cap;
    c->out_bytes += extra;
    return 0;
}

/* A new entry at the back of the queue, charged `cost`; NULL (the client
 * closed as a slow consumer) if it does not fit. */
static conn_out *push_entry(conn *c, size_t cost) {
    if (!fits(c, cost) || (c->out_count == c->out_cap && grow(c) < 0) || !fits(c, cost)) {
        conn_slow_consumer(c);
        return NULL;
    }
    conn_out *e = entry(c, c->out_count++);
    c->out_bytes += cost;
    assert(c->out_count <= c->out_cap);
    return e;
}

void conn_send_framed(conn *c, const void *head, size_t head_len, srv_buf *b,
                      size_t len) {
    if (!b || !conn_is_open(c) || head_len > CONN_HEAD_MAX || len > b->len ||
        len > UINT32_MAX - CONN_HEAD_MAX) /* an entry's bytes fit out_skip */
        return;
    conn_out *e = push_entry(c, len + head_len + ENTRY_OVERHEAD);
    if (!e) return;
    e->buf = srv_buf_ref(b);
    e->len = (uint32_t)len;
    e->head_len = (uint8_t)head_len;
    if (head_len) memcpy(e->head, head, head_len);
    check_ring(c);
    want_flush(c);
    if (conn_over_half(c)) conn_update_reading(c);
}

/* How many entries from the front may be written: those before the
 * barrier's first gate that still holds (all of them when none does: one
 * compare). */
static uint32_t sendable(conn *c) {
    return durable_barrier_sendable(&c->barrier, c->out_first, c->out_count,
                                    c->srv->journal);
}

/* What may go went, and the rest waits for the journal: c waits in
 * srv.held_list until the journal grows durable (conn_on_durable). */
static void hold_for_journal(conn *c) {
    durable_waiters_hold(&c->srv->held_list, &c->flush_link);
}

void conn_on_durable(void *ctx, srv_link *flush_link) {
    srv *s = ctx;
    /* A closing connection left the held list (conn_close): none is here. */
    assert(!conn_is_closing(srv_container(flush_link, conn, flush_link)));
    srv_list_push(&s->flush_list, flush_link);
}

void conn_send_raw(conn *c, srv_buf *line) {
    conn_send_framed(c, NULL, 0, line, line->len);
}

void conn_send_buf(conn *c, srv_buf *b) {
    if (b && conn_is_open(c)) conn_transport_of(c)->send(c, b);
}

void conn_send_error(conn *c, proto_err code, const char *message) {
    size_t len = 0;
    char *line = proto_enc_error(code, message, &len);
    srv_buf *b = srv_buf_take(line, len); /* len is set only once the line is made */
    srv_count_error(c->srv, code);
    if (!b) return;
    conn_send_buf(c, b);
    srv_buf_unref(b);
}

void conn_write(conn *c, const char *data, size_t len) {
    if (!conn_is_open(c) || len == 0) return;
    char *copy = malloc(len);
    if (!copy) {
        conn_close(c);
        return;
    }
    memcpy(copy, data, len);
    srv_buf *b = srv_buf_take(copy, len);
    if (!b) {
        conn_close(c);
        return;
    }
    conn_send_framed(c, NULL, 0, b, len);
    srv_buf_unref(b);
}

void conn_deliver_json(conn *c, const srv_msg *m) {
    conn_send_buf(c, m->json);
}

void conn_deliver(conn *c, const srv_msg *m) {
    if (!conn_is_open(c)) return;
    /* What the transport queues for m, and everything after it, waits for
     * m's journal record (nearly always none: one compare). */
    durable_barrier_hold(&c->barrier, c->out_first + c->out_count, m->durable_at,
                         c->srv->journal);
    conn_transport_of(c)->deliver(c, m);
}

/* Drops `n` written bytes from the front of the queue (of the entries that
 * were sendable: nothing behind a gate was written). */
static void written(conn *c, size_t n) {
    if (n) c->stalled_since = 0;
    n += c->out_skip;
    c->out_skip = 0;
    for (uint32_t may = sendable(c); may; may--) {
        conn_out *e = entry(c, 0);
        size_t len = e->head_len + e->len;
        if (n < len) {
            c->out_skip = (uint32_t)n;
            break;
        }
        n -= len;
        assert(c->out_bytes >= len + ENTRY_OVERHEAD);
        c->out_bytes -= len + ENTRY_OVERHEAD;
        srv_buf_unref(e->buf);
        c->out_first++; /* free-running: the slot is masked by entry() */
        c->out_count--;
        if (c->out_inflight) c->out_inflight--;
    }
    check_ring(c);
}

/* Lists the unwritten bytes of the first `count` entries as buffers (two per
 * entry at most); returns how many. */
/* The iovecs of the first count entries. With heads (room for CONN_HEAD_MAX
 * bytes per entry) the inline heads are copied there: a write that waits for
 * the socket must not point into the ring, which may grow and move before it
 * completes. */
static unsigned gather(conn *c, unsigned count, uv_buf_t *bufs, char *heads) {
    unsigned nb = 0;
    size_t skip = c->out_skip;
    for (unsigned i = 0; i < count; i++) {
        conn_out *e = entry(c, i);
        size_t h = e->head_len;
        char *head = e->head;
        if (heads && skip < h) {
            head = heads + (size_t)i * CONN_HEAD_MAX;
            memcpy(head, e->head, h);
        }
        if (skip < h) bufs[nb++] = uv_buf_init(head + skip, (unsigned)(h - skip));
        size_t from = skip > h ? skip - h : 0;
        if (from < e->len)
            bufs[nb++] = uv_buf_init(e->buf->data + from, (unsigned)(e->len - from));
        skip = 0;
    }
    return nb;
}

static void on_write(uv_write_t *req, int status) {
    conn *c = req->data;
    free(req);
    c->writing = false;
    if (status < 0) {
        c->out_inflight = 0;
        if (status != UV_ECANCELED) conn_close(c);
        return;
    }
    size_t n = 0;
    for (unsigned i = 0; i < c->out_inflight; i++) {
        const conn_out *e = entry(c, i);
        n += e->head_len + e->len;
    }
    c->srv->metrics.bytes_out += n - c->out_skip;
    written(c, n - c->out_skip);
    c->out_inflight = 0;
    if (conn_is_closing(c)) return;
    if (!conn_is_open(c))
        conn_flush(c); /* draining: the last bytes go out now, then the shutdown */
    else if (c->out_count)
        want_flush(c);
    conn_update_reading(c);
}

/* Writes what is queued: at once as far as the kernel takes it, the rest by
 * one uv_write. A connection held by its barrier waits in srv.held_list. */
void conn_flush(conn *c) {
    if (conn_is_closing(c) || c->writing || !c->out_count) {
        conn_maybe_shutdown(c);
        return;
    }
    unsigned count = sendable(c);
    if (!count) {
        hold_for_journal(c);
        return;
    }
    uv_buf_t stack[64];
    uv_buf_t *bufs = stack;
    if (count * 2 > 64 && !(bufs = malloc(count * 2 * sizeof *bufs))) {
        conn_close(c);
        return;
    }
    uv_stream_t *stream = (uv_stream_t *)&c->tcp;
    unsigned nb = gather(c, count, bufs, NULL);
    int n = nb ? uv_try_write(stream, bufs, nb) : 0; /* nb 0: only empty entries */
    if (n == UV_EAGAIN) n = 0;
    if (n < 0) {
        if (bufs != stack) free(bufs);
        conn_close(c);
        return;
    }
    c->srv->metrics.bytes_out += (uint64_t)n;
    written(c, (size_t)n);
    count = sendable(c);
    if (count) {
        /* The request carries the heads' copies (see gather); on_write frees both. */
        uv_write_t *req = malloc(sizeof *req + (size_t)count * CONN_HEAD_MAX);
        if (req) nb = gather(c, count, bufs, (char *)(req + 1));
        if (!req || uv_write(req, stream, bufs, nb, on_write) < 0) {
            free(req);
            if (bufs != stack) free(bufs);
            conn_close(c);
            return;
        }
        req->data = c;
        c->writing = true;
        c->out_inflight = count;
    } else if (c->out_count) { /* all that may go went: wait for the journal */
        hold_for_journal(c);
    }
    if (bufs != stack) free(bufs);
    conn_maybe_shutdown(c);
    conn_update_reading(c);
}

/* Gives the ring back when the queue is empty (an idle connection holds none). */
void conn_trim(conn *c) {
    if (c->out_count || !ring_allocated(c)) return;
    c->out_bytes -= (size_t)c->out_cap * sizeof(conn_out);
    free(c->out);
    conn_use_inline(c);
    check_ring(c);
}

void conn_out_free(conn *c) {
    while (c->out_count) {
        srv_buf_unref(entry(c, 0)->buf);
        c->out_first++;
        c->out_count--;
    }
    if (ring_allocated(c)) free(c->out);
    c->out = NULL;
}

void conn_flush_now(conn *c) {
    srv_list_remove(&c->flush_link); /* what conn_flush_all does for each */
    conn_flush(c);
}

void conn_flush_all(srv *s) {
    while (!srv_list_empty(&s->flush_list)) {
        srv_link *l = s->flush_list.next;
        srv_list_remove(l);
        conn_flush(srv_container(l, conn, flush_link));
    }
}
