/* test_ws.c - the WebSocket endpoint: messages, fragments, control frames, limits,
 * closes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ws.h"

/* What the handlers saw: messages as "[text]", too-long reports as "!". */
typedef struct record {
    char seen[8192];
    size_t seen_len;
    unsigned char out[8192]; /* bytes the endpoint sent */
    size_t out_len;
} record;

static void on_text(void *ctx, const char *msg, size_t len) {
    record *r = ctx;
    assert_true(r->seen_len + len + 2 <= sizeof r->seen);
    r->seen[r->seen_len++] = '[';
    memcpy(r->seen + r->seen_len, msg, len);
    r->seen_len += len;
    r->seen[r->seen_len++] = ']';
    r->seen[r->seen_len] = '\0';
}

static void on_too_long(void *ctx) {
    record *r = ctx;
    r->seen[r->seen_len++] = '!';
    r->seen[r->seen_len] = '\0';
}

static void on_output(void *ctx, const char *data, size_t len) {
    record *r = ctx;
    assert_true(r->out_len + len <= sizeof r->out);
    memcpy(r->out + r->out_len, data, len);
    r->out_len += len;
}

static const proto_ws_handlers handlers = {on_text, on_too_long, on_output};

/* A client frame: masked with a fixed key unless unmasked is set. */
static size_t frame(unsigned char *out, bool fin, int opcode, const char *payload,
                    size_t len, bool unmasked) {
    static const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    size_t n = 0;
    out[n++] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    unsigned char mask = unmasked ? 0 : 0x80;
    if (len < 126) {
        out[n++] = (unsigned char)(mask | len);
    } else {
        out[n++] = mask | 126;
        out[n++] = (unsigned char)(len >> 8);
        out[n++] = (unsigned char)len;
    }
    if (!unmasked) {
        memcpy(out + n, key, 4);
        n += 4;
    }
    for (size_t i = 0; i < len; i++)
        out[n + i] = (unsigned char)(payload[i] ^ (unmasked ? 0 : key[i % 4]));
    return n + len;
}

/* The first server frame in r->out: its opcode, and for a close its code. */
static int first_frame(const record *r, size_t at, int *code, size_t *next) {
    assert_true(r->out_len >= at + 2);
    int opcode = r->out[at] & 0x0f;
    size_t len = r->out[at + 1] & 0x7f;
    assert_true(len < 126);
    assert_int_equal(r->out[at + 1] & 0x80, 0); /* servers never mask */
    if (code) *code = len >= 2 ? r->out[at + 2] << 8 | r->out[at + 3] : 0;
    if (next) *next = at + 2 + len;
    return opcode;
}

static void test_text_message_any_split(void **state) {
    unsigned char buf[64];
    size_t n = frame(buf, true, 1, "{\"type\":\"ping\"}", 15, false);
    for (size_t step = 1; step <= n; step++) {
        record r = {0};
        proto_ws *ws = proto_ws_new(4096, &handlers, &r);
        assert_non_null(ws);
        for (size_t i = 0; i < n; i += step)
            assert_true(
                proto_ws_feed(ws, (const char *)buf + i, i + step > n ? n - i : step));
        assert_string_equal(r.seen, "[{\"type\":\"ping\"}]");
        assert_int_equal(r.out_len, 0);
        assert_true(proto_ws_open(ws));
        proto_ws_free(ws);
    }
}

static void test_fragments_with_ping_between(void **state) {
    unsigned char buf[128];
    size_t n = frame(buf, false, 1, "ab", 2, false);
    n += frame(buf + n, true, 9, "hi", 2, false);  /* ping mid-message */
    n += frame(buf + n, false, 0, "cd", 2, false); /* continuation */
    n += frame(buf + n, true, 0, "ef", 2, false);  /* last */
    record r = {0};
    proto_ws *ws = proto_ws_new(6, &handlers, &r); /* exactly the limit */
    assert_true(proto_ws_feed(ws, (const char *)buf, n));
    assert_string_equal(r.seen, "[abcdef]");
    int code;
    size_t next;
    assert_int_equal(first_frame(&r, 0, &code, &next), 0xA); /* pong */
    assert_int_equal(next, 4);
    assert_memory_equal(r.out + 2, "hi", 2);
    proto_ws_free(ws);
}

static void check_closed_with(const char *what, const unsigned char *buf, size_t n,
                              size_t max, int want_code, const char *want_seen) {
    record r = {0};
    proto_ws *ws = proto_ws_new(max, &handlers, &r);
    assert_false(proto_ws_feed(ws, (const char *)buf, n));
    assert_false(proto_ws_open(ws));
    int code;
    size_t next;
    assert_int_equal(first_frame(&r, 0, &code, &next), 8);
    if (code != want_code) fail_msg("%s: close code %d, want %d", what, code, want_code);
    assert_int_equal(proto_ws_close_code(ws), want_code);
    assert_int_equal(next, r.out_len); /* nothing after the close */
    assert_string_equal(r.seen, want_seen);
    /* Nothing more is read, nothing more sent. */
    assert_false(proto_ws_feed(ws, (const char *)buf, n));
    assert_int_equal(next, r.out_len);
    proto_ws_free(ws);
}

static void test_limits_and_violations(void **state) {
    unsigned char buf[512];
    char big[300];
    memset(big, 'x', sizeof big);
    size_t n = frame(buf, true, 1, big, 9, false);
    check_closed_with("oversized", buf, n, 8, PROTO_WS_TOO_BIG, "!");
    n = frame(buf, true, 1, big, 300, false);
    check_closed_with("oversized 16-bit length", buf, 10, 8, PROTO_WS_TOO_BIG, "!");
    n = frame(buf, false, 1, big, 5, false);
    n += frame(buf + n, true, 0, big, 5, false);
    check_closed_with("oversized in fragments", buf, n, 8, PROTO_WS_TOO_BIG, "!");
    n = frame(buf, true, 2, "ab", 2, false);
    check_closed_with("binary", buf, n, 8, PROTO_WS_UNSUPPORTED, "");
    unsigned char many[(PROTO_WS_FRAGMENTS_MAX + 1) * 8];
    n = frame(many, false, 1, "{", 1, false);
    for (int i = 1; i <= PROTO_WS_FRAGMENTS_MAX; i++)
        n += frame(many + n, false, 0, " ", 1, false);
    check_closed_with("too many fragments", many, n, 4096, PROTO_WS_POLICY, "");
    n = frame(buf, true, 1, "ab", 2, true);
    check_closed_with("unmasked", buf, n, 8, PROTO_WS_PROTOCOL, "");
    n = frame(buf, true, 0, "ab", 2, false);
    check_closed_with("continuation without start", buf, n, 8, PROTO_WS_PROTOCOL, "");
    n = frame(buf, true, 1, "ok", 2, false);
    n += frame(buf + n, true, 8, "\x03\xe8", 2, false);
    check_closed_with("client close", buf, n, 8, PROTO_WS_NORMAL, "[ok]");
    /* A close body of one byte is no status code: a violation (RFC 6455 5.5.1). */
    n = frame(buf, true, 8, "\x03", 1, false);
    check_closed_with("close of one byte", buf, n, 8, PROTO_WS_PROTOCOL, "");
}

/* A header on its own, masked (no key bytes yet) unless unmasked. */
static size_t header(unsigned char *out, bool fin, int opcode, uint64_t len,
                     int len_bytes) {
    size_t n = 0;
    out[n++] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (len_bytes == 0) {
        out[n++] = (unsigned char)(0x80 | len);
    } else {
        out[n++] = len_bytes == 2 ? 0x80 | 126 : 0x80 | 127;
        for (int i = len_bytes - 1; i >= 0; i--)
            out[n++] = (unsigned char)(len >> (8 * i));
    }
    return n;
}

/* Each byte of a bad header until the last one keeps the connection open; the
 * last one closes it with code, before any mask key or payload comes. */
static void check_header_closes(const char *what, const unsigned char *buf, size_t n,
                                int want_code, const char *want_seen) {
    record r = {0};
    proto_ws *ws = proto_ws_new(4096, &handlers, &r);
    for (size_t i = 0; i + 1 < n; i++)
        if (!proto_ws_feed(ws, (const char *)buf + i, 1))
            fail_msg("%s: closed after %zu of %zu header bytes", what, i + 1, n);
    assert_int_equal(r.out_len, 0);
    assert_false(proto_ws_feed(ws, (const char *)buf + n - 1, 1));
    int code;
    size_t next;
    assert_int_equal(first_frame(&r, 0, &code, &next), 8);
    if (code != want_code) fail_msg("%s: close code %d, want %d", what, code, want_code);
    assert_int_equal(next, r.out_len);
    assert_string_equal(r.seen, want_seen);
    proto_ws_free(ws);
    /* The same bytes in one piece, after a good message: it is handled, then
     * the close. */
    unsigned char whole[64];
    size_t m = frame(whole, true, 1, "ok", 2, false);
    memcpy(whole + m, buf, n);
    char seen[16];
    snprintf(seen, sizeof seen, "[ok]%s", want_seen);
    check_closed_with(what, whole, m + n, 4096, want_code, seen);
}

/* RFC 6455 5.2 and 5.5: every rule a header can break is judged as soon as
 * the header says enough, with the close code the RFC gives (issue 16). */
static void test_bad_headers_close_at_once(void **state) {
    unsigned char buf[16];
    size_t n = header(buf, true, 1, INT64_MAX, 8);
    check_header_closes("2^63-1 bytes declared", buf, n, PROTO_WS_TOO_BIG, "!");
    n = header(buf, true, 1, 4097, 2);
    check_header_closes("one byte over, 16-bit", buf, n, PROTO_WS_TOO_BIG, "!");
    n = header(buf, false, 1, 70000, 8);
    check_header_closes("over, in a first fragment", buf, n, PROTO_WS_TOO_BIG, "!");
    n = header(buf, true, 1, (uint64_t)1 << 63, 8);
    check_header_closes("64-bit length, top bit set", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 1, UINT64_MAX, 8);
    check_header_closes("64-bit length, all ones", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 1, 5, 2);
    check_header_closes("16-bit length under 126", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 1, 300, 8);
    check_header_closes("64-bit length under 65536", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, false, 9, 0, 0);
    check_header_closes("fragmented ping", buf, n, PROTO_WS_PROTOCOL, "");
    /* A control frame's first two bytes already say it is too long. */
    n = header(buf, true, 9, 126, 2);
    check_header_closes("126-byte ping", buf, 2, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 10, 126, 2);
    check_header_closes("126-byte pong", buf, 2, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 8, 65536, 8);
    check_header_closes("big close", buf, 2, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 3, 0, 0);
    check_header_closes("reserved opcode", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 1, 0, 0);
    buf[0] |= 0x40; /* RSV1 without an extension */
    check_header_closes("RSV1", buf, n, PROTO_WS_PROTOCOL, "");
    n = header(buf, true, 2, 0, 0);
    check_header_closes("binary", buf, n, PROTO_WS_UNSUPPORTED, "");
}

/* A text frame inside an unfinished fragmented message (RFC 6455 5.4). */
static void test_message_inside_message(void **state) {
    unsigned char buf[64];
    size_t n = frame(buf, false, 1, "ab", 2, false);
    n += frame(buf + n, true, 1, "cd", 2, false);
    check_closed_with("text inside text", buf, n, 64, PROTO_WS_PROTOCOL, "");
}

static void test_server_close(void **state) {
    record r = {0};
    proto_ws *ws = proto_ws_new(8, &handlers, &r);
    assert_true(proto_ws_open(ws));
    proto_ws_close(ws, PROTO_WS_GOING_AWAY);
    assert_false(proto_ws_open(ws));
    int code;
    assert_int_equal(first_frame(&r, 0, &code, NULL), 8);
    assert_int_equal(code, PROTO_WS_GOING_AWAY);
    size_t len = r.out_len;
    proto_ws_close(ws, PROTO_WS_GOING_AWAY); /* once only */
    assert_int_equal(r.out_len, len);
    proto_ws_free(ws);
}

static void test_midway(void **state) {
    unsigned char buf[128];
    size_t n = frame(buf, false, 1, "ab", 2, false);
    n += frame(buf + n, true, 0, "cd", 2, false);
    record r = {0};
    proto_ws *ws = proto_ws_new(64, &handlers, &r);
    assert_false(proto_ws_midway(ws));
    assert_true(proto_ws_feed(ws, (const char *)buf, 1)); /* half a header */
    assert_true(proto_ws_midway(ws));
    size_t first = 8; /* the first fragment: 2 + 4 + 2 bytes */
    assert_true(proto_ws_feed(ws, (const char *)buf + 1, first - 1));
    assert_true(proto_ws_midway(ws)); /* a message still open */
    assert_true(proto_ws_feed(ws, (const char *)buf + first, n - first - 1));
    assert_true(proto_ws_midway(ws)); /* its last frame not whole */
    assert_true(proto_ws_feed(ws, (const char *)buf + n - 1, 1));
    assert_false(proto_ws_midway(ws));
    assert_string_equal(r.seen, "[abcd]");
    proto_ws_free(ws);
}

static void test_text_header(void **state) {
    uint8_t h[PROTO_WS_HEADER_MAX];
    assert_int_equal(proto_ws_text_header(h, 0), 2);
    assert_int_equal(h[0], 0x81);
    assert_int_equal(proto_ws_text_header(h, 125), 2);
    assert_int_equal(h[1], 125);
    assert_int_equal(proto_ws_text_header(h, 126), 4);
    assert_int_equal(h[1], 126);
    assert_int_equal(h[2] << 8 | h[3], 126);
    assert_int_equal(proto_ws_text_header(h, 65535), 4);
    assert_int_equal(proto_ws_text_header(h, 65536), 10);
    assert_int_equal(h[1], 127);
    assert_int_equal(h[7], 1);
    assert_int_equal(h[8], 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_message_any_split),
        cmocka_unit_test(test_fragments_with_ping_between),
        cmocka_unit_test(test_limits_and_violations),
        cmocka_unit_test(test_bad_headers_close_at_once),
        cmocka_unit_test(test_message_inside_message),
        cmocka_unit_test(test_server_close),
        cmocka_unit_test(test_midway),
        cmocka_unit_test(test_text_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
