/* test_text_fit.c - every kind of text screen fits terminals from 40x12 to 160x50, with
 * the viewer's board whole and the seed, commit and resume code never split.
 *
 * Raw telnet clients that report their window (NAWS) as 40x12, 60x20, 80x24
 * and 160x50, and netcat (80x24 assumed), against race2048d, with JSON
 * clients as the other players. For each screen kind: every line fits the
 * width, the screen fits the height (the cursor's line included), and a
 * screen with the viewer's board shows it whole. The one thing allowed to be
 * wider than the terminal is a lone token (a 64-digit seed or commit, on a
 * line of its own below its label): the terminal wraps it, and its rows are
 * counted. Every wait is for an expected screen, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "tt.h"

#define SCREEN 65536
/* The letters of a resume code (Crockford's base 32). */
#define CODE_LETTERS "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/* The terminal sizes every screen kind is drawn at. */
static const int sizes[][2] = {{40, 12}, {60, 20}, {80, 24}, {160, 50}};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

typedef struct fixture {
    th_server *srv;
    tt_client h;
    char screen[SCREEN];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->h.fd = -1;
    *state = f;
    f->srv = server_start(NULL);
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tt_close(&f->h);
    free(f);
    return harness_teardown(state);
}

/* ------------------------------------------------------------- helpers --- */

/* NAWS answers like inetutils-telnet's, for a window of cols x rows. */
static void telnet_answer(tt_client *c, int cols, int rows) {
    unsigned char a[] = {0xff, 0xfd, 0x01, 0xff, 0xfd, 0x03, 0xff, 0xfb, 0x1f,
                         0xff, 0xfa, 0x1f, 0,    0,    0,    0,    0xff, 0xf0};
    a[12] = (unsigned char)(cols >> 8);
    a[13] = (unsigned char)cols;
    a[15] = (unsigned char)rows;
    tt_send(c, a, sizeof a);
}

/* Offset of the newest clear-screen in c's bytes, or -1. */
static long last_clear(const tt_client *c) {
    long at = -1;
    for (long next;
         (next = tt_find(c->buf, c->len, at < 0 ? 0 : (size_t)at + 1, TT_CLEAR, 7)) >= 0;)
        at = next;
    return at;
}

/* A screen is whole once it ends as screens end: with the prompt, or (in a
 * telnet game, no prompt) with a line end. */
static bool screen_whole(const tt_client *c) {
    long at = last_clear(c);
    if (at < 0) return false;
    const char *s = c->buf + at;
    size_t n = c->len - (size_t)at;
    return n >= 2 && (!memcmp(s + n - 2, "> ", 2) || !memcmp(s + n - 2, ": ", 2) ||
                      !memcmp(s + n - 2, "\r\n", 2));
}

typedef struct want {
    const tt_client *c;
    const char *needle;
    int board; /* the viewer's board must be shown, of this size; 0: no board */
} want;

static bool wanted(const char *screen, void *arg) {
    const want *w = arg;
    if (!screen_whole(w->c) || !strstr(screen, w->needle)) return false;
    if (!w->board) return true;
    eng_board b;
    return tt_screen_board(screen, 0, &b) && b.size == w->board;
}

/* Waits for the newest whole screen after `from` to contain needle (and,
 * with board, the viewer's board of that size, whole); leaves its text in
 * f->screen. */
static void wait_screen(fixture *f, tt_client *c, size_t from, const char *needle,
                        int board, int cols, int rows) {
    want w = {c, needle, board};
    if (!tt_wait_screen(c, from, wanted, &w, harness_ms(TT_WAIT), f->screen, SCREEN))
        fail_msg("at %dx%d no screen with \"%s\"%s came; the last one:\n%s", cols, rows,
                 needle, board ? " and a whole board" : "", f->screen);
}

/* A line of the screen wider than the terminal is allowed only if it is one
 * token (no space): a seed or commit, which the terminal wraps. */
static bool lone_token(const char *line, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (line[i] == ' ' || line[i] == 0x1b) return false;
    return n >= 32;
}

/* The newest screen fits cols x rows: every line at most cols columns (but
 * a lone token), at most rows rows with the cursor's line, and every colour
 * closed before its line ends. */
static void assert_fits(fixture *f, const tt_client *c, int cols, int rows) {
    long at = last_clear(c);
    if (at < 0) fail_msg("no screen at all");
    const char *s = c->buf + at;
    size_t len = c->len - (size_t)at;
    int used = 1, w = 0; /* the cursor's line */
    size_t line = 7;
    bool sgr_open = false;
    tt_screen_text(c->buf, c->len, (size_t)at, f->screen, SCREEN);
    for (size_t i = 7; i < len; i++) {
        if (s[i] == 0x1b && i + 1 < len && s[i + 1] == '[') {
            size_t j = i + 2;
            while (j < len && !(s[j] >= 0x40 && s[j] <= 0x7e))
                j++;
            if (j < len && s[j] == 'm')
                sgr_open = !(j == i + 2 || (j == i + 3 && s[i + 2] == '0'));
            i = j;
            continue;
        }
        if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n') {
            if (sgr_open) fail_msg("%dx%d: a colour is open at a line end", cols, rows);
            if (w > cols && !lone_token(s + line, i - line))
                fail_msg("%dx%d: a line of %d columns:\n%.*s\nin:\n%s", cols, rows, w,
                         (int)(i - line), s + line, f->screen);
            used += w > cols ? (w + cols - 1) / cols : 1;
            w = 0;
            i++;
            line = i + 1;
            continue;
        }
        if (((unsigned char)s[i] & 0xc0) != 0x80) w++;
    }
    if (w > cols) fail_msg("%dx%d: the cursor's line is %d columns", cols, rows, w);
    if (used > rows)
        fail_msg("%dx%d: the screen takes %d rows:\n%s", cols, rows, used, f->screen);
}

/* A telnet human of cols x rows, greeted in the lobby (character mode). */
static void greet(fixture *f, tt_client *c, int cols, int rows) {
    tt_close(c);
    tt_connect(c, f->srv->port);
    if (tt_wait_for(c, 0, TT_PROBE_DCS, TT_PROBE_DCS_LEN, harness_ms(TT_WAIT)) != 0)
        fail_msg("no probe");
    telnet_answer(c, cols, rows);
    wait_screen(f, c, 0, "race2048", 0, cols, rows);
}

/* Types a command line in character mode: the text, then Enter. */
static void type_line(tt_client *c, const char *line) {
    tt_sends(c, line);
    tt_send(c, "\r\0", 2);
}

/* A JSON client that creates a room for `players`; returns its code. */
static const char *json_create(client *j, int players) {
    client_send(j, "{\"type\":\"create\",\"players\":%d}", players);
    return jstr(client_expect(j, "room", harness_ms(TT_WAIT)), "room");
}

static void json_join(client *j, const char *code) {
    client_send(j, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect(j, "room", harness_ms(TT_WAIT));
}

/* The human joins a room of `players` that JSON clients fill but for its
 * seat; returns the room's creator (for leaving it later). */
static client *race_with(fixture *f, int players, int cols, int rows) {
    char name[24];
    snprintf(name, sizeof name, "jo%dx%d", cols, rows);
    client *jo = client_named(f->srv, name);
    const char *code = json_create(jo, players);
    for (int i = 1; i < players - 1; i++) {
        snprintf(name, sizeof name, "longer-name-%d%d", i, cols);
        client *j = client_named(f->srv, name);
        json_join(j, code);
    }
    greet(f, &f->h, cols, rows);
    size_t mark = f->h.len;
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    type_line(&f->h, line);
    wait_screen(f, &f->h, mark, "(you)", 4, cols, rows);
    return jo;
}

/* ------------------------------------------------------------- screens --- */

static void test_lobby_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        greet(f, &f->h, cols, rows);
        wait_screen(f, &f->h, 0, "You are player-", 0, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        if (strncmp(f->screen, "race2048", 8) != 0)
            fail_msg("%dx%d: the title is not on the top line:\n%s", cols, rows,
                     f->screen);
        /* help in the lobby: as much of the list as fits, the title kept. */
        size_t mark = f->h.len;
        type_line(&f->h, "help");
        wait_screen(f, &f->h, mark, "Commands", 0, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        if (strncmp(f->screen, "race2048", 8) != 0)
            fail_msg("%dx%d: help pushed the title off:\n%s", cols, rows, f->screen);
    }
}

static void test_waiting_room_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        greet(f, &f->h, cols, rows);
        size_t mark = f->h.len;
        type_line(&f->h, "create 8");
        wait_screen(f, &f->h, mark, "Tell a friend", 0, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        if (!strstr(f->screen, "Tell a friend to type:  join "))
            fail_msg("%dx%d: the room code is split:\n%s", cols, rows, f->screen);
    }
}

static void test_race_of_two_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        race_with(f, 2, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        /* The resume code is on the screen, whole on one line, at every
         * size (its sentence shortens instead). */
        const char *at = strstr(f->screen, "resume ");
        if (!at) fail_msg("%dx%d: no resume code:\n%s", cols, rows, f->screen);
        size_t n = 0;
        while (at[7 + n] && strchr(CODE_LETTERS, at[7 + n]))
            n++;
        if (n != 8)
            fail_msg("%dx%d: the resume code is split:\n%s", cols, rows, f->screen);
        tt_close(&f->h);
    }
}

static void test_race_of_four_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        race_with(f, 4, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        tt_close(&f->h);
    }
}

/* netcat, 4 racers at 80x24: the viewer's board keeps its frame. */
static void test_race_of_four_on_netcat_keeps_your_frame(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, 4);
    for (int i = 1; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "j%d", i);
        json_join(client_named(f->srv, name), code);
    }
    tt_connect(&f->h, f->srv->port);
    wait_screen(f, &f->h, 0, "You are player-", 0, 80, 24);
    size_t mark = f->h.len;
    char line[32];
    snprintf(line, sizeof line, "join %s\n", code);
    tt_sends(&f->h, line);
    wait_screen(f, &f->h, mark, "Enter to move", 4, 80, 24);
    assert_fits(f, &f->h, 80, 24);
    const char *you = strstr(f->screen, "(you)");
    const char *frame = strstr(f->screen, "┌");
    if (!you || !frame || strncmp(strchr(you, '\n') + 1, "┌", 3) != 0)
        fail_msg("your board has no frame:\n%s", f->screen);
    for (int i = 0; i < 4; i++) {
        eng_board b;
        if (!tt_screen_board(f->screen, i, &b) && i < 3)
            fail_msg("board %d is not drawn:\n%s", i, f->screen);
    }
}

static void test_solo_of_eight_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        greet(f, &f->h, cols, rows);
        size_t mark = f->h.len;
        type_line(&f->h, "solo 8");
        wait_screen(f, &f->h, mark, "(you)", 8, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        /* A move redraws within the terminal too. */
        eng_board before, after;
        tt_screen_board(f->screen, 0, &before);
        mark = f->h.len;
        eng_dir d = tt_movable_dir(&before);
        tt_sends(&f->h, d == ENG_UP     ? "w"
                        : d == ENG_DOWN ? "s"
                        : d == ENG_LEFT ? "a"
                                        : "d");
        wait_screen(f, &f->h, mark, "race2048", 8, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        tt_screen_board(f->screen, 0, &after);
        if (!tt_board_differs(&before, &after))
            fail_msg("%dx%d: the move is not shown:\n%s", cols, rows, f->screen);
    }
}

/* The end screen of a race jo leaves: the verdict and what to type always;
 * at 60 columns and more the seed and commit too, each whole on a line. */
static void test_end_screen_fits(void **state) {
    fixture *f = *state;
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        client *jo = race_with(f, 2, cols, rows);
        json_t *start = client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
        char commit[80];
        snprintf(commit, sizeof commit, "%s", jstr(start, "commit"));
        size_t mark = f->h.len;
        client_send(jo, "{\"type\":\"leave\"}");
        json_t *end = client_expect_skip(jo, "end", "state player", harness_ms(TT_WAIT));
        wait_screen(f, &f->h, mark, "Race over", 0, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        if (!strstr(f->screen, "rematch"))
            fail_msg("%dx%d: the end screen does not say what to type:\n%s", cols, rows,
                     f->screen);
        if (rows >= 20) {
            /* Whole tokens, each on one line: what sha256sum is checked with. */
            char line[160];
            snprintf(line, sizeof line, "\n%s\n", commit);
            bool alone = strstr(f->screen, line) != NULL;
            snprintf(line, sizeof line, "commit %s\n", commit);
            if (!alone && !strstr(f->screen, line))
                fail_msg("%dx%d: the commit is not whole on a line:\n%s", cols, rows,
                         f->screen);
            const char *seed = jstr(end, "seed");
            snprintf(line, sizeof line, "\n%s\n", seed);
            bool seed_alone = strstr(f->screen, line) != NULL;
            snprintf(line, sizeof line, "seed %s\n", seed);
            if (!seed_alone && !strstr(f->screen, line))
                fail_msg("%dx%d: the seed is not whole on a line:\n%s", cols, rows,
                         f->screen);
            snprintf(line, sizeof line, "salt %s\n", jstr(end, "salt"));
            if (!strstr(f->screen, line))
                fail_msg("%dx%d: the salt is not whole:\n%s", cols, rows, f->screen);
        }
        tt_close(&f->h);
    }
}

/* Ten finished races between long names, then history and a replay. */
static void play_races(fixture *f, int n) {
    for (int i = 0; i < n; i++) {
        client *a = client_named(f->srv, "abcdefghijklmnop");
        client *b = client_named(f->srv, "qrstuvwxyz-12345");
        json_join(b, json_create(a, 2));
        client_expect_skip(a, "start", "room", harness_ms(TT_WAIT));
        client_move_any(a);
        client_send(a, "{\"type\":\"leave\"}");
        client_expect_skip(a, "end", "state player", harness_ms(TT_WAIT));
        client_expect_skip(b, "end", "start state player room", harness_ms(TT_WAIT));
        client_close(a);
        client_close(b);
    }
}

static void test_history_fits(void **state) {
    fixture *f = *state;
    play_races(f, 10);
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        greet(f, &f->h, cols, rows);
        size_t mark = f->h.len;
        type_line(&f->h, "history");
        wait_screen(f, &f->h, mark, "Recently finished games", 0, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        if (strncmp(f->screen, "race2048", 8) != 0)
            fail_msg("%dx%d: history pushed the title off:\n%s", cols, rows, f->screen);
        if (!strstr(f->screen, "#10"))
            fail_msg("%dx%d: the newest game is not listed:\n%s", cols, rows, f->screen);
        /* No word is cut: every name on it is whole. */
        for (const char *p = f->screen; (p = strstr(p, "abcdefg")) != NULL; p++)
            if (strncmp(p, "abcdefghijklmnop", 16) != 0)
                fail_msg("%dx%d: a name is cut:\n%s", cols, rows, f->screen);
    }
}

static void test_replay_fits(void **state) {
    fixture *f = *state;
    play_races(f, 1);
    for (int i = 0; i < NSIZES; i++) {
        int cols = sizes[i][0], rows = sizes[i][1];
        greet(f, &f->h, cols, rows);
        size_t mark = f->h.len;
        type_line(&f->h, "replay 1");
        wait_screen(f, &f->h, mark, "Replay of game 1", 4, cols, rows);
        assert_fits(f, &f->h, cols, rows);
        mark = f->h.len;
        wait_screen(f, &f->h, mark, "all 1 moves shown", 4, cols, rows);
        assert_fits(f, &f->h, cols, rows);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lobby_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_room_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_of_two_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_of_four_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_of_four_on_netcat_keeps_your_frame,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_solo_of_eight_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_screen_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_fits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
