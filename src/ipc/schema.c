/*
 * schema.c - the fields of every message type and their validation
 * (docs/PROTOCOL.md, "Messages"): one table per type, each field with its
 * JSON type, its range and whether it is optional; no field outside the
 * table is accepted, so that a peer of another version fails loudly.
 * Messages name the type, the field's path and the value:
 *   "REGISTER: field 'batch': -3 is not a positive integer"
 *   "STATUS: field 'jobs[1].state': \"paused\" is not one of \"queued\", ..."
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/json_util.h"
#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

typedef enum kind {
    K_INT,    /* a JSON integer in [lo, hi] */
    K_NUM,    /* a finite JSON number (integer or real) >= 0, or > 0, or in [0, 1] */
    K_TEXT,   /* a string of 1 to hi bytes without control characters */
    K_ENUM,   /* one of `choices` */
    K_HEX16,  /* exactly 16 lowercase hexadecimal digits */
    K_SHM,    /* a POSIX shared memory name: '/' and 1 to 63 bytes without '/' */
    K_OBJECT, /* any object (a document a later layer parses) */
    K_NUMS,   /* an array of lo to hi numbers >= 0 */
    K_SUB,    /* an object with the fields of `sub` */
    K_SUBS,   /* an array of objects with the fields of `sub` */
} kind;

enum { NUM_NONNEG, NUM_POS, NUM_UNIT };

typedef struct schema schema;
typedef struct field {
    const char *name;
    kind kind;
    int optional;
    int64_t lo, hi;              /* K_INT: the range; K_TEXT: hi bytes; K_NUMS: the count */
    int num;                     /* K_NUM: NUM_NONNEG, NUM_POS or NUM_UNIT */
    const char *const *choices;  /* K_ENUM: NULL-terminated */
    const schema *sub;           /* K_SUB, K_SUBS */
} field;

struct schema {
    const field *f;
    int n;
};

#define INT_(nm, l, h) {.name = nm, .kind = K_INT, .lo = l, .hi = h}
#define POS(nm) INT_(nm, 1, INT64_MAX)    /* > 0 (and >= 1) */
#define NONNEG(nm) INT_(nm, 0, INT64_MAX) /* >= 0 */
#define PID(nm) INT_(nm, 1, INT32_MAX)    /* a pid_t */
#define NUM(nm, r) {.name = nm, .kind = K_NUM, .num = r}
#define OPT_NUM(nm) {.name = nm, .kind = K_NUM, .num = NUM_NONNEG, .optional = 1}
#define TEXT(nm, h) {.name = nm, .kind = K_TEXT, .hi = h}
#define NAME(nm) TEXT(nm, 63)
#define ENUM(nm, c) {.name = nm, .kind = K_ENUM, .choices = c}
#define OBJ(nm) {.name = nm, .kind = K_OBJECT}
#define TEXT_MAX TSL__IPC_TEXT_MAX
#define N(a) ((int)(sizeof a / sizeof a[0]))
#define SCHEMA(a) {a, N(a)}

static const char *const roles[] = {"job", "client", NULL};
static const char *const err_codes[] = {"bad-message", "too-large", "version", "out-of-order",
                                        "refused",     "timeout",   "internal", NULL};
static const char *const plan_reasons[] = {"admitted", "arrival", "departure", "drift", "resume",
                                           NULL};
static const char *const job_states[] = {"queued", "running", "done", "failed", NULL};

static const field hello[] = {ENUM("role", roles), PID("pid"), TEXT("client", 64)};
static const field welcome[] = {PID("daemon_pid"),       POS("capacity_bytes"),
                                NUM("pcie_gbps", NUM_NONNEG), OBJ("profile"),
                                {.name = "shm", .kind = K_SHM}, NUM("job_timeout_s", NUM_POS)};
static const field error[] = {ENUM("code", err_codes), TEXT("message", TEXT_MAX)};
/* what a job says of itself, in REGISTER and again in RESUME */
#define JOB_FIELDS                                                                              \
    NAME("name"), NAME("model"), POS("batch"), POS("iterations"), NUM("max_swap_rate", NUM_UNIT), \
        OBJ("workload")
static const field register_[] = {JOB_FIELDS};
static const field queued[] = {POS("job_id"), TEXT("reason", TEXT_MAX), NONNEG("needed_bytes"),
                               NONNEG("available_bytes"), POS("position")};
/* where a job runs under a plan, in PLAN and again in RESUME */
#define PLACE_FIELDS                                                                               \
    POS("job_id"), NONNEG("slot"), POS("plan_seq"), POS("region_bytes"),                         \
        NUM("channel_share", NUM_UNIT),                                                          \
        {.name = "latencies_us", .kind = K_NUMS, .lo = 1, .hi = 10000000}, OBJ("plan")
static const field plan[] = {PLACE_FIELDS, ENUM("reason", plan_reasons)};
static const field plan_ack[] = {POS("plan_seq"), NONNEG("iteration"), NONNEG("footprint_bytes")};
static const field report[] = {POS("iteration"),
                               NUM("iter_ms", NUM_NONNEG),
                               NUM("kernel_ms", NUM_NONNEG),
                               {.name = "latencies_us", .kind = K_NUMS, .lo = 1, .hi = 10000000},
                               NONNEG("load_bytes"),
                               NONNEG("footprint_bytes"),
                               NONNEG("peak_footprint_bytes"),
                               NONNEG("swaps"),
                               NONNEG("evictions"),
                               NONNEG("passive_swaps"),
                               NUM("stall_ms", NUM_NONNEG)};
static const field done[] = {NONNEG("iterations"), {.name = "param_checksum", .kind = K_HEX16},
                             NUM("iter_ms", NUM_NONNEG), NONNEG("peak_footprint_bytes")};
static const field failed[] = {TEXT("message", TEXT_MAX)};
static const field resume[] = {JOB_FIELDS, PLACE_FIELDS, NONNEG("iteration")};
static const field global[] = {NONNEG("load_bytes"), NONNEG("footprint_bytes"),
                               NONNEG("peak_footprint_bytes")};
static const field status_job[] = {
    POS("id"),
    NAME("model"),
    ENUM("state", job_states),
    NONNEG("region_bytes"),
    NONNEG("footprint_bytes"),
    NONNEG("peak_footprint_bytes"),
    NONNEG("iterations_done"),
    {.name = "param_checksum", .kind = K_HEX16, .optional = 1},
    {.name = "reason", .kind = K_TEXT, .hi = TEXT_MAX, .optional = 1},
    OPT_NUM("iter_ms"),
    OPT_NUM("eor"),
    OPT_NUM("swaps"),
    OPT_NUM("replans"),
    OPT_NUM("plan_footprint_bytes"),
    OPT_NUM("queued_ms")};
static const schema global_schema = SCHEMA(global), status_job_schema = SCHEMA(status_job);
static const field status[] = {POS("capacity_bytes"),
                               {.name = "global", .kind = K_SUB, .sub = &global_schema},
                               {.name = "jobs", .kind = K_SUBS, .sub = &status_job_schema}};
static const field cancel[] = {POS("job_id")};
static const field stop[] = {TEXT("reason", TEXT_MAX)};
static const field ok[] = {
    {.name = "job_id", .kind = K_INT, .lo = 1, .hi = INT64_MAX, .optional = 1}};

static const schema schemas[TSL_MSG_TYPE_END] = {
    [TSL_MSG_HELLO] = SCHEMA(hello),       [TSL_MSG_WELCOME] = SCHEMA(welcome),
    [TSL_MSG_ERROR] = SCHEMA(error),       [TSL_MSG_REGISTER] = SCHEMA(register_),
    [TSL_MSG_QUEUED] = SCHEMA(queued),     [TSL_MSG_PLAN] = SCHEMA(plan),
    [TSL_MSG_PLAN_ACK] = SCHEMA(plan_ack), [TSL_MSG_REPORT] = SCHEMA(report),
    [TSL_MSG_DONE] = SCHEMA(done),         [TSL_MSG_FAILED] = SCHEMA(failed),
    [TSL_MSG_RESUME] = SCHEMA(resume),     [TSL_MSG_STATUS_REQ] = {NULL, 0},
    [TSL_MSG_STATUS] = SCHEMA(status),     [TSL_MSG_CANCEL] = SCHEMA(cancel),
    [TSL_MSG_STOP] = SCHEMA(stop),         [TSL_MSG_OK] = SCHEMA(ok),
    [TSL_MSG_SHUTDOWN] = {NULL, 0},
};

/* ---- values --------------------------------------------------------------------- */

/* v for a message: numbers in their shortest exact form (a real that is a
 * whole number keeps a ".0", so that "expected an integer, got 3.0" reads
 * right), anything else compact and cut. */
static const char *show(const json_t *v, char *buf, size_t n) {
    if (!json_is_real(v)) return tsl__json_value_str(v, buf, n);
    char r[32];
    tsl__json_fmt_real(json_real_value(v), r);
    snprintf(buf, n, "%s%s", r, strpbrk(r, ".eni") ? "" : ".0");
    return buf;
}

static tsl_status wrong_type(const char *type, const char *where, const char *expected,
                             const json_t *v) {
    char vb[80];
    if (json_is_boolean(v) || json_is_null(v)) /* the type is the value */
        return tsl__json_bad(type, where, "expected %s, got %s", expected, tsl__json_type_name(v));
    return tsl__json_bad(type, where, "expected %s, got %s %s", expected, tsl__json_type_name(v),
                         show(v, vb, sizeof vb));
}

static tsl_status check_int(const char *type, const char *where, const field *f, const json_t *v) {
    if (!json_is_integer(v)) return wrong_type(type, where, "an integer", v);
    int64_t x = (int64_t)json_integer_value(v);
    if (x < f->lo) {
        if (f->lo == 1)
            return tsl__json_bad(type, where, "%" PRId64 " is not a positive integer", x);
        if (f->lo == 0) return tsl__json_bad(type, where, "%" PRId64 " is negative", x);
        return tsl__json_bad(type, where, "%" PRId64 " is less than %" PRId64, x, f->lo);
    }
    if (x > f->hi)
        return tsl__json_bad(type, where, "%" PRId64 " is larger than %" PRId64, x, f->hi);
    return TSL_OK;
}

static tsl_status check_num(const char *type, const char *where, int range, const json_t *v) {
    char vb[80];
    if (!json_is_number(v)) return wrong_type(type, where, "a number", v);
    double x = json_number_value(v);
    if (!isfinite(x))
        return tsl__json_bad(type, where, "%s is not a finite number", show(v, vb, sizeof vb));
    if (range == NUM_UNIT && !(x >= 0 && x <= 1))
        return tsl__json_bad(type, where, "%s is not in [0, 1]", show(v, vb, sizeof vb));
    if (range == NUM_POS && !(x > 0))
        return tsl__json_bad(type, where, "%s is not positive", show(v, vb, sizeof vb));
    if (x < 0) return tsl__json_bad(type, where, "%s is negative", show(v, vb, sizeof vb));
    return TSL_OK;
}

static tsl_status check_enum(const char *type, const char *where, const char *const *choices,
                             const json_t *v) {
    if (!json_is_string(v)) return wrong_type(type, where, "a string", v);
    char list[200] = "", vb[80];
    for (const char *const *c = choices; *c; c++) {
        if (strcmp(json_string_value(v), *c) == 0 && strlen(*c) == json_string_length(v))
            return TSL_OK;
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s\"%s\"", c == choices ? "" : ", ", *c);
    }
    return tsl__json_bad(type, where, "%s is not one of %s", show(v, vb, sizeof vb), list);
}

static tsl_status check_hex16(const char *type, const char *where, const json_t *v) {
    if (!json_is_string(v)) return wrong_type(type, where, "a string", v);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), i = 0;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) i++;
    char vb[80];
    if (n != 16 || i != 16)
        return tsl__json_bad(type, where, "%s is not 16 lowercase hexadecimal digits",
                             show(v, vb, sizeof vb));
    return TSL_OK;
}

static tsl_status check_text(const char *type, const char *where, int64_t max, const json_t *v) {
    const char *s;
    return tsl__json_get_name(type, where, (json_t *)v, (size_t)max + 1, &s);
}

static tsl_status check_shm(const char *type, const char *where, const json_t *v) {
    tsl_status st = check_text(type, where, 64, v);
    if (st != TSL_OK) return st;
    const char *s = json_string_value(v);
    char vb[80];
    if (s[0] != '/' || s[1] == '\0' || strchr(s + 1, '/'))
        return tsl__json_bad(type, where,
                             "%s is not a POSIX shared memory name ('/' then 1 to 63 characters "
                             "without '/')",
                             show(v, vb, sizeof vb));
    return TSL_OK;
}

static tsl_status check_fields(const char *type, const char *prefix, const schema *s,
                               const json_t *obj);

static tsl_status check_nums(const char *type, const char *path, const field *f, const json_t *v) {
    char where[200];
    snprintf(where, sizeof where, "field '%s'", path);
    if (!json_is_array(v)) return wrong_type(type, where, "an array", v);
    size_t n = json_array_size(v);
    if (n < (size_t)f->lo || n > (size_t)f->hi)
        return tsl__json_bad(type, where, "has %zu elements (expected %" PRId64 " to %" PRId64 ")",
                             n, f->lo, f->hi);
    for (size_t i = 0; i < n; i++) {
        snprintf(where, sizeof where, "field '%s[%zu]'", path, i);
        tsl_status st = check_num(type, where, NUM_NONNEG, json_array_get(v, i));
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

static tsl_status check_subs(const char *type, const char *path, const schema *sub,
                             const json_t *v) {
    char where[200], prefix[160];
    snprintf(where, sizeof where, "field '%s'", path);
    if (!json_is_array(v)) return wrong_type(type, where, "an array", v);
    for (size_t i = 0; i < json_array_size(v); i++) {
        snprintf(prefix, sizeof prefix, "%s[%zu]", path, i);
        snprintf(where, sizeof where, "field '%s'", prefix);
        const json_t *e = json_array_get(v, i);
        if (!json_is_object(e)) return wrong_type(type, where, "an object", e);
        strncat(prefix, ".", sizeof prefix - strlen(prefix) - 1);
        tsl_status st = check_fields(type, prefix, sub, e);
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

static tsl_status check_value(const char *type, const char *prefix, const field *f,
                              const json_t *v) {
    char path[128], where[160];
    snprintf(path, sizeof path, "%s%s", prefix, f->name);
    snprintf(where, sizeof where, "field '%s'", path);
    switch (f->kind) {
    case K_INT: return check_int(type, where, f, v);
    case K_NUM: return check_num(type, where, f->num, v);
    case K_TEXT: return check_text(type, where, f->hi, v);
    case K_ENUM: return check_enum(type, where, f->choices, v);
    case K_HEX16: return check_hex16(type, where, v);
    case K_SHM: return check_shm(type, where, v);
    case K_OBJECT: return json_is_object(v) ? TSL_OK : wrong_type(type, where, "an object", v);
    case K_NUMS: return check_nums(type, path, f, v);
    case K_SUB:
        if (!json_is_object(v)) return wrong_type(type, where, "an object", v);
        strncat(path, ".", sizeof path - strlen(path) - 1);
        return check_fields(type, path, f->sub, v);
    case K_SUBS: return check_subs(type, path, f->sub, v);
    }
    return tsl__json_bad(type, where, "has no known kind");
}

/* A key of the peer's, printable: control characters as '?', cut. */
static const char *key_str(const char *k, char *buf, size_t n) {
    size_t i = 0;
    for (; k[i] && i + 4 < n && i < 60; i++)
        buf[i] = ((unsigned char)k[i] < 0x20 || k[i] == 0x7f) ? '?' : k[i];
    snprintf(buf + i, n - i, "%s", k[i] ? "..." : "");
    return buf;
}

static tsl_status check_fields(const char *type, const char *prefix, const schema *s,
                               const json_t *obj) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int known = 0;
        for (int i = 0; i < s->n && !known; i++) known = strcmp(key, s->f[i].name) == 0;
        if (!known) {
            char kb[80], vb[80];
            return tsl_fail(TSL_ERR_FORMAT, "%s: unknown field '%s%s' (value %s)", type, prefix,
                            key_str(key, kb, sizeof kb), show(v, vb, sizeof vb));
        }
    }
    for (int i = 0; i < s->n; i++) {
        const field *f = &s->f[i];
        const json_t *fv = json_object_get(obj, f->name);
        if (!fv) {
            if (f->optional) continue;
            return tsl_fail(TSL_ERR_FORMAT, "%s: field '%s%s' is missing", type, prefix, f->name);
        }
        tsl_status st = check_value(type, prefix, f, fv);
        if (st != TSL_OK) return st;
    }
    return TSL_OK;
}

tsl_status tsl_msg_validate(tsl_msg_type type, const json_t *body) {
    const char *name = tsl_msg_type_name(type);
    if (tsl_msg_limit(type) == 0)
        return tsl_fail(TSL_ERR_FORMAT, "message: unknown message type %d", (int)type);
    if (!body) return tsl_fail(TSL_ERR_FORMAT, "%s: no payload", name);
    if (!json_is_object(body)) {
        char vb[80];
        return tsl_fail(TSL_ERR_FORMAT, "%s: the payload is %s %s, not a JSON object", name,
                        tsl__json_type_name(body), show(body, vb, sizeof vb));
    }
    return check_fields(name, "", &schemas[type], body);
}
