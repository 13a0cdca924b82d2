/* test_record.c - finished-game records: the journal line, history and replay
 * replies byte for byte (protocol/README.md's examples, `end`'s own members),
 * and records read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "record.h"

/* protocol/README.md's exchange: a 3x3 solo game with client seed 7. */
#define README_MEMBERS                                                                   \
    "\"j\":\"game\",\"game\":1,\"reason\":\"all_over\",\"winner\":1,\"results\":[{"      \
    "\"id\":1,\"name\":\"ann\",\"board\":[[0,4,2],[0,0,2],[2,0,0]],\"score\":4,"         \
    "\"moves\":3,\"max_tile\":4,\"status\":\"left\"}],\"seed\":7,\"salt\":"              \
    "\"93141d719e7eb04805f120b07900a4d8\",\"commit\":"                                   \
    "\"e06f87c53bc61852c5d09a02ad07f4b440f9c4edbcd1c347156d82a8d9818bdc\",\"size\":3,"   \
    "\"target\":2048,\"time_limit\":0,\"started\":1796157879017,\"ended\":1796157879020"

static void set_board(eng_board *b, int size, const uint64_t *values) {
    assert_int_equal(eng_board_init(b, size), 0);
    for (int k = 0; k < size * size; k++)
        b->cell[k] = values[k] ? (uint8_t)eng_value_exp(values[k]) : 0;
}

static void readme_game(proto_game_record *g) {
    *g =
        (proto_game_record){.game = 1,
                            .reason = PROTO_END_ALL_OVER,
                            .winner = 1,
                            .nresults = 1,
                            .seed = eng_seed_client(7),
                            .salt = "93141d719e7eb04805f120b07900a4d8",
                            .commit = "e06f87c53bc61852c5d09a02ad07f4b440f9c4edbcd1c34715"
                                      "6d82a8d9818bdc",
                            .size = 3,
                            .target = 2048,
                            .started = 1796157879017,
                            .ended = 1796157879020,
                            .nseats = 1};
    g->results[0] = (proto_result){
        .id = 1, .name = "ann", .score = 4, .moves = 3, .status = PROTO_LEFT};
    set_board(&g->results[0].board, 3, (const uint64_t[]){0, 4, 2, 0, 0, 2, 2, 0, 0});
    g->seats[0] = (proto_seat_moves){.id = 1, .letters = strdup("lur"), .n = 3};
}

static void test_readme_examples(void **state) {
    (void)state;
    proto_game_record g;
    readme_game(&g);
    size_t len;
    char *line = proto_enc_game_record(&g, &len);
    assert_string_equal(line, "{" README_MEMBERS ",\"moves\":{\"1\":\"lur\"}}\n");
    assert_int_equal(len, strlen(line));
    free(line);
    const proto_game_record *games[] = {&g};
    line = proto_enc_history(games, 1, &len);
    assert_string_equal(line,
                        "{\"type\":\"history\",\"games\":[{" README_MEMBERS "}]}\n");
    free(line);
    line = proto_enc_history(NULL, 0, &len);
    assert_string_equal(line, "{\"type\":\"history\",\"games\":[]}\n");
    free(line);
    line = proto_enc_replay(&g, &len);
    assert_string_equal(line, "{\"type\":\"replay\"," README_MEMBERS
                              ",\"moves\":{\"1\":\"lur\"}}\n");
    free(line);
    proto_game_record_clear(&g);
}

/* A race: room, server seed, a draw (winner null), two seats, one of which
 * never moved. Its members between "game" and "commit" are `end`'s, as
 * proto_enc_end writes them. */
static void race_game(proto_game_record *g) {
    uint8_t key[ENG_SEED_KEY_BYTES];
    for (int i = 0; i < ENG_SEED_KEY_BYTES; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    *g = (proto_game_record){.game = 42,
                             .room = "K7QD",
                             .reason = PROTO_END_TIME,
                             .nresults = 2,
                             .seed = eng_seed_server(key),
                             .salt = "0123456789abcdef0123456789abcdef",
                             .commit = "",
                             .size = 4,
                             .target = 64,
                             .time_limit = 30,
                             .started = 1000,
                             .ended = 31000,
                             .nseats = 2};
    static const uint64_t b1[16] = {2, 4, 8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32};
    static const uint64_t b2[16] = {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    /* A score past int64 is written clamped, as `end` clamps it. */
    g->results[0] = (proto_result){.id = 9,
                                   .name = "bob-2",
                                   .score = UINT64_MAX,
                                   .moves = 12,
                                   .status = PROTO_PLAYING};
    set_board(&g->results[0].board, 4, b1);
    g->results[1] = (proto_result){.id = 3, .name = "A_n", .status = PROTO_LEFT};
    set_board(&g->results[1].board, 4, b2);
    g->seats[0] = (proto_seat_moves){.id = 3};
    g->seats[1] = (proto_seat_moves){.id = 9, .letters = strdup("lrudlrudlrud"), .n = 12};
}

static void test_members_are_ends(void **state) {
    (void)state;
    proto_game_record g;
    race_game(&g);
    proto_player views[2];
    for (int i = 0; i < 2; i++)
        views[i] = (proto_player){.id = g.results[i].id,
                                  .name = g.results[i].name,
                                  .board = &g.results[i].board,
                                  .score = g.results[i].score,
                                  .moves = g.results[i].moves,
                                  .status = g.results[i].status};
    size_t end_len, len;
    char *end =
        proto_enc_end(g.room, g.reason, g.winner, views, 2, &g.seed, g.salt, &end_len);
    char *line = proto_enc_game_record(&g, &len);
    assert_non_null(end);
    assert_non_null(line);
    /* {"type":"end",X}\n against {"j":"game","game":42,X,"commit":... */
    static const char end_head[] = "{\"type\":\"end\",";
    static const char rec_head[] = "{\"j\":\"game\",\"game\":42,";
    size_t members = end_len - (sizeof end_head - 1) - 2;
    assert_memory_equal(line, rec_head, sizeof rec_head - 1);
    assert_memory_equal(line + sizeof rec_head - 1, end + sizeof end_head - 1, members);
    assert_string_equal(line + sizeof rec_head - 1 + members,
                        ",\"commit\":\"\",\"size\":4,\"target\":64,\"time_limit\":30,"
                        "\"started\":1000,\"ended\":31000,\"moves\":{\"3\":\"\",\"9\":"
                        "\"lrudlrudlrud\"}}\n");
    assert_true(proto_game_record_played(&g));
    free(end);
    free(line);
    proto_game_record_clear(&g);
}

/* What is written reads back to the same struct, and so to the same bytes. */
static void test_round_trip(void **state) {
    (void)state;
    proto_game_record g, back;
    race_game(&g);
    size_t len, len2;
    char *line = proto_enc_game_record(&g, &len);
    assert_int_equal(proto_dec_game_record(line, len, &back), 0);
    assert_int_equal(back.game, 42);
    assert_string_equal(back.room, "K7QD");
    assert_int_equal(back.winner, 0);
    assert_int_equal(back.reason, PROTO_END_TIME);
    assert_int_equal(back.nresults, 2);
    assert_int_equal(back.results[0].id, 9);
    assert_true(eng_seed_equal(&back.seed, &g.seed));
    assert_memory_equal(&back.results[0].board, &g.results[0].board, sizeof(eng_board));
    assert_int_equal(back.nseats, 2);
    assert_int_equal(back.seats[0].id, 3);
    assert_int_equal(back.seats[0].n, 0);
    assert_int_equal(back.seats[1].n, 12);
    assert_memory_equal(back.seats[1].letters, "lrudlrudlrud", 12);
    char *again = proto_enc_game_record(&back, &len2);
    assert_string_equal(again, line);
    free(again);
    /* A replay reply saved as a line reads as the record. */
    proto_game_record_clear(&back);
    char *replay = proto_enc_replay(&g, &len2);
    assert_int_equal(proto_dec_game_record(replay, len2, &back), 0);
    again = proto_enc_game_record(&back, &len2);
    assert_string_equal(again, line);
    free(again);
    free(replay);
    free(line);
    proto_game_record_clear(&back);
    /* Unplayed: nobody moved. */
    proto_game_record_clear(&g);
    g.nseats = 2;
    g.seats[0] = (proto_seat_moves){.id = 3};
    g.seats[1] = (proto_seat_moves){.id = 9};
    assert_false(proto_game_record_played(&g));
}

/* A bot's result says "bot":true last, as in `end`; a person's object is as
 * it always was; both read back (issue 29: history kept no bot). */
static void test_bot_results(void **state) {
    (void)state;
    proto_game_record g, back;
    race_game(&g);
    g.results[1].bot = true;
    size_t len;
    char *history = proto_enc_history((const proto_game_record *const[]){&g}, 1, &len);
    assert_non_null(strstr(history, "\"status\":\"left\",\"bot\":true}"));
    assert_int_equal(strstr(strstr(history, "\"bot\":true") + 1, "\"bot\""), NULL);
    free(history);
    char *line = proto_enc_game_record(&g, &len);
    assert_int_equal(proto_dec_game_record(line, len, &back), 0);
    assert_false(back.results[0].bot);
    assert_true(back.results[1].bot);
    free(line);
    proto_game_record_clear(&back);
    proto_game_record_clear(&g);
}

static void test_bad_records(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "{}",
        "not json",
        /* the wrong kind */
        "{\"j\":\"start\",\"game\":1,\"size\":3}",
        /* a board of the wrong size, a tile that is no power of two */
        "{\"j\":\"game\",\"game\":1,\"reason\":\"all_over\",\"winner\":1,\"results\":[{"
        "\"id\":1,\"name\":\"ann\",\"board\":[[0,4],[0,0]],\"score\":4,\"moves\":3,"
        "\"status\":\"left\"}],\"seed\":7,\"salt\":\"\",\"commit\":\"\",\"size\":3,"
        "\"target\":2048,\"time_limit\":0,\"started\":1,\"ended\":2,\"moves\":{}}",
        "{\"j\":\"game\",\"game\":1,\"reason\":\"all_over\",\"winner\":1,\"results\":[{"
        "\"id\":1,\"name\":\"ann\",\"board\":[[0,3,0],[0,0,0],[0,0,0]],\"score\":4,"
        "\"moves\":3,\"status\":\"left\"}],\"seed\":7,\"salt\":\"\",\"commit\":\"\","
        "\"size\":3,\"target\":2048,\"time_limit\":0,\"started\":1,\"ended\":2,"
        "\"moves\":{}}",
        /* a move that is no direction, a reason that is none */
        "{" README_MEMBERS ",\"moves\":{\"1\":\"lux\"}}",
        "{\"j\":\"game\",\"game\":1,\"reason\":\"tired\",\"winner\":1,\"results\":[{"
        "\"id\":1,\"name\":\"ann\",\"board\":[[0,4,2],[0,0,2],[2,0,0]],\"score\":4,"
        "\"moves\":3,\"status\":\"left\"}],\"seed\":7,\"salt\":\"\",\"commit\":\"\","
        "\"size\":3,\"target\":2048,\"time_limit\":0,\"started\":1,\"ended\":2,"
        "\"moves\":{}}",
        /* no moves member: a history entry is not a record */
        "{" README_MEMBERS "}",
        /* torn */
        "{" README_MEMBERS ",\"moves\":{\"1\":\"lu",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        proto_game_record g;
        if (proto_dec_game_record(bad[k], strlen(bad[k]), &g) == 0)
            fail_msg("record %zu was read: %s", k, bad[k]);
        assert_int_equal(g.nseats, 0);
    }
    proto_game_record g;
    /* Not the server's own bytes (an escape), but a record: read by the parser. */
    const char escaped[] =
        "{\"j\":\"game\",\"game\":1,\"reason\":\"all_over\",\"winner\":1,\"results\":[{"
        "\"id\":1,\"name\":\"a\\u0041\",\"board\":[[0,4,2],[0,0,2],[2,0,0]],\"score\":4,"
        "\"moves\":3,\"max_tile\":4,\"status\":\"left\"}],\"seed\":7,\"salt\":\"\","
        "\"commit\":"
        "\"\",\"size\":3,\"target\":2048,\"time_limit\":0,\"started\":1,\"ended\":2,"
        "\"moves\":{\"1\":\"l\"}}";
    assert_int_equal(proto_dec_game_record(escaped, sizeof escaped - 1, &g), 0);
    assert_string_equal(g.results[0].name, "aA");
    assert_int_equal(g.seats[0].n, 1);
    proto_game_record_clear(&g);
    const char good[] = "{" README_MEMBERS ",\"moves\":{\"1\":\"lur\"}}\n";
    assert_int_equal(proto_dec_game_record(good, sizeof good - 1, &g), 0);
    assert_int_equal(g.results[0].status, PROTO_LEFT);
    assert_int_equal(g.results[0].board.cell[1], 2); /* the 4 */
    assert_string_equal(g.room, "");
    proto_game_record_clear(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_examples), cmocka_unit_test(test_members_are_ends),
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_bot_results),
        cmocka_unit_test(test_bad_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
