/* arena_check.c - verifies an arena's internal invariants (for tests, and restore's
 * races). */
#include "arena_internal.h"

#include <stdlib.h>

/* A racing entrant's race and the size it says the race has. */
typedef struct race_seat {
    uint64_t race;
    int entrants;
} race_seat;

static int by_race(const void *x, const void *y) {
    const race_seat *p = x, *q = y;
    if (p->race != q->race) return p->race < q->race ? -1 : 1;
    return (p->entrants > q->entrants) - (p->entrants < q->entrants);
}

bool arena__races_whole(const arena *a) {
    if (a->racing == 0) return true;
    race_seat *seats = malloc(a->racing * sizeof *seats);
    if (!seats) return false;
    size_t n = 0;
    for (size_t i = 0; i < a->count; i++) {
        const arena_entrant *e = &a->entrants[i];
        if (e->state != ARENA_RACING) continue;
        if (n == a->racing) {
            free(seats);
            return false;
        }
        seats[n++] = (race_seat){e->race, e->race_entrants};
    }
    bool whole = n == a->racing;
    qsort(seats, n, sizeof *seats, by_race);
    /* Sorted, each race is a run: its length must be what every seat says. */
    for (size_t k = 0; whole && k < n;) {
        size_t run = 1;
        while (k + run < n && seats[k + run].race == seats[k].race)
            run++;
        whole = seats[k].entrants == (int)run && seats[k + run - 1].entrants == (int)run;
        k += run;
    }
    free(seats);
    return whole;
}

bool arena_check(const arena *a) {
    if (!a || a->next_race < 1 || a->count > a->cap || a->pool_count > a->count ||
        a->count > a->config.max_entrants || a->slot_mask + 1 < 2 * a->cap)
        return false;
    /* The order: a permutation, strictly sorted, with pos pointing back. */
    for (size_t k = 0; k < a->count; k++) {
        const uint32_t i = a->order[k];
        if (i >= a->count || a->entrants[i].pos != k) return false;
        if (k > 0 && !arena__before(a, a->order[k - 1], i)) return false;
    }
    size_t waiting = 0, racing = 0;
    for (size_t i = 0; i < a->count; i++) {
        const arena_entrant *e = &a->entrants[i];
        if (arena__find(a, e->id) != (long)i) return false;
        if (e->points < 0 || e->wins < 0 || e->wins > e->races || e->streak < 0 ||
            e->streak > e->wins)
            return false;
        if (e->state == ARENA_WAITING) waiting++;
        if (e->state == ARENA_RACING) racing++;
        if (e->state != ARENA_RACING && e->sent_away) return false;
        if (e->state == ARENA_RACING &&
            (e->race < 1 || e->race >= a->next_race || e->race_entrants < 1 ||
             e->race_entrants > a->config.players))
            return false;
    }
    if (racing != a->racing || !arena__races_whole(a)) return false;
    /* The pool: exactly the waiting entrants, strictly sorted. */
    if (waiting != a->pool_count) return false;
    for (size_t k = 0; k < a->pool_count; k++) {
        const uint32_t i = a->pool[k];
        if (i >= a->count || a->entrants[i].state != ARENA_WAITING) return false;
        if (k > 0 && !arena__before(a, a->pool[k - 1], i)) return false;
    }
    return true;
}
