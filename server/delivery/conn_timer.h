/* conn_timer.h - each connection's one deadline, all kept on one server-wide timer. */
#ifndef RACE2048_CONN_TIMER_H
#define RACE2048_CONN_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct srv;

/* A connection has at most one deadline at a time (mode detection, a
 * refusal, a flush before closing, text-mode redraws). A libuv timer per
 * connection would cost 152 bytes of every idle connection; instead the
 * armed connections sit in one min-heap by deadline, behind one uv_timer_t.
 * Deadlines that fall due together run in the order they were set, as
 * libuv's own timers do. */
typedef void (*conn_timer_cb)(struct conn *c);

typedef struct conn_timer {
    uint64_t due;     /* loop time (ms) it fires */
    conn_timer_cb cb; /* NULL while not armed */
    uint32_t order;   /* when it was set (wrapping): ties run first-set first */
    uint32_t slot;    /* index + 1 in the heap, 0 = not in it */
} conn_timer;

/* The server's side: the heap and its timer. */
typedef struct conn_timers {
    struct conn **heap;
    uint32_t len, cap;
    uint32_t next_order;
    uint64_t armed_due; /* what the uv timer is set for, when it runs */
    uint8_t timer_ready;
} conn_timers;

/* Sets up the server's timer (call once, after the loop exists). */
void conn_timers_init(struct srv *s);
/* Gives the heap back (after the loop has closed every handle). */
void conn_timers_free(struct srv *s);
/* Arms c's deadline ms from now (replacing any), to run cb(c). Returns 0, or
 * -1 if no memory is left to hold it. */
int conn_timer_start(struct conn *c, conn_timer_cb cb, uint64_t ms);
/* Disarms c's deadline, if any. */
void conn_timer_stop(struct conn *c);
/* Is c's deadline armed? */
bool conn_timer_armed(const struct conn *c);
/* Is it armed to run cb? */
bool conn_timer_runs(const struct conn *c, conn_timer_cb cb);
/* The loop time it falls due, or 0 if it is not armed. */
uint64_t conn_timer_due(const struct conn *c);

#endif
