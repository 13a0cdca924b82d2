/* bench_ai.c - `race2048-bench ai`: the AI's strength and speed, offline, on seeded
 * games. */
#include "bench_ai.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai.h"
#include "bench_util.h"
#include "engine.h"

#define USAGE                                                                            \
    "usage: race2048-bench ai [--games N] [--ms-per-move X | --depth D | --nodes K] "    \
    "[--seed S]\n"

static void usage(FILE *out) {
    fprintf(
        out, USAGE
        "  plays N seeded 4x4 games (default 20; game k draws from mulberry32(S + k),\n"
        "  S default 1, as a solo game with that client seed does) with the AI,\n"
        "  X ms of thinking a move (iterative deepening) or a fixed depth D\n"
        "  (default: the adaptive depth), and prints one line: games, how often\n"
        "  each tile from 2048 to 32768 was reached, median and mean score,\n"
        "  ms_per_move mean, p50 and p99. Without --ms-per-move the games are the\n"
        "  same run to run.\n");
}

static double mono_ms(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One game to its end; returns its score and max tile. */
static int play(const ai_model *m, ai_cache *cache, uint32_t seed, double ms_budget,
                ai_budget budget, times *t, uint64_t *score, uint64_t *max_tile) {
    eng_game g;
    eng_seed sd = eng_seed_client(seed);
    eng_game_new(&g, 4, &sd);
    for (;;) {
        double t0 = mono_ms(NULL);
        eng_bits bits;
        ai_result r;
        ai_cache_clear(cache);
        if (!eng_bits_pack(&g.board, &bits))
            r = ai_search_board(m, cache, &g.board, ai_budget_default());
        else if (ms_budget > 0)
            r = ai_search_timed(m, cache, bits, 1e-4, ms_budget, mono_ms, NULL);
        else
            r = ai_search(m, cache, bits, budget);
        if (times_add(t, mono_ms(NULL) - t0) < 0) return -1;
        if (r.best < 0) break;
        eng_game_move(&g, (eng_dir)r.best, &m->moves);
    }
    *score = g.score;
    *max_tile = eng_max_tile(&g.board);
    return 0;
}

int bench_ai_main(int argc, char **argv) {
    long games = 20, depth = 0, seed = 1, nodes = 0;
    double ms = 0;
    for (int i = 0; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        int bad = !v;
        if (!bad && !strcmp(a, "--games"))
            bad = bench_parse_long(v, 1, 100000, &games);
        else if (!bad && !strcmp(a, "--depth"))
            bad = bench_parse_long(v, 1, 8, &depth);
        else if (!bad && !strcmp(a, "--nodes"))
            bad = bench_parse_long(v, 1, 1000000000, &nodes);
        else if (!bad && !strcmp(a, "--seed"))
            bad = bench_parse_long(v, 0, 0xFFFFFFFFl, &seed);
        else if (!bad && !strcmp(a, "--ms-per-move")) {
            char *end;
            ms = strtod(v, &end);
            bad = end == v || *end || !(ms > 0 && ms <= 10000);
        } else {
            fprintf(stderr, "race2048-bench ai: unknown option '%s'\n" USAGE, a);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "race2048-bench ai: bad value for %s\n" USAGE, a);
            return 2;
        }
    }
    if (ms > 0 && depth) {
        fprintf(stderr, "race2048-bench ai: --ms-per-move or --depth, not both\n" USAGE);
        return 2;
    }
    ai_model *m = malloc(sizeof *m);
    ai_cache cache = {.size = 1u << 18};
    cache.entries = calloc(cache.size, sizeof *cache.entries);
    uint64_t *scores = calloc((size_t)games, sizeof *scores);
    times t = {0};
    if (!m || !cache.entries || !scores) {
        fprintf(stderr, "race2048-bench ai: out of memory\n");
        return 1;
    }
    ai_model_init(m);
    ai_budget budget = ai_budget_default();
    if (depth) budget.max_depth = (int)depth;
    if (nodes) budget.max_nodes = (uint64_t)nodes;
    static const uint64_t tiles[5] = {2048, 4096, 8192, 16384, 32768};
    long reached[5] = {0};
    double sum = 0;
    for (long k = 0; k < games; k++) {
        uint64_t max_tile;
        if (play(m, &cache, (uint32_t)(seed + k), ms, budget, &t, &scores[k], &max_tile) <
            0) {
            fprintf(stderr, "race2048-bench ai: out of memory\n");
            return 1;
        }
        for (int i = 0; i < 5; i++)
            reached[i] += max_tile >= tiles[i];
        sum += (double)scores[k];
    }
    qsort(scores, (size_t)games, sizeof *scores, bench_cmp_u64);
    qsort(t.ms, t.n, sizeof *t.ms, bench_cmp_double);
    double median = games % 2
                        ? (double)scores[games / 2]
                        : ((double)scores[games / 2 - 1] + (double)scores[games / 2]) / 2;
    if (ms > 0)
        printf("ai games=%ld budget=ms:%g", games, ms);
    else if (depth)
        printf("ai games=%ld budget=depth:%ld", games, depth);
    else
        printf("ai games=%ld budget=nodes:%llu", games,
               (unsigned long long)budget.max_nodes);
    for (int i = 0; i < 5; i++)
        printf(" reach_%llu=%.0f%%", (unsigned long long)tiles[i],
               100.0 * (double)reached[i] / (double)games);
    double total_ms = 0;
    for (size_t i = 0; i < t.n; i++)
        total_ms += t.ms[i];
    printf(" median_score=%.0f mean_score=%.0f moves=%zu ms_per_move_mean=%.3f "
           "ms_per_move_p50=%.3f ms_per_move_p99=%.3f\n",
           median, sum / (double)games, t.n, total_ms / (double)t.n, t.ms[t.n / 2],
           t.ms[(size_t)((double)t.n * 0.99)]);
    free(t.ms);
    free(scores);
    free(cache.entries);
    free(m);
    return 0;
}
