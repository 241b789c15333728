/*
 * conv_geom.h - the geometry of the conv family's kernels, shared by the
 * reference kernels (ref_conv.c) and the algorithm kernels (conv_algos.c):
 * a conv maps an "x side" (N,Cx,H,W) to a "y side" (N,Cy,Ho,Wo) with a
 * weight (Cy, Cx/g, KH, KW); which tensor is which side per op is in
 * ref_conv.c.
 */
#ifndef TSL_BACKEND_CPU_CONV_GEOM_H
#define TSL_BACKEND_CPU_CONV_GEOM_H

#include <stdint.h>
#include <string.h>

#include "core/assert.h"
#include "tensile/graph.h"

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
static inline conv_geom geom(const tsl_graph *g, tsl_tid xs, tsl_tid ys, tsl_tid wt,
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
static inline void valid_range(int64_t off, int64_t s, int64_t in_len, int64_t out_len, int64_t *lo,
                        int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = in_len - off <= 0 ? 0 : (in_len - off - 1) / s + 1;
    if (h > out_len) h = out_len;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Row k = (cil*KH + i)*KW + j of the column matrix of image n, group gi of
 * x (x side, (N,Cx,H,W)), written to row[0, Ho*Wo): column p = oh*Wo + ow
 * holds x[n, gi*Cxg+cil, oh*sh + i*dh - ph, ow*sw + j*dw - pw], 0 in the
 * padding. Shared by the im2col algorithm (conv_algos.c) and the batched
 * filter gradient (fast_wgrad_gemm.c). */
static inline void im2col_row(const conv_geom *G, const float *x, int64_t n, int64_t gi, int64_t k,
                              float *row) {
    int64_t cil = k / (G->kh * G->kw), i = (k / G->kw) % G->kh, j = k % G->kw;
    const float *xp = x + (n * G->cx + gi * G->cxg + cil) * G->h * G->w;
    int64_t offh = i * G->dh - G->ph, offw = j * G->dw - G->pw, olo, ohi, wlo, whi;
    valid_range(offh, G->sh, G->h, G->ho, &olo, &ohi);
    valid_range(offw, G->sw, G->w, G->wo, &wlo, &whi);
    memset(row, 0, sizeof *row * (size_t)(G->ho * G->wo));
    for (int64_t oh = olo; oh < ohi; oh++) {
        const float *xr = xp + (oh * G->sh + offh) * G->w;
        float *r = row + oh * G->wo;
        for (int64_t ow = wlo; ow < whi; ow++) r[ow] = xr[ow * G->sw + offw];
    }
}

#endif
