/*
 * rc_check.c - the kit's share of recomputation (paper, IV-D): whether a
 * tensor's producer can be re-run exactly right before an op, and moving a
 * job's copy bookings after its timeline moved (a recomputation, or a
 * planned wait, shifts every later op).
 *
 * A recomputation must reproduce the tensor bit for bit and the accounting
 * of docs/SCHEDULING.md must suffice for it: the producer has a single
 * output and no workspace, does not write any of its inputs (an in-place or
 * multi-output op such as batch norm would update its running statistics
 * twice, or need memory for outputs the doc does not count), and its inputs
 * are resident, landed and unchanged since it ran. Which tensor to
 * recompute is the policy's choice (tensile_recompute.c). And undoing a
 * change that moved the timeline: its events removed, the copies booked
 * back where they were (tsl__kit_undo).
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/kit.h"

int tsl__rc_input_ready(const tsl__pjob *J, int32_t x, int32_t b, double at, double end) {
    if (!tsl__pjob_resident_at(J, x, at)) return 0;
    for (int32_t k = J->ev_head[x]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_SWAP_IN && J->ev_time[k] < at &&
            !(J->ev_end[k] <= at - tsl__margin(at)))
            return 0;
        /* a release taking effect while the recomputation runs; or one
         * triggered before it (by an op before b) that has not taken
         * effect yet because it waits for a swap-out: the input is there
         * only while that copy runs, and when ops run longer than planned
         * the copy ends, and the release frees it, before the
         * recomputation reads it (docs/SCHEDULING.md, Validity) */
        if (e->type == TSL_EV_RELEASE && J->ev_time[k] >= at &&
            (e->trigger < b || J->ev_time[k] <= end + tsl__margin(end)))
            return 0;
    }
    return 1;
}

int tsl__rc_inputs_ready(const tsl__pjob *J, int32_t q, int32_t b, double at) {
    const tsl_wl_op *o = &J->w->ops[q];
    double end = at + (o->end_us - o->start_us);
    for (int i = 0; i < o->n_in; i++)
        if (!tsl__rc_input_ready(J, o->in[i], b, at, end)) return 0;
    return 1;
}

int tsl__rc_producer_ok(const tsl__pjob *J, int32_t t, int32_t q, int32_t b) {
    const tsl_workload *w = J->w;
    const tsl_wl_op *o = &w->ops[q];
    if (o->n_out != 1 || o->out[0] != t || o->workspace != 0) return 0;
    if (!(o->end_us - o->start_us > 0)) return 0;
    const tsl__activity *a = &J->act;
    for (int i = 0; i < o->n_in; i++) {
        int32_t x = o->in[i];
        if (x == t) return 0;
        for (int32_t k = a->acc_off[x]; k < a->acc_off[x + 1]; k++)
            if (a->acc[k].writes && a->acc[k].op > q && a->acc[k].op < b) return 0;
    }
    return tsl__rc_inputs_ready(J, q, b, J->tl.s[b]);
}

int32_t tsl__pjob_copy_times(const tsl__pjob *J, double *old) {
    int32_t m = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++) {
        tsl_event_type ty = J->plan->events[k].type;
        if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
        old[2 * m] = J->ev_time[k];
        old[2 * m + 1] = J->ev_end[k];
        m++;
    }
    return m;
}

int tsl__kit_rebook(tsl__kit *K, tsl__pjob *J, const double *old) {
    int32_t n = J->plan->n_events, m = 0;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        tsl__chan_unbook(tsl__chan_of(K, J, e->type == TSL_EV_SWAP_IN), old[2 * m], old[2 * m + 1]);
        m++;
    }
    int32_t done = 0, ok = 1;
    for (int32_t k = 0; k < n && ok; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        tsl__chan *c = tsl__chan_of(K, J, e->type == TSL_EV_SWAP_IN);
        int free = K->rebook_rounded ? tsl__chan_is_free_rounded(c, J->ev_time[k], J->ev_end[k])
                                     : tsl__chan_is_free(c, J->ev_time[k], J->ev_end[k]);
        if (!(J->ev_end[k] <= J->tl.period) || !free ||
            tsl__chan_book(c, J->ev_time[k], J->ev_end[k]) != TSL_OK) {
            ok = 0;
            break;
        }
        done++;
    }
    if (ok) return 1;
    m = 0;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        tsl__chan *c = tsl__chan_of(K, J, e->type == TSL_EV_SWAP_IN);
        if (m < done) tsl__chan_unbook(c, J->ev_time[k], J->ev_end[k]);
        m++;
    }
    m = 0;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        /* restoring what was booked before cannot fail for lack of room */
        if (tsl__chan_book(tsl__chan_of(K, J, e->type == TSL_EV_SWAP_IN), old[2 * m],
                           old[2 * m + 1]) != TSL_OK)
            K->status = TSL_ERR_OOM;
        m++;
    }
    return 0;
}

double *tsl__kit_copy_buf(tsl__kit *K, const tsl__pjob *J, int more) {
    int32_t n = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++)
        n += J->plan->events[k].type == TSL_EV_SWAP_OUT || J->plan->events[k].type == TSL_EV_SWAP_IN;
    double *v = malloc(2 * ((size_t)n + (size_t)more + 1) * sizeof *v);
    if (!v) K->status = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    return v;
}

void tsl__kit_undo(tsl__kit *K, tsl__pjob *J, int32_t n0, const double *cur, const double *old) {
    int32_t m = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++) {
        tsl_event_type ty = J->plan->events[k].type;
        if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
        tsl__chan *ch = tsl__chan_of(K, J, ty == TSL_EV_SWAP_IN);
        if (cur) tsl__chan_unbook(ch, cur[2 * m], cur[2 * m + 1]);
        else tsl__chan_unbook(ch, J->ev_time[k], J->ev_end[k]);
        m++;
    }
    tsl__pjob_pop_events(J, J->plan->n_events - n0);
    tsl_status st = tsl__pjob_retime(J, J->dev);
    if (st != TSL_OK) K->status = st;
    m = 0;
    for (int32_t k = 0; k < n0; k++) {
        tsl_event_type ty = J->plan->events[k].type;
        if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
        if (tsl__chan_book(tsl__chan_of(K, J, ty == TSL_EV_SWAP_IN), old[2 * m],
                           old[2 * m + 1]) != TSL_OK)
            K->status = TSL_ERR_OOM;
        m++;
    }
    tsl__pjob_analyse(J);
}
