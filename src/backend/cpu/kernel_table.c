/* kernel_table.c - lookup of reference and fast CPU kernels by op type. */
#include <pthread.h>
#include "backend/cpu/kernel.h"
#include "core/assert.h"

static tsl_ref_kernel ref[TSL_OP_COUNT];
static tsl_fast_kernel fast[TSL_OP_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void) {
    tsl__ref_register_conv(ref);
    tsl__ref_register_pool(ref);
    tsl__ref_register_norm(ref);
    tsl__ref_register_dense(ref);
    tsl__ref_register_eltwise(ref);
    tsl__ref_register_shape(ref);
    tsl__ref_register_loss(ref);
    tsl__ref_register_optim(ref);
    tsl__fast_register_dnnl(fast);
    tsl__fast_register_gemm(fast);
    tsl__fast_register_pool(fast);
    tsl__fast_register_bnorm(fast);
}

tsl_kernel_fn tsl_cpu_ref_kernel(tsl_op_type t, tsl_dtype dt) {
    TSL_ASSERT((unsigned)t < TSL_OP_COUNT);
    TSL_ASSERT(dt == TSL_F32 || dt == TSL_F64);
    pthread_once(&once, fill);
    tsl_kernel_fn f = dt == TSL_F32 ? ref[t].f32 : ref[t].f64;
    TSL_ASSERT(f != NULL);
    return f;
}

const tsl_fast_kernel *tsl_cpu_fast_kernel(tsl_op_type t) {
    TSL_ASSERT((unsigned)t < TSL_OP_COUNT);
    pthread_once(&once, fill);
    return &fast[t];
}
