/*
 * mlp_train.c - the predictor's MLP, trained by Tensile itself: the model
 * is a graph of Tensile's ops (linear layers with ReLUs between them, an
 * MSE loss), its gradients come from autodiff (tsl_graph_backward) and its
 * updates are the optimizer phase's Adam ops (tsl_graph_optimizer); every
 * op runs through the CPU backend's kernels (tsl_backend_run_op), one
 * minibatch per step, every tensor in the backend's arena. The gradients
 * are those of the autodiff tests (tests/test_autodiff.c, the MSE's in
 * tests/test_ops_loss.c).
 *
 * Initial weights: U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's Linear) from
 * core/rand.h keyed by (seed, layer, element), biases 0; the minibatches
 * are a seeded shuffle per epoch; the last partial batch is dropped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rand.h"
#include "predict/predictor_internal.h"
#include "tensile/backend_cpu.h"
#include "tensile/ops.h"

typedef struct mlp_graph {
    tsl_graph *g;
    tsl_tid x, y, loss;
    tsl_tid w[TSL__PRED_MAX_LAYERS], b[TSL__PRED_MAX_LAYERS];
} mlp_graph;

/* x (B, NF) -> [linear -> relu] x layers -> linear (B, 1); mse against
 * y (B, 1); backward; Adam. */
static tsl_status build(mlp_graph *m, int B, const tsl_pred_train_opts *o, int *width, int nl) {
    memset(m, 0, sizeof *m);
    m->g = tsl_graph_new("predictor_mlp");
    if (!m->g) return tsl_fail(TSL_ERR_OOM, "predictor: out of host memory for the MLP's graph");
    tsl_graph *g = m->g;
    const int64_t xd[2] = {B, TSL_PRED_NF}, yd[2] = {B, 1};
    m->x = tsl_input(g, "input", tsl_shape_from(xd, 2));
    m->y = tsl_input(g, "target", tsl_shape_from(yd, 2));
    tsl_tid h = m->x;
    for (int l = 0; l < nl; l++) {
        char wn[32], bn[32], ln[32], rn[32];
        snprintf(wn, sizeof wn, "fc%d.weight", l);
        snprintf(bn, sizeof bn, "fc%d.bias", l);
        snprintf(ln, sizeof ln, "fc%d", l);
        snprintf(rn, sizeof rn, "relu%d", l);
        const int64_t wd[2] = {width[l + 1], width[l]}, bd[1] = {width[l + 1]};
        m->w[l] = tsl_param(g, wn, tsl_shape_from(wd, 2), TSL_INIT_NONE);
        m->b[l] = tsl_param(g, bn, tsl_shape_from(bd, 1), TSL_INIT_NONE);
        h = tsl_linear(g, ln, h, m->w[l], m->b[l]);
        if (l + 1 < nl) h = tsl_relu(g, rn, h);
    }
    m->loss = tsl_mse(g, "loss", h, m->y);
    tsl_optimizer_cfg adam = tsl_adam_default(o->lr);
    tsl_status st = tsl_graph_status(g);
    if (st == TSL_OK) st = tsl_graph_backward(g, m->loss);
    if (st == TSL_OK) st = tsl_graph_optimizer(g, &adam);
    if (st == TSL_OK) st = tsl_graph_finalize(g);
    return st;
}

tsl_status tsl__mlp_train(tsl__pmodel *pm, const double *x, const double *y, int n,
                          const tsl_pred_train_opts *o) {
    const int nl = o->layers + 1;
    int width[TSL__PRED_MAX_LAYERS + 1];
    width[0] = TSL_PRED_NF;
    for (int l = 1; l < nl; l++) width[l] = o->hidden;
    width[nl] = 1;
    const int B = n < o->batch ? n : o->batch;
    if (B < 1) return tsl_fail(TSL_ERR_INVALID, "predictor: no samples to train the MLP on");
    mlp_graph m;
    tsl_status st = build(&m, B, o, width, nl);
    tsl_backend *be = NULL;
    void **ptr = NULL;
    float *hx = NULL, *hy = NULL;
    int *order = NULL;
    const int32_t nt = tsl_graph_n_tensors(m.g), no = tsl_graph_n_ops(m.g);
    size_t total = 0;
    for (int32_t t = 0; st == TSL_OK && t < nt; t++)
        total += (tsl_graph_tensor(m.g, t)->nbytes + 511) & ~(size_t)255;
    if (st == TSL_OK) st = tsl_cpu_backend_new(total + (1u << 20), TSL_KERNELS_FAST, 1, &be);
    if (st == TSL_OK) {
        ptr = calloc((size_t)nt, sizeof *ptr);
        hx = malloc(sizeof *hx * (size_t)B * TSL_PRED_NF);
        hy = malloc(sizeof *hy * (size_t)B);
        order = malloc(sizeof *order * (size_t)n);
        if (!ptr || !hx || !hy || !order)
            st = tsl_fail(TSL_ERR_OOM, "predictor: out of host memory for the MLP's training");
    }
    /* every tensor in the arena; parameters initialised, states zero */
    for (int32_t t = 0; st == TSL_OK && t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(m.g, t);
        st = be->iface->alloc(be, tt->nbytes ? tt->nbytes : 4, &ptr[t]);
        if (st != TSL_OK) break;
        float *p = ptr[t]; /* the CPU backend's memory is host memory */
        const int64_t ne = tsl_shape_numel(&tt->shape);
        memset(p, 0, tt->nbytes);
        for (int l = 0; l < nl; l++)
            if (t == m.w[l]) {
                const double a = 1.0 / sqrt((double)width[l]);
                for (int64_t e = 0; e < ne; e++)
                    p[e] = (float)(a * (2.0 * tsl__u01(tsl__mix64(o->seed ^ ((uint64_t)l << 56)) + (uint64_t)e) - 1.0));
            }
    }
    for (int i = 0; i < n; i++) order[i] = i;
    int64_t step = 0;
    const int per_epoch = n / B;
    uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
    void *in[8], *out[8];
    for (int ep = 0; st == TSL_OK && ep < o->epochs; ep++) {
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            int j = (int)(rng % (uint64_t)(i + 1)), tmp = order[i];
            order[i] = order[j], order[j] = tmp;
        }
        for (int bi = 0; st == TSL_OK && bi < per_epoch; bi++) {
            for (int r = 0; r < B; r++) {
                const int s = order[bi * B + r];
                for (int k = 0; k < TSL_PRED_NF; k++)
                    hx[r * TSL_PRED_NF + k] = (float)x[(size_t)s * TSL_PRED_NF + k];
                hy[r] = (float)y[s];
            }
            memcpy(ptr[m.x], hx, sizeof *hx * (size_t)B * TSL_PRED_NF);
            memcpy(ptr[m.y], hy, sizeof *hy * (size_t)B);
            tsl_run_ctx ctx = {.step = ++step, .training = 1};
            for (int32_t i = 0; st == TSL_OK && i < no; i++) {
                const tsl_op *op = tsl_graph_op(m.g, i);
                for (int k = 0; k < op->n_in && k < 8; k++) in[k] = ptr[op->in[k]];
                for (int k = 0; k < op->n_out && k < 8; k++) out[k] = ptr[op->out[k]];
                st = tsl_backend_run_op(be, m.g, op, in, out, &ctx, NULL);
            }
        }
    }
    if (st == TSL_OK) {
        pm->n_layers = nl;
        for (int l = 0; l <= nl; l++) pm->width[l] = width[l];
        for (int l = 0; l < nl && st == TSL_OK; l++) {
            const size_t nw = (size_t)width[l + 1] * (size_t)width[l];
            pm->w[l] = malloc(sizeof(double) * nw);
            pm->b[l] = malloc(sizeof(double) * (size_t)width[l + 1]);
            if (!pm->w[l] || !pm->b[l]) {
                st = tsl_fail(TSL_ERR_OOM, "predictor: out of host memory for the MLP's weights");
                break;
            }
            const float *wf = ptr[m.w[l]], *bf = ptr[m.b[l]];
            const size_t ni = (size_t)width[l], nout = (size_t)width[l + 1];
            for (size_t o2 = 0; o2 < nout; o2++) /* (out, in) -> (in, out) */
                for (size_t i = 0; i < ni; i++) pm->w[l][i * nout + o2] = wf[o2 * ni + i];
            for (int e = 0; e < width[l + 1]; e++) pm->b[l][e] = bf[e];
        }
    }
    if (ptr && be)
        for (int32_t t = 0; t < nt; t++)
            if (ptr[t]) be->iface->free(be, ptr[t]);
    free(ptr);
    free(hx);
    free(hy);
    free(order);
    tsl_backend_free(be);
    tsl_graph_free(m.g);
    return st;
}
