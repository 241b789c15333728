/*
 * ref_conv.c - reference kernels of the conv family: CONV2D,
 * CONV2D_BWD_DATA, CONV2D_BWD_FILTER, CONV2D_TRANSPOSE, in float and double.
 *
 * Every kernel is written once in ref_conv.inc and compiled twice (REAL =
 * float, double). All of them are phrased over one geometry: a conv that
 * maps an "x side" (N,Cx,H,W) to a "y side" (N,Cy,Ho,Wo) with a weight
 * (Cy, Cx/g, KH, KW):
 *   CONV2D             x side = in[0],  y side = out[0]
 *   CONV2D_BWD_DATA    y side = in[0] (dy), x side = out[0] (dx)
 *   CONV2D_BWD_FILTER  y side = in[0] (dy), x side = in[1] (x)
 *   CONV2D_TRANSPOSE   y side = in[0] (its x), x side = out[0] (its y): the
 *                      data gradient of the conv mapping its output space
 *                      back to its input space, plus the bias.
 * Sizes come from the tensor descriptors, never from the formulas, so a
 * transposed conv's output_padding rows are handled like any others.
 *
 * Determinism: the work is split over independent output planes (or weight
 * slices) with `omp parallel for`; each output element is summed in a fixed
 * order, so the bits do not depend on the thread count. Sums that run over
 * the batch and the spatial positions (filter and bias gradients) accumulate
 * in double in both precisions.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

#include "backend/cpu/conv_geom.h"

#define REF_INC "ref_conv.inc"
#include "ref_instantiate.h"

void tsl__ref_register_conv(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_CONV2D] = (tsl_ref_kernel){k_conv2d_f32, k_conv2d_f64};
    table[TSL_OP_CONV2D_BWD_DATA] = (tsl_ref_kernel){k_conv2d_bwd_data_f32, k_conv2d_bwd_data_f64};
    table[TSL_OP_CONV2D_BWD_FILTER] =
        (tsl_ref_kernel){k_conv2d_bwd_filter_f32, k_conv2d_bwd_filter_f64};
    table[TSL_OP_CONV2D_TRANSPOSE] =
        (tsl_ref_kernel){k_conv2d_transpose_f32, k_conv2d_transpose_f64};
}
