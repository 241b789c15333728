/*
 * remat_online.c - DTR in the runtime (tsl_runtime_opts.remat; Kirisame
 * et al., "Dynamic Tensor Rematerialization", ICLR 2021): online eviction
 * without copies and rematerialisation on demand, decided while the
 * iteration runs.
 *
 * When an allocation does not fit (make_room in executor.c), the executor
 * first frees a dead tensor (no use left: it costs nothing), else drops -
 * frees, without a copy - the droppable tensor (where the arena has the
 * bytes but not in one block, among those whose drop opens such a block,
 * if any: DTR's rule does not know where bytes lie) with the smallest
 *
 *   h(t) = cost(t) / (size(t) x staleness(t))      (sched/remat.h)
 *
 * cost(t) the measured latencies (the runtime's EWMA estimates) of the
 * producers of t and its evicted neighbourhood e*(t), walked exactly
 * (tsl__remat_estar_cost), staleness the time since the last kernel that
 * read or wrote t. When an op (or a rematerialisation) reads a dropped
 * tensor - or a droppable one freed after its last read that a
 * rematerialisation needs - the executor re-runs its producer first
 * (ensure_input), its own missing inputs regenerated the same way,
 * recursively; the producer's other outputs go to scratch, its in-place
 * state (batch norm's running statistics) is updated in scratch, not twice.
 *
 * Droppable (sched/remat.h, built once at attach): replayable (transient,
 * not written in place by its producer, the producer's other outputs
 * scratch), every read at or before the horizon up to which its producer's
 * inputs keep their values - so a dropped tensor can be regenerated bit for
 * bit at any of its reads, and the parameters are vanilla's (DESIGN.md
 * invariant 5). Never parameters, optimizer states, the data, or an
 * in-place update's output.
 * Under a plan with events, the tensors the plan swaps, releases or
 * recomputes are left to the plan: DTR drops only the others (with the
 * empty plan, any droppable tensor).
 *
 * Where nothing droppable is left, the executor falls back to the passive
 * swap-out (evict.c) - DTR alone would fail with out of memory; a job
 * here never does while something can move.
 *
 * All of it runs on the compute thread with rt->mu held.
 */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

tsl_status tsl__dtr_init(tsl__runtime *rt) {
    if (!rt->o.remat) return TSL_OK;
    size_t nt = (size_t)rt->nt + 1;
    tsl_status st = tsl__remat_build(rt->w0, 0, &rt->dtr.rm);
    if (st != TSL_OK) return st;
    rt->dtr.on = 1;
    rt->dtr.items = calloc(nt, sizeof *rt->dtr.items);
    rt->dtr.last = calloc(nt, sizeof *rt->dtr.last);
    rt->dtr.mark = calloc(nt, sizeof *rt->dtr.mark);
    rt->dtr.stack = malloc(nt * sizeof *rt->dtr.stack);
    if (!rt->dtr.items || !rt->dtr.last || !rt->dtr.mark || !rt->dtr.stack)
        return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
    for (int32_t t = 0; t < rt->nt; t++)
        rt->dtr.items[t] = (tsl__rt_item){.op = rt->w0->tensors[t].producer, .tensor = t,
                                          .event = -1};
    return TSL_OK;
}

void tsl__dtr_free(tsl__runtime *rt) {
    if (rt->dtr.on) tsl__remat_free(&rt->dtr.rm);
    free(rt->dtr.items);
    free(rt->dtr.last);
    free(rt->dtr.mark);
    free(rt->dtr.stack);
    memset(&rt->dtr, 0, sizeof rt->dtr);
}

void tsl__dtr_begin(tsl__runtime *rt) {
    if (!rt->dtr.on) return;
    /* a rematerialisation lasts its producer's nominal latency on the
     * virtual clock (its start never equals ns: end = start + latency) */
    const tsl_workload *w = rt->cur->w;
    for (int32_t t = 0; t < rt->nt; t++) {
        int32_t q = rt->dtr.items[t].op;
        double us = q < 0 ? 0.0 : rt->vlat ? rt->vlat[q] : w->ops[q].end_us - w->ops[q].start_us;
        rt->dtr.items[t].ns = -1.0;
        rt->dtr.items[t].ne = -1.0 + us;
    }
}

/* The runtime's clock on the trace's axis (µs): staleness spans iterations. */
static double clock_us(const tsl__runtime *rt) {
    return rt->iter_base_us + (rt->virtual_clock ? rt->vnow : tsl__rt_now(rt));
}

void tsl__dtr_touch(tsl__runtime *rt, const tsl_op *op, int32_t extra) {
    if (!rt->dtr.on) return;
    double now = clock_us(rt);
    for (int j = 0; j < op->n_in; j++) rt->dtr.last[op->in[j]] = now;
    for (int j = 0; j < op->n_out; j++) rt->dtr.last[op->out[j]] = now;
    if (extra >= 0) rt->dtr.last[extra] = now;
}

/* 1 if the plan has events for t (swaps, releases, recomputations): the
 * plan's, not DTR's. */
static int planned(const tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    return pl->tev_start[t] < pl->tev_start[t + 1] || pl->recomputed[t];
}

int tsl__dtr_gone(const tsl__runtime *rt, int32_t t) {
    if (!rt->dtr.on || !rt->cur || rt->s->ptr[t] || !rt->dtr.rm.droppable[t] || planned(rt, t))
        return 0;
    int32_t q = rt->w0->tensors[t].producer;
    return q >= 0 && q < rt->pos && rt->dtr.rm.horizon[t] >= rt->pos && !tsl__rt_host_valid(rt, t);
}

/* e*'s notion of evicted (tsl__remat_gone_fn). */
static int gone_fn(void *ctx, int32_t x) { return tsl__dtr_gone(ctx, x); }

/* DTR's choice among the droppable movable tensors (with goal > 0, those
 * whose drop opens a free block of `goal`): the smallest h, or -1. */
static int32_t least_h(tsl__runtime *rt, size_t goal) {
    const tsl_workload *w = rt->w0;
    double now = clock_us(rt);
    int32_t best = -1;
    double best_h = 0.0;
    for (int32_t t = 0; t < rt->nt; t++) {
        if (!tsl__rt_movable(rt, t) || w->tensors[t].bytes == 0) continue;
        if (!rt->dtr.rm.droppable[t] || planned(rt, t)) continue;
        if (goal && !tsl__rt_opens(rt, t, goal)) continue;
        double cost = tsl__remat_estar_cost(w, &rt->dtr.rm, t, gone_fn, rt, rt->ewma,
                                            rt->dtr.mark, ++rt->dtr.stamp, rt->dtr.stack);
        if (rt->dtr.stamp == UINT32_MAX) { /* the marks wrap: start afresh */
            memset(rt->dtr.mark, 0, sizeof *rt->dtr.mark * (size_t)rt->nt);
            rt->dtr.stamp = 0;
        }
        size_t b = w->tensors[t].bytes;
        double h = tsl__remat_h(cost, b, now - rt->dtr.last[t]);
        if (tsl__remat_beats(h, b, t, best_h, best < 0 ? 0 : w->tensors[best].bytes, best)) {
            best = t;
            best_h = h;
        }
    }
    return best;
}

int32_t tsl__dtr_victim(tsl__runtime *rt, size_t need, int *dead) {
    *dead = 0;
    if (!rt->dtr.on || !rt->cur) return -1;
    for (int32_t t = 0; t < rt->nt; t++) /* no use left: free, costs nothing */
        if (tsl__rt_movable(rt, t) && rt->w0->tensors[t].bytes > 0 &&
            tsl__rt_dead(rt, t, rt->pos)) {
            *dead = 1;
            return t;
        }
    /* a drop that opens the block asked for, by h; where none does, by h
     * alone (dropping by where bytes lie instead makes DTR thrash: it takes
     * tensors about to be read) */
    size_t goal = tsl__rt_run_goal(rt, need); /* under DTR: need's block, or 0 */
    int32_t v = goal ? least_h(rt, goal) : -1;
    return v >= 0 ? v : least_h(rt, 0);
}

void tsl__dtr_drop(tsl__runtime *rt, int32_t t, int dead) {
    TSL_ASSERT(tsl__rt_movable(rt, t));
    tsl__rt_release_block(rt, t);
    TSL_ASSERT(!rt->s->ptr[t]); /* movable: no copy uses it */
    if (!dead) rt->st.drops++;
}

const tsl__rt_item *tsl__dtr_item(const tsl__runtime *rt, int32_t t) {
    TSL_ASSERT(rt->dtr.on && t >= 0 && t < rt->nt && rt->dtr.items[t].op >= 0);
    return &rt->dtr.items[t];
}
