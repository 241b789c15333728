/*
 * pool_geom.h - the geometry of the pool family's kernels, shared by the
 * reference kernels (ref_pool.c) and the fast ones (fast_pool.c): output
 * (oh,ow) covers input rows [oh*sh - ph, oh*sh - ph + KH) and columns
 * likewise; positions outside the input are padding.
 */
#ifndef TSL_BACKEND_CPU_POOL_GEOM_H
#define TSL_BACKEND_CPU_POOL_GEOM_H

#include <stdint.h>

#include "core/assert.h"
#include "tensile/graph.h"

typedef struct pool_geom {
    int64_t planes;      /* N*C */
    int64_t h, w;        /* input plane  */
    int64_t ho, wo;      /* output plane */
    int64_t kh, kw, sh, sw, ph, pw;
    int include_pad;
} pool_geom;

/* Geometry from the (N,C,H,W) input side and (N,C,Ho,Wo) output side
 * descriptors. Inconsistent shapes are builder bugs (TSL_ASSERT). */
static inline pool_geom pgeom(const tsl_graph *g, tsl_tid xs, tsl_tid ys, const tsl_pool_attr *a) {
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
static inline void clip(int64_t start, int64_t k, int64_t len, int64_t *lo, int64_t *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k > len ? len : start + k;
}

/* The divisor of window (oh,ow): KH*KW clipped to the padded input (as
 * PyTorch) with count_include_pad, else the number of in-bounds elements. */
static inline double pool_divisor(const pool_geom *G, int64_t oh, int64_t ow) {
    int64_t hs = oh * G->sh - G->ph, ws = ow * G->sw - G->pw, h0, h1, w0, w1;
    if (G->include_pad) {
        int64_t he = hs + G->kh < G->h + G->ph ? hs + G->kh : G->h + G->ph;
        int64_t we = ws + G->kw < G->w + G->pw ? ws + G->kw : G->w + G->pw;
        return (double)((he - hs) * (we - ws));
    }
    clip(hs, G->kh, G->h, &h0, &h1);
    clip(ws, G->kw, G->w, &w0, &w1);
    return (double)((h1 - h0) * (w1 - w0));
}

#endif
