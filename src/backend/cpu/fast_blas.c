/*
 * fast_blas.c - OpenBLAS fast kernels: LINEAR and MATMUL.
 *
 *   LINEAR (x:(N,K), w:(M,K)[, b:(M)]) -> y:(N,M) = x w^T + b: one sgemm
 *     (x NoTrans, w Trans, beta 0), then the bias added row by row.
 *   MATMUL (a, b) -> c = op(a) op(b), 2-D, op = transpose when the attribute
 *     says so: one sgemm with the transposes folded into its flags.
 *
 * OpenBLAS splits a gemm over threads by rows and columns of c, never over
 * K, so with a fixed thread count the bits are the same on every run. The
 * kernels run with the thread count of their arguments (a->nthreads), which
 * they set in OpenBLAS only if it differs. Float64 runs (the oracle) go to
 * the reference kernels. No state and no workspace.
 */
#include <cblas.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

static void blas_threads(int n) {
    if (n >= 1 && openblas_get_num_threads() != n) openblas_set_num_threads(n);
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
    blas_threads(a->nthreads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)m, (blasint)k, 1.0f,
                x, (blasint)k, w, (blasint)k, 0.0f, y, (blasint)m);
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
    blas_threads(a->nthreads);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, 1.0f, (const float *)a->in[0],
                (blasint)as->d[1], (const float *)a->in[1], (blasint)bs->d[1], 0.0f,
                (float *)a->out[0], (blasint)n);
    return TSL_OK;
}

void tsl__fast_register_blas(tsl_fast_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_LINEAR].run = linear_run;
    table[TSL_OP_MATMUL].run = matmul_run;
}
