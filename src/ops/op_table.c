/* op_table.c - the op definitions of every family, filled once. */
#include <pthread.h>
#include "core/assert.h"
#include "ops/op_def.h"

static tsl_op_def defs[TSL_OP_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void) {
    tsl__ops_register_conv(defs);
    tsl__ops_register_pool(defs);
    tsl__ops_register_norm(defs);
    tsl__ops_register_dense(defs);
    tsl__ops_register_eltwise(defs);
    tsl__ops_register_shape(defs);
    tsl__ops_register_loss(defs);
    tsl__ops_register_optim(defs);
}

const tsl_op_def *tsl__op_def(tsl_op_type t) {
    TSL_ASSERT((unsigned)t < TSL_OP_COUNT);
    pthread_once(&once, fill);
    return &defs[t];
}

const char *tsl_op_type_name(tsl_op_type t) {
    const tsl_op_def *d = tsl__op_def(t);
    return d->name ? d->name : "unregistered";
}

/* ---- per-op costs (tensile/ops.h) ---------------------------------------------- */

double tsl_op_flops(const tsl_graph *g, const tsl_op *op) {
    const tsl_op_def *d = tsl__op_def(op->type);
    return d->flops ? d->flops(g, op) : 0.0;
}

size_t tsl_op_workspace(const tsl_graph *g, const tsl_op *op) {
    const tsl_op_def *d = tsl__op_def(op->type);
    return d->workspace ? d->workspace(g, op) : 0;
}
