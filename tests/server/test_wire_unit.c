/* test_wire_unit.c - what nodes send each other (wire.c): requests, views and messages
 * come back as they went, and anything malformed is refused, never trusted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire.h"

static void test_request_round_trip(void **state) {
    (void)state;
    proto_request req = {
        .type = PROTO_REQ_CREATE,
        .settings = {.players = 3, .size = 5, .target = 256, .time_limit = 60},
        .bots = 2,
        .level = 4};
    snprintf(req.room, sizeof req.room, "K7QD2X");
    snprintf(req.name, sizeof req.name, "ann");
    json_t *v = wire_request(&req);
    proto_request back;
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_memory_equal(&req, &back, sizeof req);
    json_decref(v);

    proto_request move = {
        .type = PROTO_REQ_MOVE, .dir = ENG_DOWN, .has_seq = true, .seq = 77};
    v = wire_request(&move);
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_int_equal(back.dir, ENG_DOWN);
    assert_true(back.has_seq);
    assert_int_equal(back.seq, 77);
    json_decref(v);

    /* Issue 28: the arenas' requests travel with their fields (an arena's
     * code in room). */
    proto_request create;
    memset(&create, 0, sizeof create);
    create.type = PROTO_REQ_ARENA_CREATE;
    create.settings = (proto_settings){.players = 6, .size = 5, .target = 1024};
    create.minutes = 240;
    create.starts_in = 86400;
    snprintf(create.arena_name, sizeof create.arena_name, "%s",
             "Friday night 2048, all welcome!!");
    v = wire_request(&create);
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_int_equal(back.type, PROTO_REQ_ARENA_CREATE);
    assert_string_equal(back.arena_name, create.arena_name);
    assert_int_equal(back.minutes, 240);
    assert_int_equal(back.starts_in, 86400);
    assert_int_equal(back.settings.players, 6);
    assert_int_equal(back.settings.size, 5);
    assert_int_equal(back.settings.target, 1024);
    json_decref(v);
    proto_request join;
    memset(&join, 0, sizeof join);
    join.type = PROTO_REQ_ARENA_JOIN;
    join.settings.players = 2;
    snprintf(join.room, sizeof join.room, "AB3DEF");
    v = wire_request(&join);
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_int_equal(back.type, PROTO_REQ_ARENA_JOIN);
    assert_string_equal(back.room, "AB3DEF");
    json_decref(v);

    /* A quick or create keeps `rated` on its way to another node (before, a
     * quick matched on its host node was never rated); a node that sends
     * four settings (no `rated`) is still understood. */
    proto_request quick;
    memset(&quick, 0, sizeof quick);
    quick.type = PROTO_REQ_QUICK;
    quick.settings =
        (proto_settings){.players = 2, .size = 4, .target = 2048, .rated = true};
    v = wire_request(&quick);
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_true(back.settings.rated);
    json_array_remove(json_object_get(v, "s"), 4);
    assert_int_equal(wire_request_parse(v, &back), 0);
    assert_false(back.settings.rated);
    assert_int_equal(back.settings.target, 2048);
    json_decref(v);
}

static void test_request_refused(void **state) {
    (void)state;
    const char *bad[] = {
        "[]",
        "{\"t\":99,\"s\":[2,4,2048,0]}",        /* no such type */
        "{\"t\":6,\"s\":[2,4,2048,0],\"d\":7}", /* no such direction */
        "{\"t\":1,\"s\":[99,4,2048,0]}",        /* players out of range */
        "{\"t\":0,\"s\":[2,4,2048,0],\"n\":\"aaaaaaaaaaaaaaaaaaaaaa\"}", /* name too long
                                                                          */
        "{\"t\":0}",                                                     /* no settings */
        "{\"t\":3,\"s\":[2,4,2048,0],\"r\":\"ABCDEFGHIJ\"}", /* code too long */
        /* Accounts' requests are not forwarded (register: its node's own). */
        "{\"t\":14,\"s\":[2,4,2048,0]}",
        /* An arena's fields past their bounds. */
        "{\"t\":19,\"s\":[4,4,2048,0],\"mi\":241}",
        "{\"t\":19,\"s\":[4,4,2048,0],\"si\":86401}",
        "{\"t\":19,\"s\":[4,4,2048,0],\"an\":\"012345678901234567890123456789012\"}",
        "{\"t\":19,\"s\":[4,4,2048,0],\"mi\":-1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = json_loads(bad[i], 0, NULL);
        proto_request back;
        assert_non_null(v);
        assert_int_equal(wire_request_parse(v, &back), -1);
        json_decref(v);
    }
}

static srv_view *sample_view(void) {
    srv_view *v = srv_view_new(2);
    assert_non_null(v);
    snprintf(v->code, sizeof v->code, "Q2W3E4");
    v->state = SRV_VIEW_ENDED;
    v->settings = (proto_settings){.players = 2, .size = 4, .target = 2048};
    snprintf(v->commit, sizeof v->commit, "%064d", 7);
    v->ends_at = 1000 + 5000;
    for (int i = 0; i < 2; i++) {
        srv_view_seat *s = &v->seats[i];
        s->id = 1000 + (uint64_t)i;
        snprintf(s->name, sizeof s->name, "p%d", i);
        s->board.size = 4;
        s->board.cell[i] = 3;
        s->score = 40u * (uint64_t)i;
        s->moves = 9;
        s->status = i ? PROTO_OVER : PROTO_WON;
        s->seated = true;
        s->connected = i == 0;
        s->grace_until = i ? 1000 + 30000 : 0;
    }
    v->has_verdict = true;
    v->ranking[0] = 1;
    v->ranking[1] = 0;
    v->seed.kind = ENG_SEED_SERVER;
    v->seed.key[31] = 0xab;
    snprintf(v->salt, sizeof v->salt, "%032d", 5);
    return v;
}

/* A view sent at loop time 1000 and read at 50000 keeps its times relative. */
static void test_view_round_trip(void **state) {
    (void)state;
    srv_view *v = sample_view();
    json_t *j = wire_view(v, 1000);
    srv_view *back = wire_view_parse(j, 50000);
    assert_non_null(back);
    assert_string_equal(back->code, v->code);
    assert_int_equal(back->state, SRV_VIEW_ENDED);
    assert_int_equal(back->ends_at, 50000 + 5000);
    assert_int_equal(back->nseats, 2);
    assert_memory_equal(&back->seats[0].board, &v->seats[0].board,
                        sizeof v->seats[0].board);
    assert_int_equal(back->seats[1].grace_until, 50000 + 30000);
    assert_int_equal(back->seats[0].grace_until, 0);
    assert_false(back->seats[1].connected);
    assert_true(back->has_verdict);
    assert_int_equal(back->ranking[0], 1);
    assert_memory_equal(&back->seed, &v->seed, sizeof v->seed);
    assert_string_equal(back->salt, v->salt);
    srv_view_unref(back);
    json_decref(j);
    srv_view_unref(v);
}

static void test_view_refused(void **state) {
    (void)state;
    srv_view *v = sample_view();
    json_t *j = wire_view(v, 1000);
    /* A tile past 2^31, a board of 9, a ranking that names no seat. */
    json_t *seat = json_array_get(json_object_get(j, "s"), 0);
    json_array_set_new(seat, 3, json_string("20000000000000000000000000000000"));
    assert_null(wire_view_parse(j, 1000));
    json_array_set_new(seat, 3, json_string("00000000000000000000000000000000"));
    json_array_set_new(seat, 2, json_integer(9));
    assert_null(wire_view_parse(j, 1000));
    json_array_set_new(seat, 2, json_integer(4));
    assert_non_null(v = (srv_view_unref(v), wire_view_parse(j, 1000)));
    srv_view_unref(v);
    json_array_set_new(json_object_get(j, "rk"), 0, json_integer(5));
    assert_null(wire_view_parse(j, 1000));
    json_decref(j);
    j = json_loads("{\"s\":[1,2,3,4,5,6,7,8,9]}", 0, NULL);
    assert_null(wire_view_parse(j, 0)); /* more seats than a room has */
    json_decref(j);
}

static void test_msg_round_trip(void **state) {
    (void)state;
    char *line = strdup("{\"type\":\"end\"}\n");
    srv_view *v = sample_view();
    srv_msg m = {.type = SRV_MSG_END,
                 .json = srv_buf_take(line, strlen(line)),
                 .subject = 1001,
                 .reason = PROTO_END_FORFEIT,
                 .view = v};
    json_t *j = wire_msg(&m, 1000);
    srv_msg back;
    char text[64];
    assert_int_equal(wire_msg_parse(j, 1000, &back, text, sizeof text), 0);
    assert_int_equal(back.type, SRV_MSG_END);
    assert_int_equal(back.json->len, m.json->len);
    assert_memory_equal(back.json->data, m.json->data, m.json->len);
    assert_int_equal(back.subject, 1001);
    assert_int_equal(back.reason, PROTO_END_FORFEIT);
    assert_non_null(back.view);
    assert_int_equal(back.view->nseats, 2);
    srv_buf_unref(back.json);
    srv_view_unref(back.view);
    json_decref(j);
    srv_buf_unref(m.json);
    srv_view_unref(v);

    /* Errors carry their code and text; a type past the last is refused. */
    srv_msg err = {.type = SRV_MSG_ERROR, .error = PROTO_ERR_UNAVAILABLE, .text = "away"};
    j = wire_msg(&err, 0);
    assert_int_equal(wire_msg_parse(j, 0, &back, text, sizeof text), 0);
    assert_int_equal(back.error, PROTO_ERR_UNAVAILABLE);
    assert_string_equal(back.text, "away");
    assert_null(back.json);
    json_object_set_new(j, "t", json_integer(SRV_MSG_VIEW + 1));
    assert_int_equal(wire_msg_parse(j, 0, &back, text, sizeof text), -1);
    json_decref(j);
    /* Every error code travels (an arena's, issue 28, to an entrant on
     * another node), and none past the last. */
    for (int code = PROTO_ERR_BAD_JSON; code <= PROTO_ERR_ARENA_OVER + 1; code++) {
        srv_msg e = {.type = SRV_MSG_ERROR, .error = (proto_err)code, .text = "x"};
        j = wire_msg(&e, 0);
        int rc = wire_msg_parse(j, 0, &back, text, sizeof text);
        assert_int_equal(rc, code <= PROTO_ERR_ARENA_OVER ? 0 : -1);
        if (rc == 0) assert_int_equal(back.error, code);
        json_decref(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_round_trip), cmocka_unit_test(test_request_refused),
        cmocka_unit_test(test_view_round_trip),    cmocka_unit_test(test_view_refused),
        cmocka_unit_test(test_msg_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
