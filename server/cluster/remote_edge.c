/* remote_edge.c - homes: players here in other nodes' rooms, their requests routed. */
#include "remote_internal.h"

#include "journal.h"
#include "lobby.h"
#include "room.h"
#include "wire.h"

/* ------------------------------------------------------------- the edge --- */

remote_home *home_find(remote *r, uint64_t handle) {
    remote_home *h = NULL;
    HASH_FIND(hh, r->homes, &handle, sizeof handle, h);
    return h;
}

remote_home *home_new(remote *r, srv_player *p, const char *node) {
    assert(!p->home); /* one home a player: its old one is released first */
    remote_home *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->handle = ++r->next_handle;
    snprintf(h->node, sizeof h->node, "%s", node);
    h->p = p;
    h->since = now_ms(r);
    int hash_oom = 0;
    HASH_ADD(hh, r->homes, handle, sizeof h->handle, h);
    if (hash_oom) {
        free(h);
        return NULL;
    }
    p->home = h;
    r->nhomes++;
    assert(HASH_COUNT(r->homes) == r->nhomes);
    return h;
}

/* p's requests come back to this node; tell_owner: its guest there goes. */
void home_release(remote *r, remote_home *h, bool tell_owner) {
    assert(h->p->home == h); /* a home and its player point at each other */
    if (tell_owner && h->introduced && h->node[0])
        outbox_send_op(r, h->node,
                       json_pack("{s:s,s:I}", "k", "gone", "h", (json_int_t)h->handle));
    h->p->home = NULL;
    HASH_DEL(r->homes, h);
    r->nhomes--;
    assert(HASH_COUNT(r->homes) == r->nhomes);
    free(h);
}

/* Back from NATS being away (or hung), a node whose presence expired or
 * whose subscriptions went meanwhile is not judged gone before it has had
 * the TTL to renew and subscribe again (remote_check_nodes, the probes).
 * The link tracks the break itself: a check now and then could miss one. */
bool remote_settled(const remote *r) {
    return cluster_steady_ms(r->c) >= CLUSTER_TTL_MS;
}

static bool node_reachable(remote *r, const char *node) {
    return cluster_connected(r->c) &&
           (cluster_node_alive(r->c, node) || !remote_settled(r));
}

/* Sends req of p's home to its node (its first request introduces it). */
void home_forward(remote *r, remote_home *h, const proto_request *req) {
    json_t *op = json_pack("{s:s,s:I,s:o}", "k", "req", "h", (json_int_t)h->handle, "q",
                           wire_request(req));
    if (!op) return;
    if (req->type == PROTO_REQ_ARENA_JOIN)
        snprintf(h->arena, sizeof h->arena, "%s", req->room);
    else if (req->type == PROTO_REQ_ARENA_LEAVE && !strcmp(h->arena, req->room))
        h->arena[0] = '\0';
    if (!h->introduced) {
        srv_player *p = h->p;
        json_object_set_new(op, "new", json_true());
        json_object_set_new(op, "id", json_integer((json_int_t)p->id));
        json_object_set_new(op, "nm", json_string(p->name));
        json_object_set_new(op, "tk", json_string(p->token));
        if (p->wants_resume_code) json_object_set_new(op, "rc", json_true());
        /* Logged in here: its seats there are its account's (rated races rate
         * it; accounts are the cluster's, every node has them). */
        if (p->account) json_object_set_new(op, "ac", json_string(p->account->name));
        char hex[2 * SINK_ADDR_KEY_MAX + 1];
        remote_addr_hex(p, hex);
        if (hex[0]) json_object_set_new(op, "ad", json_string(hex));
        h->introduced = true;
    }
    outbox_send_op(r, h->node, op);
}

/* p's requests are to go to node `target` (this node's name: here) for req:
 * its present home is asked first, as the lobby there must refuse it in a
 * running race (busy) like any lobby; if it agrees it lets p go ("moved")
 * and req goes on from there (home_on_moved). False if p has no home to ask. */
bool move_home(remote *r, srv_player *p, const proto_request *req, const char *target) {
    remote_home *h = p->home;
    if (!h || h->resume_deadline) return false;
    if (!h->introduced || !node_reachable(r, h->node)) {
        home_release(r, h, true);
        return false;
    }
    outbox_send_op(r, h->node,
                   json_pack("{s:s,s:I,s:o,s:s}", "k", "req", "h", (json_int_t)h->handle,
                             "q", wire_request(req), "move_to", target));
    return true;
}

/* join or watch of a room that node runs (or a quick for its host): p's
 * requests go there. */
void home_route_to_node(remote *r, srv_player *p, const proto_request *req,
                        const char *node) {
    remote_home *h = p->home;
    /* A resume began since a join asked every node (gather_done): the resume
     * answers; a second home would leave the first pointing at p. */
    if (h && h->resume_deadline) return;
    if (!node_reachable(r, node)) {
        send_unavailable(p,
                         "the node that runs that room cannot be reached now; try again");
        return;
    }
    if (h && strcmp(h->node, node) != 0) {
        if (move_home(r, p, req, node)) return;
        h = NULL;
    }
    if (!h) {
        if (lobby_refuse_if_racing(p)) return;
        lobby_leave_quietly(p);
        if (!(h = home_new(r, p, node))) {
            srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
            return;
        }
    }
    home_forward(r, h, req);
}

/* join or watch: the room is here, elsewhere (forward), or not known here
 * yet (a room made on another node a moment ago): every node is asked. */
static bool route_to_room(remote *r, srv_player *p, proto_request *req) {
    remote_home *h = p->home;
    dir_entry *e = NULL;
    if (room_find(r->g, req->room)) /* this node's room: this node answers */
        return move_home(r, p, req, r->name);
    HASH_FIND_STR(r->dir, req->room, e);
    if (e && strcmp(e->node, r->name) != 0 && cluster_node_alive(r->c, e->node)) {
        home_route_to_node(r, p, req, e->node);
        return true;
    }
    if (!cluster_connected(r->c)) {
        send_unavailable(p, "this node cannot reach the others now, and that room is not "
                            "here; try again");
        return true;
    }
    if (gather_ask_everyone(r, p, GATHER_ROOM, req)) return true;
    if (e && strcmp(e->node, r->name) != 0) {
        home_route_to_node(r, p, req, e->node); /* says unavailable */
        return true;
    }
    if (h && !h->resume_deadline && node_reachable(r, h->node)) {
        home_forward(r, h, req); /* its home says there is no such room */
        return true;
    }
    return false;
}

/* remote_route's decision and action: true if req was taken. It never clears req
 * (lobby_request, which it may call, does: a second clear does nothing). */
static bool route(remote *r, srv_player *p, proto_request *req) {
    bool taken = false;
    remote_home *h = p->home;
    if (h && h->resume_deadline) return false; /* asking for its seat: nothing yet */
    switch (req->type) {
    case PROTO_REQ_HISTORY:
        lobby_welcome(p);
        taken = gather_ask_shared(r, &r->history_asked, GATHER_HISTORY, p, req->limit);
        break;
    case PROTO_REQ_REPLAY:
        lobby_welcome(p);
        if (req->has_game && journal_replay(r->g->journal, req->game))
            return false; /* this node has it */
        taken = gather_ask_everyone(r, p, GATHER_REPLAY, req);
        break;
    case PROTO_REQ_PING:
    case PROTO_REQ_RESUME:
    case PROTO_REQ_NONE:
    /* Accounts are the cluster's (NATS KV, and every node's table kept in step
     * by its watch): this node answers them, wherever p's room runs. */
    case PROTO_REQ_REGISTER:
    case PROTO_REQ_LEADERBOARD:
    case PROTO_REQ_PROFILE:
    case PROTO_REQ_ARENA_CREATE: /* an arena runs on the node that got its create */
        return false;
    case PROTO_REQ_ARENAS:
        lobby_welcome(p);
        taken = gather_ask_shared(r, &r->arenas_asked, GATHER_ARENAS, p, 0);
        break;
    case PROTO_REQ_ARENA_JOIN:
    case PROTO_REQ_ARENA_LEAVE:
    case PROTO_REQ_ARENA_RESULTS:
        /* To the node that runs the arena: an entrant there is a guest like
         * a racer in a room there (remote_arena.c). */
        lobby_welcome(p);
        taken = arena_route(r, p, req);
        break;
    case PROTO_REQ_DAILY:
        /* A daily game is played where the account logged in (its claim is
         * this node's to make): p comes back from the other node's room
         * first, as for a join of a room here (busy in a running race). */
        lobby_welcome(p);
        return move_home(r, p, req, r->name);
    case PROTO_REQ_ROOMS:
        lobby_welcome(p);
        taken = gather_ask_shared(r, &r->rooms_asked, GATHER_ROOMS, p, 0);
        break;
    case PROTO_REQ_JOIN:
    case PROTO_REQ_WATCH:
        lobby_welcome(p);
        taken = route_to_room(r, p, req);
        break;
    case PROTO_REQ_QUICK: {
        /* Every quick with these settings meets on one node, so that the
         * queue's count is the cluster's and the first match is made at once. */
        char host[NODE_NAME_MAX];
        quick_host(r, &req->settings, host);
        if (!strcmp(host, r->name)) {
            if (!h || h->resume_deadline) return false;
            lobby_welcome(p);
            taken = true;
            if (lobby_allow_game(p) && !move_home(r, p, req, host)) lobby_request(p, req);
            return true;
        }
        lobby_welcome(p);
        taken = true;
        if (lobby_allow_game(p)) home_route_to_node(r, p, req, host);
        break;
    }
    default: /* solo, create, move, leave, rematch, hello */
        if (!h || h->resume_deadline) return false;
        lobby_welcome(p);
        taken = true;
        if (req->type == PROTO_REQ_HELLO) memcpy(p->name, req->name, sizeof p->name);
        if ((req->type == PROTO_REQ_SOLO || req->type == PROTO_REQ_CREATE) &&
            !lobby_allow_game(p))
            break;
        if (!node_reachable(r, h->node))
            send_unavailable(p, "the node that runs your room cannot be reached now; try "
                                "again");
        else
            home_forward(r, h, req);
        break;
    }
    return taken;
}

bool remote_route(remote *r, srv_player *p, proto_request *req) {
    bool taken = route(r, p, req);
    /* A ping is this node's lobby's to answer, never taken: what it owns
     * (ping_t) goes back in its pong. */
    assert(!taken || req->type != PROTO_REQ_PING);
    return taken; /* borrowed, taken or not: the caller clears req */
}

bool remote_connected(remote *r) {
    return cluster_connected(r->c);
}

void remote_player_gone(remote *r, srv_player *p) {
    if (p->home) home_release(r, p->home, true);
    gathers_forget(r, p);
    arena_rejoins_forget(r, p);
}

/* A welcome from the owner (a resume found the seat there): p is the
 * seat's player, under the name and token the welcome says. */
static void welcomed_as(srv_player *p, const srv_msg *m) {
    json_error_t err;
    json_t *w = m->json ? json_loadb(m->json->data, m->json->len, 0, &err) : NULL;
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *token = json_string_value(json_object_get(w, "token"));
    if (name && token && proto_valid_name(name))
        lobby_player_seated_elsewhere(p, name, token);
    else
        p->welcomed = true;
    json_decref(w);
}

/* The owner's messages for players here. */
void home_on_messages(remote *r, const char *from, const json_t *op) {
    srv_msg m;
    char text[512];
    if (wire_msg_parse(json_object_get(op, "m"), now_ms(r), &m, text, sizeof text) < 0) {
        srv_log(SRV_LOG_WARN, "node %s sent a message this node cannot read", from);
        return;
    }
    const json_t *to = json_object_get(op, "to");
    size_t i;
    const json_t *each;
    json_array_foreach(to, i, each) {
        json_int_t handle, id;
        if (json_unpack((json_t *)each, "[II]", &handle, &id) < 0) continue;
        remote_home *h = home_find(r, (uint64_t)handle);
        if (!h) continue; /* its connection is gone; the "gone" is on its way */
        if (strcmp(h->node, from) != 0) {
            if (!h->resume_deadline) {
                /* Not its home (a second node that answered a resume): that
                 * node lets go of the seat again. */
                outbox_send_op(r, from, json_pack("{s:s,s:I}", "k", "gone", "h", handle));
                continue;
            }
            snprintf(h->node, sizeof h->node, "%s", from); /* the resume found it */
            h->resume_deadline = 0;
            h->reask_at = 0;
        }
        assert(h->p->home == h);
        h->p->id = (uint64_t)id; /* a resumed seat's id: text mode finds its board */
        if (m.type == SRV_MSG_START) h->racing = true;
        if (m.type == SRV_MSG_END) h->racing = false;
        if (m.type == SRV_MSG_WELCOME) welcomed_as(h->p, &m);
        srv_send(h->p, &m);
    }
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
}

/* The owner let p go for a request that goes on elsewhere. */
void home_on_moved(remote *r, const char *from, const json_t *op) {
    remote_home *h = home_find(r, (uint64_t)json_integer_value(json_object_get(op, "h")));
    const char *to = json_string_value(json_object_get(op, "to"));
    proto_request req;
    if (!h || strcmp(h->node, from) != 0 || !to ||
        wire_request_parse(json_object_get(op, "q"), &req) < 0)
        return;
    srv_player *p = h->p;
    home_release(r, h, false);
    if (!strcmp(to, r->name))
        lobby_request(p, &req);
    else
        home_route_to_node(r, p, &req, to);
    proto_request_clear(&req);
}

/* The owner let go of a player here. */
void home_on_close(remote *r, const char *from, const json_t *op) {
    remote_home *h = home_find(r, (uint64_t)json_integer_value(json_object_get(op, "h")));
    if (!h || strcmp(h->node, from) != 0) return;
    srv_player *p = h->p;
    int why = (int)json_integer_value(json_object_get(op, "why"));
    home_release(r, h, false);
    if (why == SINK_TAKEN_OVER && p->sink.ops) {
        sink s = p->sink;
        p->sink = (sink){0};
        s.ops->close(s.dest, SINK_TAKEN_OVER);
        srv_player_release(p);
        return;
    }
    send_unavailable(p, "the node that ran your room let go of it; resume to go on");
}
