/*
 * swap_list.c - placing a policy's whole list of swaps at once, in the
 * orders the policy gives, with compute waiting where a copy is late (a
 * planned wait, docs/SCHEDULING.md): the machinery of the policies that
 * decide first which tensors leave the device and then schedule their
 * copies as the copy streams of their papers would (vDNN, AutoSwap),
 * rather than one swap at a time against the current peak (TENSILE).
 *
 * Every swap-out is placed first, in the swap-outs' order: as early as the
 * device-to-host channel allows at or after the end of its `out_after` op
 * (a FIFO copy stream when the order is that of those times), ending
 * before its tensor's next read (for a swap across the iteration boundary:
 * by the period), the release triggered by its `last` op or by the op
 * during which the copy starts, whichever is later (the kit's
 * tsl__place_swap_out: the release waits for the copy). No op waits for a
 * swap-out (the semantics have no such wait): a slow copy holds its
 * tensor's memory longer instead.
 *
 * Then every swap-in, in the swap-ins' order, from the later of the end of
 * its `in_after` op and its tensor's release (for a swap across the
 * boundary: from the end of `in_after`, or time 0), either as early as the
 * host-to-device channel allows (`in_early`) or as late as it allows
 * landing by the start of the op it precedes; the other way is tried when
 * the first fails. An early copy still under way when its op would start
 * makes the op wait (the kit re-times the job, and this file re-books the
 * job's copies that moved, tsl__kit_rebook); a copy starting after its op
 * would start cannot be waited for (the semantics) and is valid only if it
 * lands before the op really starts. A swap-in that fits neither way, or
 * whose wait moves another copy onto a booked one, cannot be placed: its
 * tensor's swap-out and release must go too. They are not the last events
 * of the plans, so the kit is reset (tsl__kit_reset) and the whole list
 * placed again without the swaps that failed, until every swap left is
 * placed (each round drops at least one, so this ends).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/kit.h"

/* The state of one request while the list is placed. */
typedef struct req_state {
    int32_t rel;       /* its release event in its job's plan, or -1: not placed */
    uint8_t dropped;   /* left out: its swap-in could not be placed in an earlier round */
    uint8_t failed;    /* its swap-in could not be placed in this round */
} req_state;

/* A request's place in one of the two orders: its key, then job, the op
 * it precedes (swap-ins only), tensor and index. */
typedef struct order_key {
    double key;
    int job;
    int32_t precede, tensor, i;
} order_key;

static int cmp_key(const void *x, const void *y) {
    const order_key *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->job != b->job) return a->job < b->job ? -1 : 1;
    if (a->precede != b->precede) return a->precede < b->precede ? -1 : 1;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The requests' indices sorted into ord by their swap-out (in = 0) or
 * swap-in (in = 1) order; k: n keys of scratch. */
static void sort_reqs(const tsl__swap_req *r, int32_t *ord, order_key *k, int n, int in) {
    for (int i = 0; i < n; i++)
        k[i] = (order_key){in ? r[i].in_key : r[i].out_key, r[i].job, in ? r[i].precede : 0,
                           r[i].tensor, i};
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    for (int i = 0; i < n; i++) ord[i] = k[i].i;
}

/* The leaving half of request r: returns its release event's index in its
 * job's plan, or -1 if its swap-out does not fit. */
static int32_t place_out(tsl__kit *K, const tsl__swap_req *r) {
    tsl__pjob *J = &K->jobs[r->job];
    const tsl__timeline *tl = &J->tl;
    int wrap = r->precede <= r->last;
    double gen = r->out_after < 0 ? 0.0 : tl->e[r->out_after];
    double by = wrap ? tl->period - tsl__margin(tl->period) : tl->s[r->precede];
    /* a FIFO stream: after the copies placed before it (so the channel's
     * search starts at its last booking instead of walking the queue) */
    const tsl__chan *c = tsl__chan_of(K, J, 0);
    if (c->n > 0 && c->e[c->n - 1] > gen) gen = c->e[c->n - 1];
    tsl__swap_draft d = {.tensor = r->tensor};
    double rel = tsl__place_swap_out(K, J, r->tensor, gen, r->last, by, &d);
    if (rel < 0 || !d.has_out) return -1;
    if (!wrap && d.rel_trig >= r->precede) return -1;
    if (!tsl__commit_swap_out(K, J, &d)) return -1;
    return J->plan->n_events - 1;
}

/* The (issue, end) of every copy of J in event order, plus one more
 * (x, x + d) at the end, into old (2 * (copies + 1) doubles). */
static void snapshot(const tsl__pjob *J, double *old, double x, double d) {
    int32_t m = tsl__pjob_copy_times(J, old);
    old[2 * m] = x;
    old[2 * m + 1] = x + d;
}

/* A start for the swap-in of request r within [lo, ...): as early or as
 * late as the channel allows (early != 0). W: when its op would start, S:
 * when it starts. Fills d's swap-in; returns 1, or 0 if none is valid. */
static int find_in(tsl__kit *K, tsl__pjob *J, const tsl__swap_req *r, double lo, double W,
                   double S, int early, tsl__swap_draft *d) {
    double din = tsl_copy_us(J->dev, J->w->tensors[r->tensor].bytes, 1);
    tsl__canon_ctx cx = {.tl = &J->tl};
    double x;
    if (early) {
        x = tsl__chan_earliest(tsl__chan_of(K, J, 1), lo, din, fmax(W + din, S), tsl__canon_tl, &cx);
        /* waited for if under way when the op would start, else it must
         * have landed when the op starts */
        if (x < 0 || !(x <= W || x + din <= S)) return 0;
    } else {
        x = tsl__chan_latest(tsl__chan_of(K, J, 1), lo, din, S, tsl__canon_tl, &cx);
        if (x < 0) return 0;
    }
    if (cx.trigger >= r->precede) return 0;
    d->si_trig = cx.trigger;
    d->si_delay = cx.delay;
    d->si_issue = x;
    d->si_end = x + din;
    d->si_precede = r->precede;
    return 1;
}

/* The coming-back half of request r, whose release is event `rel` of its
 * job. old: scratch for the job's copies. Returns 1 if placed. */
static int place_in(tsl__kit *K, const tsl__swap_req *r, int32_t rel, double *old) {
    tsl__pjob *J = &K->jobs[r->job];
    const tsl__timeline *tl = &J->tl;
    int wrap = r->precede <= r->last;
    double lo = r->in_after < 0 ? 0.0 : tl->e[r->in_after];
    if (!wrap && J->ev_time[rel] > lo) lo = J->ev_time[rel];
    double W = tsl__pjob_would_start(J, r->precede, -1), S = tl->s[r->precede];
    tsl__swap_draft d = {.tensor = r->tensor};
    if (!find_in(K, J, r, lo, W, S, r->in_early, &d) &&
        !find_in(K, J, r, lo, W, S, !r->in_early, &d))
        return 0;
    /* the copies' times before a wait moves them (a wait comes only from a
     * copy landing after its op would start, or from a recomputation) */
    int may_wait = d.si_end - W > TSL__WAIT_EPS_US || tl->n_rc > 0;
    if (may_wait) snapshot(J, old, d.si_issue, d.si_end - d.si_issue);
    int32_t n_wait = tl->n_wait;
    double stall = tl->stall;
    if (!tsl__commit_swap_in(K, J, &d)) return 0;
    if (J->tl.n_wait == n_wait && J->tl.stall == stall) return 1;
    TSL_ASSERT(may_wait);
    /* a planned wait moved the later ops: move their copies too */
    if (tsl__kit_rebook(K, J, old)) return 1;
    tsl__chan_unbook(tsl__chan_of(K, J, 1), d.si_issue, d.si_end);
    tsl__pjob_pop_events(J, 1);
    tsl_status st = tsl__pjob_retime(J, J->dev);
    if (st != TSL_OK) K->status = st;
    return 0;
}

/* One round: every request not dropped, swap-outs then swap-ins. Returns
 * the number of swap-ins that failed (their requests marked). */
static int place_round(tsl__kit *K, const tsl__swap_req *r, req_state *rs, int n,
                       const int32_t *out_ord, const int32_t *in_ord, double *old) {
    for (int i = 0; i < n; i++) {
        rs[i].rel = -1;
        rs[i].failed = 0;
    }
    for (int i = 0; i < n && K->status == TSL_OK; i++) {
        int q = out_ord[i];
        if (!rs[q].dropped) rs[q].rel = place_out(K, &r[q]);
    }
    int failed = 0;
    for (int i = 0; i < n && K->status == TSL_OK; i++) {
        int q = in_ord[i];
        if (rs[q].rel < 0) continue;
        if (!place_in(K, &r[q], rs[q].rel, old)) {
            rs[q].failed = 1;
            failed++;
        }
    }
    return failed;
}

int tsl__place_swaps(tsl__kit *K, tsl__swap_req *reqs, int n) {
    if (n <= 0) return 0;
    req_state *rs = calloc((size_t)n, sizeof *rs);
    int32_t *ord = malloc(2 * (size_t)n * sizeof *ord);
    order_key *keys = malloc((size_t)n * sizeof *keys);
    for (int j = 0; j < K->n_jobs; j++) TSL_ASSERT(K->jobs[j].plan->n_events == 0);
    /* a job holds at most two copies per request */
    double *old = malloc((4 * (size_t)n + 2) * sizeof *old);
    if (!rs || !ord || !keys || !old) {
        free(rs);
        free(ord);
        free(keys);
        free(old);
        K->status = tsl_fail(TSL_ERR_OOM, "planner: out of host memory for %d swaps", n);
        return 0;
    }
    sort_reqs(reqs, ord, keys, n, 0);
    sort_reqs(reqs, ord + n, keys, n, 1);
    free(keys);
    while (place_round(K, reqs, rs, n, ord, ord + n, old) > 0 && K->status == TSL_OK) {
        for (int i = 0; i < n; i++) rs[i].dropped |= rs[i].failed;
        if (tsl__kit_reset(K) != TSL_OK) break;
    }
    int placed = 0;
    for (int i = 0; i < n; i++) {
        reqs[i].placed = K->status == TSL_OK && rs[i].rel >= 0 && !rs[i].failed;
        placed += reqs[i].placed;
    }
    free(rs);
    free(ord);
    free(old);
    return placed;
}
