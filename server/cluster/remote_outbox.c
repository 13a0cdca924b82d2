/* remote_outbox.c - what goes to another node: one batch per node and loop turn. */
#include "remote_internal.h"

#include "journal.h"
#include "wire.h"

/* --------------------------------------------------------------- outbox --- */

void outbox_forget_last(outbox *ob) {
    if (ob->last_json) srv_buf_unref(ob->last_json);
    srv_view_unref(ob->last_view);
    ob->last_to = NULL;
    ob->last_json = NULL;
    ob->last_view = NULL;
}

outbox *outbox_for(remote *r, const char *node) {
    outbox *ob = NULL;
    HASH_FIND_STR(r->outboxes, node, ob);
    if (ob) return ob;
    if (!(ob = calloc(1, sizeof *ob))) return NULL;
    snprintf(ob->node, sizeof ob->node, "%s", node);
    if (!(ob->ops = json_array())) {
        free(ob);
        return NULL;
    }
    int hash_oom = 0;
    HASH_ADD_STR(r->outboxes, node, ob);
    if (hash_oom) {
        json_decref(ob->ops);
        free(ob);
        return NULL;
    }
    return ob;
}

void remote_publish(remote *r, const char *subject, json_t *body) {
    char *data = json_dumps(body, JSON_COMPACT);
    if (!data) return; /* out of memory: as if NATS had lost it */
    size_t len = strlen(data);
    if (natsConnection_Publish(r->nc, subject, data, (int)len) == NATS_OK) {
        r->published++;
        r->published_bytes += len;
    }
    free(data);
}

/* Sends ob's entries, unless an `end` among them still waits for the journal. */
void outbox_send(remote *r, outbox *ob) {
    if (!json_array_size(ob->ops)) return;
    if (ob->durable_at && journal_durable_pos(r->g->journal) < ob->durable_at) return;
    char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
    snprintf(subject, sizeof subject, NODE_SUBJECT "%s", ob->node);
    json_t *body = json_pack("{s:s,s:O}", "from", r->name, "ops", ob->ops);
    if (body) remote_publish(r, subject, body);
    json_decref(body);
    json_array_clear(ob->ops);
    outbox_forget_last(ob);
    ob->bytes = 0;
    ob->durable_at = 0;
}

void outbox_add(remote *r, outbox *ob, json_t *op, size_t bytes) {
    if (!op) return;
    json_array_append_new(ob->ops, op);
    ob->bytes += bytes;
    if (ob->bytes >= OUTBOX_FLUSH_BYTES) outbox_send(r, ob);
    if (ob->bytes >= OUTBOX_HELD_MAX) {
        /* Held that long, the journal cannot commit (NATS is away, and the
         * node is about to give its rooms up): what waits is let go rather
         * than let grow. */
        srv_log(SRV_LOG_WARN, "messages for node %s held for the journal: dropped",
                ob->node);
        json_array_clear(ob->ops);
        outbox_forget_last(ob);
        ob->bytes = 0;
        ob->durable_at = 0;
    }
}

/* An op to node (made by the caller; NULL is nothing). */
void outbox_send_op(remote *r, const char *node, json_t *op) {
    outbox *ob = outbox_for(r, node);
    if (!ob) {
        json_decref(op);
        return;
    }
    outbox_add(r, ob, op, 128);
}

void outbox_on_flush(uv_prepare_t *h) {
    remote *r = h->data;
    dir_sync(r); /* a room made this turn is listed everywhere now */
    outbox *ob, *tmp;
    HASH_ITER(hh, r->outboxes, ob, tmp) outbox_send(r, ob);
}
