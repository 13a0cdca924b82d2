/* record_internal.h - the journal format's two halves share these: the JSON writer
 * (over a byte_buf, jansson's bytes) and the one scanner of records as written. */
#ifndef RACE2048_RECORD_INTERNAL_H
#define RACE2048_RECORD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "byte_buf.h"
#include "engine.h"

/* Writing: appends to b; a failure (no memory) sticks, and the writer checks
 * failed once at the end instead of after every piece. */
typedef struct rec_out {
    byte_buf *b;
    bool failed;
} rec_out;

void rec_put_n(rec_out *o, const char *s, size_t n);
void rec_put_s(rec_out *o, const char *s);
void rec_put_c(rec_out *o, char c);
/* Integers as jansson writes them (uint64_t clamped to int64). */
void rec_put_u(rec_out *o, uint64_t v);
void rec_put_i(rec_out *o, int64_t v);
/* A JSON string, quoted and escaped as jansson escapes it (UTF-8 passes). */
void rec_put_str(rec_out *o, const char *s);
/* A seed as end.seed: a string for a server seed, a number for a client's. */
void rec_put_seed(rec_out *o, const eng_seed *seed);

/* Reading records in the exact form the writer makes them, without a parser:
 * every step checks and sets bad on a mismatch, so a reader checks bad once
 * at the end; anything else takes jansson. */
typedef struct rec_scan {
    const char *p, *end;
    bool bad;
} rec_scan;

/* Consumes text exactly. Inline, as the scanner runs over every record at
 * start-up: text is a literal, so its length is known when compiled. */
static inline bool rec_scan_lit(rec_scan *s, const char *text) {
    size_t n = strlen(text);
    if (s->bad || (size_t)(s->end - s->p) < n || memcmp(s->p, text, n) != 0) {
        s->bad = true;
        return false;
    }
    s->p += n;
    return true;
}

static inline bool rec_scan_peek(const rec_scan *s, char c) {
    return !s->bad && s->p < s->end && *s->p == c;
}

/* A decimal number of at most 19 digits. */
static inline uint64_t rec_scan_num(rec_scan *s) {
    uint64_t v = 0;
    const char *from = s->p;
    while (!s->bad && s->p < s->end && *s->p >= '0' && *s->p <= '9' && s->p - from < 19)
        v = v * 10 + (uint64_t)(*s->p++ - '0');
    if (s->p == from) s->bad = true;
    return v;
}
/* A string without escapes into out (cap bytes with the NUL). */
void rec_scan_text(rec_scan *s, char *out, size_t cap);

#endif
