/* srv.c - the process's state: set up, and its layers wired (the game's clock). */
#include "srv.h"

#include <string.h>

#include "cluster.h"
#include "conn.h"
#include "transport.h"

/* The game's clock (game.h) asks the loop turn machinery (conn.c), which
 * sits above the game: the game sees only these callbacks. */
static bool clock_paused(void *ctx) {
    return srv_defer_until_io(ctx, NULL, NULL);
}

static uint64_t clock_turn(void *ctx) {
    return ((const srv *)ctx)->turn;
}

bool srv_healthy(srv *s) {
    return !s->cluster || cluster_connected(s->cluster);
}

void srv_init(srv *s, uv_loop_t *loop, const srv_config *cfg, eng_tables *tables) {
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->loop = loop;
    loop->data = s;
    srv_list_init(&s->conns);
    srv_list_init(&s->flush_list);
    srv_list_init(&s->input_list);
    s->metrics.started_ns = uv_hrtime();
    game_init(&s->game, loop, cfg, &s->metrics, tables);
    s->game.clock = (game_clock){.paused = clock_paused, .turn = clock_turn, .ctx = s};
    metrics_init(&s->metrics_reg, &s->metrics);
    metrics_register(&s->metrics_reg, conn_write_metrics, s);
    metrics_register(&s->metrics_reg, game_write_metrics, &s->game);
    _Static_assert(CONN_NMODES <= SRV_MAX_TRANSPORTS, "srv.transports holds every mode");
    s->transports[CONN_DETECT] = &conn_detect_transport;
    s->transports[CONN_JSON] = &conn_json_transport;
    s->transports[CONN_PROXY] = &conn_proxy_transport;
}
