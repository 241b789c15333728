/*
 * cmd_plan.c - `tensile plan`: plan one or several jobs on a device profile
 * with a policy of the registry (tensile/policy.h; TENSILE by default),
 * verify every plan, simulate them together, and report per job and
 * overall: vanilla and planned footprint (each plan's layout's extent: what
 * the device must hold), MSR on the footprint and on the peak load,
 * simulated EOR, swaps, recomputations, bytes moved, planned waits,
 * planning time. A budget the plans cannot meet exits 3. How the jobs share
 * the copy channels - the paper's shared time axis or equal channel shares -
 * and how they are simulated - phases, channel and compute models - are
 * sim_setup.h's options.
 *
 * The policy's own options are given as --OPTION VALUE, OPTION being the
 * option's name in the policy's descriptor table; they are applied once the
 * whole command line is read, so they may come before or after --policy.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "job_list.h"
#include "policy_args.h"
#include "sim_setup.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

static const char help[] =
    "usage: tensile plan --model M --batch B [--profile P] [--policy NAME]\n"
    "                    [--jobs M:B[:S],M:B[:S],...] [--workload FILE.json]...\n"
    "                    [--budget SIZE] [--image-size S] [--optimizer adam|sgd]\n"
    "                    [--optimizer-step backward|end]\n"
    "                    [--channel-share shared|equal] [--phases 0|random[:SEED]]\n"
    "                    [--channels fifo|fair] [--compute shared|per-job]\n"
    "                    [--OPTION VALUE]... [--out plan.json] [--trace trace.json] [--json]\n"
    "\n"
    "Builds each job's training iteration, derives its tensor access sequence\n"
    "from the device profile's cost model, plans all jobs together with the\n"
    "policy (TENSILE by default: swaps and recomputations, Algorithms 1-3),\n"
    "verifies every plan, and simulates the jobs sharing the device (one compute\n"
    "resource, two copy channels). Every plan gets its memory layout (an offset\n"
    "per block, SmartPool's offline placement); its extent is the footprint, the\n"
    "device memory the job needs. MSR = 1 - planned footprint / vanilla\n"
    "footprint against the liveness-freeing vanilla executor (MSR load: the same\n"
    "on the peak of live bytes); EOR = simulated iteration time / vanilla\n"
    "iteration time, both simulated with the same jobs sharing the device (the\n"
    "same phases, channels and compute).\n"
    "The budget holds the footprints; one the policy cannot meet is reported and\n"
    "exits 3 (--json: budget_met false).\n"
    "\n"
    "  --model M, --batch B   one job (image size: the model's default)\n"
    "  --jobs LIST            jobs as model:batch[:image],... (any number)\n"
    "  --workload FILE        a job given as workload JSON (docs/SCHEDULING.md);\n"
    "                         may be repeated and mixed with --model/--jobs\n"
    "  --profile P            device profile: a6000 (default), rtx2080ti,\n"
    "                         h100-pcie, h100-sxm, cpu-local, or a JSON path\n"
    "  --policy NAME          the planning policy (below; default tensile)\n"
    "  --budget SIZE          device memory for the jobs' footprints together\n"
    "                         (default: the profile's)\n"
    "  --optimizer O          adam (default) or sgd (momentum 0.9)\n"
    "  --optimizer-step S     backward (default): each parameter's update right\n"
    "                         after its gradient is complete, which frees the\n"
    "                         gradient at once and lets the optimizer states\n"
    "                         leave the device early; end: every update after\n"
    "                         the backward pass (the seed papers' optimizer\n"
    "                         phase). The values computed are the same.\n"
    "  --no-recompute         the same as --recompute 0\n"
    "  --channel-share S      shared (default): every job's copies booked on the\n"
    "                         device's channels on one time axis on which every\n"
    "                         iteration starts at 0 (the paper; holds when the\n"
    "                         jobs run in step); equal: each of the n jobs planned\n"
    "                         on channels of its own with 1/n of the bandwidth,\n"
    "                         verified on that share (holds whatever the phases\n"
    "                         on fair channels; docs/SCHEDULING.md)\n"
    "  --phases P             the simulated jobs' start offsets: 0 (default: all\n"
    "                         at 0), or random[:SEED] (each uniform in [0, its\n"
    "                         period); SEED 1 by default)\n"
    "  --channels C           the simulated channels: fifo (default: one transfer\n"
    "                         at a time per direction, first come first served)\n"
    "                         or fair (the jobs copying share the bandwidth)\n"
    "  --compute C            the simulated compute: shared (default: one op at a\n"
    "                         time over all jobs) or per-job (only the channels\n"
    "                         shared)\n"
    "  --out FILE             write the plans as JSON\n"
    "  --trace FILE           write a Chrome trace of the simulation (Perfetto)\n"
    "  --json                 one JSON object on stdout\n";

/* Appends a job (exit 2 if the host is out of memory). */
static job_spec *add_job(tsl_args *a, job_list *l) {
    job_spec *j = job_list_add(l);
    if (!j) args_die(a, "out of host memory for %d jobs", l->n + 1);
    return j;
}

/* Appends the jobs of a --jobs value (exit 2 naming the entry at fault). */
static void add_jobs(tsl_args *a, const char *list, job_list *l) {
    char err[400];
    if (job_list_parse(list, l, err, sizeof err) != 0) args_die(a, "--jobs: %s", err);
}

/* The longest iteration a plan can describe (the plan and workload files'
 * limit on times): 1e12 us, about 11.6 days. */
#define MAX_PERIOD_US 1e12

/* Builds the workload of job i (a model's training graph on dev, or a
 * workload file), named `name` for a model. Returns 0 with a message
 * printed on failure and *rc the exit status (2: the job's arguments or
 * file are at fault, 1: anything else). */
static int job_workload(const job_spec *j, const char *name, int sgd, int step,
                        const tsl_device_profile *dev, tsl_workload **out, int *rc) {
    *rc = 2;
    if (j->workload_path) {
        if (tsl_workload_read_json(j->workload_path, out) == TSL_OK) return 1;
        fprintf(stderr, "tensile plan: --workload: %s\n", tsl_last_error());
        return 0;
    }
    tsl_model_cfg cfg = tsl_model_cfg_default(j->model);
    cfg.batch = j->batch;
    if (j->image) cfg.image_size = j->image;
    tsl_optimizer_cfg opt = sgd ? tsl_sgd_default(0.01f) : tsl_adam_default(1e-3f);
    opt.step = (tsl_optimizer_step)step;
    tsl_graph *g = tool_build_training_graph("plan", j->model, &cfg, &opt, rc);
    if (!g) return 0;
    int ok = tsl_workload_from_graph(g, name, NULL, dev, out) == TSL_OK;
    if (!ok) {
        fprintf(stderr, "tensile plan: %s\n", tsl_last_error());
        *rc = 1;
    } else if (!((*out)->period_us <= MAX_PERIOD_US)) {
        /* a plan could not describe it; the profile or the job is absurd */
        fprintf(stderr, "tensile plan: job %s: one iteration takes %.3g s on profile '%s' "
                "(flops %g, mem_bw %g), more than the %.3g s a plan can describe\n", name,
                (*out)->period_us * 1e-6, dev->name, dev->flops, dev->mem_bw, MAX_PERIOD_US * 1e-6);
        tsl_workload_free(*out);
        *out = NULL;
        ok = 0;
    }
    tsl_graph_free(g);
    return ok;
}

/* The name of model job i: "model:batch", with "#k" added for the k-th job
 * of the same name, so that the plans of a file tell every job apart. */
static void job_name(const job_list *jobs, int i, char *name, size_t n) {
    const job_spec *j = &jobs->v[i];
    int k = 1;
    for (int q = 0; q < i; q++)
        if (!jobs->v[q].workload_path && !strcmp(jobs->v[q].model, j->model) &&
            jobs->v[q].batch == j->batch)
            k++;
    if (k == 1) snprintf(name, n, "%.40s:%d", j->model, j->batch);
    else snprintf(name, n, "%.40s:%d#%d", j->model, j->batch, k);
}

/* With --out, the jobs of workload files must have distinct names (a plan
 * file tells jobs by name): returns 0 naming the two files otherwise. */
static int distinct_names(const job_list *jobs, tsl_workload *const *w, int n) {
    for (int i = 0; i < n; i++)
        for (int q = 0; q < i; q++)
            if (!strcmp(w[i]->job, w[q]->job)) {
                fprintf(stderr, "tensile plan: --out: jobs %d (%s) and %d (%s) are both named "
                        "'%s'; a plan file tells jobs by name: rename one workload's \"job\"\n",
                        q + 1, jobs->v[q].workload_path ? jobs->v[q].workload_path : "--jobs",
                        i + 1, jobs->v[i].workload_path ? jobs->v[i].workload_path : "--jobs",
                        w[i]->job);
                return 0;
            }
    return 1;
}

/* Prints the report (a table, or one JSON object). */
/* 1 - planned / vanilla, 0 when vanilla is 0. */
static double msr_of(size_t planned, size_t vanilla) {
    return vanilla ? 1.0 - (double)planned / (double)vanilla : 0;
}

/* The report: per job and for all the jobs, the footprints (what the
 * device must hold: the layouts' extents) with their MSR as the headline,
 * the peak loads with theirs beside them, EOR from the simulator. */
static void report(const char *policy, const job_spec *jobs, int n, tsl_workload **w,
                   const tsl_plan_report *rep, const tsl_sim_result *sim,
                   const tsl_sim_result *vsim, const tsl_device_profile *dev,
                   const sim_setup *ss, const double *share, const double *offset_us, int json) {
    size_t sum_v = 0, sum_p = 0, sum_vf = 0, sum_pf = 0;
    double sum_vt = 0, sum_st = 0, stall = 0;
    int waits = 0;
    json_t *arr = json_array();
    if (!json)
        printf("%-22s %12s %12s %7s %8s %7s %6s %6s %12s %12s\n", "job", "vanilla", "planned",
               "MSR", "MSR load", "EOR", "swaps", "recomp", "to device", "to host");
    for (int i = 0; i < n; i++) {
        double msr = msr_of(rep->planned_footprint[i], rep->vanilla_footprint[i]);
        double msr_load = msr_of(rep->planned_peak[i], rep->vanilla_peak[i]);
        /* against vanilla on the same shared device: jobs share one compute
         * resource, so a job alone is not the baseline of a job among others */
        double eor = sim->job[i].iter_us / vsim->job[i].iter_us;
        sum_v += rep->vanilla_peak[i];
        sum_p += rep->planned_peak[i];
        sum_vf += rep->vanilla_footprint[i];
        sum_pf += rep->planned_footprint[i];
        sum_vt += vsim->job[i].iter_us;
        sum_st += sim->job[i].iter_us;
        waits += rep->waits[i];
        stall += rep->stall_us[i];
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "job", json_string(w[i]->job));
            json_object_set_new(o, "model", json_string(jobs[i].workload_path ? w[i]->job : jobs[i].model));
            json_object_set_new(o, "batch", json_integer(jobs[i].workload_path ? 0 : jobs[i].batch));
            json_object_set_new(o, "vanilla_footprint_bytes", json_integer((json_int_t)rep->vanilla_footprint[i]));
            json_object_set_new(o, "planned_footprint_bytes", json_integer((json_int_t)rep->planned_footprint[i]));
            json_object_set_new(o, "vanilla_peak_bytes", json_integer((json_int_t)rep->vanilla_peak[i]));
            json_object_set_new(o, "planned_peak_bytes", json_integer((json_int_t)rep->planned_peak[i]));
            json_object_set_new(o, "floor_bytes", json_integer((json_int_t)rep->floor[i]));
            json_object_set_new(o, "simulated_peak_bytes", json_integer((json_int_t)sim->job[i].peak));
            json_object_set_new(o, "msr", json_real(msr));
            json_object_set_new(o, "msr_load", json_real(msr_load));
            json_object_set_new(o, "budget_met", json_boolean(rep->budget_met));
            json_object_set_new(o, "eor", json_real(eor));
            json_object_set_new(o, "iter_us", json_real(sim->job[i].iter_us));
            json_object_set_new(o, "vanilla_iter_us", json_real(vsim->job[i].iter_us));
            json_object_set_new(o, "stall_us", json_real(sim->job[i].stall_us));
            json_object_set_new(o, "stall_total_us", json_real(sim->job[i].stall_total_us));
            json_object_set_new(o, "channel_share", share ? json_real(share[i]) : json_null());
            json_object_set_new(o, "offset_us", json_real(offset_us[i]));
            json_object_set_new(o, "planned_waits", json_integer(rep->waits[i]));
            json_object_set_new(o, "predicted_stall_us", json_real(rep->stall_us[i]));
            json_object_set_new(o, "swaps", json_integer(rep->swaps[i]));
            json_object_set_new(o, "recomputes", json_integer(rep->recomputes[i]));
            json_object_set_new(o, "bytes_h2d", json_integer((json_int_t)rep->bytes_h2d[i]));
            json_object_set_new(o, "bytes_d2h", json_integer((json_int_t)rep->bytes_d2h[i]));
            json_array_append_new(arr, o);
        } else {
            char b1[32], b2[32], b3[32], b4[32];
            printf("%-22s %12s %12s %7.3f %8.3f %7.3f %6d %6d %12s %12s\n", w[i]->job,
                   fmt_bytes(rep->vanilla_footprint[i], b1, sizeof b1),
                   fmt_bytes(rep->planned_footprint[i], b2, sizeof b2), msr, msr_load, eor,
                   rep->swaps[i], rep->recomputes[i], fmt_bytes(rep->bytes_h2d[i], b3, sizeof b3),
                   fmt_bytes(rep->bytes_d2h[i], b4, sizeof b4));
        }
    }
    double gmsr = msr_of(sum_pf, sum_vf), gmsr_load = msr_of(sum_p, sum_v);
    double geor = sum_vt > 0 ? sum_st / sum_vt : 0;
    if (json) {
        json_t *root = json_object(), *gl = json_object();
        json_object_set_new(root, "profile", json_string(dev->name));
        json_object_set_new(root, "policy", json_string(policy));
        sim_setup_json(ss, root);
        json_object_set_new(root, "jobs", arr);
        json_object_set_new(gl, "vanilla_footprint_bytes", json_integer((json_int_t)sum_vf));
        json_object_set_new(gl, "planned_footprint_bytes", json_integer((json_int_t)sum_pf));
        json_object_set_new(gl, "vanilla_peak_bytes", json_integer((json_int_t)sum_v));
        json_object_set_new(gl, "planned_peak_bytes", json_integer((json_int_t)sum_p));
        json_object_set_new(gl, "vanilla_simulated_peak_bytes", json_integer((json_int_t)vsim->global_peak));
        json_object_set_new(gl, "simulated_peak_bytes", json_integer((json_int_t)sim->global_peak));
        json_object_set_new(gl, "msr", json_real(gmsr));
        json_object_set_new(gl, "msr_load", json_real(gmsr_load));
        json_object_set_new(gl, "budget_bytes", json_integer((json_int_t)rep->budget));
        size_t floor_b = 0;
        for (int i = 0; i < n; i++) floor_b += rep->floor[i];
        json_object_set_new(gl, "floor_bytes", json_integer((json_int_t)floor_b));
        json_object_set_new(gl, "budget_met", json_boolean(rep->budget_met));
        json_object_set_new(gl, "eor", json_real(geor));
        json_object_set_new(gl, "planned_waits", json_integer(waits));
        json_object_set_new(root, "global", gl);
        json_object_set_new(root, "planning_ms", json_real(rep->planning_ms));
        json_object_set_new(root, "planner_iterations", json_integer(rep->iterations));
        if (rep->solver.used) {
            const tsl_solver_report *sv = &rep->solver;
            json_t *so = json_object();
            json_object_set_new(so, "status", json_string(sv->status));
            json_object_set_new(so, "hit_time_limit", json_boolean(sv->hit_limit));
            json_object_set_new(so, "gap", isnan(sv->gap) ? json_null() : json_real(sv->gap));
            json_object_set_new(so, "objective",
                                isnan(sv->objective) ? json_null() : json_real(sv->objective));
            json_object_set_new(so, "bound", isnan(sv->bound) ? json_null() : json_real(sv->bound));
            json_object_set_new(so, "seconds", json_real(sv->seconds));
            json_object_set_new(so, "solves", json_integer(sv->solves));
            json_object_set_new(so, "columns", json_integer(sv->n_cols));
            json_object_set_new(so, "rows", json_integer(sv->n_rows));
            json_object_set_new(so, "budget_relaxed", json_boolean(sv->budget_relaxed));
            json_object_set_new(root, "solver", so);
        }
        char *s = json_dumps(root, JSON_COMPACT);
        puts(s);
        free(s);
        json_decref(root);
        return;
    }
    json_decref(arr);
    char b1[32], b2[32], b3[32], b4[32];
    printf("%-22s %12s %12s %7.3f %8.3f %7.3f   (sums of per-job footprints, as the paper's MP)\n",
           "all jobs", fmt_bytes(sum_vf, b1, sizeof b1), fmt_bytes(sum_pf, b2, sizeof b2), gmsr,
           gmsr_load, geor);
    printf("footprint: the device memory each plan's layout needs; load: the peak of live "
           "bytes (vanilla %s, planned %s)\n",
           fmt_bytes(sum_v, b3, sizeof b3), fmt_bytes(sum_p, b4, sizeof b4));
    if (waits)
        printf("planned waits: %d (compute waits %.1f us per iteration for copies, in the "
               "predicted periods)\n", waits, stall);
    printf("simulated together: vanilla peak load %s, planned peak load %s; %s planning %.2f ms "
           "(%d iterations) on %s\n",
           fmt_bytes(vsim->global_peak, b3, sizeof b3), fmt_bytes(sim->global_peak, b4, sizeof b4),
           policy, rep->planning_ms, rep->iterations, dev->name);
    if (rep->solver.used) {
        const tsl_solver_report *sv = &rep->solver;
        printf("integer program: CBC %s after %d solve%s, %.2f s (%d columns, %d rows)", sv->status,
               sv->solves, sv->solves == 1 ? "" : "s", sv->seconds, sv->n_cols, sv->n_rows);
        if (sv->hit_limit && isnan(sv->gap))
            printf("; stopped at the time limit, no bound proven (gap unknown)");
        else if (sv->hit_limit)
            printf("; stopped at the time limit, gap %.2f %%", 100 * sv->gap);
        if (sv->budget_relaxed) printf("; no schedule meets the budget: least memory solved for");
        printf("\n");
    }
    char how[320];
    printf("%s\n", sim_setup_describe(ss, how, sizeof how));
    double stall_total = 0;
    for (int i = 0; i < n; i++) stall_total += sim->job[i].stall_total_us;
    if (ss->random_phases || stall_total > 0) {
        printf("simulated stalls (compute waiting for copies, %d iterations): %.1f us in all;",
               sim->iterations, stall_total);
        for (int i = 0; i < n && ss->random_phases; i++)
            printf("%s offset %s %.1f us", i ? "," : "", w[i]->job, offset_us[i]);
        printf("\n");
    }
}

int cmd_plan(int argc, char **argv) {
    tsl_args a = {.cmd = "plan", .argc = argc, .argv = argv};
    job_list jobs = {0};
    int json = 0, sgd = 0, step = TSL_STEP_IN_BACKWARD, batch = 0, image = 0;
    const char *model = NULL, *profile = "a6000", *out = NULL, *trace = NULL, *policy = "tensile";
    size_t budget = 0;
    policy_pairs pairs = policy_pairs_new(&a, argc);
    sim_setup ss = sim_setup_default();
    static const char *const optims[] = {"adam", "sgd", NULL};
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            print_policies();
            policy_pairs_free(&pairs);
            job_list_free(&jobs);
            return 0;
        } else if (!strcmp(o, "--model")) model = args_value(&a, o);
        else if (!strcmp(o, "--batch")) batch = (int)args_int(&a, o, 1, JOB_MAX_BATCH);
        else if (!strcmp(o, "--image-size")) image = (int)args_int(&a, o, 1, JOB_MAX_IMAGE);
        else if (!strcmp(o, "--jobs")) add_jobs(&a, args_value(&a, o), &jobs);
        else if (!strcmp(o, "--workload")) add_job(&a, &jobs)->workload_path = args_value(&a, o);
        else if (!strcmp(o, "--profile")) profile = args_value(&a, o);
        else if (!strcmp(o, "--policy")) policy = args_value(&a, o);
        else if (!strcmp(o, "--budget")) budget = args_size(&a, o);
        else if (!strcmp(o, "--optimizer")) sgd = args_choice(&a, o, optims);
        else if (!strcmp(o, "--optimizer-step")) step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--no-recompute")) policy_pairs_add(&a, &pairs, "recompute", "0");
        else if (!strcmp(o, "--out")) out = args_value(&a, o);
        else if (!strcmp(o, "--trace")) trace = args_value(&a, o);
        else if (!strcmp(o, "--json")) json = 1;
        else if (sim_setup_option(&a, o, &ss)) continue;
        else if (!strncmp(o, "--", 2) && o[2]) /* the policy's (checked below) */
            policy_pairs_add(&a, &pairs, o + 2, args_value(&a, o));
        else args_die(&a, "unknown option '%s'", o);
    }
    tsl_policy_opts *popts = policy_pairs_apply(&a, &pairs, policy);
    if (model) {
        job_spec *j = add_job(&a, &jobs);
        snprintf(j->model, sizeof j->model, "%s", model);
        j->batch = batch ? batch : 16;
        j->image = image;
    } else if (batch || image) {
        args_die(&a, "--batch and --image-size go with --model (use --jobs model:batch:image)");
    }
    if (jobs.n == 0) args_die(&a, "no job: give --model, --jobs or --workload");
    int n = jobs.n, rc = 0;
    policy_opts_check_jobs(&a, popts, n);
    for (int i = 0; i < n; i++)
        if (!jobs.v[i].workload_path &&
            !tool_check_model("plan", model && i == n - 1 ? "--model" : "--jobs", jobs.v[i].model))
            rc = 2;
    /* the outputs can be written: checked before any work */
    if (rc == 0 && out && !tool_check_output("plan", "--out", out)) rc = 2;
    if (rc == 0 && trace && !tool_check_output("plan", "--trace", trace)) rc = 2;
    tsl_device_profile dev;
    if (rc == 0 && tsl_profile_load(profile, &dev) != TSL_OK) {
        fprintf(stderr, "tensile plan: --profile: %s\n", tsl_last_error());
        rc = 2;
    }
    char b1[32], b2[32];
    if (rc == 0 && budget > dev.mem_bytes) {
        fprintf(stderr, "tensile plan: --budget: %s (%zu bytes) is more than the device of "
                "profile '%s' has (mem_bytes %zu, %s)\n", fmt_bytes(budget, b1, sizeof b1), budget,
                dev.name, dev.mem_bytes, fmt_bytes(dev.mem_bytes, b2, sizeof b2));
        rc = 2;
    }
    tsl_workload **w = calloc((size_t)n, sizeof *w);
    tsl_plan **plans = calloc((size_t)n, sizeof *plans), **empty = calloc((size_t)n, sizeof *empty);
    double *share_v = calloc((size_t)n, sizeof *share_v), *offset = calloc((size_t)n, sizeof *offset);
    if (rc == 0 && (!w || !plans || !empty || !share_v || !offset)) {
        fprintf(stderr, "tensile plan: out of host memory for %d jobs\n", n);
        rc = 1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        char name[64];
        job_name(&jobs, i, name, sizeof name);
        if (!job_workload(&jobs.v[i], name, sgd, step, &dev, &w[i], &rc)) break;
        rc = 0;
    }
    if (rc == 0 && out && !distinct_names(&jobs, w, n)) rc = 2;
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = tsl_policy_opts_policy(popts);
    po.opts = tsl_policy_opts_values(popts);
    po.budget = budget;
    const double *share = share_v ? sim_setup_shares(&ss, n, share_v) : NULL;
    po.channel_share = share;
    tsl_plan_report rep = {0};
    tsl_status pst = rc == 0 ? tsl_plan_jobs(w, n, &dev, &po, plans, &rep) : TSL_OK;
    if (pst != TSL_OK && pst != TSL_ERR_BUDGET) { /* an unmet budget is reported below */
        fprintf(stderr, "tensile plan: planning failed: %s\n", tsl_last_error());
        rc = 1;
    }
    /* Every plan is verified before anything uses it (DESIGN.md invariant 2):
     * together on the device's channels, or each on its share of them. */
    for (int i = 0; rc == 0 && i < (share ? n : 1); i++) {
        tsl_violation *v = NULL;
        int nv = 0;
        tsl_device_profile dj = share ? tsl_profile_channel_share(&dev, share[i]) : dev;
        tsl_status vst = share ? tsl_plan_verify(w[i], plans[i], &dj, &v, &nv)
                               : tsl_plan_verify_jobs((const tsl_workload *const *)w,
                                                      (const tsl_plan *const *)plans, n, &dev, &v,
                                                      &nv);
        if (vst != TSL_OK || nv) {
            fprintf(stderr, "tensile plan: the policy's plan%s%s fails verification%s (%d "
                    "violations):\n", share ? " of job " : "", share ? w[i]->job : "",
                    share ? " on its share of the channels" : "", nv);
            for (int k = 0; k < nv && k < 10; k++) fprintf(stderr, "  %s\n", v[k].what);
            rc = 1;
        }
        free(v);
    }
    /* The plans fit if their footprints together (what the device must
     * hold: the sum of the jobs' layouts' extents) fit the budget, or the
     * device without one. Plans that do not fit are reported, never
     * written. */
    size_t limit = budget ? budget : dev.mem_bytes, sum_planned = 0, sum_load = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        sum_planned += rep.planned_footprint[i];
        sum_load += rep.planned_peak[i];
    }
    int fits = rc != 0 || rep.budget_met;
    tsl_sim_result sim = {0}, vsim = {0};
    if (rc == 0) {
        sim_setup_offsets(&ss, w, n, offset);
        tsl_sim_opts so = sim_setup_sim_opts(&ss, offset, share);
        so.trace_path = fits ? trace : NULL;
        tsl_sim_opts vso = sim_setup_sim_opts(&ss, offset, NULL);
        for (int i = 0; i < n; i++) empty[i] = tsl_plan_new(w[i]->job);
        if (tsl_simulate(w, plans, n, &dev, &so, &sim) != TSL_OK ||
            tsl_simulate(w, empty, n, &dev, &vso, &vsim) != TSL_OK) {
            fprintf(stderr, "tensile plan: simulation failed: %s\n", tsl_last_error());
            rc = 1;
        }
    }
    if (rc == 0 && fits && out &&
        tsl_plan_write_json((const tsl_plan *const *)plans, n, (const tsl_workload *const *)w, out) != TSL_OK) {
        fprintf(stderr, "tensile plan: --out: %s\n", tsl_last_error());
        rc = 1;
    }
    if (rc == 0) report(policy, jobs.v, n, w, &rep, &sim, &vsim, &dev, &ss, share, offset, json);
    size_t floor_b = 0;
    for (int i = 0; i < n && rc == 0; i++) floor_b += rep.floor[i];
    if (rc == 0 && !fits && limit < floor_b) {
        char b3[32], b4[32];
        fprintf(stderr, "tensile plan: the budget of %s (%zu bytes) is below the floor of %s "
                "(%zu bytes): the largest working set one op needs (its inputs, outputs and "
                "workspace%s); no plan meets it\n", fmt_bytes(limit, b3, sizeof b3), limit,
                fmt_bytes(floor_b, b4, sizeof b4), floor_b, n > 1 ? ", summed over the jobs" : "");
    }
    if (rc == 0 && !fits) {
        char what[160], b3[32];
        if (budget) snprintf(what, sizeof what, "--budget %s", fmt_bytes(budget, b3, sizeof b3));
        else snprintf(what, sizeof what, "the %s of profile '%s' (its mem_bytes)",
                      fmt_bytes(dev.mem_bytes, b3, sizeof b3), dev.name);
        char b4[32];
        fprintf(stderr, "tensile plan: the budget is not met: policy '%s' reached footprints "
                "summing to %s (%zu bytes; peak load %s), more than %s (%zu bytes): it can swap "
                "and recompute no more%s%s\n",
                policy, fmt_bytes(sum_planned, b1, sizeof b1), sum_planned,
                fmt_bytes(sum_load, b4, sizeof b4), what, limit,
                n > 1 ? "; plan fewer or smaller jobs" : "",
                out && trace ? "; --out and --trace not written"
                : out        ? "; --out not written"
                : trace      ? "; --trace not written" : "");
        rc = 3;
    }
    for (int i = 0; i < n; i++) {
        if (plans) tsl_plan_free(plans[i]);
        if (empty) tsl_plan_free(empty[i]);
        if (w) tsl_workload_free(w[i]);
    }
    free(w);
    free(plans);
    free(empty);
    free(share_v);
    free(offset);
    job_list_free(&jobs);
    tsl_sim_result_free(&sim);
    tsl_sim_result_free(&vsim);
    tsl_plan_report_free(&rep);
    tsl_policy_opts_free(popts);
    return rc;
}
