/* fuzz_arena.c - libFuzzer target: input-chosen operations on an arena (good and bad
 * arguments, restores of altered snapshots) keep its invariants and its promises. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

typedef struct input {
    const uint8_t *p;
    size_t left;
} input;

static unsigned byte(input *in) {
    if (in->left == 0) return 0;
    in->left--;
    return *in->p++;
}

#define IDS   24 /* a small id space, so that operations meet */
#define RACES 64

typedef struct race {
    uint64_t number;
    size_t n;
    uint64_t ids[ARENA_MAX_PLAYERS];
} race;

typedef struct world {
    arena *a;
    int64_t now;
    race running[RACES];
    size_t n_running;
} world;

static void note_race(world *w, uint64_t number, const uint64_t *ids, size_t n) {
    if (w->n_running == RACES) return; /* forgotten: a later result is refused */
    race *r = &w->running[w->n_running++];
    r->number = number;
    r->n = n;
    memcpy(r->ids, ids, n * sizeof *ids);
}

static void forget_race(world *w, size_t k) {
    w->running[k] = w->running[--w->n_running];
}

/* The standings read whole: sorted, ranks by the rule, rows agree with lookups. */
static void check_reads(const arena *a) {
    CHECK(arena_check(a));
    arena_row rows[IDS];
    const size_t n = arena_standings(a, 0, rows, IDS);
    CHECK(n == arena_entrant_count(a));
    for (size_t k = 0; k < n; k++) {
        CHECK(arena_rank(a, rows[k].id) == rows[k].rank);
        CHECK(rows[k].points >= 0 && rows[k].wins <= rows[k].races);
        if (k == 0) {
            CHECK(rows[k].rank == 1);
            continue;
        }
        const arena_row *p = &rows[k - 1], *r = &rows[k];
        const bool tied =
            p->points == r->points && p->wins == r->wins && p->races == r->races;
        CHECK(r->rank == (tied ? p->rank : (int)k + 1));
    }
}

static void op_result(world *w, input *in, bool abandon) {
    if (w->n_running == 0) return;
    const size_t k = byte(in) % w->n_running;
    race r = w->running[k];
    /* Now and then a wrong list: the arena must refuse it whole. */
    const unsigned twist = byte(in);
    if (twist % 8 == 0 && r.n > 0) r.ids[byte(in) % r.n] = byte(in) % (IDS + 2);
    if (twist % 8 == 1 && r.n > 1) r.n--;
    const int players = twist % 8 == 2 ? (int)(byte(in) % 10) : 8;
    arena_place places[ARENA_MAX_PLAYERS];
    for (size_t i = 0; i < r.n; i++) {
        const unsigned b = byte(in);
        places[i] = (arena_place){r.ids[i], (int)(b % 9), (b & 0x80) != 0};
    }
    const size_t racing = arena_racing_count(w->a);
    const int err = abandon
                        ? arena_abandon_race(w->a, r.number, r.ids, r.n, w->now)
                        : arena_apply_race(w->a, r.number, players, places, r.n, w->now);
    if (err == ARENA_OK) {
        CHECK(arena_racing_count(w->a) == racing - r.n);
        forget_race(w, k);
        /* Once counted (or given up), never again. */
        CHECK((abandon ? arena_abandon_race(w->a, r.number, r.ids, r.n, w->now)
                       : arena_apply_race(w->a, r.number, players, places, r.n,
                                          w->now)) == ARENA_APPLIED_BEFORE);
    } else {
        CHECK(arena_racing_count(w->a) == racing);
        CHECK(err == ARENA_ERR_INVALID || err == ARENA_APPLIED_BEFORE);
        if (err == ARENA_APPLIED_BEFORE) forget_race(w, k);
    }
}

static void op_restore(world *w, input *in) {
    arena_snapshot *s = arena_snapshot_new(w->a);
    CHECK(s);
    const unsigned what = byte(in), value = byte(in);
    if (s->count > 0 && what % 4 != 0) {
        arena_snapshot_entrant *e = &s->entrants[value % s->count];
        switch (what % 8) {
        case 1:
            e->points += (int64_t)value - 128;
            break;
        case 2:
            e->wins += (int)(value % 3) - 1;
            break;
        case 3:
            e->state = (arena_state)(value % 4);
            break;
        case 5:
            e->race = value % 8;
            break;
        case 6:
            e->race_entrants = (int)(value % 10);
            break;
        case 7:
            e->id = value % IDS;
            break;
        default:
            e->streak += (int)(value % 3) - 1;
            break;
        }
    }
    arena *b = arena_restore(s);
    arena_snapshot_free(s);
    if (!b) {
        CHECK(what % 4 != 0); /* an unaltered snapshot always restores */
        return;
    }
    check_reads(b);
    if (what % 4 == 0) {
        arena_free(w->a);
        w->a = b;
    } else {
        arena_free(b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    input in = {data, size};
    const int64_t starts = 1000000;
    arena_config c =
        arena_config_default(2 + (int)(byte(&in) % 7), starts, starts + 600000);
    c.pair_wait_ms = byte(&in) * 10;
    c.bots_wait_ms = byte(&in) * 40;
    c.max_entrants = 1 + byte(&in) % IDS;
    world w = {.a = arena_new(&c), .now = starts - 1000};
    CHECK(w.a);
    while (in.left > 0) {
        const unsigned op = byte(&in);
        const uint64_t id = byte(&in) % (IDS + 1);
        w.now += (int64_t)(op >> 4) * 500;
        switch (op % 8) {
        case 0: {
            char name[24] = {0};
            memset(name, 'a', byte(&in) % 20);
            const int err = arena_join(w.a, id, name, w.now);
            CHECK(err == ARENA_OK || err == ARENA_ERR_INVALID || err == ARENA_ERR_FULL);
            break;
        }
        case 1: {
            const int err = arena_away(w.a, id);
            CHECK(err == ARENA_OK || err == ARENA_ERR_NO_ENTRANT);
            break;
        }
        case 2: {
            const int err = arena_wait(w.a, id, w.now);
            CHECK(err == ARENA_OK || err == ARENA_ERR_NO_ENTRANT ||
                  err == ARENA_ERR_STATE);
            break;
        }
        case 3: {
            const size_t pool = arena_pool_count(w.a);
            const arena_pairing p = arena_pair(w.a, w.now);
            CHECK(p.next_ms > w.now);
            size_t grouped = 0;
            for (size_t g = 0; g < p.count; g++) {
                const arena_group *gr = &p.groups[g];
                CHECK(gr->entrants >= 1 && gr->entrants + gr->bots <= c.players);
                CHECK(w.now >= c.starts_ms && w.now < c.ends_ms);
                grouped += (size_t)gr->entrants;
                note_race(&w, gr->race, gr->ids, (size_t)gr->entrants);
            }
            CHECK(arena_pool_count(w.a) == pool - grouped);
            break;
        }
        case 4:
            op_result(&w, &in, false);
            break;
        case 5:
            op_result(&w, &in, true);
            break;
        case 6: {
            uint64_t ids[ARENA_MAX_PLAYERS];
            const size_t n = byte(&in) % (ARENA_MAX_PLAYERS + 1);
            for (size_t k = 0; k < n; k++)
                ids[k] = byte(&in) % (IDS + 1);
            const uint64_t number = byte(&in);
            if (arena_form_race(w.a, number, ids, n) == ARENA_OK)
                note_race(&w, number, ids, n);
            break;
        }
        default:
            op_restore(&w, &in);
            break;
        }
        check_reads(w.a);
    }
    arena_free(w.a);
    return 0;
}
