/* fanout.h - a room's spectators, and its broadcasts on their way to them a share per
 * loop turn.
 *
 * Seated players get a broadcast at once (room.c); spectators get it through
 * the room's fan-out, which delivers to at most FANOUT_TURN spectators of a
 * room per loop turn: a crowd of thousands costs every other room a few
 * milliseconds per turn, not one long stall. What does not fit a turn waits
 * in a queue of broadcasts that own their data. A cursor passes over the
 * spectators, a share per turn, and brings each one up to date: everything
 * queued that it lacks, in order (so a spectator far behind takes several
 * messages in one write). A broadcast is freed once a pass has brought
 * every spectator past it.
 *
 * Order per spectator is what it would be if every broadcast were delivered
 * at once: a spectator who joins skips what was queued before it (its
 * `start` snapshot already shows that), and before anything else is sent to
 * a spectator (a reply, or it leaves) what is queued for it goes first. A
 * spectator stops being one when its `end` is delivered, and a room with
 * broadcasts still on their way is freed only once they are out. While a
 * room's queue is long (FANOUT_HOLD broadcasts), its racers' input waits, so
 * a room whose audience cannot keep up slows its own race, not the others.
 *
 * Every broadcast carries the room's view (view.h): text spectators whose
 * screens have the same shape share one rendering of it, queued to each by
 * reference. */
#ifndef RACE2048_FANOUT_H
#define RACE2048_FANOUT_H

#include "game.h"

/* Spectators of one room delivered to per loop turn, at most. */
#define FANOUT_TURN 256
/* Broadcasts queued for a room's spectators past which its racers' input waits. */
#define FANOUT_HOLD 64

struct room;

/* A spectator, and the first broadcast (by sequence number) it is owed. */
typedef struct fanout_slot {
    srv_player *p;
    uint64_t since; /* everything before it has been delivered, or predates it */
} fanout_slot;

typedef struct fanout_item fanout_item;

typedef struct fanout {
    struct room *room;  /* what p->watching is for its spectators */
    fanout_slot *slots; /* the spectators, in no order but the cursor's */
    unsigned n, cap;    /* spectators; slots allocated */
    unsigned cursor;    /* slots[0, cursor) were brought up to date this pass */
    fanout_item *head;  /* queued broadcasts, oldest first */
    fanout_item *tail;  /* the newest */
    unsigned pending;   /* how many are queued */
    uint64_t next_seq;  /* sequence number of the next broadcast */
    uint64_t turn;      /* the loop turn that `used` counts for */
    unsigned used;      /* of this turn's share: messages given (a visit: 1 at least) */
    srv_link busy;      /* in game.fanouts while broadcasts are queued */
    uint64_t version;   /* changes with every broadcast, unique among rooms */
    srv_buf *start;     /* a spectator's `start` of the state `start_version` */
    /* ... and its view, shared like the broadcasts' (view.h) */
    srv_view *start_view;
    uint64_t start_version;
} fanout;

/* Sets up f for room r (no spectators, nothing queued). */
void fanout_init(fanout *f, struct room *r);
/* Forgets what is queued and every spectator (their watching is cleared),
 * and frees what f holds. */
void fanout_free(fanout *f);

/* Makes p (watching nothing) a spectator: p->watching = the room, and it is
 * owed every broadcast from the next one. Returns 0, or -1 if memory runs out
 * (p is then no spectator). */
int fanout_add(fanout *f, srv_player *p);
/* p stops watching: first gets what is queued for it (if connected). */
void fanout_remove(fanout *f, srv_player *p);
/* Every spectator stops watching; what is queued is dropped. */
void fanout_detach_all(fanout *f);

/* Delivers m to every spectator: now as far as this turn's share goes, the
 * rest in later turns (from a copy that owns its data). If memory for the
 * copy runs out, the rest is delivered now. An `end` makes each spectator
 * stop watching once it has it. */
void fanout_send(fanout *f, const srv_msg *m);
/* The room's state changed without a broadcast: the spectators' `start`
 * snapshot is made again. */
void fanout_touch(fanout *f);
/* Delivers now whatever is queued for p (a spectator), so that a message
 * sent to p directly comes after the broadcasts made before it. */
void fanout_catch_up(srv_player *p);

/* True while broadcasts wait for spectators. */
static inline bool fanout_busy(const fanout *f) {
    return f->head != NULL;
}
/* True if p's input should wait: it races in a room whose spectators are
 * FANOUT_HOLD broadcasts behind. */
bool fanout_holds(const srv_player *p);

#endif
