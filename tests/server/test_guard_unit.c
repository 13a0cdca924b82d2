/* test_guard_unit.c - server/guard.c in process: failed resumes per connection and per
 * address, IPv6 by /64, and a bounded number of remembered addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "guard.h"

static srv S;
static uv_loop_t loop;

static int setup(void **state) {
    memset(&S, 0, sizeof S);
    assert_int_equal(uv_loop_init(&loop), 0);
    S.loop = &loop;
    S.cfg.resume_tries = GUARD_RESUME_TRIES;
    S.cfg.resume_burst = GUARD_RESUME_BURST;
    S.cfg.resume_per_min = GUARD_RESUME_PER_MIN;
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
    assert_int_equal(S.guard_active, 65536);
    assert_int_equal(addr_size(&S.addrs), 65536);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_address_gets_its_burst_then_is_throttled,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ipv6_counts_by_64, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remembered_addresses_are_bounded, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
