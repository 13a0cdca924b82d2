/* test_framer.c - the line framer gives the same lines however the bytes are split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "framer.h"

/* What the callbacks saw, as one string: each line as "[bytes]" and each
 * too-long report as "!", so whole runs compare with one memcmp. */
typedef struct record {
    char out[1 << 16];
    size_t len;
    int lines;
    int too_long;
    const char *stop_at; /* a line that makes on_line ask to stop */
    bool stop_too_long;  /* on_too_long asks to stop */
} record;

static void put(record *r, const char *s, size_t n) {
    assert_true(r->len + n <= sizeof r->out);
    memcpy(r->out + r->len, s, n);
    r->len += n;
}

static int on_line(void *ctx, const char *line, size_t len) {
    record *r = ctx; /* an empty line (text mode only) shows as [] */
    assert_int_equal(line[len], '\0');
    put(r, "[", 1);
    put(r, line, len);
    put(r, "]", 1);
    r->lines++;
    return r->stop_at && len == strlen(r->stop_at) && memcmp(line, r->stop_at, len) == 0;
}

static int on_too_long(void *ctx) {
    record *r = ctx;
    put(r, "!", 1);
    r->too_long++;
    return r->stop_too_long;
}

/* Feeds `in` to a fresh framer cut at the given chunk sizes (cycled; a
 * size 0 means "the rest") and records the result. */
static void run(record *r, const char *in, size_t n, size_t max_line, bool text,
                const size_t *cuts, size_t ncuts) {
    proto_framer f;
    memset(r, 0, sizeof *r);
    assert_int_equal(proto_framer_init(&f, max_line, text), 0);
    size_t pos = 0, k = 0;
    while (pos < n) {
        size_t chunk = ncuts ? cuts[k++ % ncuts] : 0;
        if (chunk == 0 || chunk > n - pos) chunk = n - pos;
        assert_int_equal(proto_framer_feed(&f, in + pos, chunk, on_line, on_too_long, r),
                         chunk);
        assert_true(f.len <= f.max_line);
        pos += chunk;
    }
    proto_framer_free(&f);
}

/* The result of feeding in one piece must match `want`, and so must every
 * other way of cutting the same bytes. */
static void check_all_splits(const char *in, size_t n, size_t max_line, bool text,
                             const char *want, size_t want_len) {
    static record whole, cut;
    run(&whole, in, n, max_line, text, NULL, 0);
    if (whole.len != want_len || memcmp(whole.out, want, want_len) != 0)
        fail_msg("got '%.*s', want '%.*s'", (int)whole.len, whole.out, (int)want_len,
                 want);

    size_t one = 1;
    run(&cut, in, n, max_line, text, &one, 1);
    assert_int_equal(cut.len, whole.len);
    assert_memory_equal(cut.out, whole.out, whole.len);

    for (size_t split = 1; split < n; split++) {
        size_t cuts[2] = {split, 0};
        run(&cut, in, n, max_line, text, cuts, 2);
        assert_int_equal(cut.len, whole.len);
        assert_memory_equal(cut.out, whole.out, whole.len);
    }

    uint32_t seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t cuts[16];
        for (size_t i = 0; i < 16; i++) {
            seed = seed * 1103515245u + 12345u;
            cuts[i] = 1 + (seed >> 16) % 7;
        }
        run(&cut, in, n, max_line, text, cuts, 16);
        assert_int_equal(cut.len, whole.len);
        assert_memory_equal(cut.out, whole.out, whole.len);
    }
}

#define CHECK(in, max, text, want)                                                       \
    check_all_splits(in, sizeof(in) - 1, max, text, want, sizeof(want) - 1)

static void test_json_lines(void **state) {
    CHECK("{\"a\":1}\n{\"b\":2}\r\n\n\r\nx\r\n", 64, false, "[{\"a\":1}][{\"b\":2}][x]");
}

static void test_json_cr_is_data_unless_before_lf(void **state) {
    /* A lone '\r' does not end a JSON line; only the one before '\n' goes. */
    CHECK("a\rb\n\r\r\n", 64, false, "[a\rb][\r]");
    CHECK("abc", 64, false, ""); /* no terminator yet: nothing */
}

static void test_text_line_ends(void **state) {
    /* Enter as telnet char mode, telnet line mode, a lone CR, a lone LF. */
    CHECK("w\r\0a\r\nb\rc\nd\r\r\ne\n\r", 64, true, "[w][a][b][c][d][][e][]");
}

static void test_text_empty_lines(void **state) {
    /* A human's Enter on its own (netcat's "\n", nc -C's and telnet's
     * "\r\n", telnet's "\r\0") is a line in text mode: a replay's pause. */
    CHECK("\n\r\n\r\0x\n", 64, true, "[][][][x]");
    CHECK("\n\r\n\r\0x\n", 64, false, "[\r\0x]"); /* JSON: skipped */
}

static void test_nul_bytes_are_data(void **state) {
    CHECK("a\0b\n", 64, false, "[a\0b]");
    /* After "\r\0" only the first NUL is the line end's. */
    CHECK("\0\0x\r\0\0y\n", 64, true, "[\0\0x][\0y]");
}

static void test_too_long_reported_once(void **state) {
    CHECK("123456789abcdef\nok\n", 8, false, "![ok]");
    CHECK("123456789\r\nok\r\n", 8, true, "![ok]");
    CHECK("123456789\r\0ok\r\0", 8, true, "![ok]");
    /* Two long lines, two reports; a short one in between is fine. */
    CHECK("123456789\nab\n123456789\n", 8, false, "![ab]!");
}

static void test_exactly_max_line_fits(void **state) {
    CHECK("12345678\nx\n", 8, false, "[12345678][x]");
    CHECK("12345678\r\nx\n", 8, false, "[12345678][x]");
    CHECK("12345678\r\nx\n", 8, true, "[12345678][x]");
    CHECK("12345678\r\0x\r", 8, true, "[12345678][x]");
    /* JSON: a '\r' that is not before '\n' is the ninth byte. */
    CHECK("12345678\rx\nok\n", 8, false, "![ok]");
    CHECK("12345678\r\r\nok\n", 8, false, "![ok]");
}

static void test_cr_and_lf_in_separate_feeds(void **state) {
    /* nc -C: the text, then the CRLF, possibly cut between '\r' and '\n'. */
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    assert_int_equal(proto_framer_init(&f, 64, true), 0);
    assert_int_equal(proto_framer_feed(&f, "w\r", 2, on_line, on_too_long, &r), 2);
    assert_int_equal(r.lines, 1);
    assert_int_equal(proto_framer_feed(&f, "\n", 1, on_line, on_too_long, &r), 1);
    assert_int_equal(proto_framer_feed(&f, "s\r", 2, on_line, on_too_long, &r), 2);
    assert_int_equal(proto_framer_feed(&f, "\n", 1, on_line, on_too_long, &r), 1);
    assert_int_equal(r.lines, 2);
    assert_int_equal(r.len, 6);
    assert_memory_equal(r.out, "[w][s]", 6);
    proto_framer_free(&f);
}

static void test_ten_megabytes_without_newline(void **state) {
    record *r = calloc(1, sizeof *r);
    assert_non_null(r);
    proto_framer f;
    assert_int_equal(proto_framer_init(&f, 4096, false), 0);
    static char chunk[65536];
    memset(chunk, 'a', sizeof chunk);
    for (size_t sent = 0; sent < 10u * 1024 * 1024; sent += sizeof chunk) {
        assert_int_equal(
            proto_framer_feed(&f, chunk, sizeof chunk, on_line, on_too_long, r),
            sizeof chunk);
        /* An over-long line is not kept: no buffer, never more than it can hold. */
        assert_true(f.cap <= f.max_line + 1);
        assert_true(f.len <= f.max_line);
        assert_null(f.buf);
    }
    assert_int_equal(r->too_long, 1);
    assert_int_equal(r->lines, 0);
    assert_int_equal(proto_framer_feed(&f, "\nok\n", 4, on_line, on_too_long, r), 4);
    assert_int_equal(r->too_long, 1);
    assert_int_equal(r->lines, 1);
    assert_memory_equal(r->out, "![ok]", 5);
    proto_framer_free(&f);
    free(r);
}

static void test_stop_leaves_rest_unconsumed(void **state) {
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    r.stop_at = "{\"type\":\"hello\"}";
    assert_int_equal(proto_framer_init(&f, 64, true), 0);
    const char in[] = "look\r\n{\"type\":\"hello\"}\n{\"type\":\"rooms\"}\r\n";
    size_t used = proto_framer_feed(&f, in, sizeof in - 1, on_line, on_too_long, &r);
    assert_int_equal(used, strlen("look\r\n{\"type\":\"hello\"}\n"));
    assert_int_equal(r.lines, 2);
    /* The caller switches to JSON mode and re-feeds the rest. */
    proto_framer_set_text(&f, false);
    r.stop_at = NULL;
    assert_int_equal(
        proto_framer_feed(&f, in + used, sizeof in - 1 - used, on_line, on_too_long, &r),
        sizeof in - 1 - used);
    assert_int_equal(r.lines, 3);
    const char want[] = "[look][{\"type\":\"hello\"}][{\"type\":\"rooms\"}]";
    assert_int_equal(r.len, sizeof want - 1);
    assert_memory_equal(r.out, want, r.len);
    proto_framer_free(&f);
}

static void test_stop_after_lone_cr_keeps_line_end(void **state) {
    /* Stopped right after a '\r' line end: the '\n' re-fed later is still
     * part of that line end, not a line of its own. */
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    r.stop_at = "quit";
    assert_int_equal(proto_framer_init(&f, 64, true), 0);
    assert_int_equal(proto_framer_feed(&f, "quit\r\nx\r\n", 9, on_line, on_too_long, &r),
                     5);
    r.stop_at = NULL;
    assert_int_equal(proto_framer_feed(&f, "\nx\r\n", 4, on_line, on_too_long, &r), 4);
    assert_int_equal(r.lines, 2);
    assert_memory_equal(r.out, "[quit][x]", 9);
    proto_framer_free(&f);
}

static void test_stop_on_too_long(void **state) {
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    r.stop_too_long = true;
    assert_int_equal(proto_framer_init(&f, 4, false), 0);
    /* The fifth byte passes the limit: consumed, the rest is not. */
    assert_int_equal(proto_framer_feed(&f, "abcdefg\nok\n", 11, on_line, on_too_long, &r),
                     5);
    assert_int_equal(r.too_long, 1);
    assert_true(f.discarding);
    r.stop_too_long = false;
    assert_int_equal(proto_framer_feed(&f, "fg\nok\n", 6, on_line, on_too_long, &r), 6);
    assert_int_equal(r.too_long, 1);
    assert_memory_equal(r.out, "![ok]", 5);
    proto_framer_free(&f);
}

static void test_set_text_keeps_partial_line(void **state) {
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    assert_int_equal(proto_framer_init(&f, 64, false), 0);
    assert_int_equal(proto_framer_feed(&f, "ab\rc", 4, on_line, on_too_long, &r), 4);
    proto_framer_set_text(&f, true);
    assert_int_equal(proto_framer_feed(&f, "d\re\n", 4, on_line, on_too_long, &r), 4);
    assert_int_equal(r.len, 10);
    assert_memory_equal(r.out, "[ab\rcd][e]", 10);
    proto_framer_free(&f);
}

static void test_too_long_callback_optional(void **state) {
    record r;
    proto_framer f;
    memset(&r, 0, sizeof r);
    assert_int_equal(proto_framer_init(&f, 2, true), 0);
    assert_int_equal(proto_framer_feed(&f, "abc\ryz\r", 7, on_line, NULL, &r), 7);
    assert_int_equal(r.len, 4);
    assert_memory_equal(r.out, "[yz]", 4);
    proto_framer_free(&f);
}

static void test_init_rejects_zero_and_free_twice(void **state) {
    proto_framer f;
    assert_int_equal(proto_framer_init(&f, 0, false), -1);
    proto_framer_free(&f);
    assert_int_equal(proto_framer_init(&f, 1, false), 0);
    proto_framer_free(&f);
    proto_framer_free(&f);
    assert_null(f.buf);
}

/* An idle connection holds no line buffer: one exists only while a line is
 * unfinished. */
static void test_buffer_only_for_a_partial_line(void **state) {
    record r;
    memset(&r, 0, sizeof r);
    proto_framer f;
    assert_int_equal(proto_framer_init(&f, 4096, false), 0);
    assert_null(f.buf);
    assert_int_equal(proto_framer_feed(&f, "{\"a\":1}\n", 8, on_line, on_too_long, &r),
                     8);
    assert_null(f.buf);
    assert_int_equal(proto_framer_feed(&f, "{\"b\"", 4, on_line, on_too_long, &r), 4);
    assert_non_null(f.buf);
    assert_true(f.cap < 4096);
    assert_int_equal(proto_framer_feed(&f, ":2}\n", 4, on_line, on_too_long, &r), 4);
    assert_null(f.buf);
    assert_int_equal(r.lines, 2);
    proto_framer_free(&f);
}

static void test_detect_mode(void **state) {
    const unsigned char json[] = "{\"type\":\"hello\"}";
    const unsigned char telnet[] = {0xff, 0xfd, 0x01};
    const unsigned char text[] = "help\r\n";
    assert_int_equal(proto_detect_mode(json, 1), PROTO_MODE_JSON);
    assert_int_equal(proto_detect_mode(telnet, 3), PROTO_MODE_TELNET);
    assert_int_equal(proto_detect_mode(text, 6), PROTO_MODE_TEXT);
    assert_int_equal(proto_detect_mode(json, 0), PROTO_MODE_UNDECIDED);
    assert_int_equal(proto_detect_mode((const unsigned char *)" {", 2), PROTO_MODE_TEXT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_json_cr_is_data_unless_before_lf),
        cmocka_unit_test(test_text_line_ends),
        cmocka_unit_test(test_text_empty_lines),
        cmocka_unit_test(test_nul_bytes_are_data),
        cmocka_unit_test(test_too_long_reported_once),
        cmocka_unit_test(test_exactly_max_line_fits),
        cmocka_unit_test(test_cr_and_lf_in_separate_feeds),
        cmocka_unit_test(test_ten_megabytes_without_newline),
        cmocka_unit_test(test_stop_leaves_rest_unconsumed),
        cmocka_unit_test(test_stop_after_lone_cr_keeps_line_end),
        cmocka_unit_test(test_stop_on_too_long),
        cmocka_unit_test(test_set_text_keeps_partial_line),
        cmocka_unit_test(test_too_long_callback_optional),
        cmocka_unit_test(test_init_rejects_zero_and_free_twice),
        cmocka_unit_test(test_buffer_only_for_a_partial_line),
        cmocka_unit_test(test_detect_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
