/*
 * tensile/policy_tensile.h - the options of the "tensile" policy (the
 * paper's Algorithm 3 over all the jobs of a device; src/sched/
 * policy_tensile.c): for callers that set them as C fields rather than by
 * name (tsl_policy_opts_set with "max-swap-rate", "swap-in-slack",
 * "min-swap-bytes", "recompute", "prefetch", "max-iterations", "fit").
 *
 * Example usage:
 *
 *   tsl_tensile_opts to = tsl_tensile_opts_default();
 *   double rates[2] = {0.5, 1.0};                       // job 0 holds at most half
 *   to.max_swap_rate = (tsl_per_job){.n = 2, .v = rates};
 *   to.swap_in_slack = 0.25;
 *   tsl_plan_opts po = tsl_plan_opts_default();
 *   po.opts = &to;                                      // must outlive po's use
 *   tsl_plan_jobs(w, 2, &dev, &po, plans, &rep);
 */
#ifndef TENSILE_POLICY_TENSILE_H
#define TENSILE_POLICY_TENSILE_H

#include "tensile/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_tensile_opts {
    tsl_per_job max_swap_rate; /* per job, its priority: the largest share of all the jobs'
                                  swapped tensors it may hold, in [0, 1] (1: no limit;
                                  default 1 for every job) */
    double swap_in_slack;      /* a swap-in is placed to land this fraction of its copy time
                                  before its access, so that ops running faster than their
                                  estimates do not wait for the copy; [0, 10] (default 0:
                                  exactly at the access, the paper's placement;
                                  docs/RESULTS.md compares 0.25) */
    double min_swap_bytes;     /* a tensor smaller than this is never swapped; -1 (default):
                                  per job, the smaller of the bytes a copy channel carries
                                  in one copy latency (copy_latency_us x the slower
                                  direction's bandwidth: 10 KB at 2 GB/s and 5 us, 240 KB
                                  on the A6000 profile) - below it a copy is mostly fixed
                                  cost, frees almost nothing, and its latency, the part
                                  that varies most, makes compute wait - and a thousandth
                                  of the job's vanilla peak (a small job on a fast device
                                  still swaps what matters to it); 0: any size (the
                                  paper); [-1, 2^60] */
    int recompute;             /* recomputation while the jobs exceed the budget (default 1) */
    int prefetch;              /* once the plans are laid out, each swap-in issued as early as
                                  its place in the layout and its channel allow (not before
                                  its tensor's last residency ends): the same footprint, and
                                  ops faster or copies slower than estimated wait less
                                  (default 1; 0: as late as possible, the paper) */
    int max_iterations;        /* hard cap on Algorithm 3's loop, 0..1e9 (default 10000) */
    int fit;                   /* planning to a budget: when Algorithm 3 leaves the jobs above
                                  the budget (and the budget is not below their floor, the
                                  largest working set one op needs), go on one choice at a
                                  time - a swap that hides, a swap that makes compute wait,
                                  a recomputation chained from the nearest resident tensors -
                                  taking the least added iteration time per byte taken off
                                  the peak, until the jobs fit; where the paper's plan meets
                                  the budget it is the plan (default 1; 0: the paper;
                                  docs/SCHEDULING.md, "Planning to a budget") */
} tsl_tensile_opts;

/* The defaults above. */
tsl_tensile_opts tsl_tensile_opts_default(void);

#ifdef __cplusplus
}
#endif
#endif
