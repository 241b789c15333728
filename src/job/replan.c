/*
 * replan.c - plan updating (paper IV-E), decided by the job that owns the
 * runtime, at the runtime's iteration boundaries, outside its lock.
 *
 * The runtime reports, at the end of every plan-following step, the change
 * rate |S' - S| / S of its summed latency estimates S' (EWMA of the
 * kernels' times) against the summed latencies S of the plan's workload.
 * When the rate has been above replan.threshold for replan.patience
 * boundaries in a row, the job rebuilds the workload with the estimates
 * (same tensors and ops, new times), plans it with its policy, verifies the
 * plan and installs it for the next boundary; the count and the reason go
 * to the job's statistics. A boundary above the threshold that is not acted
 * on is counted as ignored drift. A plan someone else set for that
 * boundary wins over a replan. If replanning fails - or finds no plan
 * within the budget where the current plan is within it - the current
 * plan stays and the rate's base becomes S', so that the failure is not
 * repeated every iteration. A new plan taking effect starts the count afresh.
 *
 * Cold start (replan.update_at > 0): the first plan was made from predicted
 * latencies; at the boundary after iteration update_at the job replans from
 * the estimates once, whatever the change rate (TENSILE_cs gives way to
 * TENSILE_up); drift replanning goes on as before afterwards.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job_internal.h"

/* Plans the workload rebuilt with the estimates and sets the plan for the
 * next boundary. TSL_OK, or the error (planning, verification). */
static tsl_status replan(tsl_job *j) {
    tsl_status st = tsl_session_latency_snapshot(j->s, j->ewma, NULL);
    if (st != TSL_OK) return st;
    tsl_workload *w = tsl_workload_copy(j->w, j->ewma);
    if (!w) return tsl_fail(TSL_ERR_OOM, "out of host memory");
    tsl_plan *p = NULL;
    tsl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    st = tsl__job_plan(j, w, &p, &rep);
    /* a plan that holds the device's memory is never traded for one that
     * does not (the runtime would evict all along): it stays, stalls and
     * all, and the failure says why */
    if (st == TSL_OK && !rep.budget_met && j->plan && j->plan->predicted_footprint <= rep.budget)
        st = tsl_fail(TSL_ERR_BUDGET,
                      "the best plan needs %zu bytes > budget %zu; the current plan (%zu) stays",
                      p->predicted_footprint, rep.budget, j->plan->predicted_footprint);
    tsl_plan_report_free(&rep);
    if (st == TSL_OK) st = tsl_session_set_plan_for(j->s, p, w);
    if (st != TSL_OK) {
        tsl_plan_free(p);
        tsl_workload_free(w);
        return st;
    }
    tsl_plan_free(j->plan);
    tsl_workload_free(j->w);
    j->plan = p;
    j->w = w;
    return TSL_OK;
}

void tsl__job_boundary(void *user, tsl_session *s, const tsl_latency_report *r) {
    tsl_job *j = user;
    (void)s;
    if (r->plans_installed != j->seen_installs) { /* a new plan: a new base */
        j->seen_installs = r->plans_installed;
        j->drift_run = 0;
        j->base_override = 0;
    }
    if (!r->has_plan) return;
    if (j->o.replan.update_at > 0 && !j->updated && r->iteration >= j->o.replan.update_at &&
        !r->plan_pending) { /* cold start's update: the measured latencies take over */
        tsl_status st = replan(j);
        j->updated = st == TSL_OK ? 1 : -1;
        j->updated_at = r->iteration;
        if (st == TSL_OK)
            snprintf(j->last_reason, sizeof j->last_reason,
                     "iteration %lld: the first plan's latencies (predicted) updated from the "
                     "measured ones (EWMA): %.1f us vs %.1f us of the plan",
                     (long long)r->iteration, r->ewma_latency_us, r->plan_latency_us);
        else {
            char why[120];
            snprintf(why, sizeof why, "%s", tsl_last_error());
            snprintf(j->last_reason, sizeof j->last_reason,
                     "iteration %lld: update from measured latencies failed: %.80s",
                     (long long)r->iteration, why);
        }
        snprintf(j->update_reason, sizeof j->update_reason, "%s", j->last_reason);
        return;
    }
    double base = j->base_override > 0 ? j->base_override : r->plan_latency_us;
    double sum = r->ewma_latency_us;
    if (!(base > 0)) return;
    double rate = fabs(sum - base) / base;
    const tsl_replan_opts *o = &j->o.replan;
    if (!o->enabled || r->plan_pending) return;
    if (!(rate > o->threshold)) {
        j->drift_run = 0;
        return;
    }
    if (++j->drift_run < o->patience) {
        j->drift_ignored++;
        return;
    }
    j->drift_run = 0;
    tsl_status st = replan(j);
    if (st == TSL_OK) {
        j->replans++;
        snprintf(j->last_reason, sizeof j->last_reason,
                 "iteration %lld: summed op latency %.1f us vs %.1f us of the plan: change rate "
                 "%.3f > threshold %.3f for %d iterations",
                 (long long)r->iteration, sum, base, rate, o->threshold, o->patience);
    } else {
        char why[120];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        snprintf(j->last_reason, sizeof j->last_reason,
                 "iteration %lld: change rate %.3f > %.3f but replanning failed: %s",
                 (long long)r->iteration, rate, o->threshold, why);
        j->replans_refused++;
        j->base_override = sum; /* do not retry every iteration */
    }
}
