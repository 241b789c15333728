/*
 * graph_internal.h - what op builders and autodiff need from the graph.
 * Not part of the public API.
 */
#ifndef TSL_CORE_GRAPH_INTERNAL_H
#define TSL_CORE_GRAPH_INTERNAL_H

#include "tensile/graph.h"

/* Special out-grad value handed to the backward builder of the op that
 * generated the loss: "the gradient of this output is the constant 1". */
#define TSL_GRAD_ONE ((tsl_tid)-2)

/* 1 if the graph is failed or finalized, or any of ids[0..n) is TSL_NONE:
 * the builder must return TSL_NONE at once. Finalized graphs record an error. */
int tsl__graph_bad(tsl_graph *g, const tsl_tid *ids, int n);

/* Records a builder error (message printf-style), makes the graph's status
 * sticky TSL_ERR_INVALID, and returns TSL_NONE. */
tsl_tid tsl__graph_fail(tsl_graph *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Creates a descriptor for a computed tensor. Kind is ACTIVATION during the
 * forward phase and GRADIENT once tsl_graph_backward started, unless the
 * caller passes an explicit kind through tsl__graph_new_tensor_kind. */
tsl_tid tsl__graph_new_tensor(tsl_graph *g, const char *name, tsl_shape s, tsl_dtype dt);
tsl_tid tsl__graph_new_tensor_kind(tsl_graph *g, const char *name, tsl_shape s,
                                   tsl_dtype dt, tsl_tensor_kind kind);

/* Appends an op at the end of the execution order. `in` and `out` are
 * copied; an output may already exist only for in-place ops (optimizer
 * updates, batch-norm running statistics). `attr` (attr_size bytes, may be
 * NULL) is copied into the op's attribute union. Outputs that are new get
 * requires_grad = any input requires_grad, unless `no_grad_outputs` has bit
 * i set for output i. Returns the op index, or -1 on a failed graph. */
int32_t tsl__graph_add_op(tsl_graph *g, tsl_op_type type, const char *name,
                          const tsl_tid *in, int n_in, const tsl_tid *out, int n_out,
                          const void *attr, size_t attr_size, unsigned no_grad_outputs);

/* Writable descriptor (builders only, before finalize). */
tsl_tensor *tsl__graph_tensor_mut(tsl_graph *g, tsl_tid id);

/* During tsl_graph_backward: 1 if a gradient of `id` is wanted. */
int tsl__graph_needs_grad(const tsl_graph *g, tsl_tid id);

/* Builds "prefix.suffix" (or "prefix" when suffix is NULL) into buf. */
const char *tsl__name(char *buf, const char *prefix, const char *suffix);

/* Reorders the ops (before finalize): op i becomes the op that was at
 * order[i] (order: a permutation of 0..n_ops-1, asserted); each op's index
 * follows. The caller keeps the order a valid execution order (every read
 * after the generation it needs). TSL_ERR_OOM (the graph failed) if out of
 * host memory. */
tsl_status tsl__graph_permute_ops(tsl_graph *g, const int32_t *order);

/* Op index where the backward phase and the optimizer phase begin
 * (tsl_graph_n_ops if not built). */
int32_t tsl__graph_backward_begin(const tsl_graph *g);
int32_t tsl__graph_optimizer_begin(const tsl_graph *g);

/* 1 once tsl_graph_finalize succeeded. */
int tsl__graph_finalized(const tsl_graph *g);

/* Used by autodiff and the optimizer builder only. */
/* wanted[0..n_wanted) marks the tensors whose gradient is wanted; ids at or
 * beyond n_wanted (created during backward) are not wanted. */
void tsl__graph_set_backward(tsl_graph *g, int on, const uint8_t *wanted, int32_t n_wanted);
void tsl__graph_set_loss(tsl_graph *g, tsl_tid loss);
/* Records that the backward (optimizer=0) or optimizer (1) phase starts at
 * the next op appended. */
void tsl__graph_mark_phase(tsl_graph *g, int optimizer);
#endif
