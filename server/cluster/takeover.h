/* takeover.h - failover, above the game: this node's records to the cluster's stream, the
 * races of dead incarnations taken over, and fencing.
 *
 * Records: the journal's replicate hook (takeover_replicate) publishes each
 * commit's bytes on the stream subject of this node's incarnation, so a
 * commit is durable only once it is in JetStream too. After a compaction
 * the compacted journal is published whole (its first message says its
 * length) and the subject's older messages purged, so the stream holds what
 * the journal holds; a reader takes the last whole base and what follows.
 * Takeover: on the
 * link's thread, after each beat, an incarnation in the registry whose
 * presence is gone (or has shown another epoch for CLUSTER_TTL_MS, or that
 * its name's holder marked fenced) and that nobody alive has claimed is
 * claimed by compare-and-set on its registry entry; its records
 * are read from the stream and handed to the loop, which rebuilds its
 * running games as recovery does from the journal and writes them into
 * this node's journal; once that is durable, the old entry is deleted and
 * its records purged. A claimer first puts a marker on the claimed subject;
 * since each publish of an incarnation expects its own previous message to
 * be the subject's last, the old incarnation replicates nothing after it
 * (and so shows nothing more: journal_show_pos). No node claims before its
 * own beats have gone through for the presence TTL since a gap (NATS back
 * from an outage: the live nodes renew first). Fencing: a node gives every
 * room up when its last presence put that went through was sent more than
 * CLUSTER_FENCE_MS ago, when it learns its incarnation was claimed, or when
 * records were dropped unreplicated (journal_replication_broken). */
#ifndef RACE2048_TAKEOVER_H
#define RACE2048_TAKEOVER_H

#include "cluster.h"
#include "game.h"

typedef struct takeover takeover;

/* Made before the journal opens (it is the journal's replicate context).
 * NULL if memory runs out. */
takeover *takeover_new(cluster *c);
/* Starts the claims and the fencing check on loop, for game g. Returns 0 or
 * -1. When the node is fenced, takeover_fence.c gives every room up
 * (room_give_up_all, remote_give_up) after close_connections below. */
int takeover_start(takeover *t, game *g, uv_loop_t *loop);
/* Fencing's part for the layer that holds connections (registered from
 * above, so that this layer never calls up): close(ctx) tells the players of
 * this node's rooms and spectators why, closes the connections that must
 * not stay (racers' after their last bytes; at once any whose output holds
 * an `end` not yet durable: the cluster's records lack it) and returns how
 * many it closed. Set before the loop runs. */
void takeover_on_fence(takeover *t, size_t (*close_connections)(void *ctx), void *ctx);
/* The remote players whom fencing lets go (remote_give_up); NULL: none. */
struct remote;
void takeover_set_remote(takeover *t, struct remote *r);
/* True once another process took this node's name and this one let go (the
 * process exits non-zero). NULL is fine (false). */
bool takeover_name_lost(const takeover *t);
/* fn(ctx) runs on the loop once another process holds this node's name
 * (cluster_name_lost), after this node gave its rooms up: the process stops
 * and exits non-zero. Set before the loop runs. */
void takeover_on_name_lost(takeover *t, void (*fn)(void *ctx), void *ctx);
/* The server is stopping: nothing more is claimed or rebuilt. */
void takeover_stop(takeover *t);
/* After cluster_close (the link's thread is gone) and the loop's handles
 * are closed. NULL is fine. */
void takeover_free(takeover *t);

/* journal_config.replicate (ctx: the takeover): on a worker thread. */
int takeover_replicate(void *ctx, const char *bytes, size_t len, size_t base_len);

/* Writes race2048_cluster_takeovers_total and friends (ctx: the takeover). */
struct metrics_out;
void takeover_write_metrics(struct metrics_out *o, void *ctx);

#endif
