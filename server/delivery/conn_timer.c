/* conn_timer.c - each connection's one deadline, all kept on one server-wide timer. */
#include "conn_timer.h"

#include <stdlib.h>

#include "conn.h"

static bool before(const conn *a, const conn *b) {
    if (a->timer.due != b->timer.due) return a->timer.due < b->timer.due;
    /* Ties are deadlines set close together: the wrapping difference is small. */
    return (int32_t)(a->timer.order - b->timer.order) < 0;
}

static void place(conn_timers *t, uint32_t i, conn *c) {
    t->heap[i] = c;
    c->timer.slot = i + 1;
}

static void sift_up(conn_timers *t, uint32_t i) {
    conn *c = t->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(c, t->heap[parent])) break;
        place(t, i, t->heap[parent]);
        i = parent;
    }
    place(t, i, c);
}

static void sift_down(conn_timers *t, uint32_t i) {
    conn *c = t->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= t->len) break;
        if (child + 1 < t->len && before(t->heap[child + 1], t->heap[child])) child++;
        if (!before(t->heap[child], c)) break;
        place(t, i, t->heap[child]);
        i = child;
    }
    place(t, i, c);
}

static void heap_remove(conn_timers *t, conn *c) {
    uint32_t i = c->timer.slot - 1;
    c->timer.slot = 0;
    conn *last = t->heap[--t->len];
    if (i == t->len) return;
    place(t, i, last);
    if (i > 0 && before(last, t->heap[(i - 1) / 2]))
        sift_up(t, i);
    else
        sift_down(t, i);
}

static void on_due(uv_timer_t *h);

/* Sets the uv timer for the earliest deadline; stopped while none is armed,
 * so that an idle server's loop is kept alive by no deadline of ours. */
static void rearm(srv *s) {
    conn_timers *t = &s->timers;
    if (!t->timer_ready) return;
    if (!t->len) {
        uv_timer_stop(&s->conn_timer);
        t->armed_due = 0;
        return;
    }
    uint64_t due = t->heap[0]->timer.due;
    if (uv_is_active((uv_handle_t *)&s->conn_timer) && t->armed_due == due) return;
    uint64_t now = uv_now(s->loop);
    t->armed_due = due;
    uv_timer_start(&s->conn_timer, on_due, due > now ? due - now : 0, 0);
}

static void on_due(uv_timer_t *h) {
    srv *s = h->data;
    conn_timers *t = &s->timers;
    uint64_t now = uv_now(s->loop);
    t->armed_due = 0;
    /* Only what was due when this run began: a deadline set meanwhile for
     * "now" waits for the next timer phase (after a poll), so a deadline
     * re-armed for now again and again cannot keep the loop from reading. */
    uint32_t first_new = t->next_order;
    while (t->len && t->heap[0]->timer.due <= now &&
           (int32_t)(t->heap[0]->timer.order - first_new) < 0) {
        conn *c = t->heap[0];
        conn_timer_cb cb = c->timer.cb;
        heap_remove(t, c);
        c->timer.cb = NULL;
        cb(c);
    }
    rearm(s);
}

void conn_timers_init(srv *s) {
    uv_timer_init(s->loop, &s->conn_timer);
    s->conn_timer.data = s;
    s->timers.timer_ready = 1;
    rearm(s);
}

void conn_timers_free(srv *s) {
    free(s->timers.heap);
    s->timers.heap = NULL;
    s->timers.len = s->timers.cap = 0;
}

int conn_timer_start(conn *c, conn_timer_cb cb, uint64_t ms) {
    srv *s = c->srv;
    conn_timers *t = &s->timers;
    if (c->timer.slot) heap_remove(t, c);
    if (t->len == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        conn **heap = realloc(t->heap, (size_t)cap * sizeof *heap);
        if (!heap) {
            c->timer.cb = NULL;
            rearm(s);
            return -1;
        }
        t->heap = heap;
        t->cap = cap;
    }
    c->timer.due = uv_now(s->loop) + ms;
    c->timer.order = t->next_order++;
    c->timer.cb = cb;
    t->heap[t->len] = c;
    sift_up(t, t->len++);
    rearm(s);
    return 0;
}

void conn_timer_stop(conn *c) {
    if (!c->timer.slot) return;
    heap_remove(&c->srv->timers, c);
    c->timer.cb = NULL;
    rearm(c->srv);
}

bool conn_timer_armed(const conn *c) {
    return c->timer.slot != 0;
}

bool conn_timer_runs(const conn *c, conn_timer_cb cb) {
    return c->timer.slot && c->timer.cb == cb;
}

uint64_t conn_timer_due(const conn *c) {
    return c->timer.slot ? c->timer.due : 0;
}
