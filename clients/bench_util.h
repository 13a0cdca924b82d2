/* bench_util.h - what the offline benchmarks share: sorting, a growing list of move
 * times. */
#ifndef RACE2048_BENCH_UTIL_H
#define RACE2048_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparators, ascending. */
int bench_cmp_double(const void *a, const void *b);
int bench_cmp_u64(const void *a, const void *b);

/* The times of moves, for a mean and percentiles. */
typedef struct times {
    double *ms;
    size_t n, cap;
} times;
/* Returns 0, or -1 (t unchanged) if memory ran out. */
int times_add(times *t, double ms);

#endif
