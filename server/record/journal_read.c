/* journal_read.c - the record read back at start-up: records to the games still running
 * and the finished games' lines, and where a torn tail begins. */
#include "journal_read.h"
#include "journal_internal.h" /* MOVES_FIRST */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h" /* srv_log: a shared service */
#include "byte_buf.h"

/* A game seen in the journal that has no finished record (yet). */
typedef struct pending_game {
    uint64_t id;
    const char *start_line; /* its start record, read when the game is rebuilt */
    size_t start_len;
    int nseats;
    uint64_t seat_id[PROTO_PLAYERS_MAX];
    byte_buf moves[PROTO_PLAYERS_MAX]; /* each seat's, letters u d l r */
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
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        byte_buf_free(&g->moves[i]);
    free(g);
}

static int seat_index(const pending_game *g, uint64_t id) {
    for (int i = 0; i < g->nseats; i++)
        if (g->seat_id[i] == id) return i;
    return -1;
}

/* ------------------------------------------------------------ records --- */

static void note_game(game_map *m, uint64_t id) {
    if (id >= m->rec->next_game) m->rec->next_game = id + 1;
}

static void note_player(game_map *m, uint64_t id) {
    if (id >= m->rec->next_player_id) m->rec->next_player_id = id + 1;
}

static int note_finished(game_map *m, uint64_t id, const char *line, size_t n) {
    pending_game *g = map_find(m, id);
    if (g) g->finished = true;
    note_game(m, id);
    if (!proto_rec_game_played(line, n)) return 0; /* kept, but not for history */
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

/* A start record: the game and its seat ids (read whole when it is rebuilt). */
static int on_start(game_map *m, const char *line, size_t n) {
    uint64_t id, ids[PROTO_PLAYERS_MAX];
    int nseats = 0;
    if (proto_scan_start_ids(line, n, &id, ids, &nseats) < 0) {
        proto_start_record st; /* spelled otherwise: parsed */
        if (proto_dec_start_record(line, n, &st) < 0) return -1;
        id = st.game;
        nseats = st.nseats;
        for (int i = 0; i < nseats; i++)
            ids[i] = st.seats[i].id;
    }
    pending_game *g = new_game(m, id, nseats, ids);
    if (!g) return -1;
    g->start_line = line;
    g->start_len = n;
    return 0;
}

/* Appends n moves to seat i of g. */
static int add_moves(pending_game *g, int i, const char *moves, size_t n) {
    assert(i >= 0 && i < g->nseats);
    if (n && !g->moves[i].cap && byte_buf_reserve(&g->moves[i], MOVES_FIRST) < 0)
        return -1;
    return byte_buf_append(&g->moves[i], moves, n); /* n 0: a seat without moves */
}

static int on_moves(game_map *m, const char *line, size_t n) {
    uint64_t id;
    proto_moves_part parts[PROTO_PLAYERS_MAX];
    int nparts = 0, seat[PROTO_PLAYERS_MAX];
    char *owned = NULL;
    if (proto_dec_moves_record(line, n, &id, parts, &nparts, &owned) < 0) return -1;
    pending_game *g = map_find(m, id);
    int rc = g ? 0 : -1;
    /* The whole record is checked before any of it is applied. */
    for (int k = 0; rc == 0 && k < nparts; k++)
        rc = (seat[k] = seat_index(g, parts[k].id)) < 0 ? -1 : 0;
    for (int k = 0; rc == 0 && k < nparts; k++)
        rc = add_moves(g, seat[k], parts[k].letters, parts[k].n);
    free(owned);
    return rc;
}

static int on_seat(game_map *m, const char *line, size_t n) {
    uint64_t id, player;
    char event[16];
    if (proto_dec_seat_record(line, n, &id, &player, event) < 0) return -1;
    pending_game *g = map_find(m, id);
    int i = g ? seat_index(g, player) : -1;
    if (i < 0) return -1;
    if (!strcmp(event, "left")) g->left[i] = true;
    return 0;
}

static int on_head(game_map *m, const char *line, size_t n) {
    uint64_t next_game, next_id;
    if (proto_dec_head_record(line, n, &next_game, &next_id) < 0) return -1;
    if (next_game > 1) note_game(m, next_game - 1);
    if (next_id > m->rec->next_player_id) m->rec->next_player_id = next_id;
    return 0;
}

/* ------------------------------------------------------- running games --- */

/* A start record's room code, settings and secrets as the server writes them:
 * they are written back into records, so nothing else is taken. */
static bool start_valid(const jrn_start *st) {
    const proto_settings *set = &st->settings;
    size_t room = strlen(st->room);
    if (set->size < ENG_SIZE_MIN || set->size > ENG_SIZE_MAX || strlen(st->salt) != 32 ||
        strlen(st->commit) != 64 || (st->solo && st->nseats != 1) ||
        (!st->solo && (room < PROTO_ROOM_MIN || room > PROTO_ROOM_MAX)) ||
        set->target < 8 || set->target > PROTO_TARGET_MAX ||
        (set->target & (set->target - 1)) || set->time_limit > PROTO_TIME_LIMIT_MAX)
        return false;
    for (const char *k = st->room; *k; k++)
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9'))) return false;
    for (const char *k = st->settings.arena; *k; k++)
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9'))) return false;
    return true;
}

/* Reads g's start record into out->start; returns 0, or -1 if it is not one
 * a game can be rebuilt from. */
static int read_start(pending_game *g, jrn_pending *out) {
    jrn_start *start = &out->start;
    if (proto_dec_start_record(g->start_line, g->start_len, start) < 0 ||
        start->nseats != g->nseats || !start_valid(start))
        return -1;
    start->game = g->id;
    start->daily = start->daily && start->solo;
    if (!start->daily) start->daily_day = 0;
    for (int i = 0; i < g->nseats; i++) {
        jrn_seat_info *seat = &start->seats[i];
        seat->id = g->seat_id[i];
        /* Names are shown and written back into records: only valid ones. */
        if (!proto_valid_name(seat->name))
            snprintf(seat->name, sizeof seat->name, "player");
        if (seat->account[0] && !proto_valid_name(seat->account)) seat->account[0] = '\0';
    }
    return 0;
}

/* Hands g over as a pending game (its moves move to out). */
static int to_pending(pending_game *g, jrn_pending *out, int64_t now) {
    *out = (jrn_pending){0};
    if (read_start(g, out) < 0) return -1;
    for (int i = 0; i < g->nseats; i++) {
        out->moves[i] = g->moves[i].data; /* malloc'd: journal_recovery_free frees it */
        out->nmoves[i] = g->moves[i].len;
        out->left[i] = g->left[i];
        g->moves[i] = (byte_buf){0};
    }
    uint32_t limit = out->start.settings.time_limit;
    if (limit) {
        int64_t end = out->start.started_ms + (int64_t)limit * 1000;
        out->remaining_ms = end > now ? (uint64_t)(end - now) : 1;
    }
    return 0;
}

/* --------------------------------------------------------------- entry --- */

/* One record: 1 if read, -1 if bad. The kinds recovery needs are read as
 * the writers spell them without a parser (start-up time on a full journal),
 * anything else through it (protocol/record.h). */
static int one_record(game_map *m, const char *line, size_t n, bool *finished) {
    uint64_t id;
    int rc = 0;
    switch (proto_rec_kind_parse(line, n, &id)) {
    case PROTO_REC_GAME:
        *finished = true;
        rc = id ? note_finished(m, id, line, n) : -1;
        break;
    case PROTO_REC_START:
        rc = on_start(m, line, n);
        break;
    case PROTO_REC_MOVES:
        rc = on_moves(m, line, n);
        break;
    case PROTO_REC_SEAT:
        rc = on_seat(m, line, n);
        break;
    case PROTO_REC_HEAD:
        rc = on_head(m, line, n);
        break;
    case PROTO_REC_OTHER: /* rematch, daily, account and records of later versions */
        break;
    case PROTO_REC_BAD:
        rc = -1;
        break;
    }
    *finished = *finished && rc == 0;
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
        int rc = one_record(&m, line, n, &finished);
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
