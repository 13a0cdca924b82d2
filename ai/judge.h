/* judge.h - the analysis's verdict on one move: what it gave up of the chance of winning
 * over a race's last moves, else of the AI's value; pure like ai.h.
 *
 * Shared by race2048-replay --analyse and the web page's WebAssembly, so that both say
 * the same. A move is judged in two tiers:
 *
 *  1. The chance of winning the race. A race's player who did not win by the
 *     target (and every player of a race the clock ended) had exactly the
 *     moves they made: the race ended right after their last, so reaching the
 *     target by then would have won it. Over their last AI_REACH_MOVES moves
 *     (goal.moves_left <= AI_REACH_MOVES), each move's chance is the
 *     probability, over the tiles the game spawns (each empty cell alike, 2
 *     with 0.9, 4 with 0.1), that the player, playing on as well as possible,
 *     has a tile of the target or more by their last move. A move that makes
 *     the target has chance 1. If the played move's chance is below the best
 *     move's by more than AI_JUDGE_EPS_POINTS, it is a mistake of kind
 *     AI_JUDGE_CHANCE: given_up is the difference in percentage points.
 *  2. The AI's value. Otherwise (earlier moves, the winner's, a solo game's,
 *     or every move's chance alike) the move is judged as before: the share of
 *     the best move's expected value (ai_search_board, default budget) the
 *     played one gave up, in percent; under AI_JUDGE_EPS_PERCENT is no
 *     mistake. Kind AI_JUDGE_VALUE.
 *
 * A move that makes the target (while it is not on the board) is never a
 * mistake, in a race or a solo game. Chance mistakes rank above value
 * mistakes (ai_judge_worse). */
#ifndef RACE2048_JUDGE_H
#define RACE2048_JUDGE_H

#include <stdbool.h>

#include "ai.h"
#include "engine.h"

/* The chance is searched when the player has at most this many moves left. */
#define AI_REACH_MOVES 3
/* Branches less likely than this are not searched for the chance: they count
 * as missing the target, so a chance can come out a little low (each such
 * branch is worth less than this). */
#define AI_REACH_MIN_PROB    1e-4
#define AI_JUDGE_EPS_POINTS  0.05
#define AI_JUDGE_EPS_PERCENT 0.05

/* What the game is played for, as the record says. */
typedef struct ai_goal {
    int target_exp; /* the target's exponent (64: 6); 0: none */
    /* The moves the player has from this position on, this one included (see
     * tier 1: the moves they made, less those already played); 0: no limit
     * (a solo game, a race's winner by the target). */
    long moves_left;
} ai_goal;

typedef enum ai_judge_kind {
    AI_JUDGE_NONE = 0,   /* no mistake */
    AI_JUDGE_CHANCE = 1, /* given_up: percentage points of the chance of the target */
    AI_JUDGE_VALUE = 2,  /* given_up: percent of the best move's value */
} ai_judge_kind;

typedef struct ai_judgement {
    int best;           /* the AI's move; the played one when no mistake; -1: no move */
    ai_judge_kind kind; /* what given_up measures */
    double given_up;    /* > 0 for a mistake, 0 otherwise */
    int horizon;        /* the moves the chance was searched over; 0: not asked */
    double chance[4];   /* each move's chance (0..1; -1: the move changes nothing) */
    float value[4];     /* each move's value by the AI (-1: the move changes nothing) */
    uint64_t nodes;     /* positions the chance and the AI's search looked at */
} ai_judgement;

/* Judges the move `played` (0..3) about to be made on board, as the comment at
 * the top says. cache is the AI's (cleared here). No I/O, no allocation. */
ai_judgement ai_judge(const ai_model *m, ai_cache *cache, const eng_board *board,
                      int played, ai_goal goal);

/* Whether verdict a (its kind and given_up) is a bigger mistake than b: any
 * mistake before none, a chance mistake before a value one, then the more
 * given up. Ties are for the caller (the earlier move first). */
bool ai_judge_worse(ai_judge_kind a_kind, double a_given_up, ai_judge_kind b_kind,
                    double b_given_up);

#endif
