/* test_record_journal.c - the journal's records other than a finished game (start,
 * moves, seat, head, daily, daily_entry): lines as the server has always written
 * them read back and written again byte for byte, and strings escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "record.h"

#define HEX64  "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define SALT   "93141d719e7eb04805f120b07900a4d8"
#define COMMIT "e06f87c53bc61852c5d09a02ad07f4b440f9c4edbcd1c347156d82a8d9818bdc"

/* b's bytes as a string (the writers end every line with '\n'). */
static const char *text_of(byte_buf *b) {
    assert_int_equal(byte_buf_append(b, "", 1), 0);
    return b->data;
}

/* Start records exactly as journal.c's printf templates wrote them before the
 * format had one home: a race (room, server seed, rated, a bot and an
 * account) and a daily solo game (client seed for brevity). */
static const char old_race[] =
    "{\"j\":\"start\",\"game\":7,\"room\":\"AB12\",\"size\":4,\"target\":2048,"
    "\"time_limit\":60,\"seed\":\"" HEX64 "\",\"salt\":\"" SALT "\",\"commit\":\"" COMMIT
    "\",\"started\":1796157879017,\"rated\":true,\"seats\":[{\"id\":3,\"name\":\"ann\","
    "\"token\":\"" HEX64 "\"},{\"id\":4,\"name\":\"Bot 3\",\"token\":\"\",\"bot\":3},"
    "{\"id\":5,\"name\":\"bo\",\"token\":\"\",\"account\":\"Bo\"}]}\n";
static const char old_daily[] =
    "{\"j\":\"start\",\"game\":8,\"size\":4,\"target\":2048,\"time_limit\":0,\"seed\":12,"
    "\"salt\":\"" SALT "\",\"commit\":\"" COMMIT "\",\"started\":5,\"daily\":20000,"
    "\"seats\":[{\"id\":6,\"name\":\"cy\",\"token\":\"\"}]}\n";

static void test_old_start_records(void **state) {
    (void)state;
    proto_start_record st;
    assert_int_equal(proto_dec_start_record(old_race, sizeof old_race - 1, &st), 0);
    assert_int_equal(st.game, 7);
    assert_false(st.solo);
    assert_string_equal(st.room, "AB12");
    assert_int_equal(st.settings.size, 4);
    assert_int_equal(st.settings.time_limit, 60);
    assert_true(st.settings.rated);
    assert_int_equal(st.seed.kind, ENG_SEED_SERVER);
    assert_int_equal(st.nseats, 3);
    assert_int_equal(st.seats[1].bot_level, 3);
    assert_string_equal(st.seats[2].account, "Bo");
    assert_string_equal(st.seats[0].token_hash, HEX64);
    byte_buf b = {0};
    assert_int_equal(proto_rec_put_start(&b, &st), 0);
    assert_string_equal(text_of(&b), old_race); /* the bytes on disk do not change */
    byte_buf_free(&b);

    uint64_t game, ids[PROTO_PLAYERS_MAX];
    int n;
    assert_int_equal(proto_scan_start_ids(old_race, sizeof old_race - 1, &game, ids, &n),
                     0);
    assert_int_equal(game, 7);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 5);

    assert_int_equal(proto_dec_start_record(old_daily, sizeof old_daily - 1, &st), 0);
    assert_true(st.solo);
    assert_true(st.daily);
    assert_int_equal(st.daily_day, 20000);
    assert_int_equal(st.seed.kind, ENG_SEED_CLIENT);
    assert_int_equal(proto_rec_put_start(&b, &st), 0);
    assert_string_equal(text_of(&b), old_daily);
    byte_buf_free(&b);
}

/* The other kinds as the old templates wrote them: read, then written again. */
static void test_old_other_records(void **state) {
    (void)state;
    static const char moves[] =
        "{\"j\":\"moves\",\"game\":7,\"m\":{\"3\":\"udl\",\"5\":\"r\"}}\n";
    uint64_t game, id;
    proto_moves_part parts[PROTO_PLAYERS_MAX];
    int n;
    char *owned;
    assert_int_equal(
        proto_dec_moves_record(moves, sizeof moves - 1, &game, parts, &n, &owned), 0);
    assert_null(owned); /* read in place */
    assert_int_equal(game, 7);
    assert_int_equal(n, 2);
    assert_int_equal(parts[1].id, 5);
    byte_buf b = {0};
    assert_int_equal(proto_rec_put_moves(&b, game, parts, n), 0);
    assert_string_equal(text_of(&b), moves);
    byte_buf_free(&b);
    /* Spelled otherwise, still a moves record (the parser's copy). */
    static const char spaced[] =
        "{ \"j\": \"moves\", \"game\": 7, \"m\": {\"3\": \"ud\"} }";
    assert_int_equal(
        proto_dec_moves_record(spaced, sizeof spaced - 1, &game, parts, &n, &owned), 0);
    assert_non_null(owned);
    assert_int_equal(n, 1);
    assert_memory_equal(parts[0].letters, "ud", 2);
    free(owned);
    static const char bad[] = "{\"j\":\"moves\",\"game\":7,\"m\":{\"3\":\"ux\"}}\n";
    assert_int_equal(
        proto_dec_moves_record(bad, sizeof bad - 1, &game, parts, &n, &owned), -1);

    static const char seat[] =
        "{\"j\":\"seat\",\"game\":7,\"id\":3,\"event\":\"left\"}\n";
    char event[16];
    assert_int_equal(proto_dec_seat_record(seat, sizeof seat - 1, &game, &id, event), 0);
    assert_string_equal(event, "left");
    assert_int_equal(proto_rec_put_seat(&b, game, id, event), 0);
    assert_string_equal(text_of(&b), seat);
    byte_buf_free(&b);

    static const char head[] =
        "{\"j\":\"head\",\"next_game\":9,\"next_id\":12,\"compacted\":1796157879017}\n";
    uint64_t next_game, next_id;
    assert_int_equal(proto_dec_head_record(head, sizeof head - 1, &next_game, &next_id),
                     0);
    assert_int_equal(proto_rec_put_head(&b, next_game, next_id, 1796157879017), 0);
    assert_string_equal(text_of(&b), head);
    byte_buf_free(&b);

    static const char daily[] =
        "{\"j\":\"daily\",\"day\":20000,\"size\":4,\"seed\":\"" HEX64
        "\",\"salt\":\"" SALT "\"}\n";
    proto_daily_record d;
    assert_int_equal(proto_dec_daily_record(daily, sizeof daily - 1, &d), 0);
    assert_int_equal(proto_rec_put_daily(&b, &d), 0);
    assert_string_equal(text_of(&b), daily);
    byte_buf_free(&b);

    static const char begun[] =
        "{\"j\":\"daily_entry\",\"day\":20000,\"size\":4,\"name\":\"Bo\"}\n";
    static const char finished[] =
        "{\"j\":\"daily_entry\",\"day\":20000,\"size\":4,\"name\":\"Bo\",\"score\":120,"
        "\"max_tile\":16,\"moves\":30,\"end_ms\":1796157879017,\"game\":8}\n";
    proto_daily_entry_record e;
    assert_int_equal(proto_dec_daily_entry_record(begun, sizeof begun - 1, &e), 0);
    assert_false(e.finished);
    assert_int_equal(proto_rec_put_daily_entry(&b, &e), 0);
    assert_string_equal(text_of(&b), begun);
    byte_buf_free(&b);
    assert_int_equal(proto_dec_daily_entry_record(finished, sizeof finished - 1, &e), 0);
    assert_true(e.finished);
    assert_int_equal(e.game, 8);
    assert_int_equal(proto_rec_put_daily_entry(&b, &e), 0);
    assert_string_equal(text_of(&b), finished);
    byte_buf_free(&b);

    /* Kinds from the heads, without a parser. */
    assert_int_equal(proto_rec_kind_of(moves, sizeof moves - 1, &game), PROTO_REC_MOVES);
    assert_int_equal(proto_rec_kind_of(old_race, sizeof old_race - 1, &game),
                     PROTO_REC_START);
    assert_int_equal(game, 7);
    assert_int_equal(proto_rec_kind_of(head, sizeof head - 1, &game), PROTO_REC_OTHER);
    assert_int_equal(proto_rec_kind_parse(head, sizeof head - 1, &game), PROTO_REC_HEAD);
    assert_int_equal(proto_rec_kind_parse("{\"j\":", 5, &game), PROTO_REC_BAD);
    assert_int_equal(proto_rec_kind_parse(spaced, sizeof spaced - 1, &game),
                     PROTO_REC_MOVES);
    assert_true(proto_rec_is(daily, sizeof daily - 1, "daily"));
    assert_false(proto_rec_is(begun, sizeof begun - 1, "daily"));
    assert_true(proto_rec_is(begun, sizeof begun - 1, "daily_entry"));
}

/* A name with quotes, a backslash and control characters (message.c does not
 * let them in today; the format does not rely on it) is escaped as jansson
 * escapes it, read back the same, and hides no record structure. */
static void test_strings_escaped(void **state) {
    (void)state;
    static const char name[] = "a\"b\\c\x01\n{\"id\":9";
    proto_start_record st = {.game = 1,
                             .solo = true,
                             .settings = {.players = 1, .size = 4, .target = 2048},
                             .seed = eng_seed_client(3),
                             .salt = SALT,
                             .commit = COMMIT,
                             .nseats = 1};
    st.seats[0].id = 2;
    snprintf(st.seats[0].name, sizeof st.seats[0].name, "%s", name);
    snprintf(st.seats[0].account, sizeof st.seats[0].account, "%s", "x\"y");
    byte_buf b = {0};
    assert_int_equal(proto_rec_put_start(&b, &st), 0);
    const char *line = text_of(&b);
    assert_non_null(strstr(line, "\"name\":\"a\\\"b\\\\c\\u0001\\n{\\\"id\\\":9\""));
    assert_non_null(strstr(line, "\"account\":\"x\\\"y\""));
    assert_null(strchr(line, '\x01'));
    assert_int_equal(strchr(line, '\n') - line, (long)b.len - 2); /* one line */
    proto_start_record back;
    assert_int_equal(proto_dec_start_record(line, b.len - 1, &back), 0);
    assert_string_equal(back.seats[0].name, name);
    assert_string_equal(back.seats[0].account, "x\"y");
    /* The fast scan of seat ids is not fooled by the name's {"id": */
    uint64_t game, ids[PROTO_PLAYERS_MAX];
    int n;
    assert_int_equal(proto_scan_start_ids(line, b.len - 1, &game, ids, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 2);
    byte_buf_free(&b);

    proto_daily_entry_record e = {.day = 1, .size = 4};
    snprintf(e.name, sizeof e.name, "%s", "q\"\\\t");
    assert_int_equal(proto_rec_put_daily_entry(&b, &e), 0);
    proto_daily_entry_record e2;
    assert_int_equal(proto_dec_daily_entry_record(b.data, b.len, &e2), 0);
    assert_string_equal(e2.name, e.name);
    byte_buf_free(&b);

    assert_int_equal(proto_rec_put_rematch(&b, 1, "A\"B"), 0);
    assert_string_equal(text_of(&b),
                        "{\"j\":\"rematch\",\"game\":1,\"room\":\"A\\\"B\"}\n");
    byte_buf_free(&b);
}

/* An arena race's start record names its arena and race number (read back the
 * same, ids scanned as before); an older one without them reads as no arena. */
static void test_arena_start_record(void **state) {
    (void)state;
    static const char line[] =
        "{\"j\":\"start\",\"game\":9,\"room\":\"CD34\",\"size\":4,\"target\":8,"
        "\"time_limit\":150,\"seed\":\"" HEX64 "\",\"salt\":\"" SALT
        "\",\"commit\":\"" COMMIT
        "\",\"started\":5,\"rated\":true,\"arena\":\"AB12CD\",\"arena_race\":3,"
        "\"seats\":[{\"id\":3,\"name\":\"ann\",\"token\":\"" HEX64 "\"}]}\n";
    proto_start_record st;
    assert_int_equal(proto_dec_start_record(line, sizeof line - 1, &st), 0);
    assert_string_equal(st.settings.arena, "AB12CD");
    assert_int_equal(st.arena_race, 3);
    byte_buf b = {0};
    assert_int_equal(proto_rec_put_start(&b, &st), 0);
    assert_string_equal(text_of(&b), line);
    byte_buf_free(&b);
    uint64_t game, ids[PROTO_PLAYERS_MAX];
    int n;
    assert_int_equal(proto_scan_start_ids(line, sizeof line - 1, &game, ids, &n), 0);
    assert_int_equal(game, 9);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 3);
    assert_int_equal(proto_dec_start_record(old_race, sizeof old_race - 1, &st), 0);
    assert_string_equal(st.settings.arena, "");
    assert_int_equal(st.arena_race, 0);
}

/* The `arena` record: its exact line, read back to the same values, its code read
 * alone, and a record altered out of range refused. */
static void test_arena_record(void **state) {
    (void)state;
    proto_arena_rec_entrant rows[] = {
        {.id = 7,
         .name = "ann",
         .points = 5,
         .races = 3,
         .wins = 2,
         .streak = 1,
         .state = 2,
         .race = 4,
         .race_entrants = 2},
        {.id = 9, .name = "bo", .points = 0, .races = 1, .state = 1, .since_ms = 1500},
    };
    proto_arena_record a = {.code = "AB12CD",
                            .name = "Fri \"9\"",
                            .players = 4,
                            .size = 4,
                            .target = 2048,
                            .starts_ms = 1000,
                            .ends_ms = 301000,
                            .pair_wait_ms = 5000,
                            .bots_wait_ms = 15000,
                            .max_entrants = 10000,
                            .next_race = 5,
                            .count = 2,
                            .entrants = rows};
    byte_buf b = {0};
    assert_int_equal(proto_rec_put_arena(&b, &a), 0);
    static const char want[] =
        "{\"j\":\"arena\",\"arena\":\"AB12CD\",\"name\":\"Fri \\\"9\\\"\",\"players\":4,"
        "\"size\":4,\"target\":2048,\"starts\":1000,\"ends\":301000,\"pair_wait\":5000,"
        "\"bots_wait\":15000,\"max_entrants\":10000,\"next_race\":5,\"finished\":false,"
        "\"finished_at\":0,\"entrants\":[[7,\"ann\",5,3,2,1,2,false,0,4,2],"
        "[9,\"bo\",0,1,0,0,1,false,1500,0,0]]}\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    assert_true(proto_rec_is(b.data, b.len, "arena"));
    char code[PROTO_ROOM_MAX + 1];
    assert_int_equal(proto_arena_record_code(b.data, b.len, code), 0);
    assert_string_equal(code, "AB12CD");
    proto_arena_record back;
    assert_int_equal(proto_dec_arena_record(b.data, b.len, &back), 0);
    assert_string_equal(back.name, "Fri \"9\"");
    assert_int_equal(back.count, 2);
    assert_int_equal(back.next_race, 5);
    assert_int_equal(back.entrants[0].race, 4);
    assert_int_equal(back.entrants[0].state, 2);
    assert_string_equal(back.entrants[1].name, "bo");
    assert_int_equal(back.entrants[1].since_ms, 1500);
    assert_int_equal(back.nback, 0); /* none written: no member */
    free(back.entrants);
    /* The entrants to put back after a restart: a guest's token hash, an
     * account's name. */
    proto_arena_rec_back held[2] = {{.id = 9, .account = ""},
                                    {.id = 7, .account = "Ann"}};
    memset(held[0].token_hash, 'a', 64);
    a.back = held;
    a.nback = 2;
    b.len = 0;
    assert_int_equal(proto_rec_put_arena(&b, &a), 0);
    assert_int_equal(proto_dec_arena_record(b.data, b.len, &back), 0);
    assert_int_equal(back.nback, 2);
    assert_int_equal(back.back[0].id, 9);
    assert_string_equal(back.back[0].token_hash, held[0].token_hash);
    assert_string_equal(back.back[1].account, "Ann");
    assert_string_equal(back.back[1].token_hash, "");
    free(back.entrants);
    free(back.back);
    static const char *const bad[] = {
        "{\"j\":\"arena\",\"arena\":\"AB12CD\"}",
        "{\"j\":\"arena\",\"arena\":\"AB12CD\",\"name\":\"x\",\"players\":9,\"size\":4,"
        "\"target\":2048,\"starts\":1,\"ends\":2,\"pair_wait\":0,\"bots_wait\":0,"
        "\"max_entrants\":1,\"next_race\":1,\"finished\":false,\"finished_at\":0,"
        "\"entrants\":[]}",
        "{\"j\":\"arena\",\"arena\":\"AB12CD\",\"name\":\"x\",\"players\":2,\"size\":4,"
        "\"target\":2048,\"starts\":1,\"ends\":2,\"pair_wait\":0,\"bots_wait\":0,"
        "\"max_entrants\":1,\"next_race\":1,\"finished\":false,\"finished_at\":0,"
        "\"entrants\":[[1,\"a\",0,0,0,0,3,false,0,0,0]]}",
        "{\"j\":\"arena\",\"arena\":\"AB12CD\",\"name\":\"x\",\"players\":2,\"size\":4,"
        "\"target\":2048,\"starts\":1,\"ends\":2,\"pair_wait\":0,\"bots_wait\":0,"
        "\"max_entrants\":1,\"next_race\":1,\"finished\":false,\"finished_at\":0,"
        "\"entrants\":[],\"back\":[[1,\"abc\",\"\"]]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(proto_dec_arena_record(bad[i], strlen(bad[i]), &back), -1);
    byte_buf_free(&b);
}

/* The `arena_ev` records: each kind round trips; a bad one is refused. */
static void test_arena_events(void **state) {
    (void)state;
    proto_arena_event evs[5] = {
        {.kind = PROTO_ARENA_EV_IN,
         .name = "ann",
         .back = {.id = 7, .account = "Ann"},
         .at_ms = 5},
        {.kind = PROTO_ARENA_EV_OUT, .back = {.id = 9}},
        {.kind = PROTO_ARENA_EV_FORM, .race = 3, .n = 2, .ids = {7, 9}},
        {.kind = PROTO_ARENA_EV_RACE,
         .race = 3,
         .players = 4,
         .at_ms = 8,
         .n = 2,
         .ids = {7, 9},
         .places = {1, 3},
         .left = {false, true}},
        {.kind = PROTO_ARENA_EV_ABANDON, .race = 4, .at_ms = 9, .n = 1, .ids = {7}},
    };
    memset(evs[0].back.token_hash, 'b', 64);
    for (int i = 0; i < 5; i++) {
        snprintf(evs[i].code, sizeof evs[i].code, "AB12CD");
        byte_buf b = {0};
        assert_int_equal(proto_rec_put_arena_event(&b, &evs[i]), 0);
        assert_true(proto_rec_is(b.data, b.len, "arena_ev"));
        assert_false(proto_rec_is(b.data, b.len, "arena"));
        char code[PROTO_ROOM_MAX + 1];
        assert_int_equal(proto_arena_record_code(b.data, b.len, code), 0);
        assert_string_equal(code, "AB12CD");
        proto_arena_event back;
        assert_int_equal(proto_dec_arena_event(b.data, b.len, &back), 0);
        assert_int_equal(back.kind, evs[i].kind);
        assert_int_equal(back.n, evs[i].n);
        assert_int_equal(back.back.id, evs[i].back.id);
        byte_buf again = {0}; /* what was read writes the same line */
        assert_int_equal(proto_rec_put_arena_event(&again, &back), 0);
        assert_int_equal(again.len, b.len);
        assert_memory_equal(again.data, b.data, b.len);
        byte_buf_free(&again);
        byte_buf_free(&b);
    }
    static const char *const bad[] = {
        "{\"j\":\"arena_ev\",\"arena\":\"A\",\"ev\":\"nope\"}",
        "{\"j\":\"arena_ev\",\"arena\":\"A\",\"ev\":\"form\",\"race\":1,\"ids\":[]}",
        "{\"j\":\"arena_ev\",\"arena\":\"A\",\"ev\":\"race\",\"race\":1,"
        "\"places\":[[1,9,false]],\"players\":2,\"at\":0}",
        "{\"j\":\"arena_ev\",\"arena\":\"A\",\"ev\":\"in\",\"id\":1,\"name\":\"\","
        "\"token_hash\":\"\",\"account\":\"\",\"at\":0}",
    };
    proto_arena_event e;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(proto_dec_arena_event(bad[i], strlen(bad[i]), &e), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_record),
        cmocka_unit_test(test_arena_events),
        cmocka_unit_test(test_arena_start_record),
        cmocka_unit_test(test_old_start_records),
        cmocka_unit_test(test_old_other_records),
        cmocka_unit_test(test_strings_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
