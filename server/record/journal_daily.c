/* journal_daily.c - the daily challenge in the record: the days' seeds (`daily`) and
 * who played them (`daily_entry`), written, looked up and read back at start-up. */
#include "journal_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- daily --- */

/* How many days before today compaction keeps `daily` records: a revealed day's
 * games hold their seed themselves; the daily board shows it for this long. */

int jrn_daily_line(const jrn_daily *d, byte_buf *out) {
    char seed[ENG_SEED_TEXT_MAX];
    eng_seed_format(&d->seed, seed, sizeof seed);
    return byte_buf_printf(out,
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

void jrn_dailies_replay(journal *j, const char *data, size_t len) {
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
        byte_buf b = {0};
        if (j->on && jrn_daily_line(e, &b) == 0)
            jrn_append_buf(j, &b);
        else
            free(b.data);
    }
    *out = (jrn_daily_seed){.seed = e->seed};
    memcpy(out->salt, e->salt, sizeof out->salt);
    memcpy(out->commit, e->commit, sizeof out->commit);
    return 0;
}

static int entry_line(int32_t day, int size, const char *name, const daily_result *r,
                      byte_buf *out) {
    if (!r)
        return byte_buf_printf(out,
                               "{\"j\":\"daily_entry\",\"day\":%" PRId32
                               ",\"size\":%d,\"name\":\"%s\"}\n",
                               day, size, name);
    return byte_buf_printf(
        out,
        "{\"j\":\"daily_entry\",\"day\":%" PRId32
        ",\"size\":%d,\"name\":\"%s\",\"score\":%" PRIu32 ",\"max_tile\":%" PRIu32
        ",\"moves\":%" PRIu32 ",\"end_ms\":%" PRId64 ",\"game\":%" PRIu64 "}\n",
        day, size, name, r->score, r->max_tile, r->moves, r->end_ms, r->game);
}

void jrn_entry_out(void *ctx, int32_t day, int size, const daily_entry *e) {
    jrn_entries_out *out = ctx;
    if (day < out->keep_from || out->bad) return;
    out->bad = entry_line(day, size, e->account->name, e->finished ? &e->result : NULL,
                          out->to) < 0;
}

void journal_daily_entry(journal *j, int32_t day, int size, const acct_account *a,
                         const daily_result *r) {
    if (!j || !j->on) return;
    byte_buf b = {0};
    if (entry_line(day, size, a->name, r, &b) == 0)
        jrn_append_buf(j, &b);
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
    byte_buf b = {0};
    if (j->on && jrn_daily_line(e, &b) == 0)
        jrn_append_buf(j, &b);
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
