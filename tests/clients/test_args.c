/* test_args.c - clients/args.c, the programs' one command-line parser: values, errors,
 * --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "args.h"

/* What one args_parse call printed and returned. */
typedef struct parsed {
    int rc;
    char out[4096], err[4096];
    args_rest rest;
} parsed;

/* The text written to fd while the file stands in for it, NUL-terminated. */
static void slurp(FILE *f, char *buf, size_t cap) {
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs args_parse on argv (NULL-terminated) with stdout and stderr captured. */
static void parse(const args_spec *spec, parsed *p, char **argv) {
    int argc = 0;
    while (argv[argc])
        argc++;
    FILE *out = tmpfile(), *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    p->rc = args_parse(spec, argc, argv, spec->max_positional ? &p->rest : NULL);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    slurp(out, p->out, sizeof p->out);
    slurp(err, p->err, sizeof p->err);
}

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})

/* A program of every kind of flag. */
static long count = 7;
static const char *host = "localhost";
static bool fast;
static int fast_seen;
static char mode[8] = "solo";

static bool parse_mode(const char *v, void *to) {
    if (strcmp(v, "solo") && strcmp(v, "race")) return false;
    strcpy(to, v);
    return true;
}

static const args_flag flags[] = {
    {.name = "--count",
     .kind = ARGS_LONG,
     .to = &count,
     .lo = 1,
     .hi = 100,
     .arg = "N",
     .help = "how many (default 7)"},
    {.name = "--host",
     .kind = ARGS_STRING,
     .to = &host,
     .arg = "H",
     .help = "where to\nconnect"},
    {.name = "--fast", .alias = "-f", .kind = ARGS_BOOL, .to = &fast, .seen = &fast_seen},
    {.name = "--mode",
     .kind = ARGS_CUSTOM,
     .to = mode,
     .parse = parse_mode,
     .want = "solo or race",
     .arg = "M",
     .help = "solo or race"},
    {.name = "--help", .alias = "-h", .kind = ARGS_HELP, .help = "this help"},
    {.name = "--version", .kind = ARGS_VERSION},
};

static const args_spec spec = {
    .prog = "prog",
    .version = "1.2.3",
    .usage = "usage: prog [--count N] [FILE]\n       prog --help\n",
    .about = "Does things.\n",
    .column = 10,
    .epilogue = "exit 0 or 2\n",
    .flags = flags,
    .nflags = ARGS_COUNT(flags),
    .positional = "FILE",
    .max_positional = 1,
};

static int reset(void **state) {
    (void)state;
    count = 7;
    host = "localhost";
    fast = false;
    fast_seen = 0;
    strcpy(mode, "solo");
    return 0;
}

static void test_values_of_every_kind(void **state) {
    (void)state;
    static parsed p;
    parse(&spec, &p,
          ARGV("--count", "42", "--host=example.org", "-f", "file.txt", "--mode", "race",
               "--fast"));
    assert_int_equal(p.rc, ARGS_RUN);
    assert_string_equal(p.out, "");
    assert_string_equal(p.err, "");
    assert_int_equal(count, 42);
    assert_string_equal(host, "example.org");
    assert_true(fast);
    assert_int_equal(fast_seen, 2);
    assert_string_equal(mode, "race");
    assert_int_equal(p.rest.npositional, 1);
    assert_string_equal(p.rest.positional[0], "file.txt");
}

/* Each error: exit 2's outcome, nothing on stdout, the flag named on the first
 * line and the usage's first line after it, nothing set past the error. */
static void test_errors_name_the_flag(void **state) {
    (void)state;
    const struct {
        char **argv;
        const char *line;
    } cases[] = {
        {ARGV("--count", "0"),
         "prog: --count: '0' is not valid; expected an integer from 1 to 100\n"},
        {ARGV("--count", "12x"),
         "prog: --count: '12x' is not valid; expected an integer from 1 to 100\n"},
        {ARGV("--count"), "prog: --count needs a value (N)\n"},
        {ARGV("--mode", "duel"),
         "prog: --mode: 'duel' is not valid; expected solo or race\n"},
        {ARGV("--nope"), "prog: unknown option '--nope'\n"},
        {ARGV("--fast=1"), "prog: --fast takes no value\n"},
        {ARGV("a", "b"), "prog: unexpected argument 'b'\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static parsed p;
        reset(NULL);
        parse(&spec, &p, cases[i].argv);
        assert_int_equal(p.rc, ARGS_BAD);
        assert_string_equal(p.out, "");
        char want[256];
        snprintf(want, sizeof want, "%susage: prog [--count N] [FILE]\n", cases[i].line);
        assert_string_equal(p.err, want);
    }
    assert_int_equal(count, 7);
}

static void test_help_from_the_table(void **state) {
    (void)state;
    static parsed p;
    parse(&spec, &p, ARGV("--count", "3", "-h", "--nope"));
    assert_int_equal(p.rc, ARGS_DONE);
    assert_string_equal(p.err, "");
    assert_string_equal(p.out, "usage: prog [--count N] [FILE]\n"
                               "       prog --help\n"
                               "Does things.\n"
                               "  --count N  how many (default 7)\n"
                               "  --host H   where to\n"
                               "             connect\n"
                               "  --mode M   solo or race\n"
                               "  --help     this help\n"
                               "exit 0 or 2\n");
    parse(&spec, &p, ARGV("--version"));
    assert_int_equal(p.rc, ARGS_DONE);
    assert_string_equal(p.out, "prog 1.2.3\n");
}

/* A subcommand's spec: the first positional ends the flags; errors name the command. */
static void test_subcommands(void **state) {
    (void)state;
    const args_spec top = {
        .prog = "prog",
        .usage = "usage: prog [--fast] COMMAND [ARGS]\n",
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
        .positional = "COMMAND",
        .max_positional = 1,
        .stop_at_positional = true,
    };
    static parsed p;
    parse(&top, &p, ARGV("--fast", "run", "--nope", "x"));
    assert_int_equal(p.rc, ARGS_RUN);
    assert_int_equal(p.rest.npositional, 1);
    assert_string_equal(p.rest.positional[0], "run");
    assert_int_equal(p.rest.next, 2);

    const args_spec sub = {
        .prog = "prog", .command = "run", .usage = "usage: prog run\n"};
    parse(&sub, &p, ARGV("--nope"));
    assert_int_equal(p.rc, ARGS_BAD);
    assert_string_equal(p.err, "prog: run: unknown option '--nope'\nusage: prog run\n");
}

static void test_parse_long(void **state) {
    (void)state;
    long v = 5;
    assert_true(args_parse_long("-3", -3, 3, &v));
    assert_int_equal(v, -3);
    assert_false(args_parse_long("", 0, 9, &v));
    assert_false(args_parse_long("4 ", 0, 9, &v));
    assert_false(args_parse_long("10", 0, 9, &v));
    assert_false(args_parse_long("99999999999999999999", 0, 9, &v));
    assert_int_equal(v, -3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_values_of_every_kind, reset),
        cmocka_unit_test_setup(test_errors_name_the_flag, reset),
        cmocka_unit_test_setup(test_help_from_the_table, reset),
        cmocka_unit_test_setup(test_subcommands, reset),
        cmocka_unit_test(test_parse_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
