/*
 * sim_trace.c - the simulator's timeline as a Chrome trace (trace.h).
 *
 * Layout (open in Perfetto or chrome://tracing):
 *   process "device" (pid n_jobs + 1, shown first): counter "global memory"
 *     (series "bytes"): the load of all jobs together after every change.
 *   process "job NAME" per job (pid job + 1), with tracks
 *     tid 1 "compute": every op ("ph":"X", named by the op) and every
 *        recomputation ("recompute TENSOR");
 *     tid 2 "H2D": every swap-in copy ("swap_in TENSOR");
 *     tid 3 "D2H": every swap-out copy ("swap_out TENSOR");
 *     tid 4 "iterations": one span per iteration ("iteration K"), from its
 *        start to its end (ops ended and its events completed);
 *   and counter "memory" (series "bytes"): the job's load after every change.
 * Times are µs from the simulation's start. Args carry the iteration, the
 * ready or issue time and the wait (a stall of an op, the channel wait of a
 * copy).
 */
#include <stdio.h>

#include "sim/sim_internal.h"
#include "io/trace.h"

enum { TID_COMPUTE = 1, TID_H2D, TID_D2H, TID_ITER };

static void write_span(tsl__trace *tr, const tsl__sim_span *sp, tsl_workload *const *w) {
    const tsl_workload *wl = w[sp->job];
    char name[TSL_NAME_MAX + 16];
    const char *cat;
    int tid;
    json_t *args;
    switch (sp->kind) {
    case TSL__SPAN_OP:
        snprintf(name, sizeof name, "%s", wl->ops[sp->op].name);
        cat = "op";
        tid = TID_COMPUTE;
        args = json_pack("{s:i, s:i, s:f, s:f}", "iteration", sp->iter, "op", sp->op, "ready_us",
                         sp->ready, "stall_us", sp->wait);
        break;
    case TSL__SPAN_RECOMPUTE:
        snprintf(name, sizeof name, "recompute %s", wl->tensors[sp->tensor].name);
        cat = "recompute";
        tid = TID_COMPUTE;
        args = json_pack("{s:i, s:s, s:i, s:f, s:f}", "iteration", sp->iter, "producer",
                         wl->ops[sp->op].name, "event", sp->event, "ready_us", sp->ready,
                         "stall_us", sp->wait);
        break;
    default: {
        int in = sp->kind == TSL__SPAN_SWAP_IN;
        snprintf(name, sizeof name, "%s %s", in ? "swap_in" : "swap_out",
                 wl->tensors[sp->tensor].name);
        cat = in ? "swap_in" : "swap_out";
        tid = in ? TID_H2D : TID_D2H;
        args = json_pack("{s:i, s:i, s:I, s:f, s:f}", "iteration", sp->iter, "event", sp->event,
                         "bytes", (json_int_t)wl->tensors[sp->tensor].bytes, "issue_us",
                         sp->ready, "channel_wait_us", sp->wait);
    }
    }
    tsl__trace_complete(tr, sp->job + 1, tid, name, cat, sp->start, sp->end - sp->start, args);
}

tsl_status tsl__sim_write_trace(const char *path, const tsl__sim_log *log,
                                tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                                const tsl_device_profile *dev) {
    (void)plans;
    tsl__trace *tr;
    tsl_status st = tsl__trace_open(path, &tr);
    if (st != TSL_OK) return st;
    int dev_pid = n_jobs + 1;
    tsl__trace_process(tr, dev_pid, "device", 0);
    for (int jx = 0; jx < n_jobs; jx++) {
        char name[96];
        snprintf(name, sizeof name, "job %s", w[jx]->job);
        tsl__trace_process(tr, jx + 1, name, jx + 1);
        tsl__trace_thread(tr, jx + 1, TID_COMPUTE, "compute", TID_COMPUTE);
        tsl__trace_thread(tr, jx + 1, TID_H2D, "H2D", TID_H2D);
        tsl__trace_thread(tr, jx + 1, TID_D2H, "D2H", TID_D2H);
        tsl__trace_thread(tr, jx + 1, TID_ITER, "iterations", TID_ITER);
    }
    for (int64_t k = 0; k < log->n_iter; k++) {
        const tsl__sim_iter *it = &log->iter[k];
        char name[48];
        snprintf(name, sizeof name, "iteration %d", it->iter);
        json_t *args = json_pack("{s:b, s:b, s:f, s:f, s:I}", "counted", it->counted, "complete",
                                 it->complete, "ops_end_us", it->ops_end, "stall_us",
                                 it->stall_us, "peak_bytes", (json_int_t)it->peak);
        tsl__trace_complete(tr, it->job + 1, TID_ITER, name, "iteration", it->start,
                            it->end - it->start, args);
    }
    for (int64_t k = 0; k < log->n_span; k++) write_span(tr, &log->span[k], w);
    for (int64_t k = 0; k < log->n_mem; k++) {
        const tsl__sim_mem *m = &log->mem[k];
        tsl__trace_counter(tr, m->job + 1, "memory", m->t, "bytes", (double)m->job_load);
        tsl__trace_counter(tr, dev_pid, "global memory", m->t, "bytes", (double)m->global_load);
    }
    json_t *other = json_pack("{s:s, s:s, s:i, s:b}", "generator", "tensile simulator", "device",
                              dev->name, "jobs", n_jobs, "duplex", dev->duplex);
    return tsl__trace_close(tr, other);
}
