/*
 * backend_sync.c - synchronous helpers on the asynchronous backend contract
 * (tensile/backend.h), for code that has nothing to overlap: tests,
 * calibration, the data load, reading results back. Each enqueues, records
 * an event and waits for it; nothing here knows a particular backend.
 */
#include <stdio.h>

#include "tensile/backend.h"

/* Records an event on `stream` and waits for it (everything enqueued on
 * the stream before is then done). */
static tsl_status drain(tsl_backend *b, tsl_stream stream) {
    tsl_dev_event *e;
    tsl_status st = b->iface->event_record(b, stream, &e);
    if (st != TSL_OK) return st;
    st = b->iface->event_sync(b, e);
    b->iface->event_release(b, e);
    return st;
}

tsl_status tsl_backend_copy_async(tsl_backend *b, tsl_stream stream, void *dst, const void *src,
                                  size_t n, tsl_dev_event **done) {
    tsl_status st = b->iface->memcpy_async(b, stream, dst, src, n);
    if (st != TSL_OK) return st;
    return b->iface->event_record(b, stream, done);
}

tsl_status tsl_backend_upload(tsl_backend *b, void *dev, const void *host, size_t n) {
    tsl_status st = b->iface->memcpy_async(b, TSL_STREAM_H2D, dev, host, n);
    return st == TSL_OK ? drain(b, TSL_STREAM_H2D) : st;
}

tsl_status tsl_backend_download(tsl_backend *b, void *host, const void *dev, size_t n) {
    tsl_status st = b->iface->memcpy_async(b, TSL_STREAM_D2H, host, dev, n);
    return st == TSL_OK ? drain(b, TSL_STREAM_D2H) : st;
}

tsl_status tsl_backend_run_op(tsl_backend *b, const tsl_graph *g, const tsl_op *op,
                              void *const *in, void *const *out, const tsl_run_ctx *ctx,
                              double *ms) {
    size_t ws = 0;
    tsl_status st;
    if (ctx->algo == 0) st = b->iface->op_workspace(b, g, op, &ws);
    else if (b->iface->op_algo_workspace)
        st = b->iface->op_algo_workspace(b, g, op, ctx->algo, &ws);
    else
        st = tsl_fail(TSL_ERR_INVALID, "op '%s': algorithm %d on backend '%s', which runs "
                      "defaults only", op->name, ctx->algo, b->iface->name(b));
    if (st != TSL_OK) return st;
    void *w = NULL;
    if (ws && (st = b->iface->alloc(b, ws, &w)) != TSL_OK) {
        char why[512]; /* tsl_fail rewrites the buffer tsl_last_error() points to */
        snprintf(why, sizeof why, "%s", tsl_last_error());
        return tsl_fail(TSL_ERR_OOM, "device out of memory: workspace of %zu bytes for op '%s': %s",
                        ws, op->name, why);
    }
    tsl_dev_event *e0 = NULL, *e1 = NULL;
    st = b->iface->event_record(b, TSL_STREAM_COMPUTE, &e0);
    if (st == TSL_OK) st = b->iface->launch_op(b, g, op, in, out, w, ctx);
    if (st == TSL_OK) st = b->iface->event_record(b, TSL_STREAM_COMPUTE, &e1);
    if (st == TSL_OK) st = b->iface->event_sync(b, e1);
    else if (e0) b->iface->synchronize(b); /* what was enqueued must end before w is freed */
    if (st == TSL_OK && ms) st = b->iface->event_elapsed_ms(b, e0, e1, ms);
    b->iface->event_release(b, e0);
    b->iface->event_release(b, e1);
    if (w) b->iface->free(b, w);
    return st;
}
