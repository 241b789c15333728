/*
 * test_ops_norm.c - BATCHNORM: gradients against finite differences
 * (double) on (N,C,H,W) and (N,C) inputs, a hand-computed tiny case, the
 * running statistics after one and two steps (PyTorch's formula, unbiased
 * variance), evaluation mode, float against double, determinism across runs
 * and thread counts, and builder validation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "gradcheck.h"
#include "helpers.h"


static tsl_bn_attr bn_attr(void) { return (tsl_bn_attr){1e-5f, 0.1f}; }

/* ---- gradient checks ---------------------------------------------------- */

static double grad_bn(tsl_shape xs, uint64_t seed) {
    tsl_graph *g = tsl_graph_new("bn");
    tsl_tid x = tsl_param(g, "x", xs, TSL_INIT_NONE);
    tsl_tid y = tsl_batchnorm(g, "bn", x, bn_attr());
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    tsl_tid ids[3] = {x, tsl_graph_find(g, "bn.weight"), tsl_graph_find(g, "bn.bias")};
    cr_assert(ids[1] != TSL_NONE && ids[2] != TSL_NONE);
    double e = th_gradcheck(g, 0, 0, ids, 3, seed, NULL, NULL);
    tsl_graph_free(g);
    return e;
}

Test(norm, gradcheck_nchw) {
    double e = grad_bn(TSL_SHAPE(3, 4, 3, 2), 7);
    cr_assert_lt(e, 1e-6, "batchnorm (3,4,3,2): normalised gradient error %g", e);
}

Test(norm, gradcheck_nc) {
    double e = grad_bn(TSL_SHAPE(6, 5), 8);
    cr_assert_lt(e, 1e-6, "batchnorm (6,5): normalised gradient error %g", e);
}

/* ---- hand-computed cases ------------------------------------------------- */

/* x (2,2,1,2): channel 0 holds {1,2,3,4} (mean 2.5, biased var 1.25,
 * unbiased 5/3), channel 1 holds {-1,1,-3,3} (mean 0, var 5, unbiased 20/3). */
static const float tiny_x[8] = {1, 2, -1, 1, 3, 4, -3, 3};
static const double tiny_mean[2] = {2.5, 0.0}, tiny_var[2] = {1.25, 5.0};
static const double tiny_uvar[2] = {5.0 / 3.0, 20.0 / 3.0};
static const float tiny_gamma[2] = {2.0f, 0.5f}, tiny_beta[2] = {1.0f, -1.0f};

typedef struct tiny {
    tsl_graph *g;
    tsl_tid x, y, mean, invstd, rm, rv, gamma, beta;
} tiny;

static tiny tiny_graph(void) {
    tiny t;
    t.g = tsl_graph_new("tiny");
    t.x = tsl_input(t.g, "x", TSL_SHAPE(2, 2, 1, 2));
    t.y = tsl_batchnorm(t.g, "bn", t.x, bn_attr());
    cr_assert_eq(tsl_graph_finalize(t.g), TSL_OK, "%s", tsl_last_error());
    t.mean = tsl_graph_find(t.g, "bn.saved_mean");
    t.invstd = tsl_graph_find(t.g, "bn.saved_invstd");
    t.rm = tsl_graph_find(t.g, "bn.running_mean");
    t.rv = tsl_graph_find(t.g, "bn.running_var");
    t.gamma = tsl_graph_find(t.g, "bn.weight");
    t.beta = tsl_graph_find(t.g, "bn.bias");
    return t;
}

/* Loads the tiny inputs and the initial running statistics (0, 1) into r. */
static void tiny_load(th_rt *r, const tiny *t) {
    for (int i = 0; i < 8; i++) {
        if (r->dt == TSL_F64) ((double *)r->buf[t->x])[i] = tiny_x[i];
        else ((float *)r->buf[t->x])[i] = tiny_x[i];
    }
    for (int c = 0; c < 2; c++) {
        if (r->dt == TSL_F64) {
            ((double *)r->buf[t->gamma])[c] = tiny_gamma[c];
            ((double *)r->buf[t->beta])[c] = tiny_beta[c];
            ((double *)r->buf[t->rm])[c] = 0;
            ((double *)r->buf[t->rv])[c] = 1;
        } else {
            ((float *)r->buf[t->gamma])[c] = tiny_gamma[c];
            ((float *)r->buf[t->beta])[c] = tiny_beta[c];
            ((float *)r->buf[t->rm])[c] = 0;
            ((float *)r->buf[t->rv])[c] = 1;
        }
    }
}

Test(norm, tiny_training_step) {
    tiny t = tiny_graph();
    const double eps = (double)1e-5f, mom = (double)0.1f;
    for (int d = 0; d < 2; d++) {
        th_rt *r = th_rt_new(t.g, d ? TSL_F64 : TSL_F32);
        double tol = d ? 1e-14 : 1e-6;
        tiny_load(r, &t);
        cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_OK);
        double y[8], m[2], is[2], rm[2], rv[2];
        th_rt_to_f64(r, t.y, y);
        th_rt_to_f64(r, t.mean, m);
        th_rt_to_f64(r, t.invstd, is);
        th_rt_to_f64(r, t.rm, rm);
        th_rt_to_f64(r, t.rv, rv);
        for (int c = 0; c < 2; c++) {
            double want_is = 1.0 / sqrt(tiny_var[c] + eps);
            cr_assert_lt(fabs(m[c] - tiny_mean[c]), tol, "saved_mean[%d] = %.17g, want %g", c, m[c], tiny_mean[c]);
            cr_assert_lt(fabs(is[c] - want_is) / want_is, tol, "saved_invstd[%d] = %.17g, want %.17g", c, is[c], want_is);
            /* PyTorch: running = (1-m)*running + m*batch, unbiased variance */
            double want_rm = mom * tiny_mean[c], want_rv = (1 - mom) * 1.0 + mom * tiny_uvar[c];
            cr_assert_lt(fabs(rm[c] - want_rm), tol, "running_mean[%d] = %.17g, want %.17g", c, rm[c], want_rm);
            cr_assert_lt(fabs(rv[c] - want_rv), tol, "running_var[%d] = %.17g, want %.17g", c, rv[c], want_rv);
        }
        for (int i = 0; i < 8; i++) {
            int c = (i / 2) % 2;
            double want = ((double)tiny_x[i] - tiny_mean[c]) / sqrt(tiny_var[c] + eps) * tiny_gamma[c] + tiny_beta[c];
            cr_assert_lt(fabs(y[i] - want), tol * 4, "y[%d] = %.17g, want %.17g", i, y[i], want);
        }
        /* normalised output: per channel mean beta, biased std ~ |gamma| */
        for (int c = 0; c < 2; c++) {
            double s = 0, q = 0;
            for (int n = 0; n < 2; n++)
                for (int k = 0; k < 2; k++) s += y[(n * 2 + c) * 2 + k];
            for (int n = 0; n < 2; n++)
                for (int k = 0; k < 2; k++) q += pow(y[(n * 2 + c) * 2 + k] - s / 4, 2);
            cr_assert_lt(fabs(s / 4 - tiny_beta[c]), 1e-6, "channel %d mean %g", c, s / 4);
            cr_assert_lt(fabs(sqrt(q / 4) - fabs((double)tiny_gamma[c])), 1e-4, "channel %d std %g", c, sqrt(q / 4));
        }
        /* a second step on the same batch moves the running stats again */
        cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_OK);
        th_rt_to_f64(r, t.rm, rm);
        th_rt_to_f64(r, t.rv, rv);
        for (int c = 0; c < 2; c++) {
            double rm1 = mom * tiny_mean[c], rv1 = (1 - mom) + mom * tiny_uvar[c];
            double want_rm = (1 - mom) * rm1 + mom * tiny_mean[c];
            double want_rv = (1 - mom) * rv1 + mom * tiny_uvar[c];
            cr_assert_lt(fabs(rm[c] - want_rm), tol, "step 2 running_mean[%d] = %.17g, want %.17g", c, rm[c], want_rm);
            cr_assert_lt(fabs(rv[c] - want_rv), tol, "step 2 running_var[%d] = %.17g, want %.17g", c, rv[c], want_rv);
        }
        th_rt_free(r);
    }
    tsl_graph_free(t.g);
}

Test(norm, evaluation_uses_and_keeps_running_stats) {
    tiny t = tiny_graph();
    const double eps = (double)1e-5f;
    const float rm0[2] = {1.0f, -1.0f}, rv0[2] = {4.0f, 0.25f};
    for (int d = 0; d < 2; d++) {
        th_rt *r = th_rt_new(t.g, d ? TSL_F64 : TSL_F32);
        double tol = d ? 1e-14 : 1e-6;
        tiny_load(r, &t);
        for (int c = 0; c < 2; c++) {
            if (d) {
                ((double *)r->buf[t.rm])[c] = rm0[c];
                ((double *)r->buf[t.rv])[c] = rv0[c];
            } else {
                ((float *)r->buf[t.rm])[c] = rm0[c];
                ((float *)r->buf[t.rv])[c] = rv0[c];
            }
        }
        cr_assert_eq(th_rt_run(r, 0, 1, 0, 1), TSL_OK);
        double y[8], m[2], is[2], rm[2], rv[2];
        th_rt_to_f64(r, t.y, y);
        th_rt_to_f64(r, t.mean, m);
        th_rt_to_f64(r, t.invstd, is);
        th_rt_to_f64(r, t.rm, rm);
        th_rt_to_f64(r, t.rv, rv);
        for (int c = 0; c < 2; c++) {
            cr_assert_eq(rm[c], (double)rm0[c], "running_mean[%d] changed in evaluation: %g", c, rm[c]);
            cr_assert_eq(rv[c], (double)rv0[c], "running_var[%d] changed in evaluation: %g", c, rv[c]);
            cr_assert_eq(m[c], (double)rm0[c], "saved_mean[%d] = %g, want the running mean", c, m[c]);
            double want_is = 1.0 / sqrt((double)rv0[c] + eps);
            cr_assert_lt(fabs(is[c] - want_is) / want_is, tol, "saved_invstd[%d] = %.17g, want %.17g", c, is[c], want_is);
        }
        for (int i = 0; i < 8; i++) {
            int c = (i / 2) % 2;
            double want = ((double)tiny_x[i] - rm0[c]) / sqrt((double)rv0[c] + eps) * tiny_gamma[c] + tiny_beta[c];
            cr_assert_lt(fabs(y[i] - want), tol * 4, "eval y[%d] = %.17g, want %.17g", i, y[i], want);
        }
        th_rt_free(r);
    }
    tsl_graph_free(t.g);
}

/* ---- graph structure ----------------------------------------------------- */

Test(norm, builder_creates_params_buffers_and_outputs) {
    tsl_graph *g = tsl_graph_new("s");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 3, 5, 5));
    tsl_tid y = tsl_batchnorm(g, "layer1.bn", x, bn_attr());
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    const char *pn[2] = {"layer1.bn.weight", "layer1.bn.bias"};
    const char *bn[2] = {"layer1.bn.running_mean", "layer1.bn.running_var"};
    const tsl_init pi[2] = {TSL_INIT_ONE, TSL_INIT_ZERO}, bi[2] = {TSL_INIT_ZERO, TSL_INIT_ONE};
    for (int i = 0; i < 2; i++) {
        const tsl_tensor *p = tsl_graph_tensor(g, tsl_graph_find(g, pn[i]));
        cr_assert(p->kind == TSL_KIND_PARAM && p->init == pi[i] && p->shape.ndim == 1 && p->shape.d[0] == 3, "%s", pn[i]);
        const tsl_tensor *b = tsl_graph_tensor(g, tsl_graph_find(g, bn[i]));
        cr_assert(b->kind == TSL_KIND_BUFFER && b->init == bi[i] && b->shape.d[0] == 3, "%s", bn[i]);
    }
    const tsl_op *op = tsl_graph_op(g, 0);
    cr_assert_eq(op->type, TSL_OP_BATCHNORM);
    cr_assert(op->n_in == 5 && op->n_out == 5);
    cr_assert(op->in[3] == op->out[3] && op->in[4] == op->out[4], "running stats are not in place");
    cr_assert_str_eq(tsl_graph_tensor(g, op->out[0])->name, "layer1.bn");
    cr_assert_str_eq(tsl_graph_tensor(g, op->out[1])->name, "layer1.bn.saved_mean");
    cr_assert_str_eq(tsl_graph_tensor(g, op->out[2])->name, "layer1.bn.saved_invstd");
    cr_assert(tsl_graph_tensor(g, op->out[0])->requires_grad);
    cr_assert(!tsl_graph_tensor(g, op->out[1])->requires_grad && !tsl_graph_tensor(g, op->out[2])->requires_grad);
    cr_assert(op->attr.bn.eps == 1e-5f && op->attr.bn.momentum == 0.1f);
    cr_assert_eq(tsl_graph_param_count(g), 6);
    cr_assert_gt(tsl_op_flops(g, op), 4.0 * 4 * 3 * 25);
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_BATCHNORM), "batchnorm");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_BATCHNORM_BWD), "batchnorm_bwd");
    tsl_graph_free(g);
}

Test(norm, builder_errors_name_the_fault) {
    struct {
        tsl_shape s;
        tsl_bn_attr a;
        const char *want;
    } cases[] = {
        {TSL_SHAPE(8), {1e-5f, 0.1f}, "(8)"},
        {TSL_SHAPE(4, 3), {0.0f, 0.1f}, "eps = 0"},
        {TSL_SHAPE(4, 3), {1e-5f, 1.5f}, "momentum = 1.5"},
        {TSL_SHAPE(1, 3), {1e-5f, 0.1f}, "1 value per channel"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsl_graph *g = tsl_graph_new("bad");
        tsl_tid x = tsl_input(g, "x", cases[i].s);
        cr_assert_eq(tsl_batchnorm(g, "bnX", x, cases[i].a), TSL_NONE, "case %zu accepted", i);
        cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
        const char *m = tsl_last_error();
        cr_assert(strstr(m, "bnX") && strstr(m, cases[i].want), "case %zu: %s", i, m);
        tsl_graph_free(g);
    }
    /* the same name twice: its params already exist */
    tsl_graph *g = tsl_graph_new("dup");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 3));
    tsl_tid y = tsl_batchnorm(g, "bn", x, bn_attr());
    cr_assert_neq(y, TSL_NONE);
    cr_assert_eq(tsl_batchnorm(g, "bn", y, bn_attr()), TSL_NONE);
    cr_assert(strstr(tsl_last_error(), "bn.weight"), "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* ---- precision and determinism, forward and backward --------------------- */

/* x (4,8,32,32) -> batchnorm -> softmax_xent over the 8 channels with
 * per-pixel labels, then the backward: ops BN, XENT, XENT_BWD, BN_BWD. */
static tsl_graph *bn_train_graph(tsl_tid *lab) {
    tsl_graph *g = tsl_graph_new("bnt");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 8, 32, 32));
    *lab = tsl_label(g, "lab", TSL_SHAPE(4, 32, 32));
    tsl_tid y = tsl_batchnorm(g, "bn", x, bn_attr());
    tsl_tid loss = tsl_softmax_xent(g, "loss", y, *lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), 4);
    cr_assert_eq(tsl_graph_op(g, 3)->type, TSL_OP_BATCHNORM_BWD);
    return g;
}

static void bn_load(th_rt *r, tsl_tid lab, uint64_t seed) {
    th_rt_fill(r, seed);
    int32_t *l = r->buf[lab];
    for (int i = 0; i < 4 * 32 * 32; i++) l[i] = (i * 7 + 3) % 8;
    tsl_tid gm = tsl_graph_find(r->g, "bn.weight"), rv = tsl_graph_find(r->g, "bn.running_var");
    for (int c = 0; c < 8; c++) { /* gamma away from 0, running var 1 */
        if (r->dt == TSL_F64) {
            ((double *)r->buf[gm])[c] = 0.5 + 0.25 * c;
            ((double *)r->buf[rv])[c] = 1;
        } else {
            ((float *)r->buf[gm])[c] = 0.5f + 0.25f * (float)c;
            ((float *)r->buf[rv])[c] = 1;
        }
    }
}

Test(norm, float_matches_double) {
    tsl_tid lab;
    tsl_graph *g = bn_train_graph(&lab);
    th_rt *rf = th_rt_new(g, TSL_F32), *rd = th_rt_new(g, TSL_F64);
    bn_load(rf, lab, 31);
    bn_load(rd, lab, 31);
    th_rt_copy_leaves_f32_to_f64(rf, rd);
    cr_assert_eq(th_rt_run(rf, 0, 4, 1, 2), TSL_OK);
    cr_assert_eq(th_rt_run(rd, 0, 4, 1, 2), TSL_OK);
    const char *names[] = {"bn", "bn.saved_mean", "bn.saved_invstd", "bn.running_mean", "bn.running_var",
                           "bn.dx", "bn.dgamma", "bn.dbeta"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tsl_tid t = tsl_graph_find(g, names[i]);
        cr_assert_neq(t, TSL_NONE, "%s", names[i]);
        size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(g, t)->shape);
        double *f = malloc(n * sizeof *f);
        th_rt_to_f64(rf, t, f);
        double e = th_norm_err_f64(f, rd->buf[t], n);
        cr_assert_lt(e, 1e-6, "%s: float vs double normalised error %g", names[i], e);
        free(f);
    }
    th_rt_free(rf);
    th_rt_free(rd);
    tsl_graph_free(g);
}

Test(norm, same_bits_twice_and_across_threads) {
    tsl_tid lab;
    tsl_graph *g = bn_train_graph(&lab);
    for (int d = 0; d < 2; d++) {
        tsl_dtype dt = d ? TSL_F64 : TSL_F32;
        th_rt *r[3] = {th_rt_new(g, dt), th_rt_new(g, dt), th_rt_new(g, dt)};
        const int threads[3] = {1, 1, 2};
        for (int k = 0; k < 3; k++) {
            bn_load(r[k], lab, 41);
            cr_assert_eq(th_rt_run(r[k], 0, 4, 1, threads[k]), TSL_OK);
        }
        for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) {
            size_t nb = th_rt_bytes(r[0], t);
            const char *nm = tsl_graph_tensor(g, t)->name;
            cr_assert_eq(memcmp(r[0]->buf[t], r[1]->buf[t], nb), 0, "%s (%s) differs between runs", nm,
                         tsl_dtype_name(dt));
            cr_assert_eq(memcmp(r[0]->buf[t], r[2]->buf[t], nb), 0, "%s (%s) differs with 2 threads", nm,
                         tsl_dtype_name(dt));
        }
        for (int k = 0; k < 3; k++) th_rt_free(r[k]);
    }
    tsl_cpu_set_threads(1);
    tsl_graph_free(g);
}
