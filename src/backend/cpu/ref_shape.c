/*
 * ref_shape.c - reference kernels of the shape family: CONCAT and SLICE
 * along axis 1, RESHAPE. They only move elements, so each is written once
 * over bytes with the element size of a->dtype (4 for TSL_F32, 8 for
 * TSL_F64) and registered for both types. Each output byte is written by
 * one thread: the bits never depend on the thread count.
 */
#include <string.h>

#include "backend/cpu/kernel.h"
#include "core/assert.h"

/* Bytes below which a kernel stays on one thread. */
#define PAR_MIN_BYTES (1 << 18)

static size_t elem_size(const tsl_kernel_args *a) {
    TSL_ASSERT(a->dtype == TSL_F32 || a->dtype == TSL_F64);
    return tsl_dtype_size(a->dtype);
}

/* Elements per channel row: the product of dims 2.. (1 for rank 2). */
static int64_t inner_of(const tsl_shape *s) {
    int64_t n = 1;
    for (int k = 2; k < s->ndim; k++) n *= s->d[k];
    return n;
}

/* CONCAT (x0..xn-1) -> y: for each n, the channel blocks of x0, x1, ... in
 * order. y is (N, sum C_i, rest). */
static tsl_status concat_ref(const tsl_kernel_args *a) {
    const size_t es = elem_size(a);
    const tsl_shape *ys = &tsl_graph_tensor(a->g, a->op->out[0])->shape;
    const int64_t nb = ys->d[0], cy = ys->d[1], inner = inner_of(ys);
    const int nin = a->op->n_in;
    char *y = a->out[0];
    const int par = (size_t)tsl_shape_numel(ys) * es >= PAR_MIN_BYTES;
#pragma omp parallel for num_threads(a->nthreads) schedule(static) if (par)
    for (int64_t n = 0; n < nb; n++) {
        int64_t off = 0;
        for (int i = 0; i < nin; i++) {
            const int64_t ci = tsl_graph_tensor(a->g, a->op->in[i])->shape.d[1];
            const size_t bytes = (size_t)(ci * inner) * es;
            memcpy(y + (size_t)((n * cy + off) * inner) * es,
                   (const char *)a->in[i] + (size_t)n * bytes, bytes);
            off += ci;
        }
    }
    return TSL_OK;
}

/* SLICE (x) -> y = x[:, offset:offset+count, ...]. */
static tsl_status slice_ref(const tsl_kernel_args *a) {
    const size_t es = elem_size(a);
    const tsl_shape *xs = &tsl_graph_tensor(a->g, a->op->in[0])->shape;
    const int64_t nb = xs->d[0], cx = xs->d[1], inner = inner_of(xs);
    const int64_t off = a->op->attr.slice.offset, cnt = a->op->attr.slice.count;
    TSL_ASSERT(off >= 0 && cnt >= 1 && off + cnt <= cx);
    const char *x = a->in[0];
    char *y = a->out[0];
    const size_t bytes = (size_t)(cnt * inner) * es;
    const int par = (size_t)nb * bytes >= PAR_MIN_BYTES;
#pragma omp parallel for num_threads(a->nthreads) schedule(static) if (par)
    for (int64_t n = 0; n < nb; n++)
        memcpy(y + (size_t)n * bytes, x + (size_t)((n * cx + off) * inner) * es, bytes);
    return TSL_OK;
}

/* RESHAPE (x) -> y: the same elements, copied (nothing to do if the executor
 * gave both the same storage). */
static tsl_status reshape_ref(const tsl_kernel_args *a) {
    const size_t bytes =
        (size_t)tsl_shape_numel(&tsl_graph_tensor(a->g, a->op->in[0])->shape) * elem_size(a);
    if (a->out[0] != a->in[0]) memmove(a->out[0], a->in[0], bytes);
    return TSL_OK;
}

void tsl__ref_register_shape(tsl_ref_kernel table[TSL_OP_COUNT]) {
    table[TSL_OP_CONCAT] = (tsl_ref_kernel){concat_ref, concat_ref};
    table[TSL_OP_SLICE] = (tsl_ref_kernel){slice_ref, slice_ref};
    table[TSL_OP_RESHAPE] = (tsl_ref_kernel){reshape_ref, reshape_ref};
}
