/* test_addr_unit.c - the per-address connection table behind --max-per-ip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>

#include <cmocka.h>

#include <string.h>

#include "addr.h"

static void test_counts_per_address(void **state) {
    addr_entry *t = NULL;
    const unsigned char a[4] = {127, 0, 0, 1}, b[4] = {10, 0, 0, 7};
    assert_int_equal(addr_count(&t, a, 4), 0);
    assert_int_equal(addr_add(&t, a, 4), 1);
    assert_int_equal(addr_add(&t, a, 4), 2);
    assert_int_equal(addr_add(&t, b, 4), 1);
    assert_int_equal(addr_count(&t, a, 4), 2);
    assert_int_equal(addr_size(&t), 2);
    addr_remove(&t, a, 4);
    assert_int_equal(addr_count(&t, a, 4), 1);
    addr_remove(&t, a, 4);
    /* The last connection gone, the entry goes: the table does not grow with
     * every address ever seen. */
    assert_int_equal(addr_count(&t, a, 4), 0);
    assert_int_equal(addr_size(&t), 1);
    addr_remove(&t, a, 4); /* an address not counted: nothing happens */
    assert_int_equal(addr_size(&t), 1);
    addr_clear(&t);
    assert_null(t);
}

/* An IPv4 address and an IPv6 address that starts with the same bytes are
 * different keys. */
static void test_ipv4_and_ipv6_differ(void **state) {
    addr_entry *t = NULL;
    unsigned char v6[16] = {127, 0, 0, 1};
    const unsigned char v4[4] = {127, 0, 0, 1};
    assert_int_equal(addr_add(&t, v4, 4), 1);
    assert_int_equal(addr_add(&t, v6, 16), 1);
    assert_int_equal(addr_count(&t, v4, 4), 1);
    assert_int_equal(addr_count(&t, v6, 16), 1);
    addr_clear(&t);
}

/* Many addresses, each counted and released: lookups stay right as the
 * hash grows and shrinks. */
static void test_many_addresses(void **state) {
    addr_entry *t = NULL;
    enum { N = 20000 };
    for (unsigned i = 0; i < N; i++) {
        unsigned char a[16] = {0x20, 0x01, 0x0d, 0xb8};
        memcpy(a + 12, &i, sizeof i);
        assert_int_equal(addr_add(&t, a, 16), 1);
        if (i % 2) assert_int_equal(addr_add(&t, a, 16), 2);
    }
    assert_int_equal(addr_size(&t), N);
    for (unsigned i = 0; i < N; i++) {
        unsigned char a[16] = {0x20, 0x01, 0x0d, 0xb8};
        memcpy(a + 12, &i, sizeof i);
        assert_int_equal(addr_count(&t, a, 16), i % 2 ? 2 : 1);
        addr_remove(&t, a, 16);
    }
    assert_int_equal(addr_size(&t), N / 2);
    addr_clear(&t);
    assert_int_equal(addr_size(&t), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_per_address),
        cmocka_unit_test(test_ipv4_and_ipv6_differ),
        cmocka_unit_test(test_many_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
