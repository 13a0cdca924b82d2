/* conn.h - one client connection: socket, mode detection, fair input, one output queue.
 */
#ifndef RACE2048_CONN_H
#define RACE2048_CONN_H

#include "byte_buf.h"
#include "conn_timer.h"
#include "durable_barrier.h"
#include "framer.h"
#include "srv.h"

typedef enum conn_mode {
    CONN_DETECT, /* nothing received yet */
    CONN_JSON,   /* first byte '{': JSON lines only, for the connection's life */
    CONN_TEXT,   /* a human on telnet or netcat */
    CONN_HTTP,   /* an HTTP/1.1 request line: a browser, balancer or monitor */
    CONN_WS,     /* upgraded from HTTP: JSON mode in WebSocket text messages */
    CONN_PROXY,  /* from --proxy-from: its PROXY header first, then detection or HTTP */
    CONN_NMODES
} conn_mode;

/* Where a connection is in its life; it only moves down the list. */
typedef enum conn_state {
    CONN_OPEN,     /* reading, handling and writing */
    CONN_DRAINING, /* flushing a last message: nothing more is read or queued */
    CONN_SHUT,     /* draining, and the shutdown request went out */
    CONN_CLOSING,  /* uv_close called: nothing more is read or written */
} conn_state;

struct text_session;
struct web_session;

typedef enum conn_refusal {
    CONN_REFUSE_NONE,
    CONN_REFUSE_FULL,     /* --max-clients, stopping, or no memory to count it */
    CONN_REFUSE_FDS,      /* no file descriptors left for another client */
    CONN_REFUSE_PER_ADDR, /* --max-per-ip */
} conn_refusal;

/* ------------------------------------------------------------- output ---
 *
 * Every byte a connection sends goes through one queue of references to
 * shared srv_buf payloads: a broadcast is serialised once and queued to each
 * connection by reference. The queue is written once per loop turn (after
 * the turn's input and timers ran) with one vectored write of everything
 * pending; what the kernel does not take at once stays queued in order.
 *
 * For transports that frame messages (WebSocket): each entry may carry up to
 * CONN_HEAD_MAX bytes of its own written just before the shared payload, so
 * a frame header costs no copy of the payload. A transport that needs bytes
 * after a payload queues them as the next entry (conn_send_head with a
 * payload of its own, e.g. a static srv_buf whose refs never reach 0).
 *
 * --max-output bounds everything the queue holds: payload bytes (counted in
 * full for every connection a shared payload is queued to), heads, and the
 * queue's own entries. Past it the connection is a slow consumer and is
 * closed. Past half of it the connection's input is no longer read (its
 * requests wait in the kernel) until the queue drains below the half; a
 * connection whose queue then makes no progress for --request-timeout is a
 * slow consumer too. */

#define CONN_HEAD_MAX 10

/* One queued message: the inline head, then the first len bytes of the
 * shared payload. */
typedef struct conn_out {
    srv_buf *buf;
    uint32_t len;
    uint8_t head_len;
    char head[CONN_HEAD_MAX];
} conn_out;

typedef struct conn {
    srv_link link;       /* in srv.conns */
    srv_link flush_link; /* in srv.flush_list while entries wait to be written, or
                          * in srv.held_list while the first waits for the journal */
    srv_link input_link; /* in srv.input_list while input waits for a turn */
    srv *srv;
    uv_tcp_t tcp;
    conn_timer timer;     /* mode detection, then text-mode redraw pacing */
    uint32_t in_off;      /* bytes of `in` handled so far (see below) */
    unsigned budget;      /* lines (JSON) or bytes (the rest) left this turn */
    uint8_t mode;         /* a conn_mode: its transport (transport.h), set only by
                           * conn_set_transport */
    uint8_t state;        /* a conn_state */
    bool reading;         /* uv_read_start is in effect */
    uint8_t refused;      /* a conn_refusal: why it is being refused, or 0 */
    bool writing;         /* a uv_write of the queue's first `inflight` entries runs */
    bool counted;         /* counted in the per-address table */
    uint8_t text_asleep;  /* text mode: its session is given back while idle (text.c) */
    uint8_t open_handles; /* freed when the socket's close callback ran */
    proto_framer framer;
    srv_player *player;
    /* Output queue: a ring of `count` entries from `first`, a free-running
     * number (the ring's slot is first & (cap - 1)) that also numbers the
     * messages for the barrier; the first `inflight` of them belong to the
     * running uv_write, of which the first `skip` bytes went out before it
     * (a partial uv_try_write). */
    conn_out *out; /* &out_one (a ring of 1) until a second entry is queued */
    conn_out out_one;
    uint32_t out_cap, out_first, out_count, out_inflight;
    uint32_t out_skip;
    unsigned failed_resumes; /* counted by guard.c */
    size_t out_bytes;        /* charged against --max-output (see above) */
    uint64_t stalled_since;  /* loop time output stopped draining while over half */
    /* What is queued from a message on that waits for its journal record
     * (an `end`): it holds the ring's entries from that message's number. */
    durable_barrier barrier;
    /* Input read but not handled yet (its turn has not come): in.data[in_off,
     * in.len). Reading is stopped while any is held. */
    byte_buf in;
    /* Bytes handed back (conn_feed_json, detection) to go before `in`, or
     * NULL: made on the first hand-back and freed once they join `in`, so it
     * is non-NULL only while it holds bytes. A pointer, not a buffer, since
     * few connections ever hand back (8 bytes of every idle connection). */
    byte_buf *in_front;
    uint64_t last_active;   /* loop time of the last complete request */
    uint64_t partial_since; /* loop time an unfinished request began, 0 = none */
    /* The state of the connection's transport, owned by its mode: a
     * connection has at most one at a time. The header of --proxy-from is
     * read (and its state freed) before detection, which makes none; a text
     * session is freed before its connection becomes JSON (conn_become_json),
     * and no text connection becomes HTTP. Read `text` only in CONN_TEXT
     * (text_has_session checks the mode). */
    union {
        struct text_session *text;     /* CONN_TEXT: awake, or NULL */
        struct web_session *web;       /* CONN_HTTP and CONN_WS */
        struct conn_proxy_wait *proxy; /* CONN_PROXY */
    };
    /* The turn the budget belongs to: srv.turn's low 32 bits (a budget
     * 2^32 turns old taken for this turn's would only be a share). */
    uint32_t budget_turn;
    uint32_t id; /* for the logs (they wrap after 2^32 connections) */
    /* The client's address, the per-address key: the peer's, or behind a
     * balancer of --proxy-from the source its PROXY header names. */
    unsigned char addr[16];
    uint16_t port;
    uint8_t addr_len;
    /* First bytes that might still become an HTTP request line ("GET /"):
     * at most 17 decide (proto_http_detect). Fields are ordered so that a
     * connection fits a 592-byte malloc chunk (584 bytes asked for, on
     * 64-bit glibc: idle memory, issues 9 and 26; test_conn_fits_its_chunk). */
    uint8_t detect_len;
    char detect_buf[20];
} conn;

/* The idle budget (issues 9 and 26; srv_player's is in player.h): with
 * libuv's 248-byte uv_tcp_t (64-bit Linux) a connection is 584 bytes, a
 * 592-byte malloc chunk. What is ours is held here, whatever the size of
 * another libuv's handle; test_conn_fits_its_chunk checks the whole. */
_Static_assert(sizeof(conn) - sizeof(uv_tcp_t) <= 584 - 248,
               "struct conn outgrew the idle-connection budget");

/* The peer's address and port ("1.2.3.4:5678"), for the logs: in a buffer
 * the next call reuses. */
const char *conn_peer(const conn *c);

/* Accepts a pending connection on listener: one of srv.listeners (mode
 * detection, text greeting after a silence) or of srv.http_listeners (HTTP
 * from the first byte, nothing written before a request). */
void conn_accept(srv *s, uv_stream_t *listener);

/* Sets up the server's per-turn machinery (input turns, output flushes,
 * pause detection). Call once before uv_run. */
void conn_loop_init(srv *s);

/* Writes every connection's queue now (what the end of a loop turn does). */
void conn_flush_all(srv *s);

/* Is c open: not draining a last message, not closing? Nothing is read,
 * handled or queued for a connection that is not. */
static inline bool conn_is_open(const conn *c) {
    return c->state == CONN_OPEN;
}
/* Is c closing (uv_close called)? A draining connection is not yet. */
static inline bool conn_is_closing(const conn *c) {
    return c->state == CONN_CLOSING;
}

/* Queues a JSON line (ending in '\n') as the connection's transport frames
 * it; a connection whose queue passes --max-output is closed (slow
 * consumer). Ignored on a closing or draining connection. */
void conn_send_buf(conn *c, srv_buf *b);
/* Queues an error line (proto_enc_error) and counts it in the metrics.
 * Ignored as conn_send_buf; nothing is sent if memory runs out. */
void conn_send_error(conn *c, proto_err code, const char *message);
/* Queues hdr (0 to CONN_HEAD_MAX bytes, copied) followed by the first len
 * bytes of the shared payload b (referenced, not copied), under the same
 * rules. For transports that frame each message (a WebSocket header). */
void conn_send_framed(conn *c, const void *hdr, size_t hdr_len, srv_buf *b, size_t len);
/* Queues a copy of raw bytes (text mode), under the same output limit. */
void conn_write(conn *c, const char *data, size_t len);
/* Delivers a message as the connection's transport shows it (held back
 * until the journal is durable up to m->durable_at). Ignored unless open. */
void conn_deliver(conn *c, const srv_msg *m);

/* Writes c's queue now, as the end of the loop turn would. For a timer's
 * output that is all the connection gets this turn: its copy is freed before
 * the next connection's player is made, not left between them (a crowd of
 * silent clients being greeted, text.c). */
void conn_flush_now(conn *c);

/* Closes now; the player is detached in the close callback, so a close in
 * the middle of a broadcast never changes a room under the broadcaster. */
void conn_close(conn *c);
/* Stops reading, flushes what is queued, then closes. */
void conn_close_after_flush(conn *c);

/* Switches an undecided or text connection to JSON mode and feeds it `line`
 * as its first JSON line (a JSON client that spoke late). */
void conn_become_json(conn *c, const char *line, size_t len);
/* Hands back bytes to a connection that became JSON (the rest of a read):
 * they are handled, in order, before anything else it sent. */
void conn_feed_json(conn *c, const char *data, size_t n);

/* A complete request arrived (a line, or a key in a game): the connection is
 * not idle. Text mode calls it; JSON lines are counted here. */
static inline void conn_request_done(conn *c) {
    c->last_active = uv_now(c->srv->loop);
}

/* The server is stopping: tell the client (bye, or a line for humans) and close. */
void conn_say_bye(conn *c);
/* A line or message passed --max-line: the transport says so, then the
 * connection closes after the flush. */
void conn_too_long(conn *c);

/* Periodic sweep: closes connections idle longer than --idle-timeout (no
 * complete request), with a request unfinished for --request-timeout, or
 * whose output has not moved for --request-timeout; gives back the memory
 * of empty queues. */
void conn_sweep_idle(srv *s);

/* The node fences (cluster mode): closes the connections that showed or would
 * show what another node now runs (see conn_close.c). The callback of
 * takeover_on_fence; srv_ctx is the server. */
size_t conn_close_for_fence(void *srv_ctx);

/* Writes the open connections by mode for /metrics (ctx: the server). */
struct metrics_out;
void conn_write_metrics(struct metrics_out *o, void *ctx);
/* A connection may have closed: accept again if accepting was paused for
 * lack of file descriptors. */
void conn_accept_resume(srv *s);

#endif
