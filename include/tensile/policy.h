/*
 * tensile/policy.h - planning: turning workloads and a device into plans.
 */
#ifndef TENSILE_POLICY_H
#define TENSILE_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the planner ------------------------------------------------------------ */
typedef enum tsl_policy { TSL_POLICY_VANILLA = 0, TSL_POLICY_TENSILE } tsl_policy;

typedef struct tsl_plan_opts {
    tsl_policy policy;
    size_t budget;             /* device memory for the jobs (0: the profile's) */
    double max_swap_rate[16];  /* per job, its priority; 1.0 = no limit */
    int recompute;             /* allow recomputation (default 1) */
    int max_iterations;        /* hard cap on Algorithm 3's loop (default 10000) */
    double swap_in_slack;      /* a swap-in is placed to land this fraction of its copy
                                  time before its access, so that ops running faster
                                  than their latency estimates do not make compute wait
                                  for the copy (default 0: exactly at the access, the
                                  paper's placement; docs/RESULTS.md compares 0.25) */
} tsl_plan_opts;
tsl_plan_opts tsl_plan_opts_default(void);

typedef struct tsl_plan_report {
    size_t vanilla_peak[16], planned_peak[16];
    int swaps[16], recomputes[16];
    size_t bytes_h2d[16], bytes_d2h[16];
    int iterations;            /* of Algorithm 3 */
    double planning_ms;
} tsl_plan_report;

/* Plans all jobs together (Algorithm 3 over every workload): minimises the
 * sum of per-job peaks; never plans compute waiting for a copy. plans[i] is
 * allocated for every job. */
tsl_status tsl_plan_jobs(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                         const tsl_plan_opts *opts, tsl_plan **plans, tsl_plan_report *rep);

#ifdef __cplusplus
}
#endif
#endif
