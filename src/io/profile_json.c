/*
 * profile_json.c - device profiles as files: the figures the cost model, the planner and
 * the simulator use for one device, kept as JSON in profiles/NAME.json:
 *
 *   {"name": "a6000", "source": "where the figures come from",
 *    "notes": "optional", "efficiency": 0.6,             (optional)
 *    "flops": 2.322e13, "mem_bw": 7.68e11, "mem_bytes": 51539607552,
 *    "h2d_bw": 2.4e10, "d2h_bw": 2.4e10, "duplex": 1,
 *    "launch_us": 5, "copy_latency_us": 10}
 *
 * Units: FLOP/s, bytes/s, bytes, µs. Every field but "notes" and
 * "efficiency" is required; no other field is allowed. "efficiency" only
 * documents the fraction of the published peak FLOP rate that "flops"
 * holds: the cost model uses "flops" as given.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/json_util.h"
#include "io/read_file.h"
#include "core/assert.h"
#include "tensile/sched_json.h"

#define MAX_FILE (1 << 20) /* bytes of a profile file */

/* ---- validation ---------------------------------------------------------------- */

/* The numeric fields, their place in the struct, their range. A rate below
 * `lo` makes one op or one copy take longer than any plan can hold (a
 * denormal FLOP rate turns every op time into infinity), so it is refused
 * with the field named rather than met later as an absurd op time. */
typedef struct num_field {
    const char *key;
    size_t offset;
    double lo; /* values must lie in [lo, hi]; lo 0: in (0, hi] */
    double hi;
} num_field;

static const num_field num_fields[] = {
    {"flops", offsetof(tsl_device_profile, flops), 1e6, 1e18},
    {"mem_bw", offsetof(tsl_device_profile, mem_bw), 1e6, 1e15},
    {"h2d_bw", offsetof(tsl_device_profile, h2d_bw), 1e6, 1e15},
    {"d2h_bw", offsetof(tsl_device_profile, d2h_bw), 1e6, 1e15},
    {"launch_us", offsetof(tsl_device_profile, launch_us), 0, 1e6},
    {"copy_latency_us", offsetof(tsl_device_profile, copy_latency_us), 0, 1e6},
};
#define N_NUM ((int)(sizeof num_fields / sizeof num_fields[0]))
#define MAX_MEM_BYTES ((uint64_t)1 << 56)

static double *num_at(tsl_device_profile *p, int i) {
    return (double *)(void *)((char *)p + num_fields[i].offset);
}

/* The shortest %g form of a finite x that reads back to the same double. */
static void fmt_real(double x, char buf[32]) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* "[1e+06, 1e+18]" or "(0, 1e+06]": the accepted range of a field. */
static const char *range_str(const num_field *f, char *buf, size_t n) {
    if (f->lo > 0) snprintf(buf, n, "[%g, %g]", f->lo, f->hi);
    else snprintf(buf, n, "(0, %g]", f->hi);
    return buf;
}

/* 1 if s holds a control character (below 0x20, or DEL), which a name
 * printed to a terminal must not carry. */
static int has_control(const char *s) {
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f) return 1;
    return 0;
}

/* Checks the values of a profile; `file` labels the message. TSL_ERR_INVALID
 * naming the field and value. */
static tsl_status check_values(const char *file, const tsl_device_profile *p) {
    size_t nl = strnlen(p->name, sizeof p->name);
    if (nl == 0 || nl >= sizeof p->name)
        return tsl_fail(TSL_ERR_INVALID, "%s: field 'name': must have 1 to %zu characters", file,
                        sizeof p->name - 1);
    if (has_control(p->name))
        return tsl_fail(TSL_ERR_INVALID, "%s: field 'name': holds a control character", file);
    for (int i = 0; i < N_NUM; i++) {
        double x = *num_at((tsl_device_profile *)p, i);
        if (!(x > 0) || !(x <= num_fields[i].hi) || x < num_fields[i].lo) {
            char b[32], range[64];
            fmt_real(isfinite(x) ? x : 0, b);
            return tsl_fail(TSL_ERR_INVALID, "%s: field '%s': %s is outside %s", file,
                            num_fields[i].key, isfinite(x) ? b : "a non-finite value",
                            range_str(&num_fields[i], range, sizeof range));
        }
    }
    if (p->mem_bytes == 0 || (uint64_t)p->mem_bytes > MAX_MEM_BYTES)
        return tsl_fail(TSL_ERR_INVALID, "%s: field 'mem_bytes': %zu is outside 1..%llu", file,
                        p->mem_bytes, (unsigned long long)MAX_MEM_BYTES);
    if (p->duplex != 0 && p->duplex != 1)
        return tsl_fail(TSL_ERR_INVALID, "%s: field 'duplex': %d is not 0 or 1", file, p->duplex);
    return TSL_OK;
}

/* ---- parsing ---------------------------------------------------------------------- */

static tsl_status __attribute__((format(printf, 3, 4)))
bad(const char *file, const char *key, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key) return tsl_fail(TSL_ERR_FORMAT, "%s: field '%s': %s", file, key, msg);
    return tsl_fail(TSL_ERR_FORMAT, "%s: %s", file, msg);
}

/* A required string field of 1 to maxlen-1 characters. */
static tsl_status get_string(const char *file, json_t *root, const char *key, size_t maxlen,
                             const char **out) {
    char vb[80];
    json_t *v = json_object_get(root, key);
    if (!v) return bad(file, key, "missing");
    if (!json_is_string(v))
        return bad(file, key, "%s is not a string", tsl__json_value_str(v, vb, sizeof vb));
    size_t len = json_string_length(v);
    if (len == 0 || len >= maxlen)
        return bad(file, key, "%s has %zu characters (expected 1 to %zu)",
                   tsl__json_value_str(v, vb, sizeof vb), len, maxlen - 1);
    *out = json_string_value(v);
    return TSL_OK;
}

/* Fills *p from the root object of a profile file: no unknown field, every
 * required field present with its type and range. TSL_ERR_FORMAT naming the
 * field and the value. */
static tsl_status parse_profile(const char *file, json_t *root, tsl_device_profile *p) {
    static const char *const known[] = {"name", "source", "notes", "efficiency", "flops",
                                        "mem_bw", "mem_bytes", "h2d_bw", "d2h_bw", "duplex",
                                        "launch_us", "copy_latency_us"};
    char vb[80];
    if (!json_is_object(root))
        return bad(file, NULL, "expected a JSON object, got %s", tsl__json_value_str(root, vb, sizeof vb));
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok)
            return bad(file, NULL,
                       "unknown field '%s' (expected name, source, notes, efficiency, flops, "
                       "mem_bw, mem_bytes, h2d_bw, d2h_bw, duplex, launch_us, copy_latency_us)",
                       k);
    }
    memset(p, 0, sizeof *p);
    const char *s;
    tsl_status st = get_string(file, root, "name", sizeof p->name, &s);
    if (st != TSL_OK) return st;
    if (has_control(s)) {
        return bad(file, "name", "%s holds a control character (names are printed)",
                   tsl__json_value_str(json_object_get(root, "name"), vb, sizeof vb));
    }
    snprintf(p->name, sizeof p->name, "%s", s);
    if ((st = get_string(file, root, "source", 4096, &s))) return st;
    if ((v = json_object_get(root, "notes")) && !json_is_string(v))
        return bad(file, "notes", "%s is not a string", tsl__json_value_str(v, vb, sizeof vb));
    if ((v = json_object_get(root, "efficiency")) &&
        (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1)) {
        char xb[32];
        if (json_is_number(v)) fmt_real(json_number_value(v), xb);
        return bad(file, "efficiency", "%s is not a number in (0, 1]",
                   json_is_number(v) ? xb : tsl__json_value_str(v, vb, sizeof vb));
    }
    for (int i = 0; i < N_NUM; i++) {
        const char *key = num_fields[i].key;
        v = json_object_get(root, key);
        if (!v) return bad(file, key, "missing");
        if (!json_is_number(v)) return bad(file, key, "%s is not a number", tsl__json_value_str(v, vb, sizeof vb));
        double x = json_number_value(v);
        if (!(x > 0) || x > num_fields[i].hi || x < num_fields[i].lo) {
            char xb[32], range[64];
            fmt_real(x, xb);
            return bad(file, key, "%s is %s (expected a value in %s)", xb,
                       !(x > 0) ? "not positive" : x > num_fields[i].hi ? "absurd" : "too small",
                       range_str(&num_fields[i], range, sizeof range));
        }
        *num_at(p, i) = x;
    }
    v = json_object_get(root, "mem_bytes");
    if (!v) return bad(file, "mem_bytes", "missing");
    if (!json_is_integer(v))
        return bad(file, "mem_bytes", "%s is not an integer", tsl__json_value_str(v, vb, sizeof vb));
    json_int_t mb = json_integer_value(v);
    if (mb <= 0 || (uint64_t)mb > MAX_MEM_BYTES)
        return bad(file, "mem_bytes", "%lld is %s (expected 1 to %llu)", (long long)mb,
                   mb <= 0 ? "not positive" : "absurd", (unsigned long long)MAX_MEM_BYTES);
    p->mem_bytes = (size_t)mb;
    v = json_object_get(root, "duplex");
    if (!v) return bad(file, "duplex", "missing");
    if (!json_is_integer(v) || (json_integer_value(v) != 0 && json_integer_value(v) != 1))
        return bad(file, "duplex", "%s is not 0 or 1", tsl__json_value_str(v, vb, sizeof vb));
    p->duplex = (int)json_integer_value(v);
    return TSL_OK;
}

/* Loads one profile file: a regular file of at most MAX_FILE bytes
 * (io/read_file.h: a FIFO or a device is refused, never waited on).
 * TSL_ERR_IO if it cannot be read, TSL_ERR_FORMAT if malformed; *out
 * untouched on failure. */
static tsl_status parse_text(const char *path, const char *buf, size_t n,
                             tsl_device_profile *out);

static tsl_status load_file(const char *path, tsl_device_profile *out) {
    char *buf;
    size_t n;
    tsl_status rs = tsl__read_regular(path, "profile", MAX_FILE, &buf, &n);
    if (rs != TSL_OK) return rs;
    tsl_status st = parse_text(path, buf, n, out);
    free(buf);
    return st;
}

/* Parses buf[0..n) as a profile named `path` in messages (as load_file). */
static tsl_status parse_text(const char *path, const char *buf, size_t n,
                             tsl_device_profile *out) {
    json_error_t err;
    json_t *root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return tsl_fail(TSL_ERR_FORMAT, "%s:%d:%d: not valid JSON: %s", path, err.line,
                        err.column, err.text);
    tsl_device_profile p;
    tsl_status st = parse_profile(path, root, &p);
    json_decref(root);
    if (st != TSL_OK) return st;
    if ((st = check_values(path, &p)) != TSL_OK) {
        char why[512]; /* tsl_fail rewrites the buffer tsl_last_error() points to */
        snprintf(why, sizeof why, "%s", tsl_last_error());
        return tsl_fail(TSL_ERR_FORMAT, "%s", why);
    }
    *out = p;
    return TSL_OK;
}

/* ---- finding a profile by name ------------------------------------------------------- */

/* 1 if `s` names a file rather than a profile: it has a '/' or ends in .json. */
static int is_path(const char *s) {
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n >= 5 && strcmp(s + n - 5, ".json") == 0);
}

/* The source tree's profiles folder, from this file's compile-time path
 * (".../src/sim/profile.c"), or "" if unknown. */
static void source_profiles(char *dir, size_t n) {
#ifdef TSL_SOURCE_PROFILE_DIR
    snprintf(dir, n, "%s", TSL_SOURCE_PROFILE_DIR);
#else
    static const char tail[] = "src/sim/profile.c";
    const char *f = __FILE__;
    size_t lf = strlen(f), lt = sizeof tail - 1;
    if (f[0] == '/' && lf > lt && strcmp(f + lf - lt, tail) == 0)
        snprintf(dir, n, "%.*sprofiles", (int)(lf - lt), f);
    else
        dir[0] = '\0';
#endif
}

/* The installed share/tensile/profiles next to the running program's bin/,
 * or "" if unknown. */
static void installed_profiles(char *dir, size_t n) {
#ifdef TSL_INSTALL_PROFILE_DIR
    snprintf(dir, n, "%s", TSL_INSTALL_PROFILE_DIR);
#else
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    dir[0] = '\0';
    if (l <= 0) return;
    exe[l] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(dir, n, "%.*s/../share/tensile/profiles", (int)(n > 32 ? n - 32 : 0), exe);
#endif
}

/* Loads a profile by path, or by name from the first folder holding
 * NAME.json among: $TSL_PROFILE_DIR, $TSL_SOURCE_DIR/profiles, the source
 * tree's profiles/, the installed share/tensile/profiles. TSL_ERR_IO naming
 * every folder searched if none has it; TSL_ERR_INVALID for a bad name;
 * else as the file's parse. */
tsl_status tsl_profile_load(const char *name_or_path, tsl_device_profile *out) {
    if (!name_or_path || !name_or_path[0])
        return tsl_fail(TSL_ERR_INVALID, "profile: empty name");
    if (is_path(name_or_path)) return load_file(name_or_path, out);
    for (const char *c = name_or_path; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return tsl_fail(TSL_ERR_INVALID,
                            "profile '%s': a name has only letters, digits, '-', '_' and '.' "
                            "(or give a path)",
                            name_or_path);
    if (strlen(name_or_path) > 200)
        return tsl_fail(TSL_ERR_INVALID, "profile '%.40s...': name too long", name_or_path);
    char dirs[4][PATH_MAX];
    const char *env = getenv("TSL_PROFILE_DIR"), *src = getenv("TSL_SOURCE_DIR");
    snprintf(dirs[0], PATH_MAX, "%s", env ? env : "");
    if (src && src[0]) snprintf(dirs[1], PATH_MAX, "%.*s/profiles", PATH_MAX - 16, src);
    else dirs[1][0] = '\0';
    source_profiles(dirs[2], PATH_MAX);
    installed_profiles(dirs[3], PATH_MAX);
    char searched[1024] = "";
    size_t used = 0;
    for (int i = 0; i < 4; i++) {
        if (!dirs[i][0]) continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%.*s/%.200s.json", PATH_MAX - 1, dirs[i], name_or_path);
        if (access(path, F_OK) == 0) return load_file(path, out);
        if (used < sizeof searched)
            used += (size_t)snprintf(searched + used, sizeof searched - used, "%s%s",
                                     used ? ", " : "", dirs[i]);
    }
    return tsl_fail(TSL_ERR_IO, "profile '%s' not found (searched: %s; set TSL_PROFILE_DIR or give "
                                "a path)",
                    name_or_path, used ? searched : "no folder");
}

/* ---- saving ------------------------------------------------------------------------ */

typedef struct profile_arg {
    const tsl_device_profile *p;
    const char *source, *notes;
} profile_arg;

static void put_profile(FILE *f, const void *ctx);

/* Writes the profile with its "source" (required, non-empty) and optional
 * "notes". TSL_ERR_INVALID for bad values (named), TSL_ERR_IO if the file
 * cannot be written: it is written whole or not at all (io/atomic_file.h),
 * so a full disk never leaves a truncated or empty profile. The file loads
 * back to the same values, bit for bit. */
tsl_status tsl_profile_save_source(const char *path, const tsl_device_profile *p,
                                   const char *source, const char *notes) {
    TSL_ASSERT(path && p);
    tsl_status st = check_values(path, p);
    if (st != TSL_OK) return st;
    if (!source || !source[0] || strlen(source) >= 4096)
        return tsl_fail(TSL_ERR_INVALID, "%s: field 'source': must have 1 to 4095 characters",
                        path);
    tsl__out *o;
    if ((st = tsl__out_open(path, "profile", &o)) != TSL_OK) return st;
    profile_arg a = {p, source, notes};
    put_profile(tsl__out_stream(o), &a);
    return tsl__out_commit(o);
}

/* A profile and its texts, for put_profile. */
static void put_profile(FILE *f, const void *ctx) {
    const profile_arg *a = ctx;
    const tsl_device_profile *p = a->p;
    const char *source = a->source, *notes = a->notes;
    fputs("{\n  \"name\": ", f);
    tsl__json_put_str(f, p->name);
    fputs(",\n  \"source\": ", f);
    tsl__json_put_str(f, source);
    if (notes) {
        fputs(",\n  \"notes\": ", f);
        tsl__json_put_str(f, notes);
    }
    for (int i = 0; i < N_NUM; i++) {
        char b[32];
        fmt_real(*num_at((tsl_device_profile *)p, i), b);
        fprintf(f, ",\n  \"%s\": %s", num_fields[i].key, b);
        if (i == 1) fprintf(f, ",\n  \"mem_bytes\": %zu", p->mem_bytes);
        if (i == 3) fprintf(f, ",\n  \"duplex\": %d", p->duplex);
    }
    fputs("\n}\n", f);
}

tsl_status tsl_profile_to_text(const tsl_device_profile *p, const char *source, char **text,
                               size_t *len) {
    TSL_ASSERT(p && text && len);
    *text = NULL;
    *len = 0;
    tsl_status st = check_values("profile", p);
    if (st != TSL_OK) return st;
    if (!source || !source[0] || strlen(source) >= 4096)
        return tsl_fail(TSL_ERR_INVALID, "profile: field 'source': must have 1 to 4095 characters");
    profile_arg a = {p, source, NULL};
    return tsl__json_text(put_profile, &a, "profile", text, len);
}

tsl_status tsl_profile_parse_json(const char *text, size_t len, const char *name,
                                  tsl_device_profile *out) {
    TSL_ASSERT(text && name && out);
    if (len > MAX_FILE)
        return tsl_fail(TSL_ERR_FORMAT, "%s: a profile of %zu bytes is larger than the limit of "
                                        "%d bytes", name, len, (int)MAX_FILE);
    return parse_text(name, text, len, out);
}

tsl_status tsl_profile_save(const char *path, const tsl_device_profile *p) {
    return tsl_profile_save_source(path, p, "written by tsl_profile_save (no source recorded)",
                                   NULL);
}
