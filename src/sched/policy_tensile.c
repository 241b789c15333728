/*
 * policy_tensile.c - the "tensile" policy: TENSILE's complete scheduling
 * (paper, Algorithm 3) over several jobs sharing one device, built on the
 * planner kit (kit.h): activity analysis, then a loop of peak analysis,
 * swap scheduling (tensile_swap.c, tensile_across.c) and, while the jobs do
 * not fit the budget, recomputation (tensile_recompute.c). Its options are
 * tsl_tensile_opts (tensile/policy_tensile.h).
 *
 * The peak analysis of a job is re-run only after its plan changed. An
 * iteration of the loop is one pass of Algorithm 2: the tensors resident at
 * every job's peak (MPT), largest first (ties: job index, then tensor
 * index), are drafted as swaps without any compute waiting for a copy;
 * among the first LOOKAHEAD drafts that fit, the one that lowers the sum of
 * the jobs' peaks most is committed; then the same for the jobs not
 * swapped yet in this iteration. Departures from the paper:
 *  - at most one swap per job and iteration, chosen among several drafts by
 *    its effect on the peak (the paper's Algorithm 2 swaps every MPT tensor
 *    that fits against one peak analysis, largest first): after a swap the
 *    peak may move, and the PCIe time left is better spent at the new peak;
 *    a swap-in allocates as it starts, and a large one can make a new peak
 *    right where it lands, which the estimate sees;
 *  - a swap that fails is remembered per gap with the peak time at which
 *    its swap-out (or swap-in) did not fit, and retried only at a peak time
 *    where it could fit (channels only fill up);
 *  - after a successful recomputation, swapping is tried again (the peak
 *    moved); the paper never returns to swapping;
 *  - a tensor smaller than opts->min_swap_bytes is never swapped (by
 *    default what a channel carries in one copy latency: such a copy is
 *    mostly fixed cost and frees almost nothing);
 *  - once the plans are laid out, every swap-in is issued as early as its
 *    place in the layout and its channel allow (opts->prefetch; prefetch.c):
 *    the paper's "as late as possible" saves peak load, which the layout
 *    turns into a footprint fixed byte for byte; issued early, a swap-in
 *    costs no footprint and an op that runs faster than its estimate (or a
 *    copy slower than the profile's) no longer waits for it;
 *  - every copy ends within its job's iteration, so that an executor that
 *    waits for its iteration's transfers never waits (the paper lets
 *    transfers run over); no op waits for a copy either (no planned wait);
 *  - planning to a budget (opts->fit, tensile_budget.c; not below the
 *    jobs' floor): where the loop below leaves the jobs above the budget,
 *    planning goes on with hidden swaps, swaps that make compute wait and
 *    recomputations chained from the nearest resident tensors, the least
 *    added time per byte first, until they fit.
 * Termination: neither a swap nor a recomputation succeeded in an
 * iteration; or (the paper's rule) more than 100 iterations were done and
 * the average peak of the jobs touched in the last 3 iterations fell by
 * less than 0.05 %; or opts->max_iterations.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/drafts.h"
#include "sched/tensile_internal.h"

/* ---- the policy's options ------------------------------------------------------------ */

static const tsl_policy_option OPTIONS[] = {
    {"max-swap-rate", "a job's largest share of all the swapped tensors (its priority)",
     TSL_OPT_PER_JOB, 0.0, 1.0, 1.0, offsetof(tsl_tensile_opts, max_swap_rate)},
    {"swap-in-slack", "land each swap-in this many copy times before its access (0: the paper)",
     TSL_OPT_DOUBLE, 0.0, 10.0, 0.0, offsetof(tsl_tensile_opts, swap_in_slack)},
    {"min-swap-bytes",
     "never swap a tensor smaller than this (-1: what a channel carries in one copy latency; "
     "0: any size, the paper)",
     TSL_OPT_DOUBLE, -1.0, 1152921504606846976.0, -1.0, offsetof(tsl_tensile_opts, min_swap_bytes)},
    {"recompute", "recompute tensors while the jobs exceed the budget", TSL_OPT_BOOL, 0, 1, 1,
     offsetof(tsl_tensile_opts, recompute)},
    {"prefetch", "issue swap-ins as early as the layout and the channels allow (0: as late as "
     "possible, the paper)", TSL_OPT_BOOL, 0, 1, 1, offsetof(tsl_tensile_opts, prefetch)},
    {"max-iterations", "hard cap on Algorithm 3's loop", TSL_OPT_INT, 0, 1e9, 10000,
     offsetof(tsl_tensile_opts, max_iterations)},
    {"fit", "plan to the budget: with a budget named, no more of the paper's swaps than it "
     "needs; where the paper's plan exceeds it, go on to the cheapest plan that fits "
     "(chained recomputations, swaps that make compute wait; 0: the paper's plan)",
     TSL_OPT_BOOL, 0, 1, 1, offsetof(tsl_tensile_opts, fit)},
};

static tsl_status plan_tensile(const tsl_plan_request *rq, tsl_plan **plans, int *iterations);
static tsl_status refine_tensile(const tsl_plan_request *rq, tsl_plan **plans);

const tsl_policy tsl__policy_tensile = {
    "tensile",
    "TENSILE (Algorithm 3): swaps and recomputations for all the jobs together",
    sizeof(tsl_tensile_opts),
    OPTIONS,
    (int)(sizeof OPTIONS / sizeof OPTIONS[0]),
    plan_tensile,
    refine_tensile,
};

tsl_tensile_opts tsl_tensile_opts_default(void) {
    tsl_tensile_opts o;
    tsl_policy_defaults(&tsl__policy_tensile, &o);
    return o;
}

/* ---- Algorithm 3 ---------------------------------------------------------------------- */

/* 1 if job j may take one more swapped tensor (t is not yet swapped) under
 * its max swapping rate: (swapped of j + 1) / (swapped of all + 1) <= rate. */
static int rate_allows(const tsl__tensile *T, int j, int32_t t) {
    const tsl__pjob *J = &T->K.jobs[j];
    if (J->swapped[t]) return 1;
    double rate = tsl_per_job_at(&T->opts->max_swap_rate, j);
    if (rate >= 1.0) return 1;
    return (double)(J->n_swapped + 1) <= rate * (double)(T->total_swapped + 1) + 1e-12;
}

/* The smallest tensor TENSILE swaps in job J (m: opts->min_swap_bytes; -1:
 * the smaller of the bytes the slower copy direction carries in one copy
 * latency, below which a copy is mostly fixed cost, and a thousandth of
 * the job's vanilla peak, so that a small job on a fast device still swaps
 * what matters to it). */
static size_t min_swap_bytes(double m, const tsl__pjob *J) {
    if (m < 0) {
        const tsl_device_profile *d = J->dev;
        double bw = d->h2d_bw < d->d2h_bw ? d->h2d_bw : d->d2h_bw;
        m = d->copy_latency_us * 1e-6 * bw;
        double share = 1e-3 * (double)J->pk.peak;
        if (share < m) m = share;
    }
    return m < 1.0 ? 1 : m >= 1e18 ? (size_t)1e18 : (size_t)m;
}

/* Collects job j's swap candidates at its peak, largest first (those of
 * at least min_swap_bytes). */
static void collect_mpt(tsl__tensile *T, int j) {
    tsl__pjob *J = &T->K.jobs[j];
    tsl__tjob *X = &T->tj[j];
    if (X->mpt_at == J->analyses) return;
    const tsl_workload *w = J->w;
    tsl__sweep sw;
    tsl__sweep_run(w, &J->act, &J->tl, J->eff, J->n_eff, J->absent0, J->resident, J->pk.step, &sw,
                   NULL);
    /* the op running at the peak keeps its inputs and outputs; so does a
     * recomputation running there */
    tsl__pjob_keep_peak_users(J);
    int32_t n = 0;
    size_t min_bytes = X->min_swap;
    for (int32_t k = 0; k < w->n_tensors; k++) { /* largest first */
        int32_t t = J->act.by_size[k];
        if (w->tensors[t].bytes < min_bytes) break; /* and all after it */
        if (J->resident[t] && !J->act.data[t] && !J->recomputed[t]) X->mpt[n++] = t;
    }
    X->n_mpt = n;
    X->mpt_at = J->analyses;
}

/* An upper bound of J's peak if draft d were added: the load at every
 * check point of the last analysis, less the tensor's bytes where it
 * becomes absent (a check point at the swap-in's own time keeps it), and
 * the load where the swap-in allocates (at most the check point before).
 * *cover gets how many check points within NEAR of the current peak the
 * draft lowers (how much of a plateau around the peak it takes down). */
#define NEAR 0.02
static size_t estimate_peak(const tsl__pjob *J, const tsl__swap_draft *d, int64_t *cover) {
    const tsl__profile *pf = &J->prof;
    size_t b = J->w->tensors[d->tensor].bytes, best = 0, before_si = 0;
    size_t near = (size_t)((double)J->pk.peak * (1.0 - NEAR));
    int64_t c = 0;
    for (int64_t k = 0; k < pf->n; k++) {
        double x = pf->time[k];
        size_t v = pf->load[k];
        if (x <= d->si_issue) before_si = v;
        for (int i = 0; i < d->n_abs; i++)
            if (x >= d->abs_lo[i] && x < d->abs_hi[i]) {
                c += v >= near;
                v = v >= b ? v - b : 0;
                break;
            }
        if (v > best) best = v;
    }
    *cover = c;
    return best > before_si ? best : before_si;
}

/* Takes back the events J's plan got since it had n_ev, unbooking their
 * copies. */
static void pop_since(tsl__kit *K, tsl__pjob *J, int32_t n_ev) {
    for (int32_t k = J->plan->n_events - 1; k >= n_ev; k--) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_SWAP_OUT || e->type == TSL_EV_SWAP_IN)
            tsl__chan_unbook(tsl__chan_of(K, J, e->type == TSL_EV_SWAP_IN), J->ev_time[k],
                             J->ev_end[k]);
    }
    tsl__pjob_pop_events(J, J->plan->n_events - n_ev);
}

/* Candidates evaluated per iteration (drafts whose estimated peaks are
 * compared before one is committed). */
#define LOOKAHEAD 8

/* One swap over all jobs. Walks the candidates (tensors resident at the
 * jobs' peaks) largest first, drafts a swap for each until LOOKAHEAD
 * drafts fit, and commits the one that lowers the sum of peaks most (by
 * the profile estimate; ties: larger tensor, then candidate order). Jobs
 * with skip[j] set are left out. Returns the job index swapped in, or
 * -1. */
static int swap_step(tsl__tensile *T, const uint8_t *skip) {
    tsl__kit *K = &T->K;
    int32_t *pos = T->pos;
    for (int j = 0; j < K->n_jobs; j++) {
        collect_mpt(T, j);
        pos[j] = skip[j] ? T->tj[j].n_mpt : 0;
    }
    tsl__tdraft best;
    int best_j = -1, n_drafts = 0;
    size_t best_gain = 0, best_bytes = 0;
    int64_t best_cover = 0;
    while (n_drafts < LOOKAHEAD && K->status == TSL_OK) {
        int bj = -1;
        size_t bb = 0;
        for (int j = 0; j < K->n_jobs; j++) {
            const tsl__tjob *X = &T->tj[j];
            while (pos[j] < X->n_mpt && !rate_allows(T, j, X->mpt[pos[j]])) pos[j]++;
            if (pos[j] >= X->n_mpt) continue;
            size_t b = K->jobs[j].w->tensors[X->mpt[pos[j]]].bytes;
            if (bj < 0 || b > bb) {
                bj = j;
                bb = b;
            }
        }
        if (bj < 0) break;
        tsl__pjob *J = &K->jobs[bj];
        int32_t t = T->tj[bj].mpt[pos[bj]++];
        tsl__tdraft d;
        if (!tsl__try_swap(T, bj, t, &d)) continue;
        n_drafts++;
        int64_t cover = 0;
        size_t est = J->prof.n >= 0 ? estimate_peak(J, &d.d, &cover) : J->pk.peak;
        size_t gain = est < J->pk.peak ? J->pk.peak - est : 0;
        /* lower sum of peaks first; then more of the plateau; then larger */
        double sc = (double)cover * (double)bb, bsc = (double)best_cover * (double)best_bytes;
        if (best_j < 0 || gain > best_gain ||
            (gain == best_gain && (sc > bsc || (sc == bsc && bb > best_bytes)))) {
            best = d;
            best_j = bj;
            best_gain = gain;
            best_bytes = bb;
            best_cover = cover;
        }
    }
    if (best_j < 0) return -1;
    tsl__pjob *J = &K->jobs[best_j];
    int32_t t = best.d.tensor;
    int had = J->swapped[t];
    size_t before = J->pk.peak;
    int32_t n_ev = J->plan->n_events;
    if (best.has_across) { /* first what makes the drop clean */
        if (!tsl__commit_swap(K, J, &best.across)) return -1;
        T->tj[best_j].gap_done[best.across.gap] = 1;
    }
    if (!tsl__commit_swap(K, J, &best.d)) {
        if (best.has_across) pop_since(K, J, n_ev);
        return -1;
    }
    T->tj[best_j].gap_done[best.d.gap] = 1;
    tsl__pjob_analyse(J);
    if (J->pk.peak > before) { /* never expected: undo, and give the gap up */
        pop_since(K, J, n_ev);
        tsl__pjob_analyse(J);
        return swap_step(T, skip);
    }
    if (!had && J->swapped[t]) T->total_swapped++;
    return best_j;
}

/* Frees TENSILE's per-job state and the kit (not the plans). */
static void tensile_free(tsl__tensile *T) {
    for (int j = 0; T->tj && j < T->K.n_jobs; j++) {
        tsl__tjob *X = &T->tj[j];
        free(X->gap_done);
        free(X->gap_fail_out);
        free(X->gap_fail_in);
        free(X->mpt);
    }
    free(T->tj);
    free(T->pos);
    tsl__kit_free(&T->K);
}

/* The kit over the request's jobs and TENSILE's state of each, with
 * options o (the request's, or a variant of them). TSL_ERR_OOM
 * (T is then freed). */
static tsl_status tensile_init(tsl__tensile *T, const tsl_plan_request *rq,
                               const tsl_tensile_opts *o, tsl_plan **plans) {
    memset(T, 0, sizeof *T);
    T->opts = o;
    tsl_status st = tsl__kit_init(&T->K, rq, plans);
    if (st != TSL_OK) return st;
    T->tj = calloc((size_t)rq->n_jobs, sizeof *T->tj);
    T->pos = malloc((size_t)rq->n_jobs * sizeof *T->pos);
    int ok = T->tj && T->pos;
    for (int j = 0; ok && j < rq->n_jobs; j++) {
        const tsl__pjob *J = &T->K.jobs[j];
        tsl__tjob *X = &T->tj[j];
        size_t nt = (size_t)J->w->n_tensors + 1, na = (size_t)J->act.acc_off[J->w->n_tensors] + 1;
        X->gap_done = calloc(na, 1);
        X->gap_fail_out = malloc(na * sizeof *X->gap_fail_out);
        X->gap_fail_in = malloc(na * sizeof *X->gap_fail_in);
        X->mpt = malloc(nt * sizeof *X->mpt);
        X->min_swap = min_swap_bytes(T->opts->min_swap_bytes, J); /* J->pk: its vanilla peak */
        X->min_wrap = min_swap_bytes(-1.0, J);
        ok = X->gap_done && X->gap_fail_out && X->gap_fail_in && X->mpt;
        for (size_t k = 0; ok && k < na; k++) {
            X->gap_fail_out[k] = -INFINITY;
            X->gap_fail_in[k] = INFINITY;
        }
    }
    if (!ok) {
        tensile_free(T);
        return tsl_fail(TSL_ERR_OOM, "tensile: out of host memory for %d jobs", rq->n_jobs);
    }
    return TSL_OK;
}

/* The history of the paper's 0.05 % rule: for the last 4 iterations, the
 * jobs each touched and every job's peak before it (ring buffers indexed
 * by iteration & 3). */
typedef struct history {
    uint8_t *touched;  /* [4][n_jobs] */
    size_t *peak;      /* [4][n_jobs] */
} history;

/* 1 if more than 100 iterations are done and the average peak of the jobs
 * touched in the last 3 iterations fell by less than 0.05 % over them. */
static int converged(const tsl__tensile *T, const history *h, int it) {
    if (it <= 100) return 0;
    int n = T->K.n_jobs, any = 0;
    double then = 0, nowp = 0;
    for (int j = 0; j < n; j++)
        if (h->touched[((it - 1) & 3) * n + j] | h->touched[((it - 2) & 3) * n + j] |
            h->touched[((it - 3) & 3) * n + j]) {
            any = 1;
            then += (double)h->peak[((it - 3) & 3) * n + j];
            nowp += (double)T->K.jobs[j].pk.peak;
        }
    return any && then - nowp < 0.0005 * then;
}

/* Algorithm 3's loop over the jobs of T: its recomputations stop once the
 * jobs' peaks fit `budget` (the paper); with stop_at > 0 its swaps stop
 * there too (planning to a named budget, stop_at = budget: every
 * iteration's swaps take the largest tensors off the peaks, so the plan
 * that fits first is the one with the fewest copies Algorithm 3 finds).
 * Sets *spared when it stopped there with swaps left. Returns the
 * iterations done. */
static int algorithm3(tsl__tensile *T, size_t budget, size_t stop_at, history *h, uint8_t *done,
                      int *spared) {
    const tsl_tensile_opts *o = T->opts;
    int n = T->K.n_jobs, swap_ok = 1, rc_ok = o->recompute != 0, it = 0;
    while ((swap_ok || rc_ok) && it < o->max_iterations) {
        if (converged(T, h, it)) break;
        if (stop_at && tsl__kit_peaks(&T->K) <= stop_at) {
            *spared = swap_ok; /* swaps were left */
            break;
        }
        for (int j = 0; j < n; j++) h->peak[(it & 3) * n + j] = T->K.jobs[j].pk.peak;
        for (int j = 0; j < n; j++) done[j] = 0;
        int any = 0;
        if (swap_ok) {
            /* Algorithm 2 once: at most one swap per job, largest first
             * across the jobs */
            for (;;) {
                int j = swap_step(T, done);
                if (j < 0) break;
                done[j] = 1;
                any = 1;
            }
            if (!any) swap_ok = 0;
        } else {
            size_t sum = 0;
            for (int j = 0; j < n; j++) sum += T->K.jobs[j].pk.peak;
            if (sum <= budget) break;
            int j = tsl__try_recompute(T);
            if (j < 0) rc_ok = 0;
            else {
                done[j] = 1;
                swap_ok = 1;
            }
        }
        for (int j = 0; j < n; j++) h->touched[(it & 3) * n + j] = done[j];
        it++;
        if (T->K.status != TSL_OK) break;
    }
    return it;
}

/* The policy's refinement (tsl_policy_refine_fn): prefetching. */
static tsl_status refine_tensile(const tsl_plan_request *rq, tsl_plan **plans) {
    const tsl_tensile_opts *o = rq->opts;
    if (!o->prefetch) return TSL_OK;
    return tsl__prefetch(rq, plans, NULL);
}

/* What one planning left: the jobs' summed peaks and planned periods, and
 * whether Algorithm 3 alone left them above the budget (the budget mode
 * went on). */
typedef struct outcome {
    size_t peaks;
    double period;
    int fitted;
    int spared; /* Algorithm 3 stopped at the budget with swaps left */
} outcome;

/* One planning of the request into plans with options o the way wy says
 * (wy->every is the caller's: o has it): Algorithm 3, then to the budget;
 * its outcome into *r. */
static tsl_status plan_once(const tsl_plan_request *rq, const tsl_tensile_opts *o,
                            tsl_plan **plans, int *iterations, const tsl__way *wy,
                            outcome *r) {
    tsl__tensile T;
    tsl_status st = tensile_init(&T, rq, o, plans);
    if (st != TSL_OK) return st;
    T.way = *wy;
    size_t n = (size_t)rq->n_jobs;
    history h = {calloc(4 * n, 1), calloc(4 * n, sizeof *h.peak)};
    uint8_t *done = calloc(n, 1);
    if (!h.touched || !h.peak || !done)
        st = tsl_fail(TSL_ERR_OOM, "tensile: out of host memory for %d jobs", rq->n_jobs);
    if (st == TSL_OK) {
        /* planning to a named budget: no more of the paper's swaps than it needs */
        size_t stop_at = o->fit && rq->just_enough ? rq->budget : 0;
        *iterations = algorithm3(&T, rq->budget, stop_at, &h, done, &r->spared);
        r->fitted = T.K.status == TSL_OK && tsl__kit_peaks(&T.K) > rq->budget;
        if (T.K.status == TSL_OK) *iterations += tsl__tensile_fit(&T, rq->budget);
        st = T.K.status;
        r->peaks = tsl__kit_peaks(&T.K);
        r->period = 0.0;
        for (int j = 0; j < T.K.n_jobs; j++) r->period += T.K.jobs[j].tl.period;
    }
    free(h.touched);
    free(h.peak);
    free(done);
    tensile_free(&T);
    return st;
}

/* 1 if outcome b is better than a at `budget`: it meets the budget where
 * a does not, or both meet it and b takes less time, or neither does and
 * b leaves lower peaks. */
static int better(const outcome *b, const outcome *a, size_t budget) {
    int mb = b->peaks <= budget, ma = a->peaks <= budget;
    if (mb != ma) return mb;
    return mb ? b->period < a->period : b->peaks < a->peaks;
}

/* Tells the planner what the plans of outcome r are:
 * - its least memory (tsl_plan_request.least_memory) when they leave the
 *   jobs above the budget: nothing Algorithm 3, the budget mode or the
 *   choice among the ways does depends on the budget but the tests of
 *   whether it is met, and the plan never passed below it, so a lower
 *   budget takes the same steps, down to the jobs' floors (below them the
 *   budget mode does not run, and no plan's load can reach the budget);
 * - spared (tsl_plan_request.spared) when Algorithm 3 stopped at a named
 *   budget with swaps left. */
static void tell(const tsl_plan_request *rq, const outcome *r) {
    if (rq->least_memory && r->peaks > rq->budget) *rq->least_memory = 1;
    if (rq->spared && r->spared) *rq->spared = 1;
}

/* Plans the request the way wy says (o, or `every` where wy->every) into
 * fresh plans, its outcome into *r, adding its iterations; they replace
 * plans[] and *best where better (with keep_ties, also on peaks no higher
 * than best's, for a way that comes before the others in their order; a
 * way with waits for swap-outs only where it meets the budget). */
static tsl_status try_way(const tsl_plan_request *rq, const tsl_tensile_opts *o,
                          const tsl_tensile_opts *every, const tsl__way *wy, int keep_ties,
                          tsl_plan **plans, outcome *best, outcome *r, int *iterations) {
    int n = rq->n_jobs;
    tsl_plan **alt = calloc((size_t)n, sizeof *alt);
    int ok = alt != NULL;
    for (int j = 0; ok && j < n; j++) ok = (alt[j] = tsl_plan_new(rq->w[j]->job)) != NULL;
    *r = (outcome){0, 0.0, 0, 0};
    int it = 0;
    tsl_status st = ok ? plan_once(rq, wy->every ? every : o, alt, &it, wy, r)
                       : tsl_fail(TSL_ERR_OOM, "tensile: out of host memory for %d jobs", n);
    *iterations += it;
    /* the last resort (waits for swap-outs) is kept only where it meets the
     * budget: missed, its lower load costs far more time */
    int take = st == TSL_OK && (!wy->out_waits || r->peaks <= rq->budget) &&
               (better(r, best, rq->budget) || (keep_ties && r->peaks <= best->peaks));
    for (int j = 0; alt && j < n; j++) {
        if (take) {
            tsl_plan *p = plans[j];
            plans[j] = alt[j];
            alt[j] = p;
        }
        tsl_plan_free(alt[j]);
    }
    free(alt);
    if (take) *best = *r;
    return st;
}

/* The policy's plan function (tsl_policy_plan_fn). Where Algorithm 3
 * leaves the jobs above the budget, the budget mode's greedy choice
 * depends on where it starts and on what it may do - recomputing batch
 * norm's output from a convolution's keeps that output resident, which a
 * cheaper plan would have swapped; Algorithm 3's smallest swap
 * (min-swap-bytes) decides what the greedy finds done; the across-iteration
 * swaps that clean drops bring along fill the device-to-host channel of
 * the backward pass, which other swaps may want - so it plans the request
 * three more ways (clean drops, with batch norm's outputs recomputed; no
 * clean drops, batch norm's outputs recomputed or not, every swap size)
 * and keeps the plan that meets the budget with the least time (none
 * meeting it: the lowest peaks; ties: the first). Where none of the four
 * meets it, five wider ways follow: two offer also the persistent
 * tensors whose wrap gap holds a peak (tsl__drafter.across: their swaps
 * cross the iteration's boundary; Algorithm 3's smallest swap, or every
 * size), the third lets a swap-in that lands by the peak become a
 * recomputation (tsl__drafter.convert), the fourth does both, and the
 * fifth, the last resort, lets the op at a peak also wait for a swap-out
 * that does not end by it (tsl__drafter.out_waits: a planned wait,
 * costly - at full copy time per byte - but where nothing else is left it
 * meets a budget the others miss; kept only where it meets it). Offered
 * everywhere, they made some plans that met the budget slower (the swaps
 * across the boundary take the device-to-host channel of the backward pass that other swaps
 * want; the greedy's path changes); offered only where nothing else meets
 * it (up to the first wider way that meets it), no plan that met it
 * changes. A way that missed a higher budget of the same planning (the
 * footprint rounds, tsl_plan_request.missed) is not planned again: it
 * would plan the same. The first way then is planned last, and only where
 * no other way meets the budget (kept where its peaks are the lowest, the
 * first on ties: what planning it first would have kept). Planning is
 * deterministic, each way too. */
static tsl_status plan_tensile(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    const tsl_tensile_opts *o = rq->opts;
    static const tsl__way FIRST = {0, 0, 0, 0, 0, 0};
    static const tsl__way WAYS[] = {{0, 0, 1, 0, 0, 0}, {0, 1, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0}};
    static const tsl__way WIDER[] = {{0, 0, 0, 1, 0, 0}, {0, 1, 0, 1, 0, 0}, {0, 0, 0, 0, 1, 0},
                                     {0, 0, 0, 1, 1, 0}, {0, 0, 0, 1, 1, 1}};
    const size_t n_ways = sizeof WAYS / sizeof *WAYS, n_wider = sizeof WIDER / sizeof *WIDER;
    /* the memo's bits (tsl_plan_request.missed): the first way's, then the
     * others' in order */
    const uint32_t first_bit = 1u << (n_ways + n_wider);
    outcome best = {SIZE_MAX, 0.0, 0, 0};
    tsl_status st = TSL_OK;
    /* the first way missed a higher budget of this planning (and the other
     * ways ran then): it plans the same now, and is planned last, only if
     * no way meets the budget (it would be kept where its peaks are the
     * lowest, the first on ties) */
    int first_later = rq->missed && (*rq->missed & first_bit);
    *iterations = 0;
    if (!first_later) {
        st = plan_once(rq, o, plans, iterations, &FIRST, &best);
        if (st != TSL_OK || !o->fit || !o->recompute || !rq->budget || !best.fitted) {
            if (st == TSL_OK) tell(rq, &best);
            return st;
        }
        if (rq->missed && best.peaks > rq->budget) *rq->missed |= first_bit;
    }
    tsl_tensile_opts every = *o;
    every.min_swap_bytes = 0;
    outcome r;
    size_t target = rq->footprint_budget ? rq->footprint_budget : rq->budget;
    for (size_t w = 0; w < n_ways + n_wider && st == TSL_OK; w++) {
        /* the wider ways only where every way before leaves the budget
         * unmet, up to the first that meets it; the last resort only where
         * no plan so far has a load within the footprint budget the rounds
         * aim at (one that has may fit it once laid out: the rounds decide,
         * and the last resort's plan, met at this round's lower budget,
         * would displace it at far more time) */
        if (w >= n_ways && best.peaks <= rq->budget) break;
        if (w >= n_ways && WIDER[w - n_ways].out_waits && best.peaks <= target) break;
        /* a way that missed a higher budget of this planning plans the same now */
        if (rq->missed && (*rq->missed >> w & 1u)) continue;
        const tsl__way *wy = w < n_ways ? &WAYS[w] : &WIDER[w - n_ways];
        st = try_way(rq, o, &every, wy, 0, plans, &best, &r, iterations);
        if (st == TSL_OK && rq->missed && r.peaks > rq->budget) *rq->missed |= 1u << w;
    }
    /* the first way, put off: kept on equal peaks (it comes first) */
    if (st == TSL_OK && first_later && best.peaks > rq->budget)
        st = try_way(rq, o, &every, &FIRST, 1, plans, &best, &r, iterations);
    if (st == TSL_OK) tell(rq, &best);
    return st;
}
