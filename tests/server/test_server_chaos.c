/* test_server_chaos.c - a seeded chaos run: ~30 raw clients do random valid and invalid
 * things to race2048d, which must keep its framing promises, stay responsive and exit
 * cleanly.
 *
 * One PRNG seed drives every choice; the seed is printed, and every failure
 * names it. RACE2048_CHAOS_SEED replays another seed, RACE2048_CHAOS_STEPS
 * sets the number of steps and RACE2048_CHAOS_LOG the server's log level.
 * What the server answers depends on timing, so a seed replays the same
 * choices, not always the same run. ctest runs one seed.
 */
#define _GNU_SOURCE /* memmem, SYS_pidfd_open */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "harness.h"

#define NSLOTS        30
#define MAX_LINE      512 /* --max-line below */
#define DEFAULT_SEED  1
#define DEFAULT_STEPS 12000
/* The random phase stops after this much wall time whatever the step count,
 * so a slow machine makes the run shorter, not the test longer. */
#define ACTION_MS 15000
#define IN_CAP    (128 * 1024) /* longest server line we accept */
#define OUT_CAP   (64 * 1024)  /* bytes a client may have waiting to be sent */
#define POOL      48           /* room codes and tokens remembered */

/* RACE2048_CHAOS_LOG (e.g. info) replaces the harness's warn with another log level. */
// clang-format off
static const char *server_flags[] = {
    "--grace", "1", "--idle-timeout", "2", "--max-output", "65536", "--max-line", "512",
    "--max-clients", "40", "--seed", "1", "--log-level", "warn", NULL};
// clang-format on

/* ------------------------------------------------------------------ PRNG --- */

/* splitmix64: tiny, and good enough to pick actions. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Actions draw from one stream; how writes are chopped up draws from another,
 * so that socket timing does not shift the actions a seed picks. */
static rng act_rng, io_rng;

static unsigned below(unsigned n) {
    return (unsigned)(rng_next(&act_rng) % n);
}

static bool pct(unsigned p) {
    return below(100) < p;
}

static unsigned range(unsigned lo, unsigned hi) {
    return lo + below(hi - lo + 1);
}

/* ---------------------------------------------------------------- timing --- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ----------------------------------------------------------------- pools --- */

/* Room codes and resume tokens seen in replies, so requests can name real ones
 * (tokens of other connections too: resume is a takeover). */
typedef struct pool {
    char items[POOL][72];
    unsigned n, next;
} pool;

static pool codes, tokens;

static void pool_add(pool *p, const char *s) {
    if (strlen(s) >= sizeof p->items[0]) return;
    for (unsigned i = 0; i < p->n; i++)
        if (!strcmp(p->items[i], s)) return;
    snprintf(p->items[p->next], sizeof p->items[0], "%s", s);
    p->next = (p->next + 1) % POOL;
    if (p->n < POOL) p->n++;
}

/* Mostly one of the newest: old codes are mostly of rooms that are gone. */
static const char *pool_pick(const pool *p) {
    if (!p->n) return NULL;
    if (pct(70)) {
        unsigned recent = p->n < 6 ? p->n : 6;
        return p->items[(p->next + POOL - 1 - below(recent)) % POOL];
    }
    return p->items[below(p->n)];
}

/* ----------------------------------------------------------------- stats --- */

static struct {
    unsigned connects, eofs, closes, aborts, shut_wr, mutes, dozes, floods, pauses;
    unsigned json_lines, text_lines, late_relaxed, switched;
    unsigned types[12], codes[13];
} st;

static const char *const known_types[] = {"welcome", "queued", "room",   "start",
                                          "state",   "end",    "player", "left",
                                          "rooms",   "pong",   "bye",    "error"};
static const char *const known_codes[] = {
    "bad_json",      "bad_message",    "unknown_type",    "bad_dir",
    "not_playing",   "room_not_found", "already_started", "busy",
    "line_too_long", "bad_token",      "server_full",     "slow_consumer"};
#define NTYPES (sizeof known_types / sizeof known_types[0])
#define NCODES (sizeof known_codes / sizeof known_codes[0])

/* --------------------------------------------------------------- clients --- */

typedef enum kind {
    K_JSON,   /* first byte '{' at once: JSON for the connection's life */
    K_TEXT,   /* first byte neither '{' nor 0xFF: a human on netcat */
    K_TELNET, /* first byte 0xFF: telnet negotiating */
    K_LATE,   /* silent past the detection window, then JSON lines */
    K_SWITCH, /* an empty line first (text mode), then JSON lines */
} kind;

static const char *const kind_names[] = {"json", "text", "telnet", "late-json",
                                         "switch-json"};

typedef enum check {
    CHECK_JSON, /* every line is one compact JSON object with a known type */
    CHECK_LATE, /* text may come first; from the first '{' line on, CHECK_JSON */
    CHECK_TEXT, /* never a JSON message */
} check;

typedef struct chaos {
    int fd; /* -1: the slot is free */
    unsigned serial;
    kind kind;
    check check;
    bool sent_any;
    bool write_dead; /* shut down for writing, or a write failed */
    char final[32];  /* the message after which the server must close, or "" */
    int64_t born, mute_until, doze_until;
    bool split;   /* writes go out a few bytes at a time */
    bool playing; /* a `start` naming it came, and no `end` or `left` since */
    bool ended;   /* its race ended: a rematch is likely next */
    size_t in_len, out_len;
    char in[IN_CAP];
    char out[OUT_CAP];
} chaos;

static chaos slots[NSLOTS];
static uint64_t run_seed;
static int step_no;
static th_server *server;

static void violation(const chaos *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void violation(const chaos *c, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail_msg("chaos seed %" PRIu64 " (RACE2048_CHAOS_SEED to replay), step %d, "
             "connection #%u (%s): %s",
             run_seed, step_no, c ? c->serial : 0, c ? kind_names[c->kind] : "-", msg);
}

/* A printable excerpt of a line for failure messages. */
static const char *excerpt(const char *s, size_t n) {
    static char out[300];
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof out - 5; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f) {
            out[k++] = (char)ch;
        } else {
            snprintf(out + k, 5, "\\x%02x", ch);
            k += 4;
        }
    }
    out[k] = '\0';
    return out;
}

/* Fails the test if race2048d has exited (without reaping it: the harness
 * collects its status at teardown). */
static void check_server_alive(void) {
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)server->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == server->pid)
        violation(NULL, "race2048d exited (code %d, %s) in the middle of the run",
                  si.si_status, si.si_code == CLD_EXITED ? "exit" : "signal");
}

/* --------------------------------------------------------- what arrives --- */

static bool valid_code(const char *s) {
    size_t n = strlen(s);
    if (n < 4 || n > 8) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9'))) return false;
    return true;
}

/* Remembers the room code in field `field` of o, checking its form. */
static void harvest_code(const chaos *c, const json_t *o, const char *field,
                         const char *line, size_t len) {
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v)) return;
    if (!json_is_string(v) || !valid_code(json_string_value(v)))
        violation(c, "a room code that is not 4-8 of A-Z0-9: %s", excerpt(line, len));
    pool_add(&codes, json_string_value(v));
}

static void check_json_line(chaos *c, const char *line, size_t len) {
    st.json_lines++;
    if (len == 0 || line[0] != '{')
        violation(c, "a JSON-mode connection got a line that is not JSON: \"%s\"",
                  excerpt(line, len));
    if (!harness_compact(line, len))
        violation(c, "a line that is not compact JSON: %s", excerpt(line, len));
    json_error_t err;
    json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, &err);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        violation(c, "a line that is not a JSON object (%s): %s", err.text,
                  excerpt(line, len));
    }
    const char *type = json_string_value(json_object_get(o, "type"));
    unsigned t = NTYPES;
    for (unsigned i = 0; type && i < NTYPES; i++)
        if (!strcmp(type, known_types[i])) t = i;
    if (t == NTYPES) {
        json_decref(o);
        violation(c, "an object without a known string type: %s", excerpt(line, len));
    }
    st.types[t]++;
    const char *bad = NULL;
    if (!strcmp(type, "welcome")) {
        const char *token = json_string_value(json_object_get(o, "token"));
        if (!json_is_integer(json_object_get(o, "id")) || !token || !*token ||
            !json_is_string(json_object_get(o, "name")))
            bad = "a welcome without id, name and token";
        else
            pool_add(&tokens, token);
    } else if (!strcmp(type, "error")) {
        const char *code = json_string_value(json_object_get(o, "code"));
        unsigned k = NCODES;
        for (unsigned i = 0; code && i < NCODES; i++)
            if (!strcmp(code, known_codes[i])) k = i;
        if (k == NCODES || !json_is_string(json_object_get(o, "message")))
            bad = "an error without a known code and a message";
        else
            st.codes[k]++;
        if (code && (!strcmp(code, "line_too_long") || !strcmp(code, "server_full") ||
                     !strcmp(code, "slow_consumer")))
            snprintf(c->final, sizeof c->final, "error %s", code);
    } else if (!strcmp(type, "bye")) {
        snprintf(c->final, sizeof c->final, "bye");
    } else if (!strcmp(type, "room") || !strcmp(type, "start") || !strcmp(type, "end") ||
               !strcmp(type, "player")) {
        harvest_code(c, o, "room", line, len);
        if (!strcmp(type, "start"))
            c->playing = json_is_integer(json_object_get(o, "you"));
        if (!strcmp(type, "end")) c->ended = c->playing, c->playing = false;
    } else if (!strcmp(type, "left")) {
        c->playing = false;
    } else if (!strcmp(type, "rooms")) {
        json_t *list = json_object_get(o, "rooms");
        size_t i;
        json_t *row;
        if (!json_is_array(list)) bad = "rooms without a list";
        json_array_foreach(list, i, row) harvest_code(c, row, "room", line, len);
    }
    json_decref(o);
    if (bad) violation(c, "%s: %s", bad, excerpt(line, len));
}

static void on_line(chaos *c, const char *line, size_t len) {
    if (c->final[0])
        violation(c, "a line after %s, which must be the last: \"%s\"", c->final,
                  excerpt(line, len));
    switch (c->check) {
    case CHECK_LATE:
        if (len == 0 || line[0] != '{') return; /* text before the switch to JSON */
        c->check = CHECK_JSON;
        st.switched++;
        check_json_line(c, line, len);
        break;
    case CHECK_JSON:
        check_json_line(c, line, len);
        break;
    case CHECK_TEXT:
        st.text_lines++;
        if (memmem(line, len, "{\"type\"", 7))
            violation(c, "a text-mode connection got JSON: \"%s\"", excerpt(line, len));
        break;
    }
}

static void take_bytes(chaos *c, const char *data, size_t n) {
    while (n > 0) {
        size_t k = n < IN_CAP - c->in_len ? n : IN_CAP - c->in_len;
        memcpy(c->in + c->in_len, data, k);
        c->in_len += k;
        data += k;
        n -= k;
        size_t start = 0;
        for (char *nl; (nl = memchr(c->in + start, '\n', c->in_len - start));) {
            size_t end = (size_t)(nl - c->in);
            on_line(c, c->in + start, end - start);
            start = end + 1;
        }
        memmove(c->in, c->in + start, c->in_len - start);
        c->in_len -= start;
        if (c->in_len == IN_CAP) {
            if (c->check != CHECK_TEXT)
                violation(c, "a line longer than %d bytes: %s", IN_CAP,
                          excerpt(c->in, 200));
            /* Text without a line end for this long: check it, keep a tail
             * so a message split across the cut is still seen. */
            on_line(c, c->in, c->in_len);
            memmove(c->in, c->in + c->in_len - 16, 16);
            c->in_len = 16;
        }
    }
}

/* ---------------------------------------------------------------- output --- */

static void emit(chaos *c, const void *data, size_t n) {
    if (c->fd < 0 || c->write_dead || n > OUT_CAP - c->out_len) return;
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
    if (n) c->sent_any = true;
}

/* Writes what the socket takes now; in split mode only a few bytes. */
static void flush(chaos *c) {
    while (c->fd >= 0 && !c->write_dead && c->out_len) {
        size_t k = c->out_len;
        if (c->split) {
            size_t piece = 1 + (size_t)(rng_next(&io_rng) % 12);
            if (piece < k) k = piece;
        }
        ssize_t w = send(c->fd, c->out, k, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (w < 0) { /* the server closed: reading will find the end */
            c->write_dead = true;
            c->out_len = 0;
            return;
        }
        memmove(c->out, c->out + w, c->out_len - (size_t)w);
        c->out_len -= (size_t)w;
        if (c->split) return;
    }
}

/* ------------------------------------------------------- connect, close --- */

static void slot_free(chaos *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->in_len = c->out_len = 0;
}

static void chaos_close(chaos *c, bool reset) {
    if (reset) {
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    slot_free(c);
}

static void on_eof(chaos *c) {
    st.eofs++;
    slot_free(c);
}

/* Reads what has arrived; returns false once the connection has ended. */
static bool drain_input(chaos *c) {
    static char buf[64 * 1024];
    for (int rounds = 0; rounds < 8; rounds++) {
        ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (r <= 0) { /* EOF, or a reset: the server closed either way */
            on_eof(c);
            return false;
        }
        take_bytes(c, buf, (size_t)r);
    }
    return true;
}

static void gen_first(chaos *c);

static void chaos_connect(chaos *c) {
    static unsigned serial;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    if (pct(15)) {
        int small = 4096; /* a slow consumer fills up sooner */
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)server->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int64_t t0 = now_ms();
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        check_server_alive();
        violation(NULL, "connect: %s", strerror(e));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    memset(c, 0, offsetof(chaos, in));
    c->fd = fd;
    c->serial = ++serial;
    c->born = t0;
    unsigned k = below(100);
    c->kind = k < 50   ? K_JSON
              : k < 68 ? K_TEXT
              : k < 80 ? K_TELNET
              : k < 90 ? K_LATE
                       : K_SWITCH;
    c->check = c->kind == K_JSON                          ? CHECK_JSON
               : c->kind == K_TEXT || c->kind == K_TELNET ? CHECK_TEXT
                                                          : CHECK_LATE;
    c->split = pct(20);
    st.connects++;
    if (c->kind == K_LATE) return; /* speaks later, after the detection window */
    gen_first(c);
    flush(c);
    /* protocol/README.md promises JSON-only output to a client whose first line comes
     * within 100 ms; a stalled test process may be later than that. */
    if (c->kind == K_JSON && now_ms() - t0 > 100) {
        c->check = CHECK_LATE;
        st.late_relaxed++;
    }
}

/* ------------------------------------------------------- JSON requests --- */

typedef struct sb {
    char b[8192];
    size_t n;
} sb;

static void sb_add(sb *s, const void *d, size_t n) {
    if (n > sizeof s->b - s->n) n = sizeof s->b - s->n;
    memcpy(s->b + s->n, d, n);
    s->n += n;
}

static void sb_printf(sb *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sb *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->b + s->n, sizeof s->b - s->n, fmt, ap);
    va_end(ap);
    if (n > 0)
        s->n += (size_t)n < sizeof s->b - s->n ? (size_t)n : sizeof s->b - s->n - 1;
}

static const char *const dirs[] = {"up", "down", "left", "right"};
static const unsigned targets[] = {8, 16, 32, 64, 128, 2048, 2048, 1u << 20};
static const char name_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
static const char *const unicode[] = {"\xc3\xa9",         "\xe6\x97\xa5\xe6\x9c\xac",
                                      "\xf0\x9f\x98\x80", "\\u00e9",
                                      "\\ud83d\\ude00",   "\\u0000",
                                      "\xe2\x80\xae",     "\xef\xbb\xbf"};
static const char *const bad_utf8[] = {"\xc3\x28",
                                       "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80",
                                       "\xc0\xaf",
                                       "\x80",
                                       "\xff\xfe",
                                       "\xe2\x82",
                                       "\\ud800",
                                       "\\udc00\\ud800",
                                       "\xf8\x88\x80\x80\x80"};

static void add_name(sb *s) {
    unsigned n = range(1, 16);
    for (unsigned i = 0; i < n; i++)
        sb_add(s, &name_chars[below(sizeof name_chars - 1)], 1);
}

static void add_code(sb *s) {
    const char *code = pool_pick(&codes);
    if (code && pct(85)) {
        if (pct(10)) { /* codes are case-insensitive */
            for (const char *p = code; *p; p++) {
                char ch = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
                sb_add(s, &ch, 1);
            }
        } else {
            sb_printf(s, "%s", code);
        }
        return;
    }
    static const char alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    unsigned n = range(4, 8);
    for (unsigned i = 0; i < n; i++)
        sb_add(s, &alphabet[below(sizeof alphabet - 1)], 1);
}

static void add_settings(sb *s, bool players, bool time_limit) {
    if (players && pct(80))
        sb_printf(s, ",\"players\":%u", pct(85) ? range(2, 3) : range(2, 8));
    if (pct(75)) sb_printf(s, ",\"size\":%u", pct(80) ? range(3, 4) : range(3, 8));
    if (pct(50)) sb_printf(s, ",\"target\":%u", targets[below(8)]);
    if (time_limit && pct(40))
        sb_printf(s, ",\"time_limit\":%u", pct(50) ? range(1, 3) : 0);
}

static void add_ping_t(sb *s) {
    switch (below(7)) {
    case 0:
        return;
    case 1:
        sb_printf(s, ",\"t\":%u", (unsigned)rng_next(&act_rng));
        return;
    case 2:
        sb_printf(s, ",\"t\":\"%s%s\"", unicode[below(8)], unicode[below(8)]);
        return;
    case 3:
        sb_printf(s, ",\"t\":{\"a\":[1,\"x\",null,true,{\"b\":-2.5e3}]}");
        return;
    case 4: { /* a big echo: output for a client that does not read */
        unsigned n = range(100, 400);
        sb_printf(s, ",\"t\":\"");
        for (unsigned i = 0; i < n; i++)
            sb_add(s, "x", 1);
        sb_add(s, "\"", 1);
        return;
    }
    case 5:
        sb_printf(s, ",\"t\":null");
        return;
    default:
        sb_printf(s, ",\"t\":[%d,\"%s\"]", (int)below(1000) - 500, unicode[below(8)]);
        return;
    }
}

/* A well-formed request of a random type with mostly sensible fields. */
static void gen_valid(sb *s) {
    unsigned r = below(100);
    bool extra = pct(8); /* unknown fields are ignored */
    /* "type" need not come first. */
    sb_printf(s, "%s", pct(10) ? "{\"zz\":0" : "{");
    const char *sep = s->n > 1 ? "," : "";
    if (r < 36) {
        sb_printf(s, "%s\"type\":\"move\",\"dir\":\"%s\"", sep, dirs[below(4)]);
        if (pct(60))
            sb_printf(s, ",\"seq\":%" PRIu64,
                      pct(70) ? (uint64_t)below(1000)
                              : rng_next(&act_rng) & ((UINT64_C(1) << 53) - 1));
    } else if (r < 41) {
        sb_printf(s, "%s\"type\":\"hello\",\"name\":\"", sep);
        add_name(s);
        sb_add(s, "\"", 1);
    } else if (r < 47) {
        sb_printf(s, "%s\"type\":\"solo\"", sep);
        add_settings(s, false, false);
        if (pct(40)) sb_printf(s, ",\"seed\":%u", (unsigned)rng_next(&act_rng));
    } else if (r < 54) {
        sb_printf(s, "%s\"type\":\"create\"", sep);
        add_settings(s, true, true);
    } else if (r < 61) {
        sb_printf(s, "%s\"type\":\"join\",\"room\":\"", sep);
        add_code(s);
        sb_add(s, "\"", 1);
    } else if (r < 68) {
        sb_printf(s, "%s\"type\":\"quick\"", sep);
        if (pct(70)) sb_printf(s, ",\"players\":%u", range(2, 3));
        if (pct(50)) sb_printf(s, ",\"size\":%u", range(3, 4));
        if (pct(15)) sb_printf(s, ",\"target\":%u", targets[below(8)]);
    } else if (r < 73) {
        sb_printf(s, "%s\"type\":\"watch\",\"room\":\"", sep);
        add_code(s);
        sb_add(s, "\"", 1);
    } else if (r < 79) {
        sb_printf(s, "%s\"type\":\"leave\"", sep);
    } else if (r < 85) {
        const char *token = pool_pick(&tokens);
        sb_printf(s, "%s\"type\":\"resume\",\"token\":\"%s\"", sep,
                  token && pct(85) ? token : "00112233445566778899aabbccddeeff");
    } else if (r < 89) {
        sb_printf(s, "%s\"type\":\"rooms\"", sep);
    } else if (r < 95) {
        sb_printf(s, "%s\"type\":\"ping\"", sep);
        add_ping_t(s);
    } else {
        sb_printf(s, "%s\"type\":\"rematch\"", sep);
    }
    if (extra) sb_printf(s, ",\"x\":[1,{\"y\":null}]");
    sb_add(s, "}", 1);
}

/* Requests with the wrong types, ranges and shapes. */
static const char *const wrong[] = {
    "{\"type\":5}",
    "{\"type\":null}",
    "{\"type\":\"\"}",
    "{\"type\":\"MOVE\",\"dir\":\"up\"}",
    "{\"type\":\"fly\"}",
    "{\"type\":\"solo\",\"size\":\"4\"}",
    "{\"type\":\"solo\",\"size\":4.0}",
    "{\"type\":\"solo\",\"size\":2}",
    "{\"type\":\"solo\",\"size\":9}",
    "{\"type\":\"solo\",\"target\":3}",
    "{\"type\":\"solo\",\"target\":4}",
    "{\"type\":\"solo\",\"target\":2097152}",
    "{\"type\":\"solo\",\"seed\":-1}",
    "{\"type\":\"solo\",\"seed\":4294967296}",
    "{\"type\":\"solo\",\"seed\":1e999}",
    "{\"type\":\"create\",\"players\":1}",
    "{\"type\":\"create\",\"players\":9}",
    "{\"type\":\"create\",\"time_limit\":86401}",
    "{\"type\":\"create\",\"time_limit\":-0}",
    "{\"type\":\"join\"}",
    "{\"type\":\"join\",\"room\":null}",
    "{\"type\":\"join\",\"room\":\"\"}",
    "{\"type\":\"join\",\"room\":\"ABC\"}",
    "{\"type\":\"join\",\"room\":\"ABCDEFGHI\"}",
    "{\"type\":\"join\",\"room\":[\"ABCD\"]}",
    "{\"type\":\"watch\",\"room\":1234}",
    "{\"type\":\"move\"}",
    "{\"type\":\"move\",\"dir\":1}",
    "{\"type\":\"move\",\"dir\":\"north\"}",
    "{\"type\":\"move\",\"dir\":\"UP\"}",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":-1}",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":9007199254740992}",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":18446744073709551616}",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":1.5}",
    "{\"type\":\"move\",\"dir\":\"up\",\"seq\":\"1\"}",
    "{\"type\":\"hello\"}",
    "{\"type\":\"hello\",\"name\":\"\"}",
    "{\"type\":\"hello\",\"name\":\"a b\"}",
    "{\"type\":\"hello\",\"name\":\"abcdefghijklmnopq\"}",
    "{\"type\":\"hello\",\"name\":7}",
    "{\"type\":\"resume\"}",
    "{\"type\":\"resume\",\"token\":\"\"}",
    "{\"type\":\"resume\",\"token\":5}",
    "{\"type\":\"ping\",\"t\":1e400}",
    "{\"type\":\"ping\",\"t\":123456789012345678901234567890}",
    "{\"type\":\"ping\",\"type\":\"rooms\"}",
    "{\"type\":\"rooms\",\"a\":1,\"a\":2}",
    "{}",
    "[]",
    "[1,2]",
    "\"ping\"",
    "null",
    "true",
    "3",
    "{\"type\":\"ping\"} {\"type\":\"ping\"}",
    "{\"type\":\"ping\",}",
    "{'type':'ping'}",
    "{\"type\":\"ping\"",
    "{\"type\":\"ping\"}}",
};

static void gen_invalid(sb *s) {
    switch (below(12)) {
    case 0: { /* random bytes */
        unsigned n = range(1, 80);
        for (unsigned i = 0; i < n; i++) {
            char ch = (char)below(256);
            if (ch == '\n') ch = '~';
            sb_add(s, &ch, 1);
        }
        break;
    }
    case 1: { /* truncated JSON */
        sb full = {.n = 0};
        gen_valid(&full);
        sb_add(s, full.b, below((unsigned)full.n));
        break;
    }
    case 2: { /* over the line limit: line_too_long, then the server closes */
        unsigned n = MAX_LINE + range(1, 3000);
        sb_printf(s, "{\"type\":\"ping\",\"t\":\"");
        while (s->n < n && s->n < sizeof s->b - 4)
            sb_add(s, pct(50) ? "a" : "\xc3\xa9", pct(50) ? 1 : 2);
        sb_add(s, "\"}", 2);
        break;
    }
    case 3: { /* deep nesting, sometimes past the line limit */
        unsigned depth = pct(80) ? range(1, 240) : range(300, 2000);
        const char *open = pct(50) ? "[" : "{\"a\":";
        sb_printf(s, "{\"type\":\"ping\",\"t\":");
        for (unsigned i = 0; i < depth; i++)
            sb_printf(s, "%s", open);
        sb_add(s, "1", 1);
        for (unsigned i = 0; i < depth; i++)
            sb_add(s, open[0] == '[' ? "]" : "}", 1);
        sb_add(s, "}", 1);
        break;
    }
    case 4:
    case 5:
        sb_printf(s, "%s", wrong[below(sizeof wrong / sizeof wrong[0])]);
        break;
    case 6: { /* unicode in every string field */
        static const char *const fields[] = {"type", "name", "dir", "room", "token", "t"};
        unsigned f = below(6);
        sb_printf(s, "{\"type\":\"%s\",\"%s\":\"%s%s\"}",
                  f == 0    ? unicode[below(8)]
                  : pct(50) ? "hello"
                            : "ping",
                  fields[f ? f : 1], unicode[below(8)], unicode[below(8)]);
        break;
    }
    case 7: /* invalid UTF-8 */
        sb_printf(s, "{\"type\":\"%s\",\"%s\":\"a%sb\"}", pct(50) ? "hello" : "ping",
                  pct(50) ? "name" : "t", bad_utf8[below(10)]);
        break;
    case 8: { /* a NUL byte inside a line */
        sb full = {.n = 0};
        gen_valid(&full);
        unsigned at = below((unsigned)full.n);
        sb_add(s, full.b, at);
        sb_add(s, "\0", 1);
        sb_add(s, full.b + at, full.n - at);
        break;
    }
    case 9: /* a bare carriage return is no line end in JSON mode */
        sb_printf(s, "{\"type\":\"ping\"}\r{\"type\":\"rooms\"}\r\r");
        break;
    case 10: { /* lines of exactly the limit, and one byte over */
        unsigned n = MAX_LINE + below(2);
        sb_printf(s, "{\"type\":\"ping\",\"t\":\"");
        while (s->n < n - 2)
            sb_add(s, "z", 1);
        sb_add(s, "\"}", 2);
        break;
    }
    default:
        sb_printf(s, "{\"type\":\"ping\",\"t\":\"\\u%04x\\x\\q\"}", below(65536));
        break;
    }
}

static void end_json_line(sb *s) {
    if (pct(15))
        sb_add(s, "\r\n", 2);
    else
        sb_add(s, "\n", 1);
}

/* True once a K_LATE or K_SWITCH client is known to be in JSON mode: until
 * then it sends only well-formed requests, so the server's text mode cannot
 * take one of its lines for a command. */
static bool json_confirmed(const chaos *c) {
    return c->kind == K_JSON || c->check == CHECK_JSON;
}

static void json_action(chaos *c) {
    sb s = {.n = 0};
    if (c->ended && pct(50)) {
        c->ended = false;
        sb_printf(&s, "{\"type\":\"rematch\"}");
    } else if (c->playing && pct(70)) /* a racer mostly moves */
        sb_printf(&s, "{\"type\":\"move\",\"dir\":\"%s\"}", dirs[below(4)]);
    else if (json_confirmed(c) && pct(25))
        gen_invalid(&s);
    else
        gen_valid(&s);
    end_json_line(&s);
    emit(c, s.b, s.n);
}

/* ------------------------------------------------------------ text mode --- */

static const char *const text_cmds[] = {
    "solo",
    "solo 3",
    "solo 8",
    "solo 9",
    "SOLO",
    "wasd",
    "w",
    "a",
    "s",
    "d",
    "hjkl",
    "up",
    "left down right",
    "wwwwaaaassssdddd",
    "  w a s d  ",
    "quick",
    "quick 2",
    "quick 3",
    "quick 9",
    "leave",
    ":",
    "rooms",
    "create",
    "create 2",
    "create 3",
    "help",
    "color off",
    "color on",
    "rematch",
    "name bob",
    "name",
    "NAME x_y",
    "name !!",
    "watch",
    "join",
    "join ZZZZ",
    "what now",
    "\x1b[A\x1b[B",
    "\x1bOC",
    "\x1b[D w",
    "\x1b",
    "\x1b[",
    "\x7f\x7fw",
    "\t",
    "colour off",
};

static void add_text_end(sb *s) {
    static const char *const ends[] = {"\n", "\r\n", "\r", "\r\0"};
    unsigned e = below(4);
    sb_add(s, ends[e], e == 3 ? 2 : strlen(ends[e]));
}

/* Telnet commands, whole or broken. */
static void gen_telnet(sb *s) {
    switch (below(11)) {
    case 0:
        sb_add(s, "\xff\xfd\x01\xff\xfd\x03", 6); /* DO ECHO, DO SGA: character mode */
        break;
    case 1:
        sb_add(s, "\xff\xfe\x01", 3); /* DONT ECHO */
        break;
    case 2: { /* WILL NAWS and a window size, 0xFF doubled */
        sb_add(s, "\xff\xfb\x1f\xff\xfa\x1f", 6);
        for (int i = 0; i < 4; i++) {
            unsigned char b = (unsigned char)(pct(20) ? 0xff : pct(30) ? 0 : below(256));
            sb_add(s, &b, 1);
            if (b == 0xff) sb_add(s, &b, 1);
        }
        sb_add(s, "\xff\xf0", 2);
        break;
    }
    case 3:
        sb_add(s, "\xff\xf4\xff\xfd\x06", 5); /* IAC IP, DO TIMING-MARK */
        break;
    case 4:
        sb_add(s, "\xff\xf6", 2); /* AYT */
        break;
    case 5: { /* a subnegotiation that never ends */
        sb_add(s, "\xff\xfa\x18", 3);
        unsigned n = range(1, 40);
        for (unsigned i = 0; i < n; i++) {
            char ch = (char)below(256);
            if ((unsigned char)ch == 0xff) ch = 'x';
            sb_add(s, &ch, 1);
        }
        break;
    }
    case 6:
        sb_add(s, "\xff", 1); /* a lone IAC */
        break;
    case 7:
        sb_add(s, "\xff\xff", 2); /* a 0xFF data byte */
        break;
    case 8:
        sb_add(s, "\xff\xfb\x18\xff\xfa\x18\x00xterm\xff\xf0", 12);
        break;
    case 9: { /* IAC and a random command byte */
        unsigned char b[3] = {0xff, (unsigned char)range(0xf0, 0xfe),
                              (unsigned char)below(256)};
        sb_add(s, b, 3);
        break;
    }
    default:
        sb_add(s, "\xff\xfc\x01\xff\xfe\x03", 6); /* WONT ECHO, DONT SGA */
        break;
    }
}

/* Random text bytes, never a '{' (a text client that sent one may have
 * switched to JSON, and then the check would not know what to expect). */
static void gen_text_noise(sb *s) {
    unsigned n = range(1, 40);
    for (unsigned i = 0; i < n; i++) {
        char ch = (char)below(256);
        if (ch == '{' || ch == '\n') ch = '.';
        sb_add(s, &ch, 1);
    }
}

static void text_action(chaos *c) {
    sb s = {.n = 0};
    unsigned r = below(100);
    if (r < 45) {
        sb_printf(&s, "%s", text_cmds[below(sizeof text_cmds / sizeof text_cmds[0])]);
        add_text_end(&s);
    } else if (r < 55) {
        sb_printf(&s, "%s ", pct(50) ? "join" : "watch");
        add_code(&s);
        add_text_end(&s);
    } else if (r < 65) { /* keys, as in character mode */
        static const char *const keys[] = {"w", "a",    "s",    "d", "\x1b[A", "\x1bOB",
                                           ":", "\x7f", "\r\0", "x", "\x1b"};
        unsigned n = range(1, 12);
        for (unsigned i = 0; i < n; i++) {
            const char *k = keys[below(11)];
            sb_add(&s, k, !strcmp(k, "\r") ? 2 : strlen(k));
        }
    } else if (r < 75) {
        gen_telnet(&s);
    } else if (r < 82) {
        gen_text_noise(&s);
        if (pct(60)) add_text_end(&s);
    } else if (r < 85) {
        sb_add(&s, pct(50) ? "\x03" : "\x04", 1); /* Ctrl-C, Ctrl-D: quit */
    } else if (r < 87) {
        sb_printf(&s, "quit\n");
    } else if (r < 90) { /* over the line limit */
        unsigned n = MAX_LINE + range(1, 2000);
        while (s.n < n)
            sb_add(&s, "w", 1);
        add_text_end(&s);
    } else {
        sb_printf(&s, ":%s", pct(50) ? "rooms" : "leave");
        sb_add(&s, "\r\0", 2);
    }
    emit(c, s.b, s.n);
}

/* The first bytes of a connection, which decide its mode. */
static void gen_first(chaos *c) {
    sb s = {.n = 0};
    switch (c->kind) {
    case K_JSON:
        if (pct(50)) {
            sb_printf(&s, "{\"type\":\"hello\",\"name\":\"");
            add_name(&s);
            sb_add(&s, "\"}", 2);
        } else if (pct(70)) {
            gen_valid(&s);
        } else {
            sb_add(&s, "{", 1); /* JSON mode: anything may follow */
            gen_invalid(&s);
        }
        end_json_line(&s);
        break;
    case K_TEXT:
        if (pct(30)) { /* escape sequences as the very first bytes */
            sb_printf(&s, "%s", pct(50) ? "\x1b[A" : "\x1b[2J\x1bOD");
            if (pct(50)) add_text_end(&s);
        } else {
            sb_printf(&s, "%s", text_cmds[below(sizeof text_cmds / sizeof text_cmds[0])]);
            if (s.b[0] == '\t' || s.n == 0) s.n = 0, sb_printf(&s, "help");
            add_text_end(&s);
        }
        break;
    case K_TELNET:
        gen_telnet(&s);
        if (s.b[0] != '\xff') s.n = 0, sb_add(&s, "\xff\xfd\x01", 3);
        break;
    case K_SWITCH:
        sb_add(&s, pct(50) ? "\r\n" : "\n", pct(50) ? 2 : 1); /* an empty line */
        break;
    case K_LATE:
        break;
    }
    emit(c, s.b, s.n);
}

/* -------------------------------------------------------------- the run --- */

/* Reads and writes for up to ms: every client that reads takes what arrived. */
static void pump(int ms) {
    struct pollfd pf[NSLOTS];
    chaos *who[NSLOTS];
    int n = 0;
    int64_t now = now_ms();
    for (int i = 0; i < NSLOTS; i++) {
        chaos *c = &slots[i];
        if (c->fd < 0) continue;
        short ev = 0;
        if (c->mute_until <= now) ev |= POLLIN;
        if (c->out_len && !c->write_dead) ev |= POLLOUT;
        if (!ev) continue;
        pf[n] = (struct pollfd){.fd = c->fd, .events = ev};
        who[n++] = c;
    }
    if (poll(pf, (nfds_t)n, ms) <= 0) return;
    for (int i = 0; i < n; i++) {
        chaos *c = who[i];
        if (pf[i].revents & POLLOUT) flush(c);
        if (c->fd >= 0 && (pf[i].events & POLLIN) &&
            (pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
            drain_input(c);
    }
}

static void flood(chaos *c) {
    st.floods++;
    c->split = false;
    unsigned n = range(20, 150);
    unsigned what = below(3);
    sb s = {.n = 0};
    for (unsigned i = 0; i < n; i++) {
        if (c->kind == K_TEXT || c->kind == K_TELNET) {
            sb_printf(&s, "%s\n", pct(80) ? "wasd" : "rooms");
        } else if (what == 0) {
            sb_printf(&s, "{\"type\":\"move\",\"dir\":\"%s\",\"seq\":%u}\n",
                      dirs[below(4)], i);
        } else if (what == 1) {
            sb_printf(&s, "{\"type\":\"ping\",\"t\":\"%0300u\"}\n", i);
        } else {
            sb_printf(&s, "{\"type\":\"rooms\"}\n");
        }
        if (s.n > sizeof s.b - 400) {
            emit(c, s.b, s.n);
            s.n = 0;
        }
    }
    emit(c, s.b, s.n);
}

/* One random thing done by one random client. */
static void act(void) {
    chaos *c = &slots[below(NSLOTS)];
    int64_t now = now_ms();
    if (c->fd < 0) {
        if (pct(70)) chaos_connect(c);
        return;
    }
    if (c->kind == K_LATE && !c->sent_any && now - c->born < 350) return;
    unsigned r = below(1000);
    if (r < 12) {
        st.closes++;
        chaos_close(c, false);
    } else if (r < 20) {
        st.aborts++;
        chaos_close(c, true);
    } else if (r < 26) {
        if (!c->write_dead) {
            st.shut_wr++;
            shutdown(c->fd, SHUT_WR);
            c->write_dead = true;
        }
    } else if (r < 32) {
        st.closes++;
        chaos_close(c, pct(30));
        chaos_connect(c); /* a reconnect */
    } else if (r < 45) {
        st.mutes++;
        c->mute_until = now + range(200, 3000);
    } else if (r < 52) {
        st.dozes++;
        c->doze_until = now + range(500, 3000);
    } else if (r < 60) {
        if (c->doze_until <= now &&
            (c->kind == K_TEXT || c->kind == K_TELNET || json_confirmed(c)))
            flood(c);
    } else if (r < 66) {
        c->split = !c->split;
    } else if (c->doze_until <= now) {
        if (c->kind == K_TEXT || c->kind == K_TELNET)
            text_action(c);
        else
            json_action(c);
    }
    if (c->fd >= 0) flush(c);
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : fallback;
}

/* After SIGTERM: every chaos connection must be closed by the server, and
 * what comes before the close keeps the rules. */
static void drain_all(int64_t deadline) {
    for (int i = 0; i < NSLOTS; i++) {
        slots[i].mute_until = 0;
        slots[i].out_len = 0;
    }
    for (;;) {
        int open = 0;
        for (int i = 0; i < NSLOTS; i++)
            open += slots[i].fd >= 0;
        if (!open) return;
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            for (int i = 0; i < NSLOTS; i++)
                if (slots[i].fd >= 0)
                    violation(&slots[i], "still open %d ms after SIGTERM",
                              harness_ms(5000));
        }
        pump(left > 100 ? 100 : (int)left);
    }
}

/* Waits until the server has exited, without reaping it. */
static void wait_server_exit(int64_t deadline) {
    int pidfd = (int)syscall(SYS_pidfd_open, server->pid, 0);
    for (;;) {
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)server->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == server->pid)
            break;
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            if (pidfd >= 0) close(pidfd);
            violation(NULL, "race2048d did not exit within %d ms of SIGTERM",
                      harness_ms(5000));
        }
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        poll(pidfd >= 0 ? &p : NULL, pidfd >= 0 ? 1 : 0, left < 20 ? (int)left : 20);
    }
    if (pidfd >= 0) close(pidfd);
}

/* A fresh client's ping gets its pong. A refusal (server_full) is allowed
 * while connections of the run are still being torn down: then try again. */
static void final_ping(void) {
    int64_t deadline = now_ms() + harness_ms(10000);
    for (int attempt = 1;; attempt++) {
        client *f = client_connect(server);
        client_send(f, "{\"type\":\"ping\",\"t\":\"alive\"}");
        json_t *o;
        while ((o = client_next(f, WAIT)) && !strcmp(jstr(o, "type"), "welcome"))
            ;
        if (o && !strcmp(jstr(o, "type"), "pong")) {
            assert_string_equal(jstr(o, "t"), "alive");
            if (attempt > 1)
                print_message("final ping: answered at attempt %d\n", attempt);
            return;
        }
        if (!o || strcmp(jstr(o, "type"), "error") ||
            strcmp(jstr(o, "code"), "server_full"))
            violation(NULL, "a fresh client's ping got %s",
                      o ? json_string_value(json_object_get(o, "type")) : "EOF");
        client_expect_eof(f, WAIT);
        if (now_ms() > deadline) violation(NULL, "the server stayed full after the run");
        poll(NULL, 0, 100); /* "try again later" */
    }
}

static void run_chaos(uint64_t seed, int steps) {
    run_seed = seed;
    act_rng.s = seed;
    io_rng.s = seed ^ 0x5DEECE66Dull;
    memset(&st, 0, sizeof st);
    memset(&codes, 0, sizeof codes);
    memset(&tokens, 0, sizeof tokens);
    for (int i = 0; i < NSLOTS; i++)
        slots[i].fd = -1;
    const char *level = getenv("RACE2048_CHAOS_LOG");
    if (level && *level) server_flags[13] = level;
    server = server_start(server_flags);

    int64_t start = now_ms(), stop_at = start + ACTION_MS;
    for (step_no = 0; step_no < steps && now_ms() < stop_at; step_no++) {
        if (below(5000) == 0) {
            /* Everyone silent past the grace period, sometimes the idle timeout. */
            st.pauses++;
            int64_t until = now_ms() + range(1100, 2600);
            while (now_ms() < until)
                pump((int)(until - now_ms()));
        }
        act();
        pump(1);
        if (step_no % 200 == 0) check_server_alive();
    }
    int done_steps = step_no;
    int64_t random_ms = now_ms() - start;
    check_server_alive();

    final_ping();

    int64_t term = now_ms();
    kill(server->pid, SIGTERM);
    drain_all(term + harness_ms(5000));
    wait_server_exit(term + harness_ms(5000));
    int code = server_stop(server);
    if (code != 0)
        violation(NULL, "race2048d exited with %d (see its stderr: sanitizer report?)",
                  code);

    print_message("chaos seed %" PRIu64 ": %d steps in %lld ms; %u connections "
                  "(%u closed, %u reset, %u half-closed, %u ended by the server), "
                  "%u mutes, %u dozes, %u floods, %u pauses; %u JSON lines, %u text "
                  "lines, %u late switches, %u relaxed\n",
                  seed, done_steps, (long long)random_ms, st.connects, st.closes,
                  st.aborts, st.shut_wr, st.eofs, st.mutes, st.dozes, st.floods,
                  st.pauses, st.json_lines, st.text_lines, st.switched, st.late_relaxed);
    char line[1024];
    size_t at = 0;
    for (unsigned i = 0; i < NTYPES; i++)
        at += (size_t)snprintf(line + at, sizeof line - at, " %s=%u", known_types[i],
                               st.types[i]);
    print_message("  messages:%s\n", line);
    at = 0;
    for (unsigned i = 0; i < NCODES; i++)
        at += (size_t)snprintf(line + at, sizeof line - at, " %s=%u", known_codes[i],
                               st.codes[i]);
    print_message("  errors:%s\n", line);
}

/* ----------------------------------------------------------------- tests --- */

/* Everything a raw client gets up to the server's close. */
static size_t read_to_eof(client *c, char *buf, size_t cap) {
    size_t n = 0, got;
    while (n < cap - 1 && (got = client_read_raw(c, buf + n, cap - 1 - n, WAIT)) > 0)
        n += got;
    buf[n] = '\0';
    return n;
}

/* Found by seed 9: a full server refused a netcat or telnet client with a JSON
 * line, which a human must never see; it must refuse in the client's mode. */
static void test_server_full_refuses_humans_in_text(void **state) {
    th_server *s = SERVER("--max-clients", "1");
    client *a = client_named(s, "a");
    static const char *const firsts[] = {"solo\r\n", "\xff\xfd\x01", "\x1b[A"};
    for (int i = 0; i < 3; i++) {
        client *h = client_connect(s);
        client_send_raw(h, firsts[i], strlen(firsts[i]), false);
        char got[4096];
        size_t n = read_to_eof(h, got, sizeof got);
        assert_true(n > 0);
        assert_null(memmem(got, n, "{\"type\"", 7));
        assert_non_null(strstr(got, "full"));
    }
    /* A program still gets the JSON error, whether it spoke or not. */
    client *j = client_connect(s);
    client_send(j, "{\"type\":\"ping\"}");
    client_expect_error(j, "server_full", WAIT);
    client_expect_eof(j, WAIT);
    client *quiet = client_connect(s);
    client_expect_error(quiet, "server_full", WAIT);
    client_expect_eof(quiet, WAIT);
    client_sync(a);
}

static void test_chaos(void **state) {
    uint64_t seed = env_u64("RACE2048_CHAOS_SEED", DEFAULT_SEED);
    int steps = (int)env_u64("RACE2048_CHAOS_STEPS", DEFAULT_STEPS);
    print_message("chaos seed %" PRIu64 ", %d steps\n", seed, steps);
    run_chaos(seed, steps);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_server_full_refuses_humans_in_text,
                                  harness_teardown),
        cmocka_unit_test_teardown(test_chaos, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
