/* engine.c - the rules of 2048: one row rule, normalised directions, mulberry32, spawns. */
#include "engine.h"

#include <string.h>

/* ------------------------------------------------------------------ RNG --- */

void eng_rng_seed(eng_rng *rng, uint32_t seed) { rng->state = seed; }

uint32_t eng_rng_next_u32(eng_rng *rng) {
    rng->state += 0x6D2B79F5u;
    uint32_t t = rng->state;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
}

double eng_rng_next(eng_rng *rng) { return eng_rng_next_u32(rng) / 4294967296.0; }

/* r2 < 0.9 with r2 = u / 2^32 holds exactly for u < 3865470567 (0.9 * 2^32 is
 * 3865470566.4), so the integer compare matches the JavaScript float compare. */
#define SPAWN_TWO_BELOW 3865470567u

/* floor(r1 * n) with r1 = u / 2^32, computed exactly in integers. */
static inline unsigned pick_index(uint32_t u, unsigned n) {
    return (unsigned)(((uint64_t)u * n) >> 32);
}

/* --------------------------------------------------------- the row rule --- */

uint64_t eng_row_slide(uint8_t *line, int n, bool *moved) {
    uint8_t out[ENG_SIZE_MAX] = {0};
    uint64_t gained = 0;
    int w = 0;
    bool can_merge = false; /* out[w - 1] is a tile no merge has made yet */

    for (int i = 0; i < n; i++) {
        uint8_t e = line[i];
        if (!e) continue;
        if (can_merge && out[w - 1] == e && e < ENG_EXP_MAX) {
            out[w - 1] = e + 1;
            gained += (uint64_t)1 << (e + 1);
            can_merge = false;
        } else {
            out[w++] = e;
            can_merge = true;
        }
    }
    bool changed = memcmp(line, out, (size_t)n) != 0;
    if (changed) memcpy(line, out, (size_t)n);
    if (moved) *moved = changed;
    return gained;
}

/* ---------------------------------------------------------------- board --- */

int eng_board_init(eng_board *b, int size) {
    if (size < ENG_SIZE_MIN || size > ENG_SIZE_MAX) return -1;
    memset(b, 0, sizeof *b);
    b->size = (uint8_t)size;
    return 0;
}

/* Index of the i-th cell of line k when the board is read so that the move
 * goes towards index 0: this is the reverse / transpose normalisation. */
static inline int line_index(int n, eng_dir dir, int k, int i) {
    switch (dir) {
    case ENG_LEFT: return k * n + i;
    case ENG_RIGHT: return k * n + (n - 1 - i);
    case ENG_UP: return i * n + k;
    case ENG_DOWN: return (n - 1 - i) * n + k;
    }
    return 0;
}

static bool move_general(eng_board *b, eng_dir dir, uint64_t *gained) {
    int n = b->size;
    bool any = false;
    uint64_t points = 0;
    for (int k = 0; k < n; k++) {
        uint8_t line[ENG_SIZE_MAX];
        for (int i = 0; i < n; i++) line[i] = b->cell[line_index(n, dir, k, i)];
        bool moved;
        points += eng_row_slide(line, n, &moved);
        if (!moved) continue;
        any = true;
        for (int i = 0; i < n; i++) b->cell[line_index(n, dir, k, i)] = line[i];
    }
    if (gained) *gained = points;
    return any;
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
    for (unsigned i = 0; i < cells; i++)
        if (!b->cell[i]) empty[n++] = (uint8_t)i;
    if (n == 0) {
        if (out) *out = (eng_spawn){0, 0, 0};
        return false;
    }
    uint32_t r1 = eng_rng_next_u32(rng);
    uint32_t r2 = eng_rng_next_u32(rng);
    unsigned at = empty[pick_index(r1, n)];
    uint8_t e = r2 < SPAWN_TWO_BELOW ? 1 : 2;
    b->cell[at] = e;
    if (out) *out = (eng_spawn){(int)(at / b->size), (int)(at % b->size), eng_exp_value(e)};
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

bool eng_has_won(const eng_board *b, uint64_t target) { return eng_max_tile(b) >= target; }

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
    while (value >>= 1) e++;
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
    for (int i = 0; i < 16; i++) b->cell[i] = (uint8_t)((bits >> (4 * i)) & 0xF);
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
        for (int i = 0; i < 4; i++) line[i] = (row >> (4 * i)) & 0xF;
        /* Two 15s would make 16, which a nibble cannot hold; eng_bits_pack()
         * never lets a 15 through, so masking here loses nothing. */
        uint64_t points = eng_row_slide(line, 4, NULL);
        uint16_t left = 0;
        for (int i = 0; i < 4; i++) left |= (uint16_t)((line[i] & 0xF) << (4 * i));
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

/* Swaps rows and columns of the 4x4 nibble matrix. */
static inline eng_bits transpose(eng_bits x) {
    eng_bits a1 = x & 0xF0F00F0FF0F00F0Full;
    eng_bits a2 = x & 0x0000F0F00000F0F0ull;
    eng_bits a3 = x & 0x0F0F00000F0F0000ull;
    eng_bits a = a1 | (a2 << 12) | (a3 >> 12);
    eng_bits b1 = a & 0xFF00FF0000FF00FFull;
    eng_bits b2 = a & 0x00FF00FF00000000ull;
    eng_bits b3 = a & 0x00000000FF00FF00ull;
    return b1 | (b2 >> 24) | (b3 << 24);
}

eng_bits eng_bits_move(eng_bits bits, eng_dir dir, const eng_tables *t) {
    const uint16_t *rows;
    const uint64_t *cols;
    switch (dir) {
    case ENG_LEFT:
    case ENG_RIGHT:
        rows = dir == ENG_LEFT ? t->row_left : t->row_right;
        return (eng_bits)rows[bits & ROW_MASK] |
               (eng_bits)rows[(bits >> 16) & ROW_MASK] << 16 |
               (eng_bits)rows[(bits >> 32) & ROW_MASK] << 32 |
               (eng_bits)rows[(bits >> 48) & ROW_MASK] << 48;
    case ENG_UP:
    case ENG_DOWN:
        cols = dir == ENG_UP ? t->col_up : t->col_down;
        bits = transpose(bits);
        return cols[bits & ROW_MASK] | cols[(bits >> 16) & ROW_MASK] << 4 |
               cols[(bits >> 32) & ROW_MASK] << 8 | cols[(bits >> 48) & ROW_MASK] << 12;
    }
    return bits;
}

uint64_t eng_bits_score(eng_bits before, eng_dir dir, const eng_tables *t) {
    if (dir == ENG_UP || dir == ENG_DOWN) before = transpose(before);
    return (uint64_t)t->row_score[before & ROW_MASK] +
           t->row_score[(before >> 16) & ROW_MASK] +
           t->row_score[(before >> 32) & ROW_MASK] + t->row_score[(before >> 48) & ROW_MASK];
}

eng_bits eng_bits_spawn(eng_bits bits, eng_rng *rng) {
    /* One bit per non-empty nibble, then count the empty ones. */
    eng_bits occupied = bits | (bits >> 1);
    occupied |= occupied >> 2;
    occupied &= 0x1111111111111111ull;
    unsigned n = 16 - (unsigned)__builtin_popcountll(occupied);
    if (n == 0) return bits;
    uint32_t r1 = eng_rng_next_u32(rng);
    uint32_t r2 = eng_rng_next_u32(rng);
    unsigned k = pick_index(r1, n);
    eng_bits empty = ~occupied & 0x1111111111111111ull;
    while (k--) empty &= empty - 1; /* drop the k lowest empty cells */
    eng_bits cell = empty & (~empty + 1);
    return bits | (r2 < SPAWN_TWO_BELOW ? cell : cell << 1);
}
