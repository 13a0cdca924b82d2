/* test_journal_lock.c - one server per journal: a second race2048d on a journal another
 * running server holds exits 1 at start naming the file, also after compactions have
 * renamed new files over it; a killed server's journal is free again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "harness.h"
#include "natsd.h"

/* A second server gives up at once; anything still running after this
 * started and listened. */
#define START_EXIT_S "30"

/* Runs race2048d on journal (and --journal-max 65536) as a host would,
 * expecting it to exit at start on its own; returns its exit code (124:
 * still running after START_EXIT_S, killed) and its stdout and stderr,
 * interleaved, in *out. */
static int run_on_journal(const char *journal, char **out) {
    const char *bin = getenv("RACE2048D");
    if (!bin) fail_msg("RACE2048D is not set");
    const char *argv[] = {"/bin/sh",
                          "-c",
                          "exec timeout -k 5 \"$0\" \"$@\" 2>&1",
                          START_EXIT_S,
                          bin,
                          "--host",
                          "127.0.0.1",
                          "--port",
                          "0",
                          "--http-port",
                          "off",
                          "--journal",
                          journal,
                          "--journal-max",
                          "65536",
                          NULL};
    return harness_run(argv, out);
}

/* A solo game in which a board changes (two tiles on a 3x3 board: left or
 * right moves one), so that it is recorded and listed. */
#define PLAYED_SOLO                                                                      \
    "{\"type\":\"solo\",\"size\":3}\n{\"type\":\"move\",\"dir\":\"left\"}\n"             \
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"leave\"}"

static void play_solo(client *c) {
    client_send(c, PLAYED_SOLO);
    client_expect(c, "start", WAIT);
    client_expect(c, "state", WAIT);
    client_expect(c, "state", WAIT);
    client_expect(c, "end", WAIT);
    client_expect(c, "left", WAIT);
}

static int run_replay(const char *journal) {
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[] = {bin, journal, NULL};
    return harness_run(argv, NULL);
}

/* Two servers in one folder on one journal (as two hosts' recipes on the
 * default file would be): the second exits 1 at start, names the file and
 * says what to do, whatever spelling of the path it was given; the first
 * runs on and its journal checks out. */
static void test_second_server_exits(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("jlock");
    char journal[256], other_spelling[256];
    snprintf(journal, sizeof journal, "%s/race2048.journal", dir);
    snprintf(other_spelling, sizeof other_spelling, "%s/./race2048.journal", dir);
    th_server *s = SERVER("--journal", journal);
    client *c = client_named(s, "first");
    play_solo(c);
    char *out = NULL;
    int code = run_on_journal(other_spelling, &out);
    print_message("second server: exit %d: %s", code, out);
    assert_int_equal(code, 1);
    assert_non_null(strstr(out, other_spelling));
    assert_non_null(strstr(out, "in use"));
    assert_non_null(strstr(out, "--journal"));
    assert_null(strstr(out, "listening on"));
    free(out);
    play_solo(c); /* the first one goes on, its file whole */
    assert_int_equal(server_stop(s), 0);
    assert_int_equal(run_replay(journal), 0);
}

/* Compactions rename a new file over the journal: the lock is not on the
 * file the name pointed to at start, so a second server is still refused. */
static void test_refused_after_compaction(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("jlock-compact");
    char journal[256];
    snprintf(journal, sizeof journal, "%s/j", dir);
    th_server *s =
        SERVER("--journal", journal, "--journal-max", "65536", "--journal-sync-ms", "5");
    struct stat first;
    assert_int_equal(stat(journal, &first), 0);
    client *c = client_named(s, "many");
    int64_t deadline = harness_now_ms() + harness_ms(120000);
    struct stat now = first;
    while (now.st_ino == first.st_ino) {
        for (int g = 0; g < 50; g++)
            play_solo(c);
        if (harness_remaining(deadline) <= 0) fail_msg("the journal was never compacted");
        assert_int_equal(stat(journal, &now), 0);
    }
    assert_true(natsd_metric(s, "race2048_journal_compactions_total") >= 1);
    char *out = NULL;
    assert_int_equal(run_on_journal(journal, &out), 1);
    assert_non_null(strstr(out, journal));
    free(out);
    assert_int_equal(server_stop(s), 0);
    assert_int_equal(run_replay(journal), 0);
}

/* The kernel lets go of a dead server's lock: after kill -9 the journal is
 * free at once for the server started in its place. */
static void test_free_after_kill(void **state) {
    (void)state;
    const char *dir = harness_temp_dir("jlock-kill");
    char journal[256];
    snprintf(journal, sizeof journal, "%s/j", dir);
    th_server *s = SERVER("--journal", journal);
    play_solo(client_named(s, "before"));
    server_kill(s);
    s = SERVER("--journal", journal);
    play_solo(client_named(s, "after"));
    assert_int_equal(server_stop(s), 0);
    assert_int_equal(run_replay(journal), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_second_server_exits, harness_teardown),
        cmocka_unit_test_teardown(test_refused_after_compaction, harness_teardown),
        cmocka_unit_test_teardown(test_free_after_kill, harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
