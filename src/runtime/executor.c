/*
 * executor.c - the Executor (paper III-D): one training iteration that
 * follows the installed plan.
 *
 * At the boundary a plan set since the last step is installed (the first
 * iteration of a plan starts with every persistent tensor resident: cold
 * start). Persistent tensors the plan releases across iterations that are
 * resident at an iteration's start (cold start, or after an evaluation) are
 * marked cold and given a host copy: they are dropped first when memory
 * runs short, and in strict mode before the iteration starts if the load
 * is above the limit, so that the limit holds from the first iteration.
 *
 * Then the data is loaded (the INPUT and LABEL tensors' generating access,
 * op -1) and, for each item of the executed sequence (the ops, with the
 * plan's recomputations inserted before the op each precedes):
 *
 *  1. its inputs are made resident: a swap-in in flight is waited for
 *     (stall); a planned swap-in not issued yet is issued now (real time)
 *     or waited for (virtual clock); one waiting for memory is taken over;
 *     a missing input with no swap-in coming is swapped in passively;
 *  2. its outputs are allocated, and its workspace reserved; when memory
 *     runs out (the arena, or in strict mode the limit) the executor first
 *     drops a cold-start tensor the plan has absent (free: its host copy is
 *     valid), then waits for frees already under way (releases waiting for
 *     their swap-outs, evictions being copied), then evicts the resident
 *     tensor used farthest in the future, and retries. If nothing is left
 *     to evict but the arena's free bytes would hold the request (it is
 *     fragmented), everything that can move is moved out and the item is
 *     retried once; an allocation that still fails ends the step with
 *     TSL_ERR_OOM and a message naming the op, the tensor and the sizes;
 *  3. the kernel runs (a recomputation re-runs the producer into a fresh
 *     block; its other outputs go to scratch blocks, so that in-place state
 *     such as batch-norm running statistics is not updated twice) and its
 *     latency is sampled;
 *  4. activity analysis frees the tensors whose last use it was, the plan's
 *     releases after it are applied, and the events it triggers go to the
 *     Swap Executor.
 *
 * At the end the executor waits for the iteration's events (their copies
 * must end within the iteration), frees what is left of the iteration's
 * tensors, updates the latency EWMA and replans if it drifted.
 *
 * Stalls: each time compute waits for a copy, an eviction or memory, with
 * the time waited (real time: the time spent blocked; virtual clock: the
 * op's start minus the end of the previous item, as the simulator counts
 * it), and the wait for the events at the iteration's end.
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
    double order_ready;     /* end of the previous item (µs) */
    double waited_us;       /* real time: blocked in the current item's waits */
    double stall_us;        /* this iteration */
    int fragmented;         /* the last failure: the arena had the bytes, not in one block */
    int hold;               /* retrying after a defragmentation: no swap-in allocates until
                               the item's own tensors are placed */
} step;

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

/* Allocates tensor t (t >= 0) or reserves n bytes of workspace (t < 0):
 * waits for frees under way, evicts, retries (see the head of the file). */
static tsl_status acquire(step *S, int32_t t, size_t n) {
    tsl__runtime *rt = S->rt;
    tsl_status rc = TSL_OK;
    int retried = 0;
    rt->compute_wants_mem = 1;
    for (;;) {
        if (t >= 0 ? tsl__rt_try_alloc(rt, t) == TSL_OK : tsl__rt_try_reserve(rt, n)) break;
        if (rt->async_err != TSL_OK) {
            rc = tsl__rt_async_error(rt);
            break;
        }
        if (tsl__rt_drop_cold(rt)) continue; /* the plan has it absent: free */
        if (tsl__rt_frees_pending(rt) && wait_step(S)) continue;
        int32_t v = tsl__rt_pick_victim(rt);
        if (v >= 0 && tsl__rt_evict(rt, v)) continue;
        if (!retried) { /* an injected fault fails one allocation only */
            retried = 1;
            continue;
        }
        if (t >= 0) {
            size_t b = tsl_graph_tensor(rt->g, t)->nbytes;
            S->fragmented = rt->used + b <= rt->limit && arena_has(rt, b);
        }
        rc = t >= 0 ? oom(rt, tsl_kind_name(tsl_graph_tensor(rt->g, t)->kind),
                          tsl_graph_tensor(rt->g, t)->name, tsl_graph_tensor(rt->g, t)->nbytes)
                    : oom(rt, "workspace", "scratch", n);
        break;
    }
    if (!S->hold) {
        rt->compute_wants_mem = 0;
        tsl__se_retry_wmem(rt);
    }
    return rc;
}

/* A raw device block of n bytes (recomputation scratch), counted in
 * `used`. */
static tsl_status scratch_alloc(step *S, size_t n, void **p) {
    tsl__runtime *rt = S->rt;
    tsl_status rc = acquire(S, -1, n);
    if (rc != TSL_OK) return rc;
    for (int tries = 0;; tries++) {
        if (rt->b->iface->alloc(rt->b, n, p) == TSL_OK) return TSL_OK;
        tsl_clear_error();
        if (tsl__rt_frees_pending(rt) && wait_step(S)) continue;
        int32_t v = tsl__rt_pick_victim(rt);
        if (v >= 0 && tsl__rt_evict(rt, v)) continue;
        if (tries == 0) continue;
        tsl__rt_unreserve(rt, n);
        S->fragmented = arena_has(rt, n);
        return oom(rt, "recomputation scratch", "block", n);
    }
}

static void scratch_free(tsl__runtime *rt, void *p, size_t n) {
    rt->b->iface->free(rt->b, p);
    tsl__rt_unreserve(rt, n);
}

/* ---- inputs and outputs ---------------------------------------------------------------- */

/* Makes input t resident and readable (see the head of the file). */
static tsl_status ensure_input(step *S, int32_t t) {
    tsl__runtime *rt = S->rt;
    tsl__res *r = &rt->res[t];
    int no_plan = 0; /* the planned swap-in will not come: go passive */
    for (;;) {
        if (rt->async_err != TSL_OK) return tsl__rt_async_error(rt);
        if (rt->s->ptr[t] && r->readable) {
            tsl__se_cancel_releases(rt, t); /* needed now: a waiting release is void */
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
        int32_t e = no_plan ? -1 : tsl__se_pending_swap_in(rt, t);
        if (e >= 0 && rt->ev_state[e] == TSL__EV_WMEM) { /* take it over */
            rt->ev_state[e] = TSL__EV_RUN;
            tsl_status rc = acquire(S, t, 0);
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
        if (!tsl__rt_host_valid(rt, t))
            return tsl_fail(TSL_ERR_INTERNAL,
                            "runtime: tensor '%s' read by op '%s' is neither on the device nor "
                            "on the host",
                            tsl_graph_tensor(rt->g, t)->name, tsl_graph_op(rt->g, rt->pos)->name);
        tsl_status rc = acquire(S, t, 0); /* passive swap-in */
        if (rc != TSL_OK) return rc;
        if (tsl__se_copy(rt, t, 1, TSL__X_PASSIVE, -1, tsl_graph_tensor(rt->g, t)->nbytes) < 0) {
            tsl__rt_free_block(rt, t);
            return tsl_fail(TSL_ERR_OOM, "runtime: cannot copy '%s' back to the device",
                            tsl_graph_tensor(rt->g, t)->name);
        }
        rt->st.passive_swaps++;
    }
}

/* Makes room for writing output t: allocated if absent; in real time no
 * copy may read or write its block while the kernel writes it (swap-outs
 * still scheduled are issued now: they were planned before this write). */
static tsl_status prepare_output(step *S, int32_t t) {
    tsl__runtime *rt = S->rt;
    tsl__res *r = &rt->res[t];
    if (!rt->s->ptr[t]) return acquire(S, t, 0);
    r->dying = 0;
    r->cold = 0;
    if (rt->virtual_clock) return TSL_OK;
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

static void pin(tsl__runtime *rt, const tsl_op *op, int32_t extra, int on) {
    for (int j = 0; j < op->n_in; j++) rt->res[op->in[j]].pinned = (uint8_t)on;
    for (int j = 0; j < op->n_out; j++) rt->res[op->out[j]].pinned = (uint8_t)on;
    if (extra >= 0) rt->res[extra].pinned = (uint8_t)on;
}

/* Runs op's kernel on in/out; an allocation failure of its workspace inside
 * the backend makes room (wait, evict) and retries. *ms: kernel time. */
static tsl_status run_kernel(step *S, const tsl_op *op, void *const *in, void *const *out,
                             double *ms) {
    tsl__runtime *rt = S->rt;
    tsl_run_ctx ctx = {.step = S->s->steps + 1, .training = 1};
    for (int tries = 0;; tries++) {
        pthread_mutex_unlock(&rt->mu);
        tsl_status rc = rt->b->iface->run_op(rt->b, rt->g, op, in, out, &ctx, ms);
        pthread_mutex_lock(&rt->mu);
        if (rc != TSL_ERR_OOM) return rc;
        if (tsl__rt_frees_pending(rt) && wait_step(S)) continue;
        int32_t v = tsl__rt_pick_victim(rt);
        if (v >= 0 && tsl__rt_evict(rt, v)) continue;
        if (tries == 0) continue;
        S->fragmented = 1; /* the workspace's size is the backend's: try a defragmentation */
        return rc;
    }
}

/* Runs the kernel of item `it`: an op into its outputs, or a recomputation
 * of it->tensor by its producer (other outputs into scratch; an in-place
 * one starts as a copy of its current value). */
static tsl_status exec_kernel(step *S, const tsl__rt_item *it, double *ms) {
    tsl__runtime *rt = S->rt;
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    void *in[256], *out[16], *scratch[16] = {0};
    size_t sbytes[16] = {0};
    TSL_ASSERT(op->n_in <= 256 && op->n_out <= 16);
    for (int j = 0; j < op->n_in; j++) in[j] = rt->s->ptr[op->in[j]];
    tsl_status rc = TSL_OK;
    for (int j = 0; j < op->n_out && rc == TSL_OK; j++) {
        int32_t o = op->out[j];
        if (it->tensor < 0 || o == it->tensor) {
            out[j] = rt->s->ptr[o];
            continue;
        }
        sbytes[j] = tsl_graph_tensor(rt->g, o)->nbytes;
        rc = scratch_alloc(S, sbytes[j], &scratch[j]);
        if (rc != TSL_OK) break;
        out[j] = scratch[j];
        for (int k = 0; k < op->n_in && rc == TSL_OK; k++)
            if (op->in[k] == o) { /* in place: the kernel reads and writes the scratch */
                void *tmp = malloc(sbytes[j] ? sbytes[j] : 1); /* device to device, via the host */
                if (!tmp) {
                    rc = tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
                    break;
                }
                rt->b->iface->copy_to_host(rt->b, tmp, rt->s->ptr[o], sbytes[j]);
                rt->b->iface->copy_to_device(rt->b, scratch[j], tmp, sbytes[j]);
                free(tmp);
                in[k] = scratch[j];
            }
    }
    if (rc == TSL_OK) rc = run_kernel(S, op, in, out, ms);
    for (int j = 0; j < op->n_out; j++)
        if (scratch[j]) scratch_free(rt, scratch[j], sbytes[j]);
    return rc;
}

/* Virtual clock: processes the agenda up to the start of an item at `t`. */
static void run_to_start(tsl__runtime *rt, double t, int zero) {
    tsl__vc_run_before(rt, t, zero ? TSL__PH_ZERO : TSL__PH_START, 0);
}

/* Runs item k of the executed sequence (steps 1-4 of the head of the
 * file) and advances S->order_ready to its end. Returns TSL_OK, or the
 * error that ended the step (out of memory with nothing left to evict, a
 * kernel's failure, a lost tensor - a bug); the item's pins are dropped
 * either way. */
static tsl_status run_item(step *S, int32_t k) {
    tsl__runtime *rt = S->rt;
    const tsl__rt_plan *pl = rt->cur;
    const tsl__rt_item *it = &pl->items[k];
    const tsl_op *op = tsl_graph_op(rt->g, it->op);
    int is_rc = it->tensor >= 0;
    int zero = it->ne == it->ns;
    rt->pos = is_rc ? pl->p->events[it->event].precede - 1 : it->op;
    if (rt->virtual_clock) run_to_start(rt, S->order_ready, zero);
    S->waited_us = 0.0;
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
    if (is_rc && !skip && rc == TSL_OK) rc = prepare_output(S, it->tensor);
    for (int j = 0; j < op->n_out && rc == TSL_OK && !is_rc; j++) rc = prepare_output(S, op->out[j]);
    size_t ws = skip ? 0 : pl->w->ops[it->op].workspace;
    if (rc == TSL_OK) rc = acquire(S, -1, ws);
    if (S->hold) { /* the item's tensors are placed: swap-ins may allocate again */
        S->hold = 0;
        rt->compute_wants_mem = 0;
        tsl__se_retry_wmem(rt);
    }
    if (rc != TSL_OK) {
        pin(rt, op, it->tensor, 0);
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
    double ms = 0.0;
    if (!skip) rc = exec_kernel(S, it, &ms);
    if (!skip) S->st->kernel_ms += rt->virtual_clock ? (it->ne - it->ns) * 1e-3 : ms;
    /* virtual clock: the workspace held over the op's duration, so that the
     * ledger counts it while the agenda runs to the op's end. The kernel has
     * just freed these very bytes (one thread), so only an injected fault
     * can fail it; then only the ledger's peak misses them (the limit
     * already counts them: acquire reserved ws), which the fault tests do
     * not compare. */
    void *ph = NULL;
    if (rc == TSL_OK && rt->virtual_clock && ws && rt->b->iface->alloc(rt->b, ws, &ph) != TSL_OK) {
        tsl_clear_error();
        ph = NULL;
    }
    double end;
    if (rt->virtual_clock) {
        end = start == it->ns ? it->ne : start + (it->ne - it->ns);
        tsl__vc_run_before(rt, end, TSL__PH_DONE, seq_end);
        rt->vnow = end;
    } else {
        end = tsl__rt_now(rt);
    }
    if (ph) rt->b->iface->free(rt->b, ph);
    tsl__rt_unreserve(rt, ws);
    pin(rt, op, it->tensor, 0);
    if (rc != TSL_OK) return rc;
    tsl__rt_span sp = {.kind = is_rc ? 1 : 0, .op = it->op, .tensor = it->tensor,
                       .iter = rt->iter, .ready = rt->iter_base_us + S->order_ready,
                       .start = rt->iter_base_us + start, .end = rt->iter_base_us + end,
                       .wait = stall > EPS_US ? stall : 0.0};
    tsl__log_span(rt, &sp);
    S->order_ready = end;
    if (is_rc) {
        rt->res[it->tensor].readable = 1;
        if (!skip) rt->st.recomputes++;
        return TSL_OK;
    }
    for (int j = 0; j < op->n_out; j++) rt->res[op->out[j]].readable = 1;
    double us = rt->virtual_clock ? it->ne - it->ns : ms * 1e3;
    S->s->op_ms[it->op] = us * 1e-3;
    tsl__lat_sample(rt, it->op, us);
    tsl__session_after_op(S->s, it->op, S->y, INT64_MAX, S->st);
    int nf;
    const tsl_tid *fl = tsl__liveness_after(&S->s->live_train, it->op, &nf);
    for (int j = 0; j < nf; j++) {
        if (!rt->s->ptr[fl[j]]) continue;
        tsl__rt_release_block(rt, fl[j]);
        tsl__se_cancel_releases(rt, fl[j]);
    }
    tsl__se_trigger(rt, it->op, end);
    return TSL_OK;
}

/* ---- the iteration ---------------------------------------------------------------------------- */

/* Nominal item times of the virtual clock: the plan's workload times, or
 * the override latencies (back to back). */
static void item_times(tsl__runtime *rt) {
    tsl__rt_plan *pl = rt->cur;
    tsl__exec_times(pl->w, pl->p, rt->vlat, pl->items, pl->n_items, NULL);
}

/* Installs the pending plan (boundary). */
static tsl_status install(tsl__runtime *rt) {
    if (!rt->has_pending) return TSL_OK;
    tsl__rt_plan_free(rt->cur);
    rt->cur = rt->pending;
    rt->drift_run = 0; /* a new base for the change rate */
    rt->pending = NULL;
    rt->has_pending = 0;
    if (rt->cur) {
        uint8_t *es = realloc(rt->ev_state, (size_t)rt->cur->p->n_events + 1);
        if (!es) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
        rt->ev_state = es;
    }
    return tsl__rt_restore_persistent(rt); /* cold start: all persistent resident */
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
            tsl_status rc = acquire(S, t, 0);
            if (rc != TSL_OK) return rc;
        }
        rt->b->iface->copy_to_device(rt->b, s->ptr[t], src[k], tsl_graph_tensor(rt->g, t)->nbytes);
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
    rt->pos = pos - 1; /* the item's tensors are read at pos: live, copied out */
    rt->compute_wants_mem = 1;
    tsl_status rc = TSL_OK;
    while (rt->xf_inflight > 0 && rt->async_err == TSL_OK)
        if (!wait_step(S)) break;
    for (int j = 0; j < op->n_in + op->n_out + 1 && rc == TSL_OK; j++) {
        int32_t t = j < op->n_in ? op->in[j] : j < op->n_in + op->n_out ? op->out[j - op->n_in]
                                                                       : it->tensor;
        if (t < 0) continue;
        tsl__res *r = &rt->res[t];
        if (!rt->s->ptr[t] || r->dying || r->in_x >= 0 || r->out_n > 0) continue;
        if (!r->readable) tsl__rt_free_block(rt, t); /* allocated, not written yet */
        else if (!tsl__rt_evict(rt, t))
            rc = tsl_fail(TSL_ERR_OOM, "runtime: cannot move '%s' out of the device",
                          tsl_graph_tensor(rt->g, t)->name);
    }
    for (int32_t v; rc == TSL_OK && (v = tsl__rt_pick_victim(rt)) >= 0;)
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
    tsl_status rc = tsl__session_step_begin(s, st);
    if (rc != TSL_OK) return rc;
    pthread_mutex_lock(&rt->mu);
    rc = install(rt);
    if (rc == TSL_OK && rt->parked) { /* after an evaluation: the parked tensors come back, */
        rt->parked = 0;                /* under a plan what fits (the rest passively) */
        rc = tsl__rt_restore_some(rt, NULL, rt->cur != NULL);
    }
    if (rc != TSL_OK || !rt->cur) { /* no plan: the vanilla executor */
        pthread_mutex_unlock(&rt->mu);
        if (rc != TSL_OK) return rc;
        rc = tsl__session_run_vanilla(s, x, y, 1, INT64_MAX, st);
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
    size_t pp = rt->cur->p->predicted_peak;
    rt->limit = rt->o.strict && pp > 0 && pp < rt->capacity ? pp : rt->capacity;
    rt->iter++;
    rt->async_err = TSL_OK;
    memset(rt->ev_state, TSL__EV_IDLE, (size_t)rt->cur->p->n_events);
    rt->outstanding = rt->cur->n_timed;
    tsl__se_reset_iteration(rt);
    while (rt->used > rt->limit && tsl__rt_drop_cold(rt)) {
    } /* strict: a cold start may not begin above the limit */
    rt->b->iface->reset_peaks(rt->b);
    rt->t0_ms = tsl_backend_now_ms();
    rt->vnow = 0.0;
    if (!rt->virtual_clock) rt->iter_base_us = (rt->t0_ms - rt->attach_ms) * 1e3;
    step S = {.rt = rt, .s = s, .y = y, .st = st};
    tsl__rt_note_mem(rt);
    if (rt->virtual_clock) item_times(rt);
    if (rc == TSL_OK) rc = load_data(&S, x, y);
    if (rc == TSL_OK) rc = plan_step(&S);
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
    for (int32_t t = 0; t < rt->nt; t++) rt->res[t].cold = 0;
    if (rc == TSL_OK) {
        s->steps++;
        tsl__lat_end_iteration(rt);
    }
    pthread_mutex_unlock(&rt->mu);
    return rc;
}
