/* test_server_hostile.c - race2048d under attack: floods, non-readers, slowloris,
 * per-address and descriptor limits, SIGTERM under flood, a paused process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ---------------------------------------------------------------- helpers --- */

/* A raw loopback socket to s, connected, non-blocking. rcvbuf > 0 shrinks
 * its receive buffer first (a client that reads slowly, or not at all). */
/* Sends all of data on a non-blocking socket within ms; false if the server
 * closed it. */
static bool raw_send_all(int fd, const void *data, size_t len, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, harness_remaining(deadline)) <= 0) return false;
        } else {
            return false;
        }
    }
    return true;
}

/* Whether the server has closed fd (EOF or reset), reading and dropping
 * whatever it sent, waiting up to ms. Bytes seen are appended to seen (up to
 * cap, NUL-terminated) when seen is not NULL. */
static bool raw_closed_within(int fd, int ms, char *seen, size_t cap) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    size_t have = seen ? strlen(seen) : 0;
    for (;;) {
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
        if (n > 0) {
            if (seen && have + 1 < cap) {
                size_t k = (size_t)n < cap - 1 - have ? (size_t)n : cap - 1 - have;
                memcpy(seen + have, buf, k);
                have += k;
                seen[have] = '\0';
            }
            continue;
        }
        int left = harness_remaining(deadline);
        if (left <= 0) return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        poll(&pfd, 1, left < 100 ? left : 100);
    }
}

/* ------------------------------------------------------------ the flood --- */

enum { FLOODERS = 16 };

typedef struct flood {
    int fds[FLOODERS];
    atomic_bool stop;
    atomic_long lines_sent;
    pthread_t thread;
} flood;

/* Each flooder reads what it gets (and drops it) and writes move lines back
 * to back in 64 KiB writes, as fast as the server lets it. */
static void *flood_run(void *arg) {
    flood *f = arg;
    static char burst[64 * 1024];
    static const char line[] = "{\"type\":\"move\",\"dir\":\"left\"}\n"
                               "{\"type\":\"move\",\"dir\":\"down\"}\n";
    size_t per = sizeof line - 1, n = 0;
    while (n + per <= sizeof burst) {
        memcpy(burst + n, line, per);
        n += per;
    }
    static char sink[1 << 16];
    struct pollfd pfd[FLOODERS];
    while (!atomic_load(&f->stop)) {
        for (int i = 0; i < FLOODERS; i++)
            pfd[i] = (struct pollfd){.fd = f->fds[i], .events = POLLIN | POLLOUT};
        if (poll(pfd, FLOODERS, 50) <= 0) continue;
        for (int i = 0; i < FLOODERS; i++) {
            if (pfd[i].fd < 0) continue;
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                while (recv(pfd[i].fd, sink, sizeof sink, 0) > 0)
                    ;
            if (pfd[i].revents & POLLOUT) {
                ssize_t w = send(pfd[i].fd, burst, n, MSG_NOSIGNAL);
                if (w > 0)
                    atomic_fetch_add(&f->lines_sent, (long)((size_t)w / (per / 2)));
            }
        }
    }
    return NULL;
}

static void flood_start(flood *f, const th_server *s) {
    memset(f, 0, sizeof *f);
    static const char hello[] = "{\"type\":\"hello\",\"name\":\"flood\"}\n"
                                "{\"type\":\"solo\",\"size\":8}\n";
    for (int i = 0; i < FLOODERS; i++) {
        f->fds[i] = harness_raw_connect(s, 0);
        assert_true(raw_send_all(f->fds[i], hello, sizeof hello - 1, WAIT));
    }
    assert_int_equal(pthread_create(&f->thread, NULL, flood_run, f), 0);
}

static void flood_stop(flood *f) {
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    for (int i = 0; i < FLOODERS; i++)
        close(f->fds[i]);
}

/* 16 clients flood moves: a victim's pings are still answered at once,
 * memory stays bounded, and SIGTERM still stops the server in time. */
static void test_flood_fairness_memory_sigterm(void **state) {
    th_server *s = SERVER("--max-output", "65536");
    long rss_start = server_rss_kib(s);
    client *victim = client_named(s, "victim");
    enum { PINGS = 40 };
    /* The victim's round trips before the flood: the baseline. */
    th_pings idle = client_pings(s, victim, PINGS);
    flood f;
    flood_start(&f, s);
    /* Wait until the flood is under way. */
    int64_t until = harness_now_ms() + harness_ms(WAIT);
    while (atomic_load(&f.lines_sent) < 20000 && harness_now_ms() < until) {
        struct pollfd none;
        poll(&none, 0, 10);
    }
    assert_true(atomic_load(&f.lines_sent) >= 20000);

    th_pings pings = client_pings(s, victim, PINGS);
    const int64_t *rtt = pings.rtt_ms;
    long rss_max = pings.rss_max_kib;
    fprintf(stderr,
            "flood: ping p50 %lld ms, p99 %lld ms (%lld before), max %lld ms; "
            "rss %ld -> %ld KiB\n",
            (long long)rtt[PINGS / 2], (long long)rtt[PINGS - 2],
            (long long)idle.rtt_ms[PINGS - 2], (long long)rtt[PINGS - 1], rss_start,
            rss_max);
    /* p99 of 40 samples: the second worst, against the same before the flood. */
    assert_true(rtt[PINGS - 2] <= harness_latency_bound(idle.rtt_ms[PINGS - 2], 250));
    /* 64 MB plus --max-output per connection, over what the server started with. */
    assert_true(rss_max - rss_start <= 64 * 1024 + (FLOODERS + 1) * 64);

    /* SIGTERM while the flood goes on: a clean exit within 2 s. */
    int64_t t0 = harness_now_ms();
    assert_int_equal(server_stop(s), 0);
    int64_t took = harness_now_ms() - t0;
    fprintf(stderr, "flood: SIGTERM to exit %lld ms\n", (long long)took);
    assert_true(took <= harness_latency_ms(2000));
    flood_stop(&f);
}

/* ---------------------------------------------------------- non-reader --- */

/* A client that sends pings and never reads is stopped being read at half
 * of --max-output and, its output not moving, cut off after
 * --request-timeout; the server's memory does not grow with what it sent. */
static void test_nonreader_cut_off(void **state) {
    th_server *s = SERVER("--max-output", "65536", "--request-timeout", "2");
    long rss_start = server_rss_kib(s);
    client *honest = client_named(s, "honest");
    int fd = harness_raw_connect(s, 4096);
    static const char hello[] = "{\"type\":\"hello\",\"name\":\"deaf\"}\n";
    assert_true(raw_send_all(fd, hello, sizeof hello - 1, WAIT));
    static char pings[26 * 1000];
    for (size_t i = 0; i < 1000; i++)
        memcpy(pings + 26 * i, "{\"type\":\"ping\",\"t\":12345}\n", 26);
    size_t sent = 0;
    bool cut = false;
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    long rss_max = 0;
    while (!cut && harness_now_ms() < deadline) {
        ssize_t n = send(fd, pings, sizeof pings, MSG_NOSIGNAL);
        if (n > 0) {
            sent += (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            cut = true;
        } else {
            /* The socket is full: has the server closed it meanwhile? */
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, 100);
            cut = pfd.revents & (POLLERR | POLLHUP);
        }
        long r = server_rss_kib(s);
        if (r > rss_max) rss_max = r;
    }
    if (!cut) cut = raw_closed_within(fd, 1000, NULL, 0);
    fprintf(stderr,
            "non-reader: sent %zu bytes of pings, cut off %s, rss %ld -> %ld KiB\n", sent,
            cut ? "yes" : "no", rss_start, rss_max);
    assert_true(cut);
    assert_true(rss_max - rss_start <= 64 * 1024 + 2 * 64);
    close(fd);
    client_sync(honest); /* and everyone else is served */
}

/* ----------------------------------------------------------- slowloris --- */

/* Connections that dribble one byte at a time: an unfinished JSON line, an
 * unfinished text line, an unterminated telnet subnegotiation (closed by
 * --request-timeout) and empty lines (no request: closed by
 * --idle-timeout). An honest client that pings meanwhile stays. */
static void test_slowloris(void **state) {
    th_server *s = SERVER("--request-timeout", "2", "--idle-timeout", "3");
    enum { KINDS = 4, EACH = 8 };
    static const char *const payload[KINDS] = {
        "{\"type\":\"hello\",\"name\":\"slowslowslowslowslowslow\"}",
        "name slowslowslowslowslowslowslowslow",
        "\xff\xfa\x1f\x00\x50\x00\x18\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
        "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"};
    static const size_t plen[KINDS] = {50, 37, 18, 32};
    int fds[KINDS][EACH];
    bool closed[KINDS][EACH];
    static char seen[KINDS][EACH][8192]; /* the greeting screen comes first */
    memset(closed, 0, sizeof closed);
    memset(seen, 0, sizeof seen);
    for (int k = 0; k < KINDS; k++)
        for (int i = 0; i < EACH; i++)
            fds[k][i] = harness_raw_connect(s, 0);
    client *honest = client_named(s, "honest");
    int64_t start = harness_now_ms();
    int64_t deadline = start + harness_ms(9000);
    int open = KINDS * EACH;
    for (size_t step = 0; open && harness_now_ms() < deadline; step++) {
        for (int k = 0; k < KINDS; k++)
            for (int i = 0; i < EACH; i++) {
                if (closed[k][i]) continue;
                char byte = payload[k][step % plen[k]];
                if (send(fds[k][i], &byte, 1, MSG_NOSIGNAL) < 0 ||
                    raw_closed_within(fds[k][i], 0, seen[k][i], sizeof seen[k][i])) {
                    closed[k][i] = true;
                    open--;
                }
            }
        client_sync(honest);
        /* One byte per 500 ms from each: the pace is the attack. */
        struct pollfd none;
        poll(&none, 0, 500);
    }
    int64_t took = harness_now_ms() - start;
    fprintf(stderr, "slowloris: %d of %d still open after %lld ms\n", open, KINDS * EACH,
            (long long)took);
    assert_int_equal(open, 0);
    /* Not before the limits either: 2 s for a request, 3 s idle. */
    assert_true(took >= 2000);
    /* People were told why (the text and telnet ones). */
    assert_non_null(strstr(seen[1][0], "took too long"));
    assert_non_null(strstr(seen[2][0], "took too long"));
    for (int k = 0; k < KINDS; k++)
        for (int i = 0; i < EACH; i++)
            close(fds[k][i]);
    client_sync(honest);
}

/* --------------------------------------------------------- per address --- */

static void test_per_address_limit(void **state) {
    th_server *s = SERVER("--max-per-ip", "3");
    client *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = client_named(s, "local");
    /* A program is told in JSON, and why. */
    client *extra = client_connect(s);
    client_send(extra, "{\"type\":\"hello\",\"name\":\"fourth\"}");
    json_t *e = client_expect_error(extra, "server_full", WAIT);
    assert_non_null(strstr(jstr(e, "message"), "your address"));
    client_expect_eof(extra, WAIT);
    /* A person is told in words, never in JSON. */
    int fd = harness_raw_connect(s, 0);
    assert_true(raw_send_all(fd, "help\r\n", 6, WAIT));
    char seen[512] = "";
    assert_true(raw_closed_within(fd, WAIT, seen, sizeof seen));
    assert_non_null(strstr(seen, "too many connections from your address"));
    assert_null(strchr(seen, '{'));
    close(fd);
    /* One leaves: the next is welcome. */
    client_close(c[0]);
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        client *again = client_connect(s);
        client_send(again, "{\"type\":\"hello\",\"name\":\"again\"}");
        json_t *o = client_next(again, WAIT);
        assert_non_null(o);
        if (!strcmp(jstr(o, "type"), "welcome")) break;
        /* The server may not have seen the close yet. */
        assert_string_equal(jstr(o, "type"), "error");
        assert_true(harness_now_ms() < deadline);
        client_close(again);
    }
    client_sync(c[1]);
}

/* A connection from another loopback address (all of 127/8 is local),
 * blocking, for reading a reply line. */
static int raw_connect_from(const th_server *s, const char *ip) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in from = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, ip, &from.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof from), 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        fail_msg("connect: %s", strerror(errno));
    return fd;
}

/* Connections refused for their address are not clients: one address past
 * its --max-per-ip, holding refused connections open (each lives until its
 * refusal goes out), must not make the server full for everyone else. */
static void test_refused_do_not_fill_the_server(void **state) {
    th_server *s = SERVER("--max-clients", "4", "--max-per-ip", "1");
    client *a = client_named(s, "local");
    int silent[4];
    for (int i = 0; i < 4; i++)
        silent[i] = harness_raw_connect(s, 0); /* refused: too many from 127.0.0.1 */
    int fd = raw_connect_from(s, "127.0.0.2");
    static const char hello[] = "{\"type\":\"hello\",\"name\":\"other\"}\n";
    assert_int_equal(send(fd, hello, sizeof hello - 1, MSG_NOSIGNAL), sizeof hello - 1);
    char line[512] = "";
    size_t have = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (!strchr(line, '\n') && have + 1 < sizeof line) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        assert_true(poll(&pfd, 1, harness_remaining(deadline)) > 0);
        ssize_t n = recv(fd, line + have, sizeof line - 1 - have, 0);
        assert_true(n > 0);
        have += (size_t)n;
        line[have] = '\0';
    }
    /* One client in four seats: the newcomer is welcome, not server_full. */
    assert_non_null(strstr(line, "\"welcome\""));
    close(fd);
    for (int i = 0; i < 4; i++)
        close(silent[i]);
    client_sync(a);
}

/* ---------------------------------------------------------- descriptors --- */

/* With few descriptors, connections past what fits are refused with
 * server_full, never dropped silently, and the server keeps serving. */
static void test_descriptor_exhaustion(void **state) {
    const char *old = getenv("RACE2048D_WRAPPER");
    char *saved = old ? strdup(old) : NULL;
    char wrapper[512];
    snprintf(wrapper, sizeof wrapper, "prlimit --nofile=80:80 %s", saved ? saved : "");
    setenv("RACE2048D_WRAPPER", wrapper, 1);
    th_server *s = SERVER("--max-per-ip", "1000");
    if (saved)
        setenv("RACE2048D_WRAPPER", saved, 1);
    else
        unsetenv("RACE2048D_WRAPPER");
    free(saved);

    enum { N = 120 };
    client *c[N];
    for (int i = 0; i < N; i++) {
        c[i] = client_connect(s);
        client_send(c[i], "{\"type\":\"hello\",\"name\":\"many\"}");
    }
    int welcomed = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        json_t *o = client_next(c[i], WAIT);
        assert_non_null(o); /* never closed without a word */
        if (!strcmp(jstr(o, "type"), "welcome")) {
            welcomed++;
        } else {
            assert_string_equal(jstr(o, "type"), "error");
            assert_string_equal(jstr(o, "code"), "server_full");
            refused++;
        }
    }
    fprintf(stderr, "descriptors: %d welcomed, %d refused with server_full\n", welcomed,
            refused);
    assert_true(welcomed >= 10);
    assert_true(refused >= 1);
    assert_int_equal(welcomed + refused, N);
    /* Those welcomed are served. */
    client_sync(c[0]);
}

/* --------------------------------------------------------------- pause --- */

/* Sends a SIGSTOP, waits ms of real time (the pause itself is what is
 * tested, not a synchronisation), then SIGCONT. */
static void pause_server(const th_server *s, int ms) {
    assert_int_equal(kill(s->pid, SIGSTOP), 0);
    struct pollfd none;
    poll(&none, 0, ms);
}

static void resume_server(const th_server *s) {
    assert_int_equal(kill(s->pid, SIGCONT), 0);
}

/* After a pause longer than the idle timeout and the grace period, input
 * that arrived during it counts: a pinger is not closed as idle, and a
 * resume sent inside the grace period takes the seat back. */
static void test_pause_closes_nobody_who_spoke(void **state) {
    th_server *s = SERVER("--idle-timeout", "2", "--grace", "2");
    client *pinger = client_named(s, "pinger");
    client *p[2];
    race_start(s, 2, "\"size\":4", p, NULL);
    char token[64];
    snprintf(token, sizeof token, "%s", client_token(p[1]));
    client_close(p[1]);
    json_t *pl = client_expect_skip(p[0], "player", "state", WAIT);
    assert_false(jbool(pl, "connected"));

    pause_server(s, 3000);
    /* Both speak during the pause: the kernel holds their bytes. */
    client_send(pinger, "{\"type\":\"ping\",\"t\":7}");
    client *back = client_connect(s);
    client_send(back, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    resume_server(s);

    json_t *pong = client_expect(pinger, "pong", WAIT);
    assert_int_equal(jint(pong, "t"), 7);
    client_sync(pinger); /* still open */
    client_expect(back, "welcome", WAIT);
    client_expect(back, "start", WAIT);
    pl = client_expect_skip(p[0], "player", "state", WAIT);
    assert_true(jbool(pl, "connected"));
    client_move_any(back); /* the race goes on */
}

int main(void) {
    harness_small_asan_quarantine(4);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_flood_fairness_memory_sigterm, harness_teardown),
        cmocka_unit_test_teardown(test_nonreader_cut_off, harness_teardown),
        cmocka_unit_test_teardown(test_slowloris, harness_teardown),
        cmocka_unit_test_teardown(test_per_address_limit, harness_teardown),
        cmocka_unit_test_teardown(test_refused_do_not_fill_the_server, harness_teardown),
        cmocka_unit_test_teardown(test_descriptor_exhaustion, harness_teardown),
        cmocka_unit_test_teardown(test_pause_closes_nobody_who_spoke, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
