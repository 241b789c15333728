/*
 * simulator.c - tsl_simulate: checks its inputs, runs the discrete-event
 * engine (sim_engine.c) and writes the Chrome trace (sim_trace.c).
 *
 * What is simulated (docs/SCHEDULING.md has the semantics of one job):
 * `iterations` iterations of every job on one device, each job from its
 * phase offset on, with one compute resource and the copy channels shared
 * by all jobs (FIFO or fair: tensile/sim.h), events triggered at the
 * end of their trigger op as actually simulated plus their delay, and
 * actual op latencies that may differ from the workload's (drift). A job
 * whose plan chooses algorithms (tensile/plan.h) runs its ops with the
 * chosen algorithms' latencies and workspaces (tsl_workload_for_plan); its
 * actual latencies, if given, are of the ops so run. A job
 * that finishes its iterations before the others keeps running uncounted
 * iterations until the last job finishes, so that the device stays shared
 * as it would be in a real run.
 *
 * Reported, per job: the last counted iteration's time (from its start to
 * the end of its ops and of every event it issued: the executor waits for
 * them) and its stall (time its ops waited for data plus that final wait),
 * and the stalls of all its counted iterations;
 * the peak load over its counted iterations after the first (steady state:
 * persistent tensors swapped across iterations are absent at the start, as
 * in the plan; with one iteration, over that one); and the vanilla period
 * (its ops back to back, without a plan, at the simulated latencies). The
 * global peak is the largest load of all jobs together from the moment
 * every job has begun its second iteration to the end of the simulation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

/* Checks one workload: ops and tensor indices in range, times finite, each
 * op's start at or before its end, ends non-decreasing. */
static tsl_status check_workload(const tsl_workload *w, int jx) {
    if (!w) return tsl_fail(TSL_ERR_INVALID, "simulate: workload %d is NULL", jx);
    if (w->n_ops < 1 || w->n_tensors < 0 || !w->ops || (w->n_tensors > 0 && !w->tensors))
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: workload '%s' (job %d) has %d ops and %d tensors (needs at "
                        "least one op)",
                        w->job, jx, w->n_ops, w->n_tensors);
    double prev = w->ops[0].start_us;
    if (!isfinite(prev) || prev < 0)
        return tsl_fail(TSL_ERR_INVALID, "simulate: workload '%s': op 0 ('%s'): start_us %g",
                        w->job, w->ops[0].name, prev);
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        if (!isfinite(op->start_us) || op->start_us < 0 || op->start_us > op->end_us)
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: workload '%s': op %d ('%s'): start_us %g is not a finite "
                            "value in [0, end_us %g]",
                            w->job, i, op->name, op->start_us, op->end_us);
        if (!isfinite(op->end_us) || op->end_us < prev || op->end_us > 1e12)
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: workload '%s': op %d ('%s'): end_us %g is not finite, "
                            "before the previous op's end (%g) or beyond 1e12",
                            w->job, i, op->name, op->end_us, prev);
        prev = op->end_us;
        if (op->n_in < 0 || op->n_out < 0 || (op->n_in && !op->in) || (op->n_out && !op->out))
            return tsl_fail(TSL_ERR_INVALID, "simulate: workload '%s': op %d ('%s'): %d inputs, "
                            "%d outputs", w->job, i, op->name, op->n_in, op->n_out);
        for (int k = 0; k < op->n_in + op->n_out; k++) {
            int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
            if (t < 0 || t >= w->n_tensors)
                return tsl_fail(TSL_ERR_INVALID,
                                "simulate: workload '%s': op %d ('%s'): %s %d is tensor %d, "
                                "out of range (%d tensors)",
                                w->job, i, op->name, k < op->n_in ? "input" : "output",
                                k < op->n_in ? k : k - op->n_in, t, w->n_tensors);
        }
    }
    for (int32_t t = 0; t < w->n_tensors; t++)
        if (w->tensors[t].producer < -1 || w->tensors[t].producer >= w->n_ops)
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: workload '%s': tensor %d ('%s'): producer %d out of range",
                            w->job, t, w->tensors[t].name, w->tensors[t].producer);
    return TSL_OK;
}

/* Checks one plan against its workload: event types, tensors, triggers,
 * delays, precede ops; a recomputed tensor needs a producer op. */
static tsl_status check_plan(const tsl_plan *p, const tsl_workload *w) {
    if (!p) return TSL_OK;
    if (p->n_events < 0 || (p->n_events > 0 && !p->events))
        return tsl_fail(TSL_ERR_INVALID, "simulate: plan of job '%s': %d events", w->job,
                        p->n_events);
    for (int32_t e = 0; e < p->n_events; e++) {
        const tsl_event *ev = &p->events[e];
        if ((unsigned)ev->type > TSL_EV_RECOMPUTE)
            return tsl_fail(TSL_ERR_INVALID, "simulate: plan of job '%s': event %d: type %d",
                            w->job, e, (int)ev->type);
        if (ev->tensor < 0 || ev->tensor >= w->n_tensors)
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: plan of job '%s': event %d: tensor %d out of range (%d "
                            "tensors)",
                            w->job, e, ev->tensor, w->n_tensors);
        const char *tn = w->tensors[ev->tensor].name;
        if (ev->type != TSL_EV_RECOMPUTE && (ev->trigger < -1 || ev->trigger >= w->n_ops))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: plan of job '%s': event %d ('%s'): trigger %d out of "
                            "range (-1..%d)",
                            w->job, e, tn, ev->trigger, w->n_ops - 1);
        if (ev->type != TSL_EV_RECOMPUTE && (!isfinite(ev->delay_us) || ev->delay_us < 0 ||
                                             ev->delay_us > 1e12))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: plan of job '%s': event %d ('%s'): delay_us %g is not a "
                            "finite value in [0, 1e12]",
                            w->job, e, tn, ev->delay_us);
        if ((ev->type == TSL_EV_SWAP_IN || ev->type == TSL_EV_RECOMPUTE) &&
            (ev->precede < 0 || ev->precede >= w->n_ops))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: plan of job '%s': event %d ('%s'): precede %d out of "
                            "range (0..%d)",
                            w->job, e, tn, ev->precede, w->n_ops - 1);
        if (ev->type == TSL_EV_RECOMPUTE &&
            (w->tensors[ev->tensor].producer < 0 ||
             tsl_kind_is_persistent(w->tensors[ev->tensor].kind)))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: plan of job '%s': event %d: recomputation of '%s', which "
                            "no op of the iteration generates",
                            w->job, e, tn);
    }
    return TSL_OK;
}

static tsl_status check_profile(const tsl_device_profile *dev) {
    if (!dev) return tsl_fail(TSL_ERR_INVALID, "simulate: device profile is NULL");
    if (!(dev->h2d_bw > 0) || !isfinite(dev->h2d_bw) || !(dev->d2h_bw > 0) ||
        !isfinite(dev->d2h_bw))
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: profile '%s': h2d_bw %g and d2h_bw %g must be finite and > 0",
                        dev->name, dev->h2d_bw, dev->d2h_bw);
    if (!(dev->copy_latency_us >= 0) || !isfinite(dev->copy_latency_us))
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: profile '%s': copy_latency_us %g must be finite and >= 0",
                        dev->name, dev->copy_latency_us);
    return TSL_OK;
}

/* Checks the phases, the channel and compute models and the plans'
 * channel shares. */
static tsl_status check_sharing(const tsl_sim_opts *o, tsl_workload *const *w, int n_jobs) {
    if (o->channels != TSL_SIM_CHANNELS_FIFO && o->channels != TSL_SIM_CHANNELS_FAIR)
        return tsl_fail(TSL_ERR_INVALID, "simulate: channels %d: neither FIFO (%d) nor FAIR (%d)",
                        (int)o->channels, TSL_SIM_CHANNELS_FIFO, TSL_SIM_CHANNELS_FAIR);
    if (o->compute != TSL_SIM_COMPUTE_SHARED && o->compute != TSL_SIM_COMPUTE_PER_JOB)
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: compute %d: neither SHARED (%d) nor PER_JOB (%d)",
                        (int)o->compute, TSL_SIM_COMPUTE_SHARED, TSL_SIM_COMPUTE_PER_JOB);
    double sum = 0;
    for (int jx = 0; jx < n_jobs; jx++) {
        if (o->offset_us && !(o->offset_us[jx] >= 0 && o->offset_us[jx] <= 1e12))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: offset_us[%d] (job '%s') = %g is not a finite value in "
                            "[0, 1e12]",
                            jx, w[jx]->job, o->offset_us[jx]);
        if (!o->channel_share) continue;
        if (!(o->channel_share[jx] > 0 && o->channel_share[jx] <= 1))
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: channel_share[%d] (job '%s') = %g: a share must be in "
                            "(0, 1]",
                            jx, w[jx]->job, o->channel_share[jx]);
        sum += o->channel_share[jx];
    }
    if (sum > 1 + 1e-9)
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: the %d channel shares sum to %g, more than the device's "
                        "channels (1)",
                        n_jobs, sum);
    return TSL_OK;
}

static tsl_status check_actual(const tsl_latency_table *a, const tsl_workload *w, int jx) {
    if (a->n != w->n_ops || !a->us)
        return tsl_fail(TSL_ERR_INVALID,
                        "simulate: actual latencies of job %d ('%s'): %d entries, the workload "
                        "has %d ops",
                        jx, w->job, a->n, w->n_ops);
    for (int32_t i = 0; i < a->n; i++)
        if (!isfinite(a->us[i]) || a->us[i] < 0 || a->us[i] > 1e12)
            return tsl_fail(TSL_ERR_INVALID,
                            "simulate: actual latencies of job '%s': op %d ('%s'): %g us is not "
                            "a finite value in [0, 1e12]",
                            w->job, i, w->ops[i].name, a->us[i]);
    return TSL_OK;
}

/* See tensile/sim.h and the header comment. Returns TSL_ERR_INVALID for a
 * bad argument (naming it) or a plan that cannot run (sim_internal.h),
 * TSL_ERR_IO if the trace cannot be written, TSL_ERR_OOM. *out is filled
 * only on success (zeroed otherwise). */
tsl_status tsl_simulate(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, const tsl_sim_opts *opts,
                        tsl_sim_result *out) {
    if (!w || !out)
        return tsl_fail(TSL_ERR_INVALID, "simulate: %s is NULL", !w ? "workloads" : "out");
    memset(out, 0, sizeof *out);
    if (n_jobs < 1)
        return tsl_fail(TSL_ERR_INVALID, "simulate: n_jobs %d: at least one job", n_jobs);
    tsl_status st = check_profile(dev);
    int iterations = opts && opts->iterations ? opts->iterations : 3;
    if (st == TSL_OK && (iterations < 1 || iterations > 100000))
        st = tsl_fail(TSL_ERR_INVALID, "simulate: iterations %d outside 1..100000", iterations);
    for (int jx = 0; jx < n_jobs && st == TSL_OK; jx++) {
        st = check_workload(w[jx], jx);
        if (st == TSL_OK && plans) st = check_plan(plans[jx], w[jx]);
        if (st == TSL_OK && opts && opts->actual) st = check_actual(&opts->actual[jx], w[jx], jx);
    }
    if (st == TSL_OK && opts) st = check_sharing(opts, w, n_jobs);
    if (st != TSL_OK) return st;
    /* each job on its workload as run: the algorithms its plan chose */
    tsl_workload **owned = calloc((size_t)n_jobs, sizeof *owned);
    tsl_workload **run = calloc((size_t)n_jobs, sizeof *run);
    if (!owned || !run) st = tsl_fail(TSL_ERR_OOM, "simulate: out of host memory");
    for (int jx = 0; jx < n_jobs && st == TSL_OK; jx++) {
        const tsl_plan *p = plans ? plans[jx] : NULL;
        if (p && p->n_algos != 0) st = tsl_workload_for_plan(w[jx], p, &owned[jx]);
        run[jx] = owned[jx] ? owned[jx] : w[jx];
    }
    const char *trace = opts ? opts->trace_path : NULL;
    tsl__sim_log log = {0};
    tsl_sim_result r = {0};
    if (st == TSL_OK) st = tsl__sim_run(run, plans, n_jobs, dev, opts, trace ? &log : NULL, &r);
    if (st == TSL_OK && trace) st = tsl__sim_write_trace(trace, &log, run, plans, n_jobs, dev);
    for (int jx = 0; owned && jx < n_jobs; jx++) tsl_workload_free(owned[jx]);
    free(owned);
    free(run);
    tsl__sim_log_free(&log);
    if (st == TSL_OK) *out = r;
    else tsl_sim_result_free(&r);
    return st;
}

void tsl_sim_result_free(tsl_sim_result *out) {
    if (!out) return;
    free(out->job);
    memset(out, 0, sizeof *out);
}
