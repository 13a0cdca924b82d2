/* test_cluster_bounded.c - what cluster mode keeps in NATS stays bounded: the records
 * stream holds what the journal holds after compactions, and rooms made and left do
 * not leave their delete markers in the directory bucket for ever. */
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
#include <sys/stat.h>

#include "harness.h"
#include "natsd.h"

/* The test's own look into JetStream. */
typedef struct look {
    natsConnection *nc;
    jsCtx *js;
} look;

static void look_open(look *l) {
    assert_int_equal(natsConnection_ConnectTo(&l->nc, natsd_url), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&l->js, l->nc, NULL), NATS_OK);
}

static void look_close(look *l) {
    jsCtx_Destroy(l->js);
    natsConnection_Destroy(l->nc);
    nats_CloseAndWait(2000);
}

/* A stream's bytes and messages. */
static void stream_state(look *l, const char *name, uint64_t *bytes, uint64_t *msgs) {
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    assert_int_equal(js_GetStreamInfo(&si, l->js, name, NULL, &jerr), NATS_OK);
    *bytes = si->State.Bytes;
    *msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* Races that end (one leaves) until the journal has been compacted many
 * times: the records stream then holds what the journal holds (within 2x:
 * each message's subject and headers, and the records of the last commit
 * in flight), not every record ever written (before: 4 MB against 0.3 MB). */
static void test_stream_follows_journal(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("cluster-bounded");
    char journal[512];
    snprintf(journal, sizeof journal, "%s/a.journal", dir);
    th_server *a = SERVER("--cluster", natsd_url, "--node", "a", "--journal", journal,
                          "--journal-max", "65536");
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    int games = 0;
    client *p[2] = {client_named(a, "p0"), client_named(a, "p1")};
    while (natsd_metric(a, "race2048_journal_compactions_total") < 6) {
        assert_true(games < 3000);
        client_send(p[0], "{\"type\":\"create\",\"players\":2}");
        const char *code = jstr(client_expect(p[0], "room", WAIT), "room");
        client_send(p[1], "{\"type\":\"join\",\"room\":\"%s\"}", code);
        for (int i = 0; i < 2; i++)
            client_expect_skip(p[i], "start", "room player", WAIT);
        for (int k = 0; k < 4; k++)
            client_move_any(p[k % 2]);
        client_send(p[0], "{\"type\":\"leave\"}");
        client_expect_skip(p[0], "left", "state player end", WAIT);
        client_expect_skip(p[1], "end", "state player", WAIT);
        client_sync(p[1]);
        games++;
    }
    natsd_wait_metric(a, "race2048_journal_waiting_bytes", 0, 10000);
    look l;
    look_open(&l);
    uint64_t bytes, msgs;
    stream_state(&l, "RACE2048_RECORDS", &bytes, &msgs);
    uint64_t held = file_size(journal);
    print_message("%d races, %lld compactions: the records stream holds %llu bytes in "
                  "%llu messages, the journal %llu bytes\n",
                  games, natsd_metric(a, "race2048_journal_compactions_total"),
                  (unsigned long long)bytes, (unsigned long long)msgs,
                  (unsigned long long)held);
    assert_true(bytes <= 2 * held);
    look_close(&l);
    assert_int_equal(server_stop(a), 0);
}

/* 3000 rooms made and left: their directory entries go, and so do the
 * delete markers they leave (before: ~2980 markers kept for ever). */
static void test_directory_bounded(void **state) {
    (void)state;
    th_server *a = SERVER("--cluster", natsd_url, "--node", "a");
    natsd_wait_metric(a, "race2048_cluster_nodes", 1, 10000);
    client *c = client_named(a, "maker");
    enum { ROOMS = 3000 };
    for (int k = 0; k < ROOMS; k++) {
        client_send(c, "{\"type\":\"create\",\"players\":2}");
        client_expect(c, "room", WAIT);
        client_send(c, "{\"type\":\"leave\"}");
        client_expect_skip(c, "left", "room", WAIT);
    }
    client_sync(c);
    look l;
    look_open(&l);
    uint64_t bytes, msgs, most = 0;
    int64_t deadline = harness_now_ms() + harness_ms(60000);
    for (;;) {
        stream_state(&l, "KV_race2048-rooms", &bytes, &msgs);
        if (msgs > most) most = msgs;
        print_message("the directory bucket: %llu messages\n", (unsigned long long)msgs);
        if (msgs <= ROOMS / 30) break;
        if (harness_remaining(deadline) <= 0)
            fail_msg("the directory still holds %llu entries and markers",
                     (unsigned long long)msgs);
        poll(NULL, 0, 500);
    }
    print_message("%d rooms made and left: the directory bucket holds %llu messages "
                  "(%llu bytes; %llu at most meanwhile)\n",
                  ROOMS, (unsigned long long)msgs, (unsigned long long)bytes,
                  (unsigned long long)most);
    look_close(&l);
    assert_int_equal(server_stop(a), 0);
}

/* argv[1], if given, runs only the tests it matches (each a ctest of its own). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_follows_journal, natsd_setup,
                                        natsd_teardown),
        cmocka_unit_test_setup_teardown(test_directory_bounded, natsd_setup,
                                        natsd_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
