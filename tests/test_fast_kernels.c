/*
 * test_fast_kernels.c - every fast kernel (oneDNN, own loops) against the
 * float reference kernel on the same inputs.
 *
 * Each case builds a tiny graph with the public builders, appends backward
 * ops fed by a random dy through tsl__graph_add_op, fills every leaf with
 * deterministic random values and walks the ops in order. An op with a fast
 * path is run three ways on the same inputs: fast (prepared state, as the
 * executor does), fast again with the same state, and reference. The test
 * asserts
 *   - normalised error max|fast-ref| / max|ref| of every output <= the op's
 *     tolerance (stated in tol_of() below; the measured error is printed),
 *   - the two fast runs are bitwise equal (fixed thread count),
 * then continues with the reference outputs so that later ops see the
 * oracle's values. In-place outputs (batch-norm running statistics) get
 * their own copies for the fast runs.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl_util.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/wgrad_gemm.h"
#include "core/graph_internal.h"
#include "helpers.h"
#include "tensile/session.h"

/* Per-op tolerance on the normalised error against the reference (which
 * sums in double for dense and batch norm, and for the conv filter and bias
 * gradients). The fast kernels sum up to a few thousand float products in
 * an order of oneDNN's choosing; the largest errors measured
 * on these cases were 7.5e-7 (conv bwd data, 7x7 stem), 4.6e-7 (gemm),
 * 3.7e-7 (conv bwd filter), 2.9e-7 (batch-norm bwd), 2.3e-7 (batch norm),
 * 1.2e-7 (avg pool), 0 (max pool and ReLU, which only compare and
 * select). The tolerances
 * leave about a factor 7 above those. */
static double tol_of(tsl_op_type t) {
    switch (t) {
    case TSL_OP_CONV2D:
    case TSL_OP_CONV2D_BWD_DATA:
    case TSL_OP_CONV2D_BWD_FILTER:
    case TSL_OP_CONV2D_TRANSPOSE: return 5e-6;
    case TSL_OP_MAXPOOL2D:
    case TSL_OP_RELU:
    case TSL_OP_RELU_BWD: return 0.0;
    case TSL_OP_AVGPOOL2D:
    case TSL_OP_AVGPOOL2D_BWD: return 1e-6;
    case TSL_OP_BATCHNORM: return 2e-6;
    case TSL_OP_BATCHNORM_BWD: return 5e-6;
    case TSL_OP_LINEAR:
    case TSL_OP_MATMUL: return 5e-6;
    default: return 0.0;
    }
}

/* ---- buffers for every tensor of a graph ------------------------------------ */

typedef struct bufs {
    void **t;
    int32_t n;
} bufs;

/* Allocates every tensor and fills the leaves: INPUT/PARAM/BUFFER uniform in
 * [lo, hi) from seed+id, except running variances in [0.5, 1.5); labels
 * stay 0. */
static int quantize_leaves; /* 1: leaves rounded to multiples of 0.5 (ties, -0) */

static bufs make_bufs(const tsl_graph *g, uint64_t seed, float lo, float hi) {
    bufs b;
    b.n = tsl_graph_n_tensors(g);
    b.t = calloc((size_t)b.n, sizeof *b.t);
    cr_assert(b.t);
    for (tsl_tid i = 0; i < b.n; i++) {
        const tsl_tensor *t = tsl_graph_tensor(g, i);
        b.t[i] = calloc(t->nbytes ? t->nbytes : 1, 1);
        cr_assert(b.t[i]);
        if (t->dtype != TSL_F32) continue;
        size_t n = (size_t)tsl_shape_numel(&t->shape);
        if (t->kind == TSL_KIND_BUFFER && strstr(t->name, "running_var"))
            th_fill_f32(b.t[i], n, seed + (uint64_t)i, 0.5f, 1.5f);
        else if (t->kind == TSL_KIND_INPUT || t->kind == TSL_KIND_PARAM ||
                 t->kind == TSL_KIND_BUFFER)
            th_fill_f32(b.t[i], n, seed + (uint64_t)i, lo, hi);
        if (quantize_leaves && t->kind == TSL_KIND_INPUT)
            for (size_t k = 0; k < n; k++) ((float *)b.t[i])[k] = roundf(((float *)b.t[i])[k] * 2) / 2;
    }
    return b;
}

static void free_bufs(bufs *b) {
    for (int32_t i = 0; i < b->n; i++) free(b->t[i]);
    free(b->t);
}

static size_t numel_of(const tsl_graph *g, tsl_tid t) {
    return (size_t)tsl_shape_numel(&tsl_graph_tensor(g, t)->shape);
}

/* 1 if output j of op is also one of its inputs (in place). */
static int in_place(const tsl_op *op, int j) {
    for (int i = 0; i < op->n_in; i++)
        if (op->in[i] == op->out[j]) return 1;
    return 0;
}

static tsl_kernel_args make_args(const tsl_graph *g, const tsl_op *op, void **in, void **out,
                                 int nthreads, int training) {
    tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F32, .in = in, .out = out,
                         .step = 1, .nthreads = nthreads, .training = training};
    return a;
}

/* One fast run of op into fresh output buffers (outs[j], malloc'd; in-place
 * outputs start from orig[j] and are also the matching input), with the
 * prepared `state` and a workspace of ws bytes. */
static void fast_once(const tsl_graph *g, const tsl_op *op, bufs *b, void **orig, void **outs,
                      void **state, size_t ws, int nthreads, int training) {
    const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(op->type);
    void *in[16], *out[16];
    for (int j = 0; j < op->n_out; j++) {
        size_t nb = tsl_graph_tensor(g, op->out[j])->nbytes;
        outs[j] = malloc(nb);
        cr_assert(outs[j]);
        if (orig[j]) memcpy(outs[j], orig[j], nb);
        else memset(outs[j], 0xA5, nb); /* garbage: the kernel must write everything */
        out[j] = outs[j];
    }
    for (int i = 0; i < op->n_in; i++) {
        in[i] = b->t[op->in[i]];
        for (int j = 0; j < op->n_out; j++)
            if (op->out[j] == op->in[i]) in[i] = outs[j];
    }
    void *w = ws ? malloc(ws) : NULL;
    cr_assert(!ws || w);
    tsl_kernel_args a = make_args(g, op, in, out, nthreads, training);
    a.workspace = w;
    a.workspace_bytes = ws;
    a.state = state;
    tsl_status st = fk->run(&a);
    cr_assert_eq(st, TSL_OK, "fast %s '%s' failed: %s", tsl_op_type_name(op->type), op->name,
                 tsl_last_error());
    free(w);
}

/* Runs op through the reference kernel on the graph's buffers. */
static void ref_once(const tsl_graph *g, const tsl_op *op, bufs *b, int nthreads, int training) {
    void *in[16], *out[16];
    for (int i = 0; i < op->n_in; i++) in[i] = b->t[op->in[i]];
    for (int j = 0; j < op->n_out; j++) out[j] = b->t[op->out[j]];
    size_t ws = tsl_op_workspace(g, op);
    void *w = ws ? malloc(ws) : NULL;
    tsl_kernel_args a = make_args(g, op, in, out, nthreads, training);
    a.workspace = w;
    a.workspace_bytes = ws;
    tsl_status st = tsl_cpu_ref_kernel(op->type, TSL_F32)(&a);
    cr_assert_eq(st, TSL_OK, "ref %s '%s' failed: %s", tsl_op_type_name(op->type), op->name,
                 tsl_last_error());
    free(w);
}

/* Fast vs reference for one op (see the file comment); returns the largest
 * normalised error over its outputs. */
static double check_op(const tsl_graph *g, const tsl_op *op, bufs *b, int nthreads, int training,
                       const char *label) {
    const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(op->type);
    cr_assert(op->n_in <= 16 && op->n_out <= 16);
    void *orig[16] = {0}, *f1[16], *f2[16];
    for (int j = 0; j < op->n_out; j++) {
        if (!in_place(op, j)) continue;
        size_t nb = tsl_graph_tensor(g, op->out[j])->nbytes;
        orig[j] = malloc(nb);
        memcpy(orig[j], b->t[op->out[j]], nb);
    }
    void *state = NULL;
    size_t ws = 0;
    if (fk->prepare) {
        tsl_status st = fk->prepare(g, op, nthreads, &state, &ws);
        cr_assert_eq(st, TSL_OK, "prepare %s: %s", op->name, tsl_last_error());
    }
    fast_once(g, op, b, orig, f1, &state, ws, nthreads, training);
    fast_once(g, op, b, orig, f2, &state, ws, nthreads, training);
    if (fk->release) fk->release(state);
    ref_once(g, op, b, nthreads, training);
    double worst = 0.0;
    for (int j = 0; j < op->n_out; j++) {
        const tsl_tensor *t = tsl_graph_tensor(g, op->out[j]);
        size_t n = numel_of(g, op->out[j]);
        double err = th_norm_err_f32(f1[j], b->t[op->out[j]], n);
        double tol = tol_of(op->type);
        printf("  %-28s %-18s out %d %-22s err %.3e (tol %.0e) threads %d%s\n", label,
               tsl_op_type_name(op->type), j, t->name, err, tol, nthreads,
               training ? "" : " eval");
        cr_expect(err <= tol, "%s: %s output %d (%s): normalised error %.3e > %.0e", label,
                  tsl_op_type_name(op->type), j, t->name, err, tol);
        /* max pooling (fast_pool.c) is the reference bit for bit, signed zeros
         * included; oneDNN's ReLU backward may give -0 where the reference
         * gives +0, so its tolerance 0 is on values only */
        if (op->type == TSL_OP_MAXPOOL2D || op->type == TSL_OP_MAXPOOL2D_BWD)
            cr_expect(memcmp(f1[j], b->t[op->out[j]], t->nbytes) == 0,
                      "%s: %s output %d (%s) is not the reference's bit for bit", label,
                      tsl_op_type_name(op->type), j, t->name);
        cr_expect(memcmp(f1[j], f2[j], t->nbytes) == 0,
                  "%s: %s output %d (%s) differs between two runs with %d threads", label,
                  tsl_op_type_name(op->type), j, t->name, nthreads);
        if (err > worst) worst = err;
        free(f1[j]);
        free(f2[j]);
        free(orig[j]);
    }
    return worst;
}

/* Walks the graph's ops in order: fast-vs-reference for ops with a fast
 * path, reference only for the others. Returns the number of ops checked. */
static int check_graph(const tsl_graph *g, uint64_t seed, int nthreads, int training,
                       const char *label, float lo, float hi) {
    tsl_cpu_set_threads(nthreads);
    bufs b = make_bufs(g, seed, lo, hi);
    int checked = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        if (tsl_cpu_fast_kernel(op->type)->run) {
            check_op(g, op, &b, nthreads, training, label);
            checked++;
        } else {
            ref_once(g, op, &b, nthreads, training);
        }
    }
    free_bufs(&b);
    return checked;
}

static void finalize(tsl_graph *g) {
    tsl_status st = tsl_graph_finalize(g);
    cr_assert_eq(st, TSL_OK, "graph '%s': %s", tsl_graph_name(g), tsl_last_error());
}

/* Appends op `type` (in -> new outputs named name.k with the given shapes). */
static void append(tsl_graph *g, tsl_op_type type, const char *name, const tsl_tid *in, int n_in,
                   const tsl_shape *shapes, int n_out, const void *attr, size_t attr_size) {
    tsl_tid out[4];
    char nb[TSL_NAME_MAX];
    for (int j = 0; j < n_out; j++) {
        snprintf(nb, sizeof nb, "%s.%d", name, j);
        out[j] = tsl__graph_new_tensor(g, nb, shapes[j], TSL_F32);
    }
    int32_t idx = tsl__graph_add_op(g, type, name, in, n_in, out, n_out, attr, attr_size, 0);
    cr_assert(idx >= 0, "append %s: %s", name, tsl_last_error());
}

static tsl_shape shape_of(const tsl_graph *g, tsl_tid t) { return tsl_graph_tensor(g, t)->shape; }

/* ---- conv family ------------------------------------------------------------- */

typedef struct conv_case {
    const char *name;
    int n, cin, h, w, cout, kh, kw;
    int sh, sw, ph, pw, dh, dw, groups, oph, opw;
    int bias;
} conv_case;

/* conv2d (x, w[, b]) -> y, then CONV2D_BWD_DATA (dy, w) -> dx and
 * CONV2D_BWD_FILTER (dy, x) -> dw[, db] with dy a random input. */
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
    finalize(g);
    return g;
}

/* conv2d_transpose (x, w[, b]) -> y, then its backward as ops_conv.c builds
 * it: CONV2D (dy, w) -> dx and CONV2D_BWD_FILTER (x, dy) -> dw. */
static tsl_graph *deconv_graph(const conv_case *c) {
    tsl_graph *g = tsl_graph_new(c->name);
    tsl_conv_attr a = {c->sh, c->sw, c->ph, c->pw, c->dh, c->dw, c->groups, c->oph, c->opw};
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
    finalize(g);
    return g;
}

/* n cin h w cout kh kw | sh sw ph pw dh dw g oph opw | bias */
static const conv_case conv_cases[] = {
    {"3x3 s1 p1 bias 7x5", 3, 3, 7, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"3x3 s2 p1 nobias 7x5", 3, 3, 7, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0},
    {"groups 2", 2, 4, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, 0, 0, 1},
    {"depthwise s2", 3, 5, 9, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1, 5, 0, 0, 1},
    {"depthwise x2 multiplier", 2, 4, 7, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4, 0, 0, 1},
    {"dilation 2", 2, 3, 9, 8, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1, 0, 0, 1},
    {"1x7 p(0,3)", 2, 6, 5, 9, 4, 1, 7, 1, 1, 0, 3, 1, 1, 1, 0, 0, 1},
    {"7x1 p(3,0)", 2, 6, 9, 5, 4, 7, 1, 1, 1, 3, 0, 1, 1, 1, 0, 0, 0},
    {"1x1 s2 8x8 (row left over)", 3, 8, 8, 8, 16, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0, 0},
    {"stride (2,1) dil (1,2)", 2, 4, 11, 10, 6, 3, 3, 2, 1, 1, 2, 1, 2, 2, 0, 0, 1},
    {"16->32 3x3 14x14", 2, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"7x7 s2 p3 3->16 (stem)", 2, 3, 23, 21, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, 0, 0},
    /* small maps: the filter gradient as one product over the batch */
    {"3x3 p1 on 1x1 64->64", 4, 64, 1, 1, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
    {"3x3 s2 p1 on 2x2 32->48", 3, 32, 2, 2, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0},
};

static const conv_case deconv_cases[] = {
    {"T 3x3 s2 p1 op1 bias", 3, 4, 5, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1},
    {"T 2x2 s2 nobias", 2, 6, 4, 5, 4, 2, 2, 2, 2, 0, 0, 1, 1, 1, 0, 0, 0},
    {"T groups 2 s2 op(1,0)", 2, 4, 5, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 0, 1},
    {"T dil 2 s1", 2, 3, 6, 5, 5, 3, 3, 1, 1, 1, 2, 2, 2, 1, 0, 0, 1},
    {"T 4x4 s3 p1 op2", 2, 5, 4, 4, 3, 4, 4, 3, 3, 1, 1, 1, 1, 1, 2, 2, 1},
    {"T depthwise s2", 2, 4, 5, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4, 1, 1, 0},
};

Test(fast_kernels, conv_family) {
    int n = 0;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        if (th_quick() && i >= 7) break;
        tsl_graph *g = conv_graph(&conv_cases[i]);
        n += check_graph(g, 100 + i, 2, 1, conv_cases[i].name, -1.0f, 1.0f);
        tsl_graph_free(g);
    }
    cr_expect(n >= 21, "only %d ops checked", n);
}

/* The filter gradient of a 3x3 pad-1 conv on a 1x1 map: oneDNN 2.6 has no
 * jit kernel for it on AVX2 and the builder replaces its per-image gemm by
 * the batched product (fast_wgrad_gemm.c). Checked against the reference
 * above (conv_family); here: that the replacement is what runs, where
 * oneDNN's choice is known (AVX2 without AVX-512), and that its workspace
 * is the product's. */
Test(fast_kernels, small_map_filter_gradient_is_one_product) {
    conv_case c = {"1x1 map", 4, 64, 1, 1, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1};
    tsl_graph *g = conv_graph(&c);
    const tsl_op *op = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    cr_assert_eq(op->type, TSL_OP_CONV2D_BWD_FILTER);
    const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(op->type);
    void *state = NULL;
    size_t ws = 0;
    cr_assert_eq(fk->prepare(g, op, 1, &state, &ws), TSL_OK, "%s", tsl_last_error());
    const char *impl = tsl__dnnl_impl_name(state);
    printf("  1x1-map filter gradient: %s, workspace %zu bytes\n", impl, ws);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && !__builtin_cpu_supports("avx512f")) {
        cr_expect_str_eq(impl, "gemm:batched");
        cr_expect_eq(ws, tsl__wgrad_gemm_workspace(g, op));
        cr_expect_eq(ws, sizeof(float) * 4 * (64 + 64 * 9));
    } else {
        printf("  (which kernel runs is not checked on this CPU: oneDNN's choice differs)\n");
    }
    fk->release(state);
    tsl_graph_free(g);
}

Test(fast_kernels, conv_transpose) {
    int n = 0;
    for (size_t i = 0; i < sizeof deconv_cases / sizeof deconv_cases[0]; i++) {
        tsl_graph *g = deconv_graph(&deconv_cases[i]);
        n += check_graph(g, 200 + i, 2, 1, deconv_cases[i].name, -1.0f, 1.0f);
        tsl_graph_free(g);
    }
    cr_expect(n == 3 * (int)(sizeof deconv_cases / sizeof deconv_cases[0]));
}

/* ---- pooling ------------------------------------------------------------------- */

typedef struct pool_case {
    const char *name;
    int n, c, h, w, kh, kw, sh, sw, ph, pw, include_pad;
} pool_case;

static const pool_case pool_cases[] = {
    {"2x2 s2 7x5", 3, 3, 7, 5, 2, 2, 2, 2, 0, 0, 1},
    {"3x3 s2 p1 7x5", 3, 3, 7, 5, 3, 3, 2, 2, 1, 1, 1},
    {"3x3 s2 p1 excl", 3, 3, 7, 5, 3, 3, 2, 2, 1, 1, 0},
    {"3x3 s1 p1 excl 6x6", 2, 4, 6, 6, 3, 3, 1, 1, 1, 1, 0},
    {"(3,2) s(2,1) p(1,0)", 2, 5, 8, 7, 3, 2, 2, 1, 1, 0, 1},
    {"2x2 s2 p1 8x9", 2, 3, 8, 9, 2, 2, 2, 2, 1, 1, 0},
    {"2x2 s3 (gaps) 10x11", 2, 3, 10, 11, 2, 2, 3, 3, 0, 0, 1},
    {"1x1 s1", 2, 2, 5, 6, 1, 1, 1, 1, 0, 0, 1},
    {"3x3 s1 p1 wide 3x700 (row chunks)", 1, 2, 3, 700, 3, 3, 1, 1, 1, 1, 1},
};

/* maxpool2d and avgpool2d of x, then MAXPOOL2D_BWD (dy, x) -> dx and
 * AVGPOOL2D_BWD (dy) -> dx. */
static tsl_graph *pool_graph(const pool_case *c) {
    tsl_graph *g = tsl_graph_new(c->name);
    tsl_pool_attr a = {c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, c->include_pad};
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(c->n, c->c, c->h, c->w));
    tsl_tid ym = tsl_maxpool2d(g, "max", x, a);
    tsl_tid ya = tsl_avgpool2d(g, "avg", x, a);
    cr_assert(ym != TSL_NONE && ya != TSL_NONE, "%s: %s", c->name, tsl_last_error());
    tsl_tid dy = tsl_input(g, "dy", shape_of(g, ya));
    tsl_shape xs = shape_of(g, x);
    tsl_tid in_m[2] = {dy, x};
    append(g, TSL_OP_MAXPOOL2D_BWD, "max_bwd", in_m, 2, &xs, 1, &a, sizeof a);
    append(g, TSL_OP_AVGPOOL2D_BWD, "avg_bwd", &dy, 1, &xs, 1, &a, sizeof a);
    finalize(g);
    return g;
}

/* Every case twice: uniform inputs, then inputs rounded to multiples of 0.5
 * (ties between window elements, and -0 beside +0): max pooling must pick
 * the reference's first maximum bit for bit (tolerance 0). */
Test(fast_kernels, pooling) {
    int n = 0;
    for (int q = 0; q < 2; q++)
        for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
            tsl_graph *g = pool_graph(&pool_cases[i]);
            quantize_leaves = q;
            n += check_graph(g, 300 + i, 2, 1, pool_cases[i].name, -1.0f, 1.0f);
            quantize_leaves = 0;
            tsl_graph_free(g);
        }
    cr_expect(n == 2 * 4 * (int)(sizeof pool_cases / sizeof pool_cases[0]));
}

/* ---- batch norm --------------------------------------------------------------- */

/* batchnorm of x (the given shape), then BATCHNORM_BWD (dy, x, gamma,
 * saved_mean, saved_invstd) -> (dx, dgamma, dbeta). */
static tsl_graph *bn_graph(const char *name, tsl_shape xs) {
    tsl_graph *g = tsl_graph_new(name);
    tsl_bn_attr a = {1e-5f, 0.1f};
    tsl_tid x = tsl_input(g, "x", xs);
    tsl_tid y = tsl_batchnorm(g, "bn", x, a);
    cr_assert(y != TSL_NONE, "%s: %s", name, tsl_last_error());
    const tsl_op *f = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    tsl_tid dy = tsl_input(g, "dy", xs);
    tsl_tid in[5] = {dy, x, f->in[1], f->out[1], f->out[2]};
    tsl_shape cs = TSL_SHAPE(xs.d[1]), outs[3] = {xs, cs, cs};
    append(g, TSL_OP_BATCHNORM_BWD, "bn_bwd", in, 5, outs, 3, &a, sizeof a);
    finalize(g);
    return g;
}

Test(fast_kernels, batchnorm_training_and_eval) {
    const tsl_shape shapes[] = {TSL_SHAPE(3, 3, 7, 5), TSL_SHAPE(2, 16, 14, 14), TSL_SHAPE(8, 5),
                                TSL_SHAPE(2, 4, 3, 2, 2), TSL_SHAPE(2, 3, 40, 41)};
    const char *names[] = {"bn (3,3,7,5)", "bn (2,16,14,14)", "bn (8,5)", "bn 5-D",
                           "bn (2,3,40,41) (sums in blocks)"};
    int n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tsl_graph *g = bn_graph(names[i], shapes[i]);
        /* x in [-1, 3): a mean far from 0 tests the variance's cancellation */
        n += check_graph(g, 400 + i, 2, 1, names[i], -1.0f, 3.0f);
        n += check_graph(g, 400 + i, 2, 0, names[i], -1.0f, 3.0f);
        tsl_graph_free(g);
    }
    cr_expect(n == 4 * (int)(sizeof shapes / sizeof shapes[0]));
}

/* ---- relu (oneDNN eltwise) --------------------------------------------------- */

/* relu of x, then RELU_BWD (dy, y) -> dx; y has exact zeros wherever x < 0,
 * so the mask's boundary is exercised. Both must equal the reference
 * numerically (normalised error 0; only the sign of zeros may differ). */
Test(fast_kernels, relu) {
    const tsl_shape shapes[] = {TSL_SHAPE(3, 3, 7, 5), TSL_SHAPE(2, 16, 33, 31), TSL_SHAPE(1)};
    int n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tsl_graph *g = tsl_graph_new("relu");
        tsl_tid x = tsl_input(g, "x", shapes[i]);
        tsl_tid y = tsl_relu(g, "relu", x);
        cr_assert(y != TSL_NONE, "%s", tsl_last_error());
        tsl_tid in[2] = {tsl_input(g, "dy", shapes[i]), y};
        append(g, TSL_OP_RELU_BWD, "relu_bwd", in, 2, &shapes[i], 1, NULL, 0);
        finalize(g);
        n += check_graph(g, 800 + i, 2, 1, "relu", -1.0f, 1.0f);
        tsl_graph_free(g);
    }
    cr_expect(n == 6);
}

/* ---- dense (oneDNN sgemm) ------------------------------------------------------ */

Test(fast_kernels, linear_and_matmul) {
    const int dims[][3] = {{3, 5, 7}, {17, 33, 9}, {64, 128, 100}, {1, 1, 1}};
    int n = 0;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        int64_t N = dims[i][0], K = dims[i][1], M = dims[i][2];
        char nm[64];
        snprintf(nm, sizeof nm, "dense N%lld K%lld M%lld", (long long)N, (long long)K,
                 (long long)M);
        tsl_graph *g = tsl_graph_new(nm);
        tsl_tid x = tsl_input(g, "x", TSL_SHAPE(N, K));
        tsl_tid w = tsl_param(g, "w", TSL_SHAPE(M, K), TSL_INIT_NONE);
        tsl_tid b = tsl_param(g, "b", TSL_SHAPE(M), TSL_INIT_NONE);
        tsl_linear(g, "fc_bias", x, w, b);
        tsl_linear(g, "fc", x, w, TSL_NONE);
        /* every transpose combination of (N,K) x (K,M) */
        tsl_tid a0 = tsl_input(g, "a", TSL_SHAPE(N, K)), a1 = tsl_input(g, "aT", TSL_SHAPE(K, N));
        tsl_tid b0 = tsl_input(g, "bm", TSL_SHAPE(K, M)), b1 = tsl_input(g, "bT", TSL_SHAPE(M, K));
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                char mn[32];
                snprintf(mn, sizeof mn, "mm%d%d", ta, tb);
                tsl_matmul_attr at = {ta, tb};
                tsl_tid c = tsl_matmul(g, mn, ta ? a1 : a0, tb ? b1 : b0, at);
                cr_assert(c != TSL_NONE, "%s: %s", mn, tsl_last_error());
            }
        finalize(g);
        n += check_graph(g, 500 + i, 2, 1, nm, -1.0f, 1.0f);
        tsl_graph_free(g);
    }
    cr_expect(n == 6 * (int)(sizeof dims / sizeof dims[0]));
}

/* ---- thread counts, and the state-less path ---------------------------------------------- */

/* With 1 thread the fast kernels are also deterministic and agree with the
 * reference; and a run without a prepared state (a->state NULL, no
 * workspace) gives the same bits as the prepared run. */
Test(fast_kernels, one_thread_and_stateless) {
    const conv_case c = {"1 thread 8->8 3x3", 2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1};
    tsl_graph *g = conv_graph(&c);
    cr_expect(check_graph(g, 600, 1, 1, c.name, -1.0f, 1.0f) == 3);

    tsl_cpu_set_threads(2);
    bufs b = make_bufs(g, 601, -1.0f, 1.0f);
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(op->type);
        void *orig[16] = {0}, *p[16], *q[16];
        void *state = NULL;
        size_t ws = 0;
        cr_assert_eq(fk->prepare(g, op, 2, &state, &ws), TSL_OK);
        fast_once(g, op, &b, orig, p, &state, ws, 2, 1);
        fk->release(state);
        /* no state slot, no workspace */
        void *in[16], *out[16];
        for (int k = 0; k < op->n_in; k++) in[k] = b.t[op->in[k]];
        for (int j = 0; j < op->n_out; j++) {
            q[j] = calloc(1, tsl_graph_tensor(g, op->out[j])->nbytes);
            out[j] = q[j];
        }
        tsl_kernel_args a = make_args(g, op, in, out, 2, 1);
        cr_assert_eq(fk->run(&a), TSL_OK, "%s", tsl_last_error());
        for (int j = 0; j < op->n_out; j++) {
            cr_expect(memcmp(p[j], q[j], tsl_graph_tensor(g, op->out[j])->nbytes) == 0,
                      "op %s output %d: stateless run differs from the prepared run", op->name, j);
            free(p[j]);
            free(q[j]);
        }
        ref_once(g, op, &b, 2, 1);
    }
    free_bufs(&b);
    tsl_graph_free(g);
}

/* ---- end to end through the executor -------------------------------------------- */

/* A small net that uses every fast op: conv (without bias before the batch
 * norm, whose bias gradient would be pure rounding noise), batch norm, relu,
 * max pool, transposed conv, avg pool, depthwise conv with bias, linear;
 * softmax loss, backward (conv bwd data/filter, bn bwd, avg-pool bwd, ...)
 * and SGD. */
static tsl_graph *fast_net(void) {
    tsl_graph *g = tsl_graph_new("fast_net");
    tsl_bn_attr bn = {1e-5f, 0.1f};
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(4, 3, 12, 12));
    tsl_tid y = tsl_label(g, "label", TSL_SHAPE(4));
    tsl_tid h = tsl_conv2d_layer(g, "c1", x, 8, 3, 3, tsl_conv_sp(1, 1), 0); // (4,8,12,12)
    h = tsl_batchnorm(g, "bn1", h, bn);
    h = tsl_relu(g, "r1", h);
    h = tsl_maxpool2d(g, "mp", h, tsl_pool_ksp(2, 2, 0)); // (4,8,6,6)
    tsl_conv_attr t = tsl_conv_sp(2, 1);
    t.out_pad_h = t.out_pad_w = 1;
    tsl_tid wt = tsl_param(g, "up.weight", TSL_SHAPE(8, 4, 3, 3), TSL_INIT_KAIMING_NORMAL);
    tsl_tid bt = tsl_param(g, "up.bias", TSL_SHAPE(4), TSL_INIT_UNIFORM_FANIN);
    h = tsl_conv2d_transpose(g, "up", h, wt, bt, t); // (4,4,12,12)
    h = tsl_avgpool2d(g, "ap", h, tsl_pool_ksp(3, 2, 1)); // (4,4,6,6)
    tsl_conv_attr dw = tsl_conv_sp(1, 1);
    dw.groups = 4;
    h = tsl_conv2d_layer(g, "dw", h, 4, 3, 3, dw, 1);
    h = tsl_flatten(g, "flat", h); // (4,144)
    tsl_tid logits = tsl_linear_layer(g, "fc", h, 5, 1);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, y);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = tsl_sgd_default(0.05f);
    cr_assert_eq(tsl_graph_optimizer(g, &o), TSL_OK, "%s", tsl_last_error());
    finalize(g);
    return g;
}

static tsl_session *open_session(const tsl_graph *g, tsl_kernel_mode k) {
    tsl_session_opts o = tsl_session_opts_default();
    o.device_memory = 64 << 20;
    o.kernels = k;
    o.nthreads = 2;
    tsl_session *s = NULL;
    cr_assert_eq(tsl_session_new(g, &o, &s), TSL_OK, "%s", tsl_last_error());
    return s;
}

/* Three training steps and one evaluation with the fast kernels and with
 * the reference kernels from the same initial parameters: the losses agree
 * to 1e-5 relative and every parameter and running statistic to 1e-4
 * normalised error; a second fast session gives the same bits. */
Test(fast_kernels, training_steps_match_reference) {
    tsl_graph *g = fast_net();
    tsl_session *f = open_session(g, TSL_KERNELS_FAST), *r = open_session(g, TSL_KERNELS_REF);
    tsl_session *f2 = open_session(g, TSL_KERNELS_FAST);
    float x[4 * 3 * 12 * 12];
    int32_t y[4] = {0, 3, 1, 4};
    for (int step = 0; step < 4; step++) {
        th_fill_f32(x, sizeof x / sizeof x[0], 700 + (uint64_t)step, -1.0f, 2.0f);
        tsl_step_stats sf, sr, s2;
        if (step < 3) {
            cr_assert_eq(tsl_session_step(f, x, y, &sf), TSL_OK, "%s", tsl_last_error());
            cr_assert_eq(tsl_session_step(r, x, y, &sr), TSL_OK, "%s", tsl_last_error());
            cr_assert_eq(tsl_session_step(f2, x, y, &s2), TSL_OK, "%s", tsl_last_error());
        } else {
            cr_assert_eq(tsl_session_eval(f, x, y, &sf), TSL_OK, "%s", tsl_last_error());
            cr_assert_eq(tsl_session_eval(r, x, y, &sr), TSL_OK, "%s", tsl_last_error());
            cr_assert_eq(tsl_session_eval(f2, x, y, &s2), TSL_OK, "%s", tsl_last_error());
        }
        double rel = fabs(sf.loss - sr.loss) / fabs(sr.loss);
        printf("  session %s %d: loss fast %.7f ref %.7f (rel %.2e)\n", step < 3 ? "step" : "eval",
               step + 1, sf.loss, sr.loss, rel);
        cr_expect(rel <= 1e-5, "step %d: fast loss %.9g vs reference %.9g", step + 1, sf.loss,
                  sr.loss);
        cr_expect(sf.loss == s2.loss, "step %d: two fast sessions differ in loss", step + 1);
    }
    cr_expect_eq(tsl_session_param_checksum(f), tsl_session_param_checksum(f2),
                 "two fast sessions end with different parameters");
    double worst = 0.0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (tt->kind != TSL_KIND_PARAM && tt->kind != TSL_KIND_BUFFER) continue;
        size_t n = (size_t)tsl_shape_numel(&tt->shape);
        float *a = malloc(tt->nbytes), *b = malloc(tt->nbytes);
        cr_assert(a && b);
        cr_assert_eq(tsl_session_read(f, t, a), TSL_OK);
        cr_assert_eq(tsl_session_read(r, t, b), TSL_OK);
        double err = th_norm_err_f32(a, b, n);
        if (err > worst) worst = err;
        cr_expect(err <= 1e-4, "%s: normalised error %.3e after 3 steps", tt->name, err);
        free(a);
        free(b);
    }
    printf("  session: largest parameter/statistic error after 3 steps %.3e\n", worst);
    tsl_session_free(f);
    tsl_session_free(f2);
    tsl_session_free(r);
    tsl_graph_free(g);
}
