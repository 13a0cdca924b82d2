/* test_http.c - HTTP requests parse the same however the bytes are split; limits hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "http.h"

/* Feeds s one byte at a time (the worst split) until a result other than MORE. */
static proto_http_result feed_bytewise(proto_http *h, const char *s, size_t n,
                                       size_t *used) {
    *used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t c;
        proto_http_result r = proto_http_feed(h, s + i, 1, &c);
        *used += c;
        if (r != PROTO_HTTP_MORE) return r;
        assert_int_equal(c, 1);
    }
    return PROTO_HTTP_MORE;
}

static void test_get_whole_and_split(void **state) {
    const char req[] = "GET /static/app.js?v=1 HTTP/1.1\r\nHost: x\r\n"
                       "If-None-Match: \"abc\"\r\n\r\n";
    for (int split = 0; split < 2; split++) {
        proto_http h;
        proto_http_init(&h);
        size_t used;
        proto_http_result r = split ? feed_bytewise(&h, req, sizeof req - 1, &used)
                                    : proto_http_feed(&h, req, sizeof req - 1, &used);
        assert_int_equal(r, PROTO_HTTP_REQUEST);
        assert_int_equal(used, sizeof req - 1);
        assert_int_equal(h.req.method, PROTO_HTTP_GET);
        assert_string_equal(h.req.target, "/static/app.js?v=1");
        assert_int_equal(h.req.major, 1);
        assert_int_equal(h.req.minor, 1);
        assert_true(h.req.keep_alive);
        assert_false(h.req.upgrade_websocket);
        assert_string_equal(h.req.if_none_match, "\"abc\"");
    }
}

static void test_pipelined_requests_one_at_a_time(void **state) {
    const char reqs[] = "GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\n\r\n"
                        "POST /c HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
                        "GET /d HTTP/1.0\r\n\r\n";
    const char *targets[] = {"/a", "/b", "/c", "/d"};
    proto_http_method methods[] = {PROTO_HTTP_GET, PROTO_HTTP_HEAD, PROTO_HTTP_OTHER,
                                   PROTO_HTTP_GET};
    bool alive[] = {true, true, true, false};
    proto_http h;
    proto_http_init(&h);
    size_t off = 0;
    for (int i = 0; i < 4; i++) {
        size_t used;
        assert_int_equal(proto_http_feed(&h, reqs + off, sizeof reqs - 1 - off, &used),
                         PROTO_HTTP_REQUEST);
        off += used;
        assert_string_equal(h.req.target, targets[i]);
        assert_int_equal(h.req.method, methods[i]);
        assert_int_equal(h.req.keep_alive, alive[i]);
        /* Fed again before next(): still the same request, nothing consumed. */
        assert_int_equal(proto_http_feed(&h, reqs + off, sizeof reqs - 1 - off, &used),
                         PROTO_HTTP_REQUEST);
        assert_int_equal(used, 0);
        proto_http_next(&h);
    }
    assert_int_equal(off, sizeof reqs - 1);
}

static void test_websocket_upgrade_leaves_frames(void **state) {
    const char req[] = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\n"
                       "Connection: keep-alive, Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n\x81\x85";
    proto_http h;
    proto_http_init(&h);
    size_t used;
    assert_int_equal(proto_http_feed(&h, req, sizeof req - 1, &used), PROTO_HTTP_UPGRADE);
    assert_int_equal(used, sizeof req - 3); /* the two frame bytes are left */
    assert_true(h.req.upgrade_websocket);
    assert_string_equal(h.req.ws_key, "dGhlIHNhbXBsZSBub25jZQ==");
    assert_int_equal(h.req.ws_version, 13);
}

/* RFC 7230 3.2: whitespace after a field value (OWS) is not part of it. */
static void test_websocket_headers_trailing_whitespace(void **state) {
    const char req[] = "GET /ws HTTP/1.1\r\nUpgrade: websocket \t\r\n"
                       "Connection: Upgrade  \r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ== \t\r\n"
                       "Sec-WebSocket-Version: 13 \r\n\r\n";
    proto_http h;
    proto_http_init(&h);
    size_t used;
    assert_int_equal(proto_http_feed(&h, req, sizeof req - 1, &used), PROTO_HTTP_UPGRADE);
    assert_true(h.req.upgrade_websocket);
    assert_string_equal(h.req.ws_key, "dGhlIHNhbXBsZSBub25jZQ==");
    assert_int_equal(h.req.ws_version, 13);
}

static void test_accept_key_rfc_example(void **state) {
    char out[29];
    assert_int_equal(proto_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="); /* RFC 6455 1.3 */
    char head[256];
    size_t n = proto_http_ws_accept_head(head, sizeof head, "dGhlIHNhbXBsZSBub25jZQ==");
    assert_true(n > 0);
    assert_non_null(strstr(head, "HTTP/1.1 101 Switching Protocols\r\n"));
    assert_non_null(
        strstr(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
}

static void test_head_over_8k_is_too_large(void **state) {
    static char req[PROTO_HTTP_HEAD_MAX + 200];
    int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nX-Big: ");
    memset(req + n, 'a', sizeof req - (size_t)n);
    proto_http h;
    proto_http_init(&h);
    size_t used;
    assert_int_equal(proto_http_feed(&h, req, sizeof req, &used), PROTO_HTTP_TOO_LARGE);

    /* Just under the limit is fine. */
    n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nX-Big: ");
    size_t fill = PROTO_HTTP_HEAD_MAX - 200 - (size_t)n;
    memset(req + n, 'a', fill);
    memcpy(req + n + fill, "\r\n\r\n", 4);
    proto_http_init(&h);
    assert_int_equal(proto_http_feed(&h, req, (size_t)n + fill + 4, &used),
                     PROTO_HTTP_REQUEST);
}

static void test_bad_requests(void **state) {
    const char *bad[] = {
        "GET / HTTP/2.0\r\n\r\n",
        "GET / HTTP/0.9\r\n\r\n",
        "GET /\x01 HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        proto_http h;
        proto_http_init(&h);
        size_t used;
        assert_int_equal(proto_http_feed(&h, bad[i], strlen(bad[i]), &used),
                         PROTO_HTTP_BAD);
    }
}

/* Headers a request may carry once (RFC 7230 5.4: Host; RFC 6455 11.3.1 and
 * 11.3.5: the WebSocket key and version; RFC 7230 3.3.2: Content-Length),
 * twice, are a bad request, even with equal values, however the bytes come. */
static void test_duplicate_headers_are_bad(void **state) {
    const char *bad[] = {
        "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\nSEC-WEBSOCKET-KEY: x\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        /* Two origins: which one would the check believe? */
        "GET /ws HTTP/1.1\r\nHost: t\r\nOrigin: http://t\r\nOrigin: http://e\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        for (int split = 0; split < 2; split++) {
            proto_http h;
            proto_http_init(&h);
            size_t used;
            proto_http_result r =
                split ? feed_bytewise(&h, bad[i], strlen(bad[i]), &used)
                      : proto_http_feed(&h, bad[i], strlen(bad[i]), &used);
            if (r != PROTO_HTTP_BAD)
                fail_msg("request %zu (split %d): result %d, want BAD", i, split, r);
        }
}

/* List headers may come twice: their values add up (RFC 7230 3.2.2). */
static void test_list_headers_add_up(void **state) {
    const char req[] = "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                       "Connection: keep-alive\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n";
    proto_http h;
    proto_http_init(&h);
    size_t used;
    assert_int_equal(proto_http_feed(&h, req, sizeof req - 1, &used), PROTO_HTTP_UPGRADE);
    assert_true(h.req.upgrade_websocket);
    const char tags[] = "GET / HTTP/1.1\r\nIf-None-Match: \"a\"\r\n"
                        "If-None-Match: \"b\"\r\n\r\n";
    proto_http_init(&h);
    assert_int_equal(proto_http_feed(&h, tags, sizeof tags - 1, &used),
                     PROTO_HTTP_REQUEST);
    assert_string_equal(h.req.if_none_match, "\"a\", \"b\"");
    /* The next request on the connection starts afresh: one Host each. */
    const char two[] =
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    proto_http_init(&h);
    assert_int_equal(proto_http_feed(&h, two, sizeof two - 1, &used), PROTO_HTTP_REQUEST);
    proto_http_next(&h);
    size_t more;
    assert_int_equal(proto_http_feed(&h, two + used, sizeof two - 1 - used, &more),
                     PROTO_HTTP_REQUEST);
}

static void test_midway(void **state) {
    proto_http h;
    proto_http_init(&h);
    assert_false(proto_http_midway(&h));
    size_t used;
    assert_int_equal(proto_http_feed(&h, "G", 1, &used), PROTO_HTTP_MORE);
    assert_true(proto_http_midway(&h));
    const char rest[] = "ET / HTTP/1.1\r\n\r\n";
    assert_int_equal(proto_http_feed(&h, rest, sizeof rest - 1, &used),
                     PROTO_HTTP_REQUEST);
    assert_false(proto_http_midway(&h));
    proto_http_next(&h);
    assert_false(proto_http_midway(&h)); /* between requests: idle, not midway */
}

static void test_detect(void **state) {
    assert_int_equal(proto_http_detect((const unsigned char *)"GET / HTTP/1.1", 14), 1);
    assert_int_equal(proto_http_detect((const unsigned char *)"HEAD /x", 7), 1);
    assert_int_equal(proto_http_detect((const unsigned char *)"GE", 2), -1);
    assert_int_equal(proto_http_detect((const unsigned char *)"GET ", 4), -1);
    assert_int_equal(proto_http_detect((const unsigned char *)"", 0), -1);
    assert_int_equal(proto_http_detect((const unsigned char *)"GET x", 5), 0);
    assert_int_equal(proto_http_detect((const unsigned char *)"get /", 5), 0);
    assert_int_equal(proto_http_detect((const unsigned char *)"QUICK\r\n", 7), 0);
    assert_int_equal(proto_http_detect((const unsigned char *)"{\"type\"", 7), 0);
    assert_int_equal(proto_http_detect((const unsigned char *)"ABCDEFGHIJKLMNOPQ /", 19),
                     0);
}

static void test_response_head(void **state) {
    char out[512];
    size_t n = proto_http_head(out, sizeof out, 200, "text/plain; charset=utf-8", 2,
                               "\"e1\"", "no-cache", true);
    assert_int_equal(n, strlen(out));
    assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(out, "Content-Type: text/plain; charset=utf-8\r\n"));
    assert_non_null(strstr(out, "Content-Length: 2\r\n"));
    assert_non_null(strstr(out, "ETag: \"e1\"\r\n"));
    assert_non_null(strstr(out, "Connection: keep-alive\r\n"));
    assert_int_equal(memcmp(out + n - 4, "\r\n\r\n", 4), 0);
    n = proto_http_head(out, sizeof out, 405, NULL, 0, NULL, NULL, false);
    assert_non_null(strstr(out, "HTTP/1.1 405 Method Not Allowed\r\n"));
    assert_non_null(strstr(out, "Allow: GET, HEAD\r\n"));
    assert_non_null(strstr(out, "Connection: close\r\n"));
    assert_int_equal(proto_http_head(out, 20, 200, NULL, 0, NULL, NULL, true), 0);
}

/* Host and Origin are kept as sent; an Origin too long to keep still counts
 * as given, and one absent leaves has_origin false. */
static void test_host_and_origin_kept(void **state) {
    char req[1024];
    const char *cases[][2] = {
        {"Origin: http://example.com:8048 \r\n", "http://example.com:8048"},
        {"", NULL},
    };
    for (size_t i = 0; i < 2; i++)
        for (int split = 0; split < 2; split++) {
            snprintf(req, sizeof req,
                     "GET /ws HTTP/1.1\r\nHost:  Example.COM:8048\r\n%s\r\n",
                     cases[i][0]);
            proto_http h;
            proto_http_init(&h);
            size_t used;
            proto_http_result r = split ? feed_bytewise(&h, req, strlen(req), &used)
                                        : proto_http_feed(&h, req, strlen(req), &used);
            assert_int_equal(r, PROTO_HTTP_REQUEST);
            assert_string_equal(h.req.host, "Example.COM:8048");
            assert_int_equal(h.req.has_origin, cases[i][1] != NULL);
            assert_string_equal(h.req.origin, cases[i][1] ? cases[i][1] : "");
        }
    char name[400];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(req, sizeof req, "GET /ws HTTP/1.1\r\nHost: t\r\nOrigin: http://%s\r\n\r\n",
             name);
    proto_http h;
    proto_http_init(&h);
    size_t used;
    assert_int_equal(proto_http_feed(&h, req, strlen(req), &used), PROTO_HTTP_REQUEST);
    assert_true(h.req.has_origin);
    assert_string_equal(h.req.origin, "");
    assert_false(proto_http_same_origin(h.req.origin, h.req.host));
}

/* The Origin rule of a WebSocket upgrade: the same host and port as Host. */
static void test_same_origin(void **state) {
    static const struct {
        const char *origin, *host;
        bool same;
    } cases[] = {
        {"http://example.com:8048", "example.com:8048", true},
        {"http://EXAMPLE.com:8048", "example.COM:8048", true},
        {"http://example.com:8048", "example.com:8049", false},
        {"http://example.com:8048", "example.com", false},
        {"http://evil.example:8048", "example.com:8048", false},
        {"http://example.com.evil:8048", "example.com:8048", false},
        {"http://example.co:8048", "example.com:8048", false},
        /* Default ports, spelt or not. */
        {"http://example.com", "example.com", true},
        {"https://example.com", "example.com", true},
        {"http://example.com", "example.com:80", true},
        {"http://example.com:80", "example.com", true},
        {"https://example.com", "example.com:443", true},
        {"https://example.com:443", "example.com", true},
        {"https://example.com", "example.com:80", false},
        {"http://example.com", "example.com:443", false},
        {"https://example.com:8443", "example.com", false},
        /* IPv6: brackets, spelling and case aside. */
        {"http://[::1]:8048", "[::1]:8048", true},
        {"http://[0:0::1]:8048", "[::1]:8048", true},
        {"http://[FE80::1]", "[fe80::1]", true},
        {"http://[::1]:8048", "[::2]:8048", false},
        {"http://[::1]:8048", "::1:8048", false},
        {"http://127.0.0.1:8048", "127.0.0.1:8048", true},
        {"http://127.0.0.1:8048", "127.0.0.2:8048", false},
        /* Not origins, or not hosts: never the same. */
        {"null", "example.com", false},
        {"", "example.com", false},
        {"http://example.com", "", false},
        {"example.com", "example.com", false},
        {"http://example.com/", "example.com", false},
        {"http://example.com/path", "example.com", false},
        {"http://user@example.com", "example.com", false},
        {"http://example.com:", "example.com", false},
        {"http://example.com:0", "example.com", false},
        {"http://example.com:65536", "example.com:65536", false},
        {"http://example.com:8048", "example.com:8048/x", false},
        {"http://exa mple.com", "exa mple.com", false},
        {"http://[::1", "[::1]", false},
        {"chrome-extension://abc", "abc", false},
        {"ftp://example.com", "example.com", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (proto_http_same_origin(cases[i].origin, cases[i].host) != cases[i].same)
            fail_msg("'%s' from '%s': want %s", cases[i].origin, cases[i].host,
                     cases[i].same ? "same" : "foreign");
}

/* --allow-origin: entries by scheme, host and port; "*" any; "null" the opaque one. */
static void test_origin_listed(void **state) {
    const char *list =
        "https://game.example.com, http://localhost:3000/,http://[::1]:8080";
    assert_true(proto_http_origin_listed("https://game.example.com", list));
    assert_true(proto_http_origin_listed("https://GAME.example.com:443", list));
    assert_true(proto_http_origin_listed("http://localhost:3000", list));
    assert_true(proto_http_origin_listed("http://[0::1]:8080", list));
    assert_false(proto_http_origin_listed("http://game.example.com", list));
    assert_false(proto_http_origin_listed("https://game.example.com:8443", list));
    assert_false(proto_http_origin_listed("http://localhost:3001", list));
    assert_false(proto_http_origin_listed("https://evil.example", list));
    assert_false(proto_http_origin_listed("null", list));
    assert_false(proto_http_origin_listed("", list));
    assert_true(proto_http_origin_listed("https://evil.example", "*"));
    assert_true(proto_http_origin_listed("null", "*"));
    assert_true(proto_http_origin_listed("anything at all", "http://a, *"));
    assert_true(proto_http_origin_listed("null", "null"));
    assert_false(proto_http_origin_listed("http://null", "null"));
    assert_false(proto_http_origin_listed("https://a", ""));

    char bad[64];
    assert_int_equal(proto_http_origin_list_check(list, bad, sizeof bad), 0);
    assert_int_equal(proto_http_origin_list_check("*", bad, sizeof bad), 0);
    assert_int_equal(proto_http_origin_list_check("null, https://a:1", bad, sizeof bad),
                     0);
    assert_int_equal(
        proto_http_origin_list_check("https://a,example.com", bad, sizeof bad), -1);
    assert_string_equal(bad, "example.com");
    assert_int_equal(
        proto_http_origin_list_check("https://a,,https://b", bad, sizeof bad), -1);
    assert_string_equal(bad, "");
    assert_int_equal(proto_http_origin_list_check("", bad, sizeof bad), -1);
    assert_int_equal(proto_http_origin_list_check("https://a/path", bad, sizeof bad), -1);
    assert_string_equal(bad, "https://a/path");
}

/* Version 4's game links: /game/ID, /api/game/ID, /api/history?limit=N. */
static void test_game_routes(void **state) {
    (void)state;
    proto_http_route r = proto_http_route_of("/game/42");
    assert_int_equal(r.kind, PROTO_ROUTE_GAME_PAGE);
    assert_true(r.has_game);
    assert_int_equal(r.game, 42);
    r = proto_http_route_of("/api/game/7?x=1");
    assert_int_equal(r.kind, PROTO_ROUTE_API_GAME);
    assert_true(r.has_game);
    assert_int_equal(r.game, 7);
    /* Not digits, or too many: a route to no game (a 404), not another route. */
    r = proto_http_route_of("/api/game/abc");
    assert_int_equal(r.kind, PROTO_ROUTE_API_GAME);
    assert_false(r.has_game);
    r = proto_http_route_of("/game/1234567890123456789");
    assert_int_equal(r.kind, PROTO_ROUTE_GAME_PAGE);
    assert_false(r.has_game);
    assert_int_equal(proto_http_route_of("/game/").kind, PROTO_ROUTE_NONE);
    assert_int_equal(proto_http_route_of("/game/1/x").kind, PROTO_ROUTE_NONE);
    assert_int_equal(proto_http_route_of("/games/1").kind, PROTO_ROUTE_NONE);
    assert_int_equal(proto_http_route_of("/").kind, PROTO_ROUTE_NONE);
    r = proto_http_route_of("/api/history");
    assert_int_equal(r.kind, PROTO_ROUTE_API_HISTORY);
    assert_int_equal(r.limit, 20);
    assert_int_equal(proto_http_route_of("/api/history?limit=5").limit, 5);
    assert_int_equal(proto_http_route_of("/api/history?a=b&limit=100#x").limit, 100);
    assert_int_equal(proto_http_route_of("/api/history?limit=1&x").limit, 1);
    static const char *const bad[] = {"/api/history?limit=0",  "/api/history?limit=101",
                                      "/api/history?limit=",   "/api/history?limit=5x",
                                      "/api/history?limit=-1", "/api/history?limit=0005"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(proto_http_route_of(bad[i]).limit, 0);
    assert_int_equal(proto_http_route_of("/api/historyx").kind, PROTO_ROUTE_NONE);
    /* Issue 28: the arenas' routes; a code is upper-cased, anything but 4 to 8
     * letters or digits names no arena. */
    r = proto_http_route_of("/api/arenas");
    assert_int_equal(r.kind, PROTO_ROUTE_API_ARENAS);
    r = proto_http_route_of("/api/arena/ab3def?x=1");
    assert_int_equal(r.kind, PROTO_ROUTE_API_ARENA);
    assert_string_equal(r.arena, "AB3DEF");
    r = proto_http_route_of("/api/arena/ab-3");
    assert_int_equal(r.kind, PROTO_ROUTE_API_ARENA);
    assert_string_equal(r.arena, "");
    r = proto_http_route_of("/api/arena/ABCDEFGHI");
    assert_string_equal(r.arena, "");
    r = proto_http_route_of("/api/arena/AB3DEF/x");
    assert_int_equal(r.kind, PROTO_ROUTE_NONE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_whole_and_split),
        cmocka_unit_test(test_pipelined_requests_one_at_a_time),
        cmocka_unit_test(test_websocket_upgrade_leaves_frames),
        cmocka_unit_test(test_websocket_headers_trailing_whitespace),
        cmocka_unit_test(test_accept_key_rfc_example),
        cmocka_unit_test(test_head_over_8k_is_too_large),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_duplicate_headers_are_bad),
        cmocka_unit_test(test_list_headers_add_up),
        cmocka_unit_test(test_midway),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_response_head),
        cmocka_unit_test(test_host_and_origin_kept),
        cmocka_unit_test(test_same_origin),
        cmocka_unit_test(test_origin_listed),
        cmocka_unit_test(test_game_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
