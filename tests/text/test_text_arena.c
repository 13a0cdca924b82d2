/* test_text_arena.c - arenas in text mode (issue 28): arena new, arenas, arena CODE with
 * the standings and the time left, two entrants racing, the standings between races, and
 * the errors as one line, over netcat's line mode against race2048d. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tt.h"

#define SCREEN 65536

typedef struct fixture {
    th_server *srv;
    tt_client a, b;
    char screen[SCREEN];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->a.fd = f->b.fd = -1;
    *state = f;
    /* Minutes and waits divided by 20: a 5-minute arena lasts 15 s and starts in 3 s. */
    setenv("RACE2048_TEST_ARENA_SCALE", "20", 1);
    f->srv = SERVER(NULL);
    unsetenv("RACE2048_TEST_ARENA_SCALE");
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tt_close(&f->a);
    tt_close(&f->b);
    free(f);
    return harness_teardown(state);
}

static void wait_screen_ms(fixture *f, tt_client *c, size_t from, const char *needle,
                           int ms) {
    if (!tt_wait_screen(c, from, tt_has, (void *)needle, harness_ms(ms), f->screen,
                        SCREEN))
        fail_msg("no screen with \"%s\" came; the last one:\n%s", needle, f->screen);
}

static void wait_screen(fixture *f, tt_client *c, size_t from, const char *needle) {
    wait_screen_ms(f, c, from, needle, TT_WAIT);
}

static void type_nc(tt_client *c, const char *line) {
    tt_sends(c, line);
    tt_sends(c, "\n");
}

static void greet(fixture *f, tt_client *c) {
    tt_connect(c, f->srv->port);
    wait_screen(f, c, 0, "You are player-");
}

/* The code after "Arena " on the screen. */
static void code_of(const char *screen, char code[9]) {
    const char *at = strstr(screen, "Arena ");
    if (!at) fail_msg("no arena on the screen:\n%s", screen);
    at += strlen("Arena ");
    int n = 0;
    while (n < 8 && ((at[n] >= 'A' && at[n] <= 'Z') || (at[n] >= '0' && at[n] <= '9'))) {
        code[n] = at[n];
        n++;
    }
    code[n] = '\0';
    assert_true(n >= 4);
}

/* arena new, arenas, arena CODE: the standings with the time left and one's own
 * row; two entrants race at the start; between races the standings come back. */
static void test_arena_commands(void **state) {
    fixture *f = *state;
    greet(f, &f->a);
    size_t mark = f->a.len;
    type_nc(&f->a, "arena new 5 2");
    wait_screen(f, &f->a, mark, "starts in");
    assert_non_null(strstr(f->screen, "'s arena"));
    assert_non_null(strstr(f->screen, "races of 2, 4x4 to 2048, 0 entrants"));
    char code[9], line[32];
    code_of(f->screen, code);
    mark = f->a.len;
    type_nc(&f->a, "arenas");
    wait_screen(f, &f->a, mark, "Arenas (type arena CODE to enter):");
    assert_non_null(strstr(f->screen, code));
    mark = f->a.len;
    snprintf(line, sizeof line, "arena %s", code);
    type_nc(&f->a, line);
    wait_screen(f, &f->a, mark, "You: rank 1, 0 points, 0 races");
    greet(f, &f->b);
    mark = f->b.len;
    type_nc(&f->b, line);
    wait_screen(f, &f->b, mark, "You: rank 1, 0 points, 0 races");
    /* The arena starts: both race (no one moves) until its end by time: a full
     * tie, the better place for both; then the final standings. */
    mark = f->a.len;
    wait_screen(f, &f->a, mark, "score 0");
    mark = f->a.len;
    wait_screen_ms(f, &f->a, mark, "finished", 40000);
    assert_non_null(strstr(f->screen, "You: rank 1, 1 points, 1 races"));
    /* Errors are one line. */
    mark = f->a.len;
    type_nc(&f->a, "arena ZZZZ");
    wait_screen(f, &f->a, mark, "no arena has that code");
    mark = f->a.len;
    type_nc(&f->a, "arena new 4");
    wait_screen(f, &f->a, mark, "arena takes a code");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_arena_commands, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
