/*
 * helpers_run.c - the tiny graph runner of helpers.h (th_rt_*): every op of
 * a graph run in order with the CPU backend's reference kernels, in float
 * or double. Apart from helpers.c because it needs the backend layer; the
 * planner's tests link helpers.c alone.
 */
#include "helpers.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu/kernel.h"
#include "gradcheck.h"

size_t th_rt_bytes(const th_rt *r, tsl_tid t) {
    const tsl_tensor *tt = tsl_graph_tensor(r->g, t);
    size_t es = tt->dtype == TSL_I32 ? 4 : (r->dt == TSL_F64 ? 8 : 4);
    return (size_t)tsl_shape_numel(&tt->shape) * es;
}

th_rt *th_rt_new(const tsl_graph *g, tsl_dtype dt) {
    th_rt *r = calloc(1, sizeof *r);
    r->g = g;
    r->dt = dt;
    r->buf = calloc((size_t)tsl_graph_n_tensors(g), sizeof *r->buf);
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) r->buf[t] = calloc(1, th_rt_bytes(r, t));
    return r;
}

void th_rt_free(th_rt *r) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(r->g); t++) free(r->buf[t]);
    free(r->buf);
    free(r);
}

/* Fills every float leaf (input, param) with uniform[-1,1] from seed. */
void th_rt_fill(th_rt *r, uint64_t seed) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(r->g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(r->g, t);
        if (tt->dtype == TSL_I32 || !(tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_PARAM))
            continue;
        size_t n = (size_t)tsl_shape_numel(&tt->shape);
        if (r->dt == TSL_F64) th_fill_f64(r->buf[t], n, seed + (uint64_t)t, -1, 1);
        else th_fill_f32(r->buf[t], n, seed + (uint64_t)t, -1, 1);
    }
}

tsl_status th_rt_run(th_rt *r, int32_t first, int32_t end, int training, int nthreads) {
    tsl_cpu_set_threads(nthreads);
    for (int32_t i = first; i < end; i++) {
        const tsl_op *op = tsl_graph_op(r->g, i);
        void *in[16], *out[16];
        for (int j = 0; j < op->n_in; j++) in[j] = r->buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = r->buf[op->out[j]];
        tsl_kernel_args a = {.g = r->g, .op = op, .dtype = r->dt, .in = in, .out = out,
                             .step = 1, .nthreads = nthreads, .training = training};
        tsl_status st = tsl_cpu_ref_kernel(op->type, r->dt)(&a);
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

/* Copies tensor t of runner r into doubles (for comparisons). */
void th_rt_to_f64(const th_rt *r, tsl_tid t, double *dst) {
    size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(r->g, t)->shape);
    if (r->dt == TSL_F64) memcpy(dst, r->buf[t], n * sizeof *dst);
    else
        for (size_t i = 0; i < n; i++) dst[i] = ((const float *)r->buf[t])[i];
}

/* Copies the leaves (inputs, labels, params) of float runner a into double runner b. */
void th_rt_copy_leaves_f32_to_f64(const th_rt *a, th_rt *b) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(a->g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(a->g, t);
        if (!(tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_PARAM || tt->kind == TSL_KIND_LABEL))
            continue;
        if (tt->dtype == TSL_I32) {
            memcpy(b->buf[t], a->buf[t], th_rt_bytes(a, t));
            continue;
        }
        th_rt_to_f64(a, t, b->buf[t]);
    }
}

void th_rt_fill_tensor(th_rt *r, tsl_tid t, uint64_t seed, double lo, double hi) {
    int64_t n = th_numel(r->g, t);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)th_uniform(&seed, lo, hi);
        if (r->dt == TSL_F32) ((float *)r->buf[t])[i] = v;
        else ((double *)r->buf[t])[i] = v;
    }
}

double th_rt_get(const th_rt *r, tsl_tid t, int64_t i) {
    return r->dt == TSL_F32 ? ((const float *)r->buf[t])[i] : ((const double *)r->buf[t])[i];
}

/* Normalised difference of tensor t between two runners (see helpers.h). */
double th_rt_err(const th_rt *a, const th_rt *b, tsl_tid t) {
    double m = 0, s = 1e-30;
    for (int64_t i = 0; i < th_numel(a->g, t); i++) {
        double x = th_rt_get(a, t, i), y = th_rt_get(b, t, i);
        m = fmax(m, fabs(x - y));
        s = fmax(s, fabs(y));
    }
    return m / s;
}

/* Runs ops [first, end) of r, asserting each kernel succeeds (see helpers.h).
 * Precondition: r->g finalized, first <= end <= its op count. */
void th_rt_exec(th_rt *r, int32_t first, int32_t end, int64_t step, int training, int nthreads) {
    for (int32_t i = first; i < end; i++) {
        const tsl_op *op = tsl_graph_op(r->g, i);
        void *in[256], *out[16]; /* CONCAT takes up to 256 inputs */
        for (int j = 0; j < op->n_in; j++) in[j] = r->buf[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = r->buf[op->out[j]];
        size_t ws = tsl_op_workspace(r->g, op);
        void *w = ws ? calloc(1, ws) : NULL;
        tsl_kernel_args a = {.g = r->g, .op = op, .dtype = r->dt, .in = in, .out = out,
                             .workspace = w, .workspace_bytes = ws, .step = step,
                             .nthreads = nthreads, .training = training, .state = NULL};
        tsl_status st = tsl_cpu_ref_kernel(op->type, r->dt)(&a);
        free(w);
        cr_assert_eq(st, TSL_OK, "op '%s': %s", op->name, tsl_last_error());
    }
}

/* Every op of g in f32 with OpenMP at `nthreads`, reset to 1 after. */
static void run_all_f32(th_rt *r, int nthreads) {
    tsl_cpu_set_threads(nthreads);
    th_rt_exec(r, 0, tsl_graph_n_ops(r->g), 1, 1, nthreads);
    tsl_cpu_set_threads(1);
}

/* See helpers.h. Precondition: g finalized, float tensors only but labels. */
void th_check_f32_f64_threads(const tsl_graph *g, uint64_t seed, double tol, const char *label) {
    th_rt *a = th_rt_new(g, TSL_F32), *a2 = th_rt_new(g, TSL_F32), *b2 = th_rt_new(g, TSL_F32);
    th_rt_fill(a, seed), th_rt_fill(a2, seed), th_rt_fill(b2, seed);
    run_all_f32(a, 1);
    run_all_f32(a2, 1);
    run_all_f32(b2, 2);
    th_f64 *d = th_f64_new(g);
    int32_t nt = tsl_graph_n_tensors(g);
    for (int32_t t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_PARAM) th_rt_to_f64(a, t, th_f64_buf(d, t));
    }
    th_f64_run(d, 0, tsl_graph_n_ops(g), 1, 1);
    for (int32_t t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_PARAM) continue;
        size_t n = (size_t)th_numel(g, t);
        double *got = malloc(n * sizeof *got);
        cr_assert(got || n == 0);
        th_rt_to_f64(a, t, got);
        double e = th_norm_err_f64(got, th_f64_buf(d, t), n);
        free(got);
        cr_assert_lt(e, tol, "%s: tensor '%s' f32 vs f64 normalised error %.3e", label, tt->name, e);
        cr_assert_eq(memcmp(a->buf[t], a2->buf[t], tt->nbytes), 0,
                     "%s: tensor '%s' differs between two runs", label, tt->name);
        cr_assert_eq(memcmp(a->buf[t], b2->buf[t], tt->nbytes), 0,
                     "%s: tensor '%s' differs between 1 and 2 threads", label, tt->name);
    }
    th_f64_free(d);
    th_rt_free(a);
    th_rt_free(a2);
    th_rt_free(b2);
}

/* See helpers.h. */

tsl_session_opts th_session_opts(void) {
    tsl_session_opts o = tsl_session_opts_default();
    const char *d = getenv("TSL_TEST_KERNEL_DELAY_US");
    if (d && *d) {
        o.async_compute = 1;
        o.kernel_delay_us = atof(d);
    }
    return o;
}
