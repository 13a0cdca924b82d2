/* arena.c - one arena's entrants and standings, and a finished race's points applied. */
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

/* Moves entrant i to its place in the order after its key changed: O(n), two
 * memmoves and the positions of those in between. */
static void order_reposition(arena *a, uint32_t i) {
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

static void go_waiting(arena *a, uint32_t i, int64_t now_ms) {
    arena_entrant *e = &a->entrants[i];
    e->state = ARENA_WAITING;
    e->sent_away = false;
    e->since_ms = now_ms;
    arena__pool_insert(a, i);
}

int arena_join(arena *a, uint64_t id, const char *name, int64_t now_ms) {
    if (!name_is_valid(name)) return ARENA_ERR_INVALID;
    const long found = arena__find(a, id);
    if (found >= 0) {
        arena_entrant *e = &a->entrants[found];
        strcpy(e->name, name);
        if (e->state == ARENA_RACING)
            e->sent_away = false;
        else if (e->state == ARENA_AWAY)
            go_waiting(a, (uint32_t)found, now_ms);
        return ARENA_OK;
    }
    if (a->count >= a->config.max_entrants) return ARENA_ERR_FULL;
    const int err = arena__reserve(a, a->count + 1);
    if (err != ARENA_OK) return err;
    arena_entrant e = {.id = id, .state = ARENA_AWAY};
    strcpy(e.name, name);
    go_waiting(a, append(a, &e), now_ms);
    return ARENA_OK;
}

int arena_wait(arena *a, uint64_t id, int64_t now_ms) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_ERR_NO_ENTRANT;
    arena_entrant *e = &a->entrants[i];
    if (e->state == ARENA_RACING) return ARENA_ERR_STATE;
    if (e->state == ARENA_AWAY) go_waiting(a, (uint32_t)i, now_ms);
    return ARENA_OK;
}

int arena_away(arena *a, uint64_t id) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_ERR_NO_ENTRANT;
    arena_entrant *e = &a->entrants[i];
    if (e->state == ARENA_WAITING) {
        arena__pool_remove(a, (uint32_t)i);
        e->state = ARENA_AWAY;
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

arena_state arena_entrant_state(const arena *a, uint64_t id, uint64_t *race) {
    const long i = arena__find(a, id);
    if (i < 0) return ARENA_AWAY;
    const arena_entrant *e = &a->entrants[i];
    if (race) *race = e->state == ARENA_RACING ? e->race : 0;
    return e->state;
}

/* ---- standings ---- */

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

/* ---- races ---- */

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
        go_waiting(a, i, now_ms);
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
        order_reposition(a, idx[k]);
    }
    for (size_t k = 0; k < n; k++)
        race_over(a, idx[k], places[k].left, now_ms);
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
    return ARENA_OK;
}
