/* game.c - the game's state, its clock, and players' messages on their way to their
 * sinks. */
#include "game.h"

#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "journal.h"
#include "metrics.h"
#include "room.h"

/* How soon a timer deferred by game_defer_until_io runs again. */
#define DEFER_MS 5

void game_init(game *g, uv_loop_t *loop, const srv_config *cfg, srv_metrics *metrics,
               eng_tables *tables) {
    memset(g, 0, sizeof *g);
    g->loop = loop;
    g->cfg = cfg;
    g->metrics = metrics;
    g->tables = tables;
    g->next_id = 1;
    srv_list_init(&g->players);
    srv_list_init(&g->rooms);
    srv_list_init(&g->waiting_rooms);
    srv_list_init(&g->running_rooms);
}

bool game_init_accounts(game *g) {
    if (g->accounts_ready) return true;
    uint64_t seed = 0;
    if (srv_random(&seed, sizeof seed) < 0) seed = 0x2048; /* only the index's levels */
    g->accounts_ready = acct_init(&g->accounts, seed) == ACCT_OK;
    if (g->accounts_ready) daily_init(&g->daily, seed);
    /* Test-only (protocol/README.md): moves the daily challenge's clock by whole
     * days, so that a test can see a day end by restarting the server. */
    const char *offset = getenv("RACE2048_TEST_DAY_OFFSET");
    if (offset) g->daily_offset_ms = strtoll(offset, NULL, 10) * 86400000LL;
    return g->accounts_ready;
}

int64_t game_daily_now_ms(const game *g) {
    return journal_wall_ms() + g->daily_offset_ms;
}

void game_daily_entry(game *g, int32_t day, int size, const acct_account *a,
                      const daily_result *r) {
    journal_daily_entry(g->journal, day, size, a, r);
    if (g->daily_changed) g->daily_changed(g->account_changed_ctx, day, size, a, r);
}

void game_free(game *g) {
    game_rooms_changed(g); /* frees the cached `rooms` reply */
    if (g->accounts_ready) {
        daily_free(&g->daily);
        acct_free(&g->accounts);
    }
    g->accounts_ready = false;
}

eng_seed game_next_seed(game *g) {
    return srv_seed_make(g->cfg->has_seed, g->cfg->seed, g->seeds_made++);
}

bool game_defer_until_io(game *g, uv_timer_t *t, uv_timer_cb cb) {
    if (!g->clock.paused || !g->clock.paused(g->clock.ctx)) return false;
    if (t) uv_timer_start(t, cb, DEFER_MS, 0);
    return true;
}

void game_write_metrics(metrics_out *o, void *ctx) {
    const game *g = ctx;
    unsigned waiting = 0, running = 0, solo = 0;
    for (const srv_link *l = g->rooms.next; l != &g->rooms; l = l->next) {
        const room *r = srv_container(l, room, link);
        if (r->solo && r->state == ROOM_RUNNING)
            solo++;
        else if (!r->solo && r->state == ROOM_WAITING)
            waiting++;
        else if (!r->solo && r->state == ROOM_RUNNING)
            running++;
    }
    metrics_family(o, "race2048_rooms", "gauge", "Race rooms by state.");
    metrics_put(
        o, "race2048_rooms{state=\"waiting\"} %u\nrace2048_rooms{state=\"running\"} %u\n",
        waiting, running);
    metrics_family(o, "race2048_solo_games", "gauge", "Solo games being played.");
    metrics_put(o, "race2048_solo_games %u\n", solo);
}

/* -------------------------------------------------------------- sending --- */

void player_dismiss(srv_player *p, sink_close_reason why) {
    sink dest = p->sink;
    p->sink = (sink){0};
    if (dest.ops) dest.ops->close(dest.dest, why);
    srv_player_release(p);
}

void srv_send(srv_player *p, const srv_msg *m) {
    /* A spectator first gets the broadcasts still queued for it. */
    if (p->watching) fanout_catch_up(p);
    if (p->sink.ops) p->sink.ops->deliver(p->sink.dest, m);
}

void srv_send_line(srv_player *p, srv_msg_type type, char *line, size_t len) {
    srv_msg m = {.type = type, .json = srv_buf_take(line, len)};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}

void srv_send_error(srv_player *p, proto_err code, const char *message) {
    if (p->sink.ops) srv_metrics_error(p->game->metrics, code);
    size_t len;
    char *line = proto_enc_error(code, message, &len);
    srv_msg m = {.type = SRV_MSG_ERROR,
                 .json = srv_buf_take(line, len),
                 .error = code,
                 .text = message};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}
