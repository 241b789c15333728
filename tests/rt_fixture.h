/*
 * rt_fixture.h - the fixture shared by the runtime's end-to-end tests
 * (test_runtime_faults.c, test_runtime_invariants.c): a model of the zoo
 * with its backward and optimizer, its workload on a CPU-like test profile,
 * fixed batches, and the vanilla executor's reference run; sessions with
 * the runtime attached and a plan installed; TENSILE's plans, verified.
 *
 * Example usage:
 *
 *   rtf_case c;
 *   tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
 *   rtf_make(&c, "cnn", &cfg, 0);
 *   ... fill c.x[k] (c.nx floats) and c.y[k] (c.ny labels) ...
 *   rtf_reference(&c);                      // c.ref, c.ref_peak, c.ref_fp
 *   tsl_plan *p = rtf_tensile_plan(&c, budget);
 *   tsl_session *s = rtf_open_runtime(&c, capacity, p, 1, 0, "tensile");
 *   ... tsl_session_step ...
 *   tsl_session_free(s), tsl_plan_free(p), rtf_free(&c);
 *
 * Every failure fails the calling Criterion test with the library's message.
 */
#ifndef TSL_TESTS_RT_FIXTURE_H
#define TSL_TESTS_RT_FIXTURE_H
#include <stddef.h>
#include <stdint.h>
#include "tensile/models.h"
#include "tensile/plan.h"
#include "tensile/runtime.h"
#include "tensile/session.h"

#define RTF_ITERS 3 /* iterations of the reference run, one batch each */

/* "cpu-test": 5e10 flop/s, 1e10 B/s memory, 64 GiB, 4e9 B/s copies each
 * way (duplex), 5 us launch and copy latency. Copies take about as long as
 * the ops around them, so random plans find room for their copies and the
 * channels get busy. */
tsl_device_profile rtf_cpu_profile(void);

typedef struct rtf_case {
    const char *model;
    tsl_graph *g;
    tsl_workload *w;          /* cost-model latencies on dev */
    tsl_device_profile dev;   /* rtf_cpu_profile() */
    float *x[RTF_ITERS];      /* the batches: nx floats each */
    int32_t *y[RTF_ITERS];    /* ny labels each */
    size_t nx, ny;            /* elements of the "input" and "label" tensors */
    size_t persistent;        /* PARAM + BUFFER + OPT_STATE bytes */
    uint64_t ref;             /* vanilla checksum after RTF_ITERS iterations */
    size_t ref_peak;          /* vanilla peak load (measured, the ledger) */
    size_t ref_fp;            /* vanilla peak footprint (measured) */
    /* The random initial values (tsl_init_value, th_session_opts' seed) of
     * each persistent tensor drawn from a distribution, NULL for the rest:
     * made once by rtf_make, copied into every session of a plan
     * (tsl_session_opts.init), so that a case pays the Box-Muller once */
    float **init;
} rtf_case;

/* Builds `model` (a name of the zoo, kept by pointer) with cfg into c: its
 * backward, the optimizer th_optimizer(adam) (helpers.h: Adam at 1e-3 or SGD
 * at 0.01, the updates placed as the flags say), the
 * finalized graph, the workload on rtf_cpu_profile() with every op's
 * workspace set to what the fast kernels at 2 threads really take
 * (pg_match_backend_workspace), the persistent bytes, and the batches
 * allocated but not filled, and the initial values (init). The reference
 * figures stay 0 until rtf_reference. */
void rtf_make(rtf_case *c, const char *model, const tsl_model_cfg *cfg, int adam);

/* The vanilla executor's reference on the filled batches: a session of
 * twice the dry run's peak footprint plus 16 MiB (the fast kernels'
 * scratch), 2 threads, its parameters initialised by the session itself
 * (not from init, so every plan's run equal to the reference also checks
 * init), RTF_ITERS steps; sets ref, ref_peak and ref_fp. */
void rtf_reference(rtf_case *c);

/* tsl_session_opts.init for rtf_case c as ctx: c->init's values where
 * made, tsl_init_value with th_session_opts' seed elsewhere. */
tsl_status rtf_init_from_case(void *c, const tsl_graph *g, tsl_tid t, float *dst);

/* Frees what rtf_make allocated. */
void rtf_free(rtf_case *c);

/* A session of `capacity` bytes at 2 threads, initialised from c->init
 * (rtf_init_from_case), with the runtime attached
 * (virtual clock if vclock, copy channels throttled to gbps GB/s, 0: not
 * throttled; profile c->dev; no replanning: the plan under test stays in
 * force) and plan p installed before its first iteration. `what` names the
 * run in failure messages. */
tsl_session *rtf_open_runtime(const rtf_case *c, size_t capacity, const tsl_plan *p, int vclock,
                              double gbps, const char *what);

/* The same with the runtime's options o (its profile set to c->dev). */
tsl_session *rtf_open_runtime_with(const rtf_case *c, size_t capacity, const tsl_plan *p,
                                   const tsl_runtime_opts *o, double gbps, const char *what);
/* TENSILE's plan for c's workload within `budget` bytes (0: the profile's
 * memory), finished and checked by pg_finish_and_verify. */
tsl_plan *rtf_tensile_plan(const rtf_case *c, size_t budget);
/* The same with the policy called `policy` and its options opts (NULL:
 * its defaults); a budget it cannot meet still gives its plan. */
tsl_plan *rtf_policy_plan(const rtf_case *c, const char *policy, const void *opts, size_t budget);

/* Zoo model `model` at batch 2, images 32x32 (75x75 for the Inceptions),
 * 10 classes (rtf_make, Adam if adam), fixed batches filled, the vanilla
 * reference run (rtf_reference); and a check that the workload describes
 * the vanilla run exactly: the empty plan's peak is the ledger's (fast
 * kernels' scratch included). */
void rtf_zoo_case(rtf_case *c, const char *model, int adam);
/* The same at batch `batch` and images image x image. */
void rtf_zoo_case_at(rtf_case *c, const char *model, int adam, int batch, int image);

/* What RTF_ITERS iterations under a plan measured. */
typedef struct rtf_run {
    uint64_t checksum;
    size_t peak[RTF_ITERS];    /* measured peak load per iteration */
    size_t fp[RTF_ITERS];      /* measured peak footprint per iteration */
    double ms[RTF_ITERS];      /* iteration time (virtual clock: the iteration's virtual time) */
    int64_t stalls[RTF_ITERS]; /* stalls counted up to the end of each iteration */
    tsl_runtime_stats rs;
} rtf_run;

/* RTF_ITERS iterations of a fresh session on c's batches (capacity: twice
 * vanilla's footprint plus 16 MiB, so that no allocation fails) with the
 * runtime attached and plan p installed before the first (rtf_open_runtime:
 * vclock, gbps, what), into *o. */
void rtf_run_plan(const rtf_case *c, const tsl_plan *p, int vclock, double gbps, const char *what,
                  rtf_run *o);
#endif
