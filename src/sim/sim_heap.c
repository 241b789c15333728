/* sim_heap.c - see sim_heap.h. */
#include <stdlib.h>
#include "core/heap_impl.h"
#include "sim/sim_heap.h"

/* 1 if a runs before b. */
static int before(const tsl__sim_ev *a, const tsl__sim_ev *b) {
    int c = tsl__sim_key_cmp(a->at, b->at);
    if (c) return c < 0;
    if (a->phase != b->phase) return a->phase < b->phase;
    if (a->job != b->job) return a->job < b->job;
    return a->seq < b->seq;
}

TSL__HEAP_DEFINE(heap, tsl__sim_heap, tsl__sim_ev, before)

int tsl__sim_heap_push(tsl__sim_heap *h, tsl__sim_ev e) { return heap_push(h, e); }

int tsl__sim_heap_pop(tsl__sim_heap *h, tsl__sim_ev *e) {
    if (h->n == 0) return -1;
    *e = heap_pop(h);
    return 0;
}

void tsl__sim_heap_free(tsl__sim_heap *h) {
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
