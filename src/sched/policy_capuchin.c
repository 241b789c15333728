/*
 * policy_capuchin.c - the "capuchin" policy: Capuchin's hybrid policy
 * (Peng et al., "Capuchin: Tensor-based GPU Memory Management for Deep
 * Learning", ASPLOS 2020; TENSILE's baseline, its section V), built on the
 * planner kit; its options are tsl_capuchin_opts
 * (tensile/policy_capuchin.h), the candidates, drafts and rounds
 * drafts.c's (shared with TENSILE's planning to a budget).
 *
 * Capuchin tracks the tensor access sequence of a first iteration run in
 * passive mode (tensors evicted on out-of-memory) and then plans, for the
 * memory it must save (the peak less the memory limit): candidates are
 * the tensors resident at the peak and accessed on both sides of it; a
 * swap costs nothing when its copies fit in the tensor's free time FT
 * (swap-in start - swap-out end, the swap-in triggered early enough - its
 * in-trigger - to land by the back access), so the candidates with the
 * largest FT are swapped first while their swaps hide; then the candidate
 * with the largest MSPS (memory saving per second of recomputation: bytes
 * / the time to regenerate it, its lineage from the nearest resident
 * tensors included) is taken, swapped if the swap's overhead (the back
 * access waiting) is below the recomputation's, else recomputed; the
 * MSPS of the others are updated (a recomputation's sources may now be
 * gone), and so on until the saving is reached.
 *
 * Here, on Tensile's graphs and semantics (docs/SCHEDULING.md):
 *  - the memory limit is the request's budget (several jobs: the sum of
 *    their peaks, as TENSILE's); a job within it is not touched (no
 *    pressure: the empty plan);
 *  - one choice at a time, each against the current peaks: the candidates
 *    at every job's peak under the plan so far; first the swaps that hide
 *    (the largest FT first), then, when none is left, the largest MSPS
 *    with the cheaper of its swap (the wait it causes) and its
 *    recomputation (its time). A choice that would raise its job's peak is
 *    undone and its gap given up; planning stops when the peaks fit or no
 *    candidate is left;
 *  - the times: the job's workload as given - in `tensile plan` the
 *    profile's cost model or the workload file; in a job (`tensile run`)
 *    the per-op kernel times the passive iteration measured (src/job/);
 *  - a swap-out starts after the evicted access as soon as the
 *    device-to-host channel is free and must have freed the tensor by the
 *    peak; a swap-in is placed after the peak (it allocates as it starts),
 *    as late as the host-to-device channel allows landing by the back
 *    access (a hidden swap), or as early as it allows (the back access
 *    waits for it: a planned wait, in the predicted period);
 *  - FT and the waits are measured against the copies already booked
 *    (Capuchin's FT assumes an idle channel, its in-trigger then moves
 *    earlier at run time when a copy is late; here the copies are placed
 *    where they fit from the start);
 *  - a recomputation releases the tensor after its evicted access and
 *    re-runs its producer right before the back access, preceded by its
 *    chain: the producers of those of its inputs that are gone by then
 *    (dead: freed after their last read, or released), recursively, back
 *    to the nearest resident tensors; the chain is released again after
 *    the back access. Every producer must replay its tensor exactly (one
 *    output, not in place, a positive latency), its inputs unchanged
 *    since it ran; chain members must have lower tensor indices than what
 *    they feed (recomputations before one op run in index order) and be
 *    at most TSL__CHAIN_MAX;
 *  - Capuchin's runtime feedback (moving an in-trigger earlier after a
 *    late swap-in) is not built: the plan is made once and followed.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sched/capuchin_internal.h"

/* ---- the policy's options ------------------------------------------------------------ */

static const tsl_policy_option OPTIONS[] = {
    {"swap", "swap tensors to the host", TSL_OPT_BOOL, 0, 1, 1,
     offsetof(tsl_capuchin_opts, swap)},
    {"recompute", "recompute tensors (chained from the nearest resident ones)", TSL_OPT_BOOL, 0,
     1, 1, offsetof(tsl_capuchin_opts, recompute)},
    {"min-bytes",
     "bytes: smaller tensors are not candidates (-1: TENSILE's min-swap-bytes floor; 0: any "
     "size, the paper)",
     TSL_OPT_DOUBLE, -1.0, 1152921504606846976.0, -1.0, offsetof(tsl_capuchin_opts, min_bytes)},
};

static tsl_status plan_capuchin(const tsl_plan_request *rq, tsl_plan **plans, int *iterations);

const tsl_policy tsl__policy_capuchin = {
    "capuchin",
    "Capuchin (Peng et al. 2020): hidden swaps by free time, then swap or chained "
    "recomputation by memory saving per second, until the budget (first iteration passive in "
    "a run)",
    sizeof(tsl_capuchin_opts),
    OPTIONS,
    (int)(sizeof OPTIONS / sizeof OPTIONS[0]),
    plan_capuchin,
    NULL,
};

tsl_capuchin_opts tsl_capuchin_opts_default(void) {
    tsl_capuchin_opts o;
    tsl_policy_defaults(&tsl__policy_capuchin, &o);
    return o;
}

/* ---- the hybrid policy --------------------------------------------------------------- */

static void capuchin_free(tsl__capuchin *C) {
    for (int j = 0; C->done && j < C->K.n_jobs; j++) free(C->done[j]);
    free(C->done);
    free(C->min_bytes);
    tsl__drafter_free(&C->D);
    tsl__kit_free(&C->K);
}

/* The smallest candidate of job J (option min-bytes m; -1: TENSILE's
 * min-swap-bytes default - the smaller of the bytes the slower copy
 * direction carries in one copy latency and a thousandth of the job's
 * vanilla peak, J->pk when the kit is new). */
static size_t min_bytes(double m, const tsl__pjob *J) {
    if (m < 0) {
        const tsl_device_profile *d = J->dev;
        double bw = d->h2d_bw < d->d2h_bw ? d->h2d_bw : d->d2h_bw;
        m = d->copy_latency_us * 1e-6 * bw;
        double share = 1e-3 * (double)J->pk.peak;
        if (share < m) m = share;
    }
    return m < 1.0 ? 0 : m >= 1e18 ? (size_t)1e18 : (size_t)m;
}

/* The kit over the request's jobs and the per-job gap flags. TSL_ERR_OOM
 * (C is then freed). */
static tsl_status capuchin_init(tsl__capuchin *C, const tsl_plan_request *rq, tsl_plan **plans) {
    memset(C, 0, sizeof *C);
    C->opts = rq->opts;
    tsl_status st = tsl__kit_init(&C->K, rq, plans);
    if (st != TSL_OK) return st;
    C->done = calloc((size_t)rq->n_jobs, sizeof *C->done);
    C->min_bytes = calloc((size_t)rq->n_jobs, sizeof *C->min_bytes);
    int ok = C->done != NULL && C->min_bytes != NULL;
    for (int j = 0; ok && j < rq->n_jobs; j++) {
        const tsl__pjob *J = &C->K.jobs[j];
        C->done[j] = calloc((size_t)J->act.acc_off[J->w->n_tensors] + 1, 1);
        ok = C->done[j] != NULL;
        C->min_bytes[j] = min_bytes(C->opts->min_bytes, J);
    }
    C->D = (tsl__drafter){.K = &C->K, .swap = C->opts->swap, .recompute = C->opts->recompute,
                          .done = C->done, .min_bytes = C->min_bytes};
    if (!ok) {
        capuchin_free(C);
        return tsl_fail(TSL_ERR_OOM, "capuchin: out of host memory for %d jobs", rq->n_jobs);
    }
    return TSL_OK;
}

/* Phase 1: the candidate whose swap hides with the largest free time, or
 * -1. */
static int32_t best_hidden_swap(tsl__drafter *C) {
    int32_t best = -1;
    for (int32_t i = 0; i < C->n_cand && C->K->status == TSL_OK; i++) {
        tsl__draft_cand *c = &C->cand[i];
        tsl__draft_swap(C, c, 1);
        if (!c->swap_ok) continue;
        const tsl__draft_cand *b = best >= 0 ? &C->cand[best] : NULL;
        if (!b || c->ft > b->ft || (c->ft == b->ft && tsl__draft_first_of_equals(c, b))) best = i;
    }
    return best;
}

/* Phase 2: each candidate's recomputation and waiting swap; the one with
 * the largest memory saving per second (a recomputation's MSPS; for a
 * tensor that cannot be recomputed, bytes per second of its swap's wait),
 * or -1. */
static int32_t best_msps(tsl__drafter *C) {
    int32_t best = -1;
    double best_s = 0;
    for (int32_t i = 0; i < C->n_cand && C->K->status == TSL_OK; i++) {
        tsl__draft_cand *c = &C->cand[i];
        tsl__draft_rc(C, c);
        tsl__draft_swap(C, c, 0);
        double s;
        if (c->rc_ok) s = (double)c->bytes / c->rc_us;
        else if (c->swap_ok) s = c->stall > 0 ? (double)c->bytes / c->stall : INFINITY;
        else continue;
        if (best < 0 || s > best_s || (s == best_s && tsl__draft_first_of_equals(c, &C->cand[best]))) {
            best = i;
            best_s = s;
        }
    }
    return best;
}

/* The round's choice (tsl__draft_pick_fn): the hidden swap with the
 * largest free time; else the largest MSPS, as the cheaper of its swap
 * (its wait) and its recomputation (its time). */
static int32_t pick_capuchin(tsl__drafter *D, void *ctx, int *swap) {
    (void)ctx;
    int32_t i = best_hidden_swap(D);
    *swap = 1;
    if (i >= 0 || D->K->status != TSL_OK) return i;
    i = best_msps(D);
    if (i < 0) return -1;
    const tsl__draft_cand *c = &D->cand[i];
    *swap = c->swap_ok && (!c->rc_ok || c->stall < c->rc_us);
    return i;
}

/* The policy's plan function (tsl_policy_plan_fn). */
static tsl_status plan_capuchin(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    tsl__capuchin C;
    tsl_status st = capuchin_init(&C, rq, plans);
    if (st != TSL_OK) return st;
    *iterations = tsl__drafts_run(&C.D, rq->budget, pick_capuchin, NULL);
    st = C.K.status;
    capuchin_free(&C);
    return st;
}
