/*
 * op_floor.c - the op floor of a workload (tensile/workload.h): the
 * largest working set of any single op, the bytes that must be on the
 * device while it runs. No plan of the workload can hold less, whatever it
 * swaps or recomputes: `tensile frontier` marks the budgets below it
 * without planning them.
 */
#include "tensile/workload.h"

/* 1 if tensor t is among the first n of list. */
static int listed(const int32_t *list, int n, int32_t t) {
    for (int k = 0; k < n; k++)
        if (list[k] == t) return 1;
    return 0;
}

/* The working set of op i of w: its distinct inputs and outputs, plus the
 * least workspace among its algorithms. */
static size_t working_set(const tsl_workload *w, int32_t i) {
    const tsl_wl_op *o = &w->ops[i];
    size_t bytes = 0;
    for (int k = 0; k < o->n_in; k++)
        if (!listed(o->in, k, o->in[k])) bytes += w->tensors[o->in[k]].bytes;
    for (int k = 0; k < o->n_out; k++)
        if (!listed(o->out, k, o->out[k]) && !listed(o->in, o->n_in, o->out[k]))
            bytes += w->tensors[o->out[k]].bytes;
    size_t ws = o->workspace;
    for (int32_t k = 1; k < tsl_workload_op_n_algos(w, i); k++) {
        size_t a = tsl_workload_op_algo(w, i, k).workspace;
        if (a < ws) ws = a;
    }
    return bytes + ws;
}

size_t tsl_workload_op_floor(const tsl_workload *w, int32_t *op) {
    size_t best = 0;
    int32_t at = -1;
    for (int32_t i = 0; i < w->n_ops; i++) {
        size_t b = working_set(w, i);
        if (at < 0 || b > best) best = b, at = i;
    }
    if (op) *op = at;
    return best;
}
