/* web.h - browsers on the game port: HTTP requests (the built-in web client, /healthz,
 * /metrics) and WebSocket connections that speak JSON mode. */
#ifndef RACE2048_WEB_H
#define RACE2048_WEB_H

#include "conn.h"
#include "http.h"
#include "ws.h"

/* c sent an HTTP request line: set up its HTTP session. Returns 0, or -1
 * (c closed) if memory runs out. */
int web_begin(conn *c);
/* Bytes from an HTTP or WebSocket connection. */
void web_input(conn *c, const char *data, size_t n);
/* Is a request or message half received (for --request-timeout)? */
bool web_midway(const conn *c);
/* Sends one JSON line (b, ending in '\n') as one WebSocket text message:
 * the frame header and the shared line go out as two buffers of one write. */
void web_send_json(conn *c, srv_buf *b);
/* Sends a WebSocket close frame with code, once; nothing is sent after it. */
void web_ws_close(conn *c, uint16_t code);
/* A full server's answer to an HTTP client: 503, then close. */
void web_refuse(conn *c);
/* Frees c's web session. */
void web_free(conn *c);

#endif
