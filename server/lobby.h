/* lobby.h - requests to actions: players, naming, matchmaking, rooms list, resume. */
#ifndef RACE2048_LOBBY_H
#define RACE2048_LOBBY_H

#include "game.h"

/* A new player (named player-N, with a fresh token) delivering to dest;
 * NULL if memory runs out. */
srv_player *lobby_player_new(game *g, sink dest);
/* A player restored from the journal: no destination, known by its token's
 * hash. NULL if memory runs out. */
srv_player *lobby_player_restore(game *g, uint64_t id, const char *name,
                                 const char *token_hash);
/* Sends p its welcome if it has not had one. */
void lobby_welcome(srv_player *p);
/* Acts on a decoded request of p (any but resume, which the caller resolves
 * with lobby_find_resumable and lobby_take_back). Takes over req's owned
 * parts and clears it. */
void lobby_request(srv_player *p, proto_request *req);
/* `hello`: p's name becomes req's; p gets its welcome. */
void lobby_hello(srv_player *p, const proto_request *req);
/* The player whose token this is, if its seat (in a game or room that has
 * not ended) can be taken back; else NULL. */
srv_player *lobby_find_resumable(game *g, const char *token);
/* The player whose seat has this resume code (normalised), if it can be
 * taken back now (running race, grace period); else NULL. */
srv_player *lobby_find_by_code(game *g, const char *code);
/* p (found by its token or resume code) delivers to dest from now on and
 * gets its seat back; a destination it still had is closed (taken over). */
void lobby_take_back(srv_player *p, sink dest);
/* p's destination is gone: it is disconnected (a running game keeps the
 * seat for the grace period) and freed if nothing holds it. */
void lobby_player_gone(srv_player *p);
/* How many players (p included) are queued with p's matchmaking settings. */
int lobby_queue_waiting(const srv_player *p);
/* The rows of the `rooms` reply (up to max), for the text mode too. */
int lobby_rooms(game *g, proto_room_info *rows, int max);

#endif
