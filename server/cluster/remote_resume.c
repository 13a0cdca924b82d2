/* remote_resume.c - a resume whose seat is not here: every node is asked for it. */
#include "remote_internal.h"

#include "lobby.h"

/* Asks every node for h's seat (a round: answered by the seat's messages,
 * or every node's noseat, or REMOTE_FIND_MS). */
static bool ask_round(remote *r, remote_home *h) {
    h->reask_at = 0;
    h->resume_refused = 0;
    h->resume_asked = (int)cluster_nodes_alive(r->c) - 1;
    h->resume_deadline = now_ms(r) + REMOTE_FIND_MS;
    json_t *q = json_pack("{s:s,s:s,s:I,s:b,s:s}", "k", "resume", "from", r->name, "h",
                          (json_int_t)h->handle, "rc", h->p->wants_resume_code,
                          h->resume_by_code ? "c" : "tk", h->resume_key);
    if (!q) return false;
    /* The client's address, so that bots the seat's node seats for it count
     * against the right address. */
    char hex[2 * SINK_ADDR_KEY_MAX + 1];
    remote_addr_hex(h->p, hex);
    if (hex[0]) json_object_set_new(q, "ad", json_string(hex));
    remote_publish(r, FIND_SUBJECT, q);
    json_decref(q);
    return true;
}

bool remote_resume(remote *r, srv_player *p, const proto_request *req) {
    if (!cluster_connected(r->c) || cluster_nodes_alive(r->c) < 2) return false;
    if (p->home) home_release(r, p->home, true);
    remote_home *h = home_new(r, p, "");
    if (!h) return false;
    h->resume_by_code = req->code[0] != '\0';
    snprintf(h->resume_key, sizeof h->resume_key, "%s",
             h->resume_by_code ? req->code : req->token);
    h->resume_until = now_ms(r) + REMOTE_RESUME_WAIT_MS;
    h->introduced = true; /* the node that finds the seat makes its guest */
    if (!ask_round(r, h)) {
        home_release(r, h, false);
        return false;
    }
    return true;
}

void remote_on_resume_failed(remote *r, void (*failed)(srv_player *p, bool by_code)) {
    r->resume_failed = failed;
}

void remote_on_resume_here(remote *r, void (*here)(srv_player *asker, srv_player *seat)) {
    r->resume_here = here;
}

/* A resume that found no seat on any node: its connection is told. */
static void resume_failed(remote *r, remote_home *h) {
    srv_player *p = h->p;
    bool by_code = h->resume_by_code;
    home_release(r, h, false);
    if (r->resume_failed) r->resume_failed(p, by_code);
}

/* A round of h's resume found no seat; silent: a node did not answer (one
 * that has just died). While a node's races may still be taken over (one
 * was seen gone, or one is silent), the resume asks again after
 * REMOTE_REASK_MS, until resume_until; then, or else, it fails. */
static void round_over(remote *r, remote_home *h, bool silent) {
    uint64_t now = now_ms(r);
    bool takeover_due = silent || now < r->takeover_until;
    if (takeover_due && now + REMOTE_REASK_MS < h->resume_until) {
        h->reask_at = now + REMOTE_REASK_MS;
        return;
    }
    resume_failed(r, h);
}

/* The next round of h's resume: this node first (it may be the one that
 * took the race over), then every other node. */
static void reask(remote *r, remote_home *h) {
    srv_player *seat = h->resume_by_code ? lobby_find_by_code(r->g, h->resume_key)
                                         : lobby_find_resumable(r->g, h->resume_key);
    if (seat && r->resume_here) {
        srv_player *p = h->p;
        home_release(r, h, false);
        r->resume_here(p, seat);
        return;
    }
    if (!cluster_connected(r->c) || !ask_round(r, h)) {
        resume_failed(r, h);
        return;
    }
    if (h->resume_asked <= 0) round_over(r, h, false); /* nobody else to ask */
}

/* Resumes whose round is over or that ask again (checked every tick: the
 * answer comes at REMOTE_FIND_MS, not up to a node check later). */
void resume_expire(remote *r) {
    uint64_t now = now_ms(r);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) {
        if (!h->resume_deadline) continue;
        if (h->reask_at) {
            if (now >= h->reask_at) reask(r, h);
        } else if (now >= h->resume_deadline) {
            round_over(r, h, h->resume_refused < h->resume_asked);
        }
    }
}

/* Another node has no seat for a resume of this node's. */
void resume_on_noseat(remote *r, const json_t *op) {
    remote_home *h = home_find(r, (uint64_t)json_integer_value(json_object_get(op, "h")));
    if (h && h->resume_deadline && !h->reask_at && ++h->resume_refused >= h->resume_asked)
        round_over(r, h, false);
}
