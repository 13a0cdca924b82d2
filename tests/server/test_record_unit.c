/* test_record_unit.c - the record alone, driven with plain events (no room, no
 * sockets): a journal in a temp dir takes start, move, seat and end events, is closed
 * and opened again, and hands back the running games, the finished-game index and
 * what a torn tail left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "journal.h"

static const char *dir;
static uv_loop_t loop;
static uint64_t next_player_id;

static int setup(void **state) {
    (void)state;
    dir = harness_temp_dir("record");
    next_player_id = 100;
    return uv_loop_init(&loop);
}

static const char *path_in(const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static journal *open_at(const char *path, jrn_recovery *rec) {
    journal_config cfg = {
        .path = path, .sync_ms = 10, .max = 64u << 20, .next_player_id = &next_player_id};
    journal *j = NULL;
    assert_int_equal(journal_open(&j, &loop, &cfg, rec), 0);
    assert_non_null(j);
    return j;
}

static void close_handle(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* As race2048d stops: the loop's handles closed, then the journal. */
static void close_journal(journal *j) {
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    journal_close(j);
}

static int teardown(void **state) {
    (void)state;
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop);
}

/* Commits what is buffered and runs the loop until the disk has it. */
static void commit(journal *j) {
    journal_commit_now(j);
    uv_run(&loop, UV_RUN_DEFAULT);
}

#define SALT   "0123456789abcdef0123456789abcdef"
#define COMMIT "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

/* A race of two in room ABCD with a server seed, or a solo game of one. */
static jrn_start start_event(bool solo, int64_t started_ms, uint32_t time_limit) {
    jrn_start st = {.solo = solo,
                    .settings = {.players = solo ? 1 : 2,
                                 .size = solo ? 3 : 4,
                                 .target = 2048,
                                 .time_limit = time_limit},
                    .salt = SALT,
                    .commit = COMMIT,
                    .nseats = solo ? 1 : 2,
                    .started_ms = started_ms};
    if (solo) {
        st.seed = eng_seed_client(7);
        st.seats[0] = (jrn_seat_info){.id = 9, .name = "cat"};
        assert_int_equal(journal_token_hash("cat's token", st.seats[0].token_hash), 0);
    } else {
        uint8_t key[ENG_SEED_KEY_BYTES] = {1, 2, 3};
        st.seed = eng_seed_server(key);
        snprintf(st.room, sizeof st.room, "ABCD");
        st.seats[0] = (jrn_seat_info){.id = 5, .name = "ann"};
        st.seats[1] = (jrn_seat_info){.id = 6, .name = "bob"};
        assert_int_equal(journal_token_hash("ann's token", st.seats[0].token_hash), 0);
        assert_int_equal(journal_token_hash("bob's token", st.seats[1].token_hash), 0);
    }
    return st;
}

/* Plays letters on seat's board (the game's side, here by hand) and tells the journal. */
static void play(jrn_game *g, eng_game *board, int seat, const char *letters) {
    for (const char *l = letters; *l; l++) {
        eng_dir d;
        assert_int_equal(proto_dir_from_letter(*l, &d), 0);
        eng_game_move(board, d, NULL);
        journal_move(g, seat, d);
    }
}

/* Ends a one-seat game with its board as it is. */
static uint64_t end_solo(jrn_game *g, const eng_game *board, int64_t ended_ms) {
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
                   .ended_ms = ended_ms};
    return journal_game_end(g, &end);
}

static char *read_text(const char *path, size_t *len) {
    return harness_read_file(path, len);
}

/* -------------------------------------------------------------- tests --- */

static void test_events_close_reopen(void **state) {
    (void)state;
    const char *path = path_in("j");
    jrn_recovery rec;
    journal *j = open_at(path, &rec);
    assert_int_equal(rec.ngames, 0);
    assert_int_equal(rec.next_game, 1); /* --seed's counter starts past it */
    journal_recovery_free(&rec);

    /* A race that is still running when the server stops. */
    jrn_start race = start_event(false, 1700000000000, 0);
    jrn_game *gr = journal_game_start(j, &race);
    assert_non_null(gr);
    assert_int_equal(race.game, 1);
    /* A solo game that ends, and one that ends unplayed. */
    jrn_start solo = start_event(true, 1700000001000, 0);
    jrn_game *gs = journal_game_start(j, &solo);
    assert_int_equal(solo.game, 2);
    jrn_start idle = start_event(true, 1700000002000, 0);
    jrn_game *gi = journal_game_start(j, &idle);

    eng_game a, b, c;
    assert_int_equal(eng_game_new(&a, 4, &race.seed), 0);
    assert_int_equal(eng_game_new(&b, 4, &race.seed), 0);
    assert_int_equal(eng_game_new(&c, 3, &solo.seed), 0);
    play(gr, &a, 0, "lr");
    play(gr, &b, 1, "u");
    journal_seat(gr, 1, JRN_SEAT_DISCONNECTED);
    play(gs, &c, 0, "ld");
    uint64_t pos = end_solo(gs, &c, 1700000003000);
    assert_true(pos > 0);
    eng_game unplayed;
    eng_game_new(&unplayed, 3, &idle.seed);
    end_solo(gi, &unplayed, 1700000004000);

    /* Not listed before its record is durable: its `end` has not gone out. */
    const proto_game_record *games[10];
    assert_int_equal(journal_history(j, 10, games), 0);
    assert_null(journal_replay(j, 2));
    commit(j);
    assert_true(journal_durable_pos(j) >= pos);
    assert_int_equal(journal_history(j, 10, games), 1); /* not the unplayed one */
    const proto_game_record *g = journal_replay(j, 2);
    assert_ptr_equal(g, games[0]);
    assert_null(journal_replay(j, 3));
    assert_int_equal(g->nseats, 1);
    assert_int_equal(g->seats[0].n, 2);
    assert_memory_equal(g->seats[0].letters, "ld", 2);
    assert_string_equal(g->room, "");
    assert_int_equal(g->results[0].score, c.score);
    size_t len;
    char *before = proto_enc_game_record(g, &len);

    /* Stopping: the running race's handle goes, its moves are kept. */
    journal_game_free(gr);
    journal_game_free(gs);
    journal_game_free(gi);
    close_journal(j);

    /* The file, byte for byte where the format is fixed. */
    char *text = read_text(path, NULL);
    char start_line[1024];
    snprintf(
        start_line, sizeof start_line,
        "{\"j\":\"start\",\"game\":1,\"room\":\"ABCD\",\"size\":4,\"target\":2048,"
        "\"time_limit\":0,\"seed\":\"0102030000000000000000000000000000000000000000"
        "000000000000000000\",\"salt\":\"" SALT "\",\"commit\":\"" COMMIT
        "\",\"started\":1700000000000,\"seats\":[{\"id\":5,\"name\":\"ann\",\"token\":"
        "\"%s\"},{\"id\":6,\"name\":\"bob\",\"token\":\"%s\"}]}\n",
        race.seats[0].token_hash, race.seats[1].token_hash);
    assert_memory_equal(text, start_line, strlen(start_line));
    assert_non_null(
        strstr(text, "{\"j\":\"moves\",\"game\":1,\"m\":{\"5\":\"lr\",\"6\":\"u\"}}\n"
                     "{\"j\":\"seat\",\"game\":1,\"id\":6,\"event\":"
                     "\"disconnected\"}\n"));
    /* The finished record is the struct's encoding: what `replay` gives. */
    assert_non_null(strstr(text, before));
    free(text);

    j = open_at(path, &rec);
    assert_false(rec.torn);
    assert_int_equal(rec.bad, 0);
    assert_int_equal(rec.finished, 2);
    assert_int_equal(rec.next_game, 4);
    assert_int_equal(rec.next_player_id, 10);
    assert_int_equal(rec.ngames, 1);
    const jrn_pending *p = &rec.games[0];
    assert_int_equal(p->start.game, 1);
    assert_false(p->start.solo);
    assert_string_equal(p->start.room, "ABCD");
    assert_true(eng_seed_equal(&p->start.seed, &race.seed));
    assert_string_equal(p->start.salt, SALT);
    assert_string_equal(p->start.commit, COMMIT);
    assert_int_equal(p->start.settings.size, 4);
    assert_int_equal(p->start.settings.players, 2);
    assert_int_equal(p->start.started_ms, 1700000000000);
    assert_int_equal(p->start.nseats, 2);
    assert_string_equal(p->start.seats[1].name, "bob");
    assert_string_equal(p->start.seats[1].token_hash, race.seats[1].token_hash);
    assert_int_equal(p->nmoves[0], 2);
    assert_memory_equal(p->moves[0], "lr", 2);
    assert_int_equal(p->nmoves[1], 1);
    assert_false(p->left[0] || p->left[1]);
    assert_int_equal(p->remaining_ms, 0);
    /* The finished games came back into the index, byte for byte. */
    assert_int_equal(journal_history(j, 10, games), 1);
    char *after = proto_enc_game_record(games[0], &len);
    assert_string_equal(after, before);
    free(after);

    /* Recovery's side: the race goes on from where it was, then ends. */
    jrn_game *back = journal_game_restore(j, &p->start);
    journal_move(back, 0, ENG_LEFT);
    journal_move(back, 0, ENG_RIGHT);
    journal_move(back, 1, ENG_UP);
    journal_game_restored(back); /* those three are in the file already */
    journal_move(back, 0, ENG_DOWN);
    journal_seat(back, 1, JRN_SEAT_LEFT);
    proto_player res[2] = {
        {.id = 5, .name = "ann", .board = &a.board, .status = PROTO_PLAYING},
        {.id = 6, .name = "bob", .board = &b.board, .status = PROTO_LEFT}};
    jrn_end end = {.reason = PROTO_END_FORFEIT,
                   .winner = 5,
                   .results = res,
                   .nresults = 2,
                   .ended_ms = 1700000009000};
    journal_game_end(back, &end);
    commit(j);
    assert_int_equal(journal_history(j, 10, games), 2);
    assert_int_equal(games[0]->game, 1); /* newest first */
    assert_int_equal(games[1]->game, 2);
    assert_string_equal(games[0]->room, "ABCD");
    assert_int_equal(games[0]->winner, 5);
    assert_int_equal(games[0]->seats[0].n, 3);
    assert_memory_equal(games[0]->seats[0].letters, "lrd", 3);
    assert_int_equal(games[0]->seats[1].n, 1);
    /* A new game's id is past every recorded one. */
    jrn_start more = start_event(true, 1700000010000, 0);
    jrn_game *gm = journal_game_start(j, &more);
    assert_int_equal(more.game, 4);
    journal_game_free(gm);
    journal_game_free(back);
    journal_recovery_free(&rec);
    close_journal(j);

    j = open_at(path, &rec);
    assert_int_equal(rec.ngames, 1); /* game 4, started and never ended */
    assert_int_equal(rec.games[0].start.game, 4);
    assert_int_equal(journal_history(j, 10, games), 2);
    journal_recovery_free(&rec);
    close_journal(j);
    free(before);
}

/* A torn last record is cut off; a bad whole line before it is skipped. */
static void test_torn_tail(void **state) {
    (void)state;
    const char *path = path_in("torn");
    jrn_recovery rec;
    journal *j = open_at(path, &rec);
    jrn_start race = start_event(false, 1700000000000, 0);
    jrn_game *g = journal_game_start(j, &race);
    journal_move(g, 0, ENG_LEFT);
    journal_game_free(g);
    close_journal(j);
    size_t whole;
    free(read_text(path, &whole));
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("{\"j\":\"what\"\n", f); /* a bad record, skipped */
    fputs("{\"j\":\"seat\",\"game\":1,\"id\":6,\"event\":\"left\"}\n", f);
    fputs("{\"j\":\"moves\",\"game\":1,\"m\":{\"5\":\"rrr", f);
    fclose(f);

    j = open_at(path, &rec);
    assert_true(rec.torn);
    assert_int_equal(rec.bad, 1);
    assert_int_equal(
        rec.bytes,
        whole + strlen("{\"j\":\"what\"\n") +
            strlen("{\"j\":\"seat\",\"game\":1,\"id\":6,\"event\":\"left\"}\n"));
    assert_int_equal(rec.ngames, 1);
    assert_true(rec.games[0].left[1]);
    assert_int_equal(rec.games[0].nmoves[0], 1); /* not the torn "rrr" */
    size_t now;
    free(read_text(path, &now));
    assert_int_equal(now, rec.bytes);
    journal_recovery_free(&rec);
    close_journal(j);
}

/* Seat events and the clock: a seat that left stays gone; time left counts
 * from the start the record gives. */
static void test_left_and_time_left(void **state) {
    (void)state;
    const char *path = path_in("time");
    jrn_recovery rec;
    journal *j = open_at(path, &rec);
    int64_t now = journal_wall_ms();
    jrn_start recent = start_event(false, now - 10000, 600);
    jrn_start old = start_event(false, now - 3600 * 1000, 60);
    jrn_game *a = journal_game_start(j, &recent);
    jrn_game *b = journal_game_start(j, &old);
    journal_seat(a, 0, JRN_SEAT_OVER);
    journal_seat(a, 1, JRN_SEAT_LEFT);
    journal_game_free(a);
    journal_game_free(b);
    close_journal(j);

    j = open_at(path, &rec);
    assert_int_equal(rec.ngames, 2);
    const jrn_pending *pa = &rec.games[0], *pb = &rec.games[1];
    assert_int_equal(pa->start.game, 1);
    assert_false(pa->left[0]);
    assert_true(pa->left[1]);
    /* 600 s from 10 s ago: about 590 s, with a wide margin for a slow machine. */
    assert_true(pa->remaining_ms <= 590000 && pa->remaining_ms > 500000);
    assert_int_equal(pb->remaining_ms, 1); /* over already: ends at once */
    journal_recovery_free(&rec);
    close_journal(j);
}

/* Without a file the record still keeps finished games for history, at once. */
static void test_memory_only(void **state) {
    (void)state;
    jrn_recovery rec;
    journal *j = open_at("", &rec);
    assert_int_equal(rec.ngames, 0);
    assert_int_equal(rec.next_game, 0); /* nothing recorded: --seed counts from 0 */
    assert_string_equal(journal_path(j), "");
    jrn_start solo = start_event(true, 1, 0);
    jrn_game *g = journal_game_start(j, &solo);
    eng_game board;
    eng_game_new(&board, 3, &solo.seed);
    play(g, &board, 0, "l");
    assert_int_equal(end_solo(g, &board, 2), 0);
    const proto_game_record *games[1];
    assert_int_equal(journal_history(j, 1, games), 1);
    assert_int_equal(games[0]->game, 1);
    journal_game_free(g);
    /* No journal at all: the events are no-ops, history says so. */
    assert_null(journal_game_start(NULL, &solo));
    journal_move(NULL, 0, ENG_UP);
    journal_seat(NULL, 0, JRN_SEAT_LEFT);
    assert_int_equal(journal_game_end(NULL, &(jrn_end){0}), 0);
    assert_int_equal(journal_history(NULL, 1, games), -1);
    close_journal(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_events_close_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_and_time_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_only, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
