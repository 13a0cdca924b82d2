/* arena.c - one arena: its config, entrants, id index, the order of its standings, its
 * pool. */
#include "arena_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *arena_strerror(int err) {
    switch (err) {
    case ARENA_OK:
        return "ok";
    case ARENA_APPLIED_BEFORE:
        return "that race counted already";
    case ARENA_ERR_INVALID:
        return "an argument is out of range";
    case ARENA_ERR_NOMEM:
        return "out of memory";
    case ARENA_ERR_FULL:
        return "the arena has as many entrants as it takes";
    case ARENA_ERR_NO_ENTRANT:
        return "no entrant has that id";
    case ARENA_ERR_NO_RACE:
        return "no race of that number";
    case ARENA_ERR_STATE:
        return "the entrant is racing";
    }
    return "unknown arena error";
}

arena_config arena_config_default(int players, int64_t starts_ms, int64_t ends_ms) {
    return (arena_config){
        .players = players,
        .starts_ms = starts_ms,
        .ends_ms = ends_ms,
        .pair_wait_ms = ARENA_PAIR_WAIT_MS,
        .bots_wait_ms = ARENA_BOTS_WAIT_MS,
        .max_entrants = ARENA_MAX_ENTRANTS,
    };
}

static bool config_is_valid(const arena_config *c) {
    return c->players >= ARENA_MIN_PLAYERS && c->players <= ARENA_MAX_PLAYERS &&
           c->starts_ms >= 0 && c->starts_ms < c->ends_ms &&
           c->ends_ms <= ARENA_TIME_MAX && c->pair_wait_ms >= 0 &&
           c->pair_wait_ms <= ARENA_WAIT_MAX && c->bots_wait_ms >= 0 &&
           c->bots_wait_ms <= ARENA_WAIT_MAX && c->max_entrants >= 1 &&
           c->max_entrants <= ARENA_MAX_ENTRANTS;
}

arena *arena_new(const arena_config *config) {
    if (!config || !config_is_valid(config)) return NULL;
    arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->config = *config;
    a->next_race = 1;
    if (arena__reserve(a, 1) != ARENA_OK) {
        arena_free(a);
        return NULL;
    }
    return a;
}

void arena_free(arena *a) {
    if (!a) return;
    free(a->entrants);
    free(a->order);
    free(a->pool);
    free(a->groups);
    free(a->slots);
    free(a);
}

const arena_config *arena_get_config(const arena *a) {
    return &a->config;
}

/* ---- the order of the standings ---- */

bool arena__key_better(const arena *a, uint32_t i, uint32_t j) {
    const arena_entrant *x = &a->entrants[i], *y = &a->entrants[j];
    if (x->points != y->points) return x->points > y->points;
    if (x->wins != y->wins) return x->wins > y->wins;
    return x->races < y->races;
}

bool arena__key_equal(const arena *a, uint32_t i, uint32_t j) {
    const arena_entrant *x = &a->entrants[i], *y = &a->entrants[j];
    return x->points == y->points && x->wins == y->wins && x->races == y->races;
}

bool arena__before(const arena *a, uint32_t i, uint32_t j) {
    if (arena__key_better(a, i, j)) return true;
    if (arena__key_better(a, j, i)) return false;
    return i < j;
}

/* Where entrant i goes among idx[0..n) (sorted, i not in it): the first place
 * whose entrant comes after i. */
static size_t insertion_point(const arena *a, const uint32_t *idx, size_t n, uint32_t i) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (arena__before(a, idx[mid], i))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* O(n): two memmoves and the positions of those in between. */
void arena__order_move(arena *a, uint32_t i) {
    const size_t n = a->count;
    const size_t from = a->entrants[i].pos;
    assert(from < n && a->order[from] == i);
    memmove(&a->order[from], &a->order[from + 1], (n - 1 - from) * sizeof *a->order);
    const size_t to = insertion_point(a, a->order, n - 1, i);
    memmove(&a->order[to + 1], &a->order[to], (n - 1 - to) * sizeof *a->order);
    a->order[to] = i;
    const size_t lo = from < to ? from : to, hi = from < to ? to : from;
    for (size_t k = lo; k <= hi; k++)
        a->entrants[a->order[k]].pos = (uint32_t)k;
}

/* ---- the id index ---- */

static size_t slot_of(uint64_t id, size_t mask) {
    /* splitmix64's finaliser: ids may be sequential or chosen by anyone. */
    id ^= id >> 30;
    id *= UINT64_C(0xbf58476d1ce4e5b9);
    id ^= id >> 27;
    id *= UINT64_C(0x94d049bb133111eb);
    id ^= id >> 31;
    return (size_t)id & mask;
}

long arena__find(const arena *a, uint64_t id) {
    for (size_t s = slot_of(id, a->slot_mask);; s = (s + 1) & a->slot_mask) {
        const uint32_t v = a->slots[s];
        if (v == 0) return -1;
        if (a->entrants[v - 1].id == id) return (long)(v - 1);
    }
}

static void slots_put(uint32_t *slots, size_t mask, uint64_t id, uint32_t i) {
    size_t s = slot_of(id, mask);
    while (slots[s] != 0)
        s = (s + 1) & mask;
    slots[s] = i + 1;
}

int arena__reserve(arena *a, size_t need) {
    if (need <= a->cap) return ARENA_OK;
    size_t cap = a->cap ? a->cap : 8;
    while (cap < need)
        cap *= 2;
    /* Each array grows on its own; one that grew while a later one failed is
     * merely larger than cap says, which is harmless. */
    arena_entrant *e = realloc(a->entrants, cap * sizeof *e);
    if (!e) return ARENA_ERR_NOMEM;
    a->entrants = e;
    uint32_t *order = realloc(a->order, cap * sizeof *order);
    if (!order) return ARENA_ERR_NOMEM;
    a->order = order;
    uint32_t *pool = realloc(a->pool, cap * sizeof *pool);
    if (!pool) return ARENA_ERR_NOMEM;
    a->pool = pool;
    arena_group *groups = realloc(a->groups, cap * sizeof *groups);
    if (!groups) return ARENA_ERR_NOMEM;
    a->groups = groups;
    const size_t mask = 2 * cap - 1;
    uint32_t *slots = calloc(mask + 1, sizeof *slots);
    if (!slots) return ARENA_ERR_NOMEM;
    for (size_t i = 0; i < a->count; i++)
        slots_put(slots, mask, a->entrants[i].id, (uint32_t)i);
    free(a->slots);
    a->slots = slots;
    a->slot_mask = mask;
    a->cap = cap;
    return ARENA_OK;
}

void arena__index(arena *a, uint32_t i) {
    assert(i < a->count && arena__find(a, a->entrants[i].id) < 0);
    slots_put(a->slots, a->slot_mask, a->entrants[i].id, i);
}

/* Appends an entrant (room reserved, id new) to entrants, the index and order. */
static uint32_t append(arena *a, const arena_entrant *e) {
    assert(a->count < a->cap);
    const uint32_t i = (uint32_t)a->count++;
    a->entrants[i] = *e;
    arena__index(a, i);
    const size_t at = insertion_point(a, a->order, a->count - 1, i);
    memmove(&a->order[at + 1], &a->order[at], (a->count - 1 - at) * sizeof *a->order);
    a->order[at] = i;
    for (size_t k = at; k < a->count; k++)
        a->entrants[a->order[k]].pos = (uint32_t)k;
    return i;
}

/* ---- the pool ---- */

void arena__pool_insert(arena *a, uint32_t i) {
    assert(a->entrants[i].state == ARENA_WAITING && a->pool_count < a->cap);
    const size_t at = insertion_point(a, a->pool, a->pool_count, i);
    memmove(&a->pool[at + 1], &a->pool[at], (a->pool_count - at) * sizeof *a->pool);
    a->pool[at] = i;
    a->pool_count++;
}

void arena__pool_remove(arena *a, uint32_t i) {
    const size_t at = insertion_point(a, a->pool, a->pool_count, i);
    assert(at < a->pool_count && a->pool[at] == i);
    memmove(&a->pool[at], &a->pool[at + 1], (a->pool_count - at - 1) * sizeof *a->pool);
    a->pool_count--;
}

/* ---- entrants ---- */

static bool name_is_valid(const char *name) {
    if (!name) return false;
    const size_t len = strnlen(name, ARENA_NAME_MAX + 1);
    return len >= 1 && len <= ARENA_NAME_MAX;
}

void arena__go_waiting(arena *a, uint32_t i, int64_t now_ms) {
    arena_entrant *e = &a->entrants[i];
    e->state = ARENA_WAITING;
    e->sent_away = false;
    e->since_ms = now_ms;
    arena__pool_insert(a, i);
    a->revision++; /* the row's `waiting` */
}

int arena_join(arena *a, uint64_t id, const char *name, int64_t now_ms) {
    if (!name_is_valid(name)) return ARENA_ERR_INVALID;
    const long found = arena__find(a, id);
    if (found >= 0) {
        arena_entrant *e = &a->entrants[found];
        if (strcmp(e->name, name) != 0) a->revision++;
        strcpy(e->name, name);
        if (e->state == ARENA_RACING)
            e->sent_away = false;
        else if (e->state == ARENA_AWAY)
            arena__go_waiting(a, (uint32_t)found, now_ms);
        return ARENA_OK;
    }
    if (a->count >= a->config.max_entrants) return ARENA_ERR_FULL;
    const int err = arena__reserve(a, a->count + 1);
    if (err != ARENA_OK) return err;
    arena_entrant e = {.id = id, .state = ARENA_AWAY};
    strcpy(e.name, name);
    arena__go_waiting(a, append(a, &e), now_ms);
    return ARENA_OK;
}

int arena_wait(arena *a, uint64_t id, int64_t now_ms) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_ERR_NO_ENTRANT;
    arena_entrant *e = &a->entrants[i];
    if (e->state == ARENA_RACING) return ARENA_ERR_STATE;
    if (e->state == ARENA_AWAY) arena__go_waiting(a, (uint32_t)i, now_ms);
    return ARENA_OK;
}

int arena_away(arena *a, uint64_t id) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_ERR_NO_ENTRANT;
    arena_entrant *e = &a->entrants[i];
    if (e->state == ARENA_WAITING) {
        arena__pool_remove(a, (uint32_t)i);
        e->state = ARENA_AWAY;
        a->revision++;
    } else if (e->state == ARENA_RACING) {
        e->sent_away = true;
    }
    return ARENA_OK;
}

size_t arena_entrant_count(const arena *a) {
    return a->count;
}
size_t arena_pool_count(const arena *a) {
    return a->pool_count;
}
size_t arena_racing_count(const arena *a) {
    return a->racing;
}
uint64_t arena_revision(const arena *a) {
    return a->revision;
}

arena_state arena_entrant_state(const arena *a, uint64_t id, uint64_t *race) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_AWAY;
    const arena_entrant *e = &a->entrants[i];
    if (race) *race = e->state == ARENA_RACING ? e->race : 0;
    return e->state;
}
