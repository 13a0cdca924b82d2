/* test_text_tmux.c - the real telnet and nc inside tmux against race2048d: what a human
 * sees.
 *
 * Each test has its own tmux server (tmux -L <unique>), killed at the end,
 * and its own race2048d. Every wait polls the pane until a deadline.
 * TT_RECORD_SESSION=FILE makes test_race_netcat_against_telnet write both
 * panes there (tests/text/recorded-session.txt was made so).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tt.h"

#define PANE 16384

typedef struct fixture {
    th_server *srv;
    tt_tmux tmux;
    tt_client json;
    char pane[PANE];
    char other[PANE];
} fixture;

static int setup(void **state) {
    tt_require_tools();
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->json.fd = -1;
    *state = f;
    tt_tmux_init(&f->tmux);
    f->srv = server_start(NULL);
    return 0;
}

/* Kills the panes first (their clients disconnect), then stops the server;
 * a crash, a sanitizer report or a leak in the server fails the test. */
static int teardown(void **state) {
    fixture *f = *state;
    tt_tmux_kill(&f->tmux);
    tt_close(&f->json);
    free(f);
    return harness_teardown(state);
}

/* ------------------------------------------------------------- helpers --- */

/* Waits for needle in the pane; fails showing the pane if it never comes. */
static void expect(fixture *f, const char *pane, const char *needle) {
    if (!tt_tmux_wait_str(&f->tmux, pane, needle, harness_ms(TT_WAIT), f->pane, PANE))
        fail_msg("pane %s never showed \"%s\"; it shows:\n%s", pane, needle, f->pane);
}

/* Starts a client in a new pane and waits for the lobby's greeting. */
static void open_client(fixture *f, const char *pane, const char *prog, int cols,
                        int rows) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s 127.0.0.1 %d", prog, f->srv->port);
    tt_tmux_open(&f->tmux, pane, cols, rows, cmd);
    expect(f, pane, "You are player-");
}

/* Types a command line and Enter. */
static void say(fixture *f, const char *pane, const char *line) {
    tt_tmux_type(&f->tmux, pane, line);
    tt_tmux_key(&f->tmux, pane, "Enter");
}

static const char *arrow_key(eng_dir d) {
    return d == ENG_UP      ? "Up"
           : d == ENG_DOWN  ? "Down"
           : d == ENG_RIGHT ? "Right"
                            : "Left";
}

static const char *dir_letter(eng_dir d) {
    return d == ENG_UP ? "w" : d == ENG_DOWN ? "s" : d == ENG_RIGHT ? "d" : "a";
}

/* A direction that changes b, tried in another order than tt_movable_dir()
 * so that the two racers' boards part ways. */
static eng_dir other_dir(const eng_board *b) {
    static const eng_dir order[] = {ENG_UP, ENG_LEFT, ENG_DOWN, ENG_RIGHT};
    return tt_movable_dir_in(b, order);
}

/* Waits until board k on the pane shows exactly n moves; the pane is left in out. */
static void expect_moves(fixture *f, const char *pane, int k, int n, char *out) {
    tt_moves m = {k, n};
    if (!tt_tmux_wait(&f->tmux, pane, tt_has_moves, &m, harness_ms(TT_WAIT), out, PANE))
        fail_msg("board %d on pane %s never showed %d moves:\n%s", k, pane, n, out);
    int got = tt_screen_moves(out, k);
    if (got != n)
        fail_msg("board %d on pane %s shows %d moves, not %d:\n%s", k, pane, got, n, out);
}

/* The board k on a pane; fails if there is none. */
static eng_board board_of(const char *pane, int k) {
    eng_board b;
    if (!tt_screen_board(pane, k, &b)) fail_msg("no board %d on the pane:\n%s", k, pane);
    return b;
}

/* The first line of a pane: nothing of the screen scrolled away. */
static bool first_line_is(const char *pane, const char *text) {
    return strncmp(pane, text, strlen(text)) == 0 && pane[strlen(text)] == '\n';
}

/* Fails unless the pane shows every text in must (NULL-terminated); the
 * message names the screen (`what`) and the first text it lacks. */
static void expect_all(const char *pane, const char *const *must, const char *what) {
    for (; *must; must++)
        if (!strstr(pane, *must)) fail_msg("%s lacks \"%s\":\n%s", what, *must, pane);
}

/* Checks what the lobby must show (the rules and the commands). */
static void check_welcome(fixture *f, const char *pane) {
    expect(f, pane, "\n>"); /* the prompt; tmux drops the space after it */
    static const char *const must[] = {"race2048 - race your friends at 2048",
                                       "Slide the tiles",
                                       "equal tiles merge",
                                       "solo [SIZE]",
                                       "create [N]",
                                       "join CODE",
                                       "quit",
                                       "You are player-",
                                       NULL};
    char what[64];
    snprintf(what, sizeof what, "the welcome on %s", pane);
    expect_all(f->pane, must, what);
    if (!first_line_is(f->pane, "race2048 - race your friends at 2048"))
        fail_msg("the welcome on %s does not start at the top line:\n%s", pane, f->pane);
    tt_assert_clean_pane(f->pane, pane);
}

/* Writes a pane's text without its trailing blank lines. */
static void write_pane(FILE *out, const char *title, const char *pane) {
    size_t n = strlen(pane);
    while (n > 0 && (pane[n - 1] == '\n' || pane[n - 1] == ' '))
        n--;
    fprintf(out, "%s\n\n%.*s\n", title, (int)n, pane);
}

/* ------------------------------------------------------------- welcome --- */

static void test_welcome_on_telnet(void **state) {
    fixture *f = *state;
    open_client(f, "tn", "telnet", 100, 30);
    check_welcome(f, "tn");
    /* telnet's own "Trying ... Connected ..." lines were cleared away. */
    assert_null(strstr(f->pane, "Connected to"));
}

static void test_welcome_on_netcat_fits_80x24(void **state) {
    fixture *f = *state;
    open_client(f, "nc", "nc", 80, 24);
    check_welcome(f, "nc");
}

/* ----------------------------------------------------------- character --- */

static void test_telnet_arrow_moves_without_enter(void **state) {
    fixture *f = *state;
    open_client(f, "tn", "telnet", 100, 30);
    say(f, "tn", "solo");
    expect_moves(f, "tn", 0, 0, f->pane);
    eng_board before = board_of(f->pane, 0);
    int moves = 0;
    eng_board right = before;
    if (!eng_move(&right, ENG_RIGHT, NULL, NULL)) {
        /* Right would not change this board: Left first, after which (two
         * tiles and a spawn) Right always does. */
        tt_tmux_key(&f->tmux, "tn", "Left");
        expect_moves(f, "tn", 0, ++moves, f->pane);
        before = board_of(f->pane, 0);
    }
    tt_tmux_key(&f->tmux, "tn", "Right"); /* and no Enter */
    expect_moves(f, "tn", 0, moves + 1, f->pane);
    eng_board after = board_of(f->pane, 0);
    if (!tt_board_differs(&before, &after))
        fail_msg("the board did not change after Right:\n%s", f->pane);
    assert_non_null(strstr(f->pane, "Ctrl-C quits"));
    tt_assert_clean_pane(f->pane, "tn");
    /* The key was not echoed as text. */
    assert_null(strstr(f->pane, "[A"));
    assert_null(strstr(f->pane, "[B"));
    assert_null(strstr(f->pane, "[C"));
    assert_null(strstr(f->pane, "[D"));
}

/* ---------------------------------------------------------------- race --- */

/* nc (nina) creates a room, telnet (tom) joins it; both see both boards.
 * Writes the room code to code. */
static void start_race(fixture *f, int cols, int rows, bool color_off, char code[16]) {
    open_client(f, "nc", "nc", cols, rows);
    open_client(f, "tn", "telnet", cols, rows);
    say(f, "nc", "name nina");
    expect(f, "nc", "You are now nina.");
    say(f, "tn", "name tom");
    expect(f, "tn", "You are now tom.");
    if (color_off) {
        say(f, "nc", "color off");
        expect(f, "nc", "Colour is off.");
        say(f, "tn", "color off");
        expect(f, "tn", "Colour is off.");
    }
    say(f, "nc", "create");
    expect(f, "nc", "Tell a friend to type:  join ");
    const char *hint = strstr(f->pane, "Tell a friend to type:");
    if (!hint) fail_msg("no room code on the creator's screen:\n%s", f->pane);
    hint = strstr(hint, "join ") + 5;
    size_t n = 0;
    while (n < 15 &&
           ((hint[n] >= 'A' && hint[n] <= 'Z') || (hint[n] >= '0' && hint[n] <= '9')))
        n++;
    if (n < 4) fail_msg("a room code of %zu characters:\n%s", n, f->pane);
    memcpy(code, hint, n);
    code[n] = '\0';

    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    say(f, "tn", line);
    char title[32];
    snprintf(title, sizeof title, "room %s", code);
    expect(f, "tn", title);
    expect_moves(f, "tn", 1, 0, f->pane);
    if (!strstr(f->pane, "tom (you)") || !strstr(f->pane, "nina"))
        fail_msg("telnet does not show both players:\n%s", f->pane);
    expect(f, "nc", title);
    expect_moves(f, "nc", 1, 0, f->pane);
    if (!strstr(f->pane, "nina (you)") || !strstr(f->pane, "tom"))
        fail_msg("netcat does not show both players:\n%s", f->pane);
}

static void test_race_netcat_against_telnet(void **state) {
    fixture *f = *state;
    char code[16];
    start_race(f, 80, 24, true, code);

    /* tom presses a key: nina sees his board move, without anyone pressing Enter. */
    tt_tmux_capture(&f->tmux, "tn", f->pane, PANE);
    eng_board tom = board_of(f->pane, 0);
    tt_tmux_key(&f->tmux, "tn", arrow_key(tt_movable_dir(&tom)));
    expect_moves(f, "nc", 1, 1, f->other);
    eng_board seen = board_of(f->other, 1);
    if (!tt_board_differs(&tom, &seen))
        fail_msg("nina sees tom's board unchanged:\n%s", f->other);
    expect_moves(f, "tn", 0, 1, f->pane);
    eng_board own = board_of(f->pane, 0);
    if (tt_board_differs(&own, &seen))
        fail_msg("tom's board differs between the screens:\n%s\n%s", f->pane, f->other);

    /* nina types moves and Enter: tom sees them. */
    eng_board nina = board_of(f->other, 0);
    say(f, "nc", dir_letter(other_dir(&nina)));
    expect_moves(f, "tn", 1, 1, f->pane);
    expect_moves(f, "nc", 0, 1, f->other);
    seen = board_of(f->pane, 1);
    own = board_of(f->other, 0);
    if (!tt_board_differs(&nina, &own) || tt_board_differs(&own, &seen))
        fail_msg("nina's board differs between the screens:\n%s\n%s", f->pane, f->other);

    /* A few more moves each, for the record. */
    for (int i = 2; i <= 4; i++) {
        tt_tmux_capture(&f->tmux, "tn", f->pane, PANE);
        tom = board_of(f->pane, 0);
        tt_tmux_key(&f->tmux, "tn", arrow_key(tt_movable_dir(&tom)));
        expect_moves(f, "nc", 1, i, f->other);
        nina = board_of(f->other, 0);
        say(f, "nc", dir_letter(other_dir(&nina)));
        expect_moves(f, "tn", 1, i, f->pane);
        expect_moves(f, "nc", 0, i, f->other);
    }
    expect_moves(f, "tn", 0, 4, f->pane);
    tt_assert_clean_pane(f->pane, "tn");
    tt_assert_clean_pane(f->other, "nc");
    const char *record = getenv("TT_RECORD_SESSION");
    if (record && *record) {
        FILE *out = fopen(record, "w");
        if (!out) fail_msg("cannot write %s", record);
        write_pane(out, "$ telnet HOST PORT    (tom; 80x24, after `color off`)", f->pane);
        fprintf(out, "\n");
        write_pane(out, "$ nc HOST PORT        (nina; 80x24, after `color off`)",
                   f->other);
        fclose(out);
    }

    /* nina leaves: tom wins by forfeit, and both end screens say so. */
    say(f, "nc", "leave");
    expect(f, "nc", "You left the race.");
    if (!strstr(f->pane, "tom wins"))
        fail_msg("nina's screen lacks the verdict after her leave:\n%s", f->pane);
    expect(f, "tn", "Race over");
    static const char *const must[] = {
        "tom wins", "everyone else left", "1. tom", "2. nina", "score", "seed ", "salt ",
        NULL};
    expect_all(f->pane, must, "tom's end screen");
    tt_assert_clean_pane(f->pane, "tn");
    tt_tmux_capture(&f->tmux, "nc", f->other, PANE);
    tt_assert_clean_pane(f->other, "nc");
}

/* ------------------------------------------------------------ the end --- */

static void test_solo_3_played_to_the_end_screen(void **state) {
    fixture *f = *state;
    open_client(f, "nc", "nc", 100, 30);
    say(f, "nc", "solo 3");
    expect_moves(f, "nc", 0, 0, f->pane);
    /* Every direction in turn: some always moves until the board is stuck. */
    int64_t deadline = harness_now_ms() + harness_ms(4 * TT_WAIT);
    while (
        !tt_tmux_wait_str(&f->tmux, "nc", "Game over", harness_ms(300), f->pane, PANE)) {
        if (harness_now_ms() > deadline)
            fail_msg("the 3x3 game never ended:\n%s", f->pane);
        say(f, "nc", "wasdwasdwasdwasdwasdwasdwasdwasd");
    }
    expect(f, "nc", "Type solo, quick, create or help.");
    static const char *const must[] = {"Game over: no moves left",
                                       "1. player-",
                                       "(you)",
                                       "over",
                                       "score",
                                       "seed ",
                                       "salt ",
                                       NULL};
    expect_all(f->pane, must, "the end screen");
    eng_board b = board_of(f->pane, 0);
    assert_int_equal(b.size, 3);
    assert_true(eng_is_over(&b));
    tt_assert_clean_pane(f->pane, "nc");
}

/* Issue 29: on telnet, keys pressed once the board is stuck do not pile up
 * in the command line: `leave`, as the hint says, leaves; Ctrl-U clears
 * what was typed. */
static void test_stuck_telnet_racer_can_leave(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    client_send(jo, "{\"type\":\"create\",\"players\":2,\"size\":3}");
    const char *code = jstr(client_expect(jo, "room", harness_ms(TT_WAIT)), "room");
    open_client(f, "p", "telnet", 80, 24);
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    say(f, "p", line);
    expect(f, "p", "Arrows / wasd / hjkl move at once");
    int64_t deadline = harness_now_ms() + harness_ms(4 * TT_WAIT);
    while (!tt_tmux_wait_str(&f->tmux, "p", "Your board is stuck", harness_ms(300),
                             f->pane, PANE)) {
        if (harness_now_ms() > deadline)
            fail_msg("the 3x3 board never got stuck:\n%s", f->pane);
        tt_tmux_type(&f->tmux, "p", "wasdwasdwasdwasd");
    }
    tt_tmux_type(&f->tmux, "p", "dsawdsawdzz");
    tt_tmux_key(&f->tmux, "p", "C-u");
    say(f, "p", "leave");
    expect(f, "p", "You left");
    if (strstr(f->pane, "unknown command"))
        fail_msg("leave was not understood:\n%s", f->pane);
    tt_assert_clean_pane(f->pane, "telnet");
}

/* ---------------------------------------------------------------- quit --- */

static bool pane_dead(const char *pane, void *arg) {
    fixture *f = arg;
    (void)pane;
    return tt_tmux_dead(&f->tmux, "p");
}

static void test_quit_on_telnet_closes_it(void **state) {
    fixture *f = *state;
    open_client(f, "p", "telnet", 100, 30);
    say(f, "p", "quit");
    expect(f, "p", "Connection closed by foreign host.");
    assert_non_null(strstr(f->pane, "Goodbye!"));
    if (!tt_tmux_wait(&f->tmux, "p", pane_dead, f, harness_ms(TT_WAIT), f->pane, PANE))
        fail_msg("telnet did not exit after quit:\n%s", f->pane);
    tt_assert_clean_pane(f->pane, "telnet after quit");
}

static void test_quit_on_netcat_says_press_enter(void **state) {
    fixture *f = *state;
    open_client(f, "p", "nc", 80, 24);
    say(f, "p", "quit");
    expect(f, "p", "Goodbye! (press Enter to close netcat)");
    tt_assert_clean_pane(f->pane, "netcat after quit");
    /* netcat notices the closed connection at the next line it sends. */
    tt_tmux_key(&f->tmux, "p", "Enter");
    if (!tt_tmux_wait(&f->tmux, "p", pane_dead, f, harness_ms(TT_WAIT), f->pane, PANE))
        fail_msg("nc did not exit after quit and Enter:\n%s", f->pane);
}

/* ---------------------------------------------------------------- JSON --- */

/* Every byte the JSON client got is compact JSON lines: '{' ... '}' '\n'. */
static void check_json_only(const tt_client *c) {
    size_t start = 0;
    for (size_t i = 0; i < c->len; i++) {
        unsigned char ch = (unsigned char)c->buf[i];
        if (ch == 0x1b || ch == 0xff || ch == '\r')
            fail_msg("the JSON client got byte 0x%02x at %zu", ch, i);
        if (ch != '\n') continue;
        if (c->buf[start] != '{' || i == start || c->buf[i - 1] != '}')
            fail_msg("the JSON client got a line that is not an object: %.*s",
                     (int)(i - start), c->buf + start);
        start = i + 1;
    }
}

static void test_json_client_beside_humans_gets_json_only(void **state) {
    fixture *f = *state;
    tt_client *j = &f->json;
    tt_connect(j, f->srv->port);
    tt_sends(j, "{\"type\":\"ping\",\"t\":5}\n");
    if (tt_wait_str(j, 0, "{\"type\":\"pong\",\"t\":5}\n", harness_ms(TT_WAIT)) < 0)
        fail_msg("no pong for the JSON client");
    assert_int_equal(tt_find(j->buf, j->len, 0, "{\"type\":\"welcome\"", 17), 0);

    char code[16];
    start_race(f, 100, 30, false, code);
    char watch[64];
    snprintf(watch, sizeof watch, "{\"type\":\"watch\",\"room\":\"%s\"}\n", code);
    size_t mark = j->len;
    tt_sends(j, watch);
    if (tt_wait_str(j, mark, "{\"type\":\"start\"", harness_ms(TT_WAIT)) < 0)
        fail_msg("the JSON spectator got no start");
    /* A human's key reaches the JSON spectator as a state line. */
    tt_tmux_capture(&f->tmux, "tn", f->pane, PANE);
    eng_board tom = board_of(f->pane, 0);
    mark = j->len;
    tt_tmux_key(&f->tmux, "tn", arrow_key(tt_movable_dir(&tom)));
    if (tt_wait_str(j, mark, "{\"type\":\"state\"", harness_ms(TT_WAIT)) < 0)
        fail_msg("the JSON spectator got no state for tom's move");
    tt_wait_str(j, mark, "}\n", harness_ms(TT_WAIT));
    /* Its connection was never judged a human. */
    check_json_only(j);
    expect_moves(f, "nc", 1, 1, f->other);
    tt_assert_clean_pane(f->other, "nc");
}

/* ---------------------------------------------------- fitting the screen --- */

/* A room for `players` made by a JSON client jo, with JSON players j1, j2,
 * ... seated in all but `humans` seats (js[0] is jo); returns its code. */
static const char *json_room(fixture *f, int players, int humans, client **js) {
    client *jo = client_named(f->srv, "jo");
    client_send(jo, "{\"type\":\"create\",\"players\":%d}", players);
    const char *code = jstr(client_expect(jo, "room", harness_ms(TT_WAIT)), "room");
    js[0] = jo;
    for (int i = 1; i < players - humans; i++) {
        char name[8];
        snprintf(name, sizeof name, "j%d", i);
        js[i] = client_named(f->srv, name);
        client_send(js[i], "{\"type\":\"join\",\"room\":\"%s\"}", code);
        client_expect(js[i], "room", harness_ms(TT_WAIT));
    }
    return code;
}

/* Predicate: the pane starts with the race title (nothing scrolled off the
 * top) and shows the viewer's board. */
static bool race_on_top(const char *pane, void *arg) {
    (void)arg;
    eng_board b;
    return strncmp(pane, "race2048  room ", 15) == 0 && strstr(pane, "(you)") &&
           tt_screen_board(pane, 0, &b);
}

static void expect_race_on_top(fixture *f, const char *pane) {
    if (!tt_tmux_wait(&f->tmux, pane, race_on_top, NULL, harness_ms(TT_WAIT), f->pane,
                      PANE))
        fail_msg("pane %s does not show the race from its top line:\n%s", pane, f->pane);
}

/* Eight racers: telnet at 80x24 and at 50x24 keep the title and their own
 * board on screen, everyone named (boards or one-line summaries). */
static void test_eight_players_fit_80x24_and_50_columns(void **state) {
    fixture *f = *state;
    client *js[8];
    const char *code = json_room(f, 8, 2, js);
    open_client(f, "wide", "telnet", 80, 24);
    open_client(f, "narrow", "telnet", 50, 24);
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    say(f, "wide", line);
    expect(f, "wide", "Tell a friend");
    say(f, "narrow", line);
    const char *panes[2] = {"wide", "narrow"};
    for (int i = 0; i < 2; i++) {
        expect_race_on_top(f, panes[i]);
        expect(f, panes[i], "Ctrl-C quits");
        static const char *const names[] = {"jo", "j1", "j2", "j3", "j4", "j5", NULL};
        expect_all(f->pane, names, panes[i]);
        tt_assert_clean_pane(f->pane, panes[i]);
    }
    /* A key plays, and the redraw still starts at the top. */
    eng_board b = board_of(f->pane, 0);
    tt_tmux_key(&f->tmux, "narrow", arrow_key(tt_movable_dir(&b)));
    expect_race_on_top(f, "narrow");
}

/* help in a game (netcat 80x24, telnet 50x24) keeps the board on screen. */
static void test_help_in_a_game_fits_80x24_and_50_columns(void **state) {
    fixture *f = *state;
    client *js[3];
    const char *code = json_room(f, 3, 2, js);
    open_client(f, "nc", "nc", 80, 24);
    open_client(f, "tn", "telnet", 50, 24);
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    say(f, "nc", line);
    expect(f, "nc", "Tell a friend");
    say(f, "tn", line);
    expect_race_on_top(f, "nc");
    expect_race_on_top(f, "tn");

    say(f, "nc", "help");
    expect(f, "nc", "In a game: leave, quit");
    expect_race_on_top(f, "nc");
    assert_null(strstr(f->pane, "Commands are listed above"));

    tt_tmux_type(&f->tmux, "tn", ":help");
    tt_tmux_key(&f->tmux, "tn", "Enter");
    expect(f, "tn", "In a game type : first");
    expect_race_on_top(f, "tn");
    tt_assert_clean_pane(f->pane, "tn");
    /* Nothing wider than the pane was cut by the terminal: the hint's words
     * are whole. */
    assert_non_null(strstr(f->pane, "Ctrl-C quits."));
}

/* A dropped opponent's board says so, with its countdown, at 80x24. */
static void test_dropped_opponent_marker_on_telnet(void **state) {
    fixture *f = *state;
    client *js[2];
    const char *code = json_room(f, 2, 1, js);
    open_client(f, "tn", "telnet", 80, 24);
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    say(f, "tn", line);
    expect_race_on_top(f, "tn");
    client_abort(js[0]);
    expect(f, "tn", "connection lost, ");
    expect_race_on_top(f, "tn");
    tt_assert_clean_pane(f->pane, "tn");
}

/* Predicate: the pane's first line is the race title and it shows the
 * viewer's 8x8 board whole. */
static bool solo8_on_top(const char *pane, void *arg) {
    (void)arg;
    eng_board b;
    return strncmp(pane, "race2048  solo", 14) == 0 && tt_screen_board(pane, 0, &b) &&
           b.size == 8;
}

/* The real telnet in panes of 40x12, 60x20, 80x24 and 160x50: the lobby,
 * history and an 8x8 solo game keep their first line on the pane's top line
 * (nothing scrolled away), and the board is whole. */
static void test_screens_keep_their_top_at_every_size(void **state) {
    fixture *f = *state;
    static const int sizes[][2] = {{40, 12}, {60, 20}, {80, 24}, {160, 50}};
    /* Ten races between long names for the history to list. */
    for (int i = 0; i < 10; i++) {
        client *a = client_named(f->srv, "abcdefghijklmnop");
        client *b = client_named(f->srv, "qrstuvwxyz-12345");
        client_send(a, "{\"type\":\"create\",\"players\":2}");
        const char *code = jstr(client_expect(a, "room", harness_ms(TT_WAIT)), "room");
        client_send(b, "{\"type\":\"join\",\"room\":\"%s\"}", code);
        client_expect_skip(a, "start", "room", harness_ms(TT_WAIT));
        client_move_any(a);
        client_send(a, "{\"type\":\"leave\"}");
        client_expect_skip(a, "end", "state player", harness_ms(TT_WAIT));
        client_expect_skip(b, "end", "start state player room", harness_ms(TT_WAIT));
        client_close(a);
        client_close(b);
    }
    for (int i = 0; i < 4; i++) {
        char pane[16];
        snprintf(pane, sizeof pane, "s%d", i);
        open_client(f, pane, "telnet", sizes[i][0], sizes[i][1]);
        expect(f, pane, "\n>");
        if (!first_line_is(f->pane, "race2048 - race your friends at 2048"))
            fail_msg("%dx%d: the lobby lost its top line:\n%s", sizes[i][0], sizes[i][1],
                     f->pane);
        say(f, pane, "history");
        expect(f, pane, "Recently finished games");
        expect(f, pane, "\n>");
        expect(f, pane, "#10");
        /* No name cut in two by the terminal's wrapping. */
        for (const char *p = f->pane; (p = strstr(p, "abcdefg")) != NULL; p++)
            if (strncmp(p, "abcdefghijklmnop", 16) != 0)
                fail_msg("%dx%d: a name is cut:\n%s", sizes[i][0], sizes[i][1], f->pane);
        if (!first_line_is(f->pane, "race2048 - race your friends at 2048"))
            fail_msg("%dx%d: history lost the top line:\n%s", sizes[i][0], sizes[i][1],
                     f->pane);
        say(f, pane, "solo 8");
        if (!tt_tmux_wait(&f->tmux, pane, solo8_on_top, NULL, harness_ms(TT_WAIT),
                          f->pane, PANE))
            fail_msg("%dx%d: no whole 8x8 board under the title:\n%s", sizes[i][0],
                     sizes[i][1], f->pane);
        tt_assert_clean_pane(f->pane, pane);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_welcome_on_telnet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_welcome_on_netcat_fits_80x24, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_telnet_arrow_moves_without_enter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_race_netcat_against_telnet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_solo_3_played_to_the_end_screen, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stuck_telnet_racer_can_leave, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_quit_on_telnet_closes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quit_on_netcat_says_press_enter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_json_client_beside_humans_gets_json_only,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_eight_players_fit_80x24_and_50_columns,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_in_a_game_fits_80x24_and_50_columns,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_opponent_marker_on_telnet, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_screens_keep_their_top_at_every_size, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
