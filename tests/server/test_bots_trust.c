/* test_bots_trust.c - bots nobody can hoard: a per-address share, a race with no person
 * left ends at once, one room's 8x8 bots do not slow another room's bot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "checks.h"
#include "harness.h"

/* How many players of a start or end player list are bots. */
static int bots_in(json_t *players) {
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(players, i, p) n += jhas(p, "bot");
    return n;
}

/* The message of the last refusal create_with_bots() saw. */
static char refusal[256];

/* c creates a room of `players` with players-1 bots of `level` (fields: more
 * JSON members) and returns its `start`, or NULL after an error server_full. */
static json_t *create_with_bots(client *c, int players, int level, const char *fields) {
    client_send(c, "{\"type\":\"create\",\"players\":%d,\"bots\":%d,\"level\":%d%s}",
                players, players - 1, level, fields);
    for (;;) {
        json_t *m = client_next(c, WAIT);
        const char *t = jstr(m, "type");
        if (!strcmp(t, "start")) return m;
        if (!strcmp(t, "error")) {
            assert_string_equal(jstr(m, "code"), "server_full");
            snprintf(refusal, sizeof refusal, "%s", jstr(m, "message"));
            return NULL;
        }
        /* `room`, then the bots' first states may come before we look. */
    }
}

/* Reads c's messages until one of `type` (returned); *left counts the
 * `player` messages on the way that say a player left. */
static json_t *until(client *c, const char *type, int ms, int *left) {
    int64_t deadline = harness_now_ms() + ms;
    for (;;) {
        json_t *m = client_next(c, harness_remaining(deadline));
        const char *t = jstr(m, "type");
        if (!strcmp(t, type)) return m;
        if (!strcmp(t, "error")) fail_msg("error %s", jstr(m, "code"));
        if (left && !strcmp(t, "player") && !strcmp(jstr(m, "status"), "left")) (*left)++;
    }
}

/* ------------------------------------------------------- the share --- */

/* --max-bots 64: one address gets max(7, 64 / 8) = 8 bots, however many
 * connections ask; past that its `create` gets server_full naming
 * --max-bots-per-ip, and its `quick` is not filled with bots while the share
 * is used. Another address still gets bots, by `create` and by `quick`. Once
 * one of the first address's races ends, its share comes back and its quick
 * is filled. */
static void test_one_address_gets_its_share(void **state) {
    th_server *s = SERVER("--max-bots", "64", "--quick-bots", "1");
    enum { TRIES = 12 };
    client *hoarder[TRIES];
    int got = 0, refused = 0;
    for (int i = 0; i < TRIES; i++) {
        char name[16];
        snprintf(name, sizeof name, "h%d", i);
        hoarder[i] = client_named(s, name);
        json_t *start = create_with_bots(hoarder[i], 3, 1, ",\"target\":1048576");
        if (start)
            got += bots_in(jarr(start, "players"));
        else
            refused++;
    }
    fprintf(stderr, "one address: %d bots of 64, %d creates refused\n", got, refused);
    assert_int_equal(got, 8);
    assert_int_equal(refused, TRIES - 4);
    assert_non_null(strstr(refusal, "--max-bots-per-ip"));

    /* Its quick waits: no bots for it while its share is used. */
    client *waiter = client_named(s, "waiter");
    client_send(waiter, "{\"type\":\"quick\",\"players\":2,\"size\":3}");
    client_expect(waiter, "queued", WAIT);
    assert_true(client_quiet_for(waiter, harness_ms(2500)));

    /* Another address gets bots at once, by create and by quick. */
    client *other = client_connect_from(s, "127.0.0.2");
    client_hello(other, "other");
    json_t *start = create_with_bots(other, 4, 1, "");
    assert_non_null(start);
    assert_int_equal(bots_in(jarr(start, "players")), 3);
    client *other_quick = client_connect_from(s, "127.0.0.2");
    client_hello(other_quick, "oq");
    client_send(other_quick, "{\"type\":\"quick\",\"players\":2,\"size\":5}");
    client_expect(other_quick, "queued", WAIT);
    start = client_expect(other_quick, "start", harness_ms(10000));
    assert_int_equal(bots_in(jarr(start, "players")), 1);

    /* One of the first address's people leaves: its race ends, its two bots
     * go, and the waiter's next try gets a bot. */
    client_send(hoarder[0], "{\"type\":\"leave\"}");
    until(hoarder[0], "left", WAIT, NULL);
    start = client_expect(waiter, "start", harness_ms(10000));
    assert_int_equal(bots_in(jarr(start, "players")), 1);
    assert_int_equal(server_stop(s), 0);
}

/* ------------------------------------------------- nobody left to race --- */

/* The person of a race against two bots leaves: the race ends at once (its
 * spectator gets both bots' `player` ... "left" and then `end` all_over,
 * winner null, every seat left), `rooms` lists nothing, the journal holds
 * the end and race2048-replay finds it right. The same when the person's
 * connection drops and its grace runs out. */
static void test_room_with_no_person_ends(void **state) {
    char journal[600];
    snprintf(journal, sizeof journal, "%s/j", harness_temp_dir("bots-alone"));
    th_server *s = SERVER("--journal", journal, "--journal-sync-ms", "5", "--grace", "1");
    for (int round = 0; round < 2; round++) {
        client *person = client_named(s, round ? "dropper" : "leaver");
        json_t *start = create_with_bots(person, 3, 5, ",\"target\":1048576");
        assert_non_null(start);
        const char *code = jstr(start, "room");
        client *watcher = client_named(s, "watcher");
        client_send(watcher, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
        client_expect(watcher, "start", WAIT);
        /* The bots race a little first. */
        int states = 0;
        while (states < 4)
            if (!strcmp(jstr(client_next(watcher, WAIT), "type"), "state")) states++;
        int64_t gone = harness_now_ms();
        if (round == 0) {
            client_send(person, "{\"type\":\"leave\"}");
            /* It still gets the end its leave caused, then `left`. */
            until(person, "end", WAIT, NULL);
            until(person, "left", WAIT, NULL);
        } else {
            client_close(person);
        }
        int bots_left = 0;
        json_t *end = until(watcher, "end", harness_ms(10000), &bots_left);
        size_t i;
        json_t *m;
        fprintf(stderr, "round %d: end %lld ms after the person went\n", round,
                (long long)(harness_now_ms() - gone));
        assert_true(bots_left >= 3); /* the person, then both bots */
        assert_string_equal(jstr(end, "reason"), "all_over");
        assert_true(jnull(end, "winner"));
        json_t *results = jarr(end, "results");
        assert_int_equal(bots_in(results), 2);
        json_array_foreach(results, i, m) assert_string_equal(jstr(m, "status"), "left");
        client_send(watcher, "{\"type\":\"rooms\"}");
        json_t *rooms = until(watcher, "rooms", WAIT, NULL);
        assert_int_equal(json_array_size(jarr(rooms, "rooms")), 0);
        client_close(watcher);
    }
    assert_int_equal(server_stop(s), 0);
    char *out = NULL;
    const char *replay = getenv("RACE2048_REPLAY");
    if (!replay) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[] = {replay, journal, NULL};
    int rc = harness_run(argv, &out);
    fprintf(stderr, "race2048-replay: %s", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    char *data = harness_read_file(journal, NULL);
    size_t ends = 0;
    for (const char *p = data; (p = strstr(p, "\"reason\":\"all_over\"")); p++)
        ends++;
    free(data);
    assert_true(ends >= 2);
}

/* ---------------------------------------------------------- fairness --- */

/* The bots of room `code`: their moves now, summed, from a spectator's snapshot. */
static json_int_t bot_moves(th_server *s, const char *code, int64_t *at) {
    client *w = client_connect(s);
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    json_t *start = until(w, "start", WAIT, NULL); /* after its welcome */
    if (at) *at = harness_now_ms();
    json_int_t moves = 0;
    size_t i;
    json_t *p;
    json_array_foreach(jarr(start, "players"), i, p) if (jhas(p, "bot")) moves +=
        jint(p, "moves");
    client_close(w);
    return moves;
}

/* Moves a second of the bots of room `code` over ms. */
static double pace(th_server *s, const char *code, int ms) {
    int64_t t0, t1;
    json_int_t m0 = bot_moves(s, code, &t0);
    /* The measuring window (a measurement, not a wait for anything). */
    int64_t until_ms = harness_now_ms() + ms;
    while (harness_remaining(until_ms) > 0)
        poll(NULL, 0, harness_remaining(until_ms));
    json_int_t m1 = bot_moves(s, code, &t1);
    return (double)(m1 - m0) * 1000.0 / (double)(t1 - t0);
}

enum { SAMPLE = 3 }; /* load rooms measured beside the victim */

/* One window counted in moves, not in time: from the same moment, the moves
 * of the victim's bot and of each of the SAMPLE load rooms (all 7 of its
 * bots together), until those rooms made `want` moves each on average.
 * Returns the victim's moves; *load gets a load room's (the average) and
 * *ms the window's length. */
static double turns(th_server *s, const char *victim, char load_code[][16], int want,
                    double *load, double *ms) {
    int64_t t0, t1;
    json_int_t v0 = bot_moves(s, victim, &t0), l0 = 0, v1, l1;
    for (int k = 0; k < SAMPLE; k++)
        l0 += bot_moves(s, load_code[k], NULL);
    int64_t deadline = harness_now_ms() + harness_ms(120000);
    do {
        /* Looks again every half second (a measurement, not a wait for anything). */
        poll(NULL, 0, 500);
        v1 = bot_moves(s, victim, &t1);
        l1 = 0;
        for (int k = 0; k < SAMPLE; k++)
            l1 += bot_moves(s, load_code[k], NULL);
    } while (l1 - l0 < (json_int_t)want * SAMPLE && harness_remaining(deadline) > 0);
    *load = (double)(l1 - l0) / SAMPLE;
    *ms = (double)(t1 - t0);
    return (double)(v1 - v0);
}

/* A 4x4 level-5 bot (6 moves a second at most) beside rooms of seven 8x8
 * level-5 bots that keep the bot worker busier than it can keep up with.
 * The worker takes one search from each room with work in turn, so the
 * victim's room is served as often as any load room's while it wants to
 * move: it keeps its pace as long as a turn of the rooms is shorter than
 * its pace, and past that gets a turn in each, as each load room does for
 * its seven bots together. Before, one FIFO worker served every bot in
 * turn of asking: the victim got one search in each seven of a load
 * room's, and fell from 6.1 to 2.1 moves a second.
 *
 * Measured in the worker's turns, not in wall time: the load grows until
 * a load room makes fewer moves than 80 % of the victim's pace alone (a
 * turn of the rooms outlasts its pace, so the worker, not its pace, bounds
 * it), then over one window counted in moves the victim makes at least
 * half as many moves as a load room (FIFO: a seventh), or, if the turn
 * got short again meanwhile, at least half the moves its pace allows. A
 * machine busy with other work stretches the turn and the victim's pace
 * alike, so the bound holds on it: a fixed share of its solo pace did not
 * (73 % of it, against 80 %, beside a build: a turn of the rooms had
 * grown past its pace). */
static void test_big_boards_leave_a_4x4_bot_its_pace(void **state) {
    th_server *s = SERVER("--max-bots", "3000", "--max-bots-per-ip", "0", "--max-output",
                          "268435456", "--max-per-ip", "1000", "--max-games-per-min", "0",
                          "--journal", "none", "--grace", "600");
    client *victim = client_named(s, "victim");
    json_t *start = create_with_bots(victim, 2, 5, ",\"target\":1048576");
    assert_non_null(start);
    char code[16];
    snprintf(code, sizeof code, "%s", jstr(start, "room"));
    double alone = pace(s, code, harness_ms(5000));
    fprintf(stderr, "4x4 level-5 bot alone: %.2f moves/s\n", alone);
    assert_true(alone > 4);

    enum { BATCH = 30, MOST = 400 };
    static client *load[MOST];
    static char load_code[SAMPLE][16];
    int rooms = 0, more = BATCH;
    double room_pace = 0, target = 0.8 * alone;
    while (rooms < MOST) {
        for (int i = 0; i < more && rooms < MOST; i++, rooms++) {
            char name[16];
            snprintf(name, sizeof name, "l%d", rooms);
            load[rooms] = client_named(s, name);
            json_t *ls =
                create_with_bots(load[rooms], 8, 5, ",\"size\":8,\"target\":1048576");
            assert_non_null(ls);
            if (rooms < SAMPLE)
                snprintf(load_code[rooms], sizeof load_code[0], "%s", jstr(ls, "room"));
        }
        /* A load room's pace: the worker's turns of the rooms a second. */
        room_pace = pace(s, load_code[0], harness_ms(3000));
        fprintf(stderr, "%d rooms of 7 8x8 bots: %.2f moves/s a room\n", rooms,
                room_pace);
        if (room_pace < target) break;
        /* A turn lasts as long as the rooms' searches: enough rooms for one
         * to outlast the victim's pace, with a fifth more for margin. */
        more = (int)(rooms * (room_pace / target * 1.2 - 1)) + 1;
        if (more < BATCH) more = BATCH;
    }
    assert_true(room_pace < target);

    double load_moves, ms;
    double victim_moves = turns(s, code, load_code, 20, &load_moves, &ms);
    double pace_moves = alone * ms / 1000.0;
    fprintf(
        stderr,
        "over %.0f ms: the 4x4 bot %.0f moves, a load room %.1f (its 7 bots together), "
        "its pace alone %.1f\n",
        ms, victim_moves, load_moves, pace_moves);
    assert_true(load_moves >= 20);
    assert_true(victim_moves >=
                0.5 * (load_moves < pace_moves ? load_moves : pace_moves));
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_one_address_gets_its_share, harness_teardown),
        cmocka_unit_test_teardown(test_room_with_no_person_ends, harness_teardown),
        cmocka_unit_test_teardown(test_big_boards_leave_a_4x4_bot_its_pace,
                                  harness_teardown),
    };
    /* Each is its own ctest (tests/server/CMakeLists.txt): RACE2048_TEST picks one. */
    const char *only = getenv("RACE2048_TEST");
    if (only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
