/* ai.c - the 2048 player: a board evaluation and expectimax over spawns, pure like the
 * engine. */
#include "ai.h"

#include <string.h>

/* ------------------------------------------------------------ evaluation ---
 *
 * A position is worth the sum of its eight lines (four rows, four columns),
 * each scored on its own, so a line's value is one table lookup. What makes a
 * line good, in the order players learn it: empty cells (room to move),
 * neighbours that can merge, tiles that rise steadily towards one end (a
 * line that goes up and down again traps a small tile between big ones), and
 * small totals (big tiles not yet merged are a liability). The weights were
 * set by hand and checked with `race2048-bench ai`. */

#define LINE_BASE 200000.0 /* a line that is merely there: keeps values positive */
#define W_EMPTY   300.0
#define W_MERGE   600.0
#define W_MONO    40.0
#define W_SUM     10.0

/* A square root by Newton's method (libm-free; only the tables use it). */
static double root(double x) {
    if (x <= 0) return 0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 60; i++)
        r = 0.5 * (r + x / r);
    return r;
}

/* The value of one line of n exponents, in order along the line. */
static double line_score(const ai_model *m, const uint8_t *e, int n) {
    int empty = 0, merges = 0;
    int prev = 0, run = 0;
    double sum = 0, up = 0, down = 0;
    for (int i = 0; i < n; i++) {
        sum += m->pow_sum[e[i]];
        if (!e[i]) {
            empty++;
            continue;
        }
        if (e[i] == prev) {
            run++;
        } else {
            if (run) merges += run;
            run = 0;
            prev = e[i];
        }
    }
    if (run) merges += run;
    for (int i = 0; i + 1 < n; i++) {
        double a = m->pow_mono[e[i]], b = m->pow_mono[e[i + 1]];
        if (a > b)
            down += a - b;
        else
            up += b - a;
    }
    return LINE_BASE + W_EMPTY * empty + W_MERGE * merges -
           W_MONO * (up < down ? up : down) - W_SUM * sum;
}

void ai_model_init(ai_model *m) {
    eng_tables_init(&m->moves);
    /* Monotonicity weighs e^4, the sum e^3.5 (e^3 * sqrt(e)). */
    for (int e = 0; e <= ENG_EXP_MAX; e++) {
        double x = e;
        m->pow_mono[e] = x * x * x * x;
        m->pow_sum[e] = x * x * x * root(x);
    }
    for (unsigned line = 0; line < 65536; line++) {
        uint8_t e[4];
        for (int i = 0; i < 4; i++)
            e[i] = (uint8_t)((line >> (4 * i)) & 0xF);
        m->line_value[line] = (float)line_score(m, e, 4);
    }
}

static float rows_value(const ai_model *m, eng_bits b) {
    return m->line_value[b & 0xFFFF] + m->line_value[(b >> 16) & 0xFFFF] +
           m->line_value[(b >> 32) & 0xFFFF] + m->line_value[(b >> 48) & 0xFFFF];
}

float ai_evaluate(const ai_model *m, eng_bits board) {
    return rows_value(m, board) + rows_value(m, eng_bits_transpose(board));
}

/* ---------------------------------------------------------------- search --- */

typedef struct search {
    const ai_model *m;
    ai_cache *cache;
    double min_prob;
    uint64_t nodes;
} search;

void ai_cache_clear(ai_cache *c) {
    if (!c || !c->entries) return;
    /* Generations are 28 bits; when they wrap, the old tags must go. */
    if (++c->generation >= 1u << 28) {
        memset(c->entries, 0, c->size * sizeof *c->entries);
        c->generation = 1;
    }
}

static uint32_t tag_of(const search *s, int depth) {
    return (s->cache->generation + 1) << 4 | (uint32_t)depth;
}

ai_budget ai_budget_default(void) {
    return (ai_budget){.max_depth = 0, .min_prob = 1e-4, .max_nodes = 20000};
}

static int empty_cells(eng_bits b) {
    int n = 0;
    for (int i = 0; i < 16; i++, b >>= 4)
        n += (b & 0xF) == 0;
    return n;
}

static ai_cache_entry *slot(const search *s, eng_bits b) {
    if (!s->cache || !s->cache->size) return NULL;
    uint64_t h = b * 0x9E3779B97F4A7C15ull;
    return &s->cache->entries[(h >> 20) & (s->cache->size - 1)];
}

static float chance_node(search *s, eng_bits b, int depth, double prob);

/* The mover's best: 0 when no move changes the board (the game is lost). */
static float max_node(search *s, eng_bits b, int depth, double prob) {
    float best = 0;
    for (int d = 0; d < 4; d++) {
        eng_bits next = eng_bits_move(b, (eng_dir)d, &s->m->moves);
        if (next == b) continue;
        float v = chance_node(s, next, depth, prob);
        if (v > best) best = v;
    }
    return best;
}

/* The average over every spawn: each empty cell alike, 2 with 0.9, 4 with 0.1. */
static float chance_node(search *s, eng_bits b, int depth, double prob) {
    if (depth <= 0 || prob < s->min_prob) {
        s->nodes++;
        return ai_evaluate(s->m, b);
    }
    ai_cache_entry *e = slot(s, b);
    if (e && e->board == b && e->tag >> 4 == tag_of(s, 0) >> 4 &&
        (int)(e->tag & 0xF) >= depth)
        return e->value;
    int empty = empty_cells(b);
    if (!empty) return max_node(s, b, depth - 1, prob); /* cannot happen after a move */
    s->nodes++;
    double each = prob / empty, sum = 0;
    for (int i = 0; i < 16; i++) {
        if ((b >> (4 * i)) & 0xF) continue;
        sum += 0.9 * max_node(s, b | (eng_bits)1 << (4 * i), depth - 1, each * 0.9);
        sum += 0.1 * max_node(s, b | (eng_bits)2 << (4 * i), depth - 1, each * 0.1);
    }
    float v = (float)(sum / empty);
    if (e) *e = (ai_cache_entry){.board = b, .value = v, .tag = tag_of(s, depth)};
    return v;
}

/* One fixed-depth search from the root. */
static ai_result search_depth(const ai_model *m, ai_cache *cache, eng_bits board,
                              int depth, double min_prob) {
    search s = {.m = m, .cache = cache, .min_prob = min_prob};
    ai_result r = {.best = -1, .depth = depth < 15 ? depth : 15}; /* tags keep 4 bits */
    float best = -1;
    for (int d = 0; d < 4; d++) {
        r.value[d] = -1;
        eng_bits next = eng_bits_move(board, (eng_dir)d, &m->moves);
        if (next == board) continue;
        r.value[d] = chance_node(&s, next, r.depth, 1.0);
        if (r.value[d] > best) best = r.value[d], r.best = d;
    }
    r.nodes = s.nodes;
    return r;
}

/* Iterative deepening: a cost is whatever cost() measures (positions, or
 * time), the next depth predicted at least 4 times the last (one more layer
 * of spawns), or as many times as the last grew over the one before. */
typedef double (*cost_fn)(const ai_result *r, void *ctx);

static ai_result deepen(const ai_model *m, ai_cache *cache, eng_bits board,
                        double min_prob, double budget, cost_fn cost, void *ctx) {
    double prev = 0, last = 0, spent = 0;
    ai_result best = {.best = -1};
    uint64_t nodes = 0;
    for (int depth = 1; depth <= 12; depth++) {
        double growth = prev > 0 && last / prev > 4 ? last / prev : 4;
        if (depth > 1 && spent + last * growth > budget) break;
        ai_result r = search_depth(m, cache, board, depth, min_prob);
        prev = last;
        last = cost(&r, ctx);
        spent += last;
        nodes += r.nodes;
        best = r;
        if (r.best < 0) break; /* no move: nothing deeper to find */
    }
    best.nodes = nodes;
    return best;
}

static double node_cost(const ai_result *r, void *ctx) {
    (void)ctx;
    return (double)r->nodes;
}

ai_result ai_search(const ai_model *m, ai_cache *cache, eng_bits board,
                    ai_budget budget) {
    if (budget.max_depth > 0)
        return search_depth(m, cache, board, budget.max_depth, budget.min_prob);
    return deepen(m, cache, board, budget.min_prob, (double)budget.max_nodes, node_cost,
                  NULL);
}

/* The clock for a timed search: the caller's, and when the last depth began. */
typedef struct timed {
    double (*now_ms)(void *ctx);
    void *ctx;
    double started;
} timed;

static double time_cost(const ai_result *r, void *ctx) {
    (void)r;
    timed *t = ctx;
    double now = t->now_ms(t->ctx), took = now - t->started;
    t->started = now;
    return took;
}

ai_result ai_search_timed(const ai_model *m, ai_cache *cache, eng_bits board,
                          double min_prob, double ms, double (*now_ms)(void *ctx),
                          void *ctx) {
    timed t = {.now_ms = now_ms, .ctx = ctx, .started = now_ms(ctx)};
    return deepen(m, cache, board, min_prob, ms, time_cost, &t);
}

/* ------------------------------------------------------- any board size --- */

static double board_score(const ai_model *m, const eng_board *b) {
    int n = b->size;
    double v = 0;
    uint8_t col[ENG_SIZE_MAX];
    for (int i = 0; i < n; i++) {
        v += line_score(m, &b->cell[i * n], n);
        for (int k = 0; k < n; k++)
            col[k] = b->cell[k * n + i];
        v += line_score(m, col, n);
    }
    return v;
}

/* The mover's best evaluation one move ahead (0: no move, lost). */
static double best_reply(const ai_model *m, const eng_board *b, uint64_t *nodes) {
    double best = 0;
    for (int d = 0; d < 4; d++) {
        eng_board next = *b;
        if (!eng_move(&next, (eng_dir)d, &m->moves, NULL)) continue;
        (*nodes)++;
        double v = board_score(m, &next);
        if (v > best) best = v;
    }
    return best;
}

ai_result ai_search_board(const ai_model *m, ai_cache *cache, const eng_board *board,
                          ai_budget budget) {
    eng_bits bits;
    if (eng_bits_pack(board, &bits)) return ai_search(m, cache, bits, budget);
    /* Other sizes: my move, every spawn, my best reply (depth 1). */
    ai_result r = {.best = -1, .depth = 1};
    double best = -1;
    int n = board->size * board->size;
    eng_board after[4];
    int empty[4], legal = 0, most_empty = 0;
    for (int d = 0; d < 4; d++) {
        after[d] = *board;
        empty[d] = -1;
        if (!eng_move(&after[d], (eng_dir)d, &m->moves, NULL)) continue;
        legal++;
        empty[d] = 0;
        for (int i = 0; i < n; i++)
            empty[d] += !after[d].cell[i];
        if (empty[d] > most_empty) most_empty = empty[d];
    }
    /* The cost: each spawn is answered by up to 4 replies, each scored on 2
     * lines a row of `size` cells. Past the budget the 4s go (a tenth of the
     * weight), then the cells are sampled: at most `cells` a move. */
    uint64_t per_spawn = 4ull * 2 * (uint64_t)n;
    bool fours = true;
    int cells = most_empty;
    if (budget.max_cells && legal &&
        (uint64_t)legal * (uint64_t)most_empty * 2 * per_spawn > budget.max_cells) {
        fours = false;
        uint64_t fit = budget.max_cells / ((uint64_t)legal * per_spawn);
        cells = fit < 1 ? 1 : fit < (uint64_t)most_empty ? (int)fit : most_empty;
    }
    for (int d = 0; d < 4; d++) {
        r.value[d] = -1;
        if (empty[d] < 0) continue;
        double sum = 0;
        int tried = 0, seen = 0, take = empty[d] < cells ? empty[d] : cells;
        /* The j-th of `take` cells spaced evenly over the empty ones. */
        for (int i = 0; i < n && tried < take; i++) {
            if (after[d].cell[i]) continue;
            int at = seen++;
            if ((int)(((int64_t)tried * 2 + 1) * empty[d] / (2 * take)) != at) continue;
            tried++;
            eng_board spawned = after[d];
            spawned.cell[i] = 1;
            double two = best_reply(m, &spawned, &r.nodes);
            if (fours) {
                spawned.cell[i] = 2;
                sum += 0.9 * two; /* in this order: the unbudgeted sum as it was */
                sum += 0.1 * best_reply(m, &spawned, &r.nodes);
            } else {
                sum += two;
            }
        }
        double v = tried ? sum / tried : board_score(m, &after[d]);
        r.value[d] = (float)v;
        if (v > best) best = v, r.best = d;
    }
    return r;
}
