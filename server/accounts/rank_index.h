/* rank_index.h - an ordered index with ranks: a skip list whose links count the
 * items they jump over (redis's zset), generic over a compare function.
 *
 * Items are the caller's; the index holds pointers to them and orders them with
 * the compare function given at creation. That function must be a total order of
 * the distinct items it holds (two items compare equal only if they are the same
 * item). An optional key function gives each item a 64-bit key that the order
 * agrees with (a smaller key comes first; the compare function decides between
 * equal keys); the node keeps it, so a search compares keys in the nodes it walks
 * and reads an item only on a tie, instead of a cache miss per step. What an item
 * is ordered by must not change while it is in the index: to move an item,
 * detach it, change it, attach it again (which cannot fail: the node is kept).
 * With n items: insert, remove, rank of an item and the item at a rank in
 * O(log n) expected; the top k in O(log n + k). Each node costs 24 bytes plus 16
 * per level (1.33 levels on average), about 45 bytes, 48 or 64 with malloc's
 * rounding. Single-threaded, no globals: the levels come from a generator in the
 * index, seeded by its creator so tests are repeatable. */
#ifndef RACE2048_RANK_INDEX_H
#define RACE2048_RANK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough levels for 4^32 items with p = 1/4. */
#define RANK_MAX_LEVEL 32

/* Negative if a comes first, positive if b does, 0 only for the same item. */
typedef int (*rank_cmp_fn)(const void *a, const void *b);
/* The item's key: key(a) < key(b) must mean that a comes first. */
typedef uint64_t (*rank_key_fn)(const void *item);

typedef struct rank_node rank_node;

typedef struct rank_index {
    rank_cmp_fn cmp;
    rank_key_fn key_of; /* NULL: every key is 0, cmp decides alone */
    rank_node *head;    /* a node with RANK_MAX_LEVEL levels and no item */
    size_t length;      /* items in the index */
    int level;          /* levels in use, 1..RANK_MAX_LEVEL */
    uint64_t rng;       /* xorshift64 state for the levels; never 0 */
} rank_index;

/* Sets up an empty index (key may be NULL). Returns false (with nothing to free) if the
 * memory cannot be had. */
bool rank_init(rank_index *idx, rank_cmp_fn cmp, rank_key_fn key, uint64_t seed);
/* Frees every node (not the items). The index is empty and unusable after. */
void rank_free(rank_index *idx);

/* A node for item, not yet in the index (its level drawn now). NULL if the
 * memory cannot be had. */
rank_node *rank_node_new(rank_index *idx, void *item);
void rank_node_free(rank_node *node);
/* Points a node that is not in an index at another item. */
void rank_node_set_item(rank_node *node, void *item);
/* Puts a detached or new node in its place. Cannot fail; its item must not
 * compare equal to one already in the index (asserted in debug builds). */
void rank_attach(rank_index *idx, rank_node *node);
/* Takes item's node out, keeping it for rank_attach or rank_node_free. NULL if
 * item is not in the index. */
rank_node *rank_detach(rank_index *idx, const void *item);

/* rank_node_new and rank_attach. False, the index unchanged, without memory. */
bool rank_insert(rank_index *idx, void *item);
/* Removes item; false if it was not in the index. */
bool rank_remove(rank_index *idx, const void *item);

/* The 1-based rank of item, or 0 if it is not in the index. */
size_t rank_of(const rank_index *idx, const void *item);
/* The item at a 1-based rank, or NULL past the end (or for 0). */
void *rank_at(const rank_index *idx, size_t rank);
/* Writes the items at ranks from, from+1, ... (1-based) into out, at most max of
 * them; returns how many. */
size_t rank_range(const rank_index *idx, size_t from, void **out, size_t max);

/* Checks every invariant: the order at level 0, every link's count, the length
 * and the levels in use. Returns false at the first that fails. Tests call it
 * after random operations; it costs O(n * levels). */
bool rank_check(const rank_index *idx);

#endif
