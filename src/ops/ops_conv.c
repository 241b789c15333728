/*
 * ops_conv.c - the conv op family: builders with shape inference and
 * validation (tsl_conv2d, tsl_conv2d_transpose, tsl_conv2d_layer,
 * tsl_conv_sp), FLOP counts, and the backward builders.
 *
 * Layout is NCHW. A conv's weight is (Cout, Cin/g, KH, KW); a transposed
 * conv's weight is (Cin, Cout/g, KH, KW), as in PyTorch. The transposed conv
 * is the data-gradient of the conv that maps its output space back to its
 * input space, so its backward is built from the conv ops themselves:
 *   dx = CONV2D(dy, w), dw = CONV2D_BWD_FILTER(x, dy), db = sum of dy over
 *   N,H,W (REDUCE_SUM_TO to (Cout,1,1), then RESHAPE to (Cout)).
 */
#include <stdio.h>

#include "core/assert.h"
#include "ops/op_def.h"

/* ---- validation helpers --------------------------------------------------- */

/* Checks the attribute fields every conv needs: strides and dilations >= 1,
 * paddings >= 0, groups >= 1. `kind` is "conv2d" or "conv2d_transpose".
 * Returns 1 if valid; otherwise fails the graph and returns 0. */
static int check_attr(tsl_graph *g, const char *kind, const char *name, const tsl_conv_attr *a) {
    if (a->stride_h < 1 || a->stride_w < 1) {
        tsl__graph_fail(g, "%s '%s': stride (%d,%d) must be >= 1", kind, name, a->stride_h,
                        a->stride_w);
        return 0;
    }
    if (a->pad_h < 0 || a->pad_w < 0) {
        tsl__graph_fail(g, "%s '%s': padding (%d,%d) must be >= 0", kind, name, a->pad_h,
                        a->pad_w);
        return 0;
    }
    if (a->dil_h < 1 || a->dil_w < 1) {
        tsl__graph_fail(g, "%s '%s': dilation (%d,%d) must be >= 1", kind, name, a->dil_h,
                        a->dil_w);
        return 0;
    }
    if (a->groups < 1) {
        tsl__graph_fail(g, "%s '%s': groups %d must be >= 1", kind, name, a->groups);
        return 0;
    }
    return 1;
}

/* Checks that tensor t is a float tensor of rank `rank`; `role` names it in
 * the message ("input", "weight", "bias"). Returns 1 if so, else fails the
 * graph and returns 0. */
static int check_rank(tsl_graph *g, const char *kind, const char *name, const char *role,
                      tsl_tid t, int rank) {
    const tsl_tensor *tt = tsl__t(g, t);
    char sb[128];
    if (tt->dtype != TSL_F32) {
        tsl__graph_fail(g, "%s '%s': %s '%s' has dtype %s, expected f32", kind, name, role,
                        tt->name, tsl_dtype_name(tt->dtype));
        return 0;
    }
    if (tt->shape.ndim != rank) {
        tsl__graph_fail(g, "%s '%s': %s '%s' has shape %s (rank %d), expected rank %d", kind,
                        name, role, tt->name, tsl_shape_str(&tt->shape, sb, sizeof sb),
                        tt->shape.ndim, rank);
        return 0;
    }
    return 1;
}

/* Checks the optional bias b: rank 1 with `cout` elements. TSL_NONE is fine.
 * Returns 1 if valid, else fails the graph and returns 0. */
static int check_bias(tsl_graph *g, const char *kind, const char *name, tsl_tid b, int64_t cout) {
    if (b == TSL_NONE) return 1;
    if (!check_rank(g, kind, name, "bias", b, 1)) return 0;
    const tsl_tensor *bt = tsl__t(g, b);
    if (bt->shape.d[0] != cout) {
        tsl__graph_fail(g, "%s '%s': bias '%s' has %lld elements, expected Cout = %lld", kind,
                        name, bt->name, (long long)bt->shape.d[0], (long long)cout);
        return 0;
    }
    return 1;
}

/* ---- builders -------------------------------------------------------------- */

/* y = conv2d(x, w) + b. x (N,Cin,H,W), w (Cout,Cin/g,KH,KW), b (Cout) or
 * TSL_NONE. Returns y (N,Cout,Ho,Wo) named `name`, or TSL_NONE with the graph
 * failed: bad ranks, groups not dividing Cin or Cout, w's dim 1 not Cin/g, a
 * bias of the wrong length, or a dilated kernel larger than the padded input.
 * a.out_pad_* is ignored. */
tsl_tid tsl_conv2d(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w, tsl_tid b,
                   tsl_conv_attr a) {
    static const char *kind = "conv2d";
    tsl_tid ids[3] = {x, w, b};
    if (tsl__graph_bad(g, ids, b == TSL_NONE ? 2 : 3)) return TSL_NONE;
    if (!name) name = "";
    if (!check_attr(g, kind, name, &a)) return TSL_NONE;
    if (!check_rank(g, kind, name, "input", x, 4) || !check_rank(g, kind, name, "weight", w, 4))
        return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x), *wt = tsl__t(g, w);
    int64_t n = xt->shape.d[0], cin = xt->shape.d[1], h = xt->shape.d[2], wd = xt->shape.d[3];
    int64_t cout = wt->shape.d[0], kh = wt->shape.d[2], kw = wt->shape.d[3];
    if (cin % a.groups != 0)
        return tsl__graph_fail(g, "%s '%s': groups %d does not divide the %lld channels of input '%s'",
                               kind, name, a.groups, (long long)cin, xt->name);
    if (cout % a.groups != 0)
        return tsl__graph_fail(g, "%s '%s': groups %d does not divide Cout = %lld (dim 0 of weight '%s')",
                               kind, name, a.groups, (long long)cout, wt->name);
    if (wt->shape.d[1] * a.groups != cin)
        return tsl__graph_fail(g,
                               "%s '%s': weight '%s' dim 1 is %lld but input '%s' has %lld channels "
                               "(expected Cin/groups = %lld with groups %d)",
                               kind, name, wt->name, (long long)wt->shape.d[1], xt->name,
                               (long long)cin, (long long)(cin / a.groups), a.groups);
    if (!check_bias(g, kind, name, b, cout)) return TSL_NONE;
    int64_t ekh = (int64_t)a.dil_h * (kh - 1) + 1, ekw = (int64_t)a.dil_w * (kw - 1) + 1;
    if (ekh > h + 2 * (int64_t)a.pad_h || ekw > wd + 2 * (int64_t)a.pad_w)
        return tsl__graph_fail(g,
                               "%s '%s': kernel %lldx%lld (dilated %lldx%lld) is larger than the "
                               "padded input %lldx%lld of '%s' (H,W = %lld,%lld, pad %d,%d)",
                               kind, name, (long long)kh, (long long)kw, (long long)ekh,
                               (long long)ekw, (long long)(h + 2 * a.pad_h),
                               (long long)(wd + 2 * a.pad_w), xt->name, (long long)h,
                               (long long)wd, a.pad_h, a.pad_w);
    int64_t ho = (h + 2 * (int64_t)a.pad_h - ekh) / a.stride_h + 1;
    int64_t wo = (wd + 2 * (int64_t)a.pad_w - ekw) / a.stride_w + 1;
    tsl_tid y = tsl__graph_new_tensor(g, name, TSL_SHAPE(n, cout, ho, wo), TSL_F32); // (N,Cout,Ho,Wo)
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_CONV2D, name, ids, b == TSL_NONE ? 2 : 3, &y, 1, &a, sizeof a,
                          0) < 0)
        return TSL_NONE;
    return y;
}

/* y = conv2d_transpose(x, w) + b, PyTorch's ConvTranspose2d. x (N,Cin,H,W),
 * w (Cin,Cout/g,KH,KW), b (Cout) or TSL_NONE. Ho = (H-1)*s - 2p + d*(K-1) +
 * out_pad + 1. Returns y named `name`, or TSL_NONE with the graph failed: bad
 * ranks, w's dim 0 not Cin, groups not dividing Cin, out_pad outside
 * [0, stride) (the backward conv must map Ho back to exactly H), or an
 * output size below 1. */
tsl_tid tsl_conv2d_transpose(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w, tsl_tid b,
                             tsl_conv_attr a) {
    static const char *kind = "conv2d_transpose";
    tsl_tid ids[3] = {x, w, b};
    if (tsl__graph_bad(g, ids, b == TSL_NONE ? 2 : 3)) return TSL_NONE;
    if (!name) name = "";
    if (!check_attr(g, kind, name, &a)) return TSL_NONE;
    if (a.out_pad_h < 0 || a.out_pad_h >= a.stride_h || a.out_pad_w < 0 ||
        a.out_pad_w >= a.stride_w)
        return tsl__graph_fail(g, "%s '%s': out_pad (%d,%d) must be >= 0 and < stride (%d,%d)",
                               kind, name, a.out_pad_h, a.out_pad_w, a.stride_h, a.stride_w);
    if (!check_rank(g, kind, name, "input", x, 4) || !check_rank(g, kind, name, "weight", w, 4))
        return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x), *wt = tsl__t(g, w);
    int64_t n = xt->shape.d[0], cin = xt->shape.d[1], h = xt->shape.d[2], wd = xt->shape.d[3];
    int64_t kh = wt->shape.d[2], kw = wt->shape.d[3];
    if (cin % a.groups != 0)
        return tsl__graph_fail(g, "%s '%s': groups %d does not divide the %lld channels of input '%s'",
                               kind, name, a.groups, (long long)cin, xt->name);
    if (wt->shape.d[0] != cin)
        return tsl__graph_fail(g,
                               "%s '%s': weight '%s' dim 0 is %lld but input '%s' has %lld channels "
                               "(transposed weights are (Cin, Cout/groups, KH, KW))",
                               kind, name, wt->name, (long long)wt->shape.d[0], xt->name,
                               (long long)cin);
    int64_t cout = wt->shape.d[1] * a.groups;
    if (!check_bias(g, kind, name, b, cout)) return TSL_NONE;
    int64_t ho = (h - 1) * a.stride_h - 2 * (int64_t)a.pad_h + (int64_t)a.dil_h * (kh - 1) +
                 a.out_pad_h + 1;
    int64_t wo = (wd - 1) * a.stride_w - 2 * (int64_t)a.pad_w + (int64_t)a.dil_w * (kw - 1) +
                 a.out_pad_w + 1;
    if (ho < 1 || wo < 1)
        return tsl__graph_fail(g,
                               "%s '%s': output size %lldx%lld is empty (input '%s' %lldx%lld, "
                               "kernel %lldx%lld, pad %d,%d)",
                               kind, name, (long long)ho, (long long)wo, xt->name, (long long)h,
                               (long long)wd, (long long)kh, (long long)kw, a.pad_h, a.pad_w);
    tsl_tid y = tsl__graph_new_tensor(g, name, TSL_SHAPE(n, cout, ho, wo), TSL_F32); // (N,Cout,Ho,Wo)
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_CONV2D_TRANSPOSE, name, ids, b == TSL_NONE ? 2 : 3, &y, 1, &a,
                          sizeof a, 0) < 0)
        return TSL_NONE;
    return y;
}

/* A conv with its own parameters: name.weight (cout, Cin/g, kh, kw),
 * KAIMING_NORMAL, and when `bias` name.bias (cout), ZERO. Returns the conv's
 * output, or TSL_NONE with the graph failed (x not rank 4, cout or kernel
 * sizes < 1, groups not dividing Cin, or any error of tsl_conv2d). */
tsl_tid tsl_conv2d_layer(tsl_graph *g, const char *name, tsl_tid x, int64_t cout, int kh, int kw,
                         tsl_conv_attr a, int bias) {
    static const char *kind = "conv2d";
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!name) name = "";
    if (!check_attr(g, kind, name, &a)) return TSL_NONE;
    if (!check_rank(g, kind, name, "input", x, 4)) return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x);
    int64_t cin = xt->shape.d[1];
    if (cout < 1 || kh < 1 || kw < 1)
        return tsl__graph_fail(g, "%s '%s': Cout %lld and kernel %dx%d must be >= 1", kind, name,
                               (long long)cout, kh, kw);
    if (cin % a.groups != 0)
        return tsl__graph_fail(g, "%s '%s': groups %d does not divide the %lld channels of input '%s'",
                               kind, name, a.groups, (long long)cin, xt->name);
    char nb[TSL_NAME_MAX];
    tsl_tid w = tsl_param(g, tsl__name(nb, name, "weight"),
                          TSL_SHAPE(cout, cin / a.groups, kh, kw), TSL_INIT_KAIMING_NORMAL);
    tsl_tid b = TSL_NONE;
    if (bias) b = tsl_param(g, tsl__name(nb, name, "bias"), TSL_SHAPE(cout), TSL_INIT_ZERO);
    if (w == TSL_NONE || (bias && b == TSL_NONE)) return TSL_NONE;
    return tsl_conv2d(g, name, x, w, b, a);
}

/* Stride s and padding p in both directions, dilation 1, groups 1. */
tsl_conv_attr tsl_conv_sp(int stride, int pad) {
    tsl_conv_attr a = {0};
    a.stride_h = a.stride_w = stride;
    a.pad_h = a.pad_w = pad;
    a.dil_h = a.dil_w = 1;
    a.groups = 1;
    return a;
}

/* ---- FLOPs ------------------------------------------------------------------ */

/* Multiply-adds per element of the "output side" tensor: a weight of shape
 * (C0, C1, KH, KW) touches C1*KH*KW inputs per element of a C0 plane. */
static double per_elem(const tsl_graph *g, tsl_tid w) {
    const tsl_tensor *wt = tsl__t(g, w);
    return tsl__numel(g, w) / (double)wt->shape.d[0];
}

/* CONV2D: 2*N*Cout*Ho*Wo*(Cin/g)*KH*KW, plus N*Cout*Ho*Wo with a bias. */
static double conv_flops(const tsl_graph *g, const tsl_op *op) {
    double ny = tsl__numel(g, op->out[0]);
    return 2.0 * ny * per_elem(g, op->in[1]) + (op->n_in == 3 ? ny : 0.0);
}

/* CONV2D_BWD_DATA (dy, w) -> dx: the forward's multiply-adds, no bias. */
static double conv_bwd_data_flops(const tsl_graph *g, const tsl_op *op) {
    return 2.0 * tsl__numel(g, op->in[0]) * per_elem(g, op->in[1]);
}

/* CONV2D_BWD_FILTER (dy, x) -> dw[, db]: one multiply-add per (dy element,
 * weight element of its plane), plus the bias sum. */
static double conv_bwd_filter_flops(const tsl_graph *g, const tsl_op *op) {
    double ndy = tsl__numel(g, op->in[0]);
    return 2.0 * ndy * per_elem(g, op->out[0]) + (op->n_out == 2 ? ndy : 0.0);
}

/* CONV2D_TRANSPOSE (x, w[, b]) -> y: every x element is scattered through a
 * (Cout/g)*KH*KW slice of w; plus one add per y element with a bias. */
static double conv_transpose_flops(const tsl_graph *g, const tsl_op *op) {
    return 2.0 * tsl__numel(g, op->in[0]) * per_elem(g, op->in[1]) +
           (op->n_in == 3 ? tsl__numel(g, op->out[0]) : 0.0);
}

/* ---- backward builders ------------------------------------------------------ */

/* Fails the graph if the op's output gradient is the loss's constant 1 (a
 * conv output cannot be the scalar loss). Returns 1 if dy is a tensor. */
static int usable_dy(tsl_graph *g, const tsl_op *op, tsl_tid dy) {
    if (dy == TSL_GRAD_ONE) {
        tsl__graph_fail(g, "op '%s' (%s): its output cannot be the loss", op->name,
                        tsl_op_type_name(op->type));
        return 0;
    }
    return dy != TSL_NONE;
}

/* CONV2D (x, w[, b]) -> y. dx = CONV2D_BWD_DATA(dy, w) if x needs a
 * gradient; (dw[, db]) = CONV2D_BWD_FILTER(dy, x) if w or b does (db is
 * computed whenever the forward had a bias, as the op's contract says). */
static void conv_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (!usable_dy(g, op, dy)) return;
    tsl_tid x = op->in[0], w = op->in[1], b = op->n_in == 3 ? op->in[2] : TSL_NONE;
    char nb[TSL_NAME_MAX];
    const tsl_conv_attr *a = &op->attr.conv;
    if (tsl__graph_needs_grad(g, x)) {
        tsl_tid dx = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dx"), tsl__t(g, x)->shape,
                                           TSL_F32);
        tsl_tid in[2] = {dy, w};
        if (dx != TSL_NONE &&
            tsl__graph_add_op(g, TSL_OP_CONV2D_BWD_DATA, tsl__name(nb, op->name, "bwd_data"), in,
                              2, &dx, 1, a, sizeof *a, 0) >= 0)
            ig[0] = dx;
    }
    int need_w = tsl__graph_needs_grad(g, w);
    int need_b = b != TSL_NONE && tsl__graph_needs_grad(g, b);
    if (!need_w && !need_b) return;
    tsl_tid outs[2];
    outs[0] = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dw"), tsl__t(g, w)->shape, TSL_F32);
    int n_out = 1;
    if (b != TSL_NONE)
        outs[n_out++] =
            tsl__graph_new_tensor(g, tsl__name(nb, op->name, "db"), tsl__t(g, b)->shape, TSL_F32);
    if (outs[0] == TSL_NONE || outs[n_out - 1] == TSL_NONE) return;
    tsl_tid in[2] = {dy, x};
    if (tsl__graph_add_op(g, TSL_OP_CONV2D_BWD_FILTER, tsl__name(nb, op->name, "bwd_filter"), in, 2,
                          outs, n_out, a, sizeof *a, 0) < 0)
        return;
    if (need_w) ig[1] = outs[0];
    if (need_b) ig[2] = outs[1];
}

/* CONV2D_TRANSPOSE (x, w[, b]) -> y. dx = CONV2D(dy, w) (same attr),
 * dw = CONV2D_BWD_FILTER(x, dy) (roles swapped: y-space is the conv's input),
 * db = RESHAPE(REDUCE_SUM_TO(dy, (Cout,1,1)), (Cout)). Only what
 * tsl__graph_needs_grad asks for is built. */
static void conv_transpose_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og,
                                    tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (!usable_dy(g, op, dy)) return;
    tsl_tid x = op->in[0], w = op->in[1], b = op->n_in == 3 ? op->in[2] : TSL_NONE;
    char nb[TSL_NAME_MAX];
    const tsl_conv_attr *a = &op->attr.conv;
    if (tsl__graph_needs_grad(g, x)) {
        tsl_tid dx = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dx"), tsl__t(g, x)->shape,
                                           TSL_F32);
        tsl_tid in[2] = {dy, w};
        if (dx != TSL_NONE &&
            tsl__graph_add_op(g, TSL_OP_CONV2D, tsl__name(nb, op->name, "bwd_data"), in, 2, &dx, 1,
                              a, sizeof *a, 0) >= 0)
            ig[0] = dx;
    }
    if (tsl__graph_needs_grad(g, w)) {
        tsl_tid dw = tsl__graph_new_tensor(g, tsl__name(nb, op->name, "dw"), tsl__t(g, w)->shape,
                                           TSL_F32);
        tsl_tid in[2] = {x, dy};
        if (dw != TSL_NONE &&
            tsl__graph_add_op(g, TSL_OP_CONV2D_BWD_FILTER, tsl__name(nb, op->name, "bwd_filter"),
                              in, 2, &dw, 1, a, sizeof *a, 0) >= 0)
            ig[1] = dw;
    }
    if (b != TSL_NONE && tsl__graph_needs_grad(g, b)) {
        int64_t cout = tsl__t(g, b)->shape.d[0];
        tsl_tid s = tsl_reduce_sum_to(g, tsl__name(nb, op->name, "db_sum"), dy,
                                      TSL_SHAPE(cout, 1, 1));
        tsl_tid db = tsl_reshape(g, tsl__name(nb, op->name, "db"), s, TSL_SHAPE(cout));
        if (db != TSL_NONE) ig[2] = db;
    }
}

/* ---- registration -------------------------------------------------------------- */

void tsl__ops_register_conv(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_CONV2D] = (tsl_op_def){"conv2d", conv_flops, NULL, conv_backward};
    defs[TSL_OP_CONV2D_BWD_DATA] = (tsl_op_def){"conv2d_bwd_data", conv_bwd_data_flops, NULL, NULL};
    defs[TSL_OP_CONV2D_BWD_FILTER] =
        (tsl_op_def){"conv2d_bwd_filter", conv_bwd_filter_flops, NULL, NULL};
    defs[TSL_OP_CONV2D_TRANSPOSE] =
        (tsl_op_def){"conv2d_transpose", conv_transpose_flops, NULL, conv_transpose_backward};
}
