/*
 * plan_order.h - how a plan is executed, shared by the simulator and the
 * runtime so that the two run a plan alike: the order of its events, the
 * executed sequence (ops with the recomputations inserted) and its planned
 * times (planned waits included).
 */
#ifndef TSL_SCHED_PLAN_ORDER_H
#define TSL_SCHED_PLAN_ORDER_H
#include "tensile/plan.h"

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

/* One entry of the executed sequence: an op, or a recomputation inserted
 * before the op it precedes (re-running the tensor's producer). */
typedef struct tsl__exec_item {
    int32_t op;             /* the op run (for a recomputation: the producer) */
    int32_t tensor;         /* recomputation: the tensor regenerated; else -1 */
    int32_t event;          /* recomputation: its plan event index; else -1 */
    double ns, ne;          /* planned start and end (tsl__exec_times) */
} tsl__exec_item;

/* The executed sequence of w under a plan whose recomputations are
 * rc[0..n_rc), as tsl__plan_exec_order puts them first: items[0 .. n_ops +
 * n_rc), each op preceded by the recomputations that precede it. Times are
 * left 0. */
void tsl__exec_sequence(const tsl_workload *w, const tsl__ev_ix *rc, int32_t n_rc,
                        tsl__exec_item *items);
/* Planned times of items[0..n) (p: the plan whose events they name; NULL
 * if none), docs/SCHEDULING.md "Time" and "Planned waits": each item at
 * its nominal times - op i at its times from w or, with lat, ops back to
 * back with latencies lat[], shifted by the recomputations run before it;
 * a recomputation of producer g before op i over [s_i + shift, s_i +
 * shift + (e_g - s_g)) - while nothing has waited; an item reading a
 * tensor whose swap-in is still copying when it would start (dev gives the
 * copy times) starts when the copy lands, the first item of an op that a
 * release precedes when the release frees its tensor (sched/waits.h, the
 * rule the planner's timeline uses), and every later item would then
 * start when the previous one ends, lasting its nominal duration:
 * ne = ns' == ns ? ne : ns' + (ne - ns). With ends, ends[i] = op i's
 * planned end (where the plan's event times are anchored when lat is
 * NULL). dev may be NULL for a plan without swap-ins or preceding releases. Returns TSL_OK, or
 * TSL_ERR_OOM with the times left without planned waits. */
tsl_status tsl__exec_times(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                           const double *lat, tsl__exec_item *items, int32_t n, double *ends);
/* The op item `it` of plan p's executed sequence runs for: its own, or the
 * op a recomputation precedes. */
static inline int32_t tsl__exec_item_group(const tsl_plan *p, const tsl__exec_item *it) {
    return it->tensor >= 0 ? p->events[it->event].precede : it->op;
}
/* The releases of plan p (over n_ops ops) that precede an op, as a CSR:
 * op i's are (*list)[(*start)[i] .. (*start)[i+1]), in event order (the
 * first item of op i waits for them: docs/SCHEDULING.md, "Planned
 * waits"). Both stay NULL if there is none. Returns 0 if out of host
 * memory (both NULL). */
int tsl__preceding_releases(const tsl_plan *p, int32_t n_ops, int32_t **start, int32_t **list);
/* The planned time of timed event ev: its trigger's shifted end (ends from
 * tsl__exec_times on w's times; trigger -1: 0) plus its delay (0 for a
 * release, unless it precedes an op: docs/SCHEDULING.md, "Planned waits"). */
static inline double tsl__event_plan_time(const tsl_event *ev, const double *ends) {
    double te = ev->trigger < 0 ? 0.0 : ends[ev->trigger];
    return te + ev->delay_us;
}
#endif
