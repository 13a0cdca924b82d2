/* test_text_checks.c - the text tests' own checks and screen parser, on fixed bytes: they
 * must catch what they claim to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tt.h"

#define CHECK_OK(expr)  assert_null(expr)
#define CHECK_BAD(expr) assert_non_null(expr)

static void test_crlf_check(void **state) {
    CHECK_OK(tt_crlf_problem("a\r\nb\r\n", 6));
    CHECK_OK(tt_crlf_problem("", 0));
    CHECK_BAD(tt_crlf_problem("a\r\nb\n", 5));
    CHECK_BAD(tt_crlf_problem("\n", 1));
    CHECK_BAD(tt_crlf_problem("\n\r\n", 3));
}

static void test_iac_check(void **state) {
    CHECK_OK(tt_iac_problem("plain text", 10));
    CHECK_OK(tt_iac_problem(TT_PROBE_DCS, TT_PROBE_DCS_LEN));
    CHECK_OK(tt_iac_problem("x\xff\xffy", 4));   /* a doubled data byte */
    CHECK_OK(tt_iac_problem("\xff\xfc\x06", 3)); /* WONT TIMING-MARK */
    CHECK_OK(tt_iac_problem("\xff\xf1", 2));     /* NOP */
    CHECK_OK(tt_iac_problem("\xff\xfa\x1f\x00\xff\xff\x00\x1e\xff\xf0", 10));
    CHECK_BAD(tt_iac_problem("x\xffy", 3)); /* an undoubled data byte */
    CHECK_BAD(tt_iac_problem("abc\xff", 4));
    CHECK_BAD(tt_iac_problem("\xff\xfb", 2));
    CHECK_BAD(tt_iac_problem("\xff\xfa\x1f\x00\x64", 5));
}

static void test_pane_check(void **state) {
    CHECK_OK(tt_pane_problem("race2048 - race your friends at 2048\n\n> solo\n"));
    CHECK_OK(tt_pane_problem("\xe2\x94\x82    2 \xe2\x94\x82\n")); /* box drawing */
    CHECK_OK(tt_pane_problem("Goodbye!\nPane is dead (status 0)\n"));
    CHECK_BAD(tt_pane_problem("score \xef\xbf\xbd\n"));
    CHECK_BAD(tt_pane_problem("\xc3\xbf\xc3\xbb\x01\n"));
    CHECK_BAD(tt_pane_problem("{\"type\":\"pong\",\"t\":1}\n"));
    CHECK_BAD(tt_pane_problem("[?1h\n"));
    CHECK_BAD(tt_pane_problem("title\nP\\\n"));
    CHECK_BAD(tt_pane_problem("Ptitle\n"));
    CHECK_BAD(tt_pane_problem("a\x1b[0mb\n"));
    CHECK_BAD(tt_pane_problem("raw \xff\xfb\x01\n"));
}

/* Two racers' boards as the server draws them, in colour. */
static const char stream[] = TT_PROBE_DCS TT_CLEAR
    "the lobby\r\n> " TT_CLEAR "\x1b[1mrace2048\x1b[0m  room QZAWR\r\n"
    "\r\n"
    "tom (you)                 nina\r\n"
    "\xe2\x94\x8c\xe2\x94\x80\xe2\x94\x90   "
    "\xe2\x94\x8c\xe2\x94\x80\xe2\x94\x90\r\n"
    "\xe2\x94\x82    \x1b[2m.\x1b[0m    \x1b[38;5;252m2\x1b[0m    .    2 "
    "\xe2\x94\x82   \xe2\x94\x82    2    2    2    4 \xe2\x94\x82\r\n"
    "\xe2\x94\x82    .    4    .    2 \xe2\x94\x82   \xe2\x94\x82    . "
    "   .    .    . \xe2\x94\x82\r\n"
    "\xe2\x94\x82    .    .    .  128k \xe2\x94\x82   \xe2\x94\x82    4 "
    "   .    .    . \xe2\x94\x82\r\n"
    "\xe2\x94\x82    .    .    .    2 \xe2\x94\x82   \xe2\x94\x82    . "
    "   .    .    . \xe2\x94\x82\r\n"
    "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x98   "
    "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x98\r\n"
    "score 4                   score 4\r\n"
    "1 move  playing          12 moves  playing\r\n"
    "\r\n"
    "Arrows / wasd / hjkl move.  : for a command.\xff\xfb\x01\r\n";

static void test_screen_text_is_the_last_screen_plain(void **state) {
    char screen[4096];
    tt_screen_text(stream, sizeof stream - 1, 0, screen, sizeof screen);
    assert_string_equal(strtok(screen, "\n"), "race2048  room QZAWR");
    tt_screen_text(stream, sizeof stream - 1, 0, screen, sizeof screen);
    assert_null(strchr(screen, '\x1b'));
    assert_null(strchr(screen, '\r'));
    assert_null(strchr(screen, '\xff'));
    assert_null(strstr(screen, "the lobby"));
    /* From an offset past the last clear-screen: what follows it, as is. */
    size_t tail = sizeof stream - 1 - 20;
    tt_screen_text(stream, sizeof stream - 1, tail, screen, sizeof screen);
    assert_string_equal(screen, " for a command.\n");
}

static void test_screen_boards_and_moves(void **state) {
    char screen[4096];
    tt_screen_text(stream, sizeof stream - 1, 0, screen, sizeof screen);
    eng_board b;
    assert_true(tt_screen_board(screen, 0, &b));
    assert_int_equal(b.size, 4);
    assert_int_equal(eng_cell_value(&b, 0, 1), 2);
    assert_int_equal(eng_cell_value(&b, 1, 1), 4);
    assert_int_equal(eng_cell_value(&b, 2, 3), 128 * 1024);
    assert_int_equal(eng_cell_value(&b, 0, 0), 0);
    assert_true(tt_screen_board(screen, 1, &b));
    assert_int_equal(eng_cell_value(&b, 0, 3), 4);
    assert_int_equal(eng_cell_value(&b, 2, 0), 4);
    assert_false(tt_screen_board(screen, 2, &b));
    assert_int_equal(tt_screen_moves(screen, 0), 1);
    assert_int_equal(tt_screen_moves(screen, 1), 12);
    assert_int_equal(tt_screen_moves(screen, 2), -1);
    assert_false(tt_screen_board("no board here\n", 0, &b));
    assert_int_equal(tt_screen_moves("Arrows / wasd / hjkl move.\n", 0), -1);
}

static void test_movable_dir(void **state) {
    eng_board b, c;
    eng_board_init(&b, 4);
    b.cell[3] = 1; /* 2s down the right column: right does nothing */
    b.cell[7] = 1;
    assert_int_equal(tt_movable_dir(&b), ENG_LEFT);
    static const eng_dir up_first[] = {ENG_RIGHT, ENG_UP, ENG_LEFT, ENG_DOWN};
    assert_int_equal(tt_movable_dir_in(&b, up_first), ENG_UP);
    c = b;
    assert_false(tt_board_differs(&b, &c));
    c.cell[0] = 2;
    assert_true(tt_board_differs(&b, &c));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crlf_check),
        cmocka_unit_test(test_iac_check),
        cmocka_unit_test(test_pane_check),
        cmocka_unit_test(test_screen_text_is_the_last_screen_plain),
        cmocka_unit_test(test_screen_boards_and_moves),
        cmocka_unit_test(test_movable_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
