/* hex.c - bytes as hex digits and back: the one hex codec (seeds, keys, hashes, boards).
 */
#include "hex.h"

#include <assert.h>
#include <stdint.h>

int proto_hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void proto_hex_encode(const void *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    const uint8_t *b = bytes;
    assert(out && (b || n == 0));
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

bool proto_hex_decode(const char *text, void *out, size_t n) {
    if (!text) return false;
    /* Checked whole first, so that a bad text leaves out as it was. */
    for (size_t i = 0; i < 2 * n; i++)
        if (proto_hex_digit(text[i]) < 0) return false; /* a NUL stops here too */
    if (text[2 * n]) return false;
    uint8_t *b = out;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(proto_hex_digit(text[2 * i]) << 4 |
                         proto_hex_digit(text[2 * i + 1]));
    return true;
}
