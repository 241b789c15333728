/*
 * sim_fixture.h - what the simulator's tests share (tests/test_simulator.c,
 * tests/test_sim_phases.c): a profile where times are exact, hand-made plans,
 * runs of the engine with its timeline and look-ups into it. Linked into
 * those tests only (CMakeLists.txt). Every function asserts with Criterion.
 *
 * The swap pair (tensor bytes: in 100, A 4000, B 1000, C 2000, D 500,
 * E 10):
 *
 *   op  name  reads     writes  [start, end]
 *   0   f0    in        A       [0, 1]
 *   1   f1    A         B       [1, 6]
 *   2   f2    B         C       [6, 8]
 *   3   f3    C         D       [8, 18]
 *   4   f4    A D       E       [18, 19]
 *
 * and its plan: swap_out A after f0, release A after f1, swap_in A at f2 +
 * in_delay before f4 (tests/test_simulator.c works out its timeline).
 */
#ifndef TSL_TESTS_SIM_FIXTURE_H
#define TSL_TESTS_SIM_FIXTURE_H
#include <stdint.h>
#include "random_workload.h"
#include "sim/sim_internal.h"
#include "tensile/plan.h"
#include "tensile/sim.h"

/* (list, count) of int32 ids */
#define IDS(...) (const int32_t[]){__VA_ARGS__}, (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define ACT TSL_KIND_ACTIVATION
#define GRAD TSL_KIND_GRADIENT
#define NO_PRECEDE (-1)

/* A profile with 1e9 B/s each way and no copy latency (a copy of k*1000
 * bytes takes exactly k us), duplex or not. */
tsl_device_profile sim_dev(int duplex);
/* Adds an event to p (asserts success). */
void add_ev(tsl_plan *p, tsl_event_type type, int32_t tensor, int32_t trigger, double delay,
            int32_t precede);
/* Asserts |got - want| <= 1e-9, naming `what`. */
void expect_us(double got, double want, const char *what);

enum { SP_IN = 0, SP_A, SP_B, SP_C, SP_D, SP_E };
enum { F0 = 0, F1, F2, F3, F4 };
/* The swap pair named `job` (free with rw_free). */
tsl_workload *swap_pair(const char *job);
/* Its plan with the swap-in issued `in_delay` us after f2, predicting
 * predicted_peak and a period of 19 us. */
tsl_plan *swap_pair_plan(const char *job, double in_delay, size_t predicted_peak);

/* Runs the engine with a timeline (asserts success): o as tsl_simulate's
 * options (NULL: the defaults); run_log with just iterations and actual
 * latencies. Free with run_free. */
tsl_sim_result run_opts(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                        const tsl_sim_opts *o, tsl__sim_log *log);
tsl_sim_result run_log(tsl_workload **w, tsl_plan **p, int n, const tsl_device_profile *dev,
                       int iterations, const tsl_latency_table *actual, tsl__sim_log *log);
/* Frees a run's result and timeline. */
void run_free(tsl_sim_result *r, tsl__sim_log *log);
/* Asserts that two results are the same, field by field. */
void same_results(const tsl_sim_result *a, const tsl_sim_result *b, const char *what);

/* The k-th span of `kind` of job `job` in iteration `iter` (asserts it exists). */
const tsl__sim_span *span(const tsl__sim_log *log, int job, int iter, tsl__span_kind kind, int k);
/* The span of op `op` of job `job` in iteration `iter` (asserts it exists). */
const tsl__sim_span *op_span(const tsl__sim_log *log, int job, int iter, int32_t op);
/* The record of iteration `iter` of job `job` (asserts it exists). */
const tsl__sim_iter *iter_rec(const tsl__sim_log *log, int job, int iter);
/* The number of spans of `kind` of job `job`. */
int count_spans(const tsl__sim_log *log, int job, tsl__span_kind kind);
#endif
