/*
 * dry_run.c - the vanilla executor's memory, played against the allocator
 * ledger alone: same placement order and the same liveness as a session with
 * the reference kernels, so its peak load equals the measured one (tests
 * check it), but nothing is allocated and no kernel runs.
 */
#include <stdlib.h>
#include "core/assert.h"
#include "runtime/liveness.h"
#include "tensile/alloc.h"
#include "tensile/ops.h"
#include "tensile/session.h"

tsl_status tsl_graph_dry_run(const tsl_graph *g, size_t capacity, tsl_mem_report *r) {
    if (tsl_graph_status(g) != TSL_OK) return tsl_graph_status(g);
    int32_t nt = tsl_graph_n_tensors(g), no = tsl_graph_n_ops(g);
    tsl_alloc *a = tsl_alloc_new(capacity, TSL_ALLOC_ALIGN);
    size_t *off = malloc(sizeof *off * (size_t)(nt ? nt : 1));
    uint8_t *live = calloc((size_t)nt + 1, 1);
    tsl_liveness lv = {0};
    tsl_status st = a && off && live ? tsl__liveness_build(g, no, &lv)
                                     : tsl_fail(TSL_ERR_OOM, "dry run: out of host memory");
    r->persistent_bytes = 0;
    r->peak_op = -1;
    for (tsl_tid t = 0; t < nt && st == TSL_OK; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(g, t);
        if (!tsl_kind_is_persistent(tt->kind)) continue;
        st = tsl_alloc_alloc(a, tt->nbytes, &off[t]);
        live[t] = 1;
        r->persistent_bytes += tt->nbytes;
    }
    if (st == TSL_OK) tsl_alloc_reset_peaks(a);
    size_t peak = 0;
    for (tsl_tid t = 0; t < nt && st == TSL_OK; t++) {
        tsl_tensor_kind k = tsl_graph_tensor(g, t)->kind;
        if (k != TSL_KIND_INPUT && k != TSL_KIND_LABEL) continue;
        st = tsl_alloc_alloc(a, tsl_graph_tensor(g, t)->nbytes, &off[t]);
        live[t] = 1;
    }
    for (int32_t i = -1; i < no && st == TSL_OK; i++) {
        if (i >= 0) {
            const tsl_op *op = tsl_graph_op(g, i);
            for (int j = 0; j < op->n_out && st == TSL_OK; j++) {
                tsl_tid t = op->out[j];
                if (live[t]) continue;
                st = tsl_alloc_alloc(a, tsl_graph_tensor(g, t)->nbytes, &off[t]);
                live[t] = 1;
            }
            size_t ws = tsl_op_workspace(g, op), woff = 0;
            if (st == TSL_OK && ws) st = tsl_alloc_alloc(a, ws, &woff);
            tsl_alloc_stats s;
            tsl_alloc_get_stats(a, &s);
            if (s.peak_load > peak) {
                peak = s.peak_load;
                r->peak_op = i;
            }
            if (st == TSL_OK && ws) tsl_alloc_release(a, woff);
        }
        int nf;
        const tsl_tid *fl = tsl__liveness_after(&lv, i, &nf);
        for (int k = 0; k < nf && st == TSL_OK; k++) {
            tsl_alloc_release(a, off[fl[k]]);
            live[fl[k]] = 0;
        }
    }
    if (st == TSL_OK) {
        tsl_alloc_stats s;
        tsl_alloc_get_stats(a, &s);
        r->peak_load = s.peak_load;
        r->peak_footprint = s.peak_footprint;
    }
    tsl__liveness_free(&lv);
    free(live);
    free(off);
    tsl_alloc_destroy(a);
    return st;
}
