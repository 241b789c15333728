/*
 * tensile/graph.h - the static graph of one whole training iteration.
 *
 * A graph holds tensor descriptors and ops in a fixed, deterministic execution
 * order: the order in which the builder functions were called. Forward ops
 * come first, then the loss, then the backward ops appended by
 * tsl_graph_backward(); tsl_graph_optimizer() adds the updates, each right
 * after its parameter's last backward access (by default) or all after the
 * backward pass (TSL_STEP_AFTER_BACKWARD). An update writes its parameter in
 * place: it is a use and a generation of the same tensor, so the first use
 * of a parameter in the next iteration follows the previous iteration's
 * update.
 *
 * This header is the graph itself (the core layer): tensors, ops, the
 * leaves (inputs, labels, parameters, buffers), finalisation and the
 * per-tensor access lists the planner reads. The op builders, autodiff and
 * the optimizer phase are the op vocabulary, in tensile/ops.h.
 *
 * Example usage:
 *
 *   #include "tensile/ops.h"   // the builders
 *
 *   tsl_graph *g = tsl_graph_new("tiny");
 *   tsl_tid x = tsl_input(g, "x", TSL_SHAPE(8, 4));         // (N,in)
 *   tsl_tid y = tsl_label(g, "y", TSL_SHAPE(8));            // (N)
 *   tsl_tid w = tsl_param(g, "fc.w", TSL_SHAPE(3, 4), TSL_INIT_KAIMING_NORMAL);
 *   tsl_tid b = tsl_param(g, "fc.b", TSL_SHAPE(3), TSL_INIT_ZERO);
 *   tsl_tid logits = tsl_linear(g, "fc", x, w, b);                // (N,3)
 *   tsl_tid loss = tsl_softmax_xent(g, "loss", logits, y);        // ()
 *   tsl_graph_backward(g, loss);
 *   tsl_optimizer_cfg opt = tsl_sgd_default(0.1f);
 *   tsl_graph_optimizer(g, &opt);
 *   if (tsl_graph_finalize(g) != TSL_OK) die(tsl_last_error());
 */
#ifndef TENSILE_GRAPH_H
#define TENSILE_GRAPH_H

#include "tensile/status.h"
#include "tensile/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsl_graph tsl_graph;

/* Every op type, forward and backward alike: a backward op is an ordinary op
 * of the graph with its own kernels. */
typedef enum tsl_op_type {
    /* conv family (src/ops/ops_conv.c) */
    TSL_OP_CONV2D = 0,          /* (x, w[, b]) -> y                          */
    TSL_OP_CONV2D_BWD_DATA,     /* (dy, w) -> dx        shape of x in output */
    TSL_OP_CONV2D_BWD_FILTER,   /* (dy, x) -> dw[, db]                       */
    TSL_OP_CONV2D_TRANSPOSE,    /* (x, w[, b]) -> y, w is (Cin, Cout/g, KH, KW) */
    /* pool family (src/ops/ops_pool.c) */
    TSL_OP_MAXPOOL2D,           /* (x) -> y                                  */
    TSL_OP_MAXPOOL2D_BWD,       /* (dy, x) -> dx  (argmax recomputed from x) */
    TSL_OP_AVGPOOL2D,           /* (x) -> y                                  */
    TSL_OP_AVGPOOL2D_BWD,       /* (dy) -> dx                                */
    TSL_OP_GLOBAL_AVGPOOL,      /* (x: N,C,H,W) -> y: N,C                    */
    TSL_OP_GLOBAL_AVGPOOL_BWD,  /* (dy: N,C) -> dx: N,C,H,W                  */
    /* norm family (src/ops/ops_norm.c) */
    TSL_OP_BATCHNORM,           /* (x, gamma, beta, rmean, rvar) -> y, mean, invstd, rmean, rvar */
    TSL_OP_BATCHNORM_BWD,       /* (dy, x, gamma, mean, invstd) -> dx, dgamma, dbeta */
    /* dense family (src/ops/ops_dense.c) */
    TSL_OP_LINEAR,              /* (x: N,K, w: M,K[, b: M]) -> y: N,M        */
    TSL_OP_MATMUL,              /* (a, b) -> c, 2-D, optional transposes     */
    /* elementwise family (src/ops/ops_eltwise.c) */
    TSL_OP_ADD,                 /* (a, b) -> c, b broadcast to a (numpy rules, b's dims 1 or equal) */
    TSL_OP_MUL,                 /* (a, b) -> c, same shape                   */
    TSL_OP_RELU,                /* (x) -> y                                  */
    TSL_OP_RELU_BWD,            /* (dy, y) -> dx = dy * (y > 0)              */
    TSL_OP_REDUCE_SUM_TO,       /* (x) -> y, summed down to y's shape (broadcast inverse) */
    TSL_OP_DROPOUT,             /* (x) -> y, mask (mask holds 0 or 1/(1-p))  */
    /* shape family (src/ops/ops_shape.c) */
    TSL_OP_CONCAT,              /* (x0..xn-1) -> y, along axis 1 (channels)  */
    TSL_OP_SLICE,               /* (x) -> y, channels [offset, offset+count) along axis 1 */
    TSL_OP_RESHAPE,             /* (x) -> y, same numel, copied              */
    /* loss family (src/ops/ops_loss.c) */
    TSL_OP_SOFTMAX_XENT,        /* (logits: N,K[,H,W], labels: N[,H,W] i32) -> loss: (), probs */
    TSL_OP_SOFTMAX_XENT_BWD,    /* (probs, labels) -> dlogits                */
    /* optimizer family (src/ops/ops_optim.c), in place */
    TSL_OP_SGD_UPDATE,          /* (p, g[, m]) -> p[, m]                     */
    TSL_OP_ADAM_UPDATE,         /* (p, g, m, v) -> p, m, v                   */
    /* loss family, continued (src/ops/ops_loss.c): a regression loss */
    TSL_OP_MSE,                 /* (pred, target) -> loss: () = mean (pred-target)^2 */
    TSL_OP_MSE_BWD,             /* (pred, target) -> dpred = 2 (pred-target) / numel */
    TSL_OP_COUNT
} tsl_op_type;

typedef struct tsl_conv_attr {
    int stride_h, stride_w;
    int pad_h, pad_w;       /* symmetric zero padding */
    int dil_h, dil_w;       /* 1 = dense */
    int groups;             /* 1 = ordinary convolution */
    int out_pad_h, out_pad_w; /* transpose only: extra rows/cols of output */
} tsl_conv_attr;

typedef struct tsl_pool_attr {
    int kernel_h, kernel_w;
    int stride_h, stride_w;
    int pad_h, pad_w;
    int count_include_pad;  /* avg pool: divide by the full window (PyTorch default 1) */
} tsl_pool_attr;

typedef struct tsl_bn_attr {
    float eps;              /* e.g. 1e-5 */
    float momentum;         /* running = (1-m)*running + m*batch, PyTorch's 0.1 */
} tsl_bn_attr;

typedef struct tsl_dropout_attr {
    float p;                /* probability of zeroing, in [0,1) */
    uint64_t seed;          /* mask = f(seed, step, element), counter-based: deterministic;
                               give each dropout layer its own seed */
} tsl_dropout_attr;

typedef struct tsl_matmul_attr {
    int trans_a, trans_b;   /* c = op(a) * op(b) */
} tsl_matmul_attr;

typedef struct tsl_slice_attr {
    int64_t offset, count;  /* along axis 1 */
} tsl_slice_attr;

typedef enum tsl_optimizer_kind { TSL_OPT_SGD = 0, TSL_OPT_ADAM } tsl_optimizer_kind;

/* Where each parameter's update runs in the iteration. Either way an
 * update reads only its parameter, gradient and states, so the values
 * every op computes are the same bit for bit; what changes is how long the
 * gradients and states must stay on the device. */
typedef enum tsl_optimizer_step {
    /* the default: each update right after the last op that reads or writes
     * its parameter or gradient, inside the backward pass (PyTorch's
     * "optimizer step in backward"): each gradient is freed as soon as it is
     * complete and the optimizer states can leave the device for most of the
     * iteration */
    TSL_STEP_IN_BACKWARD = 0,
    /* every update after the whole backward pass, in parameter creation
     * order: the optimizer phase of the seed papers (TENSILE's "Opt") */
    TSL_STEP_AFTER_BACKWARD
} tsl_optimizer_step;

typedef struct tsl_optimizer_cfg {
    tsl_optimizer_kind kind;
    float lr;
    float momentum;         /* SGD: 0 means no momentum buffer */
    float weight_decay;     /* L2 added to the gradient (PyTorch's definition) */
    float beta1, beta2, eps; /* Adam */
    tsl_optimizer_step step; /* where the updates run (0: in the backward) */
} tsl_optimizer_cfg;

/* One op of the graph. Attributes are read through the union member that
 * matches `type`. Input and output arrays belong to the graph. */
typedef struct tsl_op {
    int32_t index;          /* position in the execution order */
    tsl_op_type type;
    char name[TSL_NAME_MAX];
    int n_in, n_out;
    const tsl_tid *in;
    const tsl_tid *out;
    union {
        tsl_conv_attr conv;
        tsl_pool_attr pool;
        tsl_bn_attr bn;
        tsl_dropout_attr dropout;
        tsl_matmul_attr matmul;
        tsl_slice_attr slice;
        tsl_optimizer_cfg opt;
    } attr;
} tsl_op;

/* ---- lifetime ---------------------------------------------------------- */
tsl_graph *tsl_graph_new(const char *name);   /* NULL only if malloc fails */
void tsl_graph_free(tsl_graph *g);            /* NULL is fine */
const char *tsl_graph_name(const tsl_graph *g);
/* TSL_OK, or the first builder error (its message was recorded then). */
tsl_status tsl_graph_status(const tsl_graph *g);

/* ---- leaves -------------------------------------------------------------- */
tsl_tid tsl_input(tsl_graph *g, const char *name, tsl_shape s);  /* f32 INPUT  */
tsl_tid tsl_label(tsl_graph *g, const char *name, tsl_shape s);  /* i32 LABEL  */
tsl_tid tsl_param(tsl_graph *g, const char *name, tsl_shape s, tsl_init init);
tsl_tid tsl_buffer(tsl_graph *g, const char *name, tsl_shape s, tsl_init init);

/* ---- freezing --------------------------------------------------------- */
/* Freezes the graph and computes every tensor's accesses. No builder may be
 * called afterwards. */
tsl_status tsl_graph_finalize(tsl_graph *g);

/* ---- reading ----------------------------------------------------------- */
int32_t tsl_graph_n_tensors(const tsl_graph *g);
int32_t tsl_graph_n_ops(const tsl_graph *g);
const tsl_tensor *tsl_graph_tensor(const tsl_graph *g, tsl_tid id);
const tsl_op *tsl_graph_op(const tsl_graph *g, int32_t index);
tsl_tid tsl_graph_loss(const tsl_graph *g);   /* TSL_NONE before backward */
tsl_tid tsl_graph_find(const tsl_graph *g, const char *name); /* by exact name */

/* Accesses of one tensor, in execution order (after finalize). A TUA of an
 * op comes before a TGA of the same op (an in-place update reads, then
 * writes). Non-persistent tensors start with their TGA (INPUT and LABEL are
 * generated by the iteration's data load, op -1). */
typedef enum tsl_access_type { TSL_TGA = 0, TSL_TUA = 1 } tsl_access_type;
typedef struct tsl_access {
    int32_t op;             /* op index, or -1 for the data load at iteration start */
    tsl_access_type type;
} tsl_access;
const tsl_access *tsl_graph_accesses(const tsl_graph *g, tsl_tid id, int *n);
/* Index of the last op that reads the tensor, -1 if none reads it. */
int32_t tsl_graph_last_use(const tsl_graph *g, tsl_tid id);
/* Index of the op generating it within the iteration (in-place updates
 * included), -1 for data-loaded and never-written tensors. */
int32_t tsl_graph_producer(const tsl_graph *g, tsl_tid id);

/* Bytes an op reads (its inputs) and writes (its outputs). */
size_t tsl_op_bytes_read(const tsl_graph *g, const tsl_op *op);
size_t tsl_op_bytes_written(const tsl_graph *g, const tsl_op *op);

/* Totals. */
int64_t tsl_graph_param_count(const tsl_graph *g);  /* elements of trainable PARAMs */
size_t tsl_graph_bytes_of_kind(const tsl_graph *g, tsl_tensor_kind k);

#ifdef __cplusplus
}
#endif
#endif
