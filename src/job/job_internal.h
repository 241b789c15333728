/*
 * job_internal.h - a job's state (job.c) and its replanner (replan.c).
 */
#ifndef TSL_JOB_JOB_INTERNAL_H
#define TSL_JOB_JOB_INTERNAL_H

#include "tensile/job.h"
#include "tensile/verify.h"

struct tsl_job {
    const tsl_graph *g;
    tsl_job_opts o;
    char name[64];
    tsl_session *s;
    tsl_device_profile dev;
    tsl_workload *w;            /* the workload of the last plan */
    tsl_plan *plan;             /* the last plan made */
    tsl_plan_report first;      /* the first plan's report */
    /* replanning (replan.c) */
    int drift_run;              /* boundaries in a row above the threshold */
    int64_t seen_installs;      /* plans installed when the runtime last reported */
    double base_override;       /* > 0: the change rate's base after a failed replan */
    int64_t replans, drift_ignored;
    int64_t replans_refused; /* drift replans whose new plan was refused: the plan in force stayed */
    int updated;                /* replan.update_at's replan: 1 made, -1 failed, 0 not yet */
    int64_t updated_at;
    char update_reason[200];
    char last_reason[200];
    double *ewma;               /* scratch: the estimates (n_ops) */
    double predict_ms;          /* cold start: computing the predicted latencies */
    double utilisation;         /* cold start: the utilisation predicted at */
};

/* Plans w (owned by the caller) with the job's policy within its budget and
 * verifies the plan: *out on success. TSL_ERR_INVALID naming the first
 * violation if the plan does not verify. */
tsl_status tsl__job_plan(tsl_job *j, tsl_workload *w, tsl_plan **out, tsl_plan_report *rep);

/* The boundary callback the job installs on its runtime (replan.c). */
void tsl__job_boundary(void *user, tsl_session *s, const tsl_latency_report *r);
#endif
