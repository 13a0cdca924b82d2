/* bench.c - race2048-bench: key=value figures for the workloads of BENCHMARKS.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "bench_accounts.h"
#include "bench_ai.h"
#include "bench_bots.h"
#include "bench_engine.h"
#include "loadgen.h"
#include "spectate.h"

/* Every timed result lands here, so no pass can be optimised away. */
static volatile uint64_t bench_sink;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- engine --- */

/* Which workload one timed run repeats; the pass functions differ in their
 * arguments, so one small switch keeps the timing loop in one place. */
typedef enum work {
    WORK_MOVES_TABLE,
    WORK_MOVES_GENERAL,
    WORK_SPAWNS_TABLE,
    WORK_SPAWNS_GENERAL,
    WORK_SPAWNS_TABLE_CHACHA20,
    WORK_SPAWNS_GENERAL_CHACHA20
} work;

typedef struct engine_set {
    const eng_board *boards;
    const eng_bits *bits;
    const eng_tables *tables;
    size_t n;
} engine_set;

static uint64_t run_pass(const engine_set *s, work w) {
    switch (w) {
    case WORK_MOVES_TABLE:
        return bench_pass_moves_table(s->bits, s->n, s->tables);
    case WORK_MOVES_GENERAL:
        return bench_pass_moves_general(s->boards, s->n);
    case WORK_SPAWNS_TABLE:
        return bench_pass_spawns_table(s->bits, s->n, ENG_RNG_MULBERRY32);
    case WORK_SPAWNS_GENERAL:
        return bench_pass_spawns_general(s->boards, s->n, ENG_RNG_MULBERRY32);
    case WORK_SPAWNS_TABLE_CHACHA20:
        return bench_pass_spawns_table(s->bits, s->n, ENG_RNG_CHACHA20);
    case WORK_SPAWNS_GENERAL_CHACHA20:
        return bench_pass_spawns_general(s->boards, s->n, ENG_RNG_CHACHA20);
    }
    return 0;
}

/* Warms up with one pass, then repeats whole passes until seconds have gone
 * by, reading the clock only between passes. Returns seconds per pass. */
static double time_passes(const engine_set *s, work w, double seconds) {
    bench_sink += run_pass(s, w);
    long passes = 0;
    double start = now_seconds(), elapsed;
    do {
        bench_sink += run_pass(s, w);
        passes++;
        elapsed = now_seconds() - start;
    } while (elapsed < seconds);
    return elapsed / (double)passes;
}

static void report(const char *what, const char *impl, uint32_t verify, const char *unit,
                   double ops_per_pass, double seconds_per_pass) {
    double per_s = ops_per_pass / seconds_per_pass;
    printf("%s impl=%s verify=0x%08x %ss_per_s=%.0f ns_per_%s=%.3f\n", what, impl, verify,
           unit, per_s, unit, 1e9 / per_s);
    fflush(stdout);
}

static int bench_engine(double seconds) {
    int rc = 1;
    engine_set s = {.n = BENCH_BOARDS};
    eng_board *boards = bench_boards_new(s.n);
    eng_bits *bits = boards ? bench_bits_new(boards, s.n) : NULL;
    eng_tables *tables = malloc(sizeof *tables);
    if (!boards || !bits || !tables) {
        fprintf(stderr, "race2048-bench: cannot build the board set (out of memory)\n");
        goto done;
    }
    eng_tables_init(tables);
    s.boards = boards;
    s.bits = bits;
    s.tables = tables;

    /* Checked before any timing: a fast wrong engine is worth nothing. */
    uint32_t v_mt = bench_verify_moves_table(bits, s.n, tables);
    uint32_t v_mg = bench_verify_moves_general(boards, s.n);
    uint32_t v_st = bench_verify_spawns_table(bits, s.n, ENG_RNG_MULBERRY32);
    uint32_t v_sg = bench_verify_spawns_general(boards, s.n, ENG_RNG_MULBERRY32);
    uint32_t v_ct = bench_verify_spawns_table(bits, s.n, ENG_RNG_CHACHA20);
    uint32_t v_cg = bench_verify_spawns_general(boards, s.n, ENG_RNG_CHACHA20);
    double moves = 4.0 * (double)s.n, spawns = (double)s.n;

    report("engine", "table", v_mt, "move", moves,
           time_passes(&s, WORK_MOVES_TABLE, seconds));
    report("engine", "general", v_mg, "move", moves,
           time_passes(&s, WORK_MOVES_GENERAL, seconds));
    report("spawn", "table", v_st, "spawn", spawns,
           time_passes(&s, WORK_SPAWNS_TABLE, seconds));
    report("spawn", "general", v_sg, "spawn", spawns,
           time_passes(&s, WORK_SPAWNS_GENERAL, seconds));
    /* Server-seeded games draw from ChaCha20: the same work on that stream. */
    report("spawn", "table-chacha20", v_ct, "spawn", spawns,
           time_passes(&s, WORK_SPAWNS_TABLE_CHACHA20, seconds));
    report("spawn", "general-chacha20", v_cg, "spawn", spawns,
           time_passes(&s, WORK_SPAWNS_GENERAL_CHACHA20, seconds));

    rc = 0;
    if (v_mt != BENCH_MOVE_VERIFY || v_mg != BENCH_MOVE_VERIFY ||
        v_st != BENCH_SPAWN_VERIFY || v_sg != BENCH_SPAWN_VERIFY ||
        v_ct != BENCH_SPAWN_CHACHA20_VERIFY || v_cg != BENCH_SPAWN_CHACHA20_VERIFY) {
        fprintf(stderr,
                "race2048-bench: checksum mismatch (want moves 0x%08x, spawns 0x%08x, "
                "chacha20 spawns 0x%08x)\n",
                BENCH_MOVE_VERIFY, BENCH_SPAWN_VERIFY, BENCH_SPAWN_CHACHA20_VERIFY);
        rc = 1;
    }
done:
    free(tables);
    free(bits);
    bench_boards_free(boards);
    return rc;
}

/* ----------------------------------------------------------- dispatch --- */

/* The top level's --help (engine's too): the subcommands, each with its own. */
static const char bench_usage[] =
    "usage: race2048-bench [--help] [--version] engine [SECONDS] | server [OPTIONS] | "
    "spectators [OPTIONS] | ai [OPTIONS] | bots [OPTIONS] | accounts [OPTIONS]\n";
static const char bench_about[] =
    "  engine   move and spawn throughput, table and general paths;\n"
    "           SECONDS per figure, a positive number (default 2)\n"
    "  server   load on a running race2048d: moves/s and latency\n"
    "           (race2048-bench server --help lists its OPTIONS)\n"
    "  spectators  server CPU per move per spectator, JSON, WebSocket or text\n"
    "           (race2048-bench spectators --help lists its OPTIONS)\n"
    "  ai       the AI's strength and speed on seeded games, offline\n"
    "           (race2048-bench ai --help lists its OPTIONS)\n"
    "  bots     the server's bot levels: solo strength, speed, and races of\n"
    "           each level against the one below, offline\n"
    "           (race2048-bench bots --help lists its OPTIONS)\n"
    "  accounts a million accounts in memory: leaderboard, profile and rated\n"
    "           update times, bytes per account, offline\n"
    "           (race2048-bench accounts --help lists its OPTIONS)\n"
    "  --version prints the version (" RACE2048_VERSION ")\n";

static const args_flag help_flags[] = {
    {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
    {.name = "--version", .kind = ARGS_VERSION},
};

/* SECONDS: a positive, finite number of seconds, at most a day. */
static bool parse_seconds(const char *text, void *to) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v <= 0 || v > 86400) return false;
    *(double *)to = v;
    return true;
}

static int cmd_engine(int argc, char **argv) {
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "engine",
        .version = RACE2048_VERSION,
        .usage = bench_usage,
        .about = bench_about,
        .flags = help_flags,
        .nflags = 1, /* --help only */
        .positional = "SECONDS",
        .max_positional = 1,
    };
    args_rest rest;
    int rc = args_parse(&spec, argc, argv, &rest);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    double seconds = 2;
    if (rest.npositional && !parse_seconds(rest.positional[0], &seconds)) {
        args_fail(&spec,
                  "SECONDS: '%s' is not valid; expected a positive number up to 86400",
                  rest.positional[0]);
        return 2;
    }
    return bench_engine(seconds);
}

/* One entry per subcommand; each gets the arguments after its name. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"engine", cmd_engine}, {"server", loadgen_main},  {"spectators", spectate_main},
    {"ai", bench_ai_main},  {"bots", bench_bots_main}, {"accounts", bench_accounts_main},
};

int main(int argc, char **argv) {
    const args_spec spec = {
        .prog = "race2048-bench",
        .version = RACE2048_VERSION,
        .usage = bench_usage,
        .about = bench_about,
        .flags = help_flags,
        .nflags = ARGS_COUNT(help_flags),
        .positional = "a benchmark",
        .max_positional = 1,
        .stop_at_positional = true,
    };
    args_rest rest;
    int rc = args_parse(&spec, argc - 1, argv + 1, &rest);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    if (!rest.npositional) {
        args_fail(&spec, "which benchmark: engine or server?");
        return 2;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(rest.positional[0], commands[i].name) == 0)
            return commands[i].run(argc - 1 - rest.next, argv + 1 + rest.next);
    args_fail(&spec, "unknown subcommand '%s'", rest.positional[0]);
    return 2;
}
