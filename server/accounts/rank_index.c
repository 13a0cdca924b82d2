/* rank_index.c - the ordered index with ranks: a skip list with counted links. */
#include "rank_index.h"

#include <assert.h>
#include <stdlib.h>

/* One link of a node: the next node at this level, and how many level-0 steps it
 * jumps (1 for the next item; from the last node at a level, the items left). */
typedef struct rank_link {
    rank_node *next;
    size_t span;
} rank_link;

struct rank_node {
    void *item;
    uint64_t key;     /* key_of(item) when attached: most comparisons stop here */
    int level;        /* links in use, 1..RANK_MAX_LEVEL */
    rank_link link[]; /* level of them */
};

static rank_node *node_alloc(void *item, int level) {
    rank_node *n = malloc(sizeof *n + (size_t)level * sizeof(rank_link));
    if (!n) return NULL;
    n->item = item;
    n->key = 0; /* set by rank_attach */
    n->level = level;
    for (int i = 0; i < level; i++)
        n->link[i] = (rank_link){NULL, 0};
    return n;
}

/* Level k+1 with probability 4^-k, as redis draws them: two bits per level. */
static int random_level(rank_index *idx) {
    uint64_t x = idx->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    idx->rng = x;
    int level = 1;
    while (level < RANK_MAX_LEVEL && (x & 3) == 0) {
        level++;
        x >>= 2;
    }
    return level;
}

/* Where node stands against an item whose key is key: negative if before. The key
 * decides alone when it differs, so a search reads nodes, and reads items (a cache
 * miss each) only among equal keys. */
static int node_cmp(const rank_index *idx, const rank_node *node, uint64_t key,
                    const void *item) {
    if (node->key != key) return node->key < key ? -1 : 1;
    return idx->cmp(node->item, item);
}

static uint64_t key_of(const rank_index *idx, const void *item) {
    return idx->key_of ? idx->key_of(item) : 0;
}

bool rank_init(rank_index *idx, rank_cmp_fn cmp, rank_key_fn key, uint64_t seed) {
    idx->cmp = cmp;
    idx->key_of = key;
    idx->length = 0;
    idx->level = 1;
    idx->rng = seed ? seed : 0x9e3779b97f4a7c15u; /* xorshift must not start at 0 */
    idx->head = node_alloc(NULL, RANK_MAX_LEVEL);
    return idx->head != NULL;
}

void rank_free(rank_index *idx) {
    rank_node *n = idx->head;
    while (n) {
        rank_node *next = n->link[0].next;
        free(n);
        n = next;
    }
    idx->head = NULL;
    idx->length = 0;
}

rank_node *rank_node_new(rank_index *idx, void *item) {
    return node_alloc(item, random_level(idx));
}

void rank_node_free(rank_node *node) {
    free(node);
}

void rank_node_set_item(rank_node *node, void *item) {
    node->item = item;
}

void rank_attach(rank_index *idx, rank_node *node) {
    rank_node *update[RANK_MAX_LEVEL];
    size_t rank[RANK_MAX_LEVEL]; /* items passed before update[i] */
    rank_node *x = idx->head;
    node->key = key_of(idx, node->item);
    for (int i = idx->level - 1; i >= 0; i--) {
        rank[i] = i == idx->level - 1 ? 0 : rank[i + 1];
        while (x->link[i].next &&
               node_cmp(idx, x->link[i].next, node->key, node->item) < 0) {
            rank[i] += x->link[i].span;
            x = x->link[i].next;
        }
        update[i] = x;
    }
    assert(!x->link[0].next ||
           node_cmp(idx, x->link[0].next, node->key, node->item) != 0);
    if (node->level > idx->level) {
        for (int i = idx->level; i < node->level; i++) {
            rank[i] = 0;
            update[i] = idx->head;
            update[i]->link[i].span = idx->length;
        }
        idx->level = node->level;
    }
    for (int i = 0; i < node->level; i++) {
        node->link[i].next = update[i]->link[i].next;
        update[i]->link[i].next = node;
        /* update[i] jumped span items; the new node splits that jump. */
        node->link[i].span = update[i]->link[i].span - (rank[0] - rank[i]);
        update[i]->link[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = node->level; i < idx->level; i++)
        update[i]->link[i].span++;
    idx->length++;
}

bool rank_insert(rank_index *idx, void *item) {
    rank_node *n = rank_node_new(idx, item);
    if (!n) return false;
    rank_attach(idx, n);
    return true;
}

rank_node *rank_detach(rank_index *idx, const void *item) {
    rank_node *update[RANK_MAX_LEVEL];
    rank_node *x = idx->head;
    uint64_t key = key_of(idx, item);
    for (int i = idx->level - 1; i >= 0; i--) {
        while (x->link[i].next && node_cmp(idx, x->link[i].next, key, item) < 0)
            x = x->link[i].next;
        update[i] = x;
    }
    x = x->link[0].next;
    if (!x || x->item != item) return NULL;
    for (int i = 0; i < idx->level; i++) {
        if (update[i]->link[i].next == x) {
            update[i]->link[i].span += x->link[i].span - 1;
            update[i]->link[i].next = x->link[i].next;
        } else {
            update[i]->link[i].span--;
        }
    }
    while (idx->level > 1 && !idx->head->link[idx->level - 1].next) {
        idx->head->link[idx->level - 1].span = 0;
        idx->level--;
    }
    idx->length--;
    for (int i = 0; i < x->level; i++)
        x->link[i] = (rank_link){NULL, 0};
    return x;
}

bool rank_remove(rank_index *idx, const void *item) {
    rank_node *n = rank_detach(idx, item);
    if (!n) return false;
    rank_node_free(n);
    return true;
}

size_t rank_of(const rank_index *idx, const void *item) {
    size_t rank = 0;
    const rank_node *x = idx->head;
    uint64_t key = key_of(idx, item);
    for (int i = idx->level - 1; i >= 0; i--) {
        while (x->link[i].next && node_cmp(idx, x->link[i].next, key, item) <= 0) {
            rank += x->link[i].span;
            x = x->link[i].next;
        }
        if (x != idx->head && x->item == item) return rank;
    }
    return 0;
}

/* The node at a 1-based rank, or NULL. */
static rank_node *node_at(const rank_index *idx, size_t rank) {
    if (rank == 0 || rank > idx->length) return NULL;
    size_t passed = 0;
    rank_node *x = idx->head;
    for (int i = idx->level - 1; i >= 0; i--) {
        while (x->link[i].next && passed + x->link[i].span <= rank) {
            passed += x->link[i].span;
            x = x->link[i].next;
        }
        if (passed == rank) return x;
    }
    return NULL;
}

void *rank_at(const rank_index *idx, size_t rank) {
    rank_node *n = node_at(idx, rank);
    return n ? n->item : NULL;
}

size_t rank_range(const rank_index *idx, size_t from, void **out, size_t max) {
    size_t k = 0;
    for (rank_node *n = node_at(idx, from); n && k < max; n = n->link[0].next)
        out[k++] = n->item;
    return k;
}

bool rank_check(const rank_index *idx) {
    if (!idx->head || idx->level < 1 || idx->level > RANK_MAX_LEVEL) return false;
    /* Level 0: strictly increasing, and its count is the length. */
    size_t count = 0;
    for (const rank_node *n = idx->head->link[0].next; n; n = n->link[0].next) {
        if (n->level < 1 || n->level > idx->level) return false;
        if (n->key != key_of(idx, n->item)) return false;
        if (n->link[0].next && (n->key > n->link[0].next->key ||
                                idx->cmp(n->item, n->link[0].next->item) >= 0))
            return false;
        count++;
    }
    if (count != idx->length) return false;
    /* Every level: each link's span is the level-0 steps to its target (to the
     * end for a last link), and the head's top level is in use. */
    for (int i = 0; i < idx->level; i++) {
        size_t pos = 0; /* rank of the node whose link we check; head = 0 */
        const rank_node *x = idx->head;
        while (x) {
            const rank_node *target = x->link[i].next;
            size_t steps = 0;
            const rank_node *y = x;
            while (y != target) {
                y = y->link[0].next;
                if (!y && target) return false; /* target not reachable */
                if (y)
                    steps++;
                else
                    break;
            }
            if (target ? x->link[i].span != steps : x->link[i].span != idx->length - pos)
                return false;
            pos += steps;
            x = target;
        }
        for (int j = idx->level; j < RANK_MAX_LEVEL; j++)
            if (idx->head->link[j].next) return false;
    }
    return idx->level == 1 || idx->head->link[idx->level - 1].next != NULL;
}
