/* test_text_unit.c - text mode draws from the messages it gets: views built by hand
 * (no room exists), delivered to in-process text connections, and the screens read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <cmocka.h>

#include "conn.h"
#include "fake_conn.h"
#include "harness.h"
#include "resume.h"
#include "session.h"
#include "room.h"
#include "text.h"
#include "tt.h"

/* One server, as main.c sets it up, without a listener (fake_conn.h). */
static srv S;
static uv_loop_t loop;

/* A text connection whose socket is one end of a socketpair; the test reads
 * the other end. */
typedef fake_conn human;

static char screen[1 << 15];

static int setup(void **state) {
    (void)state;
    fake_server_init(&S, &loop, 4096, SRV_LOG_WARN);
    srv_list_init(&S.held_list);
    conn_timers_init(&S);
    return 0;
}

/* Closes every connection and room the way shutdown does; the loop must end
 * with nothing left (and ASan finds no leak). */
static int teardown(void **state) {
    (void)state;
    fake_server_free(&S, &loop);
    return 0;
}

/* Reads what the server wrote to h so far (output goes out at the end of a
 * loop turn: the test ends the turn; a socketpair takes it at once). */
static void pull(human *h) {
    fake_conn_pull(h);
}

/* Runs the loop (redraws are paced, the greeting waits for telnet's answer)
 * until the screen h shows after `from` holds needle; fails after a while. */
static void wait_screen(human *h, size_t from, const char *needle) {
    int64_t deadline = harness_now_ms() + harness_ms(5000);
    for (;;) {
        pull(h);
        tt_screen_text(h->buf, h->len, from, screen, sizeof screen);
        if (strstr(screen, needle)) return;
        if (harness_now_ms() > deadline)
            fail_msg("no \"%s\" on the screen:\n%s", needle, screen);
        /* Timers due run; else wait a little for output or the next one. */
        struct pollfd pfd = {.fd = h->peer, .events = POLLIN};
        poll(&pfd, 1, 5);
        uv_run(&loop, UV_RUN_NOWAIT);
    }
}

/* A netcat user who has been greeted (and so has a player). */
static human *human_new(void) {
    human *h = fake_conn_new(&S, CONN_TEXT);
    text_begin(h->c, false);
    wait_screen(h, 0, "race your friends at 2048");
    assert_non_null(h->c->player);
    return h;
}

/* A 4x4 board with the given face values, row-major (0 = empty). */
static void board_of(eng_board *b, const unsigned *values) {
    eng_board_init(b, 4);
    for (int i = 0; i < 16; i++)
        b->cell[i] = (uint8_t)(values[i] ? eng_value_exp(values[i]) : 0);
}

/* A race between `me` (if not 0) and jo (id 99) in room ABCDE, as room.c
 * would show it: both seated and connected. */
static srv_view *race_view(uint64_t me, srv_view_state state) {
    srv_view *v = srv_view_new(2);
    assert_non_null(v);
    snprintf(v->code, sizeof v->code, "ABCDE");
    v->state = state;
    v->settings = (proto_settings){.players = 2, .size = 4, .target = 2048};
    snprintf(v->commit, sizeof v->commit, "%s",
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    static const unsigned mine[16] = {2, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    static const unsigned jos[16] = {0, 0, 0, 128, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const char *names[2] = {"tom", "jo"};
    uint64_t ids[2] = {me ? me : 98, 99};
    for (int i = 0; i < 2; i++) {
        srv_view_seat *seat = &v->seats[i];
        seat->id = ids[i];
        snprintf(seat->name, sizeof seat->name, "%s", names[i]);
        board_of(&seat->board, i ? jos : mine);
        seat->score = i ? 136 : 68;
        seat->moves = i ? 12 : 7;
        seat->status = PROTO_PLAYING;
        seat->seated = seat->connected = true;
    }
    return v;
}

static void deliver(human *h, srv_msg_type type, srv_view *v) {
    srv_msg m = {.type = type, .view = v};
    text_deliver(h->c, &m);
}

/* ---------------------------------------------------------------- tests --- */

/* A racer's screens come from the views alone: the boards, its code and the
 * commit; a drop shows a countdown; the end; who is left to rematch. */
static void test_race_drawn_from_views(void **state) {
    (void)state;
    human *h = human_new();
    uint64_t me = h->c->player->id;
    srv_view *v = race_view(me, SRV_VIEW_RUNNING);
    size_t mark = h->len;
    srv_msg start = {.type = SRV_MSG_START, .view = v};
    snprintf(start.resume_code, sizeof start.resume_code, "K7M2P9XQ");
    text_deliver(h->c, &start);
    srv_view_unref(v); /* the session keeps its own reference */
    wait_screen(h, mark, "Type w a s d");
    assert_non_null(strstr(screen, "tom (you)"));
    assert_non_null(strstr(screen, "jo"));
    assert_non_null(strstr(screen, "ABCDE"));
    assert_non_null(strstr(screen, "128"));
    assert_non_null(strstr(screen, "resume K7M2P9XQ"));
    assert_non_null(strstr(screen, "commit 0123456789abcdef"));

    /* jo drops: the `player` message's view has the grace deadline. */
    v = race_view(me, SRV_VIEW_RUNNING);
    v->seats[1].connected = false;
    v->seats[1].grace_until = uv_now(&loop) + 20000;
    mark = h->len;
    srv_msg player = {.type = SRV_MSG_PLAYER, .view = v, .subject = 99};
    text_deliver(h->c, &player);
    srv_view_unref(v);
    wait_screen(h, mark, "connection lost, 20 s");
    assert_non_null(strstr(screen, "jo lost the connection."));

    /* The end: the verdict and the rematch hint are the view's. */
    v = race_view(me, SRV_VIEW_ENDED);
    v->has_verdict = true;
    v->ranking[0] = 1; /* jo first */
    v->ranking[1] = 0;
    v->seed = eng_seed_client(7);
    snprintf(v->salt, sizeof v->salt, "00112233445566778899aabbccddeeff");
    srv_msg end = {
        .type = SRV_MSG_END, .view = v, .reason = PROTO_END_ALL_OVER, .subject = 99};
    mark = h->len;
    text_deliver(h->c, &end);
    srv_view_unref(v);
    wait_screen(h, mark, "Type rematch to race the same players again, or leave.");
    assert_non_null(strstr(screen, "00112233445566778899aabbccddeeff"));
    /* The ranking as the view gives it: jo (136) above tom. */
    const char *jo = strstr(screen, "1. jo"), *tom = strstr(screen, "2. tom");
    if (!jo || !tom) fail_msg("no ranking jo, tom on the end screen:\n%s", screen);

    /* jo leaves the ended race: only the view says so (no JSON message). */
    v = race_view(me, SRV_VIEW_ENDED);
    v->seats[1].seated = false;
    mark = h->len;
    deliver(h, SRV_MSG_VIEW, v);
    srv_view_unref(v);
    wait_screen(h, mark, "Everyone else has gone.");
}

/* The lobby shows a waiting room from the `room` message's view, and
 * forgets it with `left`. */
static void test_waiting_room_from_its_view(void **state) {
    (void)state;
    human *h = human_new();
    srv_view *v = race_view(h->c->player->id, SRV_VIEW_WAITING);
    size_t mark = h->len;
    deliver(h, SRV_MSG_ROOM, v);
    srv_view_unref(v);
    wait_screen(h, mark, "Room ABCDE (4x4 to 2048): 2 of 2 players are here: tom, jo.");
    assert_non_null(strstr(screen, "join ABCDE"));
    mark = h->len;
    deliver(h, SRV_MSG_LEFT, NULL);
    wait_screen(h, mark, "You left.");
    assert_null(strstr(screen, "Room ABCDE"));
}

/* `rooms` is drawn from the rows the message carries: this server has no
 * rooms at all. */
static void test_rooms_from_the_message(void **state) {
    (void)state;
    human *h = human_new();
    srv_rooms *rows = srv_rooms_new(2);
    assert_non_null(rows);
    rows->rows[0] =
        (srv_room_row){.code = "WAIT1", .players = 1, .settings = {.players = 2}};
    rows->rows[1] = (srv_room_row){
        .code = "RACE2", .players = 3, .settings = {.players = 3}, .started = true};
    srv_msg m = {.type = SRV_MSG_ROOMS, .rooms = rows};
    size_t mark = h->len;
    text_deliver(h->c, &m);
    srv_rooms_unref(rows);
    wait_screen(h, mark, "Rooms: WAIT1 (1/2, join) RACE2 (3/3, racing: watch)");
}

/* Spectators with the same screen shape share one rendering of a view; a
 * new view is rendered again. */
static void test_spectators_share_a_rendering(void **state) {
    (void)state;
    human *a = human_new(), *b = human_new();
    srv_view *v = race_view(0, SRV_VIEW_RUNNING);
    size_t ma = a->len, mb = b->len;
    uint64_t rendered = S.metrics.text_screens_rendered;
    uint64_t shared = S.metrics.text_screens_shared;
    deliver(a, SRV_MSG_START, v);
    deliver(b, SRV_MSG_START, v);
    wait_screen(a, ma, "Watching.");
    wait_screen(b, mb, "Watching.");
    assert_int_equal(S.metrics.text_screens_rendered - rendered, 1);
    assert_int_equal(S.metrics.text_screens_shared - shared, 1);
    assert_int_equal(a->len - ma, b->len - mb);
    assert_memory_equal(a->buf + ma, b->buf + mb, a->len - ma);
    srv_view_unref(v);
    v = race_view(0, SRV_VIEW_RUNNING);
    v->seats[1].score = 140;
    ma = a->len;
    deliver(a, SRV_MSG_STATE, v);
    srv_view_unref(v);
    wait_screen(a, ma, "140");
    assert_int_equal(S.metrics.text_screens_rendered - rendered, 2);
}

/* The game gives seat codes, and only to players whose connection wants one
 * (text mode says so): a JSON player's seat has none to guess. */
static void test_codes_only_for_who_wants_them(void **state) {
    (void)state;
    human *h = human_new();
    srv_player *p = h->c->player;
    assert_true(p->wants_resume_code);
    proto_request create = {.type = PROTO_REQ_CREATE,
                            .settings = {.players = 2, .size = 4, .target = 2048}};
    session_request(h->c, &create);
    assert_non_null(p->room);
    /* A second player without a connection of its own that shows codes. */
    human *j = human_new();
    j->c->player->wants_resume_code = false;
    proto_request join = {.type = PROTO_REQ_JOIN};
    snprintf(join.room, sizeof join.room, "%s", p->room->code);
    size_t mark = h->len;
    session_request(j->c, &join);
    assert_int_equal(p->room->state, ROOM_RUNNING);
    assert_int_equal(strlen(resume_code_of(p)), PROTO_RESUME_CODE_LEN);
    assert_string_equal(resume_code_of(j->c->player), "");
    assert_int_equal(HASH_CNT(hh, S.game.by_resume), 1);
    char line[32];
    snprintf(line, sizeof line, "resume %s", resume_code_of(p));
    wait_screen(h, mark, line);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_race_drawn_from_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_room_from_its_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rooms_from_the_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spectators_share_a_rendering, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_codes_only_for_who_wants_them, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
