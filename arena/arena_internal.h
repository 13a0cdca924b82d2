/* arena_internal.h - the arena's state and the helpers its files share (not for the
 * server). */
#ifndef RACE2048_ARENA_INTERNAL_H
#define RACE2048_ARENA_INTERNAL_H

#include "arena.h"

/* Times are Unix ms from 1970 to the year 10000: sums of them and the waits
 * (at most a day) never overflow. */
#define ARENA_TIME_MAX INT64_C(253402300800000)
#define ARENA_WAIT_MAX (86400 * INT64_C(1000))

/* One entrant; entrants are never removed, so an index names one for good. */
typedef struct arena_entrant {
    uint64_t id;
    char name[ARENA_NAME_MAX + 1];
    int64_t points;
    int races;
    int wins;
    int streak;
    arena_state state;
    bool sent_away;    /* racing, and not to come back to the pool after it */
    int64_t since_ms;  /* waiting since */
    uint64_t race;     /* racing in */
    int race_entrants; /* entrants of that race, to check its result */
    uint32_t pos;      /* index in arena.order */
} arena_entrant;

struct arena {
    arena_config config;
    uint64_t next_race;      /* the number the next race formed gets; >= 1 */
    arena_entrant *entrants; /* count of cap, in the order they joined */
    size_t count;
    size_t cap;
    uint32_t *order; /* count entrant indices, best standing first */
    uint32_t *pool;  /* pool_count indices of waiting entrants, standing order */
    size_t pool_count;
    size_t racing;       /* entrants in the state ARENA_RACING */
    uint64_t revision;   /* grows with every change a row shows */
    arena_group *groups; /* cap of them: pairing's output */
    uint32_t *slots;     /* id -> index + 1 (0: empty), open addressing */
    size_t slot_mask;    /* slots has slot_mask + 1 entries, a power of 2 >= 2 cap */
};

/* Is entrant i strictly better than j on points, wins and fewer races? */
bool arena__key_better(const arena *a, uint32_t i, uint32_t j);
bool arena__key_equal(const arena *a, uint32_t i, uint32_t j);
/* The total order of the standings: the key, then the earlier joined first. */
bool arena__before(const arena *a, uint32_t i, uint32_t j);

/* Moves entrant i to its place in the order after its key changed. */
void arena__order_move(arena *a, uint32_t i);
/* Entrant i (not waiting) goes into the pool, waiting since now_ms. */
void arena__go_waiting(arena *a, uint32_t i, int64_t now_ms);

/* The index of the entrant with that id, or -1. */
long arena__find(const arena *a, uint64_t id);
/* Makes room for one more entrant. 0 or ARENA_ERR_NOMEM (then nothing changed). */
int arena__reserve(arena *a, size_t need);
/* Puts entrant i (room reserved, id new) in the id index. */
void arena__index(arena *a, uint32_t i);

/* Do the racing entrants make whole races: for every race, as many entrants
 * racing in it as each of them says it has? False also if no memory. */
bool arena__races_whole(const arena *a);

void arena__pool_insert(arena *a, uint32_t i);
void arena__pool_remove(arena *a, uint32_t i);

#endif
