/* arena_standings.c - the standings read: ranks shared by ties, rows, an entrant's own.
 */
#include "arena_internal.h"

#include <string.h>

/* The rank of the entrant at position pos: one more than those strictly
 * better, found by bisection (they are a prefix of the order). */
static int rank_at(const arena *a, size_t pos) {
    const uint32_t i = a->order[pos];
    size_t lo = 0, hi = pos;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (arena__key_better(a, a->order[mid], i))
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)lo + 1;
}

static void fill_row(const arena *a, uint32_t i, int rank, arena_row *row) {
    const arena_entrant *e = &a->entrants[i];
    row->rank = rank;
    row->id = e->id;
    memcpy(row->name, e->name, sizeof row->name);
    row->points = e->points;
    row->races = e->races;
    row->wins = e->wins;
    row->streak = e->streak;
    row->waiting = e->state == ARENA_WAITING;
}

int arena_rank(const arena *a, uint64_t id) {
    const long i = arena__find(a, id);
    return i < 0 ? 0 : rank_at(a, a->entrants[i].pos);
}

bool arena_row_of(const arena *a, uint64_t id, arena_row *row) {
    const long i = arena__find(a, id);
    if (i < 0) return false;
    fill_row(a, (uint32_t)i, rank_at(a, a->entrants[i].pos), row);
    return true;
}

size_t arena_standings(const arena *a, size_t first, arena_row *rows, size_t max) {
    size_t n = 0;
    int rank = 0;
    for (size_t pos = first; pos < a->count && n < max; pos++, n++) {
        const uint32_t i = a->order[pos];
        if (n == 0)
            rank = rank_at(a, pos);
        else if (!arena__key_equal(a, a->order[pos - 1], i))
            rank = (int)pos + 1;
        fill_row(a, i, rank, &rows[n]);
    }
    return n;
}
