/* test_encode.c - proto_enc_*: golden bytes for every server message, and no leak when
 * memory runs out. */
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

/* Checks an encoder's result against the exact expected line (which ends in
 * '\n'), then frees it. */
static void expect_line(char *got, size_t len, const char *want) {
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    assert_int_equal(got[len - 1], '\n');
    free(got);
}

/* A board from face values, row-major. */
static eng_board board_of(int size, const uint64_t *values) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, size), 0);
    for (int i = 0; i < size * size; i++) {
        int e = values[i] ? eng_value_exp(values[i]) : 0;
        assert_true(e >= 0);
        b.cell[i] = (uint8_t)e;
    }
    return b;
}

static const uint64_t board3[] = {2, 0, 0, 0, 4, 0, 0, 0, 2};
static const uint64_t board4[] = {0, 2, 0, 0, 4, 8, 0, 0, 2048, 16, 2, 0, 0, 0, 0, 4};
static const uint64_t empty4[16] = {0};
#define BOARD3         "[[2,0,0],[0,4,0],[0,0,2]]"
#define BOARD4         "[[0,2,0,0],[4,8,0,0],[2048,16,2,0],[0,0,0,4]]"
#define EMPTY4         "[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]"
#define CLIENT_SEED(n) (&(eng_seed){ENG_SEED_CLIENT, (n), {0}})
#define COMMIT         "65d9a4f8fe9abc50f929521ab3346fc213f21e2503507a0d77ad7e2ae195c56f"

/* ------------------------------------------------------- one per type --- */

static void test_welcome(void **state) {
    size_t len;
    char *s = proto_enc_welcome(7, "ann", "tok3n", &len);
    expect_line(s, len,
                "{\"type\":\"welcome\",\"id\":7,\"name\":\"ann\",\"token\":\"tok3n\","
                "\"proto\":4}\n");
}

/* Version 4: accounts, ratings, leaderboards and profiles. */
static void test_accounts_messages(void **state) {
    size_t len;
    proto_rating r = {
        .rating = 1658, .mu = 27.625, .sigma = 8.0625, .games = 1, .provisional = true};
    char *s = proto_enc_welcome_account(7, "Ann", "tok", &r, &len);
    expect_line(s, len,
                "{\"type\":\"welcome\",\"id\":7,\"name\":\"Ann\",\"token\":\"tok\","
                "\"proto\":4,\"account\":true,\"rating\":{\"rating\":1658,\"mu\":27.625,"
                "\"sigma\":8.0625,\"games\":1,\"provisional\":true}}\n");
    s = proto_enc_welcome_account(7, "Ann", "tok", NULL, &len);
    expect_line(s, len,
                "{\"type\":\"welcome\",\"id\":7,\"name\":\"Ann\",\"token\":\"tok\","
                "\"proto\":4}\n");
    s = proto_enc_registered("Ann", "0123456789abcdef0123456789abcdef", &len);
    expect_line(s, len,
                "{\"type\":\"registered\",\"name\":\"Ann\",\"key\":"
                "\"0123456789abcdef0123456789abcdef\"}\n");
    proto_board_row rows[] = {{1, "Ann", 1900, 12}, {2, "bob", 1900, 10}};
    s = proto_enc_leaderboard(rows, 2, &len);
    expect_line(s, len,
                "{\"type\":\"leaderboard\",\"board\":\"rating\",\"rows\":["
                "{\"rank\":1,\"name\":\"Ann\",\"rating\":1900,\"games\":12},"
                "{\"rank\":2,\"name\":\"bob\",\"rating\":1900,\"games\":10}]}\n");
    s = proto_enc_leaderboard(NULL, 0, &len);
    expect_line(s, len, "{\"type\":\"leaderboard\",\"board\":\"rating\",\"rows\":[]}\n");
    proto_daily_row drows[] = {{1, "Ann", 36, 8, 14, 12}};
    s = proto_enc_daily_board(4, "2026-12-03", drows, 1, NULL, NULL, &len);
    expect_line(s, len,
                "{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":4,"
                "\"date\":\"2026-12-03\",\"rows\":[{\"rank\":1,\"name\":\"Ann\","
                "\"score\":36,\"max_tile\":8,\"moves\":14,\"game\":12}],"
                "\"seed\":null,\"salt\":null}\n");
    eng_seed daily_seed = eng_seed_client(42);
    s = proto_enc_daily_board(5, "2026-12-02", NULL, 0, &daily_seed, "00", &len);
    expect_line(s, len,
                "{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":5,"
                "\"date\":\"2026-12-02\",\"rows\":[],\"seed\":42,\"salt\":\"00\"}\n");
    /* A daily game's start and end (seed and salt hidden, reveal_at). */
    char *line = strdup("{\"type\":\"start\",\"commit\":\"c\"}\n");
    size_t n = strlen(line);
    s = proto_line_daily(line, &n, "2026-12-03", false, 0);
    expect_line(s, n, "{\"type\":\"start\",\"commit\":\"c\",\"daily\":\"2026-12-03\"}\n");
    line = strdup("{\"type\":\"end\",\"seed\":\"ab\",\"salt\":\"cd\",\"x\":1}\n");
    n = strlen(line);
    s = proto_line_daily(line, &n, NULL, true, 1796947200000);
    expect_line(s, n,
                "{\"type\":\"end\",\"seed\":null,\"salt\":null,\"x\":1,"
                "\"reveal_at\":1796947200000}\n");
    proto_profile_best best = {.size = 4, .score = 2100, .max_tile = 256, .game = 9};
    uint64_t recent[] = {12, 9};
    int32_t chart[] = {1500, 1658};
    proto_profile prof = {.name = "Ann",
                          .rating = r,
                          .races = 1,
                          .wins = 1,
                          .best = &best,
                          .nbest = 1,
                          .recent = recent,
                          .nrecent = 2,
                          .chart = chart,
                          .nchart = 2};
    s = proto_enc_profile(&prof, &len);
    expect_line(
        s, len,
        "{\"type\":\"profile\",\"name\":\"Ann\",\"rating\":{\"rating\":1658,"
        "\"mu\":27.625,\"sigma\":8.0625,\"games\":1,\"provisional\":true},"
        "\"races\":1,\"wins\":1,\"best\":[{\"size\":4,\"score\":2100,"
        "\"max_tile\":256,\"game\":9}],\"recent\":[12,9],\"chart\":[1500,1658]}\n");
    /* end of a rated race: ratings after salt; a player object with its rating. */
    eng_board b = board_of(4, empty4);
    proto_player p = {.id = 3,
                      .name = "Ann",
                      .board = &b,
                      .status = PROTO_OVER,
                      .has_rating = true,
                      .rating = 1500};
    proto_rating_change ch = {.id = 3,
                              .name = "Ann",
                              .before = 1500,
                              .after = 1658,
                              .mu = 27.625,
                              .sigma = 8.0625,
                              .provisional = true};
    eng_seed seed = eng_seed_client(5);
    s = proto_enc_end_rated("AB12", PROTO_END_ALL_OVER, 3, &p, 1, &seed, "salt", &ch, 1,
                            &len);
    expect_line(
        s, len,
        "{\"type\":\"end\",\"room\":\"AB12\",\"reason\":\"all_over\",\"winner\":3,"
        "\"results\":[{\"id\":3,\"name\":\"Ann\",\"board\":" EMPTY4 ",\"score\":0,"
        "\"moves\":0,\"max_tile\":0,\"status\":\"over\",\"rating\":1500}],"
        "\"seed\":5,\"salt\":\"salt\",\"ratings\":[{\"id\":3,\"name\":\"Ann\","
        "\"before\":1500,\"after\":1658,\"mu\":27.625,\"sigma\":8.0625,"
        "\"provisional\":true}]}\n");
    /* A rated race with no account: an empty list. */
    s = proto_enc_end_rated("AB12", PROTO_END_ALL_OVER, 3, &p, 1, &seed, "salt", &ch, 0,
                            &len);
    assert_non_null(strstr(s, "\"salt\":\"salt\",\"ratings\":[]}"));
    free(s);
}

static void test_queued(void **state) {
    size_t len;
    char *s = proto_enc_queued(4, 3, &len);
    expect_line(s, len, "{\"type\":\"queued\",\"players\":4,\"waiting\":3}\n");
}

static void test_room(void **state) {
    proto_player p[] = {{.id = 1, .name = "ann"}, {.id = 22, .name = "bob"}};
    proto_settings st = {.players = 3, .size = 5, .target = 1024, .time_limit = 120};
    size_t len;
    char *s = proto_enc_room("AB12", p, 2, &st, &len);
    expect_line(
        s, len,
        "{\"type\":\"room\",\"room\":\"AB12\",\"players\":[{\"id\":1,\"name\":\"ann\"},"
        "{\"id\":22,\"name\":\"bob\"}],\"need\":3,\"size\":5,\"target\":1024,"
        "\"time_limit\":120,\"rated\":false}\n");
    s = proto_enc_room("ZZZZZZZZ", NULL, 0, &st, &len);
    expect_line(
        s, len,
        "{\"type\":\"room\",\"room\":\"ZZZZZZZZ\",\"players\":[],\"need\":3,\"size\":5,"
        "\"target\":1024,\"time_limit\":120,\"rated\":false}\n");
}

static void test_start_race_3x3(void **state) {
    eng_board b = board_of(3, board3);
    proto_player p[] = {
        {.id = 1,
         .name = "ann",
         .board = &b,
         .score = 0,
         .moves = 0,
         .status = PROTO_PLAYING},
        {.id = 2,
         .name = "bob",
         .board = &b,
         .score = 0,
         .moves = 0,
         .status = PROTO_PLAYING},
    };
    proto_settings st = {.players = 2, .size = 3, .target = 64, .time_limit = 300};
    size_t len;
    char *s = proto_enc_start("AB12", 2, &st, p, 2, COMMIT, &len);
    expect_line(
        s, len,
        "{\"type\":\"start\",\"room\":\"AB12\",\"you\":2,\"size\":3,\"target\":64,"
        "\"time_limit\":300,\"players\":["
        "{\"id\":1,\"name\":\"ann\",\"board\":" BOARD3 ",\"score\":0,\"moves\":0,"
        "\"max_tile\":4,\"status\":\"playing\"},"
        "{\"id\":2,\"name\":\"bob\",\"board\":" BOARD3 ",\"score\":0,\"moves\":0,"
        "\"max_tile\":4,\"status\":\"playing\"}],"
        "\"commit\":\"" COMMIT "\",\"rated\":false}\n");
}

/* Solo: no room. A spectator: no you. */
static void test_start_omits_room_and_you(void **state) {
    eng_board b = board_of(4, board4);
    proto_player p = {.id = 5,
                      .name = "x",
                      .board = &b,
                      .score = 2100,
                      .moves = 300,
                      .status = PROTO_WON};
    proto_settings st = {.players = 1, .size = 4, .target = 2048, .time_limit = 0};
    size_t len;
    char *s = proto_enc_start(NULL, 5, &st, &p, 1, COMMIT, &len);
    expect_line(
        s, len,
        "{\"type\":\"start\",\"you\":5,\"size\":4,\"target\":2048,\"time_limit\":0,"
        "\"players\":[{\"id\":5,\"name\":\"x\",\"board\":" BOARD4 ",\"score\":2100,"
        "\"moves\":300,\"max_tile\":2048,\"status\":\"won\"}],"
        "\"commit\":\"" COMMIT "\",\"rated\":false}\n");
    s = proto_enc_start("QWER", 0, &st, &p, 1, COMMIT, &len);
    expect_line(s, len,
                "{\"type\":\"start\",\"room\":\"QWER\",\"size\":4,\"target\":2048,\"time_"
                "limit\":0,"
                "\"players\":[{\"id\":5,\"name\":\"x\",\"board\":" BOARD4
                ",\"score\":2100,"
                "\"moves\":300,\"max_tile\":2048,\"status\":\"won\"}],"
                "\"commit\":\"" COMMIT "\",\"rated\":false}\n");
}

static void test_state_4x4(void **state) {
    eng_board b = board_of(4, board4);
    proto_player p = {.id = 3,
                      .name = "c-3",
                      .board = &b,
                      .score = 40,
                      .moves = 9,
                      .status = PROTO_PLAYING};
    eng_spawn sp = {.row = 3, .col = 3, .value = 4};
    size_t len;
    char *s = proto_enc_state(&p, true, 17, ENG_LEFT, true, 8, &sp, &len);
    expect_line(s, len,
                "{\"type\":\"state\",\"id\":3,\"name\":\"c-3\",\"board\":" BOARD4
                ",\"score\":40,"
                "\"moves\":9,\"max_tile\":2048,\"status\":\"playing\",\"seq\":17,"
                "\"dir\":\"left\",\"moved\":true,\"gained\":8,"
                "\"spawn\":{\"row\":3,\"col\":3,\"value\":4}}\n");
}

/* A move that changed nothing: seq null, spawn null (value 0 or no spawn). */
static void test_state_nulls(void **state) {
    eng_board b = board_of(3, board3);
    proto_player p = {.id = 1, .name = "a", .board = &b, .status = PROTO_OVER};
    eng_spawn none = {.row = 1, .col = 2, .value = 0};
    const char *want = "{\"type\":\"state\",\"id\":1,\"name\":\"a\",\"board\":" BOARD3
                       ",\"score\":0,\"moves\":0,\"max_tile\":4,\"status\":\"over\","
                       "\"seq\":null,\"dir\":\"up\",\"moved\":false,\"gained\":0,"
                       "\"spawn\":null}\n";
    size_t len;
    char *s = proto_enc_state(&p, false, 99, ENG_UP, false, 0, &none, &len);
    expect_line(s, len, want);
    s = proto_enc_state(&p, false, 0, ENG_UP, false, 0, NULL, &len);
    expect_line(s, len, want);
}

static void test_state_dirs(void **state) {
    eng_board b = board_of(4, empty4);
    proto_player p = {.id = 1, .name = "a", .board = &b};
    static const char *const names[] = {"left", "right", "up", "down"};
    for (int d = ENG_LEFT; d <= ENG_DOWN; d++) {
        size_t len;
        char *s = proto_enc_state(&p, true, 0, (eng_dir)d, false, 0, NULL, &len);
        assert_non_null(s);
        char want[32];
        snprintf(want, sizeof want, "\"dir\":\"%s\"", names[d]);
        assert_non_null(strstr(s, want));
        assert_non_null(strstr(s, "\"board\":[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]"));
        assert_non_null(strstr(s, "\"max_tile\":0,"));
        free(s);
    }
}

static void test_end_race(void **state) {
    eng_board b1 = board_of(4, board4), b2 = board_of(4, empty4);
    proto_player r[] = {
        {.id = 2,
         .name = "bob",
         .board = &b1,
         .score = 20000,
         .moves = 900,
         .status = PROTO_WON},
        {.id = 1,
         .name = "ann",
         .board = &b2,
         .score = 0,
         .moves = 1,
         .status = PROTO_LEFT},
    };
    size_t len;
    char *s = proto_enc_end("AB12", PROTO_END_TARGET, 2, r, 2, CLIENT_SEED(4294967295u),
                            "00000000000000000000000000000000", &len);
    expect_line(
        s, len,
        "{\"type\":\"end\",\"room\":\"AB12\",\"reason\":\"target\",\"winner\":2,"
        "\"results\":[{\"id\":2,\"name\":\"bob\",\"board\":" BOARD4 ",\"score\":20000,"
        "\"moves\":900,\"max_tile\":2048,\"status\":\"won\"},"
        "{\"id\":1,\"name\":\"ann\",\"board\":[[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]],"
        "\"score\":0,\"moves\":1,\"max_tile\":0,\"status\":\"left\"}],"
        "\"seed\":4294967295,\"salt\":\"00000000000000000000000000000000\"}\n");
}

/* A draw: winner null; the other reasons by name; solo: no room. */
static void test_end_draw_and_solo(void **state) {
    eng_board b = board_of(3, board3);
    proto_player r = {
        .id = 9, .name = "s", .board = &b, .score = 4, .moves = 2, .status = PROTO_OVER};
    size_t len;
    char *s = proto_enc_end("AB12", PROTO_END_TIME, 0, &r, 1, CLIENT_SEED(42),
                            "0123456789abcdef0123456789abcdef", &len);
    expect_line(s, len,
                "{\"type\":\"end\",\"room\":\"AB12\",\"reason\":\"time\",\"winner\":null,"
                "\"results\":[{\"id\":9,\"name\":\"s\",\"board\":" BOARD3 ",\"score\":4,"
                "\"moves\":2,\"max_tile\":4,\"status\":\"over\"}],"
                "\"seed\":42,\"salt\":\"0123456789abcdef0123456789abcdef\"}\n");
    s = proto_enc_end(NULL, PROTO_END_ALL_OVER, 9, &r, 1, CLIENT_SEED(0),
                      "0123456789abcdef0123456789abcdef", &len);
    expect_line(s, len,
                "{\"type\":\"end\",\"reason\":\"all_over\",\"winner\":9,"
                "\"results\":[{\"id\":9,\"name\":\"s\",\"board\":" BOARD3 ",\"score\":4,"
                "\"moves\":2,\"max_tile\":4,\"status\":\"over\"}],"
                "\"seed\":0,\"salt\":\"0123456789abcdef0123456789abcdef\"}\n");
    s = proto_enc_end("AB12", PROTO_END_FORFEIT, 9, NULL, 0, CLIENT_SEED(1), "00", &len);
    expect_line(s, len,
                "{\"type\":\"end\",\"room\":\"AB12\",\"reason\":\"forfeit\",\"winner\":9,"
                "\"results\":[],\"seed\":1,\"salt\":\"00\"}\n");
}

/* A server seed goes out as a string of 64 hex digits. */
static void test_end_server_seed(void **state) {
    uint8_t key[ENG_SEED_KEY_BYTES] = {0};
    key[0] = 0xAB, key[31] = 0x01;
    eng_seed seed = eng_seed_server(key);
    size_t len;
    char *s = proto_enc_end(NULL, PROTO_END_ALL_OVER, 0, NULL, 0, &seed, "00", &len);
    expect_line(
        s, len,
        "{\"type\":\"end\",\"reason\":\"all_over\",\"winner\":null,\"results\":[],"
        "\"seed\":\"ab000000000000000000000000000000000000000000000000000000000000"
        "01\",\"salt\":\"00\"}\n");
}

static void test_player(void **state) {
    size_t len;
    char *s = proto_enc_player("AB12", 2, false, PROTO_PLAYING, &len);
    expect_line(s, len,
                "{\"type\":\"player\",\"room\":\"AB12\",\"id\":2,\"connected\":false,"
                "\"status\":\"playing\"}\n");
    s = proto_enc_player("AB12", 3, true, PROTO_LEFT, &len);
    expect_line(s, len,
                "{\"type\":\"player\",\"room\":\"AB12\",\"id\":3,\"connected\":true,"
                "\"status\":\"left\"}\n");
}

static void test_left(void **state) {
    size_t len;
    char *s = proto_enc_left(&len);
    expect_line(s, len, "{\"type\":\"left\"}\n");
}

static void test_rooms(void **state) {
    size_t len;
    char *s = proto_enc_rooms(NULL, 0, &len);
    expect_line(s, len, "{\"type\":\"rooms\",\"rooms\":[]}\n");
    proto_room_info rooms[] = {
        {.room = "AB12",
         .players = 1,
         .settings = {.players = 2, .size = 4, .target = 2048, .time_limit = 0},
         .started = false},
        {.room = "XYZ789",
         .players = 8,
         .settings = {.players = 8, .size = 8, .target = 1048576, .time_limit = 86400},
         .started = true},
    };
    s = proto_enc_rooms(rooms, 2, &len);
    expect_line(
        s, len,
        "{\"type\":\"rooms\",\"rooms\":["
        "{\"room\":\"AB12\",\"players\":1,\"need\":2,\"size\":4,\"target\":2048,"
        "\"started\":false},"
        "{\"room\":\"XYZ789\",\"players\":8,\"need\":8,\"size\":8,\"target\":1048576,"
        "\"started\":true}]}\n");
}

/* Version 4 rows say who is in a room: names, scores once it runs, how many
 * are bots, and its spectators. */
static void test_rooms_seats(void **state) {
    size_t len;
    proto_room_info rooms[] = {
        {.room = "AB12",
         .players = 1,
         .settings = {.players = 2, .size = 4, .target = 2048, .time_limit = 0},
         .seats_known = true,
         .names = {"ann"}},
        {.room = "CD34",
         .players = 2,
         .settings = {.players = 2, .size = 4, .target = 64, .time_limit = 0},
         .started = true,
         .seats_known = true,
         .names = {"ann", "bot-L3-7"},
         .scores = {120, 8},
         .bots = 1,
         .spectators = 3},
    };
    char *s = proto_enc_rooms(rooms, 2, &len);
    expect_line(s, len,
                "{\"type\":\"rooms\",\"rooms\":["
                "{\"room\":\"AB12\",\"players\":1,\"need\":2,\"size\":4,\"target\":2048,"
                "\"started\":false,\"names\":[\"ann\"],\"bots\":0,\"spectators\":0},"
                "{\"room\":\"CD34\",\"players\":2,\"need\":2,\"size\":4,\"target\":64,"
                "\"started\":true,\"names\":[\"ann\",\"bot-L3-7\"],\"scores\":[120,8],"
                "\"bots\":1,\"spectators\":3}]}\n");
}

static void test_pong(void **state) {
    size_t len;
    char *s = proto_enc_pong(NULL, &len);
    expect_line(s, len, "{\"type\":\"pong\",\"t\":null}\n");

    /* t comes back as the client sent it, compact and in its key order. */
    json_t *t = json_loads("{ \"z\" : [1, 2.5, \"a\\u0000b\"], \"a\" : {} }",
                           JSON_ALLOW_NUL, NULL);
    assert_non_null(t);
    s = proto_enc_pong(t, &len);
    expect_line(s, len,
                "{\"type\":\"pong\",\"t\":{\"z\":[1,2.5,\"a\\u0000b\"],\"a\":{}}}\n");
    assert_int_equal(t->refcount, 1); /* the caller's value is untouched */
    json_decref(t);

    json_t *n = json_integer(1700000000123);
    s = proto_enc_pong(n, &len);
    expect_line(s, len, "{\"type\":\"pong\",\"t\":1700000000123}\n");
    json_decref(n);
}

/* A decoded ping round-trips into its pong. */
static void test_pong_from_ping(void **state) {
    const char *line = "{\"type\":\"ping\",\"t\":\"caf\xc3\xa9 \\\"1\\\"\"}";
    proto_request req;
    proto_error err;
    assert_int_equal(proto_decode(line, strlen(line), &req, &err), 0);
    size_t len;
    char *s = proto_enc_pong(req.ping_t, &len);
    expect_line(s, len, "{\"type\":\"pong\",\"t\":\"caf\xc3\xa9 \\\"1\\\"\"}\n");
    proto_request_clear(&req);
}

static void test_bye(void **state) {
    size_t len;
    char *s = proto_enc_bye("shutdown", &len);
    expect_line(s, len, "{\"type\":\"bye\",\"reason\":\"shutdown\"}\n");
}

static void test_error_escaping(void **state) {
    size_t len;
    char *s =
        proto_enc_error(PROTO_ERR_BAD_MESSAGE,
                        "a \"q\" \\ /\t\n\r\x01\x1f caf\xc3\xa9 \xe2\x82\xac", &len);
    expect_line(
        s, len,
        "{\"type\":\"error\",\"code\":\"bad_message\",\"message\":"
        "\"a \\\"q\\\" \\\\ /\\t\\n\\r\\u0001\\u001F caf\xc3\xa9 \xe2\x82\xac\"}\n");
    s = proto_enc_error(PROTO_ERR_SLOW_CONSUMER, "too slow", &len);
    expect_line(
        s, len,
        "{\"type\":\"error\",\"code\":\"slow_consumer\",\"message\":\"too slow\"}\n");
}

/* Bytes that are not UTF-8 still give a valid line, as '?'. */
static void test_error_not_utf8(void **state) {
    size_t len;
    char *s = proto_enc_error(PROTO_ERR_BUSY, "x\xff\xc3y", &len);
    expect_line(s, len, "{\"type\":\"error\",\"code\":\"busy\",\"message\":\"x??y\"}\n");
    s = proto_enc_error(PROTO_ERR_BUSY, NULL, &len);
    expect_line(s, len, "{\"type\":\"error\",\"code\":\"busy\",\"message\":\"\"}\n");
}

/* Every decoder message encodes as it is. */
static void test_error_from_decoder(void **state) {
    const char *line = "{\"type\":\"solo\",\"target\":3}";
    proto_request req;
    proto_error err;
    assert_int_equal(proto_decode(line, strlen(line), &req, &err), -1);
    size_t len;
    char *s = proto_enc_error(err.code, err.message, &len);
    expect_line(s, len,
                "{\"type\":\"error\",\"code\":\"bad_message\",\"message\":"
                "\"target must be a power of two from 8 to 1048576\"}\n");
}

/* uint64 counters above INT64_MAX are clamped, never negative. */
static void test_clamp(void **state) {
    size_t len;
    char *s = proto_enc_welcome(UINT64_MAX, "a", "t", &len);
    expect_line(
        s, len,
        "{\"type\":\"welcome\",\"id\":9223372036854775807,\"name\":\"a\",\"token\":\"t\","
        "\"proto\":4}\n");
    s = proto_enc_welcome((uint64_t)INT64_MAX, "a", "t", &len);
    expect_line(
        s, len,
        "{\"type\":\"welcome\",\"id\":9223372036854775807,\"name\":\"a\",\"token\":\"t\","
        "\"proto\":4}\n");
}

/* The biggest message: 8 players on 8x8 boards, byte-for-byte the same twice. */
static void test_stable_and_large(void **state) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, 8), 0);
    for (int i = 0; i < 64; i++)
        b.cell[i] = (uint8_t)(i % 20);
    proto_player p[8];
    for (int i = 0; i < 8; i++)
        p[i] = (proto_player){.id = (uint64_t)i + 1,
                              .name = "abcdefghijklmnop",
                              .board = &b,
                              .score = 123456789,
                              .moves = 4000000,
                              .status = PROTO_OVER};
    size_t l1, l2;
    char *a =
        proto_enc_end("ABCDEFGH", PROTO_END_ALL_OVER, 1, p, 8, CLIENT_SEED(7), "00", &l1);
    char *c =
        proto_enc_end("ABCDEFGH", PROTO_END_ALL_OVER, 1, p, 8, CLIENT_SEED(7), "00", &l2);
    assert_non_null(a);
    assert_non_null(c);
    assert_int_equal(l1, l2);
    assert_memory_equal(a, c, l1);
    assert_int_equal(strlen(a), l1);
    assert_non_null(strstr(a, "\"max_tile\":524288,"));
    assert_null(strchr(a, ' '));
    assert_ptr_equal(strchr(a, '\n'), a + l1 - 1);
    free(a);
    free(c);
}

/* The hand-written `state` is byte-for-byte what jansson writes for the same
 * object: parse it and dump it again, compactly in the same order. */
static void test_state_fast_path_matches_jansson(void **state) {
    uint32_t x = 12345;
    for (int round = 0; round < 2000; round++) {
        eng_board b;
        int size = 3 + round % 6;
        assert_int_equal(eng_board_init(&b, size), 0);
        for (int i = 0; i < size * size; i++) {
            x = x * 1103515245u + 12345u;
            b.cell[i] = (uint8_t)((x >> 16) % 24);
        }
        proto_player p = {.id = (uint64_t)round * 7919u,
                          .name = round % 2 ? "player-42" : "Ann_b-9",
                          .board = &b,
                          .score = (uint64_t)x * 977u,
                          .moves = x,
                          .status = (proto_status)(round % 4),
                          .bot = round % 3 == 0,
                          .has_rating = round % 4 == 1,
                          .rating = (round % 8 == 1 ? -1 : 1) * (int)(x % 3000)};
        eng_spawn sp = {
            .row = round % size, .col = (round / 3) % size, .value = round % 3 ? 2 : 0};
        size_t len;
        char *line = proto_enc_state(&p, round % 5 != 0, (uint64_t)round << 20,
                                     (eng_dir)(round % 4), round % 7 != 0, x, &sp, &len);
        assert_non_null(line);
        assert_int_equal(line[len - 1], '\n');
        json_error_t err;
        json_t *parsed = json_loadb(line, len - 1, 0, &err);
        assert_non_null(parsed);
        char *again = json_dumps(parsed, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(again);
        assert_int_equal(strlen(again), len - 1);
        assert_memory_equal(again, line, len - 1);
        free(again);
        json_decref(parsed);
        free(line);
    }
}

static void test_names(void **state) {
    assert_string_equal(proto_status_name(PROTO_PLAYING), "playing");
    assert_string_equal(proto_status_name(PROTO_WON), "won");
    assert_string_equal(proto_status_name(PROTO_OVER), "over");
    assert_string_equal(proto_status_name(PROTO_LEFT), "left");
    assert_string_equal(proto_dir_name(ENG_LEFT), "left");
    assert_string_equal(proto_dir_name(ENG_RIGHT), "right");
    assert_string_equal(proto_dir_name(ENG_UP), "up");
    assert_string_equal(proto_dir_name(ENG_DOWN), "down");
    /* A recorded game's letters: each direction and back, nothing else. */
    const eng_dir dirs[] = {ENG_LEFT, ENG_RIGHT, ENG_UP, ENG_DOWN};
    for (int i = 0; i < 4; i++) {
        eng_dir back = (eng_dir)-1;
        assert_int_equal(proto_dir_from_letter(proto_dir_letter(dirs[i]), &back), 0);
        assert_int_equal(back, dirs[i]);
        assert_int_equal(proto_dir_letter(dirs[i]), proto_dir_name(dirs[i])[0]);
    }
    eng_dir untouched = ENG_UP;
    assert_int_equal(proto_dir_from_letter('x', &untouched), -1);
    assert_int_equal(proto_dir_from_letter('\0', &untouched), -1);
    assert_int_equal(untouched, ENG_UP);
}

/* ------------------------------------------------------ out of memory --- */

/* jansson's allocator with a budget: after `budget` allocations every one
 * fails, so each allocation site of an encoder gets its turn to fail. */
static long budget = -1;

static void *budget_malloc(size_t n) {
    if (budget == 0) return NULL;
    if (budget > 0) budget--;
    return malloc(n);
}

/* Runs one encoder with 0, 1, 2, ... allowed allocations: each run must
 * return NULL until the budget suffices, then the golden line. ASan's leak
 * check at exit catches anything a failed run left behind. */
#define OOM_CHECK(call, want)                                                            \
    do {                                                                                 \
        char *s_ = NULL;                                                                 \
        size_t len_ = 0;                                                                 \
        long k_;                                                                         \
        for (k_ = 0; k_ < 10000 && !s_; k_++) {                                          \
            budget = k_;                                                                 \
            s_ = (call);                                                                 \
        }                                                                                \
        budget = -1;                                                                     \
        assert_true(k_ > 1);                                                             \
        expect_line(s_, len_, want);                                                     \
    } while (0)

static void test_out_of_memory(void **state) {
    json_set_alloc_funcs(budget_malloc, free);
    eng_board b = board_of(3, board3);
    proto_player p = {.id = 1, .name = "a", .board = &b, .status = PROTO_PLAYING};
    proto_settings st = {.players = 2, .size = 3, .target = 8, .time_limit = 0};
    eng_spawn sp = {.row = 0, .col = 1, .value = 2};
    proto_room_info ri = {.room = "AB12",
                          .players = 1,
                          .settings = st,
                          .started = true,
                          .seats_known = true,
                          .names = {"a"},
                          .scores = {4}};
    json_t *t = json_pack("{s:[i,s]}", "k", 1, "v");
    assert_non_null(t);

    OOM_CHECK(
        proto_enc_welcome(1, "a", "t", &len_),
        "{\"type\":\"welcome\",\"id\":1,\"name\":\"a\",\"token\":\"t\",\"proto\":4}\n");
    OOM_CHECK(
        proto_enc_room("AB12", &p, 1, &st, &len_),
        "{\"type\":\"room\",\"room\":\"AB12\",\"players\":[{\"id\":1,\"name\":\"a\"}],"
        "\"need\":2,\"size\":3,\"target\":8,\"time_limit\":0,\"rated\":false}\n");
    OOM_CHECK(proto_enc_start("AB12", 1, &st, &p, 1, "c", &len_),
              "{\"type\":\"start\",\"room\":\"AB12\",\"you\":1,\"size\":3,\"target\":8,"
              "\"time_limit\":0,\"players\":[{\"id\":1,\"name\":\"a\",\"board\":" BOARD3
              ",\"score\":0,\"moves\":0,\"max_tile\":4,\"status\":\"playing\"}],"
              "\"commit\":\"c\",\"rated\":false}\n");
    /* A name outside the validated set takes the general (jansson) path. */
    proto_player odd = p;
    odd.name = "a b";
    OOM_CHECK(proto_enc_state(&odd, true, 1, ENG_DOWN, true, 0, &sp, &len_),
              "{\"type\":\"state\",\"id\":1,\"name\":\"a b\",\"board\":" BOARD3
              ",\"score\":0,\"moves\":0,\"max_tile\":4,\"status\":\"playing\",\"seq\":1,"
              "\"dir\":\"down\",\"moved\":true,\"gained\":0,"
              "\"spawn\":{\"row\":0,\"col\":1,\"value\":2}}\n");
    OOM_CHECK(
        proto_enc_end("AB12", PROTO_END_TARGET, 1, &p, 1, CLIENT_SEED(3), "s", &len_),
        "{\"type\":\"end\",\"room\":\"AB12\",\"reason\":\"target\",\"winner\":1,"
        "\"results\":[{\"id\":1,\"name\":\"a\",\"board\":" BOARD3
        ",\"score\":0,\"moves\":0,\"max_tile\":4,\"status\":\"playing\"}],"
        "\"seed\":3,\"salt\":\"s\"}\n");
    OOM_CHECK(
        proto_enc_rooms(&ri, 1, &len_),
        "{\"type\":\"rooms\",\"rooms\":[{\"room\":\"AB12\",\"players\":1,\"need\":2,"
        "\"size\":3,\"target\":8,\"started\":true,\"names\":[\"a\"],\"scores\":[4],"
        "\"bots\":0,\"spectators\":0}]}\n");
    OOM_CHECK(proto_enc_pong(t, &len_), "{\"type\":\"pong\",\"t\":{\"k\":[1,\"v\"]}}\n");
    OOM_CHECK(proto_enc_error(PROTO_ERR_BUSY, "x\xff", &len_),
              "{\"type\":\"error\",\"code\":\"busy\",\"message\":\"x?\"}\n");
    OOM_CHECK(proto_enc_player("AB12", 1, true, PROTO_WON, &len_),
              "{\"type\":\"player\",\"room\":\"AB12\",\"id\":1,\"connected\":true,"
              "\"status\":\"won\"}\n");
    OOM_CHECK(proto_enc_queued(2, 1, &len_),
              "{\"type\":\"queued\",\"players\":2,\"waiting\":1}\n");
    OOM_CHECK(proto_enc_bye("shutdown", &len_),
              "{\"type\":\"bye\",\"reason\":\"shutdown\"}\n");
    OOM_CHECK(proto_enc_left(&len_), "{\"type\":\"left\"}\n");

    json_decref(t);
    json_set_alloc_funcs(malloc, free);
}

/* Arenas: the shared part once, then each receiver's `you`; `arenas` without standings;
 * `room` and `start` of an arena race say the arena. */
static void test_arena(void **state) {
    (void)state;
    proto_arena_row rows[] = {
        {.rank = 1,
         .id = 7,
         .name = "ann",
         .points = 5,
         .races = 3,
         .wins = 2,
         .streak = 2,
         .waiting = true},
        {.rank = 2, .id = 9, .name = "bo", .points = 0, .races = 1},
    };
    proto_arena_info a = {.code = "AB12CD",
                          .name = "Fri \"9\"",
                          .status = PROTO_ARENA_RUNNING,
                          .starts_ms = 1000,
                          .ends_ms = 301000,
                          .players = 4,
                          .size = 4,
                          .target = 2048,
                          .entrants = 2,
                          .rows = rows,
                          .nrows = 2};
    size_t slen, len;
    char *shared = proto_enc_arena_shared(&a, &slen);
    assert_non_null(shared);
    static const char head[] =
        "{\"type\":\"arena\",\"arena\":\"AB12CD\",\"name\":\"Fri \\\"9\\\"\","
        "\"status\":\"running\",\"starts\":1000,\"ends\":301000,\"players\":4,\"size\":4,"
        "\"target\":2048,\"entrants\":2,\"standings\":["
        "{\"rank\":1,\"id\":7,\"name\":\"ann\",\"points\":5,\"races\":3,\"wins\":2,"
        "\"streak\":2,\"waiting\":true},"
        "{\"rank\":2,\"id\":9,\"name\":\"bo\",\"points\":0,\"races\":1,\"wins\":0,"
        "\"streak\":0,\"waiting\":false}]";
    assert_int_equal(slen, strlen(head));
    assert_memory_equal(shared, head, slen);
    char want[1024];
    snprintf(want, sizeof want,
             "%s,\"you\":{\"rank\":2,\"id\":9,\"name\":\"bo\","
             "\"points\":0,\"races\":1,\"wins\":0,\"streak\":0,\"waiting\":false}}\n",
             head);
    expect_line(proto_arena_finish(shared, slen, &rows[1], &len), len, want);
    snprintf(want, sizeof want, "%s}\n", head);
    expect_line(proto_arena_finish(shared, slen, NULL, &len), len, want);
    free(shared);
    expect_line(
        proto_enc_arenas(&a, 1, &len), len,
        "{\"type\":\"arenas\",\"arenas\":[{\"type\":\"arena\",\"arena\":\"AB12CD\","
        "\"name\":\"Fri \\\"9\\\"\",\"status\":\"running\",\"starts\":1000,"
        "\"ends\":301000,\"players\":4,\"size\":4,\"target\":2048,\"entrants\":2}]}\n");
    proto_settings st = {.players = 2,
                         .size = 4,
                         .target = 2048,
                         .time_limit = 299,
                         .rated = true,
                         .arena = "AB12CD"};
    proto_player p = {.id = 7, .name = "ann"};
    expect_line(
        proto_enc_room("R1R1", &p, 1, &st, &len), len,
        "{\"type\":\"room\",\"room\":\"R1R1\",\"players\":[{\"id\":7,\"name\":\"ann\"}],"
        "\"need\":2,\"size\":4,\"target\":2048,\"time_limit\":299,\"rated\":true,"
        "\"arena\":\"AB12CD\"}\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_welcome),
        cmocka_unit_test(test_queued),
        cmocka_unit_test(test_room),
        cmocka_unit_test(test_start_race_3x3),
        cmocka_unit_test(test_start_omits_room_and_you),
        cmocka_unit_test(test_state_4x4),
        cmocka_unit_test(test_state_nulls),
        cmocka_unit_test(test_state_dirs),
        cmocka_unit_test(test_end_race),
        cmocka_unit_test(test_end_draw_and_solo),
        cmocka_unit_test(test_end_server_seed),
        cmocka_unit_test(test_player),
        cmocka_unit_test(test_left),
        cmocka_unit_test(test_rooms),
        cmocka_unit_test(test_rooms_seats),
        cmocka_unit_test(test_pong),
        cmocka_unit_test(test_pong_from_ping),
        cmocka_unit_test(test_bye),
        cmocka_unit_test(test_error_escaping),
        cmocka_unit_test(test_error_not_utf8),
        cmocka_unit_test(test_error_from_decoder),
        cmocka_unit_test(test_clamp),
        cmocka_unit_test(test_stable_and_large),
        cmocka_unit_test(test_state_fast_path_matches_jansson),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_accounts_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
