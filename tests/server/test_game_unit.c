/* test_game_unit.c - the game layer alone: lobby and rooms driven through players whose
 * destinations are fake sinks (no socket, no connection). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "journal.h"
#include "lobby.h"
#include "room.h"
#include "srv.h"
#include "transports.h"

/* What a fake destination was given. */
#define FAKE_MSGS 64
typedef struct fake_sink {
    int n;
    srv_msg_type type[FAKE_MSGS];
    char *json[FAKE_MSGS]; /* the line, NUL-terminated, or NULL */
    bool alive;
    bool closed;
    sink_close_reason why;
    unsigned wait_s; /* what game_start_wait answers */
    unsigned starts; /* game starts it was asked about */
} fake_sink;

static void fake_deliver(void *dest, const srv_msg *m) {
    fake_sink *f = dest;
    assert_false(f->closed); /* nothing goes to a destination the game let go */
    assert_true(f->n < FAKE_MSGS);
    f->type[f->n] = m->type;
    f->json[f->n] = m->json ? strndup(m->json->data, m->json->len) : NULL;
    f->n++;
}

static void fake_close(void *dest, sink_close_reason why) {
    fake_sink *f = dest;
    f->closed = true;
    f->why = why;
}

static bool fake_alive(const void *dest) {
    return ((const fake_sink *)dest)->alive;
}

static unsigned fake_game_start_wait(void *dest) {
    fake_sink *f = dest;
    f->starts++;
    return f->wait_s;
}

static const sink_ops fake_ops = {.deliver = fake_deliver,
                                  .close = fake_close,
                                  .alive = fake_alive,
                                  .game_start_wait = fake_game_start_wait};

static srv S; /* only for the journal (memory only) and the game it holds */
static uv_loop_t loop;
static eng_tables *tables;
static fake_sink fakes[6];

static sink sink_of(fake_sink *f) {
    return (sink){.ops = &fake_ops, .dest = f};
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    static srv_config cfg; /* srv keeps a pointer to it */
    cfg = (srv_config){.max_line = 4096,
                       .grace_ms = 30000,
                       .has_seed = true,
                       .seed = 7,
                       .journal_sync_ms = 100,
                       .journal_max = 1 << 20,
                       .max_spectators = 10};
    srv_log_set_level(SRV_LOG_WARN);
    tables = malloc(sizeof *tables);
    assert_non_null(tables);
    eng_tables_init(tables);
    srv_init(&S, &loop, &cfg, tables);
    transports_install(&S);
    /* A record in memory only (no path), as --journal none runs. */
    journal_config jc = {
        .path = "", .sync_ms = 100, .max = 1 << 20, .next_player_id = &S.game.next_id};
    jrn_recovery rec;
    assert_int_equal(journal_open(&S.journal, &loop, &jc, &rec), 0);
    journal_recovery_free(&rec);
    S.game.journal = S.journal;
    memset(fakes, 0, sizeof fakes);
    for (int i = 0; i < 6; i++)
        fakes[i].alive = true;
    return 0;
}

static void fake_clear(fake_sink *f) {
    for (int i = 0; i < f->n; i++)
        free(f->json[i]);
    f->n = 0;
}

static int teardown(void **state) {
    (void)state;
    room_close_all(&S.game);
    /* Players still attached to a fake go when their destination does. */
    while (!srv_list_empty(&S.game.players)) {
        srv_player *p = srv_container(S.game.players.next, srv_player, link);
        lobby_player_gone(p);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    journal_close(S.journal);
    game_free(&S.game);
    uv_walk(&loop, (uv_walk_cb)uv_close, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    free(tables);
    for (int i = 0; i < 6; i++)
        fake_clear(&fakes[i]);
    return 0;
}

static srv_player *player(int i) {
    srv_player *p = lobby_player_new(&S.game, sink_of(&fakes[i]));
    assert_non_null(p);
    return p;
}

/* Decodes line as a client request and hands it to the game for p. */
static void ask(srv_player *p, const char *line) {
    proto_request req;
    proto_error err;
    assert_int_equal(proto_decode(line, strlen(line), &req, &err), 0);
    lobby_request(p, &req);
}

/* The index of the first message of type t at or after `from`, or -1. */
static int find(const fake_sink *f, srv_msg_type t, int from) {
    for (int i = from; i < f->n; i++)
        if (f->type[i] == t) return i;
    return -1;
}

static json_t *parse(const char *line) {
    json_t *v = json_loads(line, 0, NULL);
    assert_non_null(v);
    return v;
}

static const char *str_of(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    assert_non_null(s);
    return s;
}

/* A two-player race made by create and join: returns the room code. */
static void race(srv_player *a, srv_player *b, char code[8]) {
    ask(a, "{\"type\":\"create\",\"players\":2}");
    int k = find(&fakes[0], SRV_MSG_ROOM, 0);
    assert_true(k >= 0);
    json_t *reply = parse(fakes[0].json[k]);
    snprintf(code, 8, "%s", str_of(reply, "room"));
    json_decref(reply);
    char line[80];
    snprintf(line, sizeof line, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    ask(b, line);
}

/* Both racers get one `start` with the same boards; a move that changes a
 * board reaches both; the leaver's opponent wins by forfeit and both get
 * the one `end`. */
static void test_race_between_two_sinks(void **state) {
    (void)state;
    srv_player *a = player(0), *b = player(1);
    char code[8];
    race(a, b, code);
    assert_int_equal(fakes[0].type[0], SRV_MSG_WELCOME); /* the automatic welcome first */
    int sa = find(&fakes[0], SRV_MSG_START, 0), sb = find(&fakes[1], SRV_MSG_START, 0);
    assert_true(sa >= 0 && sb >= 0);
    json_t *ja = parse(fakes[0].json[sa]), *jb = parse(fakes[1].json[sb]);
    assert_true(
        json_equal(json_object_get(ja, "players"), json_object_get(jb, "players")));
    assert_string_equal(str_of(ja, "commit"), str_of(jb, "commit"));
    json_decref(ja);
    json_decref(jb);

    int before_a = fakes[0].n, before_b = fakes[1].n;
    /* Some direction moves a fresh board (two tiles on 16 cells). */
    static const char *const dirs[] = {"left", "right", "up", "down"};
    for (int d = 0; d < 4 && find(&fakes[1], SRV_MSG_STATE, before_b) < 0; d++) {
        char line[64];
        snprintf(line, sizeof line, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[d]);
        ask(a, line);
    }
    assert_true(find(&fakes[0], SRV_MSG_STATE, before_a) >= 0);
    assert_true(find(&fakes[1], SRV_MSG_STATE, before_b) >= 0);

    ask(a, "{\"type\":\"leave\"}");
    int eb = find(&fakes[1], SRV_MSG_END, before_b);
    assert_true(eb >= 0);
    assert_true(find(&fakes[0], SRV_MSG_END, before_a) >= 0);
    assert_int_equal(find(&fakes[1], SRV_MSG_END, eb + 1), -1); /* one verdict */
    json_t *end = parse(fakes[1].json[eb]);
    assert_string_equal(str_of(end, "reason"), "forfeit");
    assert_int_equal(json_integer_value(json_object_get(end, "winner")),
                     (json_int_t)b->id);
    json_decref(end);
}

/* A resume through another destination takes the seat: the old one is
 * closed as taken over and gets nothing more; the new one gets welcome and
 * the `start` snapshot. */
static void test_take_back_closes_the_old_sink(void **state) {
    (void)state;
    srv_player *a = player(0), *b = player(1);
    char code[8];
    race(a, b, code);
    srv_player *found = lobby_find_resumable(&S.game, a->token);
    assert_ptr_equal(found, a);
    assert_null(lobby_find_resumable(&S.game, "00000000000000000000000000000000"));
    lobby_take_back(a, sink_of(&fakes[2]));
    assert_true(fakes[0].closed);
    assert_int_equal(fakes[0].why, SINK_TAKEN_OVER);
    assert_false(fakes[1].closed);
    assert_int_equal(fakes[2].type[0], SRV_MSG_WELCOME);
    assert_true(find(&fakes[2], SRV_MSG_START, 0) > 0);
    /* Still seated: the opponent's move is seen by the new destination. */
    int before = fakes[2].n;
    ask(b, "{\"type\":\"ping\"}");
    assert_int_equal(fakes[2].n, before); /* a pong goes to b alone */
}

/* A destination gone for its player's seat keeps the seat for the grace
 * period: the opponent hears `player` connected false. */
static void test_lost_destination_keeps_the_seat(void **state) {
    (void)state;
    srv_player *a = player(0), *b = player(1);
    char code[8];
    race(a, b, code);
    int before = fakes[1].n;
    uint64_t id = a->id;
    lobby_player_gone(a);
    int k = find(&fakes[1], SRV_MSG_PLAYER, before);
    assert_true(k >= 0);
    json_t *v = parse(fakes[1].json[k]);
    assert_int_equal(json_integer_value(json_object_get(v, "id")), (json_int_t)id);
    assert_true(json_is_false(json_object_get(v, "connected")));
    json_decref(v);
    assert_int_equal(find(&fakes[1], SRV_MSG_END, before), -1);
}

/* Matchmaking skips a destination on its way out. */
static void test_quick_skips_dead_sinks(void **state) {
    (void)state;
    srv_player *a = player(0), *b = player(1), *c = player(2);
    ask(a, "{\"type\":\"quick\",\"players\":2}");
    fakes[0].alive = false;
    ask(b, "{\"type\":\"quick\",\"players\":2}");
    assert_int_equal(find(&fakes[1], SRV_MSG_START, 0), -1);
    assert_true(find(&fakes[1], SRV_MSG_QUEUED, 0) >= 0);
    ask(c, "{\"type\":\"quick\",\"players\":2}");
    assert_true(find(&fakes[1], SRV_MSG_START, 0) >= 0);
    assert_true(find(&fakes[2], SRV_MSG_START, 0) >= 0);
    assert_int_equal(find(&fakes[0], SRV_MSG_START, 0), -1);
}

/* A game start asks the destination's budget; a refusal is one error
 * rate_limited that says the wait. */
static void test_game_budget_is_the_sinks(void **state) {
    (void)state;
    srv_player *a = player(0);
    fakes[0].wait_s = 7;
    ask(a, "{\"type\":\"solo\"}");
    assert_int_equal(fakes[0].starts, 1);
    int k = find(&fakes[0], SRV_MSG_ERROR, 0);
    assert_true(k >= 0);
    json_t *v = parse(fakes[0].json[k]);
    assert_string_equal(str_of(v, "code"), "rate_limited");
    assert_non_null(strstr(str_of(v, "message"), "7 s"));
    json_decref(v);
    assert_int_equal(find(&fakes[0], SRV_MSG_START, 0), -1);
    fakes[0].wait_s = 0;
    ask(a, "{\"type\":\"solo\"}");
    assert_true(find(&fakes[0], SRV_MSG_START, 0) >= 0);
}

/* Spectators are players too: a watcher's destination gets the snapshot
 * and the broadcasts, in order, through the fan-out. */
static void test_spectator_sink(void **state) {
    (void)state;
    srv_player *a = player(0), *b = player(1), *w = player(3);
    char code[8];
    race(a, b, code);
    char line[80];
    snprintf(line, sizeof line, "{\"type\":\"watch\",\"room\":\"%s\"}", code);
    ask(w, line);
    int s = find(&fakes[3], SRV_MSG_START, 0);
    assert_true(s >= 0);
    ask(a, "{\"type\":\"leave\"}");
    uv_run(&loop, UV_RUN_NOWAIT); /* the fan-out's share of this turn */
    assert_true(find(&fakes[3], SRV_MSG_END, s) > s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_race_between_two_sinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_back_closes_the_old_sink, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_destination_keeps_the_seat, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_quick_skips_dead_sinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_game_budget_is_the_sinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spectator_sink, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
