/* plan_order.c - see plan_order.h. */
#include <stdlib.h>
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
