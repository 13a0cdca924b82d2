/* bench_accounts.c - race2048-bench accounts: fills the accounts table
 * (server/accounts/accounts.c) and a daily board, then times leaderboards, profiles and
 * rating updates. */
#include "bench_accounts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accounts.h"
#include "args.h"
#include "bench_util.h"
#include "daily.h"

/* --help: the usage (its first line also follows a bad option) and the rest. */
static const char accounts_usage[] =
    "usage: race2048-bench accounts [--accounts N] [--reps N] [--seed N]\n";
static const char accounts_about[] =
    "  fills N accounts (default 1000000) with random ratings, games and recent games,\n"
    "  then times a 100-row rating leaderboard, a profile (with its rank), a rated\n"
    "  update and a 100-row daily leaderboard (of N/10 results), each --reps times\n"
    "  (default 20000); prints key=value lines: p50/p99 in microseconds, bytes per\n"
    "  account (RSS growth / N) and per daily result\n";

/* Every formatted row lands here, so no timed work can be optimised away. */
static volatile size_t sink;

static uint64_t rng;
static uint64_t next_random(void) { /* splitmix64: repeatable with --seed */
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static double uniform(void) {
    return (double)(next_random() >> 11) * 0x1p-53;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Resident set size in bytes, from /proc/self/statm (0 if unreadable). */
static double rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

static void report_times(const char *what, double *us, size_t n) {
    qsort(us, n, sizeof *us, bench_cmp_double);
    printf("%s_p50_us=%.3f\n%s_p99_us=%.3f\n%s_max_us=%.3f\n", what, us[n / 2], what,
           us[(size_t)((double)n * 0.99)], what, us[n - 1]);
}

/* The `leaderboard` reply's rows as the server would write them. */
static size_t format_leaderboard(const acct_store *s, char *buf, size_t cap) {
    const acct_account *rows[100];
    size_t n = acct_top(s, 1, rows, 100), len = 0;
    len += (size_t)snprintf(buf, cap,
                            "{\"type\":\"leaderboard\",\"board\":\"rating\",\"rows\":[");
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(
            buf + len, cap - len,
            "%s{\"rank\":%zu,\"name\":\"%s\",\"rating\":%d,\"games\":%u}", i ? "," : "",
            i + 1, rows[i]->name, acct_rating(rows[i]), rows[i]->games);
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "]}");
    return len;
}

/* The `profile` reply, with the account's rank (0 if provisional) and chart. */
static size_t format_profile(const acct_store *s, const char *name, char *buf,
                             size_t cap) {
    const acct_account *a = acct_find(s, name);
    if (!a) return 0;
    uint64_t recent[ACCT_RECENT];
    int32_t chart[ACCT_CHART];
    size_t n_recent = acct_recent(a, recent), n_chart = acct_chart(a, chart);
    size_t len = (size_t)snprintf(
        buf, cap,
        "{\"type\":\"profile\",\"name\":\"%s\",\"rating\":{\"rating\":%d,\"mu\":%.6f,"
        "\"sigma\":%.6f,\"games\":%u,\"provisional\":%s},\"rank\":%zu,\"races\":%u,"
        "\"wins\":%u,\"best\":[",
        a->name, acct_rating(a), a->mu, a->sigma, a->games,
        acct_provisional(a) ? "true" : "false", acct_rank(s, a), a->games, a->wins);
    bool first = true;
    for (int i = 0; i < ACCT_SIZES && len < cap; i++) {
        if (!a->best[i].game) continue;
        len +=
            (size_t)snprintf(buf + len, cap - len,
                             "%s{\"size\":%d,\"score\":%u,\"max_tile\":%u,\"game\":%llu}",
                             first ? "" : ",", i + ACCT_SIZE_MIN, a->best[i].score,
                             a->best[i].max_tile, (unsigned long long)a->best[i].game);
        first = false;
    }
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "],\"recent\":[");
    for (size_t i = 0; i < n_recent && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%llu", i ? "," : "",
                                (unsigned long long)recent[i]);
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "],\"chart\":[");
    for (size_t i = 0; i < n_chart && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? "," : "", chart[i]);
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "]}");
    return len;
}

/* Account i's name ("Racer" or "r_" and i; i < 10^9 keeps it within 16). */
static void account_name(char out[ACCT_NAME_MAX + 1], size_t i) {
    snprintf(out, ACCT_NAME_MAX + 1, "%s%u", i % 3 ? "Racer" : "r_",
             (unsigned)(i % 1000000000u));
}

/* Fills s with n accounts: registered with made-up keys, then restored from a
 * snapshot with random skill, games, wins, bests, recent games and chart. */
static int fill(acct_store *s, size_t n) {
    char name[ACCT_NAME_MAX + 1];
    uint64_t game = 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
        for (int k = 0; k < 2; k++) {
            uint64_t r = next_random(), t = next_random();
            memcpy(key + 8 * k, &r, 8);
            memcpy(salt + 8 * k, &t, 8);
        }
        account_name(name, i);
        acct_account *a = NULL;
        int rc = acct_register(s, name, key, salt, &a);
        if (rc != ACCT_OK) {
            fprintf(stderr, "race2048-bench accounts: %s: %s\n", name, acct_strerror(rc));
            return -1;
        }
        acct_snapshot snap;
        acct_snapshot_of(a, &snap);
        /* A skill around the start, games spread so ~90% are not provisional. */
        double u1 = uniform() + 1e-12, u2 = uniform();
        snap.mu = 25 + 6 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
        snap.sigma = 1 + 7 * uniform();
        snap.games = (uint32_t)(next_random() % 200);
        snap.wins = snap.games ? (uint32_t)(next_random() % (snap.games + 1)) : 0;
        for (int b = 0; b < ACCT_SIZES; b++)
            if (next_random() % 2)
                snap.best[b] = (acct_best){(uint32_t)(next_random() % 60000),
                                           2u << (next_random() % 12), game++};
        snap.n_recent = ACCT_RECENT;
        for (size_t r = 0; r < ACCT_RECENT; r++)
            snap.recent[r] = game++;
        snap.n_chart = snap.games < ACCT_CHART ? snap.games : ACCT_CHART;
        for (size_t c = 0; c < snap.n_chart; c++)
            snap.chart[c] = (int32_t)(1500 + (int64_t)(next_random() % 600) - 300);
        if ((rc = acct_restore(s, &snap, NULL)) != ACCT_OK) {
            fprintf(stderr, "race2048-bench accounts: restore: %s\n", acct_strerror(rc));
            return -1;
        }
    }
    return 0;
}

int bench_accounts_main(int argc, char **argv) {
    long accounts = 1000000, reps = 20000, seed = 2048;
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--accounts",
         .kind = ARGS_LONG,
         .to = &accounts,
         .lo = 1,
         .hi = 50000000,
         .arg = "N"},
        {.name = "--reps",
         .kind = ARGS_LONG,
         .to = &reps,
         .lo = 1,
         .hi = 10000000,
         .arg = "N"},
        {.name = "--seed",
         .kind = ARGS_LONG,
         .to = &seed,
         .lo = 1,
         .hi = 0x7fffffff,
         .arg = "N"},
    };
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "accounts",
        .usage = accounts_usage,
        .about = accounts_about,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int parsed = args_parse(&spec, argc, argv, NULL);
    if (parsed != ARGS_RUN) return parsed == ARGS_DONE ? 0 : 2;
    rng = (uint64_t)seed;
    size_t n = (size_t)accounts, r = (size_t)reps;
    double *us = malloc(r * sizeof *us);
    char *buf = malloc(65536);
    size_t *pick = malloc(r * sizeof *pick);
    acct_store s;
    if (!us || !buf || !pick || acct_init(&s, (uint64_t)seed) != ACCT_OK) {
        fprintf(stderr, "race2048-bench accounts: out of memory\n");
        return 1;
    }
    double rss0 = rss_bytes(), t0 = now_us();
    if (fill(&s, n)) return 1;
    double fill_us = now_us() - t0, rss1 = rss_bytes();
    printf("accounts=%zu\nranked=%zu\nfill_us_per_account=%.3f\n", n, acct_ranked(&s),
           fill_us / (double)n);
    printf("bytes_per_account=%.0f\nsizeof_account=%zu\n", (rss1 - rss0) / (double)n,
           acct_account_bytes());

    for (size_t i = 0; i < r; i++) {
        double a = now_us();
        sink += format_leaderboard(&s, buf, 65536);
        us[i] = now_us() - a;
    }
    report_times("leaderboard100", us, r);
    for (size_t i = 0; i < r; i++) {
        const acct_account *rows[100];
        double a = now_us();
        sink += acct_top(&s, 1, rows, 100);
        us[i] = now_us() - a;
    }
    report_times("leaderboard100_index_only", us, r);

    char name[ACCT_NAME_MAX + 1];
    for (size_t i = 0; i < r; i++)
        pick[i] = (size_t)(next_random() % n);
    for (size_t i = 0; i < r; i++) {
        account_name(name, pick[i]);
        double a = now_us();
        sink += format_profile(&s, name, buf, 65536);
        us[i] = now_us() - a;
    }
    report_times("profile", us, r);
    for (size_t i = 0; i < r; i++) {
        const acct_account *a = acct_at(&s, pick[i]);
        double t = now_us();
        sink += acct_rank(&s, a);
        us[i] = now_us() - t;
    }
    report_times("rank_only", us, r);
    for (size_t i = 0; i < r; i++) {
        acct_account *a = acct_at(&s, pick[i]);
        rating_skill after = {a->mu + (uniform() - 0.5), a->sigma * 0.999};
        double t = now_us();
        int rc = acct_apply_rating(&s, a, after, next_random() & 1);
        us[i] = now_us() - t;
        if (rc != ACCT_OK) return 1;
    }
    report_times("rated_update", us, r);
    if (!acct_check(&s)) {
        fprintf(stderr, "race2048-bench accounts: the table's check failed\n");
        return 1;
    }

    /* One day's board of a given size with a tenth of the accounts on it. */
    daily_boards d;
    daily_init(&d, (uint64_t)seed);
    size_t on_board = n / 10 ? n / 10 : 1;
    double rss2 = rss_bytes();
    for (size_t i = 0; i < on_board; i++) {
        const acct_account *a = acct_at(&s, i);
        daily_result res = {(uint32_t)(next_random() % 40000), 2u << (next_random() % 11),
                            (uint32_t)(next_random() % 3000),
                            (int64_t)(next_random() % 86400000), i + 1};
        if (daily_begin(&d, 20790, 4, a) != DAILY_OK ||
            daily_finish(&d, 20790, 4, a, &res) != DAILY_OK)
            return 1;
    }
    printf("daily_results=%zu\nbytes_per_daily_result=%.0f\n", on_board,
           (rss_bytes() - rss2) / (double)on_board);
    for (size_t i = 0; i < r; i++) {
        const daily_entry *rows[100];
        double t = now_us();
        sink += daily_top(&d, 20790, 4, 1, rows, 100);
        for (size_t k = 0; k < 100 && k < on_board; k++)
            sink += rows[k]->result.score;
        us[i] = now_us() - t;
    }
    report_times("daily100_index_only", us, r);
    daily_free(&d);
    acct_free(&s);
    free(us);
    free(buf);
    free(pick);
    return 0;
}
