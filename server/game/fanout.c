/* fanout.c - a room's spectators, and its broadcasts on their way to them a share per
 * loop turn. */
#include "fanout.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "room.h"

/* A queued broadcast: a copy of the message that owns everything it points to. */
struct fanout_item {
    fanout_item *next;
    uint64_t seq;
    srv_msg msg;
    char *text; /* msg.text's copy, or NULL */
};

/* Unique across rooms, so that a rendering's version names one room's state. */
static uint64_t versions;

void fanout_init(fanout *f, struct room *r) {
    memset(f, 0, sizeof *f);
    f->room = r;
    f->version = ++versions;
    srv_list_init(&f->busy);
}

/* ------------------------------------------------------------ the queue --- */

static void item_free(fanout_item *it) {
    if (it->msg.json) srv_buf_unref(it->msg.json);
    srv_view_unref(it->msg.view);
    srv_rooms_unref(it->msg.rooms);
    free(it->text);
    free(it);
}

/* A copy of m that owns its data; NULL if memory runs out. */
static fanout_item *item_new(const srv_msg *m, uint64_t seq) {
    fanout_item *it = calloc(1, sizeof *it);
    if (!it) return NULL;
    it->seq = seq;
    it->msg = *m;
    if (m->text) {
        size_t len = strlen(m->text) + 1;
        if (!(it->text = malloc(len))) goto oom;
        memcpy(it->text, m->text, len);
        it->msg.text = it->text;
    }
    if (m->json) srv_buf_ref(m->json);
    if (m->view) srv_view_ref(m->view);
    if (m->rooms) srv_rooms_ref(m->rooms);
    return it;
oom:
    free(it->text);
    free(it);
    return NULL;
}

static void drop_items(fanout *f) {
    while (f->head) {
        fanout_item *it = f->head;
        f->head = it->next;
        item_free(it);
    }
    f->tail = NULL;
    f->pending = 0;
    f->cursor = 0;
    srv_list_remove(&f->busy);
}

/* ------------------------------------------------------------ spectators --- */

static void move_slot(fanout *f, unsigned from, unsigned to) {
    assert(from < f->n && to < f->n);
    if (from == to) return;
    f->slots[to] = f->slots[from];
    f->slots[to].p->watch_slot = to;
}

/* Takes slot i out, keeping the cursor's promise: the slots before it were
 * visited in this pass, those after it were not. */
static void drop_slot(fanout *f, unsigned i) {
    /* A spectator and its slot point at each other, the cursor within the slots. */
    assert(i < f->n && f->cursor <= f->n);
    assert(f->slots[i].p->watch_slot == i && f->slots[i].p->watching == f->room);
    f->slots[i].p->watching = NULL;
    if (i < f->cursor) {
        move_slot(f, f->cursor - 1, i);
        move_slot(f, f->n - 1, f->cursor - 1);
        f->cursor--;
    } else {
        move_slot(f, f->n - 1, i);
    }
    f->n--;
}

int fanout_add(fanout *f, srv_player *p) {
    assert(!p->watching && !p->room); /* spectators watch one room, seated in none */
    if (f->n == f->cap) {
        unsigned cap = f->cap ? f->cap * 2 : 4;
        fanout_slot *slots = realloc(f->slots, (size_t)cap * sizeof *slots);
        if (!slots) return -1;
        f->slots = slots;
        f->cap = cap;
    }
    /* After the cursor: the head broadcast is not its (since says so), and
     * the slots before the cursor keep theirs. */
    f->slots[f->n] = (fanout_slot){.p = p, .since = f->next_seq};
    p->watch_slot = f->n++;
    p->watching = f->room;
    return 0;
}

void fanout_detach_all(fanout *f) {
    drop_items(f);
    for (unsigned i = 0; i < f->n; i++)
        f->slots[i].p->watching = NULL;
    f->n = 0;
}

void fanout_free(fanout *f) {
    fanout_detach_all(f);
    free(f->slots);
    f->slots = NULL;
    f->cap = 0;
    if (f->start) srv_buf_unref(f->start);
    f->start = NULL;
    srv_view_unref(f->start_view);
    f->start_view = NULL;
}

/* ------------------------------------------------------------- delivery --- */

static void deliver(srv_player *p, const srv_msg *m) {
    if (p->sink.ops) p->sink.ops->deliver(p->sink.dest, m);
}

/* Spectators this room may still be given this turn. */
static unsigned share_left(fanout *f) {
    uint64_t turn = game_turn(f->room->game);
    if (f->turn != turn) {
        f->turn = turn;
        f->used = 0;
    }
    return f->used < FANOUT_TURN ? FANOUT_TURN - f->used : 0;
}

/* Gives slot i everything queued that it lacks, in order, and marks it up to
 * date; an `end` is its last (the slot is dropped). Returns the messages
 * given. */
static unsigned bring_up(fanout *f, unsigned i) {
    unsigned given = 0;
    srv_player *p = f->slots[i].p;
    uint64_t since = f->slots[i].since;
    for (fanout_item *it = f->head; it; it = it->next) {
        if (it->seq < since) continue; /* has it, or joined after it */
        deliver(p, &it->msg);
        given++;
        if (it->msg.type == SRV_MSG_END) {
            drop_slot(f, i);
            return given;
        }
    }
    f->slots[i].since = f->next_seq;
    return given;
}

/* Visits the slots from the cursor on, bringing each up to date, until the
 * pass ends or budget is spent (a visit costs its messages, at least 1: one
 * write per spectator per turn, however many messages it takes). Returns
 * what it spent. */
static unsigned pass(fanout *f, unsigned budget) {
    unsigned spent = 0;
    while (f->cursor < f->n && spent < budget) {
        unsigned i = f->cursor++, given = bring_up(f, i);
        spent += given ? given : 1;
    }
    return spent;
}

/* A pass is over: every spectator has what was queued before it began.
 * Frees what every spectator has; the next pass starts at slot 0. */
static void end_pass(fanout *f) {
    uint64_t owed = f->next_seq; /* the oldest broadcast anyone lacks */
    for (unsigned i = 0; i < f->n; i++)
        if (f->slots[i].since < owed) owed = f->slots[i].since;
    while (f->head && f->head->seq < owed) {
        fanout_item *it = f->head;
        f->head = it->next;
        f->pending--;
        item_free(it);
    }
    if (!f->head) f->tail = NULL;
    f->cursor = 0;
}

static void on_fanout_idle(uv_idle_t *h);

/* Queues m for the spectators that lack it. Returns -1 if memory runs out. */
static int enqueue(fanout *f, const srv_msg *m, uint64_t seq) {
    fanout_item *it = item_new(m, seq);
    if (!it) return -1;
    if (f->tail)
        f->tail->next = it;
    else
        f->head = it;
    f->tail = it;
    f->pending++;
    game *g = f->room->game;
    if (!g->fanout_ready) {
        uv_idle_init(g->loop, &g->fanout_idle);
        g->fanout_idle.data = g;
        srv_list_init(&g->fanouts);
        g->fanout_ready = true;
    }
    if (srv_list_empty(&f->busy)) {
        if (srv_list_empty(&g->fanouts)) uv_idle_start(&g->fanout_idle, on_fanout_idle);
        srv_list_push(&g->fanouts, &f->busy);
    }
    return 0;
}

void fanout_touch(fanout *f) {
    f->version = ++versions;
}

void fanout_send(fanout *f, const srv_msg *m) {
    fanout_touch(f);
    if (!f->n) return;
    uint64_t seq = f->next_seq++;
    if (!f->head) {
        /* Nothing queued: as many as this turn's share allows get it now. */
        unsigned budget = share_left(f), spent = 0;
        while (f->cursor < f->n && spent < budget) {
            unsigned i = f->cursor++;
            deliver(f->slots[i].p, m);
            spent++;
            if (m->type == SRV_MSG_END)
                drop_slot(f, i);
            else
                f->slots[i].since = seq + 1;
        }
        f->used += spent;
        if (f->cursor >= f->n) {
            f->cursor = 0;
            return;
        }
    }
    if (enqueue(f, m, seq) == 0) return;
    /* No memory to keep it for later: everyone gets what is queued and m
     * now, over the share. The idle handle still finds f busy if it was, and
     * tells the room it drained. */
    f->cursor = 0;
    while (f->cursor < f->n) {
        unsigned i = f->cursor++, before = f->n;
        srv_player *p = f->slots[i].p;
        bring_up(f, i);              /* up to m, which is not queued */
        if (f->n < before) continue; /* that was its end */
        deliver(p, m);
        if (m->type == SRV_MSG_END) drop_slot(f, i);
    }
    end_pass(f);
}

/* Works through f's queue as far as this turn's share goes. */
static void advance(fanout *f) {
    unsigned budget = share_left(f);
    while (f->head && budget) {
        unsigned spent = pass(f, budget);
        f->used += spent;
        budget = spent < budget ? budget - spent : 0;
        if (f->cursor < f->n) break;
        end_pass(f);
    }
}

/* Each room with queued broadcasts gets its share of this turn. */
static void on_fanout_idle(uv_idle_t *h) {
    game *g = h->data;
    srv_link todo;
    srv_list_init(&todo);
    if (!srv_list_empty(&g->fanouts)) { /* move the list to todo */
        todo.next = g->fanouts.next;
        todo.prev = g->fanouts.prev;
        todo.next->prev = todo.prev->next = &todo;
        srv_list_init(&g->fanouts);
    }
    while (!srv_list_empty(&todo)) {
        fanout *f = srv_container(todo.next, fanout, busy);
        srv_list_remove(&f->busy);
        advance(f);
        if (f->head) {
            srv_list_push(&g->fanouts, &f->busy);
            continue;
        }
        drop_items(f);
        /* May free the room (after this callback: its timer closes first). */
        room_fanout_drained(f->room);
    }
    if (srv_list_empty(&g->fanouts)) uv_idle_stop(&g->fanout_idle);
}

void fanout_catch_up(srv_player *p) {
    struct room *r = p->watching;
    if (!r || !r->fan.head || !p->sink.ops) return;
    fanout *f = &r->fan;
    unsigned i = p->watch_slot;
    if (i >= f->n || f->slots[i].p != p || f->slots[i].since >= f->next_seq) return;
    bring_up(f, i);
}

void fanout_remove(fanout *f, srv_player *p) {
    unsigned i = p->watch_slot;
    if (i >= f->n || f->slots[i].p != p) {
        p->watching = NULL;
        return;
    }
    fanout_catch_up(p);
    if (p->watching) drop_slot(f, p->watch_slot);
}

bool fanout_holds(const srv_player *p) {
    return p->room && p->room->fan.pending >= FANOUT_HOLD;
}
