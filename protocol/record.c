/* record.c - a finished game as data: the journal's `game` record, the `history` and
 * `replay` replies made from it, and the record read back. */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "render.h"

/* ------------------------------------------------------------- writing --- */

/* Records are written by hand, not through a jansson tree: `history` lists up
 * to 100 of them per request, and the bytes must stay those jansson's compact
 * dump of `end` gave (message.c), which tests/protocol/test_record.c checks. */
typedef struct wbuf {
    char *data;
    size_t len, cap;
    bool failed;
} wbuf;

static void reserve(wbuf *o, size_t more) {
    if (o->failed || o->len + more <= o->cap) return;
    size_t cap = o->cap ? o->cap : 1024;
    while (cap < o->len + more)
        cap *= 2;
    char *d = realloc(o->data, cap);
    if (!d) {
        o->failed = true;
        return;
    }
    o->data = d;
    o->cap = cap;
}

static void put_n(wbuf *o, const char *s, size_t n) {
    reserve(o, n);
    if (o->failed) return;
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

static void put_s(wbuf *o, const char *s) {
    put_n(o, s, strlen(s));
}

static void put_c(wbuf *o, char c) {
    put_n(o, &c, 1);
}

/* Integers as jansson writes them: uint64_t clamped to int64 (message.c's jint);
 * by hand, as a history of 100 races of 8x8 boards holds some 50,000. */
static void put_u(wbuf *o, uint64_t v) {
    if (v > (uint64_t)INT64_MAX) v = (uint64_t)INT64_MAX;
    char digits[20];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_n(o, digits + sizeof digits - n, (size_t)n);
}

static void put_i(wbuf *o, int64_t v) {
    if (v < 0) put_c(o, '-');
    put_u(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* A JSON string escaped as jansson escapes it (UTF-8 passes through). */
static void put_str(wbuf *o, const char *s) {
    put_c(o, '"');
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[8];
        switch (c) {
        case '"':
            put_s(o, "\\\"");
            break;
        case '\\':
            put_s(o, "\\\\");
            break;
        case '\b':
            put_s(o, "\\b");
            break;
        case '\f':
            put_s(o, "\\f");
            break;
        case '\n':
            put_s(o, "\\n");
            break;
        case '\r':
            put_s(o, "\\r");
            break;
        case '\t':
            put_s(o, "\\t");
            break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04X", c);
                put_s(o, esc);
            } else {
                put_c(o, (char)c);
            }
        }
    }
    put_c(o, '"');
}

static void put_board(wbuf *o, const eng_board *b) {
    put_c(o, '[');
    for (int r = 0; r < b->size; r++) {
        put_s(o, r ? ",[" : "[");
        for (int c = 0; c < b->size; c++) {
            if (c) put_c(o, ',');
            put_u(o, eng_cell_value(b, r, c));
        }
        put_c(o, ']');
    }
    put_c(o, ']');
}

/* A player object of `end`'s results, in the protocol's order. */
static void put_result(wbuf *o, const proto_result *p) {
    put_s(o, "{\"id\":");
    put_u(o, p->id);
    put_s(o, ",\"name\":");
    put_str(o, p->name);
    put_s(o, ",\"board\":");
    put_board(o, &p->board);
    put_s(o, ",\"score\":");
    put_u(o, p->score);
    put_s(o, ",\"moves\":");
    put_u(o, p->moves);
    put_s(o, ",\"max_tile\":");
    put_u(o, eng_max_tile(&p->board));
    put_s(o, ",\"status\":\"");
    put_s(o, proto_status_name(p->status));
    /* Last, as in `end`'s player objects; only for a bot, so a person's
     * object is as it always was. */
    put_s(o, p->bot ? "\",\"bot\":true}" : "\"}");
}

static void put_seed(wbuf *o, const eng_seed *seed) {
    char text[ENG_SEED_TEXT_MAX];
    int n = eng_seed_format(seed, text, sizeof text);
    if (n <= 0) {
        o->failed = true;
        return;
    }
    /* As end.seed: a string for a server seed, a number for a client's. */
    if (seed->kind == ENG_SEED_SERVER) put_c(o, '"');
    put_n(o, text, (size_t)n);
    if (seed->kind == ENG_SEED_SERVER) put_c(o, '"');
}

/* The record's members, from "j" on, without the braces; "moves" last. */
static void put_members(wbuf *o, const proto_game_record *g, bool with_moves) {
    put_s(o, "\"j\":\"game\",\"game\":");
    put_u(o, g->game);
    if (g->room[0]) {
        put_s(o, ",\"room\":");
        put_str(o, g->room);
    }
    put_s(o, ",\"reason\":\"");
    put_s(o, proto_end_reason_name(g->reason));
    put_s(o, "\",\"winner\":");
    if (g->winner)
        put_u(o, g->winner);
    else
        put_s(o, "null");
    put_s(o, ",\"results\":[");
    for (int i = 0; i < g->nresults; i++) {
        if (i) put_c(o, ',');
        put_result(o, &g->results[i]);
    }
    put_s(o, "],\"seed\":");
    put_seed(o, &g->seed);
    put_s(o, ",\"salt\":");
    put_str(o, g->salt);
    /* Written raw since the first journal: 64 hex digits, or "" without one. */
    put_s(o, ",\"commit\":\"");
    put_s(o, g->commit);
    put_s(o, "\",\"size\":");
    put_i(o, g->size);
    put_s(o, ",\"target\":");
    put_u(o, g->target);
    put_s(o, ",\"time_limit\":");
    put_u(o, g->time_limit);
    put_s(o, ",\"started\":");
    put_i(o, g->started);
    put_s(o, ",\"ended\":");
    put_i(o, g->ended);
    if (g->naccounts) {
        put_s(o, ",\"accounts\":{");
        for (int i = 0; i < g->naccounts; i++) {
            put_s(o, i ? ",\"" : "\"");
            put_u(o, g->accounts[i].id);
            put_s(o, "\":");
            put_str(o, g->accounts[i].name);
        }
        put_c(o, '}');
    }
    if (g->nratings) {
        put_s(o, ",\"ratings\":[");
        for (int i = 0; i < g->nratings; i++) {
            const proto_record_rating *r = &g->ratings[i];
            char skills[160];
            /* %.17g: the doubles read back exactly, so the check is exact. */
            snprintf(skills, sizeof skills,
                     ",\"before\":[%.17g,%.17g],\"after\":[%.17g,%.17g]}", r->mu0,
                     r->sigma0, r->mu, r->sigma);
            put_s(o, i ? ",{\"id\":" : "{\"id\":");
            put_u(o, r->id);
            put_s(o, ",\"place\":");
            put_i(o, r->place);
            put_s(o, skills);
        }
        put_c(o, ']');
    }
    if (!with_moves) return;
    put_s(o, ",\"moves\":{");
    for (int i = 0; i < g->nseats; i++) {
        const proto_seat_moves *s = &g->seats[i];
        put_s(o, i ? ",\"" : "\"");
        put_u(o, s->id);
        put_s(o, "\":\"");
        if (s->n) put_n(o, s->letters, s->n);
        put_c(o, '"');
    }
    put_c(o, '}');
}

static char *done(wbuf *o, size_t *len) {
    put_s(o, "}\n");
    reserve(o, 1);
    if (o->failed) {
        free(o->data);
        return NULL;
    }
    o->data[o->len] = '\0';
    *len = o->len;
    return o->data;
}

char *proto_enc_game_record(const proto_game_record *g, size_t *len) {
    wbuf o = {0};
    put_c(&o, '{');
    put_members(&o, g, true);
    return done(&o, len);
}

char *proto_enc_history(const proto_game_record *const *games, int n, size_t *len) {
    wbuf o = {0};
    put_s(&o, "{\"type\":\"history\",\"games\":[");
    for (int i = 0; i < n; i++) {
        put_s(&o, i ? ",{" : "{");
        put_members(&o, games[i], false);
        put_c(&o, '}');
    }
    put_c(&o, ']');
    return done(&o, len);
}

char *proto_enc_replay(const proto_game_record *g, size_t *len) {
    wbuf o = {0};
    put_s(&o, "{\"type\":\"replay\",");
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
typedef struct scan {
    const char *p, *end;
    bool bad;
} scan;

static bool lit(scan *s, const char *text) {
    size_t n = strlen(text);
    if (s->bad || (size_t)(s->end - s->p) < n || memcmp(s->p, text, n) != 0) {
        s->bad = true;
        return false;
    }
    s->p += n;
    return true;
}

static bool peek(const scan *s, char c) {
    return !s->bad && s->p < s->end && *s->p == c;
}

static uint64_t num(scan *s) {
    uint64_t v = 0;
    const char *from = s->p;
    while (!s->bad && s->p < s->end && *s->p >= '0' && *s->p <= '9' && s->p - from < 19)
        v = v * 10 + (uint64_t)(*s->p++ - '0');
    if (s->p == from) s->bad = true;
    return v;
}

/* A string without escapes into out (cap bytes with the NUL). */
static void text(scan *s, char *out, size_t cap) {
    if (!lit(s, "\"")) return;
    const char *from = s->p;
    while (s->p < s->end && *s->p != '"' && *s->p != '\\' && (unsigned char)*s->p >= 0x20)
        s->p++;
    size_t n = (size_t)(s->p - from);
    if (n >= cap || !lit(s, "\"")) {
        s->bad = true;
        return;
    }
    memcpy(out, from, n);
    out[n] = '\0';
}

/* A board of rows of tile values; its size is its number of rows. */
static void board(scan *s, eng_board *b) {
    uint64_t cells[ENG_CELLS_MAX];
    int n = 0, rows = 0;
    lit(s, "[");
    while (!s->bad && rows < ENG_SIZE_MAX && lit(s, rows ? ",[" : "[")) {
        for (int c = 0; !s->bad && n < ENG_CELLS_MAX; c++) {
            if (c && !lit(s, ",")) break;
            cells[n++] = num(s);
            if (peek(s, ']')) break;
        }
        lit(s, "]");
        rows++;
        if (peek(s, ']')) break;
    }
    lit(s, "]");
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

static void result(scan *s, proto_result *r) {
    char status[16];
    lit(s, "{\"id\":");
    r->id = num(s);
    lit(s, ",\"name\":");
    text(s, r->name, sizeof r->name);
    lit(s, ",\"board\":");
    board(s, &r->board);
    lit(s, ",\"score\":");
    r->score = num(s);
    lit(s, ",\"moves\":");
    uint64_t moves = num(s);
    r->moves = (uint32_t)moves;
    lit(s, ",\"max_tile\":");
    num(s);
    lit(s, ",\"status\":");
    text(s, status, sizeof status);
    lit(s, "}");
    if (moves > UINT32_MAX || (!s->bad && proto_status_parse(status, &r->status) < 0))
        s->bad = true;
}

static void seed(scan *s, eng_seed *out) {
    if (peek(s, '"')) {
        char hex[ENG_SEED_TEXT_MAX];
        text(s, hex, sizeof hex);
        if (!s->bad && (strlen(hex) != 2 * ENG_SEED_KEY_BYTES ||
                        eng_seed_parse(out, hex, (int)strlen(hex)) < 0))
            s->bad = true;
        return;
    }
    uint64_t v = num(s);
    if (v > UINT32_MAX) s->bad = true;
    *out = eng_seed_client((uint32_t)v);
}

static void seat_moves(scan *s, proto_game_record *g) {
    lit(s, ",\"moves\":{");
    while (!s->bad && peek(s, '"') && g->nseats < PROTO_PLAYERS_MAX) {
        proto_seat_moves *m = &g->seats[g->nseats];
        lit(s, "\"");
        m->id = num(s);
        lit(s, "\":\"");
        const char *from = s->p;
        eng_dir d;
        while (s->p < s->end && proto_dir_from_letter(*s->p, &d) == 0)
            s->p++;
        m->n = (size_t)(s->p - from);
        lit(s, "\"");
        if (s->bad || (m->n && !(m->letters = malloc(m->n)))) return;
        if (m->n) memcpy(m->letters, from, m->n);
        g->nseats++;
        if (peek(s, ',')) s->p++;
    }
    lit(s, "}}");
}

/* The fast path: 0 if line is exactly what proto_enc_game_record makes of
 * what was read (then *out holds it), else -1 (out cleared). */
static int scan_record(const char *line, size_t len, proto_game_record *out) {
    scan s = {line, line + len, false};
    char reason[16];
    lit(&s, "{\"j\":\"game\",\"game\":");
    out->game = num(&s);
    if (peek(&s, ',') && s.end - s.p > 8 && !memcmp(s.p, ",\"room\":", 8)) {
        s.p += 8;
        text(&s, out->room, sizeof out->room);
    }
    lit(&s, ",\"reason\":");
    text(&s, reason, sizeof reason);
    lit(&s, ",\"winner\":");
    if (peek(&s, 'n'))
        lit(&s, "null"); /* winner 0 */
    else
        out->winner = num(&s);
    lit(&s, ",\"results\":[");
    while (!s.bad && out->nresults < PROTO_PLAYERS_MAX) {
        result(&s, &out->results[out->nresults++]);
        if (!peek(&s, ',')) break;
        s.p++;
    }
    lit(&s, "],\"seed\":");
    seed(&s, &out->seed);
    lit(&s, ",\"salt\":");
    text(&s, out->salt, sizeof out->salt);
    lit(&s, ",\"commit\":");
    text(&s, out->commit, sizeof out->commit);
    lit(&s, ",\"size\":");
    out->size = (int)num(&s);
    lit(&s, ",\"target\":");
    out->target = (uint32_t)num(&s);
    lit(&s, ",\"time_limit\":");
    out->time_limit = (uint32_t)num(&s);
    lit(&s, ",\"started\":");
    out->started = (int64_t)num(&s);
    lit(&s, ",\"ended\":");
    out->ended = (int64_t)num(&s);
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
