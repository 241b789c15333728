/*
 * vanilla.c - the vanilla pass: every op in order, nothing scheduled.
 *
 * A step loads the batch (the INPUT and LABEL tensors' generating access),
 * launches the ops in order, allocates each output at its generating
 * access and frees every non-persistent tensor after its last use
 * (liveness.h; DESIGN.md invariant 3). Each kernel is launched between two
 * events on the compute stream. Every kernel runs on that one stream, in
 * launch order, so the blocks an op used last (its inputs' and its
 * workspace) are freed as soon as it is launched: any later user of those
 * bytes is a later kernel of the same stream (tensile/backend.h, "Memory";
 * the pass makes no copy that could race them). The peak is therefore the
 * liveness peak however late the kernels run. What needs a kernel done -
 * its time, the loss it computed - waits for its end event: completed
 * kernels are retired in order after every launch, and all of them at the
 * end of the pass (a kernel is never assumed done because launch_op
 * returned).
 *
 * A failed allocation ends the step with TSL_ERR_OOM and a message naming
 * the op, the tensor, its size, the load and the capacity; the step's
 * tensors are freed. The parameters are untouched, so that the step can be
 * retried, if it failed before its first update (always, with the updates
 * after the backward pass; tsl_session_step, tensile/session.h).
 */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/session_internal.h"

typedef struct vpass {
    tsl_session *s;
    const tsl_liveness *lv;
    const int32_t *y;
    int64_t n_valid;
    tsl_step_stats *st;
} vpass;

/* Frees the tensors whose last use is op i (-1: the data load). */
static void free_after(vpass *V, int32_t i) {
    int nf;
    const tsl_tid *fl = tsl__liveness_after(V->lv, i, &nf);
    for (int k = 0; k < nf; k++) {
        V->s->b->iface->free(V->s->b, V->s->ptr[fl[k]]);
        V->s->ptr[fl[k]] = NULL;
    }
}

/* The oldest kernel in flight has completed: its time, the loss. */
static tsl_status retire_oldest(vpass *V) {
    tsl_session *s = V->s;
    tsl_backend *b = s->b;
    tsl__launched l = tsl__inflight_pop(&s->inflight);
    double ms = 0.0;
    tsl_status rc = b->iface->event_elapsed_ms(b, l.start, l.end, &ms);
    b->iface->event_release(b, l.start);
    b->iface->event_release(b, l.end);
    s->op_ms[l.item] = ms;
    V->st->kernel_ms += ms;
    if (rc == TSL_OK) tsl__step_after_op(s, l.item, V->y, V->n_valid, V->st);
    return rc;
}

/* Retires the kernels that have completed (wait: the oldest one, waited
 * for first); TSL_OK or a kernel's error. */
static tsl_status retire(vpass *V, int wait) {
    tsl_session *s = V->s;
    tsl_status rc = TSL_OK;
    while (s->inflight.n > 0) {
        tsl__launched *l = tsl__inflight_oldest(&s->inflight);
        if (wait) {
            tsl_status st = s->b->iface->event_sync(s->b, l->end);
            if (st != TSL_OK && rc == TSL_OK) rc = st;
            wait = 0;
        } else if (!s->b->iface->event_query(s->b, l->end)) {
            break;
        }
        tsl_status st = retire_oldest(V);
        if (st != TSL_OK && rc == TSL_OK) rc = st;
    }
    return rc;
}

static tsl_status retire_all(vpass *V) {
    tsl_status rc = TSL_OK;
    while (V->s->inflight.n > 0) {
        tsl_status st = retire(V, 1);
        if (st != TSL_OK && rc == TSL_OK) rc = st;
    }
    return rc;
}

/* The workspace block of op i (NULL when it needs none). */
static tsl_status place_workspace(vpass *V, int32_t i, void **ws) {
    tsl_session *s = V->s;
    const tsl_op *op = tsl_graph_op(s->g, i);
    size_t bytes = 0;
    *ws = NULL;
    tsl_status rc = s->b->iface->op_workspace(s->b, s->g, op, &bytes);
    if (rc != TSL_OK || bytes == 0) return rc;
    if (s->b->iface->alloc(s->b, bytes, ws) == TSL_OK) return TSL_OK;
    *ws = NULL;
    return tsl__step_oom(s, "workspace", op->name, bytes, i);
}

/* Launches op i between two events (the entry goes in flight) and frees
 * its workspace and the tensors it used last. On failure nothing is in
 * flight for it and its workspace is freed. */
static tsl_status launch(vpass *V, int32_t i, const tsl_run_ctx *ctx) {
    tsl_session *s = V->s;
    tsl_backend *b = s->b;
    const tsl_op *op = tsl_graph_op(s->g, i);
    void *in[256], *out[TSL__MAX_OUT];
    TSL_ASSERT(op->n_in <= 256 && op->n_out <= TSL__MAX_OUT);
    tsl_status rc = TSL_OK;
    for (int j = 0; j < op->n_out && rc == TSL_OK; j++)
        if (!s->ptr[op->out[j]]) rc = tsl__step_place(s, op->out[j], i);
    void *ws = NULL;
    if (rc == TSL_OK) rc = place_workspace(V, i, &ws);
    if (rc != TSL_OK) return rc;
    for (int j = 0; j < op->n_in; j++) {
        in[j] = s->ptr[op->in[j]];
        TSL_ASSERT(in[j] != NULL);
    }
    for (int j = 0; j < op->n_out; j++) out[j] = s->ptr[op->out[j]];
    tsl__launched *l = tsl__inflight_push(&s->inflight);
    if (!l) rc = tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    tsl_dev_event *e0 = NULL, *e1 = NULL;
    if (rc == TSL_OK) rc = b->iface->event_record(b, TSL_STREAM_COMPUTE, &e0);
    if (rc == TSL_OK) rc = b->iface->launch_op(b, s->g, op, in, out, ws, ctx);
    if (rc == TSL_OK) rc = tsl__step_enqueued(s, i);
    if (rc == TSL_OK) rc = b->iface->event_record(b, TSL_STREAM_COMPUTE, &e1);
    if (rc != TSL_OK) {
        if (l) s->inflight.n--; /* the entry just pushed */
        char why[512];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        b->iface->synchronize(b); /* what was enqueued ends before its memory is freed */
        b->iface->event_release(b, e0);
        b->iface->event_release(b, e1);
        if (ws) b->iface->free(b, ws);
        return tsl_fail(rc, "%s", why);
    }
    l->item = i;
    l->start = e0;
    l->end = e1;
    if (ws) b->iface->free(b, ws); /* only later kernels of this stream reuse it */
    free_after(V, i);
    return TSL_OK;
}

tsl_status tsl__vanilla_pass(tsl_session *s, const float *x, const int32_t *y, int training,
                             int64_t n_valid, tsl_step_stats *st) {
    const tsl_graph *g = s->g;
    tsl_step_stats local;
    if (!st) st = &local;
    tsl_status rc = tsl__step_begin(s, st);
    if (rc == TSL_OK) rc = tsl__session_all_placed(s);
    if (rc != TSL_OK) return rc;
    vpass V = {.s = s, .lv = training ? &s->live_train : &s->live_eval, .y = y,
               .n_valid = n_valid, .st = st};
    s->b->iface->reset_peaks(s->b);
    double t0 = tsl_backend_now_ms();
    tsl_run_ctx ctx = {.step = s->steps + 1, .training = training};
    rc = tsl__step_place(s, s->input, -1);
    if (rc == TSL_OK) rc = tsl__step_place(s, s->label, -1);
    if (rc == TSL_OK) rc = tsl_backend_upload(s->b, s->ptr[s->input], x, tsl_graph_tensor(g, s->input)->nbytes);
    if (rc == TSL_OK) rc = tsl_backend_upload(s->b, s->ptr[s->label], y, tsl_graph_tensor(g, s->label)->nbytes);
    if (rc == TSL_OK) free_after(&V, -1);
    for (int32_t i = 0; i < V.lv->end && rc == TSL_OK; i++) {
        rc = launch(&V, i, &ctx);
        if (rc == TSL_OK) rc = retire(&V, 0);
    }
    tsl_status fin = retire_all(&V);
    if (rc == TSL_OK) rc = fin;
    fin = s->b->iface->synchronize(s->b);
    if (rc == TSL_OK) rc = fin;
    tsl_alloc_stats ms;
    s->b->iface->mem_stats(s->b, &ms);
    st->peak_load = ms.peak_load;
    st->peak_footprint = ms.peak_footprint;
    st->ms = tsl_backend_now_ms() - t0;
    tsl__step_free_transients(s);
    if (rc == TSL_OK && training) s->steps++;
    return rc;
}
