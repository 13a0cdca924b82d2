/* arena_snapshot.c - an arena as plain values and back, for the server's journal. */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

arena_snapshot *arena_snapshot_new(const arena *a) {
    arena_snapshot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->config = a->config;
    s->next_race = a->next_race;
    s->count = a->count;
    s->entrants = calloc(a->count ? a->count : 1, sizeof *s->entrants);
    if (!s->entrants) {
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < a->count; i++) {
        const arena_entrant *e = &a->entrants[i];
        s->entrants[i] = (arena_snapshot_entrant){
            .id = e->id,
            .points = e->points,
            .races = e->races,
            .wins = e->wins,
            .streak = e->streak,
            .state = e->state,
            .sent_away = e->state == ARENA_RACING && e->sent_away,
            .since_ms = e->state == ARENA_WAITING ? e->since_ms : 0,
            .race = e->state == ARENA_RACING ? e->race : 0,
            .race_entrants = e->state == ARENA_RACING ? e->race_entrants : 0,
        };
        memcpy(s->entrants[i].name, e->name, sizeof e->name);
    }
    return s;
}

void arena_snapshot_free(arena_snapshot *s) {
    if (!s) return;
    free(s->entrants);
    free(s);
}

/* Sorts n entrant indices in standing order: a merge sort, as qsort takes no
 * context. False (idx unchanged) if no memory. */
static bool sort_standing(const arena *a, uint32_t *idx, size_t n) {
    if (n < 2) return true;
    uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return false;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            const size_t mid = lo + width < n ? lo + width : n;
            const size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = arena__before(a, idx[j], idx[i]) ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *tmp);
    }
    free(tmp);
    return true;
}

static bool entrant_is_valid(const arena_snapshot_entrant *e, const arena_snapshot *s) {
    const size_t len = strnlen(e->name, sizeof e->name);
    if (len < 1 || len > ARENA_NAME_MAX) return false;
    if (e->points < 0 || e->races < 0 || e->wins < 0 || e->wins > e->races ||
        e->streak < 0 || e->streak > e->wins)
        return false;
    /* A win is worth at most 2 (players - 1): more points cannot be earned. */
    if (e->points > (int64_t)e->races * 2 * (ARENA_MAX_PLAYERS - 1)) return false;
    switch (e->state) {
    case ARENA_AWAY:
    case ARENA_WAITING:
        return !e->sent_away;
    case ARENA_RACING:
        return e->race >= 1 && e->race < s->next_race && e->race_entrants >= 1 &&
               e->race_entrants <= s->config.players;
    }
    return false;
}

arena *arena_restore(const arena_snapshot *s) {
    if (!s || s->next_race < 1 || s->count > s->config.max_entrants ||
        (s->count && !s->entrants))
        return NULL;
    arena *a = arena_new(&s->config);
    if (!a) return NULL;
    a->next_race = s->next_race;
    if (arena__reserve(a, s->count) != ARENA_OK) goto fail;
    for (size_t i = 0; i < s->count; i++) {
        const arena_snapshot_entrant *se = &s->entrants[i];
        if (!entrant_is_valid(se, s) || arena__find(a, se->id) >= 0) goto fail;
        arena_entrant *e = &a->entrants[a->count];
        *e = (arena_entrant){
            .id = se->id,
            .points = se->points,
            .races = se->races,
            .wins = se->wins,
            .streak = se->streak,
            .state = se->state,
            .sent_away = se->sent_away,
            .since_ms = se->since_ms,
            .race = se->race,
            .race_entrants = se->race_entrants,
            .pos = (uint32_t)a->count,
        };
        memcpy(e->name, se->name, sizeof e->name);
        a->order[a->count] = (uint32_t)a->count;
        a->count++;
        if (e->state == ARENA_RACING) a->racing++;
        /* The index only: order and pool are sorted once below, not per entrant. */
        arena__index(a, (uint32_t)(a->count - 1));
    }
    if (!sort_standing(a, a->order, a->count)) goto fail;
    for (size_t k = 0; k < a->count; k++) {
        a->entrants[a->order[k]].pos = (uint32_t)k;
        if (a->entrants[k].state == ARENA_WAITING) a->pool[a->pool_count++] = (uint32_t)k;
    }
    if (!sort_standing(a, a->pool, a->pool_count) || !arena__races_whole(a)) goto fail;
    return a;
fail:
    arena_free(a);
    return NULL;
}
