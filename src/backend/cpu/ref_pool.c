/*
 * ref_pool.c - reference kernels of the pool family: MAXPOOL2D(_BWD),
 * AVGPOOL2D(_BWD), GLOBAL_AVGPOOL(_BWD), in float and double.
 *
 * Every kernel is written once in ref_pool.inc and compiled twice (REAL =
 * float, double). Windows: output (oh,ow) covers input rows
 * [oh*sh - ph, oh*sh - ph + KH) and columns likewise; positions outside the
 * input are padding (-infinity for max, 0 for average, and counted in the
 * divisor only with count_include_pad).
 *
 * Determinism: work is split over independent (n,c) planes with
 * `omp parallel for`; within a plane every element is computed in a fixed
 * order, so the bits do not depend on the thread count. Window and plane sums
 * accumulate in double in both precisions.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"
#include "backend/cpu/pool_geom.h"

#define REF_INC "ref_pool.inc"
#include "ref_instantiate.h"

void tsl__ref_register_pool(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_MAXPOOL2D] = (tsl_ref_kernel){k_maxpool_f32, k_maxpool_f64};
    table[TSL_OP_MAXPOOL2D_BWD] = (tsl_ref_kernel){k_maxpool_bwd_f32, k_maxpool_bwd_f64};
    table[TSL_OP_AVGPOOL2D] = (tsl_ref_kernel){k_avgpool_f32, k_avgpool_f64};
    table[TSL_OP_AVGPOOL2D_BWD] = (tsl_ref_kernel){k_avgpool_bwd_f32, k_avgpool_bwd_f64};
    table[TSL_OP_GLOBAL_AVGPOOL] = (tsl_ref_kernel){k_gap_f32, k_gap_f64};
    table[TSL_OP_GLOBAL_AVGPOOL_BWD] = (tsl_ref_kernel){k_gap_bwd_f32, k_gap_bwd_f64};
}
