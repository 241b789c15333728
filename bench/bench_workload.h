/*
 * bench_workload.h - a zoo model's training iteration (forward, loss,
 * backward, optimizer) as a workload on a device profile's cost model
 * (header-only: each file of bench/ is its own program).
 */
#ifndef TSL_BENCH_WORKLOAD_H
#define TSL_BENCH_WORKLOAD_H
#include <stdio.h>
#include <stdlib.h>

#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/workload.h"

/* Model m at `batch` (image size: the model's default when image is 0),
 * with Adam (adam != 0) or SGD with momentum, timed on dev; named m. On
 * any failure prints "PROG: m: why" and exits 1. */
static inline tsl_workload *bench_workload(const char *prog, const char *m, int batch, int image,
                                           int adam, const tsl_device_profile *dev) {
    tsl_model_cfg cfg = tsl_model_cfg_default(m);
    cfg.batch = batch;
    if (image) cfg.image_size = image;
    tsl_graph *g = tsl_graph_new(m);
    tsl_tid loss;
    tsl_optimizer_cfg o = adam ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
    tsl_workload *w = NULL;
    if (!g || tsl_model_build(g, m, &cfg, &loss) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
        tsl_graph_optimizer(g, &o) != TSL_OK || tsl_graph_finalize(g) != TSL_OK ||
        tsl_workload_from_graph(g, m, NULL, dev, &w) != TSL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, m, tsl_last_error());
        exit(1);
    }
    tsl_graph_free(g);
    return w;
}
#endif
