/* test_arena.c - the arena's rules: ranking ties, points, streaks, pairing and its waits,
 * the end, idempotent results, snapshots and replays, a random workload of 1,000. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define T0  INT64_C(1800000000000) /* the arena's start, Unix ms */
#define END (T0 + 3600 * 1000)

static arena *new_arena(int players) {
    const arena_config c = arena_config_default(players, T0, END);
    arena *a = arena_new(&c);
    assert_non_null(a);
    return a;
}

static void join(arena *a, uint64_t id, int64_t now) {
    char name[ARENA_NAME_MAX + 1];
    snprintf(name, sizeof name, "p%llu", (unsigned long long)id);
    assert_int_equal(arena_join(a, id, name, now), ARENA_OK);
    assert_true(arena_check(a));
}

static int64_t points_of(const arena *a, uint64_t id) {
    arena_row row;
    assert_true(arena_row_of(a, id, &row));
    return row.points;
}

/* An arena restored with the given rows (all away), for standings tests. */
typedef struct stats {
    uint64_t id;
    int64_t points;
    int wins, races;
} stats;

static arena *arena_with(const stats *rows, size_t n, int players) {
    arena_snapshot_entrant *e = calloc(n, sizeof *e);
    assert_non_null(e);
    for (size_t i = 0; i < n; i++) {
        e[i] = (arena_snapshot_entrant){.id = rows[i].id,
                                        .points = rows[i].points,
                                        .wins = rows[i].wins,
                                        .races = rows[i].races,
                                        .state = ARENA_AWAY};
        snprintf(e[i].name, sizeof e[i].name, "p%llu", (unsigned long long)rows[i].id);
    }
    const arena_snapshot s = {arena_config_default(players, T0, END), 1, n, e};
    arena *a = arena_restore(&s);
    free(e);
    assert_non_null(a);
    assert_true(arena_check(a));
    return a;
}

/* ---- standings ---- */

static void test_ranking_ties(void **state) {
    (void)state;
    /* Joined in an order unlike the standings. */
    const stats rows[] = {{4, 5, 0, 2}, {2, 8, 1, 3}, {1, 10, 2, 3},
                          {3, 8, 1, 3}, {5, 8, 1, 4}, {6, 8, 0, 3}};
    arena *a = arena_with(rows, 6, 4);
    arena_row top[ARENA_TOP];
    assert_int_equal(arena_standings(a, 0, top, ARENA_TOP), 6);
    /* 10; 8 with a win in 3 races twice (tied); 8, a win, 4 races; 8, no win; 5. */
    const uint64_t ids[] = {1, 2, 3, 5, 6, 4};
    const int ranks[] = {1, 2, 2, 4, 5, 6};
    for (int k = 0; k < 6; k++) {
        assert_int_equal(top[k].id, ids[k]);
        assert_int_equal(top[k].rank, ranks[k]);
        assert_int_equal(arena_rank(a, ids[k]), ranks[k]);
    }
    /* From the middle, a tied row keeps its shared rank. */
    assert_int_equal(arena_standings(a, 2, top, 2), 2);
    assert_int_equal(top[0].id, 3);
    assert_int_equal(top[0].rank, 2);
    assert_int_equal(top[1].rank, 4);
    assert_int_equal(arena_standings(a, 6, top, 2), 0);
    assert_int_equal(arena_rank(a, 99), 0);
    arena_row you;
    assert_false(arena_row_of(a, 99, &you));
    assert_true(arena_row_of(a, 6, &you));
    assert_int_equal(you.rank, 5);
    assert_string_equal(you.name, "p6");
    assert_false(you.waiting);
    arena_free(a);
}

static void test_top_ten_of_many(void **state) {
    (void)state;
    stats rows[150];
    for (int i = 0; i < 150; i++)
        rows[i] = (stats){(uint64_t)i + 1, (i * 7) % 50, 0, 5};
    arena *a = arena_with(rows, 150, 4);
    arena_row all[ARENA_FINAL_ROWS];
    assert_int_equal(arena_standings(a, 0, all, ARENA_FINAL_ROWS), ARENA_FINAL_ROWS);
    for (int k = 1; k < ARENA_FINAL_ROWS; k++) {
        assert_true(all[k - 1].points >= all[k].points);
        assert_int_equal(all[k].rank,
                         all[k - 1].points == all[k].points ? all[k - 1].rank : k + 1);
        assert_int_equal(arena_rank(a, all[k].id), all[k].rank);
    }
    arena_free(a);
}

/* ---- races and points ---- */

/* Forms one race of the n entrants 1..n waiting since T0 (P = n): its number. */
static uint64_t race_of_all(arena *a, int n, int64_t now) {
    const arena_pairing p = arena_pair(a, now);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.groups[0].entrants, n);
    assert_int_equal(p.groups[0].bots, 0);
    assert_true(arena_check(a));
    return p.groups[0].race;
}

static void test_points_of_2_to_8_players(void **state) {
    (void)state;
    for (int n = 2; n <= 8; n++) {
        arena *a = new_arena(n);
        for (int i = 1; i <= n; i++)
            join(a, (uint64_t)i, T0);
        const uint64_t race = race_of_all(a, n, T0);
        arena_place places[ARENA_MAX_PLAYERS];
        for (int i = 0; i < n; i++)
            places[i] = (arena_place){.id = (uint64_t)i + 1, .place = i + 1};
        assert_int_equal(arena_apply_race(a, race, n, places, (size_t)n, T0 + 60000),
                         ARENA_OK);
        assert_true(arena_check(a));
        for (int i = 1; i <= n; i++) {
            assert_int_equal(points_of(a, (uint64_t)i), n - i);
            assert_int_equal(arena_rank(a, (uint64_t)i), i);
        }
        arena_free(a);
    }
}

static void test_points_with_ties_and_leavers(void **state) {
    (void)state;
    arena *a = new_arena(6);
    for (uint64_t i = 1; i <= 6; i++)
        join(a, i, T0);
    const uint64_t race = race_of_all(a, 6, T0);
    /* Two tie first, three tie third, one left. */
    const arena_place places[] = {{1, 1, false}, {2, 1, false}, {3, 3, false},
                                  {4, 3, false}, {5, 3, false}, {6, 2, true}};
    assert_int_equal(arena_apply_race(a, race, 6, places, 6, T0 + 1), ARENA_OK);
    const int64_t want[] = {5, 5, 3, 3, 3, 0};
    for (uint64_t i = 1; i <= 6; i++)
        assert_int_equal(points_of(a, i), want[i - 1]);
    arena_row row;
    assert_true(arena_row_of(a, 2, &row));
    assert_int_equal(row.wins, 1); /* a shared first place is a win */
    assert_int_equal(row.rank, 1);
    assert_true(row.waiting);
    assert_true(arena_row_of(a, 6, &row));
    assert_int_equal(row.races, 1);
    assert_int_equal(row.rank, 6);
    assert_false(row.waiting); /* who left is out of the pool */
    assert_int_equal(arena_pool_count(a), 5);
    arena_free(a);
}

static void test_bots_count_in_players(void **state) {
    (void)state;
    arena *a = new_arena(4);
    join(a, 7, T0);
    const arena_pairing p = arena_pair(a, T0 + ARENA_BOTS_WAIT_MS);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.groups[0].entrants, 1);
    assert_int_equal(p.groups[0].bots, 3);
    /* Second behind a bot of four players: 4 - 2. */
    const arena_place place = {7, 2, false};
    assert_int_equal(arena_apply_race(a, p.groups[0].race, 4, &place, 1, T0 + 60000),
                     ARENA_OK);
    assert_int_equal(points_of(a, 7), 2);
    assert_int_equal(arena_entrant_count(a), 1); /* bots are not entrants */
    arena_free(a);
}

/* One race of entrant 1 alone with bots, placed `place`: its points after. */
static int64_t race_alone(arena *a, int64_t *now, int place) {
    *now += ARENA_BOTS_WAIT_MS;
    const arena_pairing p = arena_pair(a, *now);
    assert_int_equal(p.count, 1);
    const arena_place pl = {1, place, false};
    *now += 60000;
    assert_int_equal(arena_apply_race(a, p.groups[0].race, 4, &pl, 1, *now), ARENA_OK);
    assert_true(arena_check(a));
    return points_of(a, 1);
}

static void test_streaks(void **state) {
    (void)state;
    arena *a = new_arena(4);
    int64_t now = T0;
    join(a, 1, now);
    arena_row row;
    /* Win, win: 3 each; the third and fourth wins count double; a loss ends it. */
    const int places[] = {1, 1, 1, 1, 2, 1, 1, 1};
    const int64_t total[] = {3, 6, 12, 18, 20, 23, 26, 32};
    const int streak[] = {1, 2, 3, 4, 0, 1, 2, 3};
    for (int k = 0; k < 8; k++) {
        assert_int_equal(race_alone(a, &now, places[k]), total[k]);
        assert_true(arena_row_of(a, 1, &row));
        assert_int_equal(row.streak, streak[k]);
    }
    assert_int_equal(row.races, 8);
    assert_int_equal(row.wins, 7);
    arena_free(a);
}

static void test_leaving_ends_a_streak(void **state) {
    (void)state;
    arena *a = new_arena(4);
    int64_t now = T0;
    join(a, 1, now);
    race_alone(a, &now, 1);
    race_alone(a, &now, 1);
    now += ARENA_BOTS_WAIT_MS;
    arena_pairing p = arena_pair(a, now);
    const arena_place left = {1, 1, true};
    assert_int_equal(arena_apply_race(a, p.groups[0].race, 4, &left, 1, now), ARENA_OK);
    arena_row row;
    assert_true(arena_row_of(a, 1, &row));
    assert_int_equal(row.points, 6);
    assert_int_equal(row.streak, 0);
    assert_int_equal(row.wins, 2);
    assert_int_equal(arena_entrant_state(a, 1, NULL), ARENA_AWAY);
    /* Back: the next win is single again. */
    assert_int_equal(arena_wait(a, 1, now), ARENA_OK);
    assert_int_equal(race_alone(a, &now, 1), 9);
    arena_free(a);
}

static void test_idempotent_results(void **state) {
    (void)state;
    arena *a = new_arena(2);
    join(a, 1, T0);
    join(a, 2, T0);
    const uint64_t race = race_of_all(a, 2, T0);
    const arena_place places[] = {{1, 1, false}, {2, 2, false}};
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 1), ARENA_OK);
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 2),
                     ARENA_APPLIED_BEFORE);
    /* Even once they race again, in a new race. */
    const uint64_t next = race_of_all(a, 2, T0 + 3);
    assert_int_not_equal(next, race);
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 4),
                     ARENA_APPLIED_BEFORE);
    assert_int_equal(points_of(a, 1), 1);
    assert_int_equal(points_of(a, 2), 0);
    /* Bad results change nothing. */
    assert_int_equal(arena_apply_race(a, next + 1, 2, places, 2, T0), ARENA_ERR_NO_RACE);
    assert_int_equal(arena_apply_race(a, 0, 2, places, 2, T0), ARENA_ERR_NO_RACE);
    assert_int_equal(arena_apply_race(a, next, 2, places, 1, T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_apply_race(a, next, 1, places, 2, T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_apply_race(a, next, 9, places, 2, T0), ARENA_ERR_INVALID);
    const arena_place twice[] = {{1, 1, false}, {1, 2, false}};
    assert_int_equal(arena_apply_race(a, next, 2, twice, 2, T0), ARENA_ERR_INVALID);
    const arena_place stranger[] = {{1, 1, false}, {3, 2, false}};
    assert_int_equal(arena_apply_race(a, next, 2, stranger, 2, T0), ARENA_ERR_INVALID);
    const arena_place third[] = {{1, 3, false}, {2, 1, false}};
    assert_int_equal(arena_apply_race(a, next, 2, third, 2, T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_entrant_state(a, 1, NULL), ARENA_RACING);
    assert_int_equal(points_of(a, 1), 1);
    assert_true(arena_check(a));
    arena_free(a);
}

static void test_abandoned_race(void **state) {
    (void)state;
    arena *a = new_arena(2);
    join(a, 1, T0);
    join(a, 2, T0);
    const uint64_t race = race_of_all(a, 2, T0);
    assert_int_equal(arena_away(a, 2), ARENA_OK); /* sent away while racing */
    uint64_t in = 0;
    assert_int_equal(arena_entrant_state(a, 2, &in), ARENA_RACING);
    assert_int_equal(in, race);
    const uint64_t ids[] = {2, 1};
    assert_int_equal(arena_abandon_race(a, race, ids, 1, T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_abandon_race(a, race, ids, 2, T0 + 5), ARENA_OK);
    assert_int_equal(arena_entrant_state(a, 1, NULL), ARENA_WAITING);
    assert_int_equal(arena_entrant_state(a, 2, NULL), ARENA_AWAY);
    const arena_place places[] = {{1, 1, false}, {2, 2, false}};
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 6),
                     ARENA_APPLIED_BEFORE);
    assert_int_equal(points_of(a, 1), 0);
    assert_true(arena_check(a));
    arena_free(a);
}

static void test_sent_away_during_a_race(void **state) {
    (void)state;
    arena *a = new_arena(3);
    for (uint64_t i = 1; i <= 3; i++)
        join(a, i, T0);
    const uint64_t race = race_of_all(a, 3, T0);
    assert_int_equal(arena_wait(a, 1, T0), ARENA_ERR_STATE);
    assert_int_equal(arena_away(a, 2), ARENA_OK);
    assert_int_equal(arena_away(a, 3), ARENA_OK);
    join(a, 3, T0 + 1); /* came back before its race ended */
    const arena_place places[] = {{1, 3, false}, {2, 1, false}, {3, 2, false}};
    assert_int_equal(arena_apply_race(a, race, 3, places, 3, T0 + 9), ARENA_OK);
    assert_int_equal(arena_entrant_state(a, 1, NULL), ARENA_WAITING);
    assert_int_equal(arena_entrant_state(a, 2, NULL), ARENA_AWAY);
    assert_int_equal(arena_entrant_state(a, 3, NULL), ARENA_WAITING);
    assert_int_equal(points_of(a, 2), 2); /* away is not a leave: the race counts */
    assert_int_equal(arena_wait(a, 99, T0), ARENA_ERR_NO_ENTRANT);
    assert_int_equal(arena_away(a, 99), ARENA_ERR_NO_ENTRANT);
    assert_true(arena_check(a));
    arena_free(a);
}

static void test_join_bounds(void **state) {
    (void)state;
    arena_config c = arena_config_default(4, T0, END);
    c.max_entrants = 2;
    arena *a = arena_new(&c);
    assert_non_null(a);
    assert_int_equal(arena_join(a, 1, "", T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_join(a, 1, "seventeen-chars-x", T0), ARENA_ERR_INVALID);
    assert_int_equal(arena_join(a, 1, "sixteen-chars-xx", T0), ARENA_OK);
    assert_int_equal(arena_join(a, 2, "b", T0), ARENA_OK);
    assert_int_equal(arena_join(a, 3, "c", T0), ARENA_ERR_FULL);
    assert_int_equal(arena_join(a, 2, "renamed", T0), ARENA_OK); /* known: no seat */
    arena_row row;
    assert_true(arena_row_of(a, 2, &row));
    assert_string_equal(row.name, "renamed");
    assert_int_equal(arena_pool_count(a), 2);
    assert_true(arena_check(a));
    arena_free(a);

    const arena_config bad[] = {
        arena_config_default(1, T0, END), arena_config_default(9, T0, END),
        arena_config_default(4, END, T0), arena_config_default(4, T0, T0),
        arena_config_default(4, -1, END)};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        assert_null(arena_new(&bad[k]));
    assert_string_equal(arena_strerror(ARENA_ERR_FULL),
                        "the arena has as many entrants as it takes");
}

/* ---- pairing ---- */

/* Entrants 1..n with points n..1 (1 leads), waiting since `since`. */
static arena *ranked_pool(int players, int n, int64_t since) {
    stats rows[64];
    for (int i = 0; i < n; i++)
        rows[i] = (stats){(uint64_t)i + 1, n - i, 0, 1};
    arena *a = arena_with(rows, (size_t)n, players);
    /* Joined in reverse, so the pool's order is the standings', not arrival. */
    for (int i = n; i >= 1; i--)
        assert_int_equal(arena_wait(a, (uint64_t)i, since), ARENA_OK);
    return a;
}

static void expect_group(const arena_group *g, uint64_t first_id, int n, int bots) {
    assert_int_equal(g->entrants, n);
    assert_int_equal(g->bots, bots);
    for (int k = 0; k < n; k++)
        assert_int_equal(g->ids[k], first_id + (uint64_t)k);
}

static void test_pairing_2_to_8(void **state) {
    (void)state;
    for (int players = 2; players <= 8; players++) {
        for (int n = 2; n <= 8; n++) {
            arena *a = ranked_pool(players, n, T0);
            /* At once: the full races, from the top. */
            arena_pairing p = arena_pair(a, T0);
            const int full = n / players, rest = n % players;
            assert_int_equal(p.count, (size_t)full);
            for (int g = 0; g < full; g++)
                expect_group(&p.groups[g], (uint64_t)(g * players) + 1, players, 0);
            assert_int_equal(arena_pool_count(a), (size_t)rest);
            assert_true(arena_check(a));
            if (rest == 0) {
                assert_int_equal(p.next_ms, ARENA_NEVER);
            } else {
                const uint64_t bottom = (uint64_t)(full * players) + 1;
                const int64_t wait = rest >= 2 ? ARENA_PAIR_WAIT_MS : ARENA_BOTS_WAIT_MS;
                assert_int_equal(p.next_ms, T0 + wait);
                p = arena_pair(a, T0 + wait - 1);
                assert_int_equal(p.count, 0);
                p = arena_pair(a, T0 + wait);
                assert_int_equal(p.count, 1);
                expect_group(&p.groups[0], bottom, rest, rest == 1 ? players - 1 : 0);
                assert_int_equal(arena_pool_count(a), 0);
            }
            /* Every race has its own number. */
            assert_true(arena_check(a));
            arena_free(a);
        }
    }
}

static void test_five_seconds_counts_the_second_waiter(void **state) {
    (void)state;
    arena *a = new_arena(4);
    join(a, 1, T0);
    join(a, 2, T0 + 3000);
    arena_pairing p = arena_pair(a, T0 + 3000);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next_ms, T0 + 3000 + ARENA_PAIR_WAIT_MS);
    join(a, 3, T0 + 4000); /* does not delay it */
    p = arena_pair(a, T0 + 4000);
    assert_int_equal(p.next_ms, T0 + 3000 + ARENA_PAIR_WAIT_MS);
    p = arena_pair(a, T0 + 3000 + ARENA_PAIR_WAIT_MS);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.groups[0].entrants, 3); /* with whoever else waits */
    assert_int_equal(p.groups[0].bots, 0);
    arena_free(a);
}

static void test_lone_entrant_gets_bots(void **state) {
    (void)state;
    arena *a = new_arena(8);
    join(a, 1, T0 + 100);
    arena_pairing p = arena_pair(a, T0 + 100);
    assert_int_equal(p.next_ms, T0 + 100 + ARENA_BOTS_WAIT_MS);
    p = arena_pair(a, T0 + 99 + ARENA_BOTS_WAIT_MS);
    assert_int_equal(p.count, 0);
    p = arena_pair(a, T0 + 100 + ARENA_BOTS_WAIT_MS);
    assert_int_equal(p.count, 1);
    expect_group(&p.groups[0], 1, 1, 7);
    assert_int_equal(p.next_ms, ARENA_NEVER);
    arena_free(a);
}

static void test_shorter_waits(void **state) {
    (void)state;
    arena_config c = arena_config_default(4, T0, END);
    c.pair_wait_ms = 50;
    c.bots_wait_ms = 150;
    arena *a = arena_new(&c);
    join(a, 1, T0);
    assert_int_equal(arena_pair(a, T0).next_ms, T0 + 150);
    join(a, 2, T0 + 10);
    assert_int_equal(arena_pair(a, T0 + 10).next_ms, T0 + 60);
    assert_int_equal(arena_pair(a, T0 + 60).count, 1);
    arena_free(a);
}

static void test_waits_count_from_the_start(void **state) {
    (void)state;
    arena *a = new_arena(4);
    join(a, 1, T0 - 600000); /* joined ten minutes early */
    join(a, 2, T0 - 600000);
    arena_pairing p = arena_pair(a, T0 - 1);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next_ms, T0);
    p = arena_pair(a, T0);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next_ms, T0 + ARENA_PAIR_WAIT_MS);
    for (uint64_t i = 3; i <= 4; i++)
        join(a, i, T0 - 1);
    p = arena_pair(a, T0);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.groups[0].entrants, 4);
    arena_free(a);
}

static void test_seconds_left(void **state) {
    (void)state;
    arena *a = new_arena(2);
    assert_int_equal(arena_seconds_left(a, T0), 3600);
    assert_int_equal(arena_seconds_left(a, END - 1999), 1); /* rounded down */
    assert_int_equal(arena_seconds_left(a, END - 1), 0);
    assert_int_equal(arena_seconds_left(a, END), 0);
    assert_int_equal(arena_seconds_left(a, END + 5000), 0);
    assert_int_equal(arena_seconds_left(a, INT64_MIN), INT32_MAX);
    arena_free(a);
}

static void test_racing_count(void **state) {
    (void)state;
    arena *a = new_arena(2);
    for (uint64_t i = 1; i <= 5; i++)
        join(a, i, T0);
    const arena_pairing p = arena_pair(a, T0);
    assert_int_equal(p.count, 2);
    assert_int_equal(arena_racing_count(a), 4);
    const uint64_t race = p.groups[1].race;
    const arena_place places[] = {{p.groups[1].ids[0], 1, false},
                                  {p.groups[1].ids[1], 1, false}};
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 1), ARENA_OK);
    assert_int_equal(arena_racing_count(a), 2);
    assert_int_equal(arena_apply_race(a, race, 2, places, 2, T0 + 1),
                     ARENA_APPLIED_BEFORE);
    assert_int_equal(arena_racing_count(a), 2);
    assert_true(arena_check(a));
    arena_free(a);
}

static void test_revision(void **state) {
    (void)state;
    arena *a = new_arena(2);
    uint64_t seen = arena_revision(a);
#define CHANGED(call, want)                                                              \
    do {                                                                                 \
        (void)(call);                                                                    \
        assert_int_equal(arena_revision(a) != seen, want);                               \
        seen = arena_revision(a);                                                        \
    } while (0)
    CHANGED(arena_join(a, 1, "one", T0), true);
    CHANGED(arena_join(a, 1, "one", T0), false); /* nothing new */
    CHANGED(arena_join(a, 1, "uno", T0), true);  /* renamed */
    CHANGED(arena_wait(a, 1, T0), false);        /* waiting already */
    CHANGED(arena_pair(a, T0), false);           /* nobody to race */
    CHANGED(arena_away(a, 1), true);
    CHANGED(arena_away(a, 1), false);
    CHANGED(arena_wait(a, 1, T0), true);
    CHANGED(arena_join(a, 2, "two", T0), true);
    CHANGED(arena_join(a, 3, "", T0), false); /* refused */
    CHANGED(arena_pair(a, T0), true);         /* 1 and 2 race */
    const arena_place places[] = {{1, 1, false}, {2, 2, false}};
    CHANGED(arena_apply_race(a, 1, 2, places, 2, T0), true);
    CHANGED(arena_apply_race(a, 1, 2, places, 2, T0), false);
#undef CHANGED
    arena_free(a);
}

static void test_nothing_after_the_end(void **state) {
    (void)state;
    arena *a = new_arena(2);
    join(a, 1, END - 10000);
    /* Its 15 s would come after the end: no timer. */
    assert_int_equal(arena_pair(a, END - 10000).next_ms, ARENA_NEVER);
    join(a, 2, END - 1000);
    assert_int_equal(arena_pair(a, END).count, 0); /* two of P = 2, but at the end */
    assert_int_equal(arena_pair(a, END + 60000).count, 0);
    assert_int_equal(arena_pool_count(a), 2);
    /* Just before the end they race. */
    const arena_pairing p = arena_pair(a, END - 1);
    assert_int_equal(p.count, 1);
    arena_free(a);
}

/* ---- snapshot ---- */

static void expect_same(const arena *x, const arena *y) {
    assert_int_equal(arena_entrant_count(x), arena_entrant_count(y));
    assert_int_equal(arena_pool_count(x), arena_pool_count(y));
    const size_t n = arena_entrant_count(x);
    arena_row *rx = calloc(n, sizeof *rx), *ry = calloc(n, sizeof *ry);
    assert_int_equal(arena_standings(x, 0, rx, n), n);
    assert_int_equal(arena_standings(y, 0, ry, n), n);
    for (size_t k = 0; k < n; k++) {
        assert_memory_equal(&rx[k], &ry[k], sizeof rx[k]);
        uint64_t race_x = 9, race_y = 7;
        assert_int_equal(arena_entrant_state(x, rx[k].id, &race_x),
                         arena_entrant_state(y, rx[k].id, &race_y));
        assert_int_equal(race_x, race_y);
    }
    free(rx);
    free(ry);
}

static void test_snapshot_round_trip(void **state) {
    (void)state;
    arena *a = new_arena(3);
    for (uint64_t i = 1; i <= 7; i++)
        join(a, i, T0);
    arena_pairing p = arena_pair(a, T0); /* 1-3, 4-6 race; 7 waits */
    assert_int_equal(p.count, 2);
    const uint64_t race1 = p.groups[0].race, race2 = p.groups[1].race;
    const arena_place r1[] = {{1, 2, false}, {2, 1, false}, {3, 3, true}};
    assert_int_equal(arena_apply_race(a, race1, 3, r1, 3, T0 + 1000), ARENA_OK);
    assert_int_equal(arena_away(a, 5), ARENA_OK); /* racing, sent away */
    assert_int_equal(arena_away(a, 1), ARENA_OK); /* waiting, goes away */

    arena_snapshot *s = arena_snapshot_new(a);
    assert_non_null(s);
    arena *b = arena_restore(s);
    assert_non_null(b);
    assert_true(arena_check(b));
    expect_same(a, b);
    /* The race that counted counts once; the running one counts on both. */
    assert_int_equal(arena_apply_race(b, race1, 3, r1, 3, T0 + 2000),
                     ARENA_APPLIED_BEFORE);
    const arena_place r2[] = {{4, 1, false}, {5, 2, false}, {6, 3, false}};
    assert_int_equal(arena_apply_race(a, race2, 3, r2, 3, T0 + 3000), ARENA_OK);
    assert_int_equal(arena_apply_race(b, race2, 3, r2, 3, T0 + 3000), ARENA_OK);
    expect_same(a, b);
    assert_int_equal(arena_entrant_state(b, 5, NULL), ARENA_AWAY);
    /* New races are numbered alike. */
    p = arena_pair(a, T0 + 3000);
    const arena_pairing q = arena_pair(b, T0 + 3000);
    assert_int_equal(p.count, q.count);
    assert_int_equal(p.count, 1);
    assert_memory_equal(&p.groups[0], &q.groups[0], sizeof p.groups[0]);

    /* An inconsistent snapshot restores nothing. */
    s->entrants[1].id = s->entrants[0].id;
    assert_null(arena_restore(s));
    s->entrants[1].id = 2;
    const int wins = s->entrants[1].wins;
    s->entrants[1].wins = s->entrants[1].races + 1;
    assert_null(arena_restore(s));
    s->entrants[1].wins = wins;
    s->entrants[4].race = s->next_race;
    assert_null(arena_restore(s));
    /* A race with one of its three entrants missing. */
    s->entrants[4].race = race2;
    assert_int_equal(s->entrants[3].state, ARENA_RACING);
    s->entrants[3].state = ARENA_AWAY;
    assert_null(arena_restore(s));
    s->entrants[3].state = ARENA_RACING;
    arena *c = arena_restore(s);
    assert_non_null(c);
    assert_int_equal(arena_racing_count(c), 3);
    arena_free(c);
    arena_snapshot_free(s);
    arena_free(a);
    arena_free(b);
}

/* A journal of joins, races formed and results, replayed on a fresh arena,
 * gives the same arena; a replayed race formed twice counts once. */
static void test_replay_races_formed(void **state) {
    (void)state;
    arena *a = new_arena(3);
    arena *b = new_arena(3);
    for (uint64_t i = 1; i <= 5; i++) {
        join(a, i, T0);
        join(b, i, T0);
    }
    const arena_pairing p = arena_pair(a, T0 + ARENA_PAIR_WAIT_MS);
    assert_int_equal(p.count, 2); /* 1-3, then 4-5 after 5 s */
    for (size_t g = 0; g < p.count; g++) {
        const arena_group *gr = &p.groups[g];
        assert_int_equal(arena_form_race(b, gr->race, gr->ids, (size_t)gr->entrants),
                         ARENA_OK);
        assert_int_equal(arena_form_race(b, gr->race, gr->ids, (size_t)gr->entrants),
                         ARENA_APPLIED_BEFORE);
        assert_true(arena_check(b));
    }
    const arena_place r[] = {{4, 2, false}, {5, 1, false}};
    assert_int_equal(arena_apply_race(a, p.groups[1].race, 2, r, 2, T0 + 9000), ARENA_OK);
    assert_int_equal(arena_apply_race(b, p.groups[1].race, 2, r, 2, T0 + 9000), ARENA_OK);
    expect_same(a, b);
    /* The next race gets the same number on both. */
    assert_int_equal(arena_pair(a, T0 + 9000 + ARENA_PAIR_WAIT_MS).groups[0].race,
                     arena_pair(b, T0 + 9000 + ARENA_PAIR_WAIT_MS).groups[0].race);
    expect_same(a, b);
    /* Bad replays change nothing. */
    const uint64_t racing[] = {1, 2};
    assert_int_equal(arena_form_race(b, 99, racing, 2), ARENA_ERR_INVALID);
    const uint64_t unknown[] = {42};
    assert_int_equal(arena_form_race(b, 99, unknown, 1), ARENA_ERR_NO_ENTRANT);
    assert_int_equal(arena_form_race(b, 99, unknown, 0), ARENA_ERR_INVALID);
    assert_int_equal(arena_form_race(b, 0, unknown, 1), ARENA_ERR_INVALID);
    assert_true(arena_check(b));
    arena_free(a);
    arena_free(b);
}

/* ---- a random workload ---- */

#define MANY 1000

/* xorshift64*: the same workload with every libc. */
static uint64_t rng = 2048;
static int rnd(int below) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (int)((rng * UINT64_C(2685821657736338717)) >> 33) % below;
}

typedef struct model {
    int64_t points[MANY + 1]; /* what the test awarded, by id */
    uint64_t races[MANY + 1]; /* the race each id is in, 0 for none */
} model;

/* The standings listed whole: sorted, ranks by the rule, agreeing with the model. */
static void check_standings(const arena *a, const model *m, arena_row *rows) {
    assert_true(arena_check(a));
    const size_t n = arena_entrant_count(a);
    assert_int_equal(arena_standings(a, 0, rows, n), n);
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(rows[k].points, m->points[rows[k].id]);
        if (k == 0) {
            assert_int_equal(rows[k].rank, 1);
            continue;
        }
        const arena_row *p = &rows[k - 1], *r = &rows[k];
        const bool tied =
            p->points == r->points && p->wins == r->wins && p->races == r->races;
        assert_true(
            p->points > r->points ||
            (p->points == r->points &&
             (p->wins > r->wins || (p->wins == r->wins && p->races <= r->races))));
        assert_int_equal(r->rank, tied ? p->rank : (int)k + 1);
    }
}

static void test_thousand_entrants_random(void **state) {
    (void)state;
    arena_config c = arena_config_default(4, T0, END);
    /* Shorter waits (as the server's tests have them), so that every rule
     * comes up often among 200 ms steps. */
    c.pair_wait_ms = 1000;
    c.bots_wait_ms = 3000;
    arena *a = arena_new(&c);
    /* The same operations as a journal would replay them: races formed by
     * arena_form_race, never by pairing. */
    arena *j = arena_new(&c);
    model *m = calloc(1, sizeof *m);
    arena_row *rows = calloc(MANY, sizeof *rows);
    uint64_t running[MANY];
    size_t n_running = 0;
    int64_t now = T0 - 1000;
    uint64_t next_new = 1;
    int formed[3] = {0}; /* races of P, of fewer (the 5 s rule), with bots */
    for (int op = 0; op < 8000; op++) {
        now += rnd(400);
        uint64_t id = (uint64_t)(rnd(MANY)) + 1;
        /* Two operations in three of the first 1,500 are joins: all 1,000 enter
         * while the others pair and race. */
        switch (op < 1500 && op % 3 ? 0 : rnd(6)) {
        case 0:
        case 1: {
            if (next_new <= MANY) id = next_new++;
            char name[8];
            snprintf(name, sizeof name, "e%d", (int)id);
            assert_int_equal(arena_join(a, id, name, now), ARENA_OK);
            assert_int_equal(arena_join(j, id, name, now), ARENA_OK);
            break;
        }
        case 2: {
            const int err = arena_away(a, id);
            assert_true(err == ARENA_OK || err == ARENA_ERR_NO_ENTRANT);
            assert_int_equal(arena_away(j, id), err);
            break;
        }
        case 3: {
            const arena_pairing p = arena_pair(a, now);
            assert_true(p.next_ms == ARENA_NEVER || p.next_ms > now);
            for (size_t g = 0; g < p.count; g++) {
                const arena_group *gr = &p.groups[g];
                assert_int_equal(gr->entrants + gr->bots == c.players ||
                                     (gr->bots == 0 && gr->entrants >= 2),
                                 1);
                for (int k = 0; k < gr->entrants; k++) {
                    assert_int_equal(m->races[gr->ids[k]], 0);
                    m->races[gr->ids[k]] = gr->race;
                    /* Adjacent standing: in order. */
                    if (k > 0)
                        assert_true(arena_rank(a, gr->ids[k - 1]) <=
                                    arena_rank(a, gr->ids[k]));
                }
                assert_int_equal(
                    arena_form_race(j, gr->race, gr->ids, (size_t)gr->entrants),
                    ARENA_OK);
                running[n_running++] = gr->race;
                formed[gr->bots ? 2 : gr->entrants == c.players ? 0 : 1]++;
            }
            break;
        }
        default: {
            if (n_running == 0) break;
            const size_t r = (size_t)rnd((int)n_running);
            const uint64_t race = running[r];
            running[r] = running[--n_running];
            arena_place places[ARENA_MAX_PLAYERS];
            size_t n = 0;
            /* The test's model knows who races in it (a scan: it is a test). */
            for (uint64_t e = 1; e <= MANY; e++)
                if (m->races[e] == race) places[n++] = (arena_place){.id = e};
            const int players = n == 1 ? c.players : (int)n;
            for (size_t k = 0; k < n; k++) {
                places[k].place = rnd(players) + 1;
                places[k].left = rnd(10) == 0;
            }
            if (rnd(10) == 0) { /* its room could not be made */
                uint64_t ids[ARENA_MAX_PLAYERS];
                for (size_t k = 0; k < n; k++) {
                    ids[k] = places[k].id;
                    m->races[ids[k]] = 0;
                }
                assert_int_equal(arena_abandon_race(a, race, ids, n, now), ARENA_OK);
                assert_int_equal(arena_abandon_race(j, race, ids, n, now), ARENA_OK);
                assert_int_equal(arena_apply_race(a, race, players, places, n, now),
                                 ARENA_APPLIED_BEFORE);
                break;
            }
            /* Twice: the second counts nothing. */
            assert_int_equal(arena_apply_race(a, race, players, places, n, now),
                             ARENA_OK);
            assert_int_equal(arena_apply_race(j, race, players, places, n, now),
                             ARENA_OK);
            assert_int_equal(arena_apply_race(a, race, players, places, n, now),
                             ARENA_APPLIED_BEFORE);
            for (size_t k = 0; k < n; k++) {
                m->races[places[k].id] = 0;
                arena_row row;
                assert_true(arena_row_of(a, places[k].id, &row));
                const int64_t won = places[k].left ? 0 : players - places[k].place;
                const int64_t got = row.points - m->points[places[k].id];
                assert_true(got == won ||
                            (places[k].place == 1 && got == 2 * won && row.streak >= 3));
                m->points[places[k].id] = row.points;
            }
            break;
        }
        }
        check_standings(a, m, rows);
        if (op % 20 == 0) {
            assert_true(arena_check(j));
            expect_same(a, j);
        }
        if (op % 1000 == 999) { /* a restart now and then */
            arena_snapshot *s = arena_snapshot_new(a);
            arena *b = arena_restore(s);
            assert_non_null(b);
            expect_same(a, b);
            arena_snapshot_free(s);
            arena_free(a);
            a = b;
        }
    }
    assert_int_equal(arena_entrant_count(a), MANY);
    /* The workload reached every rule. */
    for (int k = 0; k < 3; k++)
        if (formed[k] < 10)
            fail_msg("races formed: %d of P, %d fewer, %d with bots", formed[0],
                     formed[1], formed[2]);
    expect_same(a, j);
    free(rows);
    free(m);
    arena_free(a);
    arena_free(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking_ties),
        cmocka_unit_test(test_top_ten_of_many),
        cmocka_unit_test(test_points_of_2_to_8_players),
        cmocka_unit_test(test_points_with_ties_and_leavers),
        cmocka_unit_test(test_bots_count_in_players),
        cmocka_unit_test(test_streaks),
        cmocka_unit_test(test_leaving_ends_a_streak),
        cmocka_unit_test(test_idempotent_results),
        cmocka_unit_test(test_abandoned_race),
        cmocka_unit_test(test_sent_away_during_a_race),
        cmocka_unit_test(test_join_bounds),
        cmocka_unit_test(test_pairing_2_to_8),
        cmocka_unit_test(test_five_seconds_counts_the_second_waiter),
        cmocka_unit_test(test_lone_entrant_gets_bots),
        cmocka_unit_test(test_shorter_waits),
        cmocka_unit_test(test_waits_count_from_the_start),
        cmocka_unit_test(test_seconds_left),
        cmocka_unit_test(test_racing_count),
        cmocka_unit_test(test_revision),
        cmocka_unit_test(test_nothing_after_the_end),
        cmocka_unit_test(test_snapshot_round_trip),
        cmocka_unit_test(test_replay_races_formed),
        cmocka_unit_test(test_thousand_entrants_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
