/* journal_durable.c - how far the journal is durable: its positions, the subscribers
 * told when it grows, the replication lag marks, fencing and the metrics. */
#include "journal_internal.h"

#include <assert.h>

#include "metrics.h"

/* A record was made (cluster mode): when the first one not yet taken by a
 * commit was, for the replication lag. */
void jrn_note_record(journal *j) {
    if (j->replicate && j->unflushed_since_ms < 0)
        j->unflushed_since_ms = uv_now(j->loop);
}

/* A commit takes the pending records (cluster mode): they are durable once
 * the journal reaches its end position. */
void jrn_mark_commit(journal *j) {
    if (j->unflushed_since_ms < 0) return;
    assert(j->lag_count <= LAG_MARKS);
    if (j->lag_count == LAG_MARKS) { /* the newest mark takes these records too */
        j->lag[(j->lag_first + LAG_MARKS - 1) % LAG_MARKS].end = j->appended;
    } else {
        j->lag[(j->lag_first + j->lag_count) % LAG_MARKS] =
            (struct lag_mark){.first_ms = j->unflushed_since_ms, .end = j->appended};
        j->lag_count++;
    }
    j->unflushed_since_ms = -1;
}

uint64_t journal_durable_pos(const journal *j) {
    return j ? j->durable : 0;
}

uint64_t journal_show_pos(const journal *j) {
    if (!j || !j->on || !j->replicate) return 0;
    int64_t now = (int64_t)uv_now(j->loop);
    int64_t window = (int64_t)j->show_window_ms;
    if (j->lag_count) {
        /* The oldest commit not durable yet: its records wait. */
        const struct lag_mark *m = &j->lag[j->lag_first];
        return now - m->first_ms > window ? m->end : 0;
    }
    /* Records no commit has taken yet (the next commit's end is past the
     * position appended now). */
    if (j->unflushed_since_ms >= 0 && now - j->unflushed_since_ms > window)
        return j->appended + 1;
    return 0;
}

bool journal_replication_broken(const journal *j) {
    return j && j->replication_broken;
}

void journal_fence(journal *j) {
    if (!j || !j->replicate) return;
    /* The connections waiting on records the cluster lacks are closed by
     * now: what is kept goes to the next incarnation. */
    j->replication_broken = false;
    /* Durable is replicated here. The newest games are at the ring's head:
     * those not durable yet, the cluster lacks. */
    size_t dropped = 0;
    while (j->index_count) {
        size_t head = (j->index_head + INDEX_GAMES_MAX - 1) % INDEX_GAMES_MAX;
        indexed *e = &j->index[head];
        if (e->pos <= j->durable) break;
        j->index_bytes -= e->bytes;
        jrn_record_free(e->rec);
        e->rec = NULL;
        j->index_head = head;
        j->index_count--;
        dropped++;
    }
    if (dropped)
        srv_log(SRV_LOG_WARN,
                "journal %s: %zu games that ended after the cluster's last record of "
                "them are left out of history (they go on elsewhere)",
                j->path, dropped);
}

uint64_t journal_appended_pos(const journal *j) {
    return j && j->on ? j->appended : 0;
}

void journal_on_durable(journal *j, journal_durable_sub *sub, void (*cb)(void *ctx),
                        void *ctx) {
    assert(cb && sub);
    sub->cb = cb;
    sub->ctx = ctx;
    if (!j) {
        srv_list_init(&sub->link); /* no journal: nothing ever waits */
        return;
    }
    srv_list_push(&j->durable_subs, &sub->link);
}

void journal_durable_unsubscribe(journal_durable_sub *sub) {
    /* In a journal's list, or alone (no journal, or unsubscribed before). */
    assert(sub->link.next->prev == &sub->link && sub->link.prev->next == &sub->link);
    srv_list_remove(&sub->link);
    srv_list_init(&sub->link);
}

journal_stats journal_get_stats(const journal *j) {
    return j ? j->stats : (journal_stats){0};
}

void journal_write_metrics(metrics_out *o, void *ctx) {
    journal_stats js = journal_get_stats(ctx);
    const journal *j = ctx;
    uint64_t waiting = 0;
    if (j && j->on) {
        waiting = j->appended - j->durable;
        for (const srv_link *l = j->dirty.next; l != &j->dirty; l = l->next)
            waiting++; /* a game's moves not yet in a record */
    }
    metrics_family(o, "race2048_journal_waiting_bytes", "gauge",
                   "Records not yet durable: buffered, being written or synced, or "
                   "(cluster mode) not yet in the cluster's stream; each game with "
                   "moves not yet in a record counts 1.");
    metrics_put(o, "race2048_journal_waiting_bytes %llu\n", (unsigned long long)waiting);
    metrics_family(o, "race2048_journal_errors_total", "counter",
                   "Journal writes, syncs or compactions that failed (retried).");
    metrics_put(o, "race2048_journal_errors_total %llu\n", (unsigned long long)js.errors);
    metrics_family(o, "race2048_journal_commits_total", "counter",
                   "Group commits: one write and one fdatasync each.");
    metrics_put(o, "race2048_journal_commits_total %llu\n",
                (unsigned long long)js.commits);
    metrics_family(o, "race2048_journal_bytes_total", "counter",
                   "Journal bytes written.");
    metrics_put(o, "race2048_journal_bytes_total %llu\n", (unsigned long long)js.bytes);
    metrics_family(o, "race2048_journal_compactions_total", "counter",
                   "Journal compactions.");
    metrics_put(o, "race2048_journal_compactions_total %llu\n",
                (unsigned long long)js.compactions);
}
