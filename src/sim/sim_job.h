/*
 * sim_job.h - one job as the simulator runs it: its executed sequence (ops
 * with the plan's recomputations inserted) with each item's planned times,
 * its events grouped by trigger, the tensors activity analysis frees after
 * each op, and the run-time state of every tensor.
 *
 * Planned times are the times of one iteration as the plan predicts them,
 * from the iteration's start, with the shared arithmetic (sim_internal.h;
 * sched/plan_order.h computes them): with `shift` the latencies of the
 * recomputations inserted so far, op i over [s_i + shift, e_i + shift], a
 * recomputation before op p over [s_p + shift, s_p + shift'], shift' =
 * shift + (e_g - s_g) for its producer g, while nothing waits; after a
 * planned wait (an item starting when a swap-in it reads lands) each item
 * starts when the previous one ends. s_i, e_i are the workload's times,
 * or, with actual latencies a_i, s_0 = 0, e_i = s_i + a_i, s_{i+1} = e_i.
 * Recomputations before one op run in the planner's event order (trigger,
 * delay, type, tensor, precede). The engine does not rely on them for its
 * waits: an item starts when its inputs are readable, and its end is its
 * planned end if it starts at its planned start, else its start plus its
 * planned duration.
 *
 * Which swap-outs a release or a swap-in depends on is decided on the
 * planned timeline (the workload's times and the plan's waits, whatever the
 * actual latencies):
 * a release of t frees t once the swap-outs of t planned at or before it
 * have ended (docs/SCHEDULING.md: "max(e_trigger, end of t's latest
 * swap-out issued at or before e_trigger)"), and a swap-in of t waits for
 * the swap-outs of t planned at or before it. Under exact latencies that is
 * the doc's rule; under drift or contention the dependency is kept.
 */
#ifndef TSL_SIM_SIM_JOB_H
#define TSL_SIM_SIM_JOB_H

#include <stddef.h>
#include <stdint.h>
#include "sched/plan_order.h"
#include "sim/sim_internal.h"

/* State of a timed event in the current iteration. */
enum { TSL__EV_IDLE = 0, TSL__EV_SCHED, TSL__EV_WAIT, TSL__EV_RUN, TSL__EV_DONE };

/* One entry of the executed sequence (sched/plan_order.h). */
typedef tsl__exec_item tsl__sim_item;

typedef struct tsl__sim_job {
    int index;
    const tsl_workload *w;
    const tsl_plan *p;      /* NULL: no events */
    int32_t n_ev;           /* p ? p->n_events : 0 */

    /* ---- static, from the workload, the plan, the latencies and the profile */
    double vanilla;         /* e_{n-1}: the period without a plan */
    int32_t n_items;
    tsl__sim_item *items;
    int32_t *trig_start;    /* CSR over trigger+1 (0..n_ops): timed events in plan order */
    int32_t *trig_list;
    int32_t *death_start;   /* CSR over op+1 (-1..n_ops-1): tensors freed after that op */
    int32_t *death_list;
    int32_t *data;          /* INPUT and LABEL tensors, index order */
    int32_t n_data;
    int32_t n_timed;        /* swap-out, swap-in and release events: completed per iteration */
    double *ev_copy;        /* per event: tsl_copy_us of a swap on the device (0 otherwise) */
    double *ev_plan;        /* per event: its planned time (issue of a swap, trigger end (+
                               delay) of a release) on the workload's timeline with
                               recomputations */
    int32_t *pre_start;     /* CSR over ops, or NULL if none: the releases preceding op i */
    int32_t *pre_list;      /*   (its first item waits for them: a planned wait) */
    int32_t *tev_start;     /* CSR over tensors: the timed events of each tensor, */
    int32_t *tev_list;      /*   in the planner's event order */
    size_t persistent;      /* bytes of PARAM, BUFFER, OPT_STATE */

    /* ---- per tensor, run time */
    uint8_t *alloc;         /* its bytes are held on the device */
    uint8_t *readable;      /* allocated and its value is there (no copy in, generated) */
    uint32_t *gen;          /* value generation: bumped at every write */
    uint32_t *host_gen;     /* generation held by the host copy; UINT32_MAX: none */
    int64_t *incoming;      /* the transfer copying it in (allocated, not readable yet); -1 */
    /* ---- per event, run time (this iteration) */
    uint8_t *ev_state;      /* TSL__EV_IDLE .. TSL__EV_DONE */
} tsl__sim_job;

/* Prepares job `index` (w, p already validated by tsl_simulate; p may be
 * NULL). Latencies: actual->us if actual != NULL, else the workload's own
 * times. The plan's timeline (its planned waits, ev_plan) is read against
 * plan_dev, the profile the plan was made for; its copies' durations
 * (ev_copy) are those of dev, the device simulated. Persistent tensors
 * start allocated and readable (cold start).
 * Returns TSL_OK or TSL_ERR_OOM (then tsl__sim_job_free is still safe). */
tsl_status tsl__sim_job_init(tsl__sim_job *j, int index, const tsl_workload *w,
                             const tsl_plan *p, const tsl_latency_table *actual,
                             const tsl_device_profile *dev, const tsl_device_profile *plan_dev);
void tsl__sim_job_free(tsl__sim_job *j);
#endif
