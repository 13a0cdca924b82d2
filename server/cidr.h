/* cidr.h - lists of address ranges ("10.0.0.0/8,::1") from flags, and whether an
 * address is in one. */
#ifndef RACE2048_CIDR_H
#define RACE2048_CIDR_H

#include <stdbool.h>
#include <stddef.h>

/* Ranges one flag may list. */
#define SRV_CIDR_MAX 32

/* One range: an IPv4 (len 4) or IPv6 (len 16) prefix of `bits` bits. */
typedef struct srv_cidr {
    unsigned char addr[16];
    unsigned char len;
    unsigned char bits;
} srv_cidr;

typedef struct srv_cidr_list {
    unsigned n;
    srv_cidr items[SRV_CIDR_MAX];
} srv_cidr_list;

/* Parses "CIDR[,CIDR...]" (an address alone is a range of one address;
 * spaces around commas are allowed) into *list, replacing what it held.
 * Returns 0, or -1 (list emptied) if any item is not a range or there are
 * more than SRV_CIDR_MAX. */
int srv_cidr_parse(srv_cidr_list *list, const char *text);

/* Is addr (4 or 16 bytes; an IPv4-mapped IPv6 address counts as its IPv4
 * address) in one of list's ranges? */
bool srv_cidr_match(const srv_cidr_list *list, const unsigned char *addr, size_t len);

#endif
