/* takeover_replicate.c - this node's records to the cluster's stream (worker thread). */
#include "takeover_internal.h"

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
