/* requests.c - each decoded request of a player to its action, move included. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "journal.h"
#include "lobby_internal.h"
#include "room.h"
#include "arena_host.h"

static void reply_error(srv_player *p, proto_err code, const char *message) {
    srv_send_error(p, code, message);
}

bool lobby_refuse_if_racing(srv_player *p) {
    if (!room_in_running_race(p)) return false;
    reply_error(p, PROTO_ERR_BUSY, "you are in a running race; send leave first");
    return true;
}

/* A request that starts a game spends one of its address's
 * --max-games-per-min (guard.c), so that one client cannot fill the journal
 * and push everyone's games out of `history`. Returns false after an error
 * rate_limited that says when the address may start another. */
bool lobby_allow_game(srv_player *p) {
    unsigned wait_s = p->sink.ops && p->sink.ops->game_start_wait
                          ? p->sink.ops->game_start_wait(p->sink.dest)
                          : 0;
    if (!wait_s) return true;
    char message[128];
    snprintf(message, sizeof message,
             "too many games started from your address; you may start another in %u s",
             wait_s);
    reply_error(p, PROTO_ERR_RATE_LIMITED, message);
    return false;
}

static void do_solo(srv_player *p, const proto_request *req) {
    if (lobby_refuse_if_racing(p) || !lobby_allow_game(p)) return;
    lobby_leave_quietly(p);
    room *r = room_new(p->game, true, &req->settings);
    if (!r) {
        reply_error(p, PROTO_ERR_BUSY, "the server could not start a game; try again");
        return;
    }
    if (req->has_seed) {
        r->seed = eng_seed_client(req->seed);
        r->seed_fixed = true;
    }
    room_add_player(r, p, false);
    room_start(r);
}

static void do_create(srv_player *p, const proto_request *req) {
    if (lobby_refuse_if_racing(p) || !lobby_allow_game(p)) return;
    lobby_leave_quietly(p);
    room *r = room_new(p->game, false, &req->settings);
    if (!r) {
        reply_error(p, PROTO_ERR_BUSY, "the server could not make a room; try again");
        return;
    }
    room_add_player(r, p, req->bots == 0);
    int refused = req->bots ? room_add_bots(r, req->bots, req->level, p, true) : 0;
    if (refused) {
        /* Nothing changes but the room that could not be filled. */
        room_leave(r, p);
        reply_error(p, PROTO_ERR_SERVER_FULL,
                    refused == -2 ? "your address has as many bots as one address may "
                                    "(--max-bots-per-ip); try later"
                                  : "the server runs as many bots as it takes "
                                    "(--max-bots); try later");
    }
}

static void do_join(srv_player *p, const proto_request *req) {
    room *r = room_find(p->game, req->room);
    if (!r) {
        reply_error(p, PROTO_ERR_ROOM_NOT_FOUND, "no room has that code");
        return;
    }
    if (r->state != ROOM_WAITING) {
        reply_error(p, PROTO_ERR_ALREADY_STARTED,
                    "that room's race has started; watch it instead");
        return;
    }
    if (lobby_refuse_if_racing(p)) return;
    if (p->room == r) { /* already seated here: just say where things stand */
        room_reconnect(r, p);
        return;
    }
    lobby_leave_quietly(p);
    room_add_player(r, p, true);
}

static void do_quick(srv_player *p, const proto_request *req) {
    if (lobby_refuse_if_racing(p) || !lobby_allow_game(p)) return;
    lobby_leave_quietly(p);
    lobby_quick(p, &req->settings);
}

static void do_watch(srv_player *p, const proto_request *req) {
    room *r = room_find(p->game, req->room);
    if (!r || r->state == ROOM_ENDED) {
        reply_error(p, PROTO_ERR_ROOM_NOT_FOUND,
                    "no room with that code is waiting or running");
        return;
    }
    if (lobby_refuse_if_racing(p)) return;
    if (p->room == r && r->nseats == 1) {
        /* Leaving its seat would free the room under the watch. */
        reply_error(p, PROTO_ERR_ROOM_NOT_FOUND,
                    "you are alone in that room: it closes when you leave it");
        return;
    }
    unsigned most = p->game->cfg->max_spectators;
    char full[160];
    snprintf(full, sizeof full,
             "room %s has %u spectators, as many as a room takes; try again later",
             r->code, most);
    if (most && r->fan.n >= most && p->watching != r) {
        /* Said before leaving anything: a refused watch changes nothing. */
        reply_error(p, PROTO_ERR_ROOM_FULL, full);
        return;
    }
    lobby_leave_quietly(p);
    /* Leaving may have freed a room kept only for its spectators' last
     * broadcasts (the memory stays until its close callback). */
    int rc = r->closing ? -3 : room_watch(r, p);
    if (rc == -1)
        reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
    else if (rc == -2)
        reply_error(p, PROTO_ERR_ROOM_FULL, full);
    else if (rc < 0)
        reply_error(p, PROTO_ERR_ROOM_NOT_FOUND, "that room has just closed");
}

static void do_move(srv_player *p, const proto_request *req) {
    room *r = p->room;
    if (!r || r->state != ROOM_RUNNING) {
        reply_error(p, PROTO_ERR_NOT_PLAYING, "you are not in a running game");
        return;
    }
    if (r->ends_at && uv_now(p->game->loop) >= r->ends_at) {
        /* The time is up even if the timer has not run yet this turn. */
        room_time_up(r);
        reply_error(p, PROTO_ERR_NOT_PLAYING, "the race's time is up");
        return;
    }
    proto_status st = room_seat_of(p)->status;
    if (st != PROTO_PLAYING && st != PROTO_WON) {
        reply_error(p, PROTO_ERR_NOT_PLAYING, "your game is over; you cannot move");
        return;
    }
    room_move(r, p, req->dir, req->has_seq, req->seq);
}

static void do_leave(srv_player *p) {
    lobby_leave_quietly(p);
    size_t len;
    char *line = proto_enc_left(&len);
    srv_send_line(p, SRV_MSG_LEFT, line, len);
}

static void do_ping(srv_player *p, const proto_request *req) {
    size_t len;
    char *line = proto_enc_pong(req->ping_t, &len);
    srv_send_line(p, SRV_MSG_PONG, line, len);
}

static void do_rematch(srv_player *p) {
    room *r = p->room;
    if (!r || r->solo || r->state != ROOM_ENDED) {
        reply_error(p, PROTO_ERR_NOT_PLAYING,
                    "rematch is for the players of a race that ended");
        return;
    }
    if (r->settings.arena[0]) {
        reply_error(p, PROTO_ERR_NOT_PLAYING,
                    "an arena race has no rematch: the arena pairs you again");
        return;
    }
    if (!room_seat_of(p)->rematch && !lobby_allow_game(p))
        return; /* asking twice is free */
    room_rematch(r, p);
}

static void do_history(srv_player *p, const proto_request *req) {
    const proto_game_record *games[PROTO_HISTORY_MAX];
    int limit = req->limit < PROTO_HISTORY_MAX ? req->limit : PROTO_HISTORY_MAX;
    int n = journal_history(p->game->journal, limit, games);
    size_t len;
    char *line = n < 0 ? NULL : proto_enc_history(games, n, &len);
    if (!line) {
        reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_msg m = {.type = SRV_MSG_HISTORY,
                 .json = srv_buf_take(line, len),
                 .games = games,
                 .ngames = n};
    srv_send(p, &m);
    if (m.json) srv_buf_unref(m.json);
}

static void do_replay(srv_player *p, const proto_request *req) {
    const proto_game_record *g =
        req->has_game ? journal_replay(p->game->journal, req->game) : NULL;
    size_t len;
    char *line = g ? proto_enc_replay(g, &len) : NULL;
    if (line) {
        srv_msg m = {.type = SRV_MSG_REPLAY,
                     .json = srv_buf_take(line, len),
                     .games = &g,
                     .ngames = 1};
        srv_send(p, &m);
        if (m.json) srv_buf_unref(m.json);
    } else if (g) {
        reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
    } else {
        reply_error(p, PROTO_ERR_GAME_NOT_FOUND,
                    "no finished game with that id is kept (see history)");
    }
}

char *lobby_leaderboard_line(game *g, int limit, size_t *len) {
    const acct_account *top[PROTO_LEADERBOARD_MAX];
    proto_board_row rows[PROTO_LEADERBOARD_MAX];
    size_t max = (size_t)(limit > 0 ? limit : 20);
    if (max > PROTO_LEADERBOARD_MAX) max = PROTO_LEADERBOARD_MAX;
    size_t n = g->accounts_ready ? acct_top(&g->accounts, 1, top, max) : 0;
    for (size_t i = 0; i < n; i++)
        rows[i] = (proto_board_row){.rank = i + 1,
                                    .name = top[i]->name,
                                    .rating = acct_rating(top[i]),
                                    .games = top[i]->games};
    return proto_enc_leaderboard(rows, (int)n, len);
}

char *lobby_profile_line(game *g, const char *name, bool *found, size_t *len) {
    const acct_account *a = g->accounts_ready ? acct_find(&g->accounts, name) : NULL;
    *found = a != NULL;
    if (!a) return NULL;
    proto_profile_best best[ACCT_SIZES];
    int nbest = 0;
    for (int k = 0; k < ACCT_SIZES; k++)
        if (a->best[k].game)
            best[nbest++] = (proto_profile_best){.size = k + ACCT_SIZE_MIN,
                                                 .score = a->best[k].score,
                                                 .max_tile = a->best[k].max_tile,
                                                 .game = a->best[k].game};
    uint64_t recent[ACCT_RECENT];
    int32_t chart[ACCT_CHART];
    proto_profile prof = {.name = a->name,
                          .rating = lobby_rating_of(a),
                          .races = a->games,
                          .wins = a->wins,
                          .best = best,
                          .nbest = nbest,
                          .recent = recent,
                          .nrecent = (int)acct_recent(a, recent),
                          .chart = chart,
                          .nchart = (int)acct_chart(a, chart)};
    return proto_enc_profile(&prof, len);
}

char *lobby_daily_board_line(game *g, int size, const char *date, int limit,
                             bool *bad_date, size_t *len) {
    int64_t now = game_daily_now_ms(g);
    int32_t today = daily_day_of_ms(now), day = today;
    *bad_date = date && date[0] && !daily_day_parse(date, &day);
    if (*bad_date) return NULL;
    char text[11];
    daily_day_format(day, text);
    const daily_entry *top[PROTO_LEADERBOARD_MAX];
    proto_daily_row rows[PROTO_LEADERBOARD_MAX];
    size_t max = (size_t)(limit > 0 ? limit : 20);
    if (max > PROTO_LEADERBOARD_MAX) max = PROTO_LEADERBOARD_MAX;
    size_t n = g->accounts_ready ? daily_top(&g->daily, day, size, 1, top, max) : 0;
    for (size_t i = 0; i < n; i++)
        rows[i] = (proto_daily_row){.rank = i + 1,
                                    .name = top[i]->account->name,
                                    .score = top[i]->result.score,
                                    .max_tile = top[i]->result.max_tile,
                                    .moves = top[i]->result.moves,
                                    .game = top[i]->result.game};
    jrn_daily_seed ds;
    bool revealed = day < today && journal_daily_get(g->journal, day, size, &ds);
    return proto_enc_daily_board(size, text, rows, (int)n, revealed ? &ds.seed : NULL,
                                 revealed ? ds.salt : NULL, len);
}

/* `daily`: today's daily game of that size, for an account that has not begun it.
 * In cluster mode the game starts only once the cluster granted the account
 * that day and size (game.h's daily_claim; lobby_daily_claimed). */
static void do_daily(srv_player *p, const proto_request *req) {
    game *g = p->game;
    if (!p->account || !g->accounts_ready) {
        reply_error(
            p, PROTO_ERR_ACCOUNT_NEEDED,
            "only accounts play the daily challenge: register, or hello with key");
        return;
    }
    if (lobby_refuse_if_racing(p)) return;
    int64_t now = game_daily_now_ms(g);
    int32_t day = daily_day_of_ms(now);
    int size = req->settings.size;
    if (daily_played(&g->daily, day, size, p->account)) {
        reply_error(p, PROTO_ERR_DAILY_PLAYED,
                    "this account has played today's daily game of that size");
        return;
    }
    if (!lobby_allow_game(p)) return;
    if (g->daily_claim) {
        /* Out of its queue or finished room now, as the start would: nothing
         * can seat it in a race while the claim is out (its input is held). */
        lobby_leave_quietly(p);
        g->daily_claim(g->account_changed_ctx, p, day, &req->settings);
        return;
    }
    lobby_daily_claimed(p, day, &req->settings);
}

void lobby_daily_claimed(srv_player *p, int32_t day, const proto_settings *settings) {
    game *g = p->game;
    assert(p->account && g->accounts_ready);
    int size = settings->size;
    if (day != daily_day_of_ms(game_daily_now_ms(g))) { /* claimed before midnight */
        reply_error(p, PROTO_ERR_BUSY, "the day changed meanwhile; send daily again");
        return;
    }
    /* Granted twice on this node (two connections of the account at once):
     * the second finds the first's game. */
    if (daily_played(&g->daily, day, size, p->account)) {
        reply_error(p, PROTO_ERR_DAILY_PLAYED,
                    "this account has played today's daily game of that size");
        return;
    }
    jrn_daily_seed ds;
    if (!journal_daily_get(g->journal, day, size, &ds)) {
        /* The day's first game: a seed is drawn (from --seed's sequence if set). */
        eng_seed fresh = game_next_seed(g);
        if (journal_daily(g->journal, day, size, &fresh, &ds) < 0) {
            reply_error(p, PROTO_ERR_BUSY,
                        "the server could not start a game; try again");
            return;
        }
    }
    lobby_leave_quietly(p);
    room *r = room_new(g, true, settings);
    if (!r) {
        reply_error(p, PROTO_ERR_BUSY, "the server could not start a game; try again");
        return;
    }
    daily_prune(&g->daily, day - 7); /* the days the journal keeps (journal.c) */
    int begun = daily_begin(&g->daily, day, size, p->account);
    if (begun != DAILY_OK) {
        room_abandon(r);
        if (begun == DAILY_PLAYED)
            reply_error(p, PROTO_ERR_DAILY_PLAYED,
                        "this account has played today's daily game of that size");
        else
            reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    game_daily_entry(g, day, size, p->account, NULL);
    r->seed = ds.seed;
    r->seed_fixed = true;
    memcpy(r->salt, ds.salt, sizeof r->salt);
    r->daily = true;
    r->daily_day = day;
    r->daily_reveal_ms = daily_day_start_ms(day + 1);
    room_add_player(r, p, false);
    room_start(r);
}

/* `leaderboard`: the rating board's top rows, from the ordered index
 * (O(log n + limit)); the daily board's from its own. */
static void do_leaderboard(srv_player *p, const proto_request *req) {
    size_t len;
    if (req->board == PROTO_BOARD_DAILY) {
        bool bad_date;
        char *line = lobby_daily_board_line(p->game, req->settings.size, req->date,
                                            req->limit, &bad_date, &len);
        if (bad_date)
            reply_error(p, PROTO_ERR_BAD_MESSAGE, "date must be a day as \"YYYY-MM-DD\"");
        else if (!line)
            reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        else
            srv_send_line(p, SRV_MSG_ACCOUNT, line, len);
        return;
    }
    char *line = lobby_leaderboard_line(p->game, req->limit, &len);
    if (!line) {
        reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_send_line(p, SRV_MSG_ACCOUNT, line, len);
}

/* `profile`: an account's rating, races, bests and recent games, from memory. */
static void do_profile(srv_player *p, const proto_request *req) {
    bool found;
    size_t len;
    char *line = lobby_profile_line(p->game, req->name, &found, &len);
    if (!found) {
        reply_error(p, PROTO_ERR_PLAYER_NOT_FOUND, "no account has that name");
        return;
    }
    if (!line) {
        reply_error(p, PROTO_ERR_BUSY, "the server is short of memory");
        return;
    }
    srv_send_line(p, SRV_MSG_ACCOUNT, line, len);
}

/* An entrant that asks for something else leaves its arena's pool; a `leave`
 * during an arena race forfeits it and leaves the pool too (Arenas). */
static void arena_side_effects(srv_player *p, const proto_request *req) {
    if (!p->arena) return;
    switch (req->type) {
    case PROTO_REQ_SOLO:
    case PROTO_REQ_CREATE:
    case PROTO_REQ_JOIN:
    case PROTO_REQ_QUICK:
    case PROTO_REQ_WATCH:
    case PROTO_REQ_DAILY:
        if (!room_in_running_race(p)) arena_host_busy(p);
        break;
    case PROTO_REQ_LEAVE:
        if (room_in_running_race(p) && p->room->arena) arena_host_busy(p);
        break;
    default:
        break;
    }
}

void lobby_request(srv_player *p, proto_request *req) {
    /* A first reply of any other kind comes after the automatic welcome. */
    if (req->type != PROTO_REQ_HELLO && req->type != PROTO_REQ_RESUME) lobby_welcome(p);
    arena_side_effects(p, req);
    switch (req->type) {
    case PROTO_REQ_SOLO:
        do_solo(p, req);
        break;
    case PROTO_REQ_CREATE:
        do_create(p, req);
        break;
    case PROTO_REQ_JOIN:
        do_join(p, req);
        break;
    case PROTO_REQ_QUICK:
        do_quick(p, req);
        break;
    case PROTO_REQ_WATCH:
        do_watch(p, req);
        break;
    case PROTO_REQ_MOVE:
        do_move(p, req);
        break;
    case PROTO_REQ_LEAVE:
        do_leave(p);
        break;
    case PROTO_REQ_ROOMS:
        lobby_send_rooms(p, NULL, 0);
        break;
    case PROTO_REQ_PING:
        do_ping(p, req);
        break;
    case PROTO_REQ_REMATCH:
        do_rematch(p);
        break;
    case PROTO_REQ_HISTORY:
        do_history(p, req);
        break;
    case PROTO_REQ_REPLAY:
        do_replay(p, req);
        break;
    case PROTO_REQ_HELLO:
        lobby_hello(p, req);
        break;
    case PROTO_REQ_LEADERBOARD:
        do_leaderboard(p, req);
        break;
    case PROTO_REQ_PROFILE:
        do_profile(p, req);
        break;
    case PROTO_REQ_DAILY:
        do_daily(p, req);
        break;
    case PROTO_REQ_ARENA_CREATE:
    case PROTO_REQ_ARENAS:
    case PROTO_REQ_ARENA_JOIN:
    case PROTO_REQ_ARENA_LEAVE:
    case PROTO_REQ_ARENA_RESULTS:
        arena_host_request(p, req);
        break;
    case PROTO_REQ_REGISTER: /* the session's (it needs the address's limit) */
    case PROTO_REQ_RESUME:
    case PROTO_REQ_NONE:
        break;
    }
}
