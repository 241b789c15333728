/*
 * bayes_opt.h - Bayesian optimisation with a Gaussian process (not part of
 * the public API): the GP regression (Matern 5/2 or squared-exponential
 * kernel, constant prior mean, Cholesky solves), expected improvement, and
 * a minimiser of a black-box function over a box that evaluates a bounded
 * number of points. Used by the "autoswap" policy (AutoSwap's Bayesian
 * optimisation of its four score weights, policy_autoswap.c); nothing in
 * it knows about memory or plans.
 *
 * Everything is deterministic: the random numbers come from a seeded
 * generator of this file (splitmix64), and the same inputs give the same
 * points, bit for bit.
 *
 * Example usage:
 *
 *   static double f(void *ctx, const double *x) { return (x[0] - 0.3) * (x[0] - 0.3); }
 *   double lo = -1, hi = 1;
 *   tsl__bo_opts o = tsl__bo_opts_default(1, &lo, &hi);
 *   o.evaluations = 15;
 *   tsl__bo_result r;
 *   if (tsl__bo_minimize(&o, f, NULL, &r) == TSL_OK) use(r.x + r.best * 1, r.y[r.best]);
 *   tsl__bo_result_free(&r);
 */
#ifndef TSL_SCHED_BAYES_OPT_H
#define TSL_SCHED_BAYES_OPT_H

#include <stdint.h>
#include "tensile/status.h"

/* ---- the Gaussian process --------------------------------------------------------- */

typedef enum tsl__gp_kernel_kind {
    TSL__GP_MATERN52 = 0, /* sf2 (1 + s + s^2/3) exp(-s), s = sqrt(5) r / ell */
    TSL__GP_SE,           /* sf2 exp(-r^2 / (2 ell^2)) */
} tsl__gp_kernel_kind;

typedef struct tsl__gp {
    tsl__gp_kernel_kind kernel;
    int d, n;              /* dimension, training points */
    double ell, sf2;       /* length scale, signal variance */
    double noise;          /* noise variance added to the diagonal */
    double mean;           /* the constant prior mean */
    double *x;             /* n * d training inputs (a copy) */
    double *chol;          /* n * n: lower Cholesky factor L of K + noise I (row-major) */
    double *alpha;         /* n: (K + noise I)^-1 (y - mean) */
    double log_ml;         /* the log marginal likelihood of the training outputs */
} tsl__gp;

/* The kernel between points a and b of dimension d (r: their Euclidean
 * distance). */
double tsl__gp_kernel(tsl__gp_kernel_kind kind, double ell, double sf2, const double *a,
                      const double *b, int d);

/* Fits g to the n points x (n * d, row-major) with outputs y under the
 * given hyperparameters (ell > 0, sf2 > 0, noise >= 0): the posterior of a
 * GP with prior mean `mean` and the kernel. TSL_ERR_INVALID (a bad
 * argument, or K + noise I not positive definite: add noise), TSL_ERR_OOM.
 * On failure g is left empty (free is still fine). */
tsl_status tsl__gp_fit(tsl__gp *g, tsl__gp_kernel_kind kind, int d, int n, const double *x,
                       const double *y, double mean, double ell, double sf2, double noise);
/* The posterior mean and variance (>= 0) of the latent function at x. */
void tsl__gp_predict(const tsl__gp *g, const double *x, double *mu, double *var);
void tsl__gp_free(tsl__gp *g); /* a zeroed or freed g is fine */

/* Expected improvement below `best` (minimisation) of a normal N(mu, sd^2),
 * with exploration margin xi >= 0: E[max(best - xi - Y, 0)]; 0 if sd <= 0
 * and mu >= best - xi. */
double tsl__expected_improvement(double mu, double sd, double best, double xi);

/* ---- the minimiser ------------------------------------------------------------------ */

typedef double (*tsl__bo_objective)(void *ctx, const double *x);

typedef struct tsl__bo_opts {
    int d;                 /* dimension, 1..16 */
    const double *lo, *hi; /* the box, lo[i] < hi[i] */
    int evaluations;       /* objective evaluations in all, >= 1 */
    const double *given;   /* n_given points evaluated first (in the box), or NULL */
    int n_given;
    int n_random;          /* then this many uniform random points (the initial design) */
    uint64_t seed;         /* of the random points and the acquisition's search */
    int candidates;        /* random points at which EI is evaluated per step (>= 1) */
    double xi;             /* EI's exploration margin, in standardised outputs */
    tsl__gp_kernel_kind kernel;
} tsl__bo_opts;

/* Defaults: 30 evaluations, no given points, 5 random ones, seed 1, 2000
 * candidates, xi 0.01, Matern 5/2. */
tsl__bo_opts tsl__bo_opts_default(int d, const double *lo, const double *hi);

typedef struct tsl__bo_result {
    int n, d;              /* points evaluated */
    double *x;             /* n * d, in evaluation order */
    double *y;             /* n objective values */
    int best;              /* the index of the lowest y (the first of equals) */
} tsl__bo_result;

/* Minimises f over the box: evaluates the given points, then the random
 * ones, then until o->evaluations points the maximiser of the expected
 * improvement under a GP fitted to the points so far (inputs scaled to the
 * unit box, outputs standardised, the length scale by the largest marginal
 * likelihood on a fixed grid, signal variance 1, noise 1e-6). EI is
 * maximised over o->candidates random points and the points already seen,
 * each of the 5 best then refined by a compass search. f must return a
 * finite value (a non-finite one is taken as the worst seen so far plus
 * 1). TSL_ERR_INVALID naming a bad option, TSL_ERR_OOM; r is then empty. */
tsl_status tsl__bo_minimize(const tsl__bo_opts *o, tsl__bo_objective f, void *ctx,
                            tsl__bo_result *r);
void tsl__bo_result_free(tsl__bo_result *r);

#endif
