/* daily.h - the daily challenge's boards in memory: per UTC day and board size, who
 * has played (one game per account, day and size) and the results in order.
 *
 * A board is made by its first game. An account's entry is made when its daily
 * game starts (daily_begin: from then on daily_played is true, even after a
 * `leave`), with its index node, so that daily_finish, called as the game's end is
 * recorded, cannot fail. The results are ordered in a rank_index: higher score,
 * then higher max tile, then fewer moves, then the earlier end (then the lower
 * game id, so the order is total). An entry costs about 190 bytes of RSS (the
 * entry with its uthash handle, its node, the table's buckets; measured by
 * `race2048-bench accounts` with 100,000 on one board). Days are numbered from 1970-01-01
 * (day 0), UTC; daily_prune drops the boards of days that need not be answered any more.
 * Single-threaded, no globals. */
#ifndef RACE2048_DAILY_H
#define RACE2048_DAILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounts.h"
#include "hash.h"
#include "rank_index.h"

typedef enum daily_status {
    DAILY_OK = 0,
    DAILY_PLAYED = -1,    /* the account has begun that day's game of that size */
    DAILY_NOT_BEGUN = -2, /* a result for a game daily_begin did not start */
    DAILY_FINISHED = -3,  /* that entry has its result already */
    DAILY_BAD_SIZE = -4,  /* a size outside 3..8 */
    DAILY_NO_MEMORY = -5
} daily_status;

/* One finished daily game, as the board orders it. */
typedef struct daily_result {
    uint32_t score;
    uint32_t max_tile;
    uint32_t moves;
    int64_t end_ms; /* Unix ms of the game's end */
    uint64_t game;  /* its id, for the row's `game` */
} daily_result;

/* One account's game of one board. */
typedef struct daily_entry {
    const acct_account *account; /* the key of the board's table */
    rank_node *node;             /* kept from daily_begin until it is ranked */
    bool finished;
    daily_result result; /* when finished */
    UT_hash_handle hh;
} daily_entry;

typedef struct daily_board {
    uint64_t key; /* day and size, see board_key */
    int32_t day;
    int size;
    daily_entry *entries; /* every account that began, by account */
    rank_index ranked;    /* the finished ones, best first */
    UT_hash_handle hh;
} daily_board;

typedef struct daily_boards {
    daily_board *boards; /* by key */
    uint64_t seed;       /* for the indexes' levels */
} daily_boards;

void daily_init(daily_boards *d, uint64_t seed);
void daily_free(daily_boards *d);

/* Whether a has begun the daily game of that day and size. */
bool daily_played(const daily_boards *d, int32_t day, int size, const acct_account *a);
/* Marks a as playing that day's game of that size: DAILY_OK, or DAILY_PLAYED,
 * DAILY_BAD_SIZE, DAILY_NO_MEMORY with nothing changed. */
int daily_begin(daily_boards *d, int32_t day, int size, const acct_account *a);
/* Puts a's result on the board: DAILY_OK, or DAILY_NOT_BEGUN, DAILY_FINISHED,
 * DAILY_BAD_SIZE with nothing changed. Never fails for want of memory. */
int daily_finish(daily_boards *d, int32_t day, int size, const acct_account *a,
                 const daily_result *r);

/* The board's ranked results: how many, a's 1-based rank (0 if none), and up to
 * max entries from a 1-based rank. An absent board has none. */
size_t daily_ranked(const daily_boards *d, int32_t day, int size);
size_t daily_rank(const daily_boards *d, int32_t day, int size, const acct_account *a);
size_t daily_top(const daily_boards *d, int32_t day, int size, size_t from,
                 const daily_entry **out, size_t max);

/* Calls fn for every entry of every board (finished or not), for a snapshot;
 * restoring is daily_begin, then daily_finish for a finished one. */
void daily_each(const daily_boards *d,
                void (*fn)(void *ctx, int32_t day, int size, const daily_entry *e),
                void *ctx);

/* Frees the boards of the days before day. */
void daily_prune(daily_boards *d, int32_t before_day);

/* Days from 1970-01-01 and "YYYY-MM-DD" (years 1970-9999): the day of a Unix time
 * in ms (UTC), the text of a day, and a day from text (false, *day untouched,
 * unless it is exactly a valid date). */
int32_t daily_day_of_ms(int64_t unix_ms);
void daily_day_format(int32_t day, char out[11]);
bool daily_day_parse(const char *text, int32_t *day);
/* Unix ms of the day's first instant (when the day before's seeds are revealed). */
int64_t daily_day_start_ms(int32_t day);

/* The board's order (on daily_entry pointers). */
int daily_cmp(const void *a, const void *b);

/* rank_check on every board, and every finished entry ranked. For tests. */
bool daily_check(const daily_boards *d);

#endif
