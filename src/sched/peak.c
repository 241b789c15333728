/*
 * peak.c - GPU memory peak analysis (paper, Algorithm 1): the load of one
 * job over one iteration under its plan, its peak, the time and op of the
 * peak, and the tensors resident there (MPT).
 *
 * The paper walks a time axis of accesses and swap events, starting from
 * the tensors resident at the iteration start. So does this file, with the
 * exact rules of docs/SCHEDULING.md, which depart from the paper:
 *  - a swap-in counts from its issue (the paper counts it at its end);
 *  - a release takes effect at max(end of its trigger, end of the tensor's
 *    latest swap-out issued by then); plans release nothing implicitly
 *    needed: non-persistent tensors die at the end of their last read
 *    (activity.c);
 *  - op workspaces are part of the load while their op runs (the workspace
 *    of the algorithm the plan runs the op with, as its latency);
 *  - persistent tensors released after their last access with no swap-in
 *    after that are absent at time 0 (the across-iteration case);
 *  - at one time point things happen in the doc's order ("Order at one
 *    time point"): (1) completions - positions of positive duration
 *    ending, releases that waited for a swap-out freeing at its end;
 *    (2) the positions of zero duration, each whole (outputs and workspace
 *    allocated, then its frees); (3) the events due then - releases at
 *    their trigger's end, then swap-ins; (4) the position of positive
 *    duration starting then.
 * The walk merges two streams without sorting the ops: the op stream (data
 * load, recomputations, op starts and ends, already in time order) and the
 * plan's memory effects (releases and swap-ins) sorted by time and step
 * (tsl__effect.phase). A peak can only be reached at an allocation, so the
 * load is checked after each one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/remat.h"
#include "sched/kit.h"

int tsl__effect_cmp(const tsl__effect *a, const tsl__effect *b) {
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1; /* frees first */
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    return 0;
}

static int cmp_eff(const void *x, const void *y) { return tsl__effect_cmp(x, y); }

/* See kit.h. Swap-outs are grouped per tensor (counting sort)
 * so that each release finds its tensor's swap-outs directly. */
tsl_status tsl__effects_build(const tsl_workload *w, const tsl__activity *a,
                              const tsl__timeline *tl, const tsl_plan *p,
                              const tsl_device_profile *dev, tsl__effect **eff_out,
                              int32_t *n_eff_out, uint8_t *absent0) {
    int32_t nt = w->n_tensors, ne = p ? p->n_events : 0;
    memset(absent0, 0, (size_t)nt);
    tsl__effect *eff = malloc(((size_t)ne + 1) * sizeof *eff);
    int32_t *off = calloc((size_t)nt + 2, sizeof *off);
    double *so_is = malloc(((size_t)ne + 1) * sizeof *so_is);
    double *so_en = malloc(((size_t)ne + 1) * sizeof *so_en);
    double *rel_late = malloc(((size_t)nt + 1) * sizeof *rel_late);
    double *si_late = malloc(((size_t)nt + 1) * sizeof *si_late);
    if (!eff || !off || !so_is || !so_en || !rel_late || !si_late) {
        free(eff); free(off); free(so_is); free(so_en); free(rel_late); free(si_late);
        return tsl_fail(TSL_ERR_OOM, "peak analysis: out of host memory");
    }
    for (int32_t k = 0; k < ne; k++)
        if (p->events[k].type == TSL_EV_SWAP_OUT) off[p->events[k].tensor + 2]++;
    for (int32_t t = 0; t < nt; t++) off[t + 2] += off[t + 1];
    for (int32_t k = 0; k < ne; k++) {
        const tsl_event *ev = &p->events[k];
        if (ev->type != TSL_EV_SWAP_OUT) continue;
        int32_t at = off[ev->tensor + 1]++;
        so_is[at] = tsl__issue(tl, ev->trigger, ev->delay_us);
        so_en[at] = so_is[at] + tsl_copy_us(dev, w->tensors[ev->tensor].bytes, 0);
    }
    /* now tensor t's swap-outs are [off[t], off[t+1]) */
    for (int32_t t = 0; t < nt; t++) rel_late[t] = si_late[t] = -INFINITY;
    int32_t n = 0;
    for (int32_t k = 0; k < ne; k++) {
        const tsl_event *ev = &p->events[k];
        int32_t t = ev->tensor;
        if (ev->type == TSL_EV_RELEASE) {
            double te = tsl__issue(tl, ev->trigger, ev->delay_us);
            double at = tsl__release_at(te, so_is + off[t], so_en + off[t], off[t + 1] - off[t]);
            eff[n++] = tsl__effect_release(at, te, t);
            if (a->persistent[t] && ev->trigger >= tsl__last_access_op(a, t) && at > rel_late[t])
                rel_late[t] = at;
        } else if (ev->type == TSL_EV_SWAP_IN) {
            double at = tsl__issue(tl, ev->trigger, ev->delay_us);
            eff[n++] = tsl__effect_swap_in(at, t);
            if (at > si_late[t]) si_late[t] = at;
        }
    }
    for (int32_t t = 0; t < nt; t++)
        absent0[t] = a->persistent[t] && rel_late[t] > -INFINITY && si_late[t] < rel_late[t];
    if (n > 1) qsort(eff, (size_t)n, sizeof *eff, cmp_eff);
    free(off); free(so_is); free(so_en); free(rel_late); free(si_late);
    *eff_out = eff;
    *n_eff_out = n;
    return TSL_OK;
}

/* The sweep's state. */
typedef struct sweep_state {
    const tsl_workload *w;
    uint8_t *res;
    size_t load;
    int64_t step;
    int32_t cur_op, cur_rc;
    tsl__sweep best;
    int64_t stop;
    int stopped;
    tsl__profile *prof;
    tsl__blocks *rec;  /* the blocks' lifetimes, or NULL */
} sweep_state;

/* ---- recording the blocks (tsl__sweep_blocks) ---- */

/* Opens a block of `bytes` (tensor t, or op's workspace with t = -1) at the
 * current step (the index of the next check point). Returns its index, or
 * -1 (rec->status set) if out of host memory. */
static int32_t rec_open(sweep_state *S, int32_t t, int32_t op, size_t bytes, int at_start) {
    tsl__blocks *R = S->rec;
    if (R->status != TSL_OK) return -1;
    if (R->n == R->cap) {
        int32_t cap = R->cap ? 2 * R->cap : 256;
        tsl__block *nb = realloc(R->b, (size_t)cap * sizeof *nb);
        if (!nb) {
            R->status = tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %d blocks", cap);
            return -1;
        }
        R->b = nb;
        R->cap = cap;
    }
    R->b[R->n] = (tsl__block){t, op, S->step, -1, bytes, (uint8_t)at_start};
    return R->n++;
}

static inline void rec_close(sweep_state *S, int32_t k) {
    if (k >= 0) S->rec->b[k].end = S->step;
}

static inline void add_t(sweep_state *S, int32_t t) {
    if (!S->res[t]) {
        S->res[t] = 1;
        S->load += S->w->tensors[t].bytes;
        if (S->rec) S->rec->open[t] = rec_open(S, t, -1, S->w->tensors[t].bytes, S->step < 0);
    }
}

static inline void drop_t(sweep_state *S, int32_t t) {
    if (S->res[t]) {
        S->res[t] = 0;
        S->load -= S->w->tensors[t].bytes;
        if (S->rec) {
            rec_close(S, S->rec->open[t]);
            S->rec->open[t] = -1;
        }
    }
}

/* A workspace of op held from now (returns its block, or -1), and its end. */
static inline int32_t ws_hold(sweep_state *S, int32_t op, size_t ws) {
    S->load += ws;
    return S->rec && ws ? rec_open(S, -1, op, ws, 0) : -1;
}
static inline void ws_drop(sweep_state *S, int32_t k, size_t ws) {
    S->load -= ws;
    if (S->rec) rec_close(S, k);
}

/* Records the time of check point S->step into S->rec (rec->status set if
 * out of host memory). */
static void rec_time(sweep_state *S, double time) {
    tsl__blocks *R = S->rec;
    if (R->status != TSL_OK) return;
    if (S->step >= R->cap_time) {
        int64_t cap = R->cap_time ? 2 * R->cap_time : 256;
        double *nt = realloc(R->time, (size_t)cap * sizeof *nt);
        if (!nt) {
            R->status = tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %lld check points",
                                 (long long)cap);
            return;
        }
        R->time = nt;
        R->cap_time = cap;
    }
    R->time[S->step] = time;
}

/* After an allocation: a check point. */
static inline void check(sweep_state *S, double time) {
    if (S->rec) rec_time(S, time);
    if (S->prof) {
        TSL_ASSERT(S->prof->n < S->prof->cap);
        S->prof->time[S->prof->n] = time;
        S->prof->load[S->prof->n++] = S->load;
    }
    if (S->load > S->best.peak || S->step == 0) {
        S->best.peak = S->load;
        S->best.time = time;
        S->best.op = S->cur_op;
        S->best.rc = S->cur_rc;
        S->best.step = S->step;
    }
    if (S->step == S->stop) S->stopped = 1;
    S->step++;
}

/* Applies the effects before a point of the op stream: every effect
 * earlier than `time`, and those at `time` up to step `phase` (TSL__EF_DONE:
 * the completions, before a position of zero duration or at the end of one
 * of positive duration; TSL__EF_SWAP_IN: everything, before a position of
 * positive duration). */
static inline void effects_until(sweep_state *S, const tsl__effect *eff, int32_t n_eff,
                                 int32_t *k, double time, int32_t phase) {
    while (!S->stopped && *k < n_eff &&
           (eff[*k].time < time || (eff[*k].time == time && eff[*k].phase <= phase))) {
        const tsl__effect *e = &eff[(*k)++];
        if (e->alloc) {
            add_t(S, e->tensor);
            check(S, e->time);
        } else {
            drop_t(S, e->tensor);
        }
    }
}

/* The sweep of tsl__sweep_run, recording the blocks into rec if non-NULL
 * (the persistent tensors resident at time 0 are added at step -1, which
 * marks them resident from the iteration's start; their blocks start at 0). */
static void sweep(const tsl_workload *w, const tsl__activity *a, const tsl__timeline *tl,
                  const tsl__effect *eff, int32_t n_eff, const uint8_t *absent0,
                  uint8_t *resident, int64_t stop, tsl__sweep *out, tsl__profile *prof,
                  tsl__blocks *rec) {
    int32_t nt = w->n_tensors, no = w->n_ops;
    sweep_state S = {.w = w, .res = resident, .stop = stop, .cur_op = -1, .cur_rc = -1,
                     .prof = prof, .rec = rec};
    if (prof) prof->n = 0;
    S.step = -1;
    for (int32_t t = 0; t < nt; t++) {
        resident[t] = 0;
        if (a->persistent[t] && !absent0[t]) add_t(&S, t);
    }
    S.step = 0;
    if (rec)
        for (int32_t k = 0; k < rec->n; k++) rec->b[k].start = 0;
    /* the data load: the first position of zero duration at time 0 (after
     * the completions there, before the events due then); unread data dies
     * right after it, as in the vanilla executor */
    int32_t k = 0;
    effects_until(&S, eff, n_eff, &k, 0.0, TSL__EF_DONE);
    for (int32_t t = 0; t < nt; t++)
        if (a->data[t]) add_t(&S, t);
    check(&S, 0.0);
    if (!S.stopped)
        for (int32_t f = a->free_off[0]; f < a->free_off[1]; f++) drop_t(&S, a->free_list[f]);
    for (int32_t i = 0; i < no && !S.stopped; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int32_t r = tl->rc_off[i]; r < tl->rc_off[i + 1] && !S.stopped; r++) {
            double rs = tl->rc_start[r], re = tl->rc_end[r];
            effects_until(&S, eff, n_eff, &k, rs, re == rs ? TSL__EF_DONE : TSL__EF_SWAP_IN);
            if (S.stopped) break;
            S.cur_op = i;
            S.cur_rc = r;
            add_t(&S, tl->rc_tensor[r]);
            /* a recomputation re-runs its producer, its workspace and the
             * scratch of its other outputs included (remat.h) */
            int32_t prod = w->tensors[tl->rc_tensor[r]].producer;
            size_t ws = tsl__replay_block(w, tl->rc_tensor[r]);
            int32_t wb = ws_hold(&S, prod, ws);
            check(&S, rs);
            if (S.stopped) break;
            effects_until(&S, eff, n_eff, &k, re, TSL__EF_DONE);
            ws_drop(&S, wb, ws);
        }
        if (S.stopped) break;
        /* a position of zero duration runs in step 2 of its time point,
         * before the events due then; one of positive duration in step 4 */
        int zero = tl->e[i] == tl->s[i];
        effects_until(&S, eff, n_eff, &k, tl->s[i], zero ? TSL__EF_DONE : TSL__EF_SWAP_IN);
        if (S.stopped) break;
        S.cur_op = i;
        S.cur_rc = -1;
        for (int j = 0; j < op->n_out; j++) add_t(&S, op->out[j]);
        int32_t wb = ws_hold(&S, i, op->workspace);
        check(&S, tl->s[i]);
        if (S.stopped) break;
        effects_until(&S, eff, n_eff, &k, tl->e[i], TSL__EF_DONE);
        ws_drop(&S, wb, op->workspace);
        if (S.stopped) break;
        for (int32_t f = a->free_off[i + 1]; f < a->free_off[i + 2]; f++)
            drop_t(&S, a->free_list[f]);
    }
    effects_until(&S, eff, n_eff, &k, INFINITY, TSL__EF_SWAP_IN); /* after the last op */
    *out = S.best;
    if (rec) rec->period = S.step;
}

void tsl__sweep_run(const tsl_workload *w, const tsl__activity *a, const tsl__timeline *tl,
                    const tsl__effect *eff, int32_t n_eff, const uint8_t *absent0,
                    uint8_t *resident, int64_t stop, tsl__sweep *out, tsl__profile *prof) {
    sweep(w, a, tl, eff, n_eff, absent0, resident, stop, out, prof, NULL);
}

tsl_status tsl__sweep_blocks(const tsl_workload *w, const tsl__activity *a,
                             const tsl__timeline *tl, const tsl__effect *eff, int32_t n_eff,
                             const uint8_t *absent0, uint8_t *resident, tsl__blocks *rec) {
    memset(rec, 0, sizeof *rec);
    rec->open = malloc(((size_t)w->n_tensors + 1) * sizeof *rec->open);
    if (!rec->open) return tsl_fail(TSL_ERR_OOM, "layout: out of host memory");
    for (int32_t t = 0; t < w->n_tensors; t++) rec->open[t] = -1;
    tsl__sweep sw;
    sweep(w, a, tl, eff, n_eff, absent0, resident, -1, &sw, NULL, rec);
    if (rec->status != TSL_OK) {
        tsl_status st = rec->status;
        tsl__blocks_free(rec);
        return st;
    }
    return TSL_OK;
}

void tsl__blocks_free(tsl__blocks *rec) {
    free(rec->b);
    free(rec->open);
    free(rec->time);
    memset(rec, 0, sizeof *rec);
}

typedef struct size_idx {
    size_t bytes;
    int32_t t;
} size_idx;

static int cmp_size_idx(const void *x, const void *y) {
    const size_idx *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* Sorts ts[0..n) largest first (ties: lower index). TSL_ERR_OOM. */
tsl_status tsl__sort_by_size(const tsl_workload *w, int32_t *ts, int32_t n) {
    if (n < 2) return TSL_OK;
    size_idx *v = malloc((size_t)n * sizeof *v);
    if (!v) return tsl_fail(TSL_ERR_OOM, "peak analysis: out of host memory");
    for (int32_t i = 0; i < n; i++) v[i] = (size_idx){w->tensors[ts[i]].bytes, ts[i]};
    qsort(v, (size_t)n, sizeof *v, cmp_size_idx);
    for (int32_t i = 0; i < n; i++) ts[i] = v[i].t;
    free(v);
    return TSL_OK;
}

int32_t tsl__resident_at(const tsl_workload *w, const tsl__activity *a, const tsl__timeline *tl,
                         const tsl__effect *eff, int32_t n_eff, const uint8_t *absent0,
                         uint8_t *resident, int64_t stop, int32_t *out) {
    tsl__sweep sw;
    tsl__sweep_run(w, a, tl, eff, n_eff, absent0, resident, stop, &sw, NULL);
    int32_t n = 0;
    for (int32_t k = 0; k < w->n_tensors; k++)
        if (resident[a->by_size[k]]) out[n++] = a->by_size[k];
    return n;
}

/* ---- the public analysis ------------------------------------------------------- */

/* Checks that the workload's op lists and the plan's events are in range
 * (what the analysis indexes with). TSL_ERR_INVALID naming the field. */
static tsl_status check_inputs(const tsl_workload *w, const tsl_plan *p,
                               const tsl_device_profile *dev) {
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int j = 0; j < op->n_in + op->n_out; j++) {
            int32_t t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
            if (t < 0 || t >= w->n_tensors)
                return tsl_fail(TSL_ERR_INVALID,
                                "peak analysis: workload '%s': op %d ('%s') %s %d: tensor %d "
                                "out of range (%d tensors)",
                                w->job, i, op->name, j < op->n_in ? "input" : "output",
                                j < op->n_in ? j : j - op->n_in, t, w->n_tensors);
        }
    }
    if (!p) return TSL_OK;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if ((unsigned)e->type > TSL_EV_RECOMPUTE)
            return tsl_fail(TSL_ERR_INVALID, "peak analysis: plan '%s': event %d: type %d unknown",
                            p->job, k, (int)e->type);
        if (e->tensor < 0 || e->tensor >= w->n_tensors)
            return tsl_fail(TSL_ERR_INVALID,
                            "peak analysis: plan '%s': event %d: tensor %d out of range "
                            "(%d tensors)",
                            p->job, k, e->tensor, w->n_tensors);
        if (e->trigger < -1 || e->trigger >= w->n_ops)
            return tsl_fail(TSL_ERR_INVALID,
                            "peak analysis: plan '%s': event %d: trigger %d out of range (%d ops)",
                            p->job, k, e->trigger, w->n_ops);
        if (!(e->delay_us >= 0) || !isfinite(e->delay_us))
            return tsl_fail(TSL_ERR_INVALID,
                            "peak analysis: plan '%s': event %d: delay_us %g must be finite "
                            "and >= 0",
                            p->job, k, e->delay_us);
        int needs_precede = e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE;
        if (needs_precede && (e->precede < 0 || e->precede >= w->n_ops))
            return tsl_fail(TSL_ERR_INVALID,
                            "peak analysis: plan '%s': event %d: precede %d out of range (%d ops)",
                            p->job, k, e->precede, w->n_ops);
        if (e->type == TSL_EV_RECOMPUTE) {
            int32_t q = w->tensors[e->tensor].producer;
            if (q < 0 || q >= w->n_ops)
                return tsl_fail(TSL_ERR_INVALID,
                                "peak analysis: plan '%s': event %d: recompute of tensor '%s', "
                                "which has no producer op (%d)",
                                p->job, k, w->tensors[e->tensor].name, q);
        }
        if ((e->type == TSL_EV_SWAP_OUT || e->type == TSL_EV_SWAP_IN) && !dev)
            return tsl_fail(TSL_ERR_INVALID,
                            "peak analysis: plan '%s': event %d is a %s but no device "
                            "profile was given", p->job, k,
                            e->type == TSL_EV_SWAP_OUT ? "swap-out" : "swap-in");
    }
    return TSL_OK;
}

/* The analysis of w (the workload as run under p: its ops' latencies and
 * workspaces those of p's algorithms) and p, inputs checked: the timeline
 * (planned waits included), the effects, one sweep for the peak and one
 * to the peak for the tensors resident there. */
static tsl_status analyse(const tsl_workload *w, const tsl_plan *p,
                          const tsl_device_profile *dev, tsl_peak_info *out) {
    tsl_status st;
    tsl__activity a;
    tsl__timeline tl;
    st = tsl__activity_build(w, &a);
    if (st != TSL_OK) return st;
    st = tsl__timeline_build(w, p, dev, &tl);
    if (st != TSL_OK) {
        tsl__activity_free(&a);
        return st;
    }
    int32_t nt = w->n_tensors;
    uint8_t *absent0 = malloc((size_t)nt + 1), *res = malloc((size_t)nt + 1);
    int32_t *list = malloc(((size_t)nt + 1) * sizeof *list);
    tsl__effect *eff = NULL;
    int32_t n_eff = 0;
    if (!absent0 || !res || !list) st = tsl_fail(TSL_ERR_OOM, "peak analysis: out of host memory");
    if (st == TSL_OK) st = tsl__effects_build(w, &a, &tl, p, dev, &eff, &n_eff, absent0);
    if (st == TSL_OK) {
        tsl__sweep sw;
        tsl__sweep_run(w, &a, &tl, eff, n_eff, absent0, res, -1, &sw, NULL);
        int32_t n = tsl__resident_at(w, &a, &tl, eff, n_eff, absent0, res, sw.step, list);
        if (n < 0) st = TSL_ERR_OOM;
        else {
            out->peak = sw.peak;
            out->peak_time_us = sw.time;
            out->peak_op = sw.op;
            out->period_us = tl.period;
            out->n_waits = tl.n_wait;
            out->stall_us = tl.stall;
            /* LUA: the last op ending by the peak that reads a tensor still
             * resident at the peak */
            for (int32_t j = sw.op - 1; j >= 0 && out->last_input_op < 0; j--)
                for (int q = 0; q < w->ops[j].n_in; q++)
                    if (res[w->ops[j].in[q]]) {
                        out->last_input_op = j;
                        break;
                    }
            out->resident = list;
            out->n_resident = n;
            list = NULL;
        }
    }
    free(list);
    free(eff);
    free(res);
    free(absent0);
    tsl__timeline_free(&tl);
    tsl__activity_free(&a);
    return st;
}

/* See tensile/plan.h. A plan that chooses algorithms is analysed on the
 * workload as run (tsl__workload_as_run): the chosen algorithms' latencies
 * time the ops and their workspaces are held while they run. */
tsl_status tsl_peak_analysis(const tsl_workload *w, const tsl_plan *p,
                             const tsl_device_profile *dev, tsl_peak_info *out) {
    if (!w || !out) return tsl_fail(TSL_ERR_INVALID, "peak analysis: workload or output is NULL");
    memset(out, 0, sizeof *out);
    out->peak_op = -1;
    out->last_input_op = -1;
    tsl_status st = check_inputs(w, p, dev);
    const tsl_workload *use;
    tsl_workload *owned = NULL;
    if (st == TSL_OK) st = tsl__workload_as_run(w, p, &use, &owned);
    if (st == TSL_OK) st = analyse(use, p, dev, out);
    tsl_workload_free(owned);
    return st;
}

void tsl_peak_info_free(tsl_peak_info *pi) {
    if (!pi) return;
    free(pi->resident);
    pi->resident = NULL;
    pi->n_resident = 0;
}
