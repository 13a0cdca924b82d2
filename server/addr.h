/* addr.h - open connections per client address, for --max-per-ip. */
#ifndef RACE2048_ADDR_H
#define RACE2048_ADDR_H

#include <stddef.h>

/* One address with open connections; the table is a uthash hash of these. */
typedef struct addr_entry addr_entry;

/* Counts one more connection from addr (len bytes: 4 for IPv4, 16 for IPv6).
 * Returns the connections now counted for it, or 0 if memory ran out (then
 * nothing was counted). *table starts NULL. */
unsigned addr_add(addr_entry **table, const void *addr, size_t len);

/* Counts one connection less; the entry goes when none are left. */
void addr_remove(addr_entry **table, const void *addr, size_t len);

/* Connections counted for addr (0 if none). */
unsigned addr_count(addr_entry *const *table, const void *addr, size_t len);

/* Addresses in the table. */
unsigned addr_size(addr_entry *const *table);

/* Frees every entry; *table becomes NULL. */
void addr_clear(addr_entry **table);

#endif
