/*
 * sim_events.c - the plan's timed events as the simulator runs them:
 * swap-outs, releases, swap-ins, and the end of a copy (see sim_engine.c).
 *
 * Each event runs once per iteration: IDLE until its trigger op ends, then
 * SCHED until its issue time, then (a release or swap-in whose swap-outs
 * have not ended) WAIT, (a copy) RUN, and DONE. A release or swap-in depends
 * on the swap-outs of its tensor planned at or before it (sim_job.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

/* Schedules the timed events whose trigger is op `op` (-1: the data load),
 * which ended now (at the current event's relative time). */
void tsl__sim_trigger(sim *s, tsl__sim_job *j, int32_t op) {
    double te = s->cur_rel;
    for (int32_t k = j->trig_start[op + 1]; k < j->trig_start[op + 2]; k++) {
        int32_t e = j->trig_list[k];
        const tsl_event *ev = &j->p->events[e];
        TSL_ASSERT(j->ev_state[e] == TSL__EV_IDLE);
        j->ev_state[e] = TSL__EV_SCHED;
        switch (ev->type) {
        case TSL_EV_SWAP_OUT:
            tsl__sim_push_job(s, j->index, te + ev->delay_us, PH_SWAP_OUT, EV_SO_ISSUE, e);
            break;
        case TSL_EV_SWAP_IN:
            tsl__sim_push_job(s, j->index, te + ev->delay_us, PH_SWAP_IN, EV_SI_ISSUE, e);
            break;
        case TSL_EV_RELEASE: /* at the trigger's end (a delay only if it precedes an op) */
            tsl__sim_push_job(s, j->index, te + ev->delay_us, PH_RELEASE, EV_RELEASE, e);
            break;
        default:
            TSL_ASSERT(0);
        }
    }
}

/* Event e of job j completed (the iteration's end is checked by the
 * caller, once its handler is through). */
static void done(sim *s, tsl__sim_job *j, int32_t e) {
    TSL_ASSERT(j->ev_state[e] != TSL__EV_DONE);
    j->ev_state[e] = TSL__EV_DONE;
    prog *p = &s->pr[j->index];
    p->outstanding--;
    TSL_ASSERT(p->outstanding >= 0);
    /* the op it precedes may start now */
    if (j->p->events[e].type == TSL_EV_RELEASE && j->p->events[e].precede >= 0)
        tsl__sim_try_ready(s, j);
}

static void plan_error(sim *s, tsl__sim_job *j, int32_t e, const char *what) {
    const tsl_event *ev = &j->p->events[e];
    s->err = tsl_fail(TSL_ERR_INVALID,
                      "simulate: job '%s' iteration %d: event %d (%s of '%s') at %.3f us: %s",
                      j->w->job, s->pr[j->index].iter, e,
                      ev->type == TSL_EV_SWAP_OUT  ? "swap_out"
                      : ev->type == TSL_EV_SWAP_IN ? "swap_in"
                                                   : "release",
                      tsl__sim_tname(j, ev->tensor), tsl__sim_rel_now(s, j->index), what);
    s->stop = 1;
}

/* 1 if a swap-out of t planned at or before `plan` has not ended yet in
 * this iteration. */
static int swap_out_pending(const tsl__sim_job *j, int32_t t, double plan) {
    for (int32_t k = j->tev_start[t]; k < j->tev_start[t + 1]; k++) {
        int32_t x = j->tev_list[k];
        if (j->p->events[x].type == TSL_EV_SWAP_OUT && j->ev_plan[x] <= plan &&
            j->ev_state[x] != TSL__EV_DONE)
            return 1;
    }
    return 0;
}

/* A swap-out copies its tensor to the host. The tensor must be on the
 * device with its current value generated: readable, or being copied in
 * (its value is then the host's already; the copy runs all the same, as
 * planned). */
void tsl__sim_swap_out(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    if (!j->alloc[t] || (!j->readable[t] && j->incoming[t] < 0))
        return plan_error(s, j, e, "the tensor is not on the device (or its value is not there yet)");
    j->ev_state[e] = TSL__EV_RUN;
    tsl__sim_xfer_request(s, j, e, 0);
}

/* Release e frees its tensor now, or waits (WAIT) for the swap-outs of the
 * tensor planned at or before it. A tensor that is not on the device any
 * more (activity analysis freed it) makes the release a no-op. */
static void release_try(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    if (!j->alloc[t]) return done(s, j, e);
    if (!j->readable[t] && j->incoming[t] < 0)
        return plan_error(s, j, e, "the tensor is being generated");
    if (swap_out_pending(j, t, j->ev_plan[e])) {
        j->ev_state[e] = TSL__EV_WAIT;
        return;
    }
    tsl__sim_t_free(s, j, t);
    done(s, j, e);
}

/* Swap-in e allocates its tensor and copies it in, once the swap-outs of the
 * tensor planned at or before it have ended (WAIT until then). If the
 * tensor is still on the device (cold start of a persistent tensor; a
 * release still waiting for its swap-out under contention or drift),
 * nothing is copied and a waiting release of it is cancelled. */
static void swap_in_try(sim *s, tsl__sim_job *j, int32_t e) {
    int32_t t = j->p->events[e].tensor;
    if (j->alloc[t]) {
        for (int32_t k = j->tev_start[t]; k < j->tev_start[t + 1]; k++) {
            int32_t x = j->tev_list[k];
            if (j->p->events[x].type == TSL_EV_RELEASE && j->ev_state[x] == TSL__EV_WAIT) {
                done(s, j, x);
                break;
            }
        }
        return done(s, j, e);
    }
    if (swap_out_pending(j, t, j->ev_plan[e])) {
        j->ev_state[e] = TSL__EV_WAIT;
        return;
    }
    if (j->host_gen[t] != j->gen[t])
        return plan_error(s, j, e,
                          "no host copy of the tensor's current value (no swap-out of it has "
                          "ended since it was last written)");
    tsl__sim_t_alloc(s, j, t);
    j->readable[t] = 0;
    j->ev_state[e] = TSL__EV_RUN;
    j->incoming[t] = tsl__sim_xfer_request(s, j, e, 1);
}

void tsl__sim_release(sim *s, tsl__sim_job *j, int32_t e) {
    release_try(s, j, e);
    tsl__sim_check_iter_end(s, j);
}

void tsl__sim_swap_in(sim *s, tsl__sim_job *j, int32_t e) {
    swap_in_try(s, j, e);
    tsl__sim_check_iter_end(s, j);
}

/* Activity analysis freed t: the releases waiting to free it are done. */
void tsl__sim_freed(sim *s, tsl__sim_job *j, int32_t t) {
    for (int32_t k = j->tev_start[t]; k < j->tev_start[t + 1]; k++) {
        int32_t x = j->tev_list[k];
        if (j->p->events[x].type == TSL_EV_RELEASE && j->ev_state[x] == TSL__EV_WAIT)
            done(s, j, x);
    }
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
 * tensor becomes readable (unless it was released meanwhile); a swap-out
 * leaves a host copy (if the tensor was not written meanwhile), and the
 * releases, then the swap-ins, of its tensor that waited go on. */
void tsl__sim_copy_end(sim *s, int64_t id) {
    xfer x = s->xf[id];
    log_xfer(s, &x);
    tsl__sim_chan_done(s, id);
    tsl__sim_job *j = &s->job[x.job];
    int32_t t = x.tensor;
    if (x.to_device) {
        if (j->incoming[t] == id) { /* else released meanwhile: nothing lands */
            j->readable[t] = 1;
            j->incoming[t] = -1;
            tsl__sim_try_ready(s, j);
        }
    } else {
        if (x.gen == j->gen[t]) j->host_gen[t] = x.gen;
    }
    done(s, j, x.event);
    if (!x.to_device)
        for (int pass = 0; pass < 2 && !s->stop; pass++) /* releases, then swap-ins */
            for (int32_t k = j->tev_start[t]; k < j->tev_start[t + 1] && !s->stop; k++) {
                int32_t y = j->tev_list[k];
                if (j->ev_state[y] != TSL__EV_WAIT) continue;
                tsl_event_type ty = j->p->events[y].type;
                if (pass == 0 && ty == TSL_EV_RELEASE) release_try(s, j, y);
                if (pass == 1 && ty == TSL_EV_SWAP_IN) swap_in_try(s, j, y);
            }
    tsl__sim_check_iter_end(s, j);
}
