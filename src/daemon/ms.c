/*
 * ms.c - the Memory Scheduler (ms.h): the jobs of one device, planned
 * together; their regions; the queue.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "daemon/ms.h"
#include "tensile/policy_tensile.h"
#include "tensile/verify.h"

const char *tsl__dj_state_name(tsl__dj_state s) {
    switch (s) {
    case TSL__DJ_QUEUED:
    case TSL__DJ_ADMITTED: return "queued";
    case TSL__DJ_RUNNING: return "running";
    case TSL__DJ_DONE: return "done";
    case TSL__DJ_FAILED: return "failed";
    }
    return "?";
}

void tsl__ms_init(tsl__ms *ms, const tsl_device_profile *dev, size_t capacity,
                  const tsl_policy *policy) {
    memset(ms, 0, sizeof *ms);
    ms->dev = *dev;
    ms->dev.mem_bytes = capacity;
    ms->capacity = capacity;
    ms->policy = policy;
    ms->drift_threshold = 0.3;
    ms->drift_patience = 3;
    ms->next_id = 1;
    ms->next_seq = 1;
}

static void drop_plan(tsl__djob *j) {
    tsl_plan_free(j->plan);
    tsl_workload_free(j->plan_w);
    j->plan = NULL;
    j->plan_w = NULL;
    j->to_send = 0;
}

void tsl__ms_free(tsl__ms *ms) {
    for (int i = 0; i < ms->n; i++) {
        tsl__djob *j = ms->jobs[i];
        drop_plan(j);
        tsl_workload_free(j->w);
        free(j);
    }
    free(ms->jobs);
    memset(ms, 0, sizeof *ms);
}

static double sum_latency(const tsl_workload *w) {
    double s = 0;
    for (int32_t i = 0; i < w->n_ops; i++) s += w->ops[i].end_us - w->ops[i].start_us;
    return s;
}

tsl_status tsl__ms_submit(tsl__ms *ms, const char *name, const char *model, int64_t batch,
                          int64_t iterations, double max_swap_rate, tsl_workload *w, double now,
                          tsl__djob **out) {
    *out = NULL;
    tsl_status st = TSL_OK;
    if (!w) st = tsl_fail(TSL_ERR_INVALID, "job '%s': no workload", name);
    else if (!(max_swap_rate >= 0 && max_swap_rate <= 1))
        st = tsl_fail(TSL_ERR_INVALID, "job '%s': max swap rate %g outside [0, 1]", name,
                      max_swap_rate);
    else if (w->n_ops < 1)
        st = tsl_fail(TSL_ERR_INVALID, "job '%s': workload '%s' has no op", name, w->job);
    tsl__djob *j = NULL;
    if (st == TSL_OK && !(j = calloc(1, sizeof *j)))
        st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory for a job");
    if (st == TSL_OK && ms->n == ms->cap) {
        int cap = ms->cap ? 2 * ms->cap : 16;
        tsl__djob **a = realloc(ms->jobs, (size_t)cap * sizeof *a);
        if (!a) st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory for a job");
        else {
            ms->jobs = a;
            ms->cap = cap;
        }
    }
    if (st != TSL_OK) {
        free(j);
        tsl_workload_free(w);
        return st;
    }
    j->id = ms->next_id++;
    j->state = TSL__DJ_QUEUED;
    snprintf(j->name, sizeof j->name, "%s", name);
    snprintf(j->model, sizeof j->model, "%s", model);
    j->batch = batch;
    j->iterations = iterations;
    j->max_swap_rate = max_swap_rate;
    j->w = w;
    j->t_submit = now;
    snprintf(j->reason, sizeof j->reason, "waiting to be planned");
    ms->jobs[ms->n++] = j;
    *out = j;
    return TSL_OK;
}

int tsl__ms_active(const tsl__ms *ms) {
    int n = 0;
    for (int i = 0; i < ms->n; i++)
        n += ms->jobs[i]->state == TSL__DJ_ADMITTED || ms->jobs[i]->state == TSL__DJ_RUNNING;
    return n;
}

tsl__djob *tsl__ms_find(const tsl__ms *ms, int64_t id) {
    for (int i = 0; i < ms->n; i++)
        if (ms->jobs[i]->id == id) return ms->jobs[i];
    return NULL;
}

/* ---- planning the jobs together --------------------------------------------------- */

/* Plans jobs js[0..n) together into plans[] (verified, each against its
 * share of the channels): TSL_OK, TSL_ERR_BUDGET (plans made, not fitting;
 * *need their footprints' sum), or an error (plans NULL). */
static tsl_status plan_together(tsl__ms *ms, tsl__djob **js, int n, tsl_plan **plans,
                                size_t *need) {
    tsl_workload **w = malloc((size_t)n * sizeof *w);
    double *rates = malloc((size_t)n * sizeof *rates), *share = malloc((size_t)n * sizeof *share);
    tsl_status st = TSL_OK;
    if (!w || !rates || !share) st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
    for (int i = 0; i < n && st == TSL_OK; i++) {
        w[i] = js[i]->w;
        rates[i] = js[i]->max_swap_rate;
        share[i] = 1.0 / n;
        plans[i] = NULL;
    }
    tsl_tensile_opts to = tsl_tensile_opts_default();
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = ms->policy;
    po.budget = ms->capacity > ms->reserved ? ms->capacity - ms->reserved : 1;
    po.channel_share = share;
    if (!ms->policy || strcmp(ms->policy->name, "tensile") == 0) {
        to.max_swap_rate = (tsl_per_job){.n = n, .v = rates};
        po.opts = &to;
    }
    tsl_plan_report rep;
    if (st == TSL_OK) st = tsl_plan_jobs(w, n, &ms->dev, &po, plans, &rep);
    if (st == TSL_OK || st == TSL_ERR_BUDGET) {
        ms->last_planning_ms = rep.planning_ms;
        *need = 0;
        for (int i = 0; i < n; i++) *need += rep.planned_footprint[i];
        tsl_plan_report_free(&rep);
        /* invariant 2: every plan verified, against its share */
        for (int i = 0; i < n && (st == TSL_OK || st == TSL_ERR_BUDGET); i++) {
            tsl_device_profile d = tsl_profile_channel_share(&ms->dev, share[i]);
            tsl_violation *v = NULL;
            int nv = 0;
            if (tsl_plan_verify(w[i], plans[i], &d, &v, &nv) != TSL_OK) {
                char why[400];
                snprintf(why, sizeof why, "%s", nv ? v[0].what : tsl_last_error());
                st = tsl_fail(TSL_ERR_INTERNAL, "daemon: the plan of job '%s' fails "
                                                "verification: %s", js[i]->name, why);
            }
            free(v);
        }
        if (st != TSL_OK && st != TSL_ERR_BUDGET)
            for (int i = 0; i < n; i++) {
                tsl_plan_free(plans[i]);
                plans[i] = NULL;
            }
    }
    free(w);
    free(rates);
    free(share);
    return st;
}

/* Gives each job of js[0..n) its new plan (taken from plans[], which is
 * emptied), waiting to be sent. */
static tsl_status take_plans(tsl__ms *ms, tsl__djob **js, int n, tsl_plan **plans,
                             const char *why) {
    tsl_status st = TSL_OK;
    for (int i = 0; i < n; i++) {
        tsl__djob *j = js[i];
        tsl_workload *pw = st == TSL_OK ? tsl_workload_copy(j->w, NULL) : NULL;
        if (!pw) {
            if (st == TSL_OK) st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
            tsl_plan_free(plans[i]);
            plans[i] = NULL;
            continue;
        }
        if (j->plan) j->replans++;
        drop_plan(j);
        j->plan = plans[i];
        j->plan_w = pw;
        plans[i] = NULL;
        j->share = 1.0 / n;
        j->seq = ms->next_seq++;
        j->to_send = 1;
        snprintf(j->why, sizeof j->why, "%s", j->state == TSL__DJ_QUEUED ? "admitted" : why);
        j->base_sum = sum_latency(j->w);
        j->drift_run = 0;
    }
    return st;
}

/* The jobs to run (ADMITTED, RUNNING), and `extra` if not NULL, into js;
 * returns how many. js has room for ms->n + 1. */
static int to_run(const tsl__ms *ms, tsl__djob *extra, tsl__djob **js) {
    int n = 0;
    for (int i = 0; i < ms->n; i++)
        if (ms->jobs[i]->state == TSL__DJ_ADMITTED || ms->jobs[i]->state == TSL__DJ_RUNNING)
            js[n++] = ms->jobs[i];
    if (extra) js[n++] = extra;
    return n;
}

static tsl__djob *queue_head(const tsl__ms *ms) {
    for (int i = 0; i < ms->n; i++)
        if (ms->jobs[i]->state == TSL__DJ_QUEUED) return ms->jobs[i];
    return NULL;
}

int tsl__ms_admit(tsl__ms *ms, double now) {
    tsl__djob *h = queue_head(ms);
    if (!h) return 0;
    tsl__djob **js = malloc(((size_t)ms->n + 1) * sizeof *js);
    tsl_plan **plans = calloc((size_t)ms->n + 1, sizeof *plans);
    if (!js || !plans) {
        free(js);
        free(plans);
        tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
        return -2;
    }
    int n = to_run(ms, h, js), rc = 0;
    size_t need = 0;
    tsl_status st = plan_together(ms, js, n, plans, &need);
    if (st == TSL_OK) {
        h->t_admit = now;
        snprintf(h->reason, sizeof h->reason,
                 "admitted; its memory comes free as the other jobs shrink at their next "
                 "iteration boundary");
        rc = take_plans(ms, js, n, plans, "arrival") == TSL_OK ? 1 : -2;
        h->state = TSL__DJ_ADMITTED;
    } else if (st == TSL_ERR_BUDGET) {
        tsl_clear_error();
        h->needed = need;
        size_t others = 0;
        for (int i = 0; i < n - 1; i++)
            others += js[i]->plan ? js[i]->plan->predicted_footprint : js[i]->region;
        if (ms->no_queue && n > 1) {
            h->state = TSL__DJ_FAILED;
            snprintf(h->reason, sizeof h->reason,
                     "out of memory: the %d job%s running and this one need %zu bytes together, "
                     "the device has %zu (no admission control: a job that does not fit fails)",
                     n - 1, n - 1 == 1 ? "" : "s", need, ms->capacity);
            rc = -1;
        } else if (n == 1) {
            h->state = TSL__DJ_FAILED;
            snprintf(h->reason, sizeof h->reason,
                     "it cannot fit the device even alone: its most aggressive plan needs %zu "
                     "bytes, the device has %zu",
                     need, ms->capacity);
            rc = -1;
        } else {
            snprintf(h->reason, sizeof h->reason,
                     "the %d job%s to run and this one need %zu bytes together with their most "
                     "aggressive plans, the device has %zu (the others' plans now hold %zu); it "
                     "starts when a job ends",
                     n - 1, n - 1 == 1 ? "" : "s", need, ms->capacity, others);
        }
    } else {
        rc = -2;
    }
    for (int i = 0; i < n; i++) tsl_plan_free(plans[i]);
    free(plans);
    free(js);
    return rc;
}

tsl_status tsl__ms_replan(tsl__ms *ms, const char *why) {
    tsl__djob **js = malloc(((size_t)ms->n + 1) * sizeof *js);
    tsl_plan **plans = calloc((size_t)ms->n + 1, sizeof *plans);
    tsl_status st = TSL_OK;
    if (!js || !plans) st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
    int n = st == TSL_OK ? to_run(ms, NULL, js) : 0;
    size_t need = 0;
    if (st == TSL_OK && n > 0) st = plan_together(ms, js, n, plans, &need);
    if (st == TSL_OK && n > 0) st = take_plans(ms, js, n, plans, why);
    if (st == TSL_ERR_BUDGET)
        tsl_fail(TSL_ERR_BUDGET, "the jobs' new plans need %zu bytes, the device has %zu: the "
                                 "plans in force stay",
                 need, ms->capacity);
    for (int i = 0; i < n; i++) tsl_plan_free(plans[i]);
    free(plans);
    free(js);
    return st;
}

/* ---- regions ------------------------------------------------------------------------ */

/* What j holds or may hold: its region, or the footprint of a plan it was
 * sent and has not acknowledged if larger. */
static size_t held(const tsl__djob *j) {
    if (j->state != TSL__DJ_RUNNING && j->state != TSL__DJ_ADMITTED) return 0;
    size_t r = j->region;
    if (j->sent_seq > j->acked_seq && j->sent_target > r) r = j->sent_target;
    return r;
}

size_t tsl__ms_committed(const tsl__ms *ms) {
    size_t s = 0;
    for (int i = 0; i < ms->n; i++) s += held(ms->jobs[i]);
    return s;
}

int tsl__ms_sendable(const tsl__ms *ms, const tsl__djob *j) {
    if (!j->to_send || !j->plan) return 0;
    if (j->sent_seq > j->acked_seq) return 0; /* one plan in flight at a time */
    size_t target = j->plan->predicted_footprint;
    if (target <= j->region) return 1;
    size_t others = tsl__ms_committed(ms) - held(j) + ms->reserved;
    return others <= ms->capacity && target <= ms->capacity - others;
}

void tsl__ms_sent(tsl__ms *ms, tsl__djob *j) {
    (void)ms;
    TSL_ASSERT(j->plan && j->to_send);
    j->to_send = 0;
    j->sent_seq = j->seq;
    j->sent_target = j->plan->predicted_footprint;
    if (j->state == TSL__DJ_ADMITTED) {
        j->state = TSL__DJ_RUNNING;
        j->reason[0] = '\0';
    }
}

int tsl__ms_acked(tsl__ms *ms, tsl__djob *j, int64_t seq) {
    (void)ms;
    if (seq != j->sent_seq || seq <= j->acked_seq) return 0;
    j->acked_seq = seq;
    j->region = j->sent_target;
    return 1;
}

/* ---- reports and ends ----------------------------------------------------------------- */

int tsl__ms_report(tsl__ms *ms, tsl__djob *j, const double *us, int32_t n) {
    if (n != j->w->n_ops) {
        tsl_fail(TSL_ERR_INVALID, "job '%s' reported %d latencies for its %d ops", j->name,
                 (int)n, (int)j->w->n_ops);
        return -1;
    }
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(us[i] >= 0) || !isfinite(us[i])) {
            tsl_fail(TSL_ERR_INVALID, "job '%s': latency of op %d is %g us", j->name, (int)i,
                     us[i]);
            return -1;
        }
        sum += us[i];
    }
    tsl_workload *w = tsl_workload_copy(j->w, us);
    if (!w) {
        tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
        return -1;
    }
    tsl_workload_free(j->w);
    j->w = w;
    if (!(j->base_sum > 0)) return 0;
    double rate = fabs(sum - j->base_sum) / j->base_sum;
    if (!(rate > ms->drift_threshold)) {
        j->drift_run = 0;
        return 0;
    }
    return ++j->drift_run >= ms->drift_patience;
}

void tsl__ms_end(tsl__ms *ms, tsl__djob *j, tsl__dj_state state, const char *reason) {
    (void)ms;
    TSL_ASSERT(state == TSL__DJ_DONE || state == TSL__DJ_FAILED);
    j->state = state;
    j->region = 0;
    j->sent_target = 0;
    drop_plan(j);
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
}

tsl_status tsl__ms_resume(tsl__ms *ms, int64_t id, const char *name, const char *model,
                          int64_t batch, int64_t iterations, double max_swap_rate,
                          tsl_workload *w, tsl_plan *plan, int64_t seq, size_t region,
                          double share, double now, tsl__djob **out) {
    *out = NULL;
    tsl_status st = TSL_OK;
    if (tsl__ms_find(ms, id))
        st = tsl_fail(TSL_ERR_INVALID, "job %lld resumes, but a job %lld is known already",
                      (long long)id, (long long)id);
    tsl_workload *pw = st == TSL_OK ? tsl_workload_copy(w, NULL) : NULL;
    if (st == TSL_OK && !pw) st = tsl_fail(TSL_ERR_OOM, "daemon: out of host memory");
    tsl__djob *j = NULL;
    if (st == TSL_OK) st = tsl__ms_submit(ms, name, model, batch, iterations, max_swap_rate, w, now,
                                         &j);
    else tsl_workload_free(w);
    if (st != TSL_OK) {
        tsl_workload_free(pw);
        tsl_plan_free(plan);
        return st;
    }
    ms->next_id--; /* it keeps its own id */
    j->id = id;
    if (ms->next_id <= id) ms->next_id = id + 1;
    if (ms->next_seq <= seq) ms->next_seq = seq + 1;
    j->state = TSL__DJ_RUNNING;
    j->t_admit = now; /* (its queueing, if any, was the last daemon's) */
    j->reason[0] = '\0';
    j->plan = plan;
    j->plan_w = pw;
    j->share = share;
    j->seq = j->sent_seq = j->acked_seq = seq;
    j->sent_target = j->region = region;
    j->base_sum = sum_latency(j->w);
    snprintf(j->why, sizeof j->why, "resume");
    ms->reserved = ms->reserved > region ? ms->reserved - region : 0;
    *out = j;
    return TSL_OK;
}
