/* test_server_bots.c - server-run bots over JSON: races against people, quick filled by
 * bots, rematch, --max-bots, and a thousand bots under a pinging client. */
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
#include "wsclient.h"

/* The one bot of a start or end player list (fails if there is not exactly one). */
static json_t *the_bot(json_t *players) {
    json_t *bot = NULL;
    size_t i;
    json_t *p;
    json_array_foreach(players, i, p) {
        if (!jhas(p, "bot")) continue;
        assert_true(jbool(p, "bot"));
        assert_null(bot);
        bot = p;
    }
    assert_non_null(bot);
    return bot;
}

/* Plays c's moves (left, up, right, down, ...) until its race ends; returns
 * the `end`. The bot's states and `player` messages in between are skipped. */
static json_t *play_to_end(client *c, json_int_t me, int64_t deadline) {
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int k = 0;; k++) {
        assert_true(harness_remaining(deadline) > 0);
        client_send(c, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
        for (;;) {
            json_t *m = client_next(c, WAIT);
            const char *t = jstr(m, "type");
            if (!strcmp(t, "end")) {
                /* The move on its way when the race ended gets its own answer. */
                client_expect_skip(c, "error", "player", WAIT);
                return m;
            }
            if (!strcmp(t, "error"))
                fail_msg("error %s during the race", jstr(m, "code"));
            if (!strcmp(t, "state") && jint(m, "id") == me) break;
        }
    }
}

/* A person beats a level-1 bot to a small target: `start` names the bot
 * with "bot":true, the bot moves on its own (its states reach the person),
 * and the race has one `end` naming the person the winner. */
static void test_person_beats_level_1_bot(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "human");
    json_int_t me = jint(client_hello(c, "human"), "id");
    client_send(c, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":1,"
                   "\"target\":64}");
    json_t *room = client_expect(c, "room", WAIT);
    assert_int_equal(json_array_size(jarr(room, "players")), 2);
    json_t *start = client_expect_skip(c, "start", "room", WAIT);
    json_t *bot = the_bot(jarr(start, "players"));
    assert_non_null(strstr(jstr(bot, "name"), "bot"));
    json_int_t bot_id = jint(bot, "id");
    /* The bot moves by itself, about once a second at level 1. */
    json_t *m;
    do {
        m = client_next(c, harness_ms(5000));
    } while (strcmp(jstr(m, "type"), "state") != 0);
    assert_int_equal(jint(m, "id"), bot_id);
    assert_true(jbool(m, "bot"));
    json_t *end = play_to_end(c, me, harness_now_ms() + harness_ms(60000));
    assert_string_equal(jstr(end, "reason"), "target");
    assert_int_equal(jint(end, "winner"), me);
    the_bot(jarr(end, "results"));
    assert_int_equal(server_stop(s), 0);
}

/* The same race over WebSocket, as the browser plays it: the bot's states
 * arrive as text messages, and the person's win is the one `end`. */
static void test_websocket_race_against_a_bot(void **state) {
    th_server *s = SERVER(NULL);
    client *c = ws_connect(s);
    ws_send(c, "{\"type\":\"hello\",\"name\":\"browser\"}");
    json_int_t me = 0;
    json_t *m;
    while (strcmp(jstr(m = ws_next(c, WAIT), "type"), "welcome") != 0) {
    }
    me = jint(m, "id");
    ws_send(c,
            "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":1,\"target\":32}");
    while (strcmp(jstr(m = ws_next(c, WAIT), "type"), "start") != 0) {
    }
    json_int_t bot_id = jint(the_bot(jarr(m, "players")), "id");
    bool bot_moved = false;
    static const char *const dirs[] = {"left", "up", "right", "down"};
    int64_t deadline = harness_now_ms() + harness_ms(60000);
    json_t *end = NULL;
    /* Moves a little slower than the bot's level-1 pace at first, so that
     * its state shows up, then as fast as answers come. */
    for (int k = 0; !end; k++) {
        assert_true(harness_remaining(deadline) > 0);
        ws_send(c, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
        for (;;) {
            m = ws_next(c, WAIT);
            assert_non_null(m);
            const char *t = jstr(m, "type");
            if (!strcmp(t, "end")) {
                end = m;
                break;
            }
            if (!strcmp(t, "state") && jint(m, "id") == bot_id) bot_moved = true;
            if (!strcmp(t, "state") && jint(m, "id") == me) break;
        }
        if (!bot_moved && k < 40) {
            /* Wait for the bot's first move: its state comes within its pace. */
            while (!bot_moved) {
                m = ws_next(c, harness_ms(5000));
                assert_non_null(m);
                if (!strcmp(jstr(m, "type"), "end")) {
                    end = m;
                    break;
                }
                if (!strcmp(jstr(m, "type"), "state") && jint(m, "id") == bot_id)
                    bot_moved = true;
            }
        }
    }
    assert_true(bot_moved);
    assert_int_equal(jint(end, "winner"), me);
    assert_int_equal(server_stop(s), 0);
}

/* --quick-bots: a lone `quick` is `queued`, then, after the wait, its race
 * starts with a level-3 bot in the missing seat. */
static void test_quick_is_filled_by_bots(void **state) {
    th_server *s = SERVER("--quick-bots", "1");
    client *c = client_named(s, "alone");
    int64_t asked = harness_now_ms();
    client_send(c, "{\"type\":\"quick\",\"players\":3}");
    client_expect(c, "queued", WAIT);
    json_t *start = client_expect(c, "start", harness_ms(10000));
    assert_true(harness_now_ms() - asked >= 900); /* not before the wait */
    json_t *players = jarr(start, "players");
    assert_int_equal(json_array_size(players), 3);
    int bots = 0;
    size_t i;
    json_t *p;
    json_array_foreach(players, i, p) {
        if (jhas(p, "bot")) {
            bots++;
            assert_non_null(strstr(jstr(p, "name"), "L3"));
        }
    }
    assert_int_equal(bots, 2);
    assert_int_equal(server_stop(s), 0);
}

/* Bots always agree to a rematch: the person's `rematch` alone starts the
 * next race, with the same bot. Once the person leaves, the bot goes too:
 * `rooms` lists nothing. */
static void test_rematch_with_a_bot_then_leave(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_named(s, "human");
    json_int_t me = jint(client_hello(c, "human"), "id");
    client_send(c, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":1,"
                   "\"target\":16}");
    json_t *start = client_expect_skip(c, "start", "room", WAIT);
    json_int_t bot_id = jint(the_bot(jarr(start, "players")), "id");
    play_to_end(c, me, harness_now_ms() + harness_ms(60000));
    client_send(c, "{\"type\":\"rematch\"}");
    json_t *again = client_expect_skip(c, "start", "room", WAIT);
    assert_int_equal(jint(the_bot(jarr(again, "players")), "id"), bot_id);
    assert_string_not_equal(jstr(again, "commit"), jstr(start, "commit"));
    play_to_end(c, me, harness_now_ms() + harness_ms(60000));
    client_send(c, "{\"type\":\"leave\"}");
    client_expect_skip(c, "left", "state", WAIT);
    client_send(c, "{\"type\":\"rooms\"}");
    json_t *rooms = client_expect_skip(c, "rooms", "state", WAIT);
    assert_int_equal(json_array_size(jarr(rooms, "rooms")), 0);
    assert_int_equal(server_stop(s), 0);
}

/* kill -9 mid-race with a bot: after the restart on the journal the person
 * resumes with the token, the `start` snapshot still names the bot ("bot":
 * true, same id), and the bot moves on by itself. */
static void test_bot_survives_kill_9(void **state) {
    char path[600];
    snprintf(path, sizeof path, "%s/j", harness_temp_dir("bots-kill9"));
    th_server *s = SERVER("--journal", path);
    client *c = client_named(s, "human");
    json_int_t me = jint(client_hello(c, "human"), "id");
    char token[80];
    snprintf(token, sizeof token, "%s", client_token(c));
    client_send(c, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":5}");
    json_t *start = client_expect_skip(c, "start", "room", WAIT);
    json_int_t bot_id = jint(the_bot(jarr(start, "players")), "id");
    json_t *m;
    do {
        m = client_next(c, harness_ms(5000));
    } while (strcmp(jstr(m, "type"), "state") != 0 || jint(m, "id") != bot_id);
    client_move_any(c);
    server_kill(s);

    th_server *again = SERVER("--journal", path);
    client *back = client_connect(again);
    client_send(back, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect(back, "welcome", WAIT);
    json_t *snap = client_expect_skip(back, "start", "player", WAIT);
    assert_int_equal(jint(snap, "you"), me);
    assert_int_equal(jint(the_bot(jarr(snap, "players")), "id"), bot_id);
    json_int_t moves_then = jint(jplayer(jarr(snap, "players"), bot_id), "moves");
    do {
        m = client_next(back, harness_ms(5000));
    } while (strcmp(jstr(m, "type"), "state") != 0 || jint(m, "id") != bot_id);
    assert_true(jint(m, "moves") > moves_then);
    assert_int_equal(server_stop(again), 0);
}

/* --max-bots: past it, a `create` that needs bots gets server_full and
 * changes nothing (its sender is in no room); `bots` out of range is
 * bad_message. */
static void test_max_bots(void **state) {
    th_server *s = SERVER("--max-bots", "2");
    client *a = client_named(s, "a");
    client_send(a, "{\"type\":\"create\",\"players\":3,\"bots\":2}");
    client_expect_skip(a, "start", "room", WAIT);
    client *b = client_named(s, "b");
    client_send(b, "{\"type\":\"create\",\"players\":2,\"bots\":1}");
    client_expect_error(b, "server_full", WAIT);
    client_send(b, "{\"type\":\"move\",\"dir\":\"left\"}");
    client_expect_error(b, "not_playing", WAIT);
    client_send(b, "{\"type\":\"create\",\"players\":2,\"bots\":2}");
    client_expect_error(b, "bad_message", WAIT);
    client_send(b, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":6}");
    client_expect_error(b, "bad_message", WAIT);
    assert_int_equal(server_stop(s), 0);
}

/* A thousand bots racing (200 rooms of one person and five level-5 bots, the
 * worker's costliest search) leave an innocent client's round trips alone: their
 * p99 stays within harness_latency_bound of the p99 before the bots came (50 ms
 * more, scaled for sanitizers): the bots think off the loop. Searching on the
 * loop would stall it for seconds with a thousand bots waiting. */
static void test_thousand_bots_leave_pings_alone(void **state) {
    th_server *s = SERVER("--max-bots", "1000", "--max-bots-per-ip", "0", "--max-output",
                          "67108864", "--max-per-ip", "1000");
    enum { ROOMS = 200, PINGS = 50, STATES = 20 };
    client *innocent = client_named(s, "innocent");
    th_pings idle = client_pings(s, innocent, PINGS);
    int64_t baseline = idle.rtt_ms[idle.n - 2]; /* p99 of 50: the second slowest */
    client *people[ROOMS];
    for (int i = 0; i < ROOMS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        people[i] = client_named(s, name);
        client_send(people[i],
                    "{\"type\":\"create\",\"players\":6,\"bots\":5,\"level\":5,"
                    "\"target\":1048576}");
    }
    for (int i = 0; i < ROOMS; i++)
        client_expect_skip(people[i], "start", "room", harness_latency_ms(20000));
    /* The people read nothing more: their sockets and queues absorb the
     * broadcasts (--max-output is large) while the bots race. */
    th_pings p = client_pings(s, innocent, PINGS);
    int64_t p99 = p.rtt_ms[p.n - 2];
    int64_t bound = harness_latency_bound(baseline, 50);
    fprintf(stderr,
            "1000 bots: ping p50 %lld ms, p99 %lld ms (before the bots %lld ms, bound "
            "%lld ms)\n",
            (long long)p.rtt_ms[p.n / 2], (long long)p99, (long long)baseline,
            (long long)bound);
    assert_true(p99 <= bound);
    /* The bots were racing meanwhile: the first room's backlog holds their
     * states (only some: with a thousand bots each room waits its turn for
     * the worker, which a sanitizer build makes slow). */
    int64_t deadline = harness_now_ms() + harness_latency_ms(15000);
    int states = 0, others = 0;
    while (states < STATES) {
        json_t *m = client_next(people[0], harness_remaining(deadline));
        if (!strcmp(jstr(m, "type"), "state"))
            states++;
        else
            assert_true(++others < 5); /* little else: player messages at most */
    }
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_person_beats_level_1_bot, harness_teardown),
        cmocka_unit_test_teardown(test_websocket_race_against_a_bot, harness_teardown),
        cmocka_unit_test_teardown(test_quick_is_filled_by_bots, harness_teardown),
        cmocka_unit_test_teardown(test_rematch_with_a_bot_then_leave, harness_teardown),
        cmocka_unit_test_teardown(test_bot_survives_kill_9, harness_teardown),
        cmocka_unit_test_teardown(test_max_bots, harness_teardown),
        cmocka_unit_test_teardown(test_thousand_bots_leave_pings_alone, harness_teardown),
    };
    /* RACE2048_TEST=NAME runs that test alone (a pattern, as cmocka takes it). */
    const char *only = getenv("RACE2048_TEST");
    if (only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
