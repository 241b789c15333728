/*
 * fast_pool.c - pooling on plain (N,C,H,W) planes: MAXPOOL2D(_BWD) and
 * AVGPOOL2D(_BWD), float.
 *
 * oneDNN 2.6 serves plain-layout pooling with its generic simple_nchw
 * kernel, measured 2x slower than the reference loops (bench_kernels); the
 * reference in turn finds each window's maximum through a call per output.
 * These kernels work a row of outputs at a time: for each output row, each
 * in-bounds window row ih and each kernel column j, one pass over the
 * outputs whose column ow*sw - pw + j is inside the plane (a range computed
 * once, so the inner loop has no test and vectorises). Up to CHUNK outputs
 * of a row are kept in a stack buffer.
 *
 * Semantics and bits:
 *   max      every output visits its window in the reference's order (row,
 *            then column) from the window's first in-bounds element and
 *            keeps a value only when strictly greater: the reference's "first
 *            maximum", so y and the backward's scatter position are the
 *            reference's exactly (NaN and signed zeros included); the
 *            backward adds dy to dx in the reference's order (oh, then ow),
 *            so dx is the reference's bit for bit.
 *   average  sums in float in window order, divided by the reference's
 *            divisor (pool_divisor); the backward adds dy/divisor over each
 *            window. Both within the fast kernels' tolerance of the
 *            reference (which sums in double), not bitwise.
 * Work is split over (n,c) planes with `omp parallel for`, every element
 * computed in a fixed order: the bits do not depend on the thread count.
 * No state, no workspace. Float64 runs (the oracle) go to the reference.
 */
#include <string.h>

#include "backend/cpu/kernel.h"
#include "backend/cpu/pool_geom.h"

#define CHUNK 256 /* outputs of a row handled together */

/* The outputs ow in [o0, o1) whose window column ow*sw - pw + j lies in
 * [0, W): writes [*lo, *hi) (empty when *lo >= *hi). */
static void columns(const pool_geom *G, int64_t j, int64_t o0, int64_t o1, int64_t *lo,
                    int64_t *hi) {
    int64_t off = j - G->pw, l = 0, h;
    if (off < 0) l = (-off + G->sw - 1) / G->sw;
    h = G->w - off <= 0 ? 0 : (G->w - off - 1) / G->sw + 1;
    *lo = l > o0 ? l : o0;
    *hi = h < o1 ? h : o1;
}

/* For outputs [o0, o1) of row oh of plane xp: m[ow - o0] = the window's
 * first maximum and, when idx is not NULL, idx[ow - o0] its index in the
 * plane (see the file comment). */
static void max_row(const pool_geom *G, const float *xp, int64_t oh, int64_t o0, int64_t o1,
                    float *m, int32_t *idx) {
    int64_t h0, h1;
    clip(oh * G->sh - G->ph, G->kh, G->h, &h0, &h1);
    TSL_ASSERT(h0 < h1);
    for (int64_t ow = o0; ow < o1; ow++) { /* the first in-bounds element */
        int64_t w0, w1;
        clip(ow * G->sw - G->pw, G->kw, G->w, &w0, &w1);
        TSL_ASSERT(w0 < w1);
        m[ow - o0] = xp[h0 * G->w + w0];
        if (idx) idx[ow - o0] = (int32_t)(h0 * G->w + w0);
    }
    for (int64_t ih = h0; ih < h1; ih++) {
        const float *xr = xp + ih * G->w;
        for (int64_t j = 0; j < G->kw; j++) {
            int64_t lo, hi, off = j - G->pw;
            columns(G, j, o0, o1, &lo, &hi);
            if (idx) {
                int32_t base = (int32_t)(ih * G->w + off), sw = (int32_t)G->sw;
#pragma omp simd
                for (int64_t ow = lo; ow < hi; ow++) {
                    /* branch-free: a max window's winner is data-dependent */
                    float v = xr[ow * G->sw + off];
                    int32_t take = -(int32_t)(v > m[ow - o0]); /* all ones or 0 */
                    m[ow - o0] = v > m[ow - o0] ? v : m[ow - o0];
                    idx[ow - o0] = (idx[ow - o0] & ~take) | ((base + (int32_t)ow * sw) & take);
                }
            } else {
#pragma omp simd
                for (int64_t ow = lo; ow < hi; ow++) {
                    float v = xr[ow * G->sw + off];
                    m[ow - o0] = v > m[ow - o0] ? v : m[ow - o0];
                }
            }
        }
    }
}

/* MAXPOOL2D (x) -> y. */
static tsl_status maxpool_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    pool_geom G = pgeom(a->g, a->op->in[0], a->op->out[0], &a->op->attr.pool);
    const float *x = a->in[0];
    float *y = a->out[0];
#pragma omp parallel for schedule(static) num_threads(tsl__kernel_threads(a))
    for (int64_t p = 0; p < G.planes; p++) {
        const float *xp = x + p * G.h * G.w;
        float *yp = y + p * G.ho * G.wo;
        for (int64_t oh = 0; oh < G.ho; oh++)
            for (int64_t o0 = 0; o0 < G.wo; o0 += CHUNK) {
                int64_t o1 = o0 + CHUNK < G.wo ? o0 + CHUNK : G.wo;
                max_row(&G, xp, oh, o0, o1, yp + oh * G.wo + o0, NULL);
            }
    }
    return TSL_OK;
}

/* MAXPOOL2D_BWD (dy, x) -> dx: dy added at each window's first maximum, in
 * output order. Planes are at most 2^31 elements (int32 indices). */
static tsl_status maxpool_bwd_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    pool_geom G = pgeom(a->g, a->op->out[0], a->op->in[0], &a->op->attr.pool);
    TSL_ASSERT(G.h * G.w <= INT32_MAX);
    const float *dy = a->in[0], *x = a->in[1];
    float *dx = a->out[0];
#pragma omp parallel for schedule(static) num_threads(tsl__kernel_threads(a))
    for (int64_t p = 0; p < G.planes; p++) {
        const float *xp = x + p * G.h * G.w, *dyp = dy + p * G.ho * G.wo;
        float *dxp = dx + p * G.h * G.w;
        float m[CHUNK];
        int32_t idx[CHUNK];
        memset(dxp, 0, sizeof(float) * (size_t)(G.h * G.w));
        for (int64_t oh = 0; oh < G.ho; oh++)
            for (int64_t o0 = 0; o0 < G.wo; o0 += CHUNK) {
                int64_t o1 = o0 + CHUNK < G.wo ? o0 + CHUNK : G.wo;
                max_row(&G, xp, oh, o0, o1, m, idx);
                for (int64_t ow = o0; ow < o1; ow++) dxp[idx[ow - o0]] += dyp[oh * G.wo + ow];
            }
    }
    return TSL_OK;
}

/* The taps of row oh's windows for outputs [o0, o1) of one plane: forward
 * (plane = x), s[ow - o0] += every in-bounds element of the window;
 * backward (plane = dx), v[ow - o0] added to every in-bounds element. */
static void avg_row(const pool_geom *G, int64_t oh, int64_t o0, int64_t o1, float *plane,
                    float *sv, int backward) {
    int64_t h0, h1;
    clip(oh * G->sh - G->ph, G->kh, G->h, &h0, &h1);
    for (int64_t ih = h0; ih < h1; ih++) {
        float *r = plane + ih * G->w;
        for (int64_t j = 0; j < G->kw; j++) {
            int64_t lo, hi, off = j - G->pw;
            columns(G, j, o0, o1, &lo, &hi);
            if (backward) {
                for (int64_t ow = lo; ow < hi; ow++) r[ow * G->sw + off] += sv[ow - o0];
            } else {
#pragma omp simd
                for (int64_t ow = lo; ow < hi; ow++) sv[ow - o0] += r[ow * G->sw + off];
            }
        }
    }
}

/* AVGPOOL2D (x) -> y. */
static tsl_status avgpool_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    pool_geom G = pgeom(a->g, a->op->in[0], a->op->out[0], &a->op->attr.pool);
    float *x = a->in[0], *y = a->out[0];
#pragma omp parallel for schedule(static) num_threads(tsl__kernel_threads(a))
    for (int64_t p = 0; p < G.planes; p++) {
        float *xp = x + p * G.h * G.w, *yp = y + p * G.ho * G.wo;
        for (int64_t oh = 0; oh < G.ho; oh++)
            for (int64_t o0 = 0; o0 < G.wo; o0 += CHUNK) {
                int64_t o1 = o0 + CHUNK < G.wo ? o0 + CHUNK : G.wo;
                float s[CHUNK] = {0};
                avg_row(&G, oh, o0, o1, xp, s, 0);
                for (int64_t ow = o0; ow < o1; ow++)
                    yp[oh * G.wo + ow] = (float)(s[ow - o0] / pool_divisor(&G, oh, ow));
            }
    }
    return TSL_OK;
}

/* AVGPOOL2D_BWD (dy) -> dx: dy/divisor added over each window. */
static tsl_status avgpool_bwd_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    pool_geom G = pgeom(a->g, a->op->out[0], a->op->in[0], &a->op->attr.pool);
    const float *dy = a->in[0];
    float *dx = a->out[0];
#pragma omp parallel for schedule(static) num_threads(tsl__kernel_threads(a))
    for (int64_t p = 0; p < G.planes; p++) {
        const float *dyp = dy + p * G.ho * G.wo;
        float *dxp = dx + p * G.h * G.w;
        memset(dxp, 0, sizeof(float) * (size_t)(G.h * G.w));
        for (int64_t oh = 0; oh < G.ho; oh++)
            for (int64_t o0 = 0; o0 < G.wo; o0 += CHUNK) {
                int64_t o1 = o0 + CHUNK < G.wo ? o0 + CHUNK : G.wo;
                float v[CHUNK];
                for (int64_t ow = o0; ow < o1; ow++)
                    v[ow - o0] = (float)((double)dyp[oh * G.wo + ow] / pool_divisor(&G, oh, ow));
                avg_row(&G, oh, o0, o1, dxp, v, 1);
            }
    }
    return TSL_OK;
}

void tsl__fast_register_pool(tsl_fast_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_MAXPOOL2D].run = maxpool_run;
    table[TSL_OP_MAXPOOL2D_BWD].run = maxpool_bwd_run;
    table[TSL_OP_AVGPOOL2D].run = avgpool_run;
    table[TSL_OP_AVGPOOL2D_BWD].run = avgpool_bwd_run;
}
