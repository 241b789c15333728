/*
 * milp.h - a small mixed-integer linear program and its solution by CBC
 * (COIN-OR branch and cut, through its C interface; Debian's
 * coinor-libcbc-dev): the integer-program policies' only door to the
 * solver (policy_checkmate.c, policy_str.c, policy_mosos.c over ilp_*.c).
 * Not part of the public API.
 *
 * A program is built column by column and row by row (sparse rows), then
 * solved, possibly several times with other column bounds (a dive fixes
 * columns one round after another) or as its linear relaxation. Every
 * solve makes a fresh CBC model from the program (CBC's own models are not
 * meant to be solved twice), silent unless asked (log level 0), single-
 * threaded unless asked: with one thread and no time limit reached, CBC is
 * deterministic, so the plans made from its answers are too. Each solve
 * runs CBC in a child process of its own (fork; milp.c says why): a solve
 * lasts at most its time limit plus TSL__MILP_GRACE of it, whatever CBC
 * does, and a crash of CBC is an answer without a solution (crashed), not
 * the caller's end.
 *
 * Example usage:
 *
 *   tsl__milp *m = tsl__milp_new();
 *   int x = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -1.0);   // maximise x + y:
 *   int y = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, -1.0);   //   minimise -x - y
 *   tsl__milp_row(m, 2, (int[]){x, y}, (double[]){1, 1}, 'L', 1.0);
 *   tsl__milp_opts o = tsl__milp_opts_default();
 *   o.time_limit_s = 2;
 *   tsl__milp_result r;
 *   if (tsl__milp_solve(m, &o, &r) != TSL_OK) die(tsl_last_error());
 *   if (r.status == TSL__MILP_OPTIMAL) ... r.x[x], r.objective ...
 *   tsl__milp_result_free(&r);
 *   tsl__milp_free(m);
 */
#ifndef TSL_SCHED_MILP_H
#define TSL_SCHED_MILP_H

#include <stddef.h>
#include "tensile/status.h"

typedef enum tsl__milp_kind {
    TSL__MILP_CONTINUOUS = 0,
    TSL__MILP_INTEGER,
    TSL__MILP_BINARY, /* an integer column with bounds [0, 1] */
} tsl__milp_kind;

/* What a solve ended with. */
typedef enum tsl__milp_status {
    TSL__MILP_OPTIMAL = 0,  /* proven optimal (within the gaps CBC allows: none by default) */
    TSL__MILP_FEASIBLE,     /* a solution, not proven optimal: stopped at the time or node
                               limit; gap says how far it may be from the optimum */
    TSL__MILP_INFEASIBLE,   /* proven to have no solution */
    TSL__MILP_NO_SOLUTION,  /* stopped at a limit before finding one (or abandoned for
                               numerical difficulties) */
} tsl__milp_status;

/* The status's name ("optimal", "feasible", "infeasible", "no solution"). */
const char *tsl__milp_status_name(tsl__milp_status s);

typedef struct tsl__milp tsl__milp;

/* An empty program (minimisation). NULL if out of host memory. */
tsl__milp *tsl__milp_new(void);
void tsl__milp_free(tsl__milp *m); /* NULL is fine */

/* Adds a column of kind `kind` with bounds [lb, ub] (ub may be INFINITY;
 * a BINARY column's bounds are clamped to [0, 1]) and objective
 * coefficient obj. Returns its index (0, 1, ... in order of addition), or
 * -1 if out of host memory (the program is then marked failed: the next
 * solve returns TSL_ERR_OOM). */
int tsl__milp_col(tsl__milp *m, tsl__milp_kind kind, double lb, double ub, double obj);
/* Adds the row sum_k coef[k] x[cols[k]] (sense) rhs, sense 'L' (<=), 'G'
 * (>=) or 'E' (=); n may be 0 (an empty row is kept, for its index).
 * Columns must exist (TSL_ASSERT); a column named twice in a row has its
 * coefficients summed by CBC. Returns the row's index, or -1 if out of
 * host memory (the program is then marked failed). */
int tsl__milp_row(tsl__milp *m, int n, const int *cols, const double *coef, char sense,
                  double rhs);
/* Changes column c's bounds (for the next solves). */
void tsl__milp_set_bounds(tsl__milp *m, int c, double lb, double ub);
/* Changes column c's objective coefficient (for the next solves). */
void tsl__milp_set_obj(tsl__milp *m, int c, double obj);
/* Its current bounds, kind and objective coefficient. */
double tsl__milp_lb(const tsl__milp *m, int c);
double tsl__milp_ub(const tsl__milp *m, int c);
tsl__milp_kind tsl__milp_kind_of(const tsl__milp *m, int c);
double tsl__milp_obj(const tsl__milp *m, int c);
int tsl__milp_n_cols(const tsl__milp *m);
int tsl__milp_n_rows(const tsl__milp *m);
size_t tsl__milp_n_nonzeros(const tsl__milp *m);
/* Row r's terms and bounds, for a caller that checks a solution itself:
 * *n terms in cols/coef (the program's own arrays), sense and rhs. */
void tsl__milp_row_terms(const tsl__milp *m, int r, int *n, const int **cols,
                         const double **coef, char *sense, double *rhs);

typedef struct tsl__milp_opts {
    double time_limit_s; /* wall clock for this solve, > 0 (INFINITY: none) */
    int max_nodes;       /* branch-and-bound nodes, > 0 (0: no limit) */
    int threads;         /* CBC's threads, >= 1 (1: deterministic) */
    int relax;           /* 1: solve the linear relaxation (every column continuous) */
    int log;             /* CBC's log level (0: silent) */
    const double *start; /* n_cols values of a feasible solution to start from (CBC's MIP
                            start), or NULL; ignored with relax */
    void (*test_hook)(void); /* tests only (NULL): runs in the solver's process before CBC,
                                to stand for a CBC that crashes or overruns */
} tsl__milp_opts;

/* The seconds past its time limit L after which a solve's process is
 * killed: CBC's preprocessing and root LP do not stop at the limit. */
#define TSL__MILP_GRACE_S 1.0
#define TSL__MILP_GRACE_SHARE 0.25
#define TSL__MILP_GRACE(L) (TSL__MILP_GRACE_S + TSL__MILP_GRACE_SHARE * (L))
/* The largest time limit L whose solve ends within `seconds` (L plus its
 * grace); <= 0 when none does. */
#define TSL__MILP_LIMIT_WITHIN(seconds) \
    (((seconds) - TSL__MILP_GRACE_S) / (1.0 + TSL__MILP_GRACE_SHARE))

/* No time or node limit, one thread, the integer program, silent. */
tsl__milp_opts tsl__milp_opts_default(void);

typedef struct tsl__milp_result {
    tsl__milp_status status;
    double objective;    /* of the solution (OPTIMAL, FEASIBLE); else NAN */
    double bound;        /* the best bound CBC proved on the optimum (<= objective); NAN
                            if none */
    double gap;          /* (objective - bound) / max(|objective|, 1e-9); 0 when optimal,
                            NAN without a solution */
    double *x;           /* n_cols values (OPTIMAL, FEASIBLE; integer columns rounded to
                            the nearest integer); else NULL */
    int n_cols;
    int nodes;           /* branch-and-bound nodes explored */
    double seconds;      /* wall clock of the solve */
    int hit_limit;       /* 1 if it stopped at the time or node limit (or was killed at
                            the limit plus its grace: then NO_SOLUTION) */
    int crashed;         /* 1 if CBC's process died (NO_SOLUTION); past the time limit,
                            hit_limit too (CBC stopped by it dies in its postprocessing) */
} tsl__milp_result;

/* Solves m with o (NULL: the defaults) into *r (free with
 * tsl__milp_result_free). Returns TSL_OK whatever the status (the status
 * says what was found); TSL_ERR_INVALID for bad options (named with their
 * values) or a column whose lb > ub (named), TSL_ERR_OOM (also if the
 * program failed to grow earlier), TSL_ERR_IO if the solver's process or
 * its pipe cannot be made. A solve lasts at most time_limit_s plus
 * TSL__MILP_GRACE(time_limit_s) (then NO_SOLUTION, hit_limit); a crash of
 * CBC is NO_SOLUTION with crashed. On error r is zeroed. */
tsl_status tsl__milp_solve(const tsl__milp *m, const tsl__milp_opts *o, tsl__milp_result *r);
void tsl__milp_result_free(tsl__milp_result *r);

/* The monotonic wall clock, seconds (for deadlines over several solves). */
double tsl__milp_now(void);

/* The largest violation of m's rows and bounds (integrality too, unless
 * relax) by x (n_cols values): 0 for a feasible point. For checks and
 * tests. */
double tsl__milp_violation(const tsl__milp *m, const double *x, int relax);
#endif
