/*
 * tensile/plan.h - a plan: the swap-out, swap-in, release and recompute events
 * of one job for one iteration, anchored as (trigger op, delay), and the
 * memory and time a plan implies (the shared accounting of
 * docs/SCHEDULING.md).
 */
#ifndef TENSILE_PLAN_H
#define TENSILE_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- plans ----------------------------------------------------------------- */
typedef enum tsl_event_type {
    TSL_EV_SWAP_OUT = 0,
    TSL_EV_SWAP_IN,
    TSL_EV_RELEASE,
    TSL_EV_RECOMPUTE,
} tsl_event_type;

typedef struct tsl_event {
    tsl_event_type type;
    int32_t tensor;        /* workload tensor index */
    int32_t trigger;       /* op whose end triggers the event; -1: iteration start (time 0) */
    double delay_us;       /* after the trigger's end (>= 0) */
    int32_t precede;       /* SWAP_IN, RECOMPUTE: the op that reads the tensor next; else -1.
                              A RELEASE has delay 0; a RECOMPUTE has trigger -1 and delay 0 */
} tsl_event;

/* One block of device memory in a plan's layout (docs/SCHEDULING.md,
 * "Layout"): one residency of a tensor, or the workspace of one run of an
 * op. A block is named by (tensor, op, seq):
 *   - a tensor's residency: tensor >= 0, op = -1, seq = its residency
 *     index in one iteration: a tensor resident when the iteration starts
 *     (a persistent tensor the plan does not keep absent at time 0) has
 *     residency 0 there; each allocation of the tensor in the iteration
 *     (generation, data load, swap-in, recomputation) starts the next one.
 *     A residency alive when the iteration ends and resident again at its
 *     start is the same memory: both blocks carry the same offset;
 *   - a workspace: tensor = -1, op = the op whose kernel holds it, seq =
 *     that op's seq-th workspace allocation in the iteration (from 0). */
typedef struct tsl_plan_block {
    int32_t tensor;
    int32_t op;
    int32_t seq;
    size_t bytes;          /* requested size */
    size_t offset;         /* in the device arena; a multiple of the layout's alignment */
} tsl_plan_block;

/* A plan's choice of algorithm for one op (docs/SCHEDULING.md,
 * "Algorithms"): op runs with algorithm `algo` (>= 1) of the workload
 * (tsl_workload_op_algo), every time it runs in the iteration, its
 * recomputations included. */
typedef struct tsl_plan_algo {
    int32_t op;
    int32_t algo;
} tsl_plan_algo;

typedef struct tsl_plan {
    char job[64];
    int32_t n_events, cap_events;
    tsl_event *events;     /* sorted by (trigger, delay, type, tensor) */
    size_t predicted_peak; /* bytes: the peak load the events imply (docs/SCHEDULING.md) */
    double predicted_period_us; /* iteration time including recomputations and planned
                                   waits (docs/SCHEDULING.md) */
    /* The layout (tsl_plan_layout): n_blocks == 0 means none. Sorted by
     * (tensor, op, seq) (tsl_plan_block_find). */
    int32_t n_blocks;
    tsl_plan_block *blocks;
    size_t layout_align;        /* the alignment the layout was made for */
    size_t predicted_footprint; /* bytes: the layout's extent, what the device must hold */
    /* The algorithm choices: ops run with another algorithm than their
     * default, sorted by op, each op at most once, algo >= 1 (an op not
     * listed runs its default). n_algos 0: every op its default, as in a
     * plan made before algorithms existed. Set with tsl_plan_set_algo. */
    int32_t n_algos;
    tsl_plan_algo *algos;
} tsl_plan;

tsl_plan *tsl_plan_new(const char *job);
void tsl_plan_free(tsl_plan *p);
tsl_status tsl_plan_add(tsl_plan *p, tsl_event e);
void tsl_plan_sort(tsl_plan *p);

/* ---- algorithm choices ------------------------------------------------------ */
/* Makes op run with algorithm `algo` under p (0: its default, which removes
 * the op from p->algos). Whether the workload has that algorithm is the
 * verifier's to judge (tsl_workload_for_plan). TSL_ERR_INVALID for op < 0
 * or algo outside [0, TSL_ALGO_MAX); TSL_ERR_OOM (p unchanged). */
tsl_status tsl_plan_set_algo(tsl_plan *p, int32_t op, int32_t algo);
/* The algorithm p runs op with: 0 unless p->algos lists it (p NULL: 0). */
int32_t tsl_plan_op_algo(const tsl_plan *p, int32_t op);
/* Copies src's algorithm choices into dst (replacing dst's). TSL_ERR_OOM
 * (dst unchanged). */
tsl_status tsl_plan_copy_algos(tsl_plan *dst, const tsl_plan *src);
/* The workload p's events are timed against: a copy of w in which every op
 * that p runs with algorithm k >= 1 takes that algorithm's latency and
 * workspace (tsl_workload_op_algo), the ops after it shifted by the
 * difference (gaps kept), the period with them; no op has other
 * algorithms left (n_alts 0: the choice is made). With no choice in p the
 * copy equals w but for that. *out is the caller's (tsl_workload_free).
 * TSL_ERR_INVALID naming the job, the op and the algorithm when p chooses
 * an op out of range or an algorithm the op does not have; TSL_ERR_OOM. */
tsl_status tsl_workload_for_plan(const tsl_workload *w, const tsl_plan *p, tsl_workload **out);

/* ---- the layout ------------------------------------------------------------ */
/* Lays out one iteration of w under p (docs/SCHEDULING.md, "Layout"):
 * every block the iteration holds - tensors' residencies, workspaces,
 * swap-in destinations from the copy's start, recomputed tensors, blocks
 * kept while a swap-out still reads them, persistent tensors across the
 * boundary - placed by tsl_layout_solve (tensile/layout.h) with
 * `alignment` (0: TSL_ALLOC_ALIGN). Replaces p's blocks and sets
 * p->predicted_footprint and p->layout_align. dev as for
 * tsl_peak_analysis. TSL_ERR_INVALID (as tsl_peak_analysis),
 * TSL_ERR_OOM (p unchanged). */
tsl_status tsl_plan_layout(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                           size_t alignment);
/* The block (tensor, op, seq) of p's layout, or NULL if it has none. */
const tsl_plan_block *tsl_plan_block_find(const tsl_plan *p, int32_t tensor, int32_t op,
                                          int32_t seq);
/* Drops p's layout (n_blocks = 0, predicted_footprint = 0). */
void tsl_plan_clear_layout(tsl_plan *p);

/* ---- memory and time implied by a plan (shared accounting) ---------------- */
/* The timeline of one iteration of one job under its plan, and the memory
 * load over it, per docs/SCHEDULING.md: recomputations inserted, planned
 * waits (an op that reads a tensor still being swapped in starts when the
 * copy has landed) included. */
typedef struct tsl_peak_info {
    size_t peak;           /* bytes */
    double peak_time_us;
    int32_t peak_op;       /* op running (or last ended) at the peak */
    int32_t last_input_op; /* LUA: last op before the peak that read a tensor it keeps */
    int32_t *resident;     /* tensors resident at the peak (malloc'd), */
    int32_t n_resident;    /* largest first */
    double period_us;      /* with recomputations and planned waits */
    int32_t n_waits;       /* planned waits: ops and recomputations starting late for a copy */
    double stall_us;       /* their total stall (part of period_us) */
} tsl_peak_info;
/* Peak analysis of w under p (NULL: the empty plan). dev gives the copy
 * times; it may be NULL only for a plan without swaps. Fills *out (free
 * with tsl_peak_info_free). TSL_ERR_INVALID for an event or op index out
 * of range (named), TSL_ERR_OOM. */
tsl_status tsl_peak_analysis(const tsl_workload *w, const tsl_plan *p,
                             const tsl_device_profile *dev, tsl_peak_info *out);
void tsl_peak_info_free(tsl_peak_info *pi);

#ifdef __cplusplus
}
#endif
#endif
