/*
 * session.c - the vanilla executor: a finalized graph placed on a backend.
 *
 * Persistent tensors are allocated once, in id order, and initialised from
 * the seed. A step loads the batch (the INPUT and LABEL tensors' generating
 * access), runs the ops in order, allocates each output at its generating
 * access and frees every non-persistent tensor right after its last use
 * (liveness.h). A failed allocation ends the step with TSL_ERR_OOM and a
 * message naming the tensor, its size, the load and the capacity; the
 * step's tensors are freed and the session stays usable.
 *
 * With a runtime attached (tsl_session_attach_runtime, runtime_internal.h)
 * a training step follows the runtime's plan instead (executor.c); this
 * vanilla pass still serves evaluation and steps without a plan. Between
 * steps a persistent tensor that the plan swapped out across iterations is
 * absent from the device; reads, writes and the checksum then use its host
 * copy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/assert.h"
#include "core/graph_internal.h"
#include "runtime/init.h"
#include "runtime/liveness.h"
#include "runtime/runtime_internal.h"
#include "runtime/session_internal.h"

tsl_session_opts tsl_session_opts_default(void) {
    tsl_session_opts o;
    memset(&o, 0, sizeof o);
    o.device_memory = (size_t)4 << 30;
    o.nthreads = 1;
    o.kernels = TSL_KERNELS_FAST;
    o.seed = 42;
    return o;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Frees every resident non-persistent tensor (end of step, or after a failure). */
void tsl__session_free_transients(tsl_session *s) {
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) {
        if (!s->ptr[t] || tsl_kind_is_persistent(tsl_graph_tensor(s->g, t)->kind)) continue;
        s->b->iface->free(s->b, s->ptr[t]);
        s->ptr[t] = NULL;
    }
}

/* Allocates tensor t at op index `at` (-1: data load); on failure records a
 * message naming everything a user needs to size the device. */
static tsl_status place(tsl_session *s, tsl_tid t, int32_t at) {
    const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
    tsl_status st = s->b->iface->alloc(s->b, tt->nbytes, &s->ptr[t]);
    if (st == TSL_OK) return TSL_OK;
    s->ptr[t] = NULL;
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
                    where, tsl_kind_name(tt->kind), tt->name, tt->nbytes, ms.load, ms.capacity,
                    ms.largest_free);
}

static tsl_tid find_probs(const tsl_graph *g, tsl_tid loss, int32_t *loss_op) {
    *loss_op = -1;
    if (loss == TSL_NONE) return TSL_NONE;
    int32_t p = tsl_graph_producer(g, loss);
    if (p < 0) return TSL_NONE;
    const tsl_op *op = tsl_graph_op(g, p);
    *loss_op = p;
    return op->type == TSL_OP_SOFTMAX_XENT && op->n_out >= 2 ? op->out[1] : TSL_NONE;
}

tsl_status tsl_session_new(const tsl_graph *g, const tsl_session_opts *opts, tsl_session **out) {
    *out = NULL;
    if (tsl_graph_status(g) != TSL_OK) return tsl_graph_status(g);
    tsl_session *s = calloc(1, sizeof *s);
    if (!s) return tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    s->g = g;
    s->o = opts ? *opts : tsl_session_opts_default();
    int32_t nt = tsl_graph_n_tensors(g), no = tsl_graph_n_ops(g);
    s->ptr = calloc((size_t)nt, sizeof *s->ptr);
    s->op_ms = calloc((size_t)no + 1, sizeof *s->op_ms);
    tsl_status st = s->ptr && s->op_ms ? TSL_OK : tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    if (st == TSL_OK) st = tsl_cpu_backend_new(s->o.device_memory, s->o.kernels, s->o.nthreads, &s->b);
    if (st == TSL_OK) st = tsl__liveness_build(g, no, &s->live_train);
    if (st == TSL_OK) st = tsl__liveness_build(g, tsl__graph_backward_begin(g), &s->live_eval);
    s->input = tsl_graph_find(g, "input");
    s->label = tsl_graph_find(g, "label");
    s->loss = tsl_graph_loss(g);
    s->probs = find_probs(g, s->loss, &s->loss_op);
    if (st == TSL_OK && s->probs != TSL_NONE) {
        s->host_probs = malloc(tsl_graph_tensor(g, s->probs)->nbytes);
        if (!s->host_probs) st = tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    }
    /* Persistent tensors: allocated once, in id order, then initialised. */
    for (tsl_tid t = 0; t < nt && st == TSL_OK; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (!tsl_kind_is_persistent(tt->kind)) continue;
        st = place(s, t, -2);
        if (st != TSL_OK) break;
        float *host = malloc(tt->nbytes ? tt->nbytes : 1);
        if (!host) {
            st = tsl_fail(TSL_ERR_OOM, "session: out of host memory");
            break;
        }
        tsl__init_tensor(g, t, s->o.seed, host);
        st = s->b->iface->copy_to_device(s->b, s->ptr[t], host, tt->nbytes);
        free(host);
    }
    if (st != TSL_OK) {
        tsl_session_free(s);
        return st;
    }
    *out = s;
    return TSL_OK;
}

void tsl_session_free(tsl_session *s) {
    if (!s) return;
    tsl__rt_free(s->rt); /* joins the Swap Executor, frees the host copies */
    s->rt = NULL;
    if (s->b) {
        for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++)
            if (s->ptr[t]) s->b->iface->free(s->b, s->ptr[t]);
        tsl_backend_free(s->b);
    }
    tsl__liveness_free(&s->live_train);
    tsl__liveness_free(&s->live_eval);
    free(s->host_probs);
    free(s->ptr);
    free(s->op_ms);
    free(s);
}

/* Arg-max accuracy of the loss op's probabilities against the labels:
 * probs (N,K[,H,W]), labels (N[,H,W]), over the first n_valid examples. */
static void count_correct(tsl_session *s, const int32_t *labels, int64_t n_valid,
                          tsl_step_stats *st) {
    const tsl_tensor *pt = tsl_graph_tensor(s->g, s->probs);
    int64_t n = pt->shape.d[0], k = pt->shape.d[1], inner = 1;
    if (n_valid < n) n = n_valid;
    for (int i = 2; i < pt->shape.ndim; i++) inner *= pt->shape.d[i];
    s->b->iface->copy_to_host(s->b, s->host_probs, s->ptr[s->probs], pt->nbytes);
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

void tsl__session_after_op(tsl_session *s, int32_t i, const int32_t *y, int64_t n_valid,
                           tsl_step_stats *st) {
    if (i != s->loss_op) return;
    float l;
    s->b->iface->copy_to_host(s->b, &l, s->ptr[s->loss], sizeof l);
    st->loss = l;
    if (s->probs != TSL_NONE) count_correct(s, y, n_valid, st);
}

/* One pass over ops [0, lv->end): training step or evaluation. */
tsl_status tsl__session_run_vanilla(tsl_session *s, const float *x, const int32_t *y,
                                    int training, int64_t n_valid, tsl_step_stats *st) {
    const tsl_graph *g = s->g;
    const tsl_liveness *lv = training ? &s->live_train : &s->live_eval;
    tsl_step_stats local;
    if (!st) st = &local;
    tsl_status rc = tsl__session_step_begin(s, st);
    if (rc != TSL_OK) return rc;
    s->b->iface->reset_peaks(s->b);
    double t0 = now_ms();
    tsl_run_ctx ctx = {.step = s->steps + 1, .training = training};
    rc = place(s, s->input, -1);
    if (rc == TSL_OK) rc = place(s, s->label, -1);
    if (rc == TSL_OK) {
        s->b->iface->copy_to_device(s->b, s->ptr[s->input], x, tsl_graph_tensor(g, s->input)->nbytes);
        s->b->iface->copy_to_device(s->b, s->ptr[s->label], y, tsl_graph_tensor(g, s->label)->nbytes);
        int nf;
        const tsl_tid *fl = tsl__liveness_after(lv, -1, &nf);
        for (int k = 0; k < nf; k++) {
            s->b->iface->free(s->b, s->ptr[fl[k]]);
            s->ptr[fl[k]] = NULL;
        }
    }
    for (int32_t i = 0; i < lv->end && rc == TSL_OK; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        void *in[256], *out[16];
        TSL_ASSERT(op->n_in <= 256 && op->n_out <= 16);
        for (int j = 0; j < op->n_out && rc == TSL_OK; j++)
            if (!s->ptr[op->out[j]]) rc = place(s, op->out[j], i);
        if (rc != TSL_OK) break;
        for (int j = 0; j < op->n_in; j++) {
            in[j] = s->ptr[op->in[j]];
            TSL_ASSERT(in[j] != NULL);
        }
        for (int j = 0; j < op->n_out; j++) out[j] = s->ptr[op->out[j]];
        rc = s->b->iface->run_op(s->b, g, op, in, out, &ctx, &s->op_ms[i]);
        if (rc != TSL_OK) break;
        st->kernel_ms += s->op_ms[i];
        tsl__session_after_op(s, i, y, n_valid, st);
        int nf;
        const tsl_tid *fl = tsl__liveness_after(lv, i, &nf);
        for (int k = 0; k < nf; k++) {
            s->b->iface->free(s->b, s->ptr[fl[k]]);
            s->ptr[fl[k]] = NULL;
        }
    }
    s->b->iface->sync(s->b);
    tsl_alloc_stats ms;
    s->b->iface->mem_stats(s->b, &ms);
    st->peak_load = ms.peak_load;
    st->peak_footprint = ms.peak_footprint;
    st->ms = now_ms() - t0;
    tsl__session_free_transients(s);
    if (rc == TSL_OK && training) s->steps++;
    return rc;
}

tsl_status tsl_session_step(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st) {
    if (s->rt) return tsl__rt_step(s, x, y, st);
    return tsl__session_run_vanilla(s, x, y, 1, INT64_MAX, st);
}

/* Evaluation runs the vanilla pass: with a runtime attached, the persistent
 * tensors swapped out across iterations come back first. */
static tsl_status run_eval(tsl_session *s, const float *x, const int32_t *y, int64_t n_valid,
                           tsl_step_stats *st) {
    if (s->rt) {
        tsl_status rc = tsl__rt_restore_for_eval(s->rt);
        if (rc != TSL_OK) return rc;
    }
    return tsl__session_run_vanilla(s, x, y, 0, n_valid, st);
}

tsl_status tsl_session_eval(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st) {
    return run_eval(s, x, y, INT64_MAX, st);
}

tsl_status tsl_session_eval_partial(tsl_session *s, const float *x, const int32_t *y,
                                    int64_t n_valid, tsl_step_stats *st) {
    if (n_valid < 1) return tsl_fail(TSL_ERR_INVALID, "eval: n_valid %lld must be >= 1", (long long)n_valid);
    return run_eval(s, x, y, n_valid, st);
}

static tsl_status check_resident(tsl_session *s, tsl_tid t) {
    if (t < 0 || t >= tsl_graph_n_tensors(s->g))
        return tsl_fail(TSL_ERR_INVALID, "tensor id %d out of range", t);
    const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
    if (!tsl_kind_is_persistent(tt->kind) || (!s->ptr[t] && !tsl__rt_persistent_host(s, t, 0)))
        return tsl_fail(TSL_ERR_INVALID,
                        "tensor '%s' (%s) is not resident between steps: only parameters, "
                        "buffers and optimizer states can be read or written",
                        tt->name, tsl_kind_name(tt->kind));
    return TSL_OK;
}

tsl_status tsl_session_read(tsl_session *s, tsl_tid t, void *dst) {
    tsl_status st = check_resident(s, t);
    if (st != TSL_OK) return st;
    size_t n = tsl_graph_tensor(s->g, t)->nbytes;
    if (!s->ptr[t]) { /* swapped out across iterations: its host copy */
        memcpy(dst, tsl__rt_persistent_host(s, t, 0), n);
        return TSL_OK;
    }
    return s->b->iface->copy_to_host(s->b, dst, s->ptr[t], n);
}

tsl_status tsl_session_write(tsl_session *s, tsl_tid t, const void *src) {
    tsl_status st = check_resident(s, t);
    if (st != TSL_OK) return st;
    size_t n = tsl_graph_tensor(s->g, t)->nbytes;
    void *host = tsl__rt_persistent_host(s, t, 1); /* absent: its host copy; else drops it */
    if (!s->ptr[t]) {
        memcpy(host, src, n);
        return TSL_OK;
    }
    return s->b->iface->copy_to_device(s->b, s->ptr[t], src, n);
}

uint64_t tsl_session_param_checksum(tsl_session *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
        if (tt->kind != TSL_KIND_PARAM) continue;
        const uint8_t *p = s->ptr[t]; /* CPU backend: device memory is host-addressable */
        const uint8_t *host = p ? NULL : tsl__rt_persistent_host(s, t, 0);
        TSL_ASSERT(p || host);
        uint8_t buf[4096];
        for (size_t off = 0; off < tt->nbytes; off += sizeof buf) {
            size_t n = tt->nbytes - off < sizeof buf ? tt->nbytes - off : sizeof buf;
            if (p) s->b->iface->copy_to_host(s->b, buf, p + off, n);
            else memcpy(buf, host + off, n);
            for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
        }
    }
    return h;
}

int64_t tsl_session_steps(const tsl_session *s) { return s->steps; }

double tsl_session_op_ms(const tsl_session *s, int32_t i) {
    return i >= 0 && i < tsl_graph_n_ops(s->g) ? s->op_ms[i] : 0;
}

tsl_status tsl_session_op_workspace(tsl_session *s, int32_t i, size_t *bytes) {
    *bytes = 0;
    if (i < 0 || i >= tsl_graph_n_ops(s->g))
        return tsl_fail(TSL_ERR_INVALID, "op workspace: op %d outside 0..%d of graph '%s'", i,
                        tsl_graph_n_ops(s->g) - 1, tsl_graph_name(s->g));
    return s->b->iface->op_workspace(s->b, s->g, tsl_graph_op(s->g, i), bytes);
}

tsl_status tsl__session_step_begin(const tsl_session *s, tsl_step_stats *st) {
    memset(st, 0, sizeof *st);
    st->loss = NAN;
    if (s->input == TSL_NONE || s->label == TSL_NONE)
        return tsl_fail(TSL_ERR_INVALID, "graph '%s' has no INPUT named 'input' or LABEL named 'label'",
                        tsl_graph_name(s->g));
    return TSL_OK;
}
