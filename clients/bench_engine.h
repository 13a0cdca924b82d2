/* bench_engine.h - the engine workloads of BENCHMARKS.md, for the bench and the test. */
#ifndef RACE2048_BENCH_ENGINE_H
#define RACE2048_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define BENCH_BOARDS     100000
#define BENCH_BOARD_SEED 0x2048u
#define BENCH_SPAWN_SEED 0xC0FFEEu
/* The answers BENCHMARKS.md fixes, so that any two engines are comparable. */
#define BENCH_MOVE_VERIFY  0xfac8148du
#define BENCH_SPAWN_VERIFY 0x149199afu
/* The project's own extra: the same spawn work drawn from ChaCha20 keyed
 * with bytes 0, 1, ..., 31 (how server-seeded games draw), and its answer. */
#define BENCH_SPAWN_CHACHA20_VERIFY 0x7cc59d11u

/* The board set: n 4x4 boards drawn cell by cell from mulberry32(0x2048).
 * Returns a malloc'd array (release with bench_boards_free()), or NULL if
 * memory runs out. */
eng_board *bench_boards_new(size_t n);
void bench_boards_free(eng_board *boards);

/* The same boards packed for the table path. Returns a malloc'd array
 * (release with free()), or NULL if memory runs out or a board does not pack
 * (the set never has a tile above 2^11, so that means a bug). */
eng_bits *bench_bits_new(const eng_board *boards, size_t n);

/* FNV-1a style checksum step over one result board, cells in row-major
 * order as face values; start from BENCH_FNV_START. */
#define BENCH_FNV_START 2166136261u
uint32_t bench_hash_board(uint32_t h, const eng_board *b);
uint32_t bench_hash_bits(uint32_t h, eng_bits bits);

/* The checksum of the move work (every board moved left, right, up, down).
 * t NULL: the general path (eng_move without tables); otherwise the bitboard
 * path over bits. Should equal BENCH_MOVE_VERIFY for the standard set. */
uint32_t bench_verify_moves_general(const eng_board *boards, size_t n);
uint32_t bench_verify_moves_table(const eng_bits *bits, size_t n, const eng_tables *t);

/* The spawn work's stream: mulberry32(0xC0FFEE) as BENCHMARKS.md says, or
 * ChaCha20 with the key 0, 1, ..., 31. */
void bench_spawn_rng(eng_rng *rng, eng_rng_kind kind);

/* The checksum of the spawn work (one spawn on a copy of every board, one
 * stream of that kind across the set). Should equal BENCH_SPAWN_VERIFY
 * (mulberry32) or BENCH_SPAWN_CHACHA20_VERIFY for the standard set. */
uint32_t bench_verify_spawns_general(const eng_board *boards, size_t n,
                                     eng_rng_kind kind);
uint32_t bench_verify_spawns_table(const eng_bits *bits, size_t n, eng_rng_kind kind);

/* One timed pass of each workload: the same work as the verify functions,
 * folded into a cheap xor instead of the checksum so the timing measures the
 * engine, not the hash. The result only exists so the work cannot be dropped. */
uint64_t bench_pass_moves_general(const eng_board *boards, size_t n);
uint64_t bench_pass_moves_table(const eng_bits *bits, size_t n, const eng_tables *t);
uint64_t bench_pass_spawns_general(const eng_board *boards, size_t n, eng_rng_kind kind);
uint64_t bench_pass_spawns_table(const eng_bits *bits, size_t n, eng_rng_kind kind);

#endif
