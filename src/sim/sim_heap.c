/* sim_heap.c - see sim_heap.h. */
#include <stdlib.h>
#include "sim/sim_heap.h"

/* 1 if a runs before b. */
static int before(const tsl__sim_ev *a, const tsl__sim_ev *b) {
    int c = tsl__sim_key_cmp(a->at, b->at);
    if (c) return c < 0;
    if (a->phase != b->phase) return a->phase < b->phase;
    if (a->job != b->job) return a->job < b->job;
    return a->seq < b->seq;
}

int tsl__sim_heap_push(tsl__sim_heap *h, tsl__sim_ev e) {
    if (h->n == h->cap) {
        int64_t cap = h->cap ? 2 * h->cap : 256;
        tsl__sim_ev *a = realloc(h->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        h->a = a;
        h->cap = cap;
    }
    e.seq = h->next_seq++;
    int64_t i = h->n++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!before(&e, &h->a[parent])) break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = e;
    return 0;
}

int tsl__sim_heap_pop(tsl__sim_heap *h, tsl__sim_ev *e) {
    if (h->n == 0) return -1;
    *e = h->a[0];
    tsl__sim_ev last = h->a[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c])) c++;
        if (!before(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0) h->a[i] = last;
    return 0;
}

void tsl__sim_heap_free(tsl__sim_heap *h) {
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
