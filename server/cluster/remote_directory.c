/* remote_directory.c - the rooms' directory (NATS KV): put this node's, read others'. */
#include "remote_internal.h"

#include "room.h"

/* ------------------------------------------------------------ directory --- */

/* The directory's entry for code is value ("node players started P S T L"),
 * or gone (value NULL). */
static void dir_apply(remote *r, const char *code, const char *value) {
    if (strlen(code) > PROTO_ROOM_MAX || !code[0]) return;
    dir_entry *e = NULL;
    HASH_FIND_STR(r->dir, code, e);
    dir_entry row = {0};
    int started;
    unsigned target, limit;
    if (!value ||
        sscanf(value, "%63s %d %d %d %d %u %u", row.node, &row.players, &started,
               &row.settings.players, &row.settings.size, &target, &limit) != 7) {
        if (e) {
            HASH_DEL(r->dir, e);
            free(e);
        }
        return;
    }
    row.started = started != 0;
    row.settings.target = target;
    row.settings.time_limit = limit;
    snprintf(row.code, sizeof row.code, "%s", code);
    if (e) {
        row.hh = e->hh;
        *e = row;
        return;
    }
    if (!(e = malloc(sizeof *e))) return;
    *e = row;
    int hash_oom = 0;
    HASH_ADD_STR(r->dir, code, e);
    if (hash_oom) free(e);
}

/* A put or delete of the directory, as it went by (every node subscribes to
 * the bucket's subjects; what was there before it started is read at start). */
void dir_on_change(remote *r, natsMsg *msg) {
    const char *code = natsMsg_GetSubject(msg) + strlen(DIR_SUBJECT);
    const char *op = NULL;
    char value[160];
    int len = natsMsg_GetDataLength(msg);
    bool deleted = natsMsgHeader_Get(msg, "KV-Operation", &op) == NATS_OK && op;
    if (deleted || len <= 0 || len >= (int)sizeof value) {
        dir_apply(r, code, NULL);
        return;
    }
    memcpy(value, natsMsg_GetData(msg), (size_t)len);
    value[len] = '\0';
    dir_apply(r, code, value);
}

void dir_put(remote *r, const char *code, const char *value) {
    char subject[sizeof DIR_SUBJECT + PROTO_ROOM_MAX + 1];
    snprintf(subject, sizeof subject, DIR_SUBJECT "%s", code);
    if (value) {
        natsConnection_PublishString(r->nc, subject, value);
        return;
    }
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, NULL, 0) != NATS_OK) return;
    natsMsgHeader_Set(m, "KV-Operation", "DEL");
    natsConnection_PublishMsg(r->nc, m);
    natsMsg_Destroy(m);
}

static void sync_list(remote *r, const srv_link *list) {
    for (const srv_link *l = list->next; l != list; l = l->next) {
        const room *rm = srv_container(l, room, listed);
        char value[128];
        snprintf(value, sizeof value, "%s %d %d %d %d %u %u", r->name, rm->nseats,
                 rm->state == ROOM_RUNNING, rm->settings.players, rm->settings.size,
                 rm->settings.target, rm->settings.time_limit);
        published *pb = NULL;
        HASH_FIND_STR(r->pub, rm->code, pb);
        if (!pb) {
            if (!(pb = calloc(1, sizeof *pb))) continue;
            snprintf(pb->code, sizeof pb->code, "%s", rm->code);
            int hash_oom = 0;
            HASH_ADD_STR(r->pub, code, pb);
            if (hash_oom) {
                free(pb);
                continue;
            }
        }
        pb->seen = true;
        if (strcmp(pb->value, value) != 0) {
            snprintf(pb->value, sizeof pb->value, "%s", value);
            dir_put(r, pb->code, value);
        }
    }
}

/* Puts what changed among this node's listed rooms (waiting and running:
 * what `join` and `watch` can find), deletes what went. */
void dir_sync(remote *r) {
    if (r->g->rooms_gen == r->rooms_gen && !r->dir_dirty) return;
    if (!cluster_connected(r->c)) {
        r->dir_dirty = true; /* everything again once NATS is back */
        return;
    }
    if (r->dir_dirty) {
        published *pb, *tmp;
        HASH_ITER(hh, r->pub, pb, tmp) pb->value[0] = '\0';
    }
    r->rooms_gen = r->g->rooms_gen;
    r->dir_dirty = false;
    sync_list(r, &r->g->waiting_rooms);
    sync_list(r, &r->g->running_rooms);
    published *pb, *tmp;
    HASH_ITER(hh, r->pub, pb, tmp) {
        if (pb->seen) {
            pb->seen = false;
            continue;
        }
        dir_put(r, pb->code, NULL);
        HASH_DEL(r->pub, pb);
        free(pb);
    }
}

bool dir_code_taken(void *ctx, const char *code) {
    remote *r = ctx;
    dir_entry *e = NULL;
    HASH_FIND_STR(r->dir, code, e);
    return e && strcmp(e->node, r->name) != 0;
}

/* The directory as it is when this node starts; entries an earlier run of
 * this node left are deleted (it rejoins empty). */
void dir_load(remote *r) {
    kvKeysList keys = {0};
    if (kvStore_Keys(&keys, r->dir_kv, NULL) != NATS_OK) return;
    for (int i = 0; i < keys.Count; i++) {
        kvEntry *e = NULL;
        if (kvStore_Get(&e, r->dir_kv, keys.Keys[i]) != NATS_OK) continue;
        char node[NODE_NAME_MAX] = "";
        const char *value = kvEntry_ValueString(e);
        if (sscanf(value, "%63s", node) == 1 && !strcmp(node, r->name))
            kvStore_Delete(r->dir_kv, keys.Keys[i]);
        else
            dir_apply(r, keys.Keys[i], value);
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
}
