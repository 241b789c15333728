/*
 * verify_channels.c - each copy channel carries one transfer at a time,
 * across all the jobs of the device (docs/SCHEDULING.md, "Copies and
 * channels"). A duplex device has a device-to-host channel (swap-outs) and a
 * host-to-device channel (swap-ins); otherwise both directions share one.
 * Every job's iteration starts at time 0 of one axis. Two transfers overlap
 * when each starts more than TSL__VF_EPS_US before the other ends; every
 * overlapping pair is reported once, by the transfer that starts later.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sched/verify_internal.h"

typedef struct copy {
    double s, e;
    int32_t chan, job, ev;
} copy;

static int cmp_copy(const void *a, const void *b) {
    const copy *x = a, *y = b;
    if (x->chan != y->chan) return x->chan < y->chan ? -1 : 1;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    if (x->e != y->e) return x->e < y->e ? -1 : 1;
    if (x->job != y->job) return x->job < y->job ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static const char *chan_name(int32_t c) {
    switch (c) {
    case 0: return "D2H channel";
    case 1: return "H2D channel";
    default: return "shared copy channel";
    }
}

tsl_status tsl__vf_channels(tsl__vf_job *jobs, int n_jobs, tsl__vf_list *l) {
    size_t n = 0;
    for (int jj = 0; jj < n_jobs; jj++) n += (size_t)jobs[jj].p->n_events;
    copy *c = malloc(sizeof *c * (n ? n : 1));
    size_t *act = malloc(sizeof *act * (n ? n : 1));
    if (!c || !act) {
        free(c);
        free(act);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    size_t m = 0;
    for (int jj = 0; jj < n_jobs; jj++) {
        const tsl__vf_job *j = &jobs[jj];
        int duplex = j->dev->duplex != 0;
        for (int32_t k = 0; k < j->p->n_events; k++) {
            tsl_event_type ty = j->p->events[k].type;
            if (!j->ok[k] || (ty != TSL_EV_SWAP_OUT && ty != TSL_EV_SWAP_IN)) continue;
            int32_t ch = !duplex ? 2 : ty == TSL_EV_SWAP_OUT ? 0 : 1;
            c[m++] = (copy){j->issue[k], j->fin[k], ch, jj, k};
        }
    }
    qsort(c, m, sizeof *c, cmp_copy);
    size_t na = 0;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && c[i].chan != c[i - 1].chan) na = 0;
        /* drop the transfers that ended before this one starts */
        size_t keep = 0;
        for (size_t x = 0; x < na; x++)
            if (c[act[x]].e > c[i].s + TSL__VF_EPS_US) act[keep++] = act[x];
        na = keep;
        for (size_t x = 0; x < na; x++) {
            const copy *o = &c[act[x]];
            if (!(c[i].e > o->s + TSL__VF_EPS_US)) continue;
            const tsl__vf_job *ji = &jobs[c[i].job], *jo = &jobs[o->job];
            char li[400], lo[400], other_job[128] = "";
            if (n_jobs > 1) snprintf(other_job, sizeof other_job, "job '%s' ", jo->w->job);
            tsl__vf_add(l, ji->prefix,
                        "%s copies over [%.1f, %.1f) us on the %s, overlapping "
                        "%s%s over [%.1f, %.1f) us",
                        tsl__vf_ev_label(ji, c[i].ev, li, sizeof li), c[i].s, c[i].e,
                        chan_name(c[i].chan), other_job, tsl__vf_ev_label(jo, o->ev, lo, sizeof lo),
                        o->s, o->e);
        }
        act[na++] = i;
    }
    free(c);
    free(act);
    return TSL_OK;
}
