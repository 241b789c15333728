/*
 * ref_dense.c - reference kernels of LINEAR and MATMUL, float and double.
 *
 * Each output element is one dot product accumulated in double in
 * ascending k, then (LINEAR) plus the bias; rows are shared among OpenMP
 * threads, so the bits never depend on the thread count.
 */
#include "backend/cpu/kernel.h"
#include "core/assert.h"

#define REF_INC "ref_dense.inc"
#include "ref_instantiate.h"

void tsl__ref_register_dense(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_LINEAR] = (tsl_ref_kernel){linear_f32, linear_f64};
    table[TSL_OP_MATMUL] = (tsl_ref_kernel){matmul_f32, matmul_f64};
}
