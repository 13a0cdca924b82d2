/* test_server_seed.c - fair play over loopback: proto 2, a race replayed from its
 * revealed 256-bit seed, the seed secret until end, client seeds on mulberry32, --seed
 * derivation. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "checks.h"
#include "harness.h"
#include "tt.h"

/* Every object a set of clients received, in order, as JSON text to search,
 * and the objects one of them received, to replay. */
typedef struct seen {
    client *replayer; /* whose objects go to `objects` (NULL: everyone's) */
    json_t *objects;  /* array */
    char *text;       /* every object's compact JSON, one per line */
    size_t len, cap;
} seen;

static void seen_add(seen *s, client *from, json_t *o) {
    assert_non_null(o);
    if (!s->replayer || s->replayer == from) json_array_append(s->objects, o);
    char *line = json_dumps(o, JSON_COMPACT);
    assert_non_null(line);
    size_t n = strlen(line);
    if (s->len + n + 2 > s->cap) {
        s->cap = 2 * (s->len + n + 2);
        s->text = realloc(s->text, s->cap);
        assert_non_null(s->text);
    }
    memcpy(s->text + s->len, line, n);
    s->len += n;
    s->text[s->len++] = '\n';
    s->text[s->len] = '\0';
    free(line);
}

static void seen_free(seen *s) {
    json_decref(s->objects);
    free(s->text);
}

/* The next object c gets, recorded; it must have this type. */
static json_t *expect_seen(client *c, seen *s, const char *type) {
    json_t *o = client_next(c, WAIT);
    if (!o) fail_msg("connection closed waiting for %s", type);
    if (strcmp(jstr(o, "type"), type) != 0)
        fail_msg("expected %s, got %s", type, jstr(o, "type"));
    seen_add(s, c, o);
    return o;
}

/* Records objects c gets until one of this type, which it returns. */
static json_t *until_seen(client *c, seen *s, const char *type) {
    for (int i = 0; i < 100; i++) {
        json_t *o = client_next(c, WAIT);
        if (!o) fail_msg("connection closed waiting for %s", type);
        seen_add(s, c, o);
        if (!strcmp(jstr(o, "type"), type)) return o;
    }
    fail_msg("no %s in 100 messages", type);
    return NULL;
}

/* Lowercase hex of SHA-256(text). */
static void sha256_hex(const char *text, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    assert_true(EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL));
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Fails if the n bytes of text hold hex (any case) or any 16-digit piece of it. */
static void check_no_piece_of(const char *text, size_t n, const char *hex) {
    char *lower = malloc(n + 1);
    assert_non_null(lower);
    for (size_t i = 0; i < n; i++) /* a NUL would hide what follows from strstr */
        lower[i] = text[i] ? (char)tolower((unsigned char)text[i]) : ' ';
    lower[n] = '\0';
    for (size_t at = 0; at + 16 <= strlen(hex); at++) {
        char piece[17];
        memcpy(piece, hex + at, 16);
        piece[16] = '\0';
        if (strstr(lower, piece))
            fail_msg("digits %s of the seed appeared before end", piece);
    }
    free(lower);
}

/* ------------------------------------------------------------- tests --- */

static void test_welcome_says_proto_2(void **state) {
    th_server *s = SERVER(NULL);
    client *c = client_connect(s);
    json_t *w = client_hello(c, "ann");
    assert_int_equal(jint(w, "proto"), 4);
    /* The same after a resume (into a game in progress). */
    client_send(c, "{\"type\":\"solo\"}");
    client_expect(c, "start", WAIT);
    char token[80];
    snprintf(token, sizeof token, "%s", jstr(w, "token"));
    client *again = client_connect(s);
    client_send(again, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    assert_int_equal(jint(client_expect(again, "welcome", WAIT), "proto"), 4);
}

/* A race with a JSON spectator and a text-mode one: nothing anyone receives
 * before `end` holds the seed or a 16-digit piece of it; `end` reveals 64 hex
 * digits whose commit matches and whose ChaCha20 draws replay both players
 * exactly, and the text end screen shows them. */
static void test_race_seed_secret_then_replays(void **state) {
    th_server *s = SERVER(NULL);
    seen log = {.objects = json_array()};
    assert_non_null(log.objects);
    client *a = client_named(s, "ann"), *b = client_named(s, "bob");
    client *w = client_named(s, "wes");
    log.replayer = w; /* the spectator sees every move once */
    client_send(a, "{\"type\":\"create\",\"size\":4,\"target\":2048}");
    const char *code = jstr(expect_seen(a, &log, "room"), "room");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    expect_seen(w, &log, "room");
    tt_client t;
    tt_connect(&t, s->port);
    tt_sends(&t, "name tess\r\n");
    char watch[64];
    snprintf(watch, sizeof watch, "watch %s\r\n", code);
    tt_sends(&t, watch);
    client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    json_t *start = until_seen(a, &log, "start");
    until_seen(b, &log, "start");
    until_seen(w, &log, "start");
    const char *commit = jstr(start, "commit");
    json_int_t ida = jint(start, "you");
    json_t *players = jarr(start, "players");
    assert_int_equal(json_array_size(players), 2);
    json_int_t idb = jint(json_array_get(players, 0), "id");
    if (idb == ida) idb = jint(json_array_get(players, 1), "id");

    /* Forty moves each, in turns; every state goes to all three. */
    static const char *const dirs[] = {"left", "down", "right", "down", "up", "left"};
    client *movers[2] = {a, b};
    for (int i = 0; i < 80; i++) {
        client_send(movers[i % 2], "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%d}",
                    dirs[(i / 2 + i % 2) % 6], i + 1);
        /* A move that changes nothing is told to its mover only. */
        json_t *st = expect_seen(movers[i % 2], &log, "state");
        if (!jbool(st, "moved")) continue;
        expect_seen(movers[1 - i % 2], &log, "state");
        expect_seen(w, &log, "state");
    }
    client_send(w, "{\"type\":\"rooms\"}");
    expect_seen(w, &log, "rooms");
    /* The text spectator has drawn the race: its list shows the room racing. */
    tt_sends(&t, "rooms\r\n");
    if (tt_wait_str(&t, 0, ", racing: watch", harness_ms(TT_WAIT)) < 0)
        fail_msg("the text spectator never listed the running race");
    assert_true(tt_find(t.buf, t.len, 0, "bob", 3) >= 0);
    size_t text_before_end = t.len;

    /* bob leaves: a forfeit, and the seed is revealed. */
    client_send(b, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(a, "end", "player", WAIT);
    json_t *endw = client_expect_skip(w, "end", "player", WAIT);
    assert_true(jequal(end, endw));
    eng_seed seed = check_end_seed(end);
    assert_int_equal(seed.kind, ENG_SEED_SERVER);
    const char *hex = jstr(end, "seed");
    assert_int_equal(strlen(hex), 64);
    check_commit(commit, end);
    check_no_piece_of(log.text, log.len, hex);
    check_no_piece_of(t.buf, text_before_end, hex);
    /* Then the text end screen reveals it, whole, on its own line. */
    char seed_line[80];
    snprintf(seed_line, sizeof seed_line, "seed %s\r\n", hex);
    if (tt_wait_str(&t, text_before_end, seed_line, harness_ms(TT_WAIT)) < 0)
        fail_msg("the text end screen does not show the seed");
    tt_close(&t);

    /* The revealed seed gives the start board and every move after it. */
    eng_game g;
    assert_int_equal(eng_game_new(&g, 4, &seed), 0);
    check_board(jarr(jplayer(jarr(start, "players"), ida), "board"), &g.board);
    check_board(jarr(jplayer(jarr(start, "players"), idb), "board"), &g.board);
    check_replay(end, ida, log.objects, 4);
    check_replay(end, idb, log.objects, 4);
    /* The moves did something: spawns were checked, not skipped. */
    assert_true(jint(jplayer(jarr(end, "results"), ida), "moves") > 10);
    assert_true(jint(jplayer(jarr(end, "results"), idb), "moves") > 10);
    seen_free(&log);
}

/* A seed the player chose: end gives the number back, the commit hashes
 * its decimal form, and mulberry32 replays the game. */
static void test_client_seed_replays_mulberry32(void **state) {
    th_server *s = SERVER(NULL);
    seen log = {.objects = json_array()};
    assert_non_null(log.objects);
    client *c = client_named(s, "sol");
    client_send(c, "{\"type\":\"solo\",\"size\":4,\"seed\":3000000000}");
    json_t *start = expect_seen(c, &log, "start");
    json_int_t id = jint(start, "you");
    eng_game g;
    eng_seed mine = eng_seed_client(3000000000u);
    assert_int_equal(eng_game_new(&g, 4, &mine), 0);
    check_board(jarr(json_array_get(jarr(start, "players"), 0), "board"), &g.board);
    for (int i = 0; i < 30; i++)
        seen_add(&log, c, client_move_any(c));
    client_send(c, "{\"type\":\"leave\"}");
    json_t *end = client_expect(c, "end", WAIT);
    assert_true(json_is_integer(json_object_get(end, "seed")));
    assert_int_equal(jint(end, "seed"), 3000000000ll);
    eng_seed seed = check_end_seed(end);
    assert_int_equal(seed.kind, ENG_SEED_CLIENT);
    check_commit(jstr(start, "commit"), end);
    check_replay(end, id, log.objects, 4);
    seen_free(&log);
}

/* With --seed N the K-th server seed (from 0) is SHA-256("race2048:N:K"):
 * still 256 bits, repeatable for tests, fresh for every game. */
static void test_seed_flag_derivation(void **state) {
    th_server *s = SERVER("--seed", "7");
    client *c = client_named(s, "sol");
    for (int k = 0; k < 2; k++) {
        client_send(c, "{\"type\":\"solo\",\"size\":3}");
        json_t *start = client_expect(c, "start", WAIT);
        client_send(c, "{\"type\":\"leave\"}");
        json_t *end = client_expect(c, "end", WAIT);
        client_expect(c, "left", WAIT);
        char text[64], want[65];
        snprintf(text, sizeof text, "race2048:7:%d", k);
        sha256_hex(text, want);
        assert_string_equal(jstr(end, "seed"), want);
        check_commit(jstr(start, "commit"), end);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_welcome_says_proto_2, harness_teardown),
        cmocka_unit_test_teardown(test_race_seed_secret_then_replays, harness_teardown),
        cmocka_unit_test_teardown(test_client_seed_replays_mulberry32, harness_teardown),
        cmocka_unit_test_teardown(test_seed_flag_derivation, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
