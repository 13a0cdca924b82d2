/* recover.c - start-up: reads the journal's records, finds a torn tail, rebuilds the
 * games that were running. */
#include "recover.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "journal.h"
#include "lobby.h"
#include "room.h"

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

/* A finished game's line; only the most recent are indexed, at the end. */
typedef struct game_line {
    uint64_t id;
    const char *line;
    size_t len;
} game_line;

/* Games by id: open addressing over a power-of-two table of pointers. */
typedef struct game_map {
    game_line *done; /* finished games in file order */
    size_t ndone, donecap;
    pending_game **slot;
    size_t cap, count;
    pending_game **all; /* in start order, for a deterministic rebuild */
    size_t nall, allcap;
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

static void pending_free(pending_game *g) {
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

static int note_finished(srv *s, game_map *m, uint64_t id, const char *line, size_t n) {
    pending_game *g = map_find(m, id);
    if (g) g->finished = true;
    journal_note_game(s, id);
    if (!journal_record_played(line, n)) return 0; /* kept, but not for history */
    if (m->ndone == m->donecap) {
        size_t cap = m->donecap ? m->donecap * 2 : 1024;
        game_line *d = realloc(m->done, cap * sizeof *d);
        if (!d) return -1;
        m->done = d;
        m->donecap = cap;
    }
    m->done[m->ndone++] = (game_line){.id = id, .line = line, .len = n};
    return 0;
}

static pending_game *new_game(srv *s, game_map *m, uint64_t id, int nseats,
                              const uint64_t *seat_ids) {
    if (!id || nseats < 1 || nseats > PROTO_PLAYERS_MAX || map_find(m, id)) return NULL;
    pending_game *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->id = id;
    g->nseats = nseats;
    for (int i = 0; i < nseats; i++) {
        g->seat_id[i] = seat_ids[i];
        if (seat_ids[i] >= s->game.next_id) s->game.next_id = seat_ids[i] + 1;
    }
    if (map_insert(m, g) < 0) {
        pending_free(g);
        return NULL;
    }
    journal_note_game(s, id);
    return g;
}

/* Returns 0, or -1 if the record is not one the server writes. */
static int on_start(srv *s, game_map *m, json_t *rec) {
    json_t *seats = json_object_get(rec, "seats");
    uint64_t ids[PROTO_PLAYERS_MAX];
    size_t n = json_array_size(seats);
    for (size_t i = 0; i < n && i < PROTO_PLAYERS_MAX; i++)
        ids[i] = juint(json_array_get(seats, i), "id");
    pending_game *g =
        new_game(s, m, juint(rec, "game"), n > PROTO_PLAYERS_MAX ? 0 : (int)n, ids);
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
static int fast_record(srv *s, game_map *m, const char *line, size_t n, bool *finished) {
    const char *p = line, *end = line + n - 1; /* without the newline */
    uint64_t id;
    if (scan_lit(&p, end, "{\"j\":\"game\",\"game\":")) {
        if (!scan_u64(&p, end, &id) || *p != ',' || end[-1] != '}') return 0;
        *finished = true;
        return note_finished(s, m, id, line, n) < 0 ? -1 : 1;
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
        pending_game *g = new_game(s, m, id, nseats, ids);
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

static int on_game(srv *s, game_map *m, json_t *rec, const char *line, size_t len) {
    uint64_t id = juint(rec, "game");
    if (!id) return -1;
    return note_finished(s, m, id, line, len);
}

static int on_head(srv *s, json_t *rec) {
    uint64_t next_game = juint(rec, "next_game"), next_id = juint(rec, "next_id");
    if (next_game > 1) journal_note_game(s, next_game - 1);
    if (next_id > s->game.next_id) s->game.next_id = next_id;
    return 0;
}

/* ------------------------------------------------------------ rebuild --- */

/* Rebuilds one running game as a room whose players wait to resume. */
static int rebuild(srv *s, pending_game *g) {
    json_t *st = g->start;
    if (!st) st = g->start = json_loadb(g->start_line, g->start_len, 0, NULL);
    if (!json_is_object(st)) return -1;
    if (json_array_size(json_object_get(st, "seats")) != (size_t)g->nseats) return -1;
    const char *code = json_string_value(json_object_get(st, "room"));
    proto_settings settings = {.players = g->nseats,
                               .size = (int)juint(st, "size"),
                               .target = (uint32_t)juint(st, "target"),
                               .time_limit = (uint32_t)juint(st, "time_limit")};
    const char *salt = json_string_value(json_object_get(st, "salt"));
    const char *commit = json_string_value(json_object_get(st, "commit"));
    if (settings.size < ENG_SIZE_MIN || settings.size > ENG_SIZE_MAX || !salt ||
        !commit || strlen(salt) != 32 || strlen(commit) != 64 ||
        (!code && g->nseats != 1) ||
        (code && (strlen(code) < PROTO_ROOM_MIN || strlen(code) > PROTO_ROOM_MAX)) ||
        settings.target < 8 || settings.target > PROTO_TARGET_MAX ||
        (settings.target & (settings.target - 1)) ||
        settings.time_limit > PROTO_TIME_LIMIT_MAX)
        return -1;
    for (const char *k = code; k && *k; k++) /* it is written back into records */
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9'))) return -1;
    room *r = room_new_coded(&s->game, code == NULL, &settings, code);
    if (!r) return -1;
    if (journal_seed_parse(r, json_object_get(st, "seed")) < 0) {
        room_restore_abandon(r);
        return -1;
    }
    memcpy(r->salt, salt, 33);
    memcpy(r->commit, commit, 65);
    json_t *seats = json_object_get(st, "seats");
    for (int i = 0; i < g->nseats; i++) {
        json_t *e = json_array_get(seats, (size_t)i);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *hash = json_string_value(json_object_get(e, "token"));
        if (name && !proto_valid_name(name))
            name = NULL; /* names are written back into records unescaped */
        srv_player *p = lobby_player_restore(&s->game, g->seat_id[i], name ? name : "player",
                                             hash ? hash : "");
        if (!p) {
            room_restore_abandon(r);
            return -1;
        }
        room_add_player(r, p, false);
        if (name) snprintf(r->seats[i].name, sizeof r->seats[i].name, "%s", name);
    }
    int64_t started = (int64_t)juint(st, "started");
    room_restore_begin(r);
    journal_game_restore(r, g->id, started);
    for (int i = 0; i < g->nseats; i++) {
        for (size_t k = 0; k < g->nmoves[i]; k++) {
            eng_dir d;
            if (proto_dir_from_letter(g->moves[i][k], &d) < 0) continue;
            eng_move_result res = eng_game_move(&r->seats[i].game, d, s->game.tables);
            if (res.moved) journal_move(r, i, d);
        }
    }
    journal_game_restored(r);
    int64_t now = journal_wall_ms();
    uint64_t remaining_ms = 0;
    if (settings.time_limit) {
        int64_t end = started + (int64_t)settings.time_limit * 1000;
        remaining_ms = end > now ? (uint64_t)(end - now) : 1;
    }
    room_restore_finish(r, g->left, remaining_ms);
    return 0;
}

/* --------------------------------------------------------------- entry --- */

size_t recover_journal(srv *s, const char *data, size_t len, recover_stats *st) {
    *st = (recover_stats){0};
    game_map m = {0};
    size_t good = 0, pos = 0;
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        if (!nl) break; /* no newline: a torn last record */
        size_t n = (size_t)(nl - (data + pos)) + 1;
        const char *line = data + pos;
        pos += n;
        bool finished = false;
        int fast = fast_record(s, &m, line, n, &finished);
        if (fast != 0) {
            if (fast > 0) {
                st->records++;
                st->finished += finished;
                good = pos;
            } else {
                st->bad++;
            }
            continue;
        }
        json_t *rec = json_loadb(line, n - 1, JSON_REJECT_DUPLICATES, NULL);
        const char *kind = json_string_value(json_object_get(rec, "j"));
        int rc = -1;
        if (kind) {
            if (!strcmp(kind, "moves"))
                rc = on_moves(&m, rec);
            else if (!strcmp(kind, "start"))
                rc = on_start(s, &m, rec);
            else if (!strcmp(kind, "seat"))
                rc = on_seat(&m, rec);
            else if (!strcmp(kind, "game"))
                rc = on_game(s, &m, rec, line, n);
            else if (!strcmp(kind, "head"))
                rc = on_head(s, rec);
            else
                rc = 0; /* rematch and records of later versions */
        }
        if (rc == 0 && !strcmp(kind, "game")) st->finished++;
        json_decref(rec);
        if (rc == 0) {
            st->records++;
            good = pos;
        } else {
            st->bad++;
        }
    }
    if (st->bad && good < len) {
        /* Bad lines at the very end are the torn tail, not skipped records. */
        size_t tail = 0;
        for (size_t p = good; p < len; p++)
            tail += data[p] == '\n';
        st->bad -= tail < st->bad ? tail : st->bad;
    }
    /* Only the most recent finished games are kept in memory. */
    size_t first = m.ndone > JOURNAL_INDEX_GAMES ? m.ndone - JOURNAL_INDEX_GAMES : 0;
    for (size_t k = first; k < m.ndone; k++)
        journal_index_add(s, m.done[k].id, m.done[k].line, m.done[k].len);
    free(m.done);
    for (size_t k = 0; k < m.nall; k++) {
        pending_game *g = m.all[k];
        if (!g->finished) {
            if (rebuild(s, g) == 0)
                st->restored++;
            else
                srv_log(SRV_LOG_WARN, "journal: game %llu could not be restored",
                        (unsigned long long)g->id);
        }
        pending_free(g);
    }
    free(m.all);
    free(m.slot);
    return good;
}
