/* test_server_game_links.c - version 4's game links against the real race2048d: /game/ID,
 * /api/game/ID and /api/history answer what the replay and history requests answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "wsclient.h"

/* One request on a fresh connection to port; the response in r. */
static void get(th_server *s, int port, const char *req, http_response *r) {
    client *c = client_connect_port(s, port);
    client_send_str(c, req);
    http_read(c, r, strncmp(req, "HEAD", 4) == 0, WAIT);
    client_close(c);
}

static json_t *body_json(const http_response *r) {
    json_error_t e;
    json_t *o = json_loadb(r->body, r->body_len, 0, &e);
    if (!o) fail_msg("not JSON (%s): %s", e.text, r->body);
    return harness_keep(o);
}

static void assert_header(const http_response *r, const char *name, const char *want) {
    char v[128];
    if (!http_header(r, name, v, sizeof v)) fail_msg("no %s in:\n%s", name, r->head);
    assert_string_equal(v, want);
}

/* A finished solo game with a few moves, listed by history: its id. */
static json_int_t finished_game(th_server *s) {
    client *p = client_named(s, "linker");
    client_send(p, "{\"type\":\"solo\",\"size\":4}");
    client_expect(p, "start", WAIT);
    for (int i = 0; i < 6; i++)
        client_move_any(p);
    client_send(p, "{\"type\":\"leave\"}");
    client_expect_skip(p, "end", "state", WAIT);
    client_expect(p, "left", WAIT);
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) { /* listed once its record is durable */
        client_send(p, "{\"type\":\"history\",\"limit\":1}");
        json_t *g = json_array_get(jarr(client_expect(p, "history", WAIT), "games"), 0);
        json_t *first = g ? json_array_get(jarr(g, "results"), 0) : NULL;
        if (first && !strcmp(jstr(first, "name"), "linker")) {
            json_int_t id = jint(g, "game");
            client_close(p);
            return id;
        }
        if (harness_remaining(deadline) == 0) fail_msg("the solo game is never listed");
    }
}

/* The game port and --http-port answer the same: the JSON of the replay and
 * history requests, 404 and 400 with the error object, HEAD as GET. */
static void test_api_answers_as_requests(void **state) {
    (void)state;
    th_server *s = SERVER("--http-port", "0");
    const char *line = server_stdout_line(s, WAIT);
    const char *colon = strrchr(line, ':');
    assert_non_null(colon);
    int ports[2] = {s->port, atoi(colon + 1)};
    assert_true(ports[1] > 0);
    json_int_t id = finished_game(s);

    client *j = client_named(s, "reader");
    client_send(j, "{\"type\":\"replay\",\"game\":%lld}", (long long)id);
    json_t *replay = client_expect(j, "replay", WAIT);
    client_send(j, "{\"type\":\"history\",\"limit\":1}");
    json_t *history = client_expect(j, "history", WAIT);
    assert_int_equal(json_array_size(jarr(history, "games")), 1);

    for (int i = 0; i < 2; i++) {
        http_response r;
        char req[256];
        snprintf(req, sizeof req, "GET /api/game/%lld HTTP/1.1\r\nHost: t\r\n\r\n",
                 (long long)id);
        get(s, ports[i], req, &r);
        assert_int_equal(r.status, 200);
        assert_header(&r, "Content-Type", "application/json");
        assert_true(jequal(body_json(&r), replay));
        size_t len = r.body_len;
        http_response_free(&r);

        /* HEAD: the same length, no body. */
        snprintf(req, sizeof req, "HEAD /api/game/%lld HTTP/1.1\r\nHost: t\r\n\r\n",
                 (long long)id);
        get(s, ports[i], req, &r);
        assert_int_equal(r.status, 200);
        char v[32];
        assert_true(http_header(&r, "Content-Length", v, sizeof v));
        assert_int_equal(strtoul(v, NULL, 10), len);
        http_response_free(&r);

        /* Unknown ids, numeric or not: 404 with the error object. */
        static const char *const missing[] = {"/api/game/987654", "/api/game/abc"};
        for (size_t k = 0; k < 2; k++) {
            snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", missing[k]);
            get(s, ports[i], req, &r);
            assert_int_equal(r.status, 404);
            assert_header(&r, "Content-Type", "application/json");
            json_t *e = body_json(&r);
            assert_string_equal(jstr(e, "type"), "error");
            assert_string_equal(jstr(e, "code"), "game_not_found");
            http_response_free(&r);
        }

        get(s, ports[i], "GET /api/history?limit=1 HTTP/1.1\r\nHost: t\r\n\r\n", &r);
        assert_int_equal(r.status, 200);
        assert_header(&r, "Content-Type", "application/json");
        assert_true(jequal(body_json(&r), history));
        http_response_free(&r);
        get(s, ports[i], "GET /api/history HTTP/1.1\r\nHost: t\r\n\r\n", &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(jstr(body_json(&r), "type"), "history");
        http_response_free(&r);
        get(s, ports[i], "GET /api/history?limit=101 HTTP/1.1\r\nHost: t\r\n\r\n", &r);
        assert_int_equal(r.status, 400);
        assert_string_equal(jstr(body_json(&r), "code"), "bad_message");
        http_response_free(&r);
    }
    assert_int_equal(server_stop(s), 0);
}

/* /game/ID: the web client (200) for a finished game, a page saying so
 * (404) for any other; both kept alive and in order with what follows. */
static void test_game_page(void **state) {
    (void)state;
    th_server *s = SERVER(NULL);
    json_int_t id = finished_game(s);
    http_response r;
    get(s, s->port, "GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    char *client_page = strdup(r.body);
    http_response_free(&r);

    client *c = client_connect(s);
    char req[512];
    snprintf(req, sizeof req,
             "GET /game/%lld HTTP/1.1\r\nHost: t\r\n\r\n"
             "HEAD /game/%lld HTTP/1.1\r\nHost: t\r\n\r\n"
             "GET /game/987654 HTTP/1.1\r\nHost: t\r\n\r\n"
             "HEAD /game/x HTTP/1.1\r\nHost: t\r\n\r\n"
             "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
             (long long)id, (long long)id);
    client_send_str(c, req);
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_header(&r, "Content-Type", "text/html; charset=utf-8");
    assert_string_equal(r.body, client_page);
    http_response_free(&r);
    http_read(c, &r, true, WAIT);
    assert_int_equal(r.status, 200);
    http_response_free(&r);
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 404);
    assert_header(&r, "Content-Type", "text/html; charset=utf-8");
    assert_non_null(strstr(r.body, "No such game"));
    http_response_free(&r);
    http_read(c, &r, true, WAIT);
    assert_int_equal(r.status, 404);
    http_response_free(&r);
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    http_response_free(&r);
    free(client_page);
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_api_answers_as_requests, harness_teardown),
        cmocka_unit_test_teardown(test_game_page, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
