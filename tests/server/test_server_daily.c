/* test_server_daily.c - the daily challenge over JSON on one server: the same commit
 * and spawns for every account, the seed hidden until the day ends (the clock moved
 * by RACE2048_TEST_DAY_OFFSET), daily_played, account_needed, the daily board, the
 * day's seed kept across kill -9, race2048-replay on a revealed daily game. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "wsclient.h"

static const char *path_in(const char *dir, const char *name) {
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

/* A client named `name` that registered it; its key goes to key (33 bytes). */
static client *registered(th_server *s, const char *name, char *key) {
    client *c = client_named(s, name);
    client_send(c, "{\"type\":\"register\"}");
    json_t *r = client_expect(c, "registered", WAIT);
    snprintf(key, 33, "%s", jstr(r, "key"));
    return c;
}

static client *logged_in(th_server *s, const char *name, const char *key) {
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"hello\",\"name\":\"%s\",\"key\":\"%s\"}", name, key);
    assert_true(jbool(client_expect(c, "welcome", WAIT), "account"));
    return c;
}

static json_t *daily_board(client *c, const char *date) {
    if (date)
        client_send(
            c,
            "{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":4,\"date\":\"%s\"}",
            date);
    else
        client_send(c, "{\"type\":\"leaderboard\",\"board\":\"daily\"}");
    json_t *b = client_expect(c, "leaderboard", WAIT);
    assert_string_equal(jstr(b, "board"), "daily");
    assert_int_equal(jint(b, "size"), 4);
    return b;
}

static bool history_has(client *c, json_int_t game) {
    client_send(c, "{\"type\":\"history\",\"limit\":100}");
    json_t *games = jarr(client_expect(c, "history", WAIT), "games");
    for (size_t i = 0; i < json_array_size(games); i++)
        if (jint(json_array_get(games, i), "game") == game) return true;
    return false;
}

static const char *const dirs[] = {"left",  "up", "right", "down", "left", "down",
                                   "right", "up", "left",  "left", "down", "right"};
#define NDIRS (sizeof dirs / sizeof dirs[0])

/* The board's order: higher score, higher max tile, fewer moves. */
static void assert_board_order(const json_t *rows) {
    for (size_t i = 0; i + 1 < json_array_size(rows); i++) {
        const json_t *a = json_array_get(rows, i), *b = json_array_get(rows, i + 1);
        assert_int_equal(jint(a, "rank"), (json_int_t)i + 1);
        bool ok = jint(a, "score") > jint(b, "score") ||
                  (jint(a, "score") == jint(b, "score") &&
                   (jint(a, "max_tile") > jint(b, "max_tile") ||
                    (jint(a, "max_tile") == jint(b, "max_tile") &&
                     jint(a, "moves") <= jint(b, "moves"))));
        assert_true(ok);
    }
}

static void test_daily(void **state) {
    (void)state;
    if (harness_spread()) skip(); /* daily boards are local to a node for now */
    unsetenv("RACE2048_TEST_DAY_OFFSET");
    const char *dir = harness_temp_dir("daily");
    const char *journal = path_in(dir, "j.jrn"), *log = path_in(dir, "log.txt");
    harness_server_stderr(log);
    th_server *s = SERVER("--journal", journal, "--log-level", "debug");

    /* A guest may not. */
    client *guest = client_named(s, "guest");
    client_send(guest, "{\"type\":\"daily\"}");
    client_expect_error(guest, "account_needed", WAIT);

    char alice_key[33], bob_key[33];
    client *alice = registered(s, "Alice", alice_key);
    client *bob = registered(s, "Bob", bob_key);
    client_send(alice, "{\"type\":\"daily\",\"size\":4}");
    json_t *a_start = client_expect(alice, "start", WAIT);
    client_send(bob, "{\"type\":\"daily\"}");
    json_t *b_start = client_expect(bob, "start", WAIT);
    const char *today = jstr(a_start, "daily");
    assert_int_equal(strlen(today), 10);
    assert_string_equal(jstr(b_start, "daily"), today);
    assert_int_equal(jint(a_start, "target"), 2048);
    /* The same commit and the same first board: the day's seed and salt. */
    assert_string_equal(jstr(a_start, "commit"), jstr(b_start, "commit"));
    char commit[65];
    snprintf(commit, sizeof commit, "%s", jstr(a_start, "commit"));
    assert_true(
        jequal(json_object_get(json_array_get(jarr(a_start, "players"), 0), "board"),
               json_object_get(json_array_get(jarr(b_start, "players"), 0), "board")));
    /* The same spawns for the same moves. */
    for (size_t i = 0; i < NDIRS; i++) {
        json_t *sa = client_move(alice, dirs[i]);
        json_t *sb = client_move(bob, dirs[i]);
        assert_true(jequal(json_object_get(sa, "spawn"), json_object_get(sb, "spawn")));
        assert_true(jequal(json_object_get(sa, "board"), json_object_get(sb, "board")));
    }
    /* Bob goes on a little: the board ranks his game first. */
    client_move_any(bob);
    client_move_any(bob);

    /* A daily game's end hides seed and salt until the day is over. */
    client_send(alice, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(alice, "end", "state", WAIT);
    assert_true(jnull(end, "seed"));
    assert_true(jnull(end, "salt"));
    assert_true(jint(end, "reveal_at") > 0);
    client_expect(alice, "left", WAIT);
    client_send(bob, "{\"type\":\"leave\"}");
    end = client_expect_skip(bob, "end", "state", WAIT);
    assert_true(jnull(end, "seed"));

    /* Over a WebSocket too: a guest may not, an account plays the day's tiles. */
    client *ws = ws_connect(s);
    ws_send(ws, "{\"type\":\"daily\"}");
    ws_expect_skip(ws, "error", "welcome", WAIT);
    ws_send(ws, "{\"type\":\"hello\",\"name\":\"Bob\",\"key\":\"%s\"}", bob_key);
    ws_expect(ws, "welcome", WAIT);
    ws_send(ws, "{\"type\":\"daily\"}");
    assert_string_equal(jstr(ws_expect(ws, "error", WAIT), "code"), "daily_played");
    ws_send(ws, "{\"type\":\"daily\",\"size\":6}");
    json_t *ws_start = ws_expect(ws, "start", WAIT);
    assert_string_equal(jstr(ws_start, "daily"), today);
    ws_send(ws, "{\"type\":\"leave\"}");
    json_t *ws_end = ws_expect_skip(ws, "end", "state", WAIT);
    assert_true(jnull(ws_end, "seed"));
    assert_true(jint(ws_end, "reveal_at") > 0);

    /* One per account, day and size, even after a leave; another size is free. */
    client_send(alice, "{\"type\":\"daily\",\"size\":4}");
    client_expect_error(alice, "daily_played", WAIT);
    client_send(alice, "{\"type\":\"daily\",\"size\":5}");
    json_t *five = client_expect(alice, "start", WAIT);
    assert_string_not_equal(jstr(five, "commit"), commit);
    client_send(alice, "{\"type\":\"leave\"}");
    client_expect_skip(alice, "left", "end state", WAIT);

    /* The board: both games, best first, no seed yet. */
    json_t *board = daily_board(alice, NULL);
    assert_string_equal(jstr(board, "date"), today);
    json_t *rows = jarr(board, "rows");
    assert_int_equal(json_array_size(rows), 2);
    assert_board_order(rows);
    assert_true(jnull(board, "seed"));
    assert_true(jnull(board, "salt"));
    json_int_t game = 0;
    for (size_t i = 0; i < 2; i++)
        if (!strcmp(jstr(json_array_get(rows, i), "name"), "Alice"))
            game = jint(json_array_get(rows, i), "game");
    assert_true(game > 0);
    int status;
    char target[128];
    snprintf(target, sizeof target, "/api/leaderboard?board=daily&size=4&date=%s", today);
    json_t *api = http_api_get(s, target, &status);
    assert_int_equal(status, 200);
    assert_true(jequal(jarr(api, "rows"), rows));
    assert_true(jnull(api, "seed"));
    snprintf(target, sizeof target, "/api/leaderboard?board=daily&date=%s0", today);
    http_api_get(s, target, &status);
    assert_int_equal(status, 404);
    http_api_get(s, "/api/leaderboard?board=daily&size=9", &status);
    assert_int_equal(status, 404);
    client_send(alice,
                "{\"type\":\"leaderboard\",\"board\":\"daily\",\"date\":\"2026-13-01\"}");
    client_expect_error(alice, "bad_message", WAIT);

    /* The profile's best counts a daily game (as a solo game with a server seed). */
    client_send(alice, "{\"type\":\"profile\",\"name\":\"Alice\"}");
    json_t *best = jarr(client_expect(alice, "profile", WAIT), "best");
    bool has_four = false;
    for (size_t i = 0; i < json_array_size(best); i++)
        has_four |= jint(json_array_get(best, i), "size") == 4 &&
                    jint(json_array_get(best, i), "game") == game;
    assert_true(has_four);

    /* history and replay do not show it until the day is over. */
    assert_false(history_has(alice, game));
    client_send(alice, "{\"type\":\"replay\",\"game\":%lld}", (long long)game);
    client_expect_error(alice, "game_not_found", WAIT);
    snprintf(target, sizeof target, "/api/game/%lld", (long long)game);
    http_api_get(s, target, &status);
    assert_int_equal(status, 404);

    /* A daily game running at a kill -9 goes on as one. */
    char dave_key[33];
    client *dave = registered(s, "Dave", dave_key);
    client_send(dave, "{\"type\":\"daily\"}");
    client_expect(dave, "start", WAIT);
    client_move_any(dave);
    char dave_token[80];
    snprintf(dave_token, sizeof dave_token, "%s", client_token(dave));
    char erin_key[33]; /* `registered` is sent once durable: so is all before it */
    registered(s, "Erin", erin_key);

    /* kill -9: the day's seed is kept (the same commit for a new account), and
     * who has played (the board too). */
    server_kill(s);
    s = SERVER("--journal", journal, "--log-level", "debug");
    dave = client_connect(s);
    client_send(dave, "{\"type\":\"resume\",\"token\":\"%s\"}", dave_token);
    json_t *resumed = client_expect_skip(dave, "start", "welcome", WAIT);
    assert_string_equal(jstr(resumed, "commit"), commit);
    client_send(dave, "{\"type\":\"leave\"}");
    end = client_expect_skip(dave, "end", "state", WAIT);
    assert_true(jnull(end, "seed"));
    assert_true(jnull(end, "salt"));
    char carol_key[33];
    client *carol = registered(s, "Carol", carol_key);
    client_send(carol, "{\"type\":\"daily\"}");
    json_t *c_start = client_expect(carol, "start", WAIT);
    assert_string_equal(jstr(c_start, "commit"), commit);
    client_send(carol, "{\"type\":\"leave\"}");
    client_expect_skip(carol, "left", "end state", WAIT);
    alice = logged_in(s, "Alice", alice_key);
    assert_false(history_has(alice, game));
    client_send(alice, "{\"type\":\"daily\"}");
    client_expect_error(alice, "daily_played", WAIT);
    board = daily_board(alice, today);
    assert_int_equal(json_array_size(jarr(board, "rows")), 4); /* Alice Bob Carol Dave */
    assert_board_order(jarr(board, "rows"));
    server_stop(s);

    /* The next day (the clock moved by a day): shown, with seed and salt. */
    setenv("RACE2048_TEST_DAY_OFFSET", "1", 1);
    s = SERVER("--journal", journal, "--log-level", "debug");
    unsetenv("RACE2048_TEST_DAY_OFFSET");
    client *any = client_named(s, "anyone");
    assert_true(history_has(any, game));
    client_send(any, "{\"type\":\"replay\",\"game\":%lld}", (long long)game);
    json_t *replay = client_expect(any, "replay", WAIT);
    assert_string_equal(jstr(replay, "commit"), commit);
    assert_int_equal(strlen(jstr(replay, "seed")), 64);
    assert_int_equal(strlen(jstr(replay, "salt")), 32);
    snprintf(target, sizeof target, "/api/game/%lld", (long long)game);
    json_t *api_game = http_api_get(s, target, &status);
    assert_int_equal(status, 200);
    assert_string_equal(jstr(api_game, "seed"), jstr(replay, "seed"));
    board = daily_board(any, today);
    assert_int_equal(json_array_size(jarr(board, "rows")), 4);
    assert_string_equal(jstr(board, "seed"), jstr(replay, "seed"));
    assert_string_equal(jstr(board, "salt"), jstr(replay, "salt"));
    server_stop(s);

    /* The seed is in no log line; race2048-replay checks the revealed games. */
    char *text = harness_read_file(log, NULL);
    assert_null(strstr(text, jstr(replay, "seed")));
    free(text);
    const char *replay_tool = getenv("RACE2048_REPLAY");
    assert_non_null(replay_tool);
    char *out = NULL;
    assert_int_equal(harness_run((const char *const[]){replay_tool, journal, NULL}, &out),
                     0);
    free(out);
    harness_server_stderr(NULL);
}

/* A solo game in which a board changes (two tiles on a 3x3 board). */
#define PLAYED_SOLO                                                                      \
    "{\"type\":\"solo\",\"size\":3}\n{\"type\":\"move\",\"dir\":\"left\"}\n"             \
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"leave\"}"

/* Compaction keeps the day's seed and who has played (then kill -9). */
static void test_daily_compaction(void **state) {
    (void)state;
    if (harness_spread()) skip();
    unsetenv("RACE2048_TEST_DAY_OFFSET");
    const char *dir = harness_temp_dir("daily_compact");
    const char *journal = path_in(dir, "j.jrn"), *archive = path_in(dir, "j.jrn.results");
    const char *const flags[] = {
        "--journal", journal, "--journal-max", "65536", "--journal-sync-ms", "5", NULL};
    th_server *s = server_start(flags);
    char alice_key[33], bob_key[33];
    client *alice = registered(s, "Alice", alice_key);
    client_send(alice, "{\"type\":\"daily\",\"size\":3}");
    json_t *start = client_expect(alice, "start", WAIT);
    char commit[65];
    snprintf(commit, sizeof commit, "%s", jstr(start, "commit"));
    client_move_any(alice);
    client_send(alice, "{\"type\":\"leave\"}");
    client_expect_skip(alice, "left", "end state", WAIT);
    /* Games until the journal has been compacted (its archive exists). */
    client *burst = client_named(s, "burst");
    struct stat sb;
    int64_t deadline = harness_now_ms() + harness_ms(4 * WAIT);
    while (stat(archive, &sb) < 0) {
        if (harness_remaining(deadline) == 0) fail_msg("the journal was never compacted");
        for (int g = 0; g < 50; g++)
            client_send(burst, PLAYED_SOLO);
        for (int g = 0; g < 50; g++)
            client_expect_skip(burst, "left", "start state end", WAIT);
    }
    /* One more record after the compaction, durable: so is the compaction. */
    client *bob = registered(s, "Bob", bob_key);
    client_close(bob);
    server_kill(s);
    s = server_start(flags);
    alice = logged_in(s, "Alice", alice_key);
    client_send(alice, "{\"type\":\"daily\",\"size\":3}");
    client_expect_error(alice, "daily_played", WAIT);
    bob = logged_in(s, "Bob", bob_key);
    client_send(bob, "{\"type\":\"daily\",\"size\":3}");
    assert_string_equal(jstr(client_expect(bob, "start", WAIT), "commit"), commit);
    client_send(bob, "{\"type\":\"leave\"}");
    client_expect_skip(bob, "left", "end state", WAIT);
    client_send(bob, "{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":3}");
    json_t *rows = jarr(client_expect(bob, "leaderboard", WAIT), "rows");
    assert_int_equal(json_array_size(rows), 2);
    server_stop(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_daily, harness_teardown),
        cmocka_unit_test_teardown(test_daily_compaction, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
