/* replay.c - race2048-replay: re-plays every finished game of a journal through the rules
 * and checks its recorded result and seed commitment; --show plays one on the terminal.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "analyse.h"
#include "args.h"
#include "engine.h"
#include "message.h"
#include "rating.h"
#include "render.h"
#include "replay_show.h"
#include "seed.h"

typedef struct options {
    const char *file;
    const char *game;    /* --game: check only this id (as text) */
    const char *show;    /* --show: render this id */
    const char *analyse; /* --analyse: the AI's verdict on this id's moves */
    long delay_ms;       /* --delay between frames of --show */
} options;

/* ------------------------------------------------------------- checking --- */

/* One failure message per game: the first problem found. */
typedef struct verdict {
    char why[256];
    bool failed;
} verdict;

static bool fail(verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(verdict *v, const char *fmt, ...) {
    if (v->failed) return false;
    v->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof v->why, fmt, ap);
    va_end(ap);
    return false;
}

/* The seed as `end` writes it (protocol/seed.h reads it). */
typedef struct seed_info {
    eng_seed seed;
} seed_info;

static bool parse_seed(const json_t *seed, seed_info *out, verdict *v) {
    if (proto_seed_from_json(seed, &out->seed) == 0) return true;
    return fail(v, "the seed is neither 64 hex digits nor a number up to 2^32-1");
}

static int seed_game_new(eng_game *g, int size, const seed_info *seed) {
    return eng_game_new(g, size, &seed->seed);
}

static bool check_commit(const char *salt, const seed_info *seed, const char *commit,
                         verdict *v) {
    char want[PROTO_COMMIT_TEXT];
    if (proto_commit(salt, &seed->seed, want) < 0)
        return fail(v, "the salt is not valid");
    if (strcmp(want, commit) != 0)
        return fail(v, "the commit does not match SHA-256(salt:seed)");
    return true;
}

/* A player as re-played. */
typedef struct replayed {
    uint64_t id;
    eng_game game;
    const char *status; /* as recorded */
    bool left;
} replayed;

static const char *rule_status(const eng_game *g, uint32_t target) {
    if (eng_is_over(&g->board)) return "over";
    if (eng_has_won(&g->board, target)) return "won";
    return "playing";
}

/* The ranking of protocol/README.md: left last, then score, max tile, fewer moves. */
static int rank_cmp(const replayed *a, const replayed *b) {
    if (a->left != b->left) return a->left ? 1 : -1;
    if (a->game.score != b->game.score) return a->game.score > b->game.score ? -1 : 1;
    uint64_t am = eng_max_tile(&a->game.board), bm = eng_max_tile(&b->game.board);
    if (am != bm) return am > bm ? -1 : 1;
    if (a->game.moves != b->game.moves) return a->game.moves < b->game.moves ? -1 : 1;
    return 0;
}

static bool board_equal(const json_t *rows, const eng_board *b) {
    if (!json_is_array(rows) || json_array_size(rows) != b->size) return false;
    for (int r = 0; r < b->size; r++) {
        const json_t *row = json_array_get(rows, (size_t)r);
        if (!json_is_array(row) || json_array_size(row) != b->size) return false;
        for (int c = 0; c < b->size; c++) {
            const json_t *x = json_array_get(row, (size_t)c);
            if (!json_is_integer(x) ||
                (uint64_t)json_integer_value(x) != eng_cell_value(b, r, c))
                return false;
        }
    }
    return true;
}

static json_int_t jint_or(const json_t *o, const char *k, json_int_t dflt) {
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Re-plays one player's moves; false (with why) if one does not apply. */
static bool replay_player(const char *moves, int size, const seed_info *seed,
                          replayed *out, verdict *v) {
    if (seed_game_new(&out->game, size, seed) < 0) return fail(v, "bad size %d", size);
    for (size_t k = 0; moves[k]; k++) {
        eng_dir d;
        if (proto_dir_from_letter(moves[k], &d) < 0)
            return fail(v, "player %llu: move %zu is '%c', not one of u d l r",
                        (unsigned long long)out->id, k + 1, moves[k]);
        if (eng_is_over(&out->game.board))
            return fail(v, "player %llu: move %zu comes after the game was over",
                        (unsigned long long)out->id, k + 1);
        if (!eng_game_move(&out->game, d, NULL).moved)
            return fail(v, "player %llu: move %zu changes nothing",
                        (unsigned long long)out->id, k + 1);
    }
    return true;
}

/* Checks one finished-game record. */
/* A [mu, sigma] pair of a ratings entry. */
static bool skill_pair(const json_t *a, rating_skill *out) {
    if (json_array_size(a) != 2 || !json_is_number(json_array_get(a, 0)) ||
        !json_is_number(json_array_get(a, 1)))
        return false;
    out->mu = json_number_value(json_array_get(a, 0));
    out->sigma = json_number_value(json_array_get(a, 1));
    return true;
}

/* A rated race's "ratings" (version 4): one entry per player in results order,
 * its place as the ranking gives it (a full tie shares one, so do the players
 * who left, last; a winner alone is first), and the skill after equal to
 * rating_update's from the skills before (to 1e-9: the record keeps 17 digits). */
static bool check_ratings(const json_t *rec, const replayed *pl, size_t n,
                          uint64_t winner, verdict *v) {
    const json_t *ratings = json_object_get(rec, "ratings");
    if (!ratings) return true; /* not a rated race */
    if (!json_is_array(ratings) || json_array_size(ratings) != n || n < 2)
        return fail(v, "ratings: %zu entries for %zu players", json_array_size(ratings),
                    n);
    rating_skill skill[PROTO_PLAYERS_MAX], after[PROTO_PLAYERS_MAX];
    int place[PROTO_PLAYERS_MAX];
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(ratings, i);
        bool tied = i > 0 && !(i == 1 && winner) &&
                    ((pl[i].left && pl[i - 1].left) || rank_cmp(&pl[i], &pl[i - 1]) == 0);
        place[i] = tied ? place[i - 1] : (int)i + 1;
        if (jint_or(e, "id", -1) != (json_int_t)pl[i].id)
            return fail(v, "ratings: entry %zu is not player %llu's", i + 1,
                        (unsigned long long)pl[i].id);
        if (jint_or(e, "place", -1) != place[i])
            return fail(v, "ratings: player %llu has place %lld, %d by the ranking",
                        (unsigned long long)pl[i].id, (long long)jint_or(e, "place", -1),
                        place[i]);
        if (!skill_pair(json_object_get(e, "before"), &skill[i]) ||
            !skill_pair(json_object_get(e, "after"), &after[i]))
            return fail(v, "ratings: player %llu has no skill before or after",
                        (unsigned long long)pl[i].id);
    }
    if (!rating_update(skill, place, n))
        return fail(v, "ratings: a skill before the race is not valid");
    for (size_t i = 0; i < n; i++)
        if (fabs(skill[i].mu - after[i].mu) > 1e-9 ||
            fabs(skill[i].sigma - after[i].sigma) > 1e-9)
            return fail(v,
                        "ratings: player %llu's update gives (%.9f, %.9f), the record "
                        "says (%.9f, %.9f)",
                        (unsigned long long)pl[i].id, skill[i].mu, skill[i].sigma,
                        after[i].mu, after[i].sigma);
    return true;
}

static bool check_game(const json_t *rec, verdict *v) {
    const json_t *results = json_object_get(rec, "results");
    const json_t *moves = json_object_get(rec, "moves");
    const char *reason = json_string_value(json_object_get(rec, "reason"));
    const char *salt = json_string_value(json_object_get(rec, "salt"));
    const char *commit = json_string_value(json_object_get(rec, "commit"));
    const json_t *winner_v = json_object_get(rec, "winner");
    int size = (int)jint_or(rec, "size", 0);
    json_int_t target = jint_or(rec, "target", 0);
    bool solo = !json_object_get(rec, "room");
    if (!json_is_array(results) || !json_is_object(moves) || !reason || !salt ||
        !commit || !winner_v || !json_is_integer(json_object_get(rec, "time_limit")) ||
        !json_is_integer(json_object_get(rec, "started")) ||
        !json_is_integer(json_object_get(rec, "ended")))
        return fail(v, "a field of the finished-game record is missing");
    if (target < 8 || target > PROTO_TARGET_MAX || (target & (target - 1)))
        return fail(v, "bad target");
    size_t n = json_array_size(results);
    if (n < 1 || n > PROTO_PLAYERS_MAX || (solo && n != 1))
        return fail(v, "bad number of players (%zu)", n);
    if (json_object_size(moves) != n)
        return fail(v, "moves are recorded for %zu players, results list %zu",
                    json_object_size(moves), n);
    seed_info seed;
    if (!parse_seed(json_object_get(rec, "seed"), &seed, v)) return false;
    if (!check_commit(salt, &seed, commit, v)) return false;

    replayed pl[PROTO_PLAYERS_MAX];
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(results, i);
        json_int_t id = jint_or(p, "id", -1);
        const char *status = json_string_value(json_object_get(p, "status"));
        if (id < 1 || !status) return fail(v, "result %zu has no id or status", i + 1);
        for (size_t k = 0; k < i; k++)
            if (pl[k].id == (uint64_t)id)
                return fail(v, "player %lld twice", (long long)id);
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)id);
        const char *mv = json_string_value(json_object_get(moves, key));
        if (!mv) return fail(v, "no moves for player %lld", (long long)id);
        pl[i] = (replayed){.id = (uint64_t)id, .status = status};
        pl[i].left = !strcmp(status, "left");
        if (!replay_player(mv, size, &seed, &pl[i], v)) return false;
        const eng_game *g = &pl[i].game;
        if ((uint64_t)jint_or(p, "score", -1) != g->score)
            return fail(v, "player %lld: score %lld recorded, %llu by the rules",
                        (long long)id, (long long)jint_or(p, "score", -1),
                        (unsigned long long)g->score);
        if ((uint64_t)jint_or(p, "moves", -1) != g->moves)
            return fail(v, "player %lld: %lld moves recorded, %u by the rules",
                        (long long)id, (long long)jint_or(p, "moves", -1), g->moves);
        if ((uint64_t)jint_or(p, "max_tile", -1) != eng_max_tile(&g->board))
            return fail(v, "player %lld: max tile %lld recorded, %llu by the rules",
                        (long long)id, (long long)jint_or(p, "max_tile", -1),
                        (unsigned long long)eng_max_tile(&g->board));
        if (!board_equal(json_object_get(p, "board"), &g->board))
            return fail(v, "player %lld: the board differs from the rules'",
                        (long long)id);
        const char *rule = rule_status(g, (uint32_t)target);
        bool ok = pl[i].left ? strcmp(rule, "over") != 0 : strcmp(rule, status) == 0;
        if (!ok)
            return fail(v, "player %lld: status %s recorded, %s by the rules",
                        (long long)id, status, rule);
    }

    uint64_t winner =
        json_is_integer(winner_v) ? (uint64_t)json_integer_value(winner_v) : 0;
    if (!json_is_integer(winner_v) && !json_is_null(winner_v))
        return fail(v, "winner is neither a player id nor null");
    if (winner && winner != pl[0].id)
        return fail(v, "the winner %llu is not first in the results",
                    (unsigned long long)winner);
    proto_end_reason why = PROTO_END_TARGET;
    bool known = proto_end_reason_parse(reason, &why);
    bool ranked_from_top = known && (why == PROTO_END_ALL_OVER || why == PROTO_END_TIME);
    for (size_t i = ranked_from_top ? 1 : 2; i < n; i++)
        if (rank_cmp(&pl[i - 1], &pl[i]) > 0)
            return fail(v, "the results are not in ranking order (at %zu)", i + 1);
    if (!check_ratings(rec, pl, n, winner, v)) return false;
    if (solo) {
        if (!known || why != PROTO_END_ALL_OVER || winner != pl[0].id)
            return fail(v, "a solo game ends all_over with its player as the winner");
        if (strcmp(pl[0].status, "over") && !pl[0].left)
            return fail(v, "a solo game ended while its player could still move");
        return true;
    }
    int done = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        done += pl[i].left || !strcmp(pl[i].status, "over");
        left += pl[i].left;
    }
    if (known && why == PROTO_END_TARGET) {
        if (!winner || !eng_has_won(&pl[0].game.board, (uint32_t)target))
            return fail(v, "reason target, but the winner has no %lld tile",
                        (long long)target);
    } else if (ranked_from_top) {
        if (why == PROTO_END_ALL_OVER && done != (int)n)
            return fail(v, "reason all_over, but a player could still move");
        if (why == PROTO_END_TIME && jint_or(rec, "time_limit", 0) == 0)
            return fail(v, "reason time in a game without a time limit");
        bool tie = n > 1 && rank_cmp(&pl[0], &pl[1]) == 0;
        uint64_t want = tie || pl[0].left ? 0 : pl[0].id;
        if (winner != want)
            return fail(v, "winner %llu recorded, %llu by the ranking",
                        (unsigned long long)winner, (unsigned long long)want);
    } else if (known && why == PROTO_END_FORFEIT) {
        if (left != (int)n - 1 || !winner || pl[0].left)
            return fail(v, "reason forfeit, but not every other player left");
    } else {
        return fail(v, "unknown reason \"%s\"", reason);
    }
    return true;
}

/* ---------------------------------------------------------------- show --- */

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* A frame for a pipe or a file: plain lines, without the clear-screen a
 * terminal needs and without its CRs (a viewer or grep would show them). */
static void put_plain(const char *data, size_t len) {
    static const char clear[] = "\x1b[H\x1b[2J";
    size_t k = sizeof clear - 1;
    if (len >= k && !memcmp(data, clear, k)) data += k, len -= k;
    for (size_t i = 0; i < len; i++)
        if (!(data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')) putchar(data[i]);
}

static int show_game(const json_t *rec, int delay_ms) {
    const json_t *results = json_object_get(rec, "results");
    const json_t *moves = json_object_get(rec, "moves");
    int size = (int)jint_or(rec, "size", 4);
    verdict v = {0};
    seed_info seed;
    if (!json_is_array(results) || !json_is_object(moves) ||
        !parse_seed(json_object_get(rec, "seed"), &seed, &v)) {
        fprintf(stderr, "race2048-replay: the record cannot be shown\n");
        return 1;
    }
    size_t n = json_array_size(results);
    if (n < 1 || n > PROTO_PLAYERS_MAX) return 1;
    const char *mv[PROTO_PLAYERS_MAX];
    size_t lens[PROTO_PLAYERS_MAX];
    char names[PROTO_PLAYERS_MAX][PROTO_NAME_MAX + 1];
    proto_player views[PROTO_PLAYERS_MAX];
    proto_status final[PROTO_PLAYERS_MAX];
    /* Room order is lost in the results; show them by id. */
    const json_t *order[PROTO_PLAYERS_MAX];
    for (size_t i = 0; i < n; i++)
        order[i] = json_array_get(results, i);
    for (size_t i = 1; i < n; i++)
        for (size_t k = i;
             k > 0 && jint_or(order[k - 1], "id", 0) > jint_or(order[k], "id", 0); k--) {
            const json_t *t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)jint_or(order[i], "id", 0));
        const json_t *letters = json_object_get(moves, key);
        mv[i] = json_is_string(letters) ? json_string_value(letters) : "";
        lens[i] = json_is_string(letters) ? json_string_length(letters) : 0;
        const char *name = json_string_value(json_object_get(order[i], "name"));
        snprintf(names[i], sizeof names[i], "%s", name ? name : "?");
        /* Each player's status at the end, as recorded (render.h). */
        final[i] = PROTO_PLAYING;
        proto_status_parse(json_string_value(json_object_get(order[i], "status")),
                           &final[i]);
    }
    /* Lengths are read once: a frame costs the same at move 10 as at 10000. */
    replay_frames f;
    if (replay_frames_init(&f, (int)n, mv, lens, size, &seed.seed) < 0) return 1;
    const char *room = json_string_value(json_object_get(rec, "room"));
    bool tty = isatty(STDOUT_FILENO);
    size_t longest = f.longest;
    for (size_t step = 0; step <= longest; step++) {
        if (step > 0) replay_frames_next(&f);
        for (size_t i = 0; i < n; i++) {
            /* Each player's status at this frame (render.h: left from its
             * last move on, won or over when it was, as recorded at the end). */
            size_t nmoves = lens[i];
            const eng_game *g = &f.games[i];
            views[i] = (proto_player){.id = (uint64_t)jint_or(order[i], "id", 0),
                                      .name = names[i],
                                      .board = &g->board,
                                      .score = g->score,
                                      .moves = g->moves,
                                      .status = proto_replay_status(
                                          &g->board, (uint64_t)jint_or(rec, "target", 0),
                                          step < nmoves ? step : nmoves, nmoves, final[i],
                                          step == longest)};
        }
        char status[96];
        snprintf(status, sizeof status, "Game %lld, move %zu of %zu",
                 (long long)jint_or(rec, "game", 0), step, longest);
        proto_buf b;
        proto_buf_init(&b);
        proto_view view = {.players = views,
                           .n = (int)n,
                           .room = room,
                           .target = (uint64_t)jint_or(rec, "target", 0),
                           .color = tty ? PROTO_COLOR_256 : PROTO_COLOR_OFF,
                           .status = status};
        proto_render_game(&b, &view);
        if (!tty && step > 0) putchar('\n'); /* frames apart on a pipe */
        if (b.data && tty)
            fwrite(b.data, 1, b.len, stdout);
        else if (b.data)
            put_plain(b.data, b.len);
        proto_buf_free(&b);
        fflush(stdout);
        if (tty && delay_ms) sleep_ms(delay_ms);
    }
    const char *eol = tty ? "\r\n" : "\n";
    printf("%sFinal result as recorded: reason %s, winner %s%s", eol,
           json_string_value(json_object_get(rec, "reason")),
           json_is_integer(json_object_get(rec, "winner")) ? "below" : "none", eol);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(results, i);
        printf("  %zu. %s (id %lld): score %lld, max tile %lld, %lld moves, %s%s", i + 1,
               json_string_value(json_object_get(p, "name")),
               (long long)jint_or(p, "id", 0), (long long)jint_or(p, "score", 0),
               (long long)jint_or(p, "max_tile", 0), (long long)jint_or(p, "moves", 0),
               json_string_value(json_object_get(p, "status")), eol);
    }
    return 0;
}

/* ---------------------------------------------------------------- main --- */

static bool id_matches(const json_t *id, const char *want) {
    char text[64];
    if (json_is_integer(id))
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(text, sizeof text, "%s", json_string_value(id));
    else
        return false;
    return strcmp(text, want) == 0;
}

/* Fills o from argv. Returns ARGS_RUN, ARGS_DONE after --help or --version, or
 * ARGS_BAD after printing what is wrong. */
static int parse_args(int argc, char **argv, options *o) {
    *o = (options){.delay_ms = 120};
    const args_flag flags[] = {
        {.name = "--game",
         .kind = ARGS_STRING,
         .to = &o->game,
         .arg = "ID",
         .help = "check only the game with this id"},
        {.name = "--show",
         .kind = ARGS_STRING,
         .to = &o->show,
         .arg = "ID",
         .help = "play that game on the terminal, move by move"},
        {.name = "--delay",
         .kind = ARGS_LONG,
         .to = &o->delay_ms,
         .lo = 0,
         .hi = 3600000,
         .want = "milliseconds from 0 to 3600000",
         .arg = "MS",
         .help = "pause between moves of --show (default 120; 0 on a pipe)"},
        {.name = "--analyse",
         .kind = ARGS_STRING,
         .to = &o->analyse,
         .arg = "ID",
         .help = "every move of that game beside the AI's choice, with the\n"
                 "share of the position's value each move gave up, and the\n"
                 "three biggest mistakes of each player"},
        {.name = "--help", .alias = "-h", .kind = ARGS_HELP, .help = "this help"},
        {.name = "--version", .kind = ARGS_VERSION, .help = "the version"},
    };
    const args_spec spec = {
        .prog = "race2048-replay",
        .version = RACE2048_VERSION,
        .usage = "usage: race2048-replay FILE [--game ID] [--show ID] [--delay MS] "
                 "[--analyse ID]\n",
        .about = "\n"
                 "Re-plays every finished game recorded in a race2048d journal (or a "
                 "results\n"
                 "archive) through the rules from its revealed seed, and checks each "
                 "result:\n"
                 "boards, scores, max tiles, moves, statuses, end reason, winner, "
                 "ranking,\n"
                 "and that the seed matches the commitment sent at the start.\n"
                 "Prints one line per game that fails and a summary; exits 0 only if "
                 "every\n"
                 "game checks out (1 if one does not, 2 if the file cannot be read).\n\n",
        .column = 12,
        .flags = flags,
        .nflags = ARGS_COUNT(flags),
        .positional = "FILE",
        .max_positional = 1,
    };
    args_rest rest;
    int rc = args_parse(&spec, argc - 1, argv + 1, &rest);
    if (rc != ARGS_RUN) return rc;
    if (!rest.npositional) return args_fail(&spec, "which journal? give its FILE");
    o->file = rest.positional[0];
    return ARGS_RUN;
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != ARGS_RUN) return rc == ARGS_DONE ? 0 : 2;
    FILE *f = fopen(o.file, "r");
    if (!f) {
        fprintf(stderr, "race2048-replay: cannot open %s: %s\n", o.file, strerror(errno));
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t lineno = 0, checked = 0, failed = 0, bad = 0;
    int shown = -1;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[len - 1] != '\n') {
            fprintf(stderr, "line %zu: a torn last record, skipped\n", lineno);
            break;
        }
        json_t *rec = json_loadb(line, (size_t)len - 1, JSON_REJECT_DUPLICATES, NULL);
        const char *kind = json_string_value(json_object_get(rec, "j"));
        if (!rec || !kind) {
            printf("line %zu: not a journal record\n", lineno);
            bad++;
            json_decref(rec);
            continue;
        }
        const json_t *id = json_object_get(rec, "game");
        if (strcmp(kind, "game") != 0) {
            json_decref(rec);
            continue;
        }
        if ((o.analyse || o.show) && replay_escape_json(rec) < 0) {
            fprintf(stderr, "race2048-replay: out of memory\n");
            json_decref(rec);
            break;
        }
        if (o.analyse) {
            if (id_matches(id, o.analyse)) shown = analyse_game(rec, stdout);
            json_decref(rec);
            if (shown >= 0) break;
            continue;
        }
        if (o.show) {
            if (id_matches(id, o.show)) shown = show_game(rec, (int)o.delay_ms);
            json_decref(rec);
            if (shown >= 0) break;
            continue;
        }
        if (o.game && !id_matches(id, o.game)) {
            json_decref(rec);
            continue;
        }
        checked++;
        verdict v = {0};
        if (!check_game(rec, &v)) {
            failed++;
            /* The id and the reason quote the file: escaped for the terminal. */
            char *idtext = json_dumps(id, JSON_ENCODE_ANY);
            char safe_id[128], safe_why[sizeof v.why * 4];
            replay_escape(idtext ? idtext : "?", safe_id, sizeof safe_id);
            replay_escape(v.why, safe_why, sizeof safe_why);
            printf("game %s (line %zu): %s\n", safe_id, lineno, safe_why);
            free(idtext);
        }
        json_decref(rec);
    }
    free(line);
    fclose(f);
    if (o.show || o.analyse) {
        if (shown < 0)
            fprintf(stderr, "race2048-replay: no game %s in %s\n",
                    o.analyse ? o.analyse : o.show, o.file);
        return shown == 0 ? 0 : 1;
    }
    printf("%zu %s checked, %zu failed%s", checked, checked == 1 ? "game" : "games",
           failed, bad ? ", " : "\n");
    if (bad) printf("%zu %s not records\n", bad, bad == 1 ? "line is" : "lines are");
    if (o.game && checked == 0) {
        fprintf(stderr, "race2048-replay: no game %s in %s\n", o.game, o.file);
        return 1;
    }
    return failed || bad ? 1 : 0;
}
