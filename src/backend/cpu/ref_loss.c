/*
 * ref_loss.c - reference kernels of SOFTMAX_XENT and SOFTMAX_XENT_BWD, MSE
 * and MSE_BWD, float and double.
 *
 * logits (N,K,S...) are seen as (N,K,S) and labels as (N,S), S = product
 * of the dims after K (1 for (N,K)). The softmax subtracts the maximum
 * first, so logits of any magnitude give finite results; sums run in
 * double. The loss is summed over s within each n, then over n, in
 * ascending order, whatever the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

static void xent_dims(const tsl_tensor *l, int64_t *n, int64_t *k, int64_t *s) {
    *n = l->shape.d[0];
    *k = l->shape.d[1];
    *s = 1;
    for (int i = 2; i < l->shape.ndim; i++) *s *= l->shape.d[i];
}

/* Checks every label against [0,K) on the calling thread (the error
 * message is per thread). Returns TSL_OK, or TSL_ERR_INVALID naming the op,
 * the label tensor, the first bad position (flat and as (n, spatial)) and
 * its value. */
static tsl_status check_labels(const tsl_kernel_args *a, const int32_t *lab, int64_t N,
                               int64_t K, int64_t S) {
    for (int64_t i = 0; i < N * S; i++)
        if (lab[i] < 0 || (int64_t)lab[i] >= K) {
            const tsl_tensor *yt = tsl_graph_tensor(a->g, a->op->in[1]);
            return tsl_fail(TSL_ERR_INVALID,
                            "op '%s': label %d at position %lld (n=%lld, spatial index %lld) of '%s' "
                            "is outside [0,%lld)",
                            a->op->name, (int)lab[i], (long long)i, (long long)(i / S),
                            (long long)(i % S), yt->name, (long long)K);
        }
    return TSL_OK;
}

#define REF_INC "ref_loss.inc"
#include "ref_instantiate.h"

void tsl__ref_register_loss(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_SOFTMAX_XENT] = (tsl_ref_kernel){softmax_xent_f32, softmax_xent_f64};
    table[TSL_OP_SOFTMAX_XENT_BWD] = (tsl_ref_kernel){softmax_xent_bwd_f32, softmax_xent_bwd_f64};
    table[TSL_OP_MSE] = (tsl_ref_kernel){mse_f32, mse_f64};
    table[TSL_OP_MSE_BWD] = (tsl_ref_kernel){mse_bwd_f32, mse_bwd_f64};
}
