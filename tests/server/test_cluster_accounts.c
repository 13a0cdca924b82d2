/* test_cluster_accounts.c - accounts across the cluster: registered on one node, logged
 * in on another, names kept from guests everywhere, two rated races of one account
 * ending on two nodes at once both counted, a rated race ended on a node killed before
 * its KV write counted once by the node that takes over, one leaderboard, one daily seed.
 * The test starts its own nats-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include <math.h>
#include <poll.h>
#include <time.h>

#include "harness.h"
#include "natsd.h"
#include "rating.h"
#include "wsclient.h"

static int64_t now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void two_nodes(th_server *n[2]) {
    n[0] = natsd_node("a");
    n[1] = natsd_node("b");
    for (int i = 0; i < 2; i++)
        natsd_wait_metric(n[i], "race2048_cluster_nodes", 2, 15000);
}

/* A client named `name` that registered it; its key goes to key (33 bytes). */
static client *registered(th_server *s, const char *name, char *key) {
    client *c = client_named(s, name);
    client_send(c, "{\"type\":\"register\"}");
    json_t *r = client_expect(c, "registered", WAIT);
    assert_string_equal(jstr(r, "name"), name);
    assert_int_equal(strlen(jstr(r, "key")), 32);
    snprintf(key, 33, "%s", jstr(r, "key"));
    return c;
}

/* A new client of s logged in to name with key; *ms: how long the welcome took. */
static client *logged_in(th_server *s, const char *name, const char *key, double *ms) {
    client *c = client_connect(s);
    int64_t t0 = now_us();
    client_send(c, "{\"type\":\"hello\",\"name\":\"%s\",\"key\":\"%s\"}", name, key);
    json_t *w = client_expect(c, "welcome", WAIT);
    if (ms) *ms = (double)(now_us() - t0) / 1000.0;
    assert_true(jbool(w, "account"));
    assert_int_equal(strcasecmp(jstr(w, "name"), name), 0);
    return c;
}

/* Asks `profile` of name on s until its rating shows `games` rated races
 * (the watch brings other nodes' writes: the reply itself is what is waited
 * for, asked again until a deadline). */
static json_t *profile_with_games(th_server *s, const char *name, json_int_t games) {
    client *c = client_named(s, "asker");
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        client_send(c, "{\"type\":\"profile\",\"name\":\"%s\"}", name);
        json_t *p = client_expect(c, "profile", WAIT);
        if (jint(json_object_get(p, "rating"), "games") == games) {
            client_close(c);
            return p;
        }
        if (harness_remaining(deadline) <= 0)
            fail_msg("%s never showed %lld games on port %d", name, (long long)games,
                     s->port);
        poll(NULL, 0, 20);
    }
}

/* ----------------------------------------------------------- accounts --- */

/* Registered on a, logged in on b at once (b may not have seen it yet: it
 * reads it from KV); a guest cannot take the name on either node, nor can a
 * second register; a wrong key is bad_key on b. Prints the log-in times. */
static void test_register_on_a_log_in_on_b(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[33];
    registered(n[0], "Alice", key);
    double first_ms, again_ms;
    logged_in(n[1], "alice", key, &first_ms); /* as registered: "Alice" */
    logged_in(n[1], "Alice", key, &again_ms);
    /* A guest hello with a name no node knows: one KV read (the cost of a
     * node that never saw a name). */
    client *g = client_connect(n[1]);
    int64_t t0 = now_us();
    client_send(g, "{\"type\":\"hello\",\"name\":\"nobody\"}");
    client_expect(g, "welcome", WAIT);
    double unknown_ms = (double)(now_us() - t0) / 1000.0;
    print_message("log in on b right after register on a: %.2f ms; again: %.2f ms; "
                  "a guest hello with a name no node has: %.2f ms (fetches on b: %lld)\n",
                  first_ms, again_ms, unknown_ms,
                  natsd_metric(n[1], "race2048_accounts_kv_fetches_total"));

    for (int i = 0; i < 2; i++) {
        client *guest = client_connect(n[i]);
        client_send(guest, "{\"type\":\"hello\",\"name\":\"ALICE\"}");
        json_t *e = client_expect(guest, "error", WAIT);
        assert_string_equal(jstr(e, "code"), "name_taken");
    }
    client *bad = client_connect(n[1]);
    client_send(bad, "{\"type\":\"hello\",\"name\":\"Alice\",\"key\":\"%032d\"}", 0);
    assert_string_equal(jstr(client_expect(bad, "error", WAIT), "code"), "bad_key");

    /* A node that takes in no other node's writes (test-only): it has never
     * seen Alice, and reads her from KV when she logs in. */
    setenv("RACE2048_TEST_NO_ACCOUNT_WATCH", "1", 1);
    th_server *c_node = natsd_node("c");
    unsetenv("RACE2048_TEST_NO_ACCOUNT_WATCH");
    natsd_wait_metric(c_node, "race2048_cluster_nodes", 3, 15000);
    double never_ms, known_ms;
    logged_in(c_node, "Alice", key, &never_ms);
    logged_in(c_node, "Alice", key, &known_ms);
    assert_int_equal(natsd_metric(c_node, "race2048_accounts_kv_fetches_total"), 1);
    print_message("log in on a node that never saw the account: %.2f ms; "
                  "once it has: %.2f ms\n",
                  never_ms, known_ms);

    /* A name registered on b, on a node that has not seen it, in a hello
     * sent together with the next request: the request waits for it. */
    char key_b[33];
    registered(n[1], "Bea", key_b);
    client *c = client_connect(c_node);
    client_send(c, "{\"type\":\"hello\",\"name\":\"Bea\",\"key\":\"%s\"}", key_b);
    client_send(c, "{\"type\":\"profile\",\"name\":\"Bea\"}");
    assert_true(jbool(client_expect(c, "welcome", WAIT), "account"));
    assert_string_equal(jstr(client_expect(c, "profile", WAIT), "name"), "Bea");
    /* The same over a WebSocket, where every message of a read is handed
     * over at once: the request behind the hello still waits for it. */
    char key_c[33];
    registered(n[1], "Cy", key_c);
    client *ws = ws_connect(c_node);
    ws_send(ws, "{\"type\":\"hello\",\"name\":\"Cy\",\"key\":\"%s\"}", key_c);
    ws_send(ws, "{\"type\":\"profile\",\"name\":\"Cy\"}");
    assert_true(jbool(ws_expect(ws, "welcome", WAIT), "account"));
    assert_string_equal(jstr(ws_expect(ws, "profile", WAIT), "name"), "Cy");
}

/* Two concurrent registers of one name on two nodes: exactly one succeeds. */
static void test_one_name_one_account(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    client *c[2];
    for (int i = 0; i < 2; i++)
        c[i] = client_named(n[i], "Twin");
    for (int i = 0; i < 2; i++)
        client_send(c[i], "{\"type\":\"register\"}");
    int won = 0;
    for (int i = 0; i < 2; i++) {
        json_t *m = client_next(c[i], WAIT);
        if (!strcmp(jstr(m, "type"), "registered"))
            won++;
        else
            assert_string_equal(jstr(m, "code"), "name_taken");
    }
    assert_int_equal(won, 1);
}

/* ------------------------------------------------------------ ratings --- */

/* A rated race of two on s: `acct` makes it, a guest joins; returns with
 * both started. */
static client *rated_room(th_server *s, client *acct) {
    client_send(acct, "{\"type\":\"create\",\"players\":2,\"rated\":true}");
    json_t *room = client_expect_skip(acct, "room", "player", WAIT);
    client *guest = client_connect(s);
    client_send(guest, "{\"type\":\"join\",\"room\":\"%s\"}", jstr(room, "room"));
    client_expect_skip(acct, "start", "room player", WAIT);
    client_expect_skip(guest, "start", "welcome room player", WAIT);
    return guest;
}

/* One account races on a and on b; both guests leave at once, so both races
 * end within the same moment on two nodes: the account ends with both
 * updates applied one after the other (games 2, wins 2, the mu of two wins in
 * a row), seen the same from both nodes; then 8 more races on a make it
 * non-provisional and b's leaderboard lists it. */
static void test_two_nodes_rate_one_account(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[33];
    client *on_a = registered(n[0], "Rex", key);
    client *on_b = logged_in(n[1], "Rex", key, NULL);
    client *ga = rated_room(n[0], on_a), *gb = rated_room(n[1], on_b);
    client_send(ga, "{\"type\":\"leave\"}");
    client_send(gb, "{\"type\":\"leave\"}");
    client_expect_skip(on_a, "end", "state player", WAIT);
    client_expect_skip(on_b, "end", "state player", WAIT);

    /* Two wins against new guests, applied in turn. */
    rating_skill rex = rating_initial();
    for (int k = 0; k < 2; k++) {
        rating_skill race[2] = {rex, rating_initial()};
        int place[2] = {1, 2};
        assert_true(rating_update(race, place, 2));
        rex = race[0];
    }
    for (int i = 0; i < 2; i++) {
        json_t *p = profile_with_games(n[i], "Rex", 2);
        json_t *r = json_object_get(p, "rating");
        assert_int_equal(jint(p, "wins"), 2);
        assert_true(fabs(jreal(r, "mu") - rex.mu) < 1e-9);
        assert_true(fabs(jreal(r, "sigma") - rex.sigma) < 1e-9);
    }

    print_message("compare-and-set conflicts met: %lld\n",
                  natsd_metric(n[0], "race2048_accounts_kv_conflicts_total") +
                      natsd_metric(n[1], "race2048_accounts_kv_conflicts_total"));
    for (int k = 0; k < 8; k++) {
        client *g = rated_room(n[0], on_a);
        client_send(g, "{\"type\":\"leave\"}");
        client_expect_skip(on_a, "end", "state player", WAIT);
        client_close(g);
    }
    json_t *p = profile_with_games(n[1], "Rex", 10);
    json_int_t rating = jint(json_object_get(p, "rating"), "rating");
    client *reader = client_named(n[1], "reader");
    client_send(reader, "{\"type\":\"leaderboard\",\"board\":\"rating\"}");
    json_t *board = client_expect(reader, "leaderboard", WAIT);
    json_t *rows = jarr(board, "rows");
    assert_int_equal(json_array_size(rows), 1);
    assert_string_equal(jstr(json_array_get(rows, 0), "name"), "Rex");
    assert_int_equal(jint(json_array_get(rows, 0), "rating"), rating);
    assert_int_equal(jint(json_array_get(rows, 0), "games"), 10);
    assert_int_equal(natsd_metric(n[0], "race2048_accounts_kv_lost_total") +
                         natsd_metric(n[1], "race2048_accounts_kv_lost_total"),
                     0);
}

/* An account logged in on a races in a rated room of b (its seat there is a
 * remote player of b): the race rates the account, and while its requests go
 * to b's room its own node answers profile, leaderboard and daily (before:
 * b raced it as a guest, unrated, and dropped the account requests). */
static void test_account_races_on_another_node(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[33];
    client *rex = registered(n[0], "Rex", key);
    profile_with_games(n[1], "Rex", 0); /* b's table has it (its watch) */
    client *host = client_connect(n[1]);
    client_send(host, "{\"type\":\"create\",\"players\":2,\"rated\":true}");
    const char *code =
        jstr(client_expect_skip(host, "room", "welcome player", WAIT), "room");
    client_send(rex, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(rex, "start", "room player", WAIT);
    client_expect_skip(host, "start", "room player", WAIT);
    client_send(host, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(rex, "end", "state player", WAIT);
    assert_non_null(json_object_get(end, "ratings"));
    for (int i = 0; i < 2; i++)
        assert_int_equal(jint(profile_with_games(n[i], "Rex", 1), "wins"), 1);
    /* Its requests still go to b's room (kept for a rematch): answered here. */
    client_send(rex, "{\"type\":\"profile\",\"name\":\"Rex\"}");
    client_expect_skip(rex, "profile", "player room", WAIT);
    client_send(rex, "{\"type\":\"leaderboard\",\"board\":\"rating\"}");
    client_expect_skip(rex, "leaderboard", "player room", WAIT);
    client_send(rex, "{\"type\":\"daily\"}");
    json_t *start = client_expect_skip(rex, "start", "player room", WAIT);
    assert_int_equal(strlen(jstr(start, "daily")), 10); /* its day, YYYY-MM-DD */
}

/* Two accounts, one on each node, `quick` on 4x4: every quick of them meets
 * on one node (its host), so one of them races on the other node; the race
 * is rated and rates both (before: the quick reached its host without
 * `rated`, and the remote seat raced as a guest). */
static void test_quick_rates_accounts_of_both_nodes(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[2][33];
    client *c[2] = {registered(n[0], "Ann", key[0]), registered(n[1], "Bob", key[1])};
    profile_with_games(n[0], "Bob", 0);
    profile_with_games(n[1], "Ann", 0);
    for (int i = 0; i < 2; i++)
        client_send(c[i], "{\"type\":\"quick\",\"players\":2}");
    for (int i = 0; i < 2; i++)
        assert_true(jbool(client_expect_skip(c[i], "start", "queued room player", WAIT),
                          "rated"));
    client_send(c[0], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(c[1], "end", "state player", WAIT);
    assert_int_equal(json_array_size(jarr(end, "ratings")), 2);
    for (int i = 0; i < 2; i++) {
        profile_with_games(n[i], "Ann", 1);
        profile_with_games(n[i], "Bob", 1);
    }
}

/* A node with a journal of its own (the records takeover reads come from it). */
static th_server *node_with_journal(const char *name, const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.journal", dir, name);
    return SERVER("--cluster", natsd_url, "--node", name, "--journal", path, "--grace",
                  "120");
}

/* A rated race whose node dies (kill -9) goes on on the other node and, when
 * it ends there, rates its account: the account is the cluster's, not the
 * dead node's. */
static void test_rated_race_taken_over(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("acct-takeover");
    th_server *a = node_with_journal("a", dir), *b = node_with_journal("b", dir);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    char key[33];
    client *rex = registered(a, "Rex", key);
    client *guest = rated_room(a, rex);
    char tokens[2][64];
    snprintf(tokens[0], sizeof tokens[0], "%s", client_token(rex));
    snprintf(tokens[1], sizeof tokens[1], "%s", client_token(guest));
    natsd_wait_metric(a, "race2048_journal_waiting_bytes", 0, 10000);
    server_kill(a);
    int64_t deadline = harness_now_ms() + harness_ms(15000);
    while (natsd_metric(b, "race2048_cluster_games_taken_over_total") < 1) {
        if (harness_remaining(deadline) <= 0) fail_msg("the race was never taken over");
        poll(NULL, 0, 50);
    }
    client *q[2];
    for (int i = 0; i < 2; i++) {
        q[i] = client_connect(b);
        client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[i]);
        client_expect(q[i], "welcome", WAIT);
        client_expect_skip(q[i], "start", "player", WAIT);
    }
    client_send(q[1], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(q[0], "end", "state player", WAIT);
    json_t *ratings = jarr(end, "ratings");
    assert_int_equal(json_array_size(ratings), 1);
    assert_string_equal(jstr(json_array_get(ratings, 0), "name"), "Rex");
    json_t *p = profile_with_games(b, "Rex", 1);
    assert_int_equal(jint(p, "wins"), 1);
}

/* A rated race that ended on a (its `end` says the account's new rating),
 * then a dies (kill -9) and b takes over its records: the cluster's copy of
 * the account has the race exactly once, with the rating `end` said. hold:
 * a never wrote the change to KV (test-only), as a node killed between `end`
 * and its KV write; else it did, and b's adoption of the game counts nothing
 * again. Checked on b and on a node that reads the account from KV itself. */
static void ended_race_taken_over(bool hold) {
    const char *dir = harness_temp_dir(hold ? "acct-adopt-held" : "acct-adopt-written");
    if (hold) setenv("RACE2048_TEST_ACCOUNTS_KV_HOLD", "1", 1);
    th_server *a = node_with_journal("a", dir);
    unsetenv("RACE2048_TEST_ACCOUNTS_KV_HOLD");
    th_server *b = node_with_journal("b", dir);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 15000);
    char key[33];
    client *rex = registered(a, "Rex", key);
    client *guest = rated_room(a, rex);
    client_send(guest, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(rex, "end", "state player", WAIT);
    json_t *ratings = jarr(end, "ratings");
    assert_int_equal(json_array_size(ratings), 1);
    json_t *mine = json_array_get(ratings, 0);
    assert_string_equal(jstr(mine, "name"), "Rex");
    double mu = jreal(mine, "mu");
    if (!hold) profile_with_games(b, "Rex", 1); /* a's own write, watched */
    server_kill(a);
    int64_t deadline = harness_now_ms() + harness_ms(15000);
    while (natsd_metric(b, "race2048_accounts_kv_changes_total") < 1) {
        if (harness_remaining(deadline) <= 0)
            fail_msg("b never wrote the taken over game's change (takeovers %lld)",
                     natsd_metric(b, "race2048_cluster_takeovers_total"));
        poll(NULL, 0, 50);
    }
    assert_int_equal(natsd_metric(b, "race2048_accounts_kv_lost_total"), 0);
    json_t *p = profile_with_games(b, "Rex", 1);
    assert_int_equal(jint(p, "wins"), 1);
    assert_true(fabs(jreal(json_object_get(p, "rating"), "mu") - mu) < 1e-9);
    /* The KV entry as it is after b's write, read by a node that watches
     * nothing (it fetches the account when Rex logs in). */
    setenv("RACE2048_TEST_NO_ACCOUNT_WATCH", "1", 1);
    th_server *c = natsd_node("c");
    unsetenv("RACE2048_TEST_NO_ACCOUNT_WATCH");
    client *on_c = logged_in(c, "Rex", key, NULL);
    client_send(on_c, "{\"type\":\"profile\",\"name\":\"Rex\"}");
    json_t *pc = client_expect(on_c, "profile", WAIT);
    json_t *rc = json_object_get(pc, "rating");
    assert_int_equal(jint(rc, "games"), 1);
    assert_int_equal(jint(pc, "wins"), 1);
    assert_true(fabs(jreal(rc, "mu") - mu) < 1e-9);
}

/* a died between `end` and its KV write: b's takeover writes the change. */
static void test_ended_race_unwritten_taken_over(void **state) {
    (void)state;
    ended_race_taken_over(true);
}

/* a wrote the change before it died: b's takeover does not count it again. */
static void test_ended_race_written_taken_over(void **state) {
    (void)state;
    ended_race_taken_over(false);
}

/* Accounts of a node's single-node history go to the cluster when it joins
 * one: Olga, registered on a alone, logs in on b once a runs in the cluster;
 * Zed, registered on a alone and then by another player on b (in the
 * cluster), is b's: the cluster's account wins on a too, and a's log reports
 * the conflict. A second start in the cluster carries nothing again. */
static void test_single_node_accounts_join_the_cluster(void **state) {
    (void)state;
    if (harness_spread()) skip(); /* a node of its own first */
    const char *dir = harness_temp_dir("acct-adopt-journal");
    char journal[512], log[512];
    snprintf(journal, sizeof journal, "%s/a.journal", dir);
    snprintf(log, sizeof log, "%s/a.log", dir);
    th_server *alone = SERVER("--journal", journal);
    char olga[33], zed_a[33], zed_b[33];
    registered(alone, "Olga", olga);
    registered(alone, "Zed", zed_a);
    assert_int_equal(server_stop(alone), 0);

    th_server *b = natsd_node("b");
    registered(b, "Zed", zed_b);
    harness_server_stderr(log);
    th_server *a = node_with_journal("a", dir);
    harness_server_stderr(NULL);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 15000);
    natsd_wait_metric(a, "race2048_accounts_kv_adopted_total", 1, 15000);
    assert_int_equal(natsd_metric(a, "race2048_accounts_kv_adopt_conflicts_total"), 1);
    logged_in(b, "Olga", olga, NULL);
    /* b's Zed everywhere; a's own key for it no longer opens it. */
    logged_in(a, "Zed", zed_b, NULL);
    client *old = client_connect(a);
    client_send(old, "{\"type\":\"hello\",\"name\":\"Zed\",\"key\":\"%s\"}", zed_a);
    client_expect_error(old, "bad_key", WAIT);
    size_t len;
    char *text = harness_read_file(log, &len);
    assert_non_null(strstr(text, "account conflict: Zed"));
    assert_null(strstr(text, zed_a)); /* never the key */
    free(text);

    /* Started again in the cluster: every account is in KV now, and the
     * journal has the cluster's Zed: nothing to carry, no conflict. */
    assert_int_equal(server_stop(a), 0);
    a = node_with_journal("a", dir);
    natsd_wait_metric(a, "race2048_accounts_kv_watched_total", 2, 15000);
    assert_int_equal(natsd_metric(a, "race2048_accounts_kv_adopt_conflicts_total"), 0);
    assert_int_equal(natsd_metric(a, "race2048_accounts_kv_adopted_total"), 0);
    logged_in(a, "Zed", zed_b, NULL);
}

/* -------------------------------------------------------------- daily --- */

/* Today's daily game of a size shows the same commit on a and on b; the
 * daily board is the cluster's. */
static void test_daily_seed_is_the_clusters(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[2][33];
    client *c[2] = {registered(n[0], "Dee", key[0]), registered(n[1], "Dan", key[1])};
    for (int size = 4; size <= 5; size++) {
        char commit[2][80];
        for (int i = 0; i < 2; i++) {
            client_send(c[i], "{\"type\":\"daily\",\"size\":%d}", size);
            json_t *st = client_expect_skip(c[i], "start", "room player", WAIT);
            snprintf(commit[i], sizeof commit[i], "%s", jstr(st, "commit"));
            client_send(c[i], "{\"type\":\"leave\"}");
            client_expect_skip(c[i], "left", "state end player", WAIT);
        }
        assert_string_equal(commit[0], commit[1]);
    }
    /* One board: each node lists both players' games (asked again until the
     * watch brought the other node's), and a day's size played on a is
     * played on b too. */
    for (int i = 0; i < 2; i++) {
        client *r = client_named(n[i], "reader");
        int64_t deadline = harness_now_ms() + harness_ms(WAIT);
        for (;;) {
            client_send(r, "{\"type\":\"leaderboard\",\"board\":\"daily\",\"size\":4}");
            json_t *rows = jarr(client_expect(r, "leaderboard", WAIT), "rows");
            if (json_array_size(rows) == 2) break;
            if (harness_remaining(deadline) <= 0)
                fail_msg("node %d's daily board never had both games", i);
            poll(NULL, 0, 20);
        }
    }
    client *dee_on_b = logged_in(n[1], "Dee", key[0], NULL);
    client_send(dee_on_b, "{\"type\":\"daily\",\"size\":4}");
    client_expect_error(dee_on_b, "daily_played", WAIT);
}

/* The first reply of c's daily (a WebSocket client if ws): "start" (its
 * game) or an error's code. */
static const char *daily_answer_of(client *c, bool ws) {
    for (;;) {
        json_t *m = ws ? ws_next(c, WAIT) : client_next(c, WAIT);
        if (!m) fail_msg("no answer to daily");
        const char *type = jstr(m, "type");
        if (!strcmp(type, "start")) return "start";
        if (!strcmp(type, "error")) return jstr(m, "code");
        if (!strcmp(type, "pong")) fail_msg("the ping behind the daily came first");
    }
}

static const char *daily_answer(client *c) {
    return daily_answer_of(c, false);
}

/* One account asks today's daily game of a size on a (JSON lines) and on b
 * (WebSocket) at once, a ping behind each (all sent, then the answers read):
 * one start, one daily_played, each before its pong, size after size. Without
 * the cluster's claim each node found the day unplayed and both started. */
static void test_daily_at_once_on_two_nodes(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[33];
    client *c[2] = {registered(n[0], "Clara", key), ws_connect(n[1])};
    ws_send(c[1], "{\"type\":\"hello\",\"name\":\"Clara\",\"key\":\"%s\"}", key);
    assert_true(jbool(ws_expect(c[1], "welcome", WAIT), "account"));
    for (int size = 3; size <= 8; size++) {
        client_send(c[0], "{\"type\":\"daily\",\"size\":%d}", size);
        ws_send(c[1], "{\"type\":\"daily\",\"size\":%d}", size);
        client_send(c[0], "{\"type\":\"ping\",\"t\":%d}", size);
        ws_send(c[1], "{\"type\":\"ping\",\"t\":%d}", size);
        const char *answer[2] = {daily_answer(c[0]), daily_answer_of(c[1], true)};
        print_message("daily size %d: a %s, b %s\n", size, answer[0], answer[1]);
        int winner = !strcmp(answer[0], "start") ? 0 : 1;
        assert_string_equal(answer[winner], "start");
        assert_string_equal(answer[!winner], "daily_played");
        /* The requests behind the daily waited for it, then ran. */
        assert_int_equal(
            jint(client_expect_skip(c[0], "pong", "state player", WAIT), "t"), size);
        assert_int_equal(jint(ws_expect_skip(c[1], "pong", "state player", WAIT), "t"),
                         size);
        if (winner == 0) {
            client_send(c[0], "{\"type\":\"leave\"}");
            client_expect_skip(c[0], "left", "state end player", WAIT);
        } else {
            ws_send(c[1], "{\"type\":\"leave\"}");
            ws_expect_skip(c[1], "left", "state end player", WAIT);
        }
    }
    long long claims = 0, played = 0;
    for (int i = 0; i < 2; i++) {
        claims += natsd_metric(n[i], "race2048_accounts_kv_daily_claims_total");
        played += natsd_metric(n[i], "race2048_accounts_kv_daily_claims_played_total");
    }
    /* A loser whose node had the winner's entry by watch already was
     * refused before claiming; every other one lost its claim. */
    print_message("claims %lld, of which found played %lld\n", claims, played);
    assert_true(claims >= 6 && claims <= 12);
    assert_int_equal(claims - played, 6);
}

/* NATS gone: a daily is answered unavailable (no game NATS could not vouch
 * for), in bounded time; NATS back, the same daily starts on that node. */
static void test_daily_without_nats(void **state) {
    (void)state;
    th_server *n[2];
    two_nodes(n);
    char key[33];
    client *c = registered(n[0], "Nora", key);
    natsd_stop();
    int64_t t0 = harness_now_ms();
    client_send(c, "{\"type\":\"daily\",\"size\":4}");
    assert_string_equal(daily_answer(c), "unavailable");
    print_message("daily with NATS gone: unavailable after %lld ms\n",
                  (long long)(harness_now_ms() - t0));
    natsd_start();
    natsd_wait_metric(n[0], "race2048_cluster_connected", 1, 15000);
    /* JetStream may take a moment more after the connection: unavailable
     * means "try again", as the contract says. */
    int64_t deadline = harness_now_ms() + harness_ms(15000);
    for (;;) {
        client_send(c, "{\"type\":\"daily\",\"size\":4}");
        const char *answer = daily_answer(c);
        if (!strcmp(answer, "start")) break;
        assert_string_equal(answer, "unavailable");
        if (harness_remaining(deadline) <= 0)
            fail_msg("daily never started after NATS came back");
        poll(NULL, 0, 100);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_on_a_log_in_on_b, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_one_name_one_account, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_two_nodes_rate_one_account, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_account_races_on_another_node, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_quick_rates_accounts_of_both_nodes,
                                        natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_rated_race_taken_over, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_ended_race_unwritten_taken_over, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_ended_race_written_taken_over, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_single_node_accounts_join_the_cluster,
                                        natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_daily_seed_is_the_clusters, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_daily_at_once_on_two_nodes, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_daily_without_nats, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
