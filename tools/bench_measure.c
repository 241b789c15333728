/* bench_measure.c - see bench_measure.h. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_measure.h"
#include "commands.h"
#include "tensile/policy.h"
#include "tensile/verify.h"

int bm_jobs_build(bm_jobs *J, const bm_spec *specs, int n, const tsl_device_profile *dev) {
    memset(J, 0, sizeof *J);
    J->w = calloc((size_t)n, sizeof *J->w);
    J->offset_us = calloc((size_t)n, sizeof *J->offset_us);
    if (!J->w || !J->offset_us) {
        fprintf(stderr, "tensile bench: out of host memory for %d jobs\n", n);
        bm_jobs_free(J);
        return -1;
    }
    J->n = n;
    J->dev = dev;
    for (int i = 0; i < n; i++) {
        const bm_spec *s = &specs[i];
        if (!tool_check_model("bench", "model", s->model)) {
            bm_jobs_free(J);
            return -1;
        }
        tsl_model_cfg cfg = tsl_model_cfg_default(s->model);
        cfg.batch = s->batch;
        if (s->image) cfg.image_size = s->image;
        if (s->classes) cfg.n_classes = s->classes;
        tsl_optimizer_cfg opt = tsl_adam_default(1e-3f);
        opt.step = s->step;
        tsl_graph *g = tool_build_training_graph("bench", s->model, &cfg, &opt, NULL);
        if (!g) {
            bm_jobs_free(J);
            return -1;
        }
        int k = 1; /* "#k" for the k-th job of the same model and batch */
        for (int q = 0; q < i; q++)
            k += !strcmp(specs[q].model, s->model) && specs[q].batch == s->batch;
        char name[96];
        if (k == 1) snprintf(name, sizeof name, "%s:%d", s->model, s->batch);
        else snprintf(name, sizeof name, "%s:%d#%d", s->model, s->batch, k);
        tsl_status st = tsl_workload_from_graph(g, name, NULL, dev, &J->w[i]);
        tsl_graph_free(g);
        if (st != TSL_OK) {
            fprintf(stderr, "tensile bench: %s: %s\n", name, tsl_last_error());
            bm_jobs_free(J);
            return -1;
        }
    }
    return 0;
}

void bm_jobs_phases(bm_jobs *J, uint64_t seed) {
    tsl_sim_random_offsets(J->w, J->n, seed, J->offset_us);
    tsl_sim_result_free(&J->vanilla);
    J->have_vanilla = 0;
}

void bm_jobs_free(bm_jobs *J) {
    for (int i = 0; J->w && i < J->n; i++) tsl_workload_free(J->w[i]);
    free(J->w);
    free(J->offset_us);
    tsl_sim_result_free(&J->vanilla);
    memset(J, 0, sizeof *J);
}

/* Sets r's state and its words. */
static bm_state set_state(bm_result *r, bm_state s, const char *why) {
    r->state = s;
    snprintf(r->why, sizeof r->why, "%s", why);
    return s;
}

/* The simulator's options for J (3 iterations, J's phases). */
static tsl_sim_opts sim_opts(const bm_jobs *J, const char *trace_path) {
    return (tsl_sim_opts){.iterations = 3, .offset_us = J->offset_us, .trace_path = trace_path};
}

/* Frees actual_latencies' first n tables and the array (NULL: nothing). */
static void actual_latencies_free(tsl_latency_table *t, int n) {
    if (!t) return;
    for (int i = 0; i < n; i++) free((void *)t[i].us);
    free(t);
}

/* J's op latencies (end - start) as one table per job, for simulating plans
 * made from other latencies; NULL when out of host memory. */
static tsl_latency_table *actual_latencies(const bm_jobs *J) {
    tsl_latency_table *t = calloc((size_t)J->n, sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < J->n; i++) {
        const tsl_workload *w = J->w[i];
        double *us = malloc((size_t)(w->n_ops ? w->n_ops : 1) * sizeof *us);
        if (!us) {
            actual_latencies_free(t, i);
            return NULL;
        }
        for (int32_t k = 0; k < w->n_ops; k++) us[k] = w->ops[k].end_us - w->ops[k].start_us;
        t[i] = (tsl_latency_table){w->n_ops, us};
    }
    return t;
}

/* Simulates the empty plans once per phases. 0, or -1 with r failed. */
static int vanilla(bm_jobs *J, bm_result *r) {
    if (J->have_vanilla) return 0;
    tsl_sim_opts so = sim_opts(J, NULL);
    if (tsl_simulate(J->w, NULL, J->n, J->dev, &so, &J->vanilla) != TSL_OK) {
        char why[300];
        snprintf(why, sizeof why, "failed: vanilla simulation: %s", tsl_last_error());
        set_state(r, BM_FAILED, why);
        return -1;
    }
    J->have_vanilla = 1;
    return 0;
}

/* Verifies the plans together; 0, or -1 with r failed (first violation). */
static int verify(const bm_jobs *J, tsl_plan **plans, bm_result *r) {
    tsl_violation *v = NULL;
    int nv = 0;
    tsl_status st = tsl_plan_verify_jobs((const tsl_workload *const *)J->w,
                                         (const tsl_plan *const *)plans, J->n, J->dev, &v, &nv);
    char why[320];
    if (st != TSL_OK) snprintf(why, sizeof why, "failed: verification: %s", tsl_last_error());
    else if (nv)
        snprintf(why, sizeof why, "failed: the plans fail verification (%d): %.200s", nv,
                 v[0].what);
    free(v);
    if (st == TSL_OK && !nv) return 0;
    set_state(r, BM_FAILED, why);
    return -1;
}

/* Fills r's figures from the report and the two simulations. */
static void figures(const bm_jobs *J, const tsl_plan_report *rep, const tsl_sim_result *sim,
                    bm_result *r) {
    for (int i = 0; i < J->n; i++) {
        r->vanilla_fp += rep->vanilla_footprint[i];
        r->planned_fp += rep->planned_footprint[i];
        r->vanilla_load += rep->vanilla_peak[i];
        r->planned_load += rep->planned_peak[i];
        r->iter_us += sim->job[i].iter_us;
        r->vanilla_iter_us += J->vanilla.job[i].iter_us;
        r->swaps += rep->swaps[i];
        r->recomputes += rep->recomputes[i];
        r->waits += rep->waits[i];
    }
    r->msr = r->vanilla_fp ? 1.0 - (double)r->planned_fp / (double)r->vanilla_fp : 0;
    r->msr_load = r->vanilla_load ? 1.0 - (double)r->planned_load / (double)r->vanilla_load : 0;
    r->eor = r->vanilla_iter_us > 0 ? r->iter_us / r->vanilla_iter_us : 0;
    r->cbr = r->eor > 0 ? r->msr / r->eor : 0;
    r->planning_ms = rep->planning_ms;
    r->solver = rep->solver;
}

bm_state bm_measure(bm_jobs *J, const char *policy, size_t budget, const char *trace_path,
                    bm_result *r) {
    return bm_measure_from(J, NULL, policy, budget, trace_path, r);
}

bm_state bm_measure_from(bm_jobs *J, const bm_jobs *P, const char *policy, size_t budget,
                         const char *trace_path, bm_result *r) {
    memset(r, 0, sizeof *r);
    if (!P) P = J;
    if (P->n != J->n) return set_state(r, BM_FAILED, "failed: the planning jobs are not the jobs");
    const tsl_policy *p = tsl_policy_find(policy);
    if (!p) return set_state(r, BM_UNAVAILABLE, "not available in this build");
    if (vanilla(J, r)) return r->state;
    tsl_plan **plans = calloc((size_t)J->n, sizeof *plans);
    if (!plans) return set_state(r, BM_FAILED, "failed: out of host memory");
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = p;
    po.budget = budget;
    tsl_plan_report rep = {0};
    tsl_status st = tsl_plan_jobs(P->w, P->n, P->dev, &po, plans, &rep);
    if (st != TSL_OK && st != TSL_ERR_BUDGET) {
        char why[320];
        snprintf(why, sizeof why, "failed: planning: %.280s", tsl_last_error());
        free(plans);
        return set_state(r, BM_FAILED, why);
    }
    tsl_sim_result sim = {0};
    /* The plans are simulated on the workloads they were made from, their
     * ops taking J's latencies (drift): an event's planned time is anchored
     * on its plan's timeline, so the order of a tensor's events (a release
     * after the swap-out it waits for) is the plan's. */
    tsl_latency_table *actual = P == J ? NULL : actual_latencies(J);
    if (P != J && !actual) set_state(r, BM_FAILED, "failed: out of host memory");
    else if (verify(P, plans, r) == 0) {
        tsl_sim_opts so = sim_opts(J, trace_path);
        so.actual = actual;
        if (tsl_simulate(P->w, plans, J->n, J->dev, &so, &sim) != TSL_OK) {
            char why[320];
            snprintf(why, sizeof why, "failed: simulation: %.280s", tsl_last_error());
            set_state(r, BM_FAILED, why);
        } else {
            figures(J, &rep, &sim, r);
            if (st == TSL_ERR_BUDGET) set_state(r, BM_BUDGET_UNMET, "budget not met");
            else set_state(r, BM_OK, "ok");
        }
    }
    for (int i = 0; i < J->n; i++) tsl_plan_free(plans[i]);
    free(plans);
    actual_latencies_free(actual, J->n);
    tsl_plan_report_free(&rep);
    tsl_sim_result_free(&sim);
    return r->state;
}

const char *bm_state_text(const bm_result *r) { return r->why; }

int bm_has_numbers(const bm_result *r) {
    return r->state == BM_OK || r->state == BM_BUDGET_UNMET;
}

size_t bm_budget(double fraction, size_t vanilla_fp) {
    return (size_t)(fraction * (double)vanilla_fp);
}

const char *bm_cell(const bm_result *r, int time_ms, char *buf, size_t n) {
    if (r->state == BM_UNAVAILABLE) snprintf(buf, n, "n/a");
    else if (r->state == BM_FAILED) snprintf(buf, n, "failed");
    else if (r->state == BM_BUDGET_UNMET) snprintf(buf, n, "unmet (MSR %.3f)", r->msr);
    else if (time_ms) snprintf(buf, n, "%.2f", r->iter_us / 1000.0);
    else snprintf(buf, n, "%.4f", r->eor);
    return buf;
}

/* Writes n bytes of p to fd; 0 or -1. */
static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads n bytes from fd into p; the count read (n unless the writer ended
 * early). */
static size_t read_all(int fd, void *p, size_t n) {
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, c + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    return got;
}

bm_state bm_measure_isolated(bm_jobs *J, const char *policy, size_t budget, bm_result *r) {
    memset(r, 0, sizeof *r);
    if (vanilla(J, r)) return r->state;
    int fd[2];
    if (pipe(fd) != 0) return bm_measure(J, policy, budget, NULL, r);
    fflush(NULL); /* every output stream: what the child flushes (a solver's
                   * fork does) must not be written a second time */
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return bm_measure(J, policy, budget, NULL, r);
    }
    if (pid == 0) {
        close(fd[0]);
        bm_measure(J, policy, budget, NULL, r);
        _exit(write_all(fd[1], r, sizeof *r) ? 1 : 0);
    }
    close(fd[1]);
    size_t got = read_all(fd[0], r, sizeof *r);
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (got == sizeof *r && WIFEXITED(st) && WEXITSTATUS(st) == 0) return r->state;
    memset(r, 0, sizeof *r);
    char why[128];
    if (WIFSIGNALED(st))
        snprintf(why, sizeof why, "failed: the measurement crashed (signal %d, %s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else snprintf(why, sizeof why, "failed: the measurement's process ended without a result");
    return set_state(r, BM_FAILED, why);
}
