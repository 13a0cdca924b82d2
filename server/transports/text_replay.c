/* text_replay.c - text mode's look at the record: the history list, and a finished game
 * played back move by move like a race being watched. */
#include "text_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct text_replay {
    uint64_t game;
    int n, size;
    uint32_t target;
    char room[PROTO_ROOM_MAX + 1]; /* "" for a solo game */
    uint64_t ids[PROTO_PLAYERS_MAX];
    char names[PROTO_PLAYERS_MAX][PROTO_NAME_MAX + 1];
    char *moves[PROTO_PLAYERS_MAX];
    size_t nmoves[PROTO_PLAYERS_MAX];
    eng_game games[PROTO_PLAYERS_MAX];
    proto_status final[PROTO_PLAYERS_MAX]; /* each player's recorded status */
    size_t step, steps;
    int ms;
    char verdict[96];
};

/* The name of player id in the results, or NULL. */
static const char *name_of(const proto_game_record *g, uint64_t id) {
    for (int i = 0; i < g->nresults; i++)
        if (g->results[i].id == id) return g->results[i].name;
    return NULL;
}

/* One game of the history list: id, room, players and scores, winner, when. */
void text_replay_history_entry(const proto_game_record *g, char *entry) {
    const size_t n = TEXT_HISTORY_ENTRY;
    const char *room = g->room[0] ? g->room : NULL;
    char players[160] = "";
    size_t at = 0;
    for (int i = 0; i < g->nresults && at < sizeof players; i++)
        at += (size_t)snprintf(players + at, sizeof players - at, "%s%s %llu",
                               i ? ", " : "", g->results[i].name,
                               (unsigned long long)g->results[i].score);
    const char *wname = g->winner ? name_of(g, g->winner) : NULL;
    time_t ended = (time_t)(g->ended / 1000);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&ended, &tm)) strftime(when, sizeof when, "%H:%M UTC", &tm);
    snprintf(entry, n, "  #%-5llu %-6s %s%s%s  %s", (unsigned long long)g->game,
             room ? room : "solo", players,
             room ? (wname ? ", won by " : ", a draw") : "", room && wname ? wname : "",
             when);
}

int text_replay_history_lines(const char (*entries)[TEXT_HISTORY_ENTRY], int n,
                              proto_buf *b, int width, int rows) {
    int listed = 0;
    bool limited = rows >= 0;
    for (int k = 0; k < n; k++) {
        /* Wrapped at words; a game that would not fit whole is left out,
         * and so are the older ones. */
        int need = proto_render_wrapped(NULL, entries[k], width);
        if (limited && need > rows) break;
        proto_render_wrapped(b, entries[k], width);
        rows -= need;
        listed++;
    }
    return b->failed ? -1 : listed;
}

int text_replay_history(const proto_game_record *const *games, int n, proto_buf *b,
                        int width, int rows) {
    int listed = 0;
    bool limited = rows >= 0;
    for (int k = 0; k < n; k++) {
        char entry[1][TEXT_HISTORY_ENTRY];
        text_replay_history_entry(games[k], entry[0]);
        int need = proto_render_wrapped(NULL, entry[0], width);
        if (limited && need > rows) break;
        if (text_replay_history_lines(entry, 1, b, width, -1) < 0) return -1;
        rows -= need;
        listed++;
    }
    return b->failed ? -1 : listed;
}

/* The verdict the record gives, for the caption of the last frame. */
static void verdict(const proto_game_record *g, char *out, size_t n) {
    const char *reason = proto_end_reason_name(g->reason);
    const char *wname = g->winner ? name_of(g, g->winner) : NULL;
    if (!g->room[0])
        snprintf(out, n, "The game ended with %llu points.",
                 (unsigned long long)g->results[0].score);
    else if (wname)
        snprintf(out, n, "%s won (%s).", wname, reason);
    else
        snprintf(out, n, "No winner (%s).", reason);
}

/* Seat i of the replay: player id's name, recorded status, moves and board. */
static bool replay_seat(text_replay *t, const proto_game_record *g, int i) {
    const char *name = name_of(g, t->ids[i]);
    snprintf(t->names[i], sizeof t->names[i], "%s", name ? name : "?");
    t->final[i] = PROTO_PLAYING;
    for (int r = 0; r < g->nresults; r++)
        if (g->results[r].id == t->ids[i]) t->final[i] = g->results[r].status;
    const proto_seat_moves *mv = NULL;
    for (int k = 0; k < g->nseats; k++)
        if (g->seats[k].id == t->ids[i]) mv = &g->seats[k];
    size_t n = mv ? mv->n : 0;
    t->moves[i] = malloc(n + 1);
    if (!t->moves[i] || eng_game_new(&t->games[i], t->size, &g->seed) < 0) return false;
    if (n) memcpy(t->moves[i], mv->letters, n);
    t->moves[i][n] = '\0';
    t->nmoves[i] = n;
    if (n > t->steps) t->steps = n;
    return true;
}

text_replay *text_replay_open(const proto_game_record *g, const char **why) {
    *why = "No finished game has that number here (type history).";
    if (!g) return NULL;
    text_replay *t = calloc(1, sizeof *t);
    if (!t || g->nresults < 1 || g->nresults > PROTO_PLAYERS_MAX) {
        *why = "That game's record cannot be played back.";
        free(t);
        return NULL;
    }
    t->game = g->game;
    t->n = g->nresults;
    t->size = g->size;
    t->target = g->target;
    t->ms = TEXT_REPLAY_MS_DEFAULT;
    snprintf(t->room, sizeof t->room, "%s", g->room);
    /* The results are ranked; show the players in the order they joined (by id). */
    for (int i = 0; i < t->n; i++)
        t->ids[i] = g->results[i].id;
    for (int i = 1; i < t->n; i++)
        for (int k = i; k > 0 && t->ids[k - 1] > t->ids[k]; k--) {
            uint64_t x = t->ids[k];
            t->ids[k] = t->ids[k - 1];
            t->ids[k - 1] = x;
        }
    bool ok = true;
    for (int i = 0; i < t->n && ok; i++)
        ok = replay_seat(t, g, i);
    verdict(g, t->verdict, sizeof t->verdict);
    if (!ok) {
        text_replay_free(t);
        *why = "That game's record cannot be played back.";
        return NULL;
    }
    return t;
}

void text_replay_free(text_replay *t) {
    if (!t) return;
    for (int i = 0; i < PROTO_PLAYERS_MAX; i++)
        free(t->moves[i]);
    free(t);
}

bool text_replay_done(const text_replay *t) {
    return t->step >= t->steps;
}

bool text_replay_step(text_replay *t) {
    if (text_replay_done(t)) return false;
    for (int i = 0; i < t->n; i++) {
        if (t->step >= t->nmoves[i]) continue;
        eng_dir d = ENG_DOWN;
        proto_dir_from_letter(t->moves[i][t->step], &d);
        eng_game_move(&t->games[i], d, NULL);
    }
    t->step++;
    return true;
}

int text_replay_pace(text_replay *t, int dir) {
    if (dir > 0 && t->ms > TEXT_REPLAY_MS_MIN) t->ms /= 2;
    if (dir < 0 && t->ms < TEXT_REPLAY_MS_MAX) t->ms *= 2;
    return t->ms;
}

int text_replay_ms(const text_replay *t) {
    return t->ms;
}

void text_replay_caption(const text_replay *t, char *out, size_t n) {
    if (text_replay_done(t))
        snprintf(out, n, "Replay of game %llu: all %zu moves shown. %s",
                 (unsigned long long)t->game, t->steps, t->verdict);
    else
        snprintf(out, n, "Replay of game %llu: move %zu of %zu.",
                 (unsigned long long)t->game, t->step, t->steps);
}

int text_replay_render(const text_replay *t, proto_buf *b, int width, int height,
                       proto_color color, const char *status, const char *hint) {
    proto_player views[PROTO_PLAYERS_MAX];
    for (int i = 0; i < t->n; i++) {
        const eng_game *g = &t->games[i];
        views[i] = (proto_player){.id = t->ids[i],
                                  .name = t->names[i],
                                  .board = &g->board,
                                  .score = g->score,
                                  .moves = g->moves,
                                  .status = proto_replay_status(
                                      &g->board, t->target,
                                      t->step < t->nmoves[i] ? t->step : t->nmoves[i],
                                      t->nmoves[i], t->final[i], text_replay_done(t))};
    }
    proto_view v = {.players = views,
                    .n = t->n,
                    .room = t->room[0] ? t->room : NULL,
                    .target = t->target,
                    .width = width,
                    .color = color,
                    .status = status,
                    .hint = hint,
                    .height = height,
                    .replay = true};
    return proto_render_game(b, &v);
}
