/* remote_internal.h - what remote's files share: their state and their calls. */
#ifndef RACE2048_REMOTE_INTERNAL_H
#define RACE2048_REMOTE_INTERNAL_H

#include "remote.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "durable_barrier.h"
#include "journal.h" /* proto_game_record */

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
/* The most the guests' holds may keep while `end`s wait for the journal. */
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
    uint64_t missing_since;   /* loop ms its node was first seen missing, 0: seen */
    bool resume_by_code;
    /* While a resume asks: the other nodes asked, and how many said they
     * have no such seat (once all have, it fails at once, unless a node's
     * races are being taken over: then it asks again at reask_at, until
     * resume_until). The token or code it asks with. */
    int resume_asked, resume_refused;
    uint64_t reask_at, resume_until;
    char resume_key[PROTO_TOKEN_MAX + 1];
    /* The arena p entered through this home (its node runs it), "" if none
     * or left; racing: a `start` came through it and no `end` yet. If the
     * node is lost while p waits in the arena's pool, p enters it again
     * where it is taken over (remote_arena.c). */
    char arena[PROTO_ROOM_MAX + 1];
    bool racing;
    UT_hash_handle hh;
} remote_home;

/* Edge side: an entrant whose arena's node was lost while it waited in the
 * pool, entering it again once a node has taken it over. */
typedef struct rejoin {
    struct rejoin *next;
    srv_player *p;
    char arena[PROTO_ROOM_MAX + 1];
    uint64_t next_at, until; /* loop ms: the next ask, the last */
    bool asking;             /* a GATHER_ARENA of it is on its way */
} rejoin;

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
    struct guest_hold *hold; /* its messages held for the journal, or NULL */
    uint64_t missing_since;  /* loop ms its node was first seen missing, 0: seen */
    UT_hash_handle hh;
} guest;

/* A guest's messages held for the journal (remote_hold.c): made when one of
 * them must wait for its record to be durable, freed once all have gone.
 * It outlives its guest if the guest goes meanwhile (the guest's close op
 * waits behind what it holds). */
typedef struct guest_hold {
    srv_link link; /* in remote.held (waiting for the journal) or remote.ready */
    durable_barrier barrier;
    uint32_t first; /* the number of the message at the front (the barrier's) */
    uint32_t count; /* ops held */
    struct held_op *head, **tail;
    char node[NODE_NAME_MAX];
    struct guest *gs; /* NULL once its guest is gone */
} guest_hold;

/* What goes to one node at the end of the turn. */
typedef struct outbox {
    char node[NODE_NAME_MAX];
    json_t *ops;
    size_t bytes; /* about what ops will take as text */
    /* The wire form of the last message handed to a guest of the node, and
     * what it was made from (references held, so an address cannot be
     * reused meanwhile): the same broadcast to more guests is made once. */
    json_t *last_msg;
    srv_buf *last_json;
    srv_view *last_view;
    srv_msg last;
    /* The last entry of ops if it is a message: its wire form and
     * recipients, so that the same message to one more guest adds a
     * recipient, not an entry. NULL otherwise. */
    json_t *tail_msg, *tail_to;
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
    GATHER_ROOMS,
    GATHER_ARENA, /* which node runs arena req.room (remote_arena.c) */
    GATHER_ARENAS /* every node's arenas */
} gather_kind;

/* An arena another node listed (GATHER_ARENAS): its row and the strings the
 * row points to (set when the list is sent). */
typedef struct arena_listed {
    char code[PROTO_ROOM_MAX + 1];
    char name[PROTO_ARENA_NAME_MAX + 1];
    proto_arena_info info;
} arena_listed;
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
    bool rejoin;                  /* GATHER_ARENA of a rejoin (not asked by the player) */
    char found_at[NODE_NAME_MAX]; /* GATHER_ROOM: the node that has it */
    proto_game_record *games;     /* GATHER_HISTORY, REPLAY: what came back */
    int ngames, cap;
    /* GATHER_ROOMS: the other nodes' rows, and everyone who asked while it
     * was on its way (one question at a time, however many ask). */
    struct dir_entry *rows;
    int nrows, rows_cap;
    struct waiter *waiters;
    int nwaiters, waiters_cap;
    /* GATHER_ARENA: the node that runs it said whether it is over, and its
     * `arena` as a reader who is no entrant sees it (malloc'd, or NULL). */
    bool arena_over;
    char *arena_line;
    size_t arena_len;
    /* GATHER_ARENAS: the other nodes' arenas. */
    arena_listed *arenas;
    int narenas, arenas_cap;
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
    /* Guests' holds (remote_hold.c): waiting for the journal, and told by it
     * that they may go on (sent at the end of the turn); the journal's one
     * subscription for them all; what they keep. */
    srv_link held, ready;
    durable_waiters waiters;
    unsigned nholds;
    size_t held_bytes;
    /* The GATHER_ROOMS and GATHER_HISTORY on their way, or NULL: one of each
     * at a time, however many ask, so that a flood of them costs the other
     * nodes nothing more. */
    gather *rooms_asked, *history_asked, *arenas_asked;
    uint64_t next_gather;
    uint64_t next_handle;
    uint64_t rooms_gen; /* the game's, as last put in the directory */
    bool dir_dirty;
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
    /* --arena-every (remote_arena.c): each period's claim, in the bucket
     * ARENA_EVERY_BUCKET, on the libuv thread pool; NULL: not scheduled. */
    kvStore *every_kv;
    unsigned every_claims; /* on their way */
    rejoin *rejoins;
    void (*resume_failed)(srv_player *p, bool by_code);
    void (*resume_here)(srv_player *asker, srv_player *seat);
};

static inline uint64_t now_ms(const remote *r) {
    return uv_now(r->g->loop);
}

static inline void send_unavailable(srv_player *p, const char *why) {
    srv_send_error(p, PROTO_ERR_UNAVAILABLE, why);
}

/* remote_directory.c */
void dir_on_change(remote *r, natsMsg *msg);
void dir_put(remote *r, const char *code, const char *value);
void dir_sync(remote *r);
bool dir_code_taken(void *ctx, const char *code);
void dir_load(remote *r);

/* remote_edge.c */
remote_home *home_find(remote *r, uint64_t handle);
remote_home *home_new(remote *r, srv_player *p, const char *node);
void home_release(remote *r, remote_home *h, bool tell_owner);
bool remote_settled(const remote *r);
void home_forward(remote *r, remote_home *h, const proto_request *req);
bool move_home(remote *r, srv_player *p, const proto_request *req, const char *target);
void home_route_to_node(remote *r, srv_player *p, const proto_request *req,
                        const char *node);
void home_on_messages(remote *r, const char *from, const json_t *op);
void home_on_moved(remote *r, const char *from, const json_t *op);
void home_on_close(remote *r, const char *from, const json_t *op);

/* remote_arena.c */
bool arena_route(remote *r, srv_player *p, const proto_request *req);
void arena_gather_ask(gather_kind kind, const proto_request *req, json_t *q);
void arena_gather_done(remote *r, gather *gt);
void arena_gather_on_answer(gather *gt, const char *from, const json_t *op);
void arena_gather_answer(remote *r, const char *kind, const json_t *q, json_t *op);
void arena_home_lost(remote *r, const remote_home *h);
void arena_rejoins_tick(remote *r);
void arena_rejoins_forget(remote *r, const srv_player *p);

/* remote_gather.c */
void *room_for_one(void *items, int *cap, int n, size_t size);
bool gather_ask_everyone(remote *r, srv_player *p, gather_kind kind,
                         const proto_request *req);
void gather_free(gather *gt);
bool gather_ask_shared(remote *r, gather **slot, gather_kind kind, srv_player *p,
                       int limit);
void gather_on_answer(remote *r, const char *from, const json_t *op);
void gather_answer(remote *r, const char *from, const char *kind, const json_t *q);
void gathers_expire(remote *r);
void gathers_forget(remote *r, const srv_player *p);

/* remote_loop.c */
void remote_check_nodes(remote *r);
void remote_on_tick(uv_timer_t *t);
void remote_on_wake(uv_async_t *a);
void remote_on_nats_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                        void *closure);

/* remote_match.c */
void quick_host(remote *r, const proto_settings *key, char *out);
void quick_move_waiters(remote *r);

/* remote_outbox.c */
void outbox_forget_last(outbox *ob);
outbox *outbox_for(remote *r, const char *node);
void remote_publish(remote *r, const char *subject, json_t *body);
void outbox_send(remote *r, outbox *ob);
void outbox_add(remote *r, outbox *ob, json_t *op, size_t bytes);
void outbox_add_msg(remote *r, outbox *ob, json_t *msg, json_t *to, size_t bytes);
void outbox_send_op(remote *r, const char *node, json_t *op);
void outbox_on_flush(uv_prepare_t *h);

/* remote_owner.c */
guest *guest_find(remote *r, const char *node, uint64_t handle);
void remote_addr_hex(const srv_player *p, char *hex);
void guest_gone(guest *gs);
void guest_on_request(remote *r, const char *from, const json_t *op);
void guest_on_find(remote *r, const json_t *q);

/* remote_resume.c */
void resume_expire(remote *r);
void resume_on_noseat(remote *r, const json_t *op);
/* remote_owner.c */
bool remote_is_guest(const srv_player *p);

/* remote_hold.c: a guest's ops go out in its node's next batch, or wait
 * behind what it holds, or (durable_at not yet durable) are held. op: a
 * message's wire form (to: the recipient [handle, id]) or, to NULL, a whole
 * op; both references are taken. */
void guest_send(remote *r, guest *gs, json_t *op, json_t *to, size_t bytes,
                uint64_t durable_at);
/* An op about gs (a close, a move): after what it holds. NULL is nothing. */
void guest_send_op(remote *r, guest *gs, json_t *op);
/* gs is freed: what it holds still goes, then its close. */
void hold_guest_gone(guest *gs);
/* The turn's end: what the journal let go joins the batches. */
void holds_release(remote *r);
/* Fencing: what may go goes, what waits is dropped. */
void holds_give_up(remote *r);
/* Stopping: everything goes (the journal was committed). */
void holds_send_all(remote *r);
void holds_start(remote *r);
void holds_stop(remote *r);

#endif
