/* test_seed.c - end.seed as JSON both ways, and the commit, with the examples of
 * protocol/README.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "seed.h"

#define ZERO_SALT "00000000000000000000000000000000"
#define HEX64     "0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07"

static json_t *parse(const char *text) {
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    return v;
}

static void test_commit_examples(void **state) {
    char out[PROTO_COMMIT_TEXT];
    eng_seed client = eng_seed_client(42);
    assert_int_equal(proto_commit(ZERO_SALT, &client, out), 0);
    assert_string_equal(
        out, "65d9a4f8fe9abc50f929521ab3346fc213f21e2503507a0d77ad7e2ae195c56f");
    eng_seed server = eng_seed_server((const uint8_t[ENG_SEED_KEY_BYTES]){0});
    assert_int_equal(proto_commit(ZERO_SALT, &server, out), 0);
    assert_string_equal(
        out, "cc4b85092cccad861327a43c78c3bb2f9e4df7052cfe8ad6586c8406cc0a0a94");
    /* A salt too long for any real commit is refused, not truncated. */
    char long_salt[200];
    memset(long_salt, 'a', sizeof long_salt - 1);
    long_salt[sizeof long_salt - 1] = '\0';
    assert_int_equal(proto_commit(long_salt, &server, out), -1);
    assert_string_equal(out, "");
}

static void test_seed_json_both_ways(void **state) {
    eng_seed s, back;
    assert_int_equal(eng_seed_parse(&s, HEX64, 64), 0);
    json_t *v = proto_seed_json(&s);
    assert_true(json_is_string(v));
    assert_string_equal(json_string_value(v), HEX64);
    assert_int_equal(proto_seed_from_json(v, &back), 0);
    assert_true(eng_seed_equal(&s, &back));
    json_decref(v);

    s = eng_seed_client(4294967295u);
    v = proto_seed_json(&s);
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), 4294967295LL);
    assert_int_equal(proto_seed_from_json(v, &back), 0);
    assert_int_equal(back.kind, ENG_SEED_CLIENT);
    assert_int_equal(back.client, 4294967295u);
    json_decref(v);
}

static void test_seed_json_refuses(void **state) {
    static const char *bad[] = {
        "-1",
        "4294967296",
        "1.5",
        "\"42\"", /* a client seed is a number, never a string */
        "\"" HEX64 "0\"",
        "\"0F171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07\"",
        "\"\"",
        "null",
        "true",
        "[]",
        "{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = parse(bad[i]);
        eng_seed keep = eng_seed_client(7);
        if (proto_seed_from_json(v, &keep) != -1) fail_msg("accepted %s", bad[i]);
        assert_int_equal(keep.kind, ENG_SEED_CLIENT);
        assert_int_equal(keep.client, 7);
        json_decref(v);
    }
    eng_seed keep = eng_seed_client(7);
    assert_int_equal(proto_seed_from_json(NULL, &keep), -1);
    /* A NUL inside a 64-character string is not 64 hex digits. */
    char with_nul[64];
    memcpy(with_nul, HEX64, 64);
    with_nul[10] = '\0';
    json_t *v = json_stringn(with_nul, 64);
    assert_non_null(v);
    assert_int_equal(proto_seed_from_json(v, &keep), -1);
    json_decref(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_examples),
        cmocka_unit_test(test_seed_json_both_ways),
        cmocka_unit_test(test_seed_json_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
