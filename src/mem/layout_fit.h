/*
 * layout_fit.h - inside the offline layout (tensile/layout.h): a block as
 * placement sees it, shared by the greedy orders (layout.c) and the
 * bounded search for a layout under a capacity (layout_fit.c).
 */
#ifndef TSL_MEM_LAYOUT_FIT_H
#define TSL_MEM_LAYOUT_FIT_H
#include <stddef.h>
#include <stdint.h>

/* A block as placement sees it: its aligned size and its lifetime's pieces
 * [s0, e0) and [s1, e1) within [0, period) (the second one only when it
 * wraps; an absent piece is empty, s = e = 0). */
typedef struct tsl__lay_block {
    size_t size;
    int64_t s0, e0, s1, e1;
} tsl__lay_block;

/* 1 if the lifetimes of a and b intersect (the blocks may not share memory). */
static inline int tsl__lay_conflict(const tsl__lay_block *a, const tsl__lay_block *b) {
    return (a->s0 < b->e0 && b->s0 < a->e0) || (a->s0 < b->e1 && b->s1 < a->e0) ||
           (a->s1 < b->e0 && b->s0 < a->e1) || (a->s1 < b->e1 && b->s1 < a->e1);
}

/* The static orders a search can rank candidates by (layout_fit.c). */
enum { TSL__FIT_ORDERS = 3 };

/* Extents closer than 1 / TSL__FIT_RESOLUTION of the peak load are not
 * worth a search. */
enum { TSL__FIT_RESOLUTION = 2048 };

/* What one search under a capacity ends with. */
enum { TSL__FIT_FOUND, TSL__FIT_NONE, TSL__FIT_STOPPED };

/* One search for a layout of the n blocks (period > 0) with every top at
 * most cap, ranking candidates by static order `order` (0 .. TSL__FIT_ORDERS
 * - 1), making at most node_limit placements: TSL__FIT_FOUND (offset holds
 * it), TSL__FIT_NONE (no layout within cap exists: the search was complete)
 * or TSL__FIT_STOPPED (the limit was reached, or out of host memory). */
int tsl__layout_fit(const tsl__lay_block *lb, int32_t n, int64_t period, size_t cap, int order,
                    int64_t node_limit, size_t *offset);

/* Looks for a layout of the n blocks (period > 0) whose extent is below
 * *extent: capacities between `lower` (the aligned peak load: nothing fits
 * below it) and *extent, on ever finer grids, each tried by short searches
 * (layout_fit.c). It stops once `budget` units of work are spent (one
 * unit: one block or step looked at; the placement in progress finishes),
 * and does not start when the budget is too small for a few searches or
 * *extent is within lower / TSL__FIT_RESOLUTION of lower (nor tells
 * capacities closer than that apart). When it finds a better layout, offset
 * and *extent take it; else they are left alone. Deterministic; a larger
 * budget never ends with a larger extent. Returns the work spent, or -1
 * when out of host memory before searching (nothing changed; running out
 * later ends the search as the budget does). */
int64_t tsl__layout_fit_improve(const tsl__lay_block *lb, int32_t n, int64_t period, size_t lower,
                                int64_t budget, size_t *offset, size_t *extent);

#endif
