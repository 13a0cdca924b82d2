/* accounts.h - the accounts table in memory: names, hashed keys, ratings, bests,
 * recent games, and the rating leaderboard's ordered index.
 *
 * What is kept, per account (struct acct_account):
 *   - the name as registered (its case kept for display; looked up without regard
 *     to case), a 16-byte random salt and SHA-256(salt || key) of its 128-bit key
 *     (never the key);
 *   - the rating: mu, sigma, games (rated races: the rating object's `games` and the
 *     profile's `races`, one counter since the contract counts both the same way),
 *     wins (rated races won), and the last ACCT_CHART ratings shown after each rated
 *     race (a ring, for the profile's chart);
 *   - best per board size 3..8 (score, max tile, game id) and the ACCT_RECENT newest
 *     finished game ids (a ring), for `profile`.
 * Accounts live in chunks of ACCT_CHUNK (never moved, never freed before the
 * table: the protocol deletes no account), found by an open-addressing table of
 * pointers keyed by the case-folded name, and, once not provisional (games >=
 * RATING_PROVISIONAL_GAMES), ordered in a rank_index by rating desc, games desc,
 * name asc: a leaderboard of k rows is O(log n + k), an account's rank O(log n).
 *
 * Memory per account (measured by `race2048-bench accounts`: 10^6 accounts, 95%
 * of them past their provisional games, every ring full): sizeof(acct_account) =
 * 440 bytes, plus 16 to 32 bytes of name table (a pointer per slot, load 1/4 to
 * 1/2), plus about 50 bytes of index node once not provisional: 510 bytes of RSS
 * per account, 0.5 GB per million. The two rings (160 + 80 bytes) are most of it;
 * they are what `profile` shows without reading the journal. A daily result costs
 * about 190 bytes (daily.h).
 *
 * How it is made durable (the plan; the wiring refines it). The journal keeps:
 *   - an account record at `register` (acct_snapshot: name, salt, hash, the
 *     starting skill), `registered` being sent only after its group commit, as
 *     `end` is;
 *   - with each rated race's finished-game record, in the same group commit, every
 *     account's skill before and after (absolute values, not deltas) and whether
 *     it won: a rating change whose `end` was sent is durable, and since recovery
 *     replays each finished game's record once, in order, it is applied exactly
 *     once (acct_apply_rating sets, it does not add; it counts the race, so a
 *     record must never be replayed twice: the journal's own record order and the
 *     snapshot's place in it guarantee that, not this module);
 *   - the finished game of any kind for `recent` and `best` (acct_record_game);
 *   - at compaction, one snapshot record per account (acct_count/acct_at,
 *     acct_snapshot_of) and per daily entry (daily_each), which recovery restores
 *     with acct_restore, daily_begin and daily_finish.
 * As wired (journal_accounts.c): the `account` record is the snapshot, at register
 * and at compaction alike; a compaction writes the accounts after every record it
 * keeps, so that finished games kept before them find no account and count once.
 * In cluster mode each account is a NATS KV entry updated with compare-and-set on
 * its revision (two races of one account ending on two nodes: the loser re-reads
 * and re-applies its update on the new skill), and a watch keeps every node's
 * table and index current through acct_restore.
 *
 * Pointers to accounts stay valid for the table's life (daily entries and players
 * may hold them). Single-threaded, no globals; the caller supplies every random
 * byte (keys and salts from the OS, srv_random) so that tests are deterministic. */
#ifndef RACE2048_ACCOUNTS_H
#define RACE2048_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rank_index.h"
#include "rating.h"

#define ACCT_NAME_MAX   16 /* as `hello`'s names: 1-16 of A-Za-z0-9_- */
#define ACCT_KEY_BYTES  16 /* 128-bit keys, 32 hex digits on the wire */
#define ACCT_SALT_BYTES 16
#define ACCT_HASH_BYTES 32 /* SHA-256 */
#define ACCT_SIZE_MIN   3
#define ACCT_SIZE_MAX   8
#define ACCT_SIZES      (ACCT_SIZE_MAX - ACCT_SIZE_MIN + 1)
#define ACCT_RECENT     20 /* `profile`'s recent: newest finished games */
#define ACCT_CHART      20 /* ratings kept for the profile's chart */
#define ACCT_CHUNK      4096

typedef enum acct_result {
    ACCT_OK = 0,
    ACCT_BAD_NAME = -1,   /* not 1-16 of A-Za-z0-9_- (bad_message) */
    ACCT_RESERVED = -2,   /* bot-... or player-..., any case (name_taken on the wire) */
    ACCT_NAME_TAKEN = -3, /* an account has it, compared without regard to case */
    ACCT_NO_MEMORY = -4,
    ACCT_BAD_SNAPSHOT = -5 /* a snapshot field out of range */
} acct_result;

const char *acct_strerror(int result);

/* A board size's best: 0 score and game for none yet. */
typedef struct acct_best {
    uint32_t score;
    uint32_t max_tile;
    uint64_t game;
} acct_best;

/* One account. Read its fields freely; change them only through the functions
 * below (the name table and the index depend on them). */
typedef struct acct_account {
    char name[ACCT_NAME_MAX + 1]; /* as registered */
    uint8_t recent_len;           /* ids in recent, 0..ACCT_RECENT */
    uint8_t recent_next;          /* where the next id goes */
    uint8_t chart_len;            /* ratings in chart */
    uint8_t chart_next;
    uint32_t name_hash; /* of the case-folded name */
    uint8_t salt[ACCT_SALT_BYTES];
    uint8_t key_hash[ACCT_HASH_BYTES]; /* SHA-256(salt || key) */
    double mu, sigma;
    uint32_t games;               /* rated races finished */
    uint32_t wins;                /* rated races won */
    acct_best best[ACCT_SIZES];   /* best[size - ACCT_SIZE_MIN] */
    uint64_t recent[ACCT_RECENT]; /* a ring: use acct_recent */
    int32_t chart[ACCT_CHART];    /* a ring: use acct_chart */
} acct_account;

/* The table. */
typedef struct acct_store {
    acct_account **chunks; /* ACCT_CHUNK accounts each, in registration order */
    size_t n_chunks, cap_chunks;
    size_t count;         /* accounts */
    acct_account **slots; /* the name table: open addressing, linear probing */
    size_t n_slots;       /* a power of two, at least 2 * count */
    rank_index by_rating; /* the accounts that are not provisional */
} acct_store;

/* Everything an account is, as plain data: a journal record's content. */
typedef struct acct_snapshot {
    char name[ACCT_NAME_MAX + 1];
    uint8_t salt[ACCT_SALT_BYTES];
    uint8_t key_hash[ACCT_HASH_BYTES];
    double mu, sigma;
    uint32_t games, wins;
    acct_best best[ACCT_SIZES];
    size_t n_recent;
    uint64_t recent[ACCT_RECENT]; /* newest first */
    size_t n_chart;
    int32_t chart[ACCT_CHART]; /* oldest first */
} acct_snapshot;

/* An empty table; seed draws the index's levels. ACCT_NO_MEMORY, nothing to free,
 * on failure. */
int acct_init(acct_store *s, uint64_t seed);
void acct_free(acct_store *s);

/* Whether name may be registered: ACCT_OK, ACCT_BAD_NAME, ACCT_RESERVED or
 * ACCT_NAME_TAKEN, the first that applies. */
int acct_check_name(const acct_store *s, const char *name);

/* Registers name with a key and salt the caller drew from the OS random source;
 * the new account is rated mu 25, sigma 25/3, 0 games. Returns ACCT_OK and the
 * account in *out (may be NULL), or acct_check_name's error, or ACCT_NO_MEMORY
 * with the table unchanged. */
int acct_register(acct_store *s, const char *name, const uint8_t key[ACCT_KEY_BYTES],
                  const uint8_t salt[ACCT_SALT_BYTES], acct_account **out);

/* The account named name, compared without regard to case; NULL if none (also
 * for a name that no account could have). */
acct_account *acct_find(const acct_store *s, const char *name);

/* Whether key (key_len bytes) is a's: false for any other length. Compares the
 * hashes in constant time. */
bool acct_verify(const acct_account *a, const uint8_t *key, size_t key_len);

/* 32 lowercase hex digits and a NUL. */
void acct_key_to_hex(const uint8_t key[ACCT_KEY_BYTES], char out[2 * ACCT_KEY_BYTES + 1]);
/* Parses exactly 32 hex digits (either case); false, key untouched, otherwise. */
bool acct_key_from_hex(const char *hex, uint8_t key[ACCT_KEY_BYTES]);

/* `hello` with `key`: the account if name is one and hex its key, else NULL (the
 * wire's bad_key, whichever part was wrong). */
acct_account *acct_login(const acct_store *s, const char *name, const char *hex);

/* A rated race's result for a: its new skill (computed by the caller with
 * rating_update for the whole race) and whether it won. Counts the race, adds the
 * shown rating to the chart and moves a in the leaderboard (in, once it is no
 * longer provisional). ACCT_NO_MEMORY, nothing changed, if a first entry in the
 * index cannot be allocated; a skill that is not finite with sigma > 0 is
 * ACCT_BAD_SNAPSHOT, nothing changed. */
int acct_apply_rating(acct_store *s, acct_account *a, rating_skill after, bool won);

/* A finished game of a's, of any kind: its id goes to recent. counts_for_best
 * (daily games and solo games with a server seed) also offers the score as the
 * size's best (higher score wins; an equal score keeps the older). Sizes outside
 * 3..8 only go to recent. */
void acct_record_game(acct_account *a, uint64_t game, int size, uint32_t score,
                      uint32_t max_tile, bool counts_for_best);

/* a's rating object's fields. */
static inline int acct_rating(const acct_account *a) {
    return rating_display(a->mu);
}
static inline bool acct_provisional(const acct_account *a) {
    return a->games < RATING_PROVISIONAL_GAMES;
}

/* The recent game ids, newest first, into out; returns how many (<= ACCT_RECENT). */
size_t acct_recent(const acct_account *a, uint64_t out[ACCT_RECENT]);
/* The chart's ratings, oldest first, into out; returns how many (<= ACCT_CHART). */
size_t acct_chart(const acct_account *a, int32_t out[ACCT_CHART]);

/* The rating leaderboard: its length, a's 1-based rank (0 if provisional), and
 * up to max accounts from a 1-based rank (rows of `leaderboard`: rank = from + i). */
size_t acct_ranked(const acct_store *s);
size_t acct_rank(const acct_store *s, const acct_account *a);
size_t acct_top(const acct_store *s, size_t from, const acct_account **out, size_t max);

/* The leaderboard's order: rating desc, games desc, name asc (case-folded). */
int acct_cmp_rating(const void *a, const void *b);

/* Every account, in registration order: i in 0..acct_count()-1. */
size_t acct_count(const acct_store *s);
acct_account *acct_at(const acct_store *s, size_t i);

/* A snapshot of a, and back: acct_restore creates the account or replaces the one
 * of that name (any case) with every field of snap, index place included. Errors:
 * ACCT_BAD_NAME, ACCT_BAD_SNAPSHOT (counts or skill out of range), ACCT_NO_MEMORY;
 * the table unchanged on any of them. Reserved names are refused as in register. */
void acct_snapshot_of(const acct_account *a, acct_snapshot *snap);
int acct_restore(acct_store *s, const acct_snapshot *snap, acct_account **out);

/* Cluster mode: one finished game of an account's, as a change that can be
 * applied again to a fresher copy of the account (a compare-and-set that lost
 * re-reads the account and re-applies its change). A rated race carries the
 * race's places and the skills every player took part with: the update is
 * recomputed from the account's current skill and the others' as they were. */
#define ACCT_RACE_MAX 8
typedef struct acct_change {
    char name[ACCT_NAME_MAX + 1];
    uint64_t game;
    int size;
    uint32_t score, max_tile;
    bool counts_for_best;
    int nrace; /* players of a rated race, 0 for a game that rates nothing */
    int me;    /* the account's index in place and skill */
    bool won;
    int place[ACCT_RACE_MAX];
    rating_skill skill[ACCT_RACE_MAX]; /* before the race */
} acct_change;

/* A new account's snapshot (mu 25, sigma 25/3), its key hashed with salt. */
void acct_snapshot_new(acct_snapshot *snap, const char *name,
                       const uint8_t key[ACCT_KEY_BYTES],
                       const uint8_t salt[ACCT_SALT_BYTES]);
/* Applies c to snap as acct_apply_rating and acct_record_game do to an
 * account: ACCT_OK, or ACCT_BAD_SNAPSHOT (snap unchanged) if the race cannot
 * be rated. A change whose game is among snap's recent games was applied
 * already: ACCT_OK, snap unchanged (a compare-and-set whose reply was lost
 * and that is tried again counts once). */
int acct_snapshot_apply(acct_snapshot *snap, const acct_change *c);

/* Bytes one account costs, without the name table and the index (for the docs). */
size_t acct_account_bytes(void);

/* Checks the table: every account found by its name, the index holding exactly
 * the accounts that are not provisional, in order (rank_check). For tests. */
bool acct_check(const acct_store *s);

#endif
