/*
 * test_workload.c - workloads from graphs, the cost model, the vanilla peak
 * a workload implies (docs/SCHEDULING.md) against the dry run, and the
 * workload JSON form: exact round trip and strict validation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tensile/models.h"
#include "tensile/sched_json.h"
#include "tensile/session.h"

/* ---- helpers ------------------------------------------------------------------ */

/* x(8,4) -> fc -> relu -> softmax_xent, backward, SGD with momentum. */
static tsl_graph *tiny_graph(void) {
    tsl_graph *g = tsl_graph_new("tiny");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(8, 4));
    tsl_tid y = tsl_label(g, "y", TSL_SHAPE(8));
    tsl_tid w = tsl_param(g, "fc.w", TSL_SHAPE(3, 4), TSL_INIT_KAIMING_NORMAL);
    tsl_tid b = tsl_param(g, "fc.b", TSL_SHAPE(3), TSL_INIT_ZERO);
    tsl_tid h = tsl_linear(g, "fc", x, w, b);
    tsl_tid r = tsl_relu(g, "relu", h);
    tsl_tid loss = tsl_softmax_xent(g, "loss", r, y);
    tsl_graph_backward(g, loss);
    tsl_optimizer_cfg opt = tsl_sgd_default(0.1f);
    opt.step = TSL_STEP_AFTER_BACKWARD; /* the tables below: the updates last */
    tsl_graph_optimizer(g, &opt);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

static tsl_graph *model_graph(const char *model, int batch, int adam) {
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    tsl_optimizer_cfg opt = adam ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
    cr_assert_eq(tsl_model_build(g, model, &cfg, &loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_optimizer(g, &opt), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

static tsl_device_profile test_profile(double flops, double mem_bw, double launch_us) {
    tsl_device_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "test");
    p.flops = flops;
    p.mem_bw = mem_bw;
    p.mem_bytes = (size_t)1 << 34;
    p.h2d_bw = p.d2h_bw = 1e10;
    p.duplex = 1;
    p.launch_us = launch_us;
    p.copy_latency_us = 10;
    return p;
}

/* The vanilla peak load a workload implies, per docs/SCHEDULING.md, written
 * independently of the dry run: persistent tensors resident at 0, INPUT and
 * LABEL allocated at 0, outputs allocated when their op starts, workspace
 * held during the op, a non-persistent tensor freed at the end of its last
 * reading op (of its generating op, or the data load, if nothing reads it),
 * frees before allocations at one time point. *peak_op: op running at the
 * peak (-1: the data load). */
static size_t vanilla_peak(const tsl_workload *w, int32_t *peak_op) {
    int32_t nt = w->n_tensors, no = w->n_ops;
    int32_t *death = malloc(sizeof *death * (size_t)(nt + 1));
    char *resident = calloc((size_t)nt + 1, 1);
    cr_assert(death && resident);
    size_t load = 0;
    for (int32_t t = 0; t < nt; t++) {
        const tsl_wl_tensor *tt = &w->tensors[t];
        death[t] = INT32_MIN; /* never freed (persistent) or never resident */
        if (tsl_kind_is_persistent(tt->kind) || tt->kind == TSL_KIND_INPUT ||
            tt->kind == TSL_KIND_LABEL) {
            load += tt->bytes;
            resident[t] = 1;
            if (!tsl_kind_is_persistent(tt->kind)) death[t] = -1;
        }
    }
    for (int32_t i = 0; i < no; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int j = 0; j < op->n_out; j++)
            if (!tsl_kind_is_persistent(w->tensors[op->out[j]].kind) && death[op->out[j]] == INT32_MIN)
                death[op->out[j]] = i;
        for (int j = 0; j < op->n_in; j++)
            if (!tsl_kind_is_persistent(w->tensors[op->in[j]].kind)) death[op->in[j]] = i;
    }
    size_t peak = load;
    *peak_op = -1;
    for (int32_t t = 0; t < nt; t++)
        if (death[t] == -1) {
            load -= w->tensors[t].bytes;
            resident[t] = 0;
        }
    for (int32_t i = 0; i < no; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int j = 0; j < op->n_out; j++)
            if (!resident[op->out[j]]) {
                resident[op->out[j]] = 1;
                load += w->tensors[op->out[j]].bytes;
            }
        if (load + op->workspace > peak) {
            peak = load + op->workspace;
            *peak_op = i;
        }
        for (int32_t t = 0; t < nt; t++)
            if (death[t] == i && resident[t]) {
                resident[t] = 0;
                load -= w->tensors[t].bytes;
            }
    }
    free(death);
    free(resident);
    return peak;
}

/* Field-by-field, bit-for-bit equality of two workloads. */
static void assert_same_workload(const tsl_workload *a, const tsl_workload *b) {
    cr_assert_str_eq(a->job, b->job);
    cr_assert_eq(a->n_tensors, b->n_tensors);
    cr_assert_eq(a->n_ops, b->n_ops);
    cr_assert_eq(a->optimizer_begin, b->optimizer_begin);
    cr_assert(memcmp(&a->period_us, &b->period_us, sizeof(double)) == 0, "period %.17g vs %.17g",
              a->period_us, b->period_us);
    for (int32_t t = 0; t < a->n_tensors; t++) {
        cr_assert_str_eq(a->tensors[t].name, b->tensors[t].name);
        cr_assert_eq(a->tensors[t].bytes, b->tensors[t].bytes, "tensor %d", t);
        cr_assert_eq(a->tensors[t].kind, b->tensors[t].kind, "tensor %d", t);
        cr_assert_eq(a->tensors[t].producer, b->tensors[t].producer, "tensor %d '%s'", t,
                     a->tensors[t].name);
    }
    for (int32_t i = 0; i < a->n_ops; i++) {
        const tsl_wl_op *x = &a->ops[i], *y = &b->ops[i];
        cr_assert_str_eq(x->name, y->name);
        cr_assert(memcmp(&x->start_us, &y->start_us, sizeof(double)) == 0,
                  "op %d start %.17g vs %.17g", i, x->start_us, y->start_us);
        cr_assert(memcmp(&x->end_us, &y->end_us, sizeof(double)) == 0, "op %d end %.17g vs %.17g",
                  i, x->end_us, y->end_us);
        cr_assert_eq(x->workspace, y->workspace);
        cr_assert_eq(x->n_in, y->n_in, "op %d", i);
        cr_assert_eq(x->n_out, y->n_out, "op %d", i);
        for (int j = 0; j < x->n_in; j++) cr_assert_eq(x->in[j], y->in[j], "op %d in %d", i, j);
        for (int j = 0; j < x->n_out; j++) cr_assert_eq(x->out[j], y->out[j], "op %d out %d", i, j);
    }
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *len = (size_t)n;
    return b;
}

static char tmpdir[64];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsl_test_workload_XXXXXX");
    cr_assert(mkdtemp(tmpdir), "mkdtemp failed");
}

static void remove_tmpdir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- from a graph ------------------------------------------------------------- */

Test(workload, tiny_graph_exact_tensors_ops_times) {
    tsl_graph *g = tiny_graph();
    /* dyadic latencies: every sum is exact */
    static const double lat[9] = {1.5, 0.25, 3, 2, 0.125, 4, 0.5, 1, 1};
    cr_assert_eq(tsl_graph_n_ops(g), 9);
    tsl_latency_table tab = {9, lat};
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, "job1", &tab, NULL, &w), TSL_OK, "%s", tsl_last_error());

    static const struct { const char *name; size_t bytes; tsl_tensor_kind kind; int producer; } T[] = {
        {"x", 128, TSL_KIND_INPUT, -1},          {"y", 32, TSL_KIND_LABEL, -1},
        {"fc.w", 48, TSL_KIND_PARAM, -1},        {"fc.b", 12, TSL_KIND_PARAM, -1},
        {"fc", 96, TSL_KIND_ACTIVATION, 0},      {"relu", 96, TSL_KIND_ACTIVATION, 1},
        {"loss", 4, TSL_KIND_ACTIVATION, 2},     {"loss.probs", 96, TSL_KIND_ACTIVATION, 2},
        {"loss.dlogits", 96, TSL_KIND_GRADIENT, 3}, {"relu.dx", 96, TSL_KIND_GRADIENT, 4},
        {"fc.dw", 48, TSL_KIND_GRADIENT, 5},     {"fc.db", 12, TSL_KIND_GRADIENT, 6},
        {"fc.w.momentum", 48, TSL_KIND_OPT_STATE, -1}, {"fc.b.momentum", 12, TSL_KIND_OPT_STATE, -1},
    };
    cr_assert_eq(w->n_tensors, 14);
    for (int t = 0; t < 14; t++) {
        cr_assert_str_eq(w->tensors[t].name, T[t].name, "tensor %d", t);
        cr_assert_eq(w->tensors[t].bytes, T[t].bytes, "tensor %d", t);
        cr_assert_eq(w->tensors[t].kind, T[t].kind, "tensor %d", t);
        cr_assert_eq(w->tensors[t].producer, T[t].producer, "tensor %d", t);
    }
    static const struct { const char *name; int n_in; int in[3]; int n_out; int out[2]; } O[] = {
        {"fc", 3, {0, 2, 3}, 1, {4}},          {"relu", 1, {4}, 1, {5}},
        {"loss", 2, {5, 1}, 2, {6, 7}},        {"loss.dlogits", 2, {7, 1}, 1, {8}},
        {"relu.dx", 2, {8, 5}, 1, {9}},        {"fc.dw", 2, {9, 0}, 1, {10}},
        {"fc.db", 1, {9}, 1, {11}},            {"fc.w.sgd", 3, {2, 10, 12}, 2, {2, 12}},
        {"fc.b.sgd", 3, {3, 11, 13}, 2, {3, 13}},
    };
    static const double start[9] = {0, 1.5, 1.75, 4.75, 6.75, 6.875, 10.875, 11.375, 12.375};
    cr_assert_eq(w->n_ops, 9);
    for (int i = 0; i < 9; i++) {
        const tsl_wl_op *op = &w->ops[i];
        cr_assert_str_eq(op->name, O[i].name);
        cr_assert_eq(op->start_us, start[i], "op %d start %.17g", i, op->start_us);
        cr_assert_eq(op->end_us, start[i] + lat[i], "op %d end %.17g", i, op->end_us);
        if (i) cr_assert_eq(op->start_us, w->ops[i - 1].end_us);
        cr_assert_eq(op->workspace, 0);
        cr_assert_eq(op->n_in, O[i].n_in, "op %d", i);
        cr_assert_eq(op->n_out, O[i].n_out, "op %d", i);
        for (int j = 0; j < op->n_in; j++) cr_assert_eq(op->in[j], O[i].in[j], "op %d in %d", i, j);
        for (int j = 0; j < op->n_out; j++) cr_assert_eq(op->out[j], O[i].out[j], "op %d out %d", i, j);
    }
    cr_assert_str_eq(w->job, "job1");
    cr_assert_eq(w->optimizer_begin, 7);
    cr_assert_eq(w->period_us, 13.375, "period %.17g", w->period_us);

    /* hand-computed vanilla peak: 120 persistent + x 128 + y 32 + fc.. at
     * loss.dlogits: relu 96 + probs 96 + dlogits 96 = 568 */
    int32_t pop;
    cr_assert_eq(vanilla_peak(w, &pop), 568);
    cr_assert_eq(pop, 3);
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 30, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.peak_load, 568);
    tsl_workload_free(w);

    /* job NULL: the graph's name */
    cr_assert_eq(tsl_workload_from_graph(g, NULL, &tab, NULL, &w), TSL_OK);
    cr_assert_str_eq(w->job, "tiny");
    tsl_workload_free(w);
    tsl_workload_free(NULL);
    tsl_graph_free(g);
}

Test(workload, op_floor_hand_computed) {
    tsl_graph *g = tiny_graph();
    static const double lat[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tsl_latency_table tab = {9, lat};
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, "job1", &tab, NULL, &w), TSL_OK, "%s", tsl_last_error());
    /* the working sets (tensor sizes of the test above): fc 128+48+12+96 =
     * 284, relu 192, loss 96+32+4+96 = 228, loss.dlogits 224, relu.dx
     * 96+96+96 = 288, fc.dw 272, fc.db 108, fc.w.sgd 48x3 (its outputs are
     * its inputs, counted once) = 144, fc.b.sgd 36 */
    int32_t op = -2;
    cr_assert_eq(tsl_workload_op_floor(w, &op), 288);
    cr_assert_eq(op, 4);
    cr_assert_eq(tsl_workload_op_floor(w, NULL), 288);
    /* a workspace counts with the op's tensors */
    w->ops[6].workspace = 1000;
    cr_assert_eq(tsl_workload_op_floor(w, &op), 1108);
    cr_assert_eq(op, 6);
    /* ... the least among its algorithms: a plan may choose that one */
    tsl_wl_algo alt = {.name = "small", .us = 5, .workspace = 10};
    cr_assert_eq(tsl_workload_set_alts(w, 6, &alt, 1), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_workload_op_floor(w, &op), 288);
    cr_assert_eq(op, 4);
    /* a tensor an op reads twice is counted once (relu.dx reading
     * loss.dlogits twice: still 288, not 384) */
    int32_t *in = w->ops[4].in;
    int32_t twice[3] = {in[0], in[0], in[1]};
    w->ops[4].in = twice;
    w->ops[4].n_in = 3;
    cr_assert_eq(tsl_workload_op_floor(w, NULL), 288);
    w->ops[4].in = in;
    w->ops[4].n_in = 2;
    tsl_workload_free(w);
    tsl_graph_free(g);
    /* no ops: nothing needed */
    tsl_workload empty = {.job = "empty"};
    cr_assert_eq(tsl_workload_op_floor(&empty, &op), 0);
    cr_assert_eq(op, -1);
}

Test(workload, op_floor_below_vanilla_peak) {
    /* the vanilla plan runs every op, so its peak holds each working set */
    static const char *const models[] = {"cnn", "resnet18", "vgg11"};
    for (int m = 0; m < 3; m++) {
        tsl_graph *g = model_graph(models[m], 2, 0);
        tsl_device_profile p = test_profile(1e13, 1e12, 5);
        tsl_workload *w;
        cr_assert_eq(tsl_workload_from_graph(g, NULL, NULL, &p, &w), TSL_OK, "%s", tsl_last_error());
        int32_t op, pop;
        size_t f = tsl_workload_op_floor(w, &op), peak = vanilla_peak(w, &pop);
        cr_assert(op >= 0 && f > 0 && f <= peak, "%s: floor %zu (op %d), vanilla peak %zu",
                  models[m], f, op, peak);
        tsl_workload_free(w);
        tsl_graph_free(g);
    }
}

Test(workload, cost_model_hand_computed_conv) {
    tsl_graph *g = tsl_graph_new("conv");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(2, 3, 8, 8));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(4, 3, 3, 3), TSL_INIT_KAIMING_NORMAL);
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(4), TSL_INIT_ZERO);
    tsl_conv2d(g, "conv", x, w, b, tsl_conv_sp(1, 1));
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const tsl_op *op = tsl_graph_op(g, 0);
    /* y (2,4,8,8): 512 elements, 27 multiply-adds each, plus the bias add */
    double flops = 2.0 * 512 * 27 + 512;                     /* 28160 */
    double bytes = (2 * 3 * 64 + 108 + 4) * 4.0 + 512 * 4.0; /* 1984 read + 2048 written */
    cr_assert_eq(tsl_op_flops(g, op), flops);
    cr_assert_eq((double)(tsl_op_bytes_read(g, op) + tsl_op_bytes_written(g, op)), bytes);

    /* compute bound: 28160 / 1e9 s = 28.16 us, + 5 us */
    tsl_device_profile p = test_profile(1e9, 1e12, 5);
    double us = tsl_cost_model_us(g, op, &p);
    cr_assert(fabs(us - 33.16) < 1e-9, "compute-bound conv: %.17g us, expected 33.16", us);
    /* memory bound: 4032 / 1e8 s = 40.32 us, + 5 us */
    p = test_profile(1e12, 1e8, 5);
    us = tsl_cost_model_us(g, op, &p);
    cr_assert(fabs(us - 45.32) < 1e-9, "memory-bound conv: %.17g us, expected 45.32", us);

    /* the workload uses the model for its one op */
    tsl_workload *wl;
    cr_assert_eq(tsl_workload_from_graph(g, "c", NULL, &p, &wl), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(wl->ops[0].start_us, 0.0);
    cr_assert_eq(wl->ops[0].end_us, us);
    cr_assert_eq(wl->period_us, us);
    cr_assert_eq(wl->optimizer_begin, 1); /* no optimizer: n_ops */
    tsl_workload_free(wl);
    tsl_graph_free(g);
}

Test(workload, shipped_profile_cost_model_is_sane) {
    /* resnet50 at batch 16 on the paper's GPU: a training iteration of a few
     * hundred ms at most and tens of ms at least (3 x 4.1 GFLOP x 16 at
     * 23 TFLOP/s is ~8.5 ms of pure compute). */
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_graph *g = model_graph("resnet50", th_quick() ? 2 : 16, 0);
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, NULL, NULL, &dev, &w), TSL_OK, "%s", tsl_last_error());
    double flops = 0;
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) flops += tsl_op_flops(g, tsl_graph_op(g, i));
    cr_assert(w->period_us >= flops / dev.flops * 1e6, "period %g us below the compute time",
              w->period_us);
    cr_assert(w->period_us >= tsl_graph_n_ops(g) * dev.launch_us);
    double total = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        double lat = w->ops[i].end_us - w->ops[i].start_us;
        cr_assert(lat >= dev.launch_us, "op %d latency %g", i, lat);
        total += lat;
        cr_assert(fabs(lat - tsl_cost_model_us(g, tsl_graph_op(g, i), &dev)) <= 1e-9 * lat);
    }
    cr_assert(fabs(total - w->period_us) <= 1e-9 * total);
    printf("resnet50 batch %d on a6000: %.2f ms per iteration (cost model), %.1f GFLOP\n",
           th_quick() ? 2 : 16, w->period_us * 1e-3, flops * 1e-9);
    tsl_workload_free(w);
    tsl_graph_free(g);
}

Test(workload, bad_arguments) {
    tsl_graph *g = tiny_graph();
    tsl_workload *w = NULL;
    static const double lat[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tsl_latency_table short_tab = {8, lat};
    cr_assert_eq(tsl_workload_from_graph(g, "j", &short_tab, NULL, &w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "8 entries") && strstr(tsl_last_error(), "9 ops"), "%s",
              tsl_last_error());
    double bad[9] = {1, 1, 1, -2, 1, 1, 1, 1, 1};
    tsl_latency_table bad_tab = {9, bad};
    cr_assert_eq(tsl_workload_from_graph(g, "j", &bad_tab, NULL, &w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "op 3") && strstr(tsl_last_error(), "-2"), "%s",
              tsl_last_error());
    bad[3] = NAN;
    cr_assert_eq(tsl_workload_from_graph(g, "j", &bad_tab, NULL, &w), TSL_ERR_INVALID);
    cr_assert_eq(tsl_workload_from_graph(g, "j", NULL, NULL, &w), TSL_ERR_INVALID);
    tsl_device_profile p = test_profile(0, 1e9, 1);
    cr_assert_eq(tsl_workload_from_graph(g, "j", NULL, &p, &w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "flops"), "%s", tsl_last_error());
    char longname[80];
    memset(longname, 'j', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cr_assert_eq(tsl_workload_from_graph(g, longname, &short_tab, NULL, &w), TSL_ERR_INVALID);
    cr_assert(w == NULL);
    tsl_graph_free(g);

    tsl_graph *open = tsl_graph_new("open");
    tsl_input(open, "x", TSL_SHAPE(2));
    cr_assert_eq(tsl_workload_from_graph(open, "j", NULL, &p, &w), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "not finalized"), "%s", tsl_last_error());
    tsl_graph_free(open);
}

/* ---- vanilla memory = the dry run ------------------------------------------------ */

static void check_vanilla(const char *model, int batch, int adam) {
    tsl_graph *g = model_graph(model, batch, adam);
    tsl_device_profile p = test_profile(1e13, 1e12, 5);
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, NULL, NULL, &p, &w), TSL_OK, "%s", tsl_last_error());
    tsl_mem_report r;
    cr_assert_eq(tsl_graph_dry_run(g, (size_t)1 << 44, &r), TSL_OK, "%s", tsl_last_error());
    int32_t pop;
    size_t peak = vanilla_peak(w, &pop);
    cr_assert_eq(peak, r.peak_load, "%s batch %d %s: workload implies %zu, dry run %zu (diff %lld)",
                 model, batch, adam ? "adam" : "sgd", peak, r.peak_load,
                 (long long)peak - (long long)r.peak_load);
    cr_assert_eq(pop, r.peak_op, "%s: peak op %d vs dry run %d", model, pop, r.peak_op);
    printf("%-12s batch %2d %s: vanilla peak %zu bytes at op %d (dry run %zu at op %d)\n", model,
           batch, adam ? "adam" : "sgd ", peak, pop, r.peak_load, r.peak_op);
    tsl_workload_free(w);
    tsl_graph_free(g);
}

Test(workload, vanilla_peak_equals_dry_run_cnn_resnet18) {
    int b = th_quick() ? 2 : 16;
    check_vanilla("cnn", b, 0);
    check_vanilla("cnn", b, 1);
    check_vanilla("resnet18", b, 0);
    check_vanilla("resnet18", b, 1);
}

Test(workload, vanilla_peak_equals_dry_run_every_model) {
    const char *const *names = tsl_model_names();
    for (int i = 0; names[i]; i++) {
        if (th_quick() && strcmp(names[i], "mlp") != 0 && strcmp(names[i], "unet") != 0) continue;
        check_vanilla(names[i], 2, i % 2);
    }
}

/* ---- JSON round trip ---------------------------------------------------------------- */

static void round_trip(const char *model, int adam) {
    tsl_device_profile dev;
    cr_assert_eq(tsl_profile_load("a6000", &dev), TSL_OK, "%s", tsl_last_error());
    tsl_graph *g = model_graph(model, 4, adam);
    tsl_workload *w, *r;
    cr_assert_eq(tsl_workload_from_graph(g, model, NULL, &dev, &w), TSL_OK, "%s", tsl_last_error());
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/%s.json", tmpdir, model);
    snprintf(p2, sizeof p2, "%s/%s.again.json", tmpdir, model);
    cr_assert_eq(tsl_workload_write_json(w, p1), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_workload_read_json(p1, &r), TSL_OK, "%s", tsl_last_error());
    assert_same_workload(w, r);
    cr_assert_eq(tsl_workload_write_json(r, p2), TSL_OK, "%s", tsl_last_error());
    size_t l1, l2;
    char *b1 = slurp(p1, &l1), *b2 = slurp(p2, &l2);
    cr_assert(l1 == l2 && memcmp(b1, b2, l1) == 0, "%s: second write differs", model);
    /* parse from memory too, and names are unique */
    tsl_workload *m;
    cr_assert_eq(tsl_workload_parse_json(b1, l1, "mem", &m), TSL_OK, "%s", tsl_last_error());
    assert_same_workload(w, m);
    free(b1);
    free(b2);
    tsl_workload_free(w);
    tsl_workload_free(r);
    tsl_workload_free(m);
    tsl_graph_free(g);
}

Test(workload_json, round_trip_exact, .init = make_tmpdir, .fini = remove_tmpdir) {
    round_trip("cnn", 0);
    round_trip("resnet18", 1);
    round_trip(th_quick() ? "inception3" : "densenet121", 0);
}

/* The zoo's graphs have unique names (autodiff numbers repeated gradient
 * sums); a graph a user builds may not: two ops given the same name. The
 * workload keeps the first and renames the later ones "NAME#2", ... */
Test(workload_json, duplicate_graph_names_made_unique) {
    tsl_graph *z = model_graph("inception3", 1, 0);
    for (int32_t t = 1; t < tsl_graph_n_tensors(z); t++)
        cr_assert_eq(tsl_graph_find(z, tsl_graph_tensor(z, t)->name), t, "inception3: '%s' twice",
                     tsl_graph_tensor(z, t)->name);
    tsl_graph_free(z);

    tsl_graph *g = tsl_graph_new("dup");
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(4, 3));
    tsl_tid y = tsl_label(g, "label", TSL_SHAPE(4));
    tsl_tid h = tsl_relu(g, "act", tsl_linear_layer(g, "fc1", x, 5, 1));
    h = tsl_relu(g, "act", tsl_linear_layer(g, "fc2", h, 5, 1)); /* same name again */
    tsl_tid loss = tsl_softmax_xent(g, "loss", tsl_linear_layer(g, "fc3", h, 3, 1), y);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    tsl_device_profile p = test_profile(1e13, 1e12, 5);
    tsl_workload *w;
    cr_assert_eq(tsl_workload_from_graph(g, NULL, NULL, &p, &w), TSL_OK, "%s", tsl_last_error());
    int renamed = 0;
    for (int32_t t = 0; t < w->n_tensors; t++) {
        const char *gn = tsl_graph_tensor(g, t)->name;
        if (strcmp(gn, w->tensors[t].name) != 0) {
            renamed++;
            cr_assert(strncmp(w->tensors[t].name, gn, strlen(gn)) == 0 &&
                          w->tensors[t].name[strlen(gn)] == '#',
                      "tensor %d '%s' renamed '%s'", t, gn, w->tensors[t].name);
            cr_assert(tsl_graph_find(g, gn) < t, "the first of the name keeps it");
        }
        for (int32_t u = 0; u < t; u++)
            cr_assert(strcmp(w->tensors[u].name, w->tensors[t].name) != 0, "'%s' twice",
                      w->tensors[t].name);
    }
    cr_assert(renamed > 0, "the second 'act' must be renamed");
    for (int32_t i = 0; i < w->n_ops; i++)
        for (int32_t k = 0; k < i; k++)
            cr_assert(strcmp(w->ops[i].name, w->ops[k].name) != 0, "op name '%s' twice",
                      w->ops[i].name);
    tsl_workload_free(w);
    tsl_graph_free(g);
}

Test(workload_json, empty_workload_round_trips, .init = make_tmpdir, .fini = remove_tmpdir) {
    static const char text[] =
        "{\"job\": \"e\", \"period_us\": 0, \"optimizer_begin\": 0, \"tensors\": [], \"ops\": []}";
    tsl_workload *w, *r;
    cr_assert_eq(tsl_workload_parse_json(text, strlen(text), "e.json", &w), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(w->n_tensors, 0);
    cr_assert_eq(w->n_ops, 0);
    char p[128];
    snprintf(p, sizeof p, "%s/e.json", tmpdir);
    cr_assert_eq(tsl_workload_write_json(w, p), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_workload_read_json(p, &r), TSL_OK, "%s", tsl_last_error());
    assert_same_workload(w, r);
    tsl_workload_free(w);
    tsl_workload_free(r);
}

/* ---- strict validation -------------------------------------------------------------- */

static const char base_json[] =
    "{\"job\": \"j\", \"period_us\": 5, \"optimizer_begin\": 1,\n"
    " \"tensors\": [{\"name\": \"x\", \"bytes\": 16, \"kind\": \"input\"},\n"
    "  {\"name\": \"w\", \"bytes\": 8, \"kind\": \"parameter\"},\n"
    "  {\"name\": \"h\", \"bytes\": 16, \"kind\": \"activation\"},\n"
    "  {\"name\": \"g\", \"bytes\": 8, \"kind\": \"gradient\"}],\n"
    " \"ops\": [{\"name\": \"mm\", \"start_us\": 0, \"end_us\": 2, \"workspace\": 0, "
    "\"inputs\": [\"x\", \"w\"], \"outputs\": [\"h\"]},\n"
    "  {\"name\": \"upd\", \"start_us\": 2, \"end_us\": 5.5e0, \"workspace\": 4, "
    "\"inputs\": [\"w\", \"h\"], \"outputs\": [\"w\", \"g\"]}]}\n";

Test(workload_json, base_case_parses) {
    tsl_workload *w;
    /* end_us 5.5e0 vs period 5: fix the base into a valid text first */
    char *t = strdup(base_json);
    memcpy(strstr(t, "5.5e0"), "5.0e0", 5);
    cr_assert_eq(tsl_workload_parse_json(t, strlen(t), "ok.json", &w), TSL_OK, "%s",
                 tsl_last_error());
    cr_assert_eq(w->n_tensors, 4);
    cr_assert_eq(w->n_ops, 2);
    cr_assert_eq(w->tensors[2].producer, 0);
    cr_assert_eq(w->tensors[3].producer, 1);
    cr_assert_eq(w->tensors[1].producer, -1);
    cr_assert_eq(w->tensors[0].producer, -1);
    cr_assert_eq(w->ops[1].workspace, 4);
    cr_assert_eq(w->ops[1].n_out, 2);
    cr_assert_eq(w->ops[1].out[0], 1);
    cr_assert_eq(w->ops[1].in[1], 2);
    cr_assert_eq(w->period_us, 5.0);
    cr_assert_eq(w->optimizer_begin, 1);
    tsl_workload_free(w);
    free(t);
}

typedef struct bad_case {
    const char *from, *to; /* replace the first `from` of the valid text by `to` */
    const char *expect;    /* substring of the error message */
} bad_case;

Test(workload_json, each_malformed_case_names_field_and_value) {
    static const bad_case cases[] = {
        {"\"end_us\": 5.5e0", "\"end_us\": 5.5e0", "period_us: 5 is not the end of the last op (5.5)"},
        {"{\"job\"", "[{\"job\"", "not valid JSON"},
        {"\"job\": \"j\", ", "", "root: missing field 'job'"},
        {"\"job\": \"j\"", "\"job\": \"j\", \"extra\": 1", "root: unknown field 'extra'"},
        {"\"job\": \"j\"", "\"job\": 7", "job: expected a string, got an integer 7"},
        {"\"job\": \"j\"", "\"job\": \"\"", "job: \"\" has 0 characters"},
        {"\"job\": \"j\"", "\"job\": \"j\", \"job\": \"k\"", "duplicate object key"},
        {"\"name\": \"w\"", "\"name\": \"x\"", "tensors[1].name: duplicate tensor name 'x' (also tensors[0])"},
        {"\"bytes\": 16", "\"bytes\": -16", "tensors[0].bytes: -16 is negative"},
        {"\"bytes\": 16", "\"bytes\": 1000000000000000000", "tensors[0].bytes: 1000000000000000000 is absurd"},
        {"\"bytes\": 16", "\"bytes\": 16.5", "tensors[0].bytes: expected an integer, got a number 16.5"},
        {"\"bytes\": 16", "\"bytes\": \"16\"", "tensors[0].bytes: expected an integer, got a string \"16\""},
        {"\"kind\": \"activation\"", "\"kind\": \"activaton\"", "tensors[2].kind: 'activaton' is not a tensor kind"},
        {"\"kind\": \"activation\"", "\"kind\": null", "tensors[2].kind: expected a string, got null"},
        {"\"kind\": \"input\"}", "\"kind\": \"input\", \"dtype\": \"f32\"}", "tensors[0]: unknown field 'dtype'"},
        {", \"kind\": \"parameter\"", "", "tensors[1]: missing field 'kind'"},
        {"{\"name\": \"x\", \"bytes\": 16, \"kind\": \"input\"}", "3", "tensors[0]: expected an object, got an integer 3"},
        {"[\"w\", \"h\"]", "[\"w\", \"nope\"]", "ops[1].inputs[1]: unknown tensor \"nope\""},
        {"[\"w\", \"h\"]", "[\"w\", 3]", "ops[1].inputs[1]: expected a tensor name, got an integer 3"},
        {"[\"w\", \"h\"]", "\"w\"", "ops[1].inputs: expected an array, got a string \"w\""},
        {"\"outputs\": [\"w\", \"g\"]", "\"outputs\": [\"w\", \"zz\"]", "ops[1].outputs[1]: unknown tensor \"zz\""},
        {"\"start_us\": 0", "\"start_us\": -1", "ops[0].start_us: -1 is negative"},
        {"\"start_us\": 0", "\"start_us\": 1", "ops[0].start_us: 1 must be 0"},
        {"\"start_us\": 2", "\"start_us\": 2.5", "ops[1].start_us: 2.5 is not the end of ops[0] (2): op times must be contiguous"},
        {"\"end_us\": 2,", "\"end_us\": 1e300,", "ops[0].end_us: 1e+300 us is absurd"},
        {"\"end_us\": 5.0e0", "\"end_us\": 1.5", "ops[1].end_us: 1.5 is before start_us 2 (negative latency)"},
        {"\"end_us\": 2,", "\"end_us\": \"2\",", "ops[0].end_us: expected a number, got a string \"2\""},
        {"\"workspace\": 4", "\"workspace\": -4", "ops[1].workspace: -4 is negative"},
        {"\"workspace\": 0, ", "", "ops[0]: missing field 'workspace'"},
        {"\"outputs\": [\"h\"]}", "\"outputs\": [\"h\"], \"latency\": 2}", "ops[0]: unknown field 'latency'"},
        {"\"name\": \"upd\"", "\"name\": \"mm\"", "ops[1].name: duplicate op name 'mm' (also ops[0])"},
        {"\"name\": \"mm\"", "\"name\": \"start\"", "ops[0].name: 'start' is reserved"},
        {"\"inputs\": [\"x\", \"w\"]", "\"inputs\": [\"x\", \"g\"]", "ops[0].inputs[1]: tensor 'g' (gradient) is read before any op generates it"},
        {"\"outputs\": [\"w\", \"g\"]", "\"outputs\": [\"w\", \"h\"]", "ops[1].outputs[1]: tensor 'h' is generated twice (ops[0] 'mm' and ops[1] 'upd')"},
        {"\"outputs\": [\"h\"]", "\"outputs\": [\"h\", \"x\"]", "ops[0].outputs[1]: tensor 'x' has kind input"},
        {"\"outputs\": [\"w\", \"g\"]", "\"outputs\": [\"g\", \"g\"]", "ops[1].outputs[1]: tensor 'g' is listed twice (also outputs[0])"},
        {"\"outputs\": [\"h\"]", "\"outputs\": []", "ops[0].outputs: empty"},
        {"\"optimizer_begin\": 1", "\"optimizer_begin\": 3", "optimizer_begin: 3 is out of range (expected 0 to 2)"},
        {"\"optimizer_begin\": 1", "\"optimizer_begin\": -1", "optimizer_begin: -1 is negative"},
        {"\"optimizer_begin\": 1", "\"optimizer_begin\": 1.0", "optimizer_begin: expected an integer"},
        {"\"period_us\": 5", "\"period_us\": -5", "period_us: -5 is negative"},
        {"\"period_us\": 5,", "", "root: missing field 'period_us'"},
        {"\"name\": \"x\"", "\"name\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"",
         "tensors[0].name: \"xxxxxxxxx"},
        {"]}\n", "]} trailing\n", "not valid JSON"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        /* the base text with the period fixed (case 0 keeps it broken) */
        char text[4096];
        snprintf(text, sizeof text, "%s", base_json);
        if (c > 0) memcpy(strstr(text, "5.5e0"), "5.0e0", 5);
        char *at = strstr(text, cases[c].from);
        cr_assert(at, "case %zu: '%s' not in the base text", c, cases[c].from);
        char out[4096];
        size_t pre = (size_t)(at - text);
        snprintf(out, sizeof out, "%.*s%s%s", (int)pre, text, cases[c].to, at + strlen(cases[c].from));
        tsl_workload *w = (tsl_workload *)&w; /* must stay untouched on failure */
        tsl_workload *const sentinel = w;
        tsl_status st = tsl_workload_parse_json(out, strlen(out), "bad.json", &w);
        cr_assert_eq(st, TSL_ERR_FORMAT, "case %zu: status %d for\n%s", c, st, out);
        cr_assert(w == sentinel, "case %zu: *out written on failure", c);
        const char *msg = tsl_last_error();
        cr_assert(strncmp(msg, "bad.json", 8) == 0, "case %zu: message does not name the file: %s", c, msg);
        cr_assert(strstr(msg, cases[c].expect), "case %zu: message\n  %s\nlacks\n  %s", c, msg,
                  cases[c].expect);
    }
}

Test(workload_json, unreadable_file_and_empty_text) {
    tsl_workload *w;
    cr_assert_eq(tsl_workload_read_json("/nonexistent/w.json", &w), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent/w.json"), "%s", tsl_last_error());
    cr_assert_eq(tsl_workload_parse_json("", 0, "empty.json", &w), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "empty.json:"), "%s", tsl_last_error());
    cr_assert_eq(tsl_workload_parse_json("{\"job\": \"j\"} x", 14, "t.json", &w), TSL_ERR_FORMAT);
    static const char obj[] = "{\"job\": \"j\", \"period_us\": 0, \"optimizer_begin\": 0, "
                              "\"tensors\": {}, \"ops\": []}";
    cr_assert_eq(tsl_workload_parse_json(obj, strlen(obj), "t.json", &w), TSL_ERR_FORMAT);
    cr_assert(strstr(tsl_last_error(), "t.json: tensors: expected an array, got an object {}"), "%s",
              tsl_last_error());
}
