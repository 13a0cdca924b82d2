/* cluster.h - the cluster link: this node's presence in NATS, the nodes it sees alive,
 * and the number that keeps its ids apart from other nodes'.
 *
 * Cluster mode (--cluster URL) joins a set of race2048d nodes over NATS with
 * JetStream. Presence is a NATS KV bucket whose entries expire (its TTL): each
 * node renews its entry every CLUSTER_BEAT_MS, so a node that stops in any way
 * drops out of everyone's count within CLUSTER_TTL_MS. A name is held by one
 * process: the entry is created at start (a create fails while another
 * process's entry lives) and renewed by compare-and-set on the revision of
 * the process's own last write, so a renewal that finds another revision
 * (and another value) has found another process holding the name: this one
 * gives its rooms up and stops. Node numbers are claimed
 * with a KV create (compare-and-set: the first claim of a number wins), so no
 * two nodes hand out the same ids. Nothing here is home-made consensus: NATS
 * KV revisions and TTLs decide.
 *
 * libnats runs its own threads: the link's calls (blocking request/reply to
 * NATS) run on a thread of the link's, never on the event loop; the loop
 * reads the link's state (alive nodes, connected or not) under a mutex. */
#ifndef RACE2048_CLUSTER_H
#define RACE2048_CLUSTER_H

#include "base.h"

/* How often a node renews its presence, and how long an entry lives. */
#define CLUSTER_BEAT_MS 1000
#define CLUSTER_TTL_MS  5000
/* A node whose last presence put that succeeded was sent longer ago than
 * this gives its rooms up (fencing), so that their players go and resume
 * where they were taken over. What keeps a room from two nodes is not this
 * timer but the records stream (takeover.c): a claimer marks the subject
 * first, and the old incarnation's publishes, each expecting its own last
 * message, fail from then on, so it replicates, and shows, nothing more.
 * Well past the TTL, so that a NATS hang shorter than about 10 s cuts
 * nobody off (every live node renews within a beat of its return, and no
 * node judges another dead before its own beats have settled). */
#define CLUSTER_FENCE_MS 12000
/* Node numbers: ids are node << CLUSTER_ID_BITS | a local counter. Within a
 * node's range, each start (incarnation) of the node has its own range of
 * 2^CLUSTER_INC_BITS ids: a node restarted without its journal never hands
 * out an id again (until 4096 starts later). */
#define CLUSTER_ID_BITS  40
#define CLUSTER_INC_BITS 28
#define CLUSTER_NODE_MAX 4095
/* The bucket of incarnations (no TTL): "inc.NAME.EPOCH" -> "live", or
 * "claimed:NAME.EPOCH" once a survivor has claimed it (takeover.c). */
#define CLUSTER_OWNERS_BUCKET "race2048-owners"
/* The value a node writes on its earlier incarnations' entries once it holds
 * its name again: they have let go and may be taken over at once. */
#define CLUSTER_INC_FENCED "fenced"
/* The stream of every incarnation's journal records, on subject
 * CLUSTER_RECORDS_SUBJECT NAME.EPOCH. */
#define CLUSTER_RECORDS_STREAM  "RACE2048_RECORDS"
#define CLUSTER_RECORDS_SUBJECT "race2048.rec."
/* The rooms' directory (remote.c): room code -> its node and settings. */
#define CLUSTER_ROOMS_BUCKET "race2048-rooms"

typedef struct cluster cluster;

/* Joins the cluster at url as node `name`: connects (failing within a few
 * seconds if NATS cannot be reached), makes or binds the KV buckets, claims
 * the node's number and creates its presence (an entry already there is
 * watched until it expires, a dead process's, or is renewed, a live one's:
 * then NULL, the name is taken), then starts the link's thread. Returns the
 * link, or NULL with why in err. Blocking (up to CLUSTER_TTL_MS + 2 beats
 * after a kill -9 of the name's last process): call before the loop runs. */
cluster *cluster_open(const char *url, const char *name, char *err, size_t errlen);
/* A planned leave: the presence entry is deleted (others see one node fewer
 * at once), the thread stopped, the connection closed, everything freed. */
void cluster_close(cluster *c);

/* This node's number (1..CLUSTER_NODE_MAX). */
unsigned cluster_node_number(const cluster *c);
/* Nodes with a live presence entry, this one included, as last counted;
 * 0 while NATS cannot be reached. */
unsigned cluster_nodes_alive(cluster *c);
/* The most nodes a link keeps the names of. */
#define CLUSTER_NAMES_MAX 64
typedef char cluster_node_name[64];
/* True if node `name` had a live presence entry at the last count (this
 * node included); false while NATS cannot be reached. */
bool cluster_node_alive(cluster *c, const char *name);
/* The live nodes' names (up to max), sorted, as last counted; returns how many. */
int cluster_alive_names(cluster *c, cluster_node_name *out, int max);
/* True once another process wrote this node's presence entry (it holds the
 * name now): this process must give its rooms up and stop (takeover.c). */
bool cluster_name_lost(cluster *c);
/* False while the connection to NATS is down (the node serves what it can;
 * /healthz says 503). */
bool cluster_connected(cluster *c);

/* Incarnations. Each start of a node is an incarnation NAME.EPOCH, EPOCH a
 * count of the node's starts kept in NATS KV (compare-and-set), put in the
 * presence entry ("NUMBER EPOCH") and registered in CLUSTER_OWNERS_BUCKET.
 * The current epoch, 0 while the node is fenced (no incarnation). */
uint64_t cluster_epoch(cluster *c);
/* The first ids of this process's range (players, games): from the node's
 * number and its first incarnation. */
uint64_t cluster_id_base(const cluster *c);
/* Player ids come in blocks of CLUSTER_ID_BLOCK from a counter in NATS KV
 * (compare-and-set), so that they stay short (a default name `player-N`
 * holds N whole) and no two nodes or starts share one. The first block,
 * claimed at start: its first id, and in *limit the one past it. */
#define CLUSTER_ID_BLOCK 65536
uint64_t cluster_first_ids(const cluster *c, uint64_t *limit);
/* The game's next block (ctx: the link): the one claimed ahead, or, if NATS
 * kept the link from claiming it, this start's own range with no limit.
 * Never blocks. */
bool cluster_next_ids(void *ctx, uint64_t *next, uint64_t *limit);
/* How long ago (ms) the last presence put that succeeded was sent, for the
 * current epoch (*epoch gets it; 0 while fenced, and then -1 is returned). */
int64_t cluster_beat_age_ms(cluster *c, uint64_t *epoch);
/* How long (ms) the link has been in the cluster without a break (its NATS
 * connection lost, or its beats stuck on a hung NATS), -1 while it is not.
 * Right after a break every node is subscribing and renewing again: what
 * NATS says about another node (nobody listens on its subject, no presence)
 * says nothing about it until this reaches CLUSTER_TTL_MS. */
int64_t cluster_steady_ms(cluster *c);
/* How many such breaks the link has had since it joined. */
unsigned cluster_breaks(cluster *c);
/* Fencing (loop): incarnation `epoch` is over; its rooms are given up. The
 * link starts a new incarnation once it reaches NATS, and until then puts no
 * presence: the old one expires and the old incarnation is taken over like a
 * dead node's. Does nothing if epoch is not the current one. */
void cluster_fence(cluster *c, uint64_t epoch);
/* fn(ctx) runs on the link's thread after each presence put that succeeded
 * (takeover.c's claims); set before the loop runs. */
void cluster_on_beat(cluster *c, void (*fn)(void *ctx), void *ctx);
/* Renews the presence now (link thread only: a long step of the claims
 * keeps the node in the cluster meanwhile). */
void cluster_renew(cluster *c);
/* Wakes the link's thread for a beat now. */
void cluster_wake(cluster *c);
/* The presence and incarnation buckets (link thread only: KV calls block). */
struct __kvStore;
struct __kvStore *cluster_presence(cluster *c);
struct __kvStore *cluster_owners(cluster *c);

/* fn(ctx) runs in cluster_close once the connection is closed (nothing is
 * delivered any more) and before the library stops: subscriptions made on
 * the link are destroyed there. */
void cluster_on_close(cluster *c, void (*fn)(void *ctx), void *ctx);
/* This node's name (--node). */
const char *cluster_name(const cluster *c);
/* The link's NATS connection and JetStream context, for the parts of the
 * cluster built on it (remote players, takeover). libnats is thread-safe:
 * publishing and subscribing may be done from the loop; calls that wait for
 * a reply (requests, KV, JetStream acks) belong on a thread of their own. */
struct __natsConnection;
struct __jsCtx;
struct __natsConnection *cluster_nats(cluster *c);
struct __jsCtx *cluster_js(cluster *c);
/* Makes the KV bucket `name` (entries living ttl_ms, 0 = for ever, one
 * revision kept), or binds it if another node made it. Blocking. 0 or -1. */
struct __kvStore;
int cluster_kv_bucket(cluster *c, const char *name, int64_t ttl_ms,
                      struct __kvStore **out);

/* Writes race2048_cluster_nodes and race2048_cluster_connected (ctx: the link). */
struct metrics_out;
void cluster_write_metrics(struct metrics_out *o, void *ctx);

#endif
