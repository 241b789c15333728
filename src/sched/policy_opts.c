/*
 * policy_opts.c - a policy's options, handled through its descriptors
 * (tensile/policy.h): defaults, range checks, and values set by name from
 * text (the command line, a daemon's messages) into an options struct that
 * owns its per-job lists (tsl_policy_opts).
 *
 * The field of an option is the descriptor's offset into the policy's
 * options struct, of the descriptor's kind: int (BOOL, INT), double
 * (DOUBLE) or tsl_per_job (PER_JOB). Messages name the policy, the option
 * as given on the command line, the field as C spells it (the option's
 * name with '_') and the value.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tensile/policy.h"

struct tsl_policy_opts {
    const tsl_policy *p;
    void *values;       /* p->opts_size bytes (NULL if 0) */
    double **lists;     /* per option: the per-job list the struct points at, owned */
};

static void *field(void *opts, const tsl_policy_option *o) { return (char *)opts + o->offset; }
static const void *cfield(const void *opts, const tsl_policy_option *o) {
    return (const char *)opts + o->offset;
}

/* The option's C field name: its name with '_' for '-'. */
static const char *c_name(const tsl_policy_option *o, char *buf, size_t len) {
    snprintf(buf, len, "%s", o->name);
    for (char *c = buf; *c; c++)
        if (*c == '-') *c = '_';
    return buf;
}

/* "a, b, c" (or "none") into buf. */
static const char *option_list(const tsl_policy *p, char *buf, size_t len) {
    size_t k = 0;
    buf[0] = 0;
    if (p->n_options == 0) snprintf(buf, len, "none");
    for (int i = 0; i < p->n_options && k + 1 < len; i++) {
        int m = snprintf(buf + k, len - k, "%s%s", i ? ", " : "", p->options[i].name);
        k = m < 0 ? k : k + (size_t)m;
    }
    return buf;
}

const tsl_policy_option *tsl_policy_option_find(const tsl_policy *p, const char *name) {
    for (int i = 0; i < p->n_options; i++)
        if (strcmp(p->options[i].name, name) == 0) return &p->options[i];
    char list[600];
    tsl_fail(TSL_ERR_INVALID, "policy '%s' has no option '%s' (its options: %s)", p->name, name,
             option_list(p, list, sizeof list));
    return NULL;
}

void tsl_policy_defaults(const tsl_policy *p, void *opts) {
    if (p->opts_size) memset(opts, 0, p->opts_size);
    for (int i = 0; i < p->n_options; i++) {
        const tsl_policy_option *o = &p->options[i];
        void *f = field(opts, o);
        switch (o->kind) {
        case TSL_OPT_BOOL:
        case TSL_OPT_INT: *(int *)f = (int)o->def; break;
        case TSL_OPT_DOUBLE: *(double *)f = o->def; break;
        case TSL_OPT_PER_JOB: *(tsl_per_job *)f = (tsl_per_job){o->def, 0, NULL}; break;
        }
    }
}

/* TSL_OK if x lies in o's range; else TSL_ERR_INVALID naming it (`index`
 * >= 0: the job of a per-job value). */
static tsl_status in_range(const tsl_policy *p, const tsl_policy_option *o, double x, int index) {
    if (x >= o->min && x <= o->max) return TSL_OK;
    char cn[80];
    if (index >= 0)
        return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: %s[%d] = %g outside [%g, %g]",
                        p->name, o->name, c_name(o, cn, sizeof cn), index, x, o->min, o->max);
    return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: %s = %g outside [%g, %g]", p->name,
                    o->name, c_name(o, cn, sizeof cn), x, o->min, o->max);
}

tsl_status tsl_policy_opts_check(const tsl_policy *p, const void *opts, int n_jobs) {
    for (int i = 0; i < p->n_options; i++) {
        const tsl_policy_option *o = &p->options[i];
        const void *f = cfield(opts, o);
        tsl_status st = TSL_OK;
        char cn[80];
        switch (o->kind) {
        case TSL_OPT_BOOL:
        case TSL_OPT_INT: st = in_range(p, o, *(const int *)f, -1); break;
        case TSL_OPT_DOUBLE: st = in_range(p, o, *(const double *)f, -1); break;
        case TSL_OPT_PER_JOB: {
            const tsl_per_job *x = f;
            if (x->n == 0) {
                st = in_range(p, o, x->all, -1);
                break;
            }
            if (x->n != n_jobs || !x->v)
                return tsl_fail(TSL_ERR_INVALID,
                                "policy '%s': option %s: %s has %d values for %d jobs (give one "
                                "value for every job, or one per job)",
                                p->name, o->name, c_name(o, cn, sizeof cn), x->n, n_jobs);
            for (int j = 0; j < x->n && st == TSL_OK; j++) st = in_range(p, o, x->v[j], j);
            break;
        }
        }
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

/* ---- values set by name ------------------------------------------------------------ */

tsl_status tsl_policy_opts_new(const tsl_policy *p, tsl_policy_opts **out) {
    *out = NULL;
    if (!p) return tsl_fail(TSL_ERR_INVALID, "policy options: no policy");
    tsl_policy_opts *o = calloc(1, sizeof *o);
    if (o) o->values = p->opts_size ? malloc(p->opts_size) : NULL;
    if (o) o->lists = calloc((size_t)p->n_options + 1, sizeof *o->lists);
    if (!o || (p->opts_size && !o->values) || !o->lists) {
        tsl_policy_opts_free(o);
        return tsl_fail(TSL_ERR_OOM, "policy '%s': out of host memory for its options", p->name);
    }
    o->p = p;
    if (p->opts_size) tsl_policy_defaults(p, o->values);
    *out = o;
    return TSL_OK;
}

void tsl_policy_opts_free(tsl_policy_opts *o) {
    if (!o) return;
    for (int i = 0; o->p && o->lists && i < o->p->n_options; i++) free(o->lists[i]);
    free(o->lists);
    free(o->values);
    free(o);
}

const void *tsl_policy_opts_values(const tsl_policy_opts *o) { return o->values; }
const tsl_policy *tsl_policy_opts_policy(const tsl_policy_opts *o) { return o->p; }

/* Parses one number of option o from [s, end) (no surrounding text).
 * TSL_ERR_INVALID naming it. */
static tsl_status parse_number(const tsl_policy *p, const tsl_policy_option *o, const char *s,
                               size_t len, double *x) {
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: '%.*s' is not a number",
                        p->name, o->name, (int)(len > 60 ? 60 : len), s);
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || end == buf || errno || !isfinite(v))
        return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: '%s' is not a number", p->name,
                        o->name, buf);
    if (o->kind == TSL_OPT_INT && v != floor(v))
        return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: '%s' is not an integer",
                        p->name, o->name, buf);
    *x = v;
    return TSL_OK;
}

/* A boolean word: 1/0, yes/no, true/false, on/off (any case). */
static int parse_bool(const char *s, int *b) {
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) return *b = 1, 1;
        if (!strcasecmp(s, no[i])) return *b = 0, 1;
    }
    return 0;
}

/* Sets a per-job option from "x" or "x,y,...". */
static tsl_status set_per_job(tsl_policy_opts *po, int i, const char *value) {
    const tsl_policy *p = po->p;
    const tsl_policy_option *o = &p->options[i];
    int n = 1;
    for (const char *c = value; *c; c++) n += *c == ',';
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return tsl_fail(TSL_ERR_OOM, "policy '%s': out of host memory", p->name);
    const char *s = value;
    for (int k = 0; k < n; k++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        tsl_status st = parse_number(p, o, s, len, &v[k]);
        if (st == TSL_OK) st = in_range(p, o, v[k], n > 1 ? k : -1);
        if (st != TSL_OK) {
            free(v);
            return st;
        }
        s = end ? end + 1 : s + len;
    }
    tsl_per_job *f = field(po->values, o);
    free(po->lists[i]);
    po->lists[i] = NULL;
    if (n == 1) {
        *f = (tsl_per_job){v[0], 0, NULL};
        free(v);
    } else {
        *f = (tsl_per_job){o->def, n, v};
        po->lists[i] = v;
    }
    return TSL_OK;
}

tsl_status tsl_policy_opts_set(tsl_policy_opts *po, const char *name, const char *value) {
    const tsl_policy *p = po->p;
    const tsl_policy_option *o = tsl_policy_option_find(p, name);
    if (!o) return TSL_ERR_INVALID;
    if (!value) return tsl_fail(TSL_ERR_INVALID, "policy '%s': option %s: no value", p->name, name);
    void *f = field(po->values, o);
    double x = 0.0;
    tsl_status st;
    switch (o->kind) {
    case TSL_OPT_BOOL: {
        int b;
        if (!parse_bool(value, &b))
            return tsl_fail(TSL_ERR_INVALID,
                            "policy '%s': option %s: '%s' is not a boolean (1, 0, yes, no, true, "
                            "false, on, off)",
                            p->name, name, value);
        *(int *)f = b;
        return TSL_OK;
    }
    case TSL_OPT_INT:
    case TSL_OPT_DOUBLE:
        st = parse_number(p, o, value, strlen(value), &x);
        if (st == TSL_OK) st = in_range(p, o, x, -1);
        if (st != TSL_OK) return st;
        if (o->kind == TSL_OPT_INT) *(int *)f = (int)x;
        else *(double *)f = x;
        return TSL_OK;
    case TSL_OPT_PER_JOB: return set_per_job(po, (int)(o - p->options), value);
    }
    return TSL_ERR_INVALID;
}
