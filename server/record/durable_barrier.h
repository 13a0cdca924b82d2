/* durable_barrier.h - a queue's messages held until the journal has their records. */
#ifndef RACE2048_DURABLE_BARRIER_H
#define RACE2048_DURABLE_BARRIER_H

#include <stdbool.h>
#include <stdint.h>

#include "base.h" /* srv_link */
#include "journal.h"

/* The promise: nobody sees an `end` (or a move's `state` held by
 * journal_show_pos) before the journal has made its record durable. A
 * message carries the journal position it must wait for (srv_msg.durable_at,
 * 0 = none); a queue that delivers messages in order holds that message and
 * everything queued after it until journal_durable_pos reaches the position.
 * What was queued before it goes on.
 *
 * The queue numbers its messages with a free-running uint32_t: the number of
 * the message at its front (`first`) and how many it holds (`count`), so the
 * next message queued gets first + count (wrapping is fine). The barrier
 * keeps at most two gates, each "from message `from` on, wait for `until`":
 * the first never changes until it opens, so a stream of later holds can
 * delay what follows them but never starve what precedes them; a third hold
 * while two wait joins the second (it raises that gate's position: what is
 * behind the second gate waits a little longer, at most one group commit).
 * No allocation, 24 bytes, and with nothing held each call costs one compare.
 *
 * Telling the owner when it may go on: one durable_waiters per owner (one
 * journal subscription for all of its queues). A queue whose front is held
 * (durable_barrier_sendable returned 0, or less than it holds and all that
 * may go went) puts its link in the owner's list of held queues
 * (durable_waiters_hold); when the journal grows durable every held link is
 * handed back to the owner's go_on, which schedules that queue's flush. The
 * flush asks durable_barrier_sendable again (a later gate may still hold:
 * it is listed again).
 *
 * A connection's output ring (delivery/) embeds one barrier; its queue is
 * the ring (first = the ring's free-running front, count = its entries); the
 * server's one durable_waiters moves held connections back to the flush list.
 *
 * The cluster outbox (cluster/remote.c) is meant to use it per guest, not
 * per node: each guest (a player of another node) embeds a barrier and
 * numbers the messages queued to it; guest_deliver calls
 * durable_barrier_hold(&gs->barrier, gs->queued, m->durable_at, journal)
 * before queueing. When the node's batch is made, a guest's messages that
 * durable_barrier_sendable lets go join it; a guest with messages held keeps
 * them (in its own queue of ops) and durable_waiters_hold's its link in the
 * remote's list; go_on marks it for the next turn's batch. One room's `end`
 * then holds only the guests of that room, not every message to every guest
 * of the node, and no uv_prepare has to poll the journal. */

typedef struct durable_barrier {
    uint64_t first_until; /* the first gate's position; 0 = nothing held */
    uint64_t last_until;  /* the last gate's (== first_until with one gate) */
    uint32_t first_from;  /* the first message the first gate holds */
    uint32_t last_from;   /* the first message the last gate holds */
} durable_barrier;

/* Slow paths (durable_barrier.c): only when something is or was held. */
void durable_barrier_hold_slow(durable_barrier *b, uint32_t seq, uint64_t pos,
                               const journal *j);
uint32_t durable_barrier_sendable_slow(durable_barrier *b, uint32_t first, uint32_t count,
                                       const journal *j);

/* Message number seq (the next one the queue will hold) must wait until the
 * journal is durable up to pos: it and everything queued after it are held.
 * pos 0, or a position already durable, holds nothing. Call it before
 * queueing the message. */
static inline void durable_barrier_hold(durable_barrier *b, uint32_t seq, uint64_t pos,
                                        const journal *j) {
    /* pos 0 (nearly every message), or a position the last gate waits for
     * anyway (or that is durable, when that gate is spent). */
    if (pos <= b->last_until) return;
    durable_barrier_hold_slow(b, seq, pos, j);
}

/* How many of the count messages from number first may go now (those before
 * the first gate that still holds); spent gates are dropped. */
static inline uint32_t durable_barrier_sendable(durable_barrier *b, uint32_t first,
                                                uint32_t count, const journal *j) {
    if (!b->first_until) return count;
    return durable_barrier_sendable_slow(b, first, count, j);
}

/* Does a gate still hold (is some message, queued or to come, waiting for
 * the journal)? Drops spent gates. */
bool durable_barrier_holds(durable_barrier *b, const journal *j);

/* Forgets every gate (the queue was emptied without sending, e.g. dropped). */
static inline void durable_barrier_clear(durable_barrier *b) {
    *b = (durable_barrier){0};
}

/* --------------------------------------------------- telling the owner --- */

/* One journal subscription for all of an owner's queues. */
typedef struct durable_waiters {
    journal_durable_sub sub;
    srv_link *held; /* the owner's list of the held queues' links */
    void (*go_on)(void *ctx, srv_link *queue);
    void *ctx;
} durable_waiters;

/* Subscribes to j (NULL: nothing ever waits). held is the owner's list
 * head (initialised by the owner), where durable_waiters_hold puts queues;
 * when the journal grows durable each is taken off it and given to go_on,
 * which may hold it again. */
void durable_waiters_init(durable_waiters *w, journal *j, srv_link *held,
                          void (*go_on)(void *ctx, srv_link *queue), void *ctx);
/* Unsubscribes (the owner is going away); the held list is left as it is. */
void durable_waiters_stop(durable_waiters *w);
/* Moves a queue's link (off any list it is on) into the owner's held list. */
static inline void durable_waiters_hold(srv_link *held, srv_link *queue) {
    srv_list_remove(queue);
    srv_list_push(held, queue);
}

#endif
