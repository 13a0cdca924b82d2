/* conn.c - one client connection: socket, mode detection, framing, bounded output. */
#include "conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lobby.h"
#include "room.h"
#include "text.h"
#include "web.h"

/* How long a silent client has before the server decides it is a human. */
#define DETECT_MS 300

/* All connections read into one buffer: libuv hands it back to us before the
 * next read, and the framer copies only what a partial line needs. */
static char read_buf[64 * 1024];

typedef struct conn_write_req {
    uv_write_t req;
    srv_buf *buf;
    char hdr[16]; /* conn_send_framed: e.g. a WebSocket frame header */
} conn_write_req;

static void on_handle_closed(uv_handle_t *h);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* ---------------------------------------------------------------- accept --- */

static void peer_name(conn *c) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
            uv_ip4_name(in, ip, sizeof ip);
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
            uv_ip6_name(in6, ip, sizeof ip);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

static void on_detect_timeout(uv_timer_t *t) {
    conn *c = t->data;
    if (c->mode == CONN_DETECT && !c->closing) {
        c->mode = CONN_TEXT;
        text_begin(c, false);
        /* Capitals that never became "GET /": a human's typing. */
        if (c->detect_len && !c->closing && !c->draining)
            text_input(c, c->detect_buf, c->detect_len);
        c->detect_len = 0;
    }
}

/* A refused connection answers in the client's own mode, decided like any
 * other's: a human whose first byte is not '{' gets a line of text (a human
 * must never see JSON); a program, or a client silent for the detection
 * window, gets the JSON error. Then the connection closes. */
static void refuse(conn *c, bool text) {
    if (c->closing || c->draining) return;
    uv_timer_stop(&c->timer);
    if (text) {
        static const char line[] = "The server is full; try again later.\r\n";
        conn_write(c, line, sizeof line - 1);
    } else {
        size_t len;
        char *json = proto_enc_error(PROTO_ERR_SERVER_FULL,
                                     "the server is full; try again later", &len);
        srv_buf *b = srv_buf_take(json, len);
        if (b) {
            conn_send_buf(c, b);
            srv_buf_unref(b);
        }
    }
    conn_close_after_flush(c);
}

static void on_refused_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (nread > 0 &&
        proto_http_detect((const unsigned char *)buf->base, (size_t)nread) > 0) {
        uv_timer_stop(&c->timer);
        web_refuse(c);
    } else if (nread > 0) {
        refuse(c, proto_detect_mode((const unsigned char *)buf->base, (size_t)nread) !=
                      PROTO_MODE_JSON);
    }
}

static void on_refused_timeout(uv_timer_t *t) {
    refuse(t->data, false);
}

void conn_accept(srv *s, uv_stream_t *listener) {
    static uint64_t next_conn_id = 1;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        srv_log(SRV_LOG_ERROR, "out of memory accepting a connection");
        return;
    }
    c->srv = s;
    c->id = next_conn_id++;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->open_handles = 1;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
        c->closing = true;
        return;
    }
    uv_timer_init(s->loop, &c->timer);
    c->timer.data = c;
    c->open_handles = 2;
    srv_list_push(&s->conns, &c->link);
    s->nconns++;
    s->metrics.connections++;
    c->last_active = uv_now(s->loop);
    peer_name(c);

    if (proto_framer_init(&c->framer, s->cfg.max_line, false) < 0) {
        srv_log(SRV_LOG_ERROR, "out of memory for connection %s", c->peer);
        conn_close(c);
        return;
    }
    if (s->stopping || s->nconns > s->cfg.max_clients) {
        srv_log(SRV_LOG_WARN, "refusing %s: server full (%u clients)", c->peer,
                s->cfg.max_clients);
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_refused_read);
        uv_timer_start(&c->timer, on_refused_timeout, DETECT_MS, 0);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    /* A peer that vanishes without a FIN is found even while it races (races
     * are exempt from the idle timeout). */
    uv_tcp_keepalive(&c->tcp, 1, 60);
    srv_log(SRV_LOG_INFO, "connect %s (#%llu, %u open)", c->peer,
            (unsigned long long)c->id, s->nconns);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    uv_timer_start(&c->timer, on_detect_timeout, DETECT_MS, 0);
}

/* ----------------------------------------------------------------- input --- */

static int on_json_line(void *ctx, const char *line, size_t len) {
    conn *c = ctx;
    lobby_json_line(c, line, len);
    return c->closing || c->draining;
}

static int on_json_too_long(void *ctx) {
    conn *c = ctx;
    char msg[96];
    snprintf(msg, sizeof msg, "a line may be at most %zu bytes; closing the connection",
             c->srv->cfg.max_line);
    size_t len = 0;
    char *line = proto_enc_error(PROTO_ERR_LINE_TOO_LONG, msg, &len);
    srv_buf *b = srv_buf_take(line, len); /* len is set only once the line is made */
    if (b) {
        conn_send_buf(c, b);
        srv_buf_unref(b);
    }
    srv_log(SRV_LOG_INFO, "line_too_long from %s", c->peer);
    conn_close_after_flush(c);
    return 1;
}

static void feed_json(conn *c, const char *data, size_t n) {
    proto_framer_feed(&c->framer, data, n, on_json_line, on_json_too_long, c);
}

/* Decides the mode of an undecided connection from its first bytes, then
 * hands them to that mode. */
static void dispatch(conn *c, const char *data, size_t n) {
    if (c->mode == CONN_HTTP || c->mode == CONN_WS) {
        web_input(c, data, n);
        return;
    }
    if (c->mode == CONN_DETECT) {
        uv_timer_stop(&c->timer);
        proto_mode mode = proto_detect_mode((const unsigned char *)data, n);
        if (mode == PROTO_MODE_JSON) {
            c->mode = CONN_JSON;
        } else {
            c->mode = CONN_TEXT;
            text_begin(c, mode == PROTO_MODE_TELNET);
            if (c->closing) return;
        }
    }
    if (c->mode == CONN_JSON)
        feed_json(c, data, n);
    else
        text_input(c, data, n);
}

/* HTTP or not is known once the first bytes stop looking like the start of
 * "METHOD /". Returns true if it took the bytes: kept while undecided (the
 * detection timer still runs), or handed to the web transport. Bytes kept
 * earlier and then judged not HTTP are dispatched here, before the new ones. */
static bool detect_http(conn *c, const char *data, size_t n) {
    char probe[sizeof c->detect_buf];
    size_t space = sizeof probe - c->detect_len;
    size_t take = n < space ? n : space;
    memcpy(probe, c->detect_buf, c->detect_len);
    memcpy(probe + c->detect_len, data, take);
    int http = proto_http_detect((const unsigned char *)probe, c->detect_len + take);
    if (http < 0 && take == n) { /* all of it is still a maybe */
        memcpy(c->detect_buf, probe, c->detect_len + take);
        c->detect_len += take;
        return true;
    }
    size_t kept = c->detect_len;
    c->detect_len = 0;
    if (http > 0) {
        uv_timer_stop(&c->timer);
        c->mode = CONN_HTTP;
        if (web_begin(c) < 0) return true;
    }
    if (kept) dispatch(c, c->detect_buf, kept);
    if (http > 0 && !c->closing && !c->draining) web_input(c, data, n);
    return http > 0 || c->closing || c->draining;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    conn *c = stream->data;
    if (nread < 0) {
        if (nread != UV_EOF)
            srv_log(SRV_LOG_DEBUG, "read error on %s: %s", c->peer,
                    uv_strerror((int)nread));
        conn_close(c);
        return;
    }
    if (nread == 0 || c->closing || c->draining) return;
    c->last_active = uv_now(c->srv->loop);
    c->srv->metrics.bytes_in += (uint64_t)nread;
    if (c->mode == CONN_DETECT && detect_http(c, buf->base, (size_t)nread)) return;
    dispatch(c, buf->base, (size_t)nread);
}

void conn_become_json(conn *c, const char *line, size_t len) {
    if (c->text) text_free(c);
    uv_timer_stop(&c->timer);
    c->mode = CONN_JSON;
    proto_framer_set_text(&c->framer, false);
    /* A text session named its player quietly; a JSON client is owed its welcome. */
    if (c->player) c->player->welcomed = false;
    /* The telnet probe (and maybe a greeting) went out without a line end:
     * end that line, so the first JSON line starts with '{' for a client that
     * skips lines that do not. */
    conn_write(c, "\r\n", 2);
    lobby_json_line(c, line, len);
}

void conn_feed_json(conn *c, const char *data, size_t n) {
    if (c->mode == CONN_JSON && !c->closing && !c->draining) feed_json(c, data, n);
}

/* ---------------------------------------------------------------- output --- */

static void on_write(uv_write_t *req, int status) {
    conn_write_req *w = (conn_write_req *)req;
    conn *c = req->handle->data;
    srv_buf_unref(w->buf);
    free(w);
    if (status < 0 && status != UV_ECANCELED) conn_close(c);
}

static void queue_framed(conn *c, const void *hdr, size_t hdr_len, srv_buf *b,
                         size_t len) {
    uv_stream_t *stream = (uv_stream_t *)&c->tcp;
    if (uv_stream_get_write_queue_size(stream) + hdr_len + len > c->srv->cfg.max_output) {
        srv_log(SRV_LOG_WARN, "slow_consumer: closing %s, %zu bytes queued", c->peer,
                uv_stream_get_write_queue_size(stream));
        c->srv->metrics.slow_consumers++;
        conn_close(c);
        return;
    }
    conn_write_req *w = malloc(sizeof *w);
    if (!w || hdr_len > sizeof w->hdr) {
        free(w);
        conn_close(c);
        return;
    }
    w->buf = srv_buf_ref(b);
    if (hdr_len) memcpy(w->hdr, hdr, hdr_len);
    uv_buf_t ub[2] = {uv_buf_init(w->hdr, (unsigned)hdr_len),
                      uv_buf_init(b->data, (unsigned)len)};
    c->srv->metrics.bytes_out += hdr_len + len;
    int rc = uv_write(&w->req, stream, hdr_len ? ub : ub + 1, hdr_len ? 2 : 1, on_write);
    if (rc < 0) { /* the callback will not run */
        srv_buf_unref(b);
        free(w);
        conn_close(c);
    }
}

static void queue_write(conn *c, srv_buf *b) {
    queue_framed(c, NULL, 0, b, b->len);
}

void conn_send_framed(conn *c, const void *hdr, size_t hdr_len, srv_buf *b, size_t len) {
    if (!b || c->closing || c->draining || len > b->len) return;
    queue_framed(c, hdr, hdr_len, b, len);
}

void conn_send_buf(conn *c, srv_buf *b) {
    if (!b || c->closing || c->draining) return;
    if (c->mode == CONN_WS)
        web_send_json(c, b);
    else
        queue_write(c, b);
}

void conn_write(conn *c, const char *data, size_t len) {
    if (c->closing || c->draining || len == 0) return;
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
    queue_write(c, b);
    srv_buf_unref(b);
}

void conn_deliver(conn *c, const srv_msg *m) {
    if (c->closing || c->draining) return;
    if (c->mode == CONN_TEXT && c->text)
        text_deliver(c, m);
    else
        conn_send_buf(c, m->json);
}

/* --------------------------------------------------------------- closing --- */

static void conn_free(conn *c) {
    srv *s = c->srv;
    if (c->player) lobby_conn_gone(c);
    if (c->text) text_free(c);
    if (c->web) web_free(c);
    proto_framer_free(&c->framer);
    if (c->link.next) {
        srv_list_remove(&c->link);
        s->nconns--;
        srv_log(SRV_LOG_INFO, "disconnect %s (#%llu, %u open)", c->peer,
                (unsigned long long)c->id, s->nconns);
    }
    free(c);
}

static void on_handle_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (--c->open_handles == 0) conn_free(c);
}

void conn_close(conn *c) {
    if (c->closing) return;
    c->closing = true;
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    if (c->open_handles == 2 && !uv_is_closing((uv_handle_t *)&c->timer))
        uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    conn_close(req->data);
}

/* A client that never reads would keep a flush waiting forever. */
#define DRAIN_MS 5000

static void on_drain_timeout(uv_timer_t *t) {
    conn_close(t->data);
}

void conn_close_after_flush(conn *c) {
    if (c->closing || c->draining) return;
    if (c->mode == CONN_WS) web_ws_close(c, PROTO_WS_NORMAL); /* if none went yet */
    c->draining = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
    if (c->open_handles == 2) uv_timer_start(&c->timer, on_drain_timeout, DRAIN_MS, 0);
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        conn_close(c);
}

void conn_say_bye(conn *c) {
    if (c->closing || c->draining) return;
    if (c->mode == CONN_TEXT && c->text) {
        text_say_bye(c);
    } else if (c->mode == CONN_JSON || c->mode == CONN_WS) {
        size_t len;
        char *line = proto_enc_bye("shutdown", &len);
        srv_buf *b = srv_buf_take(line, len);
        if (b) {
            conn_send_buf(c, b);
            srv_buf_unref(b);
        }
        if (c->mode == CONN_WS) web_ws_close(c, PROTO_WS_GOING_AWAY);
    }
    conn_close_after_flush(c);
}

void conn_sweep_idle(srv *s) {
    if (!s->cfg.idle_ms) return;
    uint64_t now = uv_now(s->loop);
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        conn *c = srv_container(l, conn, link);
        if (c->closing || c->draining || now - c->last_active < s->cfg.idle_ms) continue;
        /* A racer thinking over a move, or someone watching a race, is not
         * idle while the race runs. */
        const srv_player *p = c->player;
        if (p && (room_in_running_race(p) ||
                  (p->watching && p->watching->state == ROOM_RUNNING)))
            continue;
        srv_log(SRV_LOG_INFO, "closing idle connection %s", c->peer);
        if (c->mode == CONN_TEXT && c->text) text_say_idle(c);
        if (c->mode == CONN_WS) web_ws_close(c, PROTO_WS_GOING_AWAY);
        conn_close_after_flush(c);
    }
}
