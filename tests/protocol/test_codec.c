/* test_codec.c - the small shared codecs of protocol/: hex digits and end's reason names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "end_reason.h"
#include "hex.h"

static void test_hex_encodes_lower_case(void **state) {
    (void)state;
    const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[2 * sizeof bytes + 1];
    memset(out, 'x', sizeof out);
    proto_hex_encode(bytes, sizeof bytes, out);
    assert_string_equal(out, "00017f80abff");
    proto_hex_encode(NULL, 0, out);
    assert_string_equal(out, "");
}

static void test_hex_decodes_either_case(void **state) {
    (void)state;
    uint8_t out[3];
    assert_true(proto_hex_decode("0aFf7B", out, sizeof out));
    assert_memory_equal(out, ((const uint8_t[]){0x0a, 0xff, 0x7b}), 3);
    assert_true(proto_hex_decode("", out, 0));
    /* Round trip of every byte value. */
    uint8_t all[256], back[256];
    char text[513];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    proto_hex_encode(all, sizeof all, text);
    assert_true(proto_hex_decode(text, back, sizeof back));
    assert_memory_equal(all, back, sizeof all);
}

static void test_hex_refuses_and_leaves_out(void **state) {
    (void)state;
    static const char *const bad[] = {
        "0aff7",   /* short */
        "0aff7b0", /* long */
        "0aff7g",  /* not a digit */
        "0a ff7b", /* a space */
        "+aff7b",  /* what sscanf's %x would take */
        "0xff7b",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t out[3] = {1, 2, 3};
        assert_false(proto_hex_decode(bad[i], out, sizeof out));
        assert_memory_equal(out, ((const uint8_t[]){1, 2, 3}), 3);
    }
    uint8_t out[1] = {9};
    assert_false(proto_hex_decode(NULL, out, 1));
    assert_int_equal(out[0], 9);
    assert_int_equal(proto_hex_digit('9'), 9);
    assert_int_equal(proto_hex_digit('F'), 15);
    assert_int_equal(proto_hex_digit('g'), -1);
    assert_int_equal(proto_hex_digit('\0'), -1);
}

static void test_end_reason_names_both_ways(void **state) {
    (void)state;
    /* The wire names of PROTOCOL's `end`, in the enum's (journal's, /metrics') order. */
    static const char *const names[PROTO_END_REASONS] = {"target", "all_over", "time",
                                                         "forfeit"};
    for (int i = 0; i < PROTO_END_REASONS; i++) {
        assert_string_equal(proto_end_reason_name((proto_end_reason)i), names[i]);
        proto_end_reason r = PROTO_END_FORFEIT;
        assert_true(proto_end_reason_parse(names[i], &r));
        assert_int_equal(r, i);
    }
    assert_string_equal(proto_end_reason_name((proto_end_reason)PROTO_END_REASONS),
                        "unknown");
    proto_end_reason r = PROTO_END_TIME;
    assert_false(proto_end_reason_parse("unknown", &r));
    assert_false(proto_end_reason_parse("Target", &r));
    assert_false(proto_end_reason_parse("time_up", &r));
    assert_false(proto_end_reason_parse(NULL, &r));
    assert_int_equal(r, PROTO_END_TIME);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_encodes_lower_case),
        cmocka_unit_test(test_hex_decodes_either_case),
        cmocka_unit_test(test_hex_refuses_and_leaves_out),
        cmocka_unit_test(test_end_reason_names_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
