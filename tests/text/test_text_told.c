/* test_text_told.c - what text players are told (issue 29): bots in the help and on a
 * small lobby, a race's time left, a stuck racer's keys, Ctrl-U, the `:` prompt's row,
 * create's size and target, a solo leave, and bots kept in `history`.
 *
 * Raw byte clients (netcat: plain lines; telnet: NAWS, character mode)
 * against race2048d, JSON clients as the other racers. Every wait is for an
 * expected screen or message, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "tt.h"

#define SCREEN 65536

typedef struct fixture {
    th_server *srv;
    tt_client tn, nc;
    char screen[SCREEN];
} fixture;

static tt_journal journal;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->tn.fd = f->nc.fd = -1;
    *state = f;
    if (tt_journal_make(&journal, "told") < 0) return -1;
    f->srv = SERVER("--journal", journal.path);
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tt_close(&f->tn);
    tt_close(&f->nc);
    free(f);
    int rc = harness_teardown(state);
    tt_journal_remove(&journal);
    return rc;
}

/* ------------------------------------------------------------- helpers --- */

static void telnet_answer(tt_client *c, int cols, int rows) {
    unsigned char a[] = {0xff, 0xfd, 0x01, 0xff, 0xfd, 0x03, 0xff, 0xfb, 0x1f,
                         0xff, 0xfa, 0x1f, 0,    0,    0,    0,    0xff, 0xf0};
    a[13] = (unsigned char)cols;
    a[15] = (unsigned char)rows;
    tt_send(c, a, sizeof a);
}

static void wait_screen(fixture *f, tt_client *c, size_t from, const char *needle) {
    if (!tt_wait_screen(c, from, tt_has, (void *)needle, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("no screen with \"%s\" came; the last one:\n%s", needle, f->screen);
}

static void greet_telnet(fixture *f, tt_client *c, int cols, int rows) {
    tt_connect(c, f->srv->port);
    if (tt_wait_for(c, 0, TT_PROBE_DCS, TT_PROBE_DCS_LEN, harness_ms(TT_WAIT)) != 0)
        fail_msg("no probe");
    telnet_answer(c, cols, rows);
    wait_screen(f, c, 0, "You are player-");
}

static void greet_netcat(fixture *f, tt_client *c) {
    tt_connect(c, f->srv->port);
    wait_screen(f, c, 0, "You are player-");
}

/* A command line: telnet's Enter in character mode is CR NUL. */
static void type_tn(tt_client *c, const char *line) {
    tt_sends(c, line);
    tt_send(c, "\r\0", 2);
}

static void type_nc(tt_client *c, const char *line) {
    tt_sends(c, line);
    tt_sends(c, "\n");
}

static const char *json_create(client *j, const char *fields) {
    client_send(j, "{\"type\":\"create\",%s}", fields);
    return jstr(client_expect(j, "room", harness_ms(TT_WAIT)), "room");
}

static void join(tt_client *c, bool telnet, const char *code) {
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    if (telnet)
        type_tn(c, line);
    else
        type_nc(c, line);
}

/* How many screens of bytes[from..len) hold needle. */
static int screens_with(const tt_client *c, size_t from, const char *needle) {
    static char plain[SCREEN];
    int n = 0;
    for (long at = tt_find(c->buf, c->len, from, TT_CLEAR, 7); at >= 0;) {
        long next = tt_find(c->buf, c->len, (size_t)at + 7, TT_CLEAR, 7);
        tt_screen_text(c->buf, next >= 0 ? (size_t)next : c->len, (size_t)at, plain,
                       sizeof plain);
        n += strstr(plain, needle) != NULL;
        at = next;
    }
    return n;
}

/* ---------------------------------------------- 1: bots in the help --- */

static void test_help_and_a_small_lobby_name_the_bots(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "help");
    wait_screen(f, &f->nc, mark, "bot [LEVEL]");
    assert_non_null(strstr(f->screen, "create [N S T]"));
    /* 60x20: the lobby has no room for the list, but says bot. */
    greet_telnet(f, &f->tn, 60, 20);
    assert_null(strstr(f->screen, "rematch")); /* the list did not fit */
    if (!strstr(f->screen, "bot to race a bot"))
        fail_msg("a 60x20 lobby does not mention the bots:\n%s", f->screen);
}

/* ----------------------------------------------- 2: the time left --- */

/* jo (JSON) makes a 3-player race with a 12 s limit; nina on telnet and tom
 * on netcat see the time left: telnet each second, netcat on its redraws
 * (the race screen) and at 10 s left, without a redraw each second. */
static void test_time_left_on_telnet_and_netcat(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":3,\"time_limit\":12");
    greet_telnet(f, &f->tn, 80, 24);
    greet_netcat(f, &f->nc);
    size_t tmark = f->tn.len, nmark = f->nc.len;
    join(&f->tn, true, code);
    join(&f->nc, false, code);
    client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    wait_screen(f, &f->nc, nmark, " left");
    if (!strstr(f->screen, "0:12 left") && !strstr(f->screen, "0:11 left"))
        fail_msg("netcat's race screen has no time left:\n%s", f->screen);
    /* telnet counts down by itself; netcat is redrawn at 10 s left. */
    wait_screen(f, &f->tn, tmark, "0:10 left");
    wait_screen(f, &f->nc, nmark, "0:10 left");
    int tn_screens = screens_with(&f->tn, tmark, " left");
    int nc_screens = screens_with(&f->nc, nmark, " left");
    if (tn_screens < 2 || nc_screens > 3)
        fail_msg("race screens up to 0:10: telnet %d (want 2 or more), netcat %d (want "
                 "3 at most)",
                 tn_screens, nc_screens);
}

/* ---------------------------- 3 and 11: a stuck board, the : prompt --- */

static void test_stuck_racer_types_commands_on_telnet(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":2,\"size\":3");
    greet_telnet(f, &f->tn, 80, 24);
    size_t mark = f->tn.len;
    join(&f->tn, true, code);
    wait_screen(f, &f->tn, mark, "Arrows / wasd / hjkl move at once");
    /* Every direction in turn, one key a move, until the board is stuck;
     * the keys after that are typed into the command line. */
    const char *stuck = "Your board is stuck";
    int64_t deadline = harness_now_ms() + harness_ms(4 * TT_WAIT);
    for (;;) {
        mark = f->tn.len;
        tt_sends(&f->tn, "wasdwasd");
        if (tt_wait_str(&f->tn, mark, stuck, harness_ms(300)) >= 0) break;
        if (harness_now_ms() > deadline) fail_msg("the 3x3 board never got stuck");
    }
    wait_screen(f, &f->tn, mark, stuck);
    static char stuck_screen[SCREEN];
    memcpy(stuck_screen, f->screen, sizeof stuck_screen);
    /* 3: keys pressed while stuck do not spoil the command typed next. */
    mark = f->tn.len;
    type_tn(&f->tn, "dsawdsawdrooms");
    wait_screen(f, &f->tn, mark, "Rooms:");
    /* Ctrl-U clears what was typed. */
    mark = f->tn.len;
    tt_sends(&f->tn, "zz\x15");
    type_tn(&f->tn, "rooms");
    wait_screen(f, &f->tn, mark, "Rooms:");
    assert_null(strstr(f->screen, "unknown command"));
    /* What is on the line when the race ends is not kept on the end screen. */
    tt_sends(&f->tn, "na");
    if (tt_wait_str(&f->tn, mark, "na", harness_ms(TT_WAIT)) < 0) fail_msg("no echo");
    mark = f->tn.len;
    client_send(jo, "{\"type\":\"leave\"}");
    wait_screen(f, &f->tn, mark, "Race over");
    const char *tail = f->tn.buf + f->tn.len - 2;
    if (memcmp(tail, "> ", 2) != 0)
        fail_msg("the end screen's prompt is not empty: ...%.*s", 20,
                 f->tn.buf + f->tn.len - 20);
    /* 11: the stuck screen said it once, not in the hint and again in the
     * status. */
    const char *first = strstr(stuck_screen, stuck);
    if (strstr(first + 1, stuck)) fail_msg("said twice:\n%s", stuck_screen);
}

/* 11: the ':' prompt is on the terminal's last row, as documented. */
static void test_colon_prompt_on_the_last_row(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":2");
    greet_telnet(f, &f->tn, 80, 30);
    size_t mark = f->tn.len;
    join(&f->tn, true, code);
    wait_screen(f, &f->tn, mark, "Arrows / wasd / hjkl move at once");
    mark = f->tn.len;
    tt_sends(&f->tn, ":");
    if (tt_wait_str(&f->tn, mark, "\x1b[30;1H: ", harness_ms(TT_WAIT)) < 0)
        fail_msg("the : prompt is not on row 30");
}

/* ------------------------------------------- 11: create and solo leave --- */

static void test_create_takes_size_and_target(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "create 3 5 256");
    wait_screen(f, &f->nc, mark, "(5x5 to 256): 1 of 3 players");
}

static void test_solo_leave_says_game(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "solo");
    wait_screen(f, &f->nc, mark, "Type w a s d");
    mark = f->nc.len;
    type_nc(&f->nc, "leave");
    wait_screen(f, &f->nc, mark, "You left the game.");
}

/* ------------------------------------------- 11: history keeps bots --- */

static void test_history_keeps_bot_true(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    client_send(jo, "{\"type\":\"create\",\"players\":2,\"bots\":1,\"level\":1}");
    client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    client_move_any(jo);
    client_send(jo, "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(jo, "end", "state player", harness_ms(TT_WAIT));
    int bots_in_end = 0;
    for (size_t i = 0; i < json_array_size(jarr(end, "results")); i++)
        bots_in_end +=
            json_is_true(json_object_get(json_array_get(jarr(end, "results"), i), "bot"));
    assert_int_equal(bots_in_end, 1);
    client_expect_skip(jo, "left", "state player", harness_ms(TT_WAIT));
    client_send(jo, "{\"type\":\"history\"}");
    json_t *h =
        client_expect_skip(jo, "history", "state player room", harness_ms(TT_WAIT));
    json_t *game = json_array_get(jarr(h, "games"), 0);
    assert_non_null(game);
    json_t *results = json_object_get(game, "results");
    int bots = 0, persons = 0;
    for (size_t i = 0; i < json_array_size(results); i++) {
        json_t *p = json_array_get(results, i);
        if (json_is_true(json_object_get(p, "bot")))
            bots++;
        else if (!json_object_get(p, "bot"))
            persons++;
    }
    if (bots != 1 || persons != 1)
        fail_msg("history lists %d bots and %d persons (want 1 and 1)", bots, persons);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_help_and_a_small_lobby_name_the_bots, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_time_left_on_telnet_and_netcat, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stuck_racer_types_commands_on_telnet, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_colon_prompt_on_the_last_row, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_takes_size_and_target, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_solo_leave_says_game, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_keeps_bot_true, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
