/*
 * tensile_across.c - TENSILE's across-iteration swapping of persistent tensors
 * (parameters, buffers, optimizer states such as Adam's moments): the
 * paper's Algorithm 2, lines 8-9 and 33-34, for "updated parameters".
 *
 * The paper swaps an updated parameter out in the optimizer phase and in
 * at the beginning of the next iteration, before its first TUA. Here a
 * persistent tensor's "wrap gap" runs from its last access op to the end of
 * the iteration and on from time 0 to its first access op; it is tried when
 * the job's peak lies in it (before the first or after the last access):
 *  A. across iterations: swap-out after the last write of the iteration
 *     (the update), release after the last access, no swap-in after that, so
 *     the tensor is absent at time 0 (docs/SCHEDULING.md); swap-in before the
 *     first access, triggered within the iteration (trigger -1 at the
 *     earliest). The copies must end within the iteration: the swap-out by
 *     the period (by the peak if the peak is after the last access), the
 *     swap-in by the first access's start. This frees the tensor from the
 *     iteration start to its swap-in and from its release to the end.
 *  B. if A does not fit and the peak is before the first access: within the
 *     iteration, swap-out from time 0 (the value of the previous update),
 *     release once it is done, swap-in before the first access.
 * A swap-out for A needs the tensor resident. A tensor already swapped out
 * within the iteration before its first access (an earlier middle gap) is
 * left as it is (neither A nor B).
 *
 * Clean drops (planning to a budget, docs/SCHEDULING.md): a parameter is
 * read in the forward pass, read again in the backward pass and written
 * only by its update. Once it is swapped as in A, it comes back at the
 * start of each iteration as a copy of its host copy and stays equal to it
 * until the update, so between its forward and backward reads it can be
 * released with no swap-out, and swapped in again: the device-to-host
 * channel before the forward peak, which the activations fill, is not
 * used. tsl__try_clean_drop drafts A and that drop together for a tensor
 * whose gap holds the peak and whose ordinary swap-out does not fit.
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/tensile_internal.h"

/* Option B: within the iteration, before the first access op F. */
static int head_in_iteration(tsl__tensile *T, int j, int32_t t, int32_t gap, int32_t F,
                             tsl__swap_draft *out) {
    tsl__pjob *J = &T->K.jobs[j];
    const tsl__timeline *tl = &J->tl;
    double t_peak = J->pk.time;
    size_t bytes = J->w->tensors[t].bytes;
    tsl__canon_ctx cx = {.tl = tl};
    double dur = tsl_copy_us(J->dev, bytes, 0);
    double x = tsl__chan_earliest(tsl__chan_of(&T->K, J, 0), 0.0, dur, t_peak, tsl__canon_tl, &cx);
    if (x < 0) {
        T->tj[j].gap_fail_out[gap] = t_peak;
        return 0;
    }
    tsl__swap_draft d = {.tensor = t, .has_out = 1, .so_trig = cx.trigger, .so_delay = cx.delay,
                         .so_issue = x, .so_end = x + dur, .gap = gap};
    d.rel_trig = x <= 0 ? -1 : tsl__op_ending_from(tl, x);
    if (d.rel_trig >= F) {
        T->tj[j].gap_fail_out[gap] = t_peak;
        return 0;
    }
    double rel = tsl__release_time_with(J, t, d.rel_trig, x, d.so_end);
    return tsl__tensile_swap_in(T, j, d, rel, F, out);
}

int tsl__try_across(tsl__tensile *T, int j, int32_t t, int32_t gap, tsl__swap_draft *out) {
    tsl__pjob *J = &T->K.jobs[j];
    tsl__tjob *X = &T->tj[j];
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    if (X->gap_done[gap]) return 0;
    int32_t first = a->acc_off[t];
    int32_t F = a->acc[first].op, L = a->acc[gap].op;
    if (!a->acc[first].reads) {
        X->gap_done[gap] = 1;
        return 0;
    }
    int32_t op = J->pk.op;
    double t_peak = J->pk.time;
    int head = op < F, tail = op > L;
    if (!head && !tail) return 0;
    if (t_peak <= X->gap_fail_out[gap] || t_peak >= X->gap_fail_in[gap]) return 0;
    /* swapped out before its first access already (an earlier middle gap,
     * from time 0): a swap-in before that swap-out would be waited on by an
     * executor that lets a swap-in wait for a swap-out of the same tensor
     * already triggered. Leave the wrap gap alone. */
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k])
        if (J->plan->events[k].type == TSL_EV_SWAP_OUT && J->ev_time[k] < tl->s[F]) {
            X->gap_done[gap] = 1;
            return 0;
        }
    int32_t wr = -1;
    for (int32_t k = gap; k >= first && wr < 0; k--)
        if (a->acc[k].writes) wr = k;
    /* never written: the copy is made once its first access ran (the tensor
     * is then on the device for sure) */
    double gen_end = wr >= 0 ? tl->e[a->acc[wr].op] : tl->e[F];
    double D = head ? tl->period - tsl__margin(tl->period) : t_peak;
    tsl__swap_draft d = {.tensor = t, .gap = gap};
    double rel = tsl__place_swap_out(&T->K, J, t, gen_end, L, D, &d);
    int ok = rel >= 0 && rel <= D;
    if (ok) {
        double lo = head ? nextafter(t_peak, INFINITY) : 0.0;
        if (tsl__place_swap_in(&T->K, J, lo, tl->s[F], F, &d)) {
            d.n_abs = 2;
            d.abs_lo[0] = 0.0; /* absent from the iteration start */
            d.abs_hi[0] = d.si_issue;
            d.abs_lo[1] = rel; /* and from the release to the end */
            d.abs_hi[1] = INFINITY;
            *out = d;
            return 1;
        }
        if (tail) {
            X->gap_fail_in[gap] = t_peak;
            return 0;
        }
    } else if (tail) {
        X->gap_fail_out[gap] = t_peak;
        return 0;
    }
    return head_in_iteration(T, j, t, gap, F, out);
}

int tsl__try_clean_drop(tsl__tensile *T, int j, int32_t t, int32_t kb, int32_t ka,
                        tsl__tdraft *out) {
    tsl__pjob *J = &T->K.jobs[j];
    const tsl__activity *a = &J->act;
    tsl__swap_draft x;
    if (!tsl__clean_drop_ok(J, t, kb) || T->tj[j].gap_done[a->acc_off[t + 1] - 1] ||
        !tsl__place_across(&T->K, J, t, &x))
        return 0;
    /* the drop: released after the gap's first access, back after the peak
     * before its next one (no swap-out: none of t is planned, so it goes
     * at once) */
    int32_t prev_op = a->acc[kb].op;
    tsl__swap_draft d = {.tensor = t, .gap = kb, .rel_trig = prev_op};
    if (!tsl__tensile_swap_in(T, j, d, J->tl.e[prev_op], a->acc[ka].op, &out->d) ||
        !tsl__drafts_disjoint(&T->K, J, &x, &out->d))
        return 0;
    out->d.n_abs = 3;
    for (int i = 0; i < 2; i++) {
        out->d.abs_lo[1 + i] = x.abs_lo[i];
        out->d.abs_hi[1 + i] = x.abs_hi[i];
    }
    out->across = x;
    out->has_across = 1;
    return 1;
}
