/* addr.c - per client address: open connections (--max-per-ip), failed resumes and
 * games started (guard.c). */
#include "addr.h"

#include <stdlib.h>
#include <string.h>

/* Running out of memory in uthash is reported, not fatal (see addr_add). */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

struct addr_entry {
    unsigned char key[16]; /* the address, zero-padded: an IPv4 key is 4 bytes */
    unsigned char len;
    unsigned count;
    addr_guard guard;
    UT_hash_handle hh;
};

/* Keys are always 17 bytes (address padded, then its length), so IPv4 and
 * IPv6 addresses never collide. */
#define KEY_LEN (offsetof(addr_entry, len) + 1 - offsetof(addr_entry, key))

static void make_key(addr_entry *k, const void *addr, size_t len) {
    memset(k->key, 0, sizeof k->key);
    memcpy(k->key, addr, len > sizeof k->key ? sizeof k->key : len);
    k->len = (unsigned char)len;
}

static addr_entry *find(addr_entry *table, const void *addr, size_t len) {
    addr_entry k, *e = NULL;
    make_key(&k, addr, len);
    HASH_FIND(hh, table, k.key, KEY_LEN, e);
    return e;
}

addr_entry *addr_get(addr_entry **table, const void *addr, size_t len, bool make) {
    addr_entry *e = find(*table, addr, len);
    if (e || !make) return e;
    e = calloc(1, sizeof *e);
    if (!e) return NULL;
    make_key(e, addr, len);
    /* uthash reports running out of memory through this hook. */
#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj)                                                         \
    do {                                                                                 \
        free(e);                                                                         \
        return NULL;                                                                     \
    } while (0)
    HASH_ADD(hh, *table, key, KEY_LEN, e);
#undef uthash_nonfatal_oom
    return e;
}

size_t addr_key(const unsigned char *addr, size_t len, unsigned char *key) {
    static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (len == 4) {
        memcpy(key, addr, 4);
        return 4;
    }
    if (len != 16) return 0;
    if (!memcmp(addr, v4mapped, sizeof v4mapped)) {
        memcpy(key, addr + 12, 4);
        return 4;
    }
    memcpy(key, addr, 8);
    return 8;
}

unsigned addr_add(addr_entry **table, const void *addr, size_t len) {
    addr_entry *e = addr_get(table, addr, len, true);
    return e ? ++e->count : 0;
}

addr_guard *addr_guard_of(addr_entry *e) {
    return &e->guard;
}

void addr_drop_if_unused(addr_entry **table, addr_entry *e) {
    if (e->count || e->guard.active) return;
    HASH_DEL(*table, e);
    free(e);
}

void addr_remove(addr_entry **table, const void *addr, size_t len) {
    addr_entry *e = find(*table, addr, len);
    if (!e || !e->count) return;
    e->count--;
    addr_drop_if_unused(table, e);
}

unsigned addr_count(addr_entry *const *table, const void *addr, size_t len) {
    addr_entry *e = find(*table, addr, len);
    return e ? e->count : 0;
}

unsigned addr_size(addr_entry *const *table) {
    return HASH_COUNT(*table);
}

void addr_clear(addr_entry **table) {
    addr_entry *e, *tmp;
    HASH_ITER(hh, *table, e, tmp) {
        HASH_DEL(*table, e);
        free(e);
    }
}
