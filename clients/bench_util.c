/* bench_util.c - what the offline benchmarks share: sorting, a growing list of move
 * times. */
#include "bench_util.h"

#include <stdlib.h>

int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int bench_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int times_add(times *t, double ms) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 65536;
        double *p = realloc(t->ms, cap * sizeof *p);
        if (!p) return -1;
        t->ms = p;
        t->cap = cap;
    }
    t->ms[t->n++] = ms;
    return 0;
}
