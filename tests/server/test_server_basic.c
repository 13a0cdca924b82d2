/* test_server_basic.c - race2048d over loopback: naming, errors, solo games, limits,
 * shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "checks.h"
#include "harness.h"

/* ------------------------------------------------------------- naming --- */

static void test_hello_welcome_and_rename(void **state) {
    th_server *s = SERVER("--max-clients", "100");
    client *c = client_connect(s);
    json_t *w1 = client_hello(c, "ann");
    assert_true(jint(w1, "id") > 0);
    assert_int_equal(jint(w1, "proto"), 4);
    assert_true(strlen(jstr(w1, "token")) >= 16);

    json_t *w2 = client_hello(c, "Bob_2-x");
    assert_int_equal(jint(w2, "id"), jint(w1, "id"));
    assert_string_equal(jstr(w2, "name"), "Bob_2-x");
    assert_string_equal(jstr(w2, "token"), jstr(w1, "token"));

    /* The new name is the one others see. */
    client_send(c, "{\"type\":\"create\"}");
    json_t *room = client_expect(c, "room", WAIT);
    assert_string_equal(jstr(json_array_get(jarr(room, "players"), 0), "name"),
                        "Bob_2-x");
    client_sync(c);
}

static void test_auto_welcome_before_first_reply(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"ping\",\"t\":{\"a\":[1,\"x\"]}}");
    json_t *w = client_expect(c, "welcome", WAIT);
    char want[32];
    snprintf(want, sizeof want, "player-%lld", (long long)jint(w, "id"));
    assert_string_equal(jstr(w, "name"), want);
    json_t *pong = client_expect(c, "pong", WAIT);
    json_t *t = json_pack("{s:[i,s]}", "a", 1, "x");
    assert_true(jequal(jobj(pong, "t"), t));
    json_decref(t);

    /* Only one welcome: the next reply comes alone; a ping without t gets null. */
    client_send(c, "{\"type\":\"ping\"}");
    pong = client_expect(c, "pong", WAIT);
    assert_true(jnull(pong, "t"));

    /* A request that fails is a first reply too. */
    client *d = client_connect(s);
    client_send(d, "{\"type\":\"move\",\"dir\":\"up\"}");
    client_expect(d, "welcome", WAIT);
    client_expect_error(d, "not_playing", WAIT);
    client_sync(d);
}

static void test_bad_hello_gets_no_welcome(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"hello\",\"name\":\"no spaces\"}");
    client_expect_error(c, "bad_message", WAIT);
    client_send(c, "{\"type\":\"hello\",\"name\":\"seventeen_chars_x\"}");
    client_expect_error(c, "bad_message", WAIT);
    client_send(c, "{\"type\":\"hello\",\"name\":\"\"}");
    client_expect_error(c, "bad_message", WAIT);
    /* Still unnamed: the first other request brings the automatic welcome. */
    client_send(c, "{\"type\":\"rooms\"}");
    client_expect(c, "welcome", WAIT);
    json_t *rooms = client_expect(c, "rooms", WAIT);
    assert_int_equal(json_array_size(jarr(rooms, "rooms")), 0);
}

static void test_ids_unique(void **state) {
    th_server *s = SERVER(NULL);
    enum { N = 24 };
    json_int_t ids[N];
    char tokens[N][80];
    for (int i = 0; i < N; i++) {
        client *c = client_connect(s);
        json_t *w;
        if (i % 2) {
            w = client_hello(c, "same");
        } else {
            client_send(c, "{\"type\":\"ping\"}");
            w = client_expect(c, "welcome", WAIT);
        }
        ids[i] = jint(w, "id");
        snprintf(tokens[i], sizeof tokens[i], "%s", jstr(w, "token"));
        for (int k = 0; k < i; k++) {
            assert_true(ids[k] != ids[i]);
            assert_string_not_equal(tokens[k], tokens[i]);
        }
        if (i % 3 == 0) client_close(c); /* ids are not reused after a disconnect */
    }
}

/* -------------------------------------------------------------- errors --- */

/* Sends line and expects exactly one error with code (then nothing else). */
static void expect_one_error(client *c, const char *line, const char *code) {
    client_send(c, "%s", line);
    json_t *e = client_expect(c, "error", WAIT);
    if (strcmp(jstr(e, "code"), code) != 0)
        fail_msg("%s: expected %s, got %s (%s)", line, code, jstr(e, "code"),
                 jstr(e, "message"));
    client_sync(c);
}

/* The same for a field error, whose message must name the field. */
static void expect_field_error(client *c, const char *line, const char *code,
                               const char *field) {
    client_send(c, "%s", line);
    json_t *e = client_expect_error(c, code, WAIT);
    if (!strstr(jstr(e, "message"), field))
        fail_msg("%s: the message \"%s\" does not name %s", line, jstr(e, "message"),
                 field);
    client_sync(c);
}

static void test_request_errors(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "err");

    /* bad_json: not JSON, not an object, invalid UTF-8, a number too big to hold. */
    expect_one_error(c, "{\"type\":\"ping\"", "bad_json");
    expect_one_error(c, "{nope}", "bad_json");
    expect_one_error(c, "[1,2,3]", "bad_json");
    expect_one_error(c, "\"ping\"", "bad_json");
    expect_one_error(c, "{\"type\":\"hello\",\"name\":\"\xff\xfe\"}", "bad_json");
    expect_one_error(c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":1e999}", "bad_json");
    expect_one_error(
        c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":123456789012345678901234567890}",
        "bad_json");
    /* unknown_type, and it comes before field checks. */
    expect_one_error(c, "{\"type\":\"fly\"}", "unknown_type");
    expect_one_error(c, "{\"type\":\"fly\",\"size\":\"big\"}", "unknown_type");
    expect_one_error(c, "{\"type\":\"PING\"}", "unknown_type");
    /* bad_message: missing or ill-typed type, and fields of every kind. */
    expect_field_error(c, "{}", "bad_message", "type");
    expect_field_error(c, "{\"type\":7}", "bad_message", "type");
    expect_field_error(c, "{\"type\":\"solo\",\"size\":\"4\"}", "bad_message", "size");
    expect_field_error(c, "{\"type\":\"solo\",\"size\":4.0}", "bad_message", "size");
    expect_field_error(c, "{\"type\":\"solo\",\"size\":2}", "bad_message", "size");
    expect_field_error(c, "{\"type\":\"solo\",\"size\":9}", "bad_message", "size");
    expect_field_error(c, "{\"type\":\"solo\",\"target\":12}", "bad_message", "target");
    expect_field_error(c, "{\"type\":\"solo\",\"target\":4}", "bad_message", "target");
    expect_field_error(c, "{\"type\":\"solo\",\"target\":2097152}", "bad_message",
                       "target");
    expect_field_error(c, "{\"type\":\"solo\",\"seed\":-1}", "bad_message", "seed");
    expect_field_error(c, "{\"type\":\"solo\",\"seed\":4294967296}", "bad_message",
                       "seed");
    expect_field_error(c, "{\"type\":\"create\",\"players\":1}", "bad_message",
                       "players");
    expect_field_error(c, "{\"type\":\"create\",\"players\":9}", "bad_message",
                       "players");
    expect_field_error(c, "{\"type\":\"create\",\"time_limit\":86401}", "bad_message",
                       "time_limit");
    expect_field_error(c, "{\"type\":\"create\",\"time_limit\":-1}", "bad_message",
                       "time_limit");
    expect_field_error(c, "{\"type\":\"quick\",\"players\":\"2\"}", "bad_message",
                       "players");
    expect_field_error(c, "{\"type\":\"join\"}", "bad_message", "room");
    expect_field_error(c, "{\"type\":\"join\",\"room\":42}", "bad_message", "room");
    expect_field_error(c, "{\"type\":\"watch\",\"room\":null}", "bad_message", "room");
    expect_field_error(c, "{\"type\":\"resume\"}", "bad_message", "token");
    expect_field_error(c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":-1}", "bad_message",
                       "seq");
    expect_field_error(c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":9007199254740992}",
                       "bad_message", "seq");
    expect_field_error(c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":1.5}", "bad_message",
                       "seq");
    /* bad_dir, and it comes before the state check (not_playing). */
    expect_field_error(c, "{\"type\":\"move\",\"dir\":\"north\"}", "bad_dir", "dir");
    expect_field_error(c, "{\"type\":\"move\",\"dir\":\"UP\"}", "bad_dir", "dir");
    /* Unknown fields are ignored. */
    client_send(c, "{\"type\":\"ping\",\"t\":5,\"extra\":[1,{}]}");
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 5);
    /* Still connected, still the same player. */
    client_hello(c, "err2");
}

static void test_state_errors(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "lost");
    expect_one_error(c, "{\"type\":\"move\",\"dir\":\"left\"}", "not_playing");
    expect_one_error(c, "{\"type\":\"move\",\"dir\":\"left\",\"seq\":3}", "not_playing");
    expect_one_error(c, "{\"type\":\"join\",\"room\":\"ZZZZ\"}", "room_not_found");
    expect_one_error(c, "{\"type\":\"join\",\"room\":\"zzzzz\"}", "room_not_found");
    expect_one_error(c, "{\"type\":\"watch\",\"room\":\"ZZZZ\"}", "room_not_found");
    expect_one_error(c, "{\"type\":\"resume\",\"token\":\"0123456789abcdef\"}",
                     "bad_token");
    expect_one_error(c, "{\"type\":\"rematch\"}", "not_playing");
    /* A failed request changes nothing: still in the lobby, same name. */
    json_t *w = client_hello(c, "lost");
    client_send(c, "{\"type\":\"leave\"}");
    client_expect(c, "left", WAIT);
    client_sync(c);
    assert_true(jint(w, "id") > 0);
}

/* Framing: empty lines are ignored, \r\n is a line end, lines may come
 * several in one packet or split over many. */
static void test_framing(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "frames");
    static const char burst[] =
        "\n\r\n{\"type\":\"ping\",\"t\":1}\r\n\n"
        "{\"type\":\"ping\",\"t\":2}\n{\"type\":\"ping\",\"t\":3}";
    client_send_raw(c, burst, sizeof burst - 1, false);
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 1);
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 2);
    static const char rest[] = "\r\n{\"type\":\"ping\",\"t\":4}\n";
    for (size_t i = 0; i < sizeof rest - 1; i++)
        client_send_raw(c, rest + i, 1, false);
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 3);
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 4);
    /* A NUL byte inside a line is not JSON. */
    static const char nul[] = "{\"type\":\"ping\"}\0\n";
    client_send_raw(c, nul, sizeof nul - 1, false);
    client_expect_error(c, "bad_json", WAIT);
    client_sync(c);
}

/* A JSON client that speaks late may get text-mode bytes first; once its
 * first line arrives it is in JSON mode, and skipping every line that does
 * not start with '{' (as protocol/README.md tells clients) loses nothing. */
static void test_late_json_client(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    /* Bytes arrive unasked: the server took the silence for a human. They
     * stay in the client's buffer, as in any line-reading client. */
    assert_true(client_peek_raw(c, WAIT) > 0);
    client_send(c, "{\"type\":\"ping\",\"t\":7}");
    client_expect(c, "welcome", WAIT);
    assert_int_equal(jint(client_expect(c, "pong", WAIT), "t"), 7);
    client_sync(c);
}

/* A request that fails changes nothing, wherever the player is; and field
 * checks come before state checks (bad_message, not busy). */
static void test_failed_request_changes_nothing(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b;
    a = client_named(s, "a");
    b = client_named(s, "b");
    client_send(a, "{\"type\":\"create\"}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    expect_one_error(a, "{\"type\":\"solo\",\"size\":99}", "bad_message");
    expect_one_error(a, "{\"type\":\"quick\",\"players\":1}", "bad_message");
    expect_one_error(a, "{\"type\":\"watch\",\"room\":\"ZZZZ\"}", "room_not_found");
    expect_one_error(a, "{\"type\":\"join\",\"room\":\"ZZZZ\"}", "room_not_found");
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(b, "start", "room", WAIT);
    client_expect_skip(a, "start", "room", WAIT); /* a was still seated */
    expect_one_error(a, "{\"type\":\"join\",\"room\":5}", "bad_message");
    expect_one_error(a, "{\"type\":\"create\",\"size\":1}", "bad_message");
    expect_one_error(a, "{\"type\":\"move\",\"dir\":\"sideways\"}", "bad_dir");
    expect_one_error(a, "{\"type\":\"solo\"}", "busy");
    expect_one_error(a, "{\"type\":\"rematch\"}", "not_playing");
    client_sync(b);
}

/* ---------------------------------------------------------------- solo --- */

static void test_solo_seed_reproducible(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b;
    a = client_named(s, "a");
    b = client_named(s, "b");
    client_send(a, "{\"type\":\"solo\",\"size\":5,\"seed\":123}");
    client_send(b, "{\"type\":\"solo\",\"size\":5,\"seed\":123}");
    json_t *sa = client_expect(a, "start", WAIT), *sb = client_expect(b, "start", WAIT);
    assert_false(jhas(sa, "room"));
    assert_int_equal(jint(sa, "size"), 5);
    assert_int_equal(jint(sa, "target"), 2048);
    assert_int_equal(jint(sa, "time_limit"), 0);
    assert_false(jhas(sa, "seed"));
    json_t *pa = json_array_get(jarr(sa, "players"), 0);
    json_t *pb = json_array_get(jarr(sb, "players"), 0);
    check_player(pa, 5);
    assert_int_equal(jint(sa, "you"), jint(pa, "id"));
    assert_true(jequal(jarr(pa, "board"), jarr(pb, "board")));
    /* A fresh salt for every game: the same seed, different commitments. */
    assert_string_not_equal(jstr(sa, "commit"), jstr(sb, "commit"));

    eng_game g;
    assert_int_equal(
        eng_game_new(&g, 5, &(eng_seed){.kind = ENG_SEED_CLIENT, .client = 123}), 0);
    check_board(jarr(pa, "board"), &g.board);

    /* Another seed, another board (for this pair of seeds). */
    client_send(b, "{\"type\":\"solo\",\"size\":5,\"seed\":124}");
    client_expect(b, "end", WAIT); /* the implicit leave ended the first game */
    json_t *sc = client_expect(b, "start", WAIT);
    assert_int_equal(
        eng_game_new(&g, 5, &(eng_seed){.kind = ENG_SEED_CLIENT, .client = 124}), 0);
    check_board(jarr(json_array_get(jarr(sc, "players"), 0), "board"), &g.board);
}

/* Plays a solo game on the server and the engine side by side. */
static void test_solo_replay_matches_engine(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    json_int_t id = jint(client_hello(c, "replay"), "id");
    client_send(c, "{\"type\":\"solo\",\"seed\":4000000000}");
    json_t *start = client_expect(c, "start", WAIT);
    eng_game g;
    assert_int_equal(
        eng_game_new(&g, 4, &(eng_seed){.kind = ENG_SEED_CLIENT, .client = 4000000000u}),
        0);
    check_board(jarr(json_array_get(jarr(start, "players"), 0), "board"), &g.board);

    static const char *const script[] = {"left", "left", "up", "right", "down", "down"};
    int noops = 0;
    for (int i = 0; i < 60; i++) {
        const char *dir = script[i % 6];
        json_t *st = client_move(c, dir);
        eng_move_result res = eng_game_move(&g, dir_of(dir), NULL);
        check_player(st, 4);
        assert_int_equal(jint(st, "id"), id);
        assert_int_equal(jbool(st, "moved"), res.moved);
        assert_int_equal(jint(st, "gained"), (json_int_t)res.gained);
        assert_int_equal(jint(st, "score"), (json_int_t)g.score);
        assert_int_equal(jint(st, "moves"), (json_int_t)g.moves);
        check_board(jarr(st, "board"), &g.board);
        if (res.moved) {
            json_t *sp = jobj(st, "spawn");
            assert_int_equal(jint(sp, "row"), res.spawn.row);
            assert_int_equal(jint(sp, "col"), res.spawn.col);
            assert_int_equal(jint(sp, "value"), (json_int_t)res.spawn.value);
        } else {
            assert_true(jnull(st, "spawn"));
            assert_int_equal(jint(st, "gained"), 0);
            noops++;
        }
        if (eng_is_over(&g.board)) break;
    }
    assert_true(noops > 0); /* the script has repeats: some moves must be no-ops */

    /* A move without seq gets "seq":null. */
    client_send(c, "{\"type\":\"move\",\"dir\":\"left\"}");
    json_t *st = client_expect(c, "state", WAIT);
    assert_true(jnull(st, "seq"));
    client_send(c, "{\"type\":\"move\",\"dir\":\"up\",\"seq\":9007199254740991}");
    st = client_expect(c, "state", WAIT);
    assert_int_equal(jint(st, "seq"), 9007199254740991ll);
}

static void test_solo_until_over(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    json_int_t id = jint(client_hello(c, "over"), "id");
    client_send(c, "{\"type\":\"solo\",\"size\":3,\"target\":8,\"seed\":99}");
    json_t *start = client_expect(c, "start", WAIT);
    assert_int_equal(jint(start, "target"), 8);
    const char *commit = jstr(start, "commit");
    bool won_seen = false, moved_after_won = false;
    json_t *last = NULL;
    for (int i = 0; i < 2000; i++) {
        last = client_move_any(c);
        if (won_seen) moved_after_won = true;
        if (!strcmp(jstr(last, "status"), "won")) won_seen = true;
        if (!strcmp(jstr(last, "status"), "over")) break;
    }
    assert_string_equal(jstr(last, "status"), "over");
    /* The game went on after the target (solo never ends at the target). */
    assert_true(won_seen);
    assert_true(moved_after_won);
    json_t *end = client_expect(c, "end", WAIT);
    assert_false(jhas(end, "room"));
    assert_string_equal(jstr(end, "reason"), "all_over");
    assert_int_equal(jint(end, "winner"), id);
    assert_int_equal(jint(end, "seed"), 99);
    json_t *res = json_array_get(jarr(end, "results"), 0);
    assert_string_equal(jstr(res, "status"), "over");
    assert_true(jequal(jarr(res, "board"), jarr(last, "board")));
    check_commit(commit, end);
    check_ranking(end);
    /* Over: moves are refused. */
    client_send(c, "{\"type\":\"move\",\"dir\":\"left\"}");
    client_expect_error(c, "not_playing", WAIT);
    client_sync(c);
}

static void test_solo_leave(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    json_int_t id = jint(client_hello(c, "quitter"), "id");
    client_send(c, "{\"type\":\"solo\"}");
    json_t *start = client_expect(c, "start", WAIT);
    client_move_any(c);
    client_send(c, "{\"type\":\"leave\"}");
    json_t *end = client_expect(c, "end", WAIT);
    assert_string_equal(jstr(end, "reason"), "all_over");
    assert_int_equal(jint(end, "winner"), id);
    assert_string_equal(jstr(json_array_get(jarr(end, "results"), 0), "status"), "left");
    check_commit(jstr(start, "commit"), end);
    client_expect(c, "left", WAIT);
    client_sync(c);
    /* A leave with nothing to leave is still answered. */
    client_send(c, "{\"type\":\"leave\"}");
    client_expect(c, "left", WAIT);
    client_sync(c);
}

static void test_rooms_listing(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *solo;
    a = client_named(s, "a");
    b = client_named(s, "b");
    solo = client_named(s, "solo");
    client_send(solo, "{\"type\":\"solo\"}");
    client_expect(solo, "start", WAIT);
    client_send(b, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(b, "rooms", WAIT), "rooms")), 0);

    client_send(a, "{\"type\":\"create\",\"players\":3,\"size\":5,\"target\":256,\"time_"
                   "limit\":60}");
    json_t *room = client_expect(a, "room", WAIT);
    const char *code = jstr(room, "room");
    assert_true(strlen(code) >= 4 && strlen(code) <= 8);
    for (const char *p = code; *p; p++)
        assert_true((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'));
    assert_int_equal(jint(room, "need"), 3);
    assert_int_equal(jint(room, "size"), 5);
    assert_int_equal(jint(room, "target"), 256);
    assert_int_equal(jint(room, "time_limit"), 60);
    assert_int_equal(json_array_size(jarr(room, "players")), 1);

    client_send(b, "{\"type\":\"rooms\"}");
    json_t *list = jarr(client_expect(b, "rooms", WAIT), "rooms");
    assert_int_equal(json_array_size(list), 1);
    json_t *row = json_array_get(list, 0);
    assert_string_equal(jstr(row, "room"), code);
    assert_int_equal(jint(row, "players"), 1);
    assert_int_equal(jint(row, "need"), 3);
    assert_int_equal(jint(row, "size"), 5);
    assert_int_equal(jint(row, "target"), 256);
    assert_false(jbool(row, "started"));

    /* Join by a lower-case code: codes are case-insensitive on input. */
    char lower[16];
    snprintf(lower, sizeof lower, "%s", code);
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", lower);
    assert_int_equal(json_array_size(jarr(client_expect(b, "room", WAIT), "players")), 2);
    assert_int_equal(json_array_size(jarr(client_expect(a, "room", WAIT), "players")), 2);
    client_send(solo, "{\"type\":\"rooms\"}");
    row = json_array_get(jarr(client_expect(solo, "rooms", WAIT), "rooms"), 0);
    assert_int_equal(jint(row, "players"), 2);

    /* The reply is made once and kept: it must follow every change. */
    client *c = client_named(s, "c");
    client_send(c, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(c, "start", "room", WAIT);
    client_send(solo, "{\"type\":\"rooms\"}");
    list = jarr(client_expect(solo, "rooms", WAIT), "rooms");
    assert_int_equal(json_array_size(list), 1);
    assert_int_equal(jint(json_array_get(list, 0), "players"), 3);
    assert_true(jbool(json_array_get(list, 0), "started"));
    client_send(a, "{\"type\":\"leave\"}");
    client_expect_skip(a, "left", "start room player", WAIT);
    client_send(b, "{\"type\":\"leave\"}");
    client_expect_skip(b, "left", "start room player end", WAIT);
    client_expect_skip(c, "end", "start room player", WAIT);
    client_send(solo, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(solo, "rooms", WAIT), "rooms")),
                     0);
}

/* ------------------------------------------------------- limits, shutdown --- */

static void test_line_too_long(void **state) {
    th_server *s = SERVER("--max-line", "64");
    client *c = client_named(s, "long");
    /* Exactly 64 bytes, with \r\n: accepted. */
    char line[128];
    int n = snprintf(line, sizeof line, "{\"type\":\"ping\",\"t\":\"%s\"}", "");
    int pad = 64 - n;
    char t[80];
    memset(t, 'x', (size_t)pad);
    t[pad] = '\0';
    n = snprintf(line, sizeof line, "{\"type\":\"ping\",\"t\":\"%s\"}\r\n", t);
    assert_int_equal(n, 66);
    client_send_raw(c, line, (size_t)n, false);
    assert_string_equal(jstr(client_expect(c, "pong", WAIT), "t"), t);
    /* 65 bytes: the error, then the connection closes. */
    n = snprintf(line, sizeof line, "{\"type\":\"ping\",\"t\":\"%sx\"}\n", t);
    client_send_raw(c, line, (size_t)n, false);
    client_expect_error(c, "line_too_long", WAIT);
    client_expect_eof(c, WAIT);

    /* A line that never ends is cut off too, without waiting for its end. */
    client *d = client_connect(s);
    char junk[300];
    memset(junk, 'a', sizeof junk);
    junk[0] = '{';
    client_send_raw(d, junk, sizeof junk, false);
    client_expect_error(d, "line_too_long", WAIT);
    client_expect_eof(d, WAIT);
}

static void test_server_full(void **state) {
    if (harness_spread()) skip(); /* --max-clients is each node's own */
    th_server *s = SERVER("--max-clients", "2");
    client *a, *b;
    a = client_named(s, "a");
    b = client_named(s, "b");
    client_send(a, "{\"type\":\"solo\",\"seed\":1}");
    client_expect(a, "start", WAIT);
    client_send(b, "{\"type\":\"create\"}");
    json_t *room = client_expect(b, "room", WAIT);

    client *c = client_connect(s); /* says nothing: the server speaks first */
    client_expect_error(c, "server_full", WAIT);
    client_expect_eof(c, WAIT);
    client *d = client_connect(s);
    client_send(d, "{\"type\":\"hello\",\"name\":\"d\"}");
    client_expect_error(d, "server_full", WAIT);
    client_expect_eof(d, WAIT);

    /* The others are untouched. */
    assert_true(jbool(client_move_any(a), "moved"));
    client_send(b, "{\"type\":\"rooms\"}");
    json_t *rows = jarr(client_expect(b, "rooms", WAIT), "rooms");
    assert_string_equal(jstr(json_array_get(rows, 0), "room"), jstr(room, "room"));

    /* A slot frees when a client leaves. The round trip on b lets the server
     * see a's EOF first; the loop only guards against a kernel that delays it. */
    client_close(a);
    client_sync(b);
    client *e = NULL;
    for (int i = 0; i < 50 && !e; i++) { /* the close is seen asynchronously */
        client *try = client_connect(s);
        client_send(try, "{\"type\":\"ping\",\"t\":1}");
        json_t *first = client_next(try, WAIT);
        if (first && !strcmp(jstr(first, "type"), "welcome")) {
            e = try;
        } else {
            assert_non_null(first);
            assert_string_equal(jstr(first, "code"), "server_full");
            client_expect_eof(try, WAIT);
            client_close(try);
            client_sync(b); /* a round trip, so the server has run its loop */
        }
    }
    assert_non_null(e);
    client_expect(e, "pong", WAIT);
}

/* c's `bye`. One server stops as a whole: nothing comes before it (its rooms
 * are closed without a word, then everyone is told). Spread over two nodes
 * (RACE2048_TEST_SPREAD), the nodes are two servers that get SIGTERM at the
 * same moment but stop one after the other: a client of the later one may
 * first hear, rightly, what the earlier one's stop did to its room (shown by
 * stopping one node alone): its rematch partner left, so it now waits alone
 * in the rematch room (`room`); a racer of the race it watches dropped
 * (`player`); the node that ran its room stopped (`error unavailable`). */
static json_t *expect_bye(client *c) {
    for (;;) {
        json_t *m = client_next(c, WAIT);
        const char *type = jstr(m, "type");
        if (!strcmp(type, "bye") || !harness_spread()) return m;
        if (!strcmp(type, "error"))
            assert_string_equal(jstr(m, "code"), "unavailable");
        else if (strcmp(type, "room") != 0 && strcmp(type, "player") != 0)
            fail_msg("`%s` before `bye`", type);
    }
}

/* SIGTERM with something of every kind going on: everyone gets bye then EOF,
 * and the server exits 0 (under ASan or valgrind: nothing leaked). */
static void test_shutdown_bye(void **state) {
    th_server *s = SERVER(NULL);
    client *all[12];
    int n = 0;
    client *lobby = all[n++] = client_connect(s);
    client_hello(lobby, "lobby");
    client *solo = all[n++] = client_connect(s);
    client_hello(solo, "solo");
    client_send(solo, "{\"type\":\"solo\"}");
    client_expect(solo, "start", WAIT);
    client *queued = all[n++] = client_connect(s);
    client_hello(queued, "queued");
    client_send(queued, "{\"type\":\"quick\",\"size\":7}");
    client_expect(queued, "queued", WAIT);
    client *waiting = all[n++] = client_connect(s);
    client_hello(waiting, "waiting");
    client_send(waiting, "{\"type\":\"create\"}");
    client_expect(waiting, "room", WAIT);

    /* A race with a player away (its seat kept for the grace period) and a
     * spectator. */
    client *race[2];
    const char *code = race_start(s, 2, NULL, race, NULL);
    all[n++] = race[1];
    client *spec = all[n++] = client_connect(s);
    client_hello(spec, "spec");
    client_send(spec, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(spec, "start", WAIT);
    client_move_any(race[0]);
    client_close(race[0]);
    client_expect_skip(race[1], "player", "state", WAIT);
    client_expect_skip(spec, "player", "state", WAIT);

    /* An ended race with a rematch asked for. */
    client *ended[2];
    race_start(s, 2, "\"time_limit\":1", ended, NULL);
    all[n++] = ended[0];
    all[n++] = ended[1];
    client_expect(ended[0], "end", WAIT + 1000);
    client_expect(ended[1], "end", WAIT + 1000);
    client_send(ended[0], "{\"type\":\"rematch\"}");
    client_expect(ended[0], "room", WAIT);
    client_expect(ended[1], "room", WAIT);

    assert_int_equal(server_stop(s), 0);
    for (int i = 0; i < n; i++) {
        json_t *bye = expect_bye(all[i]);
        assert_string_equal(jstr(bye, "type"), "bye");
        assert_string_equal(jstr(bye, "reason"), "shutdown");
        client_expect_eof(all[i], WAIT);
    }
}

/* Spread over two nodes: the node of a rematch asker's partner stops first
 * (the timing under which test_shutdown_bye once saw a `room` before `bye`).
 * The partner gets `bye`; on the asker's node, still running, that is a
 * leave of the ended race, so the asker waits alone in a new rematch room
 * and is told so (`room`), then gets its own `bye` when its node stops. */
static void test_shutdown_partner_node_first(void **state) {
    if (!harness_spread()) skip(); /* one server stops as a whole */
    th_server *s = SERVER(NULL);
    client *first =
        client_named(s, "first"); /* on s: the race's creator is on its peer */
    client *ended[2];
    const char *code = race_start(s, 2, "\"time_limit\":1", ended, NULL);
    client_expect(ended[0], "end", WAIT + 1000);
    client_expect(ended[1], "end", WAIT + 1000);
    client_send(ended[0], "{\"type\":\"rematch\"}");
    client_expect(ended[0], "room", WAIT);
    client_expect(ended[1], "room", WAIT);

    th_server *asker_node = s->peer;
    s->peer = NULL; /* stops the partner's node alone */
    assert_int_equal(server_stop(s), 0);
    client_expect(first, "bye", WAIT);
    client_expect(ended[1], "bye", WAIT);
    json_t *alone = client_expect(ended[0], "room", WAIT);
    assert_int_equal(json_array_size(jarr(alone, "players")), 1);
    assert_int_equal(jint(alone, "need"), 2);
    assert_string_not_equal(jstr(alone, "room"), code);
    assert_int_equal(server_stop(asker_node), 0);
    client_expect(ended[0], "bye", WAIT);
    client_expect_eof(ended[0], WAIT);
}

static void test_shutdown_on_sigint(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "c");
    assert_int_equal(server_signal_stop(s, SIGINT), 0);
    client_expect(c, "bye", WAIT);
    client_expect_eof(c, WAIT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_hello_welcome_and_rename, harness_teardown),
        cmocka_unit_test_teardown(test_auto_welcome_before_first_reply, harness_teardown),
        cmocka_unit_test_teardown(test_bad_hello_gets_no_welcome, harness_teardown),
        cmocka_unit_test_teardown(test_ids_unique, harness_teardown),
        cmocka_unit_test_teardown(test_request_errors, harness_teardown),
        cmocka_unit_test_teardown(test_state_errors, harness_teardown),
        cmocka_unit_test_teardown(test_failed_request_changes_nothing, harness_teardown),
        cmocka_unit_test_teardown(test_framing, harness_teardown),
        cmocka_unit_test_teardown(test_late_json_client, harness_teardown),
        cmocka_unit_test_teardown(test_solo_seed_reproducible, harness_teardown),
        cmocka_unit_test_teardown(test_solo_replay_matches_engine, harness_teardown),
        cmocka_unit_test_teardown(test_solo_until_over, harness_teardown),
        cmocka_unit_test_teardown(test_solo_leave, harness_teardown),
        cmocka_unit_test_teardown(test_rooms_listing, harness_teardown),
        cmocka_unit_test_teardown(test_line_too_long, harness_teardown),
        cmocka_unit_test_teardown(test_server_full, harness_teardown),
        cmocka_unit_test_teardown(test_shutdown_bye, harness_teardown),
        cmocka_unit_test_teardown(test_shutdown_partner_node_first, harness_teardown),
        cmocka_unit_test_teardown(test_shutdown_on_sigint, harness_teardown),
    };
    /* RACE2048_TEST=NAME runs one case (to loop a single one). */
    const char *only = getenv("RACE2048_TEST");
    if (only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
