/* test_cluster_names.c - a node name is held by one process: a second process under a
 * live node's name exits 1 at start, a process whose presence another wrote stops,
 * and a node restarted under its name at once gives every game one verdict. Each case
 * starts its own nats-server (-js, a temporary store). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <nats/nats.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"
#include "natsd.h"

/* A second process gives up on a name within the TTL and two beats (7 s);
 * anything that still runs after this started and listened. */
#define START_EXIT_S "60"

/* Runs race2048d with args (NULL-terminated) as a host would, expecting it to
 * exit at start on its own; returns its exit code (124: still running after
 * START_EXIT_S, killed) and its stdout and stderr, interleaved, in *out. */
static int run_expecting_exit(const char *const *args, char **out) {
    const char *bin = getenv("RACE2048D");
    if (!bin) fail_msg("RACE2048D is not set");
    const char *argv[32] = {
        "/bin/sh",     "-c",     "exec timeout -k 5 \"$0\" \"$@\" 2>&1",
        START_EXIT_S,  bin,      "--host",
        "127.0.0.1",   "--port", "0",
        "--http-port", "off",    "--journal",
        "none"};
    int argc = 13;
    for (int i = 0; args[i] && argc < 31; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    return harness_run(argv, out);
}

/* Waits until s has exited on its own (a zombie not yet reaped: server_stop
 * then reaps it and returns its exit code). */
static void wait_exited(th_server *s, int ms) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)s->pid);
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        char *stat = harness_read_file(path, NULL);
        const char *paren = strrchr(stat, ')');
        bool zombie = paren && paren[1] == ' ' && paren[2] == 'Z';
        free(stat);
        if (zombie) return;
        if (harness_remaining(deadline) <= 0)
            fail_msg("the server did not stop in %d ms", ms);
        poll(NULL, 0, 50);
    }
}

/* The test's own look into the presence bucket. */
typedef struct presence {
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
} presence;

static void presence_open(presence *p) {
    assert_int_equal(natsConnection_ConnectTo(&p->nc, natsd_url), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&p->js, p->nc, NULL), NATS_OK);
    assert_int_equal(js_KeyValue(&p->kv, p->js, "race2048-nodes"), NATS_OK);
}

static void presence_close(presence *p) {
    kvStore_Destroy(p->kv);
    jsCtx_Destroy(p->js);
    natsConnection_Destroy(p->nc);
    nats_CloseAndWait(2000);
}

static th_server *node(const char *name, const char *journal) {
    return SERVER("--cluster", natsd_url, "--node", name, "--journal", journal, "--grace",
                  "120", "--log-level", "info");
}

/* A value of s's /metrics, read on a socket of the test's own (the harness
 * counts its clients, and the rounds below read metrics thousands of times). */
static long long metric(th_server *s, const char *name) {
    int fd = harness_raw_connect(s, 0);
    fcntl(fd, F_SETFL, 0);
    static const char get[] =
        "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    if (write(fd, get, sizeof get - 1) != (ssize_t)(sizeof get - 1))
        fail_msg("GET /metrics");
    static char page[65536];
    size_t len = 0;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, harness_remaining(deadline)) <= 0)
            fail_msg("no /metrics in time");
        ssize_t r = read(fd, page + len, sizeof page - 1 - len);
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd);
    page[len] = '\0';
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(page, key);
    if (!at) fail_msg("no %s in /metrics", name);
    return atoll(at + strlen(key));
}

/* Everything s recorded is in the cluster's stream. */
static void wait_replicated(th_server *s) {
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    while (metric(s, "race2048_journal_waiting_bytes") != 0) {
        if (harness_remaining(deadline) <= 0) fail_msg("records never replicated");
        poll(NULL, 0, 50);
    }
}

/* Which of list took the games over once the total reaches want. */
static th_server *wait_taker(th_server **list, int n, long long *base, long long want,
                             int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    for (;;) {
        for (int i = 0; i < n; i++) {
            long long v = metric(list[i], "race2048_cluster_games_taken_over_total");
            if (v - base[i] >= want) return list[i];
        }
        if (harness_remaining(deadline) <= 0)
            fail_msg("%lld games not taken over within %d ms", want, ms);
        poll(NULL, 0, 200);
    }
}

/* Waits until no incarnation in the registry is claimed: every takeover so
 * far is done and cleaned up. (A taker killed between its takeover and its
 * clean-up leaves the old incarnation claimed by a dead node; whoever claims
 * it next rebuilds its games again, even one that ended on the dead taker:
 * a window of about a second after each takeover, outside this test's
 * matter, which kills a node once that window has passed.) */
static void wait_takeovers_done(void) {
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    assert_int_equal(natsConnection_ConnectTo(&nc, natsd_url), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    assert_int_equal(js_KeyValue(&kv, js, "race2048-owners"), NATS_OK);
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    for (bool claimed = true; claimed;) {
        claimed = false;
        kvKeysList keys = {0};
        assert_int_equal(kvStore_Keys(&keys, kv, NULL), NATS_OK);
        for (int k = 0; k < keys.Count && !claimed; k++) {
            kvEntry *e = NULL;
            if (kvStore_Get(&e, kv, keys.Keys[k]) != NATS_OK) continue;
            claimed = !strncmp(kvEntry_ValueString(e), "claimed:", 8);
            kvEntry_Destroy(e);
        }
        kvKeysList_Destroy(&keys);
        if (claimed && harness_remaining(deadline) <= 0)
            fail_msg("a takeover never ended");
        if (claimed) poll(NULL, 0, 100);
    }
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

static int run_replay(const char *journal) {
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[] = {bin, journal, NULL};
    return harness_run(argv, NULL);
}

/* --------------------------------------------------------- at start --- */

/* Two processes with one --node: the second exits 1 at start and says which
 * name to change and how; the first runs on, alone under its name. */
static void test_second_process_same_name(void **state) {
    (void)state;
    th_server *a = natsd_node("alpha");
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    char *out = NULL;
    const char *const args[] = {"--cluster", natsd_url, "--node", "alpha", NULL};
    int code = run_expecting_exit(args, &out);
    print_message("second process: exit %d: %s", code, out);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, "\"alpha\""));
    assert_non_null(strstr(out, "--node"));
    assert_null(strstr(out, "listening on"));
    free(out);
    /* The first one still serves, and the cluster counts one node. */
    client *c = client_named(a, "still");
    client_send(c, "{\"type\":\"solo\"}");
    client_expect(c, "start", WAIT);
    assert_int_equal(natsd_metric(a, "race2048_cluster_nodes"), 1);
    assert_int_equal(server_stop(a), 0);
}

/* The default name is the host name: two nodes on one host without --node
 * are the case above, and the message names the host name. */
static void test_second_process_default_name(void **state) {
    (void)state;
    char host[256] = "";
    assert_int_equal(gethostname(host, sizeof host), 0);
    th_server *a = SERVER("--cluster", natsd_url);
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    char *out = NULL;
    const char *const args[] = {"--cluster", natsd_url, NULL};
    int code = run_expecting_exit(args, &out);
    assert_int_equal(code, 1);
    char quoted[300];
    snprintf(quoted, sizeof quoted, "\"%s\"", host);
    assert_non_null(strstr(out, quoted));
    assert_non_null(strstr(out, "--node"));
    free(out);
    assert_int_equal(server_stop(a), 0);
}

/* ------------------------------------------------------ while running --- */

/* Another process writes node a's presence (as a second process under the
 * name would have before): a's next renewal finds a revision it did not
 * write, so a gives its rooms up (its players are told and closed) and
 * exits 1 with a log line saying why, leaving the other's entry alone. The
 * race is taken over by b once a's incarnation has looked dead for the TTL,
 * and ends once. */
static void test_presence_taken_stops(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("names-taken");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b");
    char log[600];
    snprintf(log, sizeof log, "%s/a.log", dir);
    harness_server_stderr(log);
    th_server *a = node("a", ja);
    harness_server_stderr(NULL);
    th_server *b = node("b", jb);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    client *p[2];
    const char *code = race_start(a, 2, NULL, p, NULL);
    char room[16];
    snprintf(room, sizeof room, "%s", code);
    json_t *last[2];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++)
            last[i] = client_move_any(p[i]);
    (void)last;
    wait_replicated(a);
    char tokens[2][64];
    for (int i = 0; i < 2; i++)
        snprintf(tokens[i], sizeof tokens[i], "%s", client_token(p[i]));

    presence pr;
    presence_open(&pr);
    uint64_t rev;
    assert_int_equal(kvStore_PutString(&rev, pr.kv, "a", "4000 77"), NATS_OK);
    for (int i = 0; i < 2; i++) {
        json_t *err = client_expect_skip(p[i], "error", "state player", 10000);
        assert_string_equal(jstr(err, "code"), "unavailable");
        client_expect_eof(p[i], WAIT);
    }
    wait_exited(a, 10000);
    assert_int_equal(server_stop(a), 1);
    char *text = harness_read_file(log, NULL);
    assert_non_null(strstr(text, "was written by another process"));
    assert_non_null(strstr(text, "--node"));
    free(text);
    /* The other process's entry stays (a gave back only its own). */
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, pr.kv, "a"), NATS_OK);
    assert_string_equal(kvEntry_ValueString(e), "4000 77");
    kvEntry_Destroy(e);
    presence_close(&pr);

    /* b takes the race over and runs it on; it ends once. */
    long long base = 0;
    wait_taker(&b, 1, &base, 1, 30000);
    client *q[2];
    for (int i = 0; i < 2; i++) {
        q[i] = client_connect(b);
        client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[i]);
        client_expect(q[i], "welcome", WAIT);
        assert_string_equal(
            jstr(client_expect_skip(q[i], "start", "player", WAIT), "room"), room);
    }
    client_send(q[0], "{\"type\":\"leave\"}");
    client_expect_skip(q[1], "end", "state player", WAIT);
    client_sync(q[1]);
    assert_int_equal(server_stop(b), 0);
    const char *both[] = {ja, jb};
    assert_int_equal(harness_game_records(both, 2, room), 1);
    assert_int_equal(run_replay(jb), 0);
}

/* A node paused (SIGSTOP) long enough to be taken for dead is replaced: a new
 * process starts under its name (on a journal of its own: the paused one
 * still holds its file) once the old presence has expired, and the race is
 * taken over. When the old process runs again it gives its rooms up (the
 * fence) and, finding its name held by the new process, stops with exit 1
 * instead of rejoining; the new one keeps the name, and the race has one
 * verdict. */
static void test_paused_node_replaced_stops(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("names-paused");
    const char *ja = harness_journal_of(dir, "a"), *ja2 = harness_journal_of(dir, "a2"),
               *jb = harness_journal_of(dir, "b");
    char log[600];
    snprintf(log, sizeof log, "%s/a.log", dir);
    harness_server_stderr(log);
    th_server *a = node("a", ja);
    harness_server_stderr(NULL);
    th_server *b = node("b", jb);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    client *p[2];
    char room[16];
    snprintf(room, sizeof room, "%s", race_start(a, 2, NULL, p, NULL));
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++)
            client_move_any(p[i]);
    wait_replicated(a);
    char tokens[2][64];
    for (int i = 0; i < 2; i++)
        snprintf(tokens[i], sizeof tokens[i], "%s", client_token(p[i]));

    kill(a->pid, SIGSTOP);
    th_server *a2 = node("a", ja2);
    th_server *both[2] = {b, a2};
    long long base[2] = {0, 0};
    th_server *taker = wait_taker(both, 2, base, 1, 30000);
    client *q[2];
    for (int i = 0; i < 2; i++) {
        q[i] = client_connect(taker);
        client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[i]);
        client_expect(q[i], "welcome", WAIT);
        assert_string_equal(
            jstr(client_expect_skip(q[i], "start", "player", WAIT), "room"), room);
    }
    client_move_any(q[0]);
    kill(a->pid, SIGCONT);
    wait_exited(a, 15000);
    assert_int_equal(server_stop(a), 1);
    char *text = harness_read_file(log, NULL);
    assert_non_null(strstr(text, "was written by another process"));
    free(text);
    /* The new process keeps the name and was never fenced; the race goes on
     * where it was taken over and ends once. */
    assert_int_equal(metric(a2, "race2048_cluster_fences_total"), 0);
    assert_int_equal(metric(a2, "race2048_cluster_connected"), 1);
    client_move_any(q[1]);
    client_send(q[0], "{\"type\":\"leave\"}");
    client_expect_skip(q[1], "end", "state player", WAIT);
    client_sync(q[1]);
    assert_int_equal(server_stop(a2), 0);
    assert_int_equal(server_stop(b), 0);
    const char *journals[] = {ja, ja2, jb};
    assert_int_equal(harness_game_records(journals, 3, room), 1);
    assert_int_equal(run_replay(ja2), 0);
    assert_int_equal(run_replay(jb), 0);
}

/* ----------------------------------------------------- restart rounds --- */

#define ROUNDS 20

/* Round after round, a race with a player on each of nodes a and b, run by
 * a; a is killed (-9) mid-race and started again at once under its name on
 * its journal. The new a waits for the old presence to expire and joins as
 * a new incarnation; the race is taken over (by a or b), both players
 * resume there and it ends. Over every round each game has one verdict in
 * all the journals together, and every journal checks out. */
static void test_restart_under_name_one_verdict(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("names-restart");
    char ja[512], jb[512];
    snprintf(ja, sizeof ja, "%s", harness_journal_of(dir, "a"));
    snprintf(jb, sizeof jb, "%s", harness_journal_of(dir, "b"));
    th_server *a = node("a", ja), *b = node("b", jb);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 10000);
    static char rooms[ROUNDS][16];
    for (int round = 0; round < ROUNDS; round++) {
        client *p0 = client_named(a, "p0");
        client_send(p0, "{\"type\":\"create\",\"players\":2}");
        snprintf(rooms[round], sizeof rooms[0], "%s",
                 jstr(client_expect(p0, "room", WAIT), "room"));
        client *p1 = client_named(b, "p1");
        int64_t deadline = harness_now_ms() + harness_ms(WAIT);
        for (;;) { /* the room reaches b's directory within a beat or so */
            client_send(p1, "{\"type\":\"join\",\"room\":\"%s\"}", rooms[round]);
            json_t *m = client_next(p1, WAIT);
            if (!strcmp(jstr(m, "type"), "room")) break;
            if (harness_remaining(deadline) <= 0)
                fail_msg("join failed: %s", jstr(m, "type"));
            poll(NULL, 0, 50);
        }
        client_expect_skip(p0, "start", "room", WAIT);
        client_expect_skip(p1, "start", "room", WAIT);
        for (int k = 0; k < 3; k++) {
            client_move_any(p0);
            client_move_any(p1);
        }
        wait_replicated(a);
        wait_takeovers_done();
        char tokens[2][64];
        snprintf(tokens[0], sizeof tokens[0], "%s", client_token(p0));
        snprintf(tokens[1], sizeof tokens[1], "%s", client_token(p1));
        long long base[2] = {metric(b, "race2048_cluster_games_taken_over_total"), 0};
        server_kill(a);
        client_close(p0);
        client_close(p1); /* its seat is resumed on the taker below */
        a = node("a", ja);
        th_server *both[2] = {b, a};
        th_server *taker = wait_taker(both, 2, base, 1, 30000);
        client *q[2];
        for (int i = 0; i < 2; i++) {
            q[i] = client_connect(taker);
            client_send(q[i], "{\"type\":\"resume\",\"token\":\"%s\"}", tokens[i]);
            client_expect(q[i], "welcome", WAIT);
            assert_string_equal(
                jstr(client_expect_skip(q[i], "start", "player", WAIT), "room"),
                rooms[round]);
        }
        client_move_any(q[1]);
        client_send(q[0], "{\"type\":\"leave\"}");
        client_expect_skip(q[1], "end", "state player", WAIT);
        client_sync(q[1]);
        client_close(q[0]);
        client_close(q[1]);
    }
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
    const char *journals[] = {ja, jb};
    int twice = 0, none = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int n = harness_game_records(journals, 2, rooms[round]);
        twice += n > 1;
        none += n == 0;
    }
    print_message("%d rounds: %d games with more than one verdict, %d with none\n",
                  ROUNDS, twice, none);
    assert_int_equal(twice, 0);
    assert_int_equal(none, 0);
    assert_int_equal(run_replay(ja), 0);
    assert_int_equal(run_replay(jb), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_process_same_name, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_second_process_default_name, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_presence_taken_stops, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_paused_node_replaced_stops, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_restart_under_name_one_verdict, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
