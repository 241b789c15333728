/* bench_paper.c - what the table groups of `tensile bench paper` share
 * (see bench_paper.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "bench_paper.h"
#include "progress.h"
#include "tensile/sched_json.h"

void bp_progress(const bp_ctx *c, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%7.1f s] %s\n", progress_now_s() - c->t0, buf);
}

void bp_finish(bp_ctx *c, bt_table *t) {
    if (bt_write(t, c->out, c->index) != 0) c->errors++;
    bt_free(t);
}

int bp_profile(const char *name, tsl_device_profile *dev) {
    if (tsl_profile_load(name, dev) == TSL_OK) return 0;
    fprintf(stderr, "tensile bench: profile '%s': %s\n", name, tsl_last_error());
    return -1;
}

void bp_set_metrics(bt_table *t, int r, const bm_result *m) {
    if (bm_has_numbers(m)) {
        bt_set(t, r, "MSR", "%.4f", m->msr);
        bt_set(t, r, "EOR", "%.4f", m->eor);
        bt_set(t, r, "CBR", "%.4f", m->cbr);
    } else {
        bt_set(t, r, "MSR", "-");
        bt_set(t, r, "EOR", "-");
        bt_set(t, r, "CBR", "-");
    }
    bt_set(t, r, "status", "%s", bm_state_text(m));
}

void bp_set_paper(bt_table *t, int r, const pn_metrics *p, const char *none) {
    if (p) {
        bt_set(t, r, "paper MSR", "%.4f", p->msr);
        bt_set(t, r, "paper EOR", "%.4f", p->eor);
        bt_set(t, r, "paper CBR", "%.4f", p->cbr);
    } else {
        bt_set(t, r, "paper MSR", "%s", none);
        bt_set(t, r, "paper EOR", "%s", none);
        bt_set(t, r, "paper CBR", "%s", none);
    }
}

/* "yes", "tie" or "no": does x beat y (higher is better when hi). */
static const char *beats(double x, double y, int hi) {
    if (fabs(x - y) <= 0.0005) return "tie";
    return (hi ? x > y : x < y) ? "yes" : "no";
}

const char *bp_verdict(const bm_result *a, const bm_result *b, char *buf, size_t n) {
    if (!bm_has_numbers(a) || !bm_has_numbers(b)) snprintf(buf, n, "-");
    else
        snprintf(buf, n, "MSR %s, EOR %s, CBR %s", beats(a->msr, b->msr, 1),
                 beats(a->eor, b->eor, 0), beats(a->cbr, b->cbr, 1));
    return buf;
}

double bp_mib(size_t bytes) { return (double)bytes / 1048576.0; }
