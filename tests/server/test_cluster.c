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
#include "natsd.h"

/* Two nodes see each other; a node killed with -9 drops out of the other's
 * count within the presence TTL (5 s) plus a beat. */
static void test_nodes_see_each_other(void **state) {
    (void)state;
    th_server *a = natsd_node("a"), *b = natsd_node("b");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 10000);
    assert_int_equal(natsd_metric(a, "race2048_cluster_connected"), 1);
    server_kill(b);
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 12000);
    assert_int_equal(server_stop(a), 0);
}

/* A planned stop (SIGTERM) leaves at once: the other's count drops without
 * waiting out the TTL... within two beats. */
static void test_sigterm_leaves_at_once(void **state) {
    (void)state;
    th_server *a = natsd_node("a"), *b = natsd_node("b");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    assert_int_equal(server_stop(b), 0);
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 3000);
    assert_int_equal(server_stop(a), 0);
}

/* Player ids from two nodes never collide: each node takes its own blocks of
 * the cluster's counter (65536 ids apiece), and they stay short: a default
 * name holds its id whole. */
static void test_ids_apart(void **state) {
    (void)state;
    th_server *a = natsd_node("a"), *b = natsd_node("b");
    client *ca = client_connect(a);
    client_send(ca, "{\"type\":\"ping\"}"); /* no hello: named player-ID */
    json_t *wa = client_expect(ca, "welcome", WAIT);
    json_int_t ia = jint(wa, "id");
    json_int_t ib = jint(client_hello(client_connect(b), "x"), "id");
    assert_true(ia != ib);
    assert_true(ia / 65536 != ib / 65536); /* blocks apart */
    assert_true(ia < 1000000000 && ib < 1000000000);
    char name[32];
    snprintf(name, sizeof name, "player-%lld", (long long)ia);
    assert_string_equal(jstr(wa, "name"), name);
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
}

/* NATS gone: /healthz is 503 and the node keeps serving what it can (a solo
 * game); NATS back with its store: 200 again and the nodes count again. */
static void test_nats_outage(void **state) {
    (void)state;
    th_server *a = natsd_node("a");
    char page[4096];
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    assert_int_equal(natsd_http_get(a, "/healthz", page, sizeof page), 200);
    kill(natsd_pid, SIGSTOP); /* hung, not closed: found by the link's pings */
    int64_t deadline = harness_now_ms() + harness_ms(15000);
    while (natsd_http_get(a, "/healthz", page, sizeof page) != 503) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    client *c = client_connect(a);
    client_send(c, "{\"type\":\"solo\"}");
    client_expect_skip(c, "start", "welcome", WAIT);
    kill(natsd_pid, SIGCONT);
    deadline = harness_now_ms() + harness_ms(15000);
    while (natsd_http_get(a, "/healthz", page, sizeof page) != 200) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    assert_int_equal(server_stop(a), 0);
}

/* NATS out of reach at start is exit 1 (with why on stderr) before anything
 * listens. */
static void test_unreachable_at_start(void **state) {
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", natsd_free_port());
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
        cmocka_unit_test_setup_teardown(test_nodes_see_each_other, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_leaves_at_once, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_ids_apart, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_nats_outage, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_at_start, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
