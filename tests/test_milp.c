/*
 * test_milp.c - the CBC wrapper (src/sched/milp.h): random small binary
 * programs against brute-force enumeration, infeasibility, the linear
 * relaxation, bounds changed between solves, a time limit that stops a
 * hard program (status and gap reported, no timing asserted), bad options
 * named, and silence (nothing written to stdout at log level 0).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "sched/milp.h"

/* A random program over n binary columns and nr rows with small integer
 * coefficients: rows of <= and >=, objective of any sign. */
static tsl__milp *random_program(uint64_t seed, int n, int nr, double *c, double *a, char *sense,
                                 double *b) {
    uint64_t s = seed;
    tsl__milp *m = tsl__milp_new();
    cr_assert(m);
    for (int j = 0; j < n; j++) {
        c[j] = floor(th_uniform(&s, -10, 10));
        cr_assert_eq(tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, c[j]), j);
    }
    int cols[32];
    for (int i = 0; i < nr; i++) {
        for (int j = 0; j < n; j++) {
            a[i * n + j] = floor(th_uniform(&s, -3, 6));
            cols[j] = j;
        }
        sense[i] = th_uniform(&s, 0, 1) < 0.7 ? 'L' : 'G';
        b[i] = floor(th_uniform(&s, sense[i] == 'L' ? 0 : -4, sense[i] == 'L' ? 10 : 4));
        cr_assert_eq(tsl__milp_row(m, n, cols, a + i * n, sense[i], b[i]), i);
    }
    return m;
}

/* The optimum of the program by enumeration; NAN if infeasible. */
static double brute_force(int n, int nr, const double *c, const double *a, const char *sense,
                          const double *b) {
    double best = NAN;
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        int ok = 1;
        for (int i = 0; i < nr && ok; i++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += a[i * n + j] * ((mask >> j) & 1);
            ok = sense[i] == 'L' ? s <= b[i] : s >= b[i];
        }
        if (!ok) continue;
        double v = 0;
        for (int j = 0; j < n; j++) v += c[j] * ((mask >> j) & 1);
        if (isnan(best) || v < best) best = v;
    }
    return best;
}

Test(milp, random_programs_match_enumeration) {
    int feasible = 0, infeasible = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        int n = 2 + (int)(seed % 11), nr = 1 + (int)(seed % 5);
        double c[16], a[16 * 8], b[8];
        char sense[8];
        tsl__milp *m = random_program(seed, n, nr, c, a, sense, b);
        tsl__milp_result r;
        cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK, "%s", tsl_last_error());
        double want = brute_force(n, nr, c, a, sense, b);
        if (isnan(want)) {
            cr_assert_eq(r.status, TSL__MILP_INFEASIBLE, "seed %llu: %s, enumeration finds none",
                         (unsigned long long)seed, tsl__milp_status_name(r.status));
            infeasible++;
        } else {
            cr_assert_eq(r.status, TSL__MILP_OPTIMAL, "seed %llu: %s", (unsigned long long)seed,
                         tsl__milp_status_name(r.status));
            cr_assert_float_eq(r.objective, want, 1e-9, "seed %llu: objective %g, enumeration %g",
                               (unsigned long long)seed, r.objective, want);
            cr_assert_eq(r.gap, 0.0);
            cr_assert_leq(tsl__milp_violation(m, r.x, 0), 1e-9, "seed %llu: the solution violates",
                          (unsigned long long)seed);
            feasible++;
        }
        tsl__milp_result_free(&r);
        tsl__milp_free(m);
    }
    cr_assert_gt(feasible, 50);
    cr_assert_gt(infeasible, 5);
}

Test(milp, relaxation_bounds_and_continuous_columns) {
    /* min -x - y, x + 2y <= 3.5, x, y integer in [0, 3]: (3, 0) at -3;
     * relaxed: (3, 0.25) at -3.25 */
    tsl__milp *m = tsl__milp_new();
    int x = tsl__milp_col(m, TSL__MILP_INTEGER, 0, 3, -1);
    int y = tsl__milp_col(m, TSL__MILP_INTEGER, 0, 3, -1);
    tsl__milp_row(m, 2, (int[]){x, y}, (double[]){1, 2}, 'L', 3.5);
    tsl__milp_result r;
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_OPTIMAL);
    cr_assert_float_eq(r.objective, -3, 1e-9);
    tsl__milp_result_free(&r);
    tsl__milp_opts o = tsl__milp_opts_default();
    o.relax = 1;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_OPTIMAL);
    cr_assert_float_eq(r.objective, -3.25, 1e-9);
    cr_assert_float_eq(r.x[y], 0.25, 1e-9);
    tsl__milp_result_free(&r);
    /* x fixed to 0: y = 1 at -1 (integer) */
    tsl__milp_set_bounds(m, x, 0, 0);
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_float_eq(r.objective, -1, 1e-9);
    cr_assert_eq(r.x[x], 0.0);
    tsl__milp_result_free(&r);
    /* a continuous column with an infinite bound */
    int z = tsl__milp_col(m, TSL__MILP_CONTINUOUS, -INFINITY, INFINITY, 1);
    tsl__milp_row(m, 1, (int[]){z}, (double[]){1}, 'G', -2.5);
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_OPTIMAL);
    cr_assert_float_eq(r.x[z], -2.5, 1e-9);
    cr_assert_float_eq(r.objective, -3.5, 1e-9);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
}

Test(milp, empty_program_and_infeasible_bounds) {
    tsl__milp *m = tsl__milp_new();
    tsl__milp_result r;
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_OPTIMAL);
    cr_assert_eq(r.objective, 0.0);
    tsl__milp_result_free(&r);
    tsl__milp_row(m, 0, NULL, NULL, 'G', 1);
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_INFEASIBLE);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
    m = tsl__milp_new();
    int x = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, 1);
    tsl__milp_set_bounds(m, x, 1, 0);
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "column 0: bounds [1, 0]"), "%s", tsl_last_error());
    tsl__milp_free(m);
}

Test(milp, bad_options_are_named) {
    tsl__milp *m = tsl__milp_new();
    tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, 1);
    tsl__milp_opts o = tsl__milp_opts_default();
    tsl__milp_result r;
    o.time_limit_s = 0;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "time_limit_s = 0"), "%s", tsl_last_error());
    o = tsl__milp_opts_default();
    o.threads = 0;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "threads = 0"), "%s", tsl_last_error());
    tsl__milp_free(m);
}

/* A hard program: a random multi-dimensional knapsack with equality
 * parity rows, stopped by a node limit (deterministic) and by a short time
 * limit: a solution with its gap, or none; never "optimal" wrongly. */
Test(milp, limits_report_status_and_gap) {
    uint64_t s = 7;
    int n = 120, nr = 30;
    tsl__milp *m = tsl__milp_new();
    for (int j = 0; j < n; j++) tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -floor(th_uniform(&s, 10, 100)));
    int cols[120];
    double a[120];
    for (int i = 0; i < nr; i++) {
        for (int j = 0; j < n; j++) {
            cols[j] = j;
            a[j] = floor(th_uniform(&s, 5, 60));
        }
        tsl__milp_row(m, n, cols, a, 'L', 1000);
    }
    tsl__milp_opts o = tsl__milp_opts_default();
    o.max_nodes = 5;
    tsl__milp_result r;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_OK);
    printf("node limit 5: %s, objective %g, bound %g, gap %g, %d nodes, %.3f s\n",
           tsl__milp_status_name(r.status), r.objective, r.bound, r.gap, r.nodes, r.seconds);
    if (r.status == TSL__MILP_FEASIBLE) {
        cr_assert(r.gap >= 0 || isnan(r.gap));
        cr_assert_leq(tsl__milp_violation(m, r.x, 0), 1e-6);
    } else {
        cr_assert(r.status == TSL__MILP_OPTIMAL || r.status == TSL__MILP_NO_SOLUTION);
    }
    tsl__milp_result_free(&r);
    o = tsl__milp_opts_default();
    o.time_limit_s = 0.2;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_OK);
    printf("time limit 0.2 s: %s, objective %g, bound %g, gap %g, %d nodes, %.3f s\n",
           tsl__milp_status_name(r.status), r.objective, r.bound, r.gap, r.nodes, r.seconds);
    cr_assert(r.status != TSL__MILP_INFEASIBLE);
    if (r.x) cr_assert_leq(tsl__milp_violation(m, r.x, 0), 1e-6);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
}

Test(milp, silent_at_log_level_zero) {
    fflush(stdout);
    char path[] = "/tmp/tsl_milp_outXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    int saved = dup(1);
    dup2(fd, 1);
    tsl__milp *m = tsl__milp_new();
    int x = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -1);
    int y = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -2);
    tsl__milp_row(m, 2, (int[]){x, y}, (double[]){1, 1}, 'L', 1);
    tsl__milp_result r;
    tsl_status st = tsl__milp_solve(m, NULL, &r);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    unlink(path);
    cr_assert_eq(st, TSL_OK);
    cr_assert_float_eq(r.objective, -2, 1e-9);
    cr_assert_eq(size, 0, "CBC wrote %lld bytes to stdout at log level 0", (long long)size);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
}

/* Stand-ins for a CBC that dies (CglPreProcess::postProcess segfaulted at
 * its time limit on inception3's Checkmate program, killing `tensile bench
 * paper`) and one that overruns its limit (its preprocessing and root LP
 * are not interrupted), run in the solver's process. */
static void cbc_crashes(void) { raise(SIGSEGV); }
static void cbc_overruns(void) { sleep(30); }

/* x + y <= 1, maximise x + 2y. */
static tsl__milp *tiny(void) {
    tsl__milp *m = tsl__milp_new();
    int x = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -1);
    int y = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -2);
    tsl__milp_row(m, 2, (int[]){x, y}, (double[]){1, 1}, 'L', 1);
    return m;
}

Test(milp, a_crash_of_cbc_is_no_solution_not_the_callers_end) {
    tsl__milp *m = tiny();
    tsl__milp_opts o = tsl__milp_opts_default();
    o.test_hook = cbc_crashes;
    tsl__milp_result r;
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.status, TSL__MILP_NO_SOLUTION);
    cr_assert_eq(r.crashed, 1);
    cr_assert_null(r.x);
    tsl__milp_result_free(&r);
    /* the next solve is whole */
    cr_assert_eq(tsl__milp_solve(m, NULL, &r), TSL_OK);
    cr_assert_eq(r.status, TSL__MILP_OPTIMAL);
    cr_assert_float_eq(r.objective, -2, 1e-9);
    cr_assert_eq(r.crashed, 0);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
}

Test(milp, a_solve_ends_by_its_limit_plus_the_grace) {
    tsl__milp *m = tiny();
    tsl__milp_opts o = tsl__milp_opts_default();
    o.test_hook = cbc_overruns;
    o.time_limit_s = 0.5;
    tsl__milp_result r;
    double t0 = tsl__milp_now();
    cr_assert_eq(tsl__milp_solve(m, &o, &r), TSL_OK, "%s", tsl_last_error());
    double took = tsl__milp_now() - t0;
    cr_assert_eq(r.status, TSL__MILP_NO_SOLUTION);
    cr_assert_eq(r.hit_limit, 1);
    cr_assert_eq(r.crashed, 0);
    cr_assert_leq(took, 0.5 + TSL__MILP_GRACE(0.5) + 1.0, "took %.2f s", took);
    cr_assert_geq(took, 0.5 + TSL__MILP_GRACE(0.5) - 0.05, "took %.2f s", took);
    cr_assert_float_eq(TSL__MILP_LIMIT_WITHIN(0.5 + TSL__MILP_GRACE(0.5)), 0.5, 1e-12);
    tsl__milp_result_free(&r);
    tsl__milp_free(m);
}
