/* view.h - what messages show of a room and of the rooms list: refcounted snapshots
 * that own their data, for the transports that draw them (text mode). */
#ifndef RACE2048_VIEW_H
#define RACE2048_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "message.h"

struct srv_buf;

/* -------------------------------------------------------------- a room --- */

typedef enum srv_view_state {
    SRV_VIEW_WAITING,
    SRV_VIEW_RUNNING,
    SRV_VIEW_ENDED
} srv_view_state;

/* One seat as it is shown: its result (id, name, board, score, moves,
 * status, bot: message.h's proto_result, embedded) and its presence. */
typedef struct srv_view_seat {
    PROTO_RESULT_EMBEDDED;
    bool seated;          /* its player is still in the room */
    bool connected;       /* ... and has a connection (not waiting out its grace) */
    bool rematch;         /* asked for a rematch after the end */
    uint64_t grace_until; /* loop time (ms) a disconnected seat is given up */
} srv_view_seat;

/* Text renderings of a view, made by the first spectator of each screen shape
 * and sent by reference to the others (text.c). */
#define SRV_VIEW_SCREENS 8
typedef struct srv_view_screen {
    void *key; /* the shape (text.c's bytes, compared whole); NULL = empty */
    size_t key_len;
    struct srv_buf *screen;
    uint64_t tick_at; /* when a countdown on it changes, 0 = none */
} srv_view_screen;

/* A room's shown state at one moment: made by room.c once per broadcast,
 * carried (borrowed) by every message about the room, kept by reference by a
 * receiver that draws it later. Nothing in it changes once it is sent but its
 * cache of renderings, which only adds what the state already determines. */
typedef struct srv_view {
    unsigned refs;
    char code[PROTO_ROOM_MAX + 1];
    bool solo;
    srv_view_state state;
    proto_settings settings;
    char commit[65];  /* "" before the start */
    uint64_t ends_at; /* loop time (ms) of the time limit, 0 = none */
    /* The verdict, in the view of an `end` only (the seed is a secret until
     * then): the seats best first (the winner first), the seed and salt. */
    bool has_verdict;
    uint8_t ranking[PROTO_PLAYERS_MAX]; /* seat indices */
    eng_seed seed;
    char salt[33];
    srv_view_screen *screens; /* SRV_VIEW_SCREENS of them once a spectator drew */
    unsigned next_screen;     /* the entry to replace next */
    int nseats;
    srv_view_seat seats[]; /* nseats of them, in seat order */
} srv_view;

/* A zeroed view with room for nseats seats (0..PROTO_PLAYERS_MAX) and one
 * reference; NULL if memory runs out. */
srv_view *srv_view_new(int nseats);
static inline srv_view *srv_view_ref(srv_view *v) {
    v->refs++;
    return v;
}
/* Drops a reference (v may be NULL); the last one frees v and its renderings. */
void srv_view_unref(srv_view *v);
/* Replaces *slot's reference by one to v (either may be NULL). */
void srv_view_set(srv_view **slot, srv_view *v);

/* The seat of player id in v (borrowed), or NULL. */
const srv_view_seat *srv_view_seat_of(const srv_view *v, uint64_t id);
/* A proto_player of a seat, pointing into it. */
void srv_view_player(const srv_view_seat *seat, proto_player *out);

/* The rendering kept for this shape, borrowed, with its tick_at; NULL if none. */
struct srv_buf *srv_view_screen_find(const srv_view *v, const void *key, size_t key_len,
                                     uint64_t *tick_at);
/* Keeps screen (a new reference) as the rendering for this shape, replacing
 * the oldest entry. Out of memory: nothing is kept. */
void srv_view_screen_keep(srv_view *v, const void *key, size_t key_len,
                          struct srv_buf *screen, uint64_t tick_at);

/* ------------------------------------------------------- the rooms list --- */

typedef struct srv_room_row {
    char code[PROTO_ROOM_MAX + 1];
    int players; /* seated now */
    proto_settings settings;
    bool started; /* racing: to watch, not to join */
} srv_room_row;

/* The rows of a `rooms` reply, joinable rooms first; refcounted like a view. */
typedef struct srv_rooms {
    unsigned refs;
    int n;
    srv_room_row rows[];
} srv_rooms;

/* A zeroed list of n rows with one reference; NULL if memory runs out. */
srv_rooms *srv_rooms_new(int n);
static inline srv_rooms *srv_rooms_ref(srv_rooms *l) {
    l->refs++;
    return l;
}
/* Drops a reference (l may be NULL); the last one frees l. */
void srv_rooms_unref(srv_rooms *l);

#endif
