/* bench_memcurve.c - see bench_memcurve.h. */
#include <jansson.h>
#include <string.h>

#include "bench_memcurve.h"

/* The last "iteration K" span of pid 1: its start and end (us). 0, or -1
 * if there is none. */
static int last_iteration(json_t *ev, double *t0, double *t1) {
    size_t i;
    json_t *e;
    int found = 0;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!ph || !name || strcmp(ph, "X") || strncmp(name, "iteration ", 10) ||
            json_integer_value(json_object_get(e, "pid")) != 1)
            continue;
        double ts = json_number_value(json_object_get(e, "ts"));
        if (!found || ts > *t0) {
            *t0 = ts;
            *t1 = ts + json_number_value(json_object_get(e, "dur"));
        }
        found = 1;
    }
    return found ? 0 : -1;
}

int bm_memory_curve(const char *trace_path, FILE *csv, const char *model, const char *policy) {
    json_error_t err;
    json_t *root = json_load_file(trace_path, 0, &err);
    json_t *ev = root ? json_object_get(root, "traceEvents") : NULL;
    double t0 = 0, t1 = 0;
    if (!json_is_array(ev) || last_iteration(ev, &t0, &t1)) {
        fprintf(stderr, "tensile bench: %s: no simulated iteration in the trace%s%s\n", trace_path,
                root ? "" : ": ", root ? "" : err.text);
        json_decref(root);
        return -1;
    }
    /* counters come in time order: the value before t0 is the start's */
    double before = 0, last = 0;
    int rows = 0, started = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!ph || !name || strcmp(ph, "C") || strcmp(name, "memory") ||
            json_integer_value(json_object_get(e, "pid")) != 1)
            continue;
        double ts = json_number_value(json_object_get(e, "ts"));
        double b = json_number_value(json_object_get(json_object_get(e, "args"), "bytes"));
        if (ts < t0) {
            before = b;
            continue;
        }
        if (ts > t1) break;
        if (!started) {
            fprintf(csv, "%s,%s,%.4f,%.4f\n", model, policy, 0.0, before / 1048576.0);
            rows++;
            started = 1;
        }
        fprintf(csv, "%s,%s,%.4f,%.4f\n", model, policy, (ts - t0) / 1000.0, b / 1048576.0);
        last = b;
        rows++;
    }
    if (!started) last = before;
    fprintf(csv, "%s,%s,%.4f,%.4f\n", model, policy, (t1 - t0) / 1000.0, last / 1048576.0);
    json_decref(root);
    return rows + 1;
}
