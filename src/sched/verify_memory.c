/*
 * verify_memory.c - the load curve of one job under its plan and the two
 * figures a plan predicts (docs/SCHEDULING.md, "Memory of one job"):
 *
 *   load(x) = bytes of the tensors resident at x (the stays built by
 *             verify_tensor.c) + the workspace of the op running at x,
 *
 * where an inserted recomputation holds its producer's workspace while it
 * runs (it re-runs that op). The peak is the largest load, taken after the
 * allocations of each time point (frees come first, see verify_internal.h).
 * The period is the end of the last op with recomputations inserted and the
 * planned waits taken (verify_timeline.c); every
 * transfer of the iteration must end by then, since the executor waits for
 * an iteration's events before it starts the next one (the simulator does
 * the same), so a later one would stretch the period.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/verify_internal.h"

typedef struct delta {
    tsl__vf_key key;
    size_t bytes;
    int alloc;
} delta;

static int cmp_delta(const void *a, const void *b) {
    return tsl__vf_key_cmp(&((const delta *)a)->key, &((const delta *)b)->key);
}

/* "as op 'x' starts" / "while op 'x' runs" / "after op 'x' ends" for a
 * peak key. */
static const char *where(const tsl__vf_job *j, const tsl__vf_key *k, char *buf, size_t len) {
    char pb[200];
    int64_t q = k->slot / 3;
    if (q >= j->n_pos) q = j->n_pos - 1;
    tsl__vf_pos_label(j, (int32_t)q, pb, sizeof pb);
    if (k->slot % 3 == 0)
        snprintf(buf, len, "as %s starts", pb);
    else if (q >= 0 && k->t < j->pe[q])
        snprintf(buf, len, "while %s runs", pb);
    else
        snprintf(buf, len, "after %s ends", pb);
    return buf;
}

tsl_status tsl__vf_memory(tsl__vf_job *j, tsl__vf_list *l) {
    const tsl_workload *w = j->w;
    const tsl_plan *p = j->p;
    size_t n = 2 * (size_t)j->n_iv + 2 * (size_t)j->n_pos;
    delta *d = malloc(sizeof *d * (n ? n : 1));
    if (!d) return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    size_t m = 0;
    for (int32_t t = 0; t < w->n_tensors; t++)
        for (int32_t i = j->iv_off[t]; i < j->iv_off[t + 1]; i++) {
            size_t b = w->tensors[t].bytes;
            d[m++] = (delta){j->iv[i].a, b, 1};
            if (j->iv[i].f_src != TSL__VF_SRC_NONE) d[m++] = (delta){j->iv[i].f, b, 0};
        }
    for (int32_t q = 1; q < j->n_pos; q++) {
        size_t ws = tsl__vf_pos_block(j, q);
        if (!ws) continue;
        tsl__vf_key a = {j->ps[q], 3 * (int64_t)q, TSL__VF_ALLOC, INT32_MAX};
        tsl__vf_key f = {j->pe[q], 3 * (int64_t)q + 1, TSL__VF_FREE, INT32_MAX};
        d[m++] = (delta){a, ws, 1};
        d[m++] = (delta){f, ws, 0};
    }
    qsort(d, m, sizeof *d, cmp_delta);
    size_t load = 0, peak = 0;
    tsl__vf_key at = {0.0, 0, 0, 0};
    for (size_t i = 0; i < m; i++) {
        if (d[i].alloc) {
            load += d[i].bytes;
            if (load > peak) {
                peak = load;
                at = d[i].key;
            }
        } else {
            load -= d[i].bytes;
        }
    }
    free(d);
    j->peak = peak;
    j->peak_at = at;

    /* the executor starts the next iteration once this one's transfers are
     * done: a copy past the period would stretch it */
    for (int32_t k = 0; k < p->n_events; k++) {
        tsl_event_type ty = p->events[k].type;
        if (!j->ok[k] || (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN)) continue;
        if (j->fin[k] > j->period + TSL__VF_EPS_US) {
            char lb[400], b1[48], b2[48];
            tsl__vf_times(j->fin[k], j->period, b1, b2, sizeof b1);
            tsl__vf_add(l, j->prefix,
                        "%s: copy ends at %s us, after the iteration ends at %s us "
                        "(the next iteration would wait for it)",
                        tsl__vf_ev_label(j, k, lb, sizeof lb), b1, b2);
        }
    }
    char wb[300];
    if (p->predicted_peak != peak)
        tsl__vf_add(l, j->prefix,
                    "predicted_peak_bytes %zu differs from the peak the events imply, "
                    "%zu bytes (at %.1f us, %s)",
                    p->predicted_peak, peak, at.t, where(j, &at, wb, sizeof wb));
    double per = j->period, pred = p->predicted_period_us;
    if (!isfinite(pred) || fabs(pred - per) > TSL__VF_EPS_US + 1e-9 * fabs(per)) {
        char b1[48], b2[48], waits[80] = "";
        int n_rc = j->n_pos - 1 - w->n_ops;
        tsl__vf_times(pred, per, b1, b2, sizeof b1);
        if (j->n_waits)
            snprintf(waits, sizeof waits, "; %d planned wait%s adding %.1f us", (int)j->n_waits,
                     j->n_waits == 1 ? "" : "s", j->stall);
        tsl__vf_add(l, j->prefix,
                    "predicted_period_us %s differs from the period the events "
                    "imply, %s us (%d recomputation%s adding %.1f us%s)",
                    b1, b2, n_rc, n_rc == 1 ? "" : "s",
                    per - (w->n_ops ? w->ops[w->n_ops - 1].end_us : 0.0) - j->stall, waits);
    }
    return TSL_OK;
}
