/* sink.h - a player's destination: where its messages go, without saying how.
 *
 * The game talks to players; a player delivers to its sink and knows nothing
 * else of where the messages go. A local connection is one kind of sink
 * (session.c); a player on another node or a server-run bot would be others.
 * A player without a sink (ops NULL) is disconnected: its seat waits out the
 * grace period. */
#ifndef RACE2048_SINK_H
#define RACE2048_SINK_H

#include "base.h"

/* Why the game lets go of a destination. */
typedef enum sink_close_reason {
    SINK_TAKEN_OVER, /* another connection resumed its player */
    SINK_NO_MEMORY,  /* the game could not keep its player */
    SINK_DISMISSED,  /* a bot whose room has no human left: it is not needed */
} sink_close_reason;

typedef struct sink_ops {
    /* Delivers m (valid for the call only: a copy is kept if needed). */
    void (*deliver)(void *dest, const srv_msg *m);
    /* The game drops the destination: it is told why and is never used
     * again by the game (its player is no longer attached to it). */
    void (*close)(void *dest, sink_close_reason why);
    /* False once the destination is on its way out (it takes no more
     * messages): matchmaking skips it. */
    bool (*alive)(const void *dest);
    /* Seconds until this destination may start another game (its address's
     * --max-games-per-min, guard.c); 0 = now, and the start is counted. */
    unsigned (*game_start_wait)(void *dest);
    /* The key its client address is counted under (addr.h's addr_key, at most
     * SINK_ADDR_KEY_MAX bytes) written to key, and its length; 0 when it has
     * none (a bot, a player restored from the record). NULL: none. The bots
     * a player's requests seat count against it (--max-bots-per-ip, bot.c). */
    size_t (*addr_key)(const void *dest, unsigned char *key);
} sink_ops;

#define SINK_ADDR_KEY_MAX 16

typedef struct sink {
    const sink_ops *ops; /* NULL: no destination (disconnected) */
    void *dest;
} sink;

#endif
