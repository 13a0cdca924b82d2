/* bench_ai.c - `race2048-bench ai`: the AI's strength and speed, offline, on seeded
 * games. */
#include "bench_ai.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai.h"
#include "args.h"
#include "bench_util.h"
#include "engine.h"

/* --help: the usage (its first line also follows a bad option) and the rest. */
static const char ai_usage[] =
    "usage: race2048-bench ai [--games N] [--ms-per-move X | --depth D | --nodes K] "
    "[--seed S]\n";
static const char ai_about[] =
    "  plays N seeded 4x4 games (default 20; game k draws from mulberry32(S + k),\n"
    "  S default 1, as a solo game with that client seed does) with the AI,\n"
    "  X ms of thinking a move (iterative deepening) or a fixed depth D\n"
    "  (default: the adaptive depth), and prints one line: games, how often\n"
    "  each tile from 2048 to 32768 was reached, median and mean score,\n"
    "  ms_per_move mean, p50 and p99. Without --ms-per-move the games are the\n"
    "  same run to run.\n";

/* --ms-per-move: more than 0, at most 10 s. */
static bool parse_ms(const char *v, void *to) {
    char *end;
    double ms = strtod(v, &end);
    if (end == v || *end || !(ms > 0 && ms <= 10000)) return false;
    *(double *)to = ms;
    return true;
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
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--games",
         .kind = ARGS_LONG,
         .to = &games,
         .lo = 1,
         .hi = 100000,
         .arg = "N"},
        {.name = "--depth",
         .kind = ARGS_LONG,
         .to = &depth,
         .lo = 1,
         .hi = 8,
         .arg = "D"},
        {.name = "--nodes",
         .kind = ARGS_LONG,
         .to = &nodes,
         .lo = 1,
         .hi = 1000000000,
         .arg = "K"},
        {.name = "--seed",
         .kind = ARGS_LONG,
         .to = &seed,
         .lo = 0,
         .hi = 0xFFFFFFFFl,
         .arg = "S"},
        {.name = "--ms-per-move",
         .kind = ARGS_CUSTOM,
         .to = &ms,
         .parse = parse_ms,
         .want = "milliseconds, more than 0 and at most 10000",
         .arg = "X"},
    };
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "ai",
        .usage = ai_usage,
        .about = ai_about,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int rc = args_parse(&spec, argc, argv, NULL);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    if (ms > 0 && depth) {
        args_fail(&spec, "--ms-per-move or --depth, not both");
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
