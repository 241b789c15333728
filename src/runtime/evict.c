/*
 * evict.c - passive swap-out (paper III-D, DESIGN.md invariant 6): when an
 * allocation fails (the arena is full, or in strict mode the limit is
 * reached) and no memory is about to be freed, the executor evicts the
 * tensor the eviction policy chooses (tsl_runtime_opts.evict; by default
 * the resident tensor whose next use is farthest) and retries.
 *
 * Next use: the first op after the executor's position that reads or
 * writes the tensor; a persistent tensor with no access left in the
 * iteration is next used at its first access of the next iteration
 * (+ n_ops). A transient tensor with no access left is dead and goes first
 * (it needs no copy).
 *
 * Fragmentation: where the arena has the bytes asked for but no free block
 * that large, the policy is offered only the tensors whose eviction opens
 * one (their block with the free blocks either side, the backend's
 * free_run) - or, where no single eviction does, those whose eviction
 * opens the largest run (tsl__rt_run_goal; not under DTR, whose drops
 * would then follow where bytes lie): evicting by next use alone would
 * move small tensors one by one until a block happens to open.
 *
 * Eviction never touches a tensor the running item or a kernel in flight
 * reads or writes (busy), one being copied, or one already dying: the
 * policy is offered only the others. A tensor whose host copy
 * holds its value (or that is dead) is freed at once; any other is copied
 * to its staging buffer on the device-to-host channel and freed when the
 * copy ends. Pending events of an evicted tensor stay correct: a later
 * swap-out finds the host copy valid, a release finds it gone, a swap-in
 * brings it back.
 */
#include <stdlib.h>

#include "core/assert.h"
#include "runtime/runtime_internal.h"

tsl_status tsl__evict_init(tsl__runtime *rt) {
    int32_t nt = rt->nt;
    rt->acc_start = calloc((size_t)nt + 2, sizeof *rt->acc_start);
    size_t total = 0;
    for (int32_t t = 0; t < nt; t++) {
        int n;
        tsl_graph_accesses(rt->g, t, &n);
        total += (size_t)n;
    }
    rt->acc_ops = malloc(sizeof *rt->acc_ops * (total + 1));
    rt->cand = malloc(sizeof *rt->cand * ((size_t)nt + 1));
    if (!rt->acc_start || !rt->acc_ops || !rt->cand)
        return tsl_fail(TSL_ERR_OOM, "runtime: out of host memory");
    int32_t k = 0;
    for (int32_t t = 0; t < nt; t++) {
        int n;
        const tsl_access *a = tsl_graph_accesses(rt->g, t, &n);
        rt->acc_start[t] = k;
        for (int i = 0; i < n; i++) { /* ascending; one entry per op */
            if (a[i].op < 0 || (k > rt->acc_start[t] && rt->acc_ops[k - 1] == a[i].op)) continue;
            rt->acc_ops[k++] = a[i].op;
        }
    }
    rt->acc_start[nt] = k;
    return TSL_OK;
}

void tsl__evict_free(tsl__runtime *rt) {
    free(rt->acc_start);
    free(rt->acc_ops);
    free(rt->cand);
    rt->acc_start = rt->acc_ops = NULL;
    rt->cand = NULL;
}

/* Index in acc_ops of t's first access after pos (acc_start[t + 1] if none). */
static int32_t after(const tsl__runtime *rt, int32_t t, int32_t pos) {
    int32_t lo = rt->acc_start[t], hi = rt->acc_start[t + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (rt->acc_ops[mid] <= pos) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int tsl__rt_dead(const tsl__runtime *rt, int32_t t, int32_t pos) {
    if (tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind)) return 0;
    return after(rt, t, pos) == rt->acc_start[t + 1];
}

int32_t tsl__rt_next_use(const tsl__runtime *rt, int32_t t, int32_t pos) {
    int32_t k = after(rt, t, pos);
    if (k < rt->acc_start[t + 1]) return rt->acc_ops[k];
    if (!tsl_kind_is_persistent(tsl_graph_tensor(rt->g, t)->kind)) return INT32_MAX;
    int32_t first = rt->acc_start[t] < rt->acc_start[t + 1] ? rt->acc_ops[rt->acc_start[t]] : 0;
    return first + rt->no;
}

/* The default policy: the farthest next use (ties: the larger, then the
 * lower id: candidates come in id order). */
static int farthest_next_use(void *user, int32_t pos, const tsl_evict_candidate *c, int n) {
    (void)user;
    (void)pos;
    int best = -1;
    for (int i = 0; i < n; i++)
        if (best < 0 || c[i].next_use > c[best].next_use ||
            (c[i].next_use == c[best].next_use && c[i].bytes > c[best].bytes))
            best = i;
    return best;
}

int tsl__rt_movable(const tsl__runtime *rt, int32_t t) {
    const tsl__res *r = &rt->res[t];
    return rt->s->ptr[t] && !r->busy && !r->dying && r->readable && r->in_x < 0 && r->out_n == 0;
}

size_t tsl__rt_run_goal(const tsl__runtime *rt, size_t need) {
    if (!need || !rt->b->iface->free_run) return 0;
    size_t aligned = (need + TSL_ALLOC_ALIGN - 1) / TSL_ALLOC_ALIGN * TSL_ALLOC_ALIGN, best = 0;
    for (int32_t t = 0; t < rt->nt; t++) {
        if (!tsl__rt_movable(rt, t) || tsl_graph_tensor(rt->g, t)->nbytes == 0) continue;
        size_t run = rt->b->iface->free_run(rt->b, rt->s->ptr[t]);
        if (run >= aligned) return aligned;
        if (run > best) best = run;
    }
    /* none opens it: the largest run, except under DTR, whose drops then
     * follow the evictions (measured: densenet121 at batch 4 thrashed) */
    return rt->dtr.on ? 0 : best;
}

int tsl__rt_opens(const tsl__runtime *rt, int32_t t, size_t goal) {
    return goal && rt->b->iface->free_run(rt->b, rt->s->ptr[t]) >= goal;
}

/* The tensors eviction may move, into rt->cand (with `no_copy`, only those
 * that need no copy: dead, or host copy valid; with `opening`, only those
 * whose eviction opens a free block of `goal` bytes); returns how many. */
static int candidates(tsl__runtime *rt, int no_copy, size_t goal, int opening) {
    int n = 0;
    for (int32_t t = 0; t < rt->nt; t++) {
        if (!tsl__rt_movable(rt, t)) continue;
        size_t bytes = tsl_graph_tensor(rt->g, t)->nbytes;
        if (bytes == 0) continue; /* frees nothing */
        if (opening && !tsl__rt_opens(rt, t, goal)) continue;
        int32_t nu = tsl__rt_next_use(rt, t, rt->pos);
        int valid = tsl__rt_host_valid(rt, t);
        if (no_copy && nu != INT32_MAX && !valid) continue;
        rt->cand[n++] = (tsl_evict_candidate){.tensor = t, .bytes = bytes, .next_use = nu,
                                              .host_valid = valid};
    }
    return n;
}

/* The policy's choice among the candidates, or -1: with need > 0 (the
 * arena is fragmented), those whose eviction opens the run it aims for
 * (tsl__rt_run_goal) if there are any, else all. */
static int32_t choose(tsl__runtime *rt, int no_copy, size_t need) {
    size_t goal = tsl__rt_run_goal(rt, need);
    int n = goal ? candidates(rt, no_copy, goal, 1) : 0;
    if (n == 0) n = candidates(rt, no_copy, 0, 0);
    if (n == 0) return -1;
    tsl_evict_fn f = rt->o.evict ? rt->o.evict : farthest_next_use;
    int i = f(rt->o.evict_user, rt->pos, rt->cand, n);
    return i >= 0 && i < n ? rt->cand[i].tensor : -1;
}

int32_t tsl__rt_pick_victim(tsl__runtime *rt, size_t need) {
    int32_t t = choose(rt, 0, need);
    if (t < 0 || tsl__rt_dead(rt, t, rt->pos) || tsl__rt_host_valid(rt, t) ||
        tsl__rt_host_buf(rt, t))
        return t;
    return choose(rt, 1, need); /* no host memory for a copy */
}

int tsl__rt_evict(tsl__runtime *rt, int32_t t) {
    TSL_ASSERT(rt->s->ptr[t] && !rt->res[t].busy);
    if (tsl__rt_dead(rt, t, rt->pos) || tsl__rt_host_valid(rt, t)) {
        tsl__rt_release_block(rt, t);
    } else {
        int64_t x = tsl__se_copy(rt, t, 0, TSL__X_EVICT, -1, tsl_graph_tensor(rt->g, t)->nbytes);
        if (x < 0) return 0;
        rt->res[t].dying = 1; /* freed when the copy ends */
    }
    rt->st.evictions++;
    return 1;
}

int tsl__rt_frees_pending(const tsl__runtime *rt) {
    for (int32_t t = 0; t < rt->nt; t++)
        if (rt->s->ptr[t] && rt->res[t].dying) return 1;
    const tsl__rt_plan *pl = rt->cur;
    if (!pl) return 0;
    for (int32_t e = 0; e < pl->p->n_events; e++) {
        const tsl_event *ev = &pl->p->events[e];
        if (ev->type == TSL_EV_RELEASE && rt->ev_state[e] == TSL__EV_WAIT &&
            rt->s->ptr[ev->tensor] && !rt->res[ev->tensor].busy && !tsl__se_waits_on_idle(rt, e))
            return 1;
    }
    return 0;
}
