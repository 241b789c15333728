/*
 * sim_internal.h - the discrete-event simulator's engine and the timeline it
 * records (not part of the public API; tsl_simulate in simulator.c is).
 *
 * Times are µs (double). Inside one iteration of one job they are relative
 * to the iteration's start and computed with exactly the expressions of the
 * planner and the verifier (docs/SCHEDULING.md; verify_timeline.c): op i
 * runs over [s_i + shift, e_i + shift], a recomputation before op p over
 * [s_p + shift, s_p + shift'], an event is issued at e'_trigger + delay, a
 * copy ends at issue + tsl_copy_us(...). An item that waits for data
 * starts when the data lands and lasts its planned duration, which is the
 * plan's arithmetic for a planned wait (docs/SCHEDULING.md, "Planned
 * waits"). As long as nothing waits but the plan's planned waits (no busy
 * channel or compute resource, no drift), the simulated times are
 * therefore bit-equal to the planned ones, and so is the order of frees
 * and allocations that decides the peak. A job that waited continues from
 * the later time (its "lag"); a wait under TSL__SIM_EPS_US is no wait.
 *
 * The timeline (tsl__sim_log) is what the Chrome trace is written from and
 * what the tests read to check a hand-computed schedule: every op and
 * recomputation run on the compute resource, every transfer on a copy
 * channel, every change of memory, every iteration of every job.
 */
#ifndef TSL_SIM_SIM_INTERNAL_H
#define TSL_SIM_SIM_INTERNAL_H

#include <stdint.h>
#include "tensile/sim.h"

/* Data that arrives at most this long after an op is due (a copy whose end
 * rounds a few ulps past the op's start) counts as on time: the op starts at
 * its due time and no stall is counted. The verifier's tolerance. */
#define TSL__SIM_EPS_US 1e-6

/* Iterations a job that finished its counted iterations may keep running
 * (uncounted "filler" iterations) while slower jobs are still running. */
#define TSL__SIM_MAX_FILLER 1000

typedef enum tsl__span_kind {
    TSL__SPAN_OP = 0,     /* an op of the workload, on the compute resource */
    TSL__SPAN_RECOMPUTE,  /* an inserted recomputation, on the compute resource */
    TSL__SPAN_SWAP_IN,    /* a host-to-device transfer */
    TSL__SPAN_SWAP_OUT,   /* a device-to-host transfer */
} tsl__span_kind;

/* One interval of the timeline. Times in µs from the simulation's start. */
typedef struct tsl__sim_span {
    int job, iter;          /* iter: 1-based, fillers included */
    tsl__span_kind kind;
    int32_t op;             /* OP: the op; RECOMPUTE: the producer re-run; else -1 */
    int32_t tensor;         /* RECOMPUTE, SWAP_*: the tensor; OP: -1 */
    int32_t event;          /* RECOMPUTE, SWAP_*: the plan's event index; OP: -1 */
    double ready;           /* OP, RECOMPUTE: previous op ended and inputs resident;
                               SWAP_*: issue time */
    double start, end;
    double rel_start, rel_end; /* the same, from the start of its iteration */
    double wait;            /* OP, RECOMPUTE: data stall (ready - previous op's end, or
                               - iteration start); SWAP_*: channel wait (start - issue) */
} tsl__sim_span;

/* One change of memory (an allocation or a free), in processing order. */
typedef struct tsl__sim_mem {
    double t;               /* µs */
    int job;
    size_t job_load;        /* bytes of that job after the change */
    size_t global_load;     /* bytes of all jobs after the change */
} tsl__sim_mem;

/* One iteration of one job. */
typedef struct tsl__sim_iter {
    int job, iter;          /* 1-based */
    int counted;            /* 1 for iterations 1..N, 0 for fillers */
    double start;           /* µs: the iteration begins (data load) */
    double ops_end;         /* its last op (or recomputation) ended */
    double end;             /* ops ended and every event of the iteration completed */
    double stall_us;        /* data waits of its ops + (end - ops_end) */
    size_t peak;            /* its largest load (the load it starts with included) */
    int complete;           /* 0 if the simulation stopped inside it (fillers only) */
} tsl__sim_iter;

typedef struct tsl__sim_log {
    tsl__sim_span *span;
    int64_t n_span, cap_span;
    tsl__sim_mem *mem;
    int64_t n_mem, cap_mem;
    tsl__sim_iter *iter;
    int64_t n_iter, cap_iter;
    int oom;                /* an append failed: the log is incomplete */
} tsl__sim_log;

void tsl__sim_log_free(tsl__sim_log *log);
/* Appends; on out of memory sets log->oom and drops the record. Returns the
 * index of the record, or -1. */
int64_t tsl__sim_log_span(tsl__sim_log *log, const tsl__sim_span *s);
void tsl__sim_log_mem(tsl__sim_log *log, const tsl__sim_mem *m);
int64_t tsl__sim_log_iter(tsl__sim_log *log, const tsl__sim_iter *it);

/* The engine. Preconditions (checked by tsl_simulate, asserted here):
 * n_jobs >= 1, every workload and plan well formed (indices in range,
 * durations >= 0), dev's bandwidths > 0, o (NULL: the defaults) with
 * iterations 0 (the default, 3) or >= 1, actual NULL or n_jobs tables of
 * n_ops finite values >= 0, offset_us NULL or n_jobs finite values >= 0,
 * channel_share NULL or n_jobs values in (0, 1]. plans or plans[j] may be
 * NULL (no events). o->trace_path is not used here. Fills *out (out->job
 * allocated: tsl_sim_result_free); records the timeline into *log if log
 * != NULL.
 * Returns TSL_OK, TSL_ERR_INVALID when the plan cannot run under these
 * latencies (a read of a tensor that nothing brings back, a swap-out of a
 * tensor that is not on the device, a swap-in without a host copy; the
 * message names the job, iteration, op or event and tensor), or
 * TSL_ERR_OOM. */
tsl_status tsl__sim_run(tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                        const tsl_device_profile *dev, const tsl_sim_opts *o,
                        tsl__sim_log *log, tsl_sim_result *out);

/* Writes the timeline as Chrome trace event JSON (sim_trace.c). */
tsl_status tsl__sim_write_trace(const char *path, const tsl__sim_log *log,
                                tsl_workload *const *w, tsl_plan *const *plans, int n_jobs,
                                const tsl_device_profile *dev);
#endif
