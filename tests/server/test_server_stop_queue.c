/* test_server_stop_queue.c - SIGTERM stops race2048d as promptly after a quick queue.
 *
 * The quick queue's bot timer (--quick-bots, 15 s by default) kept the loop alive after
 * the last waiter had gone, so a server stopped within 15 s of a `quick` took until the
 * timer fired to exit (docker stop's 10 s then kill it). Found by repo_docs_true's
 * request-table probes (issue 29).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "harness.h"

/* Milliseconds a server takes from SIGTERM to its exit, after `quick` was asked
 * (and the client gone) or not. */
static int64_t stop_ms(bool queued) {
    th_server *s = SERVER("--quick-bots", "15");
    client *c = client_named(s, "ann");
    if (queued) {
        client_send(c, "{\"type\":\"quick\",\"players\":2}");
        client_expect(c, "queued", harness_ms(WAIT));
    } else {
        client_send(c, "{\"type\":\"rooms\"}");
        client_expect(c, "rooms", harness_ms(WAIT));
    }
    client_close(c);
    int64_t t0 = harness_now_ms();
    assert_int_equal(server_stop(s), 0);
    return harness_now_ms() - t0;
}

static void test_stop_after_a_quick_queue_is_prompt(void **state) {
    (void)state;
    int64_t base = stop_ms(false), queued = stop_ms(true);
    fprintf(stderr, "stop: %lld ms without a queue, %lld ms after one\n", (long long)base,
            (long long)queued);
    /* The timer's 15 s against a stop of well under a second: a wide margin. */
    assert_true(queued < 4 * base + harness_ms(3000));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_stop_after_a_quick_queue_is_prompt,
                                  harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
