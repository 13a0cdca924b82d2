/* metrics.h - the metrics registry: counters and the layers' gauges in the Prometheus
 * text format (0.0.4). */
#ifndef RACE2048_METRICS_H
#define RACE2048_METRICS_H

#include "base.h"

/* The text being written; a failed allocation sticks and fails the rendering. */
typedef struct metrics_out metrics_out;

/* Writes a family's HELP and TYPE lines. */
void metrics_family(metrics_out *o, const char *name, const char *type, const char *help);
/* Writes formatted text (a sample line). */
void metrics_put(metrics_out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A family of one unlabelled sample: HELP, TYPE and `name value`. */
void metrics_one(metrics_out *o, const char *name, const char *type, const char *help,
                 uint64_t value);

/* Counts a move in race2048_move_seconds: ns from its request's decoding to
 * its `state` handed to the room's players. No allocation; a few compares. */
void metrics_move_observe(srv_metrics *m, uint64_t ns);

/* A layer's gauges, written at scrape time: the registry calls down-facing
 * callbacks, so it includes nothing above itself. */
typedef void (*metrics_gauges_fn)(metrics_out *o, void *ctx);

#define METRICS_SECTIONS 8
typedef struct metrics_registry {
    const srv_metrics *counters;
    struct {
        metrics_gauges_fn fn;
        void *ctx;
    } sections[METRICS_SECTIONS];
    int nsections;
    /* Requests in one loop turn share one rendering: a client pipelining
     * `GET /metrics` costs one walk a turn, not one a request. */
    srv_buf *cache;
    uint64_t cache_turn;
    /* process_open_fds where the kernel cannot count them in one stat()
     * (Linux before 6.2): the count of /proc/self/fd, made at most once per
     * METRICS_FD_RECOUNT_S, as listing it costs per descriptor. */
    uint64_t open_fds;
    uint64_t open_fds_counted_ns; /* 0 = never */
} metrics_registry;

void metrics_init(metrics_registry *reg, const srv_metrics *counters);
/* Adds a section of gauges, written in the order registered, after the
 * counters. Returns 0, or -1 if METRICS_SECTIONS are taken. */
int metrics_register(metrics_registry *reg, metrics_gauges_fn fn, void *ctx);
/* The exposition for loop turn `turn`, as a buffer the caller must unref;
 * NULL if memory runs out. */
srv_buf *metrics_render(metrics_registry *reg, uint64_t turn);
/* Drops the rendering kept for the current turn (server exit). */
void metrics_free(metrics_registry *reg);

#endif
