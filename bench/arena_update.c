/* arena_update.c - what one standings update and one pairing round cost with N entrants
 * (issue 28's figures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "message.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static proto_arena_row view(const arena_row *r) {
    return (proto_arena_row){.rank = r->rank,
                             .id = r->id,
                             .name = r->name,
                             .points = r->points,
                             .races = r->races,
                             .wins = r->wins,
                             .streak = r->streak,
                             .waiting = r->waiting};
}

/* An arena of n entrants who have raced a few rounds (spread standings). */
static arena *arena_of(size_t n, int64_t *now) {
    arena_config c = arena_config_default(4, 0, 3600000);
    c.max_entrants = n;
    arena *a = arena_new(&c);
    for (size_t i = 0; i < n; i++) {
        char name[17];
        snprintf(name, sizeof name, "p%u", (unsigned)(i % 1000000));
        if (arena_join(a, i + 1, name, 0) < 0) exit(1);
    }
    *now = 1000;
    for (int round = 0; round < 3; round++) {
        arena_pairing pr = arena_pair(a, *now);
        size_t count = pr.count;
        arena_group *groups = malloc((count ? count : 1) * sizeof *groups);
        if (!groups) exit(1);
        memcpy(groups, pr.groups, count * sizeof groups[0]);
        for (size_t g = 0; g < count; g++) {
            arena_place places[ARENA_MAX_PLAYERS];
            for (int k = 0; k < groups[g].entrants; k++)
                places[k] =
                    (arena_place){.id = groups[g].ids[k],
                                  .place = 1 + (int)((groups[g].ids[k] + round) %
                                                     (unsigned)groups[g].entrants)};
            arena_apply_race(a, groups[g].race, groups[g].entrants + groups[g].bots,
                             places, (size_t)groups[g].entrants, *now);
        }
        free(groups);
        *now += 100;
    }
    return a;
}

int main(int argc, char **argv) {
    size_t sizes[] = {10, 100, 1000};
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    printf("entrants  update_us(shared+each you)  per_entrant_us  shared_us  "
           "pairing_round_us\n");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        int64_t now;
        arena *a = arena_of(n, &now);
        double shared_total = 0, total = 0;
        for (int r = 0; r < reps; r++) {
            double t0 = now_us();
            arena_row rows[ARENA_TOP];
            proto_arena_row views[ARENA_TOP];
            size_t k = arena_standings(a, 0, rows, ARENA_TOP);
            for (size_t i = 0; i < k; i++)
                views[i] = view(&rows[i]);
            proto_arena_info info = {.code = "AB12CD",
                                     .name = "bench",
                                     .players = 4,
                                     .size = 4,
                                     .target = 2048,
                                     .entrants = n,
                                     .rows = views,
                                     .nrows = (int)k};
            size_t slen;
            char *shared = proto_enc_arena_shared(&info, &slen);
            double t1 = now_us();
            for (size_t i = 0; i < n; i++) {
                arena_row you;
                arena_row_of(a, i + 1, &you);
                proto_arena_row v = view(&you);
                size_t len;
                free(proto_arena_finish(shared, slen, &v, &len));
            }
            double t2 = now_us();
            free(shared);
            shared_total += t1 - t0;
            total += t2 - t0;
        }
        /* A pairing round with every entrant waiting (all come back at once). */
        arena_free(a);
        arena_config c = arena_config_default(4, 0, 3600000);
        c.max_entrants = n;
        double pair_total = 0;
        for (int r = 0; r < reps; r++) {
            arena *b = arena_new(&c);
            for (size_t i = 0; i < n; i++) {
                char name[17];
                snprintf(name, sizeof name, "p%u", (unsigned)(i % 1000000));
                arena_join(b, i + 1, name, 0);
            }
            double t0 = now_us();
            arena_pair(b, 1000);
            pair_total += now_us() - t0;
            arena_free(b);
        }
        printf("%8zu  %26.1f  %14.3f  %9.1f  %16.1f\n", n, total / reps,
               (total - shared_total) / reps / (double)n, shared_total / reps,
               pair_total / reps);
    }
    return 0;
}
