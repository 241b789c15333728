/*
 * gradcheck.h - run graphs with the float64 reference kernels, and check an
 * op's backward against central finite differences in double precision.
 */
#ifndef TSL_TESTS_GRADCHECK_H
#define TSL_TESTS_GRADCHECK_H
#include <stddef.h>
#include <stdint.h>
#include "tensile/ops.h"

/* One buffer per tensor: double for float tensors, int32 for LABEL tensors. */
typedef struct th_f64 th_f64;
th_f64 *th_f64_new(const tsl_graph *g);          /* g finalized */
void *th_f64_buf(th_f64 *r, tsl_tid t);          /* double* or int32_t* */
/* Runs ops [first_op, end_op) with the f64 reference kernels; a kernel
 * error fails the calling test (abort with the message). */
void th_f64_run(th_f64 *r, int32_t first_op, int32_t end_op, int64_t step, int training);
void th_f64_free(th_f64 *r);
/* Copies v[0..n) into tensor t's doubles (n at most its element count). */
void th_f64_set(th_f64 *r, tsl_tid t, const double *v, size_t n);
/* Asserts got[0..n) equals want[0..n) within 1e-12 (hand oracles: exact
 * small integers or simple fractions); fails with "WHAT: element i is ..,
 * expected .. (diff ..)" naming the worst element. */
void th_expect64(const char *what, const double *got, const double *want, size_t n);

/* Gradient check of op `op_index` of the NOT yet finalized graph g, whose
 * output `out_index` is y. Adds an INPUT r shaped like y, builds the op's
 * backward directly (gradient of L = sum(y*r) w.r.t. every tensor in xs,
 * which must be inputs of the op made with tsl_param), finalizes, fills
 * every leaf with uniform[-1,1] doubles (labels: 0), then calls fill(r, ctx)
 * if non-NULL, runs, and compares each analytic gradient with central finite
 * differences (h = 1e-6, up to 48 elements per tensor). Returns the largest
 * normalised error max|fd-an| / max(max|an|, 1e-6) over all xs and prints
 * the worst element on stderr. */
double th_gradcheck(tsl_graph *g, int32_t op_index, int out_index, const tsl_tid *xs, int n_xs,
                    uint64_t seed, void (*fill)(th_f64 *r, void *ctx), void *ctx);
#endif
