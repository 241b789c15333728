/*
 * bench_conv_algos.c - every convolution of a model with each of its
 * algorithms on the CPU backend (tensile/ops.h, "algorithms"): latency and
 * workspace per op, as the workload's menu describes them.
 *
 *   bench_conv_algos [--model resnet18] [--batch 4] [--image 32] [--reps 5]
 *                    [--threads 1]
 *
 * The model's graph (forward, backward, SGD) is built; every tensor gets a
 * device block filled with random values in [-1, 1) (the timings do not
 * depend on the values); each op with a menu (CONV2D, CONV2D_BWD_DATA,
 * CONV2D_BWD_FILTER) runs once per algorithm to warm up, then `reps`
 * rounds each run every algorithm once in turn (noise hits them alike);
 * the table gives the median milliseconds and the workspace bytes of each
 * algorithm (default = oneDNN, im2col, direct = the reference loops), and
 * per op type the median over ops of each algorithm's time over the
 * default's (what tsl_algo_ratios_default holds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "tensile/backend.h"
#include "tensile/backend_cpu.h"
#include "tensile/models.h"
#include "tensile/ops.h"
#include "tensile/workload.h"

#define MAXR 64

static void die(const char *what) {
    fprintf(stderr, "bench_conv_algos: %s: %s\n", what, tsl_last_error());
    exit(1);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    const char *model = "resnet18";
    int batch = 4, image = 32, reps = 5, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--image")) image = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_conv_algos: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1 || reps > MAXR || batch < 1 || threads < 1) {
        fprintf(stderr, "bench_conv_algos: reps in [1, %d], batch and threads >= 1\n", MAXR);
        return 2;
    }
    char extra[96];
    snprintf(extra, sizeof extra, "%d kernel thread(s)", threads);
    bench_print_machine(extra);
    tsl_model_cfg cfg = tsl_model_cfg_default(model);
    cfg.batch = batch;
    cfg.image_size = image;
    cfg.n_classes = 10;
    tsl_graph *g = tsl_graph_new(model);
    tsl_tid loss;
    if (tsl_model_build(g, model, &cfg, &loss) != TSL_OK) die("model");
    if (tsl_graph_backward(g, loss) != TSL_OK) die("backward");
    tsl_optimizer_cfg opt = tsl_sgd_default(0.01f);
    if (tsl_graph_optimizer(g, &opt) != TSL_OK || tsl_graph_finalize(g) != TSL_OK) die("graph");
    tsl_backend *b;
    if (tsl_cpu_backend_new((size_t)8 << 30, TSL_KERNELS_FAST, threads, &b) != TSL_OK)
        die("backend");
    int32_t nt = tsl_graph_n_tensors(g);
    void **dev = calloc((size_t)nt, sizeof *dev);
    uint64_t seed = 1;
    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *d = tsl_graph_tensor(g, t);
        size_t n = d->nbytes ? d->nbytes : 1;
        if (b->iface->alloc(b, n, &dev[t]) != TSL_OK) die("alloc");
        float *h = malloc(n);
        for (size_t k = 0; k < n / sizeof(float); k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            h[k] = d->dtype == TSL_F32 ? (float)((seed >> 40) * (2.0 / 16777216.0) - 1.0) : 0.0f;
        }
        if (d->dtype != TSL_F32) memset(h, 0, n);
        if (tsl_backend_upload(b, dev[t], h, n) != TSL_OK) die("upload");
        free(h);
    }
    printf("model %s, batch %d, image %d, %d reps; ms = median, ws = workspace bytes\n", model,
           batch, image, reps);
    printf("%-34s %-18s %10s %10s %10s %12s %12s\n", "op", "type", "default", "im2col",
           "direct", "ws default", "ws im2col");
    static double ratio[TSL_ALGO_RATIO_TYPES][TSL_ALGO_MAX][4096];
    int nr[TSL_ALGO_RATIO_TYPES] = {0};
    double total[TSL_ALGO_MAX] = {0};
    for (int32_t i = 0; i < tsl_graph_n_ops(g); i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        int na = tsl_op_n_algos(op), slot = tsl_algo_ratio_slot(op->type);
        if (na < 2 || slot < 0) continue;
        void *in[16], *out[16];
        for (int j = 0; j < op->n_in; j++) in[j] = dev[op->in[j]];
        for (int j = 0; j < op->n_out; j++) out[j] = dev[op->out[j]];
        double t[TSL_ALGO_MAX][MAXR], med[TSL_ALGO_MAX];
        size_t ws[TSL_ALGO_MAX];
        for (int r = -1; r < reps; r++)
            for (int k = 0; k < na; k++) {
                tsl_run_ctx ctx = {.step = 1, .training = 1, .algo = k};
                double ms;
                if (tsl_backend_run_op(b, g, op, in, out, &ctx, &ms) != TSL_OK) die(op->name);
                if (r >= 0) t[k][r] = ms;
            }
        for (int k = 0; k < na; k++) {
            med[k] = median(t[k], reps);
            total[k] += med[k];
            if (b->iface->op_algo_workspace(b, g, op, k, &ws[k]) != TSL_OK) die("workspace");
            if (nr[slot] < 4096) ratio[slot][k][nr[slot]] = med[k] / med[0];
        }
        nr[slot] += nr[slot] < 4096;
        printf("%-34s %-18s %10.3f %10.3f %10.3f %12zu %12zu\n", op->name,
               tsl_op_type_name(op->type), med[0], med[1], med[2], ws[0], ws[1]);
    }
    printf("%-34s %-18s %10.3f %10.3f %10.3f\n", "total", "", total[0], total[1], total[2]);
    static const char *const names[TSL_ALGO_RATIO_TYPES] = {"conv2d", "conv2d_bwd_data",
                                                            "conv2d_bwd_filter"};
    for (int s = 0; s < TSL_ALGO_RATIO_TYPES; s++) {
        if (!nr[s]) continue;
        printf("median ratio over the default, %-18s (%3d ops): im2col %.2f, direct %.2f\n",
               names[s], nr[s], median(ratio[s][1], nr[s]), median(ratio[s][2], nr[s]));
    }
    for (tsl_tid t = 0; t < nt; t++) b->iface->free(b, dev[t]);
    free(dev);
    tsl_backend_free(b);
    tsl_graph_free(g);
    return 0;
}
