/* srv.h - the process: listeners, connections, the loop turn, address guards, and
 * the game and record it hosts. Transports and main see it; the game does not. */
#ifndef RACE2048_SRV_H
#define RACE2048_SRV_H

#include "base.h"
#include "conn_timer.h"
#include "game.h"
#include "durable_barrier.h"
#include "journal.h"
#include "metrics.h"

struct conn;
struct addr_entry;
struct conn_transport;

/* How many transports (conn_mode, conn.h) a connection may switch between. */
#define SRV_MAX_TRANSPORTS 8

/* --host may name several addresses (localhost: 127.0.0.1 and ::1). */
#define SRV_MAX_LISTENERS 16

/* The server: one per process, reachable from every handle via loop->data. */
typedef struct srv {
    uv_loop_t *loop;
    const srv_config *cfg; /* the process's one config (main's), read-only */
    uv_tcp_t listeners[SRV_MAX_LISTENERS]; /* the first nlisteners are open */
    int nlisteners;
    /* --http-port's, on the same addresses: connections there start in HTTP
     * mode (no detection, no greeting). */
    uv_tcp_t http_listeners[SRV_MAX_LISTENERS];
    int nhttp_listeners;
    uv_signal_t sigterm, sigint;
    uv_timer_t sweep; /* closes idle connections */
    /* Every connection's deadline, on this one timer (conn_timer.c). */
    uv_timer_t conn_timer;
    conn_timers timers;
    srv_link conns;
    unsigned nconns;
    unsigned nrefused; /* of nconns: refused ones, on their way out */
    /* The loop turn (conn_turn.c, conn_input.c, conn_out.c): input waiting for its turn,
     * output to flush. */
    uv_idle_t turn_idle;       /* runs while input waits: poll must not block */
    uv_prepare_t turn_prepare; /* before poll: flush, note the poll timeout */
    uv_check_t turn_check;     /* after poll: flush, detect a pause, next turn */
    srv_link input_list;
    srv_link flush_list;
    /* Connections whose next entry waits for the journal (a durable `end`):
     * they rejoin flush_list when it syncs. */
    srv_link held_list;
    durable_waiters held_waiters; /* moves held_list to flush_list (durable_barrier.h) */
    uint64_t turn;
    unsigned reads_this_turn, reads_last_turn; /* connections read from, per turn */
    uint64_t prepare_ms;                       /* monotonic ms when poll was entered */
    int poll_timeout;                          /* the timeout it was given, -1 = none */
    uint64_t check_ms;                         /* monotonic ms after the last poll */
    unsigned io_behind; /* turns left to read input that came during a pause */
    /* File descriptors: connections beyond fd_capacity are refused. */
    unsigned fd_capacity;
    /* Listeners whose next connection waits: not even a refusal fits. */
    uv_stream_t *accept_paused[2 * SRV_MAX_LISTENERS];
    int npaused;
    uint64_t fd_log_ms;       /* rate limit for "out of descriptors" logs */
    struct addr_entry *addrs; /* open connections per address (addr.c) */
    struct journal *journal;
    struct cluster *cluster; /* the cluster link (--cluster), or NULL */
    struct remote *remote;   /* other nodes' players and rooms (remote.h), or NULL */
    struct accounts_kv *accounts_kv; /* accounts across the cluster, or NULL */
    /* What each conn_mode does, indexed by mode: the layer's own (detect,
     * JSON, PROXY) from srv_init, text and web from transports_install. */
    const struct conn_transport *transports[SRV_MAX_TRANSPORTS];
    bool stopping;
    srv_metrics metrics;
    game game;                    /* the lobby and rooms, on this loop */
    metrics_registry metrics_reg; /* what /metrics shows (metrics.c) */
    /* Addresses (entries of addrs) that failed resumes or started games
     * lately, oldest first (guard.c). */
    struct addr_entry *guard_oldest, *guard_newest;
    unsigned guard_active;
} srv;

/* Sets up s on loop (loop->data = s) with a copy of cfg and a game using
 * tables (borrowed): no listener, connection or journal yet. */
void srv_init(srv *s, uv_loop_t *loop, const srv_config *cfg, eng_tables *tables);

/* False while a service the node needs is out (cluster mode: NATS cannot be
 * reached): /healthz says 503 so that a balancer sends players elsewhere. */
bool srv_healthy(srv *s);

/* Counts an error sent to a client, for /metrics. */
static inline void srv_count_error(srv *s, proto_err code) {
    srv_metrics_error(&s->metrics, code);
}

/* True while the loop has not read input since the process was paused
 * (SIGSTOP, a frozen VM): a timer that expires clients (idle, grace, move
 * timeouts) must then wait. It re-arms t to run cb again shortly, and returns
 * true; the caller returns at once. t may be NULL (a repeating timer simply
 * skips this run). */
bool srv_defer_until_io(srv *s, uv_timer_t *t, uv_timer_cb cb);

#endif
