/*
 * layers.c - the layers of a workload, for the policies of layer-wise
 * papers (vDNN): which op is a forward layer, which backward ops belong to
 * which layer, and which layers are convolutions - from the workload
 * alone, which keeps its ops' names but not their types.
 *
 * Tensile's graphs name what autodiff appends (src/ops/): the backward ops
 * of the forward op F are "F.<suffix>" (conv: F.bwd_data, F.bwd_filter,
 * F.db_sum, F.db; linear: F.dx, F.dw, F.db; batch norm, pooling: F.bwd;
 * ReLU, reshape: F.dx; the loss: F.dlogits), appended together in reverse
 * order of the forward ops, each group followed by the sums of the
 * gradients of tensors read several times, "<tensor>.grad_acc[k]". So:
 *  - the forward pass is the ops before the first op that writes a
 *    GRADIENT tensor (`bwd_begin`); each forward op is a layer;
 *  - a backward op (from bwd_begin up to the optimizer phase) named
 *    "F.<suffix>", F a forward op's name and the suffix without a dot and
 *    not starting with "grad_acc", belongs to F's layer; a "...grad_acc..."
 *    op belongs to the layer of the op before it (its group), passing over
 *    updates; any other backward op is a layer of its own, with no forward
 *    op (workloads not built from Tensile's graphs: every backward op is
 *    then its own layer);
 *  - an optimizer update inside the backward pass (the graph's default,
 *    tsl_optimizer_cfg.step: an op writing a PARAM tensor) is, as in the
 *    optimizer phase, a segment of its own with no layer;
 *  - a forward op F is a convolution if an op named "F.bwd_filter" or
 *    "F.bwd_data" exists (CONV2D_BWD_FILTER, CONV2D_BWD_DATA; a transposed
 *    convolution's backward has the same names).
 * Consecutive ops of one layer form a segment; every forward op and every
 * optimizer op is a segment of its own. Renamed duplicates ("NAME#2") keep
 * their own names and match nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/kit.h"

void tsl__layers_free(tsl__layers *L) {
    free(L->layer);
    free(L->seg);
    free(L->seg_start);
    free(L->bwd_start);
    free(L->conv);
    memset(L, 0, sizeof *L);
}

/* Forward op names sorted, for lookups by name. */
typedef struct name_idx {
    const char *name;
    int32_t op;
} name_idx;

static int cmp_name(const void *x, const void *y) {
    const name_idx *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->op > b->op) - (a->op < b->op);
}

/* The forward op named exactly the first `len` characters of s, or -1. */
static int32_t find_fwd(const name_idx *v, int32_t n, const char *s, size_t len) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strncmp(v[mid].name, s, len);
        if (c == 0 && v[mid].name[len] != 0) c = 1; /* longer than the prefix */
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && strncmp(v[lo].name, s, len) == 0 && v[lo].name[len] == 0 ? v[lo].op : -1;
}

/* The forward op whose layer backward op `name` belongs to: -1 for none
 * (a layer of its own), -2 for the layer of the op before it (a gradient
 * sum). */
static int32_t owner(const name_idx *v, int32_t n, const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return -1;
    if (strncmp(dot + 1, "grad_acc", 8) == 0) return -2;
    return find_fwd(v, n, name, (size_t)(dot - name));
}

/* 1 if op i of w writes a PARAM tensor (an optimizer update). */
static int writes_param(const tsl_workload *w, int32_t i) {
    for (int k = 0; k < w->ops[i].n_out; k++)
        if (w->tensors[w->ops[i].out[k]].kind == TSL_KIND_PARAM) return 1;
    return 0;
}

tsl_status tsl__layers_build(const tsl_workload *w, tsl__layers *L) {
    memset(L, 0, sizeof *L);
    int32_t no = w->n_ops;
    L->n_ops = no;
    L->bwd_begin = no;
    for (int32_t i = 0; i < no && L->bwd_begin == no; i++)
        for (int k = 0; k < w->ops[i].n_out; k++)
            if (w->tensors[w->ops[i].out[k]].kind == TSL_KIND_GRADIENT) L->bwd_begin = i;
    int32_t B = L->bwd_begin;
    L->bwd_end = w->optimizer_begin > B && w->optimizer_begin <= no ? w->optimizer_begin : no;
    L->layer = malloc(((size_t)no + 1) * sizeof *L->layer);
    L->seg = malloc(((size_t)no + 1) * sizeof *L->seg);
    L->seg_start = malloc(((size_t)no + 1) * sizeof *L->seg_start);
    L->bwd_start = malloc(((size_t)B + 1) * sizeof *L->bwd_start);
    L->conv = calloc((size_t)B + 1, 1);
    name_idx *v = malloc(((size_t)B + 1) * sizeof *v);
    if (!L->layer || !L->seg || !L->seg_start || !L->bwd_start || !L->conv || !v) {
        free(v);
        tsl__layers_free(L);
        return tsl_fail(TSL_ERR_OOM, "layers: out of host memory for %d ops", no);
    }
    for (int32_t i = 0; i < B; i++) v[i] = (name_idx){w->ops[i].name, i};
    qsort(v, (size_t)B, sizeof *v, cmp_name);
    for (int32_t f = 0; f < B; f++) L->bwd_start[f] = -1;
    int32_t ns = 0, group = -1; /* the layer of the last backward op not an update */
    int prev_update = 0;        /* op i - 1 is an update in the backward */
    for (int32_t i = 0; i < no; i++) {
        int32_t lay = -1;
        int cont = 0, update = i >= B && i < L->bwd_end && writes_param(w, i);
        if (i < B) lay = i;
        else if (i < L->bwd_end && !update) { /* (an update: no layer, a segment of its own) */
            lay = owner(v, B, w->ops[i].name);
            if (lay == -2) { /* a gradient sum: the group of the op before */
                lay = i > B ? group : -1;
                cont = i > B && lay == L->layer[i - 1] && !prev_update;
            } else
                cont = i > B && lay >= 0 && lay == L->layer[i - 1];
            if (lay >= 0 && L->bwd_start[lay] < 0) L->bwd_start[lay] = i;
            /* a convolution's backward ops */
            const char *dot = strrchr(w->ops[i].name, '.');
            if (lay >= 0 && dot && (!strcmp(dot, ".bwd_filter") || !strcmp(dot, ".bwd_data")))
                L->conv[lay] = 1;
        }
        L->layer[i] = lay;
        if (i >= B && i < L->bwd_end && !update) group = lay;
        prev_update = update;
        if (!cont) L->seg_start[ns++] = i;
        L->seg[i] = ns - 1;
    }
    L->n_seg = ns;
    free(v);
    return TSL_OK;
}
