/*
 * drafts.c - the candidates at the jobs' peaks and what each one may
 * become (drafts.h): a swap whose copies hide in its free time, a swap
 * whose late swap-in makes the back access wait, or a recomputation
 * chained back to the nearest resident tensors; committing one to its
 * job's plan, undone if it does not hold; and the loop of one choice per
 * round to a budget (Capuchin's and TENSILE's planning to a budget).
 *
 * Times come from the kit (the job's timeline under its plan so far); the
 * copies are placed on the channels as they are booked, so a free time is
 * what is left once the other copies are where they are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/drafts.h"
#include "sched/remat.h"

/* ---- candidates -------------------------------------------------------------------- */

static int push_cand(tsl__drafter *D, const tsl__draft_cand *c) {
    if (D->n_cand == D->cap_cand) {
        int32_t cap = D->cap_cand ? 2 * D->cap_cand : 64;
        tsl__draft_cand *v = realloc(D->cand, (size_t)cap * sizeof *v);
        if (!v) {
            D->K->status = tsl_fail(TSL_ERR_OOM, "planner: out of host memory for %d candidates",
                                   cap);
            return 0;
        }
        D->cand = v;
        D->cap_cand = cap;
    }
    D->cand[D->n_cand++] = *c;
    return 1;
}

/* The swap-in event of t that precedes op b and is issued by J's peak
 * time (it lands t there), or -1. */
static int32_t early_swap_in(const tsl__pjob *J, int32_t t, int32_t b) {
    for (int32_t k = J->ev_head[t]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_SWAP_IN && e->precede == b && J->ev_time[k] <= J->pk.time) return k;
    }
    return -1;
}

/* 1 if J's peak lies in persistent tensor t's wrap gap (kb, ka: its
 * accesses before and after the peak op, one of them -1): no event of t
 * planned, its first access a read, some access a write (the update its
 * across-iteration swap-out copies). */
static int wraps(const tsl__pjob *J, int32_t t, int32_t kb, int32_t ka) {
    const tsl__activity *a = &J->act;
    if (!a->persistent[t] || J->ev_head[t] >= 0 || (kb < 0 && ka < 0)) return 0;
    int32_t first = a->acc_off[t], last = a->acc_off[t + 1] - 1;
    if (!a->acc[first].reads) return 0;
    for (int32_t k = first; k <= last; k++)
        if (a->acc[k].writes) return 1;
    return 0;
}

int32_t tsl__drafts_candidates(tsl__drafter *D) {
    D->n_cand = 0;
    for (int j = 0; j < D->K->n_jobs; j++) {
        size_t min_bytes = D->min_bytes[j];
        tsl__pjob *J = &D->K->jobs[j];
        const tsl_workload *w = J->w;
        const tsl__activity *a = &J->act;
        int32_t op = J->pk.op;
        if (op < 0) continue; /* the peak is the data load: nothing to move */
        tsl__sweep sw;
        tsl__sweep_run(w, a, &J->tl, J->eff, J->n_eff, J->absent0, J->resident, J->pk.step, &sw,
                       NULL);
        tsl__pjob_keep_peak_users(J); /* what runs at the peak keeps its tensors */
        for (int32_t t = 0; t < w->n_tensors; t++) {
            if (!J->resident[t] || a->data[t] || w->tensors[t].bytes == 0 ||
                w->tensors[t].bytes < min_bytes)
                continue;
            int32_t kb = tsl__acc_before(a, t, op), ka = tsl__acc_after(a, t, op);
            if (kb < 0 || ka < 0) {
                if (D->across && w->tensors[t].bytes >= D->min_wrap[j] && wraps(J, t, kb, ka)) {
                    int32_t last = a->acc_off[t + 1] - 1;
                    tsl__draft_cand c = {.job = j, .tensor = t, .gap = last, .wrap = 1,
                                         .evict_op = a->acc[last].op,
                                         .back_op = a->acc[a->acc_off[t]].op, .late_in = -1,
                                         .bytes = w->tensors[t].bytes};
                    if (!D->done[j][last] && !push_cand(D, &c)) return -1;
                }
                continue;
            }
            if (!a->acc[ka].reads) continue;
            int32_t late = D->done[j][kb] && D->late_ins && !D->late_done[j][kb]
                               ? early_swap_in(J, t, a->acc[ka].op)
                               : -1;
            if (D->done[j][kb] && late < 0) continue;
            tsl__draft_cand c = {.job = j, .tensor = t, .gap = kb, .evict_op = a->acc[kb].op,
                                 .back_op = a->acc[ka].op, .late_in = late,
                                 .bytes = w->tensors[t].bytes};
            if (!push_cand(D, &c)) return -1;
        }
    }
    return D->n_cand;
}

/* ---- swaps ---------------------------------------------------------------------------- */

/* The earliest time a swap-in may be issued after the position (op, rc)
 * of J's timeline: once it has ended (a swap-in allocates as it starts:
 * one issued while it runs adds to its load), after its start. */
static double after_position(const tsl__pjob *J, int32_t op, int32_t rc) {
    const tsl__timeline *tl = &J->tl;
    double t_end = rc >= 0 ? tl->rc_end[rc] : tl->e[op];
    return fmax(t_end, nextafter(rc >= 0 ? tl->rc_start[rc] : tl->s[op], INFINITY));
}

/* The same after J's peak. */
static double after_peak(const tsl__pjob *J) {
    return fmax(after_position(J, J->pk.op, J->pk.rc), nextafter(J->pk.time, INFINITY));
}

/* The first position of op `op` in J's timeline: its first recomputation,
 * or -1 (the op itself). */
static int32_t first_rc(const tsl__pjob *J, int32_t op) {
    return J->tl.rc_off[op] < J->tl.rc_off[op + 1] ? J->tl.rc_off[op] : -1;
}

/* Drafts into d the leaving half of c's swap with a planned wait for its
 * swap-out: the swap-out as early as the device-to-host channel allows
 * after the evicted access, anchored before the op at J's peak (a later
 * time on that op's predecessor with a longer delay), ending within the
 * period (the ops from the peak op on move later by the wait); the release
 * anchored with it, preceding the peak op, which starts once the copy has
 * ended. Returns the release time (the copy's end) and sets *stall (how
 * much later the peak op's first position starts), or -1 if none fits. */
static double draft_out_wait(tsl__kit *K, tsl__pjob *J, const tsl__draft_cand *c,
                             tsl__swap_draft *d, double *stall) {
    const tsl__timeline *tl = &J->tl;
    int32_t P = J->pk.op, t = c->tensor;
    if (c->evict_op >= P) return -1;
    double dur = tsl_copy_us(J->dev, c->bytes, 0);
    tsl__canon_ctx cx = {.tl = tl, .capped = 1, .max_trigger = P - 1};
    double x = tsl__chan_earliest(tsl__chan_of(K, J, 0), tl->e[c->evict_op], dur,
                                  tl->period - tsl__margin(tl->period), tsl__canon_tl, &cx);
    if (x < 0 || cx.trigger < c->evict_op || !tsl__pjob_can_swap_out(J, t, x, x + dur)) return -1;
    d->has_out = 1;
    d->so_trig = d->rel_trig = cx.trigger;
    d->so_delay = d->rel_delay = cx.delay;
    d->so_issue = x;
    d->so_end = x + dur;
    d->rel_waits = 1;
    d->rel_before = P;
    *stall = fmax(0.0, d->so_end - tsl__pjob_would_start(J, P, first_rc(J, P)));
    return d->so_end;
}

/* Drafts d's swap-in of c's tensor before c's back access b, issued at
 * `lo` at the earliest: with `hidden`, as late as the host-to-device
 * channel allows, landing by b's start; else as early as it allows, b
 * waiting for it if it is late (c->stall). Returns 0 if none fits. */
static int draft_swap_in(tsl__kit *K, tsl__pjob *J, tsl__draft_cand *c, tsl__swap_draft *d,
                         double lo, int hidden) {
    const tsl__timeline *tl = &J->tl;
    int32_t b = c->back_op;
    if (hidden) return tsl__place_swap_in(K, J, lo, tl->s[b], b, d) && d->si_trig < b;
    /* as early as the channel allows: the back access waits for a copy
     * under way when it would start, never for one issued later */
    double din = tsl_copy_us(J->dev, c->bytes, 1);
    double W = tsl__pjob_would_start(J, b, -1), S = tl->s[b];
    tsl__canon_ctx cx = {.tl = tl};
    double x = tsl__chan_earliest(tsl__chan_of(K, J, 1), lo, din, fmax(W + din, S),
                                  tsl__canon_tl, &cx);
    if (x < 0 || !(x <= W || x + din <= S) || cx.trigger >= b) return 0;
    d->si_trig = cx.trigger;
    d->si_delay = cx.delay;
    d->si_issue = x;
    d->si_end = x + din;
    d->si_precede = b;
    c->stall = fmax(0.0, d->si_end - W);
    return 1;
}

/* c's swap across the iteration's boundary (c->wrap; tensile_across.c's
 * option A drafted against the peak): the swap-out after the tensor's last
 * write, the release after its last access, by the peak if the peak comes
 * after it (else by the iteration's end); the swap-in before its first
 * access, issued after the peak if the peak comes before it. */
static void draft_wrap(tsl__drafter *D, tsl__draft_cand *c, int hidden) {
    tsl__kit *K = D->K;
    tsl__pjob *J = &K->jobs[c->job];
    const tsl__timeline *tl = &J->tl;
    const tsl__activity *a = &J->act;
    int32_t t = c->tensor, first = a->acc_off[t], wr = c->gap;
    while (wr >= first && !a->acc[wr].writes) wr--;
    int head = J->pk.op < c->back_op;
    double by = head ? tl->period - tsl__margin(tl->period) : J->pk.time;
    tsl__swap_draft d = {.tensor = t, .gap = c->gap};
    double rel = tsl__place_swap_out(K, J, t, tl->e[a->acc[wr].op], c->evict_op, by, &d);
    double out_stall = 0.0;
    if ((rel < 0 || rel > by || !d.has_out) && !head && !hidden && D->out_waits) {
        /* the peak op waits for it (its swap-in, before the first access,
         * comes before the peak: the wait does not move it) */
        d = (tsl__swap_draft){.tensor = t, .gap = c->gap};
        rel = draft_out_wait(K, J, c, &d, &out_stall);
    }
    if (rel < 0 || (rel > by && !d.rel_waits) || !d.has_out) return;
    if (!draft_swap_in(K, J, c, &d, head ? after_peak(J) : 0.0, hidden)) return;
    c->stall += out_stall;
    /* on a channel both directions share, its copies must not overlap (a
     * late swap-in can run on past the swap-out of a tensor written first
     * by its first access) */
    if (tsl__chan_of(K, J, 0) == tsl__chan_of(K, J, 1) && d.so_issue < d.si_end &&
        d.si_issue < d.so_end)
        return;
    d.n_abs = 2;
    d.abs_lo[0] = 0.0; /* absent from the iteration start */
    d.abs_hi[0] = d.si_issue;
    d.abs_lo[1] = rel; /* and from the release to the end */
    d.abs_hi[1] = INFINITY;
    c->ft = tl->period - d.so_end + d.si_issue;
    c->sw = d;
    c->swap_ok = 1;
}

void tsl__draft_swap(tsl__drafter *D, tsl__draft_cand *c, int hidden) {
    c->swap_ok = c->has_across = 0;
    c->ft = c->stall = 0.0;
    if (!D->swap) return;
    if (c->wrap) {
        draft_wrap(D, c, hidden);
        return;
    }
    tsl__kit *K = D->K;
    tsl__pjob *J = &K->jobs[c->job];
    const tsl__timeline *tl = &J->tl;
    double t_peak = J->pk.time;
    tsl__swap_draft d = {.tensor = c->tensor, .gap = c->gap};
    int clean = 0;
    /* out after the evicted access, gone by the peak (a late swap-in: the
     * issue of the swap-in it moves, which the new one comes after) */
    double rel = c->late_in >= 0 ? J->ev_time[c->late_in]
                                 : tsl__place_swap_out(K, J, c->tensor, tl->e[c->evict_op],
                                                       c->evict_op, t_peak, &d);
    if ((rel < 0 || rel > t_peak) && c->late_in < 0 && D->clean_drops &&
        tsl__clean_drop_ok(J, c->tensor, c->gap) && tsl__place_across(K, J, c->tensor, &c->across)) {
        d = (tsl__swap_draft){.tensor = c->tensor, .gap = c->gap, .rel_trig = c->evict_op};
        rel = tl->e[c->evict_op]; /* a clean drop: nothing of it planned, it goes at once */
        clean = 1;
    }
    double out_stall = 0.0;
    if ((rel < 0 || rel > t_peak) && c->late_in < 0 && !clean && !hidden && D->out_waits) {
        d = (tsl__swap_draft){.tensor = c->tensor, .gap = c->gap};
        rel = draft_out_wait(K, J, c, &d, &out_stall);
    }
    if (rel < 0 || (rel > t_peak && !d.rel_waits)) return;
    double lo = fmax(rel, after_peak(J));
    double left = d.has_out ? d.so_end : rel;
    if (!draft_swap_in(K, J, c, &d, lo, hidden)) return;
    c->stall += out_stall; /* (the back access's wait estimated on the timeline without it) */
    if (clean && !tsl__drafts_disjoint(K, J, &c->across, &d)) return;
    c->ft = d.si_issue - left;
    c->sw = d;
    c->swap_ok = 1;
    c->has_across = clean;
}

/* ---- recomputations -------------------------------------------------------------------- */

/* 1 if tensor x of w can be regenerated by re-running its producer
 * (remat.h, tsl__replays: other outputs to scratch) with a positive
 * latency; with `single`, a producer with one output only. */
static int replayable(const tsl_workload *w, const tsl__activity *a, int32_t x, int single) {
    if (a->persistent[x] || a->data[x] || !tsl__replays(w, x)) return 0;
    const tsl_wl_op *o = &w->ops[w->tensors[x].producer];
    return o->end_us - o->start_us > 0 && (!single || o->n_out == 1);
}

/* 1 if an op after q and before b writes y. */
static int written_between(const tsl__activity *a, int32_t y, int32_t q, int32_t b) {
    for (int32_t k = a->acc_off[y]; k < a->acc_off[y + 1]; k++)
        if (a->acc[k].writes && a->acc[k].op > q && a->acc[k].op < b) return 1;
    return 0;
}

/* 1 if J's plan recomputes y before op b. */
static int recomputed_before(const tsl__pjob *J, int32_t y, int32_t b) {
    for (int32_t k = J->ev_head[y]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_RECOMPUTE && e->precede == b) return 1;
    }
    return 0;
}

static int in_chain(const tsl__draft_cand *c, int32_t y) {
    for (int i = 0; i < c->n_chain; i++)
        if (c->chain[i] == y) return 1;
    return 0;
}

/* 1 if every event of J's plan that brings y back (a swap-in, a
 * recomputation) comes after op b: issued after b ends, or recomputed
 * before a later op. A chain member read again after b is then released
 * after b as if it were dead there, and what the plan does for its later
 * reads is unchanged. */
static int back_after(const tsl__pjob *J, int32_t y, int32_t b) {
    for (int32_t k = J->ev_head[y]; k >= 0; k = J->ev_next[k]) {
        const tsl_event *e = &J->plan->events[k];
        if (e->type == TSL_EV_RECOMPUTE && e->precede <= b) return 0;
        if (e->type == TSL_EV_SWAP_IN && J->ev_time[k] <= J->tl.e[b]) return 0;
    }
    return 1;
}

/* Completes c's chain with what x's producer needs when the chain runs
 * before op b from `at`: each input resident and ready then, or
 * regenerated first (added to the chain after its own ancestors). Returns
 * 0 if an input can be neither. */
static int need(const tsl__pjob *J, tsl__draft_cand *c, int32_t x, int32_t b, double at,
                int single) {
    const tsl_workload *w = J->w;
    const tsl__activity *a = &J->act;
    int32_t q = w->tensors[x].producer;
    const tsl_wl_op *o = &w->ops[q];
    for (int i = 0; i < o->n_in; i++) {
        int32_t y = o->in[i];
        if (in_chain(c, y)) continue;
        if (written_between(a, y, q, b)) return 0; /* its value changed since q ran */
        if (tsl__pjob_resident_at(J, y, at)) {
            if (!tsl__rc_input_ready(J, y, b, at, at)) return 0;
            continue;
        }
        /* gone: regenerate it in turn - dead by b (nothing reads it again,
         * so nothing else of the plan brings it back) or brought back for
         * its later reads only after b (back_after) - run before x */
        if (c->n_chain >= TSL__CHAIN_MAX || y > x || !replayable(w, a, y, single) ||
            (tsl__last_access_op(a, y) >= b && !back_after(J, y, b)) ||
            recomputed_before(J, y, b))
            return 0;
        if (!need(J, c, y, b, at, single) || c->n_chain >= TSL__CHAIN_MAX) return 0; /* (its ancestors
                                                                          may fill the chain) */
        c->chain[c->n_chain++] = y;
    }
    return 1;
}

/* The first op after `after` and before b that a recomputation of J's
 * plan reading t precedes (it finds t resident there: released after
 * `after`, t must be back by then), or b. The timeline holds the
 * recomputations by the op they precede, in op order. */
static int32_t first_rc_reader(const tsl__pjob *J, int32_t t, int32_t after, int32_t b) {
    const tsl_workload *w = J->w;
    const tsl__timeline *tl = &J->tl;
    for (int32_t p = after + 1; p < b; p++)
        for (int32_t r = tl->rc_off[p]; r < tl->rc_off[p + 1]; r++) {
            const tsl_wl_op *q = &w->ops[w->tensors[tl->rc_tensor[r]].producer];
            for (int i = 0; i < q->n_in; i++)
                if (q->in[i] == t) return p;
        }
    return b;
}

void tsl__draft_rc(tsl__drafter *D, tsl__draft_cand *c) {
    c->rc_ok = 0;
    c->n_chain = 0;
    c->rc_us = 0.0;
    if (!D->recompute) return;
    const tsl__pjob *J = &D->K->jobs[c->job];
    const tsl_workload *w = J->w;
    int32_t t = c->tensor, b = c->back_op;
    /* a tensor with events of the plan: only a late swap-in's, turned into it */
    int convert = D->convert && c->late_in >= 0;
    if (!replayable(w, &J->act, t, D->single_output) || (J->ev_head[t] >= 0 && !convert)) return;
    /* before the back access, or before an earlier recomputation of the
     * plan reading t, as long as that still comes after the peak */
    b = first_rc_reader(J, t, c->evict_op, b);
    if (b <= J->pk.op) return;
    c->rc_before = b;
    /* the chain runs with the recomputations already planned before b */
    const tsl__timeline *tl = &J->tl;
    double at = tl->rc_off[b] < tl->rc_off[b + 1] ? tl->rc_start[tl->rc_off[b]] : tl->s[b];
    if (!need(J, c, t, b, at, D->single_output)) return;
    for (int i = 1; i < c->n_chain; i++) /* the order they run in: ascending index */
        for (int k = i; k > 0 && c->chain[k] < c->chain[k - 1]; k--) {
            int32_t y = c->chain[k];
            c->chain[k] = c->chain[k - 1];
            c->chain[k - 1] = y;
        }
    double us = tsl__remat_cost(w, t);
    for (int i = 0; i < c->n_chain; i++) us += tsl__remat_cost(w, c->chain[i]);
    c->rc_us = us;
    c->rc_ok = 1;
}

/* ---- committing ------------------------------------------------------------------------- */

/* 1 if every recomputation of J's plan finds its producer's inputs ready
 * while it runs: resident with their data in place (tsl__rc_input_ready),
 * or regenerated before it for the same op (a chain). A commit checks them
 * all: a swap's release can take away a tensor an earlier recomputation
 * reads (recomputations' reads are not the accesses swaps are placed
 * between). */
static int rc_inputs_ready(const tsl__pjob *J) {
    const tsl__timeline *tl = &J->tl;
    for (int32_t b = 0; b < J->w->n_ops; b++)
        for (int32_t r = tl->rc_off[b]; r < tl->rc_off[b + 1]; r++) {
            const tsl_wl_op *o = &J->w->ops[J->w->tensors[tl->rc_tensor[r]].producer];
            for (int i = 0; i < o->n_in; i++) {
                int chained = 0;
                for (int32_t r2 = tl->rc_off[b]; r2 < r && !chained; r2++)
                    chained = tl->rc_tensor[r2] == o->in[i];
                if (!chained && !tsl__rc_input_ready(J, o->in[i], b, tl->rc_start[r], tl->rc_end[r]))
                    return 0;
            }
        }
    return 1;
}

/* After a commit's events were added and its copies re-booked: J analysed
 * again, and the commit kept (1) unless it raised J's peak above `before`
 * or left a recomputation without its inputs - then undone (0; old: the
 * copies' pairs before it, n0 its events before it). */
static int kept(tsl__kit *K, tsl__pjob *J, int32_t n0, const double *old, size_t before) {
    tsl__pjob_analyse(J);
    if (J->pk.peak <= before && rc_inputs_ready(J)) return 1;
    tsl__kit_undo(K, J, n0, NULL, old);
    return 0;
}

/* Commits c's late swap-in: its swap-in event re-anchored at the draft's
 * trigger and delay, J re-timed, its copies re-booked; undone unless J's
 * peak did not rise and its recomputations find their inputs. */
static int commit_late_in(tsl__kit *K, tsl__pjob *J, const tsl__draft_cand *c) {
    double *old = tsl__kit_copy_buf(K, J, 0);
    if (!old) return 0;
    tsl__pjob_copy_times(J, old);
    size_t before = J->pk.peak;
    tsl_event *e = &J->plan->events[c->late_in], was = *e;
    e->trigger = c->sw.si_trig;
    e->delay_us = c->sw.si_delay;
    tsl_status st = tsl__pjob_retime(J, J->dev);
    int ok = st == TSL_OK && tsl__kit_rebook(K, J, old); /* else booked at old again */
    if (ok) {
        tsl__pjob_analyse(J);
        ok = J->pk.peak <= before && rc_inputs_ready(J);
        if (!ok) { /* the copies at their new times off, the old ones back */
            *e = was;
            tsl__kit_undo(K, J, J->plan->n_events, NULL, old);
        }
    } else {
        if (st != TSL_OK) K->status = st;
        *e = was;
        if (tsl__pjob_retime(J, J->dev) != TSL_OK) K->status = TSL_ERR_OOM;
        tsl__pjob_analyse(J);
    }
    free(old);
    return ok && K->status == TSL_OK;
}

/* Commits c's swap with a planned wait for its swap-out (c->sw.rel_waits):
 * the swap-out and the release preceding the peak op, J re-timed with the
 * wait and its copies re-booked; then the swap-in - drafted again on that
 * timeline (hidden if it can be, else as early as the channel allows), or
 * for a swap across the boundary the draft's own, before the first access
 * and so before the peak - committed, re-booking again if it waits too;
 * undone unless J's peak did not rise and its recomputations find their
 * inputs. */
static int commit_out_wait(tsl__kit *K, tsl__pjob *J, const tsl__draft_cand *c) {
    tsl__swap_draft d = c->sw;
    tsl__draft_cand cc = *c;
    int32_t P = d.rel_before;
    double *old = tsl__kit_copy_buf(K, J, 1), *mid = tsl__kit_copy_buf(K, J, 2);
    int ok = old && mid;
    int32_t n0 = J->plan->n_events, m = ok ? tsl__pjob_copy_times(J, old) : 0;
    size_t before = J->pk.peak;
    if (ok) ok = tsl__commit_swap_out(K, J, &d);
    if (ok) {
        old[2 * m] = d.so_issue; /* anchored before P: the wait does not move it */
        old[2 * m + 1] = d.so_end;
        if (!tsl__kit_rebook(K, J, old)) { /* booked at old again */
            tsl__kit_undo(K, J, n0, old, old);
            ok = 0;
        }
    }
    if (ok && !c->wrap) { /* the swap-in after op P (its last position) as it now runs */
        double lo = fmax(d.so_end, after_position(J, P, -1));
        ok = draft_swap_in(K, J, &cc, &d, lo, 1) || draft_swap_in(K, J, &cc, &d, lo, 0);
        if (!ok) tsl__kit_undo(K, J, n0, NULL, old);
    }
    int32_t n_wait = J->tl.n_wait;
    double stall = J->tl.stall;
    int32_t m2 = ok ? tsl__pjob_copy_times(J, mid) : 0;
    if (ok && !tsl__commit_swap_in(K, J, &d)) {
        tsl__kit_undo(K, J, n0, NULL, old);
        ok = 0;
    }
    if (ok && (J->tl.n_wait != n_wait || J->tl.stall != stall)) {
        mid[2 * m2] = d.si_issue;
        mid[2 * m2 + 1] = d.si_end;
        if (!tsl__kit_rebook(K, J, mid)) { /* booked at mid again */
            tsl__kit_undo(K, J, n0, mid, old);
            ok = 0;
        }
    }
    if (ok) ok = kept(K, J, n0, old, before);
    free(old);
    free(mid);
    return ok && K->status == TSL_OK;
}

int tsl__draft_commit_swap(tsl__drafter *D, const tsl__draft_cand *c) {
    tsl__kit *K = D->K;
    tsl__pjob *J = &K->jobs[c->job];
    if (c->late_in >= 0) return commit_late_in(K, J, c);
    if (c->sw.rel_waits) return commit_out_wait(K, J, c);
    const tsl__swap_draft *d = &c->sw;
    double *old = tsl__kit_copy_buf(K, J, 4);
    if (!old) return 0;
    int32_t n0 = J->plan->n_events, m = tsl__pjob_copy_times(J, old);
    size_t before = J->pk.peak;
    int ok = !c->has_across || tsl__commit_swap(K, J, &c->across); /* what makes it clean */
    if (ok && c->has_across) { /* its bookings, in event order, for a re-booking below */
        const double b[4] = {c->across.so_issue, c->across.so_end, c->across.si_issue,
                             c->across.si_end};
        memcpy(old + 2 * m, b, sizeof b);
        m += 2;
    }
    if (ok && !tsl__commit_swap_out(K, J, d)) {
        if (c->has_across) tsl__kit_undo(K, J, n0, NULL, old);
        ok = 0;
    }
    if (ok && d->has_out) { /* the swap-out's own booking: the swap-in cannot move it */
        old[2 * m] = d->so_issue;
        old[2 * m + 1] = d->so_end;
        m++;
    }
    int32_t n_wait = J->tl.n_wait;
    double stall = J->tl.stall;
    if (ok && !tsl__commit_swap_in(K, J, d)) {
        tsl__kit_undo(K, J, n0, NULL, old);
        ok = 0;
    }
    if (ok && (J->tl.n_wait != n_wait || J->tl.stall != stall)) {
        /* a planned wait moved the later ops: their copies move with them */
        old[2 * m] = d->si_issue;
        old[2 * m + 1] = d->si_end;
        if (!tsl__kit_rebook(K, J, old)) { /* booked at old again */
            tsl__kit_undo(K, J, n0, old, old);
            ok = 0;
        }
    }
    if (ok) ok = kept(K, J, n0, old, before);
    free(old);
    return ok && K->status == TSL_OK;
}

/* Adds to J's plan, for each member of c's chain, the event of `type`:
 * its recomputation before op b (RECOMPUTE), or its release after b
 * (RELEASE: the chain served only c's recomputation). */
static tsl_status add_chain(tsl__pjob *J, const tsl__draft_cand *c, int32_t b,
                            tsl_event_type type) {
    tsl_status st = TSL_OK;
    for (int i = 0; i < c->n_chain && st == TSL_OK; i++)
        st = tsl__pjob_add_event(J, J->dev,
                                 type == TSL_EV_RECOMPUTE
                                     ? (tsl_event){TSL_EV_RECOMPUTE, c->chain[i], -1, 0.0, b}
                                     : (tsl_event){TSL_EV_RELEASE, c->chain[i], b, 0.0, -1});
    return st;
}

/* The index among J's copies (tsl__pjob_copy_times' order) of copy event k. */
static int32_t copy_index(const tsl__pjob *J, int32_t k) {
    int32_t m = 0;
    for (int32_t i = 0; i < k; i++)
        m += J->plan->events[i].type == TSL_EV_SWAP_OUT || J->plan->events[i].type == TSL_EV_SWAP_IN;
    return m;
}

/* Puts J's swap-in event k back as `was` (it was turned into a
 * recomputation and J's other copies are booked at their pre-commit
 * times): J re-timed, its copy booked at (issue, end) again, J analysed. */
static void unconvert(tsl__kit *K, tsl__pjob *J, int32_t k, tsl_event was, double issue,
                      double end) {
    tsl_status st = tsl__pjob_set_event(J, J->dev, k, was);
    if (st == TSL_OK) st = tsl__chan_book(tsl__chan_of(K, J, 1), issue, end);
    if (st != TSL_OK) K->status = st;
    tsl__pjob_analyse(J);
}

/* Commits c's recomputation in place of its late swap-in (D->convert):
 * that swap-in event becomes the recomputation before c->rc_before and
 * its copy is unbooked; the chain runs before it and is released after
 * that op; J re-timed, its copies re-booked. Undone unless J's peak did
 * not rise and its recomputations find their inputs. */
static int commit_convert(tsl__drafter *D, const tsl__draft_cand *c) {
    tsl__kit *K = D->K;
    tsl__pjob *J = &K->jobs[c->job];
    int32_t k = c->late_in, t = c->tensor, b = c->rc_before;
    double *old = tsl__kit_copy_buf(K, J, 0);
    if (!old) return 0;
    int32_t m = tsl__pjob_copy_times(J, old), mk = copy_index(J, k);
    double si_issue = old[2 * mk], si_end = old[2 * mk + 1];
    /* the other copies' times, in event order once k is no copy */
    memmove(old + 2 * mk, old + 2 * mk + 2, (size_t)(m - mk - 1) * 2 * sizeof *old);
    size_t before = J->pk.peak;
    tsl_event was = J->plan->events[k];
    int32_t n0 = J->plan->n_events;
    tsl__chan_unbook(tsl__chan_of(K, J, 1), si_issue, si_end);
    tsl_status st = tsl__pjob_set_event(J, J->dev, k, (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, b});
    if (st == TSL_OK) st = add_chain(J, c, b, TSL_EV_RECOMPUTE);
    if (st == TSL_OK) st = add_chain(J, c, b, TSL_EV_RELEASE);
    if (st == TSL_OK) st = tsl__pjob_retime(J, J->dev);
    int ok = st == TSL_OK && tsl__kit_rebook(K, J, old); /* else booked at old again */
    if (!ok) {
        if (st != TSL_OK) K->status = st;
        tsl__pjob_pop_events(J, J->plan->n_events - n0);
        unconvert(K, J, k, was, si_issue, si_end);
    } else {
        tsl__pjob_analyse(J);
        ok = J->pk.peak <= before && rc_inputs_ready(J);
        if (!ok) {
            tsl__kit_undo(K, J, n0, NULL, old); /* the chain gone, the others at old */
            unconvert(K, J, k, was, si_issue, si_end);
        }
    }
    free(old);
    return ok && K->status == TSL_OK;
}

int tsl__draft_commit_rc(tsl__drafter *D, const tsl__draft_cand *c) {
    tsl__kit *K = D->K;
    tsl__pjob *J = &K->jobs[c->job];
    TSL_ASSERT(c->rc_ok); /* drafted: rc_before and the chain are set */
    if (c->late_in >= 0) return commit_convert(D, c);
    int32_t t = c->tensor, b = c->rc_before;
    double *old = tsl__kit_copy_buf(K, J, 0);
    if (!old) return 0;
    int32_t n0 = J->plan->n_events;
    tsl__pjob_copy_times(J, old);
    size_t before = J->pk.peak;
    tsl_status st = tsl__pjob_add_event(J, J->dev, (tsl_event){TSL_EV_RELEASE, t, c->evict_op, 0.0, -1});
    if (st == TSL_OK) st = add_chain(J, c, b, TSL_EV_RECOMPUTE);
    if (st == TSL_OK)
        st = tsl__pjob_add_event(J, J->dev, (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, b});
    if (st == TSL_OK) st = add_chain(J, c, b, TSL_EV_RELEASE);
    if (st == TSL_OK) st = tsl__pjob_retime(J, J->dev);
    /* out of host memory, or the recomputations moved a copy onto another
     * or past the period: nothing of it stays (the bookings are as before) */
    int ok = st == TSL_OK && tsl__kit_rebook(K, J, old);
    if (!ok) {
        if (st != TSL_OK) K->status = st;
        tsl__pjob_pop_events(J, J->plan->n_events - n0);
        if (tsl__pjob_retime(J, J->dev) != TSL_OK) K->status = TSL_ERR_OOM;
        tsl__pjob_analyse(J);
    }
    if (ok) ok = kept(K, J, n0, old, before);
    free(old);
    return ok && K->status == TSL_OK;
}

/* ---- one choice per round ---------------------------------------------------------------- */

void tsl__drafter_free(tsl__drafter *D) {
    free(D->cand);
    D->cand = NULL;
    D->n_cand = D->cap_cand = 0;
}

size_t tsl__kit_peaks(const tsl__kit *K) {
    size_t s = 0;
    for (int j = 0; j < K->n_jobs; j++) s += K->jobs[j].pk.peak;
    return s;
}

int tsl__draft_first_of_equals(const tsl__draft_cand *a, const tsl__draft_cand *b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    if (a->job != b->job) return a->job < b->job;
    return a->tensor < b->tensor;
}

int tsl__drafts_run(tsl__drafter *D, size_t budget, tsl__draft_pick_fn pick, void *ctx) {
    int rounds = 0;
    while (tsl__kit_peaks(D->K) > budget && D->K->status == TSL_OK) {
        if (tsl__drafts_candidates(D) <= 0) break;
        int swap = 1;
        int32_t i = pick(D, ctx, &swap);
        if (i < 0 || D->K->status != TSL_OK) break;
        const tsl__draft_cand *c = &D->cand[i];
        if (c->late_in >= 0) D->late_done[c->job][c->gap] = 1; /* moved or given up */
        else D->done[c->job][c->gap] = 1; /* planned or given up: never tried again */
        if (swap) tsl__draft_commit_swap(D, c);
        else tsl__draft_commit_rc(D, c);
        rounds++;
    }
    return rounds;
}
