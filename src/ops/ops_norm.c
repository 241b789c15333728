/*
 * ops_norm.c - batch normalisation: the builder (which creates its own
 * parameters and running-statistics buffers), FLOP counts and the backward
 * construction (one BATCHNORM_BWD op giving dx, dgamma and dbeta).
 *
 * BATCHNORM (x:(N,C,...), gamma:(C), beta:(C), running_mean:(C), running_var:(C))
 *   -> (y: x's shape, saved_mean:(C), saved_invstd:(C), running_mean, running_var)
 * The running statistics are updated in place (same tensor in and out).
 */
#include "ops/op_def.h"

/* Batch norm over axis 1 of x (N,C,...) with rank 2..5. Creates the params
 * name.weight (C, ONE) and name.bias (C, ZERO) and the buffers
 * name.running_mean (C, ZERO) and name.running_var (C, ONE). Requirements:
 * eps > 0, momentum in [0,1], N*prod(spatial) > 1 (the unbiased variance
 * divides by count-1). Returns y (named `name`) or TSL_NONE after a builder
 * error naming the op, the field and the value. */
tsl_tid tsl_batchnorm(tsl_graph *g, const char *name, tsl_tid x, tsl_bn_attr a) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x);
    char sb[128], nb[TSL_NAME_MAX];
    if (xt->shape.ndim < 2 || (xt->dtype != TSL_F32 && xt->dtype != TSL_F64))
        return tsl__graph_fail(g, "batchnorm '%s': input '%s' must be a float (N,C,...) tensor of rank >= 2, "
                               "has shape %s dtype %s",
                               name, xt->name, tsl_shape_str(&xt->shape, sb, sizeof sb),
                               tsl_dtype_name(xt->dtype));
    if (!(a.eps > 0.0f))
        return tsl__graph_fail(g, "batchnorm '%s': eps = %g (must be > 0)", name, (double)a.eps);
    if (!(a.momentum >= 0.0f && a.momentum <= 1.0f))
        return tsl__graph_fail(g, "batchnorm '%s': momentum = %g (must be in [0,1])", name,
                               (double)a.momentum);
    const int64_t c = xt->shape.d[1];
    const int64_t count = tsl_shape_numel(&xt->shape) / c;
    if (count < 2)
        return tsl__graph_fail(g, "batchnorm '%s': input '%s' shape %s has %lld value per channel "
                               "(needs more than 1 for batch statistics)",
                               name, xt->name, tsl_shape_str(&xt->shape, sb, sizeof sb),
                               (long long)count);
    const tsl_shape xs = xt->shape; /* xt may move when tensors are added */
    tsl_tid gamma = tsl_param(g, tsl__name(nb, name, "weight"), TSL_SHAPE(c), TSL_INIT_ONE);
    tsl_tid beta = tsl_param(g, tsl__name(nb, name, "bias"), TSL_SHAPE(c), TSL_INIT_ZERO);
    tsl_tid rmean = tsl_buffer(g, tsl__name(nb, name, "running_mean"), TSL_SHAPE(c), TSL_INIT_ZERO);
    tsl_tid rvar = tsl_buffer(g, tsl__name(nb, name, "running_var"), TSL_SHAPE(c), TSL_INIT_ONE);
    tsl_tid y = tsl__graph_new_tensor(g, name, xs, TSL_F32);
    tsl_tid mean = tsl__graph_new_tensor(g, tsl__name(nb, name, "saved_mean"), TSL_SHAPE(c), TSL_F32);
    tsl_tid invstd = tsl__graph_new_tensor(g, tsl__name(nb, name, "saved_invstd"), TSL_SHAPE(c), TSL_F32);
    tsl_tid in[5] = {x, gamma, beta, rmean, rvar};
    tsl_tid out[5] = {y, mean, invstd, rmean, rvar};
    if (tsl__graph_bad(g, in, 5) || tsl__graph_bad(g, out, 5)) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_BATCHNORM, name, in, 5, out, 5, &a, sizeof a,
                          (1u << 1) | (1u << 2)) < 0)
        return TSL_NONE;
    return y;
}

/* Training: two passes for the statistics (sum, squared deviations), then
 * y = (x-mean)*invstd*gamma+beta: about 7 per element. */
static double bn_flops(const tsl_graph *g, const tsl_op *op) {
    return 7.0 * tsl__numel(g, op->in[0]) + 8.0 * tsl__numel(g, op->in[1]);
}

/* Two reductions (sum dy, sum dy*xhat) and dx: about 11 per element. */
static double bn_bwd_flops(const tsl_graph *g, const tsl_op *op) {
    return 11.0 * tsl__numel(g, op->in[1]);
}

/* BATCHNORM_BWD (dy, x, gamma, saved_mean, saved_invstd) -> (dx, dgamma,
 * dbeta), the training-mode formula. The op always produces all three;
 * only the wanted ones are handed back to autodiff. */
static void bn_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                        tsl_tid *in_grads) {
    tsl_tid dy = out_grads[0];
    if (dy == TSL_NONE) return;
    if (dy == TSL_GRAD_ONE) {
        tsl__graph_fail(g, "batchnorm '%s': its output cannot be the loss", op->name);
        return;
    }
    char nb[TSL_NAME_MAX];
    tsl_tid x = op->in[0], gamma = op->in[1], beta = op->in[2];
    const tsl_shape xs = tsl__t(g, x)->shape, cs = tsl__t(g, gamma)->shape;
    tsl_tid dx = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dx"), xs, TSL_F32);
    tsl_tid dgamma = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dgamma"), cs, TSL_F32);
    tsl_tid dbeta = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dbeta"), cs, TSL_F32);
    tsl_tid in[5] = {dy, x, gamma, op->out[1], op->out[2]};
    tsl_tid out[3] = {dx, dgamma, dbeta};
    if (tsl__graph_bad(g, out, 3)) return;
    if (tsl__graph_add_op(g, TSL_OP_BATCHNORM_BWD, tsl__name(nb, op->name, "bwd"), in, 5, out, 3,
                          &op->attr.bn, sizeof op->attr.bn, 0) < 0)
        return;
    if (tsl__graph_needs_grad(g, x)) in_grads[0] = dx;
    if (tsl__graph_needs_grad(g, gamma)) in_grads[1] = dgamma;
    if (tsl__graph_needs_grad(g, beta)) in_grads[2] = dbeta;
}

void tsl__ops_register_norm(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_BATCHNORM] = (tsl_op_def){"batchnorm", bn_flops, NULL, bn_backward};
    defs[TSL_OP_BATCHNORM_BWD] = (tsl_op_def){"batchnorm_bwd", bn_bwd_flops, NULL, NULL};
}
