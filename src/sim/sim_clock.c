/* sim_clock.c - the simulator's clock and agenda (see sim_state.h, sim_heap.h). */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

/* Records the first error: the loop stops at the next event. */
void tsl__sim_fail_oom(sim *s) {
    if (s->err == TSL_OK) s->err = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    s->stop = 1;
}

/* The agenda key of time `rel` in job jx's current iteration. */
static tsl__sim_key key_of(const sim *s, int jx, double rel) {
    if (s->single) return (tsl__sim_key){s->pr[jx].iter, rel};
    return (tsl__sim_key){0, s->pr[jx].t0 + rel};
}

/* The current time, relative to job jx's iteration start: exact for the
 * job whose event is being processed (and for the only job). */
double tsl__sim_rel_now(const sim *s, int jx) {
    if (jx == s->cur_job) return s->cur_rel;
    if (s->single) return s->now.t;
    return s->now.t - s->pr[jx].t0;
}

/* The current absolute time (µs from the simulation's start). */
double tsl__sim_abs_now(const sim *s) {
    return s->single ? s->pr[0].t0 + s->now.t : s->now.t;
}

/* Queues an event. A key that rounding put before now (an absolute time
 * rebuilt from a relative one, several jobs) is taken as now. */
tsl__sim_key tsl__sim_push(sim *s, tsl__sim_key at, int phase, int job, int kind, int32_t arg,
                           double rel) {
    if (tsl__sim_key_cmp(at, s->now) < 0) at = s->now;
    tsl__sim_ev e = {.at = at, .phase = phase, .job = job, .kind = kind, .arg = arg, .rel = rel};
    if (tsl__sim_heap_push(&s->heap, e)) tsl__sim_fail_oom(s);
    return at;
}

/* An event of job jx at time `rel` of its current iteration. */
tsl__sim_key tsl__sim_push_job(sim *s, int jx, double rel, int phase, int kind, int32_t arg) {
    return tsl__sim_push(s, key_of(s, jx, rel), phase, jx, kind, arg, rel);
}

/* Queues a look at the compute resource now: once for zero-duration items
 * (before the events acting now), once for every item (after them). */
void tsl__sim_request_dispatch(sim *s) {
    for (int k = 0; k < 2; k++) {
        if (s->dispatch_q[k]) continue;
        s->dispatch_q[k] = 1;
        tsl__sim_push(s, s->now, k == 0 ? PH_ZERO : PH_START, INT32_MAX, EV_DISPATCH, k, 0.0);
    }
}
