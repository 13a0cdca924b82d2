/* arena_share.c - arenas as a cluster sees them: the list's rows, where an arena runs,
 * another node's arenas adopted at a takeover, and --arena-every's claim hook. */
#include "arena_host.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "journal.h"
#include "record.h"
#include "arena_host_internal.h"

int arena_host_infos(game *g, proto_arena_info *out, int max) {
    int n = 0;
    if (!g->arenas) return 0;
    int64_t now = ah_now_ms();
    for (srv_link *l = g->arenas->all.next; l != &g->arenas->all && n < max; l = l->next)
        out[n++] = ah_info_of(srv_container(l, arena_host, link), now);
    return n;
}

bool arena_host_runs(game *g, const char *code, bool *over) {
    arena_host *h = ah_find(g, code);
    if (!h) return false;
    if (over) *over = h->finished || ah_now_ms() >= arena_get_config(h->a)->ends_ms;
    return true;
}

void arena_host_on_every_claim(game *g,
                               void (*claim)(void *ctx, game *g, int64_t starts_ms),
                               void *ctx) {
    struct arena_hosts *hs = ah_hosts_of(g);
    if (!hs) return; /* out of memory: arena_host_schedule finds none either */
    hs->every_claim = claim;
    hs->every_claim_ctx = ctx;
}

bool arena_host_adopt(game *g, const char *line, size_t len, const char *events,
                      size_t events_len) {
    if (!ah_hosts_of(g)) return false;
    proto_arena_record rec;
    if (proto_dec_arena_record(line, len, &rec) < 0) {
        srv_log(SRV_LOG_WARN, "takeover: an arena record could not be read");
        return false;
    }
    int64_t now = ah_now_ms();
    bool adopted = false;
    if (ah_find(g, rec.code)) {
        srv_log(SRV_LOG_WARN, "takeover: arena %s runs here already", rec.code);
    } else if (rec.finished && rec.finished_ms + HOUR_MS <= now) {
        /* freed by now where it ran: nothing to keep */
    } else if (!ah_restore_record(g, &rec, events, events_len, now)) {
        srv_log(SRV_LOG_WARN, "takeover: arena %s could not be restored", rec.code);
    } else {
        /* Its state as its node last had it (the record and the events after
         * it) is this node's record now, before its races are rebuilt into
         * this journal: one whole `arena` record, so that this node's events
         * follow a base of its own. */
        ah_record(ah_find(g, rec.code));
        srv_log(SRV_LOG_INFO, "takeover: arena %s (%zu entrants) runs here now", rec.code,
                rec.count);
        adopted = true;
    }
    free(rec.entrants);
    free(rec.back);
    return adopted;
}

void arena_host_adopted(game *g, const char *code) {
    arena_host *h = ah_find(g, code);
    if (!h || h->finished || !arena_racing_count(h->a)) return;
    /* Its base record went on file at the adopt (arena_host_adopt): the races
     * that ended unrecorded where it ran follow it, as after a restart. */
    ah_abandon_unclaimed(h, ah_now_ms());
    ah_kick(h); /* its record and standings go out with its next turn */
}

void arena_host_give_up_all(game *g) {
    struct arena_hosts *hs = g->arenas;
    if (!hs) return;
    /* No room points at an arena any more (their races end unrecorded). */
    for (srv_link *l = g->rooms.next; l != &g->rooms; l = l->next)
        srv_container(l, room, link)->arena = NULL;
    size_t n = 0;
    while (!srv_list_empty(&hs->all)) {
        ah_host_free(srv_container(hs->all.next, arena_host, link));
        n++;
    }
    if (n) srv_log(SRV_LOG_WARN, "cluster: %zu arenas given up with the rooms", n);
}
