/*
 * test_ops_conv.c - the conv op family: CONV2D (+ BWD_DATA, BWD_FILTER) and
 * CONV2D_TRANSPOSE.
 *
 *  - hand-computed oracles anchor the reference kernels (forward, data and
 *    filter gradients, transposed conv, groups, dilation, padding);
 *  - gradient checks in double against central finite differences over many
 *    configurations (stride, padding, dilation, groups, depthwise, 1x7/7x1,
 *    odd sizes, bias or not, transposed with out_pad);
 *  - float vs double reference, same bits twice and with 1 and 2 threads;
 *  - the backward builders build only the gradients that are wanted;
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

static tsl_conv_attr attr(int sh, int sw, int ph, int pw, int dh, int dw, int g) {
    tsl_conv_attr a = {0};
    a.stride_h = sh, a.stride_w = sw, a.pad_h = ph, a.pad_w = pw;
    a.dil_h = dh, a.dil_w = dw, a.groups = g;
    return a;
}

/* Runs op `i` of finalized g with the f64 reference kernel on buffers `r`. */
static void run_op64(th_f64 *r, int32_t i) { th_f64_run(r, i, i + 1, 1, 1); }

/* ---- hand-computed oracles --------------------------------------------------------- */

/* x (1,1,3,3) = 1..9, w (1,1,2,2) = [1 2; 3 4], b = 0.5:
 * y = [37 47; 67 77] + 0.5. Backward with dy = ones:
 * dx = [1 3 2; 4 10 6; 3 7 4], dw = [12 16; 24 28], db = 4. */
Test(conv_oracle, conv_2x2_forward_and_backward) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(1, 1, 3, 3), TSL_INIT_NONE);
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(1, 1, 2, 2), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(1), TSL_INIT_NONE);
    tsl_tid y = tsl_conv2d(g, "c", x, w, b, tsl_conv_sp(1, 0));
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(1, 1, 2, 2));
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid ig[3] = {TSL_NONE, TSL_NONE, TSL_NONE};
    tsl__op_def(TSL_OP_CONV2D)->backward(g, &op, &dy, ig);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_n_ops(g), 3);
    th_f64 *r = th_f64_new(g);
    double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wv[4] = {1, 2, 3, 4}, bv[1] = {0.5};
    double ones[4] = {1, 1, 1, 1};
    th_f64_set(r, x, xv, 9), th_f64_set(r, w, wv, 4), th_f64_set(r, b, bv, 1), th_f64_set(r, dy, ones, 4);
    th_f64_run(r, 0, 3, 1, 1);
    double ye[4] = {37.5, 47.5, 67.5, 77.5};
    double dxe[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4}, dwe[4] = {12, 16, 24, 28}, dbe[1] = {4};
    th_expect64("y", th_f64_buf(r, y), ye, 4);
    th_expect64("dx", th_f64_buf(r, ig[0]), dxe, 9);
    th_expect64("dw", th_f64_buf(r, ig[1]), dwe, 4);
    th_expect64("db", th_f64_buf(r, ig[2]), dbe, 1);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* 3x3 kernel of ones, stride 2, pad 1 over x = 1..9 (3x3): each output is
 * the sum of the in-bounds part of its window: [12 16; 24 28]. */
Test(conv_oracle, stride2_pad1) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 1, 3, 3));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(1, 1, 3, 3), TSL_INIT_NONE);
    tsl_tid y = tsl_conv2d(g, "c", x, w, TSL_NONE, tsl_conv_sp(2, 1));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const tsl_shape *ys = &tsl_graph_tensor(g, y)->shape;
    cr_assert(ys->d[2] == 2 && ys->d[3] == 2);
    th_f64 *r = th_f64_new(g);
    double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wv[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    th_f64_set(r, x, xv, 9), th_f64_set(r, w, wv, 9);
    run_op64(r, 0);
    double ye[4] = {12, 16, 24, 28};
    th_expect64("y", th_f64_buf(r, y), ye, 4);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* Dilation 2: x (5x5) with x[h][w] = 5h + w, kernel 2x2 dilated to 3x3 with
 * weights [1 10; 100 1000]: y[i][j] = x[i][j] + 10 x[i][j+2] + 100 x[i+2][j]
 * + 1000 x[i+2][j+2], a 3x3 output. */
Test(conv_oracle, dilation2) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 1, 5, 5));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(1, 1, 2, 2), TSL_INIT_NONE);
    tsl_tid y = tsl_conv2d(g, "c", x, w, TSL_NONE, attr(1, 1, 0, 0, 2, 2, 1));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    th_f64 *r = th_f64_new(g);
    double xv[25], wv[4] = {1, 10, 100, 1000}, ye[9];
    for (int i = 0; i < 25; i++) xv[i] = i;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double v = 5 * i + j; /* x[i][j] */
            ye[i * 3 + j] = v + 10 * (v + 2) + 100 * (v + 10) + 1000 * (v + 12);
        }
    th_f64_set(r, x, xv, 25), th_f64_set(r, w, wv, 4);
    run_op64(r, 0);
    th_expect64("y", th_f64_buf(r, y), ye, 9);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* Groups 2 keep channels apart: x channel 0 = 1s, channel 1 = 2s (2x2),
 * w (2,1,1,1) = [3, 5] -> y channel 0 = 3, channel 1 = 10. A 1x2 asymmetric
 * kernel [1, -1] on rows of x = [1 2 4 8] gives the differences -1 -2 -4.
 * Two output channels per group: x = [1, 2] (1x1), w (4,1,1,1) =
 * [3 5 7 11] -> y = [3 5 14 22] (channels 0,1 read x0; 2,3 read x1). */
Test(conv_oracle, groups_and_asymmetric_kernel) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 2, 2, 2));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(2, 1, 1, 1), TSL_INIT_NONE);
    tsl_tid y = tsl_conv2d(g, "c", x, w, TSL_NONE, attr(1, 1, 0, 0, 1, 1, 2));
    tsl_tid x2 = tsl_input(g, "x2", TSL_SHAPE(1, 1, 1, 4));
    tsl_tid w2 = tsl_param(g, "w2", TSL_SHAPE(1, 1, 1, 2), TSL_INIT_NONE);
    tsl_tid y2 = tsl_conv2d(g, "c2", x2, w2, TSL_NONE, tsl_conv_sp(1, 0));
    tsl_tid x3 = tsl_input(g, "x3", TSL_SHAPE(1, 2, 1, 1));
    tsl_tid w3 = tsl_param(g, "w3", TSL_SHAPE(4, 1, 1, 1), TSL_INIT_NONE);
    tsl_tid y3 = tsl_conv2d(g, "c3", x3, w3, TSL_NONE, attr(1, 1, 0, 0, 1, 1, 2));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    th_f64 *r = th_f64_new(g);
    double xv[8] = {1, 1, 1, 1, 2, 2, 2, 2}, wv[2] = {3, 5}, ye[8] = {3, 3, 3, 3, 10, 10, 10, 10};
    double x2v[4] = {1, 2, 4, 8}, w2v[2] = {1, -1}, y2e[3] = {-1, -2, -4};
    double x3v[2] = {1, 2}, w3v[4] = {3, 5, 7, 11}, y3e[4] = {3, 5, 14, 22};
    th_f64_set(r, x, xv, 8), th_f64_set(r, w, wv, 2), th_f64_set(r, x2, x2v, 4), th_f64_set(r, w2, w2v, 2);
    th_f64_set(r, x3, x3v, 2), th_f64_set(r, w3, w3v, 4);
    th_f64_run(r, 0, 3, 1, 1);
    th_expect64("y groups", th_f64_buf(r, y), ye, 8);
    th_expect64("y 1x2", th_f64_buf(r, y2), y2e, 3);
    th_expect64("y groups 2 out per group", th_f64_buf(r, y3), y3e, 4);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* Transposed conv, 2x2 stride 2: each x element stamps a scaled copy of the
 * kernel into its own 2x2 block; x = [1 2; 3 4], w = [1 10; 100 1000], bias
 * 0.25. A 1x3 kernel of ones, stride 1, over x = [1 2] overlaps: [1 3 3 2].
 * Two input channels sum: x = [1, 2] (1x1 each), w (2,1,1,1) = [3, 4] -> 11.
 * Groups 2, PyTorch's (Cin, Cout/g) weight layout: x = [1, 2], w (2,2,1,1) =
 * [3 5; 7 11] -> y = [3 5 14 22] (x0 feeds channels 0,1; x1 feeds 2,3). */
Test(conv_oracle, transpose) {
    tsl_graph *g = tsl_graph_new("oracle");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 1, 2, 2));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(1, 1, 2, 2), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(1), TSL_INIT_NONE);
    tsl_tid y = tsl_conv2d_transpose(g, "t", x, w, b, tsl_conv_sp(2, 0));
    tsl_tid x2 = tsl_input(g, "x2", TSL_SHAPE(1, 1, 1, 2));
    tsl_tid w2 = tsl_param(g, "w2", TSL_SHAPE(1, 1, 1, 3), TSL_INIT_NONE);
    tsl_tid y2 = tsl_conv2d_transpose(g, "t2", x2, w2, TSL_NONE, tsl_conv_sp(1, 0));
    tsl_tid x3 = tsl_input(g, "x3", TSL_SHAPE(1, 2, 1, 1));
    tsl_tid w3 = tsl_param(g, "w3", TSL_SHAPE(2, 1, 1, 1), TSL_INIT_NONE);
    tsl_tid y3 = tsl_conv2d_transpose(g, "t3", x3, w3, TSL_NONE, tsl_conv_sp(1, 0));
    tsl_tid x4 = tsl_input(g, "x4", TSL_SHAPE(1, 2, 1, 1));
    tsl_tid w4 = tsl_param(g, "w4", TSL_SHAPE(2, 2, 1, 1), TSL_INIT_NONE);
    tsl_conv_attr g2 = tsl_conv_sp(1, 0);
    g2.groups = 2;
    tsl_tid y4 = tsl_conv2d_transpose(g, "t4", x4, w4, TSL_NONE, g2);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_tensor(g, y4)->shape.d[1], 4);
    const tsl_shape *ys = &tsl_graph_tensor(g, y)->shape;
    cr_assert(ys->d[1] == 1 && ys->d[2] == 4 && ys->d[3] == 4);
    cr_assert_eq(tsl_graph_tensor(g, y2)->shape.d[3], 4);
    th_f64 *r = th_f64_new(g);
    double xv[4] = {1, 2, 3, 4}, wv[4] = {1, 10, 100, 1000}, bv[1] = {0.25};
    double x2v[2] = {1, 2}, w2v[3] = {1, 1, 1}, x3v[2] = {1, 2}, w3v[2] = {3, 4};
    th_f64_set(r, x, xv, 4), th_f64_set(r, w, wv, 4), th_f64_set(r, b, bv, 1);
    th_f64_set(r, x2, x2v, 2), th_f64_set(r, w2, w2v, 3), th_f64_set(r, x3, x3v, 2), th_f64_set(r, w3, w3v, 2);
    double w4v[4] = {3, 5, 7, 11}, y4e[4] = {3, 5, 14, 22};
    th_f64_set(r, x4, x3v, 2), th_f64_set(r, w4, w4v, 4);
    th_f64_run(r, 0, 4, 1, 1);
    double ye[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) ye[i * 4 + j] = xv[(i / 2) * 2 + j / 2] * wv[(i % 2) * 2 + j % 2] + 0.25;
    double y2e[4] = {1, 3, 3, 2}, y3e[1] = {11};
    th_expect64("y 2x2 s2", th_f64_buf(r, y), ye, 16);
    th_expect64("y overlap", th_f64_buf(r, y2), y2e, 4);
    th_expect64("y channels", th_f64_buf(r, y3), y3e, 1);
    th_expect64("y groups", th_f64_buf(r, y4), y4e, 4);
    th_f64_free(r);
    tsl_graph_free(g);
}

/* ---- output shapes and FLOPs against PyTorch's formulas, on known layers ------------ */

Test(conv_shapes, known_layers_and_flops) {
    tsl_graph *g = tsl_graph_new("shapes");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 3, 224, 224));
    /* ResNet stem: 7x7 s2 p3 -> 112 */
    tsl_tid y = tsl_conv2d_layer(g, "conv1", x, 64, 7, 7, tsl_conv_sp(2, 3), 0);
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    const tsl_shape *s = &tsl_graph_tensor(g, y)->shape;
    cr_assert(s->d[0] == 2 && s->d[1] == 64 && s->d[2] == 112 && s->d[3] == 112);
    const tsl_tensor *w = tsl_graph_tensor(g, tsl_graph_find(g, "conv1.weight"));
    cr_assert(w->kind == TSL_KIND_PARAM && w->init == TSL_INIT_KAIMING_NORMAL);
    cr_assert(w->shape.d[0] == 64 && w->shape.d[1] == 3 && w->shape.d[2] == 7 && w->shape.d[3] == 7);
    cr_assert_eq(tsl_graph_find(g, "conv1.bias"), TSL_NONE);
    double f = tsl_op_flops(g, tsl_graph_op(g, 0));
    cr_assert_eq(f, 2.0 * 2 * 64 * 112 * 112 * 3 * 7 * 7, "flops %g", f);
    /* depthwise 3x3 s2 p1 with bias on 112 -> 56; flops include the bias */
    tsl_conv_attr dw = attr(2, 2, 1, 1, 1, 1, 64);
    tsl_tid y2 = tsl_conv2d_layer(g, "dw", y, 64, 3, 3, dw, 1);
    cr_assert_neq(y2, TSL_NONE, "%s", tsl_last_error());
    s = &tsl_graph_tensor(g, y2)->shape;
    cr_assert(s->d[1] == 64 && s->d[2] == 56 && s->d[3] == 56);
    const tsl_tensor *bt = tsl_graph_tensor(g, tsl_graph_find(g, "dw.bias"));
    cr_assert(bt->init == TSL_INIT_ZERO && bt->shape.ndim == 1 && bt->shape.d[0] == 64);
    cr_assert_eq(tsl_graph_tensor(g, tsl_graph_find(g, "dw.weight"))->shape.d[1], 1);
    f = tsl_op_flops(g, tsl_graph_op(g, 1));
    cr_assert_eq(f, 2.0 * 2 * 64 * 56 * 56 * 1 * 9 + 2.0 * 64 * 56 * 56, "flops %g", f);
    /* dilation 2, pad 2 keeps the size; 1x7 with (0,3) too; 7x1 with (3,0) */
    tsl_tid y3 = tsl_conv2d_layer(g, "dil", y2, 8, 3, 3, attr(1, 1, 2, 2, 2, 2, 1), 0);
    tsl_tid y4 = tsl_conv2d_layer(g, "k17", y3, 8, 1, 7, attr(1, 1, 0, 3, 1, 1, 1), 0);
    tsl_tid y5 = tsl_conv2d_layer(g, "k71", y4, 8, 7, 1, attr(1, 1, 3, 0, 1, 1, 1), 0);
    cr_assert_neq(y5, TSL_NONE, "%s", tsl_last_error());
    s = &tsl_graph_tensor(g, y5)->shape;
    cr_assert(s->d[1] == 8 && s->d[2] == 56 && s->d[3] == 56);
    /* UNet up-conv 2x2 s2: 28 -> 56; 3x3 s2 p1 out_pad 1: 7 -> 14 */
    tsl_tid u = tsl_input(g, "u", TSL_SHAPE(1, 16, 28, 7));
    tsl_tid uw = tsl_param(g, "uw", TSL_SHAPE(16, 8, 2, 2), TSL_INIT_NONE);
    tsl_tid uy = tsl_conv2d_transpose(g, "up", u, uw, TSL_NONE, tsl_conv_sp(2, 0));
    cr_assert_neq(uy, TSL_NONE, "%s", tsl_last_error());
    s = &tsl_graph_tensor(g, uy)->shape;
    cr_assert(s->d[1] == 8 && s->d[2] == 56 && s->d[3] == 14);
    f = tsl_op_flops(g, tsl_graph_op(g, tsl_graph_n_ops(g) - 1));
    cr_assert_eq(f, 2.0 * 16 * 28 * 7 * 8 * 4, "flops %g", f);
    tsl_tid uw2 = tsl_param(g, "uw2", TSL_SHAPE(16, 4, 3, 3), TSL_INIT_NONE);
    tsl_conv_attr ta = tsl_conv_sp(2, 1);
    ta.out_pad_h = ta.out_pad_w = 1;
    tsl_tid uy2 = tsl_conv2d_transpose(g, "up2", u, uw2, TSL_NONE, ta);
    s = &tsl_graph_tensor(g, uy2)->shape;
    cr_assert(s->d[1] == 4 && s->d[2] == 56 && s->d[3] == 14, "got %lld x %lld",
              (long long)s->d[2], (long long)s->d[3]);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_str_eq(tsl_op_type_name(TSL_OP_CONV2D_BWD_FILTER), "conv2d_bwd_filter");
    tsl_graph_free(g);
}

/* ---- gradient checks ------------------------------------------------------------------ */

typedef struct conv_case {
    const char *label;
    int64_t n, cin, h, w, cout;
    int kh, kw;
    tsl_conv_attr a;
    int bias;
} conv_case;

/* Gradient check of one conv (transpose = 0) or transposed conv w.r.t. x, w
 * and (when present) b; also checks the output shape against PyTorch's
 * formula. Returns the worst normalised error. */
static double check_case(const conv_case *c, int transpose, uint64_t seed) {
    tsl_graph *g = tsl_graph_new(c->label);
    int gr = c->a.groups;
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(c->n, c->cin, c->h, c->w), TSL_INIT_NONE);
    tsl_tid w = transpose ? tsl_param(g, "w", TSL_SHAPE(c->cin, c->cout / gr, c->kh, c->kw), TSL_INIT_NONE)
                          : tsl_param(g, "w", TSL_SHAPE(c->cout, c->cin / gr, c->kh, c->kw), TSL_INIT_NONE);
    tsl_tid b = c->bias ? tsl_param(g, "b", TSL_SHAPE(c->cout), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = transpose ? tsl_conv2d_transpose(g, c->label, x, w, b, c->a)
                          : tsl_conv2d(g, c->label, x, w, b, c->a);
    cr_assert_neq(y, TSL_NONE, "%s: %s", c->label, tsl_last_error());
    const tsl_conv_attr *a = &c->a;
    int64_t ho, wo;
    if (transpose) {
        ho = (c->h - 1) * a->stride_h - 2 * a->pad_h + a->dil_h * (c->kh - 1) + a->out_pad_h + 1;
        wo = (c->w - 1) * a->stride_w - 2 * a->pad_w + a->dil_w * (c->kw - 1) + a->out_pad_w + 1;
    } else {
        ho = (c->h + 2 * a->pad_h - a->dil_h * (c->kh - 1) - 1) / a->stride_h + 1;
        wo = (c->w + 2 * a->pad_w - a->dil_w * (c->kw - 1) - 1) / a->stride_w + 1;
    }
    const tsl_shape *ys = &tsl_graph_tensor(g, y)->shape;
    cr_assert(ys->d[0] == c->n && ys->d[1] == c->cout && ys->d[2] == ho && ys->d[3] == wo,
              "%s: output %lldx%lld, expected %lldx%lld", c->label, (long long)ys->d[2],
              (long long)ys->d[3], (long long)ho, (long long)wo);
    tsl_tid xs[3] = {x, w, b};
    double e = th_gradcheck(g, 0, 0, xs, c->bias ? 3 : 2, seed, NULL, NULL);
    tsl_graph_free(g);
    return e;
}

static const conv_case conv_cases[] = {
    {"plain3x3_p1_bias", 2, 3, 7, 5, 4, 3, 3, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 1},
    {"stride2_pad1", 2, 3, 7, 5, 4, 3, 3, {2, 2, 1, 1, 1, 1, 1, 0, 0}, 0},
    {"dil2_pad2_bias", 2, 2, 7, 6, 3, 3, 3, {1, 1, 2, 2, 2, 2, 1, 0, 0}, 1},
    {"groups2_stride2", 2, 4, 7, 5, 6, 3, 3, {2, 2, 1, 1, 1, 1, 2, 0, 0}, 1},
    {"depthwise", 2, 3, 7, 5, 3, 3, 3, {1, 1, 1, 1, 1, 1, 3, 0, 0}, 0},
    {"depthwise_mult2_s2", 2, 3, 6, 7, 6, 3, 3, {2, 2, 1, 1, 1, 1, 3, 0, 0}, 1},
    {"k1x7_p0_3", 2, 2, 5, 9, 3, 1, 7, {1, 1, 0, 3, 1, 1, 1, 0, 0}, 1},
    {"k7x1_p3_0", 2, 2, 9, 5, 3, 7, 1, {1, 1, 3, 0, 1, 1, 1, 0, 0}, 0},
    {"mixed_s21_d12_g2", 2, 4, 7, 9, 2, 3, 2, {2, 1, 1, 0, 1, 2, 2, 0, 0}, 0},
    {"k1x1_s2", 2, 5, 7, 5, 3, 1, 1, {2, 2, 0, 0, 1, 1, 1, 0, 0}, 1},
    {"kernel_fills_padded", 1, 2, 3, 4, 2, 5, 6, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 1},
    {"k7_s2_p3_stem", 1, 3, 9, 11, 2, 7, 7, {2, 2, 3, 3, 1, 1, 1, 0, 0}, 0},
};

Test(conv_grad, conv2d_configurations, .timeout = 120) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        double e = check_case(&conv_cases[i], 0, 100 + i);
        cr_assert_lt(e, 1e-6, "conv %s: normalised gradient error %.3e", conv_cases[i].label, e);
    }
}

static const conv_case transpose_cases[] = {
    {"t_unet_2x2_s2_bias", 2, 4, 3, 5, 3, 2, 2, {2, 2, 0, 0, 1, 1, 1, 0, 0}, 1},
    {"t_3x3_s2_p1_op1", 2, 3, 4, 3, 2, 3, 3, {2, 2, 1, 1, 1, 1, 1, 1, 1}, 0},
    {"t_3x3_s1_p1_bias", 2, 2, 5, 4, 3, 3, 3, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 1},
    {"t_g2_d2_s21_op10", 2, 4, 3, 4, 6, 3, 2, {2, 1, 1, 0, 2, 2, 2, 1, 0}, 1},
    {"t_depthwise_s2", 2, 3, 3, 3, 3, 3, 3, {2, 2, 1, 1, 1, 1, 3, 0, 0}, 0},
    {"t_1x7_p0_3", 1, 2, 3, 5, 2, 1, 7, {1, 1, 0, 3, 1, 1, 1, 0, 0}, 1},
};

Test(conv_grad, conv2d_transpose_configurations, .timeout = 120) {
    for (size_t i = 0; i < sizeof transpose_cases / sizeof transpose_cases[0]; i++) {
        double e = check_case(&transpose_cases[i], 1, 200 + i);
        cr_assert_lt(e, 1e-6, "transpose %s: normalised gradient error %.3e",
                     transpose_cases[i].label, e);
    }
}

/* ---- backward builders: only the wanted gradients ------------------------------------- */

static int count_ops(const tsl_graph *g, tsl_op_type t) {
    int n = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) n += tsl_graph_op(g, i)->type == t;
    return n;
}

/* Data input: no dx (no BWD_DATA op), one BWD_FILTER with dw and db. A
 * frozen weight (a buffer): only BWD_DATA. Nothing wanted: nothing built. */
Test(conv_backward, builds_only_wanted_gradients) {
    tsl_graph *g = tsl_graph_new("bw");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(1, 2, 5, 5));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(3, 2, 3, 3), TSL_INIT_NONE);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(3), TSL_INIT_NONE);
    tsl_conv2d(g, "c", x, w, b, tsl_conv_sp(1, 1));
    tsl_tid dy = tsl_input(g, "dy", TSL_SHAPE(1, 3, 5, 5));
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid ig[3] = {TSL_NONE, TSL_NONE, TSL_NONE};
    tsl__op_def(TSL_OP_CONV2D)->backward(g, &op, &dy, ig);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(ig[0], TSL_NONE);
    cr_assert_eq(count_ops(g, TSL_OP_CONV2D_BWD_DATA), 0);
    cr_assert_eq(count_ops(g, TSL_OP_CONV2D_BWD_FILTER), 1);
    const tsl_op *f = tsl_graph_op(g, 1);
    cr_assert(f->n_out == 2 && f->out[0] == ig[1] && f->out[1] == ig[2]);
    cr_assert(f->in[0] == dy && f->in[1] == x);
    cr_assert_str_eq(tsl_graph_tensor(g, ig[1])->name, "c.dw");
    cr_assert_str_eq(tsl_graph_tensor(g, ig[2])->name, "c.db");

    /* frozen weight, input needs a gradient */
    tsl_tid x2 = tsl_param(g, "x2", TSL_SHAPE(1, 2, 5, 5), TSL_INIT_NONE);
    tsl_tid w2 = tsl_buffer(g, "w2", TSL_SHAPE(3, 2, 3, 3), TSL_INIT_ONE);
    tsl_conv2d(g, "c2", x2, w2, TSL_NONE, tsl_conv_sp(1, 1));
    int32_t n_before = tsl_graph_n_ops(g);
    tsl_op op2 = *tsl_graph_op(g, n_before - 1);
    tsl_tid ig2[2] = {TSL_NONE, TSL_NONE};
    tsl__op_def(TSL_OP_CONV2D)->backward(g, &op2, &dy, ig2);
    cr_assert_eq(tsl_graph_n_ops(g), n_before + 1);
    cr_assert_eq(tsl_graph_op(g, n_before)->type, TSL_OP_CONV2D_BWD_DATA);
    cr_assert_eq(ig2[1], TSL_NONE);
    cr_assert_str_eq(tsl_graph_tensor(g, ig2[0])->name, "c2.dx");
    cr_assert(tsl_shape_eq(&tsl_graph_tensor(g, ig2[0])->shape, &tsl_graph_tensor(g, x2)->shape));

    /* a transposed conv with a frozen weight and a trainable bias: no conv op
     * at all, only the bias sum */
    tsl_tid xt = tsl_input(g, "xt", TSL_SHAPE(1, 2, 3, 3));
    tsl_tid wt = tsl_buffer(g, "wt", TSL_SHAPE(2, 3, 2, 2), TSL_INIT_ONE);
    tsl_tid bt = tsl_param(g, "bt", TSL_SHAPE(3), TSL_INIT_NONE);
    tsl_tid yt = tsl_conv2d_transpose(g, "t", xt, wt, bt, tsl_conv_sp(2, 0));
    tsl_tid dyt = tsl_input(g, "dyt", tsl_graph_tensor(g, yt)->shape);
    n_before = tsl_graph_n_ops(g);
    tsl_op op3 = *tsl_graph_op(g, n_before - 1);
    tsl_tid ig3[3] = {TSL_NONE, TSL_NONE, TSL_NONE};
    tsl__op_def(TSL_OP_CONV2D_TRANSPOSE)->backward(g, &op3, &dyt, ig3);
    cr_assert_eq(tsl_graph_status(g), TSL_OK, "%s", tsl_last_error());
    cr_assert(ig3[0] == TSL_NONE && ig3[1] == TSL_NONE && ig3[2] != TSL_NONE);
    for (int32_t i = n_before; i < tsl_graph_n_ops(g); i++) {
        tsl_op_type ty = tsl_graph_op(g, i)->type;
        cr_assert(ty != TSL_OP_CONV2D && ty != TSL_OP_CONV2D_BWD_FILTER);
    }
    const tsl_tensor *dbt = tsl_graph_tensor(g, ig3[2]);
    cr_assert(dbt->shape.ndim == 1 && dbt->shape.d[0] == 3);
    cr_assert_str_eq(dbt->name, "t.db");
    tsl_graph_free(g);
}

/* Through tsl_graph_backward: the first conv reads the data, so it gets no
 * dx; the second conv's input comes from a parameter path, so it gets one. */
Test(conv_backward, autodiff_skips_data_gradient) {
    tsl_graph *g = tsl_graph_new("ad");
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(2, 1, 6, 6));
    tsl_tid lab = tsl_label(g, "label", TSL_SHAPE(2));
    tsl_tid h = tsl_conv2d_layer(g, "c1", x, 4, 3, 3, tsl_conv_sp(1, 1), 1);
    tsl_tid h2 = tsl_conv2d_layer(g, "c2", h, 3, 3, 3, tsl_conv_sp(2, 1), 0);
    tsl_tid p = tsl_global_avgpool(g, "gap", h2);
    tsl_tid loss = tsl_softmax_xent(g, "loss", p, lab);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_find(g, "c1.dx"), TSL_NONE);
    cr_assert_neq(tsl_graph_find(g, "c2.dx"), TSL_NONE);
    cr_assert_eq(count_ops(g, TSL_OP_CONV2D_BWD_DATA), 1);
    cr_assert_eq(count_ops(g, TSL_OP_CONV2D_BWD_FILTER), 2);
    tsl_tid w1 = tsl_graph_find(g, "c1.weight"), b1 = tsl_graph_find(g, "c1.bias");
    cr_assert_eq(tsl_graph_tensor(g, w1)->grad, tsl_graph_find(g, "c1.dw"));
    cr_assert_eq(tsl_graph_tensor(g, b1)->grad, tsl_graph_find(g, "c1.db"));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* ---- float vs double, determinism, threads -------------------------------------------- */

/* A graph with a conv (or transposed conv) and its whole backward (x, w, b
 * all parameters, dy an input), finalized. */
static tsl_graph *fwd_bwd_graph(const conv_case *c, int transpose) {
    tsl_graph *g = tsl_graph_new(c->label);
    int gr = c->a.groups;
    tsl_tid x = tsl_param(g, "x", TSL_SHAPE(c->n, c->cin, c->h, c->w), TSL_INIT_NONE);
    tsl_tid w = transpose ? tsl_param(g, "w", TSL_SHAPE(c->cin, c->cout / gr, c->kh, c->kw), TSL_INIT_NONE)
                          : tsl_param(g, "w", TSL_SHAPE(c->cout, c->cin / gr, c->kh, c->kw), TSL_INIT_NONE);
    tsl_tid b = c->bias ? tsl_param(g, "b", TSL_SHAPE(c->cout), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = transpose ? tsl_conv2d_transpose(g, "op", x, w, b, c->a)
                          : tsl_conv2d(g, "op", x, w, b, c->a);
    cr_assert_neq(y, TSL_NONE, "%s", tsl_last_error());
    tsl_tid dy = tsl_input(g, "dy", tsl_graph_tensor(g, y)->shape);
    tsl_op op = *tsl_graph_op(g, 0);
    tsl_tid ig[3] = {TSL_NONE, TSL_NONE, TSL_NONE};
    tsl__op_def(op.type)->backward(g, &op, &dy, ig);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

/* f32 reference vs f64 reference on the same (float-representable) inputs,
 * for every computed tensor; then the same bits twice with 1 thread and once
 * with 2 threads. */
static void check_precision_and_determinism(const conv_case *c, int transpose) {
    tsl_graph *g = fwd_bwd_graph(c, transpose);
    th_check_f32_f64_threads(g, 77, 1e-5, c->label);
    tsl_graph_free(g);
}

Test(conv_determinism, f32_vs_f64_and_threads, .timeout = 120) {
    int q = th_quick();
    conv_case cases[] = {
        {"det_g2_s2", 2, 8, q ? 9 : 21, q ? 7 : 19, 6, 3, 3, {2, 2, 1, 1, 1, 1, 2, 0, 0}, 1},
        {"det_dil2", 2, 5, q ? 8 : 17, q ? 9 : 23, 7, 3, 3, {1, 1, 2, 2, 2, 2, 1, 0, 0}, 0},
        {"det_depthwise_1x7", 3, 6, q ? 5 : 15, q ? 9 : 17, 6, 1, 7, {1, 1, 0, 3, 1, 1, 6, 0, 0}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_precision_and_determinism(&cases[i], 0);
    conv_case tcases[] = {
        {"det_t_2x2_s2", 2, 8, q ? 5 : 13, q ? 6 : 11, 4, 2, 2, {2, 2, 0, 0, 1, 1, 1, 0, 0}, 1},
        {"det_t_g2_op1", 2, 6, q ? 4 : 9, q ? 5 : 10, 4, 3, 3, {2, 2, 1, 1, 1, 1, 2, 1, 1}, 1},
    };
    for (size_t i = 0; i < sizeof tcases / sizeof tcases[0]; i++)
        check_precision_and_determinism(&tcases[i], 1);
}

/* ---- builder errors --------------------------------------------------------------------- */

/* Builds with the given shapes and expects TSL_NONE, TSL_ERR_INVALID and a
 * message holding every string of `needles`. */
static void expect_conv_error(int transpose, tsl_shape xs, tsl_shape ws, int64_t bias_n,
                              tsl_conv_attr a, const char *const *needles) {
    tsl_graph *g = tsl_graph_new("errs");
    tsl_tid x = tsl_input(g, "img", xs);
    tsl_tid w = tsl_param(g, "k", ws, TSL_INIT_NONE);
    tsl_tid b = bias_n ? tsl_param(g, "bias", TSL_SHAPE(bias_n), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = transpose ? tsl_conv2d_transpose(g, "layer1.0.conv1", x, w, b, a)
                          : tsl_conv2d(g, "layer1.0.conv1", x, w, b, a);
    th_expect_build_fail(g, y, "the conv builder", needles, SIZE_MAX);
    /* sticky: a later builder returns TSL_NONE */
    cr_assert_eq(tsl_relu(g, "r", x), TSL_NONE);
    tsl_graph_free(g);
}

Test(conv_errors, builder_messages) {
    const char *wrong_channels[] = {"conv2d 'layer1.0.conv1'", "'k'", "dim 1 is 2", "3 channels",
                                    NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(4, 2, 3, 3), 0, tsl_conv_sp(1, 1),
                      wrong_channels);
    const char *groups[] = {"conv2d 'layer1.0.conv1'", "groups 2", "3 channels", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(4, 1, 3, 3), 0,
                      attr(1, 1, 1, 1, 1, 1, 2), groups);
    const char *groups_out[] = {"groups 2", "Cout = 3", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 4, 8, 8), TSL_SHAPE(3, 2, 3, 3), 0,
                      attr(1, 1, 1, 1, 1, 1, 2), groups_out);
    const char *big[] = {"conv2d 'layer1.0.conv1'", "kernel 7x7", "padded input 6x6", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 4, 4), TSL_SHAPE(4, 3, 7, 7), 0, tsl_conv_sp(1, 1), big);
    const char *dil[] = {"dilated 5x5", "padded input 4x4", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 4, 4), TSL_SHAPE(4, 3, 3, 3), 0,
                      attr(1, 1, 0, 0, 2, 2, 1), dil);
    const char *bias[] = {"bias 'bias'", "5 elements", "Cout = 4", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(4, 3, 3, 3), 5, tsl_conv_sp(1, 1), bias);
    const char *stride[] = {"stride (0,1)", NULL};
    expect_conv_error(0, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(4, 3, 3, 3), 0,
                      attr(0, 1, 1, 1, 1, 1, 1), stride);
    const char *rank[] = {"input 'img'", "rank 3", "expected rank 4", NULL};
    expect_conv_error(0, TSL_SHAPE(3, 8, 8), TSL_SHAPE(4, 3, 3, 3), 0, tsl_conv_sp(1, 1), rank);
    const char *tw[] = {"conv2d_transpose 'layer1.0.conv1'", "dim 0 is 4", "3 channels", NULL};
    expect_conv_error(1, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(4, 3, 2, 2), 0, tsl_conv_sp(2, 0), tw);
    tsl_conv_attr op = tsl_conv_sp(2, 1);
    op.out_pad_h = 2;
    const char *top[] = {"conv2d_transpose 'layer1.0.conv1'", "out_pad (2,0)", "stride (2,2)",
                         NULL};
    expect_conv_error(1, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(3, 3, 3, 3), 0, op, top);
    const char *tgroups[] = {"groups 2", "3 channels", NULL};
    expect_conv_error(1, TSL_SHAPE(1, 3, 8, 8), TSL_SHAPE(3, 3, 3, 3), 0,
                      attr(1, 1, 0, 0, 1, 1, 2), tgroups);
}

Test(conv_errors, layer_and_none_propagation) {
    tsl_graph *g = tsl_graph_new("errs");
    tsl_tid x = tsl_input(g, "img", TSL_SHAPE(1, 3, 8, 8));
    tsl_conv_attr a = attr(1, 1, 1, 1, 1, 1, 2);
    cr_assert_eq(tsl_conv2d_layer(g, "stem", x, 4, 3, 3, a, 1), TSL_NONE);
    cr_assert_eq(tsl_graph_status(g), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "conv2d 'stem'") && strstr(tsl_last_error(), "groups 2"),
              "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_find(g, "stem.weight"), TSL_NONE);
    tsl_graph_free(g);
    g = tsl_graph_new("none");
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(4, 3, 3, 3), TSL_INIT_NONE);
    cr_assert_eq(tsl_conv2d(g, "c", TSL_NONE, w, TSL_NONE, tsl_conv_sp(1, 1)), TSL_NONE);
    cr_assert_eq(tsl_conv2d_transpose(g, "t", TSL_NONE, w, TSL_NONE, tsl_conv_sp(1, 1)), TSL_NONE);
    cr_assert_eq(tsl_conv2d_layer(g, "l", TSL_NONE, 4, 3, 3, tsl_conv_sp(1, 1), 0), TSL_NONE);
    tsl_graph_free(g);
}
