/* bench_bots.c - race2048-bench bots: the bot levels' strength, speed and races. */
#include "bench_bots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ai.h"
#include "args.h"
#include "bench_util.h"
#include "engine.h"
#include "level.h"
#include "rating.h"

/* --help: the usage (its first line also follows a bad option) and the rest. */
static const char bots_usage[] =
    "usage: race2048-bench bots [--sizes [--no-budget] | --ratings] [--games N] "
    "[--races N] [--seed S] [--level L]\n";

/* The target of every game and race: the server's default. */
#define TARGET 2048
/* The server's bot worker has a transposition table of 2^16 entries; the
 * same size here makes the same moves (the search's result depends on it). */
#define CACHE_ENTRIES (1u << 16)

static const char bots_about[] =
    "  for each bot level 1-5 (or only L): its pace, and N solo games of 4x4\n"
    "  (default 20; game k dealt by mulberry32(S + k), S default 1, as a solo\n"
    "  game with that client seed is) played at full speed to the end: how\n"
    "  often 2048 and 4096 were reached, median score, ms of thinking a move\n"
    "  (mean: CPU time; p99: the clock), the mean over the moves before 2048\n"
    "  (what a race plays) and how many bots one thread keeps at that pace;\n"
    "  then for each level L > 1 (with --level, L only), N races against level\n"
    "  L-1 (default 50; race k dealt like game k, the same seed for both\n"
    "  boards as in the server), time simulated by each level's pace, won by\n"
    "  the first to reach 2048 or, when both are over, the better ranked\n"
    "  (score, max tile, fewer moves; equal: a draw). Prints key=value lines;\n"
    "  the moves are the same run to run, only the times vary.\n"
    "  --sizes: for each board size 3-8 and level (or only L), N games (default\n"
    "  20) of at most 1000 moves played at full speed: CPU ms a move (p50,\n"
    "  p99, mean), how many bots of that size and level one core keeps at\n"
    "  their pace, and the median score after those moves; --no-budget\n"
    "  without the levels' cap on boards other than 4x4 (as before it was).\n"
    "  --ratings: N races (default 50) between every two levels, as above, and\n"
    "  each level's fixed rating from them: the maximum likelihood of the\n"
    "  ratings' own model for two players, sigma 2, level 3 at a new account's\n"
    "  mu 25 (protocol/README.md, Ratings, lists the figures).\n";

static double clock_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double mono_ms(void) {
    return clock_ms(CLOCK_MONOTONIC);
}

/* What the benchmark needs for every game: the AI's tables and one cache,
 * as the server's single bot worker has. */
typedef struct bench {
    ai_model *model;
    ai_cache cache;
    uint32_t seed; /* S */
} bench;

/* A bot's own random state for game or race k: any fixed mix of the seed,
 * k and the level, so that two levels in one race draw differently. */
static uint32_t bot_rng(const bench *bn, long k, int level, uint32_t salt) {
    return ((bn->seed + (uint32_t)k) * 2654435761u) ^ ((uint32_t)level * 0x9E3779B9u) ^
           salt;
}

static double median_u64(uint64_t *v, size_t n) {
    qsort(v, n, sizeof *v, bench_cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void print_budget(const ai_level *lv) {
    if (lv->budget.max_depth > 0)
        printf(" budget=depth:%d", lv->budget.max_depth);
    else
        printf(" budget=nodes:%llu", (unsigned long long)lv->budget.max_nodes);
    printf(" min_prob=%g", lv->budget.min_prob);
}

/* ------------------------------------------------------------ solo games --- */

/* The part of the solo games that a race to 2048 plays: each game's moves
 * until it first reached 2048 (all of it if it never did), and their CPU
 * time. Bots race, so this is what a server's bot worker mostly thinks
 * about; the late game of a solo game costs differently. */
typedef struct race_part {
    double cpu_ms;
    size_t moves;
} race_part;

/* Game k of level lv to its end at full speed (the pace is not simulated: it
 * only spaces the same moves out). Returns 0, or -1 if memory ran out. */
static int play_solo(bench *bn, const ai_level *lv, long k, times *t, race_part *part,
                     uint64_t *score, uint64_t *max_tile) {
    eng_game g;
    eng_seed sd = eng_seed_client(bn->seed + (uint32_t)k);
    eng_game_new(&g, 4, &sd);
    uint32_t rng = bot_rng(bn, k, lv->level, 0x5010u);
    double cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    bool racing = true;
    for (;;) {
        double t0 = mono_ms();
        int dir = ai_level_move(bn->model, &bn->cache, &g.board, lv, &rng);
        if (times_add(t, mono_ms() - t0) < 0) return -1;
        part->moves += racing;
        if (dir < 0) break; /* no move changes the board: over */
        eng_game_move(&g, (eng_dir)dir, &bn->model->moves);
        if (racing && eng_has_won(&g.board, TARGET)) {
            part->cpu_ms += clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
            racing = false;
        }
    }
    if (racing) part->cpu_ms += clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    *score = g.score;
    *max_tile = eng_max_tile(&g.board);
    return 0;
}

/* One line of solo figures for level lv. Returns 0, or -1 if memory ran out. */
static int bench_solo(bench *bn, const ai_level *lv, long games) {
    uint64_t *scores = calloc((size_t)games, sizeof *scores);
    times t = {0};
    int rc = -1;
    if (!scores) goto done;
    long reach_2048 = 0, reach_4096 = 0;
    race_part part = {0};
    /* The mean is CPU time, which a shared machine's other work does not
     * inflate: one move preempted for 100 ms would outweigh thousands of
     * searches. It includes the engine's moves and spawns (nanoseconds). */
    double cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    for (long k = 0; k < games; k++) {
        uint64_t max_tile;
        if (play_solo(bn, lv, k, &t, &part, &scores[k], &max_tile) < 0) goto done;
        reach_2048 += max_tile >= 2048;
        reach_4096 += max_tile >= 4096;
    }
    double mean_ms = (clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0) / (double)t.n;
    qsort(t.ms, t.n, sizeof *t.ms, bench_cmp_double);
    printf("bots level=%d moves_per_s=%g random_per_mille=%u", lv->level, lv->moves_per_s,
           lv->random_per_mille);
    print_budget(lv);
    /* bots_per_thread: how many bots of this level one worker thread (the
     * server has one) keeps at their pace in races, by the race part's mean. */
    double race_ms = part.cpu_ms / (double)part.moves;
    printf(" games=%ld reach_2048=%.0f%% reach_4096=%.0f%% median_score=%.0f moves=%zu "
           "ms_per_move_mean=%.4f ms_per_move_p99=%.4f race_ms_per_move_mean=%.4f "
           "bots_per_thread=%.0f\n",
           games, 100.0 * (double)reach_2048 / (double)games,
           100.0 * (double)reach_4096 / (double)games, median_u64(scores, (size_t)games),
           t.n, mean_ms, t.ms[(size_t)((double)t.n * 0.99)], race_ms,
           1000.0 / (race_ms * lv->moves_per_s));
    fflush(stdout);
    rc = 0;
done:
    free(t.ms);
    free(scores);
    return rc;
}

/* ----------------------------------------------------------------- races --- */

/* One side of a race: its game, its level and the simulated clock. */
typedef struct racer {
    eng_game g;
    const ai_level *lv;
    uint32_t rng;
    uint64_t period_ms; /* the server's pace: one move every 1000 / moves_per_s ms */
    uint64_t next_ms;   /* when its next move is made */
    bool over;          /* no move changes its board */
} racer;

typedef enum race_result { RACE_WIN, RACE_DRAW, RACE_LOSS } race_result;

/* The server's ranking when every board is over: higher score, then higher
 * max tile, then fewer moves. > 0 if a ranks above b, 0 for a draw. */
static int rank(const eng_game *a, const eng_game *b) {
    if (a->score != b->score) return a->score > b->score ? 1 : -1;
    uint64_t am = eng_max_tile(&a->board), bm = eng_max_tile(&b->board);
    if (am != bm) return am > bm ? 1 : -1;
    if (a->moves != b->moves) return a->moves < b->moves ? 1 : -1;
    return 0;
}

/* Race k of `up` against `down` (its level below). *by_target is set when a
 * 2048 ended it, *ms to the simulated time it ended at. Returns the result
 * for `up`. */
static race_result play_race(bench *bn, const ai_level *up, const ai_level *down, long k,
                             bool *by_target, uint64_t *ms) {
    eng_seed sd = eng_seed_client(bn->seed + (uint32_t)k);
    racer r[2]; /* [0] the level below: it moves first on a tie of the clocks */
    const ai_level *lv[2] = {down, up};
    for (int i = 0; i < 2; i++) {
        eng_game_new(&r[i].g, 4, &sd); /* one seed: the same spawn stream */
        r[i].lv = lv[i];
        r[i].rng = bot_rng(bn, k, lv[i]->level, 0x4ACEu);
        r[i].period_ms = (uint64_t)(1000.0 / lv[i]->moves_per_s);
        r[i].next_ms = r[i].period_ms; /* the server's bots wait one pace to start */
        r[i].over = false;
    }
    *by_target = false;
    for (;;) {
        int i;
        if (r[0].over && r[1].over) break;
        if (r[0].over)
            i = 1;
        else if (r[1].over)
            i = 0;
        else
            i = r[1].next_ms < r[0].next_ms;
        racer *me = &r[i];
        *ms = me->next_ms;
        me->next_ms += me->period_ms;
        int dir = ai_level_move(bn->model, &bn->cache, &me->g.board, me->lv, &me->rng);
        /* A move that changes nothing would never end the loop: a level only
         * plays moves that change the board, so that is the end of it too. */
        if (dir < 0 || !eng_game_move(&me->g, (eng_dir)dir, &bn->model->moves).moved) {
            me->over = true;
            continue;
        }
        if (eng_has_won(&me->g.board, TARGET)) {
            *by_target = true;
            return i == 1 ? RACE_WIN : RACE_LOSS;
        }
        me->over = eng_is_over(&me->g.board);
    }
    int c = rank(&r[1].g, &r[0].g);
    return c > 0 ? RACE_WIN : c < 0 ? RACE_LOSS : RACE_DRAW;
}

/* One line of race figures for up against down. Returns 0, or -1 if memory
 * ran out. */
static int bench_races(bench *bn, const ai_level *up, const ai_level *down, long races) {
    uint64_t *ends = calloc((size_t)races, sizeof *ends);
    if (!ends) return -1;
    long n[3] = {0}, by_target = 0;
    for (long k = 0; k < races; k++) {
        bool target;
        n[play_race(bn, up, down, k, &target, &ends[k])]++;
        by_target += target;
    }
    printf("race level=%d vs=%d races=%ld wins=%ld draws=%ld losses=%ld win_rate=%.0f%% "
           "by_target=%ld race_s_median=%.0f\n",
           up->level, down->level, races, n[RACE_WIN], n[RACE_DRAW], n[RACE_LOSS],
           100.0 * (double)n[RACE_WIN] / (double)races, by_target,
           median_u64(ends, (size_t)races) / 1000);
    fflush(stdout);
    free(ends);
    return 0;
}

/* ---------------------------------------------------------------- sizes --- */

/* The most moves of one game that --sizes plays: big boards' games are long,
 * and their cost a move changes little once the board has filled up. */
#define SIZES_MOVES 1000

/* One line of --sizes figures: level lv on size x size boards. Returns 0, or
 * -1 if memory ran out. */
static int bench_size(bench *bn, const ai_level *lv, int size, long games) {
    times t = {0};
    uint64_t *scores = calloc((size_t)games, sizeof *scores);
    int rc = -1;
    if (!scores) goto done;
    double total = 0;
    for (long k = 0; k < games; k++) {
        eng_game g;
        eng_seed sd = eng_seed_client(bn->seed + (uint32_t)k);
        eng_game_new(&g, size, &sd);
        uint32_t rng = bot_rng(bn, k, lv->level, 0x512Eu);
        for (int m = 0; m < SIZES_MOVES; m++) {
            /* CPU time: a shared machine's preemptions are not the search's. */
            double t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
            int dir = ai_level_move(bn->model, &bn->cache, &g.board, lv, &rng);
            double took = clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
            total += took;
            if (times_add(&t, took) < 0) goto done;
            if (dir < 0) break;
            eng_game_move(&g, (eng_dir)dir, &bn->model->moves);
        }
        scores[k] = g.score;
    }
    double mean_ms = total / (double)t.n;
    qsort(t.ms, t.n, sizeof *t.ms, bench_cmp_double);
    printf("botcost size=%d level=%d moves_per_s=%g budget_cells=%llu moves=%zu "
           "cpu_ms_p50=%.4f cpu_ms_p99=%.4f cpu_ms_mean=%.4f bots_per_core=%.0f "
           "median_score=%.0f\n",
           size, lv->level, lv->moves_per_s, (unsigned long long)lv->budget.max_cells,
           t.n, t.ms[t.n / 2], t.ms[(size_t)((double)t.n * 0.99)], mean_ms,
           1000.0 / (mean_ms * lv->moves_per_s), median_u64(scores, (size_t)games));
    fflush(stdout);
    rc = 0;
done:
    free(t.ms);
    free(scores);
    return rc;
}

static int bench_sizes(bench *bn, long games, int first, int last, bool budget) {
    for (int size = ENG_SIZE_MIN; size <= ENG_SIZE_MAX; size++) {
        for (int l = first; l <= last; l++) {
            ai_level lv = *ai_level_get(l);
            if (!budget) lv.budget.max_cells = 0;
            if (bench_size(bn, &lv, size, games) < 0) return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------ fixed ratings --- */

/* The deviation every bot level is given: small, since a level's play does
 * not change, but not so small that a bot's mu, found from finitely many
 * races, would weigh as certain. */
#define BOT_SIGMA 2.0
/* The level a new account stands beside: level 3 fills quick races, so a new
 * player's mu (RATING_MU0) is put at its strength. */
#define ANCHOR_LEVEL 3
#define NLEVELS      (AI_LEVEL_MAX - AI_LEVEL_MIN + 1)

/* Each level's mu from the races between every two levels: the maximum
 * likelihood of the model the ratings use (Plackett-Luce with two players is
 * Bradley-Terry, P(i beats j) = e^(mu_i/c) / (e^(mu_i/c) + e^(mu_j/c)), c^2 =
 * 2 (BOT_SIGMA^2 + beta^2)), found by the MM iteration (Hunter 2004), a draw
 * counting half a win to each (the caller adds one virtual draw to every
 * pair, so that a clean sweep stays finite). Then shifted so that ANCHOR_LEVEL stands at
 * RATING_MU0. Also each mu's standard error from the Fisher information. */
static void fit_levels(const double wins[NLEVELS][NLEVELS], double mu[NLEVELS],
                       double se[NLEVELS]) {
    const double c = sqrt(2 * (BOT_SIGMA * BOT_SIGMA + RATING_BETA * RATING_BETA));
    double theta[NLEVELS];
    for (int i = 0; i < NLEVELS; i++)
        theta[i] = 1;
    for (int iter = 0; iter < 10000; iter++) {
        double next[NLEVELS], change = 0;
        for (int i = 0; i < NLEVELS; i++) {
            double w = 0, den = 0;
            for (int j = 0; j < NLEVELS; j++) {
                if (j == i) continue;
                double n = wins[i][j] + wins[j][i];
                w += wins[i][j];
                den += n / (theta[i] + theta[j]);
            }
            next[i] = den > 0 && w > 0 ? w / den : theta[i];
        }
        double gm = 0; /* keep the geometric mean at 1 */
        for (int i = 0; i < NLEVELS; i++)
            gm += log(next[i]);
        gm = exp(gm / NLEVELS);
        for (int i = 0; i < NLEVELS; i++) {
            next[i] /= gm;
            change = fmax(change, fabs(log(next[i] / theta[i])));
            theta[i] = next[i];
        }
        if (change < 1e-12) break;
    }
    double shift = RATING_MU0 - c * log(theta[ANCHOR_LEVEL - AI_LEVEL_MIN]);
    for (int i = 0; i < NLEVELS; i++) {
        mu[i] = c * log(theta[i]) + shift;
        double info = 0; /* of log theta_i, the others held */
        for (int j = 0; j < NLEVELS; j++) {
            if (j == i) continue;
            double n = wins[i][j] + wins[j][i];
            double p = theta[i] / (theta[i] + theta[j]);
            info += n * p * (1 - p);
        }
        se[i] = info > 0 ? c / sqrt(info) : INFINITY;
    }
}

/* N races between every two levels (each pair's race k dealt as race k is),
 * then each level's fixed rating: one line per level. */
static int bench_ratings(bench *bn, long races) {
    double wins[NLEVELS][NLEVELS] = {{0}};
    for (int a = AI_LEVEL_MIN; a <= AI_LEVEL_MAX; a++) {
        for (int b = a + 1; b <= AI_LEVEL_MAX; b++) {
            const ai_level *down = ai_level_get(a), *up = ai_level_get(b);
            for (long k = 0; k < races; k++) {
                bool target;
                uint64_t ms;
                race_result r = play_race(bn, up, down, k, &target, &ms);
                double w = r == RACE_WIN ? 1 : r == RACE_DRAW ? 0.5 : 0;
                wins[b - AI_LEVEL_MIN][a - AI_LEVEL_MIN] += w;
                wins[a - AI_LEVEL_MIN][b - AI_LEVEL_MIN] += 1 - w;
            }
            printf("pair level=%d vs=%d races=%ld wins=%.1f\n", b, a, races,
                   wins[b - AI_LEVEL_MIN][a - AI_LEVEL_MIN]);
            fflush(stdout);
        }
    }
    /* One virtual draw between every two levels: a level that won every
     * race against another would otherwise be infinitely stronger. */
    for (int i = 0; i < NLEVELS; i++)
        for (int j = 0; j < NLEVELS; j++)
            if (i != j) wins[i][j] += 0.5;
    double mu[NLEVELS], se[NLEVELS];
    fit_levels(wins, mu, se);
    for (int i = 0; i < NLEVELS; i++)
        printf("rating level=%d mu=%.2f sigma=%.1f se=%.2f shown=%d\n", i + AI_LEVEL_MIN,
               mu[i], BOT_SIGMA, se[i], rating_display(mu[i]));
    return 0;
}

/* ---------------------------------------------------------------- main --- */

int bench_bots_main(int argc, char **argv) {
    long games = 20, races = 50, seed = 1, only = 0;
    bool sizes = false, no_budget = false, ratings = false;
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--sizes", .kind = ARGS_BOOL, .to = &sizes},
        {.name = "--ratings", .kind = ARGS_BOOL, .to = &ratings},
        {.name = "--no-budget", .kind = ARGS_BOOL, .to = &no_budget},
        {.name = "--games",
         .kind = ARGS_LONG,
         .to = &games,
         .lo = 1,
         .hi = 100000,
         .arg = "N"},
        {.name = "--races",
         .kind = ARGS_LONG,
         .to = &races,
         .lo = 1,
         .hi = 100000,
         .arg = "N"},
        {.name = "--seed",
         .kind = ARGS_LONG,
         .to = &seed,
         .lo = 0,
         .hi = 0xFFFFFFFFl,
         .arg = "S"},
        {.name = "--level",
         .kind = ARGS_LONG,
         .to = &only,
         .lo = AI_LEVEL_MIN,
         .hi = AI_LEVEL_MAX,
         .arg = "L"},
    };
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "bots",
        .usage = bots_usage,
        .about = bots_about,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int parsed = args_parse(&spec, argc, argv, NULL);
    if (parsed != ARGS_RUN) return parsed == ARGS_DONE ? 0 : 2;
    bool budget = !no_budget;
    bench bn = {.model = malloc(sizeof *bn.model),
                .cache = {.size = CACHE_ENTRIES},
                .seed = (uint32_t)seed};
    bn.cache.entries = calloc(bn.cache.size, sizeof *bn.cache.entries);
    int rc = 1;
    if (!bn.model || !bn.cache.entries) goto done;
    ai_model_init(bn.model);
    int first = only ? (int)only : AI_LEVEL_MIN, last = only ? (int)only : AI_LEVEL_MAX;
    if (sizes) {
        rc = bench_sizes(&bn, games, first, last, budget) < 0;
        goto done;
    }
    if (ratings) {
        rc = bench_ratings(&bn, races) < 0;
        goto done;
    }
    for (int l = first; l <= last; l++) {
        const ai_level *lv = ai_level_get(l);
        if (bench_solo(&bn, lv, games) < 0) goto done;
        if (l > AI_LEVEL_MIN && bench_races(&bn, lv, ai_level_get(l - 1), races) < 0)
            goto done;
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "race2048-bench: bots: out of memory\n");
    free(bn.cache.entries);
    free(bn.model);
    return rc;
}
