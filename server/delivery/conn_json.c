/* conn_json.c - the JSON-lines transport: one request per line. */
#include <stdio.h>

#include "conn_internal.h"
#include "session.h"
#include "transport.h"

void conn_become_json(conn *c, const char *line, size_t len) {
    const conn_transport *was = conn_transport_of(c);
    if (was->free) was->free(c);
    conn_timer_stop(c);
    conn_set_transport(c, CONN_JSON);
    proto_framer_set_text(&c->framer, false);
    /* A text session named its player quietly; a JSON client is owed its welcome. */
    if (c->player) c->player->welcomed = false;
    /* The telnet probe (and maybe a greeting) went out without a line end:
     * end that line, so the first JSON line starts with '{' for a client that
     * skips lines that do not. */
    conn_write(c, "\r\n", 2);
    conn_request_done(c);
    session_json_line(c, line, len);
}

/* JSON lines: one request per line, as many lines as the turn's share. */
static int on_json_line(void *ctx, const char *line, size_t len) {
    conn *c = ctx;
    conn_request_done(c);
    session_json_line(c, line, len);
    if (c->budget) c->budget--;
    /* A reply that filled half the output queue: the next request waits until
     * the client has read it (a large `replay` must not pile on another). */
    return !conn_is_open(c) || !c->budget || c->in_front || conn_over_half(c) ||
           (c->player && c->player->account_wait);
}

static int on_json_too_long(void *ctx) {
    conn_too_long(ctx);
    return 1;
}

static size_t json_input(conn *c, const char *data, size_t n) {
    return proto_framer_feed(&c->framer, data, n, on_json_line, on_json_too_long, c);
}

static void json_say(conn *c, conn_say why) {
    conn_say_json(c, why, "line", "");
}
const conn_transport conn_json_transport = {
    .name = "json",
    .turn_share = CONN_TURN_LINES,
    .input = json_input,
    .send = conn_send_raw,
    .deliver = conn_deliver_json,
    .say = json_say,
};

void conn_say_json(conn *c, conn_say why, const char *unit, const char *log_as) {
    if (why == CONN_SAY_SHUTDOWN) {
        size_t len;
        char *line = proto_enc_bye("shutdown", &len);
        srv_buf *b = srv_buf_take(line, len);
        if (b) {
            conn_send_buf(c, b);
            srv_buf_unref(b);
        }
    } else if (why == CONN_SAY_TOO_LONG) {
        char msg[96];
        snprintf(msg, sizeof msg, "a %s may be at most %zu bytes; closing the connection",
                 unit, c->srv->cfg->max_line);
        conn_send_error(c, PROTO_ERR_LINE_TOO_LONG, msg);
        srv_log_client(SRV_LOG_INFO, "line_too_long from %s%s", conn_peer(c), log_as);
    }
}
