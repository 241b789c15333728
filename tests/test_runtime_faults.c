/*
 * test_runtime_faults.c - running out of device memory is an event, not a
 * crash (DESIGN.md invariant 6), and no fallback changes results
 * (invariant 5), through the runtime:
 *
 *   - fault injection: the allocator fails at the k-th allocation of an
 *     iteration, for every k of that iteration, under three plans (empty,
 *     TENSILE's within a tight budget, a random valid plan with swaps and
 *     recomputations), in both clocks: every run completes, the fault
 *     fired once, in real time it was met by an eviction, a passive swap-in
 *     or a wait (see sweep() for the virtual clock), and the parameters
 *     after 3 iterations are bitwise identical to vanilla's;
 *   - a budget below vanilla's peak: the vanilla executor stops with an
 *     out-of-memory message naming the tensor and its size, the load and
 *     the capacity; TENSILE completes within the budget (peak load <= the
 *     budget) with identical parameters, in both clocks;
 *   - a budget the planner cannot reach, near the least memory one op
 *     needs: the runtime completes anyway (waiting for swap-outs, evicting),
 *     never exceeding the budget, with identical parameters;
 *   - the figure, 60 % of vanilla's peak at batch 64 with slow
 *     (throttled) copy channels, over 40 iterations: completes, identical.
 *
 * The model is cnn (28x28x1, 10 classes) at batch 2 for the fault sweeps
 * (about 60 allocations per iteration, each k a fresh session), batch 16
 * for the budgets, batch 64 for the last case.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "rt_fixture.h"
#include "tensile/policy_tensile.h"
#include "runtime/session_internal.h"
#include "tensile/models.h"
#include "tensile/runtime.h"
#include "tensile/session.h"

#define ITERS RTF_ITERS

/* cnn at `batch`, SGD; fixed batches; vanilla's reference (rt_fixture.h).
 * The updates after the backward pass (TH_UPDATES_AFTER): with them in
 * the backward (the default) the update of fc1's weight (weight, gradient,
 * momentum: one op's working set) is nearly all of vanilla's peak, so the
 * devices these tests take as fractions of the activations would be below
 * what that op needs. */
static void fcase_make(rtf_case *c, int batch) {
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = batch;
    rtf_make(c, "cnn", &cfg, TH_UPDATES_AFTER);
    for (int k = 0; k < ITERS; k++) {
        th_fill_f32(c->x[k], c->nx, 77 + (uint64_t)k, -1, 1);
        for (int i = 0; i < batch; i++) c->y[k][i] = (i * 3 + k) % 10;
    }
    rtf_reference(c);
}

static tsl_backend *backend_of(tsl_session *s) { return tsl__session_backend(s); }

static uint64_t allocs_now(tsl_session *s) {
    tsl_alloc_stats st;
    backend_of(s)->iface->mem_stats(backend_of(s), &st);
    return st.n_allocs + st.n_failed;
}

/* Every k of the second iteration: the k-th allocation fails once; each
 * run must complete with vanilla's parameters, and (real-time clock) the
 * failure must have been met by an eviction, a passive swap-in or a wait.
 * In the virtual clock some allocations are only the ledger's record of an
 * op's workspace over its virtual duration (the kernel's own scratch was
 * allocated and freed by the backend already); the runtime ignores a fault
 * there, so only completion and results are required. */
static void sweep(const rtf_case *c, const tsl_plan *p, int vclock, const char *what) {
    size_t cap = c->ref_fp + (c->ref_fp >> 1) + ((size_t)4 << 20);
    /* allocations of one iteration with this plan (the second: steady) */
    tsl_session *s = rtf_open_runtime(c, cap, p, vclock, 0, what);
    cr_assert_eq(tsl_session_step(s, c->x[0], c->y[0], NULL), TSL_OK, "%s", tsl_last_error());
    uint64_t a0 = allocs_now(s);
    cr_assert_eq(tsl_session_step(s, c->x[1], c->y[1], NULL), TSL_OK, "%s", tsl_last_error());
    uint64_t n = allocs_now(s) - a0;
    tsl_session_free(s);
    cr_assert_gt(n, 10, "%s: only %llu allocations in an iteration", what, (unsigned long long)n);
    int64_t ev = 0, pas = 0, stalls = 0, handled = 0;
    for (uint64_t k = 1; k <= n; k++) {
        s = rtf_open_runtime(c, cap, p, vclock, 0, what);
        tsl_backend *b = backend_of(s);
        cr_assert_eq(tsl_session_step(s, c->x[0], c->y[0], NULL), TSL_OK, "%s", tsl_last_error());
        tsl_alloc_stats before, after;
        b->iface->mem_stats(b, &before);
        b->iface->fail_alloc_at(b, k);
        for (int it = 1; it < ITERS; it++)
            cr_assert_eq(tsl_session_step(s, c->x[it], c->y[it], NULL), TSL_OK,
                         "%s: fault at allocation %llu of %llu: step %d failed: %s", what,
                         (unsigned long long)k, (unsigned long long)n, it + 1, tsl_last_error());
        b->iface->mem_stats(b, &after);
        cr_assert_eq(after.n_failed - before.n_failed, 1,
                     "%s: fault at allocation %llu did not fire once (%llu)", what,
                     (unsigned long long)k, (unsigned long long)(after.n_failed - before.n_failed));
        tsl_runtime_stats rs;
        tsl_session_runtime_stats(s, &rs);
        handled += rs.evictions + rs.passive_swaps + rs.stalls > 0;
        if (!vclock) /* (see the note above sweep) */
            cr_assert_geq(rs.evictions + rs.passive_swaps + rs.stalls, 1,
                          "%s: fault at allocation %llu: no eviction, passive swap-in or wait counted",
                          what, (unsigned long long)k);
        uint64_t ck = tsl_session_param_checksum(s);
        cr_assert_eq(ck, c->ref, "%s: fault at allocation %llu: parameters %016llx differ from %016llx",
                     what, (unsigned long long)k, (unsigned long long)ck, (unsigned long long)c->ref);
        ev += rs.evictions;
        pas += rs.passive_swaps;
        stalls += rs.stalls;
        tsl_session_free(s);
    }
    printf("%s: %llu faults, %lld handled by an eviction, a passive swap-in or a wait (%lld, %lld, "
           "%lld in all); parameters identical after every one\n",
           what, (unsigned long long)n, (long long)handled, (long long)ev, (long long)pas,
           (long long)stalls);
}

Test(faults, every_allocation_of_an_iteration, .timeout = 900) {
    rtf_case c;
    fcase_make(&c, 2);
    tsl_plan *empty = tsl_plan_new("cnn");
    char why[400];
    cr_assert(pg_finish_and_verify(c.w, empty, &c.dev, why, sizeof why), "%s", why);
    sweep(&c, empty, 1, "empty plan, virtual clock");
    sweep(&c, empty, 0, "empty plan, real-time clock");
    tsl_plan *tp = rtf_tensile_plan(&c, c.persistent + (c.ref_peak - c.persistent) / 2);
    cr_assert_gt(tp->n_events, 0);
    sweep(&c, tp, 1, "tensile plan, virtual clock");
    if (!th_quick()) sweep(&c, tp, 0, "tensile plan, real-time clock");
    /* a random plan with both swaps and recomputations */
    pg_opts po = pg_opts_default();
    po.max_items = 8;
    tsl_plan *rp = NULL;
    for (uint64_t seed = 1; seed < 200 && !rp; seed++) {
        pg_stats st;
        tsl_plan *p = pg_random_plan(c.g, c.w, &c.dev, seed, &po, &st);
        cr_assert_not_null(p);
        if (st.swaps >= 2 && st.recomputes >= 1) rp = p;
        else tsl_plan_free(p);
    }
    cr_assert_not_null(rp, "no random plan with swaps and recomputations in 200 seeds");
    sweep(&c, rp, 1, "random plan, virtual clock");
    if (!th_quick()) sweep(&c, rp, 0, "random plan, real-time clock");
    tsl_plan_free(empty);
    tsl_plan_free(tp);
    tsl_plan_free(rp);
    rtf_free(&c);
}

/* ---- budgets below vanilla's peak ------------------------------------------------------ */

/* Checks vanilla's refusal message: it names a tensor of the graph, its
 * size in bytes, the load and the capacity. */
static void check_oom_message(const rtf_case *c, const char *m, size_t capacity) {
    cr_assert(strstr(m, "device out of memory"), "message: %s", m);
    const char *q = strstr(m, "cannot allocate ");
    cr_assert(q, "message does not say what it cannot allocate: %s", m);
    const char *open = strchr(q, '\''), *close = open ? strchr(open + 1, '\'') : NULL;
    cr_assert(open && close, "message does not quote the tensor: %s", m);
    char name[TSL_NAME_MAX];
    snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
    tsl_tid t = tsl_graph_find(c->g, name);
    cr_assert_neq(t, TSL_NONE, "message names '%s', not a tensor of the graph: %s", name, m);
    char size[64];
    snprintf(size, sizeof size, "of %zu bytes", tsl_graph_tensor(c->g, t)->nbytes);
    cr_assert(strstr(m, size), "message does not give the size of '%s' (%s): %s", name, size, m);
    snprintf(size, sizeof size, "of %zu bytes", capacity & ~(size_t)(TSL_ALLOC_ALIGN - 1));
    cr_assert(strstr(m, size), "message does not give the capacity (%s): %s", size, m);
}

/* TENSILE within `budget`: plan, run in a session of exactly `budget`
 * bytes, in both clocks; returns the runtime stats of the virtual run. */
static void tensile_within(const rtf_case *c, size_t budget, const void *popts, const char *what,
                           tsl_runtime_stats *out) {
    tsl_plan *p = rtf_policy_plan(c, "tensile", popts, budget);
    for (int vclock = 1; vclock >= 0; vclock--) {
        tsl_session *s = rtf_open_runtime(c, budget, p, vclock, vclock ? 0 : c->dev.h2d_bw / 1e9, what);
        size_t peak = 0;
        for (int it = 0; it < ITERS; it++) {
            tsl_step_stats st;
            cr_assert_eq(tsl_session_step(s, c->x[it], c->y[it], &st), TSL_OK, "%s (%s clock): step %d: %s",
                         what, vclock ? "virtual" : "real-time", it + 1, tsl_last_error());
            if (st.peak_load > peak) peak = st.peak_load;
        }
        uint64_t ck = tsl_session_param_checksum(s);
        cr_assert_eq(ck, c->ref, "%s (%s clock): parameters %016llx differ from vanilla's %016llx", what,
                     vclock ? "virtual" : "real-time", (unsigned long long)ck, (unsigned long long)c->ref);
        cr_assert_leq(peak, budget, "%s: peak load %zu exceeds the budget %zu", what, peak, budget);
        size_t limit = p->predicted_peak < budget ? p->predicted_peak : budget;
        cr_assert_leq(peak, limit, "%s: strict mode: peak load %zu exceeds min(predicted %zu, budget %zu)",
                      what, peak, p->predicted_peak, budget);
        tsl_runtime_stats rs;
        tsl_session_runtime_stats(s, &rs);
        printf("%s (%s clock): vanilla peak %zu, budget %zu, predicted %zu, measured %zu; %lld swap-outs, "
               "%lld recomputations, %lld evictions, %lld passive swap-ins, %lld stalls\n",
               what, vclock ? "virtual" : "real-time", c->ref_peak, budget, p->predicted_peak, peak,
               (long long)rs.swaps_out, (long long)rs.recomputes, (long long)rs.evictions,
               (long long)rs.passive_swaps, (long long)rs.stalls);
        if (vclock) *out = rs;
        tsl_session_free(s);
    }
    tsl_plan_free(p);
}

Test(faults, budget_below_vanilla_peak, .timeout = 600) {
    rtf_case c;
    fcase_make(&c, 16);
    size_t budget = c.persistent + (c.ref_peak - c.persistent) * 6 / 10;
    cr_assert_lt(budget, c.ref_peak);
    /* vanilla is refused with a clear message, and stays usable */
    tsl_session_opts so = tsl_session_opts_default();
    so.device_memory = budget;
    so.nthreads = 2;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c.g, &so, &s), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_step(s, c.x[0], c.y[0], NULL), TSL_ERR_OOM, "vanilla ran within %zu bytes",
                 budget);
    check_oom_message(&c, tsl_last_error(), budget);
    printf("vanilla in %zu bytes: %s\n", budget, tsl_last_error());
    tsl_session_free(s);
    /* TENSILE completes within it */
    tsl_runtime_stats rs;
    tensile_within(&c, budget, NULL, "tensile at 60% of the activations", &rs);
    rtf_free(&c);
}

/* The least memory any executor needs: the largest working set of one op
 * (its distinct inputs and outputs and its workspace, each block rounded
 * up to the allocator's alignment). */
static size_t least_memory(const tsl_workload *w) {
    size_t best = 0;
    const size_t al = TSL_ALLOC_ALIGN;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        size_t sum = (op->workspace + al - 1) / al * al;
        for (int io = 0; io < 2; io++)
            for (int k = 0; k < (io ? op->n_out : op->n_in); k++) {
                int32_t t = io ? op->out[k] : op->in[k], dup = 0;
                for (int k2 = 0; k2 < op->n_in && (io || k2 < k); k2++) dup |= op->in[k2] == t;
                for (int k2 = 0; io && k2 < k; k2++) dup |= op->out[k2] == t;
                if (!dup) sum += (w->tensors[t].bytes + al - 1) / al * al;
            }
        if (sum > best) best = sum;
    }
    return best;
}

Test(faults, budget_the_planner_cannot_reach, .timeout = 600) {
    rtf_case c;
    fcase_make(&c, 16);
    /* a third of the way from the least memory an op needs (cnn: the
     * update of fc1's weight reads the weight, its gradient and its
     * momentum) to vanilla's peak: room for the fragmentation of the arena */
    size_t least = least_memory(c.w);
    size_t budget = least + (c.ref_peak - least) / 3;
    cr_assert_lt(least, c.ref_peak, "least memory %zu, vanilla peak %zu", least, c.ref_peak);
    /* the paper's plans: planning on to the budget (fit) reaches it */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = 0;
    tsl_plan *p = rtf_policy_plan(&c, "tensile", &to, budget);
    cr_assert_gt(p->predicted_peak, budget, "the planner reaches %zu (predicted %zu): pick a lower budget",
                 budget, p->predicted_peak);
    tsl_plan_free(p);
    tsl_runtime_stats rs;
    tensile_within(&c, budget, &to, "tensile near the least memory", &rs);
    /* the plan alone would pass the budget: the runtime had to wait for
     * swap-outs (strict mode) or evict */
    cr_assert_gt(rs.evictions + rs.passive_swaps + rs.stalls, 0,
                 "below the planned peak, nothing waited and nothing was evicted");
    rtf_free(&c);
}

/* The figure: 60 % of vanilla's peak load for cnn at batch 64 (the
 * demo's training), real-time clock, copy channels throttled to 0.125 GB/s
 * (the A6000's compute-to-PCIe ratio on this CPU, bench/bench_run.c): slow
 * copies make the runtime wait and evict often, and the arena fragments;
 * every iteration must still complete, with vanilla's parameters. */
Test(faults, sixty_percent_with_slow_channels, .timeout = 600) {
    rtf_case c;
    fcase_make(&c, 64);
    int n = th_quick() ? 8 : 40;
    /* vanilla's parameters after n iterations over the 3 batches */
    tsl_session_opts so = tsl_session_opts_default();
    so.device_memory = 2 * c.ref_fp + ((size_t)16 << 20);
    so.nthreads = 2;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c.g, &so, &s), TSL_OK, "%s", tsl_last_error());
    for (int it = 0; it < n; it++)
        cr_assert_eq(tsl_session_step(s, c.x[it % ITERS], c.y[it % ITERS], NULL), TSL_OK, "%s",
                     tsl_last_error());
    uint64_t ref = tsl_session_param_checksum(s);
    tsl_session_free(s);
    size_t budget = c.ref_peak * 6 / 10;
    tsl_plan *p = rtf_tensile_plan(&c, budget);
    s = rtf_open_runtime(&c, budget, p, 0, 0.125, "at 60% with slow channels");
    size_t peak = 0;
    for (int it = 0; it < n; it++) {
        tsl_step_stats st;
        tsl_status rc = tsl_session_step(s, c.x[it % ITERS], c.y[it % ITERS], &st);
        cr_assert_eq(rc, TSL_OK, "iteration %d of %d in %zu bytes (60%% of vanilla's %zu): %s: %s", it + 1,
                     n, budget, c.ref_peak, tsl_status_str(rc), tsl_last_error());
        if (st.peak_load > peak) peak = st.peak_load;
    }
    uint64_t ck = tsl_session_param_checksum(s);
    cr_assert_eq(ck, ref, "parameters %016llx differ from vanilla's %016llx", (unsigned long long)ck,
                 (unsigned long long)ref);
    cr_assert_leq(peak, budget, "peak load %zu exceeds the budget %zu", peak, budget);
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(s, &rs);
    printf("cnn batch 64 in 60%% of vanilla's peak (%zu of %zu bytes), channels 0.125 GB/s: %d iterations, "
           "peak %zu; %lld evictions, %lld passive swap-ins, %lld stalls (%.1f ms)\n",
           budget, c.ref_peak, n, peak, (long long)rs.evictions, (long long)rs.passive_swaps,
           (long long)rs.stalls, rs.stall_ms);
    tsl_session_free(s);
    tsl_plan_free(p);
    rtf_free(&c);
}
