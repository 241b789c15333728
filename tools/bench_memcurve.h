/*
 * bench_memcurve.h - the memory of one job over one simulated iteration,
 * read back from the simulator's Chrome trace (src/sim/sim_trace.c: the
 * job's "memory" counter, its "iteration K" spans), for the figure
 * "memory over one iteration per policy".
 */
#ifndef TSL_TOOLS_BENCH_MEMCURVE_H
#define TSL_TOOLS_BENCH_MEMCURVE_H
#include <stdio.h>

/* Reads the trace at trace_path and appends to csv one row per change of
 * the load of the first job (pid 1) during its last iteration, plus its
 * load at the iteration's start and end: "model,policy,t_ms,load_mib", t
 * from the iteration's start. Returns the rows written, or -1 with a
 * message on stderr (the trace unreadable or without an iteration). */
int bm_memory_curve(const char *trace_path, FILE *csv, const char *model, const char *policy);
#endif
