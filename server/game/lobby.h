/* lobby.h - the lobby: players, matchmaking, the rooms list, resume; requests.c. */
#ifndef RACE2048_LOBBY_H
#define RACE2048_LOBBY_H

#include "game.h"

/* The most rows a `rooms` reply lists, so one reply stays a modest line. */
#define LOBBY_ROOMS_MAX 100
/* How long one `rooms` reply is sent again while no listed room changes: its
 * scores and spectator counts are at most this old. */
#define LOBBY_ROOMS_FRESH_MS 1000

/* A new player (named player-N, with a fresh token) delivering to dest;
 * NULL if memory runs out. */
srv_player *lobby_player_new(game *g, sink dest);
/* Cluster mode: p (a connection's player here) took back a seat that another
 * node runs, which welcomed it as `name` with `token`: p is that player now
 * (no second welcome here; its token is the one its client was told, so that
 * the seat's resume and its introduction to other nodes use it). */
void lobby_player_seated_elsewhere(srv_player *p, const char *name, const char *token);
/* A player of another node's connection (cluster mode): it keeps the id,
 * name and token that node gave it, and was welcomed there. NULL if memory
 * runs out or the token is not one. */
srv_player *lobby_player_adopt(game *g, sink dest, uint64_t id, const char *name,
                               const char *token);
/* A player restored from the journal: no destination, known by its token's
 * hash. NULL if memory runs out. */
srv_player *lobby_player_restore(game *g, uint64_t id, const char *name,
                                 const char *token_hash);
/* Sends p its welcome if it has not had one. */
void lobby_welcome(srv_player *p);
/* Acts on a decoded request of p (any but resume, which the caller resolves
 * with lobby_find_resumable and lobby_take_back). Borrows req: whoever made
 * it clears it after (proto_request_clear), whichever way it went. */
void lobby_request(srv_player *p, proto_request *req);
/* `hello`: p's name becomes req's; p gets its welcome. */
void lobby_hello(srv_player *p, const proto_request *req);
/* The `leaderboard` reply of the rating board (limit rows, 1..100; 0 gives
 * 20), from memory; NULL if memory runs out. */
char *lobby_leaderboard_line(game *g, int limit, size_t *len);
/* The `profile` reply of account name (any case): *found false and NULL when
 * no account has it; NULL with *found true if memory runs out. */
char *lobby_profile_line(game *g, const char *name, bool *found, size_t *len);
/* The daily board of size and date ("YYYY-MM-DD", "" or NULL: today) as a
 * `leaderboard` line; NULL with *bad_date for a date that is none, or NULL
 * when memory runs out. */
char *lobby_daily_board_line(game *g, int size, const char *date, int limit,
                             bool *bad_date, size_t *len);
/* p's `daily` of day (today when it was asked) with settings, granted by the
 * cluster (game.h's daily_claim) or on one node at once: the game starts, or
 * an error says why not (the day changed meanwhile, no memory). */
void lobby_daily_claimed(srv_player *p, int32_t day, const proto_settings *settings);
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
/* Sends p the `rooms` reply: this node's rooms, and others' rows (from the
 * cluster's directory; n may be 0), joinable rooms first. */
void lobby_send_rooms(srv_player *p, const proto_room_info *others, int nothers);
/* False after an error rate_limited to p: its destination may not start a
 * game now (--max-games-per-min); true counts the start. */
bool lobby_allow_game(srv_player *p);
/* True after an error busy to p: it is in a running race. */
bool lobby_refuse_if_racing(srv_player *p);
/* p leaves its queue, room and watch as `leave` would, with no reply. */
void lobby_leave_quietly(srv_player *p);
/* Matchmaking's settings that have someone waiting (up to max). */
int lobby_queue_keys(game *g, proto_settings *keys, int max);
/* Takes out of key's queue (up to max, oldest first) the alive waiters that
 * queued at or before loop time queued_before and that eligible accepts;
 * they are no longer queued. Returns how many. */
int lobby_queue_take(game *g, const proto_settings *key,
                     bool (*eligible)(const srv_player *), uint64_t queued_before,
                     srv_player **out, int max);
/* The rows of the `rooms` reply (up to max), for the text mode too. */
int lobby_rooms(game *g, proto_room_info *rows, int max);

#endif
