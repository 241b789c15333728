/*
 * verify_tensor.c - per tensor, the stays on the device implied by the
 * workload and the plan (docs/SCHEDULING.md, "Memory of one job"), and the
 * rules of the Validity section that concern one tensor:
 *
 *   - every read (by an op, or by a recomputation of its producer) finds the
 *     tensor resident with its data in place, and it stays until the read ends;
 *   - a release frees a resident tensor; one before a later read needs a host
 *     copy and a way back (swap-in or recomputation) before that read;
 *   - a swap-out copies a resident tensor whose generating op has ended,
 *     and nothing frees or rewrites the tensor before the copy ends;
 *   - a swap-in (or recomputation) allocates an absent tensor; a swap-in
 *     needs a host copy of the current value whose swap-out has ended, is
 *     triggered before the op it precedes, and its copy has landed when
 *     that op starts: the op waits for a copy under way when it would
 *     start (a planned wait, verify_timeline.c: not a violation), never
 *     for one issued later.
 *
 * The periodic rule: a persistent tensor whose last change in the iteration
 * is a free (released after its last access) is absent at time 0 too; its
 * host copy then is the iteration's last valid swap-out after its last write.
 *
 * Each fault is reported once, at its root: a read of a released tensor is
 * reported once per absence, with the release that caused it; a swap-in that
 * comes too late for the op it precedes (triggered by that op or after it,
 * or landing after the op starts) is reported by the swap-in only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/verify_internal.h"

#define EPS TSL__VF_EPS_US

/* One change of one tensor's residency, in key order. */
typedef struct action {
    tsl__vf_key key;
    int32_t src; /* tsl__vf_src */
    int32_t ref; /* op or event */
} action;

static int cmp_action(const void *a, const void *b) {
    return tsl__vf_key_cmp(&((const action *)a)->key, &((const action *)b)->key);
}

static tsl__vf_key mk(double t, int64_t slot, int32_t cls, int32_t ord) {
    tsl__vf_key k = {t, slot, cls, ord};
    return k;
}

/* Start key of op g's write (its position's allocations). */
static tsl__vf_key gen_key(const tsl__vf_job *j, int32_t g) {
    int32_t q = j->op_pos[g];
    return mk(j->ps[q], 3 * (int64_t)q, TSL__VF_ALLOC, g);
}

/* Slot of the free of release k: due at its trigger's end, among the events
 * of that time point; after waiting for a swap-out, among the completions
 * of the time point where that copy ends. */
static int64_t release_slot(const tsl__vf_job *j, int32_t k) {
    return j->fin[k] > j->issue[k] ? tsl__vf_done_slot(j, j->fin[k])
                                   : tsl__vf_event_slot(j, j->fin[k]);
}

/* Collects tensor t's residency changes into a (sorted). Returns the count. */
static int collect(const tsl__vf_job *j, int32_t t, action *a) {
    const tsl_workload *w = j->w;
    const tsl_plan *p = j->p;
    tsl_tensor_kind kd = w->tensors[t].kind;
    int n = 0;
    int data = kd == TSL_KIND_INPUT || kd == TSL_KIND_LABEL;
    if (data || (tsl_kind_is_persistent(kd) && !j->absent0[t]))
        a[n++] = (action){mk(0.0, 0, TSL__VF_ALLOC, -1), TSL__VF_SRC_INIT, -1};
    for (int32_t x = j->gen_off[t]; x < j->gen_off[t + 1]; x++)
        a[n++] = (action){gen_key(j, j->gen_ops[x]), TSL__VF_SRC_GEN, j->gen_ops[x]};
    if (!tsl_kind_is_persistent(kd)) {
        int32_t z = j->last_read[t];
        if (z < 0 && j->gen_off[t + 1] > j->gen_off[t]) z = j->gen_ops[j->gen_off[t]];
        if (z >= 0) {
            int32_t q = j->op_pos[z];
            a[n++] = (action){mk(j->pe[q], 3 * (int64_t)q + 1, TSL__VF_FREE, z),
                              TSL__VF_SRC_IMPLICIT, z};
        } else if (data) {
            a[n++] = (action){mk(0.0, 1, TSL__VF_FREE, -1), TSL__VF_SRC_IMPLICIT, -1};
        }
    }
    for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
        int32_t k = j->ev_idx[x];
        const tsl_event *e = &p->events[k];
        if (e->type == TSL_EV_RELEASE)
            a[n++] = (action){mk(j->fin[k], release_slot(j, k), TSL__VF_FREE, k),
                              TSL__VF_SRC_RELEASE, k};
        else if (e->type == TSL_EV_SWAP_IN)
            a[n++] = (action){mk(j->issue[k], tsl__vf_event_slot(j, j->issue[k]), TSL__VF_ALLOC, k),
                              TSL__VF_SRC_SWAP_IN, k};
        else if (e->type == TSL_EV_RECOMPUTE)
            a[n++] = (action){mk(j->issue[k], 3 * (int64_t)j->ev_pos[k], TSL__VF_ALLOC, k),
                              TSL__VF_SRC_RECOMPUTE, k};
    }
    qsort(a, (size_t)n, sizeof *a, cmp_action);
    return n;
}

/* Growable interval array. */
typedef struct iv_buf {
    tsl__vf_interval *v;
    int32_t n, cap;
} iv_buf;

static int iv_push(iv_buf *b, tsl__vf_interval iv) {
    if (b->n == b->cap) {
        int32_t c = b->cap ? 2 * b->cap : 64;
        tsl__vf_interval *nv = realloc(b->v, sizeof *nv * (size_t)c);
        if (!nv) return 0;
        b->v = nv;
        b->cap = c;
    }
    b->v[b->n++] = iv;
    return 1;
}

/* Describes how interval iv ended into buf ("freed at 12.0 us by event 3
 * release" ...). */
static const char *free_cause(const tsl__vf_job *j, const tsl__vf_interval *iv, char *buf,
                              size_t len) {
    char lb[400];
    if (iv->f_src == TSL__VF_SRC_RELEASE)
        snprintf(buf, len, "freed at %.1f us by %s", iv->f.t,
                 tsl__vf_ev_label(j, iv->f_ref, lb, sizeof lb));
    else if (iv->f_ref >= 0)
        snprintf(buf, len, "freed at %.1f us after its last read by op '%s'", iv->f.t,
                 j->w->ops[iv->f_ref].name);
    else
        snprintf(buf, len, "freed at %.1f us after the data load (never read)", iv->f.t);
    return buf;
}

/* Plays tensor t's changes. With `out` NULL nothing is recorded or reported
 * (a dry pass for the periodic rule). Returns 1 if the tensor is resident at
 * the end of the iteration, or -1 if out of host memory. */
static int walk(tsl__vf_job *j, int32_t t, const action *a, int n, iv_buf *out, tsl__vf_list *l) {
    const tsl_workload *w = j->w;
    const char *tn = w->tensors[t].name;
    char lb[400], cb[200];
    int resident = 0;
    tsl__vf_interval cur = {0};
    int have_last = 0;
    tsl__vf_interval last = {0};
    for (int i = 0; i < n; i++) {
        const action *x = &a[i];
        if (x->key.cls == TSL__VF_FREE) {
            if (resident) {
                cur.f = x->key;
                cur.f_src = x->src;
                cur.f_ref = x->ref;
                if (out && !iv_push(out, cur)) return -1;
                last = cur;
                have_last = 1;
                resident = 0;
            } else if (out && x->src == TSL__VF_SRC_RELEASE && !(j->absent0[t] && !have_last) &&
                       !(have_last && last.f_src == TSL__VF_SRC_IMPLICIT && last.f.t == x->key.t)) {
                /* (a persistent tensor never brought back in the iteration is
                 * reported at its first read instead; a release at the end of
                 * the last read only repeats the implicit one) */
                if (have_last)
                    tsl__vf_add(l, j->prefix,
                                "%s: the tensor is not resident when the release frees "
                                "it at %.1f us (%s)",
                                tsl__vf_ev_label(j, x->ref, lb, sizeof lb), x->key.t,
                                free_cause(j, &last, cb, sizeof cb));
                else
                    tsl__vf_add(l, j->prefix,
                                "%s: the tensor is not resident when the release frees "
                                "it at %.1f us (%s)",
                                tsl__vf_ev_label(j, x->ref, lb, sizeof lb), x->key.t,
                                "not generated yet");
            }
            continue;
        }
        if (resident) {
            /* (a swap-in is reported by check_swap_in, which knows why) */
            if (out && x->src == TSL__VF_SRC_RECOMPUTE)
                tsl__vf_add(l, j->prefix,
                            "%s: '%s' is still resident at %.1f us when the "
                            "recomputation allocates it (it must be absent)",
                            tsl__vf_ev_label(j, x->ref, lb, sizeof lb), tn, x->key.t);
            continue;
        }
        memset(&cur, 0, sizeof cur);
        cur.a = x->key;
        cur.a_src = x->src;
        cur.a_ref = x->ref;
        switch (x->src) {
        case TSL__VF_SRC_INIT: cur.valid = 0.0; break;
        case TSL__VF_SRC_GEN: cur.valid = j->pe[j->op_pos[x->ref]]; break;
        default: cur.valid = j->fin[x->ref]; break;
        }
        if (out && (x->src == TSL__VF_SRC_SWAP_IN || x->src == TSL__VF_SRC_RECOMPUTE))
            j->opened[x->ref] = 1;
        resident = 1;
    }
    if (resident) {
        cur.f = mk(INFINITY, INT64_MAX, TSL__VF_FREE, 0);
        cur.f_src = TSL__VF_SRC_NONE;
        cur.f_ref = -1;
        if (out && !iv_push(out, cur)) return -1;
    }
    return resident;
}

/* Index of the last interval of t allocated strictly before key k, or -1. */
static int32_t iv_before(const tsl__vf_job *j, int32_t t, const tsl__vf_key *k) {
    int32_t lo = j->iv_off[t], hi = j->iv_off[t + 1] - 1, best = -1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (tsl__vf_key_cmp(&j->iv[mid].a, k) < 0) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

/* Issue key of swap-out k: among the events of its time point, before the
 * releases and swap-ins (after the completions and the positions of zero
 * duration there). */
static tsl__vf_key so_key(const tsl__vf_job *j, int32_t k) {
    return mk(j->issue[k], tsl__vf_event_slot(j, j->issue[k]), TSL__VF_ISSUE, k);
}

/* The host copy of tensor t usable at key x (time x.t): a good swap-out
 * issued after the last write of t before x. *src gets the swap-out (or -1);
 * returns 1 if one exists (possibly still copying), 2 if the copy comes from
 * the previous iteration (a tensor absent at time 0 by the periodic rule and
 * not written before x), 0 if none; *writer gets the last op writing t
 * before x (-1 if none). */
static int host_copy(const tsl__vf_job *j, int32_t t, const tsl__vf_key *x, int32_t *src,
                     int32_t *writer) {
    const tsl_plan *p = j->p;
    int32_t wlast = -1;
    tsl__vf_key wk = {0};
    for (int32_t g = j->gen_off[t]; g < j->gen_off[t + 1]; g++) {
        tsl__vf_key k = gen_key(j, j->gen_ops[g]);
        if (tsl__vf_key_cmp(&k, x) < 0) {
            wlast = j->gen_ops[g];
            wk = k;
        }
    }
    *writer = wlast;
    *src = -1;
    for (int32_t e = j->ev_off[t]; e < j->ev_off[t + 1]; e++) {
        int32_t k = j->ev_idx[e];
        if (p->events[k].type != TSL_EV_SWAP_OUT || !j->so_good[k]) continue;
        tsl__vf_key sk = so_key(j, k);
        if (tsl__vf_key_cmp(&sk, x) >= 0) continue;
        if (wlast >= 0 && tsl__vf_key_cmp(&sk, &wk) < 0) continue;
        if (*src < 0 || j->fin[k] < j->fin[*src]) *src = k;
    }
    if (*src >= 0) return 1;
    /* the previous iteration's copy counts only for a tensor absent at the
     * iteration start (the periodic rule); one resident at time 0 must be
     * swapped out in the iteration, as it is in the first iteration run */
    if (wlast >= 0 || !j->absent0[t]) return 0;
    /* previous iteration: a good swap-out after the iteration's last write */
    int32_t wend = j->gen_off[t + 1] > j->gen_off[t] ? j->gen_ops[j->gen_off[t + 1] - 1] : -1;
    tsl__vf_key wend_k = wend >= 0 ? gen_key(j, wend) : mk(-INFINITY, 0, 0, 0);
    for (int32_t e = j->ev_off[t]; e < j->ev_off[t + 1]; e++) {
        int32_t k = j->ev_idx[e];
        if (p->events[k].type != TSL_EV_SWAP_OUT || !j->so_good[k]) continue;
        tsl__vf_key sk = so_key(j, k);
        if (tsl__vf_key_cmp(&sk, &wend_k) > 0) {
            *src = k;
            return 2;
        }
    }
    return 0;
}

/* Swap-out rules for event k of tensor t; sets so_good[k]. */
static void check_swap_out(tsl__vf_job *j, int32_t t, int32_t k, tsl__vf_list *l) {
    char lb[400], cb[200], b1[48], b2[48];
    tsl__vf_ev_label(j, k, lb, sizeof lb);
    double x = j->issue[k], y = j->fin[k];
    tsl__vf_key X = so_key(j, k);
    int32_t i = iv_before(j, t, &X);
    if (i < 0 || tsl__vf_key_cmp(&j->iv[i].f, &X) <= 0) {
        if (i < 0)
            tsl__vf_add(l, j->prefix,
                        "%s: the tensor is not resident at the swap-out's issue at "
                        "%.1f us (%s)",
                        lb, x,
                        j->absent0[t] ? "absent from the iteration start" : "not generated yet");
        else
            tsl__vf_add(l, j->prefix,
                        "%s: the tensor is not resident at the swap-out's issue at "
                        "%.1f us (%s)",
                        lb, x, free_cause(j, &j->iv[i], cb, sizeof cb));
        return;
    }
    const tsl__vf_interval *iv = &j->iv[i];
    int good = 1;
    if (iv->valid > x + EPS && iv->a_src != TSL__VF_SRC_GEN) { /* (GEN: the next check) */
        tsl__vf_times(x, iv->valid, b1, b2, sizeof b1);
        tsl__vf_add(l, j->prefix,
                    "%s: starts at %s us, before the tensor's data is on the device "
                    "at %s us",
                    lb, b1, b2);
        good = 0;
    }
    for (int32_t g = j->gen_off[t]; g < j->gen_off[t + 1]; g++) {
        int32_t op = j->gen_ops[g];
        tsl__vf_key gk = gen_key(j, op);
        double gs = j->ps[j->op_pos[op]], ge = j->pe[j->op_pos[op]];
        if (tsl__vf_key_cmp(&gk, &X) < 0 && ge > x + EPS) {
            tsl__vf_times(x, ge, b1, b2, sizeof b1);
            tsl__vf_add(l, j->prefix,
                        "%s: starts at %s us, before op '%s' generating its value "
                        "ends at %s us",
                        lb, b1, j->w->ops[op].name, b2);
            good = 0;
        } else if (tsl__vf_key_cmp(&gk, &X) > 0 && gs < y - EPS) {
            tsl__vf_times(y, gs, b1, b2, sizeof b1);
            tsl__vf_add(l, j->prefix,
                        "%s: copy ends at %s us, after op '%s' starts writing the "
                        "tensor at %s us",
                        lb, b1, j->w->ops[op].name, b2);
            good = 0;
        }
    }
    if (iv->f.t < y - EPS) {
        tsl__vf_times(y, iv->f.t, b1, b2, sizeof b1);
        if (iv->f_src == TSL__VF_SRC_RELEASE) {
            char rb[400];
            tsl__vf_add(l, j->prefix, "%s: copy ends at %s us, after %s frees the tensor at %s us",
                        lb, b1, tsl__vf_ev_label(j, iv->f_ref, rb, sizeof rb), b2);
        } else {
            tsl__vf_add(l, j->prefix,
                        "%s: copy ends at %s us, after the tensor is freed at %s us "
                        "(end of its last read by op '%s')",
                        lb, b1, b2, tsl__vf_op_name(j, iv->f_ref));
        }
        good = 0;
    }
    j->so_good[k] = (uint8_t)good;
}

/* Swap-in rules for event k of tensor t. */
static void check_swap_in(tsl__vf_job *j, int32_t t, int32_t k, tsl__vf_list *l) {
    const tsl_event *e = &j->p->events[k];
    char lb[400], b1[48], b2[48];
    tsl__vf_ev_label(j, k, lb, sizeof lb);
    int32_t qp = j->op_pos[e->precede];
    double sp = j->ps[qp];
    if (e->trigger >= e->precede) {
        tsl__vf_add(l, j->prefix,
                    "%s: triggered by op '%s', which does not end before op '%s' starts (the op "
                    "would wait for a copy issued only after it ends)",
                    lb, tsl__vf_op_name(j, e->trigger), j->w->ops[e->precede].name);
    } else if (j->fin[k] - sp > EPS) {
        double at = tsl__vf_would_start(j, qp);
        tsl__vf_times(j->fin[k], sp, b1, b2, sizeof b1);
        if (j->issue[k] > at) {
            char b3[48], b4[48];
            tsl__vf_times(j->issue[k], at, b3, b4, sizeof b3);
            tsl__vf_add(l, j->prefix,
                        "%s: copy ends at %s us, after the op starts at %s us (issued at %s us, "
                        "after the op would start at %s us: an op waits only for copies under "
                        "way then)",
                        lb, b1, b2, b3, b4);
        } else {
            tsl__vf_add(l, j->prefix, "%s: copy ends at %s us, after the op starts at %s us", lb,
                        b1, b2);
        }
    }
    tsl__vf_key X = mk(j->issue[k], tsl__vf_event_slot(j, j->issue[k]), TSL__VF_ALLOC, k);
    if (!j->opened[k]) {
        /* the tensor is still resident: because a release waits for a
         * swap-out still copying, or because nothing freed it */
        int32_t pend = -1;
        for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
            int32_t o = j->ev_idx[x];
            if (j->p->events[o].type != TSL_EV_SWAP_OUT) continue;
            tsl__vf_key ok = so_key(j, o);
            if (tsl__vf_key_cmp(&ok, &X) < 0 && j->fin[o] > j->issue[k] + EPS) pend = o;
        }
        if (pend >= 0) {
            char sb[400];
            tsl__vf_times(j->issue[k], j->fin[pend], b1, b2, sizeof b1);
            tsl__vf_add(l, j->prefix,
                        "%s: starts at %s us, before its swap-out (%s) ends at %s us "
                        "(the tensor is still resident then)",
                        lb, b1, tsl__vf_ev_label(j, pend, sb, sizeof sb), b2);
        } else {
            tsl__vf_add(l, j->prefix,
                        "%s: '%s' is still resident at its issue at %.1f us (a "
                        "swap-in needs it absent)",
                        lb, j->w->tensors[t].name, j->issue[k]);
        }
        return;
    }
    int32_t src, writer;
    int hc = host_copy(j, t, &X, &src, &writer);
    if (hc == 0) {
        int32_t lastw = j->gen_off[t + 1] > j->gen_off[t] ? j->gen_ops[j->gen_off[t + 1] - 1] : -1;
        if (writer >= 0)
            tsl__vf_add(l, j->prefix,
                        "%s: there is no host copy of the value op '%s' generated "
                        "(no valid swap-out of it before the swap-in at %.1f us)",
                        lb, j->w->ops[writer].name, j->issue[k]);
        else if (j->absent0[t] && lastw >= 0)
            tsl__vf_add(l, j->prefix,
                        "%s: there is no host copy of the tensor (no valid swap-out "
                        "before the swap-in at %.1f us, nor after its last write by op '%s' in the "
                        "previous iteration)",
                        lb, j->issue[k], j->w->ops[lastw].name);
        else
            tsl__vf_add(l, j->prefix,
                        "%s: there is no host copy of the tensor (no valid swap-out "
                        "of it before the swap-in at %.1f us)",
                        lb, j->issue[k]);
    } else if (hc == 1 && j->fin[src] > j->issue[k] + EPS) {
        char sb[400];
        tsl__vf_times(j->issue[k], j->fin[src], b1, b2, sizeof b1);
        tsl__vf_add(l, j->prefix, "%s: starts at %s us, before its swap-out (%s) ends at %s us", lb,
                    b1, tsl__vf_ev_label(j, src, sb, sizeof sb), b2);
    }
}

/* The release of t that frees it last (the one that makes a persistent
 * tensor absent at the iteration start). */
static int32_t last_release(const tsl__vf_job *j, int32_t t) {
    int32_t best = -1;
    for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
        int32_t k = j->ev_idx[x];
        if (j->p->events[k].type == TSL_EV_RELEASE && (best < 0 || j->fin[k] >= j->fin[best]))
            best = k;
    }
    TSL_ASSERT(best >= 0);
    return best;
}

/* 1 if a swap-in of t preceding op `op` comes too late for it (triggered
 * by op or after it, or landing after op starts: that swap-in is the fault,
 * reported by check_swap_in). */
static int late_swap_in_for(const tsl__vf_job *j, int32_t t, int32_t op) {
    for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
        int32_t k = j->ev_idx[x];
        const tsl_event *e = &j->p->events[k];
        if (e->type == TSL_EV_SWAP_IN && e->precede == op &&
            (e->trigger >= op || j->fin[k] - j->ps[j->op_pos[op]] > EPS))
            return 1;
    }
    return 0;
}

/* Position of the trigger of event k (0: the iteration start). */
static int32_t trigger_pos(const tsl__vf_job *j, int32_t k) {
    int32_t r = j->p->events[k].trigger;
    return r < 0 ? 0 : j->op_pos[r];
}

/* Reports the read of t by position q (from s us) placed after the trigger
 * of release k, which frees t only later, at fin[k]: the read relies on
 * the release waiting for a swap-out (or, due at its trigger's end, on the
 * positions of zero duration at that time running before the events). */
static void report_pending_release(tsl__vf_job *j, int32_t t, int32_t q, int32_t k, double s,
                                   tsl__vf_list *l) {
    char lb[400], pb[200], sb[400], why[480], b1[48], b2[48];
    const tsl_event *e = &j->p->events[k];
    int32_t o = -1;
    double best = -INFINITY;
    for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
        int32_t y = j->ev_idx[x];
        if (j->p->events[y].type == TSL_EV_SWAP_OUT && j->issue[y] <= j->issue[k] &&
            j->issue[y] >= best) {
            best = j->issue[y];
            o = y;
        }
    }
    if (j->fin[k] > j->issue[k] && o >= 0)
        snprintf(why, sizeof why, "it waits for %s", tsl__vf_ev_label(j, o, sb, sizeof sb));
    else
        snprintf(why, sizeof why, "due when its trigger ends, it acts after the ops of zero "
                                  "duration at that time");
    tsl__vf_times(s, j->issue[k], b1, b2, sizeof b1);
    tsl__vf_add(l, j->prefix,
                "%s: %s reads '%s' from %s us, after the release's trigger '%s' ends at %s us, "
                "but before the release frees it at %.1f us (%s): a read after a release's "
                "trigger needs the tensor brought back after the release (when ops run longer "
                "than planned, the release frees it before that read)",
                tsl__vf_ev_label(j, k, lb, sizeof lb), tsl__vf_pos_label(j, q, pb, sizeof pb),
                j->w->tensors[t].name, b1, tsl__vf_op_name(j, e->trigger), b2, j->fin[k], why);
}

/* Read rules for the reads of tensor t. */
static void check_reads(tsl__vf_job *j, int32_t t, tsl__vf_list *l) {
    const tsl_workload *w = j->w;
    const char *tn = w->tensors[t].name;
    char lb[400], pb[200], cb[200], b1[48], b2[48];
    int32_t pending_iv = -1; /* the stay whose pending release was reported */
    for (int32_t r = j->rd_off[t]; r < j->rd_off[t + 1]; r++) {
        int32_t q = j->rd_pos[r];
        int32_t rc = j->pev[q]; /* recomputation event reading t, or -1 */
        double s = j->ps[q];
        tsl__vf_key R = mk(s, 3 * (int64_t)q, TSL__VF_ALLOC, INT32_MIN);
        tsl__vf_key E = mk(j->pe[q], 3 * (int64_t)q + 1, TSL__VF_FREE, INT32_MIN);
        int32_t i = iv_before(j, t, &R);
        tsl__vf_pos_label(j, q, pb, sizeof pb);
        if (i >= 0 && tsl__vf_key_cmp(&j->iv[i].f, &R) > 0) {
            tsl__vf_interval *iv = &j->iv[i];
            if (iv->valid - s > EPS) {
                int src_is_si = iv->a_src == TSL__VF_SRC_SWAP_IN;
                if (src_is_si && rc < 0 && j->p->events[iv->a_ref].precede == j->pop[q]) {
                    /* the swap-in's own lateness, reported by check_swap_in */
                } else if (rc >= 0) {
                    char sb[400];
                    tsl__vf_times(s, iv->valid, b1, b2, sizeof b1);
                    tsl__vf_add(l, j->prefix,
                                "%s: input '%s' of its producer '%s' is not resident "
                                "at %s us (%s copies it until %s us)",
                                tsl__vf_ev_label(j, rc, lb, sizeof lb), tn, w->ops[j->pop[q]].name,
                                b1,
                                iv->a_src == TSL__VF_SRC_GEN
                                    ? "its generating op"
                                    : tsl__vf_ev_label(j, iv->a_ref, sb, sizeof sb),
                                b2);
                } else {
                    tsl__vf_times(s, iv->valid, b1, b2, sizeof b1);
                    if (iv->a_src == TSL__VF_SRC_SWAP_IN || iv->a_src == TSL__VF_SRC_RECOMPUTE)
                        tsl__vf_add(l, j->prefix,
                                    "%s: %s reads it at %s us, before its data "
                                    "arrives at %s us",
                                    tsl__vf_ev_label(j, iv->a_ref, lb, sizeof lb), pb, b1, b2);
                    else
                        tsl__vf_add(l, j->prefix,
                                    "%s reads '%s' at %s us, before its data is "
                                    "generated at %s us",
                                    pb, tn, b1, b2);
                }
            }
            /* the release freeing this stay is triggered before the read:
             * the tensor is there only because the release has not acted
             * yet (docs/SCHEDULING.md, Validity: never released in use) */
            if (iv->f_src == TSL__VF_SRC_RELEASE && trigger_pos(j, iv->f_ref) < q) {
                if (pending_iv != i) report_pending_release(j, t, q, iv->f_ref, s, l);
                pending_iv = i;
                continue;
            }
            if (tsl__vf_key_cmp(&iv->f, &E) < 0) {
                tsl__vf_times(iv->f.t, j->pe[q], b1, b2, sizeof b1);
                if (iv->f_src == TSL__VF_SRC_RELEASE)
                    tsl__vf_add(l, j->prefix,
                                "%s: frees the tensor at %s us while %s reads it "
                                "(until %s us)",
                                tsl__vf_ev_label(j, iv->f_ref, lb, sizeof lb), b1, pb, b2);
                else
                    tsl__vf_add(l, j->prefix,
                                "%s reads '%s' until %s us, but it is freed at %s us "
                                "(after its last read by op '%s')",
                                pb, tn, b2, b1, tsl__vf_op_name(j, iv->f_ref));
            }
            continue;
        }
        /* not resident when the read starts */
        if (rc >= 0) {
            const char *why = i >= 0          ? free_cause(j, &j->iv[i], cb, sizeof cb)
                              : j->absent0[t] ? "absent from the iteration start"
                                              : "not generated yet";
            tsl__vf_add(l, j->prefix,
                        "%s: input '%s' of its producer '%s' is not resident at "
                        "%.1f us (%s)",
                        tsl__vf_ev_label(j, rc, lb, sizeof lb), tn, w->ops[j->pop[q]].name, s, why);
            continue;
        }
        if (i < 0) {
            if (j->absent_reported[t]) continue;
            j->absent_reported[t] = 1;
            if (j->absent0[t]) {
                /* the release at the end of the iteration made it absent */
                tsl__vf_add(l, j->prefix,
                            "%s: %s reads the tensor at %.1f us, but it is absent "
                            "from the iteration start (released after its last access) and "
                            "nothing brings it back before that read",
                            tsl__vf_ev_label(j, last_release(j, t), lb, sizeof lb), pb, s);
            } else {
                tsl__vf_add(l, j->prefix, "%s reads '%s' at %.1f us before it is generated", pb, tn,
                            s);
            }
            continue;
        }
        if (late_swap_in_for(j, t, j->pop[q])) continue; /* reported by check_swap_in */
        tsl__vf_interval *iv = &j->iv[i];
        if (iv->reported) continue;
        iv->reported = 1;
        if (iv->f_src != TSL__VF_SRC_RELEASE) {
            tsl__vf_add(l, j->prefix, "%s reads '%s' at %.1f us, but it was %s", pb, tn, s,
                        free_cause(j, iv, cb, sizeof cb));
            continue;
        }
        int32_t k = iv->f_ref, src, writer;
        tsl__vf_key F = mk(j->fin[k], tsl__vf_event_slot(j, j->fin[k]), TSL__VF_AFTER, INT32_MAX);
        int hc = host_copy(j, t, &F, &src, &writer);
        tsl__vf_ev_label(j, k, lb, sizeof lb);
        tsl__vf_times(j->fin[k], s, b1, b2, sizeof b1);
        int n_so = 0;
        for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++)
            n_so += j->p->events[j->ev_idx[x]].type == TSL_EV_SWAP_OUT;
        if (hc == 1 && j->fin[src] <= j->fin[k] + EPS)
            tsl__vf_add(l, j->prefix,
                        "%s: %s reads the tensor at %s us, after the release freed "
                        "it at %s us, and no swap-in or recomputation brings it back before that "
                        "read",
                        lb, pb, b2, b1);
        else
            tsl__vf_add(l, j->prefix,
                        "%s: frees the tensor at %s us before its read by %s at %s us, "
                        "but it has no host copy (%s) and is not recomputed before that read",
                        lb, b1, pb, b2,
                        n_so == 0 ? "never swapped out" : "no valid swap-out of its current value");
    }
}

tsl_status tsl__vf_tensors(tsl__vf_job *j, tsl__vf_list *l) {
    const tsl_workload *w = j->w;
    int32_t nt = w->n_tensors;
    /* the largest number of changes of one tensor */
    int32_t maxa = 0;
    for (int32_t t = 0; t < nt; t++) {
        int32_t c = 2 + (j->gen_off[t + 1] - j->gen_off[t]) + (j->ev_off[t + 1] - j->ev_off[t]);
        if (c > maxa) maxa = c;
    }
    action *a = malloc(sizeof *a * (size_t)(maxa ? maxa : 1));
    j->iv_off = malloc(sizeof *j->iv_off * ((size_t)nt + 1));
    iv_buf b = {0};
    if (!a || !j->iv_off) {
        free(a);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    for (int32_t t = 0; t < nt; t++) {
        j->iv_off[t] = b.n;
        int n;
        if (tsl_kind_is_persistent(w->tensors[t].kind)) {
            n = collect(j, t, a);
            if (walk(j, t, a, n, NULL, l) == 0) j->absent0[t] = 1;
        }
        n = collect(j, t, a);
        if (walk(j, t, a, n, &b, l) < 0) {
            free(a);
            free(b.v);
            return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
        }
    }
    j->iv_off[nt] = b.n;
    j->iv = b.v;
    j->n_iv = b.n;
    free(a);

    const tsl_plan *p = j->p;
    for (int32_t t = 0; t < nt; t++)
        for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++)
            if (p->events[j->ev_idx[x]].type == TSL_EV_SWAP_OUT)
                check_swap_out(j, t, j->ev_idx[x], l);
    for (int32_t t = 0; t < nt; t++)
        for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++)
            if (p->events[j->ev_idx[x]].type == TSL_EV_SWAP_IN)
                check_swap_in(j, t, j->ev_idx[x], l);
    for (int32_t t = 0; t < nt; t++) check_reads(j, t, l);
    return TSL_OK;
}
