/* judge.c - the analysis's verdict on one move: what it gave up of the chance of winning
 * over a race's last moves, else of the AI's value. */
#include "judge.h"

/* ------------------------------------------------------------ the chance ---
 *
 * An expectimax like the AI's, on outcomes instead of an evaluation: a board
 * holding the target is worth 1, a board the look-ahead ends on without it 0,
 * and the mover takes the move of the best chance. No cache: the look-ahead is
 * a few moves, and the bound below keeps out every position from which the
 * target cannot be made in time (nearly all of a game). */

typedef struct reach {
    const ai_model *m;
    int target;            /* exponent */
    uint64_t target_value; /* 2^target */
    uint64_t nodes;
} reach;

/* Whether a board with these tiles could make the target within `moves` moves
 * with `spawns` tiles spawned before the last. A tile of value T made by
 * merges is a tree of equal halves, one level a move at most, so its leaves,
 * old tiles or spawned ones, are worth T >> moves or more and sum to T. */
static bool could_make(const reach *r, const uint8_t *cell, int n, int moves,
                       int spawns) {
    if (moves <= 0) return false;
    uint64_t part = moves < 63 ? r->target_value >> moves : 0, sum = 0;
    for (int i = 0; i < n; i++)
        if (cell[i] && eng_exp_value(cell[i]) >= part) sum += eng_exp_value(cell[i]);
    if (4 >= part) sum += 4 * (uint64_t)spawns;
    return sum >= r->target_value;
}

/* The 4x4 bitboard path (every exponent it meets stays within a nibble). */

static int bits_max(eng_bits b) {
    int best = 0;
    for (int i = 0; i < 16; i++, b >>= 4)
        if ((int)(b & 0xF) > best) best = (int)(b & 0xF);
    return best;
}

static bool bits_could_make(const reach *r, eng_bits b, int moves, int spawns) {
    uint8_t cell[16];
    for (int i = 0; i < 16; i++, b >>= 4)
        cell[i] = (uint8_t)(b & 0xF);
    return could_make(r, cell, 16, moves, spawns);
}

static double bits_best(reach *r, eng_bits b, int left, double prob);

/* A board just moved (its tile not yet spawned), with `left` moves to go. */
static double bits_after(reach *r, eng_bits b, int left, double prob) {
    if (bits_max(b) >= r->target) return 1;
    if (left <= 0 || prob < AI_REACH_MIN_PROB || !bits_could_make(r, b, left, left))
        return 0;
    r->nodes++;
    int empty = 0;
    for (int i = 0; i < 16; i++)
        empty += ((b >> (4 * i)) & 0xF) == 0;
    if (!empty) return 0; /* cannot happen after a move */
    double each = prob / empty, sum = 0;
    for (int i = 0; i < 16; i++) {
        if ((b >> (4 * i)) & 0xF) continue;
        sum += 0.9 * bits_best(r, b | (eng_bits)1 << (4 * i), left, each * 0.9);
        sum += 0.1 * bits_best(r, b | (eng_bits)2 << (4 * i), left, each * 0.1);
    }
    return sum / empty;
}

/* The mover's best chance with `left` moves to go (0: no move). */
static double bits_best(reach *r, eng_bits b, int left, double prob) {
    double best = 0;
    if (!bits_could_make(r, b, left, left - 1)) return 0; /* (spares the moves) */
    for (int d = 0; d < 4 && best < 1; d++) {
        eng_bits next = eng_bits_move(b, (eng_dir)d, &r->m->moves);
        if (next == b) continue;
        double v = bits_after(r, next, left - 1, prob);
        if (v > best) best = v;
    }
    return best;
}

/* Any size: the same on eng_board. */

static int board_max(const eng_board *b) {
    int best = 0;
    for (int i = 0; i < b->size * b->size; i++)
        if (b->cell[i] > best) best = b->cell[i];
    return best;
}

static double board_best(reach *r, const eng_board *b, int left, double prob);

static double board_after(reach *r, const eng_board *b, int left, double prob) {
    int n = b->size * b->size;
    if (board_max(b) >= r->target) return 1;
    if (left <= 0 || prob < AI_REACH_MIN_PROB || !could_make(r, b->cell, n, left, left))
        return 0;
    r->nodes++;
    int empty = 0;
    for (int i = 0; i < n; i++)
        empty += !b->cell[i];
    if (!empty) return 0;
    double each = prob / empty, sum = 0;
    eng_board spawned = *b;
    for (int i = 0; i < n; i++) {
        if (b->cell[i]) continue;
        spawned.cell[i] = 1;
        sum += 0.9 * board_best(r, &spawned, left, each * 0.9);
        spawned.cell[i] = 2;
        sum += 0.1 * board_best(r, &spawned, left, each * 0.1);
        spawned.cell[i] = 0;
    }
    return sum / empty;
}

static double board_best(reach *r, const eng_board *b, int left, double prob) {
    double best = 0;
    if (!could_make(r, b->cell, b->size * b->size, left, left - 1)) return 0;
    for (int d = 0; d < 4 && best < 1; d++) {
        eng_board next = *b;
        if (!eng_move(&next, (eng_dir)d, &r->m->moves, NULL)) continue;
        double v = board_after(r, &next, left - 1, prob);
        if (v > best) best = v;
    }
    return best;
}

/* Each move's chance of the target within `moves` moves (-1: the move changes
 * nothing). */
static void chances(reach *r, const eng_board *board, int moves, double out[4]) {
    eng_bits bits;
    bool fast = eng_bits_pack(board, &bits) && bits_max(bits) + moves <= 15;
    bool any = could_make(r, board->cell, board->size * board->size, moves, moves - 1);
    for (int d = 0; d < 4; d++) {
        out[d] = -1;
        if (fast) {
            eng_bits next = eng_bits_move(bits, (eng_dir)d, &r->m->moves);
            if (next != bits) out[d] = any ? bits_after(r, next, moves - 1, 1.0) : 0;
        } else {
            eng_board next = *board;
            if (eng_move(&next, (eng_dir)d, &r->m->moves, NULL))
                out[d] = any ? board_after(r, &next, moves - 1, 1.0) : 0;
        }
    }
}

/* ----------------------------------------------------------- the verdict --- */

ai_judgement ai_judge(const ai_model *m, ai_cache *cache, const eng_board *board,
                      int played, ai_goal goal) {
    ai_judgement j = {.best = -1};
    /* No assert.h in the WebAssembly build: a direction out of range is judged
     * as a move that changes nothing (no verdict). */
    if (played < 0 || played > 3) return j;
    ai_cache_clear(cache);
    ai_result r = ai_search_board(m, cache, board, ai_budget_default());
    j.nodes = r.nodes;
    for (int d = 0; d < 4; d++) {
        j.value[d] = r.value[d];
        j.chance[d] = -1;
    }
    if (r.best < 0) return j; /* no move changes the board */
    bool legal = r.value[played] >= 0;

    /* 1. The chance of winning the race, while the target is not on the board. */
    if (legal && goal.target_exp > 0 && goal.target_exp <= ENG_EXP_MAX &&
        board_max(board) < goal.target_exp) {
        eng_board after = *board;
        eng_move(&after, (eng_dir)played, &m->moves, NULL);
        if (board_max(&after) >= goal.target_exp) { /* made it: never a mistake */
            j.best = played;
            return j;
        }
        if (goal.moves_left > 0 && goal.moves_left <= AI_REACH_MOVES) {
            reach rc = {.m = m,
                        .target = goal.target_exp,
                        .target_value = eng_exp_value((uint8_t)goal.target_exp)};
            j.horizon = (int)goal.moves_left;
            chances(&rc, board, j.horizon, j.chance);
            j.nodes += rc.nodes;
            double top = j.chance[played];
            for (int d = 0; d < 4; d++)
                if (j.chance[d] > top) top = j.chance[d];
            double lost = 100.0 * (top - j.chance[played]);
            if (lost > AI_JUDGE_EPS_POINTS) {
                /* The AI's move: of those with the best chance, the one it values most.
                 */
                for (int d = 0; d < 4; d++)
                    if (100.0 * (top - j.chance[d]) <= AI_JUDGE_EPS_POINTS &&
                        (j.best < 0 || j.value[d] > j.value[j.best]))
                        j.best = d;
                j.kind = AI_JUDGE_CHANCE;
                j.given_up = lost;
                return j;
            }
        }
    }

    /* 2. The AI's value. */
    double best = r.value[r.best], mine = r.value[played];
    double given_up =
        best > 0 && mine >= 0 && mine < best ? 100.0 * (best - mine) / best : 0;
    /* A tie (or as good as one) is no mistake, whichever move it names. */
    if (given_up < AI_JUDGE_EPS_PERCENT) {
        j.best = played;
        return j;
    }
    j.best = r.best;
    j.kind = AI_JUDGE_VALUE;
    j.given_up = given_up;
    return j;
}

bool ai_judge_worse(ai_judge_kind a_kind, double a_given_up, ai_judge_kind b_kind,
                    double b_given_up) {
    if (a_kind != b_kind) {
        if (a_kind == AI_JUDGE_NONE || b_kind == AI_JUDGE_NONE)
            return b_kind == AI_JUDGE_NONE;
        return a_kind == AI_JUDGE_CHANCE;
    }
    return a_given_up > b_given_up;
}
