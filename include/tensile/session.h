/*
 * tensile/session.h - running a graph on a backend: the vanilla executor.
 *
 * A session places a finalized graph on a device: persistent tensors
 * (parameters, buffers, optimizer states) are allocated once and
 * initialised from the seed; every other tensor is allocated at its
 * generating access and freed right after its last use (liveness, DESIGN.md
 * invariant 3). Memory figures come from the device allocator's ledger.
 *
 * Running out of device memory is reported, not crashed on: a step that
 * cannot allocate returns TSL_ERR_OOM with a message naming the tensor, its
 * size, the load and the capacity, and the session stays usable.
 *
 * Example usage:
 *
 *   tsl_session_opts o = tsl_session_opts_default();   // 4 GiB, fast kernels
 *   tsl_session *s;
 *   if (tsl_session_new(g, &o, &s) != TSL_OK) die(tsl_last_error());
 *   tsl_step_stats st;
 *   tsl_session_step(s, x, y, &st);                   // forward+backward+update
 *   printf("loss %g, peak load %zu\n", st.loss, st.peak_load);
 *   tsl_session_free(s);
 */
#ifndef TENSILE_SESSION_H
#define TENSILE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/backend_cpu.h"
#include "tensile/graph.h"

#ifdef __cplusplus
extern "C" {
#endif


typedef struct tsl_session_opts {
    uint64_t seed;          /* parameter initialisation (default 42)     */
    /* The session's own CPU backend (tsl_session_new; ignored by
     * tsl_session_new_on, whose backend has its own settings): */
    size_t device_memory;   /* arena capacity in bytes (default 4 GiB)   */
    int nthreads;           /* default 1                                 */
    tsl_kernel_mode kernels;
    double pcie_gbps;       /* copy stream throttle, GB/s (0: none)      */
    int async_compute;      /* kernels on a compute thread (default 0)   */
    double kernel_delay_us; /* with async_compute: late kernels (tests)  */
    /* 1: a persistent tensor that does not fit the device when the session
     * opens keeps its initial value on the host, for a runtime to adopt as
     * its host copy (tsl_session_attach_runtime; a plan that swaps it
     * across iterations brings it in); stepping without a runtime then
     * fails with the out-of-memory message. 0 (default): opening fails. */
    int persistent_on_host;
    /* The persistent tensors' initial values. NULL (default): each from
     * `seed`, as its tensor's tsl_init says (tsl_init_value). Otherwise
     * called once per persistent tensor, in id order, to fill dst with the
     * tensor's nbytes (float32), with init_ctx as ctx: a checkpoint's
     * values, or values computed once for many sessions. A status other
     * than TSL_OK fails the opening with it (set the message with
     * tsl_fail). */
    tsl_status (*init)(void *ctx, const tsl_graph *g, tsl_tid t, float *dst);
    void *init_ctx;
} tsl_session_opts;

tsl_session_opts tsl_session_opts_default(void);

typedef struct tsl_step_stats {
    double loss;
    int64_t correct;        /* examples whose arg-max prediction equals the label */
    int64_t examples;       /* examples (or pixels, for per-pixel losses) */
    size_t peak_load;       /* bytes, this step */
    size_t peak_footprint;  /* bytes, this step */
    double ms;              /* wall time of the step */
    double kernel_ms;       /* the kernels' own time (recomputations included), so
                               ms - kernel_ms is what the executor added */
} tsl_step_stats;

typedef struct tsl_session tsl_session;

/* Places `g` (finalized; it must outlive the session) on a CPU device of
 * opts->device_memory bytes and initialises the persistent tensors.
 * TSL_ERR_OOM if the persistent tensors alone do not fit. */
tsl_status tsl_session_new(const tsl_graph *g, const tsl_session_opts *opts, tsl_session **out);
/* The same on a backend the caller made (any implementation of
 * tensile/backend.h). The session uses b but does not own it: free the
 * session first, then b. Only opts->seed, init and init_ctx are read. */
tsl_status tsl_session_new_on(const tsl_graph *g, tsl_backend *b, const tsl_session_opts *opts,
                              tsl_session **out);
void tsl_session_free(tsl_session *s);

/* One training iteration: loads x (the INPUT "input") and y (the LABEL
 * "label"), runs every op in order, frees by liveness. `st` may be NULL.
 * A step that fails (TSL_ERR_OOM: nothing left to evict) frees its
 * tensors. The parameters are untouched if no update had run: always with
 * the updates after the backward pass (TSL_STEP_AFTER_BACKWARD), and the
 * step can be run again. With the updates in the backward pass (the
 * default) those already run stay applied; the message then says how many,
 * and running the step again would apply them twice. */
tsl_status tsl_session_step(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st);

/* Forward and loss only, in evaluation mode (batch norm uses running
 * statistics, dropout is off); nothing is updated. */
tsl_status tsl_session_eval(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st);

/* Evaluation of a padded batch: as tsl_session_eval, but `correct` and
 * `examples` count only the first n_valid examples (the rest pad the last
 * batch of a dataset to the graph's static batch size); the loss is over
 * the whole batch. */
tsl_status tsl_session_eval_partial(tsl_session *s, const float *x, const int32_t *y,
                                    int64_t n_valid, tsl_step_stats *st);

/* Copies a persistent tensor's bytes out of / into the device. */
tsl_status tsl_session_read(tsl_session *s, tsl_tid t, void *dst);
tsl_status tsl_session_write(tsl_session *s, tsl_tid t, const void *src);

/* The value tsl_session_new gives persistent tensor t of g with `seed`
 * and no opts.init, written into dst (the tensor's nbytes, float32): its
 * tsl_init, from a counter-based generator keyed by (seed, t, element), so
 * the values never depend on threads or on the order tensors are
 * initialised in. KAIMING_NORMAL (Box-Muller) uses fan_in = numel / d[0];
 * UNIFORM_FANIN on a 1-D tensor "P.bias" uses the fan-in of "P.weight"
 * when it exists (PyTorch's rule for Linear and Conv biases). */
void tsl_init_value(const tsl_graph *g, tsl_tid t, uint64_t seed, float *dst);

/* FNV-1a 64 over the bytes of every PARAM in id order. */
uint64_t tsl_session_param_checksum(tsl_session *s);

/* The persistent tensors that did not fit the device when the session
 * opened and wait on the host for a runtime (opts.persistent_on_host; 0
 * once a runtime has adopted them), and the first one's out-of-memory
 * message in *why when it is not NULL (else untouched). */
int tsl_session_n_on_host(const tsl_session *s, const char **why);

/* Steps run so far (the next step is number steps+1). */
int64_t tsl_session_steps(const tsl_session *s);

/* The kernel time in ms of op i's last execution (training step or
 * evaluation, vanilla or under a plan; a recomputation counts as an
 * execution): the time run_op measured, without the executor's own waits.
 * 0 for an op not run yet or an index out of range. */
double tsl_session_op_ms(const tsl_session *s, int32_t i);

/* The scratch workspace in bytes the session's backend allocates for op
 * i's kernel (see tsl_backend_i.op_workspace). TSL_ERR_INVALID for an index
 * out of range; the backend's error if the kernel cannot be prepared. */
tsl_status tsl_session_op_workspace(tsl_session *s, int32_t i, size_t *bytes);

/* Vanilla memory of one training iteration without allocating anything: the
 * liveness-freeing executor played against the allocator ledger only. */
typedef struct tsl_mem_report {
    size_t persistent_bytes;   /* params + buffers + optimizer states */
    size_t peak_load;
    size_t peak_footprint;
    int32_t peak_op;           /* op index at which the load peaks */
} tsl_mem_report;
tsl_status tsl_graph_dry_run(const tsl_graph *g, size_t capacity, tsl_mem_report *r);

#ifdef __cplusplus
}
#endif
#endif
