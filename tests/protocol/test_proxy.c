/* test_proxy.c - the PROXY protocol parser: versions 1 and 2, whole or split anyhow,
 * LOCAL and UNKNOWN, TLVs skipped, bad and oversize headers refused as soon as they can
 * be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* What one run over a byte string gave. */
typedef struct run {
    proto_proxy_status status;
    size_t used; /* bytes of the input the header took (DONE), or where it failed */
    proto_proxy_source src;
} run;

/* Feeds data in chunks of `chunk` bytes (0: in one piece); stops at DONE or
 * INVALID. used counts from the start of data. */
static run feed(const void *data, size_t n, size_t chunk) {
    proto_proxy p;
    proto_proxy_init(&p);
    run r = {.status = PROTO_PROXY_MORE};
    const unsigned char *b = data;
    size_t off = 0;
    do {
        size_t k = chunk && n - off > chunk ? chunk : n - off;
        size_t used = 0;
        r.status = proto_proxy_feed(&p, b + off, k, &used, &r.src);
        if (r.status == PROTO_PROXY_MORE) assert_int_equal(used, k);
        r.used = off + used;
        off += k;
    } while (r.status == PROTO_PROXY_MORE && off < n);
    return r;
}

/* Whole, byte by byte, and in chunks of 2, 3, 7 and 16: the same outcome. */
static run feed_every_way(const void *data, size_t n) {
    run whole = feed(data, n, 0);
    static const size_t chunks[] = {1, 2, 3, 7, 16};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        run r = feed(data, n, chunks[i]);
        assert_int_equal(r.status, whole.status);
        if (whole.status != PROTO_PROXY_DONE) continue;
        assert_int_equal(r.used, whole.used);
        assert_int_equal(r.src.kind, whole.src.kind);
        assert_int_equal(r.src.port, whole.src.port);
        assert_memory_equal(r.src.addr, whole.src.addr, sizeof r.src.addr);
    }
    return whole;
}

static run feed_str(const char *s) {
    return feed_every_way(s, strlen(s));
}

static void test_v1_tcp4(void **state) {
    const char *s = "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n";
    run r = feed_str(s);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, strlen("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"));
    assert_int_equal(r.src.version, 1);
    assert_int_equal(r.src.kind, PROTO_PROXY_IPV4);
    assert_memory_equal(r.src.addr, "\xc0\xa8\x00\x01", 4);
    assert_int_equal(r.src.port, 56324);
}

static void test_v1_tcp6(void **state) {
    run r = feed_str("PROXY TCP6 2001:db8::7 ::1 65535 0\r\n{\"type\":\"hello\"}\n");
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.src.kind, PROTO_PROXY_IPV6);
    assert_memory_equal(r.src.addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x07", 16);
    assert_int_equal(r.src.port, 65535);
    /* The longest line the protocol has: 104 bytes, full IPv6 addresses. */
    char longest[128];
    snprintf(longest, sizeof longest, "PROXY TCP6 %s %s 65535 65535\r\n",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    assert_int_equal(strlen(longest), 104);
    r = feed_str(longest);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, 104);
}

static void test_v1_unknown(void **state) {
    run r = feed_str("PROXY UNKNOWN\r\nhello");
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, 15);
    assert_int_equal(r.src.kind, PROTO_PROXY_UNKNOWN);
    /* Anything before the CRLF is ignored, up to the 107-byte worst case. */
    char worst[128];
    snprintf(worst, sizeof worst, "PROXY UNKNOWN %s %s 65535 65535\r\n",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
             "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    assert_int_equal(strlen(worst), PROTO_PROXY_V1_MAX);
    r = feed_str(worst);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.src.kind, PROTO_PROXY_UNKNOWN);
    assert_int_equal(r.used, PROTO_PROXY_V1_MAX);
}

static void test_v1_invalid(void **state) {
    static const char *const bad[] = {
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",       /* bare LF */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rx\n",    /* lone CR */
        "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",    /* leading zero */
        "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",   /* octet out of range */
        "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",       /* three octets */
        "PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n",   /* five octets */
        "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", /* port out of range */
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",    /* leading zero in a port */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",       /* a field missing */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",   /* a field too many */
        "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",    /* two spaces */
        "PROXY TCP4 ::1 ::1 1 2\r\n",             /* family and address disagree */
        "PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n",     /* family and address disagree */
        "PROXY TCP6 ::g ::1 1 2\r\n",             /* not hex */
        "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",     /* no such protocol */
        "PROXY UNKNOWNX\r\n",                     /* no such protocol */
        "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n",    /* two spaces */
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\t\r\n",   /* a control byte */
        "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",     /* lower case */
        "PROXY\r\n",                              /* nothing but the name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run r = feed_str(bad[i]);
        if (r.status != PROTO_PROXY_INVALID) fail_msg("accepted: %s", bad[i]);
    }
}

/* A wrong start is refused at once, without waiting for a line end. */
static void test_refused_early(void **state) {
    run r = feed("GET / HTTP/1.1", 14, 0);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
    r = feed("{", 1, 0);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
    r = feed("PROXZ", 5, 0);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
    r = feed("\r\n\r\n\0\r\nQUIX", 12, 0);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
    /* A prefix that may still become a header is not. */
    r = feed("PROXY TCP4 1.2.3.4", 18, 0);
    assert_int_equal(r.status, PROTO_PROXY_MORE);
    r = feed("\r\n\r\n\0\r\n", 7, 0);
    assert_int_equal(r.status, PROTO_PROXY_MORE);
}

/* No CRLF within 107 bytes: invalid at the 107th, whatever follows. */
static void test_v1_oversize(void **state) {
    char line[300];
    memset(line, 'x', sizeof line);
    memcpy(line, "PROXY UNKNOWN ", 14);
    run r = feed_every_way(line, sizeof line);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
    r = feed(line, PROTO_PROXY_V1_MAX - 1, 0);
    assert_int_equal(r.status, PROTO_PROXY_MORE);
    r = feed(line, PROTO_PROXY_V1_MAX, 0);
    assert_int_equal(r.status, PROTO_PROXY_INVALID);
}

/* A version 2 header: signature, version/command, family/transport, length,
 * then body. Returns the header's length. */
static size_t v2(unsigned char *out, unsigned char ver_cmd, unsigned char fam,
                 const void *body, size_t len) {
    memcpy(out, PROTO_PROXY_V2_SIG, PROTO_PROXY_V2_SIG_LEN);
    out[12] = ver_cmd;
    out[13] = fam;
    out[14] = (unsigned char)(len >> 8);
    out[15] = (unsigned char)len;
    if (len) memcpy(out + 16, body, len);
    return 16 + len;
}

static void test_v2_ipv4_with_tlvs(void **state) {
    /* 10.1.2.3:4660 -> 10.0.0.1:2048, then two TLVs (ALPN, a NOOP). */
    unsigned char body[] = {10,   1, 2, 3,   10,  0,    0, 1, 0x12, 0x34, 0x08, 0x00,
                            0x01, 0, 2, 'h', '2', 0x04, 0, 3, 0,    0,    0};
    unsigned char buf[64];
    size_t n = v2(buf, 0x21, 0x11, body, sizeof body);
    memcpy(buf + n, "{\"type\"", 7);
    run r = feed_every_way(buf, n + 7);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, n);
    assert_int_equal(r.src.version, 2);
    assert_int_equal(r.src.kind, PROTO_PROXY_IPV4);
    assert_memory_equal(r.src.addr, "\x0a\x01\x02\x03", 4);
    assert_int_equal(r.src.port, 0x1234);
}

static void test_v2_ipv6(void **state) {
    unsigned char body[36] = {0x20, 0x01, 0x0d, 0xb8};
    body[15] = 9;
    body[31] = 1;
    body[32] = 0xab;
    body[33] = 0xcd;
    unsigned char buf[64];
    size_t n = v2(buf, 0x21, 0x21, body, sizeof body);
    run r = feed_every_way(buf, n);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, n);
    assert_int_equal(r.src.kind, PROTO_PROXY_IPV6);
    assert_memory_equal(r.src.addr, body, 16);
    assert_int_equal(r.src.port, 0xabcd);
}

/* LOCAL (a health check): the addresses are ignored, however long. */
static void test_v2_local(void **state) {
    unsigned char buf[64];
    size_t n = v2(buf, 0x20, 0x00, NULL, 0);
    memcpy(buf + n, "GET /healthz HTTP/1.1\r\n", 23);
    run r = feed_every_way(buf, n + 23);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, 16);
    assert_int_equal(r.src.kind, PROTO_PROXY_LOCAL);
    unsigned char body[12] = {127, 0, 0, 1, 127, 0, 0, 1, 0, 80, 0, 80};
    n = v2(buf, 0x20, 0x11, body, sizeof body);
    r = feed_every_way(buf, n);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, 28);
    assert_int_equal(r.src.kind, PROTO_PROXY_LOCAL);
}

/* PROXY of a family without an IP address: valid, the connection's own stands. */
static void test_v2_unknown_families(void **state) {
    static unsigned char body[216 + 4];
    static unsigned char buf[16 + sizeof body];
    size_t n = v2(buf, 0x21, 0x00, NULL, 0);
    run r = feed_every_way(buf, n);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.src.kind, PROTO_PROXY_UNKNOWN);
    n = v2(buf, 0x21, 0x31, body, sizeof body); /* AF_UNIX stream, with a TLV */
    r = feed_every_way(buf, n);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, n);
    assert_int_equal(r.src.kind, PROTO_PROXY_UNKNOWN);
    n = v2(buf, 0x21, 0x10, body, 12); /* AF_INET, transport unspecified */
    r = feed_every_way(buf, n);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.src.kind, PROTO_PROXY_UNKNOWN);
}

/* Refused at the 16th byte, before any of the body arrives. */
static void test_v2_invalid(void **state) {
    unsigned char body[40] = {0};
    struct {
        unsigned char ver_cmd, fam;
        size_t len;
    } bad[] = {
        {0x11, 0x11, 12}, /* version 1 in a version 2 header */
        {0x31, 0x11, 12}, /* version 3 */
        {0x22, 0x11, 12}, /* no such command */
        {0x21, 0x41, 12}, /* no such family */
        {0x21, 0x13, 12}, /* no such transport */
        {0x21, 0x11, 11}, /* too short for IPv4 */
        {0x21, 0x21, 12}, /* too short for IPv6 */
        {0x21, 0x31, 36}, /* too short for AF_UNIX */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char buf[64];
        v2(buf, bad[i].ver_cmd, bad[i].fam, body, bad[i].len);
        run r = feed(buf, 16, 0);
        if (r.status != PROTO_PROXY_INVALID) fail_msg("accepted case %zu", i);
    }
}

/* The longest header (64 KiB of TLVs) is counted, not kept: the parser's
 * state stays its fixed size, and the header ends exactly where it says. */
static void test_v2_longest(void **state) {
    size_t len = 65535;
    unsigned char *buf = calloc(1, 16 + len + 5);
    assert_non_null(buf);
    unsigned char addr[12] = {192, 0, 2, 7, 10, 0, 0, 1, 0, 1, 0, 2};
    memcpy(buf + 16, addr, sizeof addr);
    v2(buf, 0x21, 0x11, NULL, 0);
    buf[14] = 0xff;
    buf[15] = 0xff;
    memcpy(buf + 16 + len, "hello", 5);
    run r = feed_every_way(buf, 16 + len + 5);
    assert_int_equal(r.status, PROTO_PROXY_DONE);
    assert_int_equal(r.used, 16 + len);
    assert_memory_equal(r.src.addr, addr, 4);
    r = feed(buf, 16 + len - 1, 1000);
    assert_int_equal(r.status, PROTO_PROXY_MORE);
    free(buf);
}

/* Random bytes never crash it and are refused (or, by chance, not yet
 * decided): nothing that is not a header is ever DONE. */
static void test_garbage(void **state) {
    unsigned seed = 12345;
    unsigned char buf[256];
    for (int round = 0; round < 2000; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = (unsigned char)(seed >> 16);
        }
        if (round % 3 == 1) memcpy(buf, "PROXY ", 6);
        if (round % 3 == 2) memcpy(buf, PROTO_PROXY_V2_SIG, 12);
        run r = feed_every_way(buf, sizeof buf);
        assert_int_not_equal(r.status, PROTO_PROXY_DONE);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_tcp4),
        cmocka_unit_test(test_v1_tcp6),
        cmocka_unit_test(test_v1_unknown),
        cmocka_unit_test(test_v1_invalid),
        cmocka_unit_test(test_refused_early),
        cmocka_unit_test(test_v1_oversize),
        cmocka_unit_test(test_v2_ipv4_with_tlvs),
        cmocka_unit_test(test_v2_ipv6),
        cmocka_unit_test(test_v2_local),
        cmocka_unit_test(test_v2_unknown_families),
        cmocka_unit_test(test_v2_invalid),
        cmocka_unit_test(test_v2_longest),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
