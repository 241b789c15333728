/* args.c - see args.h. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *pending_value; /* from --opt=value */

void args_die(tsl_args *a, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tensile %s: ", a->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'tensile %s --help'\n", a->cmd);
    exit(2);
}

const char *args_next(tsl_args *a) {
    static char name[128];
    if (pending_value) args_die(a, "option '%s' takes no value", name);
    if (a->i >= a->argc) return NULL;
    const char *s = a->argv[a->i++];
    if (strncmp(s, "--", 2) != 0 && strcmp(s, "-h") != 0)
        args_die(a, "unexpected argument '%s' (options start with --)", s);
    const char *eq = strchr(s, '=');
    if (eq) {
        size_t n = (size_t)(eq - s) < sizeof name - 1 ? (size_t)(eq - s) : sizeof name - 1;
        memcpy(name, s, n);
        name[n] = '\0';
        pending_value = eq + 1;
        return name;
    }
    snprintf(name, sizeof name, "%s", s);
    return name;
}

const char *args_value(tsl_args *a, const char *opt) {
    if (pending_value) {
        const char *v = pending_value;
        pending_value = NULL;
        return v;
    }
    if (a->i >= a->argc) args_die(a, "%s needs a value", opt);
    return a->argv[a->i++];
}

int64_t args_int(tsl_args *a, const char *opt, int64_t lo, int64_t hi) {
    const char *v = args_value(a, opt);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        args_die(a, "%s: '%s' is not an integer", opt, v);
    if (x < lo || x > hi)
        args_die(a, "%s: %lld is out of range (expected %lld..%lld)", opt, x, (long long)lo,
                 (long long)hi);
    return x;
}

double args_double(tsl_args *a, const char *opt, double lo, double hi) {
    const char *v = args_value(a, opt);
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        args_die(a, "%s: '%s' is not a number", opt, v);
    if (x < lo || x > hi) args_die(a, "%s: %g is out of range (expected %g..%g)", opt, x, lo, hi);
    return x;
}

int args_parse_size(const char *s, size_t *out) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || !(x >= 0) || !isfinite(x)) return -1;
    static const struct { const char *suf; double mul; } sufs[] = {
        {"", 1},         {"b", 1},
        {"k", 1024.0},   {"kb", 1024.0},   {"kib", 1024.0},
        {"m", 1048576.0}, {"mb", 1048576.0}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gb", 1073741824.0}, {"gib", 1073741824.0},
        {"t", 1099511627776.0}, {"tb", 1099511627776.0}, {"tib", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (strcasecmp(end, sufs[i].suf) == 0) {
            double b = x * sufs[i].mul;
            if (b >= 1.8e19) return -1;
            *out = (size_t)b;
            return 0;
        }
    return -1;
}

size_t args_size(tsl_args *a, const char *opt) {
    const char *v = args_value(a, opt);
    size_t s;
    if (args_parse_size(v, &s) != 0 || s == 0)
        args_die(a, "%s: '%s' is not a size (examples: 4GiB, 512MiB, 1073741824)", opt, v);
    return s;
}

int args_choice(tsl_args *a, const char *opt, const char *const *choices) {
    const char *v = args_value(a, opt);
    for (int i = 0; choices[i]; i++)
        if (strcmp(v, choices[i]) == 0) return i;
    char list[512] = "";
    for (int i = 0; choices[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    args_die(a, "%s: unknown value '%s' (expected one of: %s)", opt, v, list);
}

const char *fmt_bytes(size_t bytes, char *buf, size_t len) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)bytes;
    int i = 0;
    while (x >= 1024.0 && i < 4) {
        x /= 1024.0;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", x, u[i]);
    return buf;
}
