/* journal.h - the durable record: game events in, NDJSON records out with group commits
 * on the thread pool; the index of finished games for history and replay; the
 * records read back at start-up. It knows no room: events are plain structs. */
#ifndef RACE2048_JOURNAL_H
#define RACE2048_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine.h"
#include "message.h"
#include "record.h"
#include "base.h" /* srv_link */

/* Finished games kept in memory for `history` and `replay`. */
#define JOURNAL_INDEX_GAMES 1000

typedef struct journal journal;
struct daily_result;
struct daily_boards;
/* One game's state in the journal: the game keeps the handle from its start
 * to its end (NULL when memory ran out, or without a journal: every event
 * function takes NULL and does nothing). */
typedef struct jrn_game jrn_game;

/* Counters for the logs, tests and benchmarks. */
typedef struct journal_stats {
    uint64_t bytes;   /* bytes written and synced */
    uint64_t commits; /* group commits (one write + one fdatasync each) */
    uint64_t errors;  /* failed writes or syncs */
    uint64_t records; /* records appended */
    uint64_t compactions;
} journal_stats;

typedef struct journal_config {
    const char *path; /* the file; "" or NULL: in memory only (history and replay work) */
    uint64_t sync_ms; /* longest wait before buffered records are synced */
    uint64_t max;     /* size at which the file is compacted */
    /* The game's next player id, read when a compaction writes its head
     * record so that ids never repeat after a restart. May be NULL. */
    const uint64_t *next_player_id;
    /* Cluster mode: called on a worker thread after each commit's write and
     * fdatasync, with exactly the bytes the file got. After a compaction the
     * batch starts with the compacted journal whole: its first base_len bytes
     * (0: none) replace everything replicated before them, so that the
     * cluster holds what the journal holds. Returns 0 once they are
     * replicated; 1 when they need not be now (they are kept and sent with a
     * later commit, the commit is durable at once); -1 on failure (kept and
     * sent again, base and all; the commit is durable only once a later call
     * succeeds; more than a few MiB waiting are dropped, the log says so,
     * and nothing is durable until the node fences: journal_replication_
     * broken). NULL: no replication. */
    int (*replicate)(void *ctx, const char *bytes, size_t len, size_t base_len);
    void *replicate_ctx;
    /* Accounts (issue 27), or NULL: journal_open rebuilds them from the
     * records, and each compaction writes one `account` record per account
     * (journal_accounts.h). */
    struct acct_store *accounts;
    /* The daily challenge's boards (with accounts), or NULL: journal_open
     * rebuilds them from the `daily_entry` records, and each compaction
     * writes one per entry of the days it keeps. */
    struct daily_boards *daily;
    /* Test-only: the daily challenge's clock shift (game.h daily_offset_ms). */
    int64_t daily_offset_ms;
} journal_config;

/* ---------------------------------------------------------------- events --- */

/* A game starts (the `start` record, protocol/record.h): its id (set by
 * journal_game_start; a restored game's own id), room ("" and solo for a
 * solo game), settings, seed, salt, commit, seats in seat order, start time
 * and daily day. */
typedef proto_start_seat jrn_seat_info;
typedef proto_start_record jrn_start;

/* A `seat` record's event. The game writes left, over and disconnected
 * (protocol/README.md's journal file); recovery acts on left only. */
typedef enum jrn_seat_event {
    JRN_SEAT_LEFT,
    JRN_SEAT_OVER,
    JRN_SEAT_DISCONNECTED,
    JRN_SEAT_CONNECTED,
} jrn_seat_event;

/* The game ended: as its `end` says it. */
typedef struct jrn_end {
    proto_end_reason reason;
    uint64_t winner;             /* 0: none */
    const proto_player *results; /* ranked, best first (copied) */
    int nresults;
    int64_t ended_ms; /* Unix ms */
    /* Version 4 (copied): the seats of accounts, and a rated race's updates
     * (every player, in results order; none for another game). */
    const proto_record_account *accounts;
    int naccounts;
    const proto_record_rating *ratings;
    int nratings;
} jrn_end;

/* Writes the start record; start->game gets the game's new id. Returns the
 * handle, or NULL (no journal, or memory ran out: the game goes unrecorded). */
jrn_game *journal_game_start(journal *j, jrn_start *start);
/* A move of seat (its index) that changed its board. */
void journal_move(jrn_game *g, int seat, eng_dir dir);
void journal_seat(jrn_game *g, int seat, jrn_seat_event event);
/* Appends the finished-game record and indexes it for history and replay
 * (listed once it is durable). Returns the record's position: the `end` may
 * go out once journal_durable_pos() has reached it (0: at once). */
uint64_t journal_game_end(jrn_game *g, const jrn_end *end);
/* A new account (register): appends its `account` record. Returns the
 * record's position: `registered` may go out once journal_durable_pos() has
 * reached it (0: at once, without a journal file). */
struct acct_account;
uint64_t journal_account(journal *j, const struct acct_account *a);

/* The daily challenge's seed, salt and commit of a day (days from 1970-01-01,
 * UTC) and board size. */
typedef struct jrn_daily_seed {
    eng_seed seed;
    char salt[PROTO_SALT_TEXT];
    char commit[PROTO_COMMIT_TEXT];
} jrn_daily_seed;
/* The day's and size's: the one recorded, or, the first time, fresh with a
 * random salt, recorded as a `daily` record (appended before the first daily
 * game's start record, so durable with it). Returns 0, or -1 if memory or
 * randomness ran out. */
int journal_daily(journal *j, int32_t day, int size, const eng_seed *fresh,
                  jrn_daily_seed *out);
/* A `daily_entry` record: account a began its daily game of that day and size
 * (r NULL), or finished it with r. Appended before the game's start or end
 * record, so durable with it. */
void journal_daily_entry(journal *j, int32_t day, int size, const struct acct_account *a,
                         const struct daily_result *r);
/* Learns a day's seed and salt from a daily game's start record (one taken
 * over from another node): recorded as a `daily` record if it is new here.
 * Returns 0, or -1 if memory ran out. */
int journal_daily_learn(journal *j, int32_t day, int size, const eng_seed *seed,
                        const char *salt);
/* The recorded one of that day and size, if any. */
bool journal_daily_get(const journal *j, int32_t day, int size, jrn_daily_seed *out);
/* Arenas (journal_arena.c): line is an `arena` record (record.h) of that
 * code, the arena's whole state now: appended, and kept as its latest (what
 * compaction writes and start-up reads). Nothing is kept if j is NULL. */
void journal_arena(journal *j, const char *code, const char *line, size_t len);
/* An arena no longer kept (an hour after its end): compaction leaves it out. */
void journal_arena_drop(journal *j, const char *code);
/* line is an `arena_ev` record of that code (what happened since its last
 * `arena` record): appended, and kept after that record until the next. */
void journal_arena_event(journal *j, const char *code, const char *line, size_t len);
/* The arenas read back at start-up (and kept since): their latest lines. */
size_t journal_arena_count(const journal *j);
const char *journal_arena_line(const journal *j, size_t i, size_t *len);
/* Arena i's `arena_ev` lines since its latest `arena` record, in order
 * (len 0: none). */
const char *journal_arena_events(const journal *j, size_t i, size_t *len);
/* Whether rec is a daily game whose day is not over: journal_history and
 * journal_replay leave it out (its record holds the day's seed). */
bool journal_daily_secret(const journal *j, const proto_game_record *rec);
/* Whether seed is a recorded daily seed, and of which day. */
bool journal_daily_of_seed(const journal *j, const eng_seed *seed, int32_t *day);
/* A rematch room with code `to` was made from the finished game. */
void journal_rematch(jrn_game *from, const char *to);
/* The game is gone: forgets it (buffered moves are kept; a game that did
 * not end, at shutdown, resumes from them later). NULL is fine. */
void journal_game_free(jrn_game *g);

/* ------------------------------------------------------------- recovery --- */

/* A game the file describes that has no finished record: what recovery
 * rebuilds. */
typedef struct jrn_pending {
    jrn_start start;
    char *
        moves[PROTO_PLAYERS_MAX]; /* each seat's moves, letters u d l r (not NUL-ended) */
    size_t nmoves[PROTO_PLAYERS_MAX];
    bool left[PROTO_PLAYERS_MAX]; /* a `seat` record said the seat left */
    uint64_t remaining_ms;        /* of its time limit from now, >= 1; 0: no limit */
} jrn_pending;

/* What journal_open read. */
typedef struct jrn_recovery {
    jrn_pending *games; /* in start order */
    size_t ngames;
    uint64_t next_player_id; /* past every player id recorded */
    uint64_t next_game;      /* past every game id recorded; 0 without a file */
    size_t records, bad, finished;
    bool torn;           /* a torn last record was cut off */
    size_t bytes;        /* the file's length up to its last whole record */
    uint64_t started_ns; /* uv_hrtime() once the file was read, for the log */
} jrn_recovery;

/* Opens (creating) the file, repairs a torn tail, indexes the finished games
 * and fills *rec with the running ones (free it with journal_recovery_free).
 * Then starts the commit timer. Returns 0, or -1 after printing why to
 * stderr (*out is then set or NULL; journal_close takes either). Call
 * before the server accepts connections. */
int journal_open(journal **out, uv_loop_t *loop, const journal_config *cfg,
                 jrn_recovery *rec);
void journal_recovery_free(jrn_recovery *rec);
/* Recovery: a handle for a pending game with its own id (no record is
 * written); its moves replayed through journal_move(), then
 * journal_game_restored() marks them as already in the file. */
jrn_game *journal_game_restore(journal *j, const jrn_start *start);
void journal_game_restored(jrn_game *g);
/* Takeover: a handle for another node's running game, with its own id
 * (which does not move this journal's game counter), whose start record is
 * written into this journal as a new record; its moves replayed through
 * journal_move() are written as new records too (no journal_game_restored). */
jrn_game *journal_game_adopt(journal *j, const jrn_start *start);
/* Takeover: another node's finished game (its record, one line with its
 * '\n', as jread_records found it) is appended to this journal and listed in
 * its history, unless a game with its id is listed already. */
void journal_adopt_finished(journal *j, const char *line, size_t len);
/* True if a game with this id has a handle and has not ended. */
bool journal_game_running(const journal *j, uint64_t id);
/* Game ids start at base or past it (cluster mode: the node's and
 * incarnation's range, so that no two nodes or starts hand out one id). */
void journal_set_next_game(journal *j, uint64_t base);
/* The file's path ("" in memory only), for logs. */
const char *journal_path(const journal *j);

/* ---------------------------------------------------------- commits etc. --- */

/* After the loop has stopped: writes and syncs what is still buffered,
 * synchronously, and frees everything. NULL is fine. */
void journal_close(journal *j);
/* The server is stopping: commits what is buffered now, and each commit's
 * successor at once, instead of on the timer, so that `end`s held for the
 * journal go out before the connections are cut off. */
void journal_commit_now(journal *j);
/* How far the journal's records are on disk (see journal_game_end). */
uint64_t journal_durable_pos(const journal *j);
/* Cluster mode: a node must not show moves it could not replicate beyond the
 * sync window (PROTOCOL.md, many servers as one): a takeover after it is cut
 * off would lose them. The position a message about what was just recorded
 * (a move's `state`) must wait for, as `end` waits for its record: 0 (at
 * once) while every record made more than the window ago is durable, which
 * in cluster mode means replicated; else the end of the oldest commit that
 * is not. The window is sync_ms plus the slack a commit's write, fsync and
 * acknowledgement take on a healthy node, so the normal path never waits. */
#define JOURNAL_SHOW_SLACK_MS 20
uint64_t journal_show_pos(const journal *j);
/* Cluster mode, fencing: games whose finished record the cluster's stream
 * does not have (their `end` never went out; another node runs them on)
 * leave the history index. */
void journal_fence(journal *j);
/* Cluster mode: records were dropped before they could be replicated (more
 * than a few MiB waited): nothing is durable any more, and the node must
 * fence (takeover.c does), after which this is false again. */
bool journal_replication_broken(const journal *j);
/* The position of the last record appended (durable once
 * journal_durable_pos() reaches it). */
uint64_t journal_appended_pos(const journal *j);
/* The one durability hook: every subscriber's cb(ctx) runs each time
 * journal_durable_pos() grows, so whoever held a message back for it
 * (connections' output queues, the cluster's outboxes to other nodes) sends
 * it. The caller owns sub (no allocation) and keeps it until it
 * unsubscribes; a callback may unsubscribe its own sub, not another. Without
 * a journal (j NULL) nothing ever waits and cb never runs. */
typedef struct journal_durable_sub {
    srv_link link;
    void (*cb)(void *ctx);
    void *ctx;
} journal_durable_sub;
void journal_on_durable(journal *j, journal_durable_sub *sub, void (*cb)(void *ctx),
                        void *ctx);
void journal_durable_unsubscribe(journal_durable_sub *sub);
journal_stats journal_get_stats(const journal *j);
/* Writes the journal's counters for /metrics (ctx: the journal). */
struct metrics_out;
void journal_write_metrics(struct metrics_out *o, void *ctx);

/* ------------------------------------------------------ history, replay --- */

/* The `limit` most recent durable finished games, newest first, into out
 * (room for limit). The records stay valid until the next game ends. Returns
 * how many, or -1 without a journal. */
int journal_history(const journal *j, int limit, const proto_game_record **out);
/* Durable finished game id, or NULL if it is not kept. Valid as above. */
const proto_game_record *journal_replay(const journal *j, uint64_t id);

/* ---------------------------------------------------------------- tools --- */

/* Lower-case hex SHA-256 of a resume token (what the journal keeps). */
int journal_token_hash(const char *token, char out[65]);
/* Wall-clock time in ms since the Unix epoch. */
int64_t journal_wall_ms(void);

#endif
