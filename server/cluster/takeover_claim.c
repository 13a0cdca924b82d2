/* takeover_claim.c - the link's thread: dead incarnations claimed, read, cleaned up. */
#include "takeover_internal.h"
#include "byte_buf.h"

#include <time.h>

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
    byte_buf buf = {0};
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
            base_at = buf.len;
            base_len = (size_t)strtoull(bh, NULL, 10);
        }
        if (n && byte_buf_append(&buf, natsMsg_GetData(m), n) < 0) {
            natsMsg_Destroy(m);
            rc = -1;
            break;
        }
        natsMsg_Destroy(m);
        if (base_len && buf.len - base_at >= base_len) {
            memmove(buf.data, buf.data + base_at, buf.len - base_at);
            buf.len -= (uint32_t)base_at;
            base_at = base_len = 0;
        }
        if (seq >= last_seq) break;
    }
    if (base_len) buf.len = (uint32_t)base_at; /* a base cut short */
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    if (rc < 0) {
        byte_buf_free(&buf);
        return -1;
    }
    *out = buf.data; /* the caller frees it */
    *outlen = buf.len;
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
    assert(j->nmembers < JOB_MEMBERS_MAX);
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
void takeover_on_beat(void *ctx) {
    takeover *t = ctx;
    int64_t now = (int64_t)(uv_hrtime() / 1000000);
    if (!t->beat_end_ms) {
        /* A node that just joined judges at once, as before; but if its link
         * has had a break before this first beat (a NATS hang right after it
         * joined, its beats slow to start on a busy machine), every presence
         * may have expired meanwhile: from the link's return on. */
        int64_t steady = cluster_steady_ms(t->c);
        t->settled_from_ms =
            !cluster_breaks(t->c) ? now - SETTLE_MS : now - (steady > 0 ? steady : 0);
    } else if (now - t->beat_end_ms > BEAT_GAP_MS)
        t->settled_from_ms = now;
    beat_step(t, now - t->settled_from_ms >= SETTLE_MS);
    t->beat_end_ms = (int64_t)(uv_hrtime() / 1000000);
}
