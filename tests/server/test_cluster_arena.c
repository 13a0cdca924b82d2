/* test_cluster_arena.c - arenas in cluster mode: entrants on three nodes race in one
 * arena run by one node, the arena goes on on another node after its node's kill -9,
 * and --arena-every on three nodes opens one arena a period. The test starts its own
 * nats-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <poll.h>

#include "harness.h"
#include "natsd.h"
#include "wsclient.h"

/* Minutes and waits are divided by this (RACE2048_TEST_ARENA_SCALE): a
 * 5-minute arena lasts 15 s, starts_in 100 is 5 s. The kill's test divides
 * them by 2 only: an entrant waits alone 7.5 s before bots come, long enough
 * to be killed with it while it waits. */
#define SCALE      "20"
#define SCALE_KILL "2"
/* The contract's bound: a race goes on within 10 s of its node's death. */
#define TAKEOVER_MS 10000

/* A node of the test's cluster with arenas scaled (extra: more flags). */
static th_server *arena_node(const char *name, const char *journal, const char *extra,
                             const char *value) {
    setenv("RACE2048_TEST_ARENA_SCALE", journal ? SCALE_KILL : SCALE, 1);
    th_server *s = journal ? SERVER("--cluster", natsd_url, "--node", name, "--journal",
                                    journal, "--grace", "120")
                   : extra ? SERVER("--cluster", natsd_url, "--node", name, extra, value)
                           : natsd_node(name);
    unsetenv("RACE2048_TEST_ARENA_SCALE");
    return s;
}

/* The next `arena` in which the receiver has raced at least `races` times. */
static json_t *wait_standing(client *c, json_int_t races, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        json_t *m = client_wait_for(c, "arena", harness_remaining(deadline));
        if (jhas(m, "you") && jint(jobj(m, "you"), "races") >= races) return m;
    }
}

/* arena_join of code from c: its `arena` with c's own row. */
static json_t *join(client *c, const char *code) {
    client_send(c, "{\"type\":\"arena_join\",\"arena\":\"%s\"}", code);
    json_t *a = client_wait_for(c, "arena", WAIT);
    assert_string_equal(jstr(a, "arena"), code);
    assert_true(jhas(a, "you"));
    return a;
}

/* Moves of c until its race ends (c plays to the small target of the race);
 * returns the `end`. */
static json_t *play_to_end(client *c, json_int_t id) {
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int k = 0;; k++) {
        client_send(c, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[k % 4]);
        for (;;) {
            json_t *m = client_next(c, WAIT);
            assert_non_null(m);
            const char *t = jstr(m, "type");
            if (!strcmp(t, "end")) return m;
            if (!strcmp(t, "state") && jint(m, "id") == id) break;
        }
    }
}

/* A move of c's that moved its board (id: c's), skipping the `arena`
 * updates that come between; returns its `state`. */
static json_t *move_any(client *c, json_int_t id) {
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int i = 0; i < 4; i++) {
        client_send(c, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[i]);
        for (;;) {
            json_t *m = client_next(c, WAIT);
            assert_non_null(m);
            if (strcmp(jstr(m, "type"), "state") != 0 || jint(m, "id") != id) continue;
            if (jbool(m, "moved")) return m;
            break;
        }
    }
    fail_msg("no direction moved the board");
    return NULL;
}

/* `arenas` asked of s until code is listed (another node's arena: the list
 * is gathered from every node); returns its row. */
static json_t *listed(th_server *s, const char *code) {
    client *c = client_named(s, "lister");
    int64_t deadline = harness_now_ms() + harness_ms(TAKEOVER_MS);
    for (;;) {
        client_send(c, "{\"type\":\"arenas\"}");
        json_t *list = client_wait_for(c, "arenas", WAIT);
        size_t i;
        json_t *row;
        json_array_foreach(jarr(list, "arenas"), i, row) {
            if (!strcmp(jstr(row, "arena"), code)) {
                client_close(c);
                return row;
            }
        }
        if (harness_remaining(deadline) <= 0) fail_msg("arena %s never listed", code);
        poll(NULL, 0, 100);
    }
}

/* One arena on node a, entrants on a, b and c: they are paired together (one
 * race of three, no bots), every entrant gets the standings through its own
 * node, and they race again; `arenas` and `arena_results` on any node show it;
 * at its end every entrant gets the final standings, and any node says it is
 * over. */
static void test_entrants_on_three_nodes(void **state) {
    (void)state;
    th_server *n[3] = {arena_node("a", NULL, NULL, NULL),
                       arena_node("b", NULL, NULL, NULL),
                       arena_node("c", NULL, NULL, NULL)};
    for (int i = 0; i < 3; i++)
        natsd_wait_metric(n[i], "race2048_cluster_nodes", 3, 15000);
    static const char *const names[3] = {"ann", "bob", "cat"};
    client *e[3];
    json_int_t id[3];
    for (int i = 0; i < 3; i++) {
        e[i] = client_connect(n[i]);
        id[i] = jint(client_hello(e[i], names[i]), "id");
    }
    /* Starts in 5 s: everyone is in the pool when it starts, so that the
     * first race is of all three. */
    client_send(e[0], "{\"type\":\"arena_create\",\"name\":\"three nodes\",\"minutes\":5,"
                      "\"players\":3,\"target\":8,\"starts_in\":100}");
    char code[16];
    snprintf(code, sizeof code, "%s",
             jstr(client_wait_for(e[0], "arena", WAIT), "arena"));
    for (int i = 0; i < 3; i++) {
        json_t *a = join(e[i], code);
        assert_int_equal(jint(jobj(a, "you"), "id"), id[i]);
        assert_string_equal(jstr(a, "status"), "upcoming");
    }
    /* Listed and readable from every node, by someone who is no entrant. */
    for (int i = 1; i < 3; i++) {
        json_t *row = listed(n[i], code);
        assert_int_equal(jint(row, "entrants"), 3);
        client *r = client_named(n[i], "reader");
        client_send(r, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", code);
        json_t *res = client_wait_for(r, "arena", WAIT);
        assert_string_equal(jstr(res, "arena"), code);
        assert_false(jhas(res, "you"));
        client_send(r, "{\"type\":\"arena_results\",\"arena\":\"NOPE23\"}");
        client_expect_error(r, "arena_not_found", WAIT);
        client_close(r);
        /* The same over HTTP: the cluster's arenas, not only this node's. */
        int status;
        json_t *list = http_api_get(n[i], "/api/arenas", &status);
        assert_int_equal(status, 200);
        assert_int_equal(json_array_size(jarr(list, "arenas")), 1);
        assert_string_equal(jstr(json_array_get(jarr(list, "arenas"), 0), "arena"), code);
        char target[64];
        snprintf(target, sizeof target, "/api/arena/%s", code);
        json_t *one = http_api_get(n[i], target, &status);
        assert_int_equal(status, 200);
        assert_string_equal(jstr(one, "arena"), code);
        assert_false(jhas(one, "you"));
        json_t *none = http_api_get(n[i], "/api/arena/NOPE23", &status);
        assert_int_equal(status, 404);
        assert_string_equal(jstr(none, "code"), "arena_not_found");
    }
    /* Two races (the standings of the first may come after the second's
     * start: they are read after the second). */
    for (int race = 1; race <= 2; race++) {
        json_t *start[3];
        for (int i = 0; i < 3; i++) {
            start[i] = client_wait_for(e[i], "start", 15000);
            assert_string_equal(jstr(start[i], "arena"), code);
            assert_int_equal(json_array_size(jarr(start[i], "players")), 3);
            assert_string_equal(jstr(start[i], "room"), jstr(start[0], "room"));
            assert_string_equal(jstr(start[i], "commit"), jstr(start[0], "commit"));
            for (int k = 0; k < 3; k++)
                assert_non_null(jplayer(jarr(start[i], "players"), id[k]));
        }
        /* The entrant on c plays to the target 8; the others do not move. */
        json_t *end = play_to_end(e[2], id[2]);
        assert_int_equal(jint(end, "winner"), id[2]);
        for (int i = 0; i < 2; i++)
            assert_int_equal(jint(client_wait_for(e[i], "end", WAIT), "winner"), id[2]);
    }
    /* The standings reach every entrant through its own node. */
    for (int i = 0; i < 3; i++) {
        json_t *up = wait_standing(e[i], 2, 10000);
        json_t *top = json_array_get(jarr(up, "standings"), 0);
        assert_int_equal(jint(top, "id"), id[2]);
        assert_int_equal(jint(top, "wins"), 2);
        assert_int_equal(jint(jobj(up, "you"), "id"), id[i]);
        assert_int_equal(json_array_size(jarr(up, "standings")), 3);
    }
    /* An entrant on b leaves the pool through its node: no more races. */
    client_send(e[1], "{\"type\":\"arena_leave\",\"arena\":\"%s\"}", code);
    json_t *left = client_wait_for(e[1], "arena", WAIT);
    assert_true(jhas(left, "you"));
    /* The end: the final standings reach every entrant through its node. */
    for (int i = 0; i < 3; i++) {
        json_t *final;
        do {
            final = client_wait_for(e[i], "arena", 30000);
        } while (strcmp(jstr(final, "status"), "finished") != 0);
        assert_int_equal(json_array_size(jarr(final, "standings")), 3);
        assert_int_equal(jint(jobj(final, "you"), "id"), id[i]);
        assert_int_equal(jint(json_array_get(jarr(final, "standings"), 0), "id"), id[2]);
    }
    /* Over, from any node: to an entrant and to someone who is none. */
    client_send(e[1], "{\"type\":\"arena_join\",\"arena\":\"%s\"}", code);
    client_expect_error(e[1], "arena_over", WAIT);
    client *late = client_named(n[2], "late");
    client_send(late, "{\"type\":\"arena_leave\",\"arena\":\"%s\"}", code);
    client_expect_error(late, "arena_over", WAIT);
    client_send(late, "{\"type\":\"arena_results\",\"arena\":\"%s\"}", code);
    json_t *res = client_expect(late, "arena", WAIT);
    assert_string_equal(jstr(res, "status"), "finished");
    assert_false(jhas(res, "you"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(server_stop(n[i]), 0);
}

/* kill -9 of the node that runs the arena, with a race of entrants of two
 * other nodes running and a third entrant waiting in the pool: the node that
 * takes its races over runs the arena on; the race goes on (resume) and
 * counts in the arena, the waiting entrant is in the pool again by itself,
 * and the entrants race again. */
static void test_kill_arena_node(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("cluster-arena-kill");
    char ja[512], jb[512], jc[512];
    snprintf(ja, sizeof ja, "%s/a.journal", dir);
    snprintf(jb, sizeof jb, "%s/b.journal", dir);
    snprintf(jc, sizeof jc, "%s/c.journal", dir);
    th_server *a = arena_node("a", ja, NULL, NULL);
    th_server *n[2] = {arena_node("b", jb, NULL, NULL), arena_node("c", jc, NULL, NULL)};
    natsd_wait_metric(a, "race2048_cluster_nodes", 3, 15000);
    for (int i = 0; i < 2; i++)
        natsd_wait_metric(n[i], "race2048_cluster_nodes", 3, 15000);
    client *host = client_named(a, "host");
    client_send(host, "{\"type\":\"arena_create\",\"name\":\"survives\",\"minutes\":20,"
                      "\"players\":2,\"target\":2048,\"starts_in\":0}");
    char code[16];
    snprintf(code, sizeof code, "%s",
             jstr(client_wait_for(host, "arena", WAIT), "arena"));
    static const char *const names[2] = {"bob", "cat"};
    client *e[2];
    json_int_t id[2];
    char token[2][64];
    for (int i = 0; i < 2; i++) {
        e[i] = client_connect(n[i]);
        id[i] = jint(client_hello(e[i], names[i]), "id");
        snprintf(token[i], sizeof token[i], "%s", client_token(e[i]));
        join(e[i], code);
    }
    json_t *start = client_wait_for(e[0], "start", 15000);
    assert_string_equal(jstr(start, "arena"), code);
    char room[16];
    snprintf(room, sizeof room, "%s", jstr(start, "room"));
    assert_string_equal(jstr(client_wait_for(e[1], "start", WAIT), "room"), room);
    json_t *last[2];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++)
            last[i] = move_any(e[i], id[i]);
    /* dan (on c) enters now: alone in the pool, he waits (bots would come
     * only after 7.5 s). */
    client *dan = client_connect(n[1]);
    json_int_t dan_id = jint(client_hello(dan, "dan"), "id");
    json_t *waiting = join(dan, code);
    assert_true(jbool(jobj(waiting, "you"), "waiting"));
    natsd_wait_metric(a, "race2048_journal_waiting_bytes", 0, 10000);
    int64_t killed = harness_now_ms();
    server_kill(a);
    /* The race goes on where it is taken over: its players resume. */
    client *q[2];
    for (int i = 0; i < 2; i++) {
        int64_t deadline = harness_now_ms() + harness_ms(2 * TAKEOVER_MS);
        for (;;) {
            q[i] = client_connect(n[i]);
            client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", token[i]);
            json_t *m = client_next(q[i], 3 * WAIT);
            assert_non_null(m);
            if (!strcmp(jstr(m, "type"), "welcome")) break;
            assert_true(harness_remaining(deadline) > 0);
            client_close(q[i]);
            poll(NULL, 0, 200);
        }
        json_t *st = client_wait_for(q[i], "start", WAIT);
        assert_string_equal(jstr(st, "room"), room);
        assert_string_equal(jstr(st, "arena"), code);
        json_t *me = jplayer(jarr(st, "players"), id[i]);
        assert_int_equal(jint(me, "moves"), jint(last[i], "moves"));
    }
    /* dan is back in the pool by himself, where the arena runs now. */
    assert_string_equal(jstr(client_wait_for(dan, "error", TAKEOVER_MS), "code"),
                        "unavailable");
    json_t *back = client_wait_for(dan, "arena", 2 * TAKEOVER_MS);
    assert_int_equal(jint(jobj(back, "you"), "id"), dan_id);
    assert_string_equal(jstr(back, "status"), "running");
    print_message("kill -9 to the waiting entrant back in the pool: %lld ms\n",
                  (long long)(harness_now_ms() - killed));
    /* bob forfeits; cat's win counts in the arena, now run by the taker. */
    move_any(q[1], id[1]);
    client_send(q[0], "{\"type\":\"leave\"}");
    json_t *end = client_wait_for(q[1], "end", WAIT);
    assert_int_equal(jint(end, "winner"), id[1]);
    /* cat, back in the pool, races dan, who waited there (at once: the
     * standings may come after its start). */
    json_t *next = client_wait_for(q[1], "start", 15000);
    assert_string_equal(jstr(next, "arena"), code);
    assert_non_null(jplayer(jarr(next, "players"), dan_id));
    assert_string_equal(jstr(client_wait_for(dan, "start", WAIT), "room"),
                        jstr(next, "room"));
    json_t *up = wait_standing(q[1], 1, 10000);
    assert_int_equal(jint(jobj(up, "you"), "wins"), 1);
    assert_string_equal(jstr(up, "status"), "running");
    /* Listed by both survivors; bob enters again through his node. */
    for (int i = 0; i < 2; i++)
        assert_string_equal(jstr(listed(n[i], code), "status"), "running");
    join(q[0], code);
    for (int i = 0; i < 2; i++)
        assert_int_equal(server_stop(n[i]), 0);
}

/* --arena-every 2 on three nodes (scaled: a period of 6 s): each period's
 * arena is opened by one node only. */
static void test_arena_every_once(void **state) {
    (void)state;
    th_server *n[3];
    static const char *const names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        n[i] = arena_node(names[i], NULL, "--arena-every", "2");
    for (int i = 0; i < 3; i++)
        natsd_wait_metric(n[i], "race2048_cluster_nodes", 3, 15000);
    int64_t period = 2 * 60000 / atoi(SCALE);
    /* Three periods with all three nodes up. */
    int64_t from = (harness_now_ms() / period + 1) * period;
    client *c = client_named(n[1], "watcher");
    int64_t deadline = harness_now_ms() + harness_ms(60000);
    json_t *list;
    int opened;
    do {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 200);
        client_send(c, "{\"type\":\"arenas\"}");
        list = client_wait_for(c, "arenas", WAIT);
        opened = 0;
        size_t i;
        json_t *row;
        json_array_foreach(jarr(list, "arenas"), i, row) opened +=
            jint(row, "starts") >= from;
    } while (opened < 3);
    /* No two rows of one period. */
    size_t i, k;
    json_t *row, *other;
    json_array_foreach(jarr(list, "arenas"), i, row) {
        assert_int_equal(jint(row, "starts") % period, 0);
        json_array_foreach(jarr(list, "arenas"), k, other) {
            if (k != i) assert_true(jint(row, "starts") != jint(other, "starts"));
        }
    }
    print_message("%zu arenas opened, one a period\n",
                  json_array_size(jarr(list, "arenas")));
    for (int j = 0; j < 3; j++)
        assert_int_equal(server_stop(n[j]), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_entrants_on_three_nodes, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_kill_arena_node, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_arena_every_once, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
