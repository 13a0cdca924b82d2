/* takeover_internal.h - what takeover's files share: its state, constants and calls. */
#ifndef RACE2048_TAKEOVER_INTERNAL_H
#define RACE2048_TAKEOVER_INTERNAL_H

#include "takeover.h"
#include "remote.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

/* How often the loop checks the fence and a takeover's progress. */
#define CHECK_MS 250
/* Largest message published (NATS takes 1 MiB by default): whole records. */
#define CHUNK_BYTES (256u << 10)
/* Longest wait for JetStream's ack of a publish, and for the next record
 * of a stream being read. */
#define PUBLISH_WAIT_MS 2000
#define READ_WAIT_MS    3000
/* An incarnation whose name's presence shows another incarnation is dead
 * only once it has shown so this long: its process (if it still runs) has
 * fenced by then. Renewals are compare-and-set, so a process sees another
 * value at its next renewal and stops, and it fences anyway CLUSTER_FENCE_MS
 * after its last renewal went through; the wait is the TTL, as if the entry
 * had expired. */
#define SUPERSEDED_DEAD_MS CLUSTER_TTL_MS
/* Incarnations whose presence shows another one, tracked at once. */
#define SUPERSEDED_MAX 64
/* The header of the first message of a compacted journal published whole:
 * its length in bytes. Once that many have followed, everything before it
 * on the subject is superseded (and purged). */
#define BASE_HEADER "Race2048-Base"
/* The header of the message a claimer puts on a claimed incarnation's
 * subject before it reads it (its value: the claimer). The incarnation's own
 * publishes each expect the subject's last message to be its previous one,
 * so once this is there it can replicate nothing more: whatever it has not
 * replicated it never shows (a move beyond the sync window, an `end`), and
 * it learns that it was taken over. */
#define CLAIM_HEADER "Race2048-Claimed"
/* NATS's header for a publish's expectation of the subject's last sequence
 * (libnats sends it only when not 0; 0 expects an empty subject). */
#define EXPECT_SUBJECT_SEQ "Nats-Expected-Last-Subject-Sequence"
/* A node judges another incarnation dead only once its own beats have gone
 * through without a gap for the presence TTL: after NATS itself was away
 * (down or hung), every node's presence may have expired meanwhile, and the
 * live ones renew theirs within a beat or two of its return. */
#define SETTLE_MS   CLUSTER_TTL_MS
#define BEAT_GAP_MS (2 * CLUSTER_BEAT_MS + 500)
/* Deleted rooms leave a marker each in the directory bucket: every this many
 * beats the markers older than DIR_MARKER_AGE_S go, so that rooms made and
 * left do not pile up there for ever (a marker's news reached every node
 * when it was put; one that old guards no re-put of its code). */
#define DIR_PURGE_BEATS  10
#define DIR_MARKER_AGE_S 10
/* Incarnations taken over as one job at most: a dead incarnation and those it
 * had claimed (and they had, and so on). */
#define JOB_MEMBERS_MAX 32
/* Test-only (inert unless set): a taker waits this many ms between making a
 * takeover durable and cleaning it up, so that a test can kill it in that
 * window (tests/server/test_cluster_takeover.c, test_dead_taker_group). */
#define TEST_PAUSE_ENV "RACE2048_TEST_TAKEOVER_PAUSE_MS"

/* One takeover at a time, from its claim to its clean-up. */
typedef enum job_state {
    JOB_NONE,
    JOB_CLAIMED,  /* claimed; its records could not be read yet */
    JOB_READY,    /* claimed, records read: for the loop to rebuild */
    JOB_ADOPTING, /* rebuilt: waiting for this journal to make it durable */
    JOB_ADOPTED,  /* durable here: the old entry and records may go */
} job_state;

/* One incarnation of a job. */
typedef struct job_member {
    char key[128];     /* its registry entry, "inc.NAME.EPOCH" */
    char subject[128]; /* its records */
    char *records;     /* JOB_READY: the bytes read (malloc'd) */
    size_t len;
} job_member;

/* A dead incarnation (the root, member 0) with every incarnation whose entry
 * says it had claimed them, transitively, in breadth-first order: one
 * takeover. The root holds the newest copies of what it adopted (and the
 * verdicts of what it ended), so a game is rebuilt from the first member
 * that has it, and only once: taken apart, the games a dead taker had
 * adopted would be rebuilt twice (once from its records, once from the
 * records of the incarnation it took them from). */
typedef struct job {
    job_state state;
    int nmembers;
    job_member m[JOB_MEMBERS_MAX];
    uint64_t epoch;  /* this node's incarnation that claimed it */
    uint64_t target; /* JOB_ADOPTING: the journal position to reach */
    int64_t claimed_ms, adopted_ms;
} job;

struct takeover {
    cluster *c;
    game *g;
    uv_loop_t *loop;
    /* Fencing: the layer that holds connections closes those that must not
     * stay (takeover_on_fence); the remote players are let go (remote_give_up). */
    size_t (*close_connections)(void *ctx);
    void *close_ctx;
    remote *remote;
    uv_async_t async;
    uv_timer_t check;
    bool started;
    uv_mutex_t lock; /* guards job and stopping */
    job job;
    bool stopping;
    /* Replication (worker thread, one call at a time). */
    uint64_t repl_epoch;    /* the incarnation repl_pos counts for */
    uint64_t repl_pos;      /* bytes of that incarnation published for sure */
    size_t repl_done;       /* of the batch that failed: bytes published for sure */
    size_t repl_unsure;     /* the chunk whose publish failed: its exact length */
    size_t repl_fail_base;  /* the failed batch's base_len */
    uint64_t repl_last_seq; /* the subject's last message, this node's own */
    bool repl_claimed;      /* another node claimed repl_epoch (under lock) */
    uint64_t repl_base_seq; /* the stream sequence of the base's first message */
    uint64_t purge_below;   /* a base is out: its subject's messages before this
                               sequence go (kept while the purge fails) */
    unsigned beats;         /* link's thread: counts to DIR_PURGE_BEATS */
    int64_t beat_end_ms, settled_from_ms; /* SETTLE_MS */
    /* Link thread: incarnations ("NAME.EPOCH") seen superseded, and since
     * when (ms). */
    struct {
        char inc[112];
        int64_t since_ms;
    } superseded[SUPERSEDED_MAX];
    int nsuperseded;
    /* Loop: the name was lost (cluster_name_lost) and that was acted on. */
    void (*name_lost)(void *ctx);
    void *name_lost_ctx;
    bool lost_handled;
    /* Counters (loop). */
    uint64_t takeovers, games, fences;
    int64_t test_pause_ms; /* TEST_PAUSE_ENV; 0 unless a test sets it */
};

/* takeover.c */
void job_free_records(job *j);

/* takeover_claim.c: after each beat, on the link's thread. */
void takeover_on_beat(void *ctx);

/* takeover_fence.c: on the loop. True if this node fenced (or had fenced
 * before) and has nothing more to do this check. */
bool takeover_fence_if_due(takeover *t);

#endif
