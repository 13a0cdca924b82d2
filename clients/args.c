/* args.c - one table-driven command-line parser for the programs in clients/. */
#include "args.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool args_parse_long(const char *text, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The usage's first line, on stderr. */
static void usage_line(const args_spec *spec) {
    const char *nl = strchr(spec->usage, '\n');
    size_t n = nl ? (size_t)(nl - spec->usage) : strlen(spec->usage);
    fprintf(stderr, "%.*s\n", (int)n, spec->usage);
}

__attribute__((format(printf, 2, 0))) static int vfail(const args_spec *spec,
                                                       const char *fmt, va_list ap) {
    if (spec->command)
        fprintf(stderr, "%s: %s: ", spec->prog, spec->command);
    else
        fprintf(stderr, "%s: ", spec->prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    usage_line(spec);
    return ARGS_BAD;
}

int args_fail(const args_spec *spec, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(spec, fmt, ap);
    va_end(ap);
    return rc;
}

void args_help(const args_spec *spec) {
    fputs(spec->usage, stdout);
    if (spec->about) fputs(spec->about, stdout);
    for (size_t i = 0; i < spec->nflags; i++) {
        const args_flag *f = &spec->flags[i];
        if (!f->help) continue;
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", f->name, f->arg ? " " : "",
                 f->arg ? f->arg : "");
        /* Each line of the help at the column, the first beside the flag. */
        const char *line = f->help;
        for (bool first = true; first || *line; first = false) {
            const char *nl = strchr(line, '\n');
            int n = nl ? (int)(nl - line) : (int)strlen(line);
            printf("  %-*s %.*s\n", spec->column, first ? left : "", n, line);
            line += n + (nl != NULL);
        }
    }
    if (spec->epilogue) fputs(spec->epilogue, stdout);
}

/* The table's flag spelled a (n bytes of it), or NULL. */
static const args_flag *find(const args_spec *spec, const char *a, size_t n) {
    for (size_t i = 0; i < spec->nflags; i++) {
        const args_flag *f = &spec->flags[i];
        if ((strlen(f->name) == n && !strncmp(a, f->name, n)) ||
            (f->alias && strlen(f->alias) == n && !strncmp(a, f->alias, n)))
            return f;
    }
    return NULL;
}

/* Stores value v of flag f; false if v is not one it takes. */
static bool store(const args_flag *f, const char *v) {
    switch (f->kind) {
    case ARGS_LONG:
        return args_parse_long(v, f->lo, f->hi, f->to);
    case ARGS_STRING:
        *(const char **)f->to = v;
        return true;
    case ARGS_CUSTOM:
        return f->parse(v, f->to);
    case ARGS_BOOL:
    case ARGS_HELP:
    case ARGS_VERSION:
        break;
    }
    assert(!"a flag without a value has none to store");
    return false;
}

/* One flag at argv[*i] (its value, if any, after '=' or next); moves *i past it. */
static int one_flag(const args_spec *spec, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
    const args_flag *f = find(spec, a, eq ? (size_t)(eq - a) : strlen(a));
    if (!f) return args_fail(spec, "unknown option '%s'", a);
    if (f->seen) ++*f->seen;
    bool takes = f->kind == ARGS_LONG || f->kind == ARGS_STRING || f->kind == ARGS_CUSTOM;
    if (!takes && eq) return args_fail(spec, "%s takes no value", f->name);
    if (f->kind == ARGS_HELP) {
        args_help(spec);
        return ARGS_DONE;
    }
    if (f->kind == ARGS_VERSION) {
        printf("%s %s\n", spec->prog, spec->version);
        return ARGS_DONE;
    }
    if (f->kind == ARGS_BOOL) {
        *(bool *)f->to = true;
        return ARGS_RUN;
    }
    const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
    if (!v)
        return args_fail(spec, "%s needs a value%s%s%s", f->name, f->arg ? " (" : "",
                         f->arg ? f->arg : "", f->arg ? ")" : "");
    if (store(f, v)) return ARGS_RUN;
    if (f->want)
        return args_fail(spec, "%s: '%s' is not valid; expected %s", f->name, v, f->want);
    return args_fail(spec, "%s: '%s' is not valid; expected an integer from %ld to %ld",
                     f->name, v, f->lo, f->hi);
}

int args_parse(const args_spec *spec, int argc, char **argv, args_rest *rest) {
    assert(spec->max_positional <= ARGS_POSITIONAL_MAX);
    assert(rest || spec->max_positional == 0);
    if (rest) *rest = (args_rest){.next = argc};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] != '\0') {
            int rc = one_flag(spec, argc, argv, &i);
            if (rc != ARGS_RUN) return rc;
            continue;
        }
        if (!rest || rest->npositional == spec->max_positional)
            return args_fail(spec, "unexpected argument '%s'", a);
        rest->positional[rest->npositional++] = a;
        if (spec->stop_at_positional) {
            rest->next = i + 1;
            break;
        }
    }
    return ARGS_RUN;
}
