/* bot.c - server-run bots: players whose sink is the AI, thinking on a worker thread. */
#include "bot.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "hash.h"
#include "level.h"
#include "lobby.h"
#include "room.h"

/* The worker's transposition table: 2^16 entries, 1 MiB. */
#define CACHE_ENTRIES (1u << 16)
/* How soon a bot held back (spectators behind, a paused process) looks again. */
#define RETRY_MS 50
/* --max-bots-per-ip's default: this share of --max-bots, at least BOTS_PER_IP_MIN
 * (a person racing a full room of bots). */
#define BOTS_PER_IP_SHARE 8
#define BOTS_PER_IP_MIN   (PROTO_PLAYERS_MAX - 1)

typedef struct bot bot;

/* One room's bots waiting for the worker: the worker takes one search from
 * each room in turn, so that a room of many bots on big boards delays
 * another room's bot by one search at most per room with work. */
typedef struct lane {
    const void *room;  /* the key: the room the bots race in */
    bot *head, *tail;  /* its searches, oldest first */
    struct lane *next; /* in the ring of lanes with work */
    UT_hash_handle hh;
} lane;

/* The bots made for one client address (--max-bots-per-ip). */
typedef struct bot_addr {
    unsigned char key[SINK_ADDR_KEY_MAX + 1]; /* the address key, then its length */
    unsigned live;
    UT_hash_handle hh;
} bot_addr;

typedef struct bot_pool {
    game *g;
    ai_model *model;
    ai_cache cache; /* the worker's */
    uv_thread_t thread;
    bool thread_started;
    uv_mutex_t lock; /* guards the lanes, done and quit */
    uv_cond_t wake;
    lane *lanes;            /* by room: every lane with work */
    lane *ring, *ring_tail; /* the lanes with work, in their turn's order */
    lane spare;             /* a lane for when memory for one runs out */
    bot *done;              /* answers for the loop */
    bool quit;
    uv_async_t done_async; /* its close callback frees the pool */
    srv_link all;          /* every bot not yet freed */
    bot_addr *addrs;       /* addresses with bots (the loop's) */
    unsigned per_addr;     /* bots one address may have, 0 = no limit */
    bot_stats stats;
} bot_pool;

struct bot {
    srv_link link; /* in pool->all */
    bot_pool *pool;
    srv_player *p; /* NULL once the game has let it go */
    const ai_level *level;
    bot_addr *addr;   /* the address it counts against, or NULL */
    uv_timer_t timer; /* its answer waits for its pace, or a held room */
    uint64_t due;     /* loop ms from which its next move may be played */
    bot *next;        /* in a lane or done, while `out` */
    /* Owned by the worker while `out`: */
    eng_board board;
    uint32_t rng;
    int dir;
    uint64_t us;
    bool out;       /* a search is on its way (a lane, the worker or done) */
    bool answered;  /* dir is the answer for board, waiting for `due` */
    bool closing;   /* its timer is closing: freed in the callback */
    bool dismissed; /* the game let go of it */
};

/* ------------------------------------------------------------ the worker --- */

/* The next search: the first of the lane whose turn it is; the lane goes to
 * the back of the ring, or away once it is empty. Under the lock. */
static bot *next_search(bot_pool *pool) {
    lane *l = pool->ring;
    if (!l) return NULL;
    pool->ring = l->next;
    if (!pool->ring) pool->ring_tail = NULL;
    bot *b = l->head;
    assert(b);
    l->head = b->next;
    if (!l->head) l->tail = NULL;
    if (l->head) {
        l->next = NULL;
        if (pool->ring_tail)
            pool->ring_tail->next = l;
        else
            pool->ring = l;
        pool->ring_tail = l;
    } else if (l != &pool->spare) {
        HASH_DEL(pool->lanes, l);
        free(l);
    }
    return b;
}

static void worker(void *arg) {
    bot_pool *pool = arg;
    /* The tables take a while to fill: here, not on the loop at start-up. */
    ai_model_init(pool->model);
    uv_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->ring && !pool->quit)
            uv_cond_wait(&pool->wake, &pool->lock);
        if (pool->quit) break;
        bot *b = next_search(pool);
        uv_mutex_unlock(&pool->lock);

        uint64_t t0 = uv_hrtime();
        b->dir = ai_level_move(pool->model, &pool->cache, &b->board, b->level, &b->rng);
        b->us = (uv_hrtime() - t0) / 1000;

        uv_mutex_lock(&pool->lock);
        b->next = pool->done;
        pool->done = b;
        uv_mutex_unlock(&pool->lock);
        uv_async_send(&pool->done_async);
        uv_mutex_lock(&pool->lock);
    }
    uv_mutex_unlock(&pool->lock);
}

/* Hands b's board to the worker, in its room's lane. */
static void submit(bot *b, const room_seat *seat) {
    bot_pool *pool = b->pool;
    const void *key = b->p->room;
    b->board = seat->board;
    b->out = true;
    b->answered = false;
    b->next = NULL;
    uv_mutex_lock(&pool->lock);
    lane *l = NULL;
    HASH_FIND_PTR(pool->lanes, &key, l);
    if (!l && (l = calloc(1, sizeof *l)) != NULL) {
        l->room = key;
        int hash_oom = 0;
        HASH_ADD_PTR(pool->lanes, room, l);
        if (hash_oom) {
            free(l);
            l = NULL;
        }
    }
    if (!l) l = &pool->spare; /* shared, but it still gets its turns */
    if (l->tail)
        l->tail->next = b;
    else
        l->head = b;
    l->tail = b;
    if (l->head == b) { /* it had no work: it joins the ring */
        l->next = NULL;
        if (pool->ring_tail)
            pool->ring_tail->next = l;
        else
            pool->ring = l;
        pool->ring_tail = l;
    }
    uv_cond_signal(&pool->wake);
    uv_mutex_unlock(&pool->lock);
}

/* ------------------------------------------------------------- one bot --- */

static void on_bot_closed(uv_handle_t *h) {
    bot *b = h->data;
    srv_list_remove(&b->link);
    free(b);
}

/* Frees b once nothing refers to it: no search out, timer closed. */
static void bot_free_when_idle(bot *b) {
    if (b->out || b->closing) return;
    b->closing = true;
    uv_close((uv_handle_t *)&b->timer, on_bot_closed);
}

/* Its seat, if it is in a running race and may move (playing or won). */
static room_seat *movable_seat(const bot *b) {
    srv_player *p = b->p;
    if (!p || !p->room || p->room->state != ROOM_RUNNING) return NULL;
    room_seat *seat = &p->room->seats[p->seat];
    if (seat->player != p) return NULL;
    if (seat->status != PROTO_PLAYING && seat->status != PROTO_WON) return NULL;
    return seat;
}

/* A move may be due from delay_ms on: the bot thinks now, and plays the
 * answer once the delay is over (its level's pace), so that time waiting
 * for the worker is time it would have waited anyway. Nothing happens while
 * it has a search out or an answer waiting. */
static void consider(bot *b, uint64_t delay_ms) {
    if (b->dismissed || b->out || b->answered) return;
    room_seat *seat = movable_seat(b);
    if (!seat) return;
    b->due = uv_now(b->pool->g->loop) + delay_ms;
    submit(b, seat);
}

static uint64_t pace_ms(const bot *b) {
    return (uint64_t)(1000.0 / b->level->moves_per_s);
}

static void on_due(uv_timer_t *t);

/* b's answer, once its pace allows: played through the lobby as a client's
 * move, unless its race went on without it meanwhile. */
static void play(bot *b) {
    bot_pool *pool = b->pool;
    uint64_t now = uv_now(pool->g->loop);
    if (now < b->due) {
        uv_timer_start(&b->timer, on_due, b->due - now, 0);
        return;
    }
    room_seat *seat = movable_seat(b);
    /* Its race ended, or went on without it (a rematch): think again. */
    if (!seat || memcmp(&seat->board, &b->board, sizeof b->board) != 0) {
        b->answered = false;
        consider(b, 0);
        return;
    }
    /* A room whose spectators are behind holds its racers: bots too. */
    if (fanout_holds(b->p)) {
        uv_timer_start(&b->timer, on_due, RETRY_MS, 0);
        return;
    }
    b->answered = false;
    if (b->dir < 0) return; /* no move changes the board: the game is over for it */
    proto_request req = {.type = PROTO_REQ_MOVE, .dir = (eng_dir)b->dir};
    pool->stats.moves++;
    lobby_request(b->p, &req); /* its `state` comes back through bot_deliver */
    proto_request_clear(&req);
}

static void on_due(uv_timer_t *t) {
    bot *b = t->data;
    if (game_defer_until_io(b->pool->g, t, on_due)) return;
    if (!b->dismissed && b->answered) play(b);
}

/* The worker's answer for b. */
static void answered(bot *b) {
    bot_pool *pool = b->pool;
    pool->stats.searches++;
    pool->stats.search_us += b->us;
    if (b->dismissed) {
        bot_free_when_idle(b);
        return;
    }
    b->answered = true;
    play(b);
}

static void on_done(uv_async_t *h) {
    bot_pool *pool = h->data;
    uv_mutex_lock(&pool->lock);
    bot *list = pool->done;
    pool->done = NULL;
    uv_mutex_unlock(&pool->lock);
    /* The list is newest first; play in the order the worker finished. */
    bot *ordered = NULL;
    while (list) {
        bot *next = list->next;
        list->next = ordered;
        ordered = list;
        list = next;
    }
    while (ordered) {
        bot *b = ordered;
        ordered = b->next;
        b->out = false;
        answered(b);
    }
}

/* ------------------------------------------------------------- its sink --- */

static void bot_deliver(void *dest, const srv_msg *m) {
    bot *b = dest;
    switch (m->type) {
    case SRV_MSG_START: /* its race began, or a rematch did */
        /* An answer for the race before is of no use; one still out is
         * played no sooner than the pace from now (and then thought again). */
        b->answered = false;
        uv_timer_stop(&b->timer);
        b->due = uv_now(b->pool->g->loop) + pace_ms(b);
        consider(b, pace_ms(b));
        break;
    case SRV_MSG_STATE: /* its own move was applied: the next one is due */
        if (b->p && m->subject == b->p->id) consider(b, pace_ms(b));
        break;
    default:
        break; /* it needs nothing else: it reads its board from its seat */
    }
}

/* b no longer counts against its address. */
static void addr_release(bot *b) {
    bot_addr *a = b->addr;
    if (!a) return;
    b->addr = NULL;
    assert(a->live > 0);
    if (--a->live == 0) {
        HASH_DEL(b->pool->addrs, a);
        free(a);
    }
}

static void bot_close(void *dest, sink_close_reason why) {
    bot *b = dest;
    (void)why;
    b->dismissed = true;
    b->answered = false;
    b->p = NULL;
    b->pool->stats.live--;
    addr_release(b);
    uv_timer_stop(&b->timer);
    bot_free_when_idle(b);
}

static bool bot_alive(const void *dest) {
    return !((const bot *)dest)->dismissed;
}

static unsigned bot_game_start_wait(void *dest) {
    (void)dest;
    return 0; /* bots are made by games already counted */
}

static const sink_ops bot_sink_ops = {.deliver = bot_deliver,
                                      .close = bot_close,
                                      .alive = bot_alive,
                                      .game_start_wait = bot_game_start_wait,
                                      .addr_key = NULL}; /* bots make no bots */

static bot *bot_new(bot_pool *pool, int level) {
    bot *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->pool = pool;
    b->level = ai_level_get(level);
    uv_timer_init(pool->g->loop, &b->timer);
    b->timer.data = b;
    srv_list_push(&pool->all, &b->link);
    return b;
}

static void attach(bot *b, srv_player *p, int level) {
    b->p = p;
    b->rng = (uint32_t)(p->id * 2654435761u) ^ 0x2048u;
    p->bot_level = (uint8_t)level;
    p->welcomed = true; /* nobody reads a bot's welcome */
    b->pool->stats.live++;
    b->pool->stats.made++;
}

/* owner's address key (key has SINK_ADDR_KEY_MAX + 1 bytes: the key
 * zero-padded, then its length), or false if it has none. */
static bool owner_key(const srv_player *owner, unsigned char *key) {
    memset(key, 0, SINK_ADDR_KEY_MAX + 1);
    if (!owner || !owner->sink.ops || !owner->sink.ops->addr_key) return false;
    size_t len = owner->sink.ops->addr_key(owner->sink.dest, key);
    if (!len || len > SINK_ADDR_KEY_MAX) return false;
    key[SINK_ADDR_KEY_MAX] = (unsigned char)len;
    return true;
}

static bot_addr *addr_find(bot_pool *pool, const unsigned char *key) {
    bot_addr *a = NULL;
    HASH_FIND(hh, pool->addrs, key, SINK_ADDR_KEY_MAX + 1, a);
    return a;
}

static int room_for(void *ctx, const srv_player *owner, int n) {
    bot_pool *pool = ctx;
    unsigned most = pool->g->cfg->max_bots;
    if (most && pool->stats.live + (unsigned)n > most) return -1;
    unsigned char key[SINK_ADDR_KEY_MAX + 1];
    if (!pool->per_addr || !owner_key(owner, key)) return 0;
    bot_addr *a = addr_find(pool, key);
    if ((a ? a->live : 0) + (unsigned)n > pool->per_addr) return -2;
    return 0;
}

/* Counts b against owner's address: false if memory ran out. */
static bool addr_charge(bot *b, const srv_player *owner) {
    bot_pool *pool = b->pool;
    unsigned char key[SINK_ADDR_KEY_MAX + 1];
    if (!pool->per_addr || !owner_key(owner, key)) return true;
    bot_addr *a = addr_find(pool, key);
    if (!a) {
        if (!(a = calloc(1, sizeof *a))) return false;
        memcpy(a->key, key, sizeof a->key);
        int hash_oom = 0;
        HASH_ADD(hh, pool->addrs, key, sizeof a->key, a);
        if (hash_oom) {
            free(a);
            return false;
        }
    }
    a->live++;
    b->addr = a;
    return true;
}

static srv_player *make_bot(void *ctx, int level, const srv_player *owner) {
    bot_pool *pool = ctx;
    game *g = pool->g;
    if (room_for(pool, owner, 1)) return NULL;
    bot *b = bot_new(pool, level);
    if (!b) return NULL;
    srv_player *p = NULL;
    if (addr_charge(b, owner))
        p = lobby_player_new(g, (sink){.ops = &bot_sink_ops, .dest = b});
    if (!p) {
        addr_release(b);
        b->dismissed = true;
        bot_free_when_idle(b);
        return NULL;
    }
    attach(b, p, level);
    snprintf(p->name, sizeof p->name, "bot-L%d-%llu", level,
             (unsigned long long)(p->id % 100000000u));
    return p;
}

unsigned bots_per_ip(const srv_config *cfg) {
    if (cfg->max_bots_per_ip != SRV_BOTS_PER_IP_DEFAULT)
        return (unsigned)cfg->max_bots_per_ip;
    unsigned share = cfg->max_bots / BOTS_PER_IP_SHARE;
    return share > BOTS_PER_IP_MIN ? share : BOTS_PER_IP_MIN;
}

int bots_adopt(game *g, srv_player *p, int level) {
    bot_pool *pool = g->bots.ctx;
    if (!pool) return -1;
    bot *b = bot_new(pool, level);
    if (!b) return -1;
    p->sink = (sink){.ops = &bot_sink_ops, .dest = b};
    attach(b, p, level);
    if (p->room) room_reconnect(p->room, p); /* its `start` snapshot sets it going */
    return 0;
}

/* ---------------------------------------------------------- the pool --- */

int bots_start(game *g) {
    bot_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return -1;
    pool->g = g;
    srv_list_init(&pool->all);
    pool->model = malloc(sizeof *pool->model);
    pool->cache.entries = calloc(CACHE_ENTRIES, sizeof *pool->cache.entries);
    pool->cache.size = CACHE_ENTRIES;
    if (!pool->model || !pool->cache.entries) goto fail;
    if (uv_mutex_init(&pool->lock) < 0) goto fail;
    if (uv_cond_init(&pool->wake) < 0) {
        uv_mutex_destroy(&pool->lock);
        goto fail;
    }
    uv_async_init(g->loop, &pool->done_async, on_done);
    pool->done_async.data = pool;
    uv_unref((uv_handle_t *)&pool->done_async); /* bots keep nothing running */
    if (uv_thread_create(&pool->thread, worker, pool) < 0) {
        uv_close((uv_handle_t *)&pool->done_async, NULL);
        uv_cond_destroy(&pool->wake);
        uv_mutex_destroy(&pool->lock);
        goto fail;
    }
    pool->thread_started = true;
    pool->per_addr = bots_per_ip(g->cfg);
    g->bots = (game_bots){.make = make_bot, .room_for = room_for, .ctx = pool};
    return 0;
fail:
    free(pool->cache.entries);
    free(pool->model);
    free(pool);
    return -1;
}

static void on_pool_closed(uv_handle_t *h) {
    bot_pool *pool = h->data;
    free(pool->cache.entries);
    free(pool->model);
    free(pool);
}

void bots_stop(game *g) {
    bot_pool *pool = g->bots.ctx;
    if (!pool) return;
    g->bots = (game_bots){0};
    uv_mutex_lock(&pool->lock);
    pool->quit = true;
    uv_cond_signal(&pool->wake);
    uv_mutex_unlock(&pool->lock);
    uv_thread_join(&pool->thread); /* after its current search, a few ms at most */
    uv_cond_destroy(&pool->wake);
    uv_mutex_destroy(&pool->lock);
    /* What the worker had or answered goes with its bot. Each bot's player
     * is let go (rooms gave up their seats already), and its timer's close
     * callback frees it without touching the pool. */
    while (!srv_list_empty(&pool->all)) {
        bot *b = srv_container(pool->all.next, bot, link);
        srv_list_remove(&b->link);
        srv_player *p = b->p;
        b->p = NULL;
        b->dismissed = true;
        if (p) lobby_player_gone(p);
        if (!b->closing) {
            b->closing = true;
            uv_close((uv_handle_t *)&b->timer, on_bot_closed);
        }
    }
    lane *l, *ltmp;
    HASH_ITER(hh, pool->lanes, l, ltmp) {
        HASH_DEL(pool->lanes, l);
        free(l);
    }
    bot_addr *a, *atmp;
    HASH_ITER(hh, pool->addrs, a, atmp) {
        HASH_DEL(pool->addrs, a);
        free(a);
    }
    uv_close((uv_handle_t *)&pool->done_async, on_pool_closed);
}

bot_stats bots_get_stats(const game *g) {
    const bot_pool *pool = g->bots.ctx;
    return pool ? pool->stats : (bot_stats){0};
}
