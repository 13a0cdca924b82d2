/* level.h - the server's bot levels: a pace and a way of choosing moves for each, pure
 * like the AI it calls. */
#ifndef RACE2048_AI_LEVEL_H
#define RACE2048_AI_LEVEL_H

#include <stdint.h>

#include "ai.h"

#define AI_LEVEL_MIN 1
#define AI_LEVEL_MAX 5

typedef struct ai_level {
    int level;
    double moves_per_s;        /* the pace: at most this many moves a second */
    unsigned random_per_mille; /* moves chosen at random among those that change
                                  the board (how a beginner plays) */
    ai_budget budget;          /* the search for every other move */
} ai_level;

/* Level n's settings; n outside 1..5 is clamped. */
const ai_level *ai_level_get(int n);

/* The move level lv plays on board b (any size), or -1 if no move changes it.
 * rng is the bot's own state (advanced): the same board, state and cache
 * size always give the same move. The search runs in the caller's thread. */
int ai_level_move(const ai_model *m, ai_cache *cache, const eng_board *b,
                  const ai_level *lv, uint32_t *rng);

#endif
