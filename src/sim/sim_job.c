/* sim_job.c - see sim_job.h. */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/plan_order.h"
#include "sim/sim_job.h"

/* Groups the timed events (everything but recomputations; tm[0..n) sorted
 * by tsl__plan_exec_order, so by trigger) by trigger + 1. */
static void build_triggers(tsl__sim_job *j, const tsl__ev_ix *tm, int32_t n) {
    int32_t no = j->w->n_ops;
    for (int32_t k = 0; k < n; k++) {
        j->trig_list[k] = tm[k].ix;
        j->trig_start[tm[k].ev.trigger + 2]++;
    }
    /* group g (trigger g-1) spans [trig_start[g], trig_start[g+1]) */
    for (int32_t i = 1; i < no + 3; i++) j->trig_start[i] += j->trig_start[i - 1];
}

/* Planned times of the timed events tm[0..n) (in tsl__plan_exec_order) and
 * their lists per tensor, in that order. */
static void build_tensor_events(tsl__sim_job *j, const tsl__ev_ix *tm, int32_t n, const double *pe) {
    int32_t nt = j->w->n_tensors;
    for (int32_t k = 0; k < n; k++) {
        const tsl_event *ev = &tm[k].ev;
        j->ev_plan[tm[k].ix] = tsl__event_plan_time(ev, pe);
        j->tev_start[ev->tensor + 1]++;
    }
    for (int32_t t = 0; t < nt; t++) j->tev_start[t + 1] += j->tev_start[t];
    for (int32_t k = 0; k < n; k++) { /* fill, using tev_start[t] as cursor */
        int32_t t = tm[k].ev.tensor;
        j->tev_list[j->tev_start[t]++] = tm[k].ix;
    }
    for (int32_t t = nt; t > 0; t--) j->tev_start[t] = j->tev_start[t - 1];
    j->tev_start[0] = 0;
}

/* The op after which activity analysis frees tensor t: its last reading op,
 * else its producer (-1: the data load); INT32_MIN for persistent tensors
 * and tensors that are never generated nor loaded. */
static int32_t death_of(const tsl_workload *w, const int32_t *last_read, int32_t t) {
    const tsl_wl_tensor *tt = &w->tensors[t];
    if (tsl_kind_is_persistent(tt->kind)) return INT32_MIN;
    if (last_read[t] >= 0) return last_read[t];
    int data = tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_LABEL;
    if (data) return -1;
    return tt->producer >= 0 ? tt->producer : INT32_MIN;
}

static void build_deaths(tsl__sim_job *j, int32_t *last_read) {
    const tsl_workload *w = j->w;
    int32_t nt = w->n_tensors, no = w->n_ops;
    for (int32_t t = 0; t < nt; t++) last_read[t] = -1;
    for (int32_t i = 0; i < no; i++)
        for (int k = 0; k < w->ops[i].n_in; k++) last_read[w->ops[i].in[k]] = i;
    for (int32_t t = 0; t < nt; t++) {
        int32_t d = death_of(w, last_read, t);
        if (d != INT32_MIN) j->death_start[d + 2]++;
    }
    for (int32_t i = 1; i < no + 3; i++) j->death_start[i] += j->death_start[i - 1];
    for (int32_t t = 0; t < nt; t++) {
        int32_t d = death_of(w, last_read, t);
        if (d != INT32_MIN) j->death_list[j->death_start[d + 1]++] = t;
    }
    for (int32_t i = no + 2; i > 0; i--) j->death_start[i] = j->death_start[i - 1];
    j->death_start[0] = 0;
}

/* The host copies a job starts with (host_gen): none, but for each
 * persistent tensor the plan releases after its last access (absent at
 * time 0 by the periodic rule), a copy of its initial value - as the
 * runtime makes one before the first iteration it runs such a plan
 * (parked under a layout, copied as a cold tensor without one), so a
 * clean drop (a release with no swap-out, the host copy being current)
 * holds from the first iteration. Uses last_read's space as scratch. */
static void cold_host_copies(tsl__sim_job *j, int32_t *last) {
    const tsl_workload *w = j->w;
    int32_t nt = w->n_tensors;
    for (int32_t t = 0; t < nt; t++) {
        j->host_gen[t] = UINT32_MAX;
        last[t] = -1;
    }
    for (int32_t i = 0; i < w->n_ops; i++) {
        for (int k = 0; k < w->ops[i].n_in; k++) last[w->ops[i].in[k]] = i;
        for (int k = 0; k < w->ops[i].n_out; k++) last[w->ops[i].out[k]] = i;
    }
    for (int32_t e = 0; e < j->n_ev; e++) {
        const tsl_event *ev = &j->p->events[e];
        int32_t t = ev->tensor;
        if (ev->type == TSL_EV_RELEASE && tsl_kind_is_persistent(w->tensors[t].kind) &&
            last[t] >= 0 && ev->trigger >= last[t])
            j->host_gen[t] = j->gen[t];
    }
}

tsl_status tsl__sim_job_init(tsl__sim_job *j, int index, const tsl_workload *w,
                             const tsl_plan *p, const tsl_latency_table *actual,
                             const tsl_device_profile *dev, const tsl_device_profile *plan_dev) {
    memset(j, 0, sizeof *j);
    j->index = index;
    j->w = w;
    j->p = p;
    j->n_ev = p ? p->n_events : 0;
    int32_t nt = w->n_tensors, no = w->n_ops, ne = j->n_ev;
    size_t snt = (size_t)nt + 1, sno = (size_t)no + 1, sne = (size_t)ne + 1;
    int32_t n_rc = 0;
    for (int32_t e = 0; e < ne; e++) n_rc += p->events[e].type == TSL_EV_RECOMPUTE;
    j->n_items = no + n_rc;
    j->n_timed = ne - n_rc;

    tsl__ev_ix *sorted = malloc(sne * sizeof *sorted);
    j->items = malloc(((size_t)j->n_items + 1) * sizeof *j->items);
    j->trig_start = calloc(sno + 2, sizeof *j->trig_start);
    j->trig_list = malloc(sne * sizeof *j->trig_list);
    j->death_start = calloc(sno + 2, sizeof *j->death_start);
    j->death_list = malloc(snt * sizeof *j->death_list);
    j->data = malloc(snt * sizeof *j->data);
    j->ev_copy = malloc(sne * sizeof *j->ev_copy);
    j->alloc = calloc(snt, 1);
    j->readable = calloc(snt, 1);
    j->gen = calloc(snt, sizeof *j->gen);
    j->host_gen = malloc(snt * sizeof *j->host_gen);
    j->incoming = malloc(snt * sizeof *j->incoming);
    j->ev_state = calloc(sne, 1);
    j->ev_plan = calloc(sne, sizeof *j->ev_plan);
    j->tev_start = calloc(snt + 1, sizeof *j->tev_start);
    j->tev_list = malloc(sne * sizeof *j->tev_list);
    double *pe = malloc(sno * sizeof *pe);
    int32_t *last_read = malloc(snt * sizeof *last_read);
    if (!sorted || !j->items || !j->trig_start || !j->trig_list || !j->death_start ||
        !j->death_list || !j->data || !j->ev_copy || !j->alloc ||
        !j->readable || !j->gen || !j->host_gen || !j->incoming || !j->ev_state ||
        !j->ev_plan || !j->tev_start || !j->tev_list || !pe || !last_read) {
        free(last_read);
        free(pe);
        free(sorted);
        return tsl_fail(TSL_ERR_OOM, "simulate: out of host memory for job '%s'", w->job);
    }

    double at = 0.0;
    for (int32_t i = 0; i < no; i++) at = actual ? at + actual->us[i] : w->ops[i].end_us;
    j->vanilla = at; /* e_{n-1}: the period without a plan */

    /* recomputations first (grouped by precede), then the timed events */
    int32_t n_sorted_rc = p ? tsl__plan_exec_order(p, sorted) : 0; /* no plan: vanilla */
    TSL_ASSERT(n_sorted_rc == n_rc);
    tsl__exec_sequence(w, sorted, n_rc, j->items);
    /* the plan's timeline (planned waits included), then the items' times
     * at the actual latencies */
    tsl_status st = tsl__exec_times(w, p, plan_dev, NULL, j->items, j->n_items, pe);
    if (st == TSL_OK && actual)
        st = tsl__exec_times(w, p, plan_dev, actual->us, j->items, j->n_items, NULL);
    build_triggers(j, sorted + n_rc, ne - n_rc);
    build_tensor_events(j, sorted + n_rc, ne - n_rc, pe);
    free(pe);
    build_deaths(j, last_read);
    cold_host_copies(j, last_read);
    free(last_read);
    free(sorted);
    if (st != TSL_OK) return st;
    if (!tsl__preceding_releases(p, no, &j->pre_start, &j->pre_list))
        return tsl_fail(TSL_ERR_OOM, "simulate: out of host memory for job '%s'", w->job);

    for (int32_t x = 0; x < ne; x++) {
        const tsl_event *ev = &p->events[x];
        j->ev_copy[x] = 0.0;
        if (ev->type == TSL_EV_SWAP_IN || ev->type == TSL_EV_SWAP_OUT)
            j->ev_copy[x] = tsl_copy_us(dev, w->tensors[ev->tensor].bytes,
                                        ev->type == TSL_EV_SWAP_IN);
    }
    for (int32_t t = 0; t < nt; t++) {
        const tsl_wl_tensor *tt = &w->tensors[t];
        j->incoming[t] = -1;
        if (tsl_kind_is_persistent(tt->kind)) { /* cold start: all resident */
            j->alloc[t] = j->readable[t] = 1;
            j->persistent += tt->bytes;
        }
        if (tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_LABEL) j->data[j->n_data++] = t;
    }
    return TSL_OK;
}

void tsl__sim_job_free(tsl__sim_job *j) {
    free(j->items);
    free(j->trig_start);
    free(j->trig_list);
    free(j->death_start);
    free(j->death_list);
    free(j->data);
    free(j->ev_copy);
    free(j->alloc);
    free(j->readable);
    free(j->gen);
    free(j->host_gen);
    free(j->incoming);
    free(j->ev_state);
    free(j->ev_plan);
    free(j->tev_start);
    free(j->tev_list);
    free(j->pre_start);
    free(j->pre_list);
    memset(j, 0, sizeof *j);
}
