/*
 * verify_algos.c - the verifier's reading of a plan's algorithm choices
 * (docs/SCHEDULING.md, "Algorithms"), written apart from plan_algos.c: each
 * choice must name an op of the workload once, in increasing op order, and
 * an algorithm the op has (1 .. n_alts); the job is then verified on its
 * workload as run - every chosen op with that algorithm's latency and
 * workspace, the ops after it shifted by the difference. A choice that is
 * not valid is reported and the op verified with its default.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/verify_internal.h"

/* 1 if choice x of p is valid for w (reported into l otherwise). */
static int choice_ok(const tsl_workload *w, const tsl_plan *p, int32_t x, const char *prefix,
                     tsl__vf_list *l) {
    const tsl_plan_algo *c = &p->algos[x];
    if (c->op < 0 || c->op >= w->n_ops) {
        tsl__vf_add(l, prefix, "algorithm choice %d: op %d out of range [0, %d)", (int)x,
                    (int)c->op, (int)w->n_ops);
        return 0;
    }
    if (x > 0 && c->op <= p->algos[x - 1].op) {
        tsl__vf_add(l, prefix,
                    "algorithm choice %d: op '%s' comes after op %d: choices must name each op "
                    "once, in increasing order",
                    (int)x, w->ops[c->op].name, (int)p->algos[x - 1].op);
        return 0;
    }
    int32_t n = 1 + (w->ops[c->op].n_alts > 0 ? w->ops[c->op].n_alts : 0);
    if (c->algo < 1 || c->algo >= n) {
        tsl__vf_add(l, prefix,
                    "op '%s' runs with algorithm %d, which it does not have (its algorithms: 0 "
                    "to %d)",
                    w->ops[c->op].name, (int)c->algo, (int)n - 1);
        return 0;
    }
    return 1;
}

tsl_status tsl__vf_as_run(const tsl_workload *w, const tsl_plan *p, const char *prefix,
                          tsl__vf_list *l, tsl_workload **out) {
    *out = NULL;
    if (p->n_algos == 0) return TSL_OK;
    if (p->n_algos < 0 || !p->algos) {
        tsl__vf_add(l, prefix, "%d algorithm choices without a list", (int)p->n_algos);
        return TSL_OK;
    }
    tsl_workload *c = tsl_workload_copy(w, NULL);
    double *dur = malloc(sizeof *dur * ((size_t)w->n_ops + 1));
    if (!c || !dur) {
        tsl_workload_free(c);
        free(dur);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    for (int32_t i = 0; i < w->n_ops; i++) dur[i] = w->ops[i].end_us - w->ops[i].start_us;
    for (int32_t x = 0; x < p->n_algos; x++) {
        if (!choice_ok(w, p, x, prefix, l)) continue;
        const tsl_plan_algo *ch = &p->algos[x];
        const tsl_wl_algo *a = &w->ops[ch->op].alts[ch->algo - 1];
        dur[ch->op] = a->us;
        c->ops[ch->op].workspace = a->workspace;
    }
    /* each op keeps its gap to the previous one */
    double prev_old = 0.0, prev_new = 0.0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        double gap = w->ops[i].start_us - prev_old;
        c->ops[i].start_us = prev_new + gap;
        c->ops[i].end_us = c->ops[i].start_us + dur[i];
        prev_old = w->ops[i].end_us;
        prev_new = c->ops[i].end_us;
    }
    c->period_us = w->period_us - prev_old + prev_new;
    free(dur);
    *out = c;
    return TSL_OK;
}
