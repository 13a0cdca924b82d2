/* arena_pair.c - one pairing round: races formed from the pool by the contract's waits.
 */
#include "arena_internal.h"

#include <assert.h>
#include <string.h>

/* When the entrant's wait began, as pairing counts it: not before the start
 * (and not after ARENA_TIME_MAX, whatever time the server passed). */
static int64_t wait_start(const arena *a, uint32_t i) {
    const int64_t since = a->entrants[i].since_ms;
    if (since > ARENA_TIME_MAX) return ARENA_TIME_MAX;
    return since > a->config.starts_ms ? since : a->config.starts_ms;
}

/* Entrant i becomes racing in race `race` of n entrants. */
static void start_racing(arena *a, uint32_t i, uint64_t race, size_t n) {
    arena_entrant *e = &a->entrants[i];
    e->state = ARENA_RACING;
    a->racing++;
    e->sent_away = false;
    e->race = race;
    e->race_entrants = (int)n;
}

/* A group of pool[first .. first + n) and `bots` bots; they become racing. */
static void form(arena *a, arena_pairing *out, size_t first, size_t n, int bots) {
    assert(n >= 1 && n <= (size_t)a->config.players && out->count < a->cap);
    arena_group *g = &a->groups[out->count++];
    memset(g, 0, sizeof *g);
    g->race = a->next_race++;
    g->entrants = (int)n;
    g->bots = bots;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = a->pool[first + k];
        assert(a->entrants[i].state == ARENA_WAITING);
        g->ids[k] = a->entrants[i].id;
        start_racing(a, i, g->race, n);
    }
}

int arena_form_race(arena *a, uint64_t race, const uint64_t *ids, size_t n) {
    if (!ids || race == 0 || race == UINT64_MAX || n < 1 || n > (size_t)a->config.players)
        return ARENA_ERR_INVALID;
    if (race < a->next_race) return ARENA_APPLIED_BEFORE;
    uint32_t idx[ARENA_MAX_PLAYERS];
    for (size_t k = 0; k < n; k++) {
        const long i = arena__find(a, ids[k]);
        if (i < 0) return ARENA_ERR_NO_ENTRANT;
        if (a->entrants[i].state == ARENA_RACING) return ARENA_ERR_INVALID;
        for (size_t j = 0; j < k; j++)
            if (idx[j] == (uint32_t)i) return ARENA_ERR_INVALID;
        idx[k] = (uint32_t)i;
    }
    for (size_t k = 0; k < n; k++) {
        if (a->entrants[idx[k]].state == ARENA_WAITING) arena__pool_remove(a, idx[k]);
        start_racing(a, idx[k], race, n);
    }
    a->next_race = race + 1;
    a->revision++;
    return ARENA_OK;
}

arena_pairing arena_pair(arena *a, int64_t now_ms) {
    arena_pairing out = {.groups = a->groups, .count = 0, .next_ms = ARENA_NEVER};
    const arena_config *c = &a->config;
    /* now_ms >= starts_ms >= 0 below, and every wait start is in [0, TIME_MAX]:
     * the differences and sums cannot overflow. */
    if (a->pool_count == 0 || now_ms >= c->ends_ms) return out;
    if (now_ms < c->starts_ms) {
        out.next_ms = c->starts_ms;
        return out;
    }

    /* Full races from the top, so that the leaders race each other. */
    const size_t players = (size_t)c->players;
    const size_t full = a->pool_count / players;
    for (size_t g = 0; g < full; g++)
        form(a, &out, g * players, players, 0);
    const size_t first = full * players, rest = a->pool_count - first;

    /* The rest: two who waited pair_wait, or one alone who waited bots_wait.
     * start1 <= start2 are the two earliest wait starts among them. */
    int64_t start1 = INT64_MAX, start2 = INT64_MAX;
    for (size_t k = first; k < a->pool_count; k++) {
        const int64_t s = wait_start(a, a->pool[k]);
        if (s < start1) {
            start2 = start1;
            start1 = s;
        } else if (s < start2) {
            start2 = s;
        }
    }
    int64_t next = ARENA_NEVER;
    size_t kept = rest;
    if (rest >= 2) {
        if (now_ms - start2 >= c->pair_wait_ms) {
            form(a, &out, first, rest, 0);
            kept = 0;
        } else {
            next = start2 + c->pair_wait_ms;
        }
    } else if (rest == 1) {
        if (now_ms - start1 >= c->bots_wait_ms) {
            form(a, &out, first, 1, c->players - 1);
            kept = 0;
        } else {
            next = start1 + c->bots_wait_ms;
        }
    }
    memmove(a->pool, &a->pool[first], kept * sizeof *a->pool);
    a->pool_count = kept;
    if (out.count > 0) a->revision++; /* their rows no longer wait */
    out.next_ms = next < c->ends_ms ? next : ARENA_NEVER;
    return out;
}
