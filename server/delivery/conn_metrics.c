/* conn_metrics.c - the open connections by mode, for /metrics. */
#include "conn_internal.h"
#include "metrics.h"

void conn_write_metrics(metrics_out *o, void *ctx) {
    const srv *s = ctx;
    static const char *const mode_names[] = {"detecting", "json", "text", "http", "web"};
    unsigned by_mode[5] = {0}; /* indexed by conn_mode */
    for (const srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        const conn *c = srv_container(l, conn, link);
        /* One waiting for its PROXY header is still being detected. */
        unsigned mode = c->mode == CONN_PROXY ? CONN_DETECT : c->mode;
        if (mode < 5) by_mode[mode]++;
    }
    metrics_family(
        o, "race2048_connections", "gauge",
        "Open connections by mode (web: WebSocket players, http: plain HTTP).");
    for (int i = 0; i < 5; i++)
        metrics_put(o, "race2048_connections{mode=\"%s\"} %u\n", mode_names[i],
                    by_mode[i]);
}
