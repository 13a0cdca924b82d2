/* test_server_race.c - race2048d races over loopback: rooms, moves, spectators, every
 * end reason and the ranking, matchmaking, busy rules, rematch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "checks.h"
#include "harness.h"

static json_int_t id_of(const json_t *start) {
    return jint(start, "you");
}

/* -------------------------------------------------------------- rooms --- */

static void test_create_join_start(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b;
    a = client_connect(s);
    json_int_t ida = jint(client_hello(a, "alice"), "id");
    b = client_connect(s);
    json_int_t idb = jint(client_hello(b, "bob"), "id");
    client_send(a, "{\"type\":\"create\",\"size\":6,\"target\":512,\"time_limit\":3600}");
    json_t *room = client_expect(a, "room", WAIT);
    const char *code = jstr(room, "room");
    assert_int_equal(jint(room, "need"), 2);
    json_t *players = jarr(room, "players");
    assert_int_equal(json_array_size(players), 1);
    assert_int_equal(jint(json_array_get(players, 0), "id"), ida);
    assert_string_equal(jstr(json_array_get(players, 0), "name"), "alice");

    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *rb = client_expect(b, "room", WAIT), *ra = client_expect(a, "room", WAIT);
    assert_true(jequal(ra, rb));
    assert_int_equal(json_array_size(jarr(ra, "players")), 2);
    assert_int_equal(jint(jplayer(jarr(ra, "players"), idb), "id"), idb);

    json_t *sa = client_expect(a, "start", WAIT), *sb = client_expect(b, "start", WAIT);
    assert_string_equal(jstr(sa, "room"), code);
    assert_int_equal(id_of(sa), ida);
    assert_int_equal(id_of(sb), idb);
    assert_int_equal(jint(sa, "size"), 6);
    assert_int_equal(jint(sa, "target"), 512);
    assert_int_equal(jint(sa, "time_limit"), 3600);
    assert_false(jhas(sa, "seed"));
    assert_string_equal(jstr(sa, "commit"), jstr(sb, "commit"));
    json_t *pa = jarr(sa, "players");
    assert_int_equal(json_array_size(pa), 2);
    check_players(pa, 6);
    assert_true(jequal(pa, jarr(sb, "players")));
    /* Everyone starts on the same board. */
    assert_true(jequal(jarr(jplayer(pa, ida), "board"), jarr(jplayer(pa, idb), "board")));
    assert_int_equal(jint(jplayer(pa, ida), "moves"), 0);
    assert_string_equal(jstr(jplayer(pa, idb), "status"), "playing");

    /* A running room is listed as started, and cannot be joined. */
    client *c = client_named(s, "carol");
    client_send(c, "{\"type\":\"rooms\"}");
    json_t *row = json_array_get(jarr(client_expect(c, "rooms", WAIT), "rooms"), 0);
    assert_string_equal(jstr(row, "room"), code);
    assert_true(jbool(row, "started"));
    assert_int_equal(jint(row, "players"), 2);
    client_send(c, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_error(c, "already_started", WAIT);
    client_sync(c);
    client_sync(a); /* nothing reached the players */
    client_sync(b);
}

/* The row of `rooms` on c for code (fails if it is not listed). */
static json_t *rooms_row(client *c, const char *code) {
    client_send(c, "{\"type\":\"rooms\"}");
    json_t *list = jarr(client_expect(c, "rooms", WAIT), "rooms");
    size_t i;
    json_t *row;
    json_array_foreach(list, i, row) {
        if (!strcmp(jstr(row, "room"), code)) return row;
    }
    fail_msg("room %s is not listed", code);
}

/* `rooms` rows say who is in a room (names; scores once it runs; how many
 * are bots) and how many watch it: what a page needs to offer "Watch". */
static void test_rooms_rows_say_who(void **state) {
    th_server *s = SERVER(NULL);
    client *b = client_named(s, "bob");
    client_send(b, "{\"type\":\"create\",\"players\":3}");
    const char *waiting = jstr(client_expect(b, "room", WAIT), "room");
    client *a = client_named(s, "ann");
    client_send(a, "{\"type\":\"create\",\"bots\":1,\"level\":1}");
    const char *code = jstr(client_expect_skip(a, "start", "room", WAIT), "room");
    client *w = client_named(s, "wes");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w, "start", WAIT);
    json_int_t score = 0;
    for (int i = 0; i < 200 && score == 0; i++)
        score = jint(client_move_any(a), "score");
    assert_true(score > 0);

    client *c = client_named(s, "carol");
    json_t *row = rooms_row(c, waiting);
    assert_false(jbool(row, "started"));
    assert_int_equal(json_array_size(jarr(row, "names")), 1);
    assert_string_equal(json_string_value(json_array_get(jarr(row, "names"), 0)), "bob");
    assert_false(jhas(row, "scores")); /* nobody plays yet */
    assert_int_equal(jint(row, "bots"), 0);
    assert_int_equal(jint(row, "spectators"), 0);

    /* The reply is kept while no room comes or goes, for a second at most:
     * scores and spectators show up within that. */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        row = rooms_row(c, code);
        assert_true(jbool(row, "started"));
        json_t *names = jarr(row, "names"), *scores = jarr(row, "scores");
        assert_int_equal(json_array_size(names), 2);
        assert_string_equal(json_string_value(json_array_get(names, 0)), "ann");
        assert_memory_equal(json_string_value(json_array_get(names, 1)), "bot-", 4);
        assert_int_equal(json_array_size(scores), 2);
        assert_int_equal(jint(row, "bots"), 1);
        if (jint(row, "spectators") == 1 &&
            json_integer_value(json_array_get(scores, 0)) == score)
            break;
        assert_true(harness_remaining(deadline) > 0);
        client_sync(c);
    }
}

static void test_three_players_with_spectator(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *c, *spec;
    a = client_connect(s);
    json_int_t ida = jint(client_hello(a, "a"), "id");
    b = client_named(s, "b");
    c = client_named(s, "c");
    spec = client_named(s, "spec");
    client_send(a, "{\"type\":\"create\",\"players\":3,\"size\":4}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");

    /* Watching a waiting room: `room` now, every change, then `start`. */
    client_send(spec, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    json_t *r = client_expect(spec, "room", WAIT);
    assert_int_equal(json_array_size(jarr(r, "players")), 1);
    assert_int_equal(jint(r, "need"), 3);

    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    for (client **x = (client *[]){a, b, spec, NULL}; *x; x++)
        assert_int_equal(
            json_array_size(jarr(client_expect(*x, "room", WAIT), "players")), 2);
    client_send(c, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    for (client **x = (client *[]){a, b, c, spec, NULL}; *x; x++)
        assert_int_equal(
            json_array_size(jarr(client_expect(*x, "room", WAIT), "players")), 3);
    json_t *starts[4];
    client *all[] = {a, b, c, spec};
    for (int i = 0; i < 4; i++)
        starts[i] = client_expect(all[i], "start", WAIT);
    assert_false(jhas(starts[3], "you"));
    assert_true(jequal(jarr(starts[0], "players"), jarr(starts[3], "players")));
    assert_string_equal(jstr(starts[0], "commit"), jstr(starts[3], "commit"));

    /* A move that changes the board goes to everyone, seq included. */
    json_t *mine = client_move_any(a);
    for (int i = 1; i < 4; i++) {
        json_t *st = client_expect(all[i], "state", WAIT);
        assert_true(jequal(st, mine));
    }
    assert_int_equal(jint(mine, "id"), ida);
    assert_int_equal(jint(mine, "moves"), 1);
    check_player(mine, 4);
    json_t *sp = jobj(mine, "spawn");
    assert_true(jint(sp, "value") == 2 || jint(sp, "value") == 4);

    /* A move that changes nothing goes to the sender alone. */
    json_t *st = NULL;
    for (int i = 0; i < 40; i++) {
        st = client_move(a, "left");
        if (!jbool(st, "moved")) break;
        for (int k = 1; k < 4; k++)
            client_expect(all[k], "state", WAIT);
    }
    assert_false(jbool(st, "moved"));
    assert_true(jnull(st, "spawn"));
    assert_int_equal(jint(st, "gained"), 0);
    for (int k = 1; k < 4; k++)
        client_sync(all[k]);

    /* Spectators cannot move. */
    client_send(spec, "{\"type\":\"move\",\"dir\":\"up\"}");
    client_expect_error(spec, "not_playing", WAIT);
    client_sync(spec);
}

/* ------------------------------------------------------------ endings --- */

static void test_end_by_target(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, "\"size\":3,\"target\":8", p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]);
    const char *commit = jstr(starts[0], "commit");

    json_t *st = NULL;
    for (int i = 0; i < 500; i++) {
        st = client_move_any(p[0]);
        if (strcmp(jstr(st, "status"), "playing") != 0) break;
    }
    /* --seed 42 makes this deterministic; the script reaches 8 first. */
    assert_string_equal(jstr(st, "status"), "won");
    assert_true(jint(st, "max_tile") >= 8);
    json_t *end = client_expect(p[0], "end", WAIT);
    json_t *endb = client_expect_skip(p[1], "end", "state", WAIT);
    json_t *seen_by_b = client_skipped(p[1]);
    assert_true(jequal(end, endb));
    assert_string_equal(jstr(end, "reason"), "target");
    assert_int_equal(jint(end, "winner"), ida);
    assert_int_equal(jint(json_array_get(jarr(end, "results"), 0), "id"), ida);
    check_players(jarr(end, "results"), 3);
    check_ranking(end);
    check_commit(commit, end);
    assert_int_equal(check_end_seed(end).kind, ENG_SEED_SERVER); /* a race: ChaCha20 */
    check_replay(end, ida, seen_by_b, 3);
    check_replay(end, idb, seen_by_b, 3); /* no moves: the start board */
    /* The revealed seed gives the board everyone started on. */
    eng_game g;
    eng_seed seed = check_end_seed(end);
    assert_int_equal(eng_game_new(&g, 3, &seed), 0);
    check_board(jarr(jplayer(jarr(starts[1], "players"), ida), "board"), &g.board);
    /* The race is over: moves are refused, the room is not listed. */
    client_send(p[1], "{\"type\":\"move\",\"dir\":\"up\"}");
    client_expect_error(p[1], "not_playing", WAIT);
    client_send(p[1], "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(p[1], "rooms", WAIT), "rooms")),
                     0);
}

/* Moves until the status is no longer playing/won; returns the last state. */
static json_t *play_until_over(client *c) {
    json_t *st = NULL;
    for (int i = 0; i < 3000; i++) {
        st = client_move_any(c);
        if (!strcmp(jstr(st, "status"), "over")) return st;
    }
    fail_msg("the game did not end in 3000 moves");
    return NULL;
}

static void test_end_all_over(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, "\"size\":3", p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]);

    json_t *last_a = play_until_over(p[0]);
    /* Over is not the end while the other still plays; an over player cannot move. */
    client_send(p[0], "{\"type\":\"move\",\"dir\":\"up\"}");
    client_expect_error(p[0], "not_playing", WAIT);
    client_sync(p[0]);
    json_t *last_b = play_until_over(p[1]);
    json_t *seen_by_b = client_skipped(p[1]);
    json_t *end = client_expect(p[1], "end", WAIT);
    json_t *enda = client_expect_skip(p[0], "end", "state", WAIT);
    json_t *seen_by_a = client_skipped(p[0]);
    assert_true(jequal(end, enda));
    assert_string_equal(jstr(end, "reason"), "all_over");
    check_ranking(end);
    check_commit(jstr(starts[0], "commit"), end);
    json_t *results = jarr(end, "results");
    assert_string_equal(jstr(jplayer(results, ida), "status"), "over");
    assert_true(jequal(jarr(jplayer(results, ida), "board"), jarr(last_a, "board")));
    assert_true(jequal(jarr(jplayer(results, idb), "board"), jarr(last_b, "board")));
    check_replay(end, ida, seen_by_b, 3);
    check_replay(end, idb, seen_by_a, 3);
    /* The two boards came from one seed and different moves: the scores
     * decide unless they tie, and check_ranking verified the order. */
    client_sync(p[0]);
    client_sync(p[1]);
}

static void test_end_time_draw(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *spec;
    a = client_named(s, "a");
    b = client_named(s, "b");
    spec = client_named(s, "spec");
    client_send(a, "{\"type\":\"create\",\"time_limit\":1}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(spec, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(spec, "room", WAIT);
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *start = client_expect_skip(spec, "start", "room", WAIT);
    client_expect_skip(a, "start", "room", WAIT);
    client_expect_skip(b, "start", "room", WAIT);
    /* Nobody moves: equal in everything, so a draw. */
    json_t *end = client_expect(a, "end", WAIT + 1000);
    assert_true(jequal(end, client_expect(b, "end", WAIT + 1000)));
    assert_true(jequal(end, client_expect(spec, "end", WAIT + 1000)));
    assert_string_equal(jstr(end, "reason"), "time");
    assert_true(jnull(end, "winner"));
    assert_string_equal(jstr(end, "room"), code);
    assert_int_equal(json_array_size(jarr(end, "results")), 2);
    check_ranking(end);
    check_commit(jstr(start, "commit"), end);
}

/* A player who left ranks last whatever its score; the rest by score, max
 * tile, then fewer moves. */
static void test_end_time_ranking(void **state) {
    th_server *s = SERVER(NULL);
    client *p[3];
    json_t *starts[3];
    /* Long enough for a few moves even on a slow machine; the end still
     * comes by itself. */
    char fields[64];
    int limit = harness_ms(3000) / 1000;
    snprintf(fields, sizeof fields, "\"size\":4,\"time_limit\":%d", limit);
    race_start(s, 3, fields, p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]), idc = id_of(starts[2]);

    json_t *st = NULL;
    for (int i = 0; i < 200; i++) {
        st = client_move_any(p[0]);
        if (jint(st, "score") > 0) break;
    }
    assert_true(jint(st, "score") > 0);
    client_send(p[0], "{\"type\":\"leave\"}");
    client_expect(p[0], "left", WAIT); /* two still play: no end for the leaver */
    client_sync(p[0]);
    json_t *left = client_expect_skip(p[1], "player", "state", WAIT);
    assert_int_equal(jint(left, "id"), ida);
    assert_string_equal(jstr(left, "status"), "left");
    client_move_any(p[1]);

    json_t *end = client_expect_skip(p[2], "end", "state player", WAIT + limit * 1000);
    assert_true(
        jequal(end, client_expect_skip(p[1], "end", "state", WAIT + limit * 1000)));
    assert_string_equal(jstr(end, "reason"), "time");
    json_t *results = jarr(end, "results");
    assert_int_equal(json_array_size(results), 3);
    json_t *last = json_array_get(results, 2);
    assert_int_equal(jint(last, "id"), ida);
    assert_string_equal(jstr(last, "status"), "left");
    assert_true(jint(last, "score") > jint(json_array_get(results, 0), "score"));
    check_ranking(end);
    /* b moved once, c never: max tile or fewer moves decide, never a draw. */
    assert_false(jnull(end, "winner"));
    assert_true(jint(end, "winner") == idb || jint(end, "winner") == idc);
    client_sync(p[0]); /* the leaver is out of the room: no end for it */
}

static void test_end_forfeit_by_leave(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]);
    client_move_any(p[0]);
    client_send(p[0], "{\"type\":\"leave\"}");
    /* The leaver gets the end first, then left. */
    json_t *end = client_expect(p[0], "end", WAIT);
    client_expect(p[0], "left", WAIT);
    json_t *pl = client_expect_skip(p[1], "player", "state", WAIT);
    assert_string_equal(jstr(pl, "room"), code);
    assert_int_equal(jint(pl, "id"), ida);
    assert_string_equal(jstr(pl, "status"), "left");
    assert_true(json_is_boolean(json_object_get(pl, "connected")));
    assert_true(jequal(end, client_expect(p[1], "end", WAIT)));
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), idb);
    assert_int_equal(jint(json_array_get(jarr(end, "results"), 0), "id"), idb);
    assert_string_equal(jstr(jplayer(jarr(end, "results"), ida), "status"), "left");
    check_ranking(end);
    check_commit(jstr(starts[0], "commit"), end);
    client_sync(p[0]);
    client_sync(p[1]);
}

static void test_forfeit_three_players(void **state) {
    th_server *s = SERVER(NULL);
    client *p[3];
    json_t *starts[3];
    race_start(s, 3, "\"size\":5", p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]), idc = id_of(starts[2]);
    client_send(p[0], "{\"type\":\"leave\"}");
    client_expect(p[0], "left", WAIT);
    for (int i = 1; i < 3; i++)
        assert_int_equal(jint(client_expect(p[i], "player", WAIT), "id"), ida);
    client_sync(p[1]); /* two still play: no end */
    /* The leaver may do something else now. */
    client_send(p[0], "{\"type\":\"solo\"}");
    client_expect(p[0], "start", WAIT);

    client_move_any(p[2]);
    client_send(p[1], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(p[1], "end", "state", WAIT);
    client_expect(p[1], "left", WAIT);
    assert_int_equal(jint(client_expect_skip(p[2], "player", "state", WAIT), "id"), idb);
    assert_true(jequal(end, client_expect(p[2], "end", WAIT)));
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), idc);
    check_ranking(end);
    /* Both leavers rank after the winner. */
    json_t *results = jarr(end, "results");
    assert_int_equal(json_array_size(results), 3);
    assert_string_equal(jstr(jplayer(results, ida), "status"), "left");
    assert_string_equal(jstr(jplayer(results, idb), "status"), "left");
    client_sync(p[0]);
}

/* -------------------------------------------------------- matchmaking --- */

static void test_quick_two_and_three(void **state) {
    th_server *s = SERVER(NULL);
    client *c[5];
    json_int_t ids[5];
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "q%d", i);
        c[i] = client_connect(s);
        ids[i] = jint(client_hello(c[i], name), "id");
    }
    client_send(c[0], "{\"type\":\"quick\"}");
    json_t *q = client_expect(c[0], "queued", WAIT);
    assert_int_equal(jint(q, "players"), 2);
    assert_int_equal(jint(q, "waiting"), 1);
    client_sync(c[0]);
    client_send(c[1], "{\"type\":\"quick\",\"players\":2,\"size\":4,\"target\":2048}");
    q = client_expect(c[1], "queued",
                      WAIT); /* the completing request: queued, then start */
    assert_int_equal(jint(q, "waiting"), 2);
    json_t *s1 = client_expect(c[1], "start", WAIT),
           *s0 = client_expect(c[0], "start", WAIT);
    assert_string_equal(jstr(s0, "room"), jstr(s1, "room"));
    assert_int_equal(jint(s0, "you"), ids[0]);
    assert_int_equal(jint(s1, "you"), ids[1]);
    assert_int_equal(json_array_size(jarr(s0, "players")), 2);

    for (int i = 2; i < 5; i++) {
        client_send(c[i], "{\"type\":\"quick\",\"players\":3,\"size\":3,\"target\":64}");
        q = client_expect(c[i], "queued", WAIT);
        assert_int_equal(jint(q, "players"), 3);
        assert_int_equal(jint(q, "waiting"), i - 1);
    }
    json_t *st[3];
    for (int i = 2; i < 5; i++) {
        st[i - 2] = client_expect(c[i], "start", WAIT);
        assert_int_equal(jint(st[i - 2], "you"), ids[i]);
        assert_int_equal(jint(st[i - 2], "size"), 3);
        assert_int_equal(jint(st[i - 2], "target"), 64);
        assert_int_equal(json_array_size(jarr(st[i - 2], "players")), 3);
        check_players(jarr(st[i - 2], "players"), 3);
    }
    assert_string_equal(jstr(st[0], "room"), jstr(st[2], "room"));
    assert_string_not_equal(jstr(st[0], "room"), jstr(s0, "room"));
    client_move_any(c[3]);
    for (int i = 2; i < 5; i++)
        if (i != 3) client_expect(c[i], "state", WAIT);
}

static void test_quick_settings_must_match(void **state) {
    th_server *s = SERVER(NULL);
    client *c[6];
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "m%d", i);
        c[i] = client_connect(s);
        client_hello(c[i], name);
    }
    static const char *const asks[] = {
        "{\"type\":\"quick\",\"size\":3}",
        "{\"type\":\"quick\",\"size\":4}",
        "{\"type\":\"quick\",\"size\":3,\"target\":1024}",
        "{\"type\":\"quick\",\"size\":3,\"players\":3}",
    };
    for (int i = 0; i < 4; i++) {
        client_send(c[i], "%s", asks[i]);
        assert_int_equal(jint(client_expect(c[i], "queued", WAIT), "waiting"), 1);
    }
    for (int i = 0; i < 4; i++)
        client_sync(c[i]); /* nobody was matched */

    /* Leaving the queue takes the player out of the count. */
    client_send(c[1], "{\"type\":\"leave\"}");
    client_expect(c[1], "left", WAIT);
    client_send(c[4], "{\"type\":\"quick\",\"size\":4}");
    assert_int_equal(jint(client_expect(c[4], "queued", WAIT), "waiting"), 1);

    /* A time_limit is not part of quick's settings; the size 3 ask matches. */
    client_send(c[5], "{\"type\":\"quick\",\"size\":3,\"time_limit\":5}");
    assert_int_equal(jint(client_expect(c[5], "queued", WAIT), "waiting"), 2);
    json_t *st = client_expect(c[5], "start", WAIT);
    assert_string_equal(jstr(client_expect(c[0], "start", WAIT), "room"),
                        jstr(st, "room"));
    assert_int_equal(jint(st, "size"), 3);
    client_sync(c[2]);
    client_sync(c[3]);
}

/* ------------------------------------------------------------ watching --- */

static void test_watch_running_room(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, p, starts);
    json_int_t ida = id_of(starts[0]);
    json_t *moved = client_move_any(p[0]);
    client_expect_skip(p[1], "state", "", WAIT);

    client *w = client_named(s, "watcher");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    json_t *snap = client_expect(w, "start", WAIT);
    assert_false(jhas(snap, "you"));
    assert_string_equal(jstr(snap, "room"), code);
    assert_string_equal(jstr(snap, "commit"), jstr(starts[0], "commit"));
    json_t *pa = jplayer(jarr(snap, "players"), ida);
    assert_true(jequal(jarr(pa, "board"), jarr(moved, "board")));
    assert_int_equal(jint(pa, "moves"), jint(moved, "moves"));
    assert_int_equal(jint(pa, "score"), jint(moved, "score"));

    json_t *mb = client_move_any(p[1]);
    json_t *seen = client_expect_skip(w, "state", "", WAIT);
    assert_true(jequal(seen, mb));
    client_expect_skip(p[0], "state", "", WAIT);

    /* The watcher is in no room: its requests are its own. */
    client_send(w, "{\"type\":\"rooms\"}");
    client_expect(w, "rooms", WAIT);

    client_send(p[1], "{\"type\":\"leave\"}");
    client_expect(p[1], "end", WAIT);
    client_expect(p[1], "left", WAIT);
    assert_string_equal(jstr(client_expect(w, "player", WAIT), "status"), "left");
    json_t *end = client_expect(w, "end", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), ida);
    client_expect(p[0], "player", WAIT);
    client_expect(p[0], "end", WAIT);
    /* An ended room cannot be watched. */
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect_error(w, "room_not_found", WAIT);
    client_sync(w);
}

static void test_watch_then_leave(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, p, starts);
    client *w = client_named(s, "w");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w, "start", WAIT);
    client_send(w, "{\"type\":\"leave\"}");
    client_expect(w, "left", WAIT);
    client_move_any(p[0]);
    client_expect(p[1], "state", WAIT);
    client_sync(w); /* stopped watching: no state */
}

/* Watching one's own waiting room: a seated player becomes a spectator; one
 * alone would close the room by leaving it, so that is refused. */
static void test_watch_own_room(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *c;
    a = client_named(s, "a");
    b = client_named(s, "b");
    c = client_named(s, "c");
    client_send(a, "{\"type\":\"create\"}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(a, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect_error(a, "room_not_found", WAIT);
    client_send(a, "{\"type\":\"leave\"}"); /* a was still seated: this frees the room */
    client_expect(a, "left", WAIT);
    client_sync(a);

    client_send(a, "{\"type\":\"create\"}");
    code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(b, "start", "room", WAIT);
    client_expect_skip(a, "start", "room", WAIT);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
    client_expect_skip(b, "end", "player", WAIT);

    client_send(b, "{\"type\":\"create\",\"players\":3}");
    code = jstr(client_expect(b, "room", WAIT), "room");
    client_send(a, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect(a, "room", WAIT);
    client_expect(b, "room", WAIT);
    client_send(a, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    assert_int_equal(json_array_size(jarr(client_expect(b, "room", WAIT), "players")), 1);
    assert_int_equal(json_array_size(jarr(client_expect(a, "room", WAIT), "players")), 1);
    client_send(c, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect(c, "room", WAIT);
    client_expect(a, "room", WAIT);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "left", WAIT);
    client_send(a, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(a, "rooms", WAIT), "rooms")), 1);
}

/* A spectator of a waiting room is told when its last player goes: a `room`
 * with nobody in it (the room is then gone). */
static void test_watched_room_emptied(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *w;
    a = client_named(s, "a");
    w = client_named(s, "w");
    for (int round = 0; round < 2; round++) {
        client_send(a, "{\"type\":\"create\"}");
        const char *code = jstr(client_expect(a, "room", WAIT), "room");
        client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
        client_expect(w, "room", WAIT);
        if (round == 0) {
            client_send(a, "{\"type\":\"leave\"}");
            client_expect(a, "left", WAIT);
        } else { /* a lost connection in a waiting room is a leave */
            client_close(a);
        }
        json_t *r = client_expect(w, "room", WAIT);
        assert_string_equal(jstr(r, "room"), code);
        assert_int_equal(json_array_size(jarr(r, "players")), 0);
        client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
        client_expect_error(w, "room_not_found", WAIT);
        client_sync(w);
    }
}

/* ----------------------------------------------------------------- busy --- */

static void test_busy_in_running_race(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, p, starts);
    client *o = client_named(s, "other");
    client_send(o, "{\"type\":\"create\"}");
    const char *waiting = jstr(client_expect(o, "room", WAIT), "room");

    char join[64], watch[64];
    snprintf(join, sizeof join, "{\"type\":\"join\",\"room\":\"%s\"}", waiting);
    snprintf(watch, sizeof watch, "{\"type\":\"watch\",\"room\":\"%s\"}", waiting);
    const char *const busy[] = {"{\"type\":\"solo\"}", "{\"type\":\"create\"}",
                                "{\"type\":\"quick\"}", join, watch};
    for (size_t i = 0; i < sizeof busy / sizeof busy[0]; i++) {
        client_send(p[0], "%s", busy[i]);
        client_expect_error(p[0], "busy", WAIT);
        client_sync(p[0]);
    }
    /* State checks come in their order: room_not_found and already_started first. */
    client_send(p[0], "{\"type\":\"join\",\"room\":\"ZZZZZ\"}");
    client_expect_error(p[0], "room_not_found", WAIT);
    client_send(p[0], "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_error(p[0], "already_started", WAIT);
    client_sync(p[0]);
    /* Nothing changed: the race goes on, the other room still waits. */
    client_move_any(p[0]);
    client_expect(p[1], "state", WAIT);
    client_sync(o);
    client_send(o, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(o, "rooms", WAIT), "rooms")), 2);
}

static void test_implicit_leave(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *c;
    a = client_named(s, "a");
    b = client_named(s, "b");
    c = client_named(s, "c");

    /* Queued, then create: out of the queue, no `left`. */
    client_send(a, "{\"type\":\"quick\"}");
    client_expect(a, "queued", WAIT);
    client_send(a, "{\"type\":\"create\",\"players\":3}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(b, "{\"type\":\"quick\"}");
    assert_int_equal(jint(client_expect(b, "queued", WAIT), "waiting"), 1);

    /* Queued, then join: b is seated; a sees it. */
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    assert_int_equal(json_array_size(jarr(client_expect(b, "room", WAIT), "players")), 2);
    assert_int_equal(json_array_size(jarr(client_expect(a, "room", WAIT), "players")), 2);

    /* Waiting in a room, then solo: the others see the room shrink. */
    client_send(b, "{\"type\":\"solo\",\"size\":3}");
    client_expect(b, "start", WAIT);
    json_t *r = client_expect(a, "room", WAIT);
    assert_int_equal(json_array_size(jarr(r, "players")), 1);

    /* Spectating, then quick: no more states from the watched game. */
    client_send(c, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(c, "room", WAIT);
    client_send(c, "{\"type\":\"quick\",\"size\":8}");
    client_expect(c, "queued", WAIT);

    /* Solo, then create: the solo game ends (its end is sent), no `left`. */
    client_send(b, "{\"type\":\"create\"}");
    json_t *end = client_expect(b, "end", WAIT);
    assert_false(jhas(end, "room"));
    client_expect(b, "room", WAIT);
    client_sync(b);

    /* The last one out of a waiting room: the room is gone. */
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "left", WAIT);
    client_send(a, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_error(a, "room_not_found", WAIT);
    client_sync(c); /* c watched that room once: nothing more for it */
}

/* -------------------------------------------------------------- rematch --- */

static void test_rematch(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    const char *code =
        race_start(s, 2, "\"size\":5,\"target\":32,\"time_limit\":1", p, starts);
    json_int_t ida = id_of(starts[0]), idb = id_of(starts[1]);
    json_t *end = client_expect(p[0], "end", WAIT + 1000);
    client_expect(p[1], "end", WAIT + 1000);

    client_send(p[0], "{\"type\":\"rematch\"}");
    json_t *ra = client_expect(p[0], "room", WAIT); /* whoever asks gets room */
    json_t *rb = client_expect(p[1], "room", WAIT);
    assert_true(jequal(ra, rb));
    json_t *waiting = jarr(ra, "players");
    assert_int_equal(json_array_size(waiting), 1);
    assert_int_equal(jint(json_array_get(waiting, 0), "id"), ida);
    assert_int_equal(jint(ra, "size"), 5);
    assert_int_equal(jint(ra, "target"), 32);
    client_sync(p[0]);

    /* The last asker gets `room` too: the new room, full, then its start. */
    client_send(p[1], "{\"type\":\"rematch\"}");
    json_t *nb = client_expect(p[1], "room", WAIT);
    json_t *na = client_expect(p[0], "room", WAIT);
    assert_true(jequal(na, nb));
    assert_int_equal(json_array_size(jarr(nb, "players")), 2);
    assert_int_equal(jint(nb, "need"), 2);
    json_t *sb = client_expect(p[1], "start", WAIT);
    json_t *sa = client_expect(p[0], "start", WAIT);
    assert_string_equal(jstr(sa, "room"), jstr(nb, "room"));
    assert_string_equal(jstr(sa, "commit"), jstr(sb, "commit"));
    assert_string_not_equal(jstr(sa, "commit"), jstr(starts[0], "commit"));
    assert_int_equal(jint(sa, "you"), ida);
    assert_int_equal(jint(sb, "you"), idb);
    assert_int_equal(jint(sa, "size"), 5);
    assert_int_equal(jint(sa, "target"), 32);
    assert_int_equal(jint(sa, "time_limit"), 1);
    assert_int_equal(json_array_size(jarr(sa, "players")), 2);
    /* A fresh seed: the new end reveals a seed whose commit matches. */
    json_t *end2 = client_expect(p[0], "end", WAIT + 1000);
    client_expect(p[1], "end", WAIT + 1000);
    check_commit(jstr(sa, "commit"), end2);
    assert_string_not_equal(jstr(end2, "seed"), jstr(end, "seed"));

    /* The other player gone: a lone asker waits in a new room others can
     * join, and is told that room's code (once). */
    client_send(p[1], "{\"type\":\"leave\"}");
    client_expect(p[1], "left", WAIT);
    client_send(p[0], "{\"type\":\"rematch\"}");
    json_t *alone = client_expect(p[0], "room", WAIT);
    assert_int_equal(json_array_size(jarr(alone, "players")), 1);
    assert_int_equal(jint(alone, "need"), 2);
    assert_string_not_equal(jstr(alone, "room"), code);
    client_sync(p[0]);
    client *c = client_named(s, "newcomer");
    client_send(c, "{\"type\":\"join\",\"room\":\"%s\"}", jstr(alone, "room"));
    client_expect(c, "room", WAIT);
    client_expect(c, "start", WAIT);
    client_expect(p[0], "room", WAIT);
    assert_string_equal(jstr(client_expect(p[0], "start", WAIT), "room"),
                        jstr(alone, "room"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_create_join_start, harness_teardown),
        cmocka_unit_test_teardown(test_three_players_with_spectator, harness_teardown),
        cmocka_unit_test_teardown(test_end_by_target, harness_teardown),
        cmocka_unit_test_teardown(test_end_all_over, harness_teardown),
        cmocka_unit_test_teardown(test_end_time_draw, harness_teardown),
        cmocka_unit_test_teardown(test_end_time_ranking, harness_teardown),
        cmocka_unit_test_teardown(test_end_forfeit_by_leave, harness_teardown),
        cmocka_unit_test_teardown(test_forfeit_three_players, harness_teardown),
        cmocka_unit_test_teardown(test_quick_two_and_three, harness_teardown),
        cmocka_unit_test_teardown(test_quick_settings_must_match, harness_teardown),
        cmocka_unit_test_teardown(test_rooms_rows_say_who, harness_teardown),
        cmocka_unit_test_teardown(test_watch_running_room, harness_teardown),
        cmocka_unit_test_teardown(test_watch_then_leave, harness_teardown),
        cmocka_unit_test_teardown(test_watch_own_room, harness_teardown),
        cmocka_unit_test_teardown(test_watched_room_emptied, harness_teardown),
        cmocka_unit_test_teardown(test_busy_in_running_race, harness_teardown),
        cmocka_unit_test_teardown(test_implicit_leave, harness_teardown),
        cmocka_unit_test_teardown(test_rematch, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
