/* journal.h - the durable record: NDJSON records, group commits on the thread pool,
 * and the in-memory index of finished games for history and replay. */
#ifndef RACE2048_JOURNAL_H
#define RACE2048_JOURNAL_H

#include "srv.h"

struct room;

/* Finished games kept in memory for `history` and `replay`. */
#define JOURNAL_INDEX_GAMES 1000

/* Counters for the logs, tests and benchmarks. */
typedef struct journal_stats {
    uint64_t bytes;   /* bytes written and synced */
    uint64_t commits; /* group commits (one write + one fdatasync each) */
    uint64_t errors;  /* failed writes or syncs */
    uint64_t records; /* records appended */
    uint64_t compactions;
} journal_stats;

/* Per-game journal state, owned by its room (room->jgame). */
typedef struct jrn_game jrn_game;

/* Makes s->journal. With cfg.journal "" the record stays in memory only
 * (history and replay still work). Otherwise opens (creating) the file,
 * repairs a torn tail, restores the running games it describes and starts
 * the commit timer. Returns 0, or -1 after printing why to stderr. Call
 * before the server accepts connections. */
int journal_open(srv *s);
/* After the loop has stopped: writes and syncs what is still buffered,
 * synchronously, and frees everything. */
void journal_close(srv *s);
/* The server is stopping: commits what is buffered now, and each commit's
 * successor at once, instead of on the timer, so that `end`s held for the
 * journal go out before the connections are cut off. */
void journal_commit_now(srv *s);

/* Game events, called by room.c. Each is a no-op for a room without a
 * jrn_game (memory ran out at its start). */
void journal_game_start(struct room *r, int64_t started_ms);
void journal_move(struct room *r, int seat, eng_dir dir);
/* event: "left", "over", "disconnected" or "connected". */
void journal_seat(struct room *r, int seat, const char *event);
/* The race ended with this `end` line: appends the finished-game record
 * and indexes it for history and replay (listed once it is durable).
 * Returns the record's position: the `end` may go out once
 * journal_durable_pos() has reached it (0: at once, nothing to wait for). */
uint64_t journal_game_end(struct room *r, const char *end_line, size_t len);
/* How far the journal's records are on disk (see journal_game_end). */
uint64_t journal_durable_pos(const srv *s);
/* cb runs each time journal_durable_pos() grows: the transports write what
 * they held back for it. */
void journal_on_durable(srv *s, void (*cb)(srv *s));
void journal_rematch(struct room *from, struct room *to);
/* The room is freed: forgets its state (buffered moves are kept). */
void journal_game_free(struct room *r);

/* The `history` reply for the `limit` most recent games (malloc'd line). */
char *journal_history(const struct journal *j, int limit, size_t *len);
/* The `replay` reply for game id, or NULL (with *len 0) if it is not
 * known; NULL with *len 1 if memory ran out. */
char *journal_replay(const struct journal *j, uint64_t id, size_t *len);

journal_stats journal_get_stats(const srv *s);
/* Writes the journal's counters for /metrics (ctx: the journal). */
struct metrics_out;
void journal_write_metrics(struct metrics_out *o, void *ctx);

/* For recovery (recover.c): indexes a finished-game record read from the
 * file (one line with its '\n'); notes a game id seen so new ids never
 * collide with it. */
void journal_index_add(srv *s, uint64_t game, const char *line, size_t len);
void journal_note_game(srv *s, uint64_t game);
/* False for a finished-game record in which no board changed (every move
 * string empty): such games are kept in the file but not indexed. */
bool journal_record_played(const char *line, size_t len);
/* Gives a restored room its game state with the id it had (no record is
 * written); after its moves are replayed through journal_move(),
 * journal_game_restored() marks them as already in the file. */
void journal_game_restore(struct room *r, uint64_t game, int64_t started_ms);
void journal_game_restored(struct room *r);

/* A room's seed as the journal and `end` write it (a JSON value), and back:
 * parse returns 0, or -1 if v is not a seed. */
void journal_seed_text(const struct room *r, char *out, size_t n);
int journal_seed_parse(struct room *r, const json_t *v);

/* Lower-case hex SHA-256 of a resume token (what the journal keeps). */
int journal_token_hash(const char *token, char out[65]);

/* Wall-clock time in ms since the Unix epoch. */
int64_t journal_wall_ms(void);

#endif
