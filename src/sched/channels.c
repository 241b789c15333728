/*
 * channels.c - occupancy of one copy channel (host-to-device or
 * device-to-host) shared by all the jobs of a device, on the one time axis
 * on which every job's iteration starts at 0 (docs/SCHEDULING.md).
 *
 * A channel is a sorted array of disjoint bookings [s, e). The planner asks
 * two questions (paper, Algorithm 2's feasible intervals): the earliest
 * start at or after a time for a copy of a given length that ends by a
 * deadline (swap-outs go as early as possible), and the latest start at or
 * after a bound whose copy ends by a deadline (swap-ins go as late as
 * possible). Each candidate start is first mapped by the caller's canon
 * function to the issue time an event anchored there will really have, and
 * the copy [c, c + d) is checked with that value, so a booking never
 * overlaps another by a rounding error.
 */
#include <math.h>
#include <stdlib.h>

#include "core/assert.h"
#include "sched/kit.h"

void tsl__chan_free(tsl__chan *c) {
    free(c->s);
    free(c->e);
    c->s = c->e = NULL;
    c->n = c->cap = 0;
}

/* First booking with end > x (n if none). */
static int32_t first_ending_after(const tsl__chan *c, double x) {
    int32_t lo = 0, hi = c->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->e[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First booking with start >= x (n if none). */
static int32_t first_starting_from(const tsl__chan *c, double x) {
    int32_t lo = 0, hi = c->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->s[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Walks the free gaps from lo forward. Bookings before j end by x, so
 * [c, c + d) can only meet bookings j, j+1, ...; on a clash the search
 * resumes at the clashing booking's end. Returns -1 if nothing fits. */
double tsl__chan_earliest(const tsl__chan *c, double lo, double d, double deadline,
                          tsl__canon_fn canon, void *ctx) {
    double x = lo;
    int32_t j = first_ending_after(c, x);
    for (;;) {
        double st = canon(ctx, x, 1);
        double en = st + d;
        if (!(en <= deadline)) return -1;
        while (j < c->n && c->e[j] <= st) j++;
        if (j == c->n || c->s[j] >= en) return st;
        x = c->e[j];
    }
}

/* Walks the free gaps backward from end_by. Bookings after j start at or
 * after the candidate's end. Returns -1 if nothing fits at or after lo. */
double tsl__chan_latest(const tsl__chan *c, double lo, double d, double end_by,
                        tsl__canon_fn canon, void *ctx) {
    double x = end_by - d;
    int32_t j = first_starting_from(c, end_by) - 1;
    for (;;) {
        if (!(x >= lo) || x < 0) return -1;
        double st = canon(ctx, x, 0);
        if (st < lo) return -1;
        double en = st + d;
        if (en > end_by) { /* rounding: step below */
            x = nextafter(st, -INFINITY);
            continue;
        }
        while (j >= 0 && c->s[j] >= en) j--;
        if (j < 0 || c->e[j] <= st) return st;
        double nx = c->s[j] - d;
        x = nx < st ? nx : nextafter(st, -INFINITY); /* always progress */
    }
}

int tsl__chan_is_free(const tsl__chan *c, double a, double b) {
    int32_t j = first_ending_after(c, a);
    return j == c->n || c->s[j] >= b;
}

/* The rounding two sums of the same times in another order may differ by
 * at x: far below the verifier's tolerance (TSL__WAIT_EPS_US). */
static double rounding(double x) { return 1e-12 * fabs(x) + 1e-12; }

int tsl__chan_is_free_rounded(const tsl__chan *c, double a, double b) {
    int32_t j = first_ending_after(c, a + rounding(a));
    return j == c->n || c->s[j] >= b - rounding(b);
}

tsl_status tsl__chan_book(tsl__chan *c, double a, double b) {
    /* a re-booking (tsl__kit_rebook with K->rebook_rounded) may overlap a
     * neighbour within the rounding */
    TSL_ASSERT(a <= b && tsl__chan_is_free_rounded(c, a, b));
    if (c->n == c->cap) {
        int32_t cap = c->cap ? 2 * c->cap : 64;
        double *s = realloc(c->s, (size_t)cap * sizeof *s);
        if (!s) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for channel bookings");
        c->s = s;
        double *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (!e) return tsl_fail(TSL_ERR_OOM, "planner: out of host memory for channel bookings");
        c->e = e;
        c->cap = cap;
    }
    int32_t j = first_starting_from(c, a);
    for (int32_t k = c->n; k > j; k--) {
        c->s[k] = c->s[k - 1];
        c->e[k] = c->e[k - 1];
    }
    c->s[j] = a;
    c->e[j] = b;
    c->n++;
    return TSL_OK;
}

void tsl__chan_unbook(tsl__chan *c, double a, double b) {
    int32_t j = first_starting_from(c, a);
    while (j < c->n && !(c->s[j] == a && c->e[j] == b)) j++;
    TSL_ASSERT(j < c->n);
    for (int32_t k = j; k + 1 < c->n; k++) {
        c->s[k] = c->s[k + 1];
        c->e[k] = c->e[k + 1];
    }
    c->n--;
}
