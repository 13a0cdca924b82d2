/* cidr.h - lists of address ranges (`10.0.0.0/8,::1`) from text, and whether an address
 * is in one; no sockets. */
#ifndef RACE2048_CIDR_H
#define RACE2048_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ranges one list holds at most (a flag's value: a few are plenty). */
#define PROTO_CIDR_MAX 32

/* One range: an IPv4 or IPv6 network and its prefix length. */
typedef struct proto_cidr {
    uint8_t addr[16]; /* IPv4 in the first 4 bytes; bits past the prefix are 0 */
    uint8_t len;      /* 4 or 16 */
    uint8_t bits;     /* prefix length: 0..32 or 0..128 */
} proto_cidr;

/* A list of ranges; fixed size, so a configuration can hold it by value. */
typedef struct proto_cidr_list {
    proto_cidr ranges[PROTO_CIDR_MAX];
    int n;
} proto_cidr_list;

/* Loopback and the private ranges: what may scrape /metrics by default. */
#define PROTO_CIDR_PRIVATE                                                               \
    "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"

/* Parses comma-separated ranges, each ADDR/BITS or a bare ADDR (one address),
 * IPv4 or IPv6, spaces around commas allowed; bits past the prefix are
 * ignored (10.1.2.3/8 is 10.0.0.0/8). Returns 0, or -1 (out untouched) if an
 * entry is not a range or there are more than PROTO_CIDR_MAX of them; then,
 * if bad is not NULL, the first bad entry is copied there (cap bytes,
 * truncated). Cannot fail otherwise. */
int proto_cidr_list_parse(const char *text, proto_cidr_list *out, char *bad, size_t cap);

/* Is the address (len 4: IPv4, 16: IPv6) in one of the list's ranges? An
 * IPv4-mapped IPv6 address (::ffff:1.2.3.4, as a dual-stack socket reports
 * an IPv4 client) is matched as the IPv4 address it is. Any other length is
 * in no range. */
bool proto_cidr_list_match(const proto_cidr_list *list, const uint8_t *addr, size_t len);

#endif
