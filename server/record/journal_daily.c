/* journal_daily.c - the daily challenge in the record: the days' seeds (`daily`) and
 * who played them (`daily_entry`), written, looked up and read back at start-up. */
#include "journal_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- daily --- */

int jrn_daily_line(const jrn_daily *d, byte_buf *out) {
    proto_daily_record rec = {.day = d->day, .size = d->size, .seed = d->seed};
    memcpy(rec.salt, d->salt, sizeof rec.salt);
    return proto_rec_put_daily(out, &rec);
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

/* A `daily_entry` record to the boards (begun, and finished if it says so). */
static bool entry_replay(journal *j, const proto_daily_entry_record *r);

/* The `daily` records of data (the file at start-up), in the table. */
void jrn_dailies_replay(journal *j, const char *data, size_t len) {
    for (size_t at = 0; at < len;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        if (j->daily && proto_rec_is(line, n, "daily_entry")) {
            proto_daily_entry_record r;
            if (proto_dec_daily_entry_record(line, n, &r) < 0 || !entry_replay(j, &r))
                srv_log(SRV_LOG_WARN, "journal: a daily_entry record could not be read");
            continue;
        }
        if (!proto_rec_is(line, n, "daily")) continue;
        proto_daily_record r;
        jrn_daily d = {0};
        bool ok = proto_dec_daily_record(line, n, &r) == 0;
        if (ok) {
            d = (jrn_daily){.day = r.day, .size = r.size, .seed = r.seed};
            memcpy(d.salt, r.salt, sizeof d.salt);
            if (!daily_find(j, d.day, d.size) && !daily_add(j, &d)) ok = false;
        }
        if (!ok) srv_log(SRV_LOG_WARN, "journal: a daily record could not be read");
    }
}

int journal_daily(journal *j, int32_t day, int size, const eng_seed *fresh,
                  jrn_daily_seed *out) {
    jrn_daily *e = daily_find(j, day, size);
    if (!e) {
        jrn_daily d = {.day = day, .size = size, .seed = *fresh};
        if (srv_random_hex(d.salt, 16) < 0 || !(e = daily_add(j, &d))) return -1;
        byte_buf b = {0};
        if (j->on && jrn_daily_line(e, &b) == 0)
            jrn_append_buf(j, &b);
        else
            byte_buf_free(&b);
    }
    *out = (jrn_daily_seed){.seed = e->seed};
    memcpy(out->salt, e->salt, sizeof out->salt);
    memcpy(out->commit, e->commit, sizeof out->commit);
    return 0;
}

static proto_daily_entry_record entry_record(int32_t day, int size, const char *name,
                                             const daily_result *r) {
    proto_daily_entry_record e = {.day = day, .size = size, .finished = r != NULL};
    size_t len = strnlen(name, sizeof e.name - 1); /* a compaction makes 10^5 of these */
    memcpy(e.name, name, len);
    e.name[len] = '\0';
    if (r) {
        e.score = r->score;
        e.max_tile = r->max_tile;
        e.moves = r->moves;
        e.end_ms = r->end_ms;
        e.game = r->game;
    }
    return e;
}

static int entry_line(int32_t day, int size, const char *name, const daily_result *r,
                      byte_buf *out) {
    proto_daily_entry_record e = entry_record(day, size, name, r);
    return proto_rec_put_daily_entry(out, &e);
}

void jrn_entry_out(void *ctx, int32_t day, int size, const daily_entry *e) {
    jrn_entries_out *out = ctx;
    if (day < out->keep_from || out->bad) return;
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 1024;
        proto_daily_entry_record *more = realloc(out->entries, cap * sizeof *more);
        if (!more) {
            out->bad = true;
            return;
        }
        out->entries = more;
        out->cap = cap;
    }
    out->entries[out->n++] =
        entry_record(day, size, e->account->name, e->finished ? &e->result : NULL);
}

void journal_daily_entry(journal *j, int32_t day, int size, const acct_account *a,
                         const daily_result *r) {
    if (!j || !j->on) return;
    byte_buf b = {0};
    if (entry_line(day, size, a->name, r, &b) == 0)
        jrn_append_buf(j, &b);
    else
        byte_buf_free(&b);
}

static bool entry_replay(journal *j, const proto_daily_entry_record *r) {
    const acct_account *a = j->accounts ? acct_find(j->accounts, r->name) : NULL;
    if (!a) return false;
    int rc = daily_begin(j->daily, r->day, r->size, a);
    if (rc != DAILY_OK && rc != DAILY_PLAYED) return false;
    if (!r->finished) return true;
    daily_result res = {.score = r->score,
                        .max_tile = r->max_tile,
                        .moves = r->moves,
                        .end_ms = r->end_ms,
                        .game = r->game};
    rc = daily_finish(j->daily, r->day, r->size, a, &res);
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
    byte_buf b = {0};
    if (j->on && jrn_daily_line(e, &b) == 0)
        jrn_append_buf(j, &b);
    else
        byte_buf_free(&b);
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
