/* player.h - a player identity of the game: its name, token, seat and destination. */
#ifndef RACE2048_PLAYER_H
#define RACE2048_PLAYER_H

#include "base.h"
#include "sink.h"

struct game;
struct room;

/* What a `quick` asked for, the settings its race gets: no time limit and no
 * arena (a proto_settings would cost every player 28 bytes, see below). */
typedef struct player_queue_key {
    uint32_t target;
    uint8_t players, size;
    bool rated;
} player_queue_key;

/* A player identity: it outlives a connection while its race runs (resume).
 *
 * Every connection that greets or says hello has one, so its size is most of
 * an idle connection's cost after struct conn's (the 1 KiB budget of issues 9
 * and 26, tests/bench/idle_bytes.py): what only some players need lives in a
 * side entry behind one pointer (arena membership, a resume code), flags are
 * bits, and the
 * fields are ordered without holes. The _Static_assert below holds it. */
typedef struct srv_player {
    srv_link link; /* in game.players */
    struct game *game;
    uint64_t id;
    sink sink;                 /* where its messages go; ops NULL while disconnected */
    struct room *room;         /* the room or game it has a seat in, or NULL */
    struct room *watching;     /* the room it spectates, or NULL */
    struct lobby_queue *queue; /* the queue for queue_key while queued */
    /* Restored players: SHA-256 of the token, 64 hex digits (malloc'd, kept
     * only by the few restored from the journal), else NULL. */
    char *token_hash;
    srv_link queue_link;     /* in queue->waiting while queued */
    UT_hash_handle hh_token; /* in game.by_token, keyed by token */
    uint64_t queued_at;      /* loop time it joined matchmaking (--quick-bots) */
    /* Cluster mode: set while its requests go to another node, which runs
     * its room (remote.c); its messages come back from there. */
    struct remote_home *home;
    /* Logged in to this account (`hello` with `key`, or `register`), else
     * NULL: a guest. Accounts are never freed before the game. */
    struct acct_account *account;
    /* Its entry in the arena it entered last (arena_host.c: the arena, whether
     * it still waits in that arena's pool), or NULL: few players enter one. */
    struct arena_entry *arena;
    /* A human's resume code for its current race seat, indexed in
     * game.by_resume (resume.c: resume_code_of), or NULL for none. */
    struct resume_entry *resume;
    int seat;            /* its index in room->seats */
    unsigned watch_slot; /* its index in watching->fan.slots (fanout.c) */
    player_queue_key queue_key;
    char name[PROTO_NAME_MAX + 1];
    char token[33];    /* 128 random bits as hex: the resume secret; "" if only
                          its hash is known (restored from the journal) */
    uint8_t bot_level; /* a server-run bot's level (1-5), 0 for everyone else */
    bool welcomed : 1; /* has been sent its welcome */
    /* Its destination shows a resume code (text mode): the game gives its
     * seats one. Nobody else's seat has a code (fewer codes to guess). */
    bool wants_resume_code : 1;
    bool queued : 1; /* waiting in matchmaking */
    /* Named by a `hello` (an implicit player-N name is none): may register. */
    bool named : 1;
    /* Cluster mode: its `hello` waits for an account this node had not seen
     * (accounts_kv.c); the connection's input is held until it is answered. */
    bool account_wait : 1;
} srv_player;

/* The idle budget (issues 9 and 26): a connection that greeted or said hello
 * costs its struct conn (a 592-byte malloc chunk on 64-bit glibc), this
 * player and a little of the allocator's and libuv's, in all under 1 KiB
 * (tests/bench/idle_bytes.py). 264 bytes is a 272-byte chunk; a player of
 * 424 bytes (arena fields inline) made it 1,052. A field only some players
 * need belongs in a side entry (arena_entry, resume_entry); raise this only
 * with the figures measured again. */
_Static_assert(sizeof(srv_player) <= 264,
               "srv_player outgrew the idle-connection budget");

/* True while p has a destination. */
static inline bool player_connected(const srv_player *p) {
    return p->sink.ops != NULL;
}
/* True while p has a destination that still takes messages. */
static inline bool player_alive(const srv_player *p) {
    return p->sink.ops && p->sink.ops->alive(p->sink.dest);
}

/* Frees p if nothing holds it any more: no destination and no seat. Takes it
 * out of the queue and any room it watches first. */
void srv_player_release(srv_player *p);
/* The game lets go of p's destination (it is told why) and frees p if
 * nothing else holds it: a bot that is no longer needed. */
void player_dismiss(srv_player *p, sink_close_reason why);
/* Delivers m to p's destination, if it has one (a spectator first gets the
 * broadcasts still queued for it). */
void srv_send(srv_player *p, const srv_msg *m);
/* Sends a one-off message built by an encoder (takes the line). */
void srv_send_line(srv_player *p, srv_msg_type type, char *line, size_t len);
/* Sends error code with message to p (counted for /metrics). */
void srv_send_error(srv_player *p, proto_err code, const char *message);

#endif
