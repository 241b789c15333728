/*
 * norm_geom.h - how the batch-norm kernels see their input, shared by the
 * reference (ref_norm.c) and the fast loops (fast_bnorm.c).
 */
#ifndef TSL_BACKEND_CPU_NORM_GEOM_H
#define TSL_BACKEND_CPU_NORM_GEOM_H

#include <stdint.h>

#include "tensile/graph.h"

/* x (N,C,S...) seen as (N,C,S): S = product of the dims after C (1 for a
 * 2-D input). */
static inline void bn_dims(const tsl_tensor *x, int64_t *n, int64_t *c, int64_t *s) {
    *n = x->shape.d[0];
    *c = x->shape.d[1];
    *s = 1;
    for (int i = 2; i < x->shape.ndim; i++) *s *= x->shape.d[i];
}

#endif
