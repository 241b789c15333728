/*
 * workload_algos.c - the algorithms of a workload's ops (tensile/workload.h,
 * docs/SCHEDULING.md "Algorithms"): access to an op's algorithms, setting
 * its alternatives, and filling them from a graph with the ratio model.
 *
 * Algorithm 0 of an op is the op itself (its start/end and workspace), so
 * that a workload without alternatives is exactly a workload of before;
 * the others live in the op's `alts` block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/graph_internal.h"
#include "tensile/workload.h"

int32_t tsl_workload_op_n_algos(const tsl_workload *w, int32_t i) {
    TSL_ASSERT(w && i >= 0 && i < w->n_ops);
    return 1 + w->ops[i].n_alts;
}

tsl_wl_algo tsl_workload_op_algo(const tsl_workload *w, int32_t i, int32_t k) {
    TSL_ASSERT(w && i >= 0 && i < w->n_ops && k >= 0 && k <= w->ops[i].n_alts);
    const tsl_wl_op *o = &w->ops[i];
    if (k > 0) return o->alts[k - 1];
    tsl_wl_algo a;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "default");
    a.us = o->end_us - o->start_us;
    a.workspace = o->workspace;
    return a;
}

/* 1 if name is 1 to TSL_ALGO_NAME_MAX - 1 characters, none a control
 * character. */
static int name_ok(const char *name) {
    size_t n = strnlen(name, TSL_ALGO_NAME_MAX);
    if (n == 0 || n == TSL_ALGO_NAME_MAX) return 0;
    for (size_t c = 0; c < n; c++)
        if ((unsigned char)name[c] < 0x20 || name[c] == 0x7f) return 0;
    return 1;
}

/* Checks alts[0..n) for op i of w; TSL_ERR_INVALID naming the fault. */
static tsl_status check_alts(const tsl_workload *w, int32_t i, const tsl_wl_algo *alts,
                             int32_t n) {
    const char *op = w->ops[i].name;
    if (n < 0 || n >= TSL_ALGO_MAX || (n > 0 && !alts))
        return tsl_fail(TSL_ERR_INVALID,
                        "workload '%s' op %d ('%s'): %d other algorithms (at most %d)", w->job,
                        i, op, n, TSL_ALGO_MAX - 1);
    for (int32_t k = 0; k < n; k++) {
        const tsl_wl_algo *a = &alts[k];
        if (!name_ok(a->name))
            return tsl_fail(TSL_ERR_INVALID,
                            "workload '%s' op %d ('%s'): algorithm %d: a name must have 1 to %d "
                            "printable characters",
                            w->job, i, op, k + 1, TSL_ALGO_NAME_MAX - 1);
        if (strcmp(a->name, "default") == 0)
            return tsl_fail(TSL_ERR_INVALID,
                            "workload '%s' op %d ('%s'): algorithm %d is named 'default', the "
                            "name of algorithm 0",
                            w->job, i, op, k + 1);
        for (int32_t q = 0; q < k; q++)
            if (strcmp(alts[q].name, a->name) == 0)
                return tsl_fail(TSL_ERR_INVALID,
                                "workload '%s' op %d ('%s'): algorithms %d and %d are both "
                                "named '%s'",
                                w->job, i, op, q + 1, k + 1, a->name);
        if (!isfinite(a->us) || a->us < 0)
            return tsl_fail(TSL_ERR_INVALID,
                            "workload '%s' op %d ('%s'): algorithm %d ('%s'): %g us is not a "
                            "finite value >= 0",
                            w->job, i, op, k + 1, a->name, a->us);
    }
    return TSL_OK;
}

tsl_status tsl_workload_set_alts(tsl_workload *w, int32_t i, const tsl_wl_algo *alts,
                                 int32_t n) {
    TSL_ASSERT(w);
    if (i < 0 || i >= w->n_ops)
        return tsl_fail(TSL_ERR_INVALID, "workload '%s': op %d out of range (%d ops)", w->job, i,
                        w->n_ops);
    tsl_status st = check_alts(w, i, alts, n);
    if (st != TSL_OK) return st;
    tsl_wl_algo *copy = NULL;
    if (n > 0) {
        copy = malloc(sizeof *copy * (size_t)n);
        if (!copy)
            return tsl_fail(TSL_ERR_OOM, "workload '%s': out of host memory for algorithms",
                            w->job);
        for (int32_t k = 0; k < n; k++) {
            memset(&copy[k], 0, sizeof copy[k]); /* the name's padding too: copies compare */
            snprintf(copy[k].name, sizeof copy[k].name, "%s", alts[k].name);
            copy[k].us = alts[k].us;
            copy[k].workspace = alts[k].workspace;
        }
    }
    free(w->ops[i].alts);
    w->ops[i].alts = copy;
    w->ops[i].n_alts = n;
    return TSL_OK;
}

/* ---- the ratio model -------------------------------------------------------------- */

int tsl_algo_ratio_slot(tsl_op_type t) {
    switch (t) {
    case TSL_OP_CONV2D: return 0;
    case TSL_OP_CONV2D_BWD_DATA: return 1;
    case TSL_OP_CONV2D_BWD_FILTER: return 2;
    default: return -1;
    }
}

/* The development machine's ratios (docs/RESULTS.md, issue 11:
 * bench_conv_algos on resnet18 and vgg11 at batch 4, 32x32, one thread, a
 * 2-core machine under load): per op type and algorithm, the geometric mean
 * of the two models' medians over their ops of the algorithm's time over
 * the default's (oneDNN), rounded. Rough: the figures of one machine. */
tsl_algo_ratios tsl_algo_ratios_default(void) {
    tsl_algo_ratios r;
    memset(&r, 0, sizeof r);
    static const double conv[TSL_ALGO_RATIO_TYPES][3] = {
        {1.0, 5.0, 60.0},  /* conv2d:            default, im2col, direct */
        {1.0, 5.0, 60.0},  /* conv2d_bwd_data */
        {1.0, 18.0, 40.0}, /* conv2d_bwd_filter */
    };
    for (int t = 0; t < TSL_ALGO_RATIO_TYPES; t++)
        for (int k = 0; k < 3; k++) r.ratio[t][k] = conv[t][k];
    return r;
}

/* Checks that w was made from g (same number of ops, same op names but for
 * the "#k" renaming of duplicates: only the count and arity are checked)
 * and that every ratio the graph's menus use is finite and > 0. */
static tsl_status check_add(const tsl_workload *w, const tsl_graph *g,
                            const tsl_algo_ratios *r) {
    if (!tsl__graph_finalized(g))
        return tsl_fail(TSL_ERR_INVALID, "add algorithms: graph '%s' is not finalized",
                        tsl_graph_name(g));
    if (w->n_ops != tsl_graph_n_ops(g))
        return tsl_fail(TSL_ERR_INVALID,
                        "add algorithms: workload '%s' has %d ops, graph '%s' has %d", w->job,
                        w->n_ops, tsl_graph_name(g), tsl_graph_n_ops(g));
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        if (op->n_in != w->ops[i].n_in || op->n_out != w->ops[i].n_out)
            return tsl_fail(TSL_ERR_INVALID,
                            "add algorithms: workload '%s' op %d ('%s') is not graph '%s''s "
                            "op %d ('%s')",
                            w->job, i, w->ops[i].name, tsl_graph_name(g), i, op->name);
    }
    for (int t = 0; t < TSL_ALGO_RATIO_TYPES; t++)
        for (int k = 1; k < 3; k++)
            if (!(r->ratio[t][k] > 0) || !isfinite(r->ratio[t][k]))
                return tsl_fail(TSL_ERR_INVALID,
                                "add algorithms: ratio [%d][%d] = %g must be finite and > 0", t,
                                k, r->ratio[t][k]);
    return TSL_OK;
}

tsl_status tsl_workload_add_algos(tsl_workload *w, const tsl_graph *g, const double *measured,
                                  const tsl_algo_ratios *ratios) {
    if (!w || !g) return tsl_fail(TSL_ERR_INVALID, "add algorithms: the workload or graph is NULL");
    tsl_algo_ratios def = tsl_algo_ratios_default();
    const tsl_algo_ratios *r = ratios ? ratios : &def;
    tsl_status st = check_add(w, g, r);
    if (st != TSL_OK) return st;
    /* built aside, installed at the end: w unchanged on failure */
    tsl_wl_algo(*alts)[TSL_ALGO_MAX] = calloc((size_t)w->n_ops + 1, sizeof *alts);
    if (!alts) return tsl_fail(TSL_ERR_OOM, "add algorithms: out of host memory");
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        int n = tsl_op_n_algos(op), slot = tsl_algo_ratio_slot(op->type);
        double base = w->ops[i].end_us - w->ops[i].start_us;
        for (int k = 1; k < n; k++) {
            tsl_wl_algo *a = &alts[i][k - 1];
            snprintf(a->name, sizeof a->name, "%s", tsl_op_algo_name(op, k));
            a->workspace = tsl_op_algo_workspace(g, op, k);
            double m = measured ? measured[(size_t)i * TSL_ALGO_MAX + (size_t)k] : -1.0;
            TSL_ASSERT(slot >= 0);
            a->us = isfinite(m) && m >= 0 ? m : base * r->ratio[slot][k];
        }
    }
    for (int32_t i = 0; i < w->n_ops && st == TSL_OK; i++) {
        int n = tsl_op_n_algos(tsl_graph_op(g, i));
        if (n > 1) st = tsl_workload_set_alts(w, i, alts[i], n - 1);
    }
    free(alts);
    return st;
}
