/*
 * test_optimizer_step.c - where the optimizer's updates run
 * (tsl_optimizer_cfg.step, src/ops/optimizer.c): each right after its
 * parameter's last backward access (the default), or all after the
 * backward pass (the seed papers' optimizer phase). The two orders must
 * compute the same values bit for bit, and the default must not hold more
 * memory.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "policy_check.h"
#include "tensile/graph.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/profile.h"
#include "tensile/sched_json.h"
#include "tensile/session.h"
#include "tensile/workload.h"

/* Model `model`'s training graph with the optimizer th_optimizer(flags)
 * (TH_ADAM, TH_UPDATES_AFTER), finalized. */
static tsl_graph *build(const char *model, int batch, int image, int flags) {
    tsl_graph *g = tsl_graph_new(model);
    cr_assert_not_null(g);
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    if (image) cfg.image_size = image;
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, model, &cfg, &loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = th_optimizer(flags);
    th_train_graph(g, loss, &o);
    return g;
}

/* The same graph with the updates in the backward pass and after it. */
typedef struct both {
    tsl_graph *in, *end;
} both;

static both build_both(const char *model, int batch, int image, int adam) {
    int f = adam ? TH_ADAM : 0;
    return (both){build(model, batch, image, f), build(model, batch, image, f | TH_UPDATES_AFTER)};
}

static void both_free(both *b) {
    tsl_graph_free(b->in);
    tsl_graph_free(b->end);
}

static int is_update(const tsl_op *o) {
    return o->type == TSL_OP_ADAM_UPDATE || o->type == TSL_OP_SGD_UPDATE;
}

/* 1 if op o reads or writes tensor t. */
static int touches(const tsl_op *o, tsl_tid t) {
    for (int k = 0; k < o->n_in; k++)
        if (o->in[k] == t) return 1;
    for (int k = 0; k < o->n_out; k++)
        if (o->out[k] == t) return 1;
    return 0;
}

/* The in-backward graph's order against the after-backward one's: the same
 * ops; without the updates, the same order; each update right after the
 * last other op touching its parameter or gradient (only updates between),
 * and nothing after it touching its inputs within the iteration. */
static void check_order(const char *model, int batch, int image, int adam) {
    both b = build_both(model, batch, image, adam);
    tsl_graph *in = b.in, *end = b.end;
    int32_t n = tsl_graph_n_ops(in);
    cr_assert_eq(n, tsl_graph_n_ops(end), "%s", model);
    int32_t first_end = -1, n_upd = 0, moved = 0;
    for (int32_t i = 0; i < n; i++) {
        const tsl_op *o = tsl_graph_op(end, i);
        if (is_update(o) && first_end < 0) first_end = i;
        cr_assert(!(first_end >= 0 && !is_update(o)), "%s: op '%s' after the optimizer phase",
                  model, o->name);
    }
    cr_assert_gt(first_end, 0, "%s: no update", model);
    /* the non-update ops in the same order */
    for (int32_t i = 0, k = 0; i < n; i++) {
        const tsl_op *o = tsl_graph_op(in, i);
        cr_assert_eq(o->index, i);
        if (is_update(o)) continue;
        cr_assert_str_eq(o->name, tsl_graph_op(end, k)->name, "%s: op %d", model, (int)i);
        k++;
    }
    for (int32_t i = 0; i < n; i++) {
        const tsl_op *u = tsl_graph_op(in, i);
        if (!is_update(u)) continue;
        n_upd++;
        /* inputs: parameter, gradient, then the states (its own) */
        int32_t a = -1;
        for (int32_t k = 0; k < i; k++) {
            const tsl_op *o = tsl_graph_op(in, k);
            if (!is_update(o) && (touches(o, u->in[0]) || touches(o, u->in[1]))) a = k;
        }
        cr_assert_geq(a, 0, "%s: '%s' follows no access of its parameter", model, u->name);
        for (int32_t k = a + 1; k < i; k++)
            cr_assert(is_update(tsl_graph_op(in, k)), "%s: '%s' is not right after '%s'", model,
                      u->name, tsl_graph_op(in, a)->name);
        for (int32_t k = i + 1; k < n; k++)
            for (int q = 0; q < u->n_in; q++)
                cr_assert(!touches(tsl_graph_op(in, k), u->in[q]),
                          "%s: '%s' touches an input of '%s' after it", model,
                          tsl_graph_op(in, k)->name, u->name);
        moved += i < first_end;
    }
    cr_assert_eq(n_upd, n - first_end, "%s", model);
    /* (the first layers' updates follow the last backward ops: still last) */
    cr_assert_geq(2 * moved, n_upd, "%s: only %d of %d updates moved into the backward", model,
                  (int)moved, (int)n_upd);
    /* the workload: no optimizer phase in the default, the phase otherwise */
    tsl_device_profile dev = tsl_profile_cpu_rough();
    tsl_workload *wi = NULL, *we = NULL;
    cr_assert_eq(tsl_workload_from_graph(in, "in", NULL, &dev, &wi), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(tsl_workload_from_graph(end, "end", NULL, &dev, &we), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(wi->optimizer_begin, n);
    cr_assert_eq(we->optimizer_begin, first_end);
    tsl_workload_free(wi);
    tsl_workload_free(we);
    both_free(&b);
}

Test(optimizer_step, each_update_runs_right_after_its_last_access) {
    check_order("cnn", 4, 0, 0);
    check_order("resnet18", 2, 32, 1);
    check_order("densenet121", 2, 32, 1);
    check_order("inception3", 2, 75, 1);
}

/* `steps` steps of model g (vanilla, fast kernels at 1 thread) on seeded
 * batches; the losses into loss[] and the parameters' checksum returned. */
static uint64_t train(const tsl_graph *g, int steps, double *loss) {
    tsl_session_opts o = tsl_session_opts_default();
    o.device_memory = (size_t)1 << 30;
    o.nthreads = 1;
    tsl_session *s = NULL;
    cr_assert_eq(tsl_session_new(g, &o, &s), TSL_OK, "%s", tsl_last_error());
    const tsl_tensor *xt = tsl_graph_tensor(g, tsl_graph_find(g, "input"));
    const tsl_tensor *yt = tsl_graph_tensor(g, tsl_graph_find(g, "label"));
    size_t nx = (size_t)tsl_shape_numel(&xt->shape), ny = (size_t)tsl_shape_numel(&yt->shape);
    float *x = malloc(nx * sizeof *x);
    int32_t *y = malloc(ny * sizeof *y);
    cr_assert(x && y);
    for (int k = 0; k < steps; k++) {
        th_fill_f32(x, nx, 100 + (uint64_t)k, -1, 1);
        for (size_t i = 0; i < ny; i++) y[i] = (int32_t)((i * 7 + (size_t)k) % 10);
        tsl_step_stats st;
        cr_assert_eq(tsl_session_step(s, x, y, &st), TSL_OK, "%s", tsl_last_error());
        loss[k] = st.loss;
    }
    uint64_t sum = tsl_session_param_checksum(s);
    free(x);
    free(y);
    tsl_session_free(s);
    return sum;
}

static void check_same_values(const char *model, int batch, int image, int adam) {
    enum { STEPS = 3 };
    both b = build_both(model, batch, image, adam);
    tsl_graph *in = b.in, *end = b.end;
    double li[STEPS], le[STEPS];
    uint64_t ci = train(in, STEPS, li), ce = train(end, STEPS, le);
    for (int k = 0; k < STEPS; k++)
        cr_assert(memcmp(&li[k], &le[k], sizeof li[k]) == 0, "%s: step %d loss %.9g vs %.9g",
                  model, k, li[k], le[k]);
    cr_assert_eq(ci, ce, "%s: parameters differ after %d steps (%016llx vs %016llx)", model,
                 STEPS, (unsigned long long)ci, (unsigned long long)ce);
    both_free(&b);
}

Test(optimizer_step, both_orders_compute_the_same_values_bit_for_bit) {
    check_same_values("cnn", 8, 0, 0);
    check_same_values("cnn", 8, 0, 1);
    check_same_values("resnet18", 2, 32, 1);
}

/* The vanilla executor's peak load (dry run) of both orders. */
static void peaks(const char *model, int batch, int image, size_t *in, size_t *end) {
    both b = build_both(model, batch, image, 1);
    tsl_mem_report ri, re;
    cr_assert_eq(tsl_graph_dry_run(b.in, (size_t)1 << 34, &ri), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_dry_run(b.end, (size_t)1 << 34, &re), TSL_OK, "%s", tsl_last_error());
    *in = ri.peak_load;
    *end = re.peak_load;
    both_free(&b);
}

Test(optimizer_step, updates_in_the_backward_hold_no_more_memory) {
    size_t in, end;
    peaks("resnet18", 4, 32, &in, &end);
    cr_assert_leq(in, end, "resnet18: %zu > %zu", in, end);
    /* an MLP's peak is at the end of its backward, where every gradient is
     * alive with the updates after the backward pass */
    peaks("mlp", 4, 0, &in, &end);
    cr_assert_lt(in, end, "mlp: %zu >= %zu: the gradients did not die earlier", in, end);
}

Test(optimizer_step, an_unknown_step_is_refused_by_name) {
    tsl_graph *g = tsl_graph_new("bad");
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    cfg.batch = 2;
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "cnn", &cfg, &loss), TSL_OK);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK);
    tsl_optimizer_cfg o = tsl_sgd_default(0.01f);
    o.step = (tsl_optimizer_step)7;
    cr_assert_eq(tsl_graph_optimizer(g, &o), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "step 7"), "%s", tsl_last_error());
    tsl_graph_free(g);
}

/* TENSILE on resnet18 (batch 16, 224 px, Adam, a6000) at `frac` of
 * vanilla's footprint with the updates at `step`: 1 if it meets the
 * budget. Every plan goes through pc_plan_and_check. */
static int tensile_meets(tsl_optimizer_step step, double frac) {
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    int flags = TH_ADAM | (step == TSL_STEP_AFTER_BACKWARD ? TH_UPDATES_AFTER : 0);
    tsl_workload *w = pc_zoo_workload_at("resnet18", &dev, flags, 16, 224);
    pc_result v, r;
    tsl_plan_opts po = pc_opts("vanilla", NULL, 0);
    pc_plan_and_check(&w, 1, &dev, &po, "resnet18 vanilla", &v);
    size_t budget = (size_t)(frac * (double)v.rep.vanilla_footprint[0]);
    po = pc_opts("tensile", NULL, budget);
    char what[96];
    snprintf(what, sizeof what, "resnet18 tensile at %.2f, updates %s", frac,
             step == TSL_STEP_AFTER_BACKWARD ? "after the backward" : "in the backward");
    pc_plan_and_check(&w, 1, &dev, &po, what, &r);
    int met = r.rep.budget_met;
    printf("%s: budget %zu, footprint %zu, met %d\n", what, budget,
           r.p[0]->predicted_footprint, met);
    pc_result_free(&v);
    pc_result_free(&r);
    tsl_workload_free(w);
    return met;
}

/* Why the updates run in the backward by default: a budget TENSILE meets
 * only so (its across-iteration swaps of the optimizer states have the
 * backward pass's idle device-to-host channel). At 0.6 (0.7 until the
 * budget mode's recomputations could run before the chains that read
 * them, docs/RESULTS.md: then both met 0.7): in the backward down to
 * 0.55; after it, stuck at 328877824 bytes from 0.66 down. */
Test(optimizer_step, tensile_meets_a_budget_only_with_the_updates_in_the_backward,
     .timeout = 600) {
    cr_assert(tensile_meets(TSL_STEP_IN_BACKWARD, 0.6), "in the backward: budget missed");
    cr_assert(!tensile_meets(TSL_STEP_AFTER_BACKWARD, 0.6),
              "after the backward: met too, the test shows nothing");
}
