/*
 * wgrad_gemm.h - a convolution's filter gradient as one matrix product over
 * the batch (fast_wgrad_gemm.c; internal to the CPU backend).
 */
#ifndef TSL_BACKEND_CPU_WGRAD_GEMM_H
#define TSL_BACKEND_CPU_WGRAD_GEMM_H

#include "backend/cpu/kernel.h"

/* The largest workspace the batched product may take; above it the op keeps
 * oneDNN's own kernel (whose scratch is per image). */
#define TSL__WGRAD_GEMM_MAX_BYTES ((size_t)16 << 20)

/* Workspace in bytes the batched product needs for CONV2D_BWD_FILTER op
 * (4 * N*Ho*Wo * (Cout + Cin*KH*KW)); 0 when it does not apply (groups > 1). */
size_t tsl__wgrad_gemm_workspace(const tsl_graph *g, const tsl_op *op);

/* Runs CONV2D_BWD_FILTER (dy, x) -> dw[, db] in float with a->nthreads
 * threads, using `workspace` (at least tsl__wgrad_gemm_workspace bytes).
 * TSL_OK, or oneDNN's sgemm error; groups must be 1 (TSL_ASSERT). */
tsl_status tsl__wgrad_gemm_run(const tsl_kernel_args *a, void *workspace);

#endif
