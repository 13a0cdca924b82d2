/* test_server_arena.c - arenas over JSON on one node: create bounds, joining, pairing,
 * points and streaks, bots for a lone entrant, the end, the rate limit and --max-arenas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "harness.h"
#include "natsd.h"
#include "wsclient.h"

/* Minutes and waits are divided by this (RACE2048_TEST_ARENA_SCALE): a 5-minute
 * arena lasts 15 s, pairing's waits are 250 ms and 750 ms, starts_in 60 is 3 s. */
#define SCALE "20"

static th_server *arena_server(const char *const *extra) {
    setenv("RACE2048_TEST_ARENA_SCALE", SCALE, 1);
    th_server *s = server_start(extra);
    unsetenv("RACE2048_TEST_ARENA_SCALE");
    return s;
}

/* The next `arena` whose status is `status`. */
static json_t *wait_arena(client *c, const char *status, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        json_t *m = client_wait_for(c, "arena", harness_remaining(deadline));
        if (!strcmp(jstr(m, "status"), status)) return m;
    }
}

static const char *create(client *c, const char *fields) {
    client_send(c, "{\"type\":\"arena_create\",%s}", fields);
    json_t *a = client_expect(c, "arena", WAIT);
    return jstr(a, "arena");
}

static void join(client *c, const char *code) {
    client_send(c, "{\"type\":\"arena_join\",\"arena\":\"%s\"}", code);
    json_t *a = client_expect(c, "arena", WAIT);
    assert_string_equal(jstr(a, "arena"), code);
    assert_true(jhas(a, "you"));
}

static int bots_in(json_t *players) {
    int bots = 0;
    size_t i;
    json_t *p;
    json_array_foreach(players, i, p) bots += jhas(p, "bot");
    return bots;
}

/* Every field's bounds: out of range is bad_message, the limits are taken. */
static void test_create_bounds(void **state) {
    (void)state;
    th_server *s = arena_server(NULL);
    client *c = client_named(s, "host");
    static const char *const bad[] = {
        "\"minutes\":5",
        "\"name\":\"\",\"minutes\":5",
        "\"name\":\"123456789012345678901234567890123\",\"minutes\":5",
        "\"name\":\"a\\u0001\",\"minutes\":5",
        "\"name\":\"a\\u00e9\",\"minutes\":5",
        "\"name\":7,\"minutes\":5",
        "\"name\":\"a\"",
        "\"name\":\"a\",\"minutes\":4",
        "\"name\":\"a\",\"minutes\":241",
        "\"name\":\"a\",\"minutes\":5.0",
        "\"name\":\"a\",\"minutes\":5,\"players\":1",
        "\"name\":\"a\",\"minutes\":5,\"players\":9",
        "\"name\":\"a\",\"minutes\":5,\"size\":2",
        "\"name\":\"a\",\"minutes\":5,\"size\":9",
        "\"name\":\"a\",\"minutes\":5,\"target\":6",
        "\"name\":\"a\",\"minutes\":5,\"target\":4",
        "\"name\":\"a\",\"minutes\":5,\"starts_in\":-1",
        "\"name\":\"a\",\"minutes\":5,\"starts_in\":86401",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        client_send(c, "{\"type\":\"arena_create\",%s}", bad[i]);
        client_expect_error(c, "bad_message", WAIT);
    }
    /* The defaults: 4 players, 4x4 to 2048, starting in 60 s (3 s scaled). */
    int64_t before = harness_now_ms();
    client_send(c,
                "{\"type\":\"arena_create\",\"name\":\"Friday night!\",\"minutes\":5}");
    json_t *a = client_expect(c, "arena", WAIT);
    assert_string_equal(jstr(a, "name"), "Friday night!");
    assert_string_equal(jstr(a, "status"), "upcoming");
    assert_int_equal(jint(a, "players"), 4);
    assert_int_equal(jint(a, "size"), 4);
    assert_int_equal(jint(a, "target"), 2048);
    assert_int_equal(jint(a, "entrants"), 0);
    assert_int_equal(json_array_size(jarr(a, "standings")), 0);
    assert_false(jhas(a, "you")); /* creating does not enter */
    assert_int_equal(jint(a, "ends") - jint(a, "starts"), 5 * 60000 / atoi(SCALE));
    assert_true(jint(a, "starts") >= before);
    /* The upper limits. */
    client_send(
        c, "{\"type\":\"arena_create\",\"name\":\"12345678901234567890123456789012\","
           "\"minutes\":240,\"players\":8,\"size\":8,\"target\":1048576,"
           "\"starts_in\":86400}");
    a = client_expect(c, "arena", WAIT);
    assert_int_equal(jint(a, "players"), 8);
    assert_int_equal(jint(a, "size"), 8);
    /* The lower ones. */
    client_send(c,
                "{\"type\":\"arena_create\",\"name\":\" \",\"minutes\":5,\"players\":2,"
                "\"size\":3,\"target\":8,\"starts_in\":0}");
    a = client_expect(c, "arena", WAIT);
    assert_string_equal(jstr(a, "status"), "running");
    /* All three are listed, without standings. */
    client_send(c, "{\"type\":\"arenas\"}");
    json_t *list = client_expect(c, "arenas", WAIT);
    assert_int_equal(json_array_size(jarr(list, "arenas")), 3);
    assert_false(jhas(json_array_get(jarr(list, "arenas"), 0), "standings"));
    client_send(c, "{\"type\":\"arena_join\",\"arena\":\"NOSUCH\"}");
    client_expect_error(c, "arena_not_found", WAIT);
    client_send(c, "{\"type\":\"arena_results\",\"arena\":\"x\"}");
    client_expect_error(c, "bad_message", WAIT);
    assert_int_equal(server_stop(s), 0);
}

/* Five arenas an hour per address (rate_limited), another address may; and
 * --max-arenas upcoming and running arenas at once (server_full). */
static void test_rate_limit_and_max_arenas(void **state) {
    (void)state;
    th_server *s = arena_server((const char *const[]){"--max-arenas", "7", NULL});
    client *c = client_named(s, "host");
    for (int i = 0; i < 5; i++)
        create(c, "\"name\":\"a\",\"minutes\":5");
    client_send(c, "{\"type\":\"arena_create\",\"name\":\"a\",\"minutes\":5}");
    client_expect_error(c, "rate_limited", WAIT);
    client *other = client_connect_from(s, "127.0.0.2");
    client_hello(other, "other");
    create(other, "\"name\":\"b\",\"minutes\":5");
    create(other, "\"name\":\"b\",\"minutes\":5");
    client_send(other, "{\"type\":\"arena_create\",\"name\":\"b\",\"minutes\":5}");
    client_expect_error(other, "server_full", WAIT);
    assert_int_equal(server_stop(s), 0);
}

/* Two entrants join before the start, race each other at the start (in a
 * rated room that says the arena), and the standings count the race; the
 * winner of three races in a row gets the third's points doubled. At the end:
 * the final standings, arena_over, arena_results. */
static void test_races_points_streak_and_end(void **state) {
    (void)state;
    th_server *s = arena_server(NULL);
    client *a = client_named(s, "alice");
    client *b = client_named(s, "bob");
    json_int_t alice = jint(client_hello(a, "alice"), "id");
    const char *code =
        create(a, "\"name\":\"duel\",\"minutes\":5,\"players\":2,\"target\":8,"
                  "\"starts_in\":20");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    for (int race = 1; race <= 3; race++) {
        json_t *start = client_wait_for(a, "start", 10000);
        assert_string_equal(jstr(start, "arena"), arena);
        assert_true(jbool(start, "rated"));
        assert_int_equal(json_array_size(jarr(start, "players")), 2);
        assert_true(jint(start, "time_limit") <= 15);
        json_t *bstart = client_wait_for(b, "start", WAIT);
        assert_string_equal(jstr(bstart, "room"), jstr(start, "room"));
        if (race == 3) {
            /* Both leave the pool during the last race: they finish it, and
             * no race forms after it. */
            client_send(a, "{\"type\":\"arena_leave\",\"arena\":\"%s\"}", arena);
            client_wait_for(a, "arena", WAIT);
            client_send(b, "{\"type\":\"arena_leave\",\"arena\":\"%s\"}", arena);
            client_wait_for(b, "arena", WAIT);
        }
        /* alice plays to the target 8; bob does not move. */
        static const char *const dirs[] = {"left", "up", "right", "down"};
        json_t *end = NULL;
        for (int k = 0; !end; k++) {
            client_send(a, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
            for (;;) {
                json_t *m = client_next(a, WAIT);
                const char *t = jstr(m, "type");
                if (!strcmp(t, "end")) {
                    end = m;
                    break;
                }
                if (!strcmp(t, "state") && jint(m, "id") == alice) break;
            }
        }
        assert_int_equal(jint(end, "winner"), alice);
        client_wait_for(b, "end", WAIT);
    }
    /* The standings: alice 1 + 1 + 2 points (the third win doubled), bob 0. */
    json_t *up;
    do {
        up = client_wait_for(b, "arena", 10000);
    } while (jint(jobj(up, "you"), "races") < 3);
    json_t *top = json_array_get(jarr(up, "standings"), 0);
    assert_int_equal(jint(top, "id"), alice);
    assert_int_equal(jint(top, "points"), 4);
    assert_int_equal(jint(top, "wins"), 3);
    assert_int_equal(jint(top, "streak"), 3);
    assert_int_equal(jint(jobj(up, "you"), "points"), 0);
    assert_int_equal(jint(jobj(up, "you"), "rank"), 2);
    /* No more races; at the end the final standings. */
    json_t *final = wait_arena(a, "finished", 30000);
    assert_int_equal(json_array_size(jarr(final, "standings")), 2);
    assert_int_equal(jint(jobj(final, "you"), "points"), 4);
    assert_int_equal(jint(jobj(final, "you"), "races"), 3);
    assert_false(jbool(jobj(final, "you"), "waiting"));
    wait_arena(b, "finished", WAIT);
    client_send(b, "{\"type\":\"arena_join\",\"arena\":\"%s\"}", arena);
    client_expect_error(b, "arena_over", WAIT);
    client_send(b, "{\"type\":\"arena_leave\",\"arena\":\"%s\"}", arena);
    client_expect_error(b, "arena_over", WAIT);
    client *late = client_named(s, "late");
    client_send(late, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", arena);
    json_t *res = client_expect(late, "arena", WAIT);
    assert_string_equal(jstr(res, "status"), "finished");
    assert_false(jhas(res, "you"));
    assert_int_equal(jint(json_array_get(jarr(res, "standings"), 0), "points"), 4);
    /* The same on the web: /api/arena/CODE (any case) and /api/arenas. */
    char target[64], lower[16];
    for (size_t i = 0; i <= strlen(arena); i++)
        lower[i] = (char)(arena[i] >= 'A' && arena[i] <= 'Z' ? arena[i] + 32 : arena[i]);
    int status;
    snprintf(target, sizeof target, "/api/arena/%s", lower);
    assert_true(jequal(http_api_get(s, target, &status), res));
    assert_int_equal(status, 200);
    json_t *list = http_api_get(s, "/api/arenas", &status);
    assert_int_equal(status, 200);
    assert_string_equal(jstr(json_array_get(jarr(list, "arenas"), 0), "arena"), arena);
    json_t *none = http_api_get(s, "/api/arena/NOPE12", &status);
    assert_int_equal(status, 404);
    assert_string_equal(jstr(none, "code"), "arena_not_found");
    assert_int_equal(server_stop(s), 0);
}

/* A lone entrant races level-3 bots; entrants are grouped into races of P
 * from the top, the rest race once two waited. */
static void test_pairing_sizes_and_bots(void **state) {
    (void)state;
    th_server *s = arena_server(NULL);
    client *host = client_named(s, "host");
    const char *code = create(host, "\"name\":\"solo\",\"minutes\":5,\"starts_in\":0");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    client *lone = client_named(s, "lone");
    join(lone, arena);
    json_t *start = client_wait_for(lone, "start", 10000);
    assert_int_equal(json_array_size(jarr(start, "players")), 4);
    assert_int_equal(bots_in(jarr(start, "players")), 3);
    assert_string_equal(jstr(start, "arena"), arena);

    /* Six entrants, races of 4: one race of 4 and one of 2 (all join within the
     * 10 s before the start). */
    code = create(host, "\"name\":\"six\",\"minutes\":5,\"starts_in\":200");
    snprintf(arena, sizeof arena, "%s", code);
    client *c[6];
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "e%d", i);
        c[i] = client_named(s, name);
        join(c[i], arena);
    }
    int sizes[9] = {0};
    for (int i = 0; i < 6; i++) {
        json_t *st = client_wait_for(c[i], "start", 10000);
        assert_int_equal(bots_in(jarr(st, "players")), 0);
        sizes[json_array_size(jarr(st, "players"))]++;
    }
    assert_int_equal(sizes[4], 4);
    assert_int_equal(sizes[2], 2);
    assert_int_equal(server_stop(s), 0);
}

/* P entrants of an arena of P-player races (P = 2..8) race together at its start. */
static void test_pairing_2_to_8(void **state) {
    (void)state;
    th_server *s = arena_server(NULL);
    char codes[9][16];
    client *entrants[9][8];
    for (int p = 2; p <= 8; p++) {
        char source[16], fields[96];
        snprintf(source, sizeof source, "127.0.0.%d", p); /* 5 creations an address */
        client *host = client_connect_from(s, source);
        client_hello(host, "host");
        snprintf(fields, sizeof fields,
                 "\"name\":\"p%d\",\"minutes\":5,\"players\":%d,\"starts_in\":200", p, p);
        snprintf(codes[p], sizeof codes[p], "%s", create(host, fields));
    }
    for (int p = 2; p <= 8; p++)
        for (int i = 0; i < p; i++) {
            char name[16];
            snprintf(name, sizeof name, "e%d_%d", p, i);
            entrants[p][i] = client_named(s, name);
            join(entrants[p][i], codes[p]);
        }
    for (int p = 2; p <= 8; p++) {
        const char *room = NULL;
        for (int i = 0; i < p; i++) {
            json_t *st = client_wait_for(entrants[p][i], "start", 20000);
            assert_string_equal(jstr(st, "arena"), codes[p]);
            assert_int_equal(json_array_size(jarr(st, "players")), p);
            assert_int_equal(bots_in(jarr(st, "players")), 0);
            if (!room) room = jstr(st, "room");
            assert_string_equal(jstr(st, "room"), room);
        }
    }
    assert_int_equal(server_stop(s), 0);
}

/* A `leave` during an arena race forfeits it (0 points) and takes the entrant
 * out of the pool. */
static void test_leave_forfeits(void **state) {
    (void)state;
    th_server *s = arena_server(NULL);
    client *a = client_named(s, "alice");
    client *b = client_named(s, "bob");
    json_int_t bob = jint(client_hello(b, "bob"), "id");
    const char *code =
        create(a, "\"name\":\"x\",\"minutes\":5,\"players\":2,\"starts_in\":0");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    client_wait_for(a, "start", 10000);
    client_wait_for(b, "start", WAIT);
    client_send(b, "{\"type\":\"leave\"}");
    client_wait_for(b, "left", WAIT);
    json_t *end = client_wait_for(a, "end", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    json_t *up;
    do {
        up = client_wait_for(a, "arena", 10000);
    } while (jint(jobj(up, "you"), "races") < 1);
    assert_int_equal(jint(jobj(up, "you"), "points"), 1);
    size_t i;
    json_t *row;
    json_array_foreach(jarr(up, "standings"), i, row) {
        if (jint(row, "id") != bob) continue;
        assert_int_equal(jint(row, "points"), 0);
        assert_false(jbool(row, "waiting"));
    }
    assert_int_equal(server_stop(s), 0);
}

/* An entrant disconnected past the grace period loses its race (0 points) and
 * is out of the pool; the one left waits alone and races bots. An entrant that
 * comes back (resume) within the grace is in the pool again. */
static void test_disconnect_past_grace(void **state) {
    (void)state;
    th_server *s = arena_server((const char *const[]){"--grace", "1", NULL});
    client *a = client_named(s, "alice");
    client *b = client_named(s, "bob");
    json_int_t bob = jint(client_hello(b, "bob"), "id");
    const char *code =
        create(a, "\"name\":\"x\",\"minutes\":5,\"players\":2,\"starts_in\":0");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    client_wait_for(a, "start", 10000);
    client_abort(b);
    json_t *end = client_wait_for(a, "end", 10000);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    /* Then, in either order: the standings with the race counted, and alone in
     * the pool, a race against a bot after the (shortened) 15 s. */
    json_t *up = NULL, *start = NULL;
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    while (!up || !start) {
        assert_true(harness_remaining(deadline) > 0);
        json_t *m = client_next(a, harness_remaining(deadline));
        const char *t = jstr(m, "type");
        if (!strcmp(t, "start")) start = m;
        if (!strcmp(t, "arena") && jint(jobj(m, "you"), "races") >= 1) up = m;
    }
    assert_int_equal(bots_in(jarr(start, "players")), 1);
    assert_int_equal(jint(jobj(up, "you"), "points"), 1);
    size_t i;
    json_t *row;
    bool seen = false;
    json_array_foreach(jarr(up, "standings"), i, row) {
        if (jint(row, "id") != bob) continue;
        seen = true;
        assert_int_equal(jint(row, "points"), 0);
        assert_int_equal(jint(row, "races"), 1);
        assert_false(jbool(row, "waiting"));
    }
    assert_true(seen);
    assert_int_equal(server_stop(s), 0);
}

/* --arena-every 2 (scaled: every 6 s, lasting 1 minute = 3 s): an arena of
 * 4-player races on 4x4 to 2048 opens at a multiple of the period. */
static void test_arena_every(void **state) {
    (void)state;
    th_server *s = arena_server((const char *const[]){"--arena-every", "2", NULL});
    client *c = client_named(s, "watcher");
    int64_t deadline = harness_now_ms() + harness_ms(20000);
    json_t *list;
    do {
        assert_true(harness_remaining(deadline) > 0);
        client_send(c, "{\"type\":\"arenas\"}");
        list = client_expect(c, "arenas", WAIT);
    } while (json_array_size(jarr(list, "arenas")) == 0);
    json_t *a = json_array_get(jarr(list, "arenas"), 0);
    assert_int_equal(jint(a, "players"), 4);
    assert_int_equal(jint(a, "size"), 4);
    assert_int_equal(jint(a, "target"), 2048);
    int64_t period = 2 * 60000 / atoi(SCALE);
    assert_int_equal(jint(a, "starts") % period, 0);
    assert_int_equal(jint(a, "ends") - jint(a, "starts"), 60000 / atoi(SCALE));
    assert_int_equal(server_stop(s), 0);
}

/* kill -9 mid-arena: after the restart the arena, its standings and its
 * entrants are back, a race that ended before the kill counts once, and an
 * arena whose end passed while the server was down ends at start with its
 * standings as they were. */
static void test_kill_9_and_restart(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/j", harness_temp_dir("arena-kill9"));
    th_server *s = arena_server((const char *const[]){"--journal", path, NULL});
    client *a = client_named(s, "alice");
    client *b = client_named(s, "bob");
    json_int_t alice = jint(client_hello(a, "alice"), "id");
    const char *code = create(a, "\"name\":\"durable\",\"minutes\":5,\"players\":2,"
                                 "\"target\":8,\"starts_in\":0");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    client_wait_for(a, "start", 10000);
    static const char *const dirs[] = {"left", "up", "right", "down"};
    json_t *end = NULL;
    for (int k = 0; !end; k++) {
        client_send(a, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
        for (;;) {
            json_t *m = client_next(a, WAIT);
            if (!strcmp(jstr(m, "type"), "end")) {
                end = m;
                break;
            }
            if (!strcmp(jstr(m, "type"), "state") && jint(m, "id") == alice) break;
        }
    }
    assert_int_equal(jint(end, "winner"), alice);
    /* The end reached alice: its record (and the arena's after it) are durable;
     * the next race forms. Then the server dies. */
    client_wait_for(a, "start", 10000);
    server_kill(s);
    th_server *again = arena_server((const char *const[]){"--journal", path, NULL});
    client *c = client_named(again, "carol");
    client_send(c, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", arena);
    json_t *res = client_expect(c, "arena", WAIT);
    assert_string_equal(jstr(res, "name"), "durable");
    assert_int_equal(jint(res, "entrants"), 2);
    json_t *top = json_array_get(jarr(res, "standings"), 0);
    assert_int_equal(jint(top, "id"), alice);
    assert_int_equal(jint(top, "points"), 1); /* the first race, once */
    assert_int_equal(jint(top, "races"), 1);
    /* A new entrant races bots (the others are away until they join again). */
    join(c, arena);
    json_t *start = client_wait_for(c, "start", 10000);
    assert_int_equal(bots_in(jarr(start, "players")), 1);
    assert_int_equal(server_stop(again), 0);
    /* Restarted after its end passed while the server was down: it ends at
     * start, with the standings it had. (The wait is for the wall clock to
     * pass the arena's `ends`, the condition under test, not a synchronisation.) */
    json_int_t ends = jint(res, "ends");
    struct timespec ts;
    for (;;) {
        clock_gettime(CLOCK_REALTIME, &ts);
        if ((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 > ends) break;
        nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
    }
    th_server *late = arena_server((const char *const[]){"--journal", path, NULL});
    client *d = client_named(late, "dave");
    client_send(d, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", arena);
    res = client_expect(d, "arena", WAIT);
    assert_string_equal(jstr(res, "status"), "finished");
    client_send(d, "{\"type\":\"arena_join\",\"arena\":\"%s\"}", arena);
    client_expect_error(d, "arena_over", WAIT);
    top = json_array_get(jarr(res, "standings"), 0);
    assert_int_equal(jint(top, "id"), alice);
    assert_int_equal(jint(top, "points"), 1);
    assert_int_equal(server_stop(late), 0);
}

/* Alice moves until the race ends (she reaches the target 8 first): the end. */
static json_t *play_to_end(client *a, json_int_t alice) {
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int k = 0;; k++) {
        client_send(a, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
        for (;;) {
            json_t *m = client_next(a, WAIT);
            assert_non_null(m);
            if (!strcmp(jstr(m, "type"), "end")) return m;
            if (!strcmp(jstr(m, "type"), "state") && jint(m, "id") == alice) break;
        }
    }
}

/* kill -9 during an arena race: after the restart both entrants resume their
 * seats, the race ends and counts in the arena once, with its points, and
 * both are back in the pool (the next race forms). */
static void test_kill_9_mid_race(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/j", harness_temp_dir("arena-kill9-race"));
    th_server *s = arena_server((const char *const[]){"--journal", path, NULL});
    client *a = client_connect(s);
    client *b = client_connect(s);
    json_int_t alice = jint(client_hello(a, "alice"), "id");
    json_int_t bob = jint(client_hello(b, "bob"), "id");
    char tokens[2][64];
    snprintf(tokens[0], sizeof tokens[0], "%s", client_token(a));
    snprintf(tokens[1], sizeof tokens[1], "%s", client_token(b));
    const char *code = create(a, "\"name\":\"midrace\",\"minutes\":60,\"players\":2,"
                                 "\"target\":8,\"starts_in\":0");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    json_t *start = client_wait_for(a, "start", 10000);
    assert_string_equal(jstr(start, "arena"), arena);
    char room[16];
    snprintf(room, sizeof room, "%s", jstr(start, "room"));
    client_wait_for(b, "start", WAIT);
    /* The race's start is on file; then the server dies mid-race. */
    natsd_wait_metric(s, "race2048_journal_waiting_bytes", 0, 10000);
    server_kill(s);
    th_server *again = arena_server((const char *const[]){"--journal", path, NULL});
    client *q[2];
    for (int i = 0; i < 2; i++) {
        q[i] = client_connect(again);
        client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[i]);
        client_expect(q[i], "welcome", WAIT);
        json_t *back = client_wait_for(q[i], "start", WAIT);
        assert_string_equal(jstr(back, "room"), room);
    }
    json_t *end = play_to_end(q[0], alice);
    assert_int_equal(jint(end, "winner"), alice);
    client_wait_for(q[1], "end", WAIT);
    /* Both are entrants again: the next race forms, with both. */
    json_t *next[2];
    for (int i = 0; i < 2; i++) {
        next[i] = client_wait_for(q[i], "start", 10000);
        assert_string_equal(jstr(next[i], "arena"), arena);
        assert_int_equal(bots_in(jarr(next[i], "players")), 0);
    }
    assert_string_equal(jstr(next[0], "room"), jstr(next[1], "room"));
    assert_string_not_equal(jstr(next[0], "room"), room);
    /* The race counted once: alice 1 point and a win, bob 0, one race each. */
    client *c = client_named(again, "carol");
    client_send(c, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", arena);
    json_t *res = client_expect(c, "arena", WAIT);
    assert_int_equal(jint(res, "entrants"), 2);
    json_t *rows = jarr(res, "standings");
    assert_int_equal(json_array_size(rows), 2);
    json_t *first = json_array_get(rows, 0), *second = json_array_get(rows, 1);
    assert_int_equal(jint(first, "id"), alice);
    assert_int_equal(jint(first, "points"), 1);
    assert_int_equal(jint(first, "races"), 1);
    assert_int_equal(jint(first, "wins"), 1);
    assert_int_equal(jint(second, "id"), bob);
    assert_int_equal(jint(second, "points"), 0);
    assert_int_equal(jint(second, "races"), 1);
    assert_int_equal(server_stop(again), 0);
}

/* kill -9 while entrants wait in the pool (not racing): after the restart a
 * guest that comes back by `resume` with its token and an account that comes
 * back by `hello` with its key are the same entrants again (their ids), wait
 * in the pool and are paired into a race together at the start. */
static void test_kill_9_waiting_come_back(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/j", harness_temp_dir("arena-kill9-wait"));
    th_server *s = arena_server((const char *const[]){"--journal", path, NULL});
    client *a = client_connect(s);
    json_int_t alice = jint(client_hello(a, "alice"), "id");
    char token[64];
    snprintf(token, sizeof token, "%s", client_token(a));
    client *b = client_named(s, "Bob");
    client_send(b, "{\"type\":\"register\"}");
    json_t *reg = client_expect(b, "registered", WAIT);
    char key[40];
    snprintf(key, sizeof key, "%s", jstr(reg, "key"));
    client_send(b, "{\"type\":\"hello\",\"name\":\"Bob\",\"key\":\"%s\"}", key);
    json_int_t bob = jint(client_expect(b, "welcome", WAIT), "id");
    /* Starts in 200 s scaled (10 s): both wait in the pool until then. */
    const char *code = create(a, "\"name\":\"waiting\",\"minutes\":60,\"players\":2,"
                                 "\"target\":8,\"starts_in\":200");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    join(a, arena);
    join(b, arena);
    /* The update that shows both went out after their record: once it is
     * durable, the server dies with both waiting. */
    json_t *up;
    do {
        up = client_wait_for(a, "arena", 10000);
    } while (jint(up, "entrants") < 2);
    assert_string_equal(jstr(up, "status"), "upcoming");
    assert_true(jbool(jobj(up, "you"), "waiting"));
    natsd_wait_metric(s, "race2048_journal_waiting_bytes", 0, 10000);
    server_kill(s);
    th_server *again = arena_server((const char *const[]){"--journal", path, NULL});
    /* A token nobody had is no entrant's: refused as before. */
    client *stranger = client_connect(again);
    client_send(stranger, "{\"type\":\"resume\",\"token\":\"%032d\"}", 7);
    client_expect_error(stranger, "bad_token", WAIT);
    client *qa = client_connect(again);
    client_send(qa, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    json_t *w = client_expect(qa, "welcome", WAIT);
    assert_int_equal(jint(w, "id"), alice);
    assert_string_equal(jstr(w, "name"), "alice");
    assert_string_equal(jstr(w, "token"), token);
    json_t *back = client_expect(qa, "arena", WAIT);
    assert_string_equal(jstr(back, "arena"), arena);
    assert_int_equal(jint(jobj(back, "you"), "id"), alice);
    assert_true(jbool(jobj(back, "you"), "waiting"));
    client *qb = client_connect(again);
    client_send(qb, "{\"type\":\"hello\",\"name\":\"bob\",\"key\":\"%s\"}", key);
    w = client_expect(qb, "welcome", WAIT);
    assert_int_equal(jint(w, "id"), bob);
    back = client_expect(qb, "arena", WAIT);
    assert_int_equal(jint(jobj(back, "you"), "id"), bob);
    assert_true(jbool(jobj(back, "you"), "waiting"));
    assert_int_equal(jint(back, "entrants"), 2);
    /* Each comes back once: the token again is no seat's nor entrant's. */
    client *twice = client_connect(again);
    client_send(twice, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect_error(twice, "bad_token", WAIT);
    /* At the start both race each other. */
    json_t *sa = client_wait_for(qa, "start", 30000);
    json_t *sb = client_wait_for(qb, "start", WAIT);
    assert_string_equal(jstr(sa, "arena"), arena);
    assert_string_equal(jstr(sa, "room"), jstr(sb, "room"));
    assert_int_equal(json_array_size(jarr(sa, "players")), 2);
    assert_int_equal(bots_in(jarr(sa, "players")), 0);
    assert_int_equal(jint(sa, "you"), alice);
    assert_int_equal(jint(sb, "you"), bob);
    assert_int_equal(server_stop(again), 0);
}

/* kill -9 after more events than the arena's last record weighs (30 joins: a
 * new record is written among them, events follow it): after the restart
 * every entrant is there, and the first and the last to join come back by
 * their tokens into the pool. */
static void test_kill_9_after_many_events(void **state) {
    (void)state;
    enum { N = 30 };
    char path[512];
    snprintf(path, sizeof path, "%s/j", harness_temp_dir("arena-kill9-events"));
    th_server *s = arena_server((const char *const[]){"--journal", path, NULL});
    client *host = client_named(s, "host");
    const char *code = create(host, "\"name\":\"many\",\"minutes\":60,\"players\":8,"
                                    "\"starts_in\":200");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    char tokens[2][64];
    json_int_t ids[2];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "e%d", i);
        client *c = client_connect(s);
        json_int_t id = jint(client_hello(c, name), "id");
        if (i == 0 || i == N - 1) {
            snprintf(tokens[i ? 1 : 0], sizeof tokens[0], "%s", client_token(c));
            ids[i ? 1 : 0] = id;
        }
        join(c, arena);
    }
    natsd_wait_metric(s, "race2048_journal_waiting_bytes", 0, 10000);
    server_kill(s);
    th_server *again = arena_server((const char *const[]){"--journal", path, NULL});
    client *c = client_named(again, "reader");
    client_send(c, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", arena);
    json_t *res = client_expect(c, "arena", WAIT);
    assert_int_equal(jint(res, "entrants"), N);
    assert_string_equal(jstr(res, "status"), "upcoming");
    for (int k = 0; k < 2; k++) {
        client *q = client_connect(again);
        client_send(q, "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[k]);
        assert_int_equal(jint(client_expect(q, "welcome", WAIT), "id"), ids[k]);
        json_t *back = client_expect(q, "arena", WAIT);
        assert_true(jbool(jobj(back, "you"), "waiting"));
        assert_int_equal(jint(back, "entrants"), N);
    }
    assert_int_equal(server_stop(again), 0);
}

/* 19 entrants of a 2-player arena at its start: one pairing round forms 9
 * races (started over two loop turns) and leaves one entrant, who races a bot
 * once it has waited alone (the round after the last start says when). */
static void test_round_over_turns_and_the_rest(void **state) {
    (void)state;
    enum { N = 19 };
    th_server *s = arena_server(NULL);
    client *host = client_named(s, "host");
    const char *code = create(host, "\"name\":\"turns\",\"minutes\":60,\"players\":2,"
                                    "\"starts_in\":100");
    char arena[16];
    snprintf(arena, sizeof arena, "%s", code);
    client *c[N];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        c[i] = client_named(s, name);
        join(c[i], arena);
    }
    int with_bots = 0;
    for (int i = 0; i < N; i++) {
        json_t *st = client_wait_for(c[i], "start", 20000);
        assert_string_equal(jstr(st, "arena"), arena);
        assert_int_equal(json_array_size(jarr(st, "players")), 2);
        with_bots += bots_in(jarr(st, "players"));
    }
    assert_int_equal(with_bots, 1);
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_create_bounds, harness_teardown),
        cmocka_unit_test_teardown(test_rate_limit_and_max_arenas, harness_teardown),
        cmocka_unit_test_teardown(test_races_points_streak_and_end, harness_teardown),
        cmocka_unit_test_teardown(test_pairing_sizes_and_bots, harness_teardown),
        cmocka_unit_test_teardown(test_pairing_2_to_8, harness_teardown),
        cmocka_unit_test_teardown(test_round_over_turns_and_the_rest, harness_teardown),
        cmocka_unit_test_teardown(test_leave_forfeits, harness_teardown),
        cmocka_unit_test_teardown(test_disconnect_past_grace, harness_teardown),
        cmocka_unit_test_teardown(test_arena_every, harness_teardown),
        cmocka_unit_test_teardown(test_kill_9_and_restart, harness_teardown),
        cmocka_unit_test_teardown(test_kill_9_mid_race, harness_teardown),
        cmocka_unit_test_teardown(test_kill_9_waiting_come_back, harness_teardown),
        cmocka_unit_test_teardown(test_kill_9_after_many_events, harness_teardown),
    };
    const char *only = getenv("RACE2048_TEST");
    if (only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
