/* test_server_spectators.c - crowds of spectators against the real race2048d: 2000 JSON
 * spectators of one race cost another room's client no stall, each gets every state in
 * order and the end; --max-spectators with room_full; hundreds of text spectators share
 * renderings. */
#define _GNU_SOURCE /* memmem */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* The crowd, and the work its race makes: ROUNDS bursts of BURST moves from
 * each racer, each burst sent without waiting, pings from a client of
 * another room while the server fans the burst out. */
#define CROWD  2000
#define ROUNDS 20
#define BURST  5
#define PINGS  5 /* 100 round trips: p99 is the second slowest */
/* The loaded p99 may exceed the idle one by this (harness_latency_bound). */
#define PING_MARGIN_MS 50
#define CROWD_WAIT     120000
#define TEXT_CROWD     300

static void send_all(int fd, const char *data) {
    size_t len = strlen(data);
    assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* --------------------------------------------------------- spectators --- */

/* One raw spectator: what it received and what it checked so far. */
typedef struct spect {
    int fd;
    char *buf; /* bytes not yet handled as lines (JSON), or a tail (text) */
    size_t len, cap;
    bool eof;
    /* JSON: start, then states of racer ids[k] with moves last[k] + 1 each. */
    bool started, ended;
    int64_t ids[2], last[2];
    long states;
    int64_t end_moves[2];
    const char *bad;   /* the first thing that went wrong, or NULL */
    bool ponged, left; /* a pong came (with last[] as it was then); `left` came */
    int64_t at_pong[2];
    /* Text: screens (clear-screen sequences) seen, and the end screen. */
    long screens;
    bool end_screen;
} spect;

/* The integer after `"key":` in a line, or -1. */
static int64_t scan_int(const char *line, const char *key) {
    const char *p = strstr(line, key);
    if (!p) return -1;
    p += strlen(key);
    if (*p < '0' || *p > '9') return -1;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    return v;
}

static void on_json_line(spect *sp, char *line, size_t len) {
    if (sp->bad) return;
    if (!strncmp(line, "{\"type\":\"state\"", 15)) {
        /* Scanned, not parsed: a few hundred thousand of them. */
        int64_t id = scan_int(line, "\"id\":"), moves = scan_int(line, "\"moves\":");
        int k = id == sp->ids[0] ? 0 : id == sp->ids[1] ? 1 : -1;
        if (!sp->started || sp->ended || sp->left)
            sp->bad = "a state outside start..end, or after leaving";
        else if (k < 0)
            sp->bad = "a state of nobody in the race";
        else if (moves != sp->last[k] + 1)
            sp->bad = "a state out of order (or one missing)";
        else
            sp->last[k] = moves, sp->states++;
        return;
    }
    json_t *o = json_loadb(line, len, 0, NULL);
    const char *type = json_string_value(json_object_get(o, "type"));
    if (type && !strcmp(type, "start")) {
        json_t *players = json_object_get(o, "players");
        if (json_array_size(players) != 2 || sp->started) {
            sp->bad = "a start that is not the race's first";
        } else {
            for (int k = 0; k < 2; k++) {
                json_t *pl = json_array_get(players, (size_t)k);
                sp->ids[k] = json_integer_value(json_object_get(pl, "id"));
                sp->last[k] = json_integer_value(json_object_get(pl, "moves"));
            }
            sp->started = true;
        }
    } else if (type && !strcmp(type, "end")) {
        json_t *results = json_object_get(o, "results");
        for (size_t i = 0; i < json_array_size(results); i++) {
            json_t *pl = json_array_get(results, i);
            int64_t id = json_integer_value(json_object_get(pl, "id"));
            for (int k = 0; k < 2; k++)
                if (id == sp->ids[k])
                    sp->end_moves[k] = json_integer_value(json_object_get(pl, "moves"));
        }
        sp->ended = true;
    } else if (type && !strcmp(type, "pong")) {
        sp->ponged = true;
        sp->at_pong[0] = sp->last[0];
        sp->at_pong[1] = sp->last[1];
    } else if (type && !strcmp(type, "left")) {
        sp->left = true;
    } else if (!type || !strcmp(type, "error") || !strcmp(type, "bye")) {
        sp->bad = "an error, a bye or a line that is no message";
    }
    json_decref(o);
}

static void on_text_bytes(spect *sp, const char *data, size_t n) {
    /* The tail of what came before, so a marker split across reads counts. */
    static const char *const marks[] = {"\x1b[H\x1b[2J", " wins - "};
    size_t keep = sp->len;
    if (!sp->buf) sp->buf = malloc(sp->cap = 4096 + 64);
    assert_non_null(sp->buf);
    char joined[4096 + 64];
    memcpy(joined, sp->buf, keep);
    memcpy(joined + keep, data, n);
    size_t len = keep + n;
    for (const char *p = joined;
         (p = memmem(p, len - (size_t)(p - joined), marks[0], strlen(marks[0]))); p++)
        if ((size_t)(p - joined) + strlen(marks[0]) > keep) sp->screens++;
    if (memmem(joined, len, marks[1], strlen(marks[1]))) sp->end_screen = true;
    size_t t = len < 16 ? len : 16;
    memcpy(sp->buf, joined + len - t, t);
    sp->len = t;
}

/* Reads what sp has; JSON lines are checked as they complete. */
static void spect_read(spect *sp, bool text) {
    for (;;) {
        char chunk[4096];
        ssize_t n = recv(sp->fd, chunk, sizeof chunk, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            sp->eof = true;
            return;
        }
        if (n < 0) return;
        if (text) {
            on_text_bytes(sp, chunk, (size_t)n);
            continue;
        }
        if (sp->len + (size_t)n > sp->cap) {
            sp->cap = (sp->len + (size_t)n) * 2;
            sp->buf = realloc(sp->buf, sp->cap);
            assert_non_null(sp->buf);
        }
        memcpy(sp->buf + sp->len, chunk, (size_t)n);
        sp->len += (size_t)n;
        size_t at = 0;
        for (char *nl; (nl = memchr(sp->buf + at, '\n', sp->len - at));) {
            *nl = '\0';
            if (sp->buf[at] == '{')
                on_json_line(sp, sp->buf + at, (size_t)(nl - (sp->buf + at)));
            at = (size_t)(nl - sp->buf) + 1;
        }
        memmove(sp->buf, sp->buf + at, sp->len - at);
        sp->len -= at;
    }
}

/* Polls every spectator for up to ms (0: what is there now) and reads. */
static void pump(spect *sp, int n, int ms, bool text) {
    static struct pollfd pfd[CROWD];
    assert_true(n <= CROWD);
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = sp[i].eof ? -1 : sp[i].fd, .events = POLLIN};
    if (poll(pfd, (nfds_t)n, ms) <= 0) return;
    for (int i = 0; i < n; i++)
        if (pfd[i].revents) spect_read(&sp[i], text);
}

typedef bool (*spect_done)(const spect *sp);

/* Pumps until done holds for every spectator; fails naming what is missing. */
static void pump_until(spect *sp, int n, spect_done done, bool text, const char *what) {
    int64_t deadline = harness_now_ms() + harness_ms(CROWD_WAIT);
    for (;;) {
        int missing = 0, first = -1;
        for (int i = 0; i < n; i++) {
            if (sp[i].bad) fail_msg("spectator %d: %s", i, sp[i].bad);
            if (!done(&sp[i])) missing++, first = first < 0 ? i : first;
        }
        if (!missing) return;
        if (!harness_remaining(deadline))
            fail_msg("%d of %d spectators never got %s (spectator %d: eof %d)", missing,
                     n, what, first, sp[first].eof);
        pump(sp, n, 100, text);
    }
}

static bool has_start(const spect *sp) {
    return sp->started;
}
static bool has_end(const spect *sp) {
    return sp->ended;
}
static bool has_screen(const spect *sp) {
    return sp->screens > 0;
}
static bool has_end_or_left(const spect *sp) {
    return sp->ended || sp->left || sp->eof;
}
static bool has_end_screen(const spect *sp) {
    return sp->end_screen;
}

/* Both racers' moves at the end of the current round. */
static int64_t round_moves[2];
static bool has_round(const spect *sp) {
    return sp->last[0] >= round_moves[0] && sp->last[1] >= round_moves[1];
}

/* How many spectators have bytes waiting to be read, now. */
static int spects_readable(const spect *sp, int n) {
    static struct pollfd pfd[CROWD];
    assert_true(n <= CROWD);
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = sp[i].fd, .events = POLLIN};
    return poll(pfd, (nfds_t)n, 0);
}

static void spects_free(spect *sp, int n) {
    for (int i = 0; i < n; i++) {
        close(sp[i].fd);
        free(sp[i].buf);
    }
    free(sp);
}

/* ------------------------------------------------------------- racers --- */

/* Sends n moves at once (cycling directions so the board lives), then waits
 * for the answer to the last one. Returns the seq to use next. */
static int burst(client *c, int seq, int n) {
    static const char *const dirs[] = {"left", "down", "right", "up"};
    for (int i = 0; i < n; i++, seq++)
        client_send(c, "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%d}", dirs[seq % 4],
                    seq);
    return seq;
}

/* The state answering move seq of racer me (its board's moves so far). */
static json_t *await_answer(client *c, json_int_t me, int seq) {
    for (;;) {
        json_t *m = client_next(c, harness_ms(CROWD_WAIT));
        if (!m) fail_msg("a racer's connection closed");
        const char *type = jstr(m, "type");
        if (!strcmp(type, "error")) fail_msg("a racer got an error: %s", jstr(m, "code"));
        if (strcmp(type, "state") || jint(m, "id") != me) continue;
        if (jhas(m, "seq") && jint(m, "seq") == seq) return m;
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- tests --- */

/* p99 of n sorted round trips (n = 100: the second slowest). */
static int64_t p99_of(const int64_t *sorted, int n) {
    return sorted[(n * 99 + 99) / 100 - 1];
}

/* 2000 JSON spectators of one race: a client of another room keeps answering
 * pings at once (p99 within harness_latency_bound of its p99 before the crowd
 * came: 50 ms more, scaled for sanitizers; and its pong comes before the
 * crowd has had all of a round's states) while the racers move, and every
 * spectator gets every state in order, then the end. */
static void test_json_crowd(void **state) {
    fit_fds(CROWD + 16);
    th_server *s = SERVER("--max-clients", "10000", "--max-per-ip", "10000",
                          "--max-spectators", "5000");
    client *racers[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, "\"size\":6", racers, starts);
    json_int_t me[2] = {jint(starts[0], "you"), jint(starts[1], "you")};
    client *innocent = client_named(s, "innocent");
    client_send(innocent, "{\"type\":\"solo\"}");
    client_expect(innocent, "start", WAIT);
    /* Round trips on the same server before the crowd: the baseline is the
     * second slowest of 64, as the loaded p99 is of 100. */
    th_pings idle = client_pings(s, innocent, TH_PINGS_MAX);
    int64_t baseline = idle.rtt_ms[idle.n - 2];

    spect *sp = calloc(CROWD, sizeof *sp);
    assert_non_null(sp);
    char watch[64];
    snprintf(watch, sizeof watch, "{\"type\":\"watch\",\"room\":\"%s\"}\n", code);
    for (int i = 0; i < CROWD; i++) {
        sp[i].fd = harness_raw_connect(s, 0);
        send_all(sp[i].fd, watch);
        if (i % 64 == 63) pump(sp, i + 1, 0, false);
    }
    pump_until(sp, CROWD, has_start, false, "a start");

    int64_t rtt[ROUNDS * PINGS];
    int nrtt = 0, seq[2] = {1, 1};
    int served_first = 0; /* rounds whose pong came after every spectator's states */
    for (int r = 0; r < ROUNDS; r++) {
        int last[2];
        for (int k = 0; k < 2; k++) {
            last[k] = seq[k] + BURST - 1;
            seq[k] = burst(racers[k], seq[k], BURST);
        }
        /* The server now has 2 * BURST broadcasts for 2000 spectators to do. */
        for (int i = 0; i < PINGS; i++) {
            int64_t t0 = harness_now_ms();
            client_sync(innocent);
            rtt[nrtt++] = harness_now_ms() - t0;
            if (i == 0 && spects_readable(sp, CROWD) == CROWD) served_first++;
        }
        for (int k = 0; k < 2; k++)
            round_moves[k] = jint(await_answer(racers[k], me[k], last[k]), "moves");
        /* Every spectator has the whole round before the next one starts, so
         * that what is readable at the next pong is that round's. */
        pump_until(sp, CROWD, has_round, false, "the round's states");
    }
    client_send(racers[1], "{\"type\":\"leave\"}");
    client_expect_skip(racers[0], "end", "state player", harness_ms(CROWD_WAIT));
    pump_until(sp, CROWD, has_end, false, "the end");

    long moved = 0;
    for (int i = 0; i < CROWD; i++) {
        if (sp[i].bad) fail_msg("spectator %d: %s", i, sp[i].bad);
        for (int k = 0; k < 2; k++)
            if (sp[i].last[k] != sp[i].end_moves[k])
                fail_msg("spectator %d saw %lld moves of %lld, the end says %lld", i,
                         (long long)sp[i].last[k], (long long)sp[i].ids[k],
                         (long long)sp[i].end_moves[k]);
        if (i == 0) moved = sp[i].states;
        if (sp[i].states != moved) fail_msg("spectators saw different numbers of states");
    }
    qsort(rtt, (size_t)nrtt, sizeof rtt[0], cmp_i64);
    int64_t p50 = rtt[nrtt / 2], p99 = p99_of(rtt, nrtt);
    int64_t bound = harness_latency_bound(baseline, PING_MARGIN_MS);
    fprintf(stderr,
            "%d spectators, %ld states each: innocent ping p50 %lld ms, p99 %lld ms, "
            "max %lld ms (p99 before the crowd %lld ms, bound %lld ms); the pong came "
            "after every spectator's states in %d rounds of %d\n",
            CROWD, moved, (long long)p50, (long long)p99, (long long)rtt[nrtt - 1],
            (long long)baseline, (long long)bound, served_first, ROUNDS);
    spects_free(sp, CROWD);
    assert_true(moved >= ROUNDS); /* the race really moved */
    if (p99 > bound)
        fail_msg("the innocent's ping p99 was %lld ms (at most %lld)", (long long)p99,
                 (long long)bound);
    /* The order, whatever the machine's speed: served a share per turn, the
     * crowd still has states on their way when the pong comes; served all at
     * once (2000 in every round, measured), it never does. */
    if (served_first >= ROUNDS / 2)
        fail_msg("the pong came after all %d spectators' states in %d rounds of %d",
                 CROWD, served_first, ROUNDS);
}

/* Spectators that ping, leave or vanish while broadcasts are on their way to
 * them, and a room whose players all leave while its end is on its way: a
 * ping's pong comes after every state broadcast before it, nothing comes
 * after `left`, the rest get every state and the end, and the server stays
 * sound (ASan, and teardown's clean exit). */
static void test_churn(void **state) {
    enum { N = 900 };
    fit_fds(N + 16);
    th_server *s = SERVER("--max-clients", "10000", "--max-per-ip", "10000",
                          "--max-spectators", "5000");
    client *racers[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, "\"size\":6", racers, starts);
    json_int_t me[2] = {jint(starts[0], "you"), jint(starts[1], "you")};
    spect *sp = calloc(N, sizeof *sp);
    assert_non_null(sp);
    char watch[64];
    snprintf(watch, sizeof watch, "{\"type\":\"watch\",\"room\":\"%s\"}\n", code);
    for (int i = 0; i < N; i++) {
        sp[i].fd = harness_raw_connect(s, 0);
        send_all(sp[i].fd, watch);
    }
    pump_until(sp, N, has_start, false, "a start");
    int seq[2] = {1, 1};
    int64_t moves[2];
    for (int k = 0; k < 2; k++) {
        int last = seq[k] + 9;
        seq[k] = burst(racers[k], seq[k], 10);
        moves[k] = jint(await_answer(racers[k], me[k], last), "moves");
    }
    /* Every broadcast of those moves is made; most are still on their way. */
    for (int i = 0; i < 300; i++) {
        if (i < 100) {
            send_all(sp[i].fd, "{\"type\":\"ping\",\"t\":1}\n");
        } else if (i < 200) {
            struct linger rst = {.l_onoff = 1, .l_linger = 0};
            setsockopt(sp[i].fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
            close(sp[i].fd);
            sp[i].fd = -1;
            sp[i].eof = true;
        } else {
            send_all(sp[i].fd, "{\"type\":\"leave\"}\n");
        }
    }
    for (int k = 0; k < 2; k++) {
        int last = seq[k] + 9;
        seq[k] = burst(racers[k], seq[k], 10);
        await_answer(racers[k], me[k], last);
    }
    /* Both racers go: the room has nobody seated while its end is on its way. */
    client_send(racers[1], "{\"type\":\"leave\"}");
    client_expect_skip(racers[0], "end", "state player", harness_ms(CROWD_WAIT));
    client_send(racers[0], "{\"type\":\"leave\"}");
    client_expect(racers[0], "left", WAIT);
    pump_until(sp, N, has_end_or_left, false, "the end (or left)");
    for (int i = 0; i < N; i++) {
        if (i >= 100 && i < 200) continue;
        if (i < 100 &&
            (!sp[i].ponged || sp[i].at_pong[0] < moves[0] || sp[i].at_pong[1] < moves[1]))
            fail_msg("spectator %d's pong overtook states broadcast before it", i);
        if (i >= 200 && i < 300 && !sp[i].left) fail_msg("spectator %d: no left", i);
        if ((i < 100 || i >= 300) && !sp[i].ended) fail_msg("spectator %d: no end", i);
    }
    /* The room is gone: its code names nothing. */
    client *late = client_named(s, "late");
    client_send(late, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect_error(late, "room_not_found", WAIT);
    for (int i = 100; i < 200; i++)
        sp[i].fd = -1;
    for (int i = 0; i < N; i++)
        if (sp[i].fd < 0) sp[i].fd = open("/dev/null", O_RDONLY); /* for spects_free */
    spects_free(sp, N);
}

/* The (N+1)-th watch gets room_full and changes nothing; a spectator who
 * leaves frees its place; a person typing `watch CODE` is told in a line. */
static void test_room_full(void **state) {
    th_server *s = SERVER("--max-spectators", "3");
    client *racers[2];
    const char *code = race_start(s, 2, NULL, racers, NULL);
    client *w[4];
    for (int i = 0; i < 3; i++) {
        w[i] = client_named(s, "w");
        client_send(w[i], "{\"type\":\"watch\",\"room\":\"%s\"}", code);
        client_expect(w[i], "start", WAIT);
    }
    w[3] = client_named(s, "late");
    client_send(w[3], "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    json_t *e = client_expect_error(w[3], "room_full", WAIT);
    assert_non_null(strstr(jstr(e, "message"), "3 spectators"));

    /* Text mode: the screen says so. */
    int fd = harness_raw_connect(s, 0);
    char line[64];
    snprintf(line, sizeof line, "watch %s\n", code);
    send_all(fd, line);
    spect t = {.fd = fd};
    char seen[8192] = "";
    size_t seen_len = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (!strstr(seen, "as many as a room takes")) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, harness_remaining(deadline)) <= 0)
            fail_msg("the text client was never told the room is full: %s", seen);
        ssize_t n = recv(fd, seen + seen_len, sizeof seen - 1 - seen_len, 0);
        if (n <= 0) fail_msg("the text client was closed");
        seen_len += (size_t)n;
        seen[seen_len] = '\0';
        if (seen_len > sizeof seen - 512) seen_len = 0; /* keep the newest only */
    }
    close(t.fd);

    /* One leaves: the late one gets in, and gets the states from then on. */
    client_send(w[0], "{\"type\":\"leave\"}");
    client_expect(w[0], "left", WAIT);
    client_send(w[3], "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w[3], "start", WAIT);
    json_t *moved = client_move_any(racers[0]);
    json_t *seen_state = client_expect(w[3], "state", WAIT);
    assert_int_equal(jint(moved, "id"), jint(seen_state, "id"));
    assert_true(jequal(jarr(moved, "board"), jarr(seen_state, "board")));
    client_expect(w[1], "state", WAIT);
    /* Still full for a fifth. */
    client *fifth = client_named(s, "fifth");
    client_send(fifth, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect_error(fifth, "room_full", WAIT);
}

/* The value of a /metrics line (its full name and labels), or -1. */
static long long metric(const th_server *s, const char *name) {
    int fd = harness_raw_connect(s, 0);
    send_all(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    static char body[65536];
    size_t len = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, harness_remaining(deadline)) <= 0) fail_msg("no /metrics");
        ssize_t n = recv(fd, body + len, sizeof body - 1 - len, 0);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    body[len] = '\0';
    const char *at = strstr(body, name);
    return at ? atoll(at + strlen(name)) : -1;
}

/* Hundreds of text spectators of one shape (netcat, 80x24): each gets the
 * race's screens and its end screen, and the screens are rendered once per
 * state and shape, not once per spectator. */
static void test_text_crowd(void **state) {
    fit_fds(TEXT_CROWD + 16);
    th_server *s = SERVER("--max-clients", "10000", "--max-per-ip", "10000");
    client *racers[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, racers, starts);
    json_int_t me[2] = {jint(starts[0], "you"), jint(starts[1], "you")};
    spect *sp = calloc(TEXT_CROWD, sizeof *sp);
    assert_non_null(sp);
    char watch[64];
    snprintf(watch, sizeof watch, "watch %s\n", code);
    for (int i = 0; i < TEXT_CROWD; i++) {
        sp[i].fd = harness_raw_connect(s, 0);
        send_all(sp[i].fd, watch);
    }
    pump_until(sp, TEXT_CROWD, has_screen, true, "the race's screen"); /* greeted */
    int seq[2] = {1, 1};
    for (int r = 0; r < 10; r++) {
        for (int k = 0; k < 2; k++) {
            int last = seq[k] + 2;
            seq[k] = burst(racers[k], seq[k], 3);
            await_answer(racers[k], me[k], last);
        }
        /* Redraws are paced (50 ms): give them time to come. */
        for (int64_t until = harness_now_ms() + 60; harness_remaining(until);)
            pump(sp, TEXT_CROWD, harness_remaining(until), true);
    }
    client_send(racers[1], "{\"type\":\"leave\"}");
    client_expect_skip(racers[0], "end", "state player", harness_ms(CROWD_WAIT));
    pump_until(sp, TEXT_CROWD, has_end_screen, true, "the end screen");
    for (int i = 0; i < TEXT_CROWD; i++)
        if (sp[i].screens < 3) /* the first, at least one move, the end */
            fail_msg("text spectator %d got %ld screens", i, sp[i].screens);
    long long rendered = metric(s, "race2048_text_screens_total{how=\"rendered\"} ");
    long long shared = metric(s, "race2048_text_screens_total{how=\"shared\"} ");
    fprintf(stderr, "%d text spectators: %lld screens rendered, %lld shared\n",
            TEXT_CROWD, rendered, shared);
    assert_true(rendered > 0);
    /* Each state is rendered once per shape (plus the odd countdown): a
     * screen per spectator would make shared about 0. */
    assert_true(shared >= 20 * rendered);
    spects_free(sp, TEXT_CROWD);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_room_full, harness_teardown),
        cmocka_unit_test_teardown(test_text_crowd, harness_teardown),
        cmocka_unit_test_teardown(test_churn, harness_teardown),
        cmocka_unit_test_teardown(test_json_crowd, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
