/* lobby.h - requests to actions: players, naming, matchmaking, rooms list, resume. */
#ifndef RACE2048_LOBBY_H
#define RACE2048_LOBBY_H

#include "conn.h"

/* Handles one JSON line from c: decode, then act; every failure gets one error. */
void lobby_json_line(conn *c, const char *line, size_t len);

/* Acts on a decoded request from c (JSON or text mode). Takes over req's
 * owned parts and clears it. */
void lobby_request(conn *c, proto_request *req);

/* The player of c, made (named player-N) if c has none yet; NULL if memory
 * runs out. welcome: send its welcome if it has not had one. */
srv_player *lobby_player(conn *c, bool welcome);

/* A player restored from the journal: no connection, known by its token's
 * hash. NULL if memory runs out. */
srv_player *lobby_player_restore(srv *s, uint64_t id, const char *name,
                                 const char *token_hash);

/* c takes player p (found by its token or resume code) and p's seat back. */
void lobby_take_back(conn *c, srv_player *p);

/* c is closing: its player is disconnected (a running game keeps the seat). */
void lobby_conn_gone(conn *c);

/* How many players (p included) are queued with p's matchmaking settings. */
int lobby_queue_waiting(const srv_player *p);

/* The rows of the `rooms` reply (up to max), joinable rooms first. */
int lobby_rooms(srv *s, proto_room_info *rows, int max);

#endif
