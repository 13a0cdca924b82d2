/* cidr.c - lists of address ranges ("10.0.0.0/8,::1") from flags, and whether an
 * address is in one. */
#include "cidr.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* One "ADDR[/BITS]" of n bytes; returns 0 or -1. */
static int parse_one(srv_cidr *c, const char *s, size_t n) {
    char text[64];
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    if (!n || n >= sizeof text) return -1;
    memcpy(text, s, n);
    text[n] = '\0';
    char *slash = strchr(text, '/');
    if (slash) *slash = '\0';
    memset(c, 0, sizeof *c);
    if (inet_pton(AF_INET, text, c->addr) == 1)
        c->len = 4;
    else if (inet_pton(AF_INET6, text, c->addr) == 1)
        c->len = 16;
    else
        return -1;
    unsigned bits = c->len * 8u;
    if (slash) {
        const char *b = slash + 1;
        if (!*b || strspn(b, "0123456789") != strlen(b) || strlen(b) > 3) return -1;
        unsigned v = (unsigned)atoi(b);
        if (v > bits) return -1;
        bits = v;
    }
    /* An IPv4-mapped range is kept as the IPv4 range it names. */
    if (c->len == 16 && bits >= 96 && !memcmp(c->addr, v4mapped, sizeof v4mapped)) {
        memmove(c->addr, c->addr + 12, 4);
        memset(c->addr + 4, 0, 12);
        c->len = 4;
        bits -= 96;
    }
    c->bits = (unsigned char)bits;
    return 0;
}

int srv_cidr_parse(srv_cidr_list *list, const char *text) {
    list->n = 0;
    const char *s = text;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (list->n == SRV_CIDR_MAX || parse_one(&list->items[list->n], s, n) < 0) {
            list->n = 0;
            return -1;
        }
        list->n++;
        if (!comma) return 0;
        s = comma + 1;
    }
}

static bool in_range(const srv_cidr *c, const unsigned char *addr) {
    unsigned whole = c->bits / 8u, rest = c->bits % 8u;
    if (memcmp(c->addr, addr, whole)) return false;
    if (!rest) return true;
    unsigned char mask = (unsigned char)(0xffu << (8 - rest));
    return (c->addr[whole] & mask) == (addr[whole] & mask);
}

bool srv_cidr_match(const srv_cidr_list *list, const unsigned char *addr, size_t len) {
    if (len == 16 && !memcmp(addr, v4mapped, sizeof v4mapped)) {
        addr += 12;
        len = 4;
    }
    if (len != 4 && len != 16) return false;
    for (unsigned i = 0; i < list->n; i++)
        if (list->items[i].len == len && in_range(&list->items[i], addr)) return true;
    return false;
}
