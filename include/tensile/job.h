/*
 * tensile/job.h - one training job in the library: from a graph and
 * options to a session that follows a verified plan and is replanned as its
 * latencies drift. The one path `tensile run`, the tests and the daemon's
 * job processes share:
 *
 *   latencies (a measured table, or the profile's cost model)
 *     -> the workload of the graph, its kernels' workspaces matched to the
 *        backend
 *     -> a plan by the policy within the budget -> verified
 *     -> the runtime attached, the plan installed
 *     -> at every iteration boundary: if the latency estimates have drifted
 *        from the plan's by more than replan.threshold for replan.patience
 *        boundaries in a row, the workload is rebuilt with the estimates,
 *        planned, verified and installed at the next boundary (paper IV-E;
 *        decided here, outside the runtime's lock).
 *
 * Example usage:
 *
 *   tsl_job_opts o = tsl_job_opts_default();
 *   o.session.device_memory = 64u << 20;        // the device
 *   o.budget = 0;                                // plan to all of it
 *   o.latency_us = measured;                     // or NULL: the cost model
 *   tsl_job *j;
 *   if (tsl_job_new(g, &o, &j) != TSL_OK) die(tsl_last_error());
 *   for (...) tsl_job_step(j, x, y, &st);
 *   tsl_job_stats js; tsl_job_get_stats(j, &js);
 *   tsl_job_free(j);
 */
#ifndef TENSILE_JOB_H
#define TENSILE_JOB_H

#include "tensile/policy.h"
#include "tensile/runtime.h"
#include "tensile/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_replan_opts {
    int enabled;        /* default 1 */
    double threshold;   /* change rate |S'-S|/S of the summed latencies (default 0.3) */
    int patience;       /* boundaries in a row above the threshold before replanning
                           (default 3; 1 is the paper's rule: CPU kernel times are noisy
                           enough that one slow iteration would cost a replan) */
    int64_t update_at;  /* > 0: at the boundary after iteration update_at, replan from the
                           latency estimates whatever the change rate (once; cold start: the
                           first plan was made from predicted latencies, TENSILE_cs, and the
                           one corrected by the measured EWMA takes over, TENSILE_up, paper
                           IV-E); 0 (default): only on drift. Acts even with enabled 0 */
} tsl_replan_opts;

typedef struct tsl_job_opts {
    const char *name;           /* the job in workloads and plans (NULL: the graph's name) */
    tsl_session_opts session;   /* the device (the session's CPU backend) and the seed */
    tsl_backend *backend;       /* NULL: the session's own CPU backend from `session`;
                                   else this one (not owned: free it after the job) */
    const char *profile;        /* device profile to plan with (a name or a path); NULL: the
                                   default, tsl_job_default_profile */
    const tsl_device_profile *device_profile; /* or this one as it is (wins over `profile`;
                                   mem_bytes 0: the device's capacity) */
    const double *latency_us;   /* per-op latencies (n_ops values) for the first plan,
                                   e.g. measured (tsl_job_latency_medians); NULL: the
                                   profile's cost model */
    const struct tsl_predictor *predictor; /* cold start (tensile/predict.h): with latency_us
                                   NULL, the first plan's latencies are this predictor's for
                                   every op (cost model for op types it has no model of); not
                                   owned, only read while the job opens. NULL: none */
    double utilisation;         /* with predictor: the device's utilisation by other work, in
                                   [0, 1] (a predictor feature; default 0); < 0: measured when
                                   the job opens (tsl_cpu_utilisation over 200 ms; 0 where it
                                   cannot be) */
    tsl_plan_opts plan;         /* the policy and its options; plan.budget 0: the device */
    tsl_runtime_opts runtime;   /* strict mode, EWMA weight, virtual clock, eviction;
                                   runtime.profile is set from the job's profile */
    tsl_replan_opts replan;
} tsl_job_opts;

tsl_job_opts tsl_job_opts_default(void);

typedef struct tsl_job tsl_job;

/* Opens a job on finalized graph g (which must outlive the job): session,
 * profile, workload, first plan, verification, runtime. TSL_ERR_OOM, naming
 * the op and the sizes, if the device is below the job's op floor
 * (tsl_workload_op_floor: no plan or eviction can run that op). A device
 * above it that the plan misses (persistent tensors that do not fit wait
 * on the host) still runs: the runtime evicts on demand and brings in what
 * is missing, within the device, slower than the plan. TSL_ERR_INVALID
 * for bad options or a plan that fails verification (an internal error of
 * the policy), with the message naming it. */
tsl_status tsl_job_new(const tsl_graph *g, const tsl_job_opts *o, tsl_job **out);
void tsl_job_free(tsl_job *j); /* NULL is fine */

/* One training iteration (tsl_session_step on the job's session; a
 * replan decided at its boundary takes effect at the next). */
tsl_status tsl_job_step(tsl_job *j, const float *x, const int32_t *y, tsl_step_stats *st);

/* ---- a job planned by someone else (a daemon's Memory Scheduler) ---------------- */

/* The workload a job on g would make its first plan from: o->latency_us,
 * o->predictor's predictions (cold start), or the cost model of profile dev; every op's workspace as the backend of
 * o's kernels and threads allocates it (asked of o->backend, or of a bare
 * CPU backend that holds no device memory). A job registers it with its
 * planner before it has a device. *out is the caller's. TSL_ERR_INVALID,
 * TSL_ERR_OOM. */
tsl_status tsl_job_workload_new(const tsl_graph *g, const tsl_job_opts *o,
                                const tsl_device_profile *dev, tsl_workload **out);

/* Opens a job that follows plans made elsewhere: its session on o's device
 * (o->backend, or one of o->session), `plan` (made from w, for profile
 * *o->device_profile, which must be set) verified against that profile,
 * the runtime attached and the plan installed. The job never replans on
 * its own (o->replan is ignored): its planner sends new plans
 * (tsl_job_set_plan). Takes over w and plan, on failure too. Errors as
 * tsl_job_new. */
tsl_status tsl_job_new_planned(const tsl_graph *g, const tsl_job_opts *o, tsl_workload *w,
                               tsl_plan *plan, tsl_job **out);

/* Sets `plan` (made from w: the same graph, new latencies; for profile dev,
 * NULL: the job's) to take effect at the next iteration boundary, verified
 * first (TSL_ERR_INVALID naming the first violation; the current plan
 * stays). The job's profile becomes *dev. Takes over w and plan, on
 * failure too. */
tsl_status tsl_job_set_plan(tsl_job *j, tsl_workload *w, tsl_plan *plan,
                            const tsl_device_profile *dev);

/* Plans that have taken effect so far (the runtime's count): a plan set
 * with tsl_job_set_plan is in force once this has grown past the count
 * seen when it was set. */
int64_t tsl_job_plans_installed(const tsl_job *j);

tsl_session *tsl_job_session(tsl_job *j);
/* The plan made last (installed, or to be installed at the next boundary)
 * and the workload it was made from. */
const tsl_plan *tsl_job_plan(const tsl_job *j);
const tsl_workload *tsl_job_workload(const tsl_job *j);
const tsl_device_profile *tsl_job_profile(const tsl_job *j);

typedef struct tsl_job_stats {
    tsl_runtime_stats runtime;
    size_t vanilla_peak;        /* the first plan's report: the workload's vanilla peak load */
    size_t planned_peak;        /* and the plan's predicted peak load */
    size_t vanilla_footprint;   /* the empty plan's layout extent */
    size_t planned_footprint;   /* the first plan's predicted footprint (its layout's extent) */
    int budget_met;             /* the first plan's footprint fits the planning budget */
    int swaps, recomputes;      /* events of the first plan */
    double planning_ms;         /* of the first plan */
    double predict_ms;          /* predicting the first plan's latencies (cold start; else 0) */
    double utilisation;         /* the utilisation the prediction used (cold start) */
    int64_t replans;            /* plans made because latencies drifted */
    int64_t replans_refused;    /* drift replans whose plan was refused (it did not fit the
                                   budget, or planning failed): the plan in force stayed */
    int updated;                /* the replan of replan.update_at was made (1) or failed (-1) */
    int64_t updated_at;         /* the iteration whose boundary made it (0: none) */
    char update_reason[200];    /* what the update did, or why it failed (kept apart from
                                   last_replan_reason, which later replans overwrite) */
    int64_t drift_ignored;      /* boundaries above the threshold not (yet) acted on: the
                                   drift had not lasted replan.patience boundaries */
    char last_replan_reason[200];
} tsl_job_stats;

void tsl_job_get_stats(const tsl_job *j, tsl_job_stats *st);

/* The device profile to plan with on this machine: `name` (a profile name
 * or path) if given, else profiles/cpu-local.json (`tensile calibrate`) if
 * it exists, else tsl_profile_cpu_rough(); its copy bandwidths set to
 * pcie_gbps GB/s when > 0 (the CPU backend's throttle), its memory to
 * capacity. TSL_ERR_IO / TSL_ERR_FORMAT for a named profile that cannot be
 * loaded. */
tsl_status tsl_job_default_profile(const char *name, double pcie_gbps, size_t capacity,
                                   tsl_device_profile *out);

/* Per-op latencies in µs from kernel times in ms recorded over n_iter
 * iterations (ms[it * n_ops + i]): the median of each op over the
 * iterations, the first left out when there are several (it builds the
 * kernels' state and touches the memory); a non-positive median becomes
 * 0.001 µs (a workload needs positive durations). TSL_ERR_INVALID for
 * n_iter < 1, TSL_ERR_OOM. */
tsl_status tsl_job_latency_medians(const double *ms, int64_t n_iter, int32_t n_ops, double *us);

#ifdef __cplusplus
}
#endif
#endif
