/*
 * policy_args.h - a planning policy and its options on the command line
 * (tensile plan, tensile run): --policy NAME, and the policy's own options
 * as --OPTION VALUE pairs, applied once the whole command line is read (so
 * they may come before or after --policy); and the --help listing of the
 * registry's policies with their options.
 *
 * Example usage:
 *
 *   policy_pairs pp = policy_pairs_new(&a, argc);
 *   ... else if (!strncmp(o, "--", 2)) policy_pairs_add(&a, &pp, o + 2, args_value(&a, o));
 *   tsl_policy_opts *po = policy_pairs_apply(&a, &pp, "autoswap");  // frees the pairs
 *   policy_opts_check_jobs(&a, po, n_jobs);
 *   ... tsl_policy_opts_policy(po), tsl_policy_opts_values(po) ...
 *   tsl_policy_opts_free(po);
 */
#ifndef TSL_TOOLS_POLICY_ARGS_H
#define TSL_TOOLS_POLICY_ARGS_H
#include "args.h"
#include "tensile/policy.h"

/* The --OPTION VALUE pairs of a command line, kept until the policy is
 * known. */
typedef struct policy_pairs {
    char **name;        /* without "--", owned */
    const char **value; /* argv's */
    int n, cap;
} policy_pairs;

/* Room for `cap` pairs (at most one per argument; exit 2 if out of host
 * memory). */
policy_pairs policy_pairs_new(tsl_args *a, int cap);
/* Keeps option `name` (without "--") and its value (exit 2 if out of host
 * memory or beyond the room). */
void policy_pairs_add(tsl_args *a, policy_pairs *pp, const char *name, const char *value);
/* The options of the policy called `name` with every pair set; the pairs
 * are freed. Exits 2 naming the policy (an unknown one lists the known
 * names), the option and the value on any error. */
tsl_policy_opts *policy_pairs_apply(tsl_args *a, policy_pairs *pp, const char *name);
/* Checks o for planning n_jobs jobs (every value in range, per-job options
 * with one value or one per job); exits 2 with the message if not. */
void policy_opts_check_jobs(tsl_args *a, const tsl_policy_opts *o, int n_jobs);
/* Frees the pairs (policy_pairs_apply does; for an early exit). */
void policy_pairs_free(policy_pairs *pp);

/* Prints the registry's policies and each one's options (for --help). */
void print_policies(void);
#endif
