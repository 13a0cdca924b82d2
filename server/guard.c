/* guard.c - brakes on guessing resume tokens: failed resumes are limited per
 * connection and per client address, and logged without flooding the log. */
#include "guard.h"

#include <stdio.h>
#include <string.h>

#include "addr.h"

/* At most this many addresses are remembered as having failed; past it the
 * one that failed longest ago is forgotten first. */
#define GUARD_MAX_ADDRS 65536
/* --------------------------------------------------------------- logging --- */

/* A warning a client caused: within the server's budget of such lines. */
static void guard_log(srv *s, const char *what, const char *peer) {
    srv_log_client(SRV_LOG_WARN, "%s from %s", what, peer);
}

/* ------------------------------------------------------------- addresses --- */

/* c's key in the address table, the one its connections count under too. */
static size_t guard_key(const conn *c, unsigned char key[16]) {
    return addr_key(c->addr, c->addr_len, key);
}

/* Brings e's bucket up to now; a full bucket is no longer active. */
static void refill(const srv *s, addr_guard *g, uint64_t now) {
    g->tokens += (double)(now - g->updated) * s->cfg.resume_per_min / 60000.0;
    if (g->tokens >= s->cfg.resume_burst) {
        g->tokens = s->cfg.resume_burst;
        g->warned = false;
    }
    g->updated = now;
}

/* Takes e out of the list of active entries. */
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
    s->guard_active--;
}

/* e's bucket is full again: out of the list, and out of the table if no
 * connection needs it. */
static void deactivate(srv *s, addr_entry *e) {
    unlink_entry(s, e);
    addr_drop_if_unused(&s->addrs, e);
}

/* Makes e the most recently failed active entry. */
static void touch(srv *s, addr_entry *e) {
    addr_guard *g = addr_guard_of(e);
    if (g->active) {
        if (!g->newer) return; /* already the newest */
        unlink_entry(s, e);
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

/* Forgets addresses whose bucket is full again (they are no different from
 * addresses never seen), oldest first, and the oldest while there are too
 * many. A few per call, so the cost stays constant. `keep` is not freed. */
static void prune(srv *s, uint64_t now, const addr_entry *keep) {
    for (int i = 0; i < 4 && s->guard_oldest && s->guard_oldest != keep; i++) {
        addr_entry *oldest = s->guard_oldest;
        addr_guard *g = addr_guard_of(oldest);
        refill(s, g, now);
        if (g->tokens < s->cfg.resume_burst && s->guard_active <= GUARD_MAX_ADDRS) break;
        deactivate(s, oldest);
    }
}

/* ------------------------------------------------------------------- API --- */

guard_verdict guard_resume_check(conn *c) {
    srv *s = c->srv;
    unsigned char key[16];
    size_t len = guard_key(c, key);
    if (!s->cfg.resume_burst || !len) return GUARD_OK;
    addr_entry *e = addr_get(&s->addrs, key, len, false);
    if (!e || !addr_guard_of(e)->active) return GUARD_OK;
    refill(s, addr_guard_of(e), uv_now(s->loop));
    return addr_guard_of(e)->tokens >= 1 ? GUARD_OK : GUARD_THROTTLED;
}

bool guard_resume_failed(conn *c) {
    srv *s = c->srv;
    c->failed_resumes++;
    unsigned char key[16];
    size_t len = guard_key(c, key);
    addr_entry *e = NULL;
    if (s->cfg.resume_burst && len) e = addr_get(&s->addrs, key, len, true);
    if (e) { /* else memory ran out: only the per-connection limit holds */
        uint64_t now = uv_now(s->loop);
        addr_guard *g = addr_guard_of(e);
        if (g->active) {
            refill(s, g, now);
        } else {
            g->tokens = s->cfg.resume_burst;
            g->updated = now;
        }
        touch(s, e);
        if (g->tokens >= 1) g->tokens -= 1;
        if (g->tokens < 1 && !g->warned) {
            g->warned = true;
            guard_log(s, "too many failed resumes: throttling the address", conn_peer(c));
        }
        prune(s, now, e);
    }
    bool used_up = s->cfg.resume_tries && c->failed_resumes >= s->cfg.resume_tries;
    if (used_up)
        guard_log(s, "too many failed resumes: closing the connection", conn_peer(c));
    return used_up;
}

void guard_free(srv *s) {
    while (s->guard_oldest)
        deactivate(s, s->guard_oldest);
}
