/* loadgen.c - drives N JSON clients from one poll() loop and measures moves, bytes and
 * latency. */
#include "loadgen.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jansson.h>

#include "args.h"
#include "net.h"

/* -------------------------------------------------------------- options --- */

/* --ports: as many servers (cluster nodes) as a list on one host will hold. */
#define LG_PORTS_MAX 64
/* Error codes the summary names one by one. */
#define LG_ERROR_CODES 8

typedef struct lg_opts {
    const char *host;
    /* Client k connects to ports[k % n_ports]: --port is a list of one. */
    const char *ports[LG_PORTS_MAX];
    size_t n_ports;
    char ports_buf[LG_PORTS_MAX * 6]; /* --ports' list, split in place */
    long clients;
    double seconds; /* the measured window */
    double warmup;  /* moves before the window, not measured */
    bool race;      /* pairs of clients in `quick` races instead of solo games */
    long pipeline;  /* moves in flight per client */
    bool ws;        /* over WebSocket (GET /ws) instead of JSON lines on TCP */
} lg_opts;

/* --help: the usage (its first line also follows a bad option) and the rest. */
static const char lg_usage[] =
    "usage: race2048-bench server [--help] [--host H] [--port P | --ports P1,P2,...] "
    "[--clients N] [OPTIONS]\n"
    "       race2048-bench server [--host H] [--port P | --ports P1,P2,...]\n"
    "                             [--clients N] [--seconds S] [--warmup S]\n"
    "                             [--mode solo|race] [--pipeline K] [--ws]\n";
static const char lg_about[] =
    "  server   N JSON clients (default 100) on 127.0.0.1:2048 play solo games\n"
    "           (race: quick races of 2, N even) with up to K moves in flight\n"
    "           each (default 1), for S seconds (default 5) after a warm-up\n"
    "           (default 1); prints moves/s, MB/s received and move latency\n"
    "  --ports  spreads the clients over several servers of host H (the nodes\n"
    "           of a cluster): client i connects to the (i mod n)th port\n"
    "  --ws     the same over WebSocket, as browsers speak it (GET /ws)\n"
    "  Every client starts its games from this host's address: run the\n"
    "  server with --max-games-per-min 0 (its default, 120 games a minute\n"
    "  per address, refuses the rest with rate_limited).\n";

static bool parse_secs(const char *text, double lo, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > 86400) return false;
    *out = v;
    return true;
}

/* --ports: splits text (P1,P2,...) into o->ports, each a port number.
 * Returns false (o->ports then unusable) on an empty item, a bad number or
 * more than LG_PORTS_MAX ports. */
static bool parse_ports(const char *text, lg_opts *o) {
    long n;
    if (strlen(text) >= sizeof o->ports_buf) return false;
    snprintf(o->ports_buf, sizeof o->ports_buf, "%s", text);
    o->n_ports = 0;
    for (char *item = o->ports_buf, *comma; item; item = comma) {
        comma = strchr(item, ',');
        if (comma) *comma++ = '\0';
        if (o->n_ports == LG_PORTS_MAX || !args_parse_long(item, 1, 65535, &n))
            return false;
        o->ports[o->n_ports++] = item;
    }
    return true;
}

/* The flags' values, through the parser's table. */
static bool parse_port_flag(const char *v, void *to) {
    lg_opts *o = to;
    long n;
    if (!args_parse_long(v, 1, 65535, &n)) return false;
    o->ports[0] = v, o->n_ports = 1;
    return true;
}

static bool parse_ports_flag(const char *v, void *to) {
    return parse_ports(v, to);
}

static bool parse_seconds_flag(const char *v, void *to) {
    return parse_secs(v, 0.001, to);
}

static bool parse_warmup_flag(const char *v, void *to) {
    return parse_secs(v, 0, to);
}

static bool parse_mode_flag(const char *v, void *to) {
    if (strcmp(v, "solo") && strcmp(v, "race")) return false;
    *(bool *)to = !strcmp(v, "race");
    return true;
}

/* Fills o from the arguments. Returns ARGS_RUN, ARGS_DONE after --help, or
 * ARGS_BAD after printing what is wrong. */
static int parse_args(int argc, char **argv, lg_opts *o) {
    *o = (lg_opts){.host = "127.0.0.1",
                   .ports = {"2048"},
                   .n_ports = 1,
                   .clients = 100,
                   .seconds = 5,
                   .warmup = 1,
                   .pipeline = 1};
    int port_seen = 0, ports_seen = 0;
    const args_flag flags[] = {
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP},
        {.name = "--ws", .kind = ARGS_BOOL, .to = &o->ws},
        {.name = "--host", .kind = ARGS_STRING, .to = &o->host, .arg = "H"},
        {.name = "--port",
         .kind = ARGS_CUSTOM,
         .to = o,
         .parse = parse_port_flag,
         .want = "a port from 1 to 65535",
         .seen = &port_seen,
         .arg = "P"},
        {.name = "--ports",
         .kind = ARGS_CUSTOM,
         .to = o,
         .parse = parse_ports_flag,
         .want = "ports from 1 to 65535, comma-separated (at most 64)",
         .seen = &ports_seen,
         .arg = "P1,P2,..."},
        {.name = "--clients",
         .kind = ARGS_LONG,
         .to = &o->clients,
         .lo = 1,
         .hi = 100000,
         .arg = "N"},
        {.name = "--seconds",
         .kind = ARGS_CUSTOM,
         .to = &o->seconds,
         .parse = parse_seconds_flag,
         .want = "seconds from 0.001 to 86400",
         .arg = "S"},
        {.name = "--warmup",
         .kind = ARGS_CUSTOM,
         .to = &o->warmup,
         .parse = parse_warmup_flag,
         .want = "seconds from 0 to 86400",
         .arg = "S"},
        {.name = "--pipeline",
         .kind = ARGS_LONG,
         .to = &o->pipeline,
         .lo = 1,
         .hi = 1024,
         .arg = "K"},
        {.name = "--mode",
         .kind = ARGS_CUSTOM,
         .to = &o->race,
         .parse = parse_mode_flag,
         .want = "solo or race",
         .arg = "solo|race"},
    };
    const args_spec spec = {
        .prog = "race2048-bench",
        .command = "server",
        .usage = lg_usage,
        .about = lg_about,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
    };
    int rc = args_parse(&spec, argc, argv, NULL);
    if (rc != ARGS_RUN) return rc;
    if (port_seen && ports_seen)
        return args_fail(&spec, "give --port or --ports, not both");
    if (o->race && o->clients % 2)
        return args_fail(&spec, "--mode race pairs clients: --clients must be even");
    return ARGS_RUN;
}

/* --------------------------------------------------------------- clients --- */

/* Where one client is in its cycle of games. */
typedef enum lg_state {
    LG_WAIT_START, /* asked for a game (solo or quick), no start yet */
    LG_PLAYING,    /* in a game: keeps `pipeline` moves in flight */
    LG_STOPPED,    /* my board is over: waits for end (solo) or left (race) */
} lg_state;

typedef struct lg_client {
    net_conn conn;
    lg_state state;
    uint64_t me;       /* my player id, from start */
    uint64_t next_seq; /* seq of the next move to send */
    uint64_t head_seq; /* oldest move in flight; == next_seq when none */
    uint64_t *sent_ns; /* send time of move seq at [seq % pipeline] */
    bool started;      /* has had a first start (the run waits for all) */
    bool leaving;      /* race: sent leave after going over, waits for left */
    /* --ws: the last ws_raw bytes of conn.in are frames not yet turned into
     * lines; before the 101 head ends they are all raw. */
    bool ws_open;
    size_t ws_raw;
} lg_client;

/* Latencies of the window, in microseconds, sorted at the end. */
typedef struct lg_samples {
    uint32_t *v;
    size_t n, cap;
} lg_samples;

typedef struct lg_run {
    lg_opts o;
    lg_client *c;
    struct pollfd *pfd;
    bool measuring;
    long started; /* clients that have had their first start */
    /* Counted in the window only. */
    uint64_t moves;
    uint64_t games; /* ends seen */
    lg_samples lat;
    /* Counted always. */
    uint64_t stale;  /* not_playing for moves that raced the end of a game */
    uint64_t errors; /* every other error the server sent */
    /* The errors by code, for the summary (the first LG_ERROR_CODES codes;
     * the rest count as "other"). */
    struct {
        char code[32];
        uint64_t n;
    } error_codes[LG_ERROR_CODES];
    uint64_t other_errors;
    const char *fatal; /* why the run must stop; NULL while all is well */
    char fatal_buf[256];
} lg_run;

/* Counts one error of this code (NULL: none given). */
static void count_error(lg_run *r, const char *code) {
    if (!code) code = "(no code)";
    for (int i = 0; i < LG_ERROR_CODES; i++) {
        if (!r->error_codes[i].n) {
            snprintf(r->error_codes[i].code, sizeof r->error_codes[i].code, "%s", code);
            r->error_codes[i].n = 1;
            return;
        }
        if (!strcmp(r->error_codes[i].code, code)) {
            r->error_codes[i].n++;
            return;
        }
    }
    r->other_errors++;
}

/* The errors by code on stderr, with what to do about the usual one. */
static void report_errors(const lg_run *r) {
    if (!r->errors) return;
    fprintf(stderr, "race2048-bench: %" PRIu64 " errors from the server:", r->errors);
    bool rate_limited = false;
    for (int i = 0; i < LG_ERROR_CODES && r->error_codes[i].n; i++) {
        fprintf(stderr, " %s=%" PRIu64, r->error_codes[i].code, r->error_codes[i].n);
        rate_limited = rate_limited || !strcmp(r->error_codes[i].code, "rate_limited");
    }
    if (r->other_errors) fprintf(stderr, " other=%" PRIu64, r->other_errors);
    fputc('\n', stderr);
    if (rate_limited)
        fprintf(stderr, "race2048-bench: rate_limited: the server lets one address start "
                        "only --max-games-per-min games a minute (120 by default); run "
                        "it with --max-games-per-min 0 to benchmark\n");
}

static const char *const move_lines[4] = {
    /* left, down, right, up: a cycle that keeps a board alive for a while */
    "{\"type\":\"move\",\"dir\":\"left\",\"seq\":",
    "{\"type\":\"move\",\"dir\":\"down\",\"seq\":",
    "{\"type\":\"move\",\"dir\":\"right\",\"seq\":",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":",
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(lg_run *r, size_t k, const char *why) {
    if (r->fatal) return;
    snprintf(r->fatal_buf, sizeof r->fatal_buf, "client %zu: %s", k, why);
    r->fatal = r->fatal_buf;
}

/* Queues one line; with --ws as a masked text frame of the line without its
 * '\n'. The mask key is zero (payload unchanged): the server cannot tell,
 * and the client's CPU is left to the server being measured. */
static void queue(lg_run *r, size_t k, const char *line) {
    size_t len = strlen(line);
    int rc;
    if (r->o.ws) {
        char frame[256];
        if (len < 2 || len - 1 >= 126) {
            fail(r, k, "a request too long for the load generator's frames");
            return;
        }
        frame[0] = (char)0x81;
        frame[1] = (char)(0x80 | (len - 1));
        memset(frame + 2, 0, 4);
        memcpy(frame + 6, line, len - 1);
        rc = net_queue(&r->c[k].conn, frame, 6 + len - 1);
    } else {
        rc = net_queue(&r->c[k].conn, line, len);
    }
    if (rc != NET_OK) fail(r, k, "out of memory");
}

/* --ws: turns the frames at the tail of the input buffer into lines in place
 * (a payload plus '\n' is never longer than its frame), so the line reader
 * sees what a TCP client would. Drops the 101 head first. */
static void ws_unwrap(lg_run *r, size_t k) {
    lg_client *c = &r->c[k];
    net_conn *nc = &c->conn;
    size_t w = nc->in.len - c->ws_raw, rd = w;
    if (!c->ws_open) {
        const char *end = NULL;
        for (size_t i = rd; i + 4 <= nc->in.len && !end; i++)
            if (!memcmp(nc->in.data + i, "\r\n\r\n", 4)) end = nc->in.data + i + 4;
        if (!end) return;
        if (strncmp(nc->in.data + rd, "HTTP/1.1 101 ", 13) != 0) {
            fail(r, k, "no 101 Switching Protocols for GET /ws");
            return;
        }
        c->ws_open = true;
        rd = (size_t)(end - nc->in.data);
    }
    while (nc->in.len - rd >= 2) {
        const unsigned char *h = (const unsigned char *)nc->in.data + rd;
        size_t avail = nc->in.len - rd, hlen = 2;
        uint64_t len = h[1] & 0x7f;
        if (len == 126) {
            if (avail < 4) break;
            len = (uint64_t)h[2] << 8 | h[3];
            hlen = 4;
        } else if (len == 127) {
            if (avail < 10) break;
            len = 0;
            for (int i = 0; i < 8; i++)
                len = len << 8 | h[2 + i];
            hlen = 10;
        }
        if (len > NET_LINE_MAX) {
            fail(r, k, "a WebSocket message over the line limit");
            return;
        }
        if (avail < hlen + len) break;
        if ((h[0] & 0x0f) == 8) {
            fail(r, k, "the server closed the WebSocket");
            return;
        }
        if ((h[0] & 0x0f) == 1) {
            memmove(nc->in.data + w, nc->in.data + rd + hlen, (size_t)len);
            w += (size_t)len;
            nc->in.data[w++] = '\n';
        }
        rd += hlen + (size_t)len;
    }
    memmove(nc->in.data + w, nc->in.data + rd, nc->in.len - rd);
    c->ws_raw = nc->in.len - rd;
    nc->in.len = (uint32_t)(w + c->ws_raw);
}

static void ask_for_game(lg_run *r, size_t k) {
    r->c[k].state = LG_WAIT_START;
    r->c[k].leaving = false;
    queue(r, k,
          r->o.race ? "{\"type\":\"quick\",\"players\":2}\n" : "{\"type\":\"solo\"}\n");
}

/* Tops up a playing client to `pipeline` moves in flight. */
static void send_moves(lg_run *r, size_t k, uint64_t now) {
    lg_client *c = &r->c[k];
    if (c->state != LG_PLAYING) return;
    while (c->next_seq - c->head_seq < (uint64_t)r->o.pipeline) {
        char line[80];
        uint64_t seq = c->next_seq++;
        snprintf(line, sizeof line, "%s%" PRIu64 "}\n", move_lines[seq % 4], seq);
        c->sent_ns[seq % (uint64_t)r->o.pipeline] = now;
        queue(r, k, line);
    }
}

static void add_sample(lg_run *r, uint64_t ns) {
    lg_samples *s = &r->lat;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 65536;
        uint32_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            r->fatal = "out of memory for latency samples";
            return;
        }
        s->v = v, s->cap = cap;
    }
    uint64_t us = ns / 1000;
    s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* The integer after `"key":` in a line, or -1 if absent or not a
 * non-negative integer (null included). */
static int64_t scan_int(const char *line, const char *key) {
    const char *p = strstr(line, key);
    if (!p) return -1;
    p += strlen(key);
    if (*p < '0' || *p > '9') return -1;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9' && v < INT64_MAX / 10)
        v = v * 10 + (*p++ - '0');
    return v;
}

/* A `state`, on the fast path: the load generator must not spend the CPU
 * the server needs on parsing (two cores, shared). It looks for the keys by
 * name, so field order does not matter; it relies on every key appearing
 * once in a state line, which the protocol's state message guarantees
 * (names cannot hold a '"'). */
static void on_state(lg_run *r, size_t k, const char *line, uint64_t now) {
    lg_client *c = &r->c[k];
    int64_t id = scan_int(line, "\"id\":");
    if (id < 0 || (uint64_t)id != c->me) return; /* an opponent's move */
    int64_t seq = scan_int(line, "\"seq\":");
    if (seq < 0 || (uint64_t)seq != c->head_seq) {
        fail(r, k, "a state that answers no move in flight (replies out of order?)");
        return;
    }
    c->head_seq++;
    if (r->measuring) {
        r->moves++;
        add_sample(r, now - c->sent_ns[(uint64_t)seq % (uint64_t)r->o.pipeline]);
    }
    if (c->state == LG_PLAYING && strstr(line, "\"status\":\"over\"")) {
        /* Moves now would only earn not_playing. Solo: end comes next. A
         * race goes on for the others: leave it, then queue again. */
        c->state = LG_STOPPED;
        if (r->o.race) {
            c->leaving = true;
            queue(r, k, "{\"type\":\"leave\"}\n");
        }
    }
}

static void on_other(lg_run *r, size_t k, const char *line, size_t len) {
    lg_client *c = &r->c[k];
    json_t *msg = json_loadb(line, len, 0, NULL);
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type) {
        fail(r, k, "the server sent a line that is not a typed JSON object");
    } else if (!strcmp(type, "start")) {
        json_t *you = json_object_get(msg, "you");
        if (!json_is_integer(you)) {
            fail(r, k, "a start without `you`");
        } else {
            c->me = (uint64_t)json_integer_value(you);
            c->state = LG_PLAYING;
            if (!c->started) c->started = true, r->started++;
        }
    } else if (!strcmp(type, "end")) {
        if (r->measuring) r->games++;
        if (!c->leaving) ask_for_game(r, k);
    } else if (!strcmp(type, "left")) {
        if (c->leaving) ask_for_game(r, k);
    } else if (!strcmp(type, "error")) {
        const char *code = json_string_value(json_object_get(msg, "code"));
        if (code && !strcmp(code, "not_playing") && c->head_seq < c->next_seq) {
            c->head_seq++; /* a move in flight when the game ended */
            r->stale++;
        } else {
            if (!r->errors)
                fprintf(stderr, "race2048-bench: client %zu: server error: %s\n", k,
                        line);
            r->errors++;
            count_error(r, code);
        }
    } else if (!strcmp(type, "bye")) {
        fail(r, k, "the server is shutting down (bye)");
    }
    /* welcome, queued, player, room and anything new: nothing to do. */
    json_decref(msg);
}

/* Reads what client k has, handles every complete line, tops up its moves
 * and writes. Problems end the run through r->fatal. */
static void service(lg_run *r, size_t k, short revents) {
    lg_client *c = &r->c[k];
    uint64_t now = now_ns();
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
        size_t rx = c->conn.rx_bytes;
        int rc = net_read(&c->conn);
        if (rc < 0 && rc != NET_ERR_CLOSED) {
            fail(r, k, net_strerror(rc));
            return;
        }
        if (r->o.ws) {
            c->ws_raw += c->conn.rx_bytes - rx; /* appended at the tail */
            ws_unwrap(r, k);
        }
        char *line;
        size_t len;
        while ((rc = net_next_line(&c->conn, &line, &len)) == NET_OK && !r->fatal) {
            if (line[0] != '{') continue; /* text-mode bytes: not for us */
            if (!strncmp(line, "{\"type\":\"state\"", 15))
                on_state(r, k, line, now);
            else
                on_other(r, k, line, len);
        }
        if (rc == NET_ERR_LINE_LONG) fail(r, k, net_strerror(rc));
        if (c->conn.eof) fail(r, k, "the server closed the connection early");
    }
    send_moves(r, k, now);
    if (net_want_write(&c->conn) && net_flush(&c->conn) == NET_ERR_IO)
        fail(r, k, net_strerror(NET_ERR_IO));
    r->pfd[k].events = POLLIN | (net_want_write(&c->conn) ? POLLOUT : 0);
}

/* ---------------------------------------------------------------- run --- */

/* One descriptor per client plus a few for stdio and the resolver. Returns
 * 0, or -1 (printed) if the hard limit is too low. */
static int raise_nofile(long clients) {
    struct rlimit rl;
    rlim_t want = (rlim_t)clients + 32;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want) return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        fprintf(
            stderr,
            "race2048-bench: %ld clients need %llu descriptors, the hard limit is %llu\n",
            clients, (unsigned long long)want, (unsigned long long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        fprintf(stderr, "race2048-bench: setrlimit(RLIMIT_NOFILE): %s\n",
                strerror(errno));
        return -1;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples; 0 when there are none. */
static uint32_t pct(const lg_samples *s, double p) {
    if (!s->n) return 0;
    size_t i = (size_t)ceil(p / 100.0 * (double)s->n);
    return s->v[i ? i - 1 : 0];
}

/* Polls every client once (up to timeout_ms) and services the ready ones. */
static void poll_once(lg_run *r, int timeout_ms) {
    size_t n = (size_t)r->o.clients;
    int ready = poll(r->pfd, n, timeout_ms);
    if (ready < 0 && errno != EINTR) r->fatal = "poll failed";
    for (size_t k = 0; k < n && ready > 0 && !r->fatal; k++) {
        if (!r->pfd[k].revents) continue;
        ready--;
        service(r, k, r->pfd[k].revents);
    }
}

static int run(lg_run *r) {
    size_t n = (size_t)r->o.clients;
    r->c = calloc(n, sizeof *r->c);
    r->pfd = calloc(n, sizeof *r->pfd);
    uint64_t *times = calloc(n * (size_t)r->o.pipeline, sizeof *times);
    if (!r->c || !r->pfd || !times) {
        free(times);
        fprintf(stderr, "race2048-bench: out of memory for %zu clients\n", n);
        return 1;
    }
    for (size_t k = 0; k < n; k++)
        r->c[k].conn.fd = -1;

    /* Connect everyone, each sending its first line at once: the server
     * decides the mode from it, and a JSON client must not wait. */
    for (size_t k = 0; k < n && !r->fatal; k++) {
        lg_client *c = &r->c[k];
        const char *port = r->o.ports[k % r->o.n_ports];
        int rc = net_connect(&c->conn, r->o.host, port);
        if (rc != NET_OK) {
            fprintf(stderr, "race2048-bench: client %zu: %s:%s: %s\n", k, r->o.host, port,
                    net_strerror(rc));
            free(times);
            return 1;
        }
        c->sent_ns = times + k * (size_t)r->o.pipeline;
        c->next_seq = c->head_seq = 1;
        r->pfd[k] = (struct pollfd){.fd = c->conn.fd, .events = POLLIN};
        if (r->o.ws) {
            static const char upgrade[] =
                "GET /ws HTTP/1.1\r\nHost: bench\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: cmFjZTIwNDhiZW5jaCEhIQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n";
            if (net_queue(&c->conn, upgrade, sizeof upgrade - 1) != NET_OK)
                fail(r, k, "out of memory");
        }
        queue(r, k, "{\"type\":\"hello\",\"name\":\"load\"}\n");
        ask_for_game(r, k);
        if (net_flush(&c->conn) == NET_ERR_IO) fail(r, k, net_strerror(NET_ERR_IO));
        r->pfd[k].events = POLLIN | (net_want_write(&c->conn) ? POLLOUT : 0);
    }

    /* Every client must have a game before the clock starts; a slow start
     * (thousands of connections on a busy machine) gets a generous limit. */
    uint64_t start_deadline = now_ns() + (uint64_t)(10e9 + 10e6 * (double)n);
    while (!r->fatal && r->started < r->o.clients) {
        if (now_ns() > start_deadline) {
            snprintf(r->fatal_buf, sizeof r->fatal_buf, "only %ld of %ld clients started",
                     r->started, r->o.clients);
            r->fatal = r->fatal_buf;
        }
        poll_once(r, 100);
    }

    uint64_t t0 = now_ns();
    uint64_t t_measure = t0 + (uint64_t)(r->o.warmup * 1e9);
    uint64_t t_end = t_measure + (uint64_t)(r->o.seconds * 1e9);
    uint64_t rx0 = 0, rx1 = 0, now;
    while (!r->fatal && (now = now_ns()) < t_end) {
        if (!r->measuring && now >= t_measure) {
            r->measuring = true;
            t_measure = now;
            for (size_t k = 0; k < n; k++)
                rx0 += r->c[k].conn.rx_bytes;
        }
        uint64_t next = r->measuring ? t_end : t_measure;
        int ms = (int)((next - now) / 1000000u) + 1;
        poll_once(r, ms < 100 ? ms : 100);
    }
    now = now_ns();
    for (size_t k = 0; k < n; k++)
        rx1 += r->c[k].conn.rx_bytes;
    free(times);

    if (r->fatal) {
        fprintf(stderr, "race2048-bench: %s\n", r->fatal);
        report_errors(r); /* e.g. clients that never started: rate_limited */
        return 1;
    }
    double secs = (double)(now - t_measure) / 1e9;
    qsort(r->lat.v, r->lat.n, sizeof *r->lat.v, cmp_u32);
    printf("server clients=%ld mode=%s pipeline=%ld seconds=%.1f moves_per_s=%.0f "
           "rx_mb_per_s=%.2f lat_p50_us=%" PRIu32 " lat_p90_us=%" PRIu32
           " lat_p99_us=%" PRIu32 " lat_max_us=%" PRIu32 " games=%" PRIu64
           " stale=%" PRIu64 " errors=%" PRIu64 " transport=%s\n",
           r->o.clients, r->o.race ? "race" : "solo", r->o.pipeline, secs,
           (double)r->moves / secs, (double)(rx1 - rx0) / secs / 1e6, pct(&r->lat, 50),
           pct(&r->lat, 90), pct(&r->lat, 99), r->lat.n ? r->lat.v[r->lat.n - 1] : 0,
           r->games, r->stale, r->errors, r->o.ws ? "ws" : "tcp");
    fflush(stdout);
    report_errors(r);
    return r->errors ? 1 : 0;
}

int loadgen_main(int argc, char **argv) {
    lg_run r = {0};
    int rc = parse_args(argc, argv, &r.o);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    if (raise_nofile(r.o.clients) < 0) return 1;
    rc = run(&r);
    for (long k = 0; r.c && k < r.o.clients; k++)
        net_close(&r.c[k].conn);
    free(r.c);
    free(r.pfd);
    free(r.lat.v);
    return rc;
}
