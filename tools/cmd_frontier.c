/*
 * cmd_frontier.c - `tensile frontier`: the memory/overhead frontier of one
 * training job on a device profile - every policy's simulated overhead at
 * falling budgets (frontier.h measures; this file is the command: its
 * options, and the files or the output it writes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "figures.h"
#include "frontier.h"
#include "progress.h"
#include "tensile/sched_json.h"

#define MAX_FRACTIONS 64
#define MAX_POLICIES 64

static const char help[] =
    "usage: tensile frontier --model M [--batch B] [--profile P] [--image-size S]\n"
    "                        [--fractions LIST] [--policies LIST] [--out DIR]\n"
    "                        [--optimizer-step backward|end] [--json] [--no-figures]\n"
    "\n"
    "The memory/overhead frontier of one training job (model M, Adam) on a\n"
    "device profile: for each budget, a fraction of vanilla's footprint, each\n"
    "policy plans the job within it; the plans are verified and simulated, and\n"
    "each gives a row: the planned footprint, the simulated EOR (iteration time\n"
    "over vanilla's), swaps, recomputations, planning time, whether the budget\n"
    "was met. Budgets below the op floor (the largest working set of one op:\n"
    "its inputs, outputs and workspace, which must be resident while it runs)\n"
    "are marked and not planned. Where an integer-program policy proved its plan\n"
    "optimal for a budget (mosos; else checkmate, recomputation only), every row\n"
    "of that budget gets optimum_eor and gap = EOR / optimum_eor - 1.\n"
    "\n"
    "  --model M        a zoo model (required)\n"
    "  --batch B        the batch (default 16)\n"
    "  --profile P      the device profile (default a6000)\n"
    "  --image-size S   the images' side (default: the model's); --image is the same\n"
    "  --optimizer-step S\n"
    "                   backward (default): each parameter's update right after\n"
    "                   its gradient is complete; end: every update after the\n"
    "                   backward pass (the seed papers' optimizer phase)\n"
    "  --fractions LIST budget fractions of vanilla's footprint, comma-separated,\n"
    "                   each in (0, 1.5] (default 1.0,0.9,0.8,0.7,0.6,0.5,0.4,0.3)\n"
    "  --policies LIST  policies of the registry, comma-separated (default: every\n"
    "                   registered policy but vanilla)\n"
    "  --out DIR        write DIR/frontier.csv (one row per policy and budget),\n"
    "                   DIR/frontier.md (EOR per policy and budget) and the plot\n"
    "                   DIR/frontier.png and .svg (bench/frontier_plot.py, needs\n"
    "                   python3 with matplotlib); DIR is made if missing\n"
    "  --json           print the rows as one JSON object on stdout:\n"
    "                   {\"model\", ..., \"op_floor_bytes\", \"rows\": [...]}\n"
    "  --no-figures     no plot\n"
    "Without --out or --json the Markdown table goes to stdout.\n"
    "\n"
    "CSV columns: model,batch,profile,policy,fraction,budget_bytes,\n"
    "planned_footprint_bytes,eor,swaps,recomputes,planning_ms,budget_met, then\n"
    "msr,image,vanilla_footprint_bytes,op_floor_bytes,status,solver_status,\n"
    "solver_gap,optimum_policy,optimum_eor,gap (empty where there is no number).\n"
    "\n"
    "Progress goes to stderr, a line per cell. Integer-program policies (mosos,\n"
    "checkmate) plan within their default time limits. Exit status: 0 done, 1 an\n"
    "output file could not be written, 2 bad arguments.\n";

/* Parses --fractions into f (at most MAX_FRACTIONS); returns the count. */
static int parse_fractions(tsl_args *a, const char *v, double *f) {
    int n = 0;
    const char *p = v;
    for (;;) {
        size_t len = strcspn(p, ",");
        char tok[64];
        if (len == 0) args_die(a, "--fractions: '%s' has an empty entry", v);
        if (len >= sizeof tok) args_die(a, "--fractions: '%.*s' is not a number", (int)len, p);
        memcpy(tok, p, len);
        tok[len] = '\0';
        char *end;
        errno = 0;
        double x = strtod(tok, &end);
        if (errno || end == tok || *end || !isfinite(x))
            args_die(a, "--fractions: '%s' is not a number", tok);
        if (!(x > 0 && x <= 1.5))
            args_die(a, "--fractions: %s is outside (0, 1.5] (a fraction of vanilla's footprint)",
                     tok);
        if (n == MAX_FRACTIONS) args_die(a, "--fractions: more than %d values", MAX_FRACTIONS);
        for (int k = 0; k < n; k++) {
            char x2[32], y2[32];
            if (!strcmp(fr_label(x, x2, sizeof x2), fr_label(f[k], y2, sizeof y2)))
                args_die(a, "--fractions: %s repeats %g", tok, f[k]);
        }
        f[n++] = x;
        p += len;
        if (!*p) break;
        if (!*++p) args_die(a, "--fractions: '%s' ends with a comma", v);
    }
    return n;
}

/* Parses --policies into names (pointers into `v`, which it cuts at the
 * commas); returns the count. */
static int parse_policies(tsl_args *a, char *v, const char **names) {
    char *orig = strdup(v);
    if (!orig) args_die(a, "out of host memory");
    int n = 0;
    char *p = v;
    for (;;) {
        size_t len = strcspn(p, ",");
        int last = p[len] == '\0';
        p[len] = '\0';
        if (!*p) args_die(a, "--policies: '%s' has an empty entry", orig);
        if (!tsl_policy_find(p)) args_die(a, "--policies: %s", tsl_last_error());
        for (int k = 0; k < n; k++)
            if (!strcmp(names[k], p)) args_die(a, "--policies: '%s' is named twice", p);
        if (n == MAX_POLICIES) args_die(a, "--policies: more than %d policies", MAX_POLICIES);
        names[n++] = p;
        if (last) break;
        p += len + 1;
        if (!*p) args_die(a, "--policies: '%s' ends with a comma", orig);
    }
    free(orig);
    return n;
}

/* The default policies: every registered one but vanilla. */
static int all_policies(const char **names) {
    int n = 0;
    for (int i = 0; i < tsl_policy_count() && n < MAX_POLICIES; i++)
        if (strcmp(tsl_policy_at(i)->name, "vanilla")) names[n++] = tsl_policy_at(i)->name;
    return n;
}

/* Writes the files of --out; 0, or -1 with a message. */
static int write_files(const char *dir, const bt_table *rows, const bt_table *md) {
    char path[4096];
    snprintf(path, sizeof path, "%s/frontier.csv", dir);
    if (bt_write_csv(rows, path)) return -1;
    snprintf(path, sizeof path, "%s/frontier.md", dir);
    if (bt_write_md(md, path)) return -1;
    fprintf(stderr, "tensile frontier: wrote %s/frontier.csv and %s/frontier.md\n", dir, dir);
    return 0;
}

int cmd_frontier(int argc, char **argv) {
    tsl_args a = {.cmd = "frontier", .argc = argc, .argv = argv};
    const char *model = NULL, *profile = "a6000", *out = NULL;
    static char pol_buf[4096];
    const char *policies[MAX_POLICIES];
    double fractions[MAX_FRACTIONS] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};
    int nf = 8, np = 0, batch = 16, image = 0, json = 0, no_figures = 0;
    int step = TSL_STEP_IN_BACKWARD;
    for (const char *o; (o = args_next(&a));) {
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(o, "--model")) model = args_value(&a, o);
        else if (!strcmp(o, "--batch")) batch = (int)args_int(&a, o, 1, 1 << 20);
        else if (!strcmp(o, "--profile")) profile = args_value(&a, o);
        else if (!strcmp(o, "--image-size") || !strcmp(o, "--image"))
            image = (int)args_int(&a, o, 1, 1 << 16);
        else if (!strcmp(o, "--optimizer-step")) step = args_choice(&a, o, tool_step_names);
        else if (!strcmp(o, "--fractions")) nf = parse_fractions(&a, args_value(&a, o), fractions);
        else if (!strcmp(o, "--policies")) {
            const char *v = args_value(&a, o);
            if (strlen(v) >= sizeof pol_buf) args_die(&a, "--policies: the list is too long");
            snprintf(pol_buf, sizeof pol_buf, "%s", v);
            np = parse_policies(&a, pol_buf, policies);
        } else if (!strcmp(o, "--out")) out = args_value(&a, o);
        else if (!strcmp(o, "--json")) json = 1;
        else if (!strcmp(o, "--no-figures")) no_figures = 1;
        else args_die(&a, "unknown option '%s'", o);
    }
    if (!model) args_die(&a, "--model: missing (a zoo model, e.g. --model resnet50)");
    if (!tool_check_model("frontier", "--model", model)) return 2;
    if (out && !*out) args_die(&a, "--out: empty folder name");
    if (!np) np = all_policies(policies);
    tsl_device_profile dev;
    if (tsl_profile_load(profile, &dev) != TSL_OK) {
        fprintf(stderr, "tensile frontier: --profile: %s\n", tsl_last_error());
        return 2;
    }
    if (out) {
        char path[4096];
        snprintf(path, sizeof path, "%s/frontier.csv", out);
        if (fig_make_folder("frontier", "--out", out) || !tool_check_output("frontier", "--out", path))
            return 1;
    }
    fr_run f = {.profile = profile, .policy = policies, .np = np, .fraction = fractions,
                .nf = nf, .t0 = progress_now_s()};
    snprintf(f.spec.model, sizeof f.spec.model, "%s", model);
    f.spec.batch = batch;
    f.spec.image = image;
    f.spec.step = (tsl_optimizer_step)step;
    bm_jobs J;
    if (bm_jobs_build(&J, &f.spec, 1, &dev) != 0) { /* the model cannot take the shape */
        fprintf(stderr, "tensile frontier: --model %s --batch %d --image-size %d: the job cannot be "
                "built (above)\n", model, batch, image ? image : tsl_model_cfg_default(model).image_size);
        return 2;
    }
    int rc = fr_measure(&f, &J) ? 1 : 0;
    bm_jobs_free(&J);
    json_t *doc = rc ? NULL : fr_json(&f);
    if (!rc && !doc) {
        fprintf(stderr, "tensile frontier: out of host memory\n");
        rc = 1;
    }
    if (!rc) {
        bt_table *md = fr_md_table(&f);
        if (out) {
            bt_table *rows = fr_rows_table(doc);
            if (write_files(out, rows, md)) rc = 1;
            else if (!no_figures && fig_run("frontier", "frontier_plot.py", out) < 0) rc = 1;
            bt_free(rows);
        } else if (!json) bt_print_md(md, stdout);
        if (json) {
            json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
            fputc('\n', stdout);
        }
        bt_free(md);
    }
    json_decref(doc);
    fr_free(&f);
    return rc;
}
