/* web.h - browsers on the game port: HTTP requests (the built-in web client, /healthz,
 * /metrics) and WebSocket connections that speak JSON mode. */
#ifndef RACE2048_WEB_H
#define RACE2048_WEB_H

#include "conn.h"
#include "http.h"
#include "transport.h"
#include "ws.h"

/* c sent an HTTP request line (its transport is HTTP): set up its HTTP
 * session. Returns 0, or -1 (c closed) if memory runs out. */
int web_begin(conn *c);
/* A full server's answer to an HTTP client: 503, then close. */
void web_refuse(conn *c);

/* The HTTP and WebSocket transports (transport.h), installed by
 * transports_install. */
extern const conn_transport web_http_transport, web_ws_transport;

#endif
