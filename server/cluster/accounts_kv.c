/* accounts_kv.c - accounts and daily seeds across the cluster: NATS KV calls on threads
 * of their own, their results applied on the loop. */
#include "accounts_kv_internal.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

#include "daily.h"
#include "journal.h"
#include "journal_accounts.h"
#include "metrics.h"
#include "player.h"

/* How many times a change tries its compare-and-set before it is logged as
 * lost (each retry follows another node's write: only a storm of them on one
 * account gets there). */
#define CAS_TRIES 64

static int64_t now_ms(void) {
    return (int64_t)(uv_hrtime() / 1000000);
}

/* A name in lower case: KV keys are compared as they are. */
void kv_fold_name(const char *name, char out[ACCT_NAME_MAX + 1]) {
    size_t i = 0;
    for (; name[i] && i < ACCT_NAME_MAX; i++)
        out[i] = (char)tolower((unsigned char)name[i]);
    out[i] = '\0';
}

void kv_account_key(const char *name, char out[KEY_MAX]) {
    char folded[ACCT_NAME_MAX + 1];
    kv_fold_name(name, folded);
    snprintf(out, KEY_MAX, "a.%s", folded);
}

/* ------------------------------------------------------------- threads --- */

/* True once accounts_kv_close began: a thread stops between KV calls. */
bool kv_stopping(accounts_kv *k) {
    uv_mutex_lock(&k->lock);
    bool stop = k->stopping;
    uv_mutex_unlock(&k->lock);
    return stop;
}

void kv_push_done(accounts_kv *k, kv_job *j) {
    uv_mutex_lock(&k->lock);
    j->next = NULL;
    *k->done_tail = j;
    k->done_tail = &j->next;
    uv_mutex_unlock(&k->lock);
    if (k->async_ready) uv_async_send(&k->async);
}

/* The entry of key into *snap: 1 found (rev in *rev), 0 none, -1 NATS failed. */
int kv_get_account(accounts_kv *k, const char *key, acct_snapshot *snap, uint64_t *rev) {
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, k->kv, key);
    if (s == NATS_NOT_FOUND) return 0;
    if (s != NATS_OK) return -1;
    int rc = kvEntry_Operation(e) == kvOp_Put &&
                     jacct_parse(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), snap) == 0
                 ? 1
                 : 0;
    if (rev) *rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return rc;
}

int kv_create_account(accounts_kv *k, const char *key, const acct_snapshot *snap) {
    size_t len;
    char *line = jacct_snapshot_record(snap, &len);
    if (!line) return -1;
    uint64_t rev;
    natsStatus s = kvStore_Create(&rev, k->kv, key, line, (int)len);
    free(line);
    return s == NATS_OK;
}

static void do_register(accounts_kv *k, kv_job *j) {
    int made = kv_create_account(k, j->key, &j->snap);
    if (made) {
        j->status = made > 0 ? ACCOUNTS_KV_OK : ACCOUNTS_KV_FAILED;
        return;
    }
    acct_snapshot other;
    j->status = kv_get_account(k, j->key, &other, NULL) == 1 ? ACCOUNTS_KV_TAKEN
                                                             : ACCOUNTS_KV_FAILED;
}

/* Compare-and-set until the change is in (the lost count goes to status). */
static void do_change(accounts_kv *k, kv_job *j) {
    j->status = ACCOUNTS_KV_FAILED;
    int failures = 0;
    for (int t = 0; t < CAS_TRIES && !kv_stopping(k); t++) {
        acct_snapshot snap;
        uint64_t rev = 0;
        int got = kv_get_account(k, j->key, &snap, &rev);
        if (got < 0 && ++failures < 3) continue; /* a NATS hiccup: try again */
        if (got < 0) break;  /* NATS out of reach: each try would wait its timeout */
        if (got == 0) break; /* not in KV (made before the cluster knew it) */
        if (acct_snapshot_apply(&snap, &j->change) != ACCT_OK) break;
        size_t len;
        char *line = jacct_snapshot_record(&snap, &len);
        if (!line) break;
        uint64_t new_rev;
        natsStatus s = kvStore_Update(&new_rev, k->kv, j->key, line, (int)len, rev);
        free(line);
        if (s == NATS_OK) {
            j->status = ACCOUNTS_KV_OK;
            break;
        }
        j->conflicts++; /* another node wrote it since the read: read again */
    }
}

/* A daily entry put as it is now (begun, then finished: the later put is
 * the fuller one; one account plays a day's size on one node at a time). */
static void do_entry(accounts_kv *k, kv_job *j) {
    byte_buf b = {0};
    uint64_t rev;
    j->status =
        proto_rec_put_daily_entry(&b, &j->entry) == 0 &&
                kvStore_Put(&rev, k->daily_kv, j->key, b.data, (int)b.len) == NATS_OK
            ? ACCOUNTS_KV_OK
            : ACCOUNTS_KV_FAILED;
    byte_buf_free(&b);
}

/* A `daily`'s claim: the create of "c.DAY.SIZE.name", its value the node
 * that made it. Only the first create of the cluster succeeds; one that finds
 * another node's claim is TAKEN (daily_played). One that finds this node's own
 * is OK: the loop, which decides one request at a time, starts the game only
 * if its boards have no game of that day and size begun (lobby_daily_claimed),
 * so a claim whose answer was lost (NATS away, the client library sending it
 * once back) does not cost the player the day. Anything else is FAILED:
 * unavailable, no game. */
static void do_claim(accounts_kv *k, kv_job *j) {
    const char *node = cluster_name(k->c);
    size_t node_len = strlen(node);
    /* Created only if the key has no message at all (JetStream's expected
     * last subject sequence 0): atomic, one round trip. kvStore_Create would
     * read the key again after a refusal, to see through a delete marker; a
     * claim is never deleted (only aged out whole), and that read doubles the
     * wait when NATS does not answer. */
    uint64_t rev;
    natsStatus s = kvStore_Update(&rev, k->daily_kv, j->key, node, (int)node_len, 0);
    if (s == NATS_OK) {
        j->status = ACCOUNTS_KV_OK;
        return;
    }
    /* A refusal from JetStream (the key is there) is NATS_ERR; a timeout or a
     * lost connection is not: another read would only wait again. */
    kvEntry *e = NULL;
    if (s != NATS_ERR || kvStore_Get(&e, k->daily_kv, j->key) != NATS_OK) {
        j->status = ACCOUNTS_KV_FAILED;
        return;
    }
    bool own =
        kvEntry_ValueLen(e) == (int)node_len && !memcmp(kvEntry_Value(e), node, node_len);
    j->status = own ? ACCOUNTS_KV_OK : ACCOUNTS_KV_TAKEN;
    kvEntry_Destroy(e);
}

static void do_fetch(accounts_kv *k, kv_job *j) {
    int got = kv_get_account(k, j->key, &j->snap, NULL);
    j->found = got == 1;
    j->status = got < 0 ? ACCOUNTS_KV_FAILED : ACCOUNTS_KV_OK;
}

/* The daily seed of day and size: created here if no node did, else read. */
static void learn_daily(accounts_kv *k, int32_t day, int size) {
    char key[KEY_MAX];
    snprintf(key, sizeof key, "s.%" PRId32 ".%d", day, size);
    kv_job *j = calloc(1, sizeof *j);
    if (!j) return;
    j->kind = JOB_DAILY;
    for (int t = 0; t < 3; t++) {
        kvEntry *e = NULL;
        natsStatus s = kvStore_Get(&e, k->daily_kv, key);
        if (s == NATS_OK) {
            bool ok =
                proto_dec_daily_record(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e),
                                       &j->daily) == 0 &&
                j->daily.day == day && j->daily.size == size;
            kvEntry_Destroy(e);
            if (ok) {
                kv_push_done(k, j);
                return;
            }
            break;
        }
        if (s != NATS_NOT_FOUND) break;
        proto_daily_record d = {
            .day = day, .size = size, .seed = srv_seed_make(false, 0, 0)};
        byte_buf b = {0};
        if (srv_random_hex(d.salt, 16) < 0 || proto_rec_put_daily(&b, &d) < 0) {
            byte_buf_free(&b);
            break;
        }
        uint64_t rev;
        s = kvStore_Create(&rev, k->daily_kv, key, b.data, (int)b.len);
        byte_buf_free(&b);
        if (s == NATS_OK) {
            j->daily = d;
            kv_push_done(k, j);
            return;
        }
        /* Another node's create came first: read it. */
    }
    srv_log(SRV_LOG_WARN, "cluster: the daily seed %s could not be learnt now", key);
    free(j);
}

static void learn_dailies(accounts_kv *k) {
    /* Each KV call would wait its timeout: the seeds are learnt next time. */
    if (!cluster_connected(k->c)) return;
    int32_t today = daily_day_of_ms(journal_wall_ms() + k->g->daily_offset_ms);
    for (int32_t day = today; day <= today + 1; day++)
        for (int size = ACCT_SIZE_MIN; size <= ACCT_SIZE_MAX && !kv_stopping(k); size++)
            learn_daily(k, day, size);
}

static void worker_main(void *arg) {
    accounts_kv *k = arg;
    uv_mutex_lock(&k->lock);
    while (!k->stopping) {
        kv_job *j = k->todo;
        if (!j) {
            int64_t wait = k->next_daily_ms - now_ms();
            if (wait <= 0) {
                uv_mutex_unlock(&k->lock);
                learn_dailies(k);
                k->next_daily_ms = now_ms() + ACCOUNTS_KV_DAILY_MS;
                uv_mutex_lock(&k->lock);
                continue;
            }
            (void)uv_cond_timedwait(&k->wake, &k->lock, (uint64_t)wait * 1000000u);
            continue;
        }
        k->todo = j->next;
        if (!k->todo) k->todo_tail = &k->todo;
        uv_mutex_unlock(&k->lock);
        if (j->kind == JOB_REGISTER)
            do_register(k, j);
        else if (j->kind == JOB_CHANGE)
            do_change(k, j);
        else if (j->kind == JOB_ENTRY)
            do_entry(k, j);
        else if (j->kind == JOB_CLAIM)
            do_claim(k, j);
        else if (j->kind == JOB_ADOPT)
            adopt_do(k, j);
        else
            do_fetch(k, j);
        kv_push_done(k, j);
        uv_mutex_lock(&k->lock);
    }
    uv_mutex_unlock(&k->lock);
}

/* An entry of either bucket as a job for the loop, or NULL. */
static kv_job *watched_job(kvEntry *e) {
    const char *key = kvEntry_Key(e);
    if (kvEntry_Operation(e) != kvOp_Put || !key) return NULL;
    bool account = !strncmp(key, "a.", 2), entry = !strncmp(key, "e.", 2);
    if (!account && !entry) return NULL;
    kv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    const char *v = kvEntry_Value(e);
    size_t len = (size_t)kvEntry_ValueLen(e);
    j->kind = account ? JOB_WATCHED : JOB_ENTRY_WATCHED;
    if (account ? jacct_parse(v, len, &j->snap) == 0
                : proto_dec_daily_entry_record(v, len, &j->entry) == 0)
        return j;
    free(j);
    return NULL;
}

static void watch(accounts_kv *k, kvWatcher *w, bool accounts) {
    for (;;) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, w, 1000);
        if (s == NATS_TIMEOUT) continue;
        if (s != NATS_OK) break; /* stopped */
        if (!e) {                /* the initial values are all in */
            kv_job *j = accounts ? calloc(1, sizeof *j) : NULL;
            if (j) {
                j->kind = JOB_CAUGHT_UP;
                kv_push_done(k, j);
            }
            continue;
        }
        kv_job *j = watched_job(e);
        if (j) kv_push_done(k, j);
        kvEntry_Destroy(e);
    }
}

static void watch_main(void *arg) {
    accounts_kv *k = arg;
    watch(k, k->watcher, true);
}

static void daily_watch_main(void *arg) {
    accounts_kv *k = arg;
    watch(k, k->daily_watcher, false);
}

/* ---------------------------------------------------------------- loop --- */

void kv_submit(accounts_kv *k, kv_job *j) {
    j->started_ns = uv_hrtime();
    if (j->p) srv_list_push(&k->waiting, &j->all);
    uv_mutex_lock(&k->lock);
    j->next = NULL;
    *k->todo_tail = j;
    k->todo_tail = &j->next;
    uv_cond_signal(&k->wake);
    uv_mutex_unlock(&k->lock);
}

static void on_registered(accounts_kv *k, kv_job *j) {
    acct_account *a = NULL;
    accounts_kv_result r = (accounts_kv_result)j->status;
    if (r == ACCOUNTS_KV_OK && acct_restore(&k->g->accounts, &j->snap, &a) != ACCT_OK)
        r = ACCOUNTS_KV_FAILED;
    if (j->p && k->registered) k->registered(j->p, a, j->key_hex, r);
}

static void on_fetched(accounts_kv *k, kv_job *j) {
    k->fetches++;
    k->fetch_ns += uv_hrtime() - j->started_ns;
    if (j->found && !acct_find(&k->g->accounts, j->snap.name))
        (void)acct_restore(&k->g->accounts, &j->snap, NULL);
    if (!j->p) {
        proto_request_clear(&j->req);
        return;
    }
    j->p->account_wait = false;
    /* clears req; runs the later lines */
    k->fetched(j->p, &j->req, j->status == ACCOUNTS_KV_OK, j->later.data, j->later.len);
}

static void on_claimed(accounts_kv *k, kv_job *j) {
    k->claims++;
    if (j->status == ACCOUNTS_KV_TAKEN) k->claims_played++;
    if (j->status == ACCOUNTS_KV_FAILED) k->claims_failed++;
    /* Gone meanwhile: a claimed day counts as played, as a game begun and
     * left on one node does. */
    if (!j->p) return;
    j->p->account_wait = false;
    k->claimed(j->p, j->claim_day, &j->claim_settings, (accounts_kv_result)j->status,
               j->later.data, j->later.len);
}

/* An account entry from the watch, into the table (a conflict with an
 * account of this node's journal: the cluster's wins, journaled too). */
static void on_watched(accounts_kv *k, const acct_snapshot *snap) {
    bool conflict = adopt_watched(k, snap);
    acct_account *a = NULL;
    if (acct_restore(&k->g->accounts, snap, &a) != ACCT_OK)
        srv_log(SRV_LOG_WARN, "cluster: account %s could not be taken in", snap->name);
    else if (conflict)
        (void)journal_account(k->g->journal, a);
}

/* Another node's daily entry (or this node's own, back): on the boards,
 * unless the board has it already or the day is gone. */
static void on_entry(accounts_kv *k, const proto_daily_entry_record *e) {
    game *g = k->g;
    int32_t today = daily_day_of_ms(game_daily_now_ms(g));
    const acct_account *a = acct_find(&g->accounts, e->name);
    if (!a || e->day < today - 7) return;
    int rc = daily_begin(&g->daily, e->day, e->size, a);
    if ((rc != DAILY_OK && rc != DAILY_PLAYED) || !e->finished) return;
    daily_result r = {.score = e->score,
                      .max_tile = e->max_tile,
                      .moves = e->moves,
                      .end_ms = e->end_ms,
                      .game = e->game};
    (void)daily_finish(&g->daily, e->day, e->size, a, &r);
}

static void on_done(uv_async_t *a) {
    accounts_kv *k = a->data;
    uv_mutex_lock(&k->lock);
    kv_job *list = k->done;
    k->done = NULL;
    k->done_tail = &k->done;
    uv_mutex_unlock(&k->lock);
    while (list) {
        kv_job *j = list;
        list = j->next;
        if (j->p) srv_list_remove(&j->all);
        switch (j->kind) {
        case JOB_REGISTER:
            on_registered(k, j);
            break;
        case JOB_FETCH:
            on_fetched(k, j);
            break;
        case JOB_CHANGE:
            k->changes++;
            k->conflicts += (uint64_t)j->conflicts;
            if (j->status != ACCOUNTS_KV_OK) {
                k->lost++;
                srv_log(SRV_LOG_ERROR,
                        "cluster: game %" PRIu64
                        " of account %s not in the cluster's copy",
                        j->change.game, j->change.name);
            }
            break;
        case JOB_WATCHED:
            k->watched++;
            on_watched(k, &j->snap);
            break;
        case JOB_ENTRY:
            if (j->status != ACCOUNTS_KV_OK)
                srv_log(SRV_LOG_WARN, "cluster: a daily entry of %s not in the cluster's",
                        j->entry.name);
            break;
        case JOB_ENTRY_WATCHED:
            on_entry(k, &j->entry);
            break;
        case JOB_CLAIM:
            on_claimed(k, j);
            break;
        case JOB_CAUGHT_UP:
            adopt_caught_up(k);
            break;
        case JOB_ADOPT:
            adopt_done(k, j);
            break;
        case JOB_DAILY:
            if (journal_daily_learn(k->g->journal, j->daily.day, j->daily.size,
                                    &j->daily.seed, j->daily.salt) < 0)
                srv_log(SRV_LOG_WARN, "cluster: a daily seed could not be kept");
            break;
        }
        memset(j->key_hex, 0, sizeof j->key_hex);
        byte_buf_free(&j->later);
        free(j);
    }
}

static void on_change(void *ctx, const acct_change *c) {
    accounts_kv *k = ctx;
    if (k->test_hold) return;
    kv_job *j = calloc(1, sizeof *j);
    if (!j) {
        srv_log(SRV_LOG_ERROR, "cluster: out of memory: game %" PRIu64 " of %s not sent",
                c->game, c->name);
        return;
    }
    j->kind = JOB_CHANGE;
    j->change = *c;
    kv_account_key(c->name, j->key);
    kv_submit(k, j);
}

static void on_daily(void *ctx, int32_t day, int size, const acct_account *a,
                     const daily_result *r) {
    accounts_kv *k = ctx;
    kv_job *j = calloc(1, sizeof *j);
    if (!j) return;
    j->kind = JOB_ENTRY;
    j->entry =
        (proto_daily_entry_record){.day = day, .size = size, .finished = r != NULL};
    snprintf(j->entry.name, sizeof j->entry.name, "%s", a->name);
    if (r) {
        j->entry.score = r->score;
        j->entry.max_tile = r->max_tile;
        j->entry.moves = r->moves;
        j->entry.end_ms = r->end_ms;
        j->entry.game = r->game;
    }
    char folded[ACCT_NAME_MAX + 1];
    kv_fold_name(a->name, folded);
    snprintf(j->key, sizeof j->key, "e.%" PRId32 ".%d.%s", day, size, folded);
    kv_submit(k, j);
}

/* game.h's daily_claim: p's `daily` waits, its input held, for the claim. */
static void on_daily_claim(void *ctx, srv_player *p, int32_t day,
                           const proto_settings *settings) {
    accounts_kv *k = ctx;
    assert(p->account && k->claimed);
    kv_job *j = cluster_connected(k->c) ? calloc(1, sizeof *j) : NULL;
    if (!j) { /* the create would only wait its timeout (or no memory) */
        k->claims++;
        k->claims_failed++;
        k->claimed(p, day, settings, ACCOUNTS_KV_FAILED, NULL, 0);
        return;
    }
    j->kind = JOB_CLAIM;
    j->p = p;
    j->claim_day = day;
    j->claim_settings = *settings;
    char folded[ACCT_NAME_MAX + 1];
    kv_fold_name(p->account->name, folded);
    snprintf(j->key, sizeof j->key, "c.%" PRId32 ".%d.%s", day, settings->size, folded);
    p->account_wait = true;
    kv_submit(k, j);
}

int accounts_kv_register(accounts_kv *k, srv_player *p, const acct_snapshot *snap,
                         const char *key_hex) {
    kv_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->kind = JOB_REGISTER;
    j->p = p;
    j->snap = *snap;
    snprintf(j->key_hex, sizeof j->key_hex, "%s", key_hex);
    kv_account_key(snap->name, j->key);
    kv_submit(k, j);
    return 0;
}

int accounts_kv_fetch(accounts_kv *k, srv_player *p, proto_request *req) {
    kv_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->kind = JOB_FETCH;
    j->p = p;
    j->req = *req;
    kv_account_key(req->name, j->key);
    p->account_wait = true;
    kv_submit(k, j);
    return 0;
}

int accounts_kv_defer(accounts_kv *k, srv_player *p, const char *line, size_t len) {
    for (srv_link *l = k->waiting.next; l != &k->waiting; l = l->next) {
        kv_job *j = (kv_job *)((char *)l - offsetof(kv_job, all));
        if (j->p != p || (j->kind != JOB_FETCH && j->kind != JOB_CLAIM)) continue;
        return byte_buf_append(&j->later, line, len) == 0 &&
                       byte_buf_append(&j->later, "\n", 1) == 0
                   ? 0
                   : -1;
    }
    return -1;
}

void accounts_kv_player_gone(accounts_kv *k, srv_player *p) {
    if (!k) return;
    for (srv_link *l = k->waiting.next; l != &k->waiting;) {
        kv_job *j = (kv_job *)((char *)l - offsetof(kv_job, all));
        l = l->next;
        if (j->p != p) continue;
        srv_list_remove(&j->all);
        j->p = NULL;
    }
    p->account_wait = false;
}

void accounts_kv_on_done(accounts_kv *k, accounts_kv_registered_fn registered,
                         accounts_kv_fetched_fn fetched) {
    k->registered = registered;
    k->fetched = fetched;
}

void accounts_kv_on_claimed(accounts_kv *k, accounts_kv_claimed_fn claimed) {
    k->claimed = claimed;
    k->g->daily_claim = claimed ? on_daily_claim : NULL;
}

/* ------------------------------------------------------------ lifetime --- */

accounts_kv *accounts_kv_open(game *g, cluster *c, uv_loop_t *loop, char *err,
                              size_t errlen) {
    accounts_kv *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    k->g = g;
    k->c = c;
    k->todo_tail = &k->todo;
    k->done_tail = &k->done;
    srv_list_init(&k->waiting);
    k->test_hold = getenv(ACCOUNTS_KV_TEST_HOLD) != NULL;
    if (uv_mutex_init(&k->lock) < 0 || uv_cond_init(&k->wake) < 0) {
        free(k);
        snprintf(err, errlen, "cannot make a lock");
        return NULL;
    }
    if (cluster_kv_bucket(c, ACCOUNTS_KV_BUCKET, 0, &k->kv) < 0) {
        snprintf(err, errlen, "cannot make the accounts' KV bucket");
        goto fail;
    }
    if (cluster_kv_bucket(c, ACCOUNTS_KV_DAILY_BUCKET, ACCOUNTS_KV_DAILY_TTL_MS,
                          &k->daily_kv) < 0) {
        snprintf(err, errlen, "cannot make the daily challenge's KV bucket");
        goto fail;
    }
    if (uv_async_init(loop, &k->async, on_done) < 0) {
        snprintf(err, errlen, "cannot make the accounts' wake-up");
        goto fail;
    }
    k->async.data = k;
    uv_unref((uv_handle_t *)&k->async);
    k->async_ready = true;
    /* Today's and tomorrow's seeds before anyone connects: a node never draws
     * a daily seed of its own in cluster mode while it can reach NATS. */
    learn_dailies(k);
    k->next_daily_ms = now_ms() + ACCOUNTS_KV_DAILY_MS;
    on_done(&k->async);
    /* Test-only: a node that takes in no other node's writes (it learns an
     * account only when a hello asks for it), as a node that never saw it. */
    if (getenv(ACCOUNTS_KV_TEST_NO_WATCH)) goto no_watch;
    /* The accounts of this node's journal, before the watch brings KV's. */
    if (adopt_begin(k) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (kvStore_WatchAll(&k->watcher, k->kv, NULL) != NATS_OK) {
        snprintf(err, errlen, "cannot watch the accounts' KV bucket");
        goto fail;
    }
    if (uv_thread_create(&k->watch_thread, watch_main, k) < 0) {
        snprintf(err, errlen, "cannot start the accounts' watcher");
        goto fail;
    }
    k->watch_started = true;
    if (kvStore_WatchAll(&k->daily_watcher, k->daily_kv, NULL) != NATS_OK ||
        uv_thread_create(&k->daily_thread, daily_watch_main, k) < 0) {
        snprintf(err, errlen, "cannot watch the daily challenge's KV bucket");
        goto fail;
    }
    k->daily_started = true;
no_watch:
    if (uv_thread_create(&k->worker, worker_main, k) < 0) {
        snprintf(err, errlen, "cannot start the accounts' thread");
        goto fail;
    }
    k->worker_started = true;
    g->account_changed = on_change;
    g->daily_changed = on_daily;
    g->account_changed_ctx = k;
    return k;
fail:
    accounts_kv_close(k);
    return NULL;
}

static void free_on_close(uv_handle_t *h) {
    free(h->data);
}

static void free_jobs(kv_job *j) {
    while (j) {
        kv_job *next = j->next;
        if (j->kind == JOB_FETCH) proto_request_clear(&j->req);
        byte_buf_free(&j->later);
        memset(j->key_hex, 0, sizeof j->key_hex);
        free(j);
        j = next;
    }
}

void accounts_kv_close(accounts_kv *k) {
    if (!k) return;
    if (k->g->account_changed_ctx == k) {
        k->g->account_changed = NULL;
        k->g->daily_changed = NULL;
        k->g->daily_claim = NULL;
        k->g->account_changed_ctx = NULL;
    }
    uv_mutex_lock(&k->lock);
    k->stopping = true;
    uv_cond_signal(&k->wake);
    uv_mutex_unlock(&k->lock);
    if (k->watcher) kvWatcher_Stop(k->watcher);
    if (k->daily_watcher) kvWatcher_Stop(k->daily_watcher);
    if (k->worker_started) uv_thread_join(&k->worker);
    if (k->watch_started) uv_thread_join(&k->watch_thread);
    if (k->daily_started) uv_thread_join(&k->daily_thread);
    k->async_ready = false;
    kvWatcher_Destroy(k->watcher);
    kvWatcher_Destroy(k->daily_watcher);
    kvStore_Destroy(k->kv);
    kvStore_Destroy(k->daily_kv);
    free_jobs(k->todo);
    free_jobs(k->done);
    adopt_free(k);
    uv_mutex_destroy(&k->lock);
    uv_cond_destroy(&k->wake);
    if (k->async.data)
        uv_close((uv_handle_t *)&k->async, free_on_close); /* frees k */
    else
        free(k);
}

void accounts_kv_write_metrics(metrics_out *o, void *ctx) {
    accounts_kv *k = ctx;
    metrics_one(o, "race2048_accounts_kv_changes_total", "counter",
                "Finished games of accounts written to the cluster's copy.", k->changes);
    metrics_one(o, "race2048_accounts_kv_conflicts_total", "counter",
                "Compare-and-sets on an account that found another node's write first "
                "(each re-applied on the fresh value).",
                k->conflicts);
    metrics_one(o, "race2048_accounts_kv_lost_total", "counter",
                "Finished games of accounts the cluster's copy could not take.", k->lost);
    metrics_one(o, "race2048_accounts_kv_fetches_total", "counter",
                "Hellos that waited for an account this node had not seen.", k->fetches);
    metrics_one(o, "race2048_accounts_kv_watched_total", "counter",
                "Account entries this node took in from the cluster's watch.",
                k->watched);
    metrics_one(o, "race2048_accounts_kv_daily_claims_total", "counter",
                "Daily games asked here that were claimed in the cluster first.",
                k->claims);
    metrics_one(o, "race2048_accounts_kv_daily_claims_played_total", "counter",
                "Daily claims another claim of the account's day and size had won "
                "(daily_played).",
                k->claims_played);
    metrics_one(o, "race2048_accounts_kv_daily_claims_failed_total", "counter",
                "Daily claims NATS did not answer (unavailable: no game).",
                k->claims_failed);
    metrics_one(o, "race2048_accounts_kv_adopted_total", "counter",
                "Accounts of this node's journal from before it ran in the cluster, "
                "created in the cluster's copy at start.",
                k->adopted);
    metrics_one(o, "race2048_accounts_kv_adopt_conflicts_total", "counter",
                "Accounts of this node's journal whose name the cluster has with "
                "another key (the cluster's account won; each is in the log).",
                k->adopt_conflicts);
}
