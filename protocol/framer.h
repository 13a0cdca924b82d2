/* framer.h - splits a byte stream into lines with a fixed length limit, and detects the
 * mode. */
#ifndef RACE2048_FRAMER_H
#define RACE2048_FRAMER_H

#include <stdbool.h>
#include <stddef.h>

/* The framer holds a buffer only while a line is unfinished: it is made on
 * the first byte of a partial line, grows by doubling up to max_line + 1
 * bytes, and is released when a feed ends between lines. Whatever a client
 * sends, a connection's line state never takes more than max_line + 1
 * bytes, and an idle connection's takes none.
 *
 * JSON mode: only '\n' ends a line; a '\r' just before it is dropped (also
 * when the '\r' and the '\n' arrive in different feeds). Text mode: '\n',
 * "\r\n", a lone '\r' and "\r\0" each end one line (telnet sends Enter as
 * "\r\0" in character mode, "\r\n" in line mode; `nc -C` may deliver the
 * '\r' and the '\n' in separate feeds: still one line end). NUL bytes inside
 * a line are data in both modes. */
typedef struct proto_framer {
    char *buf;       /* the partial line, NULL when there is none */
    size_t cap;      /* bytes allocated at buf, at most max_line + 1 */
    size_t len;      /* bytes of the current partial line, never above max_line */
    size_t max_line; /* longest line accepted, not counting the terminator */
    bool text;       /* text mode: a lone '\r' and "\r\0" also end a line */
    bool discarding; /* inside an over-long line: drop bytes until its end */
    /* Text mode: the previous byte was a '\r' that ended a line, so a '\n'
     * or '\0' right after it belongs to the same line end. JSON mode: a '\r'
     * arrived when the buffer was full; it is held back here because it is
     * dropped if a '\n' follows and makes the line too long otherwise. */
    bool last_cr;
} proto_framer;

/* Sets up f, in JSON mode (text false) or text mode; allocates nothing.
 * max_line must be at least 1. Returns 0, or -1 if max_line is 0 (f is then
 * unusable, but proto_framer_free() on it is safe). */
int proto_framer_init(proto_framer *f, size_t max_line, bool text);

/* Releases the buffer. Safe on a framer whose init failed, and twice. */
void proto_framer_free(proto_framer *f);

/* Called per complete line (terminator removed, a '\r' before '\n' removed;
 * in JSON mode never empty: empty lines are skipped; in text mode an empty
 * line is handed over too, as len 0). `line` is valid only during the
 * call and is NUL-terminated at line[len] for convenience (but may contain
 * NUL bytes itself: len is the truth). Return 0 to go on, non-zero to stop
 * feeding (e.g. the connection is closing). */
typedef int (*proto_line_cb)(void *ctx, const char *line, size_t len);

/* Called once when a line passes max_line; the rest of that line is
 * discarded up to its end. Return 0 to go on, non-zero to stop. */
typedef int (*proto_too_long_cb)(void *ctx);

/* Feeds n bytes. on_line must not be NULL; on_too_long may be NULL (the
 * over-long line is then dropped silently). Returns how many bytes were
 * consumed: n, or fewer if a callback asked to stop (the bytes after the
 * stopping line's terminator, or after the byte that made a line too long,
 * are left unconsumed, so the caller can re-feed them elsewhere, e.g. after
 * switching the connection's mode). Allocates only to hold an unfinished
 * line; if memory runs out, that line is treated as too long. The
 * callbacks must not free f; they may call proto_framer_set_text(). */
size_t proto_framer_feed(proto_framer *f, const char *data, size_t n,
                         proto_line_cb on_line, proto_too_long_cb on_too_long, void *ctx);

/* Switches text-mode terminators on or off; keeps any partial line. A '\r'
 * that ended a text line no longer swallows a following '\n' once in JSON
 * mode (that '\n' then ends an empty line, which is skipped anyway). */
void proto_framer_set_text(proto_framer *f, bool text);

/* How a connection speaks, decided by its first byte. */
typedef enum proto_mode {
    PROTO_MODE_UNDECIDED, /* nothing received yet */
    PROTO_MODE_JSON,      /* first byte '{' */
    PROTO_MODE_TELNET,    /* first byte 0xFF (IAC): a telnet client negotiating */
    PROTO_MODE_TEXT,      /* anything else: a human, maybe on netcat */
} proto_mode;

/* From the first byte a client sent: '{' JSON, 0xFF telnet, anything else
 * text; n == 0 undecided. Cannot fail. */
proto_mode proto_detect_mode(const unsigned char *data, size_t n);

#endif
