/* test_room_unit.c - end rules and ranking on crafted boards: the lobby and rooms of
 * race2048_server driven in-process through connections on socketpairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "checks.h"
#include "conn.h"
#include "fake_conn.h"
#include "session.h"
#include "journal.h"
#include "room.h"

/* One server, as main.c sets it up, without a listener (fake_conn.h). */
static srv S;
static uv_loop_t loop;

/* A connection whose socket is one end of a socketpair; the test reads the
 * other end. */
typedef fake_conn fake;

static int setup(void **state) {
    fake_server_init(&S, &loop, 4096, SRV_LOG_WARN);
    return 0;
}

/* Closes every connection and room the way shutdown does; the loop must end
 * with nothing left (and ASan finds no leak). */
static int teardown(void **state) {
    fake_server_free(&S, &loop);
    return 0;
}

static fake *fake_new(const char *name) {
    fake *f = fake_conn_new(&S, CONN_JSON);
    char hello[64];
    snprintf(hello, sizeof hello, "{\"type\":\"hello\",\"name\":\"%s\"}", name);
    session_json_line(f->c, hello, strlen(hello));
    return f;
}

static void say(fake *f, const char *line) {
    session_json_line(f->c, line, strlen(line));
}

/* The next message the server wrote to f, or NULL if none is there. Output
 * queued is written at the end of a loop turn: the test ends the turn, and
 * writes to a socketpair complete at once. */
static json_t *next(fake *f) {
    fake_conn_pull(f);
    char *nl = memchr(f->buf, '\n', f->len);
    if (!nl) return NULL;
    size_t n = (size_t)(nl - f->buf);
    json_t *o = json_loadb(f->buf, n, 0, NULL);
    memmove(f->buf, nl + 1, f->len - n - 1);
    f->len -= n + 1;
    assert_non_null(o);
    return o;
}

/* The next message of this type, skipping others; fails if none is there. */
static json_t *expect(fake *f, const char *type) {
    for (json_t *o; (o = next(f));) {
        if (!strcmp(json_string_value(json_object_get(o, "type")), type)) return o;
        json_decref(o);
    }
    fail_msg("no \"%s\" for %s", type, f->c->player ? f->c->player->name : "?");
    return NULL;
}

static void drain(fake *f) {
    for (json_t *o; (o = next(f));)
        json_decref(o);
}

/* Sets a seat's board from face values, row-major. */
static void set_board(room_seat *seat, int size, const unsigned *values) {
    eng_board *b = &seat->board;
    eng_board_init(b, size);
    for (int i = 0; i < size * size; i++)
        b->cell[i] = (uint8_t)(values[i] ? eng_value_exp(values[i]) : 0);
}

/* A race of n players on size x size boards, running. */
static room *race(fake **f, int n, int size, unsigned target) {
    char create[128];
    snprintf(create, sizeof create,
             "{\"type\":\"create\",\"players\":%d,\"size\":%d,\"target\":%u}", n, size,
             target);
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        f[i] = fake_new(name);
    }
    say(f[0], create);
    room *r = f[0]->c->player->room;
    assert_non_null(r);
    for (int i = 1; i < n; i++) {
        char join[64];
        snprintf(join, sizeof join, "{\"type\":\"join\",\"room\":\"%s\"}", r->code);
        say(f[i], join);
    }
    assert_int_equal(r->state, ROOM_RUNNING);
    for (int i = 0; i < n; i++)
        drain(f[i]);
    return r;
}

static room_seat *seat_of(fake *f) {
    return &f->c->player->room->seats[f->c->player->seat];
}

/* 3x3, one move (left) from `over`: the spawn fills the last cell with a 2
 * or a 4, and nothing can merge afterwards. top is the largest tile (above
 * 256, its neighbour). */
static void one_move_from_over(room_seat *seat, unsigned top) {
    const unsigned v[9] = {0, 4, 8, 16, 32, 64, 128, 256, top};
    set_board(seat, 3, v);
}

/* ---------------------------------------------------------------- tests --- */

/* The target wins even when the same move leaves the board over. */
static void test_target_beats_over(void **state) {
    fake *f[2];
    room *r = race(f, 2, 3, 2048);
    const unsigned v[9] = {1024, 1024, 8, 16, 32, 64, 128, 256, 512};
    set_board(seat_of(f[0]), 3, v);
    say(f[0], "{\"type\":\"move\",\"dir\":\"left\"}");
    json_t *st = expect(f[0], "state");
    assert_string_equal(json_string_value(json_object_get(st, "status")), "over");
    json_t *end = expect(f[1], "end");
    assert_string_equal(json_string_value(json_object_get(end, "reason")), "target");
    assert_int_equal(json_integer_value(json_object_get(end, "winner")),
                     f[0]->c->player->id);
    assert_int_equal(r->state, ROOM_ENDED);
    json_decref(st);
    json_decref(end);
}

/* Ends a crafted race by moving every player into `over`; returns the end. */
static json_t *all_over(fake **f, int n) {
    for (int i = 0; i < n; i++)
        say(f[i], "{\"type\":\"move\",\"dir\":\"left\"}");
    json_t *end = expect(f[0], "end");
    assert_string_equal(json_string_value(json_object_get(end, "reason")), "all_over");
    check_ranking(end);
    return end;
}

static json_int_t result_id(const json_t *end, size_t i) {
    return json_integer_value(
        json_object_get(json_array_get(json_object_get(end, "results"), i), "id"));
}

static void test_rank_by_score(void **state) {
    fake *f[3];
    race(f, 3, 3, 2048);
    for (int i = 0; i < 3; i++) {
        one_move_from_over(seat_of(f[i]), 512);
        seat_of(f[i])->score = (uint64_t)(100 * (i + 1));
    }
    json_t *end = all_over(f, 3);
    assert_int_equal(result_id(end, 0), f[2]->c->player->id);
    assert_int_equal(result_id(end, 1), f[1]->c->player->id);
    assert_int_equal(result_id(end, 2), f[0]->c->player->id);
    assert_int_equal(json_integer_value(json_object_get(end, "winner")),
                     f[2]->c->player->id);
    json_decref(end);
}

static void test_rank_by_max_tile(void **state) {
    fake *f[2];
    race(f, 2, 3, 2048);
    one_move_from_over(seat_of(f[0]), 512);
    one_move_from_over(seat_of(f[1]), 1024);
    json_t *end = all_over(f, 2);
    assert_int_equal(result_id(end, 0), f[1]->c->player->id);
    assert_int_equal(json_integer_value(json_object_get(end, "winner")),
                     f[1]->c->player->id);
    json_decref(end);
}

static void test_rank_by_fewer_moves(void **state) {
    fake *f[2];
    race(f, 2, 3, 2048);
    one_move_from_over(seat_of(f[0]), 512);
    one_move_from_over(seat_of(f[1]), 512);
    seat_of(f[0])->moves = 7;
    seat_of(f[1])->moves = 5;
    json_t *end = all_over(f, 2);
    assert_int_equal(result_id(end, 0), f[1]->c->player->id);
    assert_int_equal(json_integer_value(json_object_get(end, "winner")),
                     f[1]->c->player->id);
    json_decref(end);
}

static void test_full_tie_is_a_draw(void **state) {
    fake *f[3];
    race(f, 3, 3, 2048);
    for (int i = 0; i < 3; i++) {
        one_move_from_over(seat_of(f[i]), 512);
        seat_of(f[i])->score = i == 2 ? 10 : 50; /* a tie at the top only */
        seat_of(f[i])->moves = 3;
    }
    json_t *end = all_over(f, 3);
    assert_true(json_is_null(json_object_get(end, "winner")));
    assert_int_equal(result_id(end, 2), f[2]->c->player->id);
    json_decref(end);
}

/* The one who left ranks last, even with the best score; one `over` and
 * one `left` is no forfeit for the last player: it plays on. */
static void test_left_ranks_last(void **state) {
    fake *f[3];
    race(f, 3, 3, 2048);
    seat_of(f[0])->score = 100000;
    say(f[0], "{\"type\":\"leave\"}");
    drain(f[1]);
    one_move_from_over(seat_of(f[1]), 512);
    say(f[1], "{\"type\":\"move\",\"dir\":\"left\"}");
    assert_int_equal(f[1]->c->player->room->state, ROOM_RUNNING);
    one_move_from_over(seat_of(f[2]), 1024);
    say(f[2], "{\"type\":\"move\",\"dir\":\"left\"}");
    json_t *end = expect(f[1], "end");
    check_ranking(end);
    assert_string_equal(json_string_value(json_object_get(end, "reason")), "all_over");
    assert_int_equal(result_id(end, 0), f[2]->c->player->id);
    assert_int_equal(result_id(end, 2), f[0]->c->player->id);
    json_decref(end);
}

/* ------------------------------------------- the end record, come what may --- */

/* Linked with --wrap (tests/server/CMakeLists.txt): `end`'s encoder can be
 * made to fail as if memory ran out, and the end records are counted. */
static bool fail_end_encoding;
static int end_records;
static uint64_t end_record_winner;
char *__real_proto_enc_end_rated(const char *code, proto_end_reason reason,
                                 uint64_t winner, const proto_player *results, int n,
                                 const eng_seed *seed, const char *salt,
                                 const proto_rating_change *ratings, int nratings,
                                 size_t *len);
char *__wrap_proto_enc_end_rated(const char *code, proto_end_reason reason,
                                 uint64_t winner, const proto_player *results, int n,
                                 const eng_seed *seed, const char *salt,
                                 const proto_rating_change *ratings, int nratings,
                                 size_t *len);
char *__wrap_proto_enc_end_rated(const char *code, proto_end_reason reason,
                                 uint64_t winner, const proto_player *results, int n,
                                 const eng_seed *seed, const char *salt,
                                 const proto_rating_change *ratings, int nratings,
                                 size_t *len) {
    if (fail_end_encoding) return NULL;
    return __real_proto_enc_end_rated(code, reason, winner, results, n, seed, salt,
                                      ratings, nratings, len);
}
uint64_t __real_journal_game_end(jrn_game *g, const jrn_end *end);
uint64_t __wrap_journal_game_end(jrn_game *g, const jrn_end *end);
uint64_t __wrap_journal_game_end(jrn_game *g, const jrn_end *end) {
    end_records++;
    end_record_winner = end->winner;
    return __real_journal_game_end(g, end);
}

/* Out of memory for the JSON `end`: the end record is written all the same
 * (the text view of the end shows the seed, which must be a recorded one),
 * once, with the verdict; the race is over for everyone. */
static void test_end_recorded_without_its_line(void **state) {
    fake *f[2];
    room *r = race(f, 2, 3, 2048);
    const unsigned v[9] = {1024, 1024, 8, 16, 32, 64, 128, 256, 512};
    set_board(seat_of(f[0]), 3, v);
    end_records = 0;
    fail_end_encoding = true;
    say(f[0], "{\"type\":\"move\",\"dir\":\"left\"}");
    fail_end_encoding = false;
    assert_int_equal(end_records, 1);
    assert_int_equal(end_record_winner, f[0]->c->player->id);
    assert_int_equal(r->state, ROOM_ENDED);
    json_t *st = expect(f[1], "state"); /* the deciding move; no `end` line follows */
    json_decref(st);
    for (json_t *o; (o = next(f[1]));) {
        assert_string_not_equal(json_string_value(json_object_get(o, "type")), "end");
        json_decref(o);
    }
}

/* And with its line, the record is written once (the normal path). */
static void test_end_recorded_once(void **state) {
    fake *f[2];
    race(f, 2, 3, 2048);
    const unsigned v[9] = {1024, 1024, 8, 16, 32, 64, 128, 256, 512};
    set_board(seat_of(f[0]), 3, v);
    end_records = 0;
    say(f[0], "{\"type\":\"move\",\"dir\":\"left\"}");
    assert_int_equal(end_records, 1);
    json_decref(expect(f[1], "end"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_target_beats_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_by_score, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_by_max_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_by_fewer_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_tie_is_a_draw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_ranks_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_recorded_without_its_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_end_recorded_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
