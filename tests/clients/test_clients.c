/* test_clients.c - smoke tests: race2048-bot and race2048-bench server against the real
 * race2048d. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Binaries come from the environment (ctest sets them from the targets). */
static const char *server_bin, *bot_bin, *bench_bin;

static pid_t server_pid = -1;
static char server_port[16];

/* A child with its stdout on a pipe. */
typedef struct child {
    pid_t pid;
    int out; /* read end of its stdout */
} child;

/* Starts argv[0] with stdout on a pipe; stderr stays ours, for diagnosis. */
static child spawn(char *const argv[]) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    return (child){pid, p[0]};
}

/* Reads one line (up to '\n') from fd within ms into buf; false on EOF or
 * timeout. A deadline for a child that hangs, not a synchronisation. */
static bool read_line(int fd, char *buf, size_t cap, int ms) {
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, ms) <= 0) return false;
        char ch;
        if (read(fd, &ch, 1) != 1) return false;
        if (ch == '\n') break;
        buf[n++] = ch;
    }
    buf[n] = '\0';
    return true;
}

/* Reads everything up to EOF into buf (NUL-terminated). */
static void read_all(int fd, char *buf, size_t cap) {
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(fd, buf + n, cap - 1 - n)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        assert_true(got > 0);
        n += (size_t)got;
    }
    buf[n] = '\0';
}

/* Waits for the child and returns its exit code (fails on a signal). */
static int finish(child c, char *out, size_t cap) {
    read_all(c.out, out, cap);
    close(c.out);
    int status;
    assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
    if (!WIFEXITED(status)) fail_msg("child killed by signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

static int run(char *const argv[], char *out, size_t cap) {
    return finish(spawn(argv), out, cap);
}

static int setup(void **state) {
    server_bin = getenv("RACE2048D");
    bot_bin = getenv("RACE2048_BOT");
    bench_bin = getenv("RACE2048_BENCH");
    if (!server_bin || !bot_bin || !bench_bin) {
        fprintf(stderr, "set RACE2048D, RACE2048_BOT and RACE2048_BENCH\n");
        return -1;
    }
    /* The bench below starts many games from one address. */
    char *argv[] = {(char *)server_bin, "--host", "127.0.0.1", "--port", "0",
                    "--log-level", "warn", "--journal", "none", "--max-games-per-min",
                    "0",
                    /* Tests run in parallel: none may take 8048. */
                    "--http-port", "off", NULL};
    child c = spawn(argv);
    server_pid = c.pid;
    char line[128];
    if (!read_line(c.out, line, sizeof line, 10000)) return -1;
    close(c.out);
    const char *colon = strrchr(line, ':');
    if (strncmp(line, "race2048d listening on ", 23) || !colon) return -1;
    snprintf(server_port, sizeof server_port, "%s", colon + 1);
    return 0;
}

static int teardown(void **state) {
    if (server_pid < 0) return 0;
    kill(server_pid, SIGTERM);
    int status;
    if (waitpid(server_pid, &status, 0) != server_pid) return -1;
    /* A crash or a sanitizer report would show here. */
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void test_bot_solo_to_the_end(void **state) {
    char out[4096];
    char *argv[] = {(char *)bot_bin, "--port", server_port, "--solo", "--size", "3",
                    "--seed",        "7",      NULL};
    assert_int_equal(run(argv, out, sizeof out), 0);
    assert_non_null(strstr(out, "result="));
    assert_non_null(strstr(out, " reason=all_over "));
    assert_non_null(strstr(out, " seed=7 "));
    /* The bot replays its game from the revealed seed: it must agree. */
    assert_non_null(strstr(out, " verified=yes"));
}

static void test_bot_greedy_two_games(void **state) {
    char out[4096];
    char *argv[] = {(char *)bot_bin, "--port", server_port,  "--size", "3",
                    "--games",       "2",      "--strategy", "greedy", NULL};
    assert_int_equal(run(argv, out, sizeof out), 0);
    char *second = strstr(out, "result=");
    assert_non_null(second);
    assert_non_null(strstr(second + 1, "result="));
    /* Server-seeded solo games (ChaCha20): both verified, with fresh seeds. */
    char *v1 = strstr(out, " verified=yes");
    assert_non_null(v1);
    assert_non_null(strstr(v1 + 1, " verified=yes"));
    char *s1 = strstr(out, " seed="), *s2 = s1 ? strstr(s1 + 1, " seed=") : NULL;
    assert_non_null(s2);
    assert_int_equal(strspn(s1 + 6, "0123456789abcdef"), 64);
    assert_int_equal(strspn(s2 + 6, "0123456789abcdef"), 64);
    assert_memory_not_equal(s1 + 6, s2 + 6, 64);
}

static void test_bots_race_create_join(void **state) {
    char room[64], out_a[4096], out_b[4096];
    char *create[] = {(char *)bot_bin, "--port", server_port, "--create", "--name", "ann",
                      "--size",        "3",      "--target",  "32",       NULL};
    child a = spawn(create);
    assert_true(read_line(a.out, room, sizeof room, 10000));
    assert_int_equal(strncmp(room, "room=", 5), 0);
    char *join[] = {(char *)bot_bin, "--port", server_port, "--join", room + 5,
                    "--name",        "bob",    "--size",    "3",      NULL};
    assert_int_equal(run(join, out_b, sizeof out_b), 0);
    assert_int_equal(finish(a, out_a, sizeof out_a), 0);
    assert_non_null(strstr(out_a, "result="));
    assert_non_null(strstr(out_b, "result="));
    /* Both raced the same seed and the same ending. */
    const char *seed_a = strstr(out_a, " seed="), *seed_b = strstr(out_b, " seed=");
    assert_non_null(seed_a);
    assert_non_null(seed_b);
    /* A race's seed is the server's: 64 hex digits (ChaCha20), not a number. */
    assert_int_equal(strspn(seed_a + 6, "0123456789abcdef"), 64);
    assert_int_equal(seed_a[6 + 64], ' ');
    assert_memory_equal(seed_a, seed_b, 6 + 64 + 1);
    assert_non_null(strstr(out_a, " verified=yes"));
    assert_non_null(strstr(out_b, " verified=yes"));
    bool a_won = strstr(out_a, "result=win") != NULL, b_won = strstr(out_b, "result=win");
    assert_false(a_won && b_won);
}

static void test_bot_join_unknown_room_fails(void **state) {
    char out[1024];
    char *argv[] = {(char *)bot_bin, "--port", server_port, "--join", "ZZZZ9", NULL};
    assert_int_equal(run(argv, out, sizeof out), 1);
}

static void test_bench_server_counts_moves(void **state) {
    char out[4096];
    char *argv[] = {(char *)bench_bin, "server", "--port",    server_port,
                    "--clients",       "4",      "--seconds", "1",
                    "--warmup",        "0.2",    NULL};
    assert_int_equal(run(argv, out, sizeof out), 0);
    assert_int_equal(strncmp(out, "server clients=4 mode=solo pipeline=1 ", 38), 0);
    const char *m = strstr(out, " moves_per_s=");
    assert_non_null(m);
    assert_true(strtod(m + 13, NULL) > 0);
    assert_non_null(strstr(out, " errors=0"));
}

static void test_bench_server_race_pipelined(void **state) {
    char out[4096];
    char *argv[] = {(char *)bench_bin, "server", "--port",    server_port,
                    "--clients",       "4",      "--mode",    "race",
                    "--pipeline",      "4",      "--seconds", "0.5",
                    "--warmup",        "0",      NULL};
    assert_int_equal(run(argv, out, sizeof out), 0);
    const char *m = strstr(out, " moves_per_s=");
    assert_non_null(m);
    assert_true(strtod(m + 13, NULL) > 0);
}

static void test_bench_server_race_over_websocket(void **state) {
    char out[4096];
    char *argv[] = {(char *)bench_bin,
                    "server",
                    "--port",
                    server_port,
                    "--ws",
                    "--clients",
                    "4",
                    "--mode",
                    "race",
                    "--pipeline",
                    "4",
                    "--seconds",
                    "0.5",
                    "--warmup",
                    "0",
                    NULL};
    assert_int_equal(run(argv, out, sizeof out), 0);
    const char *m = strstr(out, " moves_per_s=");
    assert_non_null(m);
    assert_true(strtod(m + 13, NULL) > 0);
    assert_non_null(strstr(out, " errors=0"));
    assert_non_null(strstr(out, " transport=ws"));
}

/* --ports: client i on the (i mod n)th port. The same server twice plays; a
 * second port with nothing behind it fails client 1 (and only --ports can
 * send it there). */
static void test_bench_server_ports_spread_clients(void **state) {
    char out[4096], both[40], second_closed[40];
    snprintf(both, sizeof both, "%s,%s", server_port, server_port);
    snprintf(second_closed, sizeof second_closed, "%s,1", server_port);
    char *spread[] = {
        (char *)bench_bin, "server", "--ports",  both, "--clients", "4", "--mode", "race",
        "--seconds",       "0.5",    "--warmup", "0",  NULL};
    assert_int_equal(run(spread, out, sizeof out), 0);
    const char *m = strstr(out, " moves_per_s=");
    assert_non_null(m);
    assert_true(strtod(m + 13, NULL) > 0);
    char *refused[] = {(char *)bench_bin, "server",    "--ports",
                       second_closed,     "--clients", "2",
                       "--seconds",       "0.5",       NULL};
    assert_int_equal(run(refused, out, sizeof out), 1);
}

static void test_usage_errors_exit_2(void **state) {
    char out[1024];
    char *bot[] = {(char *)bot_bin, "--size", "9", NULL};
    assert_int_equal(run(bot, out, sizeof out), 2);
    char *bench[] = {(char *)bench_bin, "server", "--mode", "race",
                     "--clients",       "3",      NULL};
    assert_int_equal(run(bench, out, sizeof out), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bot_solo_to_the_end),
        cmocka_unit_test(test_bot_greedy_two_games),
        cmocka_unit_test(test_bots_race_create_join),
        cmocka_unit_test(test_bot_join_unknown_room_fails),
        cmocka_unit_test(test_bench_server_counts_moves),
        cmocka_unit_test(test_bench_server_race_pipelined),
        cmocka_unit_test(test_bench_server_race_over_websocket),
        cmocka_unit_test(test_bench_server_ports_spread_clients),
        cmocka_unit_test(test_usage_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
