/*
 * tensile/policy_capuchin.h - the options of the "capuchin" policy
 * (Capuchin, Peng et al., ASPLOS 2020: swap and recomputation chosen per
 * tensor from its access pattern; src/sched/policy_capuchin.c): for
 * callers that set them as C fields rather than by name
 * (tsl_policy_opts_set with "swap", "recompute", "min-bytes").
 *
 * Capuchin plans only under memory pressure: with no budget below the
 * jobs' vanilla peaks (the profile's memory), its plans are empty. For a
 * comparison give it TENSILE's footprint as the budget (the TENSILE
 * paper's "Extra Setting"; docs/SCHEDULING.md, "Capuchin").
 *
 * Example usage:
 *
 *   tsl_capuchin_opts co = tsl_capuchin_opts_default();
 *   co.recompute = 0;                                  // swaps only
 *   tsl_plan_opts po = tsl_plan_opts_default();
 *   po.policy = tsl_policy_find("capuchin");
 *   po.opts = &co;                                     // must outlive po's use
 *   po.budget = tensile_footprint;
 *   tsl_plan_jobs(w, 1, &dev, &po, plans, &rep);
 */
#ifndef TENSILE_POLICY_CAPUCHIN_H
#define TENSILE_POLICY_CAPUCHIN_H

#include "tensile/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_capuchin_opts {
    int swap;          /* 1: tensors may be swapped (default 1) */
    int recompute;     /* 1: tensors may be recomputed (default 1) */
    double min_bytes;  /* smaller tensors are not candidates; [-1, 2^60]. -1 (default):
                          TENSILE's min-swap-bytes default, per job the smaller of the
                          bytes the slower copy direction carries in one copy latency
                          and a thousandth of the job's vanilla peak (240 KB on the
                          A6000 profile): taken by free time first, the tiny tensors
                          (biases, batch-norm statistics: the longest free times) would
                          fill the channels with copies that free almost nothing
                          (docs/SCHEDULING.md, "Capuchin"); 0: any size, the paper */
} tsl_capuchin_opts;

/* The defaults above. */
tsl_capuchin_opts tsl_capuchin_opts_default(void);

#ifdef __cplusplus
}
#endif
#endif
