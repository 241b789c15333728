/*
 * test_job.c - one training job in the library (tensile/job.h, src/job/):
 * the path from a graph to a planned, verified, running job, and plan
 * updating decided by the job at the runtime's boundaries (paper IV-E).
 *
 * The job runs bitwise identically to vanilla (invariant 5) under its own
 * plan; drifting latencies (the virtual clock with every op twice as slow)
 * replan once with the paper's rule (patience 1) and the reason names the
 * change rate; noise that flips every iteration is ignored with the
 * default patience of 3, then a steady drift replans at its third
 * boundary; a threshold of 0 replans every iteration in real time; the
 * latency table is the medians of the measured iterations after the first;
 * bad options are refused naming them; a device the plan misses runs down
 * to the job's op floor (with DTR online under the plan too), and one
 * below it is refused naming the op.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs.h"
#include "helpers.h"
#include "runtime/runtime_internal.h"
#include "tensile/job.h"
#include "tensile/models.h"
#include "tensile/policy_tensile.h"
#include "tensile/shdev.h"
#include "tensile/backend_cpu.h"
#include <unistd.h>

#define STEPS 3

typedef struct fixture {
    tsl_graph *g;
    tsl_device_profile dev;   /* CPU-like, memory 0.7 of the vanilla peak */
    float *x[STEPS];
    int32_t *y[STEPS];
} fixture;

static void fx_init(fixture *f) {
    memset(f, 0, sizeof *f);
    f->g = th_small_graph();
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(f->g, (size_t)1 << 30, &r), TSL_OK, "%s", tsl_last_error());
    f->dev = th_cpu_profile((size_t)((double)r.peak_load * 0.7));
    for (int s = 0; s < STEPS; s++) {
        f->x[s] = malloc(sizeof(float) * 8 * 12);
        f->y[s] = malloc(sizeof(int32_t) * 8);
        th_fill_f32(f->x[s], 8 * 12, 100 + (uint64_t)s, -1, 1);
        for (int i = 0; i < 8; i++) f->y[s][i] = (int32_t)((i * 7 + s) % 5);
    }
}

static void fx_free(fixture *f) {
    for (int s = 0; s < STEPS; s++) {
        free(f->x[s]);
        free(f->y[s]);
    }
    tsl_graph_free(f->g);
}

static uint64_t vanilla_checksum(const fixture *f) {
    tsl_session_opts o = th_session_opts();
    o.device_memory = (size_t)1 << 30;
    o.kernels = TSL_KERNELS_REF;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(f->g, &o, &s), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_session_step(s, f->x[i], f->y[i], NULL), TSL_OK, "%s", tsl_last_error());
    uint64_t h = tsl_session_param_checksum(s);
    tsl_session_free(s);
    return h;
}

/* A job on the fixture: reference kernels, 1 GiB device, planned with the
 * fixture's profile within its memory, the cost model's latencies, the
 * policy's options popts (NULL: its defaults; they must outlive the job). */
static tsl_job *open_job_with(const fixture *f, int virtual_clock, const tsl_replan_opts *rp,
                              const void *popts) {
    tsl_job_opts o = tsl_job_opts_default();
    o.session = th_session_opts();
    o.session.device_memory = (size_t)1 << 30;
    o.session.kernels = TSL_KERNELS_REF;
    o.device_profile = &f->dev;
    o.plan.budget = f->dev.mem_bytes;
    o.plan.opts = popts;
    o.runtime.virtual_clock = virtual_clock;
    if (rp) o.replan = *rp;
    tsl_job *j = NULL;
    cr_assert_eq(tsl_job_new(f->g, &o, &j), TSL_OK, "%s", tsl_last_error());
    return j;
}

/* open_job_with the policy's defaults. */
static tsl_job *open_job(const fixture *f, int virtual_clock, const tsl_replan_opts *rp) {
    return open_job_with(f, virtual_clock, rp, NULL);
}

/* Op latencies k times the workload's. */
static void scaled(const tsl_job *j, double k, double *lat) {
    const tsl_workload *w = tsl_job_workload(j);
    for (int32_t i = 0; i < w->n_ops; i++) lat[i] = k * (w->ops[i].end_us - w->ops[i].start_us);
}

Test(job, runs_its_plan_bitwise_identical_to_vanilla) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    for (int vc = 0; vc <= 1; vc++) {
        tsl_job *j = open_job(&f, vc, NULL);
        tsl_job_stats js;
        tsl_job_get_stats(j, &js);
        cr_assert_gt(js.swaps, 0, "the plan at 70%% of vanilla's peak swaps nothing");
        cr_assert_lt(js.planned_peak, js.vanilla_peak);
        for (int i = 0; i < STEPS; i++) {
            tsl_step_stats st;
            cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], &st), TSL_OK, "%s", tsl_last_error());
            if (vc) cr_assert_eq(st.peak_load, tsl_job_plan(j)->predicted_peak);
        }
        cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), van, "virtual clock %d", vc);
        tsl_job_get_stats(j, &js);
        cr_assert_eq(js.runtime.plans_installed, 1);
        cr_assert_gt(js.runtime.swaps_out, 0);
        tsl_job_free(j);
    }
    fx_free(&f);
}

Test(job, replan_when_latencies_drift_virtual) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    tsl_replan_opts rp = {.enabled = 1, .threshold = 0.3, .patience = 1}; /* the paper's rule */
    tsl_job *j = open_job(&f, 1, &rp);
    tsl_session *s = tsl_job_session(j);
    int32_t n = tsl_job_workload(j)->n_ops;
    double *lat = malloc(sizeof *lat * (size_t)n), *base = malloc(sizeof *base * (size_t)n);
    scaled(j, 1.0, base);
    scaled(j, 2.0, lat); /* everything twice as slow */
    cr_assert_eq(tsl__session_set_virtual_latency(s, lat), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
    tsl_job_stats js;
    tsl_job_get_stats(j, &js);
    printf("  reason: %s\n", js.last_replan_reason);
    cr_assert_eq(tsl_session_param_checksum(s), van);
    /* step 1: rate 0.9 (EWMA 0.9 of 2x) > 0.3: replan; the new plan is made
     * with the estimates, so step 2 (and 3, 0.9*2 + 0.1*1.9 vs 1.99) stay */
    cr_assert_eq(js.replans, 1, "%lld replans", (long long)js.replans);
    cr_assert(strstr(js.last_replan_reason, "change rate 0.900") != NULL, "%s", js.last_replan_reason);
    cr_assert_eq(js.runtime.plans_installed, 2, "the replan took effect at the next boundary");
    double *ew = malloc(sizeof *ew * (size_t)n);
    tsl_latency_report lr;
    cr_assert_eq(tsl_session_latency_snapshot(s, ew, &lr), TSL_OK);
    for (int32_t i = 0; i < n; i++) /* after 3 samples of 2x: 1.999x */
        cr_assert(fabs(ew[i] - 1.999 * base[i]) <= 1e-9 * (1.0 + lat[i]), "op %d: %g vs %g", i,
                  ew[i], 1.999 * base[i]);
    cr_assert_eq(lr.iteration, STEPS);
    free(ew);
    free(lat);
    free(base);
    tsl_job_free(j);
    fx_free(&f);
}

/* A plan that holds the device is not traded for one that does not: with
 * every op 20 times faster the copies no longer hide, the best plan for
 * the new latencies needs more than the budget, and the current plan (in
 * the budget) stays - the failure says why; nothing is evicted. */
Test(job, replan_keeps_a_plan_within_the_budget_virtual) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    tsl_replan_opts rp = {.enabled = 1, .threshold = 0.3, .patience = 1};
    /* the paper's plans (no planning on to the budget, whose greedy choices
     * need not give back a plan within the footprint it was planned to) */
    tsl_tensile_opts to = tsl_tensile_opts_default();
    to.fit = 0;
    tsl_job *j = open_job_with(&f, 1, &rp, &to);
    tsl_job_stats js;
    tsl_job_get_stats(j, &js); /* the budget: this plan's footprint */
    tsl_job_free(j);
    f.dev.mem_bytes = js.planned_footprint;
    j = open_job_with(&f, 1, &rp, &to);
    tsl_job_get_stats(j, &js);
    cr_assert(js.budget_met, "the first plan is not within the budget");
    cr_assert_gt(js.swaps, 0);
    tsl_session *s = tsl_job_session(j);
    int32_t n = tsl_job_workload(j)->n_ops;
    double *lat = malloc(sizeof *lat * (size_t)n);
    scaled(j, 0.05, lat);
    cr_assert_eq(tsl__session_set_virtual_latency(s, lat), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
    tsl_job_get_stats(j, &js);
    printf("  reason: %s\n", js.last_replan_reason);
    cr_assert_eq(tsl_session_param_checksum(s), van);
    cr_assert_eq(js.replans, 0, "%lld replans", (long long)js.replans);
    char want[96];
    snprintf(want, sizeof want, "> budget %zu; the current plan (%zu) stays", js.planned_footprint,
             js.planned_footprint);
    cr_assert(strstr(js.last_replan_reason, want) != NULL, "%s", js.last_replan_reason);
    cr_assert_eq(js.runtime.plans_installed, 1);
    cr_assert_eq(js.runtime.evictions, 0, "%lld evictions", (long long)js.runtime.evictions);
    free(lat);
    tsl_job_free(j);
    fx_free(&f);
}

/* Hysteresis: latencies that jump to 2x and back every other iteration
 * (noise) never keep the change rate above the threshold for 3 boundaries
 * in a row: no replan, each jump counted as ignored drift. Then 3
 * iterations at a steady 2x: one replan, at the third. */
Test(job, replan_waits_for_drift_that_lasts_virtual) {
    fixture f;
    fx_init(&f);
    tsl_job_opts def = tsl_job_opts_default();
    cr_assert_eq(def.replan.patience, 3, "default patience %d", def.replan.patience);
    tsl_job *j = open_job(&f, 1, NULL);
    int32_t n = tsl_job_workload(j)->n_ops;
    double *lat = malloc(sizeof *lat * (size_t)n);
    tsl_job_stats js;
    for (int i = 0; i < 9; i++) {
        scaled(j, i < 6 ? (i % 2 == 0 ? 2.0 : 1.0) : 2.0, lat);
        cr_assert_eq(tsl__session_set_virtual_latency(tsl_job_session(j), lat), TSL_OK, "%s",
                     tsl_last_error());
        cr_assert_eq(tsl_job_step(j, f.x[i % STEPS], f.y[i % STEPS], NULL), TSL_OK, "step %d: %s",
                     i + 1, tsl_last_error());
        tsl_job_get_stats(j, &js);
        if (i < 8) cr_assert_eq(js.replans, 0, "step %d: %lld replans", i + 1, (long long)js.replans);
    }
    printf("  reason: %s; drift ignored %lld times\n", js.last_replan_reason,
           (long long)js.drift_ignored);
    cr_assert_eq(js.replans, 1, "%lld replans", (long long)js.replans);
    cr_assert(strstr(js.last_replan_reason, "for 3 iterations") != NULL, "%s", js.last_replan_reason);
    /* steps 1, 3, 5 (noise) and 7, 8 (the steady drift before it counts) */
    cr_assert_eq(js.drift_ignored, 5, "drift ignored %lld times", (long long)js.drift_ignored);
    free(lat);
    tsl_job_free(j);
    fx_free(&f);
}

Test(job, replan_every_iteration_with_threshold_zero_real) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    tsl_replan_opts rp = {.enabled = 1, .threshold = 0.0, .patience = 1};
    tsl_job *j = open_job(&f, 0, &rp);
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
    tsl_job_stats js;
    tsl_job_get_stats(j, &js);
    printf("  reason: %s\n", js.last_replan_reason);
    cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), van);
    /* every boundary replans; under slow real kernels (a sanitizer build) a
     * new plan may not fit the budget and is refused, the plan in force
     * staying (replan_keeps_a_plan_within_the_budget) */
    cr_assert_geq(js.replans + js.replans_refused, 2, "%lld replans, %lld refused",
                  (long long)js.replans, (long long)js.replans_refused);
    cr_assert(strstr(js.last_replan_reason, "change rate") != NULL, "%s", js.last_replan_reason);
    tsl_job_free(j);
    fx_free(&f);
}

/* No replanning: the first plan stays whatever the latencies do. */
Test(job, replanning_off_keeps_the_first_plan) {
    fixture f;
    fx_init(&f);
    tsl_replan_opts rp = {.enabled = 0};
    tsl_job *j = open_job(&f, 1, &rp);
    int32_t n = tsl_job_workload(j)->n_ops;
    double *lat = malloc(sizeof *lat * (size_t)n);
    scaled(j, 3.0, lat);
    cr_assert_eq(tsl__session_set_virtual_latency(tsl_job_session(j), lat), TSL_OK);
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
    tsl_job_stats js;
    tsl_job_get_stats(j, &js);
    cr_assert_eq(js.replans, 0);
    cr_assert_eq(js.drift_ignored, 0);
    cr_assert_eq(js.runtime.plans_installed, 1);
    free(lat);
    tsl_job_free(j);
    fx_free(&f);
}

Test(job, latency_medians_leave_out_the_first_iteration) {
    /* 3 iterations of 2 ops: op 0 took 9, 1, 3 ms; op 1 took 5, 0, 0 ms */
    const double ms[] = {9, 5, 1, 0, 3, 0};
    double us[2];
    cr_assert_eq(tsl_job_latency_medians(ms, 3, 2, us), TSL_OK);
    cr_assert_eq(us[0], 2000.0, "median of 1 and 3 ms: %g us", us[0]);
    cr_assert_eq(us[1], 0.001, "a zero median becomes the smallest duration: %g", us[1]);
    cr_assert_eq(tsl_job_latency_medians(ms, 1, 2, us), TSL_OK);
    cr_assert_eq(us[0], 9000.0, "one iteration is its own median");
    cr_assert_eq(tsl_job_latency_medians(ms, 0, 2, us), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "0 iterations"), "%s", tsl_last_error());
}

Test(job, bad_options_are_named) {
    fixture f;
    fx_init(&f);
    tsl_job_opts o = tsl_job_opts_default();
    o.replan.patience = 0;
    tsl_job *j = NULL;
    cr_assert_eq(tsl_job_new(f.g, &o, &j), TSL_ERR_INVALID);
    cr_assert_null(j);
    cr_assert(strstr(tsl_last_error(), "patience 0"), "%s", tsl_last_error());
    o = tsl_job_opts_default();
    o.profile = "no-such-profile";
    cr_assert_neq(tsl_job_new(f.g, &o, &j), TSL_OK);
    cr_assert(strstr(tsl_last_error(), "no-such-profile"), "%s", tsl_last_error());
    o = tsl_job_opts_default();
    o.session.device_memory = 1024; /* below fc1's update: its weight, gradient, momentum */
    cr_assert_eq(tsl_job_new(f.g, &o, &j), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "out of memory") && strstr(tsl_last_error(), "op floor"),
              "%s", tsl_last_error());
    fx_free(&f);
}

/* A job planned elsewhere (a daemon's): its workload built before it has a
 * device, planned by the caller on half of the channels, followed bitwise
 * identically to vanilla; a second plan (other latencies, the whole
 * channels) set between steps takes effect at the next boundary; a plan
 * that does not verify against the job's profile is refused and the
 * current one stays. */
Test(job, follows_plans_made_elsewhere) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    for (int vc = 0; vc <= 1; vc++) {
        tsl_job_opts o = tsl_job_opts_default();
        o.session = th_session_opts();
        o.session.device_memory = (size_t)1 << 30;
        o.session.kernels = TSL_KERNELS_REF;
        o.runtime.virtual_clock = vc;
        tsl_device_profile half = tsl_profile_channel_share(&f.dev, 0.5);
        o.device_profile = &half;
        tsl_workload *w;
        cr_assert_eq(tsl_job_workload_new(f.g, &o, &half, &w), TSL_OK, "%s", tsl_last_error());
        double share = 0.5;
        tsl_plan_opts po = tsl_plan_opts_default();
        po.budget = f.dev.mem_bytes;
        po.channel_share = &share;
        tsl_plan *p;
        tsl_status ps = tsl_plan_jobs(&w, 1, &f.dev, &po, &p, NULL);
        cr_assert(ps == TSL_OK || ps == TSL_ERR_BUDGET, "%s", tsl_last_error());
        cr_assert_gt(p->n_events, 0, "the plan swaps");
        tsl_job *j;
        cr_assert_eq(tsl_job_new_planned(f.g, &o, w, p, &j), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_job_step(j, f.x[0], f.y[0], NULL), TSL_OK, "%s", tsl_last_error());
        int64_t seen = tsl_job_plans_installed(j);
        cr_assert_eq(seen, 1);
        /* a second plan: latencies 1.5 times, the whole channels */
        tsl_workload *w2 = tsl_workload_copy(tsl_job_workload(j), NULL);
        cr_assert(w2);
        for (int32_t i = 0; i < w2->n_ops; i++) {
            w2->ops[i].start_us *= 1.5;
            w2->ops[i].end_us *= 1.5;
        }
        w2->period_us *= 1.5;
        tsl_plan_opts po2 = tsl_plan_opts_default();
        po2.budget = f.dev.mem_bytes;
        tsl_plan *p2;
        ps = tsl_plan_jobs(&w2, 1, &f.dev, &po2, &p2, NULL);
        cr_assert(ps == TSL_OK || ps == TSL_ERR_BUDGET, "%s", tsl_last_error());
        /* verified against the half profile, a full-bandwidth plan may
         * fail: set against its own profile it is taken */
        cr_assert_eq(tsl_job_set_plan(j, w2, p2, &f.dev), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_job_plans_installed(j), seen, "not before the boundary");
        for (int i = 1; i < STEPS; i++)
            cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
        cr_assert_eq(tsl_job_plans_installed(j), seen + 1, "in force after the boundary");
        cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), van, "virtual clock %d", vc);
        /* a plan for another graph's workload is refused, the plan stays */
        tsl_workload *bad = tsl_workload_copy(tsl_job_workload(j), NULL);
        tsl_plan *pb = tsl_plan_new(bad->job);
        tsl_event e = {TSL_EV_RELEASE, 0, -1, 0.0, -1}; /* releases the input before its read */
        cr_assert_eq(tsl_plan_add(pb, e), TSL_OK);
        cr_assert_eq(tsl_job_set_plan(j, bad, pb, NULL), TSL_ERR_INVALID);
        cr_assert(strstr(tsl_last_error(), "fails verification"), "%s", tsl_last_error());
        tsl_job_free(j);
    }
    fx_free(&f);
}

/* A job whose device grows between iterations (a daemon's grant: the
 * shared device's region raised, the arena grown, a plan that needs the
 * room set for the next boundary) uses all of it: the runtime takes the
 * device's capacity anew at every iteration, so the new plan's peak is not
 * held to the old capacity (it was: every iteration evicted). */
Test(job, a_device_grown_between_iterations_is_used) {
    enum { N = 256 };
    tsl_graph *g = th_wide_graph(N);
    static float x[N * 64];
    static int32_t y[N];
    th_fill_f32(x, N * 64, 5, -1, 1);
    for (int i = 0; i < N; i++) y[i] = i % 10;
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 30, &r), TSL_OK);
    uint64_t van;
    {
        tsl_session_opts so = th_session_opts();
        so.device_memory = (size_t)1 << 30;
        so.kernels = TSL_KERNELS_REF;
        tsl_session *s;
        cr_assert_eq(tsl_session_new(g, &so, &s), TSL_OK, "%s", tsl_last_error());
        for (int i = 0; i < STEPS; i++) cr_assert_eq(tsl_session_step(s, x, y, NULL), TSL_OK);
        van = tsl_session_param_checksum(s);
        tsl_session_free(s);
    }
    char name[64], tag[32];
    snprintf(tag, sizeof tag, "testjob%d", (int)getpid());
    cr_assert_eq(tsl_shdev_name(name, sizeof name, tag), TSL_OK);
    tsl_shdev *sd;
    cr_assert_eq(tsl_shdev_create(name, (size_t)1 << 30, 0, 2, &sd), TSL_OK, "%s", tsl_last_error());
    tsl_job_opts o = tsl_job_opts_default();
    o.session = th_session_opts();
    o.session.kernels = TSL_KERNELS_REF;
    tsl_device_profile dev = th_cpu_profile((size_t)1 << 30);
    o.device_profile = &dev;
    tsl_workload *w;
    cr_assert_eq(tsl_job_workload_new(g, &o, &dev, &w), TSL_OK, "%s", tsl_last_error());
    /* the first plan squeezed to 70 % of vanilla's peak, the second none */
    tsl_plan_opts po = tsl_plan_opts_default();
    po.budget = (size_t)((double)r.peak_load * 0.7);
    tsl_plan *p1, *p2;
    tsl_status ps = tsl_plan_jobs(&w, 1, &dev, &po, &p1, NULL);
    cr_assert(ps == TSL_OK || ps == TSL_ERR_BUDGET, "%s", tsl_last_error());
    tsl_workload *w2 = tsl_workload_copy(w, NULL);
    po.budget = (size_t)1 << 30;
    po.policy = tsl_policy_find("vanilla"); /* the empty plan: vanilla's peak */
    cr_assert_eq(tsl_plan_jobs(&w2, 1, &dev, &po, &p2, NULL), TSL_OK, "%s", tsl_last_error());
    cr_assert_gt(p2->predicted_peak, p1->predicted_footprint, "the second plan needs more room: %zu vs %zu (p1 peak %zu)", p2->predicted_peak, p1->predicted_footprint, p1->predicted_peak);
    cr_assert_eq(tsl_shdev_claim(sd, 0, 1, getpid(), p1->predicted_footprint), TSL_OK);
    tsl_cpu_backend_opts bo = tsl_cpu_backend_opts_default(0);
    bo.kernels = TSL_KERNELS_REF;
    bo.nthreads = o.session.nthreads;
    bo.shdev = sd;
    bo.shdev_slot = 0;
    tsl_backend *b;
    cr_assert_eq(tsl_cpu_backend_new_opts(&bo, &b), TSL_OK, "%s", tsl_last_error());
    o.backend = b;
    tsl_job *j;
    cr_assert_eq(tsl_job_new_planned(g, &o, w, p1, &j), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_job_step(j, x, y, NULL), TSL_OK, "%s", tsl_last_error());
    /* the grant: the region, then the arena, then the plan */
    cr_assert_eq(tsl_shdev_set_region(sd, 0, p2->predicted_footprint), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_cpu_backend_set_capacity(b, p2->predicted_footprint), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(tsl_job_set_plan(j, w2, p2, NULL), TSL_OK, "%s", tsl_last_error());
    for (int i = 1; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, x, y, NULL), TSL_OK, "%s", tsl_last_error());
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(tsl_job_session(j), &rs);
    cr_assert_eq(rs.plans_installed, 2);
    cr_assert_eq(rs.evictions, 0, "%lld evictions on a device that grew", (long long)rs.evictions);
    cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), van);
    tsl_job_free(j);
    tsl_backend_free(b);
    tsl_shdev_close(sd);
    tsl_shdev_unlink(name);
    tsl_graph_free(g);
}

/* ---- cold start (tensile/predict.h) -------------------------------------------- */

#include "tensile/predict.h"

/* A predictor of every op type of g: samples of its own ops at a few
 * utilisations, each op's latency 3 us + its FLOPs / 1e3 (a function of
 * the features the fit can find). */
static tsl_predictor *small_predictor(const tsl_graph *g) {
    int32_t no = tsl_graph_n_ops(g);
    tsl_op_sample *s = calloc((size_t)no * 12, sizeof *s);
    size_t n = 0;
    for (int rep = 0; rep < 12; rep++)
        for (int32_t i = 0; i < no; i++) {
            const tsl_op *op = tsl_graph_op(g, i);
            s[n].type = op->type;
            tsl_op_features(g, op, (rep % 3) / 2.0, s[n].f);
            s[n].latency_us = 3.0 + tsl_op_flops(g, op) / 1e3 + 0.01 * rep;
            n++;
        }
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.epochs = 10;
    tsl_predictor *p;
    cr_assert_eq(tsl_predictor_train(s, n, &o, &p, NULL), TSL_OK, "%s", tsl_last_error());
    free(s);
    return p;
}

Test(job, cold_start_plans_from_predictions_then_the_measured_latencies_take_over_virtual) {
    fixture f;
    fx_init(&f);
    uint64_t van = vanilla_checksum(&f);
    tsl_predictor *p = small_predictor(f.g);
    tsl_job_opts o = tsl_job_opts_default();
    o.session = th_session_opts();
    o.session.device_memory = (size_t)1 << 30;
    o.session.kernels = TSL_KERNELS_REF;
    o.device_profile = &f.dev;
    o.plan.budget = f.dev.mem_bytes;
    o.runtime.virtual_clock = 1;
    o.predictor = p;
    o.utilisation = 0.5;
    o.replan.enabled = 0;   /* no drift replans: only the update */
    o.replan.update_at = 2;
    tsl_job *j;
    cr_assert_eq(tsl_job_new(f.g, &o, &j), TSL_OK, "%s", tsl_last_error());
    /* the first workload is the predictor's, op by op */
    int32_t no = tsl_graph_n_ops(f.g);
    double *pred = malloc(sizeof *pred * (size_t)no), *slow = malloc(sizeof *slow * (size_t)no);
    tsl_predictor_latencies(p, f.g, 0.5, &f.dev, pred);
    const tsl_workload *w = tsl_job_workload(j);
    for (int32_t i = 0; i < no; i++)
        cr_assert(fabs((w->ops[i].end_us - w->ops[i].start_us) - pred[i]) <= 1e-6 * (1 + pred[i]),
                  "op %d: workload %.6f us, predicted %.6f us", i, w->ops[i].end_us - w->ops[i].start_us,
                  pred[i]);
    /* the device is three times slower than predicted */
    for (int32_t i = 0; i < no; i++) slow[i] = 3 * pred[i];
    cr_assert_eq(tsl__session_set_virtual_latency(tsl_job_session(j), slow), TSL_OK, "%s",
                 tsl_last_error());
    tsl_job_stats js;
    for (int i = 0; i < STEPS; i++) {
        cr_assert_eq(tsl_job_step(j, f.x[i], f.y[i], NULL), TSL_OK, "%s", tsl_last_error());
        tsl_job_get_stats(j, &js);
        if (i < 1) cr_assert_eq(js.updated, 0, "updated after iteration %d", i + 1);
    }
    tsl_job_get_stats(j, &js);
    cr_assert_eq(js.updated, 1, "%s", js.last_replan_reason);
    cr_assert_eq(js.updated_at, 2);
    cr_assert_eq(js.replans, 0, "the update is not a drift replan");
    cr_assert_eq(js.runtime.plans_installed, 2, "the updated plan is in force at iteration 3");
    cr_assert(strstr(js.last_replan_reason, "predicted"), "%s", js.last_replan_reason);
    cr_assert_str_eq(js.update_reason, js.last_replan_reason);
    w = tsl_job_workload(j); /* the update's: the measured (EWMA) latencies, near 3x */
    double sw = 0, sp = 0;
    for (int32_t i = 0; i < no; i++) sw += w->ops[i].end_us - w->ops[i].start_us, sp += pred[i];
    cr_assert(sw > 2.5 * sp, "updated workload %.1f us vs predicted %.1f us", sw, sp);
    cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), van);
    tsl_job_free(j);
    /* bad cold-start options are named */
    o.utilisation = 2;
    cr_assert_eq(tsl_job_new(f.g, &o, &j), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "utilisation"), "%s", tsl_last_error());
    o.utilisation = 0;
    o.replan.update_at = -1;
    cr_assert_eq(tsl_job_new(f.g, &o, &j), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "update_at"), "%s", tsl_last_error());
    free(pred);
    free(slow);
    tsl_predictor_free(p);
    fx_free(&f);
}

Test(job, a_daemon_jobs_workload_is_predicted) {
    fixture f;
    fx_init(&f);
    tsl_predictor *p = small_predictor(f.g);
    tsl_job_opts o = tsl_job_opts_default();
    o.session.kernels = TSL_KERNELS_REF;
    o.predictor = p;
    tsl_workload *w;
    cr_assert_eq(tsl_job_workload_new(f.g, &o, &f.dev, &w), TSL_OK, "%s", tsl_last_error());
    int32_t no = tsl_graph_n_ops(f.g);
    double *pred = malloc(sizeof *pred * (size_t)no);
    tsl_predictor_latencies(p, f.g, 0, &f.dev, pred);
    for (int32_t i = 0; i < no; i++)
        cr_assert(fabs((w->ops[i].end_us - w->ops[i].start_us) - pred[i]) <= 1e-6 * (1 + pred[i]));
    tsl_workload_free(w);
    free(pred);
    tsl_predictor_free(p);
    fx_free(&f);
}

/* ---- a device the plan misses ------------------------------------------------------------ */

/* resnet18 (batch 2, 32 px, SGD with momentum) and its vanilla checksum
 * after STEPS steps on fixed batches. */
typedef struct big_case {
    tsl_graph *g;
    float *x;
    int32_t *y;
    uint64_t ref;
    size_t persistent;
} big_case;

static void big_init(big_case *c) {
    memset(c, 0, sizeof *c);
    tsl_model_cfg cfg = tsl_model_cfg_default("resnet18");
    cfg.batch = 2;
    cfg.image_size = 32;
    cfg.n_classes = 10;
    c->g = tsl_graph_new("resnet18");
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(c->g, "resnet18", &cfg, &loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = th_optimizer(0);
    th_train_graph(c->g, loss, &o);
    size_t nx = 2 * 3 * 32 * 32;
    c->x = malloc(sizeof *c->x * nx);
    c->y = malloc(sizeof *c->y * 2);
    cr_assert(c->x && c->y);
    th_fill_f32(c->x, nx, 7, -1, 1);
    c->y[0] = 3, c->y[1] = 8;
    c->persistent = tsl_graph_bytes_of_kind(c->g, TSL_KIND_PARAM) +
                    tsl_graph_bytes_of_kind(c->g, TSL_KIND_OPT_STATE) +
                    tsl_graph_bytes_of_kind(c->g, TSL_KIND_BUFFER);
    tsl_session_opts so = th_session_opts();
    so.device_memory = (size_t)1 << 30;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c->g, &so, &s), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_session_step(s, c->x, c->y, NULL), TSL_OK, "%s", tsl_last_error());
    c->ref = tsl_session_param_checksum(s);
    tsl_session_free(s);
}

static void big_free(big_case *c) {
    free(c->x);
    free(c->y);
    tsl_graph_free(c->g);
}

/* A device above the op floor but below the persistent tensors and the
 * plan's footprint: the job runs (the runtime evicts on demand, the
 * persistent tensors come in from the host), within the device and with
 * vanilla's results; below the floor it is refused at creation, naming
 * the op. Before, the first device was refused as well. */
Test(job, a_device_the_plan_misses_runs_down_to_the_op_floor, .timeout = 600) {
    if (th_quick()) cr_skip_test("resnet18 runs in the release build (TSL_TEST_QUICK is set)");
    big_case c;
    big_init(&c);
    tsl_job_opts o = tsl_job_opts_default();
    o.session = th_session_opts();
    o.session.device_memory = (size_t)1 << 30;
    o.runtime.virtual_clock = 1;
    tsl_workload *w = NULL;
    tsl_device_profile dev = th_cpu_profile(o.session.device_memory);
    cr_assert_eq(tsl_job_workload_new(c.g, &o, &dev, &w), TSL_OK, "%s", tsl_last_error());
    int32_t op;
    size_t floor_bytes = tsl_workload_op_floor(w, &op);
    char op_name[sizeof w->ops[op].name];
    snprintf(op_name, sizeof op_name, "%s", w->ops[op].name);
    tsl_workload_free(w);
    /* the floor and 1 MiB: less than the persistent tensors */
    size_t device = floor_bytes + ((size_t)1 << 20);
    cr_assert_lt(device, c.persistent, "floor %zu, persistent %zu", floor_bytes, c.persistent);
    o.session.device_memory = device;
    tsl_job *j = NULL;
    cr_assert_eq(tsl_job_new(c.g, &o, &j), TSL_OK, "a device of %zu bytes (floor %zu): %s",
                 device, floor_bytes, tsl_last_error());
    tsl_job_stats js;
    tsl_job_get_stats(j, &js);
    cr_assert(!js.budget_met, "the plan fits %zu bytes: the case tests nothing", device);
    for (int i = 0; i < STEPS; i++) {
        tsl_step_stats st;
        cr_assert_eq(tsl_job_step(j, c.x, c.y, &st), TSL_OK, "step %d: %s", i + 1, tsl_last_error());
        cr_assert_leq(st.peak_footprint, device, "step %d: footprint %zu on a device of %zu",
                      i + 1, st.peak_footprint, device);
    }
    cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), c.ref,
                 "parameters differ from vanilla's");
    tsl_runtime_stats rs;
    tsl_session_runtime_stats(tsl_job_session(j), &rs);
    cr_assert_gt(rs.evictions + rs.passive_swaps, 0, "nothing was evicted or brought in passively");
    printf("resnet18 b2 on %zu bytes (op floor %zu, persistent %zu): %lld evictions, %lld passive "
           "swap-ins, vanilla's results\n", device, floor_bytes, c.persistent,
           (long long)rs.evictions, (long long)rs.passive_swaps);
    tsl_job_free(j);
    /* the same device with DTR online under the plan (runtime.remat, online
     * placement): a rematerialisation whose workspace could not be placed
     * left its tensor allocated and unwritten, and the retry of the op that
     * read it stopped with "is being generated" (before the fix, at this
     * device on the virtual clock) */
    o.runtime.remat = 1;
    o.runtime.online_placement = 1;
    j = NULL;
    cr_assert_eq(tsl_job_new(c.g, &o, &j), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(tsl_job_step(j, c.x, c.y, NULL), TSL_OK, "DTR under the plan, step %d: %s",
                     i + 1, tsl_last_error());
    cr_assert_eq(tsl_session_param_checksum(tsl_job_session(j)), c.ref,
                 "DTR under the plan: parameters differ from vanilla's");
    tsl_session_runtime_stats(tsl_job_session(j), &rs);
    cr_assert_gt(rs.drops, 0, "DTR under the plan dropped nothing");
    printf("  with DTR online under the plan: %lld drops, %lld rematerialisations, %lld evictions, "
           "vanilla's results\n", (long long)rs.drops, (long long)rs.remats,
           (long long)rs.evictions);
    tsl_job_free(j);
    o.runtime.remat = 0;
    o.runtime.online_placement = 0;
    /* one byte below the floor */
    o.session.device_memory = floor_bytes - 1;
    j = NULL;
    cr_assert_eq(tsl_job_new(c.g, &o, &j), TSL_ERR_OOM);
    cr_assert_null(j);
    cr_assert(strstr(tsl_last_error(), "op floor") && strstr(tsl_last_error(), op_name),
              "%s", tsl_last_error());
    big_free(&c);
}
