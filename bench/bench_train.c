/*
 * bench_train.c - vanilla training throughput and peak load: fast kernels
 * (oneDNN and own loops) against the reference kernels, at 1 and 2 threads.
 *
 *   bench_train [--models resnet18,vgg11] [--batch 32] [--image 32]
 *               [--reps 3] [--iters 2] [--ref-iters 1]
 *
 * Every repetition runs every configuration once, in turn (side by side in
 * time, so that machine noise hits them alike); the table gives the median
 * images/s over repetitions with the min..max spread, the peak load from the
 * allocator ledger, and the speed-up of fast over reference kernels at the
 * same thread count. Machine, thread counts and library versions are printed
 * first.
 */
#include <jansson.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "bench_machine.h"
#include "tensile/ops.h"
#include "tensile/models.h"
#include "tensile/session.h"

typedef struct result {
    double ips[64];
    int n;
    size_t peak_load;
} result;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One repetition of one configuration: warm-up step, then `iters` timed steps. */
static int run_once(tsl_graph *g, const tsl_model_cfg *cfg, tsl_kernel_mode k, int threads,
                    int iters, result *r) {
    tsl_session_opts o = tsl_session_opts_default();
    o.kernels = k;
    o.nthreads = threads;
    tsl_session *s;
    if (tsl_session_new(g, &o, &s) != TSL_OK) return 0;
    size_t n = (size_t)cfg->batch * cfg->in_channels * cfg->image_size * cfg->image_size;
    float *x = malloc(n * sizeof *x);
    int32_t *y = malloc((size_t)cfg->batch * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int i = 0; i < cfg->batch; i++) y[i] = i % cfg->n_classes;
    tsl_step_stats st;
    int ok = tsl_session_step(s, x, y, &st) == TSL_OK; /* warm-up: primitive creation */
    double ms = 0;
    for (int i = 0; i < iters && ok; i++) {
        ok = tsl_session_step(s, x, y, &st) == TSL_OK;
        ms += st.ms;
        r->peak_load = st.peak_load;
    }
    if (ok) r->ips[r->n++] = cfg->batch * iters / (ms / 1e3);
    free(x);
    free(y);
    tsl_session_free(s);
    return ok;
}

int main(int argc, char **argv) {
    char models[256] = "resnet18,vgg11";
    int batch = 32, image = 32, reps = 3, iters = 2, ref_iters = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc) snprintf(models, sizeof models, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--image") && i + 1 < argc) image = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ref-iters") && i + 1 < argc) ref_iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--models a,b] [--batch B] [--image S] [--reps R] [--iters N] [--ref-iters N]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 64 || iters < 1 || ref_iters < 1 || batch < 1 || image < 1) {
        fprintf(stderr, "bench_train: bad arguments\n");
        return 2;
    }
    bench_print_machine(NULL);
    printf("workload: batch %d, %dx%dx3 images, 10 classes, SGD momentum 0.9; %d repetitions "
           "(interleaved), %d timed steps per repetition (%d with reference kernels) after one warm-up\n\n",
           batch, image, image, reps, iters, ref_iters);
    printf("| model | kernels | threads | images/s (median) | spread (min..max) | peak load | fast/ref |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (char *save = NULL, *m = strtok_r(models, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        tsl_model_cfg cfg = tsl_model_cfg_default(m);
        cfg.batch = batch;
        cfg.image_size = image;
        cfg.in_channels = 3;
        cfg.n_classes = 10;
        tsl_graph *g = tsl_graph_new(m);
        tsl_tid loss;
        tsl_optimizer_cfg o = tsl_sgd_default(0.01f);
        if (tsl_model_build(g, m, &cfg, &loss) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
            tsl_graph_optimizer(g, &o) != TSL_OK || tsl_graph_finalize(g) != TSL_OK) {
            fprintf(stderr, "bench_train: %s: %s\n", m, tsl_last_error());
            return 1;
        }
        result r[2][2] = {0}; /* [kernels][threads-1] */
        for (int rep = 0; rep < reps; rep++)
            for (int k = 0; k < 2; k++)
                for (int t = 1; t <= 2; t++)
                    if (!run_once(g, &cfg, k ? TSL_KERNELS_REF : TSL_KERNELS_FAST, t,
                                  k ? ref_iters : iters, &r[k][t - 1])) {
                        fprintf(stderr, "bench_train: %s: %s\n", m, tsl_last_error());
                        return 1;
                    }
        double med[2][2];
        for (int k = 0; k < 2; k++)
            for (int t = 0; t < 2; t++) {
                qsort(r[k][t].ips, (size_t)r[k][t].n, sizeof(double), cmp);
                med[k][t] = r[k][t].ips[r[k][t].n / 2];
            }
        for (int k = 0; k < 2; k++)
            for (int t = 0; t < 2; t++) {
                result *x = &r[k][t];
                char ratio[32] = "";
                if (k == 0) snprintf(ratio, sizeof ratio, "%.1fx", med[0][t] / med[1][t]);
                printf("| %s | %s | %d | %.1f | %.1f..%.1f | %.1f MiB | %s |\n", m,
                       k ? "reference" : "fast (oneDNN)", t + 1, med[k][t], x->ips[0],
                       x->ips[x->n - 1], (double)x->peak_load / 1048576.0, ratio);
            }
        fflush(stdout);
        tsl_graph_free(g);
    }
    return 0;
}
