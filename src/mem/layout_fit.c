/*
 * layout_fit.c - the offline layout's search under a capacity (tensile/
 * layout.h, inside layout_fit.h; after MiniMalloc, Moffitt, ASPLOS'24):
 * given a capacity C, look for offsets that put every block's top at or
 * below C, by a bounded depth-first search over canonical layouts.
 *
 * Canonical layouts. Any layout can be pushed down until each block rests
 * on a block it conflicts with (or on 0) without raising its extent. List
 * its blocks by offset (ties by a fixed rank): each then sits exactly on
 * its floor, the top of the highest block listed before it that it
 * conflicts with. The search builds such lists: at each node it picks the
 * next block among those whose floor is at least the offset of the last
 * one placed (offsets never decrease; at equal offsets ranks increase),
 * places it on its floor, raises the floors of the unplaced blocks it
 * conflicts with, and goes deeper.
 *
 * Pruning (each sound: no layout within C is lost by it):
 *  - capacity: no top above C;
 *  - dominance: no block is placed at or above the top some unplaced block
 *    would have on its own floor (that one fits wholly below: the layout
 *    with it moved down is canonical and tried instead);
 *  - inference: at each step the unplaced blocks alive there must stack
 *    between their lowest possible offset (the larger of the last offset
 *    and their smallest floor) and C. The unplaced blocks are kept sorted
 *    by floor, so the check paints the steps lowest floor first, each step
 *    once (a bit per step, found a word at a time): O(blocks x steps / 64
 *    + steps) per placement;
 *  - symmetry: identical blocks (same size and lifetime) go in index order.
 * Candidates are tried lowest floor first, ties by rank; the rank is one of
 * three static orders (MiniMalloc's preorderings over the largest load
 * over the block's lifetime, the lifetime's length and the area). The
 * search is complete (TSL__FIT_NONE is a proof), but the improvement below
 * limits each attempt to a dive with a little backtracking: on real plans
 * chronological backtracking hardly ever pays, another capacity does.
 *
 * Blocks alive at every step conflict with all others: stacking them at
 * the bottom never hurts (in any layout, moving one to the bottom and
 * shifting the blocks below it up by its size keeps every pair apart), so
 * the search sees only the others, above them.
 *
 * tsl__layout_fit_improve tries capacities between the peak load (nothing
 * fits below it) and the best extent known on ever finer grids, each in
 * every static order, within a work budget.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/grow.h"
#include "mem/layout_conflicts.h"
#include "mem/layout_fit.h"

/* A piece [s, e) of a lifetime as words of steps: w0..w1 (w0 > w1: an
 * empty piece), m0 the piece's steps in word w0, m1 those in w1 (both
 * when w0 == w1: m0 & m1). */
typedef struct word_span {
    int64_t w0, w1;
    uint64_t m0, m1;
} word_span;

static word_span word_span_of(int64_t s, int64_t e) {
    if (s >= e) return (word_span){1, 0, 0, 0};
    return (word_span){s >> 6, (e - 1) >> 6, ~(uint64_t)0 << (s & 63),
                       ~(uint64_t)0 >> (63 - ((e - 1) & 63))};
}

/* One raised floor, to undo: block j's floor was y. */
typedef struct floor_change {
    int32_t j;
    size_t y;
} floor_change;

/* The search's state over the m blocks it places (those not alive
 * throughout); offsets relative to `base`, the bytes stacked below. */
typedef struct fit {
    int64_t P;
    int32_t m;
    size_t base, cap;                /* cap: the capacity above base */
    tsl__lay_block *b;               /* the m blocks */
    tsl__lay_conflicts cf;           /* which of them conflict */
    int32_t *orig;                   /* each one's index in the caller's array */
    int32_t *prev_same;              /* the identical block before it, or -1 */
    int32_t *ranks[TSL__FIT_ORDERS]; /* each block's position in each static order */
    const int32_t *rank;             /* the order of this attempt */
    size_t *floor_, *off;            /* floor (see the head of the file); offset once placed */
    uint8_t *placed, *moved;         /* moved: scratch flags for unplace */
    int32_t *unplaced;               /* the unplaced blocks, by floor (ascending) */
    int32_t n_unplaced;
    int32_t *scratch;                /* m */
    floor_change *back;              /* m: floors put back by unplace, to sort */
    size_t *rem;                     /* per step: unplaced bytes alive */
    size_t *rem_max;                 /* per 64 steps (a word of painted): rem's largest */
    int64_t busy;                    /* steps with unplaced bytes alive */
    uint64_t *painted;               /* per step, a bit: floors_fit's steps checked */
    word_span *spans;                /* 2 per block: its pieces' words */
    floor_change *log;               /* floors raised on the current path */
    int64_t n_log, cap_log;
    int64_t nodes, node_limit, work, budget;
    int oom;
} fit;

static int64_t life_of(const tsl__lay_block *x) { return (x->e0 - x->s0) + (x->e1 - x->s1); }

/* Adds x's size to rem over its lifetime (sign > 0) or takes it out,
 * keeping the count of busy steps. */
static void rem_update(size_t *rem, int64_t *busy, const tsl__lay_block *x, int sign) {
    const int64_t piece[2][2] = {{x->s0, x->e0}, {x->s1, x->e1}};
    for (int q = 0; q < 2; q++)
        for (int64_t t = piece[q][0]; t < piece[q][1]; t++) {
            if (sign > 0) {
                *busy += rem[t] == 0;
                rem[t] += x->size;
            } else {
                rem[t] -= x->size;
                *busy -= rem[t] == 0;
            }
        }
}

/* Recomputes rem_max over the words of steps [s, e). */
static void rem_max_update(fit *f, int64_t s, int64_t e) {
    for (int64_t w = s >> 6; s < e && w <= (e - 1) >> 6; w++) {
        int64_t hi = w * 64 + 64 < f->P ? w * 64 + 64 : f->P;
        size_t m = 0;
        for (int64_t t = w * 64; t < hi; t++) m = f->rem[t] > m ? f->rem[t] : m;
        f->rem_max[w] = m;
    }
}

/* rem_update for block x, then rem_max over its lifetime. */
static void rem_change(fit *f, const tsl__lay_block *x, int sign) {
    rem_update(f->rem, &f->busy, x, sign);
    rem_max_update(f, x->s0, x->e0);
    rem_max_update(f, x->s1, x->e1);
}

/* ---- setting up: the blocks searched, identical ones, the static orders ---------- */

typedef struct fit_key {
    double k[3];  /* descending */
    int32_t i;
} fit_key;

static int cmp_fit_key(const void *x, const void *y) {
    const fit_key *a = x, *b = y;
    for (int q = 0; q < 3; q++)
        if (a->k[q] != b->k[q]) return a->k[q] > b->k[q] ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* A block's identity for finding identical ones: size, pieces, index. */
typedef struct same_key {
    size_t size;
    int64_t s0, e0, s1, e1;
    int32_t i;
} same_key;

static int cmp_same(const void *x, const void *y) {
    const same_key *a = x, *b = y;
    if (a->size != b->size) return a->size < b->size ? -1 : 1;
    const int64_t ka[4] = {a->s0, a->e0, a->s1, a->e1}, kb[4] = {b->s0, b->e0, b->s1, b->e1};
    for (int q = 0; q < 4; q++)
        if (ka[q] != kb[q]) return ka[q] < kb[q] ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int same_block(const tsl__lay_block *a, const tsl__lay_block *b) {
    return a->size == b->size && a->s0 == b->s0 && a->e0 == b->e0 && a->s1 == b->s1 &&
           a->e1 == b->e1;
}

static void fit_free(fit *f) {
    tsl__lay_conflicts_free(&f->cf);
    free(f->b);
    free(f->orig);
    free(f->prev_same);
    for (int o = 0; o < TSL__FIT_ORDERS; o++) free(f->ranks[o]);
    free(f->floor_);
    free(f->off);
    free(f->placed);
    free(f->moved);
    free(f->unplaced);
    free(f->scratch);
    free(f->back);
    free(f->rem);
    free(f->rem_max);
    free(f->painted);
    free(f->spans);
    free(f->log);
}

/* Sets f up for the n blocks over period P: those alive throughout go to
 * the base, the others are searched. 0, or -1 out of host memory (f freed). */
static int fit_init(fit *f, const tsl__lay_block *lb, int32_t n, int64_t P) {
    memset(f, 0, sizeof *f);
    f->P = P;
    size_t m = (size_t)n + 1; /* never 0 */
    f->b = malloc(m * sizeof *f->b);
    f->orig = malloc(m * sizeof *f->orig);
    f->prev_same = malloc(m * sizeof *f->prev_same);
    for (int o = 0; o < TSL__FIT_ORDERS; o++) f->ranks[o] = malloc(m * sizeof(int32_t));
    f->floor_ = malloc(m * sizeof *f->floor_);
    f->off = malloc(m * sizeof *f->off);
    f->placed = malloc(m);
    f->moved = calloc(m, 1);
    f->unplaced = malloc(m * sizeof *f->unplaced);
    f->scratch = malloc(m * sizeof *f->scratch);
    f->back = malloc(m * sizeof *f->back);
    f->rem = calloc((size_t)P, sizeof *f->rem);
    f->rem_max = calloc(((size_t)P + 63) / 64, sizeof *f->rem_max);
    f->painted = malloc(((size_t)P + 63) / 64 * sizeof *f->painted);
    f->spans = malloc(2 * m * sizeof *f->spans);
    fit_key *key = malloc(m * sizeof *key);
    same_key *same = malloc(m * sizeof *same);
    int ok = f->b && f->orig && f->prev_same && f->floor_ && f->off && f->placed && f->moved &&
             f->unplaced && f->scratch && f->back && f->rem && f->rem_max && f->painted &&
             f->spans && key && same;
    for (int o = 0; o < TSL__FIT_ORDERS; o++) ok = ok && f->ranks[o];
    if (!ok) {
        free(key);
        free(same);
        fit_free(f);
        return -1;
    }
    for (int32_t i = 0; i < n; i++) {
        if (life_of(&lb[i]) == P) {
            f->base += lb[i].size;
            continue;
        }
        f->orig[f->m] = i;
        f->b[f->m++] = lb[i];
    }
    tsl__lay_conflicts_init(&f->cf, f->b, f->m);
    for (int32_t j = 0; j < f->m; j++) {
        f->spans[2 * j] = word_span_of(f->b[j].s0, f->b[j].e0);
        f->spans[2 * j + 1] = word_span_of(f->b[j].s1, f->b[j].e1);
    }
    /* identical blocks: sorted together, each linked to the one before */
    for (int32_t j = 0; j < f->m; j++) {
        const tsl__lay_block *x = &f->b[j];
        same[j] = (same_key){x->size, x->s0, x->e0, x->s1, x->e1, j};
    }
    qsort(same, (size_t)f->m, sizeof *same, cmp_same);
    for (int32_t k = 0; k < f->m; k++) {
        int32_t j = same[k].i, before = k > 0 ? same[k - 1].i : -1;
        f->prev_same[j] = before >= 0 && same_block(&f->b[before], &f->b[j]) ? before : -1;
    }
    free(same);
    /* the static orders: by the largest load over the lifetime (T, into
     * floor_ for now), the lifetime's length (W) and the area (A): TAW,
     * TWA, WAT */
    size_t *total = f->floor_;
    for (int32_t j = 0; j < f->m; j++) rem_update(f->rem, &f->busy, &f->b[j], 1);
    for (int32_t j = 0; j < f->m; j++) {
        const tsl__lay_block *x = &f->b[j];
        total[j] = 0;
        for (int64_t t = x->s0; t < x->e0; t++)
            if (f->rem[t] > total[j]) total[j] = f->rem[t];
        for (int64_t t = x->s1; t < x->e1; t++)
            if (f->rem[t] > total[j]) total[j] = f->rem[t];
        f->work += 2 * life_of(x);
    }
    for (int o = 0; o < TSL__FIT_ORDERS; o++) {
        for (int32_t j = 0; j < f->m; j++) {
            double T = (double)total[j], W = (double)life_of(&f->b[j]);
            double A = (double)f->b[j].size * W;
            key[j] = o == 0 ? (fit_key){{T, A, W}, j}
                   : o == 1 ? (fit_key){{T, W, A}, j}
                            : (fit_key){{W, A, T}, j};
        }
        qsort(key, (size_t)f->m, sizeof *key, cmp_fit_key);
        for (int32_t k = 0; k < f->m; k++) f->ranks[o][key[k].i] = k;
    }
    free(key);
    return 0;
}

/* ---- one attempt ---------------------------------------------------------------------- */

/* Starts an attempt: nothing placed, every floor 0. 0, or -1 if some step
 * holds more than the capacity (nothing to search). */
static int fit_reset(fit *f) {
    memset(f->rem, 0, (size_t)f->P * sizeof *f->rem);
    f->busy = 0;
    for (int32_t j = 0; j < f->m; j++) {
        f->floor_[j] = 0;
        f->placed[j] = 0;
        f->unplaced[j] = j;
        rem_update(f->rem, &f->busy, &f->b[j], 1);
        f->work += life_of(&f->b[j]);
    }
    f->n_unplaced = f->m;
    f->n_log = 0;
    f->nodes = 0;
    f->work += f->P;
    rem_max_update(f, 0, f->P);
    for (int64_t t = 0; t < f->P; t++)
        if (f->rem[t] > f->cap) return -1;
    return 0;
}

/* Places block c on its floor: out of the unplaced list, its lifetime's
 * bytes out of rem, the floors of the unplaced blocks it conflicts with
 * raised to its top (each change logged); the list stays sorted by floor
 * (the raised ones, all at c's top, go in one run). */
static void place(fit *f, int32_t c) {
    TSL_ASSERT(!f->placed[c] && f->floor_[c] <= f->cap && f->b[c].size <= f->cap - f->floor_[c]);
    size_t top = f->floor_[c] + f->b[c].size;
    f->placed[c] = 1;
    f->off[c] = f->floor_[c];
    int32_t kept = 0, raised = 0;
    const tsl__lay_row row = tsl__lay_conflicts_row(&f->cf, c);
    for (int32_t k = 0; k < f->n_unplaced; k++) {
        int32_t j = f->unplaced[k];
        if (j == c) continue;
        if (f->floor_[j] >= top || !tsl__lay_row_test(&row, j)) {
            f->unplaced[kept++] = j;
        } else if (tsl__grow((void **)&f->log, f->n_log, &f->cap_log, sizeof *f->log)) {
            f->oom = 1; /* the attempt stops before this state is used */
            f->unplaced[kept++] = j;
        } else {
            f->log[f->n_log++] = (floor_change){j, f->floor_[j]};
            f->floor_[j] = top;
            f->scratch[raised++] = j;
        }
    }
    int32_t lo = 0, hi = kept; /* the first kept block above top */
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (f->floor_[f->unplaced[mid]] <= top) lo = mid + 1;
        else hi = mid;
    }
    memmove(f->unplaced + lo + raised, f->unplaced + lo, (size_t)(kept - lo) * sizeof(int32_t));
    memcpy(f->unplaced + lo, f->scratch, (size_t)raised * sizeof(int32_t));
    f->n_unplaced = kept + raised;
    rem_change(f, &f->b[c], -1);
    f->work += 2 * (int64_t)f->n_unplaced + life_of(&f->b[c]);
}

static int cmp_floor_change(const void *x, const void *y) {
    const floor_change *a = x, *b = y;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

/* Undoes place(f, c): the floors logged since `mark` put back, c's bytes
 * back in rem, c and the lowered blocks merged back into the list. */
static void unplace(fit *f, int32_t c, int64_t mark) {
    TSL_ASSERT(f->placed[c] && mark <= f->n_log);
    int32_t nb = 0;
    f->back[nb++] = (floor_change){c, f->floor_[c]};
    while (f->n_log > mark) {
        floor_change ch = f->log[--f->n_log];
        f->floor_[ch.j] = ch.y;
        f->moved[ch.j] = 1;
        f->back[nb++] = ch;
    }
    qsort(f->back, (size_t)nb, sizeof *f->back, cmp_floor_change);
    int32_t kept = 0;
    for (int32_t k = 0; k < f->n_unplaced; k++)
        if (!f->moved[f->unplaced[k]]) f->unplaced[kept++] = f->unplaced[k];
    int32_t a = 0, q = 0, out = 0; /* merge the kept and the put back by floor */
    while (a < kept || q < nb) {
        if (q == nb || (a < kept && f->floor_[f->unplaced[a]] <= f->back[q].y))
            f->scratch[out++] = f->unplaced[a++];
        else
            f->scratch[out++] = f->back[q++].j;
    }
    memcpy(f->unplaced, f->scratch, (size_t)out * sizeof(int32_t));
    f->n_unplaced = out;
    for (int32_t k = 0; k < nb; k++) f->moved[f->back[k].j] = 0;
    rem_change(f, &f->b[c], 1);
    f->placed[c] = 0;
    f->work += 2 * (int64_t)f->n_unplaced + life_of(&f->b[c]) + 4 * (int64_t)nb;
}

/* Paints word w's steps `in` for floors_fit: those not painted yet must
 * hold at most `room` (the capacity less the lowest offset), each counted
 * (done, work) in order until one does not. 1 if all do, else 0. A word
 * whose largest rem fits takes them all at once. */
static inline int paint_word(fit *f, int64_t w, uint64_t in, int fits, size_t room, int64_t *done) {
    uint64_t todo = in & ~f->painted[w];
    f->painted[w] |= in;
    if (!todo) return 1;
    if (fits && f->rem_max[w] <= room) {
        int64_t n_new = __builtin_popcountll(todo);
        *done += n_new;
        f->work += n_new;
        return 1;
    }
    for (; todo; todo &= todo - 1) {
        int64_t t = w * 64 + __builtin_ctzll(todo);
        if (!fits || f->rem[t] > room) return 0;
        (*done)++;
        f->work++;
    }
    return 1;
}

/* The inference check after a block placed at offset `last`: at every step
 * with unplaced blocks alive, they fit between max(last, their smallest
 * floor) and the capacity. The unplaced blocks, lowest floor first, paint
 * the steps of their lifetimes not painted yet (a bit per step, a word at
 * a time over each piece's words, word_span): each step is checked once,
 * with the smallest floor alive there. */
static int floors_fit(fit *f, size_t last) {
    memset(f->painted, 0, ((size_t)f->P + 63) / 64 * sizeof *f->painted);
    f->work += f->P;
    int64_t done = 0;
    for (int32_t k = 0; k < f->n_unplaced && done < f->busy; k++) {
        f->work++;
        int32_t j = f->unplaced[k];
        size_t lowest = f->floor_[j] > last ? f->floor_[j] : last;
        int fits = lowest <= f->cap;
        size_t room = fits ? f->cap - lowest : 0;
        for (int q = 0; q < 2; q++) {
            const word_span *sp = &f->spans[2 * j + q];
            if (sp->w0 > sp->w1) continue;
            if (sp->w0 == sp->w1) {
                if (!paint_word(f, sp->w0, sp->m0 & sp->m1, fits, room, &done)) return 0;
                continue;
            }
            if (!paint_word(f, sp->w0, sp->m0, fits, room, &done)) return 0;
            for (int64_t w = sp->w0 + 1; w < sp->w1; w++)
                if (!paint_word(f, w, ~(uint64_t)0, fits, room, &done)) return 0;
            if (!paint_word(f, sp->w1, sp->m1, fits, room, &done)) return 0;
        }
    }
    return 1;
}

/* The next candidate after (after_y, after_rank) in (floor, rank) order
 * (all of them when after_rank < 0) that the canonical order, the
 * capacity, the dominance bound min_top and the symmetry rule allow after
 * a block at (last, last_rank); -1 if none. */
static int32_t next_candidate(fit *f, size_t last, int32_t last_rank, size_t min_top,
                              size_t after_y, int32_t after_rank) {
    int32_t lo = 0, hi = f->n_unplaced; /* the first unplaced block with floor >= last */
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (f->floor_[f->unplaced[mid]] < last) lo = mid + 1;
        else hi = mid;
    }
    int32_t best = -1;
    for (int32_t k = lo; k < f->n_unplaced; k++) {
        int32_t j = f->unplaced[k];
        size_t y = f->floor_[j];
        int32_t r = f->rank[j];
        f->work++;
        if (y >= min_top || (best >= 0 && y > f->floor_[best])) break; /* dominance; none better */
        if (y == last && r < last_rank) continue;                          /* canonical */
        if (y > f->cap || f->b[j].size > f->cap - y) continue;             /* capacity */
        if (f->prev_same[j] >= 0 && !f->placed[f->prev_same[j]]) continue; /* symmetry */
        if (after_rank >= 0 && (y < after_y || (y == after_y && r <= after_rank))) continue;
        if (best < 0 || y < f->floor_[best] || r < f->rank[best]) best = j;
    }
    return best;
}

/* The depth-first search from the current state, the last block placed at
 * `last` with rank last_rank: TSL__FIT_FOUND (the state holds the
 * layout), TSL__FIT_NONE (no canonical completion passes the pruning) or
 * TSL__FIT_STOPPED (the node limit or the budget was reached, or out of
 * host memory; the state is left as it is). */
static int dive(fit *f, size_t last, int32_t last_rank) {
    if (f->n_unplaced == 0) return TSL__FIT_FOUND;
    if (f->oom) return TSL__FIT_STOPPED;
    size_t min_top = SIZE_MAX;
    for (int32_t k = 0; k < f->n_unplaced; k++) {
        int32_t j = f->unplaced[k];
        if (f->floor_[j] + f->b[j].size < min_top) min_top = f->floor_[j] + f->b[j].size;
    }
    f->work += f->n_unplaced;
    size_t after_y = 0;
    int32_t after_rank = -1;
    for (;;) {
        int32_t c = next_candidate(f, last, last_rank, min_top, after_y, after_rank);
        if (c < 0) return TSL__FIT_NONE;
        if (f->nodes++ >= f->node_limit || f->work >= f->budget) return TSL__FIT_STOPPED;
        size_t y = f->floor_[c];
        int64_t mark = f->n_log;
        place(f, c);
        int r = f->oom             ? TSL__FIT_STOPPED
                : floors_fit(f, y) ? dive(f, y, f->rank[c])
                                   : TSL__FIT_NONE;
        if (r != TSL__FIT_NONE) return r;
        unplace(f, c, mark);
        after_y = y;
        after_rank = f->rank[c];
    }
}

/* One attempt at capacity cap (absolute) in static order o, at most
 * node_limit placements: TSL__FIT_FOUND with f->off set, else
 * TSL__FIT_NONE or TSL__FIT_STOPPED. */
static int fit_try(fit *f, size_t cap, int o, int64_t node_limit) {
    if (cap < f->base) return TSL__FIT_NONE;
    f->cap = cap - f->base;
    f->rank = f->ranks[o];
    f->node_limit = node_limit;
    if (fit_reset(f)) return TSL__FIT_NONE;
    return dive(f, 0, -1);
}

/* The found layout into offset (the base in index order, the others above
 * it); returns its extent. */
static size_t take_layout(const fit *f, const tsl__lay_block *lb, int32_t n, int64_t P,
                          size_t *offset) {
    size_t below = 0;
    for (int32_t i = 0; i < n; i++)
        if (life_of(&lb[i]) == P) {
            offset[i] = below;
            below += lb[i].size;
        }
    TSL_ASSERT(below == f->base);
    size_t extent = below;
    for (int32_t j = 0; j < f->m; j++) {
        TSL_ASSERT(f->placed[j]);
        offset[f->orig[j]] = f->base + f->off[j];
        size_t top = f->base + f->off[j] + f->b[j].size;
        if (top > extent) extent = top;
    }
    return extent;
}

int tsl__layout_fit(const tsl__lay_block *lb, int32_t n, int64_t period, size_t cap, int order,
                    int64_t node_limit, size_t *offset) {
    TSL_ASSERT(n >= 0 && period > 0 && period < INT32_MAX);
    TSL_ASSERT(order >= 0 && order < TSL__FIT_ORDERS);
    fit f;
    if (fit_init(&f, lb, n, period)) return TSL__FIT_STOPPED;
    f.budget = INT64_MAX;
    int r = fit_try(&f, cap, order, node_limit);
    if (r == TSL__FIT_FOUND) {
        size_t e = take_layout(&f, lb, n, period, offset);
        TSL_ASSERT(e <= cap);
    }
    fit_free(&f);
    return r;
}

/* ---- the capacities tried ----------------------------------------------------------------- */

/* Placements one attempt may make: a dive places every block once; the
 * rest is backtracking (more rarely pays than another capacity). */
#define FIT_NODES(m) ((int64_t)(m) + (int64_t)(m) / 8 + 16)

/* The search runs only when the budget allows this many dives (one costs
 * about m (3 m + period) units: per block placed, the unplaced blocks and
 * the steps looked at). */
#define FIT_DIVES_AT_LEAST 3

int64_t tsl__layout_fit_improve(const tsl__lay_block *lb, int32_t n, int64_t period, size_t lower,
                                int64_t budget, size_t *offset, size_t *extent) {
    if (n <= 0 || period <= 0 || period >= INT32_MAX || budget <= 0) return 0;
    if (*extent <= lower + lower / TSL__FIT_RESOLUTION) return 0; /* near enough */
    double m = 0;
    for (int32_t i = 0; i < n; i++) m += life_of(&lb[i]) != period;
    if (FIT_DIVES_AT_LEAST * m * (3 * m + (double)period) > (double)budget) return 0; /* too big */
    fit f;
    if (fit_init(&f, lb, n, period)) return -1;
    f.budget = budget;
    size_t unit = SIZE_MAX; /* the largest power of two dividing every size: so do the tops */
    for (int32_t i = 0; i < n; i++) {
        size_t low_bit = lb[i].size & (~lb[i].size + 1);
        if (low_bit && low_bit < unit) unit = low_bit;
    }
    if (unit == SIZE_MAX) unit = 1;
    /* capacities on ever finer grids over [lower, best): 1/2, then 1/4 and
     * 3/4, then the odd eighths, ..., lowest first; each tried in the
     * static orders until one finds a layout */
    size_t best = *extent;
    for (int level = 1; level < 62 && f.work < f.budget && !f.oom; level++) {
        size_t span = best - lower, parts = (size_t)1 << level;
        if (span / parts < unit || span / parts < lower / TSL__FIT_RESOLUTION) break;
        for (size_t i = 1; i < parts && f.work < f.budget && !f.oom; i += 2) {
            size_t cap = lower + (span / parts * i) / unit * unit;
            if (cap >= best) break;
            for (int o = 0; o < TSL__FIT_ORDERS && f.work < f.budget; o++) {
                if (fit_try(&f, cap, o, FIT_NODES(f.m)) != TSL__FIT_FOUND) continue;
                size_t e = take_layout(&f, lb, n, period, offset);
                TSL_ASSERT(e <= cap && e < best);
                best = e;
                break;
            }
        }
    }
    *extent = best;
    int64_t work = f.work;
    fit_free(&f);
    return work;
}
