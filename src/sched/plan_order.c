/* plan_order.c - see plan_order.h. */
#include <stdlib.h>
#include "core/assert.h"
#include "sched/plan_order.h"

static int cmp_ev_ix(const void *x, const void *y) {
    const tsl__ev_ix *a = x, *b = y;
    int rc = a->ev.type == TSL_EV_RECOMPUTE && b->ev.type == TSL_EV_RECOMPUTE;
    if (rc && a->ev.precede != b->ev.precede) return a->ev.precede < b->ev.precede ? -1 : 1;
    if (a->ev.trigger != b->ev.trigger) return a->ev.trigger < b->ev.trigger ? -1 : 1;
    if (a->ev.delay_us != b->ev.delay_us) return a->ev.delay_us < b->ev.delay_us ? -1 : 1;
    if (a->ev.type != b->ev.type) return a->ev.type < b->ev.type ? -1 : 1;
    if (a->ev.tensor != b->ev.tensor) return a->ev.tensor < b->ev.tensor ? -1 : 1;
    if (a->ev.precede != b->ev.precede) return a->ev.precede < b->ev.precede ? -1 : 1;
    return (a->ix > b->ix) - (a->ix < b->ix);
}

int32_t tsl__plan_exec_order(const tsl_plan *p, tsl__ev_ix *out) {
    int32_t ne = p->n_events, n_rc = 0;
    for (int32_t e = 0; e < ne; e++) n_rc += p->events[e].type == TSL_EV_RECOMPUTE;
    int32_t a = 0, b = n_rc;
    for (int32_t e = 0; e < ne; e++) {
        int is_rc = p->events[e].type == TSL_EV_RECOMPUTE;
        out[is_rc ? a++ : b++] = (tsl__ev_ix){p->events[e], e};
    }
    if (n_rc > 1) qsort(out, (size_t)n_rc, sizeof *out, cmp_ev_ix);
    if (ne - n_rc > 1) qsort(out + n_rc, (size_t)(ne - n_rc), sizeof *out, cmp_ev_ix);
    return n_rc;
}

void tsl__exec_sequence(const tsl_workload *w, const tsl__ev_ix *rc, int32_t n_rc,
                        tsl__exec_item *items) {
    int32_t k = 0, r = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        for (; r < n_rc && rc[r].ev.precede == i; r++)
            items[k++] = (tsl__exec_item){w->tensors[rc[r].ev.tensor].producer, rc[r].ev.tensor,
                                          rc[r].ix, 0.0, 0.0};
        items[k++] = (tsl__exec_item){i, -1, -1, 0.0, 0.0};
    }
    TSL_ASSERT(r == n_rc);
}

void tsl__exec_times(const tsl_workload *w, const tsl_plan *p, const double *lat,
                     tsl__exec_item *items, int32_t n, double *ends) {
    double shift = 0.0; /* the recomputations' time so far */
    double at = 0.0;    /* with lat: the start of the next op */
    for (int32_t k = 0; k < n; k++) {
        tsl__exec_item *it = &items[k];
        int32_t i = it->tensor >= 0 ? p->events[it->event].precede : it->op;
        double si = lat ? at : w->ops[i].start_us;
        if (it->tensor >= 0) {
            const tsl_wl_op *g = &w->ops[it->op];
            it->ns = si + shift;
            shift += lat ? lat[it->op] : g->end_us - g->start_us;
            it->ne = si + shift;
        } else {
            double ei = lat ? at + lat[i] : w->ops[i].end_us;
            it->ns = si + shift;
            it->ne = ei + shift;
            if (ends) ends[i] = ei + shift;
            if (lat) at = ei;
        }
    }
}
