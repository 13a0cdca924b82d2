/* test_analyse.c - race2048-replay --analyse: the AI's own game has no mistakes, and a
 * game with one bad move has that move as its biggest mistake. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ai.h"

static const char letters[4] = {'l', 'r', 'u', 'd'};
static ai_model *model;
static ai_cache cache;

static int setup(void **state) {
    (void)state;
    model = malloc(sizeof *model);
    cache.size = 1u << 16;
    cache.entries = calloc(cache.size, sizeof *cache.entries);
    if (!model || !cache.entries) return -1;
    ai_model_init(model);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(model);
    free(cache.entries);
    return 0;
}

/* The AI's moves (default budget, as --analyse judges) of a solo 4x4 game
 * with client seed `seed`, at most max. At bad_at (if >= 0) it plays the
 * legal move it values least instead. Returns the count. */
static int play(uint32_t seed, char *out, int max, int bad_at) {
    eng_game g;
    eng_seed sd = eng_seed_client(seed);
    eng_game_new(&g, 4, &sd);
    int n = 0;
    while (n < max) {
        ai_cache_clear(&cache);
        ai_result r = ai_search_board(model, &cache, &g.board, ai_budget_default());
        if (r.best < 0) break;
        int d = r.best;
        if (n == bad_at)
            for (int k = 0; k < 4; k++)
                if (r.value[k] >= 0 && r.value[k] < r.value[d]) d = k;
        out[n++] = letters[d];
        eng_game_move(&g, (eng_dir)d, &model->moves);
    }
    out[n] = '\0';
    return n;
}

/* Writes a journal holding one finished solo game with these moves, runs
 * race2048-replay --analyse on it; returns its stdout (malloc'd). */
static char *analyse(uint32_t seed, const char *moves) {
    char path[] = "/tmp/r2048-analyse-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "{\"j\":\"game\",\"game\":1,\"reason\":\"all_over\",\"winner\":1,\"results\":"
            "[{\"id\":1,\"name\":\"ann\",\"score\":0,\"moves\":%zu,\"status\":\"left\"}],"
            "\"seed\":%u,\"salt\":\"00000000000000000000000000000000\",\"size\":4,"
            "\"target\":2048,\"moves\":{\"1\":\"%s\"}}\n",
            strlen(moves), seed, moves);
    fclose(f);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        const char *bin = getenv("RACE2048_REPLAY");
        execl(bin, bin, path, "--analyse", "1", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    ssize_t r;
    while ((r = read(p[0], out + n, cap - n - 1)) > 0)
        if ((n += (size_t)r) + 1 == cap) out = realloc(out, cap *= 2);
    out[n] = '\0';
    close(p[0]);
    int status;
    waitpid(pid, &status, 0);
    unlink(path);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return out;
}

static void test_own_game_has_no_mistakes(void **state) {
    (void)state;
    char moves[301];
    int n = play(11, moves, 300, -1);
    assert_int_equal(n, 300);
    char *out = analyse(11, moves);
    assert_non_null(strstr(out, "300 moves, the AI would have played another 0 times"));
    assert_non_null(strstr(out, "biggest mistakes: none"));
    free(out);
}

static void test_bad_move_is_the_biggest_mistake(void **state) {
    (void)state;
    char moves[301];
    int n = play(11, moves, 300, 150);
    assert_int_equal(n, 300);
    char *out = analyse(11, moves);
    assert_non_null(strstr(out, "biggest mistakes: move 151 ("));
    char line[64];
    snprintf(line, sizeof line, "\n    151  ");
    const char *at = strstr(out, line);
    assert_non_null(at);
    const char *nl = strchr(at + 1, '\n');
    assert_non_null(strstr(at, "<- mistake 1"));
    assert_true(strstr(at, "<- mistake 1") < nl);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_game_has_no_mistakes),
        cmocka_unit_test(test_bad_move_is_the_biggest_mistake),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
