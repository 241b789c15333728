/*
 * session.c - the facade of tensile/session.h: a finalized graph placed on
 * a backend (its own CPU backend, or one the caller injects), its
 * persistent tensors allocated once and initialised from the seed; steps
 * and evaluations dispatched to the vanilla pass (vanilla.c) or, with a
 * runtime attached, to the Executor (executor.c); persistent tensors read
 * and written between steps. Between steps a persistent tensor that a plan
 * swapped out across iterations is absent from the device; reads, writes
 * and the checksum then use its host copy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static tsl_tid find_probs(const tsl_graph *g, tsl_tid loss, int32_t *loss_op) {
    *loss_op = -1;
    if (loss == TSL_NONE) return TSL_NONE;
    int32_t p = tsl_graph_producer(g, loss);
    if (p < 0) return TSL_NONE;
    const tsl_op *op = tsl_graph_op(g, p);
    *loss_op = p;
    return op->type == TSL_OP_SOFTMAX_XENT && op->n_out >= 2 ? op->out[1] : TSL_NONE;
}

/* The session on backend b (owned or not); see tsl_session_new_on. */
static tsl_status session_open(const tsl_graph *g, tsl_backend *b, int owns_b,
                               const tsl_session_opts *opts, tsl_session **out) {
    tsl_session *s = calloc(1, sizeof *s);
    if (!s) {
        if (owns_b) tsl_backend_free(b);
        return tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    }
    s->g = g;
    s->o = opts ? *opts : tsl_session_opts_default();
    s->b = b;
    s->owns_b = owns_b;
    tsl_backend_caps caps;
    b->iface->caps(b, &caps);
    s->host_addressable = caps.host_addressable;
    int32_t nt = tsl_graph_n_tensors(g), no = tsl_graph_n_ops(g);
    s->ptr = calloc((size_t)nt, sizeof *s->ptr);
    s->op_ms = calloc((size_t)no + 1, sizeof *s->op_ms);
    tsl_status st = s->ptr && s->op_ms ? TSL_OK : tsl_fail(TSL_ERR_OOM, "session: out of host memory");
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
    if (st == TSL_OK && s->o.persistent_on_host && !(s->init_host = calloc((size_t)nt + 1, sizeof *s->init_host)))
        st = tsl_fail(TSL_ERR_OOM, "session: out of host memory");
    /* Persistent tensors: allocated once, in id order, then initialised;
     * with opts.persistent_on_host one that does not fit stays on the host */
    for (tsl_tid t = 0; t < nt && st == TSL_OK; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (!tsl_kind_is_persistent(tt->kind)) continue;
        st = tsl__step_place(s, t, -2);
        int on_host = st == TSL_ERR_OOM && s->init_host;
        if (on_host) {
            if (!s->n_init_host++) snprintf(s->init_oom, sizeof s->init_oom, "%s", tsl_last_error());
            tsl_clear_error();
            st = TSL_OK;
        }
        if (st != TSL_OK) break;
        float *host = malloc(tt->nbytes ? tt->nbytes : 1);
        if (!host) {
            st = tsl_fail(TSL_ERR_OOM, "session: out of host memory");
            break;
        }
        if (s->o.init) {
            st = s->o.init(s->o.init_ctx, g, t, host);
            if (st != TSL_OK) {
                free(host);
                break;
            }
        } else {
            tsl_init_value(g, t, s->o.seed, host);
        }
        if (on_host) {
            s->init_host[t] = host;
            continue;
        }
        st = tsl_backend_upload(s->b, s->ptr[t], host, tt->nbytes);
        free(host);
    }
    if (st != TSL_OK) {
        tsl_session_free(s);
        return st;
    }
    *out = s;
    return TSL_OK;
}

tsl_status tsl_session_new(const tsl_graph *g, const tsl_session_opts *opts, tsl_session **out) {
    *out = NULL;
    if (tsl_graph_status(g) != TSL_OK) return tsl_graph_status(g);
    tsl_session_opts o = opts ? *opts : tsl_session_opts_default();
    tsl_cpu_backend_opts co = tsl_cpu_backend_opts_default(o.device_memory);
    co.kernels = o.kernels;
    co.nthreads = o.nthreads;
    co.pcie_gbps = o.pcie_gbps;
    co.async_compute = o.async_compute;
    co.kernel_delay_us = o.kernel_delay_us;
    tsl_backend *b;
    tsl_status st = tsl_cpu_backend_new_opts(&co, &b);
    if (st != TSL_OK) return st;
    return session_open(g, b, 1, &o, out);
}

tsl_status tsl_session_new_on(const tsl_graph *g, tsl_backend *b, const tsl_session_opts *opts,
                              tsl_session **out) {
    *out = NULL;
    if (!b) return tsl_fail(TSL_ERR_INVALID, "session: the backend is NULL");
    if (tsl_graph_status(g) != TSL_OK) return tsl_graph_status(g);
    return session_open(g, b, 0, opts, out);
}

void tsl_session_free(tsl_session *s) {
    if (!s) return;
    tsl__rt_free(s->rt); /* joins the Swap Executor, frees the host copies */
    s->rt = NULL;
    if (s->b) {
        s->b->iface->synchronize(s->b); /* (a sticky error was reported already) */
        for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++)
            if (s->ptr[t]) s->b->iface->free(s->b, s->ptr[t]);
        if (s->owns_b) tsl_backend_free(s->b);
    }
    if (s->init_host)
        for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) free(s->init_host[t]);
    free(s->init_host);
    tsl__inflight_free(&s->inflight);
    tsl__liveness_free(&s->live_train);
    tsl__liveness_free(&s->live_eval);
    free(s->host_probs);
    free(s->ptr);
    free(s->op_ms);
    free(s);
}

tsl_status tsl_session_step(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st) {
    s->step_updates = 0;
    tsl_status rc = s->rt ? tsl__rt_step(s, x, y, st) : tsl__vanilla_pass(s, x, y, 1, INT64_MAX, st);
    if (rc != TSL_OK && s->step_updates > 0) { /* the updates in the backward pass */
        char why[1024];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        rc = tsl_fail(rc, "%s (%d parameter update%s of this step had run: they stay applied, "
                      "so running the step again would apply them twice)",
                      why, (int)s->step_updates, s->step_updates == 1 ? "" : "s");
    }
    return rc;
}

/* Evaluation runs the vanilla pass: with a runtime attached, the persistent
 * tensors swapped out across iterations come back first. */
static tsl_status run_eval(tsl_session *s, const float *x, const int32_t *y, int64_t n_valid,
                           tsl_step_stats *st) {
    if (s->rt) {
        tsl_status rc = tsl__rt_restore_for_eval(s->rt);
        if (rc != TSL_OK) return rc;
    }
    return tsl__vanilla_pass(s, x, y, 0, n_valid, st);
}

tsl_status tsl_session_eval(tsl_session *s, const float *x, const int32_t *y, tsl_step_stats *st) {
    return run_eval(s, x, y, INT64_MAX, st);
}

tsl_status tsl_session_eval_partial(tsl_session *s, const float *x, const int32_t *y,
                                    int64_t n_valid, tsl_step_stats *st) {
    if (n_valid < 1) return tsl_fail(TSL_ERR_INVALID, "eval: n_valid %lld must be >= 1", (long long)n_valid);
    return run_eval(s, x, y, n_valid, st);
}

void *tsl__session_host_copy(tsl_session *s, tsl_tid t, int write) {
    if (s->init_host && t >= 0 && t < tsl_graph_n_tensors(s->g) && s->init_host[t])
        return s->init_host[t];
    return tsl__rt_persistent_host(s, t, write);
}

int tsl_session_n_on_host(const tsl_session *s, const char **why) {
    if (!s) return 0;
    if (why && s->n_init_host) *why = s->init_oom;
    return s->n_init_host;
}

tsl_status tsl__session_all_placed(const tsl_session *s) {
    if (!s->n_init_host) return TSL_OK;
    return tsl_fail(TSL_ERR_OOM, "%s (%d persistent tensors wait on the host for a runtime's plan)",
                    s->init_oom, s->n_init_host);
}

static tsl_status check_resident(tsl_session *s, tsl_tid t) {
    if (t < 0 || t >= tsl_graph_n_tensors(s->g))
        return tsl_fail(TSL_ERR_INVALID, "tensor id %d out of range", t);
    const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
    if (!tsl_kind_is_persistent(tt->kind) || (!s->ptr[t] && !tsl__session_host_copy(s, t, 0)))
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
        memcpy(dst, tsl__session_host_copy(s, t, 0), n);
        return TSL_OK;
    }
    return tsl_backend_download(s->b, dst, s->ptr[t], n);
}

tsl_status tsl_session_write(tsl_session *s, tsl_tid t, const void *src) {
    tsl_status st = check_resident(s, t);
    if (st != TSL_OK) return st;
    size_t n = tsl_graph_tensor(s->g, t)->nbytes;
    void *host = tsl__session_host_copy(s, t, 1); /* absent: its host copy; else drops it */
    if (!s->ptr[t]) {
        memcpy(host, src, n);
        return TSL_OK;
    }
    return tsl_backend_upload(s->b, s->ptr[t], src, n);
}

uint64_t tsl_session_param_checksum(tsl_session *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) {
        const tsl_tensor *tt = tsl_graph_tensor(s->g, t);
        if (tt->kind != TSL_KIND_PARAM) continue;
        const uint8_t *p = s->ptr[t];
        const uint8_t *host = p ? NULL : tsl__session_host_copy(s, t, 0);
        TSL_ASSERT(p || host);
        uint8_t buf[1 << 16];
        for (size_t off = 0; off < tt->nbytes; off += sizeof buf) {
            size_t n = tt->nbytes - off < sizeof buf ? tt->nbytes - off : sizeof buf;
            if (p && tsl__step_read(s, buf, p + off, n) != TSL_OK) return 0;
            if (!p) memcpy(buf, host + off, n);
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
