/* render.h - boards, scores and end screens as text for humans (CRLF lines, optional ANSI
 * colour). */
#ifndef RACE2048_RENDER_H
#define RACE2048_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "byte_buf.h"
#include "message.h"

/* ------------------------------------------------------- append buffer --- */

/* Output is gathered here and written once. An append that runs out of
 * memory marks the buffer failed; later appends do nothing, so a caller
 * checks once at the end (every function below returns -1 from then on).
 * The storage is a byte_buf (the one growable buffer); its fields keep the
 * names callers read, data and len. */
typedef struct proto_buf {
    union {
        byte_buf bytes; /* grown by byte_buf_reserve */
        struct {        /* the same fields, as callers read them */
            char *data; /* the bytes, NUL-terminated after len once anything was added */
            uint32_t len; /* bytes in data, not counting that NUL */
            uint32_t cap; /* bytes allocated */
        };
    };
    bool failed; /* an append ran out of memory: the contents are incomplete */
} proto_buf;

/* Starts an empty buffer; allocates nothing. Cannot fail. */
void proto_buf_init(proto_buf *b);

/* Releases the memory; b is empty and usable again. Safe twice. */
void proto_buf_free(proto_buf *b);

/* Appends n bytes. Returns 0, or -1 if memory ran out now or before. */
int proto_buf_append(proto_buf *b, const void *data, size_t n);

/* Appends a NUL-terminated string. Returns 0 or -1 as proto_buf_append. */
int proto_buf_puts(proto_buf *b, const char *s);

/* Appends printf-formatted text. Returns 0 or -1 as proto_buf_append. */
int proto_buf_printf(proto_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Hands the bytes over: returns the malloc'd data (the caller frees it;
 * NUL-terminated) and its length in *len, and leaves b empty. Returns NULL
 * if the buffer failed (its memory is released) or if memory runs out for
 * an empty buffer. */
char *proto_buf_take(proto_buf *b, size_t *len);

/* --------------------------------------------------------------- render --- */

typedef enum proto_color {
    PROTO_COLOR_OFF, /* plain text: no escape sequence but the clear-screen */
    PROTO_COLOR_16,  /* SGR 30-37 / 90-97, for terminals without 256 colours */
    PROTO_COLOR_256, /* SGR 38;5;N */
} proto_color;

/* What a redraw shows. */
typedef struct proto_view {
    const proto_player *players; /* everyone in the game, in room order */
    int n;                       /* how many (at least 1) */
    uint64_t you;                /* the viewer's player id; 0 for a spectator */
    const char *room;            /* room code, NULL for a solo game */
    uint64_t target;             /* the target tile, 0 to leave it out */
    int width;                   /* terminal columns; 0 (unknown) means 80 */
    proto_color color;
    const char *status; /* a line about what just happened, or NULL */
    const char *hint;   /* what to type next, or NULL */
    /* Lines this redraw may take (its CRLFs); 0 means no limit. A caller that
     * writes a prompt after it passes the terminal's rows minus one. */
    int height;
    /* Per player (parallel to players), a note shown instead of its status,
     * e.g. "connection lost, 23 s"; NULL, or NULL entries, for none. */
    const char *const *notes;
    const char *commit; /* a prefix of the game's commit for the title, or NULL */
    /* The time left of a race with a time limit, e.g. "0:58 left", shown in
     * the title (also the brief one); NULL for none. */
    const char *clock;
    bool replay; /* a recorded game played back: the title says "replaying" */
} proto_view;

/* Appends a full redraw: cursor-home and clear-screen (ESC[H ESC[2J), the
 * title with the room code, then the boards: the viewer's first and every
 * other player's beside it while they fit in the width, on further rows
 * otherwise; under each board its player's name, score, moves and status;
 * then the status and hint lines, word-wrapped to the width. Tiles are
 * right-aligned in cells as wide as the largest tile (values from 2^17 up
 * are written 128k, 1M, ...), so an 8x8 board stays within 51 columns; on
 * a narrower terminal the cells shrink to the tiles, and if that is not
 * enough tiles from 1024 on are written 1k, 2k, ... (an 8x8 board then
 * takes 35 columns). A 2-player 4x4 race takes 49 columns and 14 lines.
 * With a height, the redraw never takes more lines, and the viewer's board
 * is drawn whole whenever the height holds it: it shows as many boards in
 * full as fit, in the full style, the full style for the viewer's and a
 * compact one (no borders, score and status on one line) for the others,
 * or compact for all, whichever shows more (the earlier on a tie), and
 * every other player as a one-line summary (name, score, max tile,
 * status). Where not even the viewer's board and the summaries fit, it
 * gives up, in this order, the blank lines with the title's "watching"
 * and commit, the hint, the status, the title, then summaries; lines
 * beyond the height are left out.
 * Lines end in CRLF.
 * Returns 0, or -1 if memory ran out (see proto_buf). */
int proto_render_game(proto_buf *b, const proto_view *v);

/* What the end screen shows. */
typedef struct proto_end_view {
    const char *room; /* NULL for a solo game */
    proto_end_reason reason;
    uint64_t winner;             /* player id, 0 for a draw or no winner */
    uint64_t you;                /* the viewer's id, 0 for a spectator */
    const proto_player *results; /* ranked, best first */
    int n;
    eng_seed seed;    /* shown as end writes it */
    const char *salt; /* 32 hex digits, or NULL to leave it out */
    proto_color color;
    const char *commit; /* the full commit from `start`, or NULL */
    int width;          /* terminal columns; 0 (unknown) means 80 */
    /* Terminal rows this may take, 0 for no limit: the verdict always, then
     * the ranking lines that fit, then the seed, salt and commit (or, if
     * they do not fit, one line saying a larger window shows them), then
     * how to check them. */
    int height;
} proto_end_view;

/* Appends the end screen (no clear-screen, so it can follow the last
 * boards): who won and why, every player's rank, score, max tile, moves
 * and status, the revealed seed and salt, and with a commit, the commit
 * and how to check them. Lines are wrapped to the width at words and end
 * in CRLF; the seed, salt and commit are never split: "seed TOKEN" where
 * it fits, else "seed:" and the token alone on the next line (which a
 * terminal narrower than the token wraps itself, so that a copy of it is
 * whole). Returns 0, or -1 if memory ran out. */
int proto_render_end(proto_buf *b, const proto_end_view *e);

/* Appends text as lines: every '\n' (with or without a '\r' before it)
 * becomes "\r\n", and a last line without one gets it. Other bytes pass
 * through unchanged. Returns 0, or -1 if memory ran out. */
int proto_render_text(proto_buf *b, const char *text);

/* Appends text as proto_render_text does, each line word-wrapped to width
 * columns (0: no wrapping; a word longer than the width is cut). Escape
 * sequences take no width and are never cut. Returns the number of lines
 * written, or -1 if memory ran out. With b NULL, only counts them. */
int proto_render_wrapped(proto_buf *b, const char *text, int width);

/* The terminal rows the CRLF-ended lines in data[0..len) take at width
 * columns: one per line, more for a line wider than the width (the
 * terminal wraps it). Escape sequences take no width. Cannot fail. */
int proto_render_count_rows(const char *data, size_t len, int width);

/* Counts the CRLF-ended lines in data[0..len). Cannot fail. */
int proto_render_count_lines(const char *data, size_t len);

/* Appends one printf-formatted line and "\r\n". Returns 0, or -1 if memory
 * ran out. */
int proto_render_linef(proto_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The text of one tile value as the boards show it: "2" ... "65536", then
 * "128k", "256k", ..., "1M", ... (at most 5 characters). 0 gives ".".
 * Writes a NUL-terminated string to out. Cannot fail. */
void proto_render_tile(uint64_t value, char out[8]);

/* ---------------------------------------------------------------- replay --- */

/* A player's status in one frame of a recorded game played back, from its
 * board at that frame and what the record says at the end: `shown` of its
 * `nmoves` moves are on the board, `final` is its recorded status and
 * `last` says the frame is the game's last. The rule (protocol/README.md,
 * "The journal"): a player recorded as left is left from the frame of its
 * last move on (from the first frame if it made none), since the record
 * keeps no time of leaving; any other is over once its board is stuck, won
 * from the move that made the target tile, playing before; and the last
 * frame shows every recorded status. Cannot fail. */
proto_status proto_replay_status(const eng_board *board, uint64_t target, size_t shown,
                                 size_t nmoves, proto_status final, bool last);

/* Reads a status name ("playing", "won", "over", "left") into *out; returns
 * 0, or -1 (out untouched) for anything else, NULL included. */
int proto_status_parse(const char *name, proto_status *out);

/* Accounts in text mode (lines end in CRLF, none wider than 50 columns but
 * for long game ids). Each returns 0, or -1 if memory ran out. */

/* `registered`: the key, this once, and the line to type next time. */
int proto_render_registered(proto_buf *b, const char *name, const char *key);

/* The rating leaderboard: rank, name, rating and races, one row a line. */
int proto_render_leaderboard(proto_buf *b, const proto_board_row *rows, int n);

/* A daily board (day "YYYY-MM-DD", size): rank, name, score, max tile and
 * moves, one row a line. */
int proto_render_daily_board(proto_buf *b, const char *day, int size,
                             const proto_daily_row *rows, int n);

/* A `profile`: rating, races and wins, the rating's last values as a line of
 * numbers, and the recent games (as `replay ID` takes them). */
int proto_render_profile(proto_buf *b, const proto_profile *p);
/* An arena (render_arena.c): its state and time left at now_ms, its
 * standings, and the reader's own row (you NULL: not an entrant). */
int proto_render_arena(proto_buf *b, const proto_arena_info *a,
                       const proto_arena_row *you, int64_t now_ms);
/* The arenas list, one line each. */
int proto_render_arenas(proto_buf *b, const proto_arena_info *a, int n, int64_t now_ms);

#endif
