/*
 * ref_eltwise.c - reference kernels of the elementwise family: ADD, MUL,
 * RELU, RELU_BWD, REDUCE_SUM_TO, DROPOUT (semantics: docs of tensile/graph.h
 * and the op semantics). The kernels are written once in ref_eltwise.inc and
 * compiled for float and double; this file holds what does not depend on
 * the element type: broadcast plans and dropout's counter-based generator.
 *
 * Every output element is computed by one thread from a fixed sequence of
 * inputs, so the bits never depend on the thread count.
 */
#include <stdint.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

/* Elements below which a kernel stays on one thread (fork cost). */
#define PAR_MIN 32768

/* A broadcast plan between a "big" shape and a "small" one that broadcasts
 * to it (ADD: a and b; REDUCE_SUM_TO: x and y). Dims where big is 1 are
 * dropped; consecutive dims that are all broadcast (small is 1, big is not)
 * or all kept (equal) are merged into one group, so that e.g.
 * (N,C,H,W) + (1,C,1,1) becomes three groups [N bcast][C kept][H*W bcast]. */
typedef struct bcast_plan {
    int n;                          /* groups, >= 1 */
    int64_t ext[TSL_MAX_DIMS];      /* extent of each group */
    int bcast[TSL_MAX_DIMS];        /* 1: the small shape is 1 along the group */
    int64_t big_stride[TSL_MAX_DIMS];   /* element stride of the group in big */
    int64_t small_stride[TSL_MAX_DIMS]; /* in small; 0 for broadcast groups */
    int64_t numel_big, numel_small;
} bcast_plan;

/* Fills *p for `big` and `small`. Precondition (asserted): small
 * broadcasts to big, as the builders check. */
static void bcast_plan_make(const tsl_shape *big, const tsl_shape *small, bcast_plan *p) {
    TSL_ASSERT(small->ndim <= big->ndim);
    int off = big->ndim - small->ndim;
    p->n = 0;
    for (int i = 0; i < big->ndim; i++) {
        int64_t eb = big->d[i];
        int64_t es = i >= off ? small->d[i - off] : 1;
        TSL_ASSERT(es == 1 || es == eb);
        if (eb == 1) continue;
        int bc = es == 1;
        if (p->n > 0 && p->bcast[p->n - 1] == bc) {
            p->ext[p->n - 1] *= eb;
        } else {
            p->ext[p->n] = eb;
            p->bcast[p->n] = bc;
            p->n++;
        }
    }
    if (p->n == 0) { /* a single element */
        p->ext[0] = 1;
        p->bcast[0] = 0;
        p->n = 1;
    }
    int64_t sb = 1, ss = 1;
    for (int k = p->n - 1; k >= 0; k--) {
        p->big_stride[k] = sb;
        sb *= p->ext[k];
        p->small_stride[k] = p->bcast[k] ? 0 : ss;
        if (!p->bcast[k]) ss *= p->ext[k];
    }
    p->numel_big = sb;
    p->numel_small = ss;
}

/* Offset in the small tensor of row r of the big one, a row being one run
 * of the last group (groups 0..n-2 indexed row-major by r). */
static inline int64_t bcast_row_offset(const bcast_plan *p, int64_t r) {
    int64_t off = 0;
    for (int k = p->n - 2; k >= 0; k--) {
        off += (r % p->ext[k]) * p->small_stride[k];
        r /= p->ext[k];
    }
    return off;
}

static void plan_of(const tsl_kernel_args *a, tsl_tid big, tsl_tid small, bcast_plan *p) {
    bcast_plan_make(&tsl_graph_tensor(a->g, big)->shape, &tsl_graph_tensor(a->g, small)->shape, p);
}

static inline int64_t numel_of(const tsl_kernel_args *a, tsl_tid t) {
    return tsl_shape_numel(&tsl_graph_tensor(a->g, t)->shape);
}

/* splitmix64 applied to v: the first output of a splitmix64 generator whose
 * state is v (add the golden gamma, then the finaliser). */
static inline uint64_t splitmix64(uint64_t v) {
    uint64_t z = v + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Dropout's counter-based uniform in [0,1) for element i of training step
 * `step`: the top 53 bits of splitmix64(seed ^ G*step ^ C*i). */
static inline double dropout_uniform(uint64_t seed, int64_t step, int64_t i) {
    uint64_t v = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)step) ^
                 (0xD1B54A32D192ED03ull * (uint64_t)i);
    return (double)(splitmix64(v) >> 11) * 0x1.0p-53;
}

#define REF_INC "ref_eltwise.inc"
#include "ref_instantiate.h"

void tsl__ref_register_eltwise(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_ADD] = (tsl_ref_kernel){add_f32, add_f64};
    table[TSL_OP_MUL] = (tsl_ref_kernel){mul_f32, mul_f64};
    table[TSL_OP_RELU] = (tsl_ref_kernel){relu_f32, relu_f64};
    table[TSL_OP_RELU_BWD] = (tsl_ref_kernel){relu_bwd_f32, relu_bwd_f64};
    table[TSL_OP_REDUCE_SUM_TO] = (tsl_ref_kernel){reduce_sum_to_f32, reduce_sum_to_f64};
    table[TSL_OP_DROPOUT] = (tsl_ref_kernel){dropout_f32, dropout_f64};
}
