/*
 * test_sched_random.c - the planner, the verifier, the simulator and the plan
 * JSON form held to agree on thousands of random workloads
 * (tests/random_workload.c): single jobs and groups of 2 to 4 jobs sharing a
 * device, random profiles (duplex or not), random budgets between the
 * persistent bytes and the vanilla peak, random max swapping rates.
 *
 * For every case: the plan verifies (no violation, across the jobs'
 * shared channels too); the planner's vanilla peak equals an independent
 * reference (rw_vanilla_peak); no plan raises a job's peak above it; each
 * job simulated alone with exact latencies reproduces predicted_peak exactly
 * and predicted_period_us to 1e-6 relative with the planned waits' stall
 * (none in the paper's plans; planning on to a budget may plan some); planning the
 * same inputs again (regenerated, so at other addresses) gives identical
 * plans field by field and byte-identical JSON; the JSON round trip is
 * exact. Three tests hold the verifier to the simulator on plans that are
 * not the planner's: random plans (many invalid), valid plans with one event
 * perturbed (delay, trigger, precede, or dropped), and random valid plans
 * with planned waits (tests/plan_gen.c). In all, the verifier either rejects
 * the plan with messages, or accepts one whose peak, period and stall it
 * computes as tsl_peak_analysis does, and that the simulator runs exactly
 * as predicted, its stall the planned waits' (predicted figures taken from
 * tsl_peak_analysis of the plan) - never a silent inconsistency.
 *
 * Failures are tallied by class and the run goes on, so that one run shows
 * every kind of disagreement; the first few of each class are printed with
 * the seed (the first with the workload and the plan). Rerun one planner
 * case with TSL_SCHED_SEED=<seed> (single_jobs or multi_jobs filter).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "random_workload.h"
#include "plan_gen.h"
#include "tensile/policy.h"
#include "tensile/policy_tensile.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

#define MAXJ 4

/* ---- one random case ------------------------------------------------------- */

typedef struct rcase {
    uint64_t seed;
    int n;                       /* jobs */
    tsl_workload *w[MAXJ];
    tsl_device_profile dev;
    tsl_plan_opts po;            /* TENSILE with `to` */
    tsl_tensile_opts to;
    double rates[MAXJ];          /* to.max_swap_rate, one per job */
    size_t vanilla[MAXJ];        /* rw_vanilla_peak */
    size_t persistent[MAXJ];
} rcase;

/* Workloads, profile and options of case `seed` with n jobs (the same seed
 * always gives the same case). */
static void case_make(rcase *c, uint64_t seed, int n) {
    memset(c, 0, sizeof *c);
    c->seed = seed;
    c->n = n;
    rw_opts o = rw_opts_default();
    if (seed % 5 == 0) o.dyadic_times = 1; /* exact time sums */
    if (seed % 10 == 3) {                  /* larger jobs */
        o.max_fwd = 60;
        o.max_params = 12;
    }
    cr_assert_eq(rw_generate_jobs(seed, &o, n, c->w), 0, "seed %llu: out of memory",
                 (unsigned long long)seed);
    c->dev = rw_profile(seed);
    c->po = tsl_plan_opts_default();
    c->po.policy = tsl_policy_find("tensile");
    c->to = tsl_tensile_opts_default();
    c->to.max_swap_rate = (tsl_per_job){.n = n, .v = c->rates};
    c->po.opts = &c->to;
    uint64_t rs = seed ^ 0xA5A5A5A5ull;
    size_t sum_p = 0, sum_v = 0;
    for (int j = 0; j < n; j++) {
        char why[320];
        cr_assert_eq(rw_check(c->w[j], why, sizeof why), 0, "seed %llu job %d: generator: %s",
                     (unsigned long long)seed, j, why);
        c->vanilla[j] = rw_vanilla_peak(c->w[j]);
        c->persistent[j] = rw_persistent_bytes(c->w[j]);
        sum_p += c->persistent[j];
        sum_v += c->vanilla[j];
        /* a single job's share is always 1: a rate below 1 forbids its swaps */
        double u = th_uniform(&rs, 0, 1);
        c->rates[j] = u < 0.5 ? 1.0 : (n == 1 && u < 0.8 ? 1.0 : th_uniform(&rs, 0.2, 1.0));
    }
    c->po.budget = sum_p + (size_t)((double)(sum_v - sum_p) * th_uniform(&rs, 0, 1));
    if (c->po.budget == 0) c->po.budget = 1;
    c->to.recompute = th_uniform(&rs, 0, 1) < 0.8;
    c->to.swap_in_slack = seed % 3 == 0 ? 0.0 : th_uniform(&rs, 0, 1); /* 0: the paper's placement */
}

static void case_free(rcase *c) {
    for (int j = 0; j < c->n; j++) rw_free(c->w[j]);
}

static const char *ev_name(tsl_event_type t) {
    switch (t) {
    case TSL_EV_SWAP_OUT: return "swap_out";
    case TSL_EV_SWAP_IN: return "swap_in";
    case TSL_EV_RELEASE: return "release";
    case TSL_EV_RECOMPUTE: return "recompute";
    }
    return "?";
}

static void print_plan(const tsl_plan *p, FILE *f) {
    fprintf(f, "plan '%s': %d events, predicted peak %zu, period %.17g\n", p->job, p->n_events,
            p->predicted_peak, p->predicted_period_us);
    for (int i = 0; i < p->n_events; i++) {
        const tsl_event *e = &p->events[i];
        fprintf(f, "  [%d] %-9s t%d trigger %d delay %.17g precede %d\n", i, ev_name(e->type),
                e->tensor, e->trigger, e->delay_us, e->precede);
    }
}

/* Prints the whole case (profile, options, workloads, plans) to stderr. */
static void dump_case(const rcase *c, tsl_plan *const *plans) {
    fprintf(stderr, "=== seed %llu, %d job(s); rerun with TSL_SCHED_SEED=%llu\n",
            (unsigned long long)c->seed, c->n, (unsigned long long)c->seed);
    fprintf(stderr, "profile: h2d %.17g d2h %.17g B/s, duplex %d, copy latency %.17g us\n",
            c->dev.h2d_bw, c->dev.d2h_bw, c->dev.duplex, c->dev.copy_latency_us);
    fprintf(stderr, "budget %zu, recompute %d, swap-in slack %g\n", c->po.budget, c->to.recompute,
            c->to.swap_in_slack);
    for (int j = 0; j < c->n; j++) {
        fprintf(stderr, "job %d: max swap rate %g, vanilla peak %zu, persistent %zu\n", j,
                c->rates[j], c->vanilla[j], c->persistent[j]);
        rw_print(c->w[j], stderr);
        if (plans && plans[j]) print_plan(plans[j], stderr);
    }
}

/* Up to 4 violations joined into buf. */
static const char *join_violations(const tsl_violation *v, int nv, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < nv && i < 4 && k + 1 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "\n    %s", v[i].what);
    return buf;
}

/* 1 if the plans are equal field by field (times bit for bit); else 0 with
 * the first difference in why. */
static int plan_equal(const tsl_plan *a, const tsl_plan *b, char *why, size_t len) {
    if (strcmp(a->job, b->job)) return snprintf(why, len, "job '%s' vs '%s'", a->job, b->job), 0;
    if (a->n_events != b->n_events)
        return snprintf(why, len, "%d vs %d events", a->n_events, b->n_events), 0;
    if (a->predicted_peak != b->predicted_peak)
        return snprintf(why, len, "predicted peak %zu vs %zu", a->predicted_peak,
                        b->predicted_peak), 0;
    if (memcmp(&a->predicted_period_us, &b->predicted_period_us, sizeof(double)))
        return snprintf(why, len, "predicted period %.17g vs %.17g", a->predicted_period_us,
                        b->predicted_period_us), 0;
    for (int i = 0; i < a->n_events; i++) {
        const tsl_event *x = &a->events[i], *y = &b->events[i];
        if (x->type != y->type || x->tensor != y->tensor || x->trigger != y->trigger ||
            x->precede != y->precede || memcmp(&x->delay_us, &y->delay_us, sizeof(double)))
            return snprintf(why, len,
                            "event %d: %s t%d trigger %d delay %.17g precede %d vs %s t%d trigger "
                            "%d delay %.17g precede %d",
                            i, ev_name(x->type), x->tensor, x->trigger, x->delay_us, x->precede,
                            ev_name(y->type), y->tensor, y->trigger, y->delay_us, y->precede), 0;
    }
    return 1;
}

/* Whole file into a malloc'd NUL-terminated buffer (NULL on failure). */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!b || got != (size_t)n) {
        free(b);
        return NULL;
    }
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static char tmpdir[64];

static void make_tmpdir(void) {
    if (tmpdir[0]) return;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsl_sched_random_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp failed");
}

static void remove_tmpdir(void) {
    if (tmpdir[0]) rmdir(tmpdir);
}

/* Allowed difference between a simulated and a predicted period: 1e-6
 * relative. */
static double period_tol(double period_us) { return 1e-6 * period_us; }

/* ---- failures, tallied by class ---------------------------------------------------
 * A run goes on after a failing case so that one run shows every class of
 * disagreement; the first few of each class are printed (the first with the
 * whole case), and the test fails at the end with the counts. */

enum {
    F_VANILLA = 0, /* planner's vanilla peak != reference */
    F_ABOVE,       /* planned peak above vanilla */
    F_REPORT,      /* report's planned peak != plan's predicted peak */
    F_VERIFY,      /* the verifier rejects the planner's plan */
    F_SIM_ERROR,   /* the simulator refuses a plan the verifier accepted */
    F_SIM_PEAK,    /* simulated peak != predicted */
    F_SIM_PERIOD,  /* simulated period != predicted */
    F_SIM_STALL,   /* compute waited for a copy other than the plan's waits */
    F_DETERMINISM, /* planning twice differs */
    F_JSON,        /* JSON text differs or the round trip is not exact */
    F_PEAK_REFUSES, /* tsl_peak_analysis refuses a plan the verifier accepted */
    F_ACCOUNTING,  /* the verifier's peak, period or stall != the peak analysis's */
    F_COUNT
};
static const char *const f_name[F_COUNT] = {
    "vanilla peak != reference", "planned peak above vanilla", "report != predicted peak",
    "verifier rejects the plan", "simulator refuses a verified plan", "simulated peak != predicted",
    "simulated period != predicted", "stall in the simulation != planned waits",
    "planning twice differs", "plan JSON differs / round trip",
    "peak analysis refuses a verified plan", "verifier != peak analysis"};

typedef struct tally {
    int n[F_COUNT];
    int failed_cases;
} tally;

static int tally_total(const tally *t) {
    int s = 0;
    for (int k = 0; k < F_COUNT; k++) s += t->n[k];
    return s;
}

/* "N verifier rejects the plan, M ..." for every class that occurred. */
static const char *tally_str(const tally *t, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < F_COUNT && k + 1 < len; i++)
        if (t->n[i])
            k += (size_t)snprintf(buf + k, len - k, "%s%d x %s", k ? ", " : "", t->n[i], f_name[i]);
    return buf;
}

/* Counts a failure of class cls in case c and prints its message (the
 * first 3 of each class; the very first with the whole case). */
static void failf(tally *t, int cls, const rcase *c, tsl_plan *const *plans, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void failf(tally *t, int cls, const rcase *c, tsl_plan *const *plans, const char *fmt, ...) {
    t->n[cls]++;
    if (t->n[cls] > 3) return;
    if (t->n[cls] == 1) dump_case(c, plans);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL [%s] seed %llu: ", f_name[cls], (unsigned long long)c->seed);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* Simulates job j of the case alone with exact latencies and checks that it
 * reproduces the plan's predicted peak exactly, its predicted period, and
 * the planned waits' stall (`stall`: exactly 0 for a plan without waits).
 * Returns the number of failures tallied. */
static int check_alone(tally *t, const rcase *c, int j, tsl_plan *p, const char *what,
                       double stall) {
    tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
    tsl_sim_result sr;
    memset(&sr, 0, sizeof sr);
    tsl_workload *w = c->w[j];
    tsl_plan *ps[MAXJ] = {0};
    ps[j] = p;
    int before = tally_total(t);
    if (tsl_simulate(&w, &p, 1, &c->dev, &so, &sr) != TSL_OK) {
        failf(t, F_SIM_ERROR, c, ps, "job %d (%s): %s", j, what, tsl_last_error());
        return 1;
    }
    if (sr.job[0].peak != p->predicted_peak)
        failf(t, F_SIM_PEAK, c, ps, "job %d (%s): simulated peak %zu != predicted %zu (diff %lld)",
              j, what, sr.job[0].peak, p->predicted_peak,
              (long long)sr.job[0].peak - (long long)p->predicted_peak);
    if (!(fabs(sr.job[0].iter_us - p->predicted_period_us) <= period_tol(p->predicted_period_us)))
        failf(t, F_SIM_PERIOD, c, ps,
              "job %d (%s): simulated period %.17g != predicted %.17g (diff %g)", j, what,
              sr.job[0].iter_us, p->predicted_period_us,
              sr.job[0].iter_us - p->predicted_period_us);
    if (stall == 0.0 ? sr.job[0].stall_us != 0.0
                     : !(fabs(sr.job[0].stall_us - stall) <= period_tol(p->predicted_period_us)))
        failf(t, F_SIM_STALL, c, ps, "job %d (%s): stall %.17g us, planned %.17g us%s", j, what,
              sr.job[0].stall_us, stall,
              fabs(sr.job[0].stall_us - stall) < 1e-6
                  ? " (rounding level: the simulator and the planner compute a time differently)"
                  : "");
    tsl_sim_result_free(&sr);
    return tally_total(t) - before;
}

/* Statistics over a run of cases, printed at the end. */
typedef struct stats {
    int cases, plans_with_events, swaps, recomputes;
    double msr_sum;
} stats;

/* Verifies the plans of case c together and each alone, tallying any
 * violation; ok[j] is set to 1 if job j's plan verifies alone (for one job:
 * the plan verifies). Returns 1 if everything verified. */
static int check_verified(tally *t, const rcase *c, tsl_plan *const *plans, int *ok) {
    tsl_violation *v = NULL;
    int nv = 0, all = 1;
    char vb[1500];
    tsl_status st = tsl_plan_verify_jobs((const tsl_workload *const *)c->w,
                                         (const tsl_plan *const *)plans, c->n, &c->dev, &v, &nv);
    if (st != TSL_OK || nv) {
        failf(t, F_VERIFY, c, plans, "%d job(s) together: %d violation(s):%s", c->n, nv,
              join_violations(v, nv, vb, sizeof vb));
        all = 0;
    }
    free(v);
    ok[0] = all;
    for (int j = 0; j < c->n && c->n > 1; j++) {
        v = NULL;
        nv = 0;
        st = tsl_plan_verify(c->w[j], plans[j], &c->dev, &v, &nv);
        ok[j] = st == TSL_OK && nv == 0;
        if (!ok[j])
            failf(t, F_VERIFY, c, plans, "job %d alone: %d violation(s):%s", j, nv,
                  join_violations(v, nv, vb, sizeof vb));
        free(v);
    }
    return all;
}

/* Writes plans to path; asserts success. */
static void write_plans(tsl_plan *const *plans, tsl_workload *const *w, int n, const char *path,
                        uint64_t seed) {
    cr_assert_eq(tsl_plan_write_json((const tsl_plan *const *)plans, n,
                                     (const tsl_workload *const *)w, path),
                 TSL_OK, "seed %llu: write json: %s", (unsigned long long)seed, tsl_last_error());
}

/* Plans case `seed` with n jobs and checks everything listed at the top of
 * the file, tallying failures. */
static void run_case(uint64_t seed, int n, stats *s, tally *t) {
    rcase c;
    case_make(&c, seed, n);
    tsl_plan *plans[MAXJ] = {0}, *again[MAXJ] = {0}, *rt[MAXJ] = {0};
    tsl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    int before = tally_total(t);
    tsl_status st = tsl_plan_jobs(c.w, n, &c.dev, &c.po, plans, &rep);
    if (!TH_PLANNED(st)) dump_case(&c, NULL);
    cr_assert(TH_PLANNED(st), "seed %llu: tsl_plan_jobs: %s", (unsigned long long)seed,
                 tsl_last_error());
    s->cases++;
    for (int j = 0; j < n; j++) {
        cr_assert_not_null(plans[j], "seed %llu: plan %d missing", (unsigned long long)seed, j);
        if (rep.vanilla_peak[j] != c.vanilla[j])
            failf(t, F_VANILLA, &c, plans, "job %d: planner's vanilla peak %zu != reference %zu", j,
                  rep.vanilla_peak[j], c.vanilla[j]);
        if (plans[j]->predicted_peak > c.vanilla[j])
            failf(t, F_ABOVE, &c, plans, "job %d: planned peak %zu above the vanilla peak %zu", j,
                  plans[j]->predicted_peak, c.vanilla[j]);
        if (rep.planned_peak[j] != plans[j]->predicted_peak)
            failf(t, F_REPORT, &c, plans, "job %d: report's planned peak %zu != predicted %zu", j,
                  rep.planned_peak[j], plans[j]->predicted_peak);
        s->plans_with_events += plans[j]->n_events > 0;
        s->swaps += rep.swaps[j];
        s->recomputes += rep.recomputes[j];
        s->msr_sum += c.vanilla[j] ? ((double)c.vanilla[j] - (double)plans[j]->predicted_peak) /
                                         (double)c.vanilla[j] / n
                                   : 0.0;
    }

    /* every plan verifies, and each verified job alone runs exactly as
     * predicted (a plan the verifier rejects is counted once, there) */
    int ok[MAXJ];
    int all = check_verified(t, &c, plans, ok);
    /* the paper's TENSILE plans no wait (no stall at all); planning on to a
     * budget (fit) may: the stall is then exactly the planned waits' */
    for (int j = 0; j < n; j++)
        if (ok[j]) check_alone(t, &c, j, plans[j], "planned, verified", rep.stall_us[j]);

    /* the jobs together: the simulator runs them (timings differ by design) */
    if (n > 1 && all) {
        tsl_sim_opts so = {.iterations = 3, .trace_path = NULL, .actual = NULL};
        tsl_sim_result sr;
        if (tsl_simulate(c.w, plans, n, &c.dev, &so, &sr) != TSL_OK)
            failf(t, F_SIM_ERROR, &c, plans, "%d jobs together: %s", n, tsl_last_error());
        else
            cr_assert_eq(sr.n_jobs, n);
        tsl_sim_result_free(&sr);
    }

    /* determinism: the same case regenerated (other addresses), planned again */
    rcase c2;
    case_make(&c2, seed, n);
    tsl_plan_report rep2;
    st = tsl_plan_jobs(c2.w, n, &c2.dev, &c2.po, again, &rep2);
    cr_assert(TH_PLANNED(st), "seed %llu: second tsl_plan_jobs: %s", (unsigned long long)seed,
                 tsl_last_error());
    char why[400];
    for (int j = 0; j < n; j++)
        if (!plan_equal(plans[j], again[j], why, sizeof why))
            failf(t, F_DETERMINISM, &c, plans, "job %d: planning twice differs: %s", j, why);
    tsl_plan_report_free(&rep);
    tsl_plan_report_free(&rep2);

    /* JSON: the same text twice, and an exact round trip */
    make_tmpdir();
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/a.json", tmpdir);
    snprintf(p2, sizeof p2, "%s/b.json", tmpdir);
    write_plans(plans, c.w, n, p1, seed);
    write_plans(again, c2.w, n, p2, seed);
    size_t l1 = 0, l2 = 0;
    char *t1 = slurp(p1, &l1), *t2 = slurp(p2, &l2);
    cr_assert(t1 && t2, "seed %llu: cannot read back %s", (unsigned long long)seed, p1);
    if (l1 != l2 || memcmp(t1, t2, l1) != 0)
        failf(t, F_JSON, &c, plans, "plan JSON differs between two plannings (%zu vs %zu bytes)",
              l1, l2);
    st = tsl_plan_read_json(p1, (const tsl_workload *const *)c.w, n, rt);
    cr_assert_eq(st, TSL_OK, "seed %llu: read json: %s", (unsigned long long)seed,
                 tsl_last_error());
    for (int j = 0; j < n; j++)
        if (!plan_equal(plans[j], rt[j], why, sizeof why))
            failf(t, F_JSON, &c, plans, "job %d: JSON round trip differs: %s", j, why);
    free(t1);
    free(t2);
    unlink(p1);
    unlink(p2);

    for (int j = 0; j < n; j++) {
        tsl_plan_free(plans[j]);
        tsl_plan_free(again[j]);
        tsl_plan_free(rt[j]);
    }
    case_free(&c);
    case_free(&c2);
    t->failed_cases += tally_total(t) > before;
}

/* TSL_SCHED_SEED=<seed> runs one case only (debugging); returns 1 if set. */
static int one_seed(uint64_t *seed) {
    const char *e = getenv("TSL_SCHED_SEED");
    if (!e) return 0;
    *seed = strtoull(e, NULL, 10);
    return 1;
}

static void print_stats(const char *what, const stats *s) {
    printf("%s: %d cases, %d plans with events, %d swaps, %d recomputes, mean MSR %.3f\n", what,
           s->cases, s->plans_with_events, s->swaps, s->recomputes,
           s->cases ? s->msr_sum / s->cases : 0.0);
    fflush(stdout);
}

/* ---- the generator itself ----------------------------------------------------- */

Test(sched_random, generator_is_valid_and_deterministic) {
    rw_opts o = rw_opts_default();
    int n = th_quick() ? 300 : 3000, differ = 0, dag = 0, adam = 0, ws = 0;
    for (int s = 0; s < n; s++) {
        tsl_workload *a = rw_generate((uint64_t)s, &o, "job0");
        tsl_workload *b = rw_generate((uint64_t)s, &o, "job0");
        tsl_workload *d = rw_generate((uint64_t)s + 1, &o, "job0");
        cr_assert(a && b && d);
        char why[320];
        cr_assert_eq(rw_check(a, why, sizeof why), 0, "seed %d: %s", s, why);
        cr_assert(rw_equal(a, b), "seed %d: two generations differ", s);
        differ += !rw_equal(a, d);
        dag += strncmp(a->ops[0].name, "op", 2) == 0;
        for (int32_t t = 0; t < a->n_tensors; t++) adam += strstr(a->tensors[t].name, ".v") != NULL;
        for (int32_t i = 0; i < a->n_ops; i++) ws += a->ops[i].workspace > 0;
        size_t vp = rw_vanilla_peak(a);
        cr_assert_geq(vp, rw_persistent_bytes(a), "seed %d", s);
        rw_free(a);
        rw_free(b);
        rw_free(d);
    }
    cr_assert_eq(differ, n, "consecutive seeds gave the same workload");
    /* both shapes, Adam moments and workspaces all occur */
    cr_assert(dag > n / 10 && dag < n - n / 10, "%d DAG jobs of %d", dag, n);
    cr_assert(adam > n / 10, "%d Adam moments in %d jobs", adam, n);
    cr_assert(ws > n / 4, "%d workspaces in %d jobs", ws, n);
}

/* rw_check catches what it claims to (a checker that cannot fail proves
 * nothing). */
Test(sched_random, generator_check_rejects_broken_workloads) {
    rw_opts o = rw_opts_default();
    char why[320];
    tsl_workload *w = rw_generate(7, &o, "job0");
    cr_assert_eq(rw_check(w, why, sizeof why), 0, "%s", why);
    w->ops[1].start_us += 0.5;
    cr_assert_eq(rw_check(w, why, sizeof why), 1);
    cr_assert(strstr(why, "previous end"), "%s", why);
    w->ops[1].start_us -= 0.5;
    snprintf(w->tensors[1].name, sizeof w->tensors[1].name, "%s", w->tensors[0].name);
    cr_assert_eq(rw_check(w, why, sizeof why), 1);
    cr_assert(strstr(why, "repeats"), "%s", why);
    rw_free(w);
    w = rw_generate(7, &o, "job0");
    int32_t late = -1; /* a tensor generated by a later op, read by op 0 */
    for (int32_t i = w->n_ops - 1; i > 0 && late < 0; i--)
        for (int k = 0; k < w->ops[i].n_out; k++)
            if (!tsl_kind_is_persistent(w->tensors[w->ops[i].out[k]].kind)) late = w->ops[i].out[k];
    cr_assert_geq(late, 0);
    w->ops[0].in[0] = late;
    cr_assert_eq(rw_check(w, why, sizeof why), 1);
    cr_assert(strstr(why, "before it is generated"), "%s", why);
    rw_free(w);
    w = rw_generate(7, &o, "job0");
    w->period_us += 1;
    cr_assert_eq(rw_check(w, why, sizeof why), 1);
    cr_assert(strstr(why, "period"), "%s", why);
    rw_free(w);
}

/* The generated workloads pass the strict workload JSON reader and come
 * back equal (another check that they are valid per the contract). */
Test(sched_random, generated_workloads_pass_the_json_reader) {
    rw_opts o = rw_opts_default();
    make_tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/w.json", tmpdir);
    int n = th_quick() ? 30 : 300;
    for (int s = 0; s < n; s++) {
        tsl_workload *w = rw_generate((uint64_t)s, &o, "job0"), *r = NULL;
        cr_assert_eq(tsl_workload_write_json(w, path), TSL_OK, "seed %d: %s", s, tsl_last_error());
        tsl_status st = tsl_workload_read_json(path, &r);
        if (st != TSL_OK) rw_print(w, stderr);
        cr_assert_eq(st, TSL_OK, "seed %d: the reader rejects a generated workload: %s", s,
                     tsl_last_error());
        cr_assert(rw_equal(w, r), "seed %d: workload JSON round trip differs", s);
        tsl_workload_free(r);
        rw_free(w);
    }
    unlink(path);
    remove_tmpdir();
}

/* The empty plan's peak: the reference, tsl_peak_analysis and the planner's
 * report (VANILLA policy: empty plans) agree on every random workload. */
Test(sched_random, empty_plan_peak_matches_the_reference) {
    rw_opts o = rw_opts_default();
    int n = th_quick() ? 200 : 2000;
    for (int s = 0; s < n; s++) {
        tsl_workload *w = rw_generate((uint64_t)s, &o, "job0");
        tsl_device_profile dev = rw_profile((uint64_t)s);
        size_t ref = rw_vanilla_peak(w);
        tsl_plan *empty = tsl_plan_new("job0");
        tsl_peak_info pi;
        cr_assert_eq(tsl_peak_analysis(w, empty, &dev, &pi), TSL_OK, "seed %d: %s", s,
                     tsl_last_error());
        if (pi.peak != ref) rw_print(w, stderr);
        cr_assert_eq(pi.peak, ref, "seed %d: peak analysis %zu != reference %zu (diff %lld)", s,
                     pi.peak, ref, (long long)pi.peak - (long long)ref);
        cr_assert(pi.period_us == w->period_us, "seed %d: period %.17g != %.17g", s, pi.period_us,
                  w->period_us);
        tsl_peak_info_free(&pi);
        tsl_plan_opts po = tsl_plan_opts_default();
        po.policy = tsl_policy_find("vanilla");
        tsl_plan *p = NULL;
        tsl_plan_report rep;
        cr_assert(TH_PLANNED(tsl_plan_jobs(&w, 1, &dev, &po, &p, &rep)), "seed %d: %s", s,
                     tsl_last_error());
        cr_assert_eq(p->n_events, 0, "seed %d: vanilla plan has %d events", s, p->n_events);
        cr_assert_eq(p->predicted_peak, ref, "seed %d: vanilla predicted %zu != %zu", s,
                     p->predicted_peak, ref);
        cr_assert_eq(rep.vanilla_peak[0], ref);
        tsl_plan_report_free(&rep);
        tsl_plan_free(p);
        tsl_plan_free(empty);
        rw_free(w);
    }
}

/* ---- planner + verifier + simulator + JSON ----------------------------------- */

/* Fails the test if anything was tallied, naming the classes and counts. */
static void tally_check(const tally *t, int cases, const char *what) {
    char buf[800];
    if (tally_total(t))
        printf("%s: %d of %d cases failed: %s\n", what, t->failed_cases, cases,
               tally_str(t, buf, sizeof buf));
    fflush(stdout);
    cr_assert_eq(tally_total(t), 0, "%s: %d of %d cases failed: %s (details on stderr)", what,
                 t->failed_cases, cases, tally_str(t, buf, sizeof buf));
}

Test(sched_random, single_jobs, .timeout = 600) {
    stats s = {0};
    tally t = {0};
    uint64_t seed;
    if (one_seed(&seed)) {
        run_case(seed, 1, &s, &t);
        remove_tmpdir();
        tally_check(&t, 1, "single job");
        return;
    }
    int n = th_quick() ? 150 : 6000;
    for (int i = 0; i < n; i++) run_case(1000 + (uint64_t)i, 1, &s, &t);
    /* seeds that once exposed a disagreement or a crash, kept as regressions (2819, 6318:
     * a clean drop whose swap-in overlapped its across-iteration swap-out on a
     * profile with one channel for both directions) */
    static const uint64_t regress[] = {1029,    2191,    2819,    6318,   2009483,
                                       2012082, 2022535, 2022926, 4004524};
    for (size_t i = 0; i < sizeof regress / sizeof *regress; i++) run_case(regress[i], 1, &s, &t);
    n += (int)(sizeof regress / sizeof *regress);
    print_stats("single jobs", &s);
    remove_tmpdir();
    tally_check(&t, n, "single jobs");
    /* the cases exercise the planner: most plans do something */
    cr_assert_gt(s.plans_with_events, n / 2, "only %d of %d plans have events",
                 s.plans_with_events, n);
    cr_assert_gt(s.swaps, 0);
    cr_assert_gt(s.recomputes, 0);
}

Test(sched_random, multi_jobs, .timeout = 600) {
    stats s = {0};
    tally t = {0};
    uint64_t seed;
    if (one_seed(&seed)) {
        run_case(seed, 2 + (int)(seed % 3), &s, &t);
        remove_tmpdir();
        tally_check(&t, 1, "multi jobs");
        return;
    }
    int n = th_quick() ? 40 : 1500;
    for (int i = 0; i < n; i++) {
        uint64_t sd = 500000 + (uint64_t)i;
        run_case(sd, 2 + (int)(sd % 3), &s, &t);
    }
    static const uint64_t regress[] = {500304, 500315, 500773, 3001334, 3001914, 3002183, 3002581};
    for (size_t i = 0; i < sizeof regress / sizeof *regress; i++)
        run_case(regress[i], 2 + (int)(regress[i] % 3), &s, &t);
    n += (int)(sizeof regress / sizeof *regress);
    print_stats("multi jobs", &s);
    remove_tmpdir();
    tally_check(&t, n, "multi jobs");
    cr_assert_gt(s.plans_with_events, n / 2, "only %d of %d cases' plans have events",
                 s.plans_with_events, n);
}

/* ---- the verifier against the simulator on arbitrary plans ----------------------- */

/* A random plan over w, not from the planner: one to three tensors each get
 * a swap (out after the write of its current value, release after an
 * access, in before the next access, its copy ending right at that op's
 * start or earlier) or a recomputation (release, recompute before the next
 * access), sometimes with the times pushed off. Many are invalid. */
static tsl_plan *random_plan(const tsl_workload *w, const tsl_device_profile *dev, uint64_t *rs) {
    tsl_plan *p = tsl_plan_new(w->job);
    cr_assert_not_null(p);
    int k = 1 + (int)th_uniform(rs, 0, 3);
    for (int n = 0; n < k; n++) {
        int32_t t = (int32_t)th_uniform(rs, 0, w->n_tensors);
        if (t >= w->n_tensors) continue;
        int32_t acc[256]; /* ops accessing t */
        int na = 0;
        for (int32_t i = 0; i < w->n_ops && na < 256; i++) {
            int hit = 0;
            for (int j = 0; j < w->ops[i].n_in; j++) hit |= w->ops[i].in[j] == t;
            for (int j = 0; j < w->ops[i].n_out; j++) hit |= w->ops[i].out[j] == t;
            if (hit) acc[na++] = i;
        }
        if (na < 2) continue;
        int g = (int)th_uniform(rs, 0, na - 1);
        int32_t u = acc[g], v = acc[g + 1], wr = -1; /* gap (u, v); wr: last write by u */
        for (int a = 0; a <= g; a++)
            for (int j = 0; j < w->ops[acc[a]].n_out; j++)
                if (w->ops[acc[a]].out[j] == t) wr = acc[a];
        double jitter = th_uniform(rs, 0, 1) < 0.7 ? 0.0 : th_uniform(rs, -30, 30);
        tsl_event rl = {TSL_EV_RELEASE, t, u, 0.0, -1};
        if (th_uniform(rs, 0, 1) < 0.75) {
            tsl_event so = {TSL_EV_SWAP_OUT, t, wr, jitter > 0 ? jitter : 0.0, -1};
            double copy = tsl_copy_us(dev, w->tensors[t].bytes, 1);
            double slack = th_uniform(rs, 0, 1) < 0.5 ? 0.0 : th_uniform(rs, 0, 50);
            double issue = w->ops[v].start_us - copy - slack + (jitter < 0 ? -jitter : 0.0);
            if (issue < 0) issue = 0;
            int32_t trig = -1;
            for (int32_t i = 0; i < w->n_ops; i++)
                if (w->ops[i].end_us <= issue) trig = i;
            double d = issue - (trig >= 0 ? w->ops[trig].end_us : 0.0);
            tsl_event si = {TSL_EV_SWAP_IN, t, trig, d < 0 ? 0.0 : d, v};
            cr_assert_eq(tsl_plan_add(p, so), TSL_OK);
            cr_assert_eq(tsl_plan_add(p, rl), TSL_OK);
            cr_assert_eq(tsl_plan_add(p, si), TSL_OK);
        } else {
            tsl_event rc = {TSL_EV_RECOMPUTE, t, -1, 0.0, v};
            cr_assert_eq(tsl_plan_add(p, rl), TSL_OK);
            cr_assert_eq(tsl_plan_add(p, rc), TSL_OK);
        }
    }
    tsl_plan_sort(p);
    return p;
}

/* Judges a plan that is not the planner's: its predicted figures are set
 * from tsl_peak_analysis where that accepts the plan; then the verifier
 * either rejects it with messages, or accepts it - planned waits included -
 * and then its own peak, period and stall are the peak analysis's, and the
 * simulator runs the plan exactly as predicted (same peak, same period, a
 * stall equal to the planned waits': no op waits for a tensor that is not
 * there or not on its way). Returns 1 if accepted, 0 if rejected; *waits
 * counts the accepted plans with planned waits. */
static int judge(tally *t, rcase *c, tsl_plan *p, const char *what, int *peak_refused,
                 int *waits) {
    tsl_peak_info pi;
    if (tsl_peak_analysis(c->w[0], p, &c->dev, &pi) == TSL_OK) {
        p->predicted_peak = pi.peak;
        p->predicted_period_us = pi.period_us;
        tsl_peak_info_free(&pi);
    } else {
        (*peak_refused)++;
    }
    tsl_verify_report r;
    tsl_status st = tsl_plan_check((const tsl_workload *const *)c->w,
                                   (const tsl_plan *const *)&p, 1, &c->dev, &r);
    if (st == TSL_OK) {
        cr_assert_eq(r.n_violations, 0, "seed %llu: TSL_OK with %d violations",
                     (unsigned long long)c->seed, r.n_violations);
        tsl_plan *ps[1] = {p};
        int fails = tally_total(t);
        double stall = r.stall_us[0];
        *waits += r.n_waits > 0;
        if (tsl_peak_analysis(c->w[0], p, &c->dev, &pi) != TSL_OK) {
            failf(t, F_PEAK_REFUSES, c, ps,
                  "the verifier accepts a plan tsl_peak_analysis refuses: %s", tsl_last_error());
        } else {
            if (pi.peak != r.peak[0] || pi.period_us != r.period_us[0] ||
                pi.n_waits != r.n_waits || !(fabs(pi.stall_us - stall) <= 1e-9 * pi.period_us))
                failf(t, F_ACCOUNTING, c, ps,
                      "%s: peak %zu / %zu, period %.17g / %.17g, %d / %d waits, stall %.17g / "
                      "%.17g (peak analysis / verifier)",
                      what, pi.peak, r.peak[0], pi.period_us, r.period_us[0], pi.n_waits,
                      r.n_waits, pi.stall_us, stall);
            tsl_peak_info_free(&pi);
        }
        tsl_verify_report_free(&r);
        if (tally_total(t) == fails) check_alone(t, c, 0, p, what, stall);
        t->failed_cases += tally_total(t) > fails;
        return 1;
    }
    cr_assert_eq(st, TSL_ERR_INVALID, "seed %llu: verify returned %d", (unsigned long long)c->seed,
                 (int)st);
    cr_assert_gt(r.n_violations, 0, "seed %llu: rejected without a violation",
                 (unsigned long long)c->seed);
    for (int j = 0; j < r.n_violations; j++)
        cr_assert(r.violations[j].what[0], "seed %llu: empty violation message",
                  (unsigned long long)c->seed);
    tsl_verify_report_free(&r);
    return 0;
}

Test(sched_random, verifier_agrees_with_the_simulator_on_random_plans, .timeout = 600) {
    int n = th_quick() ? 400 : 10000, acc = 0, rej = 0, refused = 0, waits = 0;
    tally t = {0};
    for (int i = 0; i < n; i++) {
        rcase c;
        case_make(&c, 700000 + (uint64_t)i, 1);
        uint64_t rs = c.seed * 13 + 5;
        tsl_plan *p = random_plan(c.w[0], &c.dev, &rs);
        if (p->n_events) {
            if (judge(&t, &c, p, "random plan accepted by the verifier", &refused, &waits))
                acc++;
            else
                rej++;
        }
        tsl_plan_free(p);
        case_free(&c);
    }
    printf("random plans: %d accepted by the verifier (%d with planned waits), %d rejected, peak "
           "analysis refused %d\n",
           acc, waits, rej, refused);
    tally_check(&t, acc, "random plans accepted by the verifier");
    cr_assert_gt(acc, n / 20, "only %d random plans accepted", acc);
    cr_assert_gt(rej, n / 20, "only %d random plans rejected", rej);
}

/* ---- the verifier under mutations ------------------------------------------------ */

enum { MUT_DELAY = 0, MUT_TRIGGER, MUT_PRECEDE, MUT_DROP, MUT_COUNT };
static const char *const mut_name[MUT_COUNT] = {"delay", "trigger", "precede", "drop"};

/* Perturbs one event of p (chosen from rs) by mutation kind k; returns 0 if
 * the plan offers nothing to mutate that way. */
static int mutate(tsl_plan *p, const tsl_workload *w, int k, uint64_t *rs) {
    if (p->n_events == 0) return 0;
    int i = (int)th_uniform(rs, 0, p->n_events);
    if (i >= p->n_events) i = p->n_events - 1;
    tsl_event *e = &p->events[i];
    switch (k) {
    case MUT_DELAY: {
        double d = th_uniform(rs, 0, 1) < 0.5 ? th_uniform(rs, 0, 50) : th_uniform(rs, 0, 500);
        double nd = th_uniform(rs, 0, 1) < 0.7 ? e->delay_us + d : e->delay_us - d;
        e->delay_us = nd < 0 ? 0 : nd;
        break;
    }
    case MUT_TRIGGER: {
        int32_t t = (int32_t)th_uniform(rs, -1, w->n_ops);
        if (t >= w->n_ops) t = w->n_ops - 1;
        if (t == e->trigger) t = t + 1 < w->n_ops ? t + 1 : -1;
        e->trigger = t;
        break;
    }
    case MUT_PRECEDE: {
        int idx = -1;
        for (int j = 0; j < p->n_events; j++) { /* an event that has a precede */
            int jj = (i + j) % p->n_events;
            if (p->events[jj].precede >= 0) {
                idx = jj;
                break;
            }
        }
        if (idx < 0) return 0;
        e = &p->events[idx];
        int32_t q = (int32_t)th_uniform(rs, 0, w->n_ops);
        if (q >= w->n_ops) q = w->n_ops - 1;
        if (q == e->precede) q = (q + 1) % w->n_ops;
        if (q == e->precede) return 0;
        e->precede = q;
        break;
    }
    case MUT_DROP:
        memmove(&p->events[i], &p->events[i + 1], sizeof *e * (size_t)(p->n_events - i - 1));
        p->n_events--;
        break;
    }
    tsl_plan_sort(p);
    return 1;
}

Test(sched_random, verifier_under_mutations, .timeout = 600) {
    int n = th_quick() ? 200 : 4000;
    int tried[MUT_COUNT] = {0}, rejected[MUT_COUNT] = {0}, accepted[MUT_COUNT] = {0};
    int peak_errors = 0, waits = 0;
    tally t = {0};
    for (int i = 0; i < n; i++) {
        uint64_t seed = 900000 + (uint64_t)i, rs = seed * 7 + 1;
        rcase c;
        case_make(&c, seed, 1);
        c.po.budget = c.persistent[0] + (c.vanilla[0] - c.persistent[0]) / 4; /* many events */
        c.rates[0] = 1.0;
        c.to.recompute = 1;
        tsl_plan *p = NULL;
        cr_assert(TH_PLANNED(tsl_plan_jobs(c.w, 1, &c.dev, &c.po, &p, NULL)), "seed %llu: %s",
                     (unsigned long long)seed, tsl_last_error());
        int k = i % MUT_COUNT;
        if (!mutate(p, c.w[0], k, &rs)) {
            tsl_plan_free(p);
            case_free(&c);
            continue;
        }
        tried[k]++;
        /* the predicted figures follow the mutated events where the shared
         * accounting can compute them, so that the verifier has to find the
         * real fault, not just a stale prediction */
        char what[64];
        snprintf(what, sizeof what, "accepted after a %s mutation", mut_name[k]);
        if (judge(&t, &c, p, what, &peak_errors, &waits))
            accepted[k]++;
        else
            rejected[k]++;
        tsl_plan_free(p);
        case_free(&c);
    }
    for (int k = 0; k < MUT_COUNT; k++)
        printf("mutation %-8s: %4d tried, %4d rejected by the verifier, %4d accepted\n",
               mut_name[k], tried[k], rejected[k], accepted[k]);
    printf("peak analysis refused %d mutated plans; %d accepted ones have planned waits\n",
           peak_errors, waits);
    int acc_all = 0;
    for (int k = 0; k < MUT_COUNT; k++) acc_all += accepted[k];
    tally_check(&t, acc_all, "mutated plans accepted by the verifier");
    for (int k = 0; k < MUT_COUNT; k++)
        cr_assert_gt(rejected[k], 0, "no %s mutation was ever rejected: the verifier sees nothing?",
                     mut_name[k]);
}

/* ---- random plans with planned waits ------------------------------------------------- */

/* Thousands of random valid plans with planned waits (tests/plan_gen.c with
 * p_wait: a swap-in placed to be under way when the op it precedes would
 * start, and to land after that) on random workloads and profiles, with
 * swaps and recomputations around them: each verifies; the verifier's peak,
 * period and stall equal the peak analysis's; the simulator runs each alone
 * with that peak, that period (which includes the stall) and a stall equal
 * to the planned waits' (judge). */
Test(sched_random, random_plans_with_planned_waits, .timeout = 600) {
    int n = th_quick() ? 300 : 4000, with_waits = 0, n_waits = 0, with_rc = 0, refused = 0;
    int judged_waits = 0;
    tally t = {0};
    for (int i = 0; i < n; i++) {
        rcase c;
        case_make(&c, 1200000 + (uint64_t)i, 1);
        pg_opts o = pg_opts_default();
        o.p_wait = 0.5;
        o.max_items = 8;
        o.attempts = 40;
        pg_stats st;
        tsl_plan *p = pg_random_plan(NULL, c.w[0], &c.dev, c.seed, &o, &st);
        cr_assert_not_null(p, "seed %llu: %s", (unsigned long long)c.seed, tsl_last_error());
        with_waits += st.waits > 0;
        n_waits += st.waits;
        with_rc += st.recomputes > 0;
        if (!judge(&t, &c, p, "random plan with planned waits", &refused, &judged_waits))
            failf(&t, F_VERIFY, &c, &p, "the verifier rejects a plan pg_random_plan verified");
        tsl_plan_free(p);
        case_free(&c);
    }
    printf("random plans with planned waits: %d plans, %d with waits (%d waits), %d with "
           "recomputations\n",
           n, with_waits, n_waits, with_rc);
    tally_check(&t, n, "random plans with planned waits");
    cr_assert_eq(refused, 0, "the peak analysis refused %d generated plans", refused);
    cr_assert_eq(judged_waits, with_waits, "the verifier saw waits in %d plans, the generator %d",
                 judged_waits, with_waits);
    cr_assert_gt(with_waits, n / 3, "only %d of %d plans have planned waits", with_waits, n);
    cr_assert_gt(with_rc, n / 20, "only %d of %d plans have recomputations", with_rc, n);
}
