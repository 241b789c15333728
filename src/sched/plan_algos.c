/*
 * plan_algos.c - a plan's algorithm choices (tensile/plan.h,
 * docs/SCHEDULING.md "Algorithms"): setting and reading them, and the
 * workload a plan with choices is timed against (tsl_workload_for_plan),
 * which the peak analysis, the layout, the simulator and the runtime
 * analyse instead of the workload itself. The verifier makes its own
 * (verify_algos.c), so that a mistake here is caught there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

/* The index of op in p->algos, or -(insertion point) - 1. */
static int32_t find(const tsl_plan *p, int32_t op) {
    int32_t lo = 0, hi = p->n_algos;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (p->algos[mid].op < op) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->n_algos && p->algos[lo].op == op ? lo : -lo - 1;
}

tsl_status tsl_plan_set_algo(tsl_plan *p, int32_t op, int32_t algo) {
    TSL_ASSERT(p);
    if (op < 0 || algo < 0 || algo >= TSL_ALGO_MAX)
        return tsl_fail(TSL_ERR_INVALID, "plan '%s': op %d, algorithm %d (op >= 0, algorithm "
                        "in [0, %d))", p->job, op, algo, TSL_ALGO_MAX);
    int32_t at = find(p, op);
    if (at >= 0) {
        if (algo > 0) p->algos[at].algo = algo;
        else {
            memmove(&p->algos[at], &p->algos[at + 1],
                    sizeof *p->algos * (size_t)(p->n_algos - at - 1));
            if (--p->n_algos == 0) {
                free(p->algos);
                p->algos = NULL;
            }
        }
        return TSL_OK;
    }
    if (algo == 0) return TSL_OK;
    at = -at - 1;
    tsl_plan_algo *a = realloc(p->algos, sizeof *a * ((size_t)p->n_algos + 1));
    if (!a) return tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for algorithms", p->job);
    p->algos = a;
    memmove(&a[at + 1], &a[at], sizeof *a * (size_t)(p->n_algos - at));
    a[at] = (tsl_plan_algo){op, algo};
    p->n_algos++;
    return TSL_OK;
}

int32_t tsl_plan_op_algo(const tsl_plan *p, int32_t op) {
    if (!p || p->n_algos == 0) return 0;
    int32_t at = find(p, op);
    return at >= 0 ? p->algos[at].algo : 0;
}

tsl_status tsl_plan_copy_algos(tsl_plan *dst, const tsl_plan *src) {
    TSL_ASSERT(dst && src);
    tsl_plan_algo *a = NULL;
    if (src->n_algos > 0) {
        a = malloc(sizeof *a * (size_t)src->n_algos);
        if (!a) return tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for algorithms",
                                dst->job);
        memcpy(a, src->algos, sizeof *a * (size_t)src->n_algos);
    }
    free(dst->algos);
    dst->algos = a;
    dst->n_algos = src->n_algos;
    return TSL_OK;
}

/* Checks p's choices against w: ops in range, sorted and distinct, each
 * algorithm one the op has. TSL_ERR_INVALID naming the first fault. */
static tsl_status check_choices(const tsl_workload *w, const tsl_plan *p) {
    if (p->n_algos < 0 || (p->n_algos > 0 && !p->algos))
        return tsl_fail(TSL_ERR_INVALID, "plan '%s': %d algorithm choices without a list",
                        p->job, p->n_algos);
    for (int32_t x = 0; x < p->n_algos; x++) {
        const tsl_plan_algo *c = &p->algos[x];
        if (c->op < 0 || c->op >= w->n_ops)
            return tsl_fail(TSL_ERR_INVALID,
                            "plan '%s': algorithm choice %d: op %d out of range (%d ops)",
                            p->job, x, c->op, w->n_ops);
        if (x > 0 && c->op <= p->algos[x - 1].op)
            return tsl_fail(TSL_ERR_INVALID,
                            "plan '%s': algorithm choices %d and %d: ops %d and %d are not in "
                            "increasing order (tsl_plan_set_algo keeps them so)",
                            p->job, x - 1, x, p->algos[x - 1].op, c->op);
        int32_t n = tsl_workload_op_n_algos(w, c->op);
        if (c->algo < 1 || c->algo >= n)
            return tsl_fail(TSL_ERR_INVALID,
                            "plan '%s': op %d ('%s') runs with algorithm %d, but it has %d "
                            "(0 to %d)",
                            p->job, c->op, w->ops[c->op].name, c->algo, n, n - 1);
    }
    return TSL_OK;
}

tsl_status tsl_workload_for_plan(const tsl_workload *w, const tsl_plan *p, tsl_workload **out) {
    TSL_ASSERT(w && p && out);
    *out = NULL;
    tsl_status st = check_choices(w, p);
    if (st != TSL_OK) return st;
    tsl_workload *c = tsl_workload_copy(w, NULL);
    if (!c) return tsl_fail(TSL_ERR_OOM, "workload '%s': out of host memory", w->job);
    /* each op keeps its gap to the previous one's end (0 when contiguous:
     * then it starts exactly where the previous one ends, no rounding) */
    double prev_old = 0.0, prev_new = 0.0;
    int32_t x = 0;
    for (int32_t i = 0; i < c->n_ops; i++) {
        tsl_wl_op *o = &c->ops[i];
        double dur = o->end_us - o->start_us;
        if (x < p->n_algos && p->algos[x].op == i) {
            tsl_wl_algo a = tsl_workload_op_algo(w, i, p->algos[x++].algo);
            dur = a.us;
            o->workspace = a.workspace;
        }
        o->start_us = prev_new + (w->ops[i].start_us - prev_old);
        o->end_us = o->start_us + dur;
        prev_old = w->ops[i].end_us;
        prev_new = o->end_us;
        free(o->alts);
        o->alts = NULL;
        o->n_alts = 0;
    }
    c->period_us = prev_new + (w->period_us - prev_old);
    *out = c;
    return TSL_OK;
}

tsl_status tsl__workload_as_run(const tsl_workload *w, const tsl_plan *p,
                                const tsl_workload **use, tsl_workload **owned) {
    *owned = NULL;
    *use = w;
    if (!p || p->n_algos == 0) return TSL_OK;
    tsl_status st = tsl_workload_for_plan(w, p, owned);
    if (st == TSL_OK) *use = *owned;
    return st;
}
