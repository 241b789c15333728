/* sim_job.c - see sim_job.h. */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_job.h"

/* The planner's event order: trigger, delay, type, tensor, precede; the
 * index last, so that the order is total even on duplicate events. */
static int ev_before(const tsl_plan *p, int32_t x, int32_t y) {
    const tsl_event *a = &p->events[x], *b = &p->events[y];
    if (a->trigger != b->trigger) return a->trigger < b->trigger;
    if (a->delay_us != b->delay_us) return a->delay_us < b->delay_us;
    if (a->type != b->type) return a->type < b->type;
    if (a->tensor != b->tensor) return a->tensor < b->tensor;
    if (a->precede != b->precede) return a->precede < b->precede;
    return x < y;
}

/* Sorts v[0..n) (event indices) by ev_before; insertion sort: the groups
 * sorted here (events of one trigger, recomputations of one op) are small. */
static void sort_events(const tsl_plan *p, int32_t *v, int32_t n) {
    for (int32_t a = 1; a < n; a++)
        for (int32_t b = a; b > 0 && ev_before(p, v[b], v[b - 1]); b--) {
            int32_t x = v[b];
            v[b] = v[b - 1];
            v[b - 1] = x;
        }
}

/* Fills the executed sequence and its nominal times (sim_job.h) from the
 * op times s[], e[]. rc is scratch for n_ev indices. */
static void build_items(tsl__sim_job *j, const double *s, const double *e, int32_t *rc) {
    const tsl_workload *w = j->w;
    int32_t k = 0;
    double shift = 0.0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        int32_t n = 0;
        for (int32_t x = 0; x < j->n_ev; x++)
            if (j->p->events[x].type == TSL_EV_RECOMPUTE && j->p->events[x].precede == i)
                rc[n++] = x;
        sort_events(j->p, rc, n);
        for (int32_t r = 0; r < n; r++) {
            const tsl_event *ev = &j->p->events[rc[r]];
            int32_t g = w->tensors[ev->tensor].producer;
            j->items[k] = (tsl__sim_item){g, ev->tensor, rc[r], s[i] + shift, 0.0};
            shift += e[g] - s[g];
            j->items[k].ne = s[i] + shift;
            k++;
        }
        j->items[k] = (tsl__sim_item){i, -1, -1, s[i] + shift, e[i] + shift};
        k++;
    }
    TSL_ASSERT(k == j->n_items);
}

/* Groups the timed events (everything but recomputations) by trigger + 1,
 * keeping plan order inside a group. */
static void build_triggers(tsl__sim_job *j) {
    int32_t no = j->w->n_ops;
    for (int32_t e = 0; e < j->n_ev; e++) {
        const tsl_event *ev = &j->p->events[e];
        if (ev->type != TSL_EV_RECOMPUTE) j->trig_start[ev->trigger + 2]++;
    }
    for (int32_t i = 1; i < no + 3; i++) j->trig_start[i] += j->trig_start[i - 1];
    /* trig_start[g] is now the start of group g: fill it as a cursor */
    for (int32_t e = 0; e < j->n_ev; e++) {
        const tsl_event *ev = &j->p->events[e];
        if (ev->type != TSL_EV_RECOMPUTE) j->trig_list[j->trig_start[ev->trigger + 1]++] = e;
    }
    /* shift back: group g (trigger g-1) spans [trig_start[g], trig_start[g+1]) */
    for (int32_t i = no + 2; i > 0; i--) j->trig_start[i] = j->trig_start[i - 1];
    j->trig_start[0] = 0;
    for (int32_t g = 0; g <= no; g++)
        sort_events(j->p, j->trig_list + j->trig_start[g], j->trig_start[g + 1] - j->trig_start[g]);
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

tsl_status tsl__sim_job_init(tsl__sim_job *j, int index, const tsl_workload *w,
                             const tsl_plan *p, const tsl_latency_table *actual,
                             const tsl_device_profile *dev) {
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

    double *s = malloc(sno * sizeof *s), *e = malloc(sno * sizeof *e);
    int32_t *rc = malloc(sne * sizeof *rc);
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
    j->so_unissued = calloc(snt, sizeof *j->so_unissued);
    j->so_inflight = calloc(snt, sizeof *j->so_inflight);
    j->rel_pending = calloc(snt, sizeof *j->rel_pending);
    j->deferred_in = malloc(snt * sizeof *j->deferred_in);
    int32_t *last_read = malloc(snt * sizeof *last_read);
    if (!s || !e || !rc || !j->items || !j->trig_start || !j->trig_list || !j->death_start ||
        !j->death_list || !j->data || !j->ev_copy || !j->alloc ||
        !j->readable || !j->gen || !j->host_gen || !j->so_unissued || !j->so_inflight ||
        !j->rel_pending || !j->deferred_in || !last_read) {
        free(last_read);
        free(s);
        free(e);
        free(rc);
        return tsl_fail(TSL_ERR_OOM, "simulate: out of host memory for job '%s'", w->job);
    }

    double at = 0.0;
    for (int32_t i = 0; i < no; i++) {
        s[i] = actual ? at : w->ops[i].start_us;
        e[i] = at = actual ? at + actual->us[i] : w->ops[i].end_us;
    }
    j->vanilla = at; /* e_{n-1}: the period without a plan */

    build_items(j, s, e, rc);
    build_triggers(j);
    build_deaths(j, last_read);
    free(last_read);
    free(s);
    free(e);
    free(rc);

    for (int32_t x = 0; x < ne; x++) {
        const tsl_event *ev = &p->events[x];
        j->ev_copy[x] = 0.0;
        if (ev->type == TSL_EV_SWAP_IN || ev->type == TSL_EV_SWAP_OUT)
            j->ev_copy[x] = tsl_copy_us(dev, w->tensors[ev->tensor].bytes,
                                        ev->type == TSL_EV_SWAP_IN);
    }
    for (int32_t t = 0; t < nt; t++) {
        const tsl_wl_tensor *tt = &w->tensors[t];
        j->host_gen[t] = UINT32_MAX;
        j->deferred_in[t] = -1;
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
    free(j->so_unissued);
    free(j->so_inflight);
    free(j->rel_pending);
    free(j->deferred_in);
    memset(j, 0, sizeof *j);
}
