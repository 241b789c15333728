/*
 * op_def.h - what the core knows about each op type: its name, its cost and
 * how to build its backward. Shape inference lives in the op's builder
 * function (tensile/graph.h); kernels live in the backends.
 *
 * Each op family file (ops_conv.c, ops_pool.c, ...) fills the entries of its
 * op types in tsl__ops_register_<family>(); op_table.c calls them all once.
 */
#ifndef TSL_OPS_OP_DEF_H
#define TSL_OPS_OP_DEF_H

#include "core/graph_internal.h"
#include "tensile/ops.h"

/* Appends to `g` the ops computing the gradients of op's inputs, given the
 * gradient tensor of each output (out_grads[i], TSL_NONE if that output gets
 * no gradient, TSL_GRAD_ONE for the loss). Writes in_grads[i] for every input
 * that tsl__graph_needs_grad() (leave TSL_NONE otherwise). `op` is a copy
 * that stays valid while the builder appends ops. */
typedef void (*tsl_backward_fn)(tsl_graph *g, const tsl_op *op, const tsl_tid *out_grads,
                                tsl_tid *in_grads);
/* Floating point operations of one execution (multiply-add = 2). */
typedef double (*tsl_flops_fn)(const tsl_graph *g, const tsl_op *op);
/* Scratch bytes beyond inputs and outputs that the reference semantics need
 * (0 for most ops); NULL means 0. */
typedef size_t (*tsl_workspace_fn)(const tsl_graph *g, const tsl_op *op);

typedef struct tsl_op_def {
    const char *name;           /* "conv2d", "conv2d_bwd_data", ... */
    tsl_flops_fn flops;         /* required */
    tsl_workspace_fn workspace; /* optional */
    tsl_backward_fn backward;   /* NULL: not differentiable (backward ops, updates) */
} tsl_op_def;

const tsl_op_def *tsl__op_def(tsl_op_type t);

void tsl__ops_register_conv(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_pool(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_norm(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_dense(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_eltwise(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_shape(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_loss(tsl_op_def defs[TSL_OP_COUNT]);
void tsl__ops_register_optim(tsl_op_def defs[TSL_OP_COUNT]);

/* Shared helpers for op files. */
static inline const tsl_tensor *tsl__t(const tsl_graph *g, tsl_tid id) {
    return tsl_graph_tensor(g, id);
}
static inline double tsl__numel(const tsl_graph *g, tsl_tid id) {
    return (double)tsl_shape_numel(&tsl_graph_tensor(g, id)->shape);
}
#endif
