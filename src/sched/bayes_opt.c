/*
 * bayes_opt.c - Gaussian-process regression, expected improvement and a
 * Bayesian-optimisation minimiser over a box (bayes_opt.h).
 *
 * The GP is the textbook one (Rasmussen & Williams, Algorithm 2.1): K + noise
 * I = L L^T by Cholesky, alpha = L^T \ (L \ (y - m)), posterior mean
 * m + k*^T alpha, variance k(x, x) - |L \ k*|^2, log marginal likelihood
 * -(y - m)^T alpha / 2 - sum log L_ii - n log(2 pi) / 2. The minimiser
 * standardises the outputs seen so far, scales the inputs to the unit box,
 * picks the length scale from a fixed grid by the marginal likelihood, and
 * evaluates next the point of largest expected improvement found by a
 * seeded random search refined by compass search: no step depends on
 * anything but the inputs and the seed.
 */
#include "sched/bayes_opt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the Gaussian process --------------------------------------------------------- */

double tsl__gp_kernel(tsl__gp_kernel_kind kind, double ell, double sf2, const double *a,
                      const double *b, int d) {
    double r2 = 0;
    for (int i = 0; i < d; i++) r2 += (a[i] - b[i]) * (a[i] - b[i]);
    if (kind == TSL__GP_SE) return sf2 * exp(-0.5 * r2 / (ell * ell));
    double s = sqrt(5.0 * r2) / ell;
    return sf2 * (1.0 + s + s * s / 3.0) * exp(-s);
}

void tsl__gp_free(tsl__gp *g) {
    free(g->x);
    free(g->chol);
    free(g->alpha);
    memset(g, 0, sizeof *g);
}

/* Solves L z = b in place (L lower triangular, n x n, row-major). */
static void solve_lower(const double *L, int n, double *b) {
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++) s -= L[(size_t)i * n + k] * b[k];
        b[i] = s / L[(size_t)i * n + i];
    }
}

/* Solves L^T z = b in place. */
static void solve_upper_t(const double *L, int n, double *b) {
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++) s -= L[(size_t)k * n + i] * b[k];
        b[i] = s / L[(size_t)i * n + i];
    }
}

tsl_status tsl__gp_fit(tsl__gp *g, tsl__gp_kernel_kind kind, int d, int n, const double *x,
                       const double *y, double mean, double ell, double sf2, double noise) {
    memset(g, 0, sizeof *g);
    if (d < 1 || n < 1 || !x || !y || !(ell > 0) || !(sf2 > 0) || !(noise >= 0) ||
        (kind != TSL__GP_MATERN52 && kind != TSL__GP_SE))
        return tsl_fail(TSL_ERR_INVALID,
                        "gp: bad arguments (d %d, n %d, ell %g, sf2 %g, noise %g, kernel %d)", d, n,
                        ell, sf2, noise, (int)kind);
    *g = (tsl__gp){.kernel = kind, .d = d, .n = n, .ell = ell, .sf2 = sf2, .noise = noise,
                   .mean = mean};
    g->x = malloc((size_t)n * (size_t)d * sizeof *g->x);
    g->chol = malloc((size_t)n * (size_t)n * sizeof *g->chol);
    g->alpha = malloc((size_t)n * sizeof *g->alpha);
    if (!g->x || !g->chol || !g->alpha) {
        tsl__gp_free(g);
        return tsl_fail(TSL_ERR_OOM, "gp: out of host memory for %d points", n);
    }
    memcpy(g->x, x, (size_t)n * (size_t)d * sizeof *x);
    double *L = g->chol;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = tsl__gp_kernel(kind, ell, sf2, x + (size_t)i * d, x + (size_t)j * d, d);
            if (i == j) s += noise;
            for (int k = 0; k < j; k++) s -= L[(size_t)i * n + k] * L[(size_t)j * n + k];
            if (i == j) {
                if (!(s > 0)) {
                    tsl__gp_free(g);
                    return tsl_fail(TSL_ERR_INVALID,
                                    "gp: the kernel matrix of %d points is not positive definite "
                                    "(noise %g)", n, noise);
                }
                L[(size_t)i * n + i] = sqrt(s);
            } else {
                L[(size_t)i * n + j] = s / L[(size_t)j * n + j];
            }
        }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) L[(size_t)i * n + j] = 0;
    double fit = 0, logdet = 0;
    for (int i = 0; i < n; i++) g->alpha[i] = y[i] - mean;
    solve_lower(L, n, g->alpha);
    for (int i = 0; i < n; i++) fit += g->alpha[i] * g->alpha[i];
    solve_upper_t(L, n, g->alpha);
    for (int i = 0; i < n; i++) logdet += log(L[(size_t)i * n + i]);
    g->log_ml = -0.5 * fit - logdet - 0.5 * n * log(2.0 * M_PI);
    return TSL_OK;
}

/* As tsl__gp_predict with scratch v (n doubles). */
static void predict(const tsl__gp *g, const double *x, double *mu, double *var, double *v) {
    int n = g->n, d = g->d;
    double m = g->mean;
    for (int i = 0; i < n; i++) {
        v[i] = tsl__gp_kernel(g->kernel, g->ell, g->sf2, x, g->x + (size_t)i * d, d);
        m += v[i] * g->alpha[i];
    }
    solve_lower(g->chol, n, v);
    double s = g->sf2;
    for (int i = 0; i < n; i++) s -= v[i] * v[i];
    *mu = m;
    *var = s > 0 ? s : 0;
}

void tsl__gp_predict(const tsl__gp *g, const double *x, double *mu, double *var) {
    double stack[64];
    double *v = g->n <= 64 ? stack : malloc((size_t)g->n * sizeof *v);
    if (!v) { /* out of host memory: the prior */
        *mu = g->mean;
        *var = g->sf2;
        return;
    }
    predict(g, x, mu, var, v);
    if (v != stack) free(v);
}

double tsl__expected_improvement(double mu, double sd, double best, double xi) {
    double imp = best - xi - mu;
    if (!(sd > 0)) return imp > 0 ? imp : 0;
    double z = imp / sd;
    double cdf = 0.5 * erfc(-z / sqrt(2.0)), pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    double ei = imp * cdf + sd * pdf;
    return ei > 0 ? ei : 0;
}

/* ---- the minimiser ------------------------------------------------------------------ */

tsl__bo_opts tsl__bo_opts_default(int d, const double *lo, const double *hi) {
    return (tsl__bo_opts){.d = d, .lo = lo, .hi = hi, .evaluations = 30, .n_random = 5,
                          .seed = 1, .candidates = 2000, .xi = 0.01,
                          .kernel = TSL__GP_MATERN52};
}

void tsl__bo_result_free(tsl__bo_result *r) {
    free(r->x);
    free(r->y);
    memset(r, 0, sizeof *r);
}

/* splitmix64: a uniform double in [0, 1). */
static double uniform(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Length scales tried (inputs in the unit box). */
static const double ELLS[] = {0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0};
#define N_ELLS ((int)(sizeof ELLS / sizeof ELLS[0]))
#define NOISE 1e-6
#define N_REFINE 5

/* The state of one minimisation. */
typedef struct bo {
    const tsl__bo_opts *o;
    int n, d;
    double *u;             /* n * d inputs scaled to the unit box */
    double *y, *ys;        /* outputs, standardised outputs */
    double *v;             /* scratch of predictions */
    tsl__gp g;
    double best;           /* the lowest standardised output */
} bo;

/* EI at unit point u under the current fit. */
static double ei_at(const bo *b, const double *u) {
    double mu, var;
    predict(&b->g, u, &mu, &var, b->v);
    return tsl__expected_improvement(mu, sqrt(var), b->best, b->o->xi);
}

/* Fits the GP to the points so far: standardised outputs, the length scale
 * of the largest marginal likelihood. */
static tsl_status fit(bo *b) {
    double m = 0, s = 0;
    for (int i = 0; i < b->n; i++) m += b->y[i];
    m /= b->n;
    for (int i = 0; i < b->n; i++) s += (b->y[i] - m) * (b->y[i] - m);
    s = sqrt(s / b->n);
    if (!(s > 1e-12 * (fabs(m) + 1e-300))) s = 1;
    b->best = INFINITY;
    for (int i = 0; i < b->n; i++) {
        b->ys[i] = (b->y[i] - m) / s;
        if (b->ys[i] < b->best) b->best = b->ys[i];
    }
    tsl__gp_free(&b->g);
    for (int k = 0; k < N_ELLS; k++) {
        tsl__gp g;
        tsl_status st = tsl__gp_fit(&g, b->o->kernel, b->d, b->n, b->u, b->ys, 0.0, ELLS[k], 1.0,
                                    NOISE);
        if (st == TSL_ERR_OOM) return st;
        if (st != TSL_OK) { /* not positive definite at this scale: skip it */
            tsl_clear_error();
            continue;
        }
        if (!b->g.x || g.log_ml > b->g.log_ml) {
            tsl__gp_free(&b->g);
            b->g = g;
        } else
            tsl__gp_free(&g);
    }
    if (!b->g.x) /* every scale degenerate (duplicate points): more noise */
        return tsl__gp_fit(&b->g, b->o->kernel, b->d, b->n, b->u, b->ys, 0.0, ELLS[0], 1.0, 1e-3);
    return TSL_OK;
}

/* Compass search from u (unit box) for a larger EI; *ei: EI at u, updated. */
static void refine(const bo *b, double *u, double *ei) {
    double step = 0.1, t[16];
    for (int it = 0; it < 400 && step > 1e-4; it++) {
        int moved = 0;
        for (int i = 0; i < b->d && !moved; i++)
            for (int dir = -1; dir <= 1 && !moved; dir += 2) {
                memcpy(t, u, (size_t)b->d * sizeof *t);
                t[i] = fmin(1.0, fmax(0.0, t[i] + dir * step));
                double e = ei_at(b, t);
                if (e > *ei) {
                    memcpy(u, t, (size_t)b->d * sizeof *t);
                    *ei = e;
                    moved = 1;
                }
            }
        if (!moved) step *= 0.5;
    }
}

/* The next point to evaluate (unit box) into u. */
static void next_point(bo *b, uint64_t *rng, double *u) {
    int d = b->d, nc = b->o->candidates;
    double top_e[N_REFINE], top_u[N_REFINE][16], c[16];
    int n_top = 0;
    double far_sd = -1, far_u[16];
    for (int k = 0; k < nc + b->n; k++) {
        if (k < nc)
            for (int i = 0; i < d; i++) c[i] = uniform(rng);
        else
            memcpy(c, b->u + (size_t)(k - nc) * d, (size_t)d * sizeof *c);
        double mu, var;
        predict(&b->g, c, &mu, &var, b->v);
        double e = tsl__expected_improvement(mu, sqrt(var), b->best, b->o->xi);
        if (var > far_sd) {
            far_sd = var;
            memcpy(far_u, c, (size_t)d * sizeof *c);
        }
        /* keep the N_REFINE largest (ties: the earlier) */
        int at = n_top;
        while (at > 0 && e > top_e[at - 1]) at--;
        if (at >= N_REFINE) continue;
        int last = n_top < N_REFINE ? n_top : N_REFINE - 1;
        for (int q = last; q > at; q--) {
            top_e[q] = top_e[q - 1];
            memcpy(top_u[q], top_u[q - 1], (size_t)d * sizeof *c);
        }
        top_e[at] = e;
        memcpy(top_u[at], c, (size_t)d * sizeof *c);
        if (n_top < N_REFINE) n_top++;
    }
    double best_e = -1;
    for (int q = 0; q < n_top; q++) {
        refine(b, top_u[q], &top_e[q]);
        if (top_e[q] > best_e) {
            best_e = top_e[q];
            memcpy(u, top_u[q], (size_t)d * sizeof *u);
        }
    }
    if (!(best_e > 0)) /* nothing to gain by the model: explore where it knows least */
        memcpy(u, far_u, (size_t)d * sizeof *u);
}

/* Evaluates f at unit point u: appends it. */
static void evaluate(bo *b, tsl__bo_objective f, void *ctx, const double *u, tsl__bo_result *r) {
    const tsl__bo_opts *o = b->o;
    int d = b->d, k = b->n;
    double *x = r->x + (size_t)k * d;
    for (int i = 0; i < d; i++) {
        x[i] = o->lo[i] + u[i] * (o->hi[i] - o->lo[i]);
        if (x[i] > o->hi[i]) x[i] = o->hi[i];
    }
    memcpy(b->u + (size_t)k * d, u, (size_t)d * sizeof *u);
    double y = f(ctx, x);
    if (!isfinite(y)) {
        double worst = 0;
        for (int i = 0; i < k; i++) worst = i == 0 || r->y[i] > worst ? r->y[i] : worst;
        y = worst + 1;
    }
    r->y[k] = b->y[k] = y;
    b->n = ++r->n;
    if (k == 0 || y < r->y[r->best]) r->best = k;
}

/* TSL_OK if o describes a minimisation this file can run. */
static tsl_status check_opts(const tsl__bo_opts *o) {
    if (!o || o->d < 1 || o->d > 16 || !o->lo || !o->hi)
        return tsl_fail(TSL_ERR_INVALID, "bayes_opt: dimension %d outside 1..16, or no box",
                        o ? o->d : 0);
    for (int i = 0; i < o->d; i++)
        if (!isfinite(o->lo[i]) || !isfinite(o->hi[i]) || !(o->lo[i] < o->hi[i]))
            return tsl_fail(TSL_ERR_INVALID, "bayes_opt: box [%g, %g] in dimension %d", o->lo[i],
                            o->hi[i], i);
    if (o->evaluations < 1 || o->n_given < 0 || o->n_random < 0 || o->candidates < 1 ||
        !(o->xi >= 0) || (o->n_given > 0 && !o->given))
        return tsl_fail(TSL_ERR_INVALID,
                        "bayes_opt: evaluations %d, given %d, random %d, candidates %d, xi %g",
                        o->evaluations, o->n_given, o->n_random, o->candidates, o->xi);
    for (int k = 0; k < o->n_given; k++)
        for (int i = 0; i < o->d; i++) {
            double v = o->given[(size_t)k * o->d + i];
            if (!(v >= o->lo[i] && v <= o->hi[i]))
                return tsl_fail(TSL_ERR_INVALID,
                                "bayes_opt: given point %d: %g outside [%g, %g] in dimension %d",
                                k, v, o->lo[i], o->hi[i], i);
        }
    return TSL_OK;
}

tsl_status tsl__bo_minimize(const tsl__bo_opts *o, tsl__bo_objective f, void *ctx,
                            tsl__bo_result *r) {
    memset(r, 0, sizeof *r);
    tsl_status st = check_opts(o);
    if (st != TSL_OK) return st;
    int d = o->d, N = o->evaluations;
    bo b = {.o = o, .d = d};
    r->d = d;
    r->x = malloc((size_t)N * (size_t)d * sizeof *r->x);
    r->y = malloc((size_t)N * sizeof *r->y);
    b.u = malloc((size_t)N * (size_t)d * sizeof *b.u);
    b.y = malloc((size_t)N * sizeof *b.y);
    b.ys = malloc((size_t)N * sizeof *b.ys);
    b.v = malloc((size_t)N * sizeof *b.v);
    if (!r->x || !r->y || !b.u || !b.y || !b.ys || !b.v)
        st = tsl_fail(TSL_ERR_OOM, "bayes_opt: out of host memory for %d evaluations", N);
    uint64_t rng = o->seed;
    double u[16];
    for (int k = 0; st == TSL_OK && k < o->n_given && b.n < N; k++) {
        for (int i = 0; i < d; i++)
            u[i] = (o->given[(size_t)k * d + i] - o->lo[i]) / (o->hi[i] - o->lo[i]);
        evaluate(&b, f, ctx, u, r);
    }
    for (int k = 0; st == TSL_OK && (k < o->n_random || b.n == 0) && b.n < N; k++) {
        for (int i = 0; i < d; i++) u[i] = uniform(&rng);
        evaluate(&b, f, ctx, u, r);
    }
    while (st == TSL_OK && b.n < N) {
        st = fit(&b);
        if (st != TSL_OK) break;
        next_point(&b, &rng, u);
        evaluate(&b, f, ctx, u, r);
    }
    tsl__gp_free(&b.g);
    free(b.u);
    free(b.y);
    free(b.ys);
    free(b.v);
    if (st != TSL_OK) tsl__bo_result_free(r);
    return st;
}
