/* test_journal_accounts_unit.c - the journal's account record and the accounts rebuilt
 * from records: every field read back, ratings set (not added) in file order, games of
 * unknown accounts skipped, bad records skipped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal_accounts.h"

static acct_account *make(acct_store *s, const char *name, uint8_t seed) {
    uint8_t key[ACCT_KEY_BYTES], salt[ACCT_SALT_BYTES];
    for (int i = 0; i < ACCT_KEY_BYTES; i++) {
        key[i] = (uint8_t)(seed * 31 + i);
        salt[i] = (uint8_t)(seed * 17 + 3 * i);
    }
    acct_account *a = NULL;
    assert_int_equal(acct_register(s, name, key, salt, &a), ACCT_OK);
    return a;
}

static void same_account(const acct_account *a, const acct_account *b) {
    acct_snapshot x, y;
    acct_snapshot_of(a, &x);
    acct_snapshot_of(b, &y);
    assert_string_equal(x.name, y.name);
    assert_memory_equal(x.salt, y.salt, sizeof x.salt);
    assert_memory_equal(x.key_hash, y.key_hash, sizeof x.key_hash);
    assert_true(x.mu == y.mu && x.sigma == y.sigma); /* exactly: 17 digits */
    assert_int_equal(x.games, y.games);
    assert_int_equal(x.wins, y.wins);
    assert_memory_equal(x.best, y.best, sizeof x.best);
    assert_int_equal(x.n_recent, y.n_recent);
    assert_memory_equal(x.recent, y.recent, x.n_recent * sizeof x.recent[0]);
    assert_int_equal(x.n_chart, y.n_chart);
    assert_memory_equal(x.chart, y.chart, x.n_chart * sizeof x.chart[0]);
}

/* Accounts with every ring full and awkward skills survive their records. */
static void test_record_round_trip(void **state) {
    (void)state;
    acct_store s, back;
    assert_int_equal(acct_init(&s, 1), ACCT_OK);
    assert_int_equal(acct_init(&back, 2), ACCT_OK);
    char *all = NULL;
    size_t all_len = 0;
    for (int n = 0; n < 30; n++) {
        char name[17];
        snprintf(name, sizeof name, "User_%d-x", n);
        acct_account *a = make(&s, name, (uint8_t)n);
        for (int k = 0; k < n; k++) {
            rating_skill sk = {.mu = 25.0 + k / 3.0 - n / 7.0, .sigma = 8.0 / (k + 1.5)};
            assert_int_equal(acct_apply_rating(&s, a, sk, k % 3 == 0), ACCT_OK);
            acct_record_game(a, (uint64_t)n * 1000 + (uint64_t)k, 3 + k % 6,
                             (uint32_t)(k * 97), 1u << (k % 11), k % 2 == 0);
        }
        size_t len;
        char *line = jacct_record(a, &len);
        assert_non_null(line);
        assert_int_equal(line[len - 1], '\n');
        assert_null(memchr(line, '\n', len - 1));
        all = realloc(all, all_len + len);
        memcpy(all + all_len, line, len);
        all_len += len;
        free(line);
    }
    assert_int_equal(jacct_replay(&back, all, all_len), 30);
    assert_int_equal(acct_count(&back), 30);
    for (size_t i = 0; i < 30; i++)
        same_account(acct_at(&s, i), acct_find(&back, acct_at(&s, i)->name));
    assert_true(acct_check(&back));
    /* Read twice, an account record replaces: nothing counts twice. */
    assert_int_equal(jacct_replay(&back, all, all_len), 30);
    assert_int_equal(acct_count(&back), 30);
    for (size_t i = 0; i < 30; i++)
        same_account(acct_at(&s, i), acct_find(&back, acct_at(&s, i)->name));
    free(all);
    acct_free(&s);
    acct_free(&back);
}

static const char game_line[] =
    "{\"j\":\"game\",\"game\":7,\"room\":\"AB12\",\"reason\":\"forfeit\",\"winner\":3,"
    "\"results\":[{\"id\":3,\"name\":\"Bob\",\"board\":[[0,0,0,0],[0,0,0,2],[0,0,0,0],"
    "[0,0,0,2]],\"score\":0,\"moves\":0,\"max_tile\":2,\"status\":\"playing\"},{\"id\":2,"
    "\"name\":\"Alice\",\"board\":[[0,0,0,0],[0,0,0,2],[0,0,0,0],[0,0,0,2]],\"score\":0,"
    "\"moves\":0,\"max_tile\":2,\"status\":\"left\"}],\"seed\":"
    "\"0c57f77e6a8ad8a74ce4ff4aa"
    "40af9a55a3450b4a9126da45e88f74b8f70cbcc\",\"salt\":"
    "\"1f9de1387591b3453930df01690cf9cf"
    "\",\"commit\":\"c1c043ed7a049dd239e9a51f6d73d3128583d57883c961dd8a823ee90595d2ee\","
    "\"size\":4,\"target\":2048,\"time_limit\":0,\"started\":1,\"ended\":2,\"accounts\":{"
    "\"3\":\"Bob\",\"2\":\"Alice\"},\"ratings\":[{\"id\":3,\"place\":1,\"before\":[25,"
    "8.3333333333333339],\"after\":[27.635389493140497,8.0659014135436795]},{\"id\":2,"
    "\"place\":2,\"before\":[25,8.3333333333333339],\"after\":[22.364610506859503,"
    "8.0659014135436795]}],\"moves\":{\"2\":\"\",\"3\":\"\"}}\n";

/* A finished game sets its accounts' skills (absolute), counts the race and the
 * win, lists the game; an account not (yet) in the store is skipped, and so
 * is a game this journal did not start; a bad record changes nothing. */
static void test_games_applied_in_order(void **state) {
    (void)state;
    static const char start_line[] =
        "{\"j\":\"start\",\"game\":7,\"room\":\"AB12\",\"size\":4,\"seats\":[{\"id\":2,"
        "\"name\":\"Alice\",\"token\":\"\",\"account\":\"Alice\"},{\"id\":3,\"name\":"
        "\"Bob\",\"token\":\"\",\"account\":\"Bob\"}]}\n";
    char both[sizeof start_line + sizeof game_line];
    snprintf(both, sizeof both, "%s%s", start_line, game_line);
    size_t both_len = strlen(both);
    acct_store s;
    assert_int_equal(acct_init(&s, 3), ACCT_OK);
    /* Before the accounts: skipped (a compacted journal's kept games). */
    assert_int_equal(jacct_replay(&s, both, both_len), 1);
    assert_int_equal(acct_count(&s), 0);
    acct_account *alice = make(&s, "Alice", 1), *bob = make(&s, "Bob", 2);
    /* Without its start record in the journal (another node's finished game,
     * taken over): not this server's accounts, whatever the names. */
    assert_int_equal(jacct_replay(&s, game_line, sizeof game_line - 1), 0);
    assert_int_equal(bob->games, 0);
    assert_int_equal(jacct_replay(&s, both, both_len), 1);
    assert_true(bob->mu == 27.635389493140497 && bob->sigma == 8.0659014135436795);
    assert_true(alice->mu == 22.364610506859503);
    assert_int_equal(bob->games, 1);
    assert_int_equal(bob->wins, 1);
    assert_int_equal(alice->wins, 0);
    uint64_t recent[ACCT_RECENT];
    assert_int_equal(acct_recent(alice, recent), 1);
    assert_int_equal(recent[0], 7);
    /* Garbage, a torn account record, a game without accounts: nothing. */
    static const char junk[] = "{\"j\":\"account\",\"name\":\"Eve\"}\n"
                               "{\"j\":\"account\",\"name\":\"Bad\",\"salt\":\"00\"}\n"
                               "not json\n"
                               "{\"j\":\"game\",\"game\":9}\n";
    assert_int_equal(jacct_replay(&s, junk, sizeof junk - 1), 0);
    assert_int_equal(acct_count(&s), 2);
    assert_int_equal(bob->games, 1);

    /* A compaction copies the accounts over a few loop turns: an account's
     * record may already hold a game whose record follows it. Replayed, that
     * game changes it once, not twice. */
    size_t alen, blen;
    char *arec = jacct_record(alice, &alen), *brec = jacct_record(bob, &blen);
    assert_non_null(arec);
    assert_non_null(brec);
    size_t cap = alen + blen + both_len + 1;
    char *compacted = malloc(cap);
    assert_non_null(compacted);
    snprintf(compacted, cap, "%s%s%s", arec, brec, both);
    acct_store again;
    assert_int_equal(acct_init(&again, 4), ACCT_OK);
    (void)jacct_replay(&again, compacted, strlen(compacted));
    const acct_account *bob2 = acct_find(&again, "Bob"),
                       *alice2 = acct_find(&again, "Alice");
    assert_non_null(bob2);
    assert_non_null(alice2);
    assert_int_equal(bob2->games, 1);
    assert_int_equal(bob2->wins, 1);
    assert_int_equal(alice2->games, 1);
    assert_true(bob2->mu == bob->mu && alice2->mu == alice->mu);
    assert_int_equal(acct_recent(alice2, recent), 1);
    free(arec);
    free(brec);
    free(compacted);
    acct_free(&again);
    acct_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_games_applied_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
