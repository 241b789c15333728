/*
 * frontier.h - `tensile frontier`'s measurements: one job (a zoo model at
 * a batch on a device profile) planned by each policy for each budget, a
 * fraction of vanilla's footprint (bench_measure.h: plan, verify,
 * simulate), and its rows as JSON, CSV and a Markdown table of EOR per
 * policy and budget. The command's options and files are cmd_frontier.c's.
 *
 * Beside each cell: the op floor (tsl_workload_op_floor: no plan holds
 * less, so budgets below it are marked and not planned), and the optimum
 * where an integer-program policy proved one for that budget (mosos, which
 * unifies swapping and recomputation; else checkmate, recomputation only):
 * its simulated EOR, and each row's gap to it (EOR / optimum - 1).
 *
 * Example usage:
 *
 *   fr_run f = {.spec = s, .profile = "a6000", .policy = pols, .np = 2,
 *               .fraction = fr, .nf = 3, .t0 = progress_now_s()};
 *   if (fr_measure(&f, &J) != 0) exit(1);       // message printed
 *   json_t *doc = fr_json(&f);                    // {"model":..., "rows":[...]}
 *   bt_table *csv = fr_rows_table(doc), *md = fr_md_table(&f);
 *   ...
 *   fr_free(&f);
 */
#ifndef TSL_TOOLS_FRONTIER_H
#define TSL_TOOLS_FRONTIER_H
#include <jansson.h>

#include "bench_measure.h"
#include "bench_table.h"

/* One cell: one policy at one budget. */
typedef struct fr_cell {
    size_t budget;        /* bytes: fraction x vanilla's footprint */
    int below_floor;      /* 1: the budget is below the op floor; not planned */
    bm_result r;          /* the measurement (zeroed when below the floor) */
    int has_optimum;      /* 1: an integer program proved an optimum at this budget */
    const char *optimum_policy; /* "mosos" or "checkmate" (when has_optimum) */
    double optimum_eor;   /* its simulated EOR */
} fr_cell;

typedef struct fr_run {
    /* in: */
    bm_spec spec;                 /* the job (image 0: the model's default) */
    const char *profile;          /* the profile's name, for the rows */
    const char *const *policy;    /* np registered policy names */
    int np;
    const double *fraction;       /* nf fractions of vanilla's footprint, in (0, 1.5] */
    int nf;
    double t0;                    /* the command's start (progress_now_s), for progress */
    /* out (fr_measure): */
    int image;                    /* the image side used */
    size_t vanilla_fp;            /* vanilla's footprint (bytes) */
    double vanilla_iter_us;       /* vanilla's simulated iteration */
    size_t floor;                 /* the op floor (bytes) */
    char floor_op[TSL_NAME_MAX];  /* the op that needs it */
    fr_cell *cell;                /* np x nf, cell[p * nf + k] */
} fr_run;

/* Measures every cell of f on J (one job built from f->spec), policy by
 * policy, budget by budget, with a progress line per cell on stderr, then
 * sets the optimum of each budget. Returns 0, or -1 with a message on
 * stderr (vanilla could not be simulated, out of host memory). */
int fr_measure(fr_run *f, bm_jobs *J);

/* The Markdown column of budget fraction x, into buf: two decimals
 * ("0.60"), more where two would round it ("0.001", "0.425"). Returns
 * buf. */
const char *fr_label(double x, char *buf, size_t n);

/* The document of --json: {"model", "batch", "image", "profile",
 * "vanilla_footprint_bytes", "vanilla_iter_ms", "op_floor_bytes",
 * "op_floor_op", "rows": [one object per cell, policy by policy, with the
 * CSV's columns as keys: numbers as numbers, empty cells null]}. NULL if
 * out of host memory. */
json_t *fr_json(const fr_run *f);

/* The rows of fr_json (doc) as a table named "frontier" with the CSV's
 * columns in the order --help lists them: integers as they are, other
 * numbers to 10 significant digits, null as an empty cell. */
bt_table *fr_rows_table(const json_t *doc);

/* The Markdown table named "frontier": one row per policy, one column per
 * budget fraction ("0.60"), each cell bm_cell's (EOR, "unmet (MSR x)",
 * "n/a", "failed") or "below floor"; a row of the proven optima and one of
 * TENSILE's gap to them when there are any; the op floor in the title. */
bt_table *fr_md_table(const fr_run *f);

void fr_free(fr_run *f); /* the cells; a zeroed f is fine */
#endif
