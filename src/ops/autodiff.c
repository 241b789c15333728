/*
 * autodiff.c - reverse-mode differentiation of the forward graph.
 *
 * Walks the forward ops in reverse execution order. For an op with at least
 * one output that has a gradient, the op's backward builder (op_def.h)
 * appends the ops computing its inputs' gradients. A tensor read by several
 * ops receives one gradient per reader; they are summed with ADD in the order
 * they appear (reverse execution order), which is fixed, so the graph - and
 * every bit it computes - is deterministic.
 *
 * Only what the loss depends on and what leads to a parameter is
 * differentiated: grad_wanted marks the tensors on a path from a PARAM to
 * the loss, so no gradient is computed for the data input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/graph_internal.h"
#include "ops/op_def.h"

tsl_status tsl_graph_backward(tsl_graph *g, tsl_tid loss) {
    if (loss == TSL_NONE && tsl_graph_status(g) == TSL_OK && !tsl__graph_finalized(g))
        tsl__graph_fail(g, "tsl_graph_backward: the loss is TSL_NONE (its builder failed?)");
    if (tsl__graph_bad(g, &loss, 1)) return tsl_graph_status(g) ? tsl_graph_status(g) : TSL_ERR_INVALID;
    if (tsl_graph_loss(g) != TSL_NONE) {
        tsl__graph_fail(g, "tsl_graph_backward called twice");
        return tsl_graph_status(g);
    }
    const tsl_tensor *lt = tsl_graph_tensor(g, loss);
    if (tsl_shape_numel(&lt->shape) != 1) {
        char sb[128];
        tsl__graph_fail(g, "loss '%s' must be a scalar, has shape %s", lt->name,
                        tsl_shape_str(&lt->shape, sb, sizeof sb));
        return tsl_graph_status(g);
    }
    int32_t n_fwd = tsl_graph_n_ops(g);
    int32_t nt = tsl_graph_n_tensors(g);

    /* Which tensors lie on a path param -> loss: forward reachability from
     * params (requires_grad) intersected with backward reachability from the
     * loss. */
    uint8_t *to_loss = calloc((size_t)nt, 1);
    uint8_t *wanted = calloc((size_t)nt, 1);
    tsl_tid *grad = malloc(sizeof(tsl_tid) * (size_t)nt);
    int *n_sums = calloc((size_t)nt, sizeof *n_sums);
    if (!to_loss || !wanted || !grad || !n_sums) {
        free(to_loss); free(wanted); free(grad); free(n_sums);
        return tsl_fail(TSL_ERR_OOM, "autodiff: out of host memory");
    }
    to_loss[loss] = 1;
    for (int32_t i = n_fwd - 1; i >= 0; i--) {
        const tsl_op *op = tsl_graph_op(g, i);
        int hit = 0;
        for (int j = 0; j < op->n_out; j++) hit |= to_loss[op->out[j]];
        if (hit)
            for (int j = 0; j < op->n_in; j++) to_loss[op->in[j]] = 1;
    }
    for (int32_t t = 0; t < nt; t++) {
        wanted[t] = to_loss[t] && tsl_graph_tensor(g, t)->requires_grad;
        grad[t] = TSL_NONE;
    }
    grad[loss] = TSL_GRAD_ONE;

    tsl__graph_set_loss(g, loss);
    tsl__graph_mark_phase(g, 0);
    tsl__graph_set_backward(g, 1, wanted, nt);
    for (int32_t i = n_fwd - 1; i >= 0 && tsl_graph_status(g) == TSL_OK; i--) {
        tsl_op op = *tsl_graph_op(g, i); /* copy: the ops array grows below */
        tsl_tid out_grads[16], in_grads[256];
        TSL_ASSERT(op.n_out <= 16 && op.n_in <= 256);
        int any = 0;
        for (int j = 0; j < op.n_out; j++) {
            out_grads[j] = grad[op.out[j]];
            any |= out_grads[j] != TSL_NONE;
        }
        if (!any) continue;
        int need = 0;
        for (int j = 0; j < op.n_in; j++) {
            in_grads[j] = TSL_NONE;
            need |= wanted[op.in[j]];
        }
        if (!need) continue;
        const tsl_op_def *d = tsl__op_def(op.type);
        if (!d->backward) {
            tsl__graph_fail(g, "op '%s' (%s) is not differentiable", op.name, d->name);
            break;
        }
        d->backward(g, &op, out_grads, in_grads);
        for (int j = 0; j < op.n_in && tsl_graph_status(g) == TSL_OK; j++) {
            tsl_tid x = op.in[j], gx = in_grads[j];
            if (gx == TSL_NONE || !wanted[x]) continue;
            if (grad[x] == TSL_NONE) {
                grad[x] = gx;
            } else {
                /* the k-th sum into x is "x.grad_acc" (k = 1), then "x.grad_acc<k>":
                 * names stay unique, as the JSON forms require */
                char nb[TSL_NAME_MAX], suffix[32];
                int k = ++n_sums[x];
                if (k == 1) snprintf(suffix, sizeof suffix, "grad_acc");
                else snprintf(suffix, sizeof suffix, "grad_acc%d", k);
                grad[x] = tsl_add(g, tsl__name(nb, tsl_graph_tensor(g, x)->name, suffix), grad[x], gx);
            }
        }
    }
    tsl__graph_set_backward(g, 0, NULL, 0);
    /* Parameters learn where their gradient is; the gradient keeps kind
     * GRADIENT. */
    for (int32_t t = 0; t < nt && tsl_graph_status(g) == TSL_OK; t++) {
        tsl_tensor *tt = tsl__graph_tensor_mut(g, t);
        if (tt->kind == TSL_KIND_PARAM) tt->grad = grad[t] >= 0 ? grad[t] : TSL_NONE;
    }
    free(to_loss);
    free(wanted);
    free(grad);
    free(n_sums);
    return tsl_graph_status(g);
}
