/* transport.h - what each transport mode (detect, JSON lines, text, HTTP, WebSocket)
 * does for a connection: one ops table per mode, chosen by conn_set_transport. */
#ifndef RACE2048_TRANSPORT_H
#define RACE2048_TRANSPORT_H

#include "conn.h"

/* What one connection may have handled per loop turn before every other
 * connection had its turn (conn_transport.turn_share): JSON lines, or bytes
 * of text-mode input, or bytes of HTTP and WebSocket input (about
 * CONN_TURN_LINES move messages of 46 bytes, so a browser and a JSON program
 * get the same share). */
#define CONN_TURN_LINES      16
#define CONN_TURN_TEXT_BYTES 256
#define CONN_TURN_WEB_BYTES  768

/* Why the server speaks last before closing (conn_transport.say). */
typedef enum conn_say {
    CONN_SAY_SHUTDOWN, /* the server is stopping */
    CONN_SAY_IDLE,     /* nothing was requested for --idle-timeout */
    CONN_SAY_SLOW,     /* a request took longer than --request-timeout to arrive */
    CONN_SAY_TOO_LONG, /* a line or message passed --max-line */
} conn_say;

/* A transport: how a mode reads, frames and ends. conn_*.c call only these
 * (never `if mode == ...`); NULL entries do nothing. Every entry but midway
 * and free is called on an open connection only (conn_is_open). */
typedef struct conn_transport {
    const char *name; /* "detect", "json", "text", "http", "ws": logs and tests */
    /* What one loop turn may handle before every other connection had its
     * turn: JSON lines, or bytes (text, HTTP, WebSocket, detection). */
    unsigned turn_share;
    /* c has just switched to this transport: greet a human (telnet_first:
     * the client already spoke telnet), or get ready for a request. Returns
     * 0, or -1 if c was closed. Required of text and HTTP. */
    int (*begin)(conn *c, bool telnet_first);
    /* Tells a refused connection why, in this transport's words, and closes
     * it after the flush. Required of HTTP. */
    void (*refuse)(conn *c);
    /* Handles input as far as c->budget goes (spending it); returns the
     * bytes used. May close c, or switch its transport. Required. */
    size_t (*input)(conn *c, const char *data, size_t n);
    /* Queues a JSON line (ending in '\n') in this transport's framing. Required. */
    void (*send)(conn *c, srv_buf *line);
    /* Shows a server message (the journal barrier is already queued). Required. */
    void (*deliver)(conn *c, const srv_msg *m);
    /* Last words before the server closes c (conn_close_after_flush follows). */
    void (*say)(conn *c, conn_say why);
    /* What must go out before any close after a flush (a WebSocket close frame). */
    void (*last_bytes)(conn *c);
    /* Is a request half received, beyond the line framer (for --request-timeout)? */
    bool (*midway)(const conn *c);
    /* c is idle (the periodic sweep): give back memory that can be made again. */
    void (*sleep)(conn *c);
    /* c is being freed: give back the transport's state. */
    void (*free)(conn *c);
    /* An idle connection is closed after at most this long whatever
     * --idle-timeout says (an HTTP keep-alive); 0: --idle-timeout alone. */
    uint64_t idle_max_ms;
} conn_transport;

/* The tables of this layer's own modes (conn_detect.c: detect and a PROXY
 * header; conn_json.c: JSON lines). The others live above (transports/: text, HTTP,
 * WebSocket) and reach a connection only through srv.transports, which transports_install
 * fills: nothing here names them. */
extern const conn_transport conn_detect_transport, conn_json_transport,
    conn_proxy_transport;

/* c's transport. */
static inline const conn_transport *conn_transport_of(const conn *c) {
    return c->srv->transports[c->mode];
}
/* The one place a connection's mode changes (accept, detection, the
 * text/JSON switch, an HTTP upgrade). A transport with a different
 * turn_share starts this turn's budget afresh (a share counted in bytes
 * means nothing in lines); with the same share the budget goes on being
 * spent, unless it belongs to an earlier turn. */
void conn_set_transport(conn *c, conn_mode mode);

/* Takes up to n bytes of c's share of this turn (for transports whose share
 * is in bytes); returns how many may be handled now. */
size_t conn_take_share(conn *c, size_t n);

/* A JSON line queued as-is (JSON lines, HTTP bodies, detection, text mode
 * without a session): the send entry of every unframed transport. */
void conn_send_raw(conn *c, srv_buf *line);
/* Delivers m->json through the transport's send: the deliver entry of every
 * transport that speaks JSON. */
void conn_deliver_json(conn *c, const srv_msg *m);
/* The say entry of the JSON transports: a bye line on shutdown, an error
 * line (naming the unit: "line", "message") when too long; log_as follows
 * the peer in the log line ("" or " (WebSocket)"). */
void conn_say_json(conn *c, conn_say why, const char *unit, const char *log_as);

#endif
