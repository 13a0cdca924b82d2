/* remote_arena.c - arenas across nodes: requests routed to the node that runs the arena,
 * the cluster's `arenas`, and --arena-every's one claim per period in NATS KV. */
#include "remote_internal.h"

#include "arena_host.h"
#include "lobby.h"

/* Rows of a cluster's `arenas` (every node's upcoming, running and lately
 * finished arenas; --max-arenas is 100 a node by default). */
#define ARENAS_LIST_MAX 1000
/* The longest `arena` line one node sends another: 100 rows of standings. */
#define ARENA_LINE_MAX (64 * 1024)

/* ------------------------------------------------------------ requests --- */

/* arena_join, arena_leave, arena_results of p: true if taken. An arena of
 * this node is this node's to answer (a join brings p's requests back here
 * first, from the node of its room if it has one); another node's is found
 * by asking every node (arena_gather_done goes on from there). */
bool arena_route(remote *r, srv_player *p, const proto_request *req) {
    if (arena_host_runs(r->g, req->room, NULL))
        return req->type == PROTO_REQ_ARENA_JOIN && move_home(r, p, req, r->name);
    if (!cluster_connected(r->c)) {
        send_unavailable(p, "this node cannot reach the others now, and that arena is "
                            "not here; try again");
        return true;
    }
    return gather_ask_everyone(r, p, GATHER_ARENA, req);
}

void arena_gather_ask(gather_kind kind, const proto_request *req, json_t *q) {
    if (kind == GATHER_ARENA) json_object_set_new(q, "arena", json_string(req->room));
}

/* p learnt where its arena runs (found: that node, or "" if nowhere else). */
static void arena_found(remote *r, srv_player *p, gather *gt, const char *found) {
    const proto_request *req = &gt->req;
    if (!found[0]) {
        lobby_request(p, &gt->req); /* no other node runs it: this one says */
        return;
    }
    if (req->type == PROTO_REQ_ARENA_JOIN) {
        home_route_to_node(r, p, req, found); /* p is a guest there, an entrant */
        return;
    }
    /* An entrant there asks through its home (its own row comes back). */
    remote_home *h = p->home;
    if (h && h->introduced && !h->resume_deadline && !strcmp(h->node, found)) {
        home_forward(r, h, req);
        return;
    }
    if (req->type == PROTO_REQ_ARENA_LEAVE && gt->arena_over) {
        srv_send_error(p, PROTO_ERR_ARENA_OVER, "that arena has finished");
        return;
    }
    if (!gt->arena_line) {
        send_unavailable(p, "the node that runs that arena did not answer; try again");
        return;
    }
    srv_send_line(p, SRV_MSG_ACCOUNT, gt->arena_line, gt->arena_len);
    gt->arena_line = NULL; /* taken */
}

/* Every waiter of `arenas` gets this node's and the others' arenas. */
static void arenas_done(remote *r, gather *gt) {
    proto_arena_info *rows = malloc(ARENAS_LIST_MAX * sizeof *rows);
    int n = rows ? arena_host_infos(r->g, rows, ARENAS_LIST_MAX) : 0;
    for (int i = 0; rows && i < gt->narenas && n < ARENAS_LIST_MAX; i++) {
        arena_listed *a = &gt->arenas[i];
        a->info.code = a->code;
        a->info.name = a->name;
        rows[n++] = a->info;
    }
    size_t len = 0;
    char *line = rows ? proto_enc_arenas(rows, n, &len) : NULL;
    free(rows);
    for (int i = 0; i < gt->nwaiters; i++) {
        srv_player *p = gt->waiters[i].p;
        char *copy = line ? malloc(len) : NULL;
        if (!copy) {
            srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
            continue;
        }
        memcpy(copy, line, len);
        srv_send_line(p, SRV_MSG_ACCOUNT, copy, len);
    }
    free(line);
}

static void rejoin_found(remote *r, gather *gt);

void arena_gather_done(remote *r, gather *gt) {
    if (gt->kind == GATHER_ARENAS)
        arenas_done(r, gt);
    else if (gt->rejoin)
        rejoin_found(r, gt);
    else
        arena_found(r, gt->p, gt, gt->found_at);
}

/* Another node's arenas: [code, name, status, starts, ends, players, size,
 * target, entrants] each; a row out of bounds is left out. */
static void arenas_add(gather *gt, const json_t *rows) {
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        const char *code, *name;
        int status, players, size;
        json_int_t starts, ends, target, entrants;
        if (gt->narenas >= ARENAS_LIST_MAX ||
            json_unpack((json_t *)row, "[ssiIIiiII]", &code, &name, &status, &starts,
                        &ends, &players, &size, &target, &entrants) < 0 ||
            strlen(code) > PROTO_ROOM_MAX || strlen(name) > PROTO_ARENA_NAME_MAX ||
            status < PROTO_ARENA_UPCOMING || status > PROTO_ARENA_FINISHED ||
            players < 2 || players > PROTO_PLAYERS_MAX || size < ENG_SIZE_MIN ||
            size > ENG_SIZE_MAX || target < 0 || target > PROTO_TARGET_MAX ||
            entrants < 0 || starts < 0 || ends < starts)
            continue;
        arena_listed *grown =
            room_for_one(gt->arenas, &gt->arenas_cap, gt->narenas, sizeof *grown);
        if (!grown) return;
        gt->arenas = grown;
        arena_listed *a = &gt->arenas[gt->narenas++];
        snprintf(a->code, sizeof a->code, "%s", code);
        snprintf(a->name, sizeof a->name, "%s", name);
        a->info = (proto_arena_info){.status = (proto_arena_status)status,
                                     .starts_ms = starts,
                                     .ends_ms = ends,
                                     .players = players,
                                     .size = size,
                                     .target = (uint32_t)target,
                                     .entrants = (uint64_t)entrants};
    }
}

void arena_gather_on_answer(gather *gt, const char *from, const json_t *op) {
    if (gt->kind == GATHER_ARENAS) {
        arenas_add(gt, json_object_get(op, "rows"));
        return;
    }
    const json_t *line = json_object_get(op, "line");
    if (!json_is_true(json_object_get(op, "has")) || gt->found_at[0]) return;
    snprintf(gt->found_at, sizeof gt->found_at, "%s", from);
    gt->arena_over = json_is_true(json_object_get(op, "over"));
    size_t len = json_string_length(line);
    if (!json_is_string(line) || !len || len > ARENA_LINE_MAX ||
        json_string_value(line)[len - 1] != '\n' ||
        memchr(json_string_value(line), '\0', len))
        return; /* found, but no line to show: the asker says so */
    if ((gt->arena_line = malloc(len))) {
        memcpy(gt->arena_line, json_string_value(line), len);
        gt->arena_len = len;
    }
}

void arena_gather_answer(remote *r, const char *kind, const json_t *q, json_t *op) {
    if (!strcmp(kind, "arenas")) {
        proto_arena_info *rows = malloc(ARENAS_LIST_MAX * sizeof *rows);
        int n = rows ? arena_host_infos(r->g, rows, ARENAS_LIST_MAX) : 0;
        json_t *list = json_array();
        for (int i = 0; i < n && list; i++)
            json_array_append_new(
                list,
                json_pack("[ssiIIiiII]", rows[i].code, rows[i].name, (int)rows[i].status,
                          (json_int_t)rows[i].starts_ms, (json_int_t)rows[i].ends_ms,
                          rows[i].players, rows[i].size, (json_int_t)rows[i].target,
                          (json_int_t)rows[i].entrants));
        free(rows);
        json_object_set_new(op, "rows", list ? list : json_array());
        return;
    }
    const char *code = json_string_value(json_object_get(q, "arena"));
    bool over = false;
    bool has =
        code && strlen(code) <= PROTO_ROOM_MAX && arena_host_runs(r->g, code, &over);
    json_object_set_new(op, "has", json_boolean(has));
    if (!has) return;
    json_object_set_new(op, "over", json_boolean(over));
    bool found;
    size_t len;
    char *line = arena_host_results_line(r->g, code, &found, &len);
    if (line) json_object_set_new(op, "line", json_stringn(line, len));
    free(line);
}

/* ------------------------------------------------- entering again --- */

/* How long an entrant of a lost node's arena waits for it to be taken over
 * (the contract's 10 s, and the round trips to find it). */
#define REJOIN_WAIT_MS (REMOTE_RESUME_WAIT_MS + 5000)

void arena_home_lost(remote *r, const remote_home *h) {
    /* A racer resumes its race (its seat is taken over), and is back in the
     * pool after it; an entrant that waited enters again by itself. */
    if (!h->arena[0] || h->racing) return;
    rejoin *rj = calloc(1, sizeof *rj);
    if (!rj) return; /* it sends arena_join itself */
    rj->p = h->p;
    snprintf(rj->arena, sizeof rj->arena, "%s", h->arena);
    rj->next_at = now_ms(r) + REMOTE_REASK_MS;
    rj->until = now_ms(r) + REJOIN_WAIT_MS;
    rj->next = r->rejoins;
    r->rejoins = rj;
}

static rejoin **rejoin_of(remote *r, const srv_player *p) {
    rejoin **at = &r->rejoins;
    while (*at && (*at)->p != p)
        at = &(*at)->next;
    return at;
}

void arena_rejoins_forget(remote *r, const srv_player *p) {
    rejoin **at = rejoin_of(r, p);
    if (!*at) return;
    rejoin *rj = *at;
    *at = rj->next;
    free(rj);
}

/* The arena of p's rejoin was looked for: entered where it runs, or asked
 * again at the next tick. */
static void rejoin_found(remote *r, gather *gt) {
    rejoin *rj = *rejoin_of(r, gt->p);
    if (!rj) return; /* it went, or asked for something else meanwhile */
    if (!gt->found_at[0]) {
        rj->asking = false;
        rj->next_at = now_ms(r) + REMOTE_REASK_MS;
        return;
    }
    srv_log(SRV_LOG_INFO, "player %llu enters arena %s again, on node %s",
            (unsigned long long)gt->p->id, rj->arena, gt->found_at);
    arena_rejoins_forget(r, gt->p);
    home_route_to_node(r, gt->p, &gt->req, gt->found_at);
}

void arena_rejoins_tick(remote *r) {
    uint64_t now = now_ms(r);
    for (rejoin **at = &r->rejoins; *at;) {
        rejoin *rj = *at;
        srv_player *p = rj->p;
        proto_request req = {.type = PROTO_REQ_ARENA_JOIN};
        snprintf(req.room, sizeof req.room, "%s", rj->arena);
        /* Its player went elsewhere meanwhile (a room, a resume, a home),
         * or the takeover did not come: it is left to the player. */
        bool done = p->home || p->room || p->watching || now >= rj->until;
        if (!done && !rj->asking && now >= rj->next_at &&
            arena_host_runs(r->g, rj->arena, NULL)) {
            /* Taken over by this node. */
            lobby_request(p, &req);
            done = true;
        } else if (!done && !rj->asking && now >= rj->next_at &&
                   gather_ask_everyone(r, p, GATHER_ARENA, &req)) {
            r->gathers->rejoin = true; /* the gather just asked */
            rj->asking = true;
        }
        if (done) {
            *at = rj->next;
            free(rj);
        } else {
            at = &rj->next;
        }
    }
}

/* ------------------------------------------------------- --arena-every --- */

/* One period's claim: a create-only put of its key, on the thread pool. */
typedef struct every_claim {
    uv_work_t work;
    remote *r;
    int64_t starts_ms;
    char key[64];
    bool won;
} every_claim;

static void claim_work(uv_work_t *w) {
    every_claim *cl = w->data;
    uint64_t rev = 0;
    char node[NODE_NAME_MAX];
    snprintf(node, sizeof node, "%s", cl->r->name);
    /* Create fails if any node created the key first: one node wins. */
    cl->won = kvStore_Create(&rev, cl->r->every_kv, cl->key, node, (int)strlen(node)) ==
              NATS_OK;
}

static void claim_done(uv_work_t *w, int status) {
    every_claim *cl = w->data;
    remote *r = cl->r;
    assert(r->every_claims > 0);
    r->every_claims--;
    if (status == 0 && !r->closing) {
        if (cl->won) {
            srv_log(SRV_LOG_INFO, "--arena-every: this node opens the arena of %s",
                    cl->key);
            arena_host_every_open(r->g, cl->starts_ms);
        } else {
            srv_log(SRV_LOG_DEBUG,
                    "--arena-every: %s is another node's (or NATS is away)", cl->key);
        }
    }
    free(cl);
}

/* The schedule's hook: this period's key, claimed off the loop. */
static void every_claim_ask(void *ctx, game *g, int64_t starts_ms) {
    remote *r = ctx;
    if (r->closing || !cluster_connected(r->c)) {
        srv_log(SRV_LOG_WARN, "--arena-every: NATS is away; another node opens this one");
        return;
    }
    every_claim *cl = calloc(1, sizeof *cl);
    if (!cl) return;
    cl->r = r;
    cl->starts_ms = starts_ms;
    cl->work.data = cl;
    snprintf(cl->key, sizeof cl->key, "every.%u.%lld", g->cfg->arena_every,
             (long long)starts_ms);
    if (uv_queue_work(g->loop, &cl->work, claim_work, claim_done) < 0) {
        free(cl);
        return;
    }
    r->every_claims++;
}

int remote_arena_every(remote *r) {
    if (cluster_kv_bucket(r->c, ARENA_EVERY_BUCKET, ARENA_EVERY_TTL_MS, &r->every_kv) < 0)
        return -1;
    arena_host_on_every_claim(r->g, every_claim_ask, r);
    return 0;
}
