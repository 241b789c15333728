/*
 * policy_autoswap.c - the "autoswap" policy: AutoSwap (Zhang et al.,
 * "SmartPool + AutoSwap", section IV), built on the planner kit; its
 * options are tsl_autoswap_opts (tensile/policy_autoswap.h).
 *
 * The paper: candidates (IV-A) are ranked by a priority score (IV-B), or by
 * BO = a AOA + b DOA + c WDOA + d SWDOA on the standardised scores with the
 * weights a..d in [-1, 1] tuned by Bayesian optimisation against the
 * measured communication overhead (IV-C); the candidates are taken in
 * descending order of the score, the memory load updated as each is added,
 * until the peak load is at most the user's memory load limit (IV-D); the
 * swap-outs are scheduled in ascending order of their access times, each
 * right after its access completes, the swap-ins by the next access times,
 * each in advance so that its access is not delayed, and no swap starts
 * before the previous one of its direction completed (IV-E); a copy that
 * cannot keep up delays compute (the overhead the BO minimises).
 *
 * Here (autoswap_scores.c for the candidates and the scores):
 *  - the memory load limit is the request's budget (for several jobs, the
 *    sum of their peaks, as TENSILE's); when the jobs' vanilla peaks fit it
 *    (the budget is the device's memory, no pressure), AutoSwap's own rule
 *    selects nothing: the plans stay empty;
 *  - selection (IV-D) takes candidates in descending score order while
 *    updating each job's load as the paper's LOAD' does - a candidate's
 *    size off every op run inside its absence interval - and stops when the
 *    sum of the updated peaks is within the limit. The selection is then
 *    scheduled (IV-E, below) and the peak taken from the shared accounting
 *    (tsl__pjob_analyse: the real load, swap-ins allocated from their
 *    start, releases waiting for their copies); if it is still above the
 *    limit, more candidates of the same order are taken (the count doubled,
 *    then bisected: the fewest that meet it), or all of them;
 *  - the schedule (IV-E) is the kit's list placement (swap_list.c): the
 *    swap-outs in ascending order of their access's end, each as soon as
 *    the access ended and the device-to-host channel is free (one copy at a
 *    time per direction, the paper's two streams); the swap-ins in
 *    descending order of their next access, each as late as the
 *    host-to-device channel allows landing by that access (so a busy
 *    channel pushes the earlier ones earlier: "in advance"); a swap-in that
 *    cannot land in time starts as early as it can and its access waits for
 *    it - a planned wait, included in the predicted period (the paper's
 *    compute delayed by a copy);
 *  - BO (IV-C): a Gaussian process with a Matern 5/2 kernel and expected
 *    improvement (bayes_opt.c) over [-1, 1]^4, minimising the predicted
 *    overhead, sum of the planned periods / sum of the vanilla periods - 1
 *    (the plans' predicted_period_us from the shared accounting, planned
 *    waits included; the sched layer does not call the simulator), plus
 *    100 times the relative excess of the peaks over the limit where a
 *    weighting cannot meet it. The first weightings are the four single
 *    scores (so BO is never worse than the best of them, as the paper
 *    observes) and 4 random ones ("randomly initialised"), then EI's
 *    choices, opts->evaluations in all; orders seen before are not
 *    scheduled again. The plan kept is the best weighting's: the limit met
 *    first, then the lowest overhead, then the lowest peak, then the
 *    earliest.
 * Departures from the paper, and why:
 *  - the paper's runtime delays a malloc during the forward pass until
 *    swap-outs have freed enough memory, and a swap-in in the backward pass
 *    until memory is free, to hold the limit at all times (its LOAD''); the
 *    semantics have no wait for a swap-out and no waits for memory
 *    (docs/SCHEDULING.md), so instead more candidates are selected until
 *    the predicted peak itself meets the limit, and the only stalls are
 *    swap-ins landing late;
 *  - below the paper's load_min (all candidates selected and the limit
 *    still not met) the paper swaps non-candidates too, several times each;
 *    here the plan with every candidate is returned and the limit reported
 *    unmet (TSL_ERR_BUDGET through tsl_plan_jobs);
 *  - every copy ends within its iteration (the paper's runtime, measured,
 *    needs not): a swap whose copies do not fit is left out, as is one
 *    whose swap-in would start after its access would start (compute can
 *    wait only for a copy under way);
 *  - the overhead the BO minimises is predicted, not measured over ~30
 *    training iterations, and a weighting is evaluated once (planning is
 *    deterministic).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sched/autoswap_internal.h"
#include "sched/bayes_opt.h"

/* ---- the policy's options ------------------------------------------------------------ */

static const tsl_policy_option OPTIONS[] = {
    {"size-threshold", "bytes: smaller tensors are not candidates (the paper: 1 MB)",
     TSL_OPT_DOUBLE, 0.0, 1152921504606846976.0, 1048576.0,
     offsetof(tsl_autoswap_opts, size_threshold)},
    {"score", "the priority score: 0 BO (the four combined, weights by Bayesian optimisation), "
              "1 AOA, 2 DOA, 3 WDOA, 4 SWDOA",
     TSL_OPT_INT, 0, 4, 0, offsetof(tsl_autoswap_opts, score)},
    {"evaluations", "BO: weightings evaluated (the four single scores and 4 random ones first)",
     TSL_OPT_INT, 1, 1000, 30, offsetof(tsl_autoswap_opts, evaluations)},
    {"seed", "BO: seed of the random weightings and of the search", TSL_OPT_INT, 0, 2147483647, 1,
     offsetof(tsl_autoswap_opts, seed)},
};

static tsl_status plan_autoswap(const tsl_plan_request *rq, tsl_plan **plans, int *iterations);

const tsl_policy tsl__policy_autoswap = {
    "autoswap",
    "AutoSwap (Zhang et al.): swap candidates across the peak, ranked by priority scores "
    "weighted by Bayesian optimisation, until the budget",
    sizeof(tsl_autoswap_opts),
    OPTIONS,
    (int)(sizeof OPTIONS / sizeof OPTIONS[0]),
    plan_autoswap,
    NULL,
};

tsl_autoswap_opts tsl_autoswap_opts_default(void) {
    tsl_autoswap_opts o;
    tsl_policy_defaults(&tsl__policy_autoswap, &o);
    return o;
}

/* ---- selection and schedule ------------------------------------------------------------ */

/* What one selection scheduled gives. */
typedef struct outcome {
    int met;               /* the jobs' peaks sum to at most the limit */
    double overhead;       /* sum of periods / sum of vanilla periods - 1 */
    size_t peak;           /* the sum of the jobs' peaks */
    int k;                 /* candidates selected (a prefix of the order) */
} outcome;

typedef struct seen_sel {
    uint64_t key;
    outcome o;
} seen_sel;

typedef struct as_state {
    tsl__kit K;
    size_t limit;
    tsl__as_load *L;       /* per job */
    tsl__as_cand *c;
    int n;
    double vanilla_period; /* the jobs' vanilla periods summed */
    double *comb;          /* per candidate: the combined score */
    int32_t *order;        /* the candidates by descending score */
    size_t *ideal;         /* per job, its check points (1 + n_ops): the load LOAD' */
    size_t *ideal_off;     /* per job: its first check point in ideal */
    tsl__swap_req *req;
    /* the selections scheduled (keyed by set), the weightings evaluated */
    seen_sel *seen;
    int n_seen, cap_seen;
    int n_eval;
    int32_t *orders;       /* n_eval * n */
    outcome *out;          /* n_eval */
} as_state;

/* order <- the candidates by descending w . z (ties: candidate order). */
static void order_by(as_state *S, const double *w) {
    for (int i = 0; i < S->n; i++) {
        double v = 0;
        for (int k = 0; k < TSL__AS_N_SCORES; k++) v += w[k] * S->c[i].z[k];
        S->comb[i] = v;
        S->order[i] = i;
    }
    for (int i = 1; i < S->n; i++) { /* insertion sort: stable; n is at most a few thousand */
        int32_t x = S->order[i];
        int k = i;
        while (k > 0 && S->comb[S->order[k - 1]] < S->comb[x]) {
            S->order[k] = S->order[k - 1];
            k--;
        }
        S->order[k] = x;
    }
}

/* The peak of job j's updated load. */
static size_t ideal_peak(const as_state *S, int j) {
    size_t m = 0, *v = S->ideal + S->ideal_off[j];
    for (int32_t i = 0; i <= S->L[j].n_ops; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* IV-D: how many candidates of the order bring the updated load (LOAD')
 * within the limit (n if all do not). */
static int ideal_count(as_state *S) {
    size_t sum = 0, *peak = S->ideal + S->ideal_off[S->K.n_jobs]; /* scratch: n_jobs */
    for (int j = 0; j < S->K.n_jobs; j++) {
        size_t *v = S->ideal + S->ideal_off[j];
        v[0] = S->L[j].load0;
        memcpy(v + 1, S->L[j].load, (size_t)S->L[j].n_ops * sizeof *v);
        peak[j] = ideal_peak(S, j);
        sum += peak[j];
    }
    for (int k = 0; k < S->n; k++) {
        if (sum <= S->limit) return k;
        const tsl__as_cand *c = &S->c[S->order[k]];
        const tsl__as_load *L = &S->L[c->job];
        size_t *v = S->ideal + S->ideal_off[c->job];
        for (int a = 0; a < c->n_abs; a++) {
            double lo = c->abs_lo[a], hi = c->abs_hi[a];
            if (lo <= 0 && 0 < hi) v[0] -= c->bytes; /* the data load, at time 0 */
            for (int32_t i = 0; i < L->n_ops && L->s[i] <= hi; i++)
                if (L->s[i] >= lo && L->e[i] <= hi && L->s[i] < hi) v[1 + i] -= c->bytes;
        }
        sum -= peak[c->job];
        peak[c->job] = ideal_peak(S, c->job);
        sum += peak[c->job];
    }
    return S->n;
}

/* IV-E: the first k candidates of the order scheduled into the kit's
 * plans (reset first), and what that gives. */
static outcome schedule(as_state *S, int k) {
    outcome o = {.k = k};
    if (tsl__kit_reset(&S->K) != TSL_OK) return o;
    for (int i = 0; i < k; i++) {
        const tsl__as_cand *c = &S->c[S->order[i]];
        const tsl__timeline *tl = &S->K.jobs[c->job].tl;
        int wrap = c->after <= c->before;
        S->req[i] = (tsl__swap_req){
            .job = c->job,
            .tensor = c->tensor,
            .out_after = c->before,
            .last = c->before,
            .precede = c->after,
            .in_after = wrap ? -1 : c->before,
            .in_early = 0,
            .out_key = tl->e[c->before],
            .in_key = -tl->s[c->after],
        };
    }
    tsl__place_swaps(&S->K, S->req, k);
    double period = 0;
    for (int j = 0; j < S->K.n_jobs; j++) {
        tsl__pjob *J = &S->K.jobs[j];
        tsl__pjob_analyse(J);
        o.peak += J->pk.peak;
        period += J->tl.period;
    }
    o.met = o.peak <= S->limit;
    o.overhead = period / S->vanilla_period - 1.0;
    return o;
}

/* A selection's key: the sum of its candidates' hashes (a set: the
 * schedule does not depend on the order they were selected in). */
static uint64_t cand_hash(int32_t c) {
    uint64_t z = (uint64_t)c * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The outcome of the first k candidates of the order: from the cache of
 * selections scheduled before (keyed by set), or scheduled now. */
static outcome probe(as_state *S, int k) {
    uint64_t key = 0;
    for (int i = 0; i < k; i++) key += cand_hash(S->order[i]);
    for (int i = 0; i < S->n_seen; i++)
        if (S->seen[i].key == key && S->seen[i].o.k == k) return S->seen[i].o;
    outcome o = schedule(S, k);
    if (S->n_seen == S->cap_seen) {
        int cap = S->cap_seen ? 2 * S->cap_seen : 64;
        seen_sel *v = realloc(S->seen, (size_t)cap * sizeof *v);
        if (!v) return o; /* out of host memory: this one is not cached, that is all */
        S->seen = v;
        S->cap_seen = cap;
    }
    S->seen[S->n_seen++] = (seen_sel){key, o};
    return o;
}

/* IV-D for the current order: the candidates LOAD' takes, then as many
 * more as the real peak needs (doubling, then bisecting: the fewest found
 * that meet the limit), or all. */
static outcome select_count(as_state *S) {
    int k0 = ideal_count(S);
    outcome o = probe(S, k0);
    if (o.met || k0 >= S->n || S->K.status != TSL_OK) return o;
    int fail = k0, step = 1, k = k0;
    for (;;) {
        k = k0 + step < S->n ? k0 + step : S->n;
        o = probe(S, k);
        if (o.met || k == S->n || S->K.status != TSL_OK) break;
        fail = k;
        step *= 2;
    }
    if (!o.met) return o;
    while (k - fail > 1 && S->K.status == TSL_OK) {
        int mid = fail + (k - fail) / 2;
        outcome m = probe(S, mid);
        if (m.met) {
            k = mid;
            o = m;
        } else
            fail = mid;
    }
    return o;
}

/* 1 if outcome a is better than b: the limit met, then lower overhead,
 * then lower peak. */
static int better(const outcome *a, const outcome *b) {
    if (a->met != b->met) return a->met;
    if (a->overhead != b->overhead) return a->overhead < b->overhead;
    return a->peak < b->peak;
}

/* Evaluates weighting w (recorded as evaluation S->n_eval): an order seen
 * before takes that order's outcome. */
static outcome evaluate(as_state *S, const double *w) {
    order_by(S, w);
    int e = S->n_eval++;
    int32_t *mine = S->orders + (size_t)e * S->n;
    memcpy(mine, S->order, (size_t)S->n * sizeof *mine);
    for (int p = 0; p < e; p++)
        if (!memcmp(S->orders + (size_t)p * S->n, mine, (size_t)S->n * sizeof *mine))
            return S->out[e] = S->out[p];
    return S->out[e] = select_count(S);
}

/* The BO objective (tsl__bo_objective). */
static double objective(void *ctx, const double *w) {
    as_state *S = ctx;
    outcome o = evaluate(S, w);
    double excess = o.met ? 0.0 : ((double)o.peak - (double)S->limit) / (double)S->limit;
    return o.overhead + 100.0 * excess;
}

/* ---- the policy ------------------------------------------------------------------------- */

static void state_free(as_state *S) {
    for (int j = 0; S->L && j < S->K.n_jobs; j++) tsl__as_load_free(&S->L[j]);
    free(S->L);
    free(S->c);
    free(S->comb);
    free(S->order);
    free(S->ideal);
    free(S->ideal_off);
    free(S->req);
    free(S->orders);
    free(S->out);
    free(S->seen);
    tsl__kit_free(&S->K);
}

/* The kit, the loads and the candidates; room for `evals` evaluations.
 * Returns TSL_OK (S->n may be 0) or TSL_ERR_OOM (S freed). */
static tsl_status state_init(as_state *S, const tsl_plan_request *rq, tsl_plan **plans,
                             const tsl_autoswap_opts *o, int evals) {
    memset(S, 0, sizeof *S);
    S->limit = rq->budget;
    tsl_status st = tsl__kit_init(&S->K, rq, plans);
    if (st != TSL_OK) return st;
    int nj = rq->n_jobs;
    S->L = calloc((size_t)nj, sizeof *S->L);
    S->ideal_off = malloc(((size_t)nj + 1) * sizeof *S->ideal_off);
    if (!S->L || !S->ideal_off) st = TSL_ERR_OOM;
    size_t points = 0;
    for (int j = 0; st == TSL_OK && j < nj; j++) {
        st = tsl__as_load_build(&S->K.jobs[j], &S->L[j]);
        S->ideal_off[j] = points;
        points += (size_t)S->L[j].n_ops + 1;
        S->vanilla_period += S->K.jobs[j].tl.period;
    }
    if (st == TSL_OK) {
        S->ideal_off[nj] = points;
        st = tsl__as_candidates(&S->K, S->L, (size_t)o->size_threshold, &S->c, &S->n);
    }
    if (st == TSL_OK) {
        size_t n = (size_t)S->n + 1;
        S->comb = malloc(n * sizeof *S->comb);
        S->order = malloc(n * sizeof *S->order);
        S->ideal = malloc((points + (size_t)nj) * sizeof *S->ideal);
        S->req = malloc(n * sizeof *S->req);
        S->orders = malloc(n * (size_t)evals * sizeof *S->orders);
        S->out = malloc((size_t)evals * sizeof *S->out);
        if (!S->comb || !S->order || !S->ideal || !S->req || !S->orders || !S->out)
            st = TSL_ERR_OOM;
    }
    if (st != TSL_OK) {
        state_free(S);
        return st == TSL_ERR_OOM ? tsl_fail(st, "autoswap: out of host memory for %d jobs", nj)
                                 : st;
    }
    return TSL_OK;
}

/* The weights of the best weighting among the BO's evaluations. */
static tsl_status bo_search(as_state *S, const tsl_autoswap_opts *o, double *w, int *evals) {
    double lo[4] = {-1, -1, -1, -1}, hi[4] = {1, 1, 1, 1};
    double given[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    tsl__bo_opts bo = tsl__bo_opts_default(4, lo, hi);
    bo.given = given;
    bo.n_given = 4;
    bo.n_random = 4;
    bo.evaluations = o->evaluations;
    bo.seed = (uint64_t)o->seed;
    tsl__bo_result r;
    tsl_status st = tsl__bo_minimize(&bo, objective, S, &r);
    if (st != TSL_OK) return st;
    if (S->K.status != TSL_OK) {
        tsl__bo_result_free(&r);
        return S->K.status;
    }
    int best = 0;
    for (int e = 1; e < S->n_eval; e++)
        if (better(&S->out[e], &S->out[best])) best = e;
    memcpy(w, r.x + (size_t)best * 4, 4 * sizeof *w);
    *evals = r.n;
    tsl__bo_result_free(&r);
    return TSL_OK;
}

/* The policy's plan function (tsl_policy_plan_fn). */
static tsl_status plan_autoswap(const tsl_plan_request *rq, tsl_plan **plans, int *iterations) {
    const tsl_autoswap_opts *o = rq->opts;
    int evals = o->score == TSL_AUTOSWAP_BO ? o->evaluations : 1;
    as_state S;
    tsl_status st = state_init(&S, rq, plans, o, evals);
    if (st != TSL_OK) return st;
    size_t vanilla = 0;
    for (int j = 0; j < S.K.n_jobs; j++) vanilla += S.K.jobs[j].pk.peak;
    /* within the limit already (no pressure): AutoSwap selects nothing */
    if (vanilla > S.limit && S.n > 0) {
        double w[4] = {0, 0, 0, 0};
        if (o->score == TSL_AUTOSWAP_BO)
            st = bo_search(&S, o, w, iterations);
        else
            w[o->score - 1] = 1.0;
        if (st == TSL_OK) { /* the chosen weighting, into the plans */
            order_by(&S, w);
            schedule(&S, select_count(&S).k);
            st = S.K.status;
        }
    }
    state_free(&S);
    return st;
}
