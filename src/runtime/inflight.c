/* inflight.c - see inflight.h: a ring of launched kernels. */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "runtime/inflight.h"

tsl__launched *tsl__inflight_push(tsl__inflight *q) {
    if (q->n == q->cap) {
        int32_t cap = q->cap ? 2 * q->cap : 64;
        tsl__launched *a = malloc(sizeof *a * (size_t)cap);
        if (!a) return NULL;
        for (int32_t i = 0; i < q->n; i++) a[i] = q->a[(q->head + i) % q->cap];
        free(q->a);
        q->a = a;
        q->head = 0;
        q->cap = cap;
    }
    tsl__launched *l = &q->a[(q->head + q->n) % q->cap];
    memset(l, 0, sizeof *l);
    q->n++;
    return l;
}

tsl__launched *tsl__inflight_oldest(tsl__inflight *q) {
    TSL_ASSERT(q->n > 0);
    return &q->a[q->head];
}

tsl__launched tsl__inflight_pop(tsl__inflight *q) {
    TSL_ASSERT(q->n > 0);
    tsl__launched l = q->a[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return l;
}

void tsl__inflight_free(tsl__inflight *q) {
    free(q->a);
    memset(q, 0, sizeof *q);
}
