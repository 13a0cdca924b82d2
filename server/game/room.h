/* room.h - rooms and games: seats, moves, the end rules and ranking, spectators, rematch.
 */
#ifndef RACE2048_ROOM_H
#define RACE2048_ROOM_H

#include <assert.h>

#include "fanout.h"
#include "seed.h"
#include "game.h"

typedef enum room_state { ROOM_WAITING, ROOM_RUNNING, ROOM_ENDED } room_state;

typedef struct room_seat {
    /* Its result (message.h's proto_result, embedded: seat->score is
     * seat->result.score): id and name kept for the results after the player
     * is gone; board, score and moves its game's, whose rng is beside it. */
    PROTO_RESULT_EMBEDDED;
    eng_rng rng;
    srv_player *player; /* NULL once the player has gone from the room */
    bool connected;
    uint8_t bot_level;    /* a server-run bot's level, 0 for a person */
    uint64_t grace_until; /* loop time (ms) when a disconnected seat is given up */
    uint64_t last_move;   /* loop time (ms) of its last move that changed the board, or
                             of the start: --move-timeout counts from it */
    bool rematch;         /* asked for a rematch after the end */
    /* The seat's account as the game started (NULL: a guest or a bot) and
     * its rating then, which its player object shows. */
    struct acct_account *account;
    int rating;
} room_seat;

typedef struct room {
    srv_link link;     /* in game.rooms */
    srv_link listed;   /* in game.waiting_rooms or running_rooms while listed */
    UT_hash_handle hh; /* in game.by_code while it has a code and is not closing */
    game *game;
    char code[PROTO_ROOM_MAX + 1]; /* "" for a solo game */
    bool solo;
    proto_settings settings;
    room_state state;
    room_seat seats[PROTO_PLAYERS_MAX];
    int nseats;
    fanout fan;      /* the spectators, and broadcasts on their way to them */
    eng_seed seed;   /* a server seed, or a solo player's client seed */
    bool seed_fixed; /* a solo game's seed chosen by the player */
    char salt[33];
    char commit[65];
    /* A daily game (lobby.c): seed_fixed, its salt set before room_start, and
     * its seed and salt hidden from its `end` until daily_reveal_ms. */
    bool daily;
    int32_t daily_day;
    int64_t daily_reveal_ms;
    uint64_t ends_at; /* loop time (ms) of the time limit, 0 = none */
    uv_timer_t timer; /* fires at the time limit or the earliest grace or move expiry */
    bool closing;
    struct jrn_game *jgame; /* the journal's state of a started game, or NULL */
    uint64_t game_id;       /* the journal's id of the game, 0 if unknown */
    /* An arena's race (arena_host.c) until its result counted, else NULL. */
    struct arena_host *arena;
    uint64_t arena_race; /* its number in the arena */
} room;

/* Makes a waiting room (or, solo, a game about to start) with a fresh code.
 * Returns NULL if memory runs out. */
room *room_new(game *g, bool solo, const proto_settings *settings);
/* The same with a given code (a game restored from the journal); code NULL
 * makes a fresh one. */
room *room_new_coded(game *g, bool solo, const proto_settings *settings,
                     const char *code);
/* Restoring a running game from the journal (recover.c): after the seats are
 * added and r->seed set, _begin deals the boards; the moves are replayed
 * into the seats' games; _finish sets the statuses (left[i]: the seat's
 * player had left), starts the grace period of every seat from now, the
 * time limit (remaining_ms, 0 = none) and ends a game that is already over.
 * _abandon frees a room whose restore failed. */
void room_restore_begin(room *r);
void room_restore_finish(room *r, const bool *left, uint64_t remaining_ms);
void room_restore_abandon(room *r);
/* Finds a room by its (upper-case) code, in constant time; NULL if none. */
room *room_find(game *g, const char *code);

/* Seats p (not in any room). With announce, everyone in the waiting room gets
 * `room` and a full room starts; without, the caller starts it (matchmaking
 * and rematch go straight to `start`). Returns 0, or -1 if the room is full. */
int room_add_player(room *r, srv_player *p, bool announce);
/* Starts the game: seed, salt, commitment, boards, `start` to all. */
void room_start(room *r);

/* Deals seat's board for the room's size and seed: its game begins. */
void room_seat_deal(const room *r, room_seat *seat);
/* Applies a move to seat's game (eng_game_move on its result and rng). */
static inline eng_move_result room_seat_play(room_seat *seat, eng_dir dir,
                                             const eng_tables *t) {
    return eng_play(&seat->board, &seat->score, &seat->moves, &seat->rng, dir, t);
}

/* Applies p's move (p is seated, the game running, its status playing or won). */
void room_move(room *r, srv_player *p, eng_dir dir, bool has_seq, uint64_t seq);

/* p leaves its seat: forfeits a running race, quits a solo game, leaves a
 * waiting room or an ended race. Sends what protocol/README.md says, except `left`. */
void room_leave(room *r, srv_player *p);
/* p's connection is gone: in a running game the seat is kept for the grace
 * period; anywhere else this is a leave. */
void room_disconnect(room *r, srv_player *p);
/* p (seated, disconnected or taken over) has a connection again: `start`
 * snapshot to p (or `room` if waiting), `player` to the others. */
void room_reconnect(room *r, srv_player *p);
/* The time limit has passed: ends the race with reason `time`. */
void room_time_up(room *r);
/* After the end of a race: p asks for a rematch. */
void room_rematch(room *r, srv_player *p);

/* Spectators: adds p (gets `start`, or `room` while waiting). Returns 0, -1
 * if memory runs out, or -2 if the room has --max-spectators already. */
int room_watch(room *r, srv_player *p);
/* p stops watching r (after what was queued for it went out). */
void room_unwatch(room *r, srv_player *p);
/* The fan-out has delivered everything queued (fanout.c): a room kept for
 * that may now be freed. */
void room_fanout_drained(room *r);

/* Seats `n` bots of `level` in the waiting room r, all or none, counted
 * against owner's address (the player who asked; game_bots); with announce
 * as room_add_player does (the last may fill and start it). Returns 0, -1 if
 * --max-bots or memory ran out, or -2 if owner's address has its share of
 * bots (r is unchanged). */
int room_add_bots(room *r, int n, int level, const srv_player *owner, bool announce);
/* Frees a room nobody will play (made for a race that could not be filled). */
void room_abandon(room *r);
/* True while p is seated in a running race (not a solo game). */
bool room_in_running_race(const srv_player *p);

/* p's seat, p seated (p->room set): the seat and its player point at each
 * other, which room_seat_link and room_seat_unlink (room.c) alone change. */
static inline room_seat *room_seat_of(const srv_player *p) {
    assert(p->room && p->seat >= 0 && p->seat < p->room->nseats);
    room_seat *seat = &p->room->seats[p->seat];
    assert(seat->player == p);
    return seat;
}
/* Asserts that every seat of r and its player point at each other. */
void room_assert_seats(const room *r);

/* Fills a proto_player view of a seat. */
void room_seat_view(const room_seat *seat, proto_player *out);

/* Ends every game and frees every room (server shutdown). */
void room_close_all(game *g);

/* Fencing (takeover.c): this node lost the cluster and another will run its
 * games from their records. Frees every room without an `end` or a seat
 * record (their journal games stay pending); seated players leave their
 * seats (the caller has told them why and closes their connections), bots
 * are dismissed, disconnected players freed, spectators are back in the lobby. */
void room_give_up_all(game *g);

#endif
