/* metrics.c - the metrics registry: counters and the layers' gauges in the Prometheus
 * text format (0.0.4). */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics_out {
    char *data;
    size_t len, cap;
    bool failed;
};

void metrics_one(metrics_out *o, const char *name, const char *type, const char *help,
                 uint64_t value) {
    metrics_family(o, name, type, help);
    metrics_put(o, "%s %llu\n", name, (unsigned long long)value);
}

void metrics_put(metrics_out *o, const char *fmt, ...) {
    if (o->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->data + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = true;
            return;
        }
        if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (size_t)n + 1;
        char *grown = realloc(o->data, cap);
        if (!grown) {
            o->failed = true;
            return;
        }
        o->data = grown;
        o->cap = cap;
    }
}

void metrics_family(metrics_out *o, const char *name, const char *type,
                    const char *help) {
    metrics_put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_init(metrics_registry *reg, const srv_metrics *counters) {
    memset(reg, 0, sizeof *reg);
    reg->counters = counters;
}

int metrics_register(metrics_registry *reg, metrics_gauges_fn fn, void *ctx) {
    if (reg->nsections >= METRICS_SECTIONS) return -1;
    reg->sections[reg->nsections].fn = fn;
    reg->sections[reg->nsections].ctx = ctx;
    reg->nsections++;
    return 0;
}

/* The counters with one sample and no labels, in the order they are written. */
static const struct plain_counter {
    const char *name, *help;
    size_t offset; /* of a uint64_t in srv_metrics */
} plain_counters[] = {
    {"race2048_games_started_total", "Games started (races and solo).",
     offsetof(srv_metrics, games_started)},
    {"race2048_moves_total", "Moves that changed a board.", offsetof(srv_metrics, moves)},
    {"race2048_slow_consumers_total",
     "Connections closed because their output queue passed --max-output.",
     offsetof(srv_metrics, slow_consumers)},
    {"race2048_connections_total", "Connections accepted.",
     offsetof(srv_metrics, connections)},
    {"race2048_http_requests_total", "HTTP requests answered.",
     offsetof(srv_metrics, http_requests)},
    {"race2048_websocket_upgrades_total", "WebSocket connections opened.",
     offsetof(srv_metrics, ws_upgrades)},
    {"race2048_received_bytes_total", "Bytes read from clients.",
     offsetof(srv_metrics, bytes_in)},
    {"race2048_sent_bytes_total", "Bytes written to clients.",
     offsetof(srv_metrics, bytes_out)},
};

static void write_counters(metrics_out *o, const srv_metrics *m) {
    for (size_t i = 0; i < sizeof plain_counters / sizeof plain_counters[0]; i++) {
        const struct plain_counter *c = &plain_counters[i];
        uint64_t v;
        memcpy(&v, (const char *)m + c->offset, sizeof v);
        metrics_family(o, c->name, "counter", c->help);
        metrics_put(o, "%s %llu\n", c->name, (unsigned long long)v);
    }
    metrics_family(o, "race2048_games_finished_total", "counter",
                   "Games finished, by end reason.");
    static const char *reasons[] = {"target", "all_over", "time", "forfeit"};
    for (int i = 0; i < 4; i++)
        metrics_put(o, "race2048_games_finished_total{reason=\"%s\"} %llu\n", reasons[i],
                    (unsigned long long)m->games_finished[i]);
    metrics_family(o, "race2048_errors_total", "counter",
                   "Error messages sent, by code.");
    for (int i = 1; i < SRV_METRICS_ERRORS; i++) {
        const char *name = proto_err_code((proto_err)i);
        if (strcmp(name, "unknown") == 0) continue; /* past the last code */
        metrics_put(o, "race2048_errors_total{code=\"%s\"} %llu\n", name,
                    (unsigned long long)m->errors[i]);
    }
    metrics_family(o, "race2048_text_screens_total", "counter",
                   "Text spectators' screens sent: rendered for them, or shared (the "
                   "rendering of another spectator with the same screen shape).");
    metrics_put(o,
                "race2048_text_screens_total{how=\"rendered\"} %llu\n"
                "race2048_text_screens_total{how=\"shared\"} %llu\n",
                (unsigned long long)m->text_screens_rendered,
                (unsigned long long)m->text_screens_shared);
    metrics_family(o, "race2048_uptime_seconds", "gauge",
                   "Seconds since the server started.");
    metrics_put(o, "race2048_uptime_seconds %.3f\n",
                (double)(uv_hrtime() - m->started_ns) / 1e9);
}

static srv_buf *render(metrics_registry *reg) {
    metrics_out o = {.data = malloc(4096), .cap = 4096};
    if (!o.data) return NULL;
    o.data[0] = '\0';
    write_counters(&o, reg->counters);
    for (int i = 0; i < reg->nsections; i++)
        reg->sections[i].fn(&o, reg->sections[i].ctx);
    if (o.failed) {
        free(o.data);
        return NULL;
    }
    return srv_buf_take(o.data, o.len);
}

srv_buf *metrics_render(metrics_registry *reg, uint64_t turn) {
    if (reg->cache && reg->cache_turn == turn) return srv_buf_ref(reg->cache);
    metrics_free(reg);
    srv_buf *b = render(reg);
    if (!b) return NULL;
    reg->cache = srv_buf_ref(b);
    reg->cache_turn = turn;
    return b;
}

void metrics_free(metrics_registry *reg) {
    if (reg->cache) srv_buf_unref(reg->cache);
    reg->cache = NULL;
}
