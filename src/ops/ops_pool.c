/*
 * ops_pool.c - the pool op family: builders with shape inference and
 * validation (tsl_maxpool2d, tsl_avgpool2d, tsl_global_avgpool,
 * tsl_pool_ksp), FLOP counts, and the backward builders.
 *
 * Windows follow PyTorch's floor mode: Ho = (H + 2p - K)/s + 1. Padding is
 * at most half the kernel (PyTorch's rule), so every window holds at least
 * one element of the input.
 */
#include <stdio.h>

#include "core/assert.h"
#include "ops/op_def.h"

/* Validates a pool's input and attribute: x a rank-4 f32 tensor, kernel and
 * stride >= 1, 0 <= pad <= kernel/2, the kernel no larger than the padded
 * input, count_include_pad 0 or 1. On success writes the output shape to
 * *ys and returns 1; otherwise fails the graph and returns 0. */
static int pool_check(tsl_graph *g, const char *kind, const char *name, tsl_tid x,
                      const tsl_pool_attr *a, tsl_shape *ys) {
    const tsl_tensor *xt = tsl__t(g, x);
    char sb[128];
    if (xt->dtype != TSL_F32 || xt->shape.ndim != 4) {
        tsl__graph_fail(g, "%s '%s': input '%s' has shape %s and dtype %s, expected (N,C,H,W) f32",
                        kind, name, xt->name, tsl_shape_str(&xt->shape, sb, sizeof sb),
                        tsl_dtype_name(xt->dtype));
        return 0;
    }
    if (a->kernel_h < 1 || a->kernel_w < 1 || a->stride_h < 1 || a->stride_w < 1) {
        tsl__graph_fail(g, "%s '%s': kernel (%d,%d) and stride (%d,%d) must be >= 1", kind, name,
                        a->kernel_h, a->kernel_w, a->stride_h, a->stride_w);
        return 0;
    }
    if (a->pad_h < 0 || a->pad_w < 0 || 2 * a->pad_h > a->kernel_h ||
        2 * a->pad_w > a->kernel_w) {
        tsl__graph_fail(g, "%s '%s': padding (%d,%d) must be >= 0 and at most half the kernel (%d,%d)",
                        kind, name, a->pad_h, a->pad_w, a->kernel_h, a->kernel_w);
        return 0;
    }
    if (a->count_include_pad != 0 && a->count_include_pad != 1) {
        tsl__graph_fail(g, "%s '%s': count_include_pad %d must be 0 or 1", kind, name,
                        a->count_include_pad);
        return 0;
    }
    int64_t h = xt->shape.d[2], w = xt->shape.d[3];
    int64_t hp = h + 2 * (int64_t)a->pad_h, wp = w + 2 * (int64_t)a->pad_w;
    if (a->kernel_h > hp || a->kernel_w > wp) {
        tsl__graph_fail(g,
                        "%s '%s': kernel %dx%d is larger than the padded input %lldx%lld of '%s' "
                        "(H,W = %lld,%lld, pad %d,%d)",
                        kind, name, a->kernel_h, a->kernel_w, (long long)hp, (long long)wp,
                        xt->name, (long long)h, (long long)w, a->pad_h, a->pad_w);
        return 0;
    }
    *ys = TSL_SHAPE(xt->shape.d[0], xt->shape.d[1], (hp - a->kernel_h) / a->stride_h + 1,
                    (wp - a->kernel_w) / a->stride_w + 1); // (N,C,Ho,Wo)
    return 1;
}

/* Shared body of the two window pools: validate, create y named `name`,
 * append the op. Returns y or TSL_NONE with the graph failed. */
static tsl_tid pool2d(tsl_graph *g, tsl_op_type type, const char *kind, const char *name,
                      tsl_tid x, tsl_pool_attr a) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!name) name = "";
    tsl_shape ys;
    if (!pool_check(g, kind, name, x, &a, &ys)) return TSL_NONE;
    tsl_tid y = tsl__graph_new_tensor(g, name, ys, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, type, name, &x, 1, &y, 1, &a, sizeof a, 0) < 0) return TSL_NONE;
    return y;
}

/* Max pool, padding counting as -infinity. x (N,C,H,W) -> y (N,C,Ho,Wo).
 * Errors as pool_check. */
tsl_tid tsl_maxpool2d(tsl_graph *g, const char *name, tsl_tid x, tsl_pool_attr a) {
    return pool2d(g, TSL_OP_MAXPOOL2D, "maxpool2d", name, x, a);
}

/* Average pool (count_include_pad chooses the divisor). Errors as pool_check. */
tsl_tid tsl_avgpool2d(tsl_graph *g, const char *name, tsl_tid x, tsl_pool_attr a) {
    return pool2d(g, TSL_OP_AVGPOOL2D, "avgpool2d", name, x, a);
}

/* Mean over H,W: x (N,C,H,W) -> y (N,C). Fails the graph if x is not a
 * rank-4 f32 tensor. */
tsl_tid tsl_global_avgpool(tsl_graph *g, const char *name, tsl_tid x) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!name) name = "";
    const tsl_tensor *xt = tsl__t(g, x);
    char sb[128];
    if (xt->dtype != TSL_F32 || xt->shape.ndim != 4)
        return tsl__graph_fail(g,
                               "global_avgpool '%s': input '%s' has shape %s and dtype %s, "
                               "expected (N,C,H,W) f32",
                               name, xt->name, tsl_shape_str(&xt->shape, sb, sizeof sb),
                               tsl_dtype_name(xt->dtype));
    tsl_tid y = tsl__graph_new_tensor(g, name, TSL_SHAPE(xt->shape.d[0], xt->shape.d[1]), TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_GLOBAL_AVGPOOL, name, &x, 1, &y, 1, NULL, 0, 0) < 0)
        return TSL_NONE;
    return y;
}

/* Square kernel k, stride s, padding p, count_include_pad 1 (PyTorch's
 * default). */
tsl_pool_attr tsl_pool_ksp(int kernel, int stride, int pad) {
    tsl_pool_attr a = {0};
    a.kernel_h = a.kernel_w = kernel;
    a.stride_h = a.stride_w = stride;
    a.pad_h = a.pad_w = pad;
    a.count_include_pad = 1;
    return a;
}

/* ---- FLOPs: one operation per window element (compare or add) -------------- */

static double window_flops(const tsl_graph *g, tsl_tid y, const tsl_pool_attr *a) {
    return tsl__numel(g, y) * (double)a->kernel_h * (double)a->kernel_w;
}
/* MAXPOOL2D, AVGPOOL2D: y is out[0]. */
static double pool_flops(const tsl_graph *g, const tsl_op *op) {
    return window_flops(g, op->out[0], &op->attr.pool);
}
/* MAXPOOL2D_BWD, AVGPOOL2D_BWD: dy (the forward's y) is in[0]. */
static double pool_bwd_flops(const tsl_graph *g, const tsl_op *op) {
    return window_flops(g, op->in[0], &op->attr.pool);
}
/* GLOBAL_AVGPOOL(_BWD): one operation per element of the (N,C,H,W) side. */
static double gap_flops(const tsl_graph *g, const tsl_op *op) {
    return tsl__numel(g, op->in[0]);
}
static double gap_bwd_flops(const tsl_graph *g, const tsl_op *op) {
    return tsl__numel(g, op->out[0]);
}

/* ---- backward builders ------------------------------------------------------ */

/* Appends `type` (inputs in[0..n_in)) computing dx shaped like the forward's
 * x, named "<op>.dx", and stores it in ig[0]. Nothing if x needs no gradient;
 * fails the graph if the pool output was made the loss. */
static void pool_bwd_common(tsl_graph *g, const tsl_op *op, tsl_op_type type, const tsl_tid *in,
                            int n_in, tsl_tid *ig) {
    if (in[0] == TSL_GRAD_ONE) {
        tsl__graph_fail(g, "op '%s' (%s): its output cannot be the loss", op->name,
                        tsl_op_type_name(op->type));
        return;
    }
    if (in[0] == TSL_NONE || !tsl__graph_needs_grad(g, op->in[0])) return;
    char nb[TSL_NAME_MAX], ob[TSL_NAME_MAX];
    tsl_tid dx = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dx"), tsl__t(g, op->in[0])->shape,
                                       TSL_F32);
    if (dx == TSL_NONE) return;
    if (tsl__graph_add_op(g, type, tsl__name(ob, op->name, "bwd"), in, n_in, &dx, 1, &op->attr,
                          sizeof op->attr.pool, 0) >= 0)
        ig[0] = dx;
}

/* MAXPOOL2D: dx = MAXPOOL2D_BWD(dy, x), the argmax recomputed from x. */
static void maxpool_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid in[2] = {og[0], op->in[0]};
    pool_bwd_common(g, op, TSL_OP_MAXPOOL2D_BWD, in, 2, ig);
}

/* AVGPOOL2D: dx = AVGPOOL2D_BWD(dy). */
static void avgpool_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    pool_bwd_common(g, op, TSL_OP_AVGPOOL2D_BWD, og, 1, ig);
}

/* GLOBAL_AVGPOOL: dx = GLOBAL_AVGPOOL_BWD(dy). */
static void gap_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    pool_bwd_common(g, op, TSL_OP_GLOBAL_AVGPOOL_BWD, og, 1, ig);
}

/* ---- registration ---------------------------------------------------------------- */

void tsl__ops_register_pool(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_MAXPOOL2D] = (tsl_op_def){"maxpool2d", pool_flops, NULL, maxpool_backward};
    defs[TSL_OP_MAXPOOL2D_BWD] = (tsl_op_def){"maxpool2d_bwd", pool_bwd_flops, NULL, NULL};
    defs[TSL_OP_AVGPOOL2D] = (tsl_op_def){"avgpool2d", pool_flops, NULL, avgpool_backward};
    defs[TSL_OP_AVGPOOL2D_BWD] = (tsl_op_def){"avgpool2d_bwd", pool_bwd_flops, NULL, NULL};
    defs[TSL_OP_GLOBAL_AVGPOOL] = (tsl_op_def){"global_avgpool", gap_flops, NULL, gap_backward};
    defs[TSL_OP_GLOBAL_AVGPOOL_BWD] =
        (tsl_op_def){"global_avgpool_bwd", gap_bwd_flops, NULL, NULL};
}
