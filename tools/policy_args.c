/* policy_args.c - see policy_args.h. */
#include "policy_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

policy_pairs policy_pairs_new(tsl_args *a, int cap) {
    policy_pairs pp = {0};
    pp.cap = cap > 0 ? cap : 1;
    pp.name = calloc((size_t)pp.cap, sizeof *pp.name);
    pp.value = calloc((size_t)pp.cap, sizeof *pp.value);
    if (!pp.name || !pp.value) args_die(a, "out of host memory");
    return pp;
}

void policy_pairs_add(tsl_args *a, policy_pairs *pp, const char *name, const char *value) {
    if (pp->n == pp->cap) args_die(a, "more policy options than arguments");
    pp->name[pp->n] = strdup(name);
    if (!pp->name[pp->n]) args_die(a, "out of host memory");
    pp->value[pp->n++] = value;
}

void policy_pairs_free(policy_pairs *pp) {
    for (int i = 0; i < pp->n; i++) free(pp->name[i]);
    free(pp->name);
    free(pp->value);
    memset(pp, 0, sizeof *pp);
}

tsl_policy_opts *policy_pairs_apply(tsl_args *a, policy_pairs *pp, const char *name) {
    const tsl_policy *p = tsl_policy_find(name);
    if (!p) args_die(a, "--policy: %s", tsl_last_error());
    tsl_policy_opts *o;
    if (tsl_policy_opts_new(p, &o) != TSL_OK) args_die(a, "%s", tsl_last_error());
    for (int i = 0; i < pp->n; i++) {
        if (!tsl_policy_option_find(p, pp->name[i]))
            args_die(a, "unknown option '--%s' (%s)", pp->name[i], tsl_last_error());
        if (tsl_policy_opts_set(o, pp->name[i], pp->value[i]) != TSL_OK)
            args_die(a, "--%s: %s", pp->name[i], tsl_last_error());
    }
    policy_pairs_free(pp);
    return o;
}

void policy_opts_check_jobs(tsl_args *a, const tsl_policy_opts *o, int n_jobs) {
    const void *v = tsl_policy_opts_values(o);
    if (v && tsl_policy_opts_check(tsl_policy_opts_policy(o), v, n_jobs) != TSL_OK)
        args_die(a, "%s", tsl_last_error());
}

void print_policies(void) {
    printf("\npolicies (--policy NAME) and their options (--OPTION VALUE):\n");
    for (int i = 0; i < tsl_policy_count(); i++) {
        const tsl_policy *p = tsl_policy_at(i);
        printf("  %-22s %s\n", p->name, p->summary);
        for (int k = 0; k < p->n_options; k++) {
            const tsl_policy_option *o = &p->options[k];
            static const char *const meta[] = {"B", "N", "X", "X[,X...]"};
            char flag[96];
            snprintf(flag, sizeof flag, "--%s %s", o->name, meta[o->kind]);
            printf("    %-24s %s\n", flag, o->help);
            if (o->kind == TSL_OPT_BOOL)
                printf("    %-24s (default %g: 0 or 1)\n", "", o->def);
            else
                printf("    %-24s (default %g; %g..%g%s)\n", "", o->def, o->min, o->max,
                       o->kind == TSL_OPT_PER_JOB ? "; one value, or one per job" : "");
        }
    }
}
