/* transports.h - puts text mode, HTTP and WebSocket into a server's table of modes. */
#ifndef RACE2048_TRANSPORTS_H
#define RACE2048_TRANSPORTS_H

#include "srv.h"

/* Fills s->transports for the modes of this layer (CONN_TEXT, CONN_HTTP,
 * CONN_WS). Call after srv_init, before the first connection is accepted:
 * the delivery layer below switches to them only through that table. */
void transports_install(srv *s);

#endif
