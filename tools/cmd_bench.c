/*
 * cmd_bench.c - `tensile bench paper`: the seed papers' tables and figures
 * with Tensile's numbers beside the papers' own (bench_paper.h). Writes
 * into --out: one NAME.csv and NAME.md per table, README.md (every table,
 * the command, the settings), memory_curves.csv, and the figures
 * (figures/NAME.png and NAME.svg) made by bench/paper_figures.py when python3 with
 * matplotlib is present (otherwise it says how to get them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "bench_paper.h"
#include "commands.h"
#include "figures.h"
#include "io/atomic_file.h"
#include "progress.h"
#include "tensile/sched_json.h"

static const char help[] =
    "usage: tensile bench paper [--backend sim|cpu] [--profile P] [--out DIR] [--quick]\n"
    "                           [--tables LIST] [--no-figures] [--predictor FILE]\n"
    "\n"
    "Reproduces the seed papers' tables and figures with Tensile's policies and\n"
    "prints the papers' own numbers beside Tensile's (transcribed from the papers,\n"
    "with their citations):\n"
    "  TENSILE (seed 004)   Table III (one workload: vDNN, Capuchin, TENSILE; MSR,\n"
    "                       EOR, CBR), Fig. 6 (1 to 4 workloads), Table IV (mixed\n"
    "                       architectures), Fig. 7 (batch 4 to 64); Tables I and\n"
    "                       II (cold start: the plan from predicted latencies, then\n"
    "                       updated; the first iteration against Capuchin's passive\n"
    "                       mode)\n"
    "  SmartPool (seed 001) Table I (competitive ratio per model)\n"
    "  AutoSwap (seed 001)  Table II (largest load reduction without overhead)\n"
    "  MO-SOS (seed 003)    Fig. 4 (step time against the memory ratio 0.8..0.4)\n"
    "and the figures: memory over one iteration per policy, MSR/EOR bars per\n"
    "model, the overhead-against-budget curve of every policy per model.\n"
    "Policies are taken by name from the registry; a policy not in this build\n"
    "gives rows marked \"not available in this build\", never a number.\n"
    "\n"
    "  --backend B    sim (default): plans verified and simulated on the device\n"
    "                 profiles; cpu: Table III and Fig. 7 trained for real on the\n"
    "                 CPU backend at small shapes (32x32 synthetic images) with\n"
    "                 copy channels throttled to 2 GB/s, through `tensile run`\n"
    "                 (slow: minutes); the other tables stay simulated\n"
    "  --profile P    the device of TENSILE's tables and the budget curves\n"
    "                 (default a6000, the paper's GPU). SmartPool's and AutoSwap's\n"
    "                 tables use gtx1080ti and MO-SOS's tesla-p40, their papers' GPUs\n"
    "  --out DIR      output folder (default bench-paper; made if missing, its\n"
    "                 parent must exist)\n"
    "  --quick        a reduced set (fewer models, workloads, batches, budgets),\n"
    "                 for the test suite\n"
    "  --tables LIST  only these groups, comma-separated: tensile, smartpool,\n"
    "                 mosos, curves, cold (TENSILE's Tables I and II) (default: all)\n"
    "  --predictor F  the latency predictor of Tables I and II (default\n"
    "                 profiles/predictor.tsp, made by `tensile profile`); without\n"
    "                 one those tables say how to make it. sim: measures two vanilla\n"
    "                 iterations of each model at the paper's shapes on this CPU as\n"
    "                 the truth (minutes); cpu: real cold-start and Capuchin runs\n"
    "  --no-figures   tables only\n"
    "\n"
    "Progress goes to stderr. Exit status: 0 done, 1 a table or file could not be\n"
    "made, 2 bad arguments.\n";

enum { G_TENSILE = 1, G_SMARTPOOL = 2, G_MOSOS = 4, G_CURVES = 8, G_COLD = 16, G_ALL = 31 };

/* Parses --tables: a comma list of group names. */
static int parse_groups(tsl_args *a, const char *v) {
    static const char *const names[] = {"tensile", "smartpool", "mosos", "curves", "cold"};
    int g = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = 0;
        for (; k < 5; k++)
            if (strlen(names[k]) == n && !strncmp(p, names[k], n)) break;
        if (k == 5)
            args_die(a, "--tables: '%.*s' is not a table group (expected a comma list of: "
                     "tensile, smartpool, mosos, curves, cold)", (int)n, p);
        g |= 1 << k;
        p += n;
        if (*p == ',' && *++p == '\0') args_die(a, "--tables: '%s' ends with a comma", v);
    }
    if (!g) args_die(a, "--tables: empty list");
    return g;
}

/* Opens DIR/NAME for writing whole (io/atomic_file.h); NULL with a message. */
static tsl__out *open_out(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tsl__out *o;
    if (tsl__out_open(path, "output", &o) == TSL_OK) return o;
    fprintf(stderr, "tensile bench: %s\n", tsl_last_error());
    return NULL;
}

static int commit(tsl__out *o) {
    if (tsl__out_commit(o) == TSL_OK) return 0;
    fprintf(stderr, "tensile bench: %s\n", tsl_last_error());
    return -1;
}

static int bench_paper(int argc, char **argv) {
    tsl_args a = {.cmd = "bench paper", .argc = argc, .argv = argv};
    static const char *const backends[] = {"sim", "cpu", NULL};
    const char *profile = "a6000", *out = "bench-paper", *predictor = NULL;
    int quick = 0, cpu = 0, groups = G_ALL, no_figures = 0;
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(o, "--backend")) cpu = args_choice(&a, o, backends);
        else if (!strcmp(o, "--profile")) profile = args_value(&a, o);
        else if (!strcmp(o, "--out")) out = args_value(&a, o);
        else if (!strcmp(o, "--quick")) quick = 1;
        else if (!strcmp(o, "--tables")) groups = parse_groups(&a, args_value(&a, o));
        else if (!strcmp(o, "--no-figures")) no_figures = 1;
        else if (!strcmp(o, "--predictor")) predictor = args_value(&a, o);
        else args_die(&a, "unknown option '%s'", o);
    }
    if (!*out) args_die(&a, "--out: empty folder name");
    if (predictor && access(predictor, R_OK) != 0)
        args_die(&a, "--predictor: cannot read '%s': %s", predictor, strerror(errno));
    tsl_device_profile dev;
    if (tsl_profile_load(profile, &dev) != TSL_OK) {
        fprintf(stderr, "tensile bench paper: --profile: %s\n", tsl_last_error());
        return 2;
    }
    if (fig_make_folder("bench paper", "--out", out)) return 2;
    bp_ctx c = {.quick = quick, .cpu = cpu, .out = out, .predictor = predictor, .dev = &dev,
                .t0 = progress_now_s()};
    tsl__out *index = open_out(out, "README.md"), *mem = open_out(out, "memory_curves.csv");
    if (!index || !mem) {
        if (index) tsl__out_abort(index);
        if (mem) tsl__out_abort(mem);
        return 1;
    }
    c.index = tsl__out_stream(index);
    c.memcsv = tsl__out_stream(mem);
    fputs("model,policy,t_ms,load_mib\n", c.memcsv);
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(c.index, "# tensile bench paper\n\n`tensile bench paper --backend %s --profile %s%s`, "
            "%s. Every table also as NAME.csv and NAME.md beside this file; figures in "
            "figures/.\n\n", cpu ? "cpu" : "sim", profile, quick ? " --quick" : "", when);
    if (groups & G_COLD) bp_cold_tables(&c);
    if (groups & G_TENSILE) bp_tensile_tables(&c);
    if (groups & G_SMARTPOOL) bp_smartpool_tables(&c);
    if (groups & G_MOSOS) bp_mosos_figure(&c);
    if (groups & G_CURVES) bp_budget_curves(&c);
    if (commit(mem)) c.errors++;
    if (commit(index)) c.errors++;
    if (!no_figures && fig_run("bench paper", "paper_figures.py", out) < 0) c.errors++;
    bp_progress(&c, "done: %s%s", out, c.errors ? " (with errors, above)" : "");
    return c.errors ? 1 : 0;
}

int cmd_bench(int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(help, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "paper")) {
        fprintf(stderr, "tensile bench: unknown benchmark '%s' (expected: paper)\n"
                "try 'tensile bench paper --help'\n", argv[0]);
        return 2;
    }
    return bench_paper(argc - 1, argv + 1);
}
