/*
 * runtime.c - the API of tensile/runtime.h: options, attaching the runtime
 * to a session, installing plans (verified, effective at the next
 * iteration boundary), statistics; and the tables the executor reads for an
 * installed plan (runtime_internal.h).
 *
 * Defaults of the profile plans are verified against: fields the caller
 * leaves at 0 are filled at attach time - mem_bytes with the session's
 * arena, the others from tsl_profile_cpu_rough (the one rough CPU profile).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/assert.h"
#include "sched/plan_order.h"
#include "runtime/runtime_internal.h"

tsl_runtime_opts tsl_runtime_opts_default(void) {
    tsl_runtime_opts o;
    memset(&o, 0, sizeof o);
    o.strict = 1;
    o.ewma_weight = 0.9;
    o.profile.duplex = 1; /* the rest is filled at attach (fill_profile) */
    o.virtual_clock = 0;
    return o;
}

/* ---- workloads and plans ------------------------------------------------------ */

void tsl__rt_plan_free(tsl__rt_plan *pl) {
    if (!pl) return;
    tsl_plan_free(pl->p);
    tsl_workload_free(pl->w);
    free(pl->items);
    free(pl->trig_start);
    free(pl->trig_list);
    free(pl->tev_start);
    free(pl->tev_list);
    free(pl->ev_plan);
    free(pl->pre_start);
    free(pl->pre_list);
    free(pl->recomputed);
    free(pl);
}

static tsl_plan *plan_copy(const tsl_plan *p) {
    tsl_plan *c = tsl_plan_new(p->job);
    if (!c) return NULL;
    for (int32_t e = 0; e < p->n_events; e++)
        if (tsl_plan_add(c, p->events[e]) != TSL_OK) {
            tsl_plan_free(c);
            return NULL;
        }
    c->predicted_peak = p->predicted_peak;
    c->predicted_period_us = p->predicted_period_us;
    if (p->n_blocks > 0) { /* the layout */
        c->blocks = malloc((size_t)p->n_blocks * sizeof *c->blocks);
        if (!c->blocks) {
            tsl_plan_free(c);
            return NULL;
        }
        memcpy(c->blocks, p->blocks, (size_t)p->n_blocks * sizeof *c->blocks);
        c->n_blocks = p->n_blocks;
        c->layout_align = p->layout_align;
        c->predicted_footprint = p->predicted_footprint;
    }
    if (tsl_plan_copy_algos(c, p) != TSL_OK) {
        tsl_plan_free(c);
        return NULL;
    }
    return c;
}

/* Fills items (the ops with the recomputations rc[0..n_rc) inserted before
 * the op each precedes), the trigger and per-tensor CSRs of the timed events
 * tm[0..n_tm), and their planned times on w's timeline with the
 * recomputations' shifts (docs/SCHEDULING.md). pe (n_ops) and tf
 * (n_tensors) are scratch. */
static tsl_status fill_tables(tsl__rt_plan *pl, const tsl_device_profile *dev, const tsl__ev_ix *rc,
                              int32_t n_rc, const tsl__ev_ix *tm, int32_t n_tm, double *pe,
                              int32_t *tf) {
    const tsl_workload *w = pl->w;
    tsl__exec_sequence(w, rc, n_rc, pl->items);
    tsl_status st = tsl__exec_times(w, pl->p, dev, NULL, pl->items, pl->n_items, pe);
    for (int32_t x = 0; x < n_tm; x++) {
        pl->trig_start[tm[x].ev.trigger + 2]++;
        pl->tev_start[tm[x].ev.tensor + 1]++;
    }
    for (int32_t i = 1; i < w->n_ops + 3; i++) pl->trig_start[i] += pl->trig_start[i - 1];
    for (int32_t t = 0; t < w->n_tensors; t++) pl->tev_start[t + 1] += pl->tev_start[t];
    for (int32_t t = 0; t < w->n_tensors; t++) tf[t] = pl->tev_start[t];
    for (int32_t x = 0; x < n_tm; x++) {
        const tsl_event *ev = &tm[x].ev;
        pl->trig_list[x] = tm[x].ix; /* sorted by trigger: groups are contiguous */
        pl->tev_list[tf[ev->tensor]++] = tm[x].ix;
        pl->ev_plan[tm[x].ix] = tsl__event_plan_time(ev, pe);
    }
    return st;
}

tsl_status tsl__rt_plan_new(const tsl_plan *p, const tsl_workload *w,
                            const tsl_device_profile *dev, tsl__rt_plan **out) {
    *out = NULL;
    tsl__rt_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for a plan");
    int32_t ne = p->n_events, nt = w->n_tensors, no = w->n_ops, n_rc = 0;
    for (int32_t e = 0; e < ne; e++) n_rc += p->events[e].type == TSL_EV_RECOMPUTE;
    pl->p = plan_copy(p);
    if (p->n_algos > 0) { /* the workload as run: the chosen algorithms' times, workspaces */
        tsl_status sa = tsl_workload_for_plan(w, p, &pl->w);
        if (sa != TSL_OK) {
            tsl__rt_plan_free(pl);
            return sa;
        }
    } else
        pl->w = tsl_workload_copy(w, NULL);
    pl->profile = *dev;
    pl->n_items = no + n_rc;
    pl->n_timed = ne - n_rc;
    pl->items = malloc(sizeof *pl->items * ((size_t)pl->n_items + 1));
    pl->trig_start = calloc((size_t)no + 3, sizeof *pl->trig_start);
    pl->trig_list = malloc(sizeof *pl->trig_list * ((size_t)ne + 1));
    pl->tev_start = calloc((size_t)nt + 2, sizeof *pl->tev_start);
    pl->tev_list = malloc(sizeof *pl->tev_list * ((size_t)ne + 1));
    pl->ev_plan = calloc((size_t)ne + 1, sizeof *pl->ev_plan);
    pl->recomputed = calloc((size_t)nt + 1, 1);
    tsl__ev_ix *sorted = malloc(sizeof *sorted * ((size_t)ne + 1));
    double *pe = malloc(sizeof *pe * ((size_t)no + 1));
    int32_t *tf = malloc(sizeof *tf * ((size_t)nt + 1));
    if (!tf || !pl->p || !pl->w || !pl->items || !pl->trig_start || !pl->trig_list || !pl->tev_start ||
        !pl->tev_list || !pl->ev_plan || !pl->recomputed || !sorted || !pe) {
        free(sorted);
        free(pe);
        free(tf);
        tsl__rt_plan_free(pl);
        return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for plan '%s'", p->job);
    }
    int32_t n_sorted_rc = tsl__plan_exec_order(p, sorted);
    TSL_ASSERT(n_sorted_rc == n_rc);
    for (int32_t r = 0; r < n_rc; r++) pl->recomputed[sorted[r].ev.tensor] = 1;
    tsl_status st = fill_tables(pl, dev, sorted, n_rc, sorted + n_rc, ne - n_rc, pe, tf);
    if (st == TSL_OK && !tsl__preceding_releases(pl->p, no, &pl->pre_start, &pl->pre_list))
        st = tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for plan '%s'", p->job);
    free(sorted);
    free(pe);
    free(tf);
    if (st != TSL_OK) {
        tsl__rt_plan_free(pl);
        return st;
    }
    double sum = 0.0;
    for (int32_t i = 0; i < no; i++) sum += w->ops[i].end_us - w->ops[i].start_us;
    pl->lat_sum = sum;
    *out = pl;
    return TSL_OK;
}

/* ---- attach --------------------------------------------------------------------- */

/* The workload must be the graph's: same tensors (sizes) and ops (arity). */
static tsl_status check_workload(tsl_session *s, const tsl_workload *w) {
    const tsl_graph *g = s->g;
    if (!w) return tsl_fail(TSL_ERR_INVALID, "attach runtime: the workload is NULL");
    if (w->n_tensors != tsl_graph_n_tensors(g) || w->n_ops != tsl_graph_n_ops(g))
        return tsl_fail(TSL_ERR_INVALID,
                        "attach runtime: workload '%s' has %d tensors and %d ops, graph '%s' has "
                        "%d and %d (build it with tsl_workload_from_graph)",
                        w->job, w->n_tensors, w->n_ops, tsl_graph_name(g), tsl_graph_n_tensors(g),
                        tsl_graph_n_ops(g));
    for (int32_t t = 0; t < w->n_tensors; t++)
        if (w->tensors[t].bytes != tsl_graph_tensor(g, t)->nbytes)
            return tsl_fail(TSL_ERR_INVALID,
                            "attach runtime: workload '%s' tensor %d ('%s'): bytes %zu, the "
                            "graph's tensor has %zu",
                            w->job, t, w->tensors[t].name, w->tensors[t].bytes,
                            tsl_graph_tensor(g, t)->nbytes);
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_op *op = tsl_graph_op(g, i);
        const tsl_wl_op *o = &w->ops[i];
        if (o->n_in != op->n_in || o->n_out != op->n_out || !(o->end_us >= o->start_us))
            return tsl_fail(TSL_ERR_INVALID,
                            "attach runtime: workload '%s' op %d ('%s'): %d inputs, %d outputs, "
                            "times [%g, %g]; the graph's op has %d inputs, %d outputs",
                            w->job, i, o->name, o->n_in, o->n_out, o->start_us, o->end_us,
                            op->n_in, op->n_out);
        size_t ws;
        tsl_status st = tsl_session_op_workspace(s, i, &ws);
        if (st != TSL_OK) return st;
        if (o->workspace < ws) /* the plan's peak and the strict limit would not hold */
            return tsl_fail(TSL_ERR_INVALID,
                            "attach runtime: workload '%s' op %d ('%s'): workspace %zu bytes, but "
                            "the backend's kernel allocates %zu (tsl_workload_match_session)",
                            w->job, i, o->name, o->workspace, ws);
    }
    return TSL_OK;
}

tsl_status tsl_workload_match_backend(tsl_workload *w, const tsl_graph *g, tsl_backend *b) {
    if (!w || !g || !b)
        return tsl_fail(TSL_ERR_INVALID, "match workload: the workload, graph or backend is NULL");
    if (w->n_ops != tsl_graph_n_ops(g))
        return tsl_fail(TSL_ERR_INVALID, "match workload: workload '%s' has %d ops, graph '%s' has %d",
                        w->job, w->n_ops, tsl_graph_name(g), tsl_graph_n_ops(g));
    for (int32_t i = 0; i < w->n_ops; i++) {
        tsl_status st = b->iface->op_workspace(b, g, tsl_graph_op(g, i), &w->ops[i].workspace);
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

tsl_status tsl_workload_match_session(tsl_workload *w, tsl_session *s) {
    if (!w || !s) return tsl_fail(TSL_ERR_INVALID, "match workload: the workload or session is NULL");
    return tsl_workload_match_backend(w, s->g, s->b);
}

static tsl_status check_opts(const tsl_runtime_opts *o) {
    if (!(o->ewma_weight > 0.0 && o->ewma_weight <= 1.0))
        return tsl_fail(TSL_ERR_INVALID, "runtime opts: ewma_weight %g must be in (0, 1]",
                        o->ewma_weight);
    const tsl_device_profile *p = &o->profile;
    if (p->h2d_bw < 0 || p->d2h_bw < 0 || p->flops < 0 || p->mem_bw < 0 || p->launch_us < 0 ||
        p->copy_latency_us < 0)
        return tsl_fail(TSL_ERR_INVALID,
                        "runtime opts: profile '%s' has a negative field (h2d_bw %g, d2h_bw %g, "
                        "flops %g, mem_bw %g, launch_us %g, copy_latency_us %g)",
                        p->name, p->h2d_bw, p->d2h_bw, p->flops, p->mem_bw, p->launch_us,
                        p->copy_latency_us);
    return TSL_OK;
}

/* Fills the profile's fields left at 0 (see the head of this file). */
static void fill_profile(tsl_device_profile *p, size_t capacity) {
    tsl_device_profile r = tsl_profile_cpu_rough();
    if (!p->name[0]) snprintf(p->name, sizeof p->name, "%s", r.name);
    if (p->mem_bytes == 0) p->mem_bytes = capacity;
    if (p->h2d_bw == 0) p->h2d_bw = r.h2d_bw;
    if (p->d2h_bw == 0) p->d2h_bw = r.d2h_bw;
    if (p->flops == 0) p->flops = r.flops;
    if (p->mem_bw == 0) p->mem_bw = r.mem_bw;
    if (p->launch_us == 0) p->launch_us = r.launch_us;
    if (p->copy_latency_us == 0) p->copy_latency_us = r.copy_latency_us;
}

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The persistent tensors that did not fit when the session opened
 * (session opts.persistent_on_host): their initial values become the
 * runtime's host copies - parked, as if swapped out before the first
 * iteration; a plan brings them in (placement.c's settle, its swap-ins, or
 * passively). All or nothing: on failure the session keeps them. */
static tsl_status adopt_initial(tsl__runtime *rt) {
    tsl_session *s = rt->s;
    if (!s->n_init_host) return TSL_OK;
    for (int32_t t = 0; t < rt->nt; t++) {
        if (!s->init_host[t]) continue;
        void *h = tsl__rt_host_buf(rt, t);
        if (!h) return tsl_fail(TSL_ERR_OOM, "attach runtime: out of host memory for '%s'",
                                tsl_graph_tensor(rt->g, t)->name);
        memcpy(h, s->init_host[t], tsl_graph_tensor(rt->g, t)->nbytes);
        rt->res[t].host_ok = 1;
        rt->res[t].host_gen = rt->res[t].gen;
    }
    return TSL_OK;
}

/* After adopt_initial took effect: the session's own copies go. */
static void release_initial(tsl_session *s) {
    if (!s->n_init_host) return;
    for (tsl_tid t = 0; t < tsl_graph_n_tensors(s->g); t++) {
        free(s->init_host[t]);
        s->init_host[t] = NULL;
    }
    s->n_init_host = 0;
}

tsl_status tsl_session_attach_runtime(tsl_session *s, const tsl_runtime_opts *o,
                                      const tsl_workload *w) {
    if (!s) return tsl_fail(TSL_ERR_INVALID, "attach runtime: the session is NULL");
    if (s->rt) return tsl_fail(TSL_ERR_INVALID, "attach runtime: a runtime is already attached");
    tsl_runtime_opts opts = o ? *o : tsl_runtime_opts_default();
    tsl_status st = check_opts(&opts);
    if (st == TSL_OK) st = check_workload(s, w);
    if (st != TSL_OK) return st;
    const struct tsl_backend_i *bi = s->b->iface;
    tsl__runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return tsl_fail(TSL_ERR_OOM, "attach runtime: out of host memory");
    rt->s = s;
    rt->b = s->b;
    rt->g = s->g;
    rt->o = opts;
    rt->virtual_clock = opts.virtual_clock != 0;
    rt->nt = tsl_graph_n_tensors(s->g);
    rt->no = tsl_graph_n_ops(s->g);
    tsl_alloc_stats ms;
    bi->mem_stats(s->b, &ms);
    rt->capacity = ms.capacity;
    rt->used = ms.load;
    fill_profile(&rt->o.profile, ms.capacity);
    rt->attach_ms = wall_ms();
    rt->async_err = TSL_OK;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->cv, &ca);
    pthread_cond_init(&rt->cv_queue, &ca);
    for (int d = 0; d < 2; d++) pthread_cond_init(&rt->cv_watch[d], &ca);
    pthread_condattr_destroy(&ca);
    rt->w0 = tsl_workload_copy(w, NULL);
    st = rt->w0 ? TSL_OK : tsl_fail(TSL_ERR_OOM, "attach runtime: out of host memory");
    if (st == TSL_OK) st = tsl__res_init(rt);
    if (st == TSL_OK) st = tsl__evict_init(rt);
    if (st == TSL_OK) st = tsl__dtr_init(rt);
    if (st == TSL_OK) st = tsl__place_init(rt);
    if (st == TSL_OK) st = tsl__lat_init(rt);
    if (st == TSL_OK) st = adopt_initial(rt);
    if (st == TSL_OK && !rt->virtual_clock) st = tsl__se_start(rt);
    if (st != TSL_OK) {
        tsl__rt_free(rt);
        return st;
    }
    s->rt = rt;
    release_initial(s);
    return TSL_OK;
}

void tsl__rt_free(tsl__runtime *rt) {
    if (!rt) return;
    tsl__se_stop(rt);
    tsl__res_free(rt);
    tsl__evict_free(rt);
    tsl__dtr_free(rt);
    tsl__place_free(rt);
    tsl__rt_plan_free(rt->cur);
    tsl__rt_plan_free(rt->pending);
    tsl_workload_free(rt->w0);
    free(rt->ev_state);
    free(rt->xf);
    free(rt->queue.a);
    free(rt->agenda.a);
    for (int d = 0; d < 2; d++) {
        free(rt->copies[d].a);
        free(rt->vwait[d].a);
    }
    free(rt->vlat);
    free(rt->ewma);
    tsl__inflight_free(&rt->inflight);
    if (rt->anchor) rt->b->iface->event_release(rt->b, rt->anchor);
    free(rt->eval_reads);
    tsl__log_free(&rt->log);
    pthread_cond_destroy(&rt->cv);
    pthread_cond_destroy(&rt->cv_queue);
    for (int d = 0; d < 2; d++) pthread_cond_destroy(&rt->cv_watch[d]);
    pthread_mutex_destroy(&rt->mu);
    free(rt);
}

/* ---- plans ------------------------------------------------------------------------ */


/* The backend can run each algorithm p chooses (op_algo_workspace), in no
 * more workspace than w gives that algorithm (else the plan's peak and the
 * strict limit would not hold). Choices naming ops or algorithms w has not
 * are left to the verifier. TSL_ERR_INVALID naming the op. */
static tsl_status check_backend_algos(const tsl__runtime *rt, const tsl_plan *p,
                                      const tsl_workload *w) {
    if (p->n_algos == 0) return TSL_OK;
    const struct tsl_backend_i *bi = rt->b->iface;
    if (!bi->op_algo_workspace)
        return tsl_fail(TSL_ERR_INVALID, "set plan: plan '%s' chooses algorithms, but backend "
                        "'%s' runs every op with its default", p->job, bi->name(rt->b));
    for (int32_t x = 0; x < p->n_algos; x++) {
        const tsl_plan_algo *c = &p->algos[x];
        if (c->op < 0 || c->op >= w->n_ops || c->op >= rt->no || c->algo < 1 ||
            c->algo >= tsl_workload_op_n_algos(w, c->op))
            continue;
        size_t need;
        tsl_status st = bi->op_algo_workspace(rt->b, rt->g, tsl_graph_op(rt->g, c->op), c->algo,
                                              &need);
        if (st != TSL_OK) return st;
        tsl_wl_algo a = tsl_workload_op_algo(w, c->op, c->algo);
        if (a.workspace < need)
            return tsl_fail(TSL_ERR_INVALID,
                            "set plan: plan '%s': op %d ('%s') with algorithm %d ('%s'): the "
                            "workload gives it %zu bytes of workspace, the backend's kernel "
                            "needs %zu",
                            p->job, c->op, w->ops[c->op].name, c->algo, a.name, a.workspace,
                            need);
    }
    return TSL_OK;
}

/* Makes `pl` (may be NULL: vanilla) the plan installed at the next boundary. */
static void set_pending(tsl__runtime *rt, tsl__rt_plan *pl) {
    pthread_mutex_lock(&rt->mu);
    tsl__rt_plan_free(rt->pending);
    rt->pending = pl;
    rt->has_pending = 1;
    pthread_mutex_unlock(&rt->mu);
}

static tsl_status need_runtime(const tsl_session *s, const char *what) {
    if (!s) return tsl_fail(TSL_ERR_INVALID, "%s: the session is NULL", what);
    if (!s->rt)
        return tsl_fail(TSL_ERR_INVALID,
                        "%s: no runtime attached to the session (tsl_session_attach_runtime first)",
                        what);
    return TSL_OK;
}

tsl_status tsl_session_set_plan_on(tsl_session *s, const tsl_plan *p, const tsl_workload *w,
                                   const tsl_device_profile *dev) {
    tsl_status st = need_runtime(s, "set plan");
    if (st != TSL_OK) return st;
    tsl__runtime *rt = s->rt;
    if (!p) {
        set_pending(rt, NULL);
        return TSL_OK;
    }
    if (!w) w = rt->w0;
    else if ((st = check_workload(s, w)) != TSL_OK) return st;
    tsl_device_profile prof = dev ? *dev : rt->o.profile;
    if (dev) {
        tsl_alloc_stats ms;
        rt->b->iface->mem_stats(rt->b, &ms);
        fill_profile(&prof, ms.capacity);
        tsl_runtime_opts chk = rt->o;
        chk.profile = prof;
        if ((st = check_opts(&chk)) != TSL_OK) return st;
    }
    if ((st = check_backend_algos(rt, p, w)) != TSL_OK) return st;
    tsl_violation *v = NULL;
    int nv = 0;
    st = tsl_plan_verify(w, p, &prof, &v, &nv);
    if (st != TSL_OK) {
        if (nv > 0) {
            char first[sizeof v[0].what];
            snprintf(first, sizeof first, "%s", v[0].what);
            free(v);
            return tsl_fail(TSL_ERR_INVALID, "set plan: plan '%s' refused: %s%s", p->job, first,
                            nv > 1 ? " (and more violations)" : "");
        }
        free(v);
        char why[512];
        snprintf(why, sizeof why, "%s", tsl_last_error());
        return tsl_fail(st, "set plan: plan '%s' cannot be verified: %s", p->job, why);
    }
    free(v);
    tsl__rt_plan *pl;
    st = tsl__rt_plan_new(p, w, &prof, &pl);
    if (st != TSL_OK) return st;
    set_pending(rt, pl);
    return TSL_OK;
}

tsl_status tsl_session_set_plan_for(tsl_session *s, const tsl_plan *p, const tsl_workload *w) {
    return tsl_session_set_plan_on(s, p, w, NULL);
}

tsl_status tsl_session_set_plan(tsl_session *s, const tsl_plan *p) {
    return tsl_session_set_plan_for(s, p, NULL);
}

tsl_status tsl__session_set_plan_unverified(tsl_session *s, const tsl_plan *p) {
    tsl_status st = need_runtime(s, "set plan");
    if (st != TSL_OK) return st;
    tsl__rt_plan *pl = NULL;
    if (p) {
        for (int32_t e = 0; e < p->n_events; e++) { /* indices at least: the executor needs them */
            const tsl_event *ev = &p->events[e];
            int rc = ev->type == TSL_EV_RECOMPUTE;
            if (ev->tensor < 0 || ev->tensor >= s->rt->nt || ev->trigger < -1 ||
                ev->trigger >= s->rt->no || (int)ev->type < 0 || ev->type > TSL_EV_RECOMPUTE ||
                (rc && (ev->precede < 0 || ev->precede >= s->rt->no ||
                        s->rt->w0->tensors[ev->tensor].producer < 0 ||
                        s->rt->w0->tensors[ev->tensor].producer >= ev->precede)))
                return tsl_fail(TSL_ERR_INVALID, "set plan: event %d has indices out of range", e);
        }
        st = check_backend_algos(s->rt, p, s->rt->w0);
        if (st == TSL_OK) st = tsl__rt_plan_new(p, s->rt->w0, &s->rt->o.profile, &pl);
        if (st != TSL_OK) return st;
    }
    set_pending(s->rt, pl);
    return TSL_OK;
}

tsl_status tsl__session_set_virtual_latency(tsl_session *s, const double *us) {
    tsl_status st = need_runtime(s, "virtual latency");
    if (st != TSL_OK) return st;
    tsl__runtime *rt = s->rt;
    free(rt->vlat);
    rt->vlat = NULL;
    if (!us) return TSL_OK;
    rt->vlat = malloc(sizeof *rt->vlat * ((size_t)rt->no + 1));
    if (!rt->vlat) return tsl_fail(TSL_ERR_OOM, "virtual latency: out of host memory");
    for (int32_t i = 0; i < rt->no; i++) {
        if (!(us[i] >= 0) || !isfinite(us[i])) {
            free(rt->vlat);
            rt->vlat = NULL;
            return tsl_fail(TSL_ERR_INVALID, "virtual latency: op %d: %g us", i, us[i]);
        }
        rt->vlat[i] = us[i];
    }
    return TSL_OK;
}

size_t tsl__session_runtime_limit(const tsl_session *s) {
    return s && s->rt && s->rt->cur ? s->rt->limit : 0;
}

/* ---- boundary helpers ----------------------------------------------------------------- */

/* The tensors an evaluation (forward) op reads, as 1 in rt->eval_reads[t]
 * (computed once). NULL if out of host memory. */
static const uint8_t *eval_reads(tsl__runtime *rt) {
    if (rt->eval_reads) return rt->eval_reads;
    uint8_t *need = calloc((size_t)rt->nt + 1, 1);
    if (!need) return NULL;
    for (int32_t i = 0; i < rt->s->live_eval.end; i++) {
        const tsl_op *op = tsl_graph_op(rt->g, i);
        for (int j = 0; j < op->n_in; j++) need[op->in[j]] = 1;
    }
    return rt->eval_reads = need;
}

tsl_status tsl__rt_restore_some(tsl__runtime *rt, const uint8_t *only, int best_effort) {
    tsl_session *s = rt->s;
    /* under a layout, those the plan keeps resident at the start first, at
     * their places (placement.c); then the rest online */
    for (int pass = tsl__place_on(rt) ? 0 : 1; pass < 2; pass++)
    for (int32_t t = 0; t < rt->nt; t++) {
        const tsl_tensor *tt = tsl_graph_tensor(rt->g, t);
        if (!tsl_kind_is_persistent(tt->kind) || s->ptr[t] || (only && !only[t])) continue;
        if (pass == 0 && !rt->place_start[t]) continue;
        tsl__res *r = &rt->res[t];
        TSL_ASSERT(tsl__rt_host_valid(rt, t)); /* never freed without a host copy */
        tsl_status st = pass == 0 ? tsl__place_start_ptr(rt, t, tt->nbytes, &s->ptr[t])
                                  : TSL_ERR_UNSUPPORTED;
        if (st != TSL_OK) st = rt->b->iface->alloc(rt->b, tt->nbytes, &s->ptr[t]);
        if (st != TSL_OK) /* an injected fault fails one allocation only */
            st = rt->b->iface->alloc(rt->b, tt->nbytes, &s->ptr[t]);
        if (st != TSL_OK) {
            s->ptr[t] = NULL;
            if (best_effort) { /* the executor swaps it in at its access */
                tsl_clear_error();
                continue;
            }
            tsl_alloc_stats ms;
            rt->b->iface->mem_stats(rt->b, &ms);
            return tsl_fail(TSL_ERR_OOM,
                            "device out of memory bringing %s '%s' (%zu bytes) back from the "
                            "host: load %zu of %zu bytes",
                            tsl_kind_name(tt->kind), tt->name, tt->nbytes, ms.load, ms.capacity);
        }
        st = tsl_backend_upload(rt->b, s->ptr[t], r->host, tt->nbytes);
        if (st != TSL_OK) return st;
        r->readable = 1;
        rt->used += tt->nbytes;
    }
    return TSL_OK;
}


/* Parks persistent t on the host: a host copy if it has none that is
 * current, then its device block freed (at a boundary: nothing in flight). */
tsl_status tsl__rt_park(tsl__runtime *rt, int32_t t) {
    tsl__res *r = &rt->res[t];
    if (!tsl__rt_host_valid(rt, t)) {
        void *h = tsl__rt_host_buf(rt, t);
        if (!h) return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory for a copy of '%s'",
                                tsl_graph_tensor(rt->g, t)->name);
        tsl_status st = tsl_backend_download(rt->b, h, rt->s->ptr[t],
                                             tsl_graph_tensor(rt->g, t)->nbytes);
        if (st != TSL_OK) return st;
        r->host_ok = 1;
        r->host_gen = r->gen;
    }
    tsl__rt_free_block(rt, t);
    return TSL_OK;
}

tsl_status tsl__rt_restore_for_eval(tsl__runtime *rt) {
    pthread_mutex_lock(&rt->mu);
    const uint8_t *need = eval_reads(rt);
    tsl_status st = need ? TSL_OK : tsl_fail(TSL_ERR_OOM, "evaluation: out of host memory");
    for (int32_t t = 0; t < rt->nt && st == TSL_OK; t++)
        if (tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind) && rt->s->ptr[t] && !need[t]) {
            st = tsl__rt_park(rt, t);
            rt->parked = 1;
        }
    if (st == TSL_OK) st = tsl__rt_restore_some(rt, need, 0);
    pthread_mutex_unlock(&rt->mu);
    return st;
}

/* ---- statistics --------------------------------------------------------------------------- */

void tsl_session_runtime_stats(const tsl_session *s, tsl_runtime_stats *st) {
    memset(st, 0, sizeof *st);
    if (!s || !s->rt) return;
    tsl__runtime *rt = s->rt;
    pthread_mutex_lock(&rt->mu);
    *st = rt->st;
    pthread_mutex_unlock(&rt->mu);
}
