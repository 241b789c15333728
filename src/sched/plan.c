/*
 * plan.c - a plan: the events of one job for one iteration (tensile/plan.h), kept
 * in a growing array and sorted by (trigger, delay, type, tensor, precede).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

/* An empty plan for `job` (NULL: ""), or NULL if out of host memory. */
tsl_plan *tsl_plan_new(const char *job) {
    tsl_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->job, sizeof p->job, "%s", job ? job : "");
    return p;
}

void tsl_plan_free(tsl_plan *p) {
    if (!p) return;
    free(p->events);
    free(p->blocks);
    free(p->algos);
    free(p);
}

/* Appends e (no check of its fields: the verifier judges plans). TSL_OK or
 * TSL_ERR_OOM (the plan is unchanged then). */
tsl_status tsl_plan_add(tsl_plan *p, tsl_event e) {
    TSL_ASSERT(p);
    if (p->n_events == p->cap_events) {
        int32_t cap = p->cap_events ? 2 * p->cap_events : 16;
        tsl_event *ev = realloc(p->events, (size_t)cap * sizeof *ev);
        if (!ev) return tsl_fail(TSL_ERR_OOM, "plan '%s': out of host memory for %d events",
                                 p->job, cap);
        p->events = ev;
        p->cap_events = cap;
    }
    /* field by field over zeroed bytes: the struct's padding is zero in
     * every plan, so plans holding the same events compare equal bytewise */
    tsl_event *d = &p->events[p->n_events++];
    memset(d, 0, sizeof *d);
    d->type = e.type;
    d->tensor = e.tensor;
    d->trigger = e.trigger;
    d->delay_us = e.delay_us;
    d->precede = e.precede;
    return TSL_OK;
}

/* Total order on events: trigger, delay, type, tensor, precede. */
int tsl__event_cmp(const tsl_event *a, const tsl_event *b) {
    if (a->trigger != b->trigger) return a->trigger < b->trigger ? -1 : 1;
    if (a->delay_us != b->delay_us) return a->delay_us < b->delay_us ? -1 : 1;
    if (a->type != b->type) return a->type < b->type ? -1 : 1;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->precede != b->precede) return a->precede < b->precede ? -1 : 1;
    return 0;
}

static int cmp_ev(const void *x, const void *y) { return tsl__event_cmp(x, y); }

/* Sorts the events by tsl__event_cmp (a total order on distinct events, so
 * the result does not depend on the order they were added in). */
void tsl_plan_sort(tsl_plan *p) {
    TSL_ASSERT(p);
    if (p->n_events > 1) qsort(p->events, (size_t)p->n_events, sizeof *p->events, cmp_ev);
}
