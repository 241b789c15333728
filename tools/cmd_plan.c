/*
 * cmd_plan.c - `tensile plan`: plan one or several jobs on a device profile
 * with TENSILE (or vanilla), verify every plan, simulate them together, and
 * report per job and overall: vanilla peak, planned peak, MSR, simulated
 * EOR, swaps, recomputations, bytes moved, planning time.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "tensile/policy.h"
#include "tensile/sched_json.h"
#include "tensile/sim.h"
#include "tensile/verify.h"

static const char help[] =
    "usage: tensile plan --model M --batch B [--profile P] [--policy tensile|vanilla]\n"
    "                    [--jobs M:B[:S],M:B[:S],...] [--workload FILE.json]...\n"
    "                    [--budget SIZE] [--max-swap-rate R] [--image-size S]\n"
    "                    [--optimizer adam|sgd] [--no-recompute] [--out plan.json]\n"
    "                    [--trace trace.json] [--json]\n"
    "\n"
    "Builds each job's training iteration, derives its tensor access sequence\n"
    "from the device profile's cost model, plans swaps and recomputations for\n"
    "all jobs together (TENSILE, Algorithms 1-3), verifies every plan, and\n"
    "simulates the jobs sharing the device (one compute resource, two copy\n"
    "channels). MSR = (vanilla peak - planned peak) / vanilla peak against the\n"
    "liveness-freeing vanilla executor; EOR = simulated iteration time / vanilla\n"
    "iteration time, both simulated with the same jobs sharing the device.\n"
    "\n"
    "  --model M, --batch B   one job (image size: the model's default)\n"
    "  --jobs LIST            several jobs: model:batch[:image],...\n"
    "  --workload FILE        a job given as workload JSON (docs/SCHEDULING.md);\n"
    "                         may be repeated and mixed with --model/--jobs\n"
    "  --profile P            device profile: a6000 (default), rtx2080ti,\n"
    "                         h100-pcie, h100-sxm, cpu-local, or a JSON path\n"
    "  --policy P             tensile (default) or vanilla (empty plans)\n"
    "  --budget SIZE          device memory for the jobs (default: the profile's);\n"
    "                         recomputation is used only while the peak exceeds it\n"
    "  --max-swap-rate R      every job's maximum swapping rate, its priority (0..1]\n"
    "  --optimizer O          adam (default) or sgd (momentum 0.9)\n"
    "  --no-recompute         swapping only\n"
    "  --swap-in-slack F      plan each swap-in to land F times its copy time before\n"
    "                         its access (default 0: the paper's placement)\n"
    "  --out FILE             write the plans as JSON\n"
    "  --trace FILE           write a Chrome trace of the simulation (Perfetto)\n"
    "  --json                 one JSON object on stdout\n";

#define MAX_JOBS 16

typedef struct job_spec {
    char model[64];
    int batch, image;
    const char *workload_path;
} job_spec;

static void add_jobs(tsl_args *a, const char *list, job_spec *jobs, int *n) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_JOBS) args_die(a, "--jobs: at most %d jobs", MAX_JOBS);
        job_spec *j = &jobs[(*n)++];
        memset(j, 0, sizeof *j);
        char *c1 = strchr(tok, ':');
        if (!c1) args_die(a, "--jobs: '%s' is not model:batch[:image]", tok);
        *c1 = '\0';
        snprintf(j->model, sizeof j->model, "%s", tok);
        char *c2 = strchr(c1 + 1, ':');
        if (c2) *c2 = '\0';
        char *end;
        long b = strtol(c1 + 1, &end, 10);
        if (*end || b < 1 || b > 1 << 20) args_die(a, "--jobs: batch '%s' of %s is not a positive integer", c1 + 1, tok);
        j->batch = (int)b;
        if (c2) {
            long s = strtol(c2 + 1, &end, 10);
            if (*end || s < 1 || s > 1 << 16) args_die(a, "--jobs: image size '%s' of %s is not a positive integer", c2 + 1, tok);
            j->image = (int)s;
        }
    }
}

int cmd_plan(int argc, char **argv) {
    tsl_args a = {.cmd = "plan", .argc = argc, .argv = argv};
    job_spec jobs[MAX_JOBS];
    int n = 0, json = 0, policy = 1, optimizer = 0, recompute = 1, batch = 0, image = 0;
    const char *model = NULL, *profile = "a6000", *out = NULL, *trace = NULL;
    size_t budget = 0;
    double msr_limit = 1.0, slack = tsl_plan_opts_default().swap_in_slack;
    static const char *const policies[] = {"vanilla", "tensile", NULL};
    static const char *const optims[] = {"adam", "sgd", NULL};
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(o, "--model")) model = args_value(&a, o);
        else if (!strcmp(o, "--batch")) batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--image-size")) image = (int)args_int(&a, o, 1, 1 << 16);
        else if (!strcmp(o, "--jobs")) add_jobs(&a, args_value(&a, o), jobs, &n);
        else if (!strcmp(o, "--workload")) {
            if (n >= MAX_JOBS) args_die(&a, "at most %d jobs", MAX_JOBS);
            memset(&jobs[n], 0, sizeof jobs[n]);
            jobs[n++].workload_path = args_value(&a, o);
        } else if (!strcmp(o, "--profile")) profile = args_value(&a, o);
        else if (!strcmp(o, "--policy")) policy = args_choice(&a, o, policies);
        else if (!strcmp(o, "--budget")) budget = args_size(&a, o);
        else if (!strcmp(o, "--max-swap-rate")) msr_limit = args_double(&a, o, 1e-6, 1.0);
        else if (!strcmp(o, "--optimizer")) optimizer = args_choice(&a, o, optims);
        else if (!strcmp(o, "--no-recompute")) recompute = 0;
        else if (!strcmp(o, "--swap-in-slack")) slack = args_double(&a, o, 0, 10);
        else if (!strcmp(o, "--out")) out = args_value(&a, o);
        else if (!strcmp(o, "--trace")) trace = args_value(&a, o);
        else if (!strcmp(o, "--json")) json = 1;
        else args_die(&a, "unknown option '%s'", o);
    }
    if (model) {
        if (n >= MAX_JOBS) args_die(&a, "at most %d jobs", MAX_JOBS);
        memset(&jobs[n], 0, sizeof jobs[n]);
        snprintf(jobs[n].model, sizeof jobs[n].model, "%s", model);
        jobs[n].batch = batch ? batch : 16;
        jobs[n].image = image;
        n++;
    } else if (batch || image) {
        args_die(&a, "--batch and --image-size go with --model (use --jobs model:batch:image)");
    }
    if (n == 0) args_die(&a, "no job: give --model, --jobs or --workload");
    for (int i = 0; i < n; i++)
        if (!jobs[i].workload_path && !tool_check_model("plan", jobs[i].model)) return 2;

    tsl_device_profile dev;
    if (tsl_profile_load(profile, &dev) != TSL_OK) {
        fprintf(stderr, "tensile plan: --profile: %s\n", tsl_last_error());
        return 2;
    }
    tsl_workload *w[MAX_JOBS] = {0};
    tsl_plan *plans[MAX_JOBS] = {0}, *empty[MAX_JOBS] = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (jobs[i].workload_path) {
            if (tsl_workload_read_json(jobs[i].workload_path, &w[i]) != TSL_OK) {
                fprintf(stderr, "tensile plan: --workload: %s\n", tsl_last_error());
                rc = 1;
            }
            continue;
        }
        tsl_model_cfg cfg = tsl_model_cfg_default(jobs[i].model);
        cfg.batch = jobs[i].batch;
        if (jobs[i].image) cfg.image_size = jobs[i].image;
        tsl_optimizer_cfg opt = optimizer ? tsl_sgd_default(0.01f) : tsl_adam_default(1e-3f);
        tsl_graph *g = tool_build_training_graph("plan", jobs[i].model, &cfg, &opt);
        if (!g) {
            rc = 1;
            break;
        }
        char name[64];
        snprintf(name, sizeof name, "%.40s:%d", jobs[i].model, cfg.batch);
        if (tsl_workload_from_graph(g, name, NULL, &dev, &w[i]) != TSL_OK) {
            fprintf(stderr, "tensile plan: %s\n", tsl_last_error());
            rc = 1;
        }
        tsl_graph_free(g);
    }
    tsl_plan_opts po = tsl_plan_opts_default();
    po.policy = policy ? TSL_POLICY_TENSILE : TSL_POLICY_VANILLA;
    po.budget = budget;
    po.recompute = recompute;
    po.swap_in_slack = slack;
    for (int i = 0; i < MAX_JOBS; i++) po.max_swap_rate[i] = msr_limit;
    tsl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    if (rc == 0 && tsl_plan_jobs(w, n, &dev, &po, plans, &rep) != TSL_OK) {
        fprintf(stderr, "tensile plan: planning failed: %s\n", tsl_last_error());
        rc = 1;
    }
    /* Every plan is verified before anything uses it (DESIGN.md invariant 2). */
    if (rc == 0) {
        tsl_violation *v = NULL;
        int nv = 0;
        if (tsl_plan_verify_jobs((const tsl_workload *const *)w, (const tsl_plan *const *)plans, n,
                                 &dev, &v, &nv) != TSL_OK || nv) {
            fprintf(stderr, "tensile plan: internal error: the plan fails verification (%d violations):\n", nv);
            for (int k = 0; k < nv && k < 10; k++) fprintf(stderr, "  %s\n", v[k].what);
            rc = 1;
        }
        free(v);
    }
    tsl_sim_result sim, vsim;
    if (rc == 0) {
        tsl_sim_opts so = {.iterations = 3, .trace_path = trace, .actual = NULL};
        tsl_sim_opts vso = {.iterations = 3, .trace_path = NULL, .actual = NULL};
        for (int i = 0; i < n; i++) empty[i] = tsl_plan_new(w[i]->job);
        if (tsl_simulate(w, plans, n, &dev, &so, &sim) != TSL_OK ||
            tsl_simulate(w, empty, n, &dev, &vso, &vsim) != TSL_OK) {
            fprintf(stderr, "tensile plan: simulation failed: %s\n", tsl_last_error());
            rc = 1;
        }
    }
    if (rc == 0 && out) {
        if (tsl_plan_write_json((const tsl_plan *const *)plans, n, (const tsl_workload *const *)w, out) != TSL_OK) {
            fprintf(stderr, "tensile plan: --out: %s\n", tsl_last_error());
            rc = 1;
        }
    }
    if (rc == 0) {
        size_t sum_v = 0, sum_p = 0;
        double sum_vt = 0, sum_st = 0;
        json_t *arr = json_array();
        if (!json)
            printf("%-22s %12s %12s %7s %7s %6s %6s %12s %12s\n", "job", "vanilla", "planned", "MSR",
                   "EOR", "swaps", "recomp", "to device", "to host");
        for (int i = 0; i < n; i++) {
            double msr = rep.vanilla_peak[i] ? 1.0 - (double)rep.planned_peak[i] / (double)rep.vanilla_peak[i] : 0;
            /* against vanilla on the same shared device: jobs share one compute
             * resource, so a job alone is not the baseline of a job among others */
            double eor = sim.job[i].iter_us / vsim.job[i].iter_us;
            sum_v += rep.vanilla_peak[i];
            sum_p += rep.planned_peak[i];
            sum_vt += vsim.job[i].iter_us;
            sum_st += sim.job[i].iter_us;
            if (json) {
                json_t *o = json_object();
                json_object_set_new(o, "job", json_string(w[i]->job));
                json_object_set_new(o, "model", json_string(jobs[i].workload_path ? w[i]->job : jobs[i].model));
                json_object_set_new(o, "batch", json_integer(jobs[i].workload_path ? 0 : jobs[i].batch));
                json_object_set_new(o, "vanilla_peak_bytes", json_integer((json_int_t)rep.vanilla_peak[i]));
                json_object_set_new(o, "planned_peak_bytes", json_integer((json_int_t)rep.planned_peak[i]));
                json_object_set_new(o, "simulated_peak_bytes", json_integer((json_int_t)sim.job[i].peak));
                json_object_set_new(o, "msr", json_real(msr));
                json_object_set_new(o, "eor", json_real(eor));
                json_object_set_new(o, "iter_us", json_real(sim.job[i].iter_us));
                json_object_set_new(o, "vanilla_iter_us", json_real(vsim.job[i].iter_us));
                json_object_set_new(o, "stall_us", json_real(sim.job[i].stall_us));
                json_object_set_new(o, "swaps", json_integer(rep.swaps[i]));
                json_object_set_new(o, "recomputes", json_integer(rep.recomputes[i]));
                json_object_set_new(o, "bytes_h2d", json_integer((json_int_t)rep.bytes_h2d[i]));
                json_object_set_new(o, "bytes_d2h", json_integer((json_int_t)rep.bytes_d2h[i]));
                json_array_append_new(arr, o);
            } else {
                char b1[32], b2[32], b3[32], b4[32];
                printf("%-22s %12s %12s %7.3f %7.3f %6d %6d %12s %12s\n", w[i]->job,
                       fmt_bytes(rep.vanilla_peak[i], b1, sizeof b1), fmt_bytes(rep.planned_peak[i], b2, sizeof b2),
                       msr, eor, rep.swaps[i], rep.recomputes[i], fmt_bytes(rep.bytes_h2d[i], b3, sizeof b3),
                       fmt_bytes(rep.bytes_d2h[i], b4, sizeof b4));
            }
        }
        double gmsr = sum_v ? 1.0 - (double)sum_p / (double)sum_v : 0;
        double geor = sum_vt > 0 ? sum_st / sum_vt : 0;
        if (json) {
            json_t *root = json_object(), *gl = json_object();
            json_object_set_new(root, "profile", json_string(dev.name));
            json_object_set_new(root, "policy", json_string(policies[policy]));
            json_object_set_new(root, "jobs", arr);
            json_object_set_new(gl, "vanilla_peak_bytes", json_integer((json_int_t)sum_v));
            json_object_set_new(gl, "planned_peak_bytes", json_integer((json_int_t)sum_p));
            json_object_set_new(gl, "vanilla_simulated_peak_bytes", json_integer((json_int_t)vsim.global_peak));
            json_object_set_new(gl, "simulated_peak_bytes", json_integer((json_int_t)sim.global_peak));
            json_object_set_new(gl, "msr", json_real(gmsr));
            json_object_set_new(gl, "eor", json_real(geor));
            json_object_set_new(root, "global", gl);
            json_object_set_new(root, "planning_ms", json_real(rep.planning_ms));
            json_object_set_new(root, "planner_iterations", json_integer(rep.iterations));
            char *s = json_dumps(root, JSON_COMPACT);
            puts(s);
            free(s);
            json_decref(root);
        } else {
            json_decref(arr);
            char b1[32], b2[32], b3[32], b4[32];
            printf("%-22s %12s %12s %7.3f %7.3f   (sum of per-job peaks, as the paper's MP)\n", "all jobs",
                   fmt_bytes(sum_v, b1, sizeof b1), fmt_bytes(sum_p, b2, sizeof b2), gmsr, geor);
            printf("simulated together: vanilla peak %s, planned peak %s; planning %.2f ms (%d iterations) on %s\n",
                   fmt_bytes(vsim.global_peak, b3, sizeof b3), fmt_bytes(sim.global_peak, b4, sizeof b4),
                   rep.planning_ms, rep.iterations, dev.name);
        }
    }
    for (int i = 0; i < n; i++) {
        tsl_plan_free(plans[i]);
        tsl_plan_free(empty[i]);
        tsl_workload_free(w[i]);
    }
    return rc;
}
