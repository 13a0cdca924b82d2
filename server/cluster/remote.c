/* remote.c - players of other nodes: directory, forwarded requests, their messages back,
 * resume and quick across the cluster. */
#include "remote.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "journal.h"
#include "lobby.h"
#include "metrics.h"
#include "room.h"
#include "wire.h"

#define NODE_SUBJECT "race2048.node."
#define FIND_SUBJECT "race2048.find"
#define DIR_BUCKET   CLUSTER_ROOMS_BUCKET
#define DIR_SUBJECT  "$KV." DIR_BUCKET "."
/* Probes of the nodes that run rooms of players here: a publish to the
 * node's subject with a reply subject PROBE_SUBJECT "ME.NODE", which NATS
 * answers with "no responders" once nobody listens there (the node is dead:
 * its connection closed). */
#define PROBE_SUBJECT "race2048.probe."
/* Probes that found nobody, in a row, before a node is taken for gone. */
#define PROBE_MISSES  2
#define TICK_MS       100
#define DEAD_CHECK_MS 500
/* A home younger than this is not judged by a count of the nodes that may
 * be older than the home (its node may have just started). */
#define HOME_GRACE_MS 3000
/* An outbox past this is sent at once rather than at the end of the turn:
 * NATS takes up to 1 MB a message. */
#define OUTBOX_FLUSH_BYTES (256 * 1024)
#define NODE_NAME_MAX      64
/* The most an outbox may hold while an `end` in it waits for the journal. */
#define OUTBOX_HELD_MAX (8 * 1024 * 1024)

/* ---------------------------------------------------------------- state --- */

/* Edge side: a player here whose requests go to node `node`. */
typedef struct remote_home {
    uint64_t handle; /* how the owner addresses it */
    char node[NODE_NAME_MAX];
    srv_player *p;
    bool introduced;          /* the owner has a guest for it */
    uint64_t resume_deadline; /* loop ms, while a resume asks every node */
    uint64_t since;           /* loop ms it was made */
    bool resume_by_code;
    /* While a resume asks: the other nodes asked, and how many said they
     * have no such seat (once all have, it fails at once, unless a node's
     * races are being taken over: then it asks again at reask_at, until
     * resume_until). The token or code it asks with. */
    int resume_asked, resume_refused;
    uint64_t reask_at, resume_until;
    char resume_key[PROTO_TOKEN_MAX + 1];
    UT_hash_handle hh;
} remote_home;

/* Owner side: a player of another node's connection, in this node's game. */
typedef struct guest {
    char key[NODE_NAME_MAX + 24]; /* "node/handle" */
    char node[NODE_NAME_MAX];
    uint64_t handle;
    srv_player *p;
    remote *r;
    /* Its connection's address key, as its node counts it (bots it asks for
     * count against it here: --max-bots-per-ip); addr_len 0: unknown. */
    unsigned char addr[SINK_ADDR_KEY_MAX];
    size_t addr_len;
    UT_hash_handle hh;
} guest;

/* What goes to one node at the end of the turn. */
typedef struct outbox {
    char node[NODE_NAME_MAX];
    json_t *ops;
    size_t bytes;        /* about what ops will take as text */
    uint64_t durable_at; /* an `end` in it waits for this journal position */
    /* The last message entry, so that the same broadcast to more guests of
     * the node adds recipients instead of entries (references held, so an
     * address cannot be reused meanwhile). */
    json_t *last_to;
    srv_buf *last_json;
    srv_view *last_view;
    srv_msg last;
    UT_hash_handle hh;
} outbox;

/* A node that runs rooms of players here, probed every tick. */
typedef struct probe {
    char node[NODE_NAME_MAX];
    int misses;   /* probes in a row that nobody received */
    bool refused; /* the last one's "no responders" came */
    bool seen;    /* a home still has this node (the walk in progress) */
    UT_hash_handle hh;
} probe;

/* The directory as this node last heard it: another node's listed room. */
typedef struct dir_entry {
    char code[PROTO_ROOM_MAX + 1];
    char node[NODE_NAME_MAX];
    int players;
    bool started;
    proto_settings settings;
    /* Who is in it, as `rooms` rows say (only the answers to `rooms` carry
     * them, not the directory): seats_known false if the node did not say. */
    bool seats_known;
    char names[PROTO_PLAYERS_MAX][PROTO_NAME_MAX + 1];
    uint64_t scores[PROTO_PLAYERS_MAX];
    int bots, spectators;
    UT_hash_handle hh;
} dir_entry;

/* What this node has put in the directory, to put only what changes. */
typedef struct published {
    char code[PROTO_ROOM_MAX + 1];
    char value[128];
    bool seen; /* by the sync in progress */
    UT_hash_handle hh;
} published;

/* Edge side: a question to every node (history, replay, where a room is)
 * waiting for their answers. */
typedef enum gather_kind {
    GATHER_ROOM,
    GATHER_HISTORY,
    GATHER_REPLAY,
    GATHER_ROOMS
} gather_kind;
/* One who waits for a shared question (rooms, history) and how many rows
 * it asked for. */
typedef struct waiter {
    srv_player *p;
    int limit;
} waiter;

typedef struct gather {
    struct gather *next;
    uint64_t id;
    gather_kind kind;
    srv_player *p;
    proto_request req; /* what p asked (join/watch: done once the room is found) */
    int expected, answered;
    uint64_t deadline;
    char found_at[NODE_NAME_MAX]; /* GATHER_ROOM: the node that has it */
    proto_game_record *games;     /* GATHER_HISTORY, REPLAY: what came back */
    int ngames, cap;
    /* GATHER_ROOMS: the other nodes' rows, and everyone who asked while it
     * was on its way (one question at a time, however many ask). */
    struct dir_entry *rows;
    int nrows, rows_cap;
    struct waiter *waiters;
    int nwaiters, waiters_cap;
} gather;

typedef struct inbox_msg {
    struct inbox_msg *next;
    natsMsg *msg;
} inbox_msg;

struct remote {
    game *g;
    cluster *c;
    natsConnection *nc;
    kvStore *dir_kv;
    char name[NODE_NAME_MAX];
    natsSubscription *sub_node, *sub_find, *sub_dir, *sub_probe;
    /* NATS callbacks run on libnats's threads: they queue, the loop acts. */
    uv_mutex_t lock;
    inbox_msg *in_head, *in_tail;
    bool closing;
    uv_async_t wake;
    uv_prepare_t flush;
    uv_timer_t tick;
    remote_home *homes;
    guest *guests;
    outbox *outboxes;
    dir_entry *dir;
    published *pub;
    probe *probes;
    gather *gathers;
    /* The GATHER_ROOMS and GATHER_HISTORY on their way, or NULL: one of each
     * at a time, however many ask, so that a flood of them costs the other
     * nodes nothing more. */
    gather *rooms_asked, *history_asked;
    uint64_t next_gather;
    uint64_t next_handle;
    uint64_t rooms_gen; /* the game's, as last put in the directory */
    bool dir_dirty;
    uint64_t connected_since; /* check_nodes: when NATS was reached again */
    uint64_t dead_check_at;
    /* Until then a node that ran rooms is known gone and its races may not
     * be taken over yet: a resume that finds no seat waits for them. */
    uint64_t takeover_until;
    unsigned nhomes, nguests;
    /* For /metrics: NATS messages (and their bytes) this node published,
     * and messages its rooms handed to guests. */
    uint64_t published, published_bytes, guest_messages;
    int open_handles;      /* of wake, flush, tick */
    bool free_when_closed; /* remote_open failed: the last close frees r */
    void (*resume_failed)(srv_player *p, bool by_code);
    void (*resume_here)(srv_player *asker, srv_player *seat);
};

static const sink_ops guest_sink_ops;

static uint64_t now_ms(const remote *r) {
    return uv_now(r->g->loop);
}

static void send_unavailable(srv_player *p, const char *why) {
    srv_send_error(p, PROTO_ERR_UNAVAILABLE, why);
}

/* --------------------------------------------------------------- outbox --- */

static void outbox_forget_last(outbox *ob) {
    if (ob->last_json) srv_buf_unref(ob->last_json);
    srv_view_unref(ob->last_view);
    ob->last_to = NULL;
    ob->last_json = NULL;
    ob->last_view = NULL;
}

static outbox *outbox_for(remote *r, const char *node) {
    outbox *ob = NULL;
    HASH_FIND_STR(r->outboxes, node, ob);
    if (ob) return ob;
    if (!(ob = calloc(1, sizeof *ob))) return NULL;
    snprintf(ob->node, sizeof ob->node, "%s", node);
    if (!(ob->ops = json_array())) {
        free(ob);
        return NULL;
    }
    int hash_oom = 0;
    HASH_ADD_STR(r->outboxes, node, ob);
    if (hash_oom) {
        json_decref(ob->ops);
        free(ob);
        return NULL;
    }
    return ob;
}

static void publish(remote *r, const char *subject, json_t *body) {
    char *data = json_dumps(body, JSON_COMPACT);
    if (!data) return; /* out of memory: as if NATS had lost it */
    size_t len = strlen(data);
    if (natsConnection_Publish(r->nc, subject, data, (int)len) == NATS_OK) {
        r->published++;
        r->published_bytes += len;
    }
    free(data);
}

/* Sends ob's entries, unless an `end` among them still waits for the journal. */
static void outbox_send(remote *r, outbox *ob) {
    if (!json_array_size(ob->ops)) return;
    if (ob->durable_at && journal_durable_pos(r->g->journal) < ob->durable_at) return;
    char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
    snprintf(subject, sizeof subject, NODE_SUBJECT "%s", ob->node);
    json_t *body = json_pack("{s:s,s:O}", "from", r->name, "ops", ob->ops);
    if (body) publish(r, subject, body);
    json_decref(body);
    json_array_clear(ob->ops);
    outbox_forget_last(ob);
    ob->bytes = 0;
    ob->durable_at = 0;
}

static void outbox_add(remote *r, outbox *ob, json_t *op, size_t bytes) {
    if (!op) return;
    json_array_append_new(ob->ops, op);
    ob->bytes += bytes;
    if (ob->bytes >= OUTBOX_FLUSH_BYTES) outbox_send(r, ob);
    if (ob->bytes >= OUTBOX_HELD_MAX) {
        /* Held that long, the journal cannot commit (NATS is away, and the
         * node is about to give its rooms up): what waits is let go rather
         * than let grow. */
        srv_log(SRV_LOG_WARN, "messages for node %s held for the journal: dropped",
                ob->node);
        json_array_clear(ob->ops);
        outbox_forget_last(ob);
        ob->bytes = 0;
        ob->durable_at = 0;
    }
}

/* An op to node (made by the caller; NULL is nothing). */
static void send_op(remote *r, const char *node, json_t *op) {
    outbox *ob = outbox_for(r, node);
    if (!ob) {
        json_decref(op);
        return;
    }
    outbox_add(r, ob, op, 128);
}

static void sync_directory(remote *r);

static void on_flush(uv_prepare_t *h) {
    remote *r = h->data;
    sync_directory(r); /* a room made this turn is listed everywhere now */
    outbox *ob, *tmp;
    HASH_ITER(hh, r->outboxes, ob, tmp) outbox_send(r, ob);
}

/* ------------------------------------------------------------ the owner --- */

static guest *guest_find(remote *r, const char *node, uint64_t handle) {
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
    return gs;
}

static void guest_free(guest *gs) {
    remote *r = gs->r;
    HASH_DEL(r->guests, gs);
    r->nguests--;
    free(gs);
}

static sink guest_sink(guest *gs) {
    return (sink){.ops = &guest_sink_ops, .dest = gs};
}

/* Two messages the same broadcast: one entry can carry both recipients. */
static bool same_broadcast(const outbox *ob, const srv_msg *m) {
    return ob->last_to && m->type != SRV_MSG_ERROR && !m->resume_code[0] &&
           m->json == ob->last_json && m->view == ob->last_view &&
           m->type == ob->last.type && m->subject == ob->last.subject &&
           m->moved == ob->last.moved && m->reason == ob->last.reason;
}

static void guest_deliver(void *dest, const srv_msg *m) {
    guest *gs = dest;
    remote *r = gs->r;
    outbox *ob = outbox_for(r, gs->node);
    if (!ob) return;
    if (m->durable_at > ob->durable_at) ob->durable_at = m->durable_at;
    r->guest_messages++;
    json_t *to = json_pack("[II]", (json_int_t)gs->handle, (json_int_t)gs->p->id);
    if (!to) return;
    if (same_broadcast(ob, m)) {
        json_array_append_new(ob->last_to, to);
        ob->bytes += 24;
        return;
    }
    json_t *msg = wire_msg(m, now_ms(r));
    json_t *recipients = json_array();
    json_t *op = msg && recipients
                     ? json_pack("{s:s,s:O,s:o}", "k", "msg", "to", recipients, "m", msg)
                     : NULL;
    if (!op) {
        json_decref(msg);
        json_decref(recipients);
        json_decref(to);
        return;
    }
    json_array_append_new(recipients, to);
    outbox_forget_last(ob);
    size_t bytes = 200 + (m->json ? m->json->len * 2 : 0) +
                   (m->view ? 120 * (size_t)m->view->nseats : 0);
    ob->last_to = recipients;
    ob->last_json = m->json ? srv_buf_ref(m->json) : NULL;
    ob->last_view = m->view ? srv_view_ref(m->view) : NULL;
    ob->last = *m;
    json_decref(recipients); /* op holds it */
    outbox_add(r, ob, op, bytes);
}

static void guest_close(void *dest, sink_close_reason why) {
    guest *gs = dest;
    send_op(gs->r, gs->node,
            json_pack("{s:s,s:I,s:i}", "k", "close", "h", (json_int_t)gs->handle, "why",
                      (int)why));
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

static const sink_ops guest_sink_ops = {
    .deliver = guest_deliver,
    .close = guest_close,
    .alive = guest_alive,
    .game_start_wait = guest_game_start_wait,
    .addr_key = guest_addr_key,
};

/* A player's address key as hex for its guest ("" when it has none). */
static void addr_hex_of(const srv_player *p, char *hex) {
    unsigned char key[SINK_ADDR_KEY_MAX];
    size_t len = p->sink.ops && p->sink.ops->addr_key
                     ? p->sink.ops->addr_key(p->sink.dest, key)
                     : 0;
    if (len > SINK_ADDR_KEY_MAX) len = 0;
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    hex[2 * len] = '\0';
}

/* The key a guest's "ad" carries; anything else leaves it unknown. */
static void guest_set_addr(guest *gs, const char *hex) {
    gs->addr_len = 0;
    size_t n = hex ? strlen(hex) : 0;
    if (!n || n % 2 || n / 2 > SINK_ADDR_KEY_MAX) return;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return;
        gs->addr[i] = (unsigned char)v;
    }
    gs->addr_len = n / 2;
}

/* The guest's connection is gone: its seat waits like any dropped one's. */
static void guest_gone(guest *gs) {
    srv_player *p = gs->p;
    guest_free(gs);
    if (p) lobby_player_gone(p);
}

/* A forwarded request: the first one of a connection makes its guest. */
static void on_request(remote *r, const char *from, const json_t *op) {
    json_int_t handle = json_integer_value(json_object_get(op, "h"));
    guest *gs = guest_find(r, from, (uint64_t)handle);
    if (!gs) {
        if (!json_is_true(json_object_get(op, "new"))) {
            /* A guest this node no longer has (it gave its rooms up, or
             * restarted): the home must let go. */
            send_op(r, from,
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
    }
    proto_request req;
    if (wire_request_parse(json_object_get(op, "q"), &req) < 0) return;
    const char *move_to = json_string_value(json_object_get(op, "move_to"));
    if (move_to) {
        /* Its connection's node would take it elsewhere: not from a race. */
        srv_player *p = gs->p;
        if (lobby_refuse_if_racing(p)) return;
        lobby_leave_quietly(p);
        send_op(r, from,
                json_pack("{s:s,s:I,s:s,s:O}", "k", "moved", "h", handle, "to", move_to,
                          "q", json_object_get(op, "q")));
        guest_free(gs);
        p->sink = (sink){0};
        srv_player_release(p);
        return;
    }
    if (req.type == PROTO_REQ_HELLO) {
        if (proto_valid_name(req.name)) lobby_hello(gs->p, &req);
        return;
    }
    if (req.type == PROTO_REQ_RESUME) return; /* resumes go through find */
    lobby_request(gs->p, &req);
}

static void answer(remote *r, const char *from, const char *kind, const json_t *q);

/* "Who holds this seat?": the node that does takes it back for the asker.
 * The other questions (history, replay, where a room is) are answered. */
static void on_find(remote *r, const json_t *q) {
    const char *from = json_string_value(json_object_get(q, "from"));
    const char *token = json_string_value(json_object_get(q, "tk"));
    const char *code = json_string_value(json_object_get(q, "c"));
    json_int_t handle = json_integer_value(json_object_get(q, "h"));
    if (!from || !strcmp(from, r->name) || strlen(from) >= NODE_NAME_MAX) return;
    const char *kind = json_string_value(json_object_get(q, "k"));
    if (kind && strcmp(kind, "resume") != 0) {
        answer(r, from, kind, q);
        return;
    }
    srv_player *p = token && token[0] ? lobby_find_resumable(r->g, token)
                    : code            ? lobby_find_by_code(r->g, code)
                                      : NULL;
    if (!p) {
        /* Said, so that the asker need not wait out its deadline when no
         * node has the seat. */
        send_op(r, from, json_pack("{s:s,s:I}", "k", "noseat", "h", handle));
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

/* ------------------------------------------------------------- the edge --- */

static remote_home *home_find(remote *r, uint64_t handle) {
    remote_home *h = NULL;
    HASH_FIND(hh, r->homes, &handle, sizeof handle, h);
    return h;
}

static remote_home *home_new(remote *r, srv_player *p, const char *node) {
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
    return h;
}

/* p's requests come back to this node; tell_owner: its guest there goes. */
static void home_release(remote *r, remote_home *h, bool tell_owner) {
    if (tell_owner && h->introduced && h->node[0])
        send_op(r, h->node,
                json_pack("{s:s,s:I}", "k", "gone", "h", (json_int_t)h->handle));
    h->p->home = NULL;
    HASH_DEL(r->homes, h);
    r->nhomes--;
    free(h);
}

/* Back from NATS being away, a node whose presence expired meanwhile is not
 * judged gone before it has had the TTL to renew it (check_nodes). */
static bool settled(const remote *r, uint64_t now) {
    return r->connected_since && now - r->connected_since >= CLUSTER_TTL_MS;
}

static bool node_reachable(remote *r, const char *node) {
    return cluster_connected(r->c) &&
           (cluster_node_alive(r->c, node) || !settled(r, now_ms(r)));
}

/* Sends req of p's home to its node (its first request introduces it). */
static void forward(remote *r, remote_home *h, const proto_request *req) {
    json_t *op = json_pack("{s:s,s:I,s:o}", "k", "req", "h", (json_int_t)h->handle, "q",
                           wire_request(req));
    if (!op) return;
    if (!h->introduced) {
        srv_player *p = h->p;
        json_object_set_new(op, "new", json_true());
        json_object_set_new(op, "id", json_integer((json_int_t)p->id));
        json_object_set_new(op, "nm", json_string(p->name));
        json_object_set_new(op, "tk", json_string(p->token));
        if (p->wants_resume_code) json_object_set_new(op, "rc", json_true());
        char hex[2 * SINK_ADDR_KEY_MAX + 1];
        addr_hex_of(p, hex);
        if (hex[0]) json_object_set_new(op, "ad", json_string(hex));
        h->introduced = true;
    }
    send_op(r, h->node, op);
}

/* p's requests are to go to node `target` (this node's name: here) for req:
 * its present home is asked first, as the lobby there must refuse it in a
 * running race (busy) like any lobby; if it agrees it lets p go ("moved")
 * and req goes on from there (on_moved). False if p has no home to ask. */
static bool move_home(remote *r, srv_player *p, const proto_request *req,
                      const char *target) {
    remote_home *h = p->home;
    if (!h || h->resume_deadline) return false;
    if (!h->introduced || !node_reachable(r, h->node)) {
        home_release(r, h, true);
        return false;
    }
    send_op(r, h->node,
            json_pack("{s:s,s:I,s:o,s:s}", "k", "req", "h", (json_int_t)h->handle, "q",
                      wire_request(req), "move_to", target));
    return true;
}

/* join or watch of a room that node runs (or a quick for its host): p's
 * requests go there. */
static void route_to_node(remote *r, srv_player *p, const proto_request *req,
                          const char *node) {
    remote_home *h = p->home;
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
    forward(r, h, req);
}

static void gathers_forget(remote *r, const srv_player *p);
static void quick_host(remote *r, const proto_settings *key, char *out);
static bool ask_shared(remote *r, gather **slot, gather_kind kind, srv_player *p,
                       int limit);
static bool ask_everyone(remote *r, srv_player *p, gather_kind kind,
                         const proto_request *req);

/* join or watch: the room is here, elsewhere (forward), or not known here
 * yet (a room made on another node a moment ago): every node is asked. */
static bool route_to_room(remote *r, srv_player *p, proto_request *req) {
    remote_home *h = p->home;
    dir_entry *e = NULL;
    if (room_find(r->g, req->room)) /* this node's room: this node answers */
        return move_home(r, p, req, r->name);
    HASH_FIND_STR(r->dir, req->room, e);
    if (e && strcmp(e->node, r->name) != 0 && cluster_node_alive(r->c, e->node)) {
        route_to_node(r, p, req, e->node);
        return true;
    }
    if (!cluster_connected(r->c)) {
        send_unavailable(p, "this node cannot reach the others now, and that room is not "
                            "here; try again");
        return true;
    }
    if (ask_everyone(r, p, GATHER_ROOM, req)) return true;
    if (e && strcmp(e->node, r->name) != 0) {
        route_to_node(r, p, req, e->node); /* says unavailable */
        return true;
    }
    if (h && !h->resume_deadline && node_reachable(r, h->node)) {
        forward(r, h, req); /* its home says there is no such room */
        return true;
    }
    return false;
}

bool remote_route(remote *r, srv_player *p, proto_request *req) {
    bool taken = false;
    remote_home *h = p->home;
    if (h && h->resume_deadline) return false; /* asking for its seat: nothing yet */
    switch (req->type) {
    case PROTO_REQ_HISTORY:
        lobby_welcome(p);
        taken = ask_shared(r, &r->history_asked, GATHER_HISTORY, p, req->limit);
        break;
    case PROTO_REQ_REPLAY:
        lobby_welcome(p);
        if (req->has_game && journal_replay(r->g->journal, req->game))
            return false; /* this node has it */
        taken = ask_everyone(r, p, GATHER_REPLAY, req);
        break;
    case PROTO_REQ_PING:
    case PROTO_REQ_RESUME:
    case PROTO_REQ_NONE:
        return false;
    case PROTO_REQ_ROOMS:
        lobby_welcome(p);
        taken = ask_shared(r, &r->rooms_asked, GATHER_ROOMS, p, 0);
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
            return true; /* lobby_request clears req */
        }
        lobby_welcome(p);
        taken = true;
        if (lobby_allow_game(p)) route_to_node(r, p, req, host);
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
            forward(r, h, req);
        break;
    }
    if (taken) proto_request_clear(req);
    return taken;
}

void remote_give_up(remote *r) {
    outbox *ob, *otmp;
    HASH_ITER(hh, r->outboxes, ob, otmp) {
        if (!ob->durable_at || journal_durable_pos(r->g->journal) >= ob->durable_at)
            continue;
        /* An `end` the cluster's records may lack: nobody may see it. */
        json_array_clear(ob->ops);
        outbox_forget_last(ob);
        ob->bytes = 0;
        ob->durable_at = 0;
    }
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

bool remote_connected(remote *r) {
    return cluster_connected(r->c);
}

/* Asks every node for h's seat (a round: answered by the seat's messages,
 * or every node's noseat, or REMOTE_FIND_MS). */
static bool ask_round(remote *r, remote_home *h) {
    h->reask_at = 0;
    h->resume_refused = 0;
    h->resume_asked = (int)cluster_nodes_alive(r->c) - 1;
    h->resume_deadline = now_ms(r) + REMOTE_FIND_MS;
    json_t *q = json_pack("{s:s,s:s,s:I,s:b,s:s}", "k", "resume", "from", r->name, "h",
                          (json_int_t)h->handle, "rc", h->p->wants_resume_code,
                          h->resume_by_code ? "c" : "tk", h->resume_key);
    if (!q) return false;
    /* The client's address, so that bots the seat's node seats for it count
     * against the right address. */
    char hex[2 * SINK_ADDR_KEY_MAX + 1];
    addr_hex_of(h->p, hex);
    if (hex[0]) json_object_set_new(q, "ad", json_string(hex));
    publish(r, FIND_SUBJECT, q);
    json_decref(q);
    return true;
}

bool remote_resume(remote *r, srv_player *p, const proto_request *req) {
    if (!cluster_connected(r->c) || cluster_nodes_alive(r->c) < 2) return false;
    if (p->home) home_release(r, p->home, true);
    remote_home *h = home_new(r, p, "");
    if (!h) return false;
    h->resume_by_code = req->code[0] != '\0';
    snprintf(h->resume_key, sizeof h->resume_key, "%s",
             h->resume_by_code ? req->code : req->token);
    h->resume_until = now_ms(r) + REMOTE_RESUME_WAIT_MS;
    h->introduced = true; /* the node that finds the seat makes its guest */
    if (!ask_round(r, h)) {
        home_release(r, h, false);
        return false;
    }
    return true;
}

void remote_on_resume_failed(remote *r, void (*failed)(srv_player *p, bool by_code)) {
    r->resume_failed = failed;
}

void remote_on_resume_here(remote *r, void (*here)(srv_player *asker, srv_player *seat)) {
    r->resume_here = here;
}

void remote_player_gone(remote *r, srv_player *p) {
    if (p->home) home_release(r, p->home, true);
    gathers_forget(r, p);
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
static void on_messages(remote *r, const char *from, const json_t *op) {
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
                send_op(r, from, json_pack("{s:s,s:I}", "k", "gone", "h", handle));
                continue;
            }
            snprintf(h->node, sizeof h->node, "%s", from); /* the resume found it */
            h->resume_deadline = 0;
            h->reask_at = 0;
        }
        h->p->id = (uint64_t)id; /* a resumed seat's id: text mode finds its board */
        if (m.type == SRV_MSG_WELCOME) welcomed_as(h->p, &m);
        srv_send(h->p, &m);
    }
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
}

/* The owner let p go for a request that goes on elsewhere. */
static void on_moved(remote *r, const char *from, const json_t *op) {
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
        route_to_node(r, p, &req, to);
}

/* The owner let go of a player here. */
static void on_close(remote *r, const char *from, const json_t *op) {
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

/* ---------------------------------------------------- asking every node --- */

static bool ask_everyone(remote *r, srv_player *p, gather_kind kind,
                         const proto_request *req) {
    unsigned others = cluster_nodes_alive(r->c);
    if (!cluster_connected(r->c) || others < 2) return false;
    gather *gt = calloc(1, sizeof *gt);
    if (!gt) return false;
    static const char *const kinds[] = {"room", "hist", "replay", "rooms"};
    json_t *q = json_pack("{s:s,s:s,s:I}", "k", kinds[kind], "from", r->name, "q",
                          (json_int_t)(r->next_gather + 1));
    if (!q) {
        free(gt);
        return false;
    }
    if (kind == GATHER_ROOM) json_object_set_new(q, "room", json_string(req->room));
    if (kind == GATHER_HISTORY) json_object_set_new(q, "limit", json_integer(req->limit));
    if (kind == GATHER_REPLAY)
        json_object_set_new(q, "game", json_integer((json_int_t)req->game));
    gt->id = ++r->next_gather;
    gt->kind = kind;
    gt->p = p;
    gt->req = *req;
    gt->req.ping_t = NULL; /* not a ping: nothing of req's is owned */
    gt->expected = (int)others - 1;
    gt->deadline = now_ms(r) + REMOTE_FIND_MS;
    gt->next = r->gathers;
    r->gathers = gt;
    publish(r, FIND_SUBJECT, q);
    json_decref(q);
    return true;
}

/* items (n of them, of size bytes, room for *cap) with room for one more:
 * the same array or a bigger one (*cap doubled); NULL if memory runs out
 * (items and *cap unchanged). */
static void *room_for_one(void *items, int *cap, int n, size_t size) {
    if (n < *cap) return items;
    int more = *cap ? *cap * 2 : 16;
    void *grown = realloc(items, size * (size_t)more);
    if (grown) *cap = more;
    return grown;
}

static void gather_free(gather *gt) {
    for (int i = 0; i < gt->ngames; i++)
        proto_game_record_clear(&gt->games[i]);
    free(gt->games);
    free(gt->rows);
    free(gt->waiters);
    free(gt);
}

/* `rooms` or `history` of every node: the question of that kind already on
 * its way (*slot) takes p too, or a new one is asked (history: of the most
 * rows; p gets the limit it asked for). */
static bool ask_shared(remote *r, gather **slot, gather_kind kind, srv_player *p,
                       int limit) {
    if (!*slot) {
        proto_request req = {.type = kind == GATHER_ROOMS ? PROTO_REQ_ROOMS
                                                          : PROTO_REQ_HISTORY,
                             .limit = PROTO_HISTORY_MAX};
        if (!ask_everyone(r, NULL, kind, &req)) return false;
        *slot = r->gathers;
    }
    gather *gt = *slot;
    waiter *waiters =
        room_for_one(gt->waiters, &gt->waiters_cap, gt->nwaiters, sizeof *waiters);
    if (!waiters) return false; /* this node's answer only, then */
    gt->waiters = waiters;
    gt->waiters[gt->nwaiters++] = (waiter){.p = p, .limit = limit};
    return true;
}

static void rooms_done(gather *gt) {
    proto_room_info others[LOBBY_ROOMS_MAX];
    int n = 0;
    for (int i = 0; i < gt->nrows && n < LOBBY_ROOMS_MAX; i++) {
        const dir_entry *e = &gt->rows[i];
        proto_room_info *row = &others[n++];
        *row = (proto_room_info){.room = e->code,
                                 .players = e->players,
                                 .settings = e->settings,
                                 .started = e->started,
                                 .seats_known = e->seats_known,
                                 .bots = e->bots,
                                 .spectators = e->spectators};
        for (int k = 0; e->seats_known && k < e->players; k++) {
            row->names[k] = e->names[k];
            row->scores[k] = e->scores[k];
        }
    }
    for (int i = 0; i < gt->nwaiters; i++)
        lobby_send_rooms(gt->waiters[i].p, others, n);
}

/* A row's seats, its 8th item {"names","scores","bots","spectators"} (a node
 * of an earlier version sends none: e is left without them). */
static void seats_add(dir_entry *e, const json_t *seats) {
    const json_t *names = json_object_get(seats, "names");
    const json_t *scores = json_object_get(seats, "scores");
    json_int_t bots = json_integer_value(json_object_get(seats, "bots"));
    json_int_t watching = json_integer_value(json_object_get(seats, "spectators"));
    if (!json_is_array(names) || (int)json_array_size(names) != e->players ||
        !json_is_array(scores) || (int)json_array_size(scores) != e->players ||
        bots < 0 || bots > e->players || watching < 0 || watching > INT_MAX)
        return;
    for (int k = 0; k < e->players; k++) {
        const char *name = json_string_value(json_array_get(names, (size_t)k));
        json_int_t score = json_integer_value(json_array_get(scores, (size_t)k));
        if (!name || strlen(name) > PROTO_NAME_MAX || score < 0) return;
        snprintf(e->names[k], sizeof e->names[k], "%s", name);
        e->scores[k] = (uint64_t)score;
    }
    e->bots = (int)bots;
    e->spectators = (int)watching;
    e->seats_known = true;
}

/* Another node's rows: [code, players, started, players wanted, size, target, limit,
 * seats]. */
static void rooms_add(gather *gt, const json_t *rows) {
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        dir_entry e = {0};
        const char *code;
        int started;
        json_int_t target, limit;
        if (json_unpack((json_t *)row, "[siiiiII]", &code, &e.players, &started,
                        &e.settings.players, &e.settings.size, &target, &limit) < 0 ||
            strlen(code) > PROTO_ROOM_MAX || target < 0 || target > UINT32_MAX ||
            limit < 0 || limit > UINT32_MAX || gt->nrows >= LOBBY_ROOMS_MAX ||
            e.players < 0 || e.players > PROTO_PLAYERS_MAX)
            continue;
        dir_entry *grown =
            room_for_one(gt->rows, &gt->rows_cap, gt->nrows, sizeof *grown);
        if (!grown) return;
        gt->rows = grown;
        snprintf(e.code, sizeof e.code, "%s", code);
        e.started = started != 0;
        e.settings.target = (uint32_t)target;
        e.settings.time_limit = (uint32_t)limit;
        seats_add(&e, json_array_get(row, 7));
        gt->rows[gt->nrows++] = e;
    }
}

/* Newest first: by end time, then by id. */
static int newest_first(const void *a, const void *b) {
    const proto_game_record *x = *(const proto_game_record *const *)a;
    const proto_game_record *y = *(const proto_game_record *const *)b;
    if (x->ended != y->ended) return x->ended > y->ended ? -1 : 1;
    return x->game > y->game ? -1 : x->game < y->game;
}

static void send_games(srv_player *p, srv_msg_type type, char *line, size_t len,
                       const proto_game_record *const *games, int n) {
    if (!line) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_msg m = {
        .type = type, .json = srv_buf_take(line, len), .games = games, .ngames = n};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}

/* Every node answered (or the time is up): p gets its answer. */
/* Every node's newest games, merged, and each waiter its share of them. */
static void history_done(remote *r, gather *gt) {
    const proto_game_record *all[PROTO_HISTORY_MAX + PROTO_HISTORY_MAX];
    int n = journal_history(r->g->journal, PROTO_HISTORY_MAX, all);
    if (n < 0) n = 0;
    for (int i = 0; i < gt->ngames && n < PROTO_HISTORY_MAX + PROTO_HISTORY_MAX; i++)
        all[n++] = &gt->games[i];
    qsort(all, (size_t)n, sizeof all[0], newest_first);
    /* A game two nodes keep (its node's file, and the node that took its
     * records over) is listed once; a second verdict would end apart. */
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!kept || all[kept - 1]->game != all[i]->game ||
            all[kept - 1]->ended != all[i]->ended)
            all[kept++] = all[i];
    for (int i = 0; i < gt->nwaiters; i++) {
        int limit = gt->waiters[i].limit;
        int shown = limit > 0 && limit < kept ? limit : kept;
        if (shown > PROTO_HISTORY_MAX) shown = PROTO_HISTORY_MAX;
        size_t len;
        char *line = proto_enc_history(all, shown, &len); /* before len is read */
        send_games(gt->waiters[i].p, SRV_MSG_HISTORY, line, len, all, shown);
    }
}

static void gather_done(remote *r, gather *gt) {
    for (gather **at = &r->gathers; *at; at = &(*at)->next)
        if (*at == gt) {
            *at = gt->next;
            break;
        }
    srv_player *p = gt->p;
    size_t len;
    if (gt == r->rooms_asked) r->rooms_asked = NULL;
    if (gt == r->history_asked) r->history_asked = NULL;
    if (gt->kind == GATHER_ROOMS) {
        rooms_done(gt);
    } else if (gt->kind == GATHER_HISTORY) {
        history_done(r, gt);
    } else if (gt->kind == GATHER_ROOM) {
        if (gt->found_at[0])
            route_to_node(r, p, &gt->req, gt->found_at);
        else
            lobby_request(p, &gt->req); /* no node has it: this one says so */
    } else if (gt->kind == GATHER_REPLAY) {
        if (gt->ngames) {
            const proto_game_record *g = &gt->games[0];
            char *line = proto_enc_replay(g, &len); /* before len is read */
            send_games(p, SRV_MSG_REPLAY, line, len, &g, 1);
        } else {
            lobby_request(p, &gt->req);
        }
    }
    gather_free(gt);
}

/* Another node's answer to one of this node's questions. */
static void on_answer(remote *r, const char *from, const json_t *op) {
    uint64_t id = (uint64_t)json_integer_value(json_object_get(op, "q"));
    gather *gt = r->gathers;
    while (gt && gt->id != id)
        gt = gt->next;
    if (!gt) return; /* answered late: the client has its answer */
    gt->answered++;
    if (gt->kind == GATHER_ROOM) {
        if (json_is_true(json_object_get(op, "has")) && !gt->found_at[0])
            snprintf(gt->found_at, sizeof gt->found_at, "%s", from);
    } else if (gt->kind == GATHER_ROOMS) {
        rooms_add(gt, json_object_get(op, "rows"));
    } else {
        size_t i;
        const json_t *line;
        json_array_foreach(json_object_get(op, "games"), i, line) {
            if (!json_is_string(line) || gt->ngames >= PROTO_HISTORY_MAX * 4) continue;
            proto_game_record *grown =
                room_for_one(gt->games, &gt->cap, gt->ngames, sizeof *grown);
            if (!grown) continue;
            gt->games = grown;
            if (proto_dec_game_record(json_string_value(line), json_string_length(line),
                                      &gt->games[gt->ngames]) == 0)
                gt->ngames++;
        }
    }
    if (gt->answered >= gt->expected) gather_done(r, gt);
}

/* A local row's seats as rooms_add reads them (an empty object if memory
 * runs out: the asker shows the row without them). */
static json_t *seats_json(const proto_room_info *row) {
    json_t *names = json_array(), *scores = json_array();
    for (int k = 0; names && scores && k < row->players; k++) {
        json_array_append_new(names, json_string(row->names[k] ? row->names[k] : ""));
        json_array_append_new(scores, json_integer((json_int_t)row->scores[k]));
    }
    json_t *seats = json_pack("{s:o?,s:o?,s:i,s:i}", "names", names, "scores", scores,
                              "bots", row->bots, "spectators", row->spectators);
    return seats ? seats : json_object();
}

/* This node's answer to another's question (every node answers, so that
 * the asker need not wait out its deadline). */
static void answer(remote *r, const char *from, const char *kind, const json_t *q) {
    json_t *op = json_pack("{s:s,s:O}", "k", "answer", "q", json_object_get(q, "q"));
    if (!op) return;
    if (!strcmp(kind, "rooms")) {
        proto_room_info rows[LOBBY_ROOMS_MAX];
        int n = lobby_rooms(r->g, rows, LOBBY_ROOMS_MAX);
        json_t *list = json_array();
        for (int i = 0; i < n && list; i++)
            json_array_append_new(
                list,
                json_pack("[siiiiIIo]", rows[i].room, rows[i].players, rows[i].started,
                          rows[i].settings.players, rows[i].settings.size,
                          (json_int_t)rows[i].settings.target,
                          (json_int_t)rows[i].settings.time_limit, seats_json(&rows[i])));
        json_object_set_new(op, "rows", list ? list : json_array());
    } else if (!strcmp(kind, "room")) {
        const char *code = json_string_value(json_object_get(q, "room"));
        room *rm = code ? room_find(r->g, code) : NULL;
        json_object_set_new(op, "has", json_boolean(rm && rm->state != ROOM_ENDED));
    } else {
        const proto_game_record *games[PROTO_HISTORY_MAX];
        int n = 0;
        if (!strcmp(kind, "hist")) {
            json_int_t limit = json_integer_value(json_object_get(q, "limit"));
            n = journal_history(r->g->journal,
                                limit > 0 && limit <= PROTO_HISTORY_MAX ? (int)limit : 20,
                                games);
        } else {
            json_int_t id = json_integer_value(json_object_get(q, "game"));
            games[0] = id > 0 ? journal_replay(r->g->journal, (uint64_t)id) : NULL;
            n = games[0] != NULL;
        }
        json_t *lines = json_array();
        for (int i = 0; i < n && lines; i++) {
            size_t len;
            char *line = proto_enc_game_record(games[i], &len);
            if (line) json_array_append_new(lines, json_stringn(line, len));
            free(line);
        }
        json_object_set_new(op, "games", lines ? lines : json_array());
    }
    send_op(r, from, op);
}

static void gathers_expire(remote *r) {
    uint64_t now = now_ms(r);
    gather *gt = r->gathers;
    while (gt) {
        gather *next = gt->next;
        if (now >= gt->deadline) gather_done(r, gt);
        gt = next;
    }
}

static void gathers_forget(remote *r, const srv_player *p) {
    gather *shared[2] = {r->rooms_asked, r->history_asked};
    for (int k = 0; k < 2; k++) {
        gather *gt = shared[k];
        for (int i = 0; gt && i < gt->nwaiters; i++)
            if (gt->waiters[i].p == p) gt->waiters[i--] = gt->waiters[--gt->nwaiters];
    }
    for (gather **at = &r->gathers; *at;) {
        gather *gt = *at;
        if (gt->p == p) {
            *at = gt->next;
            gather_free(gt);
        } else {
            at = &gt->next;
        }
    }
}

/* ------------------------------------------------------------ directory --- */

/* The directory's entry for code is value ("node players started P S T L"),
 * or gone (value NULL). */
static void dir_apply(remote *r, const char *code, const char *value) {
    if (strlen(code) > PROTO_ROOM_MAX || !code[0]) return;
    dir_entry *e = NULL;
    HASH_FIND_STR(r->dir, code, e);
    dir_entry row = {0};
    int started;
    unsigned target, limit;
    if (!value ||
        sscanf(value, "%63s %d %d %d %d %u %u", row.node, &row.players, &started,
               &row.settings.players, &row.settings.size, &target, &limit) != 7) {
        if (e) {
            HASH_DEL(r->dir, e);
            free(e);
        }
        return;
    }
    row.started = started != 0;
    row.settings.target = target;
    row.settings.time_limit = limit;
    snprintf(row.code, sizeof row.code, "%s", code);
    if (e) {
        row.hh = e->hh;
        *e = row;
        return;
    }
    if (!(e = malloc(sizeof *e))) return;
    *e = row;
    int hash_oom = 0;
    HASH_ADD_STR(r->dir, code, e);
    if (hash_oom) free(e);
}

/* A put or delete of the directory, as it went by (every node subscribes to
 * the bucket's subjects; what was there before it started is read at start). */
static void on_directory(remote *r, natsMsg *msg) {
    const char *code = natsMsg_GetSubject(msg) + strlen(DIR_SUBJECT);
    const char *op = NULL;
    char value[160];
    int len = natsMsg_GetDataLength(msg);
    bool deleted = natsMsgHeader_Get(msg, "KV-Operation", &op) == NATS_OK && op;
    if (deleted || len <= 0 || len >= (int)sizeof value) {
        dir_apply(r, code, NULL);
        return;
    }
    memcpy(value, natsMsg_GetData(msg), (size_t)len);
    value[len] = '\0';
    dir_apply(r, code, value);
}

static void dir_put(remote *r, const char *code, const char *value) {
    char subject[sizeof DIR_SUBJECT + PROTO_ROOM_MAX + 1];
    snprintf(subject, sizeof subject, DIR_SUBJECT "%s", code);
    if (value) {
        natsConnection_PublishString(r->nc, subject, value);
        return;
    }
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, NULL, 0) != NATS_OK) return;
    natsMsgHeader_Set(m, "KV-Operation", "DEL");
    natsConnection_PublishMsg(r->nc, m);
    natsMsg_Destroy(m);
}

static void sync_list(remote *r, const srv_link *list) {
    for (const srv_link *l = list->next; l != list; l = l->next) {
        const room *rm = srv_container(l, room, listed);
        char value[128];
        snprintf(value, sizeof value, "%s %d %d %d %d %u %u", r->name, rm->nseats,
                 rm->state == ROOM_RUNNING, rm->settings.players, rm->settings.size,
                 rm->settings.target, rm->settings.time_limit);
        published *pb = NULL;
        HASH_FIND_STR(r->pub, rm->code, pb);
        if (!pb) {
            if (!(pb = calloc(1, sizeof *pb))) continue;
            snprintf(pb->code, sizeof pb->code, "%s", rm->code);
            int hash_oom = 0;
            HASH_ADD_STR(r->pub, code, pb);
            if (hash_oom) {
                free(pb);
                continue;
            }
        }
        pb->seen = true;
        if (strcmp(pb->value, value) != 0) {
            snprintf(pb->value, sizeof pb->value, "%s", value);
            dir_put(r, pb->code, value);
        }
    }
}

/* Puts what changed among this node's listed rooms (waiting and running:
 * what `join` and `watch` can find), deletes what went. */
static void sync_directory(remote *r) {
    if (r->g->rooms_gen == r->rooms_gen && !r->dir_dirty) return;
    if (!cluster_connected(r->c)) {
        r->dir_dirty = true; /* everything again once NATS is back */
        return;
    }
    if (r->dir_dirty) {
        published *pb, *tmp;
        HASH_ITER(hh, r->pub, pb, tmp) pb->value[0] = '\0';
    }
    r->rooms_gen = r->g->rooms_gen;
    r->dir_dirty = false;
    sync_list(r, &r->g->waiting_rooms);
    sync_list(r, &r->g->running_rooms);
    published *pb, *tmp;
    HASH_ITER(hh, r->pub, pb, tmp) {
        if (pb->seen) {
            pb->seen = false;
            continue;
        }
        dir_put(r, pb->code, NULL);
        HASH_DEL(r->pub, pb);
        free(pb);
    }
}

/* ---------------------------------------------------------- matchmaking --- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The node where `quick` requests with these settings meet: the live node
 * that scores highest for them (the same answer on every node that sees
 * the same nodes; a node that goes moves only its own settings). */
static void quick_host(remote *r, const proto_settings *key, char *out) {
    cluster_node_name names[CLUSTER_NAMES_MAX];
    int n =
        cluster_connected(r->c) ? cluster_alive_names(r->c, names, CLUSTER_NAMES_MAX) : 0;
    uint64_t best = 0;
    snprintf(out, NODE_NAME_MAX, "%s", r->name);
    int32_t k[3] = {key->players, key->size, (int32_t)key->target};
    for (int i = 0; i < n; i++) {
        uint64_t score =
            fnv1a(fnv1a(0xcbf29ce484222325ull, names[i], strlen(names[i])), k, sizeof k);
        if (i == 0 || score > best) {
            best = score;
            snprintf(out, NODE_NAME_MAX, "%s", names[i]);
        }
    }
}

static bool local_waiter(const srv_player *p) {
    return p->sink.ops != &guest_sink_ops && !p->home && !p->bot_level;
}

/* Waiters that found no match here in QUICK_MOVE_MS go to their host. */
static void move_waiters(remote *r) {
    if (!cluster_connected(r->c) || cluster_nodes_alive(r->c) < 2) return;
    proto_settings keys[32];
    int nkeys = lobby_queue_keys(r->g, keys, 32);
    uint64_t before = now_ms(r) > QUICK_MOVE_MS ? now_ms(r) - QUICK_MOVE_MS : 0;
    for (int i = 0; i < nkeys; i++) {
        char host[NODE_NAME_MAX];
        quick_host(r, &keys[i], host);
        if (!strcmp(host, r->name)) continue;
        srv_player *moving[PROTO_PLAYERS_MAX];
        int n = lobby_queue_take(r->g, &keys[i], local_waiter, before, moving,
                                 PROTO_PLAYERS_MAX);
        for (int j = 0; j < n; j++) {
            remote_home *h = home_new(r, moving[j], host);
            proto_request req = {.type = PROTO_REQ_QUICK, .settings = keys[i]};
            if (h) forward(r, h, &req);
        }
    }
}

/* ------------------------------------------------------------ the loop --- */

/* A resume that found no seat on any node: its connection is told. */
static void resume_failed(remote *r, remote_home *h) {
    srv_player *p = h->p;
    bool by_code = h->resume_by_code;
    home_release(r, h, false);
    if (r->resume_failed) r->resume_failed(p, by_code);
}

/* A round of h's resume found no seat; silent: a node did not answer (one
 * that has just died). While a node's races may still be taken over (one
 * was seen gone, or one is silent), the resume asks again after
 * REMOTE_REASK_MS, until resume_until; then, or else, it fails. */
static void round_over(remote *r, remote_home *h, bool silent) {
    uint64_t now = now_ms(r);
    bool takeover_due = silent || now < r->takeover_until;
    if (takeover_due && now + REMOTE_REASK_MS < h->resume_until) {
        h->reask_at = now + REMOTE_REASK_MS;
        return;
    }
    resume_failed(r, h);
}

/* The next round of h's resume: this node first (it may be the one that
 * took the race over), then every other node. */
static void reask(remote *r, remote_home *h) {
    srv_player *seat = h->resume_by_code ? lobby_find_by_code(r->g, h->resume_key)
                                         : lobby_find_resumable(r->g, h->resume_key);
    if (seat && r->resume_here) {
        srv_player *p = h->p;
        home_release(r, h, false);
        r->resume_here(p, seat);
        return;
    }
    if (!cluster_connected(r->c) || !ask_round(r, h)) {
        resume_failed(r, h);
        return;
    }
    if (h->resume_asked <= 0) round_over(r, h, false); /* nobody else to ask */
}

/* Resumes whose round is over or that ask again (checked every tick: the
 * answer comes at REMOTE_FIND_MS, not up to a node check later). */
static void expire_resumes(remote *r) {
    uint64_t now = now_ms(r);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (!h->resume_deadline) continue;
        if (h->reask_at) {
            if (now >= h->reask_at) reask(r, h);
        } else if (now >= h->resume_deadline) {
            round_over(r, h, h->resume_refused < h->resume_asked);
        }
    }
}

/* Another node has no seat for a resume of this node's. */
static void on_noseat(remote *r, const json_t *op) {
    remote_home *h = home_find(r, (uint64_t)json_integer_value(json_object_get(op, "h")));
    if (h && h->resume_deadline && !h->reask_at && ++h->resume_refused >= h->resume_asked)
        round_over(r, h, false);
}

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
        home_release(r, h, true);
        send_unavailable(p, NODE_GONE_MESSAGE);
    }
}

/* Each tick: every node that runs a room of a player here is probed. */
static void probe_homes(remote *r) {
    if (!cluster_connected(r->c)) return;
    probe *pr, *ptmp;
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
    if (!pr || pr->refused) return;
    pr->refused = true;
    if (++pr->misses < PROBE_MISSES) return;
    srv_log(SRV_LOG_INFO, "node %s stopped listening: its rooms' players here resume",
            node);
    HASH_DEL(r->probes, pr);
    free(pr);
    node_gone(r, node);
}

/* Homes whose node is gone, guests whose node is gone. */
static void check_nodes(remote *r) {
    uint64_t now = now_ms(r);
    bool connected = cluster_connected(r->c);
    /* Back from NATS being away (down or hung), every node's presence may
     * have expired meanwhile: nobody is judged gone until the live ones
     * have had the TTL to renew theirs. */
    if (!connected)
        r->connected_since = 0;
    else if (!r->connected_since)
        r->connected_since = now;
    bool is_settled = connected && settled(r, now);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (!h->resume_deadline && is_settled && now >= h->since + HOME_GRACE_MS &&
            !cluster_node_alive(r->c, h->node)) {
            srv_player *p = h->p;
            home_release(r, h, false);
            r->takeover_until = now + REMOTE_RESUME_WAIT_MS;
            send_unavailable(p, NODE_GONE_MESSAGE);
        }
    }
    if (!is_settled) return;
    guest *gs, *gtmp;
    HASH_ITER(hh, r->guests, gs, gtmp) {
        if (!cluster_node_alive(r->c, gs->node)) guest_gone(gs);
    }
}

static void on_tick(uv_timer_t *t) {
    remote *r = t->data;
    move_waiters(r);
    gathers_expire(r);
    expire_resumes(r);
    probe_homes(r);
    if (now_ms(r) >= r->dead_check_at) {
        r->dead_check_at = now_ms(r) + DEAD_CHECK_MS;
        check_nodes(r);
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
                on_request(r, from, op);
            else if (!strcmp(k, "msg"))
                on_messages(r, from, op);
            else if (!strcmp(k, "close"))
                on_close(r, from, op);
            else if (!strcmp(k, "answer"))
                on_answer(r, from, op);
            else if (!strcmp(k, "moved"))
                on_moved(r, from, op);
            else if (!strcmp(k, "noseat"))
                on_noseat(r, op);
            else if (!strcmp(k, "gone")) {
                guest *gs = guest_find(
                    r, from, (uint64_t)json_integer_value(json_object_get(op, "h")));
                if (gs) guest_gone(gs);
            }
        }
    }
    json_decref(body);
}

static void on_wake(uv_async_t *a) {
    remote *r = a->data;
    uv_mutex_lock(&r->lock);
    inbox_msg *list = r->in_head;
    r->in_head = r->in_tail = NULL;
    uv_mutex_unlock(&r->lock);
    while (list) {
        inbox_msg *next = list->next;
        const char *subject = natsMsg_GetSubject(list->msg);
        if (!strncmp(subject, DIR_SUBJECT, strlen(DIR_SUBJECT))) {
            on_directory(r, list->msg);
        } else if (!strncmp(subject, PROBE_SUBJECT, strlen(PROBE_SUBJECT))) {
            on_probe_refused(r, list->msg);
        } else if (!strcmp(subject, FIND_SUBJECT)) {
            json_error_t err;
            json_t *q = json_loadb(natsMsg_GetData(list->msg),
                                   (size_t)natsMsg_GetDataLength(list->msg), 0, &err);
            if (q) on_find(r, q);
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
static void on_nats_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
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

/* ------------------------------------------------------------ lifetime --- */

static bool code_taken(void *ctx, const char *code) {
    remote *r = ctx;
    dir_entry *e = NULL;
    HASH_FIND_STR(r->dir, code, e);
    return e && strcmp(e->node, r->name) != 0;
}

static void on_closed(uv_handle_t *h);

/* The directory as it is when this node starts; entries an earlier run of
 * this node left are deleted (it rejoins empty). */
static void load_directory(remote *r) {
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, r->dir_kv, NULL) != NATS_OK) return;
    for (int i = 0; i < keys.Count; i++) {
        kvEntry *e = NULL;
        if (kvStore_Get(&e, r->dir_kv, keys.Keys[i]) != NATS_OK) continue;
        char node[NODE_NAME_MAX] = "";
        const char *value = kvEntry_ValueString(e);
        if (sscanf(value, "%63s", node) == 1 && !strcmp(node, r->name))
            kvStore_Delete(r->dir_kv, keys.Keys[i]);
        else
            dir_apply(r, keys.Keys[i], value);
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
}

static natsStatus subscribe(remote *r, char *err, size_t errlen) {
    char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
    snprintf(subject, sizeof subject, NODE_SUBJECT "%s", r->name);
    natsStatus s = natsConnection_Subscribe(&r->sub_node, r->nc, subject, on_nats_msg, r);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_find, r->nc, FIND_SUBJECT, on_nats_msg, r);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_dir, r->nc, DIR_SUBJECT ">", on_nats_msg, r);
    char probes[sizeof PROBE_SUBJECT + NODE_NAME_MAX + 2];
    snprintf(probes, sizeof probes, PROBE_SUBJECT "%s.>", r->name);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_probe, r->nc, probes, on_nats_msg, r);
    if (s != NATS_OK) snprintf(err, errlen, "subscribing: %s", natsStatus_GetText(s));
    return s;
}

/* The connection is closed (cluster_close): the subscriptions and the
 * directory's bucket go, while the library still runs (it frees what they
 * still hold). Held past that, the bucket kept cluster_close waiting for the
 * library's threads until its time-out: a stop took 2 s. */
static void release_subscriptions(void *ctx) {
    remote *r = ctx;
    natsSubscription_Destroy(r->sub_node);
    natsSubscription_Destroy(r->sub_find);
    natsSubscription_Destroy(r->sub_dir);
    natsSubscription_Destroy(r->sub_probe);
    r->sub_node = r->sub_find = r->sub_dir = r->sub_probe = NULL;
    kvStore_Destroy(r->dir_kv);
    r->dir_kv = NULL;
}

static void on_closed(uv_handle_t *h) {
    remote *r = h->data; /* every handle's data is r */
    if (--r->open_handles == 0 && r->free_when_closed) remote_free(r);
}

remote *remote_open(game *g, cluster *c, char *err, size_t errlen) {
    remote *r = calloc(1, sizeof *r);
    if (!r || uv_mutex_init(&r->lock) < 0) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->g = g;
    r->c = c;
    r->nc = cluster_nats(c);
    snprintf(r->name, sizeof r->name, "%s", cluster_name(c));
    if (cluster_kv_bucket(c, DIR_BUCKET, 0, &r->dir_kv) < 0) {
        snprintf(err, errlen, "the rooms' directory (NATS KV %s)", DIR_BUCKET);
        uv_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    uv_async_init(g->loop, &r->wake, on_wake);
    r->wake.data = r;
    uv_unref((uv_handle_t *)&r->wake);
    uv_prepare_init(g->loop, &r->flush);
    r->flush.data = r;
    uv_prepare_start(&r->flush, on_flush);
    uv_unref((uv_handle_t *)&r->flush);
    uv_timer_init(g->loop, &r->tick);
    r->tick.data = r;
    uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&r->tick);
    r->open_handles = 3;
    g->code_taken = (game_code_check){.taken = code_taken, .ctx = r};
    if (subscribe(r, err, errlen) != NATS_OK) {
        r->free_when_closed = true;
        remote_close(r);
        return NULL;
    }
    cluster_on_close(c, release_subscriptions, r);
    load_directory(r); /* after subscribing: no change falls in between */
    return r;
}

void remote_close(remote *r) {
    if (!r || r->closing) return;
    uv_mutex_lock(&r->lock);
    r->closing = true; /* callbacks from now on drop what they get */
    uv_mutex_unlock(&r->lock);
    r->g->code_taken = (game_code_check){0};
    natsSubscription_Unsubscribe(r->sub_node);
    natsSubscription_Unsubscribe(r->sub_find);
    natsSubscription_Unsubscribe(r->sub_dir);
    natsSubscription_Unsubscribe(r->sub_probe);
    guest *gs, *gtmp;
    HASH_ITER(hh, r->guests, gs, gtmp) guest_gone(gs);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) home_release(r, h, true);
    while (r->gathers) {
        gather *next = r->gathers->next;
        gather_free(r->gathers);
        r->gathers = next;
    }
    published *pb, *ptmp;
    HASH_ITER(hh, r->pub, pb, ptmp) {
        dir_put(r, pb->code, NULL);
        HASH_DEL(r->pub, pb);
        free(pb);
    }
    outbox *ob, *otmp;
    HASH_ITER(hh, r->outboxes, ob, otmp) {
        ob->durable_at = 0; /* the journal has been committed by now */
        outbox_send(r, ob);
    }
    if (natsConnection_Status(r->nc) == NATS_CONN_STATUS_CONNECTED)
        natsConnection_FlushTimeout(r->nc, 500);
    /* What came in and was not read: libnats must free it while it runs. */
    uv_mutex_lock(&r->lock);
    while (r->in_head) {
        inbox_msg *next = r->in_head->next;
        natsMsg_Destroy(r->in_head->msg);
        free(r->in_head);
        r->in_head = next;
    }
    r->in_tail = NULL;
    uv_mutex_unlock(&r->lock);
    uv_close((uv_handle_t *)&r->wake, on_closed);
    uv_close((uv_handle_t *)&r->flush, on_closed);
    uv_close((uv_handle_t *)&r->tick, on_closed);
}

void remote_free(remote *r) {
    if (!r) return;
    kvStore_Destroy(r->dir_kv);
    outbox *ob, *otmp;
    HASH_ITER(hh, r->outboxes, ob, otmp) {
        outbox_forget_last(ob);
        json_decref(ob->ops);
        HASH_DEL(r->outboxes, ob);
        free(ob);
    }
    dir_entry *e, *etmp;
    HASH_ITER(hh, r->dir, e, etmp) {
        HASH_DEL(r->dir, e);
        free(e);
    }
    probe *pr, *ptmp;
    HASH_ITER(hh, r->probes, pr, ptmp) {
        HASH_DEL(r->probes, pr);
        free(pr);
    }
    uv_mutex_destroy(&r->lock);
    free(r);
}

void remote_write_metrics(metrics_out *o, void *ctx) {
    remote *r = ctx;
    unsigned homes = 0;
    remote_home *h, *tmp;
    HASH_ITER(hh, r->homes, h, tmp) homes += h->node[0] != '\0';
    metrics_one(o, "race2048_remote_players", "gauge",
                "Players connected to this node in rooms that other nodes run.", homes);
    metrics_one(o, "race2048_remote_guests", "gauge",
                "Players in this node's rooms whose connections are on other nodes.",
                r->nguests);
    metrics_one(o, "race2048_remote_guest_messages_total", "counter",
                "Messages this node's rooms sent to players of other nodes.",
                r->guest_messages);
    metrics_one(o, "race2048_remote_published_total", "counter",
                "NATS messages this node published to other nodes (batches).",
                r->published);
    metrics_one(o, "race2048_remote_published_bytes_total", "counter",
                "Bytes of those NATS messages.", r->published_bytes);
}
