/* test_replicate_unit.c - the journal's replicate hook (cluster mode's records) alone,
 * with a fake cluster: it gets exactly the bytes the file got, a commit is durable only
 * once they are replicated, failures are sent again, a compaction sends the compacted
 * journal in place of what was sent, and fencing takes the games the cluster lacks out of
 * history. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "journal.h"

static const char *dir;
static uv_loop_t loop;
static uint64_t next_player_id;

/* The fake cluster: what it was sent, and what it answers. Called on a
 * worker thread, one call at a time; the loop reads it between runs. */
static char *sent;
static size_t nsent;
static int answer;
static int calls;

static int fake_replicate(void *ctx, const char *bytes, size_t len, size_t base_len) {
    (void)ctx;
    calls++;
    if (answer != 0) return answer;
    if (base_len) nsent = 0; /* a compacted journal replaces what came before */
    sent = realloc(sent, nsent + len + 1);
    memcpy(sent + nsent, bytes, len);
    nsent += len;
    sent[nsent] = '\0';
    return 0;
}

static int setup(void **state) {
    (void)state;
    dir = harness_temp_dir("replicate");
    next_player_id = 100;
    free(sent);
    sent = NULL;
    nsent = 0;
    answer = 0;
    calls = 0;
    return uv_loop_init(&loop);
}

static void close_handle(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static int teardown(void **state) {
    (void)state;
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    free(sent);
    sent = NULL;
    return uv_loop_close(&loop);
}

static journal *open_with(const char *name, uint64_t max) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    journal_config cfg = {.path = path,
                          .sync_ms = 10,
                          .max = max,
                          .next_player_id = &next_player_id,
                          .replicate = fake_replicate};
    journal *j = NULL;
    jrn_recovery rec;
    assert_int_equal(journal_open(&j, &loop, &cfg, &rec), 0);
    journal_recovery_free(&rec);
    return j;
}

static void close_journal(journal *j) {
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    journal_close(j);
}

/* Commits and runs the loop until the commit (and its replication) is done. */
static void commit(journal *j) {
    journal_commit_now(j);
    uv_run(&loop, UV_RUN_DEFAULT);
}

static jrn_start solo_start(void) {
    jrn_start st = {.solo = true,
                    .settings = {.players = 1, .size = 4, .target = 2048},
                    .salt = "0123456789abcdef0123456789abcdef",
                    .commit = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554"
                              "433221100",
                    .nseats = 1,
                    .started_ms = journal_wall_ms()};
    st.seed = eng_seed_client(7);
    st.seats[0] = (jrn_seat_info){.id = 9, .name = "cat"};
    assert_int_equal(journal_token_hash("cat's token", st.seats[0].token_hash), 0);
    return st;
}

/* A solo game with a few moves that changed the board, then its end. */
static uint64_t play_and_end(journal *j, eng_game *board, jrn_game **out) {
    jrn_start st = solo_start();
    jrn_game *g = journal_game_start(j, &st);
    eng_game_new(board, 4, &st.seed);
    static const eng_dir dirs[] = {ENG_LEFT, ENG_UP, ENG_RIGHT, ENG_DOWN};
    for (int k = 0; k < 12; k++)
        if (eng_game_move(board, dirs[k % 4], NULL).moved)
            journal_move(g, 0, dirs[k % 4]);
    proto_player p = {.id = 9,
                      .name = "cat",
                      .board = &board->board,
                      .score = board->score,
                      .moves = board->moves,
                      .status = PROTO_OVER};
    jrn_end end = {.reason = PROTO_END_ALL_OVER,
                   .winner = 9,
                   .results = &p,
                   .nresults = 1,
                   .ended_ms = journal_wall_ms()};
    if (out) *out = g;
    return journal_game_end(g, &end);
}

static char *file_of(const char *name, size_t *len) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return harness_read_file(path, len);
}

/* The cluster gets exactly what the file got; the end is durable once it has. */
static void test_same_bytes(void **state) {
    (void)state;
    journal *j = open_with("j", 64u << 20);
    eng_game board;
    jrn_game *g;
    uint64_t pos = play_and_end(j, &board, &g);
    commit(j);
    assert_true(journal_durable_pos(j) >= pos);
    size_t len;
    char *file = file_of("j", &len);
    assert_int_equal(nsent, len);
    assert_memory_equal(sent, file, len);
    free(file);
    journal_game_free(g);
    close_journal(j);
}

/* A failing cluster holds the end back; the records go once it answers, once. */
static void test_failure_holds_end(void **state) {
    (void)state;
    journal *j = open_with("j", 64u << 20);
    eng_game board;
    jrn_game *g;
    answer = -1;
    uint64_t pos = play_and_end(j, &board, &g);
    commit(j);
    assert_true(calls >= 1);
    assert_true(journal_durable_pos(j) < pos);
    const proto_game_record *listed[4];
    assert_int_equal(journal_history(j, 4, listed), 0); /* not durable: not listed */
    answer = 0;
    commit(j);
    assert_true(journal_durable_pos(j) >= pos);
    assert_int_equal(journal_history(j, 4, listed), 1);
    size_t len;
    char *file = file_of("j", &len);
    assert_int_equal(nsent, len); /* sent once, not once per try */
    assert_memory_equal(sent, file, len);
    free(file);
    journal_game_free(g);
    close_journal(j);
}

/* Fenced (1: not now): durable at once, the bytes kept for later; a game that
 * ended while the cluster failed leaves history when the node is fenced. */
static void test_fence(void **state) {
    (void)state;
    journal *j = open_with("j", 64u << 20);
    eng_game board;
    jrn_game *g;
    answer = -1;
    uint64_t pos = play_and_end(j, &board, &g);
    commit(j);
    journal_fence(j);
    answer = 1;
    commit(j);
    assert_true(journal_durable_pos(j) >= pos); /* nothing waits for the cluster now */
    const proto_game_record *listed[4];
    assert_int_equal(journal_history(j, 4, listed), 0); /* but that end never went out */
    assert_int_equal(nsent, 0);
    answer = 0; /* a new incarnation: what was kept goes out with the next commit */
    journal_game_free(g);
    eng_game board2;
    jrn_game *g2;
    uint64_t pos2 = play_and_end(j, &board2, &g2);
    commit(j);
    assert_true(journal_durable_pos(j) >= pos2);
    assert_int_equal(journal_history(j, 4, listed), 1);
    size_t len;
    char *file = file_of("j", &len);
    assert_int_equal(nsent, len);
    free(file);
    journal_game_free(g2);
    close_journal(j);
}

static size_t count_of(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* More than a few MiB wait for a failing cluster: they are dropped, and from
 * then on nothing is durable (no `end`, no held state goes out) until the
 * node fences; then what is kept waits for the next incarnation. */
static void test_dropped_until_fenced(void **state) {
    (void)state;
    journal *j = open_with("j", 64u << 20);
    answer = -1;
    eng_game board;
    jrn_game *g = NULL;
    uint64_t pos = 0;
    for (int k = 0; k < 40000 && !journal_replication_broken(j); k++) {
        if (g) journal_game_free(g);
        pos = play_and_end(j, &board, &g);
        if (k % 200 == 0) commit(j);
    }
    commit(j);
    assert_true(journal_replication_broken(j));
    answer = 0; /* the cluster answers again: still nothing is durable */
    commit(j);
    assert_true(journal_durable_pos(j) < pos);
    journal_fence(j);
    assert_false(journal_replication_broken(j));
    journal_game_free(g);
    close_journal(j);
}

/* A move's state may be shown at once while replication keeps up; once the
 * records made more than the window ago are not replicated, it waits for the
 * oldest commit that is not (and goes once that is replicated). */
static void test_show_pos(void **state) {
    (void)state;
    journal *j = open_with("j", 64u << 20); /* sync window: 10 ms + slack */
    jrn_start st = solo_start();
    jrn_game *g = journal_game_start(j, &st);
    commit(j);
    journal_move(g, 0, ENG_LEFT);
    assert_int_equal(journal_show_pos(j), 0); /* just made */
    answer = -1;
    commit(j); /* not replicated */
    uv_sleep(10 + JOURNAL_SHOW_SLACK_MS + 20);
    uv_update_time(&loop);
    uint64_t wait = journal_show_pos(j);
    assert_true(wait > journal_durable_pos(j));
    answer = 0;
    commit(j);
    assert_true(journal_durable_pos(j) >= wait);
    assert_int_equal(journal_show_pos(j), 0);
    journal_game_free(g);
    close_journal(j);
}

/* A compaction rewrites the file with the running game's records; the
 * cluster gets the rewrite in place of what it had: it holds what the file
 * holds, byte for byte, however many compactions there were. */
static void test_compaction_replaces(void **state) {
    (void)state;
    journal *j = open_with("j", 65536);
    jrn_start st = solo_start();
    jrn_game *running = journal_game_start(j, &st);
    journal_move(running, 0, ENG_LEFT);
    commit(j);
    for (int k = 0; k < 200; k++) { /* finished games, past the compaction size */
        eng_game board;
        jrn_game *g;
        play_and_end(j, &board, &g);
        journal_game_free(g);
        commit(j);
    }
    assert_true(journal_get_stats(j).compactions >= 1);
    char needle[64];
    snprintf(needle, sizeof needle, "{\"j\":\"start\",\"game\":%llu,",
             (unsigned long long)st.game);
    size_t len;
    char *file = file_of("j", &len);
    assert_int_equal(count_of(file, needle), 1); /* kept by the rewrite */
    assert_true(journal_get_stats(j).compactions >= 2);
    assert_int_equal(nsent, len); /* the cluster has what the file has */
    assert_memory_equal(sent, file, len);
    free(file);
    journal_game_free(running);
    close_journal(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_holds_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_until_fenced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_show_pos, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_replaces, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
