/* engine.h - the rules of 2048, pure: boards, moves, seeds and RNGs, spawns, game over.
 */
#ifndef RACE2048_ENGINE_H
#define RACE2048_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#define ENG_SIZE_MIN  3
#define ENG_SIZE_MAX  8
#define ENG_CELLS_MAX (ENG_SIZE_MAX * ENG_SIZE_MAX)

/* Highest exponent a cell may hold; a merge never goes past it, so face
 * values always fit a uint64_t (2^63 is far beyond any reachable game). */
#define ENG_EXP_MAX 63

typedef enum eng_dir { ENG_LEFT = 0, ENG_RIGHT, ENG_UP, ENG_DOWN } eng_dir;

/* ------------------------------------------------------------------ RNG --- */

/* Why two generators. A server seed (every race, every solo game the server
 * seeds) must stay secret until `end`: mulberry32's 32-bit state was
 * recovered from about ten observed spawns by trying all 2^32 seeds in 12 s
 * on two threads, after which every future spawn is known. Those games use
 * the ChaCha20 keystream (RFC 8439) keyed by a 256-bit seed, which no search
 * can recover. A seed a client chose itself hides nothing from anyone, so it
 * keeps mulberry32, and practice games played before version 2 replay as
 * they did. Both sit behind the one draw, eng_rng_next_u32(). */
typedef enum eng_rng_kind {
    ENG_RNG_MULBERRY32 = 0, /* zero, so a zeroed rng with a state is mulberry32 */
    ENG_RNG_CHACHA20,
} eng_rng_kind;

#define ENG_SEED_KEY_BYTES 32
/* Words of one ChaCha20 block: 64 bytes, 16 draws. */
#define ENG_CHACHA_WORDS 16
/* Blocks made at a time: computed side by side in vector lanes they run
 * up to three times as fast as one after another, which keeps ChaCha20
 * spawns within 2x of mulberry32's. The stream is the same either way. */
#define ENG_CHACHA_BLOCKS 8

/* A generator's whole state, held by value (copying it forks the stream). */
typedef struct eng_rng {
    uint32_t state; /* mulberry32: the state; unused by ChaCha20 */
    eng_rng_kind kind;
    uint32_t used;    /* ChaCha20: words of block[] already drawn */
    uint32_t counter; /* ChaCha20: the block counter of the next refill */
    uint32_t key[8];  /* ChaCha20: the key as little-endian words */
    uint32_t block[ENG_CHACHA_BLOCKS * ENG_CHACHA_WORDS]; /* ChaCha20: keystream */
} eng_rng;

/* mulberry32, exactly as protocol/README.md: the state starts at seed. */
void eng_rng_seed_mulberry32(eng_rng *rng, uint32_t seed);
/* ChaCha20 with key as the 32-byte key, a zero 12-byte nonce and the block
 * counter from 0; the draws are the keystream's 32-bit little-endian words. */
void eng_rng_seed_chacha20(eng_rng *rng, const uint8_t key[ENG_SEED_KEY_BYTES]);
/* The raw 32-bit draw; the protocol's float is this divided by 2^32. */
uint32_t eng_rng_next_u32(eng_rng *rng);
/* The draw as a double in [0, 1), as the JavaScript reference returns it. */
double eng_rng_next(eng_rng *rng);

/* RFC 8439 section 2.3: the ChaCha20 block for key, counter and nonce, as 16
 * words (serialise each little-endian for the 64 keystream bytes). Public for
 * the tests' RFC vectors; games draw through eng_rng_next_u32(). */
void eng_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t out[ENG_CHACHA_WORDS]);

/* ----------------------------------------------------------------- seed --- */

/* A game's seed, as the server commits to it and `end` reveals it. */
typedef enum eng_seed_kind {
    ENG_SEED_CLIENT = 0, /* a uint32 a client gave to `solo`: mulberry32 */
    ENG_SEED_SERVER,     /* 256 bits from the server: ChaCha20 */
} eng_seed_kind;

typedef struct eng_seed {
    eng_seed_kind kind;
    uint32_t client;                 /* ENG_SEED_CLIENT: the number */
    uint8_t key[ENG_SEED_KEY_BYTES]; /* ENG_SEED_SERVER: the key bytes */
} eng_seed;

/* Room for the longest text form plus its NUL: 64 hex digits. */
#define ENG_SEED_TEXT_MAX 65

eng_seed eng_seed_client(uint32_t number);
eng_seed eng_seed_server(const uint8_t key[ENG_SEED_KEY_BYTES]);
/* True when both are the same kind and value (unused fields ignored). */
bool eng_seed_equal(const eng_seed *a, const eng_seed *b);
/* Seeds rng with the generator seed's kind calls for. */
void eng_rng_init(eng_rng *rng, const eng_seed *seed);

/* Writes the seed as `end` writes it and the commit hashes it: 64 lowercase
 * hex digits for a server seed, the decimal number for a client seed; NUL
 * terminated. Returns the length (without NUL), or 0 (out[0] = 0 if cap > 0)
 * when cap is too small; ENG_SEED_TEXT_MAX is always enough. */
int eng_seed_format(const eng_seed *seed, char *out, int cap);
/* Reads that text back from len bytes (no NUL needed): exactly 64 lowercase
 * hex digits is a server seed; 1-10 decimal digits without a leading zero
 * (or "0") up to 4294967295 is a client seed. Anything else returns -1 with
 * *seed untouched; 0 on success. */
int eng_seed_parse(eng_seed *seed, const char *text, int len);

/* ---------------------------------------------------------------- board --- */

/* A board of size x size cells, row-major, each cell an exponent: 0 is
 * empty, e > 0 is the tile 2^e. */
typedef struct eng_board {
    uint8_t size;                /* side length, ENG_SIZE_MIN..ENG_SIZE_MAX */
    uint8_t cell[ENG_CELLS_MAX]; /* exponents, row r col c at [r * size + c] */
} eng_board;

/* Where a spawn landed; value 0 means nothing spawned (the board was full). */
typedef struct eng_spawn {
    int row;
    int col;
    uint64_t value;
} eng_spawn;

/* Row tables for the 4x4 fast path (defined with the bitboard below). */
typedef struct eng_tables eng_tables;

/* Fills the tables from eng_row_slide(). Cannot fail. */
void eng_tables_init(eng_tables *t);

/* Slides one line of n exponents towards index 0, merging equal pairs once:
 * the rule of the game, written once. Returns the points gained (the face
 * value of every merged tile) and sets *moved if anything changed. */
uint64_t eng_row_slide(uint8_t *line, int n, bool *moved);

/* Empties b and sets its size. Returns 0, or -1 (b untouched) if size is
 * outside ENG_SIZE_MIN..ENG_SIZE_MAX. */
int eng_board_init(eng_board *b, int size);

/* Applies one move. With t non-NULL a 4x4 board whose tiles fit 4 bits takes
 * the table path; otherwise the general path. Returns true if the board
 * changed; *gained (may be NULL) receives the points. Draws no randomness. */
bool eng_move(eng_board *b, eng_dir dir, const eng_tables *t, uint64_t *gained);

/* Spawns one tile by the protocol's rule: the floor(r1 * n)-th empty cell in
 * row-major order, 2 if r2 < 0.9 else 4. A full board draws nothing and
 * returns false with out->value 0. out may be NULL. */
bool eng_spawn_tile(eng_board *b, eng_rng *rng, eng_spawn *out);

/* True when no cell is empty and no two orthogonal neighbours are equal. */
bool eng_is_over(const eng_board *b);
/* True when some tile is >= target (target a face value). */
bool eng_has_won(const eng_board *b, uint64_t target);
/* Face value of the largest tile, 0 on an empty board. */
uint64_t eng_max_tile(const eng_board *b);
/* Face value of one cell, 0 if empty. */
uint64_t eng_cell_value(const eng_board *b, int row, int col);
/* Face value of an exponent: 0 for 0, else 2^e. */
static inline uint64_t eng_exp_value(uint8_t e) {
    return e ? (uint64_t)1 << e : 0;
}
/* Exponent of a face value that is a power of two >= 2, or -1. */
int eng_value_exp(uint64_t value);

/* ----------------------------------------------------------------- game --- */

/* One player's game: the board, its own RNG stream, and the counters. */
typedef struct eng_game {
    eng_board board;
    eng_rng rng;
    uint64_t score;
    uint32_t moves; /* moves that changed the board */
} eng_game;

typedef struct eng_move_result {
    bool moved;
    uint64_t gained;
    eng_spawn spawn; /* value 0 when nothing spawned */
} eng_move_result;

/* Starts a game: an empty board, then two spawns from an rng seeded with
 * seed (mulberry32 or ChaCha20 by its kind). Returns 0, or -1 (g untouched)
 * for a bad size. */
int eng_game_new(eng_game *g, int size, const eng_seed *seed);

/* Applies a move and, if it changed the board, counts it and spawns. */
eng_move_result eng_game_move(eng_game *g, eng_dir dir, const eng_tables *t);
/* The same on a game's parts kept apart (a server seat keeps its board and
 * counters in its result, its rng beside it): eng_game_move is this. */
eng_move_result eng_play(eng_board *board, uint64_t *score, uint32_t *moves, eng_rng *rng,
                         eng_dir dir, const eng_tables *t);

/* ------------------------------------------------------------- bitboard --- */

/* The 4x4 fast path on a 64-bit board of 4-bit exponents: cell (r, c) is the
 * nibble at bit 4 * (4 * r + c). Exponents must be <= 14 so merges fit. */
typedef uint64_t eng_bits;

/* Packs a 4x4 board; returns false (nothing written) if it is not 4x4 or a
 * tile is above 2^14, i.e. a merge might not fit in a nibble. */
bool eng_bits_pack(const eng_board *b, eng_bits *out);
void eng_bits_unpack(eng_bits bits, eng_board *b);

/* Row tables for the 4x4 fast path, built once from the one row rule. The
 * layout is public only so that eng_bits_move() can be inlined; treat it as
 * opaque. Up and down use column tables (a lookup straight to board bits)
 * rather than a second transpose: measured faster, despite the size. About
 * 1.3 MB: allocate it (or make it static) in the program, not on a small
 * stack. */
struct eng_tables {
    uint16_t row_left[65536];  /* a 4-nibble row slid left */
    uint16_t row_right[65536]; /* the same row slid right */
    uint64_t col_up[65536];    /* a transposed column slid up, as board bits */
    uint64_t col_down[65536];  /* the same slid down */
    uint32_t row_score[65536]; /* points a row's merges make (either way) */
};

/* Swaps rows and columns of the 4x4 nibble matrix. */
static inline eng_bits eng_bits_transpose(eng_bits x) {
    eng_bits a1 = x & 0xF0F00F0FF0F00F0Full;
    eng_bits a2 = x & 0x0000F0F00000F0F0ull;
    eng_bits a3 = x & 0x0F0F00000F0F0000ull;
    eng_bits a = a1 | (a2 << 12) | (a3 >> 12);
    eng_bits b1 = a & 0xFF00FF0000FF00FFull;
    eng_bits b2 = a & 0x00FF00FF00000000ull;
    eng_bits b3 = a & 0x00000000FF00FF00ull;
    return b1 | (b2 >> 24) | (b3 << 24);
}

/* Moves a bitboard; inline because it is the inner loop of every search. */
static inline eng_bits eng_bits_move(eng_bits bits, eng_dir dir, const eng_tables *t) {
    const uint16_t *rows;
    const uint64_t *cols;
    switch (dir) {
    case ENG_LEFT:
    case ENG_RIGHT:
        rows = dir == ENG_LEFT ? t->row_left : t->row_right;
        return (eng_bits)rows[bits & 0xFFFF] |
               (eng_bits)rows[(bits >> 16) & 0xFFFF] << 16 |
               (eng_bits)rows[(bits >> 32) & 0xFFFF] << 32 |
               (eng_bits)rows[(bits >> 48) & 0xFFFF] << 48;
    case ENG_UP:
    case ENG_DOWN:
        cols = dir == ENG_UP ? t->col_up : t->col_down;
        bits = eng_bits_transpose(bits);
        return cols[bits & 0xFFFF] | cols[(bits >> 16) & 0xFFFF] << 4 |
               cols[(bits >> 32) & 0xFFFF] << 8 | cols[(bits >> 48) & 0xFFFF] << 12;
    }
    return bits;
}

/* Points the move dir makes on before: the face value of every merged tile. */
uint64_t eng_bits_score(eng_bits before, eng_dir dir, const eng_tables *t);
/* Spawn on a bitboard by the same rule as eng_spawn_tile(). */
eng_bits eng_bits_spawn(eng_bits bits, eng_rng *rng);

#endif
