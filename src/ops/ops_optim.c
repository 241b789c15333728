/*
 * ops_optim.c - definitions of the in-place optimizer updates appended by
 * tsl_graph_optimizer (src/core/optimizer.c). They are not differentiable.
 *
 * SGD_UPDATE (p, g[, m]) -> (p[, m]);  ADAM_UPDATE (p, g, m, v) -> (p, m, v).
 */
#include "ops/op_def.h"

/* Weight decay (2), momentum (2), step (2) per element. */
static double sgd_flops(const tsl_graph *g, const tsl_op *op) {
    double n = tsl__numel(g, op->in[0]);
    return (op->n_in == 3 ? 6.0 : 4.0) * n;
}

/* Weight decay (2), m (3), v (4), bias corrections (2), sqrt, add, divide
 * and step (5) per element. */
static double adam_flops(const tsl_graph *g, const tsl_op *op) {
    return 16.0 * tsl__numel(g, op->in[0]);
}

void tsl__ops_register_optim(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_SGD_UPDATE] = (tsl_op_def){"sgd_update", sgd_flops, NULL, NULL};
    defs[TSL_OP_ADAM_UPDATE] = (tsl_op_def){"adam_update", adam_flops, NULL, NULL};
}
