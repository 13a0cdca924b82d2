/* byte_buf.c - a small growable byte buffer (shared service: calls nothing above it). */
#include "byte_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int byte_buf_reserve(byte_buf *b, size_t more) {
    if (more <= (size_t)(b->cap - b->len)) return 0;
    if (more > UINT32_MAX - b->len) return -1;
    size_t need = (size_t)b->len + more;
    size_t cap = (size_t)b->cap * 2;
    if (cap < need) cap = need;
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    char *data = realloc(b->data, cap);
    if (!data) return -1;
    b->data = data;
    b->cap = (uint32_t)cap;
    return 0;
}

int byte_buf_append(byte_buf *b, const void *data, size_t n) {
    if (n == 0) return 0;
    if (byte_buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, data, n);
    b->len += (uint32_t)n;
    return 0;
}

int byte_buf_printf(byte_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = byte_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int byte_buf_vprintf(byte_buf *b, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0 || byte_buf_reserve(b, (size_t)n + 1) < 0) {
        va_end(again);
        return -1;
    }
    if ((size_t)n < sizeof small) {
        memcpy(b->data + b->len, small, (size_t)n + 1);
    } else {
        /* Longer than the stack's copy: format again, into the buffer. */
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    b->len += (uint32_t)n;
    return 0;
}

void byte_buf_free(byte_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
