/*
 * liveness.h - when the vanilla executor frees each tensor.
 *
 * For a run of ops [0, end), every non-persistent tensor generated in that
 * range (or loaded as data) is freed right after its last reading op inside
 * the range, or right after its generation if nothing in the range reads it.
 * Persistent tensors (params, buffers, optimizer states) are never freed.
 * Lists are indexed by op + 1, so index 0 holds what is freed right after
 * the data load.
 */
#ifndef TSL_RUNTIME_LIVENESS_H
#define TSL_RUNTIME_LIVENESS_H
#include "tensile/graph.h"

typedef struct tsl_liveness {
    int32_t end;        /* ops [0, end) */
    int32_t *start;     /* end + 2 entries: frees after op i are list[start[i+1] .. start[i+2]) */
    tsl_tid *list;
} tsl_liveness;

/* Builds the free lists of a finalized graph for ops [0, end). TSL_ERR_OOM
 * if out of host memory. */
tsl_status tsl__liveness_build(const tsl_graph *g, int32_t end, tsl_liveness *lv);
void tsl__liveness_free(tsl_liveness *lv);

/* The tensors to free right after op `op` (-1: after the data load). */
static inline const tsl_tid *tsl__liveness_after(const tsl_liveness *lv, int32_t op, int *n) {
    *n = lv->start[op + 2] - lv->start[op + 1];
    return lv->list + lv->start[op + 1];
}
#endif
