/* arena_check.c - verifies an arena's internal invariants (for tests and debugging). */
#include "arena_internal.h"

#include <stdlib.h>

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
    size_t waiting = 0;
    for (size_t i = 0; i < a->count; i++) {
        const arena_entrant *e = &a->entrants[i];
        if (arena__find(a, e->id) != (long)i) return false;
        if (e->points < 0 || e->wins < 0 || e->wins > e->races || e->streak < 0 ||
            e->streak > e->wins)
            return false;
        if (e->state == ARENA_WAITING) waiting++;
        if (e->state != ARENA_RACING && e->sent_away) return false;
        if (e->state == ARENA_RACING &&
            (e->race < 1 || e->race >= a->next_race || e->race_entrants < 1 ||
             e->race_entrants > a->config.players))
            return false;
    }
    /* The pool: exactly the waiting entrants, strictly sorted. */
    if (waiting != a->pool_count) return false;
    for (size_t k = 0; k < a->pool_count; k++) {
        const uint32_t i = a->pool[k];
        if (i >= a->count || a->entrants[i].state != ARENA_WAITING) return false;
        if (k > 0 && !arena__before(a, a->pool[k - 1], i)) return false;
    }
    return true;
}
