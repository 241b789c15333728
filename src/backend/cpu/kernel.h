/*
 * kernel.h - the contract between the executor and a kernel.
 *
 * A kernel runs one op: it reads op->in[i] through a->in[i] and writes
 * op->out[i] through a->out[i] (same order as the op). For an in-place op
 * (optimizer updates, batch-norm running statistics) the same tensor appears
 * in both lists and both pointers are equal. Shapes come from the graph's
 * descriptors; the element type of the data is a->dtype (TSL_F32 normally,
 * TSL_F64 when the double-precision oracle runs a graph), except for LABEL
 * tensors, which are always int32.
 *
 * Kernels are deterministic: the same inputs, step and thread count give the
 * same bits. Reference kernels are plain loops, the oracle; fast kernels
 * must match them within the op's tolerance.
 */
#ifndef TSL_BACKEND_CPU_KERNEL_H
#define TSL_BACKEND_CPU_KERNEL_H

#include "tensile/ops.h"

typedef struct tsl_kernel_args {
    const tsl_graph *g;
    const tsl_op *op;
    tsl_dtype dtype;          /* TSL_F32 or TSL_F64 */
    void *const *in;          /* op->n_in pointers  */
    void *const *out;         /* op->n_out pointers */
    void *workspace;          /* NULL when workspace_bytes == 0 */
    size_t workspace_bytes;
    int64_t step;             /* 1-based training step: Adam's t, dropout stream */
    int nthreads;             /* threads the kernel may use (>= 1) */
    int training;             /* 1 in training steps; 0 in evaluation: batch
                                 norm uses and keeps its running statistics,
                                 dropout passes x through (mask of ones) */
    void **state;             /* fast kernels: per-op cache slot owned by the
                                 backend, *state NULL at first call; NULL for
                                 reference kernels */
} tsl_kernel_args;

typedef tsl_status (*tsl_kernel_fn)(const tsl_kernel_args *a);

/* The threads a kernel runs with: a->nthreads, at least 1. */
static inline int tsl__kernel_threads(const tsl_kernel_args *a) {
    return a->nthreads > 0 ? a->nthreads : 1;
}

/* ---- reference kernels (src/backend/cpu/ref_*.c) -------------------------- */
typedef struct tsl_ref_kernel {
    tsl_kernel_fn f32;
    tsl_kernel_fn f64;
} tsl_ref_kernel;

/* The reference kernel of an op type for TSL_F32 or TSL_F64; never NULL for
 * a registered op (TSL_ASSERT otherwise). */
tsl_kernel_fn tsl_cpu_ref_kernel(tsl_op_type t, tsl_dtype dt);

void tsl__ref_register_conv(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_pool(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_norm(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_dense(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_eltwise(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_shape(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_loss(tsl_ref_kernel table[TSL_OP_COUNT]);
void tsl__ref_register_optim(tsl_ref_kernel table[TSL_OP_COUNT]);

/* ---- fast kernels (src/backend/cpu/fast_*.c, oneDNN and own loops) ------- */
typedef struct tsl_fast_kernel {
    tsl_kernel_fn run;        /* NULL: no fast path, the reference is used */
    /* Optional: prepares *state (e.g. creates the oneDNN primitive) and
     * returns the scratch bytes the kernel needs in a->workspace. NULL: 0. */
    tsl_status (*prepare)(const tsl_graph *g, const tsl_op *op, int nthreads,
                          void **state, size_t *workspace_bytes);
    /* Optional: frees what prepare/run left in state. */
    void (*release)(void *state);
} tsl_fast_kernel;

/* The fast kernel entry of an op type (all members NULL if none). */
const tsl_fast_kernel *tsl_cpu_fast_kernel(tsl_op_type t);

void tsl__fast_register_dnnl(tsl_fast_kernel table[TSL_OP_COUNT]);
void tsl__fast_register_gemm(tsl_fast_kernel table[TSL_OP_COUNT]);

/* c (m x n, row stride ldc) = op(a) . op(b), row-major, op = transpose when
 * trans_x is 1, on nthreads OpenMP threads (fast_gemm.c). TSL_OK, or
 * TSL_ERR_INTERNAL naming op when oneDNN fails. Deterministic at a fixed
 * thread count. */
tsl_status tsl__sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                      int nthreads, const tsl_op *op);
void tsl__fast_register_pool(tsl_fast_kernel table[TSL_OP_COUNT]);
void tsl__fast_register_bnorm(tsl_fast_kernel table[TSL_OP_COUNT]);

/* ---- algorithm kernels (src/backend/cpu/conv_algos.c) ---------------------
 * The kernel of algorithm `algo` (tensile/ops.h, "algorithms") of an op of
 * type t with a menu, for element type dt: NULL for TSL_ALGO_DEFAULT (the
 * backend's usual fast or reference kernel), the reference kernel for
 * TSL_ALGO_DIRECT (and for TSL_ALGO_IM2COL in double precision), the
 * im2col kernel otherwise, whose workspace is tsl_op_algo_workspace(g, op,
 * TSL_ALGO_IM2COL) bytes. algo must be an algorithm of t (TSL_ASSERT). */
tsl_kernel_fn tsl_cpu_algo_kernel(tsl_op_type t, int algo, tsl_dtype dt);

/* Sets the OpenMP threads every kernel uses (oneDNN, its sgemm, own loops). */
void tsl_cpu_set_threads(int nthreads);
/* Sets the calling thread's OpenMP thread count to nthreads (>= 1; no call
 * when it already is) and returns the previous count, which the caller
 * restores the same way after its kernel: the fast kernels run with the
 * count they were prepared for (oneDNN's split, hence the bits, depend on
 * it). */
int tsl__omp_threads(int nthreads);
/* The kernel threads the backend can really have when `nthreads` are asked
 * for: at most OpenMP's thread limit (OMP_THREAD_LIMIT). A oneDNN
 * primitive is made for the threads it is told of; run with fewer, some
 * (convolutions with per-thread scratch) read scratch no thread wrote, and
 * their results depend on whatever the workspace held before. */
int tsl_cpu_usable_threads(int nthreads);
#endif
