/*
 * test_ops_dense.c - LINEAR and MATMUL: gradients against finite
 * differences (double), forward against hand-computed values and plain
 * loops, float against double, determinism across runs and thread counts,
 * builder validation, FLOP counts and which backward ops are built.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "gradcheck.h"
#include "helpers.h"


/* ---- gradient checks ---------------------------------------------------- */

static double grad_linear(int bias) {
    tsl_graph *g = tsl_graph_new("lin");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(5, 7), TSL_INIT_NONE);
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(4, 7), TSL_INIT_NONE);
    tsl_tid b = bias ? tsl_param(g, "b", TSL_SHAPE(4), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = tsl_linear(g, "fc", x, w, b);
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    tsl_tid xs[3] = {x, w, b};
    double e = th_gradcheck(g, 0, 0, xs, bias ? 3 : 2, 11, NULL, NULL);
    tsl_graph_free(g);
    return e;
}

Test(dense, gradcheck_linear_bias) {
    double e = grad_linear(1);
    cr_assert_lt(e, 1e-6, "linear with bias: normalised gradient error %g", e);
}

Test(dense, gradcheck_linear_no_bias) {
    double e = grad_linear(0);
    cr_assert_lt(e, 1e-6, "linear without bias: normalised gradient error %g", e);
}

static double grad_matmul(int ta, int tb) {
    const int64_t M = 3, K = 5, N = 4;
    tsl_graph *g = tsl_graph_new("mm");
    tsl_tid a = tsl_param(g, "a", ta ? TSL_SHAPE(K, M) : TSL_SHAPE(M, K), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", tb ? TSL_SHAPE(N, K) : TSL_SHAPE(K, N), TSL_INIT_NONE);
    tsl_matmul_attr at = {ta, tb};
    tsl_tid c = tsl_matmul(g, "mm", a, b, at);
    cr_assert_neq(c, TSL_NONE, "%s", tsl_last_error());
    const tsl_tensor *ct = tsl_graph_tensor(g, c);
    cr_assert(ct->shape.ndim == 2 && ct->shape.d[0] == M && ct->shape.d[1] == N);
    tsl_tid xs[2] = {a, b};
    double e = th_gradcheck(g, 0, 0, xs, 2, 5 + (uint64_t)(2 * ta + tb), NULL, NULL);
    tsl_graph_free(g);
    return e;
}

Test(dense, gradcheck_matmul_all_transposes) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            double e = grad_matmul(ta, tb);
            cr_assert_lt(e, 1e-6, "matmul trans_a %d trans_b %d: normalised gradient error %g", ta,
                         tb, e);
        }
}

/* ---- forward oracles ---------------------------------------------------- */

Test(dense, linear_hand_computed) {
    tsl_graph *g = tsl_graph_new("lin");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 2));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(3, 2), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3), TSL_INIT_NONE);
    tsl_tid y = tsl_linear(g, "fc", x, w, b);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    th_rt *r = th_rt_new(g, TSL_F32);
    memcpy(r->buf[x], (float[]){1, 2, 3, 4}, 4 * sizeof(float));
    memcpy(r->buf[w], (float[]){1, 0, 0, 1, 1, 1}, 6 * sizeof(float));
    memcpy(r->buf[b], (float[]){0.5f, -1, 2}, 3 * sizeof(float));
    cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_OK);
    const float want[6] = {1.5f, 1, 5, 3.5f, 3, 9}; /* x w^T + b */
    const float *got = r->buf[y];
    for (int i = 0; i < 6; i++) cr_assert_eq(got[i], want[i], "y[%d] = %g, want %g", i, got[i], want[i]);
    th_rt_free(r);
    tsl_graph_free(g);
}

Test(dense, matmul_against_plain_loop) {
    const int64_t M = 6, K = 9, N = 7;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            tsl_graph *g = tsl_graph_new("mm");
            tsl_tid a = tsl_input(g, "a", ta ? TSL_SHAPE(K, M) : TSL_SHAPE(M, K));
            tsl_tid b = tsl_input(g, "b", tb ? TSL_SHAPE(N, K) : TSL_SHAPE(K, N));
            tsl_tid c = tsl_matmul(g, "mm", a, b, (tsl_matmul_attr){ta, tb});
            cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
            th_rt *r = th_rt_new(g, TSL_F64);
            th_rt_fill(r, 3);
            cr_assert_eq(th_rt_run(r, 0, 1, 1, 1), TSL_OK);
            const double *A = r->buf[a], *B = r->buf[b], *C = r->buf[c];
            double worst = 0;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t k = 0; k < K; k++)
                        s += (ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
                    worst = fmax(worst, fabs(s - C[i * N + j]));
                }
            /* same products summed in the same (ascending k) order: same bits */
            cr_assert_eq(worst, 0.0, "matmul ta %d tb %d: largest difference %g", ta, tb, worst);
            th_rt_free(r);
            tsl_graph_free(g);
        }
}

/* ---- precision and determinism ------------------------------------------ */

/* A graph with a biased linear layer and two matmuls (transposed a, then
 * transposed b), sized so the kernels take their multi-threaded path.
 * Writes the three outputs in outs. */
static tsl_graph *big_graph(tsl_tid outs[3]) {
    int64_t n = th_quick() ? 16 : 48, k = th_quick() ? 64 : 160, m = th_quick() ? 40 : 96;
    tsl_graph *g = tsl_graph_new("big");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(n, k));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(m, k), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(m), TSL_INIT_NONE);
    outs[0] = tsl_linear(g, "fc", x, w, b);                              // (n,m)
    outs[1] = tsl_matmul(g, "mm1", outs[0], x, (tsl_matmul_attr){1, 0}); // (m,n)x(n,k)
    outs[2] = tsl_matmul(g, "mm2", x, outs[1], (tsl_matmul_attr){0, 1}); // (n,k)x(k,m)
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

Test(dense, float_matches_double) {
    tsl_tid outs[3];
    tsl_graph *g = big_graph(outs);
    th_rt *rf = th_rt_new(g, TSL_F32), *rd = th_rt_new(g, TSL_F64);
    th_rt_fill(rf, 17);
    th_rt_copy_leaves_f32_to_f64(rf, rd);
    cr_assert_eq(th_rt_run(rf, 0, 3, 1, 2), TSL_OK);
    cr_assert_eq(th_rt_run(rd, 0, 3, 1, 2), TSL_OK);
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)tsl_shape_numel(&tsl_graph_tensor(g, outs[i])->shape);
        double *f = malloc(n * sizeof *f);
        th_rt_to_f64(rf, outs[i], f);
        double e = th_norm_err_f64(f, rd->buf[outs[i]], n);
        cr_assert_lt(e, 1e-6, "%s: float vs double normalised error %g",
                     tsl_graph_tensor(g, outs[i])->name, e);
        free(f);
    }
    th_rt_free(rf);
    th_rt_free(rd);
    tsl_graph_free(g);
}

Test(dense, same_bits_twice_and_across_threads) {
    tsl_tid outs[3];
    tsl_graph *g = big_graph(outs);
    for (int d = 0; d < 2; d++) {
        tsl_dtype dt = d ? TSL_F64 : TSL_F32;
        th_rt *r1 = th_rt_new(g, dt), *r1b = th_rt_new(g, dt), *r2 = th_rt_new(g, dt);
        th_rt_fill(r1, 23);
        th_rt_fill(r1b, 23);
        th_rt_fill(r2, 23);
        cr_assert_eq(th_rt_run(r1, 0, 3, 1, 1), TSL_OK);
        cr_assert_eq(th_rt_run(r1b, 0, 3, 1, 1), TSL_OK);
        cr_assert_eq(th_rt_run(r2, 0, 3, 1, 2), TSL_OK);
        for (int i = 0; i < 3; i++) {
            const char *nm = tsl_graph_tensor(g, outs[i])->name;
            size_t nb = th_rt_bytes(r1, outs[i]);
            cr_assert_eq(memcmp(r1->buf[outs[i]], r1b->buf[outs[i]], nb), 0,
                         "%s (%s) differs between two runs", nm, tsl_dtype_name(dt));
            cr_assert_eq(memcmp(r1->buf[outs[i]], r2->buf[outs[i]], nb), 0,
                         "%s (%s) differs between 1 and 2 threads", nm, tsl_dtype_name(dt));
        }
        th_rt_free(r1);
        th_rt_free(r1b);
        th_rt_free(r2);
    }
    tsl_cpu_set_threads(1);
    tsl_graph_free(g);
}

/* ---- builders, costs, backward structure ------------------------------- */

Test(dense, builder_errors_name_the_fault) {
    tsl_graph *g = tsl_graph_new("bad");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(4, 5), TSL_INIT_NONE);
    cr_assert_eq(tsl_linear(g, "fc1", x, w, TSL_NONE), TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    const char *m = tsl_last_error();
    cr_assert(strstr(m, "fc1") && strstr(m, "'w'") && strstr(m, "K = 5") && strstr(m, "K = 3"), "%s", m);
    /* sticky: later builders return TSL_NONE */
    cr_assert_eq(tsl_matmul(g, "mm", x, x, (tsl_matmul_attr){0, 1}), TSL_NONE);
    tsl_graph_free(g);

    g = tsl_graph_new("bad2");
    x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3), TSL_INIT_NONE);
    w = tsl_param(g, "w", TSL_SHAPE(4, 3), TSL_INIT_NONE);
    cr_assert_eq(tsl_linear(g, "fc2", x, w, b), TSL_NONE);
    m = tsl_last_error();
    cr_assert(strstr(m, "fc2") && strstr(m, "bias 'b'") && strstr(m, "(3)"), "%s", m);
    tsl_graph_free(g);

    g = tsl_graph_new("bad3");
    x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    tsl_tid z = tsl_input(g, "z", TSL_SHAPE(2, 3));
    cr_assert_eq(tsl_matmul(g, "mm3", x, z, (tsl_matmul_attr){0, 0}), TSL_NONE);
    m = tsl_last_error();
    cr_assert(strstr(m, "mm3") && strstr(m, "inner") && strstr(m, "K = 3") && strstr(m, "K = 2"), "%s", m);
    tsl_graph_free(g);

    g = tsl_graph_new("bad4");
    x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    cr_assert_eq(tsl_matmul(g, "mm4", x, x, (tsl_matmul_attr){2, 0}), TSL_NONE);
    m = tsl_last_error();
    cr_assert(strstr(m, "mm4") && strstr(m, "trans_a = 2"), "%s", m);
    tsl_graph_free(g);

    g = tsl_graph_new("bad5");
    x = tsl_input(g, "x", TSL_SHAPE(2, 3, 4));
    cr_assert_eq(tsl_linear_layer(g, "fc5", x, 8, 1), TSL_NONE);
    m = tsl_last_error();
    cr_assert(strstr(m, "fc5") && strstr(m, "(2,3,4)"), "%s", m);
    tsl_graph_free(g);

    g = tsl_graph_new("bad6");
    x = tsl_input(g, "x", TSL_SHAPE(2, 3));
    cr_assert_eq(tsl_linear_layer(g, "fc6", x, 0, 1), TSL_NONE);
    m = tsl_last_error();
    cr_assert(strstr(m, "fc6") && strstr(m, "= 0"), "%s", m);
    tsl_graph_free(g);
}

Test(dense, linear_layer_params_and_flops) {
    tsl_graph *g = tsl_graph_new("layer");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(8, 20));
    tsl_tid y = tsl_linear_layer(g, "fc", x, 10, 1);
    tsl_tid y2 = tsl_matmul(g, "mm", y, x, (tsl_matmul_attr){1, 0}); // (10,8)x(8,20)
    cr_assert_neq(y2, TSL_NONE, "%s", tsl_last_error());
    tsl_tid w = tsl_graph_find(g, "fc.weight"), b = tsl_graph_find(g, "fc.bias");
    cr_assert(w != TSL_NONE && b != TSL_NONE);
    const tsl_tensor *wt = tsl_graph_tensor(g, w), *bt = tsl_graph_tensor(g, b);
    cr_assert(wt->kind == TSL_KIND_PARAM && wt->init == TSL_INIT_UNIFORM_FANIN);
    cr_assert(wt->shape.ndim == 2 && wt->shape.d[0] == 10 && wt->shape.d[1] == 20);
    cr_assert(bt->kind == TSL_KIND_PARAM && bt->init == TSL_INIT_UNIFORM_FANIN && bt->shape.d[0] == 10);
    cr_assert_eq(tsl_graph_param_count(g), 210);
    const tsl_tensor *yt = tsl_graph_tensor(g, y);
    cr_assert(yt->shape.d[0] == 8 && yt->shape.d[1] == 10 && strcmp(yt->name, "fc") == 0);
    cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, 0)), 2.0 * 8 * 10 * 20 + 8 * 10);
    cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, 1)), 2.0 * 10 * 20 * 8);
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_LINEAR), "linear");
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_MATMUL), "matmul");
    const tsl_tensor *y2t = tsl_graph_tensor(g, y2);
    cr_assert(y2t->shape.d[0] == 10 && y2t->shape.d[1] == 20);
    tsl_graph_free(g);
}

/* The data input gets no gradient: the backward of a first layer builds dw
 * and db only. */
Test(dense, backward_builds_only_wanted_gradients) {
    tsl_graph *g = tsl_graph_new("bw");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(4, 3));
    tsl_tid lab = tsl_label(g, "y", TSL_SHAPE(4));
    tsl_tid logits = tsl_linear_layer(g, "fc", x, 5, 1);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    int n_mm = 0, n_red = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        cr_assert(strcmp(op->name, "fc.dx") != 0, "a gradient of the data input was built");
        if (op->type == TSL_OP_MATMUL) {
            n_mm++;
            cr_assert_str_eq(op->name, "fc.dw");
            cr_assert(op->attr.matmul.trans_a == 1 && op->attr.matmul.trans_b == 0);
        }
        n_red += op->type == TSL_OP_REDUCE_SUM_TO;
    }
    cr_assert_eq(n_mm, 1);
    cr_assert_eq(n_red, 1);
    cr_assert_neq(tsl_graph_tensor(g, tsl_graph_find(g, "fc.weight"))->grad, TSL_NONE);
    cr_assert_neq(tsl_graph_tensor(g, tsl_graph_find(g, "fc.bias"))->grad, TSL_NONE);
    tsl_graph_free(g);
}
