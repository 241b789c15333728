/*
 * tensile_recompute.c - TENSILE's recomputation scheduling (paper, IV-D):
 * while the jobs' planned peaks do not fit the budget, release a tensor
 * after its access before the peak and regenerate it right before its next
 * read, choosing the largest MSPS (Capuchin's memory saving per second:
 * bytes saved at the peak / producer latency).
 *
 * As in the paper, only tensors that the plan never released or swapped
 * are recomputed, so the swap plan is not disturbed; whether the producer
 * can be re-run exactly is the kit's rule (rc_check.c). Departures:
 *  - one recomputation per iteration of Algorithm 3; the timeline shifts
 *    (every later op moves by the producer's latency), so the job's events
 *    are re-timed and its channel bookings re-made; if they would now clash
 *    with another job's, or the peak would rise, the recomputation is
 *    undone and the gap given up;
 *  - the producer's inputs may not be swapped out across the recomputation
 *    later (their gaps are closed).
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/tensile_internal.h"

/* Adds RELEASE(t after access prev) and RECOMPUTE(t before b) to J, re-times
 * J and re-books its copies; undoes everything and returns 0 if that fails
 * or the peak rises. */
static int apply(tsl__tensile *T, tsl__pjob *J, int32_t t, int32_t prev, int32_t b) {
    tsl__kit *K = &T->K;
    size_t before = J->pk.peak;
    double *old = tsl__kit_copy_buf(K, J, 0);
    if (!old) return 0;
    tsl__pjob_copy_times(J, old);
    int32_t n0 = J->plan->n_events;
    tsl_status st = tsl__pjob_add_event(J, J->dev, (tsl_event){TSL_EV_RELEASE, t, prev, 0.0, -1});
    if (st == TSL_OK)
        st = tsl__pjob_add_event(J, J->dev, (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, b});
    if (st == TSL_OK) st = tsl__pjob_retime(J, J->dev);
    int ok = st == TSL_OK && tsl__kit_rebook(K, J, old);
    if (!ok) { /* the bookings are the old ones (tsl__kit_rebook restored them) */
        if (st != TSL_OK) K->status = st;
        tsl__pjob_pop_events(J, J->plan->n_events - n0);
        if (tsl__pjob_retime(J, J->dev) != TSL_OK) K->status = TSL_ERR_OOM;
        tsl__pjob_analyse(J);
    } else {
        tsl__pjob_analyse(J);
        /* events triggered at or after b moved later: the inputs must still
         * be there when the recomputation starts */
        double at = J->tl.s[b];
        for (int32_t r = J->tl.rc_off[b]; r < J->tl.rc_off[b + 1]; r++)
            if (J->tl.rc_tensor[r] == t) at = J->tl.rc_start[r];
        if (J->pk.peak > before || !tsl__rc_inputs_ready(J, J->w->tensors[t].producer, b, at)) {
            tsl__kit_undo(K, J, n0, NULL, old);
            ok = 0;
        }
    }
    free(old);
    return ok;
}

/* The best candidate over all jobs, or bj = -1. */
static void best_candidate(tsl__tensile *T, int *bj_out, int32_t *bt_out, int32_t *bprev_out,
                           int32_t *bnext_out, int32_t *bgap_out) {
    int bj = -1;
    int32_t bt = -1, bprev = -1, bnext = -1, bgap = -1;
    double bmsps = 0;
    for (int j = 0; j < T->K.n_jobs; j++) {
        tsl__pjob *J = &T->K.jobs[j];
        const tsl__tjob *X = &T->tj[j];
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
            if (kb < 0 || ka < 0 || !a->acc[ka].reads || X->gap_done[kb]) continue;
            int32_t b = a->acc[ka].op;
            double lat = w->ops[q].end_us - w->ops[q].start_us;
            if (!(lat > 0)) continue;
            double msps = (double)w->tensors[t].bytes / lat;
            if (bj >= 0 && !(msps > bmsps)) continue; /* ties: first job, lowest index */
            if (!tsl__rc_producer_ok(J, t, q, b)) continue;
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

int tsl__try_recompute(tsl__tensile *T) {
    tsl__kit *K = &T->K;
    for (;;) {
        int bj;
        int32_t bt, bprev, bnext, bgap;
        best_candidate(T, &bj, &bt, &bprev, &bnext, &bgap);
        if (bj < 0) return -1;
        tsl__pjob *J = &K->jobs[bj];
        tsl__tjob *X = &T->tj[bj];
        X->gap_done[bgap] = 1;
        if (apply(T, J, bt, bprev, bnext)) {
            /* the recomputation reads its producer's inputs: none of them may
             * be swapped out across it later */
            const tsl_wl_op *q = &J->w->ops[J->w->tensors[bt].producer];
            for (int i = 0; i < q->n_in; i++) {
                int32_t x = q->in[i], g = tsl__acc_before(&J->act, x, bnext);
                if (g < 0 && J->act.acc_off[x + 1] > J->act.acc_off[x])
                    g = J->act.acc_off[x + 1] - 1; /* the wrap gap */
                if (g >= 0) X->gap_done[g] = 1;
            }
            return bj;
        }
        if (K->status != TSL_OK) return -1;
    }
}
