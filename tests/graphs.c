/* graphs.c - see graphs.h. */
#include "graphs.h"
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "tensile/models.h"

/* x(8,12) -> linear 16 -> batchnorm -> relu -> linear 5 -> softmax_xent, SGD. */
tsl_graph *th_small_graph(void) {
    tsl_graph *g = tsl_graph_new("small");
    tsl_tid x = tsl_input(g, "input", TSL_SHAPE(8, 12));
    tsl_tid y = tsl_label(g, "label", TSL_SHAPE(8));
    tsl_tid h = tsl_linear_layer(g, "fc1", x, 16, 1);
    h = tsl_batchnorm(g, "bn1", h, (tsl_bn_attr){.eps = 1e-5f, .momentum = 0.1f});
    h = tsl_relu(g, "relu1", h);
    h = tsl_linear_layer(g, "fc2", h, 16, 1);
    h = tsl_relu(g, "relu2", h);
    tsl_tid logits = tsl_linear_layer(g, "fc3", h, 5, 1);
    tsl_tid loss = tsl_softmax_xent(g, "loss", logits, y);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = tsl_sgd_default(0.1f);
    cr_assert_eq(tsl_graph_optimizer(g, &o), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

/* An MLP whose activations outweigh its parameters: x(N,64) -> 3 x
 * (linear 128, relu) -> linear 10 -> softmax_xent, SGD. */
tsl_graph *th_wide_graph(int n) {
    tsl_graph *g = tsl_graph_new("wide");
    tsl_tid h = tsl_input(g, "input", TSL_SHAPE(n, 64));
    tsl_tid y = tsl_label(g, "label", TSL_SHAPE(n));
    char name[32];
    for (int i = 1; i <= 3; i++) {
        snprintf(name, sizeof name, "fc%d", i);
        h = tsl_linear_layer(g, name, h, 128, 1);
        snprintf(name, sizeof name, "relu%d", i);
        h = tsl_relu(g, name, h);
    }
    tsl_tid loss = tsl_softmax_xent(g, "loss", tsl_linear_layer(g, "out", h, 10, 1), y);
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = tsl_sgd_default(0.05f);
    cr_assert_eq(tsl_graph_optimizer(g, &o), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

tsl_graph *th_model_graph(const char *model, int batch, int image) {
    if (strcmp(model, "small") == 0) return th_small_graph();
    if (strcmp(model, "wide") == 0) return th_wide_graph(batch);
    tsl_model_cfg c = tsl_model_cfg_default(model);
    c.batch = batch;
    if (image) c.image_size = image;
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    cr_assert_eq(tsl_model_build(g, model, &c, &loss), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_backward(g, loss), TSL_OK, "%s", tsl_last_error());
    tsl_optimizer_cfg o = tsl_sgd_default(0.01f);
    cr_assert_eq(tsl_graph_optimizer(g, &o), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    return g;
}

/* A CPU-like device: 20 GFLOP/s, 10 GB/s memory, 4 GB/s per copy direction. */
tsl_device_profile th_cpu_profile(size_t mem) {
    tsl_device_profile d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "cpu-test");
    d.flops = 2e10;
    d.mem_bw = 1e10;
    d.mem_bytes = mem;
    d.h2d_bw = d.d2h_bw = 4e9;
    d.duplex = 1;
    d.launch_us = 2;
    d.copy_latency_us = 5;
    return d;
}

