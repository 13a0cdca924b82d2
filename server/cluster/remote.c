/* remote.c - remote's lifetime: open (subscriptions, handles), close, free, metrics. */
#include "remote_internal.h"

#include "metrics.h"

/* ------------------------------------------------------------ lifetime --- */

static natsStatus subscribe(remote *r, char *err, size_t errlen) {
    char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
    snprintf(subject, sizeof subject, NODE_SUBJECT "%s", r->name);
    natsStatus s =
        natsConnection_Subscribe(&r->sub_node, r->nc, subject, remote_on_nats_msg, r);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_find, r->nc, FIND_SUBJECT,
                                     remote_on_nats_msg, r);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_dir, r->nc, DIR_SUBJECT ">",
                                     remote_on_nats_msg, r);
    char probes[sizeof PROBE_SUBJECT + NODE_NAME_MAX + 2];
    snprintf(probes, sizeof probes, PROBE_SUBJECT "%s.>", r->name);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&r->sub_probe, r->nc, probes, remote_on_nats_msg, r);
    if (s != NATS_OK) snprintf(err, errlen, "subscribing: %s", natsStatus_GetText(s));
    return s;
}

/* The connection is closed (cluster_close): the subscriptions and the
 * directory's bucket go, while the library still runs (it frees what they
 * still hold). Held past that, the bucket kept cluster_close waiting for the
 * library's threads until its time-out: a stop took 2 s. */
static void release_subscriptions(void *ctx) {
    remote *r = ctx;
    natsSubscription_Destroy(r->sub_node);
    natsSubscription_Destroy(r->sub_find);
    natsSubscription_Destroy(r->sub_dir);
    natsSubscription_Destroy(r->sub_probe);
    r->sub_node = r->sub_find = r->sub_dir = r->sub_probe = NULL;
    kvStore_Destroy(r->dir_kv);
    if (r->every_kv) kvStore_Destroy(r->every_kv);
    r->dir_kv = NULL;
    r->every_kv = NULL;
}

static void on_closed(uv_handle_t *h) {
    remote *r = h->data; /* every handle's data is r */
    if (--r->open_handles == 0 && r->free_when_closed) remote_free(r);
}

remote *remote_open(game *g, cluster *c, char *err, size_t errlen) {
    remote *r = calloc(1, sizeof *r);
    if (!r || uv_mutex_init(&r->lock) < 0) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->g = g;
    r->c = c;
    r->nc = cluster_nats(c);
    snprintf(r->name, sizeof r->name, "%s", cluster_name(c));
    if (cluster_kv_bucket(c, DIR_BUCKET, 0, &r->dir_kv) < 0) {
        snprintf(err, errlen, "the rooms' directory (NATS KV %s)", DIR_BUCKET);
        uv_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    holds_start(r); /* before anything can fail: remote_close stops it */
    uv_async_init(g->loop, &r->wake, remote_on_wake);
    r->wake.data = r;
    uv_unref((uv_handle_t *)&r->wake);
    uv_prepare_init(g->loop, &r->flush);
    r->flush.data = r;
    uv_prepare_start(&r->flush, outbox_on_flush);
    uv_unref((uv_handle_t *)&r->flush);
    uv_timer_init(g->loop, &r->tick);
    r->tick.data = r;
    uv_timer_start(&r->tick, remote_on_tick, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&r->tick);
    r->open_handles = 3;
    g->code_taken = (game_code_check){.taken = dir_code_taken, .ctx = r};
    if (subscribe(r, err, errlen) != NATS_OK) {
        r->free_when_closed = true;
        remote_close(r);
        return NULL;
    }
    cluster_on_close(c, release_subscriptions, r);
    dir_load(r); /* after subscribing: no change falls in between */
    return r;
}

void remote_close(remote *r) {
    if (!r || r->closing) return;
    uv_mutex_lock(&r->lock);
    r->closing = true; /* callbacks from now on drop what they get */
    uv_mutex_unlock(&r->lock);
    r->g->code_taken = (game_code_check){0};
    natsSubscription_Unsubscribe(r->sub_node);
    natsSubscription_Unsubscribe(r->sub_find);
    natsSubscription_Unsubscribe(r->sub_dir);
    natsSubscription_Unsubscribe(r->sub_probe);
    guest *gs, *gtmp;
    HASH_ITER(hh, r->guests, gs, gtmp) guest_gone(gs);
    remote_home *h, *htmp;
    HASH_ITER(hh, r->homes, h, htmp) home_release(r, h, true);
    while (r->rejoins) {
        rejoin *next = r->rejoins->next;
        free(r->rejoins);
        r->rejoins = next;
    }
    while (r->gathers) {
        gather *next = r->gathers->next;
        gather_free(r->gathers);
        r->gathers = next;
    }
    published *pb, *ptmp;
    HASH_ITER(hh, r->pub, pb, ptmp) {
        dir_put(r, pb->code, NULL);
        HASH_DEL(r->pub, pb);
        free(pb);
    }
    holds_send_all(r); /* the journal has been committed by now */
    holds_stop(r);
    outbox *ob, *otmp;
    HASH_ITER(hh, r->outboxes, ob, otmp) outbox_send(r, ob);
    if (natsConnection_Status(r->nc) == NATS_CONN_STATUS_CONNECTED)
        natsConnection_FlushTimeout(r->nc, 500);
    /* What came in and was not read: libnats must free it while it runs. */
    uv_mutex_lock(&r->lock);
    while (r->in_head) {
        inbox_msg *next = r->in_head->next;
        natsMsg_Destroy(r->in_head->msg);
        free(r->in_head);
        r->in_head = next;
    }
    r->in_tail = NULL;
    uv_mutex_unlock(&r->lock);
    uv_close((uv_handle_t *)&r->wake, on_closed);
    uv_close((uv_handle_t *)&r->flush, on_closed);
    uv_close((uv_handle_t *)&r->tick, on_closed);
}

void remote_free(remote *r) {
    if (!r) return;
    assert(r->nholds == 0); /* remote_close sent them all */
    kvStore_Destroy(r->dir_kv);
    if (r->every_kv) kvStore_Destroy(r->every_kv);
    outbox *ob, *otmp;
    HASH_ITER(hh, r->outboxes, ob, otmp) {
        outbox_forget_last(ob);
        json_decref(ob->ops);
        HASH_DEL(r->outboxes, ob);
        free(ob);
    }
    dir_entry *e, *etmp;
    HASH_ITER(hh, r->dir, e, etmp) {
        HASH_DEL(r->dir, e);
        free(e);
    }
    probe *pr, *ptmp;
    HASH_ITER(hh, r->probes, pr, ptmp) {
        HASH_DEL(r->probes, pr);
        free(pr);
    }
    uv_mutex_destroy(&r->lock);
    free(r);
}

void remote_write_metrics(metrics_out *o, void *ctx) {
    remote *r = ctx;
    unsigned homes = 0;
    remote_home *h, *tmp;
    HASH_ITER(hh, r->homes, h, tmp) homes += h->node[0] != '\0';
    metrics_one(o, "race2048_remote_players", "gauge",
                "Players connected to this node in rooms that other nodes run.", homes);
    metrics_one(o, "race2048_remote_guests", "gauge",
                "Players in this node's rooms whose connections are on other nodes.",
                r->nguests);
    metrics_one(o, "race2048_remote_guest_messages_total", "counter",
                "Messages this node's rooms sent to players of other nodes.",
                r->guest_messages);
    metrics_one(o, "race2048_remote_published_total", "counter",
                "NATS messages this node published to other nodes (batches).",
                r->published);
    metrics_one(o, "race2048_remote_published_bytes_total", "counter",
                "Bytes of those NATS messages.", r->published_bytes);
}
