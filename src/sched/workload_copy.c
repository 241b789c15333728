/*
 * workload_copy.c - a deep copy of a workload (its ops' other algorithms
 * too), optionally with new op latencies (tensile/workload.h): how measured
 * or predicted latencies become the workload a policy replans from.
 */
#include <stdlib.h>
#include <string.h>

#include "tensile/workload.h"

tsl_workload *tsl_workload_copy(const tsl_workload *w, const double *us) {
    tsl_workload *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *w;
    c->tensors = malloc(sizeof *c->tensors * ((size_t)w->n_tensors + 1));
    c->ops = calloc((size_t)w->n_ops + 1, sizeof *c->ops);
    if (!c->tensors || !c->ops) {
        free(c->tensors);
        free(c->ops);
        free(c);
        return NULL;
    }
    if (w->n_tensors) memcpy(c->tensors, w->tensors, sizeof *c->tensors * (size_t)w->n_tensors);
    double at = 0.0;
    int ok = 1;
    for (int32_t i = 0; i < w->n_ops; i++) {
        tsl_wl_op *o = &c->ops[i];
        *o = w->ops[i];
        o->in = o->n_in ? malloc(sizeof *o->in * (size_t)o->n_in) : NULL;
        o->out = o->n_out ? malloc(sizeof *o->out * (size_t)o->n_out) : NULL;
        o->alts = o->n_alts > 0 ? malloc(sizeof *o->alts * (size_t)o->n_alts) : NULL;
        if ((o->n_in && !o->in) || (o->n_out && !o->out) || (o->n_alts > 0 && !o->alts)) ok = 0;
        if (o->in) memcpy(o->in, w->ops[i].in, sizeof *o->in * (size_t)o->n_in);
        if (o->out) memcpy(o->out, w->ops[i].out, sizeof *o->out * (size_t)o->n_out);
        if (o->alts) memcpy(o->alts, w->ops[i].alts, sizeof *o->alts * (size_t)o->n_alts);
        if (o->n_alts < 0) o->n_alts = 0;
        if (us) {
            o->start_us = at;
            o->end_us = at = at + us[i];
        }
    }
    if (us) c->period_us = at;
    if (!ok) {
        tsl_workload_free(c);
        return NULL;
    }
    return c;
}
