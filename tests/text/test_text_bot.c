/* test_text_bot.c - text mode races a server-run bot: `bot [LEVEL]` from the lobby, the
 * bot's board moving on the race screen, a leave that forfeits to it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "tt.h"

#define SCREEN (1 << 16)

static void wait_str(tt_client *c, size_t from, const char *needle) {
    if (tt_wait_str(c, from, needle, harness_ms(TT_WAIT)) < 0) {
        static char plain[SCREEN];
        tt_screen_text(c->buf, c->len, from, plain, sizeof plain);
        fail_msg("\"%s\" never came; the last screen:\n%s", needle, plain);
    }
}

/* The lobby lists `bot`; `bot 1` starts a race against a level-1 bot at
 * once; its board moves by itself (its move count grows on the screen);
 * `leave` forfeits, and the end screen names the bot the winner. */
static void test_netcat_races_a_bot(void **state) {
    (void)state;
    th_server *s = SERVER(NULL);
    tt_client c;
    tt_connect(&c, s->port);
    wait_str(&c, 0, "bot [LEVEL]"); /* the lobby lists it */
    wait_str(&c, 0, "\r\n> ");
    size_t mark = c.len;
    tt_sends(&c, "bot 1\n");
    wait_str(&c, mark, "bot-L1-");
    /* The bot moves about once a second at level 1: its count reaches 2. */
    static char screen[SCREEN];
    int64_t deadline = harness_now_ms() + harness_ms(20000);
    for (;;) {
        assert_true(harness_remaining(deadline) > 0);
        tt_screen_text(c.buf, c.len, mark, screen, sizeof screen);
        if (tt_screen_moves(screen, 1) >= 2) break;
        size_t seen = c.len;
        tt_wait_str(&c, seen, TT_CLEAR, harness_ms(3000)); /* the next redraw */
    }
    mark = c.len;
    tt_sends(&c, "leave\n");
    wait_str(&c, mark, "wins");
    tt_screen_text(c.buf, c.len, mark, screen, sizeof screen);
    assert_non_null(strstr(screen, "bot-L1-"));
    char *won = strstr(screen, "wins");
    assert_non_null(won);
    assert_non_null(strstr(won - 24 > screen ? won - 24 : screen, "bot-L1-"));
    tt_close(&c);
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_netcat_races_a_bot, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
