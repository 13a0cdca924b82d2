/* test_text_newcomer.c - what a newcomer hit in text mode: names with non-ASCII letters,
 * hints that say ':help' where keys play, and replays that show each player's status
 * frame by frame (text `replay` and race2048-replay --show) with an honest last hint.
 *
 * Raw byte clients (netcat: plain lines; telnet: NAWS 80x24, character mode)
 * against race2048d, JSON clients as the other racers. Every wait is for an
 * expected screen or message, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
    if (tt_journal_make(&journal, "newc") < 0) return -1;
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

static void greet_telnet(fixture *f, tt_client *c) {
    tt_connect(c, f->srv->port);
    if (tt_wait_for(c, 0, TT_PROBE_DCS, TT_PROBE_DCS_LEN, harness_ms(TT_WAIT)) != 0)
        fail_msg("no probe");
    telnet_answer(c, 80, 24);
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

/* ------------------------------------------------- 1: non-ASCII names --- */

static const char name_rule[] =
    "name takes one name: 1 to 16 letters A-Z, digits, _ or -";

static void test_non_ascii_names_refused_alike(void **state) {
    fixture *f = *state;
    greet_telnet(f, &f->tn);
    greet_netcat(f, &f->nc);
    static const char *const names[] = {"name caf\xc3\xa9", "name a\xf0\x9f\x99\x82"
                                                            "b"};
    for (int i = 0; i < 2; i++) {
        size_t tmark = f->tn.len, nmark = f->nc.len;
        type_tn(&f->tn, names[i]);
        type_nc(&f->nc, names[i]);
        wait_screen(f, &f->tn, tmark, name_rule);
        if (strstr(f->screen, "You are now"))
            fail_msg("telnet took a name from %s:\n%s", names[i], f->screen);
        wait_screen(f, &f->nc, nmark, name_rule);
        if (strstr(f->screen, "You are now"))
            fail_msg("netcat took a name from %s:\n%s", names[i], f->screen);
        /* The echo showed a '?' for the letter, not nothing. */
        if (tt_find(f->tn.buf, f->tn.len, tmark, i ? "a?b" : "caf?", i ? 3 : 4) < 0)
            fail_msg("telnet's echo dropped the letter");
        tt_assert_iac_valid(f->tn.buf + tmark, f->tn.len - tmark);
    }
    /* Backspace takes a whole character back: "caf" + é + BS + "e" is "cafe". */
    size_t mark = f->tn.len;
    tt_sends(&f->tn, "name caf\xc3\xa9\x7f"
                     "e");
    tt_send(&f->tn, "\r\0", 2);
    wait_screen(f, &f->tn, mark, "You are now cafe.");
    /* The help says the same rule. */
    mark = f->nc.len;
    type_nc(&f->nc, "help");
    wait_screen(f, &f->nc, mark, "name NAME     letters A-Z, digits, _ or -");
}

/* ------------------------------------------- 2: hints where keys play --- */

static void test_hints_in_a_telnet_game_say_colon(void **state) {
    fixture *f = *state;
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":3");
    greet_telnet(f, &f->tn);
    greet_netcat(f, &f->nc);
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    size_t tmark = f->tn.len, nmark = f->nc.len;
    type_tn(&f->tn, line);
    type_nc(&f->nc, line);
    wait_screen(f, &f->tn, tmark, "Ctrl-C quits");
    wait_screen(f, &f->nc, nmark, "Enter to move");

    /* telnet, in a game: ":foo" says to type ":help", and ":help" works. */
    tmark = f->tn.len;
    type_tn(&f->tn, ":foo");
    wait_screen(f, &f->tn, tmark, "unknown command 'foo' - type :help");
    tmark = f->tn.len;
    type_tn(&f->tn, ":history");
    wait_screen(f, &f->tn, tmark, "history is for the lobby: type :leave first.");
    tmark = f->tn.len;
    type_tn(&f->tn, ":solo");
    wait_screen(f, &f->tn, tmark, "you are in a running race; type :leave first");
    if (strstr(f->screen, "send leave")) fail_msg("JSON words shown:\n%s", f->screen);
    /* netcat, in the same game: the words as typed there. */
    nmark = f->nc.len;
    type_nc(&f->nc, "foo");
    wait_screen(f, &f->nc, nmark, "unknown command 'foo' - type help");
    if (strstr(f->screen, "type :help")) fail_msg("':help' on netcat:\n%s", f->screen);
    nmark = f->nc.len;
    type_nc(&f->nc, "history");
    wait_screen(f, &f->nc, nmark, "history is for the lobby: type leave first.");
    /* telnet in the lobby: no ':' needed there. */
    tmark = f->tn.len;
    type_tn(&f->tn, ":leave");
    wait_screen(f, &f->tn, tmark, "You left");
    tmark = f->tn.len;
    type_tn(&f->tn, "foo");
    wait_screen(f, &f->tn, tmark, "unknown command 'foo' - type help");
    if (strstr(f->screen, "type :help")) fail_msg("':help' on netcat:\n%s", f->screen);
}

/* ------------------------------------------------ 6, 7: replay statuses --- */

/* The statuses under the boards of one frame (plain text): the line with
 * "N move(s)  STATUS" for each board, left to right. Returns how many. */
static int captions(const char *screen, int moves[8], char status[8][16]) {
    const char *line = screen;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char text[512];
        snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : 511), line);
        int n = 0;
        for (char *p = text; n < 8 && (p = strstr(p, " move")) != NULL; p++) {
            char *digits = p;
            while (digits > text && digits[-1] >= '0' && digits[-1] <= '9')
                digits--;
            if (digits == p) continue;
            char *after = p + 5 + (p[5] == 's');
            if (strncmp(after, "  ", 2) != 0) continue;
            moves[n] = atoi(digits);
            sscanf(after + 2, "%15s", status[n]);
            n++;
        }
        if (n) return n;
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* jo (JSON), al (JSON) and nina (netcat) race to 16; al moves once and
 * leaves, jo plays on to the target; nina never moves. Returns the game id. */
static long left_and_won_race(fixture *f) {
    client *jo = client_named(f->srv, "jo");
    const char *code = json_create(jo, "\"players\":3,\"target\":16");
    client *al = client_named(f->srv, "al");
    client_send(al, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect(al, "room", harness_ms(TT_WAIT));
    greet_netcat(f, &f->nc);
    type_nc(&f->nc, "name nina");
    char line[32];
    snprintf(line, sizeof line, "join %s", code);
    type_nc(&f->nc, line);
    client_expect_skip(jo, "start", "room", harness_ms(TT_WAIT));
    client_expect_skip(al, "start", "room", harness_ms(TT_WAIT));
    client_move_any(al);
    client_send(al, "{\"type\":\"leave\"}");
    client_expect_skip(al, "left", "state player end", harness_ms(TT_WAIT));
    for (int i = 0; i < 2000; i++) {
        json_t *st = client_move_any(jo);
        const char *status = jstr(st, "status");
        if (status && !strcmp(status, "won")) break;
    }
    json_t *end = client_expect_skip(jo, "end", "state player", harness_ms(TT_WAIT));
    assert_string_equal(jstr(end, "reason"), "target");
    wait_screen(f, &f->nc, 0, "Race over");
    client_send(jo, "{\"type\":\"history\"}");
    json_t *h =
        client_expect_skip(jo, "history", "state player room", harness_ms(TT_WAIT));
    json_t *games = jarr(h, "games");
    return (long)jint(json_array_get(games, 0), "game");
}

/* Every frame in bytes[from..len) (split at sep: clear-screens on a
 * terminal, the title's start on a pipe) has al (board 1) playing before
 * its move and left from it on, jo (board 0) won only with a 16, and the
 * last frame jo won, al left, nina playing. */
static void check_frames(const char *bytes, size_t len, size_t from, const char *sep,
                         const char *what) {
    static char plain[SCREEN];
    int frames = 0, left_frames = 0;
    int moves[8];
    char status[8][16];
    size_t k = strlen(sep);
    for (long at = tt_find(bytes, len, from, sep, k); at >= 0;) {
        long next = tt_find(bytes, len, (size_t)at + k, sep, k);
        size_t end = next >= 0 ? (size_t)next : len;
        tt_screen_text(bytes, end, (size_t)at, plain, sizeof plain);
        int n = captions(plain, moves, status);
        if (n == 3) {
            frames++;
            if (strcmp(status[1], moves[1] >= 1 ? "left" : "playing") != 0)
                fail_msg("%s: al with %d moves shows %s:\n%s", what, moves[1], status[1],
                         plain);
            left_frames += moves[1] >= 1;
            if (!strcmp(status[0], "won") && !strstr(plain, "16"))
                fail_msg("%s: jo won without a 16:\n%s", what, plain);
            if (strcmp(status[2], "playing") != 0)
                fail_msg("%s: nina shows %s:\n%s", what, status[2], plain);
        }
        at = next;
    }
    if (frames < 3 || left_frames < 2)
        fail_msg("%s: %d frames, %d with al left", what, frames, left_frames);
    if (strcmp(status[0], "won") != 0 || strcmp(status[1], "left") != 0)
        fail_msg("%s: the last frame shows jo %s, al %s:\n%s", what, status[0], status[1],
                 plain);
}

static bool unpaused_frame(const char *screen, void *arg) {
    (void)arg;
    return strstr(screen, "Replay of game") && !strstr(screen, "Paused.");
}

static void test_text_replay_shows_statuses_frame_by_frame(void **state) {
    fixture *f = *state;
    long id = left_and_won_race(f);
    size_t mark = f->nc.len;
    char line[32];
    snprintf(line, sizeof line, "replay %ld", id);
    type_nc(&f->nc, line);
    wait_screen(f, &f->nc, mark, "Type p (pause), + (faster)");
    /* Issue 29: Enter alone pauses (netcat's "\n"), and again resumes
     * (nc -C's "\r\n"). */
    size_t pmark = f->nc.len;
    tt_sends(&f->nc, "\n");
    wait_screen(f, &f->nc, pmark, "Paused.");
    pmark = f->nc.len;
    tt_sends(&f->nc, "\r\n");
    if (!tt_wait_screen(&f->nc, pmark, unpaused_frame, NULL, harness_ms(TT_WAIT),
                        f->screen, SCREEN))
        fail_msg("\\r\\n did not resume the replay:\n%s", f->screen);
    for (int i = 0; i < 3; i++)
        type_nc(&f->nc, "+");
    wait_screen(f, &f->nc, mark, "moves shown");
    /* 7: the last frame's hint says how to go on, not how to pause. */
    if (strstr(f->screen, "Type p (pause)"))
        fail_msg("the finished replay still offers pause:\n%s", f->screen);
    assert_non_null(strstr(f->screen, "Replay over: type q, or a command."));
    assert_non_null(strstr(f->screen, "jo won (target)"));
    check_frames(f->nc.buf, f->nc.len, mark, TT_CLEAR, "text replay");
}

/* Issue 29: a replay's title says replaying, not watching as for a live race. */
static void test_text_replay_title_says_replaying(void **state) {
    fixture *f = *state;
    long id = left_and_won_race(f);
    size_t mark = f->nc.len;
    char line[32];
    snprintf(line, sizeof line, "replay %ld", id);
    type_nc(&f->nc, line);
    wait_screen(f, &f->nc, mark, "Replay of game");
    if (!strstr(f->screen, "replaying") || strstr(f->screen, "watching"))
        fail_msg("the replay's title:\n%s", f->screen);
}

/* race2048-replay --show of the same game, on a pipe (no pauses). */
static void test_show_prints_statuses_frame_by_frame(void **state) {
    fixture *f = *state;
    long id = left_and_won_race(f);
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    char idtext[24];
    snprintf(idtext, sizeof idtext, "%ld", id);
    int p[2];
    if (pipe(p) < 0) fail_msg("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(bin, bin, journal.path, "--show", idtext, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    ssize_t r;
    while (n + 1 < cap && (r = read(p[0], out + n, cap - n - 1)) > 0)
        n += (size_t)r;
    close(p[0]);
    out[n] = '\0';
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Issue 29: a pipe gets plain lines, no escapes, no CRs. */
    if (memchr(out, 0x1b, n) || memchr(out, '\r', n))
        fail_msg("--show wrote escapes or CRs into a pipe:\n%.300s", out);
    check_frames(out, n, 0, "race2048  ", "--show");
    char caption[48];
    snprintf(caption, sizeof caption, "Game %ld, move 0 of ", id);
    if (!strstr(out, caption)) fail_msg("--show does not name game %ld", id);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_non_ascii_names_refused_alike, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hints_in_a_telnet_game_say_colon, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_text_replay_shows_statuses_frame_by_frame,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_replay_title_says_replaying, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_show_prints_statuses_frame_by_frame, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
