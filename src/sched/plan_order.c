/* plan_order.c - see plan_order.h. */
#include <math.h>
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

/* A copy landing at most this long after its reader would start is on
 * time (docs/SCHEDULING.md, "Planned waits"). */
#define WAIT_EPS_US 1e-6

/* The swap-ins of a plan by tensor, and the planned ends of the ops so far
 * (their trigger times). */
typedef struct waits {
    int32_t *off, *ev;      /* swap-ins of tensor t: ev[off[t] .. off[t+1]) */
    double *end;            /* per op: its planned end, once it ran */
} waits;

static tsl_status waits_init(const tsl_workload *w, const tsl_plan *p, waits *x) {
    int32_t nt = w->n_tensors, n_si = 0;
    for (int32_t k = 0; k < p->n_events; k++) n_si += p->events[k].type == TSL_EV_SWAP_IN;
    if (n_si == 0) return TSL_OK;
    x->off = calloc((size_t)nt + 2, sizeof *x->off);
    x->ev = malloc((size_t)n_si * sizeof *x->ev);
    x->end = malloc(((size_t)w->n_ops + 1) * sizeof *x->end);
    if (!x->off || !x->ev || !x->end) {
        free(x->off);
        free(x->ev);
        free(x->end);
        x->off = x->ev = NULL;
        x->end = NULL;
        return tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for its times", p->job);
    }
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_SWAP_IN) x->off[p->events[k].tensor + 2]++;
    for (int32_t t = 0; t < nt; t++) x->off[t + 2] += x->off[t + 1];
    for (int32_t k = 0; k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_SWAP_IN) x->ev[x->off[p->events[k].tensor + 1]++] = k;
    return TSL_OK;
}

/* When an item running op g's reads before op i, that would start at
 * `at`, can start: for each tensor it reads, the latest swap-in of it
 * triggered before op i and issued at or before `at` may still be copying;
 * the item waits for the last of those to land (more than WAIT_EPS_US
 * after `at`). */
static double ready(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                    const waits *x, int32_t g, int32_t i, double at) {
    double r = at;
    const tsl_wl_op *o = &w->ops[g];
    for (int j = 0; j < o->n_in; j++) {
        int32_t t = o->in[j];
        double bi = -INFINITY, be = 0.0;
        int found = 0;
        for (int32_t q = x->off[t]; q < x->off[t + 1]; q++) {
            const tsl_event *ev = &p->events[x->ev[q]];
            if (ev->trigger >= i) continue;
            double issue = (ev->trigger < 0 ? 0.0 : x->end[ev->trigger]) + ev->delay_us;
            if (issue > at) continue;
            double end = issue + tsl_copy_us(dev, w->tensors[t].bytes, 1);
            if (!found || issue > bi || (issue == bi && end > be)) {
                bi = issue;
                be = end;
                found = 1;
            }
        }
        if (found && be - at > WAIT_EPS_US && be > r) r = be;
    }
    return r;
}

tsl_status tsl__exec_times(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                           const double *lat, tsl__exec_item *items, int32_t n, double *ends) {
    waits x = {0};
    tsl_status st = p && dev ? waits_init(w, p, &x) : TSL_OK;
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
        double s = x.off ? ready(w, p, dev, &x, it->op, i, would) : would;
        lag |= s != ns;
        it->ns = s;
        it->ne = prev = s == ns ? ne : s + (ne - ns);
        if (it->tensor < 0) {
            if (x.end) x.end[i] = it->ne;
            if (ends) ends[i] = it->ne;
        }
    }
    free(x.off);
    free(x.ev);
    free(x.end);
    return st;
}
