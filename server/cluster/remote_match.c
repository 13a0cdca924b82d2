/* remote_match.c - quick across nodes: the settings' host node, waiters moved there. */
#include "remote_internal.h"

#include "lobby.h"

/* ---------------------------------------------------------- matchmaking --- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The node where `quick` requests with these settings meet: the live node
 * that scores highest for them (the same answer on every node that sees
 * the same nodes; a node that goes moves only its own settings). */
void quick_host(remote *r, const proto_settings *key, char *out) {
    cluster_node_name names[CLUSTER_NAMES_MAX];
    int n =
        cluster_connected(r->c) ? cluster_alive_names(r->c, names, CLUSTER_NAMES_MAX) : 0;
    uint64_t best = 0;
    snprintf(out, NODE_NAME_MAX, "%s", r->name);
    int32_t k[3] = {key->players, key->size, (int32_t)key->target};
    for (int i = 0; i < n; i++) {
        uint64_t score =
            fnv1a(fnv1a(0xcbf29ce484222325ull, names[i], strlen(names[i])), k, sizeof k);
        if (i == 0 || score > best) {
            best = score;
            snprintf(out, NODE_NAME_MAX, "%s", names[i]);
        }
    }
}

static bool local_waiter(const srv_player *p) {
    return !remote_is_guest(p) && !p->home && !p->bot_level;
}

/* Waiters that found no match here in QUICK_MOVE_MS go to their host. */
void quick_move_waiters(remote *r) {
    if (!cluster_connected(r->c) || cluster_nodes_alive(r->c) < 2) return;
    proto_settings keys[32];
    int nkeys = lobby_queue_keys(r->g, keys, 32);
    uint64_t before = now_ms(r) > QUICK_MOVE_MS ? now_ms(r) - QUICK_MOVE_MS : 0;
    for (int i = 0; i < nkeys; i++) {
        char host[NODE_NAME_MAX];
        quick_host(r, &keys[i], host);
        if (!strcmp(host, r->name)) continue;
        srv_player *moving[PROTO_PLAYERS_MAX];
        int n = lobby_queue_take(r->g, &keys[i], local_waiter, before, moving,
                                 PROTO_PLAYERS_MAX);
        for (int j = 0; j < n; j++) {
            remote_home *h = home_new(r, moving[j], host);
            proto_request req = {.type = PROTO_REQ_QUICK, .settings = keys[i]};
            if (h) home_forward(r, h, &req);
        }
    }
}
