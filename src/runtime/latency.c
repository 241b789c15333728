/*
 * latency.c - what plan updating (paper IV-E) is made from: per-op latency
 * estimates and their change rate against the current plan. The runtime
 * measures; it never replans (the job's owner does: src/job/replan.c).
 *
 * Each op's latency sample s (µs: the kernel's time between its events in
 * real time, the op's virtual latency in the virtual clock) updates its
 * estimate s_new = w * sample + (1 - w) * s_old, w = opts.ewma_weight (0.9
 * by default, as in the paper's reference code); the estimates start from
 * the attached workload's latencies (the cold start: cost model, a latency
 * table or a prediction). At each iteration boundary with a plan, the
 * change rate |S' - S| / S compares the summed estimates S' with the summed
 * latencies S of the workload the current plan was made for.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

double tsl__lat_sum(const double *lat, int32_t n) {
    double s = 0.0;
    for (int32_t i = 0; i < n; i++) s += lat[i];
    return s;
}

tsl_status tsl__lat_init(tsl__runtime *rt) {
    rt->ewma = malloc(sizeof *rt->ewma * ((size_t)rt->no + 1));
    if (!rt->ewma) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
    for (int32_t i = 0; i < rt->no; i++)
        rt->ewma[i] = rt->w0->ops[i].end_us - rt->w0->ops[i].start_us;
    return TSL_OK;
}

void tsl__lat_sample(tsl__runtime *rt, int32_t op, double us) {
    TSL_ASSERT(op >= 0 && op < rt->no);
    if (!(us >= 0) || !isfinite(us)) return;
    double w = rt->o.ewma_weight;
    rt->ewma[op] = w * us + (1.0 - w) * rt->ewma[op];
}

void tsl__lat_report(const tsl__runtime *rt, tsl_latency_report *r) {
    memset(r, 0, sizeof *r);
    r->iteration = rt->iter;
    r->plans_installed = rt->st.plans_installed;
    r->has_plan = rt->cur != NULL;
    r->plan_pending = rt->has_pending;
    r->ewma_latency_us = tsl__lat_sum(rt->ewma, rt->no);
    if (!rt->cur) return;
    r->plan_latency_us = rt->cur->lat_sum;
    if (r->plan_latency_us > 0)
        r->change_rate = fabs(r->ewma_latency_us - r->plan_latency_us) / r->plan_latency_us;
}

tsl_status tsl_session_latency_snapshot(tsl_session *s, double *us, tsl_latency_report *r) {
    if (!s || !s->rt)
        return tsl_fail(TSL_ERR_INVALID, "latency snapshot: no runtime attached to the session");
    tsl__runtime *rt = s->rt;
    pthread_mutex_lock(&rt->mu);
    if (us) memcpy(us, rt->ewma, sizeof *us * (size_t)rt->no);
    if (r) tsl__lat_report(rt, r);
    pthread_mutex_unlock(&rt->mu);
    return TSL_OK;
}

tsl_status tsl_session_on_boundary(tsl_session *s, tsl_boundary_fn fn, void *user) {
    if (!s || !s->rt)
        return tsl_fail(TSL_ERR_INVALID, "boundary callback: no runtime attached to the session");
    pthread_mutex_lock(&s->rt->mu);
    s->rt->o.on_boundary = fn;
    s->rt->o.boundary_user = user;
    pthread_mutex_unlock(&s->rt->mu);
    return TSL_OK;
}
