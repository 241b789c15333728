/* random_workload.c - see random_workload.h. */
#include "random_workload.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small seeded generator (splitmix64) -------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double runit(rng *r) { return (double)(rnext(r) >> 11) * 0x1.0p-53; }

/* Uniform integer in [lo, hi] (lo <= hi). */
static int rint_in(rng *r, int lo, int hi) {
    return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1));
}

static int chance(rng *r, double p) { return runit(r) < p; }

/* Log-uniform in [lo, hi] (0 < lo <= hi). */
static double rlog(rng *r, double lo, double hi) {
    return exp(log(lo) + (log(hi) - log(lo)) * runit(r));
}

/* ---- the builder --------------------------------------------------------- */

typedef struct bld {
    tsl_workload *w;
    int32_t cap_t, cap_o;
    rng r;
    const rw_opts *o;
    int oom;
} bld;

/* A tensor size: mostly log-uniform in [min_bytes, max_bytes] rounded to 4
 * bytes, a few tiny ones (statistics, scalars). */
static size_t rsize(bld *b) {
    if (chance(&b->r, 0.08)) return (size_t)rint_in(&b->r, 1, 64) * 4;
    double x = rlog(&b->r, (double)b->o->min_bytes, (double)b->o->max_bytes);
    size_t s = (size_t)x & ~(size_t)3;
    return s < 4 ? 4 : s;
}

/* An op latency in us; dyadic (a multiple of 1/64) when asked, so that time
 * sums are exact. `cap` bounds the upper end (small for updates). */
static double rlat(bld *b, double cap) {
    double hi = b->o->max_lat_us < cap ? b->o->max_lat_us : cap;
    if (hi < b->o->min_lat_us) hi = b->o->min_lat_us;
    double x = rlog(&b->r, b->o->min_lat_us, hi);
    if (b->o->dyadic_times) {
        x = floor(x * 64.0) / 64.0;
        if (x < 1.0 / 64) x = 1.0 / 64;
    }
    return x;
}

/* Appends a tensor; returns its index, or -1 if out of memory. */
static int32_t add_tensor(bld *b, tsl_tensor_kind kind, size_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int32_t add_tensor(bld *b, tsl_tensor_kind kind, size_t bytes, const char *fmt, ...) {
    tsl_workload *w = b->w;
    if (b->oom) return -1;
    if (w->n_tensors == b->cap_t) {
        int32_t cap = b->cap_t ? 2 * b->cap_t : 32;
        tsl_wl_tensor *t = realloc(w->tensors, sizeof *t * (size_t)cap);
        if (!t) {
            b->oom = 1;
            return -1;
        }
        w->tensors = t;
        b->cap_t = cap;
    }
    tsl_wl_tensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->bytes = bytes;
    t->kind = kind;
    t->producer = -1;
    return w->n_tensors++;
}

/* Appends an op reading in[0..n_in) and writing out[0..n_out) with latency
 * `lat` (times are laid out by finish_w()). Duplicate inputs are dropped.
 * Non-persistent outputs get this op as producer. Returns the op index or
 * -1 if out of memory. */
static int32_t add_op(bld *b, const int32_t *in, int n_in, const int32_t *out, int n_out,
                      double lat, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int32_t add_op(bld *b, const int32_t *in, int n_in, const int32_t *out, int n_out,
                      double lat, const char *fmt, ...) {
    tsl_workload *w = b->w;
    if (b->oom) return -1;
    if (w->n_ops == b->cap_o) {
        int32_t cap = b->cap_o ? 2 * b->cap_o : 32;
        tsl_wl_op *o = realloc(w->ops, sizeof *o * (size_t)cap);
        if (!o) {
            b->oom = 1;
            return -1;
        }
        w->ops = o;
        b->cap_o = cap;
    }
    tsl_wl_op *op = &w->ops[w->n_ops];
    memset(op, 0, sizeof *op);
    op->in = malloc(sizeof *op->in * (size_t)(n_in ? n_in : 1));
    op->out = malloc(sizeof *op->out * (size_t)(n_out ? n_out : 1));
    if (!op->in || !op->out) {
        free(op->in);
        free(op->out);
        b->oom = 1;
        return -1;
    }
    for (int i = 0; i < n_in; i++) {
        int dup = 0;
        for (int j = 0; j < op->n_in; j++) dup |= op->in[j] == in[i];
        if (!dup) op->in[op->n_in++] = in[i];
    }
    for (int i = 0; i < n_out; i++) {
        op->out[op->n_out++] = out[i];
        if (!tsl_kind_is_persistent(w->tensors[out[i]].kind))
            w->tensors[out[i]].producer = w->n_ops;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->name, sizeof op->name, fmt, ap);
    va_end(ap);
    op->start_us = 0;
    op->end_us = lat; /* a latency until finish_w() lays the times out */
    if (b->o && chance(&b->r, b->o->p_workspace)) op->workspace = rsize(b);
    return w->n_ops++;
}

/* Lays the ops out back to back from time 0 and sets the period (op end_us
 * holds the latency until then). */
static void finish_w(tsl_workload *w) {
    double t = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        double lat = w->ops[i].end_us;
        w->ops[i].start_us = t;
        w->ops[i].end_us = t + lat;
        t = w->ops[i].end_us;
    }
    w->period_us = t;
}

/* ---- job shapes ------------------------------------------------------------- */

enum { OPT_SGD = 0, OPT_MOMENTUM, OPT_ADAM };

typedef struct param_info {
    int32_t p, m, v;    /* tensor indices (-1: none) */
    int owner, shared;  /* forward ops reading it (shared -1: none) */
    int32_t grad;       /* current accumulated gradient, -1 until made */
} param_info;

/* Parameters and their optimizer states; owner ops drawn from [0, nf). */
static void make_params(bld *b, param_info *pi, int np, int opt, int nf) {
    for (int i = 0; i < np; i++) {
        size_t by = rsize(b);
        pi[i].p = add_tensor(b, TSL_KIND_PARAM, by, "p%d", i);
        pi[i].m = opt >= OPT_MOMENTUM ? add_tensor(b, TSL_KIND_OPT_STATE, by, "p%d.m", i) : -1;
        pi[i].v = opt == OPT_ADAM ? add_tensor(b, TSL_KIND_OPT_STATE, by, "p%d.v", i) : -1;
        pi[i].owner = rint_in(&b->r, 0, nf - 1);
        pi[i].shared = nf > 1 && chance(&b->r, 0.15) ? rint_in(&b->r, 0, nf - 1) : -1;
        if (pi[i].shared == pi[i].owner) pi[i].shared = -1;
        pi[i].grad = -1;
    }
}

/* The optimizer phase: one in-place update per parameter with a gradient. */
static void make_updates(bld *b, param_info *pi, int np) {
    b->w->optimizer_begin = b->w->n_ops;
    for (int i = 0; i < np; i++) {
        if (pi[i].grad < 0 || b->oom) continue;
        int32_t in[4] = {pi[i].p, pi[i].grad}, out[3] = {pi[i].p};
        int ni = 2, no = 1;
        if (pi[i].m >= 0) in[ni++] = pi[i].m, out[no++] = pi[i].m;
        if (pi[i].v >= 0) in[ni++] = pi[i].v, out[no++] = pi[i].v;
        add_op(b, in, ni, out, no, rlat(b, 30.0), "p%d.upd", i);
    }
}

/* Gives parameter i the partial gradient pg produced by backward op k:
 * the first one becomes its gradient, later ones are summed by an add op. */
static void accumulate(bld *b, param_info *pi, int i, int32_t pg, int k) {
    if (pi[i].grad < 0) {
        pi[i].grad = pg;
        return;
    }
    int32_t acc =
        add_tensor(b, TSL_KIND_GRADIENT, b->w->tensors[pi[i].p].bytes, "p%d.gacc%d", i, k);
    if (acc < 0) return;
    int32_t in[2] = {pi[i].grad, pg};
    add_op(b, in, 2, &acc, 1, rlat(b, 50.0), "p%d.acc%d", i, k);
    pi[i].grad = acc;
}

typedef struct fwd_info {
    int32_t x[2];   /* activation inputs (x[1] -1: none) */
    int32_t y, s;   /* output, optional saved statistic (-1) */
} fwd_info;

/* A training iteration: forward, loss, backward, optimizer. */
static void make_training(bld *b) {
    rng *r = &b->r;
    int nf = rint_in(r, b->o->min_fwd, b->o->max_fwd);
    int np = rint_in(r, 0, b->o->max_params);
    int opt = rint_in(r, OPT_SGD, OPT_ADAM);
    int nbuf = chance(r, 0.3) ? rint_in(r, 1, 2) : 0;
    param_info pi[64];
    fwd_info *fw = calloc((size_t)nf, sizeof *fw);
    int32_t *bufs = calloc((size_t)nbuf + 1, sizeof *bufs);
    int *buf_owner = calloc((size_t)nbuf + 1, sizeof *buf_owner);
    if (np > 64) np = 64;
    if (!fw || !bufs || !buf_owner) {
        b->oom = 1;
        goto out;
    }
    int32_t input = add_tensor(b, TSL_KIND_INPUT, rsize(b), "input");
    int32_t label = chance(r, 0.7) ? add_tensor(b, TSL_KIND_LABEL, (size_t)rint_in(r, 1, 256) * 4,
                                                "label")
                                   : -1;
    make_params(b, pi, np, opt, nf);
    for (int j = 0; j < nbuf; j++) {
        bufs[j] = add_tensor(b, TSL_KIND_BUFFER, rsize(b), "buf%d", j);
        buf_owner[j] = rint_in(r, 0, nf - 1);
    }
    int frozen_buf = chance(r, 0.5) && nbuf > 0; /* buf0 only read, never written */
    if (b->oom) goto out;

    /* forward */
    int32_t cur = input;
    for (int k = 0; k < nf && !b->oom; k++) {
        int32_t in[80], out[8];
        int ni = 0, no = 0;
        in[ni++] = cur;
        fw[k].x[0] = cur;
        fw[k].x[1] = -1;
        if (k > 0 && chance(r, 0.3)) {
            int j = rint_in(r, -1, k - 2);
            int32_t extra = j < 0 ? input : fw[j].y;
            if (extra != cur) in[ni++] = fw[k].x[1] = extra;
        }
        for (int i = 0; i < np; i++)
            if (pi[i].owner == k || pi[i].shared == k) in[ni++] = pi[i].p;
        fw[k].y = out[no++] = add_tensor(b, TSL_KIND_ACTIVATION, rsize(b), "f%d.y", k);
        fw[k].s = -1;
        if (chance(r, 0.2))
            fw[k].s =
                add_tensor(b, TSL_KIND_ACTIVATION, (size_t)rint_in(r, 1, 512) * 4, "f%d.s", k);
        if (fw[k].s >= 0) out[no++] = fw[k].s;
        for (int j = 0; j < nbuf; j++) {
            if (buf_owner[j] != k) continue;
            in[ni++] = bufs[j];
            if (!(frozen_buf && j == 0)) out[no++] = bufs[j]; /* in place */
        }
        if (b->oom) break;
        add_op(b, in, ni, out, no, rlat(b, 1e9), "f%d", k);
        cur = fw[k].y;
    }
    if (b->oom) goto out;

    /* loss */
    int32_t lossv = add_tensor(b, TSL_KIND_ACTIVATION, 4, "loss.out");
    int32_t probs = chance(r, 0.6) ? add_tensor(b, TSL_KIND_ACTIVATION,
                                                b->w->tensors[cur].bytes, "loss.probs")
                                   : -1;
    {
        int32_t in[2] = {cur, label}, out[2] = {lossv, probs};
        add_op(b, in, label >= 0 ? 2 : 1, out, probs >= 0 ? 2 : 1, rlat(b, 1e9), "loss");
    }
    int32_t g = add_tensor(b, TSL_KIND_GRADIENT, b->w->tensors[cur].bytes, "loss.g");
    {
        int32_t in[2] = {probs >= 0 ? probs : cur, label};
        add_op(b, in, label >= 0 ? 2 : 1, &g, 1, rlat(b, 1e9), "loss.bwd");
    }

    /* backward, in reverse forward order */
    for (int k = nf - 1; k >= 0 && !b->oom; k--) {
        int owned[64], n_owned = 0;
        for (int i = 0; i < np; i++)
            if (pi[i].owner == k || pi[i].shared == k) owned[n_owned++] = i;
        int want_dx = k > 0 || chance(r, 0.3);
        if (!want_dx && n_owned == 0) continue;
        if (n_owned == 0 && chance(r, 0.15)) continue; /* no gradient through this op */
        int32_t saved[8];
        int ns = 0;
        if (chance(r, 0.7)) saved[ns++] = fw[k].x[0];
        if (fw[k].x[1] >= 0 && chance(r, 0.7)) saved[ns++] = fw[k].x[1];
        if (chance(r, 0.5)) saved[ns++] = fw[k].y;
        if (fw[k].s >= 0) saved[ns++] = fw[k].s;
        if (chance(r, 0.1)) saved[ns++] = fw[rint_in(r, 0, nf - 1)].y; /* long-range read */
        int32_t dx = -1, pg[64];
        if (want_dx)
            dx = add_tensor(b, TSL_KIND_GRADIENT, b->w->tensors[fw[k].x[0]].bytes, "f%d.dx", k);
        for (int j = 0; j < n_owned; j++)
            pg[j] = add_tensor(b, TSL_KIND_GRADIENT, b->w->tensors[pi[owned[j]].p].bytes, "p%d.g%d",
                               owned[j], k);
        if (b->oom) break;
        int split = dx >= 0 && n_owned > 0 && chance(r, 0.5);
        int32_t in[80], out[70];
        int ni = 0, no = 0;
        in[ni++] = g;
        if (split) { /* data gradient and weight gradient as two ops (conv style) */
            for (int j = 0; j < n_owned; j++) in[ni++] = pi[owned[j]].p;
            add_op(b, in, ni, &dx, 1, rlat(b, 1e9), "f%d.bwd_data", k);
            ni = 1;
            for (int j = 0; j < ns; j++) in[ni++] = saved[j];
            add_op(b, in, ni, pg, n_owned, rlat(b, 1e9), "f%d.bwd_w", k);
        } else {
            for (int j = 0; j < ns; j++) in[ni++] = saved[j];
            for (int j = 0; j < n_owned; j++) in[ni++] = pi[owned[j]].p;
            if (dx >= 0) out[no++] = dx;
            for (int j = 0; j < n_owned; j++) out[no++] = pg[j];
            add_op(b, in, ni, out, no, rlat(b, 1e9), "f%d.bwd", k);
        }
        for (int j = 0; j < n_owned; j++) accumulate(b, pi, owned[j], pg[j], k);
        if (dx >= 0) g = dx;
    }
    if (!b->oom) make_updates(b, pi, np);
out:
    free(fw);
    free(bufs);
    free(buf_owner);
}

/* A plain random DAG: each op reads a random subset of what exists (recent
 * tensors more likely), writes one or two new tensors, and sometimes a
 * persistent tensor in place; parameters get updates at the end reading a
 * random late tensor as their gradient. */
static void make_dag(bld *b) {
    rng *r = &b->r;
    int n = rint_in(r, b->o->min_fwd, b->o->max_fwd) + rint_in(r, 0, 6);
    int np = rint_in(r, 0, b->o->max_params);
    int opt = rint_in(r, OPT_SGD, OPT_ADAM);
    param_info pi[64];
    if (np > 64) np = 64;
    int nbuf = rint_in(r, 0, 2);
    int32_t *pool = malloc(sizeof *pool * (size_t)(8 + np + nbuf + 3 * n));
    int32_t pers[66], data[3];
    int npool = 0, npers = 0, nd = 0;
    if (!pool) {
        b->oom = 1;
        return;
    }
    int ninput = rint_in(r, 1, 2);
    for (int i = 0; i < ninput; i++)
        pool[npool++] = data[nd++] = add_tensor(b, TSL_KIND_INPUT, rsize(b), "in%d", i);
    if (chance(r, 0.5))
        pool[npool++] = data[nd++] = add_tensor(b, TSL_KIND_LABEL, rsize(b), "label");
    make_params(b, pi, np, opt, n);
    for (int i = 0; i < np; i++) pool[npool++] = pers[npers++] = pi[i].p;
    for (int j = 0; j < nbuf; j++)
        pool[npool++] = pers[npers++] = add_tensor(b, TSL_KIND_BUFFER, rsize(b), "buf%d", j);
    int first_gen = npool;
    for (int k = 0; k < n && !b->oom; k++) {
        int32_t in[12], out[4];
        int ni = 0, no = 0;
        for (int j = 0; j < nd; j++) /* every data tensor is read: op j, or the last op */
            if (j == k || (k == n - 1 && j > k)) in[ni++] = data[j];
        int want = rint_in(r, 1, 4);
        for (int j = 0; j < want; j++) {
            int idx, recent = npool - first_gen;
            if (recent > 0 && chance(r, 0.6))
                idx = npool - 1 - rint_in(r, 0, recent < 3 ? recent - 1 : 2);
            else
                idx = rint_in(r, 0, npool - 1);
            in[ni++] = pool[idx];
        }
        tsl_tensor_kind kind = k < n / 2 ? TSL_KIND_ACTIVATION : TSL_KIND_GRADIENT;
        int nout = chance(r, 0.25) ? 2 : 1;
        for (int j = 0; j < nout; j++) out[no++] = add_tensor(b, kind, rsize(b), "t%d.%d", k, j);
        if (npers > 0 && chance(r, 0.1)) { /* in-place write of a persistent tensor */
            int32_t pt = pers[rint_in(r, 0, npers - 1)];
            in[ni++] = pt;
            out[no++] = pt;
        }
        if (b->oom) break;
        add_op(b, in, ni, out, no, rlat(b, 1e9), "op%d", k);
        for (int j = 0; j < nout; j++) pool[npool++] = out[j];
    }
    /* gradients: random tensors from the second half of what was generated */
    int ngen = npool - first_gen;
    for (int i = 0; i < np && ngen > 0; i++)
        pi[i].grad = pool[first_gen + ngen / 2 + rint_in(r, 0, ngen - ngen / 2 - 1)];
    if (!b->oom) make_updates(b, pi, np);
    free(pool);
}

/* ---- public -------------------------------------------------------------------- */

rw_opts rw_opts_default(void) {
    rw_opts o;
    memset(&o, 0, sizeof o);
    o.min_fwd = 2;
    o.max_fwd = 14;
    o.max_params = 5;
    o.min_lat_us = 1.0;
    o.max_lat_us = 300.0;
    o.min_bytes = 256;
    o.max_bytes = (size_t)4 << 20;
    o.p_workspace = 0.25;
    o.p_dag = 0.3;
    o.dyadic_times = 0;
    return o;
}

tsl_workload *rw_generate(uint64_t seed, const rw_opts *o, const char *job) {
    bld b;
    memset(&b, 0, sizeof b);
    b.o = o;
    b.r.s = seed * 0x2545F4914F6CDD1Dull + 0x1234567ull;
    b.w = calloc(1, sizeof *b.w);
    if (!b.w) return NULL;
    snprintf(b.w->job, sizeof b.w->job, "%s", job);
    if (chance(&b.r, o->p_dag))
        make_dag(&b);
    else
        make_training(&b);
    if (b.w->n_ops == 0 || b.oom) {
        rw_free(b.w);
        return NULL;
    }
    finish_w(b.w);
    return b.w;
}

int rw_generate_jobs(uint64_t seed, const rw_opts *o, int n_jobs, tsl_workload **out) {
    for (int j = 0; j < n_jobs; j++) {
        char name[16];
        snprintf(name, sizeof name, "job%d", j);
        out[j] = rw_generate(seed * 31 + (uint64_t)j * 0x9E3779B97F4A7C15ull, o, name);
        if (!out[j]) {
            for (int i = 0; i < j; i++) rw_free(out[i]);
            return -1;
        }
    }
    return 0;
}

void rw_free(tsl_workload *w) {
    if (!w) return;
    for (int32_t i = 0; i < w->n_ops; i++) {
        free(w->ops[i].in);
        free(w->ops[i].out);
    }
    free(w->ops);
    free(w->tensors);
    free(w);
}

tsl_device_profile rw_profile(uint64_t seed) {
    rng r = {seed * 0xD1B54A32D192ED03ull + 77};
    tsl_device_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "random-%llu", (unsigned long long)seed);
    p.flops = 1e13;
    p.mem_bw = 5e11;
    p.mem_bytes = (size_t)1 << 36;
    p.h2d_bw = rlog(&r, 1e9, 3e10);
    p.d2h_bw = chance(&r, 0.5) ? p.h2d_bw : rlog(&r, 1e9, 3e10);
    p.duplex = chance(&r, 0.7);
    p.launch_us = 5;
    p.copy_latency_us = chance(&r, 0.2) ? 0.0 : runit(&r) * 15.0;
    return p;
}

/* Formats into msg and returns 1 (the "invalid" result of rw_check). */
static int bad(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *msg, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return 1;
}

int rw_check(const tsl_workload *w, char *msg, size_t len) {
    if (w->n_tensors < 1 || w->n_ops < 1)
        return bad(msg, len, "job '%s': %d tensors, %d ops", w->job, w->n_tensors, w->n_ops);
    for (int32_t t = 0; t < w->n_tensors; t++) {
        const tsl_wl_tensor *tt = &w->tensors[t];
        if (!tt->name[0]) return bad(msg, len, "tensors[%d]: empty name", t);
        if (tt->bytes == 0) return bad(msg, len, "tensors[%d] '%s': 0 bytes", t, tt->name);
        if ((unsigned)tt->kind >= TSL_KIND_COUNT)
            return bad(msg, len, "tensors[%d] '%s': kind %d", t, tt->name, (int)tt->kind);
        for (int32_t u = 0; u < t; u++)
            if (strcmp(w->tensors[u].name, tt->name) == 0)
                return bad(msg, len, "tensors[%d]: name '%s' repeats tensors[%d]", t, tt->name, u);
    }
    for (int32_t i = 0; i < w->n_ops; i++) {
        if (!w->ops[i].name[0]) return bad(msg, len, "ops[%d]: empty name", i);
        for (int32_t j = 0; j < i; j++)
            if (strcmp(w->ops[j].name, w->ops[i].name) == 0)
                return bad(msg, len, "ops[%d]: name '%s' repeats ops[%d]", i, w->ops[i].name, j);
    }
    /* generation and reads */
    int32_t *gen = malloc(sizeof *gen * (size_t)w->n_tensors);
    if (!gen) return bad(msg, len, "out of host memory");
    for (int32_t t = 0; t < w->n_tensors; t++) gen[t] = -2; /* not generated yet */
    int rc = 0;
    for (int32_t i = 0; i < w->n_ops && !rc; i++) {
        const tsl_wl_op *op = &w->ops[i];
        if (op->n_in < 0 || op->n_out < 1) {
            rc = bad(msg, len, "ops[%d] '%s': n_in %d, n_out %d", i, op->name, op->n_in, op->n_out);
            break;
        }
        for (int k = 0; k < op->n_in && !rc; k++) {
            int32_t t = op->in[k];
            if (t < 0 || t >= w->n_tensors) {
                rc = bad(msg, len, "ops[%d] '%s': input %d out of range", i, op->name, t);
                break;
            }
            for (int m = 0; m < k; m++)
                if (op->in[m] == t) rc = bad(msg, len, "ops[%d] '%s': input '%s' twice", i,
                                             op->name, w->tensors[t].name);
            tsl_tensor_kind kd = w->tensors[t].kind;
            if (!tsl_kind_is_persistent(kd) && kd != TSL_KIND_INPUT && kd != TSL_KIND_LABEL &&
                gen[t] == -2)
                rc = bad(msg, len, "ops[%d] '%s': reads '%s' before it is generated", i, op->name,
                         w->tensors[t].name);
        }
        for (int k = 0; k < op->n_out && !rc; k++) {
            int32_t t = op->out[k];
            if (t < 0 || t >= w->n_tensors) {
                rc = bad(msg, len, "ops[%d] '%s': output %d out of range", i, op->name, t);
                break;
            }
            tsl_tensor_kind kd = w->tensors[t].kind;
            int inplace = 0;
            for (int m = 0; m < op->n_in; m++) inplace |= op->in[m] == t;
            if (kd == TSL_KIND_INPUT || kd == TSL_KIND_LABEL)
                rc = bad(msg, len, "ops[%d] '%s': generates data-loaded '%s'", i, op->name,
                         w->tensors[t].name);
            else if (tsl_kind_is_persistent(kd) && !inplace)
                rc = bad(msg, len, "ops[%d] '%s': writes persistent '%s' without reading it", i,
                         op->name, w->tensors[t].name);
            else if (!tsl_kind_is_persistent(kd) && (gen[t] != -2 || inplace))
                rc = bad(msg, len, "ops[%d] '%s': generates '%s' twice or in place", i, op->name,
                         w->tensors[t].name);
            gen[t] = i;
        }
        if (!rc && !(op->end_us > op->start_us))
            rc = bad(msg, len, "ops[%d] '%s': [%.17g, %.17g] is empty", i, op->name, op->start_us,
                     op->end_us);
        if (!rc && op->start_us != (i ? w->ops[i - 1].end_us : 0.0))
            rc = bad(msg, len, "ops[%d] '%s': starts at %.17g, not at the previous end", i,
                     op->name, op->start_us);
    }
    for (int32_t t = 0; t < w->n_tensors && !rc; t++) {
        const tsl_wl_tensor *tt = &w->tensors[t];
        int persistent = tsl_kind_is_persistent(tt->kind);
        int data = tt->kind == TSL_KIND_INPUT || tt->kind == TSL_KIND_LABEL;
        int32_t want = persistent || data ? -1 : gen[t];
        if (!persistent && !data && gen[t] == -2)
            rc = bad(msg, len, "tensors[%d] '%s': never generated", t, tt->name);
        else if (tt->producer != want)
            rc = bad(msg, len, "tensors[%d] '%s': producer %d, expected %d", t, tt->name,
                     tt->producer, want);
    }
    free(gen);
    if (rc) return rc;
    if (w->period_us != w->ops[w->n_ops - 1].end_us)
        return bad(msg, len, "period %.17g != end of the last op %.17g", w->period_us,
                   w->ops[w->n_ops - 1].end_us);
    if (w->optimizer_begin < 0 || w->optimizer_begin > w->n_ops)
        return bad(msg, len, "optimizer_begin %d outside [0, %d]", w->optimizer_begin, w->n_ops);
    return 0;
}

size_t rw_persistent_bytes(const tsl_workload *w) {
    size_t s = 0;
    for (int32_t t = 0; t < w->n_tensors; t++)
        if (tsl_kind_is_persistent(w->tensors[t].kind)) s += w->tensors[t].bytes;
    return s;
}

size_t rw_vanilla_peak(const tsl_workload *w) {
    int32_t nt = w->n_tensors;
    int32_t *death = malloc(sizeof *death * (size_t)nt);
    uint8_t *live = calloc((size_t)nt, 1);
    if (!death || !live) {
        free(death);
        free(live);
        return 0;
    }
    size_t load = 0;
    for (int32_t t = 0; t < nt; t++) {
        tsl_tensor_kind k = w->tensors[t].kind;
        death[t] = tsl_kind_is_persistent(k) ? INT32_MAX : w->tensors[t].producer;
        if (tsl_kind_is_persistent(k) || k == TSL_KIND_INPUT || k == TSL_KIND_LABEL) {
            load += w->tensors[t].bytes;
            live[t] = 1;
        }
    }
    for (int32_t i = 0; i < w->n_ops; i++)
        for (int k = 0; k < w->ops[i].n_in; k++) {
            int32_t t = w->ops[i].in[k];
            if (death[t] != INT32_MAX && death[t] < i) death[t] = i;
        }
    size_t peak = load;
    for (int32_t t = 0; t < nt; t++) /* data never read: freed right after the load */
        if (death[t] == -1 && live[t]) load -= w->tensors[t].bytes, live[t] = 0;
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        for (int k = 0; k < op->n_out; k++)
            if (!live[op->out[k]]) load += w->tensors[op->out[k]].bytes, live[op->out[k]] = 1;
        if (load + op->workspace > peak) peak = load + op->workspace;
        for (int k = 0; k < op->n_in; k++)
            if (death[op->in[k]] == i && live[op->in[k]])
                load -= w->tensors[op->in[k]].bytes, live[op->in[k]] = 0;
        for (int k = 0; k < op->n_out; k++)
            if (death[op->out[k]] == i && live[op->out[k]])
                load -= w->tensors[op->out[k]].bytes, live[op->out[k]] = 0;
    }
    free(death);
    free(live);
    return peak;
}

int rw_equal(const tsl_workload *a, const tsl_workload *b) {
    if (strcmp(a->job, b->job) || a->n_tensors != b->n_tensors || a->n_ops != b->n_ops ||
        a->optimizer_begin != b->optimizer_begin ||
        memcmp(&a->period_us, &b->period_us, sizeof a->period_us))
        return 0;
    for (int32_t t = 0; t < a->n_tensors; t++) {
        const tsl_wl_tensor *x = &a->tensors[t], *y = &b->tensors[t];
        if (strcmp(x->name, y->name) || x->bytes != y->bytes || x->kind != y->kind ||
            x->producer != y->producer)
            return 0;
    }
    for (int32_t i = 0; i < a->n_ops; i++) {
        const tsl_wl_op *x = &a->ops[i], *y = &b->ops[i];
        if (strcmp(x->name, y->name) || x->workspace != y->workspace || x->n_in != y->n_in ||
            x->n_out != y->n_out || memcmp(&x->start_us, &y->start_us, sizeof x->start_us) ||
            memcmp(&x->end_us, &y->end_us, sizeof x->end_us))
            return 0;
        if (memcmp(x->in, y->in, sizeof *x->in * (size_t)x->n_in) ||
            memcmp(x->out, y->out, sizeof *x->out * (size_t)x->n_out))
            return 0;
    }
    return 1;
}

void rw_print(const tsl_workload *w, FILE *f) {
    fprintf(f, "workload '%s': %d tensors, %d ops, optimizer_begin %d, period %.17g us\n", w->job,
            w->n_tensors, w->n_ops, w->optimizer_begin, w->period_us);
    for (int32_t t = 0; t < w->n_tensors; t++)
        fprintf(f, "  t%-3d %-12s %10zu B %-15s producer %d\n", t, w->tensors[t].name,
                w->tensors[t].bytes, tsl_kind_name(w->tensors[t].kind), w->tensors[t].producer);
    for (int32_t i = 0; i < w->n_ops; i++) {
        const tsl_wl_op *op = &w->ops[i];
        fprintf(f, "  op%-3d %-12s [%.17g, %.17g] ws %zu in", i, op->name, op->start_us,
                op->end_us, op->workspace);
        for (int k = 0; k < op->n_in; k++) fprintf(f, " %d", op->in[k]);
        fprintf(f, " out");
        for (int k = 0; k < op->n_out; k++) fprintf(f, " %d", op->out[k]);
        fprintf(f, "\n");
    }
}

/* ---- hand-made workloads ------------------------------------------------------- */

struct rw_builder {
    bld b;
    int marked; /* optimizer_begin set */
};

rw_builder *rw_build_begin(const char *job) {
    rw_builder *rb = calloc(1, sizeof *rb);
    if (!rb) return NULL;
    rb->b.w = calloc(1, sizeof *rb->b.w);
    if (!rb->b.w) {
        free(rb);
        return NULL;
    }
    snprintf(rb->b.w->job, sizeof rb->b.w->job, "%s", job);
    return rb;
}

int32_t rw_build_tensor(rw_builder *rb, const char *name, size_t bytes, tsl_tensor_kind kind) {
    return add_tensor(&rb->b, kind, bytes, "%s", name);
}

int32_t rw_build_op(rw_builder *rb, const char *name, double lat_us, size_t workspace,
                    const int32_t *in, int n_in, const int32_t *out, int n_out) {
    int32_t i = add_op(&rb->b, in, n_in, out, n_out, lat_us, "%s", name);
    if (i >= 0) rb->b.w->ops[i].workspace = workspace;
    return i;
}

void rw_build_mark_optimizer(rw_builder *rb) {
    rb->b.w->optimizer_begin = rb->b.w->n_ops;
    rb->marked = 1;
}

tsl_workload *rw_build_end(rw_builder *rb) {
    tsl_workload *w = rb->b.w;
    int oom = rb->b.oom;
    if (!rb->marked) w->optimizer_begin = w->n_ops;
    free(rb);
    if (oom) {
        rw_free(w);
        return NULL;
    }
    finish_w(w);
    return w;
}
