/* game.h - the game's own state: players, rooms, matchmaking queues, resume codes,
 * its indexes and its clock. The game talks only to players (player.h). */
#ifndef RACE2048_GAME_H
#define RACE2048_GAME_H

#include "accounts.h"
#include "daily.h"
#include "base.h"
#include "player.h"

struct journal;
struct room;
struct lobby_queue;

/* What the game asks of the loop it runs on, registered by the layer that
 * runs the loop (the transports): the game never calls up into them. */
typedef struct game_clock {
    /* True while the loop has not read input since the process was paused
     * (SIGSTOP, a frozen VM): a timer that expires players must wait. */
    bool (*paused)(void *ctx);
    /* The loop turn, which the spectators' per-turn share counts in. */
    uint64_t (*turn)(void *ctx);
    void *ctx;
} game_clock;

/* Server-run bots, registered by the layer that runs them (bot.c): the game
 * seats what make() returns like any player. */
typedef struct game_bots {
    /* A new bot of level 1-5 (a player with a sink of its own), counted
     * against owner's address (the player whose request seats it; NULL:
     * none), or NULL when room_for would refuse or memory runs out. */
    srv_player *(*make)(void *ctx, int level, const srv_player *owner);
    /* Whether n more bots may be made for owner now: 0; -1 when --max-bots
     * would be passed; -2 when owner's address would pass its share
     * (--max-bots-per-ip). */
    int (*room_for)(void *ctx, const srv_player *owner, int n);
    void *ctx;
} game_bots;

/* Cluster mode: whether another node runs a room with this code, registered
 * by the layer that knows the other nodes (remote.c). */
typedef struct game_code_check {
    bool (*taken)(void *ctx, const char *code);
    void *ctx;
} game_code_check;

/* Cluster mode: more player ids when a block is used up, registered by the
 * cluster's layer; it sets the next id and the limit (0: none). */
typedef struct game_ids {
    bool (*more)(void *ctx, uint64_t *next, uint64_t *limit);
    void *ctx;
} game_ids;

typedef struct game {
    uv_loop_t *loop;
    const srv_config *cfg;   /* the process's one config, read-only: srv.cfg */
    srv_metrics *metrics;    /* counters the game adds to */
    struct journal *journal; /* the record; NULL until it is open */
    eng_tables *tables;
    game_clock clock;
    game_bots bots;
    game_code_check code_taken;
    /* Cluster mode: this node's number (room codes carry it), else 0. */
    unsigned node_number;
    /* Matchmaking's wait for --quick-bots: runs while anyone is queued. */
    uv_timer_t quick_timer;
    bool quick_timer_ready;
    srv_link players;
    srv_link rooms;
    /* The rooms `rooms` lists, oldest first, so the reply costs the same
     * however many solo games and ended races there are. */
    srv_link waiting_rooms, running_rooms;
    /* The `rooms` reply, made once and sent until a listed room changes,
     * and its rows (for text mode). */
    srv_buf *rooms_reply;
    srv_rooms *rooms_rows;
    uint64_t rooms_gen; /* counts the changes (the cluster's directory follows it) */
    /* Loop time (ms) when rooms_reply was made. */
    uint64_t rooms_made_at;
    /* Matchmaking: one queue per settings (lobby.c), so that a `quick`
     * looks only at players who want the same race. */
    struct lobby_queue *queues;
    srv_player *by_token;           /* every player, by resume token */
    struct resume_entry *by_resume; /* players' resume codes, by code (resume.c) */
    /* The game-wide pace of resume-code attempts (resume.c). */
    uint64_t resume_window_start;
    int resume_window_attempts;
    struct room *by_code; /* rooms with a code (not solo, not closing) */
    uint64_t next_id;
    uint64_t id_limit; /* next_id must stay below it (0: no limit) */
    game_ids ids;
    uint64_t seeds_made; /* server seeds so far: the --seed derivation's counter */
    /* Rooms whose broadcasts still go out to spectators, a share per turn
     * (fanout.c); the idle handle runs while the list is not empty. */
    /* Accounts (issue 27): in cluster mode every account of the cluster
     * (accounts_kv.c keeps them current); made durable through the
     * journal (an `account` record at register, ratings in the finished
     * games' records, snapshots at compaction). accounts_ready: acct_init
     * succeeded. */
    acct_store accounts;
    bool accounts_ready;
    /* The daily challenge's boards (with the accounts), and the test-only shift
     * of its clock: RACE2048_TEST_DAY_OFFSET days, read by game_init_accounts. */
    daily_boards daily;
    int64_t daily_offset_ms;
    /* The arenas (arena_host.c), made on first use; NULL until then. */
    struct arena_hosts *arenas;
    /* Cluster mode: every finished game of an account, made a change the
     * cluster's copy of the account takes (accounts_kv.c); NULL on one node. */
    void (*account_changed)(void *ctx, const acct_change *c);
    /* Cluster mode: a daily entry begun (r NULL) or finished, for the
     * cluster's boards (same ctx); NULL on one node. */
    void (*daily_changed)(void *ctx, int32_t day, int size, const acct_account *a,
                          const daily_result *r);
    /* Cluster mode: a `daily` that passed this node's checks, to be granted
     * once in the cluster (one game per account, day and size on every
     * node); the claimer then calls lobby_daily_claimed or answers p itself
     * (same ctx). NULL on one node: the game starts at once. */
    void (*daily_claim)(void *ctx, srv_player *p, int32_t day,
                        const proto_settings *settings);
    void *account_changed_ctx;
    uv_idle_t fanout_idle;
    bool fanout_ready; /* fanout_idle and fanouts are set up (on first use) */
    srv_link fanouts;
} game;

/* Sets up an empty game on loop with cfg (copied); metrics and tables are
 * borrowed. The journal and clock are set by the caller. */
void game_init(game *g, uv_loop_t *loop, const srv_config *cfg, srv_metrics *metrics,
               eng_tables *tables);
/* Sets up the empty accounts table (the process does, before the journal is
 * read; a game without one refuses `register` and every key). False if memory
 * runs out. */
bool game_init_accounts(game *g);
/* Now for the daily challenge: Unix ms, shifted by the test-only offset. */
int64_t game_daily_now_ms(const game *g);
/* An account's daily game begun (r NULL) or finished: to the journal, and in
 * cluster mode to the cluster's boards. */
void game_daily_entry(game *g, int32_t day, int size, const acct_account *a,
                      const daily_result *r);
/* Cluster mode: a finished game another node recorded (taken over) as the
 * changes the cluster's copies of its accounts take, one per account seat,
 * as room_end makes them (a change already applied counts once); nothing
 * unless the account_changed hook is set. */
struct proto_game_record;
void game_account_changes_of(game *g, const struct proto_game_record *rec);
/* Frees what game_init and the game's life left (after room_close_all). */
void game_free(game *g);

/* A listed room came, went, started or changed its player count: the
 * `rooms` reply must be made again. */
static inline void game_rooms_changed(game *g) {
    g->rooms_gen++;
    if (g->rooms_reply) srv_buf_unref(g->rooms_reply);
    g->rooms_reply = NULL;
    srv_rooms_unref(g->rooms_rows);
    g->rooms_rows = NULL;
}

/* Writes the game's gauges (rooms by state, solo games) for /metrics. */
struct metrics_out;
void game_write_metrics(struct metrics_out *o, void *g);

/* A fresh server seed for a race or an unseeded solo game (--seed makes
 * the K-th one repeatable, for tests). */
eng_seed game_next_seed(game *g);

/* The loop turn (for per-turn shares); 0 if no clock is registered. */
static inline uint64_t game_turn(const game *g) {
    return g->clock.turn ? g->clock.turn(g->clock.ctx) : 0;
}

/* True while the loop has not read input since a pause: a timer that
 * expires players then re-arms t to run cb again shortly and the caller
 * returns at once. t may be NULL (a repeating timer skips this run). */
bool game_defer_until_io(game *g, uv_timer_t *t, uv_timer_cb cb);

#endif
