/* render_arena.c - text mode's arena screens: an arena's standings with the time left,
 * and the list. */
#include "render.h"

#include <stdio.h>

/* "12 min", "40 s": a duration for people. */
static void say_left(char *out, size_t cap, int64_t ms) {
    if (ms < 0) ms = 0;
    if (ms >= 120000)
        snprintf(out, cap, "%lld min", (long long)(ms / 60000));
    else
        snprintf(out, cap, "%lld s", (long long)((ms + 999) / 1000));
}

static void when(char *out, size_t cap, const proto_arena_info *a, int64_t now_ms) {
    char left[32];
    if (a->status == PROTO_ARENA_FINISHED || now_ms >= a->ends_ms) {
        snprintf(out, cap, "finished");
    } else if (now_ms < a->starts_ms) {
        say_left(left, sizeof left, a->starts_ms - now_ms);
        snprintf(out, cap, "starts in %s", left);
    } else {
        say_left(left, sizeof left, a->ends_ms - now_ms);
        snprintf(out, cap, "%s left", left);
    }
}

int proto_render_arena(proto_buf *b, const proto_arena_info *a,
                       const proto_arena_row *you, int64_t now_ms) {
    char state[64];
    when(state, sizeof state, a, now_ms);
    proto_render_linef(b, "Arena %s \"%s\": %s", a->code, a->name, state);
    proto_render_linef(b, "  races of %d, %dx%d to %u, %llu entrants", a->players,
                       a->size, a->size, a->target, (unsigned long long)a->entrants);
    if (a->nrows == 0)
        proto_render_linef(b, "  nobody yet: type arena %s to enter", a->code);
    if (a->nrows > 0)
        proto_render_linef(b, "       %-16s %6s %5s %4s %6s", "name", "points", "races",
                           "wins", "streak");
    for (int i = 0; i < a->nrows; i++) {
        const proto_arena_row *r = &a->rows[i];
        proto_render_linef(b, "  %3d. %-16s %6lld %5d %4d %6d", r->rank, r->name,
                           (long long)r->points, r->races, r->wins, r->streak);
    }
    if (you)
        proto_render_linef(b, "  You: rank %d, %lld points, %d races, %s", you->rank,
                           (long long)you->points, you->races,
                           you->waiting ? "waiting for your next race" : "not waiting");
    return b->failed ? -1 : 0;
}

int proto_render_arenas(proto_buf *b, const proto_arena_info *a, int n, int64_t now_ms) {
    proto_render_linef(b, "Arenas (type arena CODE to enter):");
    if (n == 0) proto_render_linef(b, "  none: arena new MINUTES [PLAYERS] opens one");
    for (int i = 0; i < n; i++) {
        char state[64];
        when(state, sizeof state, &a[i], now_ms);
        proto_render_linef(b, "  %-8s %-20.20s %-16s %llu in", a[i].code, a[i].name,
                           state, (unsigned long long)a[i].entrants);
    }
    return b->failed ? -1 : 0;
}
