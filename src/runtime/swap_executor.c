/*
 * swap_executor.c - the Swap Executor (paper III-D): the execution queue
 * receives the events an op triggers and releases each at (end of the op +
 * delay), in time order; the buffer issues their copies on the backend's
 * channels and completes them.
 *
 * Events (docs/SCHEDULING.md, with the simulator's dependency rule: a
 * release or a swap-in of t waits for the swap-outs of t planned at or
 * before it):
 *  - SWAP_OUT copies t to its host staging buffer. If the host copy already
 *    holds t's value (t unchanged since it was last copied) nothing is
 *    copied: the swap counts, with 0 bytes. In the virtual clock that
 *    transfer still holds its channel for the planned copy time, so that
 *    the clock follows the plan as the simulator does.
 *  - RELEASE frees t once its swap-outs ended. A release whose tensor's
 *    value would be lost (no valid host copy, no recomputation of t in the
 *    plan, t still read later) keeps t instead: results never change.
 *  - SWAP_IN allocates t (under a layout at its planned place,
 *    placement.c) and copies it in. A resident t makes it a no-op (cold
 *    start; a release still waiting is cancelled; the plan's residency
 *    counts all the same). Without memory, or with its place still held,
 *    it waits (WMEM) and is retried after every free; the executor takes it
 *    over when its op comes.
 *
 * Real time: events wait in a min-heap on due time, then insertion order.
 * The executor issues those already due right after it queued an op's
 * events (issue_due); a queue thread sleeps until the next one is due and
 * issues it. A copy's end is handled (land) by a host function its stream
 * runs right after it (host_func: no thread wakes per copy), or, on a
 * backend without host_func, by one watcher thread per channel waiting
 * for the oldest transfer of its channel (channels are FIFO). Releases are
 * applied by the executor right after their trigger. All under rt->mu;
 * the compute thread's cv is signalled on every change.
 *
 * Virtual clock: no thread. An agenda keyed (time, phase, seq) holds copy
 * ends and event issues; the executor runs it up to each of its own steps
 * (tsl__vc_run_before), so that at one time point copy ends come first,
 * then zero-duration ops, swap-out issues, releases, swap-in issues, op
 * starts - the simulator's order. A copy moves its bytes at its issue and
 * occupies its channel (one transfer at a time, FIFO; one shared channel if
 * the profile is not duplex) for tsl_copy_us.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "core/assert.h"
#include "core/heap_impl.h"
#include "runtime/runtime_internal.h"

/* ---- heap and fifo --------------------------------------------------------------- */

static int qlt(const tsl__qent *a, const tsl__qent *b) {
    if (a->t != b->t) return a->t < b->t;
    if (a->phase != b->phase) return a->phase < b->phase;
    return a->seq < b->seq;
}

/* heap_push (gives e the next seq; -1 if out of memory) and heap_pop */
TSL__HEAP_DEFINE(heap, tsl__heap, tsl__qent, qlt)

/* Makes room for one more entry at the tail (compacting, else growing),
 * so that the next fifo_push cannot fail: 0, or -1 out of host memory (f
 * unchanged). */
static int fifo_reserve(tsl__fifo *f) {
    if (f->head + f->n < f->cap) return 0;
    if (f->head > 0) {
        memmove(f->a, f->a + f->head, (size_t)f->n * sizeof *f->a);
        f->head = 0;
    }
    if (f->n == f->cap) {
        int64_t cap = f->cap ? 2 * f->cap : 64;
        int64_t *a = realloc(f->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        f->a = a;
        f->cap = cap;
    }
    return 0;
}

static int fifo_push(tsl__fifo *f, int64_t x) {
    if (fifo_reserve(f) != 0) return -1;
    f->a[f->head + f->n++] = x;
    return 0;
}

static int64_t fifo_pop(tsl__fifo *f) {
    TSL_ASSERT(f->n > 0);
    int64_t x = f->a[f->head++];
    if (--f->n == 0) f->head = 0;
    return x;
}

/* ---- time and event states ----------------------------------------------------------- */

double tsl__rt_now(const tsl__runtime *rt) {
    if (rt->virtual_clock) return rt->vnow;
    return (tsl_backend_now_ms() - rt->t0_ms) * 1e3;
}

/* Waits on cv (a CLOCK_MONOTONIC condition variable, runtime.c) with mu
 * held, for at most ms milliseconds (0 or less: not at all). */
static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double ms) {
    if (!(ms > 0)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(ms * 1e6);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Wakes the compute thread if it waits for a change (real time). */
static void wake(tsl__runtime *rt) {
    if (!rt->virtual_clock) pthread_cond_signal(&rt->cv);
}

/* Out of host memory in a Swap Executor structure: the step reports it. */
static void note_oom(tsl__runtime *rt) {
    if (rt->async_err != TSL_OK) return;
    rt->async_err = TSL_ERR_OOM;
    snprintf(rt->async_msg, sizeof rt->async_msg, "runtime: out of host memory in the Swap Executor");
}

tsl_status tsl__rt_async_error(tsl__runtime *rt) {
    if (rt->async_err == TSL_OK) return TSL_OK;
    return tsl_fail(rt->async_err, "%s", rt->async_msg); /* on the calling thread */
}

void tsl__se_set_state(tsl__runtime *rt, int32_t e, int s) {
    rt->n_wmem += (s == TSL__EV_WMEM) - (rt->ev_state[e] == TSL__EV_WMEM);
    TSL_ASSERT(rt->n_wmem >= 0);
    rt->ev_state[e] = (uint8_t)s;
}

void tsl__se_reset_states(tsl__runtime *rt) {
    memset(rt->ev_state, TSL__EV_IDLE, (size_t)rt->cur->p->n_events);
    rt->n_wmem = 0;
}

void tsl__se_ev_done(tsl__runtime *rt, int32_t e) {
    TSL_ASSERT(rt->ev_state[e] != TSL__EV_DONE);
    tsl__se_set_state(rt, e, TSL__EV_DONE);
    rt->outstanding--;
    TSL_ASSERT(rt->outstanding >= 0);
    wake(rt);
}

/* 1 if a swap-out of t planned at or before `plan` has not ended. */
static int swap_out_pending(const tsl__runtime *rt, int32_t t, double plan) {
    const tsl__rt_plan *pl = rt->cur;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_SWAP_OUT && pl->ev_plan[x] <= plan &&
            rt->ev_state[x] != TSL__EV_DONE)
            return 1;
    }
    return 0;
}

int tsl__se_waits_on_idle(const tsl__runtime *rt, int32_t e) {
    const tsl__rt_plan *pl = rt->cur;
    int32_t t = pl->p->events[e].tensor;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_SWAP_OUT && pl->ev_plan[x] <= pl->ev_plan[e] &&
            rt->ev_state[x] == TSL__EV_IDLE)
            return 1;
    }
    return 0;
}

int tsl__se_take_over_swap_out(tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    if (!pl) return 0;
    int released_later = 0; /* the plan's release of t has been triggered and waits */
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_RELEASE && rt->ev_state[x] == TSL__EV_WAIT)
            released_later = 1;
    }
    if (!released_later) return 0;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_SWAP_OUT && rt->ev_state[x] == TSL__EV_SCHED) {
            tsl__se_swap_out(rt, x); /* its queue entry finds it taken over */
            return 1;
        }
    }
    return 0;
}

void tsl__se_cancel_releases(tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    if (!pl) return;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        if (pl->p->events[x].type == TSL_EV_RELEASE && rt->ev_state[x] == TSL__EV_WAIT)
            tsl__se_ev_done(rt, x);
    }
}

int32_t tsl__se_pending_swap_in(const tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    if (!pl) return -1;
    for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
        int32_t x = pl->tev_list[k];
        int s = rt->ev_state[x];
        if (pl->p->events[x].type == TSL_EV_SWAP_IN &&
            (s == TSL__EV_SCHED || s == TSL__EV_WAIT || s == TSL__EV_WMEM))
            return x;
    }
    return -1;
}

/* ---- virtual channels ------------------------------------------------------------------ */

static int vchan(const tsl__runtime *rt, int to_device) {
    return rt->o.profile.duplex ? (to_device ? 0 : 1) : 0;
}

static void vpush(tsl__runtime *rt, double t, int32_t phase, int32_t kind, int64_t arg) {
    tsl__qent e = {.t = t, .phase = phase, .kind = kind, .arg = arg, .iter = rt->iter};
    if (heap_push(&rt->agenda, e) != 0) note_oom(rt);
}

static void vstart(tsl__runtime *rt, int64_t x) {
    tsl__xfer *X = &rt->xf[x];
    X->start = rt->vnow;
    X->end = X->start + X->dur;
    vpush(rt, X->end, TSL__PH_DONE, TSL__VK_COPY_END, x);
}

static void vchan_request(tsl__runtime *rt, int64_t x) {
    int c = vchan(rt, rt->xf[x].to_device);
    if (!rt->vbusy[c]) {
        rt->vbusy[c] = 1;
        vstart(rt, x);
    } else if (fifo_push(&rt->vwait[c], x) != 0) {
        note_oom(rt);
    }
}

static void vchan_done(tsl__runtime *rt, int to_device) {
    int c = vchan(rt, to_device);
    TSL_ASSERT(rt->vbusy[c]);
    rt->vbusy[c] = 0;
    if (rt->vwait[c].n == 0) return;
    rt->vbusy[c] = 1;
    vstart(rt, fifo_pop(&rt->vwait[c]));
}

uint64_t tsl__vc_next_seq(tsl__runtime *rt) { return rt->agenda.next_seq++; }

/* ---- copies --------------------------------------------------------------------------------- */

static void landed(void *arg);

int64_t tsl__se_copy(tsl__runtime *rt, int32_t t, int to_device, int kind, int32_t event,
                     size_t bytes) {
    tsl__res *r = &rt->res[t];
    void *host = tsl__rt_host_buf(rt, t), *dev = rt->s->ptr[t];
    if (!host || !dev) return -1;
    if (rt->n_xf == rt->cap_xf) {
        int64_t cap = rt->cap_xf ? 2 * rt->cap_xf : 256;
        tsl__xfer *a = realloc(rt->xf, (size_t)cap * sizeof *a);
        if (!a) return -1;
        rt->xf = a;
        rt->cap_xf = cap;
    }
    int64_t x = rt->n_xf;
    size_t tbytes = tsl_graph_tensor(rt->g, t)->nbytes;
    tsl__xfer X = {.tensor = t, .event = event, .to_device = to_device, .kind = kind,
                   .gen = r->gen, .bytes = bytes, .issue = tsl__rt_now(rt)};
    if (rt->virtual_clock) {
        tsl_status st = TSL_OK;
        if (bytes) st = to_device ? tsl_backend_upload(rt->b, dev, host, bytes)
                                  : tsl_backend_download(rt->b, host, dev, bytes);
        if (st != TSL_OK) {
            tsl_clear_error();
            return -1;
        }
        X.dur = tsl_copy_us(&rt->o.profile, kind == TSL__X_PLANNED ? tbytes : bytes, to_device);
    } else {
        /* a copy out reads a tensor whose writers have completed (swap-outs
         * are triggered by retired ops; evictions take no busy tensor) */
        tsl_stream sid = to_device ? TSL_STREAM_H2D : TSL_STREAM_D2H;
        tsl__fifo *f = &rt->copies[to_device ? 1 : 0];
        if (fifo_reserve(f) != 0) return -1; /* nothing enqueued yet */
        tsl_status st = TSL_OK;
        /* a fresh block may hold bytes a kernel in flight still uses (blocks
         * go back when their last kernel is enqueued): the copy waits for
         * the kernels enqueued so far */
        if (to_device && rt->last_compute) st = rt->b->iface->stream_wait(rt->b, sid, rt->last_compute);
        if (st == TSL_OK) st = rt->b->iface->event_record(rt->b, sid, &X.ev_start);
        if (st == TSL_OK)
            st = tsl_backend_copy_async(rt->b, sid, to_device ? dev : host, to_device ? host : dev,
                                        bytes, &X.ev_end);
        if (st != TSL_OK) {
            tsl_clear_error();
            if (X.ev_start) { /* enqueued before the failure: let it pass (the lock
                               * released: a copy's host function may need it) */
                pthread_mutex_unlock(&rt->mu);
                rt->b->iface->synchronize(rt->b);
                pthread_mutex_lock(&rt->mu);
                tsl_clear_error();
                rt->b->iface->event_release(rt->b, X.ev_start);
            }
            return -1;
        }
        int pushed = fifo_push(f, x); /* cannot fail: reserved above */
        TSL_ASSERT(pushed == 0);
        if (rt->callbacks &&
            rt->b->iface->host_func(rt->b, sid, landed, &rt->landing[to_device ? 1 : 0]) != TSL_OK) {
            /* out of host memory for the call: it lands when found ended,
             * by the next host function of its channel or the waits of the
             * compute thread (land_ready) */
            tsl_clear_error();
            X.polled = 1;
        }
    }
    rt->xf[x] = X;
    rt->n_xf++;
    rt->xf_inflight++;
    if (to_device) {
        r->in_x = x;
        r->readable = 0;
    } else {
        r->out_n++;
        if (bytes) r->host_ok = 0; /* the host buffer is being overwritten */
    }
    if (rt->virtual_clock) vchan_request(rt, x);
    else {
        if (!rt->callbacks) pthread_cond_signal(&rt->cv_watch[to_device ? 1 : 0]);
        wake(rt);
    }
    return x;
}

/* Retries the releases, then the swap-ins, of t that wait for its
 * swap-outs (one of them ended). */
static void after_swap_out(tsl__runtime *rt, int32_t t) {
    const tsl__rt_plan *pl = rt->cur;
    if (!pl) return;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t k = pl->tev_start[t]; k < pl->tev_start[t + 1]; k++) {
            int32_t y = pl->tev_list[k];
            if (rt->ev_state[y] != TSL__EV_WAIT) continue;
            tsl_event_type ty = pl->p->events[y].type;
            if (pass == 0 && ty == TSL_EV_RELEASE) tsl__se_release(rt, y);
            if (pass == 1 && ty == TSL_EV_SWAP_IN) tsl__se_swap_in(rt, y);
        }
}

/* Transfer x ended (its channel already took its next transfer). */
static void copy_end(tsl__runtime *rt, int64_t x) {
    tsl__xfer *X = &rt->xf[x];
    X->done = 1;
    rt->xf_inflight--;
    int32_t t = X->tensor;
    tsl__res *r = &rt->res[t];
    tsl__rt_span sp = {.kind = X->to_device ? 2 : 3, .xkind = X->kind, .op = -1, .tensor = t,
                       .iter = rt->iter, .ready = rt->iter_base_us + X->issue,
                       .start = rt->iter_base_us + X->start, .end = rt->iter_base_us + X->end,
                       .wait = X->start - X->issue, .bytes = X->bytes};
    tsl__log_span(rt, &sp);
    if (X->to_device) {
        rt->st.bytes_h2d += X->bytes;
        if (r->in_x == x) {
            r->in_x = -1;
            r->readable = 1;
            if (r->dying && r->out_n == 0) tsl__rt_free_block(rt, t);
        }
    } else {
        rt->st.bytes_d2h += X->bytes;
        TSL_ASSERT(r->out_n > 0);
        r->out_n--;
        if (X->bytes > 0 && X->gen == r->gen) {
            r->host_ok = 1;
            r->host_gen = X->gen;
        }
        if (r->dying && r->out_n == 0 && r->in_x < 0 && rt->s->ptr[t]) tsl__rt_free_block(rt, t);
    }
    if (X->event >= 0) tsl__se_ev_done(rt, X->event);
    if (!X->to_device) after_swap_out(rt, t);
    wake(rt);
}

/* Real time: the oldest copy in flight of direction d (1: to the device)
 * has ended: its times from its events, which it gives back, then
 * copy_end. Under rt->mu. */
static void land(tsl__runtime *rt, int d) {
    tsl__fifo *f = &rt->copies[d];
    TSL_ASSERT(f->n > 0);
    int64_t x = fifo_pop(f);
    tsl__xfer *X = &rt->xf[x];
    X->start = tsl__rt_event_us(rt, X->ev_start);
    X->end = tsl__rt_event_us(rt, X->ev_end);
    X->dur = X->end - X->start;
    rt->b->iface->event_release(rt->b, X->ev_start);
    rt->b->iface->event_release(rt->b, X->ev_end);
    X->ev_start = X->ev_end = NULL;
    copy_end(rt, x);
}

/* Lands the oldest copies of direction d that have no host function
 * (polled) and have ended; returns how many. Under rt->mu. */
static int land_ready(tsl__runtime *rt, int d) {
    tsl__fifo *f = &rt->copies[d];
    int n = 0;
    while (f->n > 0) {
        const tsl__xfer *X = &rt->xf[f->a[f->head]];
        if (!X->polled || !rt->b->iface->event_query(rt->b, X->ev_end)) break;
        land(rt, d);
        n++;
    }
    return n;
}

/* The host function a copy's stream runs right after it (host_func; arg:
 * its direction's tsl__landing): that copy has ended, and so has every
 * copy before it on its channel - those with host functions of their own
 * have landed already, the polled ones land here first - so it is the
 * oldest in flight. */
static void landed(void *arg) {
    const tsl__landing *l = arg;
    tsl__runtime *rt = l->rt;
    pthread_mutex_lock(&rt->mu);
    const tsl__fifo *f = &rt->copies[l->to_device];
    land_ready(rt, l->to_device);
    TSL_ASSERT(f->n > 0 && !rt->xf[f->a[f->head]].polled);
    land(rt, l->to_device);
    pthread_mutex_unlock(&rt->mu);
}

/* ---- event handlers -------------------------------------------------------------------------- */

void tsl__se_swap_out(tsl__runtime *rt, int32_t e) {
    int32_t t = rt->cur->p->events[e].tensor;
    tsl__res *r = &rt->res[t];
    int unchanged = tsl__rt_host_valid(rt, t);
    if (!rt->s->ptr[t] || (!r->readable && r->in_x < 0) || (unchanged && !rt->virtual_clock)) {
        /* absent (evicted: its host copy is valid), being generated (a plan
         * that is wrong under these latencies: nothing to copy yet), or
         * unchanged since its last copy: nothing moves */
        if (unchanged) {
            rt->st.swaps_out++;
            double now = tsl__rt_now(rt) + rt->iter_base_us;
            tsl__rt_span sp = {.kind = 3, .xkind = TSL__X_PLANNED, .op = -1, .tensor = t,
                               .iter = rt->iter, .ready = now, .start = now, .end = now};
            tsl__log_span(rt, &sp); /* 0 bytes, no time */
        }
        tsl__se_ev_done(rt, e);
        after_swap_out(rt, t);
        return;
    }
    tsl__se_set_state(rt, e, TSL__EV_RUN);
    size_t bytes = unchanged ? 0 : tsl_graph_tensor(rt->g, t)->nbytes;
    if (tsl__se_copy(rt, t, 0, TSL__X_PLANNED, e, bytes) < 0) {
        tsl__se_ev_done(rt, e); /* no host memory: the release will keep t */
        after_swap_out(rt, t);
        return;
    }
    rt->st.swaps_out++;
}

void tsl__se_release(tsl__runtime *rt, int32_t e) {
    const tsl__rt_plan *pl = rt->cur;
    int32_t t = pl->p->events[e].tensor;
    if (!rt->s->ptr[t]) {
        tsl__place_released(rt, t);
        return tsl__se_ev_done(rt, e);
    }
    if (swap_out_pending(rt, t, pl->ev_plan[e])) {
        tsl__se_set_state(rt, e, TSL__EV_WAIT);
        return;
    }
    tsl__place_released(rt, t); /* the plan's residency ends, freed or kept */
    int persistent = tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind);
    int recoverable = tsl__rt_host_valid(rt, t) || (pl->recomputed[t] && !persistent) ||
                      tsl__rt_dead(rt, t, rt->pos);
    if (rt->res[t].busy || !recoverable)
        return tsl__se_ev_done(rt, e); /* its value would be lost (or it is in use): kept */
    tsl__rt_release_block(rt, t);
    tsl__se_ev_done(rt, e);
}

void tsl__se_swap_in(tsl__runtime *rt, int32_t e) {
    const tsl__rt_plan *pl = rt->cur;
    int32_t t = pl->p->events[e].tensor;
    tsl__res *r = &rt->res[t];
    if (rt->s->ptr[t] && !tsl__place_at_next(rt, t) && swap_out_pending(rt, t, pl->ev_plan[e])) {
        /* still here because its swap-out is late, and away from the place
         * the plan brings it back to: kept where it is, it would hold a
         * place the layout gives another block (which would evict it).
         * The release goes first when the copy ends, then this swap-in
         * brings it to its place (after_swap_out) */
        tsl__se_set_state(rt, e, TSL__EV_WAIT);
        return;
    }
    if (rt->s->ptr[t]) { /* still (or already) here */
        tsl__se_cancel_releases(rt, t);
        r->dying = 0;
        r->cold = 0;
        tsl__place_skip(rt, t, -1); /* the plan's residency starts all the same */
        return tsl__se_ev_done(rt, e);
    }
    if (swap_out_pending(rt, t, pl->ev_plan[e])) {
        tsl__se_set_state(rt, e, TSL__EV_WAIT);
        return;
    }
    if (!tsl__rt_host_valid(rt, t)) { /* nothing to bring back */
        tsl__place_skip(rt, t, -1);
        return tsl__se_ev_done(rt, e);
    }
    for (;;) {
        if (rt->compute_wants_mem) {
            tsl__se_set_state(rt, e, TSL__EV_WMEM);
            return;
        }
        /* (its place held, TSL_ERR_BUSY: it waits for memory like a full
         * arena, retried after every free) */
        if (tsl__rt_try_alloc(rt, t, 0) == TSL_OK) break;
        if (!tsl__rt_drop_cold(rt)) { /* cold start: drop what the plan has absent */
            tsl__se_set_state(rt, e, TSL__EV_WMEM);
            return;
        }
    }
    tsl__se_set_state(rt, e, TSL__EV_RUN);
    if (tsl__se_copy(rt, t, 1, TSL__X_PLANNED, e, tsl_graph_tensor(rt->g, t)->nbytes) < 0) {
        tsl__rt_free_block(rt, t);
        return tsl__se_ev_done(rt, e);
    }
    rt->st.swaps_in++;
}

void tsl__se_retry_wmem(tsl__runtime *rt) {
    static _Thread_local int busy; /* no re-entry through a free inside a retry */
    const tsl__rt_plan *pl = rt->cur;
    /* (n_wmem == 0: nothing waits for memory, the common case: no walk) */
    if (!pl || rt->compute_wants_mem || busy || !rt->ev_state || rt->n_wmem == 0) return;
    busy = 1;
    for (int32_t e = 0; e < pl->p->n_events; e++)
        if (rt->ev_state[e] == TSL__EV_WMEM) tsl__se_swap_in(rt, e);
    busy = 0;
}

/* Runs the handler of a due event that is still scheduled. */
static void issue(tsl__runtime *rt, int32_t e) {
    if (rt->ev_state[e] != TSL__EV_SCHED || rt->draining) return; /* taken over, or failing */
    switch (rt->cur->p->events[e].type) {
    case TSL_EV_SWAP_OUT: tsl__se_swap_out(rt, e); break;
    case TSL_EV_SWAP_IN: tsl__se_swap_in(rt, e); break;
    case TSL_EV_RELEASE: tsl__se_release(rt, e); break;
    default: TSL_ASSERT(0);
    }
}

/* Real time: pops and issues the queue's events due by now, earliest first
 * (those left from an earlier iteration are dropped). Called by the queue
 * thread, and by the executor right after it queued an op's events. */
static void issue_due(tsl__runtime *rt) {
    while (rt->queue.n > 0 && !rt->stop) {
        tsl__qent top = rt->queue.a[0];
        if (top.iter != rt->iter) { /* left over from an earlier iteration */
            heap_pop(&rt->queue);
            continue;
        }
        if (top.t > tsl__rt_now(rt)) return;
        heap_pop(&rt->queue);
        issue(rt, (int32_t)top.arg);
    }
}

void tsl__se_trigger(tsl__runtime *rt, int32_t op, double end) {
    const tsl__rt_plan *pl = rt->cur;
    int pushed = 0;
    for (int32_t k = pl->trig_start[op + 1]; k < pl->trig_start[op + 2]; k++) {
        int32_t e = pl->trig_list[k];
        const tsl_event *ev = &pl->p->events[e];
        TSL_ASSERT(rt->ev_state[e] == TSL__EV_IDLE);
        tsl__se_set_state(rt, e, TSL__EV_SCHED);
        if (rt->virtual_clock) {
            switch (ev->type) {
            case TSL_EV_SWAP_OUT:
                vpush(rt, end + ev->delay_us, TSL__PH_SWAP_OUT, TSL__VK_SWAP_OUT, e);
                break;
            case TSL_EV_SWAP_IN:
                vpush(rt, end + ev->delay_us, TSL__PH_SWAP_IN, TSL__VK_SWAP_IN, e);
                break;
            case TSL_EV_RELEASE: /* at the trigger's end (+ delay if it precedes an op) */
                vpush(rt, end + ev->delay_us, TSL__PH_RELEASE, TSL__VK_RELEASE, e);
                break;
            default:
                TSL_ASSERT(0);
            }
        } else if (ev->type == TSL_EV_RELEASE && ev->delay_us == 0.0) {
            tsl__se_release(rt, e);
        } else {
            tsl__qent q = {.t = end + ev->delay_us, .arg = e, .iter = rt->iter};
            if (heap_push(&rt->queue, q) != 0) {
                note_oom(rt);
                tsl__se_ev_done(rt, e);
            } else {
                pushed = 1;
            }
        }
    }
    if (pushed && !rt->virtual_clock) {
        /* what is due already is issued here, in time order, without a
         * hand-off to the queue thread and back (two wake-ups per copy);
         * the queue thread is woken only for what is due later */
        issue_due(rt);
        if (rt->queue.n > 0) pthread_cond_signal(&rt->cv_queue);
    }
    wake(rt);
}

/* ---- virtual agenda ----------------------------------------------------------------------------- */

static void vprocess(tsl__runtime *rt, const tsl__qent *q) {
    rt->vnow = q->t;
    if (q->kind == TSL__VK_COPY_END) {
        vchan_done(rt, rt->xf[q->arg].to_device);
        copy_end(rt, q->arg);
    } else {
        issue(rt, (int32_t)q->arg);
    }
}

void tsl__vc_run_before(tsl__runtime *rt, double t, int32_t phase, uint64_t seq) {
    tsl__qent key = {.t = t, .phase = phase, .seq = seq};
    while (rt->agenda.n > 0 && qlt(&rt->agenda.a[0], &key)) {
        tsl__qent q = heap_pop(&rt->agenda);
        vprocess(rt, &q);
    }
}

/* 1 if a polled copy (no host function) is in flight. Under rt->mu. */
static int polled_in_flight(const tsl__runtime *rt) {
    for (int d = 0; d < 2; d++) {
        const tsl__fifo *f = &rt->copies[d];
        for (int64_t i = 0; i < f->n; i++)
            if (rt->xf[f->a[f->head + i]].polled) return 1;
    }
    return 0;
}

int tsl__se_wait(tsl__runtime *rt) {
    if (rt->virtual_clock) {
        if (rt->agenda.n == 0) return 0;
        tsl__qent q = heap_pop(&rt->agenda);
        vprocess(rt, &q);
        return 1;
    }
    if (rt->callbacks && land_ready(rt, 0) + land_ready(rt, 1) > 0) return 1;
    /* re-check at least every 20 ms (1 ms while a polled copy is in flight) */
    timed_wait(&rt->cv, &rt->mu, polled_in_flight(rt) ? 1.0 : 20.0);
    return 1;
}

void tsl__se_reset_iteration(tsl__runtime *rt) {
    rt->queue.n = 0;
    rt->agenda.n = 0;
    rt->vbusy[0] = rt->vbusy[1] = 0;
    for (int d = 0; d < 2; d++) {
        rt->vwait[d].n = rt->vwait[d].head = 0;
        TSL_ASSERT(rt->copies[d].n == 0);
    }
    rt->n_xf = 0;
    TSL_ASSERT(rt->xf_inflight == 0);
}

/* ---- real-time threads --------------------------------------------------------------------------- */

/* The execution queue: releases due events in time order. */
static void *queue_main(void *arg) {
    tsl__runtime *rt = arg;
    (void)prctl(PR_SET_NAME, "tsl-queue", 0UL, 0UL, 0UL); /* for top and perf */
    pthread_mutex_lock(&rt->mu);
    while (!rt->stop) {
        if (rt->queue.n == 0) {
            pthread_cond_wait(&rt->cv_queue, &rt->mu);
            continue;
        }
        issue_due(rt);
        if (rt->queue.n == 0 || rt->stop) continue;
        tsl__qent top = rt->queue.a[0];
        double due_ms = rt->t0_ms + top.t * 1e-3, now_ms = tsl_backend_now_ms();
        double wait_ms = due_ms - now_ms;
        if (wait_ms > 20.0) wait_ms = 20.0; /* the clocks may differ: re-check */
        timed_wait(&rt->cv_queue, &rt->mu, wait_ms);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

typedef struct watch_arg {
    tsl__runtime *rt;
    int to_device;
} watch_arg;

/* A channel's watcher: completes the channel's transfers in order. */
static void *watch_main(void *arg) {
    tsl__runtime *rt = ((watch_arg *)arg)->rt;
    int d = ((watch_arg *)arg)->to_device;
    free(arg);
    (void)prctl(PR_SET_NAME, d ? "tsl-watch-h2d" : "tsl-watch-d2h", 0UL, 0UL, 0UL);
    tsl__fifo *f = &rt->copies[d];
    pthread_mutex_lock(&rt->mu);
    for (;;) {
        while (!rt->stop && f->n == 0) pthread_cond_wait(&rt->cv_watch[d], &rt->mu);
        if (f->n == 0) break; /* stopping, nothing in flight */
        tsl_dev_event *ev = rt->xf[f->a[f->head]].ev_end;
        pthread_mutex_unlock(&rt->mu);
        tsl_status st = rt->b->iface->event_sync(rt->b, ev);
        pthread_mutex_lock(&rt->mu);
        if (st != TSL_OK && rt->async_err == TSL_OK) { /* a kernel failed: the step reports it */
            rt->async_err = st;
            snprintf(rt->async_msg, sizeof rt->async_msg, "%s", tsl_last_error());
        }
        land(rt, d);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

tsl_status tsl__se_start(tsl__runtime *rt) {
    rt->stop = 0;
    rt->callbacks = rt->b->iface->host_func != NULL;
    for (int d = 0; d < 2; d++) rt->landing[d] = (tsl__landing){rt, d};
    if (pthread_create(&rt->queue_th, NULL, queue_main, rt) != 0)
        return tsl_fail(TSL_ERR_INTERNAL, "runtime: cannot start the execution queue thread");
    rt->threads_on = 1;
    for (int d = 0; d < 2 && !rt->callbacks; d++) {
        watch_arg *a = malloc(sizeof *a);
        int ok = a != NULL;
        if (ok) {
            *a = (watch_arg){rt, d};
            ok = pthread_create(&rt->watch_th[d], NULL, watch_main, a) == 0;
            if (!ok) free(a);
        }
        if (!ok) {
            tsl__se_stop(rt);
            return tsl_fail(TSL_ERR_INTERNAL, "runtime: cannot start a copy watcher thread");
        }
        rt->threads_on = 2 + d;
    }
    return TSL_OK;
}

void tsl__se_stop(tsl__runtime *rt) {
    if (!rt->threads_on) return;
    pthread_mutex_lock(&rt->mu);
    if (rt->callbacks) {
        /* the copies in flight land first (their host functions use rt),
         * and those functions return before rt goes (the streams drained) */
        while (rt->copies[0].n > 0 || rt->copies[1].n > 0)
            if (land_ready(rt, 0) + land_ready(rt, 1) == 0)
                timed_wait(&rt->cv, &rt->mu, 1.0); /* a polled copy is not signalled */
        pthread_mutex_unlock(&rt->mu);
        rt->b->iface->synchronize(rt->b);
        tsl_clear_error();
        pthread_mutex_lock(&rt->mu);
    }
    rt->stop = 1;
    pthread_cond_broadcast(&rt->cv);
    pthread_cond_broadcast(&rt->cv_queue);
    for (int d = 0; d < 2; d++) pthread_cond_broadcast(&rt->cv_watch[d]);
    pthread_mutex_unlock(&rt->mu);
    pthread_join(rt->queue_th, NULL);
    for (int d = 0; d < rt->threads_on - 1 && d < 2; d++) pthread_join(rt->watch_th[d], NULL);
    rt->threads_on = 0;
}
