/* journal_index.c - the finished games kept in memory (a bounded ring) for `history`
 * and `replay`, listed once their records are durable. */
#include "journal_internal.h"

#include <assert.h>
#include <stdlib.h>

#include "journal_read.h"

/* ---------------------------------------------------------------- index --- */

void jrn_record_free(proto_game_record *rec) {
    if (!rec) return;
    proto_game_record_clear(rec);
    free(rec);
}

static void index_drop_oldest(journal *j) {
    assert(j->index_count > 0);
    indexed *e =
        &j->index[(j->index_head + INDEX_GAMES_MAX - j->index_count) % INDEX_GAMES_MAX];
    assert(e->rec && j->index_bytes >= e->bytes);
    j->index_bytes -= e->bytes;
    jrn_record_free(e->rec);
    e->rec = NULL;
    j->index_count--;
}

/* Takes ownership of rec. */
void jrn_index_put(journal *j, uint64_t pos, proto_game_record *rec) {
    if (!j->index) {
        jrn_record_free(rec);
        return;
    }
    size_t cost = sizeof *rec;
    for (int i = 0; i < rec->nseats; i++)
        cost += rec->seats[i].n;
    while (j->index_count &&
           (j->index_count == INDEX_GAMES_MAX || j->index_bytes + cost > INDEX_BYTES_MAX))
        index_drop_oldest(j);
    assert(j->index_count < INDEX_GAMES_MAX && !j->index[j->index_head].rec);
    j->index[j->index_head] = (indexed){.pos = pos, .rec = rec, .bytes = cost};
    j->index_head = (j->index_head + 1) % INDEX_GAMES_MAX;
    j->index_count++;
    j->index_bytes += cost;
}

/* The k-th most recent indexed game. */
const indexed *jrn_index_at(const journal *j, size_t k) {
    assert(k < j->index_count);
    return &j->index[(j->index_head + INDEX_GAMES_MAX - 1 - k) % INDEX_GAMES_MAX];
}

/* Indexes the most recent finished games of lines (oldest first): each id
 * once (a kill mid-compaction leaves a game in both the archive and the
 * journal), only games in which a board changed, read from their records. */
void jrn_index_lines(journal *j, const jread_line *lines, size_t n) {
    size_t take[INDEX_GAMES_MAX];
    uint64_t ids[INDEX_GAMES_MAX];
    size_t ntake = 0;
    for (size_t k = n; k-- > 0 && ntake < INDEX_GAMES_MAX;) {
        if (!proto_rec_game_played(lines[k].line, lines[k].len)) continue;
        bool seen = false;
        for (size_t t = 0; t < ntake && !seen; t++)
            seen = ids[t] == lines[k].id;
        if (seen) continue;
        ids[ntake] = lines[k].id;
        take[ntake++] = k;
    }
    for (size_t t = ntake; t-- > 0;) {
        const jread_line *l = &lines[take[t]];
        proto_game_record *rec = malloc(sizeof *rec);
        if (rec && proto_dec_game_record(l->line, l->len, rec) == 0 &&
            proto_game_record_played(rec))
            jrn_index_put(j, 0, rec);
        else
            jrn_record_free(rec); /* a record read fails holding nothing */
    }
}

/* The finished-game record of g as end says it ended. */
/* ------------------------------------------------------ history, replay --- */

int journal_history(const journal *j, int limit, const proto_game_record **out) {
    if (!j) return -1;
    int listed = 0;
    for (size_t k = 0; listed < limit && k < j->index_count; k++) {
        const indexed *e = jrn_index_at(j, k);
        if (e->pos > j->durable) continue; /* its `end` has not gone out yet */
        if (journal_daily_secret(j, e->rec)) continue; /* until its day is over */
        out[listed++] = e->rec;
    }
    return listed;
}

const proto_game_record *journal_replay(const journal *j, uint64_t id) {
    for (size_t k = 0; j && k < j->index_count; k++) {
        const indexed *e = jrn_index_at(j, k);
        if (e->rec->game == id && e->pos <= j->durable)
            return journal_daily_secret(j, e->rec) ? NULL : e->rec;
    }
    return NULL;
}
