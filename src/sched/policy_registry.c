/*
 * policy_registry.c - the registry of planning policies (tensile/policy.h):
 * the built-in ones, one line each in BUILTIN below (adding a policy is
 * its file and that line), then those registered at run time.
 *
 * The registered list grows under one mutex, and lookups take it too, so
 * that registration and lookups may run from any threads. A registered
 * policy is never removed: the pointers handed out stay valid.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/policy.h"

/* The built-in policies, in the order --help lists them. */
#define BUILTIN(X) \
    X(tsl__policy_vanilla) \
    X(tsl__policy_tensile) \
    X(tsl__policy_vdnn_conv) \
    X(tsl__policy_vdnn_all) \
    X(tsl__policy_autoswap) \
    X(tsl__policy_capuchin) \
    X(tsl__policy_dtr) \
    X(tsl__policy_checkmate) \
    X(tsl__policy_str) \
    X(tsl__policy_mosos)

#define DECLARE(p) extern const tsl_policy p;
BUILTIN(DECLARE)
#define ENTRY(p) &p,
static const tsl_policy *const builtin[] = {BUILTIN(ENTRY)};
#define N_BUILTIN ((int)(sizeof builtin / sizeof builtin[0]))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const tsl_policy **added; /* guarded by mu */
static int n_added, cap_added;

int tsl_policy_count(void) {
    pthread_mutex_lock(&mu);
    int n = N_BUILTIN + n_added;
    pthread_mutex_unlock(&mu);
    return n;
}

const tsl_policy *tsl_policy_at(int i) {
    if (i < 0) return NULL;
    if (i < N_BUILTIN) return builtin[i];
    pthread_mutex_lock(&mu);
    const tsl_policy *p = i - N_BUILTIN < n_added ? added[i - N_BUILTIN] : NULL;
    pthread_mutex_unlock(&mu);
    return p;
}

/* The policy called name, or NULL (mu held). */
static const tsl_policy *find_locked(const char *name) {
    for (int i = 0; i < N_BUILTIN; i++)
        if (strcmp(builtin[i]->name, name) == 0) return builtin[i];
    for (int i = 0; i < n_added; i++)
        if (strcmp(added[i]->name, name) == 0) return added[i];
    return NULL;
}

const tsl_policy *tsl_policy_find(const char *name) {
    if (!name) {
        tsl_fail(TSL_ERR_INVALID, "policy: no name given");
        return NULL;
    }
    pthread_mutex_lock(&mu);
    const tsl_policy *p = find_locked(name);
    if (!p) {
        char known[600];
        size_t k = 0;
        known[0] = 0;
        for (int i = 0; i < N_BUILTIN + n_added && k + 1 < sizeof known; i++) {
            const tsl_policy *q = i < N_BUILTIN ? builtin[i] : added[i - N_BUILTIN];
            int m = snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", q->name);
            k = m < 0 ? k : k + (size_t)m;
        }
        tsl_fail(TSL_ERR_INVALID, "unknown policy '%s' (known: %s)", name, known);
    }
    pthread_mutex_unlock(&mu);
    return p;
}

/* TSL_OK if p's name, plan function and option descriptors are well formed;
 * TSL_ERR_INVALID naming the field otherwise. */
static tsl_status check_policy(const tsl_policy *p) {
    if (!p) return tsl_fail(TSL_ERR_INVALID, "register policy: NULL");
    const char *nm = p->name;
    if (!nm || !nm[0] || strlen(nm) > 63 || strspn(nm, "abcdefghijklmnopqrstuvwxyz0123456789-") !=
                                                 strlen(nm))
        return tsl_fail(TSL_ERR_INVALID,
                        "register policy: name '%s' must be 1 to 63 characters of [a-z0-9-]",
                        nm ? nm : "(null)");
    if (!p->plan) return tsl_fail(TSL_ERR_INVALID, "register policy '%s': no plan function", nm);
    if (p->n_options < 0 || (p->n_options > 0 && (!p->options || p->opts_size == 0)))
        return tsl_fail(TSL_ERR_INVALID,
                        "register policy '%s': %d options need their descriptors and an options "
                        "struct (opts_size %zu)",
                        nm, p->n_options, p->opts_size);
    for (int i = 0; i < p->n_options; i++) {
        const tsl_policy_option *o = &p->options[i];
        size_t size = o->kind == TSL_OPT_DOUBLE    ? sizeof(double)
                      : o->kind == TSL_OPT_PER_JOB ? sizeof(tsl_per_job)
                                                   : sizeof(int);
        if (!o->name || !o->name[0] ||
            strspn(o->name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(o->name))
            return tsl_fail(TSL_ERR_INVALID,
                            "register policy '%s': option %d: name '%s' must be [a-z0-9-]", nm, i,
                            o->name ? o->name : "(null)");
        if ((unsigned)o->kind > TSL_OPT_PER_JOB || o->offset + size > p->opts_size)
            return tsl_fail(TSL_ERR_INVALID,
                            "register policy '%s': option '%s': kind %d at offset %zu does not "
                            "fit the options struct (%zu bytes)",
                            nm, o->name, (int)o->kind, o->offset, p->opts_size);
        if (!(o->min <= o->def && o->def <= o->max))
            return tsl_fail(TSL_ERR_INVALID,
                            "register policy '%s': option '%s': default %g outside [%g, %g]", nm,
                            o->name, o->def, o->min, o->max);
        if ((o->kind == TSL_OPT_BOOL || o->kind == TSL_OPT_INT) &&
            (o->min < INT_MIN || o->max > INT_MAX || o->min != floor(o->min) ||
             o->max != floor(o->max) || o->def != floor(o->def)))
            return tsl_fail(TSL_ERR_INVALID,
                            "register policy '%s': option '%s': an integer option needs integer "
                            "bounds and default within an int, got [%g, %g] and %g",
                            nm, o->name, o->min, o->max, o->def);
        for (int k = 0; k < i; k++)
            if (strcmp(p->options[k].name, o->name) == 0)
                return tsl_fail(TSL_ERR_INVALID, "register policy '%s': option '%s' twice", nm,
                                o->name);
    }
    return TSL_OK;
}

tsl_status tsl_policy_register(const tsl_policy *p) {
    tsl_status st = check_policy(p);
    if (st != TSL_OK) return st;
    pthread_mutex_lock(&mu);
    if (find_locked(p->name)) {
        pthread_mutex_unlock(&mu);
        return tsl_fail(TSL_ERR_INVALID, "register policy: the name '%s' is taken", p->name);
    }
    if (n_added == cap_added) {
        int cap = cap_added ? 2 * cap_added : 8;
        const tsl_policy **a = realloc(added, (size_t)cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&mu);
            return tsl_fail(TSL_ERR_OOM, "register policy '%s': out of host memory", p->name);
        }
        added = a;
        cap_added = cap;
    }
    added[n_added++] = p;
    pthread_mutex_unlock(&mu);
    return TSL_OK;
}
