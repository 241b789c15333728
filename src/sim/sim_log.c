/* sim_log.c - the simulator's timeline records (see sim_internal.h). */
#include <stdlib.h>
#include "core/grow.h"
#include "sim/sim_internal.h"

int64_t tsl__sim_log_span(tsl__sim_log *log, const tsl__sim_span *s) {
    if (tsl__grow((void **)&log->span, log->n_span, &log->cap_span, sizeof *s)) {
        log->oom = 1;
        return -1;
    }
    log->span[log->n_span] = *s;
    return log->n_span++;
}

void tsl__sim_log_mem(tsl__sim_log *log, const tsl__sim_mem *m) {
    if (tsl__grow((void **)&log->mem, log->n_mem, &log->cap_mem, sizeof *m)) {
        log->oom = 1;
        return;
    }
    log->mem[log->n_mem++] = *m;
}

int64_t tsl__sim_log_iter(tsl__sim_log *log, const tsl__sim_iter *it) {
    if (tsl__grow((void **)&log->iter, log->n_iter, &log->cap_iter, sizeof *it)) {
        log->oom = 1;
        return -1;
    }
    log->iter[log->n_iter] = *it;
    return log->n_iter++;
}

void tsl__sim_log_free(tsl__sim_log *log) {
    if (!log) return;
    free(log->span);
    free(log->mem);
    free(log->iter);
    log->span = NULL;
    log->mem = NULL;
    log->iter = NULL;
    log->n_span = log->n_mem = log->n_iter = 0;
    log->cap_span = log->cap_mem = log->cap_iter = 0;
}
