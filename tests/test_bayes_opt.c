/*
 * test_bayes_opt.c - the Gaussian process, expected improvement and the
 * Bayesian-optimisation minimiser of src/sched/bayes_opt.c (AutoSwap's
 * weight search), against values computed by hand and offline with numpy
 * and scipy (the scripts' results are the literals below):
 *
 *   kernels: Matern 5/2 at r = ell = sf2 = 1: (1 + sqrt5 + 5/3) e^-sqrt5
 *   = 0.5239941088318203; squared exponential: e^-0.5;
 *   one point (x 0, y 1, mean 0, noise 0): the posterior at x is k(x, 0)
 *   with variance 1 - k(x, 0)^2 (by hand);
 *   three points x (0, 0.5, 1.2), y (1, -0.5, 2), mean 0.3, ell 0.7, sf2
 *   1.5, noise 1e-4 (numpy: K^-1 by inv, slogdet):
 *     Matern 5/2: at 0.8 mean 0.25123427528538683 var 0.11625172202510892;
 *                 at 2.0 mean 1.4831993748764631 var 1.1671795008548704;
 *                 log marginal likelihood -7.149466933954196;
 *     SE:         at 0.8 mean 0.07850504705985667 var 0.01714748901887564;
 *                 at 2.0 mean 2.5951312958980637 var 0.9218329833113279;
 *                 log marginal likelihood -10.264934315174145;
 *   EI(mu 0.2, sd 0.5, best 0.4, xi 0.01) = 0.3087021252403239 (scipy norm);
 *   sin(3x) + x^2 / 2 on [-3, 3]: global minimum -0.8766554804954689 at
 *   x = -0.4710431709134131 (scipy, bounded Brent around a fine grid's
 *   best), with a local one near 1.4.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "sched/bayes_opt.h"

#define CLOSE(a, b, tol, what)                                                                     \
    cr_assert(fabs((a) - (b)) <= (tol) * (1 + fabs(b)), "%s: %.17g, expected %.17g", what, (a),   \
              (b))

Test(gp, kernels_by_hand) {
    double a = 0, b = 1;
    CLOSE(tsl__gp_kernel(TSL__GP_MATERN52, 1, 1, &a, &b, 1), 0.5239941088318203, 1e-15, "m52");
    CLOSE(tsl__gp_kernel(TSL__GP_SE, 1, 1, &a, &b, 1), exp(-0.5), 1e-15, "se");
    /* distance in 2-D, amplitude */
    double p[2] = {0, 0}, q[2] = {0.6, 0.8};
    CLOSE(tsl__gp_kernel(TSL__GP_MATERN52, 1, 2.5, p, q, 2), 2.5 * 0.5239941088318203, 1e-15,
          "m52 2-D");
    CLOSE(tsl__gp_kernel(TSL__GP_SE, 2, 1, p, q, 2), exp(-0.125), 1e-15, "se ell 2");
}

Test(gp, one_point_posterior_by_hand) {
    double x = 0, y = 1;
    tsl__gp g;
    cr_assert_eq(tsl__gp_fit(&g, TSL__GP_MATERN52, 1, 1, &x, &y, 0.0, 1.0, 1.0, 0.0), TSL_OK);
    for (double t = -2; t <= 2; t += 0.25) {
        double mu, var, k = tsl__gp_kernel(TSL__GP_MATERN52, 1, 1, &t, &x, 1);
        tsl__gp_predict(&g, &t, &mu, &var);
        CLOSE(mu, k, 1e-14, "mean");
        CLOSE(var, 1 - k * k, 1e-14, "variance");
    }
    double mu, var;
    tsl__gp_predict(&g, &x, &mu, &var); /* at the point: exact, no variance */
    CLOSE(mu, 1.0, 1e-15, "mean at the point");
    cr_assert(var < 1e-15, "variance at the point %g", var);
    tsl__gp_free(&g);
}

static void three_points(tsl__gp_kernel_kind k, const double *want, double lml) {
    const double x[3] = {0, 0.5, 1.2}, y[3] = {1.0, -0.5, 2.0};
    tsl__gp g;
    cr_assert_eq(tsl__gp_fit(&g, k, 1, 3, x, y, 0.3, 0.7, 1.5, 1e-4), TSL_OK, "%s",
                 tsl_last_error());
    const double at[2] = {0.8, 2.0};
    for (int i = 0; i < 2; i++) {
        double mu, var;
        tsl__gp_predict(&g, &at[i], &mu, &var);
        CLOSE(mu, want[2 * i], 1e-10, "posterior mean");
        CLOSE(var, want[2 * i + 1], 1e-10, "posterior variance");
    }
    CLOSE(g.log_ml, lml, 1e-10, "log marginal likelihood");
    tsl__gp_free(&g);
}

Test(gp, three_points_against_numpy) {
    three_points(TSL__GP_MATERN52,
                 (const double[]){0.25123427528538683, 0.11625172202510892, 1.4831993748764631,
                                  1.1671795008548704},
                 -7.149466933954196);
    three_points(TSL__GP_SE,
                 (const double[]){0.07850504705985667, 0.01714748901887564, 2.5951312958980637,
                                  0.9218329833113279},
                 -10.264934315174145);
}

Test(gp, bad_fits_are_errors) {
    double x[2] = {0, 0}, y[2] = {1, 2};
    tsl__gp g;
    /* two equal points without noise: singular */
    cr_assert_eq(tsl__gp_fit(&g, TSL__GP_MATERN52, 1, 2, x, y, 0, 1, 1, 0), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "not positive definite"), "%s", tsl_last_error());
    cr_assert_null(g.x);
    /* with noise it is fine */
    cr_assert_eq(tsl__gp_fit(&g, TSL__GP_MATERN52, 1, 2, x, y, 0, 1, 1, 1e-3), TSL_OK);
    tsl__gp_free(&g);
    cr_assert_eq(tsl__gp_fit(&g, TSL__GP_SE, 1, 2, x, y, 0, -1, 1, 1e-3), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "ell -1"), "%s", tsl_last_error());
    tsl__gp_free(&g);
}

Test(gp, expected_improvement_against_scipy) {
    CLOSE(tsl__expected_improvement(0.2, 0.5, 0.4, 0.01), 0.3087021252403239, 1e-14, "EI");
    /* no uncertainty: the plain improvement, or nothing */
    CLOSE(tsl__expected_improvement(0.2, 0.0, 0.4, 0.0), 0.2, 1e-15, "EI sd 0");
    cr_assert_eq(tsl__expected_improvement(0.5, 0.0, 0.4, 0.0), 0.0);
    /* far above the best: vanishing, never negative */
    double e = tsl__expected_improvement(50, 1, 0, 0);
    cr_assert(e >= 0 && e < 1e-300, "EI far above the best: %g", e);
}

/* ---- the minimiser ----------------------------------------------------------------- */

static int calls;
static double wavy(void *ctx, const double *x) {
    (void)ctx;
    calls++;
    return sin(3 * x[0]) + 0.5 * x[0] * x[0];
}

Test(bayes_opt, finds_the_known_minimum_of_a_smooth_1d_function) {
    double lo = -3, hi = 3;
    tsl__bo_opts o = tsl__bo_opts_default(1, &lo, &hi);
    o.evaluations = 20;
    o.n_random = 3;
    o.seed = 7;
    tsl__bo_result r;
    calls = 0;
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.n, 20);
    cr_assert_eq(calls, 20, "%d evaluations, asked for 20", calls);
    double xb = r.x[r.best], yb = r.y[r.best];
    printf("bayes_opt on sin(3x) + x^2/2: best %.6f at %.6f after %d evaluations (minimum "
           "-0.876655 at -0.471043)\n", yb, xb, r.n);
    cr_assert(fabs(xb - -0.4710431709134131) < 0.02, "best x %.6f, the minimum is at -0.471043",
              xb);
    cr_assert(yb - -0.8766554804954689 < 1e-3, "best y %.9f", yb);
    for (int i = 0; i < r.n; i++) cr_assert(r.x[i] >= lo && r.x[i] <= hi);
    tsl__bo_result_free(&r);
}

static double bowl4(void *ctx, const double *x) {
    (void)ctx;
    const double c[4] = {0.5, -0.25, 0.1, -0.7};
    double s = 0;
    for (int i = 0; i < 4; i++) s += (x[i] - c[i]) * (x[i] - c[i]);
    return s;
}

Test(bayes_opt, beats_its_own_initial_design_in_four_dimensions) {
    double lo[4] = {-1, -1, -1, -1}, hi[4] = {1, 1, 1, 1};
    /* the four unit vectors first, as AutoSwap does */
    double given[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    tsl__bo_opts o = tsl__bo_opts_default(4, lo, hi);
    o.given = given;
    o.n_given = 4;
    o.n_random = 4;
    o.evaluations = 30;
    tsl__bo_result r;
    cr_assert_eq(tsl__bo_minimize(&o, bowl4, NULL, &r), TSL_OK, "%s", tsl_last_error());
    double init_best = INFINITY;
    for (int i = 0; i < 8; i++) init_best = fmin(init_best, r.y[i]);
    for (int i = 0; i < 4; i++) cr_assert_eq(r.x[i * 4 + i], 1.0, "given point %d not first", i);
    printf("bayes_opt on a 4-D bowl: initial design best %.4f, after %d evaluations %.4f\n",
           init_best, r.n, r.y[r.best]);
    cr_assert_lt(r.y[r.best], 0.25 * init_best, "no progress beyond the initial design: %g vs %g",
                 r.y[r.best], init_best);
    tsl__bo_result_free(&r);
}

Test(bayes_opt, deterministic_by_seed) {
    double lo = -3, hi = 3;
    tsl__bo_opts o = tsl__bo_opts_default(1, &lo, &hi);
    o.evaluations = 12;
    tsl__bo_result a, b, c;
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &a), TSL_OK);
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &b), TSL_OK);
    cr_assert(!memcmp(a.x, b.x, sizeof *a.x * (size_t)a.n), "same seed, other points");
    o.seed = 99;
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &c), TSL_OK);
    cr_assert(memcmp(a.x, c.x, sizeof *a.x * (size_t)a.n) != 0, "another seed, the same points");
    tsl__bo_result_free(&a);
    tsl__bo_result_free(&b);
    tsl__bo_result_free(&c);
}

static double nan_at_right(void *ctx, const double *x) {
    (void)ctx;
    return x[0] > 0 ? NAN : x[0] * x[0];
}

Test(bayes_opt, bad_options_and_non_finite_values) {
    double lo = -1, hi = 1, out = 2;
    tsl__bo_opts o = tsl__bo_opts_default(1, &lo, &hi);
    tsl__bo_result r;
    o.evaluations = 0;
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "evaluations 0"), "%s", tsl_last_error());
    cr_assert_null(r.x);
    o = tsl__bo_opts_default(1, &hi, &lo);
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "box [1, -1]"), "%s", tsl_last_error());
    o = tsl__bo_opts_default(0, &lo, &hi);
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "dimension 0"), "%s", tsl_last_error());
    o = tsl__bo_opts_default(1, &lo, &hi);
    o.given = &out;
    o.n_given = 1;
    cr_assert_eq(tsl__bo_minimize(&o, wavy, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "given point 0: 2 outside [-1, 1]"), "%s", tsl_last_error());
    /* a NaN is taken as the worst seen plus 1: the search goes on */
    o = tsl__bo_opts_default(1, &lo, &hi);
    o.evaluations = 10;
    cr_assert_eq(tsl__bo_minimize(&o, nan_at_right, NULL, &r), TSL_OK);
    for (int i = 0; i < r.n; i++) cr_assert(isfinite(r.y[i]));
    cr_assert(r.x[r.best] <= 0);
    tsl__bo_result_free(&r);
}
