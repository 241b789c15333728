/* frontier.c - see frontier.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "frontier.h"
#include "progress.h"
#include "tensile/models.h"

static const char *const COLUMNS[] = {
    "model", "batch", "profile", "policy", "fraction", "budget_bytes",
    "planned_footprint_bytes", "eor", "swaps", "recomputes", "planning_ms", "budget_met",
    /* extras */
    "msr", "image", "vanilla_footprint_bytes", "op_floor_bytes", "status", "solver_status",
    "solver_gap", "optimum_policy", "optimum_eor", "gap"};
#define N_COLUMNS ((int)(sizeof COLUMNS / sizeof *COLUMNS))

const char *fr_label(double x, char *buf, size_t n) {
    snprintf(buf, n, "%.2f", x);
    if (fabs(strtod(buf, NULL) - x) > 1e-12) snprintf(buf, n, "%g", x);
    return buf;
}

/* "[  12.3 s] resnet50 b16: what" on stderr. */
static void say(const fr_run *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const fr_run *f, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%7.1f s] %s b%d: %s\n", progress_now_s() - f->t0, f->spec.model,
            f->spec.batch, buf);
}

/* 1 if c's measurement is an integer program's proven optimum for its
 * budget: planned within it, the last solve optimal, not at a limit, the
 * budget not relaxed. */
static int proven(const fr_cell *c) {
    const tsl_solver_report *s = &c->r.solver;
    return !c->below_floor && c->r.state == BM_OK && s->used && !strcmp(s->status, "optimal") &&
           !s->hit_limit && !s->budget_relaxed;
}

/* The optimum of each budget: mosos's proven plan, else checkmate's. */
static void optima(fr_run *f) {
    static const char *const ILP[] = {"mosos", "checkmate"};
    for (int k = 0; k < f->nf; k++) {
        const fr_cell *best = NULL;
        const char *name = NULL;
        for (int i = 0; i < 2 && !best; i++)
            for (int p = 0; p < f->np; p++)
                if (!strcmp(f->policy[p], ILP[i]) && proven(&f->cell[p * f->nf + k])) {
                    best = &f->cell[p * f->nf + k];
                    name = ILP[i];
                }
        for (int p = 0; best && p < f->np; p++) {
            fr_cell *c = &f->cell[p * f->nf + k];
            c->has_optimum = 1;
            c->optimum_policy = name;
            c->optimum_eor = best->r.eor;
        }
    }
}

int fr_measure(fr_run *f, bm_jobs *J) {
    bm_result v;
    say(f, "vanilla ...");
    bm_measure(J, "vanilla", 0, NULL, &v);
    if (!bm_has_numbers(&v)) {
        fprintf(stderr, "tensile frontier: %s: vanilla: %s\n", f->spec.model, bm_state_text(&v));
        return -1;
    }
    f->vanilla_fp = v.vanilla_fp;
    f->vanilla_iter_us = v.vanilla_iter_us;
    f->image = f->spec.image ? f->spec.image : tsl_model_cfg_default(f->spec.model).image_size;
    int32_t op;
    f->floor = tsl_workload_op_floor(J->w[0], &op);
    snprintf(f->floor_op, sizeof f->floor_op, "%s", op >= 0 ? J->w[0]->ops[op].name : "-");
    char b1[32], b2[32];
    say(f, "vanilla footprint %s, op floor %s (%s), %.2f ms per iteration",
        fmt_bytes(f->vanilla_fp, b1, sizeof b1), fmt_bytes(f->floor, b2, sizeof b2), f->floor_op,
        f->vanilla_iter_us / 1000.0);
    f->cell = calloc((size_t)f->np * (size_t)f->nf, sizeof *f->cell);
    if (!f->cell) {
        fprintf(stderr, "tensile frontier: out of host memory\n");
        return -1;
    }
    for (int p = 0; p < f->np; p++)
        for (int k = 0; k < f->nf; k++) {
            fr_cell *c = &f->cell[p * f->nf + k];
            c->budget = bm_budget(f->fraction[k], f->vanilla_fp);
            if (c->budget < f->floor) {
                c->below_floor = 1;
                say(f, "%s at %.2f: below the op floor, not planned", f->policy[p],
                    f->fraction[k]);
                continue;
            }
            say(f, "%s at %.2f ...", f->policy[p], f->fraction[k]);
            bm_measure_isolated(J, f->policy[p], c->budget, &c->r);
            char text[64];
            if (c->r.state == BM_FAILED)
                say(f, "%s at %.2f: %s", f->policy[p], f->fraction[k], bm_state_text(&c->r));
            else
                say(f, "%s at %.2f: %s, planned in %.0f ms", f->policy[p], f->fraction[k],
                    bm_cell(&c->r, 0, text, sizeof text), c->r.planning_ms);
        }
    optima(f);
    return 0;
}

/* Sets key to a number, or null when `has` is 0. */
static void set_real(json_t *o, const char *key, int has, double x) {
    json_object_set_new(o, key, has && isfinite(x) ? json_real(x) : json_null());
}

static void set_int(json_t *o, const char *key, int has, long long x) {
    json_object_set_new(o, key, has ? json_integer((json_int_t)x) : json_null());
}

/* The row of cell (p, k). */
static json_t *row(const fr_run *f, int p, int k) {
    const fr_cell *c = &f->cell[p * f->nf + k];
    const bm_result *r = &c->r;
    int num = !c->below_floor && bm_has_numbers(r);
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "model", json_string(f->spec.model));
    json_object_set_new(o, "batch", json_integer(f->spec.batch));
    json_object_set_new(o, "profile", json_string(f->profile));
    json_object_set_new(o, "policy", json_string(f->policy[p]));
    json_object_set_new(o, "fraction", json_real(f->fraction[k]));
    set_int(o, "budget_bytes", 1, (long long)c->budget);
    set_int(o, "planned_footprint_bytes", num, (long long)r->planned_fp);
    set_real(o, "eor", num, r->eor);
    set_int(o, "swaps", num, r->swaps);
    set_int(o, "recomputes", num, r->recomputes);
    set_real(o, "planning_ms", num, r->planning_ms);
    set_int(o, "budget_met", 1, !c->below_floor && r->state == BM_OK);
    set_real(o, "msr", num, r->msr);
    set_int(o, "image", 1, f->image);
    set_int(o, "vanilla_footprint_bytes", 1, (long long)f->vanilla_fp);
    set_int(o, "op_floor_bytes", 1, (long long)f->floor);
    char status[400];
    if (c->below_floor) snprintf(status, sizeof status, "below the op floor (%zu bytes)", f->floor);
    else snprintf(status, sizeof status, "%s", bm_state_text(r));
    json_object_set_new(o, "status", json_string(status));
    char solver[64];
    snprintf(solver, sizeof solver, "%s%s%s", r->solver.status,
             r->solver.hit_limit ? " (time limit)" : "",
             r->solver.budget_relaxed ? " (budget relaxed)" : "");
    json_object_set_new(o, "solver_status", r->solver.used ? json_string(solver) : json_null());
    set_real(o, "solver_gap", r->solver.used, r->solver.gap);
    json_object_set_new(o, "optimum_policy",
                        c->has_optimum ? json_string(c->optimum_policy) : json_null());
    set_real(o, "optimum_eor", c->has_optimum, c->optimum_eor);
    set_real(o, "gap", c->has_optimum && num && r->state == BM_OK && c->optimum_eor > 0,
             r->eor / c->optimum_eor - 1.0);
    return o;
}

json_t *fr_json(const fr_run *f) {
    json_t *doc = json_object(), *rows = json_array();
    if (!doc || !rows) {
        json_decref(doc);
        json_decref(rows);
        return NULL;
    }
    json_object_set_new(doc, "model", json_string(f->spec.model));
    json_object_set_new(doc, "batch", json_integer(f->spec.batch));
    json_object_set_new(doc, "image", json_integer(f->image));
    json_object_set_new(doc, "optimizer_step", json_string(tool_step_names[f->spec.step]));
    json_object_set_new(doc, "profile", json_string(f->profile));
    json_object_set_new(doc, "vanilla_footprint_bytes", json_integer((json_int_t)f->vanilla_fp));
    json_object_set_new(doc, "vanilla_iter_ms", json_real(f->vanilla_iter_us / 1000.0));
    json_object_set_new(doc, "op_floor_bytes", json_integer((json_int_t)f->floor));
    json_object_set_new(doc, "op_floor_op", json_string(f->floor_op));
    for (int p = 0; p < f->np; p++)
        for (int k = 0; k < f->nf; k++) {
            json_t *o = row(f, p, k);
            if (!o || json_array_append_new(rows, o)) {
                json_decref(rows);
                json_decref(doc);
                return NULL;
            }
        }
    json_object_set_new(doc, "rows", rows);
    return doc;
}

bt_table *fr_rows_table(const json_t *doc) {
    bt_table *t = bt_new("frontier", "tensile frontier", N_COLUMNS, COLUMNS);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(doc, "rows"), i, o) {
        int r = bt_row(t);
        for (int c = 0; c < N_COLUMNS; c++) {
            json_t *v = json_object_get(o, COLUMNS[c]);
            if (json_is_integer(v)) bt_set(t, r, COLUMNS[c], "%" JSON_INTEGER_FORMAT,
                                           json_integer_value(v));
            else if (json_is_real(v)) bt_set(t, r, COLUMNS[c], "%.10g", json_real_value(v));
            else if (json_is_string(v)) bt_set(t, r, COLUMNS[c], "%s", json_string_value(v));
        }
    }
    return t;
}

bt_table *fr_md_table(const fr_run *f) {
    const char **cols = calloc((size_t)f->nf + 2, sizeof *cols);
    char(*fc)[32] = calloc((size_t)f->nf, sizeof *fc);
    if (!cols || !fc) {
        fprintf(stderr, "tensile frontier: out of host memory\n");
        exit(1);
    }
    cols[0] = "policy";
    for (int k = 0; k < f->nf; k++) {
        fr_label(f->fraction[k], fc[k], sizeof fc[k]);
        cols[1 + k] = fc[k];
    }
    cols[1 + f->nf] = "status";
    char title[400], b1[32], b2[32];
    snprintf(title, sizeof title, "tensile frontier: %s, batch %d, image %d, on %s%s - vanilla "
             "footprint %s, op floor %s (%.3f of vanilla, %s)", f->spec.model, f->spec.batch,
             f->image, f->profile,
             f->spec.step == TSL_STEP_AFTER_BACKWARD ? ", updates after the backward" : "",
             fmt_bytes(f->vanilla_fp, b1, sizeof b1), fmt_bytes(f->floor, b2, sizeof b2),
             f->vanilla_fp ? (double)f->floor / (double)f->vanilla_fp : 0.0, f->floor_op);
    bt_table *t = bt_new("frontier", title, f->nf + 2, cols);
    int any_optimum = 0, tensile = -1;
    for (int p = 0; p < f->np; p++) {
        int r = bt_row(t);
        bt_set(t, r, "policy", "%s", f->policy[p]);
        if (!strcmp(f->policy[p], "tensile")) tensile = p;
        const char *status = "ok";
        for (int k = 0; k < f->nf; k++) {
            const fr_cell *c = &f->cell[p * f->nf + k];
            char text[64];
            if (c->below_floor) bt_set(t, r, cols[1 + k], "below floor");
            else bt_set(t, r, cols[1 + k], "%s", bm_cell(&c->r, 0, text, sizeof text));
            if (!c->below_floor && (c->r.state == BM_FAILED || c->r.state == BM_UNAVAILABLE) &&
                !strcmp(status, "ok"))
                status = bm_state_text(&c->r);
            any_optimum |= c->has_optimum;
        }
        bt_set(t, r, "status", "%s", status);
    }
    if (any_optimum) {
        int r = bt_row(t), g = tensile >= 0 ? bt_row(t) : -1;
        bt_set(t, r, "policy", "proven optimum (integer program)");
        if (g >= 0) bt_set(t, g, "policy", "tensile's gap to it");
        for (int k = 0; k < f->nf; k++) {
            const fr_cell *c = &f->cell[k]; /* every policy's cell holds the budget's optimum */
            if (c->has_optimum)
                bt_set(t, r, cols[1 + k], "%.4f (%s)", c->optimum_eor,
                       strcmp(c->optimum_policy, "checkmate") ? c->optimum_policy
                                                              : "checkmate, recomputation only");
            else bt_set(t, r, cols[1 + k], "-");
            if (g < 0) continue;
            const fr_cell *tc = &f->cell[tensile * f->nf + k];
            if (c->has_optimum && tc->r.state == BM_OK && !tc->below_floor)
                bt_set(t, g, cols[1 + k], "%+.1f %%", 100.0 * (tc->r.eor / c->optimum_eor - 1));
            else bt_set(t, g, cols[1 + k], "-");
        }
        bt_set(t, r, "status", "the plan an integer program proved optimal in its own "
               "model, simulated; checkmate's is optimal among recomputation-only plans");
        if (g >= 0) bt_set(t, g, "status", "EOR / optimum - 1");
    }
    bt_note(t, "Simulated on profile %s (Adam). Each cell: the simulated EOR (iteration time / "
            "vanilla's, %.2f ms) of the policy's plan for a footprint budget of that fraction of "
            "vanilla's footprint; \"unmet (MSR x)\": its plan saves only x of the footprint; "
            "\"below floor\": the budget is below the op floor (the largest working set of one "
            "op, %zu bytes, %s), which no plan can go under: not planned; \"n/a\": the policy is "
            "not in this build.", f->profile, f->vanilla_iter_us / 1000.0, f->floor, f->floor_op);
    free(cols);
    free(fc);
    return t;
}

void fr_free(fr_run *f) {
    free(f->cell);
    f->cell = NULL;
}
