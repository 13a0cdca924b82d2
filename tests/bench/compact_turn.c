/* compact_turn.c - a benchmark, not a test: the longest loop turn of a journal
 * compaction with N accounts (every ring full), against the longest turn of the
 * same loop's plain commits before it.
 *
 *   compact_turn [ACCOUNTS [DIR [DAILY]]]     (100000, /tmp, 0)
 *
 * DAILY of the accounts have played today's daily game of size 4 (a finished
 * entry each on the daily board, which the compaction writes too).
 *
 * The loop runs with an idle handle, so that it never blocks in poll and every
 * turn (check to check) is work: timers, I/O callbacks, the compaction's start
 * and its end on the loop. Prints key=value lines. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "accounts.h"
#include "daily.h"
#include "journal.h"

static uv_loop_t loop;
static journal *jrn;
static uint64_t turn_began, turns, cpu_began;
#define TURNS_MAX 1000000
static uint64_t took_ns[TURNS_MAX]; /* each turn's length, in order */
static uint64_t cpu_ns[TURNS_MAX];  /* the loop thread's CPU time in it */
static size_t nturns;
static uint64_t next_player_id = 1;

static void on_idle(uv_idle_t *h) {
    (void)h;
}

/* The loop thread's CPU time: a turn's work without the time the (busy,
 * shared) machine gave other processes. The thread pool's work is not in it. */
static uint64_t thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void on_check(uv_check_t *h) {
    uint64_t now = uv_hrtime(), cpu = thread_cpu_ns();
    if (turn_began && nturns < TURNS_MAX) {
        took_ns[nturns] = now - turn_began;
        cpu_ns[nturns++] = cpu - cpu_began;
    }
    turn_began = now;
    cpu_began = cpu;
    turns++;
    /* Done: a compaction finished and the loop went on a few turns. */
    static uint64_t after;
    if (journal_get_stats(jrn).compactions > 0 && ++after > 100) uv_stop(h->loop);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* An account with every ring full and a rating past its provisional games. */
static void fill(acct_store *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        acct_snapshot snap = {0};
        snprintf(snap.name, sizeof snap.name, "acct%u", (unsigned)(i % 1000000000u));
        for (size_t b = 0; b < sizeof snap.salt; b++)
            snap.salt[b] = (uint8_t)(i + b);
        for (size_t b = 0; b < sizeof snap.key_hash; b++)
            snap.key_hash[b] = (uint8_t)(i * 7 + b);
        snap.mu = 25.0 + (double)(i % 1000) / 100.0;
        snap.sigma = 3.0 + (double)(i % 7) / 10.0;
        snap.games = 40;
        snap.wins = 17;
        for (int k = 0; k < ACCT_SIZES; k++)
            snap.best[k] = (acct_best){.score = 20000 + (uint32_t)i,
                                       .max_tile = 2048,
                                       .game = 1000000 + i * 8 + (uint64_t)k};
        snap.n_recent = ACCT_RECENT;
        for (int k = 0; k < ACCT_RECENT; k++)
            snap.recent[k] = 5000000 + i * 32 + (uint64_t)k;
        snap.n_chart = ACCT_CHART;
        for (int k = 0; k < ACCT_CHART; k++)
            snap.chart[k] = 1500 + k;
        if (acct_restore(s, &snap, NULL) != ACCT_OK) {
            fprintf(stderr, "compact_turn: acct_restore failed at %zu\n", i);
            exit(1);
        }
    }
}

static void close_handle(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    size_t ndaily = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 0;
    char path[512];
    snprintf(path, sizeof path, "%s/compact_turn.%d.journal", dir, (int)getpid());
    acct_store accounts;
    if (uv_loop_init(&loop) < 0 || acct_init(&accounts, 1) != ACCT_OK) return 1;
    fill(&accounts, n);
    daily_boards boards;
    daily_init(&boards, 2);
    int32_t today = daily_day_of_ms(journal_wall_ms());
    for (size_t i = 0; i < ndaily && i < n; i++) {
        const acct_account *a = acct_at(&accounts, i);
        daily_result r = {.score = (uint32_t)(1000 + i),
                          .max_tile = 256,
                          .moves = 300,
                          .end_ms = journal_wall_ms(),
                          .game = 9000000 + i};
        if (daily_begin(&boards, today, 4, a) != DAILY_OK ||
            daily_finish(&boards, today, 4, a, &r) != DAILY_OK) {
            fprintf(stderr, "compact_turn: daily entry %zu failed\n", i);
            return 1;
        }
    }
    journal_config cfg = {.path = path,
                          .sync_ms = 5,
                          .max = 1u << 20,
                          .next_player_id = &next_player_id,
                          .accounts = &accounts,
                          .daily = &boards};
    jrn_recovery rec;
    if (journal_open(&jrn, &loop, &cfg, &rec) < 0) return 1;
    journal_recovery_free(&rec);
    /* Records up to the compaction's threshold, one commit's worth at a time
     * from a timer (each turn then does as a busy server's would). */
    uv_idle_t idle;
    uv_check_t check;
    uv_idle_init(&loop, &idle);
    uv_idle_start(&idle, on_idle);
    uv_check_init(&loop, &check);
    uv_check_start(&check, on_check);
    /* Records (about 700 bytes each) up to twice --journal-max, then one a
     * millisecond, as a steady server's, until a compaction has ended. */
    size_t next = 0;
    uint64_t fed_ns = 0;
    while (journal_get_stats(jrn).compactions == 0 && turns < 100000000) {
        uint64_t now = uv_hrtime();
        if (next * 700 < 2 * cfg.max || now - fed_ns > 1000000) {
            (void)journal_account(jrn, acct_at(&accounts, next++ % n));
            fed_ns = now;
        }
        uv_run(&loop, UV_RUN_ONCE);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    /* Wall time per turn includes whatever else the machine ran; the loop
     * thread's CPU time per turn is the compaction's own cost. */
    qsort(took_ns, nturns, sizeof *took_ns, cmp_u64);
    qsort(cpu_ns, nturns, sizeof *cpu_ns, cmp_u64);
    printf("daily_entries=%zu\n", ndaily < n ? ndaily : n);
    printf("accounts=%zu\nturns=%zu\nlongest_turn_wall_ms=%.3f\n"
           "longest_turn_cpu_ms=%.3f\nsecond_longest_turn_cpu_ms=%.3f\n"
           "p999_turn_cpu_ms=%.3f\n",
           n, nturns, nturns ? (double)took_ns[nturns - 1] / 1e6 : 0.0,
           nturns ? (double)cpu_ns[nturns - 1] / 1e6 : 0.0,
           nturns > 1 ? (double)cpu_ns[nturns - 2] / 1e6 : 0.0,
           nturns ? (double)cpu_ns[nturns - nturns / 1000 - 1] / 1e6 : 0.0);
    uv_close((uv_handle_t *)&idle, NULL);
    uv_close((uv_handle_t *)&check, NULL);
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    journal_close(jrn);
    daily_free(&boards);
    acct_free(&accounts);
    unlink(path);
    char results[600];
    snprintf(results, sizeof results, "%s.results", path);
    unlink(results);
    snprintf(results, sizeof results, "%s.lock", path);
    unlink(results);
    return 0;
}
