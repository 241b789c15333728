/*
 * runtime_internal.h - the runtime attached to a session: the plan-following
 * Executor (executor.c), the Swap Executor (swap_executor.c), the tensors'
 * residency (residency.c), passive swap-out (evict.c), latency tracking and
 * replanning (latency.c), the trace of real runs (runtime_trace.c), and the
 * API of tensile/runtime.h (runtime.c). Not part of the public API.
 *
 * Two clocks.
 *  - Real time (default): ops take what their kernels take; the events an op
 *    triggers are due at (its real end) + delay. The Swap Executor's queue
 *    thread releases due events in time order and issues their copies on
 *    the backend's channels; each copy's end is handled in order (a
 *    channel is FIFO) by a host function its stream runs after it
 *    (host_func), or, on a backend without, by one watcher thread per
 *    channel. The executor issues the events due when it queues them
 *    itself. Every piece of state below is
 *    guarded by `mu`. Each waiter has its own condition variable, so that
 *    a change wakes only the thread that waits for it: `cv` the compute
 *    thread (any change of residency, events or memory), `cv_queue` the
 *    queue thread (an event queued, or stop), `cv_watch[d]` channel d's
 *    watcher (a copy in flight, or stop).
 *  - Virtual clock (opts.virtual_clock): one thread. Each op takes its
 *    latency in virtual time, each copy tsl_copy_us of the profile; the
 *    events are processed from an agenda keyed (time, phase, seq) exactly as
 *    the simulator orders them (frees before allocations at one time point),
 *    so that with a valid plan and exact latencies the allocator's peak equals
 *    the plan's predicted peak. Data really moves (memcpy at the copy's issue)
 *    and kernels really run.
 *
 * Times are µs from the start of the current iteration in both clocks.
 */
#ifndef TSL_RUNTIME_RUNTIME_INTERNAL_H
#define TSL_RUNTIME_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/plan_order.h"
#include "sched/remat.h"
#include "runtime/inflight.h"
#include "runtime/session_internal.h"
#include "tensile/runtime.h"

/* State of one timed event (swap-out, swap-in, release) in the current
 * iteration. */
enum {
    TSL__EV_IDLE = 0, /* its trigger has not ended yet */
    TSL__EV_SCHED,    /* queued until its due time */
    TSL__EV_WAIT,     /* waits for the swap-outs of its tensor planned at or before it */
    TSL__EV_WMEM,     /* swap-in waiting for device memory */
    TSL__EV_RUN,      /* its copy is in flight */
    TSL__EV_DONE,
};

/* Phases at one time point (the simulator's order). */
enum { TSL__PH_DONE = 0, TSL__PH_ZERO, TSL__PH_SWAP_OUT, TSL__PH_RELEASE, TSL__PH_SWAP_IN,
       TSL__PH_START };

/* What a transfer is for. */
enum { TSL__X_PLANNED = 0, TSL__X_PASSIVE, TSL__X_EVICT };

/* One entry of the executed sequence (sched/plan_order.h); ns and ne are
 * the nominal start and end in the virtual clock. */
typedef tsl__exec_item tsl__rt_item;

/* An installed plan with its lookup tables (built by tsl__rt_plan_new). */
typedef struct tsl__rt_plan {
    tsl_plan *p;           /* owned copy */
    tsl_workload *w;       /* owned copy of the workload it was made for */
    int32_t n_items;
    tsl__rt_item *items;
    int32_t *trig_start;   /* timed events grouped by trigger + 1 (CSR, n_ops + 2) */
    int32_t *trig_list;
    int32_t *tev_start;    /* timed events of each tensor (CSR, n_tensors + 1) */
    int32_t *tev_list;
    double *ev_plan;       /* per event: planned issue (release: trigger end, + delay if it
                              precedes an op) */
    int32_t *pre_start;    /* CSR over ops, or NULL if none: the releases preceding op i */
    int32_t *pre_list;     /*   (its first item waits for them: a planned wait) */
    int32_t n_timed;
    uint8_t *recomputed;   /* per tensor: the plan recomputes it somewhere */
    double lat_sum;        /* summed op latencies of w (the change rate's base) */
    tsl_device_profile profile; /* the profile it was verified against: the runtime's
                                   from its installation on */
} tsl__rt_plan;

/* One transfer on a copy channel. */
typedef struct tsl__xfer {
    int32_t tensor, event; /* event -1: passive swap-in or eviction */
    int to_device, kind;
    uint32_t gen;          /* swap-out: the value generation copied */
    size_t bytes;          /* bytes moved (0: the host copy was already valid) */
    double issue, start, end, dur; /* µs in the iteration (real: from the events) */
    tsl_dev_event *ev_start, *ev_end; /* real time: recorded around the copy on its stream */
    int done;
    int polled;            /* real time with host functions: none could be enqueued after
                              it (out of host memory); it lands when found ended (land_ready) */
} tsl__xfer;

/* Per tensor, beside s->ptr[t] (the device block, NULL when absent). */
typedef struct tsl__res {
    void *host;            /* staging buffer (host_alloc), kept once made */
    uint32_t gen;          /* bumped at every write */
    uint32_t host_gen;     /* generation the host copy holds */
    uint8_t host_ok;       /* host holds generation host_gen */
    uint8_t readable;      /* on the device with its value in place */
    uint8_t dying;         /* free the block once no copy uses it */
    int32_t busy;          /* uses by the running item and by kernels in flight: while
                              > 0 it is neither evicted, released nor dropped */
    uint8_t cold;          /* resident only because of the cold start: the plan has it
                              absent until its swap-in (dropped first under pressure) */
    int64_t in_x;          /* transfer copying it in, -1 */
    int32_t out_n;         /* transfers copying it out */
} tsl__res;

/* A timed entry: the real-time queue (phase 0) or the virtual agenda. */
typedef struct tsl__qent {
    double t;
    int32_t phase;
    uint64_t seq;
    int32_t kind;          /* virtual: TSL__VK_* ; real: unused */
    int64_t arg;           /* event index or transfer id */
    int64_t iter;
} tsl__qent;
enum { TSL__VK_COPY_END = 0, TSL__VK_SWAP_OUT, TSL__VK_RELEASE, TSL__VK_SWAP_IN };

typedef struct tsl__heap {
    tsl__qent *a;
    int64_t n, cap;
    uint64_t next_seq;
} tsl__heap;

/* A FIFO of transfer ids. */
typedef struct tsl__fifo {
    int64_t *a;
    int64_t head, n, cap;
} tsl__fifo;

/* Trace records (runtime_trace.c). Times are µs since attach (real) or
 * virtual µs since the first step (virtual). */
typedef struct tsl__rt_span {
    int kind;              /* 0 op, 1 recompute, 2 swap-in, 3 swap-out */
    int xkind;             /* transfers: TSL__X_* */
    int32_t op, tensor;
    int64_t iter;
    double ready, start, end, wait;
    size_t bytes;
} tsl__rt_span;
typedef struct tsl__rt_mem {
    double t;
    size_t load;
} tsl__rt_mem;
typedef struct tsl__rt_iter {
    int64_t iter;
    double start, ops_end, end, stall;
    size_t peak;
} tsl__rt_iter;
typedef struct tsl__rt_log {
    tsl__rt_span *span;
    int64_t n_span, cap_span;
    tsl__rt_mem *mem;
    int64_t n_mem, cap_mem;
    tsl__rt_iter *iter;
    int64_t n_iter, cap_iter;
    int oom;
} tsl__rt_log;

/* A channel's completion callback's argument (real time, on a backend with
 * host_func): the runtime and the direction (1: to the device). */
typedef struct tsl__landing {
    struct tsl__runtime *rt;
    int to_device;
} tsl__landing;

typedef struct tsl__runtime {
    tsl_session *s;
    tsl_backend *b;
    const tsl_graph *g;
    tsl_runtime_opts o;
    int virtual_clock;
    int32_t nt, no;
    tsl_workload *w0;          /* the attached workload (owned copy) */
    tsl__rt_plan *cur;         /* plan followed now; NULL: vanilla */
    tsl__rt_plan *pending;     /* installed at the next boundary when has_pending */
    int has_pending;

    tsl__res *res;
    int32_t *acc_start, *acc_ops; /* per tensor: ops accessing it, ascending (evict.c) */

    /* memory: the runtime's view of the ledger's load (tensors + reserved workspace) */
    size_t used, limit, capacity;
    int compute_wants_mem;     /* the executor waits for memory: swap-ins do not allocate */

    /* the current iteration */
    int64_t iter;              /* 1-based count of plan-following iterations */
    uint8_t *ev_state;         /* per plan event: TSL__EV_*, written by tsl__se_set_state */
    int32_t n_wmem;            /* events in TSL__EV_WMEM (tsl__se_retry_wmem has work) */
    int any_cold;              /* 0: no tensor is cold (tsl__rt_drop_cold has nothing to do);
                                  1: some may be (set by tsl__rt_mark_cold) */
    int32_t outstanding;       /* timed events not done */
    int32_t pos;               /* op the executor is at (next-use distances) */
    int parked;                /* an evaluation parked persistent tensors on the host */
    uint8_t *eval_reads;       /* per tensor: 1 if an evaluation op reads it (lazily built) */
    tsl__xfer *xf;
    int64_t n_xf, cap_xf;
    int64_t xf_inflight;
    double t0_ms;              /* real: host clock at the iteration's start */
    tsl_dev_event *anchor;     /* real: completed event at the iteration's start; kernel and
                                  copy times are measured from it on the device's clock */
    double anchor_us;          /* its time in µs from t0_ms */
    tsl__inflight inflight;    /* kernels launched and not retired (compute thread only) */
    tsl_dev_event *last_compute; /* end event of the newest kernel in flight (NULL: none):
                                  copies into fresh blocks wait for it (owned by its entry) */
    tsl_evict_candidate *cand; /* scratch for the eviction policy (n_tensors) */
    double iter_base_us;       /* the iteration's start on the trace's axis */

    /* real time: Swap Executor threads */
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* the compute thread's */
    pthread_cond_t cv_queue;   /* the queue thread's */
    pthread_cond_t cv_watch[2];/* the channel watchers' (a backend without host_func) */
    int callbacks;             /* 1: each copy's end is handled by a host function the copy's
                                  stream calls after it (host_func), not by a watcher */
    tsl__landing landing[2];   /* the host functions' arguments, per direction */
    int threads_on, stop;
    int draining;              /* a failed step: due events are not issued any more */
    pthread_t queue_th, watch_th[2];
    tsl__heap queue;
    tsl__fifo copies[2];       /* copies in flight per direction, in issue order */

    /* virtual clock */
    tsl__heap agenda;
    double vnow;
    int vbusy[2];
    tsl__fifo vwait[2];        /* transfers waiting for a busy channel */
    double *vlat;              /* latency override per op (tests), NULL: the workload's */

    /* latency tracking */
    double *ewma;

    /* the layout (placement.c) */
    int place_ok;              /* the installed plan's layout fits this arena */
    int32_t *place_seq;        /* per tensor, then per op: the plan's allocations met this
                                  iteration (the next block's seq) */
    uint8_t *place_start;      /* per tensor: the plan keeps it resident at the start */
    uint8_t *place_gone;       /* per tensor: the plan released its current residency */
    uintptr_t place_base;      /* the arena's base (alloc_at's pointer less its offset);
                                  0 until a first placement */
    size_t place_align;        /* the arena's alignment */
    int64_t place_waits;       /* allocations that found their place held (tests) */
    int64_t place_moves;       /* persistent tensors moved on the device to their places */

    /* DTR online (remat_online.c; opts.remat) */
    struct {
        int on;                /* opts.remat, and built */
        tsl__remat rm;         /* the droppable tensors of the graph */
        tsl__rt_item *items;   /* per tensor: its rematerialisation (its producer re-run) */
        double *last;          /* per tensor: its last use (µs on the trace's axis) */
        uint32_t *mark;        /* e* walks (tsl__remat_estar_cost) */
        uint32_t stamp;
        int32_t *stack;
    } dtr;

    tsl_runtime_stats st;
    int64_t defrags;           /* items retried after moving their tensors out (tests) */
    tsl_status async_err;      /* first error met by a Swap Executor thread */
    char async_msg[256];       /* its message (tsl_last_error is per thread) */
    double attach_ms;
    tsl__rt_log log;
} tsl__runtime;

/* ---- runtime.c --------------------------------------------------------------- */
/* Builds the tables of plan p (copied) made for workload w (copied).
 * TSL_ERR_OOM if out of host memory. */
tsl_status tsl__rt_plan_new(const tsl_plan *p, const tsl_workload *w,
                            const tsl_device_profile *dev, tsl__rt_plan **out);
void tsl__rt_plan_free(tsl__rt_plan *pl);
/* Brings back the absent persistent tensors t with only[t] (NULL: all);
 * best_effort: one that does not fit stays on the host (the executor swaps
 * it in at its access) instead of failing with TSL_ERR_OOM. */
tsl_status tsl__rt_restore_some(tsl__runtime *rt, const uint8_t *only, int best_effort);
/* The same, taking rt->mu (for session.c, between steps). */
tsl_status tsl__rt_restore_for_eval(tsl__runtime *rt);
/* Cold start of a newly installed plan: marks the persistent tensors the
 * plan releases across iterations (present now, absent in the plan's steady
 * state) and gives each a valid host copy, so that they can be dropped for
 * free when memory runs short before their swap-in. TSL_ERR_OOM if out of
 * host memory. */
tsl_status tsl__rt_mark_cold(tsl__runtime *rt);
/* Marks no tensor cold (every res[].cold and any_cold cleared). */
void tsl__rt_clear_cold(tsl__runtime *rt);
/* Drops one cold tensor that is not in use: 1 if one was freed. */
int tsl__rt_drop_cold(tsl__runtime *rt);
/* Frees the runtime (threads joined, host copies freed). NULL is fine. */
void tsl__rt_free(tsl__runtime *rt);

/* Parks persistent t on the host (a current host copy, the block freed;
 * at a boundary). */
tsl_status tsl__rt_park(tsl__runtime *rt, int32_t t);

/* ---- placement.c: following the plan's layout ---------------------------------- */
/* How an allocation finds its place (tsl__rt_try_alloc, tsl__place_at). */
enum {
    TSL__A_PASSIVE = 1, /* not one of the plan's allocations (a passive swap-in, an
                           eviction's return): the place of the residency the plan has
                           the tensor in now; the counters do not advance */
    TSL__A_ONLINE = 2,  /* its place cannot be had: the online allocator (displaced) */
};
tsl_status tsl__place_init(tsl__runtime *rt);
void tsl__place_free(tsl__runtime *rt);
/* At a plan's installation (rt->cur set, or NULL): whether its layout is
 * followed (it has one, fits the arena, the backend can place) and which
 * persistent tensors it keeps resident at the start. */
void tsl__place_install(tsl__runtime *rt);
/* 1 if allocations follow the installed plan's layout. */
int tsl__place_on(const tsl__runtime *rt);
/* At an iteration's start (nothing in flight): the persistent tensors as
 * the plan has them at time 0 - those it keeps resident at their
 * residency-0 places (moved there on the device, else parked and brought
 * back), the others parked on the host. */
tsl_status tsl__place_settle(tsl__runtime *rt);
/* Resets the block counters at an iteration's start. */
void tsl__place_begin(tsl__runtime *rt);
/* Allocates tensor t's block (t >= 0; n bytes) or op's next workspace (t
 * < 0, op >= 0) at its planned place, `how` as above: TSL_OK (*p set),
 * TSL_ERR_BUSY (the place is held), TSL_ERR_OOM (refused: a fault), or
 * TSL_ERR_UNSUPPORTED (no layout, no such block, or online asked for: the
 * caller allocates online). */
tsl_status tsl__place_at(tsl__runtime *rt, int32_t t, int32_t op, size_t n, int how, void **p);
/* After an allocation of tensor t (t >= 0) or of op's workspace made with
 * `how`: the plan's counter advances (not for a passive one); `displaced`
 * (it had a place and went online) is counted. */
void tsl__place_allocated(tsl__runtime *rt, int32_t t, int32_t op, int how, int displaced);
/* One of the plan's allocations of t (or of op's workspace) that is not
 * made (t still resident: a swap-in with nothing to do, a recomputation
 * skipped): its counter advances all the same. */
void tsl__place_skip(tsl__runtime *rt, int32_t t, int32_t op);
/* The allocation of t just freed again before it was written (a
 * defragmentation): its counter goes back. */
void tsl__place_undo(tsl__runtime *rt, int32_t t);
/* The plan released t's current residency (a RELEASE event met). */
void tsl__place_released(tsl__runtime *rt, int32_t t);
/* A resident tensor whose block overlaps the place of the allocation
 * (t, op, how) - the one most easily moved - or -1 (none, or where blocks
 * lie is not known yet). */
int32_t tsl__place_holder(const tsl__runtime *rt, int32_t t, int32_t op, int how);
/* 0 if resident t lies away from the place of the plan's next allocation
 * of it (its next residency's block); 1 if it lies there, or if no layout
 * is followed or where it lies is not known (nothing to keep). */
int tsl__place_at_next(const tsl__runtime *rt, int32_t t);
/* Persistent t's block at the iteration's start, if the plan keeps it
 * resident there: as tsl__place_at. */
tsl_status tsl__place_start_ptr(tsl__runtime *rt, int32_t t, size_t n, void **p);

/* ---- residency.c ------------------------------------------------------------- */
tsl_status tsl__res_init(tsl__runtime *rt);
void tsl__res_free(tsl__runtime *rt);
/* Allocates tensor t's device block if the strict limit and the arena
 * allow, at its planned place under a layout (placement.c; `how`:
 * TSL__A_* flags, 0 for one of the plan's allocations); TSL_OK,
 * TSL_ERR_BUSY (its place is held) or TSL_ERR_OOM (no message kept). */
tsl_status tsl__rt_try_alloc(tsl__runtime *rt, int32_t t, int how);
/* A raw device block of n bytes (op's workspace, at its planned place
 * under a layout; op -1: recomputation scratch, online) if the strict
 * limit and the arena allow: TSL_OK (*p set; NULL for n 0), TSL_ERR_BUSY
 * or TSL_ERR_OOM. Counted in `used` until tsl__rt_free_raw. */
tsl_status tsl__rt_try_alloc_raw(tsl__runtime *rt, int32_t op, size_t n, int how, void **p);
void tsl__rt_free_raw(tsl__runtime *rt, void *p, size_t n);
/* Device time of a completed event, µs from the iteration's start. */
double tsl__rt_event_us(tsl__runtime *rt, tsl_dev_event *ev);
/* Frees t's block now (no copy may use it in real time). */
void tsl__rt_free_block(tsl__runtime *rt, int32_t t);
/* Frees t's block, or (real time, a copy still uses it) marks it dying. */
void tsl__rt_release_block(tsl__runtime *rt, int32_t t);
/* 1 if the host copy holds t's current value. */
int tsl__rt_host_valid(const tsl__runtime *rt, int32_t t);
/* t's staging buffer, made on first use; NULL if out of host memory. */
void *tsl__rt_host_buf(tsl__runtime *rt, int32_t t);
/* Records a change of `used` on the trace. */
void tsl__rt_note_mem(tsl__runtime *rt);
/* For session.c, between steps: the host copy of persistent tensor t when
 * t is absent from the device (swapped out across iterations), else NULL;
 * with `write` and t on the device, its host copy stops being valid (the
 * caller is about to change the device's bytes). NULL without a runtime. */
void *tsl__rt_persistent_host(tsl_session *s, tsl_tid t, int write);

/* ---- evict.c ------------------------------------------------------------------ */
tsl_status tsl__evict_init(tsl__runtime *rt);
void tsl__evict_free(tsl__runtime *rt);
/* The next op after `pos` accessing t; persistent tensors wrap to the next
 * iteration (+ n_ops); INT32_MAX if a transient tensor is dead. */
int32_t tsl__rt_next_use(const tsl__runtime *rt, int32_t t, int32_t pos);
/* 1 if t is transient and no op after `pos` reads or writes it. */
int tsl__rt_dead(const tsl__runtime *rt, int32_t t, int32_t pos);
/* 1 if eviction may move resident t now: not used by the running item or
 * a kernel in flight, not being copied, not dying, its value in place. */
int tsl__rt_movable(const tsl__runtime *rt, int32_t t);
/* The resident tensor to evict, chosen by opts.evict (default: farthest
 * next use) among the movable ones - with need > 0 (the arena has the
 * bytes but no free block of `need`), among those whose eviction opens
 * the run tsl__rt_run_goal aims for - or -1. */
int32_t tsl__rt_pick_victim(tsl__runtime *rt, size_t need);
/* The free run evictions should aim for when the arena has the bytes but
 * no block of `need` (need > 0): need (aligned) if evicting some movable
 * tensor opens a block that large, else the largest run one eviction opens
 * (the hole grows; not under DTR: 0); 0 when need is 0 or the backend
 * cannot tell (free_run). */
size_t tsl__rt_run_goal(const tsl__runtime *rt, size_t need);
/* 1 if evicting resident t would leave a free block of at least goal bytes
 * (t's block with the free blocks either side); 0 when goal is 0. */
int tsl__rt_opens(const tsl__runtime *rt, int32_t t, size_t goal);
/* Passive swap-out of t: frees it now (dead, or host copy valid) or copies
 * it to the host and frees it when the copy ends. 0 if it cannot (no host
 * memory or the copy could not be issued). */
int tsl__rt_evict(tsl__runtime *rt, int32_t t);
/* 1 if memory will be freed without the executor moving on: a tensor
 * dying once its copy ends, or a release waiting for swap-outs that are
 * queued or in flight. */
int tsl__rt_frees_pending(const tsl__runtime *rt);

/* ---- remat_online.c: DTR in the runtime ---------------------------------------- */
/* Builds the droppable tensors and the rematerialisation items when
 * opts.remat (else nothing). TSL_ERR_OOM. */
tsl_status tsl__dtr_init(tsl__runtime *rt);
void tsl__dtr_free(tsl__runtime *rt);
/* At an iteration's start under a plan: the rematerialisations' virtual
 * durations from the plan's workload. */
void tsl__dtr_begin(tsl__runtime *rt);
/* A kernel of op (and, for a recomputation, of tensor extra; -1: none) is
 * launched now: its tensors' last use. */
void tsl__dtr_touch(tsl__runtime *rt, const tsl_op *op, int32_t extra);
/* 1 if t is to be regenerated by DTR when read at rt->pos: droppable, not
 * the plan's, generated this iteration (its producer is before pos), still
 * regenerable there (its horizon), and absent with no valid host copy -
 * dropped by DTR, or freed after its last read and needed again to
 * regenerate another. */
int tsl__dtr_gone(const tsl__runtime *rt, int32_t t);
/* DTR's victim among the movable tensors (-1: none, or DTR is off): a dead
 * one first (*dead set: freeing it costs nothing), else the droppable one
 * with the smallest h - with need > 0 (the arena fragmented), among those
 * whose drop opens a free block of `need` if there are any. */
int32_t tsl__dtr_victim(tsl__runtime *rt, size_t need, int *dead);
/* Frees movable t without a copy; unless dead, t is dropped (regenerated
 * at its next read) and counted. */
void tsl__dtr_drop(tsl__runtime *rt, int32_t t, int dead);
/* The rematerialisation of t (its producer re-run into t). */
const tsl__rt_item *tsl__dtr_item(const tsl__runtime *rt, int32_t t);

/* ---- swap_executor.c --------------------------------------------------------- */
/* Current time in µs from the iteration's start. */
double tsl__rt_now(const tsl__runtime *rt);
/* The Swap Executor's threads (real time). */
tsl_status tsl__se_start(tsl__runtime *rt);
void tsl__se_stop(tsl__runtime *rt);
/* Schedules the timed events whose trigger is op (-1: the data load) that
 * ended at `end` (µs); in real time releases are applied at once. */
void tsl__se_trigger(tsl__runtime *rt, int32_t op, double end);
/* Event handlers (the queue released them, or the executor expedites). */
void tsl__se_swap_out(tsl__runtime *rt, int32_t e);
void tsl__se_swap_in(tsl__runtime *rt, int32_t e);
void tsl__se_release(tsl__runtime *rt, int32_t e);
void tsl__se_ev_done(tsl__runtime *rt, int32_t e);
/* Starts a copy of t in direction to_device; returns the transfer id or
 * -1 (out of host memory, or the backend refused). */
int64_t tsl__se_copy(tsl__runtime *rt, int32_t t, int to_device, int kind, int32_t event,
                     size_t bytes);
/* Retries swap-ins waiting for memory (after a free). */
void tsl__se_retry_wmem(tsl__runtime *rt);
/* Sets event e's state (every change of ev_state goes through it, so that
 * n_wmem counts the swap-ins waiting for memory); tsl__se_reset_states
 * makes every event of the current plan idle at an iteration's start. */
void tsl__se_set_state(tsl__runtime *rt, int32_t e, int s);
void tsl__se_reset_states(tsl__runtime *rt);
/* Marks the waiting releases of t done (t is needed or gone). */
void tsl__se_cancel_releases(tsl__runtime *rt, int32_t t);
/* A late swap-out: when the plan's release of t has been triggered and
 * waits for a swap-out of t still queued for its due time, that swap-out
 * is issued now (its queue entry then finds it taken over) and 1 is
 * returned: the release frees t when the copy ends. 0 otherwise. */
int tsl__se_take_over_swap_out(tsl__runtime *rt, int32_t t);
/* 1 if event e waits for a swap-out whose trigger has not ended yet (a
 * plan that is wrong: it would wait for an op that comes later). */
int tsl__se_waits_on_idle(const tsl__runtime *rt, int32_t e);
/* The swap-in of t still to come this iteration (SCHED, WAIT or WMEM), -1. */
int32_t tsl__se_pending_swap_in(const tsl__runtime *rt, int32_t t);
/* Waits for any change (compute thread only): real time, a timed wait on
 * cv (returns 1);
 * virtual, processes the next agenda entry (0 if the agenda is empty). */
int tsl__se_wait(tsl__runtime *rt);
/* TSL_OK, or the error a Swap Executor thread met (async_err), recorded
 * again with its message on the calling thread. */
tsl_status tsl__rt_async_error(tsl__runtime *rt);
/* Virtual: processes the agenda entries ordered before (t, phase, seq). */
void tsl__vc_run_before(tsl__runtime *rt, double t, int32_t phase, uint64_t seq);
uint64_t tsl__vc_next_seq(tsl__runtime *rt);
/* Clears per-iteration queues (iteration boundary: nothing in flight). */
void tsl__se_reset_iteration(tsl__runtime *rt);

/* ---- executor.c ---------------------------------------------------------------- */
tsl_status tsl__rt_step(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st);

/* ---- latency.c ----------------------------------------------------------------- */
tsl_status tsl__lat_init(tsl__runtime *rt);
void tsl__lat_sample(tsl__runtime *rt, int32_t op, double us);
/* The latency report at this moment (rt->mu held). */
void tsl__lat_report(const tsl__runtime *rt, tsl_latency_report *r);
double tsl__lat_sum(const double *lat, int32_t n);

/* ---- runtime_trace.c ----------------------------------------------------------- */
void tsl__log_span(tsl__runtime *rt, const tsl__rt_span *sp);
void tsl__log_mem(tsl__runtime *rt, double t, size_t load);
void tsl__log_iter(tsl__runtime *rt, const tsl__rt_iter *it);
void tsl__log_free(tsl__rt_log *log);

/* ---- for tests (tests/test_executor.c) -------------------------------------------- */
/* Installs p at the next boundary without verifying it (a wrong plan). */
tsl_status tsl__session_set_plan_unverified(tsl_session *s, const tsl_plan *p);
/* Virtual clock: op i takes us[i] µs instead of the workload's latency
 * (copied; NULL restores the workload's). */
tsl_status tsl__session_set_virtual_latency(tsl_session *s, const double *us);
/* The strict limit of the plan followed now (0 without a plan). */
size_t tsl__session_runtime_limit(const tsl_session *s);
#endif
