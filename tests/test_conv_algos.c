/*
 * test_conv_algos.c - the CPU backend's convolution algorithms
 * (src/backend/cpu/conv_algos.c) against the reference kernel, on the
 * geometries of test_fast_kernels.c's conv cases (stride, padding,
 * dilation, groups, depthwise, bias, rectangular kernels) and on the
 * backward of transposed convolutions (CONV2D and CONV2D_BWD_FILTER with
 * the sides swapped, output padding):
 *
 *   - CONV2D with im2col is bitwise the reference (= direct), at 1 and 3
 *     threads: its sums run in the reference's order (docs/SCHEDULING.md,
 *     "Algorithms");
 *   - CONV2D_BWD_DATA and CONV2D_BWD_FILTER with im2col are within the fast
 *     kernels' tolerance of the reference, bitwise equal across thread
 *     counts and runs, and the bias gradient is bitwise the reference's;
 *   - every kernel writes every output element (outputs start as garbage)
 *     and stays within the workspace tsl_op_algo_workspace gives (a guard
 *     zone after it is checked);
 *   - the backend runs the chosen algorithm through launch_op (ctx.algo)
 *     and sizes it with op_algo_workspace; an algorithm an op has not is
 *     refused with its name.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/graph_internal.h"
#include "helpers.h"
#include "tensile/backend.h"
#include "tensile/backend_cpu.h"

typedef struct conv_case {
    const char *name;
    int n, cin, h, w, cout, kh, kw;
    int sh, sw, ph, pw, dh, dw, groups;
    int bias;
} conv_case;

/* n cin h w cout kh kw | sh sw ph pw dh dw g | bias */
static const conv_case cases[] = {
    {"3x3 s1 p1 bias 7x5", 3, 3, 7, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 s2 p1 nobias 7x5", 3, 3, 7, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},
    {"groups 2", 2, 4, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1},
    {"depthwise s2", 3, 5, 9, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5, 1},
    {"dilation 2", 2, 3, 9, 8, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1},
    {"1x7 p(0,3)", 2, 6, 5, 9, 4, 1, 7, 1, 1, 0, 3, 1, 1, 1, 1},
    {"1x1 s2 8x8", 3, 8, 8, 8, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0},
    {"stride (2,1) dil (1,2)", 2, 4, 11, 10, 6, 3, 3, 2, 1, 1, 2, 1, 2, 2, 1},
    {"16->32 3x3 14x14", 2, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {"7x7 s2 p3 3->16 (stem)", 2, 3, 23, 21, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0},
};

static tsl_shape shape_of(const tsl_graph *g, tsl_tid t) { return tsl_graph_tensor(g, t)->shape; }

static void append(tsl_graph *g, tsl_op_type type, const char *name, const tsl_tid *in, int n_in,
                   const tsl_shape *shapes, int n_out, const void *attr, size_t attr_size) {
    tsl_tid out[4];
    char nb[TSL_NAME_MAX];
    for (int j = 0; j < n_out; j++) {
        snprintf(nb, sizeof nb, "%s.%d", name, j);
        out[j] = tsl__graph_new_tensor(g, nb, shapes[j], TSL_F32);
    }
    cr_assert(tsl__graph_add_op(g, type, name, in, n_in, out, n_out, attr, attr_size, 0) >= 0,
              "append %s: %s", name, tsl_last_error());
}

/* conv (x, w[, b]) -> y; bwd_data (dy, w) -> dx; bwd_filter (dy, x) -> dw[, db]. */
static tsl_graph *conv_graph(const conv_case *c) {
    tsl_graph *g = tsl_graph_new(c->name);
    tsl_conv_attr a = {c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, 0, 0};
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(c->n, c->cin, c->h, c->w));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(c->cout, c->cin / c->groups, c->kh, c->kw),
                          TSL_INIT_NONE);
    tsl_tid b = c->bias ? tsl_param(g, "b", TSL_SHAPE(c->cout), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = tsl_conv2d(g, "conv", x, w, b, a);
    cr_assert(y != TSL_NONE, "%s: %s", c->name, tsl_last_error());
    tsl_tid dy = tsl_input(g, "dy", shape_of(g, y));
    tsl_tid in_d[2] = {dy, w}, in_f[2] = {dy, x};
    tsl_shape xs = shape_of(g, x), fs[2] = {shape_of(g, w), TSL_SHAPE(c->cout)};
    append(g, TSL_OP_CONV2D_BWD_DATA, "bwd_data", in_d, 2, &xs, 1, &a, sizeof a);
    append(g, TSL_OP_CONV2D_BWD_FILTER, "bwd_filter", in_f, 2, fs, c->bias ? 2 : 1, &a, sizeof a);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

/* conv2d_transpose (x, w[, b]) -> y, then its backward as ops_conv.c builds
 * it: CONV2D (dy, w) -> dx and CONV2D_BWD_FILTER (x, dy) -> dw, with the
 * sides swapped (test_fast_kernels.c's deconv cases). */
static tsl_graph *deconv_graph(const conv_case *c, int oph, int opw) {
    tsl_graph *g = tsl_graph_new(c->name);
    tsl_conv_attr a = {c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, oph, opw};
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(c->n, c->cin, c->h, c->w));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(c->cin, c->cout / c->groups, c->kh, c->kw),
                          TSL_INIT_NONE);
    tsl_tid b = c->bias ? tsl_param(g, "b", TSL_SHAPE(c->cout), TSL_INIT_NONE) : TSL_NONE;
    tsl_tid y = tsl_conv2d_transpose(g, "deconv", x, w, b, a);
    cr_assert(y != TSL_NONE, "%s: %s", c->name, tsl_last_error());
    tsl_tid dy = tsl_input(g, "dy", shape_of(g, y));
    tsl_tid in_d[2] = {dy, w}, in_f[2] = {x, dy};
    tsl_shape xs = shape_of(g, x), ws = shape_of(g, w);
    append(g, TSL_OP_CONV2D, "bwd_data", in_d, 2, &xs, 1, &a, sizeof a);
    append(g, TSL_OP_CONV2D_BWD_FILTER, "bwd_filter", in_f, 2, &ws, 1, &a, sizeof a);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

static const conv_case deconv_cases[] = {
    {"T 3x3 s2 p1 op1 bias", 3, 4, 5, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {"T groups 2 s2", 2, 4, 5, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1},
    {"T dil 2 s1", 2, 3, 6, 5, 5, 3, 3, 1, 1, 1, 2, 2, 2, 1, 1},
};

#define GUARD 64 /* bytes after the workspace that no kernel may touch */

/* Runs op with kernel fn and `ws` bytes of workspace into fresh outputs
 * (garbage first), leaf inputs from bufs; returns the outputs (malloc'd). */
static void run(const tsl_graph *g, const tsl_op *op, tsl_kernel_fn fn, size_t ws, void **bufs,
                int nthreads, void **outs) {
    void *in[4], *out[4];
    for (int i = 0; i < op->n_in; i++) in[i] = bufs[op->in[i]];
    for (int j = 0; j < op->n_out; j++) {
        size_t nb = tsl_graph_tensor(g, op->out[j])->nbytes;
        outs[j] = malloc(nb);
        cr_assert(outs[j]);
        memset(outs[j], 0xA5, nb);
        out[j] = outs[j];
    }
    unsigned char *w = malloc(ws + GUARD);
    cr_assert(w);
    memset(w, 0x5A, ws + GUARD);
    tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F32, .in = in, .out = out,
                         .workspace = ws ? w : NULL, .workspace_bytes = ws, .step = 1,
                         .nthreads = nthreads, .training = 1};
    tsl_cpu_set_threads(nthreads);
    cr_assert_eq(fn(&a), TSL_OK, "%s: %s", op->name, tsl_last_error());
    for (size_t k = ws; k < ws + GUARD; k++)
        cr_assert_eq(w[k], 0x5A, "%s: byte %zu after the %zu-byte workspace written", op->name,
                     k - ws, ws);
    free(w);
}

/* Every op of case c: im2col at 1 and 3 threads and direct against the
 * reference. Returns the worst normalised error of the backward ops. */
static double check_graph(tsl_graph *g, const conv_case *c, uint64_t seed);

static double check_case(const conv_case *c, uint64_t seed) {
    return check_graph(conv_graph(c), c, seed);
}

/* Checks every op of g with a menu (g freed). */
static double check_graph(tsl_graph *g, const conv_case *c, uint64_t seed) {
    int32_t nt = tsl_graph_n_tensors(g);
    void **bufs = calloc((size_t)nt, sizeof *bufs);
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *d = tsl_graph_tensor(g, t);
        bufs[t] = malloc(d->nbytes);
        th_fill_f32(bufs[t], (size_t)tsl_shape_numel(&d->shape), seed + (uint64_t)t, -1.0f, 1.0f);
    }
    double worst = 0.0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        if (op->type == TSL_OP_CONV2D_TRANSPOSE) { /* no menu: its reference output feeds none */
            cr_assert_eq(tsl_op_n_algos(op), 1);
            continue;
        }
        cr_assert_eq(tsl_op_n_algos(op), 3);
        cr_assert_str_eq(tsl_op_algo_name(op, TSL_ALGO_IM2COL), "im2col");
        cr_assert_eq(tsl_op_algo_workspace(g, op, TSL_ALGO_DIRECT), 0);
        size_t ws = tsl_op_algo_workspace(g, op, TSL_ALGO_IM2COL);
        void *ref[4], *i1[4], *i3[4], *i3b[4], *dir[4];
        run(g, op, tsl_cpu_ref_kernel(op->type, TSL_F32), tsl_op_workspace(g, op), bufs, 2, ref);
        run(g, op, tsl_cpu_algo_kernel(op->type, TSL_ALGO_DIRECT, TSL_F32), 0, bufs, 2, dir);
        run(g, op, tsl_cpu_algo_kernel(op->type, TSL_ALGO_IM2COL, TSL_F32), ws, bufs, 1, i1);
        run(g, op, tsl_cpu_algo_kernel(op->type, TSL_ALGO_IM2COL, TSL_F32), ws, bufs, 3, i3);
        run(g, op, tsl_cpu_algo_kernel(op->type, TSL_ALGO_IM2COL, TSL_F32), ws, bufs, 3, i3b);
        for (int j = 0; j < op->n_out; j++) {
            const tsl_tensor *t = tsl_graph_tensor(g, op->out[j]);
            size_t n = (size_t)tsl_shape_numel(&t->shape);
            cr_assert(memcmp(dir[j], ref[j], t->nbytes) == 0, "%s %s: direct != reference",
                      c->name, op->name);
            cr_assert(memcmp(i1[j], i3[j], t->nbytes) == 0 &&
                          memcmp(i3[j], i3b[j], t->nbytes) == 0,
                      "%s %s out %d: im2col differs between thread counts or runs", c->name,
                      op->name, j);
            double err = th_norm_err_f32(i1[j], ref[j], n);
            printf("  %-24s %-18s out %d im2col err %.3e (workspace %zu)\n", c->name,
                   tsl_op_type_name(op->type), j, err, ws);
            if (op->type == TSL_OP_CONV2D || j == 1) /* forward, and the bias gradient */
                cr_assert(memcmp(i1[j], ref[j], t->nbytes) == 0,
                          "%s %s out %d: im2col is not bitwise the reference (err %.3e)",
                          c->name, op->name, j, err);
            else {
                cr_assert_leq(err, 5e-6, "%s %s: im2col error %.3e", c->name, op->name, err);
                if (err > worst) worst = err;
            }
            free(ref[j]), free(dir[j]), free(i1[j]), free(i3[j]), free(i3b[j]);
        }
    }
    for (tsl_tid t = 0; t < nt; t++) free(bufs[t]);
    free(bufs);
    tsl_graph_free(g);
    return worst;
}

Test(conv_algos, im2col_and_direct_against_the_reference) {
    double worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = check_case(&cases[i], 1000 + 17 * i);
        if (e > worst) worst = e;
    }
    for (size_t i = 0; i < sizeof deconv_cases / sizeof deconv_cases[0]; i++) {
        double e = check_graph(deconv_graph(&deconv_cases[i], i == 0, i == 0), &deconv_cases[i],
                               3000 + 13 * i);
        if (e > worst) worst = e;
    }
    printf("worst backward error %.3e\n", worst);
    cr_assert_gt(worst, 0.0); /* the backward sums really run in another order */
}

Test(conv_algos, backend_runs_the_chosen_algorithm) {
    tsl_graph *g = conv_graph(&cases[0]);
    tsl_backend *b;
    cr_assert_eq(tsl_cpu_backend_new((size_t)1 << 24, TSL_KERNELS_FAST, 2, &b), TSL_OK);
    cr_assert(b->iface->op_algo_workspace);
    const tsl_op *conv = tsl_graph_op(g, 0), *bd = tsl_graph_op(g, 1);
    size_t ws;
    cr_assert_eq(b->iface->op_algo_workspace(b, g, conv, TSL_ALGO_IM2COL, &ws), TSL_OK);
    cr_assert_eq(ws, tsl_op_algo_workspace(g, conv, TSL_ALGO_IM2COL));
    cr_assert_eq(b->iface->op_algo_workspace(b, g, conv, TSL_ALGO_DIRECT, &ws), TSL_OK);
    cr_assert_eq(ws, 0);
    size_t def, def2;
    cr_assert_eq(b->iface->op_algo_workspace(b, g, bd, 0, &def), TSL_OK);
    cr_assert_eq(b->iface->op_workspace(b, g, bd, &def2), TSL_OK);
    cr_assert_eq(def, def2);
    cr_assert_eq(b->iface->op_algo_workspace(b, g, conv, 3, &ws), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "op 'conv' (conv2d) has no algorithm 3"), "%s",
              tsl_last_error());

    /* y by launch_op with im2col, and by the reference kernel on the host */
    int32_t nt = tsl_graph_n_tensors(g);
    void *host[8] = {0}, *dev[8] = {0};
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *d = tsl_graph_tensor(g, t);
        host[t] = malloc(d->nbytes);
        th_fill_f32(host[t], (size_t)tsl_shape_numel(&d->shape), 7 + (uint64_t)t, -1.0f, 1.0f);
        cr_assert_eq(b->iface->alloc(b, d->nbytes, &dev[t]), TSL_OK);
        cr_assert_eq(tsl_backend_upload(b, dev[t], host[t], d->nbytes), TSL_OK);
    }
    cr_assert_eq(b->iface->op_algo_workspace(b, g, conv, TSL_ALGO_IM2COL, &ws), TSL_OK);
    void *w;
    cr_assert_eq(b->iface->alloc(b, ws, &w), TSL_OK);
    void *in[3] = {dev[conv->in[0]], dev[conv->in[1]], dev[conv->in[2]]}, *out[1] = {dev[conv->out[0]]};
    tsl_run_ctx ctx = {.step = 1, .training = 1, .algo = TSL_ALGO_IM2COL};
    cr_assert_eq(b->iface->launch_op(b, g, conv, in, out, w, &ctx), TSL_OK);
    cr_assert_eq(b->iface->synchronize(b), TSL_OK);
    size_t yb = tsl_graph_tensor(g, conv->out[0])->nbytes;
    void *got = malloc(yb), *want[1];
    cr_assert_eq(tsl_backend_download(b, got, dev[conv->out[0]], yb), TSL_OK);
    run(g, conv, tsl_cpu_ref_kernel(TSL_OP_CONV2D, TSL_F32), 0, host, 2, want);
    cr_assert(memcmp(got, want[0], yb) == 0, "launch_op with im2col is not the reference");
    ctx.algo = 5;
    cr_assert_eq(b->iface->launch_op(b, g, conv, in, out, w, &ctx), TSL_ERR_INVALID);
    free(got);
    free(want[0]);
    b->iface->free(b, w);
    for (tsl_tid t = 0; t < nt; t++) {
        b->iface->free(b, dev[t]);
        free(host[t]);
    }
    tsl_backend_free(b);
    tsl_graph_free(g);
}
