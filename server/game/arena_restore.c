/* arena_restore.c - arenas at start-up: rebuilt from their records, their running
 * races relinked to the rooms recovery rebuilds, their waiting entrants put back in
 * the pool when they come back. */
#include "arena_host.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hash.h"
#include "journal.h"
#include "lobby_internal.h"
#include "room_internal.h"
#include "arena_host_internal.h"

/* ------------------------------------------------------------ start-up --- */

/* The entrants to hold for their return, as the events change them. */
typedef struct back_set {
    proto_arena_rec_back *rows;
    size_t n, cap;
} back_set;

static void back_remove(back_set *b, uint64_t id) {
    for (size_t k = 0; k < b->n; k++)
        if (b->rows[k].id == id) {
            b->rows[k] = b->rows[--b->n];
            return;
        }
}

static void back_put(back_set *b, const proto_arena_rec_back *row) {
    back_remove(b, row->id);
    if (!row->token_hash[0] && !row->account[0]) return; /* no way to come back */
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        proto_arena_rec_back *more = realloc(b->rows, cap * sizeof *more);
        if (!more) return; /* that one is not held: it joins again */
        b->rows = more;
        b->cap = cap;
    }
    b->rows[b->n++] = *row;
}

/* The events after the arena's record, replayed in order through the calls
 * that made them (arena.h: each is exact on the state they were made on). */
static void replay(arena *a, back_set *back, const char *data, size_t len,
                   const char *code) {
    size_t bad = 0;
    for (size_t at = 0; at < len;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        proto_arena_event e;
        if (proto_dec_arena_event(line, n, &e) < 0 || strcmp(e.code, code)) {
            bad++;
            continue;
        }
        uint64_t id = e.back.id;
        arena_place places[ARENA_MAX_PLAYERS];
        int rc = 0;
        switch (e.kind) {
        case PROTO_ARENA_EV_IN:
            rc = arena_join(a, id, e.name, e.at_ms);
            back_put(back, &e.back);
            break;
        case PROTO_ARENA_EV_OUT:
            rc = arena_away(a, id);
            back_remove(back, id);
            break;
        case PROTO_ARENA_EV_FORM:
            rc = arena_form_race(a, e.race, e.ids, (size_t)e.n);
            break;
        case PROTO_ARENA_EV_RACE:
            for (int i = 0; i < e.n; i++)
                places[i] = (arena_place){
                    .id = e.ids[i], .place = e.places[i], .left = e.left[i]};
            rc = arena_apply_race(a, e.race, e.players, places, (size_t)e.n, e.at_ms);
            break;
        case PROTO_ARENA_EV_ABANDON:
            rc = arena_abandon_race(a, e.race, e.ids, (size_t)e.n, e.at_ms);
            break;
        }
        if (rc < 0) bad++;
    }
    if (bad)
        srv_log(SRV_LOG_WARN, "arena %s: %zu of its events could not be replayed", code,
                bad);
}

/* One arena from its record and the events after it. Its races stay formed:
 * the rooms recovery rebuilds claim theirs (arena_host_relink), and
 * arena_host_restored gives up the rest. Every other entrant is away until it
 * comes back or joins again (nobody is connected after a restart). False if
 * the record is inconsistent. */
static bool restore_one(game *g, const proto_arena_record *rec, const char *events,
                        size_t events_len, int64_t now) {
    arena_snapshot snap = {.config = {.players = rec->players,
                                      .starts_ms = rec->starts_ms,
                                      .ends_ms = rec->ends_ms,
                                      .pair_wait_ms = rec->pair_wait_ms,
                                      .bots_wait_ms = rec->bots_wait_ms,
                                      .max_entrants = (size_t)rec->max_entrants},
                           .next_race = rec->next_race,
                           .count = rec->count};
    snap.entrants = rec->count ? calloc(rec->count, sizeof *snap.entrants) : NULL;
    if (rec->count && !snap.entrants) return false;
    for (size_t i = 0; i < rec->count; i++) {
        const proto_arena_rec_entrant *e = &rec->entrants[i];
        snap.entrants[i] = (arena_snapshot_entrant){.id = e->id,
                                                    .points = e->points,
                                                    .races = e->races,
                                                    .wins = e->wins,
                                                    .streak = e->streak,
                                                    .state = (arena_state)e->state,
                                                    .sent_away = e->sent_away,
                                                    .since_ms = e->since_ms,
                                                    .race = e->race,
                                                    .race_entrants = e->race_entrants};
        snprintf(snap.entrants[i].name, sizeof snap.entrants[i].name, "%s", e->name);
    }
    arena *a = arena_restore(&snap);
    free(snap.entrants);
    if (!a) return false;
    back_set back = {0};
    for (size_t i = 0; i < rec->nback; i++)
        back_put(&back, &rec->back[i]);
    replay(a, &back, events, events_len, rec->code);
    arena_snapshot *now_snap = arena_snapshot_new(a);
    if (!now_snap) {
        arena_free(a);
        free(back.rows);
        return false;
    }
    for (size_t i = 0; i < now_snap->count; i++) {
        const arena_snapshot_entrant *e = &now_snap->entrants[i];
        if (e->state != ARENA_RACING) arena_away(a, e->id);
        /* Ids handed out from now on are none of the entrants' (a single
         * server: a cluster hands out blocks). */
        if (!g->id_limit && e->id >= g->next_id) g->next_id = e->id + 1;
    }
    arena_snapshot_free(now_snap);
    proto_settings st = {
        .players = rec->players, .size = rec->size, .target = rec->target, .rated = true};
    arena_host *h = ah_host_add(g, rec->name, &st, rec->code, a);
    if (!h || !ah_groups_room(h, arena_entrant_count(a))) {
        if (h) ah_host_free(h);
        free(back.rows);
        return false;
    }
    /* Who waited comes back by its token or its account (arena_host_resume,
     * arena_host_login). */
    if (!rec->finished) {
        h->held = back.rows;
        h->nheld = back.n;
    } else {
        free(back.rows);
    }
    if (rec->finished) {
        h->finished = true;
        h->finished_ms = rec->finished_ms;
        g->arenas->open--;
        h->final_shared = ah_shared_line(h, ARENA_FINAL_ROWS, &h->final_len);
        int64_t left = rec->finished_ms + HOUR_MS - now;
        uv_timer_start(&h->timer, ah_on_timer, left > 0 ? (uint64_t)left : 0, 0);
    } else {
        ah_kick(h); /* an arena whose end passed while down ends now */
    }
    return true;
}

bool ah_restore_record(game *g, const proto_arena_record *rec, const char *events,
                       size_t events_len, int64_t now) {
    return restore_one(g, rec, events, events_len, now);
}

void arena_host_restore(game *g) {
    size_t n = journal_arena_count(g->journal);
    if (!n || !ah_hosts_of(g)) return;
    int64_t now = ah_now_ms();
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *line = journal_arena_line(g->journal, i, &len);
        proto_arena_record rec;
        if (proto_dec_arena_record(line, len, &rec) < 0) {
            srv_log(SRV_LOG_WARN, "journal: an arena record could not be read");
            continue;
        }
        size_t elen;
        const char *events = journal_arena_events(g->journal, i, &elen);
        if (!(rec.finished && rec.finished_ms + HOUR_MS <= now) &&
            !ah_find(g, rec.code) && !restore_one(g, &rec, events, elen, now))
            srv_log(SRV_LOG_WARN, "arena %s could not be restored", rec.code);
        free(rec.entrants);
        free(rec.back);
    }
    srv_log(SRV_LOG_INFO, "arenas: %u restored from the journal", g->arenas->open);
}

/* The snapshot's entrant with that id, or NULL. */
static const arena_snapshot_entrant *snap_entrant(const arena_snapshot *snap,
                                                  uint64_t id) {
    for (size_t i = 0; i < snap->count; i++)
        if (snap->entrants[i].id == id) return &snap->entrants[i];
    return NULL;
}

/* Whether r's seats other than bots are exactly the entrants of race `race`. */
static bool race_is_room(const arena_snapshot *snap, uint64_t race, const room *r) {
    int seated = 0, racing = -1;
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        if (seat->bot_level) continue;
        const arena_snapshot_entrant *e = snap_entrant(snap, seat->id);
        if (!seat->player || !e || e->state != ARENA_RACING || e->race != race)
            return false;
        racing = e->race_entrants;
        seated++;
    }
    return seated > 0 && seated == racing;
}

bool arena_host_relink(room *r, const char *code, uint64_t race) {
    game *g = r->game;
    arena_host *h = code[0] ? ah_find(g, code) : NULL;
    /* An arena whose end passed while the server was down ends at start: its
     * races count for nobody (arena_host_restored gives them up). */
    if (!h || h->finished || ah_now_ms() >= arena_get_config(h->a)->ends_ms) return false;
    arena_snapshot *snap = arena_snapshot_new(h->a);
    bool ok = snap && race_is_room(snap, race, r);
    for (int i = 0; ok && i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (r->seats[i].bot_level || ah_of(p) == h) continue;
        assert(!p->arena); /* a restored player, in this room only */
        if (!ah_entry_add(h, p)) {
            ok = false;
            for (int k = 0; k < i; k++) { /* undone: the race counts for nobody */
                srv_player *q = r->seats[k].player;
                if (r->seats[k].bot_level || ah_of(q) != h) continue;
                ah_entry_remove(q);
            }
            break;
        }
        /* Back in the pool after the race unless it had left it (sent away). */
        ah_set_wants(p, !snap_entrant(snap, p->id)->sent_away);
    }
    arena_snapshot_free(snap);
    if (!ok) return false;
    for (int i = 0; i < r->nseats; i++) /* its seat comes back by resume */
        if (!r->seats[i].bot_level) ah_held_drop(h, r->seats[i].id);
    r->arena = h;
    r->arena_race = race;
    return true;
}

/* The races no rebuilt room claimed count for nobody, once, each on file as an
 * `abandon` event after h's base record (written before: the events follow it
 * as every event does); their entrants are away until they come back. */
_Static_assert(sizeof((proto_arena_event){0}.ids) >= ARENA_MAX_PLAYERS * sizeof(uint64_t),
               "an abandon event lists a whole race");
void ah_abandon_unclaimed(arena_host *h, int64_t now) {
    if (h->finished || !arena_racing_count(h->a)) return;
    arena_snapshot *snap = arena_snapshot_new(h->a);
    if (!snap)
        srv_log(SRV_LOG_ERROR, "arena %s: out of memory giving up its races", h->code);
    for (size_t i = 0; snap && i < snap->count; i++) {
        const arena_snapshot_entrant *e = &snap->entrants[i];
        if (arena_entrant_state(h->a, e->id, NULL) != ARENA_RACING) continue;
        srv_player *p = ah_entrant_player(h, e->id);
        if (p && p->room && p->room->arena == h && p->room->arena_race == e->race)
            continue; /* its rebuilt room counts it */
        proto_arena_event ev = {
            .kind = PROTO_ARENA_EV_ABANDON, .race = e->race, .at_ms = now};
        for (size_t k = i; k < snap->count && ev.n < ARENA_MAX_PLAYERS; k++)
            if (snap->entrants[k].state == ARENA_RACING &&
                snap->entrants[k].race == e->race)
                ev.ids[ev.n++] = snap->entrants[k].id;
        arena_abandon_race(h->a, e->race, ev.ids, (size_t)ev.n, now);
        ah_event(h, &ev);
        /* Nobody is connected yet: the replay's start-up puts them away too,
         * so no `out` event (it would drop their claim to come back). */
        for (int k = 0; k < ev.n; k++)
            arena_away(h->a, ev.ids[k]);
    }
    arena_snapshot_free(snap);
}

void arena_host_restored(game *g) {
    if (!g->arenas) return;
    int64_t now = ah_now_ms();
    for (srv_link *l = g->arenas->all.next; l != &g->arenas->all; l = l->next) {
        arena_host *h = srv_container(l, arena_host, link);
        if (h->finished) continue;
        /* A new base on file: the state as it goes on from here (the events
         * read back are in it); the races no room came back for follow it. */
        ah_record(h);
        ah_abandon_unclaimed(h, now);
        ah_kick(h);
    }
}

/* ------------------------------------------------- entrants coming back --- */

void ah_held_drop(arena_host *h, uint64_t id) {
    for (size_t k = 0; k < h->nheld; k++)
        if (h->held[k].id == id) {
            h->held[k] = h->held[--h->nheld];
            return;
        }
}

/* Whether p is nothing yet here (no room, queue, watch, arena or other node's
 * room), so that it may become a held entrant. */
static bool bare(const srv_player *p) {
    return !p->room && !p->queued && !p->watching && !p->arena && !p->home &&
           !p->bot_level;
}

/* p becomes held entrant k of h (same id and name) and waits in its pool
 * again; it gets `welcome` (its id) and the arena. */
static void claim(arena_host *h, size_t k, srv_player *p) {
    uint64_t id = h->held[k].id;
    assert(bare(p) && !ah_entrant_player(h, id));
    uint64_t was = p->id;
    p->id = id;
    if (!ah_entry_add(h, p)) {
        p->id = was;
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    ah_held_drop(h, id);
    arena_row row;
    if (arena_row_of(h->a, id, &row)) snprintf(p->name, sizeof p->name, "%s", row.name);
    ah_set_wants(p, true);
    arena_wait(h->a, id, ah_now_ms());
    ah_event_in(h, p);
    ah_kick(h);
    srv_log(SRV_LOG_INFO, "arena %s: entrant %llu is back after the restart", h->code,
            (unsigned long long)id);
    p->welcomed = false; /* its id is the entrant's now */
    lobby_welcome(p);
    ah_reply_arena(h, p);
}

/* The running arena and its held entrant that `match` accepts, or NULL. */
static arena_host *find_held(game *g,
                             bool (*match)(const proto_arena_rec_back *, const void *),
                             const void *what, size_t *k) {
    if (!g->arenas) return NULL;
    int64_t now = ah_now_ms();
    for (srv_link *l = g->arenas->all.next; l != &g->arenas->all; l = l->next) {
        arena_host *h = srv_container(l, arena_host, link);
        if (h->finished || now >= arena_get_config(h->a)->ends_ms) continue;
        for (size_t i = 0; i < h->nheld; i++)
            if (match(&h->held[i], what) && !ah_entrant_player(h, h->held[i].id) &&
                arena_entrant_state(h->a, h->held[i].id, NULL) == ARENA_AWAY) {
                *k = i;
                return h;
            }
    }
    return NULL;
}

static bool token_matches(const proto_arena_rec_back *b, const void *hash) {
    return b->token_hash[0] && !strcmp(b->token_hash, hash);
}

static bool account_matches(const proto_arena_rec_back *b, const void *account) {
    return b->account[0] && !strcmp(b->account, account);
}

bool arena_host_resume(srv_player *p, const char *token) {
    game *g = p->game;
    char hash[65];
    size_t k;
    if (!bare(p) || !p->token[0] || strlen(token) != sizeof p->token - 1 ||
        journal_token_hash(token, hash) < 0)
        return false;
    arena_host *h = find_held(g, token_matches, hash, &k);
    if (!h) return false;
    /* The connection's player takes the token its client kept (nobody else
     * holds it: no seat had it, or resume would have found that one). */
    srv_player *holder = NULL;
    HASH_FIND(hh_token, g->by_token, token, strlen(token), holder);
    if (holder && holder != p) return false;
    if (!holder) {
        char old[sizeof p->token];
        memcpy(old, p->token, sizeof old);
        HASH_DELETE(hh_token, g->by_token, p);
        memcpy(p->token, token, sizeof p->token);
        int hash_oom = 0;
        HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
        if (hash_oom) { /* back under its own, which had its place */
            memcpy(p->token, old, sizeof p->token);
            HASH_ADD(hh_token, g->by_token, token, strlen(p->token), p);
            return false;
        }
    }
    claim(h, k, p);
    return true;
}

bool arena_host_login(srv_player *p) {
    size_t k;
    if (!p->account || !bare(p)) return false;
    arena_host *h = find_held(p->game, account_matches, p->account->name, &k);
    if (!h) return false;
    claim(h, k, p);
    return true;
}
