/*
 * layout_conflicts.h - inside the offline layout (tensile/layout.h): which
 * blocks' lifetimes intersect, as a bit matrix built once per solve, so
 * that the placements (greedy orders, layout.c; the search under a
 * capacity, layout_fit.c) test a pair with one bit instead of comparing
 * four pairs of pieces. The placements ask the same question of the same
 * pairs tens of millions of times; the answer never changes.
 */
#ifndef TSL_MEM_LAYOUT_CONFLICTS_H
#define TSL_MEM_LAYOUT_CONFLICTS_H
#include <stddef.h>
#include <stdint.h>

#include "mem/layout_fit.h"

/* The conflicts of n blocks: row i holds bit j set when blocks i and j
 * conflict (i != j; the diagonal is clear). bits is NULL when the matrix
 * would pass TSL__LAY_CONFLICTS_MAX_BYTES or host memory ran out: then
 * tsl__lay_row_test compares the pieces (the same answers). */
typedef struct tsl__lay_conflicts {
    const tsl__lay_block *b;
    size_t words; /* 64-bit words per row */
    uint64_t *bits;
} tsl__lay_conflicts;

/* The matrix's largest size (n = 8,192 blocks: 8 MiB). */
#define TSL__LAY_CONFLICTS_MAX_BYTES ((size_t)8 << 20)

/* Builds the conflicts of the n blocks b[0..n) (n >= 0; b stays owned by the
 * caller and must outlive c). Never fails: without the matrix the test
 * falls back to the pieces. Free with tsl__lay_conflicts_free. */
void tsl__lay_conflicts_init(tsl__lay_conflicts *c, const tsl__lay_block *b, int32_t n);

/* Frees what init allocated (c may be zeroed, or freed already). */
void tsl__lay_conflicts_free(tsl__lay_conflicts *c);

/* Block i's row of the matrix, for asking many questions of one block
 * (the placements' inner loops): bits NULL when there is no matrix. */
typedef struct tsl__lay_row {
    const tsl__lay_conflicts *c;
    const uint64_t *bits;
    int32_t i;
} tsl__lay_row;

static inline tsl__lay_row tsl__lay_conflicts_row(const tsl__lay_conflicts *c, int32_t i) {
    return (tsl__lay_row){c, c->bits ? c->bits + (size_t)i * c->words : NULL, i};
}

/* 1 if the row's block and block j (j != the row's) conflict: what
 * tsl__lay_conflict says of the two. */
static inline int tsl__lay_row_test(const tsl__lay_row *r, int32_t j) {
    if (!r->bits) return tsl__lay_conflict(&r->c->b[r->i], &r->c->b[j]);
    return (int)((r->bits[(size_t)j >> 6] >> ((unsigned)j & 63)) & 1u);
}

#endif
