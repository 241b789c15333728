/*
 * conv_algos.c - the CPU backend's convolution algorithms other than the
 * default (tensile/ops.h, "algorithms"; docs/SCHEDULING.md, "Algorithms"):
 *
 *   TSL_ALGO_IM2COL  per image and group, the column matrix of the x side
 *                    (K = Cx/g*KH*KW rows, P = Ho*Wo columns) in the
 *                    workspace, then a register-blocked matrix product:
 *                    CONV2D       y = W . col                      (+ bias)
 *                    BWD_DATA     dcol = W^T . dy, then col2im into dx
 *                    BWD_FILTER   dW += dy . col^T, summed over the batch
 *                                 in double (a Cy*K accumulator in the
 *                                 workspace, ahead of the column)
 *   TSL_ALGO_DIRECT  the reference kernel (ref_conv.inc): direct loops, no
 *                    workspace.
 *
 * Order of the sums (DESIGN.md invariant 5; docs/SCHEDULING.md says how
 * the invariant reads with algorithm choices). CONV2D's im2col adds each
 * output's terms in the reference kernel's order - input channel, kernel
 * row, kernel column, from +0, the bias last - so its result is bitwise
 * the reference's (= DIRECT's): a tap in the padding adds w * 0 = +-0,
 * which leaves a sum that starts at +0 unchanged (no finite sum of such
 * terms is ever -0); with a non-finite weight facing the padding the two
 * differ (NaN against the skipped tap). The backward products sum in
 * another order than the reference (over output channels first, resp. per
 * image) and match it within the fast kernels' tolerance, not bitwise.
 * Every sum's order is fixed and independent of the thread count.
 *
 * Float only (the backend's type); a double-precision call runs DIRECT.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv_geom.h"
#include "backend/cpu/kernel.h"

#define MR 4 /* rows of a register block */
#define NR 8 /* columns of a register block */

/* The column matrix of image n, group gi of x (rows split over the team's
 * threads; called inside a parallel region): see im2col_row. */
static void im2col(const conv_geom *G, const float *x, int64_t n, int64_t gi, float *col) {
    int64_t K = G->cxg * G->kh * G->kw, P = G->ho * G->wo;
#pragma omp for schedule(static)
    for (int64_t k = 0; k < K; k++) im2col_row(G, x, n, gi, k, col + k * P);
}

/* C[r][p] = sum over k in [0, K) ascending of A(r, k) * B[k][p], from +0,
 * for rows r in [r0, r0 + m) and columns p in [p0, p0 + nc), m <= MR,
 * nc <= NR; A(r, k) = a[r * ars + k * aks]. C has row stride P. */
static void block(const float *a, int64_t ars, int64_t aks, const float *b, int64_t K, int64_t P,
                  float *c, int64_t r0, int m, int64_t p0, int nc) {
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    if (m == MR && nc == NR) {
        for (int64_t k = 0; k < K; k++) {
            const float *br = b + k * P + p0;
            for (int r = 0; r < MR; r++) {
                float av = a[(r0 + r) * ars + k * aks];
#pragma omp simd
                for (int q = 0; q < NR; q++) acc[r][q] += av * br[q];
            }
        }
    } else {
        for (int64_t k = 0; k < K; k++) {
            const float *br = b + k * P + p0;
            for (int r = 0; r < m; r++) {
                float av = a[(r0 + r) * ars + k * aks];
                for (int q = 0; q < nc; q++) acc[r][q] += av * br[q];
            }
        }
    }
    for (int r = 0; r < m; r++) memcpy(c + (r0 + r) * P + p0, acc[r], sizeof(float) * (size_t)nc);
}

/* C (M x P, row stride P) = A . B with A(r, k) = a[r * ars + k * aks], B
 * (K x P): register blocks split over the team's threads. */
static void gemm(const float *a, int64_t ars, int64_t aks, const float *b, int64_t M, int64_t K,
                 int64_t P, float *c) {
    int64_t mb = (M + MR - 1) / MR, pb = (P + NR - 1) / NR;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < mb * pb; t++) {
        int64_t r0 = (t / pb) * MR, p0 = (t % pb) * NR;
        int m = (int)(M - r0 < MR ? M - r0 : MR), nc = (int)(P - p0 < NR ? P - p0 : NR);
        block(a, ars, aks, b, K, P, c, r0, m, p0, nc);
    }
}

/* CONV2D (x, w[, b]) -> y by im2col + GEMM per image and group. */
static tsl_status im2col_conv2d(const tsl_kernel_args *a) {
    const tsl_op *op = a->op;
    conv_geom G = geom(a->g, op->in[0], op->out[0], op->in[1], &op->attr.conv);
    const float *x = a->in[0], *w = a->in[1];
    const float *bias = op->n_in == 3 ? (const float *)a->in[2] : NULL;
    float *y = a->out[0], *col = a->workspace;
    int64_t K = G.cxg * G.kh * G.kw, P = G.ho * G.wo, groups = G.cx / G.cxg;
#pragma omp parallel num_threads(tsl__kernel_threads(a))
    for (int64_t n = 0; n < G.n; n++)
        for (int64_t gi = 0; gi < groups; gi++) {
            im2col(&G, x, n, gi, col); /* barrier at its end */
            int64_t co0 = gi * G.cyg;
            float *yg = y + (n * G.cy + co0) * P;
            gemm(w + co0 * K, K, 1, col, G.cyg, K, P, yg); /* barrier: col is reused */
            if (bias) {
#pragma omp for schedule(static)
                for (int64_t co = 0; co < G.cyg; co++)
                    for (int64_t p = 0; p < P; p++) yg[co * P + p] += bias[co0 + co];
            }
        }
    return TSL_OK;
}

/* CONV2D_BWD_DATA (dy, w) -> dx: dcol = W^T . dy per image and group (W^T
 * (K x Cy/g) read in place), then every column entry added back to its
 * x-side element (rows of one input channel by one thread: k ascending,
 * then p). */
static tsl_status im2col_conv2d_bwd_data(const tsl_kernel_args *a) {
    const tsl_op *op = a->op;
    conv_geom G = geom(a->g, op->out[0], op->in[0], op->in[1], &op->attr.conv);
    const float *dy = a->in[0], *w = a->in[1];
    float *dx = a->out[0], *dcol = a->workspace;
    int64_t K = G.cxg * G.kh * G.kw, P = G.ho * G.wo, KK = G.kh * G.kw;
    int64_t groups = G.cx / G.cxg;
#pragma omp parallel num_threads(tsl__kernel_threads(a))
    for (int64_t n = 0; n < G.n; n++)
        for (int64_t gi = 0; gi < groups; gi++) {
            int64_t co0 = gi * G.cyg;
            gemm(w + co0 * K, 1, K, dy + (n * G.cy + co0) * P, K, G.cyg, P, dcol);
#pragma omp for schedule(static)
            for (int64_t cil = 0; cil < G.cxg; cil++) {
                float *xp = dx + (n * G.cx + gi * G.cxg + cil) * G.h * G.w;
                memset(xp, 0, sizeof *xp * (size_t)(G.h * G.w));
                for (int64_t t = 0; t < KK; t++) {
                    int64_t i = t / G.kw, j = t % G.kw, olo, ohi, wlo, whi;
                    int64_t offh = i * G.dh - G.ph, offw = j * G.dw - G.pw;
                    valid_range(offh, G.sh, G.h, G.ho, &olo, &ohi);
                    valid_range(offw, G.sw, G.w, G.wo, &wlo, &whi);
                    const float *row = dcol + (cil * KK + t) * P;
                    for (int64_t oh = olo; oh < ohi; oh++) {
                        float *xr = xp + (oh * G.sh + offh) * G.w;
                        const float *r = row + oh * G.wo;
                        for (int64_t ow = wlo; ow < whi; ow++) xr[ow * G.sw + offw] += r[ow];
                    }
                }
            }
        }
    return TSL_OK;
}

/* The column matrix of image n, group gi transposed: colT[p * K + k] is
 * col[k][p] of im2col (rows p split over the team's threads). */
static void im2col_t(const conv_geom *G, const float *x, int64_t n, int64_t gi, float *colT) {
    int64_t K = G->cxg * G->kh * G->kw, P = G->ho * G->wo;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < P; p++) {
        int64_t oh = p / G->wo, ow = p % G->wo;
        float *row = colT + p * K;
        for (int64_t cil = 0; cil < G->cxg; cil++) {
            const float *xp = x + (n * G->cx + gi * G->cxg + cil) * G->h * G->w;
            for (int64_t i = 0; i < G->kh; i++) {
                int64_t ih = oh * G->sh + i * G->dh - G->ph;
                for (int64_t j = 0; j < G->kw; j++) {
                    int64_t iw = ow * G->sw + j * G->dw - G->pw;
                    *row++ = ih >= 0 && ih < G->h && iw >= 0 && iw < G->w ? xp[ih * G->w + iw]
                                                                          : 0.0f;
                }
            }
        }
    }
}

#define QR 4 /* columns of a filter-gradient block (doubles) */

/* acc[r][q] += sum over p ascending (from 0, in double) of dy(r, p) *
 * colT(p, q), for the block at rows r0.. (m <= MR), columns q0.. (mq <=
 * QR); acc has row stride K. */
static void dot_block(const float *dy, const float *colT, int64_t P, double *acc, int64_t K,
                      int64_t r0, int m, int64_t q0, int mq) {
    double s[MR][QR];
    memset(s, 0, sizeof s);
    if (m == MR && mq == QR) {
        for (int64_t p = 0; p < P; p++) {
            const float *c = colT + p * K + q0;
            double cv[QR];
            for (int q = 0; q < QR; q++) cv[q] = (double)c[q];
            for (int r = 0; r < MR; r++) {
                double d = (double)dy[(r0 + r) * P + p];
#pragma omp simd
                for (int q = 0; q < QR; q++) s[r][q] += d * cv[q];
            }
        }
    } else {
        for (int64_t p = 0; p < P; p++)
            for (int r = 0; r < m; r++) {
                double d = (double)dy[(r0 + r) * P + p];
                for (int q = 0; q < mq; q++) s[r][q] += d * (double)colT[p * K + q0 + q];
            }
    }
    for (int r = 0; r < m; r++)
        for (int q = 0; q < mq; q++) acc[(r0 + r) * K + q0 + q] += s[r][q];
}

/* CONV2D_BWD_FILTER (dy, x) -> dw[, db]: per image and group the column of
 * x (transposed: the dot products run over its rows), then each dw element's per-image dot product (double) added to a
 * double accumulator in image order; db as the reference kernel. */
static tsl_status im2col_conv2d_bwd_filter(const tsl_kernel_args *a) {
    const tsl_op *op = a->op;
    conv_geom G = geom(a->g, op->in[1], op->in[0], op->out[0], &op->attr.conv);
    const float *dy = a->in[0], *x = a->in[1];
    float *dw = a->out[0], *db = op->n_out == 2 ? (float *)a->out[1] : NULL;
    int64_t K = G.cxg * G.kh * G.kw, P = G.ho * G.wo, groups = G.cx / G.cxg;
    double *acc = a->workspace; /* (Cy, K) */
    float *col = (float *)(acc + G.cy * K);
    memset(acc, 0, sizeof *acc * (size_t)(G.cy * K));
    int64_t rb = (G.cyg + MR - 1) / MR, qb = (K + QR - 1) / QR;
#pragma omp parallel num_threads(tsl__kernel_threads(a))
    {
        for (int64_t n = 0; n < G.n; n++)
            for (int64_t gi = 0; gi < groups; gi++) {
                im2col_t(&G, x, n, gi, col);
                int64_t co0 = gi * G.cyg;
                const float *dyg = dy + (n * G.cy + co0) * P;
#pragma omp for schedule(static)
                for (int64_t t = 0; t < rb * qb; t++) {
                    int64_t r0 = (t / qb) * MR, q0 = (t % qb) * QR;
                    int m = (int)(G.cyg - r0 < MR ? G.cyg - r0 : MR);
                    int mq = (int)(K - q0 < QR ? K - q0 : QR);
                    dot_block(dyg, col, P, acc + co0 * K, K, r0, m, q0, mq);
                }
            }
#pragma omp for schedule(static)
        for (int64_t e = 0; e < G.cy * K; e++) dw[e] = (float)acc[e];
        if (db) {
#pragma omp for schedule(static)
            for (int64_t co = 0; co < G.cy; co++) {
                double s = 0.0;
                for (int64_t n = 0; n < G.n; n++) {
                    const float *dyp = dy + (n * G.cy + co) * P;
                    for (int64_t k = 0; k < P; k++) s += (double)dyp[k];
                }
                db[co] = (float)s;
            }
        }
    }
    return TSL_OK;
}

tsl_kernel_fn tsl_cpu_algo_kernel(tsl_op_type t, int algo, tsl_dtype dt) {
    if (algo == TSL_ALGO_DEFAULT) return NULL;
    if (algo == TSL_ALGO_DIRECT || dt != TSL_F32) return tsl_cpu_ref_kernel(t, dt);
    switch (t) {
    case TSL_OP_CONV2D: return im2col_conv2d;
    case TSL_OP_CONV2D_BWD_DATA: return im2col_conv2d_bwd_data;
    case TSL_OP_CONV2D_BWD_FILTER: return im2col_conv2d_bwd_filter;
    default: TSL_ASSERT(!"no im2col kernel for this op type"); return NULL;
    }
}
