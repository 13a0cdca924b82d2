/* cidr.c - lists of address ranges (`10.0.0.0/8,::1`) from text, and whether an address
 * is in one; no sockets. */
#include "cidr.h"

#include <arpa/inet.h>
#include <assert.h>
#include <string.h>

/* Parses one entry (n bytes, no spaces around it) into *r. Returns 0 or -1. */
static int parse_range(const char *s, size_t n, proto_cidr *r) {
    char text[INET6_ADDRSTRLEN + 8];
    if (n == 0 || n >= sizeof text) return -1;
    memcpy(text, s, n);
    text[n] = '\0';
    char *slash = strchr(text, '/');
    if (slash) *slash = '\0';
    memset(r, 0, sizeof *r);
    if (inet_pton(AF_INET, text, r->addr) == 1)
        r->len = 4;
    else if (inet_pton(AF_INET6, text, r->addr) == 1)
        r->len = 16;
    else
        return -1;
    unsigned max = r->len * 8u, bits = max;
    if (slash) {
        const char *p = slash + 1;
        if (!*p || strlen(p) > 3) return -1;
        bits = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9') return -1;
            bits = bits * 10 + (unsigned)(*p - '0');
        }
        if (bits > max) return -1;
    }
    r->bits = (uint8_t)bits;
    /* Only the prefix counts: clear the host bits once, here. */
    for (unsigned i = 0; i < r->len; i++) {
        unsigned keep = bits >= 8 * (i + 1) ? 8 : bits > 8 * i ? bits - 8 * i : 0;
        r->addr[i] &= (uint8_t)(0xff00u >> keep);
    }
    return 0;
}

int proto_cidr_list_parse(const char *text, proto_cidr_list *out, char *bad, size_t cap) {
    proto_cidr_list list;
    list.n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        size_t n = (size_t)(end - start);
        if (list.n == PROTO_CIDR_MAX || parse_range(start, n, &list.ranges[list.n]) < 0) {
            if (bad && cap) {
                size_t k = n < cap - 1 ? n : cap - 1;
                memcpy(bad, start, k);
                bad[k] = '\0';
            }
            return -1;
        }
        list.n++;
        if (!*p) break;
        p++; /* the comma */
    }
    *out = list;
    return 0;
}

static bool in_range(const proto_cidr *r, const uint8_t *addr) {
    unsigned bits = r->bits, whole = bits / 8, rest = bits % 8;
    assert(whole <= r->len);
    if (memcmp(r->addr, addr, whole) != 0) return false;
    if (!rest) return true;
    uint8_t mask = (uint8_t)(0xff00u >> rest);
    return (addr[whole] & mask) == r->addr[whole];
}

bool proto_cidr_list_match(const proto_cidr_list *list, const uint8_t *addr, size_t len) {
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (len == 16 && memcmp(addr, v4mapped, sizeof v4mapped) == 0) {
        addr += 12;
        len = 4;
    }
    if (len != 4 && len != 16) return false;
    for (int i = 0; i < list->n; i++)
        if (list->ranges[i].len == len && in_range(&list->ranges[i], addr)) return true;
    return false;
}
