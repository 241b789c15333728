/*
 * helpers.h - shared test utilities: deterministic random data, normalised
 * error, and running one op or a whole graph with the reference kernels.
 */
#ifndef TSL_TESTS_HELPERS_H
#define TSL_TESTS_HELPERS_H
#include <stddef.h>
#include <stdint.h>
#include "tensile/graph.h"

/* splitmix64-based uniform in [lo, hi), reproducible from *state. */
double th_uniform(uint64_t *state, double lo, double hi);
void th_fill_f32(float *x, size_t n, uint64_t seed, float lo, float hi);
void th_fill_f64(double *x, size_t n, uint64_t seed, double lo, double hi);

/* max|a-b| / max(max|b|, tiny): the normalised error of a against oracle b. */
double th_norm_err_f32(const float *a, const float *b, size_t n);
double th_norm_err_f64(const double *a, const double *b, size_t n);

/* A tiny graph runner with the reference kernels, float or double: one
 * buffer per tensor (int32 for labels), every op run in order. */
typedef struct th_rt {
    const tsl_graph *g;
    tsl_dtype dt;     /* TSL_F32 or TSL_F64 */
    void **buf;
} th_rt;
size_t th_rt_bytes(const th_rt *r, tsl_tid t);
th_rt *th_rt_new(const tsl_graph *g, tsl_dtype dt);
void th_rt_free(th_rt *r);
/* Fills every float INPUT and PARAM with uniform[-1,1] from seed. */
void th_rt_fill(th_rt *r, uint64_t seed);
/* Runs ops [first, end) with the reference kernels at `nthreads`. */
tsl_status th_rt_run(th_rt *r, int32_t first, int32_t end, int training, int nthreads);
/* Copies tensor t into doubles. */
void th_rt_to_f64(const th_rt *r, tsl_tid t, double *dst);
/* Copies the leaves (inputs, labels, params) of float runner a into double runner b. */
void th_rt_copy_leaves_f32_to_f64(const th_rt *a, th_rt *b);

/* 1 if TSL_TEST_QUICK is set (sanitizer builds run smaller cases). */
int th_quick(void);
#endif
