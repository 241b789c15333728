/*
 * tensile_budget.c - TENSILE planning to a budget (option `fit`;
 * docs/SCHEDULING.md, "Planning to a budget"). Algorithm 3 saves what the
 * copy channels can hide and recomputes one level; where that leaves the
 * jobs above the budget, planning goes on one choice per round at the
 * jobs' peaks with the drafts Capuchin uses (drafts.h): for each candidate
 * its cheapest form - a swap whose copies hide (no cost), a swap whose
 * late swap-in makes the back access wait (its stall), for a tensor the
 * plan swaps already but brings back by the peak that swap-in moved after
 * it (hidden or waited for), for a persistent tensor whose wrap gap
 * holds the peak (in the wider ways, policy_tensile.c) its swap across the
 * iteration's boundary (hidden or waited for), or a recomputation (in a
 * wider way also of a tensor whose swap-in lands by the peak: that swap-in
 * turned into it)
 * chained back to the nearest resident tensors (its producers'
 * latencies) - and the candidate with the least added iteration time per
 * byte taken off the peak is committed (ties: the larger, then the lower
 * job and tensor), until the jobs' peaks fit the budget or nothing is
 * left. A budget below the jobs' floor (tsl_workload_op_floor: the
 * largest working set one op needs) cannot be met: the paper's plan is
 * kept (the planner reports the floor). Where Algorithm 3's plan meets the budget it is the
 * plan: this phase only adds to it.
 */
#include <stdlib.h>

#include "sched/drafts.h"
#include "sched/tensile_internal.h"

/* Drafts candidate c's forms and returns the added iteration time of the
 * cheapest (0 for a swap that hides), setting *swap (1: its swap draft, 0:
 * its recomputation); -1 if it has none. */
static double cheapest(tsl__drafter *D, tsl__draft_cand *c, int *swap) {
    tsl__draft_swap(D, c, 1);
    if (c->swap_ok) {
        *swap = 1;
        return 0.0;
    }
    tsl__draft_rc(D, c);
    tsl__draft_swap(D, c, 0);
    double best = -1;
    if (c->swap_ok) {
        best = c->stall;
        *swap = 1;
    }
    if (c->rc_ok && (best < 0 || c->rc_us < best)) {
        best = c->rc_us;
        *swap = 0;
    }
    return best;
}

/* The round's choice (tsl__draft_pick_fn): the least cost per byte. */
static int32_t pick_cheapest(tsl__drafter *D, void *ctx, int *swap) {
    (void)ctx;
    int32_t best = -1;
    double best_cpb = 0;
    for (int32_t i = 0; i < D->n_cand && D->K->status == TSL_OK; i++) {
        tsl__draft_cand *c = &D->cand[i];
        int sw = 1;
        double cost = cheapest(D, c, &sw);
        if (cost < 0) continue;
        double cpb = cost / (double)c->bytes;
        if (best < 0 || cpb < best_cpb ||
            (cpb == best_cpb && tsl__draft_first_of_equals(c, &D->cand[best]))) {
            best = i;
            best_cpb = cpb;
            *swap = sw;
        }
    }
    return best;
}

/* Marks done[] the gaps of J's tensors that its plan releases already
 * (Algorithm 3's swaps and recomputations): a release in a gap is the
 * last access op at or before its trigger. Gaps Algorithm 3 only tried
 * stay open: a swap with a planned wait or a chained recomputation may
 * take them. */
static void mark_released(const tsl__pjob *J, uint8_t *done) {
    for (int32_t k = 0; k < J->plan->n_events; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_RELEASE) continue;
        int32_t g = tsl__acc_before(&J->act, e->tensor, e->trigger + 1);
        if (g >= 0) done[g] = 1;
    }
}

/* 1 if T plans to `budget`: opts->fit and the budget not below the jobs'
 * floors. */
static int fitting(const tsl__tensile *T, size_t budget) {
    if (!T->opts->fit) return 0;
    size_t floor_b = 0;
    for (int j = 0; j < T->K.n_jobs; j++) floor_b += tsl_workload_op_floor(T->K.jobs[j].w, NULL);
    return budget >= floor_b; /* below it no plan meets it: the paper's plan stays */
}

int tsl__tensile_fit(tsl__tensile *T, size_t budget) {
    tsl__kit *K = &T->K;
    if (!fitting(T, budget) || tsl__kit_peaks(K) <= budget) return 0;
    size_t n = K->n_jobs > 0 ? (size_t)K->n_jobs : 0;
    uint8_t **done = calloc(n, sizeof *done), **late_done = calloc(n, sizeof *late_done);
    size_t *min_bytes = calloc(n, sizeof *min_bytes), *min_wrap = calloc(n, sizeof *min_wrap);
    int ok = done && late_done && min_bytes && min_wrap;
    for (size_t j = 0; ok && j < n; j++) {
        const tsl__pjob *J = &K->jobs[j];
        size_t na = (size_t)J->act.acc_off[J->w->n_tensors] + 1;
        ok = (done[j] = calloc(na, 1)) != NULL && (late_done[j] = calloc(na, 1)) != NULL;
        if (ok) mark_released(J, done[j]);
        min_bytes[j] = T->tj[j].min_swap;
        min_wrap[j] = T->tj[j].min_wrap;
    }
    int rounds = 0;
    if (!ok) K->status = tsl_fail(TSL_ERR_OOM, "tensile: out of host memory for %zu jobs", n);
    else {
        tsl__drafter D = {.K = K, .swap = 1, .recompute = T->opts->recompute != 0, .done = done,
                          .min_bytes = min_bytes, .min_wrap = min_wrap,
                          .single_output = T->way.single, .clean_drops = T->way.clean,
                          .late_ins = 1, .out_waits = T->way.out_waits,
                          .across = T->way.across, .convert = T->way.convert,
                          .late_done = late_done};
        K->rebook_rounded = 1; /* copies back to back move together */
        rounds = tsl__drafts_run(&D, budget, pick_cheapest, NULL);
        K->rebook_rounded = 0;
        tsl__drafter_free(&D);
    }
    for (size_t j = 0; done && j < n; j++) free(done[j]);
    for (size_t j = 0; late_done && j < n; j++) free(late_done[j]);
    free(done);
    free(late_done);
    free(min_bytes);
    free(min_wrap);
    return rounds;
}
