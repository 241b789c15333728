/*
 * ops_loss.c - softmax cross-entropy: the builder, FLOP counts and the
 * backward construction.
 *
 * SOFTMAX_XENT (logits:(N,K[,H,W]), labels:(N[,H,W]) int32)
 *   -> (loss: scalar, probs: logits' shape, no gradient)
 * SOFTMAX_XENT_BWD (probs, labels) -> dlogits = (probs - onehot) / positions
 * MSE (pred, target) -> loss: () = mean over every element of (pred-target)^2
 * MSE_BWD (pred, target) -> dpred = 2 (pred - target) / numel
 * A loss is the end of the forward pass: its incoming gradient must be the
 * constant 1 (TSL_GRAD_ONE), which the backward kernels assume.
 */
#include "ops/op_def.h"

/* Mean cross-entropy over every position of logits (N,K,d2..) against
 * int32 labels (N,d2..): rank of logits 2..5, labels' shape = logits' shape
 * without axis 1. Outputs the scalar loss named `name` and `name.probs`
 * (the softmax over axis 1, no gradient). Returns the loss, or TSL_NONE
 * after a builder error naming the op, the tensor and the shapes. Label
 * values are checked by the kernel, at run time. */
tsl_tid tsl_softmax_xent(tsl_graph *g, const char *name, tsl_tid logits, tsl_tid labels) {
    tsl_tid ids[2] = {logits, labels};
    if (tsl__graph_bad(g, ids, 2)) return TSL_NONE;
    const tsl_tensor *lt = tsl__t(g, logits), *yt = tsl__t(g, labels);
    char s1[128], s2[128], nb[TSL_NAME_MAX];
    if (lt->shape.ndim < 2 || (lt->dtype != TSL_F32 && lt->dtype != TSL_F64))
        return tsl__graph_fail(g, "softmax_xent '%s': logits '%s' must be a float (N,K) or (N,K,H,W) tensor, "
                               "has shape %s dtype %s",
                               name, lt->name, tsl_shape_str(&lt->shape, s1, sizeof s1),
                               tsl_dtype_name(lt->dtype));
    if (yt->dtype != TSL_I32)
        return tsl__graph_fail(g, "softmax_xent '%s': labels '%s' must be int32, has dtype %s", name,
                               yt->name, tsl_dtype_name(yt->dtype));
    int ok = yt->shape.ndim == lt->shape.ndim - 1 && yt->shape.d[0] == lt->shape.d[0];
    for (int i = 2; ok && i < lt->shape.ndim; i++) ok = yt->shape.d[i - 1] == lt->shape.d[i];
    if (!ok)
        return tsl__graph_fail(g, "softmax_xent '%s': labels '%s' shape %s does not match logits '%s' shape %s "
                               "without its class axis 1",
                               name, yt->name, tsl_shape_str(&yt->shape, s1, sizeof s1), lt->name,
                               tsl_shape_str(&lt->shape, s2, sizeof s2));
    const tsl_shape ls = lt->shape;
    tsl_tid loss = tsl__graph_new_tensor(g, name, tsl_shape_from(NULL, 0), TSL_F32); // ()
    tsl_tid probs = tsl__graph_new_tensor(g, tsl__name(nb, name, "probs"), ls, TSL_F32);
    tsl_tid out[2] = {loss, probs};
    if (tsl__graph_bad(g, out, 2)) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_SOFTMAX_XENT, name, ids, 2, out, 2, NULL, 0, 1u << 1) < 0)
        return TSL_NONE;
    return loss;
}

/* Per element: max, subtract, exp, sum, divide (about 5); per position a
 * log and the mean. */
static double xent_flops(const tsl_graph *g, const tsl_op *op) {
    return 5.0 * tsl__numel(g, op->in[0]) + 3.0 * tsl__numel(g, op->in[1]);
}

/* Per element: subtract the one-hot, scale. */
static double xent_bwd_flops(const tsl_graph *g, const tsl_op *op) {
    return 2.0 * tsl__numel(g, op->in[0]);
}

/* dlogits = SOFTMAX_XENT_BWD(probs, labels). Fails the graph unless the
 * loss's incoming gradient is the constant 1 (the op is the loss). */
static void xent_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                          tsl_tid *in_grads) {
    if (out_grads[0] != TSL_GRAD_ONE) {
        tsl__graph_fail(g, "softmax_xent '%s': its loss must be the graph's loss (incoming gradient "
                        "the constant 1), got gradient tensor id %d",
                        op->name, out_grads[0]);
        return;
    }
    if (!tsl__graph_needs_grad(g, op->in[0])) return;
    char nb[TSL_NAME_MAX];
    tsl_tid dl = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dlogits"),
                                       tsl__t(g, op->in[0])->shape, TSL_F32);
    tsl_tid in[2] = {op->out[1], op->in[1]};
    if (dl == TSL_NONE) return;
    if (tsl__graph_add_op(g, TSL_OP_SOFTMAX_XENT_BWD, nb, in, 2, &dl, 1, NULL, 0, 0) < 0) return;
    in_grads[0] = dl;
}

/* ---- MSE ------------------------------------------------------------------------ */

tsl_tid tsl_mse(tsl_graph *g, const char *name, tsl_tid pred, tsl_tid target) {
    tsl_tid ids[2] = {pred, target};
    if (tsl__graph_bad(g, ids, 2)) return TSL_NONE;
    const tsl_tensor *pt = tsl__t(g, pred), *tt = tsl__t(g, target);
    char s1[128], s2[128];
    if (pt->dtype != tt->dtype || (pt->dtype != TSL_F32 && pt->dtype != TSL_F64) ||
        pt->shape.ndim < 1 || !tsl_shape_eq(&pt->shape, &tt->shape))
        return tsl__graph_fail(g, "mse '%s': pred '%s' %s %s and target '%s' %s %s must be float "
                               "tensors of one dtype and one shape (rank >= 1)",
                               name, pt->name, tsl_shape_str(&pt->shape, s1, sizeof s1),
                               tsl_dtype_name(pt->dtype), tt->name,
                               tsl_shape_str(&tt->shape, s2, sizeof s2), tsl_dtype_name(tt->dtype));
    tsl_tid loss = tsl__graph_new_tensor(g, name, tsl_shape_from(NULL, 0), pt->dtype); // ()
    if (tsl__graph_bad(g, &loss, 1)) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_MSE, name, ids, 2, &loss, 1, NULL, 0, 0) < 0) return TSL_NONE;
    return loss;
}

/* Per element: subtract, square, sum. */
static double mse_flops(const tsl_graph *g, const tsl_op *op) {
    return 3.0 * tsl__numel(g, op->in[0]);
}

/* Per element: subtract, scale. */
static double mse_bwd_flops(const tsl_graph *g, const tsl_op *op) {
    return 2.0 * tsl__numel(g, op->in[0]);
}

/* dpred = MSE_BWD(pred, target). Fails the graph unless the loss's incoming
 * gradient is the constant 1 (the op is the loss). */
static void mse_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                         tsl_tid *in_grads) {
    if (out_grads[0] != TSL_GRAD_ONE) {
        tsl__graph_fail(g, "mse '%s': its loss must be the graph's loss (incoming gradient "
                        "the constant 1), got gradient tensor id %d",
                        op->name, out_grads[0]);
        return;
    }
    if (!tsl__graph_needs_grad(g, op->in[0])) return;
    char nb[TSL_NAME_MAX];
    const tsl_tensor *pt = tsl__t(g, op->in[0]);
    tsl_tid dp = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dpred"), pt->shape, pt->dtype);
    tsl_tid in[2] = {op->in[0], op->in[1]};
    if (dp == TSL_NONE) return;
    if (tsl__graph_add_op(g, TSL_OP_MSE_BWD, nb, in, 2, &dp, 1, NULL, 0, 0) < 0) return;
    in_grads[0] = dp;
}

void tsl__ops_register_loss(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_MSE] = (tsl_op_def){"mse", mse_flops, NULL, mse_backward};
    defs[TSL_OP_MSE_BWD] = (tsl_op_def){"mse_bwd", mse_bwd_flops, NULL, NULL};
    defs[TSL_OP_SOFTMAX_XENT] = (tsl_op_def){"softmax_xent", xent_flops, NULL, xent_backward};
    defs[TSL_OP_SOFTMAX_XENT_BWD] = (tsl_op_def){"softmax_xent_bwd", xent_bwd_flops, NULL, NULL};
}
