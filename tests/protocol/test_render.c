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
    race[0] =
        (proto_player){1, "alice", &board_a, 2560, 120, PROTO_PLAYING, false, false, 0};
    race[1] = (proto_player){2, "bob", &board_b, 1424, 98, PROTO_OVER, false, false, 0};
    race[2] = (proto_player){3, "carol", &board_c, 0, 1, PROTO_LEFT, false, false, 0};
    return 0;
}

/* The views the tests draw, with the fields that are not given left out. */
static proto_view view(const proto_player *players, int n, uint64_t you, const char *room,
                       uint64_t target, int width, proto_color color, const char *status,
                       const char *hint) {
    return (proto_view){.players = players,
                        .n = n,
                        .you = you,
                        .room = room,
                        .target = target,
                        .width = width,
                        .color = color,
                        .status = status,
                        .hint = hint};
}

static proto_end_view end_view(const char *room, proto_end_reason reason, uint64_t winner,
                               uint64_t you, const proto_player *results, int n,
                               uint32_t seed, const char *salt, proto_color color) {
    /* A client's seed (a number); tests of server seeds set .seed after. */
    return (proto_end_view){.room = room,
                            .reason = reason,
                            .winner = winner,
                            .you = you,
                            .results = results,
                            .n = n,
                            .seed = {.kind = ENG_SEED_CLIENT, .client = seed},
                            .salt = salt,
                            .color = color};
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
    proto_view v = view(race, 2, 2, "K7Q2", 2048, 80, PROTO_COLOR_OFF, "bob moved left",
                        "keys: wasd, hjkl or arrows - : for a command");
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
    proto_player p = {7, "zed", &b, 0, 0, PROTO_PLAYING, false, false, 0};
    proto_view v = view(&p, 1, 7, NULL, 0, 0, PROTO_COLOR_OFF, NULL, NULL);
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
    proto_view v = view(race, 2, 1, "K7Q2", 2048, 40, PROTO_COLOR_OFF, NULL, NULL);
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
    proto_view v = view(race, 3, 1, "K7Q2", 2048, 0, PROTO_COLOR_OFF, NULL, NULL);
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
    proto_view v = view(race, 3, 0, "K7Q2", 2048, 200, PROTO_COLOR_OFF, NULL, NULL);
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
    proto_player p[2] = {
        {1, "abcdefghijklmnop", &b1, 99999999, 123456, PROTO_WON, false, false, 0},
        {2, "q", &b2, 5, 5, PROTO_PLAYING, false, false, 0}};
    proto_view v = view(p, 2, 1, "ABCDEFGH", 1u << 20, 80, PROTO_COLOR_256, NULL, NULL);
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
    proto_view v =
        view(race, 2, 2, "K7Q2", 2048, 80, PROTO_COLOR_256, "status\nline two", "hint");
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
    proto_view v = view(race, 3, 2, "K7Q2", 2048, 80, PROTO_COLOR_OFF, "s", "h");
    char *s = render(&v);
    /* The clear-screen is the only escape sequence. */
    assert_memory_equal(s, "\x1b[H\x1b[2J", 7);
    assert_null(strchr(s + 7, '\x1b'));
    free(s);
}

static void test_name_sanitised(void **state) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, 4), 0);
    proto_player p = {1, "ev\x1b[2Jil", &b, 0, 0, PROTO_PLAYING, false, false, 0};
    proto_view v = view(&p, 1, 0, NULL, 0, 80, PROTO_COLOR_OFF, NULL, NULL);
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
    proto_end_view e = end_view("K7Q2", PROTO_END_TARGET, 1, 2, race, 3, 12345,
                                "00000000000000000000000000000000", PROTO_COLOR_OFF);
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
    proto_end_view e = end_view("K7Q2", PROTO_END_TARGET, 1, 2, race, 3, 0,
                                "0123456789abcdef0123456789abcdef", PROTO_COLOR_OFF);
    e.seed = eng_seed_server(key);
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
    proto_end_view e =
        end_view("K7Q2", PROTO_END_ALL_OVER, 0, 0, race, 2, 7, NULL, PROTO_COLOR_OFF);
    char *s = render_end(&e);
    assert_memory_equal(s, "Race over in room K7Q2: a draw - no moves left\r\n", 48);
    assert_non_null(strstr(s, "\r\nseed 7\r\n"));
    free(s);

    proto_player gone[2] = {race[2], race[2]};
    gone[1].id = 4;
    e = (proto_end_view)end_view("K7Q2", PROTO_END_FORFEIT, 0, 3, gone, 2, 7, NULL,
                                 PROTO_COLOR_OFF);
    s = render_end(&e);
    assert_memory_equal(s, "Race over in room K7Q2: no winner - everyone left\r\n", 51);
    free(s);

    e = (proto_end_view)end_view("K7Q2", PROTO_END_TIME, 2, 2, race, 2, 7, NULL,
                                 PROTO_COLOR_256);
    s = render_end(&e);
    assert_non_null(strstr(s, "\x1b[1;32mbob\x1b[0m wins - time is up\r\n"));
    free(s);
}

static void test_end_solo(void **state) {
    proto_end_view e =
        end_view(NULL, PROTO_END_ALL_OVER, 1, 1, race, 1, 99, NULL, PROTO_COLOR_OFF);
    char *s = render_end(&e);
    assert_memory_equal(s, "Game over: no moves left\r\n", 26);
    free(s);
    proto_player left = race[2];
    e = (proto_end_view)end_view(NULL, PROTO_END_ALL_OVER, 3, 3, &left, 1, 99, NULL,
                                 PROTO_COLOR_OFF);
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

/* ------------------------------------------------------ fitting a height --- */

/* Eight 4x4 players, with a note on the fourth (room order). */
static eng_board eight_boards[8];
static proto_player eight[8];
static const char *eight_notes[8] = {NULL, NULL, NULL, "connection lost, 23 s"};
static const char *const eight_names[8] = {"ann", "bob", "cy",  "dee",
                                           "eve", "fay", "gus", "hal"};

static int setup_eight(void **state) {
    for (int i = 0; i < 8; i++) {
        uint64_t cells[16] = {0};
        cells[i] = 2;
        cells[15 - i] = (uint64_t)4 << i;
        set_board(&eight_boards[i], 4, cells);
        eight[i] = (proto_player){(uint64_t)i + 1,
                                  eight_names[i],
                                  &eight_boards[i],
                                  (uint64_t)100 * i,
                                  (uint32_t)i,
                                  PROTO_PLAYING,
                                  false,
                                  false,
                                  0};
    }
    return 0;
}

/* How many boards of `size` rows a screen draws in full: every board row
 * has two "│", one at each side. */
static int boards_shown(const char *s, int size) {
    int bars = 0;
    for (const char *p = strstr(s, "│"); p; p = strstr(p + 1, "│"))
        bars++;
    return bars / 2 / size;
}

static void test_eight_players_fit_80x24(void **state) {
    (void)state;
    proto_view v = view(eight, 8, 1, "K7Q2", 2048, 80, PROTO_COLOR_256, "hal moved",
                        "Arrows / wasd / hjkl move.  : for a command.  Ctrl-C quits.");
    v.notes = eight_notes;
    v.height = 23; /* 24 rows, one kept for the cursor */
    char *s = render(&v);
    int lines, widest;
    measure(s, &lines, &widest);
    assert_true(lines <= 23);
    assert_true(widest <= 80);
    /* Compact boards, three side by side in two rows (the full style would
     * show three), and the other two as one-line summaries. */
    assert_int_equal(boards_shown(s, 4), 6);
    assert_null(strstr(s, "┌"));
    assert_non_null(strstr(s, "ann (you)"));
    assert_non_null(strstr(s, "hal  score 700  max 512  "));
    assert_non_null(strstr(s, "connection lost, 23 s"));
    assert_non_null(strstr(s, "hal moved\r\n"));
    free(s);

    /* Without a height, every board is drawn: more than 24 lines. */
    v.height = 0;
    s = render(&v);
    measure(s, &lines, &widest);
    assert_true(lines > 24);
    free(s);
}

static void test_eight_players_fit_50x24_and_small_heights(void **state) {
    (void)state;
    for (int height = 23; height >= 6; height--) {
        proto_view v =
            view(eight, 8, 1, "K7Q2", 2048, 50, PROTO_COLOR_OFF, "a status",
                 "Arrows / wasd / hjkl move.  : for a command.  Ctrl-C quits.");
        v.height = height;
        v.notes = eight_notes;
        char *s = render(&v);
        int lines, widest;
        measure(s, &lines, &widest);
        if (lines > height) fail_msg("height %d: %d lines:\n%s", height, lines, s);
        if (widest > 50) fail_msg("height %d: %d columns:\n%s", height, widest, s);
        /* Nobody is dropped while the height has room for them all. */
        if (height >= 23) {
            for (int i = 0; i < 8; i++)
                assert_non_null(strstr(s, eight_names[i]));
        }
        free(s);
    }
}

/* Every size of terminal, down to 1x1: no crash, nothing wider than the
 * width where the width allows a board, never more lines than the height. */
static void test_every_terminal_size(void **state) {
    (void)state;
    for (int width = 1; width <= 100; width++) {
        for (int height = 1; height <= 30; height++) {
            proto_view v = view(eight, 8, 1, "K7Q2", 2048, width, PROTO_COLOR_256,
                                "status", "a hint that is long enough to wrap somewhere");
            v.height = height;
            v.notes = eight_notes;
            v.commit = "0123456789abcdef0123456789abcdef";
            char *s = render(&v);
            int lines, widest;
            measure(s, &lines, &widest);
            if (width >= 23 && widest > width)
                fail_msg("%dx%d: %d columns", width, height, widest);
            if (lines > height) fail_msg("%dx%d: %d lines:\n%s", width, height, lines, s);
            free(s);
        }
    }
}

static void test_compact_style_when_full_does_not_fit(void **state) {
    (void)state;
    /* Height 12: title 2, footer 2, 8 lines left: a full 4x4 board needs 9,
     * the compact one 6. */
    proto_view v = view(race, 2, 2, "K7Q2", 2048, 80, PROTO_COLOR_OFF, NULL, "hint");
    v.height = 12;
    char *s = render(&v);
    const char *want = "\x1b[H\x1b[2J"
                       "race2048  room K7Q2  target 2048\r\n"
                       "\r\n"
                       "bob (you)                 alice\r\n"
                       "│    .    .    2    . │   │    2    .    .    4 │\r\n"
                       "│    4    4    .    . │   │    .   16    8    . │\r\n"
                       "│    .   32   64    . │   │  128 2048    2    . │\r\n"
                       "│  256    .    . 1024 │   │    .    .    .    2 │\r\n"
                       "score 1424  over          score 2560  playing\r\n"
                       "\r\n"
                       "hint\r\n";
    assert_string_equal(s, want);
    free(s);
}

static void test_note_replaces_status(void **state) {
    (void)state;
    const char *notes[2] = {NULL, "connection lost, 7 s"};
    proto_view v = view(race, 2, 1, "K7Q2", 2048, 80, PROTO_COLOR_256, NULL, NULL);
    v.notes = notes;
    char *s = render(&v);
    assert_non_null(strstr(s, "\x1b[1;33mconnection lost, 7 s\x1b[0m\r\n"));
    assert_non_null(strstr(s, "120 moves  playing "));
    free(s);
}

static void test_commit_prefix_in_title(void **state) {
    (void)state;
    proto_view v = view(race, 2, 1, "K7Q2", 2048, 80, PROTO_COLOR_OFF, NULL, NULL);
    v.commit = "3f2a9c1e00112233445566778899aabbccddeeff00112233445566778899aabb";
    char *s = render(&v);
    assert_non_null(
        strstr(s, "race2048  room K7Q2  target 2048  commit 3f2a9c1e00112233\r\n"));
    free(s);
    /* At 40 columns the commit goes to a line of its own. */
    v.width = 40;
    s = render(&v);
    assert_non_null(strstr(s, "race2048  room K7Q2  target 2048\r\ncommit 3f2a"));
    free(s);
}

static void test_hint_wrapped_at_words(void **state) {
    (void)state;
    proto_buf b;
    proto_buf_init(&b);
    const char *hint = "Type w a s d (or h j k l) and Enter to move; several at once "
                       "work too. Ctrl-C quits.";
    assert_int_equal(proto_render_wrapped(NULL, hint, 50), 2);
    assert_int_equal(proto_render_wrapped(&b, hint, 50), 2);
    assert_string_equal(b.data, "Type w a s d (or h j k l) and Enter to move;\r\n"
                                "several at once work too. Ctrl-C quits.\r\n");
    proto_buf_free(&b);
    /* A word longer than the width is cut; colour takes no width. */
    assert_int_equal(proto_render_wrapped(&b, "0123456789abcdef", 6), 3);
    assert_string_equal(b.data, "012345\r\n6789ab\r\ncdef\r\n");
    proto_buf_free(&b);
    assert_int_equal(proto_render_wrapped(&b, "\x1b[1mabc\x1b[0m de", 6), 1);
    proto_buf_free(&b);
    assert_int_equal(proto_render_wrapped(&b, "one\ntwo", 0), 2);
    assert_int_equal(proto_render_count_lines(b.data, b.len), 2);
    proto_buf_free(&b);
}

/* Every line ends with the colours reset: no SGR is open at a CRLF, and no
 * line starts with a reset left over from the line before. */
static void assert_colour_closed_per_line(const char *s) {
    bool open = false;
    for (const char *p = s; *p; p++) {
        if (p[0] == '\x1b' && p[1] == '[') {
            const char *q = p + 2;
            while (*q && !(*q >= 0x40 && *q <= 0x7e))
                q++;
            if (*q == 'm') {
                size_t n = (size_t)(q - (p + 2));
                open = !(n == 0 || (n == 1 && p[2] == '0') ||
                         (n == 2 && p[2] == '3' && p[3] == '9'));
            }
            p = q;
            continue;
        }
        if (p[0] == '\r' && p[1] == '\n') {
            if (open) fail_msg("an SGR is still open at a line end in:\n%s", s);
            if (strncmp(p + 2, "\x1b[0m", 4) == 0 || strncmp(p + 2, "\x1b[39m", 5) == 0)
                fail_msg("a colour reset after a line end in:\n%s", s);
        }
    }
}

static void test_colour_reset_before_every_crlf(void **state) {
    (void)state;
    proto_view v = view(race, 3, 2, "K7Q2", 2048, 80, PROTO_COLOR_256, "s", "h");
    char *s = render(&v);
    assert_colour_closed_per_line(s);
    free(s);
    v.color = PROTO_COLOR_16;
    v.height = 12;
    s = render(&v);
    assert_colour_closed_per_line(s);
    free(s);
    for (int width = 80; width >= 40; width -= 40) {
        proto_end_view e =
            end_view("K7Q2", PROTO_END_TARGET, 1, 2, race, 3, 5, "ab", PROTO_COLOR_256);
        e.width = width;
        s = render_end(&e);
        assert_colour_closed_per_line(s);
        free(s);
    }
}

static void test_end_shows_commit_and_how_to_check(void **state) {
    (void)state;
    const char *seed = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const char *salt = "0123456789abcdef0123456789abcdef";
    const char *commit =
        "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
    proto_end_view e =
        end_view("K7Q2", PROTO_END_TARGET, 1, 2, race, 3, 0, salt, PROTO_COLOR_OFF);
    uint8_t key[ENG_SEED_KEY_BYTES];
    for (int i = 0; i < ENG_SEED_KEY_BYTES; i++)
        key[i] = (uint8_t)i;
    e.seed = eng_seed_server(key);
    e.commit = commit;
    char *s = render_end(&e);
    char want[512];
    snprintf(want, sizeof want,
             "seed %s\r\nsalt %s\r\ncommit %s\r\n"
             "Check: printf '%%s' 'SALT:SEED' | sha256sum must print the commit.\r\n",
             seed, salt, commit);
    assert_non_null(strstr(s, want));
    free(s);

    /* At 50 and 60 columns: every player still listed, and the seed and
     * commit never split: their labels go on the line before, and a token
     * wider than the terminal is alone on its line (the terminal wraps it,
     * a copy of it is whole). Nothing else is wider than the width. */
    for (int width = 50; width <= 60; width += 10) {
        e.width = width;
        proto_buf b;
        proto_buf_init(&b);
        assert_int_equal(proto_render_end(&b, &e), 0);
        assert_non_null(strstr(b.data, " 1. alice  score 2560  max 2048  playing\r\n"));
        assert_non_null(strstr(b.data, " 2. bob (you)  score 1424  max 1024  over\r\n"));
        snprintf(want, sizeof want, "\r\nseed:\r\n%s\r\nsalt %s\r\ncommit:\r\n%s\r\n",
                 seed, salt, commit);
        if (!strstr(b.data, want)) fail_msg("at %d columns:\n%s", width, b.data);
        assert_non_null(strstr(b.data, "\r\nprintf '%s' 'SALT:SEED' | sha256sum\r\n"));
        for (const char *line = b.data; *line;) {
            const char *end = strstr(line, "\r\n");
            assert_non_null(end);
            int w = (int)(end - line);
            bool token = (w == 64 && !strncmp(line, seed, 64)) ||
                         (w == 64 && !strncmp(line, commit, 64));
            if (w > width && !token)
                fail_msg("a line of %d columns at %d: %.*s", w, width, w, line);
            line = end + 2;
        }
        proto_buf_free(&b);
    }
}

/* On a short terminal the end screen keeps the verdict and the ranking,
 * then shows the seed, salt and commit whole or says a larger window shows
 * them: never a part of them. */
static void test_end_fits_its_height(void **state) {
    (void)state;
    const char *salt = "0123456789abcdef0123456789abcdef";
    const char *commit =
        "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
    uint8_t key[ENG_SEED_KEY_BYTES] = {0};
    for (int width = 40; width <= 80; width += 20) {
        for (int height = 1; height <= 16; height++) {
            proto_end_view e = end_view("K7Q2", PROTO_END_TARGET, 1, 2, race, 3, 0, salt,
                                        PROTO_COLOR_256);
            e.seed = eng_seed_server(key);
            e.commit = commit;
            e.width = width;
            e.height = height;
            proto_buf b;
            proto_buf_init(&b);
            assert_int_equal(proto_render_end(&b, &e), 0);
            int rows = proto_render_count_rows(b.data, b.len, width);
            int verdict = proto_render_wrapped(
                NULL, "Race over in room K7Q2: alice wins - reached the target", width);
            if (rows > (height > verdict ? height : verdict))
                fail_msg("%dx%d: %d rows:\n%s", width, height, rows, b.data);
            assert_non_null(strstr(b.data, "Race over"));
            bool seed = strstr(b.data, "000000000000") != NULL;
            bool has_commit = strstr(b.data, commit) != NULL;
            bool has_salt = strstr(b.data, salt) != NULL;
            assert_true(seed == has_commit && seed == has_salt);
            if (!seed && strstr(b.data, " 3. carol") &&
                rows <
                    height -
                        proto_render_wrapped(
                            NULL, "(A larger window shows the seed and commit.)", width) +
                        1)
                assert_non_null(strstr(b.data, "A larger window shows the seed"));
            proto_buf_free(&b);
        }
    }
}

static void test_count_rows(void **state) {
    (void)state;
    assert_int_equal(proto_render_count_rows("ab\r\n\x1b[1mcd\x1b[0m\r\n", 16, 2), 2);
    assert_int_equal(proto_render_count_rows("abcde\r\n", 7, 2), 3);
    assert_int_equal(proto_render_count_rows("\r\n\r\n", 4, 10), 2);
    assert_int_equal(proto_render_count_rows("\xe2\x94\x82x\r\n", 6, 2), 1);
}

/* Whether the viewer's board (the leftmost of the first row of boards) is
 * drawn whole: `size` rows that start with a side, and a bottom under a
 * top. */
static bool own_board_whole(const char *s, int size, bool *framed) {
    int rows = 0;
    bool top = false, bottom = false;
    for (const char *line = s; line && *line;) {
        if (!strncmp(line, "\x1b[H\x1b[2J", 7)) line += 7;
        if (rows && !strncmp(line, "\r\n", 2)) break; /* the next row of boards */
        if (!strncmp(line, "│", 3)) rows++;
        if (!strncmp(line, "┌", 3)) top = true;
        if (!strncmp(line, "└", 3)) bottom = true;
        line = strstr(line, "\r\n");
        if (line) line += 2;
    }
    *framed = top && bottom;
    return rows == size && top == bottom;
}

/* Four racers at 80x24 on netcat (two hint lines): the viewer's board keeps
 * its frame, the others are compact beside and under it. */
static void test_four_players_keep_your_frame(void **state) {
    (void)state;
    proto_view v =
        view(eight, 4, 1, "K7Q2", 2048, 80, PROTO_COLOR_OFF, NULL,
             "Type w a s d (or h j k l) and Enter to move; several at once work too.\n"
             "Dropped? Connect again within 30 s and type:  resume K7M2P9XQ");
    v.height = 23;
    v.commit = "0123456789abcdef0123456789abcdef";
    char *s = render(&v);
    int lines, widest;
    measure(s, &lines, &widest);
    assert_true(lines <= 23);
    assert_true(widest <= 80);
    bool framed;
    if (!own_board_whole(s, 4, &framed) || !framed) fail_msg("no frame:\n%s", s);
    assert_int_equal(boards_shown(s, 4), 4);
    free(s);
}

/* An 8x8 solo game on a 40x12 terminal: the board is whole (narrower cells,
 * the hint given up), and nothing is wider or taller than the terminal. */
static void test_eight_by_eight_at_40x12(void **state) {
    (void)state;
    eng_board big;
    uint64_t cells[64] = {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4};
    set_board(&big, 8, cells);
    proto_player solo = {7, "player-7", &big, 20000, 300, PROTO_PLAYING, false, false, 0};
    for (int height = 11; height <= 49; height += 38) {
        for (int width = 40; width <= 160; width += 120) {
            proto_view v =
                view(&solo, 1, 7, NULL, 2048, width, PROTO_COLOR_256, "a status",
                     "Type w a s d (or h j k l) and Enter to move; several at once work "
                     "too.");
            v.height = height;
            char *s = render(&v);
            int lines, widest;
            measure(s, &lines, &widest);
            if (lines > height || widest > width)
                fail_msg("%dx%d: %d lines, %d columns:\n%s", width, height, lines, widest,
                         s);
            bool framed;
            if (!own_board_whole(s, 8, &framed))
                fail_msg("%dx%d: the board is not whole:\n%s", width, height, s);
            /* At 40 columns the 8x8 board's tiles from 1024 on are 1k, 2k. */
            assert_non_null(strstr(s, width == 40 ? "m2k\x1b[0m" : "m2048\x1b[0m"));
            free(s);
        }
    }
}

/* A replay's status per frame: left from the last move on, won from the
 * move that made the target, over when stuck, the record's at the end. */
static void test_replay_status(void **state) {
    (void)state;
    eng_board plain, won, stuck;
    static const uint64_t none[16] = {2};
    static const uint64_t target[16] = {2048, 2};
    static const uint64_t full[16] = {2, 4, 2, 4, 4, 2, 4, 2, 2, 4, 2, 4, 4, 2, 4, 2};
    set_board(&plain, 4, none);
    set_board(&won, 4, target);
    set_board(&stuck, 4, full);
    assert_int_equal(proto_replay_status(&plain, 2048, 3, 9, PROTO_LEFT, false),
                     PROTO_PLAYING);
    assert_int_equal(proto_replay_status(&plain, 2048, 9, 9, PROTO_LEFT, false),
                     PROTO_LEFT);
    assert_int_equal(proto_replay_status(&plain, 2048, 0, 0, PROTO_LEFT, false),
                     PROTO_LEFT);
    assert_int_equal(proto_replay_status(&won, 2048, 5, 5, PROTO_WON, false), PROTO_WON);
    assert_int_equal(proto_replay_status(&plain, 2048, 5, 5, PROTO_WON, true), PROTO_WON);
    assert_int_equal(proto_replay_status(&stuck, 2048, 4, 9, PROTO_OVER, false),
                     PROTO_OVER);
    assert_int_equal(proto_replay_status(&plain, 2048, 9, 9, PROTO_PLAYING, true),
                     PROTO_PLAYING);
    proto_status st = PROTO_PLAYING;
    assert_int_equal(proto_status_parse("left", &st), 0);
    assert_int_equal(st, PROTO_LEFT);
    assert_int_equal(proto_status_parse("nope", &st), -1);
    assert_int_equal(proto_status_parse(NULL, &st), -1);
    assert_int_equal(st, PROTO_LEFT);
}

/* Accounts in text mode: the key once with its login line; the board; a profile. */
static void test_accounts_screens(void **state) {
    (void)state;
    proto_buf b;
    proto_buf_init(&b);
    assert_int_equal(
        proto_render_registered(&b, "Ada", "00112233445566778899aabbccddeeff"), 0);
    assert_string_equal(b.data, "The name Ada is yours now. Your key, shown\r\n"
                                "only this once (write it down):\r\n"
                                "  00112233445566778899aabbccddeeff\r\n"
                                "Next time, type this to log in:\r\n"
                                "  login Ada 00112233445566778899aabbccddeeff\r\n");
    proto_buf_free(&b);
    proto_buf_init(&b);
    proto_board_row rows[2] = {{1, "Ada", 1612, 14}, {2, "Bob", 1500, 10}};
    assert_int_equal(proto_render_leaderboard(&b, rows, 2), 0);
    assert_string_equal(b.data, "Best ratings (10 races or more):\r\n"
                                "    1. Ada               1612  14 races\r\n"
                                "    2. Bob               1500  10 races\r\n");
    proto_buf_free(&b);
    proto_buf_init(&b);
    assert_int_equal(proto_render_leaderboard(&b, rows, 0), 0);
    assert_non_null(strstr(b.data, "nobody yet"));
    proto_buf_free(&b);
    proto_buf_init(&b);
    int32_t chart[2] = {1540, 1523};
    uint64_t recent[2] = {42, 7};
    proto_profile_best best = {4, 2048, 256, 7};
    proto_profile p = {.name = "Ada",
                       .rating = {.rating = 1523,
                                  .mu = 25.4,
                                  .sigma = 7,
                                  .games = 2,
                                  .provisional = true},
                       .races = 2,
                       .wins = 1,
                       .best = &best,
                       .nbest = 1,
                       .recent = recent,
                       .nrecent = 2,
                       .chart = chart,
                       .nchart = 2};
    assert_int_equal(proto_render_profile(&b, &p), 0);
    assert_string_equal(b.data, "Ada: rating 1523 (provisional)\r\n"
                                "  2 rated races, 1 won\r\n"
                                "  rating after each race: 1540 1523\r\n"
                                "  best 4x4: 2048 (tile 256), game 7\r\n"
                                "  recent games (replay ID): 42 7\r\n");
    proto_buf_free(&b);
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
        cmocka_unit_test_setup(test_eight_players_fit_80x24, setup_eight),
        cmocka_unit_test_setup(test_eight_players_fit_50x24_and_small_heights,
                               setup_eight),
        cmocka_unit_test_setup(test_compact_style_when_full_does_not_fit, setup_race),
        cmocka_unit_test_setup(test_every_terminal_size, setup_eight),
        cmocka_unit_test_setup(test_note_replaces_status, setup_race),
        cmocka_unit_test_setup(test_commit_prefix_in_title, setup_race),
        cmocka_unit_test(test_hint_wrapped_at_words),
        cmocka_unit_test_setup(test_colour_reset_before_every_crlf, setup_race),
        cmocka_unit_test_setup(test_end_shows_commit_and_how_to_check, setup_race),
        cmocka_unit_test_setup(test_end_fits_its_height, setup_race),
        cmocka_unit_test(test_count_rows),
        cmocka_unit_test_setup(test_four_players_keep_your_frame, setup_eight),
        cmocka_unit_test(test_eight_by_eight_at_40x12),
        cmocka_unit_test(test_replay_status),
        cmocka_unit_test(test_accounts_screens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
