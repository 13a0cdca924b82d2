/* analyse.c - race2048-replay --analyse: where did a player lose? The AI's verdict on
 * every move of a finished game. */
#include "analyse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ai.h"
#include "judge.h"
#include "engine.h"
#include "message.h"
#include "seed.h"

#define MISTAKES 3

static const char *const dir_names[4] = {"left", "right", "up", "down"};

/* One move's verdict: what was played, what the AI would play, and what the
 * played move gave up (ai/judge.h: points of the chance of the target, or
 * percent of the AI's value; 0 when they agree). */
typedef struct verdict {
    int played, best;
    ai_judge_kind kind;
    double given_up;
} verdict;

/* Re-plays one player's moves from the seed, judging each position. With
 * `deadline` (ai/judge.h: a race lost to someone's target, or ended by the
 * clock) the player had exactly the moves they made. */
static int analyse_player(const ai_model *m, ai_cache *cache, const char *moves, int size,
                          const eng_seed *seed, int target_exp, bool deadline,
                          verdict *out) {
    eng_game g;
    if (eng_game_new(&g, size, seed) < 0) return -1;
    size_t n = strlen(moves);
    for (size_t k = 0; k < n; k++) {
        eng_dir d;
        if (proto_dir_from_letter(moves[k], &d) < 0) return -1;
        ai_goal goal = {.target_exp = target_exp,
                        .moves_left = deadline ? (long)(n - k) : 0};
        ai_judgement j = ai_judge(m, cache, &g.board, (int)d, goal);
        out[k] = (verdict){.played = (int)d,
                           .best = j.kind ? j.best : (int)d,
                           .kind = j.kind,
                           .given_up = j.given_up};
        if (!eng_game_move(&g, d, &m->moves).moved) return -1;
    }
    return 0;
}

/* "12.5 pts" or "1.5 %": what a mistake gave up, in its unit. */
static const char *unit(const verdict *v) {
    return v->kind == AI_JUDGE_CHANCE ? "pts" : "%";
}

static void report(FILE *out, const char *who, const verdict *v, size_t n, long target,
                   bool deadline) {
    size_t worst[MISTAKES];
    int nworst = 0;
    size_t differ = 0;
    for (size_t k = 0; k < n; k++) {
        if (v[k].kind == AI_JUDGE_NONE) continue;
        differ++;
        /* Keep the MISTAKES largest, largest first (of equal ones the earlier). */
        int at = nworst;
        while (at > 0 && ai_judge_worse(v[k].kind, v[k].given_up, v[worst[at - 1]].kind,
                                        v[worst[at - 1]].given_up))
            at--;
        if (at >= MISTAKES) continue;
        if (nworst < MISTAKES) nworst++;
        memmove(&worst[at + 1], &worst[at], (size_t)(nworst - 1 - at) * sizeof worst[0]);
        worst[at] = k;
    }
    fprintf(out, "%s: %zu moves, the AI would have played another %zu times\n", who, n,
            differ);
    if (target > 0 && deadline)
        fprintf(
            out,
            "   (given up: pts = percentage points of the chance of reaching %ld by "
            "the last move, searched over the last %d; %% = share of the AI's value)\n",
            target, AI_REACH_MOVES);
    fprintf(out, "   move  played  AI      given up\n");
    for (size_t k = 0; k < n; k++) {
        int mark = 0;
        for (int i = 0; i < nworst; i++)
            if (worst[i] == k) mark = i + 1;
        fprintf(out, "  %5zu  %-6s  %-6s", k + 1, dir_names[v[k].played],
                v[k].best >= 0 ? dir_names[v[k].best] : "-");
        if (v[k].kind != AI_JUDGE_NONE)
            fprintf(out, "  %5.1f %-3s", v[k].given_up, unit(&v[k]));
        if (mark) fprintf(out, "  <- mistake %d", mark);
        fputc('\n', out);
    }
    fprintf(out, "%s: biggest mistakes:", who);
    for (int i = 0; i < nworst; i++) {
        const verdict *w = &v[worst[i]];
        fprintf(out, "%s move %zu (%s, not %s: %.1f %s", i ? "," : "", worst[i] + 1,
                dir_names[w->played], dir_names[w->best], w->given_up, unit(w));
        if (w->kind == AI_JUDGE_CHANCE)
            fprintf(out, " of the chance of reaching %ld", target);
        fputc(')', out);
    }
    fprintf(out, "%s\n", nworst ? "" : " none");
}

int analyse_game(const json_t *rec, FILE *out) {
    eng_seed seed;
    const json_t *moves = json_object_get(rec, "moves");
    const json_t *results = json_object_get(rec, "results");
    json_int_t size = json_integer_value(json_object_get(rec, "size"));
    json_int_t target = json_integer_value(json_object_get(rec, "target"));
    /* The target's exponent (0: none, or not a power of two). */
    int target_exp = 0;
    while (target_exp < 30 && ((json_int_t)1 << target_exp) < target)
        target_exp++;
    if (target < 8 || ((json_int_t)1 << target_exp) != target) target_exp = 0;
    bool race = json_is_string(json_object_get(rec, "room"));
    const char *reason = json_string_value(json_object_get(rec, "reason"));
    json_int_t winner = json_integer_value(json_object_get(rec, "winner"));
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
        /* Who had exactly the moves they made (ai/judge.h, tier 1). */
        json_int_t pid = json_integer_value(json_object_get(player, "id"));
        bool deadline =
            race && reason &&
            ((!strcmp(reason, "target") && pid != winner) || !strcmp(reason, "time"));
        verdict *v = malloc((n ? n : 1) * sizeof *v);
        if (!mv || !v ||
            analyse_player(m, &cache, mv, (int)size, &seed, target_exp, deadline, v) <
                0) {
            fprintf(stderr, "race2048-replay: player %s's moves do not re-play\n", id);
            rc = 1;
        } else {
            char who[64];
            snprintf(who, sizeof who, "player %s (%s)", id, name ? name : "?");
            report(out, who, v, n, target_exp ? (long)target : 0, deadline);
        }
        free(v);
    }
    free(cache.entries);
    free(m);
    return rc;
}
