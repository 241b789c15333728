/*
 * session_internal.h - a session's state: a finalized graph placed on a
 * backend. Shared by the files that run it:
 *
 *   session.c   the facade of tensile/session.h: creation, steps and
 *               evaluation dispatched to the vanilla pass or the runtime's
 *               Executor, reading and writing persistent tensors;
 *   vanilla.c   the vanilla pass (liveness-freeing, DESIGN.md invariant 3),
 *               for training without a plan and for evaluation;
 *   step.c      what every pass does alike: the step's prologue, loading
 *               the batch, reading the loss and counting correct
 *               predictions, placing a tensor with a clear out-of-memory
 *               message, freeing what a step leaves;
 *   executor.c  the plan-following Executor (runtime_internal.h).
 *
 * Dependencies only go down: session.c calls vanilla.c and executor.c;
 * both call step.c; nothing calls back up into session.c.
 */
#ifndef TSL_RUNTIME_SESSION_INTERNAL_H
#define TSL_RUNTIME_SESSION_INTERNAL_H
#include "runtime/inflight.h"
#include "runtime/liveness.h"
#include "tensile/backend.h"
#include "tensile/session.h"

struct tsl_session {
    const tsl_graph *g;
    tsl_session_opts o;
    tsl_backend *b;
    int owns_b;                 /* 1: created by the session, freed with it */
    int host_addressable;       /* the backend's device pointers are host memory */
    void **ptr;                 /* per tensor: device pointer, NULL if not resident */
    double *op_ms;              /* per op: latency of its last execution */
    tsl_liveness live_train;    /* all ops */
    tsl_liveness live_eval;     /* forward ops only */
    tsl_tid input, label, loss, probs;
    int32_t loss_op;
    float host_loss;            /* the loss op's outputs, copied to the host in the */
    float *host_probs;          /* compute stream's order (tsl__step_enqueued) */
    int64_t steps;
    int32_t step_updates;       /* optimizer updates launched by the step under way */
    tsl__inflight inflight;     /* the vanilla pass's launched kernels */
    struct tsl__runtime *rt;    /* attached runtime (runtime_internal.h), NULL: vanilla */
    /* persistent tensors that did not fit when the session opened
     * (opts.persistent_on_host): their initial values, until a runtime
     * adopts them as its host copies */
    void **init_host;           /* per tensor, NULL: none */
    int n_init_host;
    char init_oom[512];         /* the first one's out-of-memory message */
};

/* The host copy of persistent t when it is not on the device (its initial
 * value kept at opening, else the runtime's copy; `write`: about to be
 * overwritten), or NULL (see tsl__rt_persistent_host). */
void *tsl__session_host_copy(tsl_session *s, tsl_tid t, int write);
/* TSL_OK, or TSL_ERR_OOM with the opening's message while persistent
 * tensors wait on the host for a runtime (the vanilla pass needs them all
 * on the device). */
tsl_status tsl__session_all_placed(const tsl_session *s);

/* ---- vanilla.c ----------------------------------------------------------------- */
/* One vanilla pass over ops [0, end) (training step or evaluation): outputs
 * allocated at their generating access, every non-persistent tensor freed
 * once the kernel of its last use has completed. n_valid: examples counted
 * for accuracy (INT64_MAX: all). */
tsl_status tsl__vanilla_pass(tsl_session *s, const float *x, const int32_t *y, int training,
                             int64_t n_valid, tsl_step_stats *st);

/* ---- step.c --------------------------------------------------------------------- */
/* The start of every step (training or evaluation, vanilla or under a
 * plan): zeroes *st with the loss NaN, and checks the graph has the INPUT
 * "input" and LABEL "label" it loads (TSL_ERR_INVALID otherwise). */
tsl_status tsl__step_begin(const tsl_session *s, tsl_step_stats *st);
/* Right after op i is enqueued (before anything frees its outputs), in
 * both executors: counts it in step_updates if it is an optimizer update;
 * if i is the loss op, enqueues copies of the loss and the probabilities
 * to the session's host buffers on the compute stream. */
tsl_status tsl__step_enqueued(tsl_session *s, int32_t i);
/* After op i's kernel has completed: the loss (and the correct predictions
 * of the first n_valid examples) from the captured copies, if i is the loss
 * op; nothing otherwise. */
void tsl__step_after_op(tsl_session *s, int32_t i, const int32_t *y, int64_t n_valid,
                        tsl_step_stats *st);
/* Copies n bytes of device memory whose writers have completed to the host
 * (directly on a host-addressable device, else in the compute stream's
 * order). */
tsl_status tsl__step_read(tsl_session *s, void *host, const void *dev, size_t n);
/* Allocates tensor t at op index `at` (-1: the data load, -2: session
 * start); TSL_ERR_OOM with a message naming the place, the tensor, its size,
 * the load, the capacity and the largest free block. */
tsl_status tsl__step_place(tsl_session *s, tsl_tid t, int32_t at);
/* The same message for a failure met elsewhere (the caller's allocation). */
tsl_status tsl__step_oom(tsl_session *s, const char *what, const char *name, size_t bytes,
                         int32_t at);
/* Frees every resident non-persistent tensor (end of a step, or after a
 * failure; nothing of the step may be in flight). */
void tsl__step_free_transients(tsl_session *s);

/* The backend of a session (tests: fault injection, ledger). */
static inline tsl_backend *tsl__session_backend(tsl_session *s) { return s->b; }
#endif
