/* test_journal.c - the journal: kill -9 and resume, torn tails, history and replay,
 * tampering, write failures, a burst of finishing games. */
#define _GNU_SOURCE /* prlimit */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "harness.h"

/* ------------------------------------------------------------- helpers --- */

static const char *dir;

static int setup_dir(void **state) {
    (void)state;
    dir = harness_temp_dir("journal");
    return 0;
}

static const char *path_in(const char *name) {
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        fail_msg("cannot write %s", path);
}

static size_t count_of(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Waits (polling the file, with a deadline) until it holds `count` records
 * containing needle. */
static void wait_records(const char *path, const char *needle, size_t count, int ms) {
    int64_t deadline = harness_now_ms() + harness_ms(ms);
    size_t seen = 0;
    for (;;) {
        char *data = harness_read_file(path, NULL);
        seen = count_of(data, needle);
        free(data);
        if (seen >= count) return;
        if (harness_remaining(deadline) == 0) break;
        poll(NULL, 0, 10);
    }
    fail_msg("%s holds %zu records with %s, expected %zu", path, seen, needle, count);
}

/* Runs race2048-replay with args; returns its exit code, its stdout in *out. */
static int run_replay(char **out, const char *file, const char *a1, const char *a2) {
    const char *bin = getenv("RACE2048_REPLAY");
    if (!bin) fail_msg("RACE2048_REPLAY is not set");
    const char *argv[] = {bin, file, a1, a2, NULL};
    return harness_run(argv, out);
}

static th_server *journal_server(const char *journal, const char *grace) {
    return SERVER("--journal", journal, "--grace", grace, "--seed", "7");
}

/* A player's resume on a new connection: the welcome, then the start snapshot. */
static json_t *resume(th_server *s, client **c, const char *token) {
    *c = client_connect(s);
    client_send(*c, "{\"type\":\"resume\",\"token\":\"%s\"}", token);
    client_expect(*c, "welcome", WAIT);
    return client_expect_skip(*c, "start", "player", WAIT);
}

/* --------------------------------------------------------------- kill -9 --- */

#define KILL_MOVES 30

/* Two racers move, the server is killed, restarted on the same journal, both
 * resume with their old tokens: their boards are where the journal left them
 * (nothing lost beyond the sync window), the same spawn stream goes on when
 * they re-send what was lost, and the race finishes and checks out. */
static void test_kill9_resume(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *c[2];
    json_t *starts[2];
    race_start(s, 2, "\"size\":4", c, starts);
    char token[2][64];
    static const char *const dirs[] = {"left", "up", "right", "down"};
    /* boards[p][k]: player p's board after k moves that changed it. */
    json_t *boards[2][KILL_MOVES * 4 + 1] = {{0}};
    const char *sent[2][KILL_MOVES * 4];
    int made[2] = {0, 0};
    for (int p = 0; p < 2; p++)
        snprintf(token[p], sizeof token[p], "%s", client_token(c[p]));
    for (int p = 0; p < 2; p++) {
        for (int k = 0; k < KILL_MOVES * 4 && made[p] < KILL_MOVES; k++) {
            json_t *st = client_move(c[p], dirs[(k + p) % 4]);
            if (!jbool(st, "moved")) continue;
            sent[p][made[p]] = dirs[(k + p) % 4];
            boards[p][++made[p]] = jarr(st, "board");
        }
    }
    /* Some moves of each player are durable (the rest may be lost with the
     * last window): p1 moved last, so a moves record holding p1's moves. */
    char p1_moves[32];
    snprintf(p1_moves, sizeof p1_moves, "\"%lld\":\"", (long long)jint(starts[1], "you"));
    wait_records(journal, p1_moves, 1, 5000);
    server_kill(s);

    int64_t t0 = harness_now_ms();
    s = journal_server(journal, "30");
    int64_t restart_ms = harness_now_ms() - t0;
    print_message("restart with recovery: %lld ms\n", (long long)restart_ms);
    for (int p = 0; p < 2; p++) {
        client *r;
        json_t *st = resume(s, &r, token[p]);
        json_t *me = NULL;
        for (size_t i = 0; i < json_array_size(jarr(st, "players")); i++)
            if (!strcmp(jstr(json_array_get(jarr(st, "players"), i), "name"),
                        p ? "p1" : "p0"))
                me = json_array_get(jarr(st, "players"), i);
        assert_non_null(me);
        int have = (int)jint(me, "moves");
        assert_true(have <= made[p]);
        assert_true(have >= 1);
        assert_true(jequal(jarr(me, "board"), boards[p][have]));
        for (int k = have; k < made[p]; k++) {
            json_t *again = client_move(r, sent[p][k]);
            assert_true(jbool(again, "moved"));
            assert_true(jequal(jarr(again, "board"), boards[p][k + 1]));
        }
        c[p] = r;
    }
    /* Finish: p1 leaves, p0 wins by forfeit. */
    client_send(c[1], "{\"type\":\"leave\"}");
    json_t *end = client_expect_skip(c[0], "end", "player state", WAIT);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    server_stop(s);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    assert_non_null(strstr(out, "1 game checked, 0 failed"));
    free(out);
}

/* ---------------------------------------------------------- --seed N --- */

/* A server-seeded solo game's revealed seed (the game is left at once). */
static char *solo_seed(th_server *s) {
    client *a = client_named(s, "solo");
    client_send(a, "{\"type\":\"solo\",\"size\":3}");
    client_expect(a, "start", WAIT);
    client_send(a, "{\"type\":\"leave\"}");
    json_t *end = client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
    char *seed = strdup(jstr(end, "seed"));
    client_close(a);
    return seed;
}

/* --seed N derives the K-th seed from K: a server restarted on its journal
 * must go on past the recorded games, not deal their seeds again. */
static void test_seed_not_dealt_twice(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    char *first = solo_seed(s);
    assert_int_equal(strlen(first), 64);
    server_stop(s);
    s = journal_server(journal, "30");
    char *second = solo_seed(s);
    assert_string_not_equal(first, second);
    server_stop(s);
    free(first);
    free(second);
}

/* ------------------------------------------------------------ torn tail --- */

static void test_torn_tail(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *a = client_named(s, "solo");
    client_send(a, "{\"type\":\"solo\",\"size\":3}");
    client_expect(a, "start", WAIT);
    client_move_any(a);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
    server_stop(s);
    size_t whole;
    char *data = harness_read_file(journal, &whole);
    free(data);
    /* A crash in the middle of a write: half a record, no newline. */
    FILE *f = fopen(journal, "ab");
    fputs("{\"j\":\"moves\",\"game\":1,\"m\":{\"1\":\"ll", f);
    fclose(f);
    s = journal_server(journal, "30");
    client *b = client_named(s, "reader");
    client_send(b, "{\"type\":\"history\"}");
    json_t *h = client_expect(b, "history", WAIT);
    assert_int_equal(json_array_size(jarr(h, "games")), 1);
    server_stop(s);
    size_t now;
    data = harness_read_file(journal, &now);
    assert_int_equal(now, whole); /* cut back to the last whole record */
    free(data);
    assert_int_equal(run_replay(NULL, journal, NULL, NULL), 0);
    /* One game by its id; --show plays it (no terminal: no pauses). */
    char *out;
    assert_int_equal(run_replay(&out, journal, "--game", "1"), 0);
    assert_non_null(strstr(out, "1 game checked, 0 failed"));
    free(out);
    assert_int_equal(run_replay(NULL, journal, "--game", "2"), 1);
    assert_int_equal(run_replay(&out, journal, "--show", "1"), 0);
    assert_non_null(strstr(out, "Final result as recorded: reason all_over"));
    free(out);
}

/* Lines that are not the server's records, in the middle of a journal, are
 * skipped: the server starts, restores what is whole, and stays up. */
static void test_garbage_lines_skipped(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *c[2];
    race_start(s, 2, "\"size\":4", c, NULL);
    json_t *st = client_move_any(c[0]);
    wait_records(journal, "{\"j\":\"moves\"", 1, 5000);
    server_kill(s);
    size_t len;
    char *data = harness_read_file(journal, &len);
    static const char junk[] =
        "not json\n"
        "{}\n"
        "\0\0\0\n"
        "{\"j\":\"moves\",\"game\":99,\"m\":{\"1\":\"l\"}}\n"
        "{\"j\":\"moves\",\"game\":1,\"m\":{\"1\":\"lx\"}}\n"
        "{\"j\":\"start\",\"game\":7,\"room\":\"A\\\"B\",\"size\":4,\"target\":3,"
        "\"seats\":[{\"id\":9}]}\n"
        "{\"j\":\"start\",\"game\":8,\"size\":99,\"seats\":[]}\n"
        "{\"j\":\"game\",\"game\":\"x\"}\n"
        "{\"j\":\"seat\",\"game\":1,\"id\":42,\"event\":\"left\"}\n";
    const char *nl = memchr(data, '\n', len); /* after the start record */
    size_t head = (size_t)(nl - data) + 1;
    char *mixed = malloc(len + sizeof junk);
    memcpy(mixed, data, head);
    memcpy(mixed + head, junk, sizeof junk - 1);
    memcpy(mixed + head + sizeof junk - 1, data + head, len - head);
    write_file(journal, mixed, len + sizeof junk - 1);
    free(mixed);
    free(data);
    s = journal_server(journal, "30");
    client *r;
    json_t *snap = resume(s, &r, client_token(c[0]));
    json_t *me = jplayer(jarr(snap, "players"), 1);
    assert_true(jequal(jarr(me, "board"), jarr(st, "board")));
    client_sync(r);
    server_stop(s);
}

/* A time limit counts from the original start, also while the server is
 * down: a restored 3 s race ends by time about 3 s after it started. */
static void test_time_limit_spans_restart(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *c[2];
    int64_t started = harness_now_ms();
    race_start(s, 2, "\"size\":4,\"time_limit\":3", c, NULL);
    client_move_any(c[0]);
    /* Let 1.5 s of the 3 pass (the time itself is under test, not a wait for
     * an event): round trips until then. */
    while (harness_now_ms() - started < 1500)
        client_sync(c[0]);
    wait_records(journal, "{\"j\":\"moves\"", 1, 5000);
    server_kill(s);
    s = journal_server(journal, "30");
    int64_t back = harness_now_ms() - started; /* the restarted server listens */
    client *r;
    resume(s, &r, client_token(c[0]));
    json_t *end = client_expect_skip(r, "end", "player state", harness_ms(WAIT));
    assert_string_equal(jstr(end, "reason"), "time");
    int64_t took = harness_now_ms() - started;
    /* At 3 s from the start (or at once, if the restart took longer), not
     * 3 s from the restart (which came after 1.5 s, so at back + 3000 or
     * later): a slow restart on a busy machine widens the margin. */
    assert_true(took >= 2900);
    if (took > back + 2500)
        fail_msg("the race ended %lld ms after its start, the restart done at %lld ms",
                 (long long)took, (long long)back);
    server_stop(s);
    assert_int_equal(run_replay(NULL, journal, NULL, NULL), 0);
}

/* A journal that cannot be opened is an error with a message and exit 1. */
static void test_unopenable(void **state) {
    const char *bin = getenv("RACE2048D");
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(bin, bin, "--port", "0", "--host", "127.0.0.1", "--http-port", "off",
              "--journal", "/nonexistent-dir/race2048.journal", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
}

/* -------------------------------------------------------- history, replay --- */

static void test_history_replay(void **state) {
    th_server *s = journal_server(path_in("j"), "30");
    client *a = client_named(s, "ann");
    client_send(a, "{\"type\":\"history\"}");
    assert_int_equal(json_array_size(jarr(client_expect(a, "history", WAIT), "games")),
                     0);
    for (int g = 0; g < 3; g++) {
        client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":%d}", g);
        client_expect(a, "start", WAIT);
        for (int k = 0; k <= g; k++)
            client_move_any(a);
        client_send(a, "{\"type\":\"leave\"}");
        client_expect(a, "end", WAIT);
        client_expect(a, "left", WAIT);
    }
    client_send(a, "{\"type\":\"history\",\"limit\":2}");
    json_t *h = client_expect(a, "history", WAIT);
    json_t *games = jarr(h, "games");
    assert_int_equal(json_array_size(games), 2);
    json_t *last = json_array_get(games, 0);
    assert_int_equal(jint(last, "seed"), 2); /* most recent first */
    assert_false(jhas(last, "moves"));
    assert_true(jhas(last, "commit") && jhas(last, "started") && jhas(last, "ended"));
    client_send(a, "{\"type\":\"replay\",\"game\":%lld}", (long long)jint(last, "game"));
    json_t *r = client_expect(a, "replay", WAIT);
    assert_int_equal(jint(r, "game"), jint(last, "game"));
    json_t *moves = jobj(r, "moves");
    assert_int_equal(json_object_size(moves), 1);
    const char *mv = json_string_value(json_object_iter_value(json_object_iter(moves)));
    assert_int_equal(strlen(mv), 3);
    /* The reply is the journal's record ("j":"game" kept, protocol/README.md
     * says why): saved as a line of a file, race2048-replay checks it. */
    assert_string_equal(jstr(r, "j"), "game");
    char *line = json_dumps(r, JSON_COMPACT);
    assert_non_null(line);
    char file[8192];
    assert_true(strlen(line) + 2 <= sizeof file);
    size_t flen = (size_t)snprintf(file, sizeof file, "%s\n", line);
    free(line);
    const char *saved = path_in("saved-replay");
    write_file(saved, file, flen);
    char *out;
    int rc = run_replay(&out, saved, NULL, NULL);
    if (rc != 0 || !strstr(out, "1 game checked, 0 failed"))
        fail_msg("race2048-replay on a saved replay reply exits %d: %s", rc, out);
    free(out);
    client_send(a, "{\"type\":\"replay\",\"game\":424242}");
    client_expect_error(a, "game_not_found", WAIT);
    client_send(a, "{\"type\":\"replay\",\"game\":\"nope\"}");
    client_expect_error(a, "game_not_found", WAIT);
    client_send(a, "{\"type\":\"replay\"}");
    client_expect_error(a, "bad_message", WAIT);
    client_send(a, "{\"type\":\"history\",\"limit\":101}");
    client_expect_error(a, "bad_message", WAIT);
}

/* ------------------------------------------------------------ tampering --- */

/* Plays a finished race into journal and returns the journal's text. */
static char *finished_race(const char *journal) {
    th_server *s = journal_server(journal, "30");
    client *c[2];
    race_start(s, 2, "\"size\":4", c, NULL);
    for (int k = 0; k < 6; k++) {
        client_move_any(c[0]);
        client_move_any(c[1]);
    }
    client_send(c[1], "{\"type\":\"leave\"}");
    client_expect_skip(c[0], "end", "player state", WAIT);
    server_stop(s);
    return harness_read_file(journal, NULL);
}

/* Replaces the first occurrence of from (after the finished record's start)
 * by to, writes the copy, and checks race2048-replay names the game. */
static void expect_tamper_found(const char *orig, const char *from, const char *to) {
    const char *rec = strstr(orig, "{\"j\":\"game\"");
    assert_non_null(rec);
    const char *at = strstr(rec, from);
    if (!at) fail_msg("no %s in the record", from);
    size_t n = strlen(orig), fl = strlen(from), tl = strlen(to);
    char *copy = malloc(n - fl + tl + 1);
    memcpy(copy, orig, (size_t)(at - orig));
    memcpy(copy + (at - orig), to, tl);
    memcpy(copy + (at - orig) + tl, at + fl, n - (size_t)(at - orig) - fl + 1);
    const char *path =
        getenv("KEEP_TAMPER") ? getenv("KEEP_TAMPER") : path_in("tampered");
    write_file(path, copy, strlen(copy));
    free(copy);
    char *out;
    int rc = run_replay(&out, path, NULL, NULL);
    if (rc != 1 || !strstr(out, "game 1 "))
        fail_msg("replacing %s by %s: race2048-replay exits %d and says %s", from, to, rc,
                 out);
    free(out);
}

static void test_tampering(void **state) {
    const char *journal = path_in("j");
    char *orig = finished_race(journal);
    assert_int_equal(run_replay(NULL, journal, NULL, NULL), 0);
    const char *rec = strstr(orig, "{\"j\":\"game\"");
    /* One move changed: player 1's last one, to a move across. */
    const char *m = strstr(rec, "\"moves\":{\"");
    assert_non_null(m);
    const char *last = strchr(strchr(m + 10, ':') + 2, '"') - 1;
    char from[160], to[160];
    snprintf(from, sizeof from, "%.*s", (int)(last - m + 1), m);
    snprintf(to, sizeof to, "%.*s%c", (int)(last - m), m,
             *last == 'l' || *last == 'r' ? 'u' : 'l');
    expect_tamper_found(orig, from, to);
    /* A score. */
    const char *sc = strstr(rec, "\"score\":");
    snprintf(from, sizeof from, "%.*s", (int)(strchr(sc, ',') - sc), sc);
    snprintf(to, sizeof to, "\"score\":%lld", atoll(sc + 8) + 4);
    expect_tamper_found(orig, from, to);
    /* The winner. */
    const char *w = strstr(rec, "\"winner\":");
    snprintf(from, sizeof from, "%.*s", (int)(strchr(w, ',') - w), w);
    snprintf(to, sizeof to, "\"winner\":%lld", atoll(w + 9) == 1 ? 2LL : 1LL);
    expect_tamper_found(orig, from, to);
    /* The seed. */
    const char *sd = strstr(rec, "\"seed\":\""); /* a race has a server seed */
    assert_non_null(sd);
    snprintf(from, sizeof from, "%.*s", (int)(strchr(sd, ',') - sd), sd);
    snprintf(to, sizeof to, "%s", from);
    to[8] = to[8] == '0' ? '1' : '0'; /* its first hex digit */
    expect_tamper_found(orig, from, to);
    free(orig);
}

/* -------------------------------------------------------- write failure --- */

/* A counter from the server's /metrics, e.g. "race2048_journal_errors_total". */
static long long metric(th_server *s, const char *name) {
    client *http = client_connect(s);
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    client_send_raw(http, get, sizeof get - 1, false);
    static char page[65536];
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    size_t n = 0;
    const char *at = NULL;
    while (n < sizeof page - 1 && !(at && strchr(at + 1, '\n'))) {
        size_t got = client_read_raw(http, page + n, sizeof page - 1 - n, WAIT);
        if (!got) break;
        n += got;
        page[n] = '\0';
        at = strstr(page, key);
    }
    if (!at) fail_msg("no %s in /metrics", name);
    client_close(http);
    return atoll(at + strlen(key));
}

static long long journal_errors(th_server *s) {
    return metric(s, "race2048_journal_errors_total");
}

/* The file size limit makes writes fail with EFBIG: games go on, but an
 * `end` (which reveals the seed) waits for its record to be durable, and the
 * client's later replies wait behind it. Once the disk takes writes again
 * (the limit is lifted from outside) every end goes out, in order, and the
 * journal holds every game, whole records only, and checks out. */
static void test_write_failure(void **state) {
    const char *journal = path_in("j");
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 3000; /* a start record and a few games */
    setrlimit(RLIMIT_FSIZE, &lim);
    /* Commits every millisecond, so that writes fail while games go on. */
    th_server *s = SERVER("--journal", journal, "--journal-sync-ms", "1");
    setrlimit(RLIMIT_FSIZE, &old); /* only the server keeps the limit */
    client *a = client_named(s, "ann");
    /* Left then right: one of them changes any 3x3 board with two tiles. */
    for (int g = 0; g < 12; g++)
        client_send(a,
                    "{\"type\":\"solo\",\"size\":3,\"seed\":%d}\n"
                    "{\"type\":\"move\",\"dir\":\"left\"}\n"
                    "{\"type\":\"move\",\"dir\":\"right\"}\n"
                    "{\"type\":\"leave\"}",
                    g);
    /* The failures are counted on /metrics (another connection, not held). */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (journal_errors(s) == 0) {
        if (harness_remaining(deadline) == 0) fail_msg("no journal error was counted");
        poll(NULL, 0, 50);
    }
    /* Not every end can have gone out: the file holds fewer than 12 games. */
    int ends = 0;
    json_t *m;
    client_send(a, "{\"type\":\"ping\",\"t\":99}");
    while (ends < 12 && (m = client_next_or_null(a, 500)) != NULL &&
           strcmp(jstr(m, "type"), "pong") != 0)
        ends += !strcmp(jstr(m, "type"), "end");
    assert_true(ends < 12);
    /* The disk is back: every held end, and then the pong, arrive. */
    lim = old;
    if (prlimit(s->pid, RLIMIT_FSIZE, &lim, NULL) < 0)
        fail_msg("prlimit: %s", strerror(errno));
    while (ends < 12) {
        m = client_next(a, WAIT);
        if (!m) fail_msg("connection closed after %d ends", ends);
        ends += !strcmp(jstr(m, "type"), "end");
    }
    client_expect_skip(a, "pong", "state left start", WAIT);
    client_send(a, "{\"type\":\"history\",\"limit\":100}");
    assert_int_equal(json_array_size(jarr(client_expect(a, "history", WAIT), "games")),
                     12);
    server_stop(s);
    size_t len;
    char *data = harness_read_file(journal, &len);
    assert_true(len > 3000);
    assert_true(data[len - 1] == '\n'); /* whole records only */
    assert_int_equal(count_of(data, "{\"j\":\"game\""), 12);
    free(data);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    assert_null(strstr(out, " 0 games checked"));
    free(out);
}

/* --------------------------------------------------------------- bursts --- */

#define BURST 1000

/* A solo game in which a board changes, since history lists no game nobody
 * played: with two tiles on a 3x3 board, left or right moves one. */
#define PLAYED_SOLO                                                                      \
    "{\"type\":\"solo\",\"size\":3}\n{\"type\":\"move\",\"dir\":\"left\"}\n"             \
    "{\"type\":\"move\",\"dir\":\"right\"}\n{\"type\":\"leave\"}"

static void expect_played_solo(client *a) {
    client_expect(a, "start", WAIT);
    client_expect(a, "state", WAIT);
    client_expect(a, "state", WAIT);
    client_expect(a, "end", WAIT);
    client_expect(a, "left", WAIT);
}

/* A race restored after a crash that nobody comes back to: every seat's grace
 * ends at once, and the race ends with everyone gone (no winner), not as a
 * forfeit won by whichever absent seat happened to be checked last. */
static void test_nobody_comes_back(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *c[2];
    const char *code = race_start(s, 2, "\"size\":4", c, NULL);
    char room[16];
    snprintf(room, sizeof room, "%s", code);
    client_move_any(c[0]);
    client_move_any(c[1]);
    wait_records(journal, "{\"j\":\"moves\"", 1, 5000);
    server_kill(s);

    s = journal_server(journal, "1");
    client *w = client_named(s, "watcher");
    client_send(w, "{\"type\":\"watch\",\"room\":\"%s\"}", room);
    client_expect(w, "start", WAIT);
    json_t *end = client_expect_skip(w, "end", "player", WAIT);
    assert_string_equal(jstr(end, "reason"), "all_over");
    assert_true(jnull(end, "winner"));
}

/* 1,000 solo games finish; once all are in the journal a second burst runs
 * and the server is killed in its middle: the first burst is all there after
 * the restart, and whatever the file holds checks out. */
static void test_kill9_burst(void **state) {
    const char *journal = path_in("j");
    th_server *s = journal_server(journal, "30");
    client *a = client_named(s, "burst");
    for (int g = 0; g < BURST; g++)
        client_send(a, PLAYED_SOLO);
    for (int g = 0; g < BURST; g++) {
        expect_played_solo(a);
    }
    wait_records(journal, "{\"j\":\"game\"", BURST, 5000);
    for (int g = 0; g < BURST; g++)
        client_send(a, PLAYED_SOLO);
    client_expect(a, "start", WAIT);
    server_kill(s);
    s = journal_server(journal, "30");
    client *b = client_named(s, "reader");
    client_send(b, "{\"type\":\"history\",\"limit\":100}");
    assert_int_equal(json_array_size(jarr(client_expect(b, "history", WAIT), "games")),
                     100);
    server_stop(s);
    char *data = harness_read_file(journal, NULL);
    assert_true(count_of(data, "{\"j\":\"game\"") >= BURST);
    free(data);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    free(out);
}

/* A server that compacts its journal at the smallest --journal-max. */
static const char *const *compacting_flags(const char *journal) {
    static const char *flags[] = {
        "--journal", NULL, "--journal-max", "65536", "--journal-sync-ms", "5", "--grace",
        "30",        NULL};
    flags[1] = journal;
    return flags;
}

/* With a small --journal-max the journal is compacted again and again while
 * games finish and a race runs; kill -9 lands in or between compactions.
 * After the restart the race is back, and journal and archive check out. */
static void test_kill9_compaction(void **state) {
    const char *journal = path_in("j");
    const char *const *flags = compacting_flags(journal);
    th_server *s = server_start(flags);
    client *c[2];
    race_start(s, 2, "\"size\":4", c, NULL);
    json_t *last = NULL;
    for (int k = 0; k < 8; k++)
        last = client_move_any(c[0]);
    json_t *board = jarr(last, "board");
    json_int_t moves = jint(last, "moves");
    wait_records(journal, "{\"j\":\"moves\"", 1, 5000);
    client *a = client_named(s, "burst");
    for (int g = 0; g < BURST; g++)
        client_send(a, PLAYED_SOLO);
    for (int g = 0; g < BURST / 2; g++) {
        expect_played_solo(a);
    }
    /* At least one compaction is done (its archive exists); later ones may
     * be under way when the kill comes. */
    struct stat sb;
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (stat(path_in("j.results"), &sb) < 0) {
        if (harness_remaining(deadline) == 0) fail_msg("the journal was never compacted");
        poll(NULL, 0, 10);
    }
    server_kill(s);
    s = server_start(flags);
    client *r;
    json_t *st = resume(s, &r, client_token(c[0]));
    json_t *me = jplayer(jarr(st, "players"), 1);
    assert_int_equal(jint(me, "moves"), moves); /* synced long before the kill */
    assert_true(jequal(jarr(me, "board"), board));
    /* History reaches back into the archive (the journal holds ~60 games). */
    client *h = client_named(s, "reader");
    client_send(h, "{\"type\":\"history\",\"limit\":100}");
    json_t *games = jarr(client_expect(h, "history", WAIT), "games");
    assert_int_equal(json_array_size(games), 100);
    for (size_t i = 1; i < json_array_size(games); i++)
        assert_true(jint(json_array_get(games, i - 1), "game") >
                    jint(json_array_get(games, i), "game"));
    server_stop(s);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    assert_null(strstr(out, "not records"));
    free(out);
    assert_int_equal(run_replay(&out, path_in("j.results"), NULL, NULL), 0);
    free(out);
}

/* ---------------------------------------------------------- move timeout --- */

/* A connected racer who walks away (--move-timeout) has left, in the journal
 * too: without its `seat` record a restart would give the seat back. */
static void test_walk_away_recorded(void **state) {
    (void)state;
    const char *journal = path_in("j");
    th_server *s = SERVER("--journal", journal, "--move-timeout", "1", "--seed", "7");
    client *c[2];
    race_start(s, 2, "\"size\":5", c, NULL);
    json_int_t walker = jint(client_hello(c[0], "walker"), "id");
    client_move_any(c[1]);
    json_t *end = client_expect_skip(c[1], "end", "state player", WAIT + 2000);
    assert_string_equal(jstr(end, "reason"), "forfeit");
    char left[96];
    snprintf(left, sizeof left, "\"id\":%lld,\"event\":\"left\"}", (long long)walker);
    wait_records(journal, left, 1, WAIT);
    server_stop(s);
}

/* A kill during a compaction, after the finished games were appended to the
 * archive but before the new journal was renamed in place, leaves them in
 * both files: `history` after the restart lists each game once. */
static void test_history_after_torn_compaction(void **state) {
    (void)state;
    const char *journal = path_in("j");
    char *text = finished_race(journal);
    const char *rec = strstr(text, "{\"j\":\"game\"");
    assert_non_null(rec);
    const char *nl = strchr(rec, '\n');
    assert_non_null(nl);
    write_file(path_in("j.results"), rec, (size_t)(nl - rec) + 1);
    free(text);
    th_server *s = journal_server(journal, "30");
    client *h = client_named(s, "reader");
    client_send(h, "{\"type\":\"history\"}");
    assert_int_equal(json_array_size(jarr(client_expect(h, "history", WAIT), "games")),
                     1);
    server_stop(s);
}

/* A compaction that fails (here its temporary file cannot be made) leaves the
 * journal going on as it was: the records it had taken, finished games among
 * them, are still written there. */
static void test_failed_compaction_keeps_records(void **state) {
    (void)state;
    const char *journal = path_in("j");
    assert_int_equal(mkdir(path_in("j.compacting"), 0700), 0);
    th_server *s =
        SERVER("--journal", journal, "--journal-max", "65536", "--journal-sync-ms", "5");
    client *a = client_named(s, "burst");
    enum { GAMES = 600 };
    for (int g = 0; g < GAMES; g++)
        client_send(a, "{\"type\":\"solo\",\"size\":3}\n{\"type\":\"leave\"}");
    for (int g = 0; g < GAMES; g++) {
        client_expect(a, "start", WAIT);
        client_expect(a, "end", WAIT);
        client_expect(a, "left", WAIT);
    }
    server_stop(s);
    char *data = harness_read_file(journal, NULL);
    assert_int_equal(count_of(data, "{\"j\":\"game\""), GAMES);
    free(data);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    free(out);
}

/* --------------------------------------------------------- durable ends --- */

#define END_ROUNDS 5
#define END_GAMES  80

/* kill -9 right after `end`s arrive, round after round, while more games
 * are ending: every game whose `end` a client saw is in `history` after the
 * restart, with the result and seed it was told. (An `end` that went out
 * before its record was synced was lost by the crash, and its game came back
 * running with its seed public.) */
static void test_kill9_after_ends(void **state) {
    const char *journal = path_in("j");
    const char *const flags[] = {
        "--journal", journal, "--journal-sync-ms", "50", "--grace", "30", NULL};
    th_server *s = server_start(flags);
    for (int round = 0; round < END_ROUNDS; round++) {
        client *a = client_named(s, "ender");
        /* Left then right: one of them changes any 3x3 board with two tiles,
         * so each game is one that `history` lists. */
        for (int g = 0; g < END_GAMES; g++)
            client_send(a,
                        "{\"type\":\"solo\",\"size\":3,\"seed\":%d}\n"
                        "{\"type\":\"move\",\"dir\":\"left\"}\n"
                        "{\"type\":\"move\",\"dir\":\"right\"}\n"
                        "{\"type\":\"leave\"}",
                        round * 1000 + g);
        json_t *seen[END_GAMES];
        int nseen = 0, kill_after = 10 + round * 12;
        while (nseen < kill_after) {
            json_t *m = client_next(a, WAIT);
            if (!m) fail_msg("round %d: closed after %d ends", round, nseen);
            if (!strcmp(jstr(m, "type"), "end")) seen[nseen++] = m;
        }
        server_kill(s);
        s = server_start(flags);
        client *h = client_named(s, "reader");
        client_send(h, "{\"type\":\"history\",\"limit\":100}");
        json_t *games = jarr(client_expect(h, "history", WAIT), "games");
        for (int k = 0; k < nseen; k++) {
            const char *salt = jstr(seen[k], "salt");
            json_t *found = NULL;
            for (size_t i = 0; i < json_array_size(games) && !found; i++)
                if (!strcmp(jstr(json_array_get(games, i), "salt"), salt))
                    found = json_array_get(games, i);
            if (!found)
                fail_msg(
                    "round %d: end %d of %d (salt %s) was seen, then lost to kill -9",
                    round, k + 1, nseen, salt);
            assert_string_equal(jstr(found, "reason"), jstr(seen[k], "reason"));
            assert_true(
                jequal(json_object_get(found, "seed"), json_object_get(seen[k], "seed")));
            assert_true(jequal(json_object_get(found, "winner"),
                               json_object_get(seen[k], "winner")));
            assert_true(jequal(json_object_get(found, "results"),
                               json_object_get(seen[k], "results")));
        }
        client_close(h);
    }
    server_stop(s);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    free(out);
}

/* A SIGTERM while an `end` waits for its group commit (a 10 s sync window):
 * the stopping server commits at once, so the client gets its `end` and then
 * its `bye`, rather than a closed connection and no result. */
static void test_sigterm_sends_held_end(void **state) {
    (void)state;
    const char *journal = path_in("j");
    th_server *s = SERVER("--journal", journal, "--journal-sync-ms", "10000");
    client *a = client_named(s, "late");
    client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":4}");
    client_expect(a, "start", WAIT);
    client_move_any(a);
    client_send(a, "{\"type\":\"leave\"}");
    /* Wait for the record to be queued: it is written at once (a 10 s window
     * without a stop would hold it), so poll the server with another client. */
    client *b = client_named(s, "other");
    client_sync(b);
    int64_t t0 = harness_now_ms();
    if (kill(s->pid, SIGTERM) < 0) fail_msg("kill: %s", strerror(errno));
    json_t *end = client_expect(a, "end", WAIT);
    assert_string_equal(jstr(end, "reason"), "all_over");
    client_expect_skip(a, "bye", "left", WAIT);
    assert_true(harness_now_ms() - t0 < 5000);
    assert_int_equal(server_signal_stop(s, 0), 0); /* signal 0: only wait for the exit */
    wait_records(journal, "{\"j\":\"game\"", 1, 1000);
}

/* ------------------------------------------------------ compaction loop --- */

/* Moves that keep an 8x8 game alive for a long time (the first of down,
 * left, right, up that changes the board), worked out with the engine from
 * the game's client seed: the server deals the same tiles. */
static int long_game_moves(uint32_t seed, char *out, int max) {
    static eng_tables tables;
    eng_tables_init(&tables);
    eng_game g;
    eng_seed sd = eng_seed_client(seed);
    eng_game_new(&g, 8, &sd);
    static const eng_dir order[4] = {ENG_DOWN, ENG_LEFT, ENG_RIGHT, ENG_UP};
    static const char names[4] = {'d', 'l', 'r', 'u'};
    int n = 0;
    while (n < max) {
        int k = 0;
        for (; k < 4; k++) {
            eng_game next = g;
            if (eng_game_move(&next, order[k], &tables).moved) {
                g = next;
                break;
            }
        }
        if (k == 4 || eng_is_over(&g.board)) break;
        out[n++] = names[k];
    }
    return n;
}

/* Sends moves in batches, each answered by its states before the next. */
static void play_moves(client *c, const char *moves, int n) {
    static const char *const dirs[] = {
        ['d'] = "down", ['l'] = "left", ['r'] = "right", ['u'] = "up"};
    for (int at = 0; at < n;) {
        int batch = n - at < 500 ? n - at : 500;
        char buf[500 * 40];
        size_t len = 0;
        for (int k = 0; k < batch; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len,
                                    "{\"type\":\"move\",\"dir\":\"%s\"}\n",
                                    dirs[(unsigned char)moves[at + k]]);
        client_send_raw(c, buf, len, false);
        for (int k = 0; k < batch; k++)
            if (!jbool(client_expect(c, "state", WAIT), "moved"))
                fail_msg("move %d did not change the board", at + k);
        at += batch;
    }
}

#define LONG_MOVES 30000

/* Three running games whose records alone exceed --journal-max: the journal
 * is compacted a few times as they grow (each time it has doubled), not at
 * every commit (879 compactions in 10 idle seconds before), and a kill -9
 * after it all gives all three games back whole. */
static void test_compaction_converges(void **state) {
    const char *journal = path_in("j");
    const char *const *flags = compacting_flags(journal);
    th_server *s = server_start(flags);
    static const uint32_t seeds[3] = {1, 2, 4}; /* each lives past LONG_MOVES moves */
    static char moves[3][LONG_MOVES];
    static const char *const names[3] = {"one", "two", "three"};
    client *c[3];
    for (int i = 0; i < 3; i++) {
        int n = long_game_moves(seeds[i], moves[i], LONG_MOVES);
        if (n < LONG_MOVES) fail_msg("seed %u lasts only %d moves", seeds[i], n);
        c[i] = client_named(s, names[i]);
        client_send(c[i], "{\"type\":\"solo\",\"size\":8,\"seed\":%u}", seeds[i]);
        client_expect(c[i], "start", WAIT);
        play_moves(c[i], moves[i], LONG_MOVES);
    }
    long long grown = metric(s, "race2048_journal_compactions_total");
    /* 3 x 30k moves of records from 64 KiB: a doubling or two, never dozens. */
    if (grown < 1 || grown > 6) fail_msg("%lld compactions while the games grew", grown);
    /* A second of pings with the games idle: no compaction at all. */
    int64_t until = harness_now_ms() + 1000;
    while (harness_now_ms() < until)
        client_sync(c[0]);
    assert_int_equal(metric(s, "race2048_journal_compactions_total"), grown);
    server_kill(s);
    s = server_start(flags);
    for (int i = 0; i < 3; i++) {
        client *r;
        json_t *st = resume(s, &r, client_token(c[i]));
        assert_int_equal(jint(json_array_get(jarr(st, "players"), 0), "moves"),
                         LONG_MOVES);
    }
    server_stop(s);
}

/* ------------------------------------------------------------- rotation --- */

/* The game ids of an archive's records, in file order; returns the count. */
static size_t archive_ids(const char *path, long long *ids, size_t max) {
    char *data = harness_read_file(path, NULL);
    size_t n = 0;
    static const char head[] = "{\"j\":\"game\",\"game\":";
    for (char *p = data; (p = strstr(p, head)) && n < max; p += sizeof head - 1)
        ids[n++] = atoll(p + sizeof head - 1);
    free(data);
    return n;
}

static long long first_id_of(const char *path) {
    long long id = -1;
    struct stat sb;
    if (stat(path, &sb) == 0) archive_ids(path, &id, 1);
    return id;
}

#define ROTATIONS_BATCH     100
#define ROTATIONS_GAMES_MAX 6000

/* Six rotations of the results archive keep FILE.results.1 to .4 (each
 * rotation used to rename .1 onto itself, keeping one generation): newest
 * first, no game missing between the oldest kept and the newest, and no .5. */
static void test_rotation_keeps_four(void **state) {
    const char *journal = path_in("j");
    th_server *s =
        SERVER("--journal", journal, "--journal-max", "65536", "--journal-sync-ms", "5");
    client *a = client_named(s, "rotor");
    /* After the 4th rotation the first game of .4 changes at each one more. */
    long long first4 = -1;
    int changes = 0, games = 0;
    while (changes < 2) {
        if (games >= ROTATIONS_GAMES_MAX)
            fail_msg("six rotations took over %d games", games);
        for (int g = 0; g < ROTATIONS_BATCH; g++)
            client_send(a, "{\"type\":\"solo\",\"size\":3}\n{\"type\":\"leave\"}");
        for (int g = 0; g < ROTATIONS_BATCH; g++)
            client_expect_skip(a, "left", "start end", WAIT);
        games += ROTATIONS_BATCH;
        long long now4 = first_id_of(path_in("j.results.4"));
        if (now4 >= 0 && first4 >= 0 && now4 != first4) changes++;
        if (now4 >= 0) first4 = now4;
    }
    server_stop(s);
    struct stat sb;
    assert_true(stat(path_in("j.results.5"), &sb) < 0);
    static const char *const gens[] = {"j.results.4", "j.results.3", "j.results.2",
                                       "j.results.1", "j.results",   "j"};
    static long long ids[ROTATIONS_GAMES_MAX];
    long long expect = -1;
    for (size_t k = 0; k < sizeof gens / sizeof gens[0]; k++) {
        size_t n = archive_ids(path_in(gens[k]), ids, ROTATIONS_GAMES_MAX);
        if (k < 5) assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
            if (expect >= 0 && ids[i] != expect)
                fail_msg("%s: game %lld where %lld was next", gens[k], ids[i], expect);
            expect = ids[i] + 1;
        }
        if (k < 5) {
            char *out;
            assert_int_equal(run_replay(&out, path_in(gens[k]), NULL, NULL), 0);
            free(out);
        }
    }
    assert_int_equal(expect - 1, games); /* ids from 1: the newest is the last game */
}

/* ------------------------------------------------------ replies of any size --- */

#define HUGE_MOVES 1100000

/* Reads raw bytes until `lines` line ends; returns the bytes (malloc'd, NUL
 * terminated) and their count in *len. */
static char *read_lines_raw(client *c, int lines, size_t *len) {
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    int seen = 0;
    while (seen < lines) {
        if (n + 65536 + 1 > cap) buf = realloc(buf, cap *= 2);
        size_t got = client_read_raw(c, buf + n, 65536, WAIT);
        if (!got) fail_msg("closed after %zu bytes, %d of %d lines", n, seen, lines);
        for (size_t i = n; i < n + got; i++)
            seen += buf[i] == '\n';
        n += got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A `replay` of a game with over a million moves (longer than --max-output)
 * reaches a client that reads, and so do ten of them asked for at once; the
 * connection stays open (it used to be cut off as a slow consumer before it
 * got a byte). */
static void test_replay_any_size(void **state) {
    const char *journal = path_in("j");
    th_server *s = SERVER("--journal", journal);
    client *a = client_named(s, "big");
    client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":5}");
    client_expect(a, "start", WAIT);
    client_move_any(a);
    client_send(a, "{\"type\":\"leave\"}");
    client_expect(a, "end", WAIT);
    server_stop(s);
    /* Its record, rewritten with a million more moves (history and replay
     * answer from the record; race2048-replay is not asked). */
    size_t len;
    char *data = harness_read_file(journal, &len);
    char *rec = strstr(data, "{\"j\":\"game\"");
    assert_non_null(rec);
    char *mv = strstr(rec, "\"moves\":{\"");
    assert_non_null(mv);
    char *open = strchr(mv + strlen("\"moves\":{\""), '"'); /* "ID":" */
    assert_non_null(open);
    open += 3;
    char *close = strchr(open, '"');
    FILE *f = fopen(journal, "wb");
    assert_non_null(f);
    fwrite(data, 1, (size_t)(open - data), f);
    for (int k = 0; k < HUGE_MOVES; k++)
        fputc("lr"[k & 1], f);
    fwrite(close, 1, len - (size_t)(close - data), f);
    fclose(f);
    free(data);

    s = SERVER("--journal", journal);
    client *r = client_named(s, "reader");
    client_send(r, "{\"type\":\"history\"}");
    json_int_t id =
        jint(json_array_get(jarr(client_expect(r, "history", WAIT), "games"), 0), "game");
    client_send(r, "{\"type\":\"replay\",\"game\":%lld}", (long long)id);
    char *reply = read_lines_raw(r, 1, &len);
    assert_true(len > HUGE_MOVES);
    assert_memory_equal(reply, "{\"type\":\"replay\"", 16);
    free(reply);
    client_sync(r);
    /* Ten at once, then a ping: all ten whole, then the pong. */
    for (int k = 0; k < 10; k++)
        client_send(r, "{\"type\":\"replay\",\"game\":%lld}", (long long)id);
    client_send(r, "{\"type\":\"ping\",\"t\":7}");
    reply = read_lines_raw(r, 11, &len);
    char *line = reply;
    for (int k = 0; k < 10; k++) {
        char *nl = strchr(line, '\n');
        assert_true(nl - line > HUGE_MOVES);
        assert_memory_equal(line, "{\"type\":\"replay\"", 16);
        line = nl + 1;
    }
    assert_non_null(strstr(line, "\"pong\""));
    free(reply);
    server_stop(s);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_resume, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_seed_not_dealt_twice, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_garbage_lines_skipped, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_time_limit_spans_restart, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_unopenable, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_history_replay, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_tampering, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_write_failure, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_nobody_comes_back, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_burst, setup_dir, harness_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_compaction, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_walk_away_recorded, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_history_after_torn_compaction, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_kill9_after_ends, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_sends_held_end, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_compaction_converges, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_rotation_keeps_four, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_replay_any_size, setup_dir,
                                        harness_teardown),
        cmocka_unit_test_setup_teardown(test_failed_compaction_keeps_records, setup_dir,
                                        harness_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
