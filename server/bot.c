/* bot.c - server-run bots: players whose sink is the AI, thinking on a worker thread. */
#include "bot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "level.h"
#include "lobby.h"
#include "room.h"

/* The worker's transposition table: 2^16 entries, 1 MiB. */
#define CACHE_ENTRIES (1u << 16)
/* How soon a bot held back (spectators behind, a paused process) looks again. */
#define RETRY_MS 50

typedef struct bot bot;

typedef struct bot_pool {
    game *g;
    ai_model *model;
    ai_cache cache; /* the worker's */
    uv_thread_t thread;
    bool thread_started;
    uv_mutex_t lock; /* guards todo, done and quit */
    uv_cond_t wake;
    bot *todo, *todo_tail; /* boards for the worker, oldest first */
    bot *done;             /* answers for the loop */
    bool quit;
    uv_async_t done_async; /* its close callback frees the pool */
    srv_link all;          /* every bot not yet freed */
    bot_stats stats;
} bot_pool;

struct bot {
    srv_link link; /* in pool->all */
    bot_pool *pool;
    srv_player *p; /* NULL once the game has let it go */
    const ai_level *level;
    uv_timer_t timer; /* the pace: the next move is thought of when it fires */
    bot *next;        /* in todo or done, while `out` */
    /* Owned by the worker while `out`: */
    eng_board board;
    uint32_t rng;
    int dir;
    uint64_t us;
    bool out;       /* a search is on its way (todo, worker or done) */
    bool closing;   /* its timer is closing: freed in the callback */
    bool dismissed; /* the game let go of it */
};

/* ------------------------------------------------------------ the worker --- */

static void worker(void *arg) {
    bot_pool *pool = arg;
    /* The tables take a while to fill: here, not on the loop at start-up. */
    ai_model_init(pool->model);
    uv_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->todo && !pool->quit)
            uv_cond_wait(&pool->wake, &pool->lock);
        if (pool->quit) break;
        bot *b = pool->todo;
        pool->todo = b->next;
        if (!pool->todo) pool->todo_tail = NULL;
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

static void on_pace(uv_timer_t *t);

/* A move may be due: arms the pace timer unless one is armed or a search is out. */
static void consider(bot *b, uint64_t delay_ms) {
    if (b->dismissed || b->out || uv_is_active((uv_handle_t *)&b->timer)) return;
    if (!movable_seat(b)) return;
    uv_timer_start(&b->timer, on_pace, delay_ms, 0);
}

static uint64_t pace_ms(const bot *b) {
    return (uint64_t)(1000.0 / b->level->moves_per_s);
}

static void on_pace(uv_timer_t *t) {
    bot *b = t->data;
    bot_pool *pool = b->pool;
    if (game_defer_until_io(pool->g, t, on_pace)) return;
    room_seat *seat = movable_seat(b);
    if (!seat) return;
    /* A room whose spectators are behind holds its racers: bots too. */
    if (fanout_holds(b->p)) {
        uv_timer_start(t, on_pace, RETRY_MS, 0);
        return;
    }
    b->board = seat->game.board;
    b->out = true;
    b->next = NULL;
    uv_mutex_lock(&pool->lock);
    if (pool->todo_tail)
        pool->todo_tail->next = b;
    else
        pool->todo = b;
    pool->todo_tail = b;
    uv_cond_signal(&pool->wake);
    uv_mutex_unlock(&pool->lock);
}

/* The worker's answer for b. */
static void play(bot *b) {
    bot_pool *pool = b->pool;
    pool->stats.searches++;
    pool->stats.search_us += b->us;
    if (b->dismissed) {
        bot_free_when_idle(b);
        return;
    }
    room_seat *seat = movable_seat(b);
    /* Its race went on without it meanwhile (ended, a rematch): think again. */
    if (!seat || memcmp(&seat->game.board, &b->board, sizeof b->board) != 0) {
        consider(b, 0);
        return;
    }
    if (b->dir < 0) return; /* no move changes the board: the game is over for it */
    proto_request req = {.type = PROTO_REQ_MOVE, .dir = (eng_dir)b->dir};
    pool->stats.moves++;
    lobby_request(b->p, &req); /* its `state` comes back through bot_deliver */
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
        play(b);
    }
}

/* ------------------------------------------------------------- its sink --- */

static void bot_deliver(void *dest, const srv_msg *m) {
    bot *b = dest;
    switch (m->type) {
    case SRV_MSG_START: /* its race began, or a rematch did */
        consider(b, pace_ms(b));
        break;
    case SRV_MSG_STATE: /* its own move was applied: the next one is due */
        if (b->p && m->subject == b->p->id) consider(b, pace_ms(b));
        break;
    default:
        break; /* it needs nothing else: it reads its board from its seat */
    }
}

static void bot_close(void *dest, sink_close_reason why) {
    bot *b = dest;
    (void)why;
    b->dismissed = true;
    b->p = NULL;
    b->pool->stats.live--;
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
                                      .game_start_wait = bot_game_start_wait};

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

static srv_player *make_bot(void *ctx, int level) {
    bot_pool *pool = ctx;
    game *g = pool->g;
    if (g->cfg.max_bots && pool->stats.live >= g->cfg.max_bots) return NULL;
    bot *b = bot_new(pool, level);
    if (!b) return NULL;
    srv_player *p = lobby_player_new(g, (sink){.ops = &bot_sink_ops, .dest = b});
    if (!p) {
        b->dismissed = true;
        bot_free_when_idle(b);
        return NULL;
    }
    attach(b, p, level);
    snprintf(p->name, sizeof p->name, "bot-L%d-%llu", level,
             (unsigned long long)(p->id % 100000000u));
    return p;
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
    g->bots = (game_bots){.make = make_bot, .ctx = pool};
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
    uv_close((uv_handle_t *)&pool->done_async, on_pool_closed);
}

bot_stats bots_get_stats(const game *g) {
    const bot_pool *pool = g->bots.ctx;
    return pool ? pool->stats : (bot_stats){0};
}
