/* accounts_kv_adopt.c - the accounts a node's journal held before it ran in a cluster
 * (single-node history), carried into NATS KV.
 *
 * At open the node notes the folded names of its accounts. The accounts' watch
 * then brings every entry KV has; each one names a note "seen". Once the watch
 * has brought them all, the accounts whose names were not seen are created in KV
 * (ADOPT_IN_FLIGHT at a time, on the worker thread), so that the rest of the
 * cluster knows them: log-ins on other nodes, compare-and-set of their games.
 * On a later start every name is seen: nothing is written again.
 *
 * A name that is an account of the cluster already with another key (another
 * player registered it elsewhere meanwhile) is a conflict: the cluster's account
 * wins (the watch's acct_restore replaces this node's in the table, as it does
 * for any entry, and the journal gets the cluster's record, so that the next
 * start agrees), and this node's is reported in the log, without its key. */
#include "accounts_kv_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal_accounts.h"

/* Creates in flight at once: enough to keep the worker busy, few enough that
 * the other jobs (register, changes, claims) queue behind only a few. */
#define ADOPT_IN_FLIGHT 16

struct adopt_name {
    char folded[ACCT_NAME_MAX + 1];
    bool seen; /* the watch brought an entry of this name */
};

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const struct adopt_name *)a)->folded,
                  ((const struct adopt_name *)b)->folded);
}

static struct adopt_name *find_note(accounts_kv *k, const char *name) {
    struct adopt_name key;
    kv_fold_name(name, key.folded);
    return k->adopt_count ? bsearch(&key, k->adopt_names, k->adopt_count,
                                    sizeof *k->adopt_names, cmp_names)
                          : NULL;
}

int adopt_begin(accounts_kv *k) {
    const acct_store *s = &k->g->accounts;
    size_t n = acct_count(s);
    if (!n) return 0;
    k->adopt_names = calloc(n, sizeof *k->adopt_names);
    if (!k->adopt_names) return -1;
    for (size_t i = 0; i < n; i++)
        kv_fold_name(acct_at(s, i)->name, k->adopt_names[i].folded);
    qsort(k->adopt_names, n, sizeof *k->adopt_names, cmp_names);
    k->adopt_count = n;
    return 0;
}

/* a (this node's) and the cluster's snap: the same key? */
static bool same_key(const acct_account *a, const acct_snapshot *snap) {
    return !memcmp(a->salt, snap->salt, sizeof a->salt) &&
           !memcmp(a->key_hash, snap->key_hash, sizeof a->key_hash);
}

static void log_conflict(const char *name) {
    srv_log(SRV_LOG_WARN,
            "cluster: account conflict: %s of this node's journal (from before it ran in "
            "the cluster) has another key than the cluster's account of that name; the "
            "cluster's wins, this node's is dropped",
            name);
}

bool adopt_watched(accounts_kv *k, const acct_snapshot *kv_snap) {
    if (k->adopt_caught_up) return false;
    struct adopt_name *note = find_note(k, kv_snap->name);
    if (!note || note->seen) return false;
    note->seen = true;
    const acct_account *mine = acct_find(&k->g->accounts, kv_snap->name);
    if (!mine || same_key(mine, kv_snap)) return false;
    k->adopt_conflicts++;
    log_conflict(mine->name);
    return true;
}

/* The next notes not seen, to the worker, up to ADOPT_IN_FLIGHT in flight. */
static void adopt_more(accounts_kv *k) {
    while (k->adopt_in_flight < ADOPT_IN_FLIGHT && k->adopt_next < k->adopt_count) {
        struct adopt_name *note = &k->adopt_names[k->adopt_next++];
        if (note->seen) continue;
        const acct_account *a = acct_find(&k->g->accounts, note->folded);
        if (!a) continue;
        kv_job *j = calloc(1, sizeof *j);
        if (!j) {
            k->adopt_failed++;
            srv_log(SRV_LOG_ERROR, "cluster: out of memory: account %s not carried over",
                    a->name);
            continue;
        }
        j->kind = JOB_ADOPT;
        /* As the table has it now: a game of the account that finished since
         * the node started is in it (the change itself found no KV entry). */
        acct_snapshot_of(a, &j->snap);
        kv_account_key(a->name, j->key);
        k->adopt_in_flight++;
        kv_submit(k, j);
    }
    if (k->adopt_next == k->adopt_count && !k->adopt_in_flight && k->adopt_names) {
        srv_log(SRV_LOG_INFO,
                "cluster: this node's accounts carried over: %llu created, %llu there "
                "already, %llu conflicts, %llu failed",
                (unsigned long long)k->adopted, (unsigned long long)k->adopt_same,
                (unsigned long long)k->adopt_conflicts,
                (unsigned long long)k->adopt_failed);
        adopt_free(k);
    }
}

void adopt_caught_up(accounts_kv *k) {
    if (k->adopt_caught_up) return;
    k->adopt_caught_up = true;
    adopt_more(k);
}

void adopt_do(accounts_kv *k, kv_job *j) {
    int made = kv_create_account(k, j->key, &j->snap);
    if (made) {
        j->status = made > 0 ? ACCOUNTS_KV_OK : ACCOUNTS_KV_FAILED;
        return;
    }
    /* Created by another node since the watch began: the same account (a
     * copy of this journal) or a conflict, which the loop tells apart. */
    acct_snapshot theirs;
    if (kv_get_account(k, j->key, &theirs, NULL) != 1) {
        j->status = ACCOUNTS_KV_FAILED;
        return;
    }
    j->snap = theirs;
    j->status = ACCOUNTS_KV_TAKEN;
}

void adopt_done(accounts_kv *k, kv_job *j) {
    assert(k->adopt_in_flight > 0);
    k->adopt_in_flight--;
    acct_account *mine = acct_find(&k->g->accounts, j->snap.name);
    if (j->status == ACCOUNTS_KV_OK) {
        k->adopted++;
    } else if (j->status == ACCOUNTS_KV_FAILED) {
        k->adopt_failed++;
        srv_log(SRV_LOG_WARN,
                "cluster: account %s could not be carried into the cluster now (NATS "
                "did not answer); it will be on the node's next start",
                j->snap.name);
    } else if (mine && same_key(mine, &j->snap)) {
        k->adopt_same++;
    } else {
        k->adopt_conflicts++;
        log_conflict(j->snap.name);
        /* The watch brings the cluster's too; taken in now all the same, and
         * journaled so that the next start finds no conflict. */
        acct_account *theirs = NULL;
        if (acct_restore(&k->g->accounts, &j->snap, &theirs) == ACCT_OK)
            (void)journal_account(k->g->journal, theirs);
        else
            srv_log(SRV_LOG_WARN, "cluster: account %s could not be taken in",
                    j->snap.name);
    }
    adopt_more(k);
}

void adopt_free(accounts_kv *k) {
    free(k->adopt_names);
    k->adopt_names = NULL;
    k->adopt_count = k->adopt_next = 0;
}
