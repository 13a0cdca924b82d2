/* accounts_kv_internal.h - what accounts_kv's files share: a KV job, the module's
 * state and the calls between its threads and the loop. */
#ifndef RACE2048_ACCOUNTS_KV_INTERNAL_H
#define RACE2048_ACCOUNTS_KV_INTERNAL_H

#include "accounts_kv.h"

#include <nats/nats.h>

#include "journal.h"

/* A KV key: "e.DAY.SIZE.name" at most 2 + 11 + 2 + 1 + 16 bytes. */
#define KEY_MAX 48

typedef enum job_kind {
    JOB_REGISTER,
    JOB_FETCH,
    JOB_CHANGE,
    JOB_WATCHED,
    JOB_DAILY,
    JOB_ENTRY,         /* a daily entry of this node's, to KV */
    JOB_ENTRY_WATCHED, /* a daily entry from KV, to the boards */
    JOB_CLAIM,         /* a `daily`: the account's day and size, claimed once */
    JOB_ADOPT,         /* an account of this node's journal, not in KV yet */
    JOB_CAUGHT_UP      /* the accounts' watch has brought every existing entry */
} job_kind;

typedef struct kv_job {
    struct kv_job *next; /* in todo or done (under lock) */
    srv_link all;        /* loop only: in k->waiting while it has a player */
    job_kind kind;
    int status;        /* the result: ACCOUNTS_KV_OK, _TAKEN (or not found), _FAILED */
    srv_player *p;     /* loop only: who waits (NULL once gone) */
    char key[KEY_MAX]; /* the KV key */
    char key_hex[2 * ACCT_KEY_BYTES + 1]; /* JOB_REGISTER: the key, until answered */
    proto_request req;                    /* JOB_FETCH: the hello to run again */
    byte_buf later; /* JOB_FETCH, _CLAIM: lines that came after the request, in order */
    acct_snapshot snap;       /* REGISTER: the new account; FETCH, WATCHED: the value */
    bool found;               /* FETCH: snap holds the entry */
    acct_change change;       /* JOB_CHANGE */
    int conflicts;            /* JOB_CHANGE: other nodes' writes met */
    proto_daily_record daily; /* JOB_DAILY */
    proto_daily_entry_record entry; /* JOB_ENTRY, JOB_ENTRY_WATCHED */
    int32_t claim_day;              /* JOB_CLAIM: the day and the `daily`'s settings */
    proto_settings claim_settings;
    uint64_t started_ns;
} kv_job;

struct accounts_kv {
    game *g;
    cluster *c;
    kvStore *kv, *daily_kv;
    kvWatcher *watcher, *daily_watcher;
    uv_thread_t worker, watch_thread, daily_thread;
    bool worker_started, watch_started, daily_started;
    uv_mutex_t lock;
    uv_cond_t wake;
    kv_job *todo, **todo_tail; /* FIFO: one account's changes in order */
    kv_job *done, **done_tail;
    bool stopping;
    bool test_hold;        /* ACCOUNTS_KV_TEST_HOLD: changes are dropped */
    int64_t next_daily_ms; /* worker only */
    uv_async_t async;
    bool async_ready;
    srv_link waiting; /* loop: jobs with a player */
    accounts_kv_registered_fn registered;
    accounts_kv_fetched_fn fetched;
    accounts_kv_claimed_fn claimed;
    /* loop only, for /metrics */
    uint64_t conflicts, changes, lost, fetches, fetch_ns, watched;
    uint64_t claims, claims_played, claims_failed;
    /* loop only: the accounts this node had before the watch began
     * (accounts_kv_adopt.c) */
    struct adopt_name *adopt_names; /* sorted by folded name */
    size_t adopt_count, adopt_next, adopt_in_flight;
    bool adopt_caught_up;
    uint64_t adopted, adopt_same, adopt_conflicts, adopt_failed;
};

/* A name in lower case: KV keys are compared as they are. */
void kv_fold_name(const char *name, char out[ACCT_NAME_MAX + 1]);
/* "a." and the folded name. */
void kv_account_key(const char *name, char out[KEY_MAX]);
/* True once accounts_kv_close began: a thread stops between KV calls. */
bool kv_stopping(accounts_kv *k);
/* Threads: a job back to the loop. */
void kv_push_done(accounts_kv *k, kv_job *j);
/* Threads: the account entry of key into *snap: 1 found (rev in *rev), 0 none,
 * -1 NATS failed. */
int kv_get_account(accounts_kv *k, const char *key, acct_snapshot *snap, uint64_t *rev);
/* Threads: creates key's entry with snap's record (kvStore_Create: only if the
 * key has none): 1 created, 0 not (it has one, or NATS failed), -1 out of
 * memory. */
int kv_create_account(accounts_kv *k, const char *key, const acct_snapshot *snap);
/* Loop: a job to the worker thread (FIFO). */
void kv_submit(accounts_kv *k, kv_job *j);

/* accounts_kv_adopt.c: the accounts of a node's journal from before it ran in
 * the cluster, carried into KV once the watch has brought the cluster's. */
/* Loop, before the watch starts: notes the node's accounts. -1: no memory. */
int adopt_begin(accounts_kv *k);
/* Loop: an entry the watch brought, before it is taken in: true for a
 * conflict with this node's account of that name (logged; the cluster's wins,
 * and the caller writes it to the journal once taken in). */
bool adopt_watched(accounts_kv *k, const acct_snapshot *kv_snap);
/* Loop: the watch has brought every existing entry: the node's accounts it
 * did not bring go to KV, a few at a time. */
void adopt_caught_up(accounts_kv *k);
/* Worker: a JOB_ADOPT's create (OK; TAKEN with j->snap the cluster's when
 * another account of that name got there first; FAILED). */
void adopt_do(accounts_kv *k, kv_job *j);
/* Loop: a JOB_ADOPT came back. */
void adopt_done(accounts_kv *k, kv_job *j);
/* The notes, freed (close). */
void adopt_free(accounts_kv *k);

#endif
