/* trace.c - see trace.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "io/atomic_file.h"
#include "io/trace.h"

struct tsl__trace {
    tsl__out *out;          /* written whole or not at all (io/atomic_file.h) */
    FILE *f;
    char *path;
    long n;                 /* events written */
    tsl_status err;         /* first error */
    int errno_;             /* its errno, for TSL_ERR_IO */
};

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

tsl_status tsl__trace_open(const char *path, tsl__trace **out) {
    TSL_ASSERT(path && out);
    tsl__trace *tr = calloc(1, sizeof *tr);
    char *p = tr ? strdup(path) : NULL;
    if (!tr || !p) {
        free(tr);
        return tsl_fail(TSL_ERR_OOM, "trace '%s': out of host memory", path);
    }
    tr->path = p;
    tsl_status st = tsl__out_open(path, "trace", &tr->out);
    if (st != TSL_OK) {
        free(tr->path);
        free(tr);
        return st;
    }
    tr->f = tsl__out_stream(tr->out);
    if (fputs("{\"traceEvents\":[\n", tr->f) < 0) {
        tr->err = TSL_ERR_IO;
        tr->errno_ = errno;
    }
    *out = tr;
    return TSL_OK;
}

/* Writes one event object and drops the reference. */
static void emit(tsl__trace *tr, json_t *ev) {
    if (!ev) {
        if (tr->err == TSL_OK) tr->err = TSL_ERR_OOM;
        return;
    }
    if (tr->err == TSL_OK) {
        if ((tr->n > 0 && fputs(",\n", tr->f) < 0) || json_dumpf(ev, tr->f, DUMP_FLAGS) != 0) {
            tr->err = TSL_ERR_IO;
            tr->errno_ = errno;
        }
        tr->n++;
    }
    json_decref(ev);
}

static void meta(tsl__trace *tr, int pid, int tid, const char *what, json_t *args) {
    json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:o}", "name", what, "ph", "M", "pid", pid,
                           "tid", tid, "args", args);
    emit(tr, ev);
}

void tsl__trace_process(tsl__trace *tr, int pid, const char *name, int sort_index) {
    meta(tr, pid, 0, "process_name", json_pack("{s:s}", "name", name));
    meta(tr, pid, 0, "process_sort_index", json_pack("{s:i}", "sort_index", sort_index));
}

void tsl__trace_thread(tsl__trace *tr, int pid, int tid, const char *name, int sort_index) {
    meta(tr, pid, tid, "thread_name", json_pack("{s:s}", "name", name));
    meta(tr, pid, tid, "thread_sort_index", json_pack("{s:i}", "sort_index", sort_index));
}

void tsl__trace_complete(tsl__trace *tr, int pid, int tid, const char *name, const char *cat,
                         double ts, double dur, json_t *args) {
    json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f}", "name", name, "cat", cat, "ph",
                           "X", "pid", pid, "tid", tid, "ts", ts, "dur", dur);
    if (ev && args) json_object_set_new(ev, "args", args);
    else json_decref(args);
    emit(tr, ev);
}

void tsl__trace_counter(tsl__trace *tr, int pid, const char *name, double ts,
                        const char *series, double value) {
    json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:f, s:{s:f}}", "name", name, "ph", "C", "pid",
                           pid, "tid", 0, "ts", ts, "args", series, value);
    emit(tr, ev);
}

tsl_status tsl__trace_close(tsl__trace *tr, json_t *other) {
    if (tr->err == TSL_OK) {
        int bad = fputs("\n],\"displayTimeUnit\":\"ms\"", tr->f) < 0;
        if (!bad && other) {
            bad = fputs(",\"otherData\":", tr->f) < 0 || json_dumpf(other, tr->f, DUMP_FLAGS);
        }
        if (!bad) bad = fputs("}\n", tr->f) < 0;
        if (bad) {
            tr->err = TSL_ERR_IO;
            tr->errno_ = errno;
        }
    }
    json_decref(other);
    tsl_status st = TSL_OK;
    if (tr->err == TSL_OK) {
        st = tsl__out_commit(tr->out); /* flushed, synced, renamed; names the path */
    } else {
        tsl__out_abort(tr->out); /* no partial trace is left */
        if (tr->err == TSL_ERR_IO)
            st = tsl_fail(TSL_ERR_IO, "trace '%s': write failed after %ld events: %s", tr->path,
                          tr->n, strerror(tr->errno_));
        else
            st = tsl_fail(tr->err, "trace '%s': out of host memory after %ld events", tr->path,
                          tr->n);
    }
    free(tr->path);
    free(tr);
    return st;
}
