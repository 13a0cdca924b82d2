/* remote_owner.c - guests: other nodes' players in this node's game, and their sink. */
#include "remote_internal.h"

#include "lobby.h"
#include "wire.h"
#include "hex.h"

static const sink_ops guest_sink_ops;

/* ------------------------------------------------------------ the owner --- */

guest *guest_find(remote *r, const char *node, uint64_t handle) {
    char key[sizeof((guest *)0)->key];
    snprintf(key, sizeof key, "%s/%llu", node, (unsigned long long)handle);
    guest *gs = NULL;
    HASH_FIND_STR(r->guests, key, gs);
    return gs;
}

static guest *guest_new(remote *r, const char *node, uint64_t handle) {
    guest *gs = calloc(1, sizeof *gs);
    if (!gs) return NULL;
    snprintf(gs->key, sizeof gs->key, "%s/%llu", node, (unsigned long long)handle);
    snprintf(gs->node, sizeof gs->node, "%s", node);
    gs->handle = handle;
    gs->r = r;
    int hash_oom = 0;
    HASH_ADD_STR(r->guests, key, gs);
    if (hash_oom) {
        free(gs);
        return NULL;
    }
    r->nguests++;
    assert(HASH_COUNT(r->guests) == r->nguests);
    return gs;
}

static void guest_free(guest *gs) {
    remote *r = gs->r;
    hold_guest_gone(gs);
    HASH_DEL(r->guests, gs);
    r->nguests--;
    assert(HASH_COUNT(r->guests) == r->nguests);
    free(gs);
}

static sink guest_sink(guest *gs) {
    return (sink){.ops = &guest_sink_ops, .dest = gs};
}

/* Two messages the same broadcast: one wire form serves both recipients. */
static bool same_broadcast(const outbox *ob, const srv_msg *m) {
    return ob->last_msg && m->type != SRV_MSG_ERROR && !m->resume_code[0] &&
           m->json == ob->last_json && m->view == ob->last_view &&
           m->type == ob->last.type && m->subject == ob->last.subject &&
           m->moved == ob->last.moved && m->reason == ob->last.reason;
}

/* m's wire form for ob's node (borrowed: ob keeps it as its last): the
 * last one made if m is the same broadcast, so that it is made once however
 * many guests of the node it goes to. *bytes: about what one more recipient
 * of it costs. NULL if memory runs out. */
static json_t *wire_form(remote *r, outbox *ob, const srv_msg *m, size_t *bytes) {
    if (same_broadcast(ob, m)) {
        *bytes = 24;
        return ob->last_msg;
    }
    json_t *msg = wire_msg(m, now_ms(r));
    if (!msg) return NULL;
    outbox_forget_last(ob);
    ob->last_msg = msg;
    ob->last_json = m->json ? srv_buf_ref(m->json) : NULL;
    ob->last_view = m->view ? srv_view_ref(m->view) : NULL;
    ob->last = *m;
    *bytes = 200 + (m->json ? m->json->len * 2 : 0) +
             (m->view ? 120 * (size_t)m->view->nseats : 0);
    return msg;
}

static void guest_deliver(void *dest, const srv_msg *m) {
    guest *gs = dest;
    remote *r = gs->r;
    assert(gs->p && gs->p->sink.dest == gs); /* a guest and its player in step */
    outbox *ob = outbox_for(r, gs->node);
    if (!ob) return;
    r->guest_messages++;
    size_t bytes;
    json_t *msg = wire_form(r, ob, m, &bytes);
    json_t *to =
        msg ? json_pack("[II]", (json_int_t)gs->handle, (json_int_t)gs->p->id) : NULL;
    if (!to) return;
    /* Held if its record is not yet durable (an `end`), or if something of
     * this guest's is held: this guest's alone. */
    guest_send(r, gs, json_incref(msg), to, bytes, m->durable_at);
}

static void guest_close(void *dest, sink_close_reason why) {
    guest *gs = dest;
    guest_send_op(gs->r, gs,
                  json_pack("{s:s,s:I,s:i}", "k", "close", "h", (json_int_t)gs->handle,
                            "why", (int)why));
    guest_free(gs);
}

static bool guest_alive(const void *dest) {
    (void)dest;
    return true; /* until its node says it is gone, or is seen gone */
}

static unsigned guest_game_start_wait(void *dest) {
    (void)dest;
    return 0; /* counted by the node that holds the connection, before it asks */
}

static size_t guest_addr_key(const void *dest, unsigned char *key) {
    const guest *gs = dest;
    memcpy(key, gs->addr, gs->addr_len);
    return gs->addr_len;
}

bool remote_is_guest(const srv_player *p) {
    return p->sink.ops == &guest_sink_ops;
}

static const sink_ops guest_sink_ops = {
    .deliver = guest_deliver,
    .close = guest_close,
    .alive = guest_alive,
    .game_start_wait = guest_game_start_wait,
    .addr_key = guest_addr_key,
};

/* A player's address key as hex for its guest ("" when it has none). */
void remote_addr_hex(const srv_player *p, char *hex) {
    unsigned char key[SINK_ADDR_KEY_MAX];
    size_t len = p->sink.ops && p->sink.ops->addr_key
                     ? p->sink.ops->addr_key(p->sink.dest, key)
                     : 0;
    if (len > SINK_ADDR_KEY_MAX) len = 0;
    proto_hex_encode(key, len, hex);
}

/* The key a guest's "ad" carries; anything else leaves it unknown. */
static void guest_set_addr(guest *gs, const char *hex) {
    gs->addr_len = 0;
    size_t n = hex ? strlen(hex) : 0;
    if (!n || n % 2 || n / 2 > SINK_ADDR_KEY_MAX) return;
    if (proto_hex_decode(hex, gs->addr, n / 2)) gs->addr_len = n / 2;
}

/* The guest's connection is gone: its seat waits like any dropped one's. */
void guest_gone(guest *gs) {
    srv_player *p = gs->p;
    guest_free(gs);
    if (p) lobby_player_gone(p);
}

/* A forwarded request: the first one of a connection makes its guest. */
void guest_on_request(remote *r, const char *from, const json_t *op) {
    json_int_t handle = json_integer_value(json_object_get(op, "h"));
    guest *gs = guest_find(r, from, (uint64_t)handle);
    if (!gs) {
        if (!json_is_true(json_object_get(op, "new"))) {
            /* A guest this node no longer has (it gave its rooms up, or
             * restarted): the home must let go. */
            outbox_send_op(r, from,
                           json_pack("{s:s,s:I,s:i}", "k", "close", "h", handle, "why",
                                     (int)SINK_DISMISSED));
            return;
        }
        const char *name = json_string_value(json_object_get(op, "nm"));
        const char *token = json_string_value(json_object_get(op, "tk"));
        json_int_t id = json_integer_value(json_object_get(op, "id"));
        if (!name || !proto_valid_name(name) || !token || id <= 0) return;
        if (!(gs = guest_new(r, from, (uint64_t)handle))) return;
        guest_set_addr(gs, json_string_value(json_object_get(op, "ad")));
        gs->p = lobby_player_adopt(r->g, guest_sink(gs), (uint64_t)id, name, token);
        if (!gs->p) {
            guest_close(gs, SINK_NO_MEMORY);
            return;
        }
        gs->p->wants_resume_code = json_is_true(json_object_get(op, "rc"));
        /* Its account, as this node's table has it (the watch brings another
         * node's registrations within moments; one not here yet races as a
         * guest, unrated for it). */
        const char *account = json_string_value(json_object_get(op, "ac"));
        if (account && proto_valid_name(account))
            gs->p->account = acct_find(&r->g->accounts, account);
    }
    proto_request req;
    if (wire_request_parse(json_object_get(op, "q"), &req) < 0) return;
    const char *move_to = json_string_value(json_object_get(op, "move_to"));
    if (move_to) {
        /* Its connection's node would take it elsewhere: not from a race. */
        srv_player *p = gs->p;
        if (lobby_refuse_if_racing(p)) return;
        lobby_leave_quietly(p);
        guest_send_op(r, gs,
                      json_pack("{s:s,s:I,s:s,s:O}", "k", "moved", "h", handle, "to",
                                move_to, "q", json_object_get(op, "q")));
        guest_free(gs);
        p->sink = (sink){0};
        srv_player_release(p);
        return;
    }
    if (req.type == PROTO_REQ_HELLO) {
        if (proto_valid_name(req.name)) lobby_hello(gs->p, &req);
        return;
    }
    if (req.type != PROTO_REQ_RESUME) /* resumes go through find */
        lobby_request(gs->p, &req);
    proto_request_clear(&req);
}

/* "Who holds this seat?": the node that does takes it back for the asker.
 * The other questions (history, replay, where a room is) are answered. */
void guest_on_find(remote *r, const json_t *q) {
    const char *from = json_string_value(json_object_get(q, "from"));
    const char *token = json_string_value(json_object_get(q, "tk"));
    const char *code = json_string_value(json_object_get(q, "c"));
    json_int_t handle = json_integer_value(json_object_get(q, "h"));
    if (!from || !strcmp(from, r->name) || strlen(from) >= NODE_NAME_MAX) return;
    const char *kind = json_string_value(json_object_get(q, "k"));
    if (kind && strcmp(kind, "resume") != 0) {
        gather_answer(r, from, kind, q);
        return;
    }
    srv_player *p = token && token[0] ? lobby_find_resumable(r->g, token)
                    : code            ? lobby_find_by_code(r->g, code)
                                      : NULL;
    if (!p) {
        /* Said, so that the asker need not wait out its deadline when no
         * node has the seat. */
        outbox_send_op(r, from, json_pack("{s:s,s:I}", "k", "noseat", "h", handle));
        return;
    }
    guest *gs = guest_find(r, from, (uint64_t)handle);
    if (!gs && !(gs = guest_new(r, from, (uint64_t)handle))) return;
    guest_set_addr(gs, json_string_value(json_object_get(q, "ad")));
    gs->p = p;
    p->wants_resume_code = json_is_true(json_object_get(q, "rc"));
    srv_log(SRV_LOG_DEBUG, "player %llu resumed through node %s",
            (unsigned long long)p->id, from);
    lobby_take_back(p, guest_sink(gs));
}

void remote_give_up(remote *r) {
    holds_give_up(r); /* an `end` the cluster's records may lack: never seen */
    guest *gs, *gtmp;
    HASH_ITER(hh, r->guests, gs, gtmp) {
        srv_player *p = gs->p;
        guest_close(gs, SINK_DISMISSED); /* its node says unavailable: resume */
        if (p) {
            p->sink = (sink){0};
            srv_player_release(p);
        }
    }
}
