/*
 * ref_norm.c - reference kernels of BATCHNORM and BATCHNORM_BWD, float and
 * double.
 *
 * Channels are independent and shared among OpenMP threads; within a
 * channel every sum runs in double over n, then over the spatial positions,
 * in ascending order, so the bits never depend on the thread count.
 */
#include <math.h>

#include "backend/cpu/kernel.h"
#include "backend/cpu/norm_geom.h"
#include "core/assert.h"

#define REF_INC "ref_norm.inc"
#include "ref_instantiate.h"

void tsl__ref_register_norm(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_BATCHNORM] = (tsl_ref_kernel){batchnorm_f32, batchnorm_f64};
    table[TSL_OP_BATCHNORM_BWD] = (tsl_ref_kernel){batchnorm_bwd_f32, batchnorm_bwd_f64};
}
