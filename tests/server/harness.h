/* harness.h - integration test harness: runs the real race2048d and talks JSON lines to
 * it.
 *
 * Every function here fails the running cmocka test (fail_msg) instead of
 * returning an error, so tests read as scripts. Servers and clients are
 * tracked by the harness: harness_teardown() closes every client, stops every
 * server and fails the test if one did not exit 0 (a crash, or a leak found by
 * ASan or valgrind). JSON objects the harness returns are borrowed: they stay
 * valid until harness_teardown().
 *
 * Environment: RACE2048D (path of the server binary, required),
 * RACE2048D_WRAPPER (a command line prefixed to it, e.g. valgrind ...),
 * RACE2048_TEST_SLOWDOWN (multiplies every deadline, default 1).
 */
#ifndef RACE2048_TESTS_HARNESS_H
#define RACE2048_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* cmocka's fail_msg() ends in _fail(), which longjmps out of the test and never
 * returns, but cmocka.h does not say so. Saying it here lets the compiler see
 * that code after a failed check is unreachable (gcc 12 otherwise warns, e.g.
 * -Wstringop-overflow on a write it thinks can follow a failed bounds check). */
#if defined(__GNUC__)
void _fail(const char *const file, const int line) __attribute__((noreturn));
#endif

/* Default deadline for one expected message, before the slowdown factor. */
#define WAIT 5000

/* ------------------------------------------------------------- servers --- */

typedef struct th_server {
    pid_t pid;
    int port; /* from the first `listening on` line */
    bool stopped;
    int out_fd;     /* the server's stdout, read by server_stdout_line() */
    char out[1024]; /* bytes read from it and not yet returned */
    size_t outlen;
    char line[256]; /* the last line returned */
    /* RACE2048_TEST_SPREAD=1: a second node of a cluster that serves every
     * other client of this server (the same tests, players spread over two
     * nodes); NULL otherwise. */
    struct th_server *peer;
    unsigned connects; /* clients made so far (which node gets the next) */
} th_server;

/* Starts race2048d with the standard arguments (--host 127.0.0.1 --port 0
 * --seed 42 --log-level warn --journal none --max-games-per-min 0: tests
 * start many games from one address; --http-port off: nothing takes 8048; --quick-bots 0)
 * plus `extra` (NULL-terminated, may be NULL; later flags win) and waits for its
 * `listening on` line.
 */
th_server *server_start(const char *const *extra);
/* With RACE2048_TEST_SPREAD=1 in the environment, server_start starts a
 * nats-server (once per test program) and two nodes of a cluster on it, and
 * clients of the server connect to each node in turn; stopping or killing
 * the server stops both. Tests that start their own cluster (--cluster) are
 * left alone. */
#define SERVER(...) server_start((const char *const[]){__VA_ARGS__, NULL})

/* Servers started after this write their stderr (their log) to the file at
 * path, made afresh by each start; NULL, the default, leaves it the test's.
 * The path is copied. */
void harness_server_stderr(const char *path);

/* The next line s printed on stdout, without its newline; fails the test if
 * none comes within ms. After server_start(), s->line holds the first line
 * (`race2048d listening on ADDR:PORT`) and this returns the ones after it.
 * The result is s->line, valid until the next call. */
const char *server_stdout_line(th_server *s, int ms);

/* True in spread mode (RACE2048_TEST_SPREAD=1): a test of a per-node matter
 * (a node's own limits, its log, its metrics) skips itself there. */
bool harness_spread(void);
/* SIGTERM, then waits for the exit; fails the test if the server does not
 * exit in time (it is then killed) or died of a signal. Returns the exit code. */
int server_stop(th_server *s);
/* The same with another signal (SIGINT). */
int server_signal_stop(th_server *s, int sig);
/* kill -9, and reaps it: a crash as far as the server can tell. */
void server_kill(th_server *s);

/* cmocka teardown: closes every client, stops every server, fails if one
 * exited non-zero, and frees the JSON objects handed out. */
int harness_teardown(void **state);

/* Deadline ms scaled by RACE2048_TEST_SLOWDOWN. */
int harness_ms(int ms);
/* Latency bounds relative to the same run, for tests that prove a load leaves
 * another client's round trips alone: measure the idle p99 first (baseline),
 * then the loaded one may be at most
 *     max(LATENCY_TIMES x baseline, baseline + harness_latency_ms(margin_ms)).
 * A stall of the loop (work served synchronously) still fails it; the
 * machine's other tests and a sanitizer build's cost do not. */
enum { LATENCY_TIMES = 10 };
int64_t harness_latency_bound(int64_t baseline_ms, int margin_ms);
/* A time a test asserts as an upper bound (a latency margin, a documented
 * promise such as "SIGTERM exits within 2 s"): ms times RACE2048_TEST_SLOWDOWN,
 * times LATENCY_SANITIZED in a build with AddressSanitizer (the server's every
 * allocation and access checked costs CPU, and the suite shares the cores). */
enum { LATENCY_SANITIZED = 4 };
int harness_latency_ms(int ms);
/* The monotonic clock in ms, for deadlines. */
int64_t harness_now_ms(void);
/* Milliseconds left until deadline (a harness_now_ms() value), 0 once past. */
int harness_remaining(int64_t deadline);

/* The server's resident memory in KiB, from /proc (0 if it cannot be read). */
long server_rss_kib(const th_server *s);
/* Memory bounds are about what the server holds: shrinks ASan's quarantine of
 * freed memory (256 MB by default) in the environment servers inherit, so
 * that RSS does not measure past traffic. Call before starting servers;
 * without ASan the variable is ignored. */
void harness_small_asan_quarantine(int mb);

/* ------------------------------------------------------------- clients --- */

typedef struct client client;

/* Connects to s over loopback. rcvbuf > 0 sets SO_RCVBUF before connecting.
 * A JSON client must send its first line at once (mode detection). */
client *client_connect(th_server *s);
client *client_connect_rcvbuf(th_server *s, int rcvbuf);
/* Connects to another port of s's address (e.g. its --http-port). */
client *client_connect_port(th_server *s, int port);
/* Connects from another loopback address (e.g. "127.0.0.2"), so that the
 * server counts the client under that address. */
client *client_connect_from(th_server *s, const char *source);
/* Both: to another port of s's address, from another loopback address (a
 * client behind a balancer that listens on port). */
client *client_connect_port_from(th_server *s, int port, const char *source);
/* Binds a socket about to connect to that source address (any port). */
void harness_bind_source(int fd, const char *source);
/* Closes the socket (the server sees EOF). */
void client_close(client *c);
/* Closes with an RST instead (SO_LINGER 0). */
void client_abort(client *c);

/* Sends one line (printf format; the '\n' is added). */
void client_send(client *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Sends bytes as they are. Fails the test if the socket is broken, unless
 * tolerate_error, in which case it returns false. */
bool client_send_raw(client *c, const void *data, size_t len, bool tolerate_error);

/* The next JSON object from the server (lines not starting with '{' are
 * skipped); NULL on EOF or a reset connection. Fails the test on a timeout
 * or a line that is not a compact JSON object with a string "type". */
json_t *client_next(client *c, int ms);
/* The next object if one arrives within ms; NULL on a timeout or EOF (for
 * asserting that something does not come). */
json_t *client_next_or_null(client *c, int ms);
/* The next object, which must have this type (fails otherwise). */
json_t *client_expect(client *c, const char *type, int ms);
/* The next object of this type, skipping objects whose type is in `skip`
 * (space-separated, e.g. "state player"); any other type fails. */
json_t *client_expect_skip(client *c, const char *type, const char *skip, int ms);
/* The next object must be an error with this code. */
json_t *client_expect_error(client *c, const char *code, int ms);
/* The server must close the connection next: EOF (or a reset) before any object. */
void client_expect_eof(client *c, int ms);
/* Discards everything up to EOF or a reset; returns the bytes discarded. */
size_t client_drain_to_eof(client *c, int ms);
/* Raw bytes: up to len bytes that arrive within ms (at least one unless EOF);
 * returns the count, 0 on EOF. Reads the harness's line buffer first. */
size_t client_read_raw(client *c, void *buf, size_t len, int ms);
/* True if nothing at all (no byte, no EOF) arrives for ms, which is not
 * scaled: a lower bound on a silence. */
bool client_quiet_for(client *c, int ms);
/* Waits until at least one byte is buffered (or EOF) and returns how many
 * are, without consuming them. */
size_t client_peek_raw(client *c, int ms);
/* The objects of skipped types seen by client_expect_skip since the last
 * call to this (a JSON array, borrowed), then forgets them. */
json_t *client_skipped(client *c);

/* A fresh directory for this test's files (/tmp/r2048-NAME-XXXXXX),
 * removed with everything in it by harness_teardown(). */
const char *harness_temp_dir(const char *name);
/* A whole file as a NUL-terminated string (malloc'd); its length in *len
 * (may be NULL). Fails the test if it cannot be read. */
char *harness_read_file(const char *path, size_t *len);

/* A raw, non-blocking TCP socket connected to s over loopback (rcvbuf > 0
 * sets SO_RCVBUF first), for tests that speak bytes rather than JSON. */
int harness_raw_connect(const th_server *s, int rcvbuf);

/* Runs a program (argv[0] is its path, argv NULL-terminated), its stdin
 * closed; returns its exit status (128 + signal if it died of one) and, if
 * out is not NULL, its stdout (malloc'd, NUL-terminated). */
int harness_run(const char *const *argv, char **out);

/* The token of the last welcome c received ("" before any). */
const char *client_token(const client *c);
/* hello NAME then its welcome; returns the welcome. */
json_t *client_hello(client *c, const char *name);
/* A new client of s that has said hello NAME and got its welcome. */
client *client_named(th_server *s, const char *name);
/* True when a line has no whitespace outside its strings (compact JSON). */
bool harness_compact(const char *s, size_t n);
/* A round trip: ping with a unique t, and the very next object must be its
 * pong. Proves nothing else was queued for c before it. */
void client_sync(client *c);
/* Round trips of n client_sync()s while the server is under load, sorted
 * (n <= TH_PINGS_MAX), and the server's highest RSS seen between them. */
enum { TH_PINGS_MAX = 64 };
typedef struct th_pings {
    int n;
    int64_t rtt_ms[TH_PINGS_MAX]; /* ascending */
    long rss_max_kib;
} th_pings;
th_pings client_pings(const th_server *s, client *c, int n);
/* A move; returns the `state` that answers it, skipping `player` messages
 * and other players' states (those are kept in client_skipped()). */
json_t *client_move(client *c, const char *dir);

/* Tries left, up, right, down until a move changes the board; returns that
 * state (fails if none does). */
json_t *client_move_any(client *c);

/* The next object of this type, skipping any other (fails if none within ms). */
json_t *client_wait_for(client *c, const char *type, int ms);
/* Sends the bytes of a C string as they are (raw HTTP, broken frames...). */
void client_send_str(client *c, const char *s);

/* The browsers' port s printed after `listening on` (its `race2048d http on
 * 127.0.0.1:PORT` line; fails if it is not there or is the game port). */
int server_http_port(th_server *s);
/* A server with a browsers' port too (--http-port 0; its port in *http), plus
 * the flags in extra (NULL-terminated, may be NULL). */
th_server *server_with_http(int *http, const char *const *extra);
/* How many distinct `game` records of room `code` the journals at paths hold
 * (missing files count none). */
int harness_game_records(const char *const *paths, int n, const char *code);

/* --------------------------------------------------------------- limits --- */

/* Raises this process's descriptor limit (the server inherits it) to fit n
 * clients, or skips the test if the hard limit is too low. */
void fit_fds(int n);
/* The same for a need of its own (descriptors in all), for how_many clients. */
void fit_fds_for(long long need, int how_many);
/* dir/name.journal, in one of 4 static buffers (a node's journal path). */
const char *harness_journal_of(const char *dir, const char *name);

/* ----------------------------------------------------------- scenarios --- */

/* n named clients (p0, p1, ...) in a race: the first creates a room with
 * "players":n plus the JSON members in `fields` (e.g. "\"size\":3"), the
 * others join, everyone gets `start`. starts (may be NULL) receives each
 * client's start. Returns the room code (borrowed). */
const char *race_start(th_server *s, int n, const char *fields, client **out,
                       json_t **starts);

/* ---------------------------------------------------------------- JSON --- */

/* Field getters that fail the test if the field is missing or of another type. */
json_int_t jint(const json_t *o, const char *field);
const char *jstr(const json_t *o, const char *field);
bool jbool(const json_t *o, const char *field);
json_t *jarr(const json_t *o, const char *field);
json_t *jobj(const json_t *o, const char *field);
bool jnull(const json_t *o, const char *field); /* present and null */
bool jhas(const json_t *o, const char *field);
/* The player object with this id in a list (fails if absent). */
json_t *jplayer(const json_t *list, json_int_t id);
/* True if two JSON values are equal. */
bool jequal(const json_t *a, const json_t *b);

/* A number field (integer or real) as a double; fails the test otherwise. */
double jreal(const json_t *o, const char *field);

/* Keeps o (a new reference) until teardown and returns it. */
json_t *harness_keep(json_t *o);

#endif
