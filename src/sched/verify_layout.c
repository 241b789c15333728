/*
 * verify_layout.c - the verifier's check of a plan's layout
 * (docs/SCHEDULING.md, "Layout"), on the verifier's own stays:
 *
 *   - every stay of a tensor (verify_tensor.c: the i-th stay of t is
 *     residency i) and every workspace of a position (the k-th of its op)
 *     has its block in the plan, of the same size, at an offset that is a
 *     multiple of the layout's alignment; the plan names no other block;
 *   - no two stays or workspaces alive at the same moment of the order of
 *     a time point (tsl__vf_key) overlap in memory;
 *   - predicted_footprint is the highest end of a block.
 *
 * A persistent tensor resident across the boundary has two stays (from
 * time 0, and to the end) that the plan gives one offset; checking them
 * as two stays checks the memory at both ends of the iteration.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/verify_internal.h"

typedef struct span {
    tsl__vf_key a, f;
    size_t lo, hi;     /* [lo, hi): aligned */
    int32_t tensor, op, seq;
} span;

static int cmp_span(const void *x, const void *y) {
    return tsl__vf_key_cmp(&((const span *)x)->a, &((const span *)y)->a);
}

static const char *span_name(const tsl__vf_job *j, const span *s, char *buf, size_t len) {
    if (s->tensor >= 0)
        snprintf(buf, len, "tensor '%s' (residency %d)", j->w->tensors[s->tensor].name, s->seq);
    else
        snprintf(buf, len, "the workspace of op '%s' (run %d)", tsl__vf_op_name(j, s->op), s->seq);
    return buf;
}

/* The span of block (tensor, op, seq) of `bytes`, or 0 with the violation
 * reported when the plan has no such block or it is malformed. */
static int span_of(const tsl__vf_job *j, tsl__vf_list *l, int32_t tensor, int32_t op, int32_t seq,
                   size_t bytes, span *s) {
    const tsl_plan *p = j->p;
    size_t al = p->layout_align;
    *s = (span){.tensor = tensor, .op = op, .seq = seq};
    char nb[300];
    const tsl_plan_block *b = tsl_plan_block_find(p, tensor, op, seq);
    if (!b) {
        tsl__vf_add(l, j->prefix, "layout: no block for %s", span_name(j, s, nb, sizeof nb));
        return 0;
    }
    size_t need = bytes ? (bytes + al - 1) / al * al : al;
    if (b->bytes != bytes || b->offset % al || b->offset > SIZE_MAX - need) {
        tsl__vf_add(l, j->prefix,
                    "layout: the block of %s has %zu bytes at offset %zu; it needs %zu bytes "
                    "at a multiple of %zu",
                    span_name(j, s, nb, sizeof nb), b->bytes, b->offset, bytes, al);
        return 0;
    }
    s->lo = b->offset;
    s->hi = b->offset + need;
    return 1;
}

tsl_status tsl__vf_layout(tsl__vf_job *j, tsl__vf_list *l) {
    const tsl_plan *p = j->p;
    const tsl_workload *w = j->w;
    if (p->n_blocks <= 0) return TSL_OK; /* no layout to check */
    if (!p->layout_align || (p->layout_align & (p->layout_align - 1))) {
        tsl__vf_add(l, j->prefix, "layout: alignment %zu is not a power of two",
                    p->layout_align);
        return TSL_OK;
    }
    size_t n = (size_t)j->n_iv + (size_t)j->n_pos;
    span *s = malloc(sizeof *s * (n ? n : 1));
    int32_t *ws_seq = calloc((size_t)w->n_ops + 1, sizeof *ws_seq);
    span **act = malloc(sizeof *act * (n ? n : 1));
    if (!s || !ws_seq || !act) {
        free(s);
        free(ws_seq);
        free(act);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    size_t m = 0, top = 0;
    int32_t named = 0;
    for (int32_t t = 0; t < w->n_tensors; t++)
        for (int32_t i = j->iv_off[t]; i < j->iv_off[t + 1]; i++) {
            named++;
            if (!span_of(j, l, t, -1, i - j->iv_off[t], w->tensors[t].bytes, &s[m])) continue;
            s[m].a = j->iv[i].a;
            s[m].f = j->iv[i].f;
            m++;
        }
    for (int32_t q = 1; q < j->n_pos; q++) {
        int32_t op = j->pop[q];
        size_t ws = tsl__vf_pos_block(j, q);
        if (!ws) continue;
        named++;
        if (!span_of(j, l, -1, op, ws_seq[op]++, ws, &s[m])) continue;
        s[m].a = (tsl__vf_key){j->ps[q], 3 * (int64_t)q, TSL__VF_ALLOC, INT32_MAX};
        s[m].f = (tsl__vf_key){j->pe[q], 3 * (int64_t)q + 1, TSL__VF_FREE, INT32_MAX};
        m++;
    }
    if (named != p->n_blocks)
        tsl__vf_add(l, j->prefix,
                    "layout: the plan has %d blocks; the iteration allocates %d (tensors' "
                    "residencies and workspaces)",
                    p->n_blocks, named);
    /* sweep in allocation order, keeping the spans still alive */
    qsort(s, m, sizeof *s, cmp_span);
    size_t na = 0;
    int reported = 0;
    for (size_t i = 0; i < m; i++) {
        size_t keep = 0;
        for (size_t k = 0; k < na; k++)
            if (tsl__vf_key_cmp(&act[k]->f, &s[i].a) > 0) act[keep++] = act[k];
        na = keep;
        for (size_t k = 0; k < na; k++) {
            const span *o = act[k];
            if (o->hi <= s[i].lo || s[i].hi <= o->lo) continue;
            if (reported++ < 20) {
                char b1[300], b2[300];
                tsl__vf_add(l, j->prefix,
                            "layout: %s at [%zu, %zu) overlaps %s at [%zu, %zu), alive at "
                            "%.3f us",
                            span_name(j, &s[i], b1, sizeof b1), s[i].lo, s[i].hi,
                            span_name(j, o, b2, sizeof b2), o->lo, o->hi, s[i].a.t);
            }
        }
        act[na++] = &s[i];
    }
    if (reported > 20)
        tsl__vf_add(l, j->prefix, "layout: %d more overlaps", reported - 20);
    for (int32_t k = 0; k < p->n_blocks; k++) {
        const tsl_plan_block *b = &p->blocks[k];
        size_t al = p->layout_align, need = b->bytes ? (b->bytes + al - 1) / al * al : al;
        if (b->offset <= SIZE_MAX - need && b->offset + need > top) top = b->offset + need;
    }
    if (top != p->predicted_footprint)
        tsl__vf_add(l, j->prefix,
                    "layout: predicted_footprint_bytes %zu differs from the layout's extent, "
                    "%zu bytes",
                    p->predicted_footprint, top);
    free(s);
    free(ws_seq);
    free(act);
    return TSL_OK;
}
