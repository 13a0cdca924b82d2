/* level.c - the server's bot levels: a pace and a way of choosing moves for each. */
#include "level.h"

/* Calibrated with `race2048-bench bots` (protocol/README.md gives the figures):
 * level 1 loses to a beginner, level 5 outplays most people at a pace a
 * fast human can keep up with. */
static const ai_level levels[AI_LEVEL_MAX] = {
    {.level = 1, .moves_per_s = 1.0, .random_per_mille = 600, .budget = {1, 0.0, 0}},
    {.level = 2, .moves_per_s = 1.5, .random_per_mille = 250, .budget = {1, 0.0, 0}},
    {.level = 3, .moves_per_s = 2.5, .random_per_mille = 0, .budget = {1, 0.0, 0}},
    {.level = 4, .moves_per_s = 4.0, .random_per_mille = 0, .budget = {2, 1e-3, 0}},
    {.level = 5, .moves_per_s = 6.0, .random_per_mille = 0, .budget = {0, 1e-4, 20000}},
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
