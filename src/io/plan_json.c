/*
 * plan_json.c - the JSON form of the plans of several jobs
 * (docs/SCHEDULING.md, "JSON forms"):
 *
 *   {"jobs": [{"job": "name", "predicted_peak_bytes": 123, "predicted_period_us": 1.5,
 *              "events": [{"type": "swap_out", "tensor": "conv1", "trigger": "relu1", "delay_us": 0},
 *                         {"type": "release", "tensor": "conv1", "trigger": "pool1"},
 *                         {"type": "swap_in", "tensor": "conv1", "trigger": "fc.bwd",
 *                          "delay_us": 3.5, "precede": "conv1.bwd_filter"},
 *                         {"type": "recompute", "tensor": "relu2", "precede": "relu2.bwd"}]}]}
 *
 * A job may carry its layout (docs/SCHEDULING.md, "Layout"): all three of
 * "predicted_footprint_bytes", "layout_alignment" (a power of two) and
 * "layout", one object per block: {"tensor": name, "residency": k,
 * "offset": bytes} or {"workspace": op name, "run": k, "offset": bytes}
 * (sizes come from the workload; a recomputation's block, its producer's
 * workspace with the scratch of the producer's other outputs, adds
 * "bytes": its size, one of sched/remat.h's tsl__replay_block for an output
 * of the op). A job without them has no layout.
 *
 * A job may carry its algorithm choices (docs/SCHEDULING.md, "Algorithms"):
 * "algos": [{"op": name, "algo": k}], the ops run with another algorithm
 * than their default, k numbering the op's algorithms in the workload
 * (0 the default, then its "algos" in order). Written only when the plan
 * has some (in op order), so a plan without choices is written as before
 * they existed; a layout's workspace blocks are the chosen algorithms'.
 *
 * Fields per event type, all required, no other allowed:
 *   swap_out   type, tensor, trigger, delay_us
 *   swap_in    type, tensor, trigger, delay_us, precede
 *   release    type, tensor, trigger              (delay 0: it acts at the trigger's end)
 *              type, tensor, trigger, delay_us, precede
 *                                                 (a release that precedes an op, which
 *                                                  waits for it: a planned wait for its
 *                                                  swap-out; it is issued after the delay)
 *   recompute  type, tensor, precede              (it runs right before precede: its
 *                                                  trigger is unused, -1, and delay 0)
 * Names resolve against the job's workload; "start" is the iteration start
 * (trigger -1). It may trigger a swap-in, and a swap-out or release of a
 * tensor resident at the start (parameter, buffer, optimizer state, input,
 * label); no activation or gradient exists then. Jobs are matched to the
 * workloads by name, each exactly once, in any order.
 *
 * Reading is strict (TSL_ERR_FORMAT naming the file, the field path such as
 * `jobs[0].events[12].precede` and the value), and the writer refuses
 * (TSL_ERR_INVALID) any plan the reader would reject, so that write -> read
 * gives back the same plans: same events in the same order, doubles to the
 * bit (-0 is written as 0).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "sched/remat.h"
#include "io/json_util.h"
#include "core/assert.h"
#include "tensile/sched_json.h"

#define TSL__PLAN_MAX_BYTES ((json_int_t)1 << 56) /* a predicted peak */
#define TSL__PLAN_MAX_US 1e12 /* ~11.6 days: any larger time is absurd */
#define TSL__PLAN_MAX_EVENTS (1 << 24) /* per job */
#define TSL__PLAN_MAX_FILE ((long)16 << 20) /* bytes of a plan file: 16 MiB (jansson holds ~25x) */

static const char *const ev_names[] = {"swap_out", "swap_in", "release", "recompute"};

/* ---- small helpers -------------------------------------------------------------- */

/* The shortest %g form of a finite x that reads back to the same double. */
/* Checks that object o at `path` has every key of req[0..nr) and no other.
 * `what` is appended to messages (" (for a release)"); when it is not empty
 * o is an event, and an event field of another type is "not allowed". */
static tsl_status check_keys(const char *file, const char *path, json_t *o, const char *what,
                             const char *const *req, int nr) {
    for (int i = 0; i < nr; i++)
        if (!json_object_get(o, req[i]))
            return tsl__json_bad(file, path, "missing field '%s'%s", req[i], what);
    const char *k;
    json_t *v;
    static const char *const event_keys[] = {"type", "tensor", "trigger", "delay_us", "precede"};
    json_object_foreach(o, k, v) {
        int ok = 0, known = 0;
        for (int i = 0; i < nr && !ok; i++) ok = strcmp(k, req[i]) == 0;
        for (int i = 0; i < 5 && what[0] && !ok; i++) known |= strcmp(k, event_keys[i]) == 0;
        if (known) return tsl__json_bad(file, path, "field '%s' is not allowed%s", k, what);
        if (!ok) return tsl__json_bad(file, path, "unknown field '%s'%s", k, what);
    }
    return TSL_OK;
}

/* ---- name index ----------------------------------------------------------------- */

/* Open-addressing map from a name to its index in a names array (lookups
 * only: iteration order never matters). */
typedef struct name_index {
    int32_t *slot; /* -1: empty */
    size_t cap;
    const char *names;
    size_t stride;
} name_index;

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The index of s, or -1. */
static int32_t index_find(const name_index *ix, const char *s) {
    for (size_t j = name_hash(s) & (ix->cap - 1); ix->slot[j] >= 0; j = (j + 1) & (ix->cap - 1))
        if (strcmp(ix->names + (size_t)ix->slot[j] * ix->stride, s) == 0) return ix->slot[j];
    return -1;
}

/* Indexes n names laid out `stride` bytes apart. Returns 0 if out of host
 * memory; *dup gets the first index whose name repeats an earlier one (-1). */
static int index_build(name_index *ix, const char *names, size_t stride, int32_t n, int32_t *dup) {
    ix->cap = 16;
    while (ix->cap < 2 * ((size_t)n + 1)) ix->cap *= 2;
    ix->slot = malloc(ix->cap * sizeof *ix->slot);
    ix->names = names;
    ix->stride = stride;
    *dup = -1;
    if (!ix->slot) return 0;
    for (size_t i = 0; i < ix->cap; i++) ix->slot[i] = -1;
    for (int32_t i = 0; i < n; i++) {
        const char *s = names + (size_t)i * stride;
        if (index_find(ix, s) >= 0) {
            if (*dup < 0) *dup = i;
            continue;
        }
        size_t j = name_hash(s) & (ix->cap - 1);
        while (ix->slot[j] >= 0) j = (j + 1) & (ix->cap - 1);
        ix->slot[j] = i;
    }
    return 1;
}

/* ---- what a representable event is (shared by the reader and the writer) --- */

/* 1 if tensor t of w exists at the iteration start (may be swapped out or
 * released with trigger "start"). */
static int resident_at_start(const tsl_workload *w, int32_t t) {
    tsl_tensor_kind k = w->tensors[t].kind;
    return tsl_kind_is_persistent(k) || k == TSL_KIND_INPUT || k == TSL_KIND_LABEL;
}

/* If event e of workload w cannot be written in the JSON form, writes the
 * field at fault into field and the reason into msg and returns 0. */
static int event_representable(const tsl_workload *w, const tsl_event *e, char *field, size_t fl,
                               char *msg, size_t ml) {
    if ((int)e->type < 0 || (int)e->type > (int)TSL_EV_RECOMPUTE) {
        snprintf(field, fl, "type");
        snprintf(msg, ml, "%d is not an event type", (int)e->type);
        return 0;
    }
    const char *ty = ev_names[e->type];
    if (e->tensor < 0 || e->tensor >= w->n_tensors) {
        snprintf(field, fl, "tensor");
        snprintf(msg, ml, "index %d out of range [0, %d)", (int)e->tensor, (int)w->n_tensors);
        return 0;
    }
    int has_precede = e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE ||
                      (e->type == TSL_EV_RELEASE && e->precede != -1);
    if (has_precede && (e->precede < 0 || e->precede >= w->n_ops)) {
        snprintf(field, fl, "precede");
        snprintf(msg, ml, "op index %d out of range [0, %d) for a %s", (int)e->precede,
                 (int)w->n_ops, ty);
        return 0;
    }
    if (!has_precede && e->precede != -1) {
        snprintf(field, fl, "precede");
        snprintf(msg, ml, "%d: a %s has no precede (-1)", (int)e->precede, ty);
        return 0;
    }
    if (e->type == TSL_EV_RECOMPUTE) {
        if (e->trigger != -1 || e->delay_us != 0.0) {
            snprintf(field, fl, "trigger");
            snprintf(msg, ml,
                     "a recompute runs right before its precede op and has no trigger "
                     "(-1, delay 0), got trigger %d, delay %g",
                     (int)e->trigger, e->delay_us);
            return 0;
        }
        return 1;
    }
    if (e->trigger < -1 || e->trigger >= w->n_ops) {
        snprintf(field, fl, "trigger");
        snprintf(msg, ml, "op index %d out of range [-1, %d)", (int)e->trigger, (int)w->n_ops);
        return 0;
    }
    if (e->trigger == -1 && e->type != TSL_EV_SWAP_IN && !resident_at_start(w, e->tensor)) {
        snprintf(field, fl, "trigger");
        snprintf(msg, ml,
                 "'start' is not allowed for a %s of '%s' (%s): it exists only once an op "
                 "generates it",
                 ty, w->tensors[e->tensor].name, tsl_kind_name(w->tensors[e->tensor].kind));
        return 0;
    }
    if (!isfinite(e->delay_us) || e->delay_us < 0 || e->delay_us > TSL__PLAN_MAX_US) {
        snprintf(field, fl, "delay_us");
        snprintf(msg, ml, "%g is negative, not finite or absurd (limit %g us)", e->delay_us,
                 TSL__PLAN_MAX_US);
        return 0;
    }
    if (e->type == TSL_EV_RELEASE && e->delay_us != 0.0 && e->precede < 0) {
        snprintf(field, fl, "delay_us");
        snprintf(msg, ml, "%g: a release acts at its trigger's end (delay 0) unless it precedes an op",
                 e->delay_us);
        return 0;
    }
    return 1;
}

/* ---- parsing ---------------------------------------------------------------------- */

typedef struct parser {
    const char *file;
    const tsl_workload *w; /* the job being parsed */
    name_index tix, oix;
} parser;

/* Resolves an op name at path ("start" -> -1 when allow_start). */
static tsl_status get_op(parser *p, const char *path, json_t *v, int allow_start, int32_t *out) {
    const char *s;
    char vb[80];
    tsl_status st = tsl__json_get_name(p->file, path, v, TSL_NAME_MAX, &s);
    if (st != TSL_OK) return st;
    if (strcmp(s, "start") == 0) {
        if (!allow_start)
            return tsl__json_bad(p->file, path, "'start' is not an op (only a trigger may be 'start')");
        *out = -1;
        return TSL_OK;
    }
    int32_t i = index_find(&p->oix, s);
    if (i < 0)
        return tsl__json_bad(p->file, path, "unknown op %s in job '%s'", tsl__json_value_str(v, vb, sizeof vb),
                   p->w->job);
    *out = i;
    return TSL_OK;
}

/* Parses jobs[jj].events[k] (object o) of workload p->w into *e: the fields
 * its type requires and no other, names resolved, the event representable.
 * TSL_ERR_FORMAT naming the field path and value otherwise. */
static tsl_status parse_event(parser *p, int jj, int32_t k, json_t *o, tsl_event *e) {
    static const char *const k_out[] = {"type", "tensor", "trigger", "delay_us"};
    static const char *const k_in[] = {"type", "tensor", "trigger", "delay_us", "precede"};
    static const char *const k_rel[] = {"type", "tensor", "trigger"};
    static const char *const k_prel[] = {"type", "tensor", "trigger", "delay_us", "precede"};
    static const char *const k_rc[] = {"type", "tensor", "precede"};
    char path[96], vb[80], what[48];
    snprintf(path, sizeof path, "jobs[%d].events[%d]", jj, (int)k);
    if (!json_is_object(o))
        return tsl__json_bad(p->file, path, "expected an object, got %s %s", tsl__json_type_name(o),
                   tsl__json_value_str(o, vb, sizeof vb));
    const char *ty;
    snprintf(path, sizeof path, "jobs[%d].events[%d].type", jj, (int)k);
    json_t *tv = json_object_get(o, "type");
    if (!tv) return tsl__json_bad(p->file, path, "missing");
    tsl_status st = tsl__json_get_name(p->file, path, tv, 32, &ty);
    if (st != TSL_OK) return st;
    int type = 0;
    while (type < 4 && strcmp(ty, ev_names[type]) != 0) type++;
    if (type == 4)
        return tsl__json_bad(p->file, path,
                   "'%s' is not an event type (expected swap_out, swap_in, release "
                   "or recompute)",
                   ty);
    memset(e, 0, sizeof *e);
    e->type = (tsl_event_type)type;
    snprintf(path, sizeof path, "jobs[%d].events[%d]", jj, (int)k);
    snprintf(what, sizeof what, " (for a %s)", ty);
    switch (e->type) {
    case TSL_EV_SWAP_OUT: st = check_keys(p->file, path, o, what, k_out, 4); break;
    case TSL_EV_SWAP_IN: st = check_keys(p->file, path, o, what, k_in, 5); break;
    case TSL_EV_RELEASE: /* with a precede, a delay too */
        st = json_object_get(o, "precede") || json_object_get(o, "delay_us")
                 ? check_keys(p->file, path, o, " (for a release that precedes an op)", k_prel, 5)
                 : check_keys(p->file, path, o, what, k_rel, 3);
        break;
    case TSL_EV_RECOMPUTE: st = check_keys(p->file, path, o, what, k_rc, 3); break;
    }
    if (st != TSL_OK) return st;
    const char *tn;
    json_t *v = json_object_get(o, "tensor");
    snprintf(path, sizeof path, "jobs[%d].events[%d].tensor", jj, (int)k);
    if ((st = tsl__json_get_name(p->file, path, v, TSL_NAME_MAX, &tn))) return st;
    e->tensor = index_find(&p->tix, tn);
    if (e->tensor < 0)
        return tsl__json_bad(p->file, path, "unknown tensor %s in job '%s'", tsl__json_value_str(v, vb, sizeof vb),
                   p->w->job);
    e->precede = -1;
    int preceding = e->type == TSL_EV_RELEASE && json_object_get(o, "precede");
    if (e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE || preceding) {
        snprintf(path, sizeof path, "jobs[%d].events[%d].precede", jj, (int)k);
        if ((st = get_op(p, path, json_object_get(o, "precede"), 0, &e->precede))) return st;
    }
    if (e->type == TSL_EV_RECOMPUTE) {
        e->trigger = -1;
        e->delay_us = 0.0;
    } else {
        snprintf(path, sizeof path, "jobs[%d].events[%d].trigger", jj, (int)k);
        if ((st = get_op(p, path, json_object_get(o, "trigger"), 1, &e->trigger))) return st;
        if (e->type != TSL_EV_RELEASE || preceding) {
            snprintf(path, sizeof path, "jobs[%d].events[%d].delay_us", jj, (int)k);
            if ((st = tsl__json_get_time(p->file, path,
                    json_object_get(o, "delay_us"), TSL__PLAN_MAX_US, &e->delay_us)))
                return st;
        }
    }
    char field[32], msg[256];
    if (!event_representable(p->w, e, field, sizeof field, msg, sizeof msg)) {
        snprintf(path, sizeof path, "jobs[%d].events[%d].%s", jj, (int)k, field);
        return tsl__json_bad(p->file, path, "%s", msg);
    }
    return TSL_OK;
}

static tsl_status parse_layout(parser *p, int jj, json_t *o, tsl_plan *pl);

/* Parses jobs[jj].algos (array `arr`) into pl's algorithm choices: objects
 * {"op": name, "algo": k}, each op at most once, k an algorithm the op has
 * in the workload (0, its default, is accepted and changes nothing).
 * TSL_ERR_FORMAT naming jobs[jj].algos[x].FIELD and the value; TSL_ERR_OOM. */
static tsl_status parse_algos(parser *p, int jj, json_t *arr, tsl_plan *pl) {
    static const char *const keys[] = {"op", "algo"};
    char path[96], vb[80];
    snprintf(path, sizeof path, "jobs[%d].algos", jj);
    if (!json_is_array(arr))
        return tsl__json_bad(p->file, path, "expected an array, got %s %s",
                             tsl__json_type_name(arr), tsl__json_value_str(arr, vb, sizeof vb));
    if (json_array_size(arr) > (size_t)p->w->n_ops)
        return tsl__json_bad(p->file, path, "%zu choices for %d ops", json_array_size(arr),
                             p->w->n_ops);
    for (size_t x = 0; x < json_array_size(arr); x++) {
        json_t *c = json_array_get(arr, x);
        snprintf(path, sizeof path, "jobs[%d].algos[%zu]", jj, x);
        if (!json_is_object(c))
            return tsl__json_bad(p->file, path, "expected an object, got %s %s",
                                 tsl__json_type_name(c), tsl__json_value_str(c, vb, sizeof vb));
        tsl_status st = check_keys(p->file, path, c, "", keys, 2);
        if (st != TSL_OK) return st;
        int32_t op;
        snprintf(path, sizeof path, "jobs[%d].algos[%zu].op", jj, x);
        if ((st = get_op(p, path, json_object_get(c, "op"), 0, &op))) return st;
        for (size_t q = 0; q < x; q++) {
            const char *prev = json_string_value(json_object_get(json_array_get(arr, q), "op"));
            if (prev && strcmp(prev, p->w->ops[op].name) == 0)
                return tsl__json_bad(p->file, path, "op '%s' is chosen twice (also algos[%zu])",
                                     p->w->ops[op].name, q);
        }
        json_t *av = json_object_get(c, "algo");
        int32_t n = tsl_workload_op_n_algos(p->w, op);
        snprintf(path, sizeof path, "jobs[%d].algos[%zu].algo", jj, x);
        if (!json_is_integer(av))
            return tsl__json_bad(p->file, path, "expected an integer, got %s %s",
                                 tsl__json_type_name(av), tsl__json_value_str(av, vb, sizeof vb));
        json_int_t k = json_integer_value(av);
        if (k < 0 || k >= n) {
            char list[TSL_ALGO_MAX * (TSL_ALGO_NAME_MAX + 8)];
            int at = 0;
            for (int32_t q = 0; q < n && at < (int)sizeof list; q++)
                at += snprintf(list + at, sizeof list - (size_t)at, "%s%d %s", q ? ", " : "",
                               q, tsl_workload_op_algo(p->w, op, q).name);
            return tsl__json_bad(p->file, path,
                                 "%lld is not an algorithm of op '%s' in job '%s' (it has %d: "
                                 "%s)",
                                 (long long)k, p->w->ops[op].name, p->w->job, n, list);
        }
        if ((st = tsl_plan_set_algo(pl, op, (int32_t)k))) return st;
    }
    return TSL_OK;
}

/* Parses jobs[jj] (object o) for workload w into a new plan *out. */
static tsl_status parse_job(parser *p, int jj, json_t *o, tsl_plan **out) {
    static const char *const base[] = {"job", "predicted_peak_bytes", "predicted_period_us",
                                       "events"};
    static const char *const lay[] = {"predicted_footprint_bytes", "layout_alignment",
                                      "layout"};
    char path[64], vb[80];
    int with_layout = json_object_get(o, "predicted_footprint_bytes") ||
                      json_object_get(o, "layout_alignment") || json_object_get(o, "layout");
    json_t *algos = json_object_get(o, "algos"); /* optional */
    const char *keys[8];
    int nk = 0;
    for (int k = 0; k < 4; k++) keys[nk++] = base[k];
    for (int k = 0; k < 3 && with_layout; k++) keys[nk++] = lay[k];
    if (algos) keys[nk++] = "algos";
    tsl_status st = check_keys(p->file, (snprintf(path, sizeof path, "jobs[%d]", jj), path), o,
                               "", keys, nk);
    if (st != TSL_OK) return st;
    const tsl_workload *w = p->w;
    int32_t dup;
    if (!index_build(&p->tix, (const char *)w->tensors, sizeof *w->tensors, w->n_tensors, &dup) ||
        !index_build(&p->oix, (const char *)w->ops, sizeof *w->ops, w->n_ops, &dup))
        return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", p->file);

    json_t *pk = json_object_get(o, "predicted_peak_bytes");
    snprintf(path, sizeof path, "jobs[%d].predicted_peak_bytes", jj);
    if (!json_is_integer(pk))
        return tsl__json_bad(p->file, path, "expected an integer, got %s %s", tsl__json_type_name(pk),
                   tsl__json_value_str(pk, vb, sizeof vb));
    json_int_t peak = json_integer_value(pk);
    if (peak < 0 || peak > TSL__PLAN_MAX_BYTES)
        return tsl__json_bad(p->file, path, "%lld is %s (expected 0 to %lld)", (long long)peak,
                   peak < 0 ? "negative" : "absurd", (long long)TSL__PLAN_MAX_BYTES);
    double period;
    snprintf(path, sizeof path, "jobs[%d].predicted_period_us", jj);
    if ((st = tsl__json_get_time(p->file, path,
            json_object_get(o, "predicted_period_us"), TSL__PLAN_MAX_US, &period)))
        return st;

    json_t *ev = json_object_get(o, "events");
    snprintf(path, sizeof path, "jobs[%d].events", jj);
    if (!json_is_array(ev))
        return tsl__json_bad(p->file, path, "expected an array, got %s %s", tsl__json_type_name(ev),
                   tsl__json_value_str(ev, vb, sizeof vb));
    if (json_array_size(ev) > TSL__PLAN_MAX_EVENTS)
        return tsl__json_bad(p->file, path, "%zu events is absurd (limit %d)", json_array_size(ev),
                   TSL__PLAN_MAX_EVENTS);

    tsl_plan *pl = tsl_plan_new(w->job);
    if (!pl) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", p->file);
    pl->predicted_peak = (size_t)peak;
    pl->predicted_period_us = period;
    if (algos && (st = parse_algos(p, jj, algos, pl)) != TSL_OK) { /* before the layout's sizes */
        tsl_plan_free(pl);
        return st;
    }
    for (size_t k = 0; k < json_array_size(ev); k++) {
        tsl_event e;
        st = parse_event(p, jj, (int32_t)k, json_array_get(ev, k), &e);
        if (st == TSL_OK) st = tsl_plan_add(pl, e);
        if (st != TSL_OK) {
            tsl_plan_free(pl);
            return st;
        }
    }
    if (with_layout && (st = parse_layout(p, jj, o, pl)) != TSL_OK) {
        tsl_plan_free(pl);
        return st;
    }
    *out = pl;
    return TSL_OK;
}

/* Parses a non-negative integer up to max at path into *v. */
static tsl_status get_count(const char *file, const char *path, json_t *x, json_int_t max,
                            json_int_t *v) {
    char vb[80];
    if (!json_is_integer(x))
        return tsl__json_bad(file, path, "expected an integer, got %s %s", tsl__json_type_name(x),
                             tsl__json_value_str(x, vb, sizeof vb));
    *v = json_integer_value(x);
    if (*v < 0 || *v > max)
        return tsl__json_bad(file, path, "%lld is %s (expected 0 to %lld)", (long long)*v,
                             *v < 0 ? "negative" : "absurd", (long long)max);
    return TSL_OK;
}

static int cmp_block(const void *x, const void *y) {
    const tsl_plan_block *a = x, *b = y;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->op != b->op) return a->op < b->op ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* 1 if `bytes` is the block of a recomputation of an output of op (its
 * workspace ws, then the scratch of its other outputs: sched/remat.h). */
static int recompute_block(const tsl_workload *w, int32_t op, size_t ws, size_t bytes) {
    const tsl_wl_op *o = &w->ops[op];
    for (int j = 0; j < o->n_out; j++) {
        int32_t x = o->out[j];
        if (x >= 0 && x < w->n_tensors && w->tensors[x].producer == op && tsl__replays(w, x) &&
            tsl__replay_block_ws(w, x, ws) == bytes)
            return 1;
    }
    return 0;
}

/* Parses one block of the layout (object x at layout[k]) into *b. */
static tsl_status parse_block(parser *p, int jj, size_t k, json_t *x, tsl_plan_block *b,
                              const tsl_plan *pl) {
    static const char *const tkeys[] = {"tensor", "residency", "offset"};
    static const char *const wkeys[] = {"workspace", "run", "offset", "bytes"};
    char path[96], vb[80];
    snprintf(path, sizeof path, "jobs[%d].layout[%zu]", jj, k);
    if (!json_is_object(x))
        return tsl__json_bad(p->file, path, "expected an object, got %s %s", tsl__json_type_name(x),
                             tsl__json_value_str(x, vb, sizeof vb));
    int ws = json_object_get(x, "workspace") != NULL;
    /* "bytes": only a recomputation's workspace block has it */
    tsl_status st = check_keys(p->file, path, x, "", ws ? wkeys : tkeys,
                               ws && json_object_get(x, "bytes") ? 4 : 3);
    if (st != TSL_OK) return st;
    const char *name = json_string_value(json_object_get(x, ws ? "workspace" : "tensor"));
    snprintf(path, sizeof path, "jobs[%d].layout[%zu].%s", jj, k, ws ? "workspace" : "tensor");
    if (!name)
        return tsl__json_bad(p->file, path, "expected a name");
    int32_t i = index_find(ws ? &p->oix : &p->tix, name);
    if (i < 0)
        return tsl__json_bad(p->file, path, "'%s' is no %s of job '%s'", name,
                             ws ? "op" : "tensor", p->w->job);
    size_t bytes = ws ? tsl_workload_op_algo(p->w, i, tsl_plan_op_algo(pl, i)).workspace
                      : p->w->tensors[i].bytes;
    json_t *jb = ws ? json_object_get(x, "bytes") : NULL;
    if (jb) { /* a recomputation's block */
        json_int_t nb;
        snprintf(path, sizeof path, "jobs[%d].layout[%zu].bytes", jj, k);
        if ((st = get_count(p->file, path, jb, TSL__PLAN_MAX_BYTES, &nb))) return st;
        if (!nb || !recompute_block(p->w, i, bytes, (size_t)nb))
            return tsl__json_bad(p->file, path, "%lld bytes is no recomputation block of op '%s' "
                                 "(its workspace with the scratch of its other outputs)",
                                 (long long)nb, name);
        bytes = (size_t)nb;
    } else if (ws && !bytes)
        return tsl__json_bad(p->file, path, "op '%s' has no workspace", name);
    json_int_t seq, off;
    snprintf(path, sizeof path, "jobs[%d].layout[%zu].%s", jj, k, ws ? "run" : "residency");
    if ((st = get_count(p->file, path, json_object_get(x, ws ? "run" : "residency"),
                        TSL__PLAN_MAX_EVENTS, &seq)))
        return st;
    snprintf(path, sizeof path, "jobs[%d].layout[%zu].offset", jj, k);
    if ((st = get_count(p->file, path, json_object_get(x, "offset"), TSL__PLAN_MAX_BYTES, &off)))
        return st;
    *b = (tsl_plan_block){ws ? -1 : i, ws ? i : -1, (int32_t)seq, bytes, (size_t)off};
    return TSL_OK;
}

/* Parses the layout of jobs[jj] (object o) into plan pl. */
static tsl_status parse_layout(parser *p, int jj, json_t *o, tsl_plan *pl) {
    char path[64], vb[80];
    json_int_t fp, al;
    tsl_status st;
    snprintf(path, sizeof path, "jobs[%d].predicted_footprint_bytes", jj);
    if ((st = get_count(p->file, path, json_object_get(o, "predicted_footprint_bytes"),
                        TSL__PLAN_MAX_BYTES, &fp)))
        return st;
    snprintf(path, sizeof path, "jobs[%d].layout_alignment", jj);
    if ((st = get_count(p->file, path, json_object_get(o, "layout_alignment"), (json_int_t)1 << 30,
                        &al)))
        return st;
    if (al == 0 || (al & (al - 1)))
        return tsl__json_bad(p->file, path, "%lld is not a power of two", (long long)al);
    json_t *lay = json_object_get(o, "layout");
    snprintf(path, sizeof path, "jobs[%d].layout", jj);
    if (!json_is_array(lay))
        return tsl__json_bad(p->file, path, "expected an array, got %s %s", tsl__json_type_name(lay),
                             tsl__json_value_str(lay, vb, sizeof vb));
    size_t n = json_array_size(lay);
    if (n > TSL__PLAN_MAX_EVENTS)
        return tsl__json_bad(p->file, path, "%zu blocks is absurd (limit %d)", n,
                             TSL__PLAN_MAX_EVENTS);
    tsl_plan_block *b = malloc((n ? n : 1) * sizeof *b);
    if (!b) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", p->file);
    for (size_t k = 0; k < n; k++)
        if ((st = parse_block(p, jj, k, json_array_get(lay, k), &b[k], pl)) != TSL_OK) {
            free(b);
            return st;
        }
    qsort(b, n, sizeof *b, cmp_block);
    for (size_t k = 1; k < n; k++)
        if (!cmp_block(&b[k - 1], &b[k])) {
            int ws = b[k].tensor < 0;
            st = tsl__json_bad(p->file, path, "two blocks for %s '%s' %s %d",
                               ws ? "workspace" : "tensor",
                               ws ? p->w->ops[b[k].op].name : p->w->tensors[b[k].tensor].name,
                               ws ? "run" : "residency", b[k].seq);
            free(b);
            return st;
        }
    pl->blocks = b;
    pl->n_blocks = (int32_t)n;
    pl->layout_align = (size_t)al;
    pl->predicted_footprint = (size_t)fp;
    return TSL_OK;
}

/* Parses the root object into plans[0..n) (matched to w[] by job name). */
static tsl_status parse_root(const char *file, json_t *root, const tsl_workload *const *w, int n,
                             tsl_plan **plans) {
    char vb[80], path[64];
    if (!json_is_object(root))
        return tsl__json_bad(file, "root", "expected an object, got %s %s", tsl__json_type_name(root),
                   tsl__json_value_str(root, vb, sizeof vb));
    static const char *const keys[] = {"jobs"};
    tsl_status st = check_keys(file, "root", root, "", keys, 1);
    if (st != TSL_OK) return st;
    json_t *jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs))
        return tsl__json_bad(file, "jobs", "expected an array, got %s %s", tsl__json_type_name(jobs),
                   tsl__json_value_str(jobs, vb, sizeof vb));
    if (json_array_size(jobs) != (size_t)n)
        return tsl__json_bad(file, "jobs", "%zu jobs, but %d workload%s given", json_array_size(jobs), n,
                   n == 1 ? " is" : "s are");
    int *seen = malloc(sizeof *seen * (size_t)(n ? n : 1));
    if (!seen) return tsl_fail(TSL_ERR_OOM, "%s: out of host memory", file);
    for (int i = 0; i < n; i++) seen[i] = -1;
    parser p = {.file = file};
    for (int jj = 0; jj < n && st == TSL_OK; jj++) {
        json_t *o = json_array_get(jobs, (size_t)jj);
        snprintf(path, sizeof path, "jobs[%d]", jj);
        if (!json_is_object(o)) {
            st = tsl__json_bad(file, path, "expected an object, got %s %s", tsl__json_type_name(o),
                     tsl__json_value_str(o, vb, sizeof vb));
            break;
        }
        const char *name;
        snprintf(path, sizeof path, "jobs[%d].job", jj);
        json_t *jv = json_object_get(o, "job");
        if (!jv) {
            st = tsl__json_bad(file, path, "missing");
            break;
        }
        if ((st = tsl__json_get_name(file, path, jv, sizeof w[0]->job, &name))) break;
        int wi = 0;
        while (wi < n && strcmp(w[wi]->job, name) != 0) wi++;
        if (wi == n) {
            st = tsl__json_bad(file, path, "unknown job '%s' (no workload of that name)", name);
            break;
        }
        if (seen[wi] >= 0) {
            st = tsl__json_bad(file, path, "duplicate job '%s' (also jobs[%d])", name, seen[wi]);
            break;
        }
        seen[wi] = jj;
        p.w = w[wi];
        st = parse_job(&p, jj, o, &plans[wi]);
        free(p.tix.slot);
        free(p.oix.slot);
        p.tix.slot = p.oix.slot = NULL;
    }
    if (st != TSL_OK)
        for (int i = 0; i < n; i++)
            if (seen[i] >= 0 && seen[i] < n) {
                tsl_plan_free(plans[i]);
                plans[i] = NULL;
            }
    free(seen);
    return st;
}

/* Checks what naming needs: distinct job names, distinct tensor names and
 * op names within a job, no op named "start". TSL_ERR_INVALID otherwise. */
static tsl_status check_workloads(const tsl_workload *const *w, int n) {
    for (int i = 0; i < n; i++) {
        TSL_ASSERT(w[i]);
        for (int k = 0; k < i; k++)
            if (strcmp(w[i]->job, w[k]->job) == 0)
                return tsl_fail(TSL_ERR_INVALID, "plan JSON: workloads %d and %d are both job '%s'",
                                k, i, w[i]->job);
        name_index ti, oi;
        int32_t dt, dop;
        int ok1 = index_build(&ti, (const char *)w[i]->tensors, sizeof *w[i]->tensors,
                              w[i]->n_tensors, &dt);
        int ok2 = index_build(&oi, (const char *)w[i]->ops, sizeof *w[i]->ops, w[i]->n_ops, &dop);
        free(ti.slot);
        free(oi.slot);
        if (!ok1 || !ok2) return tsl_fail(TSL_ERR_OOM, "plan JSON: out of host memory");
        if (dt >= 0)
            return tsl_fail(TSL_ERR_INVALID,
                            "plan JSON: workload '%s': tensors[%d] repeats the "
                            "name '%s'",
                            w[i]->job, (int)dt, w[i]->tensors[dt].name);
        if (dop >= 0)
            return tsl_fail(TSL_ERR_INVALID,
                            "plan JSON: workload '%s': ops[%d] repeats the name "
                            "'%s'",
                            w[i]->job, (int)dop, w[i]->ops[dop].name);
        for (int32_t o = 0; o < w[i]->n_ops; o++)
            if (strcmp(w[i]->ops[o].name, "start") == 0)
                return tsl_fail(TSL_ERR_INVALID,
                                "plan JSON: workload '%s': ops[%d] is named "
                                "'start', which names the iteration start",
                                w[i]->job, (int)o);
    }
    return TSL_OK;
}

/* Parses the JSON form in text[0..len) into plans[0..n), plans[i] for the
 * workload w[i] (jobs matched by name). `name` labels messages (a file
 * name; NULL: "plan"). Returns TSL_OK with every plans[i] set (free each
 * with tsl_plan_free); TSL_ERR_FORMAT naming the field path and value for
 * anything malformed; TSL_ERR_INVALID if the workloads cannot be told apart
 * (same job name, repeated tensor or op names, an op named "start");
 * TSL_ERR_OOM. On failure plans[] is left untouched. */
tsl_status tsl_plan_parse_json(const char *text, size_t len, const char *name,
                               const tsl_workload *const *w, int n, tsl_plan **plans) {
    TSL_ASSERT(plans && n >= 0 && (n == 0 || w));
    const char *file = name ? name : "plan";
    tsl_status st = check_workloads(w, n);
    if (st != TSL_OK) return st;
    json_error_t err;
    json_t *root = json_loadb(text ? text : "", text ? len : 0, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return tsl_fail(TSL_ERR_FORMAT, "%s:%d:%d: not valid JSON: %s", file, err.line, err.column,
                        err.text);
    tsl_plan **tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    st = tmp ? parse_root(file, root, w, n, tmp)
             : tsl_fail(TSL_ERR_OOM, "%s: out of host memory", file);
    json_decref(root);
    if (st == TSL_OK)
        for (int i = 0; i < n; i++) plans[i] = tmp[i];
    free(tmp);
    return st;
}

/* Reads a plan file (at most TSL__PLAN_MAX_FILE bytes) and parses it as
 * tsl_plan_parse_json does; TSL_ERR_IO naming the path if it cannot be
 * read. */
tsl_status tsl_plan_read_json(const char *path, const tsl_workload *const *w, int n,
                              tsl_plan **plans) {
    TSL_ASSERT(path);
    char *buf;
    size_t got;
    tsl_status rs = tsl__json_read_file(path, "plan", TSL__PLAN_MAX_FILE, &buf, &got);
    if (rs != TSL_OK) return rs;
    tsl_status st = tsl_plan_parse_json(buf, got, path, w, n, plans);
    free(buf);
    return st;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Checks that plans[i] can be written for w[i]; TSL_ERR_INVALID naming the
 * job, the event and the field otherwise. */
static tsl_status check_plan(const tsl_plan *p, const tsl_workload *w, int i) {
    if (strcmp(p->job, w->job) != 0)
        return tsl_fail(TSL_ERR_INVALID,
                        "plan JSON: plans[%d] is for job '%s' but its workload is "
                        "job '%s'",
                        i, p->job, w->job);
    if (p->n_events < 0 || (p->n_events > 0 && !p->events) || p->n_events > TSL__PLAN_MAX_EVENTS)
        return tsl_fail(TSL_ERR_INVALID, "plan JSON: job '%s': %d events", p->job,
                        (int)p->n_events);
    if (p->predicted_peak > (size_t)TSL__PLAN_MAX_BYTES)
        return tsl_fail(TSL_ERR_INVALID,
                        "plan JSON: job '%s': predicted_peak %zu bytes is absurd "
                        "(limit %lld)",
                        p->job, p->predicted_peak, (long long)TSL__PLAN_MAX_BYTES);
    double pr = p->predicted_period_us;
    if (!isfinite(pr) || pr < 0 || pr > TSL__PLAN_MAX_US)
        return tsl_fail(TSL_ERR_INVALID,
                        "plan JSON: job '%s': predicted_period_us %g is negative, "
                        "not finite or absurd",
                        p->job, pr);
    if (p->n_blocks < 0 || (p->n_blocks > 0 && !p->blocks) || p->n_blocks > TSL__PLAN_MAX_EVENTS ||
        (p->n_blocks > 0 && (!p->layout_align || (p->layout_align & (p->layout_align - 1)) ||
                             p->layout_align > ((size_t)1 << 30) ||
                             p->predicted_footprint > (size_t)TSL__PLAN_MAX_BYTES)))
        return tsl_fail(TSL_ERR_INVALID,
                        "plan JSON: job '%s': a layout of %d blocks, alignment %zu, "
                        "footprint %zu bytes",
                        p->job, (int)p->n_blocks, p->layout_align, p->predicted_footprint);
    if (p->n_algos < 0 || (p->n_algos > 0 && !p->algos) || p->n_algos > w->n_ops)
        return tsl_fail(TSL_ERR_INVALID, "plan JSON: job '%s': %d algorithm choices", p->job,
                        (int)p->n_algos);
    for (int32_t x = 0; x < p->n_algos; x++) {
        const tsl_plan_algo *c = &p->algos[x];
        if (c->op < 0 || c->op >= w->n_ops || (x > 0 && c->op <= p->algos[x - 1].op) ||
            c->algo < 1 || c->algo >= tsl_workload_op_n_algos(w, c->op))
            return tsl_fail(TSL_ERR_INVALID,
                            "plan JSON: job '%s': algorithm choice %d (op %d, algorithm %d) names "
                            "no algorithm of the workload, or is out of order",
                            p->job, (int)x, c->op, c->algo);
    }
    for (int32_t k = 0; k < p->n_blocks; k++) {
        const tsl_plan_block *b = &p->blocks[k];
        size_t wsb = b->op >= 0 && b->op < w->n_ops
                         ? tsl_workload_op_algo(w, b->op, tsl_plan_op_algo(p, b->op)).workspace
                         : 0;
        int ok = b->tensor >= 0 ? b->tensor < w->n_tensors && b->op == -1 &&
                                      b->bytes == w->tensors[b->tensor].bytes
                                : b->op >= 0 && b->op < w->n_ops && b->bytes &&
                                      (b->bytes == wsb || recompute_block(w, b->op, wsb, b->bytes));
        if (!ok || b->seq < 0 || b->offset > (size_t)TSL__PLAN_MAX_BYTES ||
            (k > 0 && cmp_block(&p->blocks[k - 1], b) >= 0))
            return tsl_fail(TSL_ERR_INVALID,
                            "plan JSON: job '%s': layout block %d (tensor %d, op %d, seq %d, "
                            "%zu bytes at %zu) names no block of the workload, or is out of "
                            "order",
                            p->job, (int)k, b->tensor, b->op, b->seq, b->bytes, b->offset);
    }
    char field[32], msg[256];
    for (int32_t k = 0; k < p->n_events; k++)
        if (!event_representable(w, &p->events[k], field, sizeof field, msg, sizeof msg))
            return tsl_fail(TSL_ERR_INVALID, "plan JSON: job '%s': events[%d].%s: %s", p->job,
                            (int)k, field, msg);
    return TSL_OK;
}

/* Writes event e (representable for w) as one JSON object with the fields
 * of its type. */
static void put_event(FILE *f, const tsl_workload *w, const tsl_event *e) {
    fprintf(f, "{\"type\": \"%s\", \"tensor\": ", ev_names[e->type]);
    tsl__json_put_str(f, w->tensors[e->tensor].name);
    if (e->type != TSL_EV_RECOMPUTE) {
        fputs(", \"trigger\": ", f);
        tsl__json_put_str(f, e->trigger < 0 ? "start" : w->ops[e->trigger].name);
    }
    int preceding = e->type == TSL_EV_RELEASE && e->precede >= 0;
    if (e->type == TSL_EV_SWAP_OUT || e->type == TSL_EV_SWAP_IN || preceding) {
        fputs(", \"delay_us\": ", f);
        tsl__json_put_real(f, e->delay_us);
    }
    if (e->type == TSL_EV_SWAP_IN || e->type == TSL_EV_RECOMPUTE || preceding) {
        fputs(", \"precede\": ", f);
        tsl__json_put_str(f, w->ops[e->precede].name);
    }
    fputc('}', f);
}

/* Plans and their workloads, for put_plans. */
typedef struct plans_arg {
    const tsl_plan *const *plans;
    const tsl_workload *const *w;
    int n;
} plans_arg;

/* Writes the plans' JSON text to f (checked by the caller): one event per
 * line, doubles in the shortest form that reads back to the same bits.
 * Deterministic: the same plans give the same bytes. */
static void put_plans(FILE *f, const void *ctx) {
    const plans_arg *a = ctx;
    const tsl_plan *const *plans = a->plans;
    const tsl_workload *const *w = a->w;
    int n = a->n;
    fputs("{\"jobs\": [", f);
    for (int i = 0; i < n; i++) {
        const tsl_plan *p = plans[i];
        fputs(i ? ",\n " : "\n ", f);
        fputs("{\"job\": ", f);
        tsl__json_put_str(f, p->job);
        fprintf(f, ", \"predicted_peak_bytes\": %zu, \"predicted_period_us\": ", p->predicted_peak);
        tsl__json_put_real(f, p->predicted_period_us);
        if (p->n_blocks > 0)
            fprintf(f, ", \"predicted_footprint_bytes\": %zu, \"layout_alignment\": %zu",
                    p->predicted_footprint, p->layout_align);
        if (p->n_algos > 0) { /* only then: a plan without choices is written as before */
            fputs(",\n  \"algos\": [", f);
            for (int32_t x = 0; x < p->n_algos; x++) {
                fputs(x ? ", {\"op\": " : "{\"op\": ", f);
                tsl__json_put_str(f, w[i]->ops[p->algos[x].op].name);
                fprintf(f, ", \"algo\": %d}", (int)p->algos[x].algo);
            }
            fputc(']', f);
        }
        fputs(",\n  \"events\": [", f);
        for (int32_t k = 0; k < p->n_events; k++) {
            fputs(k ? ",\n   " : "\n   ", f);
            put_event(f, w[i], &p->events[k]);
        }
        fputs(p->n_events ? "\n  ]" : "]", f);
        if (p->n_blocks > 0) {
            fputs(",\n  \"layout\": [", f);
            for (int32_t k = 0; k < p->n_blocks; k++) {
                const tsl_plan_block *b = &p->blocks[k];
                fputs(k ? ",\n   {\"" : "\n   {\"", f);
                fputs(b->tensor >= 0 ? "tensor\": " : "workspace\": ", f);
                tsl__json_put_str(f, b->tensor >= 0 ? w[i]->tensors[b->tensor].name
                                                    : w[i]->ops[b->op].name);
                fprintf(f, ", \"%s\": %d, \"offset\": %zu",
                        b->tensor >= 0 ? "residency" : "run", b->seq, b->offset);
                if (b->tensor < 0 &&
                    b->bytes != tsl_workload_op_algo(w[i], b->op, tsl_plan_op_algo(p, b->op)).workspace)
                    fprintf(f, ", \"bytes\": %zu", b->bytes); /* a recomputation's block */
                fputc('}', f);
            }
            fputs("\n  ]", f);
        }
        fputc('}', f);
    }
    fputs(n ? "\n]}\n" : "]}\n", f);
}

/* Checks plans and workloads as the reader will (see tsl_plan_write_json:
 * TSL_ERR_INVALID naming the job, event and field for a plan the reader
 * would reject, see event_representable, or workloads it could not tell
 * apart). */
static tsl_status check_all(const tsl_plan *const *plans, int n, const tsl_workload *const *w) {
    tsl_status st = check_workloads(w, n);
    for (int i = 0; i < n && st == TSL_OK; i++) {
        TSL_ASSERT(plans[i]);
        st = check_plan(plans[i], w[i], i);
    }
    return st;
}

/* Writes plans[0..n) (plans[i] for workload w[i]) to `path` in the JSON
 * form (put_plans). TSL_ERR_INVALID as check_all; TSL_ERR_IO naming the
 * path (the file is written whole or not at all, io/atomic_file.h). */
tsl_status tsl_plan_write_json(const tsl_plan *const *plans, int n, const tsl_workload *const *w,
                               const char *path) {
    TSL_ASSERT(path && n >= 0 && (n == 0 || (plans && w)));
    tsl_status st = check_all(plans, n, w);
    if (st != TSL_OK) return st;
    tsl__out *o;
    if ((st = tsl__out_open(path, "plan", &o)) != TSL_OK) return st;
    plans_arg a = {plans, w, n};
    put_plans(tsl__out_stream(o), &a);
    return tsl__out_commit(o);
}

tsl_status tsl_plan_to_text(const tsl_plan *const *plans, int n, const tsl_workload *const *w,
                            char **text, size_t *len) {
    TSL_ASSERT(text && len && n >= 0 && (n == 0 || (plans && w)));
    *text = NULL;
    *len = 0;
    tsl_status st = check_all(plans, n, w);
    if (st != TSL_OK) return st;
    plans_arg a = {plans, w, n};
    return tsl__json_text(put_plans, &a, "plan", text, len);
}
