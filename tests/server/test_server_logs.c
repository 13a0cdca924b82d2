/* test_server_logs.c - race2048d's log at the default level (info) stays small: no line
 * per connection, and a flood of bad requests from several connections costs a few
 * lines a second, counted in a "suppressed" line (issue 16, item 8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* The flood: this many connections at once, for this long. */
enum { SLOTS = 16, FLOOD_MS = 4000 };
/* Log bytes a second the flood may cause: the server allows 5 client lines
 * and one count a second (about 800 bytes); the server before issue 16 wrote
 * hundreds of KB a second under the same flood. */
#define MAX_LOG_BYTES_PER_S 2048

static char log_path[64];

/* A fresh log file for the servers this test starts. */
static void log_to_temp_file(void) {
    snprintf(log_path, sizeof log_path, "/tmp/race2048-log-XXXXXX");
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    harness_server_stderr(log_path);
}

static int log_teardown(void **state) {
    harness_server_stderr(NULL);
    int rc = harness_teardown(state);
    if (log_path[0]) unlink(log_path);
    log_path[0] = '\0';
    return rc;
}

static long log_size(void) {
    struct stat st;
    return stat(log_path, &st) == 0 ? (long)st.st_size : -1;
}

/* The log from byte `from` on, NUL-terminated (malloc'd). */
static char *log_since(long from) {
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    long size = log_size();
    long n = size > from ? size - from : 0;
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    fseek(f, from, SEEK_SET);
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

/* Waits until the log, from byte `from` on, holds `what`; false at the deadline. */
static bool wait_for_log(long from, const char *what, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        char *text = log_since(from);
        bool found = strstr(text, what) != NULL;
        free(text);
        if (found) return true;
        if (harness_remaining(deadline) == 0) return false;
        poll(NULL, 0, 50); /* the file gives no event to wait on */
    }
}

/* --------------------------------------------------- one connection each --- */

/* People and programs come and go: at info that is no line at all. */
static void test_no_line_per_connection(void **state) {
    log_to_temp_file();
    th_server *s = SERVER("--log-level", "info");
    client *probe = client_named(s, "probe");
    client_sync(probe);
    long before = log_size();
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        client *c = client_named(s, "ann");
        client_send(c, "{\"type\":\"solo\",\"size\":3}");
        client_expect(c, "start", WAIT);
        client_move_any(c);
        client_send(c, "{\"type\":\"leave\"}");
        client_expect_skip(c, "left", "end", WAIT);
        client_close(c);
    }
    /* The race of two, from room to end, at info: no line either. */
    client *racers[2];
    race_start(s, 2, "\"size\":3", racers, NULL);
    client_send(racers[0], "{\"type\":\"leave\"}");
    client_expect_skip(racers[0], "left", "end state player", WAIT);
    client_close(racers[0]);
    client_close(racers[1]);
    client_sync(probe); /* every close above is handled before this answer */
    long grown = log_size() - before;
    char *text = log_since(before);
    print_message("%d connections at --log-level info: %ld log bytes (%.1f per "
                  "connection)\n",
                  N + 2, grown, (double)grown / (N + 2));
    if (grown > 400)
        fail_msg("%ld log bytes for %d connections:\n%.2000s", grown, N, text);
    free(text);
}

/* ------------------------------------------------------------- the flood --- */

static const char ws_upgrade[] = "GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                                 "Connection: Upgrade\r\n"
                                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                 "Sec-WebSocket-Version: 13\r\n\r\n";

/* What one flooding connection does, in turn. */
typedef enum attack {
    ATTACK_JSON_GARBAGE, /* bad JSON, unknown types, bad fields, wrong tokens, solo+leave
                          */
    ATTACK_LINE_TOO_LONG,
    ATTACK_TEXT_GARBAGE, /* a person typing nonsense and wrong resume codes */
    ATTACK_HTTP_BAD,     /* 400 */
    ATTACK_HTTP_HUGE,    /* 431 */
    ATTACK_WS_HUGE,      /* a frame of 2^63-1 bytes: 1009 */
    ATTACK_CHURN,        /* connect, close */
    ATTACK_SLOWLORIS,    /* half a line, held until the request timeout */
} attack;
/* The attacks other than slowloris, which holds its connection for a second
 * and so has slots of its own. */
#define ATTACK_SLOWLORIS_OTHERS ATTACK_SLOWLORIS
enum { SLOWLORIS_SLOTS = 2 };

typedef struct slot {
    int fd;      /* -1 when free */
    attack kind; /* what it is doing */
    int64_t until;
} slot;

/* Bytes an attack sends at once (static: built once). */
static size_t attack_bytes(attack kind, const char **out) {
    static char buf[16384];
    size_t n = 0;
    switch (kind) {
    case ATTACK_JSON_GARBAGE:
        n = (size_t)snprintf(buf, sizeof buf,
                             "{\"type\":\"hello\",\"name\":\"flood\"}\n");
        for (int i = 0; i < 20; i++)
            n += (size_t)snprintf(
                buf + n, sizeof buf - n,
                "{bad\n{\"type\":\"nope\"}\n{\"type\":\"move\",\"dir\":\"x\"}\n"
                "{\"type\":\"resume\",\"token\":\"%032d\"}\n"
                "{\"type\":\"solo\"}\n{\"type\":\"leave\"}\n"
                "{\"type\":\"join\",\"room\":\"ZZZZ\"}\n",
                i);
        break;
    case ATTACK_LINE_TOO_LONG:
        buf[0] = '{';
        memset(buf + 1, 'x', 5000);
        buf[5001] = '\n';
        n = 5002;
        break;
    case ATTACK_TEXT_GARBAGE:
        n = (size_t)snprintf(buf, sizeof buf,
                             "hello there\nresume AAAAAAAA\nresume BBBBBBBB\n"
                             "join NOPE\nwatch 1234\nreplay 99999\nxyzzy\n"
                             "resume CCCCCCCC\nresume DDDDDDDD\nresume EEEEEEEE\n");
        break;
    case ATTACK_HTTP_BAD:
        n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/2.0\r\n\r\n");
        break;
    case ATTACK_HTTP_HUGE:
        n = (size_t)snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nX-Filler: ");
        memset(buf + n, 'a', 9000);
        n += 9000;
        break;
    case ATTACK_WS_HUGE: {
        static const unsigned char huge[] = {0x81, 0xFF, 0x7F, 0xFF, 0xFF,
                                             0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
        n = sizeof ws_upgrade - 1;
        memcpy(buf, ws_upgrade, n);
        memcpy(buf + n, huge, sizeof huge);
        n += sizeof huge;
        break;
    }
    case ATTACK_SLOWLORIS:
        n = (size_t)snprintf(buf, sizeof buf, "{\"type\":\"ping\"");
        break;
    case ATTACK_CHURN:
        n = 0;
        break;
    }
    *out = buf;
    return n;
}

static int connect_to(const th_server *s) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        fail_msg("connect: %s", strerror(errno));
    return fd;
}

/* Starts the next attack in slot sl (a slowloris, or one of the others in
 * turn); if the server has closed the connection before the bytes went out,
 * the slot is free again. */
static void start_attack(const th_server *s, slot *sl, bool slowloris,
                         unsigned *counter) {
    (*counter)++;
    sl->kind =
        slowloris ? ATTACK_SLOWLORIS : (attack)(*counter % ATTACK_SLOWLORIS_OTHERS);
    sl->fd = connect_to(s);
    const char *bytes;
    size_t n = attack_bytes(sl->kind, &bytes);
    if (n && send(sl->fd, bytes, n, MSG_NOSIGNAL) < 0) { /* blocking: all of it */
        close(sl->fd);
        sl->fd = -1;
        return;
    }
    assert_int_equal(fcntl(sl->fd, F_SETFL, fcntl(sl->fd, F_GETFL) | O_NONBLOCK), 0);
    /* A connection the server does not close itself is closed by us soon:
     * churn. Slowloris waits for the server's request timeout (1 s). */
    int hold = sl->kind == ATTACK_SLOWLORIS ? 3000 : sl->kind == ATTACK_CHURN ? 0 : 50;
    sl->until = harness_now_ms() + hold;
}

/* Reads and drops what came; closes on EOF, a reset, or the slot's time. */
static void serve_slot(slot *sl, short revents) {
    static char sink[65536];
    if (revents) {
        for (;;) {
            ssize_t r = recv(sl->fd, sink, sizeof sink, 0);
            if (r > 0) continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            close(sl->fd); /* EOF or reset: the server ended it */
            sl->fd = -1;
            return;
        }
    }
    if (harness_now_ms() >= sl->until) {
        close(sl->fd);
        sl->fd = -1;
    }
}

/* Floods s for ms from SLOTS connections; returns the attacks made. */
static unsigned flood(const th_server *s, int ms) {
    slot slots[SLOTS];
    unsigned counter = 0;
    for (int i = 0; i < SLOTS; i++)
        slots[i].fd = -1;
    int64_t end = harness_now_ms() + ms;
    while (harness_now_ms() < end) {
        struct pollfd p[SLOTS];
        for (int i = 0; i < SLOTS; i++) {
            if (slots[i].fd < 0)
                start_attack(s, &slots[i], i < SLOWLORIS_SLOTS, &counter);
            p[i] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
        }
        poll(p, SLOTS, 5);
        for (int i = 0; i < SLOTS; i++)
            if (slots[i].fd >= 0) serve_slot(&slots[i], p[i].revents);
    }
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].fd >= 0) close(slots[i].fd);
    return counter;
}

static void test_flood_of_bad_requests(void **state) {
    log_to_temp_file();
    /* A short request timeout, so slowloris connections are closed (and would
     * be logged) during the flood. */
    th_server *s = SERVER("--log-level", "info", "--request-timeout", "1");
    client *victim = client_named(s, "victim");
    client_sync(victim);
    long before = log_size();
    int64_t t0 = harness_now_ms();
    unsigned attacks = flood(s, FLOOD_MS);
    client_sync(victim); /* the server has handled the flood's bytes */
    int64_t took = harness_now_ms() - t0;
    long grown = log_size() - before;
    double per_s = (double)grown * 1000.0 / (double)took;
    print_message("flood: %u attacks from %d connections in %lld ms: %ld log bytes, "
                  "%.0f bytes/s\n",
                  attacks, SLOTS, (long long)took, grown, per_s);
    /* The flood was one: many connections, each with bad requests. */
    assert_true(attacks >= 50);
    if (per_s > MAX_LOG_BYTES_PER_S) {
        char *text = log_since(before);
        fail_msg("%.0f log bytes a second under the flood (bound %d):\n%.3000s", per_s,
                 MAX_LOG_BYTES_PER_S, text);
    }
    /* What was left out is counted, in a line of its own, even once the
     * flood has stopped. */
    if (!wait_for_log(before, "similar lines", 5000)) {
        char *text = log_since(before);
        fail_msg("no \"suppressed\" count in the log:\n%.3000s", text);
    }
    client_sync(victim);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_no_line_per_connection, log_teardown),
        cmocka_unit_test_teardown(test_flood_of_bad_requests, log_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
