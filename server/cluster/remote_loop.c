/* remote_loop.c - the loop's side: NATS messages dispatched, the tick, nodes gone. */
#include "remote_internal.h"

/* What a player here is told when the node of its room is gone. */
#define NODE_GONE_MESSAGE                                                                \
    "the node that ran your room stopped; the race goes on on another node within "      \
    "seconds: resume to play on"

/* Node `node` is gone (no NATS subscription any more): the players here in
 * its rooms are told at once, not when its presence expires seconds later.
 * Its guests of them are told to go (if it is only cut off, it must not
 * wait for them). */
static void node_gone(remote *r, const char *node) {
    r->takeover_until = now_ms(r) + REMOTE_RESUME_WAIT_MS;
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (h->resume_deadline || strcmp(h->node, node) != 0) continue;
        srv_player *p = h->p;
        arena_home_lost(r, h);
        home_release(r, h, true);
        send_unavailable(p, NODE_GONE_MESSAGE);
    }
}

/* Each tick: every node that runs a room of a player here is probed. Not
 * until this node's link has settled after a break: NATS away or hung took
 * every node's subscriptions, and a live node that reaches NATS a moment
 * after this one (the machine is slow to run it, its reconnection waits)
 * has nobody listening on its subject meanwhile, as a dead one has. */
static void probe_homes(remote *r) {
    probe *pr, *ptmp;
    if (!remote_settled(r)) {
        HASH_ITER(hh, r->probes, pr, ptmp) {
            pr->misses = 0;
            pr->refused = false;
        }
        return;
    }
    HASH_ITER(hh, r->probes, pr, ptmp) pr->seen = false;
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (!h->node[0] || h->resume_deadline) continue;
        pr = NULL;
        HASH_FIND_STR(r->probes, h->node, pr);
        if (!pr) {
            if (!(pr = calloc(1, sizeof *pr))) continue;
            snprintf(pr->node, sizeof pr->node, "%s", h->node);
            int hash_oom = 0;
            HASH_ADD_STR(r->probes, node, pr);
            if (hash_oom) {
                free(pr);
                continue;
            }
        }
        pr->seen = true;
    }
    HASH_ITER(hh, r->probes, pr, ptmp) {
        if (!pr->seen) {
            HASH_DEL(r->probes, pr);
            free(pr);
            continue;
        }
        if (!pr->refused) pr->misses = 0; /* the last probe reached it */
        pr->refused = false;
        char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
        char reply[sizeof PROBE_SUBJECT + 2 * NODE_NAME_MAX];
        snprintf(subject, sizeof subject, NODE_SUBJECT "%s", pr->node);
        snprintf(reply, sizeof reply, PROBE_SUBJECT "%s.%s", r->name, pr->node);
        natsConnection_PublishRequest(r->nc, subject, reply, NULL, 0);
    }
}

/* NATS said nobody listens on a probed node's subject. */
static void on_probe_refused(remote *r, natsMsg *msg) {
    const char *subject = natsMsg_GetSubject(msg);
    size_t mine = strlen(PROBE_SUBJECT) + strlen(r->name) + 1;
    if (!natsMsg_IsNoResponders(msg) || strlen(subject) <= mine) return;
    const char *node = subject + mine;
    probe *pr = NULL;
    HASH_FIND_STR(r->probes, node, pr);
    /* An answer to a probe sent before a break in the link counts no more. */
    if (!pr || pr->refused || !remote_settled(r)) return;
    pr->refused = true;
    if (++pr->misses < PROBE_MISSES) return;
    srv_log(SRV_LOG_INFO, "node %s stopped listening: its rooms' players here resume",
            node);
    HASH_DEL(r->probes, pr);
    free(pr);
    node_gone(r, node);
}

/* Whether `node` has been missing from the presence list for a TTL: one
 * list read at a beat is a snapshot, and a live node whose entry lapsed (its
 * beat held up past the TTL after NATS hung, on a busy machine) writes it
 * again at its next beat. A dead one stays missing. *missing_since: loop ms
 * it was first seen missing, 0 while it is seen. */
static bool node_missing(remote *r, const char *node, uint64_t now,
                         uint64_t *missing_since) {
    if (cluster_node_alive(r->c, node)) {
        *missing_since = 0;
        return false;
    }
    if (!*missing_since) *missing_since = now;
    return now - *missing_since >= CLUSTER_TTL_MS;
}

/* Homes whose node is gone, guests whose node is gone. */
void remote_check_nodes(remote *r) {
    uint64_t now = now_ms(r);
    /* Back from NATS being away (down or hung), every node's presence may
     * have expired meanwhile: nobody is judged gone until the live ones
     * have had the TTL to renew theirs. */
    bool is_settled = remote_settled(r);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (!is_settled) h->missing_since = 0;
        if (!h->resume_deadline && is_settled && now >= h->since + HOME_GRACE_MS &&
            node_missing(r, h->node, now, &h->missing_since)) {
            srv_player *p = h->p;
            arena_home_lost(r, h);
            home_release(r, h, false);
            r->takeover_until = now + REMOTE_RESUME_WAIT_MS;
            send_unavailable(p, NODE_GONE_MESSAGE);
        }
    }
    guest *gs, *gtmp;
    HASH_ITER(hh, r->guests, gs, gtmp) {
        if (!is_settled)
            gs->missing_since = 0;
        else if (node_missing(r, gs->node, now, &gs->missing_since))
            guest_gone(gs);
    }
}

void remote_on_tick(uv_timer_t *t) {
    remote *r = t->data;
    quick_move_waiters(r);
    gathers_expire(r);
    resume_expire(r);
    arena_rejoins_tick(r);
    probe_homes(r);
    if (now_ms(r) >= r->dead_check_at) {
        r->dead_check_at = now_ms(r) + DEAD_CHECK_MS;
        remote_check_nodes(r);
    }
}

/* One batch from another node: requests for rooms here, messages for
 * players here, or either side letting go. */
static void on_batch(remote *r, natsMsg *msg) {
    json_error_t err;
    json_t *body =
        json_loadb(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), 0, &err);
    const char *from = json_string_value(json_object_get(body, "from"));
    const json_t *ops = json_object_get(body, "ops");
    if (from && strlen(from) < NODE_NAME_MAX && strcmp(from, r->name) != 0 &&
        json_is_array(ops)) {
        size_t i;
        const json_t *op;
        json_array_foreach(ops, i, op) {
            const char *k = json_string_value(json_object_get(op, "k"));
            if (!k) continue;
            if (!strcmp(k, "req"))
                guest_on_request(r, from, op);
            else if (!strcmp(k, "msg"))
                home_on_messages(r, from, op);
            else if (!strcmp(k, "close"))
                home_on_close(r, from, op);
            else if (!strcmp(k, "answer"))
                gather_on_answer(r, from, op);
            else if (!strcmp(k, "moved"))
                home_on_moved(r, from, op);
            else if (!strcmp(k, "noseat"))
                resume_on_noseat(r, op);
            else if (!strcmp(k, "gone")) {
                guest *gs = guest_find(
                    r, from, (uint64_t)json_integer_value(json_object_get(op, "h")));
                if (gs) guest_gone(gs);
            }
        }
    }
    json_decref(body);
}

void remote_on_wake(uv_async_t *a) {
    remote *r = a->data;
    uv_mutex_lock(&r->lock);
    inbox_msg *list = r->in_head;
    r->in_head = r->in_tail = NULL;
    uv_mutex_unlock(&r->lock);
    while (list) {
        inbox_msg *next = list->next;
        const char *subject = natsMsg_GetSubject(list->msg);
        if (!strncmp(subject, DIR_SUBJECT, strlen(DIR_SUBJECT))) {
            dir_on_change(r, list->msg);
        } else if (!strncmp(subject, PROBE_SUBJECT, strlen(PROBE_SUBJECT))) {
            on_probe_refused(r, list->msg);
        } else if (!strcmp(subject, FIND_SUBJECT)) {
            json_error_t err;
            json_t *q = json_loadb(natsMsg_GetData(list->msg),
                                   (size_t)natsMsg_GetDataLength(list->msg), 0, &err);
            if (q) guest_on_find(r, q);
            json_decref(q);
        } else {
            on_batch(r, list->msg);
        }
        natsMsg_Destroy(list->msg);
        free(list);
        list = next;
    }
}

/* libnats's thread: queue it for the loop. */
void remote_on_nats_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                        void *closure) {
    remote *r = closure;
    (void)nc;
    (void)sub;
    inbox_msg *in = malloc(sizeof *in);
    uv_mutex_lock(&r->lock);
    if (!in || r->closing) {
        uv_mutex_unlock(&r->lock);
        free(in);
        natsMsg_Destroy(msg);
        return;
    }
    in->next = NULL;
    in->msg = msg;
    if (r->in_tail)
        r->in_tail->next = in;
    else
        r->in_head = in;
    r->in_tail = in;
    uv_async_send(&r->wake);
    uv_mutex_unlock(&r->lock);
}
