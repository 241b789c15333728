/*
 * prefetch.c - swap-ins as early as the layout and the channels allow
 * (kit.h: tsl__prefetch): a refinement of plans already laid out.
 *
 * A planner places each swap-in as late as it can (TENSILE: its copy ends
 * when its op starts) so that the tensor is absent as long as possible: on
 * the peak load that is what saves memory. Once the plan has a layout, the
 * device must hold the layout's extent whatever the load, and a swap-in's
 * block has its own place in it: the place is free from the moment the
 * last block that shares any of its bytes is freed. Issued from then on (no
 * earlier than its tensor's previous residency ends, and only where its
 * channel is idle), the swap-in holds nothing another block needs: the
 * footprint is the same byte for byte, the copy ends earlier, and an op
 * running faster than its estimate - or a copy slower than the profile's -
 * no longer waits for it. The load between the new and the old issue is
 * higher (the peak load may rise; the footprint cannot).
 *
 * Per job, in order of the swap-ins' issue times: the block of the
 * swap-in (the sweep's record allocated at its issue), its layout block's
 * bytes, the latest check point at which a block sharing some of those
 * bytes, or the tensor's own previous residency, ends before it (f); the
 * earliest start >= the time of check point f on the copy's channel (all
 * the jobs' copies booked) that ends no later than the copy did, anchored
 * as (trigger, delay). The job's plan is then laid out again by name with
 * the same offsets and checked (tsl_layout_check); a job whose check fails
 * (never expected) gets its plan back as it was. A job with planned waits
 * is left alone: moving a copy there would move its ops; so are all jobs
 * when two copies on one channel touch within rounding (a booking must be
 * free). Deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

static size_t aligned(size_t n, size_t al) { return n ? (n + al - 1) / al * al : al; }

/* One copy of one job: its event, direction and booking. */
typedef struct copy {
    int32_t event;
    int to_device;
    double issue, dur, end; /* end = issue + dur, as every booking is computed */
} copy;

/* The copies of plan p (timeline tl) into cp (room for p->n_events); returns
 * how many. */
static int32_t copies_of(const tsl_workload *w, const tsl_plan *p, const tsl__timeline *tl,
                         const tsl_device_profile *dev, copy *cp) {
    int32_t n = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (e->type != TSL_EV_SWAP_OUT && e->type != TSL_EV_SWAP_IN) continue;
        int in = e->type == TSL_EV_SWAP_IN;
        double x = tsl__issue(tl, e->trigger, e->delay_us);
        double d = tsl_copy_us(dev, w->tensors[e->tensor].bytes, in);
        cp[n++] = (copy){k, in, x, d, x + d};
    }
    return n;
}

/* The channel of a direction (shared when the profile is not duplex). */
static tsl__chan *chan_of(tsl__chan *ch, const tsl_device_profile *dev, int to_device) {
    return to_device && dev->duplex ? &ch[1] : &ch[0];
}

/* Offsets of L's layout blocks from plan p's blocks by name into off[0..L->n);
 * 0 if p lacks a name of L. */
static int offsets_by_name(const tsl__laid *L, const tsl_plan *p, size_t *off) {
    for (int32_t k = 0; k < L->R.n; k++) {
        const tsl_plan_block *b =
            tsl_plan_block_find(p, L->name[k].tensor, L->name[k].op, L->name[k].seq);
        if (!b) return 0;
        off[L->of[k]] = b->offset;
    }
    return 1;
}

/* 1 if plan p's layout is valid for p's events as they are now. */
static int layout_holds(const tsl_workload *w, const tsl_plan *p, const tsl_device_profile *dev,
                        tsl_status *st) {
    tsl__laid L;
    *st = tsl__laid_build(w, p, dev, &L);
    if (*st != TSL_OK) return 0;
    size_t *off = malloc(((size_t)L.n + 1) * sizeof *off);
    int ok = 0;
    if (!off) *st = tsl_fail(TSL_ERR_OOM, "prefetch: out of host memory");
    else ok = offsets_by_name(&L, p, off) &&
              tsl_layout_check(L.lay, L.n, L.R.period, p->layout_align, off);
    free(off);
    tsl__laid_free(&L);
    if (!ok) tsl_clear_error(); /* a refusal here only means: keep the plan as it was */
    return ok;
}

/* The latest check point before `start` at which a layout block sharing
 * bytes [lo, hi) with block `self` ends (0 if none). */
static int64_t free_from(const tsl__laid *L, const size_t *off, size_t al, int32_t self,
                         size_t lo, size_t hi, int64_t start) {
    int64_t f = 0;
    for (int32_t i = 0; i < L->n; i++) {
        if (i == self) continue;
        const tsl_layout_block *x = &L->lay[i];
        size_t xl = off[i], xh = xl + aligned(x->bytes, al);
        if (xh <= lo || hi <= xl) continue;
        /* its pieces: [start, end) or, wrapping, [start, period) and [0, end) */
        int64_t ends[2] = {x->wrap ? L->R.period : x->end, x->wrap ? x->end : -1};
        for (int q = 0; q < 2; q++)
            if (ends[q] >= 0 && ends[q] <= start && ends[q] > f) f = ends[q];
    }
    return f;
}

/* Moves job j's swap-ins earlier (see the head of the file); ch: every job's
 * copies booked. Returns TSL_OK (its plan moved and checked, or left as it
 * was) or TSL_ERR_OOM. *moved counts the swap-ins moved. */
static tsl_status prefetch_job(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                               tsl__chan *ch, int *moved) {
    if (p->n_blocks == 0) return TSL_OK; /* no layout: nothing tells where a place is free */
    tsl__timeline tl;
    tsl_status st = tsl__timeline_build(w, p, dev, &tl);
    if (st != TSL_OK) return st;
    tsl__laid L;
    if (tl.n_wait > 0 || (st = tsl__laid_build(w, p, dev, &L)) != TSL_OK) {
        tsl__timeline_free(&tl);
        return st;
    }
    size_t al = p->layout_align ? p->layout_align : 1;
    size_t *off = malloc(((size_t)L.n + 1) * sizeof *off);
    copy *cp = malloc(((size_t)p->n_events + 1) * sizeof *cp);
    tsl_event *saved = malloc(((size_t)p->n_events + 1) * sizeof *saved);
    int32_t *prev = malloc(((size_t)w->n_tensors + 1) * sizeof *prev); /* last record of t */
    double *moved_to = malloc(((size_t)p->n_events + 1) * sizeof *moved_to);
    if (!off || !cp || !saved || !prev || !moved_to)
        st = tsl_fail(TSL_ERR_OOM, "prefetch: out of host memory");
    int named = st == TSL_OK && offsets_by_name(&L, p, off);
    int32_t n_cp = 0, n_moved = 0;
    if (named) {
        if (p->n_events > 0) /* an empty plan may have no event array */
            memcpy(saved, p->events, (size_t)p->n_events * sizeof *saved);
        n_cp = copies_of(w, p, &tl, dev, cp);
        for (int32_t t = 0; t < w->n_tensors; t++) prev[t] = -1;
        for (int32_t k = 0; k < p->n_events; k++) moved_to[k] = -1;
        /* records in order of allocation: each swap-in's is the record of
         * its tensor allocated at its issue time */
        for (int32_t k = 0; k < L.R.n && st == TSL_OK; k++) {
            const tsl__block *b = &L.R.b[k];
            if (b->tensor < 0) continue;
            int32_t t = b->tensor, pr = prev[t];
            prev[t] = k;
            if (b->at_start) continue;
            double at = L.R.time[b->start];
            int32_t c = -1;
            for (int32_t q = 0; q < n_cp && c < 0; q++)
                if (cp[q].to_device && p->events[cp[q].event].tensor == t && cp[q].issue == at)
                    c = q;
            if (c < 0) continue; /* generated or recomputed, not swapped in */
            int32_t lb = L.of[k];
            size_t lo = off[lb], hi = lo + aligned(L.lay[lb].bytes, al);
            int64_t f = free_from(&L, off, al, lb, lo, hi, b->start);
            if (pr >= 0 && L.R.b[pr].end > f) f = L.R.b[pr].end; /* after its last residency */
            double earliest = L.R.time[f];
            if (!(earliest < cp[c].issue)) continue;
            tsl__chan *q = chan_of(ch, dev, 1);
            tsl__chan_unbook(q, cp[c].issue, cp[c].end);
            double d = cp[c].dur;
            tsl__canon_ctx cx = {.tl = &tl};
            double x = tsl__chan_earliest(q, earliest, d, cp[c].end, tsl__canon_tl, &cx);
            if (x < 0 || !(x < cp[c].issue)) {
                st = tsl__chan_book(q, cp[c].issue, cp[c].end);
                continue;
            }
            st = tsl__chan_book(q, x, x + d);
            if (st != TSL_OK) break;
            tsl_event *e = &p->events[cp[c].event];
            e->trigger = cx.trigger;
            e->delay_us = cx.delay;
            moved_to[cp[c].event] = x;
            n_moved++;
        }
    }
    if (st == TSL_OK && n_moved > 0) tsl_plan_sort(p);
    if (st == TSL_OK && n_moved > 0 && !layout_holds(w, p, dev, &st) && st == TSL_OK) {
        /* never expected: the plan as it was, its copies booked as they were */
        for (int32_t q = 0; q < n_cp && st == TSL_OK; q++) {
            double x = moved_to[cp[q].event];
            if (x < 0) continue;
            tsl__chan *c = chan_of(ch, dev, 1);
            tsl__chan_unbook(c, x, x + cp[q].dur);
            st = tsl__chan_book(c, cp[q].issue, cp[q].end);
        }
        memcpy(p->events, saved, (size_t)p->n_events * sizeof *saved);
        n_moved = 0;
    }
    *moved += n_moved;
    free(off);
    free(cp);
    free(saved);
    free(prev);
    free(moved_to);
    tsl__laid_free(&L);
    tsl__timeline_free(&tl);
    return st;
}

tsl_status tsl__prefetch(const tsl_plan_request *rq, tsl_plan **plans, int *moved) {
    int n_jobs = rq->n_jobs;
    tsl_workload *const *w = rq->w;
    /* the shared channels, or each job's own (channel shares) */
    int n_sets = rq->shared_channels ? 1 : n_jobs;
    tsl__chan *sets = calloc(2 * (size_t)n_sets, sizeof *sets);
    if (!sets) return tsl_fail(TSL_ERR_OOM, "prefetch: out of host memory");
    tsl_status st = TSL_OK;
    int m = 0;
    /* every job's copies booked: a moved swap-in may only take idle time
     * (copies that touch within rounding: nothing is moved) */
    int clash = 0;
    for (int j = 0; j < n_jobs && st == TSL_OK && !clash; j++) {
        tsl__timeline tl;
        copy *cp = malloc(((size_t)plans[j]->n_events + 1) * sizeof *cp);
        if (!cp) st = tsl_fail(TSL_ERR_OOM, "prefetch: out of host memory");
        const tsl_device_profile *dev = rq->job_dev[j];
        tsl__chan *ch = &sets[rq->shared_channels ? 0 : 2 * j];
        if (st == TSL_OK) st = tsl__timeline_build(w[j], plans[j], dev, &tl);
        if (st == TSL_OK) {
            int32_t n = copies_of(w[j], plans[j], &tl, dev, cp);
            for (int32_t q = 0; q < n && st == TSL_OK && !clash; q++) {
                tsl__chan *c = chan_of(ch, dev, cp[q].to_device);
                if (!(clash = !tsl__chan_is_free(c, cp[q].issue, cp[q].end)))
                    st = tsl__chan_book(c, cp[q].issue, cp[q].end);
            }
            tsl__timeline_free(&tl);
        }
        free(cp);
    }
    for (int j = 0; j < n_jobs && st == TSL_OK && !clash; j++)
        st = prefetch_job(w[j], plans[j], rq->job_dev[j], &sets[rq->shared_channels ? 0 : 2 * j],
                          &m);
    for (int k = 0; k < 2 * n_sets; k++) tsl__chan_free(&sets[k]);
    free(sets);
    if (moved) *moved = m;
    return st;
}
