/*
 * cpu_backend.h - CPU backend internals used by tests (cpu_backend.c).
 */
#ifndef TSL_BACKEND_CPU_CPU_BACKEND_H
#define TSL_BACKEND_CPU_CPU_BACKEND_H

#include "tensile/backend_cpu.h"

/* Runs tsl_alloc_check on the CPU backend's arena allocator while holding
 * the arena's lock: 1 if consistent, else 0 with the message recorded.
 * `b` must come from tsl_cpu_backend_new (TSL_ASSERT). */
int tsl__cpu_backend_check(tsl_backend *b);

#endif
