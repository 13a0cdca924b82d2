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

/* Connections count per IPv4 address (mapped or not) and per IPv6 /64: two
 * addresses of one /64 share a count, the next /64 has its own. */
static void test_keys_group_a_network(void **state) {
    addr_entry *table = NULL;
    unsigned char key[16];
    const unsigned char a[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1,
                                 0,    0,    0,    0,    0, 0, 0, 1};
    unsigned char b[16], other[16];
    memcpy(b, a, 16);
    b[15] = 0xfe; /* same /64, another host */
    memcpy(other, a, 16);
    other[7] = 2; /* the next /64 */
    assert_int_equal(addr_key(a, 16, key), 8);
    assert_int_equal(addr_add(&table, key, addr_key(a, 16, key)), 1);
    assert_int_equal(addr_add(&table, key, addr_key(b, 16, key)), 2);
    assert_int_equal(addr_add(&table, key, addr_key(other, 16, key)), 1);

    const unsigned char v4[4] = {192, 0, 2, 7};
    const unsigned char mapped[16] = {0, 0, 0,    0,    0,   0, 0, 0,
                                      0, 0, 0xff, 0xff, 192, 0, 2, 7};
    assert_int_equal(addr_key(mapped, 16, key), 4);
    assert_memory_equal(key, v4, 4);
    assert_int_equal(addr_add(&table, key, addr_key(v4, 4, key)), 1);
    assert_int_equal(addr_add(&table, key, addr_key(mapped, 16, key)), 2);
    assert_int_equal(addr_key(v4, 0, key), 0);

    addr_remove(&table, key, addr_key(b, 16, key));
    assert_int_equal(addr_count(&table, key, addr_key(a, 16, key)), 1);
    addr_clear(&table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_per_address),
        cmocka_unit_test(test_ipv4_and_ipv6_differ),
        cmocka_unit_test(test_many_addresses),
        cmocka_unit_test(test_keys_group_a_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
