/* proxy.c - the PROXY protocol header (HAProxy's versions 1 and 2) from bytes, taken
 * incrementally; no sockets. */
#include "proxy.h"

#include <arpa/inet.h>
#include <assert.h>
#include <stdbool.h>
#include <string.h>

#define V1_PREFIX     "PROXY "
#define V1_PREFIX_LEN 6
/* Version 2: signature, version and command, family and transport, length. */
#define V2_FIXED 16
/* Of a version 2 address block, what is kept: IPv6 source and destination
 * addresses, then the two ports. */
#define V2_KEPT      (16 + 16 + 2 + 2)
#define V2_CMD_LOCAL 0x0
#define V2_CMD_PROXY 0x1
#define V2_FAM_INET  0x1
#define V2_FAM_INET6 0x2
#define V2_FAM_UNIX  0x3
#define V2_TR_STREAM 0x1
#define V2_TR_DGRAM  0x2

void proto_proxy_init(proto_proxy *p) {
    memset(p, 0, sizeof *p);
}

/* A decimal number without leading zeros, at most max; false if s is not one. */
static bool parse_decimal(const char *s, unsigned max, unsigned *out) {
    size_t len = strlen(s);
    if (!len || len > 5 || (s[0] == '0' && len > 1)) return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > max) return false;
    *out = v;
    return true;
}

/* Dotted decimal: exactly 4 numbers 0..255, no leading zeros (the protocol
 * forbids them, so that nobody reads them as octal). */
static bool parse_ipv4(char *s, unsigned char *addr) {
    for (int i = 0; i < 4; i++) {
        char *dot = i < 3 ? strchr(s, '.') : NULL;
        if (i < 3 && !dot) return false;
        if (dot) *dot = '\0';
        unsigned v;
        if (!parse_decimal(s, 255, &v)) return false;
        addr[i] = (unsigned char)v;
        s = dot ? dot + 1 : s;
    }
    return true;
}

static bool parse_ipv6(const char *s, unsigned char *addr) {
    /* Hex digits, colons and (for an IPv4 tail) dots only: inet_pton reads
     * nothing else, but say so rather than rely on it. */
    if (strspn(s, "0123456789abcdefABCDEF:.") != strlen(s)) return false;
    return inet_pton(AF_INET6, s, addr) == 1;
}

/* The line of a version 1 header, its CRLF removed: "PROXY TCP4 SRC DST SPORT
 * DPORT" or "PROXY UNKNOWN[ anything]". */
static proto_proxy_status parse_v1(char *line, proto_proxy_source *out) {
    char *rest = line + V1_PREFIX_LEN;
    memset(out, 0, sizeof *out);
    out->version = 1;
    if (!strncmp(rest, "UNKNOWN", 7) && (rest[7] == '\0' || rest[7] == ' ')) {
        out->kind = PROTO_PROXY_UNKNOWN; /* the rest of the line is to be ignored */
        return PROTO_PROXY_DONE;
    }
    bool v6;
    if (!strncmp(rest, "TCP4 ", 5))
        v6 = false;
    else if (!strncmp(rest, "TCP6 ", 5))
        v6 = true;
    else
        return PROTO_PROXY_INVALID;
    /* Exactly four fields, each after exactly one space. */
    char *field[4];
    char *s = rest + 5;
    for (int i = 0; i < 4; i++) {
        field[i] = s;
        char *space = strchr(s, ' ');
        if ((i < 3) != (space != NULL)) return PROTO_PROXY_INVALID;
        if (space) {
            *space = '\0';
            s = space + 1;
        }
        if (!*field[i]) return PROTO_PROXY_INVALID;
    }
    unsigned char dst[16];
    unsigned sport, dport;
    bool ok = v6 ? parse_ipv6(field[0], out->addr) && parse_ipv6(field[1], dst)
                 : parse_ipv4(field[0], out->addr) && parse_ipv4(field[1], dst);
    if (!ok || !parse_decimal(field[2], 65535, &sport) ||
        !parse_decimal(field[3], 65535, &dport))
        return PROTO_PROXY_INVALID;
    out->kind = v6 ? PROTO_PROXY_IPV6 : PROTO_PROXY_IPV4;
    out->port = (uint16_t)sport;
    return PROTO_PROXY_DONE;
}

/* One more byte of a version 1 line. */
static proto_proxy_status take_v1(proto_proxy *p, unsigned char ch,
                                  proto_proxy_source *out) {
    assert(p->kept < sizeof p->head);
    p->head[p->kept++] = ch;
    if (p->kept <= V1_PREFIX_LEN)
        return ch == (unsigned char)V1_PREFIX[p->kept - 1] ? PROTO_PROXY_MORE
                                                           : PROTO_PROXY_INVALID;
    bool after_cr = p->head[p->kept - 2] == '\r';
    if (ch == '\n') {
        if (!after_cr) return PROTO_PROXY_INVALID; /* a bare LF does not end it */
        p->head[p->kept - 2] = '\0';
        return parse_v1((char *)p->head, out);
    }
    /* A CR not followed by LF, or a byte that is not printable ASCII. */
    if (after_cr || (ch != '\r' && (ch < 0x20 || ch > 0x7e))) return PROTO_PROXY_INVALID;
    /* No CRLF within the longest line: invalid. */
    return p->kept >= PROTO_PROXY_V1_MAX ? PROTO_PROXY_INVALID : PROTO_PROXY_MORE;
}

/* The 16 fixed bytes of a version 2 header are in: check them. */
static proto_proxy_status check_v2_fixed(proto_proxy *p) {
    const unsigned char *h = p->head;
    unsigned version = h[12] >> 4, cmd = h[12] & 0xf, fam = h[13] >> 4, tr = h[13] & 0xf;
    if (version != 2 || cmd > V2_CMD_PROXY || fam > V2_FAM_UNIX || tr > V2_TR_DGRAM)
        return PROTO_PROXY_INVALID;
    unsigned len = (unsigned)h[14] << 8 | h[15];
    /* A PROXY of a family with addresses must hold them. */
    unsigned need = 0;
    if (cmd == V2_CMD_PROXY && tr != 0)
        need = fam == V2_FAM_INET    ? 12
               : fam == V2_FAM_INET6 ? 36
               : fam == V2_FAM_UNIX  ? 216
                                     : 0;
    if (len < need) return PROTO_PROXY_INVALID;
    p->total = V2_FIXED + len;
    return PROTO_PROXY_MORE;
}

/* The whole version 2 header has been taken. */
static proto_proxy_status finish_v2(const proto_proxy *p, proto_proxy_source *out) {
    const unsigned char *h = p->head;
    unsigned cmd = h[12] & 0xf, fam = h[13] >> 4, tr = h[13] & 0xf;
    memset(out, 0, sizeof *out);
    out->version = 2;
    if (cmd == V2_CMD_LOCAL) {
        out->kind = PROTO_PROXY_LOCAL;
    } else if (tr != 0 && fam == V2_FAM_INET) {
        out->kind = PROTO_PROXY_IPV4;
        memcpy(out->addr, h + V2_FIXED, 4);
        out->port = (uint16_t)(h[V2_FIXED + 8] << 8 | h[V2_FIXED + 9]);
    } else if (tr != 0 && fam == V2_FAM_INET6) {
        out->kind = PROTO_PROXY_IPV6;
        memcpy(out->addr, h + V2_FIXED, 16);
        out->port = (uint16_t)(h[V2_FIXED + 32] << 8 | h[V2_FIXED + 33]);
    } else {
        out->kind = PROTO_PROXY_UNKNOWN; /* no IP address: the connection's own stands */
    }
    return PROTO_PROXY_DONE;
}

proto_proxy_status proto_proxy_feed(proto_proxy *p, const void *data, size_t n,
                                    size_t *used, proto_proxy_source *out) {
    const unsigned char *b = data;
    size_t i = 0;
    while (i < n) {
        if (p->taken == 0 && b[i] != 'P' && b[i] != '\r') return PROTO_PROXY_INVALID;
        if (p->head[0] == 'P' || (p->taken == 0 && b[i] == 'P')) {
            p->taken++;
            proto_proxy_status st = take_v1(p, b[i++], out);
            if (st != PROTO_PROXY_MORE) {
                *used = i;
                return st;
            }
            continue;
        }
        /* Version 2: the fixed bytes, then what is kept of the address block,
         * then the rest (TLVs) counted and skipped. */
        if (p->taken < V2_FIXED) {
            unsigned char ch = b[i++];
            if (p->taken < PROTO_PROXY_V2_SIG_LEN &&
                ch != (unsigned char)PROTO_PROXY_V2_SIG[p->taken])
                return PROTO_PROXY_INVALID;
            p->head[p->kept++] = ch;
            if (++p->taken == V2_FIXED && check_v2_fixed(p) == PROTO_PROXY_INVALID)
                return PROTO_PROXY_INVALID;
        } else if (p->kept < V2_FIXED + V2_KEPT && p->taken < p->total) {
            p->head[p->kept++] = b[i++];
            p->taken++;
        } else {
            size_t skip = p->total - p->taken;
            if (skip > n - i) skip = n - i;
            i += skip;
            p->taken += (uint32_t)skip;
        }
        if (p->taken >= V2_FIXED && p->taken == p->total) {
            *used = i;
            return finish_v2(p, out);
        }
    }
    *used = n;
    return PROTO_PROXY_MORE;
}
