/* addr.h - per client address: open connections (--max-per-ip), failed resumes and
 * games started (guard.c). */
#ifndef RACE2048_ADDR_H
#define RACE2048_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One address with open connections; the table is a uthash hash of these. */
typedef struct addr_entry addr_entry;

/* A token bucket of guard.c: what an address may still do now, refilled at a
 * steady rate up to its burst. A full bucket is not kept (in_use false): an
 * address that has done nothing lately is like one never seen. */
typedef struct addr_bucket {
    double tokens;    /* what it may still do now (meaningful while in_use) */
    uint64_t updated; /* loop time (ms) tokens were brought up to date */
    bool in_use;      /* below its burst */
    bool warned;      /* its running dry has been logged */
} addr_bucket;

/* What guard.c keeps per address: failed resumes, games started, resume-code
 * attempts, and the entry's place in guard.c's list of addresses with a
 * bucket in use. */
typedef struct addr_guard {
    addr_bucket resumes;       /* failed resumes */
    addr_bucket games;         /* games started (--max-games-per-min) */
    addr_bucket codes;         /* its share of the server's resume-code attempts */
    addr_bucket registrations; /* accounts registered (GUARD_REGISTER_PER_HOUR) */
    bool active;               /* a bucket is in use: kept even without connections */
    addr_entry *older, *newer; /* guard.c's list of active entries */
} addr_guard;

/* The key a client address is counted under (key has room for 16 bytes): IPv4
 * (also mapped into IPv6) by its 4 bytes, IPv6 by its /64, the least a host or
 * one customer's network is given, so that one network cannot take
 * --max-per-ip connections from each of its 2^64 addresses. An 8-byte key never
 * equals a 4-byte one (the table keys by length too). Returns the key's length,
 * 0 for an address that is neither 4 nor 16 bytes. */
size_t addr_key(const unsigned char *addr, size_t len, unsigned char *key);

/* Counts one more connection from addr (len bytes: 4 for IPv4, 16 for IPv6).
 * Returns the connections now counted for it, or 0 if memory ran out (then
 * nothing was counted). *table starts NULL. */
unsigned addr_add(addr_entry **table, const void *addr, size_t len);

/* Counts one connection less; the entry goes when none are left and its
 * guard is not active. */
void addr_remove(addr_entry **table, const void *addr, size_t len);

/* Connections counted for addr (0 if none). */
unsigned addr_count(addr_entry *const *table, const void *addr, size_t len);

/* The entry for addr; with make, one with no connections is made if there is
 * none. NULL if there is none, or memory ran out. */
addr_entry *addr_get(addr_entry **table, const void *addr, size_t len, bool make);
/* e's record of guard.c (zeroed when the entry is made). */
addr_guard *addr_guard_of(addr_entry *e);
/* Frees e if it has no connections and its guard is not active. */
void addr_drop_if_unused(addr_entry **table, addr_entry *e);

/* Addresses in the table. */
unsigned addr_size(addr_entry *const *table);

/* Frees every entry; *table becomes NULL. */
void addr_clear(addr_entry **table);

#endif
