/* arena_pace.c - an arena's work spread over loop turns: race starts within a
 * turn's budget, the standings update sent to its entrants in slices. */
#include <stdlib.h>

#include "arena_host_internal.h"

/* Entrants an update reaches a turn however little budget is left, so that
 * an update ends within entrants / UPDATE_SLICE_MIN turns. */
#define UPDATE_SLICE_MIN 32
/* And at most: their lines are written after the turn's budget is counted
 * (a write to a socket each, ~10 us on loopback), so they are bounded too. */
#define UPDATE_SLICE_MAX 128

static uint64_t mono_ns(void) {
    return uv_hrtime();
}

uint64_t ah_turn_begin(void) {
    return mono_ns();
}

bool ah_turn_budget_left(uint64_t since_ns) {
    return mono_ns() - since_ns < TURN_BUDGET_NS;
}

void ah_update_free(arena_host *h) {
    free(h->update_shared);
    free(h->update_ids);
    h->update_shared = NULL;
    h->update_ids = NULL;
    h->update_n = h->update_next = 0;
}

bool ah_update_begin(arena_host *h, char *shared, size_t len) {
    assert(!h->update_shared);
    size_t n = HASH_COUNT(h->by_id);
    uint64_t *ids = n ? malloc(n * sizeof *ids) : NULL;
    if (n && !ids) {
        free(shared);
        return false;
    }
    size_t k = 0;
    for (arena_entry *e = h->by_id; e; e = e->hh.next)
        if (player_connected(e->player)) ids[k++] = e->id;
    assert(k <= n);
    h->update_shared = shared;
    h->update_len = len;
    h->update_ids = ids;
    h->update_n = k;
    h->update_next = 0;
    return true;
}

bool ah_update_step(arena_host *h, uint64_t since_ns) {
    if (!h->update_shared) return false;
    size_t sent = 0;
    while (h->update_next < h->update_n && sent < UPDATE_SLICE_MAX &&
           (sent < UPDATE_SLICE_MIN || ah_turn_budget_left(since_ns))) {
        /* Who left or went away since the update began gets none. */
        srv_player *p = ah_entrant_player(h, h->update_ids[h->update_next++]);
        if (p && player_connected(p))
            ah_send_arena(h, p, h->update_shared, h->update_len);
        sent++;
    }
    if (h->update_next < h->update_n) return true;
    ah_update_free(h);
    return false;
}

int64_t ah_update_pace(arena_host *h, int64_t now, int64_t next, uint64_t turn0) {
    /* The next slice a turn later (after I/O), as pairing's next start. */
    if (h->update_shared)
        return ah_update_step(h, turn0) && now + 1 < next ? now + 1 : next;
    uint64_t rev = arena_revision(h->a);
    if (rev == h->sent_revision) return next;
    if (now - h->sent_ms < UPDATE_MS)
        return h->sent_ms + UPDATE_MS < next ? h->sent_ms + UPDATE_MS : next;
    size_t len;
    char *shared = ah_shared_line(h, ARENA_TOP, &len);
    if (!shared || !ah_update_begin(h, shared, len)) return next; /* at the next run */
    h->sent_revision = rev;
    h->sent_ms = now;
    return ah_update_step(h, turn0) && now + 1 < next ? now + 1 : next;
}
