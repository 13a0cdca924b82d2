/* spectate.c - `race2048-bench spectators`: starts race2048d, puts N spectators (JSON,
 * WebSocket or text) on one two-player race, and measures the server CPU per move. */
#define _GNU_SOURCE /* memmem */
#include "spectate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "net.h"

/* --help: the usage (its first line also follows a bad option) and the rest. */
static const char sp_usage[] =
    "usage: race2048-bench spectators [--help] [--kind json|ws|text] [--count N] "
    "[--moves M] [--rate R] [--size S] [--ping] [--server PATH]\n";
static const char sp_about[] =
    "  Starts PATH (default: race2048d of this build, ../server/race2048d from\n"
    "  this program) on a free loopback port, makes a race of two JSON racers\n"
    "  on SxS boards (default 6), puts N spectators on it (default 100; JSON\n"
    "  lines, WebSocket or netcat-style text, all of one screen shape), then\n"
    "  the racers make M moves that change a board (default 1000, one in\n"
    "  flight each; --rate R: each at most R a second, default 0 = as fast\n"
    "  as answers come) and one leaves; the window ends when every spectator\n"
    "  has the end. Prints the server's CPU time (its loop thread, from\n"
    "  /proc/PID/schedstat) in that window per move and per move per spectator.\n"
    "  --ping: a victim in a solo game pings every 10 ms through the window,\n"
    "  from a thread of its own; its round trips are printed (0 without).\n";

typedef enum sp_kind { SP_JSON, SP_WS, SP_TEXT } sp_kind;

typedef struct sp_opts {
    sp_kind kind;
    long count, moves, size;
    long rate; /* moves per second per racer, 0 = each as soon as answered */
    bool ping; /* a victim in another room pings through the window */
    const char *server;
} sp_opts;

/* One connection: bytes not handled yet, and what it has seen. */
typedef struct sp_client {
    int fd;
    byte_buf in;  /* received bytes not handled yet */
    bool ws_open; /* WebSocket: the 101 head is behind us */
    bool started, ended;
    long states;
    /* Racers only. */
    int64_t me;
    uint64_t seq;     /* of the move in flight; 0 = none */
    int dir;          /* the next direction to try */
    int tries;        /* directions tried in a row without a change */
    bool over;        /* its board is stuck */
    uint64_t sent_ns; /* when the move in flight was sent */
    uint64_t next_at; /* --rate: when the next move is due, 0 = none due */
} sp_client;

typedef struct sp_run {
    sp_opts o;
    pid_t pid;
    char port[16];
    char code[16];
    sp_client racer[3]; /* the two racers, then the victim: a solo player in
                           another room that pings every 10 ms from a thread of
                           its own (so the crowd's reading does not delay it) */
    sp_client *spect;
    struct pollfd *pfd;
    long moved; /* moves that changed a board */
    bool race_ended;
    uint32_t *lat; /* racers' own move latencies, us */
    size_t nlat;
    uint32_t *ping; /* the victim's ping round trips in the window, us */
    size_t nping, ping_cap;
    atomic_bool measuring;
    pthread_t victim;
    const char *fatal;
    char fatal_buf[256];
} sp_run;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(sp_run *r, const char *why) {
    if (!r->fatal) {
        snprintf(r->fatal_buf, sizeof r->fatal_buf, "%s", why);
        r->fatal = r->fatal_buf;
    }
}

/* ------------------------------------------------------------- server --- */

/* The server's loop thread's CPU time in ns: schedstat's first field, or
 * utime + stime from stat (10 ms ticks) where schedstat is missing. */
static uint64_t server_cpu_ns(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long long ns;
    if (f && fscanf(f, "%llu", &ns) == 1) {
        fclose(f);
        return ns;
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r"))) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return 0;
    return (ut + st) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* race2048d next to this program's build directory, if the path is known. */
static const char *default_server(void) {
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0) return "race2048d";
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash) return "race2048d";
    strcpy(slash, "/../server/race2048d");
    return path;
}

/* Starts the server and reads its port from the `listening on` line. */
static int start_server(sp_run *r) {
    int out[2];
    if (pipe(out) < 0) return -1;
    char clients[32], spectators[32];
    snprintf(clients, sizeof clients, "%ld", r->o.count + 100);
    snprintf(spectators, sizeof spectators, "%ld", r->o.count + 1);
    r->pid = fork();
    if (r->pid < 0) return -1;
    if (r->pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        /* By environment, so that a server from before the flag runs too
         * (for before-and-after figures). */
        setenv("RACE2048_MAX_SPECTATORS", spectators, 1);
        execl(r->o.server, r->o.server, "--host", "127.0.0.1", "--port", "0", "--journal",
              "none", "--log-level", "warn", "--move-timeout", "0", "--idle-timeout", "0",
              "--max-clients", clients, "--max-per-ip", clients, (char *)NULL);
        fprintf(stderr, "race2048-bench: cannot run %s: %s\n", r->o.server,
                strerror(errno));
        _exit(127);
    }
    close(out[1]);
    char line[256];
    size_t len = 0;
    while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
        ssize_t n = read(out[0], line + len, sizeof line - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(out[0]);
    line[len] = '\0';
    const char *colon = strrchr(line, ':');
    if (!strstr(line, "listening on") || !colon) return -1;
    snprintf(r->port, sizeof r->port, "%d", atoi(colon + 1));
    return 0;
}

/* -------------------------------------------------------------- clients --- */

static int open_client(sp_run *r, sp_client *c) {
    net_conn nc = {.fd = -1};
    int rc = net_connect(&nc, "127.0.0.1", r->port);
    if (rc != NET_OK) {
        fprintf(stderr, "race2048-bench: connect: %s\n", net_strerror(rc));
        return -1;
    }
    c->fd = nc.fd;
    return 0;
}

static void say(sp_run *r, sp_client *c, const char *data, size_t len) {
    /* Requests are tiny and the socket's buffer empty: one send takes them. */
    if (send(c->fd, data, len, MSG_NOSIGNAL) != (ssize_t)len) fail(r, "a send failed");
}

static void says(sp_run *r, sp_client *c, const char *line) {
    say(r, c, line, strlen(line));
}

/* A WebSocket text frame of a line (without its '\n'), with a zero mask key. */
static void say_ws(sp_run *r, sp_client *c, const char *line) {
    char frame[256];
    size_t len = strlen(line);
    frame[0] = (char)0x81;
    frame[1] = (char)(0x80 | len);
    memset(frame + 2, 0, 4);
    memcpy(frame + 6, line, len);
    say(r, c, frame, 6 + len);
}

/* The integer after `key`, or -1. */
static int64_t scan_int(const char *s, const char *key) {
    const char *p = strstr(s, key);
    if (!p) return -1;
    p += strlen(key);
    if (*p < '0' || *p > '9') return -1;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    return v;
}

static bool is_type(const char *line, const char *type) {
    char want[32];
    snprintf(want, sizeof want, "{\"type\":\"%s\"", type);
    return !strncmp(line, want, strlen(want));
}

static void send_move(sp_run *r, sp_client *c) {
    static const char *const dirs[] = {"left", "down", "right", "up"};
    char line[96];
    c->seq++;
    snprintf(line, sizeof line,
             "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%" PRIu64 "}\n", dirs[c->dir],
             c->seq);
    c->sent_ns = now_ns();
    says(r, c, line);
}

#define PING_MS 10

/* The victim's thread: a ping, its pong (blocking, lines skipped until it),
 * 10 ms, again, while the window lasts. */
static void *victim_main(void *arg) {
    sp_run *r = arg;
    int fd = r->racer[2].fd;
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    char buf[4096];
    while (atomic_load(&r->measuring)) {
        uint64_t t0 = now_ns();
        if (send(fd, "{\"type\":\"ping\"}\n", 16, MSG_NOSIGNAL) != 16) break;
        bool pong = false;
        while (!pong) {
            ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
            if (n <= 0) return NULL;
            buf[n] = '\0';
            pong = strstr(buf, "\"pong\"") != NULL; /* its only reply */
        }
        uint64_t us = (now_ns() - t0) / 1000;
        if (r->nping < r->ping_cap)
            r->ping[r->nping++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
        struct timespec gap = {0, PING_MS * 1000000L};
        nanosleep(&gap, NULL);
    }
    return NULL;
}

/* A racer's line: its start, its answers (then the next move), the end. */
static void racer_line(sp_run *r, sp_client *c, const char *line) {
    if (c == &r->racer[2]) { /* the victim, before its thread starts */
        if (is_type(line, "start")) c->started = true;
        return;
    }
    if (is_type(line, "start")) {
        c->me = scan_int(line, "\"you\":");
        c->started = true;
    } else if (is_type(line, "room") && !r->code[0]) {
        const char *p = strstr(line, "\"room\":\"");
        if (p) snprintf(r->code, sizeof r->code, "%.5s", p + 8);
    } else if (is_type(line, "end")) {
        r->race_ended = c->ended = true;
    } else if (is_type(line, "error")) {
        if (!strstr(line, "not_playing")) fail(r, "a racer got an error");
        c->seq = 0; /* its board or the race is over */
        c->over = true;
    } else if (is_type(line, "state") && scan_int(line, "\"id\":") == c->me &&
               (uint64_t)scan_int(line, "\"seq\":") == c->seq && c->seq) {
        uint64_t us = (now_ns() - c->sent_ns) / 1000;
        if (r->nlat < (size_t)r->o.moves * 4 + 64)
            r->lat[r->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
        bool moved = strstr(line, "\"moved\":true") != NULL;
        if (moved) r->moved++, c->tries = 0;
        c->dir = (c->dir + 1) % 4; /* left, down, right, up: boards live long */
        if (!moved && ++c->tries >= 4) c->over = true;
        if (strstr(line, "\"status\":\"over\"")) c->over = true;
        c->seq = 0;
        if (c->over || r->moved >= r->o.moves) return;
        if (r->o.rate)
            c->next_at = c->sent_ns + 1000000000u / (uint64_t)r->o.rate;
        else
            send_move(r, c);
    }
}

static void spect_line(sp_run *r, sp_client *c, const char *line) {
    if (is_type(line, "state"))
        c->states++;
    else if (is_type(line, "start"))
        c->started = true;
    else if (is_type(line, "end"))
        c->ended = true;
    else if (is_type(line, "error") || is_type(line, "bye"))
        fail(r, line);
}

/* Handles the complete lines (JSON), frames (WebSocket) or markers (text)
 * buffered for c; keeps the rest. */
static void consume(sp_run *r, sp_client *c, bool racer) {
    size_t at = 0;
    if (racer || r->o.kind == SP_JSON) {
        for (char *nl; (nl = memchr(c->in.data + at, '\n', c->in.len - at));) {
            *nl = '\0';
            if (c->in.data[at] == '{')
                (racer ? racer_line : spect_line)(r, c, c->in.data + at);
            at = (size_t)(nl - c->in.data) + 1;
        }
    } else if (r->o.kind == SP_WS) {
        if (!c->ws_open) {
            char *end = memmem(c->in.data, c->in.len, "\r\n\r\n", 4);
            if (!end) return;
            c->ws_open = true;
            at = (size_t)(end - c->in.data) + 4;
        }
        while (c->in.len - at >= 2) {
            const unsigned char *h = (const unsigned char *)c->in.data + at;
            size_t avail = c->in.len - at, hlen = 2, len = h[1] & 0x7f;
            if (len == 126) {
                if (avail < 4) break;
                len = (size_t)h[2] << 8 | h[3];
                hlen = 4;
            } else if (len == 127) {
                if (avail < 10) break;
                len = 0;
                for (int i = 0; i < 8; i++)
                    len = len << 8 | h[2 + i];
                hlen = 10;
            }
            if (avail < hlen + len) break;
            if ((h[0] & 0x0f) == 1 && len) {
                /* The byte after the payload (there is room: see service)
                 * is borrowed as its NUL. */
                char save = c->in.data[at + hlen + len];
                c->in.data[at + hlen + len] = '\0';
                spect_line(r, c, c->in.data + at + hlen);
                c->in.data[at + hlen + len] = save;
            }
            at += hlen + len;
        }
    } else {
        /* Text: the spectator's hint marks a race screen, the check command
         * the end screen. */
        if (memmem(c->in.data, c->in.len, "Watching.", 9)) c->started = true;
        if (memmem(c->in.data, c->in.len, "sha256sum", 9)) c->ended = true;
        at = c->in.len > 16 ? c->in.len - 16 : 0;
    }
    memmove(c->in.data, c->in.data + at, c->in.len - at);
    c->in.len -= (uint32_t)at;
}

static void service(sp_run *r, sp_client *c, bool racer) {
    for (int reads = 0; reads < 4; reads++) {
        if (byte_buf_reserve(&c->in, 65536 + 1) < 0) {
            fail(r, "out of memory");
            return;
        }
        ssize_t n = recv(c->fd, c->in.data + c->in.len, 65536, 0);
        if (n == 0) fail(r, "the server closed a connection");
        if (n <= 0) return;
        c->in.len += (uint32_t)n;
        consume(r, c, racer);
    }
}

/* Polls every connection once (up to ms) and services the ready ones. */
static void poll_once(sp_run *r, int ms) {
    size_t n = (size_t)r->o.count;
    for (size_t k = 0; k < 3; k++) /* the victim only until its thread runs */
        r->pfd[k] = (struct pollfd){
            .fd = k < 2 || !atomic_load(&r->measuring) ? r->racer[k].fd : -1,
            .events = POLLIN};
    for (size_t i = 0; i < n; i++)
        r->pfd[3 + i] = (struct pollfd){.fd = r->spect[i].fd, .events = POLLIN};
    int ready = poll(r->pfd, n + 3, ms);
    if (ready < 0 && errno != EINTR) fail(r, "poll failed");
    for (size_t i = 0; i < n + 3 && ready > 0 && !r->fatal; i++) {
        if (!r->pfd[i].revents) continue;
        ready--;
        if (i < 3)
            service(r, &r->racer[i], true);
        else
            service(r, &r->spect[i - 3], false);
    }
}

/* Polls until every spectator (and racer) satisfies what, or a deadline. */
static void wait_all(sp_run *r, bool started, double seconds, const char *what) {
    uint64_t deadline = now_ns() + (uint64_t)(seconds * 1e9);
    for (;;) {
        long missing = 0;
        for (long i = 0; i < r->o.count; i++)
            missing += started ? !r->spect[i].started : !r->spect[i].ended;
        if (!missing || r->fatal) return;
        if (now_ns() > deadline) {
            snprintf(r->fatal_buf, sizeof r->fatal_buf, "%ld of %ld spectators lack %s",
                     missing, r->o.count, what);
            r->fatal = r->fatal_buf;
            return;
        }
        poll_once(r, 100);
    }
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int run(sp_run *r) {
    if (start_server(r) < 0) {
        fprintf(stderr, "race2048-bench: %s did not start\n", r->o.server);
        return 1;
    }
    size_t n = (size_t)r->o.count;
    r->spect = calloc(n ? n : 1, sizeof *r->spect);
    r->pfd = calloc(n + 3, sizeof *r->pfd);
    r->ping_cap = 1 << 20;
    r->ping = calloc(r->ping_cap, sizeof *r->ping);
    r->lat = calloc((size_t)r->o.moves * 4 + 64, sizeof *r->lat);
    if (!r->spect || !r->pfd || !r->lat || !r->ping) {
        fprintf(stderr, "race2048-bench: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        r->spect[i].fd = -1;
    for (int k = 0; k < 3; k++)
        if (open_client(r, &r->racer[k]) < 0) return 1;
    says(r, &r->racer[2], "{\"type\":\"hello\",\"name\":\"victim\"}\n");
    says(r, &r->racer[2], "{\"type\":\"solo\"}\n");
    char line[160];
    says(r, &r->racer[0], "{\"type\":\"hello\",\"name\":\"racer0\"}\n");
    snprintf(line, sizeof line, "{\"type\":\"create\",\"players\":2,\"size\":%ld}\n",
             r->o.size);
    says(r, &r->racer[0], line);
    uint64_t deadline = now_ns() + 10000000000ull;
    while (!r->code[0] && !r->fatal && now_ns() < deadline)
        poll_once(r, 100);
    if (!r->code[0]) fail(r, "no room was made");
    says(r, &r->racer[1], "{\"type\":\"hello\",\"name\":\"racer1\"}\n");
    snprintf(line, sizeof line, "{\"type\":\"join\",\"room\":\"%s\"}\n", r->code);
    says(r, &r->racer[1], line);
    while (!(r->racer[0].started && r->racer[1].started && r->racer[2].started) &&
           !r->fatal && now_ns() < deadline)
        poll_once(r, 100);
    if (!r->racer[1].started) fail(r, "the race did not start");

    for (size_t i = 0; i < n && !r->fatal; i++) {
        sp_client *c = &r->spect[i];
        if (open_client(r, c) < 0) return 1;
        if (r->o.kind == SP_WS) {
            says(r, c,
                 "GET /ws HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Key: cmFjZTIwNDhiZW5jaCEhIQ==\r\n"
                 "Sec-WebSocket-Version: 13\r\n\r\n");
            snprintf(line, sizeof line, "{\"type\":\"watch\",\"room\":\"%s\"}", r->code);
            say_ws(r, c, line);
        } else if (r->o.kind == SP_JSON) {
            snprintf(line, sizeof line, "{\"type\":\"watch\",\"room\":\"%s\"}\n",
                     r->code);
            says(r, c, line);
        } else {
            snprintf(line, sizeof line, "watch %s\n", r->code);
            says(r, c, line);
        }
        if (i % 100 == 99) poll_once(r, 0);
    }
    wait_all(r, true, 60 + 0.02 * (double)n, "their start");
    if (r->fatal) {
        fprintf(stderr, "race2048-bench: %s\n", r->fatal);
        return 1;
    }

    uint64_t cpu0 = server_cpu_ns(r->pid), t0 = now_ns();
    atomic_store(&r->measuring, true);
    if (r->o.ping && pthread_create(&r->victim, NULL, victim_main, r) != 0) {
        fprintf(stderr, "race2048-bench: cannot start the victim's thread\n");
        return 1;
    }
    send_move(r, &r->racer[0]);
    send_move(r, &r->racer[1]);
    for (;;) {
        int ms = 100;
        bool going = false;
        uint64_t now = now_ns(); /* once: a later reading could pass next_at */
        for (int k = 0; k < 2; k++) {
            sp_client *c = &r->racer[k];
            if (c->next_at && now >= c->next_at) {
                c->next_at = 0;
                send_move(r, c);
            }
            if (c->next_at) {
                int due = (int)((c->next_at - now) / 1000000u);
                ms = due < ms ? due : ms;
            }
            going |= c->seq || c->next_at; /* a move in flight or due */
        }
        if (r->fatal || r->race_ended || !going) break;
        poll_once(r, ms);
    }
    long moved = r->moved;
    if (!r->race_ended) says(r, &r->racer[1], "{\"type\":\"leave\"}\n");
    wait_all(r, false, 60 + 0.02 * (double)n, "the end");
    uint64_t cpu1 = server_cpu_ns(r->pid), t1 = now_ns();
    atomic_store(&r->measuring, false);
    if (r->o.ping) pthread_join(r->victim, NULL);
    if (r->fatal) {
        fprintf(stderr, "race2048-bench: %s\n", r->fatal);
        return 1;
    }
    qsort(r->lat, r->nlat, sizeof *r->lat, cmp_u32);
    qsort(r->ping, r->nping, sizeof *r->ping, cmp_u32);
    /* JSON and WebSocket: the fewest states a spectator got (each should
     * have every one: moves); text screens are paced, so 0 there. */
    long states_min = n ? LONG_MAX : 0;
    for (size_t i = 0; i < n; i++)
        if (r->spect[i].states < states_min) states_min = r->spect[i].states;
    double cpu_us = (double)(cpu1 - cpu0) / 1e3, per_move = moved ? cpu_us / moved : 0;
    static const char *const kinds[] = {"json", "ws", "text"};
    printf("spectators kind=%s count=%ld size=%ld rate=%ld moves=%ld seconds=%.2f "
           "server_cpu_ms=%.1f cpu_us_per_move=%.2f cpu_ns_per_move_per_spectator=%.0f "
           "move_lat_p50_us=%" PRIu32 " move_lat_p99_us=%" PRIu32 " states_min=%ld "
           "victim_ping_p50_us=%" PRIu32 " victim_ping_p99_us=%" PRIu32
           " victim_ping_max_us=%" PRIu32 "\n",
           kinds[r->o.kind], r->o.count, r->o.size, r->o.rate, moved,
           (double)(t1 - t0) / 1e9, cpu_us / 1e3, per_move,
           n ? per_move * 1e3 / (double)n : 0, r->nlat ? r->lat[r->nlat / 2] : 0,
           r->nlat ? r->lat[(size_t)ceil(0.99 * (double)r->nlat) - 1] : 0, states_min,
           r->nping ? r->ping[r->nping / 2] : 0,
           r->nping ? r->ping[(size_t)ceil(0.99 * (double)r->nping) - 1] : 0,
           r->nping ? r->ping[r->nping - 1] : 0);
    fflush(stdout);
    return 0;
}

/* --kind: json, ws or text. */
static bool parse_kind(const char *v, void *to) {
    sp_kind *kind = to;
    if (!strcmp(v, "json"))
        *kind = SP_JSON;
    else if (!strcmp(v, "ws"))
        *kind = SP_WS;
    else if (!strcmp(v, "text"))
        *kind = SP_TEXT;
    else
        return false;
    return true;
}

int spectate_main(int argc, char **argv) {
    sp_run r = {.o = {.kind = SP_JSON, .count = 100, .moves = 1000, .size = 6}};
    r.o.server = default_server();
    r.racer[0].fd = r.racer[1].fd = r.racer[2].fd = -1;
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--kind",
         .kind = ARGS_CUSTOM,
         .to = &r.o.kind,
         .parse = parse_kind,
         .want = "json, ws or text",
         .arg = "json|ws|text"},
        {.name = "--count",
         .kind = ARGS_LONG,
         .to = &r.o.count,
         .lo = 0,
         .hi = 50000,
         .arg = "N"},
        {.name = "--moves",
         .kind = ARGS_LONG,
         .to = &r.o.moves,
         .lo = 1,
         .hi = 10000000,
         .arg = "M"},
        {.name = "--ping", .kind = ARGS_BOOL, .to = &r.o.ping},
        {.name = "--rate",
         .kind = ARGS_LONG,
         .to = &r.o.rate,
         .lo = 0,
         .hi = 1000000,
         .arg = "R"},
        {.name = "--size",
         .kind = ARGS_LONG,
         .to = &r.o.size,
         .lo = 3,
         .hi = 8,
         .arg = "S"},
        {.name = "--server", .kind = ARGS_STRING, .to = &r.o.server, .arg = "PATH"},
    };
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "spectators",
        .usage = sp_usage,
        .about = sp_about,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int parsed = args_parse(&spec, argc, argv, NULL);
    if (parsed != ARGS_RUN) return parsed == ARGS_DONE ? 0 : 2;
    struct rlimit rl;
    rlim_t want = (rlim_t)r.o.count + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want &&
        (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want * 2 + 256)) {
        rl.rlim_cur = want * 2 + 256; /* the server inherits it: its side too */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int rc = run(&r);
    if (r.pid > 0) {
        kill(r.pid, SIGTERM);
        waitpid(r.pid, NULL, 0);
    }
    for (long i = 0; r.spect && i < r.o.count; i++) {
        if (r.spect[i].fd >= 0) close(r.spect[i].fd);
        byte_buf_free(&r.spect[i].in);
    }
    free(r.ping);
    for (int k = 0; k < 3; k++) {
        if (r.racer[k].fd >= 0) close(r.racer[k].fd);
        byte_buf_free(&r.racer[k].in);
    }
    free(r.spect);
    free(r.pfd);
    free(r.lat);
    return rc;
}
