/* api.c - the engine's rules and the AI exported to the web client as WebAssembly: a
 * game from a revealed seed, moves, the board, score and move count to compare, and the
 * AI's verdict on each position (the analysis of race2048-replay --analyse). */
#include <stddef.h>

#include "ai.h"
#include "engine.h"

#define EXPORT(name) __attribute__((export_name(#name)))

static eng_game game;
static char seed_text[ENG_SEED_TEXT_MAX + 8];

/* Where JavaScript writes the seed's text (as `end` reveals it) before w_new. */
EXPORT(w_seed_buf) char *w_seed_buf(void) {
    return seed_text;
}

EXPORT(w_seed_cap) int w_seed_cap(void) {
    return (int)sizeof seed_text;
}

/* Starts a game on a size x size board from the len-byte seed text: 64 hex
 * digits (a server seed, ChaCha20) or a decimal number (a client seed,
 * mulberry32). Returns 0, or -1 for a bad seed or size. */
EXPORT(w_new) int w_new(int size, int len) {
    eng_seed seed;
    if (len < 0 || len > (int)sizeof seed_text ||
        eng_seed_parse(&seed, seed_text, len) < 0)
        return -1;
    return eng_game_new(&game, size, &seed);
}

/* One move, dir 0 left, 1 right, 2 up, 3 down. Returns 1 if the board
 * changed (and a tile spawned), 0 if not, -1 for a bad direction. */
EXPORT(w_move) int w_move(int dir) {
    if (dir < 0 || dir > 3) return -1;
    return eng_game_move(&game, (eng_dir)dir, NULL).moved ? 1 : 0;
}

/* The exponent in cell i (row-major), 0 for empty. */
EXPORT(w_cell) int w_cell(int i) {
    return i >= 0 && i < game.board.size * game.board.size ? game.board.cell[i] : 0;
}

EXPORT(w_score) double w_score(void) {
    return (double)game.score;
}

EXPORT(w_moves) int w_moves(void) {
    return (int)game.moves;
}

EXPORT(w_over) int w_over(void) {
    return eng_is_over(&game.board);
}

/* ------------------------------------------------------------------ the AI --- */

/* Static, so that wasm-ld sizes the memory for them: the model is ~1.6 MB,
 * the cache 2^14 entries (256 KB); the page never grows memory. */
static ai_model model;
static ai_cache_entry cache_entries[1u << 14];
static ai_cache cache = {.entries = cache_entries, .size = 1u << 14};
static int model_ready;
static int given_up_milli; /* the last verdict's share given up, in 1/1000 % */
static float move_value[4];

/* Fills the model's tables (once; a few tens of milliseconds). Returns 0. */
EXPORT(w_ai_init) int w_ai_init(void) {
    if (!model_ready) ai_model_init(&model);
    model_ready = 1;
    return 0;
}

/* Judges the move dir about to be played on the game so far, as
 * race2048-replay --analyse does: the AI searches the position with the
 * default budget; the played move gave up 100 * (best - played) / best
 * percent of the best move's value, and under 0.05 % is no mistake. Returns
 * the AI's move (dir itself when it is no mistake), -1 if no move changes the
 * board, -2 before w_ai_init or for a bad direction. The share is then
 * w_ai_given_up(), each move's value w_ai_value(d). The game is not moved. */
EXPORT(w_ai_judge) int w_ai_judge(int dir) {
    if (!model_ready || dir < 0 || dir > 3) return -2;
    ai_cache_clear(&cache);
    ai_result r = ai_search_board(&model, &cache, &game.board, ai_budget_default());
    for (int d = 0; d < 4; d++)
        move_value[d] = r.value[d];
    double best = r.best >= 0 ? r.value[r.best] : 0, mine = r.value[dir];
    double given_up =
        best > 0 && mine >= 0 && mine < best ? 100.0 * (best - mine) / best : 0;
    /* A tie (or as good as one) is no mistake, whichever move it names. */
    if (given_up < 0.05) {
        given_up_milli = 0;
        return r.best < 0 ? -1 : dir;
    }
    given_up_milli = (int)(given_up * 1000 + 0.5);
    return r.best;
}

/* The last verdict's share of the best value given up, in thousandths of a
 * percent (0: no mistake). */
EXPORT(w_ai_given_up) int w_ai_given_up(void) {
    return given_up_milli;
}

/* The last search's expected value of move d (-1: the move changes nothing). */
EXPORT(w_ai_value) double w_ai_value(int d) {
    return d >= 0 && d < 4 ? (double)move_value[d] : -1;
}
