/* recover.c - start-up, above the game: the running games the journal read back are
 * rebuilt through the game's own functions. */
#include "recover.h"

#include <stdio.h>
#include <string.h>

#include "arena_host.h"
#include "bot.h"
#include "lobby.h"
#include "room.h"

/* Seats the start's players in a room for it: 0, or -1 (the room is
 * abandoned) if memory ran out. */
static int seat_players(game *s, room *r, const jrn_start *st) {
    for (int i = 0; i < st->nseats; i++) {
        const jrn_seat_info *seat = &st->seats[i];
        srv_player *p = lobby_player_restore(s, seat->id, seat->name, seat->token_hash);
        if (p) p->bot_level = seat->bot_level; /* its seat is a bot's again */
        if (!p || room_add_player(r, p, false) < 0) {
            if (p) srv_player_release(p);
            room_restore_abandon(r);
            return -1;
        }
    }
    return 0;
}

/* Rebuilds one running game; its moves are replayed into the seats' boards
 * and back into the journal's handle: already on file, or (adopt: another
 * node's game) written into this journal as new records. */
static int rebuild(game *s, const jrn_pending *g, bool adopt) {
    const jrn_start *st = &g->start;
    room *r = room_new_coded(s, st->solo, &st->settings, st->solo ? NULL : st->room);
    if (!r) return -1;
    r->seed = st->seed;
    r->seed_fixed = true;
    memcpy(r->salt, st->salt, sizeof r->salt);
    memcpy(r->commit, st->commit, sizeof r->commit);
    /* A daily game (its seed is a day's) hides its seed at its end as before. */
    if (st->daily) {
        r->daily = true;
        r->daily_day = st->daily_day;
        r->daily_reveal_ms = daily_day_start_ms(st->daily_day + 1);
        /* Taken over from another node: this one learns the day's seed, so
         * that its history and replay hide the game too. */
        if (journal_daily_learn(s->journal, st->daily_day, st->settings.size, &st->seed,
                                st->salt) < 0)
            srv_log(SRV_LOG_WARN, "journal: the daily seed of game %llu is not kept",
                    (unsigned long long)st->game);
    }
    if (seat_players(s, r, st) < 0) return -1;
    /* An arena's race counts in its arena again when it ends (taken over
     * from another node: if its arena was adopted first, arena_host_adopt). */
    if (st->settings.arena[0] &&
        !arena_host_relink(r, st->settings.arena, st->arena_race))
        srv_log(SRV_LOG_WARN, "journal: game %llu goes on outside its arena %s",
                (unsigned long long)st->game, st->settings.arena);
    room_restore_begin(r);
    r->game_id = st->game;
    /* Accounts were rebuilt before the games (journal_open): a rated race
     * goes on rated, its seats' accounts as they are now. */
    /* Another node's game taken over keeps its accounts only when accounts
     * are the cluster's (accounts_kv.c sets account_changed): without it
     * they were that node's, whatever their names here. */
    bool shared = s->account_changed != NULL;
    for (int i = 0; s->accounts_ready && (!adopt || shared) && i < st->nseats; i++) {
        room_seat *seat = &r->seats[i];
        seat->account = st->seats[i].account[0]
                            ? acct_find(&s->accounts, st->seats[i].account)
                            : NULL;
        seat->rating = seat->account ? acct_rating(seat->account) : 0;
        if (seat->player) seat->player->account = seat->account;
    }
    r->jgame =
        adopt ? journal_game_adopt(s->journal, st) : journal_game_restore(s->journal, st);
    for (int i = 0; i < st->nseats; i++) {
        for (size_t k = 0; k < g->nmoves[i]; k++) {
            eng_dir d;
            if (proto_dir_from_letter(g->moves[i][k], &d) < 0) continue;
            eng_move_result res = room_seat_play(&r->seats[i], d, s->tables);
            if (res.moved) journal_move(r->jgame, i, d);
        }
    }
    if (adopt) {
        for (int i = 0; i < st->nseats; i++)
            if (g->left[i]) journal_seat(r->jgame, i, JRN_SEAT_LEFT);
    } else {
        journal_game_restored(r->jgame);
    }
    room_restore_finish(r, g->left, g->remaining_ms);
    /* Its bots move on from where they were (a bot never waits to resume). */
    for (int i = 0; r->state == ROOM_RUNNING && i < r->nseats; i++) {
        srv_player *p = r->seats[i].player;
        if (p && p->bot_level && bots_adopt(s, p, p->bot_level) < 0)
            srv_log(SRV_LOG_WARN, "journal: a bot of game %llu could not be restored",
                    (unsigned long long)st->game);
    }
    return 0;
}

size_t recover_games(game *s, const jrn_recovery *rec) {
    if (s->next_id < rec->next_player_id) s->next_id = rec->next_player_id;
    /* With --seed, the K-th seed is derived from K: start past every recorded game so
     * that a restarted server never deals a seed it dealt before. */
    if (s->seeds_made < rec->next_game) s->seeds_made = rec->next_game;
    size_t restored = 0;
    for (size_t k = 0; k < rec->ngames; k++) {
        if (rebuild(s, &rec->games[k], false) == 0)
            restored++;
        else
            srv_log(SRV_LOG_WARN, "journal: game %llu could not be restored",
                    (unsigned long long)rec->games[k].start.game);
    }
    const char *path = journal_path(s->journal);
    if (path[0])
        srv_log(SRV_LOG_INFO,
                "journal %s: %zu bytes, %zu records (%zu bad skipped), %zu finished "
                "games, %zu running games restored in %.1f ms",
                path, rec->bytes, rec->records, rec->bad, rec->finished, restored,
                (double)(uv_hrtime() - rec->started_ns) / 1e6);
    return restored;
}

size_t recover_adopt(game *s, const jrn_recovery *rec) {
    size_t adopted = 0;
    for (size_t k = 0; k < rec->ngames; k++) {
        const jrn_start *st = &rec->games[k].start;
        /* A game two dead incarnations both hold (one took it over from the
         * other, then died before cleaning up) is rebuilt once. */
        if (journal_game_running(s->journal, st->game) ||
            (!st->solo && room_find(s, st->room))) {
            srv_log(SRV_LOG_WARN, "takeover: game %llu (room %s) runs here already",
                    (unsigned long long)st->game, st->solo ? "solo" : st->room);
            continue;
        }
        if (rebuild(s, &rec->games[k], true) == 0)
            adopted++;
        else
            srv_log(SRV_LOG_WARN, "takeover: game %llu could not be rebuilt",
                    (unsigned long long)st->game);
    }
    return adopted;
}
