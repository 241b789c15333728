/* sim_memory.c - per-job and global loads, and their peaks (see
 * sim_engine.c for which samples count: steady state per job, every job past
 * its first iteration for the global peak). */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "sim/sim_state.h"

/* Records the loads after a change; `grew` when the change was an allocation
 * (peaks can only rise then). */
void tsl__sim_note(sim *s, int jx, int grew) {
    prog *p = &s->pr[jx];
    if (grew) {
        if (p->load > p->iter_peak) p->iter_peak = p->load;
        if (tsl__sim_steady(s, p) && p->load > p->steady_peak) p->steady_peak = p->load;
        if (s->steady_all && s->global_load > s->global_peak) s->global_peak = s->global_load;
    }
    if (s->log) {
        tsl__sim_mem m = {tsl__sim_abs_now(s), jx, p->load, s->global_load};
        tsl__sim_log_mem(s->log, &m);
    }
}

void tsl__sim_mem_add(sim *s, int jx, size_t b) {
    s->pr[jx].load += b;
    s->global_load += b;
    tsl__sim_note(s, jx, 1);
}

void tsl__sim_mem_sub(sim *s, int jx, size_t b) {
    TSL_ASSERT(s->pr[jx].load >= b && s->global_load >= b);
    s->pr[jx].load -= b;
    s->global_load -= b;
    tsl__sim_note(s, jx, 0);
}

void tsl__sim_t_alloc(sim *s, tsl__sim_job *j, int32_t t) {
    TSL_ASSERT(!j->alloc[t]);
    j->alloc[t] = 1;
    tsl__sim_mem_add(s, j->index, j->w->tensors[t].bytes);
}

void tsl__sim_t_free(sim *s, tsl__sim_job *j, int32_t t) {
    TSL_ASSERT(j->alloc[t]);
    j->alloc[t] = 0;
    j->readable[t] = 0;
    j->incoming[t] = -1; /* a copy still coming in lands nowhere */
    tsl__sim_mem_sub(s, j->index, j->w->tensors[t].bytes);
}
