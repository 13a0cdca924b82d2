/* journal.c - the durable record: game events in, NDJSON records out with group commits
 * on the thread pool; the index of finished games for history and replay; the
 * records read back at start-up. It knows no room: events are plain structs. */
#define _XOPEN_SOURCE 700 /* realpath(3), for the journal's lock (lock_journal) */
#include "journal.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "journal_accounts.h"
#include "daily.h"
#include "journal_read.h"
#include "metrics.h"
#include "base.h" /* srv_log and the lists: shared services */

/* Finished games kept for `history` and `replay`: the most recent, up to a
 * count and a byte budget, so the index never grows without bound. */
#define INDEX_GAMES_MAX JOURNAL_INDEX_GAMES
#define INDEX_BYTES_MAX (16u << 20)
/* Records kept in memory while writes fail; beyond this new ones are dropped
 * (counted and logged) rather than let memory grow without bound. */
#define PENDING_MAX (64u << 20)
/* Records written but not yet replicated (cluster mode, NATS out of reach)
 * held back at most: past this they are dropped and `end`s go out again. */
#define UNREPLICATED_MAX (4u << 20)
/* Bytes buffered before a commit is started early (a burst of records). */
#define EARLY_COMMIT_BYTES (1u << 20)
/* Commits whose records are not durable yet that the replication lag is
 * tracked for; past this the newest are merged (which overstates the lag). */
#define LAG_MARKS 64

/* A growable byte string. */
typedef struct bytes {
    char *data;
    size_t len, cap;
} bytes;

static int bytes_reserve(bytes *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static int bytes_add(bytes *b, const char *s, size_t n) {
    if (n == 0) return 0; /* s may be NULL (an empty buffer) */
    if (bytes_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static int bytes_printf(bytes *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int bytes_printf(bytes *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return bytes_add(b, small, (size_t)n);
    if (bytes_reserve(b, (size_t)n + 1) < 0) return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

/* One seat's moves: all of them (for the finished record) and how many are
 * already in a `moves` record. */
typedef struct jrn_seat {
    bytes moves;
    size_t flushed;
} jrn_seat;

struct jrn_game {
    journal *j;
    jrn_start start;   /* its id, settings, seed and seats, for the finished record */
    srv_link all_link; /* in journal.games */
    jrn_seat seats[PROTO_PLAYERS_MAX];
    srv_link dirty_link; /* in journal.dirty while it has unflushed moves */
    bool dirty;
    bool ended; /* its finished record is written */
};

/* One finished game in the index. */
typedef struct indexed {
    uint64_t pos; /* its record's journal position: listed once durable */
    proto_game_record *rec;
    size_t bytes; /* what it costs, for INDEX_BYTES_MAX */
} indexed;

struct journal {
    uv_loop_t *loop;
    bool on; /* a file is kept */
    int fd;
    int lock_fd; /* FILE.lock, locked for the process's life (lock_journal) */
    char path[4096];
    uint64_t max;                   /* compaction size (journal_config.max) */
    const uint64_t *next_player_id; /* the game's, for head records */
    uint64_t next_game;
    bytes pending;  /* records not yet handed to a write */
    bytes inflight; /* the records of the write in progress */
    size_t inflight_done;
    uint64_t good; /* file size up to the last whole record written */
    /* Positions in the stream of records ever appended (bytes, from 0 at
     * start-up): what was appended, what is in the file, what is synced.
     * `end` waits for its record's position to be durable. */
    uint64_t appended, written, durable;
    uint64_t inflight_pos; /* appended when the write in progress began */
    uint64_t sync_pos;     /* written when the sync in progress began */
    srv_link durable_subs; /* journal_durable_sub: told when `durable` grows */
    /* The file's size after the last compaction (or at start-up): the next
     * compaction waits until the file has doubled past it (see compact_maybe). */
    uint64_t base;
    bool busy;     /* a write, sync or truncate is in progress */
    bool failing;  /* the last attempt failed: log again only after a success */
    bool dropping; /* records are being dropped: PENDING_MAX is reached */
    bool hurry;    /* stopping: commit again as soon as a commit is done */
    uv_fs_t req;
    uv_timer_t timer;
    srv_link dirty;
    srv_link games;            /* every jrn_game: compaction keeps the running ones */
    uint64_t compact_retry_at; /* after a failed compaction: size to try again at */
    uv_work_t compact_work;
    struct compaction *compaction; /* the one in progress, or NULL */
    /* Replication (journal_config.replicate): records written but not yet
     * replicated, the batch on its way, and the position it makes durable. */
    int (*replicate)(void *ctx, const char *bytes, size_t len, size_t base_len);
    void *replicate_ctx;
    bytes unreplicated, replicating;
    /* The first bytes of each that are a compacted journal, whole: they
     * replace everything replicated before them (0: none). */
    size_t unreplicated_base, replicating_base;
    /* Records were dropped unreplicated (past UNREPLICATED_MAX): nothing is
     * durable any more until the node fences (journal_fence): what waits
     * for them must never be shown. */
    bool replication_broken;
    uint64_t replicate_pos;
    int replicate_rc;
    bool replicate_failing; /* logged once until a replication succeeds */
    uv_work_t replicate_work;
    /* Replication lag (journal_show_pos): for each commit not durable yet,
     * when its first record was made and the position its end reaches,
     * oldest first; and when the first record not yet taken by a commit was
     * made (-1: none). */
    struct lag_mark {
        int64_t first_ms;
        uint64_t end;
    } lag[LAG_MARKS];
    size_t lag_first, lag_count;
    int64_t unflushed_since_ms;
    uint64_t show_window_ms;
    journal_stats stats;
    /* The daily challenge's seeds (`daily` records), one per day and size,
     * oldest first: kept by compaction for DAILY_KEEP_DAYS. */
    struct jrn_daily *dailies;
    struct daily_boards *daily; /* journal_config.daily */
    int64_t daily_offset_ms;
    size_t ndailies, dailies_cap;
    struct acct_store *accounts; /* journal_config.accounts */
    indexed *index;              /* ring of recent finished games */
    size_t index_head, index_count, index_bytes;
};

int64_t journal_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int journal_token_hash(const char *token, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return -1;
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

const char *journal_path(const journal *j) {
    return j ? j->path : "";
}

/* ----------------------------------------------------------------- seeds --- */

/* A seed as start records and `end` write it (a JSON value). */
static void seed_text(const eng_seed *seed, char *out, size_t n) {
    char text[ENG_SEED_TEXT_MAX];
    if (eng_seed_format(seed, text, sizeof text) <= 0) text[0] = '\0';
    /* A string for a server seed, a number for a client's. */
    snprintf(out, n, seed->kind == ENG_SEED_SERVER ? "\"%s\"" : "%s", text);
}

int journal_seed_parse(const json_t *v, eng_seed *out) {
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= (json_int_t)UINT32_MAX) {
        *out = eng_seed_client((uint32_t)json_integer_value(v));
    } else if (json_is_string(v)) {
        eng_seed seed;
        if (eng_seed_parse(&seed, json_string_value(v), (int)json_string_length(v)) < 0 ||
            seed.kind != ENG_SEED_SERVER)
            return -1;
        *out = seed;
    } else {
        return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- writing --- */

static void commit_start(journal *j);

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
    if (bytes_reserve(&j->inflight, j->pending.len) == 0) {
        memcpy(j->inflight.data + j->inflight.len, j->pending.data, j->pending.len);
        j->inflight.len += j->pending.len;
        bytes t = j->pending;
        j->pending = j->inflight;
        j->inflight = t;
    } else {
        /* No memory to keep both: the failed batch is lost, the file stays whole. */
        srv_log(SRV_LOG_ERROR, "journal: out of memory; %zu bytes of records dropped",
                j->inflight.len);
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
                j->path, j->unreplicated.len);
        j->unreplicated.len = 0;
        j->unreplicated_base = 0;
        j->replication_broken = true;
    }
    if (bytes_add(&j->unreplicated, data, len) < 0)
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
            bytes_add(&j->replicating, j->unreplicated.data, j->unreplicated.len) == 0) {
            bytes t = j->unreplicated;
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
                    j->path, j->unreplicated.len);
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
    if (rc >= 0 && j->hurry && more) commit_start(j);
}

/* Records up to pos are on disk: durable once they are replicated too. */
static void replicated_then_durable(journal *j, uint64_t pos) {
    if (!j->replicate || j->unreplicated.len == 0) {
        made_durable(j, pos);
        return;
    }
    bytes t = j->replicating;
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
        replicated_then_durable(j, j->sync_pos); /* then, if hurried, commits again */
        if (j->busy) return;
    } else {
        made_durable(j, j->sync_pos);
    }
    if (j->hurry) commit_start(j); /* what came during this commit, at once too */
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
    sync_start(j);
}

/* Appends `moves` records for every game with moves not yet recorded. */
static void flush_moves(journal *j);

static bool compact_maybe(journal *j);

/* A record was made (cluster mode): when the first one not yet taken by a
 * commit was, for the replication lag. */
static void note_record(journal *j) {
    if (j->replicate && j->unflushed_since_ms < 0)
        j->unflushed_since_ms = uv_now(j->loop);
}

/* A commit takes the pending records (cluster mode): they are durable once
 * the journal reaches its end position. */
static void mark_commit(journal *j) {
    if (j->unflushed_since_ms < 0) return;
    if (j->lag_count == LAG_MARKS) { /* the newest mark takes these records too */
        j->lag[(j->lag_first + LAG_MARKS - 1) % LAG_MARKS].end = j->appended;
    } else {
        j->lag[(j->lag_first + j->lag_count) % LAG_MARKS] =
            (struct lag_mark){.first_ms = j->unflushed_since_ms, .end = j->appended};
        j->lag_count++;
    }
    j->unflushed_since_ms = -1;
}

static void commit_start(journal *j) {
    if (!j->on || j->busy) return;
    flush_moves(j);
    mark_commit(j);
    if (compact_maybe(j)) return;
    if (j->pending.len == 0) {
        /* Written but not synced (a sync failed): sync again, or the `end`s
         * waiting for those records would wait for the next record. */
        if (j->written > j->durable && !j->replication_broken) {
            j->busy = true;
            sync_start(j);
        } else if (j->unreplicated.len) {
            replicated_then_durable(j, j->durable); /* kept while NATS was away */
        }
        return;
    }
    j->inflight_pos = j->appended;
    bytes t = j->inflight;
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

static void on_commit_timer(uv_timer_t *t) {
    commit_start(t->data);
}

void journal_commit_now(journal *j) {
    if (!j) return;
    j->hurry = true;
    commit_start(j);
}

/* Queues one whole record (a line with its '\n'). */
static void append(journal *j, const char *line, size_t len) {
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
    if (bytes_add(&j->pending, line, len) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; a record was dropped");
        j->stats.errors++;
        return;
    }
    j->appended += len;
    j->stats.records++;
    note_record(j);
}

static void append_bytes(journal *j, bytes *b) {
    append(j, b->data, b->len);
    free(b->data);
    *b = (bytes){0};
}

/* ---------------------------------------------------------------- games --- */

static void game_moves_record(journal *j, jrn_game *g) {
    bytes b = {0};
    int bad =
        bytes_printf(&b, "{\"j\":\"moves\",\"game\":%" PRIu64 ",\"m\":{", g->start.game);
    bool first = true;
    for (int i = 0; i < g->start.nseats; i++) {
        jrn_seat *st = &g->seats[i];
        if (st->flushed == st->moves.len) continue;
        bad |= bytes_printf(&b, "%s\"%" PRIu64 "\":\"%.*s\"", first ? "" : ",",
                            g->start.seats[i].id, (int)(st->moves.len - st->flushed),
                            st->moves.data + st->flushed);
        st->flushed = st->moves.len;
        first = false;
    }
    bad |= bytes_add(&b, "}}\n", 3);
    if (bad)
        free(b.data);
    else
        append_bytes(j, &b);
}

static void undirty(jrn_game *g) {
    if (!g->dirty) return;
    srv_list_remove(&g->dirty_link);
    g->dirty = false;
}

static void flush_moves(journal *j) {
    while (!srv_list_empty(&j->dirty)) {
        jrn_game *g = srv_container(j->dirty.next, jrn_game, dirty_link);
        game_moves_record(j, g);
        undirty(g);
    }
}

static void flush_game_moves(jrn_game *g) {
    if (!g->dirty) return;
    game_moves_record(g->j, g);
    undirty(g);
}

static jrn_game *game_new(journal *j, const jrn_start *start) {
    jrn_game *g = calloc(1, sizeof *g);
    if (!g) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; a game goes unrecorded");
        return NULL;
    }
    g->j = j;
    g->start = *start;
    if (g->start.nseats < 0 || g->start.nseats > PROTO_PLAYERS_MAX) g->start.nseats = 0;
    srv_list_init(&g->dirty_link);
    srv_list_push(&j->games, &g->all_link);
    return g;
}

/* The start record of a game: returns 0 or -1 (OOM). */
static int start_record(bytes *b, const jrn_start *st) {
    int bad = bytes_printf(b, "{\"j\":\"start\",\"game\":%" PRIu64 ",", st->game);
    if (!st->solo) bad |= bytes_printf(b, "\"room\":\"%s\",", st->room);
    char seed[80];
    seed_text(&st->seed, seed, sizeof seed);
    /* A daily game says so (and its day): a restart, or the node that takes it
     * over, hides its seed until the day is over. */
    char daily[32] = "";
    if (st->daily) snprintf(daily, sizeof daily, ",\"daily\":%" PRId32, st->daily_day);
    bad |= bytes_printf(
        b,
        "\"size\":%d,\"target\":%u,\"time_limit\":%u,\"seed\":%s,"
        "\"salt\":\"%s\",\"commit\":\"%s\",\"started\":%" PRId64 "%s%s,\"seats\":[",
        st->settings.size, st->settings.target, st->settings.time_limit, seed, st->salt,
        st->commit, st->started_ms, st->settings.rated ? ",\"rated\":true" : "", daily);
    for (int i = 0; i < st->nseats; i++) {
        bad |= bytes_printf(b, "%s{\"id\":%" PRIu64 ",\"name\":\"%s\",\"token\":\"%s\"",
                            i ? "," : "", st->seats[i].id, st->seats[i].name,
                            st->seats[i].token_hash);
        /* A bot's seat says so, so that a restart gives it its bot back. */
        if (st->seats[i].bot_level)
            bad |= bytes_printf(b, ",\"bot\":%d", st->seats[i].bot_level);
        /* An account's seat says whose, so that a restart rates its race. */
        if (st->seats[i].account[0])
            bad |= bytes_printf(b, ",\"account\":\"%s\"", st->seats[i].account);
        bad |= bytes_add(b, "}", 1);
    }
    bad |= bytes_add(b, "]}\n", 3);
    return bad ? -1 : 0;
}

jrn_game *journal_game_start(journal *j, jrn_start *start) {
    if (!j) return NULL; /* a server without one (unit tests) */
    start->game = j->next_game++;
    return journal_game_adopt(j, start); /* a new game is one adopted with a new id */
}

static void note_game(journal *j, uint64_t game) {
    if (game >= j->next_game) j->next_game = game + 1;
}

jrn_game *journal_game_adopt(journal *j, const jrn_start *start) {
    if (!j) return NULL;
    jrn_game *g = game_new(j, start);
    if (!g) return NULL;
    bytes b = {0};
    if (start_record(&b, &g->start) < 0)
        free(b.data);
    else
        append_bytes(j, &b);
    return g;
}

bool journal_game_running(const journal *j, uint64_t id) {
    for (const srv_link *l = j ? j->games.next : NULL; l && l != &j->games; l = l->next) {
        const jrn_game *g = srv_container(l, jrn_game, all_link);
        if (g->start.game == id && !g->ended) return true;
    }
    return false;
}

void journal_set_next_game(journal *j, uint64_t base) {
    if (j) j->next_game = base;
}

jrn_game *journal_game_restore(journal *j, const jrn_start *start) {
    if (!j) return NULL;
    note_game(j, start->game);
    return game_new(j, start);
}

void journal_game_restored(jrn_game *g) {
    if (!g) return;
    for (int i = 0; i < g->start.nseats; i++)
        g->seats[i].flushed = g->seats[i].moves.len;
    undirty(g);
}

void journal_move(jrn_game *g, int seat, eng_dir dir) {
    if (!g || seat < 0 || seat >= g->start.nseats) return;
    char letter = proto_dir_letter(dir);
    if (bytes_add(&g->seats[seat].moves, &letter, 1) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory recording a move");
        return;
    }
    if (!g->dirty) {
        g->dirty = true;
        srv_list_push(&g->j->dirty, &g->dirty_link);
    }
    if (g->j->on) note_record(g->j);
}

void journal_seat(jrn_game *g, int seat, jrn_seat_event event) {
    static const char *const names[] = {
        [JRN_SEAT_LEFT] = "left",
        [JRN_SEAT_OVER] = "over",
        [JRN_SEAT_DISCONNECTED] = "disconnected",
        [JRN_SEAT_CONNECTED] = "connected",
    };
    if (!g || !g->j->on || seat < 0 || seat >= g->start.nseats ||
        (unsigned)event >= sizeof names / sizeof names[0])
        return;
    flush_game_moves(g); /* the moves before the event come first */
    bytes b = {0};
    if (bytes_printf(&b,
                     "{\"j\":\"seat\",\"game\":%" PRIu64 ",\"id\":%" PRIu64
                     ",\"event\":\"%s\"}\n",
                     g->start.game, g->start.seats[seat].id, names[event]) == 0)
        append_bytes(g->j, &b);
    else
        free(b.data);
}

uint64_t journal_account(journal *j, const acct_account *a) {
    if (!j || !j->on) return 0;
    size_t len;
    char *line = jacct_record(a, &len);
    if (!line) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing an account");
        return 0;
    }
    append(j, line, len);
    free(line);
    return j->appended;
}

void journal_rematch(jrn_game *from, const char *to) {
    if (!from || !from->j->on) return;
    bytes b = {0};
    if (bytes_printf(&b, "{\"j\":\"rematch\",\"game\":%" PRIu64 ",\"room\":\"%s\"}\n",
                     from->start.game, to) == 0)
        append_bytes(from->j, &b);
    else
        free(b.data);
}

/* ---------------------------------------------------------------- daily --- */

/* How many days before today compaction keeps `daily` records: a revealed day's
 * games hold their seed themselves; the daily board shows it for this long. */
#define DAILY_KEEP_DAYS 7

typedef struct jrn_daily {
    int32_t day;
    int size;
    eng_seed seed;
    char salt[PROTO_SALT_TEXT];
    char commit[PROTO_COMMIT_TEXT];
} jrn_daily;

static int daily_line(const jrn_daily *d, bytes *out) {
    char seed[ENG_SEED_TEXT_MAX];
    eng_seed_format(&d->seed, seed, sizeof seed);
    return bytes_printf(out,
                        "{\"j\":\"daily\",\"day\":%" PRId32
                        ",\"size\":%d,\"seed\":\"%s\",\"salt\":\"%s\"}\n",
                        d->day, d->size, seed, d->salt);
}

static jrn_daily *daily_find(const journal *j, int32_t day, int size) {
    for (size_t k = j->ndailies; k-- > 0;)
        if (j->dailies[k].day == day && j->dailies[k].size == size) return &j->dailies[k];
    return NULL;
}

/* Adds d (its commit computed here): the table's new entry, or NULL. */
static jrn_daily *daily_add(journal *j, const jrn_daily *d) {
    if (j->ndailies == j->dailies_cap) {
        size_t cap = j->dailies_cap ? 2 * j->dailies_cap : 16;
        jrn_daily *more = realloc(j->dailies, cap * sizeof *more);
        if (!more) return NULL;
        j->dailies = more;
        j->dailies_cap = cap;
    }
    jrn_daily *e = &j->dailies[j->ndailies];
    *e = *d;
    if (proto_commit(e->salt, &e->seed, e->commit) < 0) return NULL;
    j->ndailies++;
    return e;
}

/* The `daily` records of data (the file at start-up), in the table. */
static bool entry_replay(journal *j, const json_t *r);

static void dailies_replay(journal *j, const char *data, size_t len) {
    static const char head[] = "{\"j\":\"daily\",";
    static const char entry_head[] = "{\"j\":\"daily_entry\",";
    for (size_t at = 0; at < len;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        if (j->daily && n > sizeof entry_head &&
            !memcmp(line, entry_head, sizeof entry_head - 1)) {
            json_t *r = json_loadb(line, n, 0, NULL);
            if (!entry_replay(j, r))
                srv_log(SRV_LOG_WARN, "journal: a daily_entry record could not be read");
            json_decref(r);
            continue;
        }
        if (n <= sizeof head || memcmp(line, head, sizeof head - 1)) continue;
        json_t *r = json_loadb(line, n, 0, NULL);
        const json_t *day = json_object_get(r, "day"), *size = json_object_get(r, "size");
        const char *seed = json_string_value(json_object_get(r, "seed"));
        const char *salt = json_string_value(json_object_get(r, "salt"));
        jrn_daily d = {0};
        bool ok = json_is_integer(day) && json_is_integer(size) && seed && salt &&
                  strlen(salt) == PROTO_SALT_TEXT - 1 && json_integer_value(day) >= 0 &&
                  json_integer_value(day) < INT32_MAX &&
                  json_integer_value(size) >= ENG_SIZE_MIN &&
                  json_integer_value(size) <= ENG_SIZE_MAX &&
                  eng_seed_parse(&d.seed, seed, (int)strlen(seed)) == 0;
        if (ok) {
            d.day = (int32_t)json_integer_value(day);
            d.size = (int)json_integer_value(size);
            memcpy(d.salt, salt, sizeof d.salt);
            if (!daily_find(j, d.day, d.size) && !daily_add(j, &d)) ok = false;
        }
        if (!ok) srv_log(SRV_LOG_WARN, "journal: a daily record could not be read");
        json_decref(r);
    }
}

int journal_daily(journal *j, int32_t day, int size, const eng_seed *fresh,
                  jrn_daily_seed *out) {
    jrn_daily *e = daily_find(j, day, size);
    if (!e) {
        jrn_daily d = {.day = day, .size = size, .seed = *fresh};
        if (srv_random_hex(d.salt, 16) < 0 || !(e = daily_add(j, &d))) return -1;
        bytes b = {0};
        if (j->on && daily_line(e, &b) == 0)
            append_bytes(j, &b);
        else
            free(b.data);
    }
    *out = (jrn_daily_seed){.seed = e->seed};
    memcpy(out->salt, e->salt, sizeof out->salt);
    memcpy(out->commit, e->commit, sizeof out->commit);
    return 0;
}

static int entry_line(int32_t day, int size, const char *name, const daily_result *r,
                      bytes *out) {
    if (!r)
        return bytes_printf(out,
                            "{\"j\":\"daily_entry\",\"day\":%" PRId32
                            ",\"size\":%d,\"name\":\"%s\"}\n",
                            day, size, name);
    return bytes_printf(
        out,
        "{\"j\":\"daily_entry\",\"day\":%" PRId32
        ",\"size\":%d,\"name\":\"%s\",\"score\":%" PRIu32 ",\"max_tile\":%" PRIu32
        ",\"moves\":%" PRIu32 ",\"end_ms\":%" PRId64 ",\"game\":%" PRIu64 "}\n",
        day, size, name, r->score, r->max_tile, r->moves, r->end_ms, r->game);
}

typedef struct entries_out {
    int32_t keep_from;
    bytes *to;
    bool bad;
} entries_out;

static void entry_out(void *ctx, int32_t day, int size, const daily_entry *e) {
    entries_out *out = ctx;
    if (day < out->keep_from || out->bad) return;
    out->bad = entry_line(day, size, e->account->name, e->finished ? &e->result : NULL,
                          out->to) < 0;
}

void journal_daily_entry(journal *j, int32_t day, int size, const acct_account *a,
                         const daily_result *r) {
    if (!j || !j->on) return;
    bytes b = {0};
    if (entry_line(day, size, a->name, r, &b) == 0)
        append_bytes(j, &b);
    else
        free(b.data);
}

/* A `daily_entry` record to the boards (begun, and finished if it says so). */
static bool entry_replay(journal *j, const json_t *r) {
    const json_t *day = json_object_get(r, "day"), *size = json_object_get(r, "size");
    const char *name = json_string_value(json_object_get(r, "name"));
    const acct_account *a = name && j->accounts ? acct_find(j->accounts, name) : NULL;
    if (!a || !json_is_integer(day) || !json_is_integer(size) ||
        json_integer_value(day) < 0 || json_integer_value(day) > INT32_MAX)
        return false;
    int32_t d = (int32_t)json_integer_value(day);
    int sz = (int)json_integer_value(size);
    int rc = daily_begin(j->daily, d, sz, a);
    if (rc != DAILY_OK && rc != DAILY_PLAYED) return false;
    if (!json_object_get(r, "game")) return true;
    daily_result res = {
        .score = (uint32_t)json_integer_value(json_object_get(r, "score")),
        .max_tile = (uint32_t)json_integer_value(json_object_get(r, "max_tile")),
        .moves = (uint32_t)json_integer_value(json_object_get(r, "moves")),
        .end_ms = (int64_t)json_integer_value(json_object_get(r, "end_ms")),
        .game = (uint64_t)json_integer_value(json_object_get(r, "game"))};
    rc = daily_finish(j->daily, d, sz, a, &res);
    return rc == DAILY_OK || rc == DAILY_FINISHED;
}

int journal_daily_learn(journal *j, int32_t day, int size, const eng_seed *seed,
                        const char *salt) {
    if (daily_find(j, day, size)) return 0;
    if (strlen(salt) != PROTO_SALT_TEXT - 1) return -1;
    jrn_daily d = {.day = day, .size = size, .seed = *seed};
    memcpy(d.salt, salt, sizeof d.salt);
    jrn_daily *e = daily_add(j, &d);
    if (!e) return -1;
    bytes b = {0};
    if (j->on && daily_line(e, &b) == 0)
        append_bytes(j, &b);
    else
        free(b.data);
    return 0;
}

bool journal_daily_of_seed(const journal *j, const eng_seed *seed, int32_t *day) {
    for (size_t k = j->ndailies; k-- > 0;)
        if (eng_seed_equal(&j->dailies[k].seed, seed)) {
            *day = j->dailies[k].day;
            return true;
        }
    return false;
}

bool journal_daily_secret(const journal *j, const proto_game_record *rec) {
    int32_t day;
    return j->ndailies && rec->seed.kind == ENG_SEED_SERVER &&
           journal_daily_of_seed(j, &rec->seed, &day) &&
           day >= daily_day_of_ms(journal_wall_ms() + j->daily_offset_ms);
}

bool journal_daily_get(const journal *j, int32_t day, int size, jrn_daily_seed *out) {
    const jrn_daily *e = daily_find(j, day, size);
    if (!e) return false;
    *out = (jrn_daily_seed){.seed = e->seed};
    memcpy(out->salt, e->salt, sizeof out->salt);
    memcpy(out->commit, e->commit, sizeof out->commit);
    return true;
}

/* ---------------------------------------------------------------- index --- */

static void record_free(proto_game_record *rec) {
    if (!rec) return;
    proto_game_record_clear(rec);
    free(rec);
}

static void index_drop_oldest(journal *j) {
    indexed *e =
        &j->index[(j->index_head + INDEX_GAMES_MAX - j->index_count) % INDEX_GAMES_MAX];
    j->index_bytes -= e->bytes;
    record_free(e->rec);
    e->rec = NULL;
    j->index_count--;
}

/* Takes ownership of rec. */
static void index_put(journal *j, uint64_t pos, proto_game_record *rec) {
    if (!j->index) {
        record_free(rec);
        return;
    }
    size_t cost = sizeof *rec;
    for (int i = 0; i < rec->nseats; i++)
        cost += rec->seats[i].n;
    while (j->index_count &&
           (j->index_count == INDEX_GAMES_MAX || j->index_bytes + cost > INDEX_BYTES_MAX))
        index_drop_oldest(j);
    j->index[j->index_head] = (indexed){.pos = pos, .rec = rec, .bytes = cost};
    j->index_head = (j->index_head + 1) % INDEX_GAMES_MAX;
    j->index_count++;
    j->index_bytes += cost;
}

/* The k-th most recent indexed game. */
static const indexed *index_at(const journal *j, size_t k) {
    return &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX];
}

/* Indexes the most recent finished games of lines (oldest first): each id
 * once (a kill mid-compaction leaves a game in both the archive and the
 * journal), only games in which a board changed, read from their records. */
static void index_lines(journal *j, const jread_line *lines, size_t n) {
    size_t take[INDEX_GAMES_MAX];
    uint64_t ids[INDEX_GAMES_MAX];
    size_t ntake = 0;
    for (size_t k = n; k-- > 0 && ntake < INDEX_GAMES_MAX;) {
        if (!jread_played(lines[k].line, lines[k].len)) continue;
        bool seen = false;
        for (size_t t = 0; t < ntake && !seen; t++)
            seen = ids[t] == lines[k].id;
        if (seen) continue;
        ids[ntake] = lines[k].id;
        take[ntake++] = k;
    }
    for (size_t t = ntake; t-- > 0;) {
        const jread_line *l = &lines[take[t]];
        proto_game_record *rec = malloc(sizeof *rec);
        if (rec && proto_dec_game_record(l->line, l->len, rec) == 0 &&
            proto_game_record_played(rec))
            index_put(j, 0, rec);
        else
            record_free(rec); /* a record read fails holding nothing */
    }
}

/* The finished-game record of g as end says it ended. */
static void end_record(const jrn_game *g, const jrn_end *end, proto_game_record *rec) {
    const jrn_start *st = &g->start;
    *rec = (proto_game_record){.game = st->game,
                               .reason = end->reason,
                               .winner = end->winner,
                               .seed = st->seed,
                               .size = st->settings.size,
                               .target = st->settings.target,
                               .time_limit = st->settings.time_limit,
                               .started = st->started_ms,
                               .ended = end->ended_ms,
                               .nseats = st->nseats};
    if (!st->solo) memcpy(rec->room, st->room, sizeof rec->room);
    memcpy(rec->salt, st->salt, sizeof rec->salt);
    memcpy(rec->commit, st->commit, sizeof rec->commit);
    int n = end->nresults < PROTO_PLAYERS_MAX ? end->nresults : PROTO_PLAYERS_MAX;
    for (int i = 0; i < n; i++) {
        const proto_player *p = &end->results[i];
        proto_result *r = &rec->results[rec->nresults++];
        *r = (proto_result){.id = p->id,
                            .score = p->score,
                            .moves = p->moves,
                            .status = p->status,
                            .bot = p->bot};
        snprintf(r->name, sizeof r->name, "%s", p->name ? p->name : "");
        if (p->board)
            r->board = *p->board;
        else
            eng_board_init(&r->board, st->settings.size);
    }
    for (int i = 0; i < end->naccounts && i < PROTO_PLAYERS_MAX; i++)
        rec->accounts[rec->naccounts++] = end->accounts[i];
    for (int i = 0; i < end->nratings && i < PROTO_PLAYERS_MAX; i++)
        rec->ratings[rec->nratings++] = end->ratings[i];
    for (int i = 0; i < st->nseats; i++) /* the letters stay the game's until indexed */
        rec->seats[i] = (proto_seat_moves){.id = st->seats[i].id,
                                           .letters = g->seats[i].moves.data,
                                           .n = g->seats[i].moves.len};
}

uint64_t journal_game_end(jrn_game *g, const jrn_end *end) {
    if (!g) return 0;
    journal *j = g->j;
    undirty(g); /* the finished record holds every move */
    g->ended = true;
    proto_game_record *rec = malloc(sizeof *rec);
    size_t len = 0;
    char *line = NULL;
    if (rec) {
        end_record(g, end, rec);
        line = proto_enc_game_record(rec, &len);
    }
    if (!line) {
        free(rec);
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing game %" PRIu64,
                g->start.game);
        return 0;
    }
    append(j, line, len);
    free(line);
    uint64_t pos = j->on ? j->appended : 0;
    if (proto_game_record_played(rec)) {          /* games nobody played are not listed */
        for (int i = 0; i < g->start.nseats; i++) /* the index takes the letters */
            g->seats[i].moves = (bytes){0};
        index_put(j, pos, rec);
    } else {
        free(rec);
    }
    if (j->pending.len >= EARLY_COMMIT_BYTES) commit_start(j);
    return pos;
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

void journal_adopt_finished(journal *j, const char *line, size_t len) {
    if (!j || !jread_played(line, len)) return;
    proto_game_record *rec = malloc(sizeof *rec);
    if (!rec || proto_dec_game_record(line, len, rec) < 0 ||
        !proto_game_record_played(rec)) {
        record_free(rec);
        return;
    }
    for (size_t k = 0; k < j->index_count; k++)
        if (index_at(j, k)->rec->game == rec->game) {
            record_free(rec);
            return;
        }
    append(j, line, len);
    index_put(j, j->on ? j->appended : 0, rec);
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
        record_free(e->rec);
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
    srv_list_remove(&sub->link);
    srv_list_init(&sub->link);
}

void journal_game_free(jrn_game *g) {
    if (!g) return;
    if (!g->ended && g->j->on) flush_game_moves(g); /* shutdown: it resumes later */
    undirty(g);
    srv_list_remove(&g->all_link);
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(g->seats[i].moves.data);
    free(g);
}

/* ----------------------------------------------------------- compaction --- */

/* How many rotated results archives are kept beside FILE.results. */
#define ARCHIVES_KEPT 4

/* One compaction. The loop takes the pending records and notes which games
 * are running (their ids: a few bytes each); everything else, reading the old
 * journal and sorting its records out, is done on the thread pool, so a
 * compaction costs the loop the same however large the live data is. */
typedef struct compaction {
    journal *j;
    bytes head;  /* the new journal's first record (made on the loop) */
    bytes taken; /* the pending records it replaces: written after all if it fails */
    /* Every account as it is when the compaction begins (made on the loop),
     * written after everything else: the finished games kept before it
     * find no account and change nothing, so no rating counts twice. */
    bytes accounts;
    uint64_t *running; /* ids of the running games, sorted */
    size_t nrunning;
    uint64_t pos; /* j->appended when it began: durable once it is done */
    int old_fd;   /* the journal being replaced, read up to old_size */
    uint64_t old_size;
    uint64_t max; /* --journal-max: also the archive's rotation size */
    char path[4096];
    bytes fresh;       /* result: the new journal */
    int new_fd;        /* result: the new journal, open */
    int err;           /* result: 0, or a negative errno */
    const char *step;  /* result: what failed */
    uint64_t archived; /* result: finished-game bytes moved to the archive */
} compaction;

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* FILE.results grows to max, then becomes FILE.results.1, .1 becomes .2 and
 * so on up to ARCHIVES_KEPT; the oldest is removed. */
static int archive_rotate(const char *path, uint64_t incoming, uint64_t max) {
    char from[4200], to[4200];
    struct stat st;
    snprintf(from, sizeof from, "%s.results", path);
    if (stat(from, &st) < 0 || (uint64_t)st.st_size + incoming <= max) return 0;
    snprintf(to, sizeof to, "%s.results.%d", path, ARCHIVES_KEPT);
    if (unlink(to) < 0 && errno != ENOENT) return -errno;
    for (int k = ARCHIVES_KEPT; k >= 2; k--) {
        snprintf(from, sizeof from, "%s.results.%d", path, k - 1);
        snprintf(to, sizeof to, "%s.results.%d", path, k);
        if (rename(from, to) < 0 && errno != ENOENT) return -errno;
    }
    snprintf(from, sizeof from, "%s.results", path);
    snprintf(to, sizeof to, "%s.results.1", path);
    return rename(from, to) < 0 ? -errno : 0;
}

static int fsync_dir_of(const char *path) {
    char dirpath[4096];
    snprintf(dirpath, sizeof dirpath, "%s", path);
    char *slash = strrchr(dirpath, '/');
    if (slash == dirpath)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dirpath, sizeof dirpath, ".");
    int fd = open(dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* The kinds of record a compaction sorts: every record starts
 * {"j":"KIND","game":ID (journal.c writes them so). */
typedef enum record_kind { REC_OTHER, REC_FINISHED, REC_RUNNING } record_kind;

static bool is_running(const compaction *c, uint64_t id) {
    size_t lo = 0, hi = c->nrunning;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->running[mid] == id) return true;
        if (c->running[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static record_kind record_of(const compaction *c, const char *line, size_t n) {
    /* Heads as the record writers above spell them; the first is a finished game. */
#define HEAD(kind)                                                                       \
    { "{\"j\":\"" kind "\",\"game\":", sizeof "{\"j\":\"" kind "\",\"game\":" - 1 }
    static const struct {
        const char *text;
        size_t len;
    } heads[] = {HEAD("game"), HEAD("start"), HEAD("moves"), HEAD("seat")};
#undef HEAD
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
        size_t h = heads[k].len;
        if (n <= h || memcmp(line, heads[k].text, h) != 0) continue;
        if (k == 0) return REC_FINISHED;
        uint64_t id = 0;
        for (size_t i = h; i < n && line[i] >= '0' && line[i] <= '9'; i++)
            id = id * 10 + (uint64_t)(line[i] - '0');
        return is_running(c, id) ? REC_RUNNING : REC_OTHER;
    }
    return REC_OTHER;
}

/* Sorts whole records out of data: finished games to `finished` (if not
 * NULL, else to fresh), the records of running games to fresh, in order:
 * a running game keeps every record it has, so a replay stays complete. */
static int sort_records(compaction *c, const char *data, size_t len, bytes *finished) {
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (data + at)) + 1 : len - at;
        record_kind kind = nl ? record_of(c, data + at, n) : REC_OTHER;
        bytes *to = kind == REC_RUNNING                ? &c->fresh
                    : kind == REC_FINISHED && finished ? finished
                    : kind == REC_FINISHED             ? &c->fresh
                                                       : NULL;
        if (to && bytes_add(to, data + at, n) < 0) return -ENOMEM;
        at += n;
    }
    return 0;
}

/* On the thread pool: moves the old journal's finished games to the archive,
 * then puts the new journal in place (the running games' records and the
 * pending finished games): write, fsync, rename, fsync the directory. The
 * old file stays whole until the rename. */
static void compact_work(uv_work_t *w) {
    compaction *c = w->data;
    c->new_fd = -1;
    char *old = malloc(c->old_size ? c->old_size : 1);
    bytes games = {0};
    char tmp[4200], archive[4200];
    snprintf(tmp, sizeof tmp, "%s.compacting", c->path);
    snprintf(archive, sizeof archive, "%s.results", c->path);
    c->step = "reading the journal";
    if (!old || bytes_add(&c->fresh, c->head.data, c->head.len) < 0) {
        c->err = -ENOMEM;
        goto out;
    }
    size_t got = 0;
    while (got < c->old_size) {
        ssize_t n = pread(c->old_fd, old + got, c->old_size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            c->err = n < 0 ? -errno : -EIO;
            goto out;
        }
        got += (size_t)n;
    }
    if ((c->err = sort_records(c, old, got, &games)) < 0 ||
        (c->err = sort_records(c, c->taken.data, c->taken.len, NULL)) < 0 ||
        (c->err = bytes_add(&c->fresh, c->accounts.data, c->accounts.len) < 0 ? -ENOMEM
                                                                              : 0) < 0)
        goto out;
    c->step = "writing the results archive";
    if (games.len) {
        if ((c->err = archive_rotate(c->path, games.len, c->max)) < 0) goto out;
        int afd = open(archive, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (afd < 0) {
            c->err = -errno;
            goto out;
        }
        c->err = write_all(afd, games.data, games.len);
        if (!c->err && fdatasync(afd) < 0) c->err = -errno;
        close(afd);
        if (c->err) goto out;
        c->archived = games.len;
    }
    c->step = "writing the compacted journal";
    c->new_fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (c->new_fd < 0) {
        c->err = -errno;
        goto out;
    }
    if ((c->err = write_all(c->new_fd, c->fresh.data, c->fresh.len)) < 0) goto out;
    if (fdatasync(c->new_fd) < 0) {
        c->err = -errno;
        goto out;
    }
    c->step = "renaming the compacted journal";
    if (rename(tmp, c->path) < 0) {
        c->err = -errno;
        goto out;
    }
    fsync_dir_of(c->path); /* the rename is done; a failed dir sync only delays it */
    close(c->old_fd);
out:
    if (c->err && c->new_fd >= 0) {
        close(c->new_fd);
        c->new_fd = -1;
        unlink(tmp);
    }
    free(old);
    free(games.data);
}

/* A compaction that did not happen gives back the pending records it took. */
static void give_back(journal *j, compaction *c) {
    if (j->pending.len && bytes_add(&c->taken, j->pending.data, j->pending.len) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; %zu bytes of records dropped",
                c->taken.len);
        j->stats.errors++;
        return;
    }
    bytes t = j->pending;
    j->pending = c->taken;
    c->taken = t;
}

static void compaction_free(compaction *c) {
    free(c->head.data);
    free(c->fresh.data);
    free(c->taken.data);
    free(c->accounts.data);
    free(c->running);
    free(c);
}

static void compact_done(uv_work_t *w, int status) {
    compaction *c = w->data;
    journal *j = c->j;
    j->compaction = NULL;
    j->busy = false;
    if (status == 0 && c->err == 0) {
        srv_log(SRV_LOG_INFO,
                "journal %s: compacted from %" PRIu64
                " to %zu bytes (%zu running games); "
                "%" PRIu64 " bytes of finished games moved to %s.results",
                j->path, c->old_size, c->fresh.len, c->nrunning, c->archived, j->path);
        j->fd = c->new_fd;
        j->good = c->fresh.len;
        j->base = c->fresh.len;
        j->written = c->pos;
        j->stats.compactions++;
        /* The cluster gets the compacted journal whole, in place of every
         * record it had from this node (takeover.c publishes it, then purges
         * what came before): its stream holds what the journal holds. What
         * waited to be replicated is in it, or archived (a finished game). */
        if (j->replicate) {
            j->unreplicated.len = 0;
            j->unreplicated_base = 0;
            if (bytes_add(&j->unreplicated, c->fresh.data, c->fresh.len) == 0)
                j->unreplicated_base = c->fresh.len;
            else
                srv_log(SRV_LOG_ERROR, "journal: out of memory; the compacted journal "
                                       "is not replicated");
        }
        uint64_t pos = c->pos;
        compaction_free(c);
        replicated_then_durable(j, pos);
        commit_start(j);
        return;
    } else {
        j->stats.errors++;
        give_back(j, c);
        j->compact_retry_at = c->old_size + c->max / 4;
        srv_log(SRV_LOG_ERROR,
                "journal %s: compaction failed %s: %s; the journal goes on as it was",
                j->path, c->step, uv_strerror(status ? status : c->err));
    }
    compaction_free(c);
    commit_start(j);
}

static int id_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* When the file must be compacted: at --journal-max, and, once live data
 * alone is near that, only when the file has doubled since the last
 * compaction (as redis rewrites its AOF at a percentage of growth over the
 * last rewrite). A running game's records can exceed any limit; this keeps
 * compactions to a logarithmic number as it grows, not one per commit. */
static uint64_t compact_threshold(const journal *j) {
    uint64_t max = j->max;
    return j->base > max / 2 ? 2 * j->base : max;
}

/* Starts a compaction once the file has reached its threshold. */
static bool compact_maybe(journal *j) {
    if (!j->on || j->busy || j->good + j->pending.len < compact_threshold(j) ||
        j->good < j->compact_retry_at)
        return false;
    compaction *c = calloc(1, sizeof *c);
    if (!c) return false;
    c->j = j;
    c->old_fd = j->fd;
    c->old_size = j->good;
    c->max = j->max;
    c->pos = j->appended;
    snprintf(c->path, sizeof c->path, "%s", j->path);
    size_t n = 0;
    for (srv_link *l = j->games.next; l != &j->games; l = l->next)
        n++;
    c->running = malloc((n ? n : 1) * sizeof *c->running);
    int bad = !c->running;
    for (srv_link *l = j->games.next; l != &j->games && !bad; l = l->next) {
        jrn_game *g = srv_container(l, jrn_game, all_link);
        if (!g->ended) c->running[c->nrunning++] = g->start.game;
    }
    if (!bad) qsort(c->running, c->nrunning, sizeof *c->running, id_cmp);
    bad |= bytes_printf(&c->head,
                        "{\"j\":\"head\",\"next_game\":%" PRIu64 ",\"next_id\":%" PRIu64
                        ",\"compacted\":%" PRId64 "}\n",
                        j->next_game, j->next_player_id ? *j->next_player_id : 0,
                        journal_wall_ms());
    size_t naccounts = j->accounts ? acct_count(j->accounts) : 0;
    for (size_t k = 0; k < naccounts && !bad; k++) {
        size_t len;
        char *line = jacct_record(acct_at(j->accounts, k), &len);
        bad |= !line || bytes_add(&c->accounts, line, len) < 0;
        free(line);
    }
    int32_t keep_from = daily_day_of_ms(journal_wall_ms()) - DAILY_KEEP_DAYS;
    size_t kept = 0; /* the table keeps the days the file keeps */
    for (size_t k = 0; k < j->ndailies; k++)
        if (j->dailies[k].day >= keep_from) j->dailies[kept++] = j->dailies[k];
    j->ndailies = kept;
    for (size_t k = 0; k < j->ndailies && !bad; k++)
        bad |= daily_line(&j->dailies[k], &c->accounts) < 0;
    if (j->daily && !bad) {
        entries_out out = {.keep_from = keep_from, .to = &c->accounts};
        daily_each(j->daily, entry_out, &out);
        bad |= out.bad;
    }
    if (bad) {
        compaction_free(c);
        srv_log(SRV_LOG_ERROR, "journal: out of memory for a compaction");
        return false;
    }
    c->taken = j->pending;
    j->pending = (bytes){0};
    j->busy = true;
    j->compaction = c;
    j->compact_work.data = c;
    if (uv_queue_work(j->loop, &j->compact_work, compact_work, compact_done) < 0) {
        /* Cannot happen with a valid loop; the records taken go back. */
        j->busy = false;
        j->compaction = NULL;
        give_back(j, c);
        compaction_free(c);
        return false;
    }
    return true;
}

/* ------------------------------------------------------ history, replay --- */

int journal_history(const journal *j, int limit, const proto_game_record **out) {
    if (!j) return -1;
    int listed = 0;
    for (size_t k = 0; listed < limit && k < j->index_count; k++) {
        const indexed *e = index_at(j, k);
        if (e->pos > j->durable) continue; /* its `end` has not gone out yet */
        if (journal_daily_secret(j, e->rec)) continue; /* until its day is over */
        out[listed++] = e->rec;
    }
    return listed;
}

const proto_game_record *journal_replay(const journal *j, uint64_t id) {
    for (size_t k = 0; j && k < j->index_count; k++) {
        const indexed *e = index_at(j, k);
        if (e->rec->game == id && e->pos <= j->durable)
            return journal_daily_secret(j, e->rec) ? NULL : e->rec;
    }
    return NULL;
}

journal_stats journal_get_stats(const journal *j) {
    return j ? j->stats : (journal_stats){0};
}

/* ---------------------------------------------------------- open, close --- */

/* Reads the whole file (start-up only, before the loop serves anyone). */
static int read_all(int fd, bytes *out) {
    struct stat st;
    if (fstat(fd, &st) < 0) return -1;
    if (bytes_reserve(out, (size_t)st.st_size + 1) < 0) return -1;
    for (;;) {
        if (bytes_reserve(out, 65536) < 0) return -1;
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) return 0;
        out->len += (size_t)n;
    }
}

/* Finished-game lines, growing. */
typedef struct line_list {
    jread_line *lines;
    size_t n, cap;
} line_list;

static int lines_add(line_list *l, const jread_line *line) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        jread_line *d = realloc(l->lines, cap * sizeof *d);
        if (!d) return -1;
        l->lines = d;
        l->cap = cap;
    }
    l->lines[l->n++] = *line;
    return 0;
}

/* The archive's most recent finished games, so that `history` after a
 * restart also reaches back past the last compaction: its last 4 MiB are
 * read into buf, and their lines added to out (they are older than the
 * journal's own games). */
static void archive_file_tail(journal *j, const char *name, bytes *buf, line_list *out) {
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    size_t want = 4u << 20;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        size_t n = (size_t)st.st_size < want ? (size_t)st.st_size : want;
        off_t from = st.st_size - (off_t)n;
        ssize_t got = bytes_reserve(buf, n) == 0 ? pread(fd, buf->data, n, from) : -1;
        /* Whole lines only: skip a cut first line unless the tail is the file. */
        size_t at = 0;
        if (got > 0 && from > 0) {
            const char *nl = memchr(buf->data, '\n', (size_t)got);
            at = nl ? (size_t)(nl - buf->data) + 1 : (size_t)got;
        }
        static const char head[] = "{\"j\":\"game\",\"game\":";
        while (got > 0 && at < (size_t)got) {
            const char *line = buf->data + at;
            const char *nl = memchr(line, '\n', (size_t)got - at);
            if (!nl) break;
            size_t len = (size_t)(nl - line) + 1;
            if (len > sizeof head && !memcmp(line, head, sizeof head - 1)) {
                jread_line l = {strtoull(line + sizeof head - 1, NULL, 10), line, len};
                note_game(j, l.id);
                if (lines_add(out, &l) < 0) break;
            }
            at += len;
        }
    }
    close(fd);
}

/* Reads the file: indexes the finished games (the archive's most recent
 * first: those of the last rotated file, since a rotation may have just left
 * FILE.results nearly empty, then FILE.results, then the journal's own) and
 * fills rec. Returns the length of the whole records, or -1 with errno. */
static ssize_t read_records(journal *j, jrn_recovery *rec) {
    bytes data = {0}, tails[2] = {{0}};
    if (read_all(j->fd, &data) < 0) {
        int e = errno;
        free(data.data);
        errno = e;
        return -1;
    }
    rec->started_ns = uv_hrtime(); /* the log's time: reading records, not the file */
    line_list finished = {0};
    char name[4200];
    snprintf(name, sizeof name, "%s.results.1", j->path);
    archive_file_tail(j, name, &tails[0], &finished);
    snprintf(name, sizeof name, "%s.results", j->path);
    archive_file_tail(j, name, &tails[1], &finished);
    jread_line *done = NULL;
    size_t ndone = 0;
    size_t good = jread_records(data.data, data.len, rec, &done, &ndone);
    for (size_t k = 0; k < ndone; k++)
        if (lines_add(&finished, &done[k]) < 0) break;
    index_lines(j, finished.lines, finished.n);
    /* The journal's own records only: the archive's games are in the
     * accounts records of the compaction that moved them. */
    if (j->accounts) jacct_replay(j->accounts, data.data, good);
    dailies_replay(j, data.data, good);
    free(done);
    free(finished.lines);
    free(tails[0].data);
    free(tails[1].data);
    free(data.data);
    if (good < data.len)
        srv_log(SRV_LOG_WARN,
                "journal %s: the last record is torn (%zu bytes after offset %zu); "
                "skipped and cut off",
                j->path, data.len - good, good);
    rec->torn = good < data.len;
    return (ssize_t)good;
}

/* One server per journal. Two servers appending to one file would both
 * number their games from the same point and write over each other's
 * records; the second one is refused at start. The lock is flock(2) on a
 * file beside the journal, FILE.lock (FILE as realpath(3) names it, so every
 * way of spelling the path, symlinks included, meets the same lock), held by
 * an open descriptor until the process ends, however it ends (the kernel
 * lets go of a dead process's locks: a kill -9 leaves nothing to clean up).
 * Not the journal itself: a compaction renames a new file over FILE, and a
 * lock on the old file would stay with the old inode while a second server
 * opened the new one unlocked. The lock file is never removed (a removed
 * one would let a third server lock a new file of the same name). 0, or -1
 * with the reason printed. */
static int lock_journal(journal *j) {
    char real[4096], lock_path[4096 + 8];
    if (!realpath(j->path, real)) snprintf(real, sizeof real, "%s", j->path);
    snprintf(lock_path, sizeof lock_path, "%s.lock", real);
    j->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (j->lock_fd < 0) {
        fprintf(stderr,
                "race2048d: cannot open the journal's lock file %s: %s (the folder of "
                "--journal must be writable)\n",
                lock_path, strerror(errno));
        return -1;
    }
    while (flock(j->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EINTR) continue;
        if (errno == EWOULDBLOCK)
            fprintf(stderr,
                    "race2048d: the journal %s is in use by another running race2048d "
                    "(it holds %s): one journal is one server's; give this one its own "
                    "--journal FILE, or --journal none\n",
                    j->path, lock_path);
        else
            fprintf(stderr, "race2048d: cannot lock the journal %s (%s): %s\n", j->path,
                    lock_path, strerror(errno));
        return -1;
    }
    return 0;
}

int journal_open(journal **out, uv_loop_t *loop, const journal_config *cfg,
                 jrn_recovery *rec) {
    *rec = (jrn_recovery){.next_game = 1, .started_ns = uv_hrtime()};
    journal *j = *out = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "race2048d: out of memory\n");
        return -1;
    }
    j->loop = loop;
    j->fd = -1;
    j->lock_fd = -1;
    j->next_game = 1;
    j->max = cfg->max;
    j->next_player_id = cfg->next_player_id;
    j->replicate = cfg->replicate;
    j->replicate_ctx = cfg->replicate_ctx;
    j->unflushed_since_ms = -1;
    j->show_window_ms = cfg->sync_ms + JOURNAL_SHOW_SLACK_MS;
    j->accounts = cfg->accounts;
    j->daily = cfg->daily;
    j->daily_offset_ms = cfg->daily_offset_ms;
    srv_list_init(&j->dirty);
    srv_list_init(&j->games);
    srv_list_init(&j->durable_subs);
    j->index = calloc(INDEX_GAMES_MAX, sizeof *j->index);
    uv_timer_init(loop, &j->timer);
    j->timer.data = j;
    if (!cfg->path || !cfg->path[0]) {
        rec->next_game = 0; /* nothing is recorded */
        return 0;
    }

    snprintf(j->path, sizeof j->path, "%s", cfg->path);
    j->fd = open(j->path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (j->fd < 0) {
        fprintf(stderr,
                "race2048d: cannot open the journal %s: %s (set --journal to a writable "
                "file, or --journal none to run without one)\n",
                j->path, strerror(errno));
        return -1;
    }
    if (lock_journal(j) < 0) return -1; /* before anything is read or repaired */
    j->on = true;
    ssize_t good = read_records(j, rec);
    if (good < 0) {
        fprintf(stderr, "race2048d: cannot read the journal %s: %s\n", j->path,
                strerror(errno));
        return -1;
    }
    if (rec->torn && (ftruncate(j->fd, (off_t)good) < 0 || fdatasync(j->fd) < 0)) {
        fprintf(stderr, "race2048d: cannot repair the journal %s: %s\n", j->path,
                strerror(errno));
        return -1;
    }
    note_game(j, rec->next_game - 1);
    rec->next_game = j->next_game;
    rec->bytes = (size_t)good;
    j->good = j->base = (uint64_t)good;
    uv_timer_start(&j->timer, on_commit_timer, cfg->sync_ms, cfg->sync_ms);
    uv_unref((uv_handle_t *)&j->timer);
    return 0;
}

void journal_recovery_free(jrn_recovery *rec) {
    for (size_t k = 0; k < rec->ngames; k++)
        for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
            free(rec->games[k].moves[i]);
    free(rec->games);
    rec->games = NULL;
    rec->ngames = 0;
}

/* The loop has stopped: writes what is pending synchronously. */
static void write_pending_now(journal *j) {
    flush_moves(j);
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

void journal_close(journal *j) {
    if (!j) return;
    if (j->on && !j->busy) write_pending_now(j);
    if (j->fd >= 0) close(j->fd);
    if (j->lock_fd >= 0) close(j->lock_fd); /* the next server may have it */
    for (size_t k = 0; j->index && k < INDEX_GAMES_MAX; k++)
        record_free(j->index[k].rec);
    free(j->index);
    free(j->pending.data);
    free(j->inflight.data);
    free(j->unreplicated.data);
    free(j->replicating.data);
    free(j->dailies);
    free(j);
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
