/* room.c - rooms and games: seats, moves, the end rules and ranking, spectators, rematch.
 */
#include "room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daily.h"
#include "journal.h"
#include "metrics.h"
#include "resume.h"

/* Room codes avoid look-alike characters (0/O, 1/I) so people can read them out. */
static const char code_alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
#define CODE_LEN         5
#define CLUSTER_CODE_LEN 6

static void room_end(room *r, proto_end_reason reason, uint64_t winner);
static void room_rearm(room *r);
static void room_maybe_free(room *r);

/* ------------------------------------------------------------- sending --- */

/* Sends m to every connected seated player (except `except`, always a seated
 * one) at once, and to every spectator through the fan-out (a share per loop
 * turn, in order: fanout.h). */
static void room_broadcast(room *r, const srv_msg *m, const srv_player *except) {
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (p && p != except) srv_send(p, m);
    }
    fanout_send(&r->fan, m);
}

void room_seat_view(const room_seat *seat, proto_player *out) {
    *out = (proto_player){.id = seat->id,
                          .name = seat->name,
                          .board = &seat->game.board,
                          .score = seat->game.score,
                          .moves = seat->game.moves,
                          .status = seat->status,
                          .bot = seat->bot_level != 0,
                          .has_rating = seat->account != NULL,
                          .rating = seat->rating};
}

static void seat_views(const room *r, proto_player *views) {
    for (int i = 0; i < r->nseats; i++)
        room_seat_view(&r->seats[i], &views[i]);
}

static const char *room_code_or_null(const room *r) {
    return r->solo ? NULL : r->code;
}

/* The room as the messages about it show it, for transports that draw (text
 * mode reads no room): made once per broadcast. NULL if memory runs out (a
 * receiver then keeps what it had). */
/* Only text mode draws from views (a text racer keeps the last one, text
 * spectators share renderings keyed by them): a move in a room with neither
 * text racers nor spectators makes none, which is most moves. */
static bool views_wanted(const room *r) {
    if (r->fan.n) return true;
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player && r->seats[i].player->wants_resume_code) return true;
    return false;
}

static srv_view *room_view(const room *r) {
    srv_view *v = srv_view_new(r->nseats);
    if (!v) return NULL;
    memcpy(v->code, r->code, sizeof v->code);
    v->solo = r->solo;
    v->state = r->state == ROOM_WAITING   ? SRV_VIEW_WAITING
               : r->state == ROOM_RUNNING ? SRV_VIEW_RUNNING
                                          : SRV_VIEW_ENDED;
    v->settings = r->settings;
    memcpy(v->commit, r->commit, sizeof v->commit);
    v->ends_at = r->ends_at;
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        srv_view_seat *shown = &v->seats[i];
        shown->id = seat->id;
        memcpy(shown->name, seat->name, sizeof shown->name);
        shown->board = seat->game.board;
        shown->score = seat->game.score;
        shown->moves = seat->game.moves;
        shown->status = seat->status;
        shown->seated = seat->player != NULL;
        shown->connected = seat->connected;
        shown->rematch = seat->rematch;
        shown->bot = seat->bot_level != 0;
        shown->grace_until = seat->grace_until;
    }
    return v;
}

static srv_buf *enc_room(const room *r) {
    proto_player views[PROTO_PLAYERS_MAX];
    seat_views(r, views);
    size_t len;
    char *line = proto_enc_room(r->code, views, r->nseats, &r->settings, &len);
    return srv_buf_take(line, len);
}

static void broadcast_room(room *r) {
    srv_msg m = {.type = SRV_MSG_ROOM, .json = enc_room(r), .view = room_view(r)};
    room_broadcast(r, &m, NULL);
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
}

/* A seat's resume code is the game's to give: a player whose connection
 * shows one (text mode) gets the code of its race seat; nobody else has one,
 * as every code is one more to guess. */
static void give_resume_code(const room *r, srv_player *p) {
    if (p->wants_resume_code && !r->solo)
        resume_code_assign(p);
    else
        resume_code_forget(p);
}

/* `start` for one seated recipient (`you`), with its resume code if it wants one. */
static void send_start(room *r, srv_player *to, srv_view *view) {
    give_resume_code(r, to);
    proto_player views[PROTO_PLAYERS_MAX];
    seat_views(r, views);
    size_t len;
    char *line = proto_enc_start(room_code_or_null(r), to->id, &r->settings, views,
                                 r->nseats, r->commit, &len);
    if (line && r->daily) {
        char day[11];
        daily_day_format(r->daily_day, day);
        line = proto_line_daily(line, &len, day, false, 0);
    }
    srv_msg m = {.type = SRV_MSG_START, .json = srv_buf_take(line, len), .view = view};
    memcpy(m.resume_code, to->resume_code, sizeof m.resume_code);
    srv_send(to, &m);
    if (m.json) srv_buf_unref(m.json);
}

/* `start` to the spectators: one line for all of them (`you` is absent). */
static void broadcast_start(room *r, srv_view *view) {
    if (!r->fan.n) {
        fanout_touch(&r->fan); /* the boards changed: no snapshot still holds */
        return;
    }
    proto_player views[PROTO_PLAYERS_MAX];
    seat_views(r, views);
    size_t len;
    char *line = proto_enc_start(room_code_or_null(r), 0, &r->settings, views, r->nseats,
                                 r->commit, &len);
    srv_msg m = {.type = SRV_MSG_START, .json = srv_buf_take(line, len), .view = view};
    fanout_send(&r->fan, &m);
    if (m.json) srv_buf_unref(m.json);
}

/* `player` about seat to everyone but `except`. */
static void broadcast_player(room *r, const room_seat *seat, const srv_player *except) {
    size_t len;
    char *line = proto_enc_player(r->code, seat->id, seat->connected, seat->status, &len);
    srv_msg m = {.type = SRV_MSG_PLAYER,
                 .json = srv_buf_take(line, len),
                 .subject = seat->id,
                 .view = room_view(r)};
    room_broadcast(r, &m, except);
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
}

/* The room changed in a way no protocol message tells (a player left an
 * ended race): its seated players get its view, for the transports that
 * draw it (JSON ones send nothing). */
static void send_view(room *r) {
    srv_msg m = {.type = SRV_MSG_VIEW, .view = room_view(r)};
    if (!m.view) return;
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player) srv_send(r->seats[i].player, &m);
    srv_view_unref(m.view);
}

/* ------------------------------------------------------------ lifetime --- */

/* Cluster mode: 6 characters, 30 bits, of which the node's number is 12, so
 * that no two nodes can make the same code; the bits are mixed (an odd
 * multiplier mod 2^30, then a shift-xor: both invertible) so that codes do
 * not look alike per node. */
static void make_cluster_code(unsigned node, const unsigned char rnd[CODE_LEN],
                              char *out) {
    uint32_t v = (uint32_t)node << 18 | ((uint32_t)rnd[0] << 10 | (uint32_t)rnd[1] << 2 |
                                         (uint32_t)(rnd[2] & 3));
    v = (v * 0x2545F491u + 0x1B873593u) & 0x3FFFFFFFu;
    v ^= v >> 15; /* the high bits reach the low ones too */
    for (int i = 0; i < CLUSTER_CODE_LEN; i++)
        out[i] = code_alphabet[(v >> (5 * (CLUSTER_CODE_LEN - 1 - i))) & 31];
    out[CLUSTER_CODE_LEN] = '\0';
}

static int make_code(game *g, char *out) {
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char rnd[CODE_LEN];
        if (srv_random(rnd, sizeof rnd) < 0) return -1;
        if (g->node_number) {
            make_cluster_code(g->node_number, rnd, out);
        } else {
            for (int i = 0; i < CODE_LEN; i++)
                out[i] = code_alphabet[rnd[i] % 32];
            out[CODE_LEN] = '\0';
        }
        /* A code another node runs (a room it took over) is taken too. */
        if (!room_find(g, out) &&
            !(g->code_taken.taken && g->code_taken.taken(g->code_taken.ctx, out)))
            return 0;
    }
    return -1;
}

room *room_new(game *g, bool solo, const proto_settings *settings) {
    return room_new_coded(g, solo, settings, NULL);
}

room *room_new_coded(game *g, bool solo, const proto_settings *settings,
                     const char *code) {
    room *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->game = g;
    r->solo = solo;
    r->settings = *settings;
    if (solo) r->settings.players = 1;
    srv_list_init(&r->listed);
    if (!solo) {
        int hash_oom = 0;
        if (code)
            snprintf(r->code, sizeof r->code, "%s", code);
        else if (make_code(g, r->code) < 0) {
            free(r);
            return NULL;
        }
        HASH_ADD(hh, g->by_code, code, strlen(r->code), r);
        if (hash_oom) {
            free(r);
            return NULL;
        }
        srv_list_push(&g->waiting_rooms, &r->listed);
        game_rooms_changed(g);
    }
    uv_timer_init(g->loop, &r->timer);
    r->timer.data = r;
    fanout_init(&r->fan, r);
    srv_list_push(&g->rooms, &r->link);
    if (!solo)
        srv_log(SRV_LOG_DEBUG, "room %s made: %d players, size %d, target %u", r->code,
                r->settings.players, r->settings.size, r->settings.target);
    return r;
}

room *room_find(game *g, const char *code) {
    room *r = NULL;
    HASH_FIND(hh, g->by_code, code, strlen(code), r);
    return r;
}

static void on_room_closed(uv_handle_t *h) {
    room *r = h->data;
    journal_game_free(r->jgame);
    r->jgame = NULL;
    fanout_free(&r->fan);
    free(r);
}

/* Bots stay seated after a race for a rematch only while a person does:
 * once none is left they are dismissed (their sink lets them go). */
static void dismiss_bots_if_alone(room *r) {
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player && !r->seats[i].bot_level) return;
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (!p) continue;
        r->seats[i].player = NULL;
        p->room = NULL;
        player_dismiss(p, SINK_DISMISSED);
    }
}

/* Frees the room once no player is seated: players of an ended race stay
 * seated until they leave, for `rematch`. Spectators stop watching, once
 * the broadcasts on their way to them are out (room_fanout_drained). */
static void room_maybe_free(room *r) {
    if (r->closing) return;
    if (r->state != ROOM_RUNNING) dismiss_bots_if_alone(r);
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player) return;
    if (r->state == ROOM_RUNNING || fanout_busy(&r->fan)) return;
    fanout_detach_all(&r->fan);
    r->closing = true;
    if (!r->solo) HASH_DELETE(hh, r->game->by_code, r);
    srv_list_remove(&r->listed);
    if (!r->solo) game_rooms_changed(r->game);
    srv_list_remove(&r->link);
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, on_room_closed);
}

/* -------------------------------------------------------------- seating --- */

static void seat_init(room_seat *seat, srv_player *p) {
    memset(seat, 0, sizeof *seat);
    seat->player = p;
    seat->id = p->id;
    memcpy(seat->name, p->name, sizeof seat->name);
    seat->status = PROTO_PLAYING;
    seat->connected = p->sink.ops != NULL;
    seat->bot_level = p->bot_level;
}

int room_add_player(room *r, srv_player *p, bool announce) {
    if (r->nseats >= PROTO_PLAYERS_MAX) return -1;
    room_seat *seat = &r->seats[r->nseats];
    seat_init(seat, p);
    p->room = r;
    p->seat = r->nseats++;
    if (!r->solo) game_rooms_changed(r->game);
    if (r->solo || !announce) return 0;
    broadcast_room(r);
    if (r->nseats >= r->settings.players) room_start(r);
    return 0;
}

/* Removes seat i from a waiting room, keeping the others' indices right. */
static void remove_seat(room *r, int i) {
    memmove(&r->seats[i], &r->seats[i + 1],
            (size_t)(r->nseats - i - 1) * sizeof r->seats[0]);
    r->nseats--;
    game_rooms_changed(r->game);
    for (int k = i; k < r->nseats; k++)
        if (r->seats[k].player) r->seats[k].player->seat = k;
}

/* The journal's start event: the game as it begins, and who plays it. */
static void start_event(const room *r, jrn_start *ev) {
    *ev = (jrn_start){.solo = r->solo,
                      .settings = r->settings,
                      .seed = r->seed,
                      .nseats = r->nseats,
                      .started_ms = journal_wall_ms(),
                      .daily = r->daily,
                      .daily_day = r->daily_day};
    memcpy(ev->room, r->code, sizeof ev->room);
    memcpy(ev->salt, r->salt, sizeof ev->salt);
    memcpy(ev->commit, r->commit, sizeof ev->commit);
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        const srv_player *p = seat->player;
        jrn_seat_info *info = &ev->seats[i];
        info->id = seat->id;
        info->bot_level = seat->bot_level;
        if (seat->account)
            memcpy(info->account, seat->account->name, sizeof info->account);
        memcpy(info->name, seat->name, sizeof info->name);
        if (p && p->token[0])
            journal_token_hash(p->token, info->token_hash);
        else if (p && p->token_hash)
            memcpy(info->token_hash, p->token_hash, sizeof info->token_hash);
    }
}

void room_start(room *r) {
    game *g = r->game;
    if (!r->seed_fixed) r->seed = game_next_seed(g);
    if ((!r->daily && srv_random_hex(r->salt, 16) < 0) ||
        proto_commit(r->salt, &r->seed, r->commit) < 0) {
        /* Without a commitment the game would not be verifiable; the OS random
         * source and SHA-256 do not fail in practice, so log loudly. */
        srv_log(SRV_LOG_ERROR, "room %s: cannot make the seed commitment", r->code);
    }
    uint64_t now = uv_now(g->loop);
    for (int i = 0; i < r->nseats; i++) {
        eng_game_new(&r->seats[i].game, r->settings.size, &r->seed);
        r->seats[i].status = PROTO_PLAYING;
        r->seats[i].last_move = now;
    }
    r->state = ROOM_RUNNING;
    g->metrics->games_started++;
    if (!r->solo) { /* listed from now on as a race to watch */
        srv_list_remove(&r->listed);
        srv_list_push(&g->running_rooms, &r->listed);
        game_rooms_changed(g);
    }
    r->ends_at = r->settings.time_limit ? now + r->settings.time_limit * 1000ull : 0;
    for (int i = 0; i < r->nseats; i++) { /* who plays for an account, rated as now */
        room_seat *seat = &r->seats[i];
        seat->account = seat->player ? seat->player->account : NULL;
        seat->rating = seat->account ? acct_rating(seat->account) : 0;
    }
    jrn_start ev;
    start_event(r, &ev);
    r->jgame = journal_game_start(g->journal, &ev);
    r->game_id = r->jgame ? ev.game : 0;
    srv_view *view = room_view(r);
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player) send_start(r, r->seats[i].player, view);
    broadcast_start(r, view);
    srv_view_unref(view);
    if (!r->solo) srv_log(SRV_LOG_DEBUG, "room %s: race started", r->code);
    room_rearm(r);
}

bool room_in_running_race(const srv_player *p) {
    return p->room && !p->room->solo && p->room->state == ROOM_RUNNING;
}

/* ---------------------------------------------------------------- moves --- */

static void update_status(room *r, room_seat *seat) {
    if (seat->status == PROTO_LEFT) return;
    if (eng_is_over(&seat->game.board))
        seat->status = PROTO_OVER;
    else if (eng_has_won(&seat->game.board, r->settings.target))
        seat->status = PROTO_WON;
    else
        seat->status = PROTO_PLAYING;
}

static void seat_left(room *r, int i);

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
        seat_left(r, i);
        broadcast_player(r, seat, NULL);
    }
}

/* Applies the end rules of protocol/README.md that a change of status can trigger,
 * in their order. `mover` reached the target if it is non-NULL and won. */
static void check_end(room *r, const room_seat *mover) {
    if (r->state != ROOM_RUNNING) return;
    if (r->solo) {
        if (r->seats[0].status == PROTO_OVER || r->seats[0].status == PROTO_LEFT)
            room_end(r, PROTO_END_ALL_OVER, r->seats[0].id);
        return;
    }
    if (mover && eng_has_won(&mover->game.board, r->settings.target)) {
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

void room_move(room *r, srv_player *p, eng_dir dir, bool has_seq, uint64_t seq) {
    /* A move read from a client is timed until its `state` is handed out. */
    uint64_t started = r->game->metrics->move_started_ns;
    r->game->metrics->move_started_ns = 0;
    room_seat *seat = &r->seats[p->seat];
    eng_move_result res = eng_game_move(&seat->game, dir, r->game->tables);
    if (res.moved) {
        r->game->metrics->moves++;
        journal_move(r->jgame, p->seat, dir);
        update_status(r, seat);
        if (seat->status == PROTO_OVER) journal_seat(r->jgame, p->seat, JRN_SEAT_OVER);
        /* The timer is not re-armed: when it fires early it finds nothing
         * due and arms itself for the next deadline. */
        seat->last_move = uv_now(r->game->loop);
    }
    proto_player view;
    room_seat_view(seat, &view);
    size_t len;
    char *line = proto_enc_state(&view, has_seq, seq, dir, res.moved, res.gained,
                                 &res.spawn, &len);
    /* In cluster mode a moved board is shown only within the sync window of
     * its replication (journal_show_pos): held while replication lags. */
    srv_msg m = {.type = SRV_MSG_STATE,
                 .json = srv_buf_take(line, len),
                 .subject = seat->id,
                 .moved = res.moved,
                 .view = views_wanted(r) ? room_view(r) : NULL,
                 .durable_at = res.moved ? journal_show_pos(r->game->journal) : 0};
    if (res.moved) {
        room_broadcast(r, &m, NULL);
        if (started) metrics_move_observe(r->game->metrics, uv_hrtime() - started);
    } else {
        srv_send(p, &m);
    }
    if (m.json) srv_buf_unref(m.json);
    srv_view_unref(m.view);
    if (res.moved) check_end(r, seat);
}

/* --------------------------------------------------------------- ending --- */

/* Ranking for all_over and time: players who left last, then higher score,
 * higher max tile, fewer moves; ids keep the order stable. */
static int rank_cmp(const room_seat *a, const room_seat *b) {
    bool al = a->status == PROTO_LEFT, bl = b->status == PROTO_LEFT;
    if (al != bl) return al ? 1 : -1;
    if (a->game.score != b->game.score) return a->game.score > b->game.score ? -1 : 1;
    uint64_t am = eng_max_tile(&a->game.board), bm = eng_max_tile(&b->game.board);
    if (am != bm) return am > bm ? -1 : 1;
    if (a->game.moves != b->game.moves) return a->game.moves < b->game.moves ? -1 : 1;
    return 0;
}

static int rank_qsort(const void *a, const void *b) {
    const room_seat *x = *(const room_seat *const *)a, *y = *(const room_seat *const *)b;
    int c = rank_cmp(x, y);
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
        bool tie = r->nseats > 1 && rank_cmp(order[0], order[1]) == 0;
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
            reason == PROTO_END_TARGET     ? "target"
            : reason == PROTO_END_ALL_OVER ? "all_over"
            : reason == PROTO_END_TIME     ? "time"
                                           : "forfeit",
            (unsigned long long)winner);
}

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
static int rate_race(room *r, const room_seat *const *order, uint64_t winner,
                     proto_record_rating *out, proto_rating_change *changes) {
    int n = r->nseats, nchanges = 0, place[PROTO_PLAYERS_MAX];
    rating_skill skill[PROTO_PLAYERS_MAX];
    bool any = false;
    for (int i = 0; i < n; i++) {
        const room_seat *s = order[i];
        bool tied = i > 0 && !(i == 1 && winner) &&
                    ((s->status == PROTO_LEFT && order[i - 1]->status == PROTO_LEFT) ||
                     rank_cmp(s, order[i - 1]) == 0);
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

static void room_end(room *r, proto_end_reason reason, uint64_t winner) {
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
                       ? rate_race(r, order, winner, rated, changes)
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
        daily_result result = {.score = player->game.score > UINT32_MAX
                                            ? UINT32_MAX
                                            : (uint32_t)player->game.score,
                               .max_tile = (uint32_t)eng_max_tile(&player->game.board),
                               .moves = player->game.moves,
                               .end_ms = journal_wall_ms(),
                               .game = r->game_id};
        /* Recorded before the end, so durable when the end is sent. */
        journal_daily_entry(r->game->journal, r->daily_day, r->settings.size,
                            player->account, &result);
        daily_finish(&r->game->daily, r->daily_day, r->settings.size, player->account,
                     &result);
    }
    uint64_t durable_at = line ? journal_game_end(r->jgame, &ev) : 0;
    /* The game in its accounts' recent games (and a solo game with a server
     * seed as a best), as recovery does from the record (journal_accounts.c). */
    for (int i = 0; r->game_id && i < r->nseats; i++) {
        const room_seat *s = &r->seats[i];
        if (!s->account) continue;
        uint64_t score = s->game.score > UINT32_MAX ? UINT32_MAX : s->game.score;
        acct_record_game(s->account, r->game_id, r->settings.size, (uint32_t)score,
                         (uint32_t)eng_max_tile(&s->game.board),
                         r->solo && r->seed.kind == ENG_SEED_SERVER);
    }
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

    /* Spectators are done once they have the end (fanout.c); so are
     * disconnected players (nothing to resume) and, in a solo game, the
     * player. Connected racers stay for rematch. */
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (!p || (player_connected(p) && !r->solo)) continue;
        r->seats[i].player = NULL;
        p->room = NULL;
        if (!player_connected(p)) srv_player_release(p);
    }
    room_maybe_free(r);
}

/* ---------------------------------------------------------------- timer --- */

void room_time_up(room *r) {
    room_end(r, PROTO_END_TIME, 0);
    room_maybe_free(r);
}

static void walk_away(room *r, int i);

/* Seat i has left the running game (a player already `over` stays `over`), and
 * the journal says so, or a restart would give the seat back. */
static void seat_left(room *r, int i) {
    if (r->seats[i].status != PROTO_OVER) r->seats[i].status = PROTO_LEFT;
    journal_seat(r->jgame, i, JRN_SEAT_LEFT);
}

/* When seat's --move-timeout runs out (0 = never): only racers still playing. */
static uint64_t move_deadline(const room *r, const room_seat *seat) {
    uint64_t timeout = r->game->cfg.move_timeout_ms;
    /* Bots are never walked away: they move while their race runs. */
    if (!timeout || r->solo || !seat->player || seat->status != PROTO_PLAYING ||
        seat->bot_level)
        return 0;
    return seat->last_move + timeout;
}

static void on_room_timer(uv_timer_t *t) {
    room *r = t->data;
    /* After a pause, a resume or a move that arrived in time is read first. */
    if (game_defer_until_io(r->game, t, on_room_timer)) return;
    uint64_t now = uv_now(r->game->loop);
    if (r->state != ROOM_RUNNING) return;
    bool gave_up = false;
    for (int i = 0; i < r->nseats && r->state == ROOM_RUNNING; i++) {
        room_seat *seat = &r->seats[i];
        uint64_t moves_by = move_deadline(r, seat);
        if (moves_by && moves_by <= now) {
            walk_away(r, i);
            if (r->state != ROOM_RUNNING) break;
        }
        if (seat->connected || !seat->player || seat->grace_until > now) continue;
        /* The grace period is over: the seat is given up. */
        srv_player *p = seat->player;
        seat->player = NULL;
        p->room = NULL;
        seat_left(r, i);
        srv_log(SRV_LOG_DEBUG, "room %s: player %llu did not come back", r->code,
                (unsigned long long)seat->id);
        broadcast_player(r, seat, seat->player);
        srv_player_release(p);
        gave_up = true;
    }
    /* Once for every seat given up now: seats whose grace ends together (a race
     * restored from the journal that nobody came back to) all leave, rather than
     * the last one checked winning by forfeit. */
    if (gave_up && r->state == ROOM_RUNNING) check_end(r, NULL);
    if (r->state == ROOM_RUNNING && r->ends_at && r->ends_at <= now)
        room_end(r, PROTO_END_TIME, 0);
    if (r->state == ROOM_RUNNING)
        room_rearm(r);
    else
        room_maybe_free(r);
}

/* Arms the timer for the earliest of the time limit, the grace expiries and
 * the move timeouts. */
static void room_rearm(room *r) {
    uint64_t next = r->ends_at;
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        if (seat->player && !seat->connected && (!next || seat->grace_until < next))
            next = seat->grace_until;
        uint64_t moves_by = move_deadline(r, seat);
        if (moves_by && (!next || moves_by < next)) next = moves_by;
    }
    if (!next) {
        uv_timer_stop(&r->timer);
        return;
    }
    uint64_t now = uv_now(r->game->loop);
    uv_timer_start(&r->timer, on_room_timer, next > now ? next - now : 0, 0);
}

/* -------------------------------------------------------- leaving, etc. --- */

/* Detaches p from seat i of an ended or waiting room. */
static void unseat(room *r, int i) {
    srv_player *p = r->seats[i].player;
    if (p) p->room = NULL;
    r->seats[i].player = NULL;
}

static void rematch_progress(room *r);

/* Seat i of a running race made no move for --move-timeout: it is treated as
 * if its grace period had run out, so nobody holds a race by walking away. */
static void walk_away(room *r, int i) {
    room_seat *seat = &r->seats[i];
    srv_log(SRV_LOG_DEBUG, "room %s: player %llu made no move for %llus; it has left",
            r->code, (unsigned long long)seat->id,
            (unsigned long long)(r->game->cfg.move_timeout_ms / 1000));
    if (!seat->connected) { /* the grace expiry that follows gives the seat up */
        seat->grace_until = 0;
        return;
    }
    /* Still connected: as a leave, except that the walker is told too. */
    seat_left(r, i);
    broadcast_player(r, seat, NULL);
    check_end(r, NULL); /* the walker still gets the `end` if this ends it */
    if (seat->player) unseat(r, i);
}

void room_leave(room *r, srv_player *p) {
    int i = p->seat;
    room_seat *seat = &r->seats[i];
    switch (r->state) {
    case ROOM_WAITING:
        unseat(r, i);
        remove_seat(r, i);
        /* Also when it is now empty: its spectators learn that nobody is
         * left, since the room is freed next and no `start` will come. */
        broadcast_room(r);
        break;
    case ROOM_RUNNING:
        seat_left(r, i);
        seat->connected = p->sink.ops != NULL;
        if (!r->solo) broadcast_player(r, seat, seat->player);
        check_end(r, NULL); /* the leaver still gets the `end` if this ends it */
        if (seat->player) unseat(r, i);
        /* A leaver already `over` was still seated above: were they the last
         * person, only bots race on now. */
        check_end(r, NULL);
        if (r->state == ROOM_RUNNING) room_rearm(r);
        break;
    case ROOM_ENDED:
        unseat(r, i);
        send_view(r); /* who is left to rematch with */
        rematch_progress(r);
        break;
    }
    room_maybe_free(r);
}

void room_disconnect(room *r, srv_player *p) {
    room_seat *seat = &r->seats[p->seat];
    if (r->state != ROOM_RUNNING) {
        room_leave(r, p);
        return;
    }
    seat->connected = false;
    seat->grace_until = uv_now(r->game->loop) + r->game->cfg.grace_ms;
    journal_seat(r->jgame, p->seat, JRN_SEAT_DISCONNECTED);
    if (!r->solo) broadcast_player(r, seat, seat->player);
    room_rearm(r);
}

void room_reconnect(room *r, srv_player *p) {
    room_seat *seat = &r->seats[p->seat];
    if (r->state == ROOM_WAITING) {
        seat->connected = true;
        broadcast_room(r);
        return;
    }
    bool was_connected = seat->connected;
    seat->connected = true;
    srv_view *view = room_view(r);
    send_start(r, p, view);
    srv_view_unref(view);
    if (!was_connected && !r->solo) broadcast_player(r, seat, seat->player);
    room_rearm(r);
}

/* ------------------------------------------------------------------ bots --- */

int room_add_bots(room *r, int n, int level, const srv_player *owner, bool announce) {
    game *g = r->game;
    srv_player *made[PROTO_PLAYERS_MAX];
    if (n > r->settings.players - r->nseats || !g->bots.make) return -1;
    int refused = g->bots.room_for(g->bots.ctx, owner, n);
    if (refused) return refused;
    for (int i = 0; i < n; i++) {
        made[i] = g->bots.make(g->bots.ctx, level, owner);
        if (!made[i]) { /* all or none */
            while (i-- > 0)
                player_dismiss(made[i], SINK_DISMISSED);
            return -1;
        }
    }
    for (int i = 0; i < n; i++)
        room_add_player(r, made[i], announce); /* announced: the last may start it */
    return 0;
}

void room_abandon(room *r) {
    room_restore_abandon(r);
}

/* --------------------------------------------------------------- rematch --- */

/* Starts the rematch once every still-connected player of the ended race has
 * asked; until then tells them who is waiting. */
static void rematch_progress(room *r) {
    srv_player *ready[PROTO_PLAYERS_MAX];
    int asked = 0, present = 0;
    for (int i = 0; i < r->nseats; i++) {
        const room_seat *seat = &r->seats[i];
        if (!seat->player || !seat->player->sink.ops || seat->bot_level) continue;
        present++;
        if (seat->rematch) ready[asked++] = seat->player;
    }
    if (asked == 0) return;
    /* Bots always agree: they come along once the people have asked. */
    int people = asked;
    for (int i = 0; i < r->nseats && asked == present; i++)
        if (r->seats[i].player && r->seats[i].bot_level)
            ready[asked++] = r->seats[i].player;
    if (people < present) {
        /* Show who is waiting: the players who asked (bots always have), out
         * of those present. */
        proto_player views[PROTO_PLAYERS_MAX];
        int n = 0, bots = 0;
        for (int i = 0; i < r->nseats; i++) {
            const room_seat *seat = &r->seats[i];
            if (seat->player && seat->bot_level) bots++;
            if (seat->player && (seat->rematch || seat->bot_level))
                room_seat_view(seat, &views[n++]);
        }
        proto_settings shown = r->settings;
        shown.players = present + bots; /* need: everyone still here */
        size_t len;
        char *line = proto_enc_room(r->code, views, n, &shown, &len);
        /* The view is the ended race's: who asked is on its seats. */
        srv_msg m = {
            .type = SRV_MSG_ROOM, .json = srv_buf_take(line, len), .view = room_view(r)};
        for (int i = 0; i < r->nseats; i++)
            if (r->seats[i].player) srv_send(r->seats[i].player, &m);
        if (m.json) srv_buf_unref(m.json);
        srv_view_unref(m.view);
        return;
    }
    /* Alone, the asker waits in a new room that others can join by its code;
     * that room's own `room` message is the reply (not one naming this room,
     * which is freed below). */
    proto_settings settings = r->settings;
    if (asked >= PROTO_PLAYERS_MIN) settings.players = asked;
    room *next = room_new(r->game, false, &settings);
    if (!next) {
        for (int i = 0; i < asked; i++)
            srv_send_error(ready[i], PROTO_ERR_BUSY,
                           "the server could not make the rematch room");
        return;
    }
    journal_rematch(r->jgame, next->code);
    for (int i = 0; i < asked; i++) {
        unseat(r, ready[i]->seat);
        room_add_player(next, ready[i], asked < PROTO_PLAYERS_MIN);
    }
    if (asked >= PROTO_PLAYERS_MIN) {
        /* Whoever asks gets `room` (protocol/README.md), the last asker too: the new
         * room, full, then its `start`. */
        broadcast_room(next);
        room_start(next);
    }
    room_maybe_free(r);
}

void room_rematch(room *r, srv_player *p) {
    r->seats[p->seat].rematch = true;
    rematch_progress(r);
}

/* --------------------------------------------------------------- restore --- */

void room_restore_begin(room *r) {
    uint64_t now = uv_now(r->game->loop);
    for (int i = 0; i < r->nseats; i++) {
        eng_game_new(&r->seats[i].game, r->settings.size, &r->seed);
        r->seats[i].status = PROTO_PLAYING;
        r->seats[i].last_move = now; /* the move timeout counts from the restart */
    }
    r->state = ROOM_RUNNING;
    if (!r->solo) {
        srv_list_remove(&r->listed);
        srv_list_push(&r->game->running_rooms, &r->listed);
    }
}

void room_restore_finish(room *r, const bool *left, uint64_t remaining_ms) {
    uint64_t now = uv_now(r->game->loop);
    const room_seat *winner = NULL;
    for (int i = 0; i < r->nseats; i++) {
        room_seat *seat = &r->seats[i];
        update_status(r, seat);
        seat->connected = false;
        seat->grace_until = now + r->game->cfg.grace_ms;
        if (left[i]) {
            if (seat->status != PROTO_OVER) seat->status = PROTO_LEFT;
            srv_player *p = seat->player;
            seat->player = NULL;
            p->room = NULL;
            srv_player_release(p);
        } else {
            /* People on telnet and netcat resume with the code they saw before
             * (bots come back by themselves: they have no code). */
            if (!seat->bot_level) resume_code_assign(seat->player);
            if (!r->solo && !winner && eng_has_won(&seat->game.board, r->settings.target))
                winner = seat; /* its end record was lost in the crash */
        }
    }
    r->ends_at = r->settings.time_limit ? now + remaining_ms : 0;
    srv_log(SRV_LOG_INFO, "%s%s restored from the journal",
            r->solo ? "a solo game" : "room ", r->code);
    if (winner)
        check_end(r, winner);
    else
        check_end(r, NULL);
    if (r->state == ROOM_RUNNING)
        room_rearm(r);
    else
        room_maybe_free(r);
}

void room_restore_abandon(room *r) {
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        unseat(r, i);
        if (p) srv_player_release(p);
    }
    r->state = ROOM_ENDED;
    room_maybe_free(r);
}

/* ------------------------------------------------------------ spectators --- */

int room_watch(room *r, srv_player *p) {
    unsigned most = r->game->cfg.max_spectators;
    if (most && r->fan.n >= most) return -2;
    if (fanout_add(&r->fan, p) < 0) return -1;
    /* Owed every broadcast after this snapshot, and none before it. */
    if (r->state == ROOM_WAITING) {
        srv_msg m = {.type = SRV_MSG_ROOM, .json = enc_room(r), .view = room_view(r)};
        srv_send(p, &m);
        if (m.json) srv_buf_unref(m.json);
        srv_view_unref(m.view);
    } else {
        /* One snapshot per state of the room for a crowd that comes at once. */
        fanout *f = &r->fan;
        if (!f->start || f->start_version != f->version) {
            if (f->start) srv_buf_unref(f->start);
            proto_player views[PROTO_PLAYERS_MAX];
            seat_views(r, views);
            size_t len;
            char *line = proto_enc_start(room_code_or_null(r), 0, &r->settings, views,
                                         r->nseats, r->commit, &len);
            f->start = srv_buf_take(line, len);
            srv_view_unref(f->start_view);
            f->start_view = room_view(r);
            f->start_version = f->version;
        }
        srv_msg m = {.type = SRV_MSG_START, .json = f->start, .view = f->start_view};
        srv_send(p, &m);
    }
    return 0;
}

void room_unwatch(room *r, srv_player *p) {
    fanout_remove(&r->fan, p);
    room_maybe_free(r);
}

void room_fanout_drained(room *r) {
    room_maybe_free(r);
}

/* -------------------------------------------------------------- shutdown --- */

void room_close_all(game *g) {
    while (!srv_list_empty(&g->rooms)) {
        room *r = srv_container(g->rooms.next, room, link);
        for (int i = 0; i < r->nseats; i++) {
            srv_player *p = r->seats[i].player;
            unseat(r, i);
            if (p) srv_player_release(p); /* frees those waiting out a grace period */
        }
        fanout_detach_all(&r->fan); /* what is queued is not sent: all say bye */
        r->state = ROOM_ENDED;
        room_maybe_free(r);
    }
    game_rooms_changed(g);
}

void room_give_up_all(game *g) {
    srv_link *l = g->rooms.next;
    while (l != &g->rooms) {
        room *r = srv_container(l, room, link);
        l = l->next;
        if (r->closing) continue;
        for (int i = 0; i < r->nseats; i++) {
            srv_player *p = r->seats[i].player;
            if (!p) continue;
            unseat(r, i);
            if (p->bot_level && p->sink.ops)
                player_dismiss(p, SINK_DISMISSED);
            else
                srv_player_release(p); /* frees those waiting out a grace period */
        }
        fanout_detach_all(&r->fan); /* its spectators are back in the lobby */
        r->state = ROOM_ENDED;      /* no `end`, no record: its game stays pending */
        room_maybe_free(r);
    }
    game_rooms_changed(g);
}
