/*
 * tensile_swap.c - TENSILE's swap scheduling (paper, Algorithm 2) of one
 * candidate tensor: the gap of the tensor around its job's peak, a
 * swap-out on the device-to-host channel, a release, and a swap-in on the
 * host-to-device channel before the next read (placed by the kit,
 * swap_place.c).
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
 *    nor for a persistent tensor absent at time 0 and not written since: the
 *    copy it came back from (made in the previous iteration; before the
 *    first, the runtime and the simulator give it one) is current
 *    (tsl__place_swap_out);
 *  - the swap-in starts at the latest free moment whose copy ends by the
 *    next read's start and that lies strictly after the peak (a swap-in
 *    issued at the peak would allocate there): TENSILE never plans compute
 *    waiting for a copy. A later swap-out cannot help it, since it must
 *    start after the peak anyway, so the paper's retry loop has nothing to
 *    try; the gap is given up instead (and remembered with the peak time,
 *    see policy_tensile.c);
 *  - persistent tensors whose peak lies before their first or after their
 *    last access go to tensile_across.c; so, when planning to a budget, does
 *    a persistent tensor whose swap-out does not fit before the peak: its
 *    clean drop (no copy out at all, tsl__try_clean_drop);
 *  - INPUT and LABEL tensors are never swapped (not candidates).
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/tensile_internal.h"

/* Index in a->acc of the latest access op at or before index k (same
 * tensor, from index lo) that writes the tensor, or -1. */
static int32_t latest_write(const tsl__activity *a, int32_t lo, int32_t k) {
    for (; k >= lo; k--)
        if (a->acc[k].writes) return k;
    return -1;
}

int tsl__tensile_swap_in(tsl__tensile *T, int j, tsl__swap_draft d, double rel, int32_t precede,
                         tsl__swap_draft *out) {
    tsl__pjob *J = &T->K.jobs[j];
    tsl__tjob *X = &T->tj[j];
    double t_peak = J->pk.time;
    if (rel > t_peak) {
        X->gap_fail_out[d.gap] = t_peak;
        return 0;
    }
    double din = tsl_copy_us(J->dev, J->w->tensors[d.tensor].bytes, 1);
    double lo = nextafter(t_peak, INFINITY);
    double end_by = J->tl.s[precede] - T->opts->swap_in_slack * din; /* see tsl_tensile_opts */
    if (!tsl__place_swap_in(&T->K, J, lo, end_by, precede, &d)) {
        X->gap_fail_in[d.gap] = t_peak;
        return 0;
    }
    d.n_abs = 1;
    d.abs_lo[0] = rel;
    d.abs_hi[0] = d.si_issue;
    *out = d;
    return 1;
}

int tsl__try_swap(tsl__tensile *T, int j, int32_t t, tsl__tdraft *td) {
    tsl__swap_draft *out = &td->d;
    td->has_across = 0;
    tsl__pjob *J = &T->K.jobs[j];
    tsl__tjob *X = &T->tj[j];
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int32_t op = J->pk.op;
    double t_peak = J->pk.time;
    int32_t kb = op < 0 ? -1 : tsl__acc_before(a, t, op);
    int32_t ka = tsl__acc_after(a, t, op);
    if (a->persistent[t] && (kb < 0 || ka < 0))
        return a->acc_off[t + 1] > a->acc_off[t]
                   ? tsl__try_across(T, j, t, a->acc_off[t + 1] - 1, out)
                   : 0;
    if (kb < 0 || ka < 0) return 0;
    int32_t gap = kb;
    if (X->gap_done[gap]) return 0;
    if (!a->acc[ka].reads) { /* rewritten before it is read again: not a swap */
        X->gap_done[gap] = 1;
        return 0;
    }
    if (t_peak <= X->gap_fail_out[gap] || t_peak >= X->gap_fail_in[gap]) return 0;
    int32_t prev_op = a->acc[kb].op, next_op = a->acc[ka].op;
    int32_t wr = latest_write(a, a->acc_off[t], kb);
    if (wr < 0 && !a->persistent[t]) return 0;
    /* the value's generation; for a tensor absent at time 0 and not written
     * since, the end of its first access (its swap-in then has landed) */
    double gen_end = wr >= 0 ? tl->e[a->acc[wr].op]
                             : J->absent0[t] ? tl->e[a->acc[a->acc_off[t]].op] : 0.0;
    tsl__swap_draft d = {.tensor = t, .gap = gap};
    double rel = tsl__place_swap_out(&T->K, J, t, gen_end, prev_op, t_peak, &d);
    if (rel < 0) {
        if (T->way.clean && a->persistent[t] && tsl__try_clean_drop(T, j, t, kb, ka, td))
            return 1;
        X->gap_fail_out[gap] = t_peak;
        return 0;
    }
    return tsl__tensile_swap_in(T, j, d, rel, next_op, out);
}
