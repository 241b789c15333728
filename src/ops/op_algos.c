/*
 * op_algos.c - the algorithm menu of the op vocabulary (tensile/ops.h,
 * "algorithms"): which ops have several algorithms, their names and the
 * workspace each needs. The CPU backend's kernels (conv_algos.c) size their
 * column buffer with tsl_op_algo_workspace, so that the planner's figure and
 * the kernel's need are one number.
 */
#include "core/assert.h"
#include "ops/op_def.h"

static const char *const conv_names[] = {"default", "im2col", "direct"};

/* 1 for the ops with the conv menu. */
static int has_conv_menu(tsl_op_type t) {
    return t == TSL_OP_CONV2D || t == TSL_OP_CONV2D_BWD_DATA || t == TSL_OP_CONV2D_BWD_FILTER;
}

int tsl_op_n_algos(const tsl_op *op) {
    TSL_ASSERT(op);
    return has_conv_menu(op->type) ? 3 : 1;
}

const char *tsl_op_algo_name(const tsl_op *op, int k) {
    if (k < 0 || k >= tsl_op_n_algos(op)) return NULL;
    return has_conv_menu(op->type) ? conv_names[k] : "default";
}

/* The im2col kernels' workspace (src/backend/cpu/conv_algos.c): the column
 * buffer of one image and group, (Cin/g * KH * KW) x (Ho * Wo) elements of
 * the x-side tensor's type; BWD_FILTER also a double accumulator of the
 * weight gradient's size ahead of it. The x side and y side of each op
 * are as in the reference kernels (ref_conv.c): CONV2D x = in[0], y =
 * out[0]; BWD_DATA y = in[0] (dy), x = out[0] (dx); BWD_FILTER y = in[0]
 * (dy), x = in[1]. The weight gives KH, KW and Cin/g. */
static size_t column_bytes(const tsl_graph *g, const tsl_op *op) {
    tsl_tid xs, ys, ws;
    switch (op->type) {
    case TSL_OP_CONV2D: xs = op->in[0], ys = op->out[0], ws = op->in[1]; break;
    case TSL_OP_CONV2D_BWD_DATA: xs = op->out[0], ys = op->in[0], ws = op->in[1]; break;
    default: xs = op->in[1], ys = op->in[0], ws = op->out[0]; break; /* BWD_FILTER */
    }
    const tsl_tensor *x = tsl__t(g, xs), *y = tsl__t(g, ys), *w = tsl__t(g, ws);
    TSL_ASSERT(y->shape.ndim == 4 && w->shape.ndim == 4);
    size_t k = (size_t)(w->shape.d[1] * w->shape.d[2] * w->shape.d[3]);
    size_t cols = (size_t)(y->shape.d[2] * y->shape.d[3]);
    size_t bytes = k * cols * tsl_dtype_size(x->dtype);
    if (op->type == TSL_OP_CONV2D_BWD_FILTER) bytes += (size_t)w->shape.d[0] * k * sizeof(double);
    return bytes;
}

size_t tsl_op_algo_workspace(const tsl_graph *g, const tsl_op *op, int k) {
    TSL_ASSERT(g && op && k >= 0 && k < tsl_op_n_algos(op));
    if (k == TSL_ALGO_DEFAULT) return tsl_op_workspace(g, op);
    if (k == TSL_ALGO_IM2COL) return column_bytes(g, op);
    return 0; /* direct */
}
