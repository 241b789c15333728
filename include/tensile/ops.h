/*
 * tensile/ops.h - the op vocabulary of the graph (tensile/graph.h): forward
 * builders with their shape checks, layer helpers, autodiff
 * (tsl_graph_backward), the optimizer phase as in-place update ops
 * (tsl_graph_optimizer) and each op's cost.
 *
 * Builder functions take tensor ids and return the id of the result. An
 * invalid argument (shape mismatch, bad attribute) records a message, makes
 * the graph's status sticky-failed and returns TSL_NONE; any builder given
 * TSL_NONE returns TSL_NONE, so a model can be built without a check after
 * every call and checked once with tsl_graph_status().
 *
 * Example usage: see tensile/graph.h.
 */
#ifndef TENSILE_OPS_H
#define TENSILE_OPS_H

#include "tensile/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

tsl_optimizer_cfg tsl_sgd_default(float lr);  /* momentum 0.9, wd 0 */
tsl_optimizer_cfg tsl_adam_default(float lr); /* 0.9, 0.999, 1e-8, wd 0 */

/* ---- forward builders (names are prefixes for the outputs' names) -------- */
tsl_tid tsl_conv2d(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w, tsl_tid b,
                   tsl_conv_attr a);
tsl_tid tsl_conv2d_transpose(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w,
                             tsl_tid b, tsl_conv_attr a);
tsl_tid tsl_maxpool2d(tsl_graph *g, const char *name, tsl_tid x, tsl_pool_attr a);
tsl_tid tsl_avgpool2d(tsl_graph *g, const char *name, tsl_tid x, tsl_pool_attr a);
tsl_tid tsl_global_avgpool(tsl_graph *g, const char *name, tsl_tid x);
/* Creates its gamma/beta params and running-stat buffers named name.weight,
 * name.bias, name.running_mean, name.running_var for a (N,C,...) input. */
tsl_tid tsl_batchnorm(tsl_graph *g, const char *name, tsl_tid x, tsl_bn_attr a);
tsl_tid tsl_linear(tsl_graph *g, const char *name, tsl_tid x, tsl_tid w, tsl_tid b);
tsl_tid tsl_matmul(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b, tsl_matmul_attr at);
tsl_tid tsl_add(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b);
tsl_tid tsl_mul(tsl_graph *g, const char *name, tsl_tid a, tsl_tid b);
tsl_tid tsl_relu(tsl_graph *g, const char *name, tsl_tid x);
tsl_tid tsl_dropout(tsl_graph *g, const char *name, tsl_tid x, tsl_dropout_attr a);
tsl_tid tsl_concat(tsl_graph *g, const char *name, const tsl_tid *xs, int n);
tsl_tid tsl_slice(tsl_graph *g, const char *name, tsl_tid x, tsl_slice_attr a);
tsl_tid tsl_reshape(tsl_graph *g, const char *name, tsl_tid x, tsl_shape s);
tsl_tid tsl_flatten(tsl_graph *g, const char *name, tsl_tid x); /* (N, rest) */
tsl_tid tsl_reduce_sum_to(tsl_graph *g, const char *name, tsl_tid x, tsl_shape s);
/* Mean cross-entropy over all N (and H,W) positions. */
tsl_tid tsl_softmax_xent(tsl_graph *g, const char *name, tsl_tid logits, tsl_tid labels);
/* Mean squared error of float `pred` against float `target` of the same
 * shape (any rank >= 1): a scalar loss named `name`, mean over every element
 * of (pred - target)^2. The target gets no gradient (an INPUT, typically).
 * Like softmax_xent, it must be the graph's loss. Returns the loss, or
 * TSL_NONE after a builder error naming the op, the tensors and the shapes. */
tsl_tid tsl_mse(tsl_graph *g, const char *name, tsl_tid pred, tsl_tid target);

/* Conv helpers for model builders: a conv with its own params created as
 * name.weight (KAIMING_NORMAL) and name.bias (ZERO) when bias != 0. */
tsl_tid tsl_conv2d_layer(tsl_graph *g, const char *name, tsl_tid x, int64_t cout,
                         int kh, int kw, tsl_conv_attr a, int bias);
/* A linear layer with params name.weight (UNIFORM_FANIN) and name.bias. */
tsl_tid tsl_linear_layer(tsl_graph *g, const char *name, tsl_tid x, int64_t out, int bias);
/* Attribute helpers: stride s, padding p, dilation 1, groups 1. */
tsl_conv_attr tsl_conv_sp(int stride, int pad);
tsl_pool_attr tsl_pool_ksp(int kernel, int stride, int pad);

/* ---- whole-iteration construction --------------------------------------- */
/* Appends the backward ops of everything the scalar `loss` depends on, in
 * reverse execution order; gradients of a tensor used several times are
 * summed with ADD in a fixed order. Sets tsl_tensor.grad of every PARAM. */
tsl_status tsl_graph_backward(tsl_graph *g, tsl_tid loss);
/* Adds one in-place update op per PARAM that has a gradient (and creates
 * the optimizer-state tensors: SGD momentum "<p>.momentum", Adam
 * "<p>.adam_m", "<p>.adam_v"). cfg->step places them: TSL_STEP_IN_BACKWARD
 * (0, the default) moves each update to just after the last op reading or
 * writing its parameter or gradient (updates after the same op keep
 * parameter creation order); TSL_STEP_AFTER_BACKWARD appends them all after
 * the backward pass, in parameter creation order (the graph's optimizer
 * phase; tsl_workload.optimizer_begin). */
tsl_status tsl_graph_optimizer(tsl_graph *g, const tsl_optimizer_cfg *cfg);
/* Per-op costs: FLOPs and the scratch workspace the op's reference
 * semantics need beyond its outputs (the op definitions of src/ops). */
double tsl_op_flops(const tsl_graph *g, const tsl_op *op);
size_t tsl_op_workspace(const tsl_graph *g, const tsl_op *op);
const char *tsl_op_type_name(tsl_op_type t);

/* ---- algorithms (docs/SCHEDULING.md, "Algorithms") -----------------------
 * Some ops can run with one of several algorithms, which give the same
 * result up to floating-point rounding and differ in time and workspace:
 * a planning decision (a plan's per-op choice, tensile/plan.h). The menu is
 * the op vocabulary's, so that the planner can list it without a backend;
 * a backend implements it (the CPU backend: src/backend/cpu/conv_algos.c)
 * and says what each really needs (tsl_backend_i.op_algo_workspace).
 *
 *   CONV2D, CONV2D_BWD_DATA, CONV2D_BWD_FILTER:
 *     0 TSL_ALGO_DEFAULT  what the backend runs when nothing is chosen
 *                         (CPU: oneDNN's convolution, the reference kernel
 *                         where oneDNN has none); workspace tsl_op_workspace
 *                         here, the backend's own figure once matched
 *     1 TSL_ALGO_IM2COL   im2col (col2im) + one GEMM per image and group;
 *                         workspace: the column buffer of one image and group,
 *                         (Cin/g * KH * KW) x (Ho * Wo) elements (BWD_FILTER:
 *                         and a double accumulator of the weight's size)
 *     2 TSL_ALGO_DIRECT   direct loops over the output (the reference
 *                         kernel): no workspace
 *   every other op: 0 only. */
#define TSL_ALGO_DEFAULT 0
#define TSL_ALGO_IM2COL 1
#define TSL_ALGO_DIRECT 2
#define TSL_ALGO_MAX 8          /* no op has more algorithms than this */
#define TSL_ALGO_NAME_MAX 24    /* bytes of an algorithm's name, NUL included */

/* The number of algorithms of op (>= 1, <= TSL_ALGO_MAX). */
int tsl_op_n_algos(const tsl_op *op);
/* The name of algorithm k of op ("default", "im2col", "direct"); NULL if
 * k is not in [0, tsl_op_n_algos(op)). */
const char *tsl_op_algo_name(const tsl_op *op, int k);
/* The workspace bytes algorithm k of op needs (k in range: TSL_ASSERT);
 * k = 0 is tsl_op_workspace. */
size_t tsl_op_algo_workspace(const tsl_graph *g, const tsl_op *op, int k);

#ifdef __cplusplus
}
#endif
#endif
