/* engine.c - the rules of 2048: one row rule, every direction, seeds, mulberry32 and
 * ChaCha20, spawns. */
#include "engine.h"

#include <string.h>

/* ------------------------------------------------------------------ RNG --- */

void eng_rng_seed_mulberry32(eng_rng *rng, uint32_t seed) {
    memset(rng, 0, sizeof *rng);
    rng->kind = ENG_RNG_MULBERRY32;
    rng->state = seed;
}

static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

void eng_rng_seed_chacha20(eng_rng *rng, const uint8_t key[ENG_SEED_KEY_BYTES]) {
    memset(rng, 0, sizeof *rng);
    rng->kind = ENG_RNG_CHACHA20;
    for (int i = 0; i < 8; i++)
        rng->key[i] = load_le32(key + 4 * i);
    rng->counter = 0;
    rng->used = ENG_CHACHA_BLOCKS * ENG_CHACHA_WORDS; /* the first draw makes block 0 */
}

static inline uint32_t rotl32(uint32_t x, int n) {
    return x << n | x >> (32 - n);
}

#define QUARTER_ROUND(x, a, b, c, d)                                                     \
    do {                                                                                 \
        x[a] += x[b], x[d] = rotl32(x[d] ^ x[a], 16);                                    \
        x[c] += x[d], x[b] = rotl32(x[b] ^ x[c], 12);                                    \
        x[a] += x[b], x[d] = rotl32(x[d] ^ x[a], 8);                                     \
        x[c] += x[d], x[b] = rotl32(x[b] ^ x[c], 7);                                     \
    } while (0)

void eng_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                        uint32_t out[ENG_CHACHA_WORDS]) {
    /* "expand 32-byte k" as little-endian words, then key, counter, nonce. */
    uint32_t in[ENG_CHACHA_WORDS] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};
    for (int i = 0; i < 8; i++)
        in[4 + i] = key[i];
    in[12] = counter;
    in[13] = nonce[0], in[14] = nonce[1], in[15] = nonce[2];
    uint32_t x[ENG_CHACHA_WORDS];
    for (int i = 0; i < ENG_CHACHA_WORDS; i++)
        x[i] = in[i];
    for (int round = 0; round < 10; round++) {
        QUARTER_ROUND(x, 0, 4, 8, 12); /* columns */
        QUARTER_ROUND(x, 1, 5, 9, 13);
        QUARTER_ROUND(x, 2, 6, 10, 14);
        QUARTER_ROUND(x, 3, 7, 11, 15);
        QUARTER_ROUND(x, 0, 5, 10, 15); /* diagonals */
        QUARTER_ROUND(x, 1, 6, 11, 12);
        QUARTER_ROUND(x, 2, 7, 8, 13);
        QUARTER_ROUND(x, 3, 4, 9, 14);
    }
    for (int i = 0; i < ENG_CHACHA_WORDS; i++)
        out[i] = x[i] + in[i];
}

/* Several consecutive blocks at once, block l in lane l of each vector: the
 * rounds of eng_chacha20_block() on every lane in step, with the GNU vector
 * extension (gcc and clang, any target: SSE2, NEON, wasm SIMD, or plain
 * scalar code where there is none). A double round is about 200 vector
 * instructions whatever the width, so the speed is the lane count: four
 * lanes run about 1.5 times as fast as single blocks, eight (AVX2) about
 * three times, which keeps ChaCha20 spawns within 2x of mulberry32's.
 * CHACHA_LANES_BODY(V, L) is the body for a vector type V of L lanes, with
 * key, counter and out as in chacha_refill(). */
#define LANES_ROTL(v, n) ((v) << (n) | (v) >> (32 - (n)))
#define LANES_QR(x, a, b, c, d)                                                          \
    do {                                                                                 \
        x[a] += x[b], x[d] ^= x[a], x[d] = LANES_ROTL(x[d], 16);                         \
        x[c] += x[d], x[b] ^= x[c], x[b] = LANES_ROTL(x[b], 12);                         \
        x[a] += x[b], x[d] ^= x[a], x[d] = LANES_ROTL(x[d], 8);                          \
        x[c] += x[d], x[b] ^= x[c], x[b] = LANES_ROTL(x[b], 7);                          \
    } while (0)
#define CHACHA_LANES_BODY(V, L)                                                          \
    do {                                                                                 \
        static const uint32_t sigma[4] = {0x61707865u, 0x3320646eu, 0x79622d32u,         \
                                          0x6b206574u};                                  \
        V in[ENG_CHACHA_WORDS], x[ENG_CHACHA_WORDS], zero = {0};                         \
        for (int i = 0; i < 4; i++)                                                      \
            in[i] = zero + sigma[i];                                                     \
        for (int i = 0; i < 8; i++)                                                      \
            in[4 + i] = zero + key[i];                                                   \
        in[12] = zero + counter; /* wraps as the RFC's 32-bit counter would */           \
        for (int l = 0; l < (L); l++)                                                    \
            in[12][l] += (uint32_t)l;                                                    \
        in[13] = in[14] = in[15] = zero;                                                 \
        for (int i = 0; i < ENG_CHACHA_WORDS; i++)                                       \
            x[i] = in[i];                                                                \
        for (int round = 0; round < 10; round++) {                                       \
            LANES_QR(x, 0, 4, 8, 12);                                                    \
            LANES_QR(x, 1, 5, 9, 13);                                                    \
            LANES_QR(x, 2, 6, 10, 14);                                                   \
            LANES_QR(x, 3, 7, 11, 15);                                                   \
            LANES_QR(x, 0, 5, 10, 15);                                                   \
            LANES_QR(x, 1, 6, 11, 12);                                                   \
            LANES_QR(x, 2, 7, 8, 13);                                                    \
            LANES_QR(x, 3, 4, 9, 14);                                                    \
        }                                                                                \
        for (int i = 0; i < ENG_CHACHA_WORDS; i++) {                                     \
            V word = x[i] + in[i];                                                       \
            for (int l = 0; l < (L); l++)                                                \
                out[l * ENG_CHACHA_WORDS + i] = word[l];                                 \
        }                                                                                \
    } while (0)

#if defined(__GNUC__)
typedef uint32_t u32x4 __attribute__((vector_size(16)));

static void chacha20_blocks4(const uint32_t key[8], uint32_t counter,
                             uint32_t out[4 * ENG_CHACHA_WORDS]) {
    CHACHA_LANES_BODY(u32x4, 4);
}
#else
static void chacha20_blocks4(const uint32_t key[8], uint32_t counter,
                             uint32_t out[4 * ENG_CHACHA_WORDS]) {
    static const uint32_t zero_nonce[3] = {0, 0, 0};
    for (int l = 0; l < 4; l++)
        eng_chacha20_block(key, counter + (uint32_t)l, zero_nonce,
                           out + l * ENG_CHACHA_WORDS);
}
#endif

/* On x86-64 the eight-lane body is compiled for AVX2 as well and chosen at
 * run time, so a default build (SSE2 only) still gets it on a CPU that has
 * it. Asking the CPU is no I/O; the stream is the same on every path.
 * ENG_CHACHA_PORTABLE leaves it out, so tests can check the other path. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(ENG_CHACHA_PORTABLE)
#define HAVE_CHACHA_AVX2 1
typedef uint32_t u32x8 __attribute__((vector_size(32)));

__attribute__((target("avx2"))) static void
chacha20_blocks8_avx2(const uint32_t key[8], uint32_t counter,
                      uint32_t out[8 * ENG_CHACHA_WORDS]) {
    CHACHA_LANES_BODY(u32x8, 8);
}
#endif

/* Out of line: one draw in 128 pays for eight blocks, the rest are a load.
 * The counter wraps after 2^32 blocks (2^36 draws), which no game reaches. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void
chacha_refill(eng_rng *rng) {
    _Static_assert(ENG_CHACHA_BLOCKS == 8, "the refill makes eight blocks");
#ifdef HAVE_CHACHA_AVX2
    if (__builtin_cpu_supports("avx2")) {
        chacha20_blocks8_avx2(rng->key, rng->counter, rng->block);
    } else
#endif
    {
        chacha20_blocks4(rng->key, rng->counter, rng->block);
        chacha20_blocks4(rng->key, rng->counter + 4u, rng->block + 4 * ENG_CHACHA_WORDS);
    }
    rng->counter += ENG_CHACHA_BLOCKS;
    rng->used = 0;
}

uint32_t eng_rng_next_u32(eng_rng *rng) {
    if (rng->kind == ENG_RNG_CHACHA20) {
        if (rng->used >= ENG_CHACHA_BLOCKS * ENG_CHACHA_WORDS) chacha_refill(rng);
        return rng->block[rng->used++];
    }
    rng->state += 0x6D2B79F5u;
    uint32_t t = rng->state;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
}

double eng_rng_next(eng_rng *rng) {
    return eng_rng_next_u32(rng) / 4294967296.0;
}

/* ----------------------------------------------------------------- seed --- */

eng_seed eng_seed_client(uint32_t number) {
    eng_seed s;
    memset(&s, 0, sizeof s);
    s.kind = ENG_SEED_CLIENT;
    s.client = number;
    return s;
}

eng_seed eng_seed_server(const uint8_t key[ENG_SEED_KEY_BYTES]) {
    eng_seed s;
    memset(&s, 0, sizeof s);
    s.kind = ENG_SEED_SERVER;
    memcpy(s.key, key, ENG_SEED_KEY_BYTES);
    return s;
}

bool eng_seed_equal(const eng_seed *a, const eng_seed *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == ENG_SEED_CLIENT) return a->client == b->client;
    uint8_t diff = 0;
    for (int i = 0; i < ENG_SEED_KEY_BYTES; i++)
        diff |= a->key[i] ^ b->key[i];
    return diff == 0;
}

void eng_rng_init(eng_rng *rng, const eng_seed *seed) {
    if (seed->kind == ENG_SEED_SERVER)
        eng_rng_seed_chacha20(rng, seed->key);
    else
        eng_rng_seed_mulberry32(rng, seed->client);
}

int eng_seed_format(const eng_seed *seed, char *out, int cap) {
    static const char hex[] = "0123456789abcdef";
    char text[ENG_SEED_TEXT_MAX];
    int len = 0;
    if (seed->kind == ENG_SEED_SERVER) {
        for (int i = 0; i < ENG_SEED_KEY_BYTES; i++) {
            text[len++] = hex[seed->key[i] >> 4];
            text[len++] = hex[seed->key[i] & 0xF];
        }
    } else {
        char rev[10];
        uint32_t v = seed->client;
        int n = 0;
        do {
            rev[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (n)
            text[len++] = rev[--n];
    }
    if (cap <= len) {
        if (cap > 0) out[0] = '\0';
        return 0;
    }
    memcpy(out, text, (size_t)len);
    out[len] = '\0';
    return len;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int eng_seed_parse(eng_seed *seed, const char *text, int len) {
    if (len == 2 * ENG_SEED_KEY_BYTES) {
        uint8_t key[ENG_SEED_KEY_BYTES];
        for (int i = 0; i < ENG_SEED_KEY_BYTES; i++) {
            int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
            if (hi < 0 || lo < 0) return -1;
            key[i] = (uint8_t)(hi << 4 | lo);
        }
        *seed = eng_seed_server(key);
        return 0;
    }
    if (len < 1 || len > 10 || (len > 1 && text[0] == '0')) return -1;
    uint64_t v = 0;
    for (int i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    if (v > 0xFFFFFFFFu) return -1;
    *seed = eng_seed_client((uint32_t)v);
    return 0;
}

/* r2 < 0.9 with r2 = u / 2^32 holds exactly for u < 3865470567 (0.9 * 2^32 is
 * 3865470566.4), so the integer compare matches the JavaScript float compare. */
#define SPAWN_TWO_BELOW 3865470567u

/* A spawn's two draws, r1 then r2. Both ChaCha20 words usually sit in the
 * buffer already, so one check serves the pair. */
static inline void draw_pair(eng_rng *rng, uint32_t *r1, uint32_t *r2) {
    if (rng->kind == ENG_RNG_CHACHA20 &&
        rng->used <= ENG_CHACHA_BLOCKS * ENG_CHACHA_WORDS - 2) {
        *r1 = rng->block[rng->used];
        *r2 = rng->block[rng->used + 1];
        rng->used += 2;
        return;
    }
    *r1 = eng_rng_next_u32(rng);
    *r2 = eng_rng_next_u32(rng);
}

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
    uint32_t r1, r2;
    draw_pair(rng, &r1, &r2);
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

int eng_game_new(eng_game *g, int size, const eng_seed *seed) {
    eng_game fresh;
    if (eng_board_init(&fresh.board, size) < 0) return -1;
    eng_rng_init(&fresh.rng, seed);
    fresh.score = 0;
    fresh.moves = 0;
    eng_spawn_tile(&fresh.board, &fresh.rng, NULL);
    eng_spawn_tile(&fresh.board, &fresh.rng, NULL);
    *g = fresh;
    return 0;
}

eng_move_result eng_play(eng_board *board, uint64_t *score, uint32_t *moves, eng_rng *rng,
                         eng_dir dir, const eng_tables *t) {
    eng_move_result res = {0};
    res.moved = eng_move(board, dir, t, &res.gained);
    if (!res.moved) return res;
    *score += res.gained;
    (*moves)++;
    eng_spawn_tile(board, rng, &res.spawn);
    return res;
}

eng_move_result eng_game_move(eng_game *g, eng_dir dir, const eng_tables *t) {
    return eng_play(&g->board, &g->score, &g->moves, &g->rng, dir, t);
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
    uint32_t r1, r2;
    draw_pair(rng, &r1, &r2);
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
