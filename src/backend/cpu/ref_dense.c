/*
 * ref_dense.c - reference kernels of LINEAR and MATMUL, float and double.
 *
 * Each output element is one dot product accumulated in double in
 * ascending k, then (LINEAR) plus the bias; rows are shared among OpenMP
 * threads, so the bits never depend on the thread count.
 */
#include "backend/kernel.h"
#include "core/assert.h"

#define TSL_PASTE_(a, b) a##_##b
#define TSL_PASTE(a, b) TSL_PASTE_(a, b)

#define REAL float
#define FN(name) TSL_PASTE(name, f32)
#include "ref_dense.inc"
#undef REAL
#undef FN

#define REAL double
#define FN(name) TSL_PASTE(name, f64)
#include "ref_dense.inc"
#undef REAL
#undef FN

void tsl__ref_register_dense(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_LINEAR] = (tsl_ref_kernel){linear_f32, linear_f64};
    table[TSL_OP_MATMUL] = (tsl_ref_kernel){matmul_f32, matmul_f64};
}
