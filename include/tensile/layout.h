/*
 * tensile/layout.h - offline placement of one iteration's device blocks
 * (SmartPool, seeds/001 section III): given every block one iteration
 * holds - its size and its lifetime - give each an offset so that no two
 * blocks alive at the same moment overlap, with the smallest extent found.
 *
 * The extent (the end of the highest block) is the device memory the
 * iteration must really hold: its footprint. A layout never beats the peak
 * load (the most bytes alive at one moment); the competitive ratio
 * extent / peak load says how close it comes (SmartPool's Table I:
 * 1.0005 - 1.016 on real networks).
 *
 * Lifetimes are counted in the steps of one iteration: integers in
 * [0, period]. A block lives over [start, end); blocks whose lifetimes do
 * not intersect may share memory, so a block freed at step k and one
 * allocated at step k never conflict. A block alive across the iteration's
 * boundary (a persistent tensor resident when the iteration starts and
 * when it ends, in one residency) wraps: it lives over [start, period) and
 * [0, end), start >= end. A block alive for the whole iteration has
 * start = 0, end = period.
 *
 * Example usage:
 *
 *   tsl_layout_block b[3] = {{1000, 0, 4, 0}, {500, 2, 6, 0}, {800, 4, 8, 0}};
 *   size_t off[3], extent;
 *   if (tsl_layout_solve(b, 3, 8, 256, off, &extent) != TSL_OK) ...;
 *   // blocks 0 and 2 may share [0, 1024); block 1 sits above one of them
 */
#ifndef TENSILE_LAYOUT_H
#define TENSILE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_layout_block {
    size_t bytes;          /* requested size (placed rounded up to the alignment; 0 takes one
                              alignment unit, as the allocator does) */
    int64_t start, end;    /* lifetime [start, end) in [0, period]; start >= end: wraps */
    uint8_t wrap;          /* 1: the block wraps (must agree with start >= end) */
} tsl_layout_block;

/* Places the n blocks: offset[i] (a multiple of `alignment`, a power of two;
 * 0 means TSL_ALLOC_ALIGN) for each, such that blocks whose lifetimes
 * intersect never overlap in [offset, offset + aligned bytes). *extent is
 * the highest end offset (0 for n == 0). Several orders are tried (largest
 * first with best fit among the gaps the conflicting blocks leave, as
 * SmartPool; others that win on real models) and the smallest extent kept;
 * above the peak load, a bounded search under a capacity (after
 * MiniMalloc) may then find a smaller one. Work is bounded by counts, not
 * time: the result is deterministic. TSL_ERR_INVALID (naming the block and the
 * field) for a lifetime outside [0, period] or a wrap flag that disagrees
 * with start >= end; TSL_ERR_OOM. */
tsl_status tsl_layout_solve(const tsl_layout_block *b, int32_t n, int64_t period,
                            size_t alignment, size_t *offset, size_t *extent);

/* The peak load of the blocks: the most requested bytes alive at one step
 * (what no layout can beat, up to alignment). Same argument rules as
 * tsl_layout_solve; returns 0 with an error recorded on bad input. */
size_t tsl_layout_peak(const tsl_layout_block *b, int32_t n, int64_t period);

/* 1 if offsets put no two conflicting blocks on overlapping memory (the
 * verifier's check); 0 otherwise, with a message naming the two blocks,
 * their lifetimes and their ranges. */
int tsl_layout_check(const tsl_layout_block *b, int32_t n, int64_t period, size_t alignment,
                     const size_t *offset);

#ifdef __cplusplus
}
#endif
#endif
