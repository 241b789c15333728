/* threads.c - the one thread pool the CPU backend uses: OpenMP's (oneDNN,
 * its sgemm and the own loops all run on it). */
#include <omp.h>
#include "backend/cpu/kernel.h"
#include "core/assert.h"

void tsl_cpu_set_threads(int nthreads) {
    TSL_ASSERT(nthreads >= 1);
    omp_set_num_threads(nthreads);
}

int tsl__omp_threads(int nthreads) {
    TSL_ASSERT(nthreads >= 1);
    int prev = omp_get_max_threads();
    if (prev != nthreads) omp_set_num_threads(nthreads);
    return prev;
}

int tsl_cpu_usable_threads(int nthreads) {
    int limit = omp_get_thread_limit();
    return limit >= 1 && nthreads > limit ? limit : nthreads;
}
