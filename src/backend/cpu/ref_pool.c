/*
 * ref_pool.c - reference kernels of the pool family: MAXPOOL2D(_BWD),
 * AVGPOOL2D(_BWD), GLOBAL_AVGPOOL(_BWD), in float and double.
 *
 * Every kernel is written once in ref_pool.inc and compiled twice (REAL =
 * float, double). Windows: output (oh,ow) covers input rows
 * [oh*sh - ph, oh*sh - ph + KH) and columns likewise; positions outside the
 * input are padding (-infinity for max, 0 for average, and counted in the
 * divisor only with count_include_pad).
 *
 * Determinism: work is split over independent (n,c) planes with
 * `omp parallel for`; within a plane every element is computed in a fixed
 * order, so the bits do not depend on the thread count. Window and plane sums
 * accumulate in double in both precisions.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

typedef struct pool_geom {
    int64_t planes;      /* N*C */
    int64_t h, w;        /* input plane  */
    int64_t ho, wo;      /* output plane */
    int64_t kh, kw, sh, sw, ph, pw;
    int include_pad;
} pool_geom;

/* Geometry from the (N,C,H,W) input side and (N,C,Ho,Wo) output side
 * descriptors. Inconsistent shapes are builder bugs (TSL_ASSERT). */
static pool_geom pgeom(const tsl_graph *g, tsl_tid xs, tsl_tid ys, const tsl_pool_attr *a) {
    const tsl_shape *x = &tsl_graph_tensor(g, xs)->shape;
    const tsl_shape *y = &tsl_graph_tensor(g, ys)->shape;
    TSL_ASSERT(x->ndim == 4 && y->ndim == 4);
    TSL_ASSERT(x->d[0] == y->d[0] && x->d[1] == y->d[1]);
    TSL_ASSERT(a->stride_h >= 1 && a->stride_w >= 1 && a->kernel_h >= 1 && a->kernel_w >= 1);
    pool_geom G;
    G.planes = x->d[0] * x->d[1];
    G.h = x->d[2], G.w = x->d[3], G.ho = y->d[2], G.wo = y->d[3];
    G.kh = a->kernel_h, G.kw = a->kernel_w, G.sh = a->stride_h, G.sw = a->stride_w;
    G.ph = a->pad_h, G.pw = a->pad_w;
    G.include_pad = a->count_include_pad;
    return G;
}

/* The in-bounds part [*lo, *hi) of the window starting at `start` of length
 * k over an axis of length len. */
static void clip(int64_t start, int64_t k, int64_t len, int64_t *lo, int64_t *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k > len ? len : start + k;
}

static int nthreads_of(const tsl_kernel_args *a) { return a->nthreads > 0 ? a->nthreads : 1; }

#define REF_INC "ref_pool.inc"
#include "ref_instantiate.h"

void tsl__ref_register_pool(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_MAXPOOL2D] = (tsl_ref_kernel){k_maxpool_f32, k_maxpool_f64};
    table[TSL_OP_MAXPOOL2D_BWD] = (tsl_ref_kernel){k_maxpool_bwd_f32, k_maxpool_bwd_f64};
    table[TSL_OP_AVGPOOL2D] = (tsl_ref_kernel){k_avgpool_f32, k_avgpool_f64};
    table[TSL_OP_AVGPOOL2D_BWD] = (tsl_ref_kernel){k_avgpool_bwd_f32, k_avgpool_bwd_f64};
    table[TSL_OP_GLOBAL_AVGPOOL] = (tsl_ref_kernel){k_gap_f32, k_gap_f64};
    table[TSL_OP_GLOBAL_AVGPOOL_BWD] = (tsl_ref_kernel){k_gap_bwd_f32, k_gap_bwd_f64};
}
