/* arena.h - one arena's rules, pure: standings, points and streaks, pairing, snapshots.
 *
 * protocol/README.md, Arenas, is the contract. This module keeps one arena's
 * entrants and standings, applies a finished race's places, and forms races
 * from the pool of waiting entrants. It does no I/O, reads no clock (every
 * time is Unix milliseconds passed in) and keeps no globals: the server owns
 * the rooms, the timers and the journal, and calls in here.
 *
 * Entrants are named by an opaque 64-bit id the server chooses (unique within
 * the arena). An entrant is in one of three states: away (not in the pool:
 * disconnected, left, or busy elsewhere), waiting (in the pool since a time),
 * or racing (in a race this module formed, named by a race number it chose).
 * Points change only through arena_apply_race, so the pool's order by
 * standing never changes while its members wait.
 *
 * Costs, n entrants: joining and leaving the pool O(log n) plus a memmove of
 * the pool; a race's result O(n) (a memmove of the ranking per entrant);
 * a rank O(log n); the top k rows O(k + log n); a pairing round O(pool).
 *
 * Failure: every function that can fail returns 0 (or ARENA_APPLIED_BEFORE)
 * or a negative arena_err, or NULL, and then has changed nothing. */
#ifndef RACE2048_ARENA_H
#define RACE2048_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARENA_MIN_PLAYERS  2
#define ARENA_MAX_PLAYERS  8      /* players in one race, bots included */
#define ARENA_NAME_MAX     16     /* an entrant's name, as a player name (1..16 bytes) */
#define ARENA_TOP          10     /* rows of the `arena` update */
#define ARENA_FINAL_ROWS   100    /* rows of the final standings */
#define ARENA_PAIR_WAIT_MS 5000   /* two who waited this long race */
#define ARENA_BOTS_WAIT_MS 15000  /* one who waited this long alone races bots */
#define ARENA_MAX_ENTRANTS 100000 /* what this module accepts; the server caps lower */
#define ARENA_NEVER        INT64_MAX /* arena_pairing.next_ms when nothing can form */

typedef enum arena_err {
    ARENA_OK = 0,
    ARENA_APPLIED_BEFORE = 1,  /* arena_apply_race: that race counted already */
    ARENA_ERR_INVALID = -1,    /* an argument out of range */
    ARENA_ERR_NOMEM = -2,      /* an allocation failed */
    ARENA_ERR_FULL = -3,       /* max_entrants reached */
    ARENA_ERR_NO_ENTRANT = -4, /* no entrant has that id */
    ARENA_ERR_NO_RACE = -5,    /* no race of that number runs or ran */
    ARENA_ERR_STATE = -6,      /* the entrant is not in a state that allows it */
} arena_err;

/* A constant English text for an arena_err. */
const char *arena_strerror(int err);

typedef struct arena_config {
    int players;          /* P: most players in a race, 2..8 */
    int64_t starts_ms;    /* no race forms before; >= 0 */
    int64_t ends_ms;      /* no race forms at or after; > starts_ms, before year 10000 */
    int64_t pair_wait_ms; /* ARENA_PAIR_WAIT_MS; tests shorten it; 0 to a day */
    int64_t bots_wait_ms; /* ARENA_BOTS_WAIT_MS; tests shorten it; 0 to a day */
    size_t max_entrants;  /* 1..ARENA_MAX_ENTRANTS */
} arena_config;

/* The config of the contract for an arena from starts to ends with P players. */
arena_config arena_config_default(int players, int64_t starts_ms, int64_t ends_ms);

typedef enum arena_state {
    ARENA_AWAY = 0,
    ARENA_WAITING = 1,
    ARENA_RACING = 2,
} arena_state;

/* One row of the standings, as the `arena` message shows it. */
typedef struct arena_row {
    int rank; /* 1 is best; rows tied on points, wins and races share it */
    uint64_t id;
    char name[ARENA_NAME_MAX + 1];
    int64_t points;
    int races;
    int wins;
    int streak;   /* wins in a row, the last race included */
    bool waiting; /* in the pool now */
} arena_row;

typedef struct arena arena;

/* A new arena with no entrants; NULL if the config is out of range (or no
 * memory). */
arena *arena_new(const arena_config *config);
void arena_free(arena *a);
const arena_config *arena_get_config(const arena *a);

/* ---- entrants and the pool ---- */

/* Enters the entrant (new: no points; known: renamed) and puts it in the pool,
 * waiting since now_ms, unless it is racing (then it stays racing and will
 * come back to the pool after its race). Allowed before the arena starts;
 * after its end the server answers `arena_over` itself. Fails with INVALID
 * (name not 1..16 bytes), FULL, NOMEM. */
int arena_join(arena *a, uint64_t id, const char *name, int64_t now_ms);

/* Puts a known entrant back in the pool (reconnected, asked to), waiting since
 * now_ms; already waiting: unchanged. Fails NO_ENTRANT; STATE while racing. */
int arena_wait(arena *a, uint64_t id, int64_t now_ms);

/* Takes the entrant out of the pool (arena_leave, disconnect, busy elsewhere);
 * its points stay. A racing entrant stays in its race but does not come back
 * to the pool after it. Fails NO_ENTRANT. */
int arena_away(arena *a, uint64_t id);

size_t arena_entrant_count(const arena *a);
size_t arena_pool_count(const arena *a);
/* Entrants in a race now: the arena is over once its end has come and this is 0. */
size_t arena_racing_count(const arena *a);

/* A number that grows whenever anything the standings' rows show changes (and
 * sometimes when nothing does): the server sends `arena` updates when it has
 * moved since the last, at most once a second. Not kept by snapshots. */
uint64_t arena_revision(const arena *a);

/* The entrant's state (ARENA_AWAY if unknown) and, when racing, its race. */
arena_state arena_entrant_state(const arena *a, uint64_t id, uint64_t *race);

/* ---- standings ---- */

/* The entrant's rank, or 0 if no entrant has that id. */
int arena_rank(const arena *a, uint64_t id);

/* The entrant's own row (`you`); false if no entrant has that id. */
bool arena_row_of(const arena *a, uint64_t id, arena_row *row);

/* Up to max rows of the standings from position first (0 is the leader), in
 * order; returns how many. arena_standings(a, 0, rows, ARENA_TOP) is the
 * `arena` update's top 10, ARENA_FINAL_ROWS the final standings. */
size_t arena_standings(const arena *a, size_t first, arena_row *rows, size_t max);

/* ---- races ---- */

/* One entrant's line in a race's result. */
typedef struct arena_place {
    uint64_t id;
    int place; /* 1 is best, a full tie shares the better place; 1..players */
    bool left; /* left the race or disconnected past the grace period: 0 points */
} arena_place;

/* Applies race `race`'s result: players is P', the players of the race, bots
 * included (bots are not listed; they earn nothing); places lists every
 * entrant of the race once. Each entrant gets P' - place points (0 if it
 * left), doubled for a win (place 1) after two wins in a row; a race and a
 * win are counted, the streak grows with a win and ends otherwise. Entrants
 * that did not leave and were not sent away go back to the pool, waiting since
 * now_ms; leavers go away. Returns ARENA_APPLIED_BEFORE, changing nothing,
 * for a race that was applied (or abandoned) before. Fails NO_RACE for a race
 * number never formed, INVALID for players outside 2..8, an entrant count not
 * that of the race, a place out of 1..players, an entrant not in that race. */
int arena_apply_race(arena *a, uint64_t race, int players, const arena_place *places,
                     size_t n, int64_t now_ms);

/* Gives up race `race` (its room could not be made): its n entrants, all
 * listed, go back to the pool waiting since now_ms (away if sent away), and
 * the race counts for nobody. Fails like arena_apply_race. */
int arena_abandon_race(arena *a, uint64_t race, const uint64_t *ids, size_t n,
                       int64_t now_ms);

/* Forms race `race` again from the journal, as arena_pair formed it: its n
 * entrants (away or waiting, listed in standing order) become racing in it,
 * and the next race formed is numbered race + 1. So the server may journal
 * each race formed and each result rather than whole snapshots, and replay
 * them after the last snapshot. Returns ARENA_APPLIED_BEFORE, changing
 * nothing, for a race below the next number (formed before). Fails
 * NO_ENTRANT, INVALID for n outside 1..players, a duplicate id or a racing
 * entrant. */
int arena_form_race(arena *a, uint64_t race, const uint64_t *ids, size_t n);

/* The `time_limit` of a race formed at now_ms: the whole seconds left until
 * the end, rounded down (0 at or after the end). */
int arena_seconds_left(const arena *a, int64_t now_ms);

/* ---- pairing ---- */

/* A race that pairing formed: its entrants in standing order, then `bots`
 * level-3 bots to fill it (the server makes them). */
typedef struct arena_group {
    uint64_t race; /* the race's number in this arena, 1, 2, ... */
    int entrants;  /* 1..players */
    int bots;      /* players - 1 for a lone entrant, else 0 */
    uint64_t ids[ARENA_MAX_PLAYERS];
} arena_group;

typedef struct arena_pairing {
    const arena_group *groups; /* owned by the arena, valid until its next change */
    size_t count;
    int64_t next_ms; /* when a race could form next if the pool does not
                        change (arm one timer), or ARENA_NEVER */
} arena_pairing;

/* One pairing round at now_ms: while the arena runs (starts <= now < ends),
 * the pool, in standing order, forms races of `players` from the top; the rest
 * (fewer than `players`) form one race once two of them have waited
 * pair_wait_ms, and one entrant alone forms a race with bots once it has waited
 * bots_wait_ms. Waiting counts from the arena's start at the earliest. The
 * grouped entrants become racing. Cannot fail; O(pool). */
arena_pairing arena_pair(arena *a, int64_t now_ms);

/* ---- snapshot and restore ---- */

/* One entrant as plain values. */
typedef struct arena_snapshot_entrant {
    uint64_t id;
    char name[ARENA_NAME_MAX + 1];
    int64_t points;
    int races;
    int wins;
    int streak;
    arena_state state;
    bool sent_away;    /* racing, and not to come back to the pool after it */
    int64_t since_ms;  /* waiting: since when */
    uint64_t race;     /* racing: the race */
    int race_entrants; /* racing: how many entrants that race has */
} arena_snapshot_entrant;

/* The whole arena as plain values, for the server's journal. */
typedef struct arena_snapshot {
    arena_config config;
    uint64_t next_race;               /* the number the next race gets */
    size_t count;                     /* entrants, in the order they joined */
    arena_snapshot_entrant *entrants; /* count of them */
} arena_snapshot;

/* A snapshot of the arena (free with arena_snapshot_free); NULL if no memory. */
arena_snapshot *arena_snapshot_new(const arena *a);
void arena_snapshot_free(arena_snapshot *s);

/* An arena rebuilt from a snapshot (the same standings, pool and races); NULL
 * if the snapshot is inconsistent (a bad config, a duplicate id, a state out
 * of range, a race number not below next_race, a race with more or fewer
 * entrants racing in it than it says ...) or no memory. */
arena *arena_restore(const arena_snapshot *s);

/* ---- checking ---- */

/* True if the arena's internal invariants hold (the order sorted and a
 * permutation, the pool exactly the waiting entrants and sorted, the id
 * index, every race whole). O(n log n); for tests. */
bool arena_check(const arena *a);

#endif
