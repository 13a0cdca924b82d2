/* takeover.c - failover, above the game: this node's records to the cluster's stream, the
 * races of dead incarnations taken over, and fencing. */
#include "takeover.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "journal.h"
#include "journal_read.h"
#include "metrics.h"
#include "recover.h"

/* How often the loop checks the fence and a takeover's progress. */
#define CHECK_MS 250
/* Largest message published (NATS takes 1 MiB by default): whole records. */
#define CHUNK_BYTES (256u << 10)
/* Longest wait for JetStream's ack of a publish, and for the next record
 * of a stream being read. */
#define PUBLISH_WAIT_MS 2000
#define READ_WAIT_MS    3000
/* An incarnation whose name's presence shows another incarnation is dead
 * only once it has shown so this long: its process (if it still runs) has
 * fenced by then. Renewals are compare-and-set, so a process sees another
 * value at its next renewal and stops, and it fences anyway CLUSTER_FENCE_MS
 * after its last renewal went through; the wait is the TTL, as if the entry
 * had expired. */
#define SUPERSEDED_DEAD_MS CLUSTER_TTL_MS
/* Incarnations whose presence shows another one, tracked at once. */
#define SUPERSEDED_MAX 64
/* The header of the first message of a compacted journal published whole:
 * its length in bytes. Once that many have followed, everything before it
 * on the subject is superseded (and purged). */
#define BASE_HEADER "Race2048-Base"
/* The header of the message a claimer puts on a claimed incarnation's
 * subject before it reads it (its value: the claimer). The incarnation's own
 * publishes each expect the subject's last message to be its previous one,
 * so once this is there it can replicate nothing more: whatever it has not
 * replicated it never shows (a move beyond the sync window, an `end`), and
 * it learns that it was taken over. */
#define CLAIM_HEADER "Race2048-Claimed"
/* NATS's header for a publish's expectation of the subject's last sequence
 * (libnats sends it only when not 0; 0 expects an empty subject). */
#define EXPECT_SUBJECT_SEQ "Nats-Expected-Last-Subject-Sequence"
/* A node judges another incarnation dead only once its own beats have gone
 * through without a gap for the presence TTL: after NATS itself was away
 * (down or hung), every node's presence may have expired meanwhile, and the
 * live ones renew theirs within a beat or two of its return. */
#define SETTLE_MS   CLUSTER_TTL_MS
#define BEAT_GAP_MS (2 * CLUSTER_BEAT_MS + 500)
/* Deleted rooms leave a marker each in the directory bucket: every this many
 * beats the markers older than DIR_MARKER_AGE_S go, so that rooms made and
 * left do not pile up there for ever (a marker's news reached every node
 * when it was put; one that old guards no re-put of its code). */
#define DIR_PURGE_BEATS  10
#define DIR_MARKER_AGE_S 10

/* One takeover at a time, from its claim to its clean-up. */
typedef enum job_state {
    JOB_NONE,
    JOB_CLAIMED,  /* claimed; its records could not be read yet */
    JOB_READY,    /* claimed, records read: for the loop to rebuild */
    JOB_ADOPTING, /* rebuilt: waiting for this journal to make it durable */
    JOB_ADOPTED,  /* durable here: the old entry and records may go */
} job_state;

typedef struct job {
    job_state state;
    char key[128];     /* its registry entry, "inc.NAME.EPOCH" */
    char subject[128]; /* its records */
    char *records;     /* JOB_READY: the bytes read (malloc'd) */
    size_t len;
    uint64_t epoch;  /* this node's incarnation that claimed it */
    uint64_t target; /* JOB_ADOPTING: the journal position to reach */
    int64_t claimed_ms;
} job;

struct takeover {
    cluster *c;
    game *g;
    uv_loop_t *loop;
    void (*give_up)(void *ctx);
    void *give_up_ctx;
    uv_async_t async;
    uv_timer_t check;
    bool started;
    uv_mutex_t lock; /* guards job and stopping */
    job job;
    bool stopping;
    /* Replication (worker thread, one call at a time). */
    uint64_t repl_epoch;    /* the incarnation repl_pos counts for */
    uint64_t repl_pos;      /* bytes of that incarnation published for sure */
    size_t repl_done;       /* of the batch that failed: bytes published for sure */
    size_t repl_unsure;     /* the chunk whose publish failed: its exact length */
    size_t repl_fail_base;  /* the failed batch's base_len */
    uint64_t repl_last_seq; /* the subject's last message, this node's own */
    bool repl_claimed;      /* another node claimed repl_epoch (under lock) */
    uint64_t repl_base_seq; /* the stream sequence of the base's first message */
    uint64_t purge_below;   /* a base is out: its subject's messages before this
                               sequence go (kept while the purge fails) */
    unsigned beats;         /* link's thread: counts to DIR_PURGE_BEATS */
    int64_t beat_end_ms, settled_from_ms; /* SETTLE_MS */
    /* Link thread: incarnations ("NAME.EPOCH") seen superseded, and since
     * when (ms). */
    struct {
        char inc[112];
        int64_t since_ms;
    } superseded[SUPERSEDED_MAX];
    int nsuperseded;
    /* Loop: the name was lost (cluster_name_lost) and that was acted on. */
    void (*name_lost)(void *ctx);
    void *name_lost_ctx;
    bool lost_handled;
    /* Counters (loop). */
    uint64_t takeovers, games, fences;
};

/* -------------------------------------------------------- replication --- */

/* Where a chunk starting at `at` ends: up to CHUNK_BYTES, on a record's end. */
static size_t chunk_end(const char *data, size_t len, size_t at) {
    if (len - at <= CHUNK_BYTES) return len;
    for (size_t e = at + CHUNK_BYTES; e > at; e--)
        if (data[e - 1] == '\n') return e;
    const char *nl = memchr(data + at + CHUNK_BYTES, '\n', len - at - CHUNK_BYTES);
    return nl ? (size_t)(nl - data) + 1 : len; /* one record longer than a chunk */
}

static int publish(takeover *t, const char *subject, const char *data, size_t n,
                   size_t base_len, uint64_t *seq) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = PUBLISH_WAIT_MS;
    /* A retry of a publish whose ack was lost is dropped by JetStream (its
     * duplicate window), not stored twice. */
    char id[160];
    snprintf(id, sizeof id, "%s.%" PRIu64 ".%zu", subject, t->repl_pos, n);
    po.MsgId = id;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, NULL, data, (int)n);
    char value[32];
    if (s == NATS_OK && base_len) {
        snprintf(value, sizeof value, "%zu", base_len);
        s = natsMsgHeader_Set(m, BASE_HEADER, value);
    }
    if (s == NATS_OK) {
        snprintf(value, sizeof value, "%" PRIu64, t->repl_last_seq);
        s = natsMsgHeader_Set(m, EXPECT_SUBJECT_SEQ, value);
    }
    if (s == NATS_OK) s = js_PublishMsg(&ack, cluster_js(t->c), m, &po, &jerr);
    if (s == NATS_OK) {
        t->repl_last_seq = ack->Sequence;
        if (seq) *seq = ack->Sequence;
    }
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    if (s == NATS_OK) return 0;
    if (jerr != JSStreamWrongLastSequenceErr) return -1;
    /* Someone else's message is last: a claimer's (this incarnation is
     * taken over), or this node's own whose ack was lost (its retry is a
     * duplicate JetStream drops by message id). */
    natsMsg *last = NULL;
    if (js_GetLastMsg(&last, cluster_js(t->c), CLUSTER_RECORDS_STREAM, subject, NULL,
                      &jerr) != NATS_OK)
        return -1;
    const char *by = NULL;
    bool claimed = natsMsgHeader_Get(last, CLAIM_HEADER, &by) == NATS_OK;
    if (!claimed) t->repl_last_seq = natsMsg_GetSequence(last);
    natsMsg_Destroy(last);
    if (claimed) {
        uv_mutex_lock(&t->lock);
        t->repl_claimed = true;
        uv_mutex_unlock(&t->lock);
        srv_log(SRV_LOG_WARN, "cluster: %s was claimed by %s: nothing more is replicated",
                subject, by ? by : "?");
    }
    return -1;
}

/* The subject's messages before sequence `below` go (a base superseded them). */
static int purge_before(takeover *t, const char *subject, uint64_t below) {
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Purge.Subject = subject;
    o.Stream.Purge.Sequence = below;
    jsErrCode jerr = 0;
    return js_PurgeStream(cluster_js(t->c), CLUSTER_RECORDS_STREAM, &o, &jerr) == NATS_OK
               ? 0
               : -1;
}

int takeover_replicate(void *ctx, const char *data, size_t len, size_t base_len) {
    takeover *t = ctx;
    uint64_t epoch = cluster_epoch(t->c);
    if (!epoch) return 1; /* fenced: kept for the next incarnation */
    if (epoch != t->repl_epoch) {
        t->repl_epoch = epoch;
        t->repl_pos = 0;
        t->repl_done = t->repl_unsure = 0;
        t->purge_below = 0;
        t->repl_last_seq = 0; /* a new subject */
        uv_mutex_lock(&t->lock);
        t->repl_claimed = false;
        uv_mutex_unlock(&t->lock);
    }
    uv_mutex_lock(&t->lock);
    bool claimed = t->repl_claimed;
    uv_mutex_unlock(&t->lock);
    if (claimed) return -1; /* the loop fences it */
    /* A compaction replaced the batch that failed: this one is new. */
    if (base_len != t->repl_fail_base) t->repl_done = t->repl_unsure = 0;
    char subject[128];
    snprintf(subject, sizeof subject, CLUSTER_RECORDS_SUBJECT "%s.%" PRIu64,
             cluster_name(t->c), epoch);
    /* The journal hands back a failed batch in front of what came since:
     * what went out of it is not sent again; the chunk in doubt is sent
     * again exactly as it was (so that its duplicate is recognised). */
    size_t at = t->repl_done < len ? t->repl_done : len;
    while (at < len) {
        /* A base's chunks end at its end (a record's). */
        size_t upto = at < base_len ? base_len : len;
        size_t end = t->repl_unsure && at + t->repl_unsure <= len
                         ? at + t->repl_unsure
                         : chunk_end(data, upto, at);
        bool first_of_base = base_len && at == 0;
        uint64_t seq = 0;
        if (publish(t, subject, data + at, end - at, first_of_base ? base_len : 0, &seq) <
            0) {
            t->repl_done = at;
            t->repl_unsure = end - at;
            t->repl_fail_base = base_len;
            return -1;
        }
        if (first_of_base) t->repl_base_seq = seq;
        t->repl_unsure = 0;
        t->repl_pos += end - at;
        at = end;
        if (base_len && at == base_len) t->purge_below = t->repl_base_seq;
        /* The base is out whole: what it replaces goes (again at the next
         * call if the purge fails; a reader skips it meanwhile). */
        if (t->purge_below && purge_before(t, subject, t->purge_below) == 0)
            t->purge_below = 0;
    }
    t->repl_done = 0;
    t->repl_fail_base = 0;
    return 0;
}

/* ------------------------------------------------------- link's thread --- */

/* Since when (ms) inc has been seen superseded: now if it was not before. */
static int64_t superseded_since(takeover *t, const char *inc, int64_t now) {
    for (int k = 0; k < t->nsuperseded; k++)
        if (!strcmp(t->superseded[k].inc, inc)) return t->superseded[k].since_ms;
    if (t->nsuperseded == SUPERSEDED_MAX) return now; /* full: never old enough */
    snprintf(t->superseded[t->nsuperseded].inc, sizeof t->superseded[0].inc, "%s", inc);
    t->superseded[t->nsuperseded++].since_ms = now;
    return now;
}

static void superseded_forget(takeover *t, const char *inc) {
    for (int k = 0; k < t->nsuperseded; k++)
        if (!strcmp(t->superseded[k].inc, inc)) {
            t->superseded[k] = t->superseded[--t->nsuperseded];
            return;
        }
}

/* "NAME.EPOCH" alive: the presence entry of NAME shows EPOCH, or shows
 * another incarnation since less than SUPERSEDED_DEAD_MS (the process of
 * EPOCH may not have seen it yet). Dead: the entry is gone (it expired
 * CLUSTER_TTL_MS after its last renewal, when its process had fenced, or it
 * was given back by a planned leave). Unsure (NATS errors) counts as alive:
 * nothing is claimed on a doubt. */
static bool incarnation_alive(takeover *t, const char *inc) {
    const char *dot = strrchr(inc, '.');
    if (!dot || dot == inc) return false;
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)(dot - inc), inc);
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, cluster_presence(t->c), name);
    if (s == NATS_NOT_FOUND) {
        superseded_forget(t, inc);
        return false;
    }
    if (s != NATS_OK) return true;
    const char *v = kvEntry_ValueString(e);
    const char *sp = v ? strchr(v, ' ') : NULL;
    bool shown = sp && strtoull(sp + 1, NULL, 10) == strtoull(dot + 1, NULL, 10);
    kvEntry_Destroy(e);
    if (shown) {
        superseded_forget(t, inc);
        return true;
    }
    int64_t now = (int64_t)(uv_hrtime() / 1000000);
    return now - superseded_since(t, inc, now) < SUPERSEDED_DEAD_MS;
}

/* All records on subject, in order, into *out. 0 or -1. */
/* Puts the claim's marker (CLAIM_HEADER) on subject: the incarnation can
 * publish nothing after it. Its sequence in *seq; 0 or -1. */
static int put_claim_marker(takeover *t, const char *subject, const char *me,
                            uint64_t *seq) {
    natsMsg *m = NULL;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = PUBLISH_WAIT_MS;
    natsStatus s = natsMsg_Create(&m, subject, NULL, NULL, 0);
    if (s == NATS_OK) s = natsMsgHeader_Set(m, CLAIM_HEADER, me);
    if (s == NATS_OK) s = js_PublishMsg(&ack, cluster_js(t->c), m, &po, &jerr);
    if (s == NATS_OK) *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    return s == NATS_OK ? 0 : -1;
}

/* All records on subject up to sequence last_seq (the claim's marker), in
 * order, into *out. 0 or -1. */
static int read_records(takeover *t, const char *subject, uint64_t last_seq, char **out,
                        size_t *outlen) {
    *out = NULL;
    *outlen = 0;
    jsErrCode jerr = 0;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Ordered = true;
    so.Stream = CLUSTER_RECORDS_STREAM;
    so.Config.DeliverPolicy = js_DeliverAll;
    natsSubscription *sub = NULL;
    if (js_SubscribeSync(&sub, cluster_js(t->c), subject, NULL, &so, &jerr) != NATS_OK)
        return -1;
    size_t len = 0, cap = 0;
    char *buf = NULL;
    int rc = 0;
    /* A compacted journal published whole (BASE_HEADER) replaces what came
     * before it once all of it is read; one cut short (its node died while
     * publishing it) is left out, and what came before stands. */
    size_t base_at = 0, base_len = 0;
    uint64_t renewed = uv_hrtime();
    for (;;) {
        /* A long read must not let this node's own presence lapse. */
        if (uv_hrtime() - renewed > (uint64_t)CLUSTER_BEAT_MS * 1000000) {
            cluster_renew(t->c);
            renewed = uv_hrtime();
        }
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, READ_WAIT_MS) != NATS_OK) {
            rc = -1;
            break;
        }
        jsMsgMetaData *meta = NULL;
        uint64_t seq = 0;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
            seq = meta->Sequence.Stream;
            jsMsgMetaData_Destroy(meta);
        }
        size_t n = (size_t)natsMsg_GetDataLength(m);
        const char *claim = NULL;
        if (natsMsgHeader_Get(m, CLAIM_HEADER, &claim) == NATS_OK) n = 0; /* a marker */
        const char *bh = NULL;
        if (natsMsgHeader_Get(m, BASE_HEADER, &bh) == NATS_OK && bh) {
            base_at = len;
            base_len = (size_t)strtoull(bh, NULL, 10);
        }
        if (len + n > cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            while (ncap < len + n)
                ncap *= 2;
            char *p = realloc(buf, ncap);
            if (!p) {
                natsMsg_Destroy(m);
                rc = -1;
                break;
            }
            buf = p;
            cap = ncap;
        }
        if (n) memcpy(buf + len, natsMsg_GetData(m), n); /* buf is NULL until data */
        len += n;
        natsMsg_Destroy(m);
        if (base_len && len - base_at >= base_len) {
            memmove(buf, buf + base_at, len - base_at);
            len -= base_at;
            base_at = base_len = 0;
        }
        if (seq >= last_seq) break;
    }
    if (base_len) len = base_at; /* a base cut short */
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    if (rc < 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *outlen = len;
    return 0;
}

/* Claims one incarnation that is dead and not being taken over by anyone
 * alive: compare-and-set on its entry's revision (one claimer wins). Fills
 * j and returns true if this node won one. */
static bool claim_one(takeover *t, job *j) {
    uint64_t epoch = cluster_epoch(t->c);
    if (!epoch) return false;
    char me[128];
    snprintf(me, sizeof me, "%s.%" PRIu64, cluster_name(t->c), epoch);
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, cluster_owners(t->c), NULL) != NATS_OK) return false;
    /* Incarnations gone from the registry are not tracked any more (the
     * table stays bounded over any number of starts). */
    for (int s = t->nsuperseded - 1; s >= 0; s--) {
        bool listed = false;
        for (int k = 0; k < keys.Count && !listed; k++)
            listed = !strncmp(keys.Keys[k], "inc.", 4) &&
                     !strcmp(keys.Keys[k] + 4, t->superseded[s].inc);
        if (!listed) t->superseded[s] = t->superseded[--t->nsuperseded];
    }
    bool won = false;
    for (int k = 0; k < keys.Count && !won; k++) {
        const char *key = keys.Keys[k];
        if (strncmp(key, "inc.", 4) != 0) continue;
        const char *inc = key + 4;
        if (!strcmp(inc, me)) continue;
        kvEntry *e = NULL;
        if (kvStore_Get(&e, cluster_owners(t->c), key) != NATS_OK) continue;
        const char *v = kvEntry_ValueString(e);
        /* "fenced": the name's holder says that process let go (cluster.c). */
        bool free_to_claim =
            v && (!strcmp(v, CLUSTER_INC_FENCED) ||
                  (!strcmp(v, "live") && !incarnation_alive(t, inc)) ||
                  (!strncmp(v, "claimed:", 8) && strcmp(v + 8, me) != 0 &&
                   !incarnation_alive(t, v + 8)));
        char value[160];
        snprintf(value, sizeof value, "claimed:%s", me);
        uint64_t rev;
        if (free_to_claim && kvStore_UpdateString(&rev, cluster_owners(t->c), key, value,
                                                  kvEntry_Revision(e)) == NATS_OK) {
            won = true;
            *j = (job){.epoch = epoch, .claimed_ms = (int64_t)(uv_hrtime() / 1000000)};
            snprintf(j->key, sizeof j->key, "%s", key);
            snprintf(j->subject, sizeof j->subject, CLUSTER_RECORDS_SUBJECT "%s", inc);
            srv_log(SRV_LOG_INFO, "cluster: claimed incarnation %s (%s)", inc, v);
            superseded_forget(t, inc);
        }
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
    return won;
}

/* The old incarnation is now this node's: its records go, then its entry.
 * False if either failed (tried again at the next beat: an entry left behind
 * would have its games, which may have ended here since, rebuilt again by
 * whoever claims it after this node's death). */
static bool clean_up(takeover *t, const job *j) {
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Purge.Subject = j->subject;
    jsErrCode jerr = 0;
    if (js_PurgeStream(cluster_js(t->c), CLUSTER_RECORDS_STREAM, &o, &jerr) != NATS_OK) {
        srv_log(SRV_LOG_WARN, "cluster: could not purge %s; again", j->subject);
        return false;
    }
    if (kvStore_Delete(cluster_owners(t->c), j->key) != NATS_OK) {
        srv_log(SRV_LOG_WARN, "cluster: could not delete %s; again", j->key);
        return false;
    }
    return true;
}

/* Every DIR_PURGE_BEATS beats: the directory's delete markers older than
 * DIR_MARKER_AGE_S go. Read as the last message of each key (one ordered
 * consumer); each old marker's key is purged up to and including it, so a
 * put of that code since is kept. */
#define DIR_STREAM  "KV_" CLUSTER_ROOMS_BUCKET
#define DIR_KEYS    "$KV." CLUSTER_ROOMS_BUCKET ".>"
#define DIR_PER_RUN 4096 /* markers purged at most per run (the rest next time) */
static void purge_directory(takeover *t) {
    if (++t->beats % DIR_PURGE_BEATS) return;
    jsCtx *js = cluster_js(t->c);
    jsErrCode jerr = 0;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, DIR_STREAM, NULL, &jerr) != NATS_OK) return;
    uint64_t msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    if (!msgs) return;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Ordered = true;
    so.Stream = DIR_STREAM;
    so.Config.DeliverPolicy = js_DeliverLastPerSubject;
    natsSubscription *sub = NULL;
    if (js_SubscribeSync(&sub, js, DIR_KEYS, NULL, &so, &jerr) != NATS_OK) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t cutoff = ((int64_t)ts.tv_sec - DIR_MARKER_AGE_S) * 1000000000 + ts.tv_nsec;
    struct old_marker {
        char subject[sizeof "$KV." CLUSTER_ROOMS_BUCKET "." + 64];
        uint64_t seq;
    } *old = malloc(DIR_PER_RUN * sizeof *old);
    size_t nold = 0;
    for (uint64_t seen = 0; old && seen < msgs; seen++) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, READ_WAIT_MS) != NATS_OK) break;
        jsMsgMetaData *meta = NULL;
        const char *op = NULL;
        bool last = true;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
            last = meta->NumPending == 0;
            if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
                meta->Timestamp < cutoff && nold < DIR_PER_RUN &&
                strlen(natsMsg_GetSubject(m)) < sizeof old[0].subject) {
                snprintf(old[nold].subject, sizeof old[0].subject, "%s",
                         natsMsg_GetSubject(m));
                old[nold++].seq = meta->Sequence.Stream;
            }
            jsMsgMetaData_Destroy(meta);
        }
        natsMsg_Destroy(m);
        if (last) break;
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    for (size_t k = 0; k < nold; k++) {
        jsOptions o;
        jsOptions_Init(&o);
        o.Stream.Purge.Subject = old[k].subject;
        o.Stream.Purge.Sequence = old[k].seq + 1;
        if (js_PurgeStream(js, DIR_STREAM, &o, &jerr) != NATS_OK) break;
    }
    free(old);
}

/* One step of at most one takeover; a new claim only once settled. */
static void beat_step(takeover *t, bool settled) {
    uv_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    job j = t->job;
    if (j.state == JOB_ADOPTED || j.state == JOB_CLAIMED) t->job = (job){0};
    uv_mutex_unlock(&t->lock);
    if (stopping) return;
    /* Not while stopping: the connection is about to close. */
    purge_directory(t);
    if (j.state == JOB_ADOPTED) {
        if (!clean_up(t, &j)) { /* again at the next beat */
            uv_mutex_lock(&t->lock);
            if (t->job.state == JOB_NONE && cluster_epoch(t->c) == j.epoch) t->job = j;
            uv_mutex_unlock(&t->lock);
        }
        return;
    }
    if (j.state == JOB_NONE) {
        if (!settled || !claim_one(t, &j)) return;
    } else if (j.state != JOB_CLAIMED || cluster_epoch(t->c) != j.epoch) {
        return; /* the loop's turn, or a claim that died with its incarnation */
    }
    /* Claimed: nobody else reads it while this incarnation lives. A failed
     * read keeps the claim, and is tried again at the next beat. */
    char me[128];
    snprintf(me, sizeof me, "%s.%" PRIu64, cluster_name(t->c), j.epoch);
    uint64_t marker = 0;
    if (put_claim_marker(t, j.subject, me, &marker) < 0 ||
        read_records(t, j.subject, marker, &j.records, &j.len) < 0) {
        srv_log(SRV_LOG_WARN, "cluster: reading %s failed; again", j.subject);
        j.state = JOB_CLAIMED;
    } else {
        j.state = JOB_READY;
    }
    uv_mutex_lock(&t->lock);
    if (t->stopping || t->job.state != JOB_NONE) {
        free(j.records);
    } else {
        t->job = j;
        if (j.state == JOB_READY) uv_async_send(&t->async);
    }
    uv_mutex_unlock(&t->lock);
}

/* After each beat (link's thread). A gap in the beats (NATS away, or hung):
 * nobody is judged dead until they have gone through for SETTLE_MS again.
 * (A node's first beats follow a connection that just worked: no gap.) */
static void on_beat(void *ctx) {
    takeover *t = ctx;
    int64_t now = (int64_t)(uv_hrtime() / 1000000);
    if (!t->beat_end_ms) /* a node that just joined judges at once, as before */
        t->settled_from_ms = now - SETTLE_MS;
    else if (now - t->beat_end_ms > BEAT_GAP_MS)
        t->settled_from_ms = now;
    beat_step(t, now - t->settled_from_ms >= SETTLE_MS);
    t->beat_end_ms = (int64_t)(uv_hrtime() / 1000000);
}

/* ---------------------------------------------------------------- loop --- */

/* The claimed records become this node's games. */
static void on_records(uv_async_t *a) {
    takeover *t = a->data;
    uv_mutex_lock(&t->lock);
    if (t->stopping || t->job.state != JOB_READY) {
        uv_mutex_unlock(&t->lock);
        return;
    }
    job j = t->job;
    t->job.records = NULL;
    if (cluster_epoch(t->c) != j.epoch) { /* fenced since the claim */
        t->job = (job){0};
        uv_mutex_unlock(&t->lock);
        free(j.records);
        return;
    }
    uv_mutex_unlock(&t->lock);
    jrn_recovery rec = {.next_game = 1, .started_ns = uv_hrtime()};
    jread_line *done = NULL;
    size_t ndone = 0;
    jread_records(j.records ? j.records : "", j.len, &rec, &done, &ndone);
    /* Its finished games are this node's history now (and in its records). */
    for (size_t k = 0; k < ndone; k++)
        journal_adopt_finished(t->g->journal, done[k].line, done[k].len);
    free(done);
    size_t n = recover_adopt(t->g, &rec);
    journal_recovery_free(&rec);
    free(j.records);
    t->takeovers++;
    t->games += n;
    const char *inc = j.key + 4;
    srv_log(SRV_LOG_INFO,
            "cluster: took over incarnation %s: %zu running games from %zu bytes of "
            "records, %.0f ms after the claim",
            inc, n, j.len, (double)((int64_t)(uv_hrtime() / 1000000) - j.claimed_ms));
    uv_mutex_lock(&t->lock);
    t->job.state = JOB_ADOPTING;
    t->job.target = journal_appended_pos(t->g->journal);
    uv_mutex_unlock(&t->lock);
}

static void on_check(uv_timer_t *h) {
    takeover *t = h->data;
    uint64_t epoch;
    int64_t age = cluster_beat_age_ms(t->c, &epoch);
    bool lost = cluster_name_lost(t->c);
    if (lost && !t->lost_handled) {
        /* Another process holds the name (cluster.c logged it): fence, then
         * stop; nothing of this process is in the cluster any more. */
        t->lost_handled = true;
        if (epoch) {
            t->fences++;
            t->give_up(t->give_up_ctx);
            journal_fence(t->g->journal);
            cluster_fence(t->c, epoch);
        }
        uv_mutex_lock(&t->lock);
        free(t->job.records);
        t->job = (job){0};
        t->stopping = true;
        uv_mutex_unlock(&t->lock);
        if (t->name_lost) t->name_lost(t->name_lost_ctx);
        return;
    }
    if (lost) return;
    uv_mutex_lock(&t->lock);
    bool claimed = t->repl_claimed && t->repl_epoch == epoch;
    uv_mutex_unlock(&t->lock);
    bool broken = journal_replication_broken(t->g->journal);
    if (epoch && (age > CLUSTER_FENCE_MS || claimed || broken)) {
        if (broken)
            srv_log(SRV_LOG_WARN,
                    "cluster: records were dropped before they could be replicated: "
                    "this node gives its rooms up and rejoins as a new incarnation");
        else if (claimed)
            srv_log(SRV_LOG_WARN,
                    "cluster: another node took this incarnation over: this node gives "
                    "its rooms up (their players resume there) and rejoins as a new "
                    "incarnation");
        else
            srv_log(SRV_LOG_WARN,
                    "cluster: no presence renewed for %lld ms: this node gives its rooms "
                    "up (another takes them over from their records) and rejoins as a "
                    "new incarnation once NATS answers",
                    (long long)age);
        t->fences++;
        t->give_up(t->give_up_ctx);
        journal_fence(t->g->journal);
        cluster_fence(t->c, epoch);
        uv_mutex_lock(&t->lock);
        free(t->job.records);
        t->job = (job){0}; /* its claim dies with the incarnation */
        uv_mutex_unlock(&t->lock);
        return;
    }
    bool wake = false;
    uv_mutex_lock(&t->lock);
    if (t->job.state == JOB_ADOPTING &&
        journal_durable_pos(t->g->journal) >= t->job.target) {
        t->job.state = JOB_ADOPTED;
        wake = true;
    }
    uv_mutex_unlock(&t->lock);
    if (wake) cluster_wake(t->c);
}

takeover *takeover_new(cluster *c) {
    takeover *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (uv_mutex_init(&t->lock) < 0) {
        free(t);
        return NULL;
    }
    t->c = c;
    return t;
}

int takeover_start(takeover *t, game *g, uv_loop_t *loop, void (*give_up)(void *ctx),
                   void *ctx) {
    t->g = g;
    t->loop = loop;
    t->give_up = give_up;
    t->give_up_ctx = ctx;
    if (uv_async_init(loop, &t->async, on_records) < 0) return -1;
    t->async.data = t;
    uv_unref((uv_handle_t *)&t->async);
    uv_timer_init(loop, &t->check);
    t->check.data = t;
    uv_timer_start(&t->check, on_check, CHECK_MS, CHECK_MS);
    uv_unref((uv_handle_t *)&t->check);
    t->started = true;
    cluster_on_beat(t->c, on_beat, t);
    return 0;
}

void takeover_on_name_lost(takeover *t, void (*fn)(void *ctx), void *ctx) {
    t->name_lost = fn;
    t->name_lost_ctx = ctx;
}

void takeover_stop(takeover *t) {
    if (!t) return;
    uv_mutex_lock(&t->lock);
    t->stopping = true;
    uv_mutex_unlock(&t->lock);
    if (t->started) uv_timer_stop(&t->check);
}

void takeover_free(takeover *t) {
    if (!t) return;
    free(t->job.records);
    uv_mutex_destroy(&t->lock);
    free(t);
}

void takeover_write_metrics(metrics_out *o, void *ctx) {
    takeover *t = ctx;
    metrics_one(o, "race2048_cluster_takeovers_total", "counter",
                "Incarnations of other nodes (or earlier ones of this node) whose "
                "races this node took over.",
                t->takeovers);
    metrics_one(o, "race2048_cluster_games_taken_over_total", "counter",
                "Running games rebuilt here from another incarnation's records.",
                t->games);
    metrics_one(o, "race2048_cluster_fences_total", "counter",
                "Times this node lost the cluster and gave its rooms up.", t->fences);
}
