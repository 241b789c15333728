/*
 * pjob.c - a job being planned (kit.h, tsl__pjob): its plan with every
 * event's times (issue and copy end of a swap, effect time of a release,
 * start of a recomputation), per-tensor event lists, the memory effects
 * sorted for the sweep, the persistent tensors absent at time 0, and the
 * peak under the plan - kept up to date as a policy adds and removes
 * events. And the kit over all the jobs of a device (tsl__kit): the jobs
 * and the two copy channels they share.
 *
 * Every time is computed with the expressions of the shared accounting
 * (timeline.c, peak.c), so that what a policy books is what the verifier
 * and the simulator will see.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

/* ---- per-job events and memory effects ----------------------------------------- */

/* The across-iteration rule of docs/SCHEDULING.md for one tensor (same as
 * tsl__effects_build): absent at time 0 if released after its last access
 * with no swap-in at or after that release. */
static void update_absent0(tsl__pjob *J, int32_t t) {
    if (!J->act.persistent[t]) {
        J->absent0[t] = 0;
        return;
    }
    int32_t last = tsl__last_access_op(&J->act, t);
    double rel = -INFINITY, si = -INFINITY;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_RELEASE && e->trigger >= last && J->ev_time[k] > rel)
            rel = J->ev_time[k];
        if (e->type == TSL_EV_SWAP_IN && J->ev_time[k] > si) si = J->ev_time[k];
    }
    J->absent0[t] = rel > -INFINITY && si < rel;
}

static tsl_status eff_insert(tsl__pjob *J, tsl__effect f) {
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

static void eff_remove(tsl__pjob *J, tsl__effect f) {
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

/* The memory effect of release or swap-in k at its current time: a
 * release later than its trigger's end waited for a swap-out and frees at
 * that copy's end (step 1 of the time point), else at its trigger's end
 * (step 3). */
static tsl__effect effect_of(const tsl__pjob *J, int32_t k) {
    const tsl_event *e = &J->plan->events[k];
    if (e->type == TSL_EV_SWAP_IN) return tsl__effect_swap_in(J->ev_time[k], e->tensor);
    return tsl__effect_release(J->ev_time[k], tsl__issue(&J->tl, e->trigger, e->delay_us),
                               e->tensor);
}

/* Times of event k under the current timeline. */
static void event_times(tsl__pjob *J, const tsl_device_profile *dev, int32_t k) {
    const tsl_event *e = &J->plan->events[k];
    size_t bytes = J->w->tensors[e->tensor].bytes;
    switch (e->type) {
    case TSL_EV_SWAP_OUT:
    case TSL_EV_SWAP_IN:
        J->ev_time[k] = tsl__issue(&J->tl, e->trigger, e->delay_us);
        J->ev_end[k] = J->ev_time[k] + tsl_copy_us(dev, bytes, e->type == TSL_EV_SWAP_IN);
        break;
    case TSL_EV_RELEASE: /* max(issue, end of the latest swap-out issued by then) */
        J->ev_time[k] = J->ev_end[k] = tsl__release_time_issued(
            J, e->tensor, tsl__issue(&J->tl, e->trigger, e->delay_us), -1, 0);
        break;
    case TSL_EV_RECOMPUTE: /* its start once the timeline holds it, else the op's */
        J->ev_time[k] = J->ev_end[k] = J->tl.s[e->precede];
        for (int32_t r = J->tl.rc_off[e->precede]; r < J->tl.rc_off[e->precede + 1]; r++)
            if (J->tl.rc_ev[r] == k) J->ev_time[k] = J->ev_end[k] = J->tl.rc_start[r];
        break;
    }
}

double tsl__pjob_would_start(const tsl__pjob *J, int32_t op, int32_t rc) {
    for (int32_t i = 0; i < J->tl.n_wait; i++)
        if (J->tl.wait[i].op == op && J->tl.wait[i].rc == rc) return J->tl.wait[i].at;
    return rc < 0 ? J->tl.s[op] : J->tl.rc_start[rc];
}

/* 1 if op q reads tensor t. */
static int reads(const tsl_workload *w, int32_t q, int32_t t) {
    for (int k = 0; k < w->ops[q].n_in; k++)
        if (w->ops[q].in[k] == t) return 1;
    return 0;
}

/* 1 if swap-in k lands after the op it precedes, or a recomputation before
 * that op reading its tensor, would start - or release k, preceding an op,
 * frees after the op's first position would start: a planned wait the
 * timeline does not hold yet. */
static int new_wait(const tsl__pjob *J, int32_t k) {
    const tsl_event *e = &J->plan->events[k];
    if (e->type == TSL_EV_RELEASE && e->precede >= 0 && e->trigger < e->precede) {
        int32_t p = e->precede, r0 = J->tl.rc_off[p];
        return J->ev_time[k] - tsl__pjob_would_start(J, p, r0 < J->tl.rc_off[p + 1] ? r0 : -1) >
               TSL__WAIT_EPS_US;
    }
    if (e->type != TSL_EV_SWAP_IN || e->trigger >= e->precede) return 0;
    int32_t p = e->precede;
    if (J->ev_end[k] - tsl__pjob_would_start(J, p, -1) > TSL__WAIT_EPS_US) return 1;
    for (int32_t r = J->tl.rc_off[p]; r < J->tl.rc_off[p + 1]; r++) {
        int32_t g = J->w->tensors[J->tl.rc_tensor[r]].producer;
        if (reads(J->w, g, e->tensor) &&
            J->ev_end[k] - tsl__pjob_would_start(J, p, r) > TSL__WAIT_EPS_US)
            return 1;
    }
    return 0;
}

tsl_status tsl__pjob_add_event(tsl__pjob *J, const tsl_device_profile *dev, tsl_event e) {
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
        st = eff_insert(J, effect_of(J, k));
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
    if (new_wait(J, k) && (st = tsl__pjob_retime(J, dev)) != TSL_OK) {
        tsl__pjob_pop_events(J, 1);
        return st;
    }
    return TSL_OK;
}

/* 1 if J's plan holds an event of type ty for tensor t. */
static int has_event(const tsl__pjob *J, int32_t t, tsl_event_type ty) {
    for (int32_t o = J->ev_head[t]; o >= 0; o = J->ev_next[o])
        if (J->plan->events[o].type == ty) return 1;
    return 0;
}

void tsl__pjob_pop_events(tsl__pjob *J, int n) {
    for (int i = 0; i < n; i++) {
        int32_t k = J->plan->n_events - 1;
        TSL_ASSERT(k >= 0);
        const tsl_event *e = &J->plan->events[k];
        TSL_ASSERT(J->ev_head[e->tensor] == k);
        J->ev_head[e->tensor] = J->ev_next[k];
        if (e->type == TSL_EV_RELEASE || e->type == TSL_EV_SWAP_IN) eff_remove(J, effect_of(J, k));
        int32_t t = e->tensor;
        tsl_event_type ty = e->type;
        J->plan->n_events--;
        if (ty == TSL_EV_SWAP_OUT && J->swapped[t] && !has_event(J, t, TSL_EV_SWAP_OUT)) {
            J->swapped[t] = 0;
            J->n_swapped--;
        }
        if (ty == TSL_EV_RECOMPUTE) J->recomputed[t] = (uint8_t)has_event(J, t, TSL_EV_RECOMPUTE);
        update_absent0(J, t);
    }
}

tsl_status tsl__pjob_set_event(tsl__pjob *J, const tsl_device_profile *dev, int32_t k,
                               tsl_event e) {
    tsl_event *x = &J->plan->events[k];
    TSL_ASSERT(x->tensor == e.tensor && x->type != TSL_EV_SWAP_OUT && e.type != TSL_EV_SWAP_OUT);
    memset(x, 0, sizeof *x); /* the padding zero, as tsl_plan_add leaves it */
    x->type = e.type;
    x->tensor = e.tensor;
    x->trigger = e.trigger;
    x->delay_us = e.delay_us;
    x->precede = e.precede;
    J->recomputed[e.tensor] = (uint8_t)has_event(J, e.tensor, TSL_EV_RECOMPUTE);
    return tsl__pjob_retime(J, dev);
}

/* Peak of J under its plan: J->pk, and the load profile J->prof (which
 * lacks if out of host memory: prof.n = -1). */
void tsl__pjob_analyse(tsl__pjob *J) {
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
    J->analyses++;
}

/* Recomputes every event time of J after its timeline changed, and the
 * effects. TSL_ERR_OOM. */
tsl_status tsl__pjob_retime(tsl__pjob *J, const tsl_device_profile *dev) {
    tsl__timeline tl;
    tsl_status st = tsl__timeline_build(J->w, J->plan, dev, &tl);
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
        st = eff_insert(J, effect_of(J, k));
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
int tsl__pjob_resident_at(const tsl__pjob *J, int32_t t, double x) {
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

int tsl__pjob_can_swap_out(const tsl__pjob *J, int32_t t, double x, double end) {
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int res;
    if (a->persistent[t]) {
        res = !J->absent0[t];
    } else { /* generated by x, not dead before the copy ends */
        int32_t lo = a->acc_off[t], hi = a->acc_off[t + 1];
        if (a->data[t] || lo == hi || !a->acc[lo].writes || tl->e[a->acc[lo].op] > x) return 0;
        int32_t death = a->acc[lo].op;
        for (int32_t k = lo; k < hi; k++)
            if (a->acc[k].reads && a->acc[k].op > death) death = a->acc[k].op;
        if (tl->e[death] <= x || tl->e[death] < end) return 0;
        res = 1;
    }
    /* the latest change of t by x: a release taking effect at or before x
     * (its frees come first at x); a swap-in or recomputation before x (at
     * x it would come after the swap-out), whose data must have landed */
    double best_t = -INFINITY, valid = -INFINITY;
    int best = -1;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        double at = J->ev_time[k];
        if (e->type == TSL_EV_RELEASE) {
            double te = tsl__issue(tl, e->trigger, e->delay_us);
            /* one issued at or after x will wait for this copy: it must
             * not change when it takes effect (the kit keeps the effects
             * it added) */
            if (te >= x) {
                if (tsl__release_time_issued(J, t, te, x, end) != at) return 0;
                continue;
            }
            /* one that does not wait for it must not free t while it copies */
            if (at > x && at < end) return 0;
            if (at > x) continue;
            if (at > best_t || (at == best_t && best < 0)) {
                best_t = at;
                best = 0;
            }
        } else if (e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE) {
            if (!(at < x)) continue;
            if (at >= best_t) {
                best_t = at;
                best = 1;
                valid = e->type == TSL_EV_SWAP_IN ? J->ev_end[k] : at;
                if (e->type == TSL_EV_RECOMPUTE) /* landed at its end */
                    for (int32_t r = tl->rc_off[e->precede]; r < tl->rc_off[e->precede + 1]; r++)
                        if (tl->rc_ev[r] == k) valid = tl->rc_end[r];
            }
        }
    }
    if (best == 0) return 0;
    if (best == 1) return valid <= x;
    return res;
}

int32_t tsl__find_swap_out(const tsl__pjob *J, int32_t t, double from, double to) {
    int32_t best = -1;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k])
        if (J->plan->events[k].type == TSL_EV_SWAP_OUT && J->ev_time[k] >= from &&
            J->ev_time[k] <= to && (best < 0 || J->ev_time[k] > J->ev_time[best]))
            best = k;
    return best;
}

double tsl__release_time_with(const tsl__pjob *J, int32_t t, int32_t r, double extra_issue,
                              double extra_end) {
    return tsl__release_time_issued(J, t, tsl__trig_end(&J->tl, r), extra_issue, extra_end);
}

double tsl__release_time_issued(const tsl__pjob *J, int32_t t, double te, double extra_issue,
                                double extra_end) {
    double best = -INFINITY, end = te;
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k])
        if (J->plan->events[k].type == TSL_EV_SWAP_OUT && J->ev_time[k] <= te &&
            J->ev_time[k] > best) {
            best = J->ev_time[k];
            end = J->ev_end[k];
        }
    if (extra_issue >= 0 && extra_issue <= te && extra_issue > best) end = extra_end;
    return end > te ? end : te;
}

/* ---- jobs ------------------------------------------------------------------------- */

/* Frees everything job_init allocated (the plan stays: the caller owns it). */
static void job_free(tsl__pjob *J) {
    tsl__activity_free(&J->act);
    tsl__timeline_free(&J->tl);
    free(J->ev_time);
    free(J->ev_end);
    free(J->ev_next);
    free(J->ev_head);
    free(J->eff);
    free(J->absent0);
    free(J->resident);
    free(J->prof.time);
    free(J->prof.load);
    free(J->swapped);
    free(J->recomputed);
    tsl__chan_free(&J->own_d2h);
    tsl__chan_free(&J->own_h2d);
}

/* The state of job `index` over workload w with its empty plan, and its
 * vanilla peak analysis in J->pk. TSL_ERR_OOM (J is then partly built:
 * job_free it). */
static tsl_status job_init(tsl__pjob *J, const tsl_workload *w, int index, tsl_plan *plan,
                           const tsl_device_profile *dev) {
    memset(J, 0, sizeof *J);
    J->w = w;
    J->index = index;
    J->dev = dev;
    J->plan = plan;
    tsl_status st = tsl__activity_build(w, &J->act);
    if (st != TSL_OK) return st;
    st = tsl__timeline_build(w, plan, dev, &J->tl);
    if (st != TSL_OK) return st;
    size_t nt = (size_t)w->n_tensors + 1;
    J->ev_head = malloc(nt * sizeof *J->ev_head);
    J->absent0 = calloc(nt, 1);
    J->resident = calloc(nt, 1);
    J->swapped = calloc(nt, 1);
    J->recomputed = calloc(nt, 1);
    if (!J->ev_head || !J->absent0 || !J->resident || !J->swapped || !J->recomputed)
        return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for job '%s'", w->job);
    for (size_t t = 0; t < nt; t++) J->ev_head[t] = -1;
    tsl__pjob_analyse(J);
    return TSL_OK;
}

tsl_status tsl__kit_init(tsl__kit *K, const tsl_plan_request *rq, tsl_plan **plans) {
    memset(K, 0, sizeof *K);
    K->dev = rq->dev;
    K->shared = rq->shared_channels;
    K->jobs = calloc((size_t)rq->n_jobs, sizeof *K->jobs);
    if (!K->jobs) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for %d jobs",
                                  rq->n_jobs);
    for (int j = 0; j < rq->n_jobs; j++) {
        K->n_jobs = j + 1;
        tsl_status st = job_init(&K->jobs[j], rq->w[j], j, plans[j], rq->job_dev[j]);
        if (st != TSL_OK) {
            tsl__kit_free(K);
            return st;
        }
    }
    return TSL_OK;
}

tsl_status tsl__kit_reset(tsl__kit *K) {
    for (int j = 0; j < K->n_jobs; j++) {
        tsl__pjob *J = &K->jobs[j];
        tsl__pjob_pop_events(J, J->plan->n_events);
        tsl_status st = tsl__pjob_retime(J, J->dev);
        if (st != TSL_OK) return K->status = st;
        tsl__pjob_analyse(J);
        J->own_d2h.n = J->own_h2d.n = 0;
    }
    K->d2h.n = K->h2d.n = 0;
    return TSL_OK;
}

void tsl__kit_free(tsl__kit *K) {
    for (int j = 0; j < K->n_jobs; j++) job_free(&K->jobs[j]);
    free(K->jobs);
    tsl__chan_free(&K->d2h);
    tsl__chan_free(&K->h2d);
    memset(K, 0, sizeof *K);
}

void tsl__pjob_keep_peak_users(tsl__pjob *J) {
    const tsl_workload *w = J->w;
    if (J->pk.op >= 0) {
        const tsl_wl_op *o = &w->ops[J->pk.op];
        for (int i = 0; i < o->n_in; i++) J->resident[o->in[i]] = 0;
        for (int i = 0; i < o->n_out; i++) J->resident[o->out[i]] = 0;
    }
    if (J->pk.rc >= 0) {
        int32_t t = J->tl.rc_tensor[J->pk.rc];
        const tsl_wl_op *q = &w->ops[w->tensors[t].producer];
        J->resident[t] = 0;
        for (int i = 0; i < q->n_in; i++) J->resident[q->in[i]] = 0;
    }
}
