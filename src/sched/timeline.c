/*
 * timeline.c - the times of one iteration of one job under its plan
 * (docs/SCHEDULING.md, "Time" and "Planned waits"): op start/end with
 * recomputations inserted and planned waits taken, event issue times,
 * release times, and the anchoring of a wanted time as (trigger, delay).
 *
 * Every time the planner books or checks is computed by the same
 * expressions the verifier and the simulator use: issue = e'_trigger +
 * delay, copy end = issue + tsl_copy_us(...). A wanted time is anchored and
 * then re-evaluated through those expressions (tsl__anchor nudges the delay
 * by one ulp at a time until the real issue time lies on the wanted side),
 * so that no constraint is met only before rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

void tsl__timeline_free(tsl__timeline *tl) {
    free(tl->s);
    free(tl->e);
    free(tl->rc_off);
    free(tl->rc_ev);
    free(tl->rc_tensor);
    free(tl->rc_start);
    free(tl->rc_end);
    free(tl->wait);
    memset(tl, 0, sizeof *tl);
}

/* Starts position (op, rc) at the later of `at` and its ready time; records
 * a wait. Returns the start. */
static double start_at(tsl__timeline *tl, const tsl_workload *w, const tsl_plan *p,
                       const tsl_device_profile *dev, const tsl__waits *x, int32_t g, int32_t op,
                       int32_t rc, int first, double at) {
    int32_t ev = -1;
    double s = x->off ? tsl__waits_ready(x, w, p, dev, tl->e, g, op, first, at, &ev) : at;
    if (s != at)
        tl->wait[tl->n_wait++] = (tsl__wait){op, rc, ev, at, s - at};
    return s;
}

/* Builds tl for w under p (see kit.h). The recomputes of one op are
 * ordered by tsl__event_cmp so that the plan's array order does not
 * matter. Returns TSL_OK or TSL_ERR_OOM (tl freed). */
tsl_status tsl__timeline_build(const tsl_workload *w, const tsl_plan *p,
                               const tsl_device_profile *dev, tsl__timeline *tl) {
    memset(tl, 0, sizeof *tl);
    int32_t no = w->n_ops;
    tl->n_ops = no;
    int32_t n_rc = 0;
    for (int32_t k = 0; p && k < p->n_events; k++) n_rc += p->events[k].type == TSL_EV_RECOMPUTE;
    tl->s = malloc(((size_t)no + 1) * sizeof *tl->s);
    tl->e = malloc(((size_t)no + 1) * sizeof *tl->e);
    tl->rc_off = calloc((size_t)no + 2, sizeof *tl->rc_off);
    tl->rc_ev = malloc(((size_t)n_rc + 1) * sizeof *tl->rc_ev);
    tl->rc_start = malloc(((size_t)n_rc + 1) * sizeof *tl->rc_start);
    tl->rc_end = malloc(((size_t)n_rc + 1) * sizeof *tl->rc_end);
    tl->rc_tensor = malloc(((size_t)n_rc + 1) * sizeof *tl->rc_tensor);
    int32_t *fill = malloc(((size_t)no + 1) * sizeof *fill);
    tsl__waits x = {0};
    tsl_status st = TSL_OK;
    if (!tl->s || !tl->e || !tl->rc_off || !tl->rc_ev || !tl->rc_start || !tl->rc_end ||
        !tl->rc_tensor || !fill)
        st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory for a timeline");
    if (st == TSL_OK) st = tsl__waits_build(w, p, &x);
    if (st == TSL_OK) { /* at most one wait per position, where anything can wait */
        TSL_ASSERT(dev || !x.off);
        tl->wait = malloc(((size_t)(x.off ? no + n_rc : 0) + 1) * sizeof *tl->wait);
        if (!tl->wait) {
            tsl__waits_free(&x);
            st = tsl_fail(TSL_ERR_OOM, "planner: out of host memory for a timeline");
        }
    }
    if (st != TSL_OK) {
        free(fill);
        tsl__timeline_free(tl);
        return st;
    }
    tl->n_rc = n_rc;
    /* Bucket the recomputes by the op they precede, then order each bucket
     * by the event order (insertion sort: buckets are tiny). */
    for (int32_t k = 0; p && k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_RECOMPUTE) tl->rc_off[p->events[k].precede + 1]++;
    for (int32_t i = 0; i < no; i++) tl->rc_off[i + 1] += tl->rc_off[i];
    memcpy(fill, tl->rc_off, (size_t)no * sizeof *fill);
    for (int32_t k = 0; p && k < p->n_events; k++)
        if (p->events[k].type == TSL_EV_RECOMPUTE) tl->rc_ev[fill[p->events[k].precede]++] = k;
    free(fill);
    for (int32_t i = 0; i < no; i++)
        for (int32_t a = tl->rc_off[i] + 1; a < tl->rc_off[i + 1]; a++)
            for (int32_t b = a; b > tl->rc_off[i] &&
                 tsl__event_cmp(&p->events[tl->rc_ev[b]], &p->events[tl->rc_ev[b - 1]]) < 0; b--) {
                int32_t y = tl->rc_ev[b];
                tl->rc_ev[b] = tl->rc_ev[b - 1];
                tl->rc_ev[b - 1] = y;
            }
    /* Positions in order. Nominal times [ns, ne] (the recomputations'
     * shift); while nothing has waited a position starts at ns and ends at
     * ne; after a wait it would start when the previous one ends, and ends
     * its nominal duration after its start. */
    double shift = 0.0, prev_end = 0.0;
    int lag = 0;
    for (int32_t i = 0; i < no; i++) {
        for (int32_t r = tl->rc_off[i]; r < tl->rc_off[i + 1]; r++) {
            int32_t t = p->events[tl->rc_ev[r]].tensor;
            int32_t g = w->tensors[t].producer;
            const tsl_wl_op *q = &w->ops[g];
            double ns = w->ops[i].start_us + shift;
            shift += q->end_us - q->start_us;
            double ne = w->ops[i].start_us + shift;
            double s = start_at(tl, w, p, dev, &x, g, i, r, r == tl->rc_off[i],
                                lag ? prev_end : ns);
            lag |= s != ns;
            tl->rc_tensor[r] = t;
            tl->rc_start[r] = s;
            tl->rc_end[r] = prev_end = s == ns ? ne : s + (ne - ns);
        }
        double ns = w->ops[i].start_us + shift, ne = w->ops[i].end_us + shift;
        double s = start_at(tl, w, p, dev, &x, i, i, -1, tl->rc_off[i] == tl->rc_off[i + 1],
                            lag ? prev_end : ns);
        lag |= s != ns;
        tl->s[i] = s;
        tl->e[i] = prev_end = s == ns ? ne : s + (ne - ns);
    }
    for (int32_t k = 0; k < tl->n_wait; k++) tl->stall += tl->wait[k].stall;
    tl->period = no ? tl->e[no - 1] : 0.0;
    tsl__waits_free(&x);
    return TSL_OK;
}

/* Last op with e' <= x, or -1. */
int32_t tsl__op_ending_by(const tsl__timeline *tl, double x) {
    int32_t lo = 0, hi = tl->n_ops; /* first op with e > x */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (tl->e[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* First op with e' >= x, or n_ops. */
int32_t tsl__op_ending_from(const tsl__timeline *tl, double x) {
    int32_t lo = 0, hi = tl->n_ops;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (tl->e[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* x anchored on op j (-1: time 0), whose end is at or before x. */
static double anchor_on(const tsl__timeline *tl, double x, int up, int32_t j, int32_t *trigger,
                        double *delay) {
    double base = tsl__trig_end(tl, j);
    double d = x - base;
    if (d < 0) d = 0;
    double c = base + d;
    if (up)
        while (c < x) {
            d = nextafter(d, INFINITY);
            c = base + d;
        }
    else
        while (c > x && d > 0) {
            d = nextafter(d, 0.0);
            c = base + d;
        }
    if (trigger) *trigger = j;
    if (delay) *delay = d;
    return c;
}

/* See kit.h. Precondition: x >= 0 and finite. */
double tsl__anchor(const tsl__timeline *tl, double x, int up, int32_t *trigger, double *delay) {
    TSL_ASSERT(x >= 0 && isfinite(x));
    return anchor_on(tl, x, up, tsl__op_ending_by(tl, x), trigger, delay);
}

double tsl__canon_tl(void *ctx, double x, int up) {
    tsl__canon_ctx *c = ctx;
    TSL_ASSERT(x >= 0 && isfinite(x));
    int32_t j = tsl__op_ending_by(c->tl, x);
    if (c->capped && j > c->max_trigger) j = c->max_trigger;
    return anchor_on(c->tl, x, up, j, &c->trigger, &c->delay);
}

/* See kit.h. */
double tsl__release_at(double te, const double *so_issue, const double *so_end, int32_t n) {
    double best = -INFINITY, end = te;
    for (int32_t k = 0; k < n; k++)
        if (so_issue[k] <= te && so_issue[k] > best) {
            best = so_issue[k];
            end = so_end[k];
        }
    return end > te ? end : te;
}
