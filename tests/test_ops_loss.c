/*
 * test_ops_loss.c - SOFTMAX_XENT: the gradient of the loss (built by
 * tsl_graph_backward) against finite differences of the loss in double on
 * (N,K) and (N,K,H,W) logits, hand-computed losses and probabilities,
 * stability with logits of magnitude 1000, out-of-range labels, float
 * against double, determinism across runs and thread counts, and builder
 * validation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "gradcheck.h"
#include "helpers.h"
#include "ops/op_def.h"


/* ---- gradient of the loss ------------------------------------------------ */

/* Builds loss = softmax_xent(logits, labels) with its backward, sets random
 * logits in [-2,2] and labels (5i+1) mod K, and compares d loss / d logits
 * with central differences of the loss (h = 1e-6) on up to 64 elements.
 * Returns max|fd-an| / max(max|an|, 1e-6). */
static double loss_gradcheck(tsl_shape ls, tsl_shape ys, uint64_t seed) {
    tsl_graph *g = tsl_graph_new("xg");
    tsl_tid lg = tsl_param(g, "logits", ls, TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", ys);
    tsl_tid loss = tsl_softmax_xent(g, "loss", lg, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    tsl_tid gl = tsl_graph_tensor(g, lg)->grad;
    cr_assert_neq(gl, TSL_NONE);
    const int64_t K = ls.d[1];
    const size_t n = (size_t)tsl_shape_numel(&ls), ny = (size_t)tsl_shape_numel(&ys);
    th_f64 *r = th_f64_new(g);
    double *x = th_f64_buf(r, lg);
    th_fill_f64(x, n, seed, -2, 2);
    int32_t *l = th_f64_buf(r, lab);
    for (size_t i = 0; i < ny; i++) l[i] = (int32_t)((5 * i + 1) % (size_t)K);
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double *an = malloc(n * sizeof *an);
    memcpy(an, th_f64_buf(r, gl), n * sizeof *an);
    double scale = 1e-6, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(an[i]));
    const double *L = th_f64_buf(r, loss);
    size_t checks = n < 64 ? n : 64, worst_k = 0;
    for (size_t c = 0; c < checks; c++) {
        size_t k = n <= 64 ? c : (c * 2654435761u + seed) % n;
        const double h = 1e-6, x0 = x[k];
        x[k] = x0 + h;
        th_f64_run(r, 0, 1, 1, 1);
        double lp = *L;
        x[k] = x0 - h;
        th_f64_run(r, 0, 1, 1, 1);
        double lm = *L;
        x[k] = x0;
        double e = fabs((lp - lm) / (2 * h) - an[k]) / scale;
        if (e > worst || e != e) {
            worst = e != e ? INFINITY : e;
            worst_k = k;
        }
    }
    if (worst >= 1e-6) fprintf(stderr, "loss gradcheck: worst element %zu, error %g\n", worst_k, worst);
    free(an);
    th_f64_free(r);
    tsl_graph_free(g);
    return worst;
}

Test(loss, gradcheck_nk) {
    double e = loss_gradcheck(TSL_SHAPE(5, 7), TSL_SHAPE(5), 3);
    cr_assert_lt(e, 1e-6, "softmax_xent (5,7): normalised gradient error %g", e);
}

Test(loss, gradcheck_nkhw) {
    double e = loss_gradcheck(TSL_SHAPE(2, 4, 3, 3), TSL_SHAPE(2, 3, 3), 4);
    cr_assert_lt(e, 1e-6, "softmax_xent (2,4,3,3): normalised gradient error %g", e);
}

/* ---- hand-computed values ----------------------------------------------- */

typedef struct xg {
    tsl_graph *g;
    tsl_tid lg, lab, loss, probs;
} xg;

static xg xent_graph(tsl_shape ls, tsl_shape ys) {
    xg t;
    t.g = tsl_graph_new("x");
    t.lg = tsl_param(t.g, "logits", ls, TSL_INIT_NONE);
    t.lab = tsl_label(t.g, "lab", ys);
    t.loss = tsl_softmax_xent(t.g, "loss", t.lg, t.lab);
    cr_assert_neq(t.loss, TSL_NONE, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_backward(t.g, t.loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(t.g), TSL_OK, "%s", tsl_last_error());
    t.probs = tsl_graph_find(t.g, "loss.probs");
    return t;
}

static void set_logits(th_rt *r, tsl_tid t, const double *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (r->dt == TSL_F64) ((double *)r->buf[t])[i] = v[i];
        else ((float *)r->buf[t])[i] = (float)v[i];
    }
}

Test(loss, known_logits) {
    /* rows: (1,2,3) label 2; (0,0,0) label 1; (1000,999,0) label 1;
     * (-1000,1000,0) label 0 */
    const double v[12] = {1, 2, 3, 0, 0, 0, 1000, 999, 0, -1000, 1000, 0};
    const int32_t y[4] = {2, 1, 1, 0};
    const double l0 = log(exp(1.0) + exp(2.0) + exp(3.0)) - 3.0;
    const double l1 = log(3.0), l2 = 1.0 + log1p(exp(-1.0)), l3 = 2000.0;
    const double want_loss = (l0 + l1 + l2 + l3) / 4.0;
    const double want_p[12] = {exp(1 - 3 - (l0 - 0)) , exp(2 - 3 - l0), exp(-l0),
                               1.0 / 3, 1.0 / 3, 1.0 / 3,
                               1.0 / (1 + exp(-1.0)), exp(-1.0) / (1 + exp(-1.0)), 0,
                               0, 1, 0};
    xg t = xent_graph(TSL_SHAPE(4, 3), TSL_SHAPE(4));
    for (int d = 0; d < 2; d++) {
        th_rt *r = th_rt_new(t.g, d ? TSL_F64 : TSL_F32);
        set_logits(r, t.lg, v, 12);
        memcpy(r->buf[t.lab], y, sizeof y);
        cr_assert_eq(th_rt_run(r, 0, tsl_graph_n_ops(t.g), 1, 1), TSL_OK, "%s", tsl_last_error());
        double loss, p[12], dl[12];
        th_rt_to_f64(r, t.loss, &loss);
        th_rt_to_f64(r, t.probs, p);
        th_rt_to_f64(r, tsl_graph_tensor(t.g, t.lg)->grad, dl);
        cr_assert(isfinite(loss), "loss not finite: %g", loss);
        double tol = d ? 1e-13 : 1e-6;
        cr_assert_lt(fabs(loss - want_loss) / want_loss, tol, "%s loss %.17g, want %.17g",
                     tsl_dtype_name(r->dt), loss, want_loss);
        for (int i = 0; i < 12; i++) {
            cr_assert(isfinite(p[i]) && isfinite(dl[i]), "p[%d] = %g, dlogits = %g", i, p[i], dl[i]);
            cr_assert_lt(fabs(p[i] - want_p[i]), d ? 1e-15 : 1e-7, "%s probs[%d] = %.17g, want %.17g",
                         tsl_dtype_name(r->dt), i, p[i], want_p[i]);
            double want_d = (want_p[i] - (y[i / 3] == i % 3 ? 1.0 : 0.0)) / 4.0;
            cr_assert_lt(fabs(dl[i] - want_d), d ? 1e-15 : 1e-7, "%s dlogits[%d] = %.17g, want %.17g",
                         tsl_dtype_name(r->dt), i, dl[i], want_d);
        }
        th_rt_free(r);
    }
    tsl_graph_free(t.g);
}

/* (N,K,H,W) against a plain double loop over positions. */
Test(loss, nkhw_against_plain_loop) {
    const int64_t N = 2, K = 5, H = 3, W = 4, S = H * W;
    xg t = xent_graph(TSL_SHAPE(N, K, H, W), TSL_SHAPE(N, H, W));
    th_rt *r = th_rt_new(t.g, TSL_F64);
    double *x = r->buf[t.lg];
    th_fill_f64(x, (size_t)(N * K * S), 9, -4, 4);
    int32_t *y = r->buf[t.lab];
    for (int64_t i = 0; i < N * S; i++) y[i] = (int32_t)((i * 3) % K);
    cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_OK);
    double sum = 0, worst_p = 0;
    const double *p = r->buf[t.probs];
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            double z = 0;
            for (int64_t k = 0; k < K; k++) z += exp(x[(n * K + k) * S + s]);
            for (int64_t k = 0; k < K; k++)
                worst_p = fmax(worst_p, fabs(p[(n * K + k) * S + s] - exp(x[(n * K + k) * S + s]) / z));
            sum += -log(exp(x[(n * K + y[n * S + s]) * S + s]) / z);
        }
    double want = sum / (double)(N * S), got = *(double *)r->buf[t.loss];
    cr_assert_lt(fabs(got - want), 1e-13, "loss %.17g, want %.17g", got, want);
    cr_assert_lt(worst_p, 1e-15, "largest probability difference %g", worst_p);
    th_rt_free(r);
    tsl_graph_free(t.g);
}

/* ---- errors --------------------------------------------------------------- */

Test(loss, label_out_of_range) {
    xg t = xent_graph(TSL_SHAPE(3, 3), TSL_SHAPE(3));
    const int32_t bad[2][3] = {{0, 2, 3}, {-1, 0, 0}};
    const char *pos[2] = {"position 2", "position 0"}, *val[2] = {"label 3", "label -1"};
    for (int d = 0; d < 2; d++)
        for (int b = 0; b < 2; b++) {
            th_rt *r = th_rt_new(t.g, d ? TSL_F64 : TSL_F32);
            memcpy(r->buf[t.lab], bad[b], sizeof bad[b]);
            tsl_clear_error();
            cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_ERR_INVALID);
            const char *m = tsl_last_error();
            cr_assert(strstr(m, pos[b]) && strstr(m, val[b]) && strstr(m, "[0,3)") && strstr(m, "'loss'"),
                      "message: %s", m);
            /* the backward kernel checks as well */
            tsl_clear_error();
            cr_assert_eq(th_rt_run(r, 1, 2, 1, 1), TSL_ERR_INVALID);
            m = tsl_last_error();
            cr_assert(strstr(m, pos[b]) && strstr(m, val[b]), "backward message: %s", m);
            th_rt_free(r);
        }
    tsl_graph_free(t.g);
}

Test(loss, backward_requires_grad_one) {
    tsl_graph *g = tsl_graph_new("g1");
    tsl_tid lg = tsl_param(g, "logits", TSL_SHAPE(2, 3), TSL_INIT_NONE);
    tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));
    tsl_tid loss = tsl_softmax_xent(g, "xe", lg, lab);
    cr_assert_neq(loss, TSL_NONE);
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid og[2] = {lg, TSL_NONE}, ig[2] = {TSL_NONE, TSL_NONE};
    tsl__op_def(TSL_OP_SOFTMAX_XENT)->backward(g, &op, og, ig);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    cr_assert_eq(ig[0], TSL_NONE);
    cr_assert(strstr(tsl_last_error(), "'xe'") && strstr(tsl_last_error(), "constant 1"), "%s",
              tsl_last_error());
    tsl_graph_free(g);
}

Test(loss, builder_errors_name_the_fault) {
    struct {
        tsl_shape ls, ys;
        int float_labels;
        const char *want;
    } cases[] = {
        {TSL_SHAPE(8), TSL_SHAPE(8), 0, "(8)"},
        {TSL_SHAPE(4, 3), TSL_SHAPE(5), 0, "(5)"},
        {TSL_SHAPE(2, 3, 4, 4), TSL_SHAPE(2, 4), 0, "(2,4)"},
        {TSL_SHAPE(2, 3, 4, 4), TSL_SHAPE(2, 4, 5), 0, "(2,4,5)"},
        {TSL_SHAPE(4, 3), TSL_SHAPE(4), 1, "int32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsl_graph *g = tsl_graph_new("bad");
        tsl_tid lg = tsl_input(g, "logits", cases[i].ls);
        tsl_tid lab = cases[i].float_labels ? tsl_input(g, "lab", cases[i].ys) : tsl_label(g, "lab", cases[i].ys);
        cr_assert_eq(tsl_softmax_xent(g, "xeX", lg, lab), TSL_NONE, "case %zu accepted", i);
        cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
        const char *m = tsl_last_error();
        cr_assert(strstr(m, "xeX") && strstr(m, cases[i].want), "case %zu: %s", i, m);
        tsl_graph_free(g);
    }
}

Test(loss, outputs_and_flops) {
    xg t = xent_graph(TSL_SHAPE(2, 3, 4, 5), TSL_SHAPE(2, 4, 5));
    const tsl_tensor *l = tsl_graph_tensor(t.g, t.loss), *p = tsl_graph_tensor(t.g, t.probs);
    cr_assert_eq(l->shape.ndim, 0);
    cr_assert_str_eq(l->name, "loss");
    cr_assert(l->requires_grad && !p->requires_grad);
    cr_assert(p->shape.ndim == 4 && p->shape.d[1] == 3 && p->shape.d[3] == 5);
    cr_assert_eq(tsl_graph_n_ops(t.g), 2);
    const tsl_op *bw = tsl_graph_op(t.g, 1);
    cr_assert_eq(bw->type, TSL_OP_SOFTMAX_XENT_BWD);
    cr_assert(bw->in[0] == t.probs && bw->in[1] == t.lab);
    cr_assert_str_eq(tsl_graph_tensor(t.g, bw->out[0])->name, "loss.dlogits");
    cr_assert_eq(tsl_graph_tensor(t.g, bw->out[0])->kind, TSL_KIND_GRADIENT);
    cr_assert_gt(tsl_op_flops(t.g, tsl_graph_op(t.g, 0)), 120.0);
    cr_assert_gt(tsl_op_flops(t.g, bw), 120.0);
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_SOFTMAX_XENT), "softmax_xent");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_SOFTMAX_XENT_BWD), "softmax_xent_bwd");
    tsl_graph_free(t.g);
}

/* ---- precision and determinism ------------------------------------------ */

static void big_load(th_rt *r, const xg *t) {
    th_rt_fill(r, 51);
    int32_t *y = r->buf[t->lab];
    size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(t->g, t->lab)->shape);
    for (size_t i = 0; i < n; i++) y[i] = (int32_t)((i * 7 + 2) % 10);
}

Test(loss, float_matches_double) {
    xg t = xent_graph(TSL_SHAPE(4, 10, 32, 32), TSL_SHAPE(4, 32, 32));
    th_rt *rf = th_rt_new(t.g, TSL_F32), *rd = th_rt_new(t.g, TSL_F64);
    big_load(rf, &t);
    th_rt_copy_leaves_f32_to_f64(rf, rd);
    cr_assert_eq(th_rt_run(rf, 0, 2, 1, 2), TSL_OK);
    cr_assert_eq(th_rt_run(rd, 0, 2, 1, 2), TSL_OK);
    tsl_tid ts[3] = {t.loss, t.probs, tsl_graph_tensor(t.g, t.lg)->grad};
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(t.g, ts[i])->shape);
        double *f = malloc(n * sizeof *f);
        th_rt_to_f64(rf, ts[i], f);
        double e = th_norm_err_f64(f, rd->buf[ts[i]], n);
        cr_assert_lt(e, 1e-6, "%s: float vs double normalised error %g", tsl_graph_tensor(t.g, ts[i])->name, e);
        free(f);
    }
    th_rt_free(rf);
    th_rt_free(rd);
    tsl_graph_free(t.g);
}

Test(loss, same_bits_twice_and_across_threads) {
    /* N = 300 > 256 also exercises the heap-allocated partial sums */
    const int big = !th_quick();
    xg ts[2] = {xent_graph(TSL_SHAPE(4, 10, 32, 32), TSL_SHAPE(4, 32, 32)),
                xent_graph(TSL_SHAPE(300, big ? 100 : 60), TSL_SHAPE(300))};
    for (int gi = 0; gi < 2; gi++)
        for (int d = 0; d < 2; d++) {
            tsl_dtype dt = d ? TSL_F64 : TSL_F32;
            const xg *t = &ts[gi];
            th_rt *r[3] = {th_rt_new(t->g, dt), th_rt_new(t->g, dt), th_rt_new(t->g, dt)};
            const int threads[3] = {1, 1, 2};
            for (int k = 0; k < 3; k++) {
                big_load(r[k], t);
                cr_assert_eq(th_rt_run(r[k], 0, 2, 1, threads[k]), TSL_OK);
            }
            for (tsl_tid id = 0; id < tsl_graph_n_tensors(t->g); id++) {
                size_t nb = th_rt_bytes(r[0], id);
                const char *nm = tsl_graph_tensor(t->g, id)->name;
                cr_assert_eq(memcmp(r[0]->buf[id], r[1]->buf[id], nb), 0, "%s (%s) differs between runs", nm,
                             tsl_dtype_name(dt));
                cr_assert_eq(memcmp(r[0]->buf[id], r[2]->buf[id], nb), 0, "%s (%s) differs with 2 threads",
                             nm, tsl_dtype_name(dt));
            }
            for (int k = 0; k < 3; k++) th_rt_free(r[k]);
        }
    tsl_cpu_set_threads(1);
    tsl_graph_free(ts[0].g);
    tsl_graph_free(ts[1].g);
}

/* ---- MSE ------------------------------------------------------------------ */

/* loss = mse(pred, target) with its backward, in double: d loss / d pred
 * against central differences on every element, and the loss against a
 * hand sum. */
Test(loss, mse_gradient_and_value) {
    tsl_graph *g = tsl_graph_new("mse");
    const int64_t d[2] = {5, 3};
    tsl_tid p = tsl_param(g, "pred", tsl_shape_from(d, 2), TSL_INIT_NONE);
    tsl_tid t = tsl_input(g, "target", tsl_shape_from(d, 2));
    tsl_tid loss = tsl_mse(g, "loss", p, t);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    tsl_tid gp = tsl_graph_tensor(g, p)->grad;
    cr_assert_neq(gp, TSL_NONE);
    cr_assert_eq(tsl_graph_tensor(g, t)->grad, TSL_NONE, "the target gets no gradient");
    th_f64 *r = th_f64_new(g);
    double *x = th_f64_buf(r, p), *y = th_f64_buf(r, t);
    th_fill_f64(x, 15, 7, -2, 2);
    th_fill_f64(y, 15, 8, -2, 2);
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double want = 0;
    for (int i = 0; i < 15; i++) want += (x[i] - y[i]) * (x[i] - y[i]);
    const double *L = th_f64_buf(r, loss);
    cr_assert(fabs(*L - want / 15) < 1e-12, "loss %.17g, expected %.17g", *L, want / 15);
    double an[15];
    memcpy(an, th_f64_buf(r, gp), sizeof an);
    for (int k = 0; k < 15; k++) {
        const double h = 1e-6, x0 = x[k];
        x[k] = x0 + h;
        th_f64_run(r, 0, 1, 1, 1);
        double lp = *L;
        x[k] = x0 - h;
        th_f64_run(r, 0, 1, 1, 1);
        double lm = *L;
        x[k] = x0;
        cr_assert(fabs((lp - lm) / (2 * h) - an[k]) < 1e-7, "element %d: fd %.10g, analytic %.10g", k,
                  (lp - lm) / (2 * h), an[k]);
    }
    th_f64_free(r);
    tsl_graph_free(g);
}

Test(loss, mse_builder_errors_name_the_fault) {
    tsl_graph *g = tsl_graph_new("mse_bad");
    const int64_t a[2] = {4, 1}, b[2] = {4, 2};
    tsl_tid p = tsl_input(g, "pred", tsl_shape_from(a, 2));
    tsl_tid t = tsl_input(g, "target", tsl_shape_from(b, 2));
    cr_assert_eq(tsl_mse(g, "loss", p, t), TSL_NONE);
    cr_assert(strstr(tsl_last_error(), "mse 'loss'") && strstr(tsl_last_error(), "target"), "%s",
              tsl_last_error());
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_MSE), "mse");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_MSE_BWD), "mse_bwd");
    tsl_graph_free(g);
}
