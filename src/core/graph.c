/*
 * graph.c - storage of a graph: tensor descriptors, ops in execution order,
 * the builder plumbing shared by every op family, leaves, finalize and the
 * per-tensor access lists the planner reads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/graph_internal.h"

struct tsl_graph {
    char name[TSL_NAME_MAX];
    tsl_status status;
    int finalized;
    int in_backward;            /* derived tensors are GRADIENTs */
    const uint8_t *grad_wanted; /* during backward: per tensor */
    int32_t n_grad_wanted;

    tsl_tensor *tensors;
    int32_t n_tensors, cap_tensors;
    size_t total_bytes;         /* of every tensor: at most TSL_MAX_GRAPH_BYTES */
    tsl_op *ops;
    int32_t n_ops, cap_ops;

    tsl_tid loss;
    int32_t backward_begin, optimizer_begin; /* -1 until built */

    /* after finalize */
    tsl_access **acc;
    int *n_acc;
    int32_t *last_use, *producer;
};

tsl_graph *tsl_graph_new(const char *name) {
    tsl_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    snprintf(g->name, sizeof g->name, "%s", name ? name : "graph");
    g->loss = TSL_NONE;
    g->backward_begin = g->optimizer_begin = -1;
    return g;
}

void tsl_graph_free(tsl_graph *g) {
    if (!g) return;
    for (int32_t i = 0; i < g->n_ops; i++) {
        free((void *)g->ops[i].in);
        free((void *)g->ops[i].out);
    }
    if (g->acc)
        for (int32_t i = 0; i < g->n_tensors; i++) free(g->acc[i]);
    free(g->acc);
    free(g->n_acc);
    free(g->last_use);
    free(g->producer);
    free(g->tensors);
    free(g->ops);
    free(g);
}

const char *tsl_graph_name(const tsl_graph *g) { return g->name; }
tsl_status tsl_graph_status(const tsl_graph *g) { return g->status; }
int tsl__graph_finalized(const tsl_graph *g) { return g->finalized; }

/* ---- builder plumbing ------------------------------------------------------ */

tsl_tid tsl__graph_fail(tsl_graph *g, const char *fmt, ...) {
    if (g->status == TSL_OK) { /* keep the first message: it names the cause */
        char buf[900];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        tsl_fail(TSL_ERR_INVALID, "graph '%s': %s", g->name, buf);
        g->status = TSL_ERR_INVALID;
    }
    return TSL_NONE;
}

int tsl__graph_bad(tsl_graph *g, const tsl_tid *ids, int n) {
    if (g->finalized) {
        tsl__graph_fail(g, "builder called after tsl_graph_finalize");
        return 1;
    }
    if (g->status != TSL_OK) return 1;
    for (int i = 0; i < n; i++) {
        if (ids[i] == TSL_NONE) return 1;
        if (ids[i] < 0 || ids[i] >= g->n_tensors) {
            tsl__graph_fail(g, "tensor id %d out of range (graph has %d tensors)", ids[i],
                            g->n_tensors);
            return 1;
        }
    }
    return 0;
}

const char *tsl__name(char *buf, const char *prefix, const char *suffix) {
    if (suffix)
        snprintf(buf, TSL_NAME_MAX, "%s.%s", prefix ? prefix : "", suffix);
    else
        snprintf(buf, TSL_NAME_MAX, "%s", prefix ? prefix : "");
    return buf;
}

tsl_tid tsl__graph_new_tensor_kind(tsl_graph *g, const char *name, tsl_shape s, tsl_dtype dt,
                                   tsl_tensor_kind kind) {
    if (g->finalized || g->status != TSL_OK) return TSL_NONE;
    if (s.ndim < 0 || s.ndim > TSL_MAX_DIMS)
        return tsl__graph_fail(g, "tensor '%s': rank %d outside 0..%d", name, s.ndim,
                               TSL_MAX_DIMS);
    for (int i = 0; i < s.ndim; i++)
        if (s.d[i] <= 0) {
            char sb[128];
            return tsl__graph_fail(g, "tensor '%s': shape %s has dimension %d = %lld (must be > 0)",
                                   name, tsl_shape_str(&s, sb, sizeof sb), i, (long long)s.d[i]);
        }
    /* sizes that cannot exist are refused here, so that no later sum of
     * sizes (loads, peaks, ledgers) can overflow */
    int64_t numel;
    size_t esz = tsl_dtype_size(dt), nbytes;
    if (!tsl_shape_numel_checked(&s, &numel) || (uint64_t)numel > TSL_MAX_TENSOR_BYTES / esz) {
        char sb[128];
        double bytes = (double)esz;
        for (int i = 0; i < s.ndim; i++) bytes *= (double)s.d[i];
        return tsl__graph_fail(g, "tensor '%s': shape %s takes %.3g bytes, more than a tensor "
                               "may take (%zu bytes, 64 PiB)", name,
                               tsl_shape_str(&s, sb, sizeof sb), bytes, TSL_MAX_TENSOR_BYTES);
    }
    nbytes = (size_t)numel * esz;
    if (nbytes > TSL_MAX_GRAPH_BYTES - g->total_bytes) {
        char sb[128];
        return tsl__graph_fail(g, "tensor '%s': shape %s (%zu bytes) brings the graph's tensors "
                               "to more than %zu bytes (1 EiB) in all", name,
                               tsl_shape_str(&s, sb, sizeof sb), nbytes, TSL_MAX_GRAPH_BYTES);
    }
    if (g->n_tensors == g->cap_tensors) {
        int32_t cap = g->cap_tensors ? 2 * g->cap_tensors : 256;
        tsl_tensor *t = realloc(g->tensors, (size_t)cap * sizeof *t);
        if (!t) {
            g->status = TSL_ERR_OOM;
            tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory for tensors", g->name);
            return TSL_NONE;
        }
        g->tensors = t;
        g->cap_tensors = cap;
    }
    tsl_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->id = g->n_tensors;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->shape = s;
    t->dtype = dt;
    t->kind = kind;
    t->nbytes = nbytes;
    t->grad = TSL_NONE;
    g->total_bytes += nbytes;
    return g->n_tensors++;
}

tsl_tid tsl__graph_new_tensor(tsl_graph *g, const char *name, tsl_shape s, tsl_dtype dt) {
    return tsl__graph_new_tensor_kind(g, name, s, dt,
                                      g->in_backward ? TSL_KIND_GRADIENT : TSL_KIND_ACTIVATION);
}

tsl_tensor *tsl__graph_tensor_mut(tsl_graph *g, tsl_tid id) {
    TSL_ASSERT(id >= 0 && id < g->n_tensors);
    return &g->tensors[id];
}

int32_t tsl__graph_add_op(tsl_graph *g, tsl_op_type type, const char *name, const tsl_tid *in,
                          int n_in, const tsl_tid *out, int n_out, const void *attr,
                          size_t attr_size, unsigned no_grad_outputs) {
    TSL_ASSERT((unsigned)type < TSL_OP_COUNT);
    TSL_ASSERT(n_in >= 0 && n_out >= 1);
    if (tsl__graph_bad(g, in, n_in) || tsl__graph_bad(g, out, n_out)) return -1;
    if (g->n_ops == g->cap_ops) {
        int32_t cap = g->cap_ops ? 2 * g->cap_ops : 256;
        tsl_op *o = realloc(g->ops, (size_t)cap * sizeof *o);
        if (!o) {
            g->status = TSL_ERR_OOM;
            tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory for ops", g->name);
            return -1;
        }
        g->ops = o;
        g->cap_ops = cap;
    }
    tsl_tid *ins = malloc(sizeof(tsl_tid) * (size_t)(n_in ? n_in : 1));
    tsl_tid *outs = malloc(sizeof(tsl_tid) * (size_t)n_out);
    if (!ins || !outs) {
        free(ins);
        free(outs);
        g->status = TSL_ERR_OOM;
        tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory for op '%s'", g->name, name);
        return -1;
    }
    if (n_in) memcpy(ins, in, sizeof(tsl_tid) * (size_t)n_in);
    memcpy(outs, out, sizeof(tsl_tid) * (size_t)n_out);

    tsl_op *op = &g->ops[g->n_ops];
    memset(op, 0, sizeof *op);
    op->index = g->n_ops;
    op->type = type;
    snprintf(op->name, sizeof op->name, "%s", name);
    op->n_in = n_in;
    op->n_out = n_out;
    op->in = ins;
    op->out = outs;
    if (attr) {
        TSL_ASSERT(attr_size <= sizeof op->attr);
        memcpy(&op->attr, attr, attr_size);
    }
    int rg = 0;
    for (int i = 0; i < n_in; i++) rg |= g->tensors[in[i]].requires_grad;
    for (int i = 0; i < n_out; i++) {
        tsl_tensor *t = &g->tensors[out[i]];
        int inplace = 0;
        for (int j = 0; j < n_in; j++) inplace |= in[j] == out[i];
        if (!inplace && !tsl_kind_is_persistent(t->kind))
            t->requires_grad = (no_grad_outputs >> i) & 1u ? 0 : rg;
    }
    return g->n_ops++;
}

int tsl__graph_needs_grad(const tsl_graph *g, tsl_tid id) {
    if (id < 0 || id >= g->n_tensors) return 0;
    if (g->grad_wanted) return id < g->n_grad_wanted ? g->grad_wanted[id] : 0;
    return g->tensors[id].requires_grad;
}

void tsl__graph_set_backward(tsl_graph *g, int on, const uint8_t *wanted, int32_t n_wanted) {
    g->in_backward = on;
    g->grad_wanted = wanted;
    g->n_grad_wanted = wanted ? n_wanted : 0;
}
void tsl__graph_set_loss(tsl_graph *g, tsl_tid loss) { g->loss = loss; }
void tsl__graph_mark_phase(tsl_graph *g, int optimizer) {
    if (optimizer) g->optimizer_begin = g->n_ops;
    else g->backward_begin = g->n_ops;
}

tsl_status tsl__graph_permute_ops(tsl_graph *g, const int32_t *order) {
    if (g->status != TSL_OK) return g->status;
    TSL_ASSERT(!g->finalized);
    int32_t n = g->n_ops;
    tsl_op *ops = malloc((size_t)(n ? n : 1) * sizeof *ops);
    uint8_t *seen = calloc((size_t)(n ? n : 1), 1);
    if (!ops || !seen) {
        free(ops);
        free(seen);
        g->status = TSL_ERR_OOM;
        return tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory to reorder %d ops", g->name,
                        (int)n);
    }
    for (int32_t i = 0; i < n; i++) {
        TSL_ASSERT(order[i] >= 0 && order[i] < n && !seen[order[i]]);
        seen[order[i]] = 1;
        ops[i] = g->ops[order[i]];
        ops[i].index = i;
    }
    memcpy(g->ops, ops, (size_t)n * sizeof *ops);
    free(ops);
    free(seen);
    return TSL_OK;
}

int32_t tsl__graph_backward_begin(const tsl_graph *g) {
    return g->backward_begin < 0 ? g->n_ops : g->backward_begin;
}
int32_t tsl__graph_optimizer_begin(const tsl_graph *g) {
    return g->optimizer_begin < 0 ? g->n_ops : g->optimizer_begin;
}

/* ---- leaves ------------------------------------------------------------------ */

static tsl_tid leaf(tsl_graph *g, const char *name, tsl_shape s, tsl_dtype dt,
                    tsl_tensor_kind k, tsl_init init, int requires_grad) {
    if (g->finalized) return tsl__graph_fail(g, "leaf '%s' added after finalize", name);
    if (tsl_graph_find(g, name) != TSL_NONE)
        return tsl__graph_fail(g, "a tensor named '%s' already exists", name);
    tsl_tid id = tsl__graph_new_tensor_kind(g, name, s, dt, k);
    if (id == TSL_NONE) return id;
    g->tensors[id].init = init;
    g->tensors[id].requires_grad = requires_grad;
    return id;
}

tsl_tid tsl_input(tsl_graph *g, const char *name, tsl_shape s) {
    return leaf(g, name, s, TSL_F32, TSL_KIND_INPUT, TSL_INIT_NONE, 0);
}
tsl_tid tsl_label(tsl_graph *g, const char *name, tsl_shape s) {
    return leaf(g, name, s, TSL_I32, TSL_KIND_LABEL, TSL_INIT_NONE, 0);
}
tsl_tid tsl_param(tsl_graph *g, const char *name, tsl_shape s, tsl_init init) {
    return leaf(g, name, s, TSL_F32, TSL_KIND_PARAM, init, 1);
}
tsl_tid tsl_buffer(tsl_graph *g, const char *name, tsl_shape s, tsl_init init) {
    return leaf(g, name, s, TSL_F32, TSL_KIND_BUFFER, init, 0);
}

/* ---- finalize and accesses ------------------------------------------------------ */

static int push_access(tsl_graph *g, int *cap, tsl_tid t, int32_t op, tsl_access_type ty) {
    int n = g->n_acc[t];
    /* one TUA per op per tensor, even if the op reads it twice (add(x, x)) */
    if (n && g->acc[t][n - 1].op == op && g->acc[t][n - 1].type == ty) return 1;
    if (n == cap[t]) {
        int c = cap[t] ? 2 * cap[t] : 4;
        tsl_access *a = realloc(g->acc[t], (size_t)c * sizeof *a);
        if (!a) return 0;
        g->acc[t] = a;
        cap[t] = c;
    }
    g->acc[t][n].op = op;
    g->acc[t][n].type = ty;
    g->n_acc[t] = n + 1;
    return 1;
}

tsl_status tsl_graph_finalize(tsl_graph *g) {
    if (g->status != TSL_OK) return g->status;
    if (g->finalized) return TSL_OK;
    int32_t nt = g->n_tensors;
    g->acc = calloc((size_t)nt + 1, sizeof *g->acc);
    g->n_acc = calloc((size_t)nt + 1, sizeof *g->n_acc);
    g->last_use = malloc(((size_t)nt + 1) * sizeof *g->last_use);
    g->producer = malloc(((size_t)nt + 1) * sizeof *g->producer);
    int *cap = calloc((size_t)nt + 1, sizeof *cap);
    if (!g->acc || !g->n_acc || !g->last_use || !g->producer || !cap) {
        free(cap);
        return tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory in finalize", g->name);
    }
    int ok = 1;
    for (int32_t t = 0; t < nt; t++) {
        g->last_use[t] = -1;
        g->producer[t] = -1;
        tsl_tensor_kind k = g->tensors[t].kind;
        if (k == TSL_KIND_INPUT || k == TSL_KIND_LABEL) ok &= push_access(g, cap, t, -1, TSL_TGA);
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        const tsl_op *op = &g->ops[i];
        for (int j = 0; j < op->n_in; j++) {
            ok &= push_access(g, cap, op->in[j], i, TSL_TUA);
            g->last_use[op->in[j]] = i;
        }
        for (int j = 0; j < op->n_out; j++) {
            tsl_tid t = op->out[j];
            tsl_tensor_kind k = g->tensors[t].kind;
            if (g->producer[t] >= 0 && !tsl_kind_is_persistent(k)) {
                free(cap);
                return tsl__graph_fail(g, "tensor '%s' is generated twice (ops '%s' and '%s')",
                                       g->tensors[t].name, g->ops[g->producer[t]].name, op->name);
            }
            g->producer[t] = i;
            ok &= push_access(g, cap, t, i, TSL_TGA);
        }
    }
    free(cap);
    if (!ok) return tsl_fail(TSL_ERR_OOM, "graph '%s': out of host memory in finalize", g->name);
    /* A computed tensor must be generated before it is read. */
    for (int32_t t = 0; t < nt; t++) {
        tsl_tensor_kind k = g->tensors[t].kind;
        if (tsl_kind_is_persistent(k) || k == TSL_KIND_INPUT || k == TSL_KIND_LABEL) continue;
        if (g->n_acc[t] && g->acc[t][0].type != TSL_TGA)
            return tsl__graph_fail(g, "tensor '%s' is read by op '%s' before it is generated",
                                   g->tensors[t].name, g->ops[g->acc[t][0].op].name);
    }
    g->finalized = 1;
    return TSL_OK;
}

/* ---- reading ------------------------------------------------------------------ */

int32_t tsl_graph_n_tensors(const tsl_graph *g) { return g->n_tensors; }
int32_t tsl_graph_n_ops(const tsl_graph *g) { return g->n_ops; }
tsl_tid tsl_graph_loss(const tsl_graph *g) { return g->loss; }

const tsl_tensor *tsl_graph_tensor(const tsl_graph *g, tsl_tid id) {
    TSL_ASSERT(id >= 0 && id < g->n_tensors);
    return &g->tensors[id];
}

const tsl_op *tsl_graph_op(const tsl_graph *g, int32_t index) {
    TSL_ASSERT(index >= 0 && index < g->n_ops);
    return &g->ops[index];
}

tsl_tid tsl_graph_find(const tsl_graph *g, const char *name) {
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return i;
    return TSL_NONE;
}

const tsl_access *tsl_graph_accesses(const tsl_graph *g, tsl_tid id, int *n) {
    TSL_ASSERT(g->finalized);
    TSL_ASSERT(id >= 0 && id < g->n_tensors);
    *n = g->n_acc[id];
    return g->acc[id];
}

int32_t tsl_graph_last_use(const tsl_graph *g, tsl_tid id) {
    TSL_ASSERT(g->finalized);
    TSL_ASSERT(id >= 0 && id < g->n_tensors);
    return g->last_use[id];
}

int32_t tsl_graph_producer(const tsl_graph *g, tsl_tid id) {
    TSL_ASSERT(g->finalized);
    TSL_ASSERT(id >= 0 && id < g->n_tensors);
    return g->producer[id];
}

/* ---- costs and totals ------------------------------------------------------------ */

size_t tsl_op_bytes_read(const tsl_graph *g, const tsl_op *op) {
    size_t b = 0;
    for (int i = 0; i < op->n_in; i++) b += g->tensors[op->in[i]].nbytes;
    return b;
}

size_t tsl_op_bytes_written(const tsl_graph *g, const tsl_op *op) {
    size_t b = 0;
    for (int i = 0; i < op->n_out; i++) b += g->tensors[op->out[i]].nbytes;
    return b;
}

int64_t tsl_graph_param_count(const tsl_graph *g) {
    int64_t n = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].kind == TSL_KIND_PARAM) n += tsl_shape_numel(&g->tensors[i].shape);
    return n;
}

size_t tsl_graph_bytes_of_kind(const tsl_graph *g, tsl_tensor_kind k) {
    size_t b = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].kind == k) b += g->tensors[i].nbytes;
    return b;
}
