/*
 * recompute.c - recomputation scheduling (paper, IV-D): while the jobs'
 * planned peaks do not fit the budget, release a tensor after its access
 * before the peak and regenerate it right before its next read, choosing
 * the largest MSPS (Capuchin's memory saving per second: bytes saved at
 * the peak / producer latency).
 *
 * As in the paper, only tensors that the plan never released or swapped
 * are recomputed, so the swap plan is not disturbed, and the producer's
 * inputs must all be resident when the recomputation runs (parameters and
 * buffers, or activations still alive) and unchanged since the producer
 * ran. Departures, to keep recomputation exact and the accounting of
 * docs/SCHEDULING.md sufficient:
 *  - the producer must have a single output, no workspace, and not write
 *    any of its inputs (an in-place or multi-output op such as batch norm
 *    would update its running statistics twice or need memory for outputs
 *    the doc does not count);
 *  - one recomputation per iteration of Algorithm 3; the timeline shifts
 *    (every later op moves by the producer's latency), so the job's events
 *    are re-timed and its channel bookings re-made; if they would now clash
 *    with another job's, or the peak would rise, the recomputation is
 *    undone and the gap given up.
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/planner_internal.h"

/* 1 if every input of op q is resident while a recomputation by q runs
 * from `at` to `at` + its latency, under J's plan: resident at `at` with
 * its data landed (no swap-in of it still copying), and no release of it
 * taking effect before the end (a release waiting for a swap-out may). */
static int inputs_ready(const tsl__job *J, int32_t q, double at) {
    const tsl_wl_op *o = &J->w->ops[q];
    double end = at + (o->end_us - o->start_us);
    for (int i = 0; i < o->n_in; i++) {
        int32_t x = o->in[i];
        if (!tsl__job_resident_at(J, x, at)) return 0;
        for (int32_t k = J->ev_head[x]; k >= 0; k = J->ev_next[k]) {
            tsl_event_type ty = J->plan->events[k].type;
            if (ty == TSL_EV_SWAP_IN && J->ev_time[k] < at &&
                !(J->ev_end[k] <= at - tsl__margin(at)))
                return 0;
            if (ty == TSL_EV_RELEASE && J->ev_time[k] >= at &&
                J->ev_time[k] <= end + tsl__margin(end))
                return 0;
        }
    }
    return 1;
}

/* 1 if the producer q of t can be re-run before op b: see above. */
static int producer_ok(const tsl__job *J, int32_t t, int32_t q, int32_t b) {
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
    return inputs_ready(J, q, J->tl.s[b]);
}

/* Moves every swap booking of J from its old times to its current ones.
 * old[] holds (issue, end) pairs of the swap events in event order. Returns
 * 1, or 0 if a new booking clashes (then the old bookings are restored). */
static int rebook(tsl__planner *P, tsl__job *J, const double *old) {
    int32_t n = J->plan->n_events, m = 0;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        tsl__chan_unbook(tsl__chan_of(P, e->type == TSL_EV_SWAP_IN), old[2 * m], old[2 * m + 1]);
        m++;
    }
    int32_t done = 0, ok = 1;
    for (int32_t k = 0; k < n && ok; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        tsl__chan *c = tsl__chan_of(P, e->type == TSL_EV_SWAP_IN);
        if (!(J->ev_end[k] <= J->tl.period) || !tsl__chan_is_free(c, J->ev_time[k], J->ev_end[k]) ||
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
        tsl__chan *c = tsl__chan_of(P, e->type == TSL_EV_SWAP_IN);
        if (m < done) tsl__chan_unbook(c, J->ev_time[k], J->ev_end[k]);
        m++;
    }
    m = 0;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        /* restoring what was booked before cannot fail for lack of room */
        if (tsl__chan_book(tsl__chan_of(P, e->type == TSL_EV_SWAP_IN), old[2 * m],
                           old[2 * m + 1]) != TSL_OK)
            P->status = TSL_ERR_OOM;
        m++;
    }
    return 0;
}

/* Adds RELEASE(t after access prev) and RECOMPUTE(t before b) to J, re-times
 * J and re-books its copies; undoes everything and returns 0 if that fails
 * or the peak rises. */
static int apply(tsl__planner *P, tsl__job *J, int32_t t, int32_t prev, int32_t b) {
    size_t before = J->pk.peak;
    int32_t n_sw = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++)
        n_sw += J->plan->events[k].type == TSL_EV_SWAP_OUT ||
                J->plan->events[k].type == TSL_EV_SWAP_IN;
    double *old = malloc(((size_t)n_sw + 1) * 2 * sizeof *old);
    if (!old) {
        P->status = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
        return 0;
    }
    int32_t m = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++) {
        tsl_event_type ty = J->plan->events[k].type;
        if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
        old[2 * m] = J->ev_time[k];
        old[2 * m + 1] = J->ev_end[k];
        m++;
    }
    int32_t n0 = J->plan->n_events;
    tsl_status st = tsl__job_add_event(J, P->dev, (tsl_event){TSL_EV_RELEASE, t, prev, 0.0, -1});
    if (st == TSL_OK)
        st = tsl__job_add_event(J, P->dev, (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, b});
    if (st == TSL_OK) st = tsl__job_retime(J, P->dev);
    int ok = st == TSL_OK && rebook(P, J, old);
    if (ok) {
        tsl__job_analyse(J);
        /* events triggered at or after b moved later: the inputs must still
         * be there when the recomputation starts */
        double at = J->tl.s[b];
        for (int32_t r = J->tl.rc_off[b]; r < J->tl.rc_off[b + 1]; r++)
            if (J->tl.rc_tensor[r] == t) at = J->tl.rc_start[r];
        if (J->pk.peak > before || !inputs_ready(J, J->w->tensors[t].producer, at)) {
            /* undo: bookings back to the old times */
            m = 0;
            for (int32_t k = 0; k < J->plan->n_events; k++) {
                tsl_event_type ty = J->plan->events[k].type;
                if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
                tsl__chan_unbook(tsl__chan_of(P, ty == TSL_EV_SWAP_IN), J->ev_time[k],
                                 J->ev_end[k]);
            }
            for (int32_t k = 0; k < J->plan->n_events; k++) {
                tsl_event_type ty = J->plan->events[k].type;
                if (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN) continue;
                if (tsl__chan_book(tsl__chan_of(P, ty == TSL_EV_SWAP_IN), old[2 * m],
                                   old[2 * m + 1]) != TSL_OK)
                    P->status = TSL_ERR_OOM;
                m++;
            }
            ok = 0;
        }
    }
    if (!ok) {
        if (st != TSL_OK) P->status = st;
        tsl__job_pop_events(J, J->plan->n_events - n0);
        if (tsl__job_retime(J, P->dev) != TSL_OK) P->status = TSL_ERR_OOM;
        tsl__job_analyse(J);
    }
    free(old);
    return ok;
}

/* The best candidate over all jobs, or bj = -1. */
static void best_candidate(tsl__planner *P, int *bj_out, int32_t *bt_out, int32_t *bprev_out,
                           int32_t *bnext_out, int32_t *bgap_out) {
    int bj = -1;
    int32_t bt = -1, bprev = -1, bnext = -1, bgap = -1;
    double bmsps = 0;
    for (int j = 0; j < P->n_jobs; j++) {
        tsl__job *J = &P->jobs[j];
        const tsl_workload *w = J->w;
        const tsl__activity *a = &J->act;
        tsl__sweep sw;
        tsl__sweep_run(w, a, &J->tl, J->eff, J->n_eff, J->absent0, J->resident, J->pk.step, &sw,
                       NULL);
        int32_t op = J->pk.op;
        if (op < 0) continue;
        for (int32_t t = 0; t < w->n_tensors; t++) {
            if (!J->resident[t] || a->persistent[t] || a->data[t] || J->ev_head[t] >= 0) continue;
            int32_t q = w->tensors[t].producer;
            if (q < 0 || w->tensors[t].bytes == 0 || tsl__op_accesses(w, op, t)) continue;
            if (J->pk.rc >= 0 && J->tl.rc_tensor[J->pk.rc] == t) continue;
            int32_t kb = tsl__acc_before(a, t, op), ka = tsl__acc_after(a, t, op);
            if (kb < 0 || ka < 0 || !a->acc[ka].reads || J->gap_done[kb]) continue;
            int32_t b = a->acc[ka].op;
            double lat = w->ops[q].end_us - w->ops[q].start_us;
            if (!(lat > 0)) continue;
            double msps = (double)w->tensors[t].bytes / lat;
            if (bj >= 0 && !(msps > bmsps)) continue; /* ties: first job, lowest index */
            if (!producer_ok(J, t, q, b)) continue;
            bj = j;
            bt = t;
            bprev = a->acc[kb].op;
            bnext = b;
            bgap = kb;
            bmsps = msps;
        }
    }
    *bj_out = bj;
    *bt_out = bt;
    *bprev_out = bprev;
    *bnext_out = bnext;
    *bgap_out = bgap;
}

int tsl__try_recompute(tsl__planner *P) {
    for (;;) {
        int bj;
        int32_t bt, bprev, bnext, bgap;
        best_candidate(P, &bj, &bt, &bprev, &bnext, &bgap);
        if (bj < 0) return -1;
        tsl__job *J = &P->jobs[bj];
        J->gap_done[bgap] = 1;
        if (apply(P, J, bt, bprev, bnext)) {
            /* the recomputation reads its producer's inputs: none of them may
             * be swapped out across it later */
            const tsl_wl_op *q = &J->w->ops[J->w->tensors[bt].producer];
            for (int i = 0; i < q->n_in; i++) {
                int32_t x = q->in[i], g = tsl__acc_before(&J->act, x, bnext);
                if (g < 0 && J->act.acc_off[x + 1] > J->act.acc_off[x])
                    g = J->act.acc_off[x + 1] - 1; /* the wrap gap */
                if (g >= 0) J->gap_done[g] = 1;
            }
            return bj;
        }
        if (P->status != TSL_OK) return -1;
    }
}
