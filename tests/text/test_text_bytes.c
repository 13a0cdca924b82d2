/* test_text_bytes.c - text mode byte by byte over raw sockets: probe, greeting, keys,
 * telnet, line ends, late JSON, limits, shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tt.h"

#define SCREEN 16384

typedef struct fixture {
    th_server *srv;
    tt_client c[3];
    char screen[SCREEN];
} fixture;

static int setup_with(void **state, const char *const *extra) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    for (int i = 0; i < 3; i++)
        f->c[i].fd = -1;
    *state = f;
    f->srv = server_start(extra);
    return 0;
}

static int setup(void **state) {
    return setup_with(state, NULL);
}

static int setup_short_lines(void **state) {
    return setup_with(state, (const char *const[]){"--max-line", "100", NULL});
}

/* Stops the server; a crash, a sanitizer report or a leak fails the test. */
static int teardown(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 3; i++)
        tt_close(&f->c[i]);
    free(f);
    return harness_teardown(state);
}

/* ------------------------------------------------------------- helpers --- */

/* Waits for the lobby's prompt after `from`: the greeting (or a redraw) is complete. */
static void wait_prompt(tt_client *c, size_t from) {
    long clear = tt_wait_str(c, from, TT_CLEAR, harness_ms(TT_WAIT));
    if (clear < 0) fail_msg("no screen came (got %zu bytes)", c->len);
    if (tt_wait_str(c, (size_t)clear, "\r\n> ", harness_ms(TT_WAIT)) < 0)
        fail_msg("the screen has no prompt");
}

/* A netcat: connects, says nothing, and is greeted after the probe. */
static void greet_silent(tt_client *c, int port) {
    tt_connect(c, port);
    wait_prompt(c, 0);
}

/* A telnet with an explicit port: says nothing, answers the probe like
 * inetutils-telnet, and is greeted in character mode. */
static void greet_telnet(tt_client *c, int port) {
    tt_connect(c, port);
    if (tt_wait_for(c, 0, TT_PROBE_DCS, TT_PROBE_DCS_LEN, harness_ms(TT_WAIT)) != 0)
        fail_msg("a silent client did not get the DCS probe first");
    tt_send(c, TT_TELNET_ANSWER, TT_TELNET_ANSWER_LEN);
    wait_prompt(c, TT_PROBE_DCS_LEN);
}

/* Waits for a screen (after `from`) whose own board shows n moves; returns it in
 * f->screen. */
static void wait_moves(fixture *f, tt_client *c, size_t from, int n) {
    tt_moves m = {0, n};
    if (!tt_wait_screen(c, from, tt_has_moves, &m, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("no screen with %d moves came; the last one:\n%s", n, f->screen);
    int got = tt_screen_moves(f->screen, 0);
    if (got != n)
        fail_msg("expected %d moves, the screen shows %d:\n%s", n, got, f->screen);
}

/* Starts a solo game and returns its first board. */
static eng_board start_solo(fixture *f, tt_client *c, const char *solo_line) {
    size_t mark = c->len;
    tt_sends(c, solo_line);
    wait_moves(f, c, mark, 0);
    eng_board b;
    if (!tt_screen_board(f->screen, 0, &b)) fail_msg("no board on:\n%s", f->screen);
    return b;
}

static char dir_letter(eng_dir d) {
    return d == ENG_LEFT ? 'a' : d == ENG_RIGHT ? 'd' : d == ENG_UP ? 'w' : 's';
}

static char dir_arrow(eng_dir d) {
    return d == ENG_UP ? 'A' : d == ENG_DOWN ? 'B' : d == ENG_RIGHT ? 'C' : 'D';
}

static eng_dir opposite(eng_dir d) {
    return d == ENG_LEFT    ? ENG_RIGHT
           : d == ENG_RIGHT ? ENG_LEFT
           : d == ENG_UP    ? ENG_DOWN
                            : ENG_UP;
}

/* Sends bytes in two writes, the first of `cut` bytes (0: one write), with a
 * short pause between them so that the server most likely reads them apart. */
static void send_cut(tt_client *c, const char *data, size_t n, size_t cut) {
    if (cut == 0 || cut >= n) {
        tt_send(c, data, n);
        return;
    }
    tt_send(c, data, cut);
    tt_send_split(c, data + cut, n - cut, n - cut, 2000);
}

/* Sends one key (n bytes, cut as send_cut) that plays a move changing the
 * board, and checks the redraw: one more move, a different board, and
 * nothing echoed before the redraw. */
static eng_board key_move(fixture *f, tt_client *c, const eng_board *before, int moves,
                          const char *keys, size_t n, size_t cut) {
    size_t mark = c->len;
    send_cut(c, keys, n, cut);
    wait_moves(f, c, mark, moves + 1);
    eng_board after;
    assert_true(tt_screen_board(f->screen, 0, &after));
    assert_true(tt_board_differs(before, &after));
    if (tt_find(c->buf, c->len, mark, TT_CLEAR, 7) != (long)mark)
        fail_msg("bytes before the redraw (a move key echoed?): the key was %02x...",
                 (unsigned char)keys[0]);
    return after;
}

/* --------------------------------------------------------------- probe --- */

static void test_silent_client_gets_probe_then_greeting(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    assert_memory_equal(c->buf, TT_PROBE_DCS, TT_PROBE_DCS_LEN);
    /* The greeting follows the probe directly and starts a fresh screen. */
    assert_int_equal(tt_find(c->buf, c->len, 0, TT_CLEAR, 7), TT_PROBE_DCS_LEN);
    assert_true(tt_find(c->buf, c->len, 0, "race2048 - race your friends at 2048", 36) >
                0);
    assert_true(tt_find(c->buf, c->len, 0, "You are player-", 15) > 0);
    /* A netcat never sees telnet bytes after the invisible probe. */
    assert_int_equal(tt_find(c->buf, c->len, TT_PROBE_DCS_LEN, "\xff", 1), -1);
    tt_assert_crlf_only(c->buf, c->len);
}

static void test_telnet_first_gets_plain_offer(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    tt_connect(c, f->srv->port);
    tt_send(c, TT_TELNET_ANSWER, TT_TELNET_ANSWER_LEN);
    wait_prompt(c, 0);
    assert_memory_equal(c->buf, TT_OFFER, TT_OFFER_LEN);
    assert_int_equal(tt_find(c->buf, c->len, 0, TT_CLEAR, 7), TT_OFFER_LEN);
    tt_assert_crlf_only(c->buf, c->len);
    tt_assert_iac_valid(c->buf, c->len);
}

/* ----------------------------------------------------- character mode --- */

static void test_telnet_answer_then_one_key_is_one_move(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_telnet(c, f->srv->port);
    /* Outside a game a command line is typed, echoed by the server, and
     * ended by telnet's Enter (\r\0). */
    size_t mark = c->len;
    tt_send(c, "solo\r\0", 6);
    if (tt_wait_str(c, mark, "solo\r\n", harness_ms(TT_WAIT)) != (long)mark)
        fail_msg("the typed command line was not echoed");
    wait_moves(f, c, mark, 0);
    eng_board b;
    assert_true(tt_screen_board(f->screen, 0, &b));
    /* The key is 'd' (right); if right would not change this board, 'a'
     * first, after which (two tiles and a spawn) right always does. */
    int moves = 0;
    eng_board right = b;
    if (!eng_move(&right, ENG_RIGHT, NULL, NULL))
        b = key_move(f, c, &b, moves++, "a", 1, 0);
    key_move(f, c, &b, moves, "d", 1, 0);
    tt_assert_crlf_only(c->buf, c->len);
    tt_assert_iac_valid(c->buf, c->len);
}

static void test_arrow_keys_csi_ss3_and_split(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_telnet(c, f->srv->port);
    eng_board b = start_solo(f, c, "solo\r\0");
    /* Two arrows in one write are two moves: a direction that moves, then
     * its opposite (on the first board, of at most three tiles packed to
     * one side, the opposite always moves too). */
    eng_dir d = tt_movable_dir(&b);
    char two[6] = {'\x1b', '[', dir_arrow(d), '\x1b', 'O', dir_arrow(opposite(d))};
    size_t mark = c->len;
    tt_send(c, two, sizeof two);
    wait_moves(f, c, mark, 2);
    assert_true(tt_screen_board(f->screen, 0, &b));
    int moves = 2;
    /* ESC [ X and ESC O X (what telnet sends after ESC[?1h), whole, then
     * cut after the Esc, after the '[' or 'O'. */
    static const struct {
        char intro;
        size_t cut;
    } forms[] = {{'[', 0}, {'O', 0}, {'[', 1}, {'[', 2}, {'O', 1}, {'O', 2}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char keys[3] = {'\x1b', forms[i].intro, dir_arrow(tt_movable_dir(&b))};
        b = key_move(f, c, &b, moves++, keys, 3, forms[i].cut);
    }
    /* One byte per write. */
    char keys[3] = {'\x1b', '[', dir_arrow(tt_movable_dir(&b))};
    mark = c->len;
    tt_send_split(c, keys, 3, 1, 2000);
    wait_moves(f, c, mark, moves + 1);
}

static void test_ctrl_c_and_ctrl_d_quit_in_character_mode(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_telnet(c, f->srv->port);
    start_solo(f, c, "solo\r\0");
    size_t mark = c->len;
    tt_send(c, "\x03", 1);
    assert_true(tt_wait_eof(c, harness_ms(TT_WAIT)));
    if (tt_find(c->buf, c->len, mark, "Goodbye!\r\n", 10) < 0)
        fail_msg("Ctrl-C in a game closed without a goodbye");

    tt_client *d = &f->c[1];
    greet_telnet(d, f->srv->port);
    mark = d->len;
    tt_send(d, "\x04", 1);
    assert_true(tt_wait_eof(d, harness_ms(TT_WAIT)));
    if (tt_find(d->buf, d->len, mark, "Goodbye!\r\n", 10) < 0)
        fail_msg("Ctrl-D in the lobby closed without a goodbye");
}

static void test_interrupt_timing_mark_answered_then_quit(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_telnet(c, f->srv->port);
    size_t mark = c->len;
    tt_send(c, "\xff\xf4\xff\xfd\x06", 5); /* IAC IP, IAC DO TIMING-MARK */
    assert_true(tt_wait_eof(c, harness_ms(TT_WAIT)));
    long wont = tt_find(c->buf, c->len, mark, "\xff\xfc\x06", 3);
    long bye = tt_find(c->buf, c->len, mark, "Goodbye!", 8);
    if (wont < 0)
        fail_msg("IAC DO TIMING-MARK was not answered with IAC WONT TIMING-MARK");
    if (bye < 0) fail_msg("no goodbye after the interrupt");
    /* telnet discards output until the answer: it must come first. */
    assert_true(wont < bye);
    tt_assert_iac_valid(c->buf, c->len);
}

/* -------------------------------------------------------------- telnet --- */

static void test_every_ff_is_a_telnet_command(void **state) {
    fixture *f = *state;
    /* A telnet that stays in line mode (refuses ECHO and SGA), sending data
     * 0xFF bytes (IAC IAC) inside commands, playing, asking for help. */
    tt_client *c = &f->c[0];
    tt_connect(c, f->srv->port);
    tt_send(c, "\xff\xfe\x01\xff\xfe\x03", 6);
    wait_prompt(c, 0);
    tt_sends(c, "x\xff\xffy\r\nname \xff\xff\r\nhelp\r\nsolo\r\n");
    wait_moves(f, c, 0, 0);
    tt_sends(c, "wasd\r\nrooms\r\n\xff\xff\r\n");
    size_t mark = c->len;
    tt_sends(c, "leave\r\n");
    wait_prompt(c, mark);
    tt_assert_iac_valid(c->buf, c->len);
    tt_assert_crlf_only(c->buf, c->len);

    /* And a character-mode telnet the same. */
    tt_client *d = &f->c[1];
    greet_telnet(d, f->srv->port);
    static const char typed[] = "\xff\xff:x\r\0help\r\0";
    tt_send(d, typed, sizeof typed - 1);
    eng_board b = start_solo(f, d, "solo\r\0");
    char key = dir_letter(tt_movable_dir(&b));
    key_move(f, d, &b, 0, &key, 1, 1);
    tt_assert_iac_valid(d->buf, d->len);
}

static void test_iac_split_at_every_position(void **state) {
    fixture *f = *state;
    /* cut == TT_TELNET_ANSWER_LEN: one byte per write. */
    for (size_t cut = 1; cut <= TT_TELNET_ANSWER_LEN; cut++) {
        tt_client *c = &f->c[0];
        tt_connect(c, f->srv->port);
        if (cut < TT_TELNET_ANSWER_LEN)
            send_cut(c, TT_TELNET_ANSWER, TT_TELNET_ANSWER_LEN, cut);
        else
            tt_send_split(c, TT_TELNET_ANSWER, TT_TELNET_ANSWER_LEN, 1, 2000);
        wait_prompt(c, 0);
        assert_memory_equal(c->buf, TT_OFFER, TT_OFFER_LEN);
        /* Nothing between the offer and the greeting (no refusal, no echo),
         * and nothing after the empty prompt. */
        if (tt_find(c->buf, c->len, 0, TT_CLEAR, 7) != TT_OFFER_LEN)
            fail_msg("split after byte %zu: stray bytes before the greeting", cut);
        /* A character-mode screen: the hint for keys, not for Enter. */
        size_t mark = c->len;
        tt_send(c, "solo\r\0", 6);
        tt_moves m = {0, 0};
        if (!tt_wait_screen(c, mark, tt_has_moves, &m, harness_ms(TT_WAIT), f->screen,
                            SCREEN))
            fail_msg("split after byte %zu: no game screen", cut);
        if (!strstr(f->screen, "Ctrl-C quits"))
            fail_msg("split after byte %zu: not in character mode:\n%s", cut, f->screen);
        tt_assert_iac_valid(c->buf, c->len);
        tt_close(c);
    }
}

/* ----------------------------------------------------------- line mode --- */

static void test_line_mode_moves_on_one_line(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    eng_board b = start_solo(f, c, "solo\n");
    /* A direction that moves, then its opposite: on a board of at most three
     * tiles packed to one side, the opposite always moves too. */
    eng_dir d = tt_movable_dir(&b);
    char line[4] = {dir_letter(d), dir_letter(opposite(d)), '\n', '\0'};
    size_t mark = c->len;
    tt_sends(c, line);
    wait_moves(f, c, mark, 2);
    if (!strstr(f->screen, "and Enter to move"))
        fail_msg("a netcat is told to press keys without Enter:\n%s", f->screen);
    assert_int_equal(tt_find(c->buf, c->len, TT_PROBE_DCS_LEN, "\xff", 1), -1);
    tt_assert_crlf_only(c->buf, c->len);
}

/* Plays one move ending the line with `end`, sent as its own write. */
static eng_board line_move(fixture *f, tt_client *c, const eng_board *b, int moves,
                           const char *end) {
    char key = dir_letter(tt_movable_dir(b));
    size_t mark = c->len;
    tt_send(c, &key, 1);
    tt_send_split(c, end, strlen(end), 1, 2000);
    wait_moves(f, c, mark, moves + 1);
    eng_board after;
    assert_true(tt_screen_board(f->screen, 0, &after));
    return after;
}

/* history lists a finished game (here from memory: the harness runs without
 * a journal) and replay plays it back frame by frame to its last move, with
 * line-mode controls; q stops it. */
static void test_history_and_replay_in_line_mode(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    eng_board b = start_solo(f, c, "solo 3\n");
    eng_dir d = tt_movable_dir(&b);
    char line[4] = {dir_letter(d), dir_letter(opposite(d)), '\n', '\0'};
    size_t mark = c->len;
    tt_sends(c, line);
    wait_moves(f, c, mark, 2);
    mark = c->len;
    tt_sends(c, "leave\n");
    tt_sends(c, "history\n");
    if (tt_wait_str(c, mark, "#1     solo   ", harness_ms(TT_WAIT)) < 0)
        fail_msg("history does not list the game");
    mark = c->len;
    tt_sends(c, "replay 1\n");
    if (tt_wait_str(c, mark, "Replay of game 1: move 1 of 2.", harness_ms(TT_WAIT)) < 0 ||
        tt_wait_str(c, mark, "Replay of game 1: all 2 moves shown.",
                    harness_ms(TT_WAIT)) < 0)
        fail_msg("the replay did not play to its end");
    mark = c->len;
    tt_sends(c, "q\n");
    if (tt_wait_str(c, mark, "Replay stopped", harness_ms(TT_WAIT)) < 0)
        fail_msg("q did not stop the replay");
    mark = c->len;
    tt_sends(c, "replay 99\n");
    if (tt_wait_str(c, mark, "No finished game has that number", harness_ms(TT_WAIT)) < 0)
        fail_msg("an unknown game is not refused");
    tt_assert_crlf_only(c->buf, c->len);
}

static void test_line_ends_crlf_cr_and_split(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    /* `nc -C`: the text and its \r\n may arrive in separate reads: one command. */
    size_t mark = c->len;
    tt_send(c, "solo\r", 5);
    tt_send_split(c, "\n", 1, 1, 2000);
    wait_moves(f, c, mark, 0);
    eng_board b;
    assert_true(tt_screen_board(f->screen, 0, &b));
    b = line_move(f, c, &b, 0, "\r\n");
    b = line_move(f, c, &b, 1, "\r"); /* a lone \r ends a line */
    b = line_move(f, c, &b, 2, "\r\n");
    b = line_move(f, c, &b, 3, "\n");
    /* No command was seen twice or lost: nothing complained. */
    assert_null(strstr(f->screen, "unknown command"));
    tt_assert_crlf_only(c->buf, c->len);
}

/* ------------------------------------------------------- late JSON --- */

static void test_late_json_client_switches_to_json(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    size_t mark = c->len;
    tt_sends(c, "{\"type\":\"ping\",\"t\":1}\n");
    const char pong[] = "{\"type\":\"pong\",\"t\":1}\n";
    long at = tt_wait_str(c, mark, pong, harness_ms(TT_WAIT));
    if (at < 0) fail_msg("no pong after the text greeting");
    /* A line end closes the text the human side left open (the prompt), so
     * the welcome starts a line of its own; then the pong; JSON lines only
     * from now on. */
    assert_true(c->len >= mark + 2);
    assert_memory_equal(c->buf + mark, "\r\n", 2);
    const char welcome[] = "{\"type\":\"welcome\",";
    assert_int_equal(tt_find(c->buf, c->len, mark, welcome, sizeof welcome - 1),
                     (long)mark + 2);
    const char *nl = memchr(c->buf + mark + 2, '\n', c->len - mark - 2);
    assert_non_null(nl);
    assert_int_equal(nl + 1 - c->buf, at);

    mark = c->len;
    tt_sends(c, "{\"type\":\"solo\",\"seed\":7}\n");
    if (tt_wait_str(c, mark, "{\"type\":\"start\",", harness_ms(TT_WAIT)) != (long)mark)
        fail_msg("no JSON start after the switch");
    tt_wait_str(c, mark, "\n", harness_ms(TT_WAIT));
    assert_int_equal(tt_find(c->buf, c->len, (size_t)at, "\xff", 1), -1);
    assert_int_equal(tt_find(c->buf, c->len, (size_t)at, "\x1b", 1), -1);
    assert_int_equal(tt_find(c->buf, c->len, (size_t)at, "\r", 1), -1);
}

/* A human who typed anything first (help, an unknown word, colour off) and
 * then a line starting with '{' is still a human: text answers, never JSON. */
static void test_typed_then_brace_line_stays_text(void **state) {
    fixture *f = *state;
    static const char *const firsts[] = {"help\r\n", "frobnicate\r\n", "color off\r\n",
                                         "\r\n"};
    for (int i = 0; i < 3; i++) {
        tt_client *c = &f->c[i];
        tt_connect(c, f->srv->port);
        if (i == 0) {
            tt_sends(c, firsts[0]); /* typed at once: text mode from the first byte */
        } else {
            wait_prompt(c, 0); /* silent first: greeted after the probe */
            tt_sends(c, firsts[i]);
            if (i == 2) tt_sends(c, firsts[3]); /* and an empty line */
        }
        size_t mark = c->len;
        tt_sends(c, "{\"type\":\"hello\",\"name\":\"bot\"}\r\n");
        if (tt_wait_str(c, mark, "unknown command", harness_ms(TT_WAIT)) < 0)
            fail_msg("client %d: the '{' line was not answered as a text command", i);
        /* A ping proves the line after it is read as text too. */
        tt_sends(c, "{\"type\":\"ping\",\"t\":1}\n");
        tt_sends(c, "rooms\r\n");
        if (tt_wait_str(c, mark, "No rooms right now", harness_ms(TT_WAIT)) < 0)
            fail_msg("client %d: no text answer to rooms", i);
        /* The unknown-command note quotes the line, so look for JSON lines:
         * none starts with '{', and no welcome's token was shown. */
        assert_true(c->len > 0 && c->buf[0] != '{');
        assert_int_equal(tt_find(c->buf, c->len, 0, "\n{", 2), -1);
        assert_int_equal(tt_find(c->buf, c->len, 0, "\"token\"", 7), -1);
        assert_int_equal(tt_find(c->buf, c->len, 0, "\"pong\"", 6), -1);
        tt_assert_crlf_only(c->buf, c->len);
    }
}

/* -------------------------------------------------------------- limits --- */

static void test_too_long_line_is_refused_then_closed(void **state) {
    fixture *f = *state;
    tt_client *c = &f->c[0];
    greet_silent(c, f->srv->port);
    /* 100 bytes is within the limit: just an unknown command. */
    char line[160];
    memset(line, 'x', 100);
    line[100] = '\n';
    size_t mark = c->len;
    tt_send(c, line, 101);
    if (tt_wait_str(c, mark, "unknown command", harness_ms(TT_WAIT)) < 0)
        fail_msg("a 100-byte line at --max-line 100 was not taken as a command");
    wait_prompt(c, mark);
    /* 150 bytes is not. */
    memset(line, 'x', 150);
    line[150] = '\n';
    mark = c->len;
    tt_send(c, line, 151);
    assert_true(tt_wait_eof(c, harness_ms(TT_WAIT)));
    if (tt_find(c->buf, c->len, mark, "longer than 100 bytes", 21) < 0)
        fail_msg("the connection closed without saying the line was too long");
    tt_assert_crlf_only(c->buf, c->len);
}

static void test_shutdown_tells_humans_in_one_line(void **state) {
    fixture *f = *state;
    tt_client *nc = &f->c[0], *tn = &f->c[1];
    greet_silent(nc, f->srv->port);
    greet_telnet(tn, f->srv->port);
    start_solo(f, tn, "solo\r\0");
    size_t nc_mark = nc->len, tn_mark = tn->len;
    assert_int_equal(server_stop(f->srv), 0);
    assert_true(tt_wait_eof(nc, harness_ms(TT_WAIT)));
    assert_true(tt_wait_eof(tn, harness_ms(TT_WAIT)));
    const char nc_bye[] =
        "\r\nThe server is stopping. Goodbye! (press Enter to close netcat)\r\n";
    const char tn_bye[] = "\r\nThe server is stopping. Goodbye!\r\n";
    if (nc->len - nc_mark != sizeof nc_bye - 1 ||
        memcmp(nc->buf + nc_mark, nc_bye, sizeof nc_bye - 1))
        fail_msg("netcat got %zu bytes at shutdown, not the one line", nc->len - nc_mark);
    if (tn->len - tn_mark != sizeof tn_bye - 1 ||
        memcmp(tn->buf + tn_mark, tn_bye, sizeof tn_bye - 1))
        fail_msg("telnet got %zu bytes at shutdown, not the one line", tn->len - tn_mark);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_silent_client_gets_probe_then_greeting,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_telnet_first_gets_plain_offer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_telnet_answer_then_one_key_is_one_move,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_arrow_keys_csi_ss3_and_split, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ctrl_c_and_ctrl_d_quit_in_character_mode,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_timing_mark_answered_then_quit,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_ff_is_a_telnet_command, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_iac_split_at_every_position, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_line_mode_moves_on_one_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_history_and_replay_in_line_mode, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_line_ends_crlf_cr_and_split, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_late_json_client_switches_to_json, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_typed_then_brace_line_stays_text, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_too_long_line_is_refused_then_closed,
                                        setup_short_lines, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_tells_humans_in_one_line, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
