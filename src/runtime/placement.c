/*
 * placement.c - the runtime follows the plan's layout (docs/SCHEDULING.md,
 * "Layout"; ARCHITECTURE.md, "Placement"): under a plan with a layout that
 * fits the arena, and a backend that can place (alloc_at), every block the
 * iteration allocates goes to the offset the layout gives it, so that the
 * device holds what the plan predicts - its footprint - and no more.
 *
 * Names. Blocks are named as the layout names them (tensile/plan.h),
 * counted from the iteration's start: a tensor's k-th residency, an op's
 * k-th workspace. A counter per tensor and per op counts the plan's own
 * allocations as the iteration meets them - a generation, the data load,
 * a planned swap-in, a recomputation, a workspace - whether the runtime
 * really allocates or finds the tensor still resident (a swap-in with
 * nothing to do, a recomputation skipped: tsl__place_skip), so that a
 * deviation costs no later block its name. A persistent tensor the plan
 * keeps resident at time 0 is in residency 0 there (its counter starts at
 * 1); which ones those are is read off the layout itself: they have one
 * block more than the plan has swap-ins for them. Allocations that are
 * not the plan's (a passive swap-in, an eviction's return: TSL__A_PASSIVE)
 * do not count: they go to the place of the residency the plan has the
 * tensor in now (the last one started and not released), which the layout
 * keeps for it over that whole residency; if the plan has it absent, they
 * go online. Workspaces of size 0 have no block. A recomputation's block
 * is its producer's workspace with the scratch of the producer's other
 * outputs after it (remat.h, tsl__replay_block), placed as one.
 *
 * A held place. alloc_at answers TSL_ERR_BUSY when a live block overlaps
 * the place: a release waiting for its swap-out, a block of a kernel still
 * in flight, or something that is not where the plan has it (a block
 * placed online, a tensor kept past its planned release). The executor
 * then waits or moves the holder (executor.c, wait_for_place): kernels in
 * flight retired first, a holder being copied waited for, a movable
 * holder evicted (tsl__place_holder names it: where a block lies is its
 * pointer less the arena's base, which the first placement reveals),
 * frees under way waited for; only when nothing helps - the holder is used
 * by the running item - is the block allocated online, counted as
 * displaced. Waiting is a stall like any wait for memory; it never makes
 * the footprint grow. The Swap Executor's swap-ins wait for memory as
 * before (retried after every free, taken over by compute at their op).
 *
 * Persistent tensors (tsl__place_settle, at every iteration's start under
 * a layout, nothing in flight): those the plan keeps resident at time 0
 * must be at their residency-0 places, the others absent. A resident one
 * away from its place (session init, a new plan's installation, a
 * displacement in the last iteration) is moved there by a device-to-device
 * copy when its place is free (repeatedly: each move frees a block another
 * may want); what cannot move is parked on the host (a current host copy,
 * its block freed) and brought back at its place. Those the plan keeps
 * absent at the start are parked: the plan's own swap-ins bring them, as in
 * the steady state, so under a layout there is no cold start. This keeps
 * the ledger exact: every move is an allocation at the place and a free of
 * the old block, between iterations, before the ledger's peaks are reset;
 * leaving tensors away from their places instead would displace the
 * iteration's blocks and let the footprint grow. The first installation
 * usually moves everything by device copies; a tensor already at its place
 * stays (its place is known once the base is).
 *
 * Locking: everything here runs with rt->mu held (the executor, the Swap
 * Executor's issue path, the boundary).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

int tsl__place_on(const tsl__runtime *rt) {
    return rt->cur && rt->place_ok && rt->place_seq && !rt->o.online_placement;
}

tsl_status tsl__place_init(tsl__runtime *rt) {
    rt->place_seq = calloc((size_t)rt->nt + (size_t)rt->no + 1, sizeof *rt->place_seq);
    rt->place_start = calloc((size_t)rt->nt + 1, 1);
    rt->place_gone = calloc((size_t)rt->nt + 1, 1);
    if (!rt->place_seq || !rt->place_start || !rt->place_gone)
        return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for the layout's counters");
    return TSL_OK;
}

void tsl__place_free(tsl__runtime *rt) {
    free(rt->place_seq);
    free(rt->place_start);
    free(rt->place_gone);
    rt->place_seq = NULL;
    rt->place_start = NULL;
    rt->place_gone = NULL;
}

static size_t bytes_of(const tsl__runtime *rt, int32_t t) {
    return tsl_graph_tensor(rt->g, t)->nbytes;
}

static int persistent(const tsl__runtime *rt, int32_t t) {
    return tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind);
}

/* n rounded up to the arena's alignment (0 takes one unit, as alloc.h). */
static size_t aligned(const tsl__runtime *rt, size_t n) {
    size_t a = rt->place_align;
    return n == 0 ? a : (n + a - 1) / a * a;
}

void tsl__place_install(tsl__runtime *rt) {
    rt->place_ok = 0;
    if (!rt->cur || !rt->place_seq || !rt->b->iface->alloc_at) return;
    const tsl_plan *p = rt->cur->p;
    tsl_alloc_stats ms;
    rt->b->iface->mem_stats(rt->b, &ms);
    rt->place_align = ms.alignment ? ms.alignment : TSL_ALLOC_ALIGN;
    /* a layout for a coarser alignment places fine; one for a finer
     * alignment, or larger than the arena, is not followed (online) */
    rt->place_ok = p->n_blocks > 0 && p->layout_align > 0 &&
                   p->layout_align % rt->place_align == 0 && p->predicted_footprint <= ms.capacity;
    const tsl__rt_plan *pl = rt->cur;
    for (int32_t t = 0; t < rt->nt; t++) {
        rt->place_start[t] = 0;
        if (!rt->place_ok || !persistent(rt, t)) continue;
        int32_t blocks = 0, swap_ins = 0;
        while (tsl_plan_block_find(p, t, -1, blocks)) blocks++;
        for (int32_t x = pl->tev_start[t]; x < pl->tev_start[t + 1]; x++)
            swap_ins += p->events[pl->tev_list[x]].type == TSL_EV_SWAP_IN;
        rt->place_start[t] = blocks > swap_ins; /* residency 0 from time 0 */
    }
}

void tsl__place_begin(tsl__runtime *rt) {
    if (!tsl__place_on(rt)) return;
    for (int32_t t = 0; t < rt->nt; t++) {
        rt->place_seq[t] = rt->place_start[t];
        rt->place_gone[t] = 0;
    }
    for (int32_t i = 0; i < rt->no; i++) rt->place_seq[rt->nt + i] = 0;
}

/* The block of the allocation (t, op, how), or NULL (online). */
static const tsl_plan_block *block_of(const tsl__runtime *rt, int32_t t, int32_t op, int how) {
    if (!tsl__place_on(rt) || (how & TSL__A_ONLINE)) return NULL;
    const tsl_plan *p = rt->cur->p;
    if (t < 0) return op >= 0 ? tsl_plan_block_find(p, -1, op, rt->place_seq[rt->nt + op]) : NULL;
    int32_t k = rt->place_seq[t];
    if (how & TSL__A_PASSIVE) { /* the residency the plan has it in now */
        if (k == 0 || rt->place_gone[t]) return NULL;
        k--;
    }
    return tsl_plan_block_find(p, t, -1, k);
}

/* Allocates n bytes at b's offset into *p (learning the arena's base). */
static tsl_status place_block(tsl__runtime *rt, const tsl_plan_block *b, size_t n, void **p) {
    if (!b || b->bytes != n) return TSL_ERR_UNSUPPORTED;
    tsl_status st = rt->b->iface->alloc_at(rt->b, b->offset, n, p);
    if (st != TSL_OK) {
        tsl_clear_error(); /* expected: the caller waits or goes online */
        return st;
    }
    uintptr_t base = (uintptr_t)*p - b->offset;
    TSL_ASSERT(!rt->place_base || rt->place_base == base); /* backend.h: one base */
    rt->place_base = base;
    return TSL_OK;
}

tsl_status tsl__place_at(tsl__runtime *rt, int32_t t, int32_t op, size_t n, int how, void **p) {
    return place_block(rt, block_of(rt, t, op, how), n, p);
}

void tsl__place_allocated(tsl__runtime *rt, int32_t t, int32_t op, int how, int displaced) {
    if (!tsl__place_on(rt)) return;
    if (!(how & TSL__A_PASSIVE)) tsl__place_skip(rt, t, op);
    if (displaced) rt->st.displaced++;
}

void tsl__place_skip(tsl__runtime *rt, int32_t t, int32_t op) {
    if (!tsl__place_on(rt)) return;
    if (t >= 0) {
        rt->place_seq[t]++;
        rt->place_gone[t] = 0;
    } else if (op >= 0) {
        rt->place_seq[rt->nt + op]++;
    }
}

void tsl__place_undo(tsl__runtime *rt, int32_t t) {
    if (tsl__place_on(rt) && rt->place_seq[t] > 0) rt->place_seq[t]--;
}

void tsl__place_released(tsl__runtime *rt, int32_t t) {
    if (tsl__place_on(rt)) rt->place_gone[t] = 1;
}

/* Where resident t's block starts in the arena (SIZE_MAX: not known). */
static size_t offset_of(const tsl__runtime *rt, int32_t t) {
    uintptr_t a = (uintptr_t)rt->s->ptr[t];
    return rt->place_base && a >= rt->place_base ? (size_t)(a - rt->place_base) : SIZE_MAX;
}

int32_t tsl__place_holder(const tsl__runtime *rt, int32_t t, int32_t op, int how) {
    const tsl_plan_block *b = block_of(rt, t, op, how);
    if (!b || !rt->place_base) return -1;
    size_t lo = b->offset, hi = lo + aligned(rt, b->bytes);
    int32_t best = -1;
    int best_rank = -1;
    for (int32_t x = 0; x < rt->nt; x++) {
        size_t off = rt->s->ptr[x] ? offset_of(rt, x) : SIZE_MAX;
        if (off == SIZE_MAX || off >= hi || off + aligned(rt, bytes_of(rt, x)) <= lo) continue;
        const tsl__res *r = &rt->res[x];
        /* movable first, then one whose copy will end, then the others */
        int rank = tsl__rt_movable(rt, x) ? 2 : (r->in_x >= 0 || r->out_n > 0) ? 1 : 0;
        if (rank > best_rank) {
            best = x;
            best_rank = rank;
        }
    }
    return best;
}

int tsl__place_at_next(const tsl__runtime *rt, int32_t t) {
    const tsl_plan_block *b = block_of(rt, t, -1, 0);
    size_t off = rt->s->ptr[t] ? offset_of(rt, t) : SIZE_MAX;
    return !b || off == SIZE_MAX || off == b->offset;
}

tsl_status tsl__place_start_ptr(tsl__runtime *rt, int32_t t, size_t n, void **p) {
    if (!tsl__place_on(rt) || !rt->place_start[t]) return TSL_ERR_UNSUPPORTED;
    return place_block(rt, tsl_plan_block_find(rt->cur->p, t, -1, 0), n, p);
}

/* ---- persistent tensors at the iteration's start ------------------------------- */

/* 1 if resident t lies at its residency-0 place. */
static int at_home(const tsl__runtime *rt, int32_t t) {
    const tsl_plan_block *b = tsl_plan_block_find(rt->cur->p, t, -1, 0);
    return b && offset_of(rt, t) == b->offset;
}

/* Moves resident t to its residency-0 place by a device-to-device copy on
 * the compute stream (nothing is in flight). TSL_OK; TSL_ERR_BUSY or
 * TSL_ERR_OOM (a fault) with t where it was; a copy's error. */
static tsl_status move_home(tsl__runtime *rt, int32_t t) {
    size_t n = bytes_of(rt, t);
    void *dst = NULL;
    tsl_status st = tsl__place_start_ptr(rt, t, n, &dst);
    if (st != TSL_OK) return st;
    tsl_dev_event *done = NULL;
    st = tsl_backend_copy_async(rt->b, TSL_STREAM_COMPUTE, dst, rt->s->ptr[t], n, &done);
    if (st == TSL_OK) st = rt->b->iface->event_sync(rt->b, done);
    rt->b->iface->event_release(rt->b, done);
    if (st != TSL_OK) {
        rt->b->iface->free(rt->b, dst);
        return st;
    }
    rt->b->iface->free(rt->b, rt->s->ptr[t]); /* `used` does not change */
    rt->s->ptr[t] = dst;
    rt->place_moves++;
    return TSL_OK;
}

/* Brings absent t back from its host copy at its residency-0 place. If
 * the place cannot be had, t stays on the host (the executor swaps it in
 * at its access, to that place): TSL_OK all the same; an upload's error. */
static tsl_status restore_home(tsl__runtime *rt, int32_t t) {
    size_t n = bytes_of(rt, t);
    TSL_ASSERT(tsl__rt_host_valid(rt, t)); /* never freed without a host copy */
    void *p = NULL;
    if (tsl__place_start_ptr(rt, t, n, &p) != TSL_OK) return TSL_OK;
    tsl_status st = tsl_backend_upload(rt->b, p, rt->res[t].host, n);
    if (st != TSL_OK) {
        rt->b->iface->free(rt->b, p);
        return st;
    }
    rt->s->ptr[t] = p;
    rt->res[t].readable = 1;
    rt->used += n;
    return TSL_OK;
}

tsl_status tsl__place_settle(tsl__runtime *rt) {
    if (!tsl__place_on(rt)) return TSL_OK;
    tsl_status st = TSL_OK;
    /* absent at the start in the plan: parked (its swap-ins bring it) */
    for (int32_t t = 0; t < rt->nt && st == TSL_OK; t++)
        if (rt->s->ptr[t] && persistent(rt, t) && !rt->place_start[t]) st = tsl__rt_park(rt, t);
    /* away from its place: moved on the device while places come free */
    for (int moved = 1; moved && st == TSL_OK;) {
        moved = 0;
        for (int32_t t = 0; t < rt->nt && st == TSL_OK; t++) {
            if (!rt->s->ptr[t] || !rt->place_start[t] || at_home(rt, t)) continue;
            tsl_status m = move_home(rt, t);
            if (m == TSL_OK) moved = 1;
            else if (m != TSL_ERR_BUSY && m != TSL_ERR_OOM && m != TSL_ERR_UNSUPPORTED) st = m;
        }
    }
    /* what could not move (its place held by itself or a cycle): through
     * the host; then every absent one back at its place */
    for (int32_t t = 0; t < rt->nt && st == TSL_OK; t++)
        if (rt->s->ptr[t] && rt->place_start[t] && !at_home(rt, t)) st = tsl__rt_park(rt, t);
    for (int32_t t = 0; t < rt->nt && st == TSL_OK; t++)
        if (!rt->s->ptr[t] && rt->place_start[t]) st = restore_home(rt, t);
    return st;
}
