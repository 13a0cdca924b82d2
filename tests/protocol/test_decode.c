/* test_decode.c - proto_decode: every request type, every decoder error, and the first
 * problem wins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "message.h"

/* ------------------------------------------------------------- helpers --- */

static void decode_ok(const char *line, proto_request *req) {
    proto_error err;
    int rc = proto_decode(line, strlen(line), req, &err);
    if (rc != 0) fail_msg("%s -> %s: %s", line, proto_err_code(err.code), err.message);
}

/* Decodes len bytes that must fail with `code`; returns the error for more checks. */
static proto_error decode_err_n(const char *line, size_t len, proto_err code) {
    proto_request req;
    proto_error err;
    int rc = proto_decode(line, len, &req, &err);
    if (rc != -1)
        fail_msg("%.*s decoded, expected %s", (int)len, line, proto_err_code(code));
    if (err.code != code)
        fail_msg("%.*s -> %s (%s), expected %s", (int)(len > 200 ? 200 : len), line,
                 proto_err_code(err.code), err.message, proto_err_code(code));
    assert_null(req.ping_t);
    assert_non_null(memchr(err.message, '\0', sizeof err.message));
    assert_true(err.message[0] != '\0');
    return err;
}

static proto_error decode_err(const char *line, proto_err code) {
    return decode_err_n(line, strlen(line), code);
}

/* ------------------------------------------------------ one per type --- */

static void test_hello(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"hello\",\"name\":\"Ann_b-9\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_HELLO);
    assert_string_equal(req.name, "Ann_b-9");
    decode_ok("{\"name\":\"abcdefghijklmnop\",\"type\":\"hello\"}", &req);
    assert_string_equal(req.name, "abcdefghijklmnop");
}

static void test_solo_all_fields(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"solo\",\"size\":5,\"target\":1048576,\"seed\":4294967295}",
              &req);
    assert_int_equal(req.type, PROTO_REQ_SOLO);
    assert_int_equal(req.settings.size, 5);
    assert_int_equal(req.settings.target, 1048576);
    assert_true(req.has_seed);
    assert_int_equal(req.seed, 4294967295u);
    decode_ok("{\"type\":\"solo\",\"seed\":0}", &req);
    assert_true(req.has_seed);
    assert_int_equal(req.seed, 0);
}

static void test_solo_defaults(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"solo\"}", &req);
    assert_int_equal(req.settings.size, 4);
    assert_int_equal(req.settings.target, 2048);
    assert_int_equal(req.settings.time_limit, 0);
    assert_int_equal(req.settings.players, 1);
    assert_false(req.has_seed);
}

static void test_create_all_fields(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"create\",\"players\":8,\"size\":3,\"target\":8,\"time_limit\":"
              "86400}",
              &req);
    assert_int_equal(req.type, PROTO_REQ_CREATE);
    assert_int_equal(req.settings.players, 8);
    assert_int_equal(req.settings.size, 3);
    assert_int_equal(req.settings.target, 8);
    assert_int_equal(req.settings.time_limit, 86400);
}

static void test_create_defaults(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"create\"}", &req);
    assert_int_equal(req.settings.players, 2);
    assert_int_equal(req.settings.size, 4);
    assert_int_equal(req.settings.target, 2048);
    assert_int_equal(req.settings.time_limit, 0);
}

/* A seed belongs to solo only: on create or quick it is an unknown field. */
static void test_create_ignores_seed(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"create\",\"seed\":\"not a number\"}", &req);
    assert_false(req.has_seed);
    decode_ok("{\"type\":\"quick\",\"seed\":7}", &req);
    assert_false(req.has_seed);
}

static void test_join(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"join\",\"room\":\"ab12\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_JOIN);
    assert_string_equal(req.room, "AB12");
    decode_ok("{\"type\":\"join\",\"room\":\"ABCDEFGH\"}", &req);
    assert_string_equal(req.room, "ABCDEFGH");
}

static void test_quick_all_fields(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"quick\",\"players\":3,\"size\":6,\"target\":512}", &req);
    assert_int_equal(req.type, PROTO_REQ_QUICK);
    assert_int_equal(req.settings.players, 3);
    assert_int_equal(req.settings.size, 6);
    assert_int_equal(req.settings.target, 512);
    assert_int_equal(req.settings.time_limit, 0);
}

/* quick has no time_limit in protocol/README.md: even a bad one is ignored. */
static void test_quick_defaults(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"quick\",\"time_limit\":-5}", &req);
    assert_int_equal(req.settings.players, 2);
    assert_int_equal(req.settings.size, 4);
    assert_int_equal(req.settings.target, 2048);
    assert_int_equal(req.settings.time_limit, 0);
}

static void test_watch(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"watch\",\"room\":\"Zz9Q\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_WATCH);
    assert_string_equal(req.room, "ZZ9Q");
}

static void test_move_all_fields(void **state) {
    static const struct {
        const char *line;
        eng_dir dir;
    } cases[] = {
        {"{\"type\":\"move\",\"dir\":\"up\",\"seq\":0}", ENG_UP},
        {"{\"type\":\"move\",\"dir\":\"down\",\"seq\":0}", ENG_DOWN},
        {"{\"type\":\"move\",\"dir\":\"left\",\"seq\":0}", ENG_LEFT},
        {"{\"type\":\"move\",\"dir\":\"right\",\"seq\":0}", ENG_RIGHT},
    };
    proto_request req;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        decode_ok(cases[i].line, &req);
        assert_int_equal(req.type, PROTO_REQ_MOVE);
        assert_int_equal(req.dir, cases[i].dir);
        assert_true(req.has_seq);
        assert_int_equal(req.seq, 0);
    }
    decode_ok("{\"type\":\"move\",\"dir\":\"left\",\"seq\":9007199254740991}", &req);
    assert_true(req.has_seq);
    assert_true(req.seq == PROTO_SEQ_MAX);
}

static void test_move_without_seq(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"move\",\"dir\":\"down\"}", &req);
    assert_int_equal(req.dir, ENG_DOWN);
    assert_false(req.has_seq);
}

static void test_leave_rooms_rematch(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"leave\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_LEAVE);
    decode_ok("{\"type\":\"rooms\",\"room\":1}", &req);
    assert_int_equal(req.type, PROTO_REQ_ROOMS);
    decode_ok("{\"type\":\"rematch\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_REMATCH);
}

static void test_resume(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"resume\",\"token\":\"0123456789abcdef0123456789abcdef\"}",
              &req);
    assert_int_equal(req.type, PROTO_REQ_RESUME);
    assert_string_equal(req.token, "0123456789abcdef0123456789abcdef");
    char line[200];
    snprintf(line, sizeof line, "{\"type\":\"resume\",\"token\":\"%s\"}",
             "~ !x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!x!}");
    decode_ok(line, &req);
    assert_int_equal(strlen(req.token), 64);
}

static void test_ping_with_t(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"ping\",\"t\":{\"a\":[1,2.5,\"x\"]}}", &req);
    assert_int_equal(req.type, PROTO_REQ_PING);
    assert_non_null(req.ping_t);
    json_t *want = json_loads("{\"a\":[1,2.5,\"x\"]}", 0, NULL);
    assert_true(json_equal(req.ping_t, want));
    json_decref(want);
    proto_request_clear(&req);
    assert_null(req.ping_t);
    proto_request_clear(&req); /* twice is safe */
}

static void test_ping_without_t(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"ping\"}", &req);
    assert_null(req.ping_t);
    proto_request_clear(&req);
    decode_ok("{\"type\":\"ping\",\"t\":null}", &req);
    assert_non_null(req.ping_t);
    assert_true(json_is_null(req.ping_t));
    proto_request_clear(&req);
}

static void test_unknown_fields_ignored(void **state) {
    proto_request req;
    decode_ok(
        "{\"type\":\"move\",\"dir\":\"up\",\"x\":[{\"y\":null}],\"name\":5,\"room\":[]}",
        &req);
    assert_int_equal(req.dir, ENG_UP);
    decode_ok("{\"type\":\"hello\",\"name\":\"bob\",\"size\":99,\"dir\":\"north\"}",
              &req);
    assert_string_equal(req.name, "bob");
}

/* Whitespace around and inside the object is JSON, so it is fine. */
static void test_whitespace(void **state) {
    proto_request req;
    decode_ok("  { \"type\" : \"solo\" , \"size\" : 3 }\t ", &req);
    assert_int_equal(req.settings.size, 3);
}

/* ----------------------------------------------- one per error code --- */

static void test_err_bad_json(void **state) {
    proto_error err = decode_err("{\"type\":\"hello\"", PROTO_ERR_BAD_JSON);
    assert_string_equal(
        err.message,
        "line is not valid JSON: '}' expected near end of file at column 15");
    err = decode_err("[1]", PROTO_ERR_BAD_JSON);
    assert_string_equal(err.message, "line is not a JSON object");
}

static void test_err_bad_message(void **state) {
    proto_error err = decode_err("{\"type\":\"solo\",\"size\":9}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "size must be an integer from 3 to 8");
    err = decode_err("{\"type\":\"solo\",\"target\":100}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "target must be a power of two from 8 to 1048576");
    err = decode_err("{\"type\":\"join\"}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "missing field \"room\"");
    err = decode_err("{\"name\":\"x\"}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "missing field \"type\"");
    err = decode_err("{\"type\":1}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "type must be a string");
    err = decode_err("{\"type\":\"move\",\"dir\":\"up\",\"seq\":-1}",
                     PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "seq must be an integer from 0 to 9007199254740991");
    err = decode_err("{\"type\":\"create\",\"players\":1}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "players must be an integer from 2 to 8");
    err = decode_err("{\"type\":\"create\",\"time_limit\":86401}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "time_limit must be an integer from 0 to 86400");
    err = decode_err("{\"type\":\"solo\",\"seed\":4294967296}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "seed must be an integer from 0 to 4294967295");
}

static void test_err_unknown_type(void **state) {
    proto_error err = decode_err("{\"type\":\"foo\"}", PROTO_ERR_UNKNOWN_TYPE);
    assert_string_equal(err.message, "unknown type \"foo\"");
    /* Type names are exact: case and a trailing \u0000 matter. */
    decode_err("{\"type\":\"Hello\",\"name\":\"a\"}", PROTO_ERR_UNKNOWN_TYPE);
    err = decode_err("{\"type\":\"ping\\u0000\"}", PROTO_ERR_UNKNOWN_TYPE);
    assert_string_equal(err.message, "unknown type \"ping?\"");
    decode_err("{\"type\":\"\"}", PROTO_ERR_UNKNOWN_TYPE);
}

/* A long unknown type is quoted cut short, on a character boundary. */
static void test_err_unknown_type_long(void **state) {
    char line[5000];
    int n = snprintf(line, sizeof line, "{\"type\":\"");
    for (int i = 0; i < 1000; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "\xc3\xa9");
    snprintf(line + n, sizeof line - (size_t)n, "\"}");
    proto_error err = decode_err(line, PROTO_ERR_UNKNOWN_TYPE);
    assert_string_equal(err.message,
                        "unknown type \"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...\"");
}

static void test_err_bad_dir(void **state) {
    proto_error err = decode_err("{\"type\":\"move\",\"dir\":\"UP\"}", PROTO_ERR_BAD_DIR);
    assert_string_equal(err.message, "dir must be one of up, down, left, right");
    decode_err("{\"type\":\"move\",\"dir\":\"north\"}", PROTO_ERR_BAD_DIR);
    decode_err("{\"type\":\"move\",\"dir\":\"\"}", PROTO_ERR_BAD_DIR);
    decode_err("{\"type\":\"move\",\"dir\":\"up \"}", PROTO_ERR_BAD_DIR);
    decode_err("{\"type\":\"move\",\"dir\":\"up\\u0000\"}", PROTO_ERR_BAD_DIR);
}

/* A dir that is missing or not a string is malformed, not a wrong direction. */
static void test_err_dir_not_string(void **state) {
    proto_error err = decode_err("{\"type\":\"move\"}", PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "missing field \"dir\"");
    decode_err("{\"type\":\"move\",\"dir\":0}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"move\",\"dir\":[\"up\"]}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"move\",\"dir\":null}", PROTO_ERR_BAD_MESSAGE);
}

/* ------------------------------------------------- table of bad lines --- */

typedef struct bad_line {
    const char *line;
    size_t len; /* 0: strlen(line); set for lines holding a NUL byte */
    proto_err code;
} bad_line;

#define J PROTO_ERR_BAD_JSON
#define M PROTO_ERR_BAD_MESSAGE
#define U PROTO_ERR_UNKNOWN_TYPE
#define D PROTO_ERR_BAD_DIR

static const bad_line bad_lines[] = {
    /* not JSON, or not an object */
    {"", 0, J},
    {"   ", 0, J},
    {"{", 0, J},
    {"}", 0, J},
    {"hello", 0, J},
    {"{type:\"hello\"}", 0, J},
    {"{'type':'ping'}", 0, J},
    {"{\"type\":\"ping\",}", 0, J},
    {"{\"type\":\"ping\"} {}", 0, J},
    {"{\"type\":\"ping\"}x", 0, J},
    {"[]", 0, J},
    {"[{\"type\":\"ping\"}]", 0, J},
    {"\"ping\"", 0, J},
    {"42", 0, J},
    {"null", 0, J},
    {"true", 0, J},
    {"\xef\xbb\xbf{\"type\":\"ping\"}", 0, J}, /* a BOM is not JSON */
    /* numbers jansson cannot hold */
    {"{\"type\":\"solo\",\"seed\":18446744073709551616}", 0, J},
    {"{\"type\":\"solo\",\"seed\":9223372036854775808}", 0, J},
    {"{\"type\":\"solo\",\"size\":1e400}", 0, J},
    {"{\"type\":\"ping\",\"t\":-1e999}", 0, J},
    /* invalid and overlong UTF-8, lone surrogates */
    {"{\"type\":\"hello\",\"name\":\"\xff\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"\xc3\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"\xc0\xaf\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"\xe0\x80\xaf\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"\xed\xa0\x80\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"\\ud800\"}", 0, J},
    {"{\"type\":\"ping\",\"\xfe\":1}", 0, J},
    /* NUL: a raw byte is a parse error; \u0000 is JSON, so the field decides */
    {"{\"type\":\"ping\"}\0", 16, J},
    {"{\"type\":\"pi\0ng\"}", 16, J},
    {"\0{\"type\":\"ping\"}", 16, J},
    {"{\"type\":\"hello\",\"name\":\"a\\u0000b\"}", 0, M},
    {"{\"type\":\"ping\",\"a\\u0000\":1}", 0, J}, /* jansson cannot hold such a key */
    /* duplicate keys, also nested and also of an ignored field */
    {"{\"type\":\"ping\",\"type\":\"ping\"}", 0, J},
    {"{\"type\":\"hello\",\"name\":\"a\",\"name\":\"b\"}", 0, J},
    {"{\"type\":\"ping\",\"t\":{\"x\":1,\"x\":1}}", 0, J},
    /* type */
    {"{}", 0, M},
    {"{\"Type\":\"ping\"}", 0, M},
    {"{\"type\":null}", 0, M},
    {"{\"type\":[\"ping\"]}", 0, M},
    {"{\"type\":true}", 0, M},
    {"{\"type\":\"PING\"}", 0, U},
    {"{\"type\":\"welcome\"}", 0, U},
    {"{\"type\":\"ping \"}", 0, U},
    /* integers: wrong JSON type */
    {"{\"type\":\"solo\",\"size\":4.0}", 0, M},
    {"{\"type\":\"solo\",\"size\":\"4\"}", 0, M},
    {"{\"type\":\"solo\",\"size\":true}", 0, M},
    {"{\"type\":\"solo\",\"size\":null}", 0, M},
    {"{\"type\":\"solo\",\"size\":[4]}", 0, M},
    {"{\"type\":\"solo\",\"seed\":false}", 0, M},
    {"{\"type\":\"solo\",\"seed\":1.5}", 0, M},
    {"{\"type\":\"move\",\"dir\":\"up\",\"seq\":1e3}", 0, M},
    {"{\"type\":\"move\",\"dir\":\"up\",\"seq\":\"1\"}", 0, M},
    {"{\"type\":\"create\",\"time_limit\":0.0}", 0, M},
    /* integers: out of range */
    {"{\"type\":\"solo\",\"size\":2}", 0, M},
    {"{\"type\":\"solo\",\"size\":-1}", 0, M},
    {"{\"type\":\"solo\",\"seed\":-1}", 0, M},
    {"{\"type\":\"solo\",\"target\":4}", 0, M},
    {"{\"type\":\"solo\",\"target\":2097152}", 0, M},
    {"{\"type\":\"solo\",\"target\":2047}", 0, M},
    {"{\"type\":\"solo\",\"target\":0}", 0, M},
    {"{\"type\":\"solo\",\"target\":-2048}", 0, M},
    {"{\"type\":\"create\",\"players\":9}", 0, M},
    {"{\"type\":\"quick\",\"players\":0}", 0, M},
    {"{\"type\":\"create\",\"time_limit\":-1}", 0, M},
    {"{\"type\":\"move\",\"dir\":\"up\",\"seq\":9007199254740992}", 0, M},
    {"{\"type\":\"move\",\"dir\":\"up\",\"seq\":9223372036854775807}", 0, M},
    /* names */
    {"{\"type\":\"hello\"}", 0, M},
    {"{\"type\":\"hello\",\"name\":\"\"}", 0, M},
    {"{\"type\":\"hello\",\"name\":\"abcdefghijklmnopq\"}", 0, M},
    {"{\"type\":\"hello\",\"name\":\"a b\"}", 0, M},
    {"{\"type\":\"hello\",\"name\":\"caf\xc3\xa9\"}", 0, M},
    {"{\"type\":\"hello\",\"name\":7}", 0, M},
    {"{\"type\":\"hello\",\"name\":null}", 0, M},
    /* room codes */
    {"{\"type\":\"join\",\"room\":\"ab\"}", 0, M},
    {"{\"type\":\"join\",\"room\":\"ABCDEFGHI\"}", 0, M},
    {"{\"type\":\"join\",\"room\":\"AB-C\"}", 0, M},
    {"{\"type\":\"watch\",\"room\":\"AB C\"}", 0, M},
    {"{\"type\":\"watch\",\"room\":1234}", 0, M},
    {"{\"type\":\"watch\"}", 0, M},
    {"{\"type\":\"join\",\"room\":\"AB\\u0000C\"}", 0, M},
    /* tokens */
    {"{\"type\":\"resume\"}", 0, M},
    {"{\"type\":\"resume\",\"token\":\"\"}", 0, M},
    {"{\"type\":\"resume\",\"token\":\"a\\nb\"}", 0, M},
    {"{\"type\":\"resume\",\"token\":\"\xc3\xa9t\xc3\xa9\"}", 0, M},
    {"{\"type\":\"resume\",\"token\":42}", 0, M},
    /* directions */
    {"{\"type\":\"move\",\"dir\":\"UP\"}", 0, D},
    {"{\"type\":\"move\",\"dir\":\"north\"}", 0, D},
    {"{\"type\":\"move\",\"dir\":\"Left\"}", 0, D},
    {"{\"type\":\"move\",\"dir\":true}", 0, M},
};

static void test_bad_line_table(void **state) {
    size_t n = sizeof bad_lines / sizeof bad_lines[0];
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        const bad_line *b = &bad_lines[i];
        decode_err_n(b->line, b->len ? b->len : strlen(b->line), b->code);
    }
}

/* A 4000-character name is rejected whole, with a short message. */
static void test_huge_name(void **state) {
    size_t cap = 4100;
    char *line = malloc(cap);
    assert_non_null(line);
    int n = snprintf(line, cap, "{\"type\":\"hello\",\"name\":\"");
    memset(line + n, 'a', 4000);
    snprintf(line + n + 4000, cap - (size_t)n - 4000, "\"}");
    proto_error err = decode_err(line, PROTO_ERR_BAD_MESSAGE);
    assert_true(strlen(err.message) < sizeof err.message);
    free(line);
}

static char *nested(const char *open, const char *inner, const char *close, int depth,
                    const char *head, const char *tail) {
    size_t cap = strlen(head) + strlen(tail) + strlen(inner) +
                 (size_t)depth * (strlen(open) + strlen(close)) + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    char *p = s;
    p += sprintf(p, "%s", head);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", open);
    p += sprintf(p, "%s", inner);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", close);
    sprintf(p, "%s", tail);
    return s;
}

/* jansson stops at depth 2048: deeper is bad_json, shallower is just data. */
static void test_deep_nesting(void **state) {
    char *s = nested("[", "", "]", 3000, "", "");
    decode_err(s, PROTO_ERR_BAD_JSON);
    free(s);

    s = nested("{\"a\":", "1", "}", 3000, "{\"type\":\"ping\",\"x\":", "}");
    decode_err(s, PROTO_ERR_BAD_JSON);
    free(s);

    s = nested("{\"a\":", "1", "}", 3000, "{\"type\":\"ping\",\"t\":", "}");
    decode_err(s, PROTO_ERR_BAD_JSON);
    free(s);

    proto_request req;
    s = nested("{\"a\":", "1", "}", 100, "{\"type\":\"ping\",\"t\":", "}");
    decode_ok(s, &req);
    assert_true(json_is_object(req.ping_t));
    proto_request_clear(&req);
    free(s);
}

/* ------------------------------------------------- first problem wins --- */

static void test_first_problem_wins(void **state) {
    /* bad JSON beats an unknown type and bad fields */
    decode_err("{\"type\":\"foo\",\"size\":", PROTO_ERR_BAD_JSON);
    decode_err("{\"type\":\"foo\",\"type\":\"bar\"}", PROTO_ERR_BAD_JSON);
    decode_err("{\"type\":\"foo\",\"x\":1e999}", PROTO_ERR_BAD_JSON);
    /* an unknown type beats bad fields */
    decode_err("{\"type\":\"foo\",\"size\":99,\"dir\":\"north\"}",
               PROTO_ERR_UNKNOWN_TYPE);
    /* a missing type beats bad fields */
    decode_err("{\"size\":99,\"dir\":\"north\"}", PROTO_ERR_BAD_MESSAGE);
    /* within a type, its fields in protocol/README.md's order */
    proto_error err =
        decode_err("{\"type\":\"create\",\"time_limit\":-1,\"size\":1,\"players\":1}",
                   PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "players must be an integer from 2 to 8");
    err = decode_err("{\"type\":\"solo\",\"seed\":-1,\"target\":3,\"size\":1}",
                     PROTO_ERR_BAD_MESSAGE);
    assert_string_equal(err.message, "size must be an integer from 3 to 8");
    /* move: dir before seq, whichever error kind it is */
    decode_err("{\"type\":\"move\",\"seq\":-1,\"dir\":\"north\"}", PROTO_ERR_BAD_DIR);
    decode_err("{\"type\":\"move\",\"seq\":\"x\",\"dir\":\"up\"}", PROTO_ERR_BAD_MESSAGE);
}

/* A failed decode owns nothing: ping_t is NULL even when t had parsed. */
static void test_failure_owns_nothing(void **state) {
    proto_request req;
    proto_error err;
    const char *line = "{\"type\":\"ping\",\"t\":[1,2,3],\"t\":0}";
    assert_int_equal(proto_decode(line, strlen(line), &req, &err), -1);
    assert_null(req.ping_t);
}

/* After a field error the type is known (the server answers a bad hello
 * differently); a line without a string type leaves it 0, i.e. hello. */
static void test_type_kept_after_field_error(void **state) {
    static const struct {
        const char *line;
        proto_req_type type;
    } cases[] = {
        {"{\"type\":\"move\",\"dir\":\"north\"}", PROTO_REQ_MOVE},
        {"{\"type\":\"move\",\"dir\":1}", PROTO_REQ_MOVE},
        {"{\"type\":\"solo\",\"size\":1}", PROTO_REQ_SOLO},
        {"{\"type\":\"resume\"}", PROTO_REQ_RESUME},
        {"{\"type\":\"hello\",\"name\":\"\"}", PROTO_REQ_HELLO},
        {"{\"type\":\"watch\",\"room\":\"x\"}", PROTO_REQ_WATCH},
        {"{\"type\":7}", PROTO_REQ_NONE},
        {"{}", PROTO_REQ_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        proto_request req;
        proto_error err;
        assert_int_equal(proto_decode(cases[i].line, strlen(cases[i].line), &req, &err),
                         -1);
        assert_true(err.code == PROTO_ERR_BAD_MESSAGE || err.code == PROTO_ERR_BAD_DIR);
        assert_int_equal(req.type, cases[i].type);
    }
}

/* The decoder's message is sized for proto_error even for jansson's longest texts. */
static void test_json_error_message_fits(void **state) {
    proto_error err =
        decode_err("{\"type\":\"ping\",\"t\":\"abc\xff\xfe\xfd\"}", PROTO_ERR_BAD_JSON);
    assert_string_equal(err.message,
                        "line is not valid JSON: unable to decode byte 0xff near '\"abc' "
                        "at column 23");
    err = decode_err("{\"type\":\"ping\",\"t\":\x01\xff}", PROTO_ERR_BAD_JSON);
    for (const char *p = err.message; *p; p++)
        assert_true(*p >= 0x20 && *p < 0x7F);
}

/* ---------------------------------------------------- small functions --- */

static void test_valid_name(void **state) {
    assert_true(proto_valid_name("a"));
    assert_true(proto_valid_name("Z_9-z"));
    assert_true(proto_valid_name("abcdefghijklmnop"));
    assert_false(proto_valid_name("abcdefghijklmnopq"));
    assert_false(proto_valid_name(""));
    assert_false(proto_valid_name(NULL));
    assert_false(proto_valid_name("a.b"));
    assert_false(proto_valid_name("caf\xc3\xa9"));
}

static void test_err_code_names(void **state) {
    static const char *const names[] = {
        "ok",
        "bad_json",
        "bad_message",
        "unknown_type",
        "bad_dir",
        "not_playing",
        "room_not_found",
        "already_started",
        "busy",
        "line_too_long",
        "bad_token",
        "server_full",
        "slow_consumer",
        "game_not_found",
        "rate_limited",
        "room_full",
        "unavailable",
        "name_taken",
        "bad_key",
        "account_needed",
        "player_not_found",
    };
    for (int i = 0; i <= PROTO_ERR_PLAYER_NOT_FOUND; i++)
        assert_string_equal(proto_err_code((proto_err)i), names[i]);
}

/* Version 4: hello with key, register, create's rated, quick's rating,
 * leaderboard, profile. */
static void test_accounts_requests(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"hello\",\"name\":\"Ann\",\"key\":"
              "\"0123456789abcdef0123456789abcdef\"}",
              &req);
    assert_true(req.has_key);
    assert_string_equal(req.key, "0123456789abcdef0123456789abcdef");
    decode_ok("{\"type\":\"hello\",\"name\":\"Ann\"}", &req);
    assert_false(req.has_key);
    /* Any string is a key to check (a wrong one is the server's bad_key); a
     * string too long to be one is kept as "" so that it fails the check. */
    decode_ok("{\"type\":\"hello\",\"name\":\"Ann\",\"key\":\"zz\"}", &req);
    assert_true(req.has_key);
    assert_string_equal(req.key, "zz");
    decode_ok("{\"type\":\"hello\",\"name\":\"Ann\",\"key\":"
              "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\"}",
              &req);
    assert_true(req.has_key);
    assert_string_equal(req.key, "");
    decode_err("{\"type\":\"hello\",\"name\":\"Ann\",\"key\":5}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"hello\",\"key\":\"ab\"}", PROTO_ERR_BAD_MESSAGE);

    decode_ok("{\"type\":\"register\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_REGISTER);

    decode_ok("{\"type\":\"create\",\"rated\":true}", &req);
    assert_true(req.settings.rated);
    decode_ok("{\"type\":\"create\"}", &req);
    assert_false(req.settings.rated);
    decode_ok("{\"type\":\"create\",\"rated\":false,\"size\":5}", &req);
    assert_false(req.settings.rated);
    decode_err("{\"type\":\"create\",\"rated\":true,\"size\":5}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"create\",\"rated\":1}", PROTO_ERR_BAD_MESSAGE);
    decode_ok("{\"type\":\"quick\",\"players\":3}", &req);
    assert_true(req.settings.rated); /* every quick race of size 4 */
    decode_ok("{\"type\":\"quick\",\"size\":5}", &req);
    assert_false(req.settings.rated);

    decode_ok("{\"type\":\"leaderboard\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_LEADERBOARD);
    assert_int_equal(req.board, PROTO_BOARD_RATING);
    assert_int_equal(req.limit, 20);
    decode_ok("{\"type\":\"leaderboard\",\"board\":\"rating\",\"limit\":100}", &req);
    assert_int_equal(req.limit, 100);
    decode_ok("{\"type\":\"leaderboard\",\"board\":\"daily\"}", &req);
    assert_int_equal(req.board, PROTO_BOARD_DAILY);
    decode_err("{\"type\":\"leaderboard\",\"limit\":101}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"leaderboard\",\"limit\":0}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"leaderboard\",\"board\":\"elo\"}", PROTO_ERR_BAD_MESSAGE);
    /* The daily board: size (default 4) and date (default today: ""). */
    decode_ok("{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":6,"
              "\"date\":\"2026-12-03\"}",
              &req);
    assert_int_equal(req.settings.size, 6);
    assert_string_equal(req.date, "2026-12-03");
    decode_ok("{\"type\":\"leaderboard\",\"board\":\"daily\"}", &req);
    assert_int_equal(req.settings.size, 4);
    assert_string_equal(req.date, "");
    decode_err("{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":9}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"leaderboard\",\"board\":\"daily\",\"date\":\"2026-1-3\"}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"leaderboard\",\"board\":\"daily\",\"date\":20261203}",
               PROTO_ERR_BAD_MESSAGE);
    /* daily: a size, 4 when absent; a solo game to 2048. */
    decode_ok("{\"type\":\"daily\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_DAILY);
    assert_int_equal(req.settings.size, 4);
    assert_int_equal(req.settings.target, 2048);
    decode_ok("{\"type\":\"daily\",\"size\":3}", &req);
    assert_int_equal(req.settings.size, 3);
    decode_err("{\"type\":\"daily\",\"size\":2}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"daily\",\"size\":\"4\"}", PROTO_ERR_BAD_MESSAGE);

    decode_ok("{\"type\":\"profile\",\"name\":\"ann\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_PROFILE);
    assert_string_equal(req.name, "ann");
    decode_err("{\"type\":\"profile\"}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"profile\",\"name\":\"a b\"}", PROTO_ERR_BAD_MESSAGE);
}

static void test_history_replay(void **state) {
    proto_request req;
    decode_ok("{\"type\":\"history\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_HISTORY);
    assert_int_equal(req.limit, 20);
    decode_ok("{\"type\":\"history\",\"limit\":100}", &req);
    assert_int_equal(req.limit, 100);
    decode_ok("{\"type\":\"history\",\"limit\":1}", &req);
    assert_int_equal(req.limit, 1);
    decode_err("{\"type\":\"history\",\"limit\":0}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"history\",\"limit\":101}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"history\",\"limit\":\"5\"}", PROTO_ERR_BAD_MESSAGE);
    decode_ok("{\"type\":\"replay\",\"game\":7}", &req);
    assert_int_equal(req.type, PROTO_REQ_REPLAY);
    assert_true(req.has_game);
    assert_int_equal(req.game, 7);
    /* Ids this server never gives: valid requests, answered game_not_found. */
    decode_ok("{\"type\":\"replay\",\"game\":\"7\"}", &req);
    assert_false(req.has_game);
    decode_ok("{\"type\":\"replay\",\"game\":-1}", &req);
    assert_false(req.has_game);
    decode_err("{\"type\":\"replay\"}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"replay\",\"game\":1.5}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"replay\",\"game\":null}", PROTO_ERR_BAD_MESSAGE);
}

/* Arenas: arena_create's fields and defaults, and the arena code of the others. */
static void test_arena_requests(void **state) {
    (void)state;
    proto_request req;
    decode_ok("{\"type\":\"arena_create\",\"name\":\"Friday 9pm!\",\"minutes\":5}", &req);
    assert_int_equal(req.type, PROTO_REQ_ARENA_CREATE);
    assert_string_equal(req.arena_name, "Friday 9pm!");
    assert_int_equal(req.minutes, 5);
    assert_int_equal(req.settings.players, 4);
    assert_int_equal(req.settings.size, 4);
    assert_int_equal(req.settings.target, 2048);
    assert_int_equal(req.starts_in, 60);
    decode_ok(
        "{\"type\":\"arena_create\",\"name\":\"12345678901234567890123456789012\","
        "\"minutes\":240,\"players\":8,\"size\":8,\"target\":8,\"starts_in\":86400}",
        &req);
    assert_int_equal(req.minutes, 240);
    assert_int_equal(req.settings.players, 8);
    assert_int_equal(req.starts_in, 86400);
    decode_err("{\"type\":\"arena_create\",\"minutes\":5}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_create\",\"name\":\"\",\"minutes\":5}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_create\",\"name\":\"a\\n\",\"minutes\":5}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_create\",\"name\":\"a\"}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_create\",\"name\":\"a\",\"minutes\":241}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_create\",\"name\":\"a\",\"minutes\":5,\"players\":1}",
               PROTO_ERR_BAD_MESSAGE);
    decode_err(
        "{\"type\":\"arena_create\",\"name\":\"a\",\"minutes\":5,\"starts_in\":-1}",
        PROTO_ERR_BAD_MESSAGE);
    decode_ok("{\"type\":\"arenas\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_ARENAS);
    decode_ok("{\"type\":\"arena_join\",\"arena\":\"ab12cd\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_ARENA_JOIN);
    assert_string_equal(req.room, "AB12CD");
    decode_ok("{\"type\":\"arena_leave\",\"arena\":\"AB12\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_ARENA_LEAVE);
    decode_ok("{\"type\":\"arena_results\",\"arena\":\"AB12CD34\"}", &req);
    assert_int_equal(req.type, PROTO_REQ_ARENA_RESULTS);
    decode_err("{\"type\":\"arena_join\"}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_join\",\"arena\":\"A-12\"}", PROTO_ERR_BAD_MESSAGE);
    decode_err("{\"type\":\"arena_join\",\"arena\":\"ABCDEFGHI\"}",
               PROTO_ERR_BAD_MESSAGE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_requests),
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_solo_all_fields),
        cmocka_unit_test(test_solo_defaults),
        cmocka_unit_test(test_create_all_fields),
        cmocka_unit_test(test_create_defaults),
        cmocka_unit_test(test_create_ignores_seed),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_quick_all_fields),
        cmocka_unit_test(test_quick_defaults),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_move_all_fields),
        cmocka_unit_test(test_move_without_seq),
        cmocka_unit_test(test_leave_rooms_rematch),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_ping_with_t),
        cmocka_unit_test(test_ping_without_t),
        cmocka_unit_test(test_unknown_fields_ignored),
        cmocka_unit_test(test_whitespace),
        cmocka_unit_test(test_err_bad_json),
        cmocka_unit_test(test_err_bad_message),
        cmocka_unit_test(test_err_unknown_type),
        cmocka_unit_test(test_err_unknown_type_long),
        cmocka_unit_test(test_err_bad_dir),
        cmocka_unit_test(test_err_dir_not_string),
        cmocka_unit_test(test_bad_line_table),
        cmocka_unit_test(test_huge_name),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_first_problem_wins),
        cmocka_unit_test(test_failure_owns_nothing),
        cmocka_unit_test(test_type_kept_after_field_error),
        cmocka_unit_test(test_json_error_message_fits),
        cmocka_unit_test(test_valid_name),
        cmocka_unit_test(test_err_code_names),
        cmocka_unit_test(test_history_replay),
        cmocka_unit_test(test_accounts_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
