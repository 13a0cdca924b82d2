/* transports.c - the transports of this layer (text, HTTP, WebSocket), installed
 * into the delivery layer's table of modes. */
#include "transports.h"

#include "text.h"
#include "web.h"

/* Text mode's entries are text.h's; those that need a session check for one. */
static size_t text_bytes_input(conn *c, const char *data, size_t n) {
    size_t k = conn_take_share(c, n);
    text_input(c, data, k);
    return k;
}

/* Text mode without a session (it failed to start) shows nothing itself. */
static void text_deliver_any(conn *c, const srv_msg *m) {
    if (text_has_session(c))
        text_deliver(c, m);
    else
        conn_send_buf(c, m->json);
}

static bool text_midway_any(const conn *c) {
    return text_has_session(c) && text_midway(c);
}

static void text_free_any(conn *c) {
    if (text_has_session(c)) text_free(c);
}

static int text_begin_any(conn *c, bool telnet_first) {
    text_begin(c, telnet_first);
    return conn_is_open(c) ? 0 : -1;
}

static const conn_transport text_transport = {
    .name = "text",
    .begin = text_begin_any,
    .turn_share = CONN_TURN_TEXT_BYTES,
    .input = text_bytes_input,
    .send = conn_send_raw,
    .deliver = text_deliver_any,
    .say = text_say,
    .midway = text_midway_any,
    .sleep = text_sleep,
    .free = text_free_any,
};

void transports_install(srv *s) {
    s->transports[CONN_TEXT] = &text_transport;
    s->transports[CONN_HTTP] = &web_http_transport;
    s->transports[CONN_WS] = &web_ws_transport;
}
