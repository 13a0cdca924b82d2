/* conn_detect.c - a connection's mode from its first bytes, after any PROXY header. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_internal.h"
#include "http.h"
#include "proxy.h"
#include "transport.h"

void conn_on_detect_timeout(conn *c) {
    /* Bytes that arrived during a pause decide the mode, not the clock. */
    if (srv_defer_until_io(c->srv, NULL, NULL)) {
        conn_arm(c, conn_on_detect_timeout, DEFER_MS);
        return;
    }
    /* Armed only while undecided: detection stops it. */
    if (!conn_is_open(c)) return;
    conn_set_transport(c, CONN_TEXT);
    conn_transport_of(c)->begin(c, false);
    /* Capitals that never became "GET /": a human's typing. */
    if (c->detect_len && conn_is_open(c))
        conn_transport_of(c)->input(c, c->detect_buf, c->detect_len);
    c->detect_len = 0;
}

/* ------------------------------------------------ behind a balancer --- *
 *
 * A connection from an address of --proxy-from (a load balancer) begins with
 * a PROXY protocol header naming the client. Until it has arrived the
 * connection is no client yet: it is not counted against any address, and
 * nothing it sends is read as a request. Once it has, the client's address
 * is the connection's (every per-address rule and log line sees it), the
 * connection is admitted as if it had just been accepted from there, and the
 * bytes after the header are its first. A connection whose header is not
 * valid is closed at once; one whose header does not come, within
 * --request-timeout. */

/* What a connection waiting for its header holds (freed when it ends). */
typedef struct conn_proxy_wait {
    proto_proxy parser;
    bool http; /* accepted on --http-port */
} conn_proxy_wait;

/* The header's deadline when --request-timeout is 0 (never): a balancer
 * sends its header at once, so a connection must not wait for ever. */
#define PROXY_HEADER_MS 10000

static void proxy_free(conn *c) {
    free(c->proxy);
    c->proxy = NULL;
}

static void on_proxy_timeout(conn *c) {
    if (srv_defer_until_io(c->srv, NULL, NULL)) {
        conn_arm(c, on_proxy_timeout, DEFER_MS);
        return;
    }
    if (!conn_is_open(c)) return;
    srv_log_client(SRV_LOG_WARN, "closing %s: no PROXY header in time", conn_peer(c));
    conn_close(c);
}

/* The header named the client: c becomes that client's connection. */
static void proxy_take_source(conn *c, const proto_proxy_source *src) {
    if (c->srv->cfg->log_level >= SRV_LOG_DEBUG) {
        char via[INET6_ADDRSTRLEN + 8];
        snprintf(via, sizeof via, "%s", conn_peer(c));
        srv_log(SRV_LOG_DEBUG, "PROXY v%u header from %s: %s", src->version, via,
                src->kind == PROTO_PROXY_LOCAL     ? "LOCAL"
                : src->kind == PROTO_PROXY_UNKNOWN ? "UNKNOWN"
                                                   : "a client");
    }
    /* LOCAL (the balancer's health check) and UNKNOWN: the balancer's own
     * address stands, as the protocol says. */
    if (src->kind == PROTO_PROXY_IPV4 || src->kind == PROTO_PROXY_IPV6) {
        c->addr_len = src->kind == PROTO_PROXY_IPV4 ? 4 : 16;
        memcpy(c->addr, src->addr, c->addr_len);
        c->port = src->port;
    }
}

/* Reads the header; once it is in, the connection is admitted and the rest
 * of the bytes go to the next transport (handle calls it with them). */
static size_t proxy_input(conn *c, const char *data, size_t n) {
    size_t k = conn_take_share(c, n), used = 0;
    proto_proxy_source src;
    proto_proxy_status st = proto_proxy_feed(&c->proxy->parser, data, k, &used, &src);
    if (st == PROTO_PROXY_MORE) return k;
    if (st == PROTO_PROXY_INVALID) {
        srv_log_client(SRV_LOG_WARN, "closing %s: not a valid PROXY header",
                       conn_peer(c));
        conn_close(c);
        return n;
    }
    assert(used <= k);
    c->budget += (unsigned)(k - used); /* what the header did not take */
    bool http = c->proxy->http;
    proxy_free(c);
    conn_timer_stop(c);
    proxy_take_source(c, &src);
    conn_set_transport(c, http ? CONN_HTTP : CONN_DETECT);
    c->refused = (uint8_t)conn_admit(c);
    if (!c->refused) {
        conn_begin(c, http);
        return used;
    }
    /* Refused like a connection accepted from that address: told in the
     * mode its first bytes choose, by the refusal's own reader. */
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    conn_begin_refused(c, http);
    if (used < n && conn_is_open(c)) {
        if (http)
            conn_refused_http_input(c);
        else
            conn_refused_input(c, data + used, n - used);
    }
    return n;
}

const conn_transport conn_proxy_transport = {
    .name = "proxy",
    .turn_share = CONN_TURN_WEB_BYTES, /* what detection and HTTP then go on with */
    .input = proxy_input,
    .send = conn_send_raw,
    .deliver = conn_deliver_json,
    .free = proxy_free,
};

/* A connection from a balancer: it reads its header before anything else. */
void conn_await_header(conn *c, bool http) {
    srv *s = c->srv;
    conn_proxy_wait *w = s->stopping ? NULL : calloc(1, sizeof *w);
    if (!w) {
        conn_close(c);
        return;
    }
    proto_proxy_init(&w->parser);
    w->http = http;
    c->proxy = w;
    conn_set_transport(c, CONN_PROXY);
    conn_update_reading(c);
    conn_arm(c, on_proxy_timeout,
             s->cfg->request_ms ? s->cfg->request_ms : PROXY_HEADER_MS);
}

/* Decides the mode of an undecided connection from its first byte. */
static void decide(conn *c, const char *data, size_t n) {
    conn_timer_stop(c);
    proto_mode mode = proto_detect_mode((const unsigned char *)data, n);
    if (mode == PROTO_MODE_JSON) {
        conn_set_transport(c, CONN_JSON);
    } else {
        conn_set_transport(c, CONN_TEXT);
        conn_transport_of(c)->begin(c, mode == PROTO_MODE_TELNET);
    }
}

/* HTTP or not is known once the first bytes stop looking like the start of
 * "METHOD /". Returns true if it took all the bytes: kept while undecided
 * (the detection timer still runs), or handed to the web transport. Otherwise
 * the mode is decided by the first byte, and bytes kept earlier are handled
 * first (what this turn cannot take goes back in front of the rest). */
static bool detect_http(conn *c, const char *data, size_t n) {
    char probe[sizeof c->detect_buf];
    size_t space = sizeof probe - c->detect_len;
    size_t take = n < space ? n : space;
    memcpy(probe, c->detect_buf, c->detect_len);
    memcpy(probe + c->detect_len, data, take);
    int http = proto_http_detect((const unsigned char *)probe, c->detect_len + take);
    if (http < 0 && take == n) { /* all of it is still a maybe */
        memcpy(c->detect_buf, probe, c->detect_len + take);
        c->detect_len = (uint8_t)(c->detect_len + take);
        return true;
    }
    size_t kept = c->detect_len;
    c->detect_len = 0;
    if (http > 0) {
        conn_timer_stop(c);
        conn_set_transport(c, CONN_HTTP);
        if (conn_transport_of(c)->begin(c, false) < 0) return true;
    } else {
        decide(c, probe, kept + take); /* probe starts as the connection's input did */
    }
    if (kept && conn_is_open(c)) {
        char early[sizeof c->detect_buf];
        memcpy(early, probe, kept);
        size_t used = conn_transport_of(c)->input(c, early, kept);
        if (used < kept) conn_hand_back(c, early + used, kept - used);
    }
    if (http > 0 && conn_is_open(c)) conn_hand_back(c, data, n);
    return http > 0 || !conn_is_open(c);
}

/* Undecided: the first bytes choose the transport, which takes them. */
static size_t detect_input(conn *c, const char *data, size_t n) {
    if (detect_http(c, data, n)) return n;
    if (c->in_front) return 0; /* early bytes go first */
    return conn_transport_of(c)->input(c, data, n);
}

const conn_transport conn_detect_transport = {
    .name = "detect",
    .turn_share = CONN_TURN_WEB_BYTES, /* the first bytes: HTTP's share until decided */
    .input = detect_input,
    .send = conn_send_raw,
    .deliver = conn_deliver_json,
};
