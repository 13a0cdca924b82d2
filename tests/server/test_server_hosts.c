/* test_server_hosts.c - race2048d --host with IPv4, IPv6 and a host name: what it prints,
 * where it answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"

#define MAX_ADDRS 16

/* One address as the server prints it: "127.0.0.1" or "[::1]". */
typedef struct endpoint {
    char text[INET6_ADDRSTRLEN + 2];
    struct sockaddr_storage addr;
    socklen_t len;
} endpoint;

/* True if this process can bind addr (port 0): the machine has that loopback. */
static bool can_bind(const struct sockaddr *addr, socklen_t len) {
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct sockaddr_storage a;
    memcpy(&a, addr, len);
    if (a.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a)->sin6_port = 0;
    else
        ((struct sockaddr_in *)&a)->sin_port = 0;
    bool ok = bind(fd, (struct sockaddr *)&a, len) == 0;
    close(fd);
    return ok;
}

static void endpoint_text(endpoint *e) {
    char ip[INET6_ADDRSTRLEN];
    if (e->addr.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&e->addr)->sin6_addr, ip, sizeof ip);
        snprintf(e->text, sizeof e->text, "[%s]", ip);
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&e->addr)->sin_addr, ip, sizeof ip);
        snprintf(e->text, sizeof e->text, "%s", ip);
    }
}

/* The distinct addresses host resolves to that this machine can bind: what
 * race2048d --host host must listen on. Returns how many. */
static int expected_endpoints(const char *host, endpoint out[MAX_ADDRS]) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list;
    int rc = getaddrinfo(host, NULL, &hints, &list);
    if (rc) fail_msg("getaddrinfo(%s): %s", host, gai_strerror(rc));
    int n = 0;
    for (struct addrinfo *ai = list; ai && n < MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        if (!can_bind(ai->ai_addr, ai->ai_addrlen)) continue;
        endpoint e = {.len = ai->ai_addrlen};
        memcpy(&e.addr, ai->ai_addr, ai->ai_addrlen);
        endpoint_text(&e);
        bool dup = false;
        for (int i = 0; i < n; i++)
            dup |= !strcmp(out[i].text, e.text);
        if (!dup) out[n++] = e;
    }
    freeaddrinfo(list);
    return n;
}

/* Connects to e on port, sends a JSON ping and waits for the pong line. */
static void assert_pong(const endpoint *e, int port) {
    struct sockaddr_storage a = e->addr;
    if (a.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)port);
    int fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    if (connect(fd, (struct sockaddr *)&a, e->len) < 0) {
        close(fd);
        fail_msg("connect to %s:%d failed", e->text, port);
    }
    static const char ping[] = "{\"type\":\"ping\",\"t\":\"hosts\"}\n";
    assert_int_equal(send(fd, ping, sizeof ping - 1, MSG_NOSIGNAL),
                     (ssize_t)(sizeof ping - 1));
    char buf[4096];
    size_t n = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    buf[0] = '\0';
    while (!strstr(buf, "\"pong\"")) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (n == sizeof buf - 1 || poll(&p, 1, harness_remaining(deadline)) <= 0) break;
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0) break;
        n += (size_t)r;
        buf[n] = '\0';
    }
    close(fd);
    if (!strstr(buf, "\"pong\""))
        fail_msg("no pong from %s:%d; got \"%s\"", e->text, port, buf);
}

/* Checks that s printed exactly one `listening on` line per address of want,
 * all with its one real port, and that each address answers. */
static void check_listening(th_server *s, const char *host, const endpoint *want,
                            int nwant) {
    assert_true(s->port > 0);
    bool seen[MAX_ADDRS] = {false};
    for (int i = 0; i < nwant; i++) {
        const char *line = i == 0 ? s->line : server_stdout_line(s, WAIT);
        static const char prefix[] = "race2048d listening on ";
        const char *colon = strrchr(line, ':');
        if (strncmp(line, prefix, sizeof prefix - 1) || !colon ||
            atoi(colon + 1) != s->port)
            fail_msg("\"%s\" is not \"%sADDRESS:%d\"", line, prefix, s->port);
        const char *address = line + sizeof prefix - 1;
        size_t len = (size_t)(colon - address);
        int k = 0;
        while (k < nwant &&
               !(strlen(want[k].text) == len && !strncmp(address, want[k].text, len)))
            k++;
        if (k == nwant) fail_msg("unexpected line \"%s\" for --host %s", line, host);
        if (seen[k]) fail_msg("\"%s\" printed twice", line);
        seen[k] = true;
    }
    for (int i = 0; i < nwant; i++)
        assert_pong(&want[i], s->port);
}

/* Starts race2048d --host host and checks it against what host resolves to
 * here. */
static void check_host(const char *host) {
    endpoint want[MAX_ADDRS];
    int nwant = expected_endpoints(host, want);
    if (nwant == 0) {
        print_message("%s names no address this machine can bind; skipped\n", host);
        skip();
    }
    th_server *s = SERVER("--host", host);
    check_listening(s, host, want, nwant);
    assert_int_equal(server_stop(s), 0);
}

static void test_host_ipv4(void **state) {
    th_server *s = SERVER("--host", "127.0.0.1");
    char expect[64];
    snprintf(expect, sizeof expect, "race2048d listening on 127.0.0.1:%d", s->port);
    assert_string_equal(s->line, expect);
    check_host("127.0.0.1");
}

static void test_host_ipv6_loopback(void **state) {
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    if (!can_bind((struct sockaddr *)&a, sizeof a)) {
        print_message("no IPv6 loopback on this machine; skipped\n");
        skip();
    }
    check_host("::1");
}

/* localhost is 127.0.0.1 and, where /etc/hosts says so (Debian does), ::1:
 * both are listened on, on the same port even with --port 0. */
static void test_host_localhost(void **state) {
    check_host("localhost");
}

/* The port flag applies to every address of a name. */
static void test_host_name_with_fixed_port(void **state) {
    /* Find a free port, then give it back for the server. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    int port = ntohs(a.sin_port);
    close(fd);
    char portarg[16];
    snprintf(portarg, sizeof portarg, "%d", port);
    th_server *s = SERVER("--host", "localhost", "--port", portarg);
    assert_int_equal(s->port, port);
}

/* A name with an IPv4 and an IPv6 address: both are listened on, on one port
 * (the first bind picks it with --port 0). The name is made up in a private
 * /etc/hosts (tests/server/with_hosts.sh, a mount namespace), so this runs
 * only where unprivileged user namespaces work; Debian's own localhost (both
 * 127.0.0.1 and ::1) is checked by test_host_localhost. */
static void test_host_name_with_both_families(void **state) {
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                              .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    const char *script = getenv("RACE2048_WITH_HOSTS");
    if (!script || !can_bind((struct sockaddr *)&a6, sizeof a6)) {
        print_message("no IPv6 loopback (or no with_hosts.sh); skipped\n");
        skip();
    }
    char hosts[] = "/tmp/race2048-hosts-XXXXXX";
    int fd = mkstemp(hosts);
    assert_true(fd >= 0);
    static const char lines[] = "::1 race2048-both\n127.0.0.1 race2048-both\n";
    assert_int_equal(write(fd, lines, sizeof lines - 1), (ssize_t)(sizeof lines - 1));
    close(fd);
    char probe[1024];
    snprintf(probe, sizeof probe, "%s %s getent ahosts race2048-both >/dev/null 2>&1",
             script, hosts);
    if (system(probe) != 0) {
        unlink(hosts);
        print_message("cannot make a private /etc/hosts (unshare -rm); skipped\n");
        skip();
    }
    char wrapper[1024];
    snprintf(wrapper, sizeof wrapper, "%s %s", script, hosts);
    const char *old = getenv("RACE2048D_WRAPPER");
    char *saved = old ? strdup(old) : NULL;
    setenv("RACE2048D_WRAPPER", wrapper, 1);
    th_server *s = SERVER("--host", "race2048-both");
    if (saved) {
        setenv("RACE2048D_WRAPPER", saved, 1);
        free(saved);
    } else {
        unsetenv("RACE2048D_WRAPPER");
    }
    unlink(hosts); /* resolved by now */

    endpoint want[2] = {{.len = sizeof(struct sockaddr_in6)},
                        {.len = sizeof(struct sockaddr_in)}};
    memcpy(&want[0].addr, &a6, sizeof a6);
    struct sockaddr_in a4 = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    memcpy(&want[1].addr, &a4, sizeof a4);
    endpoint_text(&want[0]);
    endpoint_text(&want[1]);
    check_listening(s, "race2048-both", want, 2);
    assert_int_equal(server_stop(s), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_host_ipv4, harness_teardown),
        cmocka_unit_test_teardown(test_host_ipv6_loopback, harness_teardown),
        cmocka_unit_test_teardown(test_host_localhost, harness_teardown),
        cmocka_unit_test_teardown(test_host_name_with_fixed_port, harness_teardown),
        cmocka_unit_test_teardown(test_host_name_with_both_families, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
