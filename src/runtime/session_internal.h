/*
 * session_internal.h - the session's state, shared with the runtime files
 * that extend the vanilla executor (fault injection, per-op latencies).
 */
#ifndef TSL_RUNTIME_SESSION_INTERNAL_H
#define TSL_RUNTIME_SESSION_INTERNAL_H
#include "runtime/liveness.h"
#include "tensile/backend.h"
#include "tensile/session.h"

struct tsl_session {
    const tsl_graph *g;
    tsl_session_opts o;
    tsl_backend *b;
    void **ptr;                 /* per tensor: device pointer, NULL if not resident */
    double *op_ms;              /* per op: latency of its last execution */
    tsl_liveness live_train;    /* all ops */
    tsl_liveness live_eval;     /* forward ops only */
    tsl_tid input, label, loss, probs;
    int32_t loss_op;
    float *host_probs;
    int64_t steps;
    struct tsl__runtime *rt;    /* attached runtime (runtime_internal.h), NULL: vanilla */
};

/* One vanilla pass over ops [0, end) (training step or evaluation): the
 * executor of session.c, used as is when no plan is followed. */
tsl_status tsl__session_run_vanilla(tsl_session *s, const float *x, const int32_t *y,
                                    int training, int64_t n_valid, tsl_step_stats *st);
/* The start of every step (training or evaluation, vanilla or under a
 * plan): zeroes *st with the loss NaN, and checks the graph has the INPUT
 * "input" and LABEL "label" it loads (TSL_ERR_INVALID otherwise). */
tsl_status tsl__session_step_begin(const tsl_session *s, tsl_step_stats *st);
/* After op i ran: reads the loss (and counts correct predictions) if i is
 * the loss op; nothing otherwise. */
void tsl__session_after_op(tsl_session *s, int32_t i, const int32_t *y, int64_t n_valid,
                           tsl_step_stats *st);
/* Frees every resident non-persistent tensor. */
void tsl__session_free_transients(tsl_session *s);

/* The backend of a session (tests: fault injection, ledger). */
static inline tsl_backend *tsl__session_backend(tsl_session *s) { return s->b; }
#endif
