/*
 * fast_dnnl_pool.c - oneDNN pooling: MAXPOOL2D forward (forward_inference,
 * so no workspace), AVGPOOL2D forward and AVGPOOL2D_BWD.
 *
 * oneDNN's max pooling ignores padded positions, which is the semantics'
 * "padding counts as -infinity"; avg_include_padding divides by KH*KW and
 * avg_exclude_padding by the in-bounds count, as count_include_pad 1 / 0.
 * The right/bottom padding is symmetric when the floor size rule holds with
 * it, else the tight value (windows never reach past H + pad in floor mode).
 * MAXPOOL2D_BWD stays on the reference kernel: oneDNN's backward needs the
 * forward workspace, and its tie-breaking is not the semantics' "first
 * maximum".
 */
#include "backend/cpu/dnnl_util.h"
#include "core/assert.h"

typedef struct pool_md {
    dnnl_memory_desc_t x, y;
    dnnl_dims_t strides, kernel, pl, pr;
    dnnl_alg_kind_t alg;
} pool_md;

/* Geometry of a pooling between x (N,C,H,W) and y (N,C,Ho,Wo); 0 if the
 * shapes or the attribute are outside what oneDNN takes (fall back). */
static int pool_geometry(const tsl_op *op, const tsl_shape *xs, const tsl_shape *ys, int max,
                         pool_md *c) {
    const tsl_pool_attr *at = &op->attr.pool;
    if (xs->ndim != 4 || ys->ndim != 4 || xs->d[0] != ys->d[0] || xs->d[1] != ys->d[1]) return 0;
    int64_t k[2] = {at->kernel_h, at->kernel_w}, s[2] = {at->stride_h, at->stride_w};
    int64_t p[2] = {at->pad_h, at->pad_w};
    for (int i = 0; i < 2; i++) {
        if (k[i] < 1 || s[i] < 1 || p[i] < 0 || p[i] >= k[i]) return 0;
        int64_t big = xs->d[2 + i], small = ys->d[2 + i];
        int64_t cand[2] = {p[i], (small - 1) * s[i] + k[i] - big - p[i]};
        int ok = 0;
        for (int j = 0; j < 2 && !ok; j++) {
            int64_t num = big - k[i] + p[i] + cand[j];
            if (cand[j] < k[i] && cand[j] + s[i] > 0 && num >= 0 && num / s[i] + 1 == small) {
                c->pr[i] = cand[j];
                ok = 1;
            }
        }
        if (!ok) return 0;
        c->strides[i] = s[i];
        c->kernel[i] = k[i];
        c->pl[i] = p[i];
    }
    c->alg = max ? dnnl_pooling_max
           : at->count_include_pad ? dnnl_pooling_avg_include_padding
                                   : dnnl_pooling_avg_exclude_padding;
    if (tsl__dnnl_md(&c->x, 4, xs->d, dnnl_nchw) != dnnl_success) return 0;
    if (tsl__dnnl_md(&c->y, 4, ys->d, dnnl_nchw) != dnnl_success) return 0;
    return 1;
}

static const tsl_shape *shape(const tsl_graph *g, tsl_tid t) { return &tsl_graph_tensor(g, t)->shape; }

/* MAXPOOL2D / AVGPOOL2D (x) -> y. */
tsl_status tsl__dnnl_build_pool(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    pool_md c;
    if (!pool_geometry(op, shape(g, op->in[0]), shape(g, op->out[0]),
                       op->type == TSL_OP_MAXPOOL2D, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_pooling_desc_t d;
    tsl_status st = tsl__dnnl_soft(dnnl_pooling_forward_desc_init(&d, dnnl_forward_inference, c.alg,
                                                                  &c.x, &c.y, c.strides, c.kernel,
                                                                  c.pl, c.pr),
                                   s, op, "pooling descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t pd;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &d, NULL), s, op, "pooling primitive descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, 0, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_SRC, &c.x, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DST, &c.y, TSL__FROM_OUT, 0, op);
    return st;
}

/* AVGPOOL2D_BWD (dy) -> dx; dx's shape is the forward x's. */
tsl_status tsl__dnnl_build_avgpool_bwd(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    pool_md c;
    if (!pool_geometry(op, shape(g, op->out[0]), shape(g, op->in[0]), 0, &c)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t hint, pd;
    tsl_status st = tsl__dnnl_soft(dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, c.alg,
                                                                  &c.x, &c.y, c.strides, c.kernel,
                                                                  c.pl, c.pr),
                                   s, op, "pooling descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&hint, &fd, NULL), s, op, "pooling hint");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(dnnl_pooling_backward_desc_init(&bd, c.alg, &c.x, &c.y, c.strides, c.kernel,
                                                        c.pl, c.pr),
                        s, op, "pooling backward descriptor");
    if (st == TSL_OK && !s->fallback)
        st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &bd, hint), s, op,
                            "pooling backward primitive descriptor");
    dnnl_primitive_desc_destroy(hint);
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, 0, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_DST, &c.y, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_SRC, &c.x, TSL__FROM_OUT, 0, op);
    return st;
}
