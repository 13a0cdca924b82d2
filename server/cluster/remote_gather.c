/* remote_gather.c - questions to every node (rooms, history, replay), and answers. */
#include "remote_internal.h"

#include <limits.h>

#include "journal.h"
#include "lobby.h"
#include "room.h"

/* ---------------------------------------------------- asking every node --- */

bool gather_ask_everyone(remote *r, srv_player *p, gather_kind kind,
                         const proto_request *req) {
    unsigned others = cluster_nodes_alive(r->c);
    if (!cluster_connected(r->c) || others < 2) return false;
    gather *gt = calloc(1, sizeof *gt);
    if (!gt) return false;
    static const char *const kinds[] = {"room",  "hist",  "replay",
                                        "rooms", "arena", "arenas"};
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
    arena_gather_ask(kind, req, q);
    gt->id = ++r->next_gather;
    gt->kind = kind;
    gt->p = p;
    gt->req = *req;
    gt->req.ping_t = NULL; /* not a ping: nothing of req's is owned */
    gt->expected = (int)others - 1;
    gt->deadline = now_ms(r) + REMOTE_FIND_MS;
    gt->next = r->gathers;
    r->gathers = gt;
    remote_publish(r, FIND_SUBJECT, q);
    json_decref(q);
    return true;
}

/* items (n of them, of size bytes, room for *cap) with room for one more:
 * the same array or a bigger one (*cap doubled); NULL if memory runs out
 * (items and *cap unchanged). */
void *room_for_one(void *items, int *cap, int n, size_t size) {
    if (n < *cap) return items;
    int more = *cap ? *cap * 2 : 16;
    void *grown = realloc(items, size * (size_t)more);
    if (grown) *cap = more;
    return grown;
}

void gather_free(gather *gt) {
    for (int i = 0; i < gt->ngames; i++)
        proto_game_record_clear(&gt->games[i]);
    free(gt->games);
    free(gt->rows);
    free(gt->waiters);
    free(gt->arena_line);
    free(gt->arenas);
    proto_request_clear(&gt->req); /* the gather made it: it clears it */
    free(gt);
}

/* `rooms` or `history` of every node: the question of that kind already on
 * its way (*slot) takes p too, or a new one is asked (history: of the most
 * rows; p gets the limit it asked for). */
bool gather_ask_shared(remote *r, gather **slot, gather_kind kind, srv_player *p,
                       int limit) {
    if (!*slot) {
        proto_request req = {.type = kind == GATHER_ROOMS    ? PROTO_REQ_ROOMS
                                     : kind == GATHER_ARENAS ? PROTO_REQ_ARENAS
                                                             : PROTO_REQ_HISTORY,
                             .limit = PROTO_HISTORY_MAX};
        if (!gather_ask_everyone(r, NULL, kind, &req)) return false;
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
    bool listed = false;
    for (gather **at = &r->gathers; *at; at = &(*at)->next)
        if (*at == gt) {
            *at = gt->next;
            listed = true;
            break;
        }
    assert(listed); /* every gather on its way is in r->gathers */
    (void)listed;
    srv_player *p = gt->p;
    size_t len;
    if (gt == r->rooms_asked) r->rooms_asked = NULL;
    if (gt == r->history_asked) r->history_asked = NULL;
    if (gt == r->arenas_asked) r->arenas_asked = NULL;
    if (gt->kind == GATHER_ARENA || gt->kind == GATHER_ARENAS) {
        arena_gather_done(r, gt);
    } else if (gt->kind == GATHER_ROOMS) {
        rooms_done(gt);
    } else if (gt->kind == GATHER_HISTORY) {
        history_done(r, gt);
    } else if (gt->kind == GATHER_ROOM) {
        if (gt->found_at[0])
            home_route_to_node(r, p, &gt->req, gt->found_at);
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
void gather_on_answer(remote *r, const char *from, const json_t *op) {
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
    } else if (gt->kind == GATHER_ARENA || gt->kind == GATHER_ARENAS) {
        arena_gather_on_answer(gt, from, op);
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
void gather_answer(remote *r, const char *from, const char *kind, const json_t *q) {
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
    } else if (!strcmp(kind, "arena") || !strcmp(kind, "arenas")) {
        arena_gather_answer(r, kind, q, op);
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
    outbox_send_op(r, from, op);
}

void gathers_expire(remote *r) {
    uint64_t now = now_ms(r);
    gather *gt = r->gathers;
    while (gt) {
        gather *next = gt->next;
        if (now >= gt->deadline) gather_done(r, gt);
        gt = next;
    }
}

void gathers_forget(remote *r, const srv_player *p) {
    gather *shared[3] = {r->rooms_asked, r->history_asked, r->arenas_asked};
    for (int k = 0; k < 3; k++) {
        gather *gt = shared[k];
        for (int i = 0; gt && i < gt->nwaiters; i++)
            if (gt->waiters[i].p == p) gt->waiters[i--] = gt->waiters[--gt->nwaiters];
    }
    for (gather **at = &r->gathers; *at;) {
        gather *gt = *at;
        if (gt->p == p) {
            /* The shared questions (rooms, history) are nobody's own. */
            assert(gt != r->rooms_asked && gt != r->history_asked &&
                   gt != r->arenas_asked);
            *at = gt->next;
            gather_free(gt);
        } else {
            at = &gt->next;
        }
    }
}
