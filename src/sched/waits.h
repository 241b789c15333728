/*
 * waits.h - what a position of a job's timeline waits for under its plan
 * (docs/SCHEDULING.md, "Planned waits"; not part of the public API): a
 * swap-in of a tensor it reads still copying when it would start, and, for
 * the first position of an op, a release preceding that op still waiting
 * for its swap-out. One rule, shared by the planner's timeline
 * (timeline.c) and the executed sequence's times that the simulator and
 * the runtime follow (plan_order.c), so that they cannot drift. The
 * verifier has its own (verify_timeline.c).
 *
 * Example usage:
 *
 *   tsl__waits x;
 *   if (tsl__waits_build(w, plan, &x) != TSL_OK) return ...;
 *   for each position in execution order, with end[] the ends of the ops
 *   before it:
 *       double s = x.off ? tsl__waits_ready(&x, w, plan, dev, end, g, op, first, at, &ev) : at;
 *   tsl__waits_free(&x);
 */
#ifndef TSL_SCHED_WAITS_H
#define TSL_SCHED_WAITS_H

#include "tensile/plan.h"
#include "tensile/profile.h"

/* A copy landing (or a release freeing) at most this long after the
 * position waiting for it would start is on time: no wait. */
#define TSL__WAIT_EPS_US 1e-6

typedef struct tsl__waits {
    int32_t *off;     /* n_tensors + 1, or NULL if nothing can wait: tensor t's copies */
    int32_t *ev;      /* (swap-ins, swap-outs) are ev[off[t] .. off[t+1]) */
    int32_t *pre_off; /* n_ops + 1, or NULL if no release precedes an op: the releases */
    int32_t *pre_ev;  /* preceding op i are pre_ev[pre_off[i] .. pre_off[i+1]) */
} tsl__waits;

/* Indexes plan p of workload w (p may be NULL) for the waits: x->off stays
 * NULL if p has no swap-in and no release preceding an op (nothing can
 * wait). TSL_ERR_OOM (x zeroed). */
tsl_status tsl__waits_build(const tsl_workload *w, const tsl_plan *p, tsl__waits *x);
void tsl__waits_free(tsl__waits *x);

/* When a position running op g's reads, positioned before op `op` (its
 * own op, or the op a recomputation precedes), that would start at `at`,
 * starts: for each tensor it reads, the latest swap-in of it triggered
 * before `op` and issued at or before `at` (ties: the later end), if it
 * lands more than TSL__WAIT_EPS_US after `at`; and with `first` (the
 * first position of op `op`), each release preceding `op` (trigger before
 * it), if it frees its tensor more than TSL__WAIT_EPS_US after `at` - at
 * its issue (trigger end + delay) or at the end of the latest swap-out of
 * the tensor triggered before `op` and issued by then. The latest of
 * those times, or `at`; *event gets the event it waits for last (-1:
 * none). end[i] must hold the end of every op i < op. x->off non-NULL. */
double tsl__waits_ready(const tsl__waits *x, const tsl_workload *w, const tsl_plan *p,
                        const tsl_device_profile *dev, const double *end, int32_t g, int32_t op,
                        int first, double at, int32_t *event);

#endif
