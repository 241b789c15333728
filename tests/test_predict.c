/*
 * test_predict.c - cold start's predictor (tensile/predict.h): the MLP
 * trained through Tensile's graph learns a known function; save and load
 * give the same predictions; every fault of the two file formats is
 * refused naming the file, the line, the field and the value; features;
 * a tiny profiling run; whole-graph latencies. No timed assertion.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/predict.h"
#include "tensile/workload.h"

/* A known function of the features: log us = 0.8 f8 - 0.5 f1 + 0.3 f2^2/8 +
 * 0.7 util + 1, with f8 in [2, 12], f1, f2 in [0, 4], util in {0, .5, 1}. */
static tsl_op_sample *synthetic(int n, uint64_t seed) {
    tsl_op_sample *s = calloc((size_t)n, sizeof *s);
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        s[i].type = TSL_OP_CONV2D;
        s[i].f[1] = th_uniform(&st, 0, 4);
        s[i].f[2] = th_uniform(&st, 0, 4);
        s[i].f[8] = th_uniform(&st, 2, 12);
        s[i].f[9] = s[i].f[8] * 0.5;
        s[i].f[11] = (double)(i % 3) / 2;
        double lg = 0.8 * s[i].f[8] - 0.5 * s[i].f[1] + 0.3 * s[i].f[2] * s[i].f[2] / 8 +
                    0.7 * s[i].f[11] + 1;
        s[i].latency_us = exp(lg);
    }
    return s;
}

Test(predict, mlp_learns_a_known_function) {
    tsl_op_sample *s = synthetic(400, 11);
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.only = TSL_PRED_MLP;
    o.epochs = 150;
    tsl_predictor *p;
    tsl_pred_report r;
    cr_assert_eq(tsl_predictor_train(s, 400, &o, &p, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(r.n_types, 1);
    cr_assert_eq(r.acc[0].type, TSL_OP_CONV2D);
    cr_assert_gt(r.acc[0].n_test, 40);
    /* held out: a few per cent, far better than the cost model knows */
    cr_assert_lt(r.acc[0].mape[TSL_PRED_MLP], 10.0, "MLP held-out MAPE %.2f %%", r.acc[0].mape[TSL_PRED_MLP]);
    cr_assert_gt(r.acc[0].r2[TSL_PRED_MLP], 0.95, "MLP held-out R2 %.3f", r.acc[0].r2[TSL_PRED_MLP]);
    tsl_pred_kind k;
    cr_assert(tsl_predictor_has(p, TSL_OP_CONV2D, &k) && k == TSL_PRED_MLP);
    cr_assert(!tsl_predictor_has(p, TSL_OP_RELU, NULL));
    cr_assert_eq(tsl_predictor_us(p, TSL_OP_RELU, s[0].f), -1);
    tsl_predictor_free(p);
    free(s);
}

Test(predict, untrained_mlp_does_not_learn_it) {
    /* the same check must be able to fail: no epochs, no fit */
    tsl_op_sample *s = synthetic(400, 11);
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.only = TSL_PRED_MLP;
    o.epochs = 0;
    tsl_predictor *p;
    tsl_pred_report r;
    cr_assert_eq(tsl_predictor_train(s, 400, &o, &p, &r), TSL_OK, "%s", tsl_last_error());
    cr_assert_gt(r.acc[0].mape[TSL_PRED_MLP], 30.0);
    tsl_predictor_free(p);
    free(s);
}

static double score(const tsl_pred_accuracy *a, int k) {
    return a->mape[k] / 100 + (1 - a->r2[k]);
}

Test(predict, the_choice_is_the_most_accurate_kind) {
    tsl_op_sample *s = synthetic(300, 5);
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.epochs = 60;
    tsl_predictor *p;
    tsl_pred_report r;
    cr_assert_eq(tsl_predictor_train(s, 300, &o, &p, &r), TSL_OK, "%s", tsl_last_error());
    const tsl_pred_accuracy *a = &r.acc[0];
    const double kept = a->cost_model_kept ? score(a, TSL_PRED_KINDS) : score(a, a->chosen);
    for (int k = 0; k <= TSL_PRED_KINDS; k++)
        cr_assert_leq(kept, score(a, k) + 0.01 + 1e-9, "kept %s (%.3f) beside kind %d (%.3f)",
                      tsl_pred_kind_name(a->chosen), kept, k, score(a, k));
    cr_assert(!a->cost_model_kept, "the cost model knows nothing of this function");
    tsl_predictor_free(p);
    free(s);
}

Test(predict, save_and_load_give_the_same_predictions) {
    tsl_op_sample *s = synthetic(200, 3);
    for (int i = 100; i < 200; i++) s[i].type = TSL_OP_RELU;
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.epochs = 20;
    tsl_predictor *p, *q;
    cr_assert_eq(tsl_predictor_train(s, 200, &o, &p, NULL), TSL_OK, "%s", tsl_last_error());
    char path[] = "/tmp/tsl_pred_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tsl_predictor_save(p, path), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_predictor_load(path, &q), TSL_OK, "%s", tsl_last_error());
    for (int i = 0; i < 200; i++) {
        double a = tsl_predictor_us(p, s[i].type, s[i].f), b = tsl_predictor_us(q, s[i].type, s[i].f);
        cr_assert(a > 0 && fabs(a - b) <= 1e-9 * a, "sample %d: %.17g vs %.17g", i, a, b);
    }
    unlink(path);
    tsl_predictor_free(p);
    tsl_predictor_free(q);
    free(s);
}

/* ---- file faults ---------------------------------------------------------- */

static const char good_head[] = "tensile-predictor 1\nfeatures 12\ncost_model 5e10 1e10 5\n";
static const char good_model[] =
    "model relu linear 0\n"
    "mu 0 0 0 0 0 0 0 0 0 0 0 0\n"
    "sd 1 1 1 1 1 1 1 1 1 1 1 1\n"
    "target 1 1\n"
    "linear 0 0 0 0 0 0 0 0 0.5 0 0 0 0\n"
    "roofline 0 0\n"
    "widths\n";

static void expect_bad(const char *text, const char *want1, const char *want2) {
    tsl_predictor *p = (tsl_predictor *)1;
    tsl_status st = tsl_predictor_parse(text, strlen(text), "pred.tsp", &p);
    cr_assert_eq(st, TSL_ERR_FORMAT, "accepted:\n%s", text);
    cr_assert_null(p);
    const char *e = tsl_last_error();
    cr_assert(strstr(e, "pred.tsp:"), "no file and line in: %s", e);
    cr_assert(strstr(e, want1), "'%s' not in: %s", want1, e);
    if (want2) cr_assert(strstr(e, want2), "'%s' not in: %s", want2, e);
}

Test(predict, a_good_file_parses) {
    char t[2048];
    snprintf(t, sizeof t, "%s%send\n", good_head, good_model);
    tsl_predictor *p;
    cr_assert_eq(tsl_predictor_parse(t, strlen(t), "pred.tsp", &p), TSL_OK, "%s", tsl_last_error());
    double f[TSL_PRED_NF] = {0};
    f[8] = 2; /* y = 0.5 * 2 = 1 -> log us = 1 + 1 */
    cr_assert(fabs(tsl_predictor_us(p, TSL_OP_RELU, f) - exp(2.0)) < 1e-9);
    tsl_predictor_free(p);
}

Test(predict, file_faults_name_file_line_field_and_value) {
    char t[4096];
    expect_bad("", "empty", NULL);
    expect_bad("tensile-plan 1\n", "magic", "tensile-plan");
    expect_bad("tensile-predictor 2\nfeatures 12\n", ":1:", "version");
    expect_bad("tensile-predictor 1\nfeatures 9\n", ":2:", "features' has value 9");
    expect_bad("tensile-predictor 1\nfeatures 12\ncost_model 0 1 1\nend\n", ":3:", "cost_model");
    expect_bad("tensile-predictor 1\nfeatures 12\ncost_model 1 x 1\nend\n", "cost_model[1]", "'x'");
    snprintf(t, sizeof t, "%s%s", good_head, good_model);
    expect_bad(t, "without its 'end'", NULL); /* truncated */
    snprintf(t, sizeof t, "%smodel warp linear 0\n", good_head);
    expect_bad(t, ":4:", "'op' has value 'warp'");
    snprintf(t, sizeof t, "%smodel relu forest 0\n", good_head);
    expect_bad(t, "'kind' has value 'forest'", NULL);
    snprintf(t, sizeof t, "%smodel relu mlp 0\n", good_head);
    expect_bad(t, "kind mlp needs layers", NULL);
    snprintf(t, sizeof t, "%s%s", good_head, good_model);
    char *sd = strstr(t, "sd 1 1");
    sd[3] = '0';
    strcat(t, "end\n");
    expect_bad(t, ":6:", "sd[0]");
    snprintf(t, sizeof t, "%s%s", good_head, good_model);
    char *lin = strstr(t, "0.5");
    memcpy(lin, "inf", 3);
    strcat(t, "end\n");
    expect_bad(t, ":8:", "linear[8]");
    snprintf(t, sizeof t, "%s%s%send\n", good_head, good_model, good_model);
    expect_bad(t, "a second model of 'relu'", NULL);
    snprintf(t, sizeof t, "%s%send\nmodel\n", good_head, good_model);
    expect_bad(t, "after 'end'", NULL);
    /* an MLP whose weights stop short */
    snprintf(t, sizeof t,
             "%smodel relu mlp 1\nmu 0 0 0 0 0 0 0 0 0 0 0 0\nsd 1 1 1 1 1 1 1 1 1 1 1 1\n"
             "target 0 1\nlinear 0 0 0 0 0 0 0 0 0 0 0 0 0\nroofline 0 0\nwidths 12 1\n"
             "w 0 1 2 3\nend\n",
             good_head);
    expect_bad(t, "'w' line", NULL);
    snprintf(t, sizeof t,
             "%smodel relu mlp 1\nmu 0 0 0 0 0 0 0 0 0 0 0 0\nsd 1 1 1 1 1 1 1 1 1 1 1 1\n"
             "target 0 1\nlinear 0 0 0 0 0 0 0 0 0 0 0 0 0\nroofline 0 0\nwidths 11 1\n",
             good_head);
    expect_bad(t, "widths[0]", "11");
    expect_bad("tensile-predictor 1\nfeatures 12\x01\n", "control character", NULL);
}

Test(predict, load_errors_name_the_path) {
    tsl_predictor *p;
    cr_assert_eq(tsl_predictor_load("/nonexistent/pred.tsp", &p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent/pred.tsp"), "%s", tsl_last_error());
    cr_assert_eq(tsl_predictor_load("/tmp", &p), TSL_ERR_IO);
}

Test(predict, samples_round_trip_and_faults) {
    tsl_op_sample *s = synthetic(20, 9), *r;
    size_t n;
    char path[] = "/tmp/tsl_samples_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    cr_assert_eq(tsl_samples_save(path, s, 20, "test\nsource"), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_samples_load(path, &r, &n), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(n, 20);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(r[i].type, s[i].type);
        cr_assert(fabs(r[i].latency_us - s[i].latency_us) <= 1e-5 * s[i].latency_us);
        for (int k = 0; k < TSL_PRED_NF; k++) cr_assert(fabs(r[i].f[k] - s[i].f[k]) <= 1e-8 * (1 + fabs(s[i].f[k])));
    }
    unlink(path);
    free(r);
    free(s);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"tensile-op-samples 2\nfeatures 12\n", "version"},
        {"tensile-op-samples 1\nfeatures 3\n", "features' has value 3"},
        {"tensile-op-samples 1\nfeatures 12\nwarp 1 0 0 0 0 0 0 0 0 0 0 0 0\n", ":3: field 'op' has value 'warp'"},
        {"tensile-op-samples 1\nfeatures 12\nrelu -1 0 0 0 0 0 0 0 0 0 0 0 0\n", "'latency_us' has value '-1'"},
        {"tensile-op-samples 1\nfeatures 12\nrelu 1 0 0 0 0 0 0 0 0 0 0 0\n", "13 fields, expected 14"},
        {"tensile-op-samples 1\nfeatures 12\nrelu 1 0 0 0 0 0 0 0 0 0 0 0 2\n", "'util' has value '2'"},
        {"tensile-op-samples 1\nfeatures 12\nrelu 1 0 0 nan 0 0 0 0 0 0 0 0 0\n", "'f2' has value 'nan'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tsl_samples_parse(bad[i].text, strlen(bad[i].text), "s.tss", &r, &n), TSL_ERR_FORMAT,
                     "accepted %s", bad[i].text);
        cr_assert(strstr(tsl_last_error(), "s.tss:") && strstr(tsl_last_error(), bad[i].want),
                  "'%s' not in: %s", bad[i].want, tsl_last_error());
    }
}

/* ---- features, profiling, whole graphs ------------------------------------- */

Test(predict, features_of_a_conv) {
    tsl_graph *g = tsl_graph_new("f");
    const int64_t d[4] = {2, 3, 8, 8};
    tsl_tid x = tsl_input(g, "input", tsl_shape_from(d, 4));
    tsl_conv2d_layer(g, "c", x, 5, 3, 3, tsl_conv_sp(2, 1), 0);
    double f[TSL_PRED_NF];
    tsl_op_features(g, tsl_graph_op(g, 0), 7.0, f);
    cr_assert(fabs(f[0] - log1p(2)) < 1e-12 && fabs(f[1] - log1p(3)) < 1e-12 && fabs(f[2] - log1p(8)) < 1e-12);
    cr_assert(fabs(f[4] - log1p(5)) < 1e-12);
    cr_assert_eq(f[5], 3);
    cr_assert_eq(f[6], 2);
    cr_assert_eq(f[7], 1);
    cr_assert_gt(f[8], 0);
    cr_assert_eq(f[11], 1, "utilisation clamped to 1");
    tsl_graph_free(g);
}

static int calls;
static void count(double done, const char *what, void *user) {
    (void)user, (void)what;
    cr_assert(done >= 0 && done <= 1);
    calls++;
}

Test(predict, tiny_profile_covers_forward_and_backward_ops) {
    tsl_oprof_opts o = tsl_oprof_opts_default();
    o.small = 1, o.minutes = 0.02, o.repeats = 1, o.max_load = 1;
    o.progress = count;
    tsl_op_sample *s;
    size_t n;
    calls = 0;
    cr_assert_eq(tsl_profile_ops(&o, &s, &n), TSL_OK, "%s", tsl_last_error());
    cr_assert_gt(n, 0);
    cr_assert_gt(calls, 0);
    int seen[TSL_OP_COUNT] = {0}, loaded = 0;
    for (size_t i = 0; i < n; i++) {
        seen[s[i].type] = 1;
        cr_assert_gt(s[i].latency_us, 0);
        if (s[i].f[TSL_PRED_NF - 1] > 0) loaded = 1;
    }
    cr_assert(seen[TSL_OP_CONV2D] && seen[TSL_OP_CONV2D_BWD_DATA] && seen[TSL_OP_CONV2D_BWD_FILTER]);
    cr_assert(seen[TSL_OP_BATCHNORM_BWD] && seen[TSL_OP_RELU_BWD]);
    if (calls > 1) cr_assert(loaded, "the second probe runs under load");
    free(s);
    o.minutes = 0;
    cr_assert_eq(tsl_profile_ops(&o, &s, &n), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "minutes"), "%s", tsl_last_error());
}

Test(predict, latencies_of_a_graph_fall_back_to_the_cost_model) {
    tsl_model_cfg cfg = tsl_model_cfg_default("cnn");
    tsl_graph *g = tsl_graph_new("cnn");
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, "cnn", &cfg, &loss), TSL_OK);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK);
    tsl_optimizer_cfg opt = tsl_adam_default(1e-3f);
    cr_assert_eq(tsl_graph_optimizer(g, &opt), TSL_OK);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK);
    tsl_op_sample *s = synthetic(50, 2);
    tsl_pred_train_opts o = tsl_pred_train_opts_default();
    o.epochs = 5;
    tsl_predictor *p;
    cr_assert_eq(tsl_predictor_train(s, 50, &o, &p, NULL), TSL_OK, "%s", tsl_last_error());
    int32_t no = tsl_graph_n_ops(g);
    double *us = malloc(sizeof *us * (size_t)no);
    tsl_device_profile dev = tsl_profile_cpu_rough();
    tsl_predictor_latencies(p, g, 0, &dev, us);
    for (int32_t i = 0; i < no; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        cr_assert_gt(us[i], 0);
        if (op->type != TSL_OP_CONV2D)
            cr_assert_eq(us[i], tsl_cost_model_us(g, op, &dev), "op %s", op->name);
    }
    free(us);
    free(s);
    tsl_predictor_free(p);
    tsl_graph_free(g);
}
