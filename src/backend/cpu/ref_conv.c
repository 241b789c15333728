/*
 * ref_conv.c - reference kernels of the conv family: CONV2D,
 * CONV2D_BWD_DATA, CONV2D_BWD_FILTER, CONV2D_TRANSPOSE, in float and double.
 *
 * Every kernel is written once in ref_conv.inc and compiled twice (REAL =
 * float, double). All of them are phrased over one geometry: a conv that
 * maps an "x side" (N,Cx,H,W) to a "y side" (N,Cy,Ho,Wo) with a weight
 * (Cy, Cx/g, KH, KW):
 *   CONV2D             x side = in[0],  y side = out[0]
 *   CONV2D_BWD_DATA    y side = in[0] (dy), x side = out[0] (dx)
 *   CONV2D_BWD_FILTER  y side = in[0] (dy), x side = in[1] (x)
 *   CONV2D_TRANSPOSE   y side = in[0] (its x), x side = out[0] (its y): the
 *                      data gradient of the conv mapping its output space
 *                      back to its input space, plus the bias.
 * Sizes come from the tensor descriptors, never from the formulas, so a
 * transposed conv's output_padding rows are handled like any others.
 *
 * Determinism: the work is split over independent output planes (or weight
 * slices) with `omp parallel for`; each output element is summed in a fixed
 * order, so the bits do not depend on the thread count. Sums that run over
 * the batch and the spatial positions (filter and bias gradients) accumulate
 * in double in both precisions.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

typedef struct conv_geom {
    int64_t n;
    int64_t cx, h, w;   /* x side (N,Cx,H,W)    */
    int64_t cy, ho, wo; /* y side (N,Cy,Ho,Wo)  */
    int64_t kh, kw;
    int64_t cxg, cyg;   /* channels per group on each side */
    int64_t sh, sw, ph, pw, dh, dw;
} conv_geom;

/* Geometry from the descriptors of the x-side, y-side and weight tensors.
 * Inconsistent shapes are bugs of the builder (TSL_ASSERT). */
static conv_geom geom(const tsl_graph *g, tsl_tid xs, tsl_tid ys, tsl_tid wt,
                      const tsl_conv_attr *a) {
    const tsl_shape *x = &tsl_graph_tensor(g, xs)->shape;
    const tsl_shape *y = &tsl_graph_tensor(g, ys)->shape;
    const tsl_shape *w = &tsl_graph_tensor(g, wt)->shape;
    TSL_ASSERT(x->ndim == 4 && y->ndim == 4 && w->ndim == 4);
    TSL_ASSERT(a->groups >= 1 && a->stride_h >= 1 && a->stride_w >= 1);
    conv_geom G;
    G.n = x->d[0];
    G.cx = x->d[1], G.h = x->d[2], G.w = x->d[3];
    G.cy = y->d[1], G.ho = y->d[2], G.wo = y->d[3];
    G.kh = w->d[2], G.kw = w->d[3];
    G.cxg = G.cx / a->groups, G.cyg = G.cy / a->groups;
    G.sh = a->stride_h, G.sw = a->stride_w, G.ph = a->pad_h, G.pw = a->pad_w;
    G.dh = a->dil_h, G.dw = a->dil_w;
    TSL_ASSERT(y->d[0] == G.n && w->d[0] == G.cy && w->d[1] == G.cxg);
    TSL_ASSERT(G.cxg * a->groups == G.cx && G.cyg * a->groups == G.cy);
    return G;
}

/* Output positions o in [0, out_len) whose input position o*s + off lies in
 * [0, in_len): writes the range [*lo, *hi) (empty when *lo == *hi). */
static void valid_range(int64_t off, int64_t s, int64_t in_len, int64_t out_len, int64_t *lo,
                        int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = in_len - off <= 0 ? 0 : (in_len - off - 1) / s + 1;
    if (h > out_len) h = out_len;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

static int nthreads_of(const tsl_kernel_args *a) { return a->nthreads > 0 ? a->nthreads : 1; }

#define REF_INC "ref_conv.inc"
#include "ref_instantiate.h"

void tsl__ref_register_conv(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_CONV2D] = (tsl_ref_kernel){k_conv2d_f32, k_conv2d_f64};
    table[TSL_OP_CONV2D_BWD_DATA] = (tsl_ref_kernel){k_conv2d_bwd_data_f32, k_conv2d_bwd_data_f64};
    table[TSL_OP_CONV2D_BWD_FILTER] =
        (tsl_ref_kernel){k_conv2d_bwd_filter_f32, k_conv2d_bwd_filter_f64};
    table[TSL_OP_CONV2D_TRANSPOSE] =
        (tsl_ref_kernel){k_conv2d_transpose_f32, k_conv2d_transpose_f64};
}
