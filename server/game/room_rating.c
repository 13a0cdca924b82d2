/* room_rating.c - a rated race's update: places, skills, the accounts' new ratings. */
#include "room_internal.h"

/* ------------------------------------------------------------- ratings --- */

/* The fixed skill a server-run bot of each level takes part with in a rated
 * race (it never changes): measured by `race2048-bench bots --ratings --races
 * 200` (200 races between every two levels, the maximum likelihood of the
 * ratings' own two-player model, sigma 2, level 3 put at a new account's mu
 * 25). The one table; protocol/README.md (Ratings) lists it and how it was
 * found. */
static const rating_skill bot_skills[PROTO_BOT_LEVEL_MAX] = {
    {.mu = -9.44, .sigma = 2.0}, /* level 1 */
    {.mu = 7.55, .sigma = 2.0},  /* level 2 */
    {.mu = 25.00, .sigma = 2.0}, /* level 3 */
    {.mu = 43.06, .sigma = 2.0}, /* level 4 */
    {.mu = 73.56, .sigma = 2.0}, /* level 5 */
};

/* A rated race's update (protocol/README.md, Ratings), in results order:
 * places from the ranking (a full tie shares a place, so do players who left,
 * last; the winner alone is first), skills from the accounts (guests new,
 * bots their level's), rating_update, then the accounts get theirs. Fills
 * out (every player) and changes (the accounts, for `end`); returns how many
 * changes, or -1 when nothing was rated (no account, or a bad skill). */
int room_rate_race(room *r, const room_seat *const *order, uint64_t winner,
                   proto_record_rating *out, proto_rating_change *changes) {
    int n = r->nseats, nchanges = 0, place[PROTO_PLAYERS_MAX];
    rating_skill skill[PROTO_PLAYERS_MAX];
    bool any = false;
    for (int i = 0; i < n; i++) {
        const room_seat *s = order[i];
        bool tied = i > 0 && !(i == 1 && winner) &&
                    ((s->status == PROTO_LEFT && order[i - 1]->status == PROTO_LEFT) ||
                     room_rank_cmp(s, order[i - 1]) == 0);
        place[i] = tied ? place[i - 1] : i + 1;
        if (s->account)
            skill[i] = (rating_skill){.mu = s->account->mu, .sigma = s->account->sigma};
        else if (s->bot_level >= 1 && s->bot_level <= PROTO_BOT_LEVEL_MAX)
            skill[i] = bot_skills[s->bot_level - 1];
        else
            skill[i] = rating_initial();
        out[i] = (proto_record_rating){
            .id = s->id, .place = place[i], .mu0 = skill[i].mu, .sigma0 = skill[i].sigma};
        any |= s->account != NULL;
    }
    if (!any || !rating_update(skill, place, (size_t)n)) return -1;
    for (int i = 0; i < n; i++) {
        const room_seat *s = order[i];
        out[i].mu = skill[i].mu;
        out[i].sigma = skill[i].sigma;
        if (!s->account) continue;
        if (acct_apply_rating(&r->game->accounts, s->account, skill[i],
                              winner == s->id) != ACCT_OK)
            srv_log(SRV_LOG_ERROR, "room %s: the rating of %s could not be updated",
                    r->code, s->account->name);
        changes[nchanges++] =
            (proto_rating_change){.id = s->id,
                                  .name = s->account->name,
                                  .before = s->rating,
                                  .after = acct_rating(s->account),
                                  .mu = s->account->mu,
                                  .sigma = s->account->sigma,
                                  .provisional = acct_provisional(s->account)};
    }
    return nchanges;
}
