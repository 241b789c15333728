/*
 * floor.c - a job's memory floor: the largest working set one op needs
 * (its inputs, its outputs and its workspace, each tensor once). Every
 * plan's peak load is at least this (an op runs with its inputs resident,
 * its outputs allocated and its workspace held), so a budget below the
 * jobs' floors cannot be met by any policy; tsl_plan_jobs reports it.
 */
#include "sched/kit.h"

size_t tsl__floor(const tsl_workload *w, int32_t *at) {
    size_t best = 0;
    int32_t best_op = -1;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *o = &w->ops[i];
        size_t s = o->workspace;
        int n = o->n_in + o->n_out;
        for (int k = 0; k < n; k++) {
            int32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
            int seen = 0;
            for (int m = 0; m < k && !seen; m++)
                seen = (m < o->n_in ? o->in[m] : o->out[m - o->n_in]) == t;
            if (!seen) s += w->tensors[t].bytes;
        }
        if (best_op < 0 || s > best) {
            best = s;
            best_op = i;
        }
    }
    if (at) *at = best_op;
    return best;
}
