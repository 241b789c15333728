/*
 * autoswap_scores.c - AutoSwap's candidate variables and priority scores
 * (Zhang et al., SmartPool + AutoSwap, sections IV-A and IV-B), on a
 * job's vanilla timeline and load.
 *
 * Candidates (IV-A): a variable is a candidate if it is at least the size
 * threshold and its lifetime spans the load peak: here, the tensor has an
 * access before the op running at the job's peak and one after it (the
 * next reading it), and the peak op itself does not use it; the candidate
 * is that gap. A persistent tensor whose accesses all lie on one side of
 * the peak is a candidate for its gap across the iteration boundary (the
 * paper: weights "swapped out at one iteration after the last access and
 * swapped back at the next iteration before the first access").
 *
 * Scores (IV-B), with t_out and t_in the copy times:
 *  - DOA: the time between the two accesses minus t_out + t_in;
 *  - AOA: DOA times the size; where DOA is negative, DOA divided by the
 *    size (the paper's rule, so that among negative ones the smaller hurt
 *    more);
 *  - WDOA: the area under the original (vanilla) load curve while the
 *    tensor is away - from the end of the access before plus t_out to the
 *    start of the access after minus t_in (0 if that is empty). The paper
 *    says "between two consecutive accesses" and that WDOA "considers both
 *    DOA and the memory load during the period when the variable is
 *    swapped out": the absence interval, whose length is DOA;
 *  - SWDOA: WDOA made submodular: the candidate of largest WDOA is taken,
 *    the load updated (its size taken off over its absence interval), the
 *    others' WDOA computed again on the updated load, and so on; each
 *    candidate's SWDOA is its WDOA when it was taken (so SWDOA ranks as the
 *    greedy order). The load is updated exactly: a candidate's WDOA falls
 *    by the size of each one taken before times the overlap of their
 *    absence intervals (candidates of other jobs do not interact).
 * Each score is then standardised over all the candidates (mean 0,
 * standard deviation 1; 0 where they are all equal), as the paper does
 * before combining them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sched/autoswap_internal.h"

tsl_status tsl__as_load_build(const tsl__pjob *J, tsl__as_load *L) {
    int32_t no = J->w->n_ops;
    memset(L, 0, sizeof *L);
    L->n_ops = no;
    L->s = malloc(((size_t)no + 1) * sizeof *L->s);
    L->e = malloc(((size_t)no + 1) * sizeof *L->e);
    L->load = malloc(((size_t)no + 1) * sizeof *L->load);
    L->cum = malloc(((size_t)no + 1) * sizeof *L->cum);
    if (!L->s || !L->e || !L->load || !L->cum || J->prof.n < 0) { /* (prof.n < 0: no check
                                                                    points, out of memory) */
        tsl__as_load_free(L);
        return tsl_fail(TSL_ERR_OOM, "autoswap: out of host memory for a load of %d ops", no);
    }
    /* the empty plan's check points: the data load, then one per op */
    TSL_ASSERT(J->prof.n == (int64_t)no + 1 && J->plan->n_events == 0);
    memcpy(L->s, J->tl.s, (size_t)no * sizeof *L->s);
    memcpy(L->e, J->tl.e, (size_t)no * sizeof *L->e);
    L->load0 = J->prof.load[0];
    L->cum[0] = 0;
    for (int32_t i = 0; i < no; i++) {
        L->load[i] = J->prof.load[i + 1];
        L->cum[i + 1] = L->cum[i] + (double)L->load[i] * (L->e[i] - L->s[i]);
    }
    return TSL_OK;
}

void tsl__as_load_free(tsl__as_load *L) {
    free(L->s);
    free(L->e);
    free(L->load);
    free(L->cum);
    memset(L, 0, sizeof *L);
}

/* The integral of the load from 0 to x. */
static double integral_to(const tsl__as_load *L, double x) {
    int32_t no = L->n_ops;
    if (no == 0 || x <= 0) return 0;
    if (x >= L->e[no - 1]) return L->cum[no];
    int32_t lo = 0, hi = no - 1; /* the op whose run holds x: last with s <= x */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (L->s[mid] <= x) lo = mid;
        else hi = mid - 1;
    }
    return L->cum[lo] + (double)L->load[lo] * (x - L->s[lo]);
}

double tsl__as_load_integral(const tsl__as_load *L, double a, double b) {
    return b > a ? integral_to(L, b) - integral_to(L, a) : 0.0;
}

/* The length of the overlap of two candidates' absence intervals. */
static double overlap(const tsl__as_cand *a, const tsl__as_cand *b) {
    double o = 0;
    for (int i = 0; i < a->n_abs; i++)
        for (int k = 0; k < b->n_abs; k++) {
            double lo = fmax(a->abs_lo[i], b->abs_lo[k]), hi = fmin(a->abs_hi[i], b->abs_hi[k]);
            if (hi > lo) o += hi - lo;
        }
    return o;
}

/* The candidate for tensor t of job j, if it is one: fills *c. */
static int candidate(const tsl__kit *K, int j, int32_t t, size_t min_bytes, tsl__as_cand *c) {
    const tsl__pjob *J = &K->jobs[j];
    const tsl_workload *w = J->w;
    const tsl__activity *a = &J->act;
    const tsl__timeline *tl = &J->tl;
    int32_t P = J->pk.op;
    size_t bytes = w->tensors[t].bytes;
    if (a->data[t] || bytes < min_bytes || bytes == 0) return 0;
    int32_t lo = a->acc_off[t], hi = a->acc_off[t + 1];
    if (lo == hi || (P >= 0 && tsl__op_accesses(w, P, t))) return 0;
    int32_t kb = P < 0 ? -1 : tsl__acc_before(a, t, P), ka = tsl__acc_after(a, t, P);
    int32_t before, after;
    if (kb >= 0 && ka >= 0) {
        if (!a->acc[ka].reads) return 0;
        before = a->acc[kb].op;
        after = a->acc[ka].op;
    } else if (a->persistent[t]) { /* across the boundary: last access, then first */
        if (!a->acc[lo].reads) return 0;
        before = a->acc[hi - 1].op;
        after = a->acc[lo].op;
    } else
        return 0;
    *c = (tsl__as_cand){.job = j, .tensor = t, .before = before, .after = after, .bytes = bytes};
    c->t_out = tsl_copy_us(J->dev, bytes, 0);
    c->t_in = tsl_copy_us(J->dev, bytes, 1);
    double out_end = tl->e[before] + c->t_out, in_start = tl->s[after] - c->t_in;
    if (after > before) {
        c->gap = tl->s[after] - tl->e[before];
        if (in_start > out_end) {
            c->abs_lo[0] = out_end;
            c->abs_hi[0] = in_start;
            c->n_abs = 1;
        }
    } else {
        double T = tl->period;
        c->gap = T - tl->e[before] + tl->s[after];
        if (out_end < T) { /* away until the end, and from the start of the next */
            c->abs_lo[c->n_abs] = out_end;
            c->abs_hi[c->n_abs++] = T;
        }
        double from = out_end > T ? out_end - T : 0.0;
        if (in_start > from) {
            c->abs_lo[c->n_abs] = from;
            c->abs_hi[c->n_abs++] = in_start;
        }
    }
    double doa = c->gap - c->t_out - c->t_in;
    c->score[TSL__AS_DOA] = doa;
    c->score[TSL__AS_AOA] = doa >= 0 ? doa * (double)bytes : doa / (double)bytes;
    return 1;
}

/* SWDOA of every candidate (the greedy order on the updated load). */
static tsl_status swdoa(tsl__as_cand *c, int n) {
    double *cur = malloc(((size_t)n + 1) * sizeof *cur);
    uint8_t *taken = calloc((size_t)n + 1, 1);
    if (!cur || !taken) {
        free(cur);
        free(taken);
        return tsl_fail(TSL_ERR_OOM, "autoswap: out of host memory for %d candidates", n);
    }
    for (int i = 0; i < n; i++) cur[i] = c[i].score[TSL__AS_WDOA];
    for (int step = 0; step < n; step++) {
        int b = -1;
        for (int i = 0; i < n; i++)
            if (!taken[i] && (b < 0 || cur[i] > cur[b])) b = i;
        taken[b] = 1;
        c[b].score[TSL__AS_SWDOA] = cur[b];
        for (int i = 0; i < n; i++)
            if (!taken[i] && c[i].job == c[b].job) cur[i] -= (double)c[b].bytes * overlap(&c[i], &c[b]);
    }
    free(cur);
    free(taken);
    return TSL_OK;
}

/* Standardises every score over the candidates. */
static void standardise(tsl__as_cand *c, int n) {
    for (int k = 0; k < TSL__AS_N_SCORES; k++) {
        double m = 0, v = 0;
        for (int i = 0; i < n; i++) m += c[i].score[k];
        m /= n;
        for (int i = 0; i < n; i++) v += (c[i].score[k] - m) * (c[i].score[k] - m);
        double sd = sqrt(v / n);
        for (int i = 0; i < n; i++) c[i].z[k] = sd > 0 ? (c[i].score[k] - m) / sd : 0.0;
    }
}

tsl_status tsl__as_candidates(const tsl__kit *K, const tsl__as_load *L, size_t min_bytes,
                              tsl__as_cand **out, int *n) {
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (int j = 0; j < K->n_jobs; j++) cap += (size_t)K->jobs[j].w->n_tensors;
    tsl__as_cand *c = malloc(cap * sizeof *c);
    if (!c) return tsl_fail(TSL_ERR_OOM, "autoswap: out of host memory for %zu candidates", cap);
    int m = 0;
    for (int j = 0; j < K->n_jobs; j++)
        for (int32_t t = 0; t < K->jobs[j].w->n_tensors; t++)
            if (candidate(K, j, t, min_bytes, &c[m])) {
                double wd = 0;
                for (int i = 0; i < c[m].n_abs; i++)
                    wd += tsl__as_load_integral(&L[j], c[m].abs_lo[i], c[m].abs_hi[i]);
                c[m++].score[TSL__AS_WDOA] = wd;
            }
    if (m == 0) {
        free(c);
        return TSL_OK;
    }
    tsl_status st = swdoa(c, m);
    if (st != TSL_OK) {
        free(c);
        return st;
    }
    standardise(c, m);
    *out = c;
    *n = m;
    return TSL_OK;
}
