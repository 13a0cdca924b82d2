/* test_accounts_unit.c - accounts, the rating leaderboard's index and the daily boards
 * in process (server/accounts/: accounts.c, rank_index.c, daily.c): the contract's name
 * rules, keys, order and ties, ranks after updates, thousands of random operations
 * against naive sorted arrays, the daily order and its one-game rule, snapshots. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/sha.h>

#include "accounts.h"
#include "daily.h"
#include "rank_index.h"

/* A repeatable generator for the tests' choices (splitmix64). */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static size_t rnd_below(size_t n) {
    return (size_t)(rnd() % n);
}

/* A key and a salt made from a number, so each test knows its accounts' keys. */
static void make_key(unsigned n, uint8_t key[ACCT_KEY_BYTES],
                     uint8_t salt[ACCT_SALT_BYTES]) {
    for (int i = 0; i < ACCT_KEY_BYTES; i++)
        key[i] = (uint8_t)(n * 31 + i * 7 + 1);
    for (int i = 0; i < ACCT_SALT_BYTES; i++)
        salt[i] = (uint8_t)(n * 17 + i * 3 + 5);
}

static acct_account *reg(acct_store *s, const char *name, unsigned n) {
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    make_key(n, key, salt);
    acct_account *a = NULL;
    assert_int_equal(acct_register(s, name, key, salt, &a), ACCT_OK);
    assert_non_null(a);
    return a;
}

/* Plays `games` rated races for a, each leaving it at mu (sigma shrinking a bit). */
static void play(acct_store *s, acct_account *a, int games, double mu) {
    for (int i = 0; i < games; i++)
        assert_int_equal(
            acct_apply_rating(s, a, (rating_skill){mu, a->sigma * 0.99}, i & 1), ACCT_OK);
}

static int setup_store(void **state) {
    acct_store *s = malloc(sizeof *s);
    assert_non_null(s);
    assert_int_equal(acct_init(s, 42), ACCT_OK);
    rng_state = 27;
    *state = s;
    return 0;
}

static int teardown_store(void **state) {
    acct_store *s = *state;
    assert_true(acct_check(s));
    acct_free(s);
    free(s);
    return 0;
}

/* ------------------------------------------------------------- accounts --- */

static void test_register_name_rules(void **state) {
    acct_store *s = *state;
    acct_account *alice = reg(s, "Alice", 1);
    assert_string_equal(alice->name, "Alice");
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    make_key(2, key, salt);
    /* Taken without regard to case. */
    assert_int_equal(acct_register(s, "alice", key, salt, NULL), ACCT_NAME_TAKEN);
    assert_int_equal(acct_register(s, "ALICE", key, salt, NULL), ACCT_NAME_TAKEN);
    assert_int_equal(acct_check_name(s, "aLiCe"), ACCT_NAME_TAKEN);
    assert_ptr_equal(acct_find(s, "ALICE"), alice);
    assert_ptr_equal(acct_find(s, "alice"), alice);
    assert_null(acct_find(s, "alicia"));
    /* Never registrable, in any case. */
    const char *reserved[] = {"bot-1",    "BOT-x",     "Bot-",
                              "player-3", "PLAYER-12", "pLaYeR-z"};
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        assert_int_equal(acct_register(s, reserved[i], key, salt, NULL), ACCT_RESERVED);
    /* Names that merely look alike are fine. */
    reg(s, "bot", 3);
    reg(s, "botx", 4);
    reg(s, "player", 5);
    reg(s, "my-bot-1", 6);
    reg(s, "abcdefghijklmnop", 7); /* 16 characters */
    const char *bad[] = {"", "abcdefghijklmnopq", "a b", "caf\xc3\xa9", "x.y", "tab\t"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(acct_register(s, bad[i], key, salt, NULL), ACCT_BAD_NAME);
        assert_null(acct_find(s, bad[i]));
    }
    assert_int_equal(acct_count(s), 6);
    assert_string_equal(acct_strerror(ACCT_RESERVED),
                        "names starting with bot- or player- are never registered");
    /* A new account: 1500, provisional, nothing played. */
    assert_int_equal(acct_rating(alice), 1500);
    assert_true(acct_provisional(alice));
    assert_int_equal(acct_rank(s, alice), 0);
}

static void test_many_names_grow_the_table(void **state) {
    acct_store *s = *state;
    char name[32];
    for (unsigned i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "U%u", i);
        reg(s, name, i);
    }
    for (unsigned i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "u%u", i);
        acct_account *a = acct_find(s, name);
        assert_non_null(a);
        assert_int_equal(a->name[0], 'U');
        assert_ptr_equal(acct_at(s, i), a); /* registration order */
    }
    assert_null(acct_at(s, 20000));
    assert_true(acct_check(s));
}

static void test_keys(void **state) {
    acct_store *s = *state;
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    make_key(9, key, salt);
    acct_account *a = reg(s, "Keeper", 9);
    assert_true(acct_verify(a, key, sizeof key));
    /* What is kept is SHA-256(salt || key), never the key. */
    uint8_t buf[32], digest[32];
    memcpy(buf, salt, 16);
    memcpy(buf + 16, key, 16);
    SHA256(buf, sizeof buf, digest);
    assert_memory_equal(a->key_hash, digest, 32);
    assert_memory_equal(a->salt, salt, 16);
    for (size_t i = 0; i + sizeof key <= sizeof *a; i++)
        assert_memory_not_equal((const uint8_t *)a + i, key, sizeof key);
    /* Wrong keys: one bit, another length, none. */
    for (int bit = 0; bit < 128; bit += 9) {
        uint8_t wrong[ACCT_KEY_BYTES];
        memcpy(wrong, key, sizeof wrong);
        wrong[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_false(acct_verify(a, wrong, sizeof wrong));
    }
    uint8_t longer[ACCT_KEY_BYTES + 1];
    memcpy(longer, key, sizeof key);
    longer[ACCT_KEY_BYTES] = 0;
    assert_false(acct_verify(a, longer, sizeof longer));
    assert_false(acct_verify(a, key, sizeof key - 1));
    assert_false(acct_verify(a, key, 0));
    assert_false(acct_verify(a, NULL, sizeof key));
    assert_false(acct_verify(NULL, key, sizeof key));
    /* The same key under another salt hashes differently. */
    uint8_t salt2[ACCT_SALT_BYTES];
    memcpy(salt2, salt, sizeof salt2);
    salt2[0] ^= 1;
    acct_account *b = NULL;
    assert_int_equal(acct_register(s, "Twin", key, salt2, &b), ACCT_OK);
    assert_memory_not_equal(a->key_hash, b->key_hash, 32);
    assert_true(acct_verify(b, key, sizeof key));

    /* Hex, as the wire carries it, and login (hello with key). */
    char hex[33];
    acct_key_to_hex(key, hex);
    assert_int_equal(strlen(hex), 32);
    for (int i = 0; i < 32; i++)
        assert_non_null(strchr("0123456789abcdef", hex[i]));
    uint8_t back[ACCT_KEY_BYTES];
    assert_true(acct_key_from_hex(hex, back));
    assert_memory_equal(back, key, sizeof key);
    assert_ptr_equal(acct_login(s, "keeper", hex), a);
    char upper[33];
    for (int i = 0; i < 33; i++)
        upper[i] = hex[i] >= 'a' && hex[i] <= 'f' ? (char)(hex[i] - 32) : hex[i];
    assert_ptr_equal(acct_login(s, "KEEPER", upper), a);
    assert_ptr_equal(acct_login(s, "twin", hex), b); /* the same key, its own account */
    assert_null(acct_login(s, "Nobody", hex));
    char shorter[33];
    memcpy(shorter, hex, 33);
    shorter[31] = '\0';
    assert_null(acct_login(s, "Keeper", shorter));
    char *longer_hex = "00000000000000000000000000000000a";
    assert_false(acct_key_from_hex(longer_hex, back));
    char bad[33];
    memcpy(bad, hex, 33);
    bad[5] = 'g';
    assert_null(acct_login(s, "Keeper", bad));
    assert_null(acct_login(s, "Keeper", ""));
    assert_null(acct_login(s, "Keeper", NULL));
    assert_null(acct_login(s, NULL, hex));
    assert_null(acct_login(s, "Keeper-but-far-too-long", hex));
    bad[5] = hex[5] == '0' ? '1' : '0'; /* well-formed, wrong */
    assert_null(acct_login(s, "Keeper", bad));
}

static void test_ten_games_make_a_ranked_account(void **state) {
    acct_store *s = *state;
    acct_account *a = reg(s, "Ten", 1);
    for (int i = 0; i < RATING_PROVISIONAL_GAMES - 1; i++) {
        assert_int_equal(acct_apply_rating(s, a, (rating_skill){26, 7}, true), ACCT_OK);
        assert_true(acct_provisional(a));
        assert_int_equal(acct_rank(s, a), 0);
        assert_int_equal(acct_ranked(s), 0);
    }
    assert_int_equal(acct_apply_rating(s, a, (rating_skill){27, 6}, false), ACCT_OK);
    assert_false(acct_provisional(a));
    assert_int_equal(a->games, 10);
    assert_int_equal(a->wins, 9);
    assert_int_equal(acct_rank(s, a), 1);
    assert_int_equal(acct_ranked(s), 1);
    assert_int_equal(acct_rating(a), 1620);
    /* A skill that is no skill changes nothing. */
    assert_int_equal(acct_apply_rating(s, a, (rating_skill){27, 0}, true),
                     ACCT_BAD_SNAPSHOT);
    assert_int_equal(acct_apply_rating(s, a, (rating_skill){NAN, 1}, true),
                     ACCT_BAD_SNAPSHOT);
    assert_int_equal(a->games, 10);
}

static void test_leaderboard_order_and_ties(void **state) {
    acct_store *s = *state;
    /* Same rating 1560 (mu 26): more games first, then name without regard to case. */
    acct_account *carol = reg(s, "carol", 1), *bob = reg(s, "Bob", 2),
                 *dave = reg(s, "dave", 3);
    acct_account *top = reg(s, "Zed", 4), *low = reg(s, "Amy", 5),
                 *prov = reg(s, "Pro", 6);
    play(s, carol, 10, 26.0);
    play(s, bob, 10, 26.0);
    play(s, dave, 12, 26.0);
    play(s, top, 10, 30.0);
    play(s, low, 15, 20.0);
    play(s, prov, 9, 40.0); /* the best of all, but provisional */
    /* mu 26.004 still shows 1560: a tie in the shown rating is a tie. */
    assert_int_equal(acct_apply_rating(s, bob, (rating_skill){26.004, 5}, false),
                     ACCT_OK);
    assert_int_equal(acct_rating(bob), 1560);
    play(s, carol, 1, 26.0); /* bob 11, carol 11: now by name, Bob first */
    const acct_account *rows[10];
    assert_int_equal(acct_top(s, 1, rows, 10), 5);
    assert_ptr_equal(rows[0], top);
    assert_ptr_equal(rows[1], dave);
    assert_ptr_equal(rows[2], bob);
    assert_ptr_equal(rows[3], carol);
    assert_ptr_equal(rows[4], low);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(acct_rank(s, rows[i]), i + 1);
    assert_int_equal(acct_rank(s, prov), 0);
    /* A window: ranks 2 and 3. */
    assert_int_equal(acct_top(s, 2, rows, 2), 2);
    assert_ptr_equal(rows[0], dave);
    assert_ptr_equal(rows[1], bob);
    assert_int_equal(acct_top(s, 6, rows, 2), 0);
    assert_int_equal(acct_top(s, 0, rows, 2), 0);
}

static void test_rank_moves_with_updates(void **state) {
    acct_store *s = *state;
    acct_account *a = reg(s, "A", 1), *b = reg(s, "B", 2), *c = reg(s, "C", 3);
    play(s, a, 10, 25);
    play(s, b, 10, 26);
    play(s, c, 10, 27);
    assert_int_equal(acct_rank(s, c), 1);
    assert_int_equal(acct_rank(s, a), 3);
    assert_int_equal(acct_apply_rating(s, a, (rating_skill){28, 3}, true), ACCT_OK);
    assert_int_equal(acct_rank(s, a), 1);
    assert_int_equal(acct_rank(s, c), 2);
    assert_int_equal(acct_rank(s, b), 3);
    assert_int_equal(acct_apply_rating(s, c, (rating_skill){10, 3}, false), ACCT_OK);
    assert_int_equal(acct_rank(s, c), 3);
    assert_int_equal(acct_rank(s, b), 2);
    assert_true(acct_check(s));
}

static void test_recent_best_and_chart(void **state) {
    acct_store *s = *state;
    acct_account *a = reg(s, "Player1", 1);
    uint64_t recent[ACCT_RECENT];
    assert_int_equal(acct_recent(a, recent), 0);
    for (uint64_t g = 1; g <= 25; g++)
        acct_record_game(a, 100 + g, 4, (uint32_t)(g * 10 % 70), 64, g % 5 != 0);
    assert_int_equal(acct_recent(a, recent), ACCT_RECENT);
    for (int i = 0; i < ACCT_RECENT; i++)
        assert_int_equal(recent[i], 125 - i);
    /* Scores g*10 % 70: 60 first at g = 6; g = 13 (60 again) keeps the older. */
    assert_int_equal(a->best[4 - ACCT_SIZE_MIN].score, 60);
    assert_int_equal(a->best[4 - ACCT_SIZE_MIN].game, 106);
    assert_int_equal(a->best[4 - ACCT_SIZE_MIN].max_tile, 64);
    /* Not counting for best (a race), and a size outside 3..8: recent only. */
    acct_record_game(a, 500, 4, 99999, 4096, false);
    acct_record_game(a, 501, 9, 99999, 4096, true);
    acct_record_game(a, 502, 8, 12, 8, true);
    assert_int_equal(a->best[4 - ACCT_SIZE_MIN].score, 60);
    assert_int_equal(a->best[8 - ACCT_SIZE_MIN].game, 502);
    assert_int_equal(a->best[3 - ACCT_SIZE_MIN].game, 0);
    assert_int_equal(acct_recent(a, recent), ACCT_RECENT);
    assert_int_equal(recent[0], 502);
    assert_int_equal(recent[2], 500);
    /* The chart: the shown rating after each rated race, oldest first, the last 20. */
    int32_t chart[ACCT_CHART];
    assert_int_equal(acct_chart(a, chart), 0);
    for (int i = 1; i <= 23; i++)
        assert_int_equal(acct_apply_rating(s, a, (rating_skill){i, 5}, false), ACCT_OK);
    assert_int_equal(acct_chart(a, chart), ACCT_CHART);
    for (int i = 0; i < ACCT_CHART; i++)
        assert_int_equal(chart[i], 60 * (i + 4));
}

/* ASCII names compared without regard to case. */
static int name_cmp(const char *a, const char *b) {
    for (;; a++, b++) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a,
            y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (x != y || !x) return x - y;
    }
}

/* The naive model: every ranked account sorted by the contract's order, written
 * here from PROTOCOL.md rather than taken from the module. */
static int model_cmp(const void *pa, const void *pb) {
    const acct_account *a = *(const acct_account *const *)pa;
    const acct_account *b = *(const acct_account *const *)pb;
    int ra = rating_display(a->mu), rb = rating_display(b->mu);
    if (ra != rb) return rb - ra;
    if (a->games != b->games) return a->games < b->games ? 1 : -1;
    return name_cmp(a->name, b->name);
}

static void check_against_model(acct_store *s) {
    size_t n = acct_count(s), ranked = 0;
    const acct_account **model = malloc((n + 1) * sizeof *model);
    const acct_account **rows = malloc((n + 1) * sizeof *rows);
    assert_non_null(model);
    assert_non_null(rows);
    for (size_t i = 0; i < n; i++) {
        const acct_account *a = acct_at(s, i);
        if (a->games >= 10) model[ranked++] = a;
    }
    qsort(model, ranked, sizeof *model, model_cmp);
    assert_int_equal(acct_ranked(s), ranked);
    assert_int_equal(acct_top(s, 1, rows, n + 1), ranked);
    for (size_t i = 0; i < ranked; i++)
        assert_ptr_equal(rows[i], model[i]);
    for (int k = 0; k < 20 && ranked; k++) {
        size_t i = rnd_below(ranked);
        assert_int_equal(acct_rank(s, model[i]), i + 1);
        const acct_account *one;
        assert_int_equal(acct_top(s, i + 1, &one, 1), 1);
        assert_ptr_equal(one, model[i]);
    }
    free(model);
    free(rows);
}

static void test_random_operations_against_a_sorted_array(void **state) {
    acct_store *s = *state;
    char name[32];
    for (int op = 0; op < 6000; op++) {
        size_t n = acct_count(s);
        unsigned what = (unsigned)rnd_below(10);
        if (n < 50 || what == 0) {
            snprintf(name, sizeof name, "%c%u", "aBcD"[op % 4], (unsigned)op);
            reg(s, name, (unsigned)op);
        } else if (what <= 7) {
            /* Few distinct ratings, so ties on rating (and games) are common. */
            acct_account *a = acct_at(s, rnd_below(n));
            double mu = 20 + (double)rnd_below(12) / 6.0;
            assert_int_equal(acct_apply_rating(s, a, (rating_skill){mu, 4}, rnd() & 1),
                             ACCT_OK);
        } else {
            /* A restore that changes an account's games across the threshold. */
            acct_account *a = acct_at(s, rnd_below(n));
            acct_snapshot snap;
            acct_snapshot_of(a, &snap);
            snap.games = (uint32_t)rnd_below(15);
            snap.wins = snap.games / 2;
            snap.mu = 20 + (double)rnd_below(12) / 6.0;
            for (char *c = snap.name; *c; c++) /* another case: the same account */
                if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 32);
            acct_account *back = NULL;
            assert_int_equal(acct_restore(s, &snap, &back), ACCT_OK);
            assert_ptr_equal(back, a);
            assert_int_equal(acct_count(s), n);
        }
        if (op % 250 == 0) {
            assert_true(acct_check(s));
            check_against_model(s);
        }
    }
    assert_true(acct_check(s));
    check_against_model(s);
}

static void test_snapshot_round_trip(void **state) {
    acct_store *s = *state;
    char name[32];
    for (unsigned i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "Racer_%u", i);
        acct_account *a = reg(s, name, i);
        int games = (int)rnd_below(25);
        for (int g = 0; g < games; g++)
            assert_int_equal(
                acct_apply_rating(s, a,
                                  (rating_skill){15 + (double)rnd_below(200) / 10,
                                                 1 + (double)rnd_below(70) / 10},
                                  rnd() & 1),
                ACCT_OK);
        int finished = (int)rnd_below(30);
        for (int g = 0; g < finished; g++)
            acct_record_game(a, rnd() >> 11, 3 + (int)rnd_below(6),
                             (uint32_t)rnd_below(50000), 2u << rnd_below(11), rnd() & 1);
    }
    acct_store copy;
    assert_int_equal(acct_init(&copy, 7), ACCT_OK);
    for (size_t i = 0; i < acct_count(s); i++) {
        acct_snapshot snap;
        acct_snapshot_of(acct_at(s, i), &snap);
        assert_int_equal(acct_restore(&copy, &snap, NULL), ACCT_OK);
    }
    assert_true(acct_check(&copy));
    assert_int_equal(acct_count(&copy), acct_count(s));
    for (size_t i = 0; i < acct_count(s); i++) {
        acct_snapshot x, y;
        acct_snapshot_of(acct_at(s, i), &x);
        acct_snapshot_of(acct_at(&copy, i), &y);
        assert_memory_equal(&x, &y, sizeof x);
        uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
        make_key((unsigned)i, key, salt);
        assert_true(acct_verify(acct_at(&copy, i), key, sizeof key));
        assert_int_equal(acct_rank(&copy, acct_at(&copy, i)),
                         acct_rank(s, acct_at(s, i)));
    }
    /* A restored copy goes on like the original: same rings after more games. */
    acct_account *a = acct_at(s, 3), *b = acct_at(&copy, 3);
    for (int g = 0; g < 7; g++) {
        acct_record_game(a, 9000 + (uint64_t)g, 5, 100, 8, true);
        acct_record_game(b, 9000 + (uint64_t)g, 5, 100, 8, true);
        assert_int_equal(acct_apply_rating(s, a, (rating_skill){30, 2}, true), ACCT_OK);
        assert_int_equal(acct_apply_rating(&copy, b, (rating_skill){30, 2}, true),
                         ACCT_OK);
    }
    acct_snapshot x, y;
    acct_snapshot_of(a, &x);
    acct_snapshot_of(b, &y);
    assert_memory_equal(&x, &y, sizeof x);

    /* Snapshots out of range change nothing. */
    acct_snapshot bad = x;
    bad.n_recent = ACCT_RECENT + 1;
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_BAD_SNAPSHOT);
    bad = x;
    bad.sigma = 0;
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_BAD_SNAPSHOT);
    bad = x;
    bad.mu = NAN;
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_BAD_SNAPSHOT);
    bad = x;
    bad.wins = bad.games + 1;
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_BAD_SNAPSHOT);
    bad = x;
    memcpy(bad.name, "bot-restored", 13);
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_RESERVED);
    bad = x;
    memset(bad.name, 'a', sizeof bad.name); /* no NUL */
    assert_int_equal(acct_restore(&copy, &bad, NULL), ACCT_BAD_NAME);
    acct_snapshot_of(b, &y);
    assert_memory_equal(&x, &y, sizeof x);
    assert_int_equal(acct_count(&copy), acct_count(s));
    assert_true(acct_check(&copy));
    acct_free(&copy);
}

/* ----------------------------------------------------------- rank index --- */

/* Items are ints; equal values are ordered by address, so the order is total. */
static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (x != y) return x < y ? -1 : 1;
    return a == b ? 0 : ((uintptr_t)a < (uintptr_t)b ? -1 : 1);
}
static int int_ptr_cmp(const void *a, const void *b) {
    return int_cmp(*(const int *const *)a, *(const int *const *)b);
}

/* The key the int index may keep: the value itself (its bias keeps the order). */
static uint64_t int_key(const void *a) {
    return (uint64_t)((int64_t) * (const int *)a + 0x80000000LL);
}

/* Random inserts, removals and moves against a sorted array, with the invariants
 * checked as they go; with key, the nodes keep keys and ties (many: 50 values)
 * fall to the compare function. */
static void rank_index_random(rank_key_fn key) {
    enum { N = 400 };
    static int value[N];
    bool in[N] = {0};
    rank_index idx;
    assert_true(rank_init(&idx, int_cmp, key, 99));
    assert_true(rank_check(&idx));
    assert_null(rank_at(&idx, 1));
    for (int op = 0; op < 20000; op++) {
        size_t i = rnd_below(N);
        switch (rnd_below(3)) {
        case 0:
            if (!in[i]) {
                value[i] = (int)rnd_below(50);
                assert_true(rank_insert(&idx, &value[i]));
                in[i] = true;
            }
            break;
        case 1:
            assert_int_equal(rank_remove(&idx, &value[i]), in[i]);
            in[i] = false;
            break;
        default:
            if (in[i]) { /* move: detach, change, attach */
                rank_node *node = rank_detach(&idx, &value[i]);
                assert_non_null(node);
                value[i] = (int)rnd_below(50);
                rank_attach(&idx, node);
            }
        }
        if (op % 97 == 0 || op > 19900) {
            assert_true(rank_check(&idx));
            const int *model[N];
            size_t n = 0;
            for (size_t j = 0; j < N; j++)
                if (in[j]) model[n++] = &value[j];
            qsort(model, n, sizeof *model, int_ptr_cmp);
            assert_int_equal(idx.length, n);
            void *all[N];
            assert_int_equal(rank_range(&idx, 1, all, N), n);
            for (size_t j = 0; j < n; j++) {
                assert_ptr_equal(all[j], model[j]);
                assert_int_equal(rank_of(&idx, model[j]), j + 1);
                assert_ptr_equal(rank_at(&idx, j + 1), model[j]);
            }
            assert_null(rank_at(&idx, n + 1));
            for (size_t j = 0; j < N; j++)
                if (!in[j]) assert_int_equal(rank_of(&idx, &value[j]), 0);
        }
    }
    rank_free(&idx);
}

static void test_rank_index_random(void **state) {
    (void)state;
    rank_index_random(NULL);
}

static void test_rank_index_random_with_keys(void **state) {
    (void)state;
    rank_index_random(int_key);
}

/* ---------------------------------------------------------------- daily --- */

static void test_daily_order_and_one_game(void **state) {
    acct_store *s = *state;
    daily_boards d;
    daily_init(&d, 5);
    int32_t day;
    assert_true(daily_day_parse("2026-12-03", &day));
    acct_account *a[6];
    char name[8];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "d%d", i);
        a[i] = reg(s, name, (unsigned)i);
        assert_false(daily_played(&d, day, 4, a[i]));
        assert_int_equal(daily_begin(&d, day, 4, a[i]), DAILY_OK);
        assert_true(daily_played(&d, day, 4, a[i]));
    }
    /* One game per account, day and size; other sizes and days are other games. */
    assert_int_equal(daily_begin(&d, day, 4, a[0]), DAILY_PLAYED);
    assert_false(daily_played(&d, day, 5, a[0]));
    assert_false(daily_played(&d, day + 1, 4, a[0]));
    assert_int_equal(daily_begin(&d, day, 9, a[0]), DAILY_BAD_SIZE);
    assert_int_equal(daily_begin(&d, day, 2, a[0]), DAILY_BAD_SIZE);
    /* Begun but not finished: played, not on the board (a `leave` before the end). */
    assert_int_equal(daily_ranked(&d, day, 4), 0);
    /* Score desc, then max tile desc, then moves asc, then the earlier end. */
    daily_result r[6] = {
        {.score = 1000, .max_tile = 128, .moves = 90, .end_ms = 50, .game = 10},
        {.score = 2000, .max_tile = 128, .moves = 90, .end_ms = 50, .game = 11},
        {.score = 1000, .max_tile = 256, .moves = 90, .end_ms = 50, .game = 12},
        {.score = 1000, .max_tile = 128, .moves = 80, .end_ms = 50, .game = 13},
        {.score = 1000, .max_tile = 128, .moves = 90, .end_ms = 40, .game = 14},
        {.score = 1000, .max_tile = 128, .moves = 90, .end_ms = 60, .game = 15},
    };
    for (int i = 0; i < 5; i++)
        assert_int_equal(daily_finish(&d, day, 4, a[i], &r[i]), DAILY_OK);
    assert_int_equal(daily_finish(&d, day, 4, a[0], &r[0]), DAILY_FINISHED);
    assert_int_equal(daily_finish(&d, day, 5, a[0], &r[0]), DAILY_NOT_BEGUN);
    assert_int_equal(daily_finish(&d, day, 11, a[0], &r[0]), DAILY_BAD_SIZE);
    assert_true(daily_played(&d, day, 4, a[5]));
    assert_int_equal(daily_rank(&d, day, 4, a[5]), 0);
    assert_int_equal(daily_finish(&d, day, 4, a[5], &r[5]), DAILY_OK);
    assert_true(daily_check(&d));
    const daily_entry *rows[10];
    assert_int_equal(daily_top(&d, day, 4, 1, rows, 10), 6);
    const int expect[6] = {1, 2, 3, 4, 0, 5};
    for (int i = 0; i < 6; i++) {
        assert_ptr_equal(rows[i]->account, a[expect[i]]);
        assert_int_equal(rows[i]->result.game, r[expect[i]].game);
        assert_int_equal(daily_rank(&d, day, 4, a[expect[i]]), i + 1);
    }
    assert_int_equal(daily_top(&d, day, 5, 1, rows, 10), 0);
    assert_int_equal(daily_top(&d, day - 1, 4, 1, rows, 10), 0);
    /* Pruning drops earlier days only. */
    assert_int_equal(daily_begin(&d, day - 3, 3, a[0]), DAILY_OK);
    daily_prune(&d, day);
    assert_false(daily_played(&d, day - 3, 3, a[0]));
    assert_true(daily_played(&d, day, 4, a[0]));
    assert_true(daily_check(&d));
    daily_free(&d);
}

typedef struct daily_copy {
    daily_boards *into;
    int entries;
} daily_copy;

static void copy_entry(void *ctx, int32_t day, int size, const daily_entry *e) {
    daily_copy *c = ctx;
    assert_int_equal(daily_begin(c->into, day, size, e->account), DAILY_OK);
    if (e->finished)
        assert_int_equal(daily_finish(c->into, day, size, e->account, &e->result),
                         DAILY_OK);
    c->entries++;
}

static int daily_model_cmp(const void *pa, const void *pb) {
    const daily_entry *a = *(const daily_entry *const *)pa;
    const daily_entry *b = *(const daily_entry *const *)pb;
    const daily_result *x = &a->result, *y = &b->result;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->max_tile != y->max_tile) return x->max_tile < y->max_tile ? 1 : -1;
    if (x->moves != y->moves) return x->moves > y->moves ? 1 : -1;
    if (x->end_ms != y->end_ms) return x->end_ms > y->end_ms ? 1 : -1;
    return x->game > y->game ? 1 : -1;
}

static void test_daily_random_and_snapshot(void **state) {
    acct_store *s = *state;
    daily_boards d, copy;
    daily_init(&d, 1);
    daily_init(&copy, 2);
    char name[16];
    enum { N = 600 };
    acct_account *acc[N];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "r%d", i);
        acc[i] = reg(s, name, (unsigned)i);
    }
    uint64_t game = 1;
    for (int op = 0; op < 5000; op++) {
        const acct_account *a = acc[rnd_below(N)];
        int32_t day = 20000 + (int32_t)rnd_below(3);
        int size = 3 + (int)rnd_below(2);
        bool played = daily_played(&d, day, size, a);
        assert_int_equal(daily_begin(&d, day, size, a), played ? DAILY_PLAYED : DAILY_OK);
        if (!played && rnd_below(4)) {
            daily_result r = {(uint32_t)rnd_below(8) * 4, 2u << rnd_below(3),
                              (uint32_t)rnd_below(5), (int64_t)rnd_below(5), game++};
            assert_int_equal(daily_finish(&d, day, size, a, &r), DAILY_OK);
        }
    }
    assert_true(daily_check(&d));
    for (int32_t day = 20000; day < 20003; day++)
        for (int size = 3; size <= 4; size++) {
            const daily_entry *rows[N], *model[N];
            size_t n = daily_top(&d, day, size, 1, rows, N);
            assert_int_equal(n, daily_ranked(&d, day, size));
            assert_true(n > 0);
            memcpy(model, rows, n * sizeof *rows);
            qsort(model, n, sizeof *model, daily_model_cmp);
            for (size_t i = 0; i < n; i++)
                assert_ptr_equal(rows[i], model[i]);
        }
    daily_copy c = {&copy, 0};
    daily_each(&d, copy_entry, &c);
    assert_true(c.entries > 1000);
    assert_true(daily_check(&copy));
    for (int32_t day = 20000; day < 20003; day++)
        for (int size = 3; size <= 4; size++) {
            const daily_entry *x[N], *y[N];
            size_t n = daily_top(&d, day, size, 1, x, N);
            assert_int_equal(daily_top(&copy, day, size, 1, y, N), n);
            for (size_t i = 0; i < n; i++) {
                assert_ptr_equal(x[i]->account, y[i]->account);
                assert_memory_equal(&x[i]->result, &y[i]->result, sizeof x[i]->result);
            }
            for (int i = 0; i < N; i++)
                assert_int_equal(daily_played(&d, day, size, acc[i]),
                                 daily_played(&copy, day, size, acc[i]));
        }
    daily_free(&d);
    daily_free(&copy);
}

static void test_days(void **state) {
    (void)state;
    int32_t day = -1;
    assert_true(daily_day_parse("1970-01-01", &day));
    assert_int_equal(day, 0);
    assert_true(daily_day_parse("2026-12-03", &day));
    assert_int_equal(day, 20790);
    assert_int_equal(daily_day_of_ms(20790LL * 86400000), 20790);
    assert_int_equal(daily_day_of_ms(20791LL * 86400000 - 1), 20790);
    assert_int_equal(daily_day_start_ms(20791), 20791LL * 86400000);
    char text[11];
    daily_day_format(20790, text);
    assert_string_equal(text, "2026-12-03");
    assert_true(daily_day_parse("2024-02-29", &day));
    daily_day_format(day, text);
    assert_string_equal(text, "2024-02-29");
    assert_true(daily_day_parse("2000-02-29", &day));
    int32_t before = day;
    const char *bad[] = {"2023-02-29", "1900-02-29", "2026-1-03",   "2026-13-01",
                         "2026-00-10", "2026-04-31", "2026-12-03x", "2026/12/03",
                         "",           "1969-12-31"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(daily_day_parse(bad[i], &day));
        assert_int_equal(day, before);
    }
    /* Every day of a few centuries comes back from its text. */
    for (int32_t d = 0; d < 200 * 366; d += 7) {
        daily_day_format(d, text);
        assert_true(daily_day_parse(text, &day));
        assert_int_equal(day, d);
    }
    assert_int_equal(daily_day_of_ms(-1), -1);
}

/* Cluster mode's change to a snapshot (acct_snapshot_apply, what a node applies
 * to an account's KV entry) leaves it as the table's own functions leave the
 * account (rating_update from the account's skill, acct_apply_rating,
 * acct_record_game): 300 random games, rated races of 2 to 8 and other games,
 * through full rings; and a snapshot new with a key verifies that key. */
static void test_snapshot_apply_matches_the_table(void **state) {
    acct_store *s = *state;
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    make_key(9, key, salt);
    acct_account *a = reg(s, "Cass", 9);
    acct_snapshot snap, from_table;
    acct_snapshot_new(&snap, "Cass", key, salt);
    acct_snapshot_of(a, &from_table);
    assert_memory_equal(&snap, &from_table, sizeof snap);
    for (int g = 0; g < 300; g++) {
        acct_change c = {.game = (uint64_t)g + 1,
                         .size = 3 + (int)rnd_below(7), /* 9 only goes to recent */
                         .score = (uint32_t)rnd_below(5000),
                         .max_tile = 2u << rnd_below(10),
                         .counts_for_best = rnd_below(2)};
        snprintf(c.name, sizeof c.name, "Cass");
        rating_skill skill[ACCT_RACE_MAX];
        if (rnd_below(3)) {
            c.nrace = 2 + (int)rnd_below(ACCT_RACE_MAX - 1);
            c.me = (int)rnd_below((size_t)c.nrace);
            for (int k = 0; k < c.nrace; k++) {
                c.place[k] = 1 + (int)rnd_below((size_t)c.nrace);
                c.skill[k] =
                    (rating_skill){10 + (double)rnd_below(30), 1 + (double)rnd_below(8)};
            }
            c.won = c.place[c.me] == 1;
            memcpy(skill, c.skill, sizeof skill);
            skill[c.me] = (rating_skill){a->mu, a->sigma};
            assert_true(rating_update(skill, c.place, (size_t)c.nrace));
            assert_int_equal(acct_apply_rating(s, a, skill[c.me], c.won), ACCT_OK);
        }
        acct_record_game(a, c.game, c.size, c.score, c.max_tile, c.counts_for_best);
        assert_int_equal(acct_snapshot_apply(&snap, &c), ACCT_OK);
        acct_snapshot_of(a, &from_table);
        assert_true(snap.mu == from_table.mu && snap.sigma == from_table.sigma);
        assert_int_equal(snap.games, from_table.games);
        assert_int_equal(snap.wins, from_table.wins);
        assert_int_equal(snap.n_recent, from_table.n_recent);
        assert_memory_equal(snap.recent, from_table.recent,
                            snap.n_recent * sizeof snap.recent[0]);
        assert_int_equal(snap.n_chart, from_table.n_chart);
        assert_memory_equal(snap.chart, from_table.chart,
                            snap.n_chart * sizeof snap.chart[0]);
        assert_memory_equal(snap.best, from_table.best, sizeof snap.best);
    }
    /* A game applied again (its write's reply lost) counts once. */
    acct_snapshot before = snap;
    acct_change again = {
        .game = 300, .size = 4, .nrace = 2, .me = 0, .won = true, .place = {1, 2}};
    again.skill[0] = again.skill[1] = rating_initial();
    assert_int_equal(acct_snapshot_apply(&snap, &again), ACCT_OK);
    assert_memory_equal(&snap, &before, sizeof snap);
    /* A race the rating cannot take changes nothing. */
    acct_change bad = {.nrace = 1, .game = 0};
    assert_int_equal(acct_snapshot_apply(&snap, &bad), ACCT_BAD_SNAPSHOT);
    assert_memory_equal(&snap, &before, sizeof snap);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_name_rules, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_many_names_grow_the_table, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_keys, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(test_ten_games_make_a_ranked_account, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_leaderboard_order_and_ties, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_rank_moves_with_updates, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_recent_best_and_chart, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_random_operations_against_a_sorted_array,
                                        setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(test_snapshot_round_trip, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_snapshot_apply_matches_the_table,
                                        setup_store, teardown_store),
        cmocka_unit_test(test_rank_index_random),
        cmocka_unit_test(test_rank_index_random_with_keys),
        cmocka_unit_test_setup_teardown(test_daily_order_and_one_game, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(test_daily_random_and_snapshot, setup_store,
                                        teardown_store),
        cmocka_unit_test(test_days),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
