/* threads.c - one knob for every thread pool the CPU backend uses. */
#include <cblas.h>
#include <omp.h>
#include "backend/cpu/kernel.h"
#include "core/assert.h"

void tsl_cpu_set_threads(int nthreads) {
    TSL_ASSERT(nthreads >= 1);
    omp_set_num_threads(nthreads);      /* oneDNN and the reference loops */
    openblas_set_num_threads(nthreads); /* OpenBLAS's own pthread pool    */
}

int tsl_cpu_usable_threads(int nthreads) {
    int limit = omp_get_thread_limit();
    return limit >= 1 && nthreads > limit ? limit : nthreads;
}
