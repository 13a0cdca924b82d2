/* journal_read.c - the record read back at start-up: records to the games still running
 * and the finished games' lines, and where a torn tail begins. */
#include "journal_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base.h" /* srv_log: a shared service */

/* A game seen in the journal that has no finished record (yet). */
typedef struct pending_game {
    uint64_t id;
    json_t *start;          /* the start record, parsed when the game is rebuilt */
    const char *start_line; /* ... from this line of the journal */
    size_t start_len;
    int nseats;
    uint64_t seat_id[PROTO_PLAYERS_MAX];
    char *moves[PROTO_PLAYERS_MAX];
    size_t nmoves[PROTO_PLAYERS_MAX], cap[PROTO_PLAYERS_MAX];
    bool left[PROTO_PLAYERS_MAX];
    bool finished;
} pending_game;

/* Games by id: open addressing over a power-of-two table of pointers. */
typedef struct game_map {
    jread_line *done; /* finished games in file order */
    size_t ndone, donecap;
    pending_game **slot;
    size_t cap, count;
    pending_game **all; /* in start order, for a deterministic rebuild */
    size_t nall, allcap;
    jrn_recovery *rec; /* the next ids and counters */
} game_map;

static size_t map_hash(uint64_t id, size_t cap) {
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static pending_game *map_find(const game_map *m, uint64_t id) {
    if (!m->cap) return NULL;
    for (size_t i = map_hash(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slot[i]) return NULL;
        if (m->slot[i]->id == id) return m->slot[i];
    }
}

static int map_insert(game_map *m, pending_game *g) {
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        pending_game **slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t k = 0; k < m->cap; k++) {
            if (!m->slot[k]) continue;
            size_t i = map_hash(m->slot[k]->id, cap);
            while (slot[i])
                i = (i + 1) & (cap - 1);
            slot[i] = m->slot[k];
        }
        free(m->slot);
        m->slot = slot;
        m->cap = cap;
    }
    if (m->nall == m->allcap) {
        size_t cap = m->allcap ? m->allcap * 2 : 64;
        pending_game **all = realloc(m->all, cap * sizeof *all);
        if (!all) return -1;
        m->all = all;
        m->allcap = cap;
    }
    size_t i = map_hash(g->id, m->cap);
    while (m->slot[i])
        i = (i + 1) & (m->cap - 1);
    m->slot[i] = g;
    m->count++;
    m->all[m->nall++] = g;
    return 0;
}

static void game_free(pending_game *g) {
    json_decref(g->start);
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(g->moves[i]);
    free(g);
}

static int seat_index(const pending_game *g, uint64_t id) {
    for (int i = 0; i < g->nseats; i++)
        if (g->seat_id[i] == id) return i;
    return -1;
}

static uint64_t juint(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0
               ? (uint64_t)json_integer_value(v)
               : 0;
}

/* ------------------------------------------------------------ records --- */

static void note_game(game_map *m, uint64_t id) {
    if (id >= m->rec->next_game) m->rec->next_game = id + 1;
}

static void note_player(game_map *m, uint64_t id) {
    if (id >= m->rec->next_player_id) m->rec->next_player_id = id + 1;
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

bool jread_played(const char *line, size_t len) {
    const char *m = moves_member(line, len);
    if (!m) return false;
    /* Its strings are of u, d, l and r, its keys digits. */
    for (const char *p = m + sizeof ",\"moves\":{" - 1; p < line + len; p++)
        if (*p == 'u' || *p == 'd' || *p == 'l' || *p == 'r') return true;
    return false;
}

static int note_finished(game_map *m, uint64_t id, const char *line, size_t n) {
    pending_game *g = map_find(m, id);
    if (g) g->finished = true;
    note_game(m, id);
    if (!jread_played(line, n)) return 0; /* kept, but not for history */
    if (m->ndone == m->donecap) {
        size_t cap = m->donecap ? m->donecap * 2 : 1024;
        jread_line *d = realloc(m->done, cap * sizeof *d);
        if (!d) return -1;
        m->done = d;
        m->donecap = cap;
    }
    m->done[m->ndone++] = (jread_line){.id = id, .line = line, .len = n};
    return 0;
}

static pending_game *new_game(game_map *m, uint64_t id, int nseats,
                              const uint64_t *seat_ids) {
    if (!id || nseats < 1 || nseats > PROTO_PLAYERS_MAX || map_find(m, id)) return NULL;
    pending_game *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->id = id;
    g->nseats = nseats;
    for (int i = 0; i < nseats; i++) {
        g->seat_id[i] = seat_ids[i];
        note_player(m, seat_ids[i]);
    }
    if (map_insert(m, g) < 0) {
        game_free(g);
        return NULL;
    }
    note_game(m, id);
    return g;
}

/* Returns 0, or -1 if the record is not one the server writes. */
static int on_start(game_map *m, json_t *rec) {
    json_t *seats = json_object_get(rec, "seats");
    uint64_t ids[PROTO_PLAYERS_MAX];
    size_t n = json_array_size(seats);
    for (size_t i = 0; i < n && i < PROTO_PLAYERS_MAX; i++)
        ids[i] = juint(json_array_get(seats, i), "id");
    pending_game *g =
        new_game(m, juint(rec, "game"), n > PROTO_PLAYERS_MAX ? 0 : (int)n, ids);
    if (!g) return -1;
    g->start = json_incref(rec);
    return 0;
}

/* Appends n moves to seat i of g. */
static int add_moves(pending_game *g, int i, const char *moves, size_t n) {
    if (n == 0) return 0; /* a snapshot of a seat without moves */
    if (g->nmoves[i] + n > g->cap[i]) {
        size_t cap = g->cap[i] ? g->cap[i] : 64;
        while (cap < g->nmoves[i] + n)
            cap *= 2;
        char *p = realloc(g->moves[i], cap);
        if (!p) return -1;
        g->moves[i] = p;
        g->cap[i] = cap;
    }
    memcpy(g->moves[i] + g->nmoves[i], moves, n);
    g->nmoves[i] += n;
    return 0;
}

/* Reads the decimal number at *p (advancing it); false if there is none. */
static bool scan_u64(const char **p, const char *end, uint64_t *out) {
    const char *q = *p;
    uint64_t v = 0;
    while (q < end && *q >= '0' && *q <= '9' && q - *p < 19)
        v = v * 10 + (uint64_t)(*q++ - '0');
    if (q == *p) return false;
    *p = q;
    *out = v;
    return true;
}

static bool scan_lit(const char **p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0) return false;
    *p += n;
    return true;
}

/* The records that make up nearly all of a journal, read without a JSON
 * parser in the exact form the server writes them (start-up time on a full
 * journal). Returns 1 if handled, 0 to fall back to the parser, -1 if the
 * record is bad. */
static int fast_record(game_map *m, const char *line, size_t n, bool *finished) {
    const char *p = line, *end = line + n - 1; /* without the newline */
    uint64_t id;
    if (scan_lit(&p, end, "{\"j\":\"game\",\"game\":")) {
        if (!scan_u64(&p, end, &id) || *p != ',' || end[-1] != '}') return 0;
        *finished = true;
        return note_finished(m, id, line, n) < 0 ? -1 : 1;
    }
    if (scan_lit(&p, end, "{\"j\":\"start\",\"game\":")) {
        if (!scan_u64(&p, end, &id) || end[-1] != '}') return 0;
        /* The seat ids; names cannot hold the quotes and braces searched for. */
        uint64_t ids[PROTO_PLAYERS_MAX];
        int nseats = 0;
        for (const char *q = p; q + 7 < end; q++) {
            if (memcmp(q, "{\"id\":", 6) != 0) continue;
            const char *v = q + 6;
            if (nseats == PROTO_PLAYERS_MAX || !scan_u64(&v, end, &ids[nseats])) return 0;
            nseats++;
        }
        pending_game *g = new_game(m, id, nseats, ids);
        if (!g) return -1;
        g->start_line = line;
        g->start_len = n - 1;
        return 1;
    }
    if (!scan_lit(&p, end, "{\"j\":\"moves\",\"game\":")) return 0;
    if (!scan_u64(&p, end, &id) || !scan_lit(&p, end, ",\"m\":{")) return 0;
    pending_game *g = map_find(m, id);
    if (!g) return -1;
    /* The whole record is checked before any of it is applied. */
    struct {
        int seat;
        const char *moves;
        size_t n;
    } part[PROTO_PLAYERS_MAX];
    int nparts = 0;
    while (p < end && *p == '"') {
        uint64_t pid;
        p++;
        if (nparts == PROTO_PLAYERS_MAX || !scan_u64(&p, end, &pid) ||
            !scan_lit(&p, end, "\":\""))
            return -1;
        const char *mv = p;
        while (p < end && (*p == 'u' || *p == 'd' || *p == 'l' || *p == 'r'))
            p++;
        if (p == end || *p != '"') return -1;
        int i = seat_index(g, pid);
        if (i < 0) return -1;
        part[nparts].seat = i;
        part[nparts].moves = mv;
        part[nparts++].n = (size_t)(p - mv);
        p++;
        if (p < end && *p == ',') p++;
    }
    if (!scan_lit(&p, end, "}}") || p != end) return -1;
    for (int k = 0; k < nparts; k++)
        if (add_moves(g, part[k].seat, part[k].moves, part[k].n) < 0) return -1;
    return 1;
}

static int on_moves(game_map *m, json_t *rec) {
    pending_game *g = map_find(m, juint(rec, "game"));
    json_t *mv = json_object_get(rec, "m");
    if (!g || !json_is_object(mv)) return -1;
    const char *key;
    json_t *v;
    json_object_foreach(mv, key, v) {
        int i = seat_index(g, strtoull(key, NULL, 10));
        if (i < 0 || !json_is_string(v)) return -1;
        const char *letters = json_string_value(v);
        for (size_t k = 0; k < json_string_length(v); k++)
            if (!letters[k] || !strchr("udlr", letters[k])) return -1;
    }
    json_object_foreach(mv, key, v) {
        int i = seat_index(g, strtoull(key, NULL, 10));
        if (add_moves(g, i, json_string_value(v), json_string_length(v)) < 0) return -1;
    }
    return 0;
}

static int on_seat(game_map *m, json_t *rec) {
    pending_game *g = map_find(m, juint(rec, "game"));
    const char *event = json_string_value(json_object_get(rec, "event"));
    if (!g || !event) return -1;
    int i = seat_index(g, juint(rec, "id"));
    if (i < 0) return -1;
    if (!strcmp(event, "left")) g->left[i] = true;
    return 0;
}

static int on_game(game_map *m, json_t *rec, const char *line, size_t len) {
    uint64_t id = juint(rec, "game");
    if (!id) return -1;
    return note_finished(m, id, line, len);
}

static int on_head(game_map *m, json_t *rec) {
    uint64_t next_game = juint(rec, "next_game"), next_id = juint(rec, "next_id");
    if (next_game > 1) note_game(m, next_game - 1);
    if (next_id > m->rec->next_player_id) m->rec->next_player_id = next_id;
    return 0;
}

/* ------------------------------------------------------- running games --- */

/* A start record's room code, settings and secrets as the server writes them:
 * they are written back into records, so nothing else is taken. */
static bool start_valid(const jrn_start *st, const char *code, const char *salt,
                        const char *commit) {
    const proto_settings *set = &st->settings;
    if (set->size < ENG_SIZE_MIN || set->size > ENG_SIZE_MAX || !salt || !commit ||
        strlen(salt) != 32 || strlen(commit) != 64 || (!code && st->nseats != 1) ||
        (code && (strlen(code) < PROTO_ROOM_MIN || strlen(code) > PROTO_ROOM_MAX)) ||
        set->target < 8 || set->target > PROTO_TARGET_MAX ||
        (set->target & (set->target - 1)) || set->time_limit > PROTO_TIME_LIMIT_MAX)
        return false;
    for (const char *k = code; k && *k; k++)
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9'))) return false;
    return true;
}

/* Reads g's start record into out->start; returns 0, or -1 if it is not one
 * a game can be rebuilt from. */
static int read_start(pending_game *g, jrn_pending *out) {
    json_t *st = g->start;
    if (!st) st = g->start = json_loadb(g->start_line, g->start_len, 0, NULL);
    json_t *seats = json_object_get(st, "seats");
    if (!json_is_object(st) || json_array_size(seats) != (size_t)g->nseats) return -1;
    jrn_start *start = &out->start;
    const char *code = json_string_value(json_object_get(st, "room"));
    const char *salt = json_string_value(json_object_get(st, "salt"));
    const char *commit = json_string_value(json_object_get(st, "commit"));
    start->game = g->id;
    start->solo = code == NULL;
    start->nseats = g->nseats;
    start->settings = (proto_settings){.players = g->nseats,
                                       .size = (int)juint(st, "size"),
                                       .target = (uint32_t)juint(st, "target"),
                                       .time_limit = (uint32_t)juint(st, "time_limit")};
    if (!start_valid(start, code, salt, commit) ||
        journal_seed_parse(json_object_get(st, "seed"), &start->seed) < 0)
        return -1;
    snprintf(start->room, sizeof start->room, "%s", code ? code : "");
    memcpy(start->salt, salt, sizeof start->salt);
    memcpy(start->commit, commit, sizeof start->commit);
    start->started_ms = (int64_t)juint(st, "started");
    start->settings.rated = json_is_true(json_object_get(st, "rated"));
    json_int_t day = json_integer_value(json_object_get(st, "daily"));
    start->daily = json_is_integer(json_object_get(st, "daily")) && start->solo &&
                   day >= 0 && day < INT32_MAX;
    start->daily_day = start->daily ? (int32_t)day : 0;
    for (int i = 0; i < g->nseats; i++) {
        json_t *e = json_array_get(seats, (size_t)i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *hash = json_string_value(json_object_get(e, "token"));
        jrn_seat_info *seat = &start->seats[i];
        seat->id = g->seat_id[i];
        /* Names are written back into records unescaped. */
        snprintf(seat->name, sizeof seat->name, "%s",
                 name && proto_valid_name(name) ? name : "player");
        snprintf(seat->token_hash, sizeof seat->token_hash, "%s",
                 hash && strlen(hash) < sizeof seat->token_hash ? hash : "");
        const char *account = json_string_value(json_object_get(e, "account"));
        snprintf(seat->account, sizeof seat->account, "%s",
                 account && proto_valid_name(account) ? account : "");
        json_int_t level = json_integer_value(json_object_get(e, "bot"));
        seat->bot_level = level >= 1 && level <= 5 ? (uint8_t)level : 0;
    }
    return 0;
}

/* Hands g over as a pending game (its moves move to out). */
static int to_pending(pending_game *g, jrn_pending *out, int64_t now) {
    *out = (jrn_pending){0};
    if (read_start(g, out) < 0) return -1;
    for (int i = 0; i < g->nseats; i++) {
        out->moves[i] = g->moves[i];
        out->nmoves[i] = g->nmoves[i];
        out->left[i] = g->left[i];
        g->moves[i] = NULL;
    }
    uint32_t limit = out->start.settings.time_limit;
    if (limit) {
        int64_t end = out->start.started_ms + (int64_t)limit * 1000;
        out->remaining_ms = end > now ? (uint64_t)(end - now) : 1;
    }
    return 0;
}

/* --------------------------------------------------------------- entry --- */

/* Any other record, through the JSON parser: 1 if read, -1 if bad. */
static int parsed_record(game_map *m, const char *line, size_t n, bool *finished) {
    json_t *r = json_loadb(line, n - 1, JSON_REJECT_DUPLICATES, NULL);
    const char *kind = json_string_value(json_object_get(r, "j"));
    int rc;
    if (!kind)
        rc = -1;
    else if (!strcmp(kind, "moves"))
        rc = on_moves(m, r);
    else if (!strcmp(kind, "start"))
        rc = on_start(m, r);
    else if (!strcmp(kind, "seat"))
        rc = on_seat(m, r);
    else if (!strcmp(kind, "game"))
        rc = on_game(m, r, line, n);
    else if (!strcmp(kind, "head"))
        rc = on_head(m, r);
    else
        rc = 0; /* rematch and records of later versions */
    *finished = rc == 0 && !strcmp(kind, "game");
    json_decref(r);
    return rc == 0 ? 1 : -1;
}

/* The games with no finished record go to rec as pending games. */
static void hand_out(game_map *m, jrn_recovery *rec) {
    size_t running = 0;
    for (size_t k = 0; k < m->nall; k++)
        running += !m->all[k]->finished;
    rec->games = running ? calloc(running, sizeof *rec->games) : NULL;
    int64_t now = journal_wall_ms();
    for (size_t k = 0; k < m->nall; k++) {
        pending_game *g = m->all[k];
        if (!g->finished) {
            if (rec->games && to_pending(g, &rec->games[rec->ngames], now) == 0)
                rec->ngames++;
            else
                srv_log(SRV_LOG_WARN, "journal: game %llu could not be restored",
                        (unsigned long long)g->id);
        }
        game_free(g);
    }
}

size_t jread_records(const char *data, size_t len, jrn_recovery *rec, jread_line **done,
                     size_t *ndone) {
    game_map m = {.rec = rec};
    if (rec->next_game < 1) rec->next_game = 1;
    size_t good = 0, pos = 0;
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        if (!nl) break; /* no newline: a torn last record */
        size_t n = (size_t)(nl - (data + pos)) + 1;
        const char *line = data + pos;
        pos += n;
        bool finished = false;
        int rc = fast_record(&m, line, n, &finished);
        if (rc == 0) rc = parsed_record(&m, line, n, &finished);
        if (rc > 0) {
            rec->records++;
            rec->finished += finished;
            good = pos;
        } else {
            rec->bad++;
        }
    }
    if (rec->bad && good < len) {
        /* Bad lines at the very end are the torn tail, not skipped records. */
        size_t tail = 0;
        for (size_t p = good; p < len; p++)
            tail += data[p] == '\n';
        rec->bad -= tail < rec->bad ? tail : rec->bad;
    }
    *done = m.done;
    *ndone = m.ndone;
    hand_out(&m, rec);
    free(m.all);
    free(m.slot);
    return good;
}
