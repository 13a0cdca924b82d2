/* record.c - a finished game as data: the journal's `game` record, the `history` and
 * `replay` replies made from it, and the record read back. */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "record_internal.h"
#include "render.h"

/* ------------------------------------------------------------- writing --- */

/* Records are written by hand, not through a jansson tree: `history` lists up
 * to 100 of them per request, and the bytes must stay those jansson's compact
 * dump of `end` gave (message.c), which tests/protocol/test_record.c checks. */
static void reserve(rec_out *o, size_t more) {
    if (!o->failed && byte_buf_reserve(o->b, more) < 0) o->failed = true;
}

void rec_put_n(rec_out *o, const char *s, size_t n) {
    if (o->failed || n == 0) return;
    if (byte_buf_append(o->b, s, n) < 0) o->failed = true;
}

void rec_put_s(rec_out *o, const char *s) {
    rec_put_n(o, s, strlen(s));
}

void rec_put_c(rec_out *o, char c) {
    rec_put_n(o, &c, 1);
}

/* Integers as jansson writes them: uint64_t clamped to int64 (message.c's jint);
 * by hand, as a history of 100 races of 8x8 boards holds some 50,000. */
void rec_put_u(rec_out *o, uint64_t v) {
    if (v > (uint64_t)INT64_MAX) v = (uint64_t)INT64_MAX;
    char digits[20];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    rec_put_n(o, digits + sizeof digits - n, (size_t)n);
}

void rec_put_i(rec_out *o, int64_t v) {
    if (v < 0) rec_put_c(o, '-');
    rec_put_u(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* A JSON string escaped as jansson escapes it (UTF-8 passes through). */
void rec_put_str(rec_out *o, const char *s) {
    rec_put_c(o, '"');
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[8];
        switch (c) {
        case '"':
            rec_put_s(o, "\\\"");
            break;
        case '\\':
            rec_put_s(o, "\\\\");
            break;
        case '\b':
            rec_put_s(o, "\\b");
            break;
        case '\f':
            rec_put_s(o, "\\f");
            break;
        case '\n':
            rec_put_s(o, "\\n");
            break;
        case '\r':
            rec_put_s(o, "\\r");
            break;
        case '\t':
            rec_put_s(o, "\\t");
            break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04X", c);
                rec_put_s(o, esc);
            } else {
                rec_put_c(o, (char)c);
            }
        }
    }
    rec_put_c(o, '"');
}

static void put_board(rec_out *o, const eng_board *b) {
    rec_put_c(o, '[');
    for (int r = 0; r < b->size; r++) {
        rec_put_s(o, r ? ",[" : "[");
        for (int c = 0; c < b->size; c++) {
            if (c) rec_put_c(o, ',');
            rec_put_u(o, eng_cell_value(b, r, c));
        }
        rec_put_c(o, ']');
    }
    rec_put_c(o, ']');
}

/* A player object of `end`'s results, in the protocol's order. */
static void put_result(rec_out *o, const proto_result *p) {
    rec_put_s(o, "{\"id\":");
    rec_put_u(o, p->id);
    rec_put_s(o, ",\"name\":");
    rec_put_str(o, p->name);
    rec_put_s(o, ",\"board\":");
    put_board(o, &p->board);
    rec_put_s(o, ",\"score\":");
    rec_put_u(o, p->score);
    rec_put_s(o, ",\"moves\":");
    rec_put_u(o, p->moves);
    rec_put_s(o, ",\"max_tile\":");
    rec_put_u(o, eng_max_tile(&p->board));
    rec_put_s(o, ",\"status\":\"");
    rec_put_s(o, proto_status_name(p->status));
    /* Last, as in `end`'s player objects; only for a bot, so a person's
     * object is as it always was. */
    rec_put_s(o, p->bot ? "\",\"bot\":true}" : "\"}");
}

void rec_put_seed(rec_out *o, const eng_seed *seed) {
    char text[ENG_SEED_TEXT_MAX];
    int n = eng_seed_format(seed, text, sizeof text);
    if (n <= 0) {
        o->failed = true;
        return;
    }
    /* As end.seed: a string for a server seed, a number for a client's. */
    if (seed->kind == ENG_SEED_SERVER) rec_put_c(o, '"');
    rec_put_n(o, text, (size_t)n);
    if (seed->kind == ENG_SEED_SERVER) rec_put_c(o, '"');
}

/* The record's members, from "j" on, without the braces; "moves" last. */
static void put_members(rec_out *o, const proto_game_record *g, bool with_moves) {
    rec_put_s(o, "\"j\":\"game\",\"game\":");
    rec_put_u(o, g->game);
    if (g->room[0]) {
        rec_put_s(o, ",\"room\":");
        rec_put_str(o, g->room);
    }
    rec_put_s(o, ",\"reason\":\"");
    rec_put_s(o, proto_end_reason_name(g->reason));
    rec_put_s(o, "\",\"winner\":");
    if (g->winner)
        rec_put_u(o, g->winner);
    else
        rec_put_s(o, "null");
    rec_put_s(o, ",\"results\":[");
    for (int i = 0; i < g->nresults; i++) {
        if (i) rec_put_c(o, ',');
        put_result(o, &g->results[i]);
    }
    rec_put_s(o, "],\"seed\":");
    rec_put_seed(o, &g->seed);
    rec_put_s(o, ",\"salt\":");
    rec_put_str(o, g->salt);
    /* Written raw since the first journal: 64 hex digits, or "" without one. */
    rec_put_s(o, ",\"commit\":\"");
    rec_put_s(o, g->commit);
    rec_put_s(o, "\",\"size\":");
    rec_put_i(o, g->size);
    rec_put_s(o, ",\"target\":");
    rec_put_u(o, g->target);
    rec_put_s(o, ",\"time_limit\":");
    rec_put_u(o, g->time_limit);
    rec_put_s(o, ",\"started\":");
    rec_put_i(o, g->started);
    rec_put_s(o, ",\"ended\":");
    rec_put_i(o, g->ended);
    if (g->naccounts) {
        rec_put_s(o, ",\"accounts\":{");
        for (int i = 0; i < g->naccounts; i++) {
            rec_put_s(o, i ? ",\"" : "\"");
            rec_put_u(o, g->accounts[i].id);
            rec_put_s(o, "\":");
            rec_put_str(o, g->accounts[i].name);
        }
        rec_put_c(o, '}');
    }
    if (g->nratings) {
        rec_put_s(o, ",\"ratings\":[");
        for (int i = 0; i < g->nratings; i++) {
            const proto_record_rating *r = &g->ratings[i];
            char skills[160];
            /* %.17g: the doubles read back exactly, so the check is exact. */
            snprintf(skills, sizeof skills,
                     ",\"before\":[%.17g,%.17g],\"after\":[%.17g,%.17g]}", r->mu0,
                     r->sigma0, r->mu, r->sigma);
            rec_put_s(o, i ? ",{\"id\":" : "{\"id\":");
            rec_put_u(o, r->id);
            rec_put_s(o, ",\"place\":");
            rec_put_i(o, r->place);
            rec_put_s(o, skills);
        }
        rec_put_c(o, ']');
    }
    if (!with_moves) return;
    rec_put_s(o, ",\"moves\":{");
    for (int i = 0; i < g->nseats; i++) {
        const proto_seat_moves *s = &g->seats[i];
        rec_put_s(o, i ? ",\"" : "\"");
        rec_put_u(o, s->id);
        rec_put_s(o, "\":\"");
        if (s->n) rec_put_n(o, s->letters, s->n);
        rec_put_c(o, '"');
    }
    rec_put_c(o, '}');
}

static char *done(rec_out *o, size_t *len) {
    rec_put_s(o, "}\n");
    reserve(o, 1);
    if (o->failed) {
        byte_buf_free(o->b);
        return NULL;
    }
    o->b->data[o->b->len] = '\0';
    *len = o->b->len;
    return o->b->data;
}

char *proto_enc_game_record(const proto_game_record *g, size_t *len) {
    byte_buf b = {0};
    rec_out o = {.b = &b};
    reserve(&o, 1024); /* a record's size: no growing from one byte */
    rec_put_c(&o, '{');
    put_members(&o, g, true);
    return done(&o, len);
}

char *proto_enc_history(const proto_game_record *const *games, int n, size_t *len) {
    byte_buf b = {0};
    rec_out o = {.b = &b};
    reserve(&o, 1024); /* a record's size: no growing from one byte */
    rec_put_s(&o, "{\"type\":\"history\",\"games\":[");
    for (int i = 0; i < n; i++) {
        rec_put_s(&o, i ? ",{" : "{");
        put_members(&o, games[i], false);
        rec_put_c(&o, '}');
    }
    rec_put_c(&o, ']');
    return done(&o, len);
}

char *proto_enc_replay(const proto_game_record *g, size_t *len) {
    byte_buf b = {0};
    rec_out o = {.b = &b};
    reserve(&o, 1024); /* a record's size: no growing from one byte */
    rec_put_s(&o, "{\"type\":\"replay\",");
    put_members(&o, g, true);
    return done(&o, len);
}

/* ------------------------------------------------------------- reading --- */

void proto_game_record_clear(proto_game_record *g) {
    for (int i = 0; i < g->nseats; i++) {
        free(g->seats[i].letters);
        g->seats[i] = (proto_seat_moves){0};
    }
    g->nseats = 0;
}

bool proto_game_record_played(const proto_game_record *g) {
    for (int i = 0; i < g->nseats; i++)
        if (g->seats[i].n) return true;
    return false;
}

/* A non-negative integer member, or -1. */
static int64_t get_uint(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    return (int64_t)json_integer_value(v);
}

/* Copies a string member into out (n bytes with the NUL); false if it is not
 * a string that fits. */
static bool get_text(const json_t *o, const char *key, char *out, size_t n) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) >= n ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

static bool get_board(const json_t *rows, int size, eng_board *b) {
    if (eng_board_init(b, size) < 0 || json_array_size(rows) != (size_t)size)
        return false;
    for (int r = 0; r < size; r++) {
        const json_t *row = json_array_get(rows, (size_t)r);
        if (json_array_size(row) != (size_t)size) return false;
        for (int c = 0; c < size; c++) {
            const json_t *v = json_array_get(row, (size_t)c);
            int e = 0;
            if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
            if (json_integer_value(v) &&
                (e = eng_value_exp((uint64_t)json_integer_value(v))) <= 0)
                return false;
            b->cell[r * size + c] = (uint8_t)e;
        }
    }
    return true;
}

static bool get_result(const json_t *o, int size, proto_result *p) {
    int64_t id = get_uint(o, "id"), score = get_uint(o, "score"),
            moves = get_uint(o, "moves");
    if (id <= 0 || score < 0 || moves < 0 || moves > UINT32_MAX ||
        !get_text(o, "name", p->name, sizeof p->name) ||
        !get_board(json_object_get(o, "board"), size, &p->board) ||
        proto_status_parse(json_string_value(json_object_get(o, "status")), &p->status) <
            0)
        return false;
    p->id = (uint64_t)id;
    p->score = (uint64_t)score;
    p->moves = (uint32_t)moves;
    p->bot = json_is_true(json_object_get(o, "bot"));
    return true;
}

static bool get_reason(const json_t *o, proto_end_reason *out) {
    return proto_end_reason_parse(json_string_value(json_object_get(o, "reason")), out);
}

/* The "moves" member: seat ids as keys (in the order written), letters. */
static bool get_moves(const json_t *mv, proto_game_record *g) {
    if (!json_is_object(mv) || json_object_size(mv) > PROTO_PLAYERS_MAX) return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)mv, key, v) {
        char *end;
        unsigned long long id = strtoull(key, &end, 10);
        if (!id || *end || !json_is_string(v)) return false;
        const char *letters = json_string_value(v);
        size_t n = json_string_length(v);
        for (size_t k = 0; k < n; k++) {
            eng_dir d;
            if (proto_dir_from_letter(letters[k], &d) < 0) return false;
        }
        proto_seat_moves *s = &g->seats[g->nseats];
        s->id = (uint64_t)id;
        s->n = n;
        if (n && !(s->letters = malloc(n))) return false;
        if (n) memcpy(s->letters, letters, n);
        g->nseats++;
    }
    return true;
}

/* "accounts" (absent: none): seat ids as keys, account names. */
static bool get_accounts(const json_t *a, proto_game_record *g) {
    if (!a) return true;
    if (!json_is_object(a) || json_object_size(a) > PROTO_PLAYERS_MAX) return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)a, key, v) {
        char *end;
        unsigned long long id = strtoull(key, &end, 10);
        const char *name = json_string_value(v);
        if (!id || *end || !name || !proto_valid_name(name)) return false;
        proto_record_account *acc = &g->accounts[g->naccounts++];
        acc->id = (uint64_t)id;
        snprintf(acc->name, sizeof acc->name, "%s", name);
    }
    return true;
}

static bool get_pair(const json_t *a, double *x, double *y) {
    if (json_array_size(a) != 2 || !json_is_number(json_array_get(a, 0)) ||
        !json_is_number(json_array_get(a, 1)))
        return false;
    *x = json_number_value(json_array_get(a, 0));
    *y = json_number_value(json_array_get(a, 1));
    return true;
}

/* "ratings" (absent: not a rated race): one entry per player. */
static bool get_ratings(const json_t *a, proto_game_record *g) {
    if (!a) return true;
    size_t n = json_array_size(a);
    if (!json_is_array(a) || n > PROTO_PLAYERS_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(a, i);
        proto_record_rating *r = &g->ratings[i];
        int64_t id = get_uint(e, "id"), place = get_uint(e, "place");
        if (id <= 0 || place < 1 || place > PROTO_PLAYERS_MAX ||
            !get_pair(json_object_get(e, "before"), &r->mu0, &r->sigma0) ||
            !get_pair(json_object_get(e, "after"), &r->mu, &r->sigma))
            return false;
        r->id = (uint64_t)id;
        r->place = (int)place;
    }
    g->nratings = (int)n;
    return true;
}

/* --------------------------------------------------- reading, fast path --- */

/* Start-up reads the last 1000 finished games back (server/record/): in the
 * exact form the server writes them they are scanned without a JSON parser,
 * ten times faster. Whatever is read is encoded again and must give the same
 * bytes, so the scan may be strict and simple: anything else (an escaped
 * name, a `replay` reply, another order) takes the parser. */

/* A string without escapes into out (cap bytes with the NUL). */
void rec_scan_text(rec_scan *s, char *out, size_t cap) {
    if (!rec_scan_lit(s, "\"")) return;
    const char *from = s->p;
    while (s->p < s->end && *s->p != '"' && *s->p != '\\' && (unsigned char)*s->p >= 0x20)
        s->p++;
    size_t n = (size_t)(s->p - from);
    if (n >= cap || !rec_scan_lit(s, "\"")) {
        s->bad = true;
        return;
    }
    memcpy(out, from, n);
    out[n] = '\0';
}

/* A board of rows of tile values; its size is its number of rows. */
static void board(rec_scan *s, eng_board *b) {
    uint64_t cells[ENG_CELLS_MAX];
    int n = 0, rows = 0;
    rec_scan_lit(s, "[");
    while (!s->bad && rows < ENG_SIZE_MAX && rec_scan_lit(s, rows ? ",[" : "[")) {
        for (int c = 0; !s->bad && n < ENG_CELLS_MAX; c++) {
            if (c && !rec_scan_lit(s, ",")) break;
            cells[n++] = rec_scan_num(s);
            if (rec_scan_peek(s, ']')) break;
        }
        rec_scan_lit(s, "]");
        rows++;
        if (rec_scan_peek(s, ']')) break;
    }
    rec_scan_lit(s, "]");
    if (s->bad || eng_board_init(b, rows) < 0 || n != rows * rows) {
        s->bad = true;
        return;
    }
    for (int k = 0; k < n; k++) {
        int e = cells[k] ? eng_value_exp(cells[k]) : 0;
        if (e < 0) s->bad = true;
        b->cell[k] = (uint8_t)(e < 0 ? 0 : e);
    }
}

static void result(rec_scan *s, proto_result *r) {
    char status[16];
    rec_scan_lit(s, "{\"id\":");
    r->id = rec_scan_num(s);
    rec_scan_lit(s, ",\"name\":");
    rec_scan_text(s, r->name, sizeof r->name);
    rec_scan_lit(s, ",\"board\":");
    board(s, &r->board);
    rec_scan_lit(s, ",\"score\":");
    r->score = rec_scan_num(s);
    rec_scan_lit(s, ",\"moves\":");
    uint64_t moves = rec_scan_num(s);
    r->moves = (uint32_t)moves;
    rec_scan_lit(s, ",\"max_tile\":");
    rec_scan_num(s);
    rec_scan_lit(s, ",\"status\":");
    rec_scan_text(s, status, sizeof status);
    rec_scan_lit(s, "}");
    if (moves > UINT32_MAX || (!s->bad && proto_status_parse(status, &r->status) < 0))
        s->bad = true;
}

static void seed(rec_scan *s, eng_seed *out) {
    if (rec_scan_peek(s, '"')) {
        char hex[ENG_SEED_TEXT_MAX];
        rec_scan_text(s, hex, sizeof hex);
        if (!s->bad && (strlen(hex) != 2 * ENG_SEED_KEY_BYTES ||
                        eng_seed_parse(out, hex, (int)strlen(hex)) < 0))
            s->bad = true;
        return;
    }
    uint64_t v = rec_scan_num(s);
    if (v > UINT32_MAX) s->bad = true;
    *out = eng_seed_client((uint32_t)v);
}

static void seat_moves(rec_scan *s, proto_game_record *g) {
    rec_scan_lit(s, ",\"moves\":{");
    while (!s->bad && rec_scan_peek(s, '"') && g->nseats < PROTO_PLAYERS_MAX) {
        proto_seat_moves *m = &g->seats[g->nseats];
        rec_scan_lit(s, "\"");
        m->id = rec_scan_num(s);
        rec_scan_lit(s, "\":\"");
        const char *from = s->p;
        eng_dir d;
        while (s->p < s->end && proto_dir_from_letter(*s->p, &d) == 0)
            s->p++;
        m->n = (size_t)(s->p - from);
        rec_scan_lit(s, "\"");
        if (s->bad || (m->n && !(m->letters = malloc(m->n)))) return;
        if (m->n) memcpy(m->letters, from, m->n);
        g->nseats++;
        if (rec_scan_peek(s, ',')) s->p++;
    }
    rec_scan_lit(s, "}}");
}

/* The fast path: 0 if line is exactly what proto_enc_game_record makes of
 * what was read (then *out holds it), else -1 (out cleared). */
static int scan_record(const char *line, size_t len, proto_game_record *out) {
    rec_scan s = {line, line + len, false};
    char reason[16];
    rec_scan_lit(&s, "{\"j\":\"game\",\"game\":");
    out->game = rec_scan_num(&s);
    if (rec_scan_peek(&s, ',') && s.end - s.p > 8 && !memcmp(s.p, ",\"room\":", 8)) {
        s.p += 8;
        rec_scan_text(&s, out->room, sizeof out->room);
    }
    rec_scan_lit(&s, ",\"reason\":");
    rec_scan_text(&s, reason, sizeof reason);
    rec_scan_lit(&s, ",\"winner\":");
    if (rec_scan_peek(&s, 'n'))
        rec_scan_lit(&s, "null"); /* winner 0 */
    else
        out->winner = rec_scan_num(&s);
    rec_scan_lit(&s, ",\"results\":[");
    while (!s.bad && out->nresults < PROTO_PLAYERS_MAX) {
        result(&s, &out->results[out->nresults++]);
        if (!rec_scan_peek(&s, ',')) break;
        s.p++;
    }
    rec_scan_lit(&s, "],\"seed\":");
    seed(&s, &out->seed);
    rec_scan_lit(&s, ",\"salt\":");
    rec_scan_text(&s, out->salt, sizeof out->salt);
    rec_scan_lit(&s, ",\"commit\":");
    rec_scan_text(&s, out->commit, sizeof out->commit);
    rec_scan_lit(&s, ",\"size\":");
    out->size = (int)rec_scan_num(&s);
    rec_scan_lit(&s, ",\"target\":");
    out->target = (uint32_t)rec_scan_num(&s);
    rec_scan_lit(&s, ",\"time_limit\":");
    out->time_limit = (uint32_t)rec_scan_num(&s);
    rec_scan_lit(&s, ",\"started\":");
    out->started = (int64_t)rec_scan_num(&s);
    rec_scan_lit(&s, ",\"ended\":");
    out->ended = (int64_t)rec_scan_num(&s);
    seat_moves(&s, out);
    bool ok = !s.bad && s.p == s.end && proto_end_reason_parse(reason, &out->reason) &&
              out->size >= ENG_SIZE_MIN && out->size <= ENG_SIZE_MAX;
    for (int i = 0; ok && i < out->nresults; i++)
        ok = out->results[i].board.size == out->size;
    size_t n;
    char *again = ok ? proto_enc_game_record(out, &n) : NULL;
    ok = again && n == len + 1 && !memcmp(again, line, len);
    free(again);
    if (!ok) {
        proto_game_record_clear(out);
        *out = (proto_game_record){0};
        return -1;
    }
    return 0;
}

int proto_dec_game_record(const char *line, size_t len, proto_game_record *out) {
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    *out = (proto_game_record){0};
    if (scan_record(line, len, out) == 0) return 0;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const json_t *results = json_object_get(o, "results");
    const json_t *winner = json_object_get(o, "winner");
    int64_t game = get_uint(o, "game"), size = get_uint(o, "size"),
            target = get_uint(o, "target"), time_limit = get_uint(o, "time_limit"),
            started = get_uint(o, "started"), ended = get_uint(o, "ended");
    const char *j = json_string_value(json_object_get(o, "j"));
    size_t n = json_array_size(results);
    bool ok =
        j && !strcmp(j, "game") && game > 0 && size >= ENG_SIZE_MIN &&
        size <= ENG_SIZE_MAX && target >= 0 && target <= UINT32_MAX && time_limit >= 0 &&
        time_limit <= UINT32_MAX && started >= 0 && ended >= 0 && n >= 1 &&
        n <= PROTO_PLAYERS_MAX && (json_is_null(winner) || get_uint(o, "winner") > 0) &&
        get_reason(o, &out->reason) &&
        proto_seed_from_json(json_object_get(o, "seed"), &out->seed) == 0 &&
        get_text(o, "salt", out->salt, sizeof out->salt) &&
        get_text(o, "commit", out->commit, sizeof out->commit) &&
        (!json_object_get(o, "room") || get_text(o, "room", out->room, sizeof out->room));
    for (size_t i = 0; ok && i < n; i++)
        ok = get_result(json_array_get(results, i), (int)size, &out->results[i]);
    if (ok) {
        out->game = (uint64_t)game;
        out->winner = json_is_null(winner) ? 0 : (uint64_t)get_uint(o, "winner");
        out->nresults = (int)n;
        out->size = (int)size;
        out->target = (uint32_t)target;
        out->time_limit = (uint32_t)time_limit;
        out->started = started;
        out->ended = ended;
        ok = get_moves(json_object_get(o, "moves"), out) &&
             get_accounts(json_object_get(o, "accounts"), out) &&
             get_ratings(json_object_get(o, "ratings"), out);
    }
    json_decref(o);
    if (!ok) {
        proto_game_record_clear(out);
        return -1;
    }
    return 0;
}
