/* level.c - the server's bot levels: a pace and a way of choosing moves for each. */
#include "level.h"

/* Calibrated with `race2048-bench bots --games 100 --races 100` (BENCHMARKS.md
 * gives the figures and the alternatives tried): each level wins over 90 % of
 * its races against the one below. A random move wrecks a 2048 player's
 * corner: the depth-1 search reaches 2048 in about two games of three, in
 * one of twelve with 5 % of its moves random, never with 10 %. So levels 1
 * and 2 are that search with a random share (1: a board in a muddle, median
 * score about 1500; 2: a beginner who keeps some order, about 5000), level 3
 * (quick's) is the bare search. Below 2048 the pace decides nothing (a race
 * that both lose is won on score); above it, the faster level gets there
 * first. Level 5 reaches 2048 in all but one of 500 games, at 6 moves a
 * second, on 50000 positions a move cut off at 1e-3: 20000 missed 2048 in
 * 3 % of games, a 1e-4 cut-off spends the budget on unlikely spawns (4
 * misses in 500 games to 1, for more time), 100000 gains nothing measurable
 * for twice the time, and at under 0.1 ms a race move one worker thread
 * keeps --max-bots' 1000 level-5 bots at their pace. */
/* Boards other than 4x4 get a depth-1 search at every level (only the random
 * share differs); BOARD_CELLS caps it near a level-5 4x4 move's cost (about
 * 0.15 ms; an unbudgeted 8x8 move took 1.14 ms), so that one core keeps the
 * same number of bots at their pace whatever the size (protocol/README.md,
 * Bots, gives the figures). */
#define BOARD_CELLS 32768
static const ai_level levels[AI_LEVEL_MAX] = {
    {.level = 1,
     .moves_per_s = 1.0,
     .random_per_mille = 600,
     .budget = {1, 0.0, 0, BOARD_CELLS}},
    {.level = 2,
     .moves_per_s = 1.5,
     .random_per_mille = 100,
     .budget = {1, 0.0, 0, BOARD_CELLS}},
    {.level = 3,
     .moves_per_s = 2.5,
     .random_per_mille = 0,
     .budget = {1, 0.0, 0, BOARD_CELLS}},
    {.level = 4,
     .moves_per_s = 4.0,
     .random_per_mille = 0,
     .budget = {2, 1e-3, 0, BOARD_CELLS}},
    {.level = 5,
     .moves_per_s = 6.0,
     .random_per_mille = 0,
     .budget = {0, 1e-3, 50000, BOARD_CELLS}},
};

const ai_level *ai_level_get(int n) {
    if (n < AI_LEVEL_MIN) n = AI_LEVEL_MIN;
    if (n > AI_LEVEL_MAX) n = AI_LEVEL_MAX;
    return &levels[n - 1];
}

/* mulberry32: small, and the same on every target. */
static uint32_t next_u32(uint32_t *state) {
    uint32_t z = (*state += 0x6D2B79F5u);
    z = (z ^ (z >> 15)) * (z | 1u);
    z ^= z + (z ^ (z >> 7)) * (z | 61u);
    return z ^ (z >> 14);
}

int ai_level_move(const ai_model *m, ai_cache *cache, const eng_board *b,
                  const ai_level *lv, uint32_t *rng) {
    if (lv->random_per_mille && next_u32(rng) % 1000 < lv->random_per_mille) {
        int legal[4], n = 0;
        for (int d = 0; d < 4; d++) {
            eng_board copy = *b;
            uint64_t gained;
            if (eng_move(&copy, (eng_dir)d, &m->moves, &gained)) legal[n++] = d;
        }
        if (n) return legal[next_u32(rng) % (uint32_t)n];
        return -1;
    }
    ai_cache_clear(cache);
    return ai_search_board(m, cache, b, lv->budget).best;
}
