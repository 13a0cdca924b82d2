/* journal.c - the journal's writer: records appended in memory, group commits (one
 * write and one fdatasync on the thread pool), replication to the cluster. */
#include "journal_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -------------------------------------------------------------- writing --- */

static void incident(journal *j, const char *what, int err) {
    j->stats.errors++;
    if (j->failing) return;
    j->failing = true;
    srv_log(SRV_LOG_ERROR,
            "journal %s: %s failed: %s; games go on, the records are kept in memory "
            "and retried",
            j->path, what, uv_strerror(err));
}

/* Puts the failed write's records back in front of the pending ones. */
static void requeue_inflight(journal *j) {
    if (j->inflight.len == 0) return;
    if (byte_buf_reserve(&j->inflight, j->pending.len) == 0) {
        memcpy(j->inflight.data + j->inflight.len, j->pending.data, j->pending.len);
        j->inflight.len += j->pending.len;
        byte_buf t = j->pending;
        j->pending = j->inflight;
        j->inflight = t;
    } else {
        /* No memory to keep both: the failed batch is lost, the file stays whole. */
        srv_log(SRV_LOG_ERROR, "journal: out of memory; %zu bytes of records dropped",
                (size_t)j->inflight.len);
    }
    j->inflight.len = 0;
    j->inflight_done = 0;
}

static void on_truncated(uv_fs_t *req) {
    journal *j = req->data;
    uv_fs_req_cleanup(req);
    j->busy = false;
}

/* Records up to pos are on disk: the `end`s waiting for them may go out. */
static void made_durable(journal *j, uint64_t pos) {
    if (pos <= j->durable || j->replication_broken) return;
    j->durable = pos;
    while (j->lag_count && j->lag[j->lag_first].end <= pos) {
        j->lag_first = (j->lag_first + 1) % LAG_MARKS;
        j->lag_count--;
    }
    /* A subscriber may unsubscribe itself from its callback, not another. */
    for (srv_link *l = j->durable_subs.next, *next; l != &j->durable_subs; l = next) {
        next = l->next;
        journal_durable_sub *sub = srv_container(l, journal_durable_sub, link);
        sub->cb(sub->ctx);
    }
}

/* Keeps what the file got for the next replication (bounded). */
static void keep_for_replication(journal *j, const char *data, size_t len) {
    if (!j->replicate || len == 0) return;
    if (j->unreplicated.len + len > UNREPLICATED_MAX) {
        srv_log(SRV_LOG_ERROR,
                "journal %s: %zu bytes of records could not be replicated to the "
                "cluster; dropped (a takeover of this node would miss them)",
                j->path, (size_t)j->unreplicated.len);
        j->unreplicated.len = 0;
        j->unreplicated_base = 0;
        j->replication_broken = true;
    }
    if (byte_buf_append(&j->unreplicated, data, len) < 0)
        srv_log(SRV_LOG_ERROR, "journal: out of memory; %zu bytes not replicated", len);
}

static void replicate_work(uv_work_t *w) {
    journal *j = w->data;
    j->replicate_rc = j->replicate(j->replicate_ctx, j->replicating.data,
                                   j->replicating.len, j->replicating_base);
}

static void replicate_done(uv_work_t *w, int status) {
    journal *j = w->data;
    j->busy = false;
    int rc = status < 0 ? -1 : j->replicate_rc;
    if (rc == 0) {
        j->replicating.len = 0;
        j->replicating_base = 0;
        if (j->replicate_failing)
            srv_log(SRV_LOG_INFO, "journal %s: replicating again", j->path);
        j->replicate_failing = false;
    } else {
        /* Kept, in front of what was written since (unless a compaction
         * since replaced both: its journal is what goes out). */
        if (!j->unreplicated_base &&
            byte_buf_append(&j->replicating, j->unreplicated.data, j->unreplicated.len) ==
                0) {
            byte_buf t = j->unreplicated;
            j->unreplicated = j->replicating;
            j->replicating = t;
            j->unreplicated_base = j->replicating_base;
        }
        j->replicating.len = 0;
        j->replicating_base = 0;
        if (rc < 0 && !j->replicate_failing)
            srv_log(SRV_LOG_WARN,
                    "journal %s: records cannot be replicated to the cluster; `end`s "
                    "wait for it",
                    j->path);
        j->replicate_failing |= rc < 0;
        if (rc < 0 && j->unreplicated.len > UNREPLICATED_MAX) {
            srv_log(SRV_LOG_ERROR,
                    "journal %s: %zu bytes of records wait for the cluster; dropped (the "
                    "node gives its rooms up)",
                    j->path, (size_t)j->unreplicated.len);
            j->unreplicated.len = 0;
            j->unreplicated_base = 0;
            j->replication_broken = true;
        }
    }
    if (rc >= 0) made_durable(j, j->replicate_pos);
    /* A failure is retried by the commit timer, not at once (NATS is away);
     * so are kept records alone (a fenced node: they wait for its next
     * incarnation), or a hurried stop would try them again forever. */
    bool more = j->pending.len || !srv_list_empty(&j->dirty) ||
                (j->written > j->durable && !j->replication_broken);
    if (rc >= 0 && j->hurry && more) jrn_commit_start(j);
}

/* Records up to pos are on disk: durable once they are replicated too. */
void jrn_replicated_then_durable(journal *j, uint64_t pos) {
    if (!j->replicate || j->unreplicated.len == 0) {
        made_durable(j, pos);
        return;
    }
    byte_buf t = j->replicating;
    j->replicating = j->unreplicated;
    j->unreplicated = t;
    j->unreplicated.len = 0;
    j->replicating_base = j->unreplicated_base;
    j->unreplicated_base = 0;
    j->replicate_pos = pos;
    j->busy = true;
    j->replicate_work.data = j;
    if (uv_queue_work(j->loop, &j->replicate_work, replicate_work, replicate_done) < 0) {
        j->replicate_rc = -1;
        replicate_done(&j->replicate_work, 0);
    }
}

static void on_synced(uv_fs_t *req) {
    journal *j = req->data;
    ssize_t rc = req->result;
    uv_fs_req_cleanup(req);
    assert(j->busy && j->sync_pos <= j->written);
    j->busy = false;
    if (rc < 0) {
        /* The bytes are in the file; only their durability is in doubt. The
         * next commit syncs again. */
        incident(j, "fdatasync", (int)rc);
        return;
    }
    j->stats.commits++;
    j->dropping = false;
    if (j->failing) {
        j->failing = false;
        srv_log(SRV_LOG_INFO, "journal %s: writing again", j->path);
    }
    if (j->replicate) {
        jrn_replicated_then_durable(j, j->sync_pos); /* then, if hurried, commits again */
        if (j->busy) return;
    } else {
        made_durable(j, j->sync_pos);
    }
    if (j->hurry) jrn_commit_start(j); /* what came during this commit, at once too */
}

static void sync_start(journal *j) {
    j->sync_pos = j->written;
    j->req.data = j;
    int e = uv_fs_fdatasync(j->loop, &j->req, j->fd, on_synced);
    if (e < 0) {
        j->busy = false;
        incident(j, "fdatasync", e);
    }
}

static void on_written(uv_fs_t *req) {
    journal *j = req->data;
    ssize_t rc = req->result;
    uv_fs_req_cleanup(req);
    assert(j->busy && j->inflight_done <= j->inflight.len);
    if (rc <= 0) { /* nothing written for a non-empty buffer is an error too */
        incident(j, "write", rc < 0 ? (int)rc : UV_EIO);
        requeue_inflight(j);
        /* Cut a partial record off so the file ends on a whole record. */
        j->req.data = j;
        if (uv_fs_ftruncate(j->loop, &j->req, j->fd, (int64_t)j->good, on_truncated) < 0)
            j->busy = false;
        return;
    }
    j->inflight_done += (size_t)rc;
    if (j->inflight_done < j->inflight.len) { /* a short write: go on */
        uv_buf_t buf = uv_buf_init(j->inflight.data + j->inflight_done,
                                   (unsigned)(j->inflight.len - j->inflight_done));
        j->req.data = j;
        int e = uv_fs_write(j->loop, &j->req, j->fd, &buf, 1,
                            (int64_t)(j->good + j->inflight_done), on_written);
        if (e < 0) {
            j->req.result = e;
            on_written(&j->req);
        }
        return;
    }
    j->good += j->inflight.len;
    j->stats.bytes += j->inflight.len;
    keep_for_replication(j, j->inflight.data, j->inflight.len);
    j->inflight.len = 0;
    j->inflight_done = 0;
    j->written = j->inflight_pos;
    jrn_assert_positions(j);
    sync_start(j);
}

/* Appends `moves` records for every game with moves not yet recorded. */
void jrn_commit_start(journal *j) {
    if (!j->on || j->busy) return;
    jrn_assert_positions(j);
    assert(!j->compaction && j->inflight.len == 0);
    jrn_flush_moves(j);
    jrn_mark_commit(j);
    if (jrn_compact_maybe(j)) return;
    if (j->pending.len == 0) {
        /* Written but not synced (a sync failed): sync again, or the `end`s
         * waiting for those records would wait for the next record. */
        if (j->written > j->durable && !j->replication_broken) {
            j->busy = true;
            sync_start(j);
        } else if (j->unreplicated.len) {
            jrn_replicated_then_durable(j, j->durable); /* kept while NATS was away */
        }
        return;
    }
    j->inflight_pos = j->appended;
    byte_buf t = j->inflight;
    j->inflight = j->pending;
    j->pending = t;
    j->pending.len = 0;
    j->inflight_done = 0;
    j->busy = true;
    uv_buf_t buf = uv_buf_init(j->inflight.data, (unsigned)j->inflight.len);
    j->req.data = j;
    int e = uv_fs_write(j->loop, &j->req, j->fd, &buf, 1, (int64_t)j->good, on_written);
    if (e < 0) {
        j->busy = false;
        incident(j, "write", e);
        requeue_inflight(j);
    }
}

void jrn_on_commit_timer(uv_timer_t *t) {
    jrn_commit_start(t->data);
}

void journal_commit_now(journal *j) {
    if (!j) return;
    j->hurry = true;
    jrn_commit_start(j);
}

/* Queues one whole record (a line with its '\n'). */
void jrn_append(journal *j, const char *line, size_t len) {
    if (!j->on) return;
    if (j->pending.len + len > PENDING_MAX) {
        j->stats.errors++;
        if (!j->dropping)
            srv_log(SRV_LOG_ERROR,
                    "journal %s: %u MiB of records wait for the disk; new records are "
                    "dropped until a write succeeds",
                    j->path, PENDING_MAX >> 20);
        j->dropping = true;
        return;
    }
    if (byte_buf_append(&j->pending, line, len) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; a record was dropped");
        j->stats.errors++;
        return;
    }
    j->appended += len;
    jrn_assert_positions(j);
    j->stats.records++;
    jrn_note_record(j);
}

void jrn_append_buf(journal *j, byte_buf *b) {
    jrn_append(j, b->data, b->len);
    free(b->data);
    *b = (byte_buf){0};
}

void jrn_write_pending_now(journal *j) {
    jrn_flush_moves(j);
    size_t done = 0;
    while (done < j->pending.len) {
        ssize_t n = pwrite(j->fd, j->pending.data + done, j->pending.len - done,
                           (off_t)(j->good + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            srv_log(SRV_LOG_ERROR, "journal %s: final write failed: %s", j->path,
                    strerror(errno));
            if (ftruncate(j->fd, (off_t)j->good) < 0) { /* keep whole records */
            }
            break;
        }
        done += (size_t)n;
    }
    if (done == j->pending.len) {
        j->good += done;
        j->stats.bytes += done;
    }
    if (fdatasync(j->fd) == 0) j->stats.commits++;
}
