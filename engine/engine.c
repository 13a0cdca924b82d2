/* engine.c - the rules of 2048: one row rule, every direction, mulberry32, spawns. */
#include "engine.h"

#include <string.h>

/* ------------------------------------------------------------------ RNG --- */

void eng_rng_seed(eng_rng *rng, uint32_t seed) {
    rng->state = seed;
}

uint32_t eng_rng_next_u32(eng_rng *rng) {
    rng->state += 0x6D2B79F5u;
    uint32_t t = rng->state;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
}

double eng_rng_next(eng_rng *rng) {
    return eng_rng_next_u32(rng) / 4294967296.0;
}

/* r2 < 0.9 with r2 = u / 2^32 holds exactly for u < 3865470567 (0.9 * 2^32 is
 * 3865470566.4), so the integer compare matches the JavaScript float compare. */
#define SPAWN_TWO_BELOW 3865470567u

/* floor(r1 * n) with r1 = u / 2^32, computed exactly in integers. */
static inline unsigned pick_index(uint32_t u, unsigned n) {
    return (unsigned)(((uint64_t)u * n) >> 32);
}

/* --------------------------------------------------------- the row rule --- */

/* The rule itself; inline so that the general path can get a copy with n
 * fixed at 4, which the compiler unrolls (no library calls for 4 bytes). */
static inline uint64_t row_slide(uint8_t *line, int n, bool *moved) {
    uint64_t gained = 0;
    int w = 0;              /* where the next tile lands; w <= i throughout */
    bool can_merge = false; /* line[w - 1] is a tile no merge has made yet */
    bool changed = false;

    /* In place: every slot below i has been read before it is written. */
    for (int i = 0; i < n; i++) {
        uint8_t e = line[i];
        if (!e) continue;
        if (can_merge && line[w - 1] == e && e < ENG_EXP_MAX) {
            line[w - 1] = (uint8_t)(e + 1);
            gained += (uint64_t)1 << (e + 1);
            can_merge = false;
            changed = true;
        } else {
            if (w != i) {
                line[w] = e;
                changed = true;
            }
            w++;
            can_merge = true;
        }
    }
    for (int i = w; i < n; i++)
        line[i] = 0;
    if (moved) *moved = changed;
    return gained;
}

uint64_t eng_row_slide(uint8_t *line, int n, bool *moved) {
    return row_slide(line, n, moved);
}

/* ---------------------------------------------------------------- board --- */

int eng_board_init(eng_board *b, int size) {
    if (size < ENG_SIZE_MIN || size > ENG_SIZE_MAX) return -1;
    memset(b, 0, sizeof *b);
    b->size = (uint8_t)size;
    return 0;
}

/* Where line k starts and how far apart its cells are, when the board is
 * read so that the move goes towards index 0 of every line: this is the
 * reverse / transpose normalisation, done by index mapping. */
static inline void line_walk(int n, eng_dir dir, int k, int *start, int *step) {
    switch (dir) {
    case ENG_LEFT:
        *start = k * n, *step = 1;
        return;
    case ENG_RIGHT:
        *start = k * n + n - 1, *step = -1;
        return;
    case ENG_UP:
        *start = k, *step = n;
        return;
    case ENG_DOWN:
        *start = (n - 1) * n + k, *step = -n;
        return;
    }
    *start = 0, *step = 0;
}

static inline bool move_lines(eng_board *b, int n, eng_dir dir, uint64_t *gained) {
    bool any = false;
    uint64_t points = 0;
    for (int k = 0; k < n; k++) {
        int start, step;
        line_walk(n, dir, k, &start, &step);
        uint8_t line[ENG_SIZE_MAX];
        for (int i = 0; i < n; i++)
            line[i] = b->cell[start + i * step];
        bool moved;
        points += row_slide(line, n, &moved);
        if (!moved) continue;
        any = true;
        for (int i = 0; i < n; i++)
            b->cell[start + i * step] = line[i];
    }
    if (gained) *gained = points;
    return any;
}

/* Every size runs the same code; 4x4, the common board, gets its own copy
 * with n constant. */
static bool move_general(eng_board *b, eng_dir dir, uint64_t *gained) {
    if (b->size == 4) return move_lines(b, 4, dir, gained);
    return move_lines(b, b->size, dir, gained);
}

bool eng_move(eng_board *b, eng_dir dir, const eng_tables *t, uint64_t *gained) {
    eng_bits before;
    if (t && eng_bits_pack(b, &before)) {
        eng_bits after = eng_bits_move(before, dir, t);
        if (gained) *gained = after != before ? eng_bits_score(before, dir, t) : 0;
        if (after == before) return false;
        eng_bits_unpack(after, b);
        return true;
    }
    return move_general(b, dir, gained);
}

bool eng_spawn_tile(eng_board *b, eng_rng *rng, eng_spawn *out) {
    uint8_t empty[ENG_CELLS_MAX];
    unsigned n = 0;
    unsigned cells = (unsigned)b->size * b->size;
    /* Branch-free: whether a cell is empty is a coin toss to the predictor. */
    for (unsigned i = 0; i < cells; i++) {
        empty[n] = (uint8_t)i;
        n += !b->cell[i];
    }
    if (n == 0) {
        if (out) *out = (eng_spawn){0, 0, 0};
        return false;
    }
    uint32_t r1 = eng_rng_next_u32(rng);
    uint32_t r2 = eng_rng_next_u32(rng);
    unsigned at = empty[pick_index(r1, n)];
    uint8_t e = r2 < SPAWN_TWO_BELOW ? 1 : 2;
    b->cell[at] = e;
    if (out)
        *out = (eng_spawn){(int)(at / b->size), (int)(at % b->size), eng_exp_value(e)};
    return true;
}

bool eng_is_over(const eng_board *b) {
    int n = b->size;
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < n; c++) {
            uint8_t e = b->cell[r * n + c];
            if (!e) return false;
            if (c + 1 < n && b->cell[r * n + c + 1] == e) return false;
            if (r + 1 < n && b->cell[(r + 1) * n + c] == e) return false;
        }
    }
    return true;
}

bool eng_has_won(const eng_board *b, uint64_t target) {
    return eng_max_tile(b) >= target;
}

uint64_t eng_max_tile(const eng_board *b) {
    uint8_t top = 0;
    for (int i = 0; i < b->size * b->size; i++)
        if (b->cell[i] > top) top = b->cell[i];
    return eng_exp_value(top);
}

uint64_t eng_cell_value(const eng_board *b, int row, int col) {
    if (row < 0 || col < 0 || row >= b->size || col >= b->size) return 0;
    return eng_exp_value(b->cell[row * b->size + col]);
}

int eng_value_exp(uint64_t value) {
    if (value < 2 || (value & (value - 1))) return -1;
    int e = 0;
    while (value >>= 1)
        e++;
    return e;
}

/* ----------------------------------------------------------------- game --- */

int eng_game_new(eng_game *g, int size, uint32_t seed) {
    eng_game fresh;
    if (eng_board_init(&fresh.board, size) < 0) return -1;
    eng_rng_seed(&fresh.rng, seed);
    fresh.score = 0;
    fresh.moves = 0;
    eng_spawn_tile(&fresh.board, &fresh.rng, NULL);
    eng_spawn_tile(&fresh.board, &fresh.rng, NULL);
    *g = fresh;
    return 0;
}

eng_move_result eng_game_move(eng_game *g, eng_dir dir, const eng_tables *t) {
    eng_move_result res = {0};
    res.moved = eng_move(&g->board, dir, t, &res.gained);
    if (!res.moved) return res;
    g->score += res.gained;
    g->moves++;
    eng_spawn_tile(&g->board, &g->rng, &res.spawn);
    return res;
}

/* ------------------------------------------------------------- bitboard --- */

#define ROW_MASK 0xFFFFull

bool eng_bits_pack(const eng_board *b, eng_bits *out) {
    if (b->size != 4) return false;
    eng_bits bits = 0;
    for (int i = 0; i < 16; i++) {
        if (b->cell[i] > 14) return false;
        bits |= (eng_bits)b->cell[i] << (4 * i);
    }
    *out = bits;
    return true;
}

void eng_bits_unpack(eng_bits bits, eng_board *b) {
    eng_board_init(b, 4);
    for (int i = 0; i < 16; i++)
        b->cell[i] = (uint8_t)((bits >> (4 * i)) & 0xF);
}

static uint16_t reverse_row(uint16_t row) {
    return (uint16_t)((row >> 12) | ((row >> 4) & 0x00F0) | ((row << 4) & 0x0F00) |
                      (row << 12));
}

/* A 16-bit row placed as a column: nibble i goes to row i. */
static uint64_t row_to_col(uint16_t row) {
    uint64_t r = row;
    return (r & 0xF) | ((r & 0xF0) << 12) | ((r & 0xF00) << 24) | ((r & 0xF000) << 36);
}

void eng_tables_init(eng_tables *t) {
    for (uint32_t row = 0; row < 65536; row++) {
        uint8_t line[4];
        for (int i = 0; i < 4; i++)
            line[i] = (row >> (4 * i)) & 0xF;
        /* Two 15s would make 16, which a nibble cannot hold; eng_bits_pack()
         * never lets a 15 through, so masking here loses nothing. */
        uint64_t points = eng_row_slide(line, 4, NULL);
        uint16_t left = 0;
        for (int i = 0; i < 4; i++)
            left |= (uint16_t)((line[i] & 0xF) << (4 * i));
        t->row_left[row] = left;
        t->row_score[row] = (uint32_t)points;
    }
    /* Right and the columns are the left rule read from the other edge. */
    for (uint32_t row = 0; row < 65536; row++) {
        uint16_t right = reverse_row(t->row_left[reverse_row((uint16_t)row)]);
        t->row_right[row] = right;
        t->col_up[row] = row_to_col(t->row_left[row]);
        t->col_down[row] = row_to_col(right);
    }
}

uint64_t eng_bits_score(eng_bits before, eng_dir dir, const eng_tables *t) {
    if (dir == ENG_UP || dir == ENG_DOWN) before = eng_bits_transpose(before);
    return (uint64_t)t->row_score[before & ROW_MASK] +
           t->row_score[(before >> 16) & ROW_MASK] +
           t->row_score[(before >> 32) & ROW_MASK] +
           t->row_score[(before >> 48) & ROW_MASK];
}

eng_bits eng_bits_spawn(eng_bits bits, eng_rng *rng) {
    const eng_bits ones = 0x1111111111111111ull;
    /* Bit 4i set when cell i is empty. */
    eng_bits taken = bits | (bits >> 1);
    taken |= taken >> 2;
    eng_bits empty = ~taken & ones;
    if (!empty) return bits;
    /* Nibble i holds how many of cells 0..i are empty; only nibble 15 can
     * overflow (16 on an empty board), and no carry reaches another nibble.
     * No popcount: without -mpopcnt it is a library call. */
    eng_bits prefix = empty * ones;
    unsigned n = empty == ones ? 16 : (unsigned)(prefix >> 60);
    uint32_t r1 = eng_rng_next_u32(rng);
    uint32_t r2 = eng_rng_next_u32(rng);
    eng_bits k = pick_index(r1, n);
    /* The chosen cell's index is the number of cells before it whose prefix
     * is <= k. Compare nibbles 0..14 with k in byte lanes, branch-free
     * because k is random: (0x80 | k) - v keeps bit 7 iff v <= k. */
    const eng_bits bytes = 0x0101010101010101ull, high = 0x8080808080808080ull;
    eng_bits lanes = (k * bytes) | high;
    eng_bits even = (lanes - (prefix & 0x0F0F0F0F0F0F0F0Full)) & high;
    eng_bits odd =
        (lanes - ((prefix >> 4) & 0x000F0F0F0F0F0F0Full)) & high & ~(0x80ull << 56);
    unsigned at = (unsigned)((((even >> 7) + (odd >> 7)) * bytes) >> 56);
    return bits | (eng_bits)(r2 < SPAWN_TWO_BELOW ? 1 : 2) << (4 * at);
}
