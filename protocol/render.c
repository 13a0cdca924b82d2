/* render.c - boards, scores and end screens as text for humans (CRLF lines, optional ANSI
 * colour). */
#include "render.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- append buffer --- */

void proto_buf_init(proto_buf *b) {
    memset(b, 0, sizeof *b);
}

void proto_buf_free(proto_buf *b) {
    byte_buf_free(&b->bytes);
    memset(b, 0, sizeof *b);
}

/* Makes room for extra bytes plus the NUL (byte_buf doubles the block, so
 * appends cost amortised O(1); a redraw is a few KB, so it settles after a
 * few calls). A failure is sticky. */
static int reserve(proto_buf *b, size_t extra) {
    if (b->failed) return -1;
    /* A first block of 256 bytes, as a screen's first appends are small. */
    size_t want = !b->cap && extra < 255 ? 256 : extra + 1;
    if (extra == SIZE_MAX || byte_buf_reserve(&b->bytes, want) < 0) {
        b->failed = true;
        return -1;
    }
    return 0;
}

int proto_buf_append(proto_buf *b, const void *data, size_t n) {
    if (reserve(b, n) < 0) return -1;
    if (n > 0) memcpy(b->data + b->len, data, n);
    b->len += (uint32_t)n;
    b->data[b->len] = '\0';
    return 0;
}

int proto_buf_puts(proto_buf *b, const char *s) {
    return proto_buf_append(b, s, strlen(s));
}

__attribute__((format(printf, 2, 0))) static int
buf_vprintf(proto_buf *b, const char *fmt, va_list ap) {
    if (b->failed || (!b->cap && reserve(b, 0) < 0)) return -1;
    if (byte_buf_vprintf(&b->bytes, fmt, ap) < 0) {
        b->failed = true;
        return -1;
    }
    return 0;
}

int proto_buf_printf(proto_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

char *proto_buf_take(proto_buf *b, size_t *len) {
    if (b->failed) {
        proto_buf_free(b);
        *len = 0;
        return NULL;
    }
    if (!b->data && reserve(b, 0) == 0) b->data[0] = '\0';
    char *data = b->data;
    *len = b->len;
    memset(b, 0, sizeof *b);
    return data;
}

static void spaces(proto_buf *b, int n) {
    static const char sp[] = "                                ";
    while (n > 0) {
        int k = n < (int)sizeof sp - 1 ? n : (int)sizeof sp - 1;
        proto_buf_append(b, sp, (size_t)k);
        n -= k;
    }
}

static void crlf(proto_buf *b) {
    proto_buf_append(b, "\r\n", 2);
}

int proto_render_text(proto_buf *b, const char *text) {
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 0 && p[n - 1] == '\r') n--; /* already CRLF: keep one '\r' */
        proto_buf_append(b, p, n);
        crlf(b);
        if (!nl) break;
        p = nl + 1;
    }
    return b->failed ? -1 : 0;
}

/* Length of the escape sequence at p (ESC [ ... final byte), or 0. */
static size_t csi_len(const char *p, const char *end) {
    if (p + 1 >= end || p[0] != '\x1b' || p[1] != '[') return 0;
    const char *q = p + 2;
    while (q < end && !(*q >= 0x40 && *q <= 0x7e))
        q++;
    return q < end ? (size_t)(q + 1 - p) : (size_t)(end - p);
}

/* Writes one line [p, end) wrapped to width; returns the lines it took. */
static int wrap_line(proto_buf *b, const char *p, const char *end, int width) {
    int lines = 0;
    do {
        /* The longest piece that fits: up to the last space before the
         * width is passed, or cut at the width if no space is in it. */
        const char *q = p, *space = NULL, *cut = end;
        int w = 0;
        while (q < end) {
            size_t esc = csi_len(q, end);
            if (esc) {
                q += esc;
                continue;
            }
            bool lead = ((unsigned char)*q & 0xc0) != 0x80;
            if (lead && width > 0 && w == width) {
                cut = space && space > p ? space : q;
                break;
            }
            if (*q == ' ') space = q;
            if (lead) w++;
            q++;
        }
        if (b) {
            proto_buf_append(b, p, (size_t)(cut - p));
            crlf(b);
        }
        lines++;
        p = cut;
        while (cut < end && p < end && *p == ' ')
            p++; /* the spaces at a break are not carried to the next line */
    } while (p < end);
    return lines;
}

int proto_render_wrapped(proto_buf *b, const char *text, int width) {
    int lines = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 0 && p[n - 1] == '\r') n--;
        lines += wrap_line(b, p, p + n, width);
        if (!nl) break;
        p = nl + 1;
    }
    return b && b->failed ? -1 : lines;
}

int proto_render_count_lines(const char *data, size_t len) {
    int lines = 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (data[i] == '\r' && data[i + 1] == '\n') lines++;
    return lines;
}

int proto_render_linef(proto_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
    crlf(b);
    return b->failed ? -1 : 0;
}

/* --------------------------------------------------------------- colour --- */

#define SGR_RESET "\x1b[0m"
#define SGR_BOLD  "\x1b[1m"
#define SGR_DIM   "\x1b[2m"

/* One colour per tile exponent (2, 4, 8, ...), warm to hot up to 2048,
 * then cold; beyond the table the last one repeats. */
static const uint8_t tile_256[] = {0,   252, 230, 216, 209, 203, 196, 229, 227, 226, 220,
                                   214, 51,  45,  39,  33,  27,  21,  93,  129, 165, 201};
static const char *const tile_16[] = {"",   "37", "97", "33", "93", "31", "91", "35",
                                      "95", "34", "94", "32", "92", "36", "96"};

static int tile_exp(uint64_t value) {
    int e = 0;
    while (value > 1) {
        value >>= 1;
        e++;
    }
    return e;
}

/* Starts the colour of a tile; returns whether a reset is due after it. */
static bool tile_color(proto_buf *b, proto_color color, uint64_t value) {
    if (color == PROTO_COLOR_OFF || value == 0) return false;
    int e = tile_exp(value);
    const char *bold = e >= 11 ? "1;" : "";
    if (color == PROTO_COLOR_256) {
        int last = (int)(sizeof tile_256 / sizeof tile_256[0]) - 1;
        proto_buf_printf(b, "\x1b[%s38;5;%um", bold, tile_256[e < last ? e : last]);
    } else {
        int last = (int)(sizeof tile_16 / sizeof tile_16[0]) - 1;
        proto_buf_printf(b, "\x1b[%s%sm", bold, tile_16[e < last ? e : last]);
    }
    return true;
}

/* Writes s in the given SGR (e.g. "1" bold, "32" green), plain if colour
 * is off. */
static void styled(proto_buf *b, proto_color color, const char *sgr, const char *s) {
    if (color == PROTO_COLOR_OFF || !sgr) {
        proto_buf_puts(b, s);
        return;
    }
    proto_buf_printf(b, "\x1b[%sm%s" SGR_RESET, sgr, s);
}

static const char *status_sgr(proto_status s) {
    switch (s) {
    case PROTO_WON:
        return "1;32";
    case PROTO_OVER:
        return "31";
    case PROTO_LEFT:
        return "2";
    case PROTO_PLAYING:
        break;
    }
    return NULL;
}

/* ---------------------------------------------------------------- tiles --- */

/* A tile's text; with kilo, from 1024 on in binary prefixes (1k, 2k, ...
 * 64k: at most 3 characters up to 65536), for boards that would not fit the
 * terminal otherwise. */
static void tile_text(uint64_t value, bool kilo, char out[8]) {
    if (value == 0) {
        strcpy(out, ".");
        return;
    }
    if (value < (kilo ? 1024u : 131072u)) {
        snprintf(out, 8, "%u", (unsigned)value);
        return;
    }
    /* 2^e as its mantissa and a binary prefix: 2^17 = 128k, 2^20 = 1M. */
    int e = tile_exp(value);
    snprintf(out, 8, "%u%c", 1u << (e % 10), "kMGTPE"[e / 10 - 1]);
}

void proto_render_tile(uint64_t value, char out[8]) {
    tile_text(value, false, out);
}

/* --------------------------------------------------------------- boards --- */

#define GAP       3 /* columns between boards side by side */
#define CELL_MIN  4 /* tile cells are at least this wide, so 4x4 boards do not jump */
#define NAME_SHOW (PROTO_NAME_MAX + 6)

/* One player's board with its captions, as a column of lines. */
typedef struct block {
    const proto_player *p;
    const char *note; /* shown instead of the status, or NULL */
    int size;
    bool compact;             /* no borders; score and status on one line */
    bool kilo;                /* tiles from 1024 on as 1k, 2k, ... (tile_text) */
    int lines;                /* full: name, top, size rows, bottom, score, moves */
    int width;                /* display columns of the widest line */
    char name[NAME_SHOW + 1]; /* printable, with " (you)" for the viewer */
    bool you;
    char score[32];
    char moves[32]; /* "12 moves", the status follows */
} block;

/* Copies a name, printable ASCII only (names are validated elsewhere, but
 * a terminal must never receive control bytes from another player). */
static void safe_name(char *out, size_t cap, const char *name) {
    size_t n = 0;
    for (const char *p = name ? name : "?"; *p && n + 1 < cap && n < PROTO_NAME_MAX; p++)
        out[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    out[n] = '\0';
}

static int board_width(int size, int cellw) {
    return size * (cellw + 1) + 3;
}

/* The last caption line's text before its status: "12 moves" in the full
 * style, "score 120" in the compact one. */
static const char *last_caption(const block *bk) {
    return bk->compact ? bk->score : bk->moves;
}

static int last_line_width(const block *bk) {
    if (bk->note) return (int)strlen(bk->note);
    return (int)(strlen(last_caption(bk)) + 2 + strlen(proto_status_name(bk->p->status)));
}

static void make_block(block *bk, const proto_player *p, const char *note, bool you,
                       int cellw, bool compact) {
    memset(bk, 0, sizeof *bk);
    bk->p = p;
    bk->note = note;
    bk->you = you;
    bk->compact = compact;
    bk->size = p->board ? p->board->size : 0;
    bk->lines = compact ? bk->size + 2 : bk->size + 5;
    safe_name(bk->name, sizeof bk->name, p->name);
    if (you) strcat(bk->name, " (you)");
    snprintf(bk->score, sizeof bk->score, "score %llu", (unsigned long long)p->score);
    snprintf(bk->moves, sizeof bk->moves, "%u move%s", (unsigned)p->moves,
             p->moves == 1 ? "" : "s");
    int w = board_width(bk->size, cellw);
    int name_w = (int)strlen(bk->name);
    int score_w = compact ? 0 : (int)strlen(bk->score);
    int last_w = last_line_width(bk);
    bk->width = w;
    if (name_w > bk->width) bk->width = name_w;
    if (score_w > bk->width) bk->width = score_w;
    if (last_w > bk->width) bk->width = last_w;
}

static void border(proto_buf *b, const char *left, const char *right, int inner) {
    proto_buf_puts(b, left);
    for (int i = 0; i < inner; i++)
        proto_buf_puts(b, "─");
    proto_buf_puts(b, right);
}

/* The SGR of a note: bold yellow, it is a warning. */
#define NOTE_SGR "1;33"

/* Writes line `line` of a block; returns its display width. */
static int block_line(proto_buf *b, const block *bk, int line, int cellw,
                      proto_color color) {
    int size = bk->size;
    int inner = size * (cellw + 1) + 1;
    if (line == 0) {
        styled(b, color, bk->you ? "1" : NULL, bk->name);
        return (int)strlen(bk->name);
    }
    if (line == bk->lines - 1) {
        /* The last line: "12 moves  playing" (full) or "score 120  playing"
         * (compact); a note takes its place, so that it never widens a board. */
        if (bk->note) {
            styled(b, color, NOTE_SGR, bk->note);
        } else {
            proto_buf_printf(b, "%s  ", last_caption(bk));
            styled(b, color, status_sgr(bk->p->status), proto_status_name(bk->p->status));
        }
        return last_line_width(bk);
    }
    if (!bk->compact) {
        if (line == 1) {
            border(b, "┌", "┐", inner);
            return inner + 2;
        }
        if (line == size + 2) {
            border(b, "└", "┘", inner);
            return inner + 2;
        }
        if (line == size + 3) {
            proto_buf_puts(b, bk->score);
            return (int)strlen(bk->score);
        }
    }
    int row = bk->compact ? line - 1 : line - 2;
    proto_buf_puts(b, "│");
    for (int col = 0; col < size; col++) {
        uint64_t v = eng_cell_value(bk->p->board, row, col);
        char text[8];
        tile_text(v, bk->kilo, text);
        spaces(b, 1 + cellw - (int)strlen(text));
        if (v == 0 && color != PROTO_COLOR_OFF) {
            proto_buf_puts(b, SGR_DIM "." SGR_RESET);
        } else {
            bool reset = tile_color(b, color, v);
            proto_buf_puts(b, text);
            if (reset) proto_buf_puts(b, SGR_RESET);
        }
    }
    proto_buf_puts(b, " │");
    return inner + 2;
}

/* The widest tile text over all boards, and their largest size. */
static int widest_tile(const proto_view *v, bool kilo, int *size) {
    int w = 1;
    *size = 0;
    for (int i = 0; i < v->n; i++) {
        const eng_board *board = v->players[i].board;
        if (!board) continue;
        if (board->size > *size) *size = board->size;
        /* Every cell, not just the largest tile: 65536 is wider than 128k. */
        for (int c = 0; c < board->size * board->size; c++) {
            char text[8];
            tile_text(eng_exp_value(board->cell[c]), kilo, text);
            if ((int)strlen(text) > w) w = (int)strlen(text);
        }
    }
    return w;
}

/* The cells' width, the same on every board: as wide as the widest tile
 * and at least CELL_MIN, unless that makes the boards wider than the
 * terminal; then as narrow as the tiles allow, with 1k, 2k, ... (*kilo)
 * if that is what it takes. */
static int cell_width(const proto_view *v, int width, bool *kilo) {
    int size;
    int w = widest_tile(v, false, &size);
    int cellw = CELL_MIN > w ? CELL_MIN : w;
    while (cellw > w && board_width(size, cellw) > width)
        cellw--;
    *kilo = false;
    if (board_width(size, cellw) > width) {
        int short_w = widest_tile(v, true, &size);
        if (short_w < cellw) {
            cellw = short_w;
            *kilo = true;
        }
    }
    return cellw;
}

/* Writes blocks [from, to) side by side, line by line, without trailing
 * spaces. Beside a full block, a compact one starts a line lower, so that
 * the rows of their tiles are on the same lines. */
static void block_row(proto_buf *b, const block *blocks, int from, int to, int cellw,
                      proto_color color) {
    int lines = 0;
    bool any_full = false;
    for (int k = from; k < to; k++) {
        if (blocks[k].lines > lines) lines = blocks[k].lines;
        if (!blocks[k].compact) any_full = true;
    }
    for (int line = 0; line < lines; line++) {
        int pending = 0;
        for (int k = from; k < to; k++) {
            const block *bk = &blocks[k];
            int at = line - (any_full && bk->compact ? 1 : 0);
            if (at < 0 || at >= bk->lines) {
                pending += bk->width + GAP;
                continue;
            }
            spaces(b, pending);
            int w = block_line(b, bk, at, cellw, color);
            pending = bk->width - w + GAP;
        }
        crlf(b);
    }
}

/* The end of the row of blocks that starts at `from` (blocks side by side
 * while they fit the width, at least one). */
static int row_end(const block *blocks, int from, int n, int width) {
    int to = from + 1, used = blocks[from].width;
    while (to < n && used + GAP + blocks[to].width <= width)
        used += GAP + blocks[to++].width;
    return to;
}

/* Lines the first `nfull` blocks take in rows, with a blank line between
 * rows; plus the one-line summaries of the rest, after a blank line if
 * gap. */
static int boards_lines(const block *blocks, int nfull, int n, int width, bool gap) {
    int lines = 0;
    for (int from = 0; from < nfull;) {
        int to = row_end(blocks, from, nfull, width);
        int tallest = 0;
        for (int k = from; k < to; k++)
            if (blocks[k].lines > tallest) tallest = blocks[k].lines;
        lines += (from > 0) + tallest;
        from = to;
    }
    if (nfull < n) lines += (gap && nfull > 0) + (n - nfull);
    return lines;
}

/* One player in one line: name, score, max tile, status (or note), cut to
 * the width. */
static void summary_line(proto_buf *b, const block *bk, int width, proto_color color) {
    char tile[8], text[128];
    proto_render_tile(bk->p->board ? eng_max_tile(bk->p->board) : 0, tile);
    int n = snprintf(text, sizeof text, "%s  score %llu  max %s  ", bk->name,
                     (unsigned long long)bk->p->score, tile);
    const char *st = bk->note ? bk->note : proto_status_name(bk->p->status);
    if (n < 0) n = 0;
    if (n >= width) {
        proto_buf_append(b, text, (size_t)width);
        crlf(b);
        return;
    }
    proto_buf_append(b, text, (size_t)n);
    char shown[64];
    snprintf(shown, sizeof shown, "%.*s", width - n, st);
    styled(b, color, bk->note ? NOTE_SGR : status_sgr(bk->p->status), shown);
    crlf(b);
}

/* The title line(s): "race2048  room K7Q2  target 2048  0:58 left  watching
 * commit 3f2a9c1e", its parts moved to a new line when the width is reached;
 * brief: without "watching" (or "replaying") and the commit (on a short
 * terminal). */
static int title(proto_buf *b, const proto_view *v, int width, bool brief) {
    char parts[5][48];
    int n = 0;
    if (v->room)
        snprintf(parts[n++], sizeof parts[0], "room %s", v->room);
    else
        snprintf(parts[n++], sizeof parts[0], "solo");
    if (v->target)
        snprintf(parts[n++], sizeof parts[0], "target %llu",
                 (unsigned long long)v->target);
    if (v->clock) snprintf(parts[n++], sizeof parts[0], "%s", v->clock);
    if (!brief && v->replay)
        snprintf(parts[n++], sizeof parts[0], "replaying");
    else if (!brief && v->you == 0 && v->room)
        snprintf(parts[n++], sizeof parts[0], "watching");
    if (!brief && v->commit)
        snprintf(parts[n++], sizeof parts[0], "commit %.16s", v->commit);
    int lines = 1, used = 8;
    if (b) styled(b, v->color, "1", "race2048");
    for (int i = 0; i < n; i++) {
        int w = (int)strlen(parts[i]);
        if (used + 2 + w > width) {
            if (b) crlf(b);
            lines++;
            used = 0;
        } else {
            if (b) proto_buf_puts(b, "  ");
            used += 2;
        }
        if (b) proto_buf_puts(b, parts[i]);
        used += w;
    }
    if (b) crlf(b);
    return lines;
}

/* What a redraw leaves out on a short terminal, in the order it gives them
 * up so that the viewer's board stays whole: the blank lines around the
 * boards (and the title's "watching" and commit), then the hint, then the
 * status, then the title. */
enum { CHROME_ALL, CHROME_NO_BLANKS, CHROME_NO_HINT, CHROME_NO_STATUS, CHROME_NO_TITLE };

/* The chosen layout: the blocks' style, how many are drawn in full, and how
 * many of the others get a summary line. */
typedef struct layout {
    const block *blocks;
    int nfull, nsummary;
} layout;

/* The most blocks of `blocks` that fit avail lines in full, with a summary
 * line for every other player; -1 if not even none do. */
static int fit_all(const block *blocks, int n, int width, int avail, bool gap) {
    for (int m = n; m >= 0; m--)
        if (boards_lines(blocks, m, n, width, gap) <= avail) return m;
    return -1;
}

int proto_render_game(proto_buf *b, const proto_view *v) {
    int width = v->width > 0 ? v->width : 80;
    size_t start = b->len;
    int n_title = title(NULL, v, width, false);
    int n_brief = title(NULL, v, width, true);
    int n_status = v->status ? proto_render_wrapped(NULL, v->status, width) : 0;
    int n_hint = v->hint ? proto_render_wrapped(NULL, v->hint, width) : 0;

    /* The blocks in three styles (full; the viewer's full and the others
     * compact; all compact), in drawing order: the viewer's first, then the
     * others in room order. */
    block *full = v->n > 0 ? calloc((size_t)v->n * 3, sizeof *full) : NULL;
    if (v->n > 0 && !full) {
        b->failed = true;
        return -1;
    }
    block *mixed = full ? full + v->n : NULL, *compact = full ? full + 2 * v->n : NULL;
    bool kilo;
    int cellw = cell_width(v, width, &kilo);
    int k = 0;
    bool has_you = false;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < v->n; i++) {
            bool you = v->you && v->players[i].id == v->you;
            if (you != (pass == 0)) continue;
            has_you = has_you || you;
            const char *note = v->notes ? v->notes[i] : NULL;
            make_block(&full[k], &v->players[i], note, you, cellw, false);
            make_block(&compact[k], &v->players[i], note, you, cellw, true);
            full[k].kilo = compact[k].kilo = kilo;
            mixed[k] = you ? full[k] : compact[k];
            k++;
        }
    }
    const block *styles[3] = {full, has_you ? mixed : compact, compact};

    /* The first of the chrome levels at which some style shows every player
     * (the first board in full, the others in full or as summaries); if
     * none does, the first at which the first board fits at all, with as
     * many summaries as fit. The style: the one that shows most boards in
     * full, the earlier on a tie. */
    layout lay = {full, v->n, 0};
    int chrome = CHROME_ALL;
    if (v->height > 0 && v->n > 0) {
        bool found = false;
        for (int pass = 0; pass < 2 && !found; pass++) {
            for (chrome = CHROME_ALL; chrome <= CHROME_NO_TITLE && !found; chrome++) {
                int head = chrome == CHROME_ALL ? n_title : n_brief;
                int avail = v->height - (chrome < CHROME_NO_TITLE ? head : 0) -
                            (chrome < CHROME_NO_STATUS ? n_status : 0) -
                            (chrome < CHROME_NO_HINT ? n_hint : 0) -
                            (chrome == CHROME_ALL ? 1 + (v->status || v->hint) : 0);
                for (int st = 0; st < 3; st++) {
                    int m;
                    if (pass == 0) {
                        m = fit_all(styles[st], v->n, width, avail, chrome == CHROME_ALL);
                        if (m < 1 || (found && m <= lay.nfull)) continue;
                        lay = (layout){styles[st], m, v->n - m};
                    } else {
                        if (styles[st][0].lines > avail) continue;
                        int rest = avail - styles[st][0].lines - (chrome == CHROME_ALL);
                        if (rest > v->n - 1) rest = v->n - 1;
                        lay = (layout){styles[st], 1, rest > 0 ? rest : 0};
                        found = true;
                        break;
                    }
                    found = true;
                }
                if (found) break;
            }
        }
        if (!found) { /* not even the first board fits: the summaries that do */
            chrome = CHROME_NO_TITLE;
            lay = (layout){full, 0, v->n < v->height ? v->n : v->height};
        }
    } else {
        lay.nsummary = 0;
    }

    proto_buf_puts(b, "\x1b[H\x1b[2J");
    if (chrome < CHROME_NO_TITLE) title(b, v, width, chrome != CHROME_ALL);
    if (chrome == CHROME_ALL) crlf(b);
    for (int from = 0; from < lay.nfull;) {
        int to = row_end(lay.blocks, from, lay.nfull, width);
        if (from > 0) crlf(b);
        block_row(b, lay.blocks, from, to, cellw, v->color);
        from = to;
    }
    if (lay.nsummary > 0) {
        if (lay.nfull > 0 && chrome == CHROME_ALL) crlf(b);
        for (int i = lay.nfull; i < lay.nfull + lay.nsummary; i++)
            summary_line(b, &lay.blocks[i], width, v->color);
    }
    free(full);

    if (chrome == CHROME_ALL && (v->status || v->hint)) crlf(b);
    if (v->status && chrome < CHROME_NO_STATUS) proto_render_wrapped(b, v->status, width);
    if (v->hint && chrome < CHROME_NO_HINT) proto_render_wrapped(b, v->hint, width);
    /* Should anything still be over the height (a terminal too narrow for
     * the lines counted), the lines beyond it are left out (colour is reset
     * at every line end). */
    if (v->height > 0 && !b->failed) {
        int lines = 0;
        for (size_t i = start; i + 1 < b->len; i++) {
            if (b->data[i] != '\r' || b->data[i + 1] != '\n') continue;
            if (++lines == v->height) {
                b->len = i + 2;
                b->data[b->len] = '\0';
                break;
            }
        }
    }
    return b->failed ? -1 : 0;
}

/* ------------------------------------------------------------ end screen --- */

static const char *reason_text(proto_end_reason r) {
    switch (r) {
    case PROTO_END_TARGET:
        return "reached the target";
    case PROTO_END_ALL_OVER:
        return "no moves left";
    case PROTO_END_TIME:
        return "time is up";
    case PROTO_END_FORFEIT:
        return "everyone else left";
    }
    return "";
}

/* Wraps what was gathered in tmp into b at the width, and empties tmp. */
static void flush_wrapped(proto_buf *b, proto_buf *tmp, int width) {
    if (tmp->failed) {
        b->failed = true;
    } else if (tmp->len) {
        proto_render_wrapped(b, tmp->data, width);
    }
    proto_buf_free(tmp);
}

/* Appends "label token" as one line if it fits the width; else the label
 * alone ("label:") and the token on a line of its own. A token is never
 * split: on a terminal narrower than the token, the terminal wraps that
 * line, and copying it copies the token whole. */
static void token_lines(proto_buf *b, const char *label, const char *token, int width) {
    if ((int)(strlen(label) + 1 + strlen(token)) <= width)
        proto_render_linef(b, "%s %s", label, token);
    else
        proto_render_linef(b, "%s:\r\n%s", label, token);
}

/* Moves a part into b if it fits the rows left (all of them with no
 * height); returns whether it did. tmp is emptied either way. */
static bool put_part(proto_buf *b, proto_buf *tmp, int width, int *left) {
    bool fits = false;
    if (tmp->failed) {
        b->failed = true;
    } else if (tmp->len) {
        int rows = proto_render_count_rows(tmp->data, tmp->len, width);
        if (*left < 0 || rows <= *left) {
            proto_buf_append(b, tmp->data, tmp->len);
            if (*left >= 0) *left -= rows;
            fits = true;
        }
    }
    proto_buf_free(tmp);
    return fits;
}

int proto_render_end(proto_buf *b, const proto_end_view *e) {
    int width = e->width > 0 ? e->width : 80;
    int left = e->height > 0 ? e->height : -1; /* rows left; -1: no limit */
    const proto_player *winner = NULL;
    bool all_left = true;
    for (int i = 0; i < e->n; i++) {
        if (e->winner && e->results[i].id == e->winner) winner = &e->results[i];
        if (e->results[i].status != PROTO_LEFT) all_left = false;
    }

    proto_buf t, w;
    proto_buf_init(&t);
    proto_buf_init(&w);
    if (e->room)
        proto_buf_printf(&t, "Race over in room %s: ", e->room);
    else
        proto_buf_puts(&t, "Game over: ");
    if (!e->room) {
        proto_buf_puts(&t, all_left && e->n > 0 ? "you left" : reason_text(e->reason));
    } else if (winner) {
        char name[NAME_SHOW + 1];
        safe_name(name, sizeof name, winner->name);
        styled(&t, e->color, "1;32", name);
        proto_buf_printf(&t, " wins - %s", reason_text(e->reason));
    } else if (all_left) {
        proto_buf_puts(&t, "no winner - everyone left");
    } else {
        proto_buf_printf(&t, "a draw - %s", reason_text(e->reason));
    }
    /* The verdict comes whatever the height (the caller keeps room for it). */
    flush_wrapped(&w, &t, width);
    int verdict_rows = w.failed ? 0 : proto_render_count_rows(w.data, w.len, width);
    if (left >= 0) left = left > verdict_rows ? left - verdict_rows : 0;
    if (w.failed) b->failed = true;
    if (w.len) proto_buf_append(b, w.data, w.len);
    proto_buf_free(&w);

    /* The aligned table needs 78 columns; narrower, the columns close up.
     * On a short terminal, the ranking is cut after the lines that fit. */
    bool narrow = width < 78;
    for (int i = 0; i < e->n; i++) {
        const proto_player *p = &e->results[i];
        char name[NAME_SHOW + 1], tile[8];
        safe_name(name, sizeof name, p->name);
        if (e->you && p->id == e->you) strcat(name, " (you)");
        proto_render_tile(p->board ? eng_max_tile(p->board) : 0, tile);
        proto_buf_printf(&t, "%2d. ", i + 1);
        styled(&t, e->color, p == winner ? "1;32" : NULL, name);
        if (narrow) {
            proto_buf_printf(&t, "  score %llu  max %s  ", (unsigned long long)p->score,
                             tile);
        } else {
            spaces(&t, NAME_SHOW - (int)strlen(name));
            proto_buf_printf(&t, "  score %8llu  max %5s  %5u move%s  ",
                             (unsigned long long)p->score, tile, (unsigned)p->moves,
                             p->moves == 1 ? " " : "s");
        }
        styled(&t, e->color, status_sgr(p->status), proto_status_name(p->status));
        flush_wrapped(&w, &t, width);
        if (!put_part(b, &w, width, &left)) break;
    }

    /* The seed, salt and commit, all or none: half of them checks nothing.
     * One line for a client's seed and the salt if it fits, else one each. */
    char seed[ENG_SEED_TEXT_MAX];
    eng_seed_format(&e->seed, seed, sizeof seed);
    if (e->commit && !e->salt) {
        /* A commit without its salt: a daily game's, whose seed and salt stay
         * secret until its day is over (its seed here is no seed). */
        proto_render_wrapped(
            &t, "seed and salt: secret until the day is over (00:00 UTC)", width);
    } else if (e->salt && (int)(strlen(seed) + strlen(e->salt) + 12) <= width &&
               e->seed.kind != ENG_SEED_SERVER) {
        proto_render_linef(&t, "seed %s  salt %s", seed, e->salt);
    } else {
        token_lines(&t, "seed", seed, width);
        if (e->salt) token_lines(&t, "salt", e->salt, width);
    }
    if (e->commit) token_lines(&t, "commit", e->commit, width);
    if (!put_part(b, &t, width, &left)) {
        proto_render_wrapped(&t, "(A larger window shows the seed and commit.)", width);
        put_part(b, &t, width, &left);
    } else if (e->commit && e->salt) {
        if (width >= 67)
            proto_render_linef(
                &t, "%s",
                "Check: printf '%s' 'SALT:SEED' | sha256sum must print the "
                "commit.");
        else
            proto_render_wrapped(&t,
                                 "This must print the commit:\n"
                                 "printf '%s' 'SALT:SEED' | sha256sum",
                                 width);
        put_part(b, &t, width, &left);
    }
    return b->failed ? -1 : 0;
}

int proto_render_count_rows(const char *data, size_t len, int width) {
    int rows = 0, w = 0;
    for (size_t i = 0; i < len; i++) {
        size_t esc = csi_len(data + i, data + len);
        if (esc) {
            i += esc - 1;
            continue;
        }
        if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') {
            rows += width > 0 && w > width ? (w + width - 1) / width : 1;
            w = 0;
            i++;
            continue;
        }
        if (((unsigned char)data[i] & 0xc0) != 0x80) w++;
    }
    return rows;
}

/* --------------------------------------------------------------- replay --- */

proto_status proto_replay_status(const eng_board *board, uint64_t target, size_t shown,
                                 size_t nmoves, proto_status final, bool last) {
    if (last) return final;
    if (final == PROTO_LEFT && shown >= nmoves) return PROTO_LEFT;
    if (eng_is_over(board)) return PROTO_OVER;
    if (target && eng_has_won(board, target)) return PROTO_WON;
    return PROTO_PLAYING;
}

int proto_status_parse(const char *name, proto_status *out) {
    static const proto_status all[] = {PROTO_PLAYING, PROTO_WON, PROTO_OVER, PROTO_LEFT};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, proto_status_name(all[i])) != 0) continue;
        *out = all[i];
        return 0;
    }
    return -1;
}

/* ------------------------------------------------------------- accounts --- */

int proto_render_registered(proto_buf *b, const char *name, const char *key) {
    proto_render_linef(b, "The name %s is yours now. Your key, shown", name);
    proto_render_linef(b, "only this once (write it down):");
    proto_render_linef(b, "  %s", key);
    proto_render_linef(b, "Next time, type this to log in:");
    proto_render_linef(b, "  login %s %s", name, key);
    return b->failed ? -1 : 0;
}

int proto_render_leaderboard(proto_buf *b, const proto_board_row *rows, int n) {
    proto_render_linef(b, "Best ratings (10 races or more):");
    if (n == 0) proto_render_linef(b, "  nobody yet: rated races are quick ones");
    for (int i = 0; i < n; i++)
        proto_render_linef(b, "  %3llu. %-16s %5d  %u races",
                           (unsigned long long)rows[i].rank, rows[i].name, rows[i].rating,
                           rows[i].games);
    return b->failed ? -1 : 0;
}

int proto_render_daily_board(proto_buf *b, const char *day, int size,
                             const proto_daily_row *rows, int n) {
    proto_render_linef(b, "Daily challenge %s, %dx%d:", day, size, size);
    if (n == 0) proto_render_linef(b, "  nobody yet: type daily %d to play it", size);
    if (n > 0)
        proto_render_linef(b, "       %-16s %7s %6s %6s", "name", "score", "tile",
                           "moves");
    for (int i = 0; i < n; i++)
        proto_render_linef(b, "  %3llu. %-16s %7u %6u %6u",
                           (unsigned long long)rows[i].rank, rows[i].name, rows[i].score,
                           rows[i].max_tile, rows[i].moves);
    return b->failed ? -1 : 0;
}

int proto_render_profile(proto_buf *b, const proto_profile *p) {
    proto_render_linef(b, "%s: rating %d%s", p->name, p->rating.rating,
                       p->rating.provisional ? " (provisional)" : "");
    proto_render_linef(b, "  %u rated races, %u won", p->races, p->wins);
    if (p->nchart > 0) {
        /* The newest values that fit one line, oldest first. */
        int from = p->nchart > 8 ? p->nchart - 8 : 0;
        proto_buf_puts(b, "  rating after each race:");
        for (int i = from; i < p->nchart; i++)
            proto_buf_printf(b, " %d", (int)p->chart[i]);
        proto_buf_puts(b, "\r\n");
    }
    for (int i = 0; i < p->nbest; i++)
        proto_render_linef(b, "  best %dx%d: %llu (tile %u), game %llu", p->best[i].size,
                           p->best[i].size, (unsigned long long)p->best[i].score,
                           p->best[i].max_tile, (unsigned long long)p->best[i].game);
    if (p->nrecent > 0) {
        proto_buf_puts(b, "  recent games (replay ID):");
        for (int i = 0; i < p->nrecent && i < 5; i++)
            proto_buf_printf(b, " %llu", (unsigned long long)p->recent[i]);
        proto_buf_puts(b, "\r\n");
    }
    return b->failed ? -1 : 0;
}
