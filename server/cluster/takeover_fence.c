/* takeover_fence.c - fencing: when a node that lost the cluster gives its rooms up. */
#include "takeover_internal.h"

#include "journal.h"
#include "room.h"
#include "arena_host.h"

void takeover_on_fence(takeover *t, size_t (*close_connections)(void *ctx), void *ctx) {
    t->close_connections = close_connections;
    t->close_ctx = ctx;
}

void takeover_set_remote(takeover *t, remote *r) {
    if (t) t->remote = r;
}

bool takeover_name_lost(const takeover *t) {
    return t && t->lost_handled;
}

/* This node lost the cluster: incarnation epoch lets go of everything. The
 * players of its rooms are told why and their connections closed (by the
 * layer that holds them); the rooms go without an `end` (another node runs
 * their games on from the records). A connection whose output waits for the
 * journal (anyone's: a player who left, a spectator) holds an `end` the
 * cluster's records do not have (the game goes on elsewhere): it is closed
 * at once, so that nobody sees that verdict; the same goes for what the
 * outboxes to other nodes hold for the journal (remote_give_up). Then the
 * journal forgets the games the cluster lacks and the link drops the
 * incarnation, whose claim (if any) dies with it. */
static void fence(takeover *t, uint64_t epoch) {
    assert(epoch != 0);
    t->fences++;
    size_t closed = t->close_connections ? t->close_connections(t->close_ctx) : 0;
    room_give_up_all(t->g);
    arena_host_give_up_all(t->g); /* the node that takes the rooms over runs them */
    if (t->remote) remote_give_up(t->remote);
    srv_log(SRV_LOG_WARN, "cluster: rooms given up, %zu players' connections closed",
            closed);
    journal_fence(t->g->journal);
    cluster_fence(t->c, epoch);
}

/* Another process holds the name (cluster.c logged it): fence, then stop;
 * nothing of this process is in the cluster any more. */
static void lose_name(takeover *t, uint64_t epoch) {
    t->lost_handled = true;
    if (epoch) fence(t, epoch);
    uv_mutex_lock(&t->lock);
    job_free_records(&t->job);
    t->job = (job){0};
    t->stopping = true;
    uv_mutex_unlock(&t->lock);
    if (t->name_lost) t->name_lost(t->name_lost_ctx);
}

bool takeover_fence_if_due(takeover *t) {
    uint64_t epoch;
    int64_t age = cluster_beat_age_ms(t->c, &epoch);
    bool lost = cluster_name_lost(t->c);
    if (lost && !t->lost_handled) {
        lose_name(t, epoch);
        return true;
    }
    if (lost) return true;
    uv_mutex_lock(&t->lock);
    bool claimed = t->repl_claimed && t->repl_epoch == epoch;
    uv_mutex_unlock(&t->lock);
    bool broken = journal_replication_broken(t->g->journal);
    if (!epoch || !(age > CLUSTER_FENCE_MS || claimed || broken)) return false;
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
    fence(t, epoch);
    uv_mutex_lock(&t->lock);
    job_free_records(&t->job);
    t->job = (job){0}; /* its claim dies with the incarnation */
    uv_mutex_unlock(&t->lock);
    return true;
}
