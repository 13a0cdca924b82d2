/* ai.h - the 2048 player: a board evaluation and expectimax over spawns, pure like the
 * engine.
 *
 * Plain data in, plain data out: no I/O, no globals, no allocation. The
 * caller owns the model (the evaluation's tables, ~1.6 MB: allocate it) and
 * the cache (a transposition table of any power-of-two size), so that
 * several searches can run at once on separate caches, on any target the
 * engine compiles for (WebAssembly included).
 *
 * The search: a max node tries the four moves; a chance node averages over
 * every empty cell and both tiles (2 with 0.9, 4 with 0.1). A branch whose
 * probability of being reached falls below the budget's cut-off is scored
 * by the evaluation instead of searched; positions already scored at the
 * same or a greater depth come from the cache. The same board, budget and
 * cache size always give the same move: the search draws no randomness. */
#ifndef RACE2048_AI_H
#define RACE2048_AI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The evaluation's tables: a value for every 4-cell line (rows and columns
 * alike), and the engine's move tables. */
typedef struct ai_model {
    eng_tables moves;
    float line_value[65536];
    /* Each exponent's powers that the evaluation uses, so that no libm is
     * needed (the WebAssembly build has none) and other sizes score fast. */
    double pow_mono[ENG_EXP_MAX + 1], pow_sum[ENG_EXP_MAX + 1];
} ai_model;

/* Fills the tables. Cannot fail. */
void ai_model_init(ai_model *m);

/* One cached position: the board, the depth it was searched to and the
 * cache generation it belongs to (tag), its value. */
typedef struct ai_cache_entry {
    eng_bits board;
    float value;
    uint32_t tag; /* generation << 4 | depth; 0: never used */
} ai_cache_entry;

/* A transposition table: `size` entries (a power of two) owned by the
 * caller, zeroed before first use. One search at a time per cache. */
typedef struct ai_cache {
    ai_cache_entry *entries;
    size_t size;
    uint32_t generation; /* entries of other generations are empty */
} ai_cache;

/* Empties a cache in constant time (a new generation): positions of an
 * earlier move are of little use. */
void ai_cache_clear(ai_cache *c);

/* How much a move may think. With max_depth > 0, exactly that depth: the
 * number of spawn layers searched (1: my move, every spawn, my best reply,
 * evaluated). With max_depth 0, iterative deepening: depth 1, 2, ... on one
 * cache while the next depth's predicted cost (from the growth of the last
 * two) stays within max_nodes positions, so easy positions think briefly
 * and tight ones, whose searches are small, deeply. Either way the search is
 * deterministic. min_prob is the cut-off probability (0 = none). */
typedef struct ai_budget {
    int max_depth;
    double min_prob;
    uint64_t max_nodes;
    /* Other sizes than 4x4 (ai_search_board): at most about this many board
     * cells read by the evaluation in one search (0 = every spawn). Past it,
     * 4s are not spawned and only an evenly spaced sample of each move's
     * empty cells is, so that a big board's move costs what a 4x4 one does
     * (an 8x8 depth-1 search reads about 200000 cells). */
    uint64_t max_cells;
} ai_budget;

/* The defaults: iterative deepening within 20000 positions, cut-off 1e-4. */
ai_budget ai_budget_default(void);

/* What a search found: the best move (or -1 when no move changes the
 * board), every move's expected value (-1 for a move that changes nothing),
 * the depth searched and the positions evaluated. */
typedef struct ai_result {
    int best;
    float value[4];
    int depth;
    uint64_t nodes;
} ai_result;

/* Searches a 4x4 bitboard (exponents up to 14). */
ai_result ai_search(const ai_model *m, ai_cache *cache, eng_bits board, ai_budget budget);

/* Iterative deepening within a time budget: depth 1, 2, ... on one cache,
 * stopping before a depth whose predicted cost (from the last two) would pass
 * ms, and returning the deepest completed. The clock is the caller's (this
 * file reads none): now_ms(ctx) in milliseconds. Not deterministic: the
 * depth reached depends on the machine. */
ai_result ai_search_timed(const ai_model *m, ai_cache *cache, eng_bits board,
                          double min_prob, double ms, double (*now_ms)(void *ctx),
                          void *ctx);

/* Any board size: a 4x4 board whose tiles fit takes ai_search(); other sizes
 * take a depth-1 expectimax on the general engine path within budget.max_cells,
 * scored by the same line evaluation of every row and column. */
ai_result ai_search_board(const ai_model *m, ai_cache *cache, const eng_board *board,
                          ai_budget budget);

/* The evaluation of a 4x4 position (higher is better), for analysis. */
float ai_evaluate(const ai_model *m, eng_bits board);

#endif
