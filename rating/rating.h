/* rating.h - Weng-Lin ratings with the Plackett-Luce model: one race's update, pure.
 *
 * The contract (protocol/README.md, Ratings) fixes every constant and step, so
 * that anyone can re-compute an update from a finished game's record:
 * race2048-replay does. Plain data in, plain data out: no I/O, no globals, no
 * allocation; a race has at most RATING_MAX_PLAYERS players. */
#ifndef RACE2048_RATING_H
#define RACE2048_RATING_H

#include <stdbool.h>
#include <stddef.h>

#define RATING_MAX_PLAYERS 8
#define RATING_MU0         25.0
#define RATING_SIGMA0      (25.0 / 3.0)
#define RATING_BETA        (25.0 / 6.0)
#define RATING_TAU         (25.0 / 300.0)
#define RATING_EPSILON     1e-4
/* Rated races an account plays before it leaves "provisional" (and the boards). */
#define RATING_PROVISIONAL_GAMES 10

typedef struct rating_skill {
    double mu;
    double sigma;
} rating_skill;

/* A new account's (and every guest's) skill. */
rating_skill rating_initial(void);

/* Updates the n players of one race in place from their places (1 is best;
 * players in a full tie share a place, and so do those who left, last). Places
 * need not be dense. Returns false, changing nothing, for n outside
 * 2..RATING_MAX_PLAYERS, a place below 1, or a skill that is not finite with
 * sigma > 0. */
bool rating_update(rating_skill *players, const int *place, size_t n);

/* The integer shown to players: round(60 * mu), halves away from zero, clamped
 * to what an int holds. */
int rating_display(double mu);

#endif
