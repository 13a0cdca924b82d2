/* analyse.c - race2048-replay --analyse: where did a player lose? The AI's verdict on
 * every move of a finished game. */
#include "analyse.h"

#include <stdlib.h>
#include <string.h>

#include "ai.h"
#include "engine.h"
#include "message.h"
#include "seed.h"

#define MISTAKES 3

static const char *const dir_names[4] = {"left", "right", "up", "down"};

/* One move's verdict: what was played, what the AI would play, and the
 * share of the best move's value the played one gave up (0 when they agree). */
typedef struct verdict {
    int played, best;
    double given_up; /* percent */
} verdict;

/* Re-plays one player's moves from the seed, judging each position. */
static int analyse_player(const ai_model *m, ai_cache *cache, const char *moves, int size,
                          const eng_seed *seed, verdict *out) {
    eng_game g;
    if (eng_game_new(&g, size, seed) < 0) return -1;
    for (size_t k = 0; moves[k]; k++) {
        eng_dir d;
        if (proto_dir_from_letter(moves[k], &d) < 0) return -1;
        ai_cache_clear(cache);
        ai_result r = ai_search_board(m, cache, &g.board, ai_budget_default());
        double best = r.best >= 0 ? r.value[r.best] : 0, mine = r.value[d];
        out[k] = (verdict){.played = (int)d,
                           .best = r.best,
                           .given_up = best > 0 && mine >= 0 && mine < best
                                           ? 100.0 * (best - mine) / best
                                           : 0};
        /* A tie (or as good as one) is no mistake, whichever move it names. */
        if (out[k].given_up < 0.05) out[k].best = (int)d, out[k].given_up = 0;
        if (!eng_game_move(&g, d, &m->moves).moved) return -1;
    }
    return 0;
}

static void report(FILE *out, const char *who, const verdict *v, size_t n) {
    size_t worst[MISTAKES];
    int nworst = 0;
    size_t differ = 0;
    for (size_t k = 0; k < n; k++) {
        if (v[k].played == v[k].best || v[k].given_up <= 0) continue;
        differ++;
        /* Keep the MISTAKES largest, largest first. */
        int at = nworst;
        while (at > 0 && v[worst[at - 1]].given_up < v[k].given_up)
            at--;
        if (at >= MISTAKES) continue;
        if (nworst < MISTAKES) nworst++;
        memmove(&worst[at + 1], &worst[at], (size_t)(nworst - 1 - at) * sizeof worst[0]);
        worst[at] = k;
    }
    fprintf(out, "%s: %zu moves, the AI would have played another %zu times\n", who, n,
            differ);
    fprintf(out, "   move  played  AI      value given up\n");
    for (size_t k = 0; k < n; k++) {
        int mark = 0;
        for (int i = 0; i < nworst; i++)
            if (worst[i] == k) mark = i + 1;
        fprintf(out, "  %5zu  %-6s  %-6s", k + 1, dir_names[v[k].played],
                v[k].best >= 0 ? dir_names[v[k].best] : "-");
        if (v[k].played != v[k].best && v[k].given_up > 0)
            fprintf(out, "  %5.1f %%", v[k].given_up);
        if (mark) fprintf(out, "  <- mistake %d", mark);
        fputc('\n', out);
    }
    fprintf(out, "%s: biggest mistakes:", who);
    for (int i = 0; i < nworst; i++)
        fprintf(out, "%s move %zu (%s, not %s: %.1f %%)", i ? "," : "", worst[i] + 1,
                dir_names[v[worst[i]].played], dir_names[v[worst[i]].best],
                v[worst[i]].given_up);
    fprintf(out, "%s\n", nworst ? "" : " none");
}

int analyse_game(const json_t *rec, FILE *out) {
    eng_seed seed;
    const json_t *moves = json_object_get(rec, "moves");
    const json_t *results = json_object_get(rec, "results");
    json_int_t size = json_integer_value(json_object_get(rec, "size"));
    if (proto_seed_from_json(json_object_get(rec, "seed"), &seed) < 0 ||
        !json_is_object(moves) || !json_is_array(results)) {
        fprintf(stderr, "race2048-replay: the record has no seed, moves or results\n");
        return 1;
    }
    ai_model *m = malloc(sizeof *m);
    ai_cache cache = {.size = 1u << 16};
    cache.entries = calloc(cache.size, sizeof *cache.entries);
    int rc = m && cache.entries ? 0 : 1;
    if (m) ai_model_init(m);
    size_t i;
    const json_t *player;
    json_array_foreach(results, i, player) {
        if (rc) break;
        char id[32];
        snprintf(id, sizeof id, "%lld",
                 (long long)json_integer_value(json_object_get(player, "id")));
        const char *name = json_string_value(json_object_get(player, "name"));
        const char *mv = json_string_value(json_object_get(moves, id));
        size_t n = mv ? strlen(mv) : 0;
        verdict *v = malloc((n ? n : 1) * sizeof *v);
        if (!mv || !v || analyse_player(m, &cache, mv, (int)size, &seed, v) < 0) {
            fprintf(stderr, "race2048-replay: player %s's moves do not re-play\n", id);
            rc = 1;
        } else {
            char who[64];
            snprintf(who, sizeof who, "player %s (%s)", id, name ? name : "?");
            report(out, who, v, n);
        }
        free(v);
    }
    free(cache.entries);
    free(m);
    return rc;
}
