/* check.c - race2048-check: a health probe that asks a running race2048d for a JSON pong.
 */

/*
 * Used as the container's HEALTHCHECK, so it must tell "the process exists"
 * apart from "the event loop answers": it connects, sends a JSON ping at
 * once (within protocol/README.md's 100 ms, so the server never starts its telnet
 * probe), and waits for a `pong` line before a deadline. Plain POSIX sockets
 * and poll(2) keep the runtime image free of extra libraries.
 *
 * Exit status: 0 healthy, 1 unhealthy (one line on stderr says why),
 * 2 usage error.
 */

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "args.h"

#define CHECK_EXIT_HEALTHY   0
#define CHECK_EXIT_UNHEALTHY 1
#define CHECK_EXIT_USAGE     2

#define CHECK_DEFAULT_HOST "127.0.0.1"
#define CHECK_DEFAULT_PORT "2048"
#define CHECK_DEFAULT_MS   3000

/* A pong is ~30 bytes; longer lines are some other message and only need skipping. */
#define CHECK_LINE_MAX 512

static const char check_ping[] = "{\"type\":\"ping\",\"t\":\"health\"}\n";

/* Where to connect: text copies of the host and the numeric port. */
typedef struct check_target {
    char host[256]; /* name or address literal, brackets removed */
    char port[8];   /* decimal 1..65535 */
} check_target;

/* ------------------------------------------------------------ reporting --- */

static const char *check_prog = "race2048-check";

__attribute__((format(printf, 1, 2))) static int check_unhealthy(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: unhealthy: ", check_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CHECK_EXIT_UNHEALTHY;
}

/* ----------------------------------------------------------- arguments --- */

/* Copies a decimal port 1..65535 into out; returns false (out untouched) if
 * the text is anything else. */
static bool check_parse_port(const char *text, char out[8]) {
    size_t n = strlen(text);
    if (n == 0 || n > 5 || strspn(text, "0123456789") != n) return false;
    long v = strtol(text, NULL, 10);
    if (v < 1 || v > 65535) return false;
    memcpy(out, text, n + 1);
    return true;
}

/* Splits PORT, HOST:PORT or [V6]:PORT into t; returns false on malformed
 * text (t may then be partly written). */
static bool check_parse_target(const char *arg, check_target *t) {
    const char *host = CHECK_DEFAULT_HOST, *port = arg;
    size_t host_len = strlen(CHECK_DEFAULT_HOST);

    if (arg[0] == '[') {
        const char *close = strchr(arg, ']');
        if (!close || close[1] != ':') return false;
        host = arg + 1;
        host_len = (size_t)(close - host);
        port = close + 2;
    } else {
        const char *colon = strchr(arg, ':');
        if (colon) {
            /* A second colon means an unbracketed IPv6 address: ambiguous. */
            if (strchr(colon + 1, ':')) return false;
            host = arg;
            host_len = (size_t)(colon - arg);
            port = colon + 1;
        }
    }
    if (host_len == 0 || host_len >= sizeof t->host) return false;
    memcpy(t->host, host, host_len);
    t->host[host_len] = '\0';
    return check_parse_port(port, t->port);
}

/* Reads -t SECONDS as milliseconds; returns false unless 0 < SECONDS <= 3600. */
static bool check_parse_seconds(const char *text, int *ms) {
    char *end;
    errno = 0;
    double s = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !(s > 0.0) || s > 3600.0) return false;
    *ms = (int)(s * 1000.0 + 0.5);
    if (*ms < 1) *ms = 1;
    return true;
}

/* ---------------------------------------------------------------- clock --- */

static long long check_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline, never negative. */
static int check_left_ms(long long deadline) {
    long long left = deadline - check_now_ms();
    return left > 0 ? (int)left : 0;
}

/* ------------------------------------------------------------- network --- */

/* Connects to one resolved address before the deadline. Returns the
 * non-blocking socket, or -1 with *err set to the errno that stopped it
 * (ETIMEDOUT when the deadline passed). */
static int check_connect_one(const struct addrinfo *ai, long long deadline, int *err) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
    if (errno != EINPROGRESS) {
        *err = errno;
        close(fd);
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    for (;;) {
        int n = poll(&p, 1, check_left_ms(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *err = errno;
            break;
        }
        if (n == 0) {
            *err = ETIMEDOUT;
            break;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) soerr = errno;
        if (soerr == 0) return fd;
        *err = soerr;
        break;
    }
    close(fd);
    return -1;
}

/* Tries every address of t in turn. Returns a connected socket, or -1 after
 * reporting why on stderr. */
static int check_connect(const check_target *t, long long deadline) {
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(t->host, t->port, &hints, &res);
    if (rc != 0) {
        check_unhealthy("cannot resolve %s: %s", t->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        if (check_left_ms(deadline) == 0) {
            err = ETIMEDOUT;
            break;
        }
        fd = check_connect_one(ai, deadline, &err);
    }
    freeaddrinfo(res);
    if (fd < 0)
        check_unhealthy("cannot connect to %s port %s: %s", t->host, t->port,
                        strerror(err));
    return fd;
}

/* Writes the whole ping before the deadline. Returns 0, or 1 after
 * reporting why. */
static int check_send_ping(int fd, long long deadline) {
    size_t off = 0, len = sizeof check_ping - 1;
    while (off < len) {
        ssize_t n = send(fd, check_ping + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int left = check_left_ms(deadline);
            if (left == 0 || (poll(&p, 1, left) == 0))
                return check_unhealthy("timed out sending the ping");
            continue;
        }
        return check_unhealthy("sending the ping: %s", strerror(errno));
    }
    return CHECK_EXIT_HEALTHY;
}

/* Line assembly: keeps the first CHECK_LINE_MAX bytes of the current line;
 * the rest of an overlong line is dropped (a pong is never that long). */
typedef struct check_line {
    char buf[CHECK_LINE_MAX + 1];
    size_t len;
    bool overlong;
} check_line;

/* Judges one complete line. Returns -1 to keep reading (not JSON, or JSON
 * that is not a pong), 0 for the pong, 1 after reporting a server refusal. */
static int check_judge_line(const check_line *l) {
    if (l->len == 0 || l->buf[0] != '{')
        return -1; /* text-mode bytes a late JSON client may see first */
    if (!l->overlong && strstr(l->buf, "\"type\":\"pong\"")) return CHECK_EXIT_HEALTHY;
    if (strstr(l->buf, "\"type\":\"error\"") || strstr(l->buf, "\"type\":\"bye\""))
        return check_unhealthy("server replied %.200s", l->buf);
    return -1;
}

/* Reads lines until the pong, EOF, an error or the deadline. Returns the
 * exit status, having reported any failure. */
static int check_await_pong(int fd, long long deadline) {
    check_line line = {.len = 0, .overlong = false};
    char chunk[4096];
    /* The reply's first bytes: "HTTP/" means a browsers' port (--http-port)
     * answered the ping as a bad request. */
    char head[5];
    size_t head_len = 0;
    for (;;) {
        int left = check_left_ms(deadline);
        if (left == 0) return check_unhealthy("no pong within the deadline");
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return check_unhealthy("poll: %s", strerror(errno));
        if (n == 0) continue; /* the deadline check above reports it */
        ssize_t got = recv(fd, chunk, sizeof chunk, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (got < 0) return check_unhealthy("reading: %s", strerror(errno));
        if (got == 0 && head_len == sizeof head && !memcmp(head, "HTTP/", sizeof head))
            return check_unhealthy(
                "connection closed before a pong: the server answered HTTP, so this is "
                "a browsers' port (race2048d --http-port, 8048 by default); check the "
                "JSON port (--port, 2048 by default)");
        if (got == 0) return check_unhealthy("connection closed before a pong");
        for (ssize_t i = 0; i < got && head_len < sizeof head; i++)
            head[head_len++] = chunk[i];
        for (ssize_t i = 0; i < got; i++) {
            char c = chunk[i];
            if (c == '\n') {
                if (line.len > 0 && line.buf[line.len - 1] == '\r') line.len--;
                line.buf[line.len] = '\0';
                int verdict = check_judge_line(&line);
                if (verdict >= 0) return verdict;
                line.len = 0;
                line.overlong = false;
            } else if (line.len < CHECK_LINE_MAX) {
                line.buf[line.len++] = c;
            } else {
                line.overlong = true;
            }
        }
    }
}

/* ----------------------------------------------------------------- main --- */

/* -t's value: check_parse_seconds for the parser's table. */
static bool parse_deadline(const char *text, void *ms) {
    return check_parse_seconds(text, ms);
}

int main(int argc, char **argv) {
    int deadline_ms = CHECK_DEFAULT_MS;
    const args_flag flags[] = {
        {.name = "-t",
         .kind = ARGS_CUSTOM,
         .to = &deadline_ms,
         .parse = parse_deadline,
         .want = "a number of seconds, 0 < SECONDS <= 3600",
         .arg = "SECONDS",
         .help = "whole-check deadline (default 3, fractions allowed)"},
        {.name = "--version",
         .kind = ARGS_VERSION,
         .help = "print the version (" RACE2048_VERSION ")"},
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
    };
    const args_spec spec = {
        .prog = check_prog,
        .version = RACE2048_VERSION,
        .usage =
            "usage: race2048-check [--help] [--version] [-t SECONDS] [[HOST:]PORT]\n",
        .about = "  Sends a JSON ping to race2048d and waits for its pong.\n"
                 "  HOST:PORT defaults to " CHECK_DEFAULT_HOST
                 ":$RACE2048_PORT, or " CHECK_DEFAULT_HOST ":" CHECK_DEFAULT_PORT
                 " when that is unset;\n"
                 "  an IPv6 address goes in brackets: [::1]:2048.\n",
        .column = 11,
        .epilogue = "  exit 0 healthy, 1 unhealthy (reason on stderr), 2 usage error\n",
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
        .positional = "[HOST:]PORT",
        .max_positional = 1,
    };
    args_rest rest;
    int rc = args_parse(&spec, argc - 1, argv + 1, &rest);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? CHECK_EXIT_HEALTHY : CHECK_EXIT_USAGE;
    const char *arg = rest.npositional ? rest.positional[0] : NULL;

    /* Without an argument follow the server's own port variable, so an
     * exec-form HEALTHCHECK needs no shell to expand it. */
    check_target target;
    if (!arg) {
        const char *env = getenv("RACE2048_PORT");
        arg = (env && *env) ? env : CHECK_DEFAULT_PORT;
    }
    if (!check_parse_target(arg, &target)) {
        args_fail(&spec, "expected PORT, HOST:PORT or [IPV6]:PORT with PORT 1-65535");
        return CHECK_EXIT_USAGE;
    }

    long long start = check_now_ms();
    long long deadline = start + deadline_ms;
    int fd = check_connect(&target, deadline);
    if (fd < 0) return CHECK_EXIT_UNHEALTHY;
    rc = check_send_ping(fd, deadline);
    if (rc == CHECK_EXIT_HEALTHY) rc = check_await_pong(fd, deadline);
    close(fd);
    if (rc == CHECK_EXIT_HEALTHY)
        printf("healthy: pong from %s port %s in %lld ms\n", target.host, target.port,
               check_now_ms() - start);
    return rc;
}
