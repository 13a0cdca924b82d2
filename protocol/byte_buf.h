/* byte_buf.h - a small growable byte buffer (shared service: calls nothing above it). */
#ifndef RACE2048_BYTE_BUF_H
#define RACE2048_BYTE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* The bytes data[0, len) in a block of cap bytes; all zero is an empty
 * buffer that holds no memory. Sizes are 32-bit (at most 4 GiB - 1): it holds
 * lines, reads and rendered pages, and 16 bytes keep a connection small. */
typedef struct byte_buf {
    char *data;
    uint32_t len;
    uint32_t cap;
} byte_buf;

/* Makes room for `more` bytes after len: the block at least doubles, so
 * appends cost amortised O(1), and a first reservation is exactly its size.
 * Returns 0, or -1 (the buffer unchanged) if memory runs out or the size
 * would pass 4 GiB. */
int byte_buf_reserve(byte_buf *b, size_t more);
/* Appends n bytes (data may be NULL when n is 0). Returns 0, or -1 (the
 * buffer unchanged) as byte_buf_reserve. */
int byte_buf_append(byte_buf *b, const void *data, size_t n);
/* Appends printf-formatted text (no terminating NUL counted in len, though
 * one is written after it). Returns 0, or -1 (the buffer unchanged) on a bad
 * format or no memory. */
int byte_buf_printf(byte_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* byte_buf_printf with a va_list (ap is used up, as by vsnprintf). */
int byte_buf_vprintf(byte_buf *b, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;
/* Gives the block back: the buffer is empty and holds no memory. */
void byte_buf_free(byte_buf *b);

#endif
