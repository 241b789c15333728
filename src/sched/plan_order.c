/* plan_order.c - see plan_order.h. */
#include <math.h>
#include <stdlib.h>
#include "core/assert.h"
#include "sched/plan_order.h"
#include "sched/waits.h"

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

static int precedes_op(const tsl_event *e) { return e->type == TSL_EV_RELEASE && e->precede >= 0; }

int tsl__preceding_releases(const tsl_plan *p, int32_t n_ops, int32_t **start, int32_t **list) {
    int32_t n = 0, ne = p ? p->n_events : 0;
    *start = *list = NULL;
    for (int32_t e = 0; e < ne; e++) n += precedes_op(&p->events[e]);
    if (n == 0) return 1;
    int32_t *st = calloc((size_t)n_ops + 2, sizeof *st), *li = malloc((size_t)n * sizeof *li);
    if (!st || !li) {
        free(st);
        free(li);
        return 0;
    }
    for (int32_t e = 0; e < ne; e++)
        if (precedes_op(&p->events[e])) st[p->events[e].precede + 2]++;
    for (int32_t i = 0; i < n_ops; i++) st[i + 2] += st[i + 1];
    for (int32_t e = 0; e < ne; e++)
        if (precedes_op(&p->events[e])) li[st[p->events[e].precede + 1]++] = e;
    *start = st;
    *list = li;
    return 1;
}

tsl_status tsl__exec_times(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                           const double *lat, tsl__exec_item *items, int32_t n, double *ends) {
    tsl__waits x = {0};
    tsl_status st = p && dev ? tsl__waits_build(w, p, &x) : TSL_OK;
    double *end = x.off ? malloc(((size_t)w->n_ops + 1) * sizeof *end) : NULL;
    if (x.off && !end) {
        tsl__waits_free(&x);
        st = tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for its times", p->job);
    }
    double shift = 0.0; /* the recomputations' time so far */
    double at = 0.0;    /* with lat: the nominal start of the next op */
    double prev = 0.0;  /* the planned end of the previous item */
    int lag = 0;        /* an item waited: the next ones start when the previous ends */
    for (int32_t k = 0; k < n; k++) {
        tsl__exec_item *it = &items[k];
        int32_t i = it->tensor >= 0 ? p->events[it->event].precede : it->op;
        double si = lat ? at : w->ops[i].start_us, ns, ne;
        if (it->tensor >= 0) {
            const tsl_wl_op *g = &w->ops[it->op];
            ns = si + shift;
            shift += lat ? lat[it->op] : g->end_us - g->start_us;
            ne = si + shift;
        } else {
            double ei = lat ? at + lat[i] : w->ops[i].end_us;
            ns = si + shift;
            ne = ei + shift;
            if (lat) at = ei;
        }
        double would = lag ? prev : ns;
        int first = k == 0 || tsl__exec_item_group(p, &items[k - 1]) != i;
        int32_t ev;
        double s = x.off ? tsl__waits_ready(&x, w, p, dev, end, it->op, i, first, would, &ev)
                         : would;
        lag |= s != ns;
        it->ns = s;
        it->ne = prev = s == ns ? ne : s + (ne - ns);
        if (it->tensor < 0) {
            if (end) end[i] = it->ne;
            if (ends) ends[i] = it->ne;
        }
    }
    tsl__waits_free(&x);
    free(end);
    return st;
}
