/* test_cluster.c - cluster mode's link: nodes see each other through NATS KV, a dead
 * node drops out, NATS out of reach is 503 and comes back, ids never collide. The test
 * starts its own nats-server (-js, a temporary store, a free port). */
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
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static pid_t nats_pid = -1;
static int nats_port;
static char nats_url[64];
static char nats_dir[512];

/* A port nothing listens on now (the kernel's pick for a socket closed again). */
static int free_port(void) {
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

/* Starts nats-server with JetStream on nats_port (the same store each time,
 * as a restarted NATS keeps its data), and waits until it accepts. */
static void nats_start(void) {
    nats_pid = fork();
    assert_true(nats_pid >= 0);
    if (nats_pid == 0) {
        char port[16];
        snprintf(port, sizeof port, "%d", nats_port);
        int null = open("/dev/null", 1);
        if (null >= 0) dup2(null, 2), dup2(null, 1);
        const char *bin = getenv("RACE2048_NATS_SERVER");
        execlp(bin ? bin : "nats-server", "nats-server", "-js", "-sd", nats_dir, "-a",
               "127.0.0.1", "-p", port, (char *)NULL);
        _exit(127);
    }
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    while (!port_open(nats_port)) {
        int status;
        if (waitpid(nats_pid, &status, WNOHANG) == nats_pid)
            fail_msg("nats-server did not start (is it installed? exit %d)",
                     WEXITSTATUS(status));
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0,
             20); /* polling a port that is not open yet: no message to wait for */
    }
}

static void nats_stop(void) {
    if (nats_pid <= 0) return;
    kill(nats_pid, SIGKILL);
    waitpid(nats_pid, NULL, 0);
    nats_pid = -1;
}

static int setup(void **state) {
    (void)state;
    nats_port = free_port();
    snprintf(nats_url, sizeof nats_url, "nats://127.0.0.1:%d", nats_port);
    snprintf(nats_dir, sizeof nats_dir, "%s", harness_temp_dir("cluster-nats"));
    nats_start();
    return 0;
}

static int teardown(void **state) {
    int rc = harness_teardown(state);
    nats_stop();
    return rc;
}

/* The body of an HTTP GET on the game port, and its status code. */
static int http_get(th_server *s, const char *path, char *page, size_t cap) {
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

static long long metric(th_server *s, const char *name) {
    static char page[65536];
    http_get(s, "/metrics", page, sizeof page);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(page, key);
    if (!at) fail_msg("no %s in /metrics", name);
    return atoll(at + strlen(key));
}

/* Waits until the metric reads want (polling /metrics: the link's state has
 * no message to wait for). */
static void wait_metric(th_server *s, const char *name, long long want, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    long long v;
    while ((v = metric(s, name)) != want) {
        if (harness_remaining(deadline) <= 0)
            fail_msg("%s stayed %lld, expected %lld", name, v, want);
        poll(NULL, 0, 100);
    }
}

static th_server *node(const char *name) {
    return SERVER("--cluster", nats_url, "--node", name);
}

/* Two nodes see each other; a node killed with -9 drops out of the other's
 * count within the presence TTL (5 s) plus a beat. */
static void test_nodes_see_each_other(void **state) {
    (void)state;
    th_server *a = node("a"), *b = node("b");
    wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    wait_metric(b, "race2048_cluster_nodes", 2, 10000);
    assert_int_equal(metric(a, "race2048_cluster_connected"), 1);
    server_kill(b);
    wait_metric(a, "race2048_cluster_nodes", 1, 12000);
    assert_int_equal(server_stop(a), 0);
}

/* A planned stop (SIGTERM) leaves at once: the other's count drops without
 * waiting out the TTL... within two beats. */
static void test_sigterm_leaves_at_once(void **state) {
    (void)state;
    th_server *a = node("a"), *b = node("b");
    wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    assert_int_equal(server_stop(b), 0);
    wait_metric(a, "race2048_cluster_nodes", 1, 3000);
    assert_int_equal(server_stop(a), 0);
}

/* Player ids from two nodes never collide: each node's ids carry its number. */
static void test_ids_apart(void **state) {
    (void)state;
    th_server *a = node("a"), *b = node("b");
    json_int_t ia = jint(client_hello(client_connect(a), "x"), "id");
    json_int_t ib = jint(client_hello(client_connect(b), "x"), "id");
    assert_true(ia != ib);
    assert_true(ia >> 40 != ib >> 40);
    assert_true(ia < (json_int_t)1 << 53 && ib < (json_int_t)1 << 53); /* JSON-safe */
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
}

/* NATS gone: /healthz is 503 and the node keeps serving what it can (a solo
 * game); NATS back with its store: 200 again and the nodes count again. */
static void test_nats_outage(void **state) {
    (void)state;
    th_server *a = node("a");
    char page[4096];
    wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    assert_int_equal(http_get(a, "/healthz", page, sizeof page), 200);
    kill(nats_pid, SIGSTOP); /* hung, not closed: found by the link's pings */
    int64_t deadline = harness_now_ms() + harness_ms(15000);
    while (http_get(a, "/healthz", page, sizeof page) != 503) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    client *c = client_connect(a);
    client_send(c, "{\"type\":\"solo\"}");
    client_expect_skip(c, "start", "welcome", WAIT);
    kill(nats_pid, SIGCONT);
    deadline = harness_now_ms() + harness_ms(15000);
    while (http_get(a, "/healthz", page, sizeof page) != 200) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    assert_int_equal(server_stop(a), 0);
}

/* NATS out of reach at start is exit 1 (with why on stderr) before anything
 * listens. */
static void test_unreachable_at_start(void **state) {
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", free_port());
    const char *bin = getenv("RACE2048D");
    assert_non_null(bin);
    const char *argv[] = {bin,    "--port",    "0", "--journal",
                          "none", "--cluster", url, NULL};
    char *out = NULL;
    int rc = harness_run(argv, &out);
    bool listened = out && strstr(out, "listening on");
    free(out);
    assert_int_equal(rc, 1);
    assert_false(listened);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nodes_see_each_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_leaves_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nats_outage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_at_start, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
