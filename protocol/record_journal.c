/* record_journal.c - the journal's records other than a finished game: `start`, `moves`,
 * `seat`, `rematch`, `head`, `daily`, `daily_entry`, written and read back. */
#include "record.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "record_internal.h"

/* ------------------------------------------------------------- writing --- */

/* The record's head, {"j":"KIND", and room for a typical record, so that
 * it does not grow from a few bytes. */
static void put_head(rec_out *o, const char *kind) {
    if (!o->failed && byte_buf_reserve(o->b, 256) < 0) o->failed = true;
    rec_put_s(o, "{\"j\":\"");
    rec_put_s(o, kind);
    rec_put_s(o, "\",");
}

static int put_end(rec_out *o) {
    rec_put_s(o, "}\n");
    return o->failed ? -1 : 0;
}

int proto_rec_put_start(byte_buf *b, const proto_start_record *st) {
    rec_out o = {.b = b};
    put_head(&o, "start");
    rec_put_s(&o, "\"game\":");
    rec_put_u(&o, st->game);
    if (!st->solo) {
        rec_put_s(&o, ",\"room\":");
        rec_put_str(&o, st->room);
    }
    rec_put_s(&o, ",\"size\":");
    rec_put_i(&o, st->settings.size);
    rec_put_s(&o, ",\"target\":");
    rec_put_u(&o, st->settings.target);
    rec_put_s(&o, ",\"time_limit\":");
    rec_put_u(&o, st->settings.time_limit);
    rec_put_s(&o, ",\"seed\":");
    rec_put_seed(&o, &st->seed);
    rec_put_s(&o, ",\"salt\":");
    rec_put_str(&o, st->salt);
    rec_put_s(&o, ",\"commit\":");
    rec_put_str(&o, st->commit);
    rec_put_s(&o, ",\"started\":");
    rec_put_i(&o, st->started_ms);
    if (st->settings.rated) rec_put_s(&o, ",\"rated\":true");
    /* A daily game says so (and its day): a restart, or the node that takes it
     * over, hides its seed until the day is over. */
    if (st->daily) {
        rec_put_s(&o, ",\"daily\":");
        rec_put_i(&o, st->daily_day);
    }
    /* An arena's race says which, so that a restart counts it in its arena. */
    if (st->settings.arena[0]) {
        rec_put_s(&o, ",\"arena\":");
        rec_put_str(&o, st->settings.arena);
        rec_put_s(&o, ",\"arena_race\":");
        rec_put_u(&o, st->arena_race);
    }
    rec_put_s(&o, ",\"seats\":[");
    for (int i = 0; i < st->nseats; i++) {
        const proto_start_seat *seat = &st->seats[i];
        rec_put_s(&o, i ? ",{\"id\":" : "{\"id\":");
        rec_put_u(&o, seat->id);
        rec_put_s(&o, ",\"name\":");
        rec_put_str(&o, seat->name);
        rec_put_s(&o, ",\"token\":");
        rec_put_str(&o, seat->token_hash);
        /* A bot's seat says so, so that a restart gives it its bot back. */
        if (seat->bot_level) {
            rec_put_s(&o, ",\"bot\":");
            rec_put_u(&o, seat->bot_level);
        }
        /* An account's seat says whose, so that a restart rates its race. */
        if (seat->account[0]) {
            rec_put_s(&o, ",\"account\":");
            rec_put_str(&o, seat->account);
        }
        rec_put_c(&o, '}');
    }
    rec_put_c(&o, ']');
    return put_end(&o);
}

int proto_rec_put_moves(byte_buf *b, uint64_t game, const proto_moves_part *parts,
                        int nparts) {
    rec_out o = {.b = b};
    put_head(&o, "moves");
    rec_put_s(&o, "\"game\":");
    rec_put_u(&o, game);
    rec_put_s(&o, ",\"m\":{");
    bool first = true;
    for (int i = 0; i < nparts; i++) {
        if (!parts[i].n) continue;
        rec_put_s(&o, first ? "\"" : ",\"");
        rec_put_u(&o, parts[i].id);
        rec_put_s(&o, "\":\"");
        rec_put_n(&o, parts[i].letters, parts[i].n); /* u d l r: nothing to escape */
        rec_put_c(&o, '"');
        first = false;
    }
    rec_put_c(&o, '}');
    return put_end(&o);
}

int proto_rec_put_seat(byte_buf *b, uint64_t game, uint64_t id, const char *event) {
    rec_out o = {.b = b};
    put_head(&o, "seat");
    rec_put_s(&o, "\"game\":");
    rec_put_u(&o, game);
    rec_put_s(&o, ",\"id\":");
    rec_put_u(&o, id);
    rec_put_s(&o, ",\"event\":");
    rec_put_str(&o, event);
    return put_end(&o);
}

int proto_rec_put_rematch(byte_buf *b, uint64_t game, const char *room) {
    rec_out o = {.b = b};
    put_head(&o, "rematch");
    rec_put_s(&o, "\"game\":");
    rec_put_u(&o, game);
    rec_put_s(&o, ",\"room\":");
    rec_put_str(&o, room);
    return put_end(&o);
}

int proto_rec_put_head(byte_buf *b, uint64_t next_game, uint64_t next_id,
                       int64_t compacted_ms) {
    rec_out o = {.b = b};
    put_head(&o, "head");
    rec_put_s(&o, "\"next_game\":");
    rec_put_u(&o, next_game);
    rec_put_s(&o, ",\"next_id\":");
    rec_put_u(&o, next_id);
    rec_put_s(&o, ",\"compacted\":");
    rec_put_i(&o, compacted_ms);
    return put_end(&o);
}

int proto_rec_put_daily(byte_buf *b, const proto_daily_record *d) {
    rec_out o = {.b = b};
    char seed[ENG_SEED_TEXT_MAX];
    if (eng_seed_format(&d->seed, seed, sizeof seed) <= 0) seed[0] = '\0';
    put_head(&o, "daily");
    rec_put_s(&o, "\"day\":");
    rec_put_i(&o, d->day);
    rec_put_s(&o, ",\"size\":");
    rec_put_i(&o, d->size);
    rec_put_s(&o, ",\"seed\":"); /* always a string: a day's seed is the server's */
    rec_put_str(&o, seed);
    rec_put_s(&o, ",\"salt\":");
    rec_put_str(&o, d->salt);
    return put_end(&o);
}

int proto_rec_put_daily_entry(byte_buf *b, const proto_daily_entry_record *e) {
    rec_out o = {.b = b};
    put_head(&o, "daily_entry");
    rec_put_s(&o, "\"day\":");
    rec_put_i(&o, e->day);
    rec_put_s(&o, ",\"size\":");
    rec_put_i(&o, e->size);
    rec_put_s(&o, ",\"name\":");
    rec_put_str(&o, e->name);
    if (e->finished) {
        rec_put_s(&o, ",\"score\":");
        rec_put_u(&o, e->score);
        rec_put_s(&o, ",\"max_tile\":");
        rec_put_u(&o, e->max_tile);
        rec_put_s(&o, ",\"moves\":");
        rec_put_u(&o, e->moves);
        rec_put_s(&o, ",\"end_ms\":");
        rec_put_i(&o, e->end_ms);
        rec_put_s(&o, ",\"game\":");
        rec_put_u(&o, e->game);
    }
    return put_end(&o);
}

int proto_rec_put_string(byte_buf *b, const char *s) {
    rec_out o = {.b = b};
    rec_put_str(&o, s);
    return o.failed ? -1 : 0;
}

/* ------------------------------------------------------------- reading --- */

/* The line without its newline. */
static size_t trimmed(const char *line, size_t len) {
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    return len;
}

bool proto_rec_is(const char *line, size_t len, const char *kind) {
    rec_scan s = {line, line + len, false};
    size_t n = strlen(kind);
    return rec_scan_lit(&s, "{\"j\":\"") && (size_t)(s.end - s.p) > n + 1 &&
           !memcmp(s.p, kind, n) && s.p[n] == '"' && s.p[n + 1] == ',';
}

proto_rec_kind proto_rec_kind_of(const char *line, size_t len, uint64_t *game) {
    static const struct {
        const char *name; /* what follows {"j":" */
        proto_rec_kind kind;
    } heads[] = {{"game\",\"game\":", PROTO_REC_GAME},
                 {"start\",\"game\":", PROTO_REC_START},
                 {"moves\",\"game\":", PROTO_REC_MOVES},
                 {"seat\",\"game\":", PROTO_REC_SEAT}};
    *game = 0;
    len = trimmed(line, len);
    rec_scan s = {line, line + len, false};
    if (!len || line[len - 1] != '}' || !rec_scan_lit(&s, "{\"j\":\""))
        return PROTO_REC_OTHER;
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
        rec_scan h = s; /* each head tried from the kind's first letter */
        if (*h.p != heads[k].name[0] || !rec_scan_lit(&h, heads[k].name)) continue;
        uint64_t id = rec_scan_num(&h);
        if (h.bad || !rec_scan_peek(&h, ',')) return PROTO_REC_OTHER;
        *game = id;
        return heads[k].kind;
    }
    return PROTO_REC_OTHER;
}

static uint64_t juint(const json_t *o, const char *key);

proto_rec_kind proto_rec_kind_parse(const char *line, size_t len, uint64_t *game) {
    static const struct {
        const char *name;
        proto_rec_kind kind;
    } kinds[] = {{"game", PROTO_REC_GAME},
                 {"start", PROTO_REC_START},
                 {"moves", PROTO_REC_MOVES},
                 {"seat", PROTO_REC_SEAT},
                 {"head", PROTO_REC_HEAD}};
    proto_rec_kind kind = proto_rec_kind_of(line, len, game);
    if (kind != PROTO_REC_OTHER) return kind;
    json_t *r = json_loadb(line, trimmed(line, len), JSON_REJECT_DUPLICATES, NULL);
    const char *j = json_string_value(json_object_get(r, "j"));
    kind = j ? PROTO_REC_OTHER : PROTO_REC_BAD;
    for (size_t k = 0; j && k < sizeof kinds / sizeof kinds[0]; k++)
        if (!strcmp(j, kinds[k].name)) kind = kinds[k].kind;
    *game = juint(r, "game");
    json_decref(r);
    return kind;
}

/* A non-negative integer member, or 0. */
static uint64_t juint(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0
               ? (uint64_t)json_integer_value(v)
               : 0;
}

/* A non-negative integer member up to max, or 0 (it does not fit). */
static uint64_t jfit(const json_t *o, const char *key, uint64_t max) {
    uint64_t v = juint(o, key);
    return v <= max ? v : 0;
}

/* Copies a string member into out (n bytes with the NUL) if it is one that
 * fits without a NUL inside; else out is "". True if copied. */
static bool copy_text(const json_t *o, const char *key, char *out, size_t n) {
    const json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (!json_is_string(v) || json_string_length(v) >= n ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

/* The record parsed, if its "j" is kind; NULL otherwise. */
static json_t *parse_kind(const char *line, size_t len, const char *kind) {
    json_t *r = json_loadb(line, trimmed(line, len), JSON_REJECT_DUPLICATES, NULL);
    const char *j = json_string_value(json_object_get(r, "j"));
    if (!j || strcmp(j, kind)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

int proto_dec_start_record(const char *line, size_t len, proto_start_record *out) {
    *out = (proto_start_record){0};
    json_t *r = parse_kind(line, len, "start");
    const json_t *seats = json_object_get(r, "seats"), *seed = json_object_get(r, "seed");
    size_t n = json_array_size(seats);
    if (!json_is_array(seats) || n > PROTO_PLAYERS_MAX ||
        proto_seed_from_json(seed, &out->seed) < 0) {
        json_decref(r);
        return -1;
    }
    out->game = juint(r, "game");
    out->solo = !json_is_string(json_object_get(r, "room"));
    copy_text(r, "room", out->room, sizeof out->room);
    out->nseats = (int)n;
    out->settings =
        (proto_settings){.players = (int)n,
                         .size = (int)jfit(r, "size", INT32_MAX),
                         .target = (uint32_t)jfit(r, "target", UINT32_MAX),
                         .time_limit = (uint32_t)jfit(r, "time_limit", UINT32_MAX),
                         .rated = json_is_true(json_object_get(r, "rated"))};
    copy_text(r, "salt", out->salt, sizeof out->salt);
    copy_text(r, "commit", out->commit, sizeof out->commit);
    out->started_ms = (int64_t)juint(r, "started");
    const json_t *daily = json_object_get(r, "daily");
    json_int_t day = json_integer_value(daily);
    out->daily = json_is_integer(daily) && day >= 0 && day < INT32_MAX;
    out->daily_day = out->daily ? (int32_t)day : 0;
    /* Older records have neither: an ordinary race. */
    if (copy_text(r, "arena", out->settings.arena, sizeof out->settings.arena))
        out->arena_race = juint(r, "arena_race");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(seats, i);
        proto_start_seat *seat = &out->seats[i];
        seat->id = juint(e, "id");
        copy_text(e, "name", seat->name, sizeof seat->name);
        copy_text(e, "token", seat->token_hash, sizeof seat->token_hash);
        copy_text(e, "account", seat->account, sizeof seat->account);
        json_int_t level = json_integer_value(json_object_get(e, "bot"));
        seat->bot_level = level >= 1 && level <= 5 ? (uint8_t)level : 0;
    }
    json_decref(r);
    return 0;
}

int proto_scan_start_ids(const char *line, size_t len, uint64_t *game,
                         uint64_t ids[PROTO_PLAYERS_MAX], int *nseats) {
    len = trimmed(line, len);
    rec_scan s = {line, line + len, false};
    rec_scan_lit(&s, "{\"j\":\"start\",\"game\":");
    *game = rec_scan_num(&s);
    if (s.bad || line[len - 1] != '}') return -1;
    /* The seat ids. A string holds no `{"id":`: its quotes are escaped. */
    int n = 0;
    for (const char *q = s.p; q + 7 < s.end; q++) {
        if (memcmp(q, "{\"id\":", 6) != 0) continue;
        rec_scan v = {q + 6, s.end, false};
        if (n == PROTO_PLAYERS_MAX) return -1;
        ids[n] = rec_scan_num(&v);
        if (v.bad) return -1;
        n++;
    }
    *nseats = n;
    return 0;
}

/* The `moves` record as the writer spells it: 0, or -1. */
static int scan_moves(const char *line, size_t len, uint64_t *game,
                      proto_moves_part parts[PROTO_PLAYERS_MAX], int *nparts) {
    rec_scan s = {line, line + len, false};
    int n = 0;
    rec_scan_lit(&s, "{\"j\":\"moves\",\"game\":");
    *game = rec_scan_num(&s);
    rec_scan_lit(&s, ",\"m\":{");
    while (rec_scan_peek(&s, '"')) {
        if (n == PROTO_PLAYERS_MAX) return -1;
        s.p++;
        parts[n].id = rec_scan_num(&s);
        rec_scan_lit(&s, "\":\"");
        const char *from = s.p;
        while (s.p < s.end && (*s.p == 'u' || *s.p == 'd' || *s.p == 'l' || *s.p == 'r'))
            s.p++;
        parts[n].letters = from;
        parts[n].n = (size_t)(s.p - from);
        rec_scan_lit(&s, "\"");
        n++;
        if (rec_scan_peek(&s, ',')) s.p++;
    }
    rec_scan_lit(&s, "}}");
    if (s.bad || s.p != s.end) return -1;
    *nparts = n;
    return 0;
}

int proto_dec_moves_record(const char *line, size_t len, uint64_t *game,
                           proto_moves_part parts[PROTO_PLAYERS_MAX], int *nparts,
                           char **owned) {
    *owned = NULL;
    len = trimmed(line, len);
    if (scan_moves(line, len, game, parts, nparts) == 0) return 0;
    json_t *r = parse_kind(line, len, "moves");
    json_t *m = json_object_get(r, "m");
    size_t total = 0;
    const char *key;
    json_t *v;
    bool ok = json_is_object(m) && json_object_size(m) <= PROTO_PLAYERS_MAX;
    json_object_foreach(ok ? m : NULL, key, v) {
        const char *letters = json_string_value(v);
        eng_dir d;
        for (size_t k = 0; ok && k < json_string_length(v); k++)
            ok = proto_dir_from_letter(letters[k], &d) == 0;
        ok = ok && letters;
        total += json_string_length(v);
    }
    char *copy = ok ? malloc(total ? total : 1) : NULL;
    int n = 0;
    size_t at = 0;
    json_object_foreach(copy ? m : NULL, key, v) {
        parts[n] = (proto_moves_part){.id = strtoull(key, NULL, 10),
                                      .letters = copy + at,
                                      .n = json_string_length(v)};
        memcpy(copy + at, json_string_value(v), parts[n].n);
        at += parts[n++].n;
    }
    *game = juint(r, "game");
    json_decref(r);
    if (!copy) return -1;
    *nparts = n;
    *owned = copy;
    return 0;
}

int proto_dec_seat_record(const char *line, size_t len, uint64_t *game, uint64_t *id,
                          char event[16]) {
    json_t *r = parse_kind(line, len, "seat");
    *game = juint(r, "game");
    *id = juint(r, "id");
    bool ok = copy_text(r, "event", event, 16);
    json_decref(r);
    return ok ? 0 : -1;
}

int proto_dec_head_record(const char *line, size_t len, uint64_t *next_game,
                          uint64_t *next_id) {
    json_t *r = parse_kind(line, len, "head");
    *next_game = juint(r, "next_game");
    *next_id = juint(r, "next_id");
    json_decref(r);
    return r ? 0 : -1;
}

int proto_dec_daily_record(const char *line, size_t len, proto_daily_record *out) {
    *out = (proto_daily_record){0};
    json_t *r = parse_kind(line, len, "daily");
    const json_t *day = json_object_get(r, "day"), *size = json_object_get(r, "size");
    const char *seed = json_string_value(json_object_get(r, "seed"));
    bool ok = json_is_integer(day) && json_is_integer(size) && seed &&
              copy_text(r, "salt", out->salt, sizeof out->salt) &&
              strlen(out->salt) == PROTO_SALT_TEXT - 1 && json_integer_value(day) >= 0 &&
              json_integer_value(day) < INT32_MAX &&
              json_integer_value(size) >= ENG_SIZE_MIN &&
              json_integer_value(size) <= ENG_SIZE_MAX &&
              eng_seed_parse(&out->seed, seed, (int)strlen(seed)) == 0;
    if (ok) {
        out->day = (int32_t)json_integer_value(day);
        out->size = (int)json_integer_value(size);
    }
    json_decref(r);
    return ok ? 0 : -1;
}

int proto_dec_daily_entry_record(const char *line, size_t len,
                                 proto_daily_entry_record *out) {
    *out = (proto_daily_entry_record){0};
    json_t *r = parse_kind(line, len, "daily_entry");
    const json_t *day = json_object_get(r, "day"), *size = json_object_get(r, "size");
    bool ok = copy_text(r, "name", out->name, sizeof out->name) && json_is_integer(day) &&
              json_is_integer(size) && json_integer_value(day) >= 0 &&
              json_integer_value(day) <= INT32_MAX;
    if (ok) {
        out->day = (int32_t)json_integer_value(day);
        out->size = (int)json_integer_value(size);
        out->finished = json_object_get(r, "game") != NULL;
        out->score = (uint32_t)json_integer_value(json_object_get(r, "score"));
        out->max_tile = (uint32_t)json_integer_value(json_object_get(r, "max_tile"));
        out->moves = (uint32_t)json_integer_value(json_object_get(r, "moves"));
        out->end_ms = (int64_t)json_integer_value(json_object_get(r, "end_ms"));
        out->game = (uint64_t)json_integer_value(json_object_get(r, "game"));
    }
    json_decref(r);
    return ok ? 0 : -1;
}

/* Where a finished-game record's "moves" member starts (the server always
 * writes it last), or NULL. */
static const char *moves_member(const char *line, size_t len) {
    static const char key[] = ",\"moves\":{";
    for (size_t k = len; k >= sizeof key - 1; k--)
        if (memcmp(line + k - (sizeof key - 1), key, sizeof key - 1) == 0)
            return line + k - (sizeof key - 1);
    return NULL;
}

bool proto_rec_game_played(const char *line, size_t len) {
    const char *m = moves_member(line, len);
    if (!m) return false;
    /* Its strings are of u, d, l and r, its keys digits. */
    for (const char *p = m + sizeof ",\"moves\":{" - 1; p < line + len; p++)
        if (*p == 'u' || *p == 'd' || *p == 'l' || *p == 'r') return true;
    return false;
}
