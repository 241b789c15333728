/*
 * fast_dnnl_conv.c - oneDNN primitives of the conv family: CONV2D,
 * CONV2D_BWD_DATA, CONV2D_BWD_FILTER (dw and, with a bias, db) and
 * CONV2D_TRANSPOSE (deconvolution).
 *
 * Layouts at the interface are the graph's plain ones:
 *   x, y           (N,C,H,W)          nchw
 *   conv w         (Cout,Cin/g,KH,KW) oihw; grouped: oneDNN's logical
 *                  (g,Cout/g,Cin/g,KH,KW) goihw is the same bytes
 *   transpose w    (Cin,Cout/g,KH,KW) PyTorch order. oneDNN's deconvolution
 *                  weights are logically (Cout,Cin,KH,KW) [(g,Cout/g,Cin/g,..)
 *                  grouped] with the same no-flip correlation as PyTorch, so
 *                  the bytes are iohw (giohw grouped): input channel
 *                  outermost.
 * oneDNN's dilation is ours minus 1. The right/bottom padding is chosen so
 * that oneDNN's size rule (big - ker_range + pl + pr)/stride + 1 == small
 * holds: symmetric when the floor already makes it hold, else the tight
 * value (a transposed conv with out_pad >= stride).
 */
#include <stdio.h>
#include <string.h>

#include "backend/cpu/dnnl_util.h"
#include "backend/cpu/wgrad_gemm.h"
#include "core/assert.h"

typedef struct conv_md {
    dnnl_memory_desc_t x, w, b, y; /* the graph's plain layouts; b only if with bias */
    dnnl_memory_desc_t ax, aw, ay; /* the same dims, format_any: the primitive chooses */
    dnnl_dims_t strides, dil, pl, pr;
} conv_md;

/* md with plain's dims and data type, layout left to the primitive. */
static int any_of(dnnl_memory_desc_t *md, const dnnl_memory_desc_t *plain) {
    return dnnl_memory_desc_init_by_tag(md, plain->ndims, plain->dims, plain->data_type,
                                        dnnl_format_tag_any) == dnnl_success;
}

/* The layout pd chose for one argument (what = dnnl_query_*_md). */
static const dnnl_memory_desc_t *chosen(const_dnnl_primitive_desc_t pd, dnnl_query_t what) {
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

/* Right padding for one spatial dim, where `big` is the size on the
 * convolution's input side and `small` on its output side. Returns 0 if no
 * padding satisfies oneDNN's rule (the caller falls back). */
static int pad_right(int64_t big, int64_t small, int64_t k, int64_t dil, int64_t stride,
                     int64_t pl, int64_t *pr) {
    int64_t kr = (k - 1) * dil + 1;
    int64_t cand[2] = {pl, (small - 1) * stride + kr - big - pl};
    for (int i = 0; i < 2; i++) {
        int64_t num = big - kr + pl + cand[i];
        if (cand[i] + stride > 0 && num >= 0 && num / stride + 1 == small) {
            *pr = cand[i];
            return 1;
        }
    }
    return 0;
}

/* Fills the memory descriptors and geometry of a convolution between the
 * conv-input-side tensor xs (N,Cin,H,W), the output-side tensor ys
 * (N,Cout,Ho,Wo) and weights ws, for a plain conv (transpose 0: ws is
 * (Cout,Cin/g,KH,KW)) or a transposed one (transpose 1: x and y are then the
 * deconvolution's src and dst, ws is (Cin,Cout/g,KH,KW)). Returns 0 if the
 * shapes are outside what the builder handles (not 4-D, inconsistent) or
 * where the reference kernel is faster (depthwise); the caller then falls
 * back to the reference kernel. */
static int conv_geometry(const tsl_conv_attr *at, const tsl_shape *xs, const tsl_shape *ws,
                         const tsl_shape *ys, int bias, int transpose, conv_md *c) {
    if (xs->ndim != 4 || ws->ndim != 4 || ys->ndim != 4 || at->groups < 1) return 0;
    int64_t g = at->groups, cin = xs->d[1], cout = ys->d[1];
    if (cin % g || cout % g || xs->d[0] != ys->d[0]) return 0;
    /* Depthwise (one channel per group on both sides): oneDNN's plain-layout
     * path (im2col+gemm) is 2-4x slower than the reference loops; its
     * blocked jit_dw kernel is 2-3x faster than them but needs the blocked
     * copies of x and y as workspace (12.3 MiB at (32,64,28,28), 3x3), for
     * an op of a few ms that the reference runs with none. The reference
     * serves it (bench_kernels). */
    if (g > 1 && cin / g == 1 && cout / g == 1) return 0;
    int64_t kh = ws->d[2], kw = ws->d[3];
    int64_t s[2] = {at->stride_h, at->stride_w}, d[2] = {at->dil_h, at->dil_w};
    int64_t p[2] = {at->pad_h, at->pad_w}, k[2] = {kh, kw};
    for (int i = 0; i < 2; i++) {
        if (s[i] < 1 || d[i] < 1 || p[i] < 0) return 0;
        int64_t big = transpose ? ys->d[2 + i] : xs->d[2 + i];
        int64_t small = transpose ? xs->d[2 + i] : ys->d[2 + i];
        int64_t pr;
        if (!pad_right(big, small, k[i], d[i], s[i], p[i], &pr)) return 0;
        c->strides[i] = s[i];
        c->dil[i] = d[i] - 1;
        c->pl[i] = p[i];
        c->pr[i] = pr;
    }
    if (!transpose && (ws->d[0] != cout || ws->d[1] != cin / g)) return 0;
    if (transpose && (ws->d[0] != cin || ws->d[1] != cout / g)) return 0;
    if (tsl__dnnl_md(&c->x, 4, xs->d, dnnl_nchw) != dnnl_success) return 0;
    if (tsl__dnnl_md(&c->y, 4, ys->d, dnnl_nchw) != dnnl_success) return 0;
    if (g == 1) {
        int64_t wd[4] = {cout, cin, kh, kw};
        if (tsl__dnnl_md(&c->w, 4, wd, transpose ? dnnl_iohw : dnnl_oihw) != dnnl_success) return 0;
    } else {
        int64_t wd[5] = {g, cout / g, cin / g, kh, kw};
        if (tsl__dnnl_md(&c->w, 5, wd, transpose ? dnnl_giohw : dnnl_goihw) != dnnl_success)
            return 0;
    }
    if (bias && tsl__dnnl_md(&c->b, 1, &cout, dnnl_x) != dnnl_success) return 0;
    return any_of(&c->ax, &c->x) && any_of(&c->aw, &c->w) && any_of(&c->ay, &c->y);
}

static const tsl_shape *shape(const tsl_graph *g, tsl_tid t) { return &tsl_graph_tensor(g, t)->shape; }

/* The forward descriptor of a plain convolution (also the hint of the
 * backward ones). */
static dnnl_status_t fwd_desc(dnnl_convolution_desc_t *d, const conv_md *c, int bias) {
    return dnnl_dilated_convolution_forward_desc_init(
        d, dnnl_forward_training, dnnl_convolution_direct, &c->ax, &c->aw, bias ? &c->b : NULL,
        &c->ay, c->strides, c->dil, c->pl, c->pr);
}

/* CONV2D (x, w[, b]) -> y. */
tsl_status tsl__dnnl_build_conv(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    int bias = op->n_in == 3;
    conv_md c;
    if (!conv_geometry(&op->attr.conv, shape(g, op->in[0]), shape(g, op->in[1]),
                       shape(g, op->out[0]), bias, 0, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_convolution_desc_t d;
    tsl_status st = tsl__dnnl_soft(fwd_desc(&d, &c, bias), s, op, "convolution descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t pd;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &d, NULL), s, op, "convolution primitive descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, pd, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_SRC, &c.x, chosen(pd, dnnl_query_src_md), TSL__FROM_IN, 0, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_WEIGHTS, &c.w, chosen(pd, dnnl_query_weights_md),
                                TSL__FROM_IN, 1, op);
    if (st == TSL_OK && bias) st = tsl__dnnl_bind(s, DNNL_ARG_BIAS, &c.b, TSL__FROM_IN, 2, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_DST, &c.y, chosen(pd, dnnl_query_dst_md), TSL__FROM_OUT, 0, op);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* The primitive descriptor *pd of the backward descriptor d, whose init
 * returned `init`, with the forward primitive descriptor oneDNN takes as
 * its hint. `what` names it in messages ("convolution backward-data").
 * Returns an error, or TSL_OK with s->fallback set when oneDNN has no
 * primitive for it (the reference kernel runs instead), or TSL_OK with
 * *pd for the caller to query, build (tsl__dnnl_finish) and destroy. */
static tsl_status backward_primitive(const conv_md *c, int bias, dnnl_status_t init,
                                     const dnnl_convolution_desc_t *d, const char *what,
                                     tsl__dnnl_op *s, const tsl_op *op, dnnl_primitive_desc_t *pd) {
    char msg[96];
    snprintf(msg, sizeof msg, "%s descriptor", what);
    tsl_status st = tsl__dnnl_soft(init, s, op, msg);
    if (st != TSL_OK || s->fallback) return st;
    dnnl_convolution_desc_t fd;
    st = tsl__dnnl_soft(fwd_desc(&fd, c, bias), s, op, "convolution descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t hint;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&hint, &fd, NULL), s, op, "convolution hint");
    if (st != TSL_OK || s->fallback) return st;
    snprintf(msg, sizeof msg, "%s primitive descriptor", what);
    st = tsl__dnnl_soft(tsl__dnnl_pd(pd, d, hint), s, op, msg);
    dnnl_primitive_desc_destroy(hint);
    return st;
}

/* CONV2D_BWD_DATA (dy, w) -> dx; dx's shape is the forward x's. */
tsl_status tsl__dnnl_build_conv_bwd_data(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    conv_md c;
    if (!conv_geometry(&op->attr.conv, shape(g, op->out[0]), shape(g, op->in[1]),
                       shape(g, op->in[0]), 0, 0, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd;
    tsl_status st = backward_primitive(
        &c, 0,
        dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &c.ax, &c.aw,
                                                         &c.ay, c.strides, c.dil, c.pl, c.pr),
        &d, "convolution backward-data", s, op, &pd);
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, pd, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_DIFF_DST, &c.y, chosen(pd, dnnl_query_diff_dst_md),
                            TSL__FROM_IN, 0, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_WEIGHTS, &c.w, chosen(pd, dnnl_query_weights_md),
                                TSL__FROM_IN, 1, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_DIFF_SRC, &c.x, chosen(pd, dnnl_query_diff_src_md),
                                TSL__FROM_OUT, 0, op);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* CONV2D_BWD_FILTER (dy, x) -> dw[, db]. */
tsl_status tsl__dnnl_build_conv_bwd_filter(const tsl_graph *g, const tsl_op *op,
                                           tsl__dnnl_op *s) {
    int bias = op->n_out == 2;
    conv_md c;
    if (!conv_geometry(&op->attr.conv, shape(g, op->in[1]), shape(g, op->out[0]),
                       shape(g, op->in[0]), bias, 0, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd;
    tsl_status st = backward_primitive(
        &c, bias,
        dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &c.ax,
                                                            &c.aw, bias ? &c.b : NULL, &c.ay,
                                                            c.strides, c.dil, c.pl, c.pr),
        &d, "convolution backward-weights", s, op, &pd);
    if (st != TSL_OK || s->fallback) return st;
    /* oneDNN's per-image gemm (no jit kernel for the shape): one product over
     * the batch instead, where its workspace is small (fast_wgrad_gemm.c). */
    const char *impl = NULL;
    size_t wb = tsl__wgrad_gemm_workspace(g, op);
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
        strstr(impl, "gemm") && wb > 0 && wb <= TSL__WGRAD_GEMM_MAX_BYTES) {
        dnnl_primitive_desc_destroy(pd);
        tsl__dnnl_replace(s, tsl__wgrad_gemm_run, wb, "gemm:batched");
        return TSL_OK;
    }
    st = tsl__dnnl_finish(s, pd, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_DIFF_DST, &c.y, chosen(pd, dnnl_query_diff_dst_md),
                            TSL__FROM_IN, 0, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_SRC, &c.x, chosen(pd, dnnl_query_src_md), TSL__FROM_IN,
                                1, op);
    if (st == TSL_OK)
        st = tsl__dnnl_bind_any(s, DNNL_ARG_DIFF_WEIGHTS, &c.w,
                                chosen(pd, dnnl_query_diff_weights_md), TSL__FROM_OUT, 0, op);
    if (st == TSL_OK && bias)
        st = tsl__dnnl_bind(s, DNNL_ARG_DIFF_BIAS, &c.b, TSL__FROM_OUT, 1, op);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

/* CONV2D_TRANSPOSE (x, w[, b]) -> y, as oneDNN's deconvolution forward. */
tsl_status tsl__dnnl_build_conv_transpose(const tsl_graph *g, const tsl_op *op,
                                          tsl__dnnl_op *s) {
    int bias = op->n_in == 3;
    conv_md c;
    if (!conv_geometry(&op->attr.conv, shape(g, op->in[0]), shape(g, op->in[1]),
                       shape(g, op->out[0]), bias, 1, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_deconvolution_desc_t d;
    tsl_status st = tsl__dnnl_soft(
        dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_training,
                                                     dnnl_deconvolution_direct, &c.x, &c.w,
                                                     bias ? &c.b : NULL, &c.y, c.strides, c.dil,
                                                     c.pl, c.pr),
        s, op, "deconvolution descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t pd;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &d, NULL), s, op, "deconvolution primitive descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_SRC, &c.x, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_WEIGHTS, &c.w, TSL__FROM_IN, 1, op);
    if (st == TSL_OK && bias) st = tsl__dnnl_bind(s, DNNL_ARG_BIAS, &c.b, TSL__FROM_IN, 2, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_DST, &c.y, TSL__FROM_OUT, 0, op);
    return st;
}
