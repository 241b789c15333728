/*
 * profile_ops.c - `tensile profile`'s measurements (tsl_profile_ops): probe
 * graphs over a grid of shapes and parameters, each run as a training
 * iteration on the CPU backend's fast kernels under a level of background
 * load, every op's kernel time a sample.
 *
 * A probe (N, C, H, Cout, k, s, pool, optimizer):
 *   x (N,C,H,H) -> conv k x k stride s pad k/2 -> batch norm -> relu
 *     -> max or avg pool 2x2 (when the map is at least 2 wide)
 *     -> conv 3x3 -> batch norm -> add (residual) -> relu
 *     -> concat with the residual -> global avg pool -> linear 8 Cout -> relu
 *     -> dropout 0.5 -> linear 10 -> softmax cross-entropy; backward; SGD or Adam
 * so that every op type of the zoo's models runs forward and backward.
 * The grid is walked in a seeded random order (probes whose two forward
 * convolutions take above 1 GFLOP skipped) until it ends or the time budget is spent; probe j
 * runs under load level j mod (max_load + 1); its utilisation feature is
 * (that level + the other processes' busy CPUs, measured over 100 ms every
 * 8 probes) / online CPUs, at most 1: on a shared machine the others'
 * load is part of what a kernel competes with.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/rand.h"
#include "predict/bgload.h"
#include "tensile/ops.h"
#include "tensile/predict.h"
#include "tensile/session.h"

tsl_oprof_opts tsl_oprof_opts_default(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (tsl_oprof_opts){.minutes = 2, .nthreads = 1, .max_load = cpus > 1 ? (int)cpus - 1 : 1,
                            .repeats = 3, .small = 0, .seed = 1};
}

typedef struct probe {
    int n, c, h, cout, k, s, pool, adam;
} probe;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tsl_graph *build(const probe *p) {
    tsl_graph *g = tsl_graph_new("probe");
    if (!g) return NULL;
    const int64_t xd[4] = {p->n, p->c, p->h, p->h}, yd[1] = {p->n};
    tsl_tid x = tsl_input(g, "input", tsl_shape_from(xd, 4));
    tsl_tid y = tsl_label(g, "label", tsl_shape_from(yd, 1));
    tsl_bn_attr bn = {.eps = 1e-5f, .momentum = 0.1f};
    tsl_tid h = tsl_conv2d_layer(g, "conv1", x, p->cout, p->k, p->k, tsl_conv_sp(p->s, p->k / 2), 0);
    h = tsl_relu(g, "relu1", tsl_batchnorm(g, "bn1", h, bn));
    int64_t w = (p->h + 2 * (p->k / 2) - p->k) / p->s + 1;
    if (w >= 2) {
        tsl_pool_attr pa = tsl_pool_ksp(2, 2, 0);
        h = p->pool ? tsl_avgpool2d(g, "pool", h, pa) : tsl_maxpool2d(g, "pool", h, pa);
    }
    tsl_tid r = tsl_conv2d_layer(g, "conv2", h, p->cout, 3, 3, tsl_conv_sp(1, 1), 0);
    r = tsl_relu(g, "relu2", tsl_add(g, "add", h, tsl_batchnorm(g, "bn2", r, bn)));
    tsl_tid cat[2] = {r, h};
    h = tsl_global_avgpool(g, "gap", tsl_concat(g, "concat", cat, 2));
    h = tsl_relu(g, "relu3", tsl_linear_layer(g, "fc1", h, 8 * p->cout, 1)); /* a wide FC layer */
    h = tsl_dropout(g, "drop", h, (tsl_dropout_attr){.p = 0.5f, .seed = 7});
    h = tsl_linear_layer(g, "fc", h, 10, 1);
    tsl_tid loss = tsl_softmax_xent(g, "loss", h, y);
    tsl_optimizer_cfg opt = p->adam ? tsl_adam_default(1e-3f) : tsl_sgd_default(0.01f);
    if (tsl_graph_status(g) != TSL_OK || tsl_graph_backward(g, loss) != TSL_OK ||
        tsl_graph_optimizer(g, &opt) != TSL_OK || tsl_graph_finalize(g) != TSL_OK) {
        tsl_graph_free(g);
        return NULL;
    }
    return g;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs probe p `repeats` times after a warm-up and appends one sample per
 * op (the median of its kernel times). */
static tsl_status run_probe(const probe *p, const tsl_oprof_opts *o, double util,
                            tsl_op_sample **s, size_t *n, size_t *cap) {
    tsl_graph *g = build(p);
    if (!g) {
        char why[400];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        return tsl_fail(TSL_ERR_INVALID, "profile: probe graph N%d C%d H%d Cout%d k%d s%d: %s", p->n,
                        p->c, p->h, p->cout, p->k, p->s, why);
    }
    tsl_session_opts so = tsl_session_opts_default();
    so.nthreads = o->nthreads;
    so.device_memory = (size_t)2 << 30;
    tsl_session *ss = NULL;
    const int32_t no = tsl_graph_n_ops(g);
    const size_t nx = (size_t)p->n * (size_t)p->c * (size_t)p->h * (size_t)p->h;
    float *x = malloc(sizeof *x * nx);
    int32_t *y = malloc(sizeof *y * (size_t)p->n);
    double *ms = malloc(sizeof *ms * (size_t)no * (size_t)o->repeats);
    double *col = malloc(sizeof *col * (size_t)o->repeats);
    tsl_status st = (!x || !y || !ms || !col) ? tsl_fail(TSL_ERR_OOM, "profile: out of host memory")
                                              : tsl_session_new(g, &so, &ss);
    if (st == TSL_OK) {
        for (size_t i = 0; i < nx; i++) x[i] = (float)(tsl__u01(i) - 0.5);
        for (int i = 0; i < p->n; i++) y[i] = i % 10;
        st = tsl_session_step(ss, x, y, NULL); /* warm-up */
    }
    for (int r = 0; st == TSL_OK && r < o->repeats; r++) {
        st = tsl_session_step(ss, x, y, NULL);
        for (int32_t i = 0; i < no; i++) ms[(size_t)r * (size_t)no + (size_t)i] = tsl_session_op_ms(ss, i);
    }
    if (st == TSL_OK && *n + (size_t)no > *cap) {
        size_t nc = (*cap + (size_t)no) * 2;
        tsl_op_sample *ns = realloc(*s, nc * sizeof *ns);
        if (!ns) st = tsl_fail(TSL_ERR_OOM, "profile: out of host memory for samples");
        else *s = ns, *cap = nc;
    }
    for (int32_t i = 0; st == TSL_OK && i < no; i++) {
        for (int r = 0; r < o->repeats; r++) col[r] = ms[(size_t)r * (size_t)no + (size_t)i];
        qsort(col, (size_t)o->repeats, sizeof *col, cmp_double);
        double med = col[o->repeats / 2] * 1e3;
        if (!(med > 0)) continue;
        tsl_op_sample *e = &(*s)[(*n)++];
        const tsl_op *op = tsl_graph_op(g, i);
        e->type = op->type;
        e->latency_us = med;
        tsl_op_features(g, op, util, e->f);
    }
    tsl_session_free(ss);
    tsl_graph_free(g);
    free(x), free(y), free(ms), free(col);
    return st;
}

tsl_status tsl_profile_ops(const tsl_oprof_opts *o, tsl_op_sample **out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (!(o->minutes > 0 && o->minutes <= 24 * 60))
        return tsl_fail(TSL_ERR_INVALID, "profile: minutes = %g, must be in (0, 1440]", o->minutes);
    if (o->nthreads < 1 || o->nthreads > 1024 || o->repeats < 1 || o->repeats > 1000 ||
        o->max_load < 0 || o->max_load > 64)
        return tsl_fail(TSL_ERR_INVALID, "profile: nthreads = %d (1..1024), repeats = %d (1..1000), "
                                         "max_load = %d (0..64)",
                        o->nthreads, o->repeats, o->max_load);
    static const int sN[] = {1, 2}, sC[] = {3, 4}, sH[] = {6, 8}, sO[] = {4, 8}, sK[] = {1, 3},
                     sS[] = {1};
    static const int fN[] = {1, 4, 8, 16, 32}, fC[] = {3, 16, 32, 64, 128, 256, 512},
                     fH[] = {2, 4, 8, 16, 32, 56}, fO[] = {16, 32, 64, 128, 256, 512},
                     fK[] = {1, 3, 5, 7}, fS[] = {1, 2};
#define PICK(a, b) (o->small ? (a) : (b))
    const int *N = PICK(sN, fN), *C = PICK(sC, fC), *H = PICK(sH, fH), *O = PICK(sO, fO),
              *K = PICK(sK, fK), *S = PICK(sS, fS);
    const int nN = PICK(2, 5), nC = PICK(2, 7), nH = PICK(2, 6), nO = PICK(2, 6), nK = PICK(2, 4),
              nS = PICK(1, 2);
#undef PICK
    const size_t total = (size_t)nN * nC * nH * nO * nK * nS * 2 * 2;
    size_t *order = malloc(sizeof *order * total);
    if (!order) return tsl_fail(TSL_ERR_OOM, "profile: out of host memory");
    for (size_t i = 0; i < total; i++) order[i] = i;
    for (size_t i = total - 1; i > 0; i--) {
        size_t j = (size_t)(tsl__mix64(o->seed * 1000003u + i) % (i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    const double t0 = now_s(), budget = o->minutes * 60;
    size_t cap = 0, done = 0;
    double others = 0; /* other processes' busy CPUs, measured every 8 probes */
    tsl_op_sample *s = NULL;
    tsl_status st = TSL_OK;
    for (size_t j = 0; st == TSL_OK && j < total && now_s() - t0 < budget; j++) {
        size_t v = order[j];
        probe p;
        p.adam = (int)(v % 2), v /= 2;
        p.pool = (int)(v % 2), v /= 2;
        p.s = S[v % (size_t)nS], v /= (size_t)nS;
        p.k = K[v % (size_t)nK], v /= (size_t)nK;
        p.cout = O[v % (size_t)nO], v /= (size_t)nO;
        p.h = H[v % (size_t)nH], v /= (size_t)nH;
        p.c = C[v % (size_t)nC], v /= (size_t)nC;
        p.n = N[v % (size_t)nN];
        const double oh = floor((double)(p.h + 2 * (p.k / 2) - p.k) / p.s) + 1, ph = oh >= 2 ? floor(oh / 2) : oh;
        if (p.n * ph * ph < 2) continue; /* batch norm needs 2 values per channel */
        if (2.0 * p.n * p.cout * (oh * oh * p.c * p.k * p.k + ph * ph * p.cout * 9) > 1e9) continue;
        const int level = (int)(done % (size_t)(o->max_load + 1));
        if (done % 8 == 0) {
            double u = tsl_cpu_utilisation(100);
            others = u >= 0 ? u * (double)cpus : 0;
        }
        tsl__bgload *bg;
        st = tsl__bgload_start(level, &bg);
        if (st != TSL_OK) break;
        st = run_probe(&p, o, fmin(1.0, ((double)level + others) / (double)cpus), &s, n, &cap);
        tsl__bgload_stop(bg);
        done++;
        if (o->progress) {
            char what[160];
            snprintf(what, sizeof what, "probe %zu: N%d C%d H%d Cout%d k%d s%d %s %s, load %d: %zu samples",
                     done, p.n, p.c, p.h, p.cout, p.k, p.s, p.pool ? "avg" : "max",
                     p.adam ? "adam" : "sgd", level, *n);
            double frac = fmax((now_s() - t0) / budget, (double)(j + 1) / (double)total);
            o->progress(frac > 1 ? 1 : frac, what, o->user);
        }
    }
    free(order);
    if (st != TSL_OK) {
        free(s);
        *n = 0;
        return st;
    }
    *out = s;
    return TSL_OK;
}
