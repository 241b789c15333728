/* sim_compute.c - the compute resource shared by the jobs (or, with
 * TSL_SIM_COMPUTE_PER_JOB, one per job): readiness of each job's next item,
 * dispatch in order of ready time (ties: job index), item start and end
 * (see sim_engine.c). */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/remat.h"
#include "sim/sim_state.h"

/* The first tensor item `it` reads that is not readable, or -1. An op reads
 * its inputs; a recomputation reads its producer's inputs. */
int32_t tsl__sim_missing_input(const tsl__sim_job *j, const tsl__sim_item *it) {
    const tsl_wl_op *op = &j->w->ops[it->op];
    for (int k = 0; k < op->n_in; k++)
        if (!j->readable[op->in[k]]) return op->in[k];
    return -1;
}

static int32_t group_op(const tsl__sim_job *j, int32_t pos) {
    return tsl__exec_item_group(j->p, &j->items[pos]);
}

int32_t tsl__sim_pending_release(const tsl__sim_job *j, int32_t pos) {
    if (!j->pre_start) return -1;
    int32_t op = group_op(j, pos);
    if (pos > 0 && group_op(j, pos - 1) == op) return -1; /* not the op's first item */
    for (int32_t k = j->pre_start[op]; k < j->pre_start[op + 1]; k++)
        if (j->ev_state[j->pre_list[k]] != TSL__EV_DONE) return j->pre_list[k];
    return -1;
}

/* If job j's next item has its predecessor done, its data resident and (the
 * first item of an op) the releases preceding the op done, it becomes
 * ready now; the wait counts as a stall. */
void tsl__sim_try_ready(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    if (!p->in_iter || !p->order_ok || p->ready || p->running || p->pos >= j->n_items) return;
    if (tsl__sim_missing_input(j, &j->items[p->pos]) >= 0) return;
    if (tsl__sim_pending_release(j, p->pos) >= 0) return;
    double now = tsl__sim_rel_now(s, j->index);
    p->ready = 1;
    p->ready_at = now - p->order_ready <= TSL__SIM_EPS_US ? p->order_ready : now;
    p->ready_key = s->now;
    p->stall += p->ready_at - p->order_ready;
    tsl__sim_request_dispatch(s);
}

/* Start and end (relative) of job jx's ready item if it started now: at
 * its ready time if it became ready now (which may lie up to
 * TSL__SIM_EPS_US back, if the compute resource was free then), else now;
 * at its nominal times if that start is its nominal start, else shifted by
 * its lag. */
static void item_times(const sim *s, int jx, double *start, double *end) {
    const prog *p = &s->pr[jx];
    const tsl__sim_item *it = &s->job[jx].items[p->pos];
    int now_ready = tsl__sim_key_cmp(p->ready_key, s->now) == 0 &&
                    p->t0 + p->ready_at >= s->cu[s->per_job ? jx : 0].free_at;
    double st = now_ready ? p->ready_at : tsl__sim_rel_now(s, jx);
    *start = st;
    *end = st == it->ns ? it->ne : st + (it->ne - it->ns);
}

/* Starts job j's next item on the compute resource: allocates its outputs
 * that are not resident (a recomputation: its tensor) and the workspace of
 * the op it runs. */
static void start_item(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    const tsl_wl_op *op = &j->w->ops[it->op];
    item_times(s, j->index, &p->run_start, &p->run_end);
    p->ready = p->order_ok = 0;
    p->running = 1;
    s->cu[s->per_job ? j->index : 0].busy = 1;
    if (it->tensor >= 0) {
        if (!j->alloc[it->tensor]) tsl__sim_t_alloc(s, j, it->tensor);
    } else {
        for (int k = 0; k < op->n_out; k++) {
            int32_t t = op->out[k];
            if (!j->alloc[t]) tsl__sim_t_alloc(s, j, t);
            j->gen[t]++; /* a new value: older host copies are stale */
        }
    }
    p->ws = it->tensor >= 0 ? tsl__replay_block(j->w, it->tensor) : op->workspace;
    if (p->ws) tsl__sim_mem_add(s, j->index, p->ws);
    tsl__sim_push_job(s, j->index, p->run_end, PH_DONE, EV_OP_END, 0);
}

/* Serves the ready item with the earliest ready time (ties: job index) -
 * with a compute resource per job, every job's ready item whose resource
 * is free; in phase PH_ZERO only an item that takes no time. An item whose input
 * stopped being readable since it became ready (released, then swapped in
 * again, at the time it became ready: the frees and the swap-ins of a time
 * point come before the op starts) is ready no more: it waits for the copy
 * (tsl__sim_try_ready at the copy's end). */
void tsl__sim_dispatch(sim *s, int zero_only) {
    s->dispatch_q[zero_only ? 0 : 1] = 0;
    if (!s->per_job && s->cu[0].busy) return;
    int best = -1;
    for (int jx = 0; jx < s->n_jobs; jx++) {
        prog *p = &s->pr[jx];
        if (!p->ready || (s->per_job && s->cu[jx].busy)) continue;
        if (tsl__sim_missing_input(&s->job[jx], &s->job[jx].items[p->pos]) >= 0) {
            p->ready = 0;
            continue;
        }
        if (zero_only) {
            double st, en;
            item_times(s, jx, &st, &en);
            if (en != st) continue;
        }
        if (s->per_job) {
            start_item(s, &s->job[jx]);
            continue;
        }
        if (best < 0 || tsl__sim_key_cmp(p->ready_key, s->pr[best].ready_key) < 0) best = jx;
    }
    if (best >= 0) start_item(s, &s->job[best]);
}

static void log_item(sim *s, tsl__sim_job *j) {
    if (!s->log) return;
    const prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    tsl__sim_span sp = {.job = j->index, .iter = p->iter,
                        .kind = it->tensor >= 0 ? TSL__SPAN_RECOMPUTE : TSL__SPAN_OP,
                        .op = it->op, .tensor = it->tensor, .event = it->event,
                        .ready = p->t0 + p->ready_at, .start = p->t0 + p->run_start,
                        .end = p->t0 + p->run_end, .rel_start = p->run_start,
                        .rel_end = p->run_end, .wait = p->ready_at - p->order_ready};
    tsl__sim_log_span(s->log, &sp);
}

/* Job j's running item ended: its workspace and (activity analysis) the
 * tensors whose last read it was are freed, its outputs become readable,
 * and the events it triggers are scheduled. */
void tsl__sim_op_end(sim *s, tsl__sim_job *j) {
    prog *p = &s->pr[j->index];
    const tsl__sim_item *it = &j->items[p->pos];
    const tsl_wl_op *op = &j->w->ops[it->op];
    log_item(s, j);
    s->cu[s->per_job ? j->index : 0].busy = 0;
    s->cu[s->per_job ? j->index : 0].free_at = tsl__sim_abs_now(s);
    p->running = 0;
    if (p->ws) tsl__sim_mem_sub(s, j->index, p->ws);
    p->ws = 0;
    if (it->tensor >= 0) {
        j->readable[it->tensor] = 1;
    } else {
        for (int k = 0; k < op->n_out; k++) j->readable[op->out[k]] = 1;
        for (int32_t k = j->death_start[it->op + 1]; k < j->death_start[it->op + 2]; k++) {
            int32_t t = j->death_list[k];
            if (!j->alloc[t]) continue;
            tsl__sim_t_free(s, j, t);
            tsl__sim_freed(s, j, t);
        }
        tsl__sim_trigger(s, j, it->op);
    }
    p->pos++;
    if (p->pos == j->n_items) {
        p->ops_end = s->cur_rel;
        tsl__sim_check_iter_end(s, j);
    } else {
        p->order_ok = 1;
        p->order_ready = s->cur_rel;
        tsl__sim_try_ready(s, j);
    }
    tsl__sim_request_dispatch(s);
}
