/*
 * test_alloc_at.c - placement at a given offset (tsl_alloc_alloc_at,
 * tensile/alloc.h), what an offline layout's blocks are allocated with.
 *
 * What is proved:
 *  - hand cases with known answers: a placement at the start, the middle
 *    and the end of a free block, exactly a whole free block, the tail up to
 *    the capacity; every byte of the ledger (load, footprint, free bytes,
 *    largest free block, free and live blocks, counts) after each;
 *  - a place held fully, partly from below, partly from above, across a
 *    live block and across two free blocks is TSL_ERR_BUSY and changes
 *    nothing, not even n_failed; past the capacity (also sizes and offsets
 *    whose sums would overflow) is TSL_ERR_OOM, counted; an unaligned
 *    offset is a bug (abort);
 *  - freed placements coalesce back, and the online allocator finds the
 *    gaps placements leave (best fit);
 *  - injected faults (tsl_alloc_fail_at) count placements and best-fit
 *    allocations alike and fail exactly the k-th call;
 *  - a differential stress: placements, best-fit allocations, releases and
 *    faults at random against a brute-force model of the arena (an owner
 *    per unit): every status, every offset, every ledger figure (peaks
 *    included) as the model predicts, and tsl_alloc_check after every step.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tensile/alloc.h"

#define U 256

static tsl_alloc_stats stats(const tsl_alloc *a) {
    tsl_alloc_stats st;
    tsl_alloc_get_stats(a, &st);
    return st;
}

static void must_check(const tsl_alloc *a) {
    cr_assert(tsl_alloc_check(a), "tsl_alloc_check: %s", tsl_last_error());
}

static void must_place(tsl_alloc *a, size_t off, size_t n) {
    cr_assert_eq(tsl_alloc_alloc_at(a, off, n), TSL_OK, "alloc_at(%zu, %zu): %s", off, n,
                 tsl_last_error());
    must_check(a);
}

/* The ledger figures that placements may change, compared whole. */
static void same_ledger(const tsl_alloc_stats *x, const tsl_alloc_stats *y, const char *what) {
    cr_assert(x->load == y->load && x->peak_load == y->peak_load && x->footprint == y->footprint &&
                  x->peak_footprint == y->peak_footprint && x->free_bytes == y->free_bytes &&
                  x->largest_free == y->largest_free && x->n_allocs == y->n_allocs &&
                  x->n_frees == y->n_frees && x->n_failed == y->n_failed && x->n_live == y->n_live &&
                  x->n_free_blocks == y->n_free_blocks,
              "%s changed the ledger", what);
}

Test(alloc_at, start_middle_end_whole_and_tail) {
    tsl_alloc *a = tsl_alloc_new(32 * U, U);
    /* the middle of the one free block: free below and above */
    must_place(a, 10 * U, 3 * U - 7);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.load, 3 * U - 7);
    cr_assert_eq(st.footprint, 13 * U);
    cr_assert_eq(st.free_bytes, 29 * U);
    cr_assert_eq(st.largest_free, 19 * U);
    cr_assert_eq(st.n_free_blocks, 2);
    cr_assert_eq(st.n_live, 1);
    cr_assert_eq(st.n_allocs, 1);
    /* the start of the hole [0, 10): [0, 2) */
    must_place(a, 0, 2 * U);
    st = stats(a);
    cr_assert_eq(st.n_free_blocks, 2, "the hole shrinks from below");
    cr_assert_eq(st.largest_free, 19 * U);
    /* the end of the hole [2, 10): [7, 10), touching the live block above */
    must_place(a, 7 * U, 3 * U);
    st = stats(a);
    cr_assert_eq(st.n_free_blocks, 2, "[2, 7) and the tail");
    cr_assert_eq(st.free_bytes, 24 * U);
    /* exactly the whole hole [2, 7): one free block fewer */
    must_place(a, 2 * U, 5 * U);
    st = stats(a);
    cr_assert_eq(st.n_free_blocks, 1, "only the tail");
    cr_assert_eq(st.largest_free, 19 * U);
    cr_assert_eq(st.footprint, 13 * U);
    /* the tail, up to the capacity: its last unit, then one unit past */
    must_place(a, 31 * U, 1);
    st = stats(a);
    cr_assert_eq(st.footprint, 32 * U);
    cr_assert_eq(st.peak_footprint, 32 * U);
    cr_assert_eq(st.n_free_blocks, 1, "[13, 31)");
    cr_assert_eq(st.load, (3 * U - 7) + 2 * U + 3 * U + 5 * U + 1);
    cr_assert_eq(st.peak_load, st.load);
    cr_assert_eq(st.n_allocs, 5);
    cr_assert_eq(st.n_failed, 0);
    /* size 0 takes one unit */
    must_place(a, 13 * U, 0);
    cr_assert_eq(tsl_alloc_size_of(a, 13 * U), 0);
    cr_assert_eq(tsl_alloc_alloc_at(a, 13 * U, 0), TSL_ERR_BUSY);
    tsl_alloc_destroy(a);
}

Test(alloc_at, held_places_are_busy_and_change_nothing) {
    tsl_alloc *a = tsl_alloc_new(32 * U, U);
    must_place(a, 4 * U, 4 * U);   /* live [4, 8) */
    must_place(a, 12 * U, 2 * U);  /* live [12, 14) */
    tsl_alloc_stats before = stats(a);
    struct {
        size_t off, n;
        const char *what;
    } busy[] = {
        {4 * U, 4 * U, "exactly the live block"},
        {5 * U, U, "inside it"},
        {2 * U, 3 * U, "partly, from below"},
        {7 * U, 2 * U, "partly, from above"},
        {3 * U, 6 * U, "across it"},
        {6 * U, 8 * U, "across a free block between two live ones"},
        {0, 32 * U, "the whole arena"},
        {8 * U, 4 * U + 1, "a free block and one byte more"},
    };
    for (size_t i = 0; i < sizeof busy / sizeof busy[0]; i++) {
        cr_assert_eq(tsl_alloc_alloc_at(a, busy[i].off, busy[i].n), TSL_ERR_BUSY, "%s",
                     busy[i].what);
        cr_assert(strstr(tsl_last_error(), "still held"), "%s: %s", busy[i].what, tsl_last_error());
        tsl_alloc_stats now = stats(a);
        same_ledger(&before, &now, busy[i].what);
        must_check(a);
    }
    /* the free block between them fits exactly */
    must_place(a, 8 * U, 4 * U);
    tsl_alloc_destroy(a);
}

Test(alloc_at, past_the_capacity_is_oom_and_counted) {
    tsl_alloc *a = tsl_alloc_new(16 * U + 100, U); /* rounded down to 16 units */
    cr_assert_eq(stats(a).capacity, 16 * U);
    size_t max = (size_t)-1;
    struct {
        size_t off, n;
    } past[] = {{16 * U, 1}, {15 * U, U + 1}, {0, 16 * U + 1}, {0, max}, {max / U * U, 1},
                {8 * U, max - U}, {max / U * U - U, 2 * U}};
    for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
        cr_assert_eq(tsl_alloc_alloc_at(a, past[i].off, past[i].n), TSL_ERR_OOM, "case %zu", i);
        cr_assert(strstr(tsl_last_error(), "past the capacity"), "%s", tsl_last_error());
        cr_assert_eq(stats(a).n_failed, i + 1);
        must_check(a);
    }
    cr_assert_eq(stats(a).n_live, 0);
    must_place(a, 0, 16 * U); /* the whole arena */
    cr_assert_eq(stats(a).largest_free, 0);
    tsl_alloc_destroy(a);
}

Test(alloc_at, an_unaligned_offset_is_a_bug, .signal = SIGABRT) {
    tsl_alloc *a = tsl_alloc_new(16 * U, U);
    tsl_alloc_alloc_at(a, U + 8, 10);
}

Test(alloc_at, freed_places_coalesce_and_best_fit_uses_the_gaps) {
    tsl_alloc *a = tsl_alloc_new(64 * U, U);
    must_place(a, 0, 3 * U);
    must_place(a, 5 * U, 2 * U);   /* gap [3, 5) */
    must_place(a, 10 * U, U);      /* gap [7, 10) */
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 2 * U, &off), TSL_OK);
    cr_assert_eq(off, 3 * U, "best fit: the two-unit gap");
    cr_assert_eq(tsl_alloc_alloc(a, 2 * U + 1, &off), TSL_OK);
    cr_assert_eq(off, 7 * U, "the three-unit gap, not the tail");
    must_check(a);
    tsl_alloc_release(a, 5 * U);
    tsl_alloc_release(a, 0);
    tsl_alloc_release(a, 3 * U);
    tsl_alloc_release(a, 7 * U);
    tsl_alloc_release(a, 10 * U);
    must_check(a);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.n_free_blocks, 1, "everything coalesced");
    cr_assert_eq(st.largest_free, 64 * U);
    cr_assert_eq(st.load, 0);
    cr_assert_eq(st.footprint, 0);
    cr_assert_eq(st.peak_footprint, 11 * U);
    tsl_alloc_destroy(a);
}

Test(alloc_at, faults_count_placements_and_allocations) {
    tsl_alloc *a = tsl_alloc_new(64 * U, U);
    size_t off;
    tsl_alloc_fail_at(a, 3);
    must_place(a, 0, U);                                       /* call 1 */
    cr_assert_eq(tsl_alloc_alloc(a, U, &off), TSL_OK);         /* call 2 */
    cr_assert_eq(tsl_alloc_alloc_at(a, 8 * U, U), TSL_ERR_OOM); /* call 3: the fault */
    cr_assert(strstr(tsl_last_error(), "injected"), "%s", tsl_last_error());
    cr_assert_eq(stats(a).n_failed, 1);
    cr_assert_eq(stats(a).n_live, 2);
    must_place(a, 8 * U, U); /* once only */
    tsl_alloc_fail_at(a, 2);
    must_place(a, 9 * U, U);
    cr_assert_eq(tsl_alloc_alloc(a, U, &off), TSL_ERR_OOM, "a best-fit call fails as well");
    cr_assert_eq(stats(a).n_failed, 2);
    /* a fault on a place that is held reports the fault (the caller does
     * not wait for it) */
    tsl_alloc_fail_at(a, 1);
    cr_assert_eq(tsl_alloc_alloc_at(a, 0, U), TSL_ERR_OOM);
    cr_assert_eq(tsl_alloc_alloc_at(a, 0, U), TSL_ERR_BUSY);
    must_check(a);
    tsl_alloc_destroy(a);
}

/* ---- a differential stress against a brute-force model ------------------------------ */

#define NU 192 /* units in the arena */

typedef struct model {
    int32_t owner[NU];        /* live block id per unit, -1 free */
    size_t req[NU];           /* requested size, at the block's first unit */
    size_t load, peak_load, peak_fp;
    uint64_t n_allocs, n_frees, n_failed;
} model;

static size_t units(size_t n) { return n == 0 ? 1 : (n + U - 1) / U; }

/* The model's best fit: the smallest maximal free run of at least `need`
 * units, the lowest on ties; -1 if none. */
static int best_fit(const model *m, size_t need) {
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < NU;) {
        if (m->owner[i] >= 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < NU && m->owner[j] < 0) j++;
        size_t len = (size_t)(j - i);
        if (len >= need && (best < 0 || len < best_len)) {
            best = i;
            best_len = len;
        }
        i = j;
    }
    return best;
}

static void take(model *m, int at, size_t n, int32_t id) {
    for (size_t u = 0; u < units(n); u++) m->owner[(size_t)at + u] = id;
    m->req[at] = n;
    m->load += n;
    m->n_allocs++;
    if (m->load > m->peak_load) m->peak_load = m->load;
    size_t fp = 0;
    for (int i = 0; i < NU; i++)
        if (m->owner[i] >= 0) fp = (size_t)(i + 1) * U;
    if (fp > m->peak_fp) m->peak_fp = fp;
}

/* Every figure of the ledger as the model has it. */
static void compare(const tsl_alloc *a, const model *m, int step) {
    tsl_alloc_stats st = stats(a);
    size_t fp = 0, live_units = 0, largest = 0, run = 0;
    uint64_t live = 0, holes = 0;
    for (int i = 0; i < NU; i++) {
        if (m->owner[i] >= 0) {
            fp = (size_t)(i + 1) * U;
            live_units++;
            live += i == 0 || m->owner[i - 1] != m->owner[i];
            run = 0;
        } else {
            holes += run == 0;
            run++;
            if (run > largest) largest = run;
        }
    }
    cr_assert_eq(st.load, m->load, "step %d: load", step);
    cr_assert_eq(st.peak_load, m->peak_load, "step %d: peak load", step);
    cr_assert_eq(st.footprint, fp, "step %d: footprint %zu, model %zu", step, st.footprint, fp);
    cr_assert_eq(st.peak_footprint, m->peak_fp, "step %d: peak footprint", step);
    cr_assert_eq(st.free_bytes, (NU - live_units) * U, "step %d: free bytes", step);
    cr_assert_eq(st.largest_free, largest * U, "step %d: largest free block", step);
    cr_assert_eq(st.n_live, live, "step %d: live blocks", step);
    cr_assert_eq(st.n_free_blocks, holes, "step %d: free blocks", step);
    cr_assert_eq(st.n_allocs, m->n_allocs, "step %d: allocations", step);
    cr_assert_eq(st.n_frees, m->n_frees, "step %d: frees", step);
    cr_assert_eq(st.n_failed, m->n_failed, "step %d: failures", step);
    cr_assert(tsl_alloc_check(a), "step %d: %s", step, tsl_last_error());
}

Test(alloc_at, random_against_a_model) {
    const int steps = th_quick() ? 3000 : 20000;
    tsl_alloc *a = tsl_alloc_new(NU * U, U);
    model m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < NU; i++) m.owner[i] = -1;
    int32_t live_at[NU];
    int n_live = 0, placed = 0, busy = 0, past = 0, faults = 0;
    uint64_t s = 0x5eed, fault_in = 0; /* calls until the armed fault fires, 0: none */
    for (int k = 0; k < steps; k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = s >> 11;
        int what = (int)(r % 8);
        /* sizes up to 16 units, sometimes 0, sometimes an exact number of units */
        size_t n = r % 5 == 0 ? (size_t)((r >> 8) % 17) * U : (size_t)((r >> 8) % (16 * U));
        if (what == 0 && fault_in == 0) { /* arm a fault a few calls ahead */
            fault_in = 1 + (r >> 20) % 4;
            tsl_alloc_fail_at(a, fault_in);
        } else if (what <= 3) { /* a placement, sometimes past the capacity */
            size_t at = (size_t)((r >> 24) % (NU + 8));
            size_t need = units(n);
            tsl_status want;
            int fires = fault_in == 1;
            if (fault_in) fault_in--;
            if (fires) want = TSL_ERR_OOM;
            else if (at + need > NU) want = TSL_ERR_OOM;
            else {
                want = TSL_OK;
                for (size_t u = 0; u < need; u++)
                    if (m.owner[at + u] >= 0) want = TSL_ERR_BUSY;
            }
            tsl_status got = tsl_alloc_alloc_at(a, at * U, n);
            cr_assert_eq(got, want, "step %d: alloc_at(%zu units, %zu bytes): %d, model %d (%s)", k,
                         at, n, got, want, tsl_last_error());
            if (want == TSL_OK) {
                take(&m, (int)at, n, (int32_t)k);
                live_at[n_live++] = (int32_t)at;
                placed++;
            } else if (want == TSL_ERR_OOM) {
                m.n_failed++;
                past += !fires;
                faults += fires;
            } else {
                busy++;
            }
        } else if (what <= 5) { /* best fit */
            int fires = fault_in == 1;
            if (fault_in) fault_in--;
            int at = fires ? -1 : best_fit(&m, units(n));
            size_t off = (size_t)-1;
            tsl_status got = tsl_alloc_alloc(a, n, &off);
            cr_assert_eq(got, at >= 0 ? TSL_OK : TSL_ERR_OOM, "step %d: alloc(%zu): %s", k, n,
                         tsl_last_error());
            if (at >= 0) {
                cr_assert_eq(off, (size_t)at * U, "step %d: best fit at %zu, model %d units", k,
                             off, at);
                take(&m, at, n, (int32_t)k);
                live_at[n_live++] = at;
            } else {
                m.n_failed++;
                faults += fires;
            }
        } else if (n_live > 0) { /* a release */
            int i = (int)((r >> 30) % (uint64_t)n_live);
            int at = live_at[i];
            cr_assert_eq(tsl_alloc_size_of(a, (size_t)at * U), m.req[at], "step %d", k);
            tsl_alloc_release(a, (size_t)at * U);
            int32_t id = m.owner[at];
            for (int u = at; u < NU && m.owner[u] == id; u++) m.owner[u] = -1;
            m.load -= m.req[at];
            m.n_frees++;
            live_at[i] = live_at[--n_live];
        }
        compare(a, &m, k);
    }
    cr_assert_gt(placed, steps / 20, "only %d placements succeeded", placed);
    cr_assert_gt(busy, steps / 20, "only %d placements found their place held", busy);
    cr_assert_gt(past, 0);
    cr_assert_gt(faults, 0);
    tsl_alloc_destroy(a);
}
