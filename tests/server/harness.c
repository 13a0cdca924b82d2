/* harness.c - integration test harness: runs the real race2048d and talks JSON lines to
 * it.
 */
#define _GNU_SOURCE /* syscall(SYS_pidfd_open), pipe2 */
#include "harness.h"
#include "natsd.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#define MAX_SERVERS 32 /* a test may restart a node many times */
#define MAX_CLIENTS 512

struct client {
    int fd; /* -1 once closed */
    char *buf;
    size_t len, cap;
    bool eof;
    json_int_t id;  /* from the last welcome seen, 0 before */
    char token[80]; /* likewise */
    uint64_t next_seq;
    json_t *skipped;
};

static th_server servers[MAX_SERVERS];
static int nservers;
static client *clients[MAX_CLIENTS];
static int nclients;
static json_t *pool; /* every object handed out, freed at teardown */

/* --------------------------------------------------------------- timing --- */

int harness_ms(int ms) {
    static double factor;
    if (factor == 0) {
        const char *env = getenv("RACE2048_TEST_SLOWDOWN");
        factor = env && *env ? strtod(env, NULL) : 1;
        if (factor < 1) factor = 1;
    }
    return (int)(ms * factor);
}

/* Both compilers' ways of saying AddressSanitizer is on. */
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_SANITIZED 1
#endif
#endif
#ifndef HARNESS_SANITIZED
#define HARNESS_SANITIZED 0
#endif

int harness_latency_ms(int ms) {
    return harness_ms(HARNESS_SANITIZED ? ms * LATENCY_SANITIZED : ms);
}

int64_t harness_latency_bound(int64_t baseline_ms, int margin_ms) {
    int64_t times = baseline_ms * LATENCY_TIMES;
    int64_t plus = baseline_ms + harness_latency_ms(margin_ms);
    return times > plus ? times : plus;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(int64_t deadline) {
    int64_t left = deadline - now_ms();
    return left < 0 ? 0 : (int)left;
}

int64_t harness_now_ms(void) {
    return now_ms();
}

int harness_remaining(int64_t deadline) {
    return remaining(deadline);
}

long server_rss_kib(const th_server *s) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
    FILE *f = fopen(path, "r");
    long kib = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

void harness_small_asan_quarantine(int mb) {
    const char *old = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%squarantine_size_mb=%d", old ? old : "",
             old && *old ? ":" : "", mb);
    setenv("ASAN_OPTIONS", opts, 1);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

th_pings client_pings(const th_server *s, client *c, int n) {
    th_pings p = {.n = n < TH_PINGS_MAX ? n : TH_PINGS_MAX};
    for (int i = 0; i < p.n; i++) {
        int64_t t0 = now_ms();
        client_sync(c);
        p.rtt_ms[i] = now_ms() - t0;
        long r = server_rss_kib(s);
        if (r > p.rss_max_kib) p.rss_max_kib = r;
    }
    qsort(p.rtt_ms, (size_t)p.n, sizeof p.rtt_ms[0], cmp_i64);
    return p;
}

json_t *harness_keep(json_t *o) {
    if (!pool) pool = json_array();
    json_array_append_new(pool, o);
    return o;
}

/* ------------------------------------------------------------- servers --- */

static void kill_leftovers(void) {
    for (int i = 0; i < nservers; i++)
        if (!servers[i].stopped) kill(servers[i].pid, SIGKILL);
}

/* Waits for pid to exit until deadline; returns true with *status, false on timeout. */
static bool wait_exit(pid_t pid, int64_t deadline, int *status) {
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            if (pidfd >= 0) close(pidfd);
            return false;
        }
        int left = remaining(deadline);
        if (left == 0) {
            if (pidfd >= 0) close(pidfd);
            return false;
        }
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            poll(&p, 1, left);
        } else {
            poll(NULL, 0, left < 10 ? left : 10); /* no pidfd: check again soon */
        }
    }
    if (pidfd >= 0) close(pidfd);
    return true;
}

static void close_out(th_server *s) {
    if (s->out_fd >= 0) close(s->out_fd);
    s->out_fd = -1;
}

/* Moves the next stdout line of s into s->line, waiting up to ms; returns
 * NULL if none comes in time (or stdout closes first). */
static const char *read_out_line(th_server *s, int ms) {
    int64_t deadline = now_ms() + ms;
    char *nl;
    while (!(nl = memchr(s->out, '\n', s->outlen))) {
        if (s->out_fd < 0 || s->outlen == sizeof s->out) return NULL;
        struct pollfd p = {.fd = s->out_fd, .events = POLLIN};
        if (poll(&p, 1, remaining(deadline)) <= 0) return NULL;
        ssize_t r = read(s->out_fd, s->out + s->outlen, sizeof s->out - s->outlen);
        if (r <= 0) {
            close_out(s);
            continue;
        }
        s->outlen += (size_t)r;
    }
    size_t n = (size_t)(nl - s->out);
    snprintf(s->line, sizeof s->line, "%.*s", (int)n, s->out);
    memmove(s->out, nl + 1, s->outlen - n - 1);
    s->outlen -= n + 1;
    return s->line;
}

const char *server_stdout_line(th_server *s, int ms) {
    const char *line = read_out_line(s, harness_ms(ms));
    if (!line) fail_msg("no line from the server's stdout within %d ms", harness_ms(ms));
    return line;
}

static char server_stderr_path[4096];

void harness_server_stderr(const char *path) {
    snprintf(server_stderr_path, sizeof server_stderr_path, "%s", path ? path : "");
}

static th_server *start_one(const char *const *extra);
bool harness_spread(void);

static bool spread_wanted(const char *const *extra) {
    if (!harness_spread()) return false;
    for (int i = 0; extra && extra[i]; i++)
        if (!strcmp(extra[i], "--cluster")) return false;
    return true;
}

/* Two nodes of a cluster, the second one the first's peer. */
static th_server *start_spread(const char *const *extra) {
    static int nodes;
    natsd_start_lasting();
    const char *argv[64];
    int argc = 0;
    for (int i = 0; extra && extra[i] && argc < 58; i++)
        argv[argc++] = extra[i];
    char name[2][16];
    th_server *node[2];
    for (int k = 0; k < 2; k++) {
        snprintf(name[k], sizeof name[k], "n%d", ++nodes);
        const char *const more[] = {"--cluster", natsd_url, "--node", name[k]};
        for (int i = 0; i < 4; i++)
            argv[argc + i] = more[i];
        argv[argc + 4] = NULL;
        node[k] = start_one(argv);
    }
    for (int k = 0; k < 2; k++)
        natsd_wait_metric(node[k], "race2048_cluster_nodes", 2, 15000);
    node[0]->peer = node[1];
    return node[0];
}

th_server *server_start(const char *const *extra) {
    return spread_wanted(extra) ? start_spread(extra) : start_one(extra);
}

static th_server *start_one(const char *const *extra) {
    static bool atexit_done;
    if (!atexit_done) {
        atexit(kill_leftovers);
        atexit_done = true;
    }
    const char *bin = getenv("RACE2048D");
    if (!bin || !*bin) fail_msg("RACE2048D is not set (the ctest registration sets it)");
    if (nservers == MAX_SERVERS) fail_msg("too many servers in one test");

    /* argv: the wrapper's words, the binary, the standard flags, the extras. */
    char *words = strdup(getenv("RACE2048D_WRAPPER") ? getenv("RACE2048D_WRAPPER") : "");
    const char *argv[64];
    int argc = 0;
    for (char *save, *w = strtok_r(words, " ", &save); w && argc < 32;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    argv[argc++] = bin;
    /* No journal unless a test asks for one (in a directory of its own): tests
     * must not litter the directory they run in. */
    static const char *const standard[] = {"--host", "127.0.0.1", "--port", "0", "--seed",
                                           "42", "--log-level", "warn", "--journal",
                                           "none",
                                           /* Tests start games in bursts from one
                                            * address; the limit's own tests set it. */
                                           "--max-games-per-min", "0",
                                           /* Tests run in parallel: none may take
                                            * the default 8048; the http port's
                                            * tests ask for one (0). */
                                           "--http-port", "off",
                                           /* A lone `quick` stays queued: the
                                            * bots' tests ask for --quick-bots. */
                                           "--quick-bots", "0"};
    for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++)
        argv[argc++] = standard[i];
    for (int i = 0; extra && extra[i] && argc < 63; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;

    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) fail_msg("pipe: %s", strerror(errno));
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int err_fd = -1;
    if (server_stderr_path[0]) {
        err_fd = open(server_stderr_path,
                      O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (err_fd < 0) {
            int e = errno;
            close(out[0]);
            close(out[1]);
            if (devnull >= 0) close(devnull);
            fail_msg("cannot open %s: %s", server_stderr_path, strerror(e));
        }
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* The server must not outlive a test that crashed or aborted. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        dup2(devnull, 0);
        dup2(out[1], 1);
        if (err_fd >= 0) dup2(err_fd, 2);
        execvp(argv[0], (char *const *)argv); /* the wrapper may be a bare name */
        _exit(127);
    }
    int spawn_errno = errno;
    close(out[1]);
    close(devnull);
    if (err_fd >= 0) close(err_fd);
    if (pid < 0) {
        close(out[0]);
        free(words);
        fail_msg("cannot start %s: %s", argv[0], strerror(spawn_errno));
    }
    th_server *s = &servers[nservers++];
    *s = (th_server){.pid = pid, .out_fd = out[0]};

    /* The first stdout line says where it listens (more lines may follow:
     * one per address when --host names several). */
    const char *line = read_out_line(s, harness_ms(20000));
    const char *colon = line ? strrchr(line, ':') : NULL;
    if (!line || strncmp(line, "race2048d listening on ", 23) || !colon ||
        atoi(colon + 1) <= 0) {
        kill(pid, SIGKILL);
        int status;
        wait_exit(pid, now_ms() + harness_ms(5000), &status);
        s->stopped = true;
        close_out(s);
        free(words);
        fail_msg("%s did not say where it listens; stdout was \"%.*s\"", bin,
                 (int)s->outlen, s->out);
    }
    s->port = atoi(colon + 1);
    free(words);
    return s;
}

/* Waits for s, signalled already, to exit; returns its exit code, or -1
 * with why in err. */
static int wait_stopped(th_server *s, int sig, char *err, size_t errlen) {
    int status = 0;
    if (!wait_exit(s->pid, now_ms() + harness_ms(15000), &status)) {
        kill(s->pid, SIGKILL);
        wait_exit(s->pid, now_ms() + 5000, &status);
        snprintf(err, errlen, "the server (pid %d) did not exit after signal %d; killed",
                 (int)s->pid, sig);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(err, errlen, "the server died of signal %d", WTERMSIG(status));
        return -1;
    }
    return WEXITSTATUS(status);
}

static bool signal_once(th_server *s, int sig) {
    if (s->stopped) return false;
    s->stopped = true;
    close_out(s);
    kill(s->pid, sig);
    return true;
}

/* Stops s (and its peer, signalled at the same moment, as one server is);
 * returns the exit code, or -1 with why in err. */
static int stop_quiet(th_server *s, int sig, char *err, size_t errlen) {
    bool peer = s->peer && signal_once(s->peer, sig);
    bool self = signal_once(s, sig);
    int code = self ? wait_stopped(s, sig, err, errlen) : 0;
    if (peer) {
        char perr[160] = "";
        int pcode = wait_stopped(s->peer, sig, perr, sizeof perr);
        if (code >= 0 && pcode != 0) {
            code = pcode;
            snprintf(err, errlen, "the second node: %s", perr);
        }
    }
    return code;
}

int server_signal_stop(th_server *s, int sig) {
    char err[160];
    int code = stop_quiet(s, sig, err, sizeof err);
    if (code < 0) fail_msg("%s", err);
    return code;
}

int server_stop(th_server *s) {
    return server_signal_stop(s, SIGTERM);
}

bool harness_spread(void) {
    const char *spread = getenv("RACE2048_TEST_SPREAD");
    return spread && !strcmp(spread, "1");
}

void server_kill(th_server *s) {
    if (s->peer) server_kill(s->peer);
    if (s->stopped) return;
    s->stopped = true;
    kill(s->pid, SIGKILL);
    int status = 0;
    if (!wait_exit(s->pid, now_ms() + harness_ms(5000), &status))
        fail_msg("the server (pid %d) did not die of SIGKILL", (int)s->pid);
}

/* Directories made by harness_temp_dir(), removed at teardown. */
static char temp_dirs[8][64];
static int ntemp_dirs;

const char *harness_temp_dir(const char *name) {
    if (ntemp_dirs == 8) fail_msg("more than 8 temporary directories in one test");
    char *d = temp_dirs[ntemp_dirs];
    snprintf(d, sizeof temp_dirs[0], "/tmp/r2048-%s-XXXXXX", name);
    if (!mkdtemp(d)) fail_msg("mkdtemp: %s", strerror(errno));
    ntemp_dirs++;
    return d;
}

char *harness_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
    size_t cap = 65536, n = 0;
    char *data = malloc(cap);
    for (size_t r; data && (r = fread(data + n, 1, cap - n - 1, f)) > 0;)
        if ((n += r) + 1 == cap) data = realloc(data, cap *= 2);
    fclose(f);
    if (!data) fail_msg("out of memory reading %s", path);
    data[n] = '\0';
    if (len) *len = n;
    return data;
}

int harness_teardown(void **state) {
    for (int i = 0; i < nclients; i++) {
        client *c = clients[i];
        if (c->fd >= 0) close(c->fd);
        free(c->buf);
        json_decref(c->skipped);
        free(c);
    }
    nclients = 0;
    char errors[512] = "";
    for (int i = 0; i < nservers; i++) {
        char err[160] = "";
        int code = stop_quiet(&servers[i], SIGTERM, err, sizeof err);
        if (code > 0)
            snprintf(err, sizeof err, "the server exited with %d (see its stderr)", code);
        if (*err && strlen(errors) + strlen(err) + 3 < sizeof errors) {
            strcat(errors, err);
            strcat(errors, "; ");
        }
    }
    nservers = 0;
    json_decref(pool);
    pool = NULL;
    for (int i = 0; i < ntemp_dirs; i++) {
        char cmd[sizeof temp_dirs + 16]; /* gcc sizes %s by the whole array */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", temp_dirs[i]);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", temp_dirs[i]);
    }
    ntemp_dirs = 0;
    if (*errors) fail_msg("teardown: %s", errors);
    return 0;
}

/* ------------------------------------------------------------- clients --- */

/* Binds fd to source (an IPv4 address of loopback such as 127.0.0.2) with any
 * port, so that the server sees the connection come from that address. */
void harness_bind_source(int fd, const char *source) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, source, &a.sin_addr) != 1)
        fail_msg("not an IPv4 address: %s", source);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        fail_msg("bind to %s: %s", source, strerror(errno));
}

static client *connect_port(th_server *s, int port, int rcvbuf, const char *source) {
    if (nclients == MAX_CLIENTS) fail_msg("too many clients in one test");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (source) harness_bind_source(fd, source);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        fail_msg("connect to port %d: %s", port, strerror(e));
    }
    client *c = calloc(1, sizeof *c);
    c->fd = fd;
    c->skipped = json_array();
    clients[nclients++] = c;
    return c;
}

static client *connect_client(th_server *s, int rcvbuf, const char *source) {
    th_server *to = s->peer && s->connects++ % 2 ? s->peer : s;
    return connect_port(s, to->port, rcvbuf, source);
}

client *client_connect_port(th_server *s, int port) {
    return connect_port(s, port, 0, NULL);
}

client *client_connect_port_from(th_server *s, int port, const char *source) {
    return connect_port(s, port, 0, source);
}

client *client_connect_rcvbuf(th_server *s, int rcvbuf) {
    return connect_client(s, rcvbuf, NULL);
}

client *client_connect(th_server *s) {
    return connect_client(s, 0, NULL);
}

client *client_connect_from(th_server *s, const char *source) {
    return connect_client(s, 0, source);
}

void client_close(client *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

void client_abort(client *c) {
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    if (c->fd >= 0) setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    client_close(c);
}

bool client_send_raw(client *c, const void *data, size_t len, bool tolerate_error) {
    if (c->fd < 0) fail_msg("send on a closed client");
    const char *p = data;
    int64_t deadline = now_ms() + harness_ms(WAIT);
    while (len > 0) {
        struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
        if (poll(&pf, 1, remaining(deadline)) <= 0) {
            if (tolerate_error) return false;
            fail_msg("timed out sending %zu bytes", len);
        }
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) {
            if (tolerate_error) return false;
            fail_msg("send: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

void client_send(client *c, const char *fmt, ...) {
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line - 1) fail_msg("client_send: line too long");
    line[n++] = '\n';
    client_send_raw(c, line, (size_t)n, false);
}

/* Reads what is there into c->buf; returns bytes read, 0 on EOF or reset, -1 on
 * timeout. */
static ssize_t read_more(client *c, int64_t deadline) {
    if (c->fd < 0) fail_msg("read on a closed client");
    if (c->eof) return 0;
    if (c->cap - c->len < 65536) {
        c->cap = c->cap * 2 + 65536;
        c->buf = realloc(c->buf, c->cap);
    }
    for (;;) {
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int r = poll(&pf, 1, remaining(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) { /* EOF, or ECONNRESET: either way the server closed */
            c->eof = true;
            return 0;
        }
        c->len += (size_t)n;
        return n;
    }
}

/* The server promises compact lines: no whitespace outside strings. */
bool harness_compact(const char *s, size_t n) {
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        if (in_str) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                in_str = false;
        } else if (s[i] == '"') {
            in_str = true;
        } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
            return false;
        }
    }
    return true;
}

/* Takes the next complete line out of c->buf into a new object, or returns
 * NULL if no complete JSON line is buffered. */
static json_t *take_line(client *c) {
    for (;;) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        if (!nl) return NULL;
        size_t n = (size_t)(nl - c->buf);
        char line[1 << 16];
        if (n >= sizeof line) fail_msg("a server line of %zu bytes", n);
        memcpy(line, c->buf, n);
        line[n] = '\0';
        memmove(c->buf, nl + 1, c->len - n - 1);
        c->len -= n + 1;
        if (n == 0 || line[0] != '{') continue; /* text-mode bytes: not for us */
        if (!harness_compact(line, n))
            fail_msg("server line is not compact JSON: %s", line);
        json_error_t err;
        json_t *o = json_loadb(line, n, 0, &err);
        if (!o || !json_is_object(o))
            fail_msg("server sent a line that is not a JSON object (%s): %s", err.text,
                     line);
        if (!json_is_string(json_object_get(o, "type")))
            fail_msg("server object without a string type: %s", line);
        harness_keep(o);
        if (!strcmp(json_string_value(json_object_get(o, "type")), "welcome") &&
            json_is_integer(json_object_get(o, "id"))) {
            c->id = json_integer_value(json_object_get(o, "id"));
            const char *t = json_string_value(json_object_get(o, "token"));
            snprintf(c->token, sizeof c->token, "%s", t ? t : "");
        }
        return o;
    }
}

/* The next object; NULL on EOF; fails on timeout, naming `what` was awaited. */
static json_t *next_obj(client *c, int ms, const char *what) {
    int64_t deadline = now_ms() + harness_ms(ms);
    for (;;) {
        json_t *o = take_line(c);
        if (o) return o;
        ssize_t r = read_more(c, deadline);
        if (r == 0) return NULL;
        if (r < 0) fail_msg("timed out after %d ms waiting for %s", harness_ms(ms), what);
    }
}

json_t *client_next(client *c, int ms) {
    return next_obj(c, ms, "a message");
}

json_t *client_next_or_null(client *c, int ms) {
    int64_t deadline = now_ms() + harness_ms(ms);
    for (;;) {
        json_t *o = take_line(c);
        if (o) return o;
        if (read_more(c, deadline) <= 0) return NULL;
    }
}

static const char *type_of(const json_t *o) {
    return json_string_value(json_object_get(o, "type"));
}

static char *dump(const json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    /* Kept in the pool so failure messages can use it without leaking. */
    harness_keep(json_string(s ? s : "?"));
    char *r = (char *)json_string_value(json_array_get(pool, json_array_size(pool) - 1));
    free(s);
    return r;
}

json_t *client_expect(client *c, const char *type, int ms) {
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", type);
    json_t *o = next_obj(c, ms, what);
    if (!o) fail_msg("connection closed while waiting for \"%s\"", type);
    if (strcmp(type_of(o), type) != 0) fail_msg("expected \"%s\", got %s", type, dump(o));
    return o;
}

static bool in_list(const char *type, const char *list) {
    size_t n = strlen(type);
    for (const char *p = list; p && *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k == n && !strncmp(p, type, n)) return true;
        p += k;
    }
    return false;
}

json_t *client_expect_skip(client *c, const char *type, const char *skip, int ms) {
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", type);
    int64_t deadline = now_ms() + harness_ms(ms);
    for (;;) {
        json_t *o = next_obj(c, remaining(deadline) + 1, what);
        if (!o) fail_msg("connection closed while waiting for \"%s\"", type);
        if (!strcmp(type_of(o), type)) return o;
        if (!in_list(type_of(o), skip))
            fail_msg("expected \"%s\" (skipping %s), got %s", type, skip, dump(o));
        json_array_append(c->skipped, o);
    }
}

json_t *client_skipped(client *c) {
    json_t *s = harness_keep(c->skipped);
    c->skipped = json_array();
    return s;
}

json_t *client_expect_error(client *c, const char *code, int ms) {
    json_t *o = client_expect(c, "error", ms);
    if (strcmp(jstr(o, "code"), code) != 0)
        fail_msg("expected error %s, got %s", code, dump(o));
    if (!*jstr(o, "message")) fail_msg("error without a message: %s", dump(o));
    return o;
}

void client_expect_eof(client *c, int ms) {
    json_t *o = next_obj(c, ms, "the server to close the connection");
    if (o) fail_msg("expected the connection to close, got %s", dump(o));
}

size_t client_drain_to_eof(client *c, int ms) {
    size_t total = c->len;
    c->len = 0;
    int64_t deadline = now_ms() + harness_ms(ms);
    for (;;) {
        ssize_t r = read_more(c, deadline);
        if (r == 0) return total;
        if (r < 0) fail_msg("timed out waiting for the server to close the connection");
        total += (size_t)r;
        c->len = 0;
    }
}

size_t client_read_raw(client *c, void *buf, size_t len, int ms) {
    if (c->len == 0) {
        ssize_t r = read_more(c, now_ms() + harness_ms(ms));
        if (r < 0) fail_msg("timed out waiting for raw bytes");
        if (r == 0) return 0;
    }
    size_t n = c->len < len ? c->len : len;
    memcpy(buf, c->buf, n);
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
    return n;
}

bool client_quiet_for(client *c, int ms) {
    return c->len == 0 && read_more(c, now_ms() + ms) < 0;
}

size_t client_peek_raw(client *c, int ms) {
    if (c->len == 0 && read_more(c, now_ms() + harness_ms(ms)) < 0)
        fail_msg("timed out waiting for raw bytes");
    return c->len;
}

int harness_raw_connect(const th_server *s, int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        fail_msg("connect: %s", strerror(errno));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

int harness_run(const char *const *argv, char **out) {
    int p[2];
    if (pipe(p) < 0) fail_msg("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(p[0], buf + n, cap - n - 1)) > 0)
        if ((n += (size_t)r) + 1 == cap) buf = realloc(buf, cap *= 2);
    close(p[0]);
    buf[n] = '\0';
    int status;
    waitpid(pid, &status, 0);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *client_token(const client *c) {
    return c->token;
}

json_t *client_hello(client *c, const char *name) {
    client_send(c, "{\"type\":\"hello\",\"name\":\"%s\"}", name);
    json_t *w = client_expect(c, "welcome", WAIT);
    assert_string_equal(jstr(w, "name"), name);
    return w;
}

client *client_named(th_server *s, const char *name) {
    client *c = client_connect(s);
    client_hello(c, name);
    return c;
}

void client_sync(client *c) {
    static unsigned counter;
    unsigned t = ++counter;
    client_send(c, "{\"type\":\"ping\",\"t\":%u}", t);
    json_t *pong = client_expect(c, "pong", WAIT);
    if (jint(pong, "t") != (json_int_t)t)
        fail_msg("pong for another ping: %s", dump(pong));
}

json_t *client_move(client *c, const char *dir) {
    uint64_t seq = ++c->next_seq;
    client_send(c, "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%llu}", dir,
                (unsigned long long)seq);
    int64_t deadline = now_ms() + harness_ms(WAIT);
    for (;;) {
        json_t *o = next_obj(c, remaining(deadline) + 1, "the state of a move");
        if (!o) fail_msg("connection closed while waiting for the state of a move");
        const char *t = type_of(o);
        if (!strcmp(t, "state") && jint(o, "id") == c->id &&
            json_is_integer(json_object_get(o, "seq")) &&
            (uint64_t)jint(o, "seq") == seq) {
            assert_string_equal(jstr(o, "dir"), dir);
            return o;
        }
        if (strcmp(t, "state") != 0 && strcmp(t, "player") != 0)
            fail_msg("expected the state of move %llu, got %s", (unsigned long long)seq,
                     dump(o));
        json_array_append(c->skipped, o);
    }
}

json_t *client_move_any(client *c) {
    static const char *const dirs[] = {"left", "up", "right", "down"};
    for (int i = 0; i < 4; i++) {
        json_t *st = client_move(c, dirs[i]);
        if (json_is_true(json_object_get(st, "moved"))) return st;
    }
    fail_msg("no direction moved the board: %s", dump(c->skipped));
    return NULL;
}

/* ----------------------------------------------------------- scenarios --- */

const char *race_start(th_server *s, int n, const char *fields, client **out,
                       json_t **starts) {
    const char *code = NULL;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        out[i] = client_connect(s);
        client_hello(out[i], name);
        if (i == 0) {
            client_send(out[0], "{\"type\":\"create\",\"players\":%d%s%s}", n,
                        fields && *fields ? "," : "", fields ? fields : "");
            code = jstr(client_expect(out[0], "room", WAIT), "room");
        } else {
            client_send(out[i], "{\"type\":\"join\",\"room\":\"%s\"}", code);
        }
    }
    for (int i = 0; i < n; i++) {
        json_t *st = client_expect_skip(out[i], "start", "room", WAIT);
        client_skipped(out[i]); /* forget the room messages */
        if (strcmp(jstr(st, "room"), code) != 0) fail_msg("start for another room");
        if (starts) starts[i] = st;
    }
    return code;
}

/* ---------------------------------------------------------------- JSON --- */

static json_t *field(const json_t *o, const char *name) {
    json_t *v = json_object_get(o, name);
    if (!v) fail_msg("no field \"%s\" in %s", name, dump(o));
    return v;
}

json_int_t jint(const json_t *o, const char *name) {
    json_t *v = field(o, name);
    if (!json_is_integer(v))
        fail_msg("field \"%s\" is not an integer in %s", name, dump(o));
    return json_integer_value(v);
}

const char *jstr(const json_t *o, const char *name) {
    json_t *v = field(o, name);
    if (!json_is_string(v)) fail_msg("field \"%s\" is not a string in %s", name, dump(o));
    return json_string_value(v);
}

bool jbool(const json_t *o, const char *name) {
    json_t *v = field(o, name);
    if (!json_is_boolean(v)) fail_msg("field \"%s\" is not a bool in %s", name, dump(o));
    return json_is_true(v);
}

json_t *jarr(const json_t *o, const char *name) {
    json_t *v = field(o, name);
    if (!json_is_array(v)) fail_msg("field \"%s\" is not an array in %s", name, dump(o));
    return v;
}

json_t *jobj(const json_t *o, const char *name) {
    json_t *v = field(o, name);
    if (!json_is_object(v))
        fail_msg("field \"%s\" is not an object in %s", name, dump(o));
    return v;
}

bool jnull(const json_t *o, const char *name) {
    return json_is_null(field(o, name));
}

bool jhas(const json_t *o, const char *name) {
    return json_object_get(o, name) != NULL;
}

json_t *jplayer(const json_t *list, json_int_t id) {
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p) {
        if (jint(p, "id") == id) return p;
    }
    fail_msg("no player %lld in %s", (long long)id, dump(list));
    return NULL;
}

bool jequal(const json_t *a, const json_t *b) {
    return json_equal((json_t *)a, (json_t *)b);
}

/* ------------------------------------------------------- shared helpers --- */

json_t *client_wait_for(client *c, const char *type, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        int left = harness_remaining(deadline);
        if (left <= 0) fail_msg("no %s within %d ms", type, ms);
        json_t *m = client_next(c, left);
        assert_non_null(m);
        if (!strcmp(jstr(m, "type"), type)) return m;
    }
}

void client_send_str(client *c, const char *s) {
    client_send_raw(c, s, strlen(s), false);
}

void fit_fds_for(long long need, int how_many) {
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need) {
        fprintf(stderr, "descriptor limit %llu too low for %d clients: skipped\n",
                (unsigned long long)rl.rlim_max, how_many);
        skip();
    }
    if (rl.rlim_cur < (rlim_t)need) {
        rl.rlim_cur = (rlim_t)need;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0); /* the server inherits it */
    }
}

void fit_fds(int n) {
    fit_fds_for((long long)n * 2 + 256, n); /* this side and the server's */
}

const char *harness_journal_of(const char *dir, const char *name) {
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/%s.journal", dir, name);
    return p;
}

double jreal(const json_t *o, const char *field) {
    json_t *v = json_object_get(o, field);
    if (!json_is_number(v)) fail_msg("field %s is not a number", field);
    return json_number_value(v);
}

int server_http_port(th_server *s) {
    const char *line = server_stdout_line(s, WAIT);
    static const char prefix[] = "race2048d http on 127.0.0.1:";
    if (strncmp(line, prefix, sizeof prefix - 1))
        fail_msg("second stdout line is \"%s\", want \"%sPORT\"", line, prefix);
    char *end;
    long port = strtol(line + sizeof prefix - 1, &end, 10);
    if (*end || port <= 0 || port > 65535) fail_msg("no port in \"%s\"", line);
    assert_int_not_equal(port, s->port);
    return (int)port;
}

th_server *server_with_http(int *http, const char *const *extra) {
    const char *argv[16] = {"--http-port", "0"};
    int n = 2;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    th_server *s = server_start(argv);
    *http = server_http_port(s);
    return s;
}

int harness_game_records(const char *const *paths, int n, const char *code) {
    char *seen[16];
    int nseen = 0;
    char needle[64];
    snprintf(needle, sizeof needle, "\"room\":\"%s\"", code);
    for (int k = 0; k < n; k++) {
        if (access(paths[k], R_OK) != 0) continue;
        char *data = harness_read_file(paths[k], NULL);
        for (char *line = data; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            if (!strncmp(line, "{\"j\":\"game\"", 11) && strstr(line, needle)) {
                bool known = false;
                for (int i = 0; i < nseen; i++)
                    known = known || !strcmp(seen[i], line);
                if (!known && nseen < 16) seen[nseen++] = strdup(line);
            }
            line = nl ? nl + 1 : NULL;
        }
        free(data);
    }
    for (int i = 0; i < nseen; i++)
        free(seen[i]);
    return nseen;
}
