/* room.c - rooms and games: seats, moves, timers, leaving, rematch, spectators. */
#include "room_internal.h"
#include "arena_host.h"

#include <assert.h>
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

/* ------------------------------------------------------------- sending --- */

/* Sends m to every connected seated player (except `except`, always a seated
 * one) at once, and to every spectator through the fan-out (a share per loop
 * turn, in order: fanout.h). */
void room_broadcast(room *r, const srv_msg *m, const srv_player *except) {
    for (int i = 0; i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (p && p != except) srv_send(p, m);
    }
    fanout_send(&r->fan, m);
}

void room_seat_view(const room_seat *seat, proto_player *out) {
    *out = proto_player_of(&seat->result);
    out->has_rating = seat->account != NULL;
    out->rating = seat->rating;
}

static void seat_views(const room *r, proto_player *views) {
    for (int i = 0; i < r->nseats; i++)
        room_seat_view(&r->seats[i], &views[i]);
}

const char *room_code_or_null(const room *r) {
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

srv_view *room_view(const room *r) {
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
        shown->result = seat->result;
        shown->seated = seat->player != NULL;
        shown->connected = seat->connected;
        shown->rematch = seat->rematch;
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
    snprintf(m.resume_code, sizeof m.resume_code, "%s", resume_code_of(to));
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
void room_broadcast_player(room *r, const room_seat *seat, const srv_player *except) {
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
        srv_player *p = room_seat_unlink(r, i);
        if (p) player_dismiss(p, SINK_DISMISSED);
    }
}

/* Frees the room once no player is seated: players of an ended race stay
 * seated until they leave, for `rematch`. Spectators stop watching, once
 * the broadcasts on their way to them are out (room_fanout_drained). */
void room_maybe_free(room *r) {
    if (r->closing) return;
    room_assert_seats(r);
    if (r->state != ROOM_RUNNING) dismiss_bots_if_alone(r);
    for (int i = 0; i < r->nseats; i++)
        if (r->seats[i].player) return;
    if (r->state == ROOM_RUNNING || fanout_busy(&r->fan)) return;
    fanout_detach_all(&r->fan);
    r->closing = true;
    assert(r->solo || room_find(r->game, r->code) == r); /* in by_code until now */
    if (!r->solo) HASH_DELETE(hh, r->game->by_code, r);
    srv_list_remove(&r->listed);
    if (!r->solo) game_rooms_changed(r->game);
    srv_list_remove(&r->link);
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, on_room_closed);
}

/* -------------------------------------------------------------- seating --- */

/* A seat and its player point at each other (seat->player, and the player's
 * room and seat index) or neither points at the other: these two functions
 * are the only ones that change either side. */
void room_seat_link(room *r, int i, srv_player *p) {
    assert(i >= 0 && i < r->nseats);
    assert(!r->seats[i].player && !p->room); /* each is free */
    r->seats[i].player = p;
    p->room = r;
    p->seat = i;
}

srv_player *room_seat_unlink(room *r, int i) {
    assert(i >= 0 && i < r->nseats);
    srv_player *p = r->seats[i].player;
    if (!p) return NULL;
    assert(p->room == r && p->seat == i);
    r->seats[i].player = NULL;
    p->room = NULL;
    return p;
}

void room_assert_seats(const room *r) {
#ifndef NDEBUG
    assert(r->nseats >= 0 && r->nseats <= PROTO_PLAYERS_MAX);
    for (int i = 0; i < r->nseats; i++) {
        const srv_player *p = r->seats[i].player;
        assert(!p || (p->room == r && p->seat == i));
    }
#else
    (void)r;
#endif
}

static void seat_init(room_seat *seat, srv_player *p) {
    memset(seat, 0, sizeof *seat);
    seat->id = p->id;
    memcpy(seat->name, p->name, sizeof seat->name);
    seat->status = PROTO_PLAYING;
    seat->connected = p->sink.ops != NULL;
    seat->bot_level = p->bot_level;
    seat->bot = p->bot_level != 0;
}

int room_add_player(room *r, srv_player *p, bool announce) {
    if (r->nseats >= PROTO_PLAYERS_MAX) return -1;
    assert(r->state == ROOM_WAITING && !p->queued);
    int i = r->nseats++;
    seat_init(&r->seats[i], p);
    room_seat_link(r, i, p);
    if (!r->solo) game_rooms_changed(r->game);
    if (r->solo || !announce) return 0;
    broadcast_room(r);
    if (r->nseats >= r->settings.players) room_start(r);
    return 0;
}

/* Removes seat i (its player gone) from a waiting room, keeping the others'
 * indices right: each seat after it is unlinked, moved down and linked again. */
static void remove_seat(room *r, int i) {
    assert(r->state == ROOM_WAITING && !r->seats[i].player);
    srv_player *moved[PROTO_PLAYERS_MAX];
    for (int k = i + 1; k < r->nseats; k++)
        moved[k] = room_seat_unlink(r, k);
    memmove(&r->seats[i], &r->seats[i + 1],
            (size_t)(r->nseats - i - 1) * sizeof r->seats[0]);
    r->nseats--;
    game_rooms_changed(r->game);
    for (int k = i; k < r->nseats; k++)
        if (moved[k + 1]) room_seat_link(r, k, moved[k + 1]);
}

/* The journal's start event: the game as it begins, and who plays it. */
static void start_event(const room *r, jrn_start *ev) {
    *ev = (jrn_start){.solo = r->solo,
                      .settings = r->settings,
                      .seed = r->seed,
                      .nseats = r->nseats,
                      .started_ms = journal_wall_ms(),
                      .daily = r->daily,
                      .daily_day = r->daily_day,
                      .arena_race = r->arena ? r->arena_race : 0};
    if (!r->arena) ev->settings.arena[0] = '\0';
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

void room_seat_deal(const room *r, room_seat *seat) {
    eng_game dealt;
    if (eng_game_new(&dealt, r->settings.size, &r->seed) < 0)
        return; /* sizes are checked */
    seat->board = dealt.board;
    seat->rng = dealt.rng;
    seat->score = dealt.score;
    seat->moves = dealt.moves;
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
        room_seat_deal(r, &r->seats[i]);
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

void room_move(room *r, srv_player *p, eng_dir dir, bool has_seq, uint64_t seq) {
    /* A move read from a client is timed until its `state` is handed out. */
    uint64_t started = r->game->metrics->move_started_ns;
    r->game->metrics->move_started_ns = 0;
    room_seat *seat = room_seat_of(p);
    assert(p->room == r && r->state == ROOM_RUNNING);
    eng_move_result res = room_seat_play(seat, dir, r->game->tables);
    if (res.moved) {
        r->game->metrics->moves++;
        journal_move(r->jgame, p->seat, dir);
        room_update_status(r, seat);
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
    if (res.moved) room_check_end(r, seat);
}

static void walk_away(room *r, int i);

/* Seat i has left the running game (a player already `over` stays `over`), and
 * the journal says so, or a restart would give the seat back. */
void room_seat_left(room *r, int i) {
    if (r->seats[i].status != PROTO_OVER) r->seats[i].status = PROTO_LEFT;
    journal_seat(r->jgame, i, JRN_SEAT_LEFT);
}

/* When seat's --move-timeout runs out (0 = never): only racers still playing. */
static uint64_t move_deadline(const room *r, const room_seat *seat) {
    uint64_t timeout = r->game->cfg->move_timeout_ms;
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
        srv_player *p = room_seat_unlink(r, i);
        room_seat_left(r, i);
        srv_log(SRV_LOG_DEBUG, "room %s: player %llu did not come back", r->code,
                (unsigned long long)seat->id);
        room_broadcast_player(r, seat, seat->player);
        srv_player_release(p);
        gave_up = true;
    }
    /* Once for every seat given up now: seats whose grace ends together (a race
     * restored from the journal that nobody came back to) all leave, rather than
     * the last one checked winning by forfeit. */
    if (gave_up && r->state == ROOM_RUNNING) room_check_end(r, NULL);
    if (r->state == ROOM_RUNNING && r->ends_at && r->ends_at <= now)
        room_end(r, PROTO_END_TIME, 0);
    if (r->state == ROOM_RUNNING)
        room_rearm(r);
    else
        room_maybe_free(r);
}

/* Arms the timer for the earliest of the time limit, the grace expiries and
 * the move timeouts. */
void room_rearm(room *r) {
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
    room_seat_unlink(r, i);
}

static void rematch_progress(room *r);

/* Seat i of a running race made no move for --move-timeout: it is treated as
 * if its grace period had run out, so nobody holds a race by walking away. */
static void walk_away(room *r, int i) {
    room_seat *seat = &r->seats[i];
    srv_log(SRV_LOG_DEBUG, "room %s: player %llu made no move for %llus; it has left",
            r->code, (unsigned long long)seat->id,
            (unsigned long long)(r->game->cfg->move_timeout_ms / 1000));
    if (!seat->connected) { /* the grace expiry that follows gives the seat up */
        seat->grace_until = 0;
        return;
    }
    /* Still connected: as a leave, except that the walker is told too. */
    room_seat_left(r, i);
    room_broadcast_player(r, seat, NULL);
    room_check_end(r, NULL); /* the walker still gets the `end` if this ends it */
    if (seat->player) unseat(r, i);
}

void room_leave(room *r, srv_player *p) {
    room_seat *seat = room_seat_of(p);
    assert(p->room == r);
    int i = p->seat;
    switch (r->state) {
    case ROOM_WAITING:
        unseat(r, i);
        remove_seat(r, i);
        /* Also when it is now empty: its spectators learn that nobody is
         * left, since the room is freed next and no `start` will come. */
        broadcast_room(r);
        break;
    case ROOM_RUNNING:
        room_seat_left(r, i);
        seat->connected = p->sink.ops != NULL;
        if (!r->solo) room_broadcast_player(r, seat, seat->player);
        room_check_end(r, NULL); /* the leaver still gets the `end` if this ends it */
        if (seat->player) unseat(r, i);
        /* A leaver already `over` was still seated above: were they the last
         * person, only bots race on now. */
        room_check_end(r, NULL);
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
    room_seat *seat = room_seat_of(p);
    assert(p->room == r);
    if (r->state != ROOM_RUNNING) {
        room_leave(r, p);
        return;
    }
    seat->connected = false;
    seat->grace_until = uv_now(r->game->loop) + r->game->cfg->grace_ms;
    journal_seat(r->jgame, p->seat, JRN_SEAT_DISCONNECTED);
    if (!r->solo) room_broadcast_player(r, seat, seat->player);
    room_rearm(r);
}

void room_reconnect(room *r, srv_player *p) {
    room_seat *seat = room_seat_of(p);
    assert(p->room == r);
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
    if (!was_connected && !r->solo) room_broadcast_player(r, seat, seat->player);
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
    assert(p->room == r && r->state == ROOM_ENDED);
    room_seat_of(p)->rematch = true;
    rematch_progress(r);
}

/* ------------------------------------------------------------ spectators --- */

int room_watch(room *r, srv_player *p) {
    unsigned most = r->game->cfg->max_spectators;
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
    arena_host_close_all(g);
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
