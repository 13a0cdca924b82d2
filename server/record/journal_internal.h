/* journal_internal.h - what the record layer's journal files share: the journal's and a
 * game's state, and the functions one file calls in another (not for other layers). */
#ifndef RACE2048_JOURNAL_INTERNAL_H
#define RACE2048_JOURNAL_INTERNAL_H

#include "journal.h"

#include <assert.h>

#include "base.h" /* srv_log and the lists: shared services */
#include "byte_buf.h"
#include "daily.h"
#include "journal_read.h"

/* Finished games kept for `history` and `replay`: the most recent, up to a
 * count and a byte budget, so the index never grows without bound. */
#define INDEX_GAMES_MAX JOURNAL_INDEX_GAMES
#define INDEX_BYTES_MAX (16u << 20)
/* Records kept in memory while writes fail; beyond this new ones are dropped
 * (counted and logged) rather than let memory grow without bound. */
#define PENDING_MAX (64u << 20)
/* Records written but not yet replicated (cluster mode, NATS out of reach)
 * held back at most: past this they are dropped and `end`s go out again. */
#define UNREPLICATED_MAX (4u << 20)
/* Bytes buffered before a commit is started early (a burst of records). */
#define EARLY_COMMIT_BYTES (1u << 20)
/* Commits whose records are not durable yet that the replication lag is
 * tracked for; past this the newest are merged (which overstates the lag). */
#define LAG_MARKS 64

/* Room made for a seat's moves at its first (they are one byte each). */
#define MOVES_FIRST 64

/* One seat's moves: all of them (for the finished record) and how many are
 * already in a `moves` record. */
typedef struct jrn_seat {
    byte_buf moves;
    size_t flushed;
} jrn_seat;

struct jrn_game {
    journal *j;
    jrn_start start;   /* its id, settings, seed and seats, for the finished record */
    srv_link all_link; /* in journal.games */
    jrn_seat seats[PROTO_PLAYERS_MAX];
    srv_link dirty_link; /* in journal.dirty while it has unflushed moves */
    bool dirty;
    bool ended; /* its finished record is written */
};

/* One finished game in the index. */
typedef struct indexed {
    uint64_t pos; /* its record's journal position: listed once durable */
    proto_game_record *rec;
    size_t bytes; /* what it costs, for INDEX_BYTES_MAX */
} indexed;

struct journal {
    uv_loop_t *loop;
    bool on; /* a file is kept */
    int fd;
    int lock_fd; /* FILE.lock, locked for the process's life (lock_journal) */
    char path[4096];
    uint64_t max;                   /* compaction size (journal_config.max) */
    const uint64_t *next_player_id; /* the game's, for head records */
    uint64_t next_game;
    byte_buf pending;  /* records not yet handed to a write */
    byte_buf inflight; /* the records of the write in progress */
    size_t inflight_done;
    uint64_t good; /* file size up to the last whole record written */
    /* Positions in the stream of records ever appended (bytes, from 0 at
     * start-up): what was appended, what is in the file, what is synced.
     * `end` waits for its record's position to be durable. */
    uint64_t appended, written, durable;
    uint64_t inflight_pos; /* appended when the write in progress began */
    uint64_t sync_pos;     /* written when the sync in progress began */
    srv_link durable_subs; /* journal_durable_sub: told when `durable` grows */
    /* The file's size after the last compaction (or at start-up): the next
     * compaction waits until the file has doubled past it (see compact_maybe). */
    uint64_t base;
    bool busy;     /* a write, sync or truncate is in progress */
    bool failing;  /* the last attempt failed: log again only after a success */
    bool dropping; /* records are being dropped: PENDING_MAX is reached */
    bool hurry;    /* stopping: commit again as soon as a commit is done */
    uv_fs_t req;
    uv_timer_t timer;
    srv_link dirty;
    srv_link games;            /* every jrn_game: compaction keeps the running ones */
    uint64_t compact_retry_at; /* after a failed compaction: size to try again at */
    uv_work_t compact_work;
    struct compaction *compaction; /* the one in progress, or NULL */
    uv_idle_t compact_idle; /* a compaction's slices of account copies, a turn each */
    bool compact_idle_ready;
    /* Replication (journal_config.replicate): records written but not yet
     * replicated, the batch on its way, and the position it makes durable. */
    int (*replicate)(void *ctx, const char *bytes, size_t len, size_t base_len);
    void *replicate_ctx;
    byte_buf unreplicated, replicating;
    /* The first bytes of each that are a compacted journal, whole: they
     * replace everything replicated before them (0: none). */
    size_t unreplicated_base, replicating_base;
    /* Records were dropped unreplicated (past UNREPLICATED_MAX): nothing is
     * durable any more until the node fences (journal_fence): what waits
     * for them must never be shown. */
    bool replication_broken;
    uint64_t replicate_pos;
    int replicate_rc;
    bool replicate_failing; /* logged once until a replication succeeds */
    uv_work_t replicate_work;
    /* Replication lag (journal_show_pos): for each commit not durable yet,
     * when its first record was made and the position its end reaches,
     * oldest first; and when the first record not yet taken by a commit was
     * made (-1: none). */
    struct lag_mark {
        int64_t first_ms;
        uint64_t end;
    } lag[LAG_MARKS];
    size_t lag_first, lag_count;
    int64_t unflushed_since_ms;
    uint64_t show_window_ms;
    journal_stats stats;
    /* The daily challenge's seeds (`daily` records), one per day and size,
     * oldest first: kept by compaction for DAILY_KEEP_DAYS. */
    struct jrn_daily *dailies;
    struct daily_boards *daily; /* journal_config.daily */
    int64_t daily_offset_ms;
    size_t ndailies, dailies_cap;
    struct acct_store *accounts; /* journal_config.accounts */
    /* Arenas (journal_arena.c): each one's latest `arena` record. */
    struct jrn_arena *arenas;
    size_t narenas, arenas_cap;
    indexed *index; /* ring of recent finished games */
    size_t index_head, index_count, index_bytes;
};

/* How many days before today compaction keeps `daily` records: a revealed day's
 * games hold their seed themselves; the daily board shows it for this long. */
#define DAILY_KEEP_DAYS 7

typedef struct jrn_daily {
    int32_t day;
    int size;
    eng_seed seed;
    char salt[PROTO_SALT_TEXT];
    char commit[PROTO_COMMIT_TEXT];
} jrn_daily;

/* journal.c: the writer. */
/* Queues one whole record (a line with its '\n'). */
void jrn_append(journal *j, const char *line, size_t len);
/* Appends b's bytes as one record and frees b. */
void jrn_append_buf(journal *j, byte_buf *b);
/* Starts a group commit unless one is in progress. */
void jrn_commit_start(journal *j);
void jrn_on_commit_timer(uv_timer_t *t);
/* Records up to pos are on disk: durable once they are replicated too. */
void jrn_replicated_then_durable(journal *j, uint64_t pos);
/* The loop has stopped: writes what is pending synchronously. */
void jrn_write_pending_now(journal *j);

/* journal_durable.c: the replication lag's marks. */
void jrn_note_record(journal *j);
void jrn_mark_commit(journal *j);

/* journal_game.c */
/* Appends `moves` records for every game with moves not yet recorded. */
void jrn_flush_moves(journal *j);
/* A game id was seen: new games are numbered past it. */
void jrn_note_game(journal *j, uint64_t game);

/* journal_compact.c: starts a compaction once the file has reached its
 * threshold; true if one began. */
bool jrn_compact_maybe(journal *j);
/* A compaction still copying accounts on the loop is dropped (its records go
 * back to pending); one on the thread pool runs on. For journal_close. */
void jrn_compact_abandon(journal *j);

/* journal_arena.c: the `arena` records of data (the file at start-up), kept;
 * their lines appended to out (compaction): 0, or -1; and freed. */
void jrn_arenas_replay(journal *j, const char *data, size_t len);
int jrn_arenas_out(const journal *j, byte_buf *out);
void jrn_arenas_free(journal *j);

/* journal_daily.c */
/* A `daily` record's line, appended to out: 0, or -1 if memory ran out. */
int jrn_daily_line(const jrn_daily *d, byte_buf *out);
/* The `daily` and `daily_entry` records of data (the file at start-up). */
void jrn_dailies_replay(journal *j, const char *data, size_t len);
/* daily_each's callback for compaction: the `daily_entry` records of the days
 * kept, as plain records (encoded on the thread pool: proto_rec_put_daily_entry). */
typedef struct jrn_entries_out {
    int32_t keep_from;
    proto_daily_entry_record *entries; /* malloc'd, n of cap */
    size_t n, cap;
    bool bad;
} jrn_entries_out;
void jrn_entry_out(void *ctx, int32_t day, int size, const daily_entry *e);

/* journal_index.c */
void jrn_record_free(proto_game_record *rec);
/* Takes ownership of rec. */
void jrn_index_put(journal *j, uint64_t pos, proto_game_record *rec);
/* The k-th most recent indexed game. */
const indexed *jrn_index_at(const journal *j, size_t k);
void jrn_index_lines(journal *j, const jread_line *lines, size_t n);

/* The positions only grow, in this order: a record is appended, then
 * written, then durable (synced, and in cluster mode replicated). */
static inline void jrn_assert_positions(const journal *j) {
    assert(j->durable <= j->written && j->written <= j->appended);
    assert(j->lag_count <= LAG_MARKS && j->lag_first < LAG_MARKS);
    (void)j;
}

#endif
