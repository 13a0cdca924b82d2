/* test_server_arena_crowd.c - 1000 entrants in one arena (light raw clients that play
 * every race they are paired into) cost a client of another room no stall. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Minutes and waits are divided by this (RACE2048_TEST_ARENA_SCALE): the
 * arena starts 5 s after it is made (starts_in 100) and lasts 3 minutes. */
#define SCALE          "20"
#define CROWD          1000
#define PLAYERS        8 /* races of 8: 125 of them at each full pairing */
#define MIN_PINGS      100
#define PING_MARGIN_MS 50 /* as the spectator tests: harness_latency_bound */
#define CROWD_WAIT     60000

static void send_all(int fd, const char *data) {
    size_t len = strlen(data);
    assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* One light entrant: it reads every line, and answers each `start` with a
 * burst of moves (races to 8 end within a few). */
typedef struct entrant {
    int fd;
    char buf[65536]; /* the line being read (longer lines: only their start) */
    size_t len;
    long starts, ends, updates, errors;
    bool eof;
} entrant;

/* A burst of moves that changes a 4x4 board almost always. */
static const char burst[] =
    "{\"type\":\"move\",\"dir\":\"left\"}\n{\"type\":\"move\",\"dir\":\"down\"}\n"
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"move\",\"dir\":\"down\"}\n"
    "{\"type\":\"move\",\"dir\":\"left\"}\n{\"type\":\"move\",\"dir\":\"up\"}\n"
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"move\",\"dir\":\"down\"}\n"
    "{\"type\":\"move\",\"dir\":\"left\"}\n{\"type\":\"move\",\"dir\":\"up\"}\n"
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"move\",\"dir\":\"down\"}\n";

static void on_line(entrant *e, const char *line) {
    if (!strncmp(line, "{\"type\":\"start\"", 15)) {
        e->starts++;
        send_all(e->fd, burst);
    } else if (!strncmp(line, "{\"type\":\"end\"", 13)) {
        e->ends++;
    } else if (!strncmp(line, "{\"type\":\"arena\"", 15)) {
        e->updates++;
    } else if (!strncmp(line, "{\"type\":\"error\"", 15)) {
        e->errors++; /* moves of a burst that came after its race's end */
    }
}

/* Reads what e has; false at EOF. */
static bool drain(entrant *e) {
    char chunk[65536];
    for (;;) {
        ssize_t n = recv(e->fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n == 0) {
            e->eof = true;
            return false;
        }
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        for (ssize_t i = 0; i < n; i++) {
            if (chunk[i] == '\n') {
                e->buf[e->len < sizeof e->buf ? e->len : sizeof e->buf - 1] = '\0';
                on_line(e, e->buf);
                e->len = 0;
            } else if (e->len < sizeof e->buf - 1) {
                e->buf[e->len++] = chunk[i];
            }
        }
    }
}

/* Serves the crowd for up to ms (what is readable now, then what comes). */
static void pump(entrant *es, int n, int ms, struct pollfd *pfd) {
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = es[i].fd, .events = POLLIN};
    int ready = poll(pfd, (nfds_t)n, ms);
    assert_true(ready >= 0 || errno == EINTR);
    for (int i = 0; ready > 0 && i < n; i++)
        if (pfd[i].revents && !drain(&es[i]))
            fail_msg("entrant %d: the server closed its connection", i);
}

static long total(const entrant *es, int n, size_t field) {
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += *(const long *)((const char *)&es[i] + field);
    return sum;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* 1000 entrants join one arena of 8-player races before its start, then play
 * every race they are paired into (each end sends them back to the pool, and
 * full races form again at once): a client of a solo game keeps answering
 * pings, p99 within harness_latency_bound of its p99 before the crowd came
 * (as the spectator tests), from before the arena's first pairing round of
 * 1000 until every entrant has raced at least twice on average. */
static void test_thousand_entrants(void **state) {
    (void)state;
    fit_fds(CROWD + 16);
    setenv("RACE2048_TEST_ARENA_SCALE", SCALE, 1);
    th_server *s = SERVER("--max-clients", "10000", "--max-per-ip", "10000",
                          "--max-games-per-min", "1000000", "--max-output", "16777216");
    unsetenv("RACE2048_TEST_ARENA_SCALE");
    client *innocent = client_named(s, "innocent");
    client_send(innocent, "{\"type\":\"solo\"}");
    client_expect(innocent, "start", WAIT);
    th_pings idle = client_pings(s, innocent, TH_PINGS_MAX);
    int64_t baseline = idle.rtt_ms[idle.n - 2]; /* the second slowest of 64 */

    client *host = client_named(s, "host");
    char fields[160];
    snprintf(fields, sizeof fields,
             "{\"type\":\"arena_create\",\"name\":\"crowd\",\"minutes\":60,"
             "\"players\":%d,\"size\":4,\"target\":8,\"starts_in\":100}",
             PLAYERS);
    client_send(host, "%s", fields);
    json_t *made = client_expect(host, "arena", WAIT);
    char join[128];
    snprintf(join, sizeof join, "{\"type\":\"arena_join\",\"arena\":\"%s\"}\n",
             jstr(made, "arena"));

    entrant *es = calloc(CROWD, sizeof *es);
    struct pollfd *pfd = calloc(CROWD, sizeof *pfd);
    assert_non_null(es);
    assert_non_null(pfd);
    for (int i = 0; i < CROWD; i++) {
        char hello[96];
        snprintf(hello, sizeof hello, "{\"type\":\"hello\",\"name\":\"e%d\"}\n", i);
        es[i].fd = harness_raw_connect(s, 0);
        send_all(es[i].fd, hello);
        send_all(es[i].fd, join);
        if (i % 64 == 63) pump(es, i + 1, 0, pfd);
    }
    /* Every entrant has its `arena` reply (its first: updates come after it). */
    int64_t deadline = harness_now_ms() + harness_ms(CROWD_WAIT);
    for (int i = 0; i < CROWD;) {
        assert_true(harness_remaining(deadline) > 0);
        if (es[i].updates)
            i++;
        else
            pump(es, CROWD, 50, pfd);
    }
    client_send(host, "{\"type\":\"arena_results\",\"arena\":\"%s\"}",
                jstr(made, "arena"));
    json_t *before = client_expect(host, "arena", WAIT);
    assert_int_equal(jint(before, "entrants"), CROWD);
    bool upcoming = !strcmp(jstr(before, "status"), "upcoming");

    /* Pings between turns of serving the crowd, from before the start until
     * the crowd has raced twice each on average (and at least MIN_PINGS). */
    size_t cap = 4096, nrtt = 0;
    int64_t *rtt = calloc(cap, sizeof *rtt);
    assert_non_null(rtt);
    while (nrtt < MIN_PINGS || total(es, CROWD, offsetof(entrant, starts)) < 2L * CROWD) {
        assert_true(harness_remaining(deadline) > 0);
        pump(es, CROWD, 10, pfd);
        int64_t t0 = harness_now_ms();
        client_sync(innocent);
        if (nrtt < cap) rtt[nrtt++] = harness_now_ms() - t0;
    }
    long starts = total(es, CROWD, offsetof(entrant, starts));
    long ends = total(es, CROWD, offsetof(entrant, ends));
    long updates = total(es, CROWD, offsetof(entrant, updates));
    long errors = total(es, CROWD, offsetof(entrant, errors));
    qsort(rtt, nrtt, sizeof rtt[0], cmp_i64);
    int64_t p50 = rtt[nrtt / 2], p99 = rtt[(nrtt * 99 + 99) / 100 - 1];
    int64_t bound = harness_latency_bound(baseline, PING_MARGIN_MS);
    fprintf(stderr,
            "%d entrants (%s at the first ping): %ld starts, %ld ends, %ld arena "
            "updates, %ld errors; innocent ping p50 %lld ms, p99 %lld ms, max %lld ms "
            "over %zu pings (p99 before the crowd %lld ms, bound %lld ms)\n",
            CROWD, upcoming ? "upcoming" : "running", starts, ends, updates, errors,
            (long long)p50, (long long)p99, (long long)rtt[nrtt - 1], nrtt,
            (long long)baseline, (long long)bound);
    /* Races ended and their entrants were paired again. */
    assert_true(ends >= CROWD);
    for (int i = 0; i < CROWD; i++)
        close(es[i].fd);
    free(es);
    free(pfd);
    free(rtt);
    if (p99 > bound)
        fail_msg("the innocent's ping p99 was %lld ms (at most %lld)", (long long)p99,
                 (long long)bound);
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_thousand_entrants, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
