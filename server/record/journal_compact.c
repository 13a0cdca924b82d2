/* journal_compact.c - compaction: the running games' records and the live state into
 * a new journal, the finished games to the results archive, on the thread pool. */
#include "journal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal_accounts.h"

/* ----------------------------------------------------------- compaction --- */

/* How many rotated results archives are kept beside FILE.results. */
#define ARCHIVES_KEPT 4

/* One compaction. The loop takes the pending records and notes which games
 * are running (their ids: a few byte_buf each); everything else, reading the old
 * journal and sorting its records out, is done on the thread pool, so a
 * compaction costs the loop the same however large the live data is. */
typedef struct compaction {
    journal *j;
    byte_buf head;  /* the new journal's first record (made on the loop) */
    byte_buf taken; /* the pending records it replaces: written after all if it fails */
    /* Every account as it is when the compaction begins, written after
     * everything else: the finished games kept before it find no account and
     * change nothing, so no rating counts twice. The loop copies the accounts,
     * a slice a turn (copy_slice); their records are made on the thread pool
     * (some 6 us each: 0.6 s of one loop turn for 100,000 accounts when the
     * loop made them, tests/bench/compact_turn.c). */
    acct_account *account_copies;
    size_t naccounts, copied;
    /* Then the daily seeds (made on the loop), the daily entries (copied on
     * the loop, their records made on the thread pool) and the arenas (made on
     * the loop). */
    byte_buf accounts;
    proto_daily_entry_record *entries;
    size_t nentries;
    byte_buf arenas;
    uint64_t *running; /* ids of the running games, sorted */
    size_t nrunning;
    uint64_t pos; /* j->appended when it began: durable once it is done */
    int old_fd;   /* the journal being replaced, read up to old_size */
    uint64_t old_size;
    uint64_t max; /* --journal-max: also the archive's rotation size */
    char path[4096];
    byte_buf fresh;    /* result: the new journal (freed on the thread pool unless
                        * replicated: tens of MB back to the system cost the loop) */
    bool keep_fresh;   /* the cluster gets it (j->replicate) */
    size_t fresh_len;  /* result: its length */
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

/* The kinds of record a compaction sorts, by their heads {"j":"KIND","game":ID
 * (proto_rec_kind_of). */
typedef enum record_kind { REC_OTHER, REC_FINISHED, REC_RUNNING } record_kind;

static bool is_running(const compaction *c, uint64_t id) {
    assert(c->nrunning == 0 || c->running);
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
    uint64_t id;
    switch (proto_rec_kind_of(line, n, &id)) {
    case PROTO_REC_GAME:
        return REC_FINISHED;
    case PROTO_REC_START:
    case PROTO_REC_MOVES:
    case PROTO_REC_SEAT:
        return is_running(c, id) ? REC_RUNNING : REC_OTHER;
    default:
        return REC_OTHER;
    }
}

/* Sorts whole records out of data: finished games to `finished` (if not
 * NULL, else to fresh), the records of running games to fresh, in order:
 * a running game keeps every record it has, so a replay stays complete. */
static int sort_records(compaction *c, const char *data, size_t len, byte_buf *finished) {
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (data + at)) + 1 : len - at;
        record_kind kind = nl ? record_of(c, data + at, n) : REC_OTHER;
        byte_buf *to = kind == REC_RUNNING                ? &c->fresh
                       : kind == REC_FINISHED && finished ? finished
                       : kind == REC_FINISHED             ? &c->fresh
                                                          : NULL;
        if (to && byte_buf_append(to, data + at, n) < 0) return -ENOMEM;
        at += n;
    }
    return 0;
}

/* The accounts' records (from their copies, freed then) to c->fresh: 0 or
 * -ENOMEM. */
static int encode_accounts(compaction *c) {
    int err = 0;
    for (size_t k = 0; k < c->naccounts && !err; k++) {
        size_t len;
        char *line = jacct_record(&c->account_copies[k], &len);
        if (!line || byte_buf_append(&c->fresh, line, len) < 0) err = -ENOMEM;
        free(line);
    }
    free(c->account_copies); /* here, not on the loop: tens of MB go back */
    c->account_copies = NULL;
    return err;
}

/* Then the daily seeds, the daily entries' records and the arenas: 0 or -ENOMEM. */
static int append_tail(compaction *c) {
    if (byte_buf_append(&c->fresh, c->accounts.data, c->accounts.len) < 0) return -ENOMEM;
    int err = 0;
    for (size_t k = 0; k < c->nentries && !err; k++)
        if (proto_rec_put_daily_entry(&c->fresh, &c->entries[k]) < 0) err = -ENOMEM;
    free(c->entries); /* here, not on the loop */
    c->entries = NULL;
    if (err) return err;
    return byte_buf_append(&c->fresh, c->arenas.data, c->arenas.len) < 0 ? -ENOMEM : 0;
}

/* On the thread pool: moves the old journal's finished games to the archive,
 * then puts the new journal in place (the running games' records and the
 * pending finished games): write, fsync, rename, fsync the directory. The
 * old file stays whole until the rename. */
static void compact_work(uv_work_t *w) {
    compaction *c = w->data;
    c->new_fd = -1;
    char *old = malloc(c->old_size ? c->old_size : 1);
    byte_buf games = {0};
    char tmp[4200], archive[4200];
    snprintf(tmp, sizeof tmp, "%s.compacting", c->path);
    snprintf(archive, sizeof archive, "%s.results", c->path);
    c->step = "reading the journal";
    if (!old || byte_buf_append(&c->fresh, c->head.data, c->head.len) < 0) {
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
        (c->err = encode_accounts(c)) < 0 || (c->err = append_tail(c)) < 0)
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
    c->fresh_len = c->fresh.len;
    if (!c->keep_fresh) byte_buf_free(&c->fresh);
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
    if (j->pending.len &&
        byte_buf_append(&c->taken, j->pending.data, j->pending.len) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; %zu bytes of records dropped",
                (size_t)c->taken.len);
        j->stats.errors++;
        return;
    }
    byte_buf t = j->pending;
    j->pending = c->taken;
    c->taken = t;
}

static void compaction_free(compaction *c) {
    free(c->head.data);
    free(c->fresh.data);
    free(c->taken.data);
    free(c->accounts.data);
    free(c->entries);
    free(c->arenas.data);
    free(c->account_copies);
    free(c->running);
    free(c);
}

static void compact_done(uv_work_t *w, int status) {
    compaction *c = w->data;
    journal *j = c->j;
    assert(j->compaction == c && j->busy);
    j->compaction = NULL;
    j->busy = false;
    if (status == 0 && c->err == 0) {
        srv_log(SRV_LOG_INFO,
                "journal %s: compacted from %" PRIu64
                " to %zu bytes (%zu running games); "
                "%" PRIu64 " bytes of finished games moved to %s.results",
                j->path, c->old_size, c->fresh_len, c->nrunning, c->archived, j->path);
        j->fd = c->new_fd;
        j->good = c->fresh_len;
        j->base = c->fresh_len;
        j->written = c->pos;
        jrn_assert_positions(j);
        j->stats.compactions++;
        /* The cluster gets the compacted journal whole, in place of every
         * record it had from this node (takeover.c publishes it, then purges
         * what came before): its stream holds what the journal holds. What
         * waited to be replicated is in it, or archived (a finished game). */
        if (j->replicate) {
            /* Moved, not copied: the compacted journal may be tens of MB. */
            byte_buf_free(&j->unreplicated);
            j->unreplicated = c->fresh;
            j->unreplicated_base = c->fresh_len;
            c->fresh = (byte_buf){0};
        }
        uint64_t pos = c->pos;
        compaction_free(c);
        jrn_replicated_then_durable(j, pos);
        jrn_commit_start(j);
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
    jrn_commit_start(j);
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

/* The copies are made ACCOUNTS_PER_TURN at a time, one slice a loop turn
 * (about 0.9 MB of memcpy, a fraction of a millisecond), so that a
 * compaction costs each loop turn the same however many accounts there are. */
#define ACCOUNTS_PER_TURN 2048

static void compact_queue(journal *j, compaction *c) {
    j->compact_work.data = c;
    if (uv_queue_work(j->loop, &j->compact_work, compact_work, compact_done) < 0) {
        /* Cannot happen with a valid loop; the records taken go back. */
        j->busy = false;
        j->compaction = NULL;
        give_back(j, c);
        compaction_free(c);
    }
}

/* One slice of the accounts' copies; the work is queued after the last. An
 * account copied some turns after the compaction began may hold a finished
 * game recorded after that point: replaying that game's record again finds
 * it among the account's recent games and skips it (jacct_apply_game). */
static void copy_slice(journal *j) {
    compaction *c = j->compaction;
    assert(c && j->busy && c->copied < c->naccounts);
    size_t end = c->copied + ACCOUNTS_PER_TURN;
    if (end > c->naccounts) end = c->naccounts;
    for (size_t k = c->copied; k < end; k++)
        c->account_copies[k] = *acct_at(j->accounts, k);
    c->copied = end;
    if (c->copied < c->naccounts) return;
    uv_idle_stop(&j->compact_idle);
    compact_queue(j, c);
}

static void on_copy_turn(uv_idle_t *h) {
    copy_slice(h->data);
}

void jrn_compact_abandon(journal *j) {
    compaction *c = j->compaction;
    if (!c || c->copied >= c->naccounts) return; /* none, or on the thread pool */
    uv_idle_stop(&j->compact_idle);
    j->busy = false;
    j->compaction = NULL;
    give_back(j, c);
    compaction_free(c);
}

/* Starts a compaction once the file has reached its threshold. */
bool jrn_compact_maybe(journal *j) {
    if (!j->on || j->busy || j->good + j->pending.len < compact_threshold(j) ||
        j->good < j->compact_retry_at)
        return false;
    size_t naccounts = j->accounts ? acct_count(j->accounts) : 0;
    compaction *c = calloc(1, sizeof *c);
    if (!c) return false;
    c->j = j;
    c->old_fd = j->fd;
    c->old_size = j->good;
    c->max = j->max;
    c->pos = j->appended;
    c->keep_fresh = j->replicate != NULL;
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
    bad |= proto_rec_put_head(&c->head, j->next_game,
                              j->next_player_id ? *j->next_player_id : 0,
                              journal_wall_ms()) < 0;
    if (naccounts && !bad) { /* copied from this turn on (copy_slice) */
        c->account_copies = malloc(naccounts * sizeof *c->account_copies);
        bad |= !c->account_copies;
        c->naccounts = bad ? 0 : naccounts;
    }
    int32_t keep_from = daily_day_of_ms(journal_wall_ms()) - DAILY_KEEP_DAYS;
    size_t kept = 0; /* the table keeps the days the file keeps */
    for (size_t k = 0; k < j->ndailies; k++)
        if (j->dailies[k].day >= keep_from) j->dailies[kept++] = j->dailies[k];
    j->ndailies = kept;
    for (size_t k = 0; k < j->ndailies && !bad; k++)
        bad |= jrn_daily_line(&j->dailies[k], &c->accounts) < 0;
    if (j->daily && !bad) {
        jrn_entries_out out = {.keep_from = keep_from};
        daily_each(j->daily, jrn_entry_out, &out);
        c->entries = out.entries;
        c->nentries = out.n;
        bad |= out.bad;
    }
    bad |= !bad && jrn_arenas_out(j, &c->arenas) < 0;
    if (bad) {
        compaction_free(c);
        srv_log(SRV_LOG_ERROR, "journal: out of memory for a compaction");
        return false;
    }
    c->taken = j->pending;
    j->pending = (byte_buf){0};
    j->busy = true;
    j->compaction = c;
    if (!c->naccounts) {
        compact_queue(j, c);
        return j->compaction != NULL;
    }
    if (!j->compact_idle_ready) {
        uv_idle_init(j->loop, &j->compact_idle);
        j->compact_idle.data = j;
        j->compact_idle_ready = true;
    }
    copy_slice(j);
    if (j->compaction == c && c->copied < c->naccounts)
        uv_idle_start(&j->compact_idle, on_copy_turn);
    return j->compaction != NULL;
}
