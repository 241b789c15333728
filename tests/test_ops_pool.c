/*
 * test_ops_pool.c - the pool op family: MAXPOOL2D, AVGPOOL2D and
 * GLOBAL_AVGPOOL with their backward ops.
 *
 *  - hand-computed oracles anchor the reference kernels (padding as -inf
 *    for max, both count_include_pad modes, first-maximum routing of the
 *    gradient on ties, overlapping windows);
 *  - gradient checks in double against central finite differences;
 *  - float vs double reference, same bits twice and with 1 and 2 threads;
 *  - builder errors name the op, the field and the value.
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

/* ---- small helpers ------------------------------------------------------------ */

static tsl_pool_attr pattr(int kh, int kw, int sh, int sw, int ph, int pw, int incl) {
    tsl_pool_attr a = {0};
    a.kernel_h = kh, a.kernel_w = kw, a.stride_h = sh, a.stride_w = sw;
    a.pad_h = ph, a.pad_w = pw, a.count_include_pad = incl;
    return a;
}

/* Appends the backward of the last op of g for an output gradient `dy`
 * (an INPUT), x being a PARAM so that its gradient is wanted. Returns dx. */
static tsl_tid add_backward(tsl_graph *g, tsl_tid dy) {
    tsl_op op = *tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    tsl_tid ig[1] = {TSL_NONE};
    tsl__op_def(op.type)->backward(g, &op, &dy, ig);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_neq(ig[0], TSL_NONE);
    return ig[0];
}

/* ---- hand-computed oracles --------------------------------------------------------- */

/* x = 1..9 (3x3), 3x3 windows, stride 2, pad 1 -> 2x2 outputs whose windows
 * hold {1,2,4,5}, {2,3,5,6}, {4,5,7,8}, {5,6,8,9}.
 * max: 5 6 8 9 (padding never wins although it is "there").
 * avg, count_include_pad: sums / 9; without: sums / 4 (4 in-bounds each).
 * Backward with dy = ones: max routes 1 to 5, 6, 8, 9; avg spreads 1/9 (1/4)
 * over each window: dx = [1 2 1; 2 4 2; 1 2 1] / 9 (/ 4). */
Test(pool_oracle, overlapping_3x3_s2_p1) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(1, 1, 3, 3), TSL_INIT_NONE);
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(1, 1, 2, 2));
    tsl_tid ym = tsl_maxpool2d(g, "max", x, tsl_pool_ksp(3, 2, 1));
    tsl_tid dxm = add_backward(g, dy);
    tsl_tid ya = tsl_avgpool2d(g, "avg_in", x, pattr(3, 3, 2, 2, 1, 1, 1));
    tsl_tid dxa = add_backward(g, dy);
    tsl_tid ye = tsl_avgpool2d(g, "avg_ex", x, pattr(3, 3, 2, 2, 1, 1, 0));
    tsl_tid dxe = add_backward(g, dy);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const tsl_shape *s = &tsl_graph_tensor(g, ym)->shape;
    cr_assert(s->d[2] == 2 && s->d[3] == 2);
    th_f64 *r = th_f64_new(g);
    double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ones[4] = {1, 1, 1, 1};
    th_f64_set(r, x, xv, 9), th_f64_set(r, dy, ones, 4);
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double yme[4] = {5, 6, 8, 9}, sums[4] = {12, 16, 24, 28}, yae[4], yee[4];
    for (int i = 0; i < 4; i++) yae[i] = sums[i] / 9, yee[i] = sums[i] / 4;
    double dxme[9] = {0, 0, 0, 0, 1, 1, 0, 1, 1}, cover[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    double dxae[9], dxee[9];
    for (int i = 0; i < 9; i++) dxae[i] = cover[i] / 9, dxee[i] = cover[i] / 4;
    th_expect64("max y", th_f64_buf(r, ym), yme, 4);
    th_expect64("max dx", th_f64_buf(r, dxm), dxme, 9);
    th_expect64("avg incl y", th_f64_buf(r, ya), yae, 4);
    th_expect64("avg incl dx", th_f64_buf(r, dxa), dxae, 9);
    th_expect64("avg excl y", th_f64_buf(r, ye), yee, 4);
    th_expect64("avg excl dx", th_f64_buf(r, dxe), dxee, 9);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* Padding counts as -infinity: an all-negative input still pools to its own
 * maximum, never to 0. Ties: x = [7 7 1; 7 7 1], 2x2 windows stride 1: the
 * first window's maximum is its first 7 (0,0); the second window {7,1,7,1}
 * routes to (0,1). dy = [10 20] -> dx = [10 20 0; 0 0 0]. */
Test(pool_oracle, max_negative_padding_and_ties) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(1, 1, 2, 2), TSL_INIT_NONE);
    tsl_tid y = tsl_maxpool2d(g, "neg", x, tsl_pool_ksp(2, 1, 1)); // 3x3 output
    tsl_tid x2 = tsl_param(g, "x2", TSL_SHAPE(1, 1, 2, 3), TSL_INIT_NONE);
    tsl_tid y2 = tsl_maxpool2d(g, "ties", x2, pattr(2, 2, 1, 1, 0, 0, 1));
    tsl_tid dy2 = tsl_input(g, "dy2", TSL_SHAPE(1, 1, 1, 2));
    tsl_tid dx2 = add_backward(g, dy2);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    th_f64 *r = th_f64_new(g);
    double xv[4] = {-4, -3, -2, -1};
    double x2v[6] = {7, 7, 1, 7, 7, 1}, dy2v[2] = {10, 20};
    th_f64_set(r, x, xv, 4), th_f64_set(r, x2, x2v, 6), th_f64_set(r, dy2, dy2v, 2);
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double ye[9] = {-4, -3, -3, -2, -1, -1, -2, -1, -1};
    double y2e[2] = {7, 7}, dx2e[6] = {10, 20, 0, 0, 0, 0};
    th_expect64("max negative", th_f64_buf(r, y), ye, 9);
    th_expect64("max ties y", th_f64_buf(r, y2), y2e, 2);
    th_expect64("max ties dx", th_f64_buf(r, dx2), dx2e, 6);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* Global average pool: channel 0 = [1 2 3 4] -> 2.5, channel 1 =
 * [-1 -1 -1 5] -> 0.5 (2x2 planes). Backward dy = [4, 8] -> 1s and 2s. A
 * non-square 1x2 avg window, stride (1,2), over [1 2 3 4] gives 1.5 3.5. */
Test(pool_oracle, global_avgpool_and_rect_window) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(1, 2, 2, 2), TSL_INIT_NONE);
    tsl_tid y = tsl_global_avgpool(g, "gap", x);
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(1, 2));
    tsl_tid dx = add_backward(g, dy);
    tsl_tid x2 = tsl_input(g, "x2", TSL_SHAPE(1, 1, 1, 4));
    tsl_tid y2 = tsl_avgpool2d(g, "rect", x2, pattr(1, 2, 1, 2, 0, 0, 1));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const tsl_shape *s = &tsl_graph_tensor(g, y)->shape;
    cr_assert(s->ndim == 2 && s->d[0] == 1 && s->d[1] == 2);
    th_f64 *r = th_f64_new(g);
    double xv[8] = {1, 2, 3, 4, -1, -1, -1, 5}, dyv[2] = {4, 8}, x2v[4] = {1, 2, 3, 4};
    th_f64_set(r, x, xv, 8), th_f64_set(r, dy, dyv, 2), th_f64_set(r, x2, x2v, 4);
    th_f64_run(r, 0, tsl_graph_n_ops(g), 1, 1);
    double ye[2] = {2.5, 0.5}, dxe[8] = {1, 1, 1, 1, 2, 2, 2, 2}, y2e[2] = {1.5, 3.5};
    th_expect64("gap y", th_f64_buf(r, y), ye, 2);
    th_expect64("gap dx", th_f64_buf(r, dx), dxe, 8);
    th_expect64("rect y", th_f64_buf(r, y2), y2e, 2);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* ---- shapes and FLOPs --------------------------------------------------------------- */

Test(pool_shapes, known_layers_and_flops) {
    tsl_graph *g = tsl_graph_new("shapes");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 64, 112, 112));
    tsl_tid y = tsl_maxpool2d(g, "maxpool", x, tsl_pool_ksp(3, 2, 1)); /* ResNet: 112 -> 56 */
    const tsl_shape *s = &tsl_graph_tensor(g, y)->shape;
    cr_assert(s->d[0] == 2 && s->d[1] == 64 && s->d[2] == 56 && s->d[3] == 56);
    cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, 0)), 2.0 * 64 * 56 * 56 * 9);
    tsl_tid x2 = tsl_input(g, "x2", TSL_SHAPE(1, 8, 35, 35));
    tsl_tid y2 = tsl_avgpool2d(g, "avg", x2, tsl_pool_ksp(3, 1, 1)); /* Inception: same size */
    s = &tsl_graph_tensor(g, y2)->shape;
    cr_assert(s->d[2] == 35 && s->d[3] == 35);
    tsl_tid y3 = tsl_maxpool2d(g, "red", x2, tsl_pool_ksp(3, 2, 0)); /* 35 -> 17 (floor) */
    s = &tsl_graph_tensor(g, y3)->shape;
    cr_assert(s->d[2] == 17 && s->d[3] == 17);
    tsl_tid y4 = tsl_maxpool2d(g, "rect", x2, pattr(2, 3, 2, 1, 1, 0, 1)); /* 18 x 33 */
    s = &tsl_graph_tensor(g, y4)->shape;
    cr_assert(s->d[2] == 18 && s->d[3] == 33, "%lld x %lld", (long long)s->d[2],
              (long long)s->d[3]);
    tsl_tid y5 = tsl_global_avgpool(g, "gap", x2);
    cr_assert_eq(tsl_op_flops(g, tsl_graph_op(g, 4)), 8.0 * 35 * 35);
    cr_assert_neq(y5, TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    tsl_pool_attr k = tsl_pool_ksp(3, 2, 1);
    cr_assert(k.kernel_w == 3 && k.stride_w == 2 && k.pad_w == 1 && k.count_include_pad == 1);
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_MAXPOOL2D_BWD), "maxpool2d_bwd");
    tsl_graph_free(g);
}

/* ---- gradient checks ---------------------------------------------------------------- */

typedef struct pool_case {
    const char *label;
    tsl_op_type type; /* MAXPOOL2D, AVGPOOL2D or GLOBAL_AVGPOOL */
    int64_t n, c, h, w;
    tsl_pool_attr a;
} pool_case;

static double check_pool(const pool_case *c, uint64_t seed) {
    tsl_graph *g = tsl_graph_new(c->label);
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(c->n, c->c, c->h, c->w), TSL_INIT_NONE);
    tsl_tid y = c->type == TSL_OP_MAXPOOL2D   ? tsl_maxpool2d(g, c->label, x, c->a)
                : c->type == TSL_OP_AVGPOOL2D ? tsl_avgpool2d(g, c->label, x, c->a)
                                              : tsl_global_avgpool(g, c->label, x);
    cr_assert_neq(y, TSL_NONE, "%s: %s", c->label, tsl_last_error());
    if (c->type != TSL_OP_GLOBAL_AVGPOOL) {
        int64_t ho = (c->h + 2 * c->a.pad_h - c->a.kernel_h) / c->a.stride_h + 1;
        int64_t wo = (c->w + 2 * c->a.pad_w - c->a.kernel_w) / c->a.stride_w + 1;
        const tsl_shape *s = &tsl_graph_tensor(g, y)->shape;
        cr_assert(s->d[2] == ho && s->d[3] == wo, "%s: %lldx%lld, expected %lldx%lld", c->label,
                  (long long)s->d[2], (long long)s->d[3], (long long)ho, (long long)wo);
    }
    double e = th_gradcheck(g, 0, 0, &x, 1, seed, NULL, NULL);
    tsl_graph_free(g);
    return e;
}

static const pool_case pool_cases[] = {
    {"max_3x3_s2_p1", TSL_OP_MAXPOOL2D, 2, 3, 7, 5, {3, 3, 2, 2, 1, 1, 1}},
    {"max_2x2_s2", TSL_OP_MAXPOOL2D, 2, 2, 6, 6, {2, 2, 2, 2, 0, 0, 1}},
    {"max_rect_2x3_s12_p11", TSL_OP_MAXPOOL2D, 2, 2, 5, 7, {2, 3, 1, 2, 1, 1, 1}},
    {"max_3x3_s1_p1", TSL_OP_MAXPOOL2D, 1, 2, 5, 4, {3, 3, 1, 1, 1, 1, 1}},
    {"avg_3x3_s2_p1_incl", TSL_OP_AVGPOOL2D, 2, 3, 7, 5, {3, 3, 2, 2, 1, 1, 1}},
    {"avg_3x3_s2_p1_excl", TSL_OP_AVGPOOL2D, 2, 3, 7, 5, {3, 3, 2, 2, 1, 1, 0}},
    {"avg_3x3_s1_p1_incl", TSL_OP_AVGPOOL2D, 1, 2, 5, 6, {3, 3, 1, 1, 1, 1, 1}},
    {"avg_3x2_s21_p10_excl", TSL_OP_AVGPOOL2D, 2, 2, 7, 5, {3, 2, 2, 1, 1, 0, 0}},
    {"avg_2x2_s2", TSL_OP_AVGPOOL2D, 2, 2, 6, 5, {2, 2, 2, 2, 0, 0, 1}},
    {"gap", TSL_OP_GLOBAL_AVGPOOL, 2, 3, 5, 7, {0}},
};

Test(pool_grad, configurations, .timeout = 120) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        double e = check_pool(&pool_cases[i], 300 + i);
        cr_assert_lt(e, 1e-6, "%s: normalised gradient error %.3e", pool_cases[i].label, e);
    }
}

/* ---- backward builder ------------------------------------------------------------------ */

/* A pool over the data input builds nothing; over a parameter path exactly
 * one backward op reading (dy, x) for max and (dy) for avg. */
Test(pool_backward, only_wanted) {
    tsl_graph *g = tsl_graph_new("bw");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 1, 4, 4));
    tsl_maxpool2d(g, "m", x, tsl_pool_ksp(2, 2, 0));
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(1, 1, 2, 2));
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid ig[1] = {TSL_NONE};
    tsl__op_def(TSL_OP_MAXPOOL2D)->backward(g, &op, &dy, ig);
    cr_assert_eq(ig[0], TSL_NONE);
    cr_assert_eq(tsl_graph_n_ops(g), 1);
    tsl_tid p = tsl_param(g, "p", TSL_SHAPE(1, 1, 4, 4), TSL_INIT_NONE);
    tsl_maxpool2d(g, "m2", p, tsl_pool_ksp(2, 2, 0));
    tsl_tid dx = add_backward(g, dy);
    const tsl_op *b = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    cr_assert(b->type == TSL_OP_MAXPOOL2D_BWD && b->n_in == 2 && b->in[0] == dy && b->in[1] == p);
    cr_assert_str_eq(tsl_graph_tensor(g, dx)->name, "m2.dx");
    cr_assert_eq(b->attr.pool.kernel_h, 2);
    tsl_avgpool2d(g, "a", p, tsl_pool_ksp(2, 2, 0));
    add_backward(g, dy);
    b = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    cr_assert(b->type == TSL_OP_AVGPOOL2D_BWD && b->n_in == 1 && b->in[0] == dy);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* ---- float vs double, determinism, threads ------------------------------------------- */

Test(pool_determinism, f32_vs_f64_and_threads, .timeout = 120) {
    int q = th_quick();
    int64_t n = 2, c = q ? 3 : 16, h = q ? 9 : 29, w = q ? 7 : 31;
    tsl_graph *g = tsl_graph_new("det");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(n, c, h, w), TSL_INIT_NONE);
    tsl_pool_attr as[4] = {pattr(3, 3, 2, 2, 1, 1, 1), pattr(3, 3, 2, 2, 1, 1, 1),
                           pattr(3, 3, 2, 2, 1, 1, 0), pattr(3, 2, 1, 2, 1, 1, 1)};
    for (int i = 0; i < 4; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "pool%d", i);
        tsl_tid y = i == 0 ? tsl_maxpool2d(g, nm, x, as[i]) : tsl_avgpool2d(g, nm, x, as[i]);
        snprintf(nm, sizeof nm, "dy%d", i);
        add_backward(g, tsl_input(g, nm, tsl_graph_tensor(g, y)->shape));
    }
    tsl_global_avgpool(g, "gap", x);
    add_backward(g, tsl_input(g, "dyg", TSL_SHAPE(n, c)));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    th_check_f32_f64_threads(g, 5, 1e-5, "det");
    tsl_graph_free(g);
}

/* ---- builder errors --------------------------------------------------------------------- */

static void expect_pool_error(int max, tsl_shape xs, tsl_pool_attr a, const char *const *needles) {
    tsl_graph *g = tsl_graph_new("errs");
    tsl_tid x = tsl_input(g, "feat", xs);
    tsl_tid y = max ? tsl_maxpool2d(g, "pool1", x, a) : tsl_avgpool2d(g, "pool1", x, a);
    th_expect_build_fail(g, y, "the pool builder", needles, SIZE_MAX);
    cr_assert_eq(tsl_global_avgpool(g, "later", x), TSL_NONE); /* sticky */
    tsl_graph_free(g);
}

Test(pool_errors, builder_messages) {
    const char *big[] = {"maxpool2d 'pool1'", "kernel 5x5", "padded input 4x4", "'feat'", NULL};
    expect_pool_error(1, TSL_SHAPE(1, 2, 2, 2), pattr(5, 5, 1, 1, 1, 1, 1), big);
    const char *pad[] = {"avgpool2d 'pool1'", "padding (2,0)", "kernel (3,3)", NULL};
    expect_pool_error(0, TSL_SHAPE(1, 2, 8, 8), pattr(3, 3, 1, 1, 2, 0, 1), pad);
    const char *stride[] = {"maxpool2d 'pool1'", "stride (0,1)", NULL};
    expect_pool_error(1, TSL_SHAPE(1, 2, 8, 8), pattr(2, 2, 0, 1, 0, 0, 1), stride);
    const char *rank[] = {"avgpool2d 'pool1'", "'feat'", "(2,8,8)", NULL};
    expect_pool_error(0, TSL_SHAPE(2, 8, 8), tsl_pool_ksp(2, 2, 0), rank);
    const char *cip[] = {"count_include_pad 7", NULL};
    expect_pool_error(0, TSL_SHAPE(1, 2, 8, 8), pattr(2, 2, 2, 2, 0, 0, 7), cip);

    tsl_graph *g = tsl_graph_new("gap_err");
    tsl_tid x = tsl_input(g, "flat", TSL_SHAPE(4, 10));
    cr_assert_eq(tsl_global_avgpool(g, "gap", x), TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "global_avgpool 'gap'") &&
                  strstr(tsl_last_error(), "(4,10)"),
              "%s", tsl_last_error());
    tsl_graph_free(g);
    g = tsl_graph_new("none");
    cr_assert_eq(tsl_maxpool2d(g, "m", TSL_NONE, tsl_pool_ksp(2, 2, 0)), TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_OK);
    tsl_graph_free(g);
}
