/* metrics.c - the metrics registry: counters and the layers' gauges in the Prometheus
 * text format (0.0.4). */
#include "metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byte_buf.h"

/* How often, at most, /proc/self/fd is listed to count descriptors (see
 * metrics_registry.open_fds). */
#define METRICS_FD_RECOUNT_S 10

/* The page being written: a byte_buf, and whether an append failed (the
 * page is then dropped whole rather than served cut short). */
struct metrics_out {
    byte_buf page;
    bool failed;
};

void metrics_one(metrics_out *o, const char *name, const char *type, const char *help,
                 uint64_t value) {
    metrics_family(o, name, type, help);
    metrics_put(o, "%s %llu\n", name, (unsigned long long)value);
}

void metrics_put(metrics_out *o, const char *fmt, ...) {
    if (o->failed) return;
    va_list ap;
    va_start(ap, fmt);
    if (byte_buf_vprintf(&o->page, fmt, ap) < 0) o->failed = true;
    va_end(ap);
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
    _Static_assert(sizeof m->games_finished / sizeof m->games_finished[0] ==
                       PROTO_END_REASONS,
                   "one games_finished counter per end reason");
    for (int i = 0; i < PROTO_END_REASONS; i++)
        metrics_put(o, "race2048_games_finished_total{reason=\"%s\"} %llu\n",
                    proto_end_reason_name((proto_end_reason)i),
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

/* race2048_move_seconds' upper bounds (le) in ns: a move is tens of
 * microseconds when all is well, milliseconds when the loop is loaded. The
 * last bucket, past them, is +Inf. */
static const uint64_t move_bounds_ns[SRV_MOVE_BUCKETS - 1] = {
    10000,   25000,   50000,    100000,   250000,   500000,   1000000,
    2500000, 5000000, 10000000, 25000000, 50000000, 100000000};

void metrics_move_observe(srv_metrics *m, uint64_t ns) {
    int i = 0;
    while (i < SRV_MOVE_BUCKETS - 1 && ns > move_bounds_ns[i])
        i++;
    m->move_buckets[i]++;
    m->move_sum_ns += ns;
}

static void write_move_histogram(metrics_out *o, const srv_metrics *m) {
    metrics_family(o, "race2048_move_seconds", "histogram",
                   "Moves of this node's clients that changed a board, by seconds from "
                   "the request read to its state handed to the room's players.");
    uint64_t count = 0;
    for (int i = 0; i < SRV_MOVE_BUCKETS; i++) {
        count += m->move_buckets[i];
        if (i < SRV_MOVE_BUCKETS - 1)
            metrics_put(o, "race2048_move_seconds_bucket{le=\"%g\"} %llu\n",
                        (double)move_bounds_ns[i] / 1e9, (unsigned long long)count);
        else
            metrics_put(o, "race2048_move_seconds_bucket{le=\"+Inf\"} %llu\n",
                        (unsigned long long)count);
    }
    metrics_put(o, "race2048_move_seconds_sum %.9f\nrace2048_move_seconds_count %llu\n",
                (double)m->move_sum_ns / 1e9, (unsigned long long)count);
}

/* Open descriptors: Linux 6.2 and later give their count as the size of
 * /proc/self/fd (one stat, whatever the count); before, the directory is
 * listed, at most once per METRICS_FD_RECOUNT_S. Returns -1 if unknown. */
static long long open_fds(metrics_registry *reg) {
    struct stat st;
    if (stat("/proc/self/fd", &st) == 0 && st.st_size > 0) return (long long)st.st_size;
    uint64_t now = uv_hrtime();
    if (reg->open_fds_counted_ns &&
        now - reg->open_fds_counted_ns < (uint64_t)METRICS_FD_RECOUNT_S * 1000000000u)
        return (long long)reg->open_fds;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    uint64_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    reg->open_fds = n ? n - 1 : 0; /* the listing's own descriptor */
    reg->open_fds_counted_ns = now;
    return (long long)reg->open_fds;
}

/* The standard process metrics (those of the Prometheus client libraries),
 * for dashboards that expect them: a getrusage, a small /proc read and a
 * stat per rendering. */
static void write_process(metrics_out *o, metrics_registry *reg) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        metrics_family(o, "process_cpu_seconds_total", "counter",
                       "Total user and system CPU time spent in seconds.");
        metrics_put(o, "process_cpu_seconds_total %.6f\n",
                    (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                        (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    }
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char text[128];
        ssize_t n = read(fd, text, sizeof text - 1);
        close(fd);
        unsigned long long size, resident;
        long page = sysconf(_SC_PAGESIZE);
        if (n > 0 && page > 0) {
            text[n] = '\0';
            if (sscanf(text, "%llu %llu", &size, &resident) == 2) {
                metrics_family(o, "process_virtual_memory_bytes", "gauge",
                               "Virtual memory size in bytes.");
                metrics_put(o, "process_virtual_memory_bytes %llu\n",
                            size * (unsigned long long)page);
                metrics_family(o, "process_resident_memory_bytes", "gauge",
                               "Resident memory size in bytes.");
                metrics_put(o, "process_resident_memory_bytes %llu\n",
                            resident * (unsigned long long)page);
            }
        }
    }
    long long fds = open_fds(reg);
    if (fds >= 0) {
        metrics_family(o, "process_open_fds", "gauge",
                       "Number of open file descriptors.");
        metrics_put(o, "process_open_fds %lld\n", fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        metrics_family(o, "process_max_fds", "gauge",
                       "Maximum number of open file descriptors.");
        metrics_put(o, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
    /* The start is the uptime's origin, on the wall clock. */
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) == 0) {
        double up = (double)(uv_hrtime() - reg->counters->started_ns) / 1e9;
        metrics_family(o, "process_start_time_seconds", "gauge",
                       "Start time of the process since unix epoch in seconds.");
        metrics_put(o, "process_start_time_seconds %.3f\n",
                    (double)now.tv_sec + (double)now.tv_nsec / 1e9 - up);
    }
}

static srv_buf *render(metrics_registry *reg) {
    metrics_out o = {0};
    if (byte_buf_reserve(&o.page, 4096) < 0) return NULL;
    metrics_family(&o, "race2048_build_info", "gauge",
                   "Always 1: the server's version and the protocol version it speaks.");
    metrics_put(&o, "race2048_build_info{version=\"%s\",proto=\"%d\"} 1\n",
                RACE2048_VERSION, PROTO_VERSION);
    write_counters(&o, reg->counters);
    write_move_histogram(&o, reg->counters);
    write_process(&o, reg);
    for (int i = 0; i < reg->nsections; i++)
        reg->sections[i].fn(&o, reg->sections[i].ctx);
    if (o.failed) {
        byte_buf_free(&o.page);
        return NULL;
    }
    return srv_buf_take(o.page.data, o.page.len);
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
