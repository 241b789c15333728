/*
 * tensile/verify.h - the independent verifier of plans (DESIGN.md invariant
 * 2, docs/SCHEDULING.md "Validity").
 *
 * The verifier has two answers. Safety violations make a plan invalid:
 * residency (every read finds its tensor resident or arriving), channel
 * exclusivity (one transfer at a time per channel, across the jobs),
 * memory (the predicted peak and period are what the events imply), and
 * never releasing a tensor in use or before a swap-out of it has ended.
 * Planned waits do not: a swap-in still copying when the op reading it
 * would start makes the op start when the copy has landed; the verifier
 * reports each with its predicted stall, and the plan's predicted period
 * must include them.
 *
 * Example usage:
 *
 *   tsl_verify_report r;
 *   if (tsl_plan_check(w, p, n, &dev, &r) != TSL_OK)       // a violation, or bad inputs
 *       for (int i = 0; i < r.n_violations; i++) puts(r.violations[i].what);
 *   for (int i = 0; i < r.n_waits; i++)                    // valid or not
 *       printf("%s (%.1f us)\n", r.waits[i].what, r.waits[i].stall_us);
 *   tsl_verify_report_free(&r);
 */
#ifndef TENSILE_VERIFY_H
#define TENSILE_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the verifier ---------------------------------------------------------- */
typedef struct tsl_violation {
    char what[320];        /* names the event, the access and the tensor */
} tsl_violation;

/* Checks DESIGN.md invariant 2 for one job's plan on its own channels.
 * Returns TSL_OK and *n = 0 when the plan is valid (planned waits are
 * allowed); TSL_ERR_INVALID and every safety violation otherwise (caller
 * frees *v); TSL_ERR_INVALID with *n == 0 when the workload or the profile
 * itself is malformed (the message names it). */
tsl_status tsl_plan_verify(const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev, tsl_violation **v, int *n);
/* Same, for several jobs sharing the device's channels. */
tsl_status tsl_plan_verify_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                                const tsl_device_profile *dev, tsl_violation **v, int *n);

/* One planned wait: an op (or a recomputation) that starts late because a
 * tensor it reads is still being swapped in when it would start. */
typedef struct tsl_planned_wait {
    int job;               /* index among the jobs verified together */
    int32_t op;            /* the op that waits; for a recomputation, the op it precedes */
    int32_t recompute;     /* the recompute event that waits, or -1 (the op itself waits) */
    int32_t event;         /* the swap-in waited for (the last of them to land), or the
                              release preceding the op, waiting for its swap-out */
    int32_t tensor;        /* its tensor */
    double stall_us;       /* how much later the op starts than it would have */
    char what[320];        /* names the op, the event, the tensor and the times */
} tsl_planned_wait;

/* The verifier's whole answer for n_jobs jobs. */
typedef struct tsl_verify_report {
    int n_violations;
    tsl_violation *violations;
    int n_waits;
    tsl_planned_wait *waits;   /* in job order, then in execution order */
    int n_jobs;
    size_t *peak;              /* per job: the peak the events imply, bytes */
    double *period_us;         /* per job: the period they imply (recomputations and waits) */
    double *stall_us;          /* per job: the total of its planned waits */
} tsl_verify_report;

/* Verifies the plans of n_jobs jobs sharing the device's channels (as
 * tsl_plan_verify_jobs) and reports everything into *out: the safety
 * violations, the planned waits, and the verifier's own figures per job.
 * Returns TSL_OK when there is no violation; TSL_ERR_INVALID with the
 * violations (the first also in tsl_last_error()); TSL_ERR_INVALID with
 * n_violations == 0 and nothing else filled when the inputs are malformed
 * (the message names the field); TSL_ERR_OOM. Free *out with
 * tsl_verify_report_free whatever the status. */
tsl_status tsl_plan_check(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                          const tsl_device_profile *dev, tsl_verify_report *out);
void tsl_verify_report_free(tsl_verify_report *r);

#ifdef __cplusplus
}
#endif
#endif
