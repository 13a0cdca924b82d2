/* journal_accounts.c - accounts in the record: the `account` record and the accounts
 * and their ratings rebuilt from the journal at start-up. */
#include "journal_accounts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base.h" /* srv_log: a shared service */
#include "hex.h"

char *jacct_record(const acct_account *a, size_t *len) {
    acct_snapshot snap;
    acct_snapshot_of(a, &snap);
    return jacct_snapshot_record(&snap, len);
}

char *jacct_snapshot_record(const acct_snapshot *from, size_t *len) {
    const acct_snapshot snap = *from;
    char salt[2 * ACCT_SALT_BYTES + 1], hash[2 * ACCT_HASH_BYTES + 1];
    proto_hex_encode(snap.salt, ACCT_SALT_BYTES, salt);
    proto_hex_encode(snap.key_hash, ACCT_HASH_BYTES, hash);
    /* The name as every record's strings are (protocol/record.h), at most 6
     * bytes a character; then at most: fixed text ~200, 6 bests of ~70, 20 ids
     * of 21, 20 ratings of 12. */
    byte_buf name = {0};
    size_t cap = 2048 + 6 * sizeof snap.name;
    char *line =
        proto_rec_put_string(&name, snap.name) == 0 && byte_buf_append(&name, "", 1) == 0
            ? malloc(cap)
            : NULL;
    if (!line) {
        byte_buf_free(&name);
        return NULL;
    }
    int n = snprintf(line, cap,
                     "{\"j\":\"account\",\"name\":%s,\"salt\":\"%s\",\"hash\":\"%s\","
                     "\"mu\":%.17g,\"sigma\":%.17g,\"games\":%" PRIu32
                     ",\"wins\":%" PRIu32 ",\"best\":[",
                     name.data, salt, hash, snap.mu, snap.sigma, snap.games, snap.wins);
    byte_buf_free(&name);
    bool first = true;
    for (int k = 0; k < ACCT_SIZES; k++) {
        const acct_best *b = &snap.best[k];
        if (!b->game) continue;
        n += snprintf(line + n, cap - (size_t)n,
                      "%s[%d,%" PRIu32 ",%" PRIu32 ",%" PRIu64 "]", first ? "" : ",",
                      k + ACCT_SIZE_MIN, b->score, b->max_tile, b->game);
        first = false;
    }
    n += snprintf(line + n, cap - (size_t)n, "],\"recent\":[");
    for (size_t k = 0; k < snap.n_recent; k++)
        n += snprintf(line + n, cap - (size_t)n, "%s%" PRIu64, k ? "," : "",
                      snap.recent[k]);
    n += snprintf(line + n, cap - (size_t)n, "],\"chart\":[");
    for (size_t k = 0; k < snap.n_chart; k++)
        n += snprintf(line + n, cap - (size_t)n, "%s%" PRId32, k ? "," : "",
                      snap.chart[k]);
    n += snprintf(line + n, cap - (size_t)n, "]}\n");
    if (n <= 0 || (size_t)n >= cap) { /* cannot happen with the bounds above */
        free(line);
        return NULL;
    }
    *len = (size_t)n;
    return line;
}

static int64_t juint(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

/* An `account` record to snap: 0, or -1 if it is not one the server writes. */
static int parse_account(const json_t *r, acct_snapshot *out) {
    acct_snapshot snap;
    memset(&snap, 0, sizeof snap);
    const char *name = json_string_value(json_object_get(r, "name"));
    const json_t *mu = json_object_get(r, "mu"), *sigma = json_object_get(r, "sigma");
    int64_t games = juint(r, "games"), wins = juint(r, "wins");
    const json_t *best = json_object_get(r, "best"),
                 *recent = json_object_get(r, "recent"),
                 *chart = json_object_get(r, "chart");
    if (!name || strlen(name) > ACCT_NAME_MAX || !json_is_number(mu) ||
        !json_is_number(sigma) || games < 0 || games > UINT32_MAX || wins < 0 ||
        wins > games || json_array_size(recent) > ACCT_RECENT ||
        json_array_size(chart) > ACCT_CHART || json_array_size(best) > ACCT_SIZES ||
        !proto_hex_decode(json_string_value(json_object_get(r, "salt")), snap.salt,
                          ACCT_SALT_BYTES) ||
        !proto_hex_decode(json_string_value(json_object_get(r, "hash")), snap.key_hash,
                          ACCT_HASH_BYTES))
        return -1;
    snprintf(snap.name, sizeof snap.name, "%s", name);
    snap.mu = json_number_value(mu);
    snap.sigma = json_number_value(sigma);
    snap.games = (uint32_t)games;
    snap.wins = (uint32_t)wins;
    for (size_t k = 0; k < json_array_size(best); k++) {
        const json_t *b = json_array_get(best, k);
        json_int_t size = json_integer_value(json_array_get(b, 0));
        if (json_array_size(b) != 4 || size < ACCT_SIZE_MIN || size > ACCT_SIZE_MAX)
            return -1;
        snap.best[size - ACCT_SIZE_MIN] =
            (acct_best){.score = (uint32_t)json_integer_value(json_array_get(b, 1)),
                        .max_tile = (uint32_t)json_integer_value(json_array_get(b, 2)),
                        .game = (uint64_t)json_integer_value(json_array_get(b, 3))};
    }
    for (size_t k = 0; k < json_array_size(recent); k++)
        snap.recent[snap.n_recent++] =
            (uint64_t)json_integer_value(json_array_get(recent, k));
    for (size_t k = 0; k < json_array_size(chart); k++)
        snap.chart[snap.n_chart++] =
            (int32_t)json_integer_value(json_array_get(chart, k));
    *out = snap;
    return 0;
}

int jacct_parse(const char *line, size_t len, acct_snapshot *snap) {
    json_t *r = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    int rc = r && proto_rec_is(line, len, "account") ? parse_account(r, snap) : -1;
    json_decref(r);
    return rc;
}

/* An `account` record to s: 0, or -1 if it is not one the server writes. */
static int on_account(acct_store *s, const json_t *r) {
    acct_snapshot snap;
    return parse_account(r, &snap) == 0 && acct_restore(s, &snap, NULL) == ACCT_OK ? 0
                                                                                   : -1;
}

/* Whether game is among a's recent games (it has been applied to a). */
static bool applied_already(const acct_account *a, uint64_t game) {
    uint64_t recent[ACCT_RECENT];
    size_t n = acct_recent(a, recent);
    for (size_t k = 0; k < n; k++)
        if (recent[k] == game) return true;
    return false;
}

void jacct_apply_game(acct_store *s, const proto_game_record *g) {
    bool solo_server_seed = !g->room[0] && g->seed.kind == ENG_SEED_SERVER;
    for (int i = 0; i < g->naccounts; i++) {
        acct_account *a = acct_find(s, g->accounts[i].name);
        /* Applied already: the account's record came from a compaction that
         * copied it after this game had ended (journal_compact.c). */
        if (!a || applied_already(a, g->game)) continue;
        uint64_t id = g->accounts[i].id;
        for (int k = 0; k < g->nratings; k++) {
            const proto_record_rating *r = &g->ratings[k];
            if (r->id != id) continue;
            rating_skill after = {.mu = r->mu, .sigma = r->sigma};
            if (acct_apply_rating(s, a, after, g->winner == id) != ACCT_OK)
                srv_log(SRV_LOG_ERROR,
                        "accounts: game %" PRIu64 "'s rating of %s not applied", g->game,
                        a->name);
        }
        for (int k = 0; k < g->nresults; k++) {
            const proto_result *res = &g->results[k];
            if (res->id != id) continue;
            uint64_t score = res->score > UINT32_MAX ? UINT32_MAX : res->score;
            acct_record_game(a, g->game, g->size, (uint32_t)score,
                             (uint32_t)eng_max_tile(&res->board), solo_server_seed);
        }
    }
}

/* The ids of the games whose start record names an account: open addressing
 * over a power-of-two table (0 is no id). */
typedef struct id_set {
    uint64_t *slot;
    size_t cap, count;
} id_set;

static size_t id_hash(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static bool id_has(const id_set *set, uint64_t id) {
    for (size_t i = set->cap ? id_hash(id, set->cap) : 0; set->cap;
         i = (i + 1) & (set->cap - 1)) {
        if (!set->slot[i]) return false;
        if (set->slot[i] == id) return true;
    }
    return false;
}

static bool id_add(id_set *set, uint64_t id) {
    if (!id || id_has(set, id)) return true;
    if ((set->count + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 256;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return false;
        for (size_t k = 0; k < set->cap; k++) {
            if (!set->slot[k]) continue;
            size_t i = id_hash(set->slot[k], cap);
            while (slot[i])
                i = (i + 1) & (cap - 1);
            slot[i] = set->slot[k];
        }
        free(set->slot);
        set->slot = slot;
        set->cap = cap;
    }
    size_t i = id_hash(id, set->cap);
    while (set->slot[i])
        i = (i + 1) & (set->cap - 1);
    set->slot[i] = id;
    set->count++;
    return true;
}

static bool contains(const char *line, size_t n, const char *what) {
    size_t w = strlen(what);
    for (size_t k = 0; k + w <= n; k++)
        if (line[k] == what[0] && !memcmp(line + k, what, w)) return true;
    return false;
}

size_t jacct_replay(acct_store *s, const char *data, size_t len) {
    static const char accounts_member[] = ",\"accounts\":{";
    size_t applied = 0;
    /* A finished game counts for this server's accounts only if this journal
     * started it with accounts: in cluster mode a finished game taken over from
     * another node (journal_adopt_finished) names that node's accounts, which
     * may share a name with one of this node's. */
    id_set started = {0};
    for (size_t at = 0; at < len;) {
        const char *line = data + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        at += n;
        if (proto_rec_is(line, n, "account")) {
            json_t *r = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
            if (on_account(s, r) == 0)
                applied++;
            else
                srv_log(SRV_LOG_WARN, "journal: an account record could not be read");
            json_decref(r);
            continue;
        }
        uint64_t id;
        proto_rec_kind kind = proto_rec_kind_of(line, n, &id);
        if (kind == PROTO_REC_START) {
            if (contains(line, n, ",\"account\":\"") && !id_add(&started, id))
                srv_log(SRV_LOG_ERROR, "journal: out of memory reading the accounts");
            continue;
        }
        if (kind != PROTO_REC_GAME) continue;
        /* Only games this journal started with accounts are parsed: most are
         * not. The member comes before "moves", whose letters cannot hold it. */
        if (!id_has(&started, id) || !contains(line, n, accounts_member)) continue;
        proto_game_record g;
        if (proto_dec_game_record(line, n, &g) < 0) {
            srv_log(SRV_LOG_WARN,
                    "journal: a finished game with accounts could not be read");
            continue;
        }
        jacct_apply_game(s, &g);
        proto_game_record_clear(&g);
        applied++;
    }
    free(started.slot);
    return applied;
}
