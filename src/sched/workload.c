/*
 * workload.c - the workload (tensor access sequence) of one job, built from
 * a finalized training graph, and the analytic cost model of op latencies.
 *
 * Layout of a workload (also how a hand-built one must be allocated so that
 * tsl_workload_free can release it): the struct, `tensors` and `ops` are
 * separate malloc blocks, and every op's `in`, `out` and `alts` arrays are
 * their own malloc blocks (NULL when empty).
 *
 * Indices: workload tensor i is graph tensor id i, workload op i is graph op
 * i, so a plan made on the workload applies to the graph unchanged.
 *
 * Names: the JSON forms name tensors and ops by unique names, and "start" is
 * the plan form's name for the iteration start. A graph whose builders gave
 * two tensors (or two ops) the same name gets the later ones renamed
 * "NAME#2", "NAME#3", ... in index order (deterministic); an op named
 * "start" becomes "start#2".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/graph_internal.h"
#include "tensile/ops.h"
#include "tensile/workload.h"

/* ---- cost model --------------------------------------------------------------- */

/* Latency of one execution of `op` on `dev`, in µs:
 * max(FLOPs / flops, (bytes read + written) / mem_bw) * 1e6 + launch_us.
 * Preconditions (bugs otherwise): dev->flops > 0, dev->mem_bw > 0. */
double tsl_cost_model_us(const tsl_graph *g, const tsl_op *op, const tsl_device_profile *dev) {
    TSL_ASSERT(g && op && dev);
    TSL_ASSERT(dev->flops > 0 && dev->mem_bw > 0);
    double compute_s = tsl_op_flops(g, op) / dev->flops;
    double bytes = (double)tsl_op_bytes_read(g, op) + (double)tsl_op_bytes_written(g, op);
    double memory_s = bytes / dev->mem_bw;
    return (compute_s > memory_s ? compute_s : memory_s) * 1e6 + dev->launch_us;
}

/* ---- freeing ------------------------------------------------------------------- */

void tsl_workload_free(tsl_workload *w) {
    if (!w) return;
    if (w->ops)
        for (int32_t i = 0; i < w->n_ops; i++) {
            free(w->ops[i].in);
            free(w->ops[i].out);
            free(w->ops[i].alts);
        }
    free(w->ops);
    free(w->tensors);
    free(w);
}

/* ---- unique names ------------------------------------------------------------- */

/* A set of names (open addressing, membership only: iteration order never
 * matters, so the result is deterministic). */
typedef struct name_set {
    const char **slot;
    size_t cap;
} name_set;

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* 1 if `s` is in the set. */
static int set_has(const name_set *ns, const char *s) {
    for (size_t j = name_hash(s) & (ns->cap - 1); ns->slot[j]; j = (j + 1) & (ns->cap - 1))
        if (strcmp(ns->slot[j], s) == 0) return 1;
    return 0;
}

/* Adds `s` (not copied: it must outlive the set). The set never fills: its
 * capacity is at least twice the names it will hold. */
static void set_add(name_set *ns, const char *s) {
    size_t j = name_hash(s) & (ns->cap - 1);
    while (ns->slot[j]) j = (j + 1) & (ns->cap - 1);
    ns->slot[j] = s;
}

/* A set able to hold n names (plus one reserved). NULL slots if out of memory. */
static name_set set_new(int32_t n) {
    name_set ns = {NULL, 16};
    while (ns.cap < 2 * ((size_t)n + 2)) ns.cap *= 2;
    ns.slot = calloc(ns.cap, sizeof *ns.slot);
    return ns;
}

/* Writes into dst (TSL_NAME_MAX bytes) `name`, or the first "name#k" (k >= 2,
 * the base shortened to fit) that is not in the set yet; adds dst to the
 * set. */
static void unique_name(name_set *ns, const char *name, char *dst) {
    snprintf(dst, TSL_NAME_MAX, "%s", name);
    for (int k = 2; set_has(ns, dst); k++) {
        char suffix[16];
        int ls = snprintf(suffix, sizeof suffix, "#%d", k);
        int keep = (int)strlen(name);
        if (keep > TSL_NAME_MAX - 1 - ls) keep = TSL_NAME_MAX - 1 - ls;
        snprintf(dst, TSL_NAME_MAX, "%.*s%s", keep, name, suffix);
    }
    set_add(ns, dst);
}

/* ---- from a graph ------------------------------------------------------------- */

/* Checks the inputs of tsl_workload_from_graph; TSL_OK or the error. */
static tsl_status check_args(const tsl_graph *g, const char *job, const tsl_latency_table *table,
                             const tsl_device_profile *dev) {
    if (!g) return tsl_fail(TSL_ERR_INVALID, "workload: graph is NULL");
    if (tsl_graph_status(g) != TSL_OK)
        return tsl_fail(tsl_graph_status(g), "workload: graph '%s' failed to build",
                        tsl_graph_name(g));
    if (!tsl__graph_finalized(g))
        return tsl_fail(TSL_ERR_INVALID, "workload: graph '%s' is not finalized",
                        tsl_graph_name(g));
    const char *name = job ? job : tsl_graph_name(g);
    if (!name[0] || strlen(name) >= sizeof(((tsl_workload *)0)->job))
        return tsl_fail(TSL_ERR_INVALID, "workload: job name '%s' must have 1 to %zu characters",
                        name, sizeof(((tsl_workload *)0)->job) - 1);
    int32_t no = tsl_graph_n_ops(g);
    if (table) {
        if (table->n != no)
            return tsl_fail(TSL_ERR_INVALID,
                            "workload: latency table has %d entries, graph '%s' has %d ops",
                            table->n, tsl_graph_name(g), no);
        if (no > 0 && !table->us)
            return tsl_fail(TSL_ERR_INVALID, "workload: latency table of %d entries has no data",
                            table->n);
        for (int32_t i = 0; i < no; i++)
            if (!isfinite(table->us[i]) || table->us[i] < 0)
                return tsl_fail(TSL_ERR_INVALID,
                                "workload: latency table: op %d ('%s'): %g us is not a finite "
                                "value >= 0",
                                i, tsl_graph_op(g, i)->name, table->us[i]);
        return TSL_OK;
    }
    if (!dev)
        return tsl_fail(TSL_ERR_INVALID,
                        "workload: neither a latency table nor a device profile was given");
    if (!(dev->flops > 0) || !isfinite(dev->flops))
        return tsl_fail(TSL_ERR_INVALID, "workload: profile '%s': flops %g must be > 0",
                        dev->name, dev->flops);
    if (!(dev->mem_bw > 0) || !isfinite(dev->mem_bw))
        return tsl_fail(TSL_ERR_INVALID, "workload: profile '%s': mem_bw %g must be > 0",
                        dev->name, dev->mem_bw);
    if (!(dev->launch_us >= 0) || !isfinite(dev->launch_us))
        return tsl_fail(TSL_ERR_INVALID, "workload: profile '%s': launch_us %g must be >= 0",
                        dev->name, dev->launch_us);
    return TSL_OK;
}

/* Builds the workload of a finalized graph (see sched.h). Tensors: every
 * graph tensor, same index, with its bytes and kind; producer: the op that
 * generates it, -1 for INPUT/LABEL (the data load) and persistent tensors.
 * Ops: graph order, inputs/outputs exactly the graph's, times contiguous
 * from 0 with the table's or the cost model's latencies. Returns
 * TSL_ERR_INVALID (graph not finalized, bad table or profile, job name too
 * long) or TSL_ERR_OOM; *out is set only on success. */
tsl_status tsl_workload_from_graph(const tsl_graph *g, const char *job,
                                   const tsl_latency_table *table,
                                   const tsl_device_profile *dev, tsl_workload **out) {
    tsl_status st = check_args(g, job, table, dev);
    if (st != TSL_OK) return st;
    int32_t nt = tsl_graph_n_tensors(g), no = tsl_graph_n_ops(g);
    tsl_workload *w = calloc(1, sizeof *w);
    name_set tn = set_new(nt), on = set_new(no);
    if (w) {
        w->tensors = calloc((size_t)nt + 1, sizeof *w->tensors);
        w->ops = calloc((size_t)no + 1, sizeof *w->ops);
    }
    if (!w || !w->tensors || !w->ops || !tn.slot || !on.slot) goto oom;
    snprintf(w->job, sizeof w->job, "%s", job ? job : tsl_graph_name(g));
    w->n_tensors = nt;
    w->n_ops = no;

    for (tsl_tid t = 0; t < nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        tsl_wl_tensor *wt = &w->tensors[t];
        unique_name(&tn, tt->name, wt->name);
        wt->bytes = tt->nbytes;
        wt->kind = tt->kind;
        int data = tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_LABEL;
        wt->producer = data || tsl_kind_is_persistent(tt->kind) ? -1 : tsl_graph_producer(g, t);
    }

    set_add(&on, "start"); /* the plan form's name of the iteration start */
    double t_us = 0.0;
    for (int32_t i = 0; i < no; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        tsl_wl_op *wo = &w->ops[i];
        unique_name(&on, op->name, wo->name);
        double lat = table ? table->us[i] : tsl_cost_model_us(g, op, dev);
        wo->start_us = t_us;
        wo->end_us = t_us + lat;
        t_us = wo->end_us;
        wo->workspace = tsl_op_workspace(g, op);
        wo->n_in = op->n_in;
        wo->n_out = op->n_out;
        if (op->n_in) {
            wo->in = malloc(sizeof *wo->in * (size_t)op->n_in);
            if (!wo->in) goto oom;
            for (int j = 0; j < op->n_in; j++) wo->in[j] = op->in[j];
        }
        if (op->n_out) {
            wo->out = malloc(sizeof *wo->out * (size_t)op->n_out);
            if (!wo->out) goto oom;
            for (int j = 0; j < op->n_out; j++) wo->out[j] = op->out[j];
        }
    }
    w->optimizer_begin = tsl__graph_optimizer_begin(g);
    w->period_us = t_us;
    free(tn.slot);
    free(on.slot);
    *out = w;
    return TSL_OK;
oom:
    free(tn.slot);
    free(on.slot);
    tsl_workload_free(w);
    return tsl_fail(TSL_ERR_OOM, "workload: out of host memory for graph '%s' (%d tensors, %d ops)",
                    tsl_graph_name(g), nt, no);
}
