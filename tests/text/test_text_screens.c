/* test_text_screens.c - what text-mode screens say and that they fit the terminal:
 * rematch, queue, help, dropped players, height, stuck boards, wrapping, resume codes.
 *
 * Raw byte clients (netcat: no window size, so 80x24 is assumed; telnet:
 * NAWS 80x24 or 50x24) against race2048d, with JSON clients as the other
 * racers where a test needs a room's settings a human cannot choose (a time
 * limit, a 3x3 race) or many players. Every wait is for an expected screen
 * or message, with a deadline.
 */
#include <poll.h>
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

#define SCREEN 32768
#define HUMANS 3

typedef struct fixture {
    th_server *srv;
    tt_client h[HUMANS];
    char screen[SCREEN];
} fixture;

static int setup_with(void **state, const char *const *extra) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    for (int i = 0; i < HUMANS; i++)
        f->h[i].fd = -1;
    *state = f;
    f->srv = server_start(extra);
    return 0;
}

static int setup(void **state) {
    return setup_with(state, NULL);
}

static int setup_short_grace(void **state) {
    return setup_with(state, (const char *const[]){"--grace", "2", NULL});
}

static int setup_short_idle(void **state) {
    return setup_with(state, (const char *const[]){"--idle-timeout", "1", NULL});
}

static int teardown(void **state);

/* A server with a journal, in a directory of its own (teardown_journal). */
static char journal_dir[64], journal_path[96];
static const char *const *journal_flags(void) {
    static const char *flags[3];
    flags[0] = "--journal";
    flags[1] = journal_path;
    return flags;
}

static int setup_journal(void **state) {
    snprintf(journal_dir, sizeof journal_dir, "/tmp/r2048-textj-XXXXXX");
    if (!mkdtemp(journal_dir)) return -1;
    snprintf(journal_path, sizeof journal_path, "%s/j", journal_dir);
    return setup_with(state, journal_flags());
}

static int teardown_journal(void **state) {
    int rc = teardown(state);
    unlink(journal_path);
    rmdir(journal_dir);
    return rc;
}

static int teardown(void **state) {
    fixture *f = *state;
    for (int i = 0; i < HUMANS; i++)
        tt_close(&f->h[i]);
    free(f);
    return harness_teardown(state);
}

/* ------------------------------------------------------------- helpers --- */

/* NAWS answers like inetutils-telnet's, for a window of cols x rows. */
static void telnet_answer(tt_client *c, int cols, int rows) {
    unsigned char a[] = {0xff, 0xfd, 0x01, 0xff, 0xfd, 0x03, 0xff, 0xfb, 0x1f,
                         0xff, 0xfa, 0x1f, 0,    0,    0,    0,    0xff, 0xf0};
    a[13] = (unsigned char)cols;
    a[15] = (unsigned char)rows;
    tt_send(c, a, sizeof a);
}

static void wait_str(tt_client *c, size_t from, const char *needle) {
    if (tt_wait_str(c, from, needle, harness_ms(TT_WAIT)) < 0) {
        static char plain[SCREEN];
        tt_screen_text(c->buf, c->len, from, plain, sizeof plain);
        fail_msg("\"%s\" never came; the last screen:\n%s", needle, plain);
    }
}

/* A human greeted in the lobby: netcat (cols 0) or a telnet of cols x 24,
 * connected from a loopback address (source, e.g. "127.0.0.2"). */
static void greet_from(tt_client *c, int port, int cols, const char *name,
                       const char *source) {
    tt_connect_from(c, port, source);
    if (cols) {
        if (tt_wait_for(c, 0, TT_PROBE_DCS, TT_PROBE_DCS_LEN, harness_ms(TT_WAIT)) != 0)
            fail_msg("no probe");
        telnet_answer(c, cols, 24);
    }
    wait_str(c, 0, "\r\n> ");
    if (name) {
        size_t mark = c->len;
        char line[48];
        snprintf(line, sizeof line, "name %s\r\n", name);
        tt_sends(c, line);
        wait_str(c, mark, "You are now ");
        wait_str(c, mark, "\r\n> ");
    }
}

/* The same from 127.0.0.1. */
static void greet(tt_client *c, int port, int cols, const char *name) {
    greet_from(c, port, cols, name, NULL);
}

/* Waits for the newest screen after `from` to contain needle; leaves its
 * plain text in f->screen. */
static void wait_screen(fixture *f, tt_client *c, size_t from, const char *needle) {
    if (!tt_wait_screen(c, from, tt_has, (void *)needle, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("no screen with \"%s\" came; the last one:\n%s", needle, f->screen);
}

/* The newest complete screen's raw bytes: from its clear-screen to the end. */
static const char *raw_screen(const tt_client *c, size_t *len) {
    long at = -1;
    for (long next;
         (next = tt_find(c->buf, c->len, at < 0 ? 0 : (size_t)at + 1, TT_CLEAR, 7)) >= 0;)
        at = next;
    if (at < 0) fail_msg("no screen at all");
    *len = c->len - (size_t)at;
    return c->buf + at;
}

/* The newest screen takes at most rows lines (CRLF-ended lines plus the
 * cursor's line) of at most cols columns, and closes every colour before
 * its line ends. */
static void assert_fits(const tt_client *c, int cols, int rows) {
    size_t len;
    const char *s = raw_screen(c, &len);
    int lines = 1, w = 0;
    bool sgr_open = false;
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
            if (sgr_open) fail_msg("a colour is open at the end of line %d", lines);
            if (w > cols)
                fail_msg("line %d is %d columns wide, more than %d:\n%.*s", lines, w,
                         cols, (int)len, s);
            lines++;
            w = 0;
            i++;
            continue;
        }
        if (((unsigned char)s[i] & 0xc0) != 0x80) w++;
    }
    if (lines > rows) {
        static char plain[SCREEN];
        tt_screen_text(c->buf, c->len, 0, plain, sizeof plain);
        fail_msg("the screen takes %d lines, more than %d:\n%s", lines, rows, plain);
    }
}

/* A JSON client that creates a room with these fields; returns its code. */
static const char *json_create(client *j, const char *fields) {
    client_send(j, "{\"type\":\"create\",%s}", fields);
    json_t *room = client_expect(j, "room", harness_ms(TT_WAIT));
    return jstr(room, "room");
}

/* A netcat human types join CODE. */
static void human_join(tt_client *c, const char *code) {
    char line[32];
    snprintf(line, sizeof line, "join %s\r\n", code);
    tt_sends(c, line);
}

/* Predicate: a race screen (its title names the target) with the viewer's
 * board, in either style. */
static bool race_screen(const char *screen, void *arg) {
    (void)arg;
    eng_board b;
    return strstr(screen, "  target ") && strstr(screen, "(you)") &&
           tt_screen_board(screen, 0, &b);
}

/* Waits for a race screen after `from`. */
static void wait_race_screen(fixture *f, tt_client *c, size_t from) {
    if (!tt_wait_screen(c, from, race_screen, NULL, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("no race screen came:\n%s", f->screen);
}

/* -------------------------------------------- 1 and 2: after a race ends --- */

/* jo (JSON) makes a 3-player room with a 1-second limit; nina and tom
 * (netcat) join; the race runs out of time with everyone still there. */
static client *timed_race(fixture *f, tt_client *nina, tt_client *tom, int players,
                          json_t **start) {
    client *jo = client_named(f->srv, "jo");
    char fields[64];
    snprintf(fields, sizeof fields, "\"players\":%d,\"time_limit\":1", players);
    const char *code = json_create(jo, fields);
    greet(nina, f->srv->port, 0, "nina");
    size_t nmark = nina->len;
    human_join(nina, code);
    if (tom) {
        greet(tom, f->srv->port, 0, "tom");
        human_join(tom, code);
    }
    *start = client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    wait_race_screen(f, nina, nmark);
    return jo;
}

static void test_rematch_pending_is_shown_to_both(void **state) {
    fixture *f = *state;
    tt_client *nina = &f->h[0], *tom = &f->h[1];
    json_t *start;
    client *jo = timed_race(f, nina, tom, 3, &start);
    wait_screen(f, nina, 0, "Race over");
    wait_screen(f, tom, 0, "Race over");
    json_t *end = client_expect_skip(jo, "end", "state player", harness_ms(TT_WAIT));

    /* The end screen has the commit promised at the start, the seed and salt
     * revealed, and how to check them. */
    const char *commit = jstr(start, "commit");
    char want[128];
    snprintf(want, sizeof want, "commit %s", commit);
    wait_screen(f, tom, 0, want);
    assert_non_null(strstr(f->screen, "printf '%s' 'SALT:SEED' | sha256sum"));
    snprintf(want, sizeof want, "salt %s", jstr(end, "salt"));
    assert_non_null(strstr(f->screen, want));
    assert_fits(tom, 80, 24);

    size_t tmark = tom->len, nmark = nina->len;
    tt_sends(tom, "rematch\n");
    wait_screen(f, tom, tmark, "Waiting for jo, nina to type rematch");
    assert_non_null(strstr(f->screen, "Race over")); /* still the end screen */
    wait_screen(f, nina, nmark, "tom wants a rematch: type rematch");
    assert_non_null(strstr(f->screen, "Race over"));
    assert_fits(nina, 80, 24);

    /* jo asks too: nina is the one they wait for. */
    nmark = nina->len;
    tmark = tom->len;
    client_send(jo, "{\"type\":\"rematch\"}");
    wait_screen(f, nina, nmark, "jo, tom want a rematch: type rematch");
    wait_screen(f, tom, tmark, "Waiting for nina to type rematch");
    nmark = nina->len;
    tt_sends(nina, "rematch\n");
    wait_race_screen(f, nina, nmark);
    assert_null(strstr(f->screen, "Race over"));
}

static void test_quick_on_an_end_screen_shows_the_queue(void **state) {
    fixture *f = *state;
    tt_client *nina = &f->h[0];
    json_t *start;
    timed_race(f, nina, NULL, 2, &start);
    wait_screen(f, nina, 0, "Race over");
    size_t mark = nina->len;
    tt_sends(nina, "quick\n");
    wait_screen(f, nina, mark, "Looking for a 2-player race");
    assert_non_null(strstr(f->screen, "Type leave to stop waiting."));
    assert_null(strstr(f->screen, "Race over"));
    assert_null(strstr(f->screen, "Type solo, quick, create or help."));
    assert_fits(nina, 80, 24);
}

/* ------------------------------------------------------------- 3: help --- */

static void test_help_in_a_game_keeps_the_board(void **state) {
    fixture *f = *state;
    tt_client *nc = &f->h[0], *tn = &f->h[1];
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":3");
    greet(nc, f->srv->port, 0, "nina");
    greet(tn, f->srv->port, 50, "tom");
    size_t nmark = nc->len, tmark = tn->len;
    human_join(nc, code);
    tt_sends(tn, "join ");
    tt_sends(tn, code);
    tt_send(tn, "\r\0", 2);
    wait_race_screen(f, nc, nmark);
    wait_race_screen(f, tn, tmark);

    /* netcat: one line, under the board, on a screen that fits. */
    nmark = nc->len;
    tt_sends(nc, "help\n");
    wait_screen(f, nc, nmark, "In a game: leave, quit");
    eng_board b;
    assert_true(tt_screen_board(f->screen, 0, &b));
    assert_null(strstr(f->screen, "Commands are listed above"));
    assert_fits(nc, 80, 24);

    /* telnet: "help" without ':' plays h and l, and says how to type a
     * command; ":help" shows the one line. */
    tmark = tn->len;
    tt_sends(tn, "help");
    wait_screen(f, tn, tmark, "every key is a move; type : first");
    tmark = tn->len;
    tt_sends(tn, ":help");
    tt_send(tn, "\r\0", 2);
    wait_screen(f, tn, tmark, "In a game type : first");
    assert_true(tt_screen_board(f->screen, 0, &b));
    assert_fits(tn, 50, 24);

    /* Outside a game the whole list, leave, rematch, resume and ':' in it. */
    nmark = nc->len;
    tt_sends(nc, "leave\n");
    wait_screen(f, nc, nmark, "You left");
    nmark = nc->len;
    tt_sends(nc, "help\n");
    wait_screen(f, nc, nmark, "Commands (type one and press Enter):");
    static const char *const must[] = {"leave ",       "rematch ",  "resume CODE",
                                       "type : first", "quick [N]", NULL};
    for (const char *const *m = must; *m; m++)
        if (!strstr(f->screen, *m)) fail_msg("the help lacks %s:\n%s", *m, f->screen);
    assert_fits(nc, 80, 24);
}

static void test_lobby_lists_leave_rematch_and_colon(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 2; i++) {
        tt_client *c = &f->h[i];
        int cols = i ? 50 : 0;
        greet(c, f->srv->port, cols, NULL);
        tt_screen_text(c->buf, c->len, 0, f->screen, SCREEN);
        static const char *const must[] = {"leave",        "rematch",     "resume CODE",
                                           "type : first", "solo [SIZE]", NULL};
        for (const char *const *m = must; *m; m++)
            if (!strstr(f->screen, *m))
                fail_msg("the lobby at %d columns lacks %s:\n%s", cols ? cols : 80, *m,
                         f->screen);
        assert_fits(c, cols ? cols : 80, 24);
    }
}

/* ------------------------------------------------ 4: dropped opponents --- */

static int markers(const char *screen) {
    int n = 0;
    for (const char *p = screen; (p = strstr(p, "connection lost, ")) != NULL; p++)
        n++;
    return n;
}

/* Predicate: board 1 (the first opponent's) differs from *arg. */
static bool board1_differs(const char *screen, void *arg) {
    eng_board b;
    return tt_screen_board(screen, 1, &b) && tt_board_differs(&b, arg);
}

/* Predicate: the screen shows *arg dropped-connection markers. */
static bool has_markers(const char *screen, void *arg) {
    return markers(screen) == *(int *)arg;
}

static void test_dropped_opponents_keep_a_countdown(void **state) {
    fixture *f = *state;
    tt_client *nina = &f->h[0];
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":4");
    client *ann = client_named(f->srv, "ann"), *bo = client_named(f->srv, "bo");
    client_send(ann, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_send(bo, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect(ann, "room", harness_ms(TT_WAIT));
    client_expect(bo, "room", harness_ms(TT_WAIT));
    greet(nina, f->srv->port, 0, "nina");
    size_t mark = nina->len;
    human_join(nina, code);
    wait_race_screen(f, nina, mark);

    /* Both drop: both boards say so, and keep saying so after other news. */
    mark = nina->len;
    client_abort(ann);
    client_abort(bo);
    int two = 2;
    if (!tt_wait_screen(nina, mark, has_markers, &two, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("not two markers:\n%s", f->screen);
    int first = atoi(strstr(f->screen, "connection lost, ") + 17);
    assert_true(first >= 1 && first <= 30);

    /* jo moves: the redraw still shows both markers. */
    client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    client_expect(jo, "player", harness_ms(TT_WAIT));
    client_expect(jo, "player", harness_ms(TT_WAIT));
    eng_board before;
    assert_true(tt_screen_board(f->screen, 1, &before));
    mark = nina->len;
    client_move_any(jo);
    if (!tt_wait_screen(nina, mark, board1_differs, &before, harness_ms(TT_WAIT),
                        f->screen, SCREEN))
        fail_msg("jo's move was not shown:\n%s", f->screen);
    if (markers(f->screen) != 2) fail_msg("after a move, not 2 markers:\n%s", f->screen);
    assert_fits(nina, 80, 24);

    /* The countdown counts down, on its own. */
    char lower[32];
    snprintf(lower, sizeof lower, "connection lost, %d s", first - 1);
    wait_screen(f, nina, mark, lower);
}

/* ----------------------------------------------------------- 5: height --- */

static void test_eight_players_fit_80x24_and_50x24(void **state) {
    fixture *f = *state;
    tt_client *nc = &f->h[0], *tn = &f->h[1];
    client *js[6];
    js[0] = client_named(f->srv, "jo");
    const char *code = json_create(js[0], "\"players\":8");
    for (int i = 1; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "j%d", i);
        js[i] = client_named(f->srv, name);
        client_send(js[i], "{\"type\":\"join\",\"room\":\"%s\"}", code);
        client_expect(js[i], "room", harness_ms(TT_WAIT));
    }
    greet(nc, f->srv->port, 0, "nina");
    greet(tn, f->srv->port, 50, "tom");
    size_t nmark = nc->len, tmark = tn->len;
    human_join(nc, code);
    wait_str(nc, nmark, "Tell a friend");
    wait_str(nc, nmark, "\r\n> ");
    /* The waiting room's screen names all seven and fits too. */
    tt_screen_text(nc->buf, nc->len, nmark, f->screen, SCREEN);
    assert_non_null(strstr(f->screen, "7 of 8 players are here"));
    assert_non_null(strstr(f->screen, "j5"));
    assert_fits(nc, 80, 24);
    tt_sends(tn, "join ");
    tt_sends(tn, code);
    tt_send(tn, "\r\0", 2);
    wait_race_screen(f, nc, nmark);
    wait_race_screen(f, tn, tmark);
    wait_screen(f, nc, nmark, "Enter to move");
    assert_fits(nc, 80, 24);
    /* Everyone is on the screen, in full or in a summary. */
    static const char *const names[] = {"jo", "j1", "j2", "j3", "j4", "j5", "tom", NULL};
    for (const char *const *n = names; *n; n++)
        if (!strstr(f->screen, *n))
            fail_msg("%s is not on the screen:\n%s", *n, f->screen);
    wait_screen(f, tn, tmark, "Ctrl-C quits");
    assert_fits(tn, 50, 24);

    /* A move redraws within the height too. */
    client_expect_skip(js[5], "start", "room", harness_ms(TT_WAIT));
    nmark = nc->len;
    tmark = tn->len;
    client_move_any(js[5]);
    wait_screen(f, nc, nmark, "Enter to move");
    assert_fits(nc, 80, 24);
    wait_screen(f, tn, tmark, "Ctrl-C quits");
    assert_fits(tn, 50, 24);
}

/* ------------------------------------------------------ 6: stuck boards --- */

static void test_stuck_board_says_the_race_goes_on(void **state) {
    fixture *f = *state;
    tt_client *nina = &f->h[0];
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":2,\"size\":3");
    greet(nina, f->srv->port, 0, "nina");
    size_t mark = nina->len;
    human_join(nina, code);
    wait_race_screen(f, nina, mark);
    /* nina plays every direction in turn until her 3x3 board is stuck. */
    const char *stuck = "Your board is stuck; the race goes on until the others finish";
    int64_t deadline = harness_now_ms() + harness_ms(4 * TT_WAIT);
    for (;;) {
        mark = nina->len;
        tt_sends(nina, "wasdwasdwasdwasdwasdwasdwasdwasd\n");
        wait_str(nina, mark, "\r\n");
        if (tt_wait_str(nina, mark, stuck, harness_ms(300)) >= 0) break;
        if (harness_now_ms() > deadline) fail_msg("nina's 3x3 board never got stuck");
    }
    /* A move key now says the same, not "You are not in a game". */
    mark = nina->len;
    tt_sends(nina, "w\n");
    wait_screen(f, nina, mark, stuck);
    assert_null(strstr(f->screen, "You are not in a game"));
    assert_fits(nina, 80, 24);
    /* jo leaves: the end screen does not keep what was said in the race. */
    mark = nina->len;
    client_send(jo, "{\"type\":\"leave\"}");
    wait_screen(f, nina, mark, "Everyone else has gone.");
    assert_non_null(strstr(f->screen, "Race over"));
    assert_null(strstr(f->screen, "stuck"));
    assert_null(strstr(f->screen, "You are not in a game"));
    /* A move on the end screen is told the game is over. */
    mark = nina->len;
    tt_sends(nina, "w\n");
    wait_screen(f, nina, mark, "That game is over.");
    assert_non_null(strstr(f->screen, "Race over"));
    assert_fits(nina, 80, 24);
}

/* --------------------------------------------------- 7: lines and words --- */

static void test_name_says_it_once(void **state) {
    fixture *f = *state;
    tt_client *c = &f->h[0];
    greet(c, f->srv->port, 0, NULL);
    size_t mark = c->len;
    tt_sends(c, "name tom\n");
    wait_screen(f, c, mark, "You are now tom.");
    wait_str(c, mark, "\r\n> ");
    tt_screen_text(c->buf, c->len, mark, f->screen, SCREEN);
    assert_null(strstr(f->screen, "You are tom."));
}

static void test_idle_message_fits_80_columns(void **state) {
    fixture *f = *state;
    tt_client *c = &f->h[0];
    greet(c, f->srv->port, 0, NULL);
    size_t mark = c->len;
    assert_true(tt_wait_eof(c, harness_ms(TT_WAIT)));
    long at = tt_find(c->buf, c->len, mark, "nothing was typed", 17);
    if (at < 0) fail_msg("closed without saying why");
    /* Every line of the goodbye is at most 80 columns. */
    size_t start = mark;
    for (size_t i = mark; i + 1 < c->len; i++) {
        if (c->buf[i] != '\r' || c->buf[i + 1] != '\n') continue;
        if (i - start > 80)
            fail_msg("a line of %zu columns: %.*s", i - start, (int)(i - start),
                     c->buf + start);
        start = i + 2;
    }
}

/* --------------------------------------------------------- 8: resume --- */

/* The resume code on a race screen (plain text), into code. */
static void code_on_screen(const char *screen, char code[16]) {
    const char *at = strstr(screen, "resume ");
    if (!at) fail_msg("no resume code on the race screen:\n%s", screen);
    at += 7;
    size_t n = 0;
    while (n < 15 && ((at[n] >= 'A' && at[n] <= 'Z') || (at[n] >= '0' && at[n] <= '9')))
        n++;
    if (n != 8) fail_msg("a resume code of %zu characters:\n%s", n, screen);
    memcpy(code, at, n);
    code[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strchr("ILOU", code[i])) fail_msg("an ambiguous letter in %s", code);
}

static void test_resume_code_takes_the_seat_back(void **state) {
    fixture *f = *state;
    tt_client *tom = &f->h[0], *back = &f->h[1], *back2 = &f->h[2];
    client *jo = client_named(f->srv, "jo");
    const char *room = json_create(jo, "\"players\":2");
    greet(tom, f->srv->port, 0, "tom");
    size_t mark = tom->len;
    human_join(tom, room);
    wait_race_screen(f, tom, mark);
    wait_screen(f, tom, mark, "Dropped? Connect again within 30 s and type:  resume ");
    char code[16];
    code_on_screen(f->screen, code);
    /* The race screen also shows the start of the commit. */
    json_t *start = client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    char prefix[32];
    snprintf(prefix, sizeof prefix, "commit %.16s", jstr(start, "commit"));
    assert_non_null(strstr(f->screen, prefix));
    tt_assert_crlf_only(tom->buf, tom->len);

    /* A code works only during the grace period. */
    greet(back, f->srv->port, 0, NULL);
    mark = back->len;
    char line[48];
    snprintf(line, sizeof line, "resume %s\n", code);
    tt_sends(back, line);
    wait_screen(f, back, mark, "No seat is waiting for that code");

    tt_close(tom);
    json_t *p = client_expect_skip(jo, "player", "room start state", harness_ms(TT_WAIT));
    assert_false(jbool(p, "connected"));

    /* Wrong codes count against the resume guard: the fifth (the first was
     * the one above) closes the connection (GUARD_RESUME_TRIES), saying why. */
    for (int i = 2; i < 5; i++) {
        mark = back->len;
        tt_sends(back, "resume 2345-6789\n");
        wait_screen(f, back, mark, "No seat is waiting for that code");
    }
    mark = back->len;
    tt_sends(back, "resume 2345-6789\n");
    assert_true(tt_wait_eof(back, harness_ms(TT_WAIT)));
    if (tt_find(back->buf, back->len, mark, "Too many wrong resume codes", 27) < 0)
        fail_msg("closed without saying why");

    /* From a new connection, typed in lower case with a dash: tom's seat,
     * his board, and jo is told. From another address: the guesser's has
     * used up its share of code attempts for a moment (RESUME_ADDR_BURST). */
    greet_from(back2, f->srv->port, 0, NULL, "127.0.0.2");
    char typed[32];
    snprintf(typed, sizeof typed, "resume %.4s-%s\n", code, code + 4);
    for (char *c = typed; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c + 32);
    back = back2;
    mark = back->len;
    tt_sends(back, typed);
    wait_screen(f, back, mark, "tom (you)");
    wait_screen(f, back, mark, "Welcome back, tom");
    p = client_expect_skip(jo, "player", "state", harness_ms(TT_WAIT));
    assert_true(jbool(p, "connected"));
    assert_fits(back, 80, 24);
}

/* A seat restored from the journal after a restart is taken back with the code
 * its player saw before the restart (the server keeps only its token's hash). */
static void test_resume_code_after_restart(void **state) {
    fixture *f = *state;
    tt_client *tom = &f->h[0], *back = &f->h[1];
    client *jo = client_named(f->srv, "jo");
    const char *room = json_create(jo, "\"players\":2");
    greet(tom, f->srv->port, 0, "tom");
    size_t mark = tom->len;
    human_join(tom, room);
    wait_race_screen(f, tom, mark);
    wait_screen(f, tom, mark, "Dropped? Connect again within 30 s and type:  resume ");
    char code[16];
    code_on_screen(f->screen, code);
    /* The game's start is durable, then the server dies. */
    int64_t deadline = harness_now_ms() + harness_ms(TT_WAIT);
    for (;;) {
        FILE *j = fopen(journal_path, "r");
        char buf[4096] = "";
        if (j) {
            buf[fread(buf, 1, sizeof buf - 1, j)] = '\0';
            fclose(j);
        }
        if (strstr(buf, "{\"j\":\"start\"")) break;
        if (harness_remaining(deadline) == 0) fail_msg("no start record in the journal");
        poll(NULL, 0, 10);
    }
    server_kill(f->srv);
    tt_close(tom);
    f->srv = server_start(journal_flags());
    greet(back, f->srv->port, 0, NULL);
    mark = back->len;
    char line[48];
    snprintf(line, sizeof line, "resume %s\n", code);
    tt_sends(back, line);
    wait_screen(f, back, mark, "tom (you)");
    wait_screen(f, back, mark, "Welcome back, tom");
}

static void test_resume_code_expires_with_the_grace(void **state) {
    fixture *f = *state;
    tt_client *tom = &f->h[0], *back = &f->h[1];
    client *jo = client_named(f->srv, "jo");
    const char *room = json_create(jo, "\"players\":3");
    client *al = client_named(f->srv, "al");
    client_send(al, "{\"type\":\"join\",\"room\":\"%s\"}", room);
    client_expect(al, "room", harness_ms(TT_WAIT));
    greet(tom, f->srv->port, 0, "tom");
    size_t mark = tom->len;
    human_join(tom, room);
    wait_screen(f, tom, mark, "Dropped? Connect again within 2 s and type:  resume ");
    char code[16];
    code_on_screen(f->screen, code);
    greet(back, f->srv->port, 0, NULL);
    tt_close(tom);
    /* Given up after 2 s: jo hears tom left. */
    for (;;) {
        json_t *p =
            client_expect_skip(jo, "player", "room start state", harness_ms(TT_WAIT));
        if (!strcmp(jstr(p, "status"), "left")) break;
    }
    mark = back->len;
    char line[48];
    snprintf(line, sizeof line, "resume %s\n", code);
    tt_sends(back, line);
    wait_screen(f, back, mark, "No seat is waiting for that code");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rematch_pending_is_shown_to_both, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_quick_on_an_end_screen_shows_the_queue,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_in_a_game_keeps_the_board, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lobby_lists_leave_rematch_and_colon, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dropped_opponents_keep_a_countdown, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_eight_players_fit_80x24_and_50x24, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stuck_board_says_the_race_goes_on, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_name_says_it_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_message_fits_80_columns,
                                        setup_short_idle, teardown),
        cmocka_unit_test_setup_teardown(test_resume_code_after_restart, setup_journal,
                                        teardown_journal),
        cmocka_unit_test_setup_teardown(test_resume_code_takes_the_seat_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resume_code_expires_with_the_grace,
                                        setup_short_grace, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
