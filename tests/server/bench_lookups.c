/* bench_lookups.c - server CPU per request (resume, join, watch, rooms, ping) with a
 * crowd of N players in process; one key=value line per N. A measurement, not a
 * test: see BENCHMARKS.md. The last 100 players race in 50 running (listed)
 * races; the others play solo. */
#include <stdio.h>
#include <stdlib.h>

#include "crowd.h"

/* Requests that look something up, each failing the way a guesser's would. */
static const struct {
    const char *name, *line;
} ops[] = {
    {"ping", "{\"type\":\"ping\",\"t\":1}"},
    {"resume", "{\"type\":\"resume\",\"token\":\"0123456789abcdef0123456789abcdef\"}"},
    {"join", "{\"type\":\"join\",\"room\":\"ZZZZZZ\"}"},
    {"watch", "{\"type\":\"watch\",\"room\":\"ZZZZZZ\"}"},
    {"rooms", "{\"type\":\"rooms\"}"},
};
#define NOPS (sizeof ops / sizeof ops[0])

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_lookups N [N...] (players; prints us per request)\n");
        return 2;
    }
    for (int a = 1; a < argc; a++) {
        char *end;
        unsigned long n = strtoul(argv[a], &end, 10);
        if (*end || n < 1 || n > 10000000) {
            fprintf(stderr, "bench_lookups: '%s' is not a player count\n", argv[a]);
            return 2;
        }
        if (crowd_build((unsigned)n, 100) < 0) return 1;
        printf("lookups players=%u rooms=%u", crowd_players(), crowd_rooms());
        for (size_t k = 0; k < NOPS; k++) {
            double best = -1;
            for (int rep = 0; rep < 5; rep++) {
                double us = crowd_cpu_us(ops[k].line, 2000);
                if (us < 0) {
                    fprintf(stderr, "\nthe measuring connection closed during %s\n",
                            ops[k].name);
                    return 1;
                }
                if (best < 0 || us < best) best = us;
            }
            printf(" %s_us=%.2f", ops[k].name, best);
        }
        printf("\n");
        fflush(stdout);
        if (crowd_free() != 0) {
            fprintf(stderr, "bench_lookups: the loop did not close cleanly\n");
            return 1;
        }
    }
    return 0;
}
