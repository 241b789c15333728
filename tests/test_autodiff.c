/*
 * test_autodiff.c - the core autodiff (src/core/autodiff.c) and the access
 * lists of a whole iteration.
 *
 * Whole small graphs built from tsl_param leaves and a softmax_xent loss are
 * differentiated by tsl_graph_backward and their parameter gradients checked
 * against central finite differences of the loss, all in double: tensors
 * used twice (y = relu(x) + x, x*x, a residual block) get summed gradients.
 * Then the error paths (backward twice, non-scalar loss), the pruning (no
 * gradient op for data inputs, nothing for unused params), PARAM.grad, and
 * the exact access lists, last uses and producers of a graph with SGD.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "helpers.h"

/* ---- whole-graph finite differences ---------------------------------------------- */

typedef struct wg_opts {
    double away;          /* params moved at least this far from 0 (relu kinks) */
    const int32_t *labels;
    tsl_tid label;
    int64_t n_labels;
} wg_opts;

/* g: finalized, with backward built (no optimizer needed). Fills every
 * PARAM with uniform[-1,1] (seeded), sets the labels, runs forward and
 * backward once in double, then compares each PARAM's gradient (up to 48
 * elements of each) with (L(p+h) - L(p-h)) / 2h, h = 1e-6, running the
 * forward ops only. Returns the largest normalised error max|fd-an| /
 * max(max|an|, 1e-6) over all params; prints each param's worst element. */
static double whole_graph_check(const tsl_graph *g, uint64_t seed, const wg_opts *o) {
    th_f64 *r = th_f64_new(g);
    tsl_tid loss = tsl_graph_loss(g);
    cr_assert_neq(loss, TSL_NONE);
    int32_t fwd_end = tsl_graph_producer(g, loss) + 1;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind != TSL_KIND_PARAM) continue;
        double *v = th_f64_buf(r, t);
        int64_t n = tsl_shape_numel(&tt->shape);
        th_fill_f64(v, (size_t)n, seed + (uint64_t)t, -1.0, 1.0);
        for (int64_t i = 0; i < n; i++)
            if (fabs(v[i]) < o->away) v[i] += v[i] < 0 ? -o->away : o->away;
    }
    memcpy(th_f64_buf(r, o->label), o->labels, (size_t)o->n_labels * sizeof(int32_t));
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double worst = 0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind != TSL_KIND_PARAM || tt->grad == TSL_NONE) continue;
        int64_t n = tsl_shape_numel(&tt->shape);
        double *an = malloc((size_t)n * sizeof *an);
        memcpy(an, th_f64_buf(r, tt->grad), (size_t)n * sizeof *an);
        double scale = 1e-6;
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(an[i]));
        double *p = th_f64_buf(r, t), err = 0, wfd = 0;
        int64_t wk = 0, checks = n < 48 ? n : 48;
        for (int64_t c = 0; c < checks; c++) {
            int64_t k = n <= 48 ? c : (int64_t)(((uint64_t)c * 2654435761u + seed) % (uint64_t)n);
            const double h = 1e-6, p0 = p[k];
            p[k] = p0 + h;
            th_f64_run(r, 0, fwd_end, 1, 1);
            double lp = *(double *)th_f64_buf(r, loss);
            p[k] = p0 - h;
            th_f64_run(r, 0, fwd_end, 1, 1);
            double lm = *(double *)th_f64_buf(r, loss);
            p[k] = p0;
            double fd = (lp - lm) / (2 * h), e = fabs(fd - an[k]) / scale;
            if (e > err || e != e) {
                err = e != e ? INFINITY : e;
                wk = k;
                wfd = fd;
            }
        }
        fprintf(stderr, "whole-graph check d/d%-12s err %.3e (worst at %lld: fd %.9g an %.9g)\n",
                tt->name, err, (long long)wk, wfd, an[wk]);
        worst = fmax(worst, err);
        free(an);
    }
    th_f64_free(r);
    return worst;
}

/* ---- summed gradients -------------------------------------------------------------- */

Test(autodiff, relu_plus_x_sums_both_paths) {
    tsl_graph *g = tsl_graph_new("relu_plus_x");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(4, 5), TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(4));
    tsl_tid r = tsl_relu(g, "relu", x);
    tsl_tid y = tsl_add(g, "add", r, x);
    tsl_tid loss = tsl_softmax_xent(g, "loss", y, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    /* x's gradient is the sum ADD(dy through add's b, relu's dx), in that order */
    tsl_tid gx = tsl_graph_tensor(g, x)->grad;
    cr_assert_neq(gx, TSL_NONE);
    int32_t pa = tsl_graph_producer(g, gx);
    const tsl_op *acc = tsl_graph_op(g, pa);
    cr_assert_eq(acc->type, TSL_OP_ADD);
    cr_assert_str_eq(tsl_graph_tensor(g, gx)->name, "x.grad_acc");
    tsl_tid dl = tsl_graph_find(g, "loss.dlogits");
    cr_assert_neq(dl, TSL_NONE);
    cr_assert_eq(acc->in[0], dl, "first summand: add's pass-through gradient (the same tensor)");
    cr_assert_eq(tsl_graph_op(g, tsl_graph_producer(g, acc->in[1]))->type, TSL_OP_RELU_BWD);
    const int32_t labels[4] = {0, 4, 2, 1};
    wg_opts o = {.away = 0.05, .labels = labels, .label = lab, .n_labels = 4};
    double e = whole_graph_check(g, 3, &o);
    cr_assert_lt(e, 1e-6, "relu(x)+x: whole-graph gradient error %g", e);
    tsl_graph_free(g);
}

Test(autodiff, tensor_used_twice_by_one_op) {
    tsl_graph *g = tsl_graph_new("square");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(3, 4), TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(3));
    tsl_tid sq = tsl_mul(g, "sq", x, x);
    tsl_tid twice = tsl_add(g, "twice", sq, sq);
    tsl_tid loss = tsl_softmax_xent(g, "loss", twice, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const int32_t labels[3] = {3, 0, 2};
    wg_opts o = {.labels = labels, .label = lab, .n_labels = 3};
    double e = whole_graph_check(g, 5, &o);
    cr_assert_lt(e, 1e-6, "x*x + x*x: whole-graph gradient error %g", e);
    tsl_graph_free(g);
}

/* A residual block shape with the ops at hand: x feeds a branch
 * relu(dropout(relu(x*w + b))) and the identity; out = relu(branch + x); a
 * concat with x again (x used three times), flattened into logits. */
Test(autodiff, residual_block_gradients) {
    tsl_graph *g = tsl_graph_new("residual");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(2, 3, 2, 2), TSL_INIT_NONE);
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(2, 3, 2, 2), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3, 1, 1), TSL_INIT_NONE);
    tsl_tid unused = tsl_param(g, "unused", TSL_SHAPE(5), TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));
    tsl_tid h = tsl_relu(g, "b1.relu", tsl_add(g, "b1.bias", tsl_mul(g, "b1.mul", x, w), b));
    h = tsl_dropout(g, "b1.drop", h, (tsl_dropout_attr){.p = 0.25f, .seed = 17});
    tsl_tid out = tsl_relu(g, "b1.out", tsl_add(g, "b1.residual", h, x));
    tsl_tid cat_in[2] = {out, x};
    tsl_tid cat = tsl_concat(g, "cat", cat_in, 2);                 // (2,6,2,2)
    tsl_tid logits = tsl_flatten(g, "flat", cat);                   // (2,24)
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    /* every param on the loss path has a gradient of its shape; the unused
     * one has none */
    const tsl_tid ps[3] = {x, w, b};
    for (int i = 0; i < 3; i++) {
        const tsl_tensor *pt = tsl_graph_tensor(g, ps[i]);
        cr_assert_neq(pt->grad, TSL_NONE, "param '%s' has no .grad", pt->name);
        const tsl_tensor *gt = tsl_graph_tensor(g, pt->grad);
        cr_assert(tsl_shape_eq(&gt->shape, &pt->shape), "grad of '%s' has the wrong shape",
                  pt->name);
        cr_assert_eq(gt->kind, TSL_KIND_GRADIENT);
    }
    cr_assert_eq(tsl_graph_tensor(g, unused)->grad, TSL_NONE);
    const int32_t labels[2] = {5, 19};
    wg_opts o = {.labels = labels, .label = lab, .n_labels = 2};
    double e = whole_graph_check(g, 9, &o);
    cr_assert_lt(e, 1e-6, "residual block: whole-graph gradient error %g", e);
    tsl_graph_free(g);
}

/* ---- errors and pruning ---------------------------------------------------------------- */

Test(autodiff, backward_twice_fails) {
    tsl_graph *g = tsl_graph_new("twice");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(2, 3), TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));
    tsl_tid loss = tsl_softmax_xent(g, "loss", x, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    int32_t n = tsl_graph_n_ops(g);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "twice"), "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), n, "the second call must add no op");
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    tsl_graph_free(g);
}

Test(autodiff, non_scalar_loss_fails) {
    tsl_graph *g = tsl_graph_new("nonscalar");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(2, 3), TSL_INIT_NONE);
    tsl_tid y = tsl_relu(g, "act", x);
    cr_assert_eq(tsl_graph_backward(g, y), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "'act'"), "%s", tsl_last_error());
    cr_assert(strstr(tsl_last_error(), "(2,3)"), "%s", tsl_last_error());
    cr_assert(strstr(tsl_last_error(), "scalar"), "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), 1);
    cr_assert_eq(tsl_graph_loss(g), TSL_NONE);
    tsl_graph_free(g);
}

Test(autodiff, data_inputs_get_no_gradient_ops) {
    tsl_graph *g = tsl_graph_new("data");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 6));
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(4));
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(6), TSL_INIT_ZERO);
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(4, 6), TSL_INIT_ZERO);
    tsl_tid d = tsl_dropout(g, "drop", tsl_relu(g, "relu", x), (tsl_dropout_attr){.p = 0.5f});
    tsl_tid cat_in[2] = {d, x};
    tsl_tid c = tsl_concat(g, "cat", cat_in, 2);                          // (4,12)
    tsl_tid s = tsl_slice(g, "sl", c, (tsl_slice_attr){.offset = 3, .count = 6}); // (4,6)
    tsl_tid logits = tsl_mul(g, "mul", tsl_add(g, "add", s, b), w);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, lab);
    int32_t n_fwd = tsl_graph_n_ops(g);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    /* backward: xent_bwd; mul: only dw (a*... is data-derived); add: db
     * reduced; nothing for slice/concat/dropout/relu, which only lead to x */
    const tsl_op_type want[4] = {TSL_OP_SOFTMAX_XENT_BWD, TSL_OP_MUL, TSL_OP_MUL,
                                 TSL_OP_REDUCE_SUM_TO};
    cr_assert_eq(tsl_graph_n_ops(g) - n_fwd, 4, "backward ops: %d", tsl_graph_n_ops(g) - n_fwd);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(tsl_graph_op(g, n_fwd + i)->type, want[i], "backward op %d is %s", i,
                     tsl_op_type_name(tsl_graph_op(g, n_fwd + i)->type));
    /* the two MULs are d(s+b) = dlogits * w (needed for b), then
     * dw = dlogits * (s+b) */
    cr_assert_eq(tsl_graph_tensor(g, w)->grad, tsl_graph_op(g, n_fwd + 2)->out[0]);
    cr_assert_eq(tsl_graph_tensor(g, b)->grad, tsl_graph_op(g, n_fwd + 3)->out[0]);
    cr_assert_eq(tsl_graph_last_use(g, x), tsl_graph_producer(g, c), "x is read by no backward op");
    tsl_graph_free(g);
}

Test(autodiff, data_only_graph_builds_no_backward) {
    tsl_graph *g = tsl_graph_new("frozen");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));
    tsl_tid loss = tsl_softmax_xent(g, "loss", tsl_relu(g, "relu", x), lab);
    int32_t n = tsl_graph_n_ops(g);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), n);
    tsl_graph_free(g);
}

/* ---- access lists -------------------------------------------------------------------- */

typedef struct acc_want {
    const char *name;
    int n;
    tsl_access acc[4];
    int32_t last_use, producer;
} acc_want;

#define U(op) {(op), TSL_TUA}
#define G(op) {(op), TSL_TGA}

/* x (input), lab (label), w, b (params):
 *   op0 mul   h = x*w        op4 loss.dlogits = xent_bwd(probs, lab)
 *   op1 add   z = h + b      op5 relu.dx = relu_bwd(dlogits, r)
 *   op2 relu  r = relu(z)    op6 add.db = reduce_sum_to(relu.dx, (3))   [add.da is relu.dx]
 *   op3 loss  (loss, probs)  op7 mul.db = relu.dx * x                    [no gradient for x]
 *   op8 w.sgd (w, w.momentum) <- (w, mul.db, w.momentum)
 *   op9 b.sgd (b, b.momentum) <- (b, add.db, b.momentum) */
Test(autodiff, access_lists_with_sgd_are_exact) {
    tsl_graph *g = tsl_graph_new("acc");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(2, 3), TSL_INIT_KAIMING_NORMAL);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3), TSL_INIT_ZERO);
    tsl_tid h = tsl_mul(g, "mul", x, w);
    tsl_tid z = tsl_add(g, "add", h, b);
    tsl_tid r = tsl_relu(g, "relu", z);
    tsl_tid loss = tsl_softmax_xent(g, "loss", r, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg opt = tsl_sgd_default(0.1f);
    opt.step = TSL_STEP_AFTER_BACKWARD; /* the lists below: the updates last */
    cr_assert_eq(tsl_graph_optimizer(g, &opt), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), 10);
    const tsl_op_type types[10] = {TSL_OP_MUL, TSL_OP_ADD, TSL_OP_RELU, TSL_OP_SOFTMAX_XENT,
                                   TSL_OP_SOFTMAX_XENT_BWD, TSL_OP_RELU_BWD,
                                   TSL_OP_REDUCE_SUM_TO, TSL_OP_MUL, TSL_OP_SGD_UPDATE,
                                   TSL_OP_SGD_UPDATE};
    for (int i = 0; i < 10; i++)
        cr_assert_eq(tsl_graph_op(g, i)->type, types[i], "op %d is %s", i,
                     tsl_op_type_name(tsl_graph_op(g, i)->type));
    cr_assert_eq(tsl_graph_tensor(g, w)->grad, tsl_graph_find(g, "mul.db"));
    cr_assert_eq(tsl_graph_tensor(g, b)->grad, tsl_graph_find(g, "add.db"));
    (void)x; (void)lab; (void)h; (void)z; (void)r;
    const acc_want want[] = {
        {"x", 3, {G(-1), U(0), U(7)}, 7, -1},
        {"lab", 3, {G(-1), U(3), U(4)}, 4, -1},
        {"w", 3, {U(0), U(8), G(8)}, 8, 8},
        {"b", 3, {U(1), U(9), G(9)}, 9, 9},
        {"mul", 2, {G(0), U(1)}, 1, 0},
        {"add", 2, {G(1), U(2)}, 2, 1},
        {"relu", 3, {G(2), U(3), U(5)}, 5, 2},
        {"loss", 1, {G(3)}, -1, 3},
        {"loss.probs", 2, {G(3), U(4)}, 4, 3},
        {"loss.dlogits", 2, {G(4), U(5)}, 5, 4},
        {"relu.dx", 3, {G(5), U(6), U(7)}, 7, 5},
        {"add.db", 2, {G(6), U(9)}, 9, 6},
        {"mul.db", 2, {G(7), U(8)}, 8, 7},
        {"w.momentum", 2, {U(8), G(8)}, 8, 8},
        {"b.momentum", 2, {U(9), G(9)}, 9, 9},
    };
    const int n_want = (int)(sizeof want / sizeof *want);
    cr_assert_eq(tsl_graph_n_tensors(g), n_want, "tensors: %d", tsl_graph_n_tensors(g));
    for (int i = 0; i < n_want; i++) {
        tsl_tid t = tsl_graph_find(g, want[i].name);
        cr_assert_neq(t, TSL_NONE, "no tensor '%s'", want[i].name);
        int n;
        const tsl_access *a = tsl_graph_accesses(g, t, &n);
        cr_assert_eq(n, want[i].n, "'%s': %d accesses, expected %d", want[i].name, n, want[i].n);
        for (int k = 0; k < n; k++) {
            cr_assert_eq(a[k].op, want[i].acc[k].op, "'%s' access %d: op %d, expected %d",
                         want[i].name, k, a[k].op, want[i].acc[k].op);
            cr_assert_eq(a[k].type, want[i].acc[k].type, "'%s' access %d: %s, expected %s",
                         want[i].name, k, a[k].type == TSL_TGA ? "TGA" : "TUA",
                         want[i].acc[k].type == TSL_TGA ? "TGA" : "TUA");
        }
        cr_assert_eq(tsl_graph_last_use(g, t), want[i].last_use, "'%s': last use %d, expected %d",
                     want[i].name, tsl_graph_last_use(g, t), want[i].last_use);
        cr_assert_eq(tsl_graph_producer(g, t), want[i].producer, "'%s': producer %d, expected %d",
                     want[i].name, tsl_graph_producer(g, t), want[i].producer);
    }
    cr_assert_eq(tsl_graph_tensor(g, tsl_graph_find(g, "w.momentum"))->kind, TSL_KIND_OPT_STATE);
    cr_assert_eq(tsl_graph_tensor(g, tsl_graph_find(g, "relu.dx"))->kind, TSL_KIND_GRADIENT);
    cr_assert_eq(tsl_graph_tensor(g, tsl_graph_find(g, "relu"))->kind, TSL_KIND_ACTIVATION);
    tsl_graph_free(g);
}
