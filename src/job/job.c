/*
 * job.c - one training job (tensile/job.h): the session, the profile, the
 * workload with the kernels' workspaces, the first plan, its verification,
 * the runtime with the replanner (replan.c) at its boundaries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "job/job_internal.h"
#include "tensile/predict.h"
#include "tensile/backend_cpu.h"

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
    if (o->replan.update_at < 0)
        return tsl_fail(TSL_ERR_INVALID, "job: replan update_at %lld is negative",
                        (long long)o->replan.update_at);
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

/* A job's shell: options checked, name, scratch, the session on its
 * device (persistent tensors that do not fit wait on the host for a plan
 * to bring them in), its capacity and its profile. TSL_OK with *out; the
 * error otherwise (nothing left allocated). */
static tsl_status job_open(const tsl_graph *g, const tsl_job_opts *opts, tsl_job **out,
                           size_t *capacity) {
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
    o.session.persistent_on_host = 1;
    if (st == TSL_OK)
        st = o.backend ? tsl_session_new_on(g, o.backend, &o.session, &j->s)
                       : tsl_session_new(g, &o.session, &j->s);
    *capacity = 0;
    if (st == TSL_OK) {
        tsl_backend_caps caps;
        tsl_backend *b = o.backend ? o.backend : NULL;
        if (!b) *capacity = o.session.device_memory;
        else {
            b->iface->caps(b, &caps);
            *capacity = caps.capacity;
        }
        if (o.device_profile) {
            j->dev = *o.device_profile;
            if (j->dev.mem_bytes == 0) j->dev.mem_bytes = *capacity;
        } else {
            st = tsl_job_default_profile(o.profile, o.backend ? 0.0 : o.session.pcie_gbps,
                                         *capacity, &j->dev);
        }
    }
    if (st != TSL_OK) {
        tsl_job_free(j);
        return st;
    }
    *out = j;
    return TSL_OK;
}

/* Refuses a device below j's op floor (tsl_workload_op_floor: one op's
 * inputs, outputs and least workspace at once): no plan and no eviction
 * can run that op, and the first step would fail part-way, with some of
 * its updates applied. Above the floor the job starts with its plan even
 * where the plan misses the device (j->first.budget_met 0; persistent
 * tensors that did not fit wait on the host): the runtime evicts on
 * demand and brings what is missing in passively, slower than the plan
 * but within the device. Then attaches the runtime (with the replanner at
 * its boundaries) and installs j->plan. */
static tsl_status job_start(tsl_job *j, size_t capacity) {
    int32_t op = -1;
    size_t floor_bytes = tsl_workload_op_floor(j->w, &op);
    if (capacity < floor_bytes)
        return tsl_fail(TSL_ERR_OOM,
                        "job '%s': device out of memory: the device of %zu bytes is below the "
                        "job's op floor of %zu bytes: op '%s' needs its inputs, outputs and "
                        "least workspace at once, which no plan or eviction makes smaller",
                        j->name, capacity, floor_bytes, op >= 0 ? j->w->ops[op].name : "?");
    tsl_runtime_opts ro = j->o.runtime;
    ro.profile = j->dev;
    ro.on_boundary = tsl__job_boundary;
    ro.boundary_user = j;
    tsl_status st = tsl_session_attach_runtime(j->s, &ro, j->w);
    if (st == TSL_OK) st = tsl_session_set_plan(j->s, j->plan);
    return st;
}

/* The first plan's latency table: o->latency_us, else (cold start) o's
 * predictor's predictions in *owned (malloc'd, the caller frees it), else
 * NULL (the cost model). *ms: the prediction's time. */
static tsl_status first_latencies(const tsl_graph *g, const tsl_job_opts *o,
                                  const tsl_device_profile *dev, const double **us, double **owned,
                                  double *ms, double *util_used) {
    *owned = NULL;
    *ms = 0;
    *us = o->latency_us;
    if (o->latency_us || !o->predictor) return TSL_OK;
    if (!(o->utilisation <= 1) || o->utilisation != o->utilisation)
        return tsl_fail(TSL_ERR_INVALID, "job: utilisation %g above 1 (give [0, 1], or < 0 to "
                                         "measure it)", o->utilisation);
    double util = o->utilisation;
    if (util < 0) { /* measured: the machine's load by others before the job starts */
        util = tsl_cpu_utilisation(200);
        if (util < 0) util = 0;
    }
    *util_used = util;
    *owned = malloc(sizeof **owned * (size_t)(tsl_graph_n_ops(g) > 0 ? tsl_graph_n_ops(g) : 1));
    if (!*owned) return tsl_fail(TSL_ERR_OOM, "job: out of host memory for predicted latencies");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    tsl_predictor_latencies(o->predictor, g, util, dev, *owned);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    *us = *owned;
    return TSL_OK;
}

tsl_status tsl_job_new(const tsl_graph *g, const tsl_job_opts *opts, tsl_job **out) {
    size_t capacity;
    tsl_job *j;
    tsl_status st = job_open(g, opts, &j, &capacity);
    if (st != TSL_OK) return st;
    /* the workload: latencies (measured, predicted or the cost model's),
     * the kernels' real workspaces */
    const double *lat;
    double *owned;
    st = first_latencies(g, &j->o, &j->dev, &lat, &owned, &j->predict_ms, &j->utilisation);
    tsl_latency_table tab = {tsl_graph_n_ops(g), lat};
    if (st == TSL_OK) st = tsl_workload_from_graph(g, j->name, lat ? &tab : NULL, &j->dev, &j->w);
    free(owned);
    if (st == TSL_OK) st = tsl_workload_match_session(j->w, j->s);
    /* the first plan, verified */
    if (st == TSL_OK) {
        if (j->o.plan.budget == 0) j->o.plan.budget = capacity;
        st = tsl__job_plan(j, j->w, &j->plan, &j->first);
    }
    if (st == TSL_OK) st = job_start(j, capacity);
    if (st != TSL_OK) {
        tsl_job_free(j);
        return st;
    }
    *out = j;
    return TSL_OK;
}

tsl_status tsl_job_workload_new(const tsl_graph *g, const tsl_job_opts *o,
                                const tsl_device_profile *dev, tsl_workload **out) {
    *out = NULL;
    if (!g || !o || !dev) return tsl_fail(TSL_ERR_INVALID, "job workload: a NULL argument");
    char name[64];
    snprintf(name, sizeof name, "%s", o->name ? o->name : tsl_graph_name(g));
    const double *lat;
    double *owned, ms, util;
    tsl_status st = first_latencies(g, o, dev, &lat, &owned, &ms, &util);
    if (st != TSL_OK) return st;
    tsl_latency_table tab = {tsl_graph_n_ops(g), lat};
    tsl_workload *w;
    st = tsl_workload_from_graph(g, name, lat ? &tab : NULL, dev, &w);
    free(owned);
    if (st != TSL_OK) return st;
    /* the kernels' workspaces, from a backend like the job's that holds no
     * memory (its arena is reserved, never touched) */
    tsl_backend *b = o->backend;
    tsl_backend *probe = NULL;
    if (!b) {
        tsl_cpu_backend_opts bo = tsl_cpu_backend_opts_default((size_t)1 << 20);
        bo.kernels = o->session.kernels;
        bo.nthreads = o->session.nthreads > 0 ? o->session.nthreads : 1;
        st = tsl_cpu_backend_new_opts(&bo, &probe);
        b = probe;
    }
    if (st == TSL_OK) st = tsl_workload_match_backend(w, g, b);
    tsl_backend_free(probe);
    if (st != TSL_OK) {
        tsl_workload_free(w);
        return st;
    }
    *out = w;
    return TSL_OK;
}

/* Verifies plan p of workload w against dev: TSL_OK, or TSL_ERR_INVALID
 * naming the job and the first violation. */
static tsl_status verified(const tsl_job *j, const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev) {
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify(w, p, dev, &v, &nv);
    if (st != TSL_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", nv ? v[0].what : tsl_last_error());
        free(v);
        return tsl_fail(TSL_ERR_INVALID, "job '%s': the plan fails verification: %s", j->name,
                        why);
    }
    free(v);
    return TSL_OK;
}

tsl_status tsl_job_new_planned(const tsl_graph *g, const tsl_job_opts *opts, tsl_workload *w,
                               tsl_plan *plan, tsl_job **out) {
    *out = NULL;
    if (!opts || !opts->device_profile || !w || !plan) {
        tsl_workload_free(w);
        tsl_plan_free(plan);
        return tsl_fail(TSL_ERR_INVALID, "job: a planned job needs its options with the "
                                         "device profile, its workload and its plan");
    }
    size_t capacity;
    tsl_job *j;
    tsl_status st = job_open(g, opts, &j, &capacity);
    if (st != TSL_OK) {
        tsl_workload_free(w);
        tsl_plan_free(plan);
        return st;
    }
    j->w = w;
    j->plan = plan;
    j->o.replan.enabled = 0; /* its planner decides */
    j->o.replan.update_at = 0;
    if (w->n_ops != tsl_graph_n_ops(g))
        st = tsl_fail(TSL_ERR_INVALID, "job '%s': workload '%s' has %d ops, the graph %d",
                      j->name, w->job, (int)w->n_ops, (int)tsl_graph_n_ops(g));
    if (st == TSL_OK) st = verified(j, w, plan, &j->dev);
    if (st == TSL_OK) st = job_start(j, capacity);
    if (st != TSL_OK) {
        tsl_job_free(j);
        return st;
    }
    *out = j;
    return TSL_OK;
}

tsl_status tsl_job_set_plan(tsl_job *j, tsl_workload *w, tsl_plan *plan,
                            const tsl_device_profile *dev) {
    tsl_status st = TSL_OK;
    if (!j || !w || !plan)
        st = tsl_fail(TSL_ERR_INVALID, "job: set plan: a NULL job, workload or plan");
    if (st == TSL_OK) st = verified(j, w, plan, dev ? dev : &j->dev);
    if (st == TSL_OK) st = tsl_session_set_plan_on(j->s, plan, w, dev);
    if (st != TSL_OK) {
        tsl_workload_free(w);
        tsl_plan_free(plan);
        return st;
    }
    tsl_plan_free(j->plan);
    tsl_workload_free(j->w);
    j->plan = plan;
    j->w = w;
    if (dev) j->dev = *dev;
    return TSL_OK;
}

int64_t tsl_job_plans_installed(const tsl_job *j) {
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(j->s, &rs);
    return rs.plans_installed;
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
    if (j->first.vanilla_peak) { /* a job given its plans (tsl_job_new_planned) made none */
        st->vanilla_peak = j->first.vanilla_peak[0];
        st->planned_peak = j->first.planned_peak[0];
        st->vanilla_footprint = j->first.vanilla_footprint[0];
        st->planned_footprint = j->first.planned_footprint[0];
        st->budget_met = j->first.budget_met;
        st->swaps = j->first.swaps[0];
        st->recomputes = j->first.recomputes[0];
        st->planning_ms = j->first.planning_ms;
    }
    st->replans = j->replans;
    st->replans_refused = j->replans_refused;
    st->updated = j->updated;
    st->predict_ms = j->predict_ms;
    st->utilisation = j->utilisation;
    st->updated_at = j->updated_at;
    snprintf(st->update_reason, sizeof st->update_reason, "%s", j->update_reason);
    st->drift_ignored = j->drift_ignored;
    snprintf(st->last_replan_reason, sizeof st->last_replan_reason, "%s", j->last_reason);
}
