/*
 * fast_gemm.c - LINEAR and MATMUL on one row-major sgemm (tsl__sgemm):
 *
 *   LINEAR (x:(N,K), w:(M,K)[, b:(M)]) -> y:(N,M) = x w^T + b: one sgemm
 *     (x NoTrans, w Trans, beta 0), then the bias added row by row.
 *   MATMUL (a, b) -> c = op(a) op(b), 2-D, op = transpose when the attribute
 *     says so: one sgemm with the transposes folded into its flags.
 *
 * The sgemm is oneDNN's (dnnl_sgemm, its jit kernels), run on the same
 * OpenMP threads as every other kernel. It used to be OpenBLAS's, whose own
 * pthread pool spins after each product: on two cores its spinning threads
 * and OpenMP's took turns stalling each other (cnn, batch 64, 2 threads
 * slower than 1). With a fixed thread count oneDNN's split of a product,
 * and so its bits, are the same on every run. Float64 runs (the oracle) go
 * to the reference kernels. No state and no workspace.
 */
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

tsl_status tsl__sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                      int nthreads, const tsl_op *op) {
    int prev = tsl__omp_threads(nthreads >= 1 ? nthreads : 1);
    dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda,
                                  b, ldb, 0.0f, c, ldc);
    tsl__omp_threads(prev);
    if (st == dnnl_success) return TSL_OK;
    return tsl_fail(TSL_ERR_INTERNAL, "oneDNN sgemm failed for op '%s' (%s): %s", op->name,
                    tsl_op_type_name(op->type), dnnl_status2str(st));
}

/* LINEAR: x (N,K), w (M,K), b (M) optional, y (N,M); 2-D shapes as the
 * builder guarantees (TSL_ASSERT). */
static tsl_status linear_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    const tsl_op *op = a->op;
    const tsl_shape *xs = &tsl_graph_tensor(a->g, op->in[0])->shape;
    const tsl_shape *ws = &tsl_graph_tensor(a->g, op->in[1])->shape;
    TSL_ASSERT(xs->ndim == 2 && ws->ndim == 2 && xs->d[1] == ws->d[1]);
    const int64_t n = xs->d[0], k = xs->d[1], m = ws->d[0];
    const float *x = a->in[0], *w = a->in[1];
    float *y = a->out[0];
    tsl_status st = tsl__sgemm(0, 1, n, m, k, x, k, w, k, y, m, a->nthreads, op);
    if (st != TSL_OK) return st;
    if (op->n_in == 3) {
        const float *b = a->in[2];
        for (int64_t i = 0; i < n; i++) {
            float *row = y + i * m; // (M)
            for (int64_t j = 0; j < m; j++) row[j] += b[j];
        }
    }
    return TSL_OK;
}

/* MATMUL: a (M,K) or (K,M) with trans_a, b (K,N) or (N,K) with trans_b,
 * c (M,N). */
static tsl_status matmul_run(const tsl_kernel_args *a) {
    if (a->dtype != TSL_F32) return tsl_cpu_ref_kernel(a->op->type, a->dtype)(a);
    const tsl_op *op = a->op;
    const tsl_shape *as = &tsl_graph_tensor(a->g, op->in[0])->shape;
    const tsl_shape *bs = &tsl_graph_tensor(a->g, op->in[1])->shape;
    TSL_ASSERT(as->ndim == 2 && bs->ndim == 2);
    const int ta = op->attr.matmul.trans_a, tb = op->attr.matmul.trans_b;
    const int64_t m = ta ? as->d[1] : as->d[0], k = ta ? as->d[0] : as->d[1];
    const int64_t n = tb ? bs->d[0] : bs->d[1];
    TSL_ASSERT((tb ? bs->d[1] : bs->d[0]) == k);
    return tsl__sgemm(ta, tb, m, n, k, (const float *)a->in[0], as->d[1],
                      (const float *)a->in[1], bs->d[1], (float *)a->out[0], n, a->nthreads, op);
}

void tsl__fast_register_gemm(tsl_fast_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_LINEAR].run = linear_run;
    table[TSL_OP_MATMUL].run = matmul_run;
}
