/* test_guard_unit.c - server/delivery/guard.c in process: failed resumes per connection
 * and per address, IPv6 by /64, games per address, each address's share of the
 * resume-code budget, and a bounded number of remembered addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "guard.h"
#include "resume.h"

static srv S;
static uv_loop_t loop;
static srv_config cfg; /* S keeps a pointer to it */

static int setup(void **state) {
    assert_int_equal(uv_loop_init(&loop), 0);
    cfg = (srv_config){.resume_tries = GUARD_RESUME_TRIES,
                       .resume_burst = GUARD_RESUME_BURST,
                       .resume_per_min = GUARD_RESUME_PER_MIN,
                       .max_games_per_min = GUARD_GAMES_PER_MIN};
    srv_init(&S, &loop, &cfg, NULL);
    srv_log_set_level(SRV_LOG_ERROR);
    return 0;
}

static int teardown(void **state) {
    guard_free(&S);
    assert_null(S.addrs); /* nothing is left behind */
    assert_int_equal(S.guard_active, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    return 0;
}

/* A connection as guard.c sees it: its server, address and name. */
static void fake(conn *c, const unsigned char *addr, size_t len) {
    memset(c, 0, sizeof *c);
    c->srv = &S;
    memcpy(c->addr, addr, len);
    c->addr_len = (uint8_t)len;
}

/* Fails resumes on fresh connections from addr until the address is
 * throttled; returns how many were allowed a look-up. */
static int fail_until_throttled(const unsigned char *addr, size_t len) {
    int allowed = 0;
    for (int k = 0; k < 1000; k++) {
        conn c;
        fake(&c, addr, len);
        for (int i = 0; i < GUARD_RESUME_TRIES; i++) {
            if (guard_resume_check(&c) == GUARD_THROTTLED) return allowed;
            allowed++;
            bool closed = guard_resume_failed(&c);
            assert_int_equal(closed, i == GUARD_RESUME_TRIES - 1);
        }
    }
    fail_msg("never throttled");
    return -1;
}

static void test_address_gets_its_burst_then_is_throttled(void **state) {
    static const unsigned char a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
    assert_int_equal(fail_until_throttled(a, 4), GUARD_RESUME_BURST);
    conn other;
    fake(&other, b, 4);
    assert_int_equal(guard_resume_check(&other), GUARD_OK); /* its neighbour is not */
    /* An IPv4 client seen through an IPv6 socket is the same address. */
    unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
    conn same;
    fake(&same, mapped, 16);
    assert_int_equal(guard_resume_check(&same), GUARD_THROTTLED);
}

static void test_ipv6_counts_by_64(void **state) {
    unsigned char x[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1};
    assert_int_equal(fail_until_throttled(x, 16), GUARD_RESUME_BURST);
    x[15] = 0x42; /* another host of the same /64 */
    conn c;
    fake(&c, x, 16);
    assert_int_equal(guard_resume_check(&c), GUARD_THROTTLED);
    x[7] = 2; /* another /64 */
    fake(&c, x, 16);
    assert_int_equal(guard_resume_check(&c), GUARD_OK);
}

/* However many addresses fail, the server remembers at most 65536 of them. */
static void test_remembered_addresses_are_bounded(void **state) {
    for (uint32_t i = 0; i < 70000; i++) {
        unsigned char a[4] = {10, (unsigned char)(i >> 16), (unsigned char)(i >> 8),
                              (unsigned char)i};
        conn c;
        fake(&c, a, 4);
        guard_resume_failed(&c);
        assert_true(S.guard_active <= 65536);
    }
    /* Addresses that start games are remembered in the same bounded list. */
    for (uint32_t i = 0; i < 70000; i++) {
        unsigned char a[4] = {11, (unsigned char)(i >> 16), (unsigned char)(i >> 8),
                              (unsigned char)i};
        conn c;
        fake(&c, a, 4);
        assert_int_equal(guard_game_start(&c), 0);
        assert_true(S.guard_active <= 65536);
    }
    assert_int_equal(S.guard_active, 65536);
    assert_int_equal(addr_size(&S.addrs), 65536);
}

/* An address gets a burst of --max-games-per-min games, then waits; the
 * refusal says how long; its neighbour and the same address's other
 * connections are told apart correctly. The loop's clock stands still here. */
static void test_games_burst_then_refused(void **state) {
    static const unsigned char a[4] = {192, 0, 2, 7}, b[4] = {192, 0, 2, 8};
    conn c, other, again;
    fake(&c, a, 4);
    for (int i = 0; i < GUARD_GAMES_PER_MIN; i++)
        assert_int_equal(guard_game_start(&c), 0);
    unsigned wait_s = guard_game_start(&c);
    /* One game comes back every 60 / 120 s: the wait rounds up to 1 s. */
    assert_int_equal(wait_s, 1);
    fake(&again, a, 4); /* another connection of the same address */
    assert_int_equal(guard_game_start(&again), 1);
    fake(&other, b, 4);
    assert_int_equal(guard_game_start(&other), 0);
    /* 0 turns the limit off. */
    cfg.max_games_per_min = 0;
    assert_int_equal(guard_game_start(&c), 0);
    cfg.max_games_per_min = GUARD_GAMES_PER_MIN;
}

/* A connection counted in the address table, as conn.c counts every one. */
static void counted(conn *c, const unsigned char *addr, size_t len) {
    fake(c, addr, len);
    unsigned char key[16];
    assert_true(addr_add(&S.addrs, key, addr_key(addr, len, key)) > 0);
}

static void uncounted(const conn *c) {
    unsigned char key[16];
    addr_remove(&S.addrs, key, addr_key(c->addr, c->addr_len, key));
}

/* One address takes at most its share of the server's resume-code attempts;
 * a throttled address takes none; the rest is left to the others. */
static void test_code_attempts_shared_between_addresses(void **state) {
    static const unsigned char guesser[4] = {198, 51, 100, 1},
                               spammer[4] = {198, 51, 100, 2},
                               victim[4] = {198, 51, 100, 3},
                               late_addr[4] = {198, 51, 100, 4};
    uv_update_time(&loop); /* one window of the server-wide budget */
    /* The spammer's address is throttled first: it then spends nothing. */
    fail_until_throttled(spammer, 4);
    conn sp;
    counted(&sp, spammer, 4);
    for (int i = 0; i < 100; i++)
        assert_int_equal(guard_code_check(&sp), GUARD_THROTTLED);
    /* The guesser gets its burst, then is told to wait. */
    conn g;
    counted(&g, guesser, 4);
    for (int i = 0; i < RESUME_ADDR_BURST; i++)
        assert_int_equal(guard_code_check(&g), GUARD_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(guard_code_check(&g), GUARD_ADDR_BUSY);
    /* What is left of the second goes to the others, then nobody gets one. */
    conn v;
    counted(&v, victim, 4);
    for (int i = 0; i < RESUME_ATTEMPTS_PER_S - RESUME_ADDR_BURST; i++)
        assert_int_equal(guard_code_check(&v), GUARD_OK);
    conn late;
    counted(&late, late_addr, 4);
    assert_int_equal(guard_code_check(&late), GUARD_SERVER_BUSY);
    uncounted(&sp);
    uncounted(&g);
    uncounted(&v);
    uncounted(&late);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_address_gets_its_burst_then_is_throttled,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ipv6_counts_by_64, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remembered_addresses_are_bounded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_games_burst_then_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_code_attempts_shared_between_addresses,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
