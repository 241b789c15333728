/*
 * plan_order.h - the order in which a plan's events are executed, shared by
 * the simulator and the runtime so that the two run a plan alike.
 */
#ifndef TSL_SCHED_PLAN_ORDER_H
#define TSL_SCHED_PLAN_ORDER_H
#include "tensile/sched.h"

/* An event with its index in the plan. */
typedef struct tsl__ev_ix {
    tsl_event ev;
    int32_t ix;
} tsl__ev_ix;

/* Writes p's events into out[0 .. p->n_events): the recomputations first,
 * grouped by the op they precede, then the timed events ordered by
 * (trigger, delay, type, tensor, precede); ties by index, so the order is
 * total and deterministic. Returns the number of recomputations. */
int32_t tsl__plan_exec_order(const tsl_plan *p, tsl__ev_ix *out);
#endif
