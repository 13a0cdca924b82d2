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

#include "recover.h"
#include "room.h"

/* Finished games kept for `history` and `replay`: the most recent, up to a
 * count and a byte budget, so the index never grows without bound. */
#define INDEX_GAMES_MAX 1000
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
    jrn_seat seats[PROTO_PLAYERS_MAX];
    srv_link dirty_link; /* in journal.dirty while it has unflushed moves */
    bool dirty;
    bool ended; /* its finished record is written */
};

/* One finished game in the index. */
typedef struct indexed {
    uint64_t game;
    char *full; /* the record, without its newline */
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
    bool busy;     /* a write, sync or truncate is in progress */
    bool failing;  /* the last attempt failed: log again only after a success */
    bool dropping; /* records are being dropped: PENDING_MAX is reached */
    uv_fs_t req;
    uv_timer_t timer;
    srv_link dirty;
    journal_stats stats;
    indexed *index; /* ring of recent finished games */
    size_t index_head, index_count, index_bytes;
} journal;

static journal *J(const srv *s) {
    return s->journal;
}

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
}

static void on_written(uv_fs_t *req) {
    journal *j = req->data;
    ssize_t rc = req->result;
    uv_fs_req_cleanup(req);
    if (rc < 0) {
        incident(j, "write", (int)rc);
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
    j->req.data = j;
    int e = uv_fs_fdatasync(j->srv->loop, &j->req, j->fd, on_synced);
    if (e < 0) {
        j->busy = false;
        incident(j, "fdatasync", e);
    }
}

/* Appends `moves` records for every game with moves not yet recorded. */
static void flush_moves(journal *j);

static void commit_start(journal *j) {
    if (!j->on || j->busy) return;
    flush_moves(j);
    if (j->pending.len == 0) return;
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
    r->jgame = &o->game;
    return &o->game;
}

void journal_game_start(room *r, int64_t started_ms) {
    journal *j = J(r->srv);
    if (!j) return; /* a server without one (unit tests) */
    jrn_game *g = game_new(r, j->next_game++, started_ms);
    if (!g) return;
    bytes b = {0};
    int bad = bytes_printf(&b, "{\"j\":\"start\",\"game\":%" PRIu64 ",", g->id);
    if (!r->solo) bad |= bytes_printf(&b, "\"room\":\"%s\",", r->code);
    char seed[80];
    journal_seed_text(r, seed, sizeof seed);
    bad |= bytes_printf(&b,
                        "\"size\":%d,\"target\":%u,\"time_limit\":%u,\"seed\":%s,"
                        "\"salt\":\"%s\",\"commit\":\"%s\",\"started\":%" PRId64
                        ",\"seats\":[",
                        r->settings.size, r->settings.target, r->settings.time_limit,
                        seed, r->salt, r->commit, started_ms);
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        char hash[65] = "";
        if (seat->player) {
            if (seat->player->token[0])
                journal_token_hash(seat->player->token, hash);
            else
                memcpy(hash, seat->player->token_hash, sizeof hash);
        }
        bad |= bytes_printf(&b, "%s{\"id\":%" PRIu64 ",\"name\":\"%s\",\"token\":\"%s\"}",
                            i ? "," : "", seat->id, seat->name, hash);
    }
    bad |= bytes_add(&b, "]}\n", 3);
    if (bad)
        free(b.data);
    else
        append_bytes(j, &b);
}

void journal_game_restore(room *r, uint64_t game, int64_t started_ms) {
    if (!J(r->srv)) return;
    game_new(r, game, started_ms);
    journal_note_game(r->srv, game);
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
    static const char letter[] = {
        [ENG_LEFT] = 'l', [ENG_RIGHT] = 'r', [ENG_UP] = 'u', [ENG_DOWN] = 'd'};
    if (bytes_add(&g->seats[seat].moves, &letter[dir], 1) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory recording a move");
        return;
    }
    if (!g->dirty) {
        g->dirty = true;
        srv_list_push(&J(r->srv)->dirty, &g->dirty_link);
    }
}

void journal_seat(room *r, int seat, const char *event) {
    journal *j = J(r->srv);
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
    journal *j = J(from->srv);
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
static void index_put(journal *j, uint64_t game, char *full, size_t full_len,
                      size_t summary_len) {
    if (!j->index) {
        free(full);
        return;
    }
    while (j->index_count && (j->index_count == INDEX_GAMES_MAX ||
                              j->index_bytes + full_len > INDEX_BYTES_MAX))
        index_drop_oldest(j);
    indexed *e = &j->index[j->index_head];
    *e = (indexed){
        .game = game, .full = full, .full_len = full_len, .summary_len = summary_len};
    j->index_head = (j->index_head + 1) % INDEX_GAMES_MAX;
    j->index_count++;
    j->index_bytes += full_len;
}

void journal_index_add(srv *s, uint64_t game, const char *line, size_t len) {
    journal *j = J(s);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    /* The summary is the record up to its "moves" member, which the server
     * always writes last. */
    static const char key[] = ",\"moves\":{";
    const char *m = NULL;
    for (size_t k = len; !m && k >= sizeof key - 1; k--)
        if (memcmp(line + k - (sizeof key - 1), key, sizeof key - 1) == 0)
            m = line + k - (sizeof key - 1);
    char *full = malloc(len + 1);
    if (!full || !m) {
        free(full);
        return;
    }
    memcpy(full, line, len);
    full[len] = '\0';
    index_put(j, game, full, len, (size_t)(m - line));
    journal_note_game(s, game);
}

void journal_note_game(srv *s, uint64_t game) {
    if (game >= J(s)->next_game) J(s)->next_game = game + 1;
}

void journal_game_end(room *r, const char *end_line, size_t len) {
    journal *j = J(r->srv);
    jrn_game *g = r->jgame;
    if (!g) return;
    undirty(g); /* the finished record holds every move */
    g->ended = true;
    /* The end line is {"type":"end",...}\n: keep its members. */
    static const char head[] = "{\"type\":\"end\",";
    if (len < sizeof head || memcmp(end_line, head, sizeof head - 1) != 0) return;
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
    for (int i = 0; i < r->nseats; i++) {
        const bytes *mv = &g->seats[i].moves;
        bad |= bytes_printf(&b, "%s\"%" PRIu64 "\":\"%.*s\"", i ? "," : "",
                            r->seats[i].id, (int)mv->len, mv->data ? mv->data : "");
    }
    bad |= bytes_add(&b, "}}\n", 3);
    if (bad) {
        free(b.data);
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing game %" PRIu64, g->id);
        return;
    }
    append(j, b.data, b.len);
    b.data[b.len - 1] = '\0';
    index_put(j, g->id, b.data, b.len - 1, summary_len);
    if (j->pending.len >= EARLY_COMMIT_BYTES) commit_start(j);
}

void journal_game_free(room *r) {
    jrn_game *g = r->jgame;
    if (!g) return;
    journal *j = J(r->srv);
    if (!g->ended && j->on) flush_game_moves(j, r); /* shutdown: it resumes later */
    undirty(g);
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(g->seats[i].moves.data);
    r->jgame = NULL;
    free(srv_container(g, dirty_owner, game));
}

/* -------------------------------------------------------------- replies --- */

char *journal_history(srv *s, int limit, size_t *len) {
    journal *j = J(s);
    if (!j) return NULL;
    bytes b = {0};
    int bad = bytes_add(&b, "{\"type\":\"history\",\"games\":[",
                        sizeof "{\"type\":\"history\",\"games\":[" - 1);
    for (int k = 0; k < limit && (size_t)k < j->index_count; k++) {
        const indexed *e = &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - (size_t)k) %
                                     INDEX_GAMES_MAX];
        if (k) bad |= bytes_add(&b, ",", 1);
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

char *journal_replay(srv *s, uint64_t id, size_t *len) {
    journal *j = J(s);
    *len = 0;
    if (!j) return NULL;
    for (size_t k = 0; k < j->index_count; k++) {
        const indexed *e =
            &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX];
        if (e->game != id) continue;
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

int journal_open(srv *s) {
    journal *j = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "race2048d: out of memory\n");
        return -1;
    }
    s->journal = j;
    j->srv = s;
    j->fd = -1;
    j->next_game = 1;
    srv_list_init(&j->dirty);
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
    recover_stats rs;
    size_t good = recover_journal(s, data.data, data.len, &rs);
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
}
