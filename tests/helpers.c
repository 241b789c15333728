/* helpers.c - see helpers.h. */
#include "helpers.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/kernel.h"

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double th_uniform(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * ((double)(splitmix(state) >> 11) * 0x1.0p-53);
}

void th_fill_f32(float *x, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)th_uniform(&seed, lo, hi);
}

void th_fill_f64(double *x, size_t n, uint64_t seed, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = th_uniform(&seed, lo, hi);
}

double th_norm_err_f32(const float *a, const float *b, size_t n) {
    double m = 0, s = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs((double)b[i]) > s) s = fabs((double)b[i]);
    }
    return m / s;
}

double th_norm_err_f64(const double *a, const double *b, size_t n) {
    double m = 0, s = 1e-300;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs(b[i]) > s) s = fabs(b[i]);
    }
    return m / s;
}

int th_quick(void) { return getenv("TSL_TEST_QUICK") != NULL; }

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
