/*
 * plan_gen.c - random valid plans for a graph's workload (see plan_gen.h).
 *
 * The generator keeps the items accepted so far as a list of events; a
 * candidate item is appended to a copy of that list, the copy is sorted,
 * its predicted figures are filled from tsl_peak_analysis and the verifier
 * judges it. Channel bookings and the shifted timeline are recomputed from
 * the accepted events before each candidate, so that a new copy is placed
 * where the channel is free on the timeline the plan really has. With the
 * environment variable PG_DEBUG set, every rejected candidate's first
 * violation is printed on stderr.
 */
#include "plan_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "sched/kit.h"
#include "tensile/backend_cpu.h"

pg_opts pg_opts_default(void) {
    pg_opts o = {.max_items = 6, .attempts = 24, .p_recompute = 0.35, .p_wait = 0.0};
    return o;
}

/* ---- the workload's access lists --------------------------------------------- */

typedef struct pg_ctx {
    const tsl_graph *g;
    const tsl_workload *w;
    const tsl_device_profile *dev;
    int32_t *acc_off;    /* per tensor: its accesses acc_op[acc_off[t] .. acc_off[t+1]) */
    int32_t *acc_op;     /* distinct ops accessing the tensor, in order */
    uint8_t *acc_rd;     /* 1 if that op reads it */
    uint8_t *acc_wr;     /* 1 if that op writes it */
    int32_t *last_read;  /* per tensor: last op reading it, -1 if none */
    int32_t *gap_t;      /* every usable gap: tensor and access index a, */
    int32_t *gap_a;      /* the gap being (acc[a], acc[a+1]) */
    int32_t n_gaps;
    double *s, *e;       /* per op: shifted start and end under the accepted events */
    double p_wait;       /* pg_opts.p_wait */
    uint64_t rs;         /* random state */
} pg_ctx;

static int op_lists(const tsl_wl_op *op, int32_t t, int out) {
    int n = out ? op->n_out : op->n_in;
    const int32_t *v = out ? op->out : op->in;
    for (int k = 0; k < n; k++)
        if (v[k] == t) return 1;
    return 0;
}

static void ctx_free(pg_ctx *c) {
    free(c->acc_off);
    free(c->acc_op);
    free(c->acc_rd);
    free(c->acc_wr);
    free(c->last_read);
    free(c->gap_t);
    free(c->gap_a);
    free(c->s);
    free(c->e);
}

/* Builds the access lists and the gaps (consecutive accesses by ops u < v
 * where v reads the tensor). Returns 0, or -1 if out of host memory. */
static int ctx_build(pg_ctx *c) {
    const tsl_workload *w = c->w;
    int32_t nt = w->n_tensors, no = w->n_ops;
    size_t total = 0;
    for (int32_t i = 0; i < no; i++) total += (size_t)w->ops[i].n_in + (size_t)w->ops[i].n_out;
    c->acc_off = calloc((size_t)nt + 1, sizeof *c->acc_off);
    c->acc_op = malloc((total + 1) * sizeof *c->acc_op);
    c->acc_rd = malloc(total + 1);
    c->acc_wr = malloc(total + 1);
    c->last_read = malloc(((size_t)nt + 1) * sizeof *c->last_read);
    c->gap_t = malloc((total + 1) * sizeof *c->gap_t);
    c->gap_a = malloc((total + 1) * sizeof *c->gap_a);
    c->s = malloc(((size_t)no + 1) * sizeof *c->s);
    c->e = malloc(((size_t)no + 1) * sizeof *c->e);
    int32_t *fill = malloc(((size_t)nt + 1) * sizeof *fill);
    if (!c->acc_off || !c->acc_op || !c->acc_rd || !c->acc_wr || !c->last_read || !c->gap_t ||
        !c->gap_a || !c->s || !c->e || !fill) {
        free(fill);
        return -1;
    }
    /* count distinct (op, tensor) pairs per tensor, then fill in op order */
    for (int32_t i = 0; i < no; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int io = 0; io < 2; io++) {
            int n = io ? op->n_out : op->n_in;
            const int32_t *v = io ? op->out : op->in;
            for (int k = 0; k < n; k++) {
                int32_t t = v[k], seen = 0;
                for (int k2 = 0; k2 < k; k2++) seen |= v[k2] == t;
                if (io) seen |= op_lists(op, t, 0);
                if (!seen) c->acc_off[t + 1]++;
            }
        }
    }
    for (int32_t t = 0; t < nt; t++) c->acc_off[t + 1] += c->acc_off[t];
    memcpy(fill, c->acc_off, (size_t)nt * sizeof *fill);
    for (int32_t t = 0; t < nt; t++) c->last_read[t] = -1;
    for (int32_t i = 0; i < no; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int io = 0; io < 2; io++) {
            int n = io ? op->n_out : op->n_in;
            const int32_t *v = io ? op->out : op->in;
            for (int k = 0; k < n; k++) {
                int32_t t = v[k], seen = 0;
                for (int k2 = 0; k2 < k; k2++) seen |= v[k2] == t;
                if (io) seen |= op_lists(op, t, 0);
                if (seen) continue;
                int32_t x = fill[t]++;
                c->acc_op[x] = i;
                c->acc_rd[x] = (uint8_t)op_lists(op, t, 0);
                c->acc_wr[x] = (uint8_t)op_lists(op, t, 1);
            }
        }
        for (int k = 0; k < op->n_in; k++) c->last_read[op->in[k]] = i;
    }
    free(fill);
    c->n_gaps = 0;
    for (int32_t t = 0; t < nt; t++)
        for (int32_t x = c->acc_off[t]; x + 1 < c->acc_off[t + 1]; x++)
            if (c->acc_rd[x + 1]) {
                c->gap_t[c->n_gaps] = t;
                c->gap_a[c->n_gaps++] = x - c->acc_off[t];
            }
    return 0;
}

/* ---- the timeline and the channels under the accepted events ------------------- */

static double op_lat(const tsl_workload *w, int32_t i) { return w->ops[i].end_us - w->ops[i].start_us; }

/* Producer of a non-persistent, non-data tensor (-1 otherwise). */
static int32_t producer_of(const pg_ctx *c, int32_t t) {
    tsl_tensor_kind k = c->w->tensors[t].kind;
    if (tsl_kind_is_persistent(k) || k == TSL_KIND_INPUT || k == TSL_KIND_LABEL) return -1;
    for (int32_t x = c->acc_off[t]; x < c->acc_off[t + 1]; x++)
        if (c->acc_wr[x]) return c->acc_op[x];
    return -1;
}

static tsl_plan *plan_of(const char *job, const tsl_event *ev, int n);

/* The op times of the shared accounting's timeline (planned waits
 * included). Returns 0, or -1 if out of host memory. */
static int timeline_with_waits(pg_ctx *c, const tsl_event *ev, int n) {
    tsl_plan *p = plan_of(c->w->job, ev, n);
    tsl__timeline tl;
    if (!p || tsl__timeline_build(c->w, p, c->dev, &tl) != TSL_OK) {
        tsl_plan_free(p);
        return -1;
    }
    memcpy(c->s, tl.s, (size_t)c->w->n_ops * sizeof *c->s);
    memcpy(c->e, tl.e, (size_t)c->w->n_ops * sizeof *c->e);
    tsl__timeline_free(&tl);
    tsl_plan_free(p);
    return 0;
}

/* Shifted times (docs/SCHEDULING.md "Time"): op i moves later by the
 * latencies of the recomputations inserted before ops <= i (and, when
 * waits are planned, by the waits before it). Returns 0, or -1 if out of
 * host memory. */
static int timeline(pg_ctx *c, const tsl_event *ev, int n) {
    const tsl_workload *w = c->w;
    if (c->p_wait > 0) return timeline_with_waits(c, ev, n);
    for (int32_t i = 0; i < w->n_ops; i++) c->s[i] = 0; /* used as per-op added latency */
    for (int k = 0; k < n; k++)
        if (ev[k].type == TSL_EV_RECOMPUTE) {
            int32_t g = producer_of(c, ev[k].tensor);
            if (g >= 0) c->s[ev[k].precede] += op_lat(w, g);
        }
    double shift = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        shift += c->s[i];
        c->s[i] = w->ops[i].start_us + shift;
        c->e[i] = w->ops[i].end_us + shift;
    }
    return 0;
}

static double issue_of(const pg_ctx *c, const tsl_event *e) {
    return (e->trigger >= 0 ? c->e[e->trigger] : 0.0) + e->delay_us;
}

typedef struct booking {
    double s, e;
} booking;

/* The copies of the accepted events on channel `ch` (0: device to host,
 * 1: host to device; a half-duplex device has one channel for both). */
static int bookings(const pg_ctx *c, const tsl_event *ev, int n, int ch, booking *b) {
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (ev[k].type != TSL_EV_SWAP_OUT && ev[k].type != TSL_EV_SWAP_IN) continue;
        int to_dev = ev[k].type == TSL_EV_SWAP_IN;
        if (c->dev->duplex && to_dev != ch) continue;
        double x = issue_of(c, &ev[k]);
        b[m++] = (booking){x, x + tsl_copy_us(c->dev, c->w->tensors[ev[k].tensor].bytes, to_dev)};
    }
    return m;
}

static int free_slot(const booking *b, int m, double x, double len) {
    for (int k = 0; k < m; k++)
        if (x < b[k].e && b[k].s < x + len) return 0;
    return 1;
}

/* A start in [lo, hi] where a copy of `len` us overlaps no booking,
 * nearest to `pref`; -1 if none (candidates: pref, lo, hi and the edges of
 * every booking). */
static double fit(const booking *b, int m, double lo, double hi, double len, double pref) {
    if (hi < lo) return -1;
    double best = -1, dist = INFINITY;
    for (int k = -3; k < 2 * m; k++) {
        double x = k == -3 ? pref : k == -2 ? lo : k == -1 ? hi : (k & 1) ? b[k / 2].s - len : b[k / 2].e;
        if (x < lo || x > hi || !free_slot(b, m, x, len)) continue;
        double d = fabs(x - pref);
        if (d < dist) {
            dist = d;
            best = x;
        }
    }
    return best;
}

/* The latest op among [0, limit] ending at or before x (-1: the iteration
 * start), and the delay from its end to x. */
static void anchor(const pg_ctx *c, double x, int32_t limit, int32_t *trig, double *delay) {
    int32_t k = -1;
    for (int32_t i = limit; i >= 0; i--)
        if (c->e[i] <= x) {
            k = i;
            break;
        }
    *trig = k;
    double d = x - (k >= 0 ? c->e[k] : 0.0);
    *delay = d > 0 ? d : 0.0;
}

/* ---- candidate items ---------------------------------------------------------- */

static double uni(pg_ctx *c, double lo, double hi) { return th_uniform(&c->rs, lo, hi); }

/* A swap triple over gap (u, v) of tensor t; writes 3 events into out.
 * Returns the count (0 when there is no window or no channel slot). */
static int swap_item(pg_ctx *c, const tsl_event *ev, int n, booking *bk, int32_t t, int32_t a,
                     tsl_event *out) {
    const tsl_workload *w = c->w;
    int32_t base = c->acc_off[t], u = c->acc_op[base + a], v = c->acc_op[base + a + 1];
    int32_t wr = -1;
    for (int32_t x = base; x <= base + a; x++)
        if (c->acc_wr[x]) wr = c->acc_op[x];
    size_t bytes = w->tensors[t].bytes;
    double c_out = tsl_copy_us(c->dev, bytes, 0), c_in = tsl_copy_us(c->dev, bytes, 1);
    /* swap-out: after the write of the current value, issued by the end of u */
    double lo = wr >= 0 ? c->e[wr] : 0.0, hi = c->e[u];
    int m = bookings(c, ev, n, 0, bk);
    double pref = uni(c, 0, 1) < 0.5 ? lo : uni(c, lo, hi);
    double x = fit(bk, m, lo, hi, c_out, pref);
    if (x < 0) return 0;
    int32_t tx;
    double dx;
    anchor(c, x, u, &tx, &dx);
    if (tx < wr) return 0; /* (only when times collapse: zero-length ops) */
    x = (tx >= 0 ? c->e[tx] : 0.0) + dx;
    /* the release frees t at max(end of u, end of the copy); the swap-in
     * starts after that and ends by the start of v */
    double freed = c->e[u] > x + c_out ? c->e[u] : x + c_out;
    double lo_y = freed, hi_y = c->s[v] - c_in;
    if (c->p_wait > 0 && uni(c, 0, 1) < c->p_wait) { /* issued by v's start, landing after it */
        lo_y = fmax(freed, c->s[v] - c_in + 1e-3);
        hi_y = c->s[v];
    }
    if (!c->dev->duplex) {
        bk[m++] = (booking){x, x + c_out}; /* one channel: the new swap-out too */
    } else {
        m = bookings(c, ev, n, 1, bk);
    }
    double pref_y = uni(c, 0, 1) < 0.5 ? hi_y : uni(c, lo_y, hi_y > lo_y ? hi_y : lo_y);
    double y = fit(bk, m, lo_y, hi_y, c_in, pref_y);
    if (y < 0) return 0;
    int32_t ty;
    double dy;
    anchor(c, y, v - 1, &ty, &dy);
    out[0] = (tsl_event){TSL_EV_SWAP_OUT, t, tx, dx, -1};
    out[1] = (tsl_event){TSL_EV_RELEASE, t, u, 0.0, -1};
    out[2] = (tsl_event){TSL_EV_SWAP_IN, t, ty, dy, v};
    return 3;
}

/* 1 if op `g` may be re-run to regenerate tensor t before op v: one output
 * (t), not in place, no hidden state, inputs alive at v and unchanged. */
static int recomputable(const pg_ctx *c, int32_t g, int32_t t, int32_t v) {
    const tsl_wl_op *op = &c->w->ops[g];
    if (op->n_out != 1 || op->out[0] != t || op_lists(op, t, 0)) return 0;
    if (c->g) {
        tsl_op_type ty = tsl_graph_op(c->g, g)->type;
        if (ty == TSL_OP_DROPOUT || ty == TSL_OP_BATCHNORM || ty == TSL_OP_SGD_UPDATE ||
            ty == TSL_OP_ADAM_UPDATE)
            return 0;
    }
    for (int k = 0; k < op->n_in; k++) {
        int32_t i = op->in[k];
        if (!tsl_kind_is_persistent(c->w->tensors[i].kind) && c->last_read[i] < v) return 0;
        for (int32_t x = c->acc_off[i]; x < c->acc_off[i + 1]; x++)
            if (c->acc_wr[x] && c->acc_op[x] > g && c->acc_op[x] < v) return 0;
    }
    return 1;
}

/* A recomputation over gap (u, v) of tensor t: RELEASE after u, RECOMPUTE
 * before v. Returns 2, or 0 if t cannot be recomputed there. */
static int recompute_item(pg_ctx *c, int32_t t, int32_t a, tsl_event *out) {
    int32_t base = c->acc_off[t], u = c->acc_op[base + a], v = c->acc_op[base + a + 1];
    int32_t g = producer_of(c, t);
    if (g < 0 || g > u || !recomputable(c, g, t, v)) return 0;
    out[0] = (tsl_event){TSL_EV_RELEASE, t, u, 0.0, -1};
    out[1] = (tsl_event){TSL_EV_RECOMPUTE, t, -1, 0.0, v};
    return 2;
}

/* ---- the backend's real workspaces --------------------------------------------- */

tsl_status pg_match_backend_workspace(const tsl_graph *g, tsl_workload *w, int fast, int nthreads) {
    tsl_backend *b = NULL; /* the backend's own answer; its arena is reserved, never touched */
    tsl_status st = tsl_cpu_backend_new((size_t)1 << 20, fast ? TSL_KERNELS_FAST : TSL_KERNELS_REF,
                                        nthreads, &b);
    for (int32_t i = 0; i < w->n_ops && st == TSL_OK; i++)
        st = b->iface->op_workspace(b, g, tsl_graph_op(g, i), &w->ops[i].workspace);
    tsl_backend_free(b);
    return st;
}

/* ---- judging ---------------------------------------------------------------------- */

int pg_finish_and_verify(const tsl_workload *w, tsl_plan *p, const tsl_device_profile *dev,
                         char *why, size_t len) {
    tsl_peak_info pi;
    if (tsl_peak_analysis(w, p, dev, &pi) != TSL_OK) {
        if (why) snprintf(why, len, "peak analysis: %s", tsl_last_error());
        return 0;
    }
    p->predicted_peak = pi.peak;
    p->predicted_period_us = pi.period_us;
    tsl_peak_info_free(&pi);
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify(w, p, dev, &v, &nv);
    if (st != TSL_OK && why) snprintf(why, len, "%s", nv ? v[0].what : tsl_last_error());
    free(v);
    return st == TSL_OK;
}

/* A plan holding events ev[0..n), sorted; NULL if out of host memory. */
static tsl_plan *plan_of(const char *job, const tsl_event *ev, int n) {
    tsl_plan *p = tsl_plan_new(job);
    if (!p) return NULL;
    for (int k = 0; k < n; k++)
        if (tsl_plan_add(p, ev[k]) != TSL_OK) {
            tsl_plan_free(p);
            return NULL;
        }
    tsl_plan_sort(p);
    return p;
}

tsl_plan *pg_random_plan(const tsl_graph *g, const tsl_workload *w, const tsl_device_profile *dev,
                         uint64_t seed, const pg_opts *o, pg_stats *st) {
    pg_opts def = pg_opts_default();
    if (!o) o = &def;
    pg_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    pg_ctx c = {.g = g, .w = w, .dev = dev, .p_wait = o->p_wait,
                .rs = seed * 0x9e3779b97f4a7c15ull + 0x51ed270b};
    int cap = 3 * (o->max_items > 0 ? o->max_items : 1) + 3;
    tsl_event *ev = malloc(sizeof *ev * (size_t)cap);
    booking *bk = malloc(sizeof *bk * (size_t)(cap + 1));
    tsl_plan *best = NULL;
    if (!ev || !bk || ctx_build(&c) != 0) goto done;
    int n = 0, items = 0;
    int target = 1 + (int)uni(&c, 0, o->max_items > 0 ? o->max_items : 1);
    best = plan_of(w->job, ev, 0);
    if (best && !pg_finish_and_verify(w, best, dev, NULL, 0)) { /* a malformed workload */
        tsl_plan_free(best);
        best = NULL;
    }
    if (!best) goto done;
    for (int tries = 0; tries < o->attempts && items < target && c.n_gaps > 0; tries++) {
        int32_t gi = (int32_t)uni(&c, 0, c.n_gaps);
        if (gi >= c.n_gaps) gi = c.n_gaps - 1;
        int32_t t = c.gap_t[gi], a = c.gap_a[gi];
        /* one item per gap: skip a gap already holding an event of t after u */
        int32_t u = c.acc_op[c.acc_off[t] + a], used = 0;
        for (int k = 0; k < n; k++)
            used |= ev[k].tensor == t && ev[k].type == TSL_EV_RELEASE && ev[k].trigger == u;
        if (used) continue;
        if (timeline(&c, ev, n) != 0) goto done;
        int is_rc = uni(&c, 0, 1) < o->p_recompute;
        int add = is_rc ? recompute_item(&c, t, a, ev + n) : swap_item(&c, ev, n, bk, t, a, ev + n);
        st->tried++;
        if (!add) {
            st->no_room++;
            continue;
        }
        tsl_plan *cand = plan_of(w->job, ev, n + add);
        if (!cand) goto done;
        char why[400];
        if (pg_finish_and_verify(w, cand, dev, why, sizeof why)) {
            tsl_plan_free(best);
            best = cand;
            n += add;
            items++;
            if (is_rc)
                st->recomputes++;
            else
                st->swaps++;
        } else {
            tsl_plan_free(cand);
            if (getenv("PG_DEBUG")) fprintf(stderr, "pg: rejected: %s\n", why);
            st->rejected++;
        }
    }
done:
    ctx_free(&c);
    free(ev);
    free(bk);
    tsl_peak_info pi;
    if (best && tsl_peak_analysis(w, best, dev, &pi) == TSL_OK) {
        st->waits = pi.n_waits;
        tsl_peak_info_free(&pi);
    }
    return best;
}
