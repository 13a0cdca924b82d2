/* test_server_browsers.c - issue 25's browsers' port against the real race2048d: a
 * WebSocket from another site's page is refused (--allow-origin), /metrics answers only
 * --metrics-from, and the metrics added with them (build, process, move times). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "wsclient.h"

#define SERVER_HTTP(http, ...)                                                           \
    server_with_http(http, (const char *const[]){__VA_ARGS__, NULL})

/* A WebSocket upgrade to port of s, as a browser sends it: Host names the
 * server as the page's URL did, Origin (NULL: none, as a program) the page.
 * Returns the response's status; on 101 *out is the open WebSocket, else the
 * connection must close after the response. */
static int upgrade(th_server *s, int port, const char *host, const char *origin,
                   client **out) {
    client *c = client_connect_port(s, port);
    char req[1024], origin_line[512] = "";
    if (origin) snprintf(origin_line, sizeof origin_line, "Origin: %s\r\n", origin);
    snprintf(
        req, sizeof req,
        "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "%sSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n",
        host, origin_line);
    client_send_str(c, req);
    if (out) *out = c;
    /* A 101 has no body and no Content-Length: read its head only. */
    char head[1024];
    size_t n = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0) {
        if (n + 1 >= sizeof head) fail_msg("response head too long");
        if (client_read_raw(c, head + n, 1, harness_remaining(deadline) + 1) == 0)
            fail_msg("EOF before a response to the upgrade from %s", origin);
        n++;
    }
    head[n] = '\0';
    int status = atoi(head + 9);
    if (status == 101) return status;
    /* The rest of the refusal: its body, then the server closes. */
    client_drain_to_eof(c, WAIT);
    client_close(c);
    return status;
}

/* The upgrade must succeed, and the socket play (a ping's pong). */
static void expect_open(th_server *s, int port, const char *host, const char *origin) {
    client *w = NULL;
    int status = upgrade(s, port, host, origin, &w);
    if (status != 101)
        fail_msg("port %d: origin %s to host %s got %d, want 101", port,
                 origin ? origin : "(none)", host, status);
    ws_send(w, "{\"type\":\"ping\",\"t\":7}");
    ws_expect_skip(w, "pong", "welcome", WAIT);
    client_close(w);
}

static void expect_refused(th_server *s, int port, const char *host, const char *origin) {
    int status = upgrade(s, port, host, origin, NULL);
    if (status != 403)
        fail_msg("port %d: origin %s to host %s got %d, want 403", port, origin, host,
                 status);
}

/* ------------------------------------------------------------ origins --- */

/* Issue 25 item 9: a page of another site, open in a player's browser, opened
 * sockets from the player's address and spent its budgets. Now its upgrade is
 * refused on both ports; the server's own page, and programs, are not. */
static void test_foreign_origin_refused(void **state) {
    int http;
    th_server *s = SERVER_HTTP(&http, "--log-level", "warn");
    int ports[2] = {s->port, http};
    for (int i = 0; i < 2; i++) {
        int port = ports[i];
        char host[64], same[96], other_port[96];
        snprintf(host, sizeof host, "127.0.0.1:%d", port);
        snprintf(same, sizeof same, "http://127.0.0.1:%d", port);
        snprintf(other_port, sizeof other_port, "http://127.0.0.1:%d", port == 1 ? 2 : 1);
        expect_refused(s, port, host, "http://evil.example");
        expect_refused(s, port, host, "https://evil.example:8443");
        expect_refused(s, port, host, other_port); /* another site on the same host */
        expect_refused(s, port, host, "null");     /* a sandboxed page, a file */
        expect_refused(s, port, "localhost", "http://127.0.0.1");
        expect_open(s, port, host, same);
        expect_open(s, port, "LocalHost:1234", "http://localhost:1234"); /* by name */
        expect_open(s, port, "example.com", "https://example.com");      /* behind TLS */
        expect_open(s, port, host, NULL);                                /* a program */
    }
}

/* --allow-origin: the listed origin opens (scheme, host and port must all
 * match), others stay refused; `*` lets any in. */
static void test_allow_origin(void **state) {
    int http;
    th_server *s = SERVER_HTTP(&http, "--allow-origin",
                               "https://play.example.org, http://[::1]:3000/");
    int ports[2] = {s->port, http};
    for (int i = 0; i < 2; i++) {
        char host[64];
        snprintf(host, sizeof host, "127.0.0.1:%d", ports[i]);
        expect_open(s, ports[i], host, "https://play.example.org");
        expect_open(s, ports[i], host, "https://PLAY.example.org:443");
        expect_open(s, ports[i], host, "http://[0::1]:3000");
        expect_refused(s, ports[i], host, "http://play.example.org");
        expect_refused(s, ports[i], host, "https://play.example.org:8443");
        expect_refused(s, ports[i], host, "https://evil.example");
    }
    assert_int_equal(server_stop(s), 0);

    s = SERVER_HTTP(&http, "--allow-origin", "*");
    int ports2[2] = {s->port, http};
    for (int i = 0; i < 2; i++) {
        char host[64];
        snprintf(host, sizeof host, "127.0.0.1:%d", ports2[i]);
        expect_open(s, ports2[i], host, "https://evil.example");
        expect_open(s, ports2[i], host, "null");
    }
}

/* A bad --allow-origin or --metrics-from stops the start with exit 2. */
static void test_bad_flags(void **state) {
    const char *server = getenv("RACE2048D");
    assert_non_null(server);
    const char *cases[][2] = {{"--allow-origin", "example.com"},
                              {"--allow-origin", "https://a/path"},
                              {"--allow-origin", ""},
                              {"--metrics-from", "10/8"},
                              {"--metrics-from", "127.0.0.1/33"},
                              {"--metrics-from", ""}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *argv[] = {server,      "--port", "0",         "--http-port", "off",
                              "--journal", "none",   cases[i][0], cases[i][1],   NULL};
        int rc = harness_run(argv, NULL);
        if (rc != 2) fail_msg("%s '%s': exit %d, want 2", cases[i][0], cases[i][1], rc);
    }
}

/* ------------------------------------------------------------ /metrics --- */

/* GET /metrics on port from source; returns the status, the body in *body
 * (malloc'd) if body is not NULL. */
static int scrape_from(th_server *s, int port, const char *source, char **body) {
    client *c = client_connect_port_from(s, port, source);
    client_send_str(c, "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    http_response r;
    http_read(c, &r, false, WAIT);
    client_close(c);
    if (body) *body = r.body, r.body = NULL;
    http_response_free(&r);
    return r.status;
}

/* Issue 25 item 9: /metrics answered anyone. Now only --metrics-from. */
static void test_metrics_from(void **state) {
    int http;
    th_server *s = SERVER_HTTP(&http, "--metrics-from", "127.0.0.1/32");
    int ports[2] = {s->port, http};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(scrape_from(s, ports[i], "127.0.0.2", NULL), 404);
        assert_int_equal(scrape_from(s, ports[i], "127.0.0.1", NULL), 200);
        assert_int_equal(scrape_from(s, ports[i], "127.0.0.3", NULL), 404);
    }
    assert_int_equal(server_stop(s), 0);
    /* The default lets loopback (and the private ranges) in. */
    s = SERVER_HTTP(&http, "--log-level", "warn");
    int ports2[2] = {s->port, http};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(scrape_from(s, ports2[i], "127.0.0.2", NULL), 200);
        assert_int_equal(scrape_from(s, ports2[i], "127.0.0.1", NULL), 200);
    }
    assert_int_equal(server_stop(s), 0);
    /* A range by prefix. */
    s = SERVER_HTTP(&http, "--metrics-from", "::1, 127.0.0.0/31");
    assert_int_equal(scrape_from(s, http, "127.0.0.1", NULL), 200);
    assert_int_equal(scrape_from(s, http, "127.0.0.2", NULL), 404);
}

/* The value of the sample `name` (labels included) in an exposition; fails
 * if absent. */
static double sample(const char *body, const char *name) {
    size_t nlen = strlen(name);
    for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, nlen) && p[nlen] == ' ') return strtod(p + nlen + 1, NULL);
    fail_msg("sample %s missing from:\n%s", name, body);
}

/* One scrape from loopback (the text is kept until teardown). */
static const char *scrape(th_server *s) {
    char *body;
    assert_int_equal(scrape_from(s, s->port, "127.0.0.1", &body), 200);
    json_t *kept = harness_keep(json_string(body));
    free(body);
    assert_non_null(kept);
    return json_string_value(kept);
}

/* race2048_move_seconds is a histogram: buckets cumulative, +Inf = count. */
static void check_histogram(const char *body) {
    assert_non_null(strstr(body, "# TYPE race2048_move_seconds histogram\n"));
    double last = 0, count = sample(body, "race2048_move_seconds_count");
    int buckets = 0;
    for (const char *p = strstr(body, "race2048_move_seconds_bucket{le=\""); p;
         p = strstr(p + 1, "race2048_move_seconds_bucket{le=\"")) {
        const char *v = strchr(p, ' ');
        double n = strtod(v + 1, NULL);
        assert_true(n >= last);
        last = n;
        buckets++;
    }
    assert_true(buckets >= 8);
    assert_true(last == count);
    assert_true(sample(body, "race2048_move_seconds_bucket{le=\"+Inf\"}") == count);
}

/* The metrics of version 4: build_info says the protocol the welcome says;
 * the process metrics are there and sane; the move histogram counts every
 * move a client made that changed a board, once, however many see it. */
static void test_new_metrics(void **state) {
    th_server *s = SERVER(NULL);
    client *j = client_connect(s);
    json_t *welcome = client_hello(j, "mover");
    const char *body = scrape(s);
    char build[96];
    snprintf(build, sizeof build, "race2048_build_info{version=\"");
    const char *b = strstr(body, build);
    assert_non_null(b);
    char proto[32];
    snprintf(proto, sizeof proto, "\",proto=\"%d\"} 1\n", (int)jint(welcome, "proto"));
    const char *end = strchr(b, '\n');
    assert_non_null(strstr(b, proto));
    assert_true(strstr(b, proto) < end);
    assert_true(sample(body, "process_cpu_seconds_total") > 0);
    assert_true(sample(body, "process_resident_memory_bytes") > 1e6);
    assert_true(sample(body, "process_virtual_memory_bytes") >=
                sample(body, "process_resident_memory_bytes"));
    double fds = sample(body, "process_open_fds");
    assert_true(fds >= 5 && fds <= sample(body, "process_max_fds"));
    double now = (double)time(NULL), started = sample(body, "process_start_time_seconds");
    double up = sample(body, "race2048_uptime_seconds");
    assert_true(started <= now + 2 && started >= now - up - 60);
    /* More connections, more descriptors. */
    client *extra[10];
    for (int i = 0; i < 10; i++)
        extra[i] = client_named(s, "extra");
    assert_true(sample(scrape(s), "process_open_fds") >= fds + 10);
    for (int i = 0; i < 10; i++)
        client_close(extra[i]);

    check_histogram(body);
    double count0 = sample(body, "race2048_move_seconds_count");
    double moves0 = sample(body, "race2048_moves_total");
    double sum0 = sample(body, "race2048_move_seconds_sum");
    client_send(j, "{\"type\":\"solo\"}");
    client_expect(j, "start", WAIT);
    enum { SOLO_MOVES = 25 };
    for (int i = 0; i < SOLO_MOVES; i++)
        client_move_any(j); /* the tries that did not move are not counted */
    body = scrape(s);
    check_histogram(body);
    assert_true(sample(body, "race2048_move_seconds_count") == count0 + SOLO_MOVES);
    assert_true(sample(body, "race2048_moves_total") == moves0 + SOLO_MOVES);
    assert_true(sample(body, "race2048_move_seconds_sum") > sum0);
    /* A race of three: each move is broadcast to three, counted once. */
    client *racers[3];
    race_start(s, 3, "\"size\":4", racers, NULL);
    double count1 = sample(body, "race2048_move_seconds_count");
    enum { RACE_MOVES = 7 };
    for (int i = 0; i < RACE_MOVES; i++)
        for (int k = 0; k < 3; k++)
            client_move_any(racers[k]);
    body = scrape(s);
    check_histogram(body);
    assert_true(sample(body, "race2048_move_seconds_count") == count1 + 3 * RACE_MOVES);
    /* Over WebSocket too, and a move that is refused (not playing) counts nothing. */
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"move\",\"dir\":\"left\"}");
    ws_expect_skip(w, "error", "welcome", WAIT);
    ws_send(w, "{\"type\":\"solo\"}");
    ws_expect(w, "start", WAIT);
    int ws_moves = 0;
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int i = 0; i < 8; i++) {
        ws_send(w, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[i % 4]);
        json_t *st = ws_expect(w, "state", WAIT);
        ws_moves += json_is_true(json_object_get(st, "moved"));
    }
    double count2 = sample(body, "race2048_move_seconds_count");
    body = scrape(s);
    assert_true(sample(body, "race2048_move_seconds_count") == count2 + ws_moves);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_foreign_origin_refused, harness_teardown),
        cmocka_unit_test_teardown(test_allow_origin, harness_teardown),
        cmocka_unit_test_teardown(test_bad_flags, harness_teardown),
        cmocka_unit_test_teardown(test_metrics_from, harness_teardown),
        cmocka_unit_test_teardown(test_new_metrics, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
