/* metrics.c - the server's counters in the Prometheus text format (0.0.4). */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "journal.h"
#include "room.h"

/* A growing text buffer; a failed allocation sticks and is reported once. */
typedef struct out {
    char *data;
    size_t len, cap;
    bool failed;
} out;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
put(out *o, const char *fmt, ...) {
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

static void family(out *o, const char *name, const char *type, const char *help) {
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static srv_buf *render(srv *s);

srv_buf *metrics_render(srv *s) {
    if (s->metrics_cache && s->metrics_cache_turn == s->turn)
        return srv_buf_ref(s->metrics_cache);
    metrics_free(s);
    srv_buf *b = render(s);
    if (!b) return NULL;
    s->metrics_cache = srv_buf_ref(b);
    s->metrics_cache_turn = s->turn;
    return b;
}

void metrics_free(srv *s) {
    if (s->metrics_cache) srv_buf_unref(s->metrics_cache);
    s->metrics_cache = NULL;
}

static srv_buf *render(srv *s) {
    out o = {.data = malloc(4096), .cap = 4096};
    if (!o.data) return NULL;
    o.data[0] = '\0';
    const srv_metrics *m = &s->metrics;

    unsigned by_mode[5] = {0}; /* detecting, json, text, http, web */
    for (srv_link *l = s->conns.next; l != &s->conns; l = l->next) {
        const conn *c = srv_container(l, conn, link);
        switch (c->mode) {
        case CONN_DETECT:
            by_mode[0]++;
            break;
        case CONN_JSON:
            by_mode[1]++;
            break;
        case CONN_TEXT:
            by_mode[2]++;
            break;
        case CONN_HTTP:
            by_mode[3]++;
            break;
        case CONN_WS:
            by_mode[4]++;
            break;
        }
    }
    static const char *mode_names[] = {"detecting", "json", "text", "http", "web"};
    family(&o, "race2048_connections", "gauge",
           "Open connections by mode (web: WebSocket players, http: plain HTTP).");
    for (int i = 0; i < 5; i++)
        put(&o, "race2048_connections{mode=\"%s\"} %u\n", mode_names[i], by_mode[i]);

    unsigned waiting = 0, running = 0, solo = 0;
    for (srv_link *l = s->rooms.next; l != &s->rooms; l = l->next) {
        const room *r = srv_container(l, room, link);
        if (r->solo && r->state == ROOM_RUNNING)
            solo++;
        else if (!r->solo && r->state == ROOM_WAITING)
            waiting++;
        else if (!r->solo && r->state == ROOM_RUNNING)
            running++;
    }
    family(&o, "race2048_rooms", "gauge", "Race rooms by state.");
    put(&o,
        "race2048_rooms{state=\"waiting\"} %u\nrace2048_rooms{state=\"running\"} %u\n",
        waiting, running);
    family(&o, "race2048_solo_games", "gauge", "Solo games being played.");
    put(&o, "race2048_solo_games %u\n", solo);

    family(&o, "race2048_games_started_total", "counter",
           "Games started (races and solo).");
    put(&o, "race2048_games_started_total %llu\n", (unsigned long long)m->games_started);
    family(&o, "race2048_games_finished_total", "counter",
           "Games finished, by end reason.");
    static const char *reasons[] = {"target", "all_over", "time", "forfeit"};
    for (int i = 0; i < 4; i++)
        put(&o, "race2048_games_finished_total{reason=\"%s\"} %llu\n", reasons[i],
            (unsigned long long)m->games_finished[i]);
    family(&o, "race2048_moves_total", "counter", "Moves that changed a board.");
    put(&o, "race2048_moves_total %llu\n", (unsigned long long)m->moves);
    family(&o, "race2048_errors_total", "counter", "Error messages sent, by code.");
    for (int i = 1; i < SRV_METRICS_ERRORS; i++) {
        const char *name = proto_err_code((proto_err)i);
        if (strcmp(name, "unknown") == 0) continue; /* past the last code */
        put(&o, "race2048_errors_total{code=\"%s\"} %llu\n", name,
            (unsigned long long)m->errors[i]);
    }
    family(&o, "race2048_slow_consumers_total", "counter",
           "Connections closed because their output queue passed --max-output.");
    put(&o, "race2048_slow_consumers_total %llu\n",
        (unsigned long long)m->slow_consumers);
    family(&o, "race2048_text_screens_total", "counter",
           "Text spectators' screens sent: rendered for them, or shared (the "
           "rendering of another spectator with the same screen shape).");
    put(&o,
        "race2048_text_screens_total{how=\"rendered\"} %llu\n"
        "race2048_text_screens_total{how=\"shared\"} %llu\n",
        (unsigned long long)m->text_screens_rendered,
        (unsigned long long)m->text_screens_shared);
    family(&o, "race2048_connections_total", "counter", "Connections accepted.");
    put(&o, "race2048_connections_total %llu\n", (unsigned long long)m->connections);
    family(&o, "race2048_http_requests_total", "counter", "HTTP requests answered.");
    put(&o, "race2048_http_requests_total %llu\n", (unsigned long long)m->http_requests);
    family(&o, "race2048_websocket_upgrades_total", "counter",
           "WebSocket connections opened.");
    put(&o, "race2048_websocket_upgrades_total %llu\n",
        (unsigned long long)m->ws_upgrades);
    family(&o, "race2048_received_bytes_total", "counter", "Bytes read from clients.");
    put(&o, "race2048_received_bytes_total %llu\n", (unsigned long long)m->bytes_in);
    family(&o, "race2048_sent_bytes_total", "counter", "Bytes written to clients.");
    put(&o, "race2048_sent_bytes_total %llu\n", (unsigned long long)m->bytes_out);
    journal_stats js = journal_get_stats(s->journal);
    family(&o, "race2048_journal_errors_total", "counter",
           "Journal writes, syncs or compactions that failed (retried).");
    put(&o, "race2048_journal_errors_total %llu\n", (unsigned long long)js.errors);
    family(&o, "race2048_journal_commits_total", "counter",
           "Group commits: one write and one fdatasync each.");
    put(&o, "race2048_journal_commits_total %llu\n", (unsigned long long)js.commits);
    family(&o, "race2048_journal_bytes_total", "counter", "Journal bytes written.");
    put(&o, "race2048_journal_bytes_total %llu\n", (unsigned long long)js.bytes);
    family(&o, "race2048_journal_compactions_total", "counter", "Journal compactions.");
    put(&o, "race2048_journal_compactions_total %llu\n",
        (unsigned long long)js.compactions);
    family(&o, "race2048_uptime_seconds", "gauge", "Seconds since the server started.");
    put(&o, "race2048_uptime_seconds %.3f\n",
        (double)(uv_hrtime() - m->started_ns) / 1e9);

    if (o.failed) {
        free(o.data);
        return NULL;
    }
    return srv_buf_take(o.data, o.len);
}
