/*
 * optimizer.c - the optimizer phase as ops of the graph.
 *
 * One in-place update per parameter that has a gradient, in parameter
 * creation order, after every backward op (the paper's Opt phase). The
 * update reads the parameter, its gradient and its states, and generates the
 * parameter and its states anew: a use and a generation of the same tensors,
 * so the next iteration's first use of the parameter follows this update.
 */
#include "core/assert.h"
#include "core/graph_internal.h"
#include "tensile/ops.h"

tsl_optimizer_cfg tsl_sgd_default(float lr) {
    tsl_optimizer_cfg c = {0};
    c.kind = TSL_OPT_SGD;
    c.lr = lr;
    c.momentum = 0.9f;
    return c;
}

tsl_optimizer_cfg tsl_adam_default(float lr) {
    tsl_optimizer_cfg c = {0};
    c.kind = TSL_OPT_ADAM;
    c.lr = lr;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    return c;
}

tsl_status tsl_graph_optimizer(tsl_graph *g, const tsl_optimizer_cfg *cfg) {
    if (tsl_graph_status(g) != TSL_OK) return tsl_graph_status(g);
    if (tsl_graph_loss(g) == TSL_NONE) {
        tsl__graph_fail(g, "tsl_graph_optimizer needs tsl_graph_backward first");
        return tsl_graph_status(g);
    }
    if (!(cfg->lr > 0.0f) || cfg->momentum < 0.0f || cfg->momentum >= 1.0f ||
        cfg->weight_decay < 0.0f) {
        tsl__graph_fail(g, "optimizer: lr %g must be > 0, momentum %g in [0,1), weight_decay %g >= 0",
                        (double)cfg->lr, (double)cfg->momentum, (double)cfg->weight_decay);
        return tsl_graph_status(g);
    }
    if (cfg->kind == TSL_OPT_ADAM &&
        !(cfg->beta1 >= 0 && cfg->beta1 < 1 && cfg->beta2 >= 0 && cfg->beta2 < 1 && cfg->eps > 0)) {
        tsl__graph_fail(g, "optimizer: adam betas (%g, %g) must be in [0,1) and eps %g > 0",
                        (double)cfg->beta1, (double)cfg->beta2, (double)cfg->eps);
        return tsl_graph_status(g);
    }
    tsl__graph_mark_phase(g, 1);
    int32_t nt = tsl_graph_n_tensors(g);
    for (tsl_tid p = 0; p < nt && tsl_graph_status(g) == TSL_OK; p++) {
        const tsl_tensor *pt = tsl_graph_tensor(g, p);
        if (pt->kind != TSL_KIND_PARAM || pt->grad == TSL_NONE) continue;
        char pname[TSL_NAME_MAX], nb[TSL_NAME_MAX];
        tsl__name(pname, pt->name, NULL);
        tsl_shape s = pt->shape;
        tsl_tid gr = pt->grad;
        if (cfg->kind == TSL_OPT_SGD) {
            if (cfg->momentum > 0.0f) {
                tsl_tid m = tsl__graph_new_tensor_kind(g, tsl__name(nb, pname, "momentum"), s,
                                                       TSL_F32, TSL_KIND_OPT_STATE);
                if (m == TSL_NONE) break;
                tsl__graph_tensor_mut(g, m)->init = TSL_INIT_ZERO;
                tsl_tid in[3] = {p, gr, m}, out[2] = {p, m};
                tsl__graph_add_op(g, TSL_OP_SGD_UPDATE, tsl__name(nb, pname, "sgd"), in, 3, out, 2,
                                  cfg, sizeof *cfg, 0);
            } else {
                tsl_tid in[2] = {p, gr}, out[1] = {p};
                tsl__graph_add_op(g, TSL_OP_SGD_UPDATE, tsl__name(nb, pname, "sgd"), in, 2, out, 1,
                                  cfg, sizeof *cfg, 0);
            }
        } else {
            tsl_tid m = tsl__graph_new_tensor_kind(g, tsl__name(nb, pname, "adam_m"), s, TSL_F32,
                                                   TSL_KIND_OPT_STATE);
            tsl_tid v = tsl__graph_new_tensor_kind(g, tsl__name(nb, pname, "adam_v"), s, TSL_F32,
                                                   TSL_KIND_OPT_STATE);
            if (m == TSL_NONE || v == TSL_NONE) break;
            tsl__graph_tensor_mut(g, m)->init = TSL_INIT_ZERO;
            tsl__graph_tensor_mut(g, v)->init = TSL_INIT_ZERO;
            tsl_tid in[4] = {p, gr, m, v}, out[3] = {p, m, v};
            tsl__graph_add_op(g, TSL_OP_ADAM_UPDATE, tsl__name(nb, pname, "adam"), in, 4, out, 3,
                              cfg, sizeof *cfg, 0);
        }
    }
    return tsl_graph_status(g);
}
