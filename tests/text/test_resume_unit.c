/* test_resume_unit.c - resume codes in-process: derivation, the index, validity and the
 * server-wide pace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "command.h"
#include "journal.h"
#include "resume.h"
#include "room.h"

#define PLAYERS 1000

static game S;
static uv_loop_t loop;
static room rooms[2];
static srv_player players[PLAYERS];

/* Player i sits in seat i % 8 of room i % 2, disconnected, within its grace. */
static int setup(void **state) {
    (void)state;
    memset(&S, 0, sizeof S);
    assert_int_equal(uv_loop_init(&loop), 0);
    S.loop = &loop;
    memset(rooms, 0, sizeof rooms);
    memset(players, 0, sizeof players);
    for (int k = 0; k < 2; k++) {
        snprintf(rooms[k].code, sizeof rooms[k].code, "ROOM%d", k);
        rooms[k].state = ROOM_RUNNING;
        rooms[k].nseats = 8;
    }
    for (int i = 0; i < PLAYERS; i++) {
        srv_player *p = &players[i];
        p->game = &S;
        p->id = (uint64_t)i + 1;
        snprintf(p->token, sizeof p->token, "%032x", i * 2654435761u);
        p->room = &rooms[i % 2];
        p->seat = i % 8;
    }
    return 0;
}

static void seat_waiting(srv_player *p) {
    room_seat *seat = &p->room->seats[p->seat];
    seat->player = p;
    seat->connected = false;
    seat->grace_until = uv_now(&loop) + 1000;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < PLAYERS; i++)
        resume_code_forget(&players[i]);
    assert_int_equal(uv_loop_close(&loop), 0);
    return 0;
}

static void test_code_is_8_unambiguous_characters(void **state) {
    (void)state;
    srv_player *p = &players[0];
    resume_code_assign(p);
    assert_int_equal(strlen(resume_code_of(p)), PROTO_RESUME_CODE_LEN);
    for (int i = 0; i < PROTO_RESUME_CODE_LEN; i++) {
        assert_non_null(strchr(PROTO_RESUME_ALPHABET, resume_code_of(p)[i]));
        assert_null(strchr("ILOU", resume_code_of(p)[i]));
    }
    /* The same seat gives the same code; another seat or room another. */
    char first[9];
    snprintf(first, sizeof first, "%s", resume_code_of(p));
    resume_code_assign(p);
    assert_string_equal(resume_code_of(p), first);
    p->seat = 1;
    resume_code_assign(p);
    assert_string_not_equal(resume_code_of(p), first);
    p->seat = 0;
    p->room = &rooms[1];
    resume_code_assign(p);
    assert_string_not_equal(resume_code_of(p), first);
    /* The old code no longer finds anyone. */
    seat_waiting(p);
    assert_null(resume_code_find(&S, first));
    assert_ptr_equal(resume_code_find(&S, resume_code_of(p)), p);
}

static void test_found_only_while_waiting_out_the_grace(void **state) {
    (void)state;
    srv_player *p = &players[2];
    resume_code_assign(p);
    char code[9];
    snprintf(code, sizeof code, "%s", resume_code_of(p));
    seat_waiting(p);
    assert_ptr_equal(resume_code_find(&S, code), p);
    room_seat *seat = &p->room->seats[p->seat];
    seat->connected = true; /* back on its own */
    assert_null(resume_code_find(&S, code));
    seat->connected = false;
    seat->grace_until = uv_now(&loop); /* the grace period is over */
    assert_null(resume_code_find(&S, code));
    seat->grace_until = uv_now(&loop) + 1000;
    p->room->state = ROOM_ENDED;
    assert_null(resume_code_find(&S, code));
    p->room->state = ROOM_RUNNING;
    seat->player = &players[3]; /* the seat is someone else's */
    assert_null(resume_code_find(&S, code));
    seat_waiting(p);
    resume_code_forget(p);
    assert_string_equal(resume_code_of(p), "");
    assert_null(resume_code_find(&S, code));
    resume_code_forget(p); /* twice is harmless */
}

static void test_many_players_each_found(void **state) {
    (void)state;
    for (int i = 0; i < PLAYERS; i++)
        resume_code_assign(&players[i]);
    int found = 0;
    for (int i = 0; i < PLAYERS; i++) {
        seat_waiting(&players[i]);
        if (resume_code_find(&S, resume_code_of(&players[i])) == &players[i]) found++;
    }
    /* Each is found while it holds its seat (test players share seats). */
    assert_int_equal(found, PLAYERS);
    for (int i = 0; i < PLAYERS; i++)
        assert_int_equal(strlen(resume_code_of(&players[i])), PROTO_RESUME_CODE_LEN);
    /* Forgetting every other one leaves the rest indexed. */
    for (int i = 0; i < PLAYERS; i += 2)
        resume_code_forget(&players[i]);
    for (int i = 1; i < PLAYERS; i += 2) {
        seat_waiting(&players[i]);
        assert_ptr_equal(resume_code_find(&S, resume_code_of(&players[i])), &players[i]);
    }
}

static void test_attempts_paced_server_wide(void **state) {
    (void)state;
    /* The loop's clock stands still here: one window. */
    uv_update_time(&loop);
    int allowed = 0;
    for (int i = 0; i < 3 * RESUME_ATTEMPTS_PER_S; i++)
        allowed += resume_attempt_allowed(&S);
    assert_int_equal(allowed, RESUME_ATTEMPTS_PER_S);
}

/* The journal keeps only the token's hash: a seat restored from it must get back the
 * code its player saw before the restart. */
static void test_code_survives_a_restart(void **state) {
    (void)state;
    srv_player *before = &players[3];
    resume_code_assign(before);
    char seen[9];
    snprintf(seen, sizeof seen, "%s", resume_code_of(before));
    assert_int_equal(strlen(seen), PROTO_RESUME_CODE_LEN);
    resume_code_forget(before);

    srv_player restored = *before;
    restored.resume = NULL; /* forgotten above: it holds no code */
    char hash[65];
    assert_int_equal(journal_token_hash(before->token, hash), 0);
    restored.token_hash = hash;
    restored.token[0] = '\0';
    resume_code_assign(&restored);
    assert_string_equal(resume_code_of(&restored), seen);
    /* Without a token or its hash there is nothing to derive a code from. */
    resume_code_forget(&restored);
    restored.token_hash = NULL;
    resume_code_assign(&restored);
    assert_string_equal(resume_code_of(&restored), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_code_is_8_unambiguous_characters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_code_survives_a_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_found_only_while_waiting_out_the_grace,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_players_each_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attempts_paced_server_wide, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
