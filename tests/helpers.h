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

/* 1 if TSL_TEST_QUICK is set (sanitizer builds run smaller cases). */
int th_quick(void);
#endif
