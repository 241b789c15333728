/*
 * ops_eltwise.c - the elementwise op family: ADD (with numpy-style
 * broadcast of b into a's shape), MUL, RELU, RELU_BWD, REDUCE_SUM_TO and
 * DROPOUT. Builders (shape inference and validation), costs and backward
 * construction; the kernels live in src/backend/cpu/ref_eltwise.c.
 *
 * Naming: a builder's op and its first output carry the name given; extra
 * outputs are "<name>.<what>" (dropout's "<name>.mask"). Gradient tensors
 * built by a backward builder are "<forward op name>.da", ".db", ".dx".
 */
#include <stdio.h>

#include "core/assert.h"
#include "ops/op_def.h"

/* ---- shared checks ---------------------------------------------------------- */

/* Fails the graph unless tensor `id` (called `role` in op `what` named
 * `name`) is a float tensor. Returns 1 if it is. */
static int check_float(tsl_graph *g, const char *what, const char *name, const char *role,
                       tsl_tid id) {
    const tsl_tensor *t = tsl__t(g, id);
    if (t->dtype == TSL_F32) return 1;
    tsl__graph_fail(g, "%s '%s': input %s '%s' has dtype %s, expected f32", what, name, role,
                    t->name, tsl_dtype_name(t->dtype));
    return 0;
}

/* 1 if shape `b` broadcasts to shape `a` by numpy rules restricted to one
 * side: b has at most a's rank, and each of b's dims, aligned right, is 1 or
 * equal to a's. Else 0, with *bad_dim set to the offending dim of b (-1 when
 * the rank is too large). */
static int broadcasts_to(const tsl_shape *b, const tsl_shape *a, int *bad_dim) {
    *bad_dim = -1;
    if (b->ndim > a->ndim) return 0;
    int off = a->ndim - b->ndim;
    for (int i = 0; i < b->ndim; i++)
        if (b->d[i] != 1 && b->d[i] != a->d[off + i]) {
            *bad_dim = i;
            return 0;
        }
    return 1;
}

/* Backward builders of this family cannot take the loss's constant
 * gradient (there is no op making a tensor of ones): fails the graph and
 * returns 1 if out_grads[0] is TSL_GRAD_ONE. */
static int refuse_grad_one(tsl_graph *g, const tsl_op *op, tsl_tid dy) {
    if (dy != TSL_GRAD_ONE) return 0;
    tsl__graph_fail(g, "op '%s' (%s) produced the loss; only a loss op (softmax_xent) can "
                    "be the output tsl_graph_backward starts from", op->name,
                    tsl_op_type_name(op->type));
    return 1;
}

/* ---- builders --------------------------------------------------------------- */

/* c = a + b with b broadcast to a's shape; c has a's shape. */
tsl_tid tsl_add(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b) {
    tsl_tid in[2] = {a, b};
    if (tsl__graph_bad(g, in, 2)) return TSL_NONE;
    if (!check_float(g, "add", name, "a", a) || !check_float(g, "add", name, "b", b))
        return TSL_NONE;
    const tsl_tensor *ta = tsl__t(g, a), *tb = tsl__t(g, b);
    int bad;
    if (!broadcasts_to(&tb->shape, &ta->shape, &bad)) {
        char sa[128], sb[128];
        tsl_shape_str(&ta->shape, sa, sizeof sa);
        tsl_shape_str(&tb->shape, sb, sizeof sb);
        if (bad < 0)
            return tsl__graph_fail(g, "add '%s': b '%s' %s has rank %d > rank %d of a '%s' %s",
                                   name, tb->name, sb, tb->shape.ndim, ta->shape.ndim, ta->name,
                                   sa);
        return tsl__graph_fail(g,
                               "add '%s': b '%s' %s does not broadcast to a '%s' %s: dim %d of b "
                               "is %lld, expected 1 or %lld",
                               name, tb->name, sb, ta->name, sa, bad, (long long)tb->shape.d[bad],
                               (long long)ta->shape.d[ta->shape.ndim - tb->shape.ndim + bad]);
    }
    tsl_tid c = tsl__graph_new_tensor(g, name, ta->shape, TSL_F32);
    if (c == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_ADD, name, in, 2, &c, 1, NULL, 0, 0) < 0) return TSL_NONE;
    return c;
}

/* c = a * b, same shapes. */
tsl_tid tsl_mul(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b) {
    tsl_tid in[2] = {a, b};
    if (tsl__graph_bad(g, in, 2)) return TSL_NONE;
    if (!check_float(g, "mul", name, "a", a) || !check_float(g, "mul", name, "b", b))
        return TSL_NONE;
    const tsl_tensor *ta = tsl__t(g, a), *tb = tsl__t(g, b);
    if (!tsl_shape_eq(&ta->shape, &tb->shape)) {
        char sa[128], sb[128];
        return tsl__graph_fail(g, "mul '%s': shapes differ: a '%s' %s, b '%s' %s (mul does not "
                               "broadcast)", name, ta->name,
                               tsl_shape_str(&ta->shape, sa, sizeof sa), tb->name,
                               tsl_shape_str(&tb->shape, sb, sizeof sb));
    }
    tsl_tid c = tsl__graph_new_tensor(g, name, ta->shape, TSL_F32);
    if (c == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_MUL, name, in, 2, &c, 1, NULL, 0, 0) < 0) return TSL_NONE;
    return c;
}

/* y = max(x, 0). */
tsl_tid tsl_relu(tsl_graph *g, const char *name, tsl_tid x) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_float(g, "relu", name, "x", x)) return TSL_NONE;
    tsl_tid y = tsl__graph_new_tensor(g, name, tsl__t(g, x)->shape, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_RELU, name, &x, 1, &y, 1, NULL, 0, 0) < 0) return TSL_NONE;
    return y;
}

/* dx = dy where y > 0 else 0 (backward only; no public builder). */
static tsl_tid relu_bwd(tsl_graph *g, const char *name, tsl_tid dy, tsl_tid y) {
    tsl_tid in[2] = {dy, y};
    if (tsl__graph_bad(g, in, 2)) return TSL_NONE;
    tsl_tid dx = tsl__graph_new_tensor(g, name, tsl__t(g, y)->shape, TSL_F32);
    if (dx == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_RELU_BWD, name, in, 2, &dx, 1, NULL, 0, 0) < 0)
        return TSL_NONE;
    return dx;
}

/* (y, mask) = dropout(x); returns y. The mask ("<name>.mask") gets no
 * gradient. p must lie in [0,1). */
tsl_tid tsl_dropout(tsl_graph *g, const char *name, tsl_tid x, tsl_dropout_attr a) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_float(g, "dropout", name, "x", x)) return TSL_NONE;
    if (!(a.p >= 0.0f && a.p < 1.0f))
        return tsl__graph_fail(g, "dropout '%s': p = %g outside [0,1)", name, (double)a.p);
    char nb[TSL_NAME_MAX];
    tsl_shape s = tsl__t(g, x)->shape;
    tsl_tid out[2];
    out[0] = tsl__graph_new_tensor(g, name, s, TSL_F32);
    out[1] = tsl__graph_new_tensor(g, tsl__name(nb, name, "mask"), s, TSL_F32);
    if (out[0] == TSL_NONE || out[1] == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_DROPOUT, name, &x, 1, out, 2, &a, sizeof a, 1u << 1) < 0)
        return TSL_NONE;
    return out[0];
}

/* y = x summed down to shape s (s must broadcast to x's shape; s may be a
 * scalar, ndim 0). */
tsl_tid tsl_reduce_sum_to(tsl_graph *g, const char *name, tsl_tid x, tsl_shape s) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    if (!check_float(g, "reduce_sum_to", name, "x", x)) return TSL_NONE;
    const tsl_tensor *tx = tsl__t(g, x);
    if (s.ndim < 0 || s.ndim > TSL_MAX_DIMS)
        return tsl__graph_fail(g, "reduce_sum_to '%s': target rank %d outside 0..%d", name,
                               s.ndim, TSL_MAX_DIMS);
    int bad;
    if (!broadcasts_to(&s, &tx->shape, &bad)) {
        char sx[128], ss[128];
        tsl_shape_str(&tx->shape, sx, sizeof sx);
        tsl_shape_str(&s, ss, sizeof ss);
        if (bad < 0)
            return tsl__graph_fail(g, "reduce_sum_to '%s': target %s has rank %d > rank %d of x "
                                   "'%s' %s", name, ss, s.ndim, tx->shape.ndim, tx->name, sx);
        return tsl__graph_fail(g, "reduce_sum_to '%s': target %s does not broadcast to x '%s' "
                               "%s: dim %d is %lld, expected 1 or %lld", name, ss, tx->name, sx,
                               bad, (long long)s.d[bad],
                               (long long)tx->shape.d[tx->shape.ndim - s.ndim + bad]);
    }
    tsl_tid y = tsl__graph_new_tensor(g, name, s, TSL_F32);
    if (y == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_REDUCE_SUM_TO, name, &x, 1, &y, 1, NULL, 0, 0) < 0)
        return TSL_NONE;
    return y;
}

/* ---- backward builders -------------------------------------------------------- */

/* ADD: da = dc (the same tensor, no copy); db = dc when b has a's shape,
 * else REDUCE_SUM_TO(dc, b's shape). */
static void add_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dc = og[0];
    if (dc == TSL_NONE || refuse_grad_one(g, op, dc)) return;
    if (tsl__graph_needs_grad(g, op->in[0])) ig[0] = dc;
    if (tsl__graph_needs_grad(g, op->in[1])) {
        const tsl_tensor *ta = tsl__t(g, op->in[0]), *tb = tsl__t(g, op->in[1]);
        if (tsl_shape_eq(&ta->shape, &tb->shape)) {
            ig[1] = dc;
        } else {
            char nb[TSL_NAME_MAX];
            tsl_shape sb = tb->shape;
            ig[1] = tsl_reduce_sum_to(g, tsl__name(nb, op->name, "db"), dc, sb);
        }
    }
}

/* MUL: da = dc * b, db = dc * a. */
static void mul_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dc = og[0];
    if (dc == TSL_NONE || refuse_grad_one(g, op, dc)) return;
    char nb[TSL_NAME_MAX];
    if (tsl__graph_needs_grad(g, op->in[0]))
        ig[0] = tsl_mul(g, tsl__name(nb, op->name, "da"), dc, op->in[1]);
    if (tsl__graph_needs_grad(g, op->in[1]))
        ig[1] = tsl_mul(g, tsl__name(nb, op->name, "db"), dc, op->in[0]);
}

/* RELU: dx = RELU_BWD(dy, y); reads the forward output, not x. */
static void relu_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (dy == TSL_NONE || refuse_grad_one(g, op, dy)) return;
    char nb[TSL_NAME_MAX];
    if (tsl__graph_needs_grad(g, op->in[0]))
        ig[0] = relu_bwd(g, tsl__name(nb, op->name, "dx"), dy, op->out[0]);
}

/* DROPOUT: dx = dy * mask (the mask already holds 0 or 1/(1-p)). */
static void dropout_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *og, tsl_tid *ig) {
    tsl_tid dy = og[0];
    if (dy == TSL_NONE || refuse_grad_one(g, op, dy)) return;
    char nb[TSL_NAME_MAX];
    if (tsl__graph_needs_grad(g, op->in[0]))
        ig[0] = tsl_mul(g, tsl__name(nb, op->name, "dx"), dy, op->out[1]);
}

/* REDUCE_SUM_TO has no backward: its gradient is a broadcast of dy back to
 * x's shape, which needs a tensor of x's shape to add to (no op creates
 * one). It only appears inside backward graphs (ADD's and LINEAR's db), which
 * are never differentiated again. */

/* ---- costs and registration ---------------------------------------------------- */

/* One operation per output element. */
static double flops_per_out(const tsl_graph *g, const tsl_op *op) {
    return tsl__numel(g, op->out[0]);
}

/* One addition per input element. */
static double flops_per_in(const tsl_graph *g, const tsl_op *op) {
    return tsl__numel(g, op->in[0]);
}

void tsl__ops_register_eltwise(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_ADD] = (tsl_op_def){"add", flops_per_out, NULL, add_backward};
    defs[TSL_OP_MUL] = (tsl_op_def){"mul", flops_per_out, NULL, mul_backward};
    defs[TSL_OP_RELU] = (tsl_op_def){"relu", flops_per_out, NULL, relu_backward};
    defs[TSL_OP_RELU_BWD] = (tsl_op_def){"relu_bwd", flops_per_out, NULL, NULL};
    defs[TSL_OP_REDUCE_SUM_TO] = (tsl_op_def){"reduce_sum_to", flops_per_in, NULL, NULL};
    defs[TSL_OP_DROPOUT] = (tsl_op_def){"dropout", flops_per_out, NULL, dropout_backward};
}
