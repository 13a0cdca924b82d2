/* api.c - the engine's rules and the AI exported to the web client as WebAssembly: a
 * game from a revealed seed, moves, the board, score and move count to compare, and the
 * AI's verdict on each position (the analysis of race2048-replay --analyse). */
#include <stddef.h>

#include "ai.h"
#include "engine.h"
#include "judge.h"

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
static ai_goal goal;      /* w_ai_goal's, for every w_ai_judge after it */
static ai_judgement last; /* the last verdict */

/* Fills the model's tables (once; a few tens of milliseconds). Returns 0. */
EXPORT(w_ai_init) int w_ai_init(void) {
    if (!model_ready) ai_model_init(&model);
    model_ready = 1;
    return 0;
}

/* What the game is played for, for the next w_ai_judge: the target (a power
 * of two; 0: none) and the moves the player has from this position on, this
 * one included (0: no limit). As race2048-replay --analyse: for a race's
 * player who did not win by the target, or any player of a race the clock
 * ended, the moves they made less those already played; else 0. */
EXPORT(w_ai_goal) int w_ai_goal(double target, double moves_left) {
    int e = 0;
    while (e < 30 && (double)(1u << e) < target)
        e++;
    goal.target_exp = target >= 8 && (double)(1u << e) == target ? e : 0;
    goal.moves_left = moves_left > 0 && moves_left < 1e9 ? (long)moves_left : 0;
    return goal.target_exp;
}

/* Judges the move dir about to be played on the game so far, as
 * race2048-replay --analyse does (ai/judge.h): towards the goal's target while
 * it is in reach (the chance of reaching it, in percentage points), else by
 * the AI's value (percent of the best move's). Returns the AI's move (dir
 * itself when it is no mistake), -1 if no move changes the board, -2 before
 * w_ai_init or for a bad direction. Then w_ai_kind() says what was given up,
 * w_ai_given_up() how much, w_ai_value(d) and w_ai_chance(d) each move's
 * value and chance. The game is not moved. */
EXPORT(w_ai_judge) int w_ai_judge(int dir) {
    if (!model_ready || dir < 0 || dir > 3) return -2;
    last = ai_judge(&model, &cache, &game.board, dir, goal);
    if (last.best < 0) return -1;
    return last.kind == AI_JUDGE_NONE ? dir : last.best;
}

/* The last verdict's kind: 0 no mistake, 1 chance of the target (points), 2
 * the AI's value (percent). */
EXPORT(w_ai_kind) int w_ai_kind(void) {
    return (int)last.kind;
}

/* The last search's chance of move d reaching the target, in millionths (-1:
 * the move changes nothing, or no chance was asked). */
EXPORT(w_ai_chance) int w_ai_chance(int d) {
    if (d < 0 || d > 3 || last.chance[d] < 0) return -1;
    return (int)(last.chance[d] * 1e6 + 0.5);
}

/* What the last verdict gave up, in thousandths of its unit (w_ai_kind: a
 * percentage point of the chance, or a percent of the value; 0: no mistake). */
EXPORT(w_ai_given_up) int w_ai_given_up(void) {
    return (int)(last.given_up * 1000 + 0.5);
}

/* The last search's expected value of move d (-1: the move changes nothing). */
EXPORT(w_ai_value) double w_ai_value(int d) {
    return d >= 0 && d < 4 ? (double)last.value[d] : -1;
}
