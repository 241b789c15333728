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
};

/* The backend of a session (tests: fault injection, ledger). */
static inline tsl_backend *tsl__session_backend(tsl_session *s) { return s->b; }
#endif
