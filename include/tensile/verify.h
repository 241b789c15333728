/*
 * tensile/verify.h - the independent verifier of plans (DESIGN.md invariant 2).
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
 * Returns TSL_OK and *n = 0 when the plan is valid; TSL_ERR_INVALID and every
 * violation otherwise (caller frees *v); TSL_ERR_INVALID with *n == 0 when
 * the workload or the profile itself is malformed (the message names it). */
tsl_status tsl_plan_verify(const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev, tsl_violation **v, int *n);
/* Same, for several jobs sharing the device's channels. */
tsl_status tsl_plan_verify_jobs(const tsl_workload *const *w, const tsl_plan *const *p, int n_jobs,
                                const tsl_device_profile *dev, tsl_violation **v, int *n);

#ifdef __cplusplus
}
#endif
#endif
