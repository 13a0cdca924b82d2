/* bench_lookups.c - server CPU per request (resume, join, watch, rooms, ping) with a
 * crowd of N players in process; prints one row per N. Not a test: a measurement.
 *
 *     cmake --build build --target bench_lookups && build/tests/server/bench_lookups 4000
 * 100000
 *
 * The 100 last players race in 50 running (listed) races; the rest play solo. */
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
    printf("%9s %7s", "players", "rooms");
    for (size_t k = 0; k < NOPS; k++)
        printf(" %8s", ops[k].name);
    printf("   (us of server CPU per request, best of 5)\n");
    for (int a = 1; a < argc; a++) {
        unsigned n = (unsigned)strtoul(argv[a], NULL, 10);
        if (crowd_build(n, 100) < 0) return 1;
        printf("%9u %7u", crowd_players(), crowd_rooms());
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
            printf(" %8.2f", best);
        }
        printf("\n");
        fflush(stdout);
        if (crowd_free() != 0) fprintf(stderr, "the loop did not close cleanly\n");
    }
    return 0;
}
