/* rating.c - Weng-Lin ratings with the Plackett-Luce model: one race's update, pure. */
#include "rating.h"

#include <assert.h>
#include <limits.h>
#include <math.h>

rating_skill rating_initial(void) {
    return (rating_skill){RATING_MU0, RATING_SIGMA0};
}

static bool skill_is_valid(rating_skill s) {
    return isfinite(s.mu) && isfinite(s.sigma) && s.sigma > 0;
}

bool rating_update(rating_skill *players, const int *place, size_t n) {
    if (n < 2 || n > RATING_MAX_PLAYERS) return false;
    for (size_t i = 0; i < n; i++)
        if (place[i] < 1 || !skill_is_valid(players[i])) return false;

    /* The deviation grows by tau before the race, so that no sigma reaches 0. */
    double var[RATING_MAX_PLAYERS];
    double sum_var = 0;
    for (size_t i = 0; i < n; i++) {
        var[i] = players[i].sigma * players[i].sigma + RATING_TAU * RATING_TAU;
        sum_var += var[i] + RATING_BETA * RATING_BETA;
    }
    const double c = sqrt(sum_var);

    /* exp(mu/c) shifted by the largest mu: every p is a ratio of these, so the
     * shift cancels and nothing overflows whatever the ratings are. */
    double mu_max = players[0].mu;
    for (size_t i = 1; i < n; i++)
        mu_max = fmax(mu_max, players[i].mu);
    double strength[RATING_MAX_PLAYERS];
    for (size_t i = 0; i < n; i++)
        strength[i] = exp((players[i].mu - mu_max) / c);

    /* C_q: the strength of everyone placed at q or below; A_q: q's tie count. */
    double below[RATING_MAX_PLAYERS];
    double tied[RATING_MAX_PLAYERS];
    for (size_t q = 0; q < n; q++) {
        below[q] = 0;
        tied[q] = 0;
        for (size_t i = 0; i < n; i++) {
            if (place[i] >= place[q]) below[q] += strength[i];
            if (place[i] == place[q]) tied[q] += 1;
        }
        assert(below[q] > 0 && tied[q] >= 1);
    }

    rating_skill out[RATING_MAX_PLAYERS];
    for (size_t i = 0; i < n; i++) {
        double omega_sum = 0, delta_sum = 0;
        for (size_t q = 0; q < n; q++) {
            if (place[q] > place[i]) continue;
            const double p = strength[i] / below[q];
            omega_sum += ((q == i ? 1.0 : 0.0) - p) / tied[q];
            delta_sum += p * (1 - p) / tied[q];
        }
        const double sigma = sqrt(var[i]);
        const double omega = var[i] / c * omega_sum;
        const double delta = sigma / c * (var[i] / (c * c)) * delta_sum;
        out[i].mu = players[i].mu + omega;
        out[i].sigma = sigma * sqrt(fmax(1 - delta, RATING_EPSILON));
    }
    for (size_t i = 0; i < n; i++)
        players[i] = out[i];
    return true;
}

int rating_display(double mu) {
    const double r = round(60 * mu);
    if (!(r > INT_MIN)) /* also NaN */
        return INT_MIN;
    if (r > INT_MAX) return INT_MAX;
    return (int)r;
}
