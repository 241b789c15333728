/*
 * features.c - the paper's features of one op execution (IV-A): its first
 * input's dimensions, its parameters, its cost and the device's
 * utilisation by other work (tensile/predict.h lists them in order).
 */
#include <math.h>

#include "tensile/ops.h"
#include "tensile/predict.h"

static double lg(double x) { return log1p(x > 0 ? x : 0); }

void tsl_op_features(const tsl_graph *g, const tsl_op *op, double util, double f[TSL_PRED_NF]) {
    for (int i = 0; i < TSL_PRED_NF; i++) f[i] = 0;
    if (op->n_in > 0) {
        const tsl_shape *s = &tsl_graph_tensor(g, op->in[0])->shape;
        for (int i = 0; i < 4 && i < s->ndim; i++) f[i] = lg((double)s->d[i]);
        if (s->ndim > 4) { /* fold the rest into W */
            double w = 1;
            for (int i = 3; i < s->ndim; i++) w *= (double)s->d[i];
            f[3] = lg(w);
        }
    }
    if (op->n_out > 0) {
        const tsl_shape *s = &tsl_graph_tensor(g, op->out[0])->shape;
        f[4] = lg(s->ndim > 1 ? (double)s->d[1] : s->ndim == 1 ? (double)s->d[0] : 1);
    }
    switch (op->type) {
    case TSL_OP_CONV2D:
    case TSL_OP_CONV2D_BWD_DATA:
    case TSL_OP_CONV2D_TRANSPOSE: {
        const tsl_shape *w = &tsl_graph_tensor(g, op->in[1])->shape; /* (Cout, Cin/g, KH, KW) */
        f[5] = w->ndim == 4 ? (double)w->d[2] : 0;
        f[6] = op->attr.conv.stride_h;
        f[7] = op->attr.conv.pad_h;
        break;
    }
    case TSL_OP_CONV2D_BWD_FILTER: {
        const tsl_shape *w = &tsl_graph_tensor(g, op->out[0])->shape;
        f[5] = w->ndim == 4 ? (double)w->d[2] : 0;
        f[6] = op->attr.conv.stride_h;
        f[7] = op->attr.conv.pad_h;
        break;
    }
    case TSL_OP_MAXPOOL2D:
    case TSL_OP_MAXPOOL2D_BWD:
    case TSL_OP_AVGPOOL2D:
    case TSL_OP_AVGPOOL2D_BWD:
        f[5] = op->attr.pool.kernel_h;
        f[6] = op->attr.pool.stride_h;
        f[7] = op->attr.pool.pad_h;
        break;
    default:
        break;
    }
    f[8] = lg(tsl_op_flops(g, op));
    f[9] = lg((double)tsl_op_bytes_read(g, op) + (double)tsl_op_bytes_written(g, op));
    f[10] = op->n_in;
    f[11] = util < 0 ? 0 : util > 1 ? 1 : util;
}
