/*
 * tensile/alloc.h - the device allocator: best-fit with coalescing over a
 * fixed-capacity arena, with an exact ledger.
 *
 * The allocator hands out offsets in [0, capacity); it never touches memory,
 * so the same code manages the CPU backend's arena, a cudaMalloc'd arena,
 * and dry runs that only count. Every block starts at a multiple of the
 * alignment (256 bytes by default, like cudaMalloc) and its size is rounded
 * up to it.
 *
 * Ledger (exact, in bytes):
 *   load       sum of the requested sizes of live blocks (what tensors need)
 *   footprint  end offset of the highest live block (what the arena must hold:
 *              load + alignment padding + holes)
 *   peaks of both, allocation and free counts, failed allocations.
 *
 * Example usage:
 *
 *   tsl_alloc *a = tsl_alloc_new(4ull << 30, 256);
 *   size_t off;
 *   if (tsl_alloc_alloc(a, 1000, &off) == TSL_ERR_OOM) ...;
 *   tsl_alloc_release(a, off);
 *   tsl_alloc_stats st; tsl_alloc_get_stats(a, &st);
 *   tsl_alloc_destroy(a);
 */
#ifndef TENSILE_ALLOC_H
#define TENSILE_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_ALLOC_ALIGN 256

typedef struct tsl_alloc tsl_alloc;

typedef struct tsl_alloc_stats {
    size_t capacity;
    size_t alignment;
    size_t load, peak_load;
    size_t footprint, peak_footprint;
    size_t free_bytes;        /* capacity - sum of (aligned) live block sizes */
    size_t largest_free;      /* largest free block (an allocation up to this succeeds) */
    uint64_t n_allocs, n_frees, n_failed;
    uint64_t n_live;          /* live blocks */
    uint64_t n_free_blocks;   /* free blocks (holes plus the tail) */
    double fragmentation;     /* 1 - largest_free / free_bytes (0 when free_bytes == 0) */
} tsl_alloc_stats;

/* A new allocator over `capacity` bytes rounded down to a multiple of the
 * alignment (so that any request up to largest_free succeeds). `alignment`
 * must be a power of two (0 means TSL_ALLOC_ALIGN). Returns NULL if out of
 * host memory. Not thread-safe: callers sharing one allocator take turns.
 * n_allocs counts successful allocations; an injected fault fires once and
 * counts in n_failed. */
tsl_alloc *tsl_alloc_new(size_t capacity, size_t alignment);
void tsl_alloc_destroy(tsl_alloc *a); /* NULL is fine */

/* Best fit: the smallest free block that holds the aligned size, lowest
 * offset on ties. nbytes 0 is served as one alignment unit. On success
 * *offset is set and TSL_OK returned; if no free block is large enough,
 * TSL_ERR_OOM is returned with a message naming the request, the free bytes
 * and the largest free block, and n_failed is counted. */
tsl_status tsl_alloc_alloc(tsl_alloc *a, size_t nbytes, size_t *offset);

/* Placement: allocates exactly [offset, offset + aligned size) - what an
 * offline layout (tensile/layout.h) planned. offset must be a multiple of
 * the alignment. TSL_OK if that range lies in one free block (which is
 * split around it); TSL_ERR_BUSY if any of it is held by a live block (the
 * caller waits for that block to go, nothing is counted as failed);
 * TSL_ERR_OOM if the range passes the capacity, or an injected fault fires
 * (counted in n_failed, like tsl_alloc_alloc). The ledger counts it like
 * any allocation. O(log n) expected, as tsl_alloc_alloc. */
tsl_status tsl_alloc_alloc_at(tsl_alloc *a, size_t offset, size_t nbytes);

/* Changes the capacity to `capacity` rounded down to the alignment, as
 * tsl_alloc_new does: the free tail grows or shrinks (or a free tail is
 * added after a live one, or removed); live blocks never move. Returns
 * TSL_ERR_BUSY, with a message naming the highest live block (its offset,
 * size and end), if the footprint is above the new capacity; TSL_ERR_OOM if
 * the host is out of memory for the bookkeeping of a new tail. On failure
 * nothing changes. The ledger keeps its figures (the peaks are history and
 * may stay above a lowered capacity); tsl_alloc_check holds after it.
 * O(log n) expected. */
tsl_status tsl_alloc_set_capacity(tsl_alloc *a, size_t capacity);

/* Frees the live block at `offset` and coalesces it with free neighbours.
 * Freeing anything but a live block's offset is a bug (TSL_ASSERT). */
void tsl_alloc_release(tsl_alloc *a, size_t offset);

/* Requested size of the live block at offset (TSL_ASSERT if none). */
size_t tsl_alloc_size_of(const tsl_alloc *a, size_t offset);
/* The contiguous free bytes there would be if the live block at offset
 * were released: its size with the free blocks either side of it (what an
 * eviction that must open one block of some size weighs). TSL_ASSERT if no
 * live block is there. O(1) expected. */
size_t tsl_alloc_free_run(const tsl_alloc *a, size_t offset);

void tsl_alloc_get_stats(const tsl_alloc *a, tsl_alloc_stats *st);
/* Sets the peaks to the current values (start of a measured iteration). */
void tsl_alloc_reset_peaks(tsl_alloc *a);

/* Fault injection: the k-th call of tsl_alloc_alloc or tsl_alloc_alloc_at
 * from now (1-based) fails with TSL_ERR_OOM as if the arena were full (a
 * placement: even where its place is held); 0 disables. */
void tsl_alloc_fail_at(tsl_alloc *a, uint64_t k);

/* Expensive consistency check (tests, debug): blocks tile [0, capacity)
 * exactly, live blocks never overlap, no two free blocks are adjacent, the
 * ledger matches the blocks. Returns 1 if consistent, else 0 and records a
 * message saying what is wrong. */
int tsl_alloc_check(const tsl_alloc *a);

#ifdef __cplusplus
}
#endif
#endif
