/* text_replay.c - text mode's look at the record: the history list, and a finished game
 * played back move by move like a race being watched. */
#include "text_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "journal.h"
#include "seed.h"

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

static json_int_t jint_or(const json_t *o, const char *k, json_int_t dflt) {
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *name_of(const json_t *results, json_int_t id) {
    for (size_t i = 0; i < json_array_size(results); i++) {
        const json_t *p = json_array_get(results, i);
        if (jint_or(p, "id", -1) == id)
            return json_string_value(json_object_get(p, "name"));
    }
    return NULL;
}

int text_replay_history(srv *s, proto_buf *b, int max, int width, int rows) {
    size_t len;
    char *line = journal_history(s->journal, max, &len);
    if (!line) return -1;
    json_t *h = json_loadb(line, len, 0, NULL);
    free(line);
    json_t *games = json_object_get(h, "games");
    int listed = 0;
    bool limited = rows >= 0;
    for (size_t g = 0; g < json_array_size(games); g++) {
        const json_t *rec = json_array_get(games, g);
        const json_t *results = json_object_get(rec, "results");
        const char *room = json_string_value(json_object_get(rec, "room"));
        char players[160] = "";
        size_t at = 0;
        for (size_t i = 0; i < json_array_size(results) && at < sizeof players; i++) {
            const json_t *p = json_array_get(results, i);
            at += (size_t)snprintf(players + at, sizeof players - at, "%s%s %lld",
                                   i ? ", " : "",
                                   json_string_value(json_object_get(p, "name")),
                                   (long long)jint_or(p, "score", 0));
        }
        json_int_t winner = jint_or(rec, "winner", 0);
        const char *wname = winner ? name_of(results, winner) : NULL;
        time_t ended = (time_t)(jint_or(rec, "ended", 0) / 1000);
        struct tm tm;
        char when[32] = "";
        if (gmtime_r(&ended, &tm)) strftime(when, sizeof when, "%H:%M UTC", &tm);
        char entry[320];
        snprintf(entry, sizeof entry, "  #%-5lld %-6s %s%s%s  %s",
                 (long long)jint_or(rec, "game", 0), room ? room : "solo", players,
                 room ? (wname ? ", won by " : ", a draw") : "",
                 room && wname ? wname : "", when);
        /* Wrapped at words; a game that would not fit whole is left out,
         * and so are the older ones. */
        int need = proto_render_wrapped(NULL, entry, width);
        if (limited && need > rows) break;
        proto_render_wrapped(b, entry, width);
        rows -= need;
        listed++;
    }
    json_decref(h);
    return b->failed ? -1 : listed;
}

text_replay *text_replay_open(srv *s, uint64_t id, const char **why) {
    size_t len;
    char *line = journal_replay(s->journal, id, &len);
    *why = "No finished game has that number here (type history).";
    if (!line) return NULL;
    json_t *rec = json_loadb(line, len, 0, NULL);
    free(line);
    const json_t *results = json_object_get(rec, "results");
    const json_t *moves = json_object_get(rec, "moves");
    eng_seed seed;
    text_replay *t = calloc(1, sizeof *t);
    size_t n = json_array_size(results);
    if (!t || !json_is_object(moves) || n < 1 || n > PROTO_PLAYERS_MAX ||
        proto_seed_from_json(json_object_get(rec, "seed"), &seed) < 0) {
        *why = "That game's record cannot be played back.";
        json_decref(rec);
        free(t);
        return NULL;
    }
    t->game = id;
    t->n = (int)n;
    t->size = (int)jint_or(rec, "size", 4);
    t->target = (uint32_t)jint_or(rec, "target", 2048);
    t->ms = TEXT_REPLAY_MS_DEFAULT;
    const char *room = json_string_value(json_object_get(rec, "room"));
    snprintf(t->room, sizeof t->room, "%s", room ? room : "");
    /* The results are ranked; show the players in the order they joined (by id). */
    for (size_t i = 0; i < n; i++)
        t->ids[i] = (uint64_t)jint_or(json_array_get(results, i), "id", 0);
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && t->ids[k - 1] > t->ids[k]; k--) {
            uint64_t x = t->ids[k];
            t->ids[k] = t->ids[k - 1];
            t->ids[k - 1] = x;
        }
    bool ok = true;
    for (int i = 0; i < t->n && ok; i++) {
        const char *name = name_of(results, (json_int_t)t->ids[i]);
        snprintf(t->names[i], sizeof t->names[i], "%s", name ? name : "?");
        t->final[i] = PROTO_PLAYING;
        for (size_t r = 0; r < n; r++) {
            const json_t *res = json_array_get(results, r);
            if ((uint64_t)jint_or(res, "id", 0) == t->ids[i])
                proto_status_parse(json_string_value(json_object_get(res, "status")),
                                   &t->final[i]);
        }
        char key[24];
        snprintf(key, sizeof key, "%llu", (unsigned long long)t->ids[i]);
        const char *mv = json_string_value(json_object_get(moves, key));
        t->moves[i] = strdup(mv ? mv : "");
        ok = t->moves[i] && eng_game_new(&t->games[i], t->size, &seed) == 0;
        if (ok) t->nmoves[i] = strlen(t->moves[i]);
        if (ok && t->nmoves[i] > t->steps) t->steps = t->nmoves[i];
    }
    json_int_t winner = jint_or(rec, "winner", 0);
    const char *wname = winner ? name_of(results, winner) : NULL;
    const char *reason = json_string_value(json_object_get(rec, "reason"));
    if (!room)
        snprintf(t->verdict, sizeof t->verdict, "The game ended with %lld points.",
                 (long long)jint_or(json_array_get(results, 0), "score", 0));
    else if (wname)
        snprintf(t->verdict, sizeof t->verdict, "%s won (%s).", wname,
                 reason ? reason : "?");
    else
        snprintf(t->verdict, sizeof t->verdict, "No winner (%s).", reason ? reason : "?");
    json_decref(rec);
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
                    .height = height};
    return proto_render_game(b, &v);
}
