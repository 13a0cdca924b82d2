/* args.h - one table-driven command-line parser for the programs in clients/. */
#ifndef RACE2048_ARGS_H
#define RACE2048_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/* What a flag takes, and where it puts it (args_flag.to). */
typedef enum args_kind {
    ARGS_BOOL,    /* a switch without a value: *(bool *)to = true */
    ARGS_LONG,    /* a whole decimal number in [lo, hi]: *(long *)to */
    ARGS_STRING,  /* any text: *(const char **)to points into argv */
    ARGS_CUSTOM,  /* a value parse() judges and stores; parse(v, to) false = bad */
    ARGS_HELP,    /* prints the help on stdout: the caller exits 0 */
    ARGS_VERSION, /* prints "PROG VERSION" on stdout: the caller exits 0 */
} args_kind;

/* One flag of a program's table. */
typedef struct args_flag {
    const char *name;  /* "--port", or a short one ("-t") */
    const char *alias; /* another spelling ("-h", "-v"), or NULL */
    args_kind kind;
    void *to;                               /* where the value goes (see args_kind) */
    long lo, hi;                            /* ARGS_LONG's range */
    bool (*parse)(const char *v, void *to); /* ARGS_CUSTOM */
    const char *want; /* a good value, for the error ("a port from 1 to 65535"); NULL:
                       * for ARGS_LONG, "an integer from LO to HI" */
    int *seen;        /* counts the times it was given, or NULL */
    const char *arg;  /* the value's name in --help ("PORT"), NULL without one */
    const char *help; /* its lines in --help after the flag (more lines after '\n'),
                       * or NULL when the text around the flags says it */
} args_flag;

/* A program's (or a subcommand's) command line: its flags and --help. */
typedef struct args_spec {
    const char *prog; /* "race2048-bench": begins every error line */
    const char
        *command; /* "server": the subcommand, named after prog in errors; or NULL */
    const char *version; /* what ARGS_VERSION prints after prog */
    /* --help is usage, about, one line per flag with help (at column, as
     * "  %-COLs %s"), then epilogue. usage's first line is also what follows
     * an error on stderr. */
    const char *usage;
    const char *about;
    int column;
    const char *epilogue;
    const args_flag *flags;
    size_t nflags;
    /* Arguments that are no flag ("FILE", "[HOST:]PORT"): at most max_positional
     * of them (0: none), named positional in errors. With stop_at_positional, the
     * first one ends the flags: it and everything after are the caller's (a
     * subcommand and its arguments). */
    const char *positional;
    int max_positional;
    bool stop_at_positional;
} args_spec;

/* The most positional arguments a spec may take. */
#define ARGS_POSITIONAL_MAX 4

/* What args_parse found besides the flags. */
typedef struct args_rest {
    const char *positional[ARGS_POSITIONAL_MAX];
    int npositional;
    int next; /* with stop_at_positional: argv's index after the first positional */
} args_rest;

/* The outcomes of args_parse. */
enum {
    ARGS_RUN = 0,  /* every flag is set: run */
    ARGS_DONE = 1, /* --help or --version printed: exit 0 */
    ARGS_BAD = -1, /* an error and the usage line are on stderr: exit 2 */
};

/* Parses argv[0, argc) (the arguments after the program's or subcommand's
 * name) in order: "--flag VALUE" or "--flag=VALUE", switches alone. Each error
 * names the flag: "PROG[: COMMAND]: --port: '0' is not valid; expected a port
 * from 1 to 65535", an unknown option, a missing value, a stray argument; the
 * usage line follows. rest may be NULL when the spec takes no positional. */
int args_parse(const args_spec *spec, int argc, char **argv, args_rest *rest);

/* An error found after parsing (two flags that exclude each other): prints
 * "PROG[: COMMAND]: " and the message, then the usage line, on stderr.
 * Returns ARGS_BAD. */
int args_fail(const args_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints spec's --help on stdout. */
void args_help(const args_spec *spec);

/* Parses a whole decimal number in [lo, hi]: true with *out set; false for
 * anything else (empty, trailing text, out of range), *out unchanged. */
bool args_parse_long(const char *text, long lo, long hi, long *out);

/* How many entries a flag table has. */
#define ARGS_COUNT(table) (sizeof(table) / sizeof((table)[0]))

#endif
