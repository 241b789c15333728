/*
 * swap.c - swap scheduling (paper, Algorithm 2) of one candidate tensor:
 * the gap of the tensor around its job's peak, a swap-out on the
 * device-to-host channel, a release, and a swap-in on the host-to-device
 * channel before the next read.
 *
 * The paper infers feasible intervals for each event (a swap-out after the
 * tensor's TGA and before the peak; a swap-in after the swap-out and before
 * the TUA that needs it), places the swap-out as early and the swap-in as
 * late as possible, and, if the swap-in does not fit, retries with a later
 * swap-out. Here:
 *  - the swap-out starts at the earliest free moment of the channel at or
 *    after the end of the access that generated the tensor's current value
 *    (time 0 for a persistent tensor not written before), and must end by
 *    the peak; the release is triggered by the access before the gap, or by
 *    the first op ending after the swap-out's start if that is later
 *    (docs/SCHEDULING.md: a release waits only for swap-outs issued by its
 *    trigger's end), and must take effect by the peak;
 *  - if the tensor already has a host copy of its current value (swapped
 *    out in an earlier gap, not written since), no new swap-out is needed;
 *    the copy a persistent tensor absent at time 0 came back from (made in
 *    the previous iteration) is not relied on: the first iteration of a job
 *    starts with every persistent tensor resident and no host copy;
 *  - the swap-in starts at the latest free moment whose copy ends by the
 *    next read's start and that lies strictly after the peak (a swap-in
 *    issued at the peak would allocate there). A later swap-out cannot help
 *    it, since it must start after the peak anyway, so the paper's retry
 *    loop has nothing to try; the gap is given up instead (and remembered
 *    with the peak time, see planner.c);
 *  - persistent tensors whose peak lies before their first or after their
 *    last access go to across_iter.c;
 *  - INPUT and LABEL tensors are never swapped (not candidates).
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/planner_internal.h"

int32_t tsl__find_swap_out(const tsl__job *J, int32_t t, double from, double to) {
    int32_t best = -1;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k])
        if (J->plan->events[k].type == TSL_EV_SWAP_OUT && J->ev_time[k] >= from &&
            J->ev_time[k] <= to && (best < 0 || J->ev_time[k] > J->ev_time[best]))
            best = k;
    return best;
}

double tsl__release_time_with(const tsl__job *J, int32_t t, int32_t r, double extra_issue,
                              double extra_end) {
    double te = tsl__trig_end(&J->tl, r), best = -INFINITY, end = te;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k])
        if (J->plan->events[k].type == TSL_EV_SWAP_OUT && J->ev_time[k] <= te &&
            J->ev_time[k] > best) {
            best = J->ev_time[k];
            end = J->ev_end[k];
        }
    if (extra_issue >= 0 && extra_issue <= te && extra_issue > best) end = extra_end;
    return end > te ? end : te;
}

/* Books and adds (see planner_internal.h). */
int tsl__commit_swap(tsl__planner *P, tsl__job *J, const tsl__swap_draft *d) {
    tsl__chan *out = tsl__chan_of(P, 0), *in = tsl__chan_of(P, 1);
    int32_t n0 = J->plan->n_events;
    tsl_status st = TSL_OK;
    int booked_out = 0, booked_in = 0;
    if (d->has_out) {
        st = tsl__chan_book(out, d->so_issue, d->so_end);
        booked_out = st == TSL_OK;
    }
    if (st == TSL_OK) {
        st = tsl__chan_book(in, d->si_issue, d->si_end);
        booked_in = st == TSL_OK;
    }
    if (st == TSL_OK && d->has_out)
        st = tsl__job_add_event(
            J, P->dev, (tsl_event){TSL_EV_SWAP_OUT, d->tensor, d->so_trig, d->so_delay, -1});
    if (st == TSL_OK)
        st = tsl__job_add_event(J, P->dev,
                                (tsl_event){TSL_EV_RELEASE, d->tensor, d->rel_trig, 0.0, -1});
    if (st == TSL_OK)
        st = tsl__job_add_event(J, P->dev, (tsl_event){TSL_EV_SWAP_IN, d->tensor, d->si_trig,
                                                       d->si_delay, d->si_precede});
    if (st != TSL_OK) {
        tsl__job_pop_events(J, J->plan->n_events - n0);
        if (booked_out) tsl__chan_unbook(out, d->so_issue, d->so_end);
        if (booked_in) tsl__chan_unbook(in, d->si_issue, d->si_end);
        P->status = st;
        return 0;
    }
    /* the events must land exactly where they were booked */
    int32_t k = J->plan->n_events - 1;
    TSL_ASSERT(J->ev_time[k] == d->si_issue && J->ev_end[k] == d->si_end);
    if (d->has_out) TSL_ASSERT(J->ev_time[n0] == d->so_issue && J->ev_end[n0] == d->so_end);
    return 1;
}

/* Index in a->acc of the latest access op at or before index k (same
 * tensor, from index lo) that writes the tensor, or -1. */
static int32_t latest_write(const tsl__activity *a, int32_t lo, int32_t k) {
    for (; k >= lo; k--)
        if (a->acc[k].writes) return k;
    return -1;
}

double tsl__place_swap_out(tsl__planner *P, tsl__job *J, int32_t t, double gen_end, int32_t last,
                           double by, tsl__swap_draft *d) {
    const tsl__timeline *tl = &J->tl;
    if (tsl__find_swap_out(J, t, gen_end, tl->e[last]) >= 0) { /* that value is on the host */
        d->rel_trig = last;
        return tsl__release_time_with(J, t, last, -1, 0);
    }
    tsl__canon_ctx cx = {.tl = tl};
    double dur = tsl_copy_us(P->dev, J->w->tensors[t].bytes, 0);
    double x = tsl__chan_earliest(tsl__chan_of(P, 0), gen_end, dur, by, tsl__canon_tl, &cx);
    if (x < 0) return -1;
    int32_t r = tsl__op_ending_from(tl, x);
    if (r < last) r = last;
    if (r >= tl->n_ops) return -1;
    d->has_out = 1;
    d->so_trig = cx.trigger;
    d->so_delay = cx.delay;
    d->so_issue = x;
    d->so_end = x + dur;
    d->rel_trig = r;
    return tsl__release_time_with(J, t, r, x, d->so_end);
}

int tsl__place_swap_in(tsl__planner *P, tsl__job *J, tsl__swap_draft d, double rel,
                       int32_t precede, tsl__swap_draft *out) {
    const tsl__timeline *tl = &J->tl;
    double T = J->pk.time;
    if (rel > T) {
        J->gap_fail_out[d.gap] = T;
        return 0;
    }
    tsl__canon_ctx cx = {.tl = tl};
    double din = tsl_copy_us(P->dev, J->w->tensors[d.tensor].bytes, 1);
    double lo = nextafter(T, INFINITY);
    double end_by = tl->s[precede] - P->opts->swap_in_slack * din; /* see tsl_plan_opts */
    double y = tsl__chan_latest(tsl__chan_of(P, 1), lo, din, end_by, tsl__canon_tl, &cx);
    if (y < 0) {
        J->gap_fail_in[d.gap] = T;
        return 0;
    }
    d.si_trig = cx.trigger;
    d.si_delay = cx.delay;
    d.si_issue = y;
    d.si_end = y + din;
    d.si_precede = precede;
    d.n_abs = 1;
    d.abs_lo[0] = rel;
    d.abs_hi[0] = y;
    *out = d;
    return 1;
}

int tsl__try_swap(tsl__planner *P, tsl__job *J, int32_t t, tsl__swap_draft *out) {
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int32_t op = J->pk.op;
    double T = J->pk.time;
    int32_t kb = op < 0 ? -1 : tsl__acc_before(a, t, op);
    int32_t ka = tsl__acc_after(a, t, op);
    if (a->persistent[t] && (kb < 0 || ka < 0))
        return a->acc_off[t + 1] > a->acc_off[t]
                   ? tsl__try_across(P, J, t, a->acc_off[t + 1] - 1, out)
                   : 0;
    if (kb < 0 || ka < 0) return 0;
    int32_t gap = kb;
    if (J->gap_done[gap]) return 0;
    if (!a->acc[ka].reads) { /* rewritten before it is read again: not a swap */
        J->gap_done[gap] = 1;
        return 0;
    }
    if (T <= J->gap_fail_out[gap] || T >= J->gap_fail_in[gap]) return 0;
    int32_t prev_op = a->acc[kb].op, next_op = a->acc[ka].op;
    int32_t wr = latest_write(a, a->acc_off[t], kb);
    if (wr < 0 && !a->persistent[t]) return 0;
    /* the value's generation; for a tensor absent at time 0 and not written
     * since, the end of its first access (its swap-in then has landed) */
    double gen_end = wr >= 0 ? tl->e[a->acc[wr].op]
                             : J->absent0[t] ? tl->e[a->acc[a->acc_off[t]].op] : 0.0;
    tsl__swap_draft d = {.tensor = t, .gap = gap};
    double rel = tsl__place_swap_out(P, J, t, gen_end, prev_op, T, &d);
    if (rel < 0) {
        J->gap_fail_out[gap] = T;
        return 0;
    }
    return tsl__place_swap_in(P, J, d, rel, next_op, out);
}
