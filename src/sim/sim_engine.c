/*
 * sim_engine.c - the discrete-event simulation of several jobs on one device
 * (docs/SCHEDULING.md gives the semantics; sim_internal.h the contract).
 *
 * Resources: one compute resource shared by the jobs (non-preemptive; the
 * ready op with the earliest ready time runs first, ties by job index), and
 * the copy channels (host-to-device and device-to-host, or one shared
 * channel when the profile is not duplex), each carrying one transfer at a
 * time, first come first served.
 *
 * A job runs its executed sequence (ops, with the plan's recomputations
 * inserted) in order. An item is ready when the previous item ended (or the
 * iteration began) and every tensor it reads is resident and readable; the
 * time between the two is a stall. Events trigger at the end of their
 * trigger op as simulated plus the delay. Iteration k+1 begins when
 * iteration k's items ended and every event of iteration k completed.
 *
 * Time: every job keeps its times relative to its iteration's start with
 * the shared arithmetic (sim_internal.h); an item that starts later than
 * its nominal start (a stall, a busy compute resource) shifts the rest of
 * the iteration. Absolute time orders the jobs against each other.
 *
 * Memory: per job and global, in bytes. At one time point completions
 * (frees) run before issues and starts (allocations), and zero-duration ops
 * run before the events acting at that time (the verifier's order, which is
 * the vanilla executor's); the agenda's phases enforce it. The per-job peak is the largest load over that job's counted
 * iterations after the first ("steady state"; over the only one when one
 * iteration is simulated); the global peak is the largest sum over all jobs
 * from the moment every job has begun its second iteration to the end.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_heap.h"
#include "sim/sim_job.h"

/* Agenda phases at one time point. */
enum { PH_DONE = 0, PH_ZERO, PH_SWAP_OUT, PH_RELEASE, PH_SWAP_IN, PH_START };
/* Agenda event kinds. */
enum { EV_OP_END = 0, EV_COPY_END, EV_SO_ISSUE, EV_RELEASE, EV_SI_ISSUE, EV_ITER_START,
       EV_DISPATCH };

/* One transfer on a copy channel. */
typedef struct xfer {
    int job, iter;
    int32_t event, tensor;
    int to_device;
    uint32_t gen;           /* swap-out: the value generation copied */
    double issue, start, dur; /* relative to the job's iteration start */
} xfer;

/* One copy channel: busy flag and a FIFO of waiting transfer ids. */
typedef struct chan {
    int busy;
    int64_t *fifo;
    int64_t head, n, cap;
} chan;

/* Per-job run-time progress (beside the tensor state of tsl__sim_job). */
typedef struct prog {
    int iter;               /* current iteration, 1-based; 0 before the first */
    int in_iter;            /* between its start and its end */
    int32_t pos;            /* next item of the sequence */
    int order_ok;           /* the previous item ended: pos may start once data is there */
    int ready;              /* pos may start: waiting for the compute resource */
    int running;            /* pos runs on the compute resource */
    double t0;              /* absolute start of the current iteration */
    double next_t0;         /* absolute start of the next one, once queued */
    /* relative to t0: */
    double order_ready, ready_at, run_start, run_end, ops_end, stall;
    tsl__sim_key ready_key; /* agenda key of ready_at */
    int outstanding;        /* timed events of this iteration not completed yet */
    size_t load, iter_peak, steady_peak;
    size_t ws;              /* workspace held by the running item */
    int done;               /* counted iterations finished */
    double last_iter, last_stall;
} prog;

typedef struct sim {
    tsl__sim_job *job;
    prog *pr;
    int n_jobs, iterations;
    const tsl_device_profile *dev;
    tsl__sim_heap heap;
    tsl__sim_log *log;
    xfer *xf;
    int64_t n_xf, cap_xf;
    chan ch[2];
    int compute_busy;
    int single;             /* one job: agenda keys are (iteration, relative time) */
    int dispatch_q[2];      /* a dispatch is queued at `now` (PH_ZERO, PH_START) */
    tsl__sim_key now;       /* key of the event being processed */
    double now_abs;         /* its absolute time */
    int cur_job;            /* its job (-1: device-wide) */
    double cur_rel;         /* its time relative to that job's iteration start */
    size_t global_load, global_peak;
    int steady_all;         /* every job began its second iteration (or N == 1) */
    int n_done;
    int stop;
    tsl_status err;
} sim;

/* ---- errors, clock and agenda -------------------------------------------------- */

/* Records the first error: the loop stops at the next event. */
static void fail_oom(sim *s) {
    if (s->err == TSL_OK) s->err = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    s->stop = 1;
}

/* The agenda key of time `rel` in job jx's current iteration. */
static tsl__sim_key key_of(const sim *s, int jx, double rel) {
    if (s->single) return (tsl__sim_key){s->pr[jx].iter, rel};
    return (tsl__sim_key){0, s->pr[jx].t0 + rel};
}

/* The current time, relative to job jx's iteration start: exact for the
 * job whose event is being processed (and for the only job). */
static double rel_now(const sim *s, int jx) {
    if (jx == s->cur_job) return s->cur_rel;
    if (s->single) return s->now.t;
    return s->now.t - s->pr[jx].t0;
}

/* The current absolute time (µs from the simulation's start). */
static double abs_now(const sim *s) {
    return s->single ? s->pr[0].t0 + s->now.t : s->now.t;
}

static void push(sim *s, tsl__sim_key at, int phase, int job, int kind, int32_t arg,
                 double rel) {
    tsl__sim_ev e = {.at = at, .phase = phase, .job = job, .kind = kind, .arg = arg, .rel = rel};
    if (tsl__sim_heap_push(&s->heap, e)) fail_oom(s);
}

/* An event of job jx at time `rel` of its current iteration. */
static void push_job(sim *s, int jx, double rel, int phase, int kind, int32_t arg) {
    push(s, key_of(s, jx, rel), phase, jx, kind, arg, rel);
}

/* Queues a look at the compute resource now: once for zero-duration items
 * (before the events acting now), once for every item (after them). */
static void request_dispatch(sim *s) {
    for (int k = 0; k < 2; k++) {
        if (s->dispatch_q[k]) continue;
        s->dispatch_q[k] = 1;
        push(s, s->now, k == 0 ? PH_ZERO : PH_START, INT32_MAX, EV_DISPATCH, k, 0.0);
    }
}

static const char *tname(const tsl__sim_job *j, int32_t t) { return j->w->tensors[t].name; }

/* ---- memory ----------------------------------------------------------------- */

/* 1 if the job's current iteration counts for its steady-state peak. */
static int steady(const sim *s, const prog *p) {
    return p->iter <= s->iterations && (s->iterations == 1 || p->iter >= 2);
}

/* Records the loads after a change; `grew` when the change was an allocation
 * (peaks can only rise then). */
static void note(sim *s, int jx, int grew) {
    prog *p = &s->pr[jx];
    if (grew) {
        if (p->load > p->iter_peak) p->iter_peak = p->load;
        if (steady(s, p) && p->load > p->steady_peak) p->steady_peak = p->load;
        if (s->steady_all && s->global_load > s->global_peak) s->global_peak = s->global_load;
    }
    if (s->log) {
        tsl__sim_mem m = {abs_now(s), jx, p->load, s->global_load};
        tsl__sim_log_mem(s->log, &m);
    }
}

static void mem_add(sim *s, int jx, size_t b) {
    s->pr[jx].load += b;
    s->global_load += b;
    note(s, jx, 1);
}

static void mem_sub(sim *s, int jx, size_t b) {
    TSL_ASSERT(s->pr[jx].load >= b && s->global_load >= b);
    s->pr[jx].load -= b;
    s->global_load -= b;
    note(s, jx, 0);
}

static void t_alloc(sim *s, tsl__sim_job *j, int32_t t) {
    TSL_ASSERT(!j->alloc[t]);
    j->alloc[t] = 1;
    mem_add(s, j->index, j->w->tensors[t].bytes);
}

static void t_free(sim *s, tsl__sim_job *j, int32_t t) {
    TSL_ASSERT(j->alloc[t]);
    j->alloc[t] = 0;
    j->readable[t] = 0;
    mem_sub(s, j->index, j->w->tensors[t].bytes);
}

/* ---- channels --------------------------------------------------------------- */

static chan *chan_of(sim *s, int to_device) {
    return s->dev->duplex ? &s->ch[to_device ? 0 : 1] : &s->ch[0];
}

/* Transfer `id` starts now, at `start` (relative to its job's iteration). */
static void xfer_start(sim *s, int64_t id, double start) {
    xfer *x = &s->xf[id];
    x->start = start;
    push_job(s, x->job, start + x->dur, PH_DONE, EV_COPY_END, (int32_t)id);
}

/* A new transfer for event e of job j, issued now (the current event's
 * time): starts at once if its channel is free, else waits in the channel's
 * FIFO. */
static void xfer_request(sim *s, tsl__sim_job *j, int32_t e, int to_device) {
    if (s->n_xf == s->cap_xf) {
        int64_t cap = s->cap_xf ? 2 * s->cap_xf : 256;
        xfer *a = realloc(s->xf, (size_t)cap * sizeof *a);
        if (!a) return fail_oom(s);
        s->xf = a;
        s->cap_xf = cap;
    }
    int64_t id = s->n_xf++;
    int32_t t = j->p->events[e].tensor;
    s->xf[id] = (xfer){.job = j->index, .iter = s->pr[j->index].iter, .event = e, .tensor = t,
                       .to_device = to_device, .gen = j->gen[t],
                       .issue = rel_now(s, j->index), .dur = j->ev_copy[e]};
    chan *c = chan_of(s, to_device);
    if (!c->busy) {
        c->busy = 1;
        xfer_start(s, id, s->xf[id].issue);
        return;
    }
    if (c->head + c->n == c->cap) {
        if (c->head > 0) { /* compact */
            memmove(c->fifo, c->fifo + c->head, (size_t)c->n * sizeof *c->fifo);
            c->head = 0;
        }
        if (c->n == c->cap) {
            int64_t cap = c->cap ? 2 * c->cap : 64;
            int64_t *f = realloc(c->fifo, (size_t)cap * sizeof *f);
            if (!f) return fail_oom(s);
            c->fifo = f;
            c->cap = cap;
        }
    }
    c->fifo[c->head + c->n++] = id;
}

/* ---- compute ---------------------------------------------------------------- */

/* The first tensor item `it` reads that is not readable, or -1. An op reads
 * its inputs; a recomputation reads its producer's inputs. */
static int32_t missing_input(const tsl__sim_job *j, const tsl__sim_item *it) {
    const tsl_wl_op *op = &j->w->ops[it->op];
    for (int k = 0; k < op->n_in; k++)
        if (!j->readable[op->in[k]]) return op->in[k];
    return -1;
}

/* If job j's next item has its predecessor done and its data resident, it
 * becomes ready now; the wait for data counts as a stall. */
static void try_ready(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    if (!p->in_iter || !p->order_ok || p->ready || p->running || p->pos >= j->n_items) return;
    if (missing_input(j, &j->items[p->pos]) >= 0) return;
    p->ready = 1;
    p->ready_at = rel_now(s, j->index);
    p->ready_key = s->now;
    p->stall += p->ready_at - p->order_ready;
    request_dispatch(s);
}

/* Start and end (relative) of job jx's ready item if it started now: at
 * its nominal times if it is on time, else shifted by its lag. */
static void item_times(const sim *s, int jx, double *start, double *end) {
    const prog *p = &s->pr[jx];
    const tsl__sim_item *it = &s->job[jx].items[p->pos];
    double st = tsl__sim_key_cmp(p->ready_key, s->now) == 0 ? p->ready_at : rel_now(s, jx);
    *start = st;
    *end = st == it->ns ? it->ne : st + (it->ne - it->ns);
}

/* Starts job j's next item on the compute resource: allocates its outputs
 * that are not resident (a recomputation: its tensor) and the workspace of
 * the op it runs. */
static void start_item(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    const tsl_wl_op *op = &j->w->ops[it->op];
    item_times(s, j->index, &p->run_start, &p->run_end);
    p->ready = p->order_ok = 0;
    p->running = 1;
    s->compute_busy = 1;
    if (it->tensor >= 0) {
        if (!j->alloc[it->tensor]) t_alloc(s, j, it->tensor);
    } else {
        for (int k = 0; k < op->n_out; k++) {
            int32_t t = op->out[k];
            if (!j->alloc[t]) t_alloc(s, j, t);
            j->gen[t]++; /* a new value: older host copies are stale */
        }
    }
    p->ws = op->workspace;
    if (p->ws) mem_add(s, j->index, p->ws);
    push_job(s, j->index, p->run_end, PH_DONE, EV_OP_END, 0);
}

/* Serves the ready item with the earliest ready time (ties: job index);
 * in phase PH_ZERO only an item that takes no time. */
static void dispatch(sim *s, int zero_only) {
    s->dispatch_q[zero_only ? 0 : 1] = 0;
    if (s->compute_busy) return;
    int best = -1;
    for (int jx = 0; jx < s->n_jobs; jx++) {
        const prog *p = &s->pr[jx];
        if (!p->ready) continue;
        if (zero_only) {
            double st, en;
            item_times(s, jx, &st, &en);
            if (en != st) continue;
        }
        if (best < 0 || tsl__sim_key_cmp(p->ready_key, s->pr[best].ready_key) < 0) best = jx;
    }
    if (best >= 0) start_item(s, &s->job[best]);
}

/* ---- events of the plan ------------------------------------------------------ */

/* Schedules the timed events whose trigger is op `op` (-1: the data load),
 * which ended now (at the current event's relative time). */
static void trigger(sim *s, tsl__sim_job *j, int32_t op) {
    double te = s->cur_rel;
    for (int32_t k = j->trig_start[op + 1]; k < j->trig_start[op + 2]; k++) {
        int32_t e = j->trig_list[k];
        const tsl_event *ev = &j->p->events[e];
        switch (ev->type) {
        case TSL_EV_SWAP_OUT:
            j->so_unissued[ev->tensor]++;
            push_job(s, j->index, te + ev->delay_us, PH_SWAP_OUT, EV_SO_ISSUE, e);
            break;
        case TSL_EV_SWAP_IN:
            push_job(s, j->index, te + ev->delay_us, PH_SWAP_IN, EV_SI_ISSUE, e);
            break;
        case TSL_EV_RELEASE: /* frees at the trigger's end (no delay, docs) */
            push_job(s, j->index, te, PH_RELEASE, EV_RELEASE, e);
            break;
        default:
            TSL_ASSERT(0);
        }
    }
}

static void check_iter_end(sim *s, tsl__sim_job *j);

/* n timed events of job j completed. */
static void complete(sim *s, tsl__sim_job *j, int n) {
    prog *p = &s->pr[j->index];
    p->outstanding -= n;
    TSL_ASSERT(p->outstanding >= 0);
    check_iter_end(s, j);
}

static void plan_error(sim *s, tsl__sim_job *j, int32_t e, const char *what) {
    const tsl_event *ev = &j->p->events[e];
    s->err = tsl_fail(TSL_ERR_INVALID,
                      "simulate: job '%s' iteration %d: event %d (%s of '%s') at %.3f us: %s",
                      j->w->job, s->pr[j->index].iter, e,
                      ev->type == TSL_EV_SWAP_OUT  ? "swap_out"
                      : ev->type == TSL_EV_SWAP_IN ? "swap_in"
                                                   : "release",
                      tname(j, ev->tensor), rel_now(s, j->index), what);
    s->stop = 1;
}

static void swap_out_issue(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    j->so_unissued[t]--;
    if (!j->readable[t])
        return plan_error(s, j, e, "the tensor is not on the device (or its value is not there yet)");
    j->so_inflight[t]++;
    xfer_request(s, j, e, 0);
}

/* A release frees its tensor now, or, while a swap-out of it triggered so far
 * has not finished, when the last such swap-out ends. */
static void release(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    if (!j->alloc[t]) return complete(s, j, 1);
    if (!j->readable[t])
        return plan_error(s, j, e, "the tensor is being copied in or generated");
    if (j->so_inflight[t] > 0 || j->so_unissued[t] > 0) {
        j->rel_pending[t]++;
        return;
    }
    t_free(s, j, t);
    complete(s, j, 1);
}

/* A swap-in allocates its tensor and copies it in. If the tensor is still on
 * the device (cold start of a persistent tensor; a release still waiting for
 * its swap-out under contention or drift), nothing is copied and a waiting
 * release is cancelled. If a swap-out of it is still pending, the swap-in
 * waits for that swap-out's end. */
static void swap_in_issue(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    if (j->alloc[t]) {
        int n = 1;
        if (j->rel_pending[t] > 0) {
            j->rel_pending[t]--;
            n++;
        }
        return complete(s, j, n);
    }
    if (j->so_inflight[t] > 0 || j->so_unissued[t] > 0) {
        if (j->deferred_in[t] >= 0)
            return plan_error(s, j, e, "a second swap-in waits for the same swap-out");
        j->deferred_in[t] = e;
        return;
    }
    if (j->host_gen[t] != j->gen[t])
        return plan_error(s, j, e,
                          "no host copy of the tensor's current value (no swap-out of it has "
                          "ended since it was last written)");
    t_alloc(s, j, t);
    j->readable[t] = 0;
    xfer_request(s, j, e, 1);
}

/* ---- completions ------------------------------------------------------------- */

static void log_item(sim *s, tsl__sim_job *j) {
    if (!s->log) return;
    const prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    tsl__sim_span sp = {.job = j->index, .iter = p->iter,
                        .kind = it->tensor >= 0 ? TSL__SPAN_RECOMPUTE : TSL__SPAN_OP,
                        .op = it->op, .tensor = it->tensor, .event = it->event,
                        .ready = p->t0 + p->ready_at, .start = p->t0 + p->run_start,
                        .end = p->t0 + p->run_end, .rel_start = p->run_start,
                        .rel_end = p->run_end, .wait = p->ready_at - p->order_ready};
    tsl__sim_log_span(s->log, &sp);
}

/* Job j's running item ended: its workspace and (activity analysis) the
 * tensors whose last read it was are freed, its outputs become readable,
 * and the events it triggers are scheduled. */
static void op_end(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    const tsl_wl_op *op = &j->w->ops[it->op];
    log_item(s, j);
    s->compute_busy = 0;
    p->running = 0;
    if (p->ws) mem_sub(s, j->index, p->ws);
    p->ws = 0;
    if (it->tensor >= 0) {
        j->readable[it->tensor] = 1;
    } else {
        for (int k = 0; k < op->n_out; k++) j->readable[op->out[k]] = 1;
        for (int32_t k = j->death_start[it->op + 1]; k < j->death_start[it->op + 2]; k++) {
            int32_t t = j->death_list[k];
            if (!j->alloc[t]) continue;
            t_free(s, j, t);
            if (j->rel_pending[t]) { /* freed already: those releases are done */
                p->outstanding -= j->rel_pending[t];
                j->rel_pending[t] = 0;
            }
        }
        trigger(s, j, it->op);
    }
    p->pos++;
    if (p->pos == j->n_items) {
        p->ops_end = s->cur_rel;
        check_iter_end(s, j);
    } else {
        p->order_ok = 1;
        p->order_ready = s->cur_rel;
        try_ready(s, j);
    }
    request_dispatch(s);
}

static void log_xfer(sim *s, const xfer *x) {
    if (!s->log) return;
    double t0 = s->pr[x->job].t0, end = s->cur_rel;
    tsl__sim_span sp = {.job = x->job, .iter = x->iter,
                        .kind = x->to_device ? TSL__SPAN_SWAP_IN : TSL__SPAN_SWAP_OUT,
                        .op = -1, .tensor = x->tensor, .event = x->event,
                        .ready = t0 + x->issue, .start = t0 + x->start, .end = t0 + end,
                        .rel_start = x->start, .rel_end = end, .wait = x->start - x->issue};
    tsl__sim_log_span(s->log, &sp);
}

/* Transfer `id` ended: the channel takes its next transfer; a swap-in's
 * tensor becomes readable; a swap-out leaves a host copy (if the tensor was
 * not written meanwhile), and once no swap-out of the tensor is pending,
 * the releases waiting for it free it and a swap-in waiting for it goes. */
static void copy_end(sim *s, int64_t id) {
    xfer x = s->xf[id];
    log_xfer(s, &x);
    chan *c = chan_of(s, x.to_device);
    c->busy = 0;
    if (c->n > 0) {
        int64_t next = c->fifo[c->head++];
        c->n--;
        if (c->n == 0) c->head = 0;
        c->busy = 1;
        xfer_start(s, next, rel_now(s, s->xf[next].job));
    }
    tsl__sim_job *j = &s->job[x.job];
    int32_t t = x.tensor;
    if (x.to_device) {
        j->readable[t] = 1;
        try_ready(s, j);
        return complete(s, j, 1);
    }
    j->so_inflight[t]--;
    if (x.gen == j->gen[t]) j->host_gen[t] = x.gen;
    int n = 1;
    if (j->so_inflight[t] == 0 && j->so_unissued[t] == 0) {
        if (j->rel_pending[t] > 0) {
            if (j->alloc[t]) t_free(s, j, t);
            n += j->rel_pending[t];
            j->rel_pending[t] = 0;
        }
        if (j->deferred_in[t] >= 0) {
            int32_t e = j->deferred_in[t];
            j->deferred_in[t] = -1;
            s->pr[x.job].outstanding -= n; /* before: the swap-in may end the iteration */
            n = 0;
            swap_in_issue(s, j, e);
        }
    }
    complete(s, j, n);
}

/* ---- iterations -------------------------------------------------------------- */

static void log_iter(sim *s, const tsl__sim_job *j, int complete_, double end) {
    if (!s->log) return;
    const prog *p = &s->pr[j->index];
    tsl__sim_iter it = {.job = j->index, .iter = p->iter, .counted = p->iter <= s->iterations,
                        .start = p->t0, .ops_end = p->t0 + (complete_ ? p->ops_end : end),
                        .end = p->t0 + end, .stall_us = p->stall, .peak = p->iter_peak,
                        .complete = complete_};
    tsl__sim_log_iter(s->log, &it);
}

/* Ends job j's iteration if its items ended and its events completed (at the
 * current event, which is job j's); queues the next one. */
static void check_iter_end(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    if (!p->in_iter || p->pos < j->n_items || p->outstanding > 0 || s->stop) return;
    TSL_ASSERT(s->cur_job == j->index);
    double end = s->cur_rel;
    p->stall += end - p->ops_end;
    p->in_iter = 0;
    log_iter(s, j, 1, end);
    if (p->iter == s->iterations) {
        p->done = 1;
        p->last_iter = end;
        p->last_stall = p->stall;
        if (++s->n_done == s->n_jobs) {
            s->stop = 1;
            return;
        }
    }
    if (p->iter >= s->iterations + TSL__SIM_MAX_FILLER) return;
    double t0 = p->t0 + end;
    tsl__sim_key at = s->single ? (tsl__sim_key){p->iter + 1, 0.0} : (tsl__sim_key){0, t0};
    push(s, at, PH_START, j->index, EV_ITER_START, 0, 0.0);
    p->next_t0 = t0;
}

/* Job j begins an iteration now: its data is loaded (INPUT, LABEL
 * allocated; the unread ones freed at once: the data load is op -1 of no
 * duration), the events triggered by the iteration start are scheduled. */
static void iter_start(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    p->t0 = p->next_t0;
    p->iter++;
    p->in_iter = 1;
    p->pos = 0;
    p->order_ready = p->ops_end = 0.0;
    p->stall = 0.0;
    p->outstanding = j->n_timed;
    p->iter_peak = p->load;
    if (steady(s, p) && p->load > p->steady_peak) p->steady_peak = p->load;
    if (!s->steady_all && p->iter == 2) {
        int all = 1;
        for (int k = 0; k < s->n_jobs; k++) all &= s->pr[k].iter >= 2;
        if (all) {
            s->steady_all = 1;
            if (s->global_load > s->global_peak) s->global_peak = s->global_load;
        }
    }
    for (int32_t k = 0; k < j->n_data; k++) {
        int32_t t = j->data[k];
        if (!j->alloc[t]) t_alloc(s, j, t);
        j->readable[t] = 1;
        j->gen[t]++;
    }
    for (int32_t k = j->death_start[0]; k < j->death_start[1]; k++)
        if (j->alloc[j->death_list[k]]) t_free(s, j, j->death_list[k]);
    trigger(s, j, -1);
    p->order_ok = 1;
    try_ready(s, j);
    check_iter_end(s, j); /* an iteration without items and events ends at once */
}

/* ---- the loop ---------------------------------------------------------------- */

/* Names what blocks the first unfinished job when the agenda ran dry. */
static tsl_status deadlock(sim *s) {
    for (int jx = 0; jx < s->n_jobs; jx++) {
        tsl__sim_job *j = &s->job[jx];
        prog *p = &s->pr[jx];
        if (p->done) continue;
        if (p->in_iter && p->pos < j->n_items && p->order_ok) {
            const tsl__sim_item *it = &j->items[p->pos];
            int32_t t = missing_input(j, it);
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: job '%s' iteration %d: %s '%s' waits from %.3f us (in "
                            "the iteration) for tensor '%s', which is not on the device and "
                            "that nothing brings back (the plan is not valid)",
                            j->w->job, p->iter, it->tensor >= 0 ? "the recomputation of" : "op",
                            it->tensor >= 0 ? tname(j, it->tensor) : j->w->ops[it->op].name,
                            p->order_ready, t >= 0 ? tname(j, t) : "?");
        }
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: job '%s' iteration %d cannot complete: %d of its events "
                        "never complete (a release or swap-in waiting for a swap-out that "
                        "never ends?)",
                        j->w->job, p->iter, p->outstanding);
    }
    return tsl_fail(TSL_ERR_INTERNAL, "simulate: the agenda ran dry");
}

static void sim_free(sim *s) {
    if (s->job)
        for (int jx = 0; jx < s->n_jobs; jx++) tsl__sim_job_free(&s->job[jx]);
    free(s->job);
    free(s->pr);
    free(s->xf);
    free(s->ch[0].fifo);
    free(s->ch[1].fifo);
    tsl__sim_heap_free(&s->heap);
}

tsl_status tsl__sim_run(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, int iterations,
                        const tsl_latency_table *actual, tsl__sim_log *log,
                        tsl_sim_result *out) {
    TSL_ASSERT(w && dev && out && n_jobs >= 1 && n_jobs <= 16 && iterations >= 1);
    sim s = {.n_jobs = n_jobs, .iterations = iterations, .dev = dev, .log = log,
             .single = n_jobs == 1, .cur_job = -1, .err = TSL_OK};
    s.job = calloc((size_t)n_jobs, sizeof *s.job);
    s.pr = calloc((size_t)n_jobs, sizeof *s.pr);
    if (!s.job || !s.pr) {
        sim_free(&s);
        return tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    }
    for (int jx = 0; jx < n_jobs; jx++) {
        tsl_status st = tsl__sim_job_init(&s.job[jx], jx, w[jx], plans ? plans[jx] : NULL,
                                          actual ? &actual[jx] : NULL, dev);
        if (st != TSL_OK) {
            sim_free(&s);
            return st;
        }
        s.pr[jx].load = s.job[jx].persistent;
        s.global_load += s.job[jx].persistent;
        s.pr[jx].iter_peak = s.pr[jx].load;
    }
    s.steady_all = iterations == 1;
    for (int jx = 0; jx < n_jobs; jx++) {
        note(&s, jx, 1); /* the persistent tensors, resident from the start */
        push(&s, s.single ? (tsl__sim_key){1, 0.0} : (tsl__sim_key){0, 0.0}, PH_START, jx,
             EV_ITER_START, 0, 0.0);
    }
    tsl__sim_ev e;
    while (!s.stop && tsl__sim_heap_pop(&s.heap, &e) == 0) {
        TSL_ASSERT(tsl__sim_key_cmp(e.at, s.now) >= 0);
        if (tsl__sim_key_cmp(e.at, s.now) != 0) s.dispatch_q[0] = s.dispatch_q[1] = 0;
        s.now = e.at;
        s.cur_job = e.job < n_jobs ? e.job : -1;
        s.cur_rel = e.rel;
        tsl__sim_job *j = s.cur_job >= 0 ? &s.job[e.job] : NULL;
        switch (e.kind) {
        case EV_OP_END: op_end(&s, j); break;
        case EV_COPY_END: copy_end(&s, e.arg); break;
        case EV_SO_ISSUE: swap_out_issue(&s, j, e.arg); break;
        case EV_RELEASE: release(&s, j, e.arg); break;
        case EV_SI_ISSUE: swap_in_issue(&s, j, e.arg); break;
        case EV_ITER_START: iter_start(&s, j); break;
        case EV_DISPATCH: dispatch(&s, e.arg == 0); break;
        default: TSL_ASSERT(0);
        }
    }
    tsl_status st = s.err;
    if (st == TSL_OK && s.n_done < n_jobs) st = deadlock(&s);
    if (st == TSL_OK && log) /* fillers cut short by the end */
        for (int jx = 0; jx < n_jobs; jx++)
            if (s.pr[jx].in_iter) log_iter(&s, &s.job[jx], 0, abs_now(&s) - s.pr[jx].t0);
    if (st == TSL_OK && log && log->oom)
        st = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory for the timeline");
    if (st == TSL_OK) {
        memset(out, 0, sizeof *out);
        out->n_jobs = n_jobs;
        out->iterations = iterations;
        out->global_peak = s.global_peak;
        for (int jx = 0; jx < n_jobs; jx++) {
            out->job[jx].iter_us = s.pr[jx].last_iter;
            out->job[jx].stall_us = s.pr[jx].last_stall;
            out->job[jx].peak = s.pr[jx].steady_peak;
            out->job[jx].vanilla_iter_us = s.job[jx].vanilla;
        }
    }
    sim_free(&s);
    return st;
}
