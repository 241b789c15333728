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

int args_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    const char *d = s[0] == '-' ? s + 1 : s;
    if (!*d) return -1;
    for (const char *c = d; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end) return -1;
    if (errno == ERANGE || x < lo || x > hi) return -2;
    *out = x;
    return 0;
}

int64_t args_int(tsl_args *a, const char *opt, int64_t lo, int64_t hi) {
    const char *v = args_value(a, opt);
    int64_t x = 0;
    int rc = args_parse_int(v, lo, hi, &x);
    if (rc == -1) args_die(a, "%s: '%s' is not an integer", opt, v);
    if (rc == -2)
        args_die(a, "%s: %s is out of range (expected %lld..%lld)", opt, v, (long long)lo,
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

/* A decimal number with no sign, space or hex: digits with at most one
 * '.', then an optional exponent. Returns its value and sets *end past it,
 * or returns -1 if s does not start with one. */
static double plain_number(const char *s, const char **end) {
    const char *c = s;
    int digits = 0;
    while (*c >= '0' && *c <= '9') c++, digits++;
    if (*c == '.') {
        c++;
        while (*c >= '0' && *c <= '9') c++, digits++;
    }
    if (!digits) return -1;
    if (*c == 'e' || *c == 'E') {
        const char *e = c + 1;
        if (*e == '+' || *e == '-') e++;
        if (*e >= '0' && *e <= '9') {
            while (*e >= '0' && *e <= '9') e++;
            c = e;
        }
    }
    char buf[64];
    if ((size_t)(c - s) >= sizeof buf) return -1;
    memcpy(buf, s, (size_t)(c - s));
    buf[c - s] = '\0';
    double x = strtod(buf, NULL); /* overflow: HUGE_VAL, refused by the callers' bounds */
    *end = c;
    return isfinite(x) ? x : -1;
}

int args_parse_size(const char *s, size_t *out) {
    const char *end;
    double x = plain_number(s, &end);
    if (!(x >= 0)) return -1;
    static const struct { const char *suf; int shift; } sufs[] = {
        {"", 0},    {"b", 0},
        {"k", 10},  {"kb", 10}, {"kib", 10},
        {"m", 20},  {"mb", 20}, {"mib", 20},
        {"g", 30},  {"gb", 30}, {"gib", 30},
        {"t", 40},  {"tb", 40}, {"tib", 40},
    };
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
        if (strcasecmp(end, sufs[i].suf) == 0) {
            size_t digits = strspn(s, "0123456789");
            if (s + digits == end) { /* a whole number: exact, not through a double */
                if (digits > 19) return -1;
                unsigned long long v = strtoull(s, NULL, 10);
                if (v > (unsigned long long)(TSL_ARGS_MAX_SIZE - 1) >> sufs[i].shift) return -1;
                *out = (size_t)(v << sufs[i].shift);
                return 0;
            }
            double b = ldexp(x, sufs[i].shift);
            if (!(b < (double)TSL_ARGS_MAX_SIZE)) return -1;
            *out = (size_t)b;
            return 0;
        }
    return -1;
}

int args_parse_percent(const char *s, double *pct) {
    const char *end;
    double x = plain_number(s, &end);
    if (!(x > 0) || x > 1000 || strcmp(end, "%") != 0) return -1;
    *pct = x;
    return 0;
}

size_t args_size(tsl_args *a, const char *opt) {
    const char *v = args_value(a, opt);
    size_t s;
    if (args_parse_size(v, &s) != 0 || s == 0)
        args_die(a, "%s: '%s' is not a size of 1 byte to 4 EiB (examples: 4GiB, 512MiB, "
                 "1073741824)", opt, v);
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
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double x = (double)bytes;
    int i = 0;
    while (x >= 1024.0 && i < 6) {
        x /= 1024.0;
        i++;
    }
    snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", x, u[i]);
    return buf;
}
