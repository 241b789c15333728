/*
 * heap_impl.h - one binary min-heap, instantiated for each element type
 * that needs one (the simulator's agenda, the runtime's execution queue and
 * virtual agenda): the orders differ, the sift-up and sift-down do not.
 *
 *   TSL__HEAP_DEFINE(prefix, heap_t, elem_t, before)
 *
 * heap_t has `elem_t *a; int64_t n, cap; uint64_t next_seq;`, elem_t has a
 * `uint64_t seq`, and `before(const elem_t *x, const elem_t *y)` is 1 when x
 * comes out first (a strict order; seq should end it, so that the order is
 * total and deterministic). Defines, static:
 *
 *   int prefix_push(heap_t *h, elem_t e)  gives e the next seq, inserts it;
 *                                         0, or -1 if out of memory (h as it was)
 *   elem_t prefix_pop(heap_t *h)          removes and returns the least; h->n > 0
 */
#ifndef TSL_CORE_HEAP_IMPL_H
#define TSL_CORE_HEAP_IMPL_H
#include <stdint.h>
#include <stdlib.h>

#include "core/assert.h"

#define TSL__HEAP_DEFINE(prefix, heap_t, elem_t, before)                            \
    static int prefix##_push(heap_t *h, elem_t e) {                                 \
        if (h->n == h->cap) {                                                       \
            int64_t cap = h->cap ? 2 * h->cap : 256;                                \
            elem_t *a = realloc(h->a, (size_t)cap * sizeof *a);                     \
            if (!a) return -1;                                                      \
            h->a = a;                                                               \
            h->cap = cap;                                                           \
        }                                                                           \
        e.seq = h->next_seq++;                                                      \
        int64_t i = h->n++;                                                         \
        while (i > 0) {                                                             \
            int64_t p = (i - 1) / 2;                                                \
            if (!before(&e, &h->a[p])) break;                                       \
            h->a[i] = h->a[p];                                                      \
            i = p;                                                                  \
        }                                                                           \
        h->a[i] = e;                                                                \
        return 0;                                                                   \
    }                                                                               \
    static elem_t prefix##_pop(heap_t *h) {                                         \
        TSL_ASSERT(h->n > 0);                                                       \
        elem_t top = h->a[0], last = h->a[--h->n];                                  \
        int64_t i = 0;                                                              \
        for (;;) {                                                                  \
            int64_t c = 2 * i + 1;                                                  \
            if (c >= h->n) break;                                                   \
            if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c])) c++;                \
            if (!before(&h->a[c], &last)) break;                                    \
            h->a[i] = h->a[c];                                                      \
            i = c;                                                                  \
        }                                                                           \
        if (h->n > 0) h->a[i] = last;                                               \
        return top;                                                                 \
    }
#endif
