/* room_end.c - the end rules of a race, its ranking and verdict, its `end` and record. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daily.h"
#include "journal.h"
#include "room_internal.h"
#include "arena_host.h"

/* ------------------------------------------------------------ end rules --- */

void room_update_status(room *r, room_seat *seat) {
    if (seat->status == PROTO_LEFT) return;
    if (eng_is_over(&seat->board))
        seat->status = PROTO_OVER;
    else if (eng_has_won(&seat->board, r->settings.target))
        seat->status = PROTO_WON;
    else
        seat->status = PROTO_PLAYING;
}

/* True while a person still takes part in the race: a seat that is not a
 * bot's, still held by its player (connected, or within its grace period)
 * and not left. */
static bool person_in_race(const room *r) {
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        if (!seat->bot_level && seat->player && seat->status != PROTO_LEFT) return true;
    }
    return false;
}

/* Nobody is left for the bots to race (protocol/README.md, Bots): every bot
 * still moving leaves, as a person's leave would be told and recorded, so the
 * race ends `all_over` at once and its bots are dismissed with the room.
 * Without this, bots whose people left would race on for ever. */
static void bots_leave_alone(room *r) {
    srv_log(SRV_LOG_DEBUG, "room %s: no person left in the race; its bots leave",
            r->code);
    for (int i = 0; i < r->nseats; i++) {
        room_seat *seat = &r->seats[i];
        if (!seat->bot_level || seat->status == PROTO_OVER || seat->status == PROTO_LEFT)
            continue;
        room_seat_left(r, i);
        room_broadcast_player(r, seat, NULL);
    }
}

/* Applies the end rules of protocol/README.md that a change of status can trigger,
 * in their order. `mover` reached the target if it is non-NULL and won. */
void room_check_end(room *r, const room_seat *mover) {
    if (r->state != ROOM_RUNNING) return;
    if (r->solo) {
        if (r->seats[0].status == PROTO_OVER || r->seats[0].status == PROTO_LEFT)
            room_end(r, PROTO_END_ALL_OVER, r->seats[0].id);
        return;
    }
    if (mover && eng_has_won(&mover->board, r->settings.target)) {
        room_end(r, PROTO_END_TARGET, mover->id);
        return;
    }
    int done = 0, left = 0;
    const room_seat *last_playing = NULL;
    for (int i = 0; i < r->nseats; i++) {
        proto_status st = r->seats[i].status;
        if (st == PROTO_OVER || st == PROTO_LEFT) done++;
        if (st == PROTO_LEFT) left++;
        if (st == PROTO_PLAYING || st == PROTO_WON) last_playing = &r->seats[i];
    }
    if (done == r->nseats) {
        room_end(r, PROTO_END_ALL_OVER, 0);
    } else if (left == r->nseats - 1 && last_playing) {
        room_end(r, PROTO_END_FORFEIT, last_playing->id);
    } else if (!person_in_race(r)) {
        bots_leave_alone(r);
        room_end(r, PROTO_END_ALL_OVER, 0);
    }
}

/* --------------------------------------------------------------- ending --- */

/* Ranking for all_over and time: players who left last, then higher score,
 * higher max tile, fewer moves; ids keep the order stable. */
int room_rank_cmp(const room_seat *a, const room_seat *b) {
    bool al = a->status == PROTO_LEFT, bl = b->status == PROTO_LEFT;
    if (al != bl) return al ? 1 : -1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    uint64_t am = eng_max_tile(&a->board), bm = eng_max_tile(&b->board);
    if (am != bm) return am > bm ? -1 : 1;
    if (a->moves != b->moves) return a->moves < b->moves ? -1 : 1;
    return 0;
}

static int rank_qsort(const void *a, const void *b) {
    const room_seat *x = *(const room_seat *const *)a, *y = *(const room_seat *const *)b;
    int c = room_rank_cmp(x, y);
    if (c) return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Puts the seats in `order` as the results list them, best first, and returns
 * the winner: for all_over and time the ranking decides (a full tie at the top
 * is a draw, everyone having left no win); a winner heads the list whatever
 * the ranking says. */
static uint64_t rank_seats(const room *r, proto_end_reason reason, uint64_t winner,
                           const room_seat **order) {
    for (int i = 0; i < r->nseats; i++)
        order[i] = &r->seats[i];
    qsort(order, (size_t)r->nseats, sizeof order[0], rank_qsort);
    if ((reason == PROTO_END_ALL_OVER || reason == PROTO_END_TIME) && !r->solo) {
        bool tie = r->nseats > 1 && room_rank_cmp(order[0], order[1]) == 0;
        winner = tie || order[0]->status == PROTO_LEFT ? 0 : order[0]->id;
    }
    for (int i = 1; winner && i < r->nseats; i++) {
        if (order[i]->id != winner) continue;
        const room_seat *w = order[i];
        memmove(&order[1], &order[0], (size_t)i * sizeof order[0]);
        order[0] = w;
        break;
    }
    return winner;
}

/* The seed is a secret until the end went out; even then only at debug
 * level, as logs are often kept and shared. */
static void log_end(const room *r, proto_end_reason reason, uint64_t winner) {
    char seed_text[ENG_SEED_TEXT_MAX];
    eng_seed_format(&r->seed, seed_text, sizeof seed_text);
    if (r->daily) { /* the day's seed: never in a log */
        srv_log(SRV_LOG_DEBUG, "daily game of player %llu ended",
                (unsigned long long)r->seats[0].id);
        return;
    }
    if (r->solo) {
        srv_log(SRV_LOG_DEBUG, "solo game of player %llu ended: seed %s salt %s",
                (unsigned long long)r->seats[0].id, seed_text, r->salt);
        return;
    }
    srv_log(SRV_LOG_DEBUG, "room %s ended: seed %s salt %s", r->code, seed_text, r->salt);
    srv_log(SRV_LOG_DEBUG, "room %s: race ended (%s), winner %llu", r->code,
            proto_end_reason_name(reason), (unsigned long long)winner);
}

/* Cluster mode: one account's part of a finished game, as the change the
 * cluster's copy of the account takes (a rated race with the places and the
 * skills before, so that the update can be made again on a fresher copy).
 * rated: every player's update in results order (nrated of them), NULL if
 * the game rated nothing; me: the account's index in it. The one conversion
 * of room_end's and of a finished game taken over (game_account_changes_of). */
static void send_account_change(game *g, const char *name, uint64_t game_id, int size,
                                uint64_t score, uint32_t max_tile, bool counts_for_best,
                                int me, bool won, const proto_record_rating *rated,
                                int nrated) {
    assert(g->account_changed);
    acct_change c = {.game = game_id,
                     .size = size,
                     .score = score > UINT32_MAX ? UINT32_MAX : (uint32_t)score,
                     .max_tile = max_tile,
                     .counts_for_best = counts_for_best,
                     .me = me,
                     .won = won};
    snprintf(c.name, sizeof c.name, "%s", name);
    if (rated && nrated >= 2 && nrated <= ACCT_RACE_MAX && me >= 0 && me < nrated) {
        c.nrace = nrated;
        for (int k = 0; k < nrated; k++) {
            c.place[k] = rated[k].place;
            c.skill[k] = (rating_skill){.mu = rated[k].mu0, .sigma = rated[k].sigma0};
        }
    }
    g->account_changed(g->account_changed_ctx, &c);
}

static void account_changes(room *r, const room_seat *const *order, uint64_t winner,
                            const proto_record_rating *rated) {
    for (int i = 0; r->game_id && i < r->nseats; i++) {
        const room_seat *s = order[i];
        if (!s->account) continue;
        send_account_change(r->game, s->account->name, r->game_id, r->settings.size,
                            s->score, (uint32_t)eng_max_tile(&s->board),
                            r->solo && r->seed.kind == ENG_SEED_SERVER, i,
                            winner == s->id, rated, r->nseats);
    }
}

void game_account_changes_of(game *g, const proto_game_record *rec) {
    if (!g->account_changed || !rec->game) return;
    /* As the record's reader counts it (jacct_apply_game). */
    bool solo_server_seed = !rec->room[0] && rec->seed.kind == ENG_SEED_SERVER;
    bool rated = rec->nratings == rec->nresults;
    for (int i = 0; i < rec->naccounts; i++) {
        uint64_t id = rec->accounts[i].id;
        for (int k = 0; k < rec->nresults; k++) {
            const proto_result *res = &rec->results[k];
            if (res->id != id) continue;
            /* The ratings are in results order, as room_end wrote them. */
            bool in_step = rated && rec->ratings[k].id == id;
            send_account_change(g, rec->accounts[i].name, rec->game, rec->size,
                                res->score, (uint32_t)eng_max_tile(&res->board),
                                solo_server_seed, k, rec->winner == id,
                                in_step ? rec->ratings : NULL, rec->nratings);
            break;
        }
    }
}

void room_end(room *r, proto_end_reason reason, uint64_t winner) {
    if (r->state != ROOM_RUNNING) return;
    r->state = ROOM_ENDED;
    if ((unsigned)reason < 4) r->game->metrics->games_finished[reason]++;
    srv_list_remove(&r->listed);
    if (!r->solo) game_rooms_changed(r->game);
    uv_timer_stop(&r->timer);

    const room_seat *order[PROTO_PLAYERS_MAX];
    winner = rank_seats(r, reason, winner, order);
    proto_player views[PROTO_PLAYERS_MAX];
    for (int i = 0; i < r->nseats; i++)
        room_seat_view(order[i], &views[i]);
    proto_record_account accounts[PROTO_PLAYERS_MAX];
    int naccounts = 0;
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *s = order[i];
        if (!s->account) continue;
        accounts[naccounts].id = s->id;
        memcpy(accounts[naccounts++].name, s->account->name, sizeof accounts[0].name);
    }
    proto_record_rating rated[PROTO_PLAYERS_MAX];
    proto_rating_change changes[PROTO_PLAYERS_MAX];
    int nchanges = r->settings.rated && !r->solo && r->nseats >= 2
                       ? room_rate_race(r, order, winner, rated, changes)
                       : -1;
    size_t len;
    /* A rated race's end always says `ratings`: empty when no account played. */
    bool rated_end = r->settings.rated && !r->solo;
    char *line = proto_enc_end_rated(
        room_code_or_null(r), reason, winner, views, r->nseats, &r->seed, r->salt,
        rated_end ? changes : NULL, nchanges > 0 ? nchanges : 0, &len);
    /* A daily game's seed is the day's: secret until the day is over. */
    if (line && r->daily)
        line = proto_line_daily(line, &len, NULL, true, r->daily_reveal_ms);
    /* The deciding move's `state` went out already; `end` waits for its
     * record's group commit (at most --journal-sync-ms), so no crash can
     * lose or re-open a game whose seed somebody has seen. */
    jrn_end ev = {.reason = reason,
                  .winner = winner,
                  .results = views,
                  .nresults = r->nseats,
                  .ended_ms = journal_wall_ms(),
                  .accounts = accounts,
                  .naccounts = naccounts,
                  .ratings = rated,
                  .nratings = nchanges >= 0 ? r->nseats : 0};
    const room_seat *player = &r->seats[0];
    if (r->daily && player->account && r->game->accounts_ready) {
        daily_result result = {
            .score = player->score > UINT32_MAX ? UINT32_MAX : (uint32_t)player->score,
            .max_tile = (uint32_t)eng_max_tile(&player->board),
            .moves = player->moves,
            .end_ms = journal_wall_ms(),
            .game = r->game_id};
        /* Recorded before the end, so durable when the end is sent. */
        game_daily_entry(r->game, r->daily_day, r->settings.size, player->account,
                         &result);
        daily_finish(&r->game->daily, r->daily_day, r->settings.size, player->account,
                     &result);
    }
    /* Written whatever became of the line: the text view below shows the
     * seed even when the JSON `end` could not be made (out of memory), and a
     * seed shown must be a seed recorded. */
    uint64_t durable_at = journal_game_end(r->jgame, &ev);
    /* The game in its accounts' recent games (and a solo game with a server
     * seed as a best), as recovery does from the record (journal_accounts.c). */
    for (int i = 0; r->game_id && i < r->nseats; i++) {
        const room_seat *s = &r->seats[i];
        if (!s->account) continue;
        uint64_t score = s->score > UINT32_MAX ? UINT32_MAX : s->score;
        acct_record_game(s->account, r->game_id, r->settings.size, (uint32_t)score,
                         (uint32_t)eng_max_tile(&s->board),
                         r->solo && r->seed.kind == ENG_SEED_SERVER);
    }
    if (r->game->account_changed)
        account_changes(r, order, winner, nchanges >= 0 ? rated : NULL);
    srv_msg m = {.type = SRV_MSG_END,
                 .durable_at = durable_at,
                 .json = srv_buf_take(line, len),
                 .subject = winner,
                 .reason = reason,
                 .view = room_view(r)};
    if (m.view) { /* the verdict, for text screens that outlive the room */
        m.view->has_verdict = true;
        for (int i = 0; i < r->nseats; i++)
            m.view->ranking[i] = (uint8_t)(order[i] - r->seats);
        if (!r->daily) {
            m.view->seed = r->seed;
            memcpy(m.view->salt, r->salt, sizeof m.view->salt);
        }
    }
    room_broadcast(r, &m, NULL);
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
    log_end(r, reason, winner);
    /* An arena race's result counts and its entrants wait again, before
     * disconnected players are let go below. */
    if (r->arena) arena_host_race_end(r, order, winner);

    /* Spectators are done once they have the end (fanout.c); so are
     * disconnected players (nothing to resume) and, in a solo game, the
     * player. Connected racers stay for rematch. */
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (!p || (player_connected(p) && !r->solo)) continue;
        room_seat_unlink(r, i);
        if (!player_connected(p)) srv_player_release(p);
    }
    room_maybe_free(r);
}

/* ---------------------------------------------------------------- timer --- */

void room_time_up(room *r) {
    room_end(r, PROTO_END_TIME, 0);
    room_maybe_free(r);
}
