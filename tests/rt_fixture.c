/* rt_fixture.c - see rt_fixture.h. */
#include "rt_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "plan_gen.h"
#include "tensile/policy.h"
#include "tensile/runtime.h"

tsl_device_profile rtf_cpu_profile(void) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "cpu-test");
    d.flops = 5e10;
    d.mem_bw = 1e10;
    d.mem_bytes = (size_t)64 << 30;
    d.h2d_bw = d.d2h_bw = 4e9;
    d.duplex = 1;
    d.launch_us = 5;
    d.copy_latency_us = 5;
    return d;
}

/* See rt_fixture.h. Precondition: the model has tensors "input", "label". */
void rtf_make(rtf_case *c, const char *model, const tsl_model_cfg *cfg, int adam) {
    memset(c, 0, sizeof *c);
    c->model = model;
    c->dev = rtf_cpu_profile();
    c->g = tsl_graph_new(model);
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(c->g, model, cfg, &loss), TSL_OK, "%s: %s", model, tsl_last_error());
    tsl_optimizer_cfg o = th_optimizer(adam);
    th_train_graph(c->g, loss, &o);
    cr_assert_eq(tsl_workload_from_graph(c->g, model, NULL, &c->dev, &c->w), TSL_OK, "%s",
                 tsl_last_error());
    /* the workspaces the fast kernels really take (see plan_gen.h) */
    cr_assert_eq(pg_match_backend_workspace(c->g, c->w, 1, 2), TSL_OK, "%s", tsl_last_error());
    const tsl_tensor *xt = tsl_graph_tensor(c->g, tsl_graph_find(c->g, "input"));
    const tsl_tensor *yt = tsl_graph_tensor(c->g, tsl_graph_find(c->g, "label"));
    c->nx = (size_t)tsl_shape_numel(&xt->shape);
    c->ny = (size_t)tsl_shape_numel(&yt->shape);
    for (int k = 0; k < RTF_ITERS; k++) {
        c->x[k] = malloc(c->nx * sizeof *c->x[k]);
        c->y[k] = malloc(c->ny * sizeof *c->y[k]);
        cr_assert(c->x[k] && c->y[k]);
    }
    c->persistent = tsl_graph_bytes_of_kind(c->g, TSL_KIND_PARAM) +
                    tsl_graph_bytes_of_kind(c->g, TSL_KIND_BUFFER) +
                    tsl_graph_bytes_of_kind(c->g, TSL_KIND_OPT_STATE);
    int32_t nt = tsl_graph_n_tensors(c->g);
    c->init = calloc((size_t)nt, sizeof *c->init);
    cr_assert_not_null(c->init);
    uint64_t seed = th_session_opts().seed;
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(c->g, t);
        if (!tsl_kind_is_persistent(tt->kind) ||
            (tt->init != TSL_INIT_KAIMING_NORMAL && tt->init != TSL_INIT_UNIFORM_FANIN))
            continue;
        c->init[t] = malloc(tt->nbytes);
        cr_assert_not_null(c->init[t]);
        tsl_init_value(c->g, t, seed, c->init[t]);
    }
}

/* See rt_fixture.h. */
tsl_status rtf_init_from_case(void *ctx, const tsl_graph *g, tsl_tid t, float *dst) {
    const rtf_case *c = ctx;
    cr_assert_eq(g, c->g, "rtf_init_from_case: a session of another graph");
    if (c->init[t])
        memcpy(dst, c->init[t], tsl_graph_tensor(g, t)->nbytes);
    else
        tsl_init_value(g, t, th_session_opts().seed, dst);
    return TSL_OK;
}

/* See rt_fixture.h. Precondition: rtf_make done, batches filled. */
void rtf_reference(rtf_case *c) {
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(c->g, SIZE_MAX / 4, &r), TSL_OK, "%s", tsl_last_error());
    tsl_session_opts so = th_session_opts();
    so.device_memory = 2 * r.peak_footprint + ((size_t)16 << 20); /* fast kernels' scratch too */
    so.nthreads = 2;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c->g, &so, &s), TSL_OK, "%s", tsl_last_error());
    for (int k = 0; k < RTF_ITERS; k++) {
        tsl_step_stats st;
        cr_assert_eq(tsl_session_step(s, c->x[k], c->y[k], &st), TSL_OK, "%s vanilla step %d: %s",
                     c->model, k + 1, tsl_last_error());
        if (st.peak_load > c->ref_peak) c->ref_peak = st.peak_load;
        if (st.peak_footprint > c->ref_fp) c->ref_fp = st.peak_footprint;
    }
    c->ref = tsl_session_param_checksum(s);
    tsl_session_free(s);
}

void rtf_free(rtf_case *c) {
    for (tsl_tid t = 0; c->init && t < tsl_graph_n_tensors(c->g); t++) free(c->init[t]);
    free(c->init);
    for (int k = 0; k < RTF_ITERS; k++) {
        free(c->x[k]);
        free(c->y[k]);
    }
    tsl_workload_free(c->w);
    tsl_graph_free(c->g);
}

/* See rt_fixture.h. Precondition: p valid for c->w (or empty). */
tsl_session *rtf_open_runtime(const rtf_case *c, size_t capacity, const tsl_plan *p, int vclock,
                              double gbps, const char *what) {
    tsl_runtime_opts ro = tsl_runtime_opts_default();
    ro.virtual_clock = vclock;
    return rtf_open_runtime_with(c, capacity, p, &ro, gbps, what);
}

/* See rt_fixture.h. */
tsl_session *rtf_open_runtime_with(const rtf_case *c, size_t capacity, const tsl_plan *p,
                                   const tsl_runtime_opts *o, double gbps, const char *what) {
    tsl_session_opts so = th_session_opts();
    so.device_memory = capacity;
    so.nthreads = 2;
    so.pcie_gbps = gbps;
    so.init = rtf_init_from_case;
    so.init_ctx = (void *)c;
    tsl_session *s;
    cr_assert_eq(tsl_session_new(c->g, &so, &s), TSL_OK, "%s", tsl_last_error());
    tsl_runtime_opts ro = *o;
    ro.profile = c->dev; /* nobody replans: the plan under test stays in force */
    cr_assert_eq(tsl_session_attach_runtime(s, &ro, c->w), TSL_OK, "%s %s: attach: %s", c->model,
                 what, tsl_last_error());
    cr_assert_eq(tsl_session_set_plan(s, p), TSL_OK, "%s %s: set_plan: %s", c->model, what,
                 tsl_last_error());
    return s;
}

/* See rt_fixture.h. The caller frees the plan. */
tsl_plan *rtf_tensile_plan(const rtf_case *c, size_t budget) {
    return rtf_policy_plan(c, "tensile", NULL, budget);
}

/* See rt_fixture.h. The caller frees the plan. */
tsl_plan *rtf_policy_plan(const rtf_case *c, const char *policy, const void *opts, size_t budget) {
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_find(policy);
    cr_assert_not_null(po.policy, "%s", tsl_last_error());
    po.opts = opts;
    po.budget = budget;
    tsl_plan *p = NULL;
    tsl_workload *w = c->w;
    cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &c->dev, &po, &p, NULL)), "%s: %s", c->model,
                 tsl_last_error());
    char why[400];
    cr_assert(pg_finish_and_verify(c->w, p, &c->dev, why, sizeof why),
              "%s: %s's plan invalid: %s", c->model, policy, why);
    return p;
}

/* See rt_fixture.h. */
void rtf_zoo_case(rtf_case *c, const char *model, int adam) {
    rtf_zoo_case_at(c, model, adam, 2, strncmp(model, "inception", 9) == 0 ? 75 : 32);
}

/* See rt_fixture.h. */
void rtf_zoo_case_at(rtf_case *c, const char *model, int adam, int batch, int image) {
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    cfg.n_classes = 10;
    cfg.image_size = image;
    rtf_make(c, model, &cfg, adam);
    for (int k = 0; k < RTF_ITERS; k++) {
        th_fill_f32(c->x[k], c->nx, 1000 + (uint64_t)k, -1, 1);
        for (size_t i = 0; i < c->ny; i++) c->y[k][i] = (int32_t)((i * 7 + (size_t)k * 3) % 10);
    }
    rtf_reference(c);
    tsl_plan *empty = tsl_plan_new(model);
    char why[400];
    cr_assert(pg_finish_and_verify(c->w, empty, &c->dev, why, sizeof why), "%s: %s", model, why);
    cr_assert_eq(c->ref_peak, empty->predicted_peak, "%s: vanilla peak %zu, the empty plan's %zu",
                 model, c->ref_peak, empty->predicted_peak);
    tsl_plan_free(empty);
}

/* See rt_fixture.h. */
void rtf_run_plan(const rtf_case *c, const tsl_plan *p, int vclock, double gbps, const char *what,
                  rtf_run *o) {
    memset(o, 0, sizeof *o);
    tsl_session *s = rtf_open_runtime(c, 2 * c->ref_fp + ((size_t)16 << 20), p, vclock, gbps, what);
    for (int k = 0; k < RTF_ITERS; k++) {
        tsl_step_stats st;
        cr_assert_eq(tsl_session_step(s, c->x[k], c->y[k], &st), TSL_OK, "%s %s: step %d: %s",
                     c->model, what, k + 1, tsl_last_error());
        o->peak[k] = st.peak_load;
        o->fp[k] = st.peak_footprint;
        o->ms[k] = st.ms;
        tsl_session_runtime_stats(s, &o->rs);
        o->stalls[k] = o->rs.stalls;
    }
    o->checksum = tsl_session_param_checksum(s);
    tsl_session_free(s);
}
