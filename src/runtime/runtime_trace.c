/*
 * runtime_trace.c - the timeline of the steps run since the runtime was
 * attached, and its Chrome trace in the simulator's layout (sim_trace.c),
 * written with the simulator's writer (sim/trace.h), so that a real run and
 * its simulation open side by side:
 *
 *   process "device" (pid 2): counter "global memory" (series "bytes");
 *   process "job NAME" (pid 1): tracks tid 1 "compute" (ops by name,
 *     "recompute TENSOR"), tid 2 "H2D" ("swap_in TENSOR", passive ones
 *     "passive swap_in TENSOR"), tid 3 "D2H" ("swap_out TENSOR", evictions
 *     "evict TENSOR"), tid 4 "iterations" ("iteration K"); counter "memory"
 *     (series "bytes"): the runtime's load after every change.
 *
 * Times are µs from the attach (real time) or on the virtual clock, the
 * iterations laid end to end (virtual clock). Only plan-following steps are
 * recorded.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/grow.h"
#include "runtime/runtime_internal.h"
#include "io/trace.h"

enum { TID_COMPUTE = 1, TID_H2D, TID_D2H, TID_ITER };

void tsl__log_span(tsl__runtime *rt, const tsl__rt_span *sp) {
    tsl__rt_log *l = &rt->log;
    if (tsl__grow((void **)&l->span, l->n_span, &l->cap_span, sizeof *l->span)) {
        l->oom = 1;
        return;
    }
    l->span[l->n_span++] = *sp;
}

void tsl__log_mem(tsl__runtime *rt, double t, size_t load) {
    tsl__rt_log *l = &rt->log;
    if (tsl__grow((void **)&l->mem, l->n_mem, &l->cap_mem, sizeof *l->mem)) {
        l->oom = 1;
        return;
    }
    l->mem[l->n_mem++] = (tsl__rt_mem){t, load};
}

void tsl__log_iter(tsl__runtime *rt, const tsl__rt_iter *it) {
    tsl__rt_log *l = &rt->log;
    if (tsl__grow((void **)&l->iter, l->n_iter, &l->cap_iter, sizeof *l->iter)) {
        l->oom = 1;
        return;
    }
    l->iter[l->n_iter++] = *it;
}

void tsl__log_free(tsl__rt_log *log) {
    free(log->span);
    free(log->mem);
    free(log->iter);
    log->span = NULL;
    log->mem = NULL;
    log->iter = NULL;
    log->n_span = log->n_mem = log->n_iter = 0;
}

static void write_span(tsl__trace *tr, const tsl__runtime *rt, const tsl__rt_span *sp) {
    char name[TSL_NAME_MAX + 32];
    const char *cat;
    int tid;
    json_t *args;
    const char *tn = sp->tensor >= 0 ? tsl_graph_tensor(rt->g, sp->tensor)->name : "";
    if (sp->kind == 0 || sp->kind == 1) {
        const char *on = tsl_graph_op(rt->g, sp->op)->name;
        tid = TID_COMPUTE;
        if (sp->kind == 0) {
            snprintf(name, sizeof name, "%s", on);
            cat = "op";
            args = json_pack("{s:I, s:i, s:f, s:f}", "iteration", (json_int_t)sp->iter, "op",
                             sp->op, "ready_us", sp->ready, "stall_us", sp->wait);
        } else {
            snprintf(name, sizeof name, "recompute %s", tn);
            cat = "recompute";
            args = json_pack("{s:I, s:s, s:f, s:f}", "iteration", (json_int_t)sp->iter,
                             "producer", on, "ready_us", sp->ready, "stall_us", sp->wait);
        }
    } else {
        int in = sp->kind == 2;
        const char *what = in ? (sp->xkind == TSL__X_PASSIVE ? "passive swap_in" : "swap_in")
                              : (sp->xkind == TSL__X_EVICT ? "evict" : "swap_out");
        snprintf(name, sizeof name, "%s %s", what, tn);
        cat = in ? (sp->xkind == TSL__X_PASSIVE ? "passive_swap_in" : "swap_in")
                 : (sp->xkind == TSL__X_EVICT ? "evict" : "swap_out");
        tid = in ? TID_H2D : TID_D2H;
        args = json_pack("{s:I, s:I, s:f, s:f}", "iteration", (json_int_t)sp->iter, "bytes",
                         (json_int_t)sp->bytes, "issue_us", sp->ready, "channel_wait_us",
                         sp->wait);
    }
    tsl__trace_complete(tr, 1, tid, name, cat, sp->start, sp->end - sp->start, args);
}

tsl_status tsl_session_write_trace(const tsl_session *s, const char *path) {
    if (!s || !s->rt)
        return tsl_fail(TSL_ERR_INVALID, "write trace: no runtime attached to the session");
    if (!path) return tsl_fail(TSL_ERR_INVALID, "write trace: the path is NULL");
    tsl__runtime *rt = s->rt;
    pthread_mutex_lock(&rt->mu);
    const tsl__rt_log *l = &rt->log;
    if (l->oom) {
        pthread_mutex_unlock(&rt->mu);
        return tsl_fail(TSL_ERR_OOM, "write trace '%s': the timeline is incomplete (out of host "
                                     "memory while recording)", path);
    }
    tsl__trace *tr;
    tsl_status st = tsl__trace_open(path, &tr);
    if (st != TSL_OK) {
        pthread_mutex_unlock(&rt->mu);
        return st;
    }
    char job[96];
    snprintf(job, sizeof job, "job %s", rt->w0->job[0] ? rt->w0->job : tsl_graph_name(rt->g));
    tsl__trace_process(tr, 2, "device", 0);
    tsl__trace_process(tr, 1, job, 1);
    tsl__trace_thread(tr, 1, TID_COMPUTE, "compute", TID_COMPUTE);
    tsl__trace_thread(tr, 1, TID_H2D, "H2D", TID_H2D);
    tsl__trace_thread(tr, 1, TID_D2H, "D2H", TID_D2H);
    tsl__trace_thread(tr, 1, TID_ITER, "iterations", TID_ITER);
    for (int64_t k = 0; k < l->n_iter; k++) {
        const tsl__rt_iter *it = &l->iter[k];
        char name[48];
        snprintf(name, sizeof name, "iteration %lld", (long long)it->iter);
        json_t *args = json_pack("{s:b, s:b, s:f, s:f, s:I}", "counted", 1, "complete", 1,
                                 "ops_end_us", it->ops_end, "stall_us", it->stall, "peak_bytes",
                                 (json_int_t)it->peak);
        tsl__trace_complete(tr, 1, TID_ITER, name, "iteration", it->start, it->end - it->start,
                            args);
    }
    for (int64_t k = 0; k < l->n_span; k++) write_span(tr, rt, &l->span[k]);
    for (int64_t k = 0; k < l->n_mem; k++) {
        tsl__trace_counter(tr, 1, "memory", l->mem[k].t, "bytes", (double)l->mem[k].load);
        tsl__trace_counter(tr, 2, "global memory", l->mem[k].t, "bytes", (double)l->mem[k].load);
    }
    json_t *other = json_pack("{s:s, s:s, s:s, s:i, s:b}", "generator", "tensile runtime",
                              "device", rt->o.profile.name, "clock",
                              rt->virtual_clock ? "virtual" : "real", "jobs", 1, "duplex",
                              rt->o.profile.duplex);
    pthread_mutex_unlock(&rt->mu);
    return tsl__trace_close(tr, other);
}
