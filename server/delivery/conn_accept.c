/* conn_accept.c - accepting a connection, or refusing it in its own mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "conn_internal.h"
#include "http.h"
#include "transport.h"

/* Keeps the peer's address (the per-address key) and port. */
static void peer_name(conn *c) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0) return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        c->port = ntohs(in->sin_port);
        memcpy(c->addr, &in->sin_addr, 4);
        c->addr_len = 4;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        c->port = ntohs(in6->sin6_port);
        memcpy(c->addr, &in6->sin6_addr, 16);
        c->addr_len = 16;
    }
}

const char *conn_peer(const conn *c) {
    /* Made when a log line needs it, not kept: 48 bytes of every connection. */
    static char peer[INET6_ADDRSTRLEN + 8];
    char ip[INET6_ADDRSTRLEN] = "?";
    if (c->addr_len == 4 || c->addr_len == 16)
        uv_inet_ntop(c->addr_len == 4 ? AF_INET : AF_INET6, c->addr, ip, sizeof ip);
    snprintf(peer, sizeof peer, "%s:%d", ip, c->port);
    return peer;
}

/* Why c is refused, in words for the client and the log. */
static void refusal(const conn *c, char *out, size_t size) {
    switch (c->refused) {
    case CONN_REFUSE_FDS:
        snprintf(out, size, "the server is full (no file descriptors left)");
        break;
    case CONN_REFUSE_PER_ADDR:
        snprintf(out, size, "too many connections from your address (at most %u)",
                 c->srv->cfg->max_per_ip);
        break;
    default:
        snprintf(out, size, "the server is full (%u clients)", c->srv->cfg->max_clients);
        break;
    }
}

/* A refused connection answers in the client's own mode, decided like any
 * other's: a human whose first byte is not '{' gets a line of text (a human
 * must never see JSON); a program, or a client silent for the detection
 * window, gets the JSON error. Then the connection closes. */
static void refuse(conn *c, bool text) {
    if (!conn_is_open(c)) return;
    conn_timer_stop(c);
    char why[96];
    refusal(c, why, sizeof why);
    if (text) {
        char line[160];
        int n = snprintf(line, sizeof line, "Sorry: %s; try again later.\r\n", why);
        conn_write(c, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    } else {
        char msg[160];
        snprintf(msg, sizeof msg, "%s; try again later", why);
        conn_send_error(c, PROTO_ERR_SERVER_FULL, msg);
    }
    conn_close_after_flush(c);
}

/* A refused connection's first bytes choose how it is told. */
void conn_refused_input(conn *c, const char *data, size_t n) {
    if (proto_http_detect((const unsigned char *)data, n) > 0) {
        conn_timer_stop(c);
        c->srv->transports[CONN_HTTP]->refuse(c);
    } else {
        refuse(c, proto_detect_mode((const unsigned char *)data, n) != PROTO_MODE_JSON);
    }
}

static void on_refused_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0)
        conn_close(c);
    else if (nread > 0)
        conn_refused_input(c, buf->base, (size_t)nread);
}

/* On --http-port (HTTP from the start) anything gets the 503. */
void conn_refused_http_input(conn *c) {
    conn_timer_stop(c);
    c->srv->transports[CONN_HTTP]->refuse(c);
}

static void on_refused_http_read(uv_stream_t *stream, ssize_t nread,
                                 const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0)
        conn_close(c);
    else if (nread > 0)
        conn_refused_http_input(c);
}

static void on_refused_timeout(conn *c) {
    refuse(c, false);
}

/* --http-port writes nothing before a request: a refused connection that
 * stays silent is closed without a byte (a browser opens another). */
static void on_refused_silent(conn *c) {
    conn_close(c);
}

/* How long a refused connection on --http-port may stay silent. */
#define REFUSED_HTTP_MS 2000

static bool is_http_listener(const srv *s, const uv_stream_t *listener) {
    for (int i = 0; i < s->nhttp_listeners; i++)
        if ((const uv_stream_t *)&s->http_listeners[i] == listener) return true;
    return false;
}

/* Log lines about descriptors at most this often. */
#define FD_LOG_MS 10000
/* Descriptors kept for refusing connections past the capacity. */
#define FD_REFUSE_RESERVE 16

/* Every connection takes a descriptor, a refused one too; past the capacity
 * plus a reserve for refusals, accepting waits (the kernel keeps the rest in
 * the listen backlog) until a connection closes. True if it must wait. */
static bool accept_must_wait(srv *s, uv_stream_t *listener) {
    if (!s->fd_capacity || s->nconns < s->fd_capacity + FD_REFUSE_RESERVE) return false;
    if (!s->npaused) {
        uint64_t now = uv_now(s->loop);
        if (!s->fd_log_ms || now - s->fd_log_ms >= FD_LOG_MS) {
            s->fd_log_ms = now;
            srv_log(SRV_LOG_WARN,
                    "out of file descriptors (%u connections): new ones wait", s->nconns);
        }
    }
    bool known = false;
    for (int i = 0; i < s->npaused; i++)
        known |= s->accept_paused[i] == listener;
    if (!known && s->npaused < 2 * SRV_MAX_LISTENERS)
        s->accept_paused[s->npaused++] = listener;
    return true;
}

/* Takes the listener's pending connection into a new conn, counted among the
 * server's (undecided, not reading yet). NULL if there was none to take or
 * memory ran out (then the kernel's socket is closed). */
static conn *conn_new(srv *s, uv_stream_t *listener) {
    static uint32_t next_conn_id = 1;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        srv_log_client(SRV_LOG_ERROR, "out of memory accepting a connection");
        return NULL;
    }
    c->srv = s;
    c->id = next_conn_id++;
    srv_list_init(&c->flush_link);
    srv_list_init(&c->input_link);
    conn_use_inline(c);
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->open_handles = 1;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, conn_on_handle_closed);
        c->state = CONN_CLOSING;
        return NULL;
    }
    srv_list_push(&s->conns, &c->link);
    s->nconns++;
    s->metrics.connections++;
    c->last_active = uv_now(s->loop);
    peer_name(c);
    proto_framer_init(&c->framer, s->cfg->max_line, false);
    return c;
}

/* Counts c against its address; returns why it must be refused, or 0.
 * Refused connections are not clients: one address holding many open (each
 * until its refusal goes out) must not fill the server. */
conn_refusal conn_admit(conn *c) {
    srv *s = c->srv;
    unsigned from_addr = 0;
    if (c->addr_len) {
        unsigned char key[16];
        from_addr = addr_add(&s->addrs, key, addr_key(c->addr, c->addr_len, key));
        c->counted = from_addr > 0;
    }
    if (s->stopping || s->nconns - s->nrefused > s->cfg->max_clients ||
        (c->addr_len && !c->counted))
        return CONN_REFUSE_FULL;
    if (s->fd_capacity && s->nconns > s->fd_capacity) return CONN_REFUSE_FDS;
    if (from_addr > s->cfg->max_per_ip) return CONN_REFUSE_PER_ADDR;
    return CONN_REFUSE_NONE;
}

/* A refused connection waits for its first bytes (or a silence) to answer
 * in its own mode, then closes. */
void conn_begin_refused(conn *c, bool http) {
    c->srv->nrefused++;
    /* A flood of refusals must not flood the log: the budget of client lines
     * holds them, and counts those not shown. */
    char why[96];
    refusal(c, why, sizeof why);
    srv_log_client(SRV_LOG_WARN, "refusing %s: %s", conn_peer(c), why);
    if (http) {
        conn_set_transport(c, CONN_HTTP);
        uv_read_start((uv_stream_t *)&c->tcp, conn_on_alloc, on_refused_http_read);
        conn_arm(c, on_refused_silent, REFUSED_HTTP_MS);
    } else {
        uv_read_start((uv_stream_t *)&c->tcp, conn_on_alloc, on_refused_read);
        conn_arm(c, on_refused_timeout, DETECT_MS);
    }
}

/* An admitted connection reads. On --http-port it speaks HTTP from its first
 * byte: no detection window, no greeting, whatever it sends first (a
 * non-HTTP line gets 400). Elsewhere its first bytes, or a silence, decide. */
void conn_begin(conn *c, bool http) {
    uv_tcp_nodelay(&c->tcp, 1);
    /* A peer that vanishes without a FIN is found even while it races (races
     * are exempt from the idle timeout). */
    uv_tcp_keepalive(&c->tcp, 1, 60);
    srv_log(SRV_LOG_DEBUG, "connect %s (#%llu, %u open)", conn_peer(c),
            (unsigned long long)c->id, c->srv->nconns);
    if (http) {
        conn_set_transport(c, CONN_HTTP);
        if (conn_transport_of(c)->begin(c, false) < 0) return;
        conn_update_reading(c);
        return;
    }
    conn_update_reading(c);
    conn_arm(c, conn_on_detect_timeout, DETECT_MS);
}

void conn_accept(srv *s, uv_stream_t *listener) {
    if (accept_must_wait(s, listener)) return;
    conn *c = conn_new(s, listener);
    if (!c) return;
    bool http = is_http_listener(s, listener);
    /* From a balancer, admission waits for the client's address. */
    if (proto_cidr_list_match(&s->cfg->proxy_from, c->addr, c->addr_len)) {
        conn_await_header(c, http);
        return;
    }
    c->refused = (uint8_t)conn_admit(c);
    if (c->refused)
        conn_begin_refused(c, http);
    else
        conn_begin(c, http);
}

void conn_accept_resume(srv *s) {
    /* libuv holds each paused listener's next connection until it is taken. */
    while (s->npaused && !s->stopping && s->nconns < s->fd_capacity + FD_REFUSE_RESERVE)
        conn_accept(s, s->accept_paused[--s->npaused]);
}
