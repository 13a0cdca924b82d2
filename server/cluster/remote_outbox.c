/* remote_outbox.c - what goes to another node: one batch per node and loop turn. */
#include "remote_internal.h"

/* --------------------------------------------------------------- outbox --- */

void outbox_forget_last(outbox *ob) {
    if (ob->last_json) srv_buf_unref(ob->last_json);
    srv_view_unref(ob->last_view);
    json_decref(ob->last_msg);
    ob->last_msg = NULL;
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

/* Sends ob's entries (what waits for the journal is held per guest). */
void outbox_send(remote *r, outbox *ob) {
    if (!json_array_size(ob->ops)) return;
    char subject[sizeof NODE_SUBJECT + NODE_NAME_MAX];
    snprintf(subject, sizeof subject, NODE_SUBJECT "%s", ob->node);
    json_t *body = json_pack("{s:s,s:O}", "from", r->name, "ops", ob->ops);
    if (body) remote_publish(r, subject, body);
    json_decref(body);
    json_array_clear(ob->ops);
    outbox_forget_last(ob);
    ob->tail_msg = ob->tail_to = NULL;
    ob->bytes = 0;
}

void outbox_add(remote *r, outbox *ob, json_t *op, size_t bytes) {
    if (!op) return;
    json_array_append_new(ob->ops, op);
    ob->tail_msg = ob->tail_to = NULL;
    ob->bytes += bytes;
    if (ob->bytes >= OUTBOX_FLUSH_BYTES) outbox_send(r, ob);
}

/* Message msg (borrowed) to recipient to (taken): one more recipient of the
 * last entry if that is the same message, else an entry of its own. */
void outbox_add_msg(remote *r, outbox *ob, json_t *msg, json_t *to, size_t bytes) {
    assert(msg && to);
    if (ob->tail_msg == msg) {
        assert(json_array_size(ob->ops) > 0); /* the tail is in this batch */
        json_array_append_new(ob->tail_to, to);
        ob->bytes += 24;
    } else {
        json_t *recipients = json_array();
        json_t *op = recipients ? json_pack("{s:s,s:O,s:O}", "k", "msg", "to", recipients,
                                            "m", msg)
                                : NULL;
        json_decref(recipients); /* op holds it */
        if (!op) {
            json_decref(to);
            return;
        }
        json_array_append_new(recipients, to);
        json_array_append_new(ob->ops, op);
        ob->tail_msg = msg;
        ob->tail_to = recipients;
        ob->bytes += bytes;
    }
    if (ob->bytes >= OUTBOX_FLUSH_BYTES) outbox_send(r, ob);
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
    holds_release(r);
    outbox *ob, *tmp;
    HASH_ITER(hh, r->outboxes, ob, tmp) outbox_send(r, ob);
}
