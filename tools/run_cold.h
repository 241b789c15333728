/*
 * run_cold.h - `tensile run --cold-start`'s report (run_cold.c): the two
 * phases of a job whose first plan came from predicted latencies (paper
 * IV-A, Table I: TENSILE_cs under that plan, TENSILE_up once the plan
 * corrected by the measured latencies took over) and its first iteration
 * against vanilla's (Table II).
 */
#ifndef TSL_TOOLS_RUN_COLD_H
#define TSL_TOOLS_RUN_COLD_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "tensile/predict.h"

typedef struct cold_phase {
    int64_t first, n;      /* iterations [first, first + n), 0-based */
    double iter_ms;        /* median, the run's first (cold) iteration left out */
    size_t footprint;      /* the highest peak footprint of its iterations */
    double msr, eor, cbr;  /* against vanilla (cold_finish) */
} cold_phase;

typedef struct cold_report {
    cold_phase cs, up;
    double first_ms, vanilla_first_ms;
    double first_eor;              /* first_ms / vanilla_first_ms */
    double predict_ms;             /* predicting every op's latency */
    double utilisation;            /* the utilisation predicted at */
    double first_eor_with_predict; /* (first_ms + predict_ms) / vanilla_first_ms */
    int updated;                   /* the job's update: 1 made, -1 failed, 0 none */
    int64_t updated_at;
    char predictor[512];
    char update_reason[200];       /* what the job's update did, or why it failed */
} cold_report;

/* The default predictor file when `path` is NULL (tsl_predictor_default_path),
 * loaded: NULL with a message printed ("tensile run: --predictor: ...",
 * and for a missing default file, how to make one) on failure. */
tsl_predictor *cold_load(const char *path, char *used, size_t cap);

/* Phases from the policy's run: ms[i] and fp[i] of iteration i, installs[i]
 * the plans in force after it (tsl_job_plans_installed); the cold-start
 * phase is every iteration under the first plan. Copies what it sorts. */
void cold_phases(const double *ms, const size_t *fp, const int64_t *installs, int64_t n,
                 cold_report *r);
/* The ratios against vanilla's median iteration, footprint and first
 * iteration. */
void cold_finish(cold_report *r, double van_iter_ms, size_t van_fp, double van_first_ms);

void cold_print(const cold_report *r);
/* {"predictor", "predict_ms", "first_iteration_ms", "vanilla_first_iteration_ms",
 *  "first_iteration_eor", "first_iteration_eor_with_prediction",
 *  "update": {...}, "phases": {"cs": {...}, "up": {...}}} merged into o. */
void cold_json(const cold_report *r, json_t *o);
#endif
