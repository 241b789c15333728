/*
 * trace.h - a streaming writer of Chrome trace event JSON (the format
 * chrome://tracing and Perfetto open): {"traceEvents": [...], ...}.
 *
 * Events are written as they are given, one per line; every string goes
 * through jansson, so names are escaped correctly. Times are µs. A write
 * error is remembered and reported once, by tsl__trace_close.
 *
 * Example usage:
 *
 *   tsl__trace *tr;
 *   if (tsl__trace_open("run.json", &tr) != TSL_OK) return ...;
 *   tsl__trace_process(tr, 1, "job0", 1);
 *   tsl__trace_thread(tr, 1, 1, "compute", 1);
 *   tsl__trace_complete(tr, 1, 1, "conv1", "op", 0.0, 12.5, NULL);
 *   tsl__trace_counter(tr, 1, "memory", 0.0, "load", 4096);
 *   st = tsl__trace_close(tr, NULL);
 */
#ifndef TSL_SIM_TRACE_H
#define TSL_SIM_TRACE_H

#include <jansson.h>
#include "tensile/status.h"

typedef struct tsl__trace tsl__trace;

/* Starts writing `path` (whole or not at all: io/atomic_file.h, so that
 * a failed or abandoned trace leaves no partial file) and writes the head.
 * TSL_ERR_IO (naming the path and the system's reason) or TSL_ERR_OOM;
 * *out set only on success. */
tsl_status tsl__trace_open(const char *path, tsl__trace **out);

/* Metadata: the name and display order of a process (pid) and of one of its
 * threads (tid), i.e. a track. */
void tsl__trace_process(tsl__trace *tr, int pid, const char *name, int sort_index);
void tsl__trace_thread(tsl__trace *tr, int pid, int tid, const char *name, int sort_index);

/* A complete event ("ph":"X") over [ts, ts + dur]. `args` (may be NULL) is
 * an object whose reference the call steals. */
void tsl__trace_complete(tsl__trace *tr, int pid, int tid, const char *name, const char *cat,
                         double ts, double dur, json_t *args);

/* A counter event ("ph":"C"): series `series` of counter `name` of process
 * pid takes `value` at ts. */
void tsl__trace_counter(tsl__trace *tr, int pid, const char *name, double ts,
                        const char *series, double value);

/* Writes the tail (with `other`, an object stolen into "otherData", may be
 * NULL), commits the file and frees the writer. Returns TSL_OK, or the
 * first error met since open (TSL_ERR_IO naming the path, TSL_ERR_OOM);
 * on an error the destination is left as it was. */
tsl_status tsl__trace_close(tsl__trace *tr, json_t *other);
#endif
