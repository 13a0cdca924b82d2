/* test_server_proxy.c - race2048d behind a real HAProxy (send-proxy-v2) and with PROXY
 * headers sent by hand: every per-address rule sees the client, not the balancer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "natsd.h"

/* Defaults of server/delivery/guard.h: failed resumes per connection, then the
 * address's burst. */
#define TRIES 5
#define BURST 20

/* ------------------------------------------------------------- HAProxy --- */

/* The test's HAProxy: its pid (0 when none), frontends and admin socket. */
static pid_t haproxy_pid;
static int front_game, front_http;
static char haproxy_sock[256];

/* A server behind the balancer on 127.0.0.1 (--proxy-from 127.0.0.1/32), with
 * its http port and the extra flags; its http port in *http. */
static th_server *server_behind(int *http, const char *const *extra) {
    const char *argv[24] = {"--proxy-from", "127.0.0.1/32"};
    int n = 2;
    for (int i = 0; extra && extra[i] && n < 23; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return server_with_http(http, argv);
}

/* Answers of HAProxy's admin socket to one command (malloc'd), NULL if it
 * cannot be reached yet. */
static char *haproxy_ask(const char *command) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(haproxy_sock) >= sizeof a.sun_path) fail_msg("socket path too long");
    memcpy(a.sun_path, haproxy_sock, strlen(haproxy_sock) + 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (write(fd, command, strlen(command)) < 0 || write(fd, "\n", 1) < 0) {
        close(fd);
        return NULL;
    }
    size_t len = 0, cap = 1 << 16;
    char *out = malloc(cap);
    assert_non_null(out);
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, harness_ms(WAIT)) <= 0) break;
        if (len + 1 == cap) {
            out = realloc(out, cap *= 2);
            assert_non_null(out);
        }
        ssize_t k = read(fd, out + len, cap - len - 1);
        if (k <= 0) break;
        len += (size_t)k;
    }
    close(fd);
    out[len] = '\0';
    return out;
}

/* Starts HAProxy in tcp mode with two frontends on free loopback ports: one
 * to s's game port, one to its http port, both with send-proxy-v2 and health
 * checks that send a PROXY header too (the http one asks for /healthz). Waits
 * until both frontends accept. */
static void haproxy_start(th_server *s, int http) {
    const char *dir = harness_temp_dir("haproxy");
    char cfg_path[256], log_path[256];
    snprintf(cfg_path, sizeof cfg_path, "%s/haproxy.cfg", dir);
    snprintf(log_path, sizeof log_path, "%s/haproxy.log", dir);
    snprintf(haproxy_sock, sizeof haproxy_sock, "%s/admin.sock", dir);
    front_game = natsd_free_port();
    front_http = natsd_free_port();
    FILE *f = fopen(cfg_path, "w");
    assert_non_null(f);
    fprintf(
        f,
        "global\n"
        "    nbthread 1\n"
        "    maxconn 2000\n"
        "    stats socket %s mode 600 level admin\n"
        "defaults\n"
        "    mode tcp\n"
        "    timeout connect 5s\n"
        "    timeout client 120s\n"
        "    timeout server 120s\n"
        "    timeout check 2s\n"
        "frontend game\n"
        "    bind 127.0.0.1:%d\n"
        "    default_backend game_nodes\n"
        "frontend web\n"
        "    bind 127.0.0.1:%d\n"
        "    default_backend web_nodes\n"
        "backend game_nodes\n"
        "    server n1 127.0.0.1:%d send-proxy-v2 check check-send-proxy inter 200ms\n"
        "backend web_nodes\n"
        "    option httpchk GET /healthz\n"
        "    server w1 127.0.0.1:%d send-proxy-v2 check check-send-proxy inter 200ms\n",
        haproxy_sock, front_game, front_http, s->port, http);
    fclose(f);
    haproxy_pid = fork();
    if (haproxy_pid < 0) fail_msg("fork: %s", strerror(errno));
    if (haproxy_pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("haproxy", "haproxy", "-db", "-f", cfg_path, (char *)NULL);
        _exit(127);
    }
    /* Up once its admin socket answers (it binds its frontends before). */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        char *ok = haproxy_ask("show info");
        if (ok && strstr(ok, "Name: HAProxy")) {
            free(ok);
            return;
        }
        free(ok);
        int status;
        if (waitpid(haproxy_pid, &status, WNOHANG) == haproxy_pid) {
            haproxy_pid = 0;
            char *log = harness_read_file(log_path, NULL);
            fail_msg("haproxy exited: %s", log);
        }
        if (!harness_remaining(deadline)) fail_msg("haproxy did not start");
        poll(NULL, 0, 20); /* polled until it answers, with a deadline */
    }
}

static void haproxy_stop(void) {
    if (haproxy_pid <= 0) return;
    kill(haproxy_pid, SIGTERM);
    waitpid(haproxy_pid, NULL, 0);
    haproxy_pid = 0;
}

/* cmocka teardown: HAProxy first (its health checks would reach a server
 * being stopped), then the harness's. */
static int teardown(void **state) {
    haproxy_stop();
    return harness_teardown(state);
}

/* A client from source (a loopback address) through the balancer's game
 * frontend. */
static client *via_balancer(th_server *s, const char *source) {
    return client_connect_port_from(s, front_game, source);
}

/* ---------------------------------------------------- resume guessing --- */

/* Reads a guesser's answers up to EOF: each is bad_token; counts those
 * refused for the address (the brake) in *throttled. */
static void read_guesses(client *g, int *throttled) {
    int n = 0;
    for (json_t *o; (o = client_next(g, WAIT));) {
        assert_string_equal(jstr(o, "type"), "error");
        assert_string_equal(jstr(o, "code"), "bad_token");
        if (strstr(jstr(o, "message"), "your address")) (*throttled)++;
        n++;
    }
    assert_int_equal(n, TRIES);
}

/* One guessing connection through the balancer: TRIES wrong tokens, then
 * the server closes it. */
static void guess_once(th_server *s, int *throttled) {
    client *g = via_balancer(s, "127.0.0.2");
    static const char guess[] = "{\"type\":\"resume\",\"token\":\"00\"}\n";
    for (int i = 0; i < TRIES; i++)
        if (!client_send_raw(g, guess, sizeof guess - 1, true)) break;
    read_guesses(g, throttled);
    client_close(g);
}

/* Issue 25 item 2: a token guesser on 127.0.0.2 and a victim on 127.0.0.3
 * both reach the server through HAProxy. The guesser is throttled (its
 * address's burst is spent), and every right-token resume of the victim
 * succeeds meanwhile, its seat kept. Without the PROXY protocol both are
 * 127.0.0.1 to the server, and the victim's resumes are refused. */
static void test_guesser_behind_balancer_locks_nobody_out(void **state) {
    int http;
    th_server *s = server_behind(&http, NULL);
    haproxy_start(s, http);
    client *v = via_balancer(s, "127.0.0.3");
    client *w = via_balancer(s, "127.0.0.4");
    json_int_t id = jint(client_hello(v, "victim"), "id");
    client_hello(w, "partner");
    client_send(v, "{\"type\":\"create\",\"players\":2}");
    const char *code = jstr(client_expect(v, "room", WAIT), "room");
    client_send(w, "{\"type\":\"join\",\"room\":\"%s\"}", code);
    client_expect_skip(v, "start", "room", WAIT);
    client_expect_skip(w, "start", "room", WAIT);
    char token[80];
    snprintf(token, sizeof token, "%s", client_token(v));

    /* The guesser spends its address's burst first. */
    int throttled = 0;
    for (int i = 0; i < BURST / TRIES + 2; i++)
        guess_once(s, &throttled);
    assert_true(throttled > 0);
    enum { RESUMES = 12 };
    int resumed = 0;
    for (int round = 0; round < RESUMES; round++) {
        client_close(v);
        guess_once(s, &throttled);
        v = via_balancer(s, "127.0.0.3");
        client_send(v, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
        json_t *o = client_next(v, WAIT);
        if (!o || strcmp(jstr(o, "type"), "welcome")) continue;
        assert_int_equal(jint(o, "id"), id);
        assert_int_equal(jint(client_expect(v, "start", WAIT), "you"), id);
        resumed++;
        guess_once(s, &throttled);
    }
    print_message("victim: %d of %d right-token resumes; guesser: %d refused for its "
                  "address\n",
                  resumed, RESUMES, throttled);
    assert_int_equal(resumed, RESUMES);
    /* The guesser stays throttled: nearly every guess of the rounds refused. */
    assert_true(throttled >= BURST / TRIES * TRIES);
    /* The victim is still in its race. */
    json_t *st = client_move_any(v);
    assert_int_equal(jint(st, "id"), id);
}

/* ------------------------------------------------- budgets per client --- */

/* A solo game and its leave; true if it started, false if rate_limited. */
static bool solo_started(client *c) {
    client_send(c, "{\"type\":\"solo\"}");
    json_t *o = client_next(c, WAIT);
    assert_non_null(o);
    if (!strcmp(jstr(o, "type"), "error")) {
        assert_string_equal(jstr(o, "code"), "rate_limited");
        return false;
    }
    assert_string_equal(jstr(o, "type"), "start");
    client_send(c, "{\"type\":\"leave\"}");
    client_expect_skip(c, "left", "end state player", WAIT);
    return true;
}

/* --max-per-ip and --max-games-per-min behind the balancer: two clients on
 * two machines (127.0.0.2, 127.0.0.3) each get their own budget, though the
 * server sees one peer address for both. */
static void test_budgets_per_real_client(void **state) {
    int http;
    th_server *s =
        server_behind(&http, (const char *const[]){"--max-per-ip", "2",
                                                   "--max-games-per-min", "3", NULL});
    haproxy_start(s, http);
    const char *who[2] = {"127.0.0.2", "127.0.0.3"};
    for (int k = 0; k < 2; k++) {
        client *a = via_balancer(s, who[k]);
        client_hello(a, "a");
        client_hello(via_balancer(s, who[k]), "b");
        client *third = via_balancer(s, who[k]);
        client_send(third, "{\"type\":\"hello\",\"name\":\"c\"}");
        client_expect_error(third, "server_full", WAIT);
        client_expect_eof(third, WAIT);
        int started = 0;
        for (int i = 0; i < 4; i++)
            started += solo_started(a);
        assert_int_equal(started, 3);
    }
}

/* ------------------------------------------------------- health checks --- */

/* The stats line of a server of HAProxy ("backend,server,"), or "" (malloc'd). */
static bool check_status_is(const char *backend_server, const char *status) {
    char *stat = haproxy_ask("show stat");
    if (!stat) return false;
    char *line = strstr(stat, backend_server);
    bool ok = false;
    if (line) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        char want[32];
        snprintf(want, sizeof want, ",%s,", status);
        ok = strstr(line, want) != NULL;
    }
    free(stat);
    return ok;
}

/* HAProxy's health checks (check-send-proxy with send-proxy-v2) send a
 * LOCAL header: they are answered (the game port takes the connection, the
 * http port answers /healthz 200), and a client's /healthz through the
 * balancer too. */
static void test_health_checks_with_local(void **state) {
    const char *dir = harness_temp_dir("proxy-log");
    char log_path[256];
    snprintf(log_path, sizeof log_path, "%s/server.log", dir);
    harness_server_stderr(log_path);
    int http;
    th_server *s =
        server_behind(&http, (const char *const[]){"--log-level", "debug", NULL});
    harness_server_stderr(NULL);
    haproxy_start(s, http);
    int64_t deadline = harness_now_ms() + harness_ms(3 * WAIT);
    while (!(check_status_is("web_nodes,w1,", "L7OK") &&
             check_status_is("game_nodes,n1,", "L4OK"))) {
        if (!harness_remaining(deadline)) {
            char *stat = haproxy_ask("show stat");
            fail_msg("checks not passing: %s", stat ? stat : "(no answer)");
        }
        poll(NULL, 0, 50);
    }
    client *b = client_connect_port_from(s, front_http, "127.0.0.2");
    static const char get[] =
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    client_send_raw(b, get, sizeof get - 1, false);
    char page[512] = {0};
    size_t n = 0, k;
    while (n < sizeof page - 1 &&
           (k = client_read_raw(b, page + n, sizeof page - 1 - n, WAIT)))
        n += k;
    if (strncmp(page, "HTTP/1.1 200", 12) || !strstr(page, "\r\n\r\nok"))
        fail_msg("healthz through the balancer: %s", page);
    haproxy_stop();
    char *log = harness_read_file(log_path, NULL);
    if (!strstr(log, "PROXY v2 header from 127.0.0.1:") || !strstr(log, ": LOCAL"))
        fail_msg("no LOCAL header in the log:\n%s", log);
    if (strstr(log, "not a valid PROXY header") || strstr(log, "no PROXY header"))
        fail_msg("a check was refused:\n%s", log);
    free(log);
}

/* --------------------------------------------------- headers by hand --- */

/* Reads raw bytes until EOF (or cap), NUL-terminated; returns the count. */
static size_t read_all(client *c, char *buf, size_t cap) {
    size_t n = 0, k;
    while (n < cap - 1 && (k = client_read_raw(c, buf + n, cap - 1 - n, WAIT)))
        n += k;
    buf[n] = '\0';
    return n;
}

/* A connection from the balancer's address straight to the server, without
 * a header: closed, on both ports; a bad header at once, a silent one within
 * --request-timeout. Another address is served as always. */
static void test_balancer_without_header_closed(void **state) {
    int http;
    th_server *s =
        server_behind(&http, (const char *const[]){"--request-timeout", "1", NULL});
    client *json = client_connect_from(s, "127.0.0.1");
    client_send(json, "{\"type\":\"hello\",\"name\":\"x\"}");
    char buf[4096];
    assert_int_equal(read_all(json, buf, sizeof buf), 0);
    client *web = client_connect_port_from(s, http, "127.0.0.1");
    static const char get[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    client_send_raw(web, get, sizeof get - 1, false);
    assert_int_equal(read_all(web, buf, sizeof buf), 0);
    /* Silent: nothing is written (no greeting), then it is closed. */
    client *silent = client_connect_from(s, "127.0.0.1");
    client *silent_web = client_connect_port_from(s, http, "127.0.0.1");
    assert_int_equal(read_all(silent, buf, sizeof buf), 0);
    assert_int_equal(read_all(silent_web, buf, sizeof buf), 0);
    /* Half a header is no better. */
    client *half = client_connect_from(s, "127.0.0.1");
    client_send_raw(half, "PROXY TCP4 10.0.0.1", 19, false);
    assert_int_equal(read_all(half, buf, sizeof buf), 0);
    client_hello(client_connect_from(s, "127.0.0.2"), "other");
}

/* A version 2 header naming src (IPv4) port 4000, with a TLV after the
 * addresses; returns its length. */
static size_t v2_header(unsigned char *out, const char *src) {
    static const unsigned char sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                          0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
    memcpy(out, sig, sizeof sig);
    out[12] = 0x21; /* version 2, PROXY */
    out[13] = 0x11; /* TCP over IPv4 */
    out[14] = 0;
    out[15] = 12 + 7; /* addresses and ports, then a TLV of 4 bytes */
    inet_pton(AF_INET, src, out + 16);
    inet_pton(AF_INET, "127.0.0.1", out + 20);
    out[24] = 4000 >> 8;
    out[25] = 4000 & 0xff;
    out[26] = 2048 >> 8;
    out[27] = 2048 & 0xff;
    memcpy(out + 28, "\x04\x00\x04noop", 7); /* PP2_TYPE_NOOP */
    return 35;
}

/* The same for TCP over IPv6 (no TLV); returns its length. */
static size_t v2_header6(unsigned char *out, const char *src) {
    v2_header(out, "127.0.0.1");
    out[13] = 0x21; /* TCP over IPv6 */
    out[15] = 36;
    inet_pton(AF_INET6, src, out + 16);
    inet_pton(AF_INET6, "::1", out + 32);
    out[48] = 4000 >> 8;
    out[49] = 4000 & 0xff;
    out[50] = 2048 >> 8;
    out[51] = 2048 & 0xff;
    return 52;
}

/* A client behind a balancer on the listed 127.0.0.1 that sends header (len
 * bytes, in two writes cut at `cut`) then hello; returns it. */
static client *behind(th_server *s, const void *header, size_t len, size_t cut) {
    client *c = client_connect_from(s, "127.0.0.1");
    client_send_raw(c, header, cut, false);
    /* The header's first part alone decides nothing: no byte comes back. */
    assert_true(client_quiet_for(c, 50));
    client_send_raw(c, (const char *)header + cut, len - cut, false);
    client_send(c, "{\"type\":\"hello\",\"name\":\"h\"}");
    return c;
}

/* Headers sent by hand from the listed address: version 1 and 2, cut in
 * two; the address they name is the one --max-per-ip counts and the log
 * names; LOCAL and UNKNOWN count as the balancer's own; a bad header closes. */
static void test_headers_by_hand(void **state) {
    const char *dir = harness_temp_dir("proxy-log");
    char log_path[256];
    snprintf(log_path, sizeof log_path, "%s/server.log", dir);
    harness_server_stderr(log_path);
    int http;
    th_server *s = server_behind(&http, (const char *const[]){"--max-per-ip", "1", NULL});
    harness_server_stderr(NULL);
    static const char v1_9[] = "PROXY TCP4 127.0.0.9 127.0.0.1 4000 2048\r\n";
    static const char v1_8[] = "PROXY TCP4 127.0.0.8 127.0.0.1 4000 2048\r\n";
    static const char unknown[] = "PROXY UNKNOWN\r\n";
    client_expect(behind(s, v1_9, sizeof v1_9 - 1, 15), "welcome", WAIT);
    client_expect_error(behind(s, v1_9, sizeof v1_9 - 1, 30), "server_full", WAIT);
    client_expect(behind(s, v1_8, sizeof v1_8 - 1, 6), "welcome", WAIT);
    unsigned char v2[64];
    size_t n = v2_header(v2, "127.0.0.8");
    client_expect_error(behind(s, v2, n, 13), "server_full", WAIT);
    n = v2_header(v2, "127.0.0.7");
    client_expect(behind(s, v2, n, 30), "welcome", WAIT);
    /* IPv6 clients count by their /64, whichever version named them. */
    static const char v1_6[] = "PROXY TCP6 2001:db8::1 ::1 4000 2048\r\n";
    client_expect(behind(s, v1_6, sizeof v1_6 - 1, 20), "welcome", WAIT);
    n = v2_header6(v2, "2001:db8::2");
    client_expect_error(behind(s, v2, n, 40), "server_full", WAIT);
    n = v2_header6(v2, "2001:db8:0:1::1");
    client_expect(behind(s, v2, n, 20), "welcome", WAIT);
    /* UNKNOWN: the balancer's own address, counted once like any client. */
    client_expect(behind(s, unknown, sizeof unknown - 1, 3), "welcome", WAIT);
    client_expect_error(behind(s, unknown, sizeof unknown - 1, 3), "server_full", WAIT);
    /* An invalid header: closed without a byte. */
    client *bad = client_connect_from(s, "127.0.0.1");
    client_send_raw(bad, "PROXY TCP4 127.0.0.09 127.0.0.1 1 2\r\n", 37, false);
    char buf[256];
    assert_int_equal(read_all(bad, buf, sizeof buf), 0);
    server_stop(s);
    char *log = harness_read_file(log_path, NULL);
    if (!strstr(log, "refusing 127.0.0.9:4000: too many connections from your address"))
        fail_msg("the log does not name the client:\n%s", log);
    free(log);
}

/* From an address not in --proxy-from a header is never read: its bytes are
 * a text client's input, and --max-per-ip counts the real peer, whatever
 * address the header names. */
static void test_header_from_unlisted_not_honoured(void **state) {
    int http;
    th_server *s = server_behind(&http, (const char *const[]){"--max-per-ip", "1", NULL});
    static const char v1[] = "PROXY TCP4 10.0.0.1 127.0.0.1 4000 2048\r\n";
    client *first = client_connect_from(s, "127.0.0.2");
    client_send_raw(first, v1, sizeof v1 - 1, false);
    /* A human who typed a command the game does not know. */
    char seen[8192] = {0};
    size_t n = 0;
    while (!strstr(seen, "unknown command 'PROXY'")) {
        size_t k = client_read_raw(first, seen + n, sizeof seen - 1 - n, WAIT);
        if (!k) fail_msg("no text answer to the header: %s", seen);
        n += k;
    }
    /* A second connection of 127.0.0.2 naming another address is refused
     * for 127.0.0.2's connection count, in text (its first byte is no '{'). */
    static const char v1_other[] = "PROXY TCP4 10.0.0.2 127.0.0.1 4000 2048\r\n";
    client *second = client_connect_from(s, "127.0.0.2");
    client_send_raw(second, v1_other, sizeof v1_other - 1, false);
    char buf[1024];
    read_all(second, buf, sizeof buf);
    if (!strstr(buf, "too many connections from your address")) fail_msg("got: %s", buf);
    unsigned char v2[64];
    size_t len = v2_header(v2, "10.0.0.3");
    client *third = client_connect_from(s, "127.0.0.2");
    client_send_raw(third, v2, len, false);
    read_all(third, buf, sizeof buf);
    if (!strstr(buf, "too many connections from your address")) fail_msg("got: %s", buf);
    /* The first one plays on as the text client it is. */
    client_send_raw(first, "help\r\n", 6, false);
    assert_true(client_read_raw(first, seen, sizeof seen - 1, WAIT) > 0);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_guesser_behind_balancer_locks_nobody_out,
                                  teardown),
        cmocka_unit_test_teardown(test_budgets_per_real_client, teardown),
        cmocka_unit_test_teardown(test_health_checks_with_local, teardown),
        cmocka_unit_test_teardown(test_balancer_without_header_closed, teardown),
        cmocka_unit_test_teardown(test_headers_by_hand, teardown),
        cmocka_unit_test_teardown(test_header_from_unlisted_not_honoured, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
