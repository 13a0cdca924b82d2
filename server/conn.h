/* conn.h - one client connection: socket, mode detection, framing, bounded output. */
#ifndef RACE2048_CONN_H
#define RACE2048_CONN_H

#include "framer.h"
#include "srv.h"

typedef enum conn_mode {
    CONN_DETECT, /* nothing received yet */
    CONN_JSON,   /* first byte '{': JSON lines only, for the connection's life */
    CONN_TEXT,   /* a human on telnet or netcat */
    CONN_HTTP,   /* an HTTP/1.1 request line: a browser, balancer or monitor */
    CONN_WS,     /* upgraded from HTTP: JSON mode in WebSocket text messages */
} conn_mode;

struct text_session;
struct web_session;

typedef struct conn {
    srv_link link; /* in srv.conns */
    srv *srv;
    uv_tcp_t tcp;
    uv_timer_t timer; /* mode detection, then text-mode redraw pacing */
    uv_shutdown_t shutdown_req;
    int open_handles; /* freed when both handles' close callbacks ran */
    conn_mode mode;
    bool closing;  /* uv_close called: nothing more is read or written */
    bool draining; /* flushing a last message before closing */
    proto_framer framer;
    srv_player *player;
    uint64_t last_active; /* loop time of the last byte received */
    uint64_t id;          /* for the logs */
    char peer[64];
    struct text_session *text;
    struct web_session *web; /* CONN_HTTP and CONN_WS */
    /* First bytes that might still become an HTTP request line ("GET /"). */
    char detect_buf[24];
    size_t detect_len;
    unsigned failed_resumes; /* counted by guard.c */
} conn;

/* Accepts a pending connection on listener (one of srv.listeners). */
void conn_accept(srv *s, uv_stream_t *listener);

/* Queues a JSON line; a connection whose queue passes --max-output is closed
 * (slow consumer). Ignored on a closing or draining connection. */
void conn_send_buf(conn *c, srv_buf *b);
/* Queues a small header (copied; at most 16 bytes) followed by the first len
 * bytes of b (shared, not copied) as one write, under the output limit. */
void conn_send_framed(conn *c, const void *hdr, size_t hdr_len, srv_buf *b, size_t len);
/* Queues a copy of raw bytes (text mode), under the same output limit. */
void conn_write(conn *c, const char *data, size_t len);
/* Delivers a message according to the connection's mode. */
void conn_deliver(conn *c, const srv_msg *m);

/* Closes now; the player is detached in the close callback, so a close in
 * the middle of a broadcast never changes a room under the broadcaster. */
void conn_close(conn *c);
/* Stops reading, flushes what is queued, then closes. */
void conn_close_after_flush(conn *c);

/* Switches an undecided or text connection to JSON mode and feeds it `line`
 * as its first JSON line (a JSON client that spoke late). */
void conn_become_json(conn *c, const char *line, size_t len);
/* Feeds more bytes to a connection that became JSON (the rest of a read). */
void conn_feed_json(conn *c, const char *data, size_t n);

/* The server is stopping: tell the client (bye, or a line for humans) and close. */
void conn_say_bye(conn *c);

/* Closes connections idle longer than --idle-timeout (periodic sweep). */
void conn_sweep_idle(srv *s);

#endif
