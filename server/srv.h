/* srv.h - the server's shared types: configuration, players, shared buffers, messages,
 * lists. */
#ifndef RACE2048_SRV_H
#define RACE2048_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine.h"
#include "conn_timer.h"
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
} srv_config;

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

/* ------------------------------------------------------------- entities --- */

struct srv;
struct conn;
struct room;

/* A player identity: it outlives a connection while its race runs (resume). */
typedef struct srv_player {
    srv_link link; /* in srv.players */
    struct srv *srv;
    uint64_t id;
    char name[PROTO_NAME_MAX + 1];
    char token[33]; /* 128 random bits as hex: the resume secret; "" if only
                       its hash is known (restored from the journal) */
    bool welcomed;  /* has been sent its welcome */
    bool queued;    /* waiting in matchmaking */
    /* Its connection shows a resume code (text mode): the game gives its
     * seats one. Nobody else's seat has a code (fewer codes to guess). */
    bool wants_resume_code;
    /* A human's resume code for its current race seat ("" for none: not
     * in srv.by_resume), see resume.h. */
    char resume_code[9];
    int seat; /* its index in room->seats */
    proto_settings queue_key;
    struct conn *conn;         /* NULL while disconnected */
    struct room *room;         /* the room or game it has a seat in, or NULL */
    struct room *watching;     /* the room it spectates, or NULL */
    struct lobby_queue *queue; /* the queue for queue_key while queued */
    /* Restored players: SHA-256 of the token, 64 hex digits (malloc'd, kept
     * only by the few restored from the journal), else NULL. */
    char *token_hash;
    srv_link queue_link;     /* in queue->waiting while queued */
    UT_hash_handle hh_token; /* in srv.by_token, keyed by token */
    UT_hash_handle hh_resume;
    unsigned watch_slot; /* its index in watching->fan.slots (fanout.c) */
    /* Fields are ordered without holes: a player fits a 304-byte malloc
     * chunk (idle memory, issue 9). */
} srv_player;

struct addr_entry;

/* --host may name several addresses (localhost: 127.0.0.1 and ::1). */
#define SRV_MAX_LISTENERS 16

/* Counters for /metrics (server/metrics.c writes them out). Gauges such as
 * open connections are counted at scrape time instead. */
#define SRV_METRICS_ERRORS 32 /* room for every proto_err */
typedef struct srv_metrics {
    uint64_t started_ns; /* uv_hrtime() at start, for the uptime */
    uint64_t games_started;
    uint64_t games_finished[4]; /* by proto_end_reason */
    uint64_t moves;             /* moves that changed a board */
    uint64_t errors[SRV_METRICS_ERRORS];
    uint64_t slow_consumers;
    uint64_t bytes_in, bytes_out;
    uint64_t connections; /* accepted since start */
    uint64_t http_requests;
    uint64_t ws_upgrades;
    /* Text spectators' screens: made, and sent again from a rendering made
     * for another spectator with the same screen shape (fanout.h). */
    uint64_t text_screens_rendered, text_screens_shared;
} srv_metrics;

/* The server: one per process, reachable from every handle via loop->data. */
typedef struct srv {
    uv_loop_t *loop;
    srv_config cfg;
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
    /* The loop turn (conn.c): input waiting for its turn, output to flush. */
    uv_idle_t turn_idle;       /* runs while input waits: poll must not block */
    uv_prepare_t turn_prepare; /* before poll: flush, note the poll timeout */
    uv_check_t turn_check;     /* after poll: flush, detect a pause, next turn */
    srv_link input_list;
    srv_link flush_list;
    /* Connections whose next entry waits for the journal (a durable `end`):
     * they rejoin flush_list when it syncs. */
    srv_link held_list;
    uint64_t turn;
    unsigned reads_this_turn, reads_last_turn; /* connections read from, per turn */
    uint64_t prepare_ms;                       /* monotonic ms when poll was entered */
    int poll_timeout;                          /* the timeout it was given, -1 = none */
    uint64_t check_ms;                         /* monotonic ms after the last poll */
    unsigned io_behind; /* turns left to read input that came during a pause */
    /* Rooms whose broadcasts still go out to spectators, a share per turn
     * (fanout.c); the idle handle runs while the list is not empty. */
    uv_idle_t fanout_idle;
    bool fanout_ready; /* fanout_idle and fanouts are set up (on first use) */
    srv_link fanouts;
    /* File descriptors: connections beyond fd_capacity are refused. */
    unsigned fd_capacity;
    /* Listeners whose next connection waits: not even a refusal fits. */
    uv_stream_t *accept_paused[2 * SRV_MAX_LISTENERS];
    int npaused;
    uint64_t fd_log_ms;       /* rate limit for "out of descriptors" logs */
    struct addr_entry *addrs; /* open connections per address (addr.c) */
    srv_link players;
    srv_link rooms;
    /* The rooms `rooms` lists, oldest first, so the reply costs the same
     * however many solo games and ended races there are. */
    srv_link waiting_rooms, running_rooms;
    /* The `rooms` reply, made once and sent until a listed room changes,
     * and its rows (for text mode). */
    struct srv_buf *rooms_reply;
    srv_rooms *rooms_rows;
    /* Matchmaking: one queue per settings (lobby.c), so that a `quick`
     * looks only at players who want the same race. */
    struct lobby_queue *queues;
    srv_player *by_token;  /* every player, by resume token */
    srv_player *by_resume; /* players with a resume code, by code (resume.c) */
    /* The server-wide pace of resume-code attempts (resume.c). */
    uint64_t resume_window_start;
    int resume_window_attempts;
    struct room *by_code; /* rooms with a code (not solo, not closing) */
    uint64_t next_id;
    uint64_t seeds_made; /* server seeds so far: the --seed derivation's counter */
    eng_tables *tables;
    struct journal *journal;
    bool stopping;
    srv_metrics metrics;
    srv_buf *metrics_cache; /* this turn's /metrics (metrics.c) */
    uint64_t metrics_cache_turn;
    /* Addresses (entries of addrs) that failed resumes or started games
     * lately, oldest first (guard.c). */
    struct addr_entry *guard_oldest, *guard_newest;
    unsigned guard_active;
} srv;

/* A listed room came, went, started or changed its player count: the
 * `rooms` reply must be made again. */
static inline void srv_rooms_changed(srv *s) {
    if (s->rooms_reply) srv_buf_unref(s->rooms_reply);
    s->rooms_reply = NULL;
    srv_rooms_unref(s->rooms_rows);
    s->rooms_rows = NULL;
}

/* Frees p if nothing holds it any more: no connection and no seat. Takes it
 * out of the queue and any room it watches first. */
void srv_player_release(srv_player *p);

/* Delivers m to p's connection, if it has one. */
void srv_send(srv_player *p, const srv_msg *m);
/* Sends a one-off message built by an encoder (takes the line). */
void srv_send_line(srv_player *p, srv_msg_type type, char *line, size_t len);
/* Counts an error sent to a client, for /metrics. */
void srv_count_error(srv *s, proto_err code);
/* Sends error code with message to p. */
void srv_send_error(srv_player *p, proto_err code, const char *message);

/* True while the loop has not read input since the process was paused
 * (SIGSTOP, a frozen VM): a timer that expires clients (idle, grace, move
 * timeouts) must then wait. It re-arms t to run cb again shortly, and returns
 * true; the caller returns at once. t may be NULL (a repeating timer simply
 * skips this run). */
bool srv_defer_until_io(srv *s, uv_timer_t *t, uv_timer_cb cb);

/* Random bytes from the OS. Returns 0 or a negative libuv error. */
int srv_random(void *buf, size_t len);
/* A fresh server seed (ChaCha20, 256 bits) for a race or an unseeded solo
 * game: 32 bytes from the OS, or with --seed N the SHA-256 of
 * "race2048:N:K" for the K-th seed (from 0), so tests get repeatable games. */
eng_seed srv_next_seed(srv *s);
/* Writes 2 * n lowercase hex digits of n random bytes plus a NUL into out. */
int srv_random_hex(char *out, size_t n);

#endif
