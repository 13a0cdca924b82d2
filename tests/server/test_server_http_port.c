/* test_server_http_port.c - --http-port against the real race2048d: the browsers' port
 * never writes before a request, speaks only HTTP and WebSocket, keeps the limits, and
 * says where it is on the second stdout line. */
#define _GNU_SOURCE /* pipe2 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "wsclient.h"

/* What a browser's pre-opened socket does: nothing, for longer than the game
 * port's detection window (300 ms), before its request. */
#define SILENT_MS 2000

/* ------------------------------------------------------ the silent socket --- */

/* The blocker: a connection silent for 2 s, then GET /. On the http
 * port nothing comes before the request and the page comes after it; on the
 * game port the same silence is greeted as text (what browsers got). */
static void test_silent_then_get(void **state) {
    int http;
    th_server *s = server_with_http(&http, NULL);
    client *browser = client_connect_port(s, http);
    client *game = client_connect(s);
    assert_true(client_quiet_for(browser, SILENT_MS));
    assert_false(client_quiet_for(game, SILENT_MS)); /* the text greeting */

    client_send_str(browser, "GET / HTTP/1.1\r\nHost: race2048.lan\r\n\r\n");
    http_response r;
    http_read(browser, &r, false, WAIT); /* fails on any byte before the status */
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "<html"));
    /* One document: its CSS and JS inline, its icon a data: URL. */
    assert_non_null(strstr(r.body, "<style>"));
    assert_null(strstr(r.body, "<script src="));
    assert_null(strstr(r.body, "rel=\"stylesheet\""));
    assert_non_null(strstr(r.body, "rel=\"icon\" href=\"data:"));
    http_response_free(&r);

    /* Keep-alive: the same socket, silent again, then another request. */
    assert_true(client_quiet_for(browser, 500));
    client_send_str(browser, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    http_read(browser, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    http_response_free(&r);
}

/* ---------------------------------------------------------- HTTP only --- */

/* Every route of the game port's HTTP side, and a WebSocket that plays. */
static void test_routes(void **state) {
    int http;
    th_server *s = server_with_http(&http, NULL);
    static const struct {
        const char *req;
        int status;
    } cases[] = {
        {"GET /static/app.js HTTP/1.1\r\n\r\n", 200},
        {"GET /static/style.css HTTP/1.1\r\n\r\n", 200},
        {"GET /static/engine.wasm HTTP/1.1\r\n\r\n", 200},
        {"GET /metrics HTTP/1.1\r\n\r\n", 200},
        {"HEAD / HTTP/1.1\r\n\r\n", 200},
        {"GET /nope HTTP/1.1\r\n\r\n", 404},
        {"DELETE / HTTP/1.1\r\n\r\n", 405},
    };
    client *c = client_connect_port(s, http);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        client_send_str(c, cases[i].req);
        http_response r;
        http_read(c, &r, !strncmp(cases[i].req, "HEAD", 4), WAIT);
        if (r.status != cases[i].status)
            fail_msg("%s got %d, want %d", cases[i].req, r.status, cases[i].status);
        http_response_free(&r);
    }
    client *ws = ws_connect_port(s, http);
    ws_send(ws, "{\"type\":\"hello\",\"name\":\"webby\"}");
    json_t *w = ws_expect(ws, "welcome", WAIT);
    assert_string_equal(jstr(w, "name"), "webby");
    ws_send(ws, "{\"type\":\"solo\",\"size\":3}");
    ws_expect(ws, "start", WAIT);
}

/* What is not HTTP gets a 400 and a close, never the text lobby or JSON. */
static void test_not_http(void **state) {
    int http;
    th_server *s = server_with_http(&http, NULL);
    static const char *const firsts[] = {
        "hello\r\n",
        "{\"type\":\"hello\",\"name\":\"prog\"}\n",
        "\xff\xfb\x1f\xff\xfb\x18\r\n", /* a telnet client's first options */
        "GET / HTTP/2.0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        client *c = client_connect_port(s, http);
        client_send_str(c, firsts[i]);
        http_response r;
        http_read(c, &r, false, WAIT);
        if (r.status != 400) fail_msg("first bytes #%zu got %d, want 400", i, r.status);
        http_response_free(&r);
        client_expect_eof(c, WAIT);
    }
}

/* ------------------------------------------------------------- limits --- */

/* --max-per-ip counts the http port's connections with the game port's; a
 * refused one is still silent until it asks (then 503), and one that never
 * asks is closed without a byte. */
static void test_limits(void **state) {
    int http;
    th_server *s =
        server_with_http(&http, (const char *const[]){"--max-per-ip", "2", NULL});
    client *game = client_named(s, "held");
    client *page = client_connect_port(s, http);
    client_send_str(page, "GET /healthz HTTP/1.1\r\n\r\n");
    http_response r;
    http_read(page, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    http_response_free(&r);

    client *asks = client_connect_port(s, http);
    client_send_str(asks, "GET / HTTP/1.1\r\n\r\n");
    http_read(asks, &r, false, WAIT);
    assert_int_equal(r.status, 503);
    http_response_free(&r);
    client_expect_eof(asks, WAIT);

    client *silent = client_connect_port(s, http);
    assert_int_equal(client_drain_to_eof(silent, WAIT), 0);
    client_sync(game); /* the held client is untouched */
}

/* Keep-alive connections that stay idle are closed, without a byte. */
static void test_idle_closed_silently(void **state) {
    int http;
    th_server *s =
        server_with_http(&http, (const char *const[]){"--idle-timeout", "1", NULL});
    client *c = client_connect_port(s, http);
    assert_int_equal(client_drain_to_eof(c, WAIT), 0);
}

/* SIGTERM closes an idle browser socket without writing to it. */
static void test_stop_writes_nothing(void **state) {
    int http;
    th_server *s = server_with_http(&http, NULL);
    client *c = client_connect_port(s, http);
    client *ws = ws_connect_port(s, http);
    ws_send(ws, "{\"type\":\"hello\",\"name\":\"webby\"}");
    ws_expect(ws, "welcome", WAIT);
    assert_int_equal(server_stop(s), 0);
    assert_int_equal(client_drain_to_eof(c, WAIT), 0);
    ws_expect(ws, "bye", WAIT);
}

/* ------------------------------------------------------ stdout lines --- */

/* Runs race2048d with args (and env NAME=VALUE if not NULL), reads its stdout
 * until it has `want` lines, stops it with SIGTERM and returns everything it
 * printed (all lines) in out; the exit status in *status. */
static void run_lines(const char *const *args, const char *env, int want, char *out,
                      size_t cap, int *status) {
    const char *bin = getenv("RACE2048D");
    assert_non_null(bin);
    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        if (env) putenv((char *)env);
        const char *argv[32] = {bin};
        int n = 1;
        for (int i = 0; args[i] && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    int lines = 0;
    bool eof = false;
    int64_t deadline = harness_now_ms() + harness_ms(20000);
    while (lines < want && !eof) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, harness_remaining(deadline)) <= 0) break;
        ssize_t n = read(fds[0], out + len, cap - 1 - len);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++)
            lines += out[len + (size_t)i] == '\n';
        len += (size_t)n;
    }
    kill(pid, SIGTERM);
    /* The rest, to EOF: nothing more may come after the lines asked for. */
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, harness_remaining(deadline)) <= 0) break;
        ssize_t n = read(fds[0], out + len, cap - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
    }
    out[len] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, status, 0), pid);
}

static void test_stdout_lines(void **state) {
    char out[1024];
    int status;
    /* Both lines, the http one second, each with its real port. */
    run_lines((const char *const[]){"--host", "127.0.0.1", "--port", "0", "--http-port",
                                    "0", "--journal", "none", "--log-level", "warn",
                                    NULL},
              NULL, 2, out, sizeof out, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int game = 0, http = 0;
    if (sscanf(out,
               "race2048d listening on 127.0.0.1:%d\nrace2048d http on 127.0.0.1:%d\n",
               &game, &http) != 2 ||
        game <= 0 || http <= 0 || game == http)
        fail_msg("stdout was \"%s\"", out);
    assert_int_equal(strlen(strchr(strchr(out, '\n') + 1, '\n')), 1); /* nothing else */

    /* off: the listening line alone. */
    run_lines((const char *const[]){"--host", "127.0.0.1", "--port", "0", "--http-port",
                                    "off", "--journal", "none", "--log-level", "warn",
                                    NULL},
              NULL, 1, out, sizeof out, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (strncmp(out, "race2048d listening on 127.0.0.1:", 33) ||
        strchr(out, '\n') != out + strlen(out) - 1)
        fail_msg("with --http-port off stdout was \"%s\"", out);

    /* The environment variable, as for every flag. */
    run_lines((const char *const[]){"--host", "127.0.0.1", "--port", "0", "--journal",
                                    "none", "--log-level", "warn", NULL},
              "RACE2048_HTTP_PORT=0", 2, out, sizeof out, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!strstr(out, "\nrace2048d http on 127.0.0.1:"))
        fail_msg("stdout was \"%s\"", out);

    /* Bad values: exit 2, nothing on stdout. */
    static const char *const bad[] = {"65536", "-1", "", "of", "2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_lines((const char *const[]){"--host", "127.0.0.1", "--port", "2",
                                        "--http-port", bad[i], "--journal", "none", NULL},
                  NULL, 1, out, sizeof out, &status);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 2 || out[0])
            fail_msg("--http-port '%s': status %d, stdout \"%s\"", bad[i], status, out);
    }
}

/* Every address of --host gets the http port too, one line each, after the
 * listening lines. */
static void test_every_address(void **state) {
    char out[1024];
    int status;
    run_lines((const char *const[]){"--host", "::1", "--port", "0", "--http-port", "0",
                                    "--journal", "none", "--log-level", "warn", NULL},
              NULL, 2, out, sizeof out, &status);
    if (strstr(out, "listening on [::1]:") == NULL) {
        skip(); /* no IPv6 loopback here */
    }
    if (!strstr(out, "\nrace2048d http on [::1]:")) fail_msg("stdout was \"%s\"", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_silent_then_get, harness_teardown),
        cmocka_unit_test_teardown(test_routes, harness_teardown),
        cmocka_unit_test_teardown(test_not_http, harness_teardown),
        cmocka_unit_test_teardown(test_limits, harness_teardown),
        cmocka_unit_test_teardown(test_idle_closed_silently, harness_teardown),
        cmocka_unit_test_teardown(test_stop_writes_nothing, harness_teardown),
        cmocka_unit_test_teardown(test_stdout_lines, harness_teardown),
        cmocka_unit_test_teardown(test_every_address, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
