/* test_cidr.c - address ranges from text (--metrics-from), and which addresses they hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "cidr.h"

/* Is the address written as text (IPv4 or IPv6) in the list? */
static bool has(const proto_cidr_list *l, const char *text) {
    uint8_t a[16];
    if (inet_pton(AF_INET, text, a) == 1) return proto_cidr_list_match(l, a, 4);
    assert_int_equal(inet_pton(AF_INET6, text, a), 1);
    return proto_cidr_list_match(l, a, 16);
}

static void test_private_default(void **state) {
    proto_cidr_list l;
    assert_int_equal(proto_cidr_list_parse(PROTO_CIDR_PRIVATE, &l, NULL, 0), 0);
    assert_int_equal(l.n, 6);
    const char *in[] = {"127.0.0.1",        "127.255.0.9",    "::1",
                        "10.1.2.3",         "172.16.0.1",     "172.31.255.255",
                        "192.168.7.7",      "fc00::1",        "fdff::5",
                        "::ffff:127.0.0.2", "::ffff:10.0.0.1"};
    const char *out[] = {
        "128.0.0.1", "8.8.8.8", "172.15.255.255", "172.32.0.0",  "192.169.0.1",
        "11.0.0.0",  "::2",     "fe00::1",        "2001:db8::1", "::ffff:8.8.8.8",
        "::7f00:1"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        if (!has(&l, in[i])) fail_msg("%s should be in the default list", in[i]);
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        if (has(&l, out[i])) fail_msg("%s should not be in the default list", out[i]);
}

static void test_hosts_prefixes_and_spaces(void **state) {
    proto_cidr_list l;
    assert_int_equal(
        proto_cidr_list_parse(" 127.0.0.1 , 10.9.8.7/8,2001:db8::/33 ", &l, NULL, 0), 0);
    assert_int_equal(l.n, 3);
    assert_true(has(&l, "127.0.0.1"));
    assert_false(has(&l, "127.0.0.2")); /* a bare address is one host */
    assert_true(has(&l, "10.200.0.1")); /* host bits of 10.9.8.7/8 are ignored */
    assert_true(has(&l, "2001:db8:7fff::1"));
    assert_false(has(&l, "2001:db8:8000::1"));
    assert_int_equal(proto_cidr_list_parse("0.0.0.0/0,::/0", &l, NULL, 0), 0);
    assert_true(has(&l, "1.2.3.4"));
    assert_true(has(&l, "2001:db8::1"));
    uint8_t odd[8] = {0};
    assert_false(proto_cidr_list_match(&l, odd, 8));
    assert_false(proto_cidr_list_match(&l, odd, 0));
}

static void test_bad_lists(void **state) {
    proto_cidr_list l = {.n = 7};
    char bad[32];
    const char *cases[][2] = {
        {"", ""},
        {"127.0.0.1,", ""},
        {"10.0.0.0/33", "10.0.0.0/33"},
        {"::1/129", "::1/129"},
        {"10.0.0.0/", "10.0.0.0/"},
        {"10.0.0.0/-1", "10.0.0.0/-1"},
        {"10.0.0.0/8x", "10.0.0.0/8x"},
        {"10/8", "10/8"},
        {"127.0.0.1,localhost", "localhost"},
        {"10.0.0.0 /8", "10.0.0.0 /8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (proto_cidr_list_parse(cases[i][0], &l, bad, sizeof bad) != -1)
            fail_msg("'%s' parsed", cases[i][0]);
        assert_string_equal(bad, cases[i][1]);
        assert_int_equal(l.n, 7); /* untouched */
    }
    /* At most PROTO_CIDR_MAX ranges. */
    char many[PROTO_CIDR_MAX * 12 + 16] = "";
    for (int i = 0; i <= PROTO_CIDR_MAX; i++)
        strcat(many, i ? ",10.0.0.1" : "10.0.0.1");
    assert_int_equal(proto_cidr_list_parse(many, &l, bad, sizeof bad), -1);
    many[strlen(many) - strlen(",10.0.0.1")] = '\0';
    assert_int_equal(proto_cidr_list_parse(many, &l, bad, sizeof bad), 0);
    assert_int_equal(l.n, PROTO_CIDR_MAX);
}

/* --proxy-from's ranges: IPv4 and IPv6 prefixes, an address alone, IPv4-mapped
 * addresses as their IPv4, and lists that are not ranges refused whole. */
static void test_cidr_ranges(void **state) {
    (void)state;
    proto_cidr_list l;
    assert_int_equal(
        proto_cidr_list_parse("10.0.0.0/8, 192.168.1.7,fd00::/8", &l, NULL, 0), 0);
    assert_int_equal(l.n, 3);
    static const unsigned char in10[4] = {10, 200, 3, 4}, out11[4] = {11, 0, 0, 1},
                               host[4] = {192, 168, 1, 7}, next[4] = {192, 168, 1, 8};
    assert_true(proto_cidr_list_match(&l, in10, 4));
    assert_false(proto_cidr_list_match(&l, out11, 4));
    assert_true(proto_cidr_list_match(&l, host, 4));
    assert_false(proto_cidr_list_match(&l, next, 4));
    unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
    assert_true(proto_cidr_list_match(&l, mapped, 16));
    unsigned char fd[16] = {0xfd, 1, 2};
    assert_true(proto_cidr_list_match(&l, fd, 16));
    fd[0] = 0xfc;
    assert_false(proto_cidr_list_match(&l, fd, 16));
    /* Prefixes that are not whole bytes. */
    assert_int_equal(proto_cidr_list_parse("172.16.0.0/12", &l, NULL, 0), 0);
    static const unsigned char in172[4] = {172, 31, 255, 255},
                               out172[4] = {172, 32, 0, 0};
    assert_true(proto_cidr_list_match(&l, in172, 4));
    assert_false(proto_cidr_list_match(&l, out172, 4));
    assert_int_equal(proto_cidr_list_parse("0.0.0.0/0", &l, NULL, 0), 0);
    assert_true(proto_cidr_list_match(&l, out11, 4));
    assert_false(
        proto_cidr_list_match(&l, fd, 16)); /* an IPv4 range holds no IPv6 address */
    static const char *const bad[] = {"",  "10.0.0.0/33", "10.0.0/8",    "::1/129",
                                      "x", "10.0.0.0/",   "10.0.0.0/8,", "1.2.3.4/-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (proto_cidr_list_parse(bad[i], &l, NULL, 0) == 0)
            fail_msg("accepted \"%s\"", bad[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_private_default),
        cmocka_unit_test(test_hosts_prefixes_and_spaces),
        cmocka_unit_test(test_bad_lists),
        cmocka_unit_test(test_cidr_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
