/* test_addr_unit.c - the per-address connection table behind --max-per-ip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>

#include <cmocka.h>

#include <string.h>

#include "addr.h"
#include "cidr.h"

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

/* --proxy-from's ranges: IPv4 and IPv6 prefixes, an address alone, IPv4-mapped
 * addresses as their IPv4, and lists that are not ranges refused whole. */
static void test_cidr_ranges(void **state) {
    srv_cidr_list l;
    assert_int_equal(srv_cidr_parse(&l, "10.0.0.0/8, 192.168.1.7,fd00::/8"), 0);
    assert_int_equal(l.n, 3);
    static const unsigned char in10[4] = {10, 200, 3, 4}, out11[4] = {11, 0, 0, 1},
                               host[4] = {192, 168, 1, 7}, next[4] = {192, 168, 1, 8};
    assert_true(srv_cidr_match(&l, in10, 4));
    assert_false(srv_cidr_match(&l, out11, 4));
    assert_true(srv_cidr_match(&l, host, 4));
    assert_false(srv_cidr_match(&l, next, 4));
    unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
    assert_true(srv_cidr_match(&l, mapped, 16));
    unsigned char fd[16] = {0xfd, 1, 2};
    assert_true(srv_cidr_match(&l, fd, 16));
    fd[0] = 0xfc;
    assert_false(srv_cidr_match(&l, fd, 16));
    /* Prefixes that are not whole bytes. */
    assert_int_equal(srv_cidr_parse(&l, "172.16.0.0/12"), 0);
    static const unsigned char in172[4] = {172, 31, 255, 255},
                               out172[4] = {172, 32, 0, 0};
    assert_true(srv_cidr_match(&l, in172, 4));
    assert_false(srv_cidr_match(&l, out172, 4));
    assert_int_equal(srv_cidr_parse(&l, "0.0.0.0/0"), 0);
    assert_true(srv_cidr_match(&l, out11, 4));
    assert_false(srv_cidr_match(&l, fd, 16)); /* an IPv4 range holds no IPv6 address */
    static const char *const bad[] = {"",  "10.0.0.0/33", "10.0.0/8",    "::1/129",
                                      "x", "10.0.0.0/",   "10.0.0.0/8,", "1.2.3.4/-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (srv_cidr_parse(&l, bad[i]) == 0) fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(l.n, 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_per_address),
        cmocka_unit_test(test_cidr_ranges),
        cmocka_unit_test(test_ipv4_and_ipv6_differ),
        cmocka_unit_test(test_many_addresses),
        cmocka_unit_test(test_keys_group_a_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
