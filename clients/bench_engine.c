/* bench_engine.c - builds the fixed board set; runs and checks the engine workloads. */
#include "bench_engine.h"

#include <stdlib.h>
#include <string.h>

static const eng_dir bench_dirs[4] = {ENG_LEFT, ENG_RIGHT, ENG_UP, ENG_DOWN};

/* Cumulative weights out of 256 for the exponents 1..11: small tiles are
 * common, as in real games, so the tables see realistic rows. */
static const uint16_t bench_cum[11] = {72,  128, 168, 196, 216, 230,
                                       240, 247, 251, 254, 256};

eng_board *bench_boards_new(size_t n) {
    eng_board *boards = malloc(n * sizeof *boards);
    if (!boards) return NULL;
    eng_rng rng;
    eng_rng_seed_mulberry32(&rng, BENCH_BOARD_SEED);
    for (size_t i = 0; i < n; i++) {
        eng_board_init(&boards[i], 4);
        for (int c = 0; c < 16; c++) {
            uint32_t r = eng_rng_next_u32(&rng);
            if (r < 0x80000000u) continue;
            uint32_t b = (r >> 8) & 0xFF;
            uint8_t e = 1;
            while (b >= bench_cum[e - 1])
                e++;
            boards[i].cell[c] = e;
        }
    }
    return boards;
}

void bench_boards_free(eng_board *boards) {
    free(boards);
}

eng_bits *bench_bits_new(const eng_board *boards, size_t n) {
    eng_bits *bits = malloc((n ? n : 1) * sizeof *bits);
    if (!bits) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!eng_bits_pack(&boards[i], &bits[i])) {
            free(bits);
            return NULL;
        }
    }
    return bits;
}

static inline uint32_t fnv_step(uint32_t h, uint64_t value) {
    return (h ^ (uint32_t)value) * 16777619u;
}

uint32_t bench_hash_board(uint32_t h, const eng_board *b) {
    for (int i = 0; i < b->size * b->size; i++)
        h = fnv_step(h, eng_exp_value(b->cell[i]));
    return h;
}

uint32_t bench_hash_bits(uint32_t h, eng_bits bits) {
    for (int i = 0; i < 16; i++)
        h = fnv_step(h, eng_exp_value((bits >> (4 * i)) & 0xF));
    return h;
}

uint32_t bench_verify_moves_general(const eng_board *boards, size_t n) {
    uint32_t h = BENCH_FNV_START;
    for (size_t i = 0; i < n; i++) {
        for (int d = 0; d < 4; d++) {
            eng_board b = boards[i];
            eng_move(&b, bench_dirs[d], NULL, NULL);
            h = bench_hash_board(h, &b);
        }
    }
    return h;
}

uint32_t bench_verify_moves_table(const eng_bits *bits, size_t n, const eng_tables *t) {
    uint32_t h = BENCH_FNV_START;
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 4; d++)
            h = bench_hash_bits(h, eng_bits_move(bits[i], bench_dirs[d], t));
    return h;
}

void bench_spawn_rng(eng_rng *rng, eng_rng_kind kind) {
    if (kind == ENG_RNG_CHACHA20) {
        uint8_t key[ENG_SEED_KEY_BYTES];
        for (int i = 0; i < ENG_SEED_KEY_BYTES; i++)
            key[i] = (uint8_t)i;
        eng_rng_seed_chacha20(rng, key);
    } else {
        eng_rng_seed_mulberry32(rng, BENCH_SPAWN_SEED);
    }
}

uint32_t bench_verify_spawns_general(const eng_board *boards, size_t n,
                                     eng_rng_kind kind) {
    uint32_t h = BENCH_FNV_START;
    eng_rng rng;
    bench_spawn_rng(&rng, kind);
    for (size_t i = 0; i < n; i++) {
        eng_board b = boards[i];
        eng_spawn_tile(&b, &rng, NULL);
        h = bench_hash_board(h, &b);
    }
    return h;
}

uint32_t bench_verify_spawns_table(const eng_bits *bits, size_t n, eng_rng_kind kind) {
    uint32_t h = BENCH_FNV_START;
    eng_rng rng;
    bench_spawn_rng(&rng, kind);
    for (size_t i = 0; i < n; i++)
        h = bench_hash_bits(h, eng_bits_spawn(bits[i], &rng));
    return h;
}

/* A cheap fold of a board's 16 cells, enough to make every cell a result. */
static inline uint64_t fold_board(const eng_board *b) {
    uint64_t lo, hi;
    memcpy(&lo, &b->cell[0], sizeof lo);
    memcpy(&hi, &b->cell[8], sizeof hi);
    return lo ^ (hi << 1);
}

uint64_t bench_pass_moves_general(const eng_board *boards, size_t n) {
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        for (int d = 0; d < 4; d++) {
            eng_board b = boards[i];
            eng_move(&b, bench_dirs[d], NULL, NULL);
            acc ^= fold_board(&b) + (uint64_t)d;
        }
    }
    return acc;
}

uint64_t bench_pass_moves_table(const eng_bits *bits, size_t n, const eng_tables *t) {
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        eng_bits x = bits[i];
        acc ^= eng_bits_move(x, ENG_LEFT, t) ^ (eng_bits_move(x, ENG_RIGHT, t) << 1) ^
               (eng_bits_move(x, ENG_UP, t) << 2) ^ (eng_bits_move(x, ENG_DOWN, t) << 3);
    }
    return acc;
}

uint64_t bench_pass_spawns_general(const eng_board *boards, size_t n, eng_rng_kind kind) {
    uint64_t acc = 0;
    eng_rng rng;
    bench_spawn_rng(&rng, kind);
    for (size_t i = 0; i < n; i++) {
        eng_board b = boards[i];
        eng_spawn_tile(&b, &rng, NULL);
        acc ^= fold_board(&b);
    }
    return acc;
}

uint64_t bench_pass_spawns_table(const eng_bits *bits, size_t n, eng_rng_kind kind) {
    uint64_t acc = 0;
    eng_rng rng;
    bench_spawn_rng(&rng, kind);
    for (size_t i = 0; i < n; i++)
        acc ^= eng_bits_spawn(bits[i], &rng);
    return acc;
}
