/*
 * test_layout.c - the offline layout (tensile/layout.h): every layout it
 * returns passes the independent check, never beats the lower bound,
 * reaches it where it is known to be reachable, is deterministic, and bad
 * input is named. The check itself is shown to catch overlaps.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensile/alloc.h"
#include "tensile/layout.h"

static size_t al256(size_t n) { return n ? (n + 255) / 256 * 256 : 256; }

/* An independent overlap check: every pair, by brute force over steps. */
static int brute_ok(const tsl_layout_block *b, int32_t n, int64_t P, const size_t *off) {
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) {
            int both = 0;
            for (int64_t x = 0; x < P && !both; x++) {
                int ai = b[i].wrap ? (x >= b[i].start || x < b[i].end)
                                   : (x >= b[i].start && x < b[i].end);
                int aj = b[j].wrap ? (x >= b[j].start || x < b[j].end)
                                   : (x >= b[j].start && x < b[j].end);
                both = ai && aj;
            }
            if (both && off[i] < off[j] + al256(b[j].bytes) && off[j] < off[i] + al256(b[i].bytes))
                return 0;
        }
    return 1;
}

Test(layout, the_header_example) {
    tsl_layout_block b[3] = {{1000, 0, 4, 0}, {500, 2, 6, 0}, {800, 4, 8, 0}};
    size_t off[3], extent;
    cr_assert_eq(tsl_layout_solve(b, 3, 8, 256, off, &extent), TSL_OK, "%s", tsl_last_error());
    cr_assert(tsl_layout_check(b, 3, 8, 256, off), "%s", tsl_last_error());
    cr_assert_eq(extent, 1024 + 512, "blocks 0 and 2 share memory; block 1 beside them");
    cr_assert_eq(tsl_layout_peak(b, 3, 8), 1500u);
}

Test(layout, a_training_stack_reaches_its_peak) {
    /* forward allocations freed in reverse (nested lifetimes) plus a
     * parameter alive throughout: the lower bound is reachable */
    tsl_layout_block b[9];
    int n = 0;
    b[n++] = (tsl_layout_block){4096, 0, 16, 0}; /* a parameter */
    for (int k = 0; k < 8; k++)
        b[n++] = (tsl_layout_block){(size_t)(k + 1) * 1024, k, 16 - k, 0};
    size_t off[9], extent;
    cr_assert_eq(tsl_layout_solve(b, n, 16, 256, off, &extent), TSL_OK);
    cr_assert(tsl_layout_check(b, n, 16, 256, off), "%s", tsl_last_error());
    cr_assert_eq(extent, tsl_layout_peak(b, n, 16), "extent %zu", extent);
}

Test(layout, wrapping_blocks) {
    /* a: alive over [6, 10) and [0, 2); b lives mid-iteration and may share
     * a's memory; c overlaps a's tail piece and may not */
    tsl_layout_block b[3] = {{2048, 6, 2, 1}, {2048, 3, 5, 0}, {1024, 1, 4, 0}};
    size_t off[3], extent;
    cr_assert_eq(tsl_layout_solve(b, 3, 10, 256, off, &extent), TSL_OK, "%s", tsl_last_error());
    cr_assert(tsl_layout_check(b, 3, 10, 256, off), "%s", tsl_last_error());
    cr_assert(brute_ok(b, 3, 10, off));
    cr_assert_eq(extent, 3072u, "b shares a's memory, c sits beside");
    /* the check sees both pieces of a wrapping block */
    size_t bad[3] = {0, 4096, 2048};
    cr_assert(tsl_layout_check(b, 3, 10, 256, bad));
    size_t bad2[3] = {0, 4096, 0}; /* c over a's [0, 2) piece */
    cr_assert(!tsl_layout_check(b, 3, 10, 256, bad2), "an overlap with a's tail is caught");
    cr_assert(strstr(tsl_last_error(), "(wrapping)"), "%s", tsl_last_error());
}

Test(layout, alignment_and_zero_bytes) {
    tsl_layout_block b[3] = {{0, 0, 2, 0}, {1, 0, 2, 0}, {257, 1, 3, 0}};
    size_t off[3], extent;
    cr_assert_eq(tsl_layout_solve(b, 3, 3, 256, off, &extent), TSL_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(off[i] % 256, 0u);
    cr_assert_eq(extent, 256 + 256 + 512u, "0 bytes takes one unit, 257 takes two");
    cr_assert_eq(tsl_layout_solve(b, 3, 3, 1, off, &extent), TSL_OK);
    cr_assert(tsl_layout_check(b, 3, 3, 1, off));
    cr_assert_eq(extent, 1 + 1 + 257u, "alignment 1: sizes as requested (0 takes 1)");
    cr_assert_eq(tsl_layout_solve(NULL, 0, 0, 0, off, &extent), TSL_OK);
    cr_assert_eq(extent, 0u);
}

Test(layout, the_check_catches_an_overlap) {
    tsl_layout_block b[2] = {{1024, 0, 5, 0}, {1024, 4, 8, 0}};
    size_t off[2] = {0, 768};
    cr_assert(!tsl_layout_check(b, 2, 8, 256, off));
    cr_assert(strstr(tsl_last_error(), "overlaps"), "%s", tsl_last_error());
    off[1] = 1024;
    cr_assert(tsl_layout_check(b, 2, 8, 256, off));
    b[1].start = 5; /* freed at 5, allocated at 5: no conflict */
    off[1] = 0;
    cr_assert(tsl_layout_check(b, 2, 8, 256, off));
    off[1] = 100;
    cr_assert(!tsl_layout_check(b, 2, 8, 256, off), "an unaligned offset is refused");
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Random instances of various shapes: every layout checks (also by brute
 * force on small ones), is at least the aligned peak, and is the same when
 * solved again. */
Test(layout, random_instances) {
    const int cases = getenv("TSL_TEST_QUICK") ? 300 : 2000;
    int reached = 0;
    for (int c = 0; c < cases; c++) {
        uint64_t s = 1000 + (uint64_t)c;
        int32_t n = 1 + (int32_t)(rng_next(&s) % (c % 10 == 0 ? 400 : 40));
        int64_t P = 2 + (int64_t)(rng_next(&s) % 60);
        tsl_layout_block *b = calloc((size_t)n, sizeof *b);
        size_t *off = malloc((size_t)n * sizeof *off), *off2 = malloc((size_t)n * sizeof *off2);
        size_t aligned_sum_bound = 0;
        for (int32_t i = 0; i < n; i++) {
            int shape = (int)(rng_next(&s) % 4);
            size_t bytes = rng_next(&s) % 5 == 0 ? (size_t)(rng_next(&s) % (64u << 20))
                                                  : 256 * (1 + (size_t)(rng_next(&s) % 64));
            int64_t a = (int64_t)(rng_next(&s) % (uint64_t)P), e;
            if (shape == 0) { /* wraps */
                e = (int64_t)(rng_next(&s) % (uint64_t)(a + 1));
                b[i] = (tsl_layout_block){bytes, a, e, 1};
            } else if (shape == 1) { /* whole iteration */
                b[i] = (tsl_layout_block){bytes, 0, P, 0};
            } else {
                e = a + 1 + (int64_t)(rng_next(&s) % (uint64_t)(P - a));
                b[i] = (tsl_layout_block){bytes, a, e, 0};
            }
            aligned_sum_bound += al256(bytes);
        }
        size_t ext, ext2;
        cr_assert_eq(tsl_layout_solve(b, n, P, 256, off, &ext), TSL_OK, "case %d: %s", c,
                     tsl_last_error());
        cr_assert(tsl_layout_check(b, n, P, 256, off), "case %d: %s", c, tsl_last_error());
        if (n <= 40) cr_assert(brute_ok(b, n, P, off), "case %d: brute force finds an overlap", c);
        size_t peak = tsl_layout_peak(b, n, P), top = 0;
        for (int32_t i = 0; i < n; i++)
            if (off[i] + al256(b[i].bytes) > top) top = off[i] + al256(b[i].bytes);
        cr_assert_eq(ext, top, "case %d: the extent is the highest end", c);
        cr_assert_geq(ext, peak, "case %d", c);
        cr_assert_leq(ext, aligned_sum_bound, "case %d", c);
        reached += ext <= peak + 256 * (size_t)n;
        cr_assert_eq(tsl_layout_solve(b, n, P, 256, off2, &ext2), TSL_OK);
        cr_assert(ext2 == ext && memcmp(off, off2, (size_t)n * sizeof *off) == 0,
                  "case %d: not deterministic", c);
        free(b);
        free(off);
        free(off2);
    }
    cr_assert_gt(reached, cases / 2, "the layout is near the peak in most cases (%d of %d)",
                 reached, cases);
}

Test(layout, bad_input_is_named) {
    size_t off[2], ext;
    tsl_layout_block b[2] = {{256, 0, 4, 0}, {256, 2, 9, 0}};
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 256, off, &ext), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "block 1: lifetime [2, 9) outside [0, 8]"), "%s",
              tsl_last_error());
    b[1] = (tsl_layout_block){256, 5, 2, 0};
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 256, off, &ext), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "block 1: wrap 0 but lifetime [5, 2)"), "%s",
              tsl_last_error());
    b[1] = (tsl_layout_block){256, 2, 5, 1};
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 256, off, &ext), TSL_ERR_INVALID);
    b[1] = (tsl_layout_block){256, 3, 3, 0};
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 256, off, &ext), TSL_ERR_INVALID, "an empty lifetime");
    b[1] = (tsl_layout_block){256, 2, 5, 0};
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 100, off, &ext), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "alignment 100 is not a power of two"), "%s",
                 tsl_last_error());
    cr_assert_eq(tsl_layout_solve(b, -1, 8, 256, off, &ext), TSL_ERR_INVALID);
    cr_assert_eq(tsl_layout_solve(NULL, 2, 8, 256, off, &ext), TSL_ERR_INVALID);
    b[0].bytes = SIZE_MAX;
    cr_assert_eq(tsl_layout_solve(b, 2, 8, 256, off, &ext), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "is absurd"), "%s", tsl_last_error());
    cr_assert_eq(tsl_layout_peak(b, 2, 8), 0u, "bad input: 0 with the message");
}
