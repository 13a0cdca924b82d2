/* test_render.c - boards and end screens as text: golden output, layout limits, colour
 * and CRLF. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "render.h"

static void set_board(eng_board *b, int size, const uint64_t *values) {
    assert_int_equal(eng_board_init(b, size), 0);
    for (int i = 0; i < size * size; i++)
        b->cell[i] = values[i] ? (uint8_t)eng_value_exp(values[i]) : 0;
}

static eng_board board_a, board_b, board_c;
static proto_player race[3];

/* A 4x4 race: alice (id 1) and bob (id 2), and carol (id 3) for three. */
static int setup_race(void **state) {
    static const uint64_t a[16] = {2, 0, 0, 4, 0, 16, 8, 0, 128, 2048, 2, 0, 0, 0, 0, 2};
    static const uint64_t b[16] = {0, 0, 2, 0, 4, 4, 0, 0, 0, 32, 64, 0, 256, 0, 0, 1024};
    static const uint64_t c[16] = {2};
    set_board(&board_a, 4, a);
    set_board(&board_b, 4, b);
    set_board(&board_c, 4, c);
    race[0] = (proto_player){1, "alice", &board_a, 2560, 120, PROTO_PLAYING};
    race[1] = (proto_player){2, "bob", &board_b, 1424, 98, PROTO_OVER};
    race[2] = (proto_player){3, "carol", &board_c, 0, 1, PROTO_LEFT};
    return 0;
}

/* Renders into a fresh buffer; the caller frees the result. */
static char *render(const proto_view *v) {
    proto_buf b;
    proto_buf_init(&b);
    assert_int_equal(proto_render_game(&b, v), 0);
    size_t len;
    char *s = proto_buf_take(&b, &len);
    assert_non_null(s);
    assert_int_equal(strlen(s), len);
    return s;
}

/* Checks that every line ends in CRLF (no bare '\n' or '\r'), and returns
 * the number of lines and the widest line's display width (UTF-8 code
 * points, SGR and other CSI sequences excluded). */
static void measure(const char *s, int *lines, int *widest) {
    *lines = 0;
    *widest = 0;
    int w = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\x1b' && p[1] == '[') {
            p += 2;
            while (*p && !(*p >= 0x40 && *p <= 0x7e))
                p++;
            continue;
        }
        if (*p == '\r') {
            assert_int_equal(p[1], '\n');
            p++;
            (*lines)++;
            if (w > *widest) *widest = w;
            w = 0;
            continue;
        }
        assert_int_not_equal(*p, '\n');
        if (((unsigned char)*p & 0xc0) != 0x80) w++;
    }
    assert_int_equal(w, 0); /* the last line is terminated too */
}

static void test_golden_race_side_by_side(void **state) {
    proto_view v = {race,
                    2,
                    2,
                    "K7Q2",
                    2048,
                    80,
                    PROTO_COLOR_OFF,
                    "bob moved left",
                    "keys: wasd, hjkl or arrows - : for a command"};
    char *s = render(&v);
    const char *want = "\x1b[H\x1b[2J"
                       "race2048  room K7Q2  target 2048\r\n"
                       "\r\n"
                       "bob (you)                 alice\r\n"
                       "┌─────────────────────┐   ┌─────────────────────┐\r\n"
                       "│    .    .    2    . │   │    2    .    .    4 │\r\n"
                       "│    4    4    .    . │   │    .   16    8    . │\r\n"
                       "│    .   32   64    . │   │  128 2048    2    . │\r\n"
                       "│  256    .    . 1024 │   │    .    .    .    2 │\r\n"
                       "└─────────────────────┘   └─────────────────────┘\r\n"
                       "score 1424                score 2560\r\n"
                       "98 moves  over            120 moves  playing\r\n"
                       "\r\n"
                       "bob moved left\r\n"
                       "keys: wasd, hjkl or arrows - : for a command\r\n";
    assert_string_equal(s, want);
    int lines, widest;
    measure(s, &lines, &widest);
    assert_true(lines <= 24);
    assert_true(widest <= 80);
    free(s);
}

static void test_golden_solo(void **state) {
    eng_board b;
    static const uint64_t cells[9] = {0, 2, 0, 0, 0, 0, 4, 0, 0};
    set_board(&b, 3, cells);
    proto_player p = {7, "zed", &b, 0, 0, PROTO_PLAYING};
    proto_view v = {&p, 1, 7, NULL, 0, 0, PROTO_COLOR_OFF, NULL, NULL};
    char *s = render(&v);
    const char *want = "\x1b[H\x1b[2J"
                       "race2048  solo\r\n"
                       "\r\n"
                       "zed (you)\r\n"
                       "┌────────────────┐\r\n"
                       "│    .    2    . │\r\n"
                       "│    .    .    . │\r\n"
                       "│    4    .    . │\r\n"
                       "└────────────────┘\r\n"
                       "score 0\r\n"
                       "0 moves  playing\r\n";
    assert_string_equal(s, want);
    free(s);
}

static void test_narrow_terminal_stacks(void **state) {
    proto_view v = {race, 2, 1, "K7Q2", 2048, 40, PROTO_COLOR_OFF, NULL, NULL};
    char *s = render(&v);
    const char *want = "\x1b[H\x1b[2J"
                       "race2048  room K7Q2  target 2048\r\n"
                       "\r\n"
                       "alice (you)\r\n"
                       "┌─────────────────────┐\r\n"
                       "│    2    .    .    4 │\r\n"
                       "│    .   16    8    . │\r\n"
                       "│  128 2048    2    . │\r\n"
                       "│    .    .    .    2 │\r\n"
                       "└─────────────────────┘\r\n"
                       "score 2560\r\n"
                       "120 moves  playing\r\n"
                       "\r\n"
                       "bob\r\n"
                       "┌─────────────────────┐\r\n"
                       "│    .    .    2    . │\r\n"
                       "│    4    4    .    . │\r\n"
                       "│    .   32   64    . │\r\n"
                       "│  256    .    . 1024 │\r\n"
                       "└─────────────────────┘\r\n"
                       "score 1424\r\n"
                       "98 moves  over\r\n";
    assert_string_equal(s, want);
    free(s);
}

static void test_unknown_width_is_80(void **state) {
    proto_view v = {race, 3, 1, "K7Q2", 2048, 0, PROTO_COLOR_OFF, NULL, NULL};
    char *s = render(&v);
    /* Three 23-column boards and two gaps make 75 columns: one row. */
    assert_non_null(
        strstr(s, "alice (you)               bob                       carol\r\n"));
    int lines, widest;
    measure(s, &lines, &widest);
    assert_int_equal(widest, 75);
    free(s);
    /* At 74 columns the third goes to a second row. */
    v.width = 74;
    s = render(&v);
    assert_non_null(strstr(s, "alice (you)               bob\r\n"));
    assert_non_null(strstr(s, "\r\n\r\ncarol\r\n"));
    free(s);
}

static void test_spectator(void **state) {
    proto_view v = {race, 3, 0, "K7Q2", 2048, 200, PROTO_COLOR_OFF, NULL, NULL};
    char *s = render(&v);
    assert_non_null(strstr(s, "race2048  room K7Q2  target 2048  watching\r\n"));
    assert_null(strstr(s, "(you)"));
    /* Room order when nobody is "you". */
    assert_non_null(
        strstr(s, "alice                     bob                       carol\r\n"));
    assert_non_null(strstr(s, "1 move  left\r\n"));
    free(s);
}

static void test_big_boards_fit_stacked(void **state) {
    /* 8x8 boards with the largest tiles still fit 80 columns, stacked. */
    eng_board b1, b2;
    uint64_t cells[64] = {0};
    cells[0] = (uint64_t)1 << 20;
    cells[9] = 65536;
    cells[18] = 131072;
    cells[63] = (uint64_t)1 << 63;
    set_board(&b1, 8, cells);
    set_board(&b2, 8, cells);
    proto_player p[2] = {{1, "abcdefghijklmnop", &b1, 99999999, 123456, PROTO_WON},
                         {2, "q", &b2, 5, 5, PROTO_PLAYING}};
    proto_view v = {p, 2, 1, "ABCDEFGH", 1u << 20, 80, PROTO_COLOR_256, NULL, NULL};
    char *s = render(&v);
    int lines, widest;
    measure(s, &lines, &widest);
    assert_int_equal(widest, 51);
    assert_non_null(strstr(s, "1M"));
    assert_non_null(strstr(s, "128k"));
    assert_non_null(strstr(s, "65536"));
    assert_non_null(strstr(s, "8E"));
    assert_non_null(strstr(s, "abcdefghijklmnop (you)"));
    free(s);
}

static void test_colour_on(void **state) {
    proto_view v = {race,  2, 2, "K7Q2", 2048, 80, PROTO_COLOR_256, "status\nline two",
                    "hint"};
    char *s = render(&v);
    assert_non_null(strstr(s, "\x1b[38;5;")); /* 256-colour tiles */
    assert_non_null(strstr(s, "\x1b[1;38;5;214m2048\x1b[0m"));
    assert_non_null(strstr(s, "\x1b[2m.\x1b[0m")); /* dim empty cells */
    assert_non_null(strstr(s, "status\r\nline two\r\nhint\r\n"));
    int lines, widest;
    measure(s, &lines, &widest); /* CRLF only, and the same layout as plain */
    assert_int_equal(widest, 49);
    free(s);

    v.color = PROTO_COLOR_16;
    s = render(&v);
    assert_null(strstr(s, "38;5;"));
    assert_non_null(strstr(s, "\x1b[1;32m2048\x1b[0m"));
    assert_non_null(strstr(s, "\x1b[97m4\x1b[0m"));
    measure(s, &lines, &widest);
    assert_int_equal(widest, 49);
    free(s);
}

static void test_colour_off_is_plain(void **state) {
    proto_view v = {race, 3, 2, "K7Q2", 2048, 80, PROTO_COLOR_OFF, "s", "h"};
    char *s = render(&v);
    /* The clear-screen is the only escape sequence. */
    assert_memory_equal(s, "\x1b[H\x1b[2J", 7);
    assert_null(strchr(s + 7, '\x1b'));
    free(s);
}

static void test_name_sanitised(void **state) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, 4), 0);
    proto_player p = {1, "ev\x1b[2Jil", &b, 0, 0, PROTO_PLAYING};
    proto_view v = {&p, 1, 0, NULL, 0, 80, PROTO_COLOR_OFF, NULL, NULL};
    char *s = render(&v);
    assert_non_null(strstr(s, "ev?[2Jil\r\n"));
    free(s);
}

static char *render_end(const proto_end_view *e) {
    proto_buf b;
    proto_buf_init(&b);
    assert_int_equal(proto_render_end(&b, e), 0);
    size_t len;
    char *s = proto_buf_take(&b, &len);
    assert_non_null(s);
    int lines, widest;
    measure(s, &lines, &widest);
    assert_true(widest <= 80);
    return s;
}

static void test_golden_end_winner(void **state) {
    proto_end_view e = {"K7Q2",
                        PROTO_END_TARGET,
                        1,
                        2,
                        race,
                        3,
                        {ENG_SEED_CLIENT, 12345, {0}},
                        "00000000000000000000000000000000",
                        PROTO_COLOR_OFF};
    char *s = render_end(&e);
    const char *want =
        "Race over in room K7Q2: alice wins - reached the target\r\n"
        " 1. alice                   score     2560  max  2048    120 moves  playing\r\n"
        " 2. bob (you)               score     1424  max  1024     98 moves  over\r\n"
        " 3. carol                   score        0  max     2      1 move   left\r\n"
        "seed 12345  salt 00000000000000000000000000000000\r\n";
    assert_string_equal(s, want);
    free(s);
}

/* A server seed is 64 hex digits: seed and salt each get a line, so the
 * screen stays within 80 columns (render_end checks the width). */
static void test_end_server_seed(void **state) {
    uint8_t key[ENG_SEED_KEY_BYTES];
    for (int i = 0; i < ENG_SEED_KEY_BYTES; i++)
        key[i] = (uint8_t)(0xF0 + i % 16);
    proto_end_view e = {"K7Q2",
                        PROTO_END_TARGET,
                        1,
                        2,
                        race,
                        3,
                        eng_seed_server(key),
                        "0123456789abcdef0123456789abcdef",
                        PROTO_COLOR_OFF};
    char *s = render_end(&e);
    assert_non_null(
        strstr(s, "\r\nseed "
                  "f0f1f2f3f4f5f6f7f8f9fafbfcfdfefff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
                  "\r\nsalt 0123456789abcdef0123456789abcdef\r\n"));
    free(s);
    e.salt = NULL;
    s = render_end(&e);
    assert_non_null(strstr(s, "\r\nseed f0f1f2f3"));
    assert_null(strstr(s, "salt"));
    free(s);
}

static void test_end_draw_and_no_winner(void **state) {
    proto_end_view e = {
        "K7Q2", PROTO_END_ALL_OVER, 0, 0, race, 2, {ENG_SEED_CLIENT, 7, {0}},
        NULL,   PROTO_COLOR_OFF};
    char *s = render_end(&e);
    assert_memory_equal(s, "Race over in room K7Q2: a draw - no moves left\r\n", 48);
    assert_non_null(strstr(s, "\r\nseed 7\r\n"));
    free(s);

    proto_player gone[2] = {race[2], race[2]};
    gone[1].id = 4;
    e = (proto_end_view){
        "K7Q2", PROTO_END_FORFEIT, 0, 3, gone, 2, {ENG_SEED_CLIENT, 7, {0}},
        NULL,   PROTO_COLOR_OFF};
    s = render_end(&e);
    assert_memory_equal(s, "Race over in room K7Q2: no winner - everyone left\r\n", 51);
    free(s);

    e = (proto_end_view){"K7Q2", PROTO_END_TIME, 2, 2, race, 2, {ENG_SEED_CLIENT, 7, {0}},
                         NULL,   PROTO_COLOR_256};
    s = render_end(&e);
    assert_non_null(strstr(s, "\x1b[1;32mbob\x1b[0m wins - time is up\r\n"));
    free(s);
}

static void test_end_solo(void **state) {
    proto_end_view e = {
        NULL, PROTO_END_ALL_OVER, 1, 1, race, 1, {ENG_SEED_CLIENT, 99, {0}},
        NULL, PROTO_COLOR_OFF};
    char *s = render_end(&e);
    assert_memory_equal(s, "Game over: no moves left\r\n", 26);
    free(s);
    proto_player left = race[2];
    e = (proto_end_view){
        NULL, PROTO_END_ALL_OVER, 3, 3, &left, 1, {ENG_SEED_CLIENT, 99, {0}},
        NULL, PROTO_COLOR_OFF};
    s = render_end(&e);
    assert_memory_equal(s, "Game over: you left\r\n", 21);
    free(s);
}

static void test_text_helpers(void **state) {
    proto_buf b;
    proto_buf_init(&b);
    assert_int_equal(proto_render_text(&b, "one\ntwo\r\nthree"), 0);
    assert_int_equal(proto_render_linef(&b, "room %s needs %d more", "K7Q2", 1), 0);
    assert_int_equal(proto_render_text(&b, ""), 0);
    assert_string_equal(b.data, "one\r\ntwo\r\nthree\r\nroom K7Q2 needs 1 more\r\n");
    proto_buf_free(&b);
    proto_buf_free(&b);
}

static void test_buf_grows_and_takes(void **state) {
    proto_buf b;
    proto_buf_init(&b);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(proto_buf_printf(&b, "%04d", i), 0);
    assert_int_equal(b.len, 4000);
    assert_true(b.cap > b.len);
    assert_memory_equal(b.data + 3996, "0999", 5);
    size_t len;
    char *s = proto_buf_take(&b, &len);
    assert_int_equal(len, 4000);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(s);
    /* An empty buffer still hands over a string. */
    s = proto_buf_take(&b, &len);
    assert_non_null(s);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    free(s);
    /* After a failure, appends do nothing and take gives NULL. */
    b.failed = true;
    assert_int_equal(proto_buf_puts(&b, "x"), -1);
    assert_null(proto_buf_take(&b, &len));
    assert_false(b.failed);
}

static void test_tile_text(void **state) {
    static const struct {
        uint64_t value;
        const char *text;
    } cases[] = {{0, "."},
                 {2, "2"},
                 {2048, "2048"},
                 {65536, "65536"},
                 {131072, "128k"},
                 {524288, "512k"},
                 {1048576, "1M"},
                 {(uint64_t)1 << 30, "1G"},
                 {(uint64_t)1 << 63, "8E"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[8];
        proto_render_tile(cases[i].value, out);
        assert_string_equal(out, cases[i].text);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_golden_race_side_by_side, setup_race),
        cmocka_unit_test(test_golden_solo),
        cmocka_unit_test_setup(test_narrow_terminal_stacks, setup_race),
        cmocka_unit_test_setup(test_unknown_width_is_80, setup_race),
        cmocka_unit_test_setup(test_spectator, setup_race),
        cmocka_unit_test(test_big_boards_fit_stacked),
        cmocka_unit_test_setup(test_colour_on, setup_race),
        cmocka_unit_test_setup(test_colour_off_is_plain, setup_race),
        cmocka_unit_test(test_name_sanitised),
        cmocka_unit_test_setup(test_golden_end_winner, setup_race),
        cmocka_unit_test_setup(test_end_server_seed, setup_race),
        cmocka_unit_test_setup(test_end_draw_and_no_winner, setup_race),
        cmocka_unit_test_setup(test_end_solo, setup_race),
        cmocka_unit_test(test_text_helpers),
        cmocka_unit_test(test_buf_grows_and_takes),
        cmocka_unit_test(test_tile_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
