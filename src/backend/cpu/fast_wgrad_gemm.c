/*
 * fast_wgrad_gemm.c - a convolution's filter gradient as ONE matrix product
 * over the whole batch, for the shapes where oneDNN 2.6 has no direct
 * (jit) kernel and falls back to its per-image im2col + gemm.
 *
 * Those shapes are the small-spatial tails of the ResNets and VGGs at small
 * images (a 3x3 pad-1 conv on a 1x1 or 2x2 map): per image the product is
 * (Cout x Ho*Wo) . (Ho*Wo x Cin*KH*KW) with an inner dimension of 1 to 4,
 * a chain of rank-1 updates that runs at a few GFLOP/s (41 ms for resnet18's
 * 512->512 3x3 at 1x1, batch 32, one thread). Stacking the batch makes the
 * inner dimension N*Ho*Wo:
 *
 *   dyT  (Cout, P)        P = N*Ho*Wo, column p = n*Ho*Wo + oh*Wo + ow
 *   col  (Cin*KH*KW, P)   im2col of every image side by side
 *   dW   (Cout, Cin*KH*KW) = dyT . col^T       one sgemm (tsl__sgemm)
 *   db   (Cout)            = row sums of dyT, in double, p ascending
 *
 * Workspace: dyT then col, 4*P*(Cout + Cin*KH*KW) bytes; used only where
 * that is at most TSL__WGRAD_GEMM_MAX_BYTES (the builder's rule, in
 * fast_dnnl_conv.c). Groups = 1 only.
 *
 * Determinism: with a fixed thread count the product's bits are the same on
 * every run (fast_gemm.c); the copies are exact and the bias sums run in a
 * fixed order.
 */
#include "backend/cpu/conv_geom.h"
#include "backend/cpu/wgrad_gemm.h"

/* CONV2D_BWD_FILTER (dy, x) -> dw[, db]: y side in[0], x side in[1]. */
static conv_geom geom_of(const tsl_graph *g, const tsl_op *op) {
    return geom(g, op->in[1], op->in[0], op->out[0], &op->attr.conv);
}

size_t tsl__wgrad_gemm_workspace(const tsl_graph *g, const tsl_op *op) {
    TSL_ASSERT(op->type == TSL_OP_CONV2D_BWD_FILTER);
    if (op->attr.conv.groups != 1) return 0;
    conv_geom G = geom_of(g, op);
    size_t P = (size_t)(G.n * G.ho * G.wo), K = (size_t)(G.cx * G.kh * G.kw);
    return sizeof(float) * P * ((size_t)G.cy + K);
}

tsl_status tsl__wgrad_gemm_run(const tsl_kernel_args *a, void *workspace) {
    const conv_geom G = geom_of(a->g, a->op);
    TSL_ASSERT(a->op->attr.conv.groups == 1 && workspace != NULL);
    const int64_t HW = G.ho * G.wo, P = G.n * HW, K = G.cx * G.kh * G.kw;
    const float *dy = a->in[0], *x = a->in[1]; /* (N,Cout,Ho,Wo), (N,Cin,H,W) */
    float *dyT = workspace;                    /* (Cout, P) */
    float *col = dyT + G.cy * P;               /* (K, P)    */
    int nt = tsl__kernel_threads(a);
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static) nowait
        for (int64_t c = 0; c < G.cy; c++)
            for (int64_t n = 0; n < G.n; n++)
                memcpy(dyT + c * P + n * HW, dy + (n * G.cy + c) * HW, sizeof(float) * (size_t)HW);
#pragma omp for schedule(static)
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < G.n; n++) im2col_row(&G, x, n, 0, k, col + k * P + n * HW);
    }
    tsl_status st = tsl__sgemm(0, 1, G.cy, K, P, dyT, P, col, P, a->out[0], K, nt, a->op);
    if (st != TSL_OK) return st;
    if (a->op->n_out == 2) {
        float *db = a->out[1];
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t c = 0; c < G.cy; c++) {
            double s = 0;
            for (int64_t p = 0; p < P; p++) s += dyT[c * P + p];
            db[c] = (float)s;
        }
    }
    return TSL_OK;
}
