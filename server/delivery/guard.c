/* guard.c - per-address brakes: failed resumes (guessed tokens and codes) and games
 * started are limited per connection and per client address, and logged without
 * flooding the log. */
#include "guard.h"

#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "resume.h"

/* At most this many addresses are remembered as having failed or started
 * games lately; past it the one seen longest ago is forgotten first. */
#define GUARD_MAX_ADDRS  65536
#define REGISTER_PER_MIN (GUARD_REGISTER_PER_HOUR / 60.0)
/* --------------------------------------------------------------- logging --- */

/* A warning a client caused: within the server's budget of such lines. */
static void guard_log(srv *s, const char *what, const char *peer) {
    srv_log_client(SRV_LOG_WARN, "%s from %s", what, peer);
}

/* ------------------------------------------------------------- addresses --- */

/* c's entry in the address table, the one its connections count under too;
 * with make, one is made if there is none. NULL for an address of no known
 * family, or if memory ran out. */
static addr_entry *entry_of(conn *c, bool make) {
    unsigned char key[16];
    size_t len = addr_key(c->addr, c->addr_len, key);
    return len ? addr_get(&c->srv->addrs, key, len, make) : NULL;
}

/* Brings b up to now, refilled at per_min a minute up to burst, and returns
 * what it holds; a bucket that is full again is no longer in use. */
static double level(addr_bucket *b, uint64_t now, unsigned burst, double per_min) {
    if (!b->in_use) return burst;
    b->tokens += (double)(now - b->updated) * per_min / 60000.0;
    b->updated = now;
    if (b->tokens >= burst) {
        b->in_use = false;
        b->warned = false;
    }
    return b->in_use ? b->tokens : burst;
}

/* Takes one from b if it holds one (a refusal takes nothing: a client that
 * keeps asking is refused, not locked out for longer). Returns whether it did. */
static bool take(addr_bucket *b, uint64_t now, unsigned burst, double per_min) {
    double have = level(b, now, burst, per_min);
    if (!b->in_use) {
        b->in_use = true;
        b->tokens = have;
        b->updated = now;
    }
    if (b->tokens < 1) return false;
    b->tokens -= 1;
    return true;
}

/* Brings both of e's buckets up to now; true if one is still in use. */
static bool in_use(const srv *s, addr_entry *e, uint64_t now) {
    addr_guard *g = addr_guard_of(e);
    level(&g->resumes, now, s->cfg->resume_burst, s->cfg->resume_per_min);
    level(&g->games, now, s->cfg->max_games_per_min, s->cfg->max_games_per_min);
    level(&g->codes, now, RESUME_ADDR_BURST, RESUME_ADDR_PER_S * 60);
    level(&g->registrations, now, GUARD_REGISTER_PER_HOUR, REGISTER_PER_MIN);
    return g->resumes.in_use || g->games.in_use || g->codes.in_use ||
           g->registrations.in_use;
}

/* Takes e out of the list of active entries; its buckets count as full. */
static void unlink_entry(srv *s, addr_entry *e) {
    addr_guard *g = addr_guard_of(e);
    if (g->older)
        addr_guard_of(g->older)->newer = g->newer;
    else
        s->guard_oldest = g->newer;
    if (g->newer)
        addr_guard_of(g->newer)->older = g->older;
    else
        s->guard_newest = g->older;
    g->older = g->newer = NULL;
    g->active = false;
    g->resumes.in_use = g->games.in_use = g->codes.in_use = false;
    g->registrations.in_use = false;
    s->guard_active--;
}

/* e's buckets are full again (or e is the one forgotten): out of the list,
 * and out of the table if no connection needs it. */
static void deactivate(srv *s, addr_entry *e) {
    unlink_entry(s, e);
    addr_drop_if_unused(&s->addrs, e);
}

/* Makes e the most recently seen active entry. */
static void touch(srv *s, addr_entry *e) {
    addr_guard *g = addr_guard_of(e);
    if (g->active) {
        if (!g->newer) return; /* already the newest */
        addr_guard kept = *g;  /* unlinking forgets which buckets are in use */
        unlink_entry(s, e);
        g->resumes.in_use = kept.resumes.in_use;
        g->games.in_use = kept.games.in_use;
        g->codes.in_use = kept.codes.in_use;
        g->registrations.in_use = kept.registrations.in_use;
    }
    g->active = true;
    s->guard_active++;
    g->older = s->guard_newest;
    g->newer = NULL;
    if (s->guard_newest)
        addr_guard_of(s->guard_newest)->newer = e;
    else
        s->guard_oldest = e;
    s->guard_newest = e;
}

/* Forgets addresses whose buckets are full again (they are no different from
 * addresses never seen), oldest first, and the oldest while there are too
 * many. A few per call, so the cost stays constant. `keep` is not freed. */
static void prune(srv *s, uint64_t now, const addr_entry *keep) {
    for (int i = 0; i < 4 && s->guard_oldest && s->guard_oldest != keep; i++) {
        addr_entry *oldest = s->guard_oldest;
        if (in_use(s, oldest, now) && s->guard_active <= GUARD_MAX_ADDRS) break;
        deactivate(s, oldest);
    }
}

/* ------------------------------------------------------------------- API --- */

guard_verdict guard_resume_check(conn *c) {
    srv *s = c->srv;
    addr_entry *e = s->cfg->resume_burst ? entry_of(c, false) : NULL;
    if (!e) return GUARD_OK;
    double have = level(&addr_guard_of(e)->resumes, uv_now(s->loop), s->cfg->resume_burst,
                        s->cfg->resume_per_min);
    return have >= 1 ? GUARD_OK : GUARD_THROTTLED;
}

guard_verdict guard_code_check(conn *c) {
    srv *s = c->srv;
    if (guard_resume_check(c) == GUARD_THROTTLED) return GUARD_THROTTLED;
    /* The connection's own entry (it counts its connections): none only if
     * memory ran out, and then only the server-wide budget holds. */
    addr_entry *e = entry_of(c, false);
    uint64_t now = uv_now(s->loop);
    addr_bucket *share = e ? &addr_guard_of(e)->codes : NULL;
    if (share && level(share, now, RESUME_ADDR_BURST, RESUME_ADDR_PER_S * 60) < 1)
        return GUARD_ADDR_BUSY;
    if (!resume_attempt_allowed(&s->game)) return GUARD_SERVER_BUSY;
    if (share) {
        take(share, now, RESUME_ADDR_BURST, RESUME_ADDR_PER_S * 60);
        touch(s, e);
        prune(s, now, e);
    }
    return GUARD_OK;
}

bool guard_resume_failed(conn *c) {
    srv *s = c->srv;
    c->failed_resumes++;
    addr_entry *e = s->cfg->resume_burst ? entry_of(c, true) : NULL;
    if (e) { /* else memory ran out: only the per-connection limit holds */
        uint64_t now = uv_now(s->loop);
        addr_guard *g = addr_guard_of(e);
        take(&g->resumes, now, s->cfg->resume_burst, s->cfg->resume_per_min);
        touch(s, e);
        if (g->resumes.tokens < 1 && !g->resumes.warned) {
            g->resumes.warned = true;
            guard_log(s, "too many failed resumes: throttling the address", conn_peer(c));
        }
        prune(s, now, e);
    }
    bool used_up = s->cfg->resume_tries && c->failed_resumes >= s->cfg->resume_tries;
    if (used_up)
        guard_log(s, "too many failed resumes: closing the connection", conn_peer(c));
    return used_up;
}

unsigned guard_game_start(conn *c) {
    srv *s = c->srv;
    unsigned per_min = s->cfg->max_games_per_min;
    addr_entry *e = per_min ? entry_of(c, true) : NULL;
    if (!e) return 0; /* no limit, or memory ran out: not limited */
    uint64_t now = uv_now(s->loop);
    addr_guard *g = addr_guard_of(e);
    unsigned wait_s = 0;
    if (!take(&g->games, now, per_min, per_min)) {
        /* One game comes back every 60 / per_min seconds. */
        double ms = (1 - g->games.tokens) * 60000.0 / per_min;
        wait_s = (unsigned)(ms / 1000);
        if (wait_s * 1000.0 < ms) wait_s++; /* rounded up: at least 1 */
        if (!g->games.warned) {
            g->games.warned = true;
            guard_log(s, "too many games started: refusing more from the address",
                      conn_peer(c));
        }
    }
    touch(s, e);
    prune(s, now, e);
    return wait_s;
}

unsigned guard_register_check(conn *c) {
    srv *s = c->srv;
    addr_entry *e = entry_of(c, false);
    if (!e) return 0; /* never registered from there, or memory ran out */
    addr_bucket *b = &addr_guard_of(e)->registrations;
    double have = level(b, uv_now(s->loop), GUARD_REGISTER_PER_HOUR, REGISTER_PER_MIN);
    if (have >= 1) return 0;
    double ms = (1 - have) * 60000.0 / REGISTER_PER_MIN;
    unsigned wait_s = (unsigned)(ms / 1000);
    return wait_s * 1000.0 < ms ? wait_s + 1 : (wait_s ? wait_s : 1);
}

void guard_registered(conn *c) {
    srv *s = c->srv;
    addr_entry *e = entry_of(c, true);
    if (!e) return;
    uint64_t now = uv_now(s->loop);
    take(&addr_guard_of(e)->registrations, now, GUARD_REGISTER_PER_HOUR,
         REGISTER_PER_MIN);
    touch(s, e);
    prune(s, now, e);
}

void guard_free(srv *s) {
    while (s->guard_oldest)
        deactivate(s, s->guard_oldest);
}
