/* test_programs.c - every program's command line: --help, --version, bad flags and their
 * exit statuses. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

/* What one run printed and how it ended. */
typedef struct run_result {
    int status; /* exit status; -1 if killed by a signal or the deadline */
    char out[16384];
    char err[16384];
} run_result;

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The path of a program from the environment variable ctest sets. */
static const char *program(const char *env) {
    const char *p = getenv(env);
    if (!p || !*p) fail_msg("%s is not set (the ctest registration sets it)", env);
    return p;
}

/* Runs path with args (NULL-terminated), stdin from /dev/null, and collects
 * stdout and stderr until both close. A program that runs past 30 s is
 * killed and the test fails. */
static void run(run_result *r, const char *path, const char *const *args) {
    const char *argv[16] = {path};
    int argc = 1;
    for (int i = 0; args && args[i] && argc < 15; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
        fail_msg("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    memset(r, 0, sizeof *r);
    size_t nout = 0, nerr = 0;
    struct pollfd p[2] = {{.fd = out[0], .events = POLLIN},
                          {.fd = err[0], .events = POLLIN}};
    int64_t deadline = now_ms() + 30000;
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(p, 2, left) <= 0) break;
        for (int k = 0; k < 2; k++) {
            if (p[k].fd < 0 || !p[k].revents) continue;
            char *buf = k ? r->err : r->out;
            size_t *n = k ? &nerr : &nout;
            char scratch[512];
            ssize_t got = *n < sizeof r->out - 1
                              ? read(p[k].fd, buf + *n, sizeof r->out - 1 - *n)
                              : read(p[k].fd, scratch, sizeof scratch);
            if (got <= 0) {
                close(p[k].fd);
                p[k].fd = -1;
            } else if (*n < sizeof r->out - 1) {
                *n += (size_t)got;
            }
        }
    }
    for (int k = 0; k < 2; k++)
        if (p[k].fd >= 0) close(p[k].fd);
    int status = 0;
    bool timed_out = now_ms() >= deadline;
    if (timed_out) kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (timed_out) fail_msg("%s %s ran for more than 30 s", path, args ? args[0] : "");
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* --help: usage on stdout, starting with "usage: NAME", nothing on stderr,
 * exit 0. --version: "NAME VERSION" and exit 0. */
static void check_help_and_version(const char *env, const char *name) {
    const char *path = program(env);
    static run_result r;
    char want[128];

    run(&r, path, ARGS("--help"));
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof want, "usage: %s ", name);
    if (strncmp(r.out, want, strlen(want)))
        fail_msg("%s --help: stdout does not start with \"%s\": \"%s\"", name, want,
                 r.out);
    assert_string_equal(r.err, "");
    assert_true(count_lines(r.out) >= 2);

    run(&r, path, ARGS("--version"));
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof want, "%s %s\n", name, RACE2048_VERSION);
    assert_string_equal(r.out, want);
    assert_string_equal(r.err, "");
}

/* A bad command line: exit 2, nothing on stdout, and on stderr exactly two
 * lines: what is wrong (naming the program), then the usage line. */
static void check_bad_usage(const char *env, const char *name, const char *const *args) {
    static run_result r;
    run(&r, program(env), args);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    if (count_lines(r.err) != 2)
        fail_msg("%s: expected 2 lines on stderr: \"%s\"", name, r.err);
    char want[128];
    snprintf(want, sizeof want, "%s: ", name);
    assert_true(!strncmp(r.err, want, strlen(want)));
    snprintf(want, sizeof want, "\nusage: %s ", name);
    if (!strstr(r.err, want)) fail_msg("%s: no usage line: \"%s\"", name, r.err);
}

static void test_server_command_line(void **state) {
    check_help_and_version("RACE2048D", "race2048d");
    check_bad_usage("RACE2048D", "race2048d", ARGS("--no-such-flag"));
    check_bad_usage("RACE2048D", "race2048d", ARGS("--port", "65536"));
    check_bad_usage("RACE2048D", "race2048d", ARGS("--port"));
    check_bad_usage("RACE2048D", "race2048d", ARGS("stray"));

    /* A host name that does not resolve is not a usage error: exit 1, with why. */
    static run_result r;
    run(&r, program("RACE2048D"), ARGS("--host", "no-such-host.invalid", "--port", "0"));
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_non_null(
        strstr(r.err, "race2048d: cannot resolve --host 'no-such-host.invalid'"));
}

static void test_bench_command_line(void **state) {
    check_help_and_version("RACE2048_BENCH", "race2048-bench");
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("--no-such-flag"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("frobnicate"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("engine", "0"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("engine", "1", "2"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("server", "--clients", "0"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("server", "--nope", "1"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench",
                    ARGS("server", "--ports", "1,,2"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench",
                    ARGS("server", "--port", "1", "--ports", "2"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("bots", "--level", "6"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("bots", "--games"));
    check_bad_usage("RACE2048_BENCH", "race2048-bench", ARGS("bots", "--nope", "1"));
    static run_result r;
    run(&r, program("RACE2048_BENCH"), NULL); /* no subcommand */
    assert_int_equal(r.status, 2);
    assert_int_equal(count_lines(r.err), 2);
    /* Each subcommand has its own --help, on stdout. */
    run(&r, program("RACE2048_BENCH"), ARGS("server", "--help"));
    assert_int_equal(r.status, 0);
    assert_true(!strncmp(r.out, "usage: race2048-bench server ", 29));
    run(&r, program("RACE2048_BENCH"), ARGS("bots", "--help"));
    assert_int_equal(r.status, 0);
    assert_true(!strncmp(r.out, "usage: race2048-bench bots ", 27));
    run(&r, program("RACE2048_BENCH"), ARGS("engine", "--help"));
    assert_int_equal(r.status, 0);
    assert_true(!strncmp(r.out, "usage: race2048-bench ", 22));
}

static void test_bot_command_line(void **state) {
    check_help_and_version("RACE2048_BOT", "race2048-bot");
    check_bad_usage("RACE2048_BOT", "race2048-bot", ARGS("--no-such-flag"));
    check_bad_usage("RACE2048_BOT", "race2048-bot", ARGS("--port", "0"));
    check_bad_usage("RACE2048_BOT", "race2048-bot", ARGS("--games"));
}

static void test_check_command_line(void **state) {
    check_help_and_version("RACE2048_CHECK", "race2048-check");
    check_bad_usage("RACE2048_CHECK", "race2048-check", ARGS("--no-such-flag"));
    check_bad_usage("RACE2048_CHECK", "race2048-check", ARGS("-t"));
    check_bad_usage("RACE2048_CHECK", "race2048-check", ARGS("1", "2"));
    check_bad_usage("RACE2048_CHECK", "race2048-check", ARGS("host:99999"));
}

/* race2048-replay, once it is built (the test is registered with its path). */
static void test_replay_command_line(void **state) {
    if (!getenv("RACE2048_REPLAY")) {
        print_message("race2048-replay is not built; skipped\n");
        skip();
    }
    check_help_and_version("RACE2048_REPLAY", "race2048-replay");
    check_bad_usage("RACE2048_REPLAY", "race2048-replay", ARGS("--no-such-flag"));
}

/* A race2048d of our own, with its browsers' port, whose one address may
 * start only 2 games a minute: the two ports it prints. */
typedef struct served {
    pid_t pid;
    char port[16], http_port[16];
} served;

/* The port at the end of one stdout line of the server ("...:PORT\n"). */
static bool read_port(int fd, char *port, size_t cap) {
    char line[128];
    size_t n = 0;
    int64_t deadline = now_ms() + 30000;
    while (n + 1 < sizeof line) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0 || read(fd, &line[n], 1) != 1)
            return false;
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = '\0';
    const char *colon = strrchr(line, ':');
    if (!colon) return false;
    snprintf(port, cap, "%s", colon + 1);
    return true;
}

static void serve(served *s) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0) fail_msg("pipe: %s", strerror(errno));
    const char *path = program("RACE2048D");
    s->pid = fork();
    if (s->pid == 0) {
        dup2(out[1], 1);
        execl(path, path, "--host", "127.0.0.1", "--port", "0", "--http-port", "0",
              "--journal", "none", "--log-level", "warn", "--max-games-per-min", "2",
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    bool ok = read_port(out[0], s->port, sizeof s->port) &&
              read_port(out[0], s->http_port, sizeof s->http_port);
    close(out[0]);
    if (!ok) fail_msg("race2048d printed no ports");
}

/* The test's server, stopped by the teardown even when the test fails. */
static served the_server = {.pid = -1};

static int unserve(void **state) {
    (void)state;
    if (the_server.pid <= 0) return 0;
    kill(the_server.pid, SIGTERM);
    int status;
    waitpid(the_server.pid, &status, 0);
    the_server.pid = -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Issue 29: race2048-check at the browsers' port says so. */
static void test_check_names_the_browsers_port(void **state) {
    (void)state;
    served s;
    serve(&the_server);
    s = the_server;
    static run_result r;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%s", s.http_port);
    run(&r, program("RACE2048_CHECK"), ARGS(target));
    assert_int_not_equal(r.status, 0);
    if (!strstr(r.err, "answered HTTP") || !strstr(r.err, "--http-port"))
        fail_msg("race2048-check at the browsers' port said: \"%s\"", r.err);
}

/* Issue 29: race2048-bench server names the error codes it got and what to
 * do about rate_limited. */
static void test_bench_names_the_error_codes(void **state) {
    (void)state;
    served s;
    serve(&the_server);
    s = the_server;
    static run_result r;
    run(&r, program("RACE2048_BENCH"),
        ARGS("server", "--port", s.port, "--clients", "4", "--seconds", "0.5", "--warmup",
             "0"));
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "rate_limited=") || !strstr(r.err, "--max-games-per-min 0"))
        fail_msg("race2048-bench server said: \"%s\"", r.err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_command_line),
        cmocka_unit_test(test_bench_command_line),
        cmocka_unit_test(test_bot_command_line),
        cmocka_unit_test(test_check_command_line),
        cmocka_unit_test(test_replay_command_line),
        cmocka_unit_test_teardown(test_check_names_the_browsers_port, unserve),
        cmocka_unit_test_teardown(test_bench_names_the_error_codes, unserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
