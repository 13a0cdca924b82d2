/* test_rating.c - the rating update: the contract's check values, bad input, and a few
 * hundred random races against an independent implementation (reference.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rating.h"

#define NEAR 5e-7 /* the contract gives six decimals */

static void expect_skill(rating_skill got, double mu, double sigma) {
    if (fabs(got.mu - mu) > NEAR || fabs(got.sigma - sigma) > NEAR)
        fail_msg("got (%.6f, %.6f), want (%.6f, %.6f)", got.mu, got.sigma, mu, sigma);
}

static void test_two_new_players(void **state) {
    (void)state;
    rating_skill p[2] = {rating_initial(), rating_initial()};
    assert_true(rating_update(p, (int[]){1, 2}, 2));
    expect_skill(p[0], 27.635389, 8.065901);
    expect_skill(p[1], 22.364611, 8.065901);
}

static void test_three_new_players(void **state) {
    (void)state;
    rating_skill p[3] = {rating_initial(), rating_initial(), rating_initial()};
    assert_true(rating_update(p, (int[]){1, 2, 3}, 3));
    expect_skill(p[0], 27.869049, 8.205243);
    expect_skill(p[1], 25.717262, 8.058224);
    expect_skill(p[2], 21.413689, 8.058224);
}

static void test_four_players_with_a_tie(void **state) {
    (void)state;
    rating_skill p[4] = {{30, 5}, {25, 8.333333}, {20, 3}, {27, 2}};
    assert_true(rating_update(p, (int[]){1, 2, 2, 4}, 4));
    expect_skill(p[0], 31.244112, 4.970863);
    expect_skill(p[1], 24.565125, 7.906566);
    expect_skill(p[2], 20.067364, 2.995688);
    expect_skill(p[3], 26.795773, 2.000238);
}

static void test_upset(void **state) {
    (void)state;
    rating_skill p[2] = {{20, 2}, {35, 2}};
    assert_true(rating_update(p, (int[]){1, 2}, 2));
    expect_skill(p[0], 20.556806, 1.999343);
    expect_skill(p[1], 34.443194, 1.999343);
}

/* Players given in any order: the update follows the places, not the array. */
static void test_order_of_players_does_not_matter(void **state) {
    (void)state;
    rating_skill a[3] = {{30, 5}, {22, 7}, {25, 3}};
    rating_skill b[3] = {a[2], a[0], a[1]};
    assert_true(rating_update(a, (int[]){2, 3, 1}, 3));
    assert_true(rating_update(b, (int[]){1, 2, 3}, 3));
    expect_skill(a[2], b[0].mu, b[0].sigma);
    expect_skill(a[0], b[1].mu, b[1].sigma);
    expect_skill(a[1], b[2].mu, b[2].sigma);
}

static void test_full_tie_of_equals_changes_no_mean(void **state) {
    (void)state;
    rating_skill p[3] = {rating_initial(), rating_initial(), rating_initial()};
    assert_true(rating_update(p, (int[]){1, 1, 1}, 3));
    for (int i = 0; i < 3; i++) {
        assert_true(fabs(p[i].mu - RATING_MU0) < 1e-12);
        assert_true(p[i].sigma < RATING_SIGMA0);
    }
}

static void test_bad_input_changes_nothing(void **state) {
    (void)state;
    rating_skill p[9];
    for (int i = 0; i < 9; i++)
        p[i] = rating_initial();
    int places[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_false(rating_update(p, places, 1));
    assert_false(rating_update(p, places, 9));
    assert_false(rating_update(p, (int[]){0, 1}, 2));
    p[1].sigma = 0;
    assert_false(rating_update(p, places, 2));
    p[1].sigma = NAN;
    assert_false(rating_update(p, places, 2));
    p[1] = (rating_skill){INFINITY, 1};
    assert_false(rating_update(p, places, 2));
    assert_true(p[0].mu == RATING_MU0 && p[0].sigma == RATING_SIGMA0);
}

/* Far-apart ratings: no overflow, no NaN. */
static void test_extreme_ratings_stay_finite(void **state) {
    (void)state;
    rating_skill p[2] = {{5000, 1}, {-5000, 1}};
    assert_true(rating_update(p, (int[]){2, 1}, 2));
    for (int i = 0; i < 2; i++)
        assert_true(isfinite(p[i].mu) && isfinite(p[i].sigma) && p[i].sigma > 0);
}

static void test_display(void **state) {
    (void)state;
    assert_int_equal(rating_display(RATING_MU0), 1500);
    assert_int_equal(rating_display(27.635389), 1658);
    assert_int_equal(rating_display(0.5 / 60 * 3), 2); /* 1.5 rounds away from zero */
    assert_int_equal(rating_display(-0.5 / 60 * 3), -2);
    assert_int_equal(rating_display(1e300), INT_MAX);
    assert_int_equal(rating_display(NAN), INT_MIN);
}

static uint64_t rng_state = 0x2048;

static double uniform(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

#define CASES 400

static void test_random_races_match_the_reference(void **state) {
    (void)state;
    const char *dir = getenv("RACE2048_RATING_REFERENCE");
    assert_non_null(dir);
    char cases_path[] = "/tmp/r2048-rating-XXXXXX";
    int fd = mkstemp(cases_path);
    assert_true(fd >= 0);
    FILE *cases = fdopen(fd, "w");
    assert_non_null(cases);

    static rating_skill before[CASES][RATING_MAX_PLAYERS],
        after[CASES][RATING_MAX_PLAYERS];
    static int places[CASES][RATING_MAX_PLAYERS];
    static size_t count[CASES];
    for (int k = 0; k < CASES; k++) {
        count[k] = 2 + (size_t)(uniform() * 7); /* 2..8 */
        fprintf(cases, "%zu", count[k]);
        for (size_t i = 0; i < count[k]; i++) {
            before[k][i].mu = 10 + uniform() * 30;
            before[k][i].sigma = 0.5 + uniform() * 8;
            /* Few distinct places, so ties are common. */
            places[k][i] = 1 + (int)(uniform() * (double)count[k] * 0.7);
            fprintf(cases, " %.17g %.17g %d", before[k][i].mu, before[k][i].sigma,
                    places[k][i]);
            after[k][i] = before[k][i];
        }
        fputc('\n', cases);
        assert_true(rating_update(after[k], places[k], count[k]));
    }
    assert_int_equal(fclose(cases), 0);

    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/reference.py' < '%s'", dir, cases_path);
    FILE *ref = popen(cmd, "r");
    assert_non_null(ref);
    int k = 0;
    char line[4096];
    while (k < CASES && fgets(line, sizeof line, ref)) {
        char *p = line;
        for (size_t i = 0; i < count[k]; i++) {
            double mu = strtod(p, &p), sigma = strtod(p, &p);
            if (fabs(mu - after[k][i].mu) > 1e-9 ||
                fabs(sigma - after[k][i].sigma) > 1e-9)
                fail_msg(
                    "case %d player %zu: module (%.12f, %.12f), reference (%.12f, %.12f)",
                    k, i, after[k][i].mu, after[k][i].sigma, mu, sigma);
        }
        k++;
    }
    assert_int_equal(pclose(ref), 0);
    unlink(cases_path);
    assert_int_equal(k, CASES);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_new_players),
        cmocka_unit_test(test_three_new_players),
        cmocka_unit_test(test_four_players_with_a_tie),
        cmocka_unit_test(test_upset),
        cmocka_unit_test(test_order_of_players_does_not_matter),
        cmocka_unit_test(test_full_tie_of_equals_changes_no_mean),
        cmocka_unit_test(test_bad_input_changes_nothing),
        cmocka_unit_test(test_extreme_ratings_stay_finite),
        cmocka_unit_test(test_display),
        cmocka_unit_test(test_random_races_match_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
