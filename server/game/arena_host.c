/* arena_host.c - arenas on this server: requests, pairing into rated rooms, standings
 * updates. */
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

struct arena_hosts *ah_hosts_of(game *g) {
    if (g->arenas) return g->arenas;
    struct arena_hosts *hs = calloc(1, sizeof *hs);
    if (!hs) return NULL;
    srv_list_init(&hs->all);
    hs->scale = 1;
    /* Test-only: shortens an arena's minutes, its start and pairing's waits. */
    const char *scale = getenv("RACE2048_TEST_ARENA_SCALE");
    if (scale && atoll(scale) > 1) hs->scale = atoll(scale);
    g->arenas = hs;
    return hs;
}

int64_t ah_now_ms(void) {
    return journal_wall_ms();
}

static proto_arena_status status_of(const arena_host *h, int64_t now) {
    if (h->finished) return PROTO_ARENA_FINISHED;
    return now < arena_get_config(h->a)->starts_ms ? PROTO_ARENA_UPCOMING
                                                   : PROTO_ARENA_RUNNING;
}

static proto_arena_row row_view(const arena_row *r) {
    return (proto_arena_row){.rank = r->rank,
                             .id = r->id,
                             .name = r->name,
                             .points = r->points,
                             .races = r->races,
                             .wins = r->wins,
                             .streak = r->streak,
                             .waiting = r->waiting};
}

static proto_arena_info info_of(const arena_host *h, int64_t now) {
    const arena_config *c = arena_get_config(h->a);
    return (proto_arena_info){.code = h->code,
                              .name = h->name,
                              .status = status_of(h, now),
                              .starts_ms = c->starts_ms,
                              .ends_ms = c->ends_ms,
                              .players = h->settings.players,
                              .size = h->settings.size,
                              .target = h->settings.target,
                              .entrants = arena_entrant_count(h->a)};
}

proto_arena_info ah_info_of(const arena_host *h, int64_t now) {
    return info_of(h, now);
}

/* The shared part of `arena` with max rows of standings (malloc'd). */
char *ah_shared_line(const arena_host *h, size_t max, size_t *len) {
    arena_row rows[ARENA_FINAL_ROWS];
    proto_arena_row views[ARENA_FINAL_ROWS];
    assert(max <= ARENA_FINAL_ROWS);
    size_t n = arena_standings(h->a, 0, rows, max);
    for (size_t i = 0; i < n; i++)
        views[i] = row_view(&rows[i]);
    proto_arena_info info = info_of(h, ah_now_ms());
    info.rows = views;
    info.nrows = (int)n;
    return proto_enc_arena_shared(&info, len);
}

void ah_send_arena(arena_host *h, srv_player *p, const char *shared, size_t len) {
    arena_row you;
    bool entrant = arena_row_of(h->a, p->id, &you);
    proto_arena_row view = entrant ? row_view(&you) : (proto_arena_row){0};
    size_t n;
    char *line = proto_arena_finish(shared, len, entrant ? &view : NULL, &n);
    if (!line) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_send_line(p, SRV_MSG_ACCOUNT, line, n);
}

void ah_reply_arena(arena_host *h, srv_player *p) {
    size_t len;
    char *shared = h->final_shared ? NULL : ah_shared_line(h, ARENA_TOP, &len);
    if (h->final_shared) {
        ah_send_arena(h, p, h->final_shared, h->final_len);
        return;
    }
    if (!shared) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    ah_send_arena(h, p, shared, len);
    free(shared);
}

/* The standings to every entrant here: one shared part per update, and each
 * receiver's own row (`you`) appended to a copy of it. */
static void broadcast(arena_host *h, const char *shared, size_t len) {
    for (arena_entry *e = h->by_id; e; e = e->hh.next)
        if (player_connected(e->player)) ah_send_arena(h, e->player, shared, len);
}

static void arm(arena_host *h, int64_t at, int64_t now);

void ah_kick(arena_host *h) {
    if (!h->finished) uv_timer_start(&h->timer, ah_on_timer, 0, 0);
}

/* ------------------------------------------------------------ the record --- */

/* The entrants to put back in the pool if they come back after a restart:
 * those that wait now or will after their race (their players' token hashes
 * and accounts), and the held ones that have not come back yet. n: how many
 * (malloc'd; NULL and 0 if none, or if memory ran out: then none come back). */
static proto_arena_rec_back *back_list(arena_host *h, const arena_snapshot *snap,
                                       size_t *n) {
    *n = 0;
    proto_arena_rec_back *back =
        snap->count + h->nheld ? calloc(snap->count + h->nheld, sizeof *back) : NULL;
    if (!back) return NULL;
    for (size_t i = 0; i < snap->count; i++) {
        const arena_snapshot_entrant *e = &snap->entrants[i];
        if (!(e->state == ARENA_WAITING || (e->state == ARENA_RACING && !e->sent_away)))
            continue;
        srv_player *p = ah_entrant_player(h, e->id);
        if (!p || p->bot_level) continue;
        proto_arena_rec_back *b = &back[*n];
        b->id = e->id;
        if (p->token[0]) {
            if (journal_token_hash(p->token, b->token_hash) < 0) b->token_hash[0] = '\0';
        } else if (p->token_hash) {
            snprintf(b->token_hash, sizeof b->token_hash, "%s", p->token_hash);
        }
        if (p->account) snprintf(b->account, sizeof b->account, "%s", p->account->name);
        if (b->token_hash[0] || b->account[0]) ++*n;
    }
    for (size_t k = 0; k < h->nheld; k++)
        back[(*n)++] = h->held[k];
    return back;
}

/* The arena's whole state to the journal (record_arena.c's `arena` record): at
 * its creation, its end, after a restart, and once the events since the last
 * outweigh it (ah_event). O(entrants). */
void ah_record(arena_host *h) {
    h->event_bytes = 0;
    if (!h->g->journal) return;
    arena_snapshot *snap = arena_snapshot_new(h->a);
    proto_arena_rec_entrant *rows =
        snap && snap->count ? calloc(snap->count, sizeof *rows) : NULL;
    if (!snap || (snap->count && !rows)) {
        srv_log(SRV_LOG_ERROR, "arena %s: out of memory for its record", h->code);
        arena_snapshot_free(snap);
        return;
    }
    for (size_t i = 0; i < snap->count; i++) {
        const arena_snapshot_entrant *e = &snap->entrants[i];
        rows[i] = (proto_arena_rec_entrant){.id = e->id,
                                            .points = e->points,
                                            .races = e->races,
                                            .wins = e->wins,
                                            .streak = e->streak,
                                            .state = (int)e->state,
                                            .sent_away = e->sent_away,
                                            .since_ms = e->since_ms,
                                            .race = e->race,
                                            .race_entrants = e->race_entrants};
        snprintf(rows[i].name, sizeof rows[i].name, "%s", e->name);
    }
    proto_arena_record rec = {.players = snap->config.players,
                              .size = h->settings.size,
                              .target = h->settings.target,
                              .starts_ms = snap->config.starts_ms,
                              .ends_ms = snap->config.ends_ms,
                              .pair_wait_ms = snap->config.pair_wait_ms,
                              .bots_wait_ms = snap->config.bots_wait_ms,
                              .max_entrants = snap->config.max_entrants,
                              .next_race = snap->next_race,
                              .finished = h->finished,
                              .finished_ms = h->finished_ms,
                              .count = snap->count,
                              .entrants = rows};
    snprintf(rec.code, sizeof rec.code, "%s", h->code);
    snprintf(rec.name, sizeof rec.name, "%s", h->name);
    if (!h->finished) rec.back = back_list(h, snap, &rec.nback);
    byte_buf b = {0};
    if (proto_rec_put_arena(&b, &rec) == 0) {
        journal_arena(h->g->journal, h->code, b.data, b.len);
        h->state_bytes = b.len;
    } else
        srv_log(SRV_LOG_ERROR, "arena %s: out of memory for its record", h->code);
    byte_buf_free(&b);
    free(rec.back);
    free(rows);
    arena_snapshot_free(snap);
}

void ah_event(arena_host *h, proto_arena_event *e) {
    if (!h->g->journal || h->finished) return;
    snprintf(e->code, sizeof e->code, "%s", h->code);
    byte_buf b = {0};
    if (proto_rec_put_arena_event(&b, e) == 0) {
        journal_arena_event(h->g->journal, h->code, b.data, b.len);
        h->event_bytes += b.len;
    } else {
        srv_log(SRV_LOG_ERROR, "arena %s: out of memory for an event", h->code);
    }
    byte_buf_free(&b);
    /* A new base once the events since the last outweigh it (4 KiB at least). */
    if (h->event_bytes > h->state_bytes && h->event_bytes > 4096) ah_record(h);
}

void ah_event_in(arena_host *h, const srv_player *p) {
    arena_row row;
    proto_arena_event e = {
        .kind = PROTO_ARENA_EV_IN, .back = {.id = p->id}, .at_ms = ah_now_ms()};
    snprintf(e.name, sizeof e.name, "%s",
             arena_row_of(h->a, p->id, &row) ? row.name : p->name);
    if (p->token[0]) {
        if (journal_token_hash(p->token, e.back.token_hash) < 0) e.back.token_hash[0] = 0;
    } else if (p->token_hash) {
        snprintf(e.back.token_hash, sizeof e.back.token_hash, "%s", p->token_hash);
    }
    if (p->account)
        snprintf(e.back.account, sizeof e.back.account, "%s", p->account->name);
    ah_event(h, &e);
}

void ah_event_out(arena_host *h, uint64_t id) {
    proto_arena_event e = {.kind = PROTO_ARENA_EV_OUT, .back = {.id = id}};
    ah_event(h, &e);
}

/* ------------------------------------------------------------- the races --- */

srv_player *ah_entrant_player(arena_host *h, uint64_t id) {
    arena_entry *e = NULL;
    HASH_FIND(hh, h->by_id, &id, sizeof id, e);
    return e ? e->player : NULL;
}

bool ah_entry_add(arena_host *h, srv_player *p) {
    assert(!p->arena);
    arena_entry *e = malloc(sizeof *e);
    if (!e) return false;
    *e = (arena_entry){.host = h, .player = p, .id = p->id};
    int hash_oom = 0;
    HASH_ADD(hh, h->by_id, id, sizeof e->id, e);
    if (hash_oom) {
        free(e);
        return false;
    }
    p->arena = e;
    return true;
}

void ah_entry_remove(srv_player *p) {
    arena_entry *e = p->arena;
    assert(e && e->player == p);
    HASH_DELETE(hh, e->host->by_id, e);
    p->arena = NULL;
    free(e);
}

/* Makes group's room: its entrants, then bots; false if it could not. */
static bool start_race(arena_host *h, const arena_group *grp, int64_t now) {
    game *g = h->g;
    proto_settings st = h->settings;
    int left = arena_seconds_left(h->a, now);
    if (left <= 0) return false;
    st.time_limit = (uint32_t)left;
    st.players = grp->entrants + grp->bots;
    room *r = room_new(g, false, &st);
    if (!r) return false;
    for (int i = 0; i < grp->entrants; i++) {
        srv_player *p = ah_entrant_player(h, grp->ids[i]);
        /* The pool holds connected players only (disconnects leave it). */
        if (!p || !player_connected(p) || room_in_running_race(p)) {
            room_abandon(r);
            return false;
        }
        lobby_leave_quietly(p); /* an ended race kept for rematch, a watch */
        room_add_player(r, p, false);
    }
    if (grp->bots && room_add_bots(r, grp->bots, PROTO_BOT_LEVEL_DEFAULT, NULL, false)) {
        room_abandon(r);
        return false;
    }
    r->arena = h;
    r->arena_race = grp->race;
    room_start(r);
    return true;
}

/* Makes room for the groups of n entrants; false if memory ran out. */
bool ah_groups_room(arena_host *h, size_t n) {
    size_t need = n / 2 + 1;
    if (need <= h->groups_cap) return true;
    size_t cap = h->groups_cap ? h->groups_cap : 4;
    while (cap < need)
        cap *= 2;
    arena_group *more = realloc(h->groups, cap * sizeof *more);
    if (!more) return false;
    h->groups = more;
    h->groups_cap = cap;
    return true;
}

/* A pairing round: each group's room starts, STARTS_A_TURN of them a loop turn
 * at most and fewer if the turn's budget (from turn0) runs out (a thousand
 * entrants form 125 races at once: the rest start in the next turns, so that
 * other clients are served in between). Returns when the next
 * could form (ARENA_NEVER: none), a millisecond away while groups wait to
 * start, a second away at least after a group that could not start (out of
 * memory, --max-bots), so that a failing start does not spin. */
static int64_t pair_now(arena_host *h, int64_t now, uint64_t turn0) {
    int64_t next = ARENA_NEVER;
    bool paired = h->pending_from == h->pending_count;
    if (paired) {
        h->pending_from = h->pending_count = 0;
        /* No race of 0 seconds: in the arena's last second nobody is paired. */
        if (arena_seconds_left(h->a, now) <= 0) return ARENA_NEVER;
        arena_pairing pr = arena_pair(h->a, now);
        next = pr.next_ms;
        if (!pr.count) return next;
        /* The groups belong to the arena until its next change (an abandon):
         * copied first, into room kept for as many as the entrants can form. */
        assert(pr.count <= h->groups_cap);
        memcpy(h->groups, pr.groups, pr.count * sizeof *h->groups);
        h->pending_count = pr.count;
    }
    arena_group *groups = h->groups;
    size_t from = h->pending_from, count = h->pending_count;
    if (count - from > STARTS_A_TURN) count = from + STARTS_A_TURN;
    bool failed = false;
    /* One start at least, then as many as the turn's budget allows. */
    for (size_t i = from; i < count && (i == from || ah_turn_budget_left(turn0)); i++) {
        h->pending_from = i + 1;
        proto_arena_event e = {.kind = PROTO_ARENA_EV_FORM,
                               .race = groups[i].race,
                               .n = groups[i].entrants,
                               .at_ms = now};
        memcpy(e.ids, groups[i].ids, (size_t)e.n * sizeof e.ids[0]);
        ah_event(h, &e);
        if (start_race(h, &groups[i], now)) continue;
        failed = true;
        arena_abandon_race(h->a, groups[i].race, groups[i].ids,
                           (size_t)groups[i].entrants, now);
        e.kind = PROTO_ARENA_EV_ABANDON;
        ah_event(h, &e);
        /* Those who could not be seated wait no more. */
        for (int k = 0; k < groups[i].entrants; k++) {
            srv_player *p = ah_entrant_player(h, groups[i].ids[k]);
            if (p && player_connected(p)) continue;
            arena_away(h->a, groups[i].ids[k]);
            ah_event_out(h, groups[i].ids[k]);
        }
    }
    if (h->pending_from < h->pending_count) return now + 1; /* after I/O: see above */
    /* The round's last races started: the next round says when one could form. */
    if (!paired) next = now + 1;
    return failed && next < now + 1000 ? now + 1000 : next;
}

void arena_host_race_end(room *r, const room_seat *const *order, uint64_t winner) {
    arena_host *h = r->arena;
    assert(h);
    int64_t now = ah_now_ms();
    arena_place places[ARENA_MAX_PLAYERS];
    size_t n = 0;
    int place = 1;
    for (int i = 0; i < r->nseats; i++) {
        if (i > 0 && !(i == 1 && winner) && room_rank_cmp(order[i - 1], order[i]) != 0)
            place = i + 1;
        else if (i == 1 && winner)
            place = 2;
        const room_seat *s = order[i];
        if (s->bot) continue;
        places[n++] = (arena_place){
            .id = s->id, .place = place, .left = s->status == PROTO_LEFT || !s->player};
    }
    int rc = arena_apply_race(h->a, r->arena_race, r->nseats, places, n, now);
    if (rc == 0) { /* on file right after the end's record: it counts once */
        proto_arena_event e = {.kind = PROTO_ARENA_EV_RACE,
                               .race = r->arena_race,
                               .players = r->nseats,
                               .at_ms = now,
                               .n = (int)n};
        for (size_t i = 0; i < n; i++) {
            e.ids[i] = places[i].id;
            e.places[i] = places[i].place;
            e.left[i] = places[i].left;
        }
        ah_event(h, &e);
    }
    if (rc < 0)
        srv_log(SRV_LOG_WARN, "arena %s: race %llu's result refused: %s", h->code,
                (unsigned long long)r->arena_race, arena_strerror(rc));
    /* Who is not connected waits no more (a disconnect within the grace). */
    for (size_t i = 0; i < n; i++) {
        srv_player *p = ah_entrant_player(h, places[i].id);
        if (p && player_connected(p) && ah_wants(p)) continue;
        bool waited = arena_entrant_state(h->a, places[i].id, NULL) == ARENA_WAITING;
        arena_away(h->a, places[i].id);
        if (waited) ah_event_out(h, places[i].id);
    }
    r->arena = NULL;
    /* (the result's event went with the end's record: it counts once) */
    ah_kick(h);
}

/* ----------------------------------------------------------- the arena --- */

static void finish(arena_host *h, int64_t now) {
    struct arena_hosts *hs = h->g->arenas;
    h->finished = true;
    h->finished_ms = now;
    ah_update_free(h); /* the final standings go to all at once instead */
    assert(hs->open > 0);
    hs->open--;
    h->final_shared = ah_shared_line(h, ARENA_FINAL_ROWS, &h->final_len);
    ah_record(h);
    if (h->final_shared) broadcast(h, h->final_shared, h->final_len);
    srv_log(SRV_LOG_INFO, "arena %s finished: %zu entrants", h->code,
            arena_entrant_count(h->a));
    /* Kept readable an hour, then freed. */
    uv_timer_start(&h->timer, ah_on_timer, HOUR_MS, 0);
}

static void on_timer_closed(uv_handle_t *t) {
    arena_host *h = t->data;
    free(h->held);
    arena_free(h->a);
    free(h->final_shared);
    ah_update_free(h);
    free(h->groups);
    free(h);
}

void ah_host_free(arena_host *h) {
    struct arena_hosts *hs = h->g->arenas;
    arena_entry *e, *tmp;
    HASH_ITER(hh, h->by_id, e, tmp)
    ah_entry_remove(e->player);
    if (!h->finished) hs->open--;
    if (h->finished) journal_arena_drop(h->g->journal, h->code);
    srv_list_remove(&h->link);
    HASH_DELETE(hh, hs->by_code, h);
    uv_close((uv_handle_t *)&h->timer, on_timer_closed);
}

void ah_on_timer(uv_timer_t *t) {
    arena_host *h = t->data;
    if (game_defer_until_io(h->g, t, ah_on_timer)) return;
    uint64_t turn0 = ah_turn_begin();
    int64_t now = ah_now_ms();
    if (h->finished) {
        ah_host_free(h);
        return;
    }
    const arena_config *c = arena_get_config(h->a);
    int64_t next = ARENA_NEVER;
    /* Groups formed before the end and not started yet are given up there
     * (no race of 0 seconds), so that their entrants race no more. */
    if (now < c->ends_ms || h->pending_from < h->pending_count) {
        next = pair_now(h, now, turn0);
    } else if (arena_racing_count(h->a) == 0) {
        finish(h, now);
        return;
    }
    if (now < c->starts_ms && c->starts_ms < next) next = c->starts_ms;
    if (now < c->ends_ms && c->ends_ms < next) next = c->ends_ms;
    arm(h, ah_update_pace(h, now, next, turn0), now);
}

static void arm(arena_host *h, int64_t at, int64_t now) {
    if (at == ARENA_NEVER) {
        uv_timer_stop(&h->timer);
        return;
    }
    uv_timer_start(&h->timer, ah_on_timer, at > now ? (uint64_t)(at - now) : 0, 0);
}

/* --------------------------------------------------------- the requests --- */

arena_host *ah_find(game *g, const char *code) {
    if (!g->arenas) return NULL;
    arena_host *h = NULL;
    HASH_FIND_STR(g->arenas->by_code, code, h);
    return h;
}

static const char code_alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/* Whether p's address may create another arena now (and counts it if so). */
static bool allow_create(struct arena_hosts *hs, srv_player *p, int64_t now) {
    unsigned char key[SINK_ADDR_KEY_MAX];
    size_t len = p->sink.ops && p->sink.ops->addr_key
                     ? p->sink.ops->addr_key(p->sink.dest, key)
                     : 0;
    if (!len) return true; /* no address (restored, a bot): not counted */
    arena_addr *found = NULL;
    for (size_t i = 0; i < hs->naddrs;) {
        arena_addr *a = &hs->addrs[i];
        while (a->n && a->at[0] <= now - HOUR_MS) { /* forget what is an hour old */
            memmove(a->at, a->at + 1, (size_t)(a->n - 1) * sizeof a->at[0]);
            a->n--;
        }
        if (!a->n) {
            hs->addrs[i] = hs->addrs[--hs->naddrs];
            continue;
        }
        if (a->len == len && !memcmp(a->key, key, len)) found = a;
        i++;
    }
    if (found && found->n >= CREATES_A_HOUR) return false;
    if (!found) {
        if (hs->naddrs == hs->cap_addrs) {
            size_t cap = hs->cap_addrs ? hs->cap_addrs * 2 : 8;
            arena_addr *more = realloc(hs->addrs, cap * sizeof *more);
            if (!more) return true; /* not tracked: the open arenas' cap still holds */
            hs->addrs = more;
            hs->cap_addrs = cap;
        }
        found = &hs->addrs[hs->naddrs++];
        memset(found, 0, sizeof *found);
        memcpy(found->key, key, len);
        found->len = len;
    }
    found->at[found->n++] = now;
    return true;
}

/* A new arena from starts to ends (Unix ms) with races of settings; NULL if
 * memory or codes run out. */
static arena_host *host_new(game *g, const char *name, int64_t starts, int64_t ends,
                            const proto_settings *settings) {
    struct arena_hosts *hs = g->arenas;
    arena_config cfg = arena_config_default(settings->players, starts, ends);
    cfg.pair_wait_ms /= hs->scale;
    cfg.bots_wait_ms /= hs->scale;
    cfg.max_entrants = ARENA_HOST_MAX_ENTRANTS;
    arena *a = arena_new(&cfg);
    arena_host *h = a ? ah_host_add(g, name, settings, NULL, a) : NULL;
    if (!h) return NULL;
    ah_record(h);
    ah_kick(h);
    return h;
}

/* An arena host for a (taken) with code (NULL: a fresh one), counted open;
 * NULL (a freed) if memory or codes run out. */
arena_host *ah_host_add(game *g, const char *name, const proto_settings *settings,
                        const char *code, arena *a) {
    struct arena_hosts *hs = g->arenas;
    arena_host *h = calloc(1, sizeof *h);
    if (!h) {
        arena_free(a);
        return NULL;
    }
    h->a = a;
    h->g = g;
    snprintf(h->name, sizeof h->name, "%s", name);
    h->settings = *settings;
    h->settings.rated = true;
    if (code) /* restored: its recorded code */
        snprintf(h->code, sizeof h->code, "%s", code);
    for (int attempt = 0; !code; attempt++) {
        unsigned char rnd[ARENA_HOST_CODE_LEN];
        if (attempt == 100 || srv_random(rnd, sizeof rnd) < 0) {
            arena_free(h->a);
            free(h);
            return NULL;
        }
        for (int i = 0; i < ARENA_HOST_CODE_LEN; i++)
            h->code[i] = code_alphabet[rnd[i] % 32];
        if (!ah_find(g, h->code)) break;
    }
    snprintf(h->settings.arena, sizeof h->settings.arena, "%s", h->code);
    int hash_oom = 0;
    HASH_ADD_STR(hs->by_code, code, h);
    if (hash_oom) {
        arena_free(h->a);
        free(h);
        return NULL;
    }
    srv_list_push(&hs->all, &h->link);
    hs->open++;
    uv_timer_init(g->loop, &h->timer);
    h->timer.data = h;
    const arena_config *c = arena_get_config(a);
    srv_log(SRV_LOG_INFO, "arena %s: %lld s, %d players", h->code,
            (long long)(c->ends_ms - c->starts_ms) / 1000, settings->players);
    return h;
}

static void do_create(srv_player *p, const proto_request *req) {
    game *g = p->game;
    struct arena_hosts *hs = ah_hosts_of(g);
    if (!hs) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    unsigned most = g->cfg->max_arenas;
    if (most && hs->open >= most) {
        char message[128];
        snprintf(
            message, sizeof message,
            "the server runs %u arenas, as many as it takes (--max-arenas); try later",
            most);
        srv_send_error(p, PROTO_ERR_SERVER_FULL, message);
        return;
    }
    int64_t now = ah_now_ms();
    if (!allow_create(hs, p, now)) {
        srv_send_error(p, PROTO_ERR_RATE_LIMITED,
                       "your address has created 5 arenas in the last hour; try later");
        return;
    }
    int64_t starts = now + (int64_t)req->starts_in * 1000 / hs->scale;
    int64_t ends = starts + (int64_t)req->minutes * 60000 / hs->scale;
    arena_host *h = host_new(g, req->arena_name, starts, ends, &req->settings);
    if (!h) {
        srv_send_error(p, PROTO_ERR_BUSY,
                       "the server could not make an arena; try again");
        return;
    }
    ah_reply_arena(h, p);
}

char *arena_host_list_line(game *g, size_t *len) {
    size_t n = 0, cap = 0;
    proto_arena_info *rows = NULL;
    int64_t now = ah_now_ms();
    if (g->arenas)
        for (srv_link *l = g->arenas->all.next; l != &g->arenas->all; l = l->next) {
            arena_host *h = srv_container(l, arena_host, link);
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                proto_arena_info *more = realloc(rows, cap * sizeof *more);
                if (!more) break;
                rows = more;
            }
            rows[n++] = info_of(h, now);
        }
    char *line = proto_enc_arenas(rows, (int)n, len);
    free(rows);
    return line;
}

char *arena_host_results_line(game *g, const char *code, bool *found, size_t *len) {
    arena_host *h = ah_find(g, code);
    *found = h != NULL;
    if (!h) return NULL;
    if (h->final_shared)
        return proto_arena_finish(h->final_shared, h->final_len, NULL, len);
    size_t slen;
    char *shared = ah_shared_line(h, ARENA_TOP, &slen);
    char *line = shared ? proto_arena_finish(shared, slen, NULL, len) : NULL;
    free(shared);
    return line;
}

static void do_list(srv_player *p) {
    size_t len;
    char *line = arena_host_list_line(p->game, &len);
    if (!line) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_send_line(p, SRV_MSG_ACCOUNT, line, len);
}

/* p stops being an entrant's player here (another arena, or it is freed). */
static void unlink_player(srv_player *p) {
    arena_host *h = ah_of(p);
    if (!h) return;
    arena_away(h->a, p->id);
    ah_event_out(h, p->id);
    ah_entry_remove(p);
    ah_kick(h);
}

static void do_join(srv_player *p, arena_host *h) {
    if (lobby_refuse_if_racing(p)) return;
    if (p->home) { /* cluster mode: its room is another node's, which pairs nothing here
                    */
        srv_send_error(p, PROTO_ERR_BUSY,
                       "you are in a room on another node; send leave first");
        return;
    }
    /* Cluster mode: after a takeover the entrant's seat in a race of this
     * arena waits here as the seat's own player (its id is the entrant's):
     * that one stays the entrant; the race is resumed, not joined twice. */
    srv_player *seat = ah_entrant_player(h, p->id);
    if (seat && seat != p) {
        srv_send_error(p, PROTO_ERR_BUSY,
                       "your race in this arena waits for you: resume it first");
        return;
    }
    int rc = ah_groups_room(h, arena_entrant_count(h->a) + 1)
                 ? arena_join(h->a, p->id, p->name, ah_now_ms())
                 : ARENA_ERR_NOMEM;
    if (rc == ARENA_ERR_FULL) {
        srv_send_error(p, PROTO_ERR_SERVER_FULL,
                       "the arena has as many entrants as it takes");
        return;
    }
    if (rc < 0) {
        srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    if (ah_of(p) != h) {
        unlink_player(p);
        if (!ah_entry_add(h, p)) {
            arena_away(h->a, p->id);
            ah_event_in(h, p); /* entered, and away at once */
            ah_event_out(h, p->id);
            srv_send_error(p, PROTO_ERR_BUSY, "the server is short of memory");
            return;
        }
    }
    ah_set_wants(p, true);
    ah_event_in(h, p);
    if (!player_connected(p)) {
        arena_away(h->a, p->id);
        ah_event_out(h, p->id);
    }
    ah_held_drop(h, p->id);
    ah_kick(h);
    ah_reply_arena(h, p);
}

static void do_leave(srv_player *p, arena_host *h) {
    if (ah_of(p) == h) {
        arena_away(h->a, p->id);
        ah_event_out(h, p->id);
        ah_set_wants(p, false);
        ah_kick(h);
    }
    ah_reply_arena(h, p);
}

void arena_host_request(srv_player *p, const proto_request *req) {
    if (req->type == PROTO_REQ_ARENA_CREATE) {
        do_create(p, req);
        return;
    }
    if (req->type == PROTO_REQ_ARENAS) {
        do_list(p);
        return;
    }
    arena_host *h = ah_find(p->game, req->room);
    if (!h) {
        srv_send_error(p, PROTO_ERR_ARENA_NOT_FOUND, "no arena has that code");
        return;
    }
    if (req->type == PROTO_REQ_ARENA_RESULTS) {
        ah_reply_arena(h, p);
        return;
    }
    if (h->finished || ah_now_ms() >= arena_get_config(h->a)->ends_ms) {
        srv_send_error(p, PROTO_ERR_ARENA_OVER, "that arena has finished");
        return;
    }
    if (req->type == PROTO_REQ_ARENA_JOIN)
        do_join(p, h);
    else
        do_leave(p, h);
}

/* ------------------------------------------------------ the player's life --- */

void arena_host_busy(srv_player *p) {
    if (!ah_wants(p)) return;
    ah_set_wants(p, false);
    arena_away(ah_of(p)->a, p->id);
    ah_event_out(ah_of(p), p->id);
    ah_kick(ah_of(p));
}

void arena_host_disconnected(srv_player *p) {
    arena_host *h = ah_of(p);
    if (!h) return;
    arena_state st = arena_entrant_state(h->a, p->id, NULL);
    if (st == ARENA_WAITING) {
        arena_away(h->a, p->id);
        ah_event_out(h, p->id);
    }
    ah_kick(h);
}

void arena_host_reconnected(srv_player *p) {
    arena_host *h = ah_of(p);
    if (!h || !ah_wants(p) || h->finished) return;
    if (arena_entrant_state(h->a, p->id, NULL) == ARENA_AWAY &&
        !room_in_running_race(p) && arena_wait(h->a, p->id, ah_now_ms()) == 0)
        ah_event_in(h, p);
    ah_kick(h);
}

void arena_host_forget(srv_player *p) {
    unlink_player(p);
}

static void every_closed(uv_handle_t *t) {
    free(srv_container((uv_timer_t *)t, struct arena_hosts, every));
}

void arena_host_close_all(game *g) {
    struct arena_hosts *hs = g->arenas;
    if (!hs) return;
    while (!srv_list_empty(&hs->all))
        ah_host_free(srv_container(hs->all.next, arena_host, link));
    free(hs->addrs);
    g->arenas = NULL;
    if (hs->every_ready)
        uv_close((uv_handle_t *)&hs->every, every_closed);
    else
        free(hs);
}

/* ------------------------------------------------------- --arena-every --- */

static void on_every(uv_timer_t *t);

/* Arms the schedule's timer for the next multiple of the period since 00:00 UTC. */
static void every_arm(struct arena_hosts *hs, game *g) {
    int64_t period = (int64_t)g->cfg->arena_every * 60000 / hs->scale;
    if (period < 1000) period = 1000;
    int64_t now = ah_now_ms();
    int64_t next = (now / period + 1) * period;
    uv_timer_start(&hs->every, on_every, (uint64_t)(next - now), 0);
}

static void on_every(uv_timer_t *t) {
    game *g = t->data;
    struct arena_hosts *hs = g->arenas;
    int64_t period = (int64_t)g->cfg->arena_every * 60000 / hs->scale;
    if (period < 1000) period = 1000;
    int64_t now = ah_now_ms();
    int64_t starts = now - now % period; /* the multiple that has just come */
    every_arm(hs, g);
    /* Cluster mode: the node that claims the period opens its arena. */
    if (hs->every_claim)
        hs->every_claim(hs->every_claim_ctx, g, starts);
    else
        arena_host_every_open(g, starts);
}

void arena_host_every_open(game *g, int64_t starts) {
    struct arena_hosts *hs = g->arenas;
    if (!hs) return; /* closed while a claim was on its way */
    unsigned minutes = g->cfg->arena_every / 2 ? g->cfg->arena_every / 2 : 1;
    int64_t ends = starts + (int64_t)minutes * 60000 / hs->scale;
    unsigned most = g->cfg->max_arenas;
    char name[PROTO_ARENA_NAME_MAX + 1];
    snprintf(name, sizeof name, "Every %u minutes", g->cfg->arena_every);
    proto_settings st = {.players = 4, .size = 4, .target = 2048, .rated = true};
    if (most && hs->open >= most)
        srv_log(SRV_LOG_WARN, "--arena-every: --max-arenas reached; none opened");
    else if (!host_new(g, name, starts, ends, &st))
        srv_log(SRV_LOG_WARN, "--arena-every: out of memory; none opened");
}

void arena_host_schedule(game *g) {
    if (!g->cfg->arena_every) return;
    struct arena_hosts *hs = ah_hosts_of(g);
    if (!hs) return;
    uv_timer_init(g->loop, &hs->every);
    hs->every.data = g;
    hs->every_ready = true;
    every_arm(hs, g);
}
