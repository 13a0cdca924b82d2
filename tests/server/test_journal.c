/* test_journal.c - the journal: kill -9 and resume, torn tails, history and replay,
 * tampering, write failures, a burst of finishing games. */
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

#include "harness.h"

/* ------------------------------------------------------------- helpers --- */

static char dir[64];

static int setup_dir(void **state) {
    snprintf(dir, sizeof dir, "/tmp/r2048-journal-XXXXXX");
    if (!mkdtemp(dir)) fail_msg("mkdtemp: %s", strerror(errno));
    return 0;
}

static int teardown_dir(void **state) {
    int rc = harness_teardown(state);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

static const char *path_in(const char *name) {
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
    char *data = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            data = realloc(data, cap);
            assert_non_null(data);
        }
        size_t r = fread(data + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    data[n] = '\0';
    if (len) *len = n;
    return data;
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
        char *data = read_file(path, NULL);
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
    int p[2];
    if (pipe(p) < 0) fail_msg("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(bin, bin, file, a1, a2, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(p[0], buf + n, cap - n - 1)) > 0) {
        n += (size_t)r;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    close(p[0]);
    buf[n] = '\0';
    int status;
    waitpid(pid, &status, 0);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
    race_start(s, 2, "\"size\":4", c, NULL);
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
    /* Some moves are durable (the rest may be lost with the last window). */
    wait_records(journal, "{\"j\":\"moves\"", 1, 5000);
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
    assert_non_null(strstr(out, "1 games checked, 0 failed"));
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
    char *data = read_file(journal, &whole);
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
    data = read_file(journal, &now);
    assert_int_equal(now, whole); /* cut back to the last whole record */
    free(data);
    assert_int_equal(run_replay(NULL, journal, NULL, NULL), 0);
    /* One game by its id; --show plays it (no terminal: no pauses). */
    char *out;
    assert_int_equal(run_replay(&out, journal, "--game", "1"), 0);
    assert_non_null(strstr(out, "1 games checked, 0 failed"));
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
    char *data = read_file(journal, &len);
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
    client *r;
    resume(s, &r, client_token(c[0]));
    json_t *end = client_expect_skip(r, "end", "player state", harness_ms(WAIT));
    assert_string_equal(jstr(end, "reason"), "time");
    int64_t took = harness_now_ms() - started;
    /* At 3 s from the start, not 3 s from the restart (which came after
     * 1.5 s): the margins are wide either way. */
    assert_true(took >= 2900);
    if (took >= 4300) fail_msg("the race ended %lld ms after its start", (long long)took);
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
        execl(bin, bin, "--port", "0", "--host", "127.0.0.1", "--journal",
              "/nonexistent-dir/race2048.journal", (char *)NULL);
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
    return read_file(journal, NULL);
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

/* race2048_journal_errors_total from the server's /metrics. */
static long long journal_errors(th_server *s) {
    client *http = client_connect(s);
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
    client_send_raw(http, get, sizeof get - 1, false);
    static char page[65536];
    size_t n = 0;
    const char *at = NULL;
    while (n < sizeof page - 1 && !(at && strchr(at + 1, '\n'))) {
        size_t got = client_read_raw(http, page + n, sizeof page - 1 - n, WAIT);
        if (!got) break;
        n += got;
        page[n] = '\0';
        at = strstr(page, "\nrace2048_journal_errors_total ");
    }
    if (!at) fail_msg("no race2048_journal_errors_total in /metrics");
    client_close(http);
    return atoll(at + strlen("\nrace2048_journal_errors_total "));
}

/* The file size limit makes writes fail with EFBIG: games go on, the file
 * keeps only whole records, and what is in it checks out. */
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
    for (int g = 0; g < 12; g++) {
        if (g == 1) wait_records(journal, "{\"j\":\"game\"", 1, 5000);
        client_send(a, "{\"type\":\"solo\",\"size\":3,\"seed\":%d}", g);
        client_expect(a, "start", WAIT);
        for (int k = 0; k < 4; k++)
            client_move_any(a);
        client_send(a, "{\"type\":\"leave\"}");
        client_expect(a, "end", WAIT);
        client_expect(a, "left", WAIT);
    }
    client_sync(a); /* the server still answers */
    /* And counts the failures on /metrics (the next commit fails soon). */
    int64_t deadline = harness_now_ms() + harness_ms(WAIT);
    while (journal_errors(s) == 0) {
        if (harness_remaining(deadline) == 0) fail_msg("no journal error was counted");
        poll(NULL, 0, 50);
    }
    client_send(a, "{\"type\":\"history\",\"limit\":100}");
    assert_int_equal(json_array_size(jarr(client_expect(a, "history", WAIT), "games")),
                     12);
    server_stop(s);
    size_t len;
    char *data = read_file(journal, &len);
    assert_true(len <= 3000);
    assert_true(len > 0 && data[len - 1] == '\n'); /* whole records only */
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
    char *data = read_file(journal, NULL);
    assert_true(count_of(data, "{\"j\":\"game\"") >= BURST);
    free(data);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    free(out);
}

/* With a small --journal-max the journal is compacted again and again while
 * games finish and a race runs; kill -9 lands in or between compactions.
 * After the restart the race is back, and journal and archive check out. */
static void test_kill9_compaction(void **state) {
    const char *journal = path_in("j");
    const char *const flags[] = {"--journal",
                                 journal,
                                 "--journal-max",
                                 "65536",
                                 "--journal-sync-ms",
                                 "5",
                                 "--grace",
                                 "30",
                                 NULL};
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
    char *data = read_file(journal, NULL);
    assert_int_equal(count_of(data, "{\"j\":\"game\""), GAMES);
    free(data);
    char *out;
    assert_int_equal(run_replay(&out, journal, NULL, NULL), 0);
    free(out);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_resume, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_seed_not_dealt_twice, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_garbage_lines_skipped, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_time_limit_spans_restart, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_unopenable, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_history_replay, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_tampering, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_write_failure, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_nobody_comes_back, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_kill9_burst, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_kill9_compaction, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_walk_away_recorded, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_history_after_torn_compaction, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_failed_compaction_keeps_records, setup_dir,
                                        teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
