/*
 * ilp_build.c - the integer program of the integer-program policies over
 * all the jobs of a request, solved by CBC (milp.h), and its solution read
 * back into schedules (ilp_internal.h). docs/SCHEDULING.md, "Integer
 * programs", states the model; in short, per job and candidate k with
 * producer q and last access `last`, over stages t in (q, last]:
 *
 *   S[t,k]  resident at the start of stage t          (Checkmate's S)
 *   R[t,k]  recomputed right before op t              (Checkmate's R)
 *   O[t,k]  offload starting at stage t               (MO-SOS's O)
 *   P[t,k]  prefetch starting at stage t              (MO-SOS's P)
 *   A[t,v]  op t runs its alternative v               (MO-SOS's algorithm)
 *   Pk_j    job j's peak load; sum of Pk_j <= budget
 *
 *   continuity  S[t] <= S[t-1] + R[t-1] + (prefetches landing at t)
 *   use         op t reads k:  S[t] + R[t] >= 1
 *   chain       R[t,y] <= S[t,k] + R[t,k] for a candidate input k of y's
 *               producer (R[t,k] only when k's index is below y's: the
 *               recomputations before one op run in tensor order)
 *   offload     at most one per tensor; resident while it copies
 *   prefetch    after an offload has ended; absent from its start until
 *               it lands (nor recomputed meanwhile)
 *   channels    per job and direction (one channel if not duplex): one
 *               copy at a time, a copy holding its stages [t, sf)
 *   memory      fixed(t) + sum_k bytes_k (S + R + in flight) + workspace of
 *               the chosen alternative <= Pk_j
 *   objective   recomputation time + the alternatives' extra time, and a
 *               tie-break of 1e-4 per us of copy (no copy for nothing)
 *
 * Memory is counted in KiB to keep the coefficients small. A budget the
 * program cannot meet (or for which the solver found no schedule in its
 * time limit) is solved again for the least memory (an excess column
 * priced above everything else, the vanilla schedule as CBC's start), and
 * the outcome says so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/ilp_internal.h"

#define KIB 1024.0
#define COPY_TIE 1e-4

/* The columns of one job: n x nc indices per kind (-1: none), its
 * alternatives' first column per op, its peak column. */
typedef struct jcols {
    int *S, *R, *O, *P;
    int *A;       /* per op: first column of its alternatives, -1 */
    int pk;
} jcols;

static void jcols_free(jcols *c) {
    free(c->S);
    free(c->R);
    free(c->O);
    free(c->P);
    free(c->A);
}

/* A growing row under construction. */
typedef struct rowb {
    int n, cap;
    int *col;
    double *v;
    int oom;
} rowb;

static void rb_add(rowb *r, int c, double v) {
    if (c < 0) return;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        int *nc = realloc(r->col, (size_t)cap * sizeof *nc);
        if (nc) r->col = nc;
        double *nv = realloc(r->v, (size_t)cap * sizeof *nv);
        if (nv) r->v = nv;
        if (!nc || !nv) {
            r->oom = 1;
            return;
        }
        r->cap = cap;
    }
    r->col[r->n] = c;
    r->v[r->n++] = v;
}

static void rb_emit(tsl__milp *m, rowb *r, char sense, double rhs) {
    if (!r->oom && tsl__milp_row(m, r->n, r->col, r->v, sense, rhs) < 0) r->oom = 1;
    r->n = 0;
}

#define AT(J, t, k) ((size_t)(t) * (size_t)(J)->nc + (size_t)(k))

/* Which R columns exist: the tensors an op reads, then max_chain - 1
 * levels of their producers' candidate inputs. mark[] (n x nc) gets 1. */
static void chain_closure(const tsl__ilp_job *J, int max_chain, uint8_t *mark) {
    int32_t nc = J->nc;
    for (int32_t t = 0; t < J->n; t++)
        for (int32_t k = 0; k < nc; k++)
            mark[AT(J, t, k)] = (uint8_t)(max_chain >= 1 && J->reads[AT(J, t, k)] &&
                                          J->rc_at[AT(J, t, k)]);
    for (int d = 2; d <= max_chain; d++) {
        for (int32_t t = 0; t < J->n; t++)
            for (int32_t y = 0; y < nc; y++) {
                if (mark[AT(J, t, y)] != d - 1) continue;
                const tsl_wl_op *o = &J->w->ops[J->c[y].q];
                for (int i = 0; i < o->n_in; i++) {
                    int32_t k = J->cand_of[o->in[i]];
                    if (k < 0 || J->c[k].tensor >= J->c[y].tensor || mark[AT(J, t, k)]) continue;
                    if (t <= J->c[k].q || t > J->c[k].last || !J->rc_at[AT(J, t, k)]) continue;
                    mark[AT(J, t, k)] = (uint8_t)d;
                }
            }
    }
}

/* The columns of job J (st: a start schedule, or NULL: its copies get
 * columns outside the window too). Returns 0 if out of host memory. */
static int add_columns(tsl__milp *m, const tsl__ilp_job *J, const tsl__ilp_opts *o,
                       const tsl__ilp_algos *al, const tsl__ilp_sched *st, jcols *c) {
    size_t cells = (size_t)J->n * (size_t)J->nc + 1;
    c->S = malloc(cells * sizeof *c->S);
    c->R = malloc(cells * sizeof *c->R);
    c->O = malloc(cells * sizeof *c->O);
    c->P = malloc(cells * sizeof *c->P);
    c->A = malloc(((size_t)J->n + 1) * sizeof *c->A);
    uint8_t *mark = calloc(cells, 1);
    if (!c->S || !c->R || !c->O || !c->P || !c->A || !mark) {
        free(mark);
        return 0;
    }
    chain_closure(J, o->max_chain, mark);
    int ok = 1;
    for (size_t i = 0; i < cells; i++) c->S[i] = c->R[i] = c->O[i] = c->P[i] = -1;
    for (int32_t k = 0; k < J->nc && ok; k++) {
        const tsl__ilp_cand *cd = &J->c[k];
        /* a candidate nothing can take off the device stays as in vanilla (constant
         * memory, no columns): Checkmate's parameter gradients, say */
        int swaps = o->swap && cd->swap_ok, active = swaps;
        for (int32_t t = cd->q + 1; t <= cd->last && !active; t++) active = mark[AT(J, t, k)];
        if (!active) continue;
        int32_t first_landed = J->n; /* earliest stage an offload can have ended by */
        for (int32_t t = cd->q + 1; t <= cd->last && ok; t++) {
            size_t i = AT(J, t, k);
            c->S[i] = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, 0.0);
            if (mark[i]) c->R[i] = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, cd->rc_us);
            if (swaps && J->sf_out[i] >= 0 && (t <= cd->q + o->window || (st && st->O[i]))) {
                c->O[i] = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, COPY_TIE * cd->out_us);
                if (J->sf_out[i] < first_landed) first_landed = J->sf_out[i];
            }
            int near = 0; /* a read within the window after t */
            for (int32_t u = t + 1; u <= cd->last && u <= t + o->window && !near; u++)
                near = J->reads[AT(J, u, k)];
            if (swaps && (near || (st && st->P[i])) && J->sf_in[i] >= 0 && t >= first_landed)
                c->P[i] = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, COPY_TIE * cd->in_us);
            ok = tsl__milp_n_cols(m) > 0 && c->S[i] >= 0; /* a failed column marks m */
        }
    }
    for (int32_t t = 0; t < J->n && ok; t++) {
        c->A[t] = -1;
        int na = al && al->n ? al->n[t] : 0;
        if (na < 2) continue;
        for (int v = 0; v < na && ok; v++) {
            int col = tsl__milp_col(m, TSL__MILP_BINARY, 0, 1, al->us[t][v] - al->us[t][0]);
            if (v == 0) c->A[t] = col;
            ok = col >= 0;
        }
    }
    free(mark);
    c->pk = ok ? tsl__milp_col(m, TSL__MILP_CONTINUOUS, 0, INFINITY, 0.0) : -1;
    return c->pk >= 0;
}

/* The stages in (q, last] of candidate k where cols has a column, into
 * at[] (room for the span); returns their count. */
static int32_t with_cols(const tsl__ilp_job *J, const int *cols, int32_t k, int32_t *at) {
    int32_t n = 0;
    for (int32_t t = J->c[k].q + 1; t <= J->c[k].last; t++)
        if (cols[AT(J, t, k)] >= 0) at[n++] = t;
    return n;
}

/* The rows of one candidate: continuity, uses, chains, copies. po, pp:
 * room for the candidate's span (its stages with an offload, a prefetch
 * column). */
static void candidate_rows(tsl__milp *m, const tsl__ilp_job *J, const jcols *c, int32_t k,
                           rowb *r, int32_t *po, int32_t *pp) {
    const tsl__ilp_cand *cd = &J->c[k];
    if (c->S[AT(J, cd->q + 1, k)] < 0) return; /* no columns: as in vanilla */
    int32_t no = with_cols(J, c->O, k, po), np = with_cols(J, c->P, k, pp);
    for (int32_t t = cd->q + 1; t <= cd->last; t++) {
        size_t i = AT(J, t, k);
        if (t > cd->q + 1) { /* continuity */
            rb_add(r, c->S[i], 1);
            rb_add(r, c->S[AT(J, t - 1, k)], -1);
            rb_add(r, c->R[AT(J, t - 1, k)], -1);
            for (int32_t a = 0; a < np && pp[a] < t; a++)
                if (J->sf_in[AT(J, pp[a], k)] == t) rb_add(r, c->P[AT(J, pp[a], k)], -1);
            rb_emit(m, r, 'L', 0);
        }
        if (J->reads[i]) { /* use */
            rb_add(r, c->S[i], 1);
            rb_add(r, c->R[i], 1);
            rb_emit(m, r, 'G', 1);
        }
        if (c->R[i] >= 0) { /* chain: the producer's candidate inputs */
            const tsl_wl_op *o = &J->w->ops[cd->q];
            for (int a = 0; a < o->n_in; a++) {
                int32_t x = J->cand_of[o->in[a]];
                if (x < 0) continue;
                size_t ix = AT(J, t, x);
                if (c->S[ix] < 0) continue; /* a candidate without columns: resident */
                rb_add(r, c->R[i], 1);
                rb_add(r, c->S[ix], -1);
                if (J->c[x].tensor < cd->tensor) rb_add(r, c->R[ix], -1);
                rb_emit(m, r, 'L', 0);
            }
        }
        /* resident while an offload copies: sum of O[p] with p <= t < sf_out[p] */
        int n0 = 0;
        for (int32_t a = 0; a < no && po[a] <= t; a++)
            if (J->sf_out[AT(J, po[a], k)] > t) {
                rb_add(r, c->O[AT(J, po[a], k)], 1);
                n0++;
            }
        if (n0) {
            rb_add(r, c->S[i], -1);
            rb_emit(m, r, 'L', 0);
        }
        /* absent from a prefetch's start until it lands, nor recomputed */
        n0 = 0;
        for (int32_t a = 0; a < np && pp[a] <= t; a++)
            if (J->sf_in[AT(J, pp[a], k)] > t) {
                rb_add(r, c->P[AT(J, pp[a], k)], 1);
                n0++;
            }
        if (n0) {
            rb_add(r, c->S[i], 1);
            rb_add(r, c->R[i], 1);
            rb_emit(m, r, 'L', 1);
        }
        /* a prefetch only once an offload has ended */
        if (c->P[i] >= 0) {
            rb_add(r, c->P[i], 1);
            for (int32_t a = 0; a < no && po[a] <= t; a++)
                if (J->sf_out[AT(J, po[a], k)] <= t) rb_add(r, c->O[AT(J, po[a], k)], -1);
            rb_emit(m, r, 'L', 0);
        }
    }
    if (no) { /* one offload */
        for (int32_t a = 0; a < no; a++) rb_add(r, c->O[AT(J, po[a], k)], 1);
        rb_emit(m, r, 'L', 1);
    }
}

/* Adds to held[u] (one row per stage) coef times each copy column of cols
 * (n x nc, -1: none) for the stages u in [p, sf[p]) that the copy started
 * at p holds. */
static void copies_holding(const tsl__ilp_job *J, const int *cols, const int32_t *sf,
                           double coef_per_byte, rowb *held) {
    for (int32_t k = 0; k < J->nc; k++) {
        double coef = coef_per_byte > 0 ? coef_per_byte * (double)J->c[k].bytes : 1;
        for (int32_t p = J->c[k].q + 1; p <= J->c[k].last; p++) {
            size_t i = AT(J, p, k);
            if (cols[i] < 0) continue;
            for (int32_t u = p; u < sf[i]; u++) rb_add(&held[u], cols[i], coef);
        }
    }
}

/* 1 if any of held[0 .. n) ran out of host memory. */
static int held_oom(const rowb *held, int32_t n) {
    for (int32_t u = 0; u < n; u++)
        if (held[u].oom) return 1;
    return 0;
}

static void held_free(rowb *held, int32_t n) {
    for (int32_t u = 0; held && u < n; u++) {
        free(held[u].col);
        free(held[u].v);
    }
    free(held);
}

/* Channel rows of job J: per stage, the copies holding it, per direction
 * (one channel if not duplex). */
static void channel_rows(tsl__milp *m, const tsl__ilp_job *J, const jcols *c, rowb *r) {
    int duplex = J->dev->duplex;
    for (int dir = 0; dir < 2; dir++) {
        if (!duplex && dir == 1) break;
        rowb *held = calloc((size_t)J->n + 1, sizeof *held);
        if (!held) {
            r->oom = 1;
            return;
        }
        if (dir == 0 || !duplex) copies_holding(J, c->O, J->sf_out, 0, held);
        if (dir == 1 || !duplex) copies_holding(J, c->P, J->sf_in, 0, held);
        if (held_oom(held, J->n)) r->oom = 1;
        for (int32_t u = 0; u < J->n && !r->oom; u++)
            if (held[u].n > 1) rb_emit(m, &held[u], 'L', 1);
        for (int32_t u = 0; u < J->n; u++) r->oom |= held[u].oom;
        held_free(held, J->n);
    }
}

/* Memory rows of job J, and its alternatives' rows. */
static void memory_rows(tsl__milp *m, const tsl__ilp_job *J, const tsl__ilp_algos *al,
                        const jcols *c, rowb *r) {
    rowb *flight = calloc((size_t)J->n + 1, sizeof *flight); /* prefetches in flight */
    if (!flight) {
        r->oom = 1;
        return;
    }
    copies_holding(J, c->P, J->sf_in, 1.0 / KIB, flight);
    if (held_oom(flight, J->n)) r->oom = 1;
    for (int32_t t = 0; t < J->n; t++) {
        double fixed = J->fixed[t];
        if (c->A[t] >= 0) {
            fixed -= (double)J->w->ops[t].workspace;
            for (int v = 0; v < al->n[t]; v++) rb_add(r, c->A[t] + v, 1);
            rb_emit(m, r, 'E', 1);
            for (int v = 0; v < al->n[t]; v++) rb_add(r, c->A[t] + v, (double)al->ws[t][v] / KIB);
        }
        for (int32_t k = 0; k < J->nc; k++) {
            const tsl__ilp_cand *cd = &J->c[k];
            if (t <= cd->q || t > cd->last) continue;
            double b = (double)cd->bytes / KIB;
            size_t i = AT(J, t, k);
            if (c->S[i] < 0) { /* no columns: resident as in vanilla */
                fixed += (double)cd->bytes;
                continue;
            }
            rb_add(r, c->S[i], b);
            rb_add(r, c->R[i], b);
        }
        for (int a = 0; a < flight[t].n; a++) rb_add(r, flight[t].col[a], flight[t].v[a]);
        rb_add(r, c->pk, -1);
        rb_emit(m, r, 'L', -fixed / KIB);
    }
    held_free(flight, J->n);
}

/* The vanilla schedule as a solution with the budget relaxed (excess
 * column ex): everything resident, alternative 0, each job's peak its
 * largest stage load. x: the program's columns, zeroed. */
static void vanilla_start(const tsl__ilp_job *J, int n_jobs, const jcols *c, const tsl__ilp_opts *o,
                          size_t budget, int ex, double *x) {
    double sum = 0;
    for (int j = 0; j < n_jobs; j++) {
        const tsl__ilp_job *Jj = &J[j];
        const tsl__ilp_algos *al = o->choose_algos ? &Jj->alg : NULL;
        size_t cells = (size_t)Jj->n * (size_t)Jj->nc;
        for (size_t i = 0; i < cells; i++)
            if (c[j].S[i] >= 0) x[c[j].S[i]] = 1;
        double pk = 0;
        for (int32_t t = 0; t < Jj->n; t++) {
            double l = Jj->fixed[t];
            if (c[j].A[t] >= 0) {
                x[c[j].A[t]] = 1;
                l += (double)al->ws[t][0] - (double)Jj->w->ops[t].workspace;
            }
            for (int32_t k = 0; k < Jj->nc; k++)
                if (t > Jj->c[k].q && t <= Jj->c[k].last) l += (double)Jj->c[k].bytes;
            pk = fmax(pk, l / KIB);
        }
        x[c[j].pk] = pk;
        sum += pk;
    }
    x[ex] = fmax(0, sum - (double)budget / KIB);
}

/* The schedules st as a solution x of the program (zeroed): 1 if every
 * decision has its column and, unless relaxed, the peaks fit the budget. */
static int schedule_start(const tsl__ilp_job *J, int n_jobs, const jcols *c,
                          const tsl__ilp_opts *o, const tsl__ilp_sched *st, size_t budget,
                          int ex, int relaxed, double *x) {
    double sum = 0;
    for (int j = 0; j < n_jobs; j++) {
        const tsl__ilp_job *Jj = &J[j];
        const tsl__ilp_algos *al = o->choose_algos ? &Jj->alg : NULL;
        size_t cells = (size_t)Jj->n * (size_t)Jj->nc;
        for (size_t i = 0; i < cells; i++) {
            const uint8_t v[4] = {st[j].S[i], st[j].R[i], st[j].O[i], st[j].P[i]};
            const int col[4] = {c[j].S[i], c[j].R[i], c[j].O[i], c[j].P[i]};
            for (int q = 0; q < 4; q++) {
                if (col[q] >= 0) x[col[q]] = v[q];
                else if (v[q] && q > 0) return 0;
            }
        }
        for (int32_t k = 0; k < Jj->nc; k++) /* a candidate without columns stays resident */
            if (c[j].S[AT(Jj, Jj->c[k].q + 1, k)] < 0)
                for (int32_t t = Jj->c[k].q + 1; t <= Jj->c[k].last; t++)
                    if (!st[j].S[AT(Jj, t, k)]) return 0;
        double pk = 0, *load = malloc(((size_t)Jj->n + 1) * sizeof *load);
        if (!load) return 0; /* out of host memory: no start */
        tsl__ilp_stage_loads(Jj, &st[j], load);
        for (int32_t t = 0; t < Jj->n; t++) {
            double l = load[t];
            if (c[j].A[t] >= 0) {
                x[c[j].A[t]] = 1;
                l += (double)al->ws[t][0] - (double)Jj->w->ops[t].workspace;
            }
            pk = fmax(pk, l / KIB);
        }
        free(load);
        x[c[j].pk] = pk;
        sum += pk;
    }
    double over = sum - (double)budget / KIB;
    if (!relaxed && over > 0) return 0;
    x[ex] = relaxed ? fmax(0, over) : 0;
    return 1;
}

/* The solution x into job J's schedule s. */
static void read_back(const tsl__ilp_job *J, const jcols *c, const double *x, tsl__ilp_sched *s) {
    size_t cells = (size_t)J->n * (size_t)J->nc;
    for (size_t i = 0; i < cells; i++) {
        if (c->S[i] >= 0) s->S[i] = (uint8_t)(x[c->S[i]] > 0.5); /* else as in vanilla */
        s->R[i] = (uint8_t)(c->R[i] >= 0 && x[c->R[i]] > 0.5);
        s->O[i] = (uint8_t)(c->O[i] >= 0 && x[c->O[i]] > 0.5);
        s->P[i] = (uint8_t)(c->P[i] >= 0 && x[c->P[i]] > 0.5);
    }
    for (int32_t t = 0; t < J->n; t++) {
        s->algo[t] = 0;
        for (int v = 1; c->A[t] >= 0 && v < J->alg.n[t]; v++)
            if (x[c->A[t] + v] > 0.5) s->algo[t] = v;
    }
}

/* 1 if a solve given a feasible start ended without a solution: stopped
 * (or crashed) before it took the start, or "infeasible", which the start
 * disproves (CBC 2.10 says so at times when its limit stops its
 * preprocessing). */
static int no_answer(const tsl__milp_result *res) {
    return res->status == TSL__MILP_NO_SOLUTION || res->status == TSL__MILP_INFEASIBLE;
}

/* The start x0 taken as the solution (CBC stopped at its limit before
 * taking it): feasible, its objective, no bound. Returns x0. */
static const double *use_start(tsl__ilp_outcome *out, const tsl__milp *m, const double *x0) {
    double obj = 0;
    for (int col = 0; col < tsl__milp_n_cols(m); col++) obj += tsl__milp_obj(m, col) * x0[col];
    out->status = TSL__MILP_FEASIBLE;
    out->objective = obj;
    out->bound = out->gap = NAN;
    return x0;
}

/* A solve's result into the outcome (ran: 0 for a solve skipped for the
 * deadline). */
static void take(tsl__ilp_outcome *out, const tsl__milp_result *res, const tsl__milp *m, int ran) {
    out->status = res->status;
    out->objective = res->objective;
    out->bound = res->bound;
    out->gap = res->gap;
    out->seconds += res->seconds;
    out->hit_limit |= res->hit_limit;
    out->crashed |= res->crashed;
    out->n_cols = tsl__milp_n_cols(m);
    out->n_rows = tsl__milp_n_rows(m);
    out->solves += ran;
}

/* Below this many seconds left before the deadline a solve is not started. */
#define MIN_SOLVE_S 0.5

/* Solves m with mo, its time limit o's cut to what o's deadline leaves
 * (the solve's process is killed at its limit plus TSL__MILP_GRACE), into
 * res and out; with too little time left nothing runs (no solution, the
 * limit hit). TSL_OK or tsl__milp_solve's errors. */
static tsl_status solve_in_time(const tsl__milp *m, tsl__milp_opts *mo, const tsl__ilp_opts *o,
                                tsl__milp_result *res, tsl__ilp_outcome *out) {
    double left = o->deadline > 0 ? o->deadline - tsl__milp_now() : INFINITY;
    double fit = TSL__MILP_LIMIT_WITHIN(left);
    int cut = fit < o->time_limit_s;
    mo->time_limit_s = cut ? fit : o->time_limit_s;
    if (cut && !(fit >= MIN_SOLVE_S)) {
        memset(res, 0, sizeof *res);
        res->status = TSL__MILP_NO_SOLUTION;
        res->objective = res->bound = res->gap = NAN;
        res->hit_limit = 1;
        out->deadline_hit = 1;
        take(out, res, m, 0);
        return TSL_OK;
    }
    tsl_status st = tsl__milp_solve(m, mo, res);
    if (st != TSL_OK) return st;
    if (cut && res->hit_limit) out->deadline_hit = 1;
    take(out, res, m, 1);
    return TSL_OK;
}

tsl_status tsl__ilp_solve(tsl__ilp_job *J, int n_jobs, size_t budget, const tsl__ilp_opts *o,
                          tsl__ilp_sched *s, tsl__ilp_outcome *out) {
    return tsl__ilp_solve_from(J, n_jobs, budget, o, NULL, s, out);
}

tsl_status tsl__ilp_solve_from(tsl__ilp_job *J, int n_jobs, size_t budget,
                               const tsl__ilp_opts *o, const tsl__ilp_sched *start,
                               tsl__ilp_sched *s, tsl__ilp_outcome *out) {
    memset(out, 0, sizeof *out);
    out->status = TSL__MILP_NO_SOLUTION;
    out->objective = out->bound = out->gap = NAN;
    tsl__milp *m = tsl__milp_new();
    jcols *c = calloc((size_t)n_jobs, sizeof *c);
    rowb r = {0};
    double *x0 = NULL; /* a start for CBC */
    tsl_status st = TSL_OK;
    if (!m || !c) {
        st = tsl_fail(TSL_ERR_OOM, "ilp: out of host memory");
        goto out;
    }
    for (int j = 0; j < n_jobs && st == TSL_OK; j++)
        if (!add_columns(m, &J[j], o, o->choose_algos ? &J[j].alg : NULL,
                         start ? &start[j] : NULL, &c[j]))
            st = tsl_fail(TSL_ERR_OOM, "ilp: out of host memory for the program's columns");
    int excess = st == TSL_OK ? tsl__milp_col(m, TSL__MILP_CONTINUOUS, 0, 0, 0.0) : -1;
    for (int j = 0; j < n_jobs && st == TSL_OK; j++) {
        int32_t *po = malloc(((size_t)J[j].n + 1) * sizeof *po);
        int32_t *pp = malloc(((size_t)J[j].n + 1) * sizeof *pp);
        if (!po || !pp) r.oom = 1;
        for (int32_t k = 0; k < J[j].nc && !r.oom; k++)
            candidate_rows(m, &J[j], &c[j], k, &r, po, pp);
        free(po);
        free(pp);
        channel_rows(m, &J[j], &c[j], &r);
        memory_rows(m, &J[j], o->choose_algos ? &J[j].alg : NULL, &c[j], &r);
    }
    if (st == TSL_OK) { /* the budget */
        for (int j = 0; j < n_jobs; j++) rb_add(&r, c[j].pk, 1);
        rb_add(&r, excess, -1);
        rb_emit(m, &r, 'L', (double)budget / KIB); /* exact: KIB is a power of 2 */
    }
    if (st == TSL_OK && (r.oom || excess < 0))
        st = tsl_fail(TSL_ERR_OOM, "ilp: out of host memory for the program's rows");
    tsl__milp_opts mo = tsl__milp_opts_default();
    mo.threads = o->threads;
    tsl__milp_result res = {0};
    x0 = st == TSL_OK ? calloc((size_t)tsl__milp_n_cols(m) + 1, sizeof *x0) : NULL;
    if (x0 && start && schedule_start(J, n_jobs, c, o, start, budget, excess, 0, x0) &&
        tsl__milp_violation(m, x0, 0) <= 1e-6)
        mo.start = x0;
    if (st == TSL_OK) st = solve_in_time(m, &mo, o, &res, out);
    const double *sol = NULL; /* the solution taken */
    if (st == TSL_OK && (res.status == TSL__MILP_OPTIMAL || res.status == TSL__MILP_FEASIBLE))
        sol = res.x;
    else if (st == TSL_OK && no_answer(&res) && mo.start)
        sol = use_start(out, m, x0); /* CBC stopped before taking the start */
    if (st == TSL_OK && !sol) {
        /* no schedule within the budget (or none found in the limit): the least
         * memory, the excess priced above every second saved, from the start
         * given (its budget relaxed) or from vanilla */
        tsl__milp_set_bounds(m, excess, 0, INFINITY);
        tsl__milp_set_obj(m, excess, 1.0);
        for (int col = 0; col < tsl__milp_n_cols(m); col++)
            if (col != excess) tsl__milp_set_obj(m, col, 1e-6 * tsl__milp_obj(m, col));
        tsl__milp_result_free(&res);
        mo.start = NULL;
        if (x0) {
            memset(x0, 0, (size_t)tsl__milp_n_cols(m) * sizeof *x0);
            if (!start || !schedule_start(J, n_jobs, c, o, start, budget, excess, 1, x0) ||
                tsl__milp_violation(m, x0, 0) > 1e-6) {
                memset(x0, 0, (size_t)tsl__milp_n_cols(m) * sizeof *x0);
                vanilla_start(J, n_jobs, c, o, budget, excess, x0);
            }
            mo.start = x0;
        }
        st = solve_in_time(m, &mo, o, &res, out);
        out->budget_relaxed = 1;
        if (st == TSL_OK && (res.status == TSL__MILP_OPTIMAL || res.status == TSL__MILP_FEASIBLE))
            sol = res.x;
        else if (st == TSL_OK && no_answer(&res) && mo.start)
            sol = use_start(out, m, x0);
    }
    if (sol)
        for (int j = 0; j < n_jobs; j++) read_back(&J[j], &c[j], sol, &s[j]);
    tsl__milp_result_free(&res);
    free(x0);
out:
    for (int j = 0; c && j < n_jobs; j++) jcols_free(&c[j]);
    free(c);
    free(r.col);
    free(r.v);
    tsl__milp_free(m);
    return st;
}
