/*
 * sim_engine.c - the discrete-event simulation of several jobs on one device
 * (docs/SCHEDULING.md gives the semantics; sim_internal.h the contract).
 *
 * Resources: one compute resource shared by the jobs (non-preemptive; the
 * ready op with the earliest ready time runs first, ties by job index) - or,
 * with TSL_SIM_COMPUTE_PER_JOB, one per job, so that only the channels are
 * shared - and
 * the copy channels (host-to-device and device-to-host, or one shared
 * channel when the profile is not duplex): in the FIFO model each carries
 * one transfer at a time, first come first served (sim_channels.c); in the
 * fair model the jobs copying at a moment share its bandwidth, each job's
 * own transfers one at a time (sim_fair.c).
 *
 * Phases: job j's first iteration begins at its offset (0 unless given);
 * each later one when the previous one ended.
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
 * the vanilla executor's); the agenda's phases enforce it. The per-job peak
 * is the largest load over that job's counted iterations after the first
 * ("steady state"; over the only one when one iteration is simulated); the
 * global peak is the largest sum over all jobs from the moment every job has
 * begun its second iteration to the end.
 *
 * Files: sim_state.h (state), sim_clock.c, sim_memory.c, sim_channels.c,
 * sim_events.c, sim_compute.c, and this one (iterations and the loop).
 */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

void tsl__sim_record_iter(sim *s, const tsl__sim_job *j, int complete_, double end) {
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
void tsl__sim_check_iter_end(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    if (!p->in_iter || p->pos < j->n_items || p->outstanding > 0 || s->stop) return;
    TSL_ASSERT(s->cur_job == j->index);
    double end = s->cur_rel;
    p->stall += end - p->ops_end;
    p->in_iter = 0;
    tsl__sim_record_iter(s, j, 1, end);
    if (p->iter <= s->iterations) p->stall_total += p->stall;
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
    tsl__sim_push(s, at, PH_START, j->index, EV_ITER_START, 0, 0.0);
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
    memset(j->ev_state, TSL__EV_IDLE, (size_t)j->n_ev);
    p->iter_peak = p->load;
    if (tsl__sim_steady(s, p) && p->load > p->steady_peak) p->steady_peak = p->load;
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
        if (!j->alloc[t]) tsl__sim_t_alloc(s, j, t);
        j->readable[t] = 1;
        j->gen[t]++;
    }
    for (int32_t k = j->death_start[0]; k < j->death_start[1]; k++)
        if (j->alloc[j->death_list[k]]) tsl__sim_t_free(s, j, j->death_list[k]);
    tsl__sim_trigger(s, j, -1);
    p->order_ok = 1;
    tsl__sim_try_ready(s, j);
    tsl__sim_check_iter_end(s, j); /* an iteration without items and events ends at once */
}

/* Names what blocks the first unfinished job when the agenda ran dry. */
static tsl_status deadlock(sim *s) {
    for (int jx = 0; jx < s->n_jobs; jx++) {
        tsl__sim_job *j = &s->job[jx];
        prog *p = &s->pr[jx];
        if (p->done) continue;
        if (p->in_iter && p->pos < j->n_items && p->order_ok) {
            const tsl__sim_item *it = &j->items[p->pos];
            int32_t t = tsl__sim_missing_input(j, it);
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: job '%s' iteration %d: %s '%s' waits from %.3f us (in "
                            "the iteration) for tensor '%s', which is not on the device and "
                            "that nothing brings back (the plan is not valid)",
                            j->w->job, p->iter, it->tensor >= 0 ? "the recomputation of" : "op",
                            it->tensor >= 0 ? tsl__sim_tname(j, it->tensor) : j->w->ops[it->op].name,
                            p->order_ready, t >= 0 ? tsl__sim_tname(j, t) : "?");
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
    for (int k = 0; s->ch && k < s->n_ch; k++) free(s->ch[k].fifo);
    free(s->ch);
    free(s->cu);
    free(s->fc[0].act);
    free(s->fc[1].act);
    tsl__sim_heap_free(&s->heap);
}

/* Allocates the state of n_jobs jobs and of the channel model; prepares
 * each job with the profile its plan was made for. */
static tsl_status sim_init(sim *s, tsl_workload *const *w, tsl_plan *const *plans,
                           const tsl_sim_opts *o) {
    int n = s->n_jobs;
    s->n_ch = s->fair ? 2 * n : 2;
    s->job = calloc((size_t)n, sizeof *s->job);
    s->pr = calloc((size_t)n, sizeof *s->pr);
    s->ch = calloc((size_t)s->n_ch, sizeof *s->ch);
    s->cu = calloc(s->per_job ? (size_t)n : 1, sizeof *s->cu);
    for (int k = 0; k < 2 && s->fair; k++) s->fc[k].act = calloc((size_t)n, sizeof *s->fc[k].act);
    if (!s->job || !s->pr || !s->ch || !s->cu || (s->fair && (!s->fc[0].act || !s->fc[1].act)))
        return tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    for (int jx = 0; jx < n; jx++) {
        tsl_device_profile share = o->channel_share
                                       ? tsl_profile_channel_share(s->dev, o->channel_share[jx])
                                       : *s->dev;
        tsl_status st = tsl__sim_job_init(&s->job[jx], jx, w[jx], plans ? plans[jx] : NULL,
                                          o->actual ? &o->actual[jx] : NULL, s->dev, &share);
        if (st != TSL_OK) return st;
        s->pr[jx].load = s->job[jx].persistent;
        s->global_load += s->job[jx].persistent;
        s->pr[jx].iter_peak = s->pr[jx].load;
        s->pr[jx].next_t0 = o->offset_us ? o->offset_us[jx] : 0.0;
    }
    return TSL_OK;
}

tsl_status tsl__sim_run(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, const tsl_sim_opts *o,
                        tsl__sim_log *log, tsl_sim_result *out) {
    tsl_sim_opts def = {0};
    if (!o) o = &def;
    int iterations = o->iterations ? o->iterations : 3;
    TSL_ASSERT(w && dev && out && n_jobs >= 1 && iterations >= 1);
    sim s = {.n_jobs = n_jobs, .iterations = iterations, .dev = dev, .log = log,
             .single = n_jobs == 1, .cur_job = -1, .err = TSL_OK,
             .fair = o->channels == TSL_SIM_CHANNELS_FAIR,
             .per_job = o->compute == TSL_SIM_COMPUTE_PER_JOB};
    tsl_status ist = sim_init(&s, w, plans, o);
    if (ist != TSL_OK) {
        sim_free(&s);
        return ist;
    }
    s.steady_all = iterations == 1;
    for (int jx = 0; jx < n_jobs; jx++) {
        tsl__sim_note(&s, jx, 1); /* the persistent tensors, resident from the start */
        tsl__sim_push(&s, s.single ? (tsl__sim_key){1, 0.0} : (tsl__sim_key){0, s.pr[jx].next_t0},
                      PH_START, jx, EV_ITER_START, 0, 0.0);
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
        case EV_OP_END: tsl__sim_op_end(&s, j); break;
        case EV_COPY_END:
            if (tsl__sim_xfer_due(&s, &e)) tsl__sim_copy_end(&s, e.arg);
            break;
        case EV_COPY_BYTES: tsl__sim_fair_bytes(&s, e.arg); break;
        case EV_SO_ISSUE: tsl__sim_swap_out(&s, j, e.arg); break;
        case EV_RELEASE: tsl__sim_release(&s, j, e.arg); break;
        case EV_SI_ISSUE: tsl__sim_swap_in(&s, j, e.arg); break;
        case EV_ITER_START: iter_start(&s, j); break;
        case EV_DISPATCH: tsl__sim_dispatch(&s, e.arg == 0); break;
        default: TSL_ASSERT(0);
        }
    }
    tsl_status st = s.err;
    if (st == TSL_OK && s.n_done < n_jobs) st = deadlock(&s);
    if (st == TSL_OK && log) /* fillers cut short by the end */
        for (int jx = 0; jx < n_jobs; jx++)
            if (s.pr[jx].in_iter) tsl__sim_record_iter(&s, &s.job[jx], 0, tsl__sim_abs_now(&s) - s.pr[jx].t0);
    if (st == TSL_OK && log && log->oom)
        st = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory for the timeline");
    if (st == TSL_OK) {
        memset(out, 0, sizeof *out);
        out->job = calloc((size_t)n_jobs, sizeof *out->job);
        if (!out->job) st = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    }
    if (st == TSL_OK) {
        out->n_jobs = n_jobs;
        out->iterations = iterations;
        out->global_peak = s.global_peak;
        for (int jx = 0; jx < n_jobs; jx++) {
            out->job[jx].iter_us = s.pr[jx].last_iter;
            out->job[jx].stall_us = s.pr[jx].last_stall;
            out->job[jx].stall_total_us = s.pr[jx].stall_total;
            out->job[jx].peak = s.pr[jx].steady_peak;
            out->job[jx].vanilla_iter_us = s.job[jx].vanilla;
        }
    }
    sim_free(&s);
    return st;
}
