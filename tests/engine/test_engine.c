/* test_engine.c - the rules, the table path against the general one, the bench sums. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bench_engine.h"
#include "engine.h"

/* Built once for the group: 1.3 MB is too much for a stack, and building it
 * per test would be most of the run time. */
static eng_tables *tables;

#define MULBERRY_STEP 0x6D2B79F5u

static const eng_dir all_dirs[4] = {ENG_LEFT, ENG_RIGHT, ENG_UP, ENG_DOWN};

/* ------------------------------------------------------------ helpers --- */

/* A game from a client (mulberry32) seed, as most of these tests use. */
static int game_new(eng_game *g, int size, uint32_t number) {
    eng_seed seed = eng_seed_client(number);
    return eng_game_new(g, size, &seed);
}

static void hex_to_bytes(const char *hex, uint8_t *out, size_t n) {
    assert_int_equal(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void key_words(const uint8_t key[32], uint32_t words[8]) {
    for (int i = 0; i < 8; i++)
        words[i] = (uint32_t)key[4 * i] | (uint32_t)key[4 * i + 1] << 8 |
                   (uint32_t)key[4 * i + 2] << 16 | (uint32_t)key[4 * i + 3] << 24;
}

/* The 64 keystream bytes of a block: each word little-endian. */
static void block_bytes(const uint32_t words[16], uint8_t out[64]) {
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(words[i] >> (8 * j));
}

/* SHA-256 of text as 64 lowercase hex digits, by OpenSSL. */
static void sha256_hex(const char *text, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    assert_true(EVP_Digest(text, strlen(text), md, &len, EVP_sha256(), NULL));
    assert_int_equal(len, 32);
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

/* Exponent of a face value, so test data can be written as the game shows it. */
static uint8_t exp_of(uint64_t value) {
    if (!value) return 0;
    int e = eng_value_exp(value);
    assert_true(e > 0);
    return (uint8_t)e;
}

static void board_set(eng_board *b, int size, const uint64_t *values) {
    assert_int_equal(eng_board_init(b, size), 0);
    for (int i = 0; i < size * size; i++)
        b->cell[i] = exp_of(values[i]);
}

static void assert_board(const eng_board *b, const uint64_t *values) {
    for (int i = 0; i < b->size * b->size; i++) {
        if (eng_exp_value(b->cell[i]) != values[i])
            fail_msg("cell %d (row %d col %d): got %llu, want %llu", i, i / b->size,
                     i % b->size, (unsigned long long)eng_exp_value(b->cell[i]),
                     (unsigned long long)values[i]);
    }
}

/* Index of the i-th cell of line k read from the edge the move goes
 * towards, written here from the rule's words, not from engine.c. */
static int edge_index(int n, eng_dir dir, int k, int i) {
    switch (dir) {
    case ENG_LEFT:
        return k * n + i;
    case ENG_RIGHT:
        return k * n + (n - 1 - i);
    case ENG_UP:
        return i * n + k;
    case ENG_DOWN:
        return (n - 1 - i) * n + k;
    }
    fail();
    return 0;
}

/* The seeds' algorithm, as a second opinion: drop the zeros, merge equal
 * neighbours left to right once each, pad with zeros. */
static uint64_t ref_slide(const uint8_t *in, uint8_t *out, int n) {
    uint8_t tiles[ENG_SIZE_MAX];
    int m = 0, w = 0;
    uint64_t gained = 0;
    for (int i = 0; i < n; i++)
        if (in[i]) tiles[m++] = in[i];
    for (int i = 0; i < m; i++) {
        if (i + 1 < m && tiles[i] == tiles[i + 1]) {
            out[w++] = (uint8_t)(tiles[i] + 1);
            gained += (uint64_t)1 << (tiles[i] + 1);
            i++;
        } else {
            out[w++] = tiles[i];
        }
    }
    while (w < n)
        out[w++] = 0;
    return gained;
}

/* Packs a 4x4 board with no limit but the nibble, so results holding 2^15
 * (two 2^14 merged) can be compared with the table path. A cell above 15
 * sets *too_big instead of failing here: this runs millions of times. */
static eng_bits bits_of_checked(const eng_board *b, bool *too_big) {
    eng_bits bits = 0;
    uint8_t high = 0;
    for (int i = 0; i < 16; i++) {
        high |= b->cell[i];
        bits |= (eng_bits)(b->cell[i] & 0xF) << (4 * i);
    }
    *too_big = high > 15;
    return bits;
}

static eng_bits bits_of(const eng_board *b) {
    bool too_big;
    eng_bits bits = bits_of_checked(b, &too_big);
    assert_false(too_big);
    return bits;
}

/* Moves b both with and without the tables, asserts they agree, keeps the
 * result. */
static bool move_both(eng_board *b, eng_dir dir, uint64_t *gained) {
    eng_board with_tables = *b;
    uint64_t g_general = 99, g_table = 99;
    bool moved = eng_move(b, dir, NULL, &g_general);
    bool moved_table = eng_move(&with_tables, dir, tables, &g_table);
    assert_int_equal(moved, moved_table);
    assert_int_equal(g_general, g_table);
    assert_memory_equal(b, &with_tables, sizeof *b);
    *gained = g_general;
    return moved;
}

/* -------------------------------------------------------- the row rule --- */

typedef struct row_case {
    uint64_t in[4];
    uint64_t out[4];
    uint64_t gained;
    bool moved;
} row_case;

/* Every example of protocol/README.md and a few more that each pin one clause. */
static const row_case row_cases[] = {
    {{2, 2, 4, 0}, {4, 4, 0, 0}, 4, true},    /* a merged tile cannot merge again */
    {{2, 2, 2, 2}, {4, 4, 0, 0}, 8, true},    /* two pairs, two merges */
    {{2, 2, 2, 0}, {4, 2, 0, 0}, 4, true},    /* the pair nearest the edge merges */
    {{4, 0, 4, 4}, {8, 4, 0, 0}, 8, true},    /* zeros are dropped before merging */
    {{4, 2, 2, 0}, {4, 4, 0, 0}, 4, true},    /* a merge result does not merge on */
    {{2, 0, 0, 2}, {4, 0, 0, 0}, 4, true},    /* merges across gaps */
    {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, false},   /* nothing to do */
    {{2, 4, 8, 16}, {2, 4, 8, 16}, 0, false}, /* full, no pairs */
    {{0, 0, 0, 2}, {2, 0, 0, 0}, 0, true},    /* a slide alone is a move */
    {{8, 8, 16, 16}, {16, 32, 0, 0}, 48, true}, {{2, 4, 0, 0}, {2, 4, 0, 0}, 0, false},
};

static void test_row_examples(void **state) {
    for (size_t c = 0; c < sizeof row_cases / sizeof row_cases[0]; c++) {
        const row_case *rc = &row_cases[c];
        uint8_t line[4];
        for (int i = 0; i < 4; i++)
            line[i] = exp_of(rc->in[i]);
        bool moved = !rc->moved;
        uint64_t gained = eng_row_slide(line, 4, &moved);
        for (int i = 0; i < 4; i++)
            assert_int_equal(eng_exp_value(line[i]), rc->out[i]);
        assert_int_equal(gained, rc->gained);
        assert_int_equal(moved, rc->moved);
        /* moved may be NULL. */
        for (int i = 0; i < 4; i++)
            line[i] = exp_of(rc->in[i]);
        assert_int_equal(eng_row_slide(line, 4, NULL), rc->gained);
    }
}

static void test_right_example(void **state) {
    eng_board b;
    board_set(&b, 4, (const uint64_t[16]){2, 2, 2, 0});
    uint64_t gained;
    assert_true(move_both(&b, ENG_RIGHT, &gained));
    assert_board(&b, (const uint64_t[16]){0, 0, 2, 4});
    assert_int_equal(gained, 4);
}

static void test_board_left_example(void **state) {
    eng_board b;
    board_set(&b, 4,
              (const uint64_t[16]){
                  2, 2, 4, 0,  /* */
                  4, 0, 4, 4,  /* */
                  2, 4, 8, 16, /* */
                  0, 0, 0, 2,  /* */
              });
    uint64_t gained;
    assert_true(move_both(&b, ENG_LEFT, &gained));
    assert_board(&b, (const uint64_t[16]){
                         4, 4, 0, 0,  /* */
                         8, 4, 0, 0,  /* */
                         2, 4, 8, 16, /* */
                         2, 0, 0, 0,  /* */
                     });
    assert_int_equal(gained, 4 + 8);
}

static void test_board_up_down_example(void **state) {
    /* The left example's rows as columns. */
    const uint64_t start[16] = {
        2, 4, 2,  0, /* */
        2, 0, 4,  0, /* */
        4, 4, 8,  0, /* */
        0, 4, 16, 2, /* */
    };
    eng_board b;
    uint64_t gained;
    board_set(&b, 4, start);
    assert_true(move_both(&b, ENG_UP, &gained));
    assert_board(&b, (const uint64_t[16]){
                         4, 8, 2, 2,  /* */
                         4, 4, 4, 0,  /* */
                         0, 0, 8, 0,  /* */
                         0, 0, 16, 0, /* */
                     });
    assert_int_equal(gained, 12);
    board_set(&b, 4, start);
    assert_true(move_both(&b, ENG_DOWN, &gained));
    assert_board(&b, (const uint64_t[16]){
                         0, 0, 2, 0,  /* */
                         0, 0, 4, 0,  /* */
                         4, 4, 8, 0,  /* */
                         4, 8, 16, 2, /* */
                     });
    assert_int_equal(gained, 12);
}

/* Places `lines` (n lines of n exponents) on an n x n board, each read from
 * the edge dir moves towards, moves, and checks every line against want. */
static void check_lines(int n, eng_dir dir, uint8_t lines[][ENG_SIZE_MAX],
                        uint8_t want[][ENG_SIZE_MAX], uint64_t want_gained,
                        bool want_moved) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, n), 0);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++)
            b.cell[edge_index(n, dir, k, i)] = lines[k][i];
    uint64_t gained;
    bool moved = move_both(&b, dir, &gained);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++)
            if (b.cell[edge_index(n, dir, k, i)] != want[k][i])
                fail_msg("size %d dir %d line %d cell %d: got exp %d, want %d", n,
                         (int)dir, k, i, b.cell[edge_index(n, dir, k, i)], want[k][i]);
    assert_int_equal(gained, want_gained);
    assert_int_equal(moved, want_moved);
}

/* The examples as every line of boards of every size, read from every edge:
 * padded with zeros after (and, for n > 4, before) the four cells. */
static void test_examples_every_size_and_dir(void **state) {
    for (int n = 4; n <= ENG_SIZE_MAX; n++) {
        const int leads[2] = {0, n - 4};
        for (int l = 0; l < (n > 4 ? 2 : 1); l++) {
            for (size_t c = 0; c < sizeof row_cases / sizeof row_cases[0]; c++) {
                const row_case *rc = &row_cases[c];
                uint8_t lines[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
                uint8_t want[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
                for (int k = 0; k < n; k++) {
                    for (int i = 0; i < 4; i++) {
                        lines[k][leads[l] + i] = exp_of(rc->in[i]);
                        want[k][i] = exp_of(rc->out[i]);
                    }
                }
                /* Leading zeros make a slide of any line with a tile. */
                bool moved = memcmp(lines[0], want[0], (size_t)n) != 0;
                assert_true(moved == rc->moved || leads[l] > 0);
                for (int d = 0; d < 4; d++)
                    check_lines(n, all_dirs[d], lines, want, rc->gained * (uint64_t)n,
                                moved);
            }
        }
    }
}

static void test_examples_size3(void **state) {
    static const struct {
        uint64_t in[3], out[3], gained;
        bool moved;
    } cases[] = {
        {{2, 2, 2}, {4, 2, 0}, 4, true}, {{2, 0, 2}, {4, 0, 0}, 4, true},
        {{4, 2, 2}, {4, 4, 0}, 4, true}, {{2, 4, 8}, {2, 4, 8}, 0, false},
        {{0, 0, 2}, {2, 0, 0}, 0, true}, {{0, 0, 0}, {0, 0, 0}, 0, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t lines[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
        uint8_t want[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 3; i++) {
                lines[k][i] = exp_of(cases[c].in[i]);
                want[k][i] = exp_of(cases[c].out[i]);
            }
        }
        for (int d = 0; d < 4; d++)
            check_lines(3, all_dirs[d], lines, want, 3 * cases[c].gained, cases[c].moved);
    }
}

/* Random boards of every size and direction against the seeds' algorithm. */
static void test_random_lines_match_reference(void **state) {
    eng_rng rng;
    eng_rng_seed_mulberry32(&rng, 7);
    for (int round = 0; round < 2000; round++) {
        for (int n = ENG_SIZE_MIN; n <= ENG_SIZE_MAX; n++) {
            uint8_t lines[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
            uint8_t want[ENG_SIZE_MAX][ENG_SIZE_MAX] = {{0}};
            uint64_t gained = 0;
            bool moved = false;
            for (int k = 0; k < n; k++) {
                for (int i = 0; i < n; i++) {
                    uint32_t r = eng_rng_next_u32(&rng);
                    /* Mostly small tiles so that pairs are common. */
                    lines[k][i] =
                        (r & 1) ? 0 : (uint8_t)(1 + (r >> 1) % (round % 2 ? 3 : 20));
                }
                gained += ref_slide(lines[k], want[k], n);
                moved |= memcmp(lines[k], want[k], (size_t)n) != 0;
            }
            for (int d = 0; d < 4; d++)
                check_lines(n, all_dirs[d], lines, want, gained, moved);
        }
    }
}

static void test_top_exponent_does_not_merge(void **state) {
    /* Two 2^63 cannot become 2^64: the face value must fit a uint64_t. */
    uint8_t line[4] = {ENG_EXP_MAX, ENG_EXP_MAX, 0, 0};
    bool moved = true;
    assert_int_equal(eng_row_slide(line, 4, &moved), 0);
    assert_false(moved);
    assert_int_equal(line[0], ENG_EXP_MAX);
    assert_int_equal(line[1], ENG_EXP_MAX);
    uint8_t below[3] = {ENG_EXP_MAX - 1, 0, ENG_EXP_MAX - 1};
    assert_int_equal(eng_row_slide(below, 3, &moved), (uint64_t)1 << ENG_EXP_MAX);
    assert_int_equal(below[0], ENG_EXP_MAX);
}

/* ---------------------------------------------------------------- RNG --- */

static void test_mulberry32_seed1(void **state) {
    eng_rng rng;
    eng_rng_seed_mulberry32(&rng, 1);
    static const double want[3] = {0.6270739406, 0.0027357212, 0.5274470400};
    for (int i = 0; i < 3; i++) {
        double got = eng_rng_next(&rng);
        if (fabs(got - want[i]) >= 1e-9)
            fail_msg("draw %d: got %.10f, want %.10f", i, got, want[i]);
    }
    /* The raw draws behind those, exactly. */
    eng_rng_seed_mulberry32(&rng, 1);
    assert_int_equal(eng_rng_next_u32(&rng), 2693262067u);
    assert_int_equal(eng_rng_next_u32(&rng), 11749833u);
    assert_int_equal(eng_rng_next_u32(&rng), 2265367787u);
    assert_int_equal(rng.state, 1u + 3u * MULBERRY_STEP);
}

static void test_rng_double_is_u32_over_2_32(void **state) {
    eng_rng a, b;
    eng_rng_seed_mulberry32(&a, 0xDEADBEEF);
    eng_rng_seed_mulberry32(&b, 0xDEADBEEF);
    for (int i = 0; i < 1000; i++) {
        double d = eng_rng_next(&a);
        assert_true(d >= 0 && d < 1);
        assert_true(d == eng_rng_next_u32(&b) / 4294967296.0);
    }
}

/* -------------------------------------------------------------- spawns --- */

/* A 4x4 board with every cell taken but `hole`, and no two equal neighbours. */
static void board_one_hole(eng_board *b, int hole) {
    assert_int_equal(eng_board_init(b, 4), 0);
    for (int i = 0; i < 16; i++)
        b->cell[i] = (uint8_t)(1 + (i / 4 + i % 4) % 2 + 2 * (i % 4));
    b->cell[hole] = 0;
}

/* The second draw after state s is raw. mulberry32 is not onto: no state
 * gives 3865470565..3865470567, so these (found by a search over all 2^32
 * states) are the nearest draws on either side of 0.9 * 2^32. */
#define STATE_DRAWS_BELOW 1893095865u /* draw 3865470564: 0.9 - 5.6e-10, a 2 */
#define STATE_DRAWS_ABOVE 3234370528u /* draw 3865470568: 0.9 + 3.7e-10, a 4 */

static void test_spawn_value_threshold(void **state) {
    static const struct {
        uint32_t draw_state;
        uint32_t draw;
        uint64_t value;
    } cases[] = {{STATE_DRAWS_BELOW, 3865470564u, 2},
                 {STATE_DRAWS_ABOVE, 3865470568u, 4}};
    for (int c = 0; c < 2; c++) {
        eng_rng rng;
        eng_rng_seed_mulberry32(&rng, cases[c].draw_state - 2 * MULBERRY_STEP);
        /* The premise: r2 is this draw, on this side of 0.9 as a double. */
        eng_rng probe = rng;
        eng_rng_next_u32(&probe);
        assert_int_equal(eng_rng_next_u32(&probe), cases[c].draw);
        assert_true((cases[c].draw / 4294967296.0 < 0.9) == (cases[c].value == 2));

        eng_board b;
        board_one_hole(&b, 6);
        eng_spawn sp;
        eng_rng r = rng;
        assert_true(eng_spawn_tile(&b, &r, &sp));
        assert_int_equal(sp.row, 1);
        assert_int_equal(sp.col, 2);
        assert_int_equal(sp.value, cases[c].value);
        assert_int_equal(eng_cell_value(&b, 1, 2), cases[c].value);
        assert_int_equal(r.state, probe.state);

        board_one_hole(&b, 6);
        eng_bits bits;
        assert_true(eng_bits_pack(&b, &bits));
        r = rng;
        eng_bits after = eng_bits_spawn(bits, &r);
        assert_int_equal(after, bits | (eng_bits)exp_of(cases[c].value) << (4 * 6));
        assert_int_equal(r.state, probe.state);
    }
}

static void test_spawn_full_board_draws_nothing(void **state) {
    eng_board b;
    board_one_hole(&b, 0);
    b.cell[0] = 9;
    eng_rng rng;
    eng_rng_seed_mulberry32(&rng, 12345);
    eng_spawn sp = {7, 7, 7};
    assert_false(eng_spawn_tile(&b, &rng, &sp));
    assert_int_equal(sp.value, 0);
    assert_int_equal(rng.state, 12345);
    eng_bits bits;
    assert_true(eng_bits_pack(&b, &bits));
    assert_int_equal(eng_bits_spawn(bits, &rng), bits);
    assert_int_equal(rng.state, 12345);
    assert_false(eng_spawn_tile(&b, &rng, NULL));
}

/* The spawn rule read literally with doubles, as the JavaScript seeds do,
 * against both spawn paths, on random boards of every size. */
static void test_spawn_matches_rule_in_doubles(void **state) {
    eng_rng gen, rng;
    eng_rng_seed_mulberry32(&gen, 99);
    eng_rng_seed_mulberry32(&rng, 2024);
    for (int round = 0; round < 20000; round++) {
        int n = ENG_SIZE_MIN + round % (ENG_SIZE_MAX - ENG_SIZE_MIN + 1);
        eng_board b;
        assert_int_equal(eng_board_init(&b, n), 0);
        /* Vary the fullness from empty to nearly full. */
        uint32_t fill = eng_rng_next_u32(&gen);
        int empties[ENG_CELLS_MAX], count = 0;
        for (int i = 0; i < n * n; i++) {
            if (eng_rng_next_u32(&gen) < fill)
                b.cell[i] = (uint8_t)(1 + i % 11);
            else
                empties[count++] = i;
        }
        eng_rng literal = rng;
        eng_rng before = rng;
        eng_board want = b;
        int cell = -1;
        uint64_t value = 0;
        if (count) {
            double r1 = eng_rng_next(&literal), r2 = eng_rng_next(&literal);
            cell = empties[(int)floor(r1 * count)];
            value = r2 < 0.9 ? 2 : 4;
            want.cell[cell] = exp_of(value);
        }
        eng_spawn sp;
        assert_int_equal(eng_spawn_tile(&b, &rng, &sp), count > 0);
        assert_memory_equal(&b, &want, sizeof b);
        assert_int_equal(rng.state, literal.state);
        assert_int_equal(sp.value, value);
        if (count) {
            assert_int_equal(sp.row * n + sp.col, cell);
        }
        if (n == 4) {
            eng_board start = want;
            if (count) start.cell[cell] = 0;
            eng_bits bits;
            assert_true(eng_bits_pack(&start, &bits));
            eng_rng r = before;
            assert_int_equal(eng_bits_spawn(bits, &r), bits_of(&want));
            assert_int_equal(r.state, literal.state);
        }
    }
}

static void test_bits_spawn_empty_board(void **state) {
    /* 16 empty cells: the one count that does not fit a nibble. */
    eng_rng rng, same;
    eng_rng_seed_mulberry32(&rng, 1);
    eng_rng_seed_mulberry32(&same, 1);
    eng_board b;
    eng_board_init(&b, 4);
    for (int i = 0; i < 200; i++) {
        eng_board copy = b;
        eng_spawn_tile(&copy, &same, NULL);
        assert_int_equal(eng_bits_spawn(0, &rng), bits_of(&copy));
    }
}

/* ---------------------------------------------------------------- game --- */

static void test_game_new_fixed_seed(void **state) {
    eng_game g;
    assert_int_equal(game_new(&g, 4, 1), 0);
    /* Seed 1 draws 0.627, 0.0027, 0.527, 0.981: cell floor(0.627 * 16) = 10
     * gets a 2; then the 7th (floor(0.527 * 15)) of the 15 empty cells,
     * cell 7, gets a 4. */
    assert_board(&g.board, (const uint64_t[16]){
                               0, 0, 0, 0, /* */
                               0, 0, 0, 4, /* */
                               0, 0, 2, 0, /* */
                               0, 0, 0, 0, /* */
                           });
    assert_int_equal(g.score, 0);
    assert_int_equal(g.moves, 0);
    assert_int_equal(g.rng.state, 1u + 4u * MULBERRY_STEP);

    /* Then 0.968 and 0.281: the last (13th) of 14 empty cells, a 2. */
    eng_move_result res = eng_game_move(&g, ENG_LEFT, tables);
    assert_true(res.moved);
    assert_int_equal(res.gained, 0);
    assert_int_equal(res.spawn.row, 3);
    assert_int_equal(res.spawn.col, 3);
    assert_int_equal(res.spawn.value, 2);
    assert_board(&g.board, (const uint64_t[16]){
                               0, 0, 0, 0, /* */
                               4, 0, 0, 0, /* */
                               2, 0, 0, 0, /* */
                               0, 0, 0, 2, /* */
                           });
    /* Then 0.613 and 0.721: of the 13 empty cells 1, 2, 5..15, the 7th
     * (floor(0.613 * 13), from 0) is cell 10, a 2. */
    res = eng_game_move(&g, ENG_UP, NULL);
    assert_true(res.moved);
    assert_int_equal(res.spawn.row, 2);
    assert_int_equal(res.spawn.col, 2);
    assert_int_equal(res.spawn.value, 2);
    assert_board(&g.board, (const uint64_t[16]){
                               4, 0, 0, 2, /* */
                               2, 0, 0, 0, /* */
                               0, 0, 2, 0, /* */
                               0, 0, 0, 0, /* */
                           });
    assert_int_equal(g.moves, 2);
    assert_int_equal(g.score, 0);
    assert_int_equal(g.rng.state, 1u + 8u * MULBERRY_STEP);
}

static void test_game_same_seed_same_game(void **state) {
    const uint8_t key[32] = {0xC0, 0xFF, 0xEE};
    const eng_seed seeds[2] = {eng_seed_client(0xC0FFEE), eng_seed_server(key)};
    for (int k = 0; k < 2; k++)
        for (int n = ENG_SIZE_MIN; n <= ENG_SIZE_MAX; n++) {
            eng_game a, b;
            assert_int_equal(eng_game_new(&a, n, &seeds[k]), 0);
            assert_int_equal(eng_game_new(&b, n, &seeds[k]), 0);
            for (int i = 0; i < 300; i++) {
                eng_dir dir = all_dirs[(i * 7 + i / 5) % 4];
                eng_move_result ra = eng_game_move(&a, dir, tables);
                eng_move_result rb = eng_game_move(&b, dir, NULL);
                assert_memory_equal(&ra, &rb, sizeof ra);
                assert_memory_equal(&a, &b, sizeof a);
            }
            assert_true(a.moves > 0);
        }
}

static void test_game_move_counts_and_scores(void **state) {
    eng_game g;
    assert_int_equal(game_new(&g, 4, 5), 0);
    board_set(&g.board, 4, (const uint64_t[16]){4, 4, 2, 2});
    uint32_t rng_before = g.rng.state;
    eng_move_result res = eng_game_move(&g, ENG_LEFT, tables);
    assert_true(res.moved);
    assert_int_equal(res.gained, 8 + 4);
    assert_int_equal(g.score, 12);
    assert_int_equal(g.moves, 1);
    assert_int_equal(g.rng.state, rng_before + 2 * MULBERRY_STEP);
    assert_true(res.spawn.value == 2 || res.spawn.value == 4);
    assert_int_equal(eng_cell_value(&g.board, res.spawn.row, res.spawn.col),
                     res.spawn.value);
    /* The spawn landed on a cell the move left empty. */
    assert_false(res.spawn.row == 0 && res.spawn.col < 2);
}

static void test_game_noop_move_changes_nothing(void **state) {
    eng_game g;
    assert_int_equal(game_new(&g, 4, 77), 0);
    board_set(&g.board, 4, (const uint64_t[16]){2, 4, 0, 0, 8, 0, 0, 0});
    g.score = 40;
    g.moves = 3;
    for (int with_tables = 0; with_tables < 2; with_tables++) {
        for (int d = 0; d < 2; d++) {
            eng_dir dir = d ? ENG_UP : ENG_LEFT;
            eng_game before = g;
            eng_move_result res = eng_game_move(&g, dir, with_tables ? tables : NULL);
            assert_false(res.moved);
            assert_int_equal(res.gained, 0);
            assert_int_equal(res.spawn.value, 0);
            assert_int_equal(g.rng.state, before.rng.state);
            assert_int_equal(g.moves, 3);
            assert_int_equal(g.score, 40);
            assert_memory_equal(&g.board, &before.board, sizeof g.board);
        }
    }
}

static void test_game_new_bad_size(void **state) {
    eng_game g, untouched;
    memset(&g, 0xAB, sizeof g);
    untouched = g;
    assert_int_equal(game_new(&g, 2, 1), -1);
    assert_int_equal(game_new(&g, 9, 1), -1);
    assert_memory_equal(&g, &untouched, sizeof g);
    eng_board b = {.size = 4};
    assert_int_equal(eng_board_init(&b, 0), -1);
    assert_int_equal(b.size, 4);
    for (int n = ENG_SIZE_MIN; n <= ENG_SIZE_MAX; n++) {
        assert_int_equal(game_new(&g, n, 1), 0);
        int tiles = 0;
        for (int i = 0; i < ENG_CELLS_MAX; i++)
            tiles += g.board.cell[i] != 0;
        assert_int_equal(tiles, 2);
    }
}

/* ----------------------------------------------------- over, won, max --- */

/* A full n x n board with no two equal neighbours: the column picks one of
 * three pairs of values (so a tile never equals a tile two columns away or
 * beside it) and the row parity picks within the pair. */
static void board_stuck(eng_board *b, int n) {
    assert_int_equal(eng_board_init(b, n), 0);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++)
            b->cell[r * n + c] = (uint8_t)(1 + (r + c) % 2 + 2 * (c % 3));
}

static void test_over(void **state) {
    for (int n = ENG_SIZE_MIN; n <= ENG_SIZE_MAX; n++) {
        eng_board b;
        board_stuck(&b, n);
        assert_true(eng_is_over(&b));
        for (int d = 0; d < 4; d++) {
            eng_board copy = b;
            assert_false(eng_move(&copy, all_dirs[d], tables, NULL));
        }
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < n; c++) {
                /* One horizontal pair (the copied value differs from the
                 * other neighbours), then a vertical one, anywhere. */
                eng_board pair = b;
                if (c + 1 < n) {
                    pair.cell[r * n + c] = pair.cell[r * n + c + 1];
                    assert_false(eng_is_over(&pair));
                }
                pair = b;
                if (r + 1 < n) {
                    pair.cell[r * n + c] = pair.cell[(r + 1) * n + c];
                    assert_false(eng_is_over(&pair));
                }
                /* One empty cell. */
                pair = b;
                pair.cell[r * n + c] = 0;
                assert_false(eng_is_over(&pair));
            }
        }
    }
    eng_board empty;
    eng_board_init(&empty, 4);
    assert_false(eng_is_over(&empty));
}

static void test_won_and_max_tile(void **state) {
    eng_board b;
    assert_int_equal(eng_board_init(&b, 5), 0);
    assert_int_equal(eng_max_tile(&b), 0);
    assert_false(eng_has_won(&b, 8));
    b.cell[24] = 11; /* 2048, in the last cell */
    b.cell[3] = 4;
    assert_int_equal(eng_max_tile(&b), 2048);
    assert_true(eng_has_won(&b, 2048));
    assert_true(eng_has_won(&b, 1024));
    assert_false(eng_has_won(&b, 4096));
    b.cell[0] = 20;
    assert_int_equal(eng_max_tile(&b), 1u << 20);
    assert_true(eng_has_won(&b, 1u << 20));
}

static void test_values(void **state) {
    assert_int_equal(eng_exp_value(0), 0);
    assert_int_equal(eng_exp_value(1), 2);
    assert_int_equal(eng_exp_value(11), 2048);
    assert_int_equal(eng_exp_value(63), (uint64_t)1 << 63);
    assert_int_equal(eng_value_exp(2), 1);
    assert_int_equal(eng_value_exp(2048), 11);
    assert_int_equal(eng_value_exp((uint64_t)1 << 63), 63);
    assert_int_equal(eng_value_exp(0), -1);
    assert_int_equal(eng_value_exp(1), -1);
    assert_int_equal(eng_value_exp(6), -1);
    eng_board b;
    board_set(&b, 3, (const uint64_t[9]){0, 2, 0, 0, 0, 0, 0, 0, 16});
    assert_int_equal(eng_cell_value(&b, 0, 1), 2);
    assert_int_equal(eng_cell_value(&b, 2, 2), 16);
    assert_int_equal(eng_cell_value(&b, 0, 0), 0);
    assert_int_equal(eng_cell_value(&b, 3, 0), 0);
    assert_int_equal(eng_cell_value(&b, 0, -1), 0);
}

/* ---------------------------------------------------------- bitboard --- */

static void test_bits_pack_limits(void **state) {
    eng_board b;
    eng_bits out = 0x1234;
    board_one_hole(&b, 0);
    b.cell[5] = 14;
    assert_true(eng_bits_pack(&b, &out));
    eng_board back;
    eng_bits_unpack(out, &back);
    assert_memory_equal(&back, &b, sizeof b);

    out = 0x1234;
    b.cell[5] = 15;
    assert_false(eng_bits_pack(&b, &out));
    b.cell[5] = 16;
    assert_false(eng_bits_pack(&b, &out));
    assert_int_equal(out, 0x1234);
    for (int n = ENG_SIZE_MIN; n <= ENG_SIZE_MAX; n++) {
        if (n == 4) continue;
        eng_board other;
        assert_int_equal(eng_board_init(&other, n), 0);
        other.cell[0] = 1;
        assert_false(eng_bits_pack(&other, &out));
        assert_int_equal(out, 0x1234);
    }
}

static void test_big_tiles_fall_back(void **state) {
    const uint64_t t14 = 1u << 14, t15 = 1u << 15, t16 = 1u << 16;
    const uint64_t start[16] = {
        t15, t15, 0,   0,   /* */
        t16, t16, 2,   2,   /* */
        t14, t14, t15, 0,   /* */
        2,   t16, 0,   t15, /* */
    };
    /* Left by hand; the other directions against the general path. */
    eng_board b;
    board_set(&b, 4, start);
    uint64_t gained = 0;
    assert_true(eng_move(&b, ENG_LEFT, tables, &gained));
    assert_board(&b, (const uint64_t[16]){
                         t16, 0, 0, 0,     /* */
                         2 * t16, 4, 0, 0, /* */
                         t15, t15, 0, 0,   /* */
                         2, t16, t15, 0,   /* */
                     });
    assert_int_equal(gained, t16 + 2 * t16 + 4 + t15);
    for (int d = 0; d < 4; d++) {
        board_set(&b, 4, start);
        eng_board general = b;
        uint64_t g_table, g_general;
        bool m_table = eng_move(&b, all_dirs[d], tables, &g_table);
        bool m_general = eng_move(&general, all_dirs[d], NULL, &g_general);
        assert_true(m_table);
        assert_int_equal(m_table, m_general);
        assert_int_equal(g_table, g_general);
        assert_memory_equal(&b, &general, sizeof b);
    }
}

static void test_bits_14s_merge_to_15(void **state) {
    /* The largest tile the table path takes merges into a nibble's last value. */
    eng_bits bits = 0xEE;
    assert_int_equal(eng_bits_move(bits, ENG_LEFT, tables), 0xF);
    assert_int_equal(eng_bits_score(bits, ENG_LEFT, tables), 1u << 15);
    assert_int_equal(eng_bits_move(bits, ENG_RIGHT, tables), 0xF000);
    eng_board b;
    eng_bits_unpack(bits, &b);
    uint64_t gained;
    assert_true(eng_move(&b, ENG_RIGHT, tables, &gained));
    assert_int_equal(gained, 1u << 15);
    assert_int_equal(eng_cell_value(&b, 0, 3), 1u << 15);
}

/* A random 4x4 board: mostly small tiles (many merges), sometimes any tile
 * up to 2^14, about a third empty. */
static eng_bits random_bits(eng_rng *rng) {
    eng_bits bits = 0;
    for (int q = 0; q < 4; q++) {
        uint32_t r = eng_rng_next_u32(rng);
        for (int i = 0; i < 4; i++, r >>= 8) {
            unsigned v = r & 0xFF, e;
            if (v < 88)
                e = 0;
            else if (v < 232)
                e = 1 + v % 4;
            else
                e = 1 + v % 14;
            bits |= (eng_bits)e << (4 * (4 * q + i));
        }
    }
    return bits;
}

/* The table path equals the general path, board and points, on a million
 * boards in every direction. */
static void test_table_equals_general(void **state) {
    eng_rng rng;
    eng_rng_seed_mulberry32(&rng, 0x5EED);
    long moved_count = 0;
    for (long i = 0; i < 1000000; i++) {
        eng_bits bits = random_bits(&rng);
        eng_board b;
        eng_bits_unpack(bits, &b);
        for (int d = 0; d < 4; d++) {
            eng_dir dir = all_dirs[d];
            eng_bits after = eng_bits_move(bits, dir, tables);
            uint64_t points = eng_bits_score(bits, dir, tables);
            eng_board general = b;
            uint64_t gained = 99;
            bool moved = eng_move(&general, dir, NULL, &gained);
            bool too_big;
            eng_bits want = bits_of_checked(&general, &too_big);
            if (too_big || want != after || gained != points || moved != (after != bits))
                fail_msg("board %016llx dir %d: table %016llx (+%llu), general %016llx "
                         "(+%llu)",
                         (unsigned long long)bits, d, (unsigned long long)after,
                         (unsigned long long)points, (unsigned long long)want,
                         (unsigned long long)gained);
            moved_count += moved;
            /* eng_move() with tables is the same path behind pack and unpack. */
            if (i % 16 == 0) {
                eng_board table = b;
                uint64_t table_gained = 99;
                if (eng_move(&table, dir, tables, &table_gained) != moved ||
                    table_gained != gained || memcmp(&table, &general, sizeof table) != 0)
                    fail_msg("board %016llx dir %d: eng_move with tables differs",
                             (unsigned long long)bits, d);
            }
        }
    }
    /* The boards are not trivial: most moves do something. */
    assert_true(moved_count > 2000000);
}

/* ----------------------------------------------------------- ChaCha20 --- */

/* RFC 8439 section 2.3.2: the block function's worked example. */
static void test_chacha20_rfc_block(void **state) {
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    uint32_t kw[8];
    key_words(key, kw);
    const uint32_t nonce[3] = {0x09000000u, 0x4a000000u, 0};
    uint32_t out[16];
    eng_chacha20_block(kw, 1, nonce, out);
    static const uint32_t want[16] = {
        0xe4e7f110u, 0x15593bd1u, 0x1fdd0f50u, 0xc47120a3u, 0xc7f4d1c7u, 0x0368c033u,
        0x9aaa2204u, 0x4e6cd4c3u, 0x466482d2u, 0x09aa9f07u, 0x05d7c214u, 0xa2028bd9u,
        0xd19c12b5u, 0xb94e16deu, 0xe883d0cbu, 0x4e3c50a2u,
    };
    for (int i = 0; i < 16; i++)
        assert_int_equal(out[i], want[i]);
}

/* RFC 8439 appendix A.1: the five block function test vectors. */
static void test_chacha20_rfc_appendix_a1(void **state) {
    static const struct {
        const char *key;
        uint32_t counter;
        const char *nonce;
        const char *stream;
    } vec[] = {
        {"0000000000000000000000000000000000000000000000000000000000000000", 0,
         "000000000000000000000000",
         "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
         "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"},
        {"0000000000000000000000000000000000000000000000000000000000000000", 1,
         "000000000000000000000000",
         "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
         "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"},
        {"0000000000000000000000000000000000000000000000000000000000000001", 1,
         "000000000000000000000000",
         "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
         "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"},
        {"00ff000000000000000000000000000000000000000000000000000000000000", 2,
         "000000000000000000000000",
         "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
         "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096"},
        {"0000000000000000000000000000000000000000000000000000000000000000", 0,
         "000000000000000000000002",
         "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
         "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"},
    };
    for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++) {
        uint8_t key[32], nonce_bytes[12], want[64], got[64];
        hex_to_bytes(vec[v].key, key, 32);
        hex_to_bytes(vec[v].nonce, nonce_bytes, 12);
        hex_to_bytes(vec[v].stream, want, 64);
        uint32_t kw[8], nonce[3], out[16];
        key_words(key, kw);
        for (int i = 0; i < 3; i++)
            nonce[i] = (uint32_t)nonce_bytes[4 * i] |
                       (uint32_t)nonce_bytes[4 * i + 1] << 8 |
                       (uint32_t)nonce_bytes[4 * i + 2] << 16 |
                       (uint32_t)nonce_bytes[4 * i + 3] << 24;
        eng_chacha20_block(kw, vec[v].counter, nonce, out);
        block_bytes(out, got);
        if (memcmp(got, want, 64) != 0)
            fail_msg("appendix A.1 vector #%zu differs", v + 1);
    }
    /* Vectors 1 and 2 are blocks 0 and 1 of the zero key's stream: the
     * generator's first 32 draws. */
    uint8_t zero[32] = {0}, want[128];
    hex_to_bytes(vec[0].stream, want, 64);
    hex_to_bytes(vec[1].stream, want + 64, 64);
    eng_rng rng;
    eng_rng_seed_chacha20(&rng, zero);
    for (int i = 0; i < 32; i++) {
        uint32_t w = (uint32_t)want[4 * i] | (uint32_t)want[4 * i + 1] << 8 |
                     (uint32_t)want[4 * i + 2] << 16 | (uint32_t)want[4 * i + 3] << 24;
        assert_int_equal(eng_rng_next_u32(&rng), w);
    }
}

/* OpenSSL's ChaCha20 on random keys: encrypting zeros gives the keystream.
 * Its 16-byte IV is the 4-byte little-endian counter, then the 12-byte
 * nonce, so all zeros is counter 0 and the zero nonce. */
static void test_chacha20_matches_openssl(void **state) {
    enum { DRAWS = 16 * 9 + 5 }; /* across several block boundaries */
    eng_rng keygen;
    eng_rng_seed_mulberry32(&keygen, 0xC4AC4A20u);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    assert_non_null(ctx);
    for (int k = 0; k < 200; k++) {
        uint8_t key[32];
        for (int i = 0; i < 32; i++)
            key[i] = (uint8_t)eng_rng_next_u32(&keygen);
        const uint8_t iv[16] = {0};
        uint8_t zeros[4 * DRAWS] = {0}, stream[4 * DRAWS];
        int len = 0;
        assert_int_equal(EVP_EncryptInit_ex(ctx, EVP_chacha20(), NULL, key, iv), 1);
        assert_int_equal(EVP_EncryptUpdate(ctx, stream, &len, zeros, sizeof zeros), 1);
        assert_int_equal(len, (int)sizeof stream);
        eng_rng rng;
        eng_rng_seed_chacha20(&rng, key);
        for (int i = 0; i < DRAWS; i++) {
            uint32_t w = (uint32_t)stream[4 * i] | (uint32_t)stream[4 * i + 1] << 8 |
                         (uint32_t)stream[4 * i + 2] << 16 |
                         (uint32_t)stream[4 * i + 3] << 24;
            uint32_t got = eng_rng_next_u32(&rng);
            if (got != w) fail_msg("key %d draw %d: %08x, OpenSSL %08x", k, i, got, w);
        }
    }
    EVP_CIPHER_CTX_free(ctx);
}

/* protocol/README.md's vector: seed 00 x 32 gives these draws, this 4x4 start
 * board, and with salt 0 x 32 this commit. */
static void test_protocol_chacha20_vector(void **state) {
    const uint8_t zero[32] = {0};
    eng_rng rng;
    eng_rng_seed_chacha20(&rng, zero);
    assert_int_equal(eng_rng_next_u32(&rng), 0xade0b876u);
    assert_int_equal(eng_rng_next_u32(&rng), 0x903df1a0u);
    assert_int_equal(eng_rng_next_u32(&rng), 0xe56a5d40u);
    assert_int_equal(eng_rng_next_u32(&rng), 0x28bd8653u);

    eng_seed seed = eng_seed_server(zero);
    eng_game g;
    assert_int_equal(eng_game_new(&g, 4, &seed), 0);
    assert_board(&g.board, (const uint64_t[16]){
                               0, 0, 0, 0, /* */
                               0, 0, 0, 0, /* */
                               0, 0, 2, 0, /* */
                               0, 0, 2, 0, /* */
                           });
    /* The bitboard path spawns the same two tiles. */
    eng_rng_init(&rng, &seed);
    eng_bits bits = eng_bits_spawn(eng_bits_spawn(0, &rng), &rng);
    assert_int_equal(bits, bits_of(&g.board));

    char text[ENG_SEED_TEXT_MAX], commit_input[100], commit[65];
    assert_int_equal(eng_seed_format(&seed, text, sizeof text), 64);
    snprintf(commit_input, sizeof commit_input, "00000000000000000000000000000000:%s",
             text);
    sha256_hex(commit_input, commit);
    assert_string_equal(
        commit, "cc4b85092cccad861327a43c78c3bb2f9e4df7052cfe8ad6586c8406cc0a0a94");

    /* And the client seed example: seed 42. */
    seed = eng_seed_client(42);
    assert_int_equal(eng_seed_format(&seed, text, sizeof text), 2);
    snprintf(commit_input, sizeof commit_input, "00000000000000000000000000000000:%s",
             text);
    sha256_hex(commit_input, commit);
    assert_string_equal(
        commit, "65d9a4f8fe9abc50f929521ab3346fc213f21e2503507a0d77ad7e2ae195c56f");
}

/* Both spawn paths agree on ChaCha20 draws too, across block boundaries,
 * and a copied generator replays the same stream. */
static void test_chacha20_spawn_paths_agree(void **state) {
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0xA5 ^ i * 37);
    eng_rng general, table;
    eng_rng_seed_chacha20(&general, key);
    table = general;
    eng_rng gen;
    eng_rng_seed_mulberry32(&gen, 4242);
    for (int round = 0; round < 5000; round++) {
        eng_bits bits = random_bits(&gen) & 0x7777777777777777ull;
        /* Empty some cells so spawns have somewhere to go. */
        bits &= ~((eng_bits)0xF << (4 * (round % 16)));
        eng_board b;
        eng_bits_unpack(bits, &b);
        eng_spawn_tile(&b, &general, NULL);
        assert_int_equal(eng_bits_spawn(bits, &table), bits_of(&b));
        assert_int_equal(general.used, table.used);
        assert_int_equal(general.counter, table.counter);
    }
    assert_true(general.counter > 100);
}

static void test_seed_format_and_parse(void **state) {
    char text[ENG_SEED_TEXT_MAX];
    eng_seed s, back;
    static const struct {
        uint32_t number;
        const char *text;
    } numbers[] = {{0, "0"},
                   {7, "7"},
                   {42, "42"},
                   {1062610626u, "1062610626"},
                   {4294967295u, "4294967295"}};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        s = eng_seed_client(numbers[i].number);
        int len = eng_seed_format(&s, text, sizeof text);
        assert_int_equal(len, (int)strlen(numbers[i].text));
        assert_string_equal(text, numbers[i].text);
        memset(&back, 0xAB, sizeof back);
        assert_int_equal(eng_seed_parse(&back, text, len), 0);
        assert_int_equal(back.kind, ENG_SEED_CLIENT);
        assert_int_equal(back.client, numbers[i].number);
        assert_true(eng_seed_equal(&s, &back));
    }
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 8 + 0x0F);
    s = eng_seed_server(key);
    assert_int_equal(eng_seed_format(&s, text, sizeof text), 64);
    assert_string_equal(
        text, "0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07");
    assert_int_equal(eng_seed_parse(&back, text, 64), 0);
    assert_int_equal(back.kind, ENG_SEED_SERVER);
    assert_memory_equal(back.key, key, 32);
    assert_true(eng_seed_equal(&s, &back));
    /* Kinds never compare equal, even with matching bytes. */
    eng_seed zero_server = eng_seed_server((const uint8_t[32]){0});
    eng_seed zero_client = eng_seed_client(0);
    assert_false(eng_seed_equal(&zero_server, &zero_client));
    back.key[31] ^= 1;
    assert_false(eng_seed_equal(&s, &back));

    /* Too small a buffer writes an empty string and says 0. */
    char small[64];
    memset(small, 'x', sizeof small);
    assert_int_equal(eng_seed_format(&s, small, 64), 0);
    assert_int_equal(small[0], '\0');
    eng_seed big = eng_seed_client(4294967295u);
    assert_int_equal(eng_seed_format(&big, small, 10), 0);
    assert_int_equal(eng_seed_format(&big, small, 11), 10);
    assert_int_equal(eng_seed_format(&big, NULL, 0), 0);

    /* Everything else is refused and leaves the seed alone. */
    static const char *bad[] = {
        "",
        "-1",
        "+1",
        "01",
        "00",
        "4294967296",
        "99999999999",
        "12a",
        " 1",
        "1 ",
        "1.0",
        "0F171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07",
        "0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff0",
        "0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff070",
        "0g171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        eng_seed keep = eng_seed_client(99);
        if (eng_seed_parse(&keep, bad[i], (int)strlen(bad[i])) != -1)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(keep.kind, ENG_SEED_CLIENT);
        assert_int_equal(keep.client, 99);
    }
    /* A length shorter than the text reads only that much. */
    assert_int_equal(eng_seed_parse(&back, "123456", 3), 0);
    assert_int_equal(back.client, 123);
}

/* ------------------------------------------------------------ bench sums --- */

static void test_bench_checksums(void **state) {
    eng_board *boards = bench_boards_new(BENCH_BOARDS);
    assert_non_null(boards);
    eng_bits *bits = bench_bits_new(boards, BENCH_BOARDS);
    assert_non_null(bits);
    assert_int_equal(bench_verify_moves_table(bits, BENCH_BOARDS, tables),
                     BENCH_MOVE_VERIFY);
    assert_int_equal(bench_verify_moves_general(boards, BENCH_BOARDS), BENCH_MOVE_VERIFY);
    assert_int_equal(bench_verify_spawns_table(bits, BENCH_BOARDS, ENG_RNG_MULBERRY32),
                     BENCH_SPAWN_VERIFY);
    assert_int_equal(
        bench_verify_spawns_general(boards, BENCH_BOARDS, ENG_RNG_MULBERRY32),
        BENCH_SPAWN_VERIFY);
    uint32_t chacha = bench_verify_spawns_table(bits, BENCH_BOARDS, ENG_RNG_CHACHA20);
    assert_int_equal(bench_verify_spawns_general(boards, BENCH_BOARDS, ENG_RNG_CHACHA20),
                     chacha);
    assert_int_equal(chacha, BENCH_SPAWN_CHACHA20_VERIFY);
    assert_int_equal(BENCH_MOVE_VERIFY, 0xfac8148du);
    assert_int_equal(BENCH_SPAWN_VERIFY, 0x149199afu);
    free(bits);
    bench_boards_free(boards);
}

/* ---------------------------------------------------------------- main --- */

static int group_setup(void **state) {
    tables = malloc(sizeof *tables);
    if (!tables) return -1;
    eng_tables_init(tables);
    return 0;
}

static int group_teardown(void **state) {
    free(tables);
    tables = NULL;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_examples),
        cmocka_unit_test(test_right_example),
        cmocka_unit_test(test_board_left_example),
        cmocka_unit_test(test_board_up_down_example),
        cmocka_unit_test(test_examples_every_size_and_dir),
        cmocka_unit_test(test_examples_size3),
        cmocka_unit_test(test_random_lines_match_reference),
        cmocka_unit_test(test_top_exponent_does_not_merge),
        cmocka_unit_test(test_mulberry32_seed1),
        cmocka_unit_test(test_rng_double_is_u32_over_2_32),
        cmocka_unit_test(test_spawn_value_threshold),
        cmocka_unit_test(test_spawn_full_board_draws_nothing),
        cmocka_unit_test(test_spawn_matches_rule_in_doubles),
        cmocka_unit_test(test_bits_spawn_empty_board),
        cmocka_unit_test(test_game_new_fixed_seed),
        cmocka_unit_test(test_game_same_seed_same_game),
        cmocka_unit_test(test_game_move_counts_and_scores),
        cmocka_unit_test(test_game_noop_move_changes_nothing),
        cmocka_unit_test(test_game_new_bad_size),
        cmocka_unit_test(test_over),
        cmocka_unit_test(test_won_and_max_tile),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_bits_pack_limits),
        cmocka_unit_test(test_big_tiles_fall_back),
        cmocka_unit_test(test_bits_14s_merge_to_15),
        cmocka_unit_test(test_table_equals_general),
        cmocka_unit_test(test_chacha20_rfc_block),
        cmocka_unit_test(test_chacha20_rfc_appendix_a1),
        cmocka_unit_test(test_chacha20_matches_openssl),
        cmocka_unit_test(test_protocol_chacha20_vector),
        cmocka_unit_test(test_chacha20_spawn_paths_agree),
        cmocka_unit_test(test_seed_format_and_parse),
        cmocka_unit_test(test_bench_checksums),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
