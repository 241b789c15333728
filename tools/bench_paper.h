/*
 * bench_paper.h - `tensile bench paper`: the seed papers' tables and
 * figures reproduced with Tensile's policies beside the papers' own
 * numbers (paper_numbers.h). The command (cmd_bench.c) makes a bp_ctx and
 * runs the table groups below; each writes its tables (bench_table.h) as
 * CSV and Markdown into the output folder and into the index.
 *
 * Table groups, one file each:
 *   bench_tensile.c    TENSILE's Table III, Fig. 6, Table IV, Fig. 7;
 *   bench_cold.c       TENSILE's Tables I and II (cold start);
 *   bench_smartpool.c  SmartPool's Table I and AutoSwap's Table II;
 *   bench_mosos.c      MO-SOS's Fig. 4;
 *   bench_curves.c     the overhead-against-budget curve of every policy
 *                      per model.
 * Policies are taken by name from the registry: one not registered gives
 * rows marked "not available in this build", never a number.
 */
#ifndef TSL_TOOLS_BENCH_PAPER_H
#define TSL_TOOLS_BENCH_PAPER_H
#include <jansson.h>
#include <stdio.h>

#include "bench_measure.h"
#include "bench_table.h"
#include "paper_numbers.h"

typedef struct bp_ctx {
    int quick;                      /* --quick: the reduced set */
    int cpu;                        /* --backend cpu: Table III and Fig. 7 run for real */
    const char *predictor;          /* --predictor (Tables I and II); NULL: the default file */
    const char *out;                /* the output folder (exists) */
    const tsl_device_profile *dev;  /* --profile: TENSILE's tables and the curves */
    FILE *index;                    /* the index Markdown (every table appended) */
    FILE *memcsv;                   /* memory_curves.csv, open for appending rows */
    int errors;                     /* tables or files that could not be written */
    double t0;                      /* the command's start (progress_now_s) */
} bp_ctx;

/* "[  12.3 s] what" on stderr: the progress of long work. */
void bp_progress(const bp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes t (bt_write) into c's folder and index, counts a failure, frees t. */
void bp_finish(bp_ctx *c, bt_table *t);
/* Loads profile `name` into *dev; 0, or -1 with a message. */
int bp_profile(const char *name, tsl_device_profile *dev);

/* The columns "MSR", "EOR", "CBR" and "status" of row r from m: numbers
 * (4 decimals) when m has them, "-" otherwise. */
void bp_set_metrics(bt_table *t, int r, const bm_result *m);
/* The columns "paper MSR", "paper EOR", "paper CBR" from p, or `none`
 * in each when p is NULL. */
void bp_set_paper(bt_table *t, int r, const pn_metrics *p, const char *none);
/* Whether TENSILE (a) beats baseline b on MSR (higher), EOR (lower) and
 * CBR (higher), in words: "MSR yes, EOR tie, CBR yes" (ties within
 * 0.0005); "-" when either has no numbers. Into buf. */
const char *bp_verdict(const bm_result *a, const bm_result *b, char *buf, size_t n);
/* bytes in MiB, "%.1f". */
double bp_mib(size_t bytes);

/* --backend cpu: the copy channels' rate (GB/s) and the iterations of a
 * real run, and its images' side. */
#define BP_REAL_GBPS 2.0
#define BP_REAL_ITERS 8
#define BP_REAL_IMAGE 32
/* Where the updates run in every job of tensile bench paper: after the
 * backward pass, the optimizer phase of the seed papers' settings (the
 * product's default, TSL_STEP_IN_BACKWARD, is tensile frontier's and the
 * other commands'); the real runs pass it as "--optimizer-step end". */
#define BP_STEP TSL_STEP_AFTER_BACKWARD
/* One real measurement of model s (batch, image) under `policy` with
 * `device_memory` bytes (0: room for vanilla) through `tensile run`
 * (bench_real.c); fills *r as bm_measure does, from the allocator's
 * ledger and wall-clock times, and returns its state. */
bm_state bp_real_measure(const bm_spec *s, const char *policy, size_t device_memory,
                         bm_result *r);

/* Runs this program (/proc/self/exe) with argv, stderr dropped, and parses
 * the last line of its stdout as JSON (`tensile run --json`'s report):
 * the object (the caller's), or NULL when there is none; *rc its exit
 * status (-1: could not run). */
json_t *bp_run_json(char *const *argv, int *rc);

/* A sweep's table: "model", "method", "policy", one column per budget
 * ratio ("0.80"), "status". */
bt_table *bp_sweep_table(const char *name, const char *title, const double *ratio, int nr);
/* Appends to t one row per policy (label[p], policy[p]) of J's plans at
 * footprint budgets ratio[k] x the vanilla footprint: the simulated EOR,
 * or with time_ms the simulated iteration time in ms (bench_curves.c).
 * With `real` (--backend cpu; J unused, may be NULL): real runs of that
 * shape instead (bp_real_measure: vanilla side by side, wall-clock EOR and
 * time, budgets of the measured vanilla footprint). */
void bp_sweep(bp_ctx *c, bt_table *t, const char *model, bm_jobs *J, const bm_spec *real,
              const char *const *policy, const char *const *label, int np, const double *ratio,
              int nr, int time_ms);

void bp_tensile_tables(bp_ctx *c);
void bp_cold_tables(bp_ctx *c);
void bp_smartpool_tables(bp_ctx *c);
void bp_mosos_figure(bp_ctx *c);
void bp_budget_curves(bp_ctx *c);
#endif
