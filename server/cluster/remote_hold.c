/* remote_hold.c - a guest's messages held until their journal record is durable. */
#include "remote_internal.h"

/* Each guest holds on its own (durable_barrier, one per guest with something
 * held): one room's `end` holds the messages to that room's guests and to
 * nobody else, while every other guest of the node gets its messages in the
 * same turn. A held guest's later messages (and its close) wait behind the
 * held one; they keep the wire form they share with the other recipients,
 * so a broadcast is still made once, and guests released in the same turn
 * get it in one entry (holds_release). The journal tells when to look again
 * (durable_waiters: one subscription for the remote): nothing polls. */

/* An op held for a guest: a message (its wire form, shared, and this
 * guest's recipient [handle, id]) or a whole op (to NULL: a close, a move). */
typedef struct held_op {
    struct held_op *next;
    json_t *op;
    json_t *to;
    size_t bytes;
} held_op;

static guest_hold *hold_new(remote *r, guest *gs) {
    guest_hold *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    snprintf(h->node, sizeof h->node, "%s", gs->node);
    h->tail = &h->head;
    h->gs = gs;
    gs->hold = h;
    srv_list_push(&r->held, &h->link);
    r->nholds++;
    return h;
}

/* Frees h and whatever it still holds (not sent). */
static void hold_free(remote *r, guest_hold *h) {
    while (h->head) {
        held_op *e = h->head;
        h->head = e->next;
        json_decref(e->op);
        json_decref(e->to);
        assert(r->held_bytes >= e->bytes);
        r->held_bytes -= e->bytes;
        free(e);
        h->count--;
    }
    assert(h->count == 0);
    srv_list_remove(&h->link);
    if (h->gs) {
        assert(h->gs->hold == h); /* a guest and its hold point at each other */
        h->gs->hold = NULL;
    }
    r->nholds--;
    free(h);
}

/* h's front op goes into its node's batch. */
static void hold_send_front(remote *r, guest_hold *h) {
    held_op *e = h->head;
    assert(e && h->count > 0);
    h->head = e->next;
    if (!h->head) h->tail = &h->head;
    h->first++;
    h->count--;
    assert(r->held_bytes >= e->bytes);
    r->held_bytes -= e->bytes;
    outbox *ob = outbox_for(r, h->node);
    if (!ob) {
        json_decref(e->op);
        json_decref(e->to);
    } else if (e->to) {
        outbox_add_msg(r, ob, e->op, e->to, e->bytes);
        json_decref(e->op);
    } else {
        outbox_add(r, ob, e->op, e->bytes);
    }
    free(e);
}

/* Every hold is let go of, unsent: what they held may never be seen. */
static void holds_drop_all(remote *r) {
    srv_link *lists[2] = {&r->held, &r->ready};
    for (int k = 0; k < 2; k++)
        while (!srv_list_empty(lists[k]))
            hold_free(r, srv_container(lists[k]->next, guest_hold, link));
    assert(r->nholds == 0 && r->held_bytes == 0);
}

void guest_send(remote *r, guest *gs, json_t *op, json_t *to, size_t bytes,
                uint64_t durable_at) {
    journal *j = r->g->journal;
    guest_hold *h = gs->hold;
    if (!h && durable_at <= journal_durable_pos(j)) { /* nearly always */
        outbox *ob = outbox_for(r, gs->node);
        if (ob && to) {
            outbox_add_msg(r, ob, op, to, bytes);
            json_decref(op);
        } else if (ob) {
            outbox_add(r, ob, op, bytes);
        } else {
            json_decref(op);
            json_decref(to);
        }
        return;
    }
    held_op *e = malloc(sizeof *e);
    if (!e || (!h && !(h = hold_new(r, gs)))) {
        /* Out of memory: not sent (never early), as if NATS had lost it. */
        free(e);
        json_decref(op);
        json_decref(to);
        return;
    }
    durable_barrier_hold(&h->barrier, h->first + h->count, durable_at, j);
    *e = (held_op){.op = op, .to = to, .bytes = bytes};
    *h->tail = e;
    h->tail = &e->next;
    h->count++;
    r->held_bytes += bytes;
    if (r->held_bytes >= OUTBOX_HELD_MAX) {
        /* Held that long, the journal cannot commit (NATS is away, and the
         * node is about to give its rooms up): what waits is let go rather
         * than let grow. */
        srv_log(SRV_LOG_WARN, "messages for other nodes held for the journal: dropped");
        holds_drop_all(r);
    }
}

void guest_send_op(remote *r, guest *gs, json_t *op) {
    if (!op) return;
    guest_send(r, gs, op, NULL, 128, 0);
}

void hold_guest_gone(guest *gs) {
    if (gs->hold) gs->hold->gs = NULL; /* what it holds still goes, then its close */
}

/* The journal grew durable: h is looked at again in this turn's batch. */
static void hold_go_on(void *ctx, srv_link *queue) {
    remote *r = ctx;
    srv_list_push(&r->ready, queue);
}

void holds_start(remote *r) {
    srv_list_init(&r->held);
    srv_list_init(&r->ready);
    durable_waiters_init(&r->waiters, r->g->journal, &r->held, hold_go_on, r);
}

void holds_stop(remote *r) {
    durable_waiters_stop(&r->waiters);
}

void holds_release(remote *r) {
    journal *j = r->g->journal;
    /* In rounds, one op of each hold a round: guests that were held by the
     * same `end` get it in one entry, then the next broadcast in one. */
    bool moved = true;
    while (moved) {
        moved = false;
        for (srv_link *l = r->ready.next, *next; l != &r->ready; l = next) {
            next = l->next;
            guest_hold *h = srv_container(l, guest_hold, link);
            if (h->count && durable_barrier_sendable(&h->barrier, h->first, 1, j)) {
                hold_send_front(r, h);
                moved = true;
            } else if (!h->count) {
                hold_free(r, h);
            } else {
                durable_waiters_hold(&r->held, &h->link); /* a later gate */
            }
        }
    }
    assert(srv_list_empty(&r->ready));
}

void holds_give_up(remote *r) {
    /* What may go goes; what waits for the journal is an `end` the
     * cluster's records may lack: nobody may see it. */
    while (!srv_list_empty(&r->held)) {
        srv_link *l = r->held.next;
        srv_list_remove(l);
        srv_list_push(&r->ready, l);
    }
    holds_release(r);
    holds_drop_all(r);
}

void holds_send_all(remote *r) {
    /* Stopping: the journal has been committed by now. */
    srv_link *lists[2] = {&r->held, &r->ready};
    for (int k = 0; k < 2; k++)
        while (!srv_list_empty(lists[k])) {
            guest_hold *h = srv_container(lists[k]->next, guest_hold, link);
            while (h->count)
                hold_send_front(r, h);
            hold_free(r, h);
        }
    assert(r->nholds == 0);
}
