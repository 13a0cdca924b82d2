/* accounts.c - the accounts table: registration, keys, ratings, bests, snapshots. */
#include "accounts.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "hex.h"

const char *acct_strerror(int result) {
    switch (result) {
    case ACCT_OK:
        return "ok";
    case ACCT_BAD_NAME:
        return "a name is 1-16 characters of A-Za-z0-9_-";
    case ACCT_RESERVED:
        return "names starting with bot- or player- are never registered";
    case ACCT_NAME_TAKEN:
        return "that name belongs to an account";
    case ACCT_NO_MEMORY:
        return "out of memory";
    case ACCT_BAD_SNAPSHOT:
        return "an account snapshot out of range";
    }
    return "unknown account error";
}

/* ---------------------------------------------------------------- names --- */

static char fold(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

static bool name_valid(const char *name) {
    size_t n = 0;
    for (; name[n]; n++)
        if (n == ACCT_NAME_MAX || !name_char(name[n])) return false;
    return n > 0;
}

static bool folded_prefix(const char *name, const char *prefix) {
    for (; *prefix; name++, prefix++)
        if (fold(*name) != *prefix) return false;
    return true;
}

/* FNV-1a of the case-folded name: names are short and the table's slots are
 * pointers, so a cheap hash with the comparison below is enough. */
static uint32_t name_hash(const char *name) {
    uint32_t h = 2166136261u;
    for (; *name; name++)
        h = (h ^ (uint8_t)fold(*name)) * 16777619u;
    return h;
}

static int folded_cmp(const char *a, const char *b) {
    for (; *a && fold(*a) == fold(*b); a++, b++) {
    }
    return (unsigned char)fold(*a) - (unsigned char)fold(*b);
}

/* ----------------------------------------------------------- name table --- */

/* The slot of name's account, or of the empty slot where it would go. */
static size_t slot_of(const acct_store *s, const char *name, uint32_t h) {
    size_t mask = s->n_slots - 1, i = h & mask;
    while (s->slots[i] &&
           (s->slots[i]->name_hash != h || folded_cmp(s->slots[i]->name, name)))
        i = (i + 1) & mask;
    return i;
}

/* Makes room for one more account at a load of at most 1/2. */
static bool slots_reserve(acct_store *s) {
    if (2 * (s->count + 1) <= s->n_slots) return true;
    size_t n = s->n_slots ? 2 * s->n_slots : 64;
    acct_account **slots = calloc(n, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < s->n_slots; i++) {
        acct_account *a = s->slots[i];
        if (!a) continue;
        size_t j = a->name_hash & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = a;
    }
    free(s->slots);
    s->slots = slots;
    s->n_slots = n;
    return true;
}

/* A fresh, zeroed account at the end of the chunks (not yet counted). */
static acct_account *account_reserve(acct_store *s) {
    size_t chunk = s->count / ACCT_CHUNK;
    if (chunk == s->n_chunks) {
        if (s->n_chunks == s->cap_chunks) {
            size_t cap = s->cap_chunks ? 2 * s->cap_chunks : 16;
            acct_account **chunks = realloc(s->chunks, cap * sizeof *chunks);
            if (!chunks) return NULL;
            s->chunks = chunks;
            s->cap_chunks = cap;
        }
        acct_account *c = malloc(ACCT_CHUNK * sizeof *c);
        if (!c) return NULL;
        s->chunks[s->n_chunks++] = c;
    }
    acct_account *a = &s->chunks[chunk][s->count % ACCT_CHUNK];
    memset(a, 0, sizeof *a);
    return a;
}

/* ---------------------------------------------------------------- table --- */

int acct_cmp_rating(const void *pa, const void *pb) {
    const acct_account *a = pa, *b = pb;
    int ra = acct_rating(a), rb = acct_rating(b);
    if (ra != rb) return ra > rb ? -1 : 1;
    if (a->games != b->games) return a->games > b->games ? -1 : 1;
    int c = folded_cmp(a->name, b->name);
    /* Names are unique without regard to case, so only a == b gets here with 0;
     * the exact bytes keep the order total should two ever differ in case only. */
    return c ? c : strcmp(a->name, b->name);
}

/* The order's first two criteria as one number that sorts ascending: rating desc
 * (its sign bit flipped, so that unsigned order is signed order, then inverted),
 * then games desc. Only accounts tied on both are compared by name. */
static uint64_t rating_key(const void *p) {
    const acct_account *a = p;
    uint32_t rating = (uint32_t)acct_rating(a) ^ 0x80000000u;
    return (uint64_t)(uint32_t)~rating << 32 | (uint32_t)~a->games;
}

int acct_init(acct_store *s, uint64_t seed) {
    memset(s, 0, sizeof *s);
    if (!rank_init(&s->by_rating, acct_cmp_rating, rating_key, seed))
        return ACCT_NO_MEMORY;
    if (!slots_reserve(s)) {
        rank_free(&s->by_rating);
        return ACCT_NO_MEMORY;
    }
    return ACCT_OK;
}

void acct_free(acct_store *s) {
    rank_free(&s->by_rating);
    for (size_t i = 0; i < s->n_chunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

acct_account *acct_find(const acct_store *s, const char *name) {
    if (!name || !name_valid(name)) return NULL;
    return s->slots[slot_of(s, name, name_hash(name))];
}

int acct_check_name(const acct_store *s, const char *name) {
    if (!name_valid(name)) return ACCT_BAD_NAME;
    if (folded_prefix(name, "bot-") || folded_prefix(name, "player-"))
        return ACCT_RESERVED;
    if (acct_find(s, name)) return ACCT_NAME_TAKEN;
    return ACCT_OK;
}

/* SHA-256(salt || key). The key is 128 bits from the OS random source, so no
 * guess list and no speed of hashing makes finding it feasible (2^127 tries on
 * average): a slow password hash (scrypt, argon2) protects low-entropy human
 * passwords and would only cost CPU here. The salt makes each stolen hash a
 * separate target, so one guess cannot be tried against every account at once. */
static void key_hash(const uint8_t salt[ACCT_SALT_BYTES],
                     const uint8_t key[ACCT_KEY_BYTES], uint8_t out[ACCT_HASH_BYTES]) {
    uint8_t buf[ACCT_SALT_BYTES + ACCT_KEY_BYTES];
    memcpy(buf, salt, ACCT_SALT_BYTES);
    memcpy(buf + ACCT_SALT_BYTES, key, ACCT_KEY_BYTES);
    SHA256(buf, sizeof buf, out);
    OPENSSL_cleanse(buf, sizeof buf);
}

int acct_register(acct_store *s, const char *name, const uint8_t key[ACCT_KEY_BYTES],
                  const uint8_t salt[ACCT_SALT_BYTES], acct_account **out) {
    int rc = acct_check_name(s, name);
    if (rc != ACCT_OK) return rc;
    if (!slots_reserve(s)) return ACCT_NO_MEMORY;
    acct_account *a = account_reserve(s);
    if (!a) return ACCT_NO_MEMORY;
    memcpy(a->name, name, strlen(name) + 1);
    a->name_hash = name_hash(name);
    memcpy(a->salt, salt, ACCT_SALT_BYTES);
    key_hash(salt, key, a->key_hash);
    rating_skill initial = rating_initial();
    a->mu = initial.mu;
    a->sigma = initial.sigma;
    s->slots[slot_of(s, name, a->name_hash)] = a;
    s->count++;
    if (out) *out = a;
    return ACCT_OK;
}

bool acct_verify(const acct_account *a, const uint8_t *key, size_t key_len) {
    if (!a || !key || key_len != ACCT_KEY_BYTES) return false;
    uint8_t h[ACCT_HASH_BYTES];
    key_hash(a->salt, key, h);
    return CRYPTO_memcmp(h, a->key_hash, ACCT_HASH_BYTES) == 0;
}

void acct_key_to_hex(const uint8_t key[ACCT_KEY_BYTES],
                     char out[2 * ACCT_KEY_BYTES + 1]) {
    proto_hex_encode(key, ACCT_KEY_BYTES, out);
}

bool acct_key_from_hex(const char *hex, uint8_t key[ACCT_KEY_BYTES]) {
    return proto_hex_decode(hex, key, ACCT_KEY_BYTES);
}

acct_account *acct_login(const acct_store *s, const char *name, const char *hex) {
    uint8_t key[ACCT_KEY_BYTES];
    acct_account *a = acct_find(s, name);
    bool ok = acct_key_from_hex(hex, key) && acct_verify(a, key, sizeof key);
    OPENSSL_cleanse(key, sizeof key);
    return ok ? a : NULL;
}

static bool skill_valid(double mu, double sigma) {
    return isfinite(mu) && isfinite(sigma) && sigma > 0;
}

int acct_apply_rating(acct_store *s, acct_account *a, rating_skill after, bool won) {
    if (!skill_valid(after.mu, after.sigma)) return ACCT_BAD_SNAPSHOT;
    rank_node *node = NULL;
    if (acct_provisional(a)) {
        /* It may enter the board now: get its node before changing anything. */
        if (a->games + 1 >= RATING_PROVISIONAL_GAMES &&
            !(node = rank_node_new(&s->by_rating, a)))
            return ACCT_NO_MEMORY;
    } else {
        node = rank_detach(&s->by_rating, a);
        assert(node);
    }
    a->mu = after.mu;
    a->sigma = after.sigma;
    if (a->games < UINT32_MAX) a->games++;
    if (won && a->wins < UINT32_MAX) a->wins++;
    a->chart[a->chart_next] = acct_rating(a);
    a->chart_next = (uint8_t)((a->chart_next + 1) % ACCT_CHART);
    if (a->chart_len < ACCT_CHART) a->chart_len++;
    if (node) rank_attach(&s->by_rating, node);
    return ACCT_OK;
}

void acct_record_game(acct_account *a, uint64_t game, int size, uint32_t score,
                      uint32_t max_tile, bool counts_for_best) {
    a->recent[a->recent_next] = game;
    a->recent_next = (uint8_t)((a->recent_next + 1) % ACCT_RECENT);
    if (a->recent_len < ACCT_RECENT) a->recent_len++;
    if (!counts_for_best || size < ACCT_SIZE_MIN || size > ACCT_SIZE_MAX) return;
    acct_best *b = &a->best[size - ACCT_SIZE_MIN];
    if (!b->game || score > b->score) *b = (acct_best){score, max_tile, game};
}

size_t acct_recent(const acct_account *a, uint64_t out[ACCT_RECENT]) {
    for (size_t i = 0; i < a->recent_len; i++)
        out[i] = a->recent[(a->recent_next + ACCT_RECENT - 1 - i) % ACCT_RECENT];
    return a->recent_len;
}

size_t acct_chart(const acct_account *a, int32_t out[ACCT_CHART]) {
    size_t first = (a->chart_next + ACCT_CHART - a->chart_len) % ACCT_CHART;
    for (size_t i = 0; i < a->chart_len; i++)
        out[i] = a->chart[(first + i) % ACCT_CHART];
    return a->chart_len;
}

size_t acct_ranked(const acct_store *s) {
    return s->by_rating.length;
}

size_t acct_rank(const acct_store *s, const acct_account *a) {
    return acct_provisional(a) ? 0 : rank_of(&s->by_rating, a);
}

size_t acct_top(const acct_store *s, size_t from, const acct_account **out, size_t max) {
    return rank_range(&s->by_rating, from, (void **)out, max);
}

size_t acct_count(const acct_store *s) {
    return s->count;
}

acct_account *acct_at(const acct_store *s, size_t i) {
    return i < s->count ? &s->chunks[i / ACCT_CHUNK][i % ACCT_CHUNK] : NULL;
}

/* ------------------------------------------------------------ snapshots --- */

void acct_snapshot_of(const acct_account *a, acct_snapshot *snap) {
    memset(snap, 0, sizeof *snap);
    memcpy(snap->name, a->name, sizeof snap->name);
    memcpy(snap->salt, a->salt, sizeof snap->salt);
    memcpy(snap->key_hash, a->key_hash, sizeof snap->key_hash);
    snap->mu = a->mu;
    snap->sigma = a->sigma;
    snap->games = a->games;
    snap->wins = a->wins;
    memcpy(snap->best, a->best, sizeof snap->best);
    snap->n_recent = acct_recent(a, snap->recent);
    snap->n_chart = acct_chart(a, snap->chart);
}

/* Writes snap's fields but the name into a (not in the index). */
static void fill_from(acct_account *a, const acct_snapshot *snap) {
    memcpy(a->salt, snap->salt, sizeof a->salt);
    memcpy(a->key_hash, snap->key_hash, sizeof a->key_hash);
    a->mu = snap->mu;
    a->sigma = snap->sigma;
    a->games = snap->games;
    a->wins = snap->wins;
    memcpy(a->best, snap->best, sizeof a->best);
    a->recent_len = (uint8_t)snap->n_recent;
    for (size_t i = 0; i < snap->n_recent; i++) /* oldest in slot 0 */
        a->recent[i] = snap->recent[snap->n_recent - 1 - i];
    a->recent_next = (uint8_t)(snap->n_recent % ACCT_RECENT);
    a->chart_len = (uint8_t)snap->n_chart;
    memcpy(a->chart, snap->chart, snap->n_chart * sizeof a->chart[0]);
    a->chart_next = (uint8_t)(snap->n_chart % ACCT_CHART);
}

int acct_restore(acct_store *s, const acct_snapshot *snap, acct_account **out) {
    if (!memchr(snap->name, '\0', sizeof snap->name) || !name_valid(snap->name))
        return ACCT_BAD_NAME;
    if (folded_prefix(snap->name, "bot-") || folded_prefix(snap->name, "player-"))
        return ACCT_RESERVED;
    if (!skill_valid(snap->mu, snap->sigma) || snap->n_recent > ACCT_RECENT ||
        snap->n_chart > ACCT_CHART || snap->wins > snap->games)
        return ACCT_BAD_SNAPSHOT;
    acct_account *a = acct_find(s, snap->name);
    bool ranked_after = snap->games >= RATING_PROVISIONAL_GAMES;
    rank_node *node = NULL;
    if (a && !acct_provisional(a)) {
        node = rank_detach(&s->by_rating, a);
        assert(node);
        if (!ranked_after) {
            rank_node_free(node);
            node = NULL;
        }
    } else if (ranked_after && !(node = rank_node_new(&s->by_rating, NULL))) {
        return ACCT_NO_MEMORY;
    }
    if (!a) {
        if (!slots_reserve(s) || !(a = account_reserve(s))) {
            rank_node_free(node);
            return ACCT_NO_MEMORY;
        }
        memcpy(a->name, snap->name, sizeof a->name);
        a->name_hash = name_hash(a->name);
        s->slots[slot_of(s, a->name, a->name_hash)] = a;
        s->count++;
    } else {
        memcpy(a->name, snap->name, sizeof a->name); /* same name, maybe another case */
    }
    fill_from(a, snap);
    if (node) {
        rank_node_set_item(node, a);
        rank_attach(&s->by_rating, node);
    }
    if (out) *out = a;
    return ACCT_OK;
}

size_t acct_account_bytes(void) {
    return sizeof(acct_account);
}

bool acct_check(const acct_store *s) {
    size_t ranked = 0;
    for (size_t i = 0; i < s->count; i++) {
        const acct_account *a = acct_at(s, i);
        if (acct_find(s, a->name) != a || a->name_hash != name_hash(a->name))
            return false;
        if (a->recent_len > ACCT_RECENT || a->chart_len > ACCT_CHART) return false;
        size_t rank = rank_of(&s->by_rating, a);
        if (acct_provisional(a) ? rank != 0 : rank == 0) return false;
        ranked += !acct_provisional(a);
    }
    return ranked == s->by_rating.length && rank_check(&s->by_rating) &&
           2 * s->count <= s->n_slots;
}

/* --------------------------------------------------- changes (cluster) --- */

void acct_snapshot_new(acct_snapshot *snap, const char *name,
                       const uint8_t key[ACCT_KEY_BYTES],
                       const uint8_t salt[ACCT_SALT_BYTES]) {
    memset(snap, 0, sizeof *snap);
    snprintf(snap->name, sizeof snap->name, "%s", name);
    memcpy(snap->salt, salt, ACCT_SALT_BYTES);
    key_hash(salt, key, snap->key_hash);
    rating_skill initial = rating_initial();
    snap->mu = initial.mu;
    snap->sigma = initial.sigma;
}

int acct_snapshot_apply(acct_snapshot *snap, const acct_change *c) {
    /* Applied already (a write whose reply was lost, then tried again). */
    for (size_t i = 0; c->game && i < snap->n_recent; i++)
        if (snap->recent[i] == c->game) return ACCT_OK;
    if (c->nrace) {
        if (c->nrace < 2 || c->nrace > ACCT_RACE_MAX || c->me < 0 || c->me >= c->nrace)
            return ACCT_BAD_SNAPSHOT;
        rating_skill skill[ACCT_RACE_MAX];
        memcpy(skill, c->skill, sizeof skill);
        skill[c->me] = (rating_skill){.mu = snap->mu, .sigma = snap->sigma};
        if (!rating_update(skill, c->place, (size_t)c->nrace) ||
            !skill_valid(skill[c->me].mu, skill[c->me].sigma))
            return ACCT_BAD_SNAPSHOT;
        snap->mu = skill[c->me].mu;
        snap->sigma = skill[c->me].sigma;
        if (snap->games < UINT32_MAX) snap->games++;
        if (c->won && snap->wins < UINT32_MAX) snap->wins++;
        if (snap->n_chart == ACCT_CHART) { /* oldest first: the oldest goes */
            memmove(snap->chart, snap->chart + 1,
                    (ACCT_CHART - 1) * sizeof snap->chart[0]);
            snap->n_chart--;
        }
        snap->chart[snap->n_chart++] = rating_display(snap->mu);
    }
    if (c->game) { /* newest first */
        size_t keep = snap->n_recent < ACCT_RECENT ? snap->n_recent : ACCT_RECENT - 1;
        memmove(snap->recent + 1, snap->recent, keep * sizeof snap->recent[0]);
        snap->recent[0] = c->game;
        snap->n_recent = keep + 1;
    }
    if (c->counts_for_best && c->size >= ACCT_SIZE_MIN && c->size <= ACCT_SIZE_MAX) {
        acct_best *b = &snap->best[c->size - ACCT_SIZE_MIN];
        if (!b->game || c->score > b->score)
            *b = (acct_best){c->score, c->max_tile, c->game};
    }
    return ACCT_OK;
}
