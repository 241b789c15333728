/*
 * fast_dnnl_eltwise.c - oneDNN eltwise ReLU: RELU forward and RELU_BWD.
 *
 * Measured faster than the reference loops (bench_kernels: the reference
 * ReLU's select with its NaN test does not vectorise at -O2), so these two
 * element-wise ops get a fast path. Tensors are seen as flat (numel) vectors.
 *
 *   RELU (x) -> y = x > 0 ? x : 0*x          (dnnl_eltwise_relu, alpha 0)
 *   RELU_BWD (dy, y) -> dx = y > 0 ? dy : 0*dy
 *                                (dnnl_eltwise_relu_use_dst_for_bwd, alpha 0)
 * Numerically these are the semantics; bitwise they differ from the
 * reference only in the sign of zero (0*x is -0 for a negative x) and in
 * that a NaN or infinite dy where y <= 0 gives NaN instead of 0. Both pass a
 * NaN x through, as the reference does.
 */
#include "backend/cpu/dnnl_util.h"
#include "core/assert.h"

/* Flat (numel) descriptor of tensor t; 0 on failure. */
static int flat_md(const tsl_graph *g, tsl_tid t, dnnl_memory_desc_t *md) {
    int64_t n = tsl_shape_numel(&tsl_graph_tensor(g, t)->shape);
    return tsl__dnnl_md(md, 1, &n, dnnl_x) == dnnl_success;
}

/* RELU (x) -> y. */
tsl_status tsl__dnnl_build_relu(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    dnnl_memory_desc_t md;
    if (op->n_in != 1 || op->n_out != 1 || !flat_md(g, op->out[0], &md)) {
        s->fallback = 1;
        return TSL_OK;
    }
    dnnl_eltwise_desc_t d;
    tsl_status st = tsl__dnnl_soft(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference,
                                                                  dnnl_eltwise_relu, &md, 0.0f,
                                                                  0.0f),
                                   s, op, "eltwise descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t pd;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &d, NULL), s, op, "eltwise primitive descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_SRC, &md, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_DST, &md, TSL__FROM_OUT, 0, op);
    return st;
}

/* RELU_BWD (dy, y) -> dx. */
tsl_status tsl__dnnl_build_relu_bwd(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    dnnl_memory_desc_t md;
    if (op->n_in != 2 || op->n_out != 1 || !flat_md(g, op->out[0], &md)) {
        s->fallback = 1;
        return TSL_OK;
    }
    const dnnl_alg_kind_t alg = dnnl_eltwise_relu_use_dst_for_bwd;
    dnnl_eltwise_desc_t fd, bd;
    dnnl_primitive_desc_t hint, pd;
    tsl_status st = tsl__dnnl_soft(
        dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, alg, &md, 0.0f, 0.0f), s, op,
        "eltwise descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&hint, &fd, NULL), s, op, "eltwise hint");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(dnnl_eltwise_backward_desc_init(&bd, alg, &md, &md, 0.0f, 0.0f), s, op,
                        "eltwise backward descriptor");
    if (st == TSL_OK && !s->fallback)
        st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &bd, hint), s, op,
                            "eltwise backward primitive descriptor");
    dnnl_primitive_desc_destroy(hint);
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_DIFF_DST, &md, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_DST, &md, TSL__FROM_IN, 1, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, DNNL_ARG_DIFF_SRC, &md, TSL__FROM_OUT, 0, op);
    return st;
}
