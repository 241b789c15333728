/*
 * fast_dnnl_bnorm.c - oneDNN batch normalization: BATCHNORM forward in
 * training and evaluation mode, BATCHNORM_BWD.
 *
 * x (N,C,...) is seen as (N,C,S,1) nchw with S the product of the spatial
 * dims, so 2-D (N,C) inputs work too. Scale and shift are separate (C)
 * vectors (dnnl_use_scale | dnnl_use_shift, oneDNN 2.6).
 *
 * Training: oneDNN writes the batch mean into saved_mean and the biased
 *   variance into saved_invstd's buffer; the post hook turns that into
 *   invstd = 1/sqrt(var+eps) and updates the running statistics:
 *   rm = (1-m)*rm + m*mean, rv = (1-m)*rv + m*var*count/(count-1) (the
 *   builder guarantees count > 1).
 * Evaluation: dnnl_use_global_stats with the running statistics as mean and
 *   variance; the post hook writes saved_mean = rm, saved_invstd =
 *   1/sqrt(rv+eps) and leaves the running statistics alone.
 * Backward: oneDNN wants the variance, so the pre hook rebuilds it from
 *   invstd in the op's extra scratch: var = 1/invstd^2 - eps (in double).
 */
#include <math.h>

#include "backend/cpu/dnnl_util.h"
#include "core/assert.h"

/* (N,C,S,1) plain descriptor of x and the (C) descriptor of the per-channel
 * vectors; 0 if x has fewer than 2 dims. */
static int bn_geometry(const tsl_shape *xs, dnnl_memory_desc_t *x, dnnl_memory_desc_t *cvec,
                       int64_t *c, int64_t *count) {
    if (xs->ndim < 2) return 0;
    int64_t sp = 1;
    for (int i = 2; i < xs->ndim; i++) sp *= xs->d[i];
    int64_t d[4] = {xs->d[0], xs->d[1], sp, 1};
    *c = xs->d[1];
    *count = xs->d[0] * sp;
    return tsl__dnnl_md(x, 4, d, dnnl_nchw) == dnnl_success &&
           tsl__dnnl_md(cvec, 1, c, dnnl_x) == dnnl_success;
}

static const unsigned SCALE_SHIFT = dnnl_use_scale | dnnl_use_shift;

static int select_mode(const tsl_kernel_args *a) { return a->training ? 0 : 1; }

/* After the forward primitive: training statistics or evaluation copies,
 * computed in double and stored as float like the reference kernel. The
 * running-statistics outputs may alias their inputs (in place, the graph's
 * case) or not (then the values are written to the outputs). */
static tsl_status bn_post(const tsl__dnnl_op *s, const tsl_kernel_args *a, void *extra) {
    (void)extra;
    const double eps = s->bn.eps, m = s->bn.momentum, cnt = (double)s->bn.count;
    const float *rm_in = a->in[3], *rv_in = a->in[4];
    float *mean = a->out[1], *invstd = a->out[2], *rm = a->out[3], *rv = a->out[4];
    for (int64_t c = 0; c < s->bn.c; c++) {
        if (a->training) {
            const double var = (double)invstd[c]; /* oneDNN's biased variance */
            invstd[c] = (float)(1.0 / sqrt(var + eps));
            rm[c] = (float)((1.0 - m) * (double)rm_in[c] + m * (double)mean[c]);
            rv[c] = (float)((1.0 - m) * (double)rv_in[c] + m * (var * cnt / (cnt - 1.0)));
        } else {
            mean[c] = rm_in[c];
            invstd[c] = (float)(1.0 / sqrt((double)rv_in[c] + eps));
            rm[c] = rm_in[c];
            rv[c] = rv_in[c];
        }
    }
    return TSL_OK;
}

/* Creates the forward primitive of slot `slot` (0 training, 1 evaluation). */
static tsl_status bn_fwd_prim(tsl__dnnl_op *s, int slot, const tsl_op *op,
                              const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *cv) {
    dnnl_batch_normalization_desc_t d;
    unsigned flags = SCALE_SHIFT | (slot ? dnnl_use_global_stats : 0u);
    dnnl_prop_kind_t prop = slot ? dnnl_forward_inference : dnnl_forward_training;
    tsl_status st = tsl__dnnl_soft(
        dnnl_batch_normalization_forward_desc_init(&d, prop, x, op->attr.bn.eps, flags), s, op,
        "batch-norm descriptor");
    if (st != TSL_OK || s->fallback) return st;
    dnnl_primitive_desc_t pd;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &d, NULL), s, op, "batch-norm primitive descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, slot, pd, op);
    dnnl_primitive_desc_destroy(pd);
    tsl__dnnl_from stat = slot ? TSL__FROM_IN : TSL__FROM_OUT;
    int mean_idx = slot ? 3 : 1, var_idx = slot ? 4 : 2;
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_SRC, x, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_SCALE, cv, TSL__FROM_IN, 1, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_SHIFT, cv, TSL__FROM_IN, 2, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_MEAN, cv, stat, mean_idx, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_VARIANCE, cv, stat, var_idx, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, slot, DNNL_ARG_DST, x, TSL__FROM_OUT, 0, op);
    return st;
}

/* BATCHNORM (x, gamma, beta, rmean, rvar) -> (y, mean, invstd, rmean, rvar). */
tsl_status tsl__dnnl_build_bnorm(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    dnnl_memory_desc_t x, cv;
    if (op->n_in != 5 || op->n_out != 5 ||
        !bn_geometry(&tsl_graph_tensor(g, op->in[0])->shape, &x, &cv, &s->bn.c, &s->bn.count)) {
        s->fallback = 1;
        return TSL_OK;
    }
    s->bn.eps = op->attr.bn.eps;
    s->bn.momentum = op->attr.bn.momentum;
    s->select = select_mode;
    s->post = bn_post;
    tsl_status st = bn_fwd_prim(s, 0, op, &x, &cv);
    if (st == TSL_OK && !s->fallback) st = bn_fwd_prim(s, 1, op, &x, &cv);
    return st;
}

/* Before the backward primitive: variance from invstd into extra. */
static tsl_status bn_bwd_pre(const tsl__dnnl_op *s, const tsl_kernel_args *a, void *extra) {
    const float *invstd = a->in[4];
    float *var = extra;
    for (int64_t c = 0; c < s->bn.c; c++) {
        double is = invstd[c];
        var[c] = (float)(1.0 / (is * is) - (double)s->bn.eps);
    }
    return TSL_OK;
}

/* BATCHNORM_BWD (dy, x, gamma, mean, invstd) -> (dx, dgamma, dbeta). */
tsl_status tsl__dnnl_build_bnorm_bwd(const tsl_graph *g, const tsl_op *op, tsl__dnnl_op *s) {
    dnnl_memory_desc_t x, cv;
    if (op->n_in != 5 || op->n_out != 3 ||
        !bn_geometry(&tsl_graph_tensor(g, op->in[1])->shape, &x, &cv, &s->bn.c, &s->bn.count)) {
        s->fallback = 1;
        return TSL_OK;
    }
    s->bn.eps = op->attr.bn.eps;
    s->extra_bytes = (size_t)s->bn.c * sizeof(float);
    s->pre = bn_bwd_pre;
    dnnl_batch_normalization_desc_t fd, bd;
    dnnl_primitive_desc_t hint, pd;
    tsl_status st = tsl__dnnl_soft(dnnl_batch_normalization_forward_desc_init(
                                       &fd, dnnl_forward_training, &x, s->bn.eps, SCALE_SHIFT),
                                   s, op, "batch-norm descriptor");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(tsl__dnnl_pd(&hint, &fd, NULL), s, op, "batch-norm hint");
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_soft(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &x, &x,
                                                                    s->bn.eps, SCALE_SHIFT),
                        s, op, "batch-norm backward descriptor");
    if (st == TSL_OK && !s->fallback)
        st = tsl__dnnl_soft(tsl__dnnl_pd(&pd, &bd, hint), s, op,
                            "batch-norm backward primitive descriptor");
    dnnl_primitive_desc_destroy(hint);
    if (st != TSL_OK || s->fallback) return st;
    st = tsl__dnnl_finish(s, 0, pd, op);
    dnnl_primitive_desc_destroy(pd);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_DST, &x, TSL__FROM_IN, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_SRC, &x, TSL__FROM_IN, 1, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_SCALE, &cv, TSL__FROM_IN, 2, op);
    /* oneDNN 2.6 refuses to execute the backward without a shift argument
     * (dnnl_invalid_arguments) although no gradient depends on it: gamma's
     * buffer stands in, read-only. */
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_SHIFT, &cv, TSL__FROM_IN, 2, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_MEAN, &cv, TSL__FROM_IN, 3, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_VARIANCE, &cv, TSL__FROM_EXTRA, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_SRC, &x, TSL__FROM_OUT, 0, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_SCALE, &cv, TSL__FROM_OUT, 1, op);
    if (st == TSL_OK) st = tsl__dnnl_bind(s, 0, DNNL_ARG_DIFF_SHIFT, &cv, TSL__FROM_OUT, 2, op);
    return st;
}
