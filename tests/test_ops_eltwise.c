/*
 * test_ops_eltwise.c - the elementwise family: ADD (broadcast), MUL, RELU,
 * RELU_BWD, REDUCE_SUM_TO, DROPOUT.
 *
 * Gradients against central finite differences in double (th_gradcheck);
 * forwards against hand loops (bit-exact where the order of operations is
 * the same); dropout's counter-based rule, rate, scale, determinism and
 * evaluation mode; bits independent of the thread count; float against
 * double; builder errors that name the op and the value.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/graph_internal.h"
#include "gradcheck.h"
#include "helpers.h"
#include "ops/op_def.h"

/* Index in `small` (which broadcasts to `big`) of element i of `big`. */
static int64_t bcast_index(const tsl_shape *big, const tsl_shape *small, int64_t i) {
    int64_t idx = 0, stride = 1;
    int off = big->ndim - small->ndim;
    for (int k = big->ndim - 1; k >= 0; k--) {
        int64_t c = i % big->d[k];
        i /= big->d[k];
        if (k >= off) {
            int64_t e = small->d[k - off];
            if (e != 1) idx += c * stride;
            stride *= e;
        }
    }
    return idx;
}

/* ---- ADD ----------------------------------------------------------------------- */

/* Patterns of b for a = (2,3,4,5). */
static tsl_shape add_pattern(int k) {
    switch (k) {
    case 0: return TSL_SHAPE(2, 3, 4, 5);  /* same shape */
    case 1: return TSL_SHAPE(1, 3, 1, 1);  /* per channel, NCHW bias */
    case 2: return TSL_SHAPE(3, 1, 1);     /* per channel, lower rank */
    case 3: return TSL_SHAPE(5);           /* per column */
    case 4: return TSL_SHAPE(2, 1, 4, 1);  /* interleaved kept/broadcast */
    case 5: return TSL_SHAPE(1);           /* one element */
    default: return tsl_shape_from(NULL, 0); /* a scalar */
    }
}
#define N_ADD_PATTERNS 7

Test(eltwise, add_gradcheck_broadcast_patterns) {
    for (int k = 0; k < N_ADD_PATTERNS; k++) {
        tsl_graph *g = tsl_graph_new("add_gc");
        tsl_tid a = tsl_param(g, "a", TSL_SHAPE(2, 3, 4, 5), TSL_INIT_NONE);
        tsl_tid b = tsl_param(g, "b", add_pattern(k), TSL_INIT_NONE);
        tsl_tid c = tsl_add(g, "add", a, b);
        cr_assert_neq(c, TSL_NONE, "pattern %d: %s", k, tsl_last_error());
        tsl_tid xs[2] = {a, b};
        double e = th_gradcheck(g, 0, 0, xs, 2, 11 + (uint64_t)k, NULL, NULL);
        cr_assert_lt(e, 1e-6, "add pattern %d: gradcheck error %g", k, e);
        tsl_graph_free(g);
    }
}

Test(eltwise, add_forward_matches_hand_loop) {
    const tsl_shape as = TSL_SHAPE(2, 3, 4, 5);
    for (int k = 0; k < N_ADD_PATTERNS; k++) {
        tsl_shape bs = add_pattern(k);
        tsl_graph *g = tsl_graph_new("add_fwd");
        tsl_tid a = tsl_input(g, "a", as), b = tsl_input(g, "b", bs);
        tsl_tid c = tsl_add(g, "add", a, b);
        cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
        th_rt *r = th_rt_new(g, TSL_F64);
        th_rt_fill_tensor(r, a, 1, -1, 1);
        th_rt_fill_tensor(r, b, 2, -1, 1);
        th_rt_exec(r, 0, 1, 1, 1, 1);
        const double *av = r->buf[a], *bv = r->buf[b], *cv = r->buf[c];
        for (int64_t i = 0; i < tsl_shape_numel(&as); i++) {
            double want = av[i] + bv[bcast_index(&as, &bs, i)];
            cr_assert_eq(cv[i], want, "pattern %d element %lld: %.17g != %.17g", k, (long long)i,
                         cv[i], want);
        }
        th_rt_free(r);
        tsl_graph_free(g);
    }
}

/* Runs ADD's backward builder directly and returns the gradients it gives
 * for (a, b), with `wanted` flags. */
static void add_backward_of(tsl_shape bs, int want_a, int want_b, tsl_tid *da, tsl_tid *db,
                            int32_t *ops_added, tsl_tid *dc_out, tsl_tid *b_out, tsl_graph **gout) {
    tsl_graph *g = tsl_graph_new("add_bwd");
    tsl_tid a = tsl_param(g, "a", TSL_SHAPE(2, 3, 4), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", bs, TSL_INIT_NONE);
    tsl_add(g, "add", a, b);
    tsl_tid dc = tsl_input(g, "dc", TSL_SHAPE(2, 3, 4));
    uint8_t wanted[8] = {0};
    wanted[a] = (uint8_t)want_a;
    wanted[b] = (uint8_t)want_b;
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid og[1] = {dc}, ig[2] = {TSL_NONE, TSL_NONE};
    int32_t n0 = tsl_graph_n_ops(g);
    tsl__graph_set_backward(g, 1, wanted, tsl_graph_n_tensors(g));
    tsl__op_def(TSL_OP_ADD)->backward(g, &op, og, ig);
    tsl__graph_set_backward(g, 0, NULL, 0);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    *da = ig[0];
    *db = ig[1];
    *ops_added = tsl_graph_n_ops(g) - n0;
    *dc_out = dc;
    *b_out = b;
    *gout = g;
}

Test(eltwise, add_backward_passes_the_same_tensor_and_reduces_broadcasts) {
    tsl_tid da, db, dc, b;
    int32_t added;
    tsl_graph *g;
    /* same shape: both gradients are dc itself, no op */
    add_backward_of(TSL_SHAPE(2, 3, 4), 1, 1, &da, &db, &added, &dc, &b, &g);
    cr_assert_eq(da, dc);
    cr_assert_eq(db, dc);
    cr_assert_eq(added, 0);
    tsl_graph_free(g);
    /* broadcast b: da is dc, db one REDUCE_SUM_TO to b's shape */
    add_backward_of(TSL_SHAPE(3, 1), 1, 1, &da, &db, &added, &dc, &b, &g);
    cr_assert_eq(da, dc);
    cr_assert_eq(added, 1);
    const tsl_op *op = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    cr_assert_eq(op->type, TSL_OP_REDUCE_SUM_TO);
    cr_assert_eq(op->in[0], dc);
    cr_assert_eq(op->out[0], db);
    cr_assert(tsl_shape_eq(&tsl_graph_tensor(g, db)->shape, &tsl_graph_tensor(g, b)->shape));
    cr_assert_eq(tsl_graph_tensor(g, db)->kind, TSL_KIND_GRADIENT);
    tsl_graph_free(g);
    /* only a wanted: nothing built for b */
    add_backward_of(TSL_SHAPE(3, 1), 1, 0, &da, &db, &added, &dc, &b, &g);
    cr_assert_eq(da, dc);
    cr_assert_eq(db, TSL_NONE);
    cr_assert_eq(added, 0);
    tsl_graph_free(g);
    /* only b wanted */
    add_backward_of(TSL_SHAPE(4), 0, 1, &da, &db, &added, &dc, &b, &g);
    cr_assert_eq(da, TSL_NONE);
    cr_assert_neq(db, TSL_NONE);
    cr_assert_eq(added, 1);
    tsl_graph_free(g);
}

/* ---- MUL, RELU ------------------------------------------------------------------ */

Test(eltwise, mul_gradcheck) {
    tsl_graph *g = tsl_graph_new("mul_gc");
    tsl_tid a = tsl_param(g, "a", TSL_SHAPE(3, 4, 5), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3, 4, 5), TSL_INIT_NONE);
    cr_assert_neq(tsl_mul(g, "mul", a, b), TSL_NONE, "%s", tsl_last_error());
    tsl_tid xs[2] = {a, b};
    double e = th_gradcheck(g, 0, 0, xs, 2, 5, NULL, NULL);
    cr_assert_lt(e, 1e-6, "mul gradcheck error %g", e);
    tsl_graph_free(g);
}

/* Moves every value of tensor *ctx at least 0.05 away from 0. */
static void away_from_zero(th_f64 *r, void *ctx) {
    tsl_tid x = *(const tsl_tid *)ctx;
    double *v = th_f64_buf(r, x);
    for (int i = 0; i < 2 * 3 * 4 * 5; i++)
        if (fabs(v[i]) < 0.05) v[i] = v[i] < 0 ? v[i] - 0.05 : v[i] + 0.05;
}

Test(eltwise, relu_gradcheck_and_backward_reads_y) {
    tsl_graph *g = tsl_graph_new("relu_gc");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(2, 3, 4, 5), TSL_INIT_NONE);
    tsl_tid y = tsl_relu(g, "relu", x);
    cr_assert_neq(y, TSL_NONE);
    tsl_tid xs[1] = {x};
    double e = th_gradcheck(g, 0, 0, xs, 1, 3, away_from_zero, &x);
    cr_assert_lt(e, 1e-6, "relu gradcheck error %g", e);
    /* the backward op is RELU_BWD (dy, y): it reads the output, not x */
    const tsl_op *bw = tsl_graph_op(g, 1);
    cr_assert_eq(bw->type, TSL_OP_RELU_BWD);
    cr_assert_eq(bw->in[1], y);
    cr_assert_str_eq(tsl_graph_tensor(g, bw->out[0])->name, "relu.dx");
    tsl_graph_free(g);
}

Test(eltwise, relu_and_relu_bwd_values) {
    tsl_graph *g = tsl_graph_new("relu_v");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(6));
    tsl_tid y = tsl_relu(g, "relu", x);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    th_rt *r = th_rt_new(g, TSL_F32);
    float *xv = r->buf[x], *yv = r->buf[y];
    const float in[6] = {-2.0f, -0.0f, 0.0f, 1e-30f, 3.5f, NAN};
    memcpy(xv, in, sizeof in);
    th_rt_exec(r, 0, 1, 1, 1, 1);
    cr_assert_eq(yv[0], 0.0f);
    cr_assert_eq(yv[1], 0.0f);
    cr_assert_eq(yv[2], 0.0f);
    cr_assert_eq(yv[3], 1e-30f);
    cr_assert_eq(yv[4], 3.5f);
    cr_assert(isnan(yv[5]), "relu must propagate NaN, gave %g", (double)yv[5]);
    th_rt_free(r);
    tsl_graph_free(g);
}

/* ---- REDUCE_SUM_TO ------------------------------------------------------------------ */

static tsl_shape rst_pattern(int k) {
    switch (k) {
    case 0: return TSL_SHAPE(1, 3, 1, 1);
    case 1: return TSL_SHAPE(3, 1, 1);
    case 2: return TSL_SHAPE(7);
    case 3: return TSL_SHAPE(4, 1, 6, 1);
    case 4: return TSL_SHAPE(4, 3, 6, 7);
    case 5: return TSL_SHAPE(1, 1, 1, 1);
    case 6: return TSL_SHAPE(6, 7);
    default: return tsl_shape_from(NULL, 0);
    }
}
#define N_RST_PATTERNS 8

Test(eltwise, reduce_sum_to_matches_hand_loop_bit_exact) {
    const tsl_shape xs_ = TSL_SHAPE(4, 3, 6, 7);
    for (int k = 0; k < N_RST_PATTERNS; k++) {
        tsl_shape ys = rst_pattern(k);
        tsl_graph *g = tsl_graph_new("rst");
        tsl_tid x = tsl_input(g, "x", xs_);
        tsl_tid y = tsl_reduce_sum_to(g, "rst", x, ys);
        cr_assert_neq(y, TSL_NONE, "pattern %d: %s", k, tsl_last_error());
        cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
        cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, 0)), (double)tsl_shape_numel(&xs_));
        th_rt *r64 = th_rt_new(g, TSL_F64), *r32 = th_rt_new(g, TSL_F32);
        th_rt_fill_tensor(r64, x, 9, -1, 1);
        th_rt_fill_tensor(r32, x, 9, -1, 1);
        th_rt_exec(r64, 0, 1, 1, 1, 1);
        th_rt_exec(r32, 0, 1, 1, 1, 1);
        /* the hand loop: each output accumulated in double in x's row-major
         * order, which is the order the kernel promises */
        int64_t ny = tsl_shape_numel(&ys);
        double *want = calloc((size_t)ny, sizeof *want);
        for (int64_t i = 0; i < tsl_shape_numel(&xs_); i++)
            want[bcast_index(&xs_, &ys, i)] += th_rt_get(r64, x, i);
        for (int64_t j = 0; j < ny; j++) {
            cr_assert_eq(th_rt_get(r64, y, j), want[j], "f64 pattern %d out %lld: %.17g != %.17g", k,
                         (long long)j, th_rt_get(r64, y, j), want[j]);
            cr_assert_eq((float)th_rt_get(r32, y, j), (float)want[j],
                         "f32 pattern %d out %lld: %.9g != %.9g", k, (long long)j,
                         th_rt_get(r32, y, j), (double)(float)want[j]);
        }
        free(want);
        th_rt_free(r64);
        th_rt_free(r32);
        tsl_graph_free(g);
    }
}

Test(eltwise, reduce_sum_to_has_no_backward) {
    cr_assert_null(tsl__op_def(TSL_OP_REDUCE_SUM_TO)->backward);
    cr_assert_null(tsl__op_def(TSL_OP_RELU_BWD)->backward);
}

/* ---- DROPOUT ------------------------------------------------------------------------ */

/* The rule of the op semantics, written out again independently. */
static double rule_u(uint64_t seed, int64_t step, int64_t i) {
    uint64_t z = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)step) ^
                 (0xD1B54A32D192ED03ull * (uint64_t)i);
    z += 0x9E3779B97F4A7C15ull; /* splitmix64: advance the state, then mix */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

typedef struct drop_run {
    tsl_graph *g;
    tsl_tid x, y, mask;
    th_rt *r;
} drop_run;

static drop_run drop_new(int64_t n, float p, uint64_t seed, tsl_dtype dt) {
    drop_run d;
    d.g = tsl_graph_new("drop");
    d.x = tsl_input(d.g, "x", TSL_SHAPE(n));
    d.y = tsl_dropout(d.g, "drop", d.x, (tsl_dropout_attr){.p = p, .seed = seed});
    cr_assert_neq(d.y, TSL_NONE, "%s", tsl_last_error());
    d.mask = tsl_graph_find(d.g, "drop.mask");
    cr_assert_neq(d.mask, TSL_NONE);
    cr_assert_eq(tsl_graph_finalize(d.g), TSL_OK);
    d.r = th_rt_new(d.g, dt);
    th_rt_fill_tensor(d.r, d.x, 77, -1, 1);
    return d;
}

static void drop_free(drop_run *d) {
    th_rt_free(d->r);
    tsl_graph_free(d->g);
}

Test(eltwise, dropout_follows_the_rule_rate_and_scale) {
    const int64_t n = th_quick() ? (1 << 16) : (1 << 20);
    const float p = 0.3f;
    drop_run d = drop_new(n, p, 1234, TSL_F32);
    th_rt_exec(d.r, 0, 1, 5, 1, 1);
    const float *x = d.r->buf[d.x], *y = d.r->buf[d.y], *m = d.r->buf[d.mask];
    const float scale = (float)(1.0 / (1.0 - (double)p));
    int64_t zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        float want = rule_u(1234, 5, i) >= (double)p ? scale : 0.0f;
        if (m[i] != want)
            cr_assert_fail("mask[%lld] = %.9g, rule gives %.9g", (long long)i, (double)m[i],
                     (double)want);
        if (y[i] != x[i] * m[i])
            cr_assert_fail("y[%lld] = %.9g != x*mask = %.9g", (long long)i, (double)y[i],
                     (double)(x[i] * m[i]));
        zeros += m[i] == 0.0f;
    }
    double frac = (double)zeros / (double)n;
    double sigma = sqrt((double)p * (1 - (double)p) / (double)n);
    cr_assert_lt(fabs(frac - (double)p), 5 * sigma, "zero fraction %.5f, p %.2f (5 sigma = %.5f)",
                 frac, (double)p, 5 * sigma);
    drop_free(&d);
}

Test(eltwise, dropout_same_step_same_mask_other_step_or_seed_differs) {
    const int64_t n = 1 << 14;
    drop_run d = drop_new(n, 0.5f, 42, TSL_F32);
    drop_run e = drop_new(n, 0.5f, 43, TSL_F32);
    float *m1 = malloc((size_t)n * sizeof *m1);
    th_rt_exec(d.r, 0, 1, 7, 1, 1);
    memcpy(m1, d.r->buf[d.mask], (size_t)n * sizeof *m1);
    th_rt_exec(d.r, 0, 1, 7, 1, 1);
    cr_assert_eq(memcmp(m1, d.r->buf[d.mask], (size_t)n * sizeof *m1), 0,
                 "same (seed, step) gave a different mask");
    th_rt_exec(d.r, 0, 1, 8, 1, 1);
    int64_t diff = 0;
    for (int64_t i = 0; i < n; i++) diff += m1[i] != ((float *)d.r->buf[d.mask])[i];
    /* independent masks with p = 0.5 disagree on about half the elements */
    cr_assert(diff > n / 3 && diff < 2 * n / 3, "step 7 vs 8: %lld of %lld differ", (long long)diff,
              (long long)n);
    th_rt_exec(e.r, 0, 1, 7, 1, 1);
    diff = 0;
    for (int64_t i = 0; i < n; i++) diff += m1[i] != ((float *)e.r->buf[e.mask])[i];
    cr_assert(diff > n / 3 && diff < 2 * n / 3, "seed 42 vs 43: %lld of %lld differ",
              (long long)diff, (long long)n);
    free(m1);
    drop_free(&d);
    drop_free(&e);
}

Test(eltwise, dropout_eval_passes_through) {
    const int64_t n = 5000;
    drop_run d = drop_new(n, 0.6f, 9, TSL_F32);
    th_rt_exec(d.r, 0, 1, 3, 0, 1);
    const float *x = d.r->buf[d.x], *y = d.r->buf[d.y], *m = d.r->buf[d.mask];
    cr_assert_eq(memcmp(x, y, (size_t)n * sizeof *x), 0, "eval: y != x");
    for (int64_t i = 0; i < n; i++) cr_assert_eq(m[i], 1.0f, "eval mask[%lld] = %g", (long long)i,
                                                 (double)m[i]);
    drop_free(&d);
}

Test(eltwise, dropout_p_zero_keeps_everything) {
    drop_run d = drop_new(4096, 0.0f, 1, TSL_F64);
    th_rt_exec(d.r, 0, 1, 1, 1, 1);
    const double *x = d.r->buf[d.x], *y = d.r->buf[d.y];
    cr_assert_eq(memcmp(x, y, 4096 * sizeof *x), 0);
    drop_free(&d);
}

Test(eltwise, dropout_gradcheck_and_mask_without_gradient) {
    tsl_graph *g = tsl_graph_new("drop_gc");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(4, 3, 5), TSL_INIT_NONE);
    tsl_tid y = tsl_dropout(g, "drop", x, (tsl_dropout_attr){.p = 0.4f, .seed = 3});
    cr_assert_neq(y, TSL_NONE);
    tsl_tid mask = tsl_graph_find(g, "drop.mask");
    cr_assert_eq(tsl_graph_tensor(g, y)->requires_grad, 1);
    cr_assert_eq(tsl_graph_tensor(g, mask)->requires_grad, 0);
    tsl_tid xs[1] = {x};
    double e = th_gradcheck(g, 0, 0, xs, 1, 21, NULL, NULL);
    cr_assert_lt(e, 1e-6, "dropout gradcheck error %g", e);
    const tsl_op *bw = tsl_graph_op(g, 1);
    cr_assert_eq(bw->type, TSL_OP_MUL);
    cr_assert_eq(bw->in[1], mask);
    tsl_graph_free(g);
}

/* ---- threads, precision, flops ------------------------------------------------------ */

/* A graph with every kernel of the family on tensors large enough for the
 * parallel paths: add (NCHW + C11 bias), mul, relu, relu_bwd (through the
 * backward of relu), reduce_sum_to, dropout. */
typedef struct fam {
    tsl_graph *g;
    tsl_tid in[4];
    int n_in;
} fam;

static fam family_graph(void) {
    fam f;
    f.g = tsl_graph_new("family");
    tsl_graph *g = f.g;
    tsl_tid a = tsl_input(g, "a", TSL_SHAPE(4, 16, 32, 32));
    tsl_tid b = tsl_input(g, "b", TSL_SHAPE(16, 1, 1));
    tsl_tid m = tsl_input(g, "m", TSL_SHAPE(4, 16, 32, 32));
    tsl_tid c = tsl_add(g, "add", a, b);
    tsl_tid d = tsl_mul(g, "mul", c, m);
    tsl_tid r = tsl_relu(g, "relu", d);
    tsl_tid q = tsl_dropout(g, "drop", r, (tsl_dropout_attr){.p = 0.25f, .seed = 5});
    tsl_reduce_sum_to(g, "rst_c", q, TSL_SHAPE(1, 16, 1, 1));
    tsl_reduce_sum_to(g, "rst_w", q, TSL_SHAPE(32));
    tsl_reduce_sum_to(g, "rst_all", q, tsl_shape_from(NULL, 0));
    /* relu_bwd(dy = m, y = r) */
    tsl_tid in[2] = {m, r};
    tsl_tid dx = tsl__graph_new_tensor(g, "relu_bwd", TSL_SHAPE(4, 16, 32, 32), TSL_F32);
    tsl__graph_add_op(g, TSL_OP_RELU_BWD, "relu_bwd", in, 2, &dx, 1, NULL, 0, 0);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    f.in[0] = a;
    f.in[1] = b;
    f.in[2] = m;
    f.n_in = 3;
    return f;
}

Test(eltwise, same_bits_with_1_and_2_threads) {
    fam f = family_graph();
    th_rt *r1 = th_rt_new(f.g, TSL_F32), *r2 = th_rt_new(f.g, TSL_F32);
    for (int i = 0; i < f.n_in; i++) {
        th_rt_fill_tensor(r1, f.in[i], 100 + (uint64_t)i, -1, 1);
        th_rt_fill_tensor(r2, f.in[i], 100 + (uint64_t)i, -1, 1);
    }
    th_rt_exec(r1, 0, tsl_graph_n_ops(f.g), 2, 1, 1);
    th_rt_exec(r2, 0, tsl_graph_n_ops(f.g), 2, 1, 2);
    for (int32_t i = 0; i < tsl_graph_n_ops(f.g); i++) {
        const tsl_op *op = tsl_graph_op(f.g, i);
        for (int j = 0; j < op->n_out; j++) {
            tsl_tid t = op->out[j];
            cr_assert_eq(memcmp(r1->buf[t], r2->buf[t], tsl_graph_tensor(f.g, t)->nbytes), 0,
                         "op '%s' output %d differs between 1 and 2 threads", op->name, j);
        }
    }
    th_rt_free(r1);
    th_rt_free(r2);
    tsl_graph_free(f.g);
}

Test(eltwise, float_and_double_agree) {
    fam f = family_graph();
    th_rt *r32 = th_rt_new(f.g, TSL_F32), *r64 = th_rt_new(f.g, TSL_F64);
    for (int i = 0; i < f.n_in; i++) {
        th_rt_fill_tensor(r32, f.in[i], 200 + (uint64_t)i, -1, 1);
        th_rt_fill_tensor(r64, f.in[i], 200 + (uint64_t)i, -1, 1);
    }
    th_rt_exec(r32, 0, tsl_graph_n_ops(f.g), 4, 1, 2);
    th_rt_exec(r64, 0, tsl_graph_n_ops(f.g), 4, 1, 2);
    for (int32_t i = 0; i < tsl_graph_n_ops(f.g); i++) {
        const tsl_op *op = tsl_graph_op(f.g, i);
        for (int j = 0; j < op->n_out; j++) {
            double e = th_rt_err(r32, r64, op->out[j]);
            cr_assert_lt(e, 1e-6, "op '%s' output %d: f32 vs f64 normalised error %g", op->name,
                         j, e);
        }
    }
    th_rt_free(r32);
    th_rt_free(r64);
    tsl_graph_free(f.g);
}

Test(eltwise, names_and_flops) {
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_ADD), "add");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_MUL), "mul");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_RELU), "relu");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_RELU_BWD), "relu_bwd");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_REDUCE_SUM_TO), "reduce_sum_to");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_DROPOUT), "dropout");
    fam f = family_graph();
    const double n = 4 * 16 * 32 * 32;
    for (int32_t i = 0; i < tsl_graph_n_ops(f.g); i++) {
        const tsl_op *op = tsl_graph_op(f.g, i);
        cr_assert_eq(tsl_op_flops(f.g, op), n, "op '%s': flops %g, expected %g", op->name,
                     tsl_op_flops(f.g, op), n);
    }
    tsl_graph_free(f.g);
}

/* ---- builder errors ------------------------------------------------------------------ */

/* Builds one failing op with fn and checks the status and that the message
 * holds every needle. */
#define EXPECT_FAIL(build, ...)                                                          \
    do {                                                                                 \
        tsl_graph *g = tsl_graph_new("err");                                            \
        tsl_tid a4 = tsl_param(g, "a4", TSL_SHAPE(2, 3, 4, 5), TSL_INIT_NONE);          \
        tsl_tid lab = tsl_label(g, "lab", TSL_SHAPE(2));                                 \
        (void)a4;                                                                        \
        (void)lab;                                                                       \
        const char *needles[] = {__VA_ARGS__};                                           \
        th_expect_build_fail(g, (build), #build, needles, sizeof needles / sizeof *needles); \
        tsl_graph_free(g);                                                               \
    } while (0)

Test(eltwise, builder_errors_name_op_and_value) {
    EXPECT_FAIL(tsl_add(g, "badadd", a4, tsl_param(g, "b", TSL_SHAPE(3, 5), TSL_INIT_NONE)),
                "add 'badadd'", "'b'", "(3,5)", "dim 0", "is 3", "1 or 4");
    EXPECT_FAIL(tsl_add(g, "rk", tsl_param(g, "s", TSL_SHAPE(5), TSL_INIT_NONE), a4), "add 'rk'",
                "rank 4 > rank 1");
    EXPECT_FAIL(tsl_add(g, "lb", lab, lab), "add 'lb'", "'lab'", "i32");
    EXPECT_FAIL(tsl_mul(g, "badmul", a4, tsl_param(g, "b", TSL_SHAPE(2, 3, 4, 1), TSL_INIT_NONE)),
                "mul 'badmul'", "(2,3,4,5)", "(2,3,4,1)");
    EXPECT_FAIL(tsl_relu(g, "r", lab), "relu 'r'", "i32");
    EXPECT_FAIL(tsl_dropout(g, "d1", a4, (tsl_dropout_attr){.p = 1.0f}), "dropout 'd1'",
                "p = 1");
    EXPECT_FAIL(tsl_dropout(g, "d2", a4, (tsl_dropout_attr){.p = -0.5f}), "dropout 'd2'",
                "p = -0.5");
    EXPECT_FAIL(tsl_dropout(g, "d3", a4, (tsl_dropout_attr){.p = NAN}), "dropout 'd3'",
                "p = nan");
    EXPECT_FAIL(tsl_reduce_sum_to(g, "rs", a4, TSL_SHAPE(4, 2)), "reduce_sum_to 'rs'", "(4,2)",
                "dim 1 is 2", "1 or 5");
    EXPECT_FAIL(tsl_reduce_sum_to(g, "rs2", a4, TSL_SHAPE(1, 2, 3, 4, 5)), "reduce_sum_to 'rs2'",
                "rank 5 > rank 4");
}

Test(eltwise, builders_propagate_none_and_keep_first_message) {
    tsl_graph *g = tsl_graph_new("none");
    tsl_tid a = tsl_param(g, "a", TSL_SHAPE(2, 2), TSL_INIT_NONE);
    cr_assert_eq(tsl_add(g, "x", a, TSL_NONE), TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "TSL_NONE input is not itself an error");
    cr_assert_eq(tsl_mul(g, "first", a, tsl_param(g, "b", TSL_SHAPE(3), TSL_INIT_NONE)),
                 TSL_NONE);
    cr_assert_eq(tsl_relu(g, "later", a), TSL_NONE, "a failed graph builds nothing");
    cr_assert(strstr(tsl_last_error(), "mul 'first'"), "%s", tsl_last_error());
    tsl_graph_free(g);
}

Test(eltwise, loss_from_an_eltwise_op_fails_backward_clearly) {
    tsl_graph *g = tsl_graph_new("eltloss");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(1), TSL_INIT_NONE);
    tsl_tid y = tsl_relu(g, "relu", x);
    cr_assert_neq(tsl_graph_backward(g, y), TSL_OK);
    cr_assert(strstr(tsl_last_error(), "'relu'"), "%s", tsl_last_error());
    cr_assert(strstr(tsl_last_error(), "loss"), "%s", tsl_last_error());
    tsl_graph_free(g);
}
