/* hex.h - bytes as hex digits and back: the one hex codec (seeds, keys, hashes, boards).
 */
#ifndef RACE2048_HEX_H
#define RACE2048_HEX_H

#include <stdbool.h>
#include <stddef.h>

/* The value of one hex digit (0-9, a-f, A-F), or -1 for any other character. */
int proto_hex_digit(char c);

/* Writes the n bytes as 2 * n lower-case hex digits and a NUL into out, which
 * holds 2 * n + 1 bytes. bytes may be NULL when n is 0. */
void proto_hex_encode(const void *bytes, size_t n, char *out);

/* Reads text, exactly 2 * n hex digits of either case and then its NUL, into
 * the n bytes at out. Returns true; or false, out untouched, for anything
 * else (NULL, shorter, longer, a non-digit). */
bool proto_hex_decode(const char *text, void *out, size_t n);

#endif
