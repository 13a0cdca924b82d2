/* remote.h - players of other nodes: the directory of rooms, requests forwarded to the
 * node that runs a room, its messages delivered back, resume and quick across nodes.
 *
 * Cluster mode. A room is run by one node (its owner). A connection on
 * another node (its edge) reaches it through a *home*: the edge forwards the
 * player's requests to the owner, where the player is a *guest* (a player
 * with a sink of this file's kind, srv_player like any other). The owner's
 * messages to guests go out once per node and turn (a broadcast to many
 * guests on one node is one entry with many recipients), and the edge
 * delivers them to its connections as if its own rooms had sent them. So a
 * room talks to players, and a player of another node is one more
 * destination: the game knows nothing of NATS.
 *
 * NATS subjects (everything between nodes is NATS; nothing here is a
 * protocol of its own beyond what the messages say):
 *   race2048.node.NAME    to one node: batches of requests, messages, closes
 *   race2048.find         to every node: "who holds this seat?" (resume)
 *   $KV.race2048-rooms.>  the directory: room code -> owner and listing row
 * Matchmaking across nodes: a `quick` that found no match on its node
 * within QUICK_MOVE_MS goes to the settings' host node (the same for every
 * node: a rendezvous hash of the settings over the live nodes), where the
 * waiters of all nodes meet. */
#ifndef RACE2048_REMOTE_H
#define RACE2048_REMOTE_H

#include "cluster.h"
#include "game.h"

typedef struct remote remote;

/* Starts forwarding for game g over link c: makes or binds the directory
 * bucket, clears this node's old entries from it, subscribes. Blocking: call
 * before the loop runs. NULL with why in err. */
remote *remote_open(game *g, cluster *c, char *err, size_t errlen);
/* Stops: guests are disconnected (their seats wait out the grace period
 * like any dropped connection's), homes are told nothing (their owners see
 * this node gone), the directory entries of this node are deleted. */
void remote_close(remote *r);
/* Frees r once the loop has run the close callbacks of remote_close, and
 * after cluster_close (no NATS callback can run any more). NULL is fine. */
void remote_free(remote *r);

/* This node gave its rooms up (fenced: cut off from NATS too long): every
 * guest is let go (its node tells the player to resume, which finds the seat
 * where the race went on), and what waits for the journal is dropped. Call
 * after the rooms are given up. */
void remote_give_up(remote *r);

/* The edge's part, for the layer that holds connections (session.c). */

/* Routes request req of p (a player of a connection here): true if it was
 * taken (forwarded to another node, or answered from the directory), false
 * if this node's game should act on it. Clears req when it takes it. */
bool remote_route(remote *r, srv_player *p, proto_request *req);
/* A resume that found no seat here: asks every node; true if it was sent
 * (the answer comes as the seat's welcome and start, through the node that
 * has it), false if the cluster cannot be asked (the caller fails it now).
 * If no node has the seat, failed(p) runs once every other node has said
 * so (a round trip), or at REMOTE_FIND_MS if one has not. But while a
 * node's races may be being taken over (a node that ran rooms was seen gone
 * lately, or a node counted alive does not answer), the resume asks again
 * every REMOTE_REASK_MS, this node included (here(p, seat) then), for up to
 * REMOTE_RESUME_WAIT_MS: the seat comes back as soon as it is taken over. */
bool remote_resume(remote *r, srv_player *p, const proto_request *req);
/* False while this node cannot reach NATS: a seat not here may be on a node
 * it cannot ask (the caller says `unavailable`, not that there is none). */
bool remote_connected(remote *r);
/* The resume failure callback: registered from above (the layer that
 * answers resumes), so that this layer never calls up. */
void remote_on_resume_failed(remote *r, void (*failed)(srv_player *p, bool by_code));
/* The callback for a resume that waited for a takeover and finds the seat
 * on this node: the asker's connection takes seat (registered from above,
 * like failed). */
void remote_on_resume_here(remote *r, void (*here)(srv_player *asker, srv_player *seat));
/* p's connection is gone: its home (if any) is told, and forgotten. */
void remote_player_gone(remote *r, srv_player *p);

/* Arenas (remote_arena.c): arena_join, arena_leave and arena_results go to
 * the node that runs the arena (found by asking every node), where the
 * entrant is a guest like a racer of a room there; `arenas` lists every
 * node's; arena_create runs the arena on the node that got it. */

/* --arena-every in a cluster: each period's arena is opened by the one node
 * whose create-only put of the period's key in this bucket goes through (the
 * others' fail: the key is there). Blocking (the bucket is made or bound):
 * call before the loop runs, before arena_host_schedule. 0, or -1. */
#define ARENA_EVERY_BUCKET "race2048-arena-every"
#define ARENA_EVERY_TTL_MS (24 * 3600 * 1000LL)
int remote_arena_every(remote *r);

/* How long a resume waits for another node's answer. */
#define REMOTE_FIND_MS 1500
/* How long a resume waits for a takeover (the contract's 10 s for a race to
 * go on after its node's death), asking again how often. */
#define REMOTE_RESUME_WAIT_MS 10000
#define REMOTE_REASK_MS       500
/* How long a `quick` waits for a match on its own node before it goes to
 * the host of its settings. */
#define QUICK_MOVE_MS 200

/* Writes race2048_remote_players and race2048_remote_guests (ctx: r). */
struct metrics_out;
void remote_write_metrics(struct metrics_out *o, void *ctx);

#endif
