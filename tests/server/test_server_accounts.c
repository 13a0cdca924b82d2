/* test_server_accounts.c - accounts, ratings and the rating board over JSON: register,
 * log in, name_taken, bad_key throttled, kill -9 and restart, rated races and their
 * records, race2048-replay's check, the leaderboard and profiles. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rating.h"
#include "wsclient.h"

/* ------------------------------------------------------------- helpers --- */

static const char *path_in(const char *dir, const char *name) {
    static char paths[8][160];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 160, "%s/%s", dir, name);
    return p;
}

static bool lower_hex(const char *s, size_t n) {
    if (strlen(s) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* A client named `name` that registered it; its key goes to key (33 bytes). */
static client *registered(th_server *s, const char *name, char *key) {
    client *c = client_named(s, name);
    client_send(c, "{\"type\":\"register\"}");
    json_t *r = client_expect(c, "registered", WAIT);
    assert_string_equal(jstr(r, "name"), name);
    assert_true(lower_hex(jstr(r, "key"), 32));
    snprintf(key, 33, "%s", jstr(r, "key"));
    return c;
}

/* A new client logged in to name with key; returns it, its welcome in *welcome. */
static client *logged_in(th_server *s, const char *name, const char *key,
                         json_t **welcome) {
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"hello\",\"name\":\"%s\",\"key\":\"%s\"}", name, key);
    json_t *w = client_expect(c, "welcome", WAIT);
    assert_true(jbool(w, "account"));
    if (welcome) *welcome = w;
    return c;
}

/* A race of two: `winner` makes the room (rated or not), `loser` joins and
 * leaves at once (a forfeit). Returns the winner's `end`. */
static json_t *forfeit_race(client *winner, client *loser, bool rated, json_t **start) {
    client_send(winner, "{\"type\":\"create\",\"players\":2%s}",
                rated ? ",\"rated\":true" : "");
    json_t *room = client_expect_skip(winner, "room", "player", WAIT);
    assert_int_equal(jbool(room, "rated"), rated);
    client_send(loser, "{\"type\":\"join\",\"room\":\"%s\"}", jstr(room, "room"));
    json_t *st = client_expect_skip(winner, "start", "room", WAIT);
    assert_int_equal(jbool(st, "rated"), rated);
    if (start) *start = st;
    client_expect_skip(loser, "start", "room player", WAIT);
    client_send(loser, "{\"type\":\"leave\"}");
    client_expect_skip(loser, "end", "state player", WAIT);
    client_expect(loser, "left", WAIT);
    return client_expect_skip(winner, "end", "state player", WAIT);
}

static json_t *profile_of(client *c, const char *name) {
    client_send(c, "{\"type\":\"profile\",\"name\":\"%s\"}", name);
    return client_expect(c, "profile", WAIT);
}

/* The `ratings` entry of id in an end. */
static json_t *rating_entry(const json_t *end, json_int_t id) {
    json_t *list = jarr(end, "ratings");
    for (size_t i = 0; i < json_array_size(list); i++)
        if (jint(json_array_get(list, i), "id") == id) return json_array_get(list, i);
    return NULL;
}

/* ----------------------------------------------------------- accounts --- */

static void test_register_and_log_in(void **state) {
    (void)state;
    if (harness_spread()) skip(); /* accounts are local to a node for now */
    th_server *s = SERVER("--journal", "none");

    /* No hello yet: the implicit player-N name is no name to register. */
    client *c0 = client_connect(s);
    client_send(c0, "{\"type\":\"register\"}");
    client_expect(c0, "welcome", WAIT);
    client_expect_error(c0, "bad_message", WAIT);

    char key[33];
    client *alice = registered(s, "Alice", key);
    client_send(alice, "{\"type\":\"register\"}"); /* it is an account's now */
    client_expect_error(alice, "name_taken", WAIT);

    /* A guest cannot take the name, in any case; a wrong key changes nothing. */
    client *g = client_connect(s);
    client_send(g, "{\"type\":\"hello\",\"name\":\"ALICE\"}");
    client_expect_error(g, "name_taken", WAIT);
    client_send(g, "{\"type\":\"hello\",\"name\":\"alice\",\"key\":\"%032d\"}", 7);
    client_expect_error(g, "bad_key", WAIT);
    client_send(g, "{\"type\":\"hello\",\"name\":\"Nobody\",\"key\":\"%s\"}", key);
    client_expect_error(g, "bad_key", WAIT);
    client_send(g, "{\"type\":\"hello\",\"name\":\"Guest\"}");
    json_t *gw = client_expect(g, "welcome", WAIT);
    assert_false(jhas(gw, "account"));
    assert_false(jhas(gw, "rating"));

    /* The key logs in on two connections at once, in any case of the name. */
    json_t *w1, *w2;
    client *a1 = logged_in(s, "aLiCe", key, &w1);
    client *a2 = logged_in(s, "Alice", key, &w2);
    assert_string_equal(jstr(w1, "name"), "Alice");
    assert_true(jint(w1, "id") != jint(w2, "id"));
    json_t *r = jobj(w1, "rating");
    assert_int_equal(jint(r, "rating"), 1500);
    assert_true(fabs(jreal(r, "mu") - 25.0) < 1e-12);
    assert_true(fabs(jreal(r, "sigma") - 25.0 / 3.0) < 1e-12);
    assert_int_equal(jint(r, "games"), 0);
    assert_true(jbool(r, "provisional"));
    (void)a1;
    (void)a2;

    /* Reserved names, in any case. */
    client *b = client_named(s, "Bot-x");
    client_send(b, "{\"type\":\"register\"}");
    client_expect_error(b, "name_taken", WAIT);
    client_hello(b, "PLAYER-7");
    client_send(b, "{\"type\":\"register\"}");
    client_expect_error(b, "name_taken", WAIT);

    /* A logged-in connection that says hello without key is a guest again. */
    client_send(a2, "{\"type\":\"hello\",\"name\":\"Other\"}");
    json_t *w3 = client_expect(a2, "welcome", WAIT);
    assert_false(jhas(w3, "account"));
}

/* Wrong keys are failed guesses, counted as failed resumes are: the
 * connection is closed after its tries, the address throttled after its
 * burst, and a throttled address is refused even the right key. */
static void test_bad_key_throttled(void **state) {
    (void)state;
    if (harness_spread()) skip();
    th_server *s = SERVER("--journal", "none");
    char key[33];
    registered(s, "Alice", key);
    bool throttled = false;
    for (int conn = 0; conn < 40 && !throttled; conn++) {
        client *c = client_connect_from(s, "127.0.0.2");
        /* A wrong key and the right one in one write: both are looked at in
         * one loop turn, so if the first is refused for the address, so is
         * the second, whatever the key. */
        char two[256];
        int n = snprintf(two, sizeof two,
                         "{\"type\":\"hello\",\"name\":\"Alice\",\"key\":\"%032d\"}\n"
                         "{\"type\":\"hello\",\"name\":\"Alice\",\"key\":\"%s\"}\n",
                         conn, key);
        client_send_raw(c, two, (size_t)n, false);
        json_t *e = client_expect_error(c, "bad_key", WAIT);
        throttled = strstr(jstr(e, "message"), "address") != NULL;
        json_t *next = client_next(c, WAIT);
        assert_non_null(next);
        if (throttled) {
            assert_string_equal(jstr(next, "code"), "bad_key");
            assert_non_null(strstr(jstr(next, "message"), "address"));
        } else {
            assert_string_equal(jstr(next, "type"), "welcome"); /* the right key */
            /* Four more wrong keys use up the connection's tries: closed. */
            for (int k = 0; k < 4; k++) {
                client_send(c, "{\"type\":\"hello\",\"name\":\"Alice\",\"key\":\"x%d\"}",
                            k);
                client_expect_error(c, "bad_key", WAIT);
            }
            client_expect_eof(c, WAIT);
        }
    }
    assert_true(throttled);
    /* Another address is not affected. */
    logged_in(s, "Alice", key, NULL);
}

/* One address registers at most 10 names an hour; over a WebSocket too. */
static void test_register_limit_and_websocket(void **state) {
    (void)state;
    if (harness_spread()) skip();
    th_server *s = SERVER("--journal", "none");
    client *c = client_connect_from(s, "127.0.0.3");
    for (int i = 0; i < 11; i++) {
        client_send(c, "{\"type\":\"hello\",\"name\":\"many%d\"}", i);
        client_expect(c, "welcome", WAIT);
        client_send(c, "{\"type\":\"register\"}");
        if (i < 10) {
            client_expect(c, "registered", WAIT);
        } else {
            json_t *e = client_expect_error(c, "rate_limited", WAIT);
            assert_non_null(strstr(jstr(e, "message"), "try again in"));
        }
    }
    /* Refused, that name is no account. */
    client *g = client_named(s, "many10");
    (void)g;

    client *ws = ws_connect(s);
    ws_send(ws, "{\"type\":\"hello\",\"name\":\"Wes\"}");
    ws_expect(ws, "welcome", WAIT);
    ws_send(ws, "{\"type\":\"register\"}");
    json_t *r = ws_expect(ws, "registered", WAIT);
    char key[33];
    snprintf(key, sizeof key, "%s", jstr(r, "key"));
    client *ws2 = ws_connect(s);
    ws_send(ws2, "{\"type\":\"hello\",\"name\":\"wes\",\"key\":\"%s\"}", key);
    json_t *w = ws_expect(ws2, "welcome", WAIT);
    assert_true(jbool(w, "account"));
    assert_string_equal(jstr(w, "name"), "Wes");
    ws_send(ws2, "{\"type\":\"hello\",\"name\":\"wes\",\"key\":\"%032d\"}", 1);
    assert_string_equal(jstr(ws_expect(ws2, "error", WAIT), "code"), "bad_key");
}

/* The account survives kill -9 once `registered` was seen; the key is in no
 * file the server wrote. */
static void test_account_survives_kill(void **state) {
    (void)state;
    if (harness_spread()) skip();
    const char *dir = harness_temp_dir("accounts");
    const char *journal = path_in(dir, "j.jrn"), *log = path_in(dir, "log.txt");
    harness_server_stderr(log);
    th_server *s = SERVER("--journal", journal, "--log-level", "debug");
    char key[33];
    registered(s, "Alice", key);
    server_kill(s);
    const char *log2 = path_in(dir, "log2.txt");
    harness_server_stderr(log2);
    s = SERVER("--journal", journal, "--log-level", "debug");
    json_t *w;
    logged_in(s, "alice", key, &w);
    assert_string_equal(jstr(w, "name"), "Alice");
    client *g = client_connect(s);
    client_send(g, "{\"type\":\"hello\",\"name\":\"Alice\"}");
    client_expect_error(g, "name_taken", WAIT);
    client_send(g, "{\"type\":\"hello\",\"name\":\"Alice\",\"key\":\"%032d\"}", 3);
    client_expect_error(g, "bad_key", WAIT);
    /* /metrics counts the refusals and says nothing of the key. */
    client *m = client_connect(s);
    const char *get = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    client_send_raw(m, get, strlen(get), false);
    http_response r;
    http_read(m, &r, false, WAIT);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "race2048_errors_total{code=\"bad_key\"} 1\n"));
    assert_non_null(strstr(r.body, "race2048_errors_total{code=\"name_taken\"} 1\n"));
    assert_null(strstr(r.body, key));
    http_response_free(&r);
    server_stop(s);
    harness_server_stderr(NULL);
    char *text = harness_read_file(journal, NULL);
    assert_non_null(strstr(text, "\"j\":\"account\",\"name\":\"Alice\""));
    assert_null(strstr(text, key));
    free(text);
    text = harness_read_file(log, NULL);
    assert_non_null(strstr(text, "account Alice registered"));
    assert_null(strstr(text, key));
    free(text);
    text = harness_read_file(log2, NULL);
    assert_null(strstr(text, key));
    free(text);
}

/* ------------------------------------------------------------ ratings --- */

static void expect_skill(const json_t *entry, rating_skill want, int before) {
    assert_non_null(entry);
    assert_true(fabs(jreal(entry, "mu") - want.mu) < 1e-9);
    assert_true(fabs(jreal(entry, "sigma") - want.sigma) < 1e-9);
    assert_int_equal(jint(entry, "before"), before);
    assert_int_equal(jint(entry, "after"), rating_display(want.mu));
    assert_true(jbool(entry, "provisional"));
}

static void test_rated_races(void **state) {
    (void)state;
    if (harness_spread()) skip();
    const char *dir = harness_temp_dir("rated");
    const char *journal = path_in(dir, "j.jrn");
    th_server *s = SERVER("--journal", journal);
    char ka[33], kb[33];
    client *alice = registered(s, "Alice", ka);
    client *bob = registered(s, "Bob", kb);

    /* Alice wins a rated race: both move as rating_update says. */
    json_t *start;
    json_t *end = forfeit_race(alice, bob, true, &start);
    json_t *players = jarr(start, "players");
    for (size_t i = 0; i < json_array_size(players); i++)
        assert_int_equal(jint(json_array_get(players, i), "rating"), 1500);
    rating_skill sk[2] = {rating_initial(), rating_initial()};
    int place[2] = {1, 2};
    assert_true(rating_update(sk, place, 2));
    assert_true(fabs(sk[0].mu - 27.635389) < 1e-6); /* the contract's check value */
    json_t *results = jarr(end, "results");
    json_int_t alice_id = jint(json_array_get(results, 0), "id");
    json_int_t bob_id = jint(json_array_get(results, 1), "id");
    assert_int_equal(json_array_size(jarr(end, "ratings")), 2);
    expect_skill(rating_entry(end, alice_id), sk[0], 1500);
    expect_skill(rating_entry(end, bob_id), sk[1], 1500);
    assert_string_equal(jstr(rating_entry(end, alice_id), "name"), "Alice");

    json_t *prof = profile_of(bob, "alice");
    assert_string_equal(jstr(prof, "name"), "Alice");
    assert_int_equal(jint(jobj(prof, "rating"), "rating"), rating_display(sk[0].mu));
    assert_int_equal(jint(jobj(prof, "rating"), "games"), 1);
    assert_int_equal(jint(prof, "races"), 1);
    assert_int_equal(jint(prof, "wins"), 1);
    assert_int_equal(json_array_size(jarr(prof, "recent")), 1);

    /* An unrated race changes no rating. */
    end = forfeit_race(alice, bob, false, NULL);
    assert_false(jhas(end, "ratings"));
    prof = profile_of(alice, "Alice");
    assert_int_equal(jint(jobj(prof, "rating"), "games"), 1);
    assert_true(fabs(jreal(jobj(prof, "rating"), "mu") - sk[0].mu) < 1e-12);
    assert_int_equal(json_array_size(jarr(prof, "recent")), 2);

    /* A guest takes part as a new player and keeps nothing. */
    client *guest = client_named(s, "Carl");
    end = forfeit_race(guest, alice, true, NULL);
    assert_int_equal(json_array_size(jarr(end, "ratings")), 1);
    rating_skill two[2] = {rating_initial(), sk[0]};
    assert_true(rating_update(two, place, 2));
    expect_skill(rating_entry(end, alice_id), two[1], rating_display(sk[0].mu));
    client_send(guest, "{\"type\":\"profile\",\"name\":\"Carl\"}");
    client_expect_error(guest, "player_not_found", WAIT);
    /* A rated race with no account in it changes nothing: ratings is empty. */
    client *guest2 = client_named(s, "Cleo");
    end = forfeit_race(guest, guest2, true, NULL);
    assert_int_equal(json_array_size(jarr(end, "ratings")), 0);

    /* kill -9 right after the rated end was seen: the change is there once. */
    server_kill(s);
    s = SERVER("--journal", journal);
    client *c = client_named(s, "Dan");
    prof = profile_of(c, "Alice");
    assert_int_equal(jint(jobj(prof, "rating"), "games"), 2);
    assert_int_equal(jint(prof, "wins"), 1);
    assert_true(fabs(jreal(jobj(prof, "rating"), "mu") - two[1].mu) < 1e-12);
    assert_true(fabs(jreal(jobj(prof, "rating"), "sigma") - two[1].sigma) < 1e-12);
    assert_int_equal(json_array_size(jarr(prof, "recent")), 3);
    prof = profile_of(c, "Bob");
    assert_int_equal(jint(jobj(prof, "rating"), "games"), 1);
    assert_true(fabs(jreal(jobj(prof, "rating"), "mu") - sk[1].mu) < 1e-12);
    /* The same as JSON for browsers under /api/. */
    int status;
    assert_true(jequal(http_api_get(s, "/api/profile/bob", &status), prof));
    assert_int_equal(status, 200);
    json_t *e = http_api_get(s, "/api/profile/Nobody", &status);
    assert_int_equal(status, 404);
    assert_string_equal(jstr(e, "code"), "player_not_found");
    json_t *board = http_api_get(s, "/api/leaderboard?board=rating&limit=5", &status);
    assert_int_equal(status, 200);
    assert_string_equal(jstr(board, "type"), "leaderboard");
    assert_int_equal(json_array_size(jarr(board, "rows")), 0); /* all provisional */
    http_api_get(s, "/api/leaderboard?limit=500", &status);
    assert_int_equal(status, 404);
    server_stop(s);

    /* race2048-replay re-computes every update, and rejects a tampered one. */
    const char *replay = getenv("RACE2048_REPLAY");
    assert_non_null(replay);
    char *out = NULL;
    assert_int_equal(harness_run((const char *const[]){replay, journal, NULL}, &out), 0);
    free(out);
    size_t len;
    char *text = harness_read_file(journal, &len);
    char *after = strstr(text, "\"after\":[2");
    assert_non_null(after);
    after[strlen("\"after\":[2")] = after[strlen("\"after\":[2")] == '7' ? '8' : '7';
    const char *tampered = path_in(dir, "tampered.jrn");
    FILE *f = fopen(tampered, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    free(text);
    assert_int_equal(harness_run((const char *const[]){replay, tampered, NULL}, &out), 1);
    assert_non_null(strstr(out, "ratings:"));
    free(out);
}

/* Every quick race of size 4 is rated; a bot takes part with its level's
 * fixed skill (level 3: 25, 3) and keeps it. */
static void test_quick_and_bots_rated(void **state) {
    (void)state;
    if (harness_spread()) skip();
    th_server *s = SERVER("--journal", "none");
    char ka[33], kb[33];
    client *alice = registered(s, "Alice", ka);
    client *bob = registered(s, "Bob", kb);
    client_send(alice, "{\"type\":\"quick\"}");
    client_expect(alice, "queued", WAIT);
    client_send(bob, "{\"type\":\"quick\"}");
    assert_true(jbool(client_expect_skip(alice, "start", "queued", WAIT), "rated"));
    assert_true(jbool(client_expect_skip(bob, "start", "queued", WAIT), "rated"));
    client_send(bob, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(alice, "end", "state player", WAIT);
    assert_int_equal(json_array_size(jarr(end, "ratings")), 2);
    client_send(alice, "{\"type\":\"quick\",\"size\":5}");
    client_expect(alice, "queued", WAIT);
    client_send(bob, "{\"type\":\"quick\",\"size\":5}");
    client_expect_skip(bob, "queued", "end left", WAIT);
    assert_false(jbool(client_expect_skip(bob, "start", "queued", WAIT), "rated"));

    client *carl = NULL;
    char kc[33];
    carl = registered(s, "Carl", kc);
    client_send(carl, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":3,"
                      "\"rated\":true}");
    json_t *st = client_expect_skip(carl, "start", "room", WAIT);
    assert_true(jbool(st, "rated"));
    client_send(carl, "{\"type\":\"leave\"}");
    end = client_expect_skip(carl, "end", "state player", WAIT);
    json_t *ratings = jarr(end, "ratings");
    assert_int_equal(json_array_size(ratings), 1); /* the bot keeps nothing */
    /* Level 3: mu 25, sigma 2 (server/game/room_rating.c, measured; protocol/README.md).
     */
    rating_skill sk[2] = {{.mu = 25.0, .sigma = 2.0}, rating_initial()};
    int place[2] = {1, 2};
    assert_true(rating_update(sk, place, 2));
    expect_skill(json_array_get(ratings, 0), sk[1], 1500);
}

/* Waits (polling, with a deadline) until the file holds needle. */
static void wait_in_file(const char *path, const char *needle) {
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        char *text = harness_read_file(path, NULL);
        bool found = strstr(text, needle) != NULL;
        free(text);
        if (found) return;
        if (!harness_remaining(deadline)) fail_msg("%s never got %s", path, needle);
        poll(NULL, 0, 10); /* polling a file: nothing to wait on */
    }
}

/* A rated race running at a kill -9 goes on rated after the restart, its
 * seats still its accounts'. */
static void test_rated_race_survives_kill(void **state) {
    (void)state;
    if (harness_spread()) skip();
    const char *dir = harness_temp_dir("rated-kill");
    const char *journal = path_in(dir, "j.jrn");
    th_server *s = SERVER("--journal", journal);
    char ka[33], kb[33];
    client *alice = registered(s, "Alice", ka);
    client *bob = registered(s, "Bob", kb);
    client_send(alice, "{\"type\":\"create\",\"players\":2,\"rated\":true}");
    const char *code = jstr(client_expect(alice, "room", WAIT), "room");
    client_send(bob, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(alice, "start", "room", WAIT);
    client_expect_skip(bob, "start", "room", WAIT);
    char ta[65], tb[65];
    snprintf(ta, sizeof ta, "%s", client_token(alice));
    snprintf(tb, sizeof tb, "%s", client_token(bob));
    wait_in_file(journal, "\"rated\":true,\"seats\"");
    server_kill(s);
    s = SERVER("--journal", journal);
    client *a = client_connect(s);
    client_send(a, "{\"type\":\"resume\",\"token\":\"%s\"}", ta);
    json_t *w = client_expect(a, "welcome", WAIT);
    assert_true(jbool(w, "account"));
    json_t *st = client_expect(a, "start", WAIT);
    assert_true(jbool(st, "rated"));
    assert_int_equal(jint(json_array_get(jarr(st, "players"), 0), "rating"), 1500);
    client *b = client_connect(s);
    client_send(b, "{\"type\":\"resume\",\"token\":\"%s\"}", tb);
    client_expect(b, "welcome", WAIT);
    client_expect(b, "start", WAIT);
    client_send(b, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(a, "end", "state player", WAIT);
    assert_int_equal(json_array_size(jarr(end, "ratings")), 2);
    json_t *prof = profile_of(a, "Bob");
    assert_int_equal(jint(jobj(prof, "rating"), "games"), 1);
    assert_int_equal(jint(prof, "wins"), 0);
}

/* ------------------------------------------------------- leaderboard --- */

static json_t *leaderboard(client *c) {
    client_send(c, "{\"type\":\"leaderboard\",\"board\":\"rating\",\"limit\":100}");
    json_t *l = client_expect(c, "leaderboard", WAIT);
    assert_string_equal(jstr(l, "board"), "rating");
    return jarr(l, "rows");
}

/* Ten rated races make an account non-provisional and listed; rows by rating,
 * then games, then name; a compaction and a kill -9 keep every rating once. */
static void test_leaderboard(void **state) {
    (void)state;
    if (harness_spread()) skip();
    const char *dir = harness_temp_dir("board");
    const char *journal = path_in(dir, "j.jrn"), *log = path_in(dir, "log.txt");
    harness_server_stderr(log);
    th_server *s =
        SERVER("--journal", journal, "--journal-max", "65536", "--log-level", "info");
    char ka[33], kb[33], kc[33], kd[33];
    client *alice = registered(s, "Alice", ka);
    client *bob = registered(s, "Bob", kb);
    client *dave = registered(s, "dave", kd); /* ties sort by name, without case */
    client *carl = registered(s, "Carl", kc);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(json_array_size(leaderboard(alice)), 0);
        json_t *end = forfeit_race(alice, bob, true, NULL);
        json_t *mine =
            rating_entry(end, jint(json_array_get(jarr(end, "results"), 0), "id"));
        assert_int_equal(jbool(mine, "provisional"), i < 9);
    }
    json_t *rows = leaderboard(bob);
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(jstr(json_array_get(rows, 0), "name"), "Alice");
    assert_string_equal(jstr(json_array_get(rows, 1), "name"), "Bob");
    /* Carl and dave: the same ten wins over guests, the same rating. */
    client *guest = client_named(s, "guest");
    for (int i = 0; i < 10; i++) {
        forfeit_race(dave, guest, true, NULL);
        forfeit_race(carl, guest, true, NULL);
    }
    rows = leaderboard(bob);
    assert_int_equal(json_array_size(rows), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *row = json_array_get(rows, i);
        assert_int_equal(jint(row, "rank"), (json_int_t)i + 1);
        assert_int_equal(jint(row, "games"), 10);
        if (i)
            assert_true(jint(json_array_get(rows, i - 1), "rating") >=
                        jint(row, "rating"));
    }
    int carl_at = -1, dave_at = -1;
    for (int i = 0; i < 4; i++) {
        const char *name = jstr(json_array_get(rows, (size_t)i), "name");
        if (!strcmp(name, "Carl")) carl_at = i;
        if (!strcmp(name, "dave")) dave_at = i;
    }
    assert_int_equal(dave_at, carl_at + 1);
    assert_int_equal(jint(json_array_get(rows, (size_t)carl_at), "rating"),
                     jint(json_array_get(rows, (size_t)dave_at), "rating"));
    /* More races until the journal has been compacted (at 64 KiB). */
    bool compacted = false;
    for (int i = 0; i < 200 && !compacted; i++) {
        forfeit_race(alice, bob, true, NULL);
        char *text = harness_read_file(log, NULL);
        compacted = strstr(text, "compacted from") != NULL;
        free(text);
    }
    assert_true(compacted);
    forfeit_race(alice, bob, true, NULL); /* one after the compaction too */
    json_t *before = json_deep_copy(leaderboard(bob));
    json_t *alice_before = json_deep_copy(profile_of(bob, "Alice"));
    server_kill(s);
    s = SERVER("--journal", journal, "--journal-max", "65536");
    harness_server_stderr(NULL);
    client *c = client_named(s, "Eve");
    assert_true(jequal(leaderboard(c), before));
    int status;
    assert_true(jequal(
        jarr(http_api_get(s, "/api/leaderboard?limit=100", &status), "rows"), before));
    assert_int_equal(status, 200);
    assert_true(jequal(profile_of(c, "Alice"), alice_before));
    json_decref(before);
    json_decref(alice_before);
    (void)kc;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_register_and_log_in, harness_teardown),
        cmocka_unit_test_teardown(test_bad_key_throttled, harness_teardown),
        cmocka_unit_test_teardown(test_register_limit_and_websocket, harness_teardown),
        cmocka_unit_test_teardown(test_account_survives_kill, harness_teardown),
        cmocka_unit_test_teardown(test_rated_races, harness_teardown),
        cmocka_unit_test_teardown(test_rated_race_survives_kill, harness_teardown),
        cmocka_unit_test_teardown(test_quick_and_bots_rated, harness_teardown),
        cmocka_unit_test_teardown(test_leaderboard, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
