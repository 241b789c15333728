/*
 * layout_conflicts.c - the conflict matrix of the offline layout's blocks
 * (layout_conflicts.h): n^2 / 2 piece comparisons once, then one bit per
 * question.
 */
#include <stdlib.h>

#include "mem/layout_conflicts.h"

void tsl__lay_conflicts_init(tsl__lay_conflicts *c, const tsl__lay_block *b, int32_t n) {
    c->b = b;
    c->words = n > 0 ? ((size_t)n + 63) / 64 : 0;
    c->bits = NULL;
    if (n <= 0 || c->words > TSL__LAY_CONFLICTS_MAX_BYTES / 8 / (size_t)n) return;
    c->bits = calloc((size_t)n * c->words, sizeof *c->bits);
    if (!c->bits) return; /* the pieces answer instead */
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++)
            if (tsl__lay_conflict(&b[i], &b[j])) {
                c->bits[(size_t)i * c->words + ((size_t)j >> 6)] |= (uint64_t)1 << (j & 63);
                c->bits[(size_t)j * c->words + ((size_t)i >> 6)] |= (uint64_t)1 << (i & 63);
            }
}

void tsl__lay_conflicts_free(tsl__lay_conflicts *c) {
    free(c->bits);
    c->bits = NULL;
}
