/* test_text_accounts.c - accounts in text mode (issue 27): register shows the key once
 * with the line to type, login NAME KEY, logout, top, profile [NAME], daily and
 * top daily, and the errors as one line each, over netcat's line mode against race2048d.
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
    if (tt_journal_make(&journal, "acct") < 0) return -1;
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

static void wait_screen(fixture *f, tt_client *c, size_t from, const char *needle) {
    if (!tt_wait_screen(c, from, tt_has, (void *)needle, harness_ms(TT_WAIT), f->screen,
                        SCREEN))
        fail_msg("no screen with \"%s\" came; the last one:\n%s", needle, f->screen);
}

static void greet_netcat(fixture *f, tt_client *c) {
    tt_connect(c, f->srv->port);
    wait_screen(f, c, 0, "You are player-");
}

/* A command line: telnet's Enter in character mode is CR NUL. */

static void type_nc(tt_client *c, const char *line) {
    tt_sends(c, line);
    tt_sends(c, "\n");
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

/* The key of a `registered` screen: the 32 hex digits after "login NAME ". */
static void key_of(const char *screen, const char *name, char key[33]) {
    char line[48];
    snprintf(line, sizeof line, "login %s ", name);
    const char *at = strstr(screen, line);
    if (!at) fail_msg("no login line on the screen:\n%s", screen);
    at += strlen(line);
    for (int i = 0; i < 32; i++) {
        if (!strchr("0123456789abcdef", at[i]) || !at[i])
            fail_msg("no key after the login line:\n%s", screen);
        key[i] = at[i];
    }
    key[32] = '\0';
}

/* register shows the key once, with the line to type; the next screen has it no more. */
static void test_register_shows_the_key_once(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "name Ada");
    wait_screen(f, &f->nc, mark, "You are now Ada");
    mark = f->nc.len;
    type_nc(&f->nc, "register");
    wait_screen(f, &f->nc, mark, "Next time, type this to log in:");
    char key[33];
    key_of(f->screen, "Ada", key);
    assert_non_null(strstr(f->screen, "only this once"));
    size_t after = f->nc.len;
    type_nc(&f->nc, "help");
    wait_screen(f, &f->nc, after, "profile [NAME]");
    assert_int_equal(screens_with(&f->nc, after, key), 0);
    /* A second register: the name is an account's already. */
    after = f->nc.len;
    type_nc(&f->nc, "register");
    wait_screen(f, &f->nc, after, "belongs to an account");
    assert_int_equal(screens_with(&f->nc, after, key), 0);
}

/* name NAME then register on c; the key shown is written to key. */
static void register_as(fixture *f, tt_client *c, const char *name, char key[33]) {
    char line[32];
    snprintf(line, sizeof line, "name %s", name);
    type_nc(c, line);
    size_t mark = c->len;
    type_nc(c, "register");
    wait_screen(f, c, mark, "Next time, type this to log in:");
    key_of(f->screen, name, key);
}

/* login NAME KEY on another connection: logged in, the rating beside the name;
 * a guest's use of the name and a wrong key are one readable line each. */
static void test_login(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    char key[33], line[64];
    register_as(f, &f->nc, "Bea", key);
    tt_client other = {.fd = -1};
    greet_netcat(f, &other);
    size_t mark = other.len;
    type_nc(&other, "name bea");
    wait_screen(f, &other, mark, "that name belongs to an account; log in with its key");
    mark = other.len;
    type_nc(&other, "login Bea 00000000000000000000000000000000");
    wait_screen(f, &other, mark, "wrong key for that name (or no account has it)");
    mark = other.len;
    snprintf(line, sizeof line, "LOGIN bea %s", key);
    type_nc(&other, line);
    wait_screen(f, &other, mark, "You are now Bea (rating 1500): logged in.");
    assert_int_equal(screens_with(&other, mark, key), 0);
    mark = other.len;
    type_nc(&other, "rooms");
    wait_screen(f, &other, mark, "You are Bea (rating 1500).");
    tt_close(&other);
}

/* logout: a guest again under a guest's name; once more, it says so. */
static void test_logout(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    char key[33];
    register_as(f, &f->nc, "Dee", key);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "logout");
    wait_screen(f, &f->nc, mark, "You logged out: you are player-");
    mark = f->nc.len;
    type_nc(&f->nc, "profile");
    wait_screen(f, &f->nc, mark, "profile takes a player's name (you are not logged in)");
    mark = f->nc.len;
    type_nc(&f->nc, "logout");
    wait_screen(f, &f->nc, mark, "You are not logged in");
}

/* top: the rating board; nobody has 10 rated races yet. */
static void test_top(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    char key[33];
    register_as(f, &f->nc, "Cy", key);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "top");
    wait_screen(f, &f->nc, mark, "Best ratings (10 races or more):");
    assert_non_null(strstr(f->screen, "nobody yet"));
}

/* profile: one's own without a name, another's by name (any case), and
 * player_not_found as one line. */
static void test_profile(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "profile");
    wait_screen(f, &f->nc, mark, "profile takes a player's name (you are not logged in)");
    char key[33];
    register_as(f, &f->nc, "Cy", key);
    mark = f->nc.len;
    type_nc(&f->nc, "profile");
    wait_screen(f, &f->nc, mark, "Cy: rating 1500 (provisional)");
    assert_non_null(strstr(f->screen, "0 rated races, 0 won"));
    mark = f->nc.len;
    type_nc(&f->nc, "profile cy");
    wait_screen(f, &f->nc, mark, "Cy: rating 1500");
    mark = f->nc.len;
    type_nc(&f->nc, "profile Nobody");
    wait_screen(f, &f->nc, mark, "no account has that name");
}

/* daily: a guest is told to register, in one line; an account plays today's
 * game; a second one of that size is daily_played, in one line. */
static void test_daily(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "daily");
    wait_screen(f, &f->nc, mark, "Only accounts play the daily challenge: type register");
    char key[33];
    register_as(f, &f->nc, "Eve", key);
    mark = f->nc.len;
    type_nc(&f->nc, "daily");
    wait_screen(f, &f->nc, mark, "0 moves  playing");
    mark = f->nc.len;
    type_nc(&f->nc, "leave");
    wait_screen(f, &f->nc, mark, "You left the game.");
    /* The end screen keeps the day's seed secret (no "seed 0"). */
    assert_non_null(strstr(f->screen, "seed and salt: secret until the day is over"));
    assert_null(strstr(f->screen, "seed 0"));
    mark = f->nc.len;
    type_nc(&f->nc, "daily 4");
    wait_screen(f, &f->nc, mark, "You have played today's daily game of that size");
}

/* top daily [SIZE]: today's board with rank, name, score, max tile and moves;
 * another size's is empty. */
static void test_top_daily(void **state) {
    fixture *f = *state;
    greet_netcat(f, &f->nc);
    char key[33];
    register_as(f, &f->nc, "Fay", key);
    size_t mark = f->nc.len;
    type_nc(&f->nc, "daily 5");
    wait_screen(f, &f->nc, mark, "0 moves  playing");
    type_nc(&f->nc, "leave");
    mark = f->nc.len;
    type_nc(&f->nc, "top daily 5");
    wait_screen(f, &f->nc, mark, "Daily challenge ");
    assert_non_null(strstr(f->screen, ", 5x5:"));
    assert_non_null(strstr(f->screen, "score   tile  moves"));
    assert_non_null(strstr(f->screen, "  1. Fay "));
    mark = f->nc.len;
    type_nc(&f->nc, "top daily");
    wait_screen(f, &f->nc, mark, ", 4x4:");
    assert_non_null(strstr(f->screen, "nobody yet: type daily 4 to play it"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_shows_the_key_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_login, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_daily, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top_daily, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
