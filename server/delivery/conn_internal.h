/* conn_internal.h - what the conn_*.c files share, and nothing else sees. */
#ifndef RACE2048_CONN_INTERNAL_H
#define RACE2048_CONN_INTERNAL_H

#include "conn.h"

/* How long a silent client has before the server decides it is a human. */
#define DETECT_MS 300
/* How soon a timer deferred by srv_defer_until_io runs again. */
#define DEFER_MS 5

/* Arms c's deadline; a connection that cannot have one is closed. */
static inline void conn_arm(conn *c, conn_timer_cb cb, uint64_t ms) {
    if (conn_timer_start(c, cb, ms) < 0) conn_close(c);
}

/* ------------------------------------------------ accepting (conn_accept.c) */

/* Counts c against its address; returns why it must be refused, or 0. */
conn_refusal conn_admit(conn *c);
/* An admitted connection reads (HTTP from its first byte on --http-port). */
void conn_begin(conn *c, bool http);
/* A refused connection waits for its first bytes (or a silence) to answer. */
void conn_begin_refused(conn *c, bool http);
/* A refused connection's first bytes choose how it is told. */
void conn_refused_input(conn *c, const char *data, size_t n);
/* On --http-port (HTTP from the start) anything gets the 503. */
void conn_refused_http_input(conn *c);

/* ------------------------------------------------- detection (conn_detect.c) */

/* The detection window ended in silence: a human (text mode). */
void conn_on_detect_timeout(conn *c);
/* A connection from a balancer: it reads its PROXY header before anything else. */
void conn_await_header(conn *c, bool http);

/* ------------------------------------------------------ input (conn_input.c) */

/* libuv's read buffer: the one all connections read into. */
void conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
/* Reads while nothing holds it back: input waiting for its turn, output over
 * half the limit, closing. */
void conn_update_reading(conn *c);
/* Bytes to be handled before anything else the connection holds. */
void conn_hand_back(conn *c, const char *data, size_t n);
/* Frees the input held for a later turn and leaves the turn's list. */
void conn_release_input(conn *c);

/* ----------------------------------------------------- output (conn_out.c) */

/* Has the client left more than half of --max-output unread? Its requests
 * then wait (inline: asked for every JSON line). */
static inline bool conn_over_half(const conn *c) {
    return c->out_bytes > c->srv->cfg->max_output / 2;
}
/* The queue starts as the connection's one inline entry (a ring of 1). */
void conn_use_inline(conn *c);
/* Writes what is queued (see conn_out.c). */
void conn_flush(conn *c);
/* Gives the ring back when the queue is empty. */
void conn_trim(conn *c);
/* Closes a client that does not read its output. */
void conn_slow_consumer(conn *c);
/* Drops every entry still queued and the ring (the connection is freed). */
void conn_out_free(conn *c);
/* durable_waiters' go_on: a connection held for the journal may flush again. */
void conn_on_durable(void *ctx, srv_link *flush_link);

/* ----------------------------------------------------- closing (conn_close.c) */

/* Draining: once every queued byte is out, the shutdown ends the connection. */
void conn_maybe_shutdown(conn *c);
/* The socket's close callback: the connection is freed once no handle is open. */
void conn_on_handle_closed(uv_handle_t *h);

#endif
