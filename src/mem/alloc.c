/*
 * alloc.c - the device allocator (tensile/alloc.h): best fit with coalescing
 * over offsets in [0, capacity). It never touches the memory it manages.
 *
 * Layout of the bookkeeping:
 *   - every block (free or live) is a node of one growable array, named by
 *     its int32 index; recycled nodes are chained through `next`;
 *   - the blocks tile [0, capacity) and form a doubly linked list in address
 *     order (prev/next), which makes coalescing O(1);
 *   - free blocks are also kept in two treaps sharing their priorities: one
 *     ordered by (size, offset), so best fit (smallest size >= request,
 *     lowest offset on ties) is a lower-bound search and the largest free
 *     block is the rightmost node; one by offset, so a placement at a given
 *     offset finds the free block below it in O(log n);
 *   - live blocks are found by offset in an open-addressing hash table
 *     (linear probing, backward-shift deletion).
 * alloc, alloc_at and release are O(log n) expected; tsl_alloc_get_stats is
 * O(log n). Treap priorities come from a splitmix64 counter, so the
 * structure (and every offset handed out) is deterministic.
 *
 * The usable capacity is the requested capacity rounded down to the
 * alignment, so that every free block, the tail included, is a multiple of
 * the alignment and "an allocation up to largest_free succeeds" holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "tensile/alloc.h"

#define NIL ((int32_t)-1)

typedef struct blk {
    size_t off, size;    /* [off, off+size); size is a multiple of the alignment */
    size_t req;          /* live blocks: the requested size */
    int32_t prev, next;  /* address order; NIL at the ends (next: recycle chain) */
    int32_t kid[2][2];   /* treap children, [BY_SIZE or BY_OFF][left, right] (free blocks) */
    uint32_t prio;       /* treap heap priority, one for both treaps (free blocks only) */
    uint8_t live;
} blk;

struct tsl_alloc {
    size_t capacity, align;
    blk *b;                 /* node array */
    int32_t n_b, cap_b;     /* nodes ever used, nodes allocated */
    int32_t recycled;       /* head of the chain of unused nodes */
    int32_t head, tail;     /* address-ordered block list */
    int32_t root[2];        /* treaps of free blocks: [BY_SIZE], [BY_OFF] */
    int32_t *ht;            /* live blocks by offset: node index or NIL */
    size_t ht_mask;         /* table size - 1 (a power of two minus one) */
    unsigned ht_bits;
    size_t ht_n;
    uint64_t rng;           /* splitmix64 state for treap priorities */
    /* ledger */
    size_t load, peak_load, peak_footprint, live_bytes;
    uint64_t n_allocs, n_frees, n_failed, n_live, n_free_blocks;
    uint64_t fail_countdown; /* fault injection: fail when it reaches 0 */
};

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- nodes ------------------------------------------------------------- */

/* Makes sure one node can be taken without allocating. Returns 0 if the host
 * is out of memory (nothing changed). */
static int node_reserve(tsl_alloc *a) {
    if (a->recycled != NIL || a->n_b < a->cap_b) return 1;
    if (a->cap_b > INT32_MAX / 2) return 0;
    int32_t cap = a->cap_b ? 2 * a->cap_b : 64;
    blk *nb = realloc(a->b, (size_t)cap * sizeof *nb);
    if (!nb) return 0;
    a->b = nb;
    a->cap_b = cap;
    return 1;
}

/* Takes a node (node_reserve must have succeeded) and clears its links. */
static int32_t node_take(tsl_alloc *a) {
    int32_t n;
    if (a->recycled != NIL) {
        n = a->recycled;
        a->recycled = a->b[n].next;
    } else {
        TSL_ASSERT(a->n_b < a->cap_b);
        n = a->n_b++;
    }
    memset(&a->b[n], 0, sizeof a->b[n]);
    a->b[n].prev = a->b[n].next = NIL;
    for (int k = 0; k < 4; k++) a->b[n].kid[k / 2][k % 2] = NIL;
    return n;
}

static void node_put(tsl_alloc *a, int32_t n) {
    a->b[n].next = a->recycled;
    a->recycled = n;
}

/* ---- treaps of free blocks: by (size, offset) and by offset ------------------ */

enum { BY_SIZE = 0, BY_OFF = 1 };

static int key_less(int T, const blk *x, const blk *y) {
    if (T == BY_OFF) return x->off < y->off;
    return x->size < y->size || (x->size == y->size && x->off < y->off);
}

#define L(n) b[n].kid[T][0]
#define R(n) b[n].kid[T][1]

/* Splits treap t (order T) into keys < k (*l) and keys > k (*r); k is not
 * in t. */
static void tr_split(blk *b, int T, int32_t t, const blk *k, int32_t *l, int32_t *r) {
    if (t == NIL) {
        *l = *r = NIL;
    } else if (key_less(T, &b[t], k)) {
        tr_split(b, T, R(t), k, &R(t), r);
        *l = t;
    } else {
        tr_split(b, T, L(t), k, l, &L(t));
        *r = t;
    }
}

/* Merges two treaps of order T where every key of l is below every key of r. */
static int32_t tr_merge(blk *b, int T, int32_t l, int32_t r) {
    if (l == NIL) return r;
    if (r == NIL) return l;
    if (b[l].prio > b[r].prio) {
        R(l) = tr_merge(b, T, R(l), r);
        return l;
    }
    L(r) = tr_merge(b, T, l, L(r));
    return r;
}

static void tr_insert_in(tsl_alloc *a, int T, int32_t n) {
    blk *b = a->b;
    int32_t *link = &a->root[T];
    while (*link != NIL && b[*link].prio >= b[n].prio)
        link = key_less(T, &b[n], &b[*link]) ? &L(*link) : &R(*link);
    tr_split(b, T, *link, &b[n], &L(n), &R(n));
    *link = n;
}

static void tr_erase_in(tsl_alloc *a, int T, int32_t n) {
    blk *b = a->b;
    int32_t *link = &a->root[T];
    while (*link != n) {
        TSL_ASSERT(*link != NIL);
        link = key_less(T, &b[n], &b[*link]) ? &L(*link) : &R(*link);
    }
    *link = tr_merge(b, T, L(n), R(n));
    L(n) = R(n) = NIL;
}

#undef L
#undef R

/* Inserts free node n (its size and offset set) in both treaps, with a
 * fresh priority. */
static void tr_insert(tsl_alloc *a, int32_t n) {
    a->b[n].prio = (uint32_t)(splitmix64(&a->rng) >> 32);
    tr_insert_in(a, BY_SIZE, n);
    tr_insert_in(a, BY_OFF, n);
    a->n_free_blocks++;
}

/* Removes free node n from both treaps (TSL_ASSERT if it is not there). */
static void tr_erase(tsl_alloc *a, int32_t n) {
    tr_erase_in(a, BY_SIZE, n);
    tr_erase_in(a, BY_OFF, n);
    a->n_free_blocks--;
}

/* The free block with the largest offset <= off, or NIL. */
static int32_t tr_floor_off(const tsl_alloc *a, size_t off) {
    int32_t t = a->root[BY_OFF], best = NIL;
    while (t != NIL) {
        if (a->b[t].off <= off) {
            best = t;
            t = a->b[t].kid[BY_OFF][1];
        } else {
            t = a->b[t].kid[BY_OFF][0];
        }
    }
    return best;
}

/* The smallest free block of size >= need, lowest offset among equals;
 * NIL if none. */
static int32_t tr_best_fit(const tsl_alloc *a, size_t need) {
    int32_t t = a->root[BY_SIZE], best = NIL;
    while (t != NIL) {
        if (a->b[t].size >= need) {
            best = t;
            t = a->b[t].kid[BY_SIZE][0];
        } else {
            t = a->b[t].kid[BY_SIZE][1];
        }
    }
    return best;
}

static size_t tr_largest(const tsl_alloc *a) {
    int32_t t = a->root[BY_SIZE];
    if (t == NIL) return 0;
    while (a->b[t].kid[BY_SIZE][1] != NIL) t = a->b[t].kid[BY_SIZE][1];
    return a->b[t].size;
}

/* ---- hash of live blocks by offset ---------------------------------------- */

static size_t ht_home(const tsl_alloc *a, size_t off) {
    return (size_t)(((uint64_t)(off / a->align) * 0x9E3779B97F4A7C15ull) >> (64 - a->ht_bits));
}

/* Index of the live node at offset `off`, or NIL. */
static int32_t ht_find(const tsl_alloc *a, size_t off) {
    for (size_t i = ht_home(a, off);; i = (i + 1) & a->ht_mask) {
        int32_t n = a->ht[i];
        if (n == NIL) return NIL;
        if (a->b[n].off == off) return n;
    }
}

static void ht_put_raw(int32_t *ht, size_t mask, size_t home, int32_t n) {
    size_t i = home;
    while (ht[i] != NIL) i = (i + 1) & mask;
    ht[i] = n;
}

/* Makes sure one more entry fits with the load factor <= 1/2. Returns 0 if
 * the host is out of memory (nothing changed). */
static int ht_reserve(tsl_alloc *a) {
    if (2 * (a->ht_n + 1) <= a->ht_mask + 1) return 1;
    unsigned bits = a->ht_bits + 1;
    if (bits > 40) return 0;
    size_t size = (size_t)1 << bits;
    int32_t *nt = malloc(size * sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i < size; i++) nt[i] = NIL;
    a->ht_bits = bits; /* ht_home uses the new size from here on */
    for (size_t i = 0; i <= a->ht_mask; i++)
        if (a->ht[i] != NIL) ht_put_raw(nt, size - 1, ht_home(a, a->b[a->ht[i]].off), a->ht[i]);
    free(a->ht);
    a->ht = nt;
    a->ht_mask = size - 1;
    return 1;
}

static void ht_insert(tsl_alloc *a, int32_t n) {
    ht_put_raw(a->ht, a->ht_mask, ht_home(a, a->b[n].off), n);
    a->ht_n++;
}

/* Removes the entry of node n (it must be there); backward-shift deletion
 * keeps every remaining entry reachable from its home slot. */
static void ht_erase(tsl_alloc *a, int32_t n) {
    size_t i = ht_home(a, a->b[n].off);
    while (a->ht[i] != n) {
        TSL_ASSERT(a->ht[i] != NIL);
        i = (i + 1) & a->ht_mask;
    }
    for (size_t j = i;;) {
        j = (j + 1) & a->ht_mask;
        if (a->ht[j] == NIL) break;
        size_t k = ht_home(a, a->b[a->ht[j]].off);
        /* the entry at j may move to the hole at i unless its home lies
         * cyclically in (i, j] */
        int stays = (i <= j) ? (k > i && k <= j) : (k > i || k <= j);
        if (!stays) {
            a->ht[i] = a->ht[j];
            i = j;
        }
    }
    a->ht[i] = NIL;
    a->ht_n--;
}

/* ---- lifetime ----------------------------------------------------------------- */

/* Contract: alignment 0 or a power of two (TSL_ASSERT). Returns NULL if the
 * host is out of memory. Usable capacity: `capacity` rounded down to the
 * alignment. */
tsl_alloc *tsl_alloc_new(size_t capacity, size_t alignment) {
    if (alignment == 0) alignment = TSL_ALLOC_ALIGN;
    TSL_ASSERT((alignment & (alignment - 1)) == 0);
    tsl_alloc *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->align = alignment;
    a->capacity = capacity & ~(alignment - 1);
    a->recycled = a->head = a->tail = a->root[BY_SIZE] = a->root[BY_OFF] = NIL;
    a->rng = 0x7E45117Eull;
    a->ht_bits = 6;
    a->ht_mask = ((size_t)1 << a->ht_bits) - 1;
    a->ht = malloc((a->ht_mask + 1) * sizeof *a->ht);
    if (!a->ht || !node_reserve(a)) {
        tsl_alloc_destroy(a);
        return NULL;
    }
    for (size_t i = 0; i <= a->ht_mask; i++) a->ht[i] = NIL;
    if (a->capacity > 0) {
        int32_t n = node_take(a);
        a->b[n].off = 0;
        a->b[n].size = a->capacity;
        a->head = a->tail = n;
        tr_insert(a, n);
    }
    return a;
}

void tsl_alloc_destroy(tsl_alloc *a) {
    if (!a) return;
    free(a->b);
    free(a->ht);
    free(a);
}

/* ---- ledger helpers ---------------------------------------------------------- */

/* End offset of the highest live block. The last block of the list is live
 * (footprint = capacity) or free; a free block's predecessor is live (free
 * blocks are never adjacent), so its offset is that live block's end. */
static size_t footprint_of(const tsl_alloc *a) {
    if (a->tail == NIL) return 0;
    return a->b[a->tail].live ? a->capacity : a->b[a->tail].off;
}

/* Records a failed allocation and its message; returns TSL_ERR_OOM. */
static tsl_status fail_oom(tsl_alloc *a, size_t nbytes, size_t need, const char *why) {
    a->n_failed++;
    size_t free_bytes = a->capacity - a->live_bytes;
    if (need == 0)
        return tsl_fail(TSL_ERR_OOM,
                        "device allocator: out of memory%s: request of %zu bytes exceeds the "
                        "capacity %zu; free bytes %zu, largest free block %zu",
                        why, nbytes, a->capacity, free_bytes, tr_largest(a));
    return tsl_fail(TSL_ERR_OOM,
                    "device allocator: out of memory%s: request of %zu bytes (%zu aligned to "
                    "%zu); free bytes %zu, largest free block %zu, capacity %zu, %llu live blocks",
                    why, nbytes, need, a->align, free_bytes, tr_largest(a), a->capacity,
                    (unsigned long long)a->n_live);
}

/* ---- alloc and release --------------------------------------------------------- */

/* The aligned size of a request of nbytes (0 bytes take one alignment
 * unit); 0 marks a request above the capacity (rounding could overflow). */
static size_t need_of(const tsl_alloc *a, size_t nbytes) {
    if (nbytes > a->capacity) return 0;
    return nbytes == 0 ? a->align : (nbytes + a->align - 1) & ~(a->align - 1);
}

/* Makes free block n, already out of the free treaps and at least `need`
 * bytes, the live block of a request of nbytes at its start: the part above
 * stays free as a node of its own, and the ledger counts the allocation.
 * The caller has reserved a node and a hash slot (nothing here can fail). */
static void take_block(tsl_alloc *a, int32_t n, size_t need, size_t nbytes) {
    blk *b = a->b;
    TSL_ASSERT(!b[n].live && b[n].size >= need);
    if (b[n].size > need) {
        int32_t r = node_take(a);
        b = a->b;
        b[r].off = b[n].off + need;
        b[r].size = b[n].size - need;
        b[r].prev = n;
        b[r].next = b[n].next;
        if (b[n].next != NIL) b[b[n].next].prev = r;
        else a->tail = r;
        b[n].next = r;
        b[n].size = need;
        tr_insert(a, r);
    }
    b[n].live = 1;
    b[n].req = nbytes;
    ht_insert(a, n);
    a->live_bytes += need;
    a->load += nbytes;
    a->n_live++;
    a->n_allocs++;
    if (a->load > a->peak_load) a->peak_load = a->load;
    size_t fp = footprint_of(a);
    if (fp > a->peak_footprint) a->peak_footprint = fp;
}

/* Contract: see tsl_alloc_alloc in alloc.h. On any failure (arena full,
 * injected fault, host out of memory for the bookkeeping) the blocks and the
 * ledger are unchanged except n_failed, and TSL_ERR_OOM is returned. */
tsl_status tsl_alloc_alloc(tsl_alloc *a, size_t nbytes, size_t *offset) {
    TSL_ASSERT(a && offset);
    size_t need = need_of(a, nbytes);
    if (a->fail_countdown && --a->fail_countdown == 0)
        return fail_oom(a, nbytes, need, " (injected fault)");
    if (need == 0) return fail_oom(a, nbytes, need, "");
    int32_t n = tr_best_fit(a, need);
    if (n == NIL) return fail_oom(a, nbytes, need, "");
    if (!node_reserve(a) || !ht_reserve(a)) {
        a->n_failed++;
        return tsl_fail(TSL_ERR_OOM, "device allocator: host out of memory for the bookkeeping "
                                     "of a request of %zu bytes", nbytes);
    }

    tr_erase(a, n);
    take_block(a, n, need, nbytes);
    *offset = a->b[n].off;
    return TSL_OK;
}

/* Makes sure two nodes can be taken without allocating. Returns 0 if the
 * host is out of memory (nothing changed but the array's capacity). */
static int node_reserve2(tsl_alloc *a) {
    int spare = (a->recycled != NIL) + (a->recycled != NIL && a->b[a->recycled].next != NIL);
    if (spare + (a->cap_b - a->n_b) >= 2) return 1;
    if (a->cap_b > INT32_MAX / 2) return 0;
    int32_t cap = a->cap_b ? 2 * a->cap_b : 64;
    blk *nb = realloc(a->b, (size_t)cap * sizeof *nb);
    if (!nb) return 0;
    a->b = nb;
    a->cap_b = cap;
    return 1;
}

/* Contract: see tsl_alloc_alloc_at in alloc.h. The free block holding
 * `offset` is found in the treap by offset (O(log n) expected). On failure the
 * blocks and the ledger are unchanged except n_failed (not for
 * TSL_ERR_BUSY, which is not a failure: the caller waits). */
tsl_status tsl_alloc_alloc_at(tsl_alloc *a, size_t offset, size_t nbytes) {
    TSL_ASSERT(a);
    TSL_ASSERT(offset % a->align == 0); /* a layout made for another alignment is a bug */
    size_t need = need_of(a, nbytes);
    if (a->fail_countdown && --a->fail_countdown == 0)
        return fail_oom(a, nbytes, need, " (injected fault)");
    if (need == 0 || offset > a->capacity - need)
        return fail_oom(a, nbytes, need, " (a placement past the capacity)");
    /* the free block at or below the offset must hold [offset, offset + need) */
    int32_t n = tr_floor_off(a, offset);
    if (n == NIL || a->b[n].off + a->b[n].size < offset + need) {
        if (n == NIL || a->b[n].off + a->b[n].size <= offset)
            return tsl_fail(TSL_ERR_BUSY, "device allocator: [%zu, %zu) is still held (a live "
                            "block holds offset %zu)", offset, offset + need, offset);
        return tsl_fail(TSL_ERR_BUSY, "device allocator: [%zu, %zu) is still held (the free "
                        "block at %zu ends at %zu)", offset, offset + need, a->b[n].off,
                        a->b[n].off + a->b[n].size);
    }
    if (!node_reserve2(a) || !ht_reserve(a)) {
        a->n_failed++;
        return tsl_fail(TSL_ERR_OOM, "device allocator: host out of memory for the bookkeeping "
                                     "of a placement of %zu bytes", nbytes);
    }
    tr_erase(a, n);
    blk *b = a->b;
    if (b[n].off < offset) { /* the part below stays free, as a node of its own */
        int32_t l = node_take(a);
        b = a->b;
        b[l].off = b[n].off;
        b[l].size = offset - b[n].off;
        b[l].prev = b[n].prev;
        b[l].next = n;
        if (b[n].prev != NIL) b[b[n].prev].next = l;
        else a->head = l;
        b[n].prev = l;
        b[n].off = offset;
        b[n].size -= b[l].size;
        tr_insert(a, l);
    }
    take_block(a, n, need, nbytes);
    return TSL_OK;
}

/* Unlinks node `victim` (free, out of the treap) that directly follows
 * `keep` in address order, and adds its size to `keep`. */
static void absorb_next(tsl_alloc *a, int32_t keep, int32_t victim) {
    blk *b = a->b;
    b[keep].size += b[victim].size;
    b[keep].next = b[victim].next;
    if (b[victim].next != NIL) b[b[victim].next].prev = keep;
    else a->tail = keep;
    node_put(a, victim);
}

/* Contract: `offset` is the offset of a live block (TSL_ASSERT otherwise).
 * The block becomes free and merges with free neighbours. Never fails. */
void tsl_alloc_release(tsl_alloc *a, size_t offset) {
    TSL_ASSERT(a);
    int32_t n = ht_find(a, offset);
    TSL_ASSERT(n != NIL); /* not the offset of a live block */
    ht_erase(a, n);
    blk *b = a->b;
    a->live_bytes -= b[n].size;
    a->load -= b[n].req;
    a->n_live--;
    a->n_frees++;
    b[n].live = 0;
    b[n].req = 0;
    int32_t p = b[n].prev, q = b[n].next;
    if (q != NIL && !b[q].live) {
        tr_erase(a, q);
        absorb_next(a, n, q);
    }
    if (p != NIL && !b[p].live) {
        tr_erase(a, p);
        absorb_next(a, p, n);
        n = p;
    }
    tr_insert(a, n);
}

/* Contract: see tsl_alloc_set_capacity in alloc.h. The last block of the
 * list is the only one that changes: a free tail is resized in place (out
 * of the treaps and back, its size being a key) or unlinked when the new
 * capacity is its offset; a live tail (or no block at all) gets a new free
 * tail when growing. */
tsl_status tsl_alloc_set_capacity(tsl_alloc *a, size_t capacity) {
    TSL_ASSERT(a);
    size_t cap = capacity & ~(a->align - 1);
    size_t fp = footprint_of(a);
    if (cap < fp) {
        /* the highest live block: the tail, or the one before a free tail */
        int32_t t = a->tail;
        int32_t hi = a->b[t].live ? t : a->b[t].prev;
        return tsl_fail(TSL_ERR_BUSY,
                        "device allocator: cannot set the capacity to %zu bytes (%zu rounded down "
                        "to the alignment %zu): the highest live block, at offset %zu of %zu "
                        "bytes (%zu requested), ends at %zu",
                        cap, capacity, a->align, a->b[hi].off, a->b[hi].size, a->b[hi].req, fp);
    }
    if (cap == a->capacity) return TSL_OK;
    int32_t t = a->tail;
    if (t != NIL && !a->b[t].live) {
        tr_erase(a, t);
        if (cap == a->b[t].off) { /* nothing left of the free tail */
            int32_t p = a->b[t].prev;
            if (p != NIL) a->b[p].next = NIL;
            else a->head = NIL;
            a->tail = p;
            node_put(a, t);
        } else {
            a->b[t].size = cap - a->b[t].off;
            tr_insert(a, t);
        }
    } else { /* cap > capacity: a live tail (footprint = capacity) or no block */
        if (!node_reserve(a))
            return tsl_fail(TSL_ERR_OOM, "device allocator: host out of memory for the "
                                         "bookkeeping of a capacity of %zu bytes", cap);
        int32_t n = node_take(a);
        a->b[n].off = a->capacity;
        a->b[n].size = cap - a->capacity;
        a->b[n].prev = t;
        if (t != NIL) a->b[t].next = n;
        else a->head = n;
        a->tail = n;
        tr_insert(a, n);
    }
    a->capacity = cap;
    return TSL_OK;
}

/* Contract: `offset` is a live block's offset (TSL_ASSERT otherwise). */
size_t tsl_alloc_size_of(const tsl_alloc *a, size_t offset) {
    TSL_ASSERT(a);
    int32_t n = ht_find(a, offset);
    TSL_ASSERT(n != NIL);
    return a->b[n].req;
}

/* Contract: `offset` is a live block's offset (TSL_ASSERT otherwise). */
size_t tsl_alloc_free_run(const tsl_alloc *a, size_t offset) {
    TSL_ASSERT(a);
    int32_t n = ht_find(a, offset);
    TSL_ASSERT(n != NIL);
    const blk *b = a->b;
    size_t run = b[n].size;
    if (b[n].prev != NIL && !b[b[n].prev].live) run += b[b[n].prev].size;
    if (b[n].next != NIL && !b[b[n].next].live) run += b[b[n].next].size;
    return run;
}

/* ---- stats, peaks, fault injection ---------------------------------------------- */

void tsl_alloc_get_stats(const tsl_alloc *a, tsl_alloc_stats *st) {
    TSL_ASSERT(a && st);
    memset(st, 0, sizeof *st);
    st->capacity = a->capacity;
    st->alignment = a->align;
    st->load = a->load;
    st->peak_load = a->peak_load;
    st->footprint = footprint_of(a);
    st->peak_footprint = a->peak_footprint;
    st->free_bytes = a->capacity - a->live_bytes;
    st->largest_free = tr_largest(a);
    st->n_allocs = a->n_allocs;
    st->n_frees = a->n_frees;
    st->n_failed = a->n_failed;
    st->n_live = a->n_live;
    st->n_free_blocks = a->n_free_blocks;
    st->fragmentation =
        st->free_bytes ? 1.0 - (double)st->largest_free / (double)st->free_bytes : 0.0;
}

void tsl_alloc_reset_peaks(tsl_alloc *a) {
    TSL_ASSERT(a);
    a->peak_load = a->load;
    a->peak_footprint = footprint_of(a);
}

void tsl_alloc_fail_at(tsl_alloc *a, uint64_t k) {
    TSL_ASSERT(a);
    a->fail_countdown = k;
}

/* ---- consistency check ------------------------------------------------------------- */

/* In-order walk of treap T with an explicit stack of limit+1 entries;
 * checks ordering, heap property and that every node is a free block.
 * Returns the node count, or -1 after recording a message. `limit` (the
 * free blocks of the list) bounds the walk and the depth, so a cycle or a
 * surplus node cannot hang it or overflow the stack. */
static int64_t tr_walk(const tsl_alloc *a, int T, int32_t *stack, int64_t limit) {
    static const char *const name[2] = {"free treap by size", "free treap by offset"};
    int64_t sp = 0, count = 0;
    int32_t t = a->root[T], last = NIL;
    while (t != NIL || sp > 0) {
        while (t != NIL) {
            if (sp > limit) {
                tsl_fail(TSL_ERR_INTERNAL, "allocator check: %s deeper than its %lld free blocks",
                         name[T], (long long)limit);
                return -1;
            }
            stack[sp++] = t;
            t = a->b[t].kid[T][0];
        }
        t = stack[--sp];
        const blk *x = &a->b[t];
        if (x->live) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: live block at offset %zu is in the %s",
                     x->off, name[T]);
            return -1;
        }
        if (last != NIL && !key_less(T, &a->b[last], x)) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: %s out of order at offset %zu", name[T],
                     x->off);
            return -1;
        }
        for (int side = 0; side < 2; side++)
            if (x->kid[T][side] != NIL && a->b[x->kid[T][side]].prio > x->prio) {
                tsl_fail(TSL_ERR_INTERNAL, "allocator check: %s heap order broken at offset %zu",
                         name[T], x->off);
                return -1;
            }
        if (++count > limit) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: %s has more than %lld nodes", name[T],
                     (long long)limit);
            return -1;
        }
        last = t;
        t = x->kid[T][1];
    }
    return count;
}

/* Walks both treaps; returns the node count if they agree (else -1 after
 * recording a message). */
static int64_t tr_check(const tsl_alloc *a, int64_t limit) {
    int32_t *stack = malloc((size_t)(limit + 1) * sizeof *stack);
    if (!stack) {
        tsl_fail(TSL_ERR_INTERNAL, "allocator check: host out of memory");
        return -1;
    }
    int64_t count = tr_walk(a, BY_SIZE, stack, limit);
    int64_t by_off = count < 0 ? -1 : tr_walk(a, BY_OFF, stack, limit);
    free(stack);
    if (count >= 0 && by_off >= 0 && by_off != count) {
        tsl_fail(TSL_ERR_INTERNAL, "allocator check: %lld free blocks by size, %lld by offset",
                 (long long)count, (long long)by_off);
        return -1;
    }
    return by_off < 0 ? -1 : count;
}

/* Contract: see alloc.h. Cost O(n). On failure the message (via tsl_fail,
 * status TSL_ERR_INTERNAL) names the offset and the rule broken. */
int tsl_alloc_check(const tsl_alloc *a) {
    TSL_ASSERT(a);
    size_t pos = 0, load = 0, live_bytes = 0, footprint = 0, largest = 0;
    uint64_t n_live = 0, n_free = 0;
    int32_t prev = NIL;
    int64_t steps = 0;
    for (int32_t n = a->head; n != NIL; prev = n, n = a->b[n].next) {
        const blk *x = &a->b[n];
        if (++steps > a->n_b) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: block list has a cycle");
            return 0;
        }
        if (x->prev != prev) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: block at offset %zu has a bad back link",
                     x->off);
            return 0;
        }
        if (x->off != pos) {
            tsl_fail(TSL_ERR_INTERNAL,
                     "allocator check: block at offset %zu, expected %zu (gap or overlap)", x->off,
                     pos);
            return 0;
        }
        if (x->size == 0 || x->size % a->align || x->off % a->align) {
            tsl_fail(TSL_ERR_INTERNAL,
                     "allocator check: block at offset %zu has size %zu (alignment %zu)", x->off,
                     x->size, a->align);
            return 0;
        }
        if (x->size > a->capacity - pos) {
            tsl_fail(TSL_ERR_INTERNAL,
                     "allocator check: block at offset %zu of size %zu passes the capacity %zu",
                     x->off, x->size, a->capacity);
            return 0;
        }
        if (x->live) {
            size_t want = x->req == 0 ? a->align : (x->req + a->align - 1) & ~(a->align - 1);
            if (want != x->size) {
                tsl_fail(TSL_ERR_INTERNAL,
                         "allocator check: live block at offset %zu has size %zu for a request "
                         "of %zu (expected %zu)", x->off, x->size, x->req, want);
                return 0;
            }
            if (ht_find(a, x->off) != n) {
                tsl_fail(TSL_ERR_INTERNAL,
                         "allocator check: live block at offset %zu missing from the hash", x->off);
                return 0;
            }
            load += x->req;
            live_bytes += x->size;
            n_live++;
            footprint = x->off + x->size;
        } else {
            if (prev != NIL && !a->b[prev].live) {
                tsl_fail(TSL_ERR_INTERNAL,
                         "allocator check: free blocks at offsets %zu and %zu are adjacent",
                         a->b[prev].off, x->off);
                return 0;
            }
            n_free++;
            if (x->size > largest) largest = x->size;
        }
        pos += x->size;
    }
    if (pos != a->capacity || (a->capacity > 0 && a->b[a->tail].off + a->b[a->tail].size != pos)) {
        tsl_fail(TSL_ERR_INTERNAL, "allocator check: blocks end at %zu, capacity is %zu", pos,
                 a->capacity);
        return 0;
    }
    int64_t in_treap = tr_check(a, (int64_t)n_free);
    if (in_treap < 0) return 0;
    if ((uint64_t)in_treap != n_free || a->n_free_blocks != n_free) {
        tsl_fail(TSL_ERR_INTERNAL,
                 "allocator check: %llu free blocks in the list, %lld in the treap, ledger says %llu",
                 (unsigned long long)n_free, (long long)in_treap,
                 (unsigned long long)a->n_free_blocks);
        return 0;
    }
    size_t ht_count = 0;
    for (size_t i = 0; i <= a->ht_mask; i++) {
        int32_t n = a->ht[i];
        if (n == NIL) continue;
        ht_count++;
        if (n < 0 || n >= a->n_b || !a->b[n].live) {
            tsl_fail(TSL_ERR_INTERNAL, "allocator check: hash slot %zu names a non-live node", i);
            return 0;
        }
    }
    if (ht_count != n_live || a->ht_n != n_live) {
        tsl_fail(TSL_ERR_INTERNAL, "allocator check: %zu hash entries (counter %zu) for %llu live blocks",
                 ht_count, a->ht_n, (unsigned long long)n_live);
        return 0;
    }
    if (load != a->load || live_bytes != a->live_bytes || n_live != a->n_live ||
        footprint != footprint_of(a) || largest != tr_largest(a)) {
        tsl_fail(TSL_ERR_INTERNAL,
                 "allocator check: ledger mismatch: load %zu (blocks say %zu), aligned live bytes "
                 "%zu (%zu), live blocks %llu (%llu), footprint %zu (%zu), largest free %zu (%zu)",
                 a->load, load, a->live_bytes, live_bytes, (unsigned long long)a->n_live,
                 (unsigned long long)n_live, footprint_of(a), footprint, tr_largest(a), largest);
        return 0;
    }
    if (a->peak_load < a->load || a->peak_footprint < footprint ||
        a->n_allocs - a->n_frees != a->n_live) {
        tsl_fail(TSL_ERR_INTERNAL,
                 "allocator check: peaks below current values or counts inconsistent "
                 "(allocs %llu, frees %llu, live %llu)",
                 (unsigned long long)a->n_allocs, (unsigned long long)a->n_frees,
                 (unsigned long long)a->n_live);
        return 0;
    }
    return 1;
}
