/* test_server_limits.c - race2048d over loopback: lost connections, resume, grace,
 * idle timeout, slow consumers and long lines in a race. */
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

/* Expects the `player` message about id, with this connection state. */
static json_t *expect_player(client *c, json_int_t id, bool connected,
                             const char *status) {
    json_t *pl = client_expect_skip(c, "player", "state", WAIT);
    assert_int_equal(jint(pl, "id"), id);
    assert_int_equal(jbool(pl, "connected"), connected);
    assert_string_equal(jstr(pl, "status"), status);
    assert_true(jhas(pl, "room"));
    return pl;
}

/* A new connection takes over id's seat with token; returns its start. */
static json_t *resume(th_server *s, client **out, const char *token, json_int_t id,
                      const char *name) {
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    json_t *w = client_expect(c, "welcome", WAIT);
    assert_int_equal(jint(w, "id"), id);
    assert_string_equal(jstr(w, "name"), name);
    assert_string_equal(jstr(w, "token"), token);
    json_t *st = client_expect(c, "start", WAIT);
    assert_int_equal(jint(st, "you"), id);
    *out = c;
    return st;
}

/* ------------------------------------------------------------- resume --- */

static void test_resume_within_grace(void **state) {
    th_server *s = SERVER(NULL);
    client *a, *b, *w;
    a = client_connect(s);
    json_t *wa = client_hello(a, "alice");
    json_int_t ida = jint(wa, "id");
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(wa, "token"));
    b = client_named(s, "bob");
    w = client_named(s, "watcher");
    client_send(a, "{\"type\":\"create\",\"size\":5}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *start = client_expect_skip(a, "start", "room", WAIT);
    client_expect_skip(b, "start", "room", WAIT);
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w, "start", WAIT);
    json_t *last = NULL;
    for (int i = 0; i < 3; i++) {
        last = client_move_any(a);
        client_expect_skip(b, "state", "", WAIT);
        client_expect_skip(w, "state", "", WAIT);
    }

    client_close(a);
    expect_player(b, ida, false, "playing");
    expect_player(w, ida, false, "playing");
    /* The race goes on meanwhile. */
    client_move_any(b);
    client_expect(w, "state", WAIT);

    json_t *snap = resume(s, &a, token, ida, "alice");
    assert_string_equal(jstr(snap, "room"), code);
    assert_string_equal(jstr(snap, "commit"), jstr(start, "commit"));
    json_t *me = jplayer(jarr(snap, "players"), ida);
    assert_true(jequal(jarr(me, "board"), jarr(last, "board")));
    assert_int_equal(jint(me, "score"), jint(last, "score"));
    assert_int_equal(jint(me, "moves"), jint(last, "moves"));
    assert_string_equal(jstr(me, "status"), "playing");
    expect_player(b, ida, true, "playing");
    expect_player(w, ida, true, "playing");

    /* It plays on, seen by all. */
    json_t *next = client_move_any(a);
    assert_int_equal(jint(next, "moves"), jint(last, "moves") + 1);
    assert_true(jequal(client_expect(b, "state", WAIT), next));
    assert_true(jequal(client_expect(w, "state", WAIT), next));

    /* A reset connection (RST, not FIN) is a lost connection too. */
    client_abort(a);
    expect_player(b, ida, false, "playing");
    resume(s, &a, token, ida, "alice");
    expect_player(b, ida, true, "playing");
}

static void test_resume_while_connected(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, NULL, p, starts);
    json_int_t ida = jint(starts[0], "you");
    /* Whoever has the token may take the seat (the client of a crashed app). */
    client *x = client_named(s, "x");
    client_send(x, "{\"type\":\"ping\"}");
    client_expect(x, "pong", WAIT);

    client_send(p[0], "{\"type\":\"hello\",\"name\":\"p0\"}");
    const char *token = jstr(client_expect(p[0], "welcome", WAIT), "token");
    client_send(x, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    json_t *w = client_expect(x, "welcome", WAIT);
    assert_int_equal(jint(w, "id"), ida);
    assert_int_equal(jint(client_expect(x, "start", WAIT), "you"), ida);
    client_expect_eof(p[0], WAIT); /* the old connection is closed */
    client_sync(p[1]);             /* the seat never lost its connection */

    json_t *st = client_move_any(x);
    assert_true(jequal(client_expect(p[1], "state", WAIT), st));
    /* Resuming one's own seat again just repeats the snapshot. */
    client_send(x, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect(x, "welcome", WAIT);
    client_expect(x, "start", WAIT);
    client_sync(p[1]);
}

static void test_resume_solo(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    json_t *w = client_hello(c, "solo");
    json_int_t id = jint(w, "id");
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(w, "token"));
    client_send(c, "{\"type\":\"solo\",\"seed\":5}");
    client_expect(c, "start", WAIT);
    json_t *last = client_move_any(c);
    client_close(c);
    json_t *snap = resume(s, &c, token, id, "solo");
    assert_false(jhas(snap, "room"));
    json_t *me = json_array_get(jarr(snap, "players"), 0);
    assert_true(jequal(jarr(me, "board"), jarr(last, "board")));
    assert_int_equal(jint(client_move_any(c), "moves"), 2);
}

/* A token takes back a seat only while its game or room has not ended. */
static void test_resume_after_the_end(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(client_hello(c, "gone"), "token"));
    /* In the lobby there is no seat to take back. */
    client *other = client_connect(s);
    client_send(other, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect_error(other, "bad_token", WAIT);
    /* Nor once the solo game has ended with a leave. */
    client_send(c, "{\"type\":\"solo\"}");
    client_expect(c, "start", WAIT);
    client_send(c, "{\"type\":\"leave\"}");
    client_expect(c, "end", WAIT);
    client_expect(c, "left", WAIT);
    client_send(other, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect_error(other, "bad_token", WAIT);
    /* The owner of the token was not disturbed. */
    client_sync(c);
}

/* --------------------------------------------------------- token guessing --- */

/* Defaults of server/delivery/guard.h: failed resumes per connection, then the
 * address's burst and its refill per minute. */
#define TRIES   5
#define BURST   20
#define PER_MIN 60

/* Reads c's answers to its resumes up to EOF: every one must be bad_token;
 * returns how many were looked up (not refused for the address). */
static int guesses_answered(client *c, int *refused) {
    int looked = 0, n = 0;
    for (json_t *o; (o = client_next(c, WAIT));) {
        if (!strcmp(jstr(o, "type"), "welcome")) continue; /* none expected, harmless */
        assert_string_equal(jstr(o, "type"), "error");
        assert_string_equal(jstr(o, "code"), "bad_token");
        n++;
        if (strstr(jstr(o, "message"), "your address"))
            (*refused)++;
        else
            looked++;
    }
    assert_int_equal(n, TRIES); /* then the connection was closed */
    return looked;
}

/* A guesser sends a hundred thousand resumes: each connection is closed after
 * TRIES failures, and the address gets BURST real look-ups, then about one a
 * second; meanwhile an honest race plays on. */
static void test_resume_guessing_is_throttled(void **state) {
    th_server *s = SERVER(NULL);
    client *c[2];
    race_start(s, 2, "\"size\":5", c, NULL);
    int64_t started = harness_now_ms();

    enum { LINE = 61, FLOOD = 100000 };
    char *flood = malloc((size_t)FLOOD * LINE + 1);
    assert_non_null(flood);
    for (int i = 0; i < FLOOD; i++)
        snprintf(flood + (size_t)i * LINE, LINE + 1,
                 "{\"type\":\"resume\",\"token\":\"%032x\"}\n", (unsigned)i);
    client *g = client_connect(s);
    /* The server closes the connection after TRIES answers: most of this
     * cannot be sent, which is the point. */
    for (size_t off = 0; off < (size_t)FLOOD * LINE; off += 65536) {
        size_t n =
            (size_t)FLOOD * LINE - off < 65536 ? (size_t)FLOOD * LINE - off : 65536;
        if (!client_send_raw(g, flood + off, n, true)) break;
    }
    free(flood);
    int refused = 0;
    int looked = guesses_answered(g, &refused);
    assert_int_equal(looked, TRIES);

    /* More connections from the same address, each guessing until closed. */
    for (int k = 0; k < 20; k++) {
        client *more = client_connect(s);
        static const char guess[] = "{\"type\":\"resume\",\"token\":\"00\"}\n";
        for (int i = 0; i < 2 * TRIES; i++)
            if (!client_send_raw(more, guess, sizeof guess - 1, true)) break;
        looked += guesses_answered(more, &refused);
        /* The honest racers are answered in between. */
        client_move_any(c[k % 2]);
        client_expect_skip(c[(k + 1) % 2], "state", "", WAIT);
        client_sync(c[0]);
    }
    int64_t seconds = (harness_now_ms() - started) / 1000 + 1;
    print_message("%d resumes looked up, %d refused for the address, in %lld s\n", looked,
                  refused, (long long)seconds);
    assert_true(looked >= BURST);
    assert_true(looked <= BURST + 1 + seconds * PER_MIN / 60);
    assert_true(refused >= 21 * TRIES - looked);
}

/* ----------------------------------------------------------------- grace --- */

static void test_grace_expiry_forfeit(void **state) {
    th_server *s = SERVER("--grace", "1");
    client *a, *b;
    a = client_connect(s);
    json_t *wa = client_hello(a, "a");
    json_int_t ida = jint(wa, "id");
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(wa, "token"));
    b = client_connect(s);
    json_int_t idb = jint(client_hello(b, "b"), "id");
    client_send(a, "{\"type\":\"quick\",\"size\":3}");
    client_expect(a, "queued", WAIT);
    client_send(b, "{\"type\":\"quick\",\"size\":3}");
    client_expect(b, "queued", WAIT);
    json_t *start = client_expect(b, "start", WAIT);
    client_expect(a, "start", WAIT);

    client_close(a);
    expect_player(b, ida, false, "playing");
    /* After the grace period the seat is given up, which ends the race. */
    expect_player(b, ida, false, "left");
    json_t *end = client_expect(b, "end", WAIT + 2000);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), idb);
    assert_string_equal(jstr(jplayer(jarr(end, "results"), ida), "status"), "left");
    check_commit(jstr(start, "commit"), end);
    check_ranking(end);

    /* Too late to resume; the failed resume names nobody yet. */
    client *late = client_connect(s);
    client_send(late, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect_error(late, "bad_token", WAIT);
    client_send(late, "{\"type\":\"ping\"}");
    assert_true(jint(client_expect(late, "welcome", WAIT), "id") != ida);
    client_expect(late, "pong", WAIT);
    /* The winner's token is no good either: its race has ended. */
    client *again = client_connect(s);
    client_send(again, "{\"type\":\"resume\",\"token\":\"%s\"}", client_token(b));
    client_expect_error(again, "bad_token", WAIT);
}

/* ---------------------------------------------------------- move timeout --- */

/* A connected racer who stops moving is `left` after --move-timeout and the
 * other wins by forfeit; a solo game, started earlier, is exempt. */
static void test_move_timeout_forfeits_the_walker(void **state) {
    th_server *s = SERVER("--move-timeout", "1");
    client *solo = client_named(s, "solo");
    client_send(solo, "{\"type\":\"solo\",\"size\":5}");
    client_expect(solo, "start", WAIT);
    client *c[2];
    int64_t started = harness_now_ms();
    race_start(s, 2, "\"size\":5", c, NULL);
    json_int_t walker = jint(client_hello(c[0], "walker"), "id");
    json_int_t mover = jint(client_hello(c[1], "mover"), "id");
    client_move_any(c[1]);

    /* Both hear it: the walker too, although it is still connected. */
    for (int i = 0; i < 2; i++) {
        expect_player(c[i], walker, true, "left");
        json_t *end = client_expect_skip(c[i], "end", "state player", WAIT + 2000);
        assert_string_equal(jstr(end, "reason"), "forfeit");
        assert_int_equal(jint(end, "winner"), mover);
        assert_string_equal(jstr(jplayer(jarr(end, "results"), walker), "status"),
                            "left");
        check_ranking(end);
    }
    assert_true(harness_now_ms() - started >= 900); /* not before the timeout */
    /* The walker is back in the lobby; the solo player, as idle as the
     * walker, still plays. */
    client_send(c[0], "{\"type\":\"move\",\"dir\":\"left\"}");
    client_expect_error(c[0], "not_playing", WAIT);
    client_sync(c[0]);
    client_move_any(solo);
}

/* A racer who lost its connection is given up after --move-timeout even
 * while its (longer) grace period runs. */
static void test_move_timeout_before_grace(void **state) {
    th_server *s = SERVER("--move-timeout", "1", "--grace", "600");
    client *c[2];
    race_start(s, 2, "\"size\":5", c, NULL);
    json_int_t walker = jint(client_hello(c[0], "walker"), "id");
    json_int_t mover = jint(client_hello(c[1], "mover"), "id");
    char token[80];
    snprintf(token, sizeof token, "%s", client_token(c[0]));
    client_move_any(c[1]);
    client_close(c[0]);
    expect_player(c[1], walker, false, "playing");
    expect_player(c[1], walker, false, "left");
    json_t *end = client_expect_skip(c[1], "end", "state", WAIT + 2000);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), mover);
    /* Its seat is gone: the token resumes nothing. */
    client *late = client_connect(s);
    client_send(late, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect_error(late, "bad_token", WAIT);
}

static void test_grace_expiry_three_players(void **state) {
    th_server *s = SERVER("--grace", "1");
    client *p[3];
    json_t *starts[3];
    race_start(s, 3, "\"size\":4", p, starts);
    json_int_t ida = jint(starts[0], "you"), idb = jint(starts[1], "you"),
               idc = jint(starts[2], "you");
    client_move_any(p[0]);
    client_abort(p[0]);
    for (int i = 1; i < 3; i++)
        expect_player(p[i], ida, false, "playing");
    for (int i = 1; i < 3; i++)
        expect_player(p[i], ida, false, "left");
    client_sync(p[1]); /* two still play: no end */
    client_sync(p[2]);

    client_send(p[1], "{\"type\":\"leave\"}");
    json_t *end = client_expect(p[1], "end", WAIT);
    client_expect(p[1], "left", WAIT);
    expect_player(p[2], idb, true, "left");
    assert_true(jequal(client_expect(p[2], "end", WAIT), end));
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), idc);
    check_ranking(end);
}

/* The `over` status is kept when the seat of an over player is given up. */
static void test_grace_expiry_keeps_over(void **state) {
    th_server *s = SERVER("--grace", "1");
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, "\"size\":3", p, starts);
    json_int_t ida = jint(starts[0], "you");
    json_t *st = NULL;
    for (int i = 0; i < 3000; i++) {
        st = client_move_any(p[0]);
        if (!strcmp(jstr(st, "status"), "over")) break;
    }
    assert_string_equal(jstr(st, "status"), "over");
    client_close(p[0]);
    expect_player(p[1], ida, false, "over");
    expect_player(p[1], ida, false, "over");
    client_sync(p[1]); /* b still plays alone: no forfeit (a is over, not left) */
    st = NULL;
    for (int i = 0; i < 3000; i++) {
        st = client_move_any(p[1]);
        if (!strcmp(jstr(st, "status"), "over")) break;
    }
    json_t *end = client_expect(p[1], "end", WAIT);
    assert_string_equal(jstr(end, "reason"), "all_over");
    assert_string_equal(jstr(jplayer(jarr(end, "results"), ida), "status"), "over");
    check_ranking(end);
}

/* A player away when the race ends is done with it: the end releases its seat. */
static void test_time_end_while_away(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    /* The close must come before the time limit: a margin of seconds. */
    char fields[32];
    snprintf(fields, sizeof fields, "\"time_limit\":%d", harness_ms(2000) / 1000);
    race_start(s, 2, fields, p, starts);
    json_int_t ida = jint(starts[0], "you");
    client_close(p[0]);
    expect_player(p[1], ida, false, "playing");
    json_t *end = client_expect(p[1], "end", WAIT + harness_ms(2000));
    assert_string_equal(jstr(end, "reason"), "time");
    check_ranking(end);
    client *late = client_connect(s);
    client_send(late, "{\"type\":\"resume\",\"token\":\"%s\"}", client_token(p[0]));
    client_expect_error(late, "bad_token", WAIT);
}

/* The one left playing wins a forfeit even while its connection is down. */
static void test_forfeit_to_absent_player(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, NULL, p, starts);
    json_int_t ida = jint(starts[0], "you");
    client_close(p[0]);
    expect_player(p[1], ida, false, "playing");
    client_send(p[1], "{\"type\":\"leave\"}");
    json_t *end = client_expect(p[1], "end", WAIT);
    client_expect(p[1], "left", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    assert_int_equal(jint(end, "winner"), ida);
    check_ranking(end);
}

/* Everyone gone: the grace periods run out one after the other. */
static void test_everyone_gone(void **state) {
    th_server *s = SERVER("--grace", "1");
    client *p[3], *w;
    json_t *starts[3];
    const char *code = race_start(s, 3, NULL, p, starts);
    w = client_named(s, "w");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w, "start", WAIT);
    for (int i = 0; i < 3; i++)
        client_abort(p[i]);
    json_t *end = client_expect_skip(w, "end", "player", WAIT + 2000);
    check_ranking(end);
    json_t *seen = client_skipped(w);
    /* Three lost connections, then at least two seats given up. */
    assert_true(json_array_size(seen) >= 5);
    client_send(w, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(w, "rooms", WAIT), "rooms")), 0);
}

/* One connection takes over the seat of a player in another race: its own
 * seat is then away, like a lost connection. */
static void test_resume_from_another_race(void **state) {
    th_server *s = SERVER(NULL);
    client *p[2], *q[2];
    json_t *sp[2], *sq[2];
    race_start(s, 2, NULL, p, sp);
    race_start(s, 2, NULL, q, sq);
    json_int_t idp0 = jint(sp[0], "you"), idq0 = jint(sq[0], "you");
    client_send(p[0], "{\"type\":\"hello\",\"name\":\"p0\"}");
    char token[80];
    snprintf(token, sizeof token, "%s",
             jstr(client_expect(p[0], "welcome", WAIT), "token"));

    client_send(q[0], "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    assert_int_equal(jint(client_expect(q[0], "welcome", WAIT), "id"), idp0);
    assert_int_equal(jint(client_expect(q[0], "start", WAIT), "you"), idp0);
    client_expect_eof(p[0], WAIT);
    expect_player(q[1], idq0, false, "playing");
    client_sync(p[1]);
    json_t *st = client_move_any(q[0]);
    assert_true(jequal(client_expect(p[1], "state", WAIT), st));
}

/* ------------------------------------------------------------------ idle --- */

static void test_idle_timeout(void **state) {
    th_server *s = SERVER("--idle-timeout", "1");
    client *p[2], *w, *lobby;
    json_t *starts[2];
    const char *code = race_start(s, 2, NULL, p, starts);
    w = client_named(s, "watcher");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    client_expect(w, "start", WAIT);
    /* The lobby client speaks last, so when it is cut off the racers and the
     * watcher have been silent at least as long. */
    client *solo = client_named(s, "solo");
    client_send(solo, "{\"type\":\"solo\"}");
    client_expect(solo, "start", WAIT);
    lobby = client_named(s, "idler");
    client_expect_eof(lobby, WAIT + 2000);
    /* A solo game never ends by itself: its silent player is idle. */
    client_expect_eof(solo, WAIT + 2000);

    json_t *st = client_move_any(p[0]);
    assert_true(jequal(client_expect(p[1], "state", WAIT), st));
    assert_true(jequal(client_expect(w, "state", WAIT), st));

    /* Once the race is over, silent players are closed too. */
    client_send(p[1], "{\"type\":\"leave\"}");
    client_expect(p[1], "end", WAIT);
    client_expect(p[1], "left", WAIT);
    client_expect_skip(p[0], "end", "player", WAIT);
    client_expect_eof(p[0], WAIT + 2000);
    client_expect_skip(w, "end", "player", WAIT);
    client_expect_eof(w, WAIT + 2000);
}

/* ------------------------------------------------------------ slow reader --- */

static void test_slow_consumer(void **state) {
    th_server *s = SERVER("--max-output", "65536");
    client *a = client_named(s, "fast");
    client *slow = client_connect_rcvbuf(s, 4096);
    json_int_t idslow = jint(client_hello(slow, "slow"), "id");
    client_send(a, "{\"type\":\"create\",\"size\":8,\"target\":1048576}");
    const char *code = jstr(client_expect(a, "room", WAIT), "room");
    client_send(slow, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(slow, "start", "room", WAIT);
    client_expect_skip(a, "start", "room", WAIT);
    /* From here the slow client reads nothing. */

    static const char *const dirs[] = {"left", "up", "right", "up"};
    enum { BATCH = 32 };
    char batch[BATCH * 64];
    bool cut = false;
    int moves = 0, after = 0;
    while (moves < 60000 && after < 200) {
        size_t n = 0;
        for (int i = 0; i < BATCH; i++)
            n += (size_t)snprintf(batch + n, sizeof batch - n,
                                  "{\"type\":\"move\",\"dir\":\"%s\"}\n",
                                  dirs[(moves + i) % 4]);
        client_send_raw(a, batch, n, false);
        for (int got = 0; got < BATCH;) {
            json_t *o = client_next(a, WAIT);
            assert_non_null(o);
            const char *t = jstr(o, "type");
            if (!strcmp(t, "state")) {
                assert_string_not_equal(jstr(o, "status"), "over");
                got++;
            } else if (!strcmp(t, "player")) {
                assert_int_equal(jint(o, "id"), idslow);
                assert_false(jbool(o, "connected"));
                cut = true;
            } else {
                fail_msg("unexpected %s while playing", t);
            }
        }
        moves += BATCH;
        if (cut) after += BATCH;
    }
    print_message("slow consumer cut off after about %d moves\n", moves - after);
    assert_true(cut);
    /* The opponent played on after the cut. */
    assert_true(after >= 200);
    json_t *st = client_move_any(a);
    assert_string_equal(jstr(st, "status"), "playing");
    /* The slow client's socket ends: whatever was in flight, then EOF or RST. */
    size_t drained = client_drain_to_eof(slow, WAIT);
    print_message("slow client drained %zu bytes before EOF\n", drained);
    client_sync(a);
}

/* ------------------------------------------------------- long line, racing --- */

static void test_line_too_long_in_race(void **state) {
    th_server *s = SERVER("--max-line", "64");
    client *p[2];
    json_t *starts[2];
    race_start(s, 2, NULL, p, starts);
    json_int_t ida = jint(starts[0], "you");
    client_send(p[0], "{\"type\":\"hello\",\"name\":\"p0\"}");
    char token[80];
    snprintf(token, sizeof token, "%s",
             jstr(client_expect(p[0], "welcome", WAIT), "token"));
    json_t *last = client_move_any(p[0]);
    client_expect(p[1], "state", WAIT);

    client_send(p[0], "{\"type\":\"ping\",\"t\":\"%0100d\"}", 0);
    client_expect_error(p[0], "line_too_long", WAIT);
    client_expect_eof(p[0], WAIT);
    /* Nothing else is lost: the seat waits for a resume. */
    expect_player(p[1], ida, false, "playing");
    json_t *snap = resume(s, &p[0], token, ida, "p0");
    assert_true(
        jequal(jarr(jplayer(jarr(snap, "players"), ida), "board"), jarr(last, "board")));
    expect_player(p[1], ida, true, "playing");
}

/* A human's over-long line is a lost connection too, not a forfeit. */
static void test_text_line_too_long_in_race(void **state) {
    th_server *s = SERVER("--max-line", "64");
    client *host = client_named(s, "host");
    client_send(host, "{\"type\":\"create\"}");
    const char *code = jstr(client_expect(host, "room", WAIT), "room");
    client *human = client_connect(s);
    char line[64];
    snprintf(line, sizeof line, "join %s\r\n", code);
    assert_true(client_send_raw(human, line, strlen(line), false));
    json_t *start = client_expect_skip(host, "start", "room", WAIT);
    json_int_t id = 0;
    for (size_t i = 0; i < json_array_size(jarr(start, "players")); i++) {
        json_int_t pid = jint(json_array_get(jarr(start, "players"), i), "id");
        if (pid != jint(start, "you")) id = pid;
    }
    assert_true(id > 0);
    char longline[200];
    memset(longline, 'x', sizeof longline);
    longline[sizeof longline - 1] = '\n';
    client_send_raw(human, longline, sizeof longline, true);
    client_expect_eof(human, WAIT);
    expect_player(host, id, false, "playing");
    client_sync(host);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_resume_within_grace, harness_teardown),
        cmocka_unit_test_teardown(test_resume_while_connected, harness_teardown),
        cmocka_unit_test_teardown(test_resume_solo, harness_teardown),
        cmocka_unit_test_teardown(test_resume_after_the_end, harness_teardown),
        cmocka_unit_test_teardown(test_resume_guessing_is_throttled, harness_teardown),
        cmocka_unit_test_teardown(test_grace_expiry_forfeit, harness_teardown),
        cmocka_unit_test_teardown(test_grace_expiry_three_players, harness_teardown),
        cmocka_unit_test_teardown(test_move_timeout_forfeits_the_walker,
                                  harness_teardown),
        cmocka_unit_test_teardown(test_move_timeout_before_grace, harness_teardown),
        cmocka_unit_test_teardown(test_grace_expiry_keeps_over, harness_teardown),
        cmocka_unit_test_teardown(test_time_end_while_away, harness_teardown),
        cmocka_unit_test_teardown(test_forfeit_to_absent_player, harness_teardown),
        cmocka_unit_test_teardown(test_everyone_gone, harness_teardown),
        cmocka_unit_test_teardown(test_resume_from_another_race, harness_teardown),
        cmocka_unit_test_teardown(test_idle_timeout, harness_teardown),
        cmocka_unit_test_teardown(test_slow_consumer, harness_teardown),
        cmocka_unit_test_teardown(test_line_too_long_in_race, harness_teardown),
        cmocka_unit_test_teardown(test_text_line_too_long_in_race, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
