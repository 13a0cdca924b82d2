/* daily.c - the daily challenge's boards: who played, and the results in order. */
#include "daily.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int daily_cmp(const void *pa, const void *pb) {
    const daily_entry *a = pa, *b = pb;
    const daily_result *x = &a->result, *y = &b->result;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->max_tile != y->max_tile) return x->max_tile > y->max_tile ? -1 : 1;
    if (x->moves != y->moves) return x->moves < y->moves ? -1 : 1;
    if (x->end_ms != y->end_ms) return x->end_ms < y->end_ms ? -1 : 1;
    if (x->game != y->game) return x->game < y->game ? -1 : 1;
    /* One entry per account and board: only a == b is left. */
    return a == b ? 0 : strcmp(a->account->name, b->account->name);
}

/* Score desc, then max tile desc, as one number that sorts ascending; ties go to
 * daily_cmp. */
static uint64_t result_key(const void *p) {
    const daily_entry *e = p;
    return (uint64_t)(uint32_t)~e->result.score << 32 | (uint32_t)~e->result.max_tile;
}

/* Day and size in one key; sizes fit in 8 bits. */
static uint64_t board_key(int32_t day, int size) {
    return (uint64_t)(uint32_t)day << 8 | (uint64_t)(size & 0xff);
}

static bool size_valid(int size) {
    return size >= ACCT_SIZE_MIN && size <= ACCT_SIZE_MAX;
}

static daily_board *board_find(const daily_boards *d, int32_t day, int size) {
    uint64_t key = board_key(day, size);
    daily_board *b = NULL;
    HASH_FIND(hh, d->boards, &key, sizeof key, b);
    return b;
}

static daily_entry *entry_find(const daily_board *b, const acct_account *a) {
    daily_entry *e = NULL;
    if (b) HASH_FIND_PTR(b->entries, &a, e);
    return e;
}

void daily_init(daily_boards *d, uint64_t seed) {
    d->boards = NULL;
    d->seed = seed;
}

static void board_free(daily_boards *d, daily_board *b) {
    daily_entry *e, *tmp;
    HASH_ITER(hh, b->entries, e, tmp) {
        HASH_DEL(b->entries, e);
        if (!e->finished) rank_node_free(e->node); /* else freed with the index */
        free(e);
    }
    rank_free(&b->ranked);
    HASH_DEL(d->boards, b);
    free(b);
}

void daily_free(daily_boards *d) {
    daily_board *b, *tmp;
    HASH_ITER(hh, d->boards, b, tmp) board_free(d, b);
}

bool daily_played(const daily_boards *d, int32_t day, int size, const acct_account *a) {
    return entry_find(board_find(d, day, size), a) != NULL;
}

int daily_begin(daily_boards *d, int32_t day, int size, const acct_account *a) {
    if (!size_valid(size)) return DAILY_BAD_SIZE;
    daily_board *b = board_find(d, day, size);
    if (entry_find(b, a)) return DAILY_PLAYED;
    int hash_oom = 0;
    bool new_board = !b;
    if (new_board) {
        if (!(b = calloc(1, sizeof *b))) return DAILY_NO_MEMORY;
        b->key = board_key(day, size);
        b->day = day;
        b->size = size;
        /* Each board's levels from its own stream, so boards do not share draws. */
        if (!rank_init(&b->ranked, daily_cmp, result_key,
                       d->seed ^ (b->key * 0x9e3779b97f4a7c15u))) {
            free(b);
            return DAILY_NO_MEMORY;
        }
        HASH_ADD(hh, d->boards, key, sizeof b->key, b);
        if (hash_oom) {
            rank_free(&b->ranked);
            free(b);
            return DAILY_NO_MEMORY;
        }
    }
    daily_entry *e = calloc(1, sizeof *e);
    if (e) e->node = rank_node_new(&b->ranked, e);
    if (e && e->node) {
        e->account = a;
        HASH_ADD_PTR(b->entries, account, e);
        if (!hash_oom) return DAILY_OK;
        rank_node_free(e->node);
    }
    free(e);
    if (new_board) board_free(d, b);
    return DAILY_NO_MEMORY;
}

int daily_finish(daily_boards *d, int32_t day, int size, const acct_account *a,
                 const daily_result *r) {
    if (!size_valid(size)) return DAILY_BAD_SIZE;
    daily_board *b = board_find(d, day, size);
    daily_entry *e = entry_find(b, a);
    if (!e) return DAILY_NOT_BEGUN;
    if (e->finished) return DAILY_FINISHED;
    e->result = *r;
    e->finished = true;
    rank_attach(&b->ranked, e->node);
    e->node = NULL; /* the index owns it now */
    return DAILY_OK;
}

size_t daily_ranked(const daily_boards *d, int32_t day, int size) {
    const daily_board *b = board_find(d, day, size);
    return b ? b->ranked.length : 0;
}

size_t daily_rank(const daily_boards *d, int32_t day, int size, const acct_account *a) {
    const daily_board *b = board_find(d, day, size);
    const daily_entry *e = entry_find(b, a);
    return e && e->finished ? rank_of(&b->ranked, e) : 0;
}

size_t daily_top(const daily_boards *d, int32_t day, int size, size_t from,
                 const daily_entry **out, size_t max) {
    const daily_board *b = board_find(d, day, size);
    return b ? rank_range(&b->ranked, from, (void **)out, max) : 0;
}

void daily_each(const daily_boards *d,
                void (*fn)(void *ctx, int32_t day, int size, const daily_entry *e),
                void *ctx) {
    for (const daily_board *b = d->boards; b; b = b->hh.next)
        for (const daily_entry *e = b->entries; e; e = e->hh.next)
            fn(ctx, b->day, b->size, e);
}

void daily_prune(daily_boards *d, int32_t before_day) {
    daily_board *b, *tmp;
    HASH_ITER(hh, d->boards, b, tmp) {
        if (b->day < before_day) board_free(d, b);
    }
}

bool daily_check(const daily_boards *d) {
    for (const daily_board *b = d->boards; b; b = b->hh.next) {
        if (!rank_check(&b->ranked) || b->key != board_key(b->day, b->size)) return false;
        size_t finished = 0;
        for (const daily_entry *e = b->entries; e; e = e->hh.next) {
            if (e->finished ? rank_of(&b->ranked, e) == 0 || e->node : !e->node)
                return false;
            finished += e->finished;
        }
        if (finished != b->ranked.length) return false;
    }
    return true;
}

/* ----------------------------------------------------------------- days --- */

/* Howard Hinnant's days_from_civil and civil_from_days (proleptic Gregorian). */
static int32_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    int yoe = y - era * 400;
    int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int32_t z, int *y, int *m, int *d) {
    z += 719468;
    int era = (z >= 0 ? z : z - 146096) / 146097;
    int doe = z - era * 146097;
    int yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

#define MS_PER_DAY 86400000LL

int32_t daily_day_of_ms(int64_t unix_ms) {
    int64_t day = unix_ms / MS_PER_DAY - (unix_ms % MS_PER_DAY < 0);
    return (int32_t)day;
}

int64_t daily_day_start_ms(int32_t day) {
    return (int64_t)day * MS_PER_DAY;
}

void daily_day_format(int32_t day, char out[11]) {
    int y, m, d;
    civil_from_days(day, &y, &m, &d);
    if (y < 0 || y > 9999) y = y < 0 ? 0 : 9999; /* out of the protocol's range */
    const int fields[3][2] = {{y, 4}, {m, 2}, {d, 2}};
    char *p = out;
    for (int f = 0; f < 3; f++) {
        for (int k = fields[f][1] - 1, v = fields[f][0]; k >= 0; k--, v /= 10)
            p[k] = (char)('0' + v % 10);
        p += fields[f][1];
        *p++ = f < 2 ? '-' : '\0';
    }
}

bool daily_day_parse(const char *t, int32_t *day) {
    for (int i = 0; i < 10; i++) {
        bool dash = i == 4 || i == 7;
        if (dash ? t[i] != '-' : (t[i] < '0' || t[i] > '9')) return false;
    }
    if (t[10]) return false;
    int y = (t[0] - '0') * 1000 + (t[1] - '0') * 100 + (t[2] - '0') * 10 + (t[3] - '0');
    int m = (t[5] - '0') * 10 + (t[6] - '0'), d = (t[8] - '0') * 10 + (t[9] - '0');
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || m < 1 || m > 12 || d < 1) return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > month_days[m - 1] + (m == 2 && leap)) return false;
    *day = days_from_civil(y, m, d);
    return true;
}
