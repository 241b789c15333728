/*
 * test_placement.c - the runtime puts every block where the plan's layout
 * says (src/runtime/placement.c; tensile/plan.h, "tsl_plan_block"), and
 * when it cannot, compute waits rather than the footprint growing.
 *
 * Models: cnn (Fashion-MNIST shape) and resnet18 at batch 2, 32x32 (not
 * under TSL_TEST_QUICK: the sanitizer builds), with TENSILE's plans half
 * way from the persistent bytes to vanilla's peak (swaps), on the virtual
 * clock unless said otherwise. What is proved:
 *  - exact: every iteration, the first included (no cold start under a
 *    layout), holds the plan's predicted footprint and peak load to the
 *    byte; nothing waits for a place, nothing is displaced; parameters
 *    bitwise identical to vanilla's;
 *  - a held place makes compute wait: with swap-outs 16 times slower
 *    than planned, releases wait for their copies and later blocks find
 *    their places held; compute waits (stalls counted) and the footprint
 *    never passes the predicted one; nothing is displaced, evicted or
 *    swapped in passively;
 *  - evictions return to their places: under a strict limit below the
 *    plan's peak, the executor evicts, and the tensors it brings back
 *    (passive swap-ins) go to the places of their current residencies: the
 *    footprint stays within the predicted one, nothing is displaced;
 *  - a new plan at a boundary: the persistent tensors move to the new
 *    layout's places (device-to-device), and the first iteration under it
 *    is already exact;
 *  - an evaluation between steps (online, vanilla) leaves the next
 *    iteration exact;
 *  - a backend without alloc_at: layouts are ignored, the run is as before
 *    (exact peak load, identical parameters, nothing placed);
 *  - real time with throttled channels: identical parameters, the load
 *    within the plan's peak, what was displaced counted.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "rt_fixture.h"
#include "plan_gen.h"
#include "runtime/runtime_internal.h"
#include "tensile/backend_cpu.h"
#include "tensile/policy.h"
#include "tensile/policy_tensile.h"
#include "tensile/runtime.h"

#define ITERS RTF_ITERS

/* cnn with its updates after the backward pass (TH_UPDATES_AFTER): with
 * them in the backward (the default) the update of fc1's weight (weight,
 * gradient, momentum: one op's working set) is nearly all of vanilla's
 * peak, so the devices this test takes as fractions of the activations
 * would be below what that op needs. */
static void make_case_with(rtf_case *c, const char *model, int adam) {
    if (!strcmp(model, "cnn")) adam |= TH_UPDATES_AFTER;
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = 2;
    cfg.n_classes = 10;
    if (strcmp(model, "cnn") != 0) cfg.image_size = 32;
    rtf_make(c, model, &cfg, adam);
    for (int k = 0; k < ITERS; k++) {
        th_fill_f32(c->x[k], c->nx, 500 + (uint64_t)k, -1, 1);
        for (size_t i = 0; i < c->ny; i++) c->y[k][i] = (int32_t)((i * 3 + (size_t)k) % 10);
    }
    rtf_reference(c);
}

static void make_case(rtf_case *c, const char *model) { make_case_with(c, model, 0); }

/* TENSILE half way from the persistent bytes to vanilla's peak (paper:
 * the paper's plan, fit 0, every swap the channels hide; else only those
 * the budget needs). */
static tsl_plan *half_plan_of(const rtf_case *c, int paper) {
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = !paper;
    tsl_plan *p = rtf_policy_plan(c, "tensile", &to,
                                  c->persistent + (c->ref_peak - c->persistent) / 2);
    cr_assert_gt(p->n_blocks, 0, "%s: the plan has no layout", c->model);
    cr_assert_gt(p->n_events, 0, "%s: the plan moves nothing", c->model);
    return p;
}

static tsl_plan *half_plan(const rtf_case *c) { return half_plan_of(c, 0); }

typedef struct run_out {
    size_t peak[ITERS], fp[ITERS];
    tsl_runtime_stats rs;
    int64_t place_waits, place_moves;
    uint64_t checksum;
} run_out;

typedef struct run_cfg {
    int vclock;
    double gbps;                /* real time: the channels' throttle */
    double d2h_slow;            /* > 1: the runtime's swap-outs take this much longer */
    size_t limit_cut;           /* the strict limit this much below the plan's peak */
    const tsl_plan *second;     /* installed after the first iteration */
    int eval_after;             /* an evaluation after this iteration (1-based; 0: none) */
    tsl_backend *backend;       /* the session's backend (NULL: its own CPU backend) */
} run_cfg;

static tsl_session *open_session(const rtf_case *c, const tsl_plan *p, const run_cfg *k) {
    tsl_session_opts so = th_session_opts();
    so.device_memory = 2 * c->ref_fp + ((size_t)16 << 20);
    so.nthreads = 2;
    so.pcie_gbps = k->gbps;
    tsl_session *s = NULL;
    if (k->backend)
        cr_assert_eq(tsl_session_new_on(c->g, k->backend, &so, &s), TSL_OK, "%s", tsl_last_error());
    else
        cr_assert_eq(tsl_session_new(c->g, &so, &s), TSL_OK, "%s", tsl_last_error());
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.virtual_clock = k->vclock;
    ro.profile = c->dev;
    if (k->d2h_slow > 1) ro.profile.d2h_bw /= k->d2h_slow;
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, c->w), TSL_OK, "%s", tsl_last_error());
    if (k->limit_cut || k->d2h_slow > 1) { /* not the plan the runtime's profile would verify */
        tsl_plan *q = tsl_plan_new(p->job);
        cr_assert_not_null(q);
        for (int32_t e = 0; e < p->n_events; e++) cr_assert_eq(tsl_plan_add(q, p->events[e]), TSL_OK);
        q->predicted_peak = p->predicted_peak - k->limit_cut;
        q->predicted_period_us = p->predicted_period_us;
        q->blocks = malloc((size_t)p->n_blocks * sizeof *q->blocks);
        cr_assert_not_null(q->blocks);
        memcpy(q->blocks, p->blocks, (size_t)p->n_blocks * sizeof *q->blocks);
        q->n_blocks = p->n_blocks;
        q->layout_align = p->layout_align;
        q->predicted_footprint = p->predicted_footprint;
        cr_assert_eq(tsl__session_set_plan_unverified(s, q), TSL_OK, "%s", tsl_last_error());
        tsl_plan_free(q);
    } else {
        cr_assert_eq(tsl_session_set_plan(s, p), TSL_OK, "%s", tsl_last_error());
    }
    return s;
}

static void run(const rtf_case *c, const tsl_plan *p, const run_cfg *k, run_out *o) {
    memset(o, 0, sizeof *o);
    tsl_session *s = open_session(c, p, k);
    for (int i = 0; i < ITERS; i++) {
        if (i == 1 && k->second)
            cr_assert_eq(tsl_session_set_plan(s, k->second), TSL_OK, "%s", tsl_last_error());
        tsl_step_stats st;
        cr_assert_eq(tsl_session_step(s, c->x[i], c->y[i], &st), TSL_OK, "%s step %d: %s", c->model,
                     i + 1, tsl_last_error());
        o->peak[i] = st.peak_load;
        o->fp[i] = st.peak_footprint;
        if (k->eval_after == i + 1) {
            tsl_step_stats es;
            cr_assert_eq(tsl_session_eval(s, c->x[i], c->y[i], &es), TSL_OK, "%s", tsl_last_error());
        }
    }
    tsl_session_runtime_stats(s, &o->rs);
    o->place_waits = s->rt->place_waits;
    o->place_moves = s->rt->place_moves;
    o->checksum = tsl_session_param_checksum(s);
    tsl_session_free(s);
}

static void print_run(const rtf_case *c, const char *what, const tsl_plan *p, const run_out *o) {
    printf("%-8s %-24s footprint %zu/%zu/%zu (predicted %zu), peak load %zu/%zu/%zu (predicted "
           "%zu) | place waits %lld, displaced %lld, evictions %lld, passive %lld, stalls %lld "
           "(%.3f ms)\n",
           c->model, what, o->fp[0], o->fp[1], o->fp[2], p->predicted_footprint, o->peak[0],
           o->peak[1], o->peak[2], p->predicted_peak, (long long)o->place_waits,
           (long long)o->rs.displaced, (long long)o->rs.evictions, (long long)o->rs.passive_swaps,
           (long long)o->rs.stalls, o->rs.stall_ms);
}

/* Every iteration from `from` (0-based) holds exactly p's footprint and
 * peak; nothing waited for a place or was displaced; vanilla's results. */
static void check_exact(const rtf_case *c, const tsl_plan *p, const run_out *o, int from,
                        const char *what) {
    cr_assert_eq(o->checksum, c->ref, "%s %s: parameters differ from vanilla's", c->model, what);
    for (int i = from; i < ITERS; i++) {
        cr_assert_eq(o->fp[i], p->predicted_footprint, "%s %s: iteration %d footprint %zu, predicted %zu",
                     c->model, what, i + 1, o->fp[i], p->predicted_footprint);
        cr_assert_eq(o->peak[i], p->predicted_peak, "%s %s: iteration %d peak load %zu, predicted %zu",
                     c->model, what, i + 1, o->peak[i], p->predicted_peak);
    }
    cr_assert_eq(o->place_waits, 0, "%s %s: %lld allocations found their place held", c->model,
                 what, (long long)o->place_waits);
    cr_assert_eq(o->rs.displaced, 0, "%s %s: %lld displaced", c->model, what,
                 (long long)o->rs.displaced);
}

/* ---- exact on the virtual clock ------------------------------------------------------------ */

static void check_plain(const char *model) {
    rtf_case c;
    make_case(&c, model);
    tsl_plan *p = half_plan(&c);
    run_cfg k = {.vclock = 1};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "tensile", p, &o);
    check_exact(&c, p, &o, 0, "tensile");
    cr_assert_eq(o.rs.stalls, 0);
    printf("%-8s vanilla footprint %zu, tensile %zu predicted and measured (peak load %zu vs "
           "%zu)\n",
           model, c.ref_fp, p->predicted_footprint, c.ref_peak, p->predicted_peak);
    tsl_plan_free(p);
    rtf_free(&c);
}

Test(placement, exact_cnn) { check_plain("cnn"); }
Test(placement, exact_resnet18, .timeout = 300) {
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    check_plain("resnet18");
}

/* ---- a held place: compute waits, the footprint does not grow ------------------------------------ */

static void check_held(const char *model) {
    rtf_case c;
    make_case(&c, model);
    tsl_plan *p = half_plan_of(&c, 1); /* many swap-outs, so that some are late */
    run_cfg k = {.vclock = 1, .d2h_slow = 16};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "swap-outs 16x slower", p, &o);
    cr_assert_eq(o.checksum, c.ref, "%s: parameters differ from vanilla's", model);
    cr_assert_gt(o.place_waits, 0, "%s: no block found its place held", model);
    cr_assert_gt(o.rs.stalls, 0, "%s: compute never waited", model);
    cr_assert_eq(o.rs.displaced, 0, "%s: %lld displaced", model, (long long)o.rs.displaced);
    /* a swap-in due while its tensor's swap-out is late brings it to its
     * place once the release is done: nothing is kept where a later block
     * goes (evicted, then swapped in passively) */
    cr_assert_eq(o.rs.evictions, 0, "%s: %lld evictions", model, (long long)o.rs.evictions);
    cr_assert_eq(o.rs.passive_swaps, 0, "%s: %lld passive swap-ins", model,
                 (long long)o.rs.passive_swaps);
    for (int i = 0; i < ITERS; i++) {
        cr_assert_leq(o.fp[i], p->predicted_footprint, "%s: iteration %d footprint %zu > %zu", model,
                      i + 1, o.fp[i], p->predicted_footprint);
        cr_assert_leq(o.peak[i], p->predicted_peak, "%s: iteration %d peak load %zu > %zu", model,
                      i + 1, o.peak[i], p->predicted_peak);
    }
    tsl_plan_free(p);
    rtf_free(&c);
}

Test(placement, held_place_waits_cnn) { check_held("cnn"); }
Test(placement, held_place_waits_resnet18, .timeout = 300) {
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    check_held("resnet18");
}

/* ---- evictions come back to their places ------------------------------------------------------------ */

Test(placement, evictions_return_to_their_places, .timeout = 300) {
    rtf_case c;
    make_case(&c, "cnn");
    tsl_plan *p = half_plan(&c);
    run_cfg k = {.vclock = 1, .limit_cut = (p->predicted_peak - c.persistent) / 8};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "limit 1/8 below", p, &o);
    cr_assert_eq(o.checksum, c.ref, "parameters differ from vanilla's");
    cr_assert_gt(o.rs.evictions, 0, "nothing was evicted");
    cr_assert_gt(o.rs.passive_swaps, 0, "nothing came back passively");
    cr_assert_eq(o.rs.displaced, 0, "%lld displaced", (long long)o.rs.displaced);
    for (int i = 0; i < ITERS; i++) {
        cr_assert_leq(o.fp[i], p->predicted_footprint, "iteration %d footprint %zu > %zu", i + 1,
                      o.fp[i], p->predicted_footprint);
        cr_assert_leq(o.peak[i], p->predicted_peak - k.limit_cut, "iteration %d above the limit",
                      i + 1);
    }
    tsl_plan_free(p);
    rtf_free(&c);
}

/* ---- boundaries: a new plan, an evaluation -------------------------------------------------------- */

/* A copy of p with its layout moved up by `shift` bytes (a multiple of the
 * alignment): as valid, every block elsewhere. */
static tsl_plan *shifted(const tsl_plan *p, size_t shift) {
    tsl_plan *q = tsl_plan_new(p->job);
    cr_assert_not_null(q);
    for (int32_t e = 0; e < p->n_events; e++) cr_assert_eq(tsl_plan_add(q, p->events[e]), TSL_OK);
    q->predicted_peak = p->predicted_peak;
    q->predicted_period_us = p->predicted_period_us;
    q->blocks = malloc((size_t)p->n_blocks * sizeof *q->blocks);
    cr_assert_not_null(q->blocks);
    for (int32_t i = 0; i < p->n_blocks; i++) {
        q->blocks[i] = p->blocks[i];
        q->blocks[i].offset += shift;
    }
    q->n_blocks = p->n_blocks;
    q->layout_align = p->layout_align;
    q->predicted_footprint = p->predicted_footprint + shift;
    return q;
}

Test(placement, a_new_plan_moves_the_persistent_tensors, .timeout = 300) {
    rtf_case c;
    make_case(&c, "cnn");
    tsl_plan *a = half_plan(&c);
    /* half the footprint up: some persistent tensors move to free places
     * (device-to-device), others overlap their own blocks (through the host) */
    size_t shift = a->predicted_footprint / 2 / TSL_ALLOC_ALIGN * TSL_ALLOC_ALIGN;
    tsl_plan *b = shifted(a, shift);
    run_cfg k = {.vclock = 1, .second = b};
    run_out o;
    run(&c, a, &k, &o);
    print_run(&c, "plan a, then b", b, &o);
    cr_assert_eq(o.rs.plans_installed, 2);
    cr_assert_eq(o.fp[0], a->predicted_footprint);
    check_exact(&c, b, &o, 1, "plan b after plan a");
    printf("cnn      %lld persistent tensors moved on the device\n", (long long)o.place_moves);
    cr_assert_gt(o.place_moves, 0, "nothing moved on the device");
    /* and a replan of TENSILE at another budget */
    tsl_plan *d = rtf_tensile_plan(&c, c.persistent + (c.ref_peak - c.persistent) / 4);
    k.second = d;
    run(&c, a, &k, &o);
    print_run(&c, "plan a, then a quarter", d, &o);
    check_exact(&c, d, &o, 1, "a quarter after plan a");
    tsl_plan_free(a);
    tsl_plan_free(b);
    tsl_plan_free(d);
    rtf_free(&c);
}

Test(placement, an_evaluation_leaves_the_places, .timeout = 300) {
    rtf_case c;
    make_case(&c, "cnn");
    tsl_plan *p = half_plan(&c);
    run_cfg k = {.vclock = 1, .eval_after = 1};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "evaluation after step 1", p, &o);
    check_exact(&c, p, &o, 0, "with an evaluation");
    tsl_plan_free(p);
    rtf_free(&c);
}

/* ---- a backend that cannot place ------------------------------------------------------------------ */

Test(placement, a_backend_without_alloc_at_ignores_layouts, .timeout = 300) {
    rtf_case c;
    make_case(&c, "cnn");
    tsl_plan *p = half_plan(&c);
    tsl_cpu_backend_opts bo = tsl_cpu_backend_opts_default(2 * c.ref_fp + ((size_t)16 << 20));
    bo.nthreads = 2;
    tsl_backend *cpu = NULL;
    cr_assert_eq(tsl_cpu_backend_new_opts(&bo, &cpu), TSL_OK, "%s", tsl_last_error());
    struct tsl_backend_i iface = *cpu->iface;
    iface.alloc_at = NULL;
    tsl_backend plain = {.iface = &iface, .context = cpu->context};
    run_cfg k = {.vclock = 1, .backend = &plain};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "no alloc_at", p, &o);
    cr_assert_eq(o.checksum, c.ref, "parameters differ from vanilla's");
    for (int i = 1; i < ITERS; i++)
        cr_assert_eq(o.peak[i], p->predicted_peak, "iteration %d peak load %zu, predicted %zu", i + 1,
                     o.peak[i], p->predicted_peak);
    cr_assert_eq(o.place_waits, 0);
    cr_assert_eq(o.rs.displaced, 0);
    tsl_backend_free(cpu);
    tsl_plan_free(p);
    rtf_free(&c);
}

/* ---- real time ---------------------------------------------------------------------------------- */

Test(placement, real_time_throttled, .timeout = 300) {
    rtf_case c;
    make_case(&c, "cnn");
    tsl_plan *p = half_plan(&c);
    run_cfg k = {.vclock = 0, .gbps = c.dev.h2d_bw / 1e9};
    run_out o;
    run(&c, p, &k, &o);
    print_run(&c, "real time", p, &o);
    cr_assert_eq(o.checksum, c.ref, "parameters differ from vanilla's");
    for (int i = 0; i < ITERS; i++)
        cr_assert_leq(o.peak[i], p->predicted_peak, "iteration %d peak load %zu > %zu", i + 1,
                      o.peak[i], p->predicted_peak);
    if (o.rs.displaced == 0)
        for (int i = 0; i < ITERS; i++)
            cr_assert_leq(o.fp[i], p->predicted_footprint, "iteration %d footprint %zu > %zu with "
                          "nothing displaced", i + 1, o.fp[i], p->predicted_footprint);
    tsl_plan_free(p);
    rtf_free(&c);
}

/* ---- a device smaller than the persistent tensors ------------------------------------------------ */

/* A plan that swaps parameters and optimizer states across iterations
 * needs less memory than they take together. A job's session opens on a
 * device of exactly the plan's footprint: what does not fit waits on the
 * host (session opts.persistent_on_host), the vanilla pass refuses with
 * the out-of-memory message, and once the runtime adopts those copies and
 * follows the plan every iteration holds the predicted footprint, with
 * vanilla's results. */
Test(placement, a_device_smaller_than_the_persistent_tensors, .timeout = 300) {
    /* (in cnn one layer's weight, gradient and momentum outweigh all the
     * rest: no plan goes below its persistent bytes; resnet18's are spread
     * over many layers, and Adam's two states per weight leave while the
     * gradients are made) */
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    rtf_case c;
    make_case_with(&c, "resnet18", 1);
    /* copies fast enough (x100 the fixture's) for the optimizer's states
     * to leave and come back within an iteration */
    tsl_device_profile dev = c.dev;
    dev.h2d_bw *= 100;
    dev.d2h_bw *= 100;
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = c.persistent * 3 / 4;
    tsl_plan *p = NULL;
    tsl_workload *w = c.w;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, NULL)), "%s", tsl_last_error());
    char why[400];
    cr_assert(pg_finish_and_verify(c.w, p, &dev, why, sizeof why), "plan invalid: %s", why);
    cr_assert_lt(p->predicted_footprint, c.persistent,
                 "the plan's footprint %zu (load %zu, %d events) is not below the persistent "
                 "tensors' %zu bytes (vanilla %zu)", p->predicted_footprint, p->predicted_peak,
                 p->n_events, c.persistent, c.ref_peak);
    tsl_session_opts so = th_session_opts();
    so.device_memory = p->predicted_footprint;
    so.nthreads = 2;
    tsl_session *s = NULL;
    cr_assert_eq(tsl_session_new(c.g, &so, &s), TSL_ERR_OOM, "without persistent_on_host");
    so.persistent_on_host = 1;
    cr_assert_eq(tsl_session_new(c.g, &so, &s), TSL_OK, "%s", tsl_last_error());
    { /* the initial values, on the host or not, are those of a roomy device */
        tsl_session_opts ro_ = so;
        ro_.device_memory = 2 * c.persistent;
        ro_.persistent_on_host = 0;
        tsl_session *roomy = NULL;
        cr_assert_eq(tsl_session_new(c.g, &ro_, &roomy), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_session_param_checksum(s), tsl_session_param_checksum(roomy));
        tsl_session_free(roomy);
    }
    tsl_step_stats st;
    cr_assert_eq(tsl_session_step(s, c.x[0], c.y[0], &st), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "wait on the host for a runtime's plan"), "%s",
              tsl_last_error());
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.virtual_clock = 1;
    ro.profile = dev;
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, c.w), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_session_set_plan(s, p), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < ITERS; i++) {
        cr_assert_eq(tsl_session_step(s, c.x[i], c.y[i], &st), TSL_OK, "step %d: %s", i + 1,
                     tsl_last_error());
        cr_assert_eq(st.peak_footprint, p->predicted_footprint, "iteration %d: footprint %zu, "
                     "predicted %zu", i + 1, st.peak_footprint, p->predicted_footprint);
    }
    cr_assert_eq(tsl_session_param_checksum(s), c.ref, "parameters differ from vanilla's");
    printf("resnet18 device of %zu bytes for %zu persistent bytes: footprint as predicted, "
           "vanilla's results\n", p->predicted_footprint, c.persistent);
    tsl_session_free(s);
    tsl_plan_free(p);
    rtf_free(&c);
}
