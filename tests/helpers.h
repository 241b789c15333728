/*
 * helpers.h - shared test utilities: deterministic random data, normalised
 * error, and running one op or a whole graph with the reference kernels.
 */
#ifndef TSL_TESTS_HELPERS_H
#define TSL_TESTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include "tensile/ops.h"
#include "tensile/session.h"

/* tsl_plan_jobs gave plans: met the budget (TSL_OK), or is its best short
 * of it (TSL_ERR_BUDGET: the plans are filled; report.budget_met says).
 * A function, so that TH_PLANNED(tsl_plan_jobs(...)) plans once (a macro
 * naming its argument twice planned again, leaking the first plans, when
 * the budget was not met). */
static inline int th_planned(tsl_status st) { return st == TSL_OK || st == TSL_ERR_BUDGET; }
#define TH_PLANNED(st) th_planned(st)

/* The names in folder dir but "." and "..", each followed by a space, in
 * buf (n bytes), for "nothing else left" checks; fails the calling test if
 * dir cannot be read. */
void th_dir_names(const char *dir, char *buf, size_t n);

/* The next value of the splitmix64 sequence of *state. */
uint64_t th_splitmix64(uint64_t *state);
/* Fills n bytes with a reproducible random stream from seed (little-endian
 * splitmix64 values, the last one cut short). */
void th_fill_bytes(void *p, size_t n, uint64_t seed);
/* splitmix64-based uniform in [lo, hi), reproducible from *state. */
double th_uniform(uint64_t *state, double lo, double hi);
void th_fill_f32(float *x, size_t n, uint64_t seed, float lo, float hi);
void th_fill_f64(double *x, size_t n, uint64_t seed, double lo, double hi);

/* max|a-b| / max(max|b|, tiny): the normalised error of a against oracle b. */
double th_norm_err_f32(const float *a, const float *b, size_t n);
double th_norm_err_f64(const double *a, const double *b, size_t n);

/* A tiny graph runner with the reference kernels, float or double: one
 * buffer per tensor (int32 for labels), every op run in order. */
typedef struct th_rt {
    const tsl_graph *g;
    tsl_dtype dt;     /* TSL_F32 or TSL_F64 */
    void **buf;
} th_rt;
size_t th_rt_bytes(const th_rt *r, tsl_tid t);
th_rt *th_rt_new(const tsl_graph *g, tsl_dtype dt);
void th_rt_free(th_rt *r);
/* Fills every float INPUT and PARAM with uniform[-1,1] from seed. */
void th_rt_fill(th_rt *r, uint64_t seed);
/* Runs ops [first, end) with the reference kernels at `nthreads`. */
tsl_status th_rt_run(th_rt *r, int32_t first, int32_t end, int training, int nthreads);
/* Copies tensor t into doubles. */
void th_rt_to_f64(const th_rt *r, tsl_tid t, double *dst);
/* Copies the leaves (inputs, labels, params) of float runner a into double runner b. */
void th_rt_copy_leaves_f32_to_f64(const th_rt *a, th_rt *b);
/* Elements of tensor t of g. */
int64_t th_numel(const tsl_graph *g, tsl_tid t);
/* Fills float tensor t with uniform[lo,hi) values rounded to float (the
 * same numbers in both precisions: the f32 values, widened for f64). */
void th_rt_fill_tensor(th_rt *r, tsl_tid t, uint64_t seed, double lo, double hi);
/* Element i of float tensor t, as a double. */
double th_rt_get(const th_rt *r, tsl_tid t, int64_t i);
/* max|a-b| / max(max|b|, 1e-30) over tensor t of two runners of one graph
 * (any precisions). */
double th_rt_err(const th_rt *a, const th_rt *b, tsl_tid t);
/* Runs ops [first, end) with the reference kernels as th_rt_run does, but
 * with training step `step`, each op's workspace (tsl_op_workspace bytes),
 * and the thread count only passed to the kernels (the OpenMP setting is
 * left alone: call tsl_cpu_set_threads around it where that matters). A
 * kernel error fails the calling test with "op 'NAME': message". */
void th_rt_exec(th_rt *r, int32_t first, int32_t end, int64_t step, int training, int nthreads);

/* Float vs double reference and determinism of the finalized graph g: three
 * f32 runs of every op with leaves from th_rt_fill(seed) (two with 1
 * thread, one with 2 threads, OpenMP set to each and reset to 1 after) and
 * one f64 run (th_f64_run) of the same leaves, widened. For every tensor
 * that is not an INPUT or PARAM, asserts the f32 result within `tol`
 * (th_norm_err_f64) of the f64 one and bit-identical in the three f32 runs;
 * messages start with `label`. */
void th_check_f32_f64_threads(const tsl_graph *g, uint64_t seed, double tol, const char *label);

/* Checks a builder call that must fail on g: res is TSL_NONE (else fails
 * with "`what` should fail"), g's status TSL_ERR_INVALID, and the last error
 * holds each of needles[0..n) (a NULL entry ends the list early, so
 * NULL-terminated lists may pass n = SIZE_MAX). */
void th_expect_build_fail(tsl_graph *g, tsl_tid res, const char *what, const char *const *needles,
                          size_t n);

/* The fixtures' optimizer flags (rtf_make, pc_zoo_workload: their `adam`
 * argument): Adam (else SGD with momentum), and the updates after the
 * backward pass (else the default, TSL_STEP_IN_BACKWARD). 0 and 1 are SGD
 * and Adam with the default. */
#define TH_ADAM 1
#define TH_UPDATES_AFTER 2

/* The optimizer of `flags` (TH_ADAM, TH_UPDATES_AFTER): Adam at 1e-3 or
 * SGD at 0.01, the updates placed as the flags say. */
tsl_optimizer_cfg th_optimizer(int flags);

/* Appends the backward of `loss` and the optimizer o to g and finalizes g;
 * a failure of any of the three fails the calling test with the library's
 * message. */
void th_train_graph(tsl_graph *g, tsl_tid loss, const tsl_optimizer_cfg *o);

/* 1 if TSL_TEST_QUICK is set (sanitizer builds run smaller cases). */
int th_quick(void);

/* tsl_session_opts_default(), and with TSL_TEST_KERNEL_DELAY_US=D in the
 * environment the late-kernel device: kernels on the CPU backend's own
 * compute thread, each starting up to D µs later than it could, so that
 * launch_op returns long before its kernel has run (the runtime tests are
 * run once more that way: ctest's *_late_kernels). In helpers_run.c. */
tsl_session_opts th_session_opts(void);
#endif
