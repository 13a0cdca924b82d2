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
    long rounds = 0, applied = 0, formed = 0;
    int64_t now = T0;
    const int total_rounds = entrants >= 1000 ? 200 : 2000;
    for (int r = 0; r < total_rounds; r++) {
        now += 1000;
        const double t = now_ns();
        const arena_pairing p = arena_pair(a, now);
        pair_ns += now_ns() - t;
        rounds++;
        formed += (long)p.count;
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
    /* Snapshot and restore, as a restart would: the average of a few. */
    const int restores = 20;
    t = now_ns();
    for (int r = 0; r < restores; r++) {
        arena_snapshot *s = arena_snapshot_new(a);
        arena *b = s ? arena_restore(s) : NULL;
        if (!b) abort();
        arena_snapshot_free(s);
        arena_free(b);
    }
    const double restore_ns = (now_ns() - t) / restores;
    if (sum < entrants) abort(); /* every rank is at least 1; keeps the loop */
    printf("arena entrants=%d pair_round_ns=%.0f races_per_round=%.1f result_ns=%.0f "
           "top10_ns=%.0f rows100_ns=%.0f rank_ns=%.0f restore_ns=%.0f\n",
           entrants, pair_ns / rounds, (double)formed / rounds, apply_ns / applied,
           top_ns, all_ns, rank_ns, restore_ns);
    arena_free(a);
}

int main(int argc, char **argv) {
    srand(2048);
    if (argc < 2) {
        const int sizes[] = {10, 100, 1000, 10000};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            bench(sizes[k]);
        return 0;
    }
    for (int k = 1; k < argc; k++) {
        const long n = strtol(argv[k], NULL, 10);
        if (n < 1 || n > ARENA_MAX_ENTRANTS) {
            fprintf(stderr, "arena-bench: ENTRANTS must be 1 to %d\n",
                    ARENA_MAX_ENTRANTS);
            return 2;
        }
        bench((int)n);
    }
    return 0;
}
