/*
 * test_executor.c - the plan-following Executor and the Swap Executor
 * (tensile/runtime.h, src/runtime/executor.c, swap_executor.c).
 *
 * Graphs: the small MLP + batch-norm graph of test_session.c, `cnn`, and
 * `resnet18` at 32x32 (smaller under TSL_TEST_QUICK). Workloads come from
 * tsl_workload_from_graph with a CPU-like profile, plans from tsl_plan_jobs
 * at a budget below the vanilla peak. What is proved:
 *  - parameters after 3 steps are bitwise identical to the vanilla
 *    executor's under the planner's plan, in both clocks (invariant 5);
 *  - virtual clock: the allocator's peak load equals the plan's
 *    predicted_peak exactly and nothing stalls, also with a plan that
 *    recomputes;
 *  - a wrong plan (a swap-in dropped) is repaired by passive swap-ins, an
 *    arena smaller than the plan needs by evictions: same results; the
 *    eviction policy hook is offered only movable tensors and decides;
 *  - strict mode in real time with slow (throttled) channels: the ledger's
 *    peak never passes min(predicted peak, capacity), and compute stalls;
 *  - set_plan refuses an invalid plan naming the violation; attach refuses
 *    a workload of another graph;
 *  - an allocation failure injected at each allocation of a step is
 *    survived with identical results;
 *  - parameters swapped out across iterations are readable between steps
 *    (their host copy), and evaluation brings them back;
 *  - the trace of a real run has compute, both channels and memory;
 *  - random valid plans (swaps and recomputations the verifier accepts, a
 *    few re-running multi-output ops such as batch norm): identical
 *    parameters in both clocks, and in the virtual clock the exact peak
 *    with no stall, passive swap-in or eviction;
 *  - an arena barely above the largest op's needs fragments; the executor
 *    moves everything out and retries instead of failing.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphs.h"
#include "helpers.h"
#include "runtime/runtime_internal.h"
#include "tensile/models.h"
#include "tensile/runtime.h"
#include "tensile/policy.h"
#include "tensile/policy_tensile.h"
#include "tensile/verify.h"

#define STEPS 3
/* cnn's image side: 28 (Fashion-MNIST), 12 under TSL_TEST_QUICK (sanitizers) */
#define CNN_IMAGE (th_quick() ? 12 : 0)

/* ---- graphs and fixtures ------------------------------------------------------------ */

typedef struct fixture {
    tsl_graph *g;
    tsl_device_profile dev;
    tsl_workload *w;
    tsl_plan *plan;            /* the planner's, at the fixture's budget */
    size_t vanilla_peak, persistent;
    float *x[STEPS];
    int32_t *y[STEPS];
} fixture;

static void fx_init(fixture *f, const char *model, int batch, int image, double budget_frac) {
    memset(f, 0, sizeof *f);
    f->g = th_model_graph(model, batch, image);
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(f->g, (size_t)8 << 30, &r), TSL_OK, "%s", tsl_last_error());
    f->vanilla_peak = r.peak_load;
    f->persistent = r.persistent_bytes;
    f->dev = th_cpu_profile((size_t)((double)r.peak_load * budget_frac));
    cr_assert_eq(tsl_workload_from_graph(f->g, model, NULL, &f->dev, &f->w), TSL_OK, "%s",
                 tsl_last_error());
    /* the paper's plans: no planned wait (planning on to the budget may
     * plan some; its plans run in test_policy_tensile_budget and
     * test_runtime_invariants) */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = 0;
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = f->dev.mem_bytes;
    po.opts = &to;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&f->w, 1, &f->dev, &po, &f->plan, &rep)), "%s",
                 tsl_last_error());
    tsl_plan_report_free(&rep);
    tsl_tid in = tsl_graph_find(f->g, "input"), lb = tsl_graph_find(f->g, "label");
    const tsl_tensor *pt = tsl_graph_tensor(f->g, tsl_graph_op(f->g, tsl_graph_producer(
                                                   f->g, tsl_graph_loss(f->g)))->out[1]);
    int64_t nx = tsl_shape_numel(&tsl_graph_tensor(f->g, in)->shape);
    int64_t ny = tsl_shape_numel(&tsl_graph_tensor(f->g, lb)->shape), k = pt->shape.d[1];
    for (int s = 0; s < STEPS; s++) {
        f->x[s] = malloc(sizeof(float) * (size_t)nx);
        f->y[s] = malloc(sizeof(int32_t) * (size_t)ny);
        th_fill_f32(f->x[s], (size_t)nx, 100 + (uint64_t)s, -1, 1);
        for (int64_t i = 0; i < ny; i++) f->y[s][i] = (int32_t)((i * 7 + s) % k);
    }
}

/* Replans f with TENSILE swapping tensors of any size (the paper's rule):
 * at the quick shapes every parameter is below the default minimum swap
 * size (tensile/policy_tensile.h), and a test of parameters swapped across
 * iterations needs some swapped. */
static void fx_replan_any_size(fixture *f) {
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.min_swap_bytes = 0;
    to.fit = 0; /* the paper's plans, as fx_init's */
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = f->dev.mem_bytes;
    po.opts = &to;
    tsl_plan_free(f->plan);
    f->plan = NULL;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&f->w, 1, &f->dev, &po, &f->plan, &rep)), "%s",
              tsl_last_error());
    tsl_plan_report_free(&rep);
}

static void fx_free(fixture *f) {
    for (int s = 0; s < STEPS; s++) {
        free(f->x[s]);
        free(f->y[s]);
    }
    tsl_plan_free(f->plan);
    tsl_workload_free(f->w);
    tsl_graph_free(f->g);
}

static int count_type(const tsl_plan *p, tsl_event_type ty) {
    int n = 0;
    for (int32_t e = 0; e < p->n_events; e++) n += p->events[e].type == ty;
    return n;
}

static tsl_session *open_session(const fixture *f, size_t cap, tsl_kernel_mode k, double gbps) {
    tsl_session_opts o = th_session_opts();
    o.device_memory = cap;
    o.kernels = k;
    o.pcie_gbps = gbps;
    tsl_session *s = NULL;
    cr_assert_eq(tsl_session_new(f->g, &o, &s), TSL_OK, "%s", tsl_last_error());
    return s;
}

static uint64_t vanilla_checksum(const fixture *f, tsl_kernel_mode k) {
    tsl_session *s = open_session(f, (size_t)1 << 30, k, 0.0);
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_session_step(s, f->x[i], f->y[i], NULL), TSL_OK, "%s", tsl_last_error());
    uint64_t h = tsl_session_param_checksum(s);
    tsl_session_free(s);
    return h;
}

/* Makes f's workload count kernel mode k's workspaces (a probe session's,
 * tsl_workload_match_session) and plans it again: with the fast kernels
 * the reference workspaces the fixture was planned with are wrong, and
 * attaching would be refused. */
static void fx_use_kernels(fixture *f, tsl_kernel_mode k) {
    tsl_session *probe = open_session(f, (size_t)1 << 30, k, 0.0);
    cr_assert_eq(tsl_workload_match_session(f->w, probe), TSL_OK, "%s", tsl_last_error());
    tsl_session_free(probe);
    tsl_plan_free(f->plan);
    /* the paper's plans: no planned wait (planning on to the budget may
     * plan some; its plans run in test_policy_tensile_budget and
     * test_runtime_invariants) */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = 0;
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = f->dev.mem_bytes;
    po.opts = &to;
    tsl_plan_report rep;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&f->w, 1, &f->dev, &po, &f->plan, &rep)), "%s",
                 tsl_last_error());
    tsl_plan_report_free(&rep);
}

static tsl_runtime_opts rt_opts(const fixture *f, int virtual_clock) {
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.profile = f->dev;
    ro.virtual_clock = virtual_clock; /* nobody replans: the plan under test stays */
    return ro;
}

/* A session of capacity `cap` with a runtime (ro) following `plan`. */
static tsl_session *open_rt(const fixture *f, size_t cap, tsl_kernel_mode k, double gbps,
                            const tsl_runtime_opts *ro, const tsl_plan *plan, int verified) {
    tsl_session *s = open_session(f, cap, k, gbps);
    cr_assert_eq(tsl_session_attach_runtime(s, ro, f->w), TSL_OK, "%s", tsl_last_error());
    tsl_status st = verified ? tsl_session_set_plan(s, plan) : tsl__session_set_plan_unverified(s, plan);
    cr_assert_eq(st, TSL_OK, "%s", tsl_last_error());
    return s;
}

typedef struct result {
    uint64_t checksum;
    tsl_step_stats st[STEPS];
    tsl_runtime_stats rs;
    size_t limit;
} result;

static void run_steps(const fixture *f, tsl_session *s, result *r) {
    for (int i = 0; i < STEPS; i++) {
        tsl_status st = tsl_session_step(s, f->x[i], f->y[i], &r->st[i]);
        cr_assert_eq(st, TSL_OK, "step %d: %s", i + 1, tsl_last_error());
        cr_assert(isfinite(r->st[i].loss), "step %d: loss %g", i + 1, r->st[i].loss);
    }
    r->checksum = tsl_session_param_checksum(s);
    tsl_session_runtime_stats(s, &r->rs);
    r->limit = tsl__session_runtime_limit(s);
}

static void print_stats(const char *what, const result *r) {
    const tsl_runtime_stats *q = &r->rs;
    printf("%-28s peaks %zu/%zu/%zu limit %zu | so %lld si %lld rc %lld passive %lld evict %lld "
           "stalls %lld (%.3f ms) plans %lld | d2h %zu h2d %zu\n",
           what, r->st[0].peak_load, r->st[1].peak_load, r->st[2].peak_load, r->limit,
           (long long)q->swaps_out, (long long)q->swaps_in, (long long)q->recomputes,
           (long long)q->passive_swaps, (long long)q->evictions, (long long)q->stalls,
           q->stall_ms, (long long)q->plans_installed, q->bytes_d2h, q->bytes_h2d);
}

/* ---- identical results, exact peak (virtual clock) ------------------------------------- */

/* Follows the planner's plan in the virtual clock: identical parameters,
 * peak == predicted (every step: the cold start holds the parameters swapped
 * across iterations until their no-op swap-in, which must not raise the
 * peak here; steps 2 and 3 are the periodic steady state), no stall. */
static void check_virtual(const char *model, int batch, int image, double frac) {
    fixture f;
    fx_init(&f, model, batch, image, frac);
    cr_assert_gt(count_type(f.plan, TSL_EV_SWAP_OUT), 0, "%s: the plan swaps nothing", model);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    tsl_runtime_opts ro = rt_opts(&f, 1);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, f.plan, 1);
    result r;
    run_steps(&f, s, &r);
    char what[64];
    snprintf(what, sizeof what, "%s virtual", model);
    print_stats(what, &r);
    cr_assert_eq(r.checksum, van, "%s: parameters differ from vanilla's", model);
    for (int i = 1; i < STEPS; i++)
        cr_assert_eq(r.st[i].peak_load, f.plan->predicted_peak,
                     "%s step %d: peak %zu, predicted %zu (diff %lld)", model, i + 1,
                     r.st[i].peak_load, f.plan->predicted_peak,
                     (long long)r.st[i].peak_load - (long long)f.plan->predicted_peak);
    cr_assert_leq(r.st[0].peak_load, f.plan->predicted_peak, "%s step 1: peak %zu > %zu", model,
                  r.st[0].peak_load, f.plan->predicted_peak);
    cr_assert_eq(r.rs.stalls, 0, "%s: %lld stalls (%.3f ms)", model, (long long)r.rs.stalls,
                 r.rs.stall_ms);
    cr_assert_eq(r.rs.passive_swaps + r.rs.evictions, 0);
    cr_assert_eq(r.rs.swaps_out, STEPS * count_type(f.plan, TSL_EV_SWAP_OUT));
    cr_assert_gt(r.rs.bytes_d2h, 0);
    cr_assert_lt(f.plan->predicted_peak, f.vanilla_peak);
    tsl_session_free(s);
    fx_free(&f);
}

Test(executor, virtual_small_exact_peak) { check_virtual("small", 8, 0, 0.7); }
Test(executor, virtual_cnn_exact_peak) { check_virtual("cnn", th_quick() ? 2 : 8, CNN_IMAGE, 0.7); }
/* resnet18 at its smallest (32x32, batch 2: batch norm needs two values per
 * channel) takes a minute under the sanitizers: release build only. */
Test(executor, virtual_resnet18_exact_peak, .timeout = 120) {
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    check_virtual("resnet18", 2, 32, 0.7);
}

/* ---- real time ------------------------------------------------------------------------------- */

/* Real time, strict: identical parameters, ledger peak within the limit. */
static void check_real(const char *model, int batch, int image, double frac, double gbps,
                       tsl_kernel_mode k) {
    fixture f;
    fx_init(&f, model, batch, image, frac);
    uint64_t van = vanilla_checksum(&f, k);
    fx_use_kernels(&f, k);
    tsl_runtime_opts ro = rt_opts(&f, 0);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, k, gbps, &ro, f.plan, 1);
    result r;
    run_steps(&f, s, &r);
    char what[64];
    snprintf(what, sizeof what, "%s real %.2f GB/s", model, gbps);
    print_stats(what, &r);
    cr_assert_eq(r.checksum, van, "%s: parameters differ from vanilla's", model);
    cr_assert_eq(r.limit, f.plan->predicted_peak);
    for (int i = 0; i < STEPS; i++) /* the limit counts the kernels' workspace */
        cr_assert_leq(r.st[i].peak_load, r.limit, "%s step %d: peak %zu > limit %zu (by %zu)", model,
                      i + 1, r.st[i].peak_load, r.limit, r.st[i].peak_load - r.limit);
    cr_assert_gt(r.rs.swaps_out, 0);
    tsl_session_free(s);
    fx_free(&f);
}

Test(executor, real_small_identical) { check_real("small", 8, 0, 0.7, 0.0, TSL_KERNELS_REF); }
Test(executor, real_cnn_identical_fast_kernels) {
    check_real("cnn", th_quick() ? 2 : 8, CNN_IMAGE, 0.7, 0.0, TSL_KERNELS_FAST);
}
Test(executor, real_resnet18_identical, .timeout = 120) {
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    check_real("resnet18", 2, 32, 0.7, 0.0, TSL_KERNELS_REF);
}

/* Channels throttled far below what the plan assumed: the swaps are late,
 * strict mode makes compute wait instead of passing the limit. */
Test(executor, strict_real_time_throttled_channels_stay_within_limit, .timeout = 120) {
    fixture f;
    fx_init(&f, "cnn", th_quick() ? 2 : 4, CNN_IMAGE, 0.7);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    tsl_runtime_opts ro = rt_opts(&f, 0);
    /* copy streams at 0.25 GB/s: the plan assumed 4 GB/s */
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.25, &ro, f.plan, 1);
    result r;
    run_steps(&f, s, &r);
    print_stats("cnn strict 0.25 GB/s", &r);
    cr_assert_eq(r.checksum, van);
    for (int i = 0; i < STEPS; i++)
        cr_assert_leq(r.st[i].peak_load, r.limit, "step %d: peak %zu > limit %zu", i + 1,
                      r.st[i].peak_load, r.limit);
    cr_assert_gt(r.rs.stalls, 0, "slow channels but no stall");
    cr_assert_gt(r.rs.stall_ms, 0.0);
    tsl_session_free(s);
    fx_free(&f);
}

/* ---- wrong plans, small arenas -------------------------------------------------------------- */

/* The planner's plan without its first swap-in of a transient tensor. */
static tsl_plan *drop_swap_in(const fixture *f, int32_t *dropped) {
    tsl_plan *p = tsl_plan_new(f->plan->job);
    *dropped = -1;
    for (int32_t e = 0; e < f->plan->n_events; e++) {
        const tsl_event *ev = &f->plan->events[e];
        if (*dropped < 0 && ev->type == TSL_EV_SWAP_IN &&
            !tsl_kind_is_persistent(f->w->tensors[ev->tensor].kind)) {
            *dropped = ev->tensor;
            continue;
        }
        cr_assert_eq(tsl_plan_add(p, *ev), TSL_OK);
    }
    p->predicted_peak = f->plan->predicted_peak;
    p->predicted_period_us = f->plan->predicted_period_us;
    cr_assert_geq(*dropped, 0, "the plan swaps no activation in");
    return p;
}

static void check_passive(int virtual_clock) {
    fixture f;
    fx_init(&f, "cnn", th_quick() ? 2 : 4, CNN_IMAGE, 0.7);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    int32_t dropped;
    tsl_plan *bad = drop_swap_in(&f, &dropped);
    tsl_violation *v;
    int nv;
    cr_assert_eq(tsl_plan_verify(f.w, bad, &f.dev, &v, &nv), TSL_ERR_INVALID);
    free(v);
    tsl_runtime_opts ro = rt_opts(&f, virtual_clock);
    ro.strict = 0; /* the wrong plan needs more than it predicts */
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, bad, 0);
    result r;
    run_steps(&f, s, &r);
    print_stats(virtual_clock ? "cnn passive virtual" : "cnn passive real", &r);
    cr_assert_eq(r.checksum, van);
    /* virtual: once per step; real time: at most (a release still waiting for
     * its swap-out when the op comes leaves the tensor in place). On the
     * late-kernel device the executor runs ahead of the kernels, and the
     * release (applied when its trigger's kernel has completed) may come
     * after the read every time: none is then needed. */
    int late = th_session_opts().async_compute;
    if (virtual_clock)
        cr_assert_eq(r.rs.passive_swaps, STEPS, "'%s' dropped: %lld passive swap-ins",
                     f.w->tensors[dropped].name, (long long)r.rs.passive_swaps);
    else
        cr_assert(r.rs.passive_swaps >= (late ? 0 : 1) && r.rs.passive_swaps <= STEPS,
                  "'%s' dropped: %lld passive swap-ins", f.w->tensors[dropped].name,
                  (long long)r.rs.passive_swaps);
    tsl_session_free(s);
    tsl_plan_free(bad);
    fx_free(&f);
}

Test(executor, passive_swap_in_repairs_a_wrong_plan_virtual) { check_passive(1); }
Test(executor, passive_swap_in_repairs_a_wrong_plan_real) { check_passive(0); }

/* An empty plan (nothing swapped) in an arena smaller than vanilla's peak:
 * the executor evicts and brings tensors back passively. */
static void check_evictions(int virtual_clock) {
    fixture f;
    fx_init(&f, "wide", th_quick() ? 64 : 256, 0, 0.9);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    tsl_plan *empty = tsl_plan_new("empty");
    size_t cap = f.persistent + (f.vanilla_peak - f.persistent) * 3 / 4;
    tsl_runtime_opts ro = rt_opts(&f, virtual_clock);
    tsl_session *s = open_rt(&f, cap, TSL_KERNELS_REF, 0.0, &ro, empty, 0);
    result r;
    run_steps(&f, s, &r);
    print_stats(virtual_clock ? "wide evictions virtual" : "wide evictions real", &r);
    cr_assert_eq(r.checksum, van);
    cr_assert_gt(r.rs.evictions, 0);
    cr_assert_gt(r.rs.passive_swaps, 0);
    for (int i = 0; i < STEPS; i++) cr_assert_leq(r.st[i].peak_load, cap);
    /* vanilla in that arena runs out of memory, with a message */
    tsl_session *v = open_session(&f, cap, TSL_KERNELS_REF, 0.0);
    cr_assert_eq(tsl_session_step(v, f.x[0], f.y[0], NULL), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "out of memory") != NULL, "%s", tsl_last_error());
    tsl_session_free(v);
    tsl_session_free(s);
    tsl_plan_free(empty);
    fx_free(&f);
}

Test(executor, eviction_when_the_arena_is_too_small_virtual) { check_evictions(1); }
Test(executor, eviction_when_the_arena_is_too_small_real) { check_evictions(0); }

/* The eviction policy hook: a policy that evicts the nearest next use (the
 * opposite of the default) is offered only movable tensors, is called at
 * every eviction, and the results stay identical; a policy that refuses to
 * evict leaves the allocation failing with a clear message. */
typedef struct evict_log {
    int calls, bad;
    int32_t pos;
    const tsl_session *s;
} evict_log;

static int nearest_next_use(void *user, int32_t pos, const tsl_evict_candidate *c, int n) {
    evict_log *l = user;
    l->calls++;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (c[i].bytes == 0 || c[i].tensor < 0 || (c[i].next_use <= pos && c[i].next_use != INT32_MAX))
            l->bad++; /* offered something it may not move, or a use already passed */
        if (best < 0 || c[i].next_use < c[best].next_use) best = i;
    }
    return best;
}

static int refuse(void *user, int32_t pos, const tsl_evict_candidate *c, int n) {
    (void)pos;
    (void)c;
    (void)n;
    ((evict_log *)user)->calls++;
    return -1;
}

static void check_evict_hook(int virtual_clock) {
    fixture f;
    fx_init(&f, "wide", th_quick() ? 64 : 256, 0, 0.9);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    tsl_plan *empty = tsl_plan_new("empty");
    size_t cap = f.persistent + (f.vanilla_peak - f.persistent) * 3 / 4;
    tsl_runtime_opts ro = rt_opts(&f, virtual_clock);
    evict_log log = {0};
    ro.evict = nearest_next_use;
    ro.evict_user = &log;
    tsl_session *s = open_rt(&f, cap, TSL_KERNELS_REF, 0.0, &ro, empty, 0);
    result r;
    run_steps(&f, s, &r);
    print_stats(virtual_clock ? "wide evict hook virtual" : "wide evict hook real", &r);
    cr_assert_eq(r.checksum, van);
    cr_assert_gt(r.rs.evictions, 0);
    cr_assert_geq(log.calls, r.rs.evictions, "%d calls for %lld evictions", log.calls,
                  (long long)r.rs.evictions);
    cr_assert_eq(log.bad, 0, "the policy was offered %d tensors it may not move", log.bad);
    tsl_session_free(s);
    /* a policy that never evicts: the step fails cleanly, naming the tensor */
    evict_log none = {0};
    ro.evict = refuse;
    ro.evict_user = &none;
    s = open_rt(&f, cap, TSL_KERNELS_REF, 0.0, &ro, empty, 0);
    cr_assert_eq(tsl_session_step(s, f.x[0], f.y[0], NULL), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "nothing left to evict"), "%s", tsl_last_error());
    cr_assert_gt(none.calls, 0);
    tsl_session_free(s);
    tsl_plan_free(empty);
    fx_free(&f);
}

Test(executor, eviction_policy_hook_virtual) { check_evict_hook(1); }
Test(executor, eviction_policy_hook_real) { check_evict_hook(0); }

/* ---- recomputation ----------------------------------------------------------------------------- */

/* A valid plan with one recomputation: release t after a read, recompute
 * it before its next read (the first candidate the verifier accepts). */
static tsl_plan *recompute_plan(const fixture *f, int32_t *tensor) {
    const tsl_workload *w = f->w;
    for (int32_t t = 0; t < w->n_tensors; t++) {
        int32_t g = w->tensors[t].producer;
        if (w->tensors[t].kind != TSL_KIND_ACTIVATION || g < 0) continue;
        int32_t prev = -1;
        for (int32_t i = g + 1; i < w->n_ops; i++) {
            int reads = 0;
            for (int k = 0; k < w->ops[i].n_in; k++) reads |= w->ops[i].in[k] == t;
            if (!reads) continue;
            if (prev >= 0 && i > prev + 1) {
                tsl_plan *p = tsl_plan_new(w->job);
                tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, t, prev, 0.0, -1});
                tsl_plan_add(p, (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, i});
                tsl_plan_sort(p);
                tsl_peak_info pi;
                if (tsl_peak_analysis(w, p, &f->dev, &pi) == TSL_OK) {
                    p->predicted_peak = pi.peak;
                    p->predicted_period_us = pi.period_us;
                    tsl_peak_info_free(&pi);
                    tsl_violation *v;
                    int nv;
                    tsl_status st = tsl_plan_verify(w, p, &f->dev, &v, &nv);
                    free(v);
                    if (st == TSL_OK && w->ops[g].n_out > 1) {
                        *tensor = t;
                        return p;
                    }
                    if (st == TSL_OK && !*tensor) *tensor = -t - 1; /* fallback */
                }
                tsl_plan_free(p);
            }
            prev = i;
        }
    }
    return NULL;
}

static void check_recompute(int virtual_clock) {
    fixture f;
    fx_init(&f, "small", 8, 0, 0.9);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    int32_t t = 0;
    tsl_plan *p = recompute_plan(&f, &t);
    if (!p) { /* no multi-output producer qualifies: take the first single-output one */
        cr_assert_lt(t, 0, "no recomputation is valid in this graph");
        int32_t want = -t - 1;
        p = tsl_plan_new(f.w->job);
        int32_t prev = -1;
        for (int32_t i = f.w->tensors[want].producer + 1; i < f.w->n_ops && p->n_events == 0; i++) {
            int reads = 0;
            for (int k = 0; k < f.w->ops[i].n_in; k++) reads |= f.w->ops[i].in[k] == want;
            if (!reads) continue;
            if (prev >= 0 && i > prev + 1) {
                tsl_plan_add(p, (tsl_event){TSL_EV_RELEASE, want, prev, 0.0, -1});
                tsl_plan_add(p, (tsl_event){TSL_EV_RECOMPUTE, want, -1, 0.0, i});
            }
            prev = i;
        }
        tsl_plan_sort(p);
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(f.w, p, &f.dev, &pi), TSL_OK);
        p->predicted_peak = pi.peak;
        p->predicted_period_us = pi.period_us;
        tsl_peak_info_free(&pi);
        t = want;
    }
    tsl_runtime_opts ro = rt_opts(&f, virtual_clock);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, p, 1);
    result r;
    run_steps(&f, s, &r);
    char what[160];
    snprintf(what, sizeof what, "recompute '%s' %s", f.w->tensors[t].name,
             virtual_clock ? "virtual" : "real");
    print_stats(what, &r);
    cr_assert_eq(r.checksum, van, "recomputing '%s' changed the results", f.w->tensors[t].name);
    cr_assert_eq(r.rs.recomputes, STEPS);
    if (virtual_clock)
        for (int i = 0; i < STEPS; i++)
            cr_assert_eq(r.st[i].peak_load, p->predicted_peak, "step %d: peak %zu, predicted %zu",
                         i + 1, r.st[i].peak_load, p->predicted_peak);
    tsl_session_free(s);
    tsl_plan_free(p);
    fx_free(&f);
}

Test(executor, recompute_virtual_exact) { check_recompute(1); }
Test(executor, recompute_real) { check_recompute(0); }

/* ---- refusals -------------------------------------------------------------------------------- */

/* A workload that counts less workspace than the backend's kernels
 * allocate (the reference figures, with oneDNN's scratchpads) is refused,
 * naming the op and both sizes; matched, it is taken. */
Test(executor, attach_refuses_a_workload_short_of_the_kernels_workspace) {
    fixture f;
    fx_init(&f, "cnn", 2, CNN_IMAGE, 0.7);
    tsl_session *s = open_session(&f, (size_t)1 << 30, TSL_KERNELS_FAST, 0.0);
    tsl_runtime_opts ro = rt_opts(&f, 0);
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, f.w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "workspace") && strstr(tsl_last_error(), "conv1"), "%s",
              tsl_last_error());
    cr_assert_eq(tsl_workload_match_session(f.w, s), TSL_OK, "%s", tsl_last_error());
    size_t ws;
    cr_assert_eq(tsl_session_op_workspace(s, 0, &ws), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(f.w->ops[0].workspace, ws);
    cr_assert_gt(ws, 0, "oneDNN's convolution has a scratchpad");
    cr_assert_eq(tsl_session_op_workspace(s, -1, &ws), TSL_ERR_INVALID);
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, f.w), TSL_OK, "%s", tsl_last_error());
    tsl_session_free(s);
    fx_free(&f);
}

Test(executor, set_plan_refuses_an_invalid_plan) {
    fixture f;
    fx_init(&f, "small", 8, 0, 0.7);
    tsl_session *s = open_session(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0);
    cr_assert_eq(tsl_session_set_plan(s, f.plan), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "no runtime attached") != NULL, "%s", tsl_last_error());
    tsl_runtime_opts ro = rt_opts(&f, 0);
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, f.w), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, f.w), TSL_ERR_INVALID);
    /* release fc1's output right after it is generated, with no way back */
    tsl_tid t = tsl_graph_find(f.g, "fc1");
    cr_assert_neq(t, TSL_NONE);
    tsl_plan *bad = tsl_plan_new("small");
    tsl_plan_add(bad, (tsl_event){TSL_EV_RELEASE, t, tsl_graph_producer(f.g, t), 0.0, -1});
    bad->predicted_peak = f.plan->predicted_peak;
    cr_assert_eq(tsl_session_set_plan(s, bad), TSL_ERR_INVALID);
    const char *msg = tsl_last_error();
    cr_assert(strstr(msg, "refused") != NULL && strstr(msg, "fc1") != NULL, "%s", msg);
    printf("refusal: %s\n", msg);
    /* the session still runs vanilla, then the valid plan */
    cr_assert_eq(tsl_session_step(s, f.x[0], f.y[0], NULL), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_set_plan(s, f.plan), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_step(s, f.x[1], f.y[1], NULL), TSL_OK, "%s", tsl_last_error());
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(s, &rs);
    cr_assert_gt(rs.swaps_out, 0);
    tsl_plan_free(bad);
    tsl_session_free(s);
    /* a workload of another graph */
    fixture o;
    fx_init(&o, "cnn", 2, CNN_IMAGE, 0.7);
    s = open_session(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0);
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, o.w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "tensors") != NULL, "%s", tsl_last_error());
    tsl_session_free(s);
    fx_free(&o);
    fx_free(&f);
}

/* ---- faults, host copies, evaluation, trace -------------------------------------------------- */

/* An allocation fails at the k-th allocation of step 2, for every k. */
Test(executor, injected_allocation_failure_at_every_k, .timeout = 120) {
    fixture f;
    fx_init(&f, "small", 8, 0, 0.7);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    tsl_runtime_opts ro = rt_opts(&f, 1);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, f.plan, 1);
    tsl_backend *b = tsl__session_backend(s);
    tsl_alloc_stats a0, a1;
    cr_assert_eq(tsl_session_step(s, f.x[0], f.y[0], NULL), TSL_OK);
    b->iface->mem_stats(b, &a0);
    cr_assert_eq(tsl_session_step(s, f.x[1], f.y[1], NULL), TSL_OK);
    b->iface->mem_stats(b, &a1);
    cr_assert_eq(tsl_session_step(s, f.x[2], f.y[2], NULL), TSL_OK);
    cr_assert_eq(tsl_session_param_checksum(s), van);
    tsl_session_free(s);
    uint64_t n = a1.n_allocs - a0.n_allocs;
    cr_assert_gt(n, 10);
    for (int vc = 0; vc < 2; vc++)
        for (uint64_t k = 1; k <= n + 1; k++) {
            ro.virtual_clock = vc;
            s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, f.plan, 1);
            b = tsl__session_backend(s);
            cr_assert_eq(tsl_session_step(s, f.x[0], f.y[0], NULL), TSL_OK);
            b->iface->fail_alloc_at(b, k);
            tsl_status st = tsl_session_step(s, f.x[1], f.y[1], NULL);
            cr_assert_eq(st, TSL_OK, "k = %llu: %s", (unsigned long long)k, tsl_last_error());
            b->iface->fail_alloc_at(b, 0);
            cr_assert_eq(tsl_session_step(s, f.x[2], f.y[2], NULL), TSL_OK);
            cr_assert_eq(tsl_session_param_checksum(s), van, "k = %llu (%s clock)",
                         (unsigned long long)k, vc ? "virtual" : "real");
            tsl_session_free(s);
        }
    fx_free(&f);
}

/* Persistent tensors released across iterations are read from their host
 * copy between steps; evaluation brings back what it reads and parks the
 * optimizer's states; the next step brings those back. */
Test(executor, parameters_swapped_across_iterations_stay_readable) {
    fixture f;
    fx_init(&f, "cnn", 2, CNN_IMAGE, 0.7);
    fx_replan_any_size(&f);
    tsl_session *v = open_session(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0);
    tsl_runtime_opts ro = rt_opts(&f, 1);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, f.plan, 1);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tsl_session_step(v, f.x[i], f.y[i], NULL), TSL_OK);
        cr_assert_eq(tsl_session_step(s, f.x[i], f.y[i], NULL), TSL_OK);
    }
    int absent = 0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(f.g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(f.g, t);
        if (!tsl_kind_is_persistent(tt->kind)) continue;
        absent += s->ptr[t] == NULL;
        float *a = malloc(tt->nbytes), *b = malloc(tt->nbytes);
        cr_assert_eq(tsl_session_read(s, t, a), TSL_OK, "'%s': %s", tt->name, tsl_last_error());
        cr_assert_eq(tsl_session_read(v, t, b), TSL_OK);
        cr_assert_eq(memcmp(a, b, tt->nbytes), 0, "'%s' differs", tt->name);
        free(a);
        free(b);
    }
    cr_assert_gt(absent, 0, "the plan swaps no persistent tensor across iterations");
    tsl_step_stats e1, e2;
    cr_assert_eq(tsl_session_eval(s, f.x[2], f.y[2], &e1), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_eval(v, f.x[2], f.y[2], &e2), TSL_OK);
    cr_assert_eq(memcmp(&e1.loss, &e2.loss, sizeof e1.loss), 0, "eval loss %g vs %g", e1.loss,
                 e2.loss);
    /* evaluation needs the parameters, not the optimizer's states: those
     * wait on the host, so that evaluation fits where training does */
    int n_opt = 0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(f.g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(f.g, t);
        if (tt->kind == TSL_KIND_OPT_STATE) {
            n_opt++;
            cr_assert_null(s->ptr[t], "'%s' resident during evaluation", tt->name);
        } else if (tt->kind == TSL_KIND_PARAM) {
            cr_assert_not_null(s->ptr[t], "parameter '%s' absent during evaluation", tt->name);
        }
    }
    cr_assert_gt(n_opt, 0, "the fixture's optimizer keeps no state");
    tsl_step_stats e3;
    cr_assert_eq(tsl_session_step(s, f.x[2], f.y[2], &e3), TSL_OK, "%s", tsl_last_error());
    cr_assert_leq(e3.peak_load, f.plan->predicted_peak, "after evaluation: peak %zu > %zu",
                  e3.peak_load, f.plan->predicted_peak);
    cr_assert_eq(tsl_session_step(v, f.x[2], f.y[2], NULL), TSL_OK);
    cr_assert_eq(tsl_session_param_checksum(s), tsl_session_param_checksum(v));
    tsl_session_free(s);
    tsl_session_free(v);
    fx_free(&f);
}

/* Events of phase ph named `name` (a prefix when it ends with a space). */
static int count_events(json_t *evs, const char *name, const char *ph) {
    int n = 0;
    size_t i, len = strlen(name);
    int prefix = len > 0 && name[len - 1] == ' ';
    json_t *e;
    json_array_foreach(evs, i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        const char *p = json_string_value(json_object_get(e, "ph"));
        if (!nm || !p || strcmp(p, ph) != 0) continue;
        n += prefix ? strncmp(nm, name, len) == 0 : strcmp(nm, name) == 0;
    }
    return n;
}

Test(executor, trace_of_a_real_run) {
    fixture f;
    fx_init(&f, "small", 8, 0, 0.7);
    tsl_runtime_opts ro = rt_opts(&f, 0);
    tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, f.plan, 1);
    result r;
    run_steps(&f, s, &r);
    char path[] = "/tmp/tsl_exec_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tsl_session_write_trace(s, path), TSL_OK, "%s", tsl_last_error());
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    cr_assert(root != NULL, "%s: %s", path, je.text);
    json_t *evs = json_object_get(root, "traceEvents");
    cr_assert(json_is_array(evs));
    int n_ops = f.w->n_ops;
    cr_assert_eq(count_events(evs, "fc1", "X"), STEPS, "spans of op fc1");
    cr_assert_eq(count_events(evs, "loss", "X"), STEPS, "spans of op loss");
    cr_assert_eq(count_events(evs, "swap_out ", "X"), (int)r.rs.swaps_out);
    cr_assert_eq(count_events(evs, "swap_in ", "X"), (int)r.rs.swaps_in);
    cr_assert_gt(count_events(evs, "memory", "C"), 2 * n_ops);
    cr_assert_eq(count_events(evs, "iteration ", "X"), STEPS);
    cr_assert_eq(tsl_session_write_trace(s, "/nonexistent/dir/t.json"), TSL_ERR_IO);
    json_decref(root);
    unlink(path);
    tsl_session_free(s);
    fx_free(&f);
}

/* ---- random valid plans ------------------------------------------------------------------- */

/* A random plan over f's workload: 1 to 6 distinct tensors, each with a
 * swap (out after the write of its value, sometimes delayed; release after
 * an access; in before the next access, its copy ending at that op's start
 * or earlier) or a recomputation (release, recompute before the next read).
 * Its predicted figures come from tsl_peak_analysis. NULL if the verifier
 * rejects it. */
static tsl_plan *random_plan(const fixture *f, uint64_t *rs) {
    const tsl_workload *w = f->w;
    tsl_plan *p = tsl_plan_new(w->job);
    int k = 1 + (int)th_uniform(rs, 0, 6);
    uint8_t *used = calloc((size_t)w->n_tensors, 1);
    int32_t *acc = malloc(sizeof *acc * (size_t)w->n_ops);
    for (int n = 0; n < k; n++) {
        int32_t t = (int32_t)th_uniform(rs, 0, w->n_tensors);
        if (t >= w->n_tensors || used[t]) continue;
        used[t] = 1;
        int na = 0;
        for (int32_t i = 0; i < w->n_ops; i++) {
            int hit = 0;
            for (int j = 0; j < w->ops[i].n_in; j++) hit |= w->ops[i].in[j] == t;
            for (int j = 0; j < w->ops[i].n_out; j++) hit |= w->ops[i].out[j] == t;
            if (hit) acc[na++] = i;
        }
        if (na < 2) continue;
        int g = (int)th_uniform(rs, 0, na - 1);
        int32_t u = acc[g], v = acc[g + 1], wr = -1;
        for (int a = 0; a <= g; a++)
            for (int j = 0; j < w->ops[acc[a]].n_out; j++)
                if (w->ops[acc[a]].out[j] == t) wr = acc[a];
        tsl_event rl = {TSL_EV_RELEASE, t, u, 0.0, -1};
        if (th_uniform(rs, 0, 1) < 0.7) {
            double d_out = th_uniform(rs, 0, 1) < 0.5 ? 0.0 : th_uniform(rs, 0, 20);
            tsl_event so = {TSL_EV_SWAP_OUT, t, wr, d_out, -1};
            double copy = tsl_copy_us(&f->dev, w->tensors[t].bytes, 1);
            double slack = th_uniform(rs, 0, 1) < 0.5 ? 0.0 : th_uniform(rs, 0, 30);
            double issue = w->ops[v].start_us - copy - slack;
            if (issue < 0) issue = 0;
            int32_t trig = -1;
            for (int32_t i = 0; i < w->n_ops; i++)
                if (w->ops[i].end_us <= issue) trig = i;
            double d = issue - (trig >= 0 ? w->ops[trig].end_us : 0.0);
            tsl_event si = {TSL_EV_SWAP_IN, t, trig, d < 0 ? 0.0 : d, v};
            tsl_plan_add(p, so);
            tsl_plan_add(p, rl);
            tsl_plan_add(p, si);
        } else {
            tsl_event rc = {TSL_EV_RECOMPUTE, t, -1, 0.0, v};
            tsl_plan_add(p, rl);
            tsl_plan_add(p, rc);
        }
    }
    free(used);
    free(acc);
    tsl_plan_sort(p);
    tsl_peak_info pi;
    tsl_status st = tsl_peak_analysis(w, p, &f->dev, &pi);
    if (st == TSL_OK) {
        p->predicted_peak = pi.peak;
        p->predicted_period_us = pi.period_us;
        tsl_peak_info_free(&pi);
        tsl_violation *v = NULL;
        int nv = 0;
        st = tsl_plan_verify(w, p, &f->dev, &v, &nv);
        free(v);
    }
    if (st != TSL_OK || p->n_events == 0) {
        tsl_clear_error();
        tsl_plan_free(p);
        return NULL;
    }
    return p;
}

/* n valid random plans on `model`: identical parameters in the clock given;
 * in the virtual clock the peak of every step after the first equals the
 * prediction (the first is at most it) and nothing stalls, unless a
 * recomputation re-runs a multi-output producer (its other outputs need
 * scratch the plan does not count). */
static void check_random(const char *model, int batch, int n, int virtual_clock, uint64_t seed) {
    fixture f;
    fx_init(&f, model, batch, strcmp(model, "cnn") == 0 ? CNN_IMAGE : 0, 0.7);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    uint64_t rs = seed;
    int done = 0, tries = 0, rc_total = 0, sw_total = 0, n_multi = 0, planned = 0;
    while (done < n && tries < 200 * n) {
        tries++;
        tsl_plan *p = random_plan(&f, &rs);
        if (!p) continue;
        int multi = 0;
        for (int32_t e = 0; e < p->n_events; e++)
            if (p->events[e].type == TSL_EV_RECOMPUTE)
                multi |= f.w->ops[f.w->tensors[p->events[e].tensor].producer].n_out > 1;
        n_multi += multi;
        tsl_runtime_opts ro = rt_opts(&f, virtual_clock);
        ro.strict = !multi;
        tsl_session *s = open_rt(&f, (size_t)1 << 30, TSL_KERNELS_REF, 0.0, &ro, p, 1);
        result r;
        run_steps(&f, s, &r);
        cr_assert_eq(r.checksum, van, "%s plan %d (seed %llu): parameters differ", model, done,
                     (unsigned long long)seed);
        if (virtual_clock && !multi) {
            for (int i = 1; i < STEPS; i++)
                cr_assert_eq(r.st[i].peak_load, p->predicted_peak,
                             "%s plan %d step %d: peak %zu, predicted %zu", model, done, i + 1,
                             r.st[i].peak_load, p->predicted_peak);
            cr_assert_leq(r.st[0].peak_load, p->predicted_peak);
            cr_assert_eq(r.rs.stalls + r.rs.passive_swaps + r.rs.evictions, 0,
                         "%s plan %d: %lld stalls, %lld passive, %lld evictions", model, done,
                         (long long)r.rs.stalls, (long long)r.rs.passive_swaps,
                         (long long)r.rs.evictions);
        }
        rc_total += (int)r.rs.recomputes;
        sw_total += (int)r.rs.swaps_out;
        planned += count_type(p, TSL_EV_SWAP_OUT) + count_type(p, TSL_EV_RECOMPUTE);
        tsl_session_free(s);
        tsl_plan_free(p);
        done++;
    }
    printf("%s random plans (%s): %d valid of %d tried (%d recompute a multi-output op), %d "
           "recomputations, %d swap-outs run\n",
           model, virtual_clock ? "virtual" : "real", done, tries, n_multi, rc_total, sw_total);
    cr_assert_eq(done, n, "only %d valid plans in %d tries", done, tries);
    /* On the late-kernel device the executor runs ahead of the kernels: a
     * swap-out of a tensor whose last use is enqueued before the swap-out's
     * trigger has completed finds it gone (it is dead: nothing to save) */
    if (th_session_opts().async_compute) {
        cr_assert_gt(planned, 0, "the random plans have no swap-out or recomputation");
    } else {
        cr_assert_gt(sw_total + rc_total, 0);
        if (n >= 10) cr_assert_gt(rc_total, 0);
    }
    fx_free(&f);
}

Test(executor, random_valid_plans_virtual, .timeout = 120) {
    if (getenv("TSL_EXEC_MANY")) check_random("small", 8, atoi(getenv("TSL_EXEC_MANY")), 1, 1234);
    if (getenv("TSL_EXEC_MANY"))
        check_random("cnn", 2, atoi(getenv("TSL_EXEC_MANY")) / 10, 1, 1235);
    if (getenv("TSL_EXEC_MANY")) check_random("small", 8, atoi(getenv("TSL_EXEC_MANY")) / 4, 0, 1236);
    check_random("small", 8, th_quick() ? 10 : 60, 1, 7);
    check_random("wide", 32, th_quick() ? 5 : 40, 1, 8);
    check_random("cnn", 2, th_quick() ? 1 : 15, 1, 9);
}

Test(executor, random_valid_plans_real, .timeout = 120) {
    check_random("small", 8, th_quick() ? 5 : 20, 0, 17);
    check_random("cnn", 2, th_quick() ? 1 : 8, 0, 19);
}

/* Arenas barely above what cnn's largest op needs (the update of fc1:
 * weight, gradient, momentum), with the planner's plan for that budget:
 * evictions and swaps leave the update's tensors spread over the arena, so
 * that an allocation fails with enough free bytes but no block; the
 * executor moves everything out and retries the op. */
Test(executor, defragmentation_when_no_block_fits, .timeout = 120) {
    fixture f;
    /* the full image in every build: at the sanitizer builds' 12 px
     * (CNN_IMAGE) the planner's plans for these arenas leave none
     * fragmented (since its recomputations run before the chains that read
     * them, docs/RESULTS.md) */
    fx_init(&f, "cnn", 4, 0, 0.9);
    uint64_t van = vanilla_checksum(&f, TSL_KERNELS_REF);
    size_t need = 0; /* the largest op's tensors, aligned */
    for (int32_t i = 0; i < f.w->n_ops; i++) {
        const tsl_wl_op *o = &f.w->ops[i];
        size_t b = 0;
        for (int k = 0; k < o->n_in + o->n_out; k++) { /* each tensor once (in place: twice listed) */
            int32_t t = k < o->n_in ? o->in[k] : o->out[k - o->n_in], seen = 0;
            for (int q = 0; q < k; q++) seen |= (q < o->n_in ? o->in[q] : o->out[q - o->n_in]) == t;
            if (!seen) b += (f.w->tensors[t].bytes + 255) / 256 * 256;
        }
        if (b > need) need = b;
    }
    int64_t defrags = 0;
    int runs = 0;
    for (int k = 1; k <= (th_quick() ? 2 : 4); k++) {
        size_t cap = need + (size_t)k * need / 200;
        tsl_device_profile d = f.dev;
        d.mem_bytes = cap;
        tsl_plan_opts po = tsl_plan_opts_default();
        po.budget = cap;
        tsl_plan *p;
        tsl_plan_report rep;
        cr_assert(TH_PLANNED(tsl_plan_jobs(&f.w, 1, &d, &po, &p, &rep)), "%s", tsl_last_error());
        tsl_plan_report_free(&rep);
        for (int vc = 1; vc >= 0; vc--) {
            tsl_runtime_opts ro = rt_opts(&f, vc);
            ro.profile = d;
            tsl_session *s = open_rt(&f, cap, TSL_KERNELS_REF, 0.0, &ro, p, 1);
            result r;
            run_steps(&f, s, &r);
            cr_assert_eq(r.checksum, van, "capacity %zu (%s clock)", cap, vc ? "virtual" : "real");
            for (int i = 0; i < STEPS; i++) cr_assert_leq(r.st[i].peak_load, cap);
            defrags += s->rt->defrags;
            runs++;
            tsl_session_free(s);
        }
        tsl_plan_free(p);
    }
    printf("defragmentations: %lld in %d runs with arenas 0.5 to 2 %% above the largest op\n",
           (long long)defrags, runs);
    cr_assert_gt(defrags, 0, "no run needed a defragmentation: the test proves nothing");
    fx_free(&f);
}
