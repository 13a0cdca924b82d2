/* base.h - the server's bottom layer: lists, configuration, logging, shared buffers,
 * messages, metrics counters, randomness. It calls nothing above it. */
#ifndef RACE2048_BASE_H
#define RACE2048_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "cidr.h"
#include "engine.h"
#include "hash.h"
#include "message.h"
#include "view.h"

/* ---------------------------------------------------------------- lists --- */

/* An intrusive circular doubly-linked list; a head is a link to itself. */
typedef struct srv_link {
    struct srv_link *prev, *next;
} srv_link;

static inline void srv_list_init(srv_link *head) {
    head->prev = head->next = head;
}
static inline bool srv_list_empty(const srv_link *head) {
    return head->next == head;
}
static inline void srv_list_push(srv_link *head, srv_link *l) {
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}
static inline void srv_list_remove(srv_link *l) {
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l->next = l;
}
#define srv_container(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* --------------------------------------------------------------- config --- */

typedef enum srv_log_level {
    SRV_LOG_ERROR,
    SRV_LOG_WARN,
    SRV_LOG_INFO,
    SRV_LOG_DEBUG
} srv_log_level;

typedef struct srv_config {
    char host[256];
    int port;
    /* The listener for browsers (only HTTP and WebSocket, nothing written
     * before a request); 0 = a free one, -1 = none. */
    int http_port;
    bool has_seed; /* --seed given: server seeds are derived from it, for tests */
    uint32_t seed;
    unsigned max_clients;
    size_t max_line;
    uint64_t grace_ms;   /* reconnect grace */
    uint64_t idle_ms;    /* 0 = never close idle connections */
    size_t max_output;   /* queued output per connection before it is cut off */
    uint64_t request_ms; /* an unfinished request older than this closes, 0 = never */
    unsigned max_per_ip; /* open connections from one address */
    srv_log_level log_level;
    char journal[4096];       /* the journal file; "" = none (memory only) */
    uint64_t journal_sync_ms; /* longest wait before buffered records are synced */
    uint64_t journal_max;     /* size at which the journal is compacted */
    /* A racer still playing with no move this long has left; 0 = never. */
    uint64_t move_timeout_ms;
    /* Failed resumes (guard.c; 0 = no limit): per connection before it is
     * closed, and per address at once, then per minute. */
    unsigned resume_tries, resume_burst, resume_per_min;
    /* Games one address may start at once, then per minute; 0 = no limit. */
    unsigned max_games_per_min;
    /* Spectators one room takes (--max-spectators); 0 = no limit (in-process
     * tests that build a config by hand). */
    unsigned max_spectators;
    /* Arenas upcoming and running at once (--max-arenas; 0 = no limit), and
     * --arena-every's period in minutes (0 = none). */
    unsigned max_arenas;
    unsigned arena_every;
    /* Server-run bots at once (--max-bots), and how long a `quick` waits
     * before bots fill its race (--quick-bots, ms; 0 = never). */
    unsigned max_bots;
    uint64_t quick_bots_ms;
    /* Bots the requests from one address may have at once (--max-bots-per-ip;
     * 0 = no share but --max-bots), or SRV_BOTS_PER_IP_DEFAULT: an eighth of
     * max_bots, at least 7 (bot.c). */
    int max_bots_per_ip;
    /* Cluster mode: the NATS URL ("" = a single server) and this node's name. */
    char cluster[512];
    char node[64];
    /* --proxy-from: peers (load balancers) whose connections begin with a
     * PROXY protocol header naming the client; empty = none. */
    proto_cidr_list proxy_from;
    /* Browsers (web.c): the origins besides the server's own whose pages may
     * open a WebSocket (--allow-origin, comma-separated, "*" = any; "" =
     * none), and the addresses /metrics answers (--metrics-from). */
    char allow_origin[1024];
    proto_cidr_list metrics_from;
} srv_config;

#define SRV_BOTS_PER_IP_DEFAULT (-1)

void srv_log(srv_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void srv_log_set_level(srv_log_level level);
/* Lines a client can cause (its errors, refusals, cut-offs, failed resumes):
 * at most this many a second are logged, in all, however many clients and
 * addresses cause them. */
#define SRV_LOG_CLIENT_PER_S 5
/* srv_log for a line a client can cause: past the budget above the line is
 * counted instead, and the count logged (one line at most once a second)
 * with the next line logged or by srv_log_client_flush(). Cannot fail. */
void srv_log_client(srv_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Logs the count of client lines left out, if any and if none was reported
 * in the last second; the sweep timer calls it. */
void srv_log_client_flush(void);

/* ------------------------------------------------------- shared buffers --- */

/* One serialised message, shared by every connection it is written to. */
typedef struct srv_buf {
    unsigned refs;
    size_t len;
    char *data;
} srv_buf;

/* Takes ownership of a malloc'd data. Returns NULL (and frees data) if
 * memory runs out, or if data is NULL. */
srv_buf *srv_buf_take(char *data, size_t len);
static inline srv_buf *srv_buf_ref(srv_buf *b) {
    b->refs++;
    return b;
}
void srv_buf_unref(srv_buf *b);

/* ------------------------------------------------------------- messages --- */

typedef enum srv_msg_type {
    SRV_MSG_WELCOME,
    SRV_MSG_QUEUED,
    SRV_MSG_ROOM,
    SRV_MSG_START,
    SRV_MSG_STATE,
    SRV_MSG_END,
    SRV_MSG_PLAYER,
    SRV_MSG_LEFT,
    SRV_MSG_ROOMS,
    SRV_MSG_PONG,
    SRV_MSG_BYE,
    SRV_MSG_ERROR,
    SRV_MSG_HISTORY,
    SRV_MSG_REPLAY,
    /* registered, leaderboard, profile (version 4): JSON only for now. */
    SRV_MSG_ACCOUNT,
    /* No protocol message (json NULL, JSON transports send nothing): the room
     * changed in a way only its view shows (a player left an ended race). */
    SRV_MSG_VIEW,
} srv_msg_type;

/* What a player is told: the JSON line for JSON connections, and what a text
 * connection needs to draw it without parsing JSON. */
typedef struct srv_msg {
    srv_msg_type type;
    srv_buf *json;           /* the line; may be NULL if it could not be built */
    proto_err error;         /* SRV_MSG_ERROR */
    const char *text;        /* SRV_MSG_ERROR: the message; others: optional note */
    uint64_t subject;        /* STATE: the mover; PLAYER: whose connection; END: winner */
    bool moved;              /* STATE */
    proto_end_reason reason; /* END (its ranking, seed and salt are the view's) */
    /* ROOM, START, STATE, PLAYER, END, VIEW: the room as it is now (borrowed:
     * a receiver that keeps it takes a reference); NULL if memory ran out. */
    srv_view *view;
    srv_rooms *rooms; /* ROOMS: the rows (borrowed likewise), or NULL */
    /* START to a seated player who wants one (text mode): its seat's resume
     * code, else "". */
    char resume_code[9];
    bool closes; /* ERROR: the connection is closed after it */
    /* HISTORY (newest first) and REPLAY (one): the finished games the line
     * was encoded from, valid while the message is delivered. */
    const struct proto_game_record *const *games;
    int ngames;
    /* A journal position (journal_game_end) that must be durable before this
     * message, and everything sent after it to the same client, is written:
     * an `end` reveals the seed, so it waits for its record. 0 = at once. */
    uint64_t durable_at;
} srv_msg;

/* Counters for /metrics (server/metrics.c writes them out). Gauges such as
 * open connections are counted at scrape time instead. */
#define SRV_METRICS_ERRORS 32 /* room for every proto_err */
/* race2048_move_seconds' buckets (bounds in metrics.c), the last one +Inf. */
#define SRV_MOVE_BUCKETS 14
typedef struct srv_metrics {
    uint64_t started_ns; /* uv_hrtime() at start, for the uptime */
    uint64_t games_started;
    uint64_t games_finished[PROTO_END_REASONS]; /* by proto_end_reason */
    uint64_t moves;                             /* moves that changed a board */
    uint64_t errors[SRV_METRICS_ERRORS];
    uint64_t slow_consumers;
    uint64_t bytes_in, bytes_out;
    uint64_t connections; /* accepted since start */
    uint64_t http_requests;
    uint64_t ws_upgrades;
    /* Text spectators' screens: made, and sent again from a rendering made
     * for another spectator with the same screen shape (fanout.h). */
    uint64_t text_screens_rendered, text_screens_shared;
    /* race2048_move_seconds: moves read from this node's clients that changed
     * a board, by the time from the request's decoding to its `state` handed
     * to the room's players (not bots' moves, nor moves of another node's
     * room). move_started_ns is uv_hrtime() when the move request being
     * handled was decoded (session.c), 0 while none is; room_move takes it. */
    uint64_t move_started_ns;
    uint64_t move_buckets[SRV_MOVE_BUCKETS]; /* not cumulative; see metrics.c */
    uint64_t move_sum_ns;
} srv_metrics;

/* Counts an error sent to a client. */
static inline void srv_metrics_error(srv_metrics *m, proto_err code) {
    if ((unsigned)code < SRV_METRICS_ERRORS) m->errors[code]++;
}

/* Random bytes from the OS. Returns 0 or a negative libuv error. */
int srv_random(void *buf, size_t len);
/* A server seed (ChaCha20, 256 bits): 32 bytes from the OS, or with has_seed
 * the SHA-256 of "race2048:SEED:K", so that tests get repeatable games. */
eng_seed srv_seed_make(bool has_seed, uint32_t seed, uint64_t k);
/* Writes 2 * n lowercase hex digits of n random bytes plus a NUL into out. */
int srv_random_hex(char *out, size_t n);

#endif /* RACE2048_BASE_H */
