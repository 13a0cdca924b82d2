/* conn.c - one client connection: socket, mode detection, fair input, one output queue.
 */
#include "conn.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "http.h"
#include "journal.h"
#include "metrics.h"
#include "fanout.h"
#include "proxy.h"
#include "session.h"
#include "room.h"
#include "transport.h"

/* How long a silent client has before the server decides it is a human. */
#define DETECT_MS 300
/* A loop turn longer than its poll timeout by this much was a pause. */
#define PAUSE_MS 500
/* How soon a timer deferred by srv_defer_until_io runs again. */
#define DEFER_MS 5
/* Polls after a pause before timers may expire anyone: the first accepts
 * connections made during the pause, the next reads what they sent. */
#define CATCH_UP_TURNS 3
/* A turn that read from at most this many connections was a quiet one. In the
 * turn after a quiet one, replies are written as soon as a read's requests are
 * handled: at 2 clients, waiting for the end of the turn added about 15 us to
 * each reply (p50 43 -> 58 us). A busy loop keeps writing once per turn, where
 * coalescing saves a third of the CPU per move. */
#define QUIET_READS 4

/* All connections read into one buffer: libuv hands it back to us before the
 * next read. Input left over when a connection's turn is up is copied aside
 * (and reading stops until it is handled), so a connection holds at most one
 * read's worth. */
static char read_buf[16 * 1024];

static void on_handle_closed(uv_handle_t *h);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void update_reading(conn *c);
static void want_flush(conn *c);
static void flush(conn *c);
static void maybe_shutdown(conn *c);
static void trim(conn *c);
static void use_inline(conn *c);
static void flush_all(srv *s);
static void on_turn_idle(uv_idle_t *h);
static bool over_half(const conn *c);
static void on_journal_durable(void *ctx);

/* ---------------------------------------------------------------- accept --- */

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

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

/* Arms c's deadline; a connection that cannot have one is closed. */
static void arm(conn *c, conn_timer_cb cb, uint64_t ms) {
    if (conn_timer_start(c, cb, ms) < 0) conn_close(c);
}

static void on_detect_timeout(conn *c) {
    /* Bytes that arrived during a pause decide the mode, not the clock. */
    if (srv_defer_until_io(c->srv, NULL, NULL)) {
        arm(c, on_detect_timeout, DEFER_MS);
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

/* Why c is refused, in words for the client and the log. */
static void refusal(const conn *c, char *out, size_t size) {
    switch (c->refused) {
    case CONN_REFUSE_FDS:
        snprintf(out, size, "the server is full (no file descriptors left)");
        break;
    case CONN_REFUSE_PER_ADDR:
        snprintf(out, size, "too many connections from your address (at most %u)",
                 c->srv->cfg.max_per_ip);
        break;
    default:
        snprintf(out, size, "the server is full (%u clients)", c->srv->cfg.max_clients);
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
static void refused_input(conn *c, const char *data, size_t n) {
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
        refused_input(c, buf->base, (size_t)nread);
}

/* On --http-port (HTTP from the start) anything gets the 503. */
static void refused_http_input(conn *c) {
    conn_timer_stop(c);
    c->srv->transports[CONN_HTTP]->refuse(c);
}

static void on_refused_http_read(uv_stream_t *stream, ssize_t nread,
                                 const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0)
        conn_close(c);
    else if (nread > 0)
        refused_http_input(c);
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
    static uint64_t next_conn_id = 1;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        srv_log_client(SRV_LOG_ERROR, "out of memory accepting a connection");
        return NULL;
    }
    c->srv = s;
    c->id = next_conn_id++;
    srv_list_init(&c->flush_link);
    srv_list_init(&c->input_link);
    use_inline(c);
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->open_handles = 1;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
        c->state = CONN_CLOSING;
        return NULL;
    }
    srv_list_push(&s->conns, &c->link);
    s->nconns++;
    s->metrics.connections++;
    c->last_active = uv_now(s->loop);
    peer_name(c);
    proto_framer_init(&c->framer, s->cfg.max_line, false);
    return c;
}

/* Counts c against its address; returns why it must be refused, or 0.
 * Refused connections are not clients: one address holding many open (each
 * until its refusal goes out) must not fill the server. */
static conn_refusal admit(conn *c) {
    srv *s = c->srv;
    unsigned from_addr = 0;
    if (c->addr_len) {
        unsigned char key[16];
        from_addr = addr_add(&s->addrs, key, addr_key(c->addr, c->addr_len, key));
        c->counted = from_addr > 0;
    }
    if (s->stopping || s->nconns - s->nrefused > s->cfg.max_clients ||
        (c->addr_len && !c->counted))
        return CONN_REFUSE_FULL;
    if (s->fd_capacity && s->nconns > s->fd_capacity) return CONN_REFUSE_FDS;
    if (from_addr > s->cfg.max_per_ip) return CONN_REFUSE_PER_ADDR;
    return CONN_REFUSE_NONE;
}

/* A refused connection waits for its first bytes (or a silence) to answer
 * in its own mode, then closes. */
static void begin_refused(conn *c, bool http) {
    c->srv->nrefused++;
    /* A flood of refusals must not flood the log: the budget of client lines
     * holds them, and counts those not shown. */
    char why[96];
    refusal(c, why, sizeof why);
    srv_log_client(SRV_LOG_WARN, "refusing %s: %s", conn_peer(c), why);
    if (http) {
        conn_set_transport(c, CONN_HTTP);
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_refused_http_read);
        arm(c, on_refused_silent, REFUSED_HTTP_MS);
    } else {
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_refused_read);
        arm(c, on_refused_timeout, DETECT_MS);
    }
}

/* An admitted connection reads. On --http-port it speaks HTTP from its first
 * byte: no detection window, no greeting, whatever it sends first (a
 * non-HTTP line gets 400). Elsewhere its first bytes, or a silence, decide. */
static void begin(conn *c, bool http) {
    uv_tcp_nodelay(&c->tcp, 1);
    /* A peer that vanishes without a FIN is found even while it races (races
     * are exempt from the idle timeout). */
    uv_tcp_keepalive(&c->tcp, 1, 60);
    srv_log(SRV_LOG_DEBUG, "connect %s (#%llu, %u open)", conn_peer(c),
            (unsigned long long)c->id, c->srv->nconns);
    if (http) {
        conn_set_transport(c, CONN_HTTP);
        if (conn_transport_of(c)->begin(c, false) < 0) return;
        update_reading(c);
        return;
    }
    update_reading(c);
    arm(c, on_detect_timeout, DETECT_MS);
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
        arm(c, on_proxy_timeout, DEFER_MS);
        return;
    }
    if (!conn_is_open(c)) return;
    srv_log_client(SRV_LOG_WARN, "closing %s: no PROXY header in time", conn_peer(c));
    conn_close(c);
}

/* The header named the client: c becomes that client's connection. */
static void proxy_take_source(conn *c, const proto_proxy_source *src) {
    if (c->srv->cfg.log_level >= SRV_LOG_DEBUG) {
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
    c->refused = (uint8_t)admit(c);
    if (!c->refused) {
        begin(c, http);
        return used;
    }
    /* Refused like a connection accepted from that address: told in the
     * mode its first bytes choose, by the refusal's own reader. */
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    begin_refused(c, http);
    if (used < n && conn_is_open(c)) {
        if (http)
            refused_http_input(c);
        else
            refused_input(c, data + used, n - used);
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
static void await_header(conn *c, bool http) {
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
    update_reading(c);
    arm(c, on_proxy_timeout, s->cfg.request_ms ? s->cfg.request_ms : PROXY_HEADER_MS);
}

void conn_accept(srv *s, uv_stream_t *listener) {
    if (accept_must_wait(s, listener)) return;
    conn *c = conn_new(s, listener);
    if (!c) return;
    bool http = is_http_listener(s, listener);
    /* From a balancer, admission waits for the client's address. */
    if (proto_cidr_list_match(&s->cfg.proxy_from, c->addr, c->addr_len)) {
        await_header(c, http);
        return;
    }
    c->refused = (uint8_t)admit(c);
    if (c->refused)
        begin_refused(c, http);
    else
        begin(c, http);
}

void conn_accept_resume(srv *s) {
    /* libuv holds each paused listener's next connection until it is taken. */
    while (s->npaused && !s->stopping && s->nconns < s->fd_capacity + FD_REFUSE_RESERVE)
        conn_accept(s, s->accept_paused[--s->npaused]);
}

/* ----------------------------------------------------------------- input --- */

void conn_request_done(conn *c) {
    c->last_active = uv_now(c->srv->loop);
}

bool conn_is_open(const conn *c) {
    return c->state == CONN_OPEN;
}

bool conn_is_closing(const conn *c) {
    return c->state == CONN_CLOSING;
}

static void hand_back(conn *c, const char *data, size_t n);

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
        if (used < kept) hand_back(c, early + used, kept - used);
    }
    if (http > 0 && conn_is_open(c)) hand_back(c, data, n);
    return http > 0 || !conn_is_open(c);
}

/* Undecided: the first bytes choose the transport, which takes them. */
static size_t detect_input(conn *c, const char *data, size_t n) {
    if (detect_http(c, data, n)) return n;
    if (c->in_front.len) return 0; /* early bytes go first */
    return conn_transport_of(c)->input(c, data, n);
}

/* Handles input within the connection's budget for this turn; returns the
 * bytes used (0 once the budget is spent, or when bytes were handed back
 * to go first). */
static size_t handle(conn *c, const char *data, size_t n) {
    srv *s = c->srv;
    if (!conn_is_open(c)) return n;
    if (over_half(c)) return 0; /* requests wait until the client reads */
    if (c->budget_turn != s->turn) {
        c->budget_turn = s->turn;
        c->budget = conn_transport_of(c)->turn_share;
    }
    if (!c->budget) return 0;
    /* A racer whose room's spectators are far behind waits (fanout.h). */
    if (c->player && fanout_holds(c->player)) return 0;
    return conn_transport_of(c)->input(c, data, n);
}

/* Notes when an unfinished request began (a partial line, a telnet command
 * cut short), for --request-timeout. */
static void note_partial(conn *c) {
    const conn_transport *t = conn_transport_of(c);
    bool partial =
        c->framer.len > 0 || c->framer.discarding || (t->midway && t->midway(c));
    if (!partial)
        c->partial_since = 0;
    else if (!c->partial_since)
        c->partial_since = uv_now(c->srv->loop);
}

/* Keeps input for a later turn: data goes after what is held, and bytes
 * handed back by conn_feed_json before it. Returns -1 (closing the
 * connection) if memory runs out. */
static int keep(conn *c, const char *data, size_t n) {
    size_t held = c->in.len - c->in_off;
    if (!c->in_front.len && !n) return 0;
    byte_buf merged = {0};
    if (byte_buf_reserve(&merged, c->in_front.len + held + n) < 0) {
        conn_close(c);
        return -1;
    }
    /* Within the reservation: these cannot fail. */
    if (c->in_front.len) byte_buf_append(&merged, c->in_front.data, c->in_front.len);
    if (held) byte_buf_append(&merged, c->in.data + c->in_off, held);
    if (n) byte_buf_append(&merged, data, n);
    byte_buf_free(&c->in_front);
    byte_buf_free(&c->in);
    c->in = merged;
    c->in_off = 0;
    if (c->input_link.next == &c->input_link) {
        srv_list_push(&c->srv->input_list, &c->input_link);
        uv_idle_start(&c->srv->turn_idle, on_turn_idle);
    }
    update_reading(c);
    return 0;
}

static void release_input(conn *c) {
    byte_buf_free(&c->in);
    byte_buf_free(&c->in_front);
    c->in_off = 0;
    srv_list_remove(&c->input_link);
}

/* Is input held for a later turn (read, or handed back)? */
static bool holds_input(const conn *c) {
    return c->in_off < c->in.len || c->in_front.len;
}

/* Fresh bytes from the socket: handled now as far as the budget goes. */
static void take_input(conn *c, const char *data, size_t n) {
    while (n && conn_is_open(c) && !c->in_front.len) {
        size_t used = handle(c, data, n);
        data += used;
        n -= used;
        if (!used) break;
    }
    if (conn_is_open(c) && (n || c->in_front.len)) keep(c, data, n);
    note_partial(c);
}

/* Held input's turn: handled as far as the budget goes. While the client
 * has not read half the output limit its requests wait out of the turn (so
 * the loop does not spin on them); update_reading puts them back. */
static void take_held(conn *c) {
    if (conn_is_open(c) && over_half(c)) {
        srv_list_remove(&c->input_link);
        return;
    }
    while (conn_is_open(c) && holds_input(c)) {
        if (c->in_front.len && keep(c, NULL, 0) < 0) return;
        size_t used = handle(c, c->in.data + c->in_off, c->in.len - c->in_off);
        if (!conn_is_open(c)) break;
        c->in_off += (uint32_t)used;
        if (!used) break;
    }
    if (!conn_is_open(c) || !holds_input(c)) {
        release_input(c);
        update_reading(c);
    }
    note_partial(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0) {
        if (nread != UV_EOF)
            srv_log(SRV_LOG_DEBUG, "read error on %s: %s", conn_peer(c),
                    uv_strerror((int)nread));
        conn_close(c);
        return;
    }
    if (nread == 0 || !conn_is_open(c)) return;
    srv *s = c->srv;
    s->metrics.bytes_in += (uint64_t)nread;
    take_input(c, buf->base, (size_t)nread);
    if (++s->reads_this_turn <= QUIET_READS && s->reads_last_turn <= QUIET_READS)
        flush_all(s);
}

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

void conn_feed_json(conn *c, const char *data, size_t n) {
    hand_back(c, data, n);
}

/* Bytes to be handled before anything else the connection holds. */
static void hand_back(conn *c, const char *data, size_t n) {
    if (!conn_is_open(c) || !n) return;
    if (byte_buf_append(&c->in_front, data, n) < 0) conn_close(c);
}

/* ------------------------------------------------------------ transports --- */

/* JSON lines: one request per line, as many lines as the turn's share. */
static int on_json_line(void *ctx, const char *line, size_t len) {
    conn *c = ctx;
    conn_request_done(c);
    session_json_line(c, line, len);
    if (c->budget) c->budget--;
    /* A reply that filled half the output queue: the next request waits until
     * the client has read it (a large `replay` must not pile on another). */
    return !conn_is_open(c) || !c->budget || c->in_front.len || over_half(c);
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

size_t conn_take_share(conn *c, size_t n) {
    size_t k = n < c->budget ? n : c->budget;
    c->budget -= (unsigned)k;
    return k;
}

const conn_transport conn_detect_transport = {
    .name = "detect",
    .turn_share = CONN_TURN_WEB_BYTES, /* the first bytes: HTTP's share until decided */
    .input = detect_input,
    .send = conn_send_raw,
    .deliver = conn_deliver_json,
};

const conn_transport conn_json_transport = {
    .name = "json",
    .turn_share = CONN_TURN_LINES,
    .input = json_input,
    .send = conn_send_raw,
    .deliver = conn_deliver_json,
    .say = json_say,
};

const conn_transport *conn_transport_of(const conn *c) {
    return c->srv->transports[c->mode];
}

void conn_set_transport(conn *c, conn_mode mode) {
    unsigned old_share = conn_transport_of(c)->turn_share;
    c->mode = (uint8_t)mode;
    /* What is left of a share in bytes means nothing in lines (text to
     * JSON), so a different share starts afresh for this turn; the same
     * share (HTTP to WebSocket) goes on being spent. A budget of an earlier
     * turn is renewed now, as handle would. */
    if (c->srv->transports[mode]->turn_share != old_share ||
        c->budget_turn != c->srv->turn) {
        c->budget = c->srv->transports[mode]->turn_share;
        c->budget_turn = c->srv->turn;
    }
}

/* ------------------------------------------------------------- the turn --- */

static uint64_t mono_ms(void) {
    return uv_hrtime() / 1000000;
}

/* A pause (or a turn that stalled as long) was seen: timers that expire
 * clients wait until the polls after it have read what arrived meanwhile. */
static void note_pause(srv *s, uint64_t ms) {
    if (!s->io_behind)
        srv_log(SRV_LOG_INFO, "the process was paused (or stalled) for about %llu ms",
                (unsigned long long)ms);
    s->io_behind = CATCH_UP_TURNS;
}

/* Before poll, after timers and held input: write what they queued. */
static void on_turn_prepare(uv_prepare_t *h) {
    srv *s = h->loop->data;
    flush_all(s);
    s->poll_timeout = uv_backend_timeout(s->loop);
    s->prepare_ms = mono_ms();
    /* Paused since the last poll (in timers, say, or a journal's fsync):
     * timers that come due only now must wait for the input too. */
    if (s->check_ms && s->prepare_ms - s->check_ms > PAUSE_MS)
        note_pause(s, s->prepare_ms - s->check_ms);
}

/* After poll: write what the input queued, then the next turn begins. A poll
 * that took much longer than its timeout means the process was paused; until
 * a poll has read what arrived meanwhile, timers must not expire anyone. */
static void on_turn_check(uv_check_t *h) {
    srv *s = h->loop->data;
    flush_all(s);
    uint64_t now = mono_ms();
    bool paused = s->poll_timeout >= 0 &&
                  now > s->prepare_ms + (uint64_t)s->poll_timeout + PAUSE_MS;
    if (paused)
        note_pause(s, now - s->prepare_ms);
    else if (s->io_behind)
        s->io_behind--;
    s->check_ms = now;
    s->reads_last_turn = s->reads_this_turn;
    s->reads_this_turn = 0;
    s->turn++;
}

/* Held input: every connection with some gets one budget per turn. */
static void on_turn_idle(uv_idle_t *h) {
    srv *s = h->loop->data;
    srv_link todo;
    srv_list_init(&todo);
    if (!srv_list_empty(&s->input_list)) { /* move the list to todo */
        todo.next = s->input_list.next;
        todo.prev = s->input_list.prev;
        todo.next->prev = todo.prev->next = &todo;
        srv_list_init(&s->input_list);
    }
    while (!srv_list_empty(&todo)) {
        conn *c = srv_container(todo.next, conn, input_link);
        srv_list_remove(&c->input_link);
        srv_list_push(&s->input_list, &c->input_link); /* back unless done */
        take_held(c);
    }
    if (srv_list_empty(&s->input_list)) uv_idle_stop(&s->turn_idle);
}

void conn_loop_init(srv *s) {
    conn_timers_init(s);
    srv_list_init(&s->input_list);
    srv_list_init(&s->flush_list);
    srv_list_init(&s->held_list);
    journal_on_durable(s->journal, &s->durable_sub, on_journal_durable, s);
    s->check_ms = mono_ms();
    s->poll_timeout = -1;
    uv_idle_init(s->loop, &s->turn_idle);
    uv_prepare_init(s->loop, &s->turn_prepare);
    uv_check_init(s->loop, &s->turn_check);
    uv_prepare_start(&s->turn_prepare, on_turn_prepare);
    uv_check_start(&s->turn_check, on_turn_check);
    uv_unref((uv_handle_t *)&s->turn_prepare);
    uv_unref((uv_handle_t *)&s->turn_check);
}

bool srv_defer_until_io(srv *s, uv_timer_t *t, uv_timer_cb cb) {
    uint64_t now = mono_ms();
    if (s->check_ms && now - s->check_ms > PAUSE_MS)
        note_pause(s,
                   now - s->check_ms); /* paused since the last poll, before this timer */
    if (!s->io_behind) return false;
    if (t) uv_timer_start(t, cb, DEFER_MS, 0);
    return true;
}

/* ---------------------------------------------------------------- output --- */

/* What an entry holds besides its bytes: the shared buffer's header and the
 * allocator's share of its two blocks (counted for every connection it is
 * queued to, so a shared buffer is over-counted, never under). */
#define ENTRY_OVERHEAD (sizeof(srv_buf) + 32)

static size_t pause_threshold(const conn *c) {
    return c->srv->cfg.max_output / 2;
}

static bool over_half(const conn *c) {
    return c->out_bytes > pause_threshold(c);
}

/* --max-output bounds what waits for a client that does not read, not the
 * size of one reply: anything may be queued while the queue holds at most
 * half the limit (requests are handled only then, so every reply fits), and
 * past that only what keeps the queue within the limit. A non-reader holds
 * at most half the limit plus one message. */
static bool fits(const conn *c, size_t cost) {
    return !over_half(c) || c->out_bytes + cost <= c->srv->cfg.max_output;
}

/* A barrier: an empty entry that holds back itself and everything after it
 * until the journal is durable up to the position kept in its head bytes. */
static srv_buf barrier_buf = {.refs = 1}; /* never freed: refs never reach 0 */

static bool is_held(const conn *c, const conn_out *e) {
    if (e->buf != &barrier_buf) return false;
    uint64_t pos;
    memcpy(&pos, e->head, sizeof pos);
    return pos > journal_durable_pos(c->srv->journal);
}

/* Asks for the queue to be written at the end of this loop turn. */
static void want_flush(conn *c) {
    if (c->flush_link.next == &c->flush_link)
        srv_list_push(&c->srv->flush_list, &c->flush_link);
}

static conn_out *entry(conn *c, unsigned i) {
    return &c->out[(c->out_first + i) & (c->out_cap - 1)];
}

/* Reads while nothing holds it back: input waiting for its turn, output over
 * half the limit, closing. */
static void update_reading(conn *c) {
    if (c->refused) return;
    bool over = c->out_bytes > pause_threshold(c);
    bool want = conn_is_open(c) && !holds_input(c) && !over;
    /* Since when the output, over half the limit, has not moved. */
    if (!over)
        c->stalled_since = 0;
    else if (!c->stalled_since)
        c->stalled_since = uv_now(c->srv->loop);
    /* Held requests parked by take_held: their turn comes again. */
    if (!over && conn_is_open(c) && holds_input(c) &&
        c->input_link.next == &c->input_link) {
        srv_list_push(&c->srv->input_list, &c->input_link);
        uv_idle_start(&c->srv->turn_idle, on_turn_idle);
    }
    if (want == c->reading) return;
    c->reading = want;
    if (want)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    else
        uv_read_stop((uv_stream_t *)&c->tcp);
}

static void slow_consumer(conn *c) {
    c->srv->metrics.slow_consumers++;
    srv_log_client(SRV_LOG_WARN, "slow_consumer: closing %s, %zu bytes queued",
                   conn_peer(c), c->out_bytes);
    conn_close(c);
}

/* The queue starts as the connection's one inline entry (a ring of 1): most
 * connections never hold two messages at once, and an idle one holds no
 * allocated ring. */
static void use_inline(conn *c) {
    c->out = &c->out_one;
    c->out_cap = 1;
    c->out_first = 0;
}

static bool ring_allocated(const conn *c) {
    return c->out != &c->out_one;
}

/* Doubles the ring, or moves the inline entry into a first ring of 4. */
static int grow(conn *c) {
    if (!c->out) use_inline(c);
    unsigned cap = ring_allocated(c) ? c->out_cap * 2 : 4;
    size_t old = ring_allocated(c) ? c->out_cap : 0;
    size_t extra = (size_t)(cap - old) * sizeof(conn_out);
    if (!fits(c, extra)) return -1;
    conn_out *ring = malloc((size_t)cap * sizeof *ring);
    if (!ring) return -1;
    for (unsigned i = 0; i < c->out_count; i++)
        ring[i] = *entry(c, i);
    if (ring_allocated(c)) free(c->out);
    c->out = ring;
    c->out_first = 0;
    c->out_cap = cap;
    c->out_bytes += extra;
    return 0;
}

/* A new entry at the back of the queue, charged `cost`; NULL (the client
 * closed as a slow consumer) if it does not fit. */
static conn_out *push_entry(conn *c, size_t cost) {
    if (!fits(c, cost) || (c->out_count == c->out_cap && grow(c) < 0) || !fits(c, cost)) {
        slow_consumer(c);
        return NULL;
    }
    conn_out *e = entry(c, c->out_count++);
    c->out_bytes += cost;
    return e;
}

void conn_send_framed(conn *c, const void *head, size_t head_len, srv_buf *b,
                      size_t len) {
    if (!b || !conn_is_open(c) || head_len > CONN_HEAD_MAX || len > b->len ||
        len > UINT32_MAX)
        return;
    conn_out *e = push_entry(c, len + head_len + ENTRY_OVERHEAD);
    if (!e) return;
    e->buf = srv_buf_ref(b);
    e->len = (uint32_t)len;
    e->head_len = (uint8_t)head_len;
    if (head_len) memcpy(e->head, head, head_len);
    want_flush(c);
    if (over_half(c)) update_reading(c);
}

/* Holds back what is queued from now on until the journal is durable up to pos. */
static void hold_until(conn *c, uint64_t pos) {
    conn_out *e = push_entry(c, ENTRY_OVERHEAD);
    if (!e) return;
    e->buf = srv_buf_ref(&barrier_buf);
    e->len = 0;
    e->head_len = 0;
    memcpy(e->head, &pos, sizeof pos);
    want_flush(c);
}

/* The journal synced more: held connections try again. */
static void on_journal_durable(void *ctx) {
    srv *s = ctx;
    while (!srv_list_empty(&s->held_list)) {
        srv_link *l = s->held_list.next;
        srv_list_remove(l);
        srv_list_push(&s->flush_list, l);
    }
}

void conn_send_raw(conn *c, srv_buf *line) {
    conn_send_framed(c, NULL, 0, line, line->len);
}

void conn_send_buf(conn *c, srv_buf *b) {
    if (b && conn_is_open(c)) conn_transport_of(c)->send(c, b);
}

void conn_send_error(conn *c, proto_err code, const char *message) {
    size_t len = 0;
    char *line = proto_enc_error(code, message, &len);
    srv_buf *b = srv_buf_take(line, len); /* len is set only once the line is made */
    srv_count_error(c->srv, code);
    if (!b) return;
    conn_send_buf(c, b);
    srv_buf_unref(b);
}

void conn_write(conn *c, const char *data, size_t len) {
    if (!conn_is_open(c) || len == 0) return;
    char *copy = malloc(len);
    if (!copy) {
        conn_close(c);
        return;
    }
    memcpy(copy, data, len);
    srv_buf *b = srv_buf_take(copy, len);
    if (!b) {
        conn_close(c);
        return;
    }
    conn_send_framed(c, NULL, 0, b, len);
    srv_buf_unref(b);
}

void conn_deliver_json(conn *c, const srv_msg *m) {
    conn_send_buf(c, m->json);
}

void conn_deliver(conn *c, const srv_msg *m) {
    if (!conn_is_open(c)) return;
    if (m->durable_at > journal_durable_pos(c->srv->journal))
        hold_until(c, m->durable_at);
    if (!conn_is_open(c)) return; /* a slow consumer, closed by the barrier */
    conn_transport_of(c)->deliver(c, m);
}

/* Drops `n` written bytes from the front of the queue. */
static void written(conn *c, size_t n) {
    if (n) c->stalled_since = 0;
    n += c->out_skip;
    c->out_skip = 0;
    while (c->out_count) {
        conn_out *e = entry(c, 0);
        size_t len = e->head_len + e->len;
        if (is_held(c, e)) return; /* nothing after it was written */
        if (n < len) {
            c->out_skip = n;
            return;
        }
        n -= len;
        c->out_bytes -= len + ENTRY_OVERHEAD;
        srv_buf_unref(e->buf);
        c->out_first = (c->out_first + 1) & (c->out_cap - 1);
        c->out_count--;
        if (c->out_inflight) c->out_inflight--;
    }
}

/* Lists the unwritten bytes of the first `count` entries as buffers (two per
 * entry at most); returns how many. */
/* The iovecs of the first count entries. With heads (room for CONN_HEAD_MAX
 * bytes per entry) the inline heads are copied there: a write that waits for
 * the socket must not point into the ring, which may grow and move before it
 * completes. */
static unsigned gather(conn *c, unsigned count, uv_buf_t *bufs, char *heads) {
    unsigned nb = 0;
    size_t skip = c->out_skip;
    for (unsigned i = 0; i < count; i++) {
        conn_out *e = entry(c, i);
        size_t h = e->head_len;
        char *head = e->head;
        if (heads && skip < h) {
            head = heads + (size_t)i * CONN_HEAD_MAX;
            memcpy(head, e->head, h);
        }
        if (skip < h) bufs[nb++] = uv_buf_init(head + skip, (unsigned)(h - skip));
        size_t from = skip > h ? skip - h : 0;
        if (from < e->len)
            bufs[nb++] = uv_buf_init(e->buf->data + from, (unsigned)(e->len - from));
        skip = 0;
    }
    return nb;
}

static void on_write(uv_write_t *req, int status) {
    conn *c = req->data;
    free(req);
    c->writing = false;
    if (status < 0) {
        c->out_inflight = 0;
        if (status != UV_ECANCELED) conn_close(c);
        return;
    }
    size_t n = 0;
    for (unsigned i = 0; i < c->out_inflight; i++) {
        const conn_out *e = entry(c, i);
        n += e->head_len + e->len;
    }
    c->srv->metrics.bytes_out += n - c->out_skip;
    written(c, n - c->out_skip);
    c->out_inflight = 0;
    if (conn_is_closing(c)) return;
    if (!conn_is_open(c))
        flush(c); /* draining: the last bytes go out now, then the shutdown */
    else if (c->out_count)
        want_flush(c);
    update_reading(c);
}

/* How many entries from the front may be written: those before the first
 * barrier that still holds. */
static unsigned sendable(const conn *c) {
    unsigned n = 0;
    while (n < c->out_count &&
           !is_held(c, &c->out[(c->out_first + n) & (c->out_cap - 1)]))
        n++;
    return n;
}

/* Writes what is queued: at once as far as the kernel takes it, the rest by
 * one uv_write. A connection held by a barrier waits in srv.held_list. */
static void flush(conn *c) {
    if (conn_is_closing(c) || c->writing || !c->out_count) {
        maybe_shutdown(c);
        return;
    }
    unsigned count = sendable(c);
    if (!count) {
        srv_list_remove(&c->flush_link);
        srv_list_push(&c->srv->held_list, &c->flush_link);
        return;
    }
    uv_buf_t stack[64];
    uv_buf_t *bufs = stack;
    if (count * 2 > 64 && !(bufs = malloc(count * 2 * sizeof *bufs))) {
        conn_close(c);
        return;
    }
    uv_stream_t *stream = (uv_stream_t *)&c->tcp;
    unsigned nb = gather(c, count, bufs, NULL);
    int n = nb ? uv_try_write(stream, bufs, nb) : 0; /* nb 0: only spent barriers */
    if (n == UV_EAGAIN) n = 0;
    if (n < 0) {
        if (bufs != stack) free(bufs);
        conn_close(c);
        return;
    }
    c->srv->metrics.bytes_out += (uint64_t)n;
    written(c, (size_t)n);
    count = sendable(c);
    if (count) {
        /* The request carries the heads' copies (see gather); on_write frees both. */
        uv_write_t *req = malloc(sizeof *req + (size_t)count * CONN_HEAD_MAX);
        if (req) nb = gather(c, count, bufs, (char *)(req + 1));
        if (!req || uv_write(req, stream, bufs, nb, on_write) < 0) {
            free(req);
            if (bufs != stack) free(bufs);
            conn_close(c);
            return;
        }
        req->data = c;
        c->writing = true;
        c->out_inflight = count;
    } else if (c->out_count) { /* all that may go went: wait for the journal */
        srv_list_remove(&c->flush_link);
        srv_list_push(&c->srv->held_list, &c->flush_link);
    }
    if (bufs != stack) free(bufs);
    maybe_shutdown(c);
    update_reading(c);
}

/* Gives the ring back when the queue is empty (an idle connection holds none). */
static void trim(conn *c) {
    if (c->out_count || !ring_allocated(c)) return;
    c->out_bytes -= (size_t)c->out_cap * sizeof(conn_out);
    free(c->out);
    use_inline(c);
}

void conn_flush_all(srv *s) {
    flush_all(s);
}

static void flush_all(srv *s) {
    while (!srv_list_empty(&s->flush_list)) {
        srv_link *l = s->flush_list.next;
        srv_list_remove(l);
        flush(srv_container(l, conn, flush_link));
    }
}

/* --------------------------------------------------------------- closing --- */

static void conn_free(conn *c) {
    srv *s = c->srv;
    if (c->player) session_conn_gone(c);
    const conn_transport *t = conn_transport_of(c);
    if (t->free) t->free(c);
    proto_framer_free(&c->framer);
    while (c->out_count) {
        srv_buf_unref(c->out[c->out_first].buf);
        c->out_first = (c->out_first + 1) & (c->out_cap - 1);
        c->out_count--;
    }
    if (ring_allocated(c)) free(c->out);
    release_input(c);
    srv_list_remove(&c->flush_link);
    if (c->counted) {
        unsigned char key[16];
        addr_remove(&s->addrs, key, addr_key(c->addr, c->addr_len, key));
    }
    if (c->link.next) {
        srv_list_remove(&c->link);
        s->nconns--;
        if (c->refused) s->nrefused--;
        srv_log(SRV_LOG_DEBUG, "disconnect %s (#%llu, %u open)", conn_peer(c),
                (unsigned long long)c->id, s->nconns);
    }
    free(c);
    conn_accept_resume(s);
}

static void on_handle_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (--c->open_handles == 0) conn_free(c);
}

void conn_close(conn *c) {
    if (conn_is_closing(c)) return;
    c->state = CONN_CLOSING;
    /* Nothing more is handled or written: out of the turn's lists. */
    srv_list_remove(&c->flush_link);
    srv_list_remove(&c->input_link);
    conn_timer_stop(c);
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    conn *c = req->data;
    free(req);
    conn_close(c);
}

/* Draining: once every queued byte is handed to the kernel or to the running
 * write, the shutdown (sent after that write) ends the connection. */
static void maybe_shutdown(conn *c) {
    if (c->state != CONN_DRAINING) return;
    if (c->out_count && !(c->writing && c->out_inflight == c->out_count)) return;
    c->state = CONN_SHUT;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (!req) {
        conn_close(c);
        return;
    }
    req->data = c;
    if (uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        free(req);
        conn_close(c);
    }
}

/* A client that never reads would keep a flush waiting forever. */
#define DRAIN_MS 5000

static void on_drain_timeout(conn *c) {
    conn_close(c);
}

void conn_close_after_flush(conn *c) {
    if (!conn_is_open(c)) return;
    const conn_transport *t = conn_transport_of(c);
    if (t->last_bytes) t->last_bytes(c);
    /* The last bytes may not have fitted the queue (a slow consumer): closed,
     * it must not get a flush deadline, or be freed with one armed. */
    if (conn_is_closing(c)) return;
    c->state = CONN_DRAINING;
    if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    srv_list_remove(&c->input_link);
    conn_timer_stop(c);
    if (conn_timer_start(c, on_drain_timeout, DRAIN_MS) < 0) {
        conn_close(c);
        return;
    }
    srv_list_remove(&c->flush_link);
    flush(c);
}

/* The transport's last words, then a close after the flush. */
static void say_and_close(conn *c, conn_say why) {
    const conn_transport *t = conn_transport_of(c);
    if (t->say) t->say(c, why);
    conn_close_after_flush(c);
}

void conn_say_bye(conn *c) {
    if (conn_is_open(c)) say_and_close(c, CONN_SAY_SHUTDOWN);
}

void conn_too_long(conn *c) {
    if (conn_is_open(c)) say_and_close(c, CONN_SAY_TOO_LONG);
}

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
                 unit, c->srv->cfg.max_line);
        conn_send_error(c, PROTO_ERR_LINE_TOO_LONG, msg);
        srv_log_client(SRV_LOG_INFO, "line_too_long from %s%s", conn_peer(c), log_as);
    }
}

/* What the sweep does with one open connection. */
static void sweep_one(conn *c, uint64_t now) {
    srv *s = c->srv;
    const conn_transport *t = conn_transport_of(c);
    uint64_t req_ms = s->cfg.request_ms;
    if (!c->writing) trim(c);
    if (t->sleep) t->sleep(c);
    if (req_ms && c->stalled_since && now - c->stalled_since >= req_ms) {
        /* Its reading stopped for output that has not moved since. */
        slow_consumer(c);
        return;
    }
    if (req_ms && c->partial_since && now - c->partial_since >= req_ms) {
        srv_log(SRV_LOG_DEBUG, "closing %s: a request unfinished for %llu s",
                conn_peer(c), (unsigned long long)((now - c->partial_since) / 1000));
        say_and_close(c, CONN_SAY_SLOW);
        return;
    }
    uint64_t idle_ms = s->cfg.idle_ms;
    if (t->idle_max_ms && (!idle_ms || idle_ms > t->idle_max_ms))
        idle_ms = t->idle_max_ms;
    if (!idle_ms || now - c->last_active < idle_ms) return;
    /* A racer thinking over a move, or someone watching a race, is not idle
     * while the race runs. */
    const srv_player *p = c->player;
    if (p &&
        (room_in_running_race(p) || (p->watching && p->watching->state == ROOM_RUNNING)))
        return;
    srv_log(SRV_LOG_DEBUG, "closing idle connection %s", conn_peer(c));
    say_and_close(c, CONN_SAY_IDLE);
}

void conn_sweep_idle(srv *s) {
    /* After a pause, input that arrived meanwhile is read first. */
    if (srv_defer_until_io(s, NULL, NULL)) return;
    uint64_t now = uv_now(s->loop);
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        conn *c = srv_container(l, conn, link);
        if (conn_is_open(c)) sweep_one(c, now);
    }
}

void conn_write_metrics(metrics_out *o, void *ctx) {
    const srv *s = ctx;
    static const char *const mode_names[] = {"detecting", "json", "text", "http", "web"};
    unsigned by_mode[5] = {0}; /* indexed by conn_mode */
    for (const srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        const conn *c = srv_container(l, conn, link);
        /* One waiting for its PROXY header is still being detected. */
        unsigned mode = c->mode == CONN_PROXY ? CONN_DETECT : c->mode;
        if (mode < 5) by_mode[mode]++;
    }
    metrics_family(
        o, "race2048_connections", "gauge",
        "Open connections by mode (web: WebSocket players, http: plain HTTP).");
    for (int i = 0; i < 5; i++)
        metrics_put(o, "race2048_connections{mode=\"%s\"} %u\n", mode_names[i],
                    by_mode[i]);
}
