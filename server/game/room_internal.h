/* room_internal.h - what room.c, room_end.c, room_rating.c, room_restore.c share. */
#ifndef RACE2048_ROOM_INTERNAL_H
#define RACE2048_ROOM_INTERNAL_H

#include "room.h"

#include "record.h"

/* ---------------------------------------------------------- room.c: sending --- */

/* Sends m to every connected seated player (except `except`, always a seated
 * one) at once, and to every spectator through the fan-out. */
void room_broadcast(room *r, const srv_msg *m, const srv_player *except);
/* The room's code as messages carry it: NULL for a solo game. */
const char *room_code_or_null(const room *r);
/* The room as the messages about it show it (a new reference), or NULL if
 * memory runs out. */
srv_view *room_view(const room *r);
/* `player` about seat to everyone but `except`. */
void room_broadcast_player(room *r, const room_seat *seat, const srv_player *except);

/* ------------------------------------------------------- room.c: seating --- */

/* Seat i's player becomes p, and p's room and seat r and i; both were free. */
void room_seat_link(room *r, int i, srv_player *p);
/* Seat i and its player (if any) let go of each other; returns the player. */
srv_player *room_seat_unlink(room *r, int i);

/* ------------------------------------------------------ room.c: lifetime --- */

/* Frees the room once nobody is seated and its spectators have what was
 * queued for them; bots alone after a race are dismissed first. */
void room_maybe_free(room *r);
/* Arms the timer for the earliest of the time limit, grace and move expiries. */
void room_rearm(room *r);
/* Seat i has left the running game (an `over` seat stays `over`); recorded. */
void room_seat_left(room *r, int i);

/* ------------------------------------------------------------ room_end.c --- */

/* A seat's status from its board (a seat that left stays left). */
void room_update_status(room *r, room_seat *seat);
/* Applies the end rules that a change of status can trigger; `mover`, if
 * non-NULL, made the move that may have reached the target. */
void room_check_end(room *r, const room_seat *mover);
/* Ends a running race: ranking, ratings, the end record, `end` to all. */
void room_end(room *r, proto_end_reason reason, uint64_t winner);
/* The ranking's order of two seats for all_over and time (0: a full tie). */
int room_rank_cmp(const room_seat *a, const room_seat *b);

/* --------------------------------------------------------- room_rating.c --- */

/* A rated race's update, in results order (`order`): fills out (every player)
 * and changes (the accounts, for `end`); returns how many changes, or -1 when
 * nothing was rated (no account, or a bad skill). */
int room_rate_race(room *r, const room_seat *const *order, uint64_t winner,
                   proto_record_rating *out, proto_rating_change *changes);

#endif
