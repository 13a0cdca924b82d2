/* journal.c - the durable record: NDJSON records, group commits on the thread pool,
 * and the in-memory index of finished games for history and replay. */
#include "journal.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "metrics.h"
#include "recover.h"
#include "room.h"

/* Finished games kept for `history` and `replay`: the most recent, up to a
 * count and a byte budget, so the index never grows without bound. */
#define INDEX_GAMES_MAX JOURNAL_INDEX_GAMES
#define INDEX_BYTES_MAX (16u << 20)
/* Records kept in memory while writes fail; beyond this new ones are dropped
 * (counted and logged) rather than let memory grow without bound. */
#define PENDING_MAX (64u << 20)
/* Bytes buffered before a commit is started early (a burst of records). */
#define EARLY_COMMIT_BYTES (1u << 20)

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
    uint64_t id;
    int64_t started_ms;
    char token_hash[PROTO_PLAYERS_MAX][65]; /* for snapshots after players left */
    srv_link all_link;                      /* in journal.games */
    jrn_seat seats[PROTO_PLAYERS_MAX];
    srv_link dirty_link; /* in journal.dirty while it has unflushed moves */
    bool dirty;
    bool ended; /* its finished record is written */
};

/* One finished game in the index. */
typedef struct indexed {
    uint64_t game;
    uint64_t pos; /* its record's journal position: listed once durable */
    char *full;   /* the record, without its newline */
    size_t full_len;
    size_t summary_len; /* the record without "moves" is full[0..summary_len) + "}" */
} indexed;

typedef struct journal {
    srv *srv;
    bool on; /* a file is kept */
    int fd;
    char path[4096];
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
    void (*on_durable)(srv *s);
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
    srv_link games;            /* every jrn_game, for compaction snapshots */
    uint64_t compact_retry_at; /* after a failed compaction: size to try again at */
    uv_work_t compact_work;
    struct compaction *compaction; /* the one in progress, or NULL */
    journal_stats stats;
    indexed *index; /* ring of recent finished games */
    size_t index_head, index_count, index_bytes;
} journal;

/* The journal of a server or a game (both point at it). */
#define J(owner) ((owner)->journal)

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

/* ----------------------------------------------------------------- seeds --- */

void journal_seed_text(const room *r, char *out, size_t n) {
    char text[ENG_SEED_TEXT_MAX];
    if (eng_seed_format(&r->seed, text, sizeof text) <= 0) text[0] = '\0';
    /* As `end` writes it: a string for a server seed, a number for a client's. */
    snprintf(out, n, r->seed.kind == ENG_SEED_SERVER ? "\"%s\"" : "%s", text);
}

int journal_seed_parse(room *r, const json_t *v) {
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= (json_int_t)UINT32_MAX) {
        r->seed = eng_seed_client((uint32_t)json_integer_value(v));
    } else if (json_is_string(v)) {
        eng_seed seed;
        if (eng_seed_parse(&seed, json_string_value(v), (int)json_string_length(v)) < 0 ||
            seed.kind != ENG_SEED_SERVER)
            return -1;
        r->seed = seed;
    } else {
        return -1;
    }
    r->seed_fixed = true;
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
    if (pos <= j->durable) return;
    j->durable = pos;
    if (j->on_durable) j->on_durable(j->srv);
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
    made_durable(j, j->sync_pos);
    if (j->hurry) commit_start(j); /* what came during this commit, at once too */
}

static void sync_start(journal *j) {
    j->sync_pos = j->written;
    j->req.data = j;
    int e = uv_fs_fdatasync(j->srv->loop, &j->req, j->fd, on_synced);
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
        if (uv_fs_ftruncate(j->srv->loop, &j->req, j->fd, (int64_t)j->good,
                            on_truncated) < 0)
            j->busy = false;
        return;
    }
    j->inflight_done += (size_t)rc;
    if (j->inflight_done < j->inflight.len) { /* a short write: go on */
        uv_buf_t buf = uv_buf_init(j->inflight.data + j->inflight_done,
                                   (unsigned)(j->inflight.len - j->inflight_done));
        j->req.data = j;
        int e = uv_fs_write(j->srv->loop, &j->req, j->fd, &buf, 1,
                            (int64_t)(j->good + j->inflight_done), on_written);
        if (e < 0) {
            j->req.result = e;
            on_written(&j->req);
        }
        return;
    }
    j->good += j->inflight.len;
    j->stats.bytes += j->inflight.len;
    j->inflight.len = 0;
    j->inflight_done = 0;
    j->written = j->inflight_pos;
    sync_start(j);
}

/* Appends `moves` records for every game with moves not yet recorded. */
static void flush_moves(journal *j);

static bool compact_maybe(journal *j);

static void commit_start(journal *j) {
    if (!j->on || j->busy) return;
    flush_moves(j);
    if (compact_maybe(j)) return;
    if (j->pending.len == 0) {
        /* Written but not synced (a sync failed): sync again, or the `end`s
         * waiting for those records would wait for the next record. */
        if (j->written > j->durable) {
            j->busy = true;
            sync_start(j);
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
    int e =
        uv_fs_write(j->srv->loop, &j->req, j->fd, &buf, 1, (int64_t)j->good, on_written);
    if (e < 0) {
        j->busy = false;
        incident(j, "write", e);
        requeue_inflight(j);
    }
}

static void on_commit_timer(uv_timer_t *t) {
    commit_start(t->data);
}

void journal_commit_now(srv *s) {
    journal *j = J(s);
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
}

static void append_bytes(journal *j, bytes *b) {
    append(j, b->data, b->len);
    free(b->data);
    *b = (bytes){0};
}

/* ---------------------------------------------------------------- games --- */

static void game_moves_record(journal *j, jrn_game *g, const room *r) {
    bytes b = {0};
    int bad = bytes_printf(&b, "{\"j\":\"moves\",\"game\":%" PRIu64 ",\"m\":{", g->id);
    bool first = true;
    for (int i = 0; i < r->nseats; i++) {
        jrn_seat *st = &g->seats[i];
        if (st->flushed == st->moves.len) continue;
        bad |= bytes_printf(&b, "%s\"%" PRIu64 "\":\"%.*s\"", first ? "" : ",",
                            r->seats[i].id, (int)(st->moves.len - st->flushed),
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

/* The room of a jrn_game: found through the dirty link's owner. */
typedef struct dirty_owner {
    jrn_game game;
    room *room;
} dirty_owner;

static void undirty(jrn_game *g) {
    if (!g->dirty) return;
    srv_list_remove(&g->dirty_link);
    g->dirty = false;
}

static void flush_moves(journal *j) {
    while (!srv_list_empty(&j->dirty)) {
        dirty_owner *o = srv_container(srv_container(j->dirty.next, jrn_game, dirty_link),
                                       dirty_owner, game);
        game_moves_record(j, &o->game, o->room);
        undirty(&o->game);
    }
}

static void flush_game_moves(journal *j, room *r) {
    jrn_game *g = r->jgame;
    if (!g->dirty) return;
    game_moves_record(j, g, r);
    undirty(g);
}

static jrn_game *game_new(room *r, uint64_t id, int64_t started_ms) {
    dirty_owner *o = calloc(1, sizeof *o);
    if (!o) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; a game goes unrecorded");
        return NULL;
    }
    o->room = r;
    o->game.id = id;
    o->game.started_ms = started_ms;
    srv_list_init(&o->game.dirty_link);
    srv_list_push(&J(r->game)->games, &o->game.all_link);
    r->jgame = &o->game;
    return &o->game;
}

/* The start record of a game (also in snapshots): returns 0 or -1 (OOM). */
static int start_record(bytes *b, const room *r, const jrn_game *g) {
    int bad = bytes_printf(b, "{\"j\":\"start\",\"game\":%" PRIu64 ",", g->id);
    if (!r->solo) bad |= bytes_printf(b, "\"room\":\"%s\",", r->code);
    char seed[80];
    journal_seed_text(r, seed, sizeof seed);
    bad |= bytes_printf(b,
                        "\"size\":%d,\"target\":%u,\"time_limit\":%u,\"seed\":%s,"
                        "\"salt\":\"%s\",\"commit\":\"%s\",\"started\":%" PRId64
                        ",\"seats\":[",
                        r->settings.size, r->settings.target, r->settings.time_limit,
                        seed, r->salt, r->commit, g->started_ms);
    for (int i = 0; i < r->nseats; i++)
        bad |= bytes_printf(b, "%s{\"id\":%" PRIu64 ",\"name\":\"%s\",\"token\":\"%s\"}",
                            i ? "," : "", r->seats[i].id, r->seats[i].name,
                            g->token_hash[i]);
    bad |= bytes_add(b, "]}\n", 3);
    return bad ? -1 : 0;
}

/* Keeps each seat's token hash for start records written later. */
static void note_token_hashes(const room *r, jrn_game *g) {
    for (int i = 0; i < r->nseats; i++) {
        const srv_player *p = r->seats[i].player;
        g->token_hash[i][0] = '\0';
        if (p && p->token[0])
            journal_token_hash(p->token, g->token_hash[i]);
        else if (p && p->token_hash)
            memcpy(g->token_hash[i], p->token_hash, sizeof g->token_hash[i]);
    }
}

void journal_game_start(room *r, int64_t started_ms) {
    journal *j = J(r->game);
    if (!j) return; /* a server without one (unit tests) */
    jrn_game *g = game_new(r, j->next_game++, started_ms);
    if (!g) return;
    note_token_hashes(r, g);
    bytes b = {0};
    if (start_record(&b, r, g) < 0)
        free(b.data);
    else
        append_bytes(j, &b);
}

void journal_game_restore(room *r, uint64_t game, int64_t started_ms) {
    if (!J(r->game)) return;
    jrn_game *g = game_new(r, game, started_ms);
    if (g) note_token_hashes(r, g);
    if (game >= J(r->game)->next_game) J(r->game)->next_game = game + 1;
}

void journal_game_restored(room *r) {
    jrn_game *g = r->jgame;
    if (!g) return;
    for (int i = 0; i < r->nseats; i++)
        g->seats[i].flushed = g->seats[i].moves.len;
    undirty(g);
}

void journal_move(room *r, int seat, eng_dir dir) {
    jrn_game *g = r->jgame;
    if (!g) return;
    char letter = proto_dir_letter(dir);
    if (bytes_add(&g->seats[seat].moves, &letter, 1) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory recording a move");
        return;
    }
    if (!g->dirty) {
        g->dirty = true;
        srv_list_push(&J(r->game)->dirty, &g->dirty_link);
    }
}

void journal_seat(room *r, int seat, const char *event) {
    journal *j = J(r->game);
    if (!r->jgame || !j->on) return;
    flush_game_moves(j, r); /* the moves before the event come first */
    bytes b = {0};
    if (bytes_printf(&b,
                     "{\"j\":\"seat\",\"game\":%" PRIu64 ",\"id\":%" PRIu64
                     ",\"event\":\"%s\"}\n",
                     r->jgame->id, r->seats[seat].id, event) == 0)
        append_bytes(j, &b);
    else
        free(b.data);
}

void journal_rematch(room *from, room *to) {
    journal *j = J(from->game);
    if (!from->jgame || !j->on) return;
    bytes b = {0};
    if (bytes_printf(&b, "{\"j\":\"rematch\",\"game\":%" PRIu64 ",\"room\":\"%s\"}\n",
                     from->jgame->id, to->code) == 0)
        append_bytes(j, &b);
    else
        free(b.data);
}

/* ---------------------------------------------------------------- index --- */

static void index_drop_oldest(journal *j) {
    indexed *e =
        &j->index[(j->index_head + INDEX_GAMES_MAX - j->index_count) % INDEX_GAMES_MAX];
    j->index_bytes -= e->full_len;
    free(e->full);
    e->full = NULL;
    j->index_count--;
}

/* Takes ownership of full (a record without its newline). */
static void index_put(journal *j, uint64_t game, uint64_t pos, char *full,
                      size_t full_len, size_t summary_len) {
    if (!j->index) {
        free(full);
        return;
    }
    while (j->index_count && (j->index_count == INDEX_GAMES_MAX ||
                              j->index_bytes + full_len > INDEX_BYTES_MAX))
        index_drop_oldest(j);
    indexed *e = &j->index[j->index_head];
    *e = (indexed){.game = game,
                   .pos = pos,
                   .full = full,
                   .full_len = full_len,
                   .summary_len = summary_len};
    j->index_head = (j->index_head + 1) % INDEX_GAMES_MAX;
    j->index_count++;
    j->index_bytes += full_len;
}

/* Where a finished-game record's "moves" member starts (the server always
 * writes it last), or NULL. */
static const char *moves_member(const char *line, size_t len) {
    static const char key[] = ",\"moves\":{";
    for (size_t k = len; k >= sizeof key - 1; k--)
        if (memcmp(line + k - (sizeof key - 1), key, sizeof key - 1) == 0)
            return line + k - (sizeof key - 1);
    return NULL;
}

/* True if the "moves" member m (len bytes to the record's end) holds a move:
 * its strings are of u, d, l and r, its keys digits. */
static bool moves_played(const char *m, size_t len) {
    for (size_t k = sizeof ",\"moves\":{" - 1; k < len; k++)
        if (m[k] == 'u' || m[k] == 'd' || m[k] == 'l' || m[k] == 'r') return true;
    return false;
}

void journal_index_add(srv *s, uint64_t game, const char *line, size_t len) {
    journal *j = J(s);
    /* A kill mid-compaction leaves a game in both the archive and the journal.
     * Ids only grow as games are added, so only one not past the newest can be
     * a copy: the scan is skipped for every game but those. */
    size_t n = j->index ? j->index_count : 0;
    if (n &&
        game <= j->index[(j->index_head + INDEX_GAMES_MAX - 1) % INDEX_GAMES_MAX].game)
        for (size_t k = 0; k < n; k++)
            if (j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX]
                    .game == game)
                return;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    /* The summary is the record up to its "moves" member, which the server
     * always writes last. */
    static const char key[] = ",\"moves\":{";
    const char *m = NULL;
    for (size_t k = len; !m && k >= sizeof key - 1; k--)
        if (memcmp(line + k - (sizeof key - 1), key, sizeof key - 1) == 0)
            m = line + k - (sizeof key - 1);
    /* A game in which no board changed is not listed (journal_game_end). */
    if (m && !moves_played(m, (size_t)(line + len - m))) {
        journal_note_game(s, game);
        return;
    }
    char *full = malloc(len + 1);
    if (!full || !m) {
        free(full);
        return;
    }
    memcpy(full, line, len);
    full[len] = '\0';
    index_put(j, game, 0, full, len, (size_t)(m - line));
    journal_note_game(s, game);
}

bool journal_record_played(const char *line, size_t len) {
    const char *m = moves_member(line, len);
    return !m || moves_played(m, (size_t)(line + len - m));
}

void journal_note_game(srv *s, uint64_t game) {
    if (game >= J(s)->next_game) J(s)->next_game = game + 1;
}

uint64_t journal_game_end(room *r, const char *end_line, size_t len) {
    journal *j = J(r->game);
    jrn_game *g = r->jgame;
    if (!g) return 0;
    undirty(g); /* the finished record holds every move */
    g->ended = true;
    /* The end line is {"type":"end",...}\n: keep its members. */
    static const char head[] = "{\"type\":\"end\",";
    if (len < sizeof head || memcmp(end_line, head, sizeof head - 1) != 0) return 0;
    const char *members = end_line + sizeof head - 1;
    size_t mlen = len - (sizeof head - 1);
    while (mlen && (members[mlen - 1] == '\n' || members[mlen - 1] == '}'))
        mlen--;
    bytes b = {0};
    int bad = bytes_printf(&b, "{\"j\":\"game\",\"game\":%" PRIu64 ",%.*s", g->id,
                           (int)mlen, members);
    bad |= bytes_printf(&b,
                        ",\"commit\":\"%s\",\"size\":%d,\"target\":%u,\"time_limit\":%u,"
                        "\"started\":%" PRId64 ",\"ended\":%" PRId64,
                        r->commit, r->settings.size, r->settings.target,
                        r->settings.time_limit, g->started_ms, journal_wall_ms());
    size_t summary_len = b.len;
    bad |= bytes_add(&b, ",\"moves\":{", sizeof ",\"moves\":{" - 1);
    bool played = false; /* a board changed: games nobody played are not listed */
    for (int i = 0; i < r->nseats; i++) {
        const bytes *mv = &g->seats[i].moves;
        played |= mv->len > 0;
        bad |= bytes_printf(&b, "%s\"%" PRIu64 "\":\"%.*s\"", i ? "," : "",
                            r->seats[i].id, (int)mv->len, mv->data ? mv->data : "");
    }
    bad |= bytes_add(&b, "}}\n", 3);
    if (bad) {
        free(b.data);
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing game %" PRIu64, g->id);
        return 0;
    }
    append(j, b.data, b.len);
    uint64_t pos = j->on ? j->appended : 0;
    b.data[b.len - 1] = '\0';
    if (played)
        index_put(j, g->id, pos, b.data, b.len - 1, summary_len);
    else
        free(b.data);
    if (j->pending.len >= EARLY_COMMIT_BYTES) commit_start(j);
    return pos;
}

uint64_t journal_durable_pos(const srv *s) {
    return J(s) ? J(s)->durable : 0;
}

void journal_on_durable(srv *s, void (*cb)(srv *s)) {
    if (J(s)) J(s)->on_durable = cb;
}

void journal_game_free(room *r) {
    jrn_game *g = r->jgame;
    if (!g) return;
    journal *j = J(r->game);
    if (!g->ended && j->on) flush_game_moves(j, r); /* shutdown: it resumes later */
    undirty(g);
    srv_list_remove(&g->all_link);
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(g->seats[i].moves.data);
    r->jgame = NULL;
    free(srv_container(g, dirty_owner, game));
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
        (c->err = sort_records(c, c->taken.data, c->taken.len, NULL)) < 0)
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
        made_durable(j, c->pos);
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
    uint64_t max = j->srv->cfg.journal_max;
    return j->base > max / 2 ? 2 * j->base : max;
}

/* Starts a compaction once the file has reached its threshold. */
static bool compact_maybe(journal *j) {
    srv *s = j->srv;
    if (!j->on || j->busy || j->good + j->pending.len < compact_threshold(j) ||
        j->good < j->compact_retry_at)
        return false;
    compaction *c = calloc(1, sizeof *c);
    if (!c) return false;
    c->j = j;
    c->old_fd = j->fd;
    c->old_size = j->good;
    c->max = s->cfg.journal_max;
    c->pos = j->appended;
    snprintf(c->path, sizeof c->path, "%s", j->path);
    size_t n = 0;
    for (srv_link *l = j->games.next; l != &j->games; l = l->next)
        n++;
    c->running = malloc((n ? n : 1) * sizeof *c->running);
    int bad = !c->running;
    for (srv_link *l = j->games.next; l != &j->games && !bad; l = l->next) {
        jrn_game *g = srv_container(l, jrn_game, all_link);
        if (!g->ended) c->running[c->nrunning++] = g->id;
    }
    if (!bad) qsort(c->running, c->nrunning, sizeof *c->running, id_cmp);
    bad |= bytes_printf(&c->head,
                        "{\"j\":\"head\",\"next_game\":%" PRIu64 ",\"next_id\":%" PRIu64
                        ",\"compacted\":%" PRId64 "}\n",
                        j->next_game, s->game.next_id, journal_wall_ms());
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
    if (uv_queue_work(s->loop, &j->compact_work, compact_work, compact_done) < 0) {
        /* Cannot happen with a valid loop; the records taken go back. */
        j->busy = false;
        j->compaction = NULL;
        give_back(j, c);
        compaction_free(c);
        return false;
    }
    return true;
}

/* -------------------------------------------------------------- replies --- */

char *journal_history(const journal *j, int limit, size_t *len) {
    if (!j) return NULL;
    bytes b = {0};
    int bad = bytes_add(&b, "{\"type\":\"history\",\"games\":[",
                        sizeof "{\"type\":\"history\",\"games\":[" - 1);
    int listed = 0;
    for (size_t k = 0; listed < limit && k < j->index_count; k++) {
        const indexed *e =
            &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX];
        if (e->pos > j->durable) continue; /* its `end` has not gone out yet */
        if (listed++) bad |= bytes_add(&b, ",", 1);
        bad |= bytes_add(&b, e->full, e->summary_len);
        bad |= bytes_add(&b, "}", 1);
    }
    bad |= bytes_add(&b, "]}\n", 3);
    if (bad) {
        free(b.data);
        return NULL;
    }
    *len = b.len;
    return b.data;
}

char *journal_replay(const journal *j, uint64_t id, size_t *len) {
    *len = 0;
    if (!j) return NULL;
    for (size_t k = 0; k < j->index_count; k++) {
        const indexed *e =
            &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX];
        if (e->game != id || e->pos > j->durable) continue;
        bytes b = {0};
        int bad =
            bytes_add(&b, "{\"type\":\"replay\",", sizeof "{\"type\":\"replay\"," - 1);
        bad |= bytes_add(&b, e->full + 1, e->full_len - 1);
        bad |= bytes_add(&b, "\n", 1);
        if (bad) {
            free(b.data);
            *len = 1;
            return NULL;
        }
        *len = b.len;
        return b.data;
    }
    return NULL;
}

journal_stats journal_get_stats(const srv *s) {
    if (!J(s)) return (journal_stats){0};
    return J(s)->stats;
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

/* The archive's most recent finished games, so that `history` after a
 * restart also reaches back past the last compaction: its last 4 MiB are
 * indexed before the journal's own games (which are newer). */
static void index_file_tail(srv *s, const char *name) {
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    size_t want = 4u << 20;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        size_t n = (size_t)st.st_size < want ? (size_t)st.st_size : want;
        off_t from = st.st_size - (off_t)n;
        buf = malloc(n);
        ssize_t got = buf ? pread(fd, buf, n, from) : -1;
        /* Whole lines only: skip a cut first line unless the tail is the file. */
        size_t at = 0;
        if (got > 0 && from > 0) {
            const char *nl = memchr(buf, '\n', (size_t)got);
            at = nl ? (size_t)(nl - buf) + 1 : (size_t)got;
        }
        static const char head[] = "{\"j\":\"game\",\"game\":";
        while (got > 0 && at < (size_t)got) {
            const char *line = buf + at;
            const char *nl = memchr(line, '\n', (size_t)got - at);
            if (!nl) break;
            size_t len = (size_t)(nl - line) + 1;
            if (len > sizeof head && !memcmp(line, head, sizeof head - 1))
                journal_index_add(s, strtoull(line + sizeof head - 1, NULL, 10), line,
                                  len);
            at += len;
        }
    }
    free(buf);
    close(fd);
}

/* The most recent finished games of the archive, for history: those of the last
 * rotated file first, since a rotation may have just left FILE.results nearly
 * empty, then those of FILE.results (newer, so they are the ones kept). */
static void index_archive_tail(srv *s, const char *path) {
    char name[4200];
    snprintf(name, sizeof name, "%s.results.1", path);
    index_file_tail(s, name);
    snprintf(name, sizeof name, "%s.results", path);
    index_file_tail(s, name);
}

int journal_open(srv *s) {
    journal *j = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "race2048d: out of memory\n");
        return -1;
    }
    s->journal = j;
    s->game.journal = j;
    j->srv = s;
    j->fd = -1;
    j->next_game = 1;
    srv_list_init(&j->dirty);
    srv_list_init(&j->games);
    j->index = calloc(INDEX_GAMES_MAX, sizeof *j->index);
    uv_timer_init(s->loop, &j->timer);
    j->timer.data = j;
    if (!s->cfg.journal[0]) return 0;

    snprintf(j->path, sizeof j->path, "%s", s->cfg.journal);
    j->fd = open(j->path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (j->fd < 0) {
        fprintf(stderr,
                "race2048d: cannot open the journal %s: %s (set --journal to a writable "
                "file, or --journal none to run without one)\n",
                j->path, strerror(errno));
        return -1;
    }
    bytes data = {0};
    if (read_all(j->fd, &data) < 0) {
        fprintf(stderr, "race2048d: cannot read the journal %s: %s\n", j->path,
                strerror(errno));
        free(data.data);
        return -1;
    }
    uint64_t t0 = uv_hrtime();
    j->on = true;
    index_archive_tail(s, j->path);
    recover_stats rs;
    size_t good = recover_journal(s, data.data, data.len, &rs);
    /* With --seed, the K-th seed is derived from K: start past every recorded game so
     * that a restarted server never deals a seed it dealt before. */
    if (s->game.seeds_made < j->next_game) s->game.seeds_made = j->next_game;
    if (good < data.len) {
        srv_log(SRV_LOG_WARN,
                "journal %s: the last record is torn (%zu bytes after offset %zu); "
                "skipped and cut off",
                j->path, data.len - good, good);
        if (ftruncate(j->fd, (off_t)good) < 0 || fdatasync(j->fd) < 0) {
            fprintf(stderr, "race2048d: cannot repair the journal %s: %s\n", j->path,
                    strerror(errno));
            free(data.data);
            return -1;
        }
    }
    free(data.data);
    j->good = good;
    j->base = good;
    srv_log(SRV_LOG_INFO,
            "journal %s: %zu bytes, %zu records (%zu bad skipped), %zu finished games, "
            "%zu running games restored in %.1f ms",
            j->path, good, rs.records, rs.bad, rs.finished, rs.restored,
            (double)(uv_hrtime() - t0) / 1e6);
    uv_timer_start(&j->timer, on_commit_timer, s->cfg.journal_sync_ms,
                   s->cfg.journal_sync_ms);
    uv_unref((uv_handle_t *)&j->timer);
    return 0;
}

void journal_close(srv *s) {
    journal *j = J(s);
    if (!j) return;
    if (j->on && !j->busy) {
        flush_moves(j);
        /* The loop has stopped: finish synchronously. */
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
    if (j->fd >= 0) close(j->fd);
    for (size_t k = 0; j->index && k < INDEX_GAMES_MAX; k++)
        free(j->index[k].full);
    free(j->index);
    free(j->pending.data);
    free(j->inflight.data);
    free(j);
    s->journal = NULL;
    s->game.journal = NULL;
}

void journal_write_metrics(metrics_out *o, void *ctx) {
    const journal *j = ctx;
    journal_stats js = j->stats;
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
