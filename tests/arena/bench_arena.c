/* bench_arena.c - measures the arena module's costs: a race's result, top 10, rank,
 * pairing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "arena.h"

#define T0 INT64_C(1800000000000)

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Applies every race of a pairing with random places; returns the ns spent in
 * arena_apply_race and counts the results in *applied. */
static double finish(arena *a, arena_pairing p, int players, int64_t now, long *applied) {
    double spent = 0;
    for (size_t g = 0; g < p.count; g++) {
        const arena_group *gr = &p.groups[g];
        arena_place places[ARENA_MAX_PLAYERS];
        for (int k = 0; k < gr->entrants; k++)
            places[k] = (arena_place){gr->ids[k], rand() % players + 1, false};
        const double t = now_ns();
        if (arena_apply_race(a, gr->race, players, places, (size_t)gr->entrants, now) !=
            ARENA_OK)
            abort();
        spent += now_ns() - t;
        (*applied)++;
    }
    return spent;
}

static void bench(int entrants) {
    const int players = 4;
    const arena_config c = arena_config_default(players, T0, T0 + 3600 * 1000);
    arena *a = arena_new(&c);
    for (int i = 1; i <= entrants; i++) {
        char name[16];
        snprintf(name, sizeof name, "e%d", i);
        if (arena_join(a, (uint64_t)i, name, T0) != ARENA_OK) abort();
    }
    /* Rounds of: the whole pool paired at once, every race finished. */
    double pair_ns = 0, apply_ns = 0;
    long rounds = 0, applied = 0;
    int64_t now = T0;
    const int total_rounds = entrants >= 1000 ? 200 : 2000;
    for (int r = 0; r < total_rounds; r++) {
        now += 1000;
        const double t = now_ns();
        const arena_pairing p = arena_pair(a, now);
        pair_ns += now_ns() - t;
        rounds++;
        apply_ns += finish(a, p, players, now, &applied);
    }
    /* Reads on the standings as they stand after those races. */
    arena_row rows[ARENA_FINAL_ROWS];
    const int reads = 100000;
    double t = now_ns();
    for (int r = 0; r < reads; r++)
        if (arena_standings(a, 0, rows, ARENA_TOP) == 0) abort();
    const double top_ns = (now_ns() - t) / reads;
    t = now_ns();
    for (int r = 0; r < reads / 10; r++)
        if (arena_standings(a, 0, rows, ARENA_FINAL_ROWS) == 0) abort();
    const double all_ns = (now_ns() - t) / (reads / 10);
    t = now_ns();
    long sum = 0;
    for (int r = 0; r < reads; r++)
        sum += arena_rank(a, (uint64_t)(r % entrants) + 1);
    const double rank_ns = (now_ns() - t) / reads;
    t = now_ns();
    arena_snapshot *s = arena_snapshot_new(a);
    arena *b = arena_restore(s);
    const double restore_ns = now_ns() - t;
    if (!b || !arena_check(b)) abort();
    printf("%5d entrants: pairing round (pool %d -> %d races) %8.0f ns; one result "
           "(4 players) %6.0f ns; top 10 %5.0f ns; 100 rows %6.0f ns; rank %4.0f ns; "
           "snapshot+restore %8.0f ns (rank sum %ld)\n",
           entrants, entrants, entrants / players, pair_ns / rounds, apply_ns / applied,
           top_ns, all_ns, rank_ns, restore_ns, sum);
    arena_snapshot_free(s);
    arena_free(b);
    arena_free(a);
}

int main(void) {
    srand(2048);
    bench(10);
    bench(100);
    bench(1000);
    bench(10000);
    return 0;
}
