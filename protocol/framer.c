/* framer.c - splits a byte stream into lines with a fixed length limit, and detects the
 * mode. */
#include "framer.h"

#include <stdlib.h>

/* The first allocation for a partial line; it doubles from there. */
#define FIRST_CAP 128

int proto_framer_init(proto_framer *f, size_t max_line, bool text) {
    f->buf = NULL;
    f->cap = 0;
    f->len = 0;
    f->max_line = max_line;
    f->text = text;
    f->discarding = false;
    f->last_cr = false;
    if (max_line == 0 || max_line == (size_t)-1) return -1;
    return 0;
}

void proto_framer_free(proto_framer *f) {
    free(f->buf);
    f->buf = NULL;
    f->cap = 0;
    f->len = 0;
}

/* Makes room for one more byte and its NUL (len < max_line). Returns -1 if
 * memory runs out. */
static int reserve(proto_framer *f) {
    if (f->len + 2 <= f->cap) return 0;
    size_t cap = f->cap ? f->cap * 2 : FIRST_CAP;
    if (cap > f->max_line + 1) cap = f->max_line + 1;
    if (cap < f->len + 2) cap = f->len + 2;
    char *buf = realloc(f->buf, cap);
    if (!buf) return -1;
    f->buf = buf;
    f->cap = cap;
    return 0;
}

void proto_framer_set_text(proto_framer *f, bool text) {
    /* last_cr means something different in each mode, so it does not
     * survive a change (see the header). */
    if (f->text != text) f->last_cr = false;
    f->text = text;
}

static size_t feed(proto_framer *f, const char *data, size_t n, proto_line_cb on_line,
                   proto_too_long_cb on_too_long, void *ctx);

/* Hands the partial line to on_line and starts a new one. An empty line is
 * handed over in text mode only (a human's Enter means something there);
 * in JSON mode it gives 0. Returns the callback's verdict. */
static int deliver(proto_framer *f, proto_line_cb on_line, void *ctx) {
    size_t len = f->len;
    if (len == 0) return f->text ? on_line(ctx, "", 0) : 0;
    if (len + 1 > f->cap) return 0; /* cannot happen: reserve() kept room */
    /* Reset first: the callback may switch modes, and the next line starts
     * empty whatever it does. */
    f->len = 0;
    f->buf[len] = '\0';
    return on_line(ctx, f->buf, len);
}

/* The current line just passed max_line: drop it and everything up to its
 * end. Returns the callback's verdict. */
static int too_long(proto_framer *f, proto_too_long_cb on_too_long, void *ctx) {
    f->len = 0;
    f->discarding = true;
    return on_too_long ? on_too_long(ctx) : 0;
}

/* Between lines nothing is kept: an idle connection holds no buffer. */
static size_t done(proto_framer *f, size_t used) {
    if (f->len == 0 && f->buf) {
        free(f->buf);
        f->buf = NULL;
        f->cap = 0;
    }
    return used;
}

size_t proto_framer_feed(proto_framer *f, const char *data, size_t n,
                         proto_line_cb on_line, proto_too_long_cb on_too_long,
                         void *ctx) {
    size_t used = feed(f, data, n, on_line, on_too_long, ctx);
    return done(f, used);
}

static size_t feed(proto_framer *f, const char *data, size_t n, proto_line_cb on_line,
                   proto_too_long_cb on_too_long, void *ctx) {
    for (size_t i = 0; i < n; i++) {
        char c = data[i];
        if (f->last_cr) {
            f->last_cr = false;
            if (f->text) {
                if (c == '\n' || c == '\0')
                    continue; /* the rest of a "\r\n" or "\r\0" line end */
            } else if (c == '\n') {
                /* The held-back '\r' of a full line: dropped before '\n'. */
                if (deliver(f, on_line, ctx)) return i + 1;
                continue;
            } else {
                /* The held-back '\r' was data one past the limit. */
                if (too_long(f, on_too_long, ctx)) return i + 1;
                /* c is not '\n', so it belongs to the discarded line. */
                continue;
            }
        }
        if (f->discarding) {
            if (c == '\n') {
                f->discarding = false;
            } else if (c == '\r' && f->text) {
                f->discarding = false;
                f->last_cr = true;
            }
            continue;
        }
        if (c == '\n') {
            /* Text mode never stores a '\r', so this only trims JSON lines. */
            if (f->len > 0 && f->buf[f->len - 1] == '\r' && !f->text) f->len--;
            if (deliver(f, on_line, ctx)) return i + 1;
        } else if (c == '\r' && f->text) {
            f->last_cr = true;
            if (deliver(f, on_line, ctx)) return i + 1;
        } else if (f->len < f->max_line) {
            if (reserve(f) < 0) {
                if (too_long(f, on_too_long, ctx)) return i + 1;
                continue;
            }
            f->buf[f->len++] = c;
        } else if (c == '\r') {
            /* JSON mode, buffer full: a '\r' here is fine if '\n' follows. */
            f->last_cr = true;
        } else if (too_long(f, on_too_long, ctx)) {
            return i + 1;
        }
    }
    return n;
}

proto_mode proto_detect_mode(const unsigned char *data, size_t n) {
    if (n == 0) return PROTO_MODE_UNDECIDED;
    if (data[0] == '{') return PROTO_MODE_JSON;
    if (data[0] == 0xFF) return PROTO_MODE_TELNET;
    return PROTO_MODE_TEXT;
}
