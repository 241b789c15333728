/*
 * ilp_job.c - the analysis of one job for the integer-program policies
 * (ilp_internal.h): Checkmate's stages (one per op), the candidate
 * tensors, the memory no decision changes per stage, the stages a copy
 * started at a stage has ended by, and where a recomputation is possible.
 *
 * The vanilla load during op t is its workspace plus every tensor alive
 * then: persistent ones always, data from the load, others from their
 * first access (their generation) to their last access (activity
 * analysis) inclusive. That is the peak sweep's load after op t's
 * allocations (docs/SCHEDULING.md); the stage model adds a candidate's
 * bytes where the decisions keep it resident, recompute it or bring it in.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/ilp_internal.h"

void tsl__ilp_job_free(tsl__ilp_job *J) {
    tsl__activity_free(&J->act);
    free(J->c);
    free(J->cand_of);
    free(J->fixed);
    free(J->reads);
    free(J->sf_out);
    free(J->sf_in);
    free(J->rc_at);
    free(J->fast_s);
    free(J->alg_n);
    free(J->alg_usp);
    free(J->alg_wsp);
    free(J->alg_us);
    free(J->alg_ws);
    memset(J, 0, sizeof *J);
}

/* The first stage u > t whose start s_u comes at or after the start of
 * stage t plus d (a copy issued at s_t has ended by then), u <= last, on
 * the fastest algorithms' times; -1 if none. */
static int32_t span_end(const tsl__ilp_job *J, int32_t t, double d, int32_t last) {
    double end = J->fast_s[t] + d;
    for (int32_t u = t + 1; u <= last; u++)
        if (J->fast_s[u] + tsl__margin(J->fast_s[u]) >= end) return u;
    return -1;
}

/* The ops' algorithms into J->alg, and the stages' starts on the fastest.
 * Returns 0 if out of host memory. */
static int algorithms(tsl__ilp_job *J) {
    const tsl_workload *w = J->w;
    size_t n = (size_t)w->n_ops, total = 0;
    J->alg_n = malloc((n + 1) * sizeof *J->alg_n);
    J->alg_usp = malloc((n + 1) * sizeof *J->alg_usp);
    J->alg_wsp = malloc((n + 1) * sizeof *J->alg_wsp);
    J->fast_s = malloc((n + 1) * sizeof *J->fast_s);
    if (!J->alg_n || !J->alg_usp || !J->alg_wsp || !J->fast_s) return 0;
    for (int32_t t = 0; t < w->n_ops; t++) total += (size_t)tsl_workload_op_n_algos(w, t);
    J->alg_us = malloc((total + 1) * sizeof *J->alg_us);
    J->alg_ws = malloc((total + 1) * sizeof *J->alg_ws);
    if (!J->alg_us || !J->alg_ws) return 0;
    size_t at = 0;
    double s = w->n_ops ? w->ops[0].start_us : 0;
    for (int32_t t = 0; t < w->n_ops; t++) {
        int32_t na = tsl_workload_op_n_algos(w, t);
        J->alg_n[t] = na;
        J->alg_usp[t] = J->alg_us + at;
        J->alg_wsp[t] = J->alg_ws + at;
        double fast = INFINITY;
        for (int32_t k = 0; k < na; k++) {
            tsl_wl_algo a = tsl_workload_op_algo(w, t, k);
            J->alg_us[at + (size_t)k] = a.us;
            J->alg_ws[at + (size_t)k] = a.workspace;
            fast = fmin(fast, a.us);
        }
        at += (size_t)na;
        /* a gap between ops (none in a workload from a graph) is kept */
        if (t > 0) s += w->ops[t].start_us - w->ops[t - 1].end_us;
        J->fast_s[t] = s;
        s += fast;
    }
    J->fast_s[w->n_ops] = s;
    J->alg = (tsl__ilp_algos){J->alg_n, J->alg_usp, J->alg_wsp};
    return 1;
}

/* 1 if the producer q of candidate k can be re-run right before op t:
 * every input not a candidate is alive during op t in vanilla (a
 * candidate input is the program's: resident or recomputed first) and no
 * input is written by an op in (q, t). */
static int rc_possible(const tsl__ilp_job *J, int32_t q, int32_t t) {
    const tsl_wl_op *o = &J->w->ops[q];
    const tsl__activity *a = &J->act;
    for (int i = 0; i < o->n_in; i++) {
        int32_t x = o->in[i];
        int32_t lo = a->acc_off[x], hi = a->acc_off[x + 1];
        for (int32_t k = lo; k < hi; k++)
            if (a->acc[k].writes && a->acc[k].op > q && a->acc[k].op < t) return 0;
        if (J->cand_of[x] >= 0) { /* the program keeps it resident or recomputes it first */
            if (J->c[J->cand_of[x]].last < t) return 0;
            continue;
        }
        if (a->persistent[x]) continue;
        if (hi <= lo) return 0;
        int32_t first = a->data[x] ? -1 : a->acc[lo].op, last = a->acc[hi - 1].op;
        if (!(first < t && last >= t)) return 0;
    }
    return 1;
}

/* Marks the candidates and fills c[] (J->w, act, cand_of allocated). */
static void find_candidates(tsl__ilp_job *J, size_t swap_min) {
    const tsl_workload *w = J->w;
    const tsl__activity *a = &J->act;
    J->nc = 0;
    /* the forward pass: the ops before the first one generating a gradient */
    int32_t fwd_end = w->n_ops;
    for (int32_t i = 0; i < w->n_ops && fwd_end == w->n_ops; i++)
        for (int k = 0; k < w->ops[i].n_out; k++)
            if (w->tensors[w->ops[i].out[k]].kind == TSL_KIND_GRADIENT) fwd_end = i;
    for (int32_t x = 0; x < w->n_tensors; x++) {
        J->cand_of[x] = -1;
        int32_t q = w->tensors[x].producer, lo = a->acc_off[x], hi = a->acc_off[x + 1];
        if (a->persistent[x] || a->data[x] || q < 0 || q >= w->optimizer_begin) continue;
        if (w->tensors[x].bytes == 0 || hi - lo < 2) continue;
        if (a->acc[lo].op != q || !a->acc[lo].writes) continue;
        int writes = 0;
        for (int32_t k = lo; k < hi; k++) writes += a->acc[k].writes;
        if (writes != 1 || a->acc[lo].reads) continue;
        const tsl_wl_op *o = &w->ops[q];
        double lat = o->end_us - o->start_us;
        tsl__ilp_cand *c = &J->c[J->nc];
        *c = (tsl__ilp_cand){
            .tensor = x,
            .q = q,
            .last = a->acc[hi - 1].op,
            .bytes = w->tensors[x].bytes,
            .rc_us = lat,
            .out_us = tsl_copy_us(J->dev, w->tensors[x].bytes, 0),
            .in_us = tsl_copy_us(J->dev, w->tensors[x].bytes, 1),
            /* an op with several algorithms is not re-run: its workspace and time
             * would follow the choice */
            .rc_ok = o->n_out == 1 && o->out[0] == x && o->workspace == 0 && lat > 0 &&
                     tsl_workload_op_n_algos(w, q) == 1,
            .swap_ok = w->tensors[x].bytes >= swap_min && q < fwd_end,
        };
        J->cand_of[x] = J->nc++;
    }
}

/* The vanilla load during each op less the candidates over (q, last].
 * Returns 0 if out of host memory. */
static int fixed_memory(tsl__ilp_job *J) {
    const tsl_workload *w = J->w;
    const tsl__activity *a = &J->act;
    int32_t n = J->n;
    for (int32_t t = 0; t < n; t++) J->fixed[t] = (double)w->ops[t].workspace;
    double base = 0, *add = calloc((size_t)n + 1, sizeof *add); /* alive intervals, swept */
    if (!add) return 0;
    for (int32_t x = 0; x < w->n_tensors; x++) {
        double b = (double)w->tensors[x].bytes;
        int32_t lo = a->acc_off[x], hi = a->acc_off[x + 1];
        if (a->persistent[x]) {
            base += b;
            continue;
        }
        if (hi <= lo) continue;
        int32_t first = a->data[x] ? 0 : a->acc[lo].op, last = a->acc[hi - 1].op;
        if (J->cand_of[x] >= 0) last = first; /* the candidate's own stage q only */
        if (first < 0) first = 0;
        add[first] += b;
        add[last + 1] -= b;
    }
    double run = base;
    for (int32_t t = 0; t < n; t++) {
        run += add[t];
        J->fixed[t] += run;
    }
    free(add);
    return 1;
}

tsl_status tsl__ilp_job_init(tsl__ilp_job *J, const tsl_workload *w,
                             const tsl_device_profile *dev, size_t swap_min) {
    memset(J, 0, sizeof *J);
    J->w = w;
    J->dev = dev;
    J->n = w->n_ops;
    tsl_status st = tsl__activity_build(w, &J->act);
    if (st != TSL_OK) return st;
    size_t n = (size_t)w->n_ops, nt = (size_t)w->n_tensors + 1;
    J->c = malloc(nt * sizeof *J->c);
    J->cand_of = malloc(nt * sizeof *J->cand_of);
    J->fixed = malloc((n + 1) * sizeof *J->fixed);
    if (!J->c || !J->cand_of || !J->fixed || !algorithms(J)) goto oom;
    find_candidates(J, swap_min);
    if (!fixed_memory(J)) goto oom;
    size_t nc = (size_t)J->nc, cells = n * nc + 1;
    J->reads = calloc(cells, 1);
    J->rc_at = calloc(cells, 1);
    J->sf_out = malloc(cells * sizeof *J->sf_out);
    J->sf_in = malloc(cells * sizeof *J->sf_in);
    if (!J->reads || !J->rc_at || !J->sf_out || !J->sf_in) goto oom;
    for (int32_t t = 0; t < J->n; t++) {
        const tsl_wl_op *o = &w->ops[t];
        for (int i = 0; i < o->n_in; i++) {
            int32_t k = J->cand_of[o->in[i]];
            if (k >= 0 && t > J->c[k].q) J->reads[(size_t)t * nc + (size_t)k] = 1;
        }
    }
    for (int32_t k = 0; k < J->nc; k++) {
        const tsl__ilp_cand *c = &J->c[k];
        for (int32_t t = 0; t < J->n; t++) {
            size_t i = (size_t)t * nc + (size_t)k;
            J->sf_out[i] = J->sf_in[i] = -1;
            if (t <= c->q || t > c->last) continue;
            J->sf_out[i] = span_end(J, t, c->out_us, c->last);
            J->sf_in[i] = span_end(J, t, c->in_us, c->last);
            J->rc_at[i] = (uint8_t)(c->rc_ok && rc_possible(J, c->q, t));
        }
    }
    double pk = 0;
    for (int32_t t = 0; t < J->n; t++) {
        double l = J->fixed[t];
        for (int32_t k = 0; k < J->nc; k++)
            if (t > J->c[k].q && t <= J->c[k].last) l += (double)J->c[k].bytes;
        if (l > pk) pk = l;
    }
    J->vanilla_peak = (size_t)pk;
    return TSL_OK;
oom:
    tsl__ilp_job_free(J);
    return tsl_fail(TSL_ERR_OOM, "ilp: out of host memory for job '%s'", w->job);
}

tsl_status tsl__ilp_sched_init(tsl__ilp_sched *s, const tsl__ilp_job *J) {
    size_t cells = (size_t)J->n * (size_t)J->nc + 1;
    s->S = calloc(cells, 1);
    s->R = calloc(cells, 1);
    s->O = calloc(cells, 1);
    s->P = calloc(cells, 1);
    s->algo = calloc((size_t)J->n + 1, sizeof *s->algo);
    if (!s->S || !s->R || !s->O || !s->P || !s->algo) {
        tsl__ilp_sched_free(s);
        return tsl_fail(TSL_ERR_OOM, "ilp: out of host memory for a schedule");
    }
    for (int32_t k = 0; k < J->nc; k++)
        for (int32_t t = J->c[k].q + 1; t <= J->c[k].last; t++)
            s->S[(size_t)t * (size_t)J->nc + (size_t)k] = 1;
    return TSL_OK;
}

void tsl__ilp_sched_free(tsl__ilp_sched *s) {
    free(s->S);
    free(s->R);
    free(s->O);
    free(s->P);
    free(s->algo);
    memset(s, 0, sizeof *s);
}

void tsl__ilp_stage_loads(const tsl__ilp_job *J, const tsl__ilp_sched *s, double *load) {
    size_t nc = (size_t)J->nc;
    for (int32_t t = 0; t < J->n; t++) {
        load[t] = J->fixed[t];
        for (int32_t k = 0; k < J->nc; k++) {
            size_t i = (size_t)t * nc + (size_t)k;
            if (s->S[i] || s->R[i]) load[t] += (double)J->c[k].bytes;
        }
    }
    /* the stages where a prefetch is in flight, over [p, sf_in), and the tensor is not
     * counted already (neither S nor R; covered: the union of the spans so far) */
    for (int32_t k = 0; k < J->nc; k++) {
        int32_t covered = 0;
        for (int32_t p = J->c[k].q + 1; p <= J->c[k].last; p++) {
            size_t ip = (size_t)p * nc + (size_t)k;
            if (!s->P[ip]) continue;
            for (int32_t u = p > covered ? p : covered; u < J->sf_in[ip]; u++) {
                size_t iu = (size_t)u * nc + (size_t)k;
                if (!s->S[iu] && !s->R[iu]) load[u] += (double)J->c[k].bytes;
            }
            if (J->sf_in[ip] > covered) covered = J->sf_in[ip];
        }
    }
}
