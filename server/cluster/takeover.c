/* takeover.c - failover, above the game: this node's records to the cluster's stream, the
 * races of dead incarnations taken over, and fencing. */
#include "takeover.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
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
/* Incarnations taken over as one job at most: a dead incarnation and those it
 * had claimed (and they had, and so on). */
#define JOB_MEMBERS_MAX 32
/* Test-only (inert unless set): a taker waits this many ms between making a
 * takeover durable and cleaning it up, so that a test can kill it in that
 * window (tests/server/test_cluster_takeover.c, test_dead_taker_group). */
#define TEST_PAUSE_ENV "RACE2048_TEST_TAKEOVER_PAUSE_MS"

/* One takeover at a time, from its claim to its clean-up. */
typedef enum job_state {
    JOB_NONE,
    JOB_CLAIMED,  /* claimed; its records could not be read yet */
    JOB_READY,    /* claimed, records read: for the loop to rebuild */
    JOB_ADOPTING, /* rebuilt: waiting for this journal to make it durable */
    JOB_ADOPTED,  /* durable here: the old entry and records may go */
} job_state;

/* One incarnation of a job. */
typedef struct job_member {
    char key[128];     /* its registry entry, "inc.NAME.EPOCH" */
    char subject[128]; /* its records */
    char *records;     /* JOB_READY: the bytes read (malloc'd) */
    size_t len;
} job_member;

/* A dead incarnation (the root, member 0) with every incarnation whose entry
 * says it had claimed them, transitively, in breadth-first order: one
 * takeover. The root holds the newest copies of what it adopted (and the
 * verdicts of what it ended), so a game is rebuilt from the first member
 * that has it, and only once: taken apart, the games a dead taker had
 * adopted would be rebuilt twice (once from its records, once from the
 * records of the incarnation it took them from). */
typedef struct job {
    job_state state;
    int nmembers;
    job_member m[JOB_MEMBERS_MAX];
    uint64_t epoch;  /* this node's incarnation that claimed it */
    uint64_t target; /* JOB_ADOPTING: the journal position to reach */
    int64_t claimed_ms, adopted_ms;
} job;

static void job_free_records(job *j) {
    for (int k = 0; k < j->nmembers; k++) {
        free(j->m[k].records);
        j->m[k].records = NULL;
        j->m[k].len = 0;
    }
}

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
    int64_t test_pause_ms; /* TEST_PAUSE_ENV; 0 unless a test sets it */
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

/* The registry's incarnations, as read for one claim. */
typedef struct inc_entry {
    char *key;       /* "inc.NAME.EPOCH" (the keys list's) */
    char value[160]; /* "" if it could not be read */
    uint64_t rev;
    bool member;
} inc_entry;

/* True if "inc." + inc is among the n entries. */
static bool listed(const inc_entry *es, int n, const char *inc) {
    for (int k = 0; k < n; k++)
        if (!strcmp(es[k].key + 4, inc)) return true;
    return false;
}

/* Adds es[k] to j (compare-and-set of its entry to value at the revision read:
 * one claimer wins). */
static bool claim_member(takeover *t, job *j, inc_entry *e, const char *value) {
    uint64_t rev;
    if (j->nmembers == JOB_MEMBERS_MAX ||
        kvStore_UpdateString(&rev, cluster_owners(t->c), e->key, value, e->rev) !=
            NATS_OK)
        return false;
    job_member *m = &j->m[j->nmembers++];
    *m = (job_member){0};
    snprintf(m->key, sizeof m->key, "%s", e->key);
    snprintf(m->subject, sizeof m->subject, CLUSTER_RECORDS_SUBJECT "%s", e->key + 4);
    e->member = true;
    srv_log(SRV_LOG_INFO, "cluster: claimed incarnation %s (%s)", e->key + 4, e->value);
    superseded_forget(t, e->key + 4);
    return true;
}

/* Claims one incarnation that is dead and not being taken over by anyone
 * alive, with every incarnation it had claimed itself (transitively): they
 * are one job. An entry "claimed:T" whose T still has its entry is never
 * claimed on its own: it goes with T (T is alive and at it, or dead and
 * claimed with it); only once T's entry is gone is it claimed alone. Fills j
 * and returns true if this node won one. */
static bool claim_group(takeover *t, job *j) {
    uint64_t epoch = cluster_epoch(t->c);
    if (!epoch) return false;
    char me[128];
    snprintf(me, sizeof me, "%s.%" PRIu64, cluster_name(t->c), epoch);
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, cluster_owners(t->c), NULL) != NATS_OK) return false;
    /* Incarnations gone from the registry are not tracked any more (the
     * table stays bounded over any number of starts). */
    for (int s = t->nsuperseded - 1; s >= 0; s--) {
        bool found = false;
        for (int k = 0; k < keys.Count && !found; k++)
            found = !strncmp(keys.Keys[k], "inc.", 4) &&
                    !strcmp(keys.Keys[k] + 4, t->superseded[s].inc);
        if (!found) t->superseded[s] = t->superseded[--t->nsuperseded];
    }
    inc_entry *es = calloc(keys.Count ? (size_t)keys.Count : 1, sizeof *es);
    int n = 0;
    for (int k = 0; es && k < keys.Count; k++) {
        if (strncmp(keys.Keys[k], "inc.", 4) != 0) continue;
        inc_entry *e = &es[n++];
        e->key = keys.Keys[k];
        kvEntry *kv = NULL;
        if (kvStore_Get(&kv, cluster_owners(t->c), e->key) != NATS_OK) continue;
        const char *v = kvEntry_ValueString(kv);
        snprintf(e->value, sizeof e->value, "%s", v ? v : "");
        e->rev = kvEntry_Revision(kv);
        kvEntry_Destroy(kv);
    }
    char value[160];
    snprintf(value, sizeof value, "claimed:%s", me);
    bool won = false;
    for (int k = 0; k < n && !won; k++) {
        inc_entry *e = &es[k];
        const char *inc = e->key + 4, *v = e->value;
        if (!strcmp(inc, me) || !v[0]) continue;
        const char *by = !strncmp(v, "claimed:", 8) ? v + 8 : NULL;
        /* "fenced": the name's holder says that process let go (cluster.c). */
        bool free_to_claim = !strcmp(v, CLUSTER_INC_FENCED) ||
                             (!strcmp(v, "live") && !incarnation_alive(t, inc)) ||
                             (by && strcmp(by, me) != 0 && !listed(es, n, by) &&
                              !incarnation_alive(t, by));
        if (!free_to_claim) continue;
        *j = (job){.epoch = epoch, .claimed_ms = (int64_t)(uv_hrtime() / 1000000)};
        if (!claim_member(t, j, e, value)) continue;
        won = true;
        /* Breadth first: what the root had claimed, then what those had. */
        for (int at = 0; at < j->nmembers; at++) {
            char claimed_by[160];
            snprintf(claimed_by, sizeof claimed_by, "claimed:%s", j->m[at].key + 4);
            for (int i = 0; i < n; i++)
                if (!es[i].member && !strcmp(es[i].value, claimed_by) &&
                    !claim_member(t, j, &es[i], value) && j->nmembers == JOB_MEMBERS_MAX)
                    srv_log(SRV_LOG_WARN,
                            "cluster: %s goes alone: more than %d incarnations in one "
                            "takeover",
                            es[i].key + 4, JOB_MEMBERS_MAX);
        }
    }
    free(es);
    kvKeysList_Destroy(&keys);
    return won;
}

/* Deletes an entry of the registry if it is still at revision rev (KV's
 * delete: a marker message, expecting the key's last one to be rev). */
static int delete_at(takeover *t, const char *key, uint64_t rev) {
    char subject[192];
    snprintf(subject, sizeof subject, "$KV." CLUSTER_OWNERS_BUCKET ".%s", key);
    natsMsg *m = NULL;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = PUBLISH_WAIT_MS;
    po.ExpectLastSubjectSeq = rev;
    natsStatus s = natsMsg_Create(&m, subject, NULL, NULL, 0);
    if (s == NATS_OK) s = natsMsgHeader_Set(m, "KV-Operation", "DEL");
    if (s == NATS_OK) s = js_PublishMsg(&ack, cluster_js(t->c), m, &po, &jerr);
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    return s == NATS_OK ? 0 : -1;
}

/* The old incarnations are now this node's: their records go, then their
 * entries (each only while it still says this node claimed it), the root's
 * last. False if any failed (tried again at the next beat: an entry left
 * behind would have its games, which may have ended here since, rebuilt
 * again by whoever claims it after this node's death). */
static bool clean_up(takeover *t, const job *j) {
    char value[160];
    snprintf(value, sizeof value, "claimed:%s.%" PRIu64, cluster_name(t->c), j->epoch);
    for (int k = j->nmembers - 1; k >= 0; k--) {
        const job_member *m = &j->m[k];
        kvEntry *e = NULL;
        natsStatus s = kvStore_Get(&e, cluster_owners(t->c), m->key);
        /* Gone: an earlier try deleted it (its records went before it). */
        if (s == NATS_NOT_FOUND) continue;
        bool ours = s == NATS_OK && kvEntry_ValueString(e) &&
                    !strcmp(kvEntry_ValueString(e), value);
        uint64_t rev = s == NATS_OK ? kvEntry_Revision(e) : 0;
        kvEntry_Destroy(e);
        if (s != NATS_OK) {
            srv_log(SRV_LOG_WARN, "cluster: could not read %s; again", m->key);
            return false;
        }
        if (!ours) { /* not expected: its records are whoever's it names */
            srv_log(SRV_LOG_WARN, "cluster: %s is not this node's claim any more; left",
                    m->key);
            continue;
        }
        jsOptions o;
        jsOptions_Init(&o);
        o.Stream.Purge.Subject = m->subject;
        jsErrCode jerr = 0;
        if (js_PurgeStream(cluster_js(t->c), CLUSTER_RECORDS_STREAM, &o, &jerr) !=
            NATS_OK) {
            srv_log(SRV_LOG_WARN, "cluster: could not purge %s; again", m->subject);
            return false;
        }
        if (delete_at(t, m->key, rev) < 0) {
            srv_log(SRV_LOG_WARN, "cluster: could not delete %s; again", m->key);
            return false;
        }
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
        int64_t now = (int64_t)(uv_hrtime() / 1000000);
        bool paused = t->test_pause_ms && now - j.adopted_ms < t->test_pause_ms;
        if (paused || !clean_up(t, &j)) { /* again at the next beat */
            uv_mutex_lock(&t->lock);
            if (t->job.state == JOB_NONE && cluster_epoch(t->c) == j.epoch) t->job = j;
            uv_mutex_unlock(&t->lock);
        }
        return;
    }
    if (j.state == JOB_NONE) {
        if (!settled || !claim_group(t, &j)) return;
    } else if (j.state != JOB_CLAIMED || cluster_epoch(t->c) != j.epoch) {
        return; /* the loop's turn, or a claim that died with its incarnation */
    }
    /* Claimed: nobody else reads them while this incarnation lives. A
     * failed read keeps the claim, and all are read again at the next beat. */
    char me[128];
    snprintf(me, sizeof me, "%s.%" PRIu64, cluster_name(t->c), j.epoch);
    j.state = JOB_READY;
    for (int k = 0; k < j.nmembers; k++) {
        job_member *m = &j.m[k];
        uint64_t marker = 0;
        if (put_claim_marker(t, m->subject, me, &marker) < 0 ||
            read_records(t, m->subject, marker, &m->records, &m->len) < 0) {
            srv_log(SRV_LOG_WARN, "cluster: reading %s failed; again", m->subject);
            job_free_records(&j);
            j.state = JOB_CLAIMED;
            break;
        }
    }
    uv_mutex_lock(&t->lock);
    if (t->stopping || t->job.state != JOB_NONE) {
        job_free_records(&j);
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

/* Commits (each game's, unique to it) seen in a job's earlier members. */
typedef struct commit_set {
    char (*v)[PROTO_COMMIT_TEXT];
    size_t n, sorted, cap;
} commit_set;

static int commit_cmp(const void *a, const void *b) {
    return strcmp(a, b);
}

static bool commit_seen(const commit_set *cs, const char *commit) {
    return cs->sorted &&
           bsearch(commit, cs->v, cs->sorted, sizeof cs->v[0], commit_cmp) != NULL;
}

/* Adds commit (seen from the next member on; a failure to grow leaves it out,
 * and the game's copy in a later member is then rebuilt as it was before). */
static void commit_add(commit_set *cs, const char *commit) {
    if (cs->n == cs->cap) {
        size_t ncap = cs->cap ? cs->cap * 2 : 64;
        void *p = realloc(cs->v, ncap * sizeof cs->v[0]);
        if (!p) return;
        cs->v = p;
        cs->cap = ncap;
    }
    snprintf(cs->v[cs->n++], sizeof cs->v[0], "%s", commit);
}

/* A member is done: its commits are seen from the next one on. */
static void commit_seal(commit_set *cs) {
    if (cs->n) qsort(cs->v, cs->n, sizeof cs->v[0], commit_cmp);
    cs->sorted = cs->n;
}

/* The commit of a finished game's line into out ("" if it has none). */
static void line_commit(const char *line, size_t len, char out[PROTO_COMMIT_TEXT]) {
    out[0] = '\0';
    json_t *o = json_loadb(line, len, 0, NULL);
    const char *c = json_string_value(json_object_get(o, "commit"));
    if (c && strlen(c) < PROTO_COMMIT_TEXT) snprintf(out, PROTO_COMMIT_TEXT, "%s", c);
    json_decref(o);
}

/* One member's records become this node's games, but for the games an
 * earlier member had (running or finished): those are older copies. Returns
 * how many running games were rebuilt. */
static size_t adopt_member(takeover *t, const job_member *m, commit_set *cs,
                           size_t *skipped) {
    jrn_recovery rec = {.next_game = 1, .started_ns = uv_hrtime()};
    jread_line *done = NULL;
    size_t ndone = 0;
    jread_records(m->records ? m->records : "", m->len, &rec, &done, &ndone);
    /* Its finished games are this node's history now (and in its records). */
    for (size_t k = 0; k < ndone; k++) {
        char commit[PROTO_COMMIT_TEXT];
        line_commit(done[k].line, done[k].len, commit);
        if (commit[0] && commit_seen(cs, commit)) {
            (*skipped)++;
            continue;
        }
        journal_adopt_finished(t->g->journal, done[k].line, done[k].len);
        if (commit[0]) commit_add(cs, commit);
    }
    free(done);
    /* Its running games, but for those seen (rec keeps its games to free). */
    jrn_recovery fresh = rec;
    fresh.games = malloc((rec.ngames ? rec.ngames : 1) * sizeof *fresh.games);
    fresh.ngames = 0;
    for (size_t k = 0; fresh.games && k < rec.ngames; k++) {
        if (commit_seen(cs, rec.games[k].start.commit)) {
            (*skipped)++;
            continue;
        }
        fresh.games[fresh.ngames++] = rec.games[k];
        commit_add(cs, rec.games[k].start.commit);
    }
    size_t n = fresh.games ? recover_adopt(t->g, &fresh) : recover_adopt(t->g, &rec);
    free(fresh.games);
    journal_recovery_free(&rec);
    commit_seal(cs);
    return n;
}

/* The claimed records become this node's games: the root's first, then the
 * others' in the order claimed, each game once. */
static void on_records(uv_async_t *a) {
    takeover *t = a->data;
    uv_mutex_lock(&t->lock);
    if (t->stopping || t->job.state != JOB_READY) {
        uv_mutex_unlock(&t->lock);
        return;
    }
    job j = t->job;
    for (int k = 0; k < t->job.nmembers; k++)
        t->job.m[k].records = NULL;
    if (cluster_epoch(t->c) != j.epoch) { /* fenced since the claim */
        t->job = (job){0};
        uv_mutex_unlock(&t->lock);
        job_free_records(&j);
        return;
    }
    uv_mutex_unlock(&t->lock);
    assert(j.nmembers >= 1);
    commit_set cs = {0};
    size_t n = 0, bytes = 0, skipped = 0;
    for (int k = 0; k < j.nmembers; k++) {
        n += adopt_member(t, &j.m[k], &cs, &skipped);
        bytes += j.m[k].len;
    }
    free(cs.v);
    job_free_records(&j);
    t->takeovers += (uint64_t)j.nmembers;
    t->games += n;
    srv_log(SRV_LOG_INFO,
            "cluster: took over incarnation %s (with %d it had claimed): %zu running "
            "games from %zu bytes of records (%zu older copies left out), %.0f ms after "
            "the claim",
            j.m[0].key + 4, j.nmembers - 1, n, bytes, skipped,
            (double)((int64_t)(uv_hrtime() / 1000000) - j.claimed_ms));
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
        job_free_records(&t->job);
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
        job_free_records(&t->job);
        t->job = (job){0}; /* its claim dies with the incarnation */
        uv_mutex_unlock(&t->lock);
        return;
    }
    bool wake = false;
    uv_mutex_lock(&t->lock);
    if (t->job.state == JOB_ADOPTING &&
        journal_durable_pos(t->g->journal) >= t->job.target) {
        t->job.state = JOB_ADOPTED;
        t->job.adopted_ms = (int64_t)(uv_hrtime() / 1000000);
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
    const char *pause = getenv(TEST_PAUSE_ENV);
    if (pause) t->test_pause_ms = strtoll(pause, NULL, 10);
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
    job_free_records(&t->job);
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
