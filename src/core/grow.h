/*
 * grow.h - room for one more record in a doubling array.
 *
 *   if (tsl__grow((void **)&log->span, log->n_span, &log->cap_span, sizeof *log->span)) oom;
 *   log->span[log->n_span++] = s;
 */
#ifndef TSL_CORE_GROW_H
#define TSL_CORE_GROW_H
#include <stdint.h>
#include <stdlib.h>

/* Makes *a (records of `size` bytes, *cap of them allocated, n used) hold
 * at least n + 1, doubling (first 1024). Returns 0, or -1 if out of memory
 * (*a and *cap as they were). */
static inline int tsl__grow(void **a, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 0;
    int64_t c = *cap ? 2 * *cap : 1024;
    void *p = realloc(*a, (size_t)c * size);
    if (!p) return -1;
    *a = p;
    *cap = c;
    return 0;
}
#endif
