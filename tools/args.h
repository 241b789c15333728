/*
 * args.h - strict command-line parsing for the tensile subcommands.
 *
 * Every parser either stores a valid value or prints
 *   tensile SUBCOMMAND: --OPTION: 'VALUE' is not ... (expected ...)
 * on stderr and exits with status 2: a bad argument never runs anything.
 */
#ifndef TSL_TOOLS_ARGS_H
#define TSL_TOOLS_ARGS_H
#include <stddef.h>
#include <stdint.h>

typedef struct tsl_args {
    const char *cmd;   /* subcommand name, for messages */
    int argc;
    char **argv;
    int i;             /* next argument */
} tsl_args;

/* The next option name ("--model") or NULL at the end; a positional
 * argument is an error (exit 2). Accepts "--opt=value" too. */
const char *args_next(tsl_args *a);
/* The value of the option just returned (exit 2 if missing). */
const char *args_value(tsl_args *a, const char *opt);

int64_t args_int(tsl_args *a, const char *opt, int64_t lo, int64_t hi);
/* A decimal integer (an optional '-', then digits only: no spaces, no '+',
 * no hex) in [lo, hi]: returns 0 and sets *out; -1 if malformed, -2 if out
 * of range (*out untouched). */
int args_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
double args_double(tsl_args *a, const char *opt, double lo, double hi);
/* Sizes: plain bytes or with a suffix K, M, G, T, KB, MB, GB, KiB, MiB, GiB
 * (all powers of 1024), e.g. "4GiB", "512M", "1.5G". */
size_t args_size(tsl_args *a, const char *opt);
/* One of the NULL-terminated choices; returns its index. */
int args_choice(tsl_args *a, const char *opt, const char *const *choices);
/* Parses a size string: a decimal number (digits and at most one '.', an
 * optional exponent; no sign, no spaces, no hex) with an optional suffix
 * as for args_size. Returns 0 and sets *out (whole bytes, rounded down,
 * below TSL_ARGS_MAX_SIZE), or -1 if malformed or larger (*out untouched). */
int args_parse_size(const char *s, size_t *out);
/* The largest size args_parse_size accepts: 2^62 bytes (4 EiB). */
#define TSL_ARGS_MAX_SIZE ((size_t)1 << 62)
/* Parses a percentage "P%": P a decimal number as above, with 0 < P <= 1000.
 * Returns 0 and sets *pct to P, or -1 (*pct untouched). */
int args_parse_percent(const char *s, double *pct);

/* Prints "tensile CMD: MESSAGE" and "try 'tensile CMD --help'", exits 2. */
void args_die(tsl_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* "12.3 MiB" style (B to EiB), into buf. */
const char *fmt_bytes(size_t bytes, char *buf, size_t len);
#endif
