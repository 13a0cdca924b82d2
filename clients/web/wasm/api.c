/* api.c - the engine's rules exported to the web client as WebAssembly: a game from
 * a revealed seed, moves, and the board, score and move count to compare. */
#include <stddef.h>

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
