/* wire.c - requests, room views and messages between the nodes of a cluster, as JSON. */
#include "wire.h"
#include "hex.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers --- */

#define WIRE_INT_MAX INT64_MAX

static json_int_t get_int(const json_t *o, const char *key, json_int_t lo, json_int_t hi,
                          bool *ok) {
    const json_t *v = json_object_get(o, key);
    if (!v) return 0; /* absent: zero, as the encoders leave zeros out */
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        *ok = false;
        return 0;
    }
    return json_integer_value(v);
}

static bool get_bool(const json_t *o, const char *key) {
    return json_is_true(json_object_get(o, key));
}

/* Copies the string at key into out (cap bytes with its NUL); absent is "". */
static void get_str(const json_t *o, const char *key, char *out, size_t cap, bool *ok) {
    const json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (!v) return;
    if (!json_is_string(v) || json_string_length(v) >= cap ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        *ok = false;
        return;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
}

/* Sets key only for a non-zero value: what most messages carry is zeros. */
static void set_int(json_t *o, const char *key, json_int_t v) {
    if (v) json_object_set_new(o, key, json_integer(v));
}

static void set_str(json_t *o, const char *key, const char *s) {
    if (s && s[0]) json_object_set_new(o, key, json_string(s));
}

static void set_bool(json_t *o, const char *key, bool b) {
    if (b) json_object_set_new(o, key, json_true());
}

/* Times: ms from now (0 stays 0: none). */
static json_int_t rel_ms(uint64_t at, uint64_t now) {
    if (!at) return 0;
    return at > now ? (json_int_t)(at - now) : 1;
}

static uint64_t abs_ms(json_int_t rel, uint64_t now) {
    return rel ? now + (uint64_t)rel : 0;
}

/* A request's settings; `rated` last (a node of before issue 27 sends four). */
static json_t *settings_json(const proto_settings *s) {
    return json_pack("[iiIIb]", s->players, s->size, (json_int_t)s->target,
                     (json_int_t)s->time_limit, s->rated);
}

static int settings_parse(const json_t *v, proto_settings *out) {
    json_int_t players, size, target, limit;
    int rated = 0;
    if (json_array_size(v) == 5
            ? json_unpack((json_t *)v, "[IIIIb]", &players, &size, &target, &limit,
                          &rated) < 0
            : json_unpack((json_t *)v, "[IIII]", &players, &size, &target, &limit) < 0)
        return -1;
    if (players < 0 || players > PROTO_PLAYERS_MAX || size < 0 || size > ENG_SIZE_MAX ||
        target < 0 || target > (1 << 20) || limit < 0 || limit > 86400)
        return -1;
    *out = (proto_settings){.players = (int)players,
                            .size = (int)size,
                            .target = (uint32_t)target,
                            .time_limit = (uint32_t)limit,
                            .rated = rated != 0};
    return 0;
}

/* ------------------------------------------------------------ requests --- */

json_t *wire_request(const proto_request *req) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "t", json_integer(req->type));
    set_str(o, "n", req->name);
    json_object_set_new(o, "s", settings_json(&req->settings));
    set_bool(o, "hs", req->has_seed);
    set_int(o, "sd", req->seed);
    set_str(o, "r", req->room);
    set_int(o, "d", req->dir);
    set_bool(o, "hq", req->has_seq);
    set_int(o, "q", (json_int_t)req->seq);
    set_str(o, "tk", req->token);
    set_int(o, "l", req->limit);
    set_int(o, "b", req->bots);
    set_int(o, "lv", req->level);
    set_bool(o, "hg", req->has_game);
    set_int(o, "g", (json_int_t)req->game);
    set_str(o, "c", req->code);
    set_str(o, "an", req->arena_name);
    set_int(o, "mi", req->minutes);
    set_int(o, "si", req->starts_in);
    return o;
}

/* The request types one node forwards to another: the room's requests up to
 * replay, and the arenas' (issue 28). Accounts' requests are each node's own;
 * a daily travels only to bring its player back (move_to) and back again. */
static bool forwarded_type(json_int_t t) {
    return (t >= 0 && t <= PROTO_REQ_REPLAY) || t == PROTO_REQ_DAILY ||
           (t >= PROTO_REQ_ARENA_CREATE && t <= PROTO_REQ_ARENA_RESULTS);
}

int wire_request_parse(const json_t *v, proto_request *out) {
    bool ok = json_is_object(v);
    memset(out, 0, sizeof *out);
    if (!ok) return -1;
    json_int_t type = get_int(v, "t", 0, PROTO_REQ_ARENA_RESULTS, &ok);
    if (!forwarded_type(type)) ok = false;
    out->type = (proto_req_type)type;
    get_str(v, "n", out->name, sizeof out->name, &ok);
    const json_t *s = json_object_get(v, "s");
    if (!s || settings_parse(s, &out->settings) < 0) ok = false;
    out->has_seed = get_bool(v, "hs");
    out->seed = (uint32_t)get_int(v, "sd", 0, UINT32_MAX, &ok);
    get_str(v, "r", out->room, sizeof out->room, &ok);
    out->dir = (eng_dir)get_int(v, "d", 0, 3, &ok);
    out->has_seq = get_bool(v, "hq");
    out->seq = (uint64_t)get_int(v, "q", 0, WIRE_INT_MAX, &ok);
    get_str(v, "tk", out->token, sizeof out->token, &ok);
    out->limit = (int)get_int(v, "l", 0, 100, &ok);
    out->bots = (int)get_int(v, "b", 0, PROTO_PLAYERS_MAX - 1, &ok);
    out->level = (int)get_int(v, "lv", 0, 5, &ok);
    out->has_game = get_bool(v, "hg");
    out->game = (uint64_t)get_int(v, "g", 0, WIRE_INT_MAX, &ok);
    get_str(v, "c", out->code, sizeof out->code, &ok);
    get_str(v, "an", out->arena_name, sizeof out->arena_name, &ok);
    out->minutes = (int)get_int(v, "mi", 0, PROTO_ARENA_MINUTES_MAX, &ok);
    out->starts_in = (int)get_int(v, "si", 0, PROTO_ARENA_STARTS_MAX, &ok);
    if (!ok) memset(out, 0, sizeof *out);
    return ok ? 0 : -1;
}

/* --------------------------------------------------------------- views --- */

static json_t *seat_json(const srv_view_seat *seat, uint64_t now) {
    char cells[2 * ENG_CELLS_MAX + 1];
    int n = seat->board.size * seat->board.size;
    proto_hex_encode(seat->board.cell, (size_t)n, cells);
    int flags = seat->seated | seat->connected << 1 | seat->rematch << 2 | seat->bot << 3;
    return json_pack("[Isis IIiiI]", (json_int_t)seat->id, seat->name, seat->board.size,
                     cells, (json_int_t)seat->score, (json_int_t)seat->moves,
                     (int)seat->status, flags, rel_ms(seat->grace_until, now));
}

static int seat_parse(const json_t *v, srv_view_seat *out, uint64_t now) {
    json_int_t id, size, score, moves, status, flags, grace;
    const char *name, *cells;
    if (json_unpack((json_t *)v, "[IsIsIIIII]", &id, &name, &size, &cells, &score, &moves,
                    &status, &flags, &grace) < 0)
        return -1;
    if (id < 0 || strlen(name) > PROTO_NAME_MAX || (size && size < ENG_SIZE_MIN) ||
        size > ENG_SIZE_MAX || score < 0 || moves < 0 || moves > UINT32_MAX ||
        status < 0 || status > PROTO_LEFT || grace < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->board.size = (uint8_t)size;
    if (!proto_hex_decode(cells, out->board.cell, (size_t)(size * size))) return -1;
    for (int i = 0; i < size * size; i++)
        if (out->board.cell[i] > 31) return -1;
    out->id = (uint64_t)id;
    memcpy(out->name, name, strlen(name) + 1);
    out->score = (uint64_t)score;
    out->moves = (uint32_t)moves;
    out->status = (proto_status)status;
    out->seated = flags & 1;
    out->connected = flags & 2;
    out->rematch = flags & 4;
    out->bot = flags & 8;
    out->grace_until = abs_ms(grace, now);
    return 0;
}

json_t *wire_view(const srv_view *v, uint64_t now_ms) {
    json_t *o = json_object(), *seats = json_array();
    if (!o || !seats) {
        json_decref(o);
        json_decref(seats);
        return NULL;
    }
    json_object_set_new(o, "c", json_string(v->code));
    set_bool(o, "so", v->solo);
    set_int(o, "st", v->state);
    json_object_set_new(o, "se", settings_json(&v->settings));
    set_str(o, "cm", v->commit);
    set_int(o, "ea", rel_ms(v->ends_at, now_ms));
    if (v->has_verdict) {
        json_t *ranking = json_array();
        for (int i = 0; i < v->nseats; i++)
            json_array_append_new(ranking, json_integer(v->ranking[i]));
        json_object_set_new(o, "rk", ranking);
        char key[2 * ENG_SEED_KEY_BYTES + 1];
        proto_hex_encode(v->seed.key, sizeof v->seed.key, key);
        json_object_set_new(
            o, "sd",
            json_pack("[iIs]", (int)v->seed.kind, (json_int_t)v->seed.client, key));
        set_str(o, "sa", v->salt);
    }
    for (int i = 0; i < v->nseats; i++)
        json_array_append_new(seats, seat_json(&v->seats[i], now_ms));
    json_object_set_new(o, "s", seats);
    return o;
}

/* The verdict's members of a view: ranking, seed and salt. */
static int verdict_parse(const json_t *o, srv_view *v) {
    const json_t *ranking = json_object_get(o, "rk");
    if (!json_is_array(ranking) || json_array_size(ranking) != (size_t)v->nseats)
        return -1;
    for (int i = 0; i < v->nseats; i++) {
        const json_t *r = json_array_get(ranking, (size_t)i);
        if (!json_is_integer(r) || json_integer_value(r) < 0 ||
            json_integer_value(r) >= v->nseats)
            return -1;
        v->ranking[i] = (uint8_t)json_integer_value(r);
    }
    json_int_t kind, client;
    const char *key;
    if (json_unpack((json_t *)json_object_get(o, "sd"), "[IIs]", &kind, &client, &key) <
            0 ||
        kind < ENG_SEED_CLIENT || kind > ENG_SEED_SERVER || client < 0 ||
        client > UINT32_MAX || !proto_hex_decode(key, v->seed.key, sizeof v->seed.key))
        return -1;
    v->seed.kind = (eng_seed_kind)kind;
    v->seed.client = (uint32_t)client;
    bool ok = true;
    get_str(o, "sa", v->salt, sizeof v->salt, &ok);
    v->has_verdict = true;
    return ok ? 0 : -1;
}

srv_view *wire_view_parse(const json_t *o, uint64_t now_ms) {
    const json_t *seats = json_object_get(o, "s");
    if (!json_is_object(o) || !json_is_array(seats) ||
        json_array_size(seats) > PROTO_PLAYERS_MAX)
        return NULL;
    srv_view *v = srv_view_new((int)json_array_size(seats));
    if (!v) return NULL;
    bool ok = true;
    get_str(o, "c", v->code, sizeof v->code, &ok);
    v->solo = get_bool(o, "so");
    v->state = (srv_view_state)get_int(o, "st", 0, SRV_VIEW_ENDED, &ok);
    const json_t *settings = json_object_get(o, "se");
    if (!settings || settings_parse(settings, &v->settings) < 0) ok = false;
    get_str(o, "cm", v->commit, sizeof v->commit, &ok);
    v->ends_at = abs_ms(get_int(o, "ea", 0, WIRE_INT_MAX, &ok), now_ms);
    for (int i = 0; ok && i < v->nseats; i++)
        if (seat_parse(json_array_get(seats, (size_t)i), &v->seats[i], now_ms) < 0)
            ok = false;
    if (ok && json_object_get(o, "rk") && verdict_parse(o, v) < 0) ok = false;
    if (!ok) {
        srv_view_unref(v);
        return NULL;
    }
    return v;
}

/* ------------------------------------------------------------ messages --- */

json_t *wire_msg(const srv_msg *m, uint64_t now_ms) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "t", json_integer(m->type));
    if (m->json) json_object_set_new(o, "j", json_stringn(m->json->data, m->json->len));
    set_int(o, "e", m->error);
    set_str(o, "x", m->text);
    set_int(o, "sb", (json_int_t)m->subject);
    set_bool(o, "mv", m->moved);
    set_int(o, "rs", m->reason);
    set_str(o, "rc", m->resume_code);
    set_bool(o, "cl", m->closes);
    if (m->view) {
        json_t *view = wire_view(m->view, now_ms);
        if (!view) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "v", view);
    }
    return o;
}

int wire_msg_parse(const json_t *v, uint64_t now_ms, srv_msg *out, char *text,
                   size_t cap) {
    bool ok = json_is_object(v);
    memset(out, 0, sizeof *out);
    if (!ok) return -1;
    out->type = (srv_msg_type)get_int(v, "t", 0, SRV_MSG_VIEW, &ok);
    /* Up to the last code (the arenas'): a room of this node may answer an
     * entrant of another node with any. */
    out->error = (proto_err)get_int(v, "e", 0, PROTO_ERR_ARENA_OVER, &ok);
    get_str(v, "x", text, cap, &ok);
    out->text = text[0] ? text : NULL;
    out->subject = (uint64_t)get_int(v, "sb", 0, WIRE_INT_MAX, &ok);
    out->moved = get_bool(v, "mv");
    out->reason = (proto_end_reason)get_int(v, "rs", 0, 3, &ok);
    get_str(v, "rc", out->resume_code, sizeof out->resume_code, &ok);
    out->closes = get_bool(v, "cl");
    const json_t *view = json_object_get(v, "v");
    const json_t *line = json_object_get(v, "j");
    if (line && (!json_is_string(line) || json_string_length(line) == 0)) ok = false;
    if (!ok) return -1;
    if (view && !(out->view = wire_view_parse(view, now_ms))) return -1;
    if (line) {
        size_t len = json_string_length(line);
        char *data = malloc(len);
        if (data) memcpy(data, json_string_value(line), len);
        if (!(out->json = srv_buf_take(data, len))) {
            srv_view_unref(out->view);
            out->view = NULL;
            return -1;
        }
    }
    return 0;
}
