/*
 * step.c - what the vanilla pass and the Executor do alike in a step (see
 * session_internal.h): the prologue, the loss and the probabilities copied
 * out in the compute stream's order right after the loss op is enqueued
 * and read once it has completed, placing a tensor with a message that sizes the device, freeing
 * what a step leaves.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/session_internal.h"

tsl_status tsl__step_begin(const tsl_session *s, tsl_step_stats *st) {
    memset(st, 0, sizeof *st);
    st->loss = NAN;
    if (s->input == TSL_NONE || s->label == TSL_NONE)
        return tsl_fail(TSL_ERR_INVALID, "graph '%s' has no INPUT named 'input' or LABEL named 'label'",
                        tsl_graph_name(s->g));
    return TSL_OK;
}

tsl_status tsl__step_read(tsl_session *s, void *host, const void *dev, size_t n) {
    if (s->host_addressable) { /* its writers have completed: plain memory */
        memcpy(host, dev, n);
        return TSL_OK;
    }
    tsl_dev_event *e;
    tsl_status st = s->b->iface->memcpy_async(s->b, TSL_STREAM_COMPUTE, host, dev, n);
    if (st == TSL_OK) st = s->b->iface->event_record(s->b, TSL_STREAM_COMPUTE, &e);
    if (st != TSL_OK) return st;
    st = s->b->iface->event_sync(s->b, e);
    s->b->iface->event_release(s->b, e);
    return st;
}

tsl_status tsl__step_enqueued(tsl_session *s, int32_t i) {
    tsl_op_type ty = tsl_graph_op(s->g, i)->type;
    s->step_updates += ty == TSL_OP_SGD_UPDATE || ty == TSL_OP_ADAM_UPDATE;
    if (i != s->loss_op) return TSL_OK;
    tsl_status rc = s->b->iface->memcpy_async(s->b, TSL_STREAM_COMPUTE, &s->host_loss,
                                              s->ptr[s->loss], sizeof s->host_loss);
    if (rc == TSL_OK && s->probs != TSL_NONE)
        rc = s->b->iface->memcpy_async(s->b, TSL_STREAM_COMPUTE, s->host_probs, s->ptr[s->probs],
                                       tsl_graph_tensor(s->g, s->probs)->nbytes);
    return rc;
}

/* Arg-max accuracy of the loss op's probabilities against the labels:
 * probs (N,K[,H,W]), labels (N[,H,W]), over the first n_valid examples. */
static void count_correct(tsl_session *s, const int32_t *labels, int64_t n_valid,
                          tsl_step_stats *st) {
    const tsl_tensor *pt = tsl_graph_tensor(s->g, s->probs);
    int64_t n = pt->shape.d[0], k = pt->shape.d[1], inner = 1;
    if (n_valid < n) n = n_valid;
    for (int i = 2; i < pt->shape.ndim; i++) inner *= pt->shape.d[i];
    const float *p = s->host_probs;
    int64_t correct = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t best = 0;
            for (int64_t c = 1; c < k; c++)
                if (p[(i * k + c) * inner + j] > p[(i * k + best) * inner + j]) best = c;
            correct += best == labels[i * inner + j];
        }
    st->correct = correct;
    st->examples = n * inner;
}

void tsl__step_after_op(tsl_session *s, int32_t i, const int32_t *y, int64_t n_valid,
                        tsl_step_stats *st) {
    if (i != s->loss_op) return;
    st->loss = s->host_loss;
    if (s->probs != TSL_NONE) count_correct(s, y, n_valid, st);
}

tsl_status tsl__step_oom(tsl_session *s, const char *what, const char *name, size_t bytes,
                         int32_t at) {
    tsl_alloc_stats ms;
    s->b->iface->mem_stats(s->b, &ms);
    char where[TSL_NAME_MAX + 32];
    if (at >= 0)
        snprintf(where, sizeof where, "op %d '%s'", at, tsl_graph_op(s->g, at)->name);
    else
        snprintf(where, sizeof where, "%s", at == -1 ? "the data load" : "session start");
    return tsl_fail(TSL_ERR_OOM,
                    "device out of memory at %s: cannot allocate %s '%s' of %zu bytes; "
                    "load %zu of %zu bytes, largest free block %zu bytes",
                    where, what, name, bytes, ms.load, ms.capacity, ms.largest_free);
}

tsl_status tsl__step_place(tsl_session *s, tsl_tid t, int32_t at) {
    const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
    if (s->b->iface->alloc(s->b, tt->nbytes, &s->ptr[t]) == TSL_OK) return TSL_OK;
    s->ptr[t] = NULL;
    return tsl__step_oom(s, tsl_kind_name(tt->kind), tt->name, tt->nbytes, at);
}

void tsl__step_free_transients(tsl_session *s) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) {
        if (!s->ptr[t] || tsl_kind_is_persistent(tsl_graph_tensor(s->g, t)->kind)) continue;
        s->b->iface->free(s->b, s->ptr[t]);
        s->ptr[t] = NULL;
    }
}
