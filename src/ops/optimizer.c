/*
 * optimizer.c - the optimizer phase as ops of the graph.
 *
 * One in-place update per parameter that has a gradient. The update reads
 * the parameter, its gradient and its states, and generates the parameter
 * and its states anew: a use and a generation of the same tensors, so the
 * next iteration's first use of the parameter follows this update.
 *
 * The updates are appended after every backward op, in parameter creation
 * order (the paper's Opt phase). By default (TSL_STEP_IN_BACKWARD) they are
 * then moved into the backward pass: each right after the last earlier op
 * that reads or writes its parameter or its gradient - the op completing
 * the gradient, or a later one still reading the parameter. Nothing after
 * that op reads the parameter, the gradient or the states before the update
 * (the states are the update's own), so every op computes what it computed
 * with the phase at the end, bit for bit; the gradient dies at once and the
 * states are free to leave the device for the rest of the iteration.
 */
#include <stdlib.h>

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

/* Moves each update op from `first` on (one per parameter) to just after
 * the last op before `first` that reads or writes one of its inputs
 * (parameter, gradient; the states are its own); updates after the same op
 * keep their order (a counting sort on that op). */
static tsl_status updates_into_backward(tsl_graph *g, int32_t first) {
    int32_t n = tsl_graph_n_ops(g), nt = tsl_graph_n_tensors(g), nu = n - first;
    int32_t *last = malloc(((size_t)nt + 1) * sizeof *last);
    int32_t *slot = malloc(((size_t)nu + 1) * sizeof *slot);   /* update's op + 1; 0: before all */
    int32_t *at = calloc((size_t)first + 2, sizeof *at);       /* slot's first place in sorted */
    int32_t *sorted = malloc(((size_t)nu + 1) * sizeof *sorted);
    int32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    tsl_status st = TSL_OK;
    if (!last || !slot || !at || !sorted || !order)
        st = tsl_fail(TSL_ERR_OOM, "optimizer: out of host memory to place %d updates", (int)nu);
    if (st == TSL_OK) {
        for (int32_t t = 0; t < nt; t++) last[t] = -1;
        for (int32_t i = 0; i < first; i++) {
            const tsl_op *o = tsl_graph_op(g, i);
            for (int k = 0; k < o->n_in; k++) last[o->in[k]] = i;
            for (int k = 0; k < o->n_out; k++) last[o->out[k]] = i;
        }
        for (int32_t u = 0; u < nu; u++) {
            const tsl_op *o = tsl_graph_op(g, first + u);
            int32_t a = -1;
            for (int k = 0; k < o->n_in; k++)
                if (last[o->in[k]] > a) a = last[o->in[k]];
            slot[u] = a + 1;
            at[a + 2]++;
        }
        for (int32_t s = 1; s <= first + 1; s++) at[s] += at[s - 1];
        for (int32_t u = 0; u < nu; u++) sorted[at[slot[u]]++] = first + u;
        /* at[s] is now the end of slot s: slot s is sorted[at[s-1] .. at[s]) */
        int32_t m = 0, k = 0;
        for (; k < at[0]; k++) order[m++] = sorted[k];
        for (int32_t i = 0; i < first; i++) {
            order[m++] = i;
            for (; k < at[i + 1]; k++) order[m++] = sorted[k];
        }
        TSL_ASSERT(m == n && k == nu);
        st = tsl__graph_permute_ops(g, order);
    }
    free(last);
    free(slot);
    free(at);
    free(sorted);
    free(order);
    return st;
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
    if (cfg->step != TSL_STEP_IN_BACKWARD && cfg->step != TSL_STEP_AFTER_BACKWARD) {
        tsl__graph_fail(g, "optimizer: step %d is neither TSL_STEP_IN_BACKWARD (0) nor "
                        "TSL_STEP_AFTER_BACKWARD (1)", (int)cfg->step);
        return tsl_graph_status(g);
    }
    tsl__graph_mark_phase(g, 1);
    int32_t first = tsl_graph_n_ops(g), nt = tsl_graph_n_tensors(g);
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
    if (tsl_graph_status(g) == TSL_OK && cfg->step == TSL_STEP_IN_BACKWARD) {
        tsl_status st = updates_into_backward(g, first);
        if (st != TSL_OK) return st;
        tsl__graph_mark_phase(g, 1); /* no optimizer phase: it begins at the end */
    }
    return tsl_graph_status(g);
}
