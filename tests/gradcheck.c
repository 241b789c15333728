/* gradcheck.c - see gradcheck.h. */
#include "gradcheck.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"
#include "core/graph_internal.h"
#include "helpers.h"
#include "ops/op_def.h"

struct th_f64 {
    const tsl_graph *g;
    void **buf;
    size_t *bytes;
};

static size_t f64_bytes(const tsl_tensor *t) {
    size_t n = (size_t)tsl_shape_numel(&t->shape);
    return n * (t->dtype == TSL_I32 ? sizeof(int32_t) : sizeof(double));
}

th_f64 *th_f64_new(const tsl_graph *g) {
    th_f64 *r = calloc(1, sizeof *r);
    int32_t nt = tsl_graph_n_tensors(g);
    r->g = g;
    r->buf = calloc((size_t)nt, sizeof *r->buf);
    r->bytes = calloc((size_t)nt, sizeof *r->bytes);
    TSL_ASSERT(r->buf && r->bytes);
    for (int32_t t = 0; t < nt; t++) {
        r->bytes[t] = f64_bytes(tsl_graph_tensor(g, t));
        r->buf[t] = calloc(1, r->bytes[t] ? r->bytes[t] : 1);
        TSL_ASSERT(r->buf[t]);
    }
    return r;
}

void *th_f64_buf(th_f64 *r, tsl_tid t) {
    TSL_ASSERT(t >= 0 && t < tsl_graph_n_tensors(r->g));
    return r->buf[t];
}

void th_f64_run(th_f64 *r, int32_t first_op, int32_t end_op, int64_t step, int training) {
    for (int32_t i = first_op; i < end_op; i++) {
        const tsl_op *op = tsl_graph_op(r->g, i);
        void *in[256], *out[16];
        TSL_ASSERT(op->n_in <= 256 && op->n_out <= 16);
        for (int j = 0; j < op->n_in; j++) in[j] = r->buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = r->buf[op->out[j]];
        size_t ws = 2 * tsl_op_workspace(r->g, op); /* sized for f32; doubles need twice */
        void *w = ws ? calloc(1, ws) : NULL;
        tsl_kernel_args a = {.g = r->g, .op = op, .dtype = TSL_F64, .in = in, .out = out,
                             .workspace = w, .workspace_bytes = ws, .step = step,
                             .nthreads = 1, .training = training, .state = NULL};
        tsl_status st = tsl_cpu_ref_kernel(op->type, TSL_F64)(&a);
        free(w);
        if (st != TSL_OK) {
            fprintf(stderr, "th_f64_run: op '%s' failed: %s\n", op->name, tsl_last_error());
            abort();
        }
    }
}

void th_f64_free(th_f64 *r) {
    if (!r) return;
    for (int32_t t = 0; t < tsl_graph_n_tensors(r->g); t++) free(r->buf[t]);
    free(r->buf);
    free(r->bytes);
    free(r);
}

/* L = sum(y * r) after running op `op_index` alone, with the in-place
 * outputs of the op restored first from `saved` (so batch-norm running
 * statistics do not drift between evaluations). */
static double eval_loss(th_f64 *run, const tsl_op *op, tsl_tid y, tsl_tid rr, void **saved) {
    for (int j = 0; j < op->n_out; j++)
        if (saved[j]) memcpy(run->buf[op->out[j]], saved[j], run->bytes[op->out[j]]);
    th_f64_run(run, op->index, op->index + 1, 1, 1);
    const double *yv = run->buf[y], *rv = run->buf[rr];
    size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(run->g, y)->shape);
    double L = 0;
    for (size_t i = 0; i < n; i++) L += yv[i] * rv[i];
    return L;
}

double th_gradcheck(tsl_graph *g, int32_t op_index, int out_index, const tsl_tid *xs, int n_xs,
                    uint64_t seed, void (*fill)(th_f64 *r, void *ctx), void *ctx) {
    TSL_ASSERT(tsl_graph_status(g) == TSL_OK);
    tsl_op op = *tsl_graph_op(g, op_index);
    TSL_ASSERT(out_index >= 0 && out_index < op.n_out);
    tsl_tid y = op.out[out_index];
    tsl_tid rr = tsl_input(g, "gradcheck.r", tsl_graph_tensor(g, y)->shape);
    int32_t nt = tsl_graph_n_tensors(g);
    uint8_t *wanted = calloc((size_t)nt, 1);
    for (int i = 0; i < n_xs; i++) wanted[xs[i]] = 1;
    tsl_tid out_grads[16], in_grads[256];
    for (int j = 0; j < op.n_out; j++) out_grads[j] = j == out_index ? rr : TSL_NONE;
    for (int j = 0; j < op.n_in; j++) in_grads[j] = TSL_NONE;
    const tsl_op_def *d = tsl__op_def(op.type);
    TSL_ASSERT(d->backward != NULL);
    tsl__graph_set_backward(g, 1, wanted, nt);
    d->backward(g, &op, out_grads, in_grads);
    tsl__graph_set_backward(g, 0, NULL, 0);
    free(wanted);
    if (tsl_graph_finalize(g) != TSL_OK) {
        fprintf(stderr, "th_gradcheck: %s\n", tsl_last_error());
        return INFINITY;
    }
    tsl_tid grads[64];
    TSL_ASSERT(n_xs <= 64);
    for (int i = 0; i < n_xs; i++) {
        grads[i] = TSL_NONE;
        for (int j = 0; j < op.n_in; j++)
            if (op.in[j] == xs[i]) grads[i] = in_grads[j];
        if (grads[i] == TSL_NONE) {
            fprintf(stderr, "th_gradcheck: no gradient built for '%s'\n",
                    tsl_graph_tensor(g, xs[i])->name);
            return INFINITY;
        }
    }
    th_f64 *run = th_f64_new(g);
    uint64_t s = seed;
    for (int32_t t = 0; t < tsl_graph_n_tensors(g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->dtype == TSL_I32) continue;
        if (tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_PARAM ||
            tt->kind == TSL_KIND_BUFFER || tt->kind == TSL_KIND_OPT_STATE)
            th_fill_f64(run->buf[t], (size_t)tsl_shape_numel(&tt->shape), s++, -1.0, 1.0);
    }
    if (fill) fill(run, ctx);
    const tsl_op *fop = tsl_graph_op(g, op_index);
    void *saved[16] = {0};
    for (int j = 0; j < fop->n_out; j++) {
        for (int k = 0; k < fop->n_in; k++)
            if (fop->in[k] == fop->out[j]) {
                saved[j] = malloc(run->bytes[fop->out[j]]);
                memcpy(saved[j], run->buf[fop->out[j]], run->bytes[fop->out[j]]);
            }
    }
    /* analytic: everything from the op under test to the end */
    th_f64_run(run, 0, tsl_graph_n_ops(g), 1, 1);
    double worst = 0;
    for (int i = 0; i < n_xs; i++) {
        const tsl_tensor *xt = tsl_graph_tensor(g, xs[i]);
        size_t n = (size_t)tsl_shape_numel(&xt->shape);
        const double *an = run->buf[grads[i]];
        double scale = 1e-6;
        for (size_t k = 0; k < n; k++) scale = fmax(scale, fabs(an[k]));
        double *an_copy = malloc(n * sizeof *an_copy);
        memcpy(an_copy, an, n * sizeof *an_copy);
        double *x = run->buf[xs[i]];
        size_t checks = n < 48 ? n : 48;
        double err_i = 0;
        size_t worst_k = 0;
        double worst_fd = 0;
        for (size_t c = 0; c < checks; c++) {
            size_t k = n <= 48 ? c : (size_t)((c * 2654435761u + seed) % n);
            double h = 1e-6, x0 = x[k];
            x[k] = x0 + h;
            double lp = eval_loss(run, fop, y, rr, saved);
            x[k] = x0 - h;
            double lm = eval_loss(run, fop, y, rr, saved);
            x[k] = x0;
            double fd = (lp - lm) / (2 * h);
            double e = fabs(fd - an_copy[k]) / scale;
            if (e > err_i || e != e) {
                err_i = e != e ? INFINITY : e;
                worst_k = k;
                worst_fd = fd;
            }
        }
        if (err_i > worst) worst = err_i;
        fprintf(stderr, "gradcheck %-28s d/d%-24s err %.3e (worst at %zu: fd %.9g an %.9g)\n",
                op.name, xt->name, err_i, worst_k, worst_fd, an_copy[worst_k]);
        free(an_copy);
    }
    for (int j = 0; j < 16; j++) free(saved[j]);
    th_f64_free(run);
    return worst;
}

void th_f64_set(th_f64 *r, tsl_tid t, const double *v, size_t n) {
    memcpy(th_f64_buf(r, t), v, n * sizeof *v);
}

/* See gradcheck.h. */
void th_expect64(const char *what, const double *got, const double *want, size_t n) {
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > worst) worst = fabs(got[i] - want[i]), at = i;
    cr_assert_lt(worst, 1e-12, "%s: element %zu is %.17g, expected %.17g (diff %.3g)", what, at,
                 got[at], want[at], worst);
}
