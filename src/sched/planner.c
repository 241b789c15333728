/*
 * planner.c - TENSILE's complete scheduling (paper, Algorithm 3) over
 * several jobs sharing one device: activity analysis, then a loop of peak
 * analysis (peak.c), swap scheduling (swap.c, across_iter.c) and, while the
 * jobs do not fit the budget, recomputation (recompute.c).
 *
 * The peak analysis of a job is re-run only after its plan changed. An
 * iteration of the loop is one pass of Algorithm 2: the tensors resident at
 * every job's peak (MPT), largest first (ties: job index, then tensor
 * index), are drafted as swaps (swap.c, across_iter.c) without any compute
 * waiting for a copy; among the first LOOKAHEAD drafts that fit, the one
 * that lowers the sum of the jobs' peaks most is committed; then the same
 * for the jobs not swapped yet in this iteration. Departures from the
 * paper:
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
 *  - every copy ends within its job's iteration, so that an executor that
 *    waits for its iteration's transfers never waits (the paper lets
 *    transfers run over).
 * Termination: neither a swap nor a recomputation succeeded in an
 * iteration; or (the paper's rule) more than 100 iterations were done and
 * the average peak of the jobs touched in the last 3 iterations fell by
 * less than 0.05 %; or opts->max_iterations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/assert.h"
#include "sched/planner_internal.h"

tsl_plan_opts tsl_plan_opts_default(void) {
    tsl_plan_opts o;
    memset(&o, 0, sizeof o);
    o.policy = TSL_POLICY_TENSILE;
    o.budget = 0;
    for (int i = 0; i < 16; i++) o.max_swap_rate[i] = 1.0;
    o.recompute = 1;
    o.max_iterations = 10000;
    o.swap_in_slack = 0.0;
    return o;
}

/* ---- per-job events and memory effects ----------------------------------------- */

static int32_t last_access_op(const tsl__activity *a, int32_t t) {
    return a->acc_off[t + 1] > a->acc_off[t] ? a->acc[a->acc_off[t + 1] - 1].op : -1;
}

/* The across-iteration rule of docs/SCHEDULING.md for one tensor (same as
 * tsl__effects_build): absent at time 0 if released after its last access
 * with no swap-in at or after that release. */
static void update_absent0(tsl__job *J, int32_t t) {
    if (!J->act.persistent[t]) {
        J->absent0[t] = 0;
        return;
    }
    int32_t last = last_access_op(&J->act, t);
    double rel = -INFINITY, si = -INFINITY;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_RELEASE && e->trigger >= last && J->ev_time[k] > rel)
            rel = J->ev_time[k];
        if (e->type == TSL_EV_SWAP_IN && J->ev_time[k] > si) si = J->ev_time[k];
    }
    J->absent0[t] = rel > -INFINITY && si < rel;
}

static tsl_status eff_insert(tsl__job *J, tsl__effect f) {
    if (J->n_eff == J->cap_eff) {
        int32_t cap = J->cap_eff ? 2 * J->cap_eff : 64;
        tsl__effect *e = realloc(J->eff, (size_t)cap * sizeof *e);
        if (!e) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for memory effects");
        J->eff = e;
        J->cap_eff = cap;
    }
    int32_t lo = 0, hi = J->n_eff;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (tsl__effect_cmp(&J->eff[mid], &f) < 0) lo = mid + 1;
        else hi = mid;
    }
    memmove(J->eff + lo + 1, J->eff + lo, (size_t)(J->n_eff - lo) * sizeof *J->eff);
    J->eff[lo] = f;
    J->n_eff++;
    return TSL_OK;
}

static void eff_remove(tsl__job *J, tsl__effect f) {
    int32_t lo = 0, hi = J->n_eff;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (tsl__effect_cmp(&J->eff[mid], &f) < 0) lo = mid + 1;
        else hi = mid;
    }
    TSL_ASSERT(lo < J->n_eff && tsl__effect_cmp(&J->eff[lo], &f) == 0);
    memmove(J->eff + lo, J->eff + lo + 1, (size_t)(J->n_eff - lo - 1) * sizeof *J->eff);
    J->n_eff--;
}

/* Times of event k under the current timeline. */
static void event_times(tsl__job *J, const tsl_device_profile *dev, int32_t k) {
    const tsl_event *e = &J->plan->events[k];
    size_t bytes = J->w->tensors[e->tensor].bytes;
    switch (e->type) {
    case TSL_EV_SWAP_OUT:
    case TSL_EV_SWAP_IN:
        J->ev_time[k] = tsl__issue(&J->tl, e->trigger, e->delay_us);
        J->ev_end[k] = J->ev_time[k] + tsl_copy_us(dev, bytes, e->type == TSL_EV_SWAP_IN);
        break;
    case TSL_EV_RELEASE: /* max(e'_trigger, end of the latest swap-out issued by then) */
        J->ev_time[k] = J->ev_end[k] = tsl__release_time_with(J, e->tensor, e->trigger, -1, 0);
        break;
    case TSL_EV_RECOMPUTE: /* its start once the timeline holds it, else the op's */
        J->ev_time[k] = J->ev_end[k] = J->tl.s[e->precede];
        for (int32_t r = J->tl.rc_off[e->precede]; r < J->tl.rc_off[e->precede + 1]; r++)
            if (J->tl.rc_ev[r] == k) J->ev_time[k] = J->ev_end[k] = J->tl.rc_start[r];
        break;
    }
}

tsl_status tsl__job_add_event(tsl__job *J, const tsl_device_profile *dev, tsl_event e) {
    if (J->plan->n_events == J->cap_ev) {
        int32_t cap = J->cap_ev ? 2 * J->cap_ev : 64;
        double *a = realloc(J->ev_time, (size_t)cap * sizeof *a);
        if (a) J->ev_time = a;
        double *b = a ? realloc(J->ev_end, (size_t)cap * sizeof *b) : NULL;
        if (b) J->ev_end = b;
        int32_t *c = b ? realloc(J->ev_next, (size_t)cap * sizeof *c) : NULL;
        if (c) J->ev_next = c;
        if (!c) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for events");
        J->cap_ev = cap;
    }
    tsl_status st = tsl_plan_add(J->plan, e);
    if (st != TSL_OK) return st;
    int32_t k = J->plan->n_events - 1;
    J->ev_next[k] = J->ev_head[e.tensor];
    J->ev_head[e.tensor] = k;
    event_times(J, dev, k);
    if (e.type == TSL_EV_RELEASE || e.type == TSL_EV_SWAP_IN) {
        st = eff_insert(J, (tsl__effect){J->ev_time[k], e.tensor, e.type == TSL_EV_SWAP_IN});
        if (st != TSL_OK) {
            J->ev_head[e.tensor] = J->ev_next[k];
            J->plan->n_events--;
            return st;
        }
    }
    if (e.type == TSL_EV_SWAP_OUT && !J->swapped[e.tensor]) {
        J->swapped[e.tensor] = 1;
        J->n_swapped++;
    }
    if (e.type == TSL_EV_RECOMPUTE) J->recomputed[e.tensor] = 1;
    update_absent0(J, e.tensor);
    return TSL_OK;
}

void tsl__job_pop_events(tsl__job *J, int n) {
    for (int i = 0; i < n; i++) {
        int32_t k = J->plan->n_events - 1;
        TSL_ASSERT(k >= 0);
        const tsl_event *e = &J->plan->events[k];
        TSL_ASSERT(J->ev_head[e->tensor] == k);
        J->ev_head[e->tensor] = J->ev_next[k];
        if (e->type == TSL_EV_RELEASE || e->type == TSL_EV_SWAP_IN)
            eff_remove(J, (tsl__effect){J->ev_time[k], e->tensor, e->type == TSL_EV_SWAP_IN});
        int32_t t = e->tensor;
        tsl_event_type ty = e->type;
        J->plan->n_events--;
        if (ty == TSL_EV_SWAP_OUT) {
            int still = 0;
            for (int32_t o = J->ev_head[t]; o >= 0; o = J->ev_next[o])
                still |= J->plan->events[o].type == TSL_EV_SWAP_OUT;
            if (!still && J->swapped[t]) {
                J->swapped[t] = 0;
                J->n_swapped--;
            }
        }
        if (ty == TSL_EV_RECOMPUTE) {
            int still = 0;
            for (int32_t o = J->ev_head[t]; o >= 0; o = J->ev_next[o])
                still |= J->plan->events[o].type == TSL_EV_RECOMPUTE;
            J->recomputed[t] = (uint8_t)still;
        }
        update_absent0(J, t);
    }
}

/* Peak of J under its plan: J->pk, and the load profile J->prof (which
 * lacks if out of host memory: prof.n = -1). */
void tsl__job_analyse(tsl__job *J) {
    int64_t need = 2 + (int64_t)J->w->n_ops + J->tl.n_rc + J->n_eff;
    tsl__profile *pf = &J->prof;
    if (pf->cap < need) {
        int64_t cap = need + need / 2;
        double *t = realloc(pf->time, (size_t)cap * sizeof *t);
        if (t) pf->time = t;
        size_t *l = t ? realloc(pf->load, (size_t)cap * sizeof *l) : NULL;
        if (l) {
            pf->load = l;
            pf->cap = cap;
        }
    }
    tsl__sweep_run(J->w, &J->act, &J->tl, J->eff, J->n_eff, J->absent0, J->resident, -1, &J->pk,
                   pf->cap >= need ? pf : NULL);
    if (pf->cap < need) pf->n = -1;
    J->mpt_valid = 0;
}

/* Recomputes every event time of J after its timeline changed, and the
 * effects. TSL_ERR_OOM. */
tsl_status tsl__job_retime(tsl__job *J, const tsl_device_profile *dev) {
    tsl__timeline tl;
    tsl_status st = tsl__timeline_build(J->w, J->plan, &tl);
    if (st != TSL_OK) return st;
    tsl__timeline_free(&J->tl);
    J->tl = tl;
    /* swap-outs first: release times depend on them */
    for (int pass = 0; pass < 2; pass++)
        for (int32_t k = 0; k < J->plan->n_events; k++)
            if ((J->plan->events[k].type == TSL_EV_SWAP_OUT) == (pass == 0)) event_times(J, dev, k);
    J->n_eff = 0;
    for (int32_t k = 0; k < J->plan->n_events; k++) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type != TSL_EV_RELEASE && e->type != TSL_EV_SWAP_IN) continue;
        st = eff_insert(J, (tsl__effect){J->ev_time[k], e->tensor, e->type == TSL_EV_SWAP_IN});
        if (st != TSL_OK) return st;
    }
    for (int32_t t = 0; t < J->w->n_tensors; t++) update_absent0(J, t);
    return TSL_OK;
}

/* Tensor t of J resident at the moment an allocation at time x sees (after
 * the frees at x, before the allocations at x), under J's plan: its base
 * life (persistent: the whole iteration unless absent at time 0;
 * otherwise from its generation to its implicit death), then the latest
 * of its releases at or before x and its swap-ins and recomputations
 * before x decides. */
int tsl__job_resident_at(const tsl__job *J, int32_t t, double x) {
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int res;
    if (a->persistent[t])
        res = !J->absent0[t];
    else {
        int32_t lo = a->acc_off[t], hi = a->acc_off[t + 1];
        if (!a->data[t] && (lo == hi || !a->acc[lo].writes)) return 0;
        double born = a->data[t] ? -1.0 : tl->s[a->acc[lo].op];
        int32_t death = a->data[t] ? -1 : a->acc[lo].op;
        for (int32_t k = lo; k < hi; k++)
            if (a->acc[k].reads && a->acc[k].op > death) death = a->acc[k].op;
        double dies = death < 0 ? 0.0 : tl->e[death];
        if (!(born < x && x < dies)) return 0;
        res = 1;
    }
    double best_t = -INFINITY;
    int best = -1;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        double at = J->ev_time[k];
        int alloc;
        if (e->type == TSL_EV_RELEASE && at <= x)
            alloc = 0;
        else if ((e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE) && at < x)
            alloc = 1;
        else
            continue;
        if (at > best_t || (at == best_t && alloc)) {
            best_t = at;
            best = alloc;
        }
    }
    return best >= 0 ? best : res;
}

/* ---- jobs ------------------------------------------------------------------------- */

/* Frees everything job_init allocated (the plan stays: the caller owns it). */
static void job_free(tsl__job *J) {
    tsl__activity_free(&J->act);
    tsl__timeline_free(&J->tl);
    free(J->ev_time);
    free(J->ev_end);
    free(J->ev_next);
    free(J->ev_head);
    free(J->eff);
    free(J->absent0);
    free(J->resident);
    free(J->mpt);
    free(J->prof.time);
    free(J->prof.load);
    free(J->gap_done);
    free(J->gap_fail_out);
    free(J->gap_fail_in);
    free(J->swapped);
    free(J->recomputed);
}

/* The planner's state of job `index` over workload w (checked by
 * check_workload) with its empty plan, and its vanilla peak analysis in
 * J->pk. TSL_ERR_OOM (J is then partly built: job_free it). */
static tsl_status job_init(tsl__job *J, const tsl_workload *w, int index, tsl_plan *plan) {
    memset(J, 0, sizeof *J);
    J->w = w;
    J->index = index;
    J->plan = plan;
    tsl_status st = tsl__activity_build(w, &J->act);
    if (st != TSL_OK) return st;
    st = tsl__timeline_build(w, plan, &J->tl);
    if (st != TSL_OK) return st;
    size_t nt = (size_t)w->n_tensors + 1, na = (size_t)J->act.acc_off[w->n_tensors] + 1;
    J->ev_head = malloc(nt * sizeof *J->ev_head);
    J->absent0 = calloc(nt, 1);
    J->resident = calloc(nt, 1);
    J->mpt = malloc(nt * sizeof *J->mpt);
    J->gap_done = calloc(na, 1);
    J->gap_fail_out = malloc(na * sizeof *J->gap_fail_out);
    J->gap_fail_in = malloc(na * sizeof *J->gap_fail_in);
    J->swapped = calloc(nt, 1);
    J->recomputed = calloc(nt, 1);
    if (!J->ev_head || !J->absent0 || !J->resident || !J->mpt || !J->gap_done ||
        !J->gap_fail_out || !J->gap_fail_in || !J->swapped || !J->recomputed)
        return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for job '%s'", w->job);
    for (size_t t = 0; t < nt; t++) J->ev_head[t] = -1;
    for (size_t k = 0; k < na; k++) {
        J->gap_fail_out[k] = -INFINITY;
        J->gap_fail_in[k] = INFINITY;
    }
    tsl__job_analyse(J);
    return TSL_OK;
}

/* ---- input checks ------------------------------------------------------------------- */

/* What the planner indexes with: op times, tensor indices, producers.
 * TSL_OK, or TSL_ERR_INVALID naming the workload, the op or tensor and the
 * value. (Full validation is the workload reader's job.) */
static tsl_status check_workload(const tsl_workload *w, int j) {
    if (!w) return tsl_fail(TSL_ERR_INVALID, "planner: workload %d is NULL", j);
    if (w->n_tensors < 0 || w->n_ops < 0 || (w->n_tensors && !w->tensors) || (w->n_ops && !w->ops))
        return tsl_fail(TSL_ERR_INVALID, "planner: workload %d ('%s'): %d tensors, %d ops", j,
                        w->job, w->n_tensors, w->n_ops);
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        if (!(op->end_us >= op->start_us) || !isfinite(op->end_us))
            return tsl_fail(TSL_ERR_INVALID,
                            "planner: workload '%s': op %d ('%s'): times [%g, %g] us", w->job, i,
                            op->name, op->start_us, op->end_us);
        for (int k = 0; k < op->n_in + op->n_out; k++) {
            int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
            if (t < 0 || t >= w->n_tensors)
                return tsl_fail(TSL_ERR_INVALID,
                                "planner: workload '%s': op %d ('%s'): tensor index %d out of "
                                "range (%d tensors)",
                                w->job, i, op->name, t, w->n_tensors);
        }
    }
    for (int32_t t = 0; t < w->n_tensors; t++) {
        int32_t q = w->tensors[t].producer;
        if (q < -1 || q >= w->n_ops)
            return tsl_fail(TSL_ERR_INVALID,
                            "planner: workload '%s': tensor %d ('%s'): producer %d out of range",
                            w->job, t, w->tensors[t].name, q);
    }
    return TSL_OK;
}

/* ---- Algorithm 3 ---------------------------------------------------------------------- */

/* 1 if job J may take one more swapped tensor (t is not yet swapped) under
 * its max swapping rate: (swapped of J + 1) / (swapped of all + 1) <= rate. */
static int rate_allows(const tsl__planner *P, const tsl__job *J, int32_t t) {
    if (J->swapped[t]) return 1;
    double rate = P->opts->max_swap_rate[J->index];
    if (rate >= 1.0) return 1;
    return (double)(J->n_swapped + 1) <= rate * (double)(P->total_swapped + 1) + 1e-12;
}

/* Collects J's swap candidates at its peak, largest first. */
static void collect_mpt(tsl__planner *P, tsl__job *J) {
    if (J->mpt_valid) return;
    const tsl_workload *w = J->w;
    tsl__sweep sw;
    tsl__sweep_run(w, &J->act, &J->tl, J->eff, J->n_eff, J->absent0, J->resident, J->pk.step, &sw,
                   NULL);
    int32_t op = J->pk.op;
    /* the op running at the peak keeps its inputs and outputs; so does a
     * recomputation running there */
    if (op >= 0) {
        const tsl_wl_op *o = &w->ops[op];
        for (int j = 0; j < o->n_in; j++) J->resident[o->in[j]] = 0;
        for (int j = 0; j < o->n_out; j++) J->resident[o->out[j]] = 0;
    }
    if (J->pk.rc >= 0) {
        int32_t t = J->tl.rc_tensor[J->pk.rc];
        const tsl_wl_op *q = &w->ops[w->tensors[t].producer];
        J->resident[t] = 0;
        for (int j = 0; j < q->n_in; j++) J->resident[q->in[j]] = 0;
    }
    int32_t n = 0;
    for (int32_t t = 0; t < w->n_tensors; t++)
        if (J->resident[t] && !J->act.data[t] && !J->recomputed[t] && w->tensors[t].bytes > 0)
            J->mpt[n++] = t;
    if (tsl__sort_by_size(w, J->mpt, n) != TSL_OK) P->status = TSL_ERR_OOM;
    J->n_mpt = n;
    J->mpt_valid = 1;
}

/* An upper bound of J's peak if draft d were added: the load at every
 * check point of the last analysis, less the tensor's bytes where it
 * becomes absent (a check point at the swap-in's own time keeps it), and
 * the load where the swap-in allocates (at most the check point before).
 * *cover gets how many check points within NEAR of the current peak the
 * draft lowers (how much of a plateau around the peak it takes down). */
#define NEAR 0.02
static size_t estimate_peak(const tsl__job *J, const tsl__swap_draft *d, int64_t *cover) {
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

/* Candidates evaluated per iteration (drafts whose estimated peaks are
 * compared before one is committed). */
#define LOOKAHEAD 8

/* One swap over all jobs. Walks the candidates (tensors resident at the
 * jobs' peaks) largest first, drafts a swap for each until LOOKAHEAD
 * drafts fit, and commits the one that lowers the sum of peaks most (by
 * the profile estimate; ties: larger tensor, then candidate order). Jobs
 * in the `skip` mask are left out. Returns the job index swapped in, or
 * -1. */
static int swap_step(tsl__planner *P, unsigned skip) {
    int32_t pos[16] = {0};
    for (int j = 0; j < P->n_jobs; j++) {
        collect_mpt(P, &P->jobs[j]);
        if (skip >> j & 1u) pos[j] = P->jobs[j].n_mpt;
    }
    tsl__swap_draft best;
    int best_j = -1, n_drafts = 0;
    size_t best_gain = 0, best_bytes = 0;
    int64_t best_cover = 0;
    while (n_drafts < LOOKAHEAD && P->status == TSL_OK) {
        int bj = -1;
        size_t bb = 0;
        for (int j = 0; j < P->n_jobs; j++) {
            tsl__job *J = &P->jobs[j];
            while (pos[j] < J->n_mpt && !rate_allows(P, J, J->mpt[pos[j]])) pos[j]++;
            if (pos[j] >= J->n_mpt) continue;
            size_t b = J->w->tensors[J->mpt[pos[j]]].bytes;
            if (bj < 0 || b > bb) {
                bj = j;
                bb = b;
            }
        }
        if (bj < 0) break;
        tsl__job *J = &P->jobs[bj];
        int32_t t = J->mpt[pos[bj]++];
        tsl__swap_draft d;
        if (!tsl__try_swap(P, J, t, &d)) continue;
        n_drafts++;
        int64_t cover = 0;
        size_t est = J->prof.n >= 0 ? estimate_peak(J, &d, &cover) : J->pk.peak;
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
    tsl__job *J = &P->jobs[best_j];
    int32_t t = best.tensor;
    int had = J->swapped[t];
    size_t before = J->pk.peak;
    int32_t n_ev = J->plan->n_events;
    if (!tsl__commit_swap(P, J, &best)) return -1;
    J->gap_done[best.gap] = 1;
    tsl__job_analyse(J);
    if (J->pk.peak > before) { /* never expected: undo, and give the gap up */
        for (int32_t k = J->plan->n_events - 1; k >= n_ev; k--) {
            const tsl_event *e = &J->plan->events[k];
            if (e->type == TSL_EV_SWAP_OUT || e->type == TSL_EV_SWAP_IN)
                tsl__chan_unbook(tsl__chan_of(P, e->type == TSL_EV_SWAP_IN), J->ev_time[k],
                                 J->ev_end[k]);
        }
        tsl__job_pop_events(J, J->plan->n_events - n_ev);
        tsl__job_analyse(J);
        return swap_step(P, skip);
    }
    if (!had && J->swapped[t]) P->total_swapped++;
    return best_j;
}

/* Monotonic wall clock, ms: only for the report's planning time. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Frees the jobs' states and the channels (not the plans). */
static void planner_free(tsl__planner *P) {
    for (int j = 0; j < P->n_jobs; j++) job_free(&P->jobs[j]);
    free(P->jobs);
    tsl__chan_free(&P->d2h);
    tsl__chan_free(&P->h2d);
}

/* See sched.h. Returns TSL_ERR_INVALID for bad arguments (n_jobs outside
 * 1..16, NULL or malformed workloads, no profile), TSL_ERR_OOM; on failure
 * no plan is left allocated. */
tsl_status tsl_plan_jobs(tsl_workload *const *w, int n_jobs, const tsl_device_profile *dev,
                         const tsl_plan_opts *opts, tsl_plan **plans, tsl_plan_report *rep) {
    double t0 = now_ms();
    if (!w || !plans || !dev)
        return tsl_fail(TSL_ERR_INVALID, "planner: workloads, plans or profile is NULL");
    if (n_jobs < 1 || n_jobs > 16)
        return tsl_fail(TSL_ERR_INVALID, "planner: n_jobs %d outside 1..16", n_jobs);
    tsl_plan_opts def = tsl_plan_opts_default();
    if (!opts) opts = &def;
    if (opts->policy != TSL_POLICY_VANILLA && opts->policy != TSL_POLICY_TENSILE)
        return tsl_fail(TSL_ERR_INVALID, "planner: opts.policy %d unknown", (int)opts->policy);
    if (!(opts->swap_in_slack >= 0) || opts->swap_in_slack > 10)
        return tsl_fail(TSL_ERR_INVALID, "planner: opts.swap_in_slack = %g outside [0, 10]",
                        opts->swap_in_slack);
    for (int j = 0; j < n_jobs; j++) {
        tsl_status st = check_workload(w[j], j);
        if (st != TSL_OK) return st;
        if (!(opts->max_swap_rate[j] >= 0) || opts->max_swap_rate[j] > 1.0)
            return tsl_fail(TSL_ERR_INVALID, "planner: opts.max_swap_rate[%d] = %g outside [0, 1]",
                            j, opts->max_swap_rate[j]);
    }
    if (!(dev->h2d_bw > 0) || !(dev->d2h_bw > 0) || !(dev->copy_latency_us >= 0))
        return tsl_fail(TSL_ERR_INVALID,
                        "planner: profile '%s': h2d_bw %g, d2h_bw %g must be > 0 and "
                        "copy_latency_us %g >= 0",
                        dev->name, dev->h2d_bw, dev->d2h_bw, dev->copy_latency_us);
    tsl_plan_report r;
    memset(&r, 0, sizeof r);
    tsl__planner P;
    memset(&P, 0, sizeof P);
    P.dev = dev;
    P.opts = opts;
    for (int j = 0; j < n_jobs; j++) plans[j] = NULL;
    tsl_status st = TSL_OK;
    P.jobs = calloc((size_t)n_jobs, sizeof *P.jobs);
    if (!P.jobs) st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
    for (int j = 0; j < n_jobs && st == TSL_OK; j++) {
        plans[j] = tsl_plan_new(w[j]->job);
        if (!plans[j]) {
            st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory");
            break;
        }
        P.n_jobs = j + 1;
        st = job_init(&P.jobs[j], w[j], j, plans[j]);
        if (st == TSL_OK) r.vanilla_peak[j] = P.jobs[j].pk.peak;
    }
    if (st == TSL_OK && opts->policy == TSL_POLICY_TENSILE) {
        size_t budget = opts->budget ? opts->budget : dev->mem_bytes;
        int swap_ok = 1, rc_ok = opts->recompute != 0;
        int it = 0;
        /* history for the paper's 0.05 % rule: per iteration, the jobs it
         * touched and every job's peak before it */
        unsigned touched[4] = {0, 0, 0, 0};
        size_t hist[4][16];
        while ((swap_ok || rc_ok) && it < opts->max_iterations) {
            if (it > 100) {
                /* jobs touched in the last 3 iterations: their average peak
                 * now against 3 iterations ago */
                unsigned jobs =
                    touched[(it - 1) & 3] | touched[(it - 2) & 3] | touched[(it - 3) & 3];
                double then = 0, nowp = 0;
                for (int j = 0; j < P.n_jobs; j++)
                    if (jobs >> j & 1u) {
                        then += (double)hist[(it - 3) & 3][j];
                        nowp += (double)P.jobs[j].pk.peak;
                    }
                if (jobs && then - nowp < 0.0005 * then) break;
            }
            for (int j = 0; j < P.n_jobs; j++) hist[it & 3][j] = P.jobs[j].pk.peak;
            unsigned done = 0;
            if (swap_ok) {
                /* Algorithm 2 once: at most one swap per job, largest first
                 * across the jobs */
                for (;;) {
                    int j = swap_step(&P, done);
                    if (j < 0) break;
                    done |= 1u << j;
                }
                if (!done) swap_ok = 0;
            } else {
                size_t sum = 0;
                for (int j = 0; j < P.n_jobs; j++) sum += P.jobs[j].pk.peak;
                if (sum <= budget) break;
                int j = tsl__try_recompute(&P);
                if (j < 0) rc_ok = 0;
                else {
                    done = 1u << j;
                    swap_ok = 1;
                }
            }
            touched[it & 3] = done;
            it++;
            if (P.status != TSL_OK) {
                st = P.status;
                break;
            }
        }
        r.iterations = it;
    }
    /* final: sorted plans, their peaks by the public analysis */
    for (int j = 0; j < P.n_jobs && st == TSL_OK; j++) {
        tsl_plan_sort(plans[j]);
        tsl_peak_info pi;
        st = tsl_peak_analysis(w[j], plans[j], dev, &pi);
        if (st != TSL_OK) break;
        plans[j]->predicted_peak = pi.peak;
        plans[j]->predicted_period_us = pi.period_us;
        tsl_peak_info_free(&pi);
        r.planned_peak[j] = plans[j]->predicted_peak;
        for (int32_t k = 0; k < plans[j]->n_events; k++) {
            const tsl_event *e = &plans[j]->events[k];
            size_t b = w[j]->tensors[e->tensor].bytes;
            if (e->type == TSL_EV_SWAP_OUT) {
                r.swaps[j]++;
                r.bytes_d2h[j] += b;
            } else if (e->type == TSL_EV_SWAP_IN)
                r.bytes_h2d[j] += b;
            else if (e->type == TSL_EV_RECOMPUTE)
                r.recomputes[j]++;
        }
    }
    planner_free(&P);
    if (st != TSL_OK) {
        for (int j = 0; j < n_jobs; j++) {
            tsl_plan_free(plans[j]);
            plans[j] = NULL;
        }
        return st;
    }
    r.planning_ms = now_ms() - t0;
    if (rep) *rep = r;
    return TSL_OK;
}
