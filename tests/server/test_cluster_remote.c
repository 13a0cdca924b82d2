/* test_cluster_remote.c - many nodes as one server: a race whose players (JSON,
 * WebSocket, text) sit on three nodes, spectators elsewhere, rooms/join/watch/resume
 * through any node, quick across nodes. The test starts its own nats-server. */
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
#include "wsclient.h"
#include "natsd.h"
#include "tt.h"
#include "wsclient.h"

#define SCREEN 65536

/* The three nodes of a test, all seeing each other. */
static void three_nodes(th_server *n[3]) {
    n[0] = natsd_node("a");
    n[1] = natsd_node("b");
    n[2] = natsd_node("c");
    for (int i = 0; i < 3; i++)
        natsd_wait_metric(n[i], "race2048_cluster_nodes", 3, 15000);
}

/* Asks `rooms` on s until code is listed (the directory reaches every node
 * through NATS: there is no message to wait for but the listing itself). */
static json_t *wait_listed(th_server *s, const char *code) {
    client *c = client_named(s, "lister");
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        client_send(c, "{\"type\":\"rooms\"}");
        json_t *rooms = client_expect(c, "rooms", WAIT);
        size_t i;
        json_t *row;
        json_array_foreach(jarr(rooms, "rooms"), i, row) {
            if (!strcmp(jstr(row, "room"), code)) {
                client_close(c);
                return row;
            }
        }
        if (harness_remaining(deadline) <= 0) fail_msg("room %s never listed", code);
        poll(NULL, 0, 50);
    }
}

static void wait_text(tt_client *t, size_t from, const char *needle) {
    if (tt_wait_str(t, from, needle, harness_ms(WAIT)) < 0) {
        static char plain[SCREEN];
        tt_screen_text(t->buf, t->len, from, plain, sizeof plain);
        fail_msg("\"%s\" never came; the last screen:\n%s", needle, plain);
    }
}

/* The resume code a text racer's screen shows. */
static void code_on_screen(tt_client *t, char code[16]) {
    static char plain[SCREEN];
    tt_screen_text(t->buf, t->len, 0, plain, sizeof plain);
    const char *at = strstr(plain, "type:  resume ");
    if (!at) fail_msg("no resume code on the race screen:\n%s", plain);
    at += strlen("type:  resume ");
    size_t n = 0;
    while (n < 15 && ((at[n] >= 'A' && at[n] <= 'Z') || (at[n] >= '0' && at[n] <= '9')))
        n++;
    assert_int_equal(n, 8);
    memcpy(code, at, n);
    code[n] = '\0';
}

/* The `players` of a message without the moving parts (connected flags). */
static json_t *boards_of(json_t *msg) {
    json_t *out = json_array();
    size_t i;
    json_t *pl;
    json_array_foreach(jarr(msg, "players"), i, pl) {
        json_array_append_new(out,
                              json_pack("{s:I,s:O,s:I}", "id", jint(pl, "id"), "board",
                                        jarr(pl, "board"), "score", jint(pl, "score")));
    }
    return harness_keep(out);
}

/* A three-player race on three nodes: a JSON creator on a, a WebSocket
 * player on b, a text player on c; a JSON spectator on c and one on b.
 * Everyone sees the same start and the same spawns, the moves of the others,
 * and exactly one `end`. */
static void test_race_across_three_nodes(void **state) {
    (void)state;
    th_server *n[3];
    three_nodes(n);

    client *ann = client_named(n[0], "ann");
    client_send(ann, "{\"type\":\"create\",\"players\":3}");
    json_t *room = client_expect(ann, "room", WAIT);
    const char *code = jstr(room, "room");
    assert_int_equal(strlen(code), 6); /* cluster codes carry the node */
    for (int i = 0; i < 3; i++) {
        json_t *row = wait_listed(n[i], code);
        assert_int_equal(jint(row, "players"), 1);
        /* Who is in it travels with the row between nodes. */
        assert_string_equal(json_string_value(json_array_get(jarr(row, "names"), 0)),
                            "ann");
    }

    client *bob = ws_connect(n[1]);
    ws_send(bob, "{\"type\":\"hello\",\"name\":\"bob\"}");
    char token[64];
    snprintf(token, sizeof token, "%s", jstr(ws_expect(bob, "welcome", WAIT), "token"));
    ws_send(bob, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *joined = ws_expect(bob, "room", WAIT);
    assert_int_equal(json_array_size(jarr(joined, "players")), 2);
    client_expect(ann, "room", WAIT);

    tt_client tina;
    tt_connect(&tina, n[2]->port);
    wait_text(&tina, 0, "\r\n> ");
    tt_sends(&tina, "name tina\r\n");
    wait_text(&tina, 0, "You are now ");
    size_t mark = tina.len;
    char line[64];
    snprintf(line, sizeof line, "join %s\r\n", code);
    tt_sends(&tina, line);

    json_t *start_a = client_expect_skip(ann, "start", "room", WAIT);
    json_t *start_b = ws_expect_skip(bob, "start", "room", WAIT);
    assert_string_equal(jstr(start_a, "commit"), jstr(start_b, "commit"));
    assert_true(jequal(boards_of(start_a), boards_of(start_b)));
    wait_text(&tina, mark, "type:  resume ");
    char tina_code[16];
    code_on_screen(&tina, tina_code);

    /* Spectators on two other nodes than the room's. */
    client *spec_c = client_named(n[2], "watcher");
    client_send(spec_c, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    json_t *snap = client_expect_skip(spec_c, "start", "room", WAIT);
    assert_int_equal(json_array_size(jarr(snap, "players")), 3);
    client *spec_b = client_named(n[1], "watcher2");
    client_send(spec_b, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect_skip(spec_b, "start", "room", WAIT);

    /* The same spawns: ann and bob make the same move on the same board and
     * get the same board back. */
    json_t *sa = client_move_any(ann);
    const char *dir = jstr(sa, "dir");
    ws_send(bob, "{\"type\":\"move\",\"dir\":\"%s\"}", dir);
    json_int_t ann_id = jint(start_a, "you"), bob_id = jint(start_b, "you");
    json_t *sb;
    do { /* ann's move may come first */
        sb = ws_expect_skip(bob, "state", "player", WAIT);
    } while (jint(sb, "id") != bob_id);
    assert_int_equal(jint(sa, "id"), ann_id);
    assert_true(jequal(jarr(sa, "board"), jarr(sb, "board")));
    /* The spectators see both moves. */
    int seen = 0;
    while (seen < 2) {
        json_t *st = client_expect_skip(spec_c, "state", "player", WAIT);
        seen++;
        (void)st;
    }

    /* tina plays through text mode: her move reaches ann. */
    mark = tina.len;
    tt_sends(&tina, "wasd\r\n");
    json_t *st;
    do {
        st = client_expect_skip(ann, "state", "player", WAIT);
    } while (strcmp(jstr(st, "name"), "tina") != 0);

    /* tina drops and resumes by her code through node a; bob drops and
     * resumes by his token through node c. */
    tt_close(&tina);
    tt_client back;
    tt_connect(&back, n[0]->port);
    wait_text(&back, 0, "\r\n> ");
    mark = back.len;
    snprintf(line, sizeof line, "resume %s\r\n", tina_code);
    tt_sends(&back, line);
    wait_text(&back, mark, "Welcome back, tina");

    client_close(bob);
    client *bob2 = client_connect(n[2]);
    client_send(bob2, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    json_t *w = client_expect(bob2, "welcome", WAIT);
    assert_int_equal(jint(w, "id"), bob_id);
    json_t *again = client_expect(bob2, "start", WAIT);
    assert_true(jequal(jarr(jplayer(jarr(again, "players"), bob_id), "board"),
                       jarr(sb, "board")));

    /* ann and tina leave: bob wins by forfeit, and everyone sees one end. */
    client_send(ann, "{\"type\":\"leave\"}");
    client_expect_skip(ann, "left", "state player end", WAIT);
    tt_sends(&back, "leave\r\n");
    json_t *end = client_expect_skip(bob2, "end", "state player", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), bob_id);
    json_t *end_c = client_expect_skip(spec_c, "end", "state player", WAIT);
    assert_true(jequal(jarr(end, "results"), jarr(end_c, "results")));
    assert_null(client_next_or_null(bob2, 300));
    tt_close(&back);

    /* history and replay through every node: the game of node a's room. */
    for (int i = 0; i < 3; i++) {
        client *h = client_named(n[i], "historian");
        json_int_t game = 0;
        int64_t deadline = harness_now_ms() + harness_ms(WAIT);
        while (!game) { /* listed once its record is durable */
            client_send(h, "{\"type\":\"history\"}");
            json_t *hist = client_expect(h, "history", WAIT);
            size_t k;
            json_t *g;
            json_array_foreach(jarr(hist, "games"), k, g) {
                if (jhas(g, "room") && !strcmp(jstr(g, "room"), code))
                    game = jint(g, "game");
            }
            if (!game && harness_remaining(deadline) <= 0)
                fail_msg("node %d's history lacks room %s's game", i, code);
        }
        client_send(h, "{\"type\":\"replay\",\"game\":%lld}", (long long)game);
        json_t *replay = client_expect(h, "replay", WAIT);
        assert_int_equal(jint(replay, "game"), game);
        assert_true(jequal(jarr(replay, "results"), jarr(end, "results")));
        client_send(h, "{\"type\":\"replay\",\"game\":%lld}", (long long)game + 999);
        client_expect_error(h, "game_not_found", WAIT);
        client_close(h);
        /* The same over HTTP: /api/game/ID waits for the node that has it. */
        client *web = client_connect(n[i]);
        char get[128];
        snprintf(get, sizeof get,
                 "GET /api/game/%lld HTTP/1.1\r\nHost: t\r\n\r\n"
                 "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
                 (long long)game);
        client_send_raw(web, get, strlen(get), false);
        http_response r;
        http_read(web, &r, false, WAIT);
        assert_int_equal(r.status, 200);
        json_t *api = json_loadb(r.body, r.body_len, 0, NULL);
        assert_non_null(api);
        assert_true(jequal(api, replay));
        json_decref(api);
        /* The request pipelined behind it: answered in order, or (behind an
         * answer that waited for another node: today nodes b and c) left for
         * the client to send again, the connection closed after the answer. */
        char conn_hdr[32];
        assert_true(http_header(&r, "Connection", conn_hdr, sizeof conn_hdr));
        http_response_free(&r);
        if (i > 0 && strcmp(conn_hdr, "close") == 0) { /* node a's record: at once */
            assert_int_equal(client_drain_to_eof(web, WAIT), 0);
        } else {
            http_read(web, &r, false, WAIT);
            assert_string_equal(r.body, "ok");
            http_response_free(&r);
        }
        client_close(web);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(server_stop(n[i]), 0);
}

/* Two `quick` requests on two nodes make one race within a second or so. */
static void test_quick_across_nodes(void **state) {
    (void)state;
    th_server *a = natsd_node("a"), *b = natsd_node("b");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    client *x = client_named(a, "x"), *y = client_named(b, "y");
    client_send(x, "{\"type\":\"quick\",\"players\":2}");
    client_expect(x, "queued", WAIT);
    client_send(y, "{\"type\":\"quick\",\"players\":2}");
    client_expect_skip(y, "queued", "", WAIT);
    json_t *sx = client_expect_skip(x, "start", "queued", WAIT);
    json_t *sy = client_expect_skip(y, "start", "queued", WAIT);
    assert_string_equal(jstr(sx, "room"), jstr(sy, "room"));
    assert_true(jequal(boards_of(sx), boards_of(sy)));
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
}

/* A room whose node is gone: join gets `unavailable`, and the node's
 * players on the others are told so (the race goes on elsewhere once the
 * node's heartbeat expires and a survivor takes it over). */
static void test_owner_gone_is_unavailable(void **state) {
    (void)state;
    th_server *a = natsd_node("a"), *b = natsd_node("b");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    client *ann = client_named(a, "ann");
    client_send(ann, "{\"type\":\"create\",\"players\":2}");
    const char *code = jstr(client_expect(ann, "room", WAIT), "room");
    /* At once: a room made a moment ago on another node is found. */
    client *bob = client_named(b, "bob");
    client_send(bob, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(bob, "start", "room", WAIT);
    assert_int_equal(natsd_metric(b, "race2048_remote_players"), 1);
    assert_int_equal(natsd_metric(a, "race2048_remote_guests"), 1);
    server_kill(a);
    client_expect_skip(bob, "error", "state player", 15000);
    natsd_wait_metric(b, "race2048_remote_players", 0, 5000);
    assert_int_equal(server_stop(b), 0);
}

/* A crowd of spectators on another node costs the room's node a NATS
 * message per broadcast and turn, not one per spectator: the messages its
 * room hands to guests go out batched by node. */
static void test_crowd_costs_one_message_per_broadcast(void **state) {
    (void)state;
    enum { CROWD = 100, MOVES = 10 };
    th_server *a = natsd_node("a");
    th_server *b = SERVER("--cluster", natsd_url, "--node", "b", "--max-per-ip", "1000");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    client *racers[2];
    const char *code = race_start(a, 2, "", racers, NULL);
    client *crowd[CROWD];
    for (int i = 0; i < CROWD; i++) {
        crowd[i] = client_connect(b);
        client_send(crowd[i], "{\"type\":\"watch\",\"room\":\"%s\"}", code);
        client_expect_skip(crowd[i], "start", "welcome room", WAIT);
    }
    natsd_wait_metric(a, "race2048_remote_guests", CROWD, WAIT);
    long long messages = natsd_metric(a, "race2048_remote_guest_messages_total");
    long long published = natsd_metric(a, "race2048_remote_published_total");
    for (int m = 0; m < MOVES; m++) {
        client_move_any(racers[0]);
        for (int i = 0; i < CROWD; i++)
            client_expect_skip(crowd[i], "state", "player", WAIT);
    }
    messages = natsd_metric(a, "race2048_remote_guest_messages_total") - messages;
    published = natsd_metric(a, "race2048_remote_published_total") - published;
    print_message("%lld messages to guests in %lld NATS messages\n", messages, published);
    assert_true(messages >= CROWD * MOVES);
    assert_true(published * 10 <= messages);
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
}

/* One room's `end` held for the journal holds the messages to that room's
 * guests, not to every guest of the node: a guest of another room there
 * gets its move's state while the `end` still waits for a commit (before,
 * the node's whole batch waited for it). The journal commits every 2 s
 * here; a commit that falls between the `end` and the state makes a round
 * inconclusive, and another round is played. */
static void test_end_holds_only_its_room(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("cluster-hold");
    char journal[512];
    snprintf(journal, sizeof journal, "%s/a.journal", dir);
    th_server *a = SERVER("--cluster", natsd_url, "--node", "a", "--journal", journal,
                          "--journal-sync-ms", "2000");
    th_server *b = natsd_node("b");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    bool shown = false;
    for (int round = 0; round < 4 && !shown; round++) {
        /* Two rooms on a, each with a racer on a and a guest from b. */
        client *x[2] = {NULL, NULL}, *y[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            x[k] = client_named(a, k ? "x2" : "x1");
            y[k] = client_named(b, k ? "y2" : "y1");
            client_send(x[k], "{\"type\":\"create\",\"players\":2}");
            const char *code = jstr(client_expect(x[k], "room", WAIT), "room");
            client_send(y[k], "{\"type\":\"join\",\"room\":\"%s\"}", code);
            client_expect_skip(x[k], "start", "room player", WAIT);
            client_expect_skip(y[k], "start", "room player", WAIT);
        }
        /* Everything so far is durable: only the `end` will wait. */
        natsd_wait_metric(a, "race2048_journal_waiting_bytes", 0, 15000);
        long long commits = natsd_metric(a, "race2048_journal_commits_total");
        client_send(x[0], "{\"type\":\"leave\"}"); /* y1 wins: the `end` */
        int64_t deadline = harness_now_ms() + harness_ms(WAIT);
        bool recorded = false, committed = false;
        while (!recorded && !committed) {
            recorded = natsd_metric(a, "race2048_journal_waiting_bytes") > 0;
            committed = natsd_metric(a, "race2048_journal_commits_total") != commits;
            if (harness_remaining(deadline) <= 0)
                fail_msg("the leave was never recorded");
            if (!recorded && !committed) poll(NULL, 0, 5);
        }
        client_move_any(y[1]);
        bool same_commit = natsd_metric(a, "race2048_journal_commits_total") == commits;
        shown = recorded && !committed && same_commit;
        /* y1's `end` comes, once a commit has made it durable. */
        client_expect_skip(y[0], "end", "player state", 3 * WAIT);
        assert_true(natsd_metric(a, "race2048_journal_commits_total") > commits);
        print_message("round %d: %s\n", round,
                      shown ? "the other room's guest got its state while the end waited"
                            : "a commit fell in between: inconclusive");
        for (int k = 0; k < 2; k++) {
            client_close(x[k]);
            client_close(y[k]);
        }
    }
    assert_true(shown);
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_race_across_three_nodes, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_quick_across_nodes, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_owner_gone_is_unavailable, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_crowd_costs_one_message_per_broadcast,
                                        natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_end_holds_only_its_room, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
