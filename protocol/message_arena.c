/* message_arena.c - the arenas' server messages: `arena` (a shared part, then `you`) and
 * `arenas`. */
#include <stdlib.h>
#include <string.h>

#include "byte_buf.h"
#include "message.h"

const char *proto_arena_status_name(proto_arena_status s) {
    switch (s) {
    case PROTO_ARENA_UPCOMING:
        return "upcoming";
    case PROTO_ARENA_RUNNING:
        return "running";
    case PROTO_ARENA_FINISHED:
        return "finished";
    }
    return "finished";
}

static void put(json_t *o, const char *key, json_t *v, bool *ok) {
    if (!o || !v || json_object_set_new_nocheck(o, key, v) != 0) *ok = false;
}

static int out_write(const char *buf, size_t size, void *data) {
    return byte_buf_append(data, buf, size);
}

/* Dumps root compactly into a malloc'd string (no newline) and releases root. */
static char *dump(json_t *root, bool ok, size_t *len) {
    byte_buf ob = {0};
    int rc = -1;
    if (root && ok) {
        rc = json_dump_callback(root, out_write, &ob, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (rc == 0) rc = byte_buf_reserve(&ob, 3); /* room for "}\n\0" */
    }
    json_decref(root);
    if (rc != 0) {
        byte_buf_free(&ob);
        return NULL;
    }
    ob.data[ob.len] = '\0';
    *len = ob.len;
    return (char *)ob.data;
}

static json_t *row_json(const proto_arena_row *r) {
    bool ok = true;
    json_t *o = json_object();
    put(o, "rank", json_integer(r->rank), &ok);
    put(o, "id", json_integer((json_int_t)r->id), &ok);
    put(o, "name", json_string(r->name), &ok);
    put(o, "points", json_integer(r->points), &ok);
    put(o, "races", json_integer(r->races), &ok);
    put(o, "wins", json_integer(r->wins), &ok);
    put(o, "streak", json_integer(r->streak), &ok);
    put(o, "waiting", json_boolean(r->waiting), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *arena_json(const proto_arena_info *a, bool *ok) {
    json_t *o = json_object();
    put(o, "type", json_string("arena"), ok);
    put(o, "arena", json_string(a->code), ok);
    put(o, "name", json_string(a->name), ok);
    put(o, "status", json_string(proto_arena_status_name(a->status)), ok);
    put(o, "starts", json_integer(a->starts_ms), ok);
    put(o, "ends", json_integer(a->ends_ms), ok);
    put(o, "players", json_integer(a->players), ok);
    put(o, "size", json_integer(a->size), ok);
    put(o, "target", json_integer(a->target), ok);
    put(o, "entrants", json_integer((json_int_t)a->entrants), ok);
    if (a->rows) {
        json_t *list = json_array();
        for (int i = 0; list && *ok && i < a->nrows; i++)
            if (json_array_append_new(list, row_json(&a->rows[i])) != 0) *ok = false;
        put(o, "standings", list, ok);
    }
    return o;
}

char *proto_enc_arena_shared(const proto_arena_info *a, size_t *len) {
    bool ok = true;
    json_t *o = arena_json(a, &ok);
    char *s = dump(o, ok, len);
    if (!s) return NULL;
    /* Without its closing brace: the receiver's `you` goes in front of it. */
    s[--*len] = '\0';
    return s;
}

char *proto_arena_finish(const char *shared, size_t shared_len,
                         const proto_arena_row *you, size_t *len) {
    size_t row_len = 0;
    char *row = NULL;
    if (you) {
        bool ok = true;
        json_t *r = row_json(you);
        row = dump(r, r != NULL && ok, &row_len);
        if (!row) return NULL;
    }
    static const char key[] = ",\"you\":";
    size_t n = shared_len + (you ? sizeof key - 1 + row_len : 0) + 2;
    char *line = malloc(n + 1);
    if (line) {
        char *at = line;
        memcpy(at, shared, shared_len);
        at += shared_len;
        if (you) {
            memcpy(at, key, sizeof key - 1);
            at += sizeof key - 1;
            memcpy(at, row, row_len);
            at += row_len;
        }
        *at++ = '}';
        *at++ = '\n';
        *at = '\0';
        *len = n;
    }
    free(row);
    return line;
}

char *proto_enc_arenas(const proto_arena_info *arenas, int n, size_t *len) {
    bool ok = true;
    json_t *o = json_object();
    put(o, "type", json_string("arenas"), &ok);
    json_t *list = json_array();
    for (int i = 0; list && ok && i < n; i++) {
        proto_arena_info a = arenas[i];
        a.rows = NULL;
        if (json_array_append_new(list, arena_json(&a, &ok)) != 0) ok = false;
    }
    put(o, "arenas", list, &ok);
    char *s = dump(o, ok, len);
    if (!s) return NULL;
    s[(*len)++] = '\n';
    s[*len] = '\0';
    return s;
}
