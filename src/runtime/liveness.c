/* liveness.c - see liveness.h. */
#include <stdlib.h>
#include "core/assert.h"
#include "runtime/liveness.h"

/* The op after which tensor t dies within [0, end), or INT32_MIN if it is
 * persistent or never generated in the range. */
static int32_t death(const tsl_graph *g, tsl_tid t, int32_t end) {
    const tsl_tensor *tt = tsl_graph_tensor(g, t);
    if (tsl_kind_is_persistent(tt->kind)) return INT32_MIN;
    int n;
    const tsl_access *a = tsl_graph_accesses(g, t, &n);
    if (n == 0 || a[0].type != TSL_TGA || a[0].op >= end) return INT32_MIN;
    int32_t last = a[0].op;
    for (int i = 1; i < n && a[i].op < end; i++)
        if (a[i].type == TSL_TUA) last = a[i].op;
    return last;
}

tsl_status tsl__liveness_build(const tsl_graph *g, int32_t end, tsl_liveness *lv) {
    int32_t nt = tsl_graph_n_tensors(g);
    TSL_ASSERT(end >= 0 && end <= tsl_graph_n_ops(g));
    lv->end = end;
    lv->start = calloc((size_t)end + 3, sizeof *lv->start);
    lv->list = malloc(sizeof *lv->list * (size_t)(nt ? nt : 1));
    if (!lv->start || !lv->list) {
        tsl__liveness_free(lv);
        return tsl_fail(TSL_ERR_OOM, "liveness: out of host memory");
    }
    for (tsl_tid t = 0; t < nt; t++) {
        int32_t d = death(g, t, end);
        if (d != INT32_MIN) lv->start[d + 2]++;
    }
    for (int32_t i = 1; i < end + 3; i++) lv->start[i] += lv->start[i - 1];
    int32_t *fill = malloc(sizeof *fill * ((size_t)end + 2));
    if (!fill) {
        tsl__liveness_free(lv);
        return tsl_fail(TSL_ERR_OOM, "liveness: out of host memory");
    }
    for (int32_t i = 0; i < end + 2; i++) fill[i] = lv->start[i];
    for (tsl_tid t = 0; t < nt; t++) { /* id order within a list: deterministic */
        int32_t d = death(g, t, end);
        if (d != INT32_MIN) lv->list[fill[d + 1]++] = t;
    }
    free(fill);
    return TSL_OK;
}

void tsl__liveness_free(tsl_liveness *lv) {
    free(lv->start);
    free(lv->list);
    lv->start = NULL;
    lv->list = NULL;
}
