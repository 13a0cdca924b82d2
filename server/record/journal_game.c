/* journal_game.c - one game's events to records: start, moves (buffered per seat
 * and flushed per commit), seats, rematch, account, and the finished record. */
#include "journal_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal_accounts.h"
#include "journal_read.h"

/* ---------------------------------------------------------------- games --- */

static void game_moves_record(journal *j, jrn_game *g) {
    proto_moves_part parts[PROTO_PLAYERS_MAX];
    for (int i = 0; i < g->start.nseats; i++) {
        jrn_seat *st = &g->seats[i];
        assert(st->flushed <= st->moves.len);
        parts[i] = (proto_moves_part){.id = g->start.seats[i].id,
                                      .n = st->moves.len - st->flushed};
        if (parts[i].n) parts[i].letters = st->moves.data + st->flushed;
        st->flushed = st->moves.len;
    }
    byte_buf b = {0};
    if (proto_rec_put_moves(&b, g->start.game, parts, g->start.nseats) < 0)
        byte_buf_free(&b);
    else
        jrn_append_buf(j, &b);
}
/* A game is in journal.dirty exactly while g->dirty says so. */
static void assert_dirty_link(const jrn_game *g) {
    assert(g->dirty == (g->dirty_link.next != &g->dirty_link));
    (void)g;
}

static void undirty(jrn_game *g) {
    assert_dirty_link(g);
    if (!g->dirty) return;
    srv_list_remove(&g->dirty_link);
    g->dirty = false;
}

void jrn_flush_moves(journal *j) {
    while (!srv_list_empty(&j->dirty)) {
        jrn_game *g = srv_container(j->dirty.next, jrn_game, dirty_link);
        game_moves_record(j, g);
        undirty(g);
    }
}

static void flush_game_moves(jrn_game *g) {
    if (!g->dirty) return;
    game_moves_record(g->j, g);
    undirty(g);
}

static jrn_game *game_new(journal *j, const jrn_start *start) {
    jrn_game *g = calloc(1, sizeof *g);
    if (!g) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory; a game goes unrecorded");
        return NULL;
    }
    g->j = j;
    g->start = *start;
    if (g->start.nseats < 0 || g->start.nseats > PROTO_PLAYERS_MAX) g->start.nseats = 0;
    srv_list_init(&g->dirty_link);
    srv_list_push(&j->games, &g->all_link);
    return g;
}

jrn_game *journal_game_start(journal *j, jrn_start *start) {
    if (!j) return NULL; /* a server without one (unit tests) */
    start->game = j->next_game++;
    return journal_game_adopt(j, start); /* a new game is one adopted with a new id */
}

void jrn_note_game(journal *j, uint64_t game) {
    if (game >= j->next_game) j->next_game = game + 1;
}

jrn_game *journal_game_adopt(journal *j, const jrn_start *start) {
    if (!j) return NULL;
    jrn_game *g = game_new(j, start);
    if (!g) return NULL;
    byte_buf b = {0};
    if (proto_rec_put_start(&b, &g->start) < 0)
        byte_buf_free(&b);
    else
        jrn_append_buf(j, &b);
    return g;
}

bool journal_game_running(const journal *j, uint64_t id) {
    for (const srv_link *l = j ? j->games.next : NULL; l && l != &j->games; l = l->next) {
        const jrn_game *g = srv_container(l, jrn_game, all_link);
        if (g->start.game == id && !g->ended) return true;
    }
    return false;
}

void journal_set_next_game(journal *j, uint64_t base) {
    if (j) j->next_game = base;
}

jrn_game *journal_game_restore(journal *j, const jrn_start *start) {
    if (!j) return NULL;
    jrn_note_game(j, start->game);
    return game_new(j, start);
}

void journal_game_restored(jrn_game *g) {
    if (!g) return;
    for (int i = 0; i < g->start.nseats; i++)
        g->seats[i].flushed = g->seats[i].moves.len;
    undirty(g);
}

void journal_move(jrn_game *g, int seat, eng_dir dir) {
    if (!g || seat < 0 || seat >= g->start.nseats) return;
    char letter = proto_dir_letter(dir);
    byte_buf *moves = &g->seats[seat].moves;
    /* A game's first moves do not grow the buffer a byte at a time. */
    if ((!moves->cap && byte_buf_reserve(moves, MOVES_FIRST) < 0) ||
        byte_buf_append(moves, &letter, 1) < 0) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory recording a move");
        return;
    }
    assert_dirty_link(g);
    if (!g->dirty) {
        g->dirty = true;
        srv_list_push(&g->j->dirty, &g->dirty_link);
    }
    if (g->j->on) jrn_note_record(g->j);
}

void journal_seat(jrn_game *g, int seat, jrn_seat_event event) {
    static const char *const names[] = {
        [JRN_SEAT_LEFT] = "left",
        [JRN_SEAT_OVER] = "over",
        [JRN_SEAT_DISCONNECTED] = "disconnected",
        [JRN_SEAT_CONNECTED] = "connected",
    };
    if (!g || !g->j->on || seat < 0 || seat >= g->start.nseats ||
        (unsigned)event >= sizeof names / sizeof names[0])
        return;
    flush_game_moves(g); /* the moves before the event come first */
    byte_buf b = {0};
    if (proto_rec_put_seat(&b, g->start.game, g->start.seats[seat].id, names[event]) == 0)
        jrn_append_buf(g->j, &b);
    else
        byte_buf_free(&b);
}

uint64_t journal_account(journal *j, const acct_account *a) {
    if (!j || !j->on) return 0;
    size_t len;
    char *line = jacct_record(a, &len);
    if (!line) {
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing an account");
        return 0;
    }
    jrn_append(j, line, len);
    free(line);
    return j->appended;
}

void journal_rematch(jrn_game *from, const char *to) {
    if (!from || !from->j->on) return;
    byte_buf b = {0};
    if (proto_rec_put_rematch(&b, from->start.game, to) == 0)
        jrn_append_buf(from->j, &b);
    else
        byte_buf_free(&b);
}

static void end_record(const jrn_game *g, const jrn_end *end, proto_game_record *rec) {
    const jrn_start *st = &g->start;
    *rec = (proto_game_record){.game = st->game,
                               .reason = end->reason,
                               .winner = end->winner,
                               .seed = st->seed,
                               .size = st->settings.size,
                               .target = st->settings.target,
                               .time_limit = st->settings.time_limit,
                               .started = st->started_ms,
                               .ended = end->ended_ms,
                               .nseats = st->nseats};
    if (!st->solo) memcpy(rec->room, st->room, sizeof rec->room);
    memcpy(rec->salt, st->salt, sizeof rec->salt);
    memcpy(rec->commit, st->commit, sizeof rec->commit);
    int n = end->nresults < PROTO_PLAYERS_MAX ? end->nresults : PROTO_PLAYERS_MAX;
    for (int i = 0; i < n; i++) {
        const proto_player *p = &end->results[i];
        proto_result *r = &rec->results[rec->nresults++];
        *r = (proto_result){.id = p->id,
                            .score = p->score,
                            .moves = p->moves,
                            .status = p->status,
                            .bot = p->bot};
        snprintf(r->name, sizeof r->name, "%s", p->name ? p->name : "");
        if (p->board)
            r->board = *p->board;
        else
            eng_board_init(&r->board, st->settings.size);
    }
    for (int i = 0; i < end->naccounts && i < PROTO_PLAYERS_MAX; i++)
        rec->accounts[rec->naccounts++] = end->accounts[i];
    for (int i = 0; i < end->nratings && i < PROTO_PLAYERS_MAX; i++)
        rec->ratings[rec->nratings++] = end->ratings[i];
    for (int i = 0; i < st->nseats; i++) /* the letters stay the game's until indexed */
        rec->seats[i] = (proto_seat_moves){.id = st->seats[i].id,
                                           .letters = g->seats[i].moves.data,
                                           .n = g->seats[i].moves.len};
}

uint64_t journal_game_end(jrn_game *g, const jrn_end *end) {
    if (!g) return 0;
    journal *j = g->j;
    undirty(g); /* the finished record holds every move */
    g->ended = true;
    proto_game_record *rec = malloc(sizeof *rec);
    size_t len = 0;
    char *line = NULL;
    if (rec) {
        end_record(g, end, rec);
        line = proto_enc_game_record(rec, &len);
    }
    if (!line) {
        free(rec);
        srv_log(SRV_LOG_ERROR, "journal: out of memory writing game %" PRIu64,
                g->start.game);
        return 0;
    }
    jrn_append(j, line, len);
    free(line);
    uint64_t pos = j->on ? j->appended : 0;
    if (proto_game_record_played(rec)) {          /* games nobody played are not listed */
        for (int i = 0; i < g->start.nseats; i++) /* the index takes the letters */
            g->seats[i].moves = (byte_buf){0};
        jrn_index_put(j, pos, rec);
    } else {
        free(rec);
    }
    if (j->pending.len >= EARLY_COMMIT_BYTES) jrn_commit_start(j);
    return pos;
}

void journal_adopt_finished(journal *j, const char *line, size_t len) {
    if (!j || !proto_rec_game_played(line, len)) return;
    proto_game_record *rec = malloc(sizeof *rec);
    if (!rec || proto_dec_game_record(line, len, rec) < 0 ||
        !proto_game_record_played(rec)) {
        jrn_record_free(rec);
        return;
    }
    for (size_t k = 0; k < j->index_count; k++)
        if (jrn_index_at(j, k)->rec->game == rec->game) {
            jrn_record_free(rec);
            return;
        }
    jrn_append(j, line, len);
    jrn_index_put(j, j->on ? j->appended : 0, rec);
}

void journal_game_free(jrn_game *g) {
    if (!g) return;
    if (!g->ended && g->j->on) flush_game_moves(g); /* shutdown: it resumes later */
    undirty(g);
    srv_list_remove(&g->all_link);
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(g->seats[i].moves.data);
    free(g);
}
