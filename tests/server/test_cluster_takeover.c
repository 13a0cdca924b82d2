/* test_cluster_takeover.c - failover in cluster mode: a race whose node dies (kill -9),
 * stops (SIGTERM) or loses NATS goes on on another node with the same boards, and
 * ends exactly once. Each case starts its own nats-server (-js, a temporary store). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <nats/nats.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "harness.h"
#include "natsd.h"

/* The contract's bound: a race goes on within 10 s of its node's death. */
#define TAKEOVER_MS 10000

/* A node with a journal of its own (the records it replicates come from it). */
static th_server *node(const char *name, const char *journal) {
    return SERVER("--cluster", natsd_url, "--node", name, "--journal", journal, "--grace",
                  "120");
}

/* Everything s has recorded is in the cluster's stream (nothing waits). */
static void wait_replicated(th_server *s) {
    natsd_wait_metric(s, "race2048_journal_waiting_bytes", 0, 10000);
}

/* A resume with token on a fresh connection to s: its start snapshot. */
static json_t *resume_on(th_server *s, client **c, const char *token) {
    *c = client_connect(s);
    client_send(*c, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect(*c, "welcome", WAIT);
    return client_expect_skip(*c, "start", "player", WAIT);
}

/* The player objects in a snapshot are what the last states said. */
static void same_player(json_t *start, const json_t *last) {
    json_t *p = jplayer(jarr(start, "players"), jint(last, "id"));
    assert_true(jequal(json_object_get(p, "board"), json_object_get(last, "board")));
    assert_int_equal(jint(p, "score"), jint(last, "score"));
    assert_int_equal(jint(p, "moves"), jint(last, "moves"));
}

/* Counts the finished-game records of room `code` in a journal file. */
static int finished_records(const char *path, const char *code) {
    return harness_game_records(&path, 1, code);
}

static int run_replay(const char *journal) {
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[] = {bin, journal, NULL};
    return harness_run(argv, NULL);
}

/* A race of two on s with a few moves each; last[i] gets each one's last state. */
static const char *race_with_moves(th_server *s, client **p, json_t **last) {
    const char *code = race_start(s, 2, NULL, p, NULL);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            last[i] = client_move_any(p[i]);
    client_skipped(p[0]);
    client_skipped(p[1]);
    return code;
}

/* The race goes on after the takeover: both resume on survivor with the boards,
 * scores and move counts they had, play on, p0 leaves and p1 gets the one `end`. */
static void go_on(th_server *survivor, client **p, json_t **last, const char *code) {
    char tokens[2][64];
    for (int i = 0; i < 2; i++)
        snprintf(tokens[i], sizeof tokens[i], "%s", client_token(p[i]));
    client *q[2];
    for (int i = 0; i < 2; i++) {
        json_t *st = resume_on(survivor, &q[i], tokens[i]);
        assert_string_equal(jstr(st, "room"), code);
        same_player(st, last[0]);
        same_player(st, last[1]);
    }
    for (int i = 0; i < 2; i++)
        client_move_any(q[i]);
    client_skipped(q[0]);
    client_skipped(q[1]);
    client_send(q[0], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(q[1], "end", "state player", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    /* Exactly one end: nothing more comes once p1 syncs. */
    client_sync(q[1]);
}

/* kill -9 of the owner mid-race: the survivor runs the race on within 10 s, as it
 * was; it ends once; the survivor's journal checks out; a race that ended on the
 * dead node before the kill is in its history when it comes back (empty). */
static void test_kill_owner(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-kill");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b");
    th_server *a = node("a", ja), *b = node("b", jb);
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 10000);

    /* A race that ends before the kill (its `end` was sent: it is durable). */
    client *f[2];
    json_t *flast[2];
    const char *done = race_with_moves(a, f, flast);
    char done_code[16];
    snprintf(done_code, sizeof done_code, "%s", done);
    client_send(f[0], "{\"type\":\"leave\"}");
    client_expect_skip(f[1], "end", "state player", WAIT);

    client *p[2];
    json_t *last[2];
    const char *code = race_with_moves(a, p, last);
    wait_replicated(a);
    int64_t killed = harness_now_ms();
    server_kill(a);
    natsd_wait_taken_over(b, 1, TAKEOVER_MS);
    int64_t took = harness_now_ms() - killed;
    go_on(b, p, last, code);
    print_message("takeover after kill -9: %lld ms\n", (long long)took);
    assert_true(took <= harness_ms(TAKEOVER_MS));

    assert_int_equal(server_stop(b), 0);
    assert_int_equal(finished_records(jb, code), 1);
    assert_int_equal(finished_records(ja, code), 0);
    assert_int_equal(run_replay(jb), 0);
    /* The dead node again, under its name: empty, with its history. */
    assert_int_equal(finished_records(ja, done_code), 1);
    th_server *a2 = node("a", ja);
    client *h = client_named(a2, "h");
    client_send(h, "{\"type\":\"rooms\"}");
    assert_int_equal(json_array_size(jarr(client_expect(h, "rooms", WAIT), "rooms")), 0);
    client_send(h, "{\"type\":\"history\"}");
    char *dump = json_dumps(client_expect(h, "history", WAIT), 0);
    assert_non_null(strstr(dump, done_code));
    free(dump);
    assert_int_equal(server_stop(a2), 0);
}

/* SIGTERM of the owner (a planned stop): the survivor claims at its next beat;
 * nobody loses the seat. */
static void test_sigterm_owner(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-term");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b");
    th_server *a = node("a", ja), *b = node("b", jb);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 10000);
    client *p[2];
    json_t *last[2];
    const char *code = race_with_moves(a, p, last);
    int64_t stopped = harness_now_ms();
    assert_int_equal(server_stop(a), 0);
    natsd_wait_taken_over(b, 1, TAKEOVER_MS);
    print_message("takeover after SIGTERM: %lld ms\n",
                  (long long)(harness_now_ms() - stopped));
    go_on(b, p, last, code);
    assert_int_equal(server_stop(b), 0);
    assert_int_equal(finished_records(jb, code), 1);
    assert_int_equal(run_replay(jb), 0);
}

/* The next object of c that is not a state or player: must be an error
 * `unavailable`, then the connection closes. */
static void expect_given_up(client *c) {
    json_t *e = client_expect_skip(c, "error", "state player", 15000);
    assert_string_equal(jstr(e, "code"), "unavailable");
    client_expect_eof(c, WAIT);
}

/* c's connection closes before any `end` reaches it (its node lost the
 * cluster before the end's record was in the cluster's stream). */
static void expect_closed_without_end(client *c) {
    for (;;) {
        json_t *m = client_next(c, 15000);
        if (!m) return;
        if (!strcmp(jstr(m, "type"), "end")) fail_msg("an `end` the cluster never had");
    }
}

/* How many games of room `code` s's `history` lists. */
static int in_history(th_server *s, const char *code) {
    client *h = client_named(s, "h");
    client_send(h, "{\"type\":\"history\"}");
    json_t *games = jarr(client_expect(h, "history", WAIT), "games");
    int n = 0;
    for (size_t i = 0; i < json_array_size(games); i++) {
        json_t *room = json_object_get(json_array_get(games, i), "room");
        n += json_is_string(room) && !strcmp(json_string_value(room), code);
    }
    client_close(h);
    return n;
}

static long long finished_total(th_server *s) {
    return natsd_metric(s, "race2048_games_finished_total{reason=\"forfeit\"}");
}

/* NATS stopped for 15 s mid-race: the owner gives its rooms up (its players get
 * `unavailable`, /healthz is 503); once NATS is back the race is resumable on
 * some node, and it ends exactly once. A race that ends on the cut-off node
 * before it gives up (its record never reached the cluster) shows nobody that
 * `end`: it goes on elsewhere from the records the cluster has. */
static void test_nats_gone(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-nats");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b");
    th_server *a = node("a", ja), *b = node("b", jb);
    th_server *nodes[2] = {a, b};
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    client *p[2];
    json_t *last[2];
    const char *code = race_with_moves(a, p, last);
    client *e[2];
    json_t *elast[2];
    const char *ended = race_with_moves(a, e, elast);
    char ended_code[16], tokens[2][64], etokens[2][64];
    snprintf(ended_code, sizeof ended_code, "%s", ended);
    for (int i = 0; i < 2; i++) {
        snprintf(tokens[i], sizeof tokens[i], "%s", client_token(p[i]));
        snprintf(etokens[i], sizeof etokens[i], "%s", client_token(e[i]));
    }
    wait_replicated(a);
    int64_t outage = harness_now_ms();
    kill(natsd_pid, SIGSTOP);
    client_send(e[0], "{\"type\":\"leave\"}"); /* ends it, on a cut-off node */
    expect_given_up(p[0]);
    expect_given_up(p[1]);
    expect_closed_without_end(e[0]);
    expect_closed_without_end(e[1]);
    char page[4096];
    assert_int_equal(natsd_http_get(a, "/healthz", page, sizeof page), 503);
    assert_int_equal(natsd_metric(a, "race2048_cluster_fences_total"), 1);
    /* The outage lasts 15 s: a solo game still works meanwhile. */
    client *solo = client_named(a, "solo");
    client_send(solo, "{\"type\":\"solo\"}");
    client_expect(solo, "start", WAIT);
    while (harness_now_ms() - outage < 15000) {
        assert_int_equal(natsd_http_get(a, "/healthz", page, sizeof page), 503);
        poll(NULL, 0, 500); /* the outage's length itself, not a synchronisation */
    }
    kill(natsd_pid, SIGCONT);
    /* Someone (either node, the old owner included) takes the race over. */
    int64_t deadline = harness_now_ms() + harness_ms(30000);
    th_server *owner = NULL;
    while (!owner) {
        for (int i = 0; i < 2 && !owner; i++)
            if (natsd_metric(nodes[i], "race2048_cluster_games_taken_over_total") >= 1)
                owner = nodes[i];
        if (!owner) {
            assert_true(harness_remaining(deadline) > 0);
            poll(NULL, 0, 100);
        }
    }
    long long before = finished_total(a) + finished_total(b);
    client *q[2];
    for (int i = 0; i < 2; i++) {
        json_t *st = resume_on(owner, &q[i], tokens[i]);
        assert_string_equal(jstr(st, "room"), code);
    }
    client_move_any(q[0]);
    client_send(q[0], "{\"type\":\"leave\"}");
    client_expect_skip(q[1], "end", "state player", WAIT);
    client_sync(q[1]);
    assert_int_equal(finished_total(a) + finished_total(b), before + 1);
    /* The race that ended unseen: whether its end's record reached the stream
     * is not known to the cut-off node (a publish whose ack never came). If it
     * did not, the race goes on, its leave undone; if it did, it is over, in
     * the taker's history. One verdict either way. */
    if (natsd_metric(owner, "race2048_cluster_games_taken_over_total") == 2) {
        client *r[2];
        for (int i = 0; i < 2; i++) {
            json_t *st = resume_on(owner, &r[i], etokens[i]);
            assert_string_equal(jstr(st, "room"), ended_code);
            same_player(st, elast[0]);
            same_player(st, elast[1]);
        }
        client_send(r[1], "{\"type\":\"leave\"}");
        json_t *end = client_expect_skip(r[0], "end", "state player", WAIT);
        assert_int_equal(jint(end, "winner"), jint(elast[0], "id"));
    } else {
        print_message("the unseen end reached the stream: the race stays over\n");
    }
    /* history answers for the whole cluster: each node lists each game once
     * (two verdicts would be two entries, their end times apart). */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(in_history(nodes[i], ended_code), 1);
        assert_int_equal(in_history(nodes[i], code), 1);
    }
    natsd_wait_metric(a, "race2048_cluster_connected", 1, 10000);
    assert_int_equal(natsd_http_get(a, "/healthz", page, sizeof page), 200);
    assert_int_equal(server_stop(a), 0);
    assert_int_equal(server_stop(b), 0);
    assert_int_equal(harness_game_records((const char *const[]){ja, jb}, 2, code), 1);
    assert_int_equal(run_replay(ja), 0);
    assert_int_equal(run_replay(jb), 0);
}

/* SIGTERM while cut off from NATS (its rooms given up, records kept for a
 * next incarnation that never comes): the node still stops, cleanly. */
static void test_stop_while_cut_off(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-cutoff");
    th_server *a = node("a", harness_journal_of(dir, "a"));
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    client *p[2];
    json_t *last[2];
    race_with_moves(a, p, last);
    kill(natsd_pid, SIGSTOP);
    expect_given_up(p[0]);
    client *solo = client_named(a, "solo"); /* records kept while cut off */
    client_send(solo, "{\"type\":\"solo\"}");
    client_expect(solo, "start", WAIT);
    client_move_any(solo);
    assert_int_equal(server_stop(a), 0);
    kill(natsd_pid, SIGCONT);
}

/* The test's own look into the incarnations' bucket. */
typedef struct owners {
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
} owners;

static void owners_open(owners *o) {
    assert_int_equal(natsConnection_ConnectTo(&o->nc, natsd_url), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&o->js, o->nc, NULL), NATS_OK);
    assert_int_equal(js_KeyValue(&o->kv, o->js, "race2048-owners"), NATS_OK);
}

static void owners_close(owners *o) {
    kvStore_Destroy(o->kv);
    jsCtx_Destroy(o->js);
    natsConnection_Destroy(o->nc);
    nats_CloseAndWait(2000);
}

/* The registry key of node's incarnation ("inc.NAME.EPOCH") into key; false
 * if there is none. */
static bool owners_key(owners *o, const char *name, char *key, size_t n) {
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, o->kv, NULL) != NATS_OK) return false;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "inc.%s.", name);
    bool found = false;
    for (int i = 0; i < keys.Count && !found; i++)
        if (!strncmp(keys.Keys[i], prefix, strlen(prefix))) {
            snprintf(key, n, "%s", keys.Keys[i]);
            found = true;
        }
    kvKeysList_Destroy(&keys);
    return found;
}

/* A claimer that died mid-way leaves `claimed:X` with X dead: the next
 * survivor claims the incarnation again, and cleans it up once it runs its
 * races. */
static void test_dead_claimer(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-reclaim");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b");
    th_server *a = node("a", ja);
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    client *p[2];
    json_t *last[2];
    const char *code = race_with_moves(a, p, last);
    wait_replicated(a);
    owners o;
    owners_open(&o);
    char key[128];
    assert_true(owners_key(&o, "a", key, sizeof key));
    server_kill(a);
    /* As if node "ghost" had claimed it and died before it was done. */
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, o.kv, key), NATS_OK);
    assert_string_equal(kvEntry_ValueString(e), "live");
    uint64_t rev;
    assert_int_equal(
        kvStore_UpdateString(&rev, o.kv, key, "claimed:ghost.3", kvEntry_Revision(e)),
        NATS_OK);
    kvEntry_Destroy(e);
    th_server *b = node("b", jb);
    natsd_wait_taken_over(b, 1, 15000);
    go_on(b, p, last, code);
    /* Done: the old incarnation's entry is gone. */
    int64_t deadline = harness_now_ms() + harness_ms(10000);
    while (owners_key(&o, "a", key, sizeof key)) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    owners_close(&o);
    assert_int_equal(server_stop(b), 0);
    assert_int_equal(run_replay(jb), 0);
}

/* Every game's verdicts across the journals at paths: finished-game records
 * grouped by `commit` (unique per game), each distinct record one verdict (a
 * copy adopted by another node is the same line). Returns the most verdicts
 * any game has; *games gets how many games have one or more. */
static int verdicts_per_game(const char *const *paths, int n, int *games) {
    enum { MAX = 256 };
    struct {
        char commit[72];
        char *line;
    } seen[MAX];
    int nseen = 0;
    for (int k = 0; k < n; k++) {
        if (access(paths[k], R_OK) != 0) continue;
        char *data = harness_read_file(paths[k], NULL);
        for (char *line = data; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            json_t *o =
                strncmp(line, "{\"j\":\"game\"", 11) ? NULL : json_loads(line, 0, NULL);
            const char *commit = json_string_value(json_object_get(o, "commit"));
            if (commit) {
                bool known = false;
                for (int i = 0; i < nseen && !known; i++)
                    known =
                        !strcmp(seen[i].commit, commit) && !strcmp(seen[i].line, line);
                assert_true(nseen < MAX);
                if (!known) {
                    snprintf(seen[nseen].commit, sizeof seen[0].commit, "%s", commit);
                    seen[nseen++].line = strdup(line);
                }
            }
            json_decref(o);
            line = nl ? nl + 1 : NULL;
        }
        free(data);
    }
    int most = 0;
    *games = 0;
    for (int i = 0; i < nseen; i++) {
        int same = 0, first = i;
        for (int k = 0; k < nseen; k++)
            if (!strcmp(seen[k].commit, seen[i].commit)) {
                same++;
                if (k < first) first = k;
            }
        if (first == i) (*games)++;
        if (same > most) most = same;
    }
    for (int i = 0; i < nseen; i++)
        free(seen[i].line);
    return most;
}

/* A resume of token on a fresh connection to s: true if it was given a seat
 * in room `code` (the player then leaves, which ends a race of two), false
 * if it was refused. */
static bool resume_and_leave(th_server *s, const char *token, const char *code) {
    client *c = client_connect(s);
    client_send(c, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    for (;;) {
        json_t *m = client_next(c, WAIT);
        const char *type = jstr(m, "type");
        if (!strcmp(type, "error")) {
            client_close(c);
            return false;
        }
        if (!strcmp(type, "start")) {
            assert_string_equal(jstr(m, "room"), code);
            client_send(c, "{\"type\":\"leave\"}");
            while (strcmp(jstr(client_next(c, WAIT), "type"), "end") != 0)
                continue; /* the race ended (a second time) */
            client_close(c);
            return true;
        }
    }
}

/* The registry entry of node's incarnation and its value; false if none. */
static bool owners_value(owners *o, const char *name, char *value, size_t n) {
    char key[128];
    if (!owners_key(o, name, key, sizeof key)) return false;
    kvEntry *e = NULL;
    if (kvStore_Get(&e, o->kv, key) != NATS_OK) return false;
    snprintf(value, n, "%s", kvEntry_ValueString(e));
    kvEntry_Destroy(e);
    return true;
}

/* A taker dies after rebuilding an incarnation's races but before its
 * clean-up (the test-only pause holds it there): the dead incarnation's entry
 * still says "claimed:<taker>". The next node takes both over as one: a race
 * that ended on the taker stays ended (one verdict), a race that went on
 * there goes on from the taker's boards (not the older ones of the first
 * incarnation's records), and ends once. */
static void test_dead_taker_group(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("takeover-group");
    const char *ja = harness_journal_of(dir, "a"), *jb = harness_journal_of(dir, "b"),
               *jc = harness_journal_of(dir, "c");
    th_server *a = node("a", ja);
    setenv("RACE2048_TEST_TAKEOVER_PAUSE_MS", "600000", 1);
    th_server *b = node("b", jb);
    unsetenv("RACE2048_TEST_TAKEOVER_PAUSE_MS");
    natsd_wait_metric(a, "race2048_cluster_nodes", 2, 10000);
    natsd_wait_metric(b, "race2048_cluster_nodes", 2, 10000);

    /* Two races on a: `ended` will end on the taker b, `going` go on there. */
    client *e[2], *g[2];
    json_t *elast[2], *glast[2];
    char ended[16], going[16], etok[2][64];
    snprintf(ended, sizeof ended, "%s", race_with_moves(a, e, elast));
    snprintf(going, sizeof going, "%s", race_with_moves(a, g, glast));
    for (int i = 0; i < 2; i++)
        snprintf(etok[i], sizeof etok[i], "%s", client_token(e[i]));
    wait_replicated(a);
    server_kill(a);
    natsd_wait_taken_over(b, 2, TAKEOVER_MS);

    /* On b: `ended` ends (its verdict is b's), `going` moves on. */
    client *q[2];
    for (int i = 0; i < 2; i++)
        resume_on(b, &q[i], etok[i]);
    client_send(q[0], "{\"type\":\"leave\"}");
    client_expect_skip(q[1], "end", "state player", WAIT);
    client_sync(q[1]);
    client *r[2];
    for (int i = 0; i < 2; i++)
        resume_on(b, &r[i], client_token(g[i]));
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++)
            glast[i] = client_move_any(r[i]);
    client_skipped(r[0]);
    client_skipped(r[1]);
    wait_replicated(b);

    /* b is held before its clean-up: a's entry still names it. */
    owners o;
    owners_open(&o);
    char value[160];
    assert_true(owners_value(&o, "a", value, sizeof value));
    assert_true(!strncmp(value, "claimed:b.", 10));
    server_kill(b);

    th_server *c = node("c", jc);
    natsd_wait_taken_over(c, 1, 30000);
    /* Done once both entries are gone. */
    int64_t deadline = harness_now_ms() + harness_ms(30000);
    char key[128];
    while (owners_key(&o, "a", key, sizeof key) || owners_key(&o, "b", key, sizeof key)) {
        assert_true(harness_remaining(deadline) > 0);
        poll(NULL, 0, 100);
    }
    owners_close(&o);
    long long rebuilt = natsd_metric(c, "race2048_cluster_games_taken_over_total");

    /* `ended` has no seat to resume on c (a second copy would, and would end
     * a second time once its player leaves). */
    bool reseated = resume_and_leave(c, etok[0], ended);
    /* `going` goes on from b's boards and ends once. */
    go_on(c, g, glast, going);
    assert_int_equal(server_stop(c), 0);

    const char *paths[] = {ja, jb, jc};
    int games = 0;
    int most = verdicts_per_game(paths, 3, &games);
    print_message("dead taker: %lld running games rebuilt by the third node, ended race "
                  "reseated: %s; verdicts: %d games, at most %d verdicts per game "
                  "(`%s`: %d, `%s`: %d)\n",
                  rebuilt, reseated ? "yes" : "no", games, most, ended,
                  harness_game_records(paths, 3, ended), going,
                  harness_game_records(paths, 3, going));
    assert_false(reseated);
    assert_int_equal(rebuilt, 1);
    assert_int_equal(games, 2);
    assert_int_equal(most, 1);
    for (int k = 0; k < 3; k++)
        assert_int_equal(run_replay(paths[k]), 0);
}

/* A node started again without a journal never hands out an id it handed out
 * before: each start (incarnation) has a range of its own. */
static void test_ids_across_starts(void **state) {
    (void)state;
    json_int_t ids[2];
    for (int k = 0; k < 2; k++) {
        th_server *a = natsd_node("a");
        ids[k] = jint(client_hello(client_connect(a), "x"), "id");
        assert_int_equal(server_stop(a), 0);
    }
    /* Each start takes blocks of the cluster's counter: a later start's ids
     * come after every id of an earlier one, and stay short. */
    assert_true(ids[1] > ids[0]);
    assert_true(ids[1] - ids[0] >= 65536);
    assert_true(ids[1] < 1000000000); /* `player-N` holds N whole */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill_owner, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_owner, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_nats_gone, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_dead_claimer, natsd_setup, natsd_teardown),
        cmocka_unit_test_setup_teardown(test_dead_taker_group, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_stop_while_cut_off, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_ids_across_starts, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
