/*
 * verify_timeline.c - the verifier's view of one job's iteration under its
 * plan (docs/SCHEDULING.md, "Time" and "Copies and channels"): which events
 * are well formed, the positions of the timeline with recomputations
 * inserted, their shifted times, every event's issue time and copy interval,
 * and per-tensor lists of writes, reads and events.
 *
 * Arithmetic of shifted times (the planner and the simulator should do the
 * same, so that equal times stay bit-equal): with `shift` the sum of the
 * latencies of the recomputations inserted so far, in event order, the
 * nominal times are
 *   a recomputation before op p over [s_p + shift, s_p + shift'] where
 *   shift' = shift + (e_g - s_g) for its producer g;
 *   op i over [s_i + shift, e_i + shift];
 * so that an empty plan keeps the workload's times exactly and an inserted op
 * ends exactly where the next one starts. Planned waits (docs/SCHEDULING.md):
 * a position would start at its nominal start ns while no earlier one
 * waited, else when the previous one ends (W); for each tensor it reads,
 * the latest swap-in of it triggered before its op and issued at or before
 * W, if its copy lands more than TSL__VF_EPS_US after W, holds it back; so
 * does, for the first position of op i, each release preceding i that
 * frees its tensor more than TSL__VF_EPS_US after W (at its issue, or at
 * the end of the tensor's latest swap-out triggered before i and issued by
 * then); it starts at the last such time S (or W) and ends at ne if S ==
 * ns, else at S + (ne - ns).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/remat.h"
#include "sched/verify_internal.h"

int tsl__vf_key_cmp(const tsl__vf_key *a, const tsl__vf_key *b) {
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    if (a->ord != b->ord) return a->ord < b->ord ? -1 : 1;
    return 0;
}

const char *tsl__vf_event_type_name(tsl_event_type t) {
    switch (t) {
    case TSL_EV_SWAP_OUT: return "swap_out";
    case TSL_EV_SWAP_IN: return "swap_in";
    case TSL_EV_RELEASE: return "release";
    case TSL_EV_RECOMPUTE: return "recompute";
    }
    return "unknown";
}

const char *tsl__vf_op_name(const tsl__vf_job *j, int32_t op) {
    if (op < 0 || op >= j->w->n_ops) return "start";
    return j->w->ops[op].name;
}

/* Label of event k. Only fields already known to be in range are named. */
const char *tsl__vf_ev_label(const tsl__vf_job *j, int32_t k, char *buf, size_t len) {
    const tsl_event *e = &j->p->events[k];
    const tsl_workload *w = j->w;
    const char *tn = e->tensor >= 0 && e->tensor < w->n_tensors ? w->tensors[e->tensor].name : "?";
    int trig_ok = e->trigger >= -1 && e->trigger < w->n_ops;
    int prec_ok = e->precede >= 0 && e->precede < w->n_ops;
    switch (e->type) {
    case TSL_EV_SWAP_IN:
    case TSL_EV_RECOMPUTE:
        snprintf(buf, len, "event %d %s '%s' (precede '%s')", (int)k,
                 tsl__vf_event_type_name(e->type), tn, prec_ok ? w->ops[e->precede].name : "?");
        break;
    case TSL_EV_SWAP_OUT:
    case TSL_EV_RELEASE:
        snprintf(buf, len, "event %d %s '%s' (trigger '%s')", (int)k,
                 tsl__vf_event_type_name(e->type), tn,
                 trig_ok ? tsl__vf_op_name(j, e->trigger) : "?");
        break;
    default: snprintf(buf, len, "event %d (type %d)", (int)k, (int)e->type);
    }
    return buf;
}

const char *tsl__vf_pos_label(const tsl__vf_job *j, int32_t q, char *buf, size_t len) {
    if (q <= 0) {
        snprintf(buf, len, "the data load");
    } else if (j->pev[q] >= 0) {
        const tsl_event *e = &j->p->events[j->pev[q]];
        snprintf(buf, len, "the recomputation of '%s' (event %d)", j->w->tensors[e->tensor].name,
                 (int)j->pev[q]);
    } else {
        snprintf(buf, len, "op '%s'", j->w->ops[j->pop[q]].name);
    }
    return buf;
}

void tsl__vf_times(double a, double b, char *ba, char *bb, size_t len) {
    static const int prec[] = {1, 3, 6, 9, 12};
    for (size_t i = 0; i < sizeof prec / sizeof prec[0]; i++) {
        snprintf(ba, len, "%.*f", prec[i], a);
        snprintf(bb, len, "%.*f", prec[i], b);
        if (strcmp(ba, bb) != 0 || a == b) return;
    }
    snprintf(ba, len, "%.17g", a);
    snprintf(bb, len, "%.17g", b);
}

double tsl__vf_copy_us(const tsl__vf_job *j, int32_t t, int to_device) {
    return tsl_copy_us(j->dev, j->w->tensors[t].bytes, to_device);
}

int64_t tsl__vf_event_slot(const tsl__vf_job *j, double t) {
    /* last position q with pe[q] <= t; pe is non-decreasing, pe[0] = 0 */
    int32_t lo = 0, hi = j->n_pos - 1;
    if (!(t >= j->pe[0])) return 2;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (j->pe[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    /* t inside the run of the next position: among that position's
     * completions' time point, after them (step 3 after step 1) */
    if (lo + 1 < j->n_pos && j->ps[lo + 1] < t) lo++;
    return 3 * (int64_t)lo + 2;
}

int64_t tsl__vf_done_slot(const tsl__vf_job *j, double t) {
    /* last position q with ps[q] < t; ps is non-decreasing, ps[0] = 0 */
    if (!(j->ps[0] < t)) return -1;
    int32_t lo = 0, hi = j->n_pos - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (j->ps[mid] < t)
            lo = mid;
        else
            hi = mid - 1;
    }
    /* inside position q (it started before t and ends after it), the
     * events due at t have slot 3(q-1)+2: the completion comes first */
    int64_t ev = tsl__vf_event_slot(j, t);
    int64_t done = 3 * (int64_t)lo + 1;
    return done < ev ? done : ev - 1;
}

/* ---- the workload's own shape --------------------------------------------------- */

tsl_status tsl__vf_check_workload(const tsl_workload *w) {
    if (w->n_tensors < 0 || w->n_ops < 0 || (w->n_tensors > 0 && !w->tensors) ||
        (w->n_ops > 0 && !w->ops))
        return tsl_fail(TSL_ERR_INVALID,
                        "verify: workload '%s' has n_tensors %d, n_ops %d "
                        "without arrays",
                        w->job, (int)w->n_tensors, (int)w->n_ops);
    double prev_end = 0.0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        if (op->n_in < 0 || op->n_out < 0 || (op->n_in > 0 && !op->in) ||
            (op->n_out > 0 && !op->out))
            return tsl_fail(TSL_ERR_INVALID,
                            "verify: workload '%s' ops[%d] ('%s'): n_in %d, n_out %d "
                            "without arrays",
                            w->job, (int)i, op->name, op->n_in, op->n_out);
        for (int k = 0; k < op->n_in + op->n_out; k++) {
            int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
            if (t < 0 || t >= w->n_tensors)
                return tsl_fail(TSL_ERR_INVALID,
                                "verify: workload '%s' ops[%d] ('%s').%s: tensor "
                                "index %d out of range [0, %d)",
                                w->job, (int)i, op->name, k < op->n_in ? "in" : "out", (int)t,
                                (int)w->n_tensors);
        }
        if (!isfinite(op->start_us) || !isfinite(op->end_us) || op->start_us < prev_end ||
            op->end_us < op->start_us)
            return tsl_fail(
                TSL_ERR_INVALID,
                "verify: workload '%s' ops[%d] ('%s'): times [%.17g, "
                "%.17g] us are not finite, ordered and after the previous op's end %.17g",
                w->job, (int)i, op->name, op->start_us, op->end_us, prev_end);
        prev_end = op->end_us;
    }
    return TSL_OK;
}

/* ---- building ---------------------------------------------------------------------- */

/* 1 if op `op` lists tensor t among its inputs. */
static int op_reads(const tsl_wl_op *op, int32_t t) {
    for (int k = 0; k < op->n_in; k++)
        if (op->in[k] == t) return 1;
    return 0;
}

/* 1 if event k (a recomputation of tensor t before op p) feeds a chain: a
 * recomputation later in event order before the same p re-runs a producer
 * reading t (docs/SCHEDULING.md, "Chained recomputations"). */
static int feeds_later_recompute(const tsl__vf_job *j, int32_t k) {
    const tsl_event *e = &j->p->events[k];
    const tsl_workload *w = j->w;
    for (int32_t m = k + 1; m < j->p->n_events; m++) {
        const tsl_event *f = &j->p->events[m];
        if (f->type != TSL_EV_RECOMPUTE || f->precede != e->precede || f->tensor < 0 ||
            f->tensor >= w->n_tensors)
            continue;
        int32_t g = w->tensors[f->tensor].producer;
        if (g >= 0 && g < w->n_ops && op_reads(&w->ops[g], e->tensor)) return 1;
    }
    return 0;
}

/* Checks the fields of event k that do not depend on time; reports and
 * returns 0 when it cannot be analysed further. */
static int event_well_formed(tsl__vf_job *j, int32_t k, tsl__vf_list *l) {
    const tsl_event *e = &j->p->events[k];
    const tsl_workload *w = j->w;
    char lb[400];
    if ((int)e->type < (int)TSL_EV_SWAP_OUT || (int)e->type > (int)TSL_EV_RECOMPUTE) {
        tsl__vf_add(l, j->prefix, "event %d: unknown type %d", (int)k, (int)e->type);
        return 0;
    }
    const char *ty = tsl__vf_event_type_name(e->type);
    if (e->tensor < 0 || e->tensor >= w->n_tensors) {
        tsl__vf_add(l, j->prefix, "event %d %s: tensor index %d out of range [0, %d)", (int)k, ty,
                    (int)e->tensor, (int)w->n_tensors);
        return 0;
    }
    const char *tn = w->tensors[e->tensor].name;
    int needs_precede = e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE;
    if (needs_precede && (e->precede < 0 || e->precede >= w->n_ops)) {
        tsl__vf_add(l, j->prefix, "event %d %s '%s': precede op index %d out of range [0, %d)",
                    (int)k, ty, tn, (int)e->precede, (int)w->n_ops);
        return 0;
    }
    int may_precede = e->type == TSL_EV_RELEASE; /* a planned wait for its swap-out */
    if (may_precede && e->precede != -1 && (e->precede <= e->trigger || e->precede >= w->n_ops)) {
        tsl__vf_add(l, j->prefix,
                    "event %d %s '%s': precede op index %d out of range (%d, %d): a release "
                    "precedes an op after its trigger",
                    (int)k, ty, tn, (int)e->precede, (int)e->trigger, (int)w->n_ops);
        return 0;
    }
    if (!needs_precede && !may_precede && e->precede != -1) {
        tsl__vf_add(l, j->prefix, "event %d %s '%s': precede must be -1 for a %s, got %d", (int)k,
                    ty, tn, ty, (int)e->precede);
        return 0;
    }
    if (e->type != TSL_EV_RECOMPUTE) {
        if (e->trigger < -1 || e->trigger >= w->n_ops) {
            tsl__vf_add(l, j->prefix, "event %d %s '%s': trigger op index %d out of range [-1, %d)",
                        (int)k, ty, tn, (int)e->trigger, (int)w->n_ops);
            return 0;
        }
        if (!isfinite(e->delay_us) || e->delay_us < 0) {
            tsl__vf_add(l, j->prefix, "%s: delay %g us is negative or not finite",
                        tsl__vf_ev_label(j, k, lb, sizeof lb), e->delay_us);
            return 0;
        }
    }
    if (e->type == TSL_EV_RELEASE && e->delay_us != 0.0 && e->precede < 0)
        /* analysed further as if it were 0 (a release acts at its trigger's end) */
        tsl__vf_add(l, j->prefix,
                    "%s: delay %g us must be 0 (a release acts at the end of its "
                    "trigger unless it precedes an op)",
                    tsl__vf_ev_label(j, k, lb, sizeof lb), e->delay_us);
    if (needs_precede && !op_reads(&w->ops[e->precede], e->tensor) &&
        !(e->type == TSL_EV_RECOMPUTE && feeds_later_recompute(j, k))) {
        tsl__vf_add(l, j->prefix,
                    e->type == TSL_EV_RECOMPUTE
                        ? "%s: op '%s' does not read the tensor, nor does a recomputation "
                          "after it before that op"
                        : "%s: op '%s' does not read the tensor",
                    tsl__vf_ev_label(j, k, lb, sizeof lb), w->ops[e->precede].name);
        return 0;
    }
    if (e->type == TSL_EV_RECOMPUTE) {
        if (e->trigger != -1 || e->delay_us != 0.0)
            /* analysed further: a recomputation's time follows from precede */
            tsl__vf_add(l, j->prefix,
                        "%s: trigger %d and delay %g us must be -1 and 0 (a "
                        "recomputation runs right before the op it precedes)",
                        tsl__vf_ev_label(j, k, lb, sizeof lb), (int)e->trigger, e->delay_us);
        int32_t g = j->producer[e->tensor];
        if (g < 0) {
            tsl__vf_add(l, j->prefix,
                        "%s: the tensor (kind %s) has no producer op in the "
                        "iteration to re-run",
                        tsl__vf_ev_label(j, k, lb, sizeof lb),
                        tsl_kind_name(w->tensors[e->tensor].kind));
            return 0;
        }
        if (g >= e->precede) {
            tsl__vf_add(l, j->prefix,
                        "%s: its producer '%s' does not run before the op it precedes",
                        tsl__vf_ev_label(j, k, lb, sizeof lb), w->ops[g].name);
            return 0;
        }
    }
    return 1;
}

/* Counting sort of (key, value) pairs into a CSR: off[0..n_keys], vals in
 * input order within a key. */
static tsl_status csr_build(int32_t n_keys, const int32_t *keys, const int32_t *vals, int32_t n,
                            int32_t **off_out, int32_t **vals_out) {
    int32_t *off = calloc((size_t)n_keys + 1, sizeof *off);
    int32_t *out = malloc(sizeof *out * (size_t)(n ? n : 1));
    int32_t *fill = malloc(sizeof *fill * (size_t)(n_keys ? n_keys : 1));
    if (!off || !out || !fill) {
        free(off);
        free(out);
        free(fill);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    for (int32_t i = 0; i < n; i++) off[keys[i] + 1]++;
    for (int32_t i = 0; i < n_keys; i++) off[i + 1] += off[i];
    for (int32_t i = 0; i < n_keys; i++) fill[i] = off[i];
    for (int32_t i = 0; i < n; i++) out[fill[keys[i]]++] = vals[i];
    free(fill);
    *off_out = off;
    *vals_out = out;
    return TSL_OK;
}

/* Lists of the ops writing each tensor, the producer of non-persistent
 * tensors and the last reading op. */
static tsl_status build_writes(tsl__vf_job *j) {
    const tsl_workload *w = j->w;
    int32_t nt = w->n_tensors, n = 0;
    for (int32_t i = 0; i < w->n_ops; i++) n += w->ops[i].n_out;
    int32_t *keys = malloc(sizeof *keys * (size_t)(n ? n : 1));
    int32_t *vals = malloc(sizeof *vals * (size_t)(n ? n : 1));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    int32_t m = 0;
    for (int32_t i = 0; i < w->n_ops; i++)
        for (int k = 0; k < w->ops[i].n_out; k++) {
            int32_t t = w->ops[i].out[k], dup = 0;
            for (int k2 = 0; k2 < k; k2++) dup |= w->ops[i].out[k2] == t;
            if (dup) continue;
            keys[m] = t;
            vals[m++] = i;
        }
    tsl_status st = csr_build(nt, keys, vals, m, &j->gen_off, &j->gen_ops);
    free(keys);
    free(vals);
    if (st != TSL_OK) return st;
    for (int32_t t = 0; t < nt; t++) {
        tsl_tensor_kind kd = w->tensors[t].kind;
        int has = j->gen_off[t + 1] > j->gen_off[t];
        j->producer[t] =
            has && !tsl_kind_is_persistent(kd) && kd != TSL_KIND_INPUT && kd != TSL_KIND_LABEL
                ? j->gen_ops[j->gen_off[t]]
                : -1;
        j->last_read[t] = -1;
    }
    for (int32_t i = 0; i < w->n_ops; i++)
        for (int k = 0; k < w->ops[i].n_in; k++) j->last_read[w->ops[i].in[k]] = i;
    return TSL_OK;
}

/* When position q, running op g's reads before op i (its own op, or the
 * op a recomputation precedes), can start if it would start at `at`: the
 * planned-wait rule of the file comment. *event gets the swap-in it waits
 * for last (-1: none). Triggers before op i have their times already. */
static double start_after_waits(const tsl__vf_job *j, int32_t g, int32_t i, double at,
                                int32_t *event) {
    const tsl_workload *w = j->w;
    const tsl_plan *p = j->p;
    double s = at;
    *event = -1;
    for (int k = 0; k < w->ops[g].n_in; k++) {
        int32_t t = w->ops[g].in[k], latest = -1;
        double li = 0.0, lf = 0.0;
        for (int32_t x = j->ev_off[t]; x < j->ev_off[t + 1]; x++) {
            int32_t e = j->ev_idx[x];
            const tsl_event *ev = &p->events[e];
            if (ev->type != TSL_EV_SWAP_IN || ev->trigger >= i) continue;
            double issue = (ev->trigger < 0 ? 0.0 : j->pe[j->op_pos[ev->trigger]]) + ev->delay_us;
            if (issue > at) continue;
            double fin = issue + tsl__vf_copy_us(j, t, 1);
            if (latest < 0 || issue > li || (issue == li && fin > lf)) {
                latest = e;
                li = issue;
                lf = fin;
            }
        }
        if (latest >= 0 && lf - at > TSL__VF_EPS_US && lf > s) {
            s = lf;
            *event = latest;
        }
    }
    return s;
}

/* The releases preceding op i (rel_off, rel_ev: a CSR by op), for the
 * first position of op i, would start at `at`: the latest time one of them
 * frees its tensor - at its issue (e_trigger + delay), or at the end of
 * the latest swap-out of the tensor triggered before op i and issued by
 * then - if more than TSL__VF_EPS_US after `at`; else `s`. *event gets it. */
static double after_releases(const tsl__vf_job *j, const int32_t *rel_off, const int32_t *rel_ev,
                             int32_t i, double at, double s, int32_t *event) {
    const tsl_plan *p = j->p;
    for (int32_t x = rel_off[i]; x < rel_off[i + 1]; x++) {
        int32_t k = rel_ev[x];
        const tsl_event *r = &p->events[k];
        double ri = (r->trigger < 0 ? 0.0 : j->pe[j->op_pos[r->trigger]]) + r->delay_us;
        double f = ri, best = -INFINITY;
        for (int32_t y = j->ev_off[r->tensor]; y < j->ev_off[r->tensor + 1]; y++) {
            int32_t o = j->ev_idx[y];
            const tsl_event *so = &p->events[o];
            if (!j->ok[o] || so->type != TSL_EV_SWAP_OUT || so->trigger >= i) continue;
            double is = (so->trigger < 0 ? 0.0 : j->pe[j->op_pos[so->trigger]]) + so->delay_us;
            if (is <= ri && is >= best) {
                best = is;
                double fin = is + tsl__vf_copy_us(j, r->tensor, 0);
                f = fin > ri ? fin : ri;
            }
        }
        if (f - at > TSL__VF_EPS_US && f > s) {
            s = f;
            *event = k;
        }
    }
    return s;
}

/* Places position q (nominal [ns, ne]) after the previous one: its start
 * after its waits (recorded; the first position of op i also waits for
 * the releases preceding i, rel_off/rel_ev), its end. */
static void place(tsl__vf_job *j, int32_t q, int32_t g, int32_t i, double ns, double ne,
                  const int32_t *rel_off, const int32_t *rel_ev, int first, int *lag) {
    double at = *lag ? j->pe[q - 1] : ns;
    int32_t ev;
    double s = start_after_waits(j, g, i, at, &ev);
    if (first) s = after_releases(j, rel_off, rel_ev, i, at, s, &ev);
    if (ev >= 0) {
        j->waits[j->n_waits++] = (tsl__vf_wait){q, ev, at, s - at};
        j->stall += s - at;
    }
    *lag |= s != ns;
    j->ps[q] = s;
    j->pe[q] = s == ns ? ne : s + (ne - ns);
}

double tsl__vf_would_start(const tsl__vf_job *j, int32_t q) {
    for (int32_t k = 0; k < j->n_waits; k++)
        if (j->waits[k].q == q) return j->waits[k].at;
    return j->ps[q];
}

/* Positions and their times (planned waits taken); recomputations before
 * op p in event order. */
static tsl_status build_positions(tsl__vf_job *j) {
    const tsl_workload *w = j->w;
    const tsl_plan *p = j->p;
    int32_t n_rc = 0;
    for (int32_t k = 0; k < p->n_events; k++)
        if (j->ok[k] && p->events[k].type == TSL_EV_RECOMPUTE) n_rc++;
    /* recomputations grouped by the op they precede, event order kept */
    /* (keys and vals serve the releases preceding an op below too) */
    int32_t *keys = malloc(sizeof *keys * (size_t)(p->n_events ? p->n_events : 1));
    int32_t *vals = malloc(sizeof *vals * (size_t)(p->n_events ? p->n_events : 1));
    int32_t *rc_off = NULL, *rc_ev = NULL;
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    int32_t m = 0;
    for (int32_t k = 0; k < p->n_events; k++)
        if (j->ok[k] && p->events[k].type == TSL_EV_RECOMPUTE) {
            keys[m] = p->events[k].precede;
            vals[m++] = k;
        }
    tsl_status st = csr_build(w->n_ops, keys, vals, m, &rc_off, &rc_ev);
    /* the releases preceding each op (well formed: a trigger before it) */
    int32_t n_rel = 0, *rel_off = NULL, *rel_ev = NULL;
    for (int32_t k = 0; st == TSL_OK && k < p->n_events; k++)
        if (j->ok[k] && p->events[k].type == TSL_EV_RELEASE && p->events[k].precede >= 0) {
            keys[n_rel] = p->events[k].precede;
            vals[n_rel++] = k;
        }
    if (st == TSL_OK) st = csr_build(w->n_ops, keys, vals, n_rel, &rel_off, &rel_ev);
    free(keys);
    free(vals);
    if (st != TSL_OK) {
        free(rc_off);
        free(rc_ev);
        return st;
    }

    j->n_pos = 1 + w->n_ops + n_rc;
    size_t np = (size_t)j->n_pos;
    j->ps = malloc(sizeof *j->ps * np);
    j->pe = malloc(sizeof *j->pe * np);
    j->pop = malloc(sizeof *j->pop * np);
    j->pev = malloc(sizeof *j->pev * np);
    j->op_pos = malloc(sizeof *j->op_pos * (size_t)(w->n_ops ? w->n_ops : 1));
    j->waits = malloc(sizeof *j->waits * np);
    if (!j->ps || !j->pe || !j->pop || !j->pev || !j->op_pos || !j->waits) {
        free(rc_off);
        free(rc_ev);
        free(rel_off);
        free(rel_ev);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    j->ps[0] = j->pe[0] = 0.0;
    j->pop[0] = -1;
    j->pev[0] = -1;
    double shift = 0.0;
    int32_t q = 1;
    int lag = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        double s = w->ops[i].start_us;
        for (int32_t r = rc_off[i]; r < rc_off[i + 1]; r++) {
            int32_t k = rc_ev[r];
            int32_t g = j->producer[p->events[k].tensor];
            double ns = s + shift;
            shift += w->ops[g].end_us - w->ops[g].start_us;
            place(j, q, g, i, ns, s + shift, rel_off, rel_ev, r == rc_off[i], &lag);
            j->pop[q] = g;
            j->pev[q] = k;
            j->ev_pos[k] = q;
            j->issue[k] = j->ps[q];
            j->fin[k] = j->pe[q];
            q++;
        }
        j->op_pos[i] = q;
        place(j, q, i, i, s + shift, w->ops[i].end_us + shift, rel_off, rel_ev,
              rc_off[i] == rc_off[i + 1], &lag);
        j->pop[q] = i;
        j->pev[q] = -1;
        q++;
    }
    j->period = w->n_ops ? j->pe[j->n_pos - 1] : 0.0;
    free(rc_off);
    free(rc_ev);
    free(rel_off);
    free(rel_ev);
    return TSL_OK;
}

/* Issue times and copy ends of swaps, issue and free times of releases. */
static void event_times(tsl__vf_job *j) {
    const tsl_plan *p = j->p;
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (!j->ok[k] || e->type == TSL_EV_RECOMPUTE) continue;
        double et = e->trigger < 0 ? 0.0 : j->pe[j->op_pos[e->trigger]];
        j->issue[k] = e->type == TSL_EV_RELEASE && e->precede < 0 ? et : et + e->delay_us;
        if (e->type == TSL_EV_SWAP_OUT) j->fin[k] = j->issue[k] + tsl__vf_copy_us(j, e->tensor, 0);
        if (e->type == TSL_EV_SWAP_IN) j->fin[k] = j->issue[k] + tsl__vf_copy_us(j, e->tensor, 1);
    }
    /* a release frees at max(e_trigger, end of the tensor's latest swap-out
     * issued at or before e_trigger) */
    for (int32_t k = 0; k < p->n_events; k++) {
        const tsl_event *e = &p->events[k];
        if (!j->ok[k] || e->type != TSL_EV_RELEASE) continue;
        double r = j->issue[k], best_issue = -INFINITY, f = r;
        for (int32_t x = j->ev_off[e->tensor]; x < j->ev_off[e->tensor + 1]; x++) {
            int32_t o = j->ev_idx[x];
            if (!j->ok[o] || p->events[o].type != TSL_EV_SWAP_OUT || j->issue[o] > r) continue;
            if (j->issue[o] >= best_issue) {
                best_issue = j->issue[o];
                f = j->fin[o] > r ? j->fin[o] : r;
            }
        }
        j->fin[k] = f;
    }
}

/* (tensor, position) pairs, by tensor then position. */
static int cmp_pair(const void *a, const void *b) {
    const int32_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Reading positions per tensor (rd_off, rd_pos): the ops reading it, and
 * the recomputations whose producer reads it, in position order; an op
 * listing a tensor twice reads it once. TSL_ERR_OOM. */
static tsl_status build_reads(tsl__vf_job *j) {
    const tsl_workload *w = j->w;
    size_t n = 0;
    for (int32_t q = 1; q < j->n_pos; q++) n += (size_t)w->ops[j->pop[q]].n_in;
    int32_t *pairs = malloc(sizeof *pairs * 2 * (n ? n : 1));
    if (!pairs) return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    int32_t m = 0;
    for (int32_t q = 1; q < j->n_pos; q++) {
        const tsl_wl_op *op = &w->ops[j->pop[q]];
        int32_t self = j->pev[q] >= 0 ? j->p->events[j->pev[q]].tensor : -1;
        for (int k = 0; k < op->n_in; k++) {
            int32_t t = op->in[k], dup = t == self;
            for (int k2 = 0; k2 < k; k2++) dup |= op->in[k2] == t;
            if (dup) continue;
            pairs[2 * m] = t;
            pairs[2 * m + 1] = q;
            m++;
        }
    }
    qsort(pairs, (size_t)m, 2 * sizeof *pairs, cmp_pair);
    int32_t *keys = malloc(sizeof *keys * (size_t)(m ? m : 1));
    int32_t *vals = malloc(sizeof *vals * (size_t)(m ? m : 1));
    tsl_status st = TSL_OK;
    if (!keys || !vals) {
        st = tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    } else {
        for (int32_t i = 0; i < m; i++) {
            keys[i] = pairs[2 * i];
            vals[i] = pairs[2 * i + 1];
        }
        st = csr_build(w->n_tensors, keys, vals, m, &j->rd_off, &j->rd_pos);
    }
    free(keys);
    free(vals);
    free(pairs);
    return st;
}

tsl_status tsl__vf_build(tsl__vf_job *j, tsl__vf_list *l) {
    const tsl_workload *w = j->w;
    const tsl_plan *p = j->p;
    size_t ne = (size_t)(p->n_events ? p->n_events : 1),
           nt = (size_t)(w->n_tensors ? w->n_tensors : 1);
    j->ok = calloc(ne, 1);
    j->issue = calloc(ne, sizeof *j->issue);
    j->fin = calloc(ne, sizeof *j->fin);
    j->ev_pos = malloc(sizeof *j->ev_pos * ne);
    j->so_good = calloc(ne, 1);
    j->opened = calloc(ne, 1);
    j->producer = malloc(sizeof *j->producer * nt);
    j->last_read = malloc(sizeof *j->last_read * nt);
    j->absent0 = calloc(nt, 1);
    j->absent_reported = calloc(nt, 1);
    if (!j->ok || !j->issue || !j->fin || !j->ev_pos || !j->so_good || !j->opened || !j->producer ||
        !j->last_read || !j->absent0 || !j->absent_reported)
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    for (size_t k = 0; k < ne; k++) j->ev_pos[k] = -1;
    tsl_status st = build_writes(j);
    if (st != TSL_OK) return st;

    if (strcmp(p->job, w->job) != 0)
        tsl__vf_add(l, j->prefix, "the plan is for job '%s' but the workload is job '%s'", p->job,
                    w->job);
    int32_t n_ok = 0;
    for (int32_t k = 0; k < p->n_events; k++) {
        j->ok[k] = (uint8_t)event_well_formed(j, k, l);
        n_ok += j->ok[k];
    }
    /* events per tensor (well-formed ones), in event order */
    int32_t *keys = malloc(sizeof *keys * (size_t)(n_ok ? n_ok : 1));
    int32_t *vals = malloc(sizeof *vals * (size_t)(n_ok ? n_ok : 1));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return tsl_fail(TSL_ERR_OOM, "verify: out of host memory");
    }
    int32_t m = 0;
    for (int32_t k = 0; k < p->n_events; k++)
        if (j->ok[k]) {
            keys[m] = p->events[k].tensor;
            vals[m++] = k;
        }
    st = csr_build(w->n_tensors, keys, vals, m, &j->ev_off, &j->ev_idx);
    free(keys);
    free(vals);
    if (st == TSL_OK) st = build_positions(j);
    if (st == TSL_OK) event_times(j);
    if (st == TSL_OK) st = build_reads(j);
    return st;
}

void tsl__vf_free(tsl__vf_job *j) {
    free(j->ps);
    free(j->pe);
    free(j->pop);
    free(j->pev);
    free(j->op_pos);
    free(j->waits);
    free(j->ok);
    free(j->issue);
    free(j->fin);
    free(j->ev_pos);
    free(j->producer);
    free(j->gen_off);
    free(j->gen_ops);
    free(j->rd_off);
    free(j->rd_pos);
    free(j->last_read);
    free(j->ev_off);
    free(j->ev_idx);
    free(j->absent0);
    free(j->absent_reported);
    free(j->iv_off);
    free(j->iv);
    free(j->so_good);
    free(j->opened);
    memset(j, 0, sizeof *j);
}

size_t tsl__vf_pos_block(const tsl__vf_job *j, int32_t q) {
    if (j->pev[q] >= 0) return tsl__replay_block(j->w, j->p->events[j->pev[q]].tensor);
    return j->pop[q] >= 0 ? j->w->ops[j->pop[q]].workspace : 0;
}
