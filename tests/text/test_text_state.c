/* test_text_state.c - text mode's session state, in-process: the screen it is on
 * (text_screen) and the end screen's reference to the view its `end` carried. */
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
#include "text_internal.h"
#include "tt.h"

/* One server, as main.c sets it up, without a listener (fake_conn.h). */
static srv S;
static uv_loop_t loop;
static char screen[1 << 15];

static int setup(void **state) {
    (void)state;
    fake_server_init(&S, &loop, 4096, SRV_LOG_WARN);
    srv_list_init(&S.held_list);
    conn_timers_init(&S);
    return 0;
}

/* Closes every connection the way shutdown does (ASan finds no leak: a view
 * reference kept too long would be one). */
static int teardown(void **state) {
    (void)state;
    fake_server_free(&S, &loop);
    return 0;
}

/* Runs the loop until the screen h shows after `from` holds needle. */
static void wait_screen(fake_conn *h, size_t from, const char *needle) {
    int64_t deadline = harness_now_ms() + harness_ms(5000);
    for (;;) {
        fake_conn_pull(h);
        tt_screen_text(h->buf, h->len, from, screen, sizeof screen);
        if (strstr(screen, needle)) return;
        if (harness_now_ms() > deadline)
            fail_msg("no \"%s\" on the screen:\n%s", needle, screen);
        struct pollfd pfd = {.fd = h->peer, .events = POLLIN};
        poll(&pfd, 1, 5);
        uv_run(&loop, UV_RUN_NOWAIT);
    }
}

/* A greeted netcat user. */
static fake_conn *human_new(void) {
    fake_conn *h = fake_conn_new(&S, CONN_TEXT);
    text_begin(h->c, false);
    wait_screen(h, 0, "race your friends at 2048");
    assert_non_null(h->c->player);
    return h;
}

/* Types a line (netcat): the session is awake after it. */
static void type(fake_conn *h, const char *line) {
    char buf[128];
    int n = snprintf(buf, sizeof buf, "%s\r\n", line);
    text_input(h->c, buf, (size_t)n);
    assert_non_null(h->c->text);
}

/* An ended race between `me` and jo (id 99), jo first, with its verdict. */
static srv_view *ended_view(uint64_t me) {
    srv_view *v = srv_view_new(2);
    assert_non_null(v);
    snprintf(v->code, sizeof v->code, "ABCDE");
    v->state = SRV_VIEW_ENDED;
    v->settings = (proto_settings){.players = 2, .size = 4, .target = 2048};
    const char *names[2] = {"tom", "jo"};
    uint64_t ids[2] = {me, 99};
    for (int i = 0; i < 2; i++) {
        srv_view_seat *seat = &v->seats[i];
        seat->id = ids[i];
        snprintf(seat->name, sizeof seat->name, "%s", names[i]);
        eng_board_init(&seat->board, 4);
        seat->score = i ? 136 : 68;
        seat->status = PROTO_OVER;
        seat->seated = seat->connected = true;
    }
    v->has_verdict = true;
    v->ranking[0] = 1;
    v->ranking[1] = 0;
    v->seed = eng_seed_client(7);
    snprintf(v->salt, sizeof v->salt, "00112233445566778899aabbccddeeff");
    return v;
}

static void deliver(fake_conn *h, srv_msg_type type, srv_view *v) {
    srv_msg m = {.type = type, .view = v, .reason = PROTO_END_ALL_OVER, .subject = 99};
    text_deliver(h->c, &m);
}

/* ---------------------------------------------------------------- tests --- */

/* The end screen draws from the view its `end` carried, held by reference
 * (no copy) while it shows: past the room's own reference (a leave that
 * ended the race), and let go as soon as another screen takes its place. */
static void test_end_screen_holds_its_view(void **state) {
    (void)state;
    fake_conn *h = human_new();
    srv_view *v = ended_view(h->c->player->id);
    size_t mark = h->len;
    deliver(h, SRV_MSG_END, v);
    assert_int_equal(h->c->text->screen, TEXT_END);
    assert_ptr_equal(h->c->text->end, v);
    assert_int_equal(v->refs, 3); /* this test's, the room shown, the end screen */
    wait_screen(h, mark, "1. jo");
    assert_non_null(strstr(screen, "2. tom"));
    assert_non_null(strstr(screen, "00112233445566778899aabbccddeeff"));

    /* The leave that ended it: the room is forgotten, the end screen stays. */
    mark = h->len;
    deliver(h, SRV_MSG_LEFT, NULL);
    assert_int_equal(h->c->text->screen, TEXT_END);
    assert_int_equal(v->refs, 2);
    wait_screen(h, mark, "You left the race.");
    assert_non_null(strstr(screen, "1. jo"));

    /* `quick` from the end screen: the queue's screen, the view let go. */
    deliver(h, SRV_MSG_QUEUED, NULL);
    assert_int_equal(h->c->text->screen, TEXT_LOBBY);
    assert_null(h->c->text->end);
    assert_int_equal(v->refs, 1);
    srv_view_unref(v);
}

/* help is a screen of the lobby, left for the lobby by the next command;
 * an end screen replaces it. */
static void test_help_is_a_screen(void **state) {
    (void)state;
    fake_conn *h = human_new();
    size_t mark = h->len;
    type(h, "help");
    assert_int_equal(h->c->text->screen, TEXT_HELP);
    wait_screen(h, mark, "login NAME KEY");
    type(h, "color off");
    assert_int_equal(h->c->text->screen, TEXT_LOBBY);
    type(h, "help");
    srv_view *v = ended_view(h->c->player->id);
    deliver(h, SRV_MSG_END, v);
    assert_int_equal(h->c->text->screen, TEXT_END);
    srv_view_unref(v);
}

/* quit is final: what leaving sends (an `end` of the race it forfeits)
 * shows nothing, and no end screen keeps its view. */
static void test_quit_is_final(void **state) {
    (void)state;
    fake_conn *h = human_new();
    size_t mark = h->len;
    type(h, "quit");
    assert_int_equal(h->c->text->screen, TEXT_CLOSING);
    srv_view *v = ended_view(h->c->player->id);
    deliver(h, SRV_MSG_END, v);
    assert_int_equal(h->c->text->screen, TEXT_CLOSING);
    assert_null(h->c->text->end);
    assert_int_equal(v->refs, 2); /* this test's and the room shown */
    srv_view_unref(v);
    wait_screen(h, mark, "Goodbye!");
    fake_conn_pull(h);
    assert_null(strstr(h->buf + mark, "1. jo"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_end_screen_holds_its_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_is_a_screen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quit_is_final, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
