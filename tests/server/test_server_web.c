/* test_server_web.c - browsers on the game port: HTTP, WebSocket and /metrics against
 * the real race2048d, with every limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wsclient.h"

/* One request on a fresh connection; the response in r. */
static void get(th_server *s, const char *req, http_response *r) {
    client *c = client_connect(s);
    client_send_str(c, req);
    http_read(c, r, strncmp(req, "HEAD", 4) == 0, WAIT);
}

/* The value of a metric line "name value" (labels included in name). */
static double metric(th_server *s, const char *name) {
    http_response r;
    get(s, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    char type[128];
    assert_true(http_header(&r, "Content-Type", type, sizeof type));
    assert_non_null(strstr(type, "version=0.0.4"));
    size_t nlen = strlen(name);
    for (const char *p = r.body; p && *p;
         p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, nlen) && p[nlen] == ' ') {
            double v = strtod(p + nlen + 1, NULL);
            http_response_free(&r);
            return v;
        }
    fail_msg("metric %s missing from:\n%s", name, r.body);
}

/* ----------------------------------------------------------------- HTTP --- */

static void test_http_pages(void **state) {
    th_server *s = SERVER(NULL);
    http_response r;
    get(s, "GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    char v[128], etag[64];
    assert_true(http_header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/html; charset=utf-8");
    assert_true(http_header(&r, "ETag", etag, sizeof etag));
    assert_non_null(strstr(r.body, "<html"));
    size_t page_len = r.body_len;
    http_response_free(&r);

    /* HEAD: the same head, no body; the connection stays usable after it. */
    client *c = client_connect(s);
    client_send_str(
        c, "HEAD / HTTP/1.1\r\nHost: t\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    http_read(c, &r, true, WAIT);
    assert_int_equal(r.status, 200);
    assert_true(http_header(&r, "Content-Length", v, sizeof v));
    assert_int_equal(strtoul(v, NULL, 10), page_len);
    http_response_free(&r);
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok");
    http_response_free(&r);

    /* Revalidation with the ETag. */
    char req[256];
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nIf-None-Match: %s\r\n\r\n", etag);
    client_send_str(c, req);
    http_read(c, &r, true, WAIT);
    assert_int_equal(r.status, 304);
    http_response_free(&r);

    /* The scripts and styles the page needs. */
    client_send_str(c, "GET /static/app.js HTTP/1.1\r\n\r\n");
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_true(http_header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/javascript; charset=utf-8");
    http_response_free(&r);
    client_send_str(c, "GET /static/style.css?v=2 HTTP/1.1\r\n\r\n");
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    http_response_free(&r);

    /* 404, 405 (with Allow), and the connection is still kept. */
    client_send_str(
        c, "GET /nope HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
           "DELETE /healthz HTTP/1.1\r\n\r\n");
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 404);
    http_response_free(&r);
    for (int i = 0; i < 2; i++) {
        http_read(c, &r, false, WAIT);
        assert_int_equal(r.status, 405);
        assert_true(http_header(&r, "Allow", v, sizeof v));
        http_response_free(&r);
    }
    /* HTTP/1.0 without keep-alive: answered, then closed. */
    client_send_str(c, "GET /healthz HTTP/1.0\r\n\r\n");
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_true(http_header(&r, "Connection", v, sizeof v));
    assert_string_equal(v, "close");
    http_response_free(&r);
    client_expect_eof(c, WAIT);
}

static void test_http_pipelined_burst(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    enum { N = 50 };
    static char burst[N * 64];
    size_t n = 0;
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(burst + n, sizeof burst - n,
                              "GET /healthz?%d HTTP/1.1\r\n\r\n", i);
    client_send_raw(c, burst, n, false);
    for (int i = 0; i < N; i++) {
        http_response r;
        http_read(c, &r, false, WAIT);
        assert_int_equal(r.status, 200);
        http_response_free(&r);
    }
}

static void test_http_bad_requests(void **state) {
    th_server *s = SERVER(NULL);
    http_response r;
    client *c = client_connect(s);
    client_send_str(c, "GET / HTTP/2.0\r\n\r\n");
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 400);
    http_response_free(&r);
    client_expect_eof(c, WAIT);

    /* A head over 8 KiB: 431, then close. */
    c = client_connect(s);
    static char big[9000];
    int k = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Filler: ");
    memset(big + k, 'a', sizeof big - (size_t)k);
    client_send_raw(c, big, sizeof big, false);
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 431);
    http_response_free(&r);
    client_expect_eof(c, WAIT);

    /* /ws without the upgrade, and an upgrade with a wrong version. */
    get(s, "GET /ws HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 400);
    http_response_free(&r);
    get(s,
        "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
        &r);
    assert_int_equal(r.status, 400);
    http_response_free(&r);

    /* Lowercase is not an HTTP request line: text mode, as before. */
    c = client_connect(s);
    client_send_str(c, "get / http/1.1\r\n");
    assert_true(client_peek_raw(c, WAIT) > 0);
    char buf[8];
    assert_true(client_read_raw(c, buf, 4, WAIT) > 0);
    assert_false(memcmp(buf, "HTTP", 4) == 0);
}

static void test_http_slow_headers_idle(void **state) {
    th_server *s = SERVER("--idle-timeout", "1");
    client *c = client_connect(s);
    client_send_str(c, "GET / HTTP/1.1\r\nHost: t\r\n"); /* and never the blank line */
    client_drain_to_eof(c, WAIT + 3000);
    c = client_connect(s);
    client_send_str(c, "GET /a-request-line-that-never-ends"); /* slowloris */
    client_drain_to_eof(c, WAIT + 3000);
}

/* Dribblers: an HTTP request head and a WebSocket message that each get a
 * byte every 300 ms and are never finished are closed by --request-timeout,
 * while an honest client stays. */
static void test_web_slowloris(void **state) {
    th_server *s = SERVER("--request-timeout", "2", "--idle-timeout", "60");
    client *honest = client_named(s, "honest");
    client *http = client_connect(s);
    client *ws = ws_connect(s);
    static const char head[] =
        "GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    /* A text frame announcing 100 bytes, masked, then its payload a byte at a time. */
    static const unsigned char frame[6] = {0x81, 0x80 | 100, 0, 0, 0, 0};
    client_send_raw(ws, frame, sizeof frame, false);
    bool http_open = true, ws_open = true;
    int64_t start = harness_now_ms(), deadline = start + harness_ms(10000);
    for (size_t i = 0; (http_open || ws_open) && harness_now_ms() < deadline; i++) {
        /* Once the server has closed a socket, a send to it fails. */
        if (http_open && !client_send_raw(http, head + i % (sizeof head - 1), 1, true))
            http_open = false;
        if (ws_open && !client_send_raw(ws, "x", 1, true)) ws_open = false;
        client_sync(honest);
        struct pollfd none;
        poll(&none, 0, 300); /* the pace is the attack */
    }
    int64_t took = harness_now_ms() - start;
    print_message("web slowloris closed after %lld ms\n", (long long)took);
    assert_false(http_open);
    assert_false(ws_open);
    assert_true(took >= 2000);
    client_sync(honest);
}

/* A kept-alive HTTP connection left idle is closed after 15 s even when
 * --idle-timeout is longer; a JSON player as idle stays. */
static void test_http_keepalive_closes(void **state) {
    th_server *s = SERVER("--idle-timeout", "600");
    client *player = client_named(s, "player");
    client *c = client_connect(s);
    client_send_str(c, "GET /healthz HTTP/1.1\r\n\r\n");
    http_response r;
    http_read(c, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    http_response_free(&r);
    int64_t t0 = harness_now_ms();
    client_expect_eof(c, 20000);
    int64_t took = harness_now_ms() - t0;
    print_message("idle keep-alive connection closed after %lld ms\n", (long long)took);
    assert_true(took >= 14000);
    client_sync(player);
}

static void test_http_full_server(void **state) {
    th_server *s = SERVER("--max-clients", "1");
    client *a = client_named(s, "holder");
    http_response r;
    get(s, "GET / HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 503);
    http_response_free(&r);
    client_sync(a);

    th_server *t = SERVER("--max-per-ip", "1");
    client *b = client_named(t, "holder");
    get(t, "GET /healthz HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 503);
    http_response_free(&r);
    client_sync(b);
}

/* ------------------------------------------------------------ WebSocket --- */

static void test_ws_solo_game(void **state) {
    th_server *s = SERVER(NULL);
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"hello\",\"name\":\"browser\"}");
    json_t *welcome = ws_expect(w, "welcome", WAIT);
    assert_string_equal(jstr(welcome, "name"), "browser");
    ws_send(w, "{\"type\":\"solo\",\"size\":3}");
    json_t *start = ws_expect(w, "start", WAIT);
    assert_int_equal(jint(start, "size"), 3);
    /* A request in three fragments with a ping between them: one answer. */
    ws_send_frame(w, false, 1, "{\"type\":", 8, false);
    ws_send_frame(w, true, 9, "are you there", 13, false);
    ws_send_frame(w, false, 0, "\"ping\",", 7, false);
    ws_send_frame(w, true, 0, "\"t\":7}", 6, false);
    /* The control pong and the JSON pong, in either order (both answer
     * frames that arrived together). */
    char buf[256];
    size_t len;
    bool control = false, json = false;
    for (int i = 0; i < 2; i++) {
        int op = ws_read_frame(w, buf, sizeof buf, &len, WAIT);
        if (op == 0xA) {
            assert_string_equal(buf, "are you there");
            control = true;
        } else {
            assert_int_equal(op, 1);
            assert_non_null(strstr(buf, "\"type\":\"pong\""));
            assert_non_null(strstr(buf, "\"t\":7"));
            json = true;
        }
    }
    assert_true(control && json);
    /* Errors are the same as JSON mode's. */
    ws_send(w, "{\"type\":\"move\",\"dir\":\"sideways\"}");
    json_t *e = ws_expect(w, "error", WAIT);
    assert_string_equal(jstr(e, "code"), "bad_dir");
    /* Play to the end. */
    static const char *dirs[] = {"left", "down", "right", "up"};
    json_t *end = NULL;
    for (int i = 0; i < 5000 && !end; i++) {
        ws_send(w, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[i % 4]);
        json_t *o = ws_next(w, WAIT);
        assert_non_null(o);
        if (!strcmp(jstr(o, "type"), "end"))
            end = o;
        else if (!strcmp(jstr(o, "type"), "state") &&
                 strcmp(jstr(o, "status"), "playing") != 0)
            end = ws_expect(w, "end", WAIT);
    }
    assert_non_null(end);
    assert_true(jhas(end, "seed"));
    /* The client closes: the server answers with the same code, then EOF. */
    ws_send_frame(w, true, 8, "\x03\xe8", 2, false);
    assert_int_equal(ws_expect_close(w, WAIT), 1000);
    client_expect_eof(w, WAIT);
}

static void test_ws_violations(void **state) {
    th_server *s = SERVER("--max-line", "64");
    client *w = ws_connect(s);
    ws_send_frame(w, true, 2, "\x01\x02", 2, false);
    assert_int_equal(ws_expect_close(w, WAIT), 1003);
    client_expect_eof(w, WAIT);

    w = ws_connect(s);
    ws_send_frame(w, true, 1, "{\"type\":\"ping\"}", 15, true); /* unmasked */
    assert_int_equal(ws_expect_close(w, WAIT), 1002);
    client_expect_eof(w, WAIT);

    w = ws_connect(s);
    ws_send_frame(w, true, 0, "{}", 2, false); /* a continuation of nothing */
    assert_int_equal(ws_expect_close(w, WAIT), 1002);
    client_expect_eof(w, WAIT);

    w = ws_connect(s);
    ws_send_frame(w, true, 1, "{\"type\":\"\xff\xfe\"}", 12, false); /* not UTF-8 */
    assert_int_equal(ws_expect_close(w, WAIT), 1007);
    client_expect_eof(w, WAIT);

    /* Over the line limit in one frame, then in fragments. */
    char big[200];
    memset(big, 'x', sizeof big);
    w = ws_connect(s);
    ws_send_frame(w, true, 1, big, 65, false);
    json_t *e = ws_expect(w, "error", WAIT);
    assert_string_equal(jstr(e, "code"), "line_too_long");
    assert_int_equal(ws_expect_close(w, WAIT), 1009);
    client_expect_eof(w, WAIT);
    w = ws_connect(s);
    ws_send_frame(w, false, 1, big, 40, false);
    ws_send_frame(w, true, 0, big, 40, false);
    e = ws_expect(w, "error", WAIT);
    assert_string_equal(jstr(e, "code"), "line_too_long");
    assert_int_equal(ws_expect_close(w, WAIT), 1009);
    client_expect_eof(w, WAIT);

    /* Exactly the limit, in fragments, is a request like any other. */
    w = ws_connect(s);
    char msg[65];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"ping\",\"t\":1,\"pad\":\"%034d\"}", 0);
    assert_int_equal(n, 64);
    ws_send_frame(w, false, 1, msg, 30, false);
    ws_send_frame(w, true, 0, msg + 30, 34, false);
    ws_expect_skip(w, "pong", "welcome", WAIT);
}

static void test_ws_race_with_tcp_player(void **state) {
    th_server *s = SERVER(NULL);
    client *tcp = client_named(s, "tcp");
    client *web = ws_connect(s);
    ws_send(web, "{\"type\":\"hello\",\"name\":\"web\"}");
    json_int_t idweb = jint(ws_expect(web, "welcome", WAIT), "id");
    client_send(tcp, "{\"type\":\"create\",\"size\":3,\"target\":16}");
    const char *code = jstr(client_expect(tcp, "room", WAIT), "room");
    ws_send(web, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *s_web = ws_expect_skip(web, "start", "room", WAIT);
    json_t *s_tcp = client_expect_skip(tcp, "start", "room", WAIT);
    /* The same start board and the same commitment for both transports. */
    assert_true(jequal(jarr(s_web, "players"), jarr(s_tcp, "players")));
    assert_string_equal(jstr(s_web, "commit"), jstr(s_tcp, "commit"));

    /* A spectator on WebSocket too. */
    client *watch = ws_connect(s);
    ws_send(watch, "{\"type\":\"hello\",\"name\":\"eyes\"}");
    ws_expect(watch, "welcome", WAIT);
    ws_send(watch, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    ws_expect(watch, "start", WAIT);

    static const char *dirs[] = {"left", "down", "right", "up"};
    json_t *end_web = NULL;
    int ends_tcp = 0, moves = 0;
    bool done[2] = {false, false}; /* web, tcp: no longer playing */
    for (int i = 0; i < 4000 && !end_web; i++) {
        bool web_turn = i % 2 == 0;
        if (done[web_turn ? 0 : 1]) continue;
        if (web_turn)
            ws_send(web, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[(i / 2) % 4]);
        else
            client_send(tcp, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[(i / 2) % 4]);
        /* The mover's answer; a board change goes to everyone, same bytes. */
        json_t *mine = web_turn ? ws_expect_skip(web, "state", "player", WAIT)
                                : client_expect_skip(tcp, "state", "player", WAIT);
        if (jbool(mine, "moved")) {
            moves++;
            json_t *other = web_turn ? client_expect_skip(tcp, "state", "player", WAIT)
                                     : ws_expect_skip(web, "state", "player", WAIT);
            assert_true(jequal(mine, other));
            assert_true(jequal(ws_expect_skip(watch, "state", "player", WAIT), mine));
        }
        const char *status = jstr(mine, "status");
        if (strcmp(status, "playing") != 0) done[web_turn ? 0 : 1] = true;
        /* Reaching the target, or everyone stuck, ends the race for all. */
        if (!strcmp(status, "won") || (done[0] && done[1])) {
            end_web = ws_expect_skip(web, "end", "state player", WAIT);
            json_t *end_tcp = client_expect_skip(tcp, "end", "state player", WAIT);
            ends_tcp++;
            assert_true(jequal(end_web, end_tcp));
            assert_true(
                jequal(ws_expect_skip(watch, "end", "state player", WAIT), end_web));
        }
    }
    assert_non_null(end_web);
    assert_int_equal(ends_tcp, 1);
    assert_true(moves > 0);
    (void)idweb;
    print_message("race of %d board changes ended: %s\n", moves, jstr(end_web, "reason"));
}

static void test_ws_resume(void **state) {
    th_server *s = SERVER(NULL);
    client *tcp = client_named(s, "tcp");
    client *web = ws_connect(s);
    ws_send(web, "{\"type\":\"hello\",\"name\":\"web\"}");
    json_t *welcome = ws_expect(web, "welcome", WAIT);
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(welcome, "token"));
    json_int_t idweb = jint(welcome, "id");
    client_send(tcp, "{\"type\":\"create\",\"size\":5}");
    const char *code = jstr(client_expect(tcp, "room", WAIT), "room");
    ws_send(web, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    ws_expect_skip(web, "start", "room", WAIT);
    client_expect_skip(tcp, "start", "room", WAIT);
    json_t *moved = client_move_any(tcp);
    ws_expect_skip(web, "state", "", WAIT);

    client_abort(web); /* the browser's socket drops */
    json_t *p = client_expect(tcp, "player", WAIT);
    assert_int_equal(jint(p, "id"), idweb);
    assert_false(jbool(p, "connected"));

    client *back = ws_connect(s);
    ws_send(back, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    assert_int_equal(jint(ws_expect(back, "welcome", WAIT), "id"), idweb);
    json_t *snap = ws_expect(back, "start", WAIT);
    json_t *tcp_view = jplayer(jarr(snap, "players"), jint(moved, "id"));
    assert_true(jequal(jarr(tcp_view, "board"), jarr(moved, "board")));
    p = client_expect(tcp, "player", WAIT);
    assert_true(jbool(p, "connected"));
    ws_send(back, "{\"type\":\"ping\",\"t\":3}");
    ws_expect(back, "pong", WAIT);
}

static void test_ws_slow_consumer(void **state) {
    th_server *s = SERVER("--max-output", "65536");
    client *a = client_named(s, "fast");
    client *slow = ws_connect_rcvbuf(s, 4096);
    ws_send(slow, "{\"type\":\"hello\",\"name\":\"slow\"}");
    json_int_t idslow = jint(ws_expect(slow, "welcome", WAIT), "id");
    client_send(a, "{\"type\":\"create\",\"size\":8,\"target\":1048576}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    ws_send(slow, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    ws_expect_skip(slow, "start", "room", WAIT);
    client_expect_skip(a, "start", "room", WAIT);
    /* From here the browser reads nothing. */
    static const char *const dirs[] = {"left", "up", "right", "up"};
    bool cut = false;
    int moves = 0;
    while (moves < 60000 && !cut) {
        char batch[32 * 64];
        size_t n = 0;
        for (int i = 0; i < 32; i++)
            n += (size_t)snprintf(batch + n, sizeof batch - n,
                                  "{\"type\":\"move\",\"dir\":\"%s\"}\n",
                                  dirs[(moves + i) % 4]);
        client_send_raw(a, batch, n, false);
        for (int got = 0; got < 32;) {
            json_t *o = client_next(a, WAIT);
            assert_non_null(o);
            if (!strcmp(jstr(o, "type"), "state")) {
                got++;
            } else if (!strcmp(jstr(o, "type"), "player")) {
                assert_int_equal(jint(o, "id"), idslow);
                assert_false(jbool(o, "connected"));
                cut = true;
            }
        }
        moves += 32;
    }
    print_message("WebSocket slow consumer cut off after about %d moves\n", moves);
    assert_true(cut);
    client_drain_to_eof(slow, WAIT);
    assert_true(metric(s, "race2048_slow_consumers_total") >= 1);
}

/* A browser that floods moves gets them all answered in order, while another
 * player's requests are still answered at once: input is taken a turn's
 * budget at a time, for WebSocket connections as for TCP ones. */
static void test_ws_flood_is_fair(void **state) {
    th_server *s = SERVER(NULL);
    client *calm = client_named(s, "calm");
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"hello\",\"name\":\"flood\"}");
    ws_expect(w, "welcome", WAIT);
    ws_send(w, "{\"type\":\"solo\",\"size\":8,\"target\":1048576}");
    ws_expect(w, "start", WAIT);
    enum { MOVES = 20000 };
    static const char *const dirs[] = {"left", "up", "right", "up"};
    size_t cap = (size_t)MOVES * 64, n = 0;
    unsigned char *burst = malloc(cap);
    assert_non_null(burst);
    for (int i = 0; i < MOVES; i++) {
        char msg[64];
        int len =
            snprintf(msg, sizeof msg, "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%d}",
                     dirs[i % 4], i);
        burst[n++] = 0x81;
        burst[n++] = (unsigned char)(0x80 | len);
        memset(burst + n, 0, 4); /* a zero mask key */
        n += 4;
        memcpy(burst + n, msg, (size_t)len);
        n += (size_t)len;
    }
    client_send_raw(w, burst, n, false);
    free(burst);
    /* Another player is served while the flood is being worked through. */
    for (int i = 0; i < 5; i++)
        client_sync(calm);
    int answered = 0;
    while (answered < MOVES) {
        json_t *o = ws_expect(w, "state", WAIT);
        assert_int_equal(jint(o, "seq"), answered);
        answered++;
    }
    /* No bound on memory here: under ASan freed memory sits in quarantine
     * (a Release server stays near its start size: 7.5 MB peak, measured). */
    print_message("WebSocket flood of %d moves: all answered in order\n", MOVES);
    client_sync(calm);
}

/* Pipelined requests from a client that never reads: it is cut off by the
 * output limit (or held by back-pressure), and the server stays small and
 * answers others. */
static void test_http_pipeline_flood_bounded(void **state) {
    th_server *s = SERVER("--max-output", "65536");
    client *calm = client_named(s, "calm");
    client *h = client_connect_rcvbuf(s, 4096);
    enum { N = 20000 };
    static const char req[] = "GET /static/style.css HTTP/1.1\r\nHost: t\r\n\r\n";
    size_t n = (size_t)N * (sizeof req - 1);
    char *burst = malloc(n);
    assert_non_null(burst);
    for (int i = 0; i < N; i++)
        memcpy(burst + (size_t)i * (sizeof req - 1), req, sizeof req - 1);
    long rss0 = server_rss_kib(s);
    assert_true(rss0 > 0);
    /* The server may stop reading, so the write may not finish: send what goes. */
    client_send_raw(h, burst, n < 256 * 1024 ? n : 256 * 1024, true);
    free(burst);
    for (int i = 0; i < 5; i++)
        client_sync(calm);
    long rss1 = server_rss_kib(s);
    print_message("HTTP pipeline flood: server RSS %ld -> %ld KiB\n", rss0, rss1);
    assert_true(rss1 - rss0 < 32 * 1024);
    client_abort(h);
    client_sync(calm);
}

static void test_ws_bye_on_shutdown(void **state) {
    th_server *s = SERVER(NULL);
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"hello\",\"name\":\"web\"}");
    ws_expect(w, "welcome", WAIT);
    server_stop(s);
    ws_expect(w, "bye", WAIT);
    assert_int_equal(ws_expect_close(w, WAIT), 1001);
}

/* SIGTERM with browsers connected, one of them just told its race ended (an
 * `end` that waits for the journal's commit, here up to 10 s away): the stop
 * commits at once, so the `end` still reaches the browser before its bye, and
 * the server exits well within the 1 s the docs give (that is the deadline for
 * clients that do not read; these read). */
static void test_ws_shutdown_fast(void **state) {
    char journal[64];
    snprintf(journal, sizeof journal, "/tmp/race2048-web-stop-%d.journal", (int)getpid());
    unlink(journal);
    th_server *s = SERVER("--journal", journal, "--journal-sync-ms", "10000");
    client *lobby = ws_connect(s);
    ws_send(lobby, "{\"type\":\"hello\",\"name\":\"lobby\"}");
    ws_expect(lobby, "welcome", WAIT);
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"hello\",\"name\":\"web\"}");
    ws_expect(w, "welcome", WAIT);
    ws_send(w, "{\"type\":\"create\"}");
    json_t *room = ws_expect(w, "room", WAIT);
    client *b = client_named(s, "tcp");
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", jstr(room, "room"));
    client_expect_skip(b, "start", "room", WAIT);
    ws_expect_skip(w, "start", "room", WAIT);
    client_send(b, "{\"type\":\"leave\"}"); /* a forfeit: the race ends */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (metric(s, "race2048_games_finished_total{reason=\"forfeit\"}") < 1)
        if (!harness_remaining(deadline)) fail_msg("the race did not end");

    int64_t t0 = harness_now_ms();
    assert_int_equal(server_stop(s), 0);
    int64_t took = harness_now_ms() - t0;
    print_message("SIGTERM to exit with browsers connected: %lld ms\n", (long long)took);
    json_t *end = ws_expect_skip(w, "end", "player state", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    ws_expect(w, "bye", WAIT);
    assert_int_equal(ws_expect_close(w, WAIT), 1001);
    client_expect_skip(b, "bye", "end left", WAIT);
    ws_expect(lobby, "bye", WAIT);
    assert_int_equal(ws_expect_close(lobby, WAIT), 1001);
    assert_true(took <= harness_latency_ms(1000));
    unlink(journal);
}

/* One client frame into buf: text, final, a zero mask key (the payload as is). */
static size_t put_frame(char *buf, const char *payload) {
    size_t len = strlen(payload);
    buf[0] = (char)0x81;
    buf[1] = (char)(0x80 | len);
    memset(buf + 2, 0, 4);
    memcpy(buf + 6, payload, len);
    return 6 + len;
}

/* A close whose close frame no longer fits the output queue: the connection
 * is cut off as a slow consumer right there, and must not be left with a
 * flush deadline (it was freed under the server's timers). Requests whose
 * errors fill the queue within one turn, then the fifth failed resume, for
 * every fill level: one of them ends exactly at the limit. */
static void test_ws_close_at_output_limit(void **state) {
    th_server *s = SERVER("--max-output", "4096");
    for (int fill = 0; fill < 40; fill++) {
        client *w = ws_connect(s);
        char burst[768];
        size_t n = 0;
        for (int i = 0; i < fill; i++)
            n += put_frame(burst + n, "{}"); /* bad_message each */
        for (int i = 0; i < 5; i++) {
            char resume[64];
            snprintf(resume, sizeof resume, "{\"type\":\"resume\",\"token\":\"%032d\"}",
                     i);
            n += put_frame(burst + n, resume);
        }
        client_send_raw(w, burst, n, false);
        client_drain_to_eof(w, WAIT);
        client_close(w);
    }
    /* The server still runs its timers and serves. */
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"ping\",\"t\":1}");
    ws_expect_skip(w, "pong", "welcome", WAIT);
    assert_int_equal(server_stop(s), 0);
}

static void test_metrics_move(void **state) {
    th_server *s = SERVER(NULL);
    assert_true(metric(s, "race2048_uptime_seconds") >= 0);
    double moves0 = metric(s, "race2048_moves_total");
    double started0 = metric(s, "race2048_games_started_total");
    assert_true(metric(s, "race2048_connections{mode=\"web\"}") == 0);
    client *w = ws_connect(s);
    ws_send(w, "{\"type\":\"hello\",\"name\":\"web\"}");
    ws_expect(w, "welcome", WAIT);
    assert_true(metric(s, "race2048_connections{mode=\"web\"}") == 1);
    client *j = client_named(s, "json");
    assert_true(metric(s, "race2048_connections{mode=\"json\"}") == 1);
    client_send(j, "{\"type\":\"solo\"}");
    client_expect(j, "start", WAIT);
    client_move_any(j);
    client_move_any(j);
    assert_true(metric(s, "race2048_moves_total") == moves0 + 2);
    assert_true(metric(s, "race2048_games_started_total") == started0 + 1);
    assert_true(metric(s, "race2048_solo_games") == 1);
    client_send(j, "{\"type\":\"move\",\"dir\":\"nowhere\"}");
    client_expect_error(j, "bad_dir", WAIT);
    assert_true(metric(s, "race2048_errors_total{code=\"bad_dir\"}") == 1);
    client_send(j, "{\"type\":\"leave\"}");
    client_expect(j, "end", WAIT);
    client_expect(j, "left", WAIT);
    assert_true(metric(s, "race2048_games_finished_total{reason=\"forfeit\"}") +
                    metric(s, "race2048_games_finished_total{reason=\"all_over\"}") >=
                1);
    /* Errors that close a connection count too. */
    client *big = client_connect(s);
    static char line[5000];
    memset(line, 'x', sizeof line - 1);
    line[0] = '{';
    line[sizeof line - 1] = '\n';
    client_send_raw(big, line, sizeof line, false);
    client_expect_error(big, "line_too_long", WAIT);
    client_expect_eof(big, WAIT);
    assert_true(metric(s, "race2048_errors_total{code=\"line_too_long\"}") == 1);
    assert_true(metric(s, "race2048_received_bytes_total") > 0);
    assert_true(metric(s, "race2048_sent_bytes_total") > 0);
    client_sync(j);
    (void)w;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_http_pages, harness_teardown),
        cmocka_unit_test_teardown(test_http_pipelined_burst, harness_teardown),
        cmocka_unit_test_teardown(test_http_bad_requests, harness_teardown),
        cmocka_unit_test_teardown(test_http_slow_headers_idle, harness_teardown),
        cmocka_unit_test_teardown(test_web_slowloris, harness_teardown),
        cmocka_unit_test_teardown(test_http_keepalive_closes, harness_teardown),
        cmocka_unit_test_teardown(test_http_full_server, harness_teardown),
        cmocka_unit_test_teardown(test_ws_solo_game, harness_teardown),
        cmocka_unit_test_teardown(test_ws_violations, harness_teardown),
        cmocka_unit_test_teardown(test_ws_race_with_tcp_player, harness_teardown),
        cmocka_unit_test_teardown(test_ws_resume, harness_teardown),
        cmocka_unit_test_teardown(test_ws_slow_consumer, harness_teardown),
        cmocka_unit_test_teardown(test_ws_flood_is_fair, harness_teardown),
        cmocka_unit_test_teardown(test_http_pipeline_flood_bounded, harness_teardown),
        cmocka_unit_test_teardown(test_ws_bye_on_shutdown, harness_teardown),
        cmocka_unit_test_teardown(test_ws_shutdown_fast, harness_teardown),
        cmocka_unit_test_teardown(test_ws_close_at_output_limit, harness_teardown),
        cmocka_unit_test_teardown(test_metrics_move, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
