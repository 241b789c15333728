/*
 * calibrate.c - measures this machine's CPU backend as a device profile
 * (tensile/calibrate.h): FLOP rate of a convolution and an sgemm through the
 * fast kernels, memcpy bandwidth, host <-> arena copy bandwidth, the time of
 * a tiny op and of a tiny copy. Every figure is the median of the timed
 * runs, after one warm-up run that also faults the memory in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/assert.h"
#include "tensile/backend_cpu.h"
#include "tensile/calibrate.h"
#include "tensile/ops.h"

tsl_calib_opts tsl_calib_opts_default(void) {
    tsl_calib_opts o;
    memset(&o, 0, sizeof o);
    o.nthreads = 1;
    o.repeats = 5;
    return o;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void say(const tsl_calib_opts *o, const char *what) {
    if (o->progress) o->progress(what, o->user);
}

/* Deterministic values in [-1, 1) (a small LCG; content does not matter,
 * only that it is not all zeros or denormals). */
static void fill(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * (1.0f / 8388608.0f) - 1.0f;
    }
}

/* The small forward graph whose ops are timed: a convolution, a linear layer
 * (sgemm) and a relu of 16 floats. */
typedef struct calib_graph {
    tsl_graph *g;
    int32_t conv, gemm, relu; /* op indices */
} calib_graph;

/* Builds and finalizes the graph into *cg and describes its conv and sgemm
 * in r; TSL_ERR_OOM or the graph's error (nothing left allocated). */
static tsl_status build_graph(const tsl_calib_opts *o, calib_graph *cg, tsl_calib_result *r) {
    /* (N,C,H,W) input and (C,C,3,3) weight: a ResNet stage-1 convolution */
    int64_t n = o->quick ? 2 : 16, c = o->quick ? 16 : 64, hw = o->quick ? 28 : 56;
    int64_t m = o->quick ? 256 : 1024; /* sgemm (m,m) x (m,m)^T */
    tsl_graph *g = tsl_graph_new("calibrate");
    if (!g) return tsl_fail(TSL_ERR_OOM, "calibrate: out of host memory");
    tsl_tid x = tsl_input(g, "x", TSL_SHAPE(n, c, hw, hw));
    tsl_tid w = tsl_param(g, "w", TSL_SHAPE(c, c, 3, 3), TSL_INIT_NONE);
    tsl_conv2d(g, "conv", x, w, TSL_NONE, tsl_conv_sp(1, 1));
    tsl_tid a = tsl_input(g, "a", TSL_SHAPE(m, m));
    tsl_tid b = tsl_param(g, "b", TSL_SHAPE(m, m), TSL_INIT_NONE);
    tsl_linear(g, "gemm", a, b, TSL_NONE);
    tsl_tid s = tsl_input(g, "s", TSL_SHAPE(1, 16));
    tsl_relu(g, "relu", s);
    tsl_status st = tsl_graph_finalize(g);
    if (st != TSL_OK) {
        tsl_graph_free(g);
        return st;
    }
    cg->g = g;
    cg->conv = 0;
    cg->gemm = 1;
    cg->relu = 2;
    snprintf(r->conv_desc, sizeof r->conv_desc,
             "oneDNN conv (%lld,%lld,%lld,%lld) * (%lld,%lld,3,3), stride 1, pad 1",
             (long long)n, (long long)c, (long long)hw, (long long)hw, (long long)c,
             (long long)c);
    snprintf(r->gemm_desc, sizeof r->gemm_desc, "oneDNN sgemm %lldx%lldx%lld",
             (long long)m, (long long)m, (long long)m);
    return TSL_OK;
}

/* Places every tensor of the graph in the arena (ptr[t]) with values. */
static tsl_status place(tsl_backend *be, const tsl_graph *g, void **ptr) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        tsl_status st = be->iface->alloc(be, tt->nbytes, &ptr[t]);
        if (st != TSL_OK) return st;
        fill(ptr[t], tt->nbytes / sizeof(float), (uint32_t)t + 1u);
    }
    return TSL_OK;
}

/* Median seconds of one run of op `i` over `reps` timed runs of `batch`
 * executions each, after one warm-up execution. */
static tsl_status time_op(tsl_backend *be, const tsl_graph *g, int32_t i, void **ptr, int reps,
                          int batch, double *sec) {
    const tsl_op *op = tsl_graph_op(g, i);
    void *in[8], *out[8];
    TSL_ASSERT(op->n_in <= 8 && op->n_out <= 8);
    for (int j = 0; j < op->n_in; j++) in[j] = ptr[op->in[j]];
    for (int j = 0; j < op->n_out; j++) out[j] = ptr[op->out[j]];
    tsl_run_ctx ctx = {.step = 1, .training = 1};
    tsl_status st = tsl_backend_run_op(be, g, op, in, out, &ctx, NULL);
    double *v = malloc(sizeof *v * (size_t)reps);
    if (!v) return tsl_fail(TSL_ERR_OOM, "calibrate: out of host memory");
    for (int k = 0; k < reps && st == TSL_OK; k++) {
        double t0 = now_s();
        for (int b = 0; b < batch && st == TSL_OK; b++)
            st = tsl_backend_run_op(be, g, op, in, out, &ctx, NULL);
        v[k] = (now_s() - t0) / batch;
    }
    if (st == TSL_OK) *sec = median(v, reps);
    free(v);
    return st;
}

/* Median seconds of one memcpy-like copy of n bytes, src -> dst, over reps
 * timed runs of `batch` copies each; `copy` is the backend's copy slot or
 * NULL for plain memcpy. */
static tsl_status time_copy(tsl_backend *be,
                            tsl_status (*copy)(tsl_backend *, void *, const void *, size_t),
                            void *dst, const void *src, size_t n, int reps, int batch,
                            double *sec) {
    double *v = malloc(sizeof *v * (size_t)reps);
    if (!v) return tsl_fail(TSL_ERR_OOM, "calibrate: out of host memory");
    tsl_status st = TSL_OK;
    if (copy) st = copy(be, dst, src, n);
    else memcpy(dst, src, n);
    for (int k = 0; k < reps && st == TSL_OK; k++) {
        double t0 = now_s();
        for (int b = 0; b < batch && st == TSL_OK; b++) {
            if (copy) st = copy(be, dst, src, n);
            else memcpy(dst, src, n);
        }
        v[k] = (now_s() - t0) / batch;
    }
    if (st == TSL_OK) *sec = median(v, reps);
    free(v);
    return st;
}

/* Clamps a measured time to at least 1 ns, so that rates stay finite. */
static double at_least_ns(double s) { return s > 1e-9 ? s : 1e-9; }

/* See calibrate.h. Builds the timed graph, places its tensors in a CPU
 * backend's arena, times each figure, fills *r (zeroed first) and its
 * profile. Everything it allocated is freed on every path. */
tsl_status tsl_calibrate_cpu(const tsl_calib_opts *o, tsl_calib_result *r) {
    TSL_ASSERT(o && r);
    if (o->nthreads < 1 || o->nthreads > 1024)
        return tsl_fail(TSL_ERR_INVALID, "calibrate: nthreads %d outside 1..1024", o->nthreads);
    if (o->repeats < 1 || o->repeats > 1000)
        return tsl_fail(TSL_ERR_INVALID, "calibrate: repeats %d outside 1..1000", o->repeats);
    memset(r, 0, sizeof *r);
    int reps = o->repeats;
    size_t nbytes = o->quick ? (size_t)8 << 20 : (size_t)256 << 20; /* copied buffers */
    r->copy_bytes = nbytes;

    calib_graph cg = {NULL, 0, 0, 0};
    tsl_status st = build_graph(o, &cg, r);
    if (st != TSL_OK) return st;
    const tsl_graph *g = cg.g;
    size_t tensors = 0;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(g); t++)
        tensors += tsl_graph_tensor(g, t)->nbytes + TSL_ALLOC_ALIGN;
    tsl_backend *be = NULL;
    /* arena: the tensors, one copy buffer, and room for kernel workspaces */
    st = tsl_cpu_backend_new(tensors + nbytes + ((size_t)1 << 30), TSL_KERNELS_FAST, o->nthreads,
                             &be);
    void **ptr = calloc((size_t)tsl_graph_n_tensors(g), sizeof *ptr);
    void *host = NULL, *host2 = NULL, *dev = NULL;
    if (st == TSL_OK && !ptr) st = tsl_fail(TSL_ERR_OOM, "calibrate: out of host memory");
    if (st == TSL_OK) st = place(be, g, ptr);

    double conv_s = 0, gemm_s = 0, relu_s = 0;
    if (st == TSL_OK) {
        say(o, r->conv_desc);
        st = time_op(be, g, cg.conv, ptr, reps, 1, &conv_s);
    }
    if (st == TSL_OK) {
        say(o, r->gemm_desc);
        st = time_op(be, g, cg.gemm, ptr, reps, 1, &gemm_s);
    }
    if (st == TSL_OK) {
        say(o, "launch overhead: relu of 16 floats");
        st = time_op(be, g, cg.relu, ptr, reps, o->quick ? 50 : 500, &relu_s);
    }
    if (st == TSL_OK) {
        host = malloc(nbytes);
        host2 = malloc(nbytes);
        if (!host || !host2) st = tsl_fail(TSL_ERR_OOM, "calibrate: out of host memory for %zu bytes", nbytes);
    }
    if (st == TSL_OK) st = be->iface->alloc(be, nbytes, &dev);
    double mc_s = 0, h2d_s = 0, d2h_s = 0, lat_s = 0;
    if (st == TSL_OK) {
        char what[96];
        snprintf(what, sizeof what, "memcpy of %zu MiB", nbytes >> 20);
        say(o, what);
        memset(host, 1, nbytes);
        memset(host2, 2, nbytes);
        st = time_copy(NULL, NULL, host2, host, nbytes, reps, 1, &mc_s);
    }
    if (st == TSL_OK) {
        say(o, "copies host -> arena and arena -> host");
        st = time_copy(be, tsl_backend_upload, dev, host, nbytes, reps, 1, &h2d_s);
    }
    if (st == TSL_OK) st = time_copy(be, tsl_backend_download, host2, dev, nbytes, reps, 1, &d2h_s);
    if (st == TSL_OK) {
        say(o, "copy latency: 256 bytes");
        st = time_copy(be, tsl_backend_upload, dev, host, 256, reps, o->quick ? 200 : 2000,
                       &lat_s);
    }
    if (st == TSL_OK) {
        r->conv_flops = tsl_op_flops(g, tsl_graph_op(g, cg.conv)) / at_least_ns(conv_s);
        r->gemm_flops = tsl_op_flops(g, tsl_graph_op(g, cg.gemm)) / at_least_ns(gemm_s);
        r->memcpy_bw = 2.0 * (double)nbytes / at_least_ns(mc_s);
        r->h2d_bw = (double)nbytes / at_least_ns(h2d_s);
        r->d2h_bw = (double)nbytes / at_least_ns(d2h_s);
        r->launch_us = at_least_ns(relu_s) * 1e6;
        r->copy_latency_us = at_least_ns(lat_s) * 1e6;

        tsl_device_profile *p = &r->profile;
        snprintf(p->name, sizeof p->name, "cpu-local");
        p->flops = 2.0 / (1.0 / r->conv_flops + 1.0 / r->gemm_flops);
        p->mem_bw = r->memcpy_bw;
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        p->mem_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 30;
        p->h2d_bw = r->h2d_bw;
        p->d2h_bw = r->d2h_bw;
        p->duplex = 1;
        p->launch_us = r->launch_us;
        p->copy_latency_us = r->copy_latency_us;
        char host_name[64] = "?";
        gethostname(host_name, sizeof host_name - 1);
        time_t now = time(NULL);
        struct tm tmv;
        char date[32] = "?";
        if (gmtime_r(&now, &tmv)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tmv);
        snprintf(r->source, sizeof r->source,
                 "measured by 'tensile calibrate' on host %s, %s, %d thread%s%s: CPU backend, "
                 "fast kernels. flops = harmonic mean of %s (%.3g FLOP/s) and %s (%.3g FLOP/s); "
                 "mem_bw = memcpy of %zu MiB counting bytes read + written; h2d_bw/d2h_bw = "
                 "memcpy between a malloc'd buffer and the arena; launch_us = relu of 16 floats "
                 "through the backend; copy_latency_us = a 256-byte copy; mem_bytes = physical "
                 "memory; medians of %d runs",
                 host_name, date, o->nthreads, o->nthreads == 1 ? "" : "s",
                 o->quick ? " (quick: small sizes)" : "", r->conv_desc, r->conv_flops,
                 r->gemm_desc, r->gemm_flops, nbytes >> 20, reps);
    }
    free(host);
    free(host2);
    free(ptr);
    tsl_backend_free(be);
    tsl_graph_free(cg.g);
    return st;
}
