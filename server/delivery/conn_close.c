/* conn_close.c - closing a connection (now, or after a flush) and the idle sweep. */
#include <assert.h>
#include <stdlib.h>

#include "addr.h"
#include "conn_internal.h"
#include "room.h"
#include "session.h"
#include "transport.h"

static void conn_free(conn *c) {
    srv *s = c->srv;
    if (c->player) session_conn_gone(c);
    const conn_transport *t = conn_transport_of(c);
    if (t->free) t->free(c);
    proto_framer_free(&c->framer);
    conn_out_free(c);
    /* Closed, it left the turn's lists (conn_close) and nothing put it back. */
    assert(c->flush_link.next == &c->flush_link);
    assert(c->input_link.next == &c->input_link);
    conn_release_input(c);
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

void conn_on_handle_closed(uv_handle_t *h) {
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
        uv_close((uv_handle_t *)&c->tcp, conn_on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    conn *c = req->data;
    free(req);
    conn_close(c);
}

/* Draining: once every queued byte is handed to the kernel or to the running
 * write, the shutdown (sent after that write) ends the connection. */
void conn_maybe_shutdown(conn *c) {
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
    conn_flush(c);
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

/* What the sweep does with one open connection. */
static void sweep_one(conn *c, uint64_t now) {
    srv *s = c->srv;
    const conn_transport *t = conn_transport_of(c);
    uint64_t req_ms = s->cfg->request_ms;
    if (!c->writing) conn_trim(c);
    if (t->sleep) t->sleep(c);
    if (req_ms && c->stalled_since && now - c->stalled_since >= req_ms) {
        /* Its reading stopped for output that has not moved since. */
        conn_slow_consumer(c);
        return;
    }
    if (req_ms && c->partial_since && now - c->partial_since >= req_ms) {
        srv_log(SRV_LOG_DEBUG, "closing %s: a request unfinished for %llu s",
                conn_peer(c), (unsigned long long)((now - c->partial_since) / 1000));
        say_and_close(c, CONN_SAY_SLOW);
        return;
    }
    uint64_t idle_ms = s->cfg->idle_ms;
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

/* Fencing's part for the connections (the policy is cluster/takeover_fence.c's,
 * which calls this through takeover_on_fence): a connection whose barrier still
 * holds a message for the journal (an `end` this node can no longer make
 * durable) is closed without it; a racer is told to resume elsewhere and
 * closed after the flush; a spectator is told its room is gone. Returns the
 * connections closed. */
size_t conn_close_for_fence(void *srv_ctx) {
    srv *s = srv_ctx;
    size_t closed = 0;
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        conn *c = srv_container(l, conn, link);
        if (!conn_is_open(c)) continue;
        if (durable_barrier_holds(&c->barrier, s->journal)) {
            conn_close(c);
            closed++;
            continue;
        }
        if (!c->player) continue;
        bool seated = c->player->room, watching = c->player->watching;
        if (seated) {
            srv_send_error(c->player, PROTO_ERR_UNAVAILABLE,
                           "this node lost the cluster; reconnect and resume");
            conn_close_after_flush(c);
            closed++;
        } else if (watching) {
            srv_send_error(c->player, PROTO_ERR_UNAVAILABLE,
                           "this node lost the cluster; the room you watched is gone");
        }
    }
    return closed;
}
