/* arena_race.c - a finished race applied: points, wins and streaks, and back to the pool.
 */
#include "arena_internal.h"

#include <assert.h>

/* Checks that ids[0..n) are exactly the entrants of race `race` and puts their
 * indices in idx. ARENA_OK, ARENA_APPLIED_BEFORE (none of them races in it
 * now) or an error. */
static int race_entrants(const arena *a, uint64_t race, const uint64_t *ids, size_t n,
                         uint32_t *idx) {
    if (race == 0 || race >= a->next_race) return ARENA_ERR_NO_RACE;
    if (n < 1 || n > ARENA_MAX_PLAYERS) return ARENA_ERR_INVALID;
    size_t in_race = 0;
    for (size_t k = 0; k < n; k++) {
        const long i = arena__find(a, ids[k]);
        if (i < 0) return ARENA_ERR_INVALID;
        for (size_t j = 0; j < k; j++)
            if (idx[j] == (uint32_t)i) return ARENA_ERR_INVALID;
        idx[k] = (uint32_t)i;
        const arena_entrant *e = &a->entrants[i];
        if (e->state == ARENA_RACING && e->race == race) {
            if (e->race_entrants != (int)n) return ARENA_ERR_INVALID;
            in_race++;
        }
    }
    if (in_race == 0) return ARENA_APPLIED_BEFORE;
    return in_race == n ? ARENA_OK : ARENA_ERR_INVALID;
}

/* After its race: back to the pool unless it left or was sent away. */
static void race_over(arena *a, uint32_t i, bool left, int64_t now_ms) {
    arena_entrant *e = &a->entrants[i];
    assert(e->state == ARENA_RACING && a->racing > 0);
    a->racing--;
    if (left || e->sent_away) {
        e->state = ARENA_AWAY;
        e->sent_away = false;
    } else {
        arena__go_waiting(a, i, now_ms);
    }
}

int arena_apply_race(arena *a, uint64_t race, int players, const arena_place *places,
                     size_t n, int64_t now_ms) {
    if (players < ARENA_MIN_PLAYERS || players > ARENA_MAX_PLAYERS || !places || n < 1 ||
        n > (size_t)players)
        return ARENA_ERR_INVALID;
    uint64_t ids[ARENA_MAX_PLAYERS] = {0};
    for (size_t k = 0; k < n; k++) {
        if (!places[k].left && (places[k].place < 1 || places[k].place > players))
            return ARENA_ERR_INVALID;
        ids[k] = places[k].id;
    }
    uint32_t idx[ARENA_MAX_PLAYERS];
    const int status = race_entrants(a, race, ids, n, idx);
    if (status != ARENA_OK) return status;

    for (size_t k = 0; k < n; k++) {
        arena_entrant *e = &a->entrants[idx[k]];
        e->races++;
        if (places[k].left) {
            e->streak = 0;
        } else if (places[k].place == 1) {
            /* A win after two wins in a row counts double. */
            const int64_t points = players - 1;
            e->points += e->streak >= 2 ? 2 * points : points;
            e->wins++;
            e->streak++;
        } else {
            e->points += players - places[k].place;
            e->streak = 0;
        }
        /* Racing, so not in the pool: the pool's order stays as it was. */
        arena__order_move(a, idx[k]);
    }
    for (size_t k = 0; k < n; k++)
        race_over(a, idx[k], places[k].left, now_ms);
    a->revision++;
    return ARENA_OK;
}

int arena_seconds_left(const arena *a, int64_t now_ms) {
    if (now_ms >= a->config.ends_ms) return 0;
    /* ends_ms - now_ms fits: ends_ms is at most ARENA_TIME_MAX. */
    if (now_ms < a->config.ends_ms - ARENA_TIME_MAX) return INT32_MAX;
    const int64_t s = (a->config.ends_ms - now_ms) / 1000;
    return s > INT32_MAX ? INT32_MAX : (int)s;
}

int arena_abandon_race(arena *a, uint64_t race, const uint64_t *ids, size_t n,
                       int64_t now_ms) {
    if (!ids) return ARENA_ERR_INVALID;
    uint32_t idx[ARENA_MAX_PLAYERS];
    const int status = race_entrants(a, race, ids, n, idx);
    if (status != ARENA_OK) return status;
    for (size_t k = 0; k < n; k++)
        race_over(a, idx[k], false, now_ms);
    a->revision++;
    return ARENA_OK;
}
