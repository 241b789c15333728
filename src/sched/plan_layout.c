/*
 * plan_layout.c - a plan's layout (tensile/plan.h, docs/SCHEDULING.md
 * "Layout"): where in the device arena each block of one iteration sits,
 * and the footprint that implies.
 *
 * The blocks come from the shared memory sweep (peak.c, tsl__sweep_blocks),
 * so they are exactly the residencies the peak analysis counts - tensors
 * from their allocation (generation, data load, swap-in issue,
 * recomputation) to their free (activity analysis, or a release, which
 * waits for a pending swap-out), and workspaces while their kernel runs -
 * in the one order of a time point. Their lifetimes are the sweep's check
 * points, which the offline layout (tensile/layout.h, SmartPool) places.
 *
 * A persistent tensor resident when the iteration starts and again when it
 * ends is one residency across the boundary: its first block (from the
 * start) and its last (to the end) become one wrapping block of the
 * layout, and both of the plan's blocks (residency 0 and the last) get its
 * offset. One never freed is one block over the whole iteration.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/kit.h"
#include "tensile/alloc.h"
#include "tensile/layout.h"

static int cmp_block(const void *x, const void *y) {
    const tsl_plan_block *a = x, *b = y;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->op != b->op) return a->op < b->op ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

void tsl_plan_clear_layout(tsl_plan *p) {
    if (!p) return;
    free(p->blocks);
    p->blocks = NULL;
    p->n_blocks = 0;
    p->predicted_footprint = 0;
    p->layout_align = 0;
}

const tsl_plan_block *tsl_plan_block_find(const tsl_plan *p, int32_t tensor, int32_t op,
                                          int32_t seq) {
    if (!p || p->n_blocks <= 0) return NULL;
    tsl_plan_block key = {tensor, op, seq, 0, 0};
    return bsearch(&key, p->blocks, (size_t)p->n_blocks, sizeof key, cmp_block);
}

/* The layout's input from the recorded blocks: lay[] (one per layout
 * block) and, per recorded block, the layout block it belongs to (a
 * wrapping pair shares one). Names each recorded block (tensor, op, seq)
 * into pb[]. Returns the number of layout blocks. */
static int32_t to_layout(const tsl__blocks *R, tsl_layout_block *lay, int32_t *of,
                         tsl_plan_block *pb, int32_t *seq_t, int32_t *seq_w, int32_t *first,
                         int32_t nt, int32_t no) {
    for (int32_t t = 0; t < nt; t++) {
        seq_t[t] = 0;
        first[t] = -1;
    }
    for (int32_t i = 0; i < no; i++) seq_w[i] = 0;
    int32_t n = 0;
    for (int32_t k = 0; k < R->n; k++) {
        const tsl__block *b = &R->b[k];
        if (b->tensor >= 0) {
            pb[k] = (tsl_plan_block){b->tensor, -1, seq_t[b->tensor]++, b->bytes, 0};
            if (first[b->tensor] < 0) first[b->tensor] = k;
        } else {
            pb[k] = (tsl_plan_block){-1, b->op, seq_w[b->op]++, b->bytes, 0};
        }
        int64_t end = b->end >= 0 ? b->end : R->period;
        if (b->tensor >= 0 && b->end < 0 && first[b->tensor] != k &&
            R->b[first[b->tensor]].at_start) {
            /* resident at the end and at the start: one residency across
             * the boundary, [start, period) + [0, end of the first) */
            int32_t f = first[b->tensor];
            tsl_layout_block *L = &lay[of[f]];
            L->start = b->start;
            L->wrap = 1;
            of[k] = of[f];
            continue;
        }
        if (end == b->start && b->end >= 0) end = b->start + 1; /* never empty */
        lay[n] = (tsl_layout_block){b->bytes, b->start, end, 0};
        of[k] = n++;
    }
    return n;
}

tsl_status tsl__laid_build(const tsl_workload *w, const tsl_plan *p,
                           const tsl_device_profile *dev, tsl__laid *L) {
    memset(L, 0, sizeof *L);
    if (!w || !p) return tsl_fail(TSL_ERR_INVALID, "layout: workload or plan is NULL");
    tsl__activity a;
    tsl__timeline tl;
    tsl_status st = tsl__activity_build(w, &a);
    if (st != TSL_OK) return st;
    st = tsl__timeline_build(w, p, dev, &tl);
    if (st != TSL_OK) {
        tsl__activity_free(&a);
        return st;
    }
    int32_t nt = w->n_tensors, no = w->n_ops;
    uint8_t *absent0 = malloc((size_t)nt + 1), *res = malloc((size_t)nt + 1);
    tsl__effect *eff = NULL;
    int32_t n_eff = 0;
    if (!absent0 || !res) st = tsl_fail(TSL_ERR_OOM, "layout: out of host memory");
    if (st == TSL_OK) st = tsl__effects_build(w, &a, &tl, p, dev, &eff, &n_eff, absent0);
    if (st == TSL_OK) st = tsl__sweep_blocks(w, &a, &tl, eff, n_eff, absent0, res, &L->R);
    int32_t *scratch = NULL;
    if (st == TSL_OK) {
        size_t m = (size_t)L->R.n + 1;
        L->lay = malloc(m * sizeof *L->lay);
        L->name = malloc(m * sizeof *L->name);
        L->of = malloc(m * sizeof *L->of);
        scratch = malloc((2 * (size_t)nt + (size_t)no + 1) * sizeof *scratch);
        if (!L->lay || !L->name || !L->of || !scratch)
            st = tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %d blocks", L->R.n);
    }
    if (st == TSL_OK)
        L->n = to_layout(&L->R, L->lay, L->of, L->name, scratch, scratch + 2 * nt, scratch + nt,
                         nt, no);
    free(scratch);
    free(eff);
    free(res);
    free(absent0);
    tsl__timeline_free(&tl);
    tsl__activity_free(&a);
    if (st != TSL_OK) tsl__laid_free(L);
    return st;
}

void tsl__laid_free(tsl__laid *L) {
    tsl__blocks_free(&L->R);
    free(L->lay);
    free(L->name);
    free(L->of);
    memset(L, 0, sizeof *L);
}

tsl_status tsl_plan_layout(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                           size_t alignment) {
    if (!w || !p) return tsl_fail(TSL_ERR_INVALID, "layout: workload or plan is NULL");
    if (!alignment) alignment = TSL_ALLOC_ALIGN;
    const tsl_workload *use; /* the workload as run: the chosen algorithms' workspaces */
    tsl_workload *owned;
    tsl_status st = tsl__workload_as_run(w, p, &use, &owned);
    if (st != TSL_OK) return st;
    tsl__laid L;
    st = tsl__laid_build(use, p, dev, &L);
    tsl_workload_free(owned);
    if (st != TSL_OK) return st;
    size_t *off = malloc(((size_t)L.n + 1) * sizeof *off);
    size_t extent = 0;
    if (!off) st = tsl_fail(TSL_ERR_OOM, "layout: out of host memory for %d blocks", L.n);
    if (st == TSL_OK) st = tsl_layout_solve(L.lay, L.n, L.R.period, alignment, off, &extent);
    if (st == TSL_OK) {
        tsl_plan_block *pb = L.name; /* taken over by the plan */
        for (int32_t k = 0; k < L.R.n; k++) pb[k].offset = off[L.of[k]];
        if (L.R.n > 1) qsort(pb, (size_t)L.R.n, sizeof *pb, cmp_block);
        tsl_plan_clear_layout(p);
        p->blocks = pb;
        p->n_blocks = L.R.n;
        p->predicted_footprint = extent;
        p->layout_align = alignment;
        L.name = NULL;
    }
    free(off);
    tsl__laid_free(&L);
    return st;
}
