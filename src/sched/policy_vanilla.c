/*
 * policy_vanilla.c - the "vanilla" policy: the empty plan. Nothing is
 * swapped or recomputed; every job runs as the vanilla executor runs it
 * (docs/SCHEDULING.md: its peak is the dry run's).
 */
#include "tensile/policy.h"

/* Leaves every plan empty (tsl_policy_plan_fn). */
static tsl_status plan_vanilla(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    (void)rq;
    (void)plans;
    (void)iterations;
    return TSL_OK;
}

const tsl_policy tsl__policy_vanilla = {
    "vanilla", "the empty plan: nothing swapped or recomputed", 0, NULL, 0, plan_vanilla,
    NULL,
};
