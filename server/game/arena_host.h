/* arena_host.h - arenas on this server: requests, pairing into rated rooms, standings
 * updates. */
#ifndef RACE2048_ARENA_HOST_H
#define RACE2048_ARENA_HOST_H

#include "game.h"

struct room;
struct room_seat;

/* An arena's code has this many characters (the rooms' alphabet). */
#define ARENA_HOST_CODE_LEN 6
/* Entrants one arena takes (the number the tests use is documented in
 * protocol/README.md). */
#define ARENA_HOST_MAX_ENTRANTS 10000

/* The arena requests (arena_create, arenas, arena_join, arena_leave,
 * arena_results): each gets its reply or one error. */
void arena_host_request(srv_player *p, const proto_request *req);

/* The `arenas` reply, and an arena as `arena_results` shows it to a reader
 * who is no entrant (found false: no arena has that code), for /api/ (web.c):
 * malloc'd lines, NULL if memory runs out. */
char *arena_host_list_line(game *g, size_t *len);
char *arena_host_results_line(game *g, const char *code, bool *found, size_t *len);

/* p asks for something else (solo, create, join, quick, watch, daily) or sent
 * `leave` during an arena race: it leaves its arena's pool (its points stay). */
void arena_host_busy(srv_player *p);
/* p's connection is gone (it waits no more) or is back (it waits again if it
 * had not left its arena). */
void arena_host_disconnected(srv_player *p);
void arena_host_reconnected(srv_player *p);
/* p is being freed: its arena forgets the player (the entrant stays). */
void arena_host_forget(srv_player *p);

/* An arena race ended (room_end): its result counts, the entrants go back to
 * the pool. order: the seats best first. */
void arena_host_race_end(struct room *r, const struct room_seat *const *order,
                         uint64_t winner);

/* --arena-every MINUTES (cfg.arena_every; 0: nothing): from now on an arena
 * opens at every multiple of MINUTES since 00:00 UTC, lasting MINUTES/2 (at
 * least 1), 4-player races on 4x4 to 2048. */
void arena_host_schedule(game *g);

/* Start-up, after the journal is read and before its running games are
 * rebuilt: the arenas it keeps come back (their standings; every entrant that
 * was not racing away until it joins again; the races that were running wait
 * for their rooms: arena_host_relink, arena_host_restored). */
void arena_host_restore(game *g);

/* After a restart, an entrant that waited in an arena's pool (or was racing,
 * to wait again after its race, and its race did not come back) is put back
 * in the pool when it comes back: by `resume` with its token (no seat had it)
 * or by `hello` with its account's key. p, a player that is in nothing yet,
 * then becomes that entrant (its id and name), gets `welcome` and the
 * `arena`, and true is returned; false: no arena holds such an entrant. */
bool arena_host_resume(srv_player *p, const char *token);
bool arena_host_login(srv_player *p);

/* Frees every arena (server shutdown, after room_close_all). */
void arena_host_close_all(game *g);

/* Start-up: a running race rebuilt from the journal (recover.c, before its
 * end can come) is arena `code`'s race `race` again, its players that arena's
 * entrants, if the arena (arena_host_restore) still has exactly its seats
 * racing in it; false otherwise (then it is an ordinary race). */
bool arena_host_relink(struct room *r, const char *code, uint64_t race);
/* Start-up, after the running races: an arena race no rebuilt room claimed
 * counts for nobody and its entrants are away until they join again. */
void arena_host_restored(game *g);

/* ---------------------------------------- cluster mode (arena_share.c) --- */
/* What the layer above (the cluster's link) asks of this node's arenas, and
 * the hooks it registers: the game never calls up. */

/* This node's arenas as `arenas` lists them (no standings), at most max:
 * returns how many. Their strings point into the arenas: use them before the
 * loop turns. */
int arena_host_infos(game *g, proto_arena_info *out, int max);
/* Whether this node runs arena code (finished ones an hour on); *over: it has
 * finished or its end has passed (join and leave get arena_over). */
bool arena_host_runs(game *g, const char *code, bool *over);
/* --arena-every in a cluster: before a period's arena opens, claim(ctx, g,
 * starts_ms) is asked (on the loop); it calls arena_host_every_open(g,
 * starts_ms) later if this node is the one to open it, else nothing. Set
 * before arena_host_schedule. */
void arena_host_on_every_claim(game *g,
                               void (*claim)(void *ctx, game *g, int64_t starts_ms),
                               void *ctx);
void arena_host_every_open(game *g, int64_t starts_ms);
/* Takeover: another node's arena (its latest `arena` record, line, and the
 * `arena_ev` lines of that arena after it, events) runs here now, restored as
 * at start-up (arena_host_restore) and its whole state written into this
 * node's journal; false if it is not (already here, an hour past its end,
 * unreadable). Call before its running races are rebuilt (they relink as at
 * start-up); then arena_host_adopted(g, code) gives up its races that no
 * rebuilt room claimed. */
bool arena_host_adopt(game *g, const char *line, size_t len, const char *events,
                      size_t events_len);
void arena_host_adopted(game *g, const char *code);
/* Fencing (this node lost the cluster; its records are another node's now,
 * which takes its arenas over): every arena here is let go, as its rooms are
 * (room_give_up_all, first), without a record. The schedule goes on. */
void arena_host_give_up_all(game *g);

#endif
