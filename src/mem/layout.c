/*
 * layout.c - offline placement of one iteration's blocks (tensile/layout.h),
 * after SmartPool (seeds/001, section III): weighted interval colouring.
 *
 * Each block is a weighted interval of the iteration's steps (two pieces
 * when it wraps the boundary). Blocks are placed one at a time, in an
 * order; a block goes into the best gap among the memory ranges of the
 * already placed blocks whose lifetimes intersect its own: the smallest gap
 * that holds it, the lowest on ties, or above them all when no gap does.
 * SmartPool's order is largest first. Several orders are tried - largest
 * first, longest-lived first, largest size x lifetime first, and
 * allocation order (what an online best-fit allocator sees) - each with
 * best fit, and the smallest extent wins (ties: the earlier order). All is
 * deterministic: every tie is broken by the block's index.
 *
 * One placement keeps the placed blocks sorted by offset and scans them
 * once per block, skipping those whose lifetimes do not intersect its own
 * (one bit of the conflict matrix, layout_conflicts.h, built once per
 * solve), so the gaps come out in order: quadratic in the blocks. The placements
 * tried are bounded by a budget of conflict checks (LAYOUT_WORK), so a
 * large instance gets fewer orders and rounds (very large ones: greedy by
 * breadth once).
 *
 * Blocks alive over the whole period are stacked at the bottom first
 * (stack_whole_period: never worse, and the orders see half the blocks on
 * real plans).
 *
 * When the best of them is still above the peak load, a search under a
 * capacity (layout_fit.c, after MiniMalloc) looks for a smaller extent
 * within a budget of its own (FIT_WORK); best fit cannot see layouts where
 * blocks that never meet at a peak must still trade places, which it finds
 * on real plans (a swap-heavy ResNet-18: 1.046 to 1.015).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "mem/layout_conflicts.h"
#include "mem/layout_fit.h"
#include "tensile/alloc.h"
#include "tensile/layout.h"

/* ---- blocks: aligned sizes and lifetime pieces ---------------------------------- */

typedef struct piece {
    int64_t s, e; /* [s, e), s < e */
} piece;

/* The pieces of block b's lifetime (1 or 2); period P. */
static int pieces_of(const tsl_layout_block *b, int64_t P, piece *out) {
    if (!b->wrap) {
        out[0] = (piece){b->start, b->end};
        return 1;
    }
    int n = 0;
    if (b->start < P) out[n++] = (piece){b->start, P};
    if (b->end > 0) out[n++] = (piece){0, b->end};
    return n;
}

static size_t aligned(size_t n, size_t al) { return n ? (n + al - 1) / al * al : al; }

/* Checks the arguments; TSL_ERR_INVALID naming the block and field. */
static tsl_status check_args(const tsl_layout_block *b, int32_t n, int64_t period, size_t al,
                             const char *who) {
    if (n < 0 || (n > 0 && !b))
        return tsl_fail(TSL_ERR_INVALID, "%s: %d blocks %s", who, (int)n,
                        n < 0 ? "(a negative count)" : "but no block array");
    if (period < 0)
        return tsl_fail(TSL_ERR_INVALID, "%s: period %lld is negative", who, (long long)period);
    if (al & (al - 1))
        return tsl_fail(TSL_ERR_INVALID, "%s: alignment %zu is not a power of two", who, al);
    for (int32_t i = 0; i < n; i++) {
        const tsl_layout_block *x = &b[i];
        if (x->start < 0 || x->start > period || x->end < 0 || x->end > period)
            return tsl_fail(TSL_ERR_INVALID,
                            "%s: block %d: lifetime [%lld, %lld) outside [0, %lld]", who, (int)i,
                            (long long)x->start, (long long)x->end, (long long)period);
        if (!x->wrap && x->start == x->end)
            return tsl_fail(TSL_ERR_INVALID, "%s: block %d: empty lifetime [%lld, %lld)", who,
                            (int)i, (long long)x->start, (long long)x->end);
        if ((x->wrap != 0) != (x->start >= x->end))
            return tsl_fail(TSL_ERR_INVALID,
                            "%s: block %d: wrap %d but lifetime [%lld, %lld) (a block wraps "
                            "exactly when start >= end)",
                            who, (int)i, (int)x->wrap, (long long)x->start, (long long)x->end);
        if (x->bytes > SIZE_MAX / 2)
            return tsl_fail(TSL_ERR_INVALID, "%s: block %d: %zu bytes is absurd", who, (int)i,
                            x->bytes);
    }
    /* every extent and load is at most the aligned sizes' sum: it must fit
     * (a signed 64-bit sum, for the peak) */
    size_t sum = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t a = aligned(b[i].bytes, al ? al : 1);
        if (a > (size_t)INT64_MAX - sum)
            return tsl_fail(TSL_ERR_INVALID,
                            "%s: the blocks' sizes add up past %lld bytes (at block %d)", who,
                            (long long)INT64_MAX, (int)i);
        sum += a;
    }
    return TSL_OK;
}

/* ---- placing in one order --------------------------------------------------------- */

/* Places the blocks in order ord[0..n), each at the best gap among the
 * placed blocks it conflicts with (see the head of the file): offsets into
 * off, returns the extent. by_off: scratch of n, the placed blocks sorted
 * by offset, so that one pass over them finds the gaps in order. */
static size_t place_all(const tsl__lay_block *pb, const tsl__lay_conflicts *cf, int32_t n,
                        const int32_t *ord, int32_t *by_off, size_t *off) {
    size_t extent = 0;
    int32_t n_placed = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = ord[k];
        const tsl__lay_block *x = &pb[i];
        size_t pos = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
        const tsl__lay_row row = tsl__lay_conflicts_row(cf, i);
        for (int32_t q = 0; q < n_placed; q++) {
            int32_t j = by_off[q];
            if (!tsl__lay_row_test(&row, j)) continue;
            if (off[j] > pos) {
                size_t gap = off[j] - pos;
                if (gap >= x->size && gap < best_gap) {
                    best_gap = gap;
                    best = pos;
                }
            }
            if (off[j] + pb[j].size > pos) pos = off[j] + pb[j].size;
        }
        if (best == SIZE_MAX) best = pos;
        off[i] = best;
        if (best + x->size > extent) extent = best + x->size;
        /* insert i by offset (after those at the same offset) */
        int32_t lo = 0, hi = n_placed;
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (off[by_off[mid]] <= best) lo = mid + 1;
            else hi = mid;
        }
        memmove(by_off + lo + 1, by_off + lo, (size_t)(n_placed - lo) * sizeof *by_off);
        by_off[lo] = i;
        n_placed++;
    }
    return extent;
}

/* ---- the orders -------------------------------------------------------------------- */

typedef struct keyed {
    double k1, k2; /* descending */
    int32_t i;
} keyed;

static int cmp_keyed(const void *x, const void *y) {
    const keyed *a = x, *b = y;
    if (a->k1 != b->k1) return a->k1 > b->k1 ? -1 : 1;
    if (a->k2 != b->k2) return a->k2 > b->k2 ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Lifetime length in steps. */
static double life(const tsl_layout_block *b, int64_t P) {
    return b->wrap ? (double)(P - b->start + b->end) : (double)(b->end - b->start);
}

enum { ORD_BREADTH, ORD_SIZE, ORD_LIFE, ORD_AREA, ORD_START, N_ORDERS };

/* Rounds of the squeaky wheel per order (see tsl_layout_solve); at most
 * LAYOUT_MAX_RUNS placements in all, fewer when n^2 per placement would
 * pass LAYOUT_WORK conflict checks. Then the search under a capacity gets
 * FIT_WORK units (about the time of as many conflict checks; enough for
 * some 40 dives on 300 blocks, none on 3,000). 32 placements, not 64: over
 * the frontiers of seven shapes (five policies, eight budgets each), the
 * placements past 32 changed four plans' footprints (one by +0.014 %,
 * three of DTR's, either way) and took a fifth of resnet50's planning time
 * at 0.3 (docs/RESULTS.md, "Planning time"). */
#define SQUEAKY_ROUNDS 12
#define LAYOUT_MAX_RUNS 32
#define LAYOUT_WORK ((int64_t)60 * 1000 * 1000)
#define FIT_WORK ((int64_t)20 * 1000 * 1000)

static size_t aligned_peak(const tsl_layout_block *b, int32_t n, int64_t period, size_t al);

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Order number `how`: the four named orders, then noisy ones (largest
 * first, each size scaled by a factor in [0.6, 1.4) drawn from a generator
 * seeded by `how`: deterministic). */
static void make_order(const tsl_layout_block *b, int32_t n, int64_t P, size_t al, int how,
                       const double *breadth, keyed *kv, int32_t *ord) {
    uint64_t rng = (uint64_t)how * 0x2545F4914F6CDD1Dull;
    for (int32_t i = 0; i < n; i++) {
        double sz = (double)aligned(b[i].bytes, al), lf = life(&b[i], P);
        if (how == ORD_BREADTH) { /* the busiest steps' blocks first (TFLite's greedy by
                                     breadth): they must stack exactly */
            kv[i] = (keyed){breadth[i], sz, i};
            continue;
        }
        if (how >= N_ORDERS) { /* alternately breadth and size, noisy */
            double u = (double)(splitmix64(&rng) >> 11) * (1.0 / 9007199254740992.0);
            double f = 0.6 + 0.8 * u;
            kv[i] = how % 2 ? (keyed){breadth[i] * (0.9 + 0.2 * u), sz, i}
                            : (keyed){sz * f, lf, i};
            continue;
        }
        switch (how) {
        case ORD_SIZE: kv[i] = (keyed){sz, lf, i}; break;
        case ORD_LIFE: kv[i] = (keyed){lf, sz, i}; break;
        case ORD_AREA: kv[i] = (keyed){sz * lf, sz, i}; break;
        default: /* allocation order: wrapping blocks (alive at step 0) first */
            kv[i] = (keyed){b[i].wrap ? 1.0 : -(double)b[i].start, sz, i};
            break;
        }
    }
    qsort(kv, (size_t)n, sizeof *kv, cmp_keyed);
    for (int32_t i = 0; i < n; i++) ord[i] = kv[i].i;
}

/* 1 if block x is alive at every step of the period. */
static int whole_period(const tsl_layout_block *x, int64_t P) { return life(x, P) == (double)P; }

/* Lays out the n blocks (checked, n > 0) when some of them are alive over
 * the whole period: those conflict with every other block, so stacking
 * them at the bottom (in index order) never makes the optimum larger - in
 * any layout, moving one to the bottom and the blocks below it up by its
 * size keeps every pair apart - and the others are laid out above them by
 * tsl_layout_solve. On real plans they are about half the blocks
 * (parameters, gradients and optimizer states held across iterations), and
 * the greedy orders cost the square of the blocks they see. Returns 1 when
 * it laid the blocks out (*st its status; offset and extent set when
 * TSL_OK), 0 when no block is alive over the whole period (nothing done:
 * the caller lays them out itself). */
static int stack_whole_period(const tsl_layout_block *b, int32_t n, int64_t period, size_t al,
                              size_t *offset, size_t *extent, tsl_status *st) {
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) m += !whole_period(&b[i], period);
    if (m == n) return 0;
    size_t base = 0;
    for (int32_t i = 0; i < n; i++)
        if (whole_period(&b[i], period)) {
            offset[i] = base;
            base += aligned(b[i].bytes, al);
        }
    *extent = base;
    *st = TSL_OK;
    if (m == 0) return 1;
    tsl_layout_block *rest = malloc((size_t)m * sizeof *rest);
    size_t *off = malloc((size_t)m * sizeof *off);
    if (!rest || !off) {
        free(rest);
        free(off);
        *st = tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %d blocks", (int)n);
        return 1;
    }
    for (int32_t i = 0, k = 0; i < n; i++)
        if (!whole_period(&b[i], period)) rest[k++] = b[i];
    size_t ext = 0;
    *st = tsl_layout_solve(rest, m, period, al, off, &ext);
    if (*st == TSL_OK) {
        for (int32_t i = 0, k = 0; i < n; i++)
            if (!whole_period(&b[i], period)) offset[i] = base + off[k++];
        *extent = base + ext;
    }
    free(rest);
    free(off);
    return 1;
}

tsl_status tsl_layout_solve(const tsl_layout_block *b, int32_t n, int64_t period,
                            size_t alignment, size_t *offset, size_t *extent) {
    size_t al = alignment ? alignment : TSL_ALLOC_ALIGN;
    tsl_status st = check_args(b, n, period, al, "layout");
    if (st != TSL_OK) return st;
    if (!offset || !extent) return tsl_fail(TSL_ERR_INVALID, "layout: offset or extent is NULL");
    *extent = 0;
    if (n == 0) return TSL_OK;
    if (stack_whole_period(b, n, period, al, offset, extent, &st)) return st;
    tsl__lay_block *pb = malloc((size_t)n * sizeof *pb);
    keyed *kv = malloc((size_t)n * sizeof *kv);
    int32_t *ord = malloc((size_t)n * sizeof *ord), *next = malloc((size_t)n * sizeof *next);
    int32_t *by_off = malloc((size_t)n * sizeof *by_off);
    size_t *off = malloc((size_t)n * sizeof *off);
    double *breadth = malloc((size_t)n * sizeof *breadth);
    double *load = calloc((size_t)period + 2, sizeof *load);
    size_t floor_ = aligned_peak(b, n, period, al);
    if (!pb || !kv || !ord || !next || !by_off || !off || !breadth || !load ||
        floor_ == SIZE_MAX) {
        void *all[] = {pb, kv, ord, next, by_off, off, breadth, load};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++) free(all[k]);
        return tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %d blocks", (int)n);
    }
    for (int32_t i = 0; i < n; i++) {
        piece pc[2] = {{0, 0}, {0, 0}};
        pieces_of(&b[i], period, pc);
        pb[i] = (tsl__lay_block){aligned(b[i].bytes, al), pc[0].s, pc[0].e, pc[1].s, pc[1].e};
    }
    /* each block's breadth: the largest aligned load over its lifetime */
    for (int32_t i = 0; i < n; i++) { /* difference array, then prefix sums */
        load[pb[i].s0] += (double)pb[i].size;
        load[pb[i].e0] -= (double)pb[i].size;
        load[pb[i].s1] += (double)pb[i].size;
        load[pb[i].e1] -= (double)pb[i].size;
    }
    for (int64_t x = 1; x <= period; x++) load[x] += load[x - 1];
    for (int32_t i = 0; i < n; i++) {
        double m = 0;
        for (int64_t x = pb[i].s0; x < pb[i].e0; x++) if (load[x] > m) m = load[x];
        for (int64_t x = pb[i].s1; x < pb[i].e1; x++) if (load[x] > m) m = load[x];
        breadth[i] = m;
    }
    free(load);
    tsl__lay_conflicts cf; /* asked tens of millions of times below */
    tsl__lay_conflicts_init(&cf, pb, n);
    /* placements allowed: each is quadratic in the blocks, so fewer on
     * large instances; at least the named orders once */
    int64_t nn = (int64_t)n * n, runs = LAYOUT_WORK / (nn > 0 ? nn : 1);
    if (runs > LAYOUT_MAX_RUNS) runs = LAYOUT_MAX_RUNS;
    if (runs < 1) runs = 1; /* very many blocks: greedy by breadth once */
    /* greedy by breadth, the best order on real models, gets its rounds
     * first; the other orders share what is left, one round at least */
    int64_t first = runs - (N_ORDERS - 1) < SQUEAKY_ROUNDS ? runs - (N_ORDERS - 1) : SQUEAKY_ROUNDS;
    if (first < 1) first = 1;
    int64_t rounds = (runs - first) / (N_ORDERS - 1);
    if (rounds > SQUEAKY_ROUNDS) rounds = SQUEAKY_ROUNDS;
    if (rounds < 1) rounds = 1;
    size_t best = SIZE_MAX;
    for (int how = 0; runs > 0 && best > floor_; how++) {
        make_order(b, n, period, al, how, breadth, kv, ord);
        /* squeaky wheel: the blocks that end above the lower bound go first
         * in the next round, in their order, the others after them */
        int64_t r_how = how == ORD_BREADTH ? first : rounds;
        for (int64_t round = 0; round < r_how && runs > 0 && best > floor_; round++, runs--) {
            size_t e = place_all(pb, &cf, n, ord, by_off, off);
            if (e < best) {
                best = e;
                memcpy(offset, off, (size_t)n * sizeof *off);
            }
            int32_t m = 0;
            for (int32_t k = 0; k < n; k++)
                if (off[ord[k]] + pb[ord[k]].size > floor_) next[m++] = ord[k];
            if (m == 0 || m == n) break;
            for (int32_t k = 0; k < n; k++)
                if (off[ord[k]] + pb[ord[k]].size <= floor_) next[m++] = ord[k];
            memcpy(ord, next, (size_t)n * sizeof *ord);
        }
    }
    /* above the peak: the search under a capacity may do better (out of
     * host memory there, the greedy's layout stands) */
    tsl__lay_conflicts_free(&cf);
    if (best > floor_) tsl__layout_fit_improve(pb, n, period, floor_, FIT_WORK, offset, &best);
    free(breadth);
    free(pb);
    free(kv);
    free(ord);
    free(next);
    free(by_off);
    free(off);
    *extent = best;
    return TSL_OK;
}

/* ---- peak and check ----------------------------------------------------------------- */

typedef struct delta {
    int64_t at;
    int64_t bytes; /* + allocation, - free */
} delta;

static int cmp_delta(const void *x, const void *y) {
    const delta *a = x, *b = y;
    if (a->at != b->at) return a->at < b->at ? -1 : 1;
    return (a->bytes > b->bytes) - (a->bytes < b->bytes); /* frees first */
}

/* The peak of the blocks' sizes rounded to al (al 1: the requested sizes):
 * no layout's extent is below it. 0 if out of host memory. */
static size_t aligned_peak(const tsl_layout_block *b, int32_t n, int64_t period, size_t al) {
    delta *d = malloc(((size_t)n * 4 + 1) * sizeof *d);
    if (!d) {
        tsl_fail(TSL_ERR_OOM, "layout peak: out of host memory");
        return SIZE_MAX;
    }
    size_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        piece pc[2];
        int np = pieces_of(&b[i], period, pc);
        for (int q = 0; q < np; q++) {
            int64_t sz = (int64_t)(al > 1 ? aligned(b[i].bytes, al) : b[i].bytes);
            d[m++] = (delta){pc[q].s, sz};
            d[m++] = (delta){pc[q].e, -sz};
        }
    }
    qsort(d, m, sizeof *d, cmp_delta);
    int64_t load = 0, peak = 0;
    for (size_t k = 0; k < m; k++) {
        load += d[k].bytes;
        if (load > peak) peak = load;
    }
    free(d);
    return (size_t)peak;
}

size_t tsl_layout_peak(const tsl_layout_block *b, int32_t n, int64_t period) {
    if (check_args(b, n, period, TSL_ALLOC_ALIGN, "layout peak") != TSL_OK) return 0;
    size_t p = aligned_peak(b, n, period, 1);
    return p == SIZE_MAX ? 0 : p;
}

typedef struct seg {
    int64_t s, e;
    int32_t i;
} seg;

static int cmp_seg(const void *x, const void *y) {
    const seg *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int tsl_layout_check(const tsl_layout_block *b, int32_t n, int64_t period, size_t alignment,
                     const size_t *offset) {
    size_t al = alignment ? alignment : TSL_ALLOC_ALIGN;
    if (check_args(b, n, period, al, "layout check") != TSL_OK) return 0;
    if (n > 0 && !offset) {
        tsl_fail(TSL_ERR_INVALID, "layout check: offsets are NULL");
        return 0;
    }
    for (int32_t i = 0; i < n; i++)
        if (offset[i] % al || offset[i] > SIZE_MAX - aligned(b[i].bytes, al)) {
            tsl_fail(TSL_ERR_INVALID, "layout check: block %d: offset %zu is not a multiple of %zu "
                                      "or overflows", (int)i, offset[i], al);
            return 0;
        }
    seg *s = malloc(((size_t)n * 2 + 1) * sizeof *s);
    int32_t *act = malloc(((size_t)n * 2 + 1) * sizeof *act);
    if (!s || !act) {
        free(s);
        free(act);
        tsl_fail(TSL_ERR_OOM, "layout check: out of host memory");
        return 0;
    }
    size_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        piece pc[2];
        int np = pieces_of(&b[i], period, pc);
        for (int q = 0; q < np; q++) s[m++] = (seg){pc[q].s, pc[q].e, i};
    }
    qsort(s, m, sizeof *s, cmp_seg);
    size_t na = 0;
    int ok = 1;
    for (size_t k = 0; k < m && ok; k++) {
        size_t keep = 0;
        for (size_t x = 0; x < na; x++)
            if (s[act[x]].e > s[k].s) act[keep++] = act[x];
        na = keep;
        int32_t i = s[k].i;
        size_t lo = offset[i], hi = lo + aligned(b[i].bytes, al);
        for (size_t x = 0; x < na && ok; x++) {
            int32_t j = s[act[x]].i;
            size_t lo2 = offset[j], hi2 = lo2 + aligned(b[j].bytes, al);
            if (j != i && lo < hi2 && lo2 < hi) {
                tsl_fail(TSL_ERR_INVALID,
                         "layout check: block %d [%zu, %zu) alive over [%lld, %lld)%s overlaps "
                         "block %d [%zu, %zu) alive over [%lld, %lld)%s",
                         (int)i, lo, hi, (long long)b[i].start, (long long)b[i].end,
                         b[i].wrap ? " (wrapping)" : "", (int)j, lo2, hi2, (long long)b[j].start,
                         (long long)b[j].end, b[j].wrap ? " (wrapping)" : "");
                ok = 0;
            }
        }
        act[na++] = (int32_t)k;
    }
    free(s);
    free(act);
    return ok;
}
