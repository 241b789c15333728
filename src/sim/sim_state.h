/*
 * sim_state.h - the simulator engine's state and the functions its files
 * share (sim_clock.c: time and agenda; sim_memory.c: loads and peaks;
 * sim_channels.c: copy channels and their FIFOs; sim_fair.c: bandwidth
 * shared by the transfers of several jobs (the fair model); sim_events.c:
 * the plan's events;
 * sim_compute.c: the compute resource; sim_engine.c: iterations and the
 * loop). Not part of the public API; see sim_engine.c for what is modelled.
 */
#ifndef TSL_SIM_SIM_STATE_H
#define TSL_SIM_SIM_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "sim/sim_heap.h"
#include "sim/sim_job.h"

/* Agenda phases at one time point. */
enum { PH_DONE = 0, PH_ZERO, PH_SWAP_OUT, PH_RELEASE, PH_SWAP_IN, PH_START };
/* Agenda event kinds. */
enum { EV_OP_END = 0, EV_COPY_END, EV_SO_ISSUE, EV_RELEASE, EV_SI_ISSUE, EV_ITER_START,
       EV_DISPATCH, EV_COPY_BYTES };

/* A transfer's state. */
enum { XF_QUEUED = 0, XF_LATENCY, XF_BYTES, XF_DONE };

/* One transfer on a copy channel. */
typedef struct xfer {
    int job, iter;
    int32_t event, tensor;
    int to_device;
    uint32_t gen;           /* swap-out: the value generation copied */
    double issue, start, dur; /* relative to the job's iteration start; dur: tsl_copy_us
                               on the device (the FIFO model's duration) */
    int state;              /* XF_QUEUED .. XF_DONE */
    tsl__sim_key end_at;    /* the key of its end event in force (an EV_COPY_END at
                               another key is stale: the fair model moved its end) */
    double rem;             /* the fair model: µs of its bytes left at the channel's
                               full bandwidth */
} xfer;

/* A FIFO of transfers, one at a time: busy flag and waiting transfer ids.
 * The FIFO model has one per copy channel, for all jobs; the fair model one
 * per job and copy channel (a job's own transfers stay in order). */
typedef struct chan {
    int busy;
    int64_t *fifo;
    int64_t head, n, cap;
} chan;

/* The fair model: one copy channel's bandwidth, shared by the transfers
 * moving bytes on it (at most one per job). */
typedef struct fair_chan {
    int64_t *act;           /* the transfers moving bytes, n of them */
    int n;
    double upd;             /* absolute time up to which their rem is counted */
} fair_chan;

/* A compute resource: one for all the jobs, or one per job. */
typedef struct compute_unit {
    int busy;
    double free_at;         /* absolute time it last became free */
} compute_unit;

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
    double last_iter, last_stall, stall_total;
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
    int fair;               /* the channel model is TSL_SIM_CHANNELS_FAIR */
    chan *ch;               /* FIFO model: the 2 channels' FIFO; fair: 2 per job */
    int n_ch;
    fair_chan fc[2];        /* fair model: the channels' bandwidth */
    int per_job;            /* TSL_SIM_COMPUTE_PER_JOB: a compute resource per job */
    compute_unit *cu;       /* per_job ? n_jobs : 1 */
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

/* ---- sim_clock.c: time and agenda ------------------------------------------- */
/* Records an out-of-memory error: the loop stops at the next event. */
void tsl__sim_fail_oom(sim *s);
/* The current time relative to job jx's iteration start: exact for the job
 * whose event is being processed (and for the only job). */
double tsl__sim_rel_now(const sim *s, int jx);
/* The current absolute time (µs from the simulation's start). */
double tsl__sim_abs_now(const sim *s);
/* Queues an event at key `at` (a key before now is taken as now); returns
 * the key it was queued at. */
tsl__sim_key tsl__sim_push(sim *s, tsl__sim_key at, int phase, int job, int kind, int32_t arg,
                           double rel);
/* Queues an event of job jx at time `rel` of its current iteration;
 * returns its key. */
tsl__sim_key tsl__sim_push_job(sim *s, int jx, double rel, int phase, int kind, int32_t arg);
/* Queues a look at the compute resource now (zero-duration items first). */
void tsl__sim_request_dispatch(sim *s);

/* ---- sim_memory.c: loads and peaks --------------------------------------------- */
/* Records the loads after a change of job jx (`grew`: an allocation). */
void tsl__sim_note(sim *s, int jx, int grew);
void tsl__sim_mem_add(sim *s, int jx, size_t b);
void tsl__sim_mem_sub(sim *s, int jx, size_t b);
/* Allocates / frees tensor t of job j (TSL_ASSERT on a double alloc/free). */
void tsl__sim_t_alloc(sim *s, tsl__sim_job *j, int32_t t);
void tsl__sim_t_free(sim *s, tsl__sim_job *j, int32_t t);

/* ---- sim_channels.c: the copy channels --------------------------------------- */
/* The index of the channel of direction to_device (0 for both when the
 * profile is not duplex). */
int tsl__sim_chan_index(const sim *s, int to_device);
/* A transfer for event e of job j, issued now: it starts at once if its
 * FIFO is free, else waits there. Returns its id, or -1 if out of host
 * memory (the simulation then stops). */
int64_t tsl__sim_xfer_request(sim *s, tsl__sim_job *j, int32_t e, int to_device);
/* 1 if e (an EV_COPY_END) is the end in force of its transfer, 0 if stale. */
int tsl__sim_xfer_due(const sim *s, const tsl__sim_ev *e);
/* Transfer `id` ended now: its FIFO takes the next waiting one, if any. */
void tsl__sim_chan_done(sim *s, int64_t id);

/* ---- sim_fair.c: the fair model's shared bandwidth ------------------------------ */
/* Transfer `id` got its FIFO's turn at `start` (relative to its job's
 * iteration, now): it pays the copy latency, then moves its bytes. */
void tsl__sim_fair_start(sim *s, int64_t id, double start);
/* Transfer `id` paid its latency (EV_COPY_BYTES, now): it starts moving
 * its bytes; the channel's share changes for every transfer on it. */
void tsl__sim_fair_bytes(sim *s, int64_t id);
/* Transfer `id` moved its last byte now: it leaves its channel, whose
 * share changes for the others. */
void tsl__sim_fair_end(sim *s, int64_t id);

/* ---- sim_events.c: the plan's events ----------------------------------------- */
void tsl__sim_trigger(sim *s, tsl__sim_job *j, int32_t op);
void tsl__sim_swap_out(sim *s, tsl__sim_job *j, int32_t e);
void tsl__sim_release(sim *s, tsl__sim_job *j, int32_t e);
void tsl__sim_swap_in(sim *s, tsl__sim_job *j, int32_t e);
void tsl__sim_copy_end(sim *s, int64_t id);
/* Activity analysis freed tensor t of job j: releases waiting on it are done. */
void tsl__sim_freed(sim *s, tsl__sim_job *j, int32_t t);

/* ---- sim_compute.c: the compute resource -------------------------------------- */
int32_t tsl__sim_missing_input(const tsl__sim_job *j, const tsl__sim_item *it);
void tsl__sim_try_ready(sim *s, tsl__sim_job *j);
/* A release preceding the op of job j's item `pos`, if that item is the
 * op's first, not done yet in this iteration (it waits for its swap-out):
 * its event index, or -1. */
int32_t tsl__sim_pending_release(const tsl__sim_job *j, int32_t pos);
void tsl__sim_dispatch(sim *s, int zero_only);
void tsl__sim_op_end(sim *s, tsl__sim_job *j);

/* ---- sim_engine.c: iterations ----------------------------------------------- */
void tsl__sim_check_iter_end(sim *s, tsl__sim_job *j);
/* Appends the record of job j's current iteration, ending at `end`
 * (relative), to the log (if any). */
void tsl__sim_record_iter(sim *s, const tsl__sim_job *j, int complete_, double end);

/* ---- small helpers ----------------------------------------------------------- */
static inline const char *tsl__sim_tname(const tsl__sim_job *j, int32_t t) {
    return j->w->tensors[t].name;
}
/* 1 if the job's current iteration counts for its steady-state peak. */
static inline int tsl__sim_steady(const sim *s, const prog *p) {
    return p->iter <= s->iterations && (s->iterations == 1 || p->iter >= 2);
}
#endif
