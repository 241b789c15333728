/*
 * ops_dense.c - the dense family: LINEAR (y = x w^T + b) and MATMUL
 * (c = op(a) op(b)): builders with shape checks, FLOP counts and backward
 * construction.
 *
 * Backward of LINEAR (x:(N,K), w:(M,K), b:(M), dy:(N,M)):
 *   dx = MATMUL(dy, w)            (N,M)x(M,K) -> (N,K)
 *   dw = MATMUL(dy^T, x)          (M,N)x(N,K) -> (M,K)   (trans_a)
 *   db = REDUCE_SUM_TO(dy, (M))
 * Backward of MATMUL (c = op(a) op(b), dc:(M,N)) is again MATMUL with the
 * transposes chosen so that no explicit transpose is ever materialised.
 */
#include "ops/op_def.h"

/* 1 if tensor t holds floating-point data (not class labels). */
static int is_float(const tsl_graph *g, tsl_tid t) {
    tsl_dtype dt = tsl__t(g, t)->dtype;
    return dt == TSL_F32 || dt == TSL_F64;
}

/* ---- LINEAR ------------------------------------------------------------- */

/* y = x w^T (+ b). x must be (N,K), w (M,K), b (M) or TSL_NONE for no bias.
 * Returns y (N,M) named `name`, or TSL_NONE after recording a builder error
 * that names the op, the tensor and the value at fault. */
tsl_tid tsl_linear(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w, tsl_tid b) {
    tsl_tid ids[2] = {x, w};
    if (tsl__graph_bad(g, ids, 2)) return TSL_NONE;
    if (b != TSL_NONE && tsl__graph_bad(g, &b, 1)) return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x), *wt = tsl__t(g, w);
    char s1[128], s2[128];
    if (xt->shape.ndim != 2 || !is_float(g, x))
        return tsl__graph_fail(g, "linear '%s': input '%s' must be a 2-D (N,K) float tensor, has shape %s dtype %s",
                               name, xt->name, tsl_shape_str(&xt->shape, s1, sizeof s1),
                               tsl_dtype_name(xt->dtype));
    if (wt->shape.ndim != 2 || !is_float(g, w))
        return tsl__graph_fail(g, "linear '%s': weight '%s' must be a 2-D (M,K) float tensor, has shape %s dtype %s",
                               name, wt->name, tsl_shape_str(&wt->shape, s1, sizeof s1),
                               tsl_dtype_name(wt->dtype));
    if (wt->shape.d[1] != xt->shape.d[1])
        return tsl__graph_fail(g, "linear '%s': weight '%s' shape %s has K = %lld but input '%s' shape %s has K = %lld",
                               name, wt->name, tsl_shape_str(&wt->shape, s1, sizeof s1),
                               (long long)wt->shape.d[1], xt->name,
                               tsl_shape_str(&xt->shape, s2, sizeof s2), (long long)xt->shape.d[1]);
    int64_t n = xt->shape.d[0], m = wt->shape.d[0];
    if (b != TSL_NONE) {
        const tsl_tensor *bt = tsl__t(g, b);
        if (bt->shape.ndim != 1 || bt->shape.d[0] != m || !is_float(g, b))
            return tsl__graph_fail(g, "linear '%s': bias '%s' must be a float (%lld) tensor, has shape %s dtype %s",
                                   name, bt->name, (long long)m,
                                   tsl_shape_str(&bt->shape, s1, sizeof s1), tsl_dtype_name(bt->dtype));
    }
    tsl_tid y = tsl__graph_new_tensor(g, name, TSL_SHAPE(n, m), TSL_F32); // (N,M)
    if (y == TSL_NONE) return TSL_NONE;
    tsl_tid in[3] = {x, w, b};
    if (tsl__graph_add_op(g, TSL_OP_LINEAR, name, in, b != TSL_NONE ? 3 : 2, &y, 1, NULL, 0, 0) < 0)
        return TSL_NONE;
    return y;
}

/* A linear layer as in PyTorch's nn.Linear: creates name.weight (out,K) and,
 * when bias != 0, name.bias (out), both UNIFORM_FANIN, then y = linear(x).
 * x must be (N,K); out > 0. Returns TSL_NONE on a builder error. */
tsl_tid tsl_linear_layer(tsl_graph *g, const char *name, tsl_tid x, int64_t out, int bias) {
    if (tsl__graph_bad(g, &x, 1)) return TSL_NONE;
    const tsl_tensor *xt = tsl__t(g, x);
    char sb[128], nb[TSL_NAME_MAX];
    if (xt->shape.ndim != 2)
        return tsl__graph_fail(g, "linear layer '%s': input '%s' must be 2-D (N,K), has shape %s",
                               name, xt->name, tsl_shape_str(&xt->shape, sb, sizeof sb));
    if (out <= 0)
        return tsl__graph_fail(g, "linear layer '%s': out features = %lld (must be > 0)", name,
                               (long long)out);
    int64_t k = xt->shape.d[1];
    tsl_tid w = tsl_param(g, tsl__name(nb, name, "weight"), TSL_SHAPE(out, k), TSL_INIT_UNIFORM_FANIN);
    tsl_tid b = TSL_NONE;
    if (bias) {
        b = tsl_param(g, tsl__name(nb, name, "bias"), TSL_SHAPE(out), TSL_INIT_UNIFORM_FANIN);
        if (b == TSL_NONE) return TSL_NONE;
    }
    if (w == TSL_NONE) return TSL_NONE;
    return tsl_linear(g, name, x, w, b);
}

/* 2*N*M*K multiply-adds, plus N*M for the bias. */
static double linear_flops(const tsl_graph *g, const tsl_op *op) {
    const tsl_tensor *x = tsl__t(g, op->in[0]), *w = tsl__t(g, op->in[1]);
    double n = (double)x->shape.d[0], k = (double)x->shape.d[1], m = (double)w->shape.d[0];
    return 2.0 * n * m * k + (op->n_in == 3 ? n * m : 0.0);
}

/* dx = dy w; dw = dy^T x; db = sum of dy over N. Only the gradients autodiff
 * wants are built; a LINEAR output cannot be the loss directly. */
static void linear_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                            tsl_tid *in_grads) {
    tsl_tid dy = out_grads[0];
    if (dy == TSL_NONE) return;
    if (dy == TSL_GRAD_ONE) {
        tsl__graph_fail(g, "linear '%s': its output cannot be the loss (use softmax_xent)", op->name);
        return;
    }
    char nb[TSL_NAME_MAX];
    tsl_tid x = op->in[0], w = op->in[1];
    if (tsl__graph_needs_grad(g, x)) {
        tsl_matmul_attr a = {0, 0};
        in_grads[0] = tsl_matmul(g, tsl__name(nb, op->name, "dx"), dy, w, a); // (N,K)
    }
    if (tsl__graph_needs_grad(g, w)) {
        tsl_matmul_attr a = {1, 0};
        in_grads[1] = tsl_matmul(g, tsl__name(nb, op->name, "dw"), dy, x, a); // (M,K)
    }
    if (op->n_in == 3 && tsl__graph_needs_grad(g, op->in[2])) {
        in_grads[2] = tsl_reduce_sum_to(g, tsl__name(nb, op->name, "db"), dy,
                                        tsl__t(g, op->in[2])->shape); // (M)
    }
}

/* ---- MATMUL ------------------------------------------------------------- */

/* Rows and columns of op(t) for a 2-D tensor t. */
static void op_dims(const tsl_tensor *t, int trans, int64_t *rows, int64_t *cols) {
    *rows = trans ? t->shape.d[1] : t->shape.d[0];
    *cols = trans ? t->shape.d[0] : t->shape.d[1];
}

/* c = op(a) op(b), op(t) = t^T when the trans flag is 1. a and b must be 2-D
 * float tensors with op(a) (M,K) and op(b) (K,N); the flags must be 0 or 1.
 * Returns c (M,N) named `name`, or TSL_NONE after a builder error. */
tsl_tid tsl_matmul(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b, tsl_matmul_attr at) {
    tsl_tid ids[2] = {a, b};
    if (tsl__graph_bad(g, ids, 2)) return TSL_NONE;
    const tsl_tensor *t[2] = {tsl__t(g, a), tsl__t(g, b)};
    char s1[128], s2[128];
    if ((at.trans_a != 0 && at.trans_a != 1) || (at.trans_b != 0 && at.trans_b != 1))
        return tsl__graph_fail(g, "matmul '%s': trans_a = %d, trans_b = %d (each must be 0 or 1)",
                               name, at.trans_a, at.trans_b);
    for (int i = 0; i < 2; i++)
        if (t[i]->shape.ndim != 2 || !is_float(g, ids[i]))
            return tsl__graph_fail(g, "matmul '%s': operand %c '%s' must be a 2-D float tensor, has shape %s dtype %s",
                                   name, i ? 'b' : 'a', t[i]->name,
                                   tsl_shape_str(&t[i]->shape, s1, sizeof s1),
                                   tsl_dtype_name(t[i]->dtype));
    int64_t m, ka, kb, n;
    op_dims(t[0], at.trans_a, &m, &ka);
    op_dims(t[1], at.trans_b, &kb, &n);
    if (ka != kb)
        return tsl__graph_fail(g, "matmul '%s': inner dimensions differ: op(a) of '%s' %s (trans_a %d) has K = %lld, "
                               "op(b) of '%s' %s (trans_b %d) has K = %lld",
                               name, t[0]->name, tsl_shape_str(&t[0]->shape, s1, sizeof s1), at.trans_a,
                               (long long)ka, t[1]->name, tsl_shape_str(&t[1]->shape, s2, sizeof s2),
                               at.trans_b, (long long)kb);
    tsl_tid c = tsl__graph_new_tensor(g, name, TSL_SHAPE(m, n), TSL_F32); // (M,N)
    if (c == TSL_NONE) return TSL_NONE;
    if (tsl__graph_add_op(g, TSL_OP_MATMUL, name, ids, 2, &c, 1, &at, sizeof at, 0) < 0)
        return TSL_NONE;
    return c;
}

/* 2*M*N*K. */
static double matmul_flops(const tsl_graph *g, const tsl_op *op) {
    int64_t m, k, kb, n;
    op_dims(tsl__t(g, op->in[0]), op->attr.matmul.trans_a, &m, &k);
    op_dims(tsl__t(g, op->in[1]), op->attr.matmul.trans_b, &kb, &n);
    return 2.0 * (double)m * (double)n * (double)k;
}

/* c = op(a) op(b), dc (M,N):
 *   a not transposed: da (M,K) = dc op(b)^T  = MATMUL(dc, b, 0, !tb)
 *   a transposed:     da (K,M) = op(b) dc^T  = MATMUL(b, dc, tb, 1)
 *   b not transposed: db (K,N) = op(a)^T dc  = MATMUL(a, dc, !ta, 0)
 *   b transposed:     db (N,K) = dc^T op(a)  = MATMUL(dc, a, 1, ta)       */
static void matmul_backward(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                            tsl_tid *in_grads) {
    tsl_tid dc = out_grads[0];
    if (dc == TSL_NONE) return;
    if (dc == TSL_GRAD_ONE) {
        tsl__graph_fail(g, "matmul '%s': its output cannot be the loss (use softmax_xent)", op->name);
        return;
    }
    char nb[TSL_NAME_MAX];
    tsl_tid a = op->in[0], b = op->in[1];
    int ta = op->attr.matmul.trans_a, tb = op->attr.matmul.trans_b;
    if (tsl__graph_needs_grad(g, a)) {
        tsl_matmul_attr at = {ta ? tb : 0, ta ? 1 : !tb};
        in_grads[0] = ta ? tsl_matmul(g, tsl__name(nb, op->name, "da"), b, dc, at)
                         : tsl_matmul(g, tsl__name(nb, op->name, "da"), dc, b, at);
    }
    if (tsl__graph_needs_grad(g, b)) {
        tsl_matmul_attr at = {tb ? 1 : !ta, tb ? ta : 0};
        in_grads[1] = tb ? tsl_matmul(g, tsl__name(nb, op->name, "db"), dc, a, at)
                         : tsl_matmul(g, tsl__name(nb, op->name, "db"), a, dc, at);
    }
}

void tsl__ops_register_dense(tsl_op_def defs[TSL_OP_COUNT]) {
    defs[TSL_OP_LINEAR] = (tsl_op_def){"linear", linear_flops, NULL, linear_backward};
    defs[TSL_OP_MATMUL] = (tsl_op_def){"matmul", matmul_flops, NULL, matmul_backward};
}
