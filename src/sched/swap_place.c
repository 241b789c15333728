/*
 * swap_place.c - placing one swap of a tensor on the copy channels (the
 * kit's share of the paper's Algorithm 2): the swap-out as early as the
 * device-to-host channel allows after the tensor's value was generated, the
 * release once the copy is under way, the swap-in as late as the
 * host-to-device channel allows before the op that reads the tensor next;
 * and committing a draft (booking its copies, adding its events).
 *
 * Which tensor and which gap, and what to do when nothing fits, are the
 * policy's choice (tensile_swap.c, tensile_across.c). Every candidate time
 * goes through tsl__canon_tl, so a booking is the issue time the event
 * will really have.
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/kit.h"

int tsl__commit_swap_out(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d) {
    tsl__chan *out = tsl__chan_of(K, J, 0);
    int32_t n0 = J->plan->n_events;
    tsl_status st = d->has_out ? tsl__chan_book(out, d->so_issue, d->so_end) : TSL_OK;
    int booked = d->has_out && st == TSL_OK;
    if (st == TSL_OK && d->has_out)
        st = tsl__pjob_add_event(
            J, J->dev, (tsl_event){TSL_EV_SWAP_OUT, d->tensor, d->so_trig, d->so_delay, -1});
    if (st == TSL_OK)
        st = tsl__pjob_add_event(J, J->dev,
                                 d->rel_waits ? (tsl_event){TSL_EV_RELEASE, d->tensor, d->rel_trig,
                                                            d->rel_delay, d->rel_before}
                                              : (tsl_event){TSL_EV_RELEASE, d->tensor,
                                                            d->rel_trig, 0.0, -1});
    if (st != TSL_OK) {
        tsl__pjob_pop_events(J, J->plan->n_events - n0);
        if (booked) tsl__chan_unbook(out, d->so_issue, d->so_end);
        K->status = st;
        return 0;
    }
    /* the swap-out must land exactly where it was booked */
    if (d->has_out) TSL_ASSERT(J->ev_time[n0] == d->so_issue && J->ev_end[n0] == d->so_end);
    return 1;
}

int tsl__commit_swap_in(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d) {
    tsl__chan *in = tsl__chan_of(K, J, 1);
    tsl_status st = tsl__chan_book(in, d->si_issue, d->si_end);
    if (st == TSL_OK) {
        st = tsl__pjob_add_event(J, J->dev, (tsl_event){TSL_EV_SWAP_IN, d->tensor, d->si_trig,
                                                        d->si_delay, d->si_precede});
        if (st != TSL_OK) tsl__chan_unbook(in, d->si_issue, d->si_end);
    }
    if (st != TSL_OK) {
        K->status = st;
        return 0;
    }
    /* the swap-in must land exactly where it was booked (its trigger comes
     * before the op it precedes: a wait it causes moves only later ops) */
    int32_t k = J->plan->n_events - 1;
    TSL_ASSERT(J->ev_time[k] == d->si_issue && J->ev_end[k] == d->si_end);
    return 1;
}

int tsl__commit_swap(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *d) {
    int32_t n0 = J->plan->n_events;
    if (!tsl__commit_swap_out(K, J, d)) return 0;
    if (tsl__commit_swap_in(K, J, d)) return 1;
    tsl__pjob_pop_events(J, J->plan->n_events - n0);
    if (d->has_out) tsl__chan_unbook(tsl__chan_of(K, J, 0), d->so_issue, d->so_end);
    return 0;
}

/* The end of the last op at or before `last` that writes t (its current
 * value's generation there), or -INFINITY if none does (a persistent
 * tensor never written before: every copy of it is of this value). */
static double value_since(const tsl__pjob *J, int32_t t, int32_t last) {
    const tsl__activity *a = &J->act;
    for (int32_t k = tsl__acc_before(a, t, last + 1); k >= a->acc_off[t]; k--)
        if (a->acc[k].writes) return J->tl.e[a->acc[k].op];
    return -INFINITY;
}

double tsl__place_swap_out(tsl__kit *K, tsl__pjob *J, int32_t t, double gen_end, int32_t last,
                           double by, tsl__swap_draft *d) {
    const tsl__timeline *tl = &J->tl;
    /* a swap-out of the current value planned already (issued after its
     * last write, by the end of `last`: the release waits for it) leaves a
     * valid host copy: another one would be redundant */
    double since = value_since(J, t, last);
    if (tsl__find_swap_out(J, t, fmin(gen_end, since), tl->e[last]) >= 0) {
        d->rel_trig = last;
        return tsl__release_time_with(J, t, last, -1, 0);
    }
    /* a clean drop: a persistent tensor absent at time 0 and not written in
     * the iteration by `last` holds the value of the host copy it came back
     * from (the previous iteration's last swap-out, the periodic rule; the
     * runtime parks or copies such tensors before the first iteration it
     * runs, the simulator gives them that copy at its cold start) */
    if (J->absent0[t] && since == -INFINITY) {
        d->rel_trig = last;
        return tsl__release_time_with(J, t, last, -1, 0);
    }
    tsl__canon_ctx cx = {.tl = tl};
    double dur = tsl_copy_us(J->dev, J->w->tensors[t].bytes, 0);
    double x = tsl__chan_earliest(tsl__chan_of(K, J, 0), gen_end, dur, by, tsl__canon_tl, &cx);
    if (x < 0) return -1;
    int32_t r = tsl__op_ending_from(tl, x);
    if (r < last) r = last;
    if (r >= tl->n_ops) return -1;
    /* the copy must find its tensor on the device (after the frees of its
     * time point) and keep it until it ends */
    if (!tsl__pjob_can_swap_out(J, t, x, x + dur)) return -1;
    d->has_out = 1;
    d->so_trig = cx.trigger;
    d->so_delay = cx.delay;
    d->so_issue = x;
    d->so_end = x + dur;
    d->rel_trig = r;
    return tsl__release_time_with(J, t, r, x, d->so_end);
}

int tsl__place_swap_in(tsl__kit *K, tsl__pjob *J, double lo, double end_by,
                       int32_t precede, tsl__swap_draft *d) {
    tsl__canon_ctx cx = {.tl = &J->tl};
    double din = tsl_copy_us(J->dev, J->w->tensors[d->tensor].bytes, 1);
    double y = tsl__chan_latest(tsl__chan_of(K, J, 1), lo, din, end_by, tsl__canon_tl, &cx);
    if (y < 0) return 0;
    d->si_trig = cx.trigger;
    d->si_delay = cx.delay;
    d->si_issue = y;
    d->si_end = y + din;
    d->si_precede = precede;
    return 1;
}

int tsl__clean_drop_ok(const tsl__pjob *J, int32_t t, int32_t kb) {
    const tsl__activity *a = &J->act;
    int32_t first = a->acc_off[t], last = a->acc_off[t + 1] - 1;
    if (!a->persistent[t] || J->absent0[t] || J->ev_head[t] >= 0 || kb < first || kb >= last ||
        !a->acc[first].reads)
        return 0;
    for (int32_t k = first; k <= kb; k++)
        if (a->acc[k].writes) return 0; /* written before the gap: not clean */
    for (int32_t k = kb + 1; k <= last; k++)
        if (a->acc[k].writes) return 1;
    return 0; /* never written: no across-iteration swap-out to anchor it */
}

int tsl__place_across(tsl__kit *K, tsl__pjob *J, int32_t t, tsl__swap_draft *x) {
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int32_t first = a->acc_off[t], last = a->acc_off[t + 1] - 1, wr = last;
    while (wr >= first && !a->acc[wr].writes) wr--;
    if (wr < first) return 0;
    int32_t F = a->acc[first].op, L = a->acc[last].op;
    double D = tl->period - tsl__margin(tl->period);
    *x = (tsl__swap_draft){.tensor = t, .gap = last};
    double rel = tsl__place_swap_out(K, J, t, tl->e[a->acc[wr].op], L, D, x);
    if (rel < 0 || rel > D || !x->has_out || !tsl__place_swap_in(K, J, 0.0, tl->s[F], F, x))
        return 0;
    x->n_abs = 2;
    x->abs_lo[0] = 0.0; /* absent from the iteration start */
    x->abs_hi[0] = x->si_issue;
    x->abs_lo[1] = rel; /* and from the release to the end */
    x->abs_hi[1] = INFINITY;
    return 1;
}

/* 1 if [a0, a1) and [b0, b1) overlap. */
static int overlap(double a0, double a1, double b0, double b1) { return a0 < b1 && b0 < a1; }

int tsl__drafts_disjoint(tsl__kit *K, tsl__pjob *J, const tsl__swap_draft *x,
                         const tsl__swap_draft *d) {
    double xs[2][2] = {{x->has_out ? x->so_issue : 0, x->has_out ? x->so_end : 0},
                       {x->si_issue, x->si_end}};
    double ds[2][2] = {{d->has_out ? d->so_issue : 0, d->has_out ? d->so_end : 0},
                       {d->si_issue, d->si_end}};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            if (tsl__chan_of(K, J, a) == tsl__chan_of(K, J, b) &&
                overlap(xs[a][0], xs[a][1], ds[b][0], ds[b][1]))
                return 0;
    return 1;
}
