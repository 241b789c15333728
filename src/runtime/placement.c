/*
 * placement.c - the runtime follows the plan's layout (docs/SCHEDULING.md,
 * "Layout"; ARCHITECTURE.md, "Placement"): under a plan with a layout, and
 * a backend that can place (alloc_at), every block the iteration allocates
 * goes to the offset the layout gives it, so that the device holds what
 * the plan predicts - its footprint - and no more.
 *
 * Blocks are named as the layout names them, counted from the iteration's
 * start: a tensor's k-th residency (a persistent tensor resident when the
 * iteration starts is in residency 0 there, so its first allocation is
 * residency 1; any other tensor's first allocation is residency 0), an
 * op's k-th workspace. The counters advance with every allocation, placed
 * or not, so that a block the layout does not know (drift, a passive
 * swap-in) only costs that block its place.
 *
 * A place still held (a release waiting for a swap-out, a kernel in
 * flight, a block placed online) answers TSL_ERR_BUSY: the executor waits
 * for the holder to go, as for memory, and when waiting cannot help it
 * allocates the block online once (tsl__place_online), counted as
 * displaced. Persistent tensors are placed when a plan is installed: they
 * are parked on the host, and those the plan keeps resident at the
 * iteration's start come back at their places; those it keeps absent
 * (released across iterations) stay on the host until the plan's own
 * swap-ins bring them, as in the steady state: under a layout there is no
 * cold start.
 *
 * Locking: everything here runs with rt->mu held (the executor, the Swap
 * Executor's issue path, the boundary).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

int tsl__place_on(const tsl__runtime *rt) {
    return rt->cur && rt->cur->p->n_blocks > 0 && rt->b->iface->alloc_at && rt->place_seq &&
           !rt->o.online_placement;
}

tsl_status tsl__place_init(tsl__runtime *rt) {
    rt->place_seq = calloc((size_t)rt->nt + (size_t)rt->no + 1, sizeof *rt->place_seq);
    rt->place_start = calloc((size_t)rt->nt + 1, 1);
    if (!rt->place_seq || !rt->place_start)
        return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for the layout's counters");
    return TSL_OK;
}

void tsl__place_free(tsl__runtime *rt) {
    free(rt->place_seq);
    free(rt->place_start);
    rt->place_seq = NULL;
    rt->place_start = NULL;
}

/* 1 if the plan releases persistent t across iterations (a release after
 * its last access): absent when an iteration starts. */
static int released_across(const tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    int32_t k = rt->acc_start[t + 1];
    int32_t last = k > rt->acc_start[t] ? rt->acc_ops[k - 1] : -1;
    for (int32_t x = pl->tev_start[t]; x < pl->tev_start[t + 1]; x++) {
        const tsl_event *ev = &pl->p->events[pl->tev_list[x]];
        if (ev->type == TSL_EV_RELEASE && ev->trigger >= last) return 1;
    }
    return 0;
}

void tsl__place_begin(tsl__runtime *rt) {
    if (!tsl__place_on(rt)) return;
    for (int32_t t = 0; t < rt->nt; t++)
        rt->place_seq[t] = rt->s->ptr[t] && tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind);
    for (int32_t i = 0; i < rt->no; i++) rt->place_seq[rt->nt + i] = 0;
    rt->place_online = 0;
}

/* Places a block of n bytes at `b`'s offset into *p. */
static tsl_status place_block(tsl__runtime *rt, const tsl_plan_block *b, size_t n, void **p) {
    if (!b || b->bytes != n) return TSL_ERR_UNSUPPORTED;
    tsl_status st = rt->b->iface->alloc_at(rt->b, b->offset, n, p);
    if (st != TSL_OK) tsl_clear_error(); /* expected: the caller waits or goes online */
    return st;
}

tsl_status tsl__place_tensor(tsl__runtime *rt, int32_t t, size_t n, void **p) {
    if (!tsl__place_on(rt) || rt->place_online) return TSL_ERR_UNSUPPORTED;
    return place_block(rt, tsl_plan_block_find(rt->cur->p, t, -1, rt->place_seq[t]), n, p);
}

tsl_status tsl__place_ws(tsl__runtime *rt, int32_t op, size_t n, void **p) {
    if (!tsl__place_on(rt) || rt->place_online || op < 0) return TSL_ERR_UNSUPPORTED;
    return place_block(rt, tsl_plan_block_find(rt->cur->p, -1, op, rt->place_seq[rt->nt + op]), n,
                       p);
}

void tsl__place_allocated(tsl__runtime *rt, int32_t t, int32_t ws_op) {
    if (!rt->place_seq) return;
    if (t >= 0) rt->place_seq[t]++;
    else if (ws_op >= 0) rt->place_seq[rt->nt + ws_op]++;
    if (rt->place_online) {
        rt->place_online = 0;
        rt->st.displaced++;
    }
}

void tsl__place_online(tsl__runtime *rt) { rt->place_online = 1; }

tsl_status tsl__place_persistent(tsl__runtime *rt) {
    if (!tsl__place_on(rt)) return TSL_OK;
    for (int32_t t = 0; t < rt->nt; t++) {
        rt->place_start[t] = tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind) &&
                             tsl_plan_block_find(rt->cur->p, t, -1, 0) && !released_across(rt, t);
        if (rt->s->ptr[t] && tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind)) {
            tsl_status st = tsl__rt_park(rt, t);
            if (st != TSL_OK) return st;
        }
    }
    /* only those the plan keeps resident at the start: the others come back
     * through the plan's own swap-ins, at their places, as in the steady
     * state (no cold start under a layout) */
    return tsl__rt_restore_some(rt, rt->place_start, 0);
}

tsl_status tsl__place_start_ptr(tsl__runtime *rt, int32_t t, size_t n, void **p) {
    if (!tsl__place_on(rt) || !rt->place_start[t]) return TSL_ERR_UNSUPPORTED;
    return place_block(rt, tsl_plan_block_find(rt->cur->p, t, -1, 0), n, p);
}
