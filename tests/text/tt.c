/* tt.c - text-mode test helpers: raw byte clients, screen parsing, tmux, checks. */
#define _GNU_SOURCE /* memmem */
#include "tt.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

/* --------------------------------------------------------------- timing --- */

/* The pause between two polls of something that cannot be waited on. */
static void poll_pause(int ms) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------- clients --- */

void tt_connect(tt_client *c, int port) {
    tt_connect_from(c, port, NULL);
}

void tt_connect_from(tt_client *c, int port, const char *source) {
    *c = (tt_client){.fd = -1};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    if (source) harness_bind_source(fd, source);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        fail_msg("connect to port %d: %s", port, strerror(errno));
    }
    c->fd = fd;
}

void tt_close(tt_client *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

void tt_send(tt_client *c, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) fail_msg("send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

void tt_sends(tt_client *c, const char *str) {
    tt_send(c, str, strlen(str));
}

void tt_send_split(tt_client *c, const void *data, size_t n, size_t step, int gap_us) {
    const char *p = data;
    for (size_t at = 0; at < n; at += step) {
        if (at) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)gap_us * 1000L};
            nanosleep(&ts, NULL);
        }
        tt_send(c, p + at, n - at < step ? n - at : step);
    }
}

/* One read of whatever is there within ms; false on timeout or EOF. */
static bool read_some(tt_client *c, int ms) {
    if (c->eof) return false;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int rc = poll(&p, 1, ms);
    if (rc <= 0) return false;
    if (c->cap - c->len < 65536) {
        c->cap = c->cap ? c->cap * 2 : 131072;
        c->buf = realloc(c->buf, c->cap + 1);
        if (!c->buf) fail_msg("out of memory");
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) { /* EOF, or a reset: either way the server is done with us */
        c->eof = true;
        return false;
    }
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    return true;
}

long tt_find(const char *hay, size_t len, size_t from, const void *needle, size_t n) {
    if (!hay || from >= len) return -1;
    const char *m = memmem(hay + from, len - from, needle, n);
    return m ? (long)(m - hay) : -1;
}

long tt_wait_for(tt_client *c, size_t from, const void *needle, size_t n, int ms) {
    int64_t deadline = harness_now_ms() + ms;
    for (;;) {
        long at = tt_find(c->buf, c->len, from, needle, n);
        if (at >= 0) return at;
        if (c->eof || harness_remaining(deadline) == 0) return -1;
        read_some(c, harness_remaining(deadline));
    }
}

long tt_wait_str(tt_client *c, size_t from, const char *needle, int ms) {
    return tt_wait_for(c, from, needle, strlen(needle), ms);
}

bool tt_wait_eof(tt_client *c, int ms) {
    int64_t deadline = harness_now_ms() + ms;
    while (!c->eof && harness_remaining(deadline) > 0)
        read_some(c, harness_remaining(deadline));
    return c->eof;
}

bool tt_wait_screen(tt_client *c, size_t from,
                    bool (*pred)(const char *screen, void *arg), void *arg, int ms,
                    char *screen, size_t cap) {
    int64_t deadline = harness_now_ms() + ms;
    for (;;) {
        tt_screen_text(c->buf, c->len, from, screen, cap);
        if (pred(screen, arg)) return true;
        if (c->eof || harness_remaining(deadline) == 0) return false;
        read_some(c, harness_remaining(deadline));
    }
}

/* -------------------------------------------------------------- checks --- */

/* Up to 40 bytes around data[at], escaped, for a failure message. */
static const char *context(const char *data, size_t len, size_t at) {
    static char out[256];
    size_t from = at > 20 ? at - 20 : 0;
    size_t to = at + 20 < len ? at + 20 : len;
    size_t o = 0;
    for (size_t i = from; i < to && o < sizeof out - 5; i++) {
        unsigned char ch = (unsigned char)data[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", ch);
    }
    out[o] = '\0';
    return out;
}

/* The problem a check found, kept for the caller's message. */
static char problem[512];

const char *tt_crlf_problem(const char *data, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\n' && (i == 0 || data[i - 1] != '\r')) {
            snprintf(problem, sizeof problem, "a bare \\n at byte %zu: %s", i,
                     context(data, len, i));
            return problem;
        }
    return NULL;
}

const char *tt_iac_problem(const char *data, size_t len) {
    const unsigned char *d = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        if (d[i] != 0xff) continue;
        const char *why = NULL;
        unsigned char cmd = i + 1 < len ? d[i + 1] : 0;
        if (i + 1 >= len) {
            why = "a lone 0xFF at the end of the stream";
        } else if (cmd == 0xff || (cmd >= 0xf0 && cmd <= 0xf9)) {
            i += 1; /* IAC IAC (a data 0xFF) or a one-byte command */
        } else if (cmd >= 0xfb && cmd <= 0xfe) {
            if (i + 2 >= len) why = "a cut IAC option command";
            i += 2;
        } else if (cmd == 0xfa) {
            size_t j = i + 2;
            while (j + 1 < len && !(d[j] == 0xff && d[j + 1] == 0xf0))
                j += d[j] == 0xff && d[j + 1] == 0xff ? 2 : 1;
            if (j + 1 >= len) why = "an IAC SB without IAC SE";
            i = j + 1;
        } else {
            why = "0xFF not starting a telnet command";
        }
        if (why) {
            size_t at = i < len ? i : len - 1;
            snprintf(problem, sizeof problem, "%s near byte %zu: %s", why, at,
                     context(data, len, at));
            return problem;
        }
    }
    return NULL;
}

/* Length of the UTF-8 sequence at s, or 0 if it is not valid UTF-8. */
static int utf8_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (s[0] >= 0xf5) n = 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

const char *tt_pane_problem(const char *pane) {
    static const char *junk[] = {
        "\xef\xbf\xbd", /* U+FFFD, the replacement glyph */
        "\xc3\xbb",     /* 0xFB as Latin-1 */
        "\xc3\xbc",     /* 0xFC */
        "\xc3\xbd",     /* 0xFD */
        "\xc3\xbe",     /* 0xFE */
        "\xc3\xbf",     /* 0xFF */
        "{\"type\"",    /* JSON meant for programs */
        "[?",           /* a private-mode escape shown as text */
        "\\",           /* the ESC \ that ends the DCS probe */
        "^[",           /* an escape made visible */
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        if (strstr(pane, junk[i])) {
            snprintf(problem, sizeof problem, "junk \"%s\"", junk[i]);
            return problem;
        }
    const unsigned char *p = (const unsigned char *)pane;
    for (size_t i = 0; p[i];) {
        if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f) {
            snprintf(problem, sizeof problem, "control byte 0x%02x", p[i]);
            return problem;
        }
        int n = utf8_len(p + i);
        if (!n) {
            snprintf(problem, sizeof problem, "bytes that are not UTF-8 at %zu", i);
            return problem;
        }
        i += (size_t)n;
    }
    /* The DCS probe's ESC P, if a terminal showed it, leaves a "P" at the
     * start of a line; no line of the text UI starts with one. */
    for (const char *line = pane; line; line = strchr(line, '\n')) {
        if (*line == '\n') line++;
        if (*line == 'P' && strncmp(line, "Pane is dead", 12) != 0)
            return "a line starting with a stray P";
    }
    return NULL;
}

void tt_assert_crlf_only(const char *data, size_t len) {
    const char *why = tt_crlf_problem(data, len);
    if (why) fail_msg("%s", why);
}

void tt_assert_iac_valid(const char *data, size_t len) {
    const char *why = tt_iac_problem(data, len);
    if (why) fail_msg("%s", why);
}

void tt_assert_clean_pane(const char *pane, const char *what) {
    const char *why = tt_pane_problem(pane);
    if (why) fail_msg("%s shows %s:\n%s", what, why, pane);
}

/* -------------------------------------------------------------- screens --- */

void tt_screen_text(const char *data, size_t len, size_t from, char *out, size_t cap) {
    const unsigned char *d = (const unsigned char *)data;
    size_t start = from;
    for (long at; (at = tt_find(data, len, start, TT_CLEAR, 7)) >= 0;)
        start = (size_t)at + 7;
    size_t o = 0;
    for (size_t i = start < len ? start : len; i < len && o + 1 < cap; i++) {
        if (d[i] == 0xff && i + 1 < len) { /* a telnet command: skip it */
            unsigned char cmd = d[i + 1];
            if (cmd >= 0xfb && cmd <= 0xfe)
                i += 2;
            else if (cmd == 0xfa)
                while (i + 1 < len && !(d[i] == 0xff && d[i + 1] == 0xf0))
                    i++;
            i++;
            continue;
        }
        if (d[i] == 0x1b && i + 1 < len) {
            if (d[i + 1] == '[') { /* CSI: parameters, then a final byte */
                i += 2;
                while (i < len && (d[i] < 0x40 || d[i] > 0x7e))
                    i++;
            } else if (d[i + 1] == 'P') { /* DCS: up to ESC \ */
                i += 2;
                while (i + 1 < len && !(d[i] == 0x1b && d[i + 1] == '\\'))
                    i++;
                i++;
            } else {
                i++;
            }
            continue;
        }
        if (d[i] == '\r') continue;
        out[o++] = (char)d[i];
    }
    out[o] = '\0';
}

#define BOX_SIDE "\xe2\x94\x82" /* the vertical line of a board's frame */

/* The next line of text after *at, NUL-terminated into line; false at the end. */
static bool next_line(const char **at, char *line, size_t cap) {
    if (!*at || !**at) return false;
    const char *nl = strchr(*at, '\n');
    size_t n = nl ? (size_t)(nl - *at) : strlen(*at);
    if (n >= cap) n = cap - 1;
    memcpy(line, *at, n);
    line[n] = '\0';
    *at = nl ? nl + 1 : NULL;
    return true;
}

/* Parses the cells of board k on one line into row (values); returns how many. */
static int board_row(const char *line, int k, uint64_t row[ENG_SIZE_MAX + 1]) {
    const char *p = line;
    for (int i = 0; i < 2 * k; i++) {
        p = strstr(p, BOX_SIDE);
        if (!p) return 0;
        p += 3;
    }
    const char *open = strstr(p, BOX_SIDE);
    if (!open) return 0;
    const char *close = strstr(open + 3, BOX_SIDE);
    if (!close) return 0;
    int n = 0;
    for (const char *q = open + 3; q < close && n <= ENG_SIZE_MAX;) {
        while (q < close && *q == ' ')
            q++;
        if (q >= close) break;
        if (*q == '.') {
            row[n++] = 0;
            q++;
            continue;
        }
        char *end;
        uint64_t v = strtoull(q, &end, 10);
        if (end == q) return 0;
        if (*end == 'k') v <<= 10, end++;
        if (*end == 'M') v <<= 20, end++;
        row[n++] = v;
        q = end;
    }
    return n;
}

bool tt_screen_board(const char *screen, int k, eng_board *b) {
    const char *at = screen;
    char line[1024];
    int rows = 0, size = 0;
    uint64_t cells[ENG_SIZE_MAX][ENG_SIZE_MAX + 1];
    while (next_line(&at, line, sizeof line)) {
        uint64_t row[ENG_SIZE_MAX + 1];
        int n = board_row(line, k, row);
        if (n == 0) {
            if (rows) break; /* the board's last row was the line before */
            continue;
        }
        if (n < ENG_SIZE_MIN || n > ENG_SIZE_MAX || (size && n != size) ||
            rows == ENG_SIZE_MAX)
            return false;
        size = n;
        memcpy(cells[rows++], row, sizeof row);
    }
    if (!rows || rows != size) return false;
    eng_board_init(b, size);
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) {
            int e = cells[r][c] ? eng_value_exp(cells[r][c]) : 0;
            if (e < 0) return false;
            b->cell[r * size + c] = (uint8_t)e;
        }
    return true;
}

int tt_screen_moves(const char *screen, int k) {
    const char *at = screen;
    char line[1024];
    while (next_line(&at, line, sizeof line)) {
        int seen = 0;
        for (char *p = strstr(line, " move"); p; p = strstr(p + 1, " move")) {
            char after = p[5];
            if (p == line || p[-1] < '0' || p[-1] > '9') continue;
            if (after != 's' && after != ' ' && after != '\0') continue;
            if (seen++ < k) continue;
            char *digits = p;
            while (digits > line && digits[-1] >= '0' && digits[-1] <= '9')
                digits--;
            return atoi(digits);
        }
        if (seen) return -1; /* the moves line has no k-th board */
    }
    return -1;
}

eng_dir tt_movable_dir_in(const eng_board *b, const eng_dir order[4]) {
    for (int i = 0; i < 4; i++) {
        eng_board copy = *b;
        if (eng_move(&copy, order[i], NULL, NULL)) return order[i];
    }
    fail_msg("the board cannot move in any direction");
    return order[0];
}

eng_dir tt_movable_dir(const eng_board *b) {
    static const eng_dir order[] = {ENG_RIGHT, ENG_LEFT, ENG_DOWN, ENG_UP};
    return tt_movable_dir_in(b, order);
}

bool tt_board_differs(const eng_board *a, const eng_board *b) {
    if (a->size != b->size) return true;
    return memcmp(a->cell, b->cell, (size_t)a->size * a->size) != 0;
}

bool tt_has(const char *text, void *needle) {
    return strstr(text, (const char *)needle) != NULL;
}

bool tt_has_moves(const char *text, void *moves) {
    const tt_moves *m = moves;
    return tt_screen_moves(text, m->k) >= m->n;
}

/* ----------------------------------------------------------------- tmux --- */

/* Whether a program is on PATH. */
static bool have(const char *prog) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

void tt_require_tools(void) {
    static const char *tools[] = {"tmux", "telnet", "nc"};
    for (size_t i = 0; i < 3; i++)
        if (!have(tools[i]))
            fail_msg("%s is not installed: the text-mode tests drive the real telnet and "
                     "nc inside tmux (apt-get install tmux inetutils-telnet "
                     "netcat-openbsd; scripts/test installs them)",
                     tools[i]);
    /* The tests make their own tmux servers; a surrounding one is no concern. */
    unsetenv("TMUX");
    setenv("TERM", "xterm-256color", 0);
}

void tt_tmux_init(tt_tmux *t) {
    static int counter;
    snprintf(t->socket, sizeof t->socket, "r2048-text-%d-%d", (int)getpid(), counter++);
    t->started = false;
}

/* Runs tmux with this socket and arguments (a shell fragment); fails on error. */
static void tmux_run(tt_tmux *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tmux_run(tt_tmux *t, const char *fmt, ...) {
    char args[1024], cmd[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "tmux -L %s %s", t->socket, args);
    int rc = system(cmd);
    if (rc != 0) fail_msg("`%s` failed (status %d)", cmd, rc);
}

void tt_tmux_open(tt_tmux *t, const char *name, int cols, int rows, const char *cmd) {
    if (strchr(cmd, '\'')) fail_msg("no single quotes in a pane command: %s", cmd);
    t->started = true;
    tmux_run(t,
             "-f /dev/null new-session -d -s %s -x %d -y %d '%s' \\; "
             "set-window-option -t %s remain-on-exit on",
             name, cols, rows, cmd, name);
}

void tt_tmux_type(tt_tmux *t, const char *name, const char *text) {
    if (strchr(text, '\'')) fail_msg("no single quotes in typed text: %s", text);
    tmux_run(t, "send-keys -t %s -l '%s'", name, text);
}

void tt_tmux_key(tt_tmux *t, const char *name, const char *key) {
    tmux_run(t, "send-keys -t %s %s", name, key);
}

void tt_tmux_capture(tt_tmux *t, const char *name, char *out, size_t cap) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -p -t %s", t->socket, name);
    FILE *f = popen(cmd, "r");
    if (!f) fail_msg("popen %s: %s", cmd, strerror(errno));
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int rc = pclose(f);
    if (rc != 0) fail_msg("`%s` failed (status %d)", cmd, rc);
}

bool tt_tmux_wait(tt_tmux *t, const char *name, bool (*pred)(const char *pane, void *arg),
                  void *arg, int ms, char *out, size_t cap) {
    int64_t deadline = harness_now_ms() + ms;
    for (;;) {
        tt_tmux_capture(t, name, out, cap);
        if (pred(out, arg)) return true;
        if (harness_remaining(deadline) == 0) return false;
        poll_pause(50);
    }
}

bool tt_tmux_wait_str(tt_tmux *t, const char *name, const char *needle, int ms, char *out,
                      size_t cap) {
    return tt_tmux_wait(t, name, tt_has, (void *)needle, ms, out, cap);
}

bool tt_tmux_dead(tt_tmux *t, const char *name) {
    char cmd[256], out[16] = "";
    snprintf(cmd, sizeof cmd, "tmux -L %s display-message -p -t %s '#{pane_dead}'",
             t->socket, name);
    FILE *f = popen(cmd, "r");
    if (!f) fail_msg("popen %s: %s", cmd, strerror(errno));
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    pclose(f);
    return out[0] == '1';
}

void tt_tmux_kill(tt_tmux *t) {
    if (!t->started) return;
    t->started = false;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "tmux -L %s kill-server >/dev/null 2>&1", t->socket);
    if (system(cmd) != 0) { /* already gone: nothing to clean up */
    }
    /* tmux leaves its socket file behind; it lives where tmux -L puts it. */
    const char *dir = getenv("TMUX_TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/tmux-%u/%s", dir && *dir ? dir : "/tmp",
             (unsigned)getuid(), t->socket);
    unlink(path);
}

int tt_journal_make(tt_journal *j, const char *tag) {
    snprintf(j->dir, sizeof j->dir, "/tmp/r2048-%s-XXXXXX", tag);
    if (!mkdtemp(j->dir)) return -1;
    snprintf(j->path, sizeof j->path, "%s/j", j->dir);
    return 0;
}

void tt_journal_remove(const tt_journal *j) {
    static const char *const beside[] = {"", ".results", ".lock"};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        char file[128];
        snprintf(file, sizeof file, "%s%s", j->path, beside[i]);
        unlink(file);
    }
    rmdir(j->dir);
}
