/*
 * ops_shape.c - the shape op family: CONCAT and SLICE along axis 1
 * (channels), RESHAPE (and tsl_flatten, a RESHAPE to (N, rest)). Builders,
 * costs and backward construction; kernels in src/backend/cpu/ref_shape.c.
 *
 * Naming: the op and its output carry the name given; gradient tensors are
 * "<forward op name>.dx" (CONCAT: ".dx0", ".dx1", ... per input).
 */
#include <stdio.h>

#include "core/assert.h"
#include "ops/op_def.h"

#define CONCAT_MAX_INPUTS 256

/* Fails the graph unless `id` is an f32 tensor of rank >= min_rank (role
 * names the input in the message). Returns 1 if it is. */
static int check_input(tsl_graph *g, const char *what, const char *name, const char *role,
                       tsl_tid id, int min_rank) {
    const tsl_tensor *t = tsl__t(g, id);
    if (t->dtype != TSL_F32) {
        tsl__graph_fail(g, "%s '%s': input %s '%s' has dtype %s, expected f32", what, name, role,
                        t->name, tsl_dtype_name(t->dtype));
        return 0;
    }
    if (t->shape.ndim < min_rank) {
        char sb[128];
        tsl__graph_fail(g, "%s '%s': input %s '%s' has shape %s, rank %d < %d", what, name,
                        role, t->name, tsl_shape_str(&t->shape, sb, sizeof sb), t->shape.ndim,
                        min_rank);
        return 0;
    }
    return 1;
}

/* ---- builders --------------------------------------------------------------- */

/* y = concatenation of xs[0..n) along axis 1; every other dim must agree.
 * 1 <= n <= 256. */
tsl_tid tsl_concat(tsl_graph *g, const char *name, const tsl_tid *xs, int n) {
    if (n < 1 || n > CONCAT_MAX_INPUTS || !xs)
        return tsl__graph_fail(g, "concat '%s': %d inputs%s, expected 1..%d", name, n,
                               xs ? "" : " (xs is NULL)", CONCAT_MAX_INPUTS);
    if (tsl__graph_bad(g, xs, n)) return TSL_NONE;
    char role[32];
    for (int i = 0; i < n; i++) {
        snprintf(role, sizeof role, "xs[%d]", i);
        if (!check_input(g, "concat", name, role, xs[i], 2)) return TSL_NONE;
    }
    tsl_shape s = tsl__t(g, xs[0])->shape;
    int64_t c = s.d[1];
    for (int i = 1; i < n; i++) {
        const tsl_tensor *t = tsl__t(g, xs[i]);
        int ok = t->shape.ndim == s.ndim;
        for (int k = 0; ok && k < s.ndim; k++) ok = k == 1 || t->shape.d[k] == s.d[k];
        if (!ok) {
            char s0[128], si[128];
            return tsl__graph_fail(g, "concat '%s': xs[%d] '%s' %s does not match xs[0] '%s' %s "
                                   "outside axis 1", name, i, t->name,
                                   tsl_shape_str(&t->shape, si, sizeof si),
                                   tsl__t(g, xs[0])->name, tsl_shape_str(&s, s0, sizeof s0));
        }
        c += t->shape.d[1];
    }
    s.d[1] = c;
    tsl_tid y = tsl__graph_new_tensor(g, name, s, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_CONCAT, name, xs, n, &y, 1, NULL, 0, 0) < 0) return TSL_NONE;
    return y;
}

/* y = x[:, offset:offset+count, ...]. */
tsl_tid tsl_slice(tsl_graph *g, const char *name, tsl_tid x, tsl_slice_attr a) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_input(g, "slice", name, "x", x, 2)) return TSL_NONE;
    tsl_shape s = tsl__t(g, x)->shape;
    if (a.offset < 0 || a.count < 1 || a.offset > s.d[1] - a.count) {
        char sb[128];
        return tsl__graph_fail(g, "slice '%s': offset %lld, count %lld outside axis 1 of x '%s' "
                               "%s (need offset >= 0, count >= 1, offset+count <= %lld)", name,
                               (long long)a.offset, (long long)a.count, tsl__t(g, x)->name,
                               tsl_shape_str(&s, sb, sizeof sb), (long long)s.d[1]);
    }
    s.d[1] = a.count;
    tsl_tid y = tsl__graph_new_tensor(g, name, s, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_SLICE, name, &x, 1, &y, 1, &a, sizeof a, 0) < 0)
        return TSL_NONE;
    return y;
}

/* y = x with shape s (same number of elements), copied. */
tsl_tid tsl_reshape(tsl_graph *g, const char *name, tsl_tid x, tsl_shape s) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_input(g, "reshape", name, "x", x, 0)) return TSL_NONE;
    const tsl_tensor *tx = tsl__t(g, x);
    if (s.ndim < 0 || s.ndim > TSL_MAX_DIMS)
        return tsl__graph_fail(g, "reshape '%s': target rank %d outside 0..%d", name, s.ndim,
                               TSL_MAX_DIMS);
    char ss[128], sx[128];
    for (int i = 0; i < s.ndim; i++)
        if (s.d[i] <= 0)
            return tsl__graph_fail(g, "reshape '%s': target %s has dimension %d = %lld (must be "
                                   "> 0)", name, tsl_shape_str(&s, ss, sizeof ss), i,
                                   (long long)s.d[i]);
    int64_t target_numel;
    if (!tsl_shape_numel_checked(&s, &target_numel))
        return tsl__graph_fail(g, "reshape '%s': target %s has more than %lld elements", name,
                               tsl_shape_str(&s, ss, sizeof ss), (long long)INT64_MAX);
    if (target_numel != tsl_shape_numel(&tx->shape))
        return tsl__graph_fail(g, "reshape '%s': target %s has %lld elements, x '%s' %s has %lld",
                               name, tsl_shape_str(&s, ss, sizeof ss),
                               (long long)target_numel, tx->name,
                               tsl_shape_str(&tx->shape, sx, sizeof sx),
                               (long long)tsl_shape_numel(&tx->shape));
    tsl_tid y = tsl__graph_new_tensor(g, name, s, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_RESHAPE, name, &x, 1, &y, 1, NULL, 0, 0) < 0)
        return TSL_NONE;
    return y;
}

/* (N, d1, d2, ...) -> (N, d1*d2*...): a RESHAPE. x needs rank >= 1. */
tsl_tid tsl_flatten(tsl_graph *g, const char *name, tsl_tid x) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_input(g, "flatten", name, "x", x, 1)) return TSL_NONE;
    tsl_shape s = tsl__t(g, x)->shape;
    int64_t n = s.d[0];
    int64_t rest = tsl_shape_numel(&s) / n;
    return tsl_reshape(g, name, x, TSL_SHAPE(n, rest));
}

/* ---- backward builders -------------------------------------------------------- */

static int refuse_grad_one(tsl_graph *g, const tsl_op *op, tsl_tid dy) {
    if (dy != TSL_GRAD_ONE) return 0;
    tsl__graph_fail(g, "op '%s' (%s) produced the loss; only a loss op (softmax_xent) can "
                    "be the output tsl_graph_backward starts from", op->name,
                    tsl_op_type_name(op->type));
    return 1;
}

/* CONCAT: dx_i = SLICE(dy, offset_i, C_i) for each input that needs it. */
static void concat_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (dy == TSL_NONE || refuse_grad_one(g, op, dy)) return;
    int64_t off = 0;
    for (int i = 0; i < op->n_in && tsl_graph_status(g) == TSL_OK; i++) {
        int64_t c = tsl__t(g, op->in[i])->shape.d[1];
        if (tsl__graph_needs_grad(g, op->in[i])) {
            char suf[16], nb[TSL_NAME_MAX];
            snprintf(suf, sizeof suf, "dx%d", i);
            ig[i] = tsl_slice(g, tsl__name(nb, op->name, suf), dy,
                              (tsl_slice_attr){.offset = off, .count = c});
        }
        off += c;
    }
}

/* RESHAPE: dx = RESHAPE(dy, x's shape). */
static void reshape_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (dy == TSL_NONE || refuse_grad_one(g, op, dy)) return;
    if (tsl__graph_needs_grad(g, op->in[0])) {
        char nb[TSL_NAME_MAX];
        tsl_shape s = tsl__t(g, op->in[0])->shape;
        ig[0] = tsl_reshape(g, tsl__name(nb, op->name, "dx"), dy, s);
    }
}

/* SLICE has no backward (it would need a zero tensor to place dy in); it
 * only appears in backward graphs (CONCAT's gradient). */

/* Copies: no arithmetic. */
static double flops_zero(const tsl_graph *g, const tsl_op *op) {
    (void)g;
    (void)op;
    return 0.0;
}

void tsl__ops_register_shape(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_CONCAT] = (tsl_op_def){"concat", flops_zero, NULL, concat_backward};
    defs[TSL_OP_SLICE] = (tsl_op_def){"slice", flops_zero, NULL, NULL};
    defs[TSL_OP_RESHAPE] = (tsl_op_def){"reshape", flops_zero, NULL, reshape_backward};
}
