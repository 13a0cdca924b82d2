/* cluster.c - the cluster link: this node's presence in NATS, the nodes it sees alive,
 * and the number that keeps its ids apart from other nodes'. */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

#include "metrics.h"

#define NODES_BUCKET "race2048-nodes"
#define IDS_BUCKET   "race2048-ids"
/* How long the first connection may take before start-up fails. */
#define CONNECT_TIMEOUT_MS 3000
#define JS_WAIT_MS         2000
/* Beats that went through further apart than this had a break between them
 * (NATS hung without the library noticing): the link is steady again only
 * from the later one on (the same bound as takeover's). */
#define LINK_GAP_MS (2 * CLUSTER_BEAT_MS + 500)

struct cluster {
    char name[64];
    unsigned number;
    natsConnection *nc;
    jsCtx *js;
    kvStore *nodes;  /* presence: node name -> "NUMBER EPOCH"; entries expire */
    kvStore *ids;    /* node numbers: "n<number>" -> node name, claimed by create;
                        "starts.NAME" -> the node's incarnations so far */
    kvStore *owners; /* incarnations: "inc.NAME.EPOCH" -> live or claimed:... */
    uint64_t first_epoch;
    uint64_t next_epoch; /* link thread: counted while fenced, not yet put */
    uint64_t registered; /* link thread: the epoch whose registry entry is in */
    /* link thread: the revision of this process's last presence write that
     * went through (renewals are compare-and-set on it), and that write's
     * value; 0 and "" before the first. */
    uint64_t presence_rev;
    char presence_value[48];
    void (*on_beat)(void *ctx);
    void *on_beat_ctx;
    void (*on_close)(void *ctx);
    void *on_close_ctx;
    uv_thread_t thread;
    uv_mutex_t lock; /* guards what follows */
    uv_cond_t wake;
    bool stop;
    unsigned alive;
    bool connected;
    cluster_node_name names[CLUSTER_NAMES_MAX]; /* the live nodes, sorted */
    int nnames;
    uint64_t epoch;       /* the current incarnation; 0 while fenced */
    bool name_lost;       /* another process wrote this node's presence entry */
    int64_t last_beat_ms; /* when the last presence put that succeeded was sent */
    /* Since when the link has been in the cluster without a break (a lost
     * connection, or a gap in the beats); 0 while it is not in. */
    int64_t steady_since_ms;
    unsigned breaks; /* of the link since it joined */
    /* Player ids: the block in use is the game's; the next one is claimed
     * ahead on the link's thread (0: none yet, or NATS away). */
    uint64_t first_block, spare_block;
};

static int name_cmp(const void *a, const void *b) {
    return strcmp(a, b);
}

static int64_t now_ms(void) {
    return (int64_t)(uv_hrtime() / 1000000);
}

/* The link is out of the cluster (c->lock held): a break, if it was in. */
static void link_broken(cluster *c) {
    if (c->steady_since_ms) c->breaks++;
    c->steady_since_ms = 0;
}

static void set_err(char *err, size_t errlen, const char *what, natsStatus s) {
    snprintf(err, errlen, "%s: %s", what, natsStatus_GetText(s));
}

/* Makes the bucket, or binds it if another node made it first. */
static natsStatus bucket(kvStore **kv, jsCtx *js, const char *name, int64_t ttl_ms) {
    kvConfig cfg;
    kvConfig_Init(&cfg);
    cfg.Bucket = name;
    cfg.History = 1;
    cfg.TTL = ttl_ms * 1000000; /* libnats takes nanoseconds */
    natsStatus s = js_CreateKeyValue(kv, js, &cfg);
    if (s == NATS_OK) return s;
    return js_KeyValue(kv, js, name);
}

/* The node's number: the one recorded for its name, else the first free one,
 * claimed by create (if two nodes race for a number, one create fails and
 * that node tries the next). */
static natsStatus claim_number(cluster *c) {
    char key[96];
    snprintf(key, sizeof key, "name.%s", c->name);
    kvEntry *e = NULL;
    if (kvStore_Get(&e, c->ids, key) == NATS_OK) {
        c->number = (unsigned)strtoul(kvEntry_ValueString(e), NULL, 10);
        kvEntry_Destroy(e);
        if (c->number >= 1 && c->number <= CLUSTER_NODE_MAX) return NATS_OK;
    }
    for (unsigned n = 1; n <= CLUSTER_NODE_MAX; n++) {
        char nkey[32], value[16];
        snprintf(nkey, sizeof nkey, "n%u", n);
        uint64_t rev;
        if (kvStore_CreateString(&rev, c->ids, nkey, c->name) != NATS_OK) continue;
        snprintf(value, sizeof value, "%u", n);
        natsStatus s = kvStore_CreateString(&rev, c->ids, key, value);
        if (s != NATS_OK) return s;
        c->number = n;
        return NATS_OK;
    }
    return NATS_INSUFFICIENT_BUFFER;
}

/* A new incarnation: the node's count of starts, raised by compare-and-set
 * (two processes under one name each get their own). */
static natsStatus new_incarnation(cluster *c, uint64_t *epoch) {
    char key[96], value[32];
    snprintf(key, sizeof key, "starts.%s", c->name);
    natsStatus s = NATS_ERR;
    for (int tries = 0; tries < 20; tries++) {
        kvEntry *e = NULL;
        uint64_t rev = 0;
        s = kvStore_Get(&e, c->ids, key);
        if (s == NATS_NOT_FOUND) {
            *epoch = 1;
            s = kvStore_CreateString(&rev, c->ids, key, "1");
        } else if (s == NATS_OK) {
            *epoch = strtoull(kvEntry_ValueString(e), NULL, 10) + 1;
            snprintf(value, sizeof value, "%llu", (unsigned long long)*epoch);
            s = kvStore_UpdateString(&rev, c->ids, key, value, kvEntry_Revision(e));
            kvEntry_Destroy(e);
        }
        if (s == NATS_OK) break;
        if (natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED) return s;
    }
    return s;
}

/* The incarnation is registered only once its presence is in: a survivor
 * that saw the entry before the presence would take it for dead. */
static natsStatus register_incarnation(cluster *c, uint64_t epoch) {
    char key[96];
    snprintf(key, sizeof key, "inc.%s.%llu", c->name, (unsigned long long)epoch);
    uint64_t rev;
    natsStatus s = kvStore_PutString(&rev, c->owners, key, "live");
    if (s == NATS_OK) c->registered = epoch;
    return s;
}

/* The stream of the incarnations' records, made or bound. */
static natsStatus records_stream(cluster *c) {
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = CLUSTER_RECORDS_STREAM;
    const char *subjects[] = {CLUSTER_RECORDS_SUBJECT ">"};
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    jsStreamInfo *si = NULL;
    natsStatus s = js_AddStream(&si, c->js, &cfg, NULL, NULL);
    if (s != NATS_OK)
        s = js_GetStreamInfo(&si, c->js, CLUSTER_RECORDS_STREAM, NULL, NULL);
    jsStreamInfo_Destroy(si);
    return s;
}

/* Why a presence write did not go through. */
typedef enum presence_result {
    PRESENCE_OK,
    PRESENCE_FAILED, /* NATS did not answer (or answered an error): a missed beat */
    PRESENCE_TAKEN,  /* the entry holds another process's value */
} presence_result;

/* Writes value as this node's presence, by compare-and-set on the revision of
 * this process's last write (or by create when there was none), so that two
 * processes can never both hold the name: the second write of two on one
 * revision fails. A failed write is looked into: the entry holding a value
 * this process wrote (an acknowledgement lost on the way) is adopted and
 * written again; another value is another process's (TAKEN). An entry that
 * is gone (it expired while NATS was away or hung) is created again, by
 * create, so that a process that took the name meanwhile wins: a live
 * incarnation whose entry lapsed may have been claimed since, but then the
 * claimer's marker on its records subject stops its next replication
 * (takeover.c) and it fences at once. Link thread only. */
static presence_result write_presence(cluster *c, const char *value) {
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t rev = 0;
        natsStatus s =
            c->presence_rev
                ? kvStore_UpdateString(&rev, c->nodes, c->name, value, c->presence_rev)
                : kvStore_CreateString(&rev, c->nodes, c->name, value);
        if (s == NATS_OK) {
            c->presence_rev = rev;
            snprintf(c->presence_value, sizeof c->presence_value, "%s", value);
            return PRESENCE_OK;
        }
        kvEntry *e = NULL;
        s = kvStore_Get(&e, c->nodes, c->name);
        if (s == NATS_NOT_FOUND) {
            c->presence_rev = 0; /* created afresh on the next attempt */
            continue;
        }
        if (s != NATS_OK) return PRESENCE_FAILED;
        const char *held = kvEntry_ValueString(e);
        bool ours = held && (!strcmp(held, value) ||
                             (c->presence_value[0] && !strcmp(held, c->presence_value)));
        uint64_t held_rev = kvEntry_Revision(e);
        kvEntry_Destroy(e);
        if (!ours) return PRESENCE_TAKEN;
        if (held_rev == c->presence_rev) return PRESENCE_FAILED; /* the write failed */
        c->presence_rev = held_rev; /* this process's write, its ack lost */
    }
    return PRESENCE_FAILED;
}

/* At start: the name is this process's only if its presence entry can be
 * created. An entry already there is a live node's if it is renewed
 * (its revision moves within a few beats); a dead node's expires within
 * CLUSTER_TTL_MS (a node restarted at once after kill -9 waits for that).
 * 0, or -1 with why in err. Blocking. */
static int hold_name(cluster *c, char *err, size_t errlen) {
    char value[48];
    snprintf(value, sizeof value, "%u %llu", c->number, (unsigned long long)c->epoch);
    int64_t deadline = now_ms() + CLUSTER_TTL_MS + 2 * CLUSTER_BEAT_MS;
    uint64_t seen_rev = 0;
    bool told = false;
    for (;;) {
        uint64_t rev = 0;
        natsStatus s = kvStore_CreateString(&rev, c->nodes, c->name, value);
        if (s == NATS_OK) {
            c->presence_rev = rev;
            snprintf(c->presence_value, sizeof c->presence_value, "%s", value);
            return 0;
        }
        kvEntry *e = NULL;
        s = kvStore_Get(&e, c->nodes, c->name);
        if (s == NATS_OK) {
            uint64_t r = kvEntry_Revision(e);
            kvEntry_Destroy(e);
            if (seen_rev && r != seen_rev) break; /* renewed: a live node has it */
            seen_rev = r;
            if (!told)
                srv_log(SRV_LOG_INFO,
                        "node name %s: its presence entry is there; waiting up to %d s "
                        "to see whether its process is alive",
                        c->name, (CLUSTER_TTL_MS + 2 * CLUSTER_BEAT_MS) / 1000);
            told = true;
        } else if (s != NATS_NOT_FOUND) {
            set_err(err, errlen, "reading the presence of this node's name", s);
            return -1;
        }
        if (now_ms() > deadline) break;
        uv_sleep(CLUSTER_BEAT_MS / 4);
    }
    snprintf(err, errlen,
             "the node name \"%s\" is held by a live node of this cluster (its presence "
             "is renewed): give this process a name of its own with --node NAME (the "
             "default is the host name, so two nodes on one host need --node)",
             c->name);
    return -1;
}

/* The registry entries of this name's earlier incarnations still marked
 * live are marked fenced: this process holds the name now, so their
 * processes have let go (their presence lapsed or was given back, or this
 * process fenced them), and survivors may take them over at once instead of
 * waiting out a superseded presence (takeover.c). Best effort. */
static void retire_earlier(cluster *c, uint64_t epoch) {
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, c->owners, NULL) != NATS_OK) return;
    char prefix[96];
    int plen = snprintf(prefix, sizeof prefix, "inc.%s.", c->name);
    for (int k = 0; k < keys.Count; k++) {
        const char *key = keys.Keys[k];
        if (strncmp(key, prefix, (size_t)plen) != 0) continue;
        const char *digits = key + plen;
        if (!*digits || strspn(digits, "0123456789") != strlen(digits)) continue;
        if (strtoull(digits, NULL, 10) >= epoch) continue;
        kvEntry *e = NULL;
        if (kvStore_Get(&e, c->owners, key) != NATS_OK) continue;
        uint64_t rev;
        if (!strcmp(kvEntry_ValueString(e), "live"))
            (void)kvStore_UpdateString(&rev, c->owners, key, CLUSTER_INC_FENCED,
                                       kvEntry_Revision(e));
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
}

/* Renews the presence entry and counts the live ones; a fenced node first
 * starts a new incarnation. True if the node is in the cluster now. Link
 * thread only. */
static bool renew(cluster *c) {
    uv_mutex_lock(&c->lock);
    if (c->name_lost) { /* another process's name now: nothing more is written */
        uv_mutex_unlock(&c->lock);
        return false;
    }
    bool fenced = c->epoch == 0;
    uint64_t epoch = c->epoch;
    uv_mutex_unlock(&c->lock);
    if (fenced) {
        if (!c->next_epoch && new_incarnation(c, &c->next_epoch) != NATS_OK)
            c->next_epoch = 0;
        epoch = c->next_epoch;
        if (!epoch) {
            uv_mutex_lock(&c->lock);
            c->alive = 0;
            c->connected = false;
            link_broken(c);
            uv_mutex_unlock(&c->lock);
            return false;
        }
    }
    char value[48];
    snprintf(value, sizeof value, "%u %llu", c->number, (unsigned long long)epoch);
    int64_t sent = now_ms();
    presence_result pr = write_presence(c, value);
    if (pr == PRESENCE_FAILED &&
        natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED) {
        /* NATS is back but the bucket may not be (a server that lost its
         * store): make it again; the next beat writes. */
        kvStore *fresh = NULL;
        if (bucket(&fresh, c->js, NODES_BUCKET, CLUSTER_TTL_MS) == NATS_OK) {
            kvStore_Destroy(c->nodes);
            c->nodes = fresh;
        }
    }
    if (pr == PRESENCE_TAKEN) {
        srv_log(SRV_LOG_ERROR,
                "cluster: the presence entry of node name \"%s\" was written by another "
                "process: that process holds the name now; this one gives its rooms up "
                "and stops (give each process its own --node NAME)",
                c->name);
        uv_mutex_lock(&c->lock);
        c->name_lost = true;
        c->connected = false;
        link_broken(c);
        c->alive = 0;
        c->nnames = 0;
        uv_mutex_unlock(&c->lock);
        return false;
    }
    bool ok = pr == PRESENCE_OK;
    unsigned alive = 0;
    cluster_node_name names[CLUSTER_NAMES_MAX];
    int nnames = 0;
    if (ok) {
        kvKeysList keys = {0};
        if (kvStore_Keys(&keys, c->nodes, NULL) == NATS_OK) {
            alive = (unsigned)keys.Count;
            for (int i = 0; i < keys.Count && nnames < CLUSTER_NAMES_MAX; i++)
                snprintf(names[nnames++], sizeof names[0], "%s", keys.Keys[i]);
            qsort(names, (size_t)nnames, sizeof names[0], name_cmp);
            kvKeysList_Destroy(&keys);
        } else {
            ok = false;
        }
    }
    if (ok && c->registered != epoch) {
        if (register_incarnation(c, epoch) != NATS_OK)
            ok = false;
        else
            retire_earlier(c, epoch);
    }
    uv_mutex_lock(&c->lock);
    bool gap = ok && sent - c->last_beat_ms > LINK_GAP_MS;
    if (ok && fenced && c->epoch == 0) {
        c->epoch = epoch; /* the new incarnation is live: its presence is in */
        c->next_epoch = 0;
        srv_log(SRV_LOG_INFO, "node %s is back in the cluster as incarnation %llu",
                c->name, (unsigned long long)epoch);
    }
    if (ok && c->epoch == epoch) c->last_beat_ms = sent;
    c->alive = ok ? alive : 0;
    c->nnames = ok ? nnames : 0;
    memcpy(c->names, names, sizeof names[0] * (size_t)nnames);
    c->connected = ok && c->epoch == epoch &&
                   natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED;
    bool in = c->connected;
    if (!in)
        link_broken(c);
    else if (!c->steady_since_ms || gap) {
        if (gap && c->steady_since_ms) c->breaks++;
        c->steady_since_ms = now_ms();
    }
    uv_mutex_unlock(&c->lock);
    return in;
}

void cluster_renew(cluster *c) {
    (void)renew(c);
}

/* A beat: the presence, then (in the cluster) the claims' step. */
/* Claims the next CLUSTER_ID_BLOCK player ids: the counter "players.next"
 * grows by compare-and-set, so each block is one node's. Blocking. */
static natsStatus claim_block(cluster *c, uint64_t *first) {
    for (int attempt = 0; attempt < 16; attempt++) {
        kvEntry *e = NULL;
        uint64_t rev, at = 1;
        char value[32];
        natsStatus s = kvStore_Get(&e, c->ids, "players.next");
        if (s == NATS_NOT_FOUND) {
            snprintf(value, sizeof value, "%llu",
                     (unsigned long long)(at + CLUSTER_ID_BLOCK));
            s = kvStore_CreateString(&rev, c->ids, "players.next", value);
        } else if (s == NATS_OK) {
            at = strtoull(kvEntry_ValueString(e), NULL, 10);
            uint64_t last = kvEntry_Revision(e);
            kvEntry_Destroy(e);
            snprintf(value, sizeof value, "%llu",
                     (unsigned long long)(at + CLUSTER_ID_BLOCK));
            s = at ? kvStore_UpdateString(&rev, c->ids, "players.next", value, last)
                   : NATS_ERR;
        }
        if (s == NATS_OK) {
            *first = at;
            return NATS_OK;
        }
        if (natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED) return s;
    }
    return NATS_ERR; /* lost the race 16 times: the next beat tries again */
}

static void beat(cluster *c) {
    if (natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED) {
        /* Every call would wait out its timeout: a stop must not wait for
         * them, and the fence counts from the last beat that went through. */
        uv_mutex_lock(&c->lock);
        c->connected = false;
        link_broken(c);
        c->alive = 0;
        c->nnames = 0;
        uv_mutex_unlock(&c->lock);
        return;
    }
    uv_mutex_lock(&c->lock);
    bool want_block = !c->spare_block;
    uv_mutex_unlock(&c->lock);
    uint64_t block;
    if (want_block && claim_block(c, &block) == NATS_OK) {
        uv_mutex_lock(&c->lock);
        c->spare_block = block;
        uv_mutex_unlock(&c->lock);
    }
    if (!renew(c)) return;
    uv_mutex_lock(&c->lock);
    void (*fn)(void *) = c->on_beat;
    void *ctx = c->on_beat_ctx;
    uv_mutex_unlock(&c->lock);
    if (fn) fn(ctx);
}

static void link_thread(void *arg) {
    cluster *c = arg;
    uv_mutex_lock(&c->lock);
    while (!c->stop) {
        uv_mutex_unlock(&c->lock);
        beat(c);
        uv_mutex_lock(&c->lock);
        if (!c->stop) uv_cond_timedwait(&c->wake, &c->lock, CLUSTER_BEAT_MS * 1000000ull);
    }
    uv_mutex_unlock(&c->lock);
}

static void on_disconnected(natsConnection *nc, void *closure) {
    cluster *c = closure;
    (void)nc;
    uv_mutex_lock(&c->lock);
    c->connected = false;
    link_broken(c); /* every subscription of this link is gone */
    c->alive = 0;
    c->nnames = 0;
    uv_mutex_unlock(&c->lock);
}

int cluster_kv_bucket(cluster *c, const char *name, int64_t ttl_ms, kvStore **out) {
    return bucket(out, c->js, name, ttl_ms) == NATS_OK ? 0 : -1;
}

cluster *cluster_open(const char *url, const char *name, char *err, size_t errlen) {
    cluster *c = calloc(1, sizeof *c);
    natsOptions *opts = NULL;
    natsStatus s;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (uv_mutex_init(&c->lock) < 0) { /* first: libnats's callbacks take it */
        snprintf(err, errlen, "out of memory");
        free(c);
        return NULL;
    }
    uv_cond_init(&c->wake);
    snprintf(c->name, sizeof c->name, "%s", name);
    if ((s = natsOptions_Create(&opts)) != NATS_OK ||
        (s = natsOptions_SetURL(opts, url)) ||
        (s = natsOptions_SetTimeout(opts, CONNECT_TIMEOUT_MS)) ||
        (s = natsOptions_SetMaxReconnect(opts, -1)) ||
        (s = natsOptions_SetReconnectWait(opts, 250)) ||
        /* A NATS server that hangs (not closed) is noticed in ~3 s, not minutes. */
        (s = natsOptions_SetPingInterval(opts, 1000)) ||
        (s = natsOptions_SetMaxPingsOut(opts, 2)) ||
        (s = natsOptions_SetDisconnectedCB(opts, on_disconnected, c))) {
        set_err(err, errlen, "NATS options", s);
        goto fail;
    }
    if ((s = natsConnection_Connect(&c->nc, opts)) != NATS_OK) {
        snprintf(err, errlen, "cannot reach NATS at %s: %s", url, natsStatus_GetText(s));
        goto fail;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    /* A KV or JetStream call waits this long for NATS at most (the default
     * is 5 s): a beat stuck on a hung NATS must not outlast the fence. */
    jo.Wait = JS_WAIT_MS;
    if ((s = natsConnection_JetStream(&c->js, c->nc, &jo)) != NATS_OK) {
        set_err(err, errlen, "JetStream", s);
        goto fail;
    }
    if ((s = bucket(&c->nodes, c->js, NODES_BUCKET, CLUSTER_TTL_MS)) != NATS_OK ||
        (s = bucket(&c->ids, c->js, IDS_BUCKET, 0)) != NATS_OK ||
        (s = bucket(&c->owners, c->js, CLUSTER_OWNERS_BUCKET, 0)) != NATS_OK ||
        (s = records_stream(c)) != NATS_OK) {
        set_err(err, errlen, "NATS KV (is JetStream enabled, -js?)", s);
        goto fail;
    }
    if ((s = claim_number(c)) != NATS_OK) {
        set_err(err, errlen, "claiming a node number", s);
        goto fail;
    }
    if ((s = new_incarnation(c, &c->first_epoch)) != NATS_OK) {
        set_err(err, errlen, "registering this start of the node", s);
        goto fail;
    }
    c->epoch = c->first_epoch;
    if (hold_name(c, err, errlen) < 0) goto fail;
    c->last_beat_ms = now_ms();
    if ((s = claim_block(c, &c->first_block)) != NATS_OK) {
        set_err(err, errlen, "claiming player ids", s);
        goto fail;
    }
    beat(c);
    if (c->registered != c->epoch) {
        snprintf(err, errlen, "registering this start of the node in NATS KV failed");
        goto fail;
    }
    if (uv_thread_create(&c->thread, link_thread, c) < 0) {
        snprintf(err, errlen, "cannot start the cluster link's thread");
        goto fail;
    }
    natsOptions_Destroy(opts);
    return c;
fail:
    natsOptions_Destroy(opts);
    kvStore_Destroy(c->owners);
    kvStore_Destroy(c->ids);
    kvStore_Destroy(c->nodes);
    jsCtx_Destroy(c->js);
    if (c->nc) {
        natsConnection_Close(c->nc);
        natsConnection_Destroy(c->nc);
        /* The library's threads may still run on_disconnected (c->lock):
         * wait for them before c goes (the process is about to exit). */
        nats_CloseAndWait(2000);
    }
    uv_cond_destroy(&c->wake);
    uv_mutex_destroy(&c->lock);
    free(c);
    return NULL;
}

/* A planned leave deletes the presence entry, but only if it is still this
 * process's own last write (a delete marker published on the key's subject
 * with the expected last revision): an entry another process holds by now
 * stays. Best effort (it expires anyway). */
static void give_back_name(cluster *c) {
    if (!c->presence_rev) return;
    char subject[128];
    snprintf(subject, sizeof subject, "$KV." NODES_BUCKET ".%s", c->name);
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, NULL, 0) != NATS_OK) return;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = JS_WAIT_MS;
    po.ExpectLastSubjectSeq = c->presence_rev;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    if (natsMsgHeader_Set(m, "KV-Operation", "DEL") == NATS_OK)
        (void)js_PublishMsg(&ack, c->js, m, &po, &jerr);
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
}

void cluster_close(cluster *c) {
    if (!c) return;
    uv_mutex_lock(&c->lock);
    c->stop = true;
    uv_cond_signal(&c->wake);
    uv_mutex_unlock(&c->lock);
    uv_thread_join(&c->thread);
    /* A planned leave: the others count one node fewer now, not after the TTL
     * (not waited for when NATS is away: the entry expires by itself). */
    if (natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED && !c->name_lost)
        give_back_name(c);
    kvStore_Destroy(c->owners);
    kvStore_Destroy(c->ids);
    kvStore_Destroy(c->nodes);
    jsCtx_Destroy(c->js);
    natsConnection_Close(c->nc);
    /* Closed, nothing is delivered any more: the parts on the link free
     * their subscriptions now, while the library still runs. */
    if (c->on_close) c->on_close(c->on_close_ctx);
    natsConnection_Destroy(c->nc);
    /* The library's threads may still run a callback (on_disconnected, which
     * takes c->lock): wait for them before the lock and c go. */
    nats_CloseAndWait(2000);
    uv_cond_destroy(&c->wake);
    uv_mutex_destroy(&c->lock);
    free(c);
}

void cluster_on_close(cluster *c, void (*fn)(void *ctx), void *ctx) {
    c->on_close = fn;
    c->on_close_ctx = ctx;
}

uint64_t cluster_epoch(cluster *c) {
    uv_mutex_lock(&c->lock);
    uint64_t e = c->epoch;
    uv_mutex_unlock(&c->lock);
    return e;
}

uint64_t cluster_first_ids(const cluster *c, uint64_t *limit) {
    *limit = c->first_block + CLUSTER_ID_BLOCK;
    return c->first_block;
}

bool cluster_next_ids(void *ctx, uint64_t *next, uint64_t *limit) {
    cluster *c = ctx;
    uv_mutex_lock(&c->lock);
    uint64_t block = c->spare_block;
    c->spare_block = 0; /* the link claims another at its next beat */
    uv_mutex_unlock(&c->lock);
    if (block) {
        *next = block;
        *limit = block + CLUSTER_ID_BLOCK;
    } else {
        /* NATS away for a whole block: this start's own range, past any
         * block (long ids, but never another node's). */
        *next = cluster_id_base(c) + 1;
        *limit = 0;
    }
    return true;
}

uint64_t cluster_id_base(const cluster *c) {
    uint64_t inc = c->first_epoch % (1u << (CLUSTER_ID_BITS - CLUSTER_INC_BITS));
    return (uint64_t)c->number << CLUSTER_ID_BITS | inc << CLUSTER_INC_BITS;
}

int64_t cluster_beat_age_ms(cluster *c, uint64_t *epoch) {
    uv_mutex_lock(&c->lock);
    *epoch = c->epoch;
    int64_t age = c->epoch ? now_ms() - c->last_beat_ms : -1;
    uv_mutex_unlock(&c->lock);
    return age;
}

void cluster_fence(cluster *c, uint64_t epoch) {
    uv_mutex_lock(&c->lock);
    if (epoch && c->epoch == epoch) {
        c->epoch = 0;
        c->connected = false;
        link_broken(c);
    }
    uv_mutex_unlock(&c->lock);
}

void cluster_on_beat(cluster *c, void (*fn)(void *ctx), void *ctx) {
    uv_mutex_lock(&c->lock);
    c->on_beat = fn;
    c->on_beat_ctx = ctx;
    uv_mutex_unlock(&c->lock);
}

void cluster_wake(cluster *c) {
    uv_mutex_lock(&c->lock);
    uv_cond_signal(&c->wake);
    uv_mutex_unlock(&c->lock);
}

kvStore *cluster_presence(cluster *c) {
    return c->nodes;
}

kvStore *cluster_owners(cluster *c) {
    return c->owners;
}

unsigned cluster_node_number(const cluster *c) {
    return c->number;
}

unsigned cluster_nodes_alive(cluster *c) {
    uv_mutex_lock(&c->lock);
    unsigned n = c->alive;
    uv_mutex_unlock(&c->lock);
    return n;
}

const char *cluster_name(const cluster *c) {
    return c->name;
}

natsConnection *cluster_nats(cluster *c) {
    return c->nc;
}

jsCtx *cluster_js(cluster *c) {
    return c->js;
}

bool cluster_node_alive(cluster *c, const char *name) {
    uv_mutex_lock(&c->lock);
    bool alive = bsearch(name, c->names, (size_t)c->nnames, sizeof c->names[0], name_cmp);
    uv_mutex_unlock(&c->lock);
    return alive;
}

int cluster_alive_names(cluster *c, cluster_node_name *out, int max) {
    uv_mutex_lock(&c->lock);
    int n = c->nnames < max ? c->nnames : max;
    memcpy(out, c->names, sizeof c->names[0] * (size_t)n);
    uv_mutex_unlock(&c->lock);
    return n;
}

bool cluster_name_lost(cluster *c) {
    uv_mutex_lock(&c->lock);
    bool lost = c->name_lost;
    uv_mutex_unlock(&c->lock);
    return lost;
}

bool cluster_connected(cluster *c) {
    uv_mutex_lock(&c->lock);
    bool up = c->connected;
    uv_mutex_unlock(&c->lock);
    return up;
}

int64_t cluster_steady_ms(cluster *c) {
    uv_mutex_lock(&c->lock);
    int64_t steady =
        c->connected && c->steady_since_ms ? now_ms() - c->steady_since_ms : -1;
    uv_mutex_unlock(&c->lock);
    return steady;
}

unsigned cluster_breaks(cluster *c) {
    uv_mutex_lock(&c->lock);
    unsigned n = c->breaks;
    uv_mutex_unlock(&c->lock);
    return n;
}

void cluster_write_metrics(metrics_out *o, void *ctx) {
    cluster *c = ctx;
    metrics_family(o, "race2048_cluster_nodes", "gauge",
                   "Nodes of the cluster this node sees alive, itself included.");
    metrics_put(o, "race2048_cluster_nodes %u\n", cluster_nodes_alive(c));
    metrics_family(o, "race2048_cluster_connected", "gauge",
                   "1 while this node reaches NATS, else 0.");
    metrics_put(o, "race2048_cluster_connected %d\n", cluster_connected(c) ? 1 : 0);
}
