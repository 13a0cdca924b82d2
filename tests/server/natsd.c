/* natsd.c - for cluster tests: the test's own nats-server and the HTTP probes of the
 * nodes. */
#include "natsd.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t natsd_pid = -1;
int natsd_port;
char natsd_url[64];
static char nats_dir[512];

/* A port nothing listens on now (the kernel's pick for a socket closed again). */
int natsd_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static bool port_open(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* Starts nats-server with JetStream on natsd_port (the same store each time,
 * as a restarted NATS keeps its data), and waits until it accepts. */
void natsd_start(void) {
    natsd_pid = fork();
    assert_true(natsd_pid >= 0);
    if (natsd_pid == 0) {
        char port[16];
        snprintf(port, sizeof port, "%d", natsd_port);
        int null = open("/dev/null", 1);
        if (null >= 0) dup2(null, 2), dup2(null, 1);
        const char *bin = getenv("RACE2048_NATS_SERVER");
        execlp(bin ? bin : "nats-server", "nats-server", "-js", "-sd", nats_dir, "-a",
               "127.0.0.1", "-p", port, (char *)NULL);
        _exit(127);
    }
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    while (!port_open(natsd_port)) {
        int status;
        if (waitpid(natsd_pid, &status, WNOHANG) == natsd_pid)
            fail_msg("nats-server did not start (is it installed? exit %d)",
                     WEXITSTATUS(status));
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0,
             20); /* polling a port that is not open yet: no message to wait for */
    }
}

void natsd_stop(void) {
    if (natsd_pid <= 0) return;
    kill(natsd_pid, SIGKILL);
    waitpid(natsd_pid, NULL, 0);
    natsd_pid = -1;
}

int natsd_setup(void **state) {
    (void)state;
    natsd_port = natsd_free_port();
    snprintf(natsd_url, sizeof natsd_url, "nats://127.0.0.1:%d", natsd_port);
    snprintf(nats_dir, sizeof nats_dir, "%s", harness_temp_dir("cluster-nats"));
    natsd_start();
    return 0;
}

static void lasting_stop(void) {
    natsd_stop();
    char cmd[sizeof nats_dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", nats_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", nats_dir);
}

void natsd_start_lasting(void) {
    if (natsd_pid > 0) return;
    natsd_port = natsd_free_port();
    snprintf(natsd_url, sizeof natsd_url, "nats://127.0.0.1:%d", natsd_port);
    snprintf(nats_dir, sizeof nats_dir, "/tmp/r2048-nats-XXXXXX");
    if (!mkdtemp(nats_dir)) fail_msg("mkdtemp: %s", strerror(errno));
    natsd_start();
    atexit(lasting_stop);
}

int natsd_teardown(void **state) {
    int rc = harness_teardown(state);
    natsd_stop();
    return rc;
}

/* The body of an HTTP GET on the game port, and its status code. */
int natsd_http_get(th_server *s, const char *path, char *page, size_t cap) {
    client *http = client_connect(s);
    char get[128];
    int n = snprintf(get, sizeof get,
                     "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    client_send_raw(http, get, (size_t)n, false);
    size_t len = 0;
    for (;;) {
        size_t got = client_read_raw(http, page + len, cap - 1 - len, WAIT);
        if (!got) break;
        len += got;
    }
    page[len] = '\0';
    client_close(http);
    int code = 0;
    sscanf(page, "HTTP/1.1 %d", &code);
    return code;
}

long long natsd_metric(th_server *s, const char *name) {
    static char page[65536];
    natsd_http_get(s, "/metrics", page, sizeof page);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(page, key);
    if (!at) fail_msg("no %s in /metrics", name);
    return atoll(at + strlen(key));
}

/* Waits until the metric reads want (polling /metrics: the link's state has
 * no message to wait for). */
void natsd_wait_metric(th_server *s, const char *name, long long want, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    long long v;
    while ((v = natsd_metric(s, name)) != want) {
        if (harness_remaining(deadline) <= 0)
            fail_msg("%s stayed %lld, expected %lld", name, v, want);
        poll(NULL, 0, 100);
    }
}

void natsd_wait_taken_over(th_server *s, long long games, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    long long v;
    while ((v = natsd_metric(s, "race2048_cluster_games_taken_over_total")) < games) {
        if (harness_remaining(deadline) <= 0)
            fail_msg("%lld games taken over after %d ms, expected %lld", v, ms, games);
        poll(NULL, 0, 50);
    }
}

th_server *natsd_node(const char *name) {
    return SERVER("--cluster", natsd_url, "--node", name);
}
