/* fuzz_framer.c - libFuzzer target: the line framer, fed in input-chosen chunks, matches
 * a whole-input model. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fails loudly so that libFuzzer records the input. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) abort();                                                            \
    } while (0)

/* A run's result folded into a hash, so runs compare cheaply. */
typedef struct result {
    uint64_t hash;
    size_t lines;
    size_t too_long;
    size_t max_line;
    bool text;
    size_t stop_every; /* on_line asks to stop on every stop_every-th line (0: never) */
} result;

static void mix(result *r, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        r->hash = (r->hash ^ b[i]) * 1099511628211u;
}

static void note_line(result *r, const char *line, size_t len) {
    mix(r, &len, sizeof len);
    mix(r, line, len);
    r->lines++;
}

static int on_line(void *ctx, const char *line, size_t len) {
    result *r = ctx;
    /* Text mode passes empty lines on (Enter pauses a replay); JSON mode never. */
    CHECK((r->text || len > 0) && len <= r->max_line);
    CHECK(line[len] == '\0');
    CHECK(memchr(line, '\n', len) == NULL);
    if (r->text) CHECK(memchr(line, '\r', len) == NULL);
    note_line(r, line, len);
    return r->stop_every && r->lines % r->stop_every == 0;
}

static int on_too_long(void *ctx) {
    result *r = ctx;
    mix(r, "!", 1);
    r->too_long++;
    return r->stop_every && r->too_long % 2 == 0;
}

static void init_result(result *r, size_t max_line, bool text, size_t stop_every) {
    memset(r, 0, sizeof *r);
    r->hash = 14695981039346656037u;
    r->max_line = max_line;
    r->text = text;
    r->stop_every = stop_every;
}

/* Streams data through a framer in chunks: each chunk's first byte says how
 * long it is (1..16 bytes), so the fuzzer controls the cuts. A callback that
 * stops leaves bytes unconsumed; they are fed again at once, as a server
 * does after acting on the line. */
static void run_framer(result *r, const uint8_t *data, size_t size, bool chunked) {
    proto_framer f;
    CHECK(proto_framer_init(&f, r->max_line, r->text) == 0);
    size_t pos = 0;
    while (pos < size) {
        size_t chunk = chunked ? 1 + data[pos] % 16 : size - pos;
        if (chunk > size - pos) chunk = size - pos;
        size_t done = 0;
        while (done < chunk) {
            size_t used = proto_framer_feed(&f, (const char *)data + pos + done,
                                            chunk - done, on_line, on_too_long, r);
            CHECK(used <= chunk - done);
            CHECK(used > 0); /* a stop still consumes the stopping byte */
            CHECK(f.cap <= f.max_line + 1);
            CHECK(f.len <= f.max_line);
            CHECK((f.buf != NULL) == (f.len > 0)); /* a buffer only for a partial line */
            done += used;
        }
        pos += chunk;
    }
    proto_framer_free(&f);
}

/* The framing rules applied to the whole input at once, without streaming:
 * what the framer must report whatever the cuts. */
static void run_model(result *r, const uint8_t *data, size_t size) {
    size_t start = 0, i = 0;
    while (i <= size) {
        bool end = i < size && (data[i] == '\n' || (r->text && data[i] == '\r'));
        if (i == size || end) {
            size_t len = i - start;
            if (!end) {
                /* An unterminated tail is reported once it is too long; in
                 * JSON mode a last '\r' just past the limit may still be the
                 * start of "\r\n". */
                bool held = !r->text && len == r->max_line + 1 && data[i - 1] == '\r';
                if (len > r->max_line && !held) {
                    mix(r, "!", 1);
                    r->too_long++;
                }
                break;
            }
            if (!r->text && len > 0 && data[i - 1] == '\r') len--;
            if (len > r->max_line) {
                mix(r, "!", 1);
                r->too_long++;
            } else if (len > 0 || r->text) {
                note_line(r, (const char *)data + start, len);
            }
            if (r->text && data[i] == '\r' && i + 1 < size &&
                (data[i + 1] == '\n' || data[i + 1] == '\0'))
                i++;
            start = i + 1;
        }
        i++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    /* The first byte picks the limit: mostly tiny, so that over-long lines
     * are common; sometimes the server's 4096. */
    size_t max_line = data[0] == 0xff ? 4096 : 1 + data[0] % 24;
    data++;
    size--;
    for (int text = 0; text <= 1; text++) {
        result model, whole, cut, stopping;
        init_result(&model, max_line, text, 0);
        init_result(&whole, max_line, text, 0);
        init_result(&cut, max_line, text, 0);
        init_result(&stopping, max_line, text, 3);
        run_model(&model, data, size);
        run_framer(&whole, data, size, false);
        run_framer(&cut, data, size, true);
        run_framer(&stopping, data, size, true);
        CHECK(whole.lines == model.lines && whole.too_long == model.too_long);
        CHECK(whole.hash == model.hash);
        CHECK(cut.hash == model.hash && cut.lines == model.lines);
        CHECK(stopping.hash == model.hash && stopping.lines == model.lines);
    }
    return 0;
}
