/* guard.c - brakes on guessing resume tokens: failed resumes are limited per
 * connection and per client address, and logged without flooding the log. */
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many addresses are remembered; past it the one that failed
 * longest ago is forgotten first. */
#define GUARD_MAX_ADDRS 65536
/* Warnings about failed resumes: at most this many lines per second. */
#define GUARD_LOG_PER_S 5

/* An address's key: IPv4 whole, IPv6 by its /64 (one host's usual share). */
typedef struct guard_key {
    uint8_t family;
    uint8_t bytes[16];
} guard_key;

/* One address that failed recently: a token bucket of failures it may make. */
struct guard_addr {
    guard_key key;
    double tokens;     /* failures it may still make now */
    uint64_t updated;  /* loop time (ms) tokens were last brought up to date */
    bool warned;       /* its throttling has been logged */
    UT_hash_handle hh; /* in srv.guard_addrs, least recently failed first */
};

/* --------------------------------------------------------------- logging --- */

static struct {
    uint64_t second;     /* loop time / 1000 of the current window */
    unsigned lines;      /* lines logged in it */
    unsigned suppressed; /* lines not logged since the last one that was */
} log_window;

/* Logs at most GUARD_LOG_PER_S lines a second, counting the rest. */
static void guard_log(srv *s, const char *what, const char *peer) {
    uint64_t second = uv_now(s->loop) / 1000;
    if (second != log_window.second) {
        log_window.second = second;
        log_window.lines = 0;
    }
    if (log_window.lines >= GUARD_LOG_PER_S) {
        log_window.suppressed++;
        return;
    }
    log_window.lines++;
    if (log_window.suppressed)
        srv_log(SRV_LOG_WARN, "%s from %s (and %u such warnings not logged)", what, peer,
                log_window.suppressed);
    else
        srv_log(SRV_LOG_WARN, "%s from %s", what, peer);
    log_window.suppressed = 0;
}

/* ------------------------------------------------------------- addresses --- */

/* c's address key; false if the peer's address cannot be had. */
static bool peer_key(conn *c, guard_key *key) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    memset(key, 0, sizeof *key);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) < 0) return false;
    if (ss.ss_family == AF_INET) {
        key->family = 4;
        memcpy(key->bytes, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const uint8_t *a = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(a, v4mapped, sizeof v4mapped)) { /* an IPv4 client on a v6 socket */
            key->family = 4;
            memcpy(key->bytes, a + 12, 4);
        } else {
            key->family = 6;
            memcpy(key->bytes, a, 8);
        }
        return true;
    }
    return false;
}

/* Brings a's bucket up to now. */
static void refill(const srv *s, struct guard_addr *a, uint64_t now) {
    double per_ms = s->cfg.resume_per_min / 60000.0;
    a->tokens += (double)(now - a->updated) * per_ms;
    if (a->tokens >= s->cfg.resume_burst) {
        a->tokens = s->cfg.resume_burst;
        a->warned = false;
    }
    a->updated = now;
}

static void forget(srv *s, struct guard_addr *a) {
    HASH_DELETE(hh, s->guard_addrs, a);
    free(a);
}

/* Forgets addresses whose bucket is full again (they are no different from
 * addresses never seen), oldest first, and the oldest one while there are
 * too many. A few per call: the cost stays constant. */
static void prune(srv *s, uint64_t now) {
    for (int i = 0; i < 4 && s->guard_addrs; i++) {
        struct guard_addr *oldest = s->guard_addrs;
        refill(s, oldest, now);
        if (oldest->tokens < s->cfg.resume_burst &&
            HASH_COUNT(s->guard_addrs) < GUARD_MAX_ADDRS)
            break;
        forget(s, oldest);
    }
}

static struct guard_addr *find(srv *s, const guard_key *key) {
    struct guard_addr *a = NULL;
    HASH_FIND(hh, s->guard_addrs, key, sizeof *key, a);
    return a;
}

/* ------------------------------------------------------------------- API --- */

guard_verdict guard_resume_check(conn *c) {
    srv *s = c->srv;
    guard_key key;
    if (!s->cfg.resume_burst || !peer_key(c, &key)) return GUARD_OK;
    struct guard_addr *a = find(s, &key);
    if (!a) return GUARD_OK;
    refill(s, a, uv_now(s->loop));
    return a->tokens >= 1 ? GUARD_OK : GUARD_THROTTLED;
}

bool guard_resume_failed(conn *c) {
    srv *s = c->srv;
    c->failed_resumes++;
    guard_key key;
    if (s->cfg.resume_burst && peer_key(c, &key)) {
        uint64_t now = uv_now(s->loop);
        prune(s, now);
        struct guard_addr *a = find(s, &key);
        if (a) {
            refill(s, a, now);
            /* Least recently failed first: move it to the end. */
            HASH_DELETE(hh, s->guard_addrs, a);
        } else if ((a = calloc(1, sizeof *a))) {
            a->key = key;
            a->tokens = s->cfg.resume_burst;
            a->updated = now;
        }
        if (a) {
            int hash_oom = 0;
            HASH_ADD(hh, s->guard_addrs, key, sizeof a->key, a);
            if (hash_oom) {
                free(a);
                a = NULL;
            }
        }
        if (a && a->tokens >= 1) a->tokens -= 1;
        if (a && a->tokens < 1 && !a->warned) {
            a->warned = true;
            guard_log(s, "too many failed resumes: throttling the address", c->peer);
        }
    }
    bool used_up = s->cfg.resume_tries && c->failed_resumes >= s->cfg.resume_tries;
    if (used_up) guard_log(s, "too many failed resumes: closing the connection", c->peer);
    return used_up;
}

void guard_free(srv *s) {
    struct guard_addr *a, *next;
    HASH_ITER(hh, s->guard_addrs, a, next) {
        forget(s, a);
    }
}
