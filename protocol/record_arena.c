/* record_arena.c - the journal's `arena` record: one arena's whole state, written and
 * read here. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "record.h"

static int out_write(const char *buf, size_t size, void *data) {
    return byte_buf_append(data, buf, size);
}

static void put(json_t *o, const char *key, json_t *v, bool *ok) {
    if (!o || !v || json_object_set_new_nocheck(o, key, v) != 0) *ok = false;
}

int proto_rec_put_arena(byte_buf *b, const proto_arena_record *a) {
    bool ok = true;
    json_t *o = json_object();
    put(o, "j", json_string("arena"), &ok);
    put(o, "arena", json_string(a->code), &ok);
    put(o, "name", json_string(a->name), &ok);
    put(o, "players", json_integer(a->players), &ok);
    put(o, "size", json_integer(a->size), &ok);
    put(o, "target", json_integer(a->target), &ok);
    put(o, "starts", json_integer(a->starts_ms), &ok);
    put(o, "ends", json_integer(a->ends_ms), &ok);
    put(o, "pair_wait", json_integer(a->pair_wait_ms), &ok);
    put(o, "bots_wait", json_integer(a->bots_wait_ms), &ok);
    put(o, "max_entrants", json_integer((json_int_t)a->max_entrants), &ok);
    put(o, "next_race", json_integer((json_int_t)a->next_race), &ok);
    put(o, "finished", json_boolean(a->finished), &ok);
    put(o, "finished_at", json_integer(a->finished_ms), &ok);
    json_t *list = json_array();
    for (size_t i = 0; list && ok && i < a->count; i++) {
        const proto_arena_rec_entrant *e = &a->entrants[i];
        json_t *row = json_pack("[I,s,I,i,i,i,i,b,I,I,i]", (json_int_t)e->id, e->name,
                                (json_int_t)e->points, e->races, e->wins, e->streak,
                                e->state, e->sent_away, (json_int_t)e->since_ms,
                                (json_int_t)e->race, e->race_entrants);
        if (!row || json_array_append_new(list, row) != 0) ok = false;
    }
    put(o, "entrants", list, &ok);
    json_t *back = a->nback ? json_array() : NULL;
    for (size_t i = 0; back && ok && i < a->nback; i++) {
        const proto_arena_rec_back *e = &a->back[i];
        json_t *row = json_pack("[I,s,s]", (json_int_t)e->id, e->token_hash, e->account);
        if (!row || json_array_append_new(back, row) != 0) ok = false;
    }
    if (a->nback) put(o, "back", back, &ok);
    size_t before = b->len;
    int rc =
        ok ? json_dump_callback(o, out_write, b, JSON_COMPACT | JSON_PRESERVE_ORDER) : -1;
    json_decref(o);
    if (rc == 0) rc = byte_buf_append(b, "\n", 1);
    if (rc != 0) b->len = before;
    return rc == 0 ? 0 : -1;
}

static bool get_i(const json_t *o, const char *key, json_int_t lo, json_int_t hi,
                  json_int_t *out) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return false;
    *out = json_integer_value(v);
    return *out >= lo && *out <= hi;
}

static bool get_s(const json_t *o, const char *key, char *out, size_t cap) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) >= cap ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

int proto_arena_record_code(const char *line, size_t len, char code[PROTO_ROOM_MAX + 1]) {
    json_t *o = json_loadb(line, len, 0, NULL);
    const json_t *j = json_object_get(o, "j");
    bool ok = json_is_string(j) &&
              (!strcmp(json_string_value(j), "arena") ||
               !strcmp(json_string_value(j), "arena_ev")) &&
              get_s(o, "arena", code, PROTO_ROOM_MAX + 1) && code[0];
    json_decref(o);
    return ok ? 0 : -1;
}

int proto_dec_arena_record(const char *line, size_t len, proto_arena_record *out) {
    memset(out, 0, sizeof *out);
    json_t *o = json_loadb(line, len, 0, NULL);
    const json_t *j = json_object_get(o, "j");
    json_int_t x[11];
    const json_int_t big = INT64_MAX;
    bool ok =
        json_is_string(j) && !strcmp(json_string_value(j), "arena") &&
        get_s(o, "arena", out->code, sizeof out->code) &&
        get_s(o, "name", out->name, sizeof out->name) &&
        get_i(o, "players", 2, 8, &x[0]) && get_i(o, "size", 3, 8, &x[1]) &&
        get_i(o, "target", 8, PROTO_TARGET_MAX, &x[2]) &&
        get_i(o, "starts", 0, big, &x[3]) && get_i(o, "ends", 0, big, &x[4]) &&
        get_i(o, "pair_wait", 0, big, &x[5]) && get_i(o, "bots_wait", 0, big, &x[6]) &&
        get_i(o, "max_entrants", 1, big, &x[7]) && get_i(o, "next_race", 0, big, &x[8]) &&
        get_i(o, "finished_at", 0, big, &x[9]) &&
        json_is_boolean(json_object_get(o, "finished"));
    const json_t *list = json_object_get(o, "entrants");
    ok = ok && json_is_array(list);
    if (ok) {
        out->players = (int)x[0];
        out->size = (int)x[1];
        out->target = (uint32_t)x[2];
        out->starts_ms = x[3];
        out->ends_ms = x[4];
        out->pair_wait_ms = x[5];
        out->bots_wait_ms = x[6];
        out->max_entrants = (uint64_t)x[7];
        out->next_race = (uint64_t)x[8];
        out->finished_ms = x[9];
        out->finished = json_is_true(json_object_get(o, "finished"));
        out->count = json_array_size(list);
        out->entrants = out->count ? calloc(out->count, sizeof *out->entrants) : NULL;
        ok = !out->count || out->entrants;
    }
    for (size_t i = 0; ok && i < out->count; i++) {
        proto_arena_rec_entrant *e = &out->entrants[i];
        json_int_t id, points, races, wins, streak, state, since, race, race_entrants;
        int sent_away;
        const char *name;
        ok = json_unpack(json_array_get(list, i), "[I,s,I,I,I,I,I,b,I,I,I!]", &id, &name,
                         &points, &races, &wins, &streak, &state, &sent_away, &since,
                         &race, &race_entrants) == 0 &&
             strlen(name) <= PROTO_NAME_MAX && id >= 0 && races >= 0 &&
             races <= INT32_MAX && wins >= 0 && wins <= races && streak >= 0 &&
             streak <= wins && state >= 0 && state <= 2 && race >= 0 &&
             race_entrants >= 0 && race_entrants <= 8;
        if (!ok) break;
        *e = (proto_arena_rec_entrant){.id = (uint64_t)id,
                                       .points = points,
                                       .races = (int)races,
                                       .wins = (int)wins,
                                       .streak = (int)streak,
                                       .state = (int)state,
                                       .sent_away = sent_away,
                                       .since_ms = since,
                                       .race = (uint64_t)race,
                                       .race_entrants = (int)race_entrants};
        memcpy(e->name, name, strlen(name) + 1);
    }
    const json_t *back = json_object_get(o, "back");
    if (ok && back) {
        ok = json_is_array(back);
        out->nback = ok ? json_array_size(back) : 0;
        out->back = out->nback ? calloc(out->nback, sizeof *out->back) : NULL;
        ok = ok && (!out->nback || out->back);
    }
    for (size_t i = 0; ok && i < out->nback; i++) {
        json_int_t id;
        const char *hash, *account;
        ok =
            json_unpack(json_array_get(back, i), "[I,s,s!]", &id, &hash, &account) == 0 &&
            id >= 0 && (strlen(hash) == 64 || !hash[0]) &&
            strlen(account) <= PROTO_NAME_MAX;
        if (!ok) break;
        out->back[i].id = (uint64_t)id;
        memcpy(out->back[i].token_hash, hash, strlen(hash) + 1);
        memcpy(out->back[i].account, account, strlen(account) + 1);
    }
    json_decref(o);
    if (!ok) {
        free(out->entrants);
        free(out->back);
        out->entrants = NULL;
        out->back = NULL;
        out->count = out->nback = 0;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- events --- */

static const char *const ev_names[] = {"in", "out", "form", "race", "abandon"};

int proto_rec_put_arena_event(byte_buf *b, const proto_arena_event *e) {
    bool ok = e->kind >= PROTO_ARENA_EV_IN && e->kind <= PROTO_ARENA_EV_ABANDON;
    json_t *o = ok ? json_object() : NULL;
    put(o, "j", json_string("arena_ev"), &ok);
    put(o, "arena", json_string(e->code), &ok);
    put(o, "ev", json_string(ok ? ev_names[e->kind] : ""), &ok);
    if (e->kind == PROTO_ARENA_EV_IN || e->kind == PROTO_ARENA_EV_OUT)
        put(o, "id", json_integer((json_int_t)e->back.id), &ok);
    if (e->kind == PROTO_ARENA_EV_IN) {
        put(o, "name", json_string(e->name), &ok);
        put(o, "token_hash", json_string(e->back.token_hash), &ok);
        put(o, "account", json_string(e->back.account), &ok);
    }
    if (e->kind >= PROTO_ARENA_EV_FORM) {
        put(o, "race", json_integer((json_int_t)e->race), &ok);
        ok = ok && e->n >= 1 && e->n <= 8;
        json_t *list = json_array();
        for (int i = 0; ok && list && i < e->n; i++) {
            json_t *v = e->kind == PROTO_ARENA_EV_RACE
                            ? json_pack("[I,i,b]", (json_int_t)e->ids[i], e->places[i],
                                        e->left[i])
                            : json_integer((json_int_t)e->ids[i]);
            if (!v || json_array_append_new(list, v) != 0) ok = false;
        }
        put(o, e->kind == PROTO_ARENA_EV_RACE ? "places" : "ids", list, &ok);
    }
    if (e->kind == PROTO_ARENA_EV_RACE) put(o, "players", json_integer(e->players), &ok);
    if (e->kind != PROTO_ARENA_EV_OUT && e->kind != PROTO_ARENA_EV_FORM)
        put(o, "at", json_integer(e->at_ms), &ok);
    size_t before = b->len;
    int rc =
        ok ? json_dump_callback(o, out_write, b, JSON_COMPACT | JSON_PRESERVE_ORDER) : -1;
    json_decref(o);
    if (rc == 0) rc = byte_buf_append(b, "\n", 1);
    if (rc != 0) b->len = before;
    return rc == 0 ? 0 : -1;
}

/* The list of a form, race or abandon event into out; false if it is bad. */
static bool dec_ev_list(const json_t *list, bool places, proto_arena_event *out) {
    if (!json_is_array(list) || json_array_size(list) < 1 || json_array_size(list) > 8)
        return false;
    out->n = (int)json_array_size(list);
    for (int i = 0; i < out->n; i++) {
        const json_t *v = json_array_get(list, (size_t)i);
        json_int_t id, place = 0;
        int left = 0;
        if (places ? json_unpack((json_t *)v, "[I,I,b!]", &id, &place, &left) != 0
                   : !json_is_integer(v))
            return false;
        if (!places) id = json_integer_value(v);
        if (id < 0 || (places && (place < 1 || place > 8))) return false;
        out->ids[i] = (uint64_t)id;
        out->places[i] = (int)place;
        out->left[i] = left;
    }
    return true;
}

int proto_dec_arena_event(const char *line, size_t len, proto_arena_event *out) {
    memset(out, 0, sizeof *out);
    json_t *o = json_loadb(line, len, 0, NULL);
    const json_t *j = json_object_get(o, "j"), *ev = json_object_get(o, "ev");
    bool ok = json_is_string(j) && !strcmp(json_string_value(j), "arena_ev") &&
              get_s(o, "arena", out->code, sizeof out->code) && json_is_string(ev);
    int kind = -1;
    for (int k = 0; ok && k < 5; k++)
        if (!strcmp(json_string_value(ev), ev_names[k])) kind = k;
    ok = ok && kind >= 0;
    out->kind = (proto_arena_ev_kind)kind;
    json_int_t x = 0;
    const json_int_t big = INT64_MAX;
    if (ok && (kind == PROTO_ARENA_EV_IN || kind == PROTO_ARENA_EV_OUT)) {
        ok = get_i(o, "id", 0, big, &x);
        out->back.id = (uint64_t)x;
    }
    if (ok && kind == PROTO_ARENA_EV_IN)
        ok = get_s(o, "name", out->name, sizeof out->name) && out->name[0] &&
             get_s(o, "token_hash", out->back.token_hash, sizeof out->back.token_hash) &&
             (strlen(out->back.token_hash) == 64 || !out->back.token_hash[0]) &&
             get_s(o, "account", out->back.account, sizeof out->back.account);
    if (ok && kind >= PROTO_ARENA_EV_FORM) {
        ok = get_i(o, "race", 1, big, &x) &&
             dec_ev_list(
                 json_object_get(o, kind == PROTO_ARENA_EV_RACE ? "places" : "ids"),
                 kind == PROTO_ARENA_EV_RACE, out);
        out->race = (uint64_t)x;
    }
    if (ok && kind == PROTO_ARENA_EV_RACE) {
        ok = get_i(o, "players", 2, 8, &x);
        out->players = (int)x;
    }
    if (ok && kind != PROTO_ARENA_EV_OUT && kind != PROTO_ARENA_EV_FORM) {
        ok = get_i(o, "at", 0, big, &x);
        out->at_ms = x;
    }
    json_decref(o);
    return ok ? 0 : -1;
}
