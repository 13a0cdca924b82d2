/* takeover.c - failover on the loop: claimed records rebuilt as games; its lifetime. */
#include "takeover_internal.h"

#include "journal.h"
#include "journal_read.h"
#include "record.h"
#include "metrics.h"
#include "recover.h"
#include "arena_host.h"

void job_free_records(job *j) {
    assert(j->nmembers >= 0 && j->nmembers <= JOB_MEMBERS_MAX);
    for (int k = 0; k < j->nmembers; k++) {
        free(j->m[k].records);
        j->m[k].records = NULL;
        j->m[k].len = 0;
    }
}

/* ---------------------------------------------------------------- loop --- */

/* Commits (each game's, unique to it) seen in a job's earlier members. */
typedef struct commit_set {
    char (*v)[PROTO_COMMIT_TEXT];
    size_t n, sorted, cap;
} commit_set;

static int commit_cmp(const void *a, const void *b) {
    return strcmp(a, b);
}

static bool commit_seen(const commit_set *cs, const char *commit) {
    return cs->sorted &&
           bsearch(commit, cs->v, cs->sorted, sizeof cs->v[0], commit_cmp) != NULL;
}

/* Adds commit (seen from the next member on; a failure to grow leaves it out,
 * and the game's copy in a later member is then rebuilt as it was before). */
static void commit_add(commit_set *cs, const char *commit) {
    if (cs->n == cs->cap) {
        size_t ncap = cs->cap ? cs->cap * 2 : 64;
        void *p = realloc(cs->v, ncap * sizeof cs->v[0]);
        if (!p) return;
        cs->v = p;
        cs->cap = ncap;
    }
    snprintf(cs->v[cs->n++], sizeof cs->v[0], "%s", commit);
}

/* A member is done: its commits are seen from the next one on. */
static void commit_seal(commit_set *cs) {
    if (cs->n) qsort(cs->v, cs->n, sizeof cs->v[0], commit_cmp);
    cs->sorted = cs->n;
}

/* The commit of a finished game's line into out ("" if it has none). */
static void line_commit(const char *line, size_t len, char out[PROTO_COMMIT_TEXT]) {
    out[0] = '\0';
    json_t *o = json_loadb(line, len, 0, NULL);
    const char *c = json_string_value(json_object_get(o, "commit"));
    if (c && strlen(c) < PROTO_COMMIT_TEXT) snprintf(out, PROTO_COMMIT_TEXT, "%s", c);
    json_decref(o);
}

/* How long before a takeover a finished game may have ended for its account
 * changes to be made again: a node writes them within milliseconds of `end`,
 * and is taken over a few beats after it died. Older games were written (or
 * lost with NATS): a change counts once only while its game is among the
 * account's recent games, which a long-lived node's old games are not. */
#define ADOPT_CHANGES_MS (12 * CLUSTER_TTL_MS)

/* A finished game's changes to its accounts, for the cluster's copies: its
 * node may have died between its `end` and its own KV write (a change it did
 * write counts once: acct_snapshot_apply). Only games with accounts that
 * ended since since_ms (Unix ms) are parsed: most have none. */
static void adopt_account_changes(game *g, const char *line, size_t len,
                                  int64_t since_ms) {
    static const char member[] = ",\"accounts\":{";
    if (!g->account_changed) return;
    bool named = false;
    for (size_t k = 0; !named && k + sizeof member - 1 <= len; k++)
        named = line[k] == member[0] && !memcmp(line + k, member, sizeof member - 1);
    if (!named) return;
    proto_game_record *rec = malloc(sizeof *rec);
    if (!rec) {
        srv_log(SRV_LOG_ERROR, "cluster: out of memory: a taken over game's accounts");
        return;
    }
    if (proto_dec_game_record(line, len, rec) == 0) {
        if (rec->ended >= since_ms) game_account_changes_of(g, rec);
        proto_game_record_clear(rec);
    }
    free(rec);
}

/* A member's arenas: each code's latest `arena` record (a line of its records)
 * and the `arena_ev` records of that arena after it, which the arena's state
 * is only with. */
typedef struct arena_line {
    char code[PROTO_ROOM_MAX + 1];
    const char *line;
    size_t len;
    byte_buf events;
    bool adopted;
} arena_line;

static void arena_lines_free(arena_line *lines, size_t n) {
    for (size_t k = 0; k < n; k++)
        byte_buf_free(&lines[k].events);
    free(lines);
}

/* The arenas of m's records, their latest lines and the events after them
 * (malloc'd; *n of them; arena_lines_free). */
static arena_line *member_arenas(const job_member *m, size_t *n) {
    arena_line *out = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t at = 0; at < m->len;) {
        const char *line = m->records + at, *nl = memchr(line, '\n', m->len - at);
        size_t len = nl ? (size_t)(nl - line) + 1 : m->len - at;
        at += len;
        char code[PROTO_ROOM_MAX + 1];
        bool is_event = proto_rec_is(line, len, "arena_ev");
        if ((!is_event && !proto_rec_is(line, len, "arena")) ||
            proto_arena_record_code(line, len, code) < 0)
            continue;
        size_t k = 0;
        while (k < *n && strcmp(out[k].code, code) != 0)
            k++;
        if (is_event) { /* an arena's events follow its first record */
            if (k < *n && byte_buf_append(&out[k].events, line, len) < 0)
                srv_log(SRV_LOG_ERROR, "takeover: out of memory for arena %s's events",
                        code);
            continue;
        }
        if (k == *n) {
            if (*n == cap) {
                size_t more = cap ? 2 * cap : 8;
                arena_line *grown = realloc(out, more * sizeof *grown);
                if (!grown) {
                    srv_log(SRV_LOG_ERROR, "takeover: out of memory for the arenas");
                    break;
                }
                out = grown;
                cap = more;
            }
            out[*n] = (arena_line){0};
            snprintf(out[(*n)++].code, sizeof out[0].code, "%s", code);
        }
        out[k].line = line;
        out[k].len = len;
        out[k].events.len = 0; /* a new base: the events before it are in it */
        out[k].adopted = false;
    }
    return out;
}

/* One member's records become this node's games, but for the games an
 * earlier member had (running or finished): those are older copies. Returns
 * how many running games were rebuilt. */
static size_t adopt_member(takeover *t, const job_member *m, commit_set *cs,
                           size_t *skipped) {
    jrn_recovery rec = {.next_game = 1, .started_ns = uv_hrtime()};
    jread_line *done = NULL;
    size_t ndone = 0;
    jread_records(m->records ? m->records : "", m->len, &rec, &done, &ndone);
    /* Its finished games are this node's history now (and in its records). */
    for (size_t k = 0; k < ndone; k++) {
        char commit[PROTO_COMMIT_TEXT];
        line_commit(done[k].line, done[k].len, commit);
        if (commit[0] && commit_seen(cs, commit)) {
            (*skipped)++;
            continue;
        }
        journal_adopt_finished(t->g->journal, done[k].line, done[k].len);
        if (commit[0]) commit_add(cs, commit);
    }
    free(done);
    /* Its finished games' changes to accounts, unplayed ones too (a rated race
     * whose other players left at once rates all the same): not only those
     * kept for history; only the last minute's (ADOPT_CHANGES_MS). A copy met
     * twice counts once (acct_snapshot_apply). */
    int64_t since_ms = journal_wall_ms() - ADOPT_CHANGES_MS;
    for (size_t at = 0; t->g->account_changed && at < m->len;) {
        const char *line = m->records + at, *nl = memchr(line, '\n', m->len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : m->len - at;
        at += n;
        uint64_t id;
        if (proto_rec_kind_of(line, n, &id) == PROTO_REC_GAME)
            adopt_account_changes(t->g, line, n, since_ms);
    }
    /* Its running games, but for those seen (rec keeps its games to free). */
    jrn_recovery fresh = rec;
    fresh.games = malloc((rec.ngames ? rec.ngames : 1) * sizeof *fresh.games);
    fresh.ngames = 0;
    for (size_t k = 0; fresh.games && k < rec.ngames; k++) {
        if (commit_seen(cs, rec.games[k].start.commit)) {
            (*skipped)++;
            continue;
        }
        fresh.games[fresh.ngames++] = rec.games[k];
        commit_add(cs, rec.games[k].start.commit);
    }
    /* Its arenas first (but for those an earlier member had: they run here
     * by now), so that their running races relink to them as they are rebuilt,
     * as at start-up; then the races no rebuilt room claimed are given up. */
    size_t narenas = 0;
    arena_line *arenas = member_arenas(m, &narenas);
    for (size_t k = 0; k < narenas; k++)
        arenas[k].adopted = !arena_host_runs(t->g, arenas[k].code, NULL) &&
                            arena_host_adopt(t->g, arenas[k].line, arenas[k].len,
                                             arenas[k].events.data, arenas[k].events.len);
    size_t n = fresh.games ? recover_adopt(t->g, &fresh) : recover_adopt(t->g, &rec);
    for (size_t k = 0; k < narenas; k++)
        if (arenas[k].adopted) arena_host_adopted(t->g, arenas[k].code);
    arena_lines_free(arenas, narenas);
    free(fresh.games);
    journal_recovery_free(&rec);
    commit_seal(cs);
    return n;
}

/* The claimed records become this node's games: the root's first, then the
 * others' in the order claimed, each game once. */
static void on_records(uv_async_t *a) {
    takeover *t = a->data;
    uv_mutex_lock(&t->lock);
    if (t->stopping || t->job.state != JOB_READY) {
        uv_mutex_unlock(&t->lock);
        return;
    }
    job j = t->job;
    for (int k = 0; k < t->job.nmembers; k++)
        t->job.m[k].records = NULL;
    if (cluster_epoch(t->c) != j.epoch) { /* fenced since the claim */
        t->job = (job){0};
        uv_mutex_unlock(&t->lock);
        job_free_records(&j);
        return;
    }
    uv_mutex_unlock(&t->lock);
    assert(j.nmembers >= 1);
    commit_set cs = {0};
    size_t n = 0, bytes = 0, skipped = 0;
    for (int k = 0; k < j.nmembers; k++) {
        n += adopt_member(t, &j.m[k], &cs, &skipped);
        bytes += j.m[k].len;
    }
    free(cs.v);
    job_free_records(&j);
    t->takeovers += (uint64_t)j.nmembers;
    t->games += n;
    srv_log(SRV_LOG_INFO,
            "cluster: took over incarnation %s (with %d it had claimed): %zu running "
            "games from %zu bytes of records (%zu older copies left out), %.0f ms after "
            "the claim",
            j.m[0].key + 4, j.nmembers - 1, n, bytes, skipped,
            (double)((int64_t)(uv_hrtime() / 1000000) - j.claimed_ms));
    uv_mutex_lock(&t->lock);
    /* Only the loop moves a job on from READY (the link thread leaves it). */
    assert(t->job.state == JOB_READY);
    t->job.state = JOB_ADOPTING;
    t->job.target = journal_appended_pos(t->g->journal);
    uv_mutex_unlock(&t->lock);
}

static void on_check(uv_timer_t *h) {
    takeover *t = h->data;
    if (takeover_fence_if_due(t)) return;
    bool wake = false;
    uv_mutex_lock(&t->lock);
    if (t->job.state == JOB_ADOPTING &&
        journal_durable_pos(t->g->journal) >= t->job.target) {
        assert(t->job.nmembers >= 1); /* a job is at least its root */
        t->job.state = JOB_ADOPTED;
        t->job.adopted_ms = (int64_t)(uv_hrtime() / 1000000);
        wake = true;
    }
    uv_mutex_unlock(&t->lock);
    if (wake) cluster_wake(t->c);
}

takeover *takeover_new(cluster *c) {
    takeover *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (uv_mutex_init(&t->lock) < 0) {
        free(t);
        return NULL;
    }
    t->c = c;
    const char *pause = getenv(TEST_PAUSE_ENV);
    if (pause) t->test_pause_ms = strtoll(pause, NULL, 10);
    return t;
}

int takeover_start(takeover *t, game *g, uv_loop_t *loop) {
    t->g = g;
    t->loop = loop;
    if (uv_async_init(loop, &t->async, on_records) < 0) return -1;
    t->async.data = t;
    uv_unref((uv_handle_t *)&t->async);
    uv_timer_init(loop, &t->check);
    t->check.data = t;
    uv_timer_start(&t->check, on_check, CHECK_MS, CHECK_MS);
    uv_unref((uv_handle_t *)&t->check);
    t->started = true;
    cluster_on_beat(t->c, takeover_on_beat, t);
    return 0;
}

void takeover_on_name_lost(takeover *t, void (*fn)(void *ctx), void *ctx) {
    t->name_lost = fn;
    t->name_lost_ctx = ctx;
}

void takeover_stop(takeover *t) {
    if (!t) return;
    uv_mutex_lock(&t->lock);
    t->stopping = true;
    uv_mutex_unlock(&t->lock);
    if (t->started) uv_timer_stop(&t->check);
}

void takeover_free(takeover *t) {
    if (!t) return;
    job_free_records(&t->job);
    uv_mutex_destroy(&t->lock);
    free(t);
}

void takeover_write_metrics(metrics_out *o, void *ctx) {
    takeover *t = ctx;
    metrics_one(o, "race2048_cluster_takeovers_total", "counter",
                "Incarnations of other nodes (or earlier ones of this node) whose "
                "races this node took over.",
                t->takeovers);
    metrics_one(o, "race2048_cluster_games_taken_over_total", "counter",
                "Running games rebuilt here from another incarnation's records.",
                t->games);
    metrics_one(o, "race2048_cluster_fences_total", "counter",
                "Times this node lost the cluster and gave its rooms up.", t->fences);
}
