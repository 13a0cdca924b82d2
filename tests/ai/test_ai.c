/* test_ai.c - the AI: forced and clearly better moves, cache and pruning against the
 * plain search, determinism, every board size. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ai.h"

static ai_model *model;
static ai_cache cache;

static int setup(void **state) {
    (void)state;
    model = malloc(sizeof *model);
    cache.size = 1u << 16;
    cache.entries = calloc(cache.size, sizeof *cache.entries);
    if (!model || !cache.entries) return -1;
    ai_model_init(model);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(model);
    free(cache.entries);
    return 0;
}

/* A board from 16 exponents, row by row. */
static eng_bits board_of(const int e[16]) {
    eng_bits b = 0;
    for (int i = 0; i < 16; i++)
        b |= (eng_bits)e[i] << (4 * i);
    return b;
}

/* Only one move changes this board: the search must find it, and every other
 * move is reported as changing nothing (-1). */
static void test_forced_move(void **state) {
    (void)state;
    /* Full rows with no equal neighbours across or along, but the empty
     * cell at the bottom right: only right (the bottom row) or down (the
     * right column) move it. Fill the bottom row's end so only down works. */
    static const int e[16] = {1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 0};
    eng_bits b = board_of(e);
    ai_cache_clear(&cache);
    ai_result r = ai_search(model, &cache, b, (ai_budget){2, 0, 0, 0});
    int legal = 0;
    for (int d = 0; d < 4; d++)
        if (eng_bits_move(b, (eng_dir)d, &model->moves) != b) legal++;
    assert_true(legal >= 1 && legal <= 2);
    assert_true(r.best >= 0);
    assert_int_not_equal(eng_bits_move(b, (eng_dir)r.best, &model->moves), b);
    for (int d = 0; d < 4; d++)
        if (eng_bits_move(b, (eng_dir)d, &model->moves) == b) assert_true(r.value[d] < 0);
}

/* A board with no move at all: no best move. */
static void test_no_move(void **state) {
    (void)state;
    static const int e[16] = {1, 2, 1, 2, 2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1};
    ai_result r = ai_search(model, &cache, board_of(e), ai_budget_default());
    assert_int_equal(r.best, -1);
}

/* Two 1024s side by side in the top row, the rest sparse: merging them
 * (left or right) is clearly better than moving up or down, which keeps
 * them apart and the board as it is. */
static void test_merge_the_big_pair(void **state) {
    (void)state;
    static const int e[16] = {10, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0};
    ai_cache_clear(&cache);
    ai_result r = ai_search(model, &cache, board_of(e), (ai_budget){2, 1e-4, 0, 0});
    assert_true(r.best == ENG_LEFT || r.best == ENG_RIGHT);
}

/* A tempting line of positions: moves of a game played by the AI itself. */
static int positions(eng_bits *out, int max) {
    eng_game g;
    eng_seed seed = eng_seed_client(99);
    eng_game_new(&g, 4, &seed);
    int n = 0;
    while (n < max) {
        eng_bits b;
        if (!eng_bits_pack(&g.board, &b)) break;
        ai_cache_clear(&cache);
        ai_result r = ai_search(model, &cache, b, (ai_budget){1, 0, 0, 0});
        if (r.best < 0) break;
        out[n++] = b;
        eng_game_move(&g, (eng_dir)r.best, &model->moves);
    }
    return n;
}

/* The cache changes no value: with and without it, every move's value is
 * the same (depth 2, no cut-off), so the choice is too. */
static void test_cache_changes_nothing(void **state) {
    (void)state;
    static eng_bits pos[300];
    int n = positions(pos, 300);
    assert_true(n >= 100);
    for (int i = 0; i < n; i++) {
        ai_cache_clear(&cache);
        ai_result with = ai_search(model, &cache, pos[i], (ai_budget){2, 0, 0, 0});
        ai_result without = ai_search(model, NULL, pos[i], (ai_budget){2, 0, 0, 0});
        assert_int_equal(with.best, without.best);
        for (int d = 0; d < 4; d++)
            assert_true(with.value[d] == without.value[d]);
        assert_true(with.nodes <= without.nodes);
    }
}

/* Pruning by probability chooses as the plain search does on nearly every
 * position at depth 3 (with a cut-off of 1e-3, two 4s in a row fall under
 * it; such a branch can tip a close call), and looks at fewer positions. */
static void test_pruning_keeps_the_choice(void **state) {
    (void)state;
    static eng_bits pos[300];
    int n = positions(pos, 300), same = 0, tried = 0;
    uint64_t pruned = 0, plain = 0;
    /* Every 4th position past the opening (a full-width search of an open
     * board is the slow part, not the point). */
    for (int i = 100; i < n; i += 4, tried++) {
        ai_result a = ai_search(model, NULL, pos[i], (ai_budget){3, 1e-3, 0, 0});
        ai_result b = ai_search(model, NULL, pos[i], (ai_budget){3, 0, 0, 0});
        same += a.best == b.best;
        pruned += a.nodes;
        plain += b.nodes;
    }
    assert_true(tried >= 25);
    assert_true(same * 100 >= tried * 95);
    assert_true(pruned < plain);
}

/* The same seeded game twice: the same moves, the same score. */
static void test_deterministic(void **state) {
    (void)state;
    uint64_t scores[2];
    uint32_t moves[2];
    for (int run = 0; run < 2; run++) {
        eng_game g;
        eng_seed seed = eng_seed_client(7);
        eng_game_new(&g, 4, &seed);
        for (int k = 0; k < 400; k++) {
            eng_bits b;
            assert_true(eng_bits_pack(&g.board, &b));
            ai_cache_clear(&cache);
            ai_result r = ai_search(model, &cache, b, ai_budget_default());
            if (r.best < 0) break;
            eng_game_move(&g, (eng_dir)r.best, &model->moves);
        }
        scores[run] = g.score;
        moves[run] = g.moves;
    }
    assert_int_equal(scores[0], scores[1]);
    assert_int_equal(moves[0], moves[1]);
    assert_true(moves[0] > 100);
}

/* Every size has a player: 3x3 to 8x8 boards get a move that changes them. */
static void test_every_size(void **state) {
    (void)state;
    for (int size = 3; size <= 8; size++) {
        eng_game g;
        eng_seed seed = eng_seed_client((uint32_t)size);
        eng_game_new(&g, size, &seed);
        for (int k = 0; k < 20; k++) {
            ai_result r = ai_search_board(model, &cache, &g.board, ai_budget_default());
            if (r.best < 0) break;
            eng_board before = g.board;
            assert_true(eng_game_move(&g, (eng_dir)r.best, &model->moves).moved);
            assert_memory_not_equal(&before, &g.board, sizeof before);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced_move),
        cmocka_unit_test(test_no_move),
        cmocka_unit_test(test_merge_the_big_pair),
        cmocka_unit_test(test_cache_changes_nothing),
        cmocka_unit_test(test_pruning_keeps_the_choice),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_every_size),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
