/* string.h - the three libc functions engine/ needs, for the wasm build (no libc). */
#ifndef RACE2048_WASM_STRING_H
#define RACE2048_WASM_STRING_H

#include <stddef.h>

void *memset(void *dst, int c, size_t n);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif
