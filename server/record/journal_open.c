/* journal_open.c - the journal's life: opening and locking the file, reading it back
 * at start-up (the archive's tail too), closing; and the small tools. */
#define _XOPEN_SOURCE 700 /* realpath(3), for the journal's lock (lock_journal) */
#include "journal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "journal_accounts.h"
#include "journal_read.h"
#include "hex.h"

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
    proto_hex_encode(md, 32, out);
    return 0;
}

const char *journal_path(const journal *j) {
    return j ? j->path : "";
}

/* ---------------------------------------------------------- open, close --- */

/* Reads the whole file (start-up only, before the loop serves anyone). */
static int read_all(int fd, byte_buf *out) {
    struct stat st;
    if (fstat(fd, &st) < 0) return -1;
    if (byte_buf_reserve(out, (size_t)st.st_size + 1) < 0) return -1;
    for (;;) {
        if (byte_buf_reserve(out, 65536) < 0) return -1;
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
static void archive_file_tail(journal *j, const char *name, byte_buf *buf,
                              line_list *out) {
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    size_t want = 4u << 20;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        size_t n = (size_t)st.st_size < want ? (size_t)st.st_size : want;
        off_t from = st.st_size - (off_t)n;
        ssize_t got = byte_buf_reserve(buf, n) == 0 ? pread(fd, buf->data, n, from) : -1;
        /* Whole lines only: skip a cut first line unless the tail is the file. */
        size_t at = 0;
        if (got > 0 && from > 0) {
            const char *nl = memchr(buf->data, '\n', (size_t)got);
            at = nl ? (size_t)(nl - buf->data) + 1 : (size_t)got;
        }
        while (got > 0 && at < (size_t)got) {
            const char *line = buf->data + at;
            const char *nl = memchr(line, '\n', (size_t)got - at);
            if (!nl) break;
            size_t len = (size_t)(nl - line) + 1;
            jread_line l = {0, line, len};
            if (proto_rec_kind_of(line, len, &l.id) == PROTO_REC_GAME) {
                jrn_note_game(j, l.id);
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
    byte_buf data = {0}, tails[2] = {{0}};
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
    jrn_index_lines(j, finished.lines, finished.n);
    /* The journal's own records only: the archive's games are in the
     * accounts records of the compaction that moved them. */
    if (j->accounts) jacct_replay(j->accounts, data.data, good);
    jrn_dailies_replay(j, data.data, good);
    jrn_arenas_replay(j, data.data, good);
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
    jrn_note_game(j, rec->next_game - 1);
    rec->next_game = j->next_game;
    rec->bytes = (size_t)good;
    j->good = j->base = (uint64_t)good;
    uv_timer_start(&j->timer, jrn_on_commit_timer, cfg->sync_ms, cfg->sync_ms);
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
void journal_close(journal *j) {
    if (!j) return;
    jrn_compact_abandon(j); /* the loop has stopped: its slices never come */
    if (j->on && !j->busy) jrn_write_pending_now(j);
    if (j->fd >= 0) close(j->fd);
    if (j->lock_fd >= 0) close(j->lock_fd); /* the next server may have it */
    for (size_t k = 0; j->index && k < INDEX_GAMES_MAX; k++)
        jrn_record_free(j->index[k].rec);
    free(j->index);
    free(j->pending.data);
    free(j->inflight.data);
    free(j->unreplicated.data);
    free(j->replicating.data);
    free(j->dailies);
    jrn_arenas_free(j);
    free(j);
}
