/* accounts_kv.h - accounts and daily seeds across the cluster, in NATS KV.
 *
 * Cluster mode keeps each account as one entry of the KV bucket
 * ACCOUNTS_KV_BUCKET, key "a.<name in lower case>", value the journal's
 * `account` record (journal_accounts.h: name, salt, SHA-256 of salt and key,
 * never the key). NATS decides, nothing home-made:
 *   - register: a KV create; the first node's create wins, the others get
 *     name_taken; `registered` goes out once the create succeeded (durable in
 *     JetStream) and the journal has the record too;
 *   - every finished game of an account (a rated race's update, `recent`,
 *     `best`) is a compare-and-set on the entry's revision; one that finds
 *     another revision (the same account finished a race on another node)
 *     reads the entry again and applies its change to the fresh value, so
 *     neither update is lost (acct_snapshot_apply);
 *   - a watcher on the bucket brings every entry (the existing ones at start,
 *     then each write) to the node's table (acct_restore), so that
 *     `leaderboard` and `profile` stay answered from memory for the whole
 *     cluster;
 *   - a `hello` naming an account this node has not seen yet (a create on
 *     another node that the watcher has not brought) waits, its connection's
 *     input held, for one KV get of that name, then runs again;
 *   - the daily seed of each UTC day and size is the entry "s.DAY.SIZE" of
 *     ACCOUNTS_KV_DAILY_BUCKET (the journal's `daily` record): the first
 *     node's create wins, the others read it; today's and tomorrow's are
 *     learnt at start (before anyone connects) and again every
 *     ACCOUNTS_KV_DAILY_MS;
 *   - each daily entry (begun, finished: the journal's `daily_entry` record)
 *     is put as "e.DAY.SIZE.name" there, and a second watcher puts other
 *     nodes' on this node's boards: one daily board for the cluster, and
 *     `daily_played` for a day's size played on another node;
 *   - a node whose journal holds accounts from before it ran in the cluster
 *     creates those KV lacks once the watch has brought KV's entries (a name
 *     KV has with another key: KV's account wins, the conflict is logged;
 *     accounts_kv_adopt.c);
 *   - before a `daily` starts, the account's day and size is claimed: a KV
 *     create of "c.DAY.SIZE.name" there, so that the same account asking on
 *     two nodes within the same millisecond gets one game; the other create
 *     fails and gets daily_played, and a claim NATS does not answer gets
 *     unavailable (no game) within the JetStream wait.
 * KV calls block: they run on a thread of this module's, and the watcher on
 * another; results are handed to the loop through a uv_async. */
#ifndef RACE2048_ACCOUNTS_KV_H
#define RACE2048_ACCOUNTS_KV_H

#include "cluster.h"
#include "game.h"

#define ACCOUNTS_KV_BUCKET   "race2048-accounts"
#define ACCOUNTS_KV_DAILY_MS 5000
/* The daily challenge's seeds ("s.DAY.SIZE") and entries ("e.DAY.SIZE.name"),
 * kept 8 days (the boards answer for the last 7). */
#define ACCOUNTS_KV_DAILY_BUCKET "race2048-daily"
#define ACCOUNTS_KV_DAILY_TTL_MS (8 * 86400000LL)
/* Test-only environment variable: set, the node starts no watcher. */
#define ACCOUNTS_KV_TEST_NO_WATCH "RACE2048_TEST_NO_ACCOUNT_WATCH"
/* Test-only environment variable: set, the node writes no finished game of an
 * account to KV, as a node killed right after a race's `end`. */
#define ACCOUNTS_KV_TEST_HOLD "RACE2048_TEST_ACCOUNTS_KV_HOLD"

typedef struct accounts_kv accounts_kv;

/* What became of a `register` (ACCOUNTS_KV_OK: a is the account, key_hex its
 * key for `registered`). */
typedef enum accounts_kv_result {
    ACCOUNTS_KV_OK = 0,
    ACCOUNTS_KV_TAKEN = 1,  /* an account of the cluster has the name */
    ACCOUNTS_KV_FAILED = -1 /* NATS out of reach, or no memory */
} accounts_kv_result;
typedef void (*accounts_kv_registered_fn)(srv_player *p, acct_account *a,
                                          const char *key_hex, accounts_kv_result r);
/* A held hello's account was looked up (found or not: the table knows; reached
 * false if NATS could not answer); the hello runs again (req is the callee's
 * to clear), then the JSON lines that came after it (later: '\n'-ended). */
typedef void (*accounts_kv_fetched_fn)(srv_player *p, proto_request *req, bool reached,
                                       const char *later, size_t later_len);
/* A `daily` of p's was claimed (OK: the game may start), found the account's
 * day and size claimed already (TAKEN: daily_played), or NATS could not say
 * (FAILED: no game); then the JSON lines that came after it, as for a hello. */
typedef void (*accounts_kv_claimed_fn)(srv_player *p, int32_t day,
                                       const proto_settings *settings,
                                       accounts_kv_result r, const char *later,
                                       size_t later_len);

/* Makes or binds the bucket, learns the daily seeds of today and tomorrow,
 * starts the threads and sets g's account_changed hook. Blocking: call before
 * the loop runs, after the journal is open. NULL with why in err. */
accounts_kv *accounts_kv_open(game *g, cluster *c, uv_loop_t *loop, char *err,
                              size_t errlen);
void accounts_kv_on_done(accounts_kv *k, accounts_kv_registered_fn registered,
                         accounts_kv_fetched_fn fetched);
/* Sets game.h's daily_claim: from then on each `daily` is claimed in KV first
 * (the key "c.DAY.SIZE.name" of ACCOUNTS_KV_DAILY_BUCKET, created once in the
 * cluster), p's input held meanwhile (p->account_wait), and claimed answers. */
void accounts_kv_on_claimed(accounts_kv *k, accounts_kv_claimed_fn claimed);
/* Stops the threads (what is in flight is dropped) and frees everything;
 * before cluster_close. NULL does nothing. */
void accounts_kv_close(accounts_kv *k);

/* `register` of snap (a new account) for p: the callback says what became of
 * it. key_hex is kept only until then. -1 (nothing started) if memory runs out. */
int accounts_kv_register(accounts_kv *k, srv_player *p, const acct_snapshot *snap,
                         const char *key_hex);
/* A hello of p naming `name`, unknown here: looked up in KV, then the fetched
 * callback runs with *req (moved: the caller must not clear it). p's input is
 * held meanwhile (p->account_wait). -1 (nothing moved) if memory runs out. */
int accounts_kv_fetch(accounts_kv *k, srv_player *p, proto_request *req);
/* A JSON line of p's that came while its hello or daily waits (a WebSocket hands
 * over every message of a read): kept to run after the hello. 0, or -1 if
 * p waits for nothing or memory runs out. */
int accounts_kv_defer(accounts_kv *k, srv_player *p, const char *line, size_t len);
/* p is going: nothing is answered to it any more. */
void accounts_kv_player_gone(accounts_kv *k, srv_player *p);

/* Writes race2048_accounts_kv_* (ctx: k). */
struct metrics_out;
void accounts_kv_write_metrics(struct metrics_out *o, void *ctx);

#endif
