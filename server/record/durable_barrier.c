/* durable_barrier.c - a queue's gates on the journal; its owner told when they open. */
#include "durable_barrier.h"

#include <assert.h>

/* The gates' invariants: none (all 0), one (last == first), or two whose
 * positions and first messages both increase. */
static void check(const durable_barrier *b) {
    (void)b;
    assert(b->first_until || (!b->last_until && !b->first_from && !b->last_from));
    assert(!b->first_until || b->last_until >= b->first_until);
    assert(b->last_until != b->first_until || b->last_from == b->first_from);
    assert(b->last_until == b->first_until ||
           (int32_t)(b->last_from - b->first_from) > 0);
}

/* Drops the gates the journal has passed. */
static void drop_spent(durable_barrier *b, uint64_t durable) {
    if (!b->first_until || b->first_until > durable) return;
    if (b->last_until > durable) { /* the second gate becomes the only one */
        b->first_until = b->last_until;
        b->first_from = b->last_from;
    } else {
        durable_barrier_clear(b);
    }
    check(b);
}

void durable_barrier_hold_slow(durable_barrier *b, uint32_t seq, uint64_t pos,
                               const journal *j) {
    uint64_t durable = journal_durable_pos(j);
    drop_spent(b, durable);
    if (pos <= durable) return;
    if (!b->first_until || (b->first_from == seq && b->last_from == seq)) {
        /* The first gate (or one at the same message, which may wait longer). */
        b->first_until = b->last_until = pos > b->last_until ? pos : b->last_until;
        b->first_from = b->last_from = seq;
    } else if (pos <= b->last_until) {
        return; /* the last gate holds it as long already */
    } else if (b->last_until == b->first_until) {
        b->last_until = pos; /* a second gate */
        b->last_from = seq;
    } else {
        b->last_until = pos; /* joins the second gate, which waits longer */
    }
    check(b);
}

uint32_t durable_barrier_sendable_slow(durable_barrier *b, uint32_t first, uint32_t count,
                                       const journal *j) {
    drop_spent(b, journal_durable_pos(j));
    if (!b->first_until) return count;
    uint32_t before = b->first_from - first;
    /* Nothing behind a gate leaves the queue before it opens. */
    assert(before <= count);
    return before < count ? before : count;
}

bool durable_barrier_holds(durable_barrier *b, const journal *j) {
    drop_spent(b, journal_durable_pos(j));
    return b->first_until != 0;
}

/* The journal grew durable: every held queue goes back to its owner. */
static void on_durable(void *ctx) {
    durable_waiters *w = ctx;
    /* Taken off first: go_on may hold a queue again (a later gate). */
    srv_link todo;
    srv_list_init(&todo);
    if (!srv_list_empty(w->held)) {
        todo.next = w->held->next;
        todo.prev = w->held->prev;
        todo.next->prev = todo.prev->next = &todo;
        srv_list_init(w->held);
    }
    while (!srv_list_empty(&todo)) {
        srv_link *queue = todo.next;
        srv_list_remove(queue);
        w->go_on(w->ctx, queue);
    }
}

void durable_waiters_init(durable_waiters *w, journal *j, srv_link *held,
                          void (*go_on)(void *ctx, srv_link *queue), void *ctx) {
    assert(held && go_on);
    w->held = held;
    w->go_on = go_on;
    w->ctx = ctx;
    journal_on_durable(j, &w->sub, on_durable, w);
}

void durable_waiters_stop(durable_waiters *w) {
    journal_durable_unsubscribe(&w->sub);
}
