/* tt.h - text-mode test helpers: raw byte clients, screen parsing, tmux, checks.
 *
 * The server itself is run by the server tests' harness (harness.h:
 * server_start, server_stop, harness_teardown, harness_ms), which this builds
 * on; what is here is what only the text tests need.
 *
 * Every function here that can go wrong fails the running cmocka test
 * (fail_msg) instead of returning an error, so tests read as scripts; the
 * functions that wait return false on a timeout instead, so a test can say
 * what it was waiting for. Nothing here sleeps to synchronise: every wait
 * polls for what it expects until a deadline.
 */
#ifndef RACE2048_TESTS_TT_H
#define RACE2048_TESTS_TT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"
#include "harness.h"

/* Default deadline for one expected thing, before the slowdown factor. */
#define TT_WAIT 10000

/* The DCS-wrapped telnet offer a silent client gets first. */
#define TT_PROBE_DCS     "\x1b\x50\xff\xfb\x01\xff\xfb\x03\xff\xfd\x1f\x1b\x5c"
#define TT_PROBE_DCS_LEN 13
/* The plain offer a client that spoke telnet first gets. */
#define TT_OFFER     "\xff\xfb\x01\xff\xfb\x03\xff\xfd\x1f"
#define TT_OFFER_LEN 9
/* What inetutils-telnet answers: DO ECHO, DO SGA, WILL NAWS, NAWS 100x30. */
#define TT_TELNET_ANSWER                                                                 \
    "\xff\xfd\x01\xff\xfd\x03\xff\xfb\x1f\xff\xfa\x1f\x00\x64\x00\x1e\xff\xf0"
#define TT_TELNET_ANSWER_LEN 18
/* Every redraw starts with cursor-home and clear-screen. */
#define TT_CLEAR "\x1b[H\x1b[2J"

/* ------------------------------------------------------------- clients --- */

/* A raw client: every byte the server sent, kept from the start. */
typedef struct tt_client {
    int fd;
    char *buf;
    size_t len, cap;
    bool eof;
} tt_client;

/* Connects over loopback with TCP_NODELAY (so that separate sends leave as
 * separate segments). Fails the test if the connection fails. */
void tt_connect(tt_client *c, int port);
/* The same from another loopback address (e.g. "127.0.0.2"). */
void tt_connect_from(tt_client *c, int port, const char *source);
/* Closes the socket and frees the buffer. Safe twice. */
void tt_close(tt_client *c);
/* Sends bytes as they are; fails the test on a broken socket. */
void tt_send(tt_client *c, const void *data, size_t n);
void tt_sends(tt_client *c, const char *str);
/* Sends data one write per piece of `step` bytes, with a pause of `gap_us`
 * between writes so that the server most likely reads them separately (the
 * test passes whether or not it does: the pause only makes the split path
 * likely, it synchronises nothing). */
void tt_send_split(tt_client *c, const void *data, size_t n, size_t step, int gap_us);

/* Reads until needle (n bytes) occurs at or after offset `from` in c->buf,
 * the connection ends, or ms pass. Returns the offset of the match, or -1. */
long tt_wait_for(tt_client *c, size_t from, const void *needle, size_t n, int ms);
long tt_wait_str(tt_client *c, size_t from, const char *needle, int ms);
/* Reads until the server closes the connection (EOF or reset) or ms pass;
 * returns true on EOF. */
bool tt_wait_eof(tt_client *c, int ms);
/* Reads until the newest screen (the text after the last TT_CLEAR at or
 * after `from`) satisfies pred, the connection ends, or ms pass. The screen
 * handed to pred is plain text (see tt_screen_text). Returns true if pred
 * held. */
bool tt_wait_screen(tt_client *c, size_t from,
                    bool (*pred)(const char *screen, void *arg), void *arg, int ms,
                    char *screen, size_t cap);

/* Offset of needle in hay[from..len), or -1. */
long tt_find(const char *hay, size_t len, size_t from, const void *needle, size_t n);

/* -------------------------------------------------------------- checks --- */

/* Each check returns NULL if the bytes are fine, else what is wrong (a
 * static string, valid until the next check); the tt_assert_ forms fail the
 * test with that.
 *
 * crlf: every '\n' in data is preceded by '\r'. */
const char *tt_crlf_problem(const char *data, size_t len);
void tt_assert_crlf_only(const char *data, size_t len);
/* iac: every 0xFF in data starts a complete, valid telnet command (IAC IAC,
 * IAC WILL/WONT/DO/DONT opt, IAC SB ... IAC SE, or IAC and a one-byte
 * command): a data 0xFF was doubled. */
const char *tt_iac_problem(const char *data, size_t len);
void tt_assert_iac_valid(const char *data, size_t len);
/* pane: a capture shows nothing a human should never see: U+FFFD, the
 * characters 0xFB-0xFF bytes become in Latin-1, control bytes, `{"type"`
 * JSON, "[?", "^[", a backslash or a line-leading "P" left by the DCS probe, or
 * bytes that are not UTF-8. */
const char *tt_pane_problem(const char *pane);
void tt_assert_clean_pane(const char *pane, const char *what);

/* -------------------------------------------------------------- screens --- */

/* The newest screen of a byte stream (the text after the last TT_CLEAR at or
 * after `from`, or everything from `from` if there is none) as plain text:
 * telnet commands, escape sequences and '\r' removed. Writes a
 * NUL-terminated string to out (truncated to cap). */
void tt_screen_text(const char *data, size_t len, size_t from, char *out, size_t cap);

/* The k-th board (0 = the leftmost, the viewer's) drawn on a screen (plain
 * text, e.g. a tmux capture): fills *b and returns true, or false if the
 * screen shows no such board. */
bool tt_screen_board(const char *screen, int k, eng_board *b);
/* The move count under the k-th board, or -1 if there is none. */
int tt_screen_moves(const char *screen, int k);
/* A direction in which b can move (the first of right, left, down, up that
 * changes it); fails the test if none does. */
eng_dir tt_movable_dir(const eng_board *b);
/* The same, trying the four directions in `order`. */
eng_dir tt_movable_dir_in(const eng_board *b, const eng_dir order[4]);
/* True if the boards differ. */
bool tt_board_differs(const eng_board *a, const eng_board *b);

/* ----------------------------------------------------------------- tmux --- */

/* A private tmux server (its own -L socket), for panes running telnet or nc. */
typedef struct tt_tmux {
    char socket[64];
    bool started;
} tt_tmux;

/* Fails the test with a clear message if tmux, telnet or nc is not
 * installed (scripts/test installs them; the tests never skip). */
void tt_require_tools(void);
/* Names a fresh tmux server socket, unique to this process and call. */
void tt_tmux_init(tt_tmux *t);
/* Opens a session `name` of cols x rows running cmd (a shell command line
 * without single quotes); the pane stays after cmd exits, so its last words
 * can be read. Fails the test if tmux fails. */
void tt_tmux_open(tt_tmux *t, const char *name, int cols, int rows, const char *cmd);
/* Types text literally (no key names; no single quotes in text). */
void tt_tmux_type(tt_tmux *t, const char *name, const char *text);
/* Presses one named key: Enter, Right, Left, Up, Down, C-c, ... */
void tt_tmux_key(tt_tmux *t, const char *name, const char *key);
/* The visible pane as plain text (capture-pane -p). */
void tt_tmux_capture(tt_tmux *t, const char *name, char *out, size_t cap);
/* Polls the pane every 50 ms until pred holds or ms pass; the last capture
 * is left in out. Returns true if pred held. */
bool tt_tmux_wait(tt_tmux *t, const char *name, bool (*pred)(const char *pane, void *arg),
                  void *arg, int ms, char *out, size_t cap);
/* The same, waiting for needle to appear in the pane. */
bool tt_tmux_wait_str(tt_tmux *t, const char *name, const char *needle, int ms, char *out,
                      size_t cap);
/* True once the program in the pane has exited. */
bool tt_tmux_dead(tt_tmux *t, const char *name);
/* Kills the tmux server and everything in it. Safe twice. */
void tt_tmux_kill(tt_tmux *t);

/* Predicate for tt_wait_screen / tt_tmux_wait: arg is a NUL-terminated needle. */
bool tt_has(const char *text, void *needle);

/* What tt_has_moves waits for: board k shows at least n moves. */
typedef struct tt_moves {
    int k, n;
} tt_moves;
/* Predicate for tt_wait_screen / tt_tmux_wait: arg is a tt_moves. */
bool tt_has_moves(const char *text, void *moves);

/* A temporary folder for one test's journal ("/tmp/r2048-TAG-XXXXXX/j"). */
typedef struct tt_journal {
    char dir[64];
    char path[96];
} tt_journal;
/* Makes the folder; 0, or -1 if it cannot. */
int tt_journal_make(tt_journal *j, const char *tag);
/* Removes the journal, the files the server keeps beside it and the folder. */
void tt_journal_remove(const tt_journal *j);

#endif
