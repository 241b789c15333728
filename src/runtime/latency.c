/*
 * latency.c - plan updating (paper IV-E): per-op latency EWMA, the change
 * rate of the summed latencies, replanning on drift.
 *
 * Each op's latency sample s (µs: the kernel's wall time in real time, the
 * op's virtual latency in the virtual clock) updates its estimate
 * s_new = w * sample + (1 - w) * s_old, w = opts.ewma_weight (0.9 by
 * default, as in the paper's reference code); the estimates start from the
 * attached workload's latencies (the cold start: cost model or a latency
 * table). At each iteration boundary with a plan, the change rate
 * |S' - S| / S compares the summed estimates S' with the summed latencies S
 * of the workload the current plan was made for. When it has been above
 * opts.replan_threshold at opts.replan_patience boundaries in a row (the
 * hysteresis: CPU kernel times are noisy, and with the paper's rule, a
 * patience of 1, one slow iteration costs a replan and often a second one
 * back), and with opts.replan, the runtime rebuilds the
 * workload with the estimates (same tensors and ops, new times), plans it
 * with tsl_plan_jobs(opts.profile, opts.plan_opts), verifies the plan and
 * installs it at the next boundary; the count and the reason (the rates)
 * go to the statistics. A plan the caller set for that boundary wins over
 * a replan. If replanning fails, the current plan stays and its base
 * becomes S', so that the failure is not repeated every iteration.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

double tsl__lat_sum(const double *lat, int32_t n) {
    double s = 0.0;
    for (int32_t i = 0; i < n; i++) s += lat[i];
    return s;
}

tsl_status tsl__lat_init(tsl__runtime *rt) {
    rt->ewma = malloc(sizeof *rt->ewma * ((size_t)rt->no + 1));
    if (!rt->ewma) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
    for (int32_t i = 0; i < rt->no; i++)
        rt->ewma[i] = rt->w0->ops[i].end_us - rt->w0->ops[i].start_us;
    return TSL_OK;
}

void tsl__lat_sample(tsl__runtime *rt, int32_t op, double us) {
    TSL_ASSERT(op >= 0 && op < rt->no);
    if (!(us >= 0) || !isfinite(us)) return;
    double w = rt->o.ewma_weight;
    rt->ewma[op] = w * us + (1.0 - w) * rt->ewma[op];
}

/* Plans the workload rebuilt with the estimates; on success the new plan
 * is pending. Returns TSL_OK or the planner's (or verifier's) error. */
static tsl_status replan(tsl__runtime *rt) {
    tsl_workload *wl = tsl__rt_workload_copy(rt->w0, rt->ewma);
    if (!wl) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    tsl_status st = tsl_plan_jobs(&wl, 1, &rt->o.profile, &rt->o.plan_opts, &p, &rep);
    if (st == TSL_OK) {
        tsl_violation *v = NULL;
        int nv = 0;
        st = tsl_plan_verify(wl, p, &rt->o.profile, &v, &nv);
        if (st != TSL_OK && nv > 0)
            st = tsl_fail(TSL_ERR_INTERNAL, "the new plan is not valid: %s", v[0].what);
        free(v);
    }
    tsl__rt_plan *pl = NULL;
    if (st == TSL_OK) st = tsl__rt_plan_new(p, wl, &pl);
    if (st == TSL_OK) {
        rt->pending = pl;
        rt->has_pending = 1;
    }
    tsl_plan_free(p);
    tsl_workload_free(wl);
    return st;
}

void tsl__lat_end_iteration(tsl__runtime *rt) {
    if (!rt->cur) return;
    double base = rt->cur->lat_sum, sum = tsl__lat_sum(rt->ewma, rt->no);
    if (!(base > 0)) return;
    double rate = fabs(sum - base) / base;
    rt->last_rate = rate;
    if (!rt->o.replan || rt->has_pending) return;
    if (!(rate > rt->o.replan_threshold)) {
        rt->drift_run = 0;
        return;
    }
    if (++rt->drift_run < rt->o.replan_patience) {
        rt->st.drift_ignored++;
        return;
    }
    rt->drift_run = 0;
    tsl_status st = replan(rt);
    if (st == TSL_OK) {
        rt->st.replans++;
        snprintf(rt->st.last_replan_reason, sizeof rt->st.last_replan_reason,
                 "iteration %lld: summed op latency %.1f us vs %.1f us of the plan: change rate "
                 "%.3f > threshold %.3f for %d iterations",
                 (long long)rt->iter, sum, base, rate, rt->o.replan_threshold, rt->o.replan_patience);
    } else {
        char why[96];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        snprintf(rt->st.last_replan_reason, sizeof rt->st.last_replan_reason,
                 "iteration %lld: change rate %.3f > %.3f but replanning failed: %s",
                 (long long)rt->iter, rate, rt->o.replan_threshold, why);
        rt->cur->lat_sum = sum; /* do not retry every iteration */
    }
}
