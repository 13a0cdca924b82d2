/* test_conn_timer_unit.c - server/delivery/conn_timer.c in process: connection deadlines
 * fire in deadline order, ties in the order they were set, and stop or restart takes
 * effect.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conn.h"

#define MAX_FIRED 4096

static srv S;
static uv_loop_t loop;
static conn *fired[MAX_FIRED];
static uint64_t fired_at[MAX_FIRED];
static int nfired;

static int setup(void **state) {
    memset(&S, 0, sizeof S);
    assert_int_equal(uv_loop_init(&loop), 0);
    S.loop = &loop;
    conn_timers_init(&S);
    nfired = 0;
    return 0;
}

static void close_any(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static int teardown(void **state) {
    assert_int_equal(S.timers.len, 0); /* nothing armed is left behind */
    uv_walk(&loop, close_any, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    conn_timers_free(&S);
    assert_int_equal(uv_loop_close(&loop), 0);
    return 0;
}

static void note(conn *c) {
    assert_true(nfired < MAX_FIRED);
    assert_int_equal(c->timer.slot, 0); /* out of the heap before its callback */
    fired_at[nfired] = uv_now(&loop);
    fired[nfired++] = c;
}

static conn *fake(void) {
    conn *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->srv = &S;
    return c;
}

/* uv_run returns once no deadline is armed: the shared timer keeps the loop
 * alive only while one is. */
static void test_order_stop_restart(void **state) {
    conn *a = fake(), *b = fake(), *c = fake(), *d = fake();
    assert_int_equal(conn_timer_start(a, note, 30), 0);
    assert_int_equal(conn_timer_start(b, note, 10), 0);
    assert_int_equal(conn_timer_start(c, note, 10), 0);
    assert_int_equal(conn_timer_start(d, note, 20), 0);
    conn_timer_stop(d);
    conn_timer_stop(d);                                 /* twice is harmless */
    assert_int_equal(conn_timer_start(a, note, 15), 0); /* replaces its 30 */
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(nfired, 3);
    assert_ptr_equal(fired[0], b); /* ties: first set, first run */
    assert_ptr_equal(fired[1], c);
    assert_ptr_equal(fired[2], a);
    assert_true(fired_at[2] >= fired_at[0]);
    free(a), free(b), free(c), free(d);
}

/* A deadline set from a callback for "now" runs after the ones already due,
 * in a later timer phase (after a poll), never in the same pass. */
static conn *chained;
static void arm_chained(conn *c) {
    note(c);
    if (chained) {
        assert_int_equal(conn_timer_start(chained, note, 0), 0);
        chained = NULL;
    }
}

static void test_set_from_a_callback(void **state) {
    conn *a = fake(), *b = fake(), *c = fake();
    chained = c;
    assert_int_equal(conn_timer_start(a, arm_chained, 5), 0);
    assert_int_equal(conn_timer_start(b, note, 5), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(nfired, 3);
    assert_ptr_equal(fired[0], a);
    assert_ptr_equal(fired[1], b);
    assert_ptr_equal(fired[2], c);
    free(a), free(b), free(c);
}

/* Many deadlines, some stopped, some moved: each live one fires once, never
 * before its time, in nondecreasing deadline order. */
static void test_many(void **state) {
    enum { N = 2000 };
    conn **c = calloc(N, sizeof *c);
    uint64_t *due = calloc(N, sizeof *due);
    assert_non_null(c);
    assert_non_null(due);
    uint64_t start = uv_now(&loop);
    srand(7);
    int live = 0;
    for (int i = 0; i < N; i++) {
        c[i] = fake();
        uint64_t ms = (uint64_t)(rand() % 40);
        assert_int_equal(conn_timer_start(c[i], note, ms), 0);
        due[i] = start + ms;
    }
    for (int i = 0; i < N; i += 3) {
        if (i % 2) {
            conn_timer_stop(c[i]);
            due[i] = 0;
        } else {
            uint64_t ms = (uint64_t)(rand() % 40);
            assert_int_equal(conn_timer_start(c[i], note, ms), 0);
            due[i] = uv_now(&loop) + ms;
        }
    }
    for (int i = 0; i < N; i++)
        live += due[i] != 0;
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(nfired, live);
    for (int k = 0; k < nfired; k++) {
        conn *f = fired[k];
        assert_true(fired_at[k] >= f->timer.due);
        if (k) assert_true(fired[k - 1]->timer.due <= f->timer.due);
        for (int j = k + 1; j < nfired; j++)
            assert_ptr_not_equal(fired[j], f); /* once */
    }
    for (int i = 0; i < N; i++)
        free(c[i]);
    free(c);
    free(due);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_stop_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_from_a_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
