/*
 * job.c - one training job (tensile/job.h): the session, the profile, the
 * workload with the kernels' workspaces, the first plan, its verification,
 * the runtime with the replanner (replan.c) at its boundaries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job_internal.h"

tsl_job_opts tsl_job_opts_default(void) {
    tsl_job_opts o;
    memset(&o, 0, sizeof o);
    o.session = tsl_session_opts_default();
    o.plan = tsl_plan_opts_default();
    o.runtime = tsl_runtime_opts_default();
    o.replan.enabled = 1;
    o.replan.threshold = 0.3;
    o.replan.patience = 3;
    return o;
}

static tsl_status check_opts(const tsl_job_opts *o) {
    if (o->replan.enabled && (!(o->replan.threshold >= 0) || o->replan.threshold > 1e6))
        return tsl_fail(TSL_ERR_INVALID, "job: replan threshold %g outside [0, 1e6]",
                        o->replan.threshold);
    if (o->replan.enabled && (o->replan.patience < 1 || o->replan.patience > 1000000))
        return tsl_fail(TSL_ERR_INVALID, "job: replan patience %d outside 1..1000000",
                        o->replan.patience);
    return TSL_OK;
}

tsl_status tsl__job_plan(tsl_job *j, tsl_workload *w, tsl_plan **out, tsl_plan_report *rep) {
    *out = NULL;
    tsl_plan *p = NULL;
    tsl_status st = tsl_plan_jobs(&w, 1, &j->dev, &j->o.plan, &p, rep);
    /* a budget the policy cannot meet still gives its best plan: the job
     * runs with it (the report says budget_met 0; the runtime evicts if the
     * device cannot hold it) */
    if (st == TSL_ERR_BUDGET) {
        tsl_clear_error();
        st = TSL_OK;
    }
    if (st != TSL_OK) return st;
    tsl_violation *v = NULL;
    int nv = 0;
    st = tsl_plan_verify(w, p, &j->dev, &v, &nv);
    if (st != TSL_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", nv ? v[0].what : tsl_last_error());
        free(v);
        tsl_plan_free(p);
        return tsl_fail(TSL_ERR_INVALID, "job '%s': the plan fails verification: %s", j->name, why);
    }
    free(v);
    *out = p;
    return TSL_OK;
}

tsl_status tsl_job_new(const tsl_graph *g, const tsl_job_opts *opts, tsl_job **out) {
    *out = NULL;
    tsl_job_opts o = opts ? *opts : tsl_job_opts_default();
    tsl_status st = check_opts(&o);
    if (st != TSL_OK) return st;
    tsl_job *j = calloc(1, sizeof *j);
    if (!j) return tsl_fail(TSL_ERR_OOM, "job: out of host memory");
    j->g = g;
    j->o = o;
    snprintf(j->name, sizeof j->name, "%s", o.name ? o.name : tsl_graph_name(g));
    j->ewma = malloc(sizeof *j->ewma * ((size_t)tsl_graph_n_ops(g) + 1));
    if (!j->ewma) st = tsl_fail(TSL_ERR_OOM, "job: out of host memory");
    /* the device: a runtime follows, so persistent tensors that do not fit
     * wait on the host for the plan to bring them in */
    o.session.persistent_on_host = 1;
    if (st == TSL_OK)
        st = o.backend ? tsl_session_new_on(g, o.backend, &o.session, &j->s)
                       : tsl_session_new(g, &o.session, &j->s);
    size_t capacity = 0;
    if (st == TSL_OK) {
        tsl_backend_caps caps;
        tsl_backend *b = o.backend ? o.backend : NULL;
        if (!b) capacity = o.session.device_memory;
        else {
            b->iface->caps(b, &caps);
            capacity = caps.capacity;
        }
        if (o.device_profile) {
            j->dev = *o.device_profile;
            if (j->dev.mem_bytes == 0) j->dev.mem_bytes = capacity;
        } else {
            st = tsl_job_default_profile(o.profile, o.backend ? 0.0 : o.session.pcie_gbps,
                                         capacity, &j->dev);
        }
    }
    /* the workload: latencies, the kernels' real workspaces */
    if (st == TSL_OK) {
        tsl_latency_table tab = {tsl_graph_n_ops(g), o.latency_us};
        st = tsl_workload_from_graph(g, j->name, o.latency_us ? &tab : NULL, &j->dev, &j->w);
    }
    if (st == TSL_OK) st = tsl_workload_match_session(j->w, j->s);
    /* the first plan, verified */
    if (st == TSL_OK) {
        if (j->o.plan.budget == 0) j->o.plan.budget = capacity;
        st = tsl__job_plan(j, j->w, &j->plan, &j->first);
    }
    /* persistent tensors that did not fit at opening: only a plan that
     * fits the device brings them in */
    const char *why = NULL;
    if (st == TSL_OK && tsl_session_n_on_host(j->s, &why) && !j->first.budget_met)
        st = tsl_fail(TSL_ERR_OOM,
                      "job '%s': %s; and the plan does not fit either: its footprint is %zu bytes "
                      "on a device of %zu",
                      j->name, why, j->plan->predicted_footprint, capacity);
    /* the runtime, the plan, the replanner */
    if (st == TSL_OK) {
        tsl_runtime_opts ro = o.runtime;
        ro.profile = j->dev;
        ro.on_boundary = tsl__job_boundary;
        ro.boundary_user = j;
        st = tsl_session_attach_runtime(j->s, &ro, j->w);
    }
    if (st == TSL_OK) st = tsl_session_set_plan(j->s, j->plan);
    if (st != TSL_OK) {
        tsl_job_free(j);
        return st;
    }
    *out = j;
    return TSL_OK;
}

void tsl_job_free(tsl_job *j) {
    if (!j) return;
    tsl_session_free(j->s);
    tsl_plan_free(j->plan);
    tsl_plan_report_free(&j->first);
    tsl_workload_free(j->w);
    free(j->ewma);
    free(j);
}

tsl_status tsl_job_step(tsl_job *j, const float *x, const int32_t *y, tsl_step_stats *st) {
    return tsl_session_step(j->s, x, y, st);
}

tsl_session *tsl_job_session(tsl_job *j) { return j->s; }
const tsl_plan *tsl_job_plan(const tsl_job *j) { return j->plan; }
const tsl_workload *tsl_job_workload(const tsl_job *j) { return j->w; }
const tsl_device_profile *tsl_job_profile(const tsl_job *j) { return &j->dev; }

void tsl_job_get_stats(const tsl_job *j, tsl_job_stats *st) {
    memset(st, 0, sizeof *st);
    tsl_session_runtime_stats(j->s, &st->runtime);
    st->vanilla_peak = j->first.vanilla_peak[0];
    st->planned_peak = j->first.planned_peak[0];
    st->vanilla_footprint = j->first.vanilla_footprint[0];
    st->planned_footprint = j->first.planned_footprint[0];
    st->budget_met = j->first.budget_met;
    st->swaps = j->first.swaps[0];
    st->recomputes = j->first.recomputes[0];
    st->planning_ms = j->first.planning_ms;
    st->replans = j->replans;
    st->drift_ignored = j->drift_ignored;
    snprintf(st->last_replan_reason, sizeof st->last_replan_reason, "%s", j->last_reason);
}
