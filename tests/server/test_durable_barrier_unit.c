/* test_durable_barrier_unit.c - the barrier's gates and waiters on a stub journal. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <stdint.h>

#include "durable_barrier.h"

/* The stub journal: only its durable position and its one subscriber. */
struct journal {
    uint64_t durable;
    journal_durable_sub *sub;
};

uint64_t journal_durable_pos(const journal *j) {
    return j ? j->durable : 0;
}

void journal_on_durable(journal *j, journal_durable_sub *sub, void (*cb)(void *ctx),
                        void *ctx) {
    sub->cb = cb;
    sub->ctx = ctx;
    srv_list_init(&sub->link);
    if (j) j->sub = sub;
}

void journal_durable_unsubscribe(journal_durable_sub *sub) {
    srv_list_remove(&sub->link);
}

/* The journal grows durable to pos and tells its subscriber. */
static void made_durable(journal *j, uint64_t pos) {
    j->durable = pos;
    if (j->sub) j->sub->cb(j->sub->ctx);
}

static void test_nothing_held(void **state) {
    (void)state;
    journal j = {.durable = 0};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 0, 0, &j); /* a message without a record */
    assert_int_equal(durable_barrier_sendable(&b, 0, 7, &j), 7);
    assert_false(durable_barrier_holds(&b, &j));
    j.durable = 50;
    durable_barrier_hold(&b, 3, 40, &j); /* already durable: nothing held */
    assert_int_equal(durable_barrier_sendable(&b, 0, 7, &j), 7);
}

/* What was queued before the held message goes; it and what follows wait. */
static void test_one_gate(void **state) {
    (void)state;
    journal j = {.durable = 3};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 5, 10, &j);
    assert_int_equal(durable_barrier_sendable(&b, 0, 8, &j), 5);
    assert_int_equal(durable_barrier_sendable(&b, 5, 3, &j), 0);
    assert_true(durable_barrier_holds(&b, &j));
    j.durable = 9;
    assert_int_equal(durable_barrier_sendable(&b, 5, 3, &j), 0);
    j.durable = 10;
    assert_int_equal(durable_barrier_sendable(&b, 5, 3, &j), 3);
    assert_false(durable_barrier_holds(&b, &j));
}

/* A second record later in the queue: the first gate opens on its own. */
static void test_two_gates(void **state) {
    (void)state;
    journal j = {.durable = 1};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 2, 10, &j);
    durable_barrier_hold(&b, 4, 20, &j);
    durable_barrier_hold(&b, 5, 15, &j); /* behind the second gate already */
    assert_int_equal(durable_barrier_sendable(&b, 0, 6, &j), 2);
    j.durable = 10;
    assert_int_equal(durable_barrier_sendable(&b, 0, 6, &j), 4);
    j.durable = 20;
    assert_int_equal(durable_barrier_sendable(&b, 0, 6, &j), 6);
    assert_false(durable_barrier_holds(&b, &j));
}

/* A third joins the second (it waits longer); the first never moves, so a
 * stream of later holds cannot starve what precedes them. */
static void test_third_joins_second(void **state) {
    (void)state;
    journal j = {.durable = 0};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 2, 10, &j);
    durable_barrier_hold(&b, 4, 20, &j);
    durable_barrier_hold(&b, 6, 30, &j);
    j.durable = 10;
    assert_int_equal(durable_barrier_sendable(&b, 0, 8, &j), 4);
    j.durable = 20;
    assert_int_equal(durable_barrier_sendable(&b, 0, 8, &j), 4);
    durable_barrier_hold(&b, 8, 40, &j); /* a new second gate behind it */
    j.durable = 30;
    assert_int_equal(durable_barrier_sendable(&b, 0, 9, &j), 8);
    j.durable = 40;
    assert_int_equal(durable_barrier_sendable(&b, 0, 9, &j), 9);
}

/* Two holds for the same message: one gate, the longer wait. */
static void test_same_message(void **state) {
    (void)state;
    journal j = {.durable = 0};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 3, 10, &j);
    durable_barrier_hold(&b, 3, 15, &j);
    j.durable = 10;
    assert_int_equal(durable_barrier_sendable(&b, 0, 4, &j), 3);
    j.durable = 15;
    assert_int_equal(durable_barrier_sendable(&b, 0, 4, &j), 4);
}

/* Message numbers run free: a gate across the wrap holds as any other. */
static void test_numbers_wrap(void **state) {
    (void)state;
    journal j = {.durable = 0};
    durable_barrier b = {0};
    uint32_t first = UINT32_MAX - 1;
    durable_barrier_hold(&b, first + 3, 10, &j); /* number 1, after the wrap */
    assert_int_equal(durable_barrier_sendable(&b, first, 5, &j), 3);
    j.durable = 10;
    assert_int_equal(durable_barrier_sendable(&b, first, 5, &j), 5);
}

/* A spent gate is replaced, not extended: a hold after it starts afresh. */
static void test_spent_gate_replaced(void **state) {
    (void)state;
    journal j = {.durable = 0};
    durable_barrier b = {0};
    durable_barrier_hold(&b, 1, 10, &j);
    j.durable = 12; /* nobody asked since */
    durable_barrier_hold(&b, 6, 20, &j);
    assert_int_equal(durable_barrier_sendable(&b, 0, 8, &j), 6);
}

typedef struct queue {
    srv_link link;
    int told;
} queue;

static void go_on(void *ctx, srv_link *l) {
    (void)ctx;
    srv_container(l, queue, link)->told++;
}

/* The owner hears about every held queue when the journal grows durable. */
static void test_waiters(void **state) {
    (void)state;
    journal j = {.durable = 0};
    srv_link held;
    srv_list_init(&held);
    durable_waiters w;
    durable_waiters_init(&w, &j, &held, go_on, NULL);
    queue a = {0}, c = {0};
    srv_list_init(&a.link);
    srv_list_init(&c.link);
    durable_waiters_hold(&held, &a.link);
    durable_waiters_hold(&held, &c.link);
    made_durable(&j, 5);
    assert_int_equal(a.told, 1);
    assert_int_equal(c.told, 1);
    assert_true(srv_list_empty(&held));
    made_durable(&j, 6); /* nobody waits: nobody is told */
    assert_int_equal(a.told, 1);
    durable_waiters_stop(&w);
}

static int relisted;
static srv_link *relist_to;

static void go_on_relist(void *ctx, srv_link *l) {
    (void)ctx;
    relisted++;
    durable_waiters_hold(relist_to, l); /* a later gate still holds it */
}

/* go_on may hold a queue again (a later gate): told once per growth. */
static void test_waiters_hold_again(void **state) {
    (void)state;
    journal j = {.durable = 0};
    srv_link held;
    srv_list_init(&held);
    relist_to = &held;
    durable_waiters w;
    durable_waiters_init(&w, &j, &held, go_on_relist, NULL);
    queue a = {0};
    srv_list_init(&a.link);
    durable_waiters_hold(&held, &a.link);
    made_durable(&j, 5);
    assert_int_equal(relisted, 1); /* told once per growth, listed again */
    assert_false(srv_list_empty(&held));
    made_durable(&j, 7);
    assert_int_equal(relisted, 2);
    durable_waiters_stop(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_held),
        cmocka_unit_test(test_one_gate),
        cmocka_unit_test(test_two_gates),
        cmocka_unit_test(test_third_joins_second),
        cmocka_unit_test(test_same_message),
        cmocka_unit_test(test_numbers_wrap),
        cmocka_unit_test(test_spent_gate_replaced),
        cmocka_unit_test(test_waiters),
        cmocka_unit_test(test_waiters_hold_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
