/*
 * executor.c - the Executor (paper III-D): one training iteration that
 * follows the installed plan.
 *
 * At the boundary a plan set since the last step is installed. Under a
 * plan whose layout is followed (placement.c) every iteration starts with
 * the persistent tensors as the plan has them at time 0: those it keeps
 * resident at their residency-0 places (moved there on the device, or
 * through the host), the others parked on the host for the plan's
 * swap-ins - no cold start. Otherwise the first iteration of a plan starts
 * with every persistent tensor resident (cold start): those the plan
 * releases across iterations that are resident at an iteration's start
 * (cold start, or after an evaluation) are marked cold and given a host
 * copy: they are dropped first when memory runs short, and in strict mode
 * before the iteration starts if the load is above the limit, so that the
 * limit holds from the first iteration.
 *
 * Then the data is loaded (the INPUT and LABEL tensors' generating access,
 * op -1) and, for each item of the executed sequence (the ops, with the
 * plan's recomputations inserted before the op each precedes):
 *
 *  1. its inputs are made resident: a swap-in in flight is waited for
 *     (stall); a planned swap-in not issued yet is issued now (real time)
 *     or waited for (virtual clock); one waiting for memory is taken over;
 *     a missing input with no swap-in coming is swapped in passively;
 *  2. its outputs are allocated, and its workspace block - under a layout
 *     each at its planned place; a place still held makes compute wait
 *     (wait_for_place: kernels in flight retired, a holder's copy waited
 *     for, a movable holder evicted, frees under way waited for) and only
 *     a holder that cannot go (used by this item) sends the block online,
 *     counted as displaced; when memory runs out (the arena, or in strict
 *     mode the limit) the executor makes room (make_room, the one eviction
 *     loop): it drops a cold-start tensor the plan has absent (free: its
 *     host copy is valid), retires the oldest kernel in flight (its
 *     frees), waits for frees already under way (releases waiting for
 *     their swap-outs, evictions being copied), then (DTR on: remat_online.c)
 *     frees a dead tensor or drops DTR's victim, then evicts the tensor the
 *     eviction policy chooses (by default the one used farthest in the
 *     future) - where the arena has the bytes but not in one block, among
 *     the tensors whose eviction opens it - and retries; with nothing to
 *     evict it waits for the copies under way (a landed swap-in can be
 *     evicted, a finished swap-out frees its block or a host buffer). If
 *     nothing is left to evict but the arena's free bytes would hold the
 *     request (it is fragmented), everything that can move is moved out
 *     and the item is retried once; an allocation that still fails ends the step with
 *     TSL_ERR_OOM and a message naming the op, the tensor and the sizes;
 *  3. the kernel is launched between two events on the compute stream (a
 *     recomputation re-runs the producer into a fresh block; its other
 *     outputs go to scratch in its block (its producer's workspace, then
 *     the scratch: remat.h, tsl__replay_block), so that in-place state such
 *     as batch-norm running statistics is not updated twice; an in-place input
 *     starts as a device-to-device copy of its value);
 *  4. once it is enqueued, its block (workspace, scratch) is freed and
 *     activity analysis frees the tensors whose last use it was (on the
 *     virtual clock: at its end); once its end event has completed the item
 *     is retired: its latency is sampled from its events, the plan's
 *     releases after it are applied, and the events it triggers go to the
 *     Swap Executor with its end time.
 *
 * Asynchrony. launch_op may return before the kernel ran (tensile/backend.h).
 * The executor never assumes otherwise. Every kernel runs on the compute
 * stream in launch order, so memory a kernel used last is freed when it is
 * enqueued (later kernels reuse it after it in stream order; a copy into a
 * fresh block first makes its stream wait for the last kernel enqueued,
 * rt->last_compute, swap_executor.c): the load follows the plan however
 * late the kernels run. Everything else that needs a kernel done - copying
 * what it wrote, reading the loss, timing it, applying the releases and
 * triggering the events anchored on it - happens when its end event has
 * completed, in launch order (the in-flight queue, inflight.h). After each
 * launch the completed kernels are retired; a tensor used by a kernel in
 * flight is busy (never evicted, released or dropped); when memory or an
 * input is missing, the oldest kernel in flight is waited for first; before
 * a kernel writes a tensor in place, the kernels whose retirement would copy
 * it out are retired; a recomputation first retires every kernel in flight
 * (the releases it follows). On a synchronous backend every kernel has
 * completed when it is retired right after its launch.
 *
 * At the end the executor waits for the iteration's events (their copies
 * must end within the iteration), frees what is left of the iteration's
 * tensors and reports the latency estimates at the boundary (the owner's
 * callback, outside the lock, decides whether to replan).
 *
 * Stalls: each time compute waits for a copy, an eviction or memory, with
 * the time waited (real time: the time the executor spent blocked on
 * copies and frees; virtual clock: the op's start minus the end of the
 * previous item, as the simulator counts it), and the wait for the events
 * at the iteration's end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

/* A wait shorter than this (µs) is no wait: the simulator's tolerance. */
#define EPS_US 1e-6

typedef struct step {
    tsl__runtime *rt;
    tsl_session *s;
    const int32_t *y;
    tsl_step_stats *st;
    tsl_status late;        /* the first error met retiring a kernel (its failure) */
    double order_ready;     /* end of the previous item (µs; real time: of the last retired) */
    double waited_us;       /* real time: blocked in the current item's waits */
    double stall_us;        /* this iteration */
    int fragmented;         /* the last failure: the arena had the bytes, not in one block */
    int hold;               /* retrying after a defragmentation: no swap-in allocates until
                               the item's own tensors are placed */
} step;

/* Item k: the plan's executed sequence (k >= 0), or DTR's rematerialisation
 * of tensor -1 - k (remat_online.c). */
static const tsl__rt_item *item_at(const tsl__runtime *rt, int32_t k) {
    return k >= 0 ? &rt->cur->items[k] : tsl__dtr_item(rt, -1 - k);
}

/* ---- waiting ------------------------------------------------------------------------- */

/* One wait for any change (see tsl__se_wait); real time accumulates the
 * time blocked. Returns 0 when nothing can change any more (virtual clock:
 * the agenda is empty). */
static int wait_step(step *S) {
    tsl__runtime *rt = S->rt;
    if (rt->virtual_clock) return tsl__se_wait(rt);
    double t0 = tsl_backend_now_ms();
    tsl__se_wait(rt);
    S->waited_us += (tsl_backend_now_ms() - t0) * 1e3;
    return 1;
}

static tsl_status oom(tsl__runtime *rt, const char *what, const char *name, size_t bytes) {
    tsl_alloc_stats ms;
    rt->b->iface->mem_stats(rt->b, &ms);
    const char *op = rt->pos >= 0 ? tsl_graph_op(rt->g, rt->pos)->name : "the data load";
    return tsl_fail(TSL_ERR_OOM,
                    "device out of memory at '%s': cannot allocate %s '%s' of %zu bytes with "
                    "nothing left to evict; load %zu bytes, limit %zu of %zu bytes, largest "
                    "free block %zu bytes",
                    op, what, name, bytes, ms.load, rt->limit, ms.capacity, ms.largest_free);
}

/* 1 if the arena's free bytes would hold n bytes, in one block or not. */
static int arena_has(tsl__runtime *rt, size_t n) {
    tsl_alloc_stats ms;
    rt->b->iface->mem_stats(rt->b, &ms);
    size_t need = (n + TSL_ALLOC_ALIGN - 1) / TSL_ALLOC_ALIGN * TSL_ALLOC_ALIGN;
    return ms.free_bytes >= (need ? need : TSL_ALLOC_ALIGN);
}

static tsl_status retire_oldest(step *S, int wait);

/* One way to make room (see the head of the file): 1 if something was done
 * or memory may be freed by waiting, 0 if nothing is left to try. need > 0:
 * the arena has the bytes but not in one block of `need` (fragmented):
 * evictions that open such a block come first. */
static int make_room(step *S, size_t need) {
    tsl__runtime *rt = S->rt;
    if (tsl__rt_drop_cold(rt)) return 1; /* the plan has it absent: free */
    if (rt->inflight.n > 0) {             /* a kernel in flight: its frees */
        tsl_status rc = retire_oldest(S, 1);
        if (rc != TSL_OK && S->late == TSL_OK) S->late = rc;
        return 1;
    }
    if (tsl__rt_frees_pending(rt) && wait_step(S)) return 1;
    int dead;
    int32_t d = tsl__dtr_victim(rt, need, &dead); /* DTR (opts.remat): dropped, no copy */
    if (d >= 0) {
        tsl__dtr_drop(rt, d, dead);
        return 1;
    }
    int32_t v = tsl__rt_pick_victim(rt, need);
    if (v >= 0 && tsl__rt_evict(rt, v)) return 1;
    /* nothing to evict now, but a copy under way changes that: a swap-in
     * that lands makes its tensor evictable, a swap-out's end frees its
     * block or the host buffer an eviction's copy needs */
    return rt->xf_inflight > 0 && wait_step(S);
}

/* The planned place of the allocation (t, ws_op, how) is held
 * (placement.c): waits for its holder to go or moves it - the oldest
 * kernel in flight retired (its blocks, the releases after it, its pins),
 * a holder being copied waited for, a holder whose planned release waits
 * for a swap-out still queued has that swap-out issued now (the plan's
 * own copy, late: waited for, not an eviction), a movable holder evicted,
 * frees under way waited for (where the holder is not known: a cold-start tensor
 * dropped) - and returns 1, or 0 when nothing can free the place (the
 * holder is used by the running item): the block then goes online. */
static int wait_for_place(step *S, int32_t t, int32_t ws_op, int how) {
    tsl__runtime *rt = S->rt;
    rt->place_waits++;
    if (rt->inflight.n > 0) {
        tsl_status rc = retire_oldest(S, 1);
        if (rc != TSL_OK && S->late == TSL_OK) S->late = rc;
        return 1;
    }
    int32_t h = tsl__place_holder(rt, t, ws_op, how);
    if (h >= 0) {
        const tsl__res *r = &rt->res[h];
        if (r->dying || r->in_x >= 0 || r->out_n > 0) return wait_step(S); /* its copy ends */
        if (tsl__se_take_over_swap_out(rt, h)) return 1; /* late: its copy starts now */
        if (tsl__rt_movable(rt, h)) return tsl__rt_evict(rt, h);
    }
    if (tsl__rt_frees_pending(rt) && wait_step(S)) return 1;
    return h < 0 && tsl__rt_drop_cold(rt);
}

/* Allocates tensor t (t >= 0), or a raw block of n bytes into *blk (t <
 * 0: the workspace of op ws_op, or scratch with ws_op -1): at its planned
 * place under a layout (`how`: TSL__A_PASSIVE for an allocation that is not
 * the plan's), waiting while the place is held and going online when
 * nothing can free it; makes room and retries until it fits (see the head
 * of the file). */
static tsl_status acquire(step *S, int32_t t, int32_t ws_op, size_t n, int how, void **blk) {
    tsl__runtime *rt = S->rt;
    tsl_status rc = TSL_OK;
    int retried = 0;
    rt->compute_wants_mem = 1;
    for (;;) {
        tsl_status a = t >= 0 ? tsl__rt_try_alloc(rt, t, how)
                              : tsl__rt_try_alloc_raw(rt, ws_op, n, how, blk);
        if (a == TSL_OK) break;
        if (a == TSL_ERR_BUSY) {
            if (!wait_for_place(S, t, ws_op, how)) how |= TSL__A_ONLINE; /* displaced */
            continue;
        }
        if (rt->async_err != TSL_OK) {
            rc = tsl__rt_async_error(rt);
            break;
        }
        if (S->late != TSL_OK) {
            rc = S->late;
            break;
        }
        size_t b = t >= 0 ? tsl_graph_tensor(rt->g, t)->nbytes : n;
        if (make_room(S, rt->used + b <= rt->limit && arena_has(rt, b) ? b : 0)) continue;
        if (!retried) { /* an injected fault fails one allocation only */
            retried = 1;
            continue;
        }
        S->fragmented = rt->used + b <= rt->limit && arena_has(rt, b);
        rc = t >= 0 ? oom(rt, tsl_kind_name(tsl_graph_tensor(rt->g, t)->kind),
                          tsl_graph_tensor(rt->g, t)->name, b)
                    : oom(rt, "workspace", "block", n);
        break;
    }
    if (!S->hold) {
        rt->compute_wants_mem = 0;
        tsl__se_retry_wmem(rt);
    }
    return rc;
}

/* ---- inputs and outputs ---------------------------------------------------------------- */

static tsl_status run_item(step *S, int32_t k);

/* Regenerates t, which DTR dropped (remat_online.c), by re-running its
 * producer (run_item of its rematerialisation: its own dropped inputs are
 * regenerated first, recursively); the time the current item waited so far
 * stays its own. */
static tsl_status rematerialise(step *S, int32_t t) {
    double waited = S->waited_us;
    tsl_status rc = run_item(S, -1 - t);
    S->waited_us = waited;
    return rc;
}

/* Makes input t resident and readable (see the head of the file). */
static tsl_status ensure_input(step *S, int32_t t) {
    tsl__runtime *rt = S->rt;
    tsl__res *r = &rt->res[t];
    int no_plan = 0; /* the planned swap-in will not come: go passive */
    for (;;) {
        if (rt->async_err != TSL_OK) return tsl__rt_async_error(rt);
        if (rt->s->ptr[t] && r->readable) {
            /* (a release waiting for a swap-out of t stays: the plan frees t
             * when that copy ends, after this read - and not while a kernel
             * still uses it: the release keeps a busy tensor) */
            r->dying = 0;
            r->cold = 0;
            return TSL_OK;
        }
        if (rt->s->ptr[t] && r->in_x >= 0) { /* copy in flight */
            if (!wait_step(S)) return tsl_fail(TSL_ERR_INTERNAL, "runtime: a copy never ended");
            continue;
        }
        if (rt->s->ptr[t])
            return tsl_fail(TSL_ERR_INTERNAL, "runtime: input '%s' of op '%s' is being generated",
                            tsl_graph_tensor(rt->g, t)->name, tsl_graph_op(rt->g, rt->pos)->name);
        if (rt->inflight.n > 0) { /* its swap-in may be triggered by a kernel in flight */
            tsl_status rc = retire_oldest(S, 1);
            if (rc != TSL_OK) return rc;
            continue;
        }
        int32_t e = no_plan ? -1 : tsl__se_pending_swap_in(rt, t);
        if (e >= 0 && rt->ev_state[e] == TSL__EV_WMEM) { /* take it over */
            tsl__se_set_state(rt, e, TSL__EV_RUN);
            tsl_status rc = acquire(S, t, -1, 0, 0, NULL);
            if (rc != TSL_OK) {
                tsl__se_ev_done(rt, e);
                return rc;
            }
            if (tsl__se_copy(rt, t, 1, TSL__X_PLANNED, e, tsl_graph_tensor(rt->g, t)->nbytes) < 0) {
                tsl__rt_free_block(rt, t);
                tsl__se_ev_done(rt, e);
                no_plan = 1;
            } else {
                rt->st.swaps_in++;
            }
            continue;
        }
        if (e >= 0 && rt->ev_state[e] == TSL__EV_SCHED && !rt->virtual_clock) {
            tsl__se_swap_in(rt, e); /* due later: issue it now */
            continue;
        }
        if (e >= 0) {
            if (rt->ev_state[e] == TSL__EV_WAIT && tsl__se_waits_on_idle(rt, e)) no_plan = 1;
            else if (!wait_step(S)) no_plan = 1;
            continue;
        }
        if (tsl__dtr_gone(rt, t)) { /* DTR: its producer again */
            tsl_status rc = rematerialise(S, t);
            if (rc != TSL_OK) return rc;
            continue;
        }
        if (!tsl__rt_host_valid(rt, t))
            return tsl_fail(TSL_ERR_INTERNAL,
                            "runtime: tensor '%s' read by op '%s' is neither on the device nor "
                            "on the host",
                            tsl_graph_tensor(rt->g, t)->name, tsl_graph_op(rt->g, rt->pos)->name);
        tsl_status rc = acquire(S, t, -1, 0, TSL__A_PASSIVE, NULL); /* passive swap-in */
        if (rc != TSL_OK) return rc;
        if (tsl__se_copy(rt, t, 1, TSL__X_PASSIVE, -1, tsl_graph_tensor(rt->g, t)->nbytes) < 0) {
            tsl__rt_free_block(rt, t);
            return tsl_fail(TSL_ERR_OOM, "runtime: cannot copy '%s' back to the device",
                            tsl_graph_tensor(rt->g, t)->name);
        }
        rt->st.passive_swaps++;
    }
}

/* 1 if a swap-out of t is triggered by an op launched but not retired
 * (its copy will read t's value before this write). */
static int swap_out_behind(const tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_SWAP_OUT && rt->ev_state[x] == TSL__EV_IDLE &&
            pl->p->events[x].trigger < rt->pos)
            return 1;
    }
    return 0;
}

/* Makes room for writing output t: allocated if absent (`how`: 0 for the
 * plan's allocations, TSL__A_PASSIVE for DTR's); in real time no
 * copy may read or write its block while the kernel writes it (swap-outs
 * planned before this write are triggered - their kernels retired - and
 * issued now). */
static tsl_status prepare_output(step *S, int32_t t, int how) {
    tsl__runtime *rt = S->rt;
    tsl__res *r = &rt->res[t];
    if (!rt->s->ptr[t]) return acquire(S, t, -1, 0, how, NULL);
    r->dying = 0;
    r->cold = 0;
    if (rt->virtual_clock) return TSL_OK;
    while (rt->inflight.n > 0 && swap_out_behind(rt, t)) {
        tsl_status rc = retire_oldest(S, 1);
        if (rc != TSL_OK) return rc;
    }
    const tsl__rt_plan *pl = rt->cur;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_SWAP_OUT && rt->ev_state[x] == TSL__EV_SCHED)
            tsl__se_swap_out(rt, x);
    }
    while (r->out_n > 0 || r->in_x >= 0) {
        if (rt->async_err != TSL_OK) return tsl__rt_async_error(rt);
        wait_step(S);
    }
    return TSL_OK;
}

/* ---- one item ------------------------------------------------------------------------------ */

/* Takes back an allocation of t that was never written (an item that
 * failed after placing it): the block freed and its planned place's
 * counter back, so that the next allocation of t is the same one again. */
static void unallocate(tsl__runtime *rt, int32_t t) {
    tsl__rt_free_block(rt, t);
    tsl__place_undo(rt, t);
}

/* Marks op's tensors (and a recomputation's) used: +1 or -1. */
static void pin(tsl__runtime *rt, const tsl_op *op, int32_t extra, int d) {
    for (int j = 0; j < op->n_in; j++) rt->res[op->in[j]].busy += d;
    for (int j = 0; j < op->n_out; j++) rt->res[op->out[j]].busy += d;
    if (extra >= 0) rt->res[extra].busy += d;
}

/* Launches the kernel of item `it` into entry l (its workspace already in
 * l): an op into its outputs, or a recomputation of it->tensor by its
 * producer (other outputs into scratch in its block, l->ws; an in-place one
 * starts as a device-to-device copy of its current value). */
static tsl_status launch_item(step *S, const tsl__rt_item *it, tsl__launched *l) {
    tsl__runtime *rt = S->rt;
    tsl_backend *b = rt->b;
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    void *in[256], *out[TSL__MAX_OUT];
    TSL_ASSERT(op->n_in <= 256 && op->n_out <= TSL__MAX_OUT);
    for (int j = 0; j < op->n_in; j++) in[j] = rt->s->ptr[op->in[j]];
    tsl_status rc = TSL_OK;
    for (int j = 0; j < op->n_out && rc == TSL_OK; j++) {
        int32_t o = op->out[j];
        if (it->tensor < 0 || o == it->tensor) {
            out[j] = rt->s->ptr[o];
            continue;
        }
        /* scratch in the recomputation's block, after the workspace */
        out[j] = (char *)l->ws + tsl__replay_scratch_at(rt->cur->w, it->tensor, j);
        for (int k = 0; k < op->n_in && rc == TSL_OK; k++)
            if (op->in[k] == o) { /* in place: the kernel reads and writes the scratch */
                rc = b->iface->memcpy_async(b, TSL_STREAM_COMPUTE, out[j], rt->s->ptr[o],
                                            tsl_graph_tensor(rt->g, o)->nbytes);
                in[k] = out[j];
            }
    }
    void *ws = rt->cur->w->ops[it->op].workspace > 0 ? l->ws : NULL;
    tsl_run_ctx ctx = {.step = S->s->steps + 1, .training = 1,
                       .algo = tsl_plan_op_algo(rt->cur->p, it->op)}; /* recomputations too */
    if (rc != TSL_OK) return rc;
    /* the lock is released while enqueueing: on a synchronous backend the
     * kernel runs right here, and the Swap Executor's threads must go on
     * meanwhile (the item's tensors are busy: nobody touches them) */
    pthread_mutex_unlock(&rt->mu);
    rc = b->iface->event_record(b, TSL_STREAM_COMPUTE, &l->start);
    if (rc == TSL_OK) rc = b->iface->launch_op(b, rt->g, op, in, out, ws, &ctx);
    if (rc == TSL_OK && it->tensor < 0) rc = tsl__step_enqueued(S->s, it->op);
    if (rc == TSL_OK) rc = b->iface->event_record(b, TSL_STREAM_COMPUTE, &l->end);
    pthread_mutex_lock(&rt->mu);
    return rc;
}

/* Frees what entry l held (its block, events); with `sync`, its
 * kernel may still run: everything enqueued is waited for first. */
static void drop_entry(tsl__runtime *rt, tsl__launched *l, int sync) {
    if (sync) {
        rt->b->iface->synchronize(rt->b);
        tsl_clear_error();
    }
    tsl__rt_free_raw(rt, l->ws, l->ws_bytes);
    l->ws = NULL;
    rt->b->iface->event_release(rt->b, l->start);
    rt->b->iface->event_release(rt->b, l->end);
}

/* The memory item l used last goes back, once it is enqueued (real time:
 * only later kernels of the compute stream can touch those bytes before the
 * Swap Executor's copies wait for them, rt->last_compute) or once it ended
 * (virtual clock): its block (workspace, a recomputation's scratch), and for an op the tensors
 * whose last use it was (activity analysis). */
static void free_after_item(step *S, tsl__launched *l) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_item *it = item_at(rt, l->item);
    tsl__rt_free_raw(rt, l->ws, l->ws_bytes);
    l->ws = NULL;
    if (it->tensor >= 0) return;
    int nf;
    const tsl_tid *fl = tsl__liveness_after(&S->s->live_train, it->op, &nf);
    for (int j = 0; j < nf; j++) {
        if (!rt->s->ptr[fl[j]]) continue;
        tsl__rt_release_block(rt, fl[j]);
        tsl__se_cancel_releases(rt, fl[j]);
    }
}

/* Item l's kernel has completed and its time is [start, end] (µs in the
 * iteration): unpins its tensors, and for an op samples its latency, reads
 * the loss, applies the plan's releases after it and triggers its events
 * (step 4). Its memory went back already (free_after_item). */
static tsl_status retire_item(step *S, tsl__launched *l, double start, double end) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_item *it = item_at(rt, l->item);
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    int is_rc = it->tensor >= 0;
    if (rt->last_compute == l->end) rt->last_compute = NULL; /* the stream caught up */
    drop_entry(rt, l, 0);
    pin(rt, op, it->tensor, -1);
    tsl__rt_span sp = {.kind = is_rc ? 1 : 0, .op = it->op, .tensor = it->tensor,
                       .iter = rt->iter, .ready = rt->iter_base_us + l->launched_at,
                       .start = rt->iter_base_us + start, .end = rt->iter_base_us + end};
    tsl__log_span(rt, &sp);
    if (!rt->virtual_clock) S->order_ready = end;
    double us = rt->virtual_clock ? it->ne - it->ns : end - start;
    S->st->kernel_ms += us * 1e-3;
    if (is_rc) {
        if (l->item < 0) rt->st.remats++;
        else rt->st.recomputes++;
        return TSL_OK;
    }
    S->s->op_ms[it->op] = us * 1e-3;
    tsl__lat_sample(rt, it->op, us);
    tsl__step_after_op(S->s, it->op, S->y, INT64_MAX, S->st);
    tsl__se_trigger(rt, it->op, end);
    return TSL_OK;
}

/* Retires the oldest kernel in flight, in real time (its end event waited
 * for with the lock released when `wait`, else it must have completed). */
static tsl_status retire_oldest(step *S, int wait) {
    tsl__runtime *rt = S->rt;
    tsl__launched *o = tsl__inflight_oldest(&rt->inflight);
    tsl_status rc = TSL_OK;
    if (wait && !rt->b->iface->event_query(rt->b, o->end)) {
        tsl_dev_event *end = o->end;
        pthread_mutex_unlock(&rt->mu);
        rc = rt->b->iface->event_sync(rt->b, end);
        pthread_mutex_lock(&rt->mu);
    }
    tsl__launched l = tsl__inflight_pop(&rt->inflight);
    double start = tsl__rt_event_us(rt, l.start), end = tsl__rt_event_us(rt, l.end);
    tsl_status r2 = retire_item(S, &l, start, end);
    return rc != TSL_OK ? rc : r2;
}

/* Retires the kernels that have completed, oldest first. */
static tsl_status retire_done(step *S) {
    tsl__runtime *rt = S->rt;
    tsl_status rc = TSL_OK;
    while (rt->inflight.n > 0 && rc == TSL_OK &&
           rt->b->iface->event_query(rt->b, tsl__inflight_oldest(&rt->inflight)->end))
        rc = retire_oldest(S, 0);
    return rc;
}

/* Retires every kernel in flight. */
static tsl_status retire_all(step *S) {
    tsl_status rc = TSL_OK;
    while (S->rt->inflight.n > 0) {
        tsl_status r = retire_oldest(S, 1);
        if (rc == TSL_OK) rc = r;
    }
    return rc;
}

/* Virtual clock: processes the agenda up to the start of an item at `t`. */
static void run_to_start(tsl__runtime *rt, double t, int zero) {
    tsl__vc_run_before(rt, t, zero ? TSL__PH_ZERO : TSL__PH_START, 0);
}

static int32_t group_op(const tsl__rt_plan *pl, int32_t k) {
    return tsl__exec_item_group(pl->p, &pl->items[k]);
}

/* A planned wait for a swap-out: the first item of an op waits until the
 * releases preceding the op have freed their tensors. Their triggers are
 * retired first (the releases are then issued); in real time one due
 * later is issued now, and its swap-out with it, since compute waits for
 * them anyway. Returns TSL_OK, or the error met retiring a kernel. */
static tsl_status wait_releases(step *S, int32_t k) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_plan *pl = rt->cur;
    if (!pl->pre_start) return TSL_OK;
    int32_t op = group_op(pl, k);
    if (k > 0 && group_op(pl, k - 1) == op) return TSL_OK;
    for (int32_t q = pl->pre_start[op]; q < pl->pre_start[op + 1]; q++) {
        int32_t x = pl->pre_list[q];
        while (rt->ev_state[x] != TSL__EV_DONE) {
            if (rt->async_err != TSL_OK) return tsl__rt_async_error(rt);
            if (rt->inflight.n > 0) {
                tsl_status rc = retire_oldest(S, 1);
                if (rc != TSL_OK) return rc;
                continue;
            }
            if (!rt->virtual_clock && rt->ev_state[x] == TSL__EV_SCHED) {
                tsl__se_release(rt, x); /* due later: issue it now */
                continue;
            }
            if (!rt->virtual_clock && rt->ev_state[x] == TSL__EV_WAIT &&
                tsl__se_take_over_swap_out(rt, pl->p->events[x].tensor))
                continue;
            if (!wait_step(S)) break; /* nothing can change: it frees no more */
        }
    }
    return TSL_OK;
}

/* Runs item k of the executed sequence (steps 1-4 of the head of the
 * file). In real time the kernel is launched and whatever has completed is
 * retired; on the virtual clock the kernel is waited for and retired at
 * its virtual end, and S->order_ready advances to it. Returns TSL_OK, or
 * the error that ended the step (out of memory with nothing left to evict,
 * a kernel's failure, a lost tensor - a bug); the item's pins are dropped
 * on failure. */
static tsl_status run_item(step *S, int32_t k) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_plan *pl = rt->cur;
    const tsl__rt_item *it = item_at(rt, k);
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    int is_rc = it->tensor >= 0;
    int dtr = k < 0; /* DTR's rematerialisation: not the plan's, before the op at rt->pos */
    int how = dtr ? TSL__A_PASSIVE : 0;
    int zero = it->ne == it->ns;
    if (!dtr) rt->pos = is_rc ? pl->p->events[it->event].precede - 1 : it->op;
    if (rt->virtual_clock) run_to_start(rt, S->order_ready, zero);
    S->waited_us = 0.0;
    double prep_at = tsl__rt_now(rt);
    tsl_status rc0 = TSL_OK;
    /* a recomputation follows the plan's releases: those of the kernels in
     * flight are applied first */
    while (is_rc && !dtr && rt->inflight.n > 0 && rc0 == TSL_OK) rc0 = retire_oldest(S, 1);
    if (!dtr && rc0 == TSL_OK) rc0 = wait_releases(S, k);
    if (rc0 != TSL_OK) return rc0;
    pin(rt, op, it->tensor, 1);
    int skip = is_rc && rt->s->ptr[it->tensor] && rt->res[it->tensor].readable;
    tsl_status rc = TSL_OK;
    for (int j = 0; j < op->n_in && rc == TSL_OK && !skip; j++) rc = ensure_input(S, op->in[j]);
    /* virtual clock: the item is ready when its last input landed (it is
     * processed at that time point, before the item's start phase) */
    double ready = rt->vnow > S->order_ready ? rt->vnow : S->order_ready;
    if (rt->virtual_clock) run_to_start(rt, ready, zero);
    if (ready - S->order_ready <= EPS_US) ready = S->order_ready;
    double vmark = rt->vnow;
    int made = is_rc && !skip && rc == TSL_OK && !rt->s->ptr[it->tensor];
    if (is_rc && !skip && rc == TSL_OK) rc = prepare_output(S, it->tensor, how);
    for (int j = 0; j < op->n_out && rc == TSL_OK && !is_rc; j++)
        rc = prepare_output(S, op->out[j], 0);
    tsl__launched L;
    memset(&L, 0, sizeof L);
    L.item = k;
    /* a recomputation's block: its producer's workspace, then the scratch of
     * the producer's other outputs (remat.h) */
    size_t block = is_rc ? tsl__replay_block(pl->w, it->tensor) : pl->w->ops[it->op].workspace;
    L.ws_bytes = skip ? 0 : block;
    if (skip) { /* the plan's recomputation and its block, not needed: counted */
        tsl__place_skip(rt, it->tensor, -1);
        if (block > 0) tsl__place_skip(rt, -1, it->op);
    }
    if (rc == TSL_OK) rc = acquire(S, -1, it->op, L.ws_bytes, how, &L.ws);
    if (S->hold) { /* the item's tensors are placed: swap-ins may allocate again */
        S->hold = 0;
        rt->compute_wants_mem = 0;
        tsl__se_retry_wmem(rt);
    }
    if (rc != TSL_OK) {
        tsl__rt_free_raw(rt, L.ws, L.ws_bytes);
        pin(rt, op, it->tensor, -1);
        /* the recomputation's tensor, allocated here and never written,
         * goes again: a retry (defrag) or DTR regenerates it from scratch,
         * where left allocated it would read as being generated */
        if (made && rt->s->ptr[it->tensor] && !rt->res[it->tensor].readable)
            unallocate(rt, it->tensor);
        return rc;
    }
    double start = ready;
    if (rt->virtual_clock && rt->vnow != vmark) { /* waited for memory */
        start = rt->vnow;
        run_to_start(rt, start, zero);
    }
    if (!rt->virtual_clock) start = tsl__rt_now(rt);
    double stall = rt->virtual_clock ? start - S->order_ready : S->waited_us;
    if (stall > EPS_US) {
        rt->st.stalls++;
        rt->st.stall_ms += stall * 1e-3;
        S->stall_us += stall;
    }
    if (!is_rc)
        for (int j = 0; j < op->n_out; j++) rt->res[op->out[j]].gen++; /* host copies go stale */
    uint64_t seq_end = rt->virtual_clock ? tsl__vc_next_seq(rt) : 0;
    L.launched_at = prep_at;
    if (!skip) tsl__dtr_touch(rt, op, it->tensor);
    if (!skip) rc = launch_item(S, it, &L);
    if (rc != TSL_OK) {
        drop_entry(rt, &L, 1);
        pin(rt, op, it->tensor, -1);
        return rc;
    }
    /* written (or being written) on the compute stream: readable by the
     * kernels after it */
    if (is_rc) rt->res[it->tensor].readable = 1;
    else
        for (int j = 0; j < op->n_out; j++) rt->res[op->out[j]].readable = 1;
    if (rt->virtual_clock || skip) {
        if (!skip) rc = rt->b->iface->event_sync(rt->b, L.end);
        double end;
        if (rt->virtual_clock) {
            /* the workspace is held over the op's virtual duration */
            end = start == it->ns ? it->ne : start + (it->ne - it->ns);
            tsl__vc_run_before(rt, end, TSL__PH_DONE, seq_end);
            rt->vnow = end;
        } else {
            end = start;
        }
        S->order_ready = end;
        if (skip) { /* recomputation of a tensor still resident: nothing ran */
            pin(rt, op, it->tensor, -1);
            tsl__rt_free_raw(rt, L.ws, L.ws_bytes);
            return TSL_OK;
        }
        free_after_item(S, &L);
        tsl_status r2 = retire_item(S, &L, start, end);
        return rc != TSL_OK ? rc : r2;
    }
    rt->last_compute = L.end;
    free_after_item(S, &L);
    tsl__launched *q = tsl__inflight_push(&rt->inflight);
    if (!q) { /* cannot queue it: wait for it here */
        rc = rt->b->iface->event_sync(rt->b, L.end);
        double s0 = tsl__rt_event_us(rt, L.start), e0 = tsl__rt_event_us(rt, L.end);
        tsl_status r2 = retire_item(S, &L, s0, e0);
        return rc != TSL_OK ? rc : r2;
    }
    *q = L;
    return retire_done(S);
}

/* ---- the iteration ---------------------------------------------------------------------------- */

/* Nominal item times of the virtual clock: the plan's workload times, or
 * the override latencies (back to back). */
static void item_times(tsl__runtime *rt) {
    tsl__rt_plan *pl = rt->cur;
    tsl__exec_times(pl->w, pl->p, &rt->o.profile, rt->vlat, pl->items, pl->n_items, NULL);
}

/* Installs the pending plan (boundary). */
static tsl_status install(tsl__runtime *rt) {
    if (!rt->has_pending) return TSL_OK;
    tsl__rt_plan_free(rt->cur);
    rt->cur = rt->pending;
    rt->pending = NULL;
    rt->has_pending = 0;
    rt->st.plans_installed++;
    if (rt->cur) {
        rt->o.profile = rt->cur->profile; /* what the plan was verified against */
        uint8_t *es = realloc(rt->ev_state, (size_t)rt->cur->p->n_events + 1);
        if (!es) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
        rt->ev_state = es;
        tsl__se_reset_states(rt); /* nothing due yet */
    }
    tsl__place_install(rt);
    if (tsl__place_on(rt)) return TSL_OK; /* placed at the iteration's start (settle) */
    /* cold start: all persistent resident; under a plan what fits (those
     * that never fitted come in passively) */
    return tsl__rt_restore_some(rt, NULL, rt->cur != NULL);
}

/* Loads the batch: INPUT and LABEL allocated and filled, the unread ones
 * freed, the events triggered by the iteration start scheduled. */
static tsl_status load_data(step *S, const float *x, const int32_t *y) {
    tsl__runtime *rt = S->rt;
    tsl_session *s = S->s;
    rt->pos = -1;
    tsl_tid data[2] = {s->input, s->label};
    const void *src[2] = {x, y};
    for (int k = 0; k < 2; k++) {
        tsl_tid t = data[k];
        if (!s->ptr[t]) {
            tsl_status rc = acquire(S, t, -1, 0, 0, NULL);
            if (rc != TSL_OK) return rc;
        }
        tsl_status rc = tsl_backend_upload(rt->b, s->ptr[t], src[k], tsl_graph_tensor(rt->g, t)->nbytes);
        if (rc != TSL_OK) return rc;
        rt->res[t].gen++;
        rt->res[t].readable = 1;
    }
    int nf;
    const tsl_tid *fl = tsl__liveness_after(&s->live_train, -1, &nf);
    for (int j = 0; j < nf; j++)
        if (s->ptr[fl[j]]) tsl__rt_release_block(rt, fl[j]);
    tsl__se_trigger(rt, -1, 0.0);
    return TSL_OK;
}

/* Real time: the event all the iteration's device times are measured
 * from, recorded on the idle compute stream and waited for (nothing of the
 * previous iteration is in flight), with its time on the host's clock. */
static tsl_status anchor(tsl__runtime *rt) {
    if (rt->anchor) rt->b->iface->event_release(rt->b, rt->anchor);
    rt->anchor = NULL;
    tsl_status rc = rt->b->iface->event_record(rt->b, TSL_STREAM_COMPUTE, &rt->anchor);
    if (rc == TSL_OK) rc = rt->b->iface->event_sync(rt->b, rt->anchor);
    rt->anchor_us = (tsl_backend_now_ms() - rt->t0_ms) * 1e3;
    return rc;
}

/* Waits for the iteration's events and copies; events that can no longer
 * complete (a wrong plan under these latencies) are closed. */
static void wait_events(step *S) {
    tsl__runtime *rt = S->rt;
    for (;;) {
        int busy = rt->xf_inflight > 0;
        for (int32_t t = 0; t < rt->nt && !busy; t++) busy = rt->s->ptr[t] && rt->res[t].dying;
        if (rt->outstanding == 0 && !busy) return;
        int can_move = rt->virtual_clock ? rt->agenda.n > 0 : rt->queue.n > 0 || busy;
        if (!can_move || rt->async_err != TSL_OK) {
            if (busy && !rt->virtual_clock) { /* copies in flight must land */
                wait_step(S);
                continue;
            }
            for (int32_t e = 0; e < rt->cur->p->n_events; e++) {
                int st = rt->ev_state[e];
                if (st != TSL__EV_DONE && st != TSL__EV_IDLE && st != TSL__EV_RUN)
                    tsl__se_ev_done(rt, e);
            }
            if (rt->outstanding > 0 && !busy) rt->outstanding = 0;
            if (!busy) return;
        }
        wait_step(S);
    }
}

/* Frees the iteration's remaining transient tensors (nothing in flight). */
static void free_transients(tsl__runtime *rt) {
    for (int32_t t = 0; t < rt->nt; t++) {
        if (!rt->s->ptr[t] || tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind)) continue;
        tsl__rt_free_block(rt, t);
    }
}

/* Item k failed for want of one contiguous block with nothing left to
 * evict: what is resident is spread over the arena. Empties the arena of
 * everything that can move - the copies in flight land first (swap-ins
 * wait meanwhile), then the item's own tensors go (evicted with host
 * copies; outputs not written yet are just freed), then every other
 * evictable tensor - so that the retried item allocates into one free
 * stretch. Returns TSL_OK, or the error that stopped it. */
static tsl_status defrag(step *S, int32_t k) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_item *it = &rt->cur->items[k];
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    int32_t pos = rt->pos;
    tsl_status rc = retire_all(S); /* nothing may be in use by a kernel in flight */
    rt->pos = pos - 1; /* the item's tensors are read at pos: live, copied out */
    rt->compute_wants_mem = 1;
    while (rt->xf_inflight > 0 && rt->async_err == TSL_OK)
        if (!wait_step(S)) break;
    for (int j = 0; j < op->n_in + op->n_out + 1 && rc == TSL_OK; j++) {
        int32_t t = j < op->n_in ? op->in[j] : j < op->n_in + op->n_out ? op->out[j - op->n_in]
                                                                       : it->tensor;
        if (t < 0) continue;
        tsl__res *r = &rt->res[t];
        if (!rt->s->ptr[t] || r->dying || r->in_x >= 0 || r->out_n > 0) continue;
        if (!r->readable) /* allocated, not written yet: allocated again on the retry */
            unallocate(rt, t);
        else if (!tsl__rt_evict(rt, t))
            rc = tsl_fail(TSL_ERR_OOM, "runtime: cannot move '%s' out of the device",
                          tsl_graph_tensor(rt->g, t)->name);
    }
    for (int32_t v; rc == TSL_OK && (v = tsl__rt_pick_victim(rt, 0)) >= 0;)
        if (!tsl__rt_evict(rt, v)) break;
    while (rc == TSL_OK && tsl__rt_frees_pending(rt) && rt->async_err == TSL_OK)
        if (!wait_step(S)) break;
    rt->pos = pos; /* compute_wants_mem stays: the retried item places its tensors first */
    return rc != TSL_OK ? rc : tsl__rt_async_error(rt);
}

/* Runs the executed sequence; an item that failed for fragmentation is
 * retried once after a defragmentation. */
static tsl_status plan_step(step *S) {
    tsl__runtime *rt = S->rt;
    tsl_status rc = TSL_OK;
    for (int32_t k = 0; k < rt->cur->n_items && rc == TSL_OK; k++) {
        S->fragmented = 0;
        rc = run_item(S, k);
        if (rc == TSL_ERR_OOM && S->fragmented) {
            char why[400];
            snprintf(why, sizeof why, "%s", tsl_last_error());
            S->fragmented = 0;
            rt->defrags++;
            rc = defrag(S, k);
            S->hold = 1;
            if (rc == TSL_OK) rc = run_item(S, k);
            S->hold = 0;
            if (rc == TSL_ERR_OOM)
                rc = tsl_fail(TSL_ERR_OOM, "%s (also after moving the op's tensors out to "
                                           "defragment the arena)", why);
        }
    }
    if (rc == TSL_OK) rc = tsl__rt_async_error(rt);
    return rc;
}

tsl_status tsl__rt_step(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st) {
    tsl__runtime *rt = s->rt;
    tsl_step_stats local;
    if (!st) st = &local;
    tsl_status rc = tsl__step_begin(s, st);
    if (rc != TSL_OK) return rc;
    pthread_mutex_lock(&rt->mu);
    rc = install(rt);
    if (rc == TSL_OK && tsl__place_on(rt)) { /* the persistent tensors as the plan has them */
        rt->parked = 0;                       /* at time 0, at their places */
        rc = tsl__place_settle(rt);
    } else if (rc == TSL_OK && rt->parked) { /* after an evaluation: the parked tensors come */
        rt->parked = 0;                       /* back, under a plan what fits (the rest passively) */
        rc = tsl__rt_restore_some(rt, NULL, rt->cur != NULL);
    }
    if (rc != TSL_OK || !rt->cur) { /* no plan: the vanilla executor */
        pthread_mutex_unlock(&rt->mu);
        if (rc != TSL_OK) return rc;
        rc = tsl__vanilla_pass(s, x, y, 1, INT64_MAX, st);
        if (rc == TSL_OK)
            for (int32_t i = 0; i < rt->no; i++) tsl__lat_sample(rt, i, s->op_ms[i] * 1e3);
        return rc;
    }
    rt->pos = -1;
    rc = tsl__rt_mark_cold(rt); /* after a plan change or an evaluation */
    if (rc != TSL_OK) {
        pthread_mutex_unlock(&rt->mu);
        return rc;
    }
    double wall0 = tsl_backend_now_ms();
    tsl_alloc_stats ms;
    rt->b->iface->mem_stats(rt->b, &ms);
    rt->used = ms.load;
    rt->capacity = ms.capacity; /* the device may have grown or shrunk between iterations */
    size_t pp = rt->cur->p->predicted_peak;
    rt->limit = rt->o.strict && pp > 0 && pp < rt->capacity ? pp : rt->capacity;
    rt->iter++;
    rt->async_err = TSL_OK;
    tsl__se_reset_states(rt);
    rt->outstanding = rt->cur->n_timed;
    tsl__se_reset_iteration(rt);
    while (rt->used > rt->limit && tsl__rt_drop_cold(rt)) {
    } /* strict: a cold start may not begin above the limit */
    rt->b->iface->reset_peaks(rt->b);
    rt->t0_ms = tsl_backend_now_ms();
    rt->vnow = 0.0;
    if (!rt->virtual_clock) {
        rt->iter_base_us = (rt->t0_ms - rt->attach_ms) * 1e3;
        rc = anchor(rt);
    }
    step S = {.rt = rt, .s = s, .y = y, .st = st};
    tsl__rt_note_mem(rt);
    if (rt->virtual_clock) item_times(rt);
    tsl__dtr_begin(rt);
    tsl__place_begin(rt);
    if (rc == TSL_OK) rc = load_data(&S, x, y);
    if (rc == TSL_OK) rc = plan_step(&S);
    tsl_status fin = retire_all(&S); /* every kernel of the iteration completes */
    if (rc == TSL_OK) rc = fin != TSL_OK ? fin : S.late;
    double ops_end = rt->virtual_clock ? S.order_ready : tsl__rt_now(rt);
    if (rc != TSL_OK) rt->draining = 1; /* stop issuing; let copies in flight land */
    wait_events(&S);
    rt->draining = 0;
    double end = rt->virtual_clock ? rt->vnow : tsl__rt_now(rt);
    if (end < ops_end) end = ops_end;
    if (rc == TSL_OK && end - ops_end > EPS_US) {
        rt->st.stalls++;
        rt->st.stall_ms += (end - ops_end) * 1e-3;
        S.stall_us += end - ops_end;
    }
    free_transients(rt);
    tsl__se_reset_iteration(rt);
    rt->b->iface->mem_stats(rt->b, &ms);
    st->peak_load = ms.peak_load;
    st->peak_footprint = ms.peak_footprint;
    st->ms = rt->virtual_clock ? end * 1e-3 : tsl_backend_now_ms() - wall0;
    tsl__rt_iter ir = {.iter = rt->iter, .start = rt->iter_base_us,
                       .ops_end = rt->iter_base_us + ops_end, .end = rt->iter_base_us + end,
                       .stall = S.stall_us, .peak = ms.peak_load};
    tsl__log_iter(rt, &ir);
    if (rt->virtual_clock) rt->iter_base_us += end;
    tsl__rt_clear_cold(rt);
    tsl_latency_report lr;
    tsl_boundary_fn cb = rt->o.on_boundary;
    void *user = rt->o.boundary_user;
    if (rc == TSL_OK) {
        s->steps++;
        tsl__lat_report(rt, &lr);
    }
    pthread_mutex_unlock(&rt->mu);
    if (rc == TSL_OK && cb) cb(user, s, &lr); /* the owner decides, outside the lock */
    return rc;
}
