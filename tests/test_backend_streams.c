/*
 * test_backend_streams.c - the asynchronous backend contract
 * (tensile/backend.h) on the CPU backend's compute stream and across
 * streams (src/backend/cpu/streams.c). The copy streams alone are
 * test_copy_engine.c's.
 *
 * With a compute thread and late kernels, launch_op returns before the
 * kernel ran, and the end event says when it did; kernels run in launch
 * order; a copy stream told to wait for a compute event starts only after
 * it; a kernel told to wait for a copy reads its bytes; events released
 * before they complete are harmless; elapsed times are ordered and
 * positive; a failing kernel's error is sticky and named; the synchronous
 * helpers give the same bytes as the reference kernel; in synchronous mode
 * a kernel has run when launch_op returns and its events have completed; a
 * host function runs between the copies enqueued around it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernel.h"
#include "helpers.h"
#include "tensile/backend_cpu.h"

#define N 4096 /* floats of the relu graph */

/* x(1,N) -> relu: one op, its input and output. */
typedef struct relu_graph {
    tsl_graph *g;
    const tsl_op *op;
} relu_graph;

static relu_graph relu_new(void) {
    relu_graph r;
    r.g = tsl_graph_new("relu");
    tsl_tid x = tsl_input(r.g, "input", TSL_SHAPE(1, N));
    tsl_relu(r.g, "relu", x);
    cr_assert_eq(tsl_graph_finalize(r.g), TSL_OK, "%s", tsl_last_error());
    r.op = tsl_graph_op(r.g, 0);
    return r;
}

static tsl_backend *backend(int async, double delay_us) {
    tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default((size_t)64 << 20);
    o.kernels = TSL_KERNELS_REF;
    o.async_compute = async;
    o.kernel_delay_us = delay_us;
    tsl_backend *b = NULL;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b), TSL_OK, "%s", tsl_last_error());
    return b;
}

static float *dev_floats(tsl_backend *b, size_t n) {
    void *p = NULL;
    cr_assert_eq(b->iface->alloc(b, n * sizeof(float), &p), TSL_OK, "%s", tsl_last_error());
    return p;
}

static tsl_dev_event *record(tsl_backend *b, tsl_stream s) {
    tsl_dev_event *e = NULL;
    cr_assert_eq(b->iface->event_record(b, s, &e), TSL_OK, "%s", tsl_last_error());
    return e;
}

static const tsl_run_ctx CTX = {.step = 1, .training = 1};

Test(backend_streams, late_kernel_returns_before_it_ran) {
    relu_graph r = relu_new();
    tsl_backend *b = backend(1, 20000.0); /* up to 20 ms late */
    tsl_backend_caps caps;
    b->iface->caps(b, &caps);
    cr_assert(caps.async_compute && caps.copy_engines == 2 && caps.host_addressable);
    float *x = dev_floats(b, N), *y = dev_floats(b, N);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 7) - 3.0f;
    memset(y, 0xFF, N * sizeof(float)); /* NaNs until the kernel writes */
    /* a kernel that must wait first: the compute stream waits for a slow copy */
    float *h = b->iface->host_alloc(b, N * sizeof(float));
    for (int i = 0; i < N; i++) h[i] = (float)(i % 5) - 2.0f;
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, 0.0002), TSL_OK); /* 16 KiB: ~80 ms */
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_H2D, x, h, N * sizeof(float)), TSL_OK);
    tsl_dev_event *copied = record(b, TSL_STREAM_H2D);
    cr_assert_eq(b->iface->stream_wait(b, TSL_STREAM_COMPUTE, copied), TSL_OK);
    b->iface->event_release(b, copied); /* released before it completed: allowed */
    tsl_dev_event *e0 = record(b, TSL_STREAM_COMPUTE);
    void *in[1] = {x}, *out[1] = {y};
    cr_assert_eq(b->iface->launch_op(b, r.g, r.op, in, out, NULL, &CTX), TSL_OK, "%s", tsl_last_error());
    tsl_dev_event *e1 = record(b, TSL_STREAM_COMPUTE);
    cr_assert(!b->iface->event_query(b, e1), "the kernel's end event completed as launch returned");
    cr_assert(y[0] != y[0], "the kernel wrote before launch_op returned");
    cr_assert_eq(b->iface->event_sync(b, e1), TSL_OK, "%s", tsl_last_error());
    cr_assert(b->iface->event_query(b, e0));
    for (int i = 0; i < N; i++) /* relu of the copied bytes, not of x's old ones */
        cr_assert_eq(y[i], h[i] > 0 ? h[i] : 0.0f, "y[%d] = %g, relu(%g)", i, y[i], h[i]);
    double ms = -1;
    cr_assert_eq(b->iface->event_elapsed_ms(b, e0, e1, &ms), TSL_OK);
    cr_assert_geq(ms, 0.0);
    b->iface->event_release(b, e0);
    b->iface->event_release(b, e1);
    b->iface->host_free(b, h);
    b->iface->free(b, x);
    b->iface->free(b, y);
    tsl_backend_free(b);
    tsl_graph_free(r.g);
}

/* Kernels run in launch order: each relu reads the previous one's output
 * through a device-to-device copy on the compute stream; a copy to the host
 * waits for the last kernel's event and then sees every step. */
Test(backend_streams, compute_stream_keeps_launch_order_and_copies_wait_for_kernels) {
    relu_graph r = relu_new();
    tsl_backend *b = backend(1, 3000.0);
    enum { K = 20 };
    float *buf[2] = {dev_floats(b, N), dev_floats(b, N)};
    for (int i = 0; i < N; i++) buf[0][i] = (float)i - 100.0f;
    float *h = b->iface->host_alloc(b, N * sizeof(float));
    for (int k = 0; k < K; k++) {
        /* buf[1] = relu(buf[0]); buf[0] = buf[1] + copy: the next kernel
         * reads what this one wrote, in stream order only */
        void *in[1] = {buf[0]}, *out[1] = {buf[1]};
        cr_assert_eq(b->iface->launch_op(b, r.g, r.op, in, out, NULL, &CTX), TSL_OK);
        cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_COMPUTE, buf[0], buf[1], N * sizeof(float)),
                     TSL_OK);
    }
    tsl_dev_event *done = record(b, TSL_STREAM_COMPUTE);
    cr_assert_eq(b->iface->stream_wait(b, TSL_STREAM_D2H, done), TSL_OK);
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_D2H, h, buf[0], N * sizeof(float)), TSL_OK);
    tsl_dev_event *down = record(b, TSL_STREAM_D2H);
    cr_assert_eq(b->iface->event_sync(b, down), TSL_OK);
    cr_assert(b->iface->event_query(b, done), "the copy completed before the kernels it waited for");
    for (int i = 0; i < N; i++) {
        float want = (float)i - 100.0f > 0 ? (float)i - 100.0f : 0.0f;
        cr_assert_eq(h[i], want, "h[%d] = %g, want %g", i, h[i], want);
    }
    double ms;
    cr_assert_eq(b->iface->event_elapsed_ms(b, done, down, &ms), TSL_OK);
    cr_assert_geq(ms, 0.0, "the copy's end precedes the kernels' end by %g ms", -ms);
    b->iface->event_release(b, done);
    b->iface->event_release(b, down);
    cr_assert_eq(b->iface->synchronize(b), TSL_OK);
    b->iface->host_free(b, h);
    b->iface->free(b, buf[0]);
    b->iface->free(b, buf[1]);
    tsl_backend_free(b);
    tsl_graph_free(r.g);
}

/* Synchronous mode: the kernel has run when launch_op returns, and an event
 * recorded after it has completed. */
Test(backend_streams, synchronous_compute_runs_at_launch) {
    relu_graph r = relu_new();
    tsl_backend *b = backend(0, 0.0);
    tsl_backend_caps caps;
    b->iface->caps(b, &caps);
    cr_assert(!caps.async_compute);
    float *x = dev_floats(b, N), *y = dev_floats(b, N);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 3) - 1.0f;
    void *in[1] = {x}, *out[1] = {y};
    cr_assert_eq(b->iface->launch_op(b, r.g, r.op, in, out, NULL, &CTX), TSL_OK);
    tsl_dev_event *e = record(b, TSL_STREAM_COMPUTE);
    cr_assert(b->iface->event_query(b, e));
    for (int i = 0; i < N; i++) cr_assert_eq(y[i], x[i] > 0 ? x[i] : 0.0f);
    b->iface->event_release(b, e);
    b->iface->free(b, x);
    b->iface->free(b, y);
    tsl_backend_free(b);
    tsl_graph_free(r.g);
}

/* host_func: a host function runs after the copy enqueued before it has
 * landed (it sees every byte), before the copy enqueued after it starts
 * (it still sees the old bytes there), once each, in enqueue order; it may
 * enqueue work itself; on the synchronous compute stream it runs at once. */
typedef struct host_probe {
    tsl_backend *b;
    const float *first, *second; /* device bytes the calls read */
    float seen_first, seen_second;
    int calls, order[4];
    float *again;                /* the first call copies into it (enqueueing from fn) */
    const float *again_src;
} host_probe;

static void probe_fn(void *arg) {
    host_probe *p = arg;
    p->seen_first = p->first[N - 1];
    p->seen_second = p->second[N - 1];
    p->order[p->calls] = p->calls;
    if (p->calls++ == 0 && p->again)
        cr_assert_eq(p->b->iface->memcpy_async(p->b, TSL_STREAM_H2D, p->again, p->again_src,
                                               N * sizeof(float)),
                     TSL_OK);
}

Test(backend_streams, host_function_runs_between_the_copies_around_it) {
    tsl_backend *b = backend(0, 0.0);
    cr_assert(b->iface->host_func != NULL);
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, 0.05), TSL_OK); /* 16 KB: ~0.3 ms each */
    float *d1 = dev_floats(b, N), *d2 = dev_floats(b, N), *d3 = dev_floats(b, N);
    float *h = malloc(N * sizeof *h), *h2 = malloc(N * sizeof *h2);
    for (int i = 0; i < N; i++) h[i] = 7.0f, h2[i] = 9.0f, d1[i] = d2[i] = d3[i] = 0.0f;
    host_probe p = {.b = b, .first = d1, .second = d2, .again = d3, .again_src = h2};
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_H2D, d1, h, N * sizeof(float)), TSL_OK);
    cr_assert_eq(b->iface->host_func(b, TSL_STREAM_H2D, probe_fn, &p), TSL_OK);
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_H2D, d2, h, N * sizeof(float)), TSL_OK);
    cr_assert_eq(b->iface->synchronize(b), TSL_OK, "%s", tsl_last_error());
    /* fn ran before the marker synchronize put behind copy 2; the copy it
     * enqueued may be behind that marker: a second synchronize covers it */
    cr_assert_eq(b->iface->synchronize(b), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(p.seen_first, 7.0f, "the copy before it had not landed");
    cr_assert_eq(p.seen_second, 0.0f, "the copy after it had started");
    for (int i = 0; i < N; i++) cr_assert_eq(d3[i], 9.0f); /* enqueued by fn, landed */
    /* the synchronous compute stream: at once, in order */
    p.again = NULL;
    cr_assert_eq(b->iface->host_func(b, TSL_STREAM_COMPUTE, probe_fn, &p), TSL_OK);
    cr_assert_eq(p.calls, 2);
    cr_assert_eq(p.seen_second, 7.0f);
    cr_assert_eq(p.order[1], 1);
    free(h);
    free(h2);
    b->iface->free(b, d1);
    b->iface->free(b, d2);
    b->iface->free(b, d3);
    tsl_backend_free(b);
}

/* The synchronous helpers: tsl_backend_run_op gives the reference kernel's
 * bytes and a time; upload and download round-trip. */
Test(backend_streams, synchronous_helpers) {
    relu_graph r = relu_new();
    for (int async = 0; async <= 1; async++) {
        tsl_backend *b = backend(async, async ? 500.0 : 0.0);
        float *x = dev_floats(b, N), *y = dev_floats(b, N);
        float hx[N], hy[N], ref[N];
        th_fill_f32(hx, N, 7, -1, 1);
        cr_assert_eq(tsl_backend_upload(b, x, hx, sizeof hx), TSL_OK);
        void *in[1] = {x}, *out[1] = {y};
        double ms = -1;
        cr_assert_eq(tsl_backend_run_op(b, r.g, r.op, in, out, &CTX, &ms), TSL_OK, "%s",
                     tsl_last_error());
        cr_assert_geq(ms, 0.0);
        cr_assert_eq(tsl_backend_download(b, hy, y, sizeof hy), TSL_OK);
        void *rin[1] = {hx}, *rout[1] = {ref};
        tsl_kernel_args a = {.g = r.g, .op = r.op, .dtype = TSL_F32, .in = rin, .out = rout,
                             .step = 1, .nthreads = 1, .training = 1};
        cr_assert_eq(tsl_cpu_ref_kernel(r.op->type, TSL_F32)(&a), TSL_OK);
        cr_assert_eq(memcmp(hy, ref, sizeof ref), 0, "async %d: not the reference's bytes", async);
        b->iface->free(b, x);
        b->iface->free(b, y);
        tsl_backend_free(b);
    }
    tsl_graph_free(r.g);
}

/* A kernel that fails on the compute thread: its error is sticky, returned
 * by the next event_sync and synchronize, naming the op. */
Test(backend_streams, failing_kernel_error_is_sticky) {
    relu_graph r = relu_new();
    tsl_backend *b = backend(1, 0.0);
    float *x = dev_floats(b, N), *y = dev_floats(b, N);
    memset(x, 0, N * sizeof(float));
    (void)r;
    /* a softmax cross-entropy whose labels are out of range fails at run
     * time (the reference kernel checks them) */
    tsl_graph *g = tsl_graph_new("xent");
    tsl_tid lg = tsl_input(g, "input", TSL_SHAPE(2, 3));
    tsl_tid lb = tsl_label(g, "label", TSL_SHAPE(2));
    tsl_softmax_xent(g, "loss", lg, lb);
    cr_assert_eq(tsl_graph_finalize(g), TSL_OK, "%s", tsl_last_error());
    const tsl_op *op = tsl_graph_op(g, 0);
    int32_t *labels = (int32_t *)(void *)y;
    labels[0] = 7; /* of 3 classes */
    labels[1] = -1;
    void *outs[2] = {dev_floats(b, 16), dev_floats(b, 16)};
    void *in[2] = {x, labels};
    cr_assert_eq(b->iface->launch_op(b, g, op, in, outs, NULL, &CTX), TSL_OK,
                 "enqueueing cannot know yet: %s", tsl_last_error());
    tsl_dev_event *e = record(b, TSL_STREAM_COMPUTE);
    tsl_status st = b->iface->event_sync(b, e);
    b->iface->event_release(b, e);
    cr_assert_eq(st, TSL_ERR_INVALID, "the kernel's failure was not reported");
    cr_assert(strstr(tsl_last_error(), "'loss'") && strstr(tsl_last_error(), "label 7"),
              "the error names the op and the label: %s", tsl_last_error());
    cr_assert_eq(b->iface->synchronize(b), TSL_ERR_INVALID, "not sticky");
    b->iface->free(b, outs[0]);
    b->iface->free(b, outs[1]);
    b->iface->free(b, x);
    b->iface->free(b, y);
    tsl_backend_free(b);
    tsl_graph_free(g);
    tsl_graph_free(r.g);
}

Test(backend_streams, bad_options_and_arguments) {
    tsl_cpu_backend_opts o = tsl_cpu_backend_opts_default(1 << 20);
    tsl_backend *b = NULL;
    o.kernel_delay_us = -1;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "kernel_delay_us"), "%s", tsl_last_error());
    o = tsl_cpu_backend_opts_default(1 << 20);
    o.pcie_gbps = 1.0 / 0.0;
    cr_assert_eq(tsl_cpu_backend_new_opts(&o, &b), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "pcie_gbps"), "%s", tsl_last_error());
    b = backend(0, 0.0);
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, -2.0), TSL_ERR_INVALID);
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_H2D, NULL, NULL, 16), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "NULL"), "%s", tsl_last_error());
    relu_graph r = relu_new();
    tsl_dev_event *e0 = record(b, TSL_STREAM_H2D), *e1 = NULL;
    cr_assert_eq(tsl_cpu_backend_set_pcie_gbps(b, 0.0001), TSL_OK);
    float *x = dev_floats(b, N);
    float *h = b->iface->host_alloc(b, N * sizeof(float));
    cr_assert_eq(b->iface->memcpy_async(b, TSL_STREAM_H2D, x, h, N * sizeof(float)), TSL_OK);
    e1 = record(b, TSL_STREAM_H2D);
    double ms;
    cr_assert_eq(b->iface->event_elapsed_ms(b, e0, e1, &ms), TSL_ERR_INVALID,
                 "elapsed time of an event not completed");
    cr_assert_eq(b->iface->synchronize(b), TSL_OK);
    b->iface->event_release(b, e0);
    b->iface->event_release(b, e1);
    b->iface->host_free(b, h);
    b->iface->free(b, x);
    tsl_backend_free(b);
    tsl_graph_free(r.g);
}
