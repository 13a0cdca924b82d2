/* bot.h - server-run bots: players whose sink is the AI, thinking on a worker thread.
 *
 * A bot is a player of the game like any other; its destination is a bot
 * here instead of a connection. When a message tells it that it may move (its
 * race started, its last move was applied), it hands a copy of its board to
 * the worker thread at once and, when the move comes back and its level's
 * pace allows, plays it through the lobby as a client's `move` would. The
 * worker takes one search from each room with work in turn, so that no room's
 * bots delay another's by more than a search per room. The loop never
 * searches: at most a board copy per bot move, and a completion. Bots count
 * against the address of the player whose request seated them
 * (--max-bots-per-ip). */
#ifndef RACE2048_BOT_H
#define RACE2048_BOT_H

#include "game.h"

typedef struct bot_stats {
    unsigned live;      /* bots now */
    uint64_t made;      /* since start */
    uint64_t moves;     /* moves played */
    uint64_t searches;  /* searches the worker ran */
    uint64_t search_us; /* the worker's time in them */
} bot_stats;

/* Starts the worker thread and registers the game's bot maker (game.bots).
 * Returns 0, or -1 if memory or a thread runs out (the game then has no
 * bots: requests that need one get server_full). */
int bots_start(game *g);
/* Stops the worker (waiting for its current search), lets every bot go
 * (after room_close_all) and closes the pool's handles: the loop frees them
 * in their close callbacks. Call from a callback of the running loop. */
void bots_stop(game *g);
/* Gives a player restored from the journal with a bot's seat a bot of its
 * level again, so it moves on from where it was. Returns 0 or -1 (OOM). */
int bots_adopt(game *g, srv_player *p, int level);
bot_stats bots_get_stats(const game *g);
/* The bots one client address may have at once under cfg (--max-bots-per-ip,
 * by default an eighth of --max-bots, at least 7); 0 = no per-address limit. */
unsigned bots_per_ip(const srv_config *cfg);

#endif
