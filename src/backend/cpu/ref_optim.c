/*
 * ref_optim.c - reference kernels of the in-place optimizer updates
 * SGD_UPDATE and ADAM_UPDATE, float and double.
 *
 * Elements are independent (one thread per chunk, no reductions), so the
 * bits never depend on the thread count. Arithmetic is in double; states
 * are rounded to REAL when stored and the stored value is the one used for
 * the parameter step, as a float implementation keeping float states would.
 */
#include <math.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

#define REF_INC "ref_optim.inc"
#include "ref_instantiate.h"

void tsl__ref_register_optim(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_SGD_UPDATE] = (tsl_ref_kernel){sgd_update_f32, sgd_update_f64};
    table[TSL_OP_ADAM_UPDATE] = (tsl_ref_kernel){adam_update_f32, adam_update_f64};
}
