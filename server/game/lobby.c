/* lobby.c - the lobby: players, naming, matchmaking, the rooms list, resume lookups. */
#include "lobby_internal.h"
#include "arena_host.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "resume.h"
#include "room.h"

/* -------------------------------------------------------------- players --- */

static srv_player *player_new(game *g) {
    srv_player *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (srv_random_hex(p->token, 16) < 0) {
        free(p);
        return NULL;
    }
    int hash_oom = 0;
    HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
    if (hash_oom) {
        free(p);
        return NULL;
    }
    p->game = g;
    if (g->id_limit && g->next_id >= g->id_limit &&
        !(g->ids.more && g->ids.more(g->ids.ctx, &g->next_id, &g->id_limit)))
        g->id_limit = 0;
    p->id = g->next_id++;
    snprintf(p->name, sizeof p->name, "player-%llu", (unsigned long long)p->id);
    srv_list_init(&p->queue_link);
    srv_list_push(&g->players, &p->link);
    return p;
}

srv_player *lobby_player_restore(game *g, uint64_t id, const char *name,
                                 const char *token_hash) {
    srv_player *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->game = g;
    p->id = id;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->welcomed = true;
    if (strlen(token_hash) != 64 || !(p->token_hash = malloc(65))) {
        free(p);
        return NULL;
    }
    memcpy(p->token_hash, token_hash, 65);
    int hash_oom = 0;
    HASH_ADD_KEYPTR(hh_token, g->by_token, p->token_hash, 64, p);
    if (hash_oom) {
        free(p->token_hash);
        free(p);
        return NULL;
    }
    srv_list_init(&p->queue_link);
    srv_list_push(&g->players, &p->link);
    return p;
}

/* An account's rating object. */
proto_rating lobby_rating_of(const acct_account *a) {
    return (proto_rating){.rating = acct_rating(a),
                          .mu = a->mu,
                          .sigma = a->sigma,
                          .games = a->games,
                          .provisional = acct_provisional(a)};
}

static void send_welcome(srv_player *p) {
    size_t len;
    proto_rating rating;
    if (p->account) rating = lobby_rating_of(p->account);
    char *line = proto_enc_welcome_account(p->id, p->name, p->token,
                                           p->account ? &rating : NULL, &len);
    p->welcomed = true;
    srv_send_line(p, SRV_MSG_WELCOME, line, len);
}

srv_player *lobby_player_new(game *g, sink dest) {
    srv_player *p = player_new(g);
    if (p) p->sink = dest;
    return p;
}

srv_player *lobby_player_adopt(game *g, sink dest, uint64_t id, const char *name,
                               const char *token) {
    if (strlen(token) != sizeof((srv_player *)0)->token - 1) return NULL;
    srv_player *p = player_new(g);
    if (!p) return NULL;
    HASH_DELETE(hh_token, g->by_token, p);
    memcpy(p->token, token, sizeof p->token);
    int hash_oom = 0;
    HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
    if (hash_oom) {
        srv_list_remove(&p->link);
        free(p);
        return NULL;
    }
    p->id = id;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->welcomed = true; /* by the node that holds its connection */
    p->sink = dest;
    return p;
}

void lobby_player_seated_elsewhere(srv_player *p, const char *name, const char *token) {
    p->welcomed = true; /* by the node that has the seat */
    snprintf(p->name, sizeof p->name, "%s", name);
    game *g = p->game;
    srv_player *holder = NULL;
    if (strlen(token) != sizeof p->token - 1 || !p->token[0] || !strcmp(p->token, token))
        return;
    HASH_FIND(hh_token, g->by_token, token, strlen(token), holder);
    if (holder) return; /* a seat of this node's has it: that one is found */
    char old[sizeof p->token];
    memcpy(old, p->token, sizeof old);
    HASH_DELETE(hh_token, g->by_token, p);
    memcpy(p->token, token, sizeof p->token);
    int hash_oom = 0;
    HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
    if (hash_oom) { /* back under its own, which had its place */
        memcpy(p->token, old, sizeof p->token);
        HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
    }
}

void lobby_welcome(srv_player *p) {
    if (!p->welcomed) send_welcome(p);
}

/* ------------------------------------------------------------ matchmaking --- */

/* What makes two `quick` requests match; no padding, so it hashes as bytes. */
typedef struct queue_key {
    int32_t players, size;
    uint32_t target;
} queue_key;

/* The players waiting for one set of settings, oldest first. */
typedef struct lobby_queue {
    queue_key key;
    srv_link waiting;
    int n; /* players in waiting */
    UT_hash_handle hh;
} lobby_queue;

static queue_key key_of(const proto_settings *settings) {
    queue_key k;
    memset(&k, 0, sizeof k);
    k.players = settings->players;
    k.size = settings->size;
    k.target = settings->target;
    return k;
}

/* The settings of the race p's `quick` asked for. */
static proto_settings settings_of(const player_queue_key *k) {
    return (proto_settings){
        .players = k->players, .size = k->size, .target = k->target, .rated = k->rated};
}

/* Puts p (not queued) at the back of the queue for its queue_key. Returns 0,
 * or -1 if memory runs out (p is then not queued). */
static int enqueue(srv_player *p) {
    game *g = p->game;
    assert(!p->queued && !p->queue && !p->room);
    proto_settings settings = settings_of(&p->queue_key);
    queue_key key = key_of(&settings);
    lobby_queue *q = NULL;
    HASH_FIND(hh, g->queues, &key, sizeof key, q);
    if (!q) {
        if (!(q = calloc(1, sizeof *q))) return -1;
        q->key = key;
        srv_list_init(&q->waiting);
        int hash_oom = 0;
        HASH_ADD(hh, g->queues, key, sizeof q->key, q);
        if (hash_oom) {
            free(q);
            return -1;
        }
    }
    srv_list_push(&q->waiting, &p->queue_link);
    q->n++;
    p->queue = q;
    p->queued = true;
    return 0;
}

static void unqueue(srv_player *p) {
    if (!p->queued) return;
    lobby_queue *q = p->queue;
    assert(q && q->n > 0 && !srv_list_empty(&q->waiting)); /* p is one of them */
    srv_list_remove(&p->queue_link);
    p->queued = false;
    p->queue = NULL;
    if (--q->n == 0) { /* settings nobody waits for take no memory */
        HASH_DELETE(hh, p->game->queues, q);
        free(q);
    }
}

/* -------------------------------------------------------------- leaving --- */

void srv_player_release(srv_player *p) {
    if (player_connected(p) || p->room) return;
    arena_host_forget(p);
    unqueue(p);
    if (p->watching) room_unwatch(p->watching, p);
    assert(!p->queued && !p->watching && !p->room);
    resume_code_forget(p);
    if (p->token[0] || p->token_hash) /* not when out of memory restoring it */
        HASH_DELETE(hh_token, p->game->by_token, p);
    srv_list_remove(&p->link);
    free(p->token_hash);
    free(p);
}

/* Leaves whatever p is in (queue, room, game, spectating) as `leave` would,
 * without the `left` reply. Callers have refused a running race already. */
void lobby_leave_quietly(srv_player *p) {
    unqueue(p);
    if (p->room) room_leave(p->room, p);
    if (p->watching) room_unwatch(p->watching, p);
}

int lobby_queue_keys(game *g, proto_settings *keys, int max) {
    int n = 0;
    lobby_queue *q, *tmp;
    HASH_ITER(hh, g->queues, q, tmp) {
        if (n < max && q->n > 0)
            keys[n++] = (proto_settings){
                .players = q->key.players, .size = q->key.size, .target = q->key.target};
    }
    return n;
}

int lobby_queue_take(game *g, const proto_settings *key,
                     bool (*eligible)(const srv_player *), uint64_t queued_before,
                     srv_player **out, int max) {
    queue_key k = key_of(key);
    lobby_queue *q = NULL;
    HASH_FIND(hh, g->queues, &k, sizeof k, q);
    if (!q) return 0;
    int n = 0;
    srv_link *l = q->waiting.next;
    while (l != &q->waiting && n < max) {
        srv_player *p = srv_container(l, srv_player, queue_link);
        l = l->next;
        if (!player_alive(p) || p->queued_at > queued_before || !eligible(p)) continue;
        out[n++] = p;
    }
    /* Taken out once the walk is done: the last one out frees the queue. */
    for (int i = 0; i < n; i++)
        unqueue(out[i]);
    return n;
}

int lobby_queue_waiting(const srv_player *p) {
    return p->queued ? p->queue->n : 0;
}

/* ------------------------------------------------------------ quick bots --- */

/* --quick-bots: a `quick` that waited that long without a match has its
 * race filled by level-3 bots, with whoever else waits for the same
 * settings. One timer for the whole game, armed for the oldest wait. */
#define QUICK_BOT_LEVEL 3

static void on_quick_timer(uv_timer_t *t);

/* The first alive waiter of q, oldest first, and how many are alive. */
static int queue_alive(lobby_queue *q, srv_player **match, int max) {
    int n = 0;
    for (srv_link *l = q->waiting.next; l != &q->waiting; l = l->next) {
        srv_player *w = srv_container(l, srv_player, queue_link);
        if (!player_alive(w)) continue;
        if (n < max) match[n] = w;
        n++;
    }
    return n;
}

static void quick_bots_arm(game *g) {
    uint64_t wait = g->cfg->quick_bots_ms;
    if (!wait || !g->bots.make) return;
    if (!g->quick_timer_ready) {
        uv_timer_init(g->loop, &g->quick_timer);
        g->quick_timer.data = g;
        g->quick_timer_ready = true;
        /* Waiters keep their connections, which keep the loop running; the timer
         * alone must not, or a stop waits for it (up to --quick-bots). */
        uv_unref((uv_handle_t *)&g->quick_timer);
    }
    uint64_t now = uv_now(g->loop), due = 0;
    lobby_queue *q, *tmp;
    HASH_ITER(hh, g->queues, q, tmp) {
        srv_player *oldest[1];
        if (!queue_alive(q, oldest, 1)) continue;
        uint64_t at = oldest[0]->queued_at + wait;
        if (!due || at < due) due = at;
    }
    if (due)
        uv_timer_start(&g->quick_timer, on_quick_timer, due > now ? due - now : 0, 0);
    else
        uv_timer_stop(&g->quick_timer);
}

/* Starts q's race with its waiters and bots for the missing seats. */
static void fill_with_bots(game *g, lobby_queue *q) {
    srv_player *match[PROTO_PLAYERS_MAX] = {NULL};
    int n = queue_alive(q, match, PROTO_PLAYERS_MAX);
    if (n == 0) return; /* everyone waiting is on the way out */
    proto_settings settings = settings_of(&match[0]->queue_key);
    if (n > settings.players) n = settings.players;
    room *r = room_new(g, false, &settings);
    /* Matchmaking goes straight to `start`: nobody is sent `room`. */
    /* The bots count against the longest waiter's address. */
    if (!r ||
        room_add_bots(r, settings.players - n, QUICK_BOT_LEVEL, match[0], false) < 0) {
        if (r) room_abandon(r);
        /* No bots to be had (--max-bots, or that address's share): they wait
         * on, and try again after another wait, for a person or a bot. */
        for (int i = 0; i < n; i++)
            match[i]->queued_at = uv_now(g->loop);
        return;
    }
    for (int i = 0; i < n; i++) {
        unqueue(match[i]); /* may free q */
        room_add_player(r, match[i], false);
    }
    room_start(r);
}

static void on_quick_timer(uv_timer_t *t) {
    game *g = t->data;
    if (game_defer_until_io(g, t, on_quick_timer)) return;
    uint64_t now = uv_now(g->loop);
    lobby_queue *q, *tmp;
    HASH_ITER(hh, g->queues, q, tmp) {
        srv_player *oldest[1];
        if (queue_alive(q, oldest, 1) &&
            oldest[0]->queued_at + g->cfg->quick_bots_ms <= now)
            fill_with_bots(g, q);
    }
    quick_bots_arm(g);
}

/* Matchmaking's half of `quick` (lobby_internal.h). */
void lobby_quick(srv_player *p, const proto_settings *settings) {
    game *g = p->game;
    /* Matchmaking's races have no time limit, and no arena (only an arena
     * makes its races); both decoders (message.c, wire.c) bound the rest. */
    assert(settings->players >= 0 && settings->players <= PROTO_PLAYERS_MAX);
    assert(settings->size >= 0 && settings->size <= UINT8_MAX && !settings->arena[0]);
    p->queue_key = (player_queue_key){.players = (uint8_t)settings->players,
                                      .size = (uint8_t)settings->size,
                                      .target = settings->target,
                                      .rated = settings->rated};
    if (enqueue(p) < 0) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory; try again");
        return;
    }

    srv_player *match[PROTO_PLAYERS_MAX];
    int waiting = 0;
    srv_link *queue = &p->queue->waiting;
    for (srv_link *l = queue->next; l != queue; l = l->next) {
        srv_player *q = srv_container(l, srv_player, queue_link);
        /* Closing connections leave the queue in their close callback; do not
         * seat them in a race their opponents would have to wait out. */
        if (!player_alive(q)) continue;
        if (waiting < PROTO_PLAYERS_MAX) match[waiting] = q;
        waiting++;
    }
    size_t len;
    char *line = proto_enc_queued(p->queue_key.players, waiting, &len);
    srv_send_line(p, SRV_MSG_QUEUED, line, len);
    if (waiting < p->queue_key.players) {
        p->queued_at = uv_now(g->loop);
        quick_bots_arm(g);
        return;
    }

    proto_settings race = settings_of(&p->queue_key);
    room *r = room_new(g, false, &race);
    if (!r) {
        srv_log_client(SRV_LOG_ERROR, "out of memory making a matchmaking room");
        return; /* everyone stays queued; the next request retries */
    }
    for (int i = 0; i < p->queue_key.players; i++) {
        unqueue(match[i]);
        room_add_player(r, match[i], false);
    }
    room_start(r);
}

/* ------------------------------------------------------------ rooms list --- */

/* Adds the rooms of one list to rows, up to max in all. */
static int list_rooms(const srv_link *list, proto_room_info *rows, int n, int max) {
    for (const srv_link *l = list->next; l != list && n < max; l = l->next) {
        const room *r = srv_container(l, room, listed);
        proto_room_info *row = &rows[n++];
        *row = (proto_room_info){.room = r->code,
                                 .players = r->nseats,
                                 .settings = r->settings,
                                 .started = r->state == ROOM_RUNNING,
                                 .seats_known = true,
                                 .spectators = (int)r->fan.n};
        for (int i = 0; i < r->nseats; i++) {
            row->names[i] = r->seats[i].name;
            row->scores[i] = r->seats[i].score;
            row->bots += r->seats[i].bot_level != 0;
        }
    }
    return n;
}

int lobby_rooms(game *g, proto_room_info *rows, int max) {
    /* Joinable rooms first: they are what most people ask for. */
    int n = list_rooms(&g->waiting_rooms, rows, 0, max);
    return list_rooms(&g->running_rooms, rows, n, max);
}

/* The rows as a `rooms` message carries them (they own their codes). NULL
 * if memory runs out. */
static srv_rooms *rooms_rows(const proto_room_info *rows, int n) {
    srv_rooms *l = srv_rooms_new(n);
    for (int i = 0; l && i < n; i++)
        l->rows[i] = (srv_room_row){.players = rows[i].players,
                                    .settings = rows[i].settings,
                                    .started = rows[i].started};
    for (int i = 0; l && i < n; i++)
        snprintf(l->rows[i].code, sizeof l->rows[i].code, "%s", rows[i].room);
    return l;
}

/* Merges this node's rows with others' (from the cluster's directory):
 * joinable rooms first, up to LOBBY_ROOMS_MAX. */
static void send_merged_rooms(srv_player *p, const proto_room_info *others, int nothers) {
    proto_room_info local[LOBBY_ROOMS_MAX], rows[LOBBY_ROOMS_MAX];
    int nlocal = lobby_rooms(p->game, local, LOBBY_ROOMS_MAX), n = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool started = pass == 1;
        for (int i = 0; i < nlocal && n < LOBBY_ROOMS_MAX; i++)
            if (local[i].started == started) rows[n++] = local[i];
        for (int i = 0; i < nothers && n < LOBBY_ROOMS_MAX; i++)
            if (others[i].started == started) rows[n++] = others[i];
    }
    size_t len;
    char *line = proto_enc_rooms(rows, n, &len);
    srv_msg m = {.type = SRV_MSG_ROOMS,
                 .json = srv_buf_take(line, len),
                 .rooms = rooms_rows(rows, n)};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
    srv_rooms_unref(m.rooms);
}

void lobby_send_rooms(srv_player *p, const proto_room_info *others, int nothers) {
    lobby_welcome(p);
    if (nothers) {
        send_merged_rooms(p, others, nothers);
        return;
    }
    game *g = p->game;
    /* The same reply for everyone until a room changes (srv_rooms_changed),
     * or for a second: the scores and spectators it shows change without
     * that, and a second behind is close enough for a list. */
    uint64_t now = uv_now(g->loop);
    if (g->rooms_reply && now - g->rooms_made_at >= LOBBY_ROOMS_FRESH_MS) {
        srv_buf_unref(g->rooms_reply);
        g->rooms_reply = NULL;
    }
    if (!g->rooms_reply || !g->rooms_rows) {
        proto_room_info rows[LOBBY_ROOMS_MAX];
        int n = lobby_rooms(g, rows, LOBBY_ROOMS_MAX);
        if (!g->rooms_reply) {
            size_t len;
            char *line = proto_enc_rooms(rows, n, &len);
            g->rooms_reply = srv_buf_take(line, len); /* NULL if memory ran out */
            g->rooms_made_at = now;
        }
        if (!g->rooms_rows) g->rooms_rows = rooms_rows(rows, n);
    }
    srv_msg m = {.type = SRV_MSG_ROOMS, .json = g->rooms_reply, .rooms = g->rooms_rows};
    srv_send(p, &m);
}

void lobby_hello(srv_player *p, const proto_request *req) {
    p->named = true;
    memcpy(p->name, req->name, sizeof p->name);
    if (p->room) {
        memcpy(room_seat_of(p)->name, p->name, sizeof p->name);
        fanout_touch(&p->room->fan); /* spectators' snapshots show names */
    }
    /* An account's entrant that waited when the server stopped is back. */
    if (arena_host_login(p)) return;
    send_welcome(p);
}

/* Only a seat in a game or room that has not ended can be taken back. */
static bool resumable(const srv_player *p) {
    return p && p->room && p->room->state != ROOM_ENDED;
}

/* p (in the token index under its token) is filed under a fresh token: its
 * old one goes to a seat that has a better claim to it. The old token is not
 * known to anyone but p's client, which resumes with it. */
static bool refile_token(game *g, srv_player *p) {
    char fresh[sizeof p->token];
    if (srv_random_hex(fresh, 16) < 0) return false;
    HASH_DELETE(hh_token, g->by_token, p);
    memcpy(p->token, fresh, sizeof p->token);
    int hash_oom = 0;
    HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
    if (hash_oom) { /* out of the index: never found by a token again */
        p->token[0] = '\0';
        free(p->token_hash); /* nor released from the index (srv_player_release) */
        p->token_hash = NULL;
    }
    return true;
}

/* The player whose token this is: the one with a seat that can be taken back
 * if there are two. There are two after a takeover in cluster mode: the
 * connection's own player on this node (its seat was on the node that died)
 * and the seat rebuilt here from the records, which is filed under the
 * token's hash (64 digits; tokens have 32) until its first resume teaches the
 * server the token itself. The rebuilt seat then takes the token, and the
 * connection's player, which holds no seat, gets a fresh one, so that every
 * later resume with the token finds the seat, on this node or through any
 * other, whether the old connection is still open or not. Sending the hash
 * itself finds nothing. */
static srv_player *find_token(game *g, const char *token) {
    srv_player *p = NULL;
    HASH_FIND(hh_token, g->by_token, token, strlen(token), p);
    if (p && !p->token[0]) p = NULL; /* a hash that was sent as a token */
    if (resumable(p)) return p;
    char hash[65];
    if (strlen(token) >= sizeof p->token || journal_token_hash(token, hash) < 0) return p;
    srv_player *seat = NULL;
    HASH_FIND(hh_token, g->by_token, hash, 64, seat);
    if (!seat || seat->token[0]) return p;
    if (p && !refile_token(g, p)) return p; /* out of randomness: as before */
    HASH_DELETE(hh_token, g->by_token, seat);
    memcpy(seat->token, token, strlen(token) + 1);
    int hash_oom = 0;
    HASH_ADD(hh_token, g->by_token, token, strlen(seat->token), seat);
    if (hash_oom) { /* it stays known by its hash */
        seat->token[0] = '\0';
        HASH_ADD_KEYPTR(hh_token, g->by_token, seat->token_hash, 64, seat);
        return NULL;
    }
    return seat;
}

void lobby_player_gone(srv_player *p) {
    p->sink = (sink){0};
    unqueue(p);
    if (p->watching) room_unwatch(p->watching, p);
    arena_host_disconnected(p);
    if (p->room) room_disconnect(p->room, p);
    srv_player_release(p);
}

srv_player *lobby_find_resumable(game *g, const char *token) {
    srv_player *p = find_token(g, token);
    return resumable(p) ? p : NULL;
}

srv_player *lobby_find_by_code(game *g, const char *code) {
    srv_player *p = resume_code_find(g, code);
    return p && p->room && p->room->state != ROOM_ENDED ? p : NULL;
}

void lobby_take_back(srv_player *p, sink dest) {
    if (p->sink.ops && (p->sink.ops != dest.ops || p->sink.dest != dest.dest)) {
        /* The old destination is still there: it loses the seat. */
        sink old = p->sink;
        p->sink = (sink){0};
        old.ops->close(old.dest, SINK_TAKEN_OVER);
    }
    p->sink = dest;
    send_welcome(p);
    if (p->room) room_reconnect(p->room, p);
    arena_host_reconnected(p);
}
