/*
 * test_alloc.c - the device allocator (tensile/alloc.h).
 *
 * Hand-made layouts with known answers (alignment, coalescing in every
 * order, best fit, fragmentation, ledger), a differential test against a
 * brute-force reference model, a mimalloc-style stress test that backs the
 * arena with real memory and checks a cookie in every block, OOM and fault
 * injection.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "tensile/alloc.h"

#define U 256 /* the default alignment unit */

static size_t round_up(size_t n, size_t a) { return n == 0 ? a : (n + a - 1) / a * a; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t must_alloc(tsl_alloc *a, size_t n) {
    size_t off = (size_t)-1;
    tsl_status st = tsl_alloc_alloc(a, n, &off);
    cr_assert_eq(st, TSL_OK, "alloc(%zu) failed: %s", n, tsl_last_error());
    return off;
}

static void must_check(const tsl_alloc *a) {
    cr_assert(tsl_alloc_check(a), "tsl_alloc_check: %s", tsl_last_error());
}

static tsl_alloc_stats stats(const tsl_alloc *a) {
    tsl_alloc_stats st;
    tsl_alloc_get_stats(a, &st);
    return st;
}

/* ---- alignment, rounding, capacity -------------------------------------------- */

Test(alloc, alignment_and_rounding) {
    const size_t aligns[] = {1, 8, 256, 4096};
    const size_t reqs[] = {0, 1, 7, 255, 256, 257, 1000, 4096, 4097};
    const size_t nreq = sizeof reqs / sizeof reqs[0];
    for (size_t ai = 0; ai < 4; ai++) {
        size_t al = aligns[ai];
        tsl_alloc *a = tsl_alloc_new(1 << 20, al);
        cr_assert_not_null(a);
        size_t expect_off = 0, load = 0;
        for (size_t i = 0; i < nreq; i++) {
            size_t off = must_alloc(a, reqs[i]);
            /* an empty arena is filled from the bottom, block after block */
            cr_assert_eq(off, expect_off, "align %zu req %zu: offset %zu, expected %zu", al,
                         reqs[i], off, expect_off);
            cr_assert_eq(off % al, 0);
            cr_assert_eq(tsl_alloc_size_of(a, off), reqs[i]);
            expect_off += round_up(reqs[i], al);
            load += reqs[i];
        }
        tsl_alloc_stats st = stats(a);
        cr_assert_eq(st.alignment, al);
        cr_assert_eq(st.load, load);
        cr_assert_eq(st.footprint, expect_off);
        cr_assert_eq(st.free_bytes, (size_t)(1 << 20) - expect_off);
        cr_assert_eq(st.largest_free, (size_t)(1 << 20) - expect_off);
        cr_assert_eq(st.n_live, nreq);
        cr_assert_eq(st.n_free_blocks, 1);
        must_check(a);
        tsl_alloc_destroy(a);
    }
    /* alignment 0 means the default; capacity is rounded down to it */
    tsl_alloc *a = tsl_alloc_new(1000, 0);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.alignment, TSL_ALLOC_ALIGN);
    cr_assert_eq(st.capacity, 768);
    cr_assert_eq(st.largest_free, 768);
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 768, &off), TSL_OK); /* largest_free is allocatable */
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM);
    must_check(a);
    tsl_alloc_destroy(a);
    /* an arena smaller than one unit holds nothing */
    a = tsl_alloc_new(100, 256);
    st = stats(a);
    cr_assert_eq(st.capacity, 0);
    cr_assert_eq(st.n_free_blocks, 0);
    cr_assert_eq(st.fragmentation, 0.0);
    cr_assert_eq(tsl_alloc_alloc(a, 0, &off), TSL_ERR_OOM);
    must_check(a);
    tsl_alloc_destroy(a);
    tsl_alloc_destroy(NULL);
}

/* ---- coalescing ------------------------------------------------------------------ */

/* Three adjacent blocks A(1u) B(2u) C(1u), then either a live block D that
 * fills the arena or a free tail; freed in each of the 6 orders. */
Test(alloc, coalesce_three_blocks_every_order) {
    const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const size_t sz[3] = {1 * U, 2 * U, 1 * U}, off_of[3] = {0, 1 * U, 3 * U};
    for (int tail_live = 0; tail_live < 2; tail_live++) {
        for (int p = 0; p < 6; p++) {
            tsl_alloc *a = tsl_alloc_new(8 * U, U);
            for (int k = 0; k < 3; k++) cr_assert_eq(must_alloc(a, sz[k]), off_of[k]);
            if (tail_live) cr_assert_eq(must_alloc(a, 4 * U), 4 * U);
            int freed[3] = {0, 0, 0};
            for (int step = 0; step < 3; step++) {
                int k = perms[p][step];
                tsl_alloc_release(a, off_of[k]);
                freed[k] = 1;
                must_check(a);
                /* expected: maximal runs of free segments among A B C and D/tail */
                const size_t seg[4] = {sz[0], sz[1], sz[2], 4 * U};
                const int is_free[4] = {freed[0], freed[1], freed[2], !tail_live};
                size_t runs = 0, largest = 0, run = 0, free_bytes = 0;
                for (int j = 0; j < 4; j++) {
                    if (is_free[j]) {
                        run += seg[j];
                        free_bytes += seg[j];
                    }
                    if (!is_free[j] || j == 3) {
                        if (run) runs++;
                        if (run > largest) largest = run;
                        run = 0;
                    }
                }
                tsl_alloc_stats st = stats(a);
                cr_assert_eq(st.n_free_blocks, runs, "order %d step %d: %llu free blocks, want %zu",
                             p, step, (unsigned long long)st.n_free_blocks, runs);
                cr_assert_eq(st.largest_free, largest, "order %d step %d: largest %zu, want %zu",
                             p, step, st.largest_free, largest);
                cr_assert_eq(st.free_bytes, free_bytes);
            }
            tsl_alloc_stats st = stats(a);
            cr_assert_eq(st.n_free_blocks, 1);
            cr_assert_eq(st.largest_free, tail_live ? 4 * U : 8 * U);
            cr_assert_eq(st.fragmentation, 0.0);
            /* the merged block serves one request of its whole size at 0 */
            cr_assert_eq(must_alloc(a, tail_live ? 4 * U : 8 * U), 0);
            tsl_alloc_destroy(a);
        }
    }
}

/* ---- best fit ----------------------------------------------------------------------- */

Test(alloc, best_fit_lowest_offset_on_ties) {
    /* H1 5u | L 1u | H2 3u | L 1u | H3 4u | L 1u | H4 3u | L 1u | fill 13u */
    tsl_alloc *a = tsl_alloc_new(32 * U, U);
    const size_t sizes[9] = {5, 1, 3, 1, 4, 1, 3, 1, 13};
    size_t offs[9];
    for (int i = 0; i < 9; i++) offs[i] = must_alloc(a, sizes[i] * U);
    cr_assert_eq(offs[8], 19 * U);
    for (int i = 0; i < 8; i += 2) tsl_alloc_release(a, offs[i]); /* holes 5u@0 3u@6 4u@10 3u@15 */
    must_check(a);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.n_free_blocks, 4);
    cr_assert_eq(st.largest_free, 5 * U);
    cr_assert_eq(must_alloc(a, 3 * U), 6 * U);   /* two 3u holes: the lower one   */
    cr_assert_eq(must_alloc(a, 3 * U), 15 * U);  /* then the other                */
    cr_assert_eq(must_alloc(a, 2 * U - 5), 10 * U); /* smallest >= 2u: the 4u hole */
    cr_assert_eq(must_alloc(a, 1), 12 * U);      /* 2u left at 12 beats 5u at 0   */
    cr_assert_eq(must_alloc(a, 5 * U), 0);
    cr_assert_eq(must_alloc(a, 0), 13 * U);      /* nbytes 0: one unit            */
    st = stats(a);
    cr_assert_eq(st.free_bytes, 0);
    cr_assert_eq(st.n_free_blocks, 0);
    cr_assert_eq(st.largest_free, 0);
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM);
    must_check(a);
    tsl_alloc_destroy(a);
}

/* ---- fragmentation -------------------------------------------------------------- */

Test(alloc, fragmentation_reported_exactly) {
    tsl_alloc *a = tsl_alloc_new(16 * U, U);
    size_t offs[16];
    for (int i = 0; i < 16; i++) offs[i] = must_alloc(a, U - 10);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.fragmentation, 0.0); /* no free bytes: 0 by definition */
    cr_assert_eq(st.load, 16 * (U - 10));
    const int holes[] = {1, 3, 4, 8, 9, 10}; /* holes of 1u, 2u and 3u */
    for (int i = 0; i < 6; i++) tsl_alloc_release(a, offs[holes[i]]);
    must_check(a);
    st = stats(a);
    cr_assert_eq(st.free_bytes, 6 * U);
    cr_assert_eq(st.largest_free, 3 * U);
    cr_assert_eq(st.n_free_blocks, 3);
    cr_assert_eq(st.fragmentation, 0.5, "fragmentation %.17g, want 0.5", st.fragmentation);
    cr_assert_eq(st.footprint, 16 * U);
    /* 4u do not fit although 6u are free; the message says why */
    tsl_alloc_stats before = st;
    size_t off = 12345;
    cr_assert_eq(tsl_alloc_alloc(a, 4 * U, &off), TSL_ERR_OOM);
    cr_assert_eq(off, 12345, "a failed allocation wrote *offset");
    const char *msg = tsl_last_error();
    cr_assert(strstr(msg, "request of 1024 bytes"), "%s", msg);
    cr_assert(strstr(msg, "free bytes 1536"), "%s", msg);
    cr_assert(strstr(msg, "largest free block 768"), "%s", msg);
    st = stats(a);
    cr_assert_eq(st.n_failed, before.n_failed + 1);
    st.n_failed = before.n_failed;
    cr_assert(memcmp(&st, &before, sizeof st) == 0, "a failed allocation changed the stats");
    must_check(a);
    /* 3u fits exactly into the 3u hole at 8u */
    cr_assert_eq(must_alloc(a, 3 * U), 8 * U);
    st = stats(a);
    cr_assert_eq(st.free_bytes, 3 * U);
    cr_assert_eq(st.largest_free, 2 * U);
    cr_assert(fabs(st.fragmentation - (1.0 - 2.0 / 3.0)) < 1e-15, "fragmentation %.17g",
              st.fragmentation);
    tsl_alloc_destroy(a);
}

/* The free run of a live block: its size with the free blocks either side,
 * whichever side is free (none, left, right, both; at either end of the
 * arena), and what releasing it really opens. */
Test(alloc, free_run_is_what_a_release_opens) {
    tsl_alloc *a = tsl_alloc_new(8 * U, U);
    size_t offs[8];
    for (int i = 0; i < 8; i++) offs[i] = must_alloc(a, U - 10);
    for (int i = 0; i < 8; i++) cr_assert_eq(tsl_alloc_free_run(a, offs[i]), U, "block %d", i);
    tsl_alloc_release(a, offs[1]);                      /* free: 1 */
    tsl_alloc_release(a, offs[4]);                      /* free: 1, 4 */
    tsl_alloc_release(a, offs[5]);                      /* free: 1, 4-5 */
    cr_assert_eq(tsl_alloc_free_run(a, offs[0]), 2 * U); /* arena start, free right */
    cr_assert_eq(tsl_alloc_free_run(a, offs[2]), 2 * U); /* free left */
    cr_assert_eq(tsl_alloc_free_run(a, offs[3]), 3 * U); /* free right (2u) */
    cr_assert_eq(tsl_alloc_free_run(a, offs[6]), 3 * U); /* free left (2u) */
    cr_assert_eq(tsl_alloc_free_run(a, offs[7]), U);     /* arena end, nothing free */
    tsl_alloc_release(a, offs[2]);                      /* free: 1-2, 4-5 */
    cr_assert_eq(tsl_alloc_free_run(a, offs[3]), 5 * U); /* free both sides */
    size_t run = tsl_alloc_free_run(a, offs[3]);
    tsl_alloc_release(a, offs[3]);
    must_check(a);
    cr_assert_eq(stats(a).largest_free, run, "the release opened %zu, free_run said %zu",
                 stats(a).largest_free, run);
    tsl_alloc_destroy(a);
}

/* ---- ledger ---------------------------------------------------------------------- */

Test(alloc, ledger_load_footprint_peaks) {
    tsl_alloc *a = tsl_alloc_new(64 * U, U);
    size_t x = must_alloc(a, 100), y = must_alloc(a, 300), z = must_alloc(a, 0);
    cr_assert_eq(x, 0);
    cr_assert_eq(y, U);
    cr_assert_eq(z, 3 * U);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.load, 400);
    cr_assert_eq(st.footprint, 4 * U);
    cr_assert_eq(st.free_bytes, 60 * U);
    cr_assert_eq(tsl_alloc_size_of(a, z), 0);
    tsl_alloc_release(a, y); /* a hole below the highest live block */
    st = stats(a);
    cr_assert_eq(st.load, 100);
    cr_assert_eq(st.footprint, 4 * U);
    cr_assert_eq(st.n_free_blocks, 2);
    tsl_alloc_release(a, z); /* the top goes: the hole merges into the tail */
    st = stats(a);
    cr_assert_eq(st.load, 100);
    cr_assert_eq(st.footprint, U);
    cr_assert_eq(st.peak_load, 400);
    cr_assert_eq(st.peak_footprint, 4 * U);
    cr_assert_eq(st.n_free_blocks, 1);
    cr_assert_eq(st.n_allocs, 3);
    cr_assert_eq(st.n_frees, 2);
    cr_assert_eq(st.n_live, 1);
    tsl_alloc_reset_peaks(a);
    st = stats(a);
    cr_assert_eq(st.peak_load, 100);
    cr_assert_eq(st.peak_footprint, U);
    size_t w = must_alloc(a, 2 * U + 1);
    st = stats(a);
    cr_assert_eq(w, U);
    cr_assert_eq(st.peak_load, 100 + 2 * U + 1);
    cr_assert_eq(st.peak_footprint, 4 * U);
    tsl_alloc_release(a, x);
    tsl_alloc_release(a, w);
    st = stats(a);
    cr_assert_eq(st.load, 0);
    cr_assert_eq(st.footprint, 0);
    cr_assert_eq(st.largest_free, 64 * U);
    must_check(a);
    tsl_alloc_destroy(a);
}

/* ---- differential test against a brute-force reference ------------------------------- */

/* The reference keeps live blocks sorted by offset; free space is the gaps
 * between them, so coalescing is implicit and best fit is a scan. */
typedef struct ref_blk {
    size_t off, size, req;
} ref_blk;

typedef struct ref_model {
    size_t cap, align;
    ref_blk *b;
    size_t n;
} ref_model;

/* Best fit over the gaps; returns 0 and the offset, or -1 if none fits. */
static int ref_alloc(ref_model *m, size_t req, size_t *off) {
    size_t need = round_up(req, m->align), best = (size_t)-1, best_size = (size_t)-1, at = 0;
    for (size_t i = 0, pos = 0; i <= m->n; i++) {
        size_t end = i < m->n ? m->b[i].off : m->cap;
        size_t gap = end - pos;
        if (gap >= need && gap < best_size) {
            best_size = gap;
            best = pos;
            at = i;
        }
        if (i < m->n) pos = m->b[i].off + m->b[i].size;
    }
    if (best == (size_t)-1) return -1;
    memmove(&m->b[at + 1], &m->b[at], (m->n - at) * sizeof *m->b);
    m->b[at] = (ref_blk){best, need, req};
    m->n++;
    *off = best;
    return 0;
}

static void ref_free(ref_model *m, size_t i) {
    memmove(&m->b[i], &m->b[i + 1], (m->n - i - 1) * sizeof *m->b);
    m->n--;
}

static void ref_expect_stats(const ref_model *m, const tsl_alloc_stats *st, long step) {
    size_t load = 0, live = 0, largest = 0, nfree = 0, fp = 0, pos = 0;
    for (size_t i = 0; i <= m->n; i++) {
        size_t end = i < m->n ? m->b[i].off : m->cap;
        if (end > pos) {
            nfree++;
            if (end - pos > largest) largest = end - pos;
        }
        if (i < m->n) {
            load += m->b[i].req;
            live += m->b[i].size;
            pos = fp = m->b[i].off + m->b[i].size;
        }
    }
    double frag = (m->cap - live) ? 1.0 - (double)largest / (double)(m->cap - live) : 0.0;
    cr_assert(st->load == load && st->free_bytes == m->cap - live && st->largest_free == largest &&
                  st->n_free_blocks == nfree && st->footprint == fp && st->n_live == m->n &&
                  st->fragmentation == frag,
              "step %ld: load %zu/%zu free %zu/%zu largest %zu/%zu holes %llu/%zu footprint %zu/%zu "
              "live %llu/%zu frag %g/%g (allocator/reference)",
              step, st->load, load, st->free_bytes, m->cap - live, st->largest_free, largest,
              (unsigned long long)st->n_free_blocks, nfree, st->footprint, fp,
              (unsigned long long)st->n_live, m->n, st->fragmentation, frag);
}

Test(alloc, matches_reference_model) {
    const long steps = th_quick() ? 4000 : 30000;
    ref_model m = {.cap = 1024 * U, .align = U};
    m.b = malloc(1024 * sizeof *m.b);
    tsl_alloc *a = tsl_alloc_new(m.cap, U);
    uint64_t rng = 42;
    size_t peak_load = 0, peak_fp = 0, n_failed = 0;
    for (long s = 0; s < steps; s++) {
        /* phases that fill and drain the arena, so that it gets full and fragmented */
        double p_alloc = ((s / 1000) % 2) ? 0.35 : 0.7;
        if (m.n == 0 || th_uniform(&rng, 0, 1) < p_alloc) {
            size_t req = (size_t)th_uniform(&rng, 0, 12 * U);
            if (th_uniform(&rng, 0, 1) < 0.05) req = 0;
            size_t got = 0, want = 0;
            int rs = ref_alloc(&m, req, &want);
            tsl_status st = tsl_alloc_alloc(a, req, &got);
            if (rs == 0) {
                cr_assert_eq(st, TSL_OK, "step %ld: reference fits %zu bytes at %zu: %s", s, req,
                             want, tsl_last_error());
                cr_assert_eq(got, want, "step %ld: best fit of %zu bytes at %zu, reference %zu",
                             s, req, got, want);
            } else {
                cr_assert_eq(st, TSL_ERR_OOM, "step %ld: reference finds no room for %zu", s, req);
                n_failed++;
            }
        } else {
            size_t i = (size_t)th_uniform(&rng, 0, (double)m.n);
            cr_assert_eq(tsl_alloc_size_of(a, m.b[i].off), m.b[i].req);
            tsl_alloc_release(a, m.b[i].off);
            ref_free(&m, i);
        }
        tsl_alloc_stats st = stats(a);
        ref_expect_stats(&m, &st, s);
        if (st.load > peak_load) peak_load = st.load;
        if (st.footprint > peak_fp) peak_fp = st.footprint;
        cr_assert_eq(st.peak_load, peak_load);
        cr_assert_eq(st.peak_footprint, peak_fp);
        cr_assert_eq(st.n_failed, n_failed);
        if (s % 500 == 0) must_check(a);
    }
    must_check(a);
    cr_assert(n_failed > 0, "the test never filled the arena");
    tsl_alloc_destroy(a);
    free(m.b);
}

/* ---- stress with real memory and cookies ------------------------------------------------ */

static uint64_t cookie_of(size_t off, size_t size) {
    uint64_t z = (uint64_t)off * 0x9E3779B97F4A7C15ull ^ ((uint64_t)size << 17) ^ 0xC0FFEEull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 27);
}

/* Fills bytes [0,size) of p with a pattern derived from (off, size). */
static void cookie_write(uint8_t *p, size_t off, size_t size) {
    uint64_t c = cookie_of(off, size);
    size_t nw = size / 8;
    uint64_t *w = (uint64_t *)p;
    for (size_t i = 0; i < nw; i++) w[i] = c ^ (i * 0xD6E8FEB86659FD93ull);
    for (size_t j = nw * 8; j < size; j++) p[j] = (uint8_t)(c >> (8 * (j % 8))) ^ (uint8_t)j;
}

/* Index of the first byte that differs from the pattern, or -1. */
static long cookie_bad(const uint8_t *p, size_t off, size_t size) {
    uint64_t c = cookie_of(off, size);
    size_t nw = size / 8;
    const uint64_t *w = (const uint64_t *)p;
    for (size_t i = 0; i < nw; i++)
        if (w[i] != (c ^ (i * 0xD6E8FEB86659FD93ull))) return (long)(i * 8);
    for (size_t j = nw * 8; j < size; j++)
        if (p[j] != ((uint8_t)(c >> (8 * (j % 8))) ^ (uint8_t)j)) return (long)j;
    return -1;
}

Test(alloc, stress_cookies_256mib, .timeout = 120) {
    const size_t cap = (size_t)256 << 20;
    const long ops = th_quick() ? 20000 : 120000;
    uint8_t *arena = aligned_alloc(4096, cap);
    cr_assert_not_null(arena);
    tsl_alloc *a = tsl_alloc_new(cap, 0);
    enum { MAXLIVE = 1 << 14 };
    size_t *off = malloc(MAXLIVE * sizeof *off), *len = malloc(MAXLIVE * sizeof *len);
    size_t n = 0, load = 0, max_live = 0;
    long n_oom = 0, n_alloc = 0;
    uint64_t rng = 7;
    double t0 = now_s(), t_alloc = 0;
    for (long op = 0; op < ops; op++) {
        double p_alloc = ((op / 8000) % 2) ? 0.3 : 0.7;
        if (n < MAXLIVE && (n == 0 || th_uniform(&rng, 0, 1) < p_alloc)) {
            /* log-uniform 1 B .. 1 MiB, with some exact 1 MiB blocks */
            size_t sz = (size_t)exp2(th_uniform(&rng, 0, 20));
            if (th_uniform(&rng, 0, 1) < 0.03) sz = (size_t)1 << 20;
            size_t o = 0;
            double t = now_s();
            tsl_status st = tsl_alloc_alloc(a, sz, &o);
            t_alloc += now_s() - t;
            if (st == TSL_ERR_OOM) {
                tsl_alloc_stats s = stats(a);
                cr_assert(s.largest_free < round_up(sz, U),
                          "op %ld: OOM for %zu bytes with a free block of %zu", op, sz,
                          s.largest_free);
                cr_assert(strstr(tsl_last_error(), "out of memory"), "%s", tsl_last_error());
                n_oom++;
                continue;
            }
            cr_assert_eq(st, TSL_OK);
            cr_assert(o % U == 0 && o + sz <= cap, "op %ld: block [%zu,+%zu) misplaced", op, o, sz);
            cookie_write(arena + o, o, sz);
            off[n] = o;
            len[n] = sz;
            n++;
            n_alloc++;
            load += sz;
            if (n > max_live) max_live = n;
        } else {
            size_t i = (size_t)th_uniform(&rng, 0, (double)n);
            long bad = cookie_bad(arena + off[i], off[i], len[i]);
            cr_assert(bad < 0, "op %ld: block at %zu of %zu bytes overwritten at byte %ld", op,
                      off[i], len[i], bad);
            cr_assert_eq(tsl_alloc_size_of(a, off[i]), len[i]);
            double t = now_s();
            tsl_alloc_release(a, off[i]);
            t_alloc += now_s() - t;
            load -= len[i];
            off[i] = off[n - 1];
            len[i] = len[n - 1];
            n--;
        }
        if (op % 1000 == 0) {
            must_check(a);
            tsl_alloc_stats s = stats(a);
            cr_assert_eq(s.load, load);
            cr_assert_eq(s.n_live, n);
        }
    }
    for (size_t i = 0; i < n; i++) {
        long bad = cookie_bad(arena + off[i], off[i], len[i]);
        cr_assert(bad < 0, "block at %zu overwritten at byte %ld", off[i], bad);
        tsl_alloc_release(a, off[i]);
    }
    must_check(a);
    tsl_alloc_stats s = stats(a);
    cr_assert_eq(s.load, 0);
    cr_assert_eq(s.n_free_blocks, 1);
    cr_assert_eq(s.largest_free, cap);
    cr_assert(n_oom > 0, "the stress test never filled the arena");
    printf("alloc stress: %ld ops (%ld allocs, %ld OOM), up to %zu live blocks, peak load %.1f MiB,"
           " peak footprint %.1f MiB; %.0f ns per alloc/free; %.2f s in all\n",
           ops, n_alloc, n_oom, max_live, (double)s.peak_load / (1 << 20),
           (double)s.peak_footprint / (1 << 20), 1e9 * t_alloc / (double)(n_alloc + s.n_frees),
           now_s() - t0);
    free(off);
    free(len);
    tsl_alloc_destroy(a);
    free(arena);
}

/* ~10^4 live tensors and 10^5 alloc/free pairs, as in a training step: the
 * cost per operation stays small (O(log n)), and the ledger stays exact. */
Test(alloc, scale_ten_thousand_live) {
    const int live = 10000, pairs = th_quick() ? 20000 : 100000;
    tsl_alloc *a = tsl_alloc_new((size_t)64 << 30, 0);
    size_t *off = malloc((size_t)live * sizeof *off), *len = malloc((size_t)live * sizeof *len);
    uint64_t rng = 3;
    size_t load = 0;
    for (int i = 0; i < live; i++) {
        len[i] = (size_t)exp2(th_uniform(&rng, 6, 24));
        off[i] = must_alloc(a, len[i]);
        load += len[i];
    }
    double t0 = now_s();
    for (int k = 0; k < pairs; k++) {
        int i = (int)th_uniform(&rng, 0, live);
        tsl_alloc_release(a, off[i]);
        load -= len[i];
        len[i] = (size_t)exp2(th_uniform(&rng, 6, 24));
        size_t o;
        if (tsl_alloc_alloc(a, len[i], &o) != TSL_OK)
            cr_assert_fail("pair %d: %s", k, tsl_last_error());
        off[i] = o;
        load += len[i];
    }
    double dt = now_s() - t0;
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.load, load);
    cr_assert_eq(st.n_live, (uint64_t)live);
    must_check(a);
    printf("alloc scale: %d live blocks, %d free+alloc pairs in %.3f s (%.0f ns per pair), "
           "%llu holes\n", live, pairs, dt, 1e9 * dt / pairs, (unsigned long long)st.n_free_blocks);
    free(off);
    free(len);
    tsl_alloc_destroy(a);
}

/* ---- OOM and fault injection ------------------------------------------------------------- */

Test(alloc, oom_when_full_then_success_after_free) {
    tsl_alloc *a = tsl_alloc_new(16 * U, U);
    size_t offs[16], off;
    for (int i = 0; i < 16; i++) offs[i] = must_alloc(a, 200);
    tsl_alloc_stats before = stats(a);
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM);
    const char *msg = tsl_last_error();
    cr_assert(strstr(msg, "request of 1 bytes") && strstr(msg, "free bytes 0") &&
                  strstr(msg, "largest free block 0"), "%s", msg);
    /* beyond the capacity, and near SIZE_MAX (no overflow in the rounding) */
    cr_assert_eq(tsl_alloc_alloc(a, 17 * U, &off), TSL_ERR_OOM);
    cr_assert_eq(tsl_alloc_alloc(a, (size_t)-1, &off), TSL_ERR_OOM);
    cr_assert(strstr(tsl_last_error(), "exceeds the capacity"), "%s", tsl_last_error());
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.n_failed, 3);
    st.n_failed = before.n_failed;
    cr_assert(memcmp(&st, &before, sizeof st) == 0);
    tsl_alloc_release(a, offs[5]);
    tsl_alloc_release(a, offs[6]);
    cr_assert_eq(must_alloc(a, 2 * U), offs[5]);
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM);
    must_check(a);
    tsl_alloc_destroy(a);
}

Test(alloc, fault_injection_at_kth_allocation) {
    for (uint64_t k = 1; k <= 12; k++) {
        tsl_alloc *a = tsl_alloc_new(64 * U, U);
        tsl_alloc_fail_at(a, k);
        int failures = 0;
        for (uint64_t call = 1; call <= 12; call++) {
            tsl_alloc_stats before = stats(a);
            size_t off = 999;
            tsl_status st = tsl_alloc_alloc(a, 1000, &off);
            if (call == k) {
                cr_assert_eq(st, TSL_ERR_OOM, "k=%llu: call %llu did not fail",
                             (unsigned long long)k, (unsigned long long)call);
                cr_assert(strstr(tsl_last_error(), "injected"), "%s", tsl_last_error());
                cr_assert_eq(off, 999);
                tsl_alloc_stats after = stats(a);
                cr_assert_eq(after.n_failed, before.n_failed + 1);
                after.n_failed = before.n_failed;
                cr_assert(memcmp(&after, &before, sizeof after) == 0);
                failures++;
            } else {
                cr_assert_eq(st, TSL_OK, "k=%llu: call %llu failed: %s", (unsigned long long)k,
                             (unsigned long long)call, tsl_last_error());
            }
        }
        cr_assert_eq(failures, 1);
        must_check(a);
        tsl_alloc_destroy(a);
    }
    /* 0 disables a pending fault */
    tsl_alloc *a = tsl_alloc_new(64 * U, U);
    tsl_alloc_fail_at(a, 2);
    tsl_alloc_fail_at(a, 0);
    for (int i = 0; i < 8; i++) must_alloc(a, 10);
    cr_assert_eq(stats(a).n_failed, 0);
    tsl_alloc_destroy(a);
}

/* ---- bugs abort ---------------------------------------------------------------------------- */

Test(alloc, release_of_non_live_offset_aborts, .signal = SIGABRT) {
    tsl_alloc *a = tsl_alloc_new(16 * U, U);
    size_t x = must_alloc(a, 10);
    must_alloc(a, 10);
    tsl_alloc_release(a, x + U / 2); /* inside a block, not its offset */
}

Test(alloc, double_release_aborts, .signal = SIGABRT) {
    tsl_alloc *a = tsl_alloc_new(16 * U, U);
    size_t x = must_alloc(a, 10);
    tsl_alloc_release(a, x);
    tsl_alloc_release(a, x);
}

/* ---- placement (tsl_alloc_alloc_at) ---------------------------------------------- */

Test(alloc, placement_at_a_given_offset) {
    tsl_alloc *a = tsl_alloc_new(16 * 256, 256);
    cr_assert_eq(tsl_alloc_alloc_at(a, 4 * 256, 300), TSL_OK, "%s", tsl_last_error());
    cr_assert(tsl_alloc_check(a), "%s", tsl_last_error());
    tsl_alloc_stats st;
    tsl_alloc_get_stats(a, &st);
    cr_assert_eq(st.load, 300u);
    cr_assert_eq(st.footprint, 6 * 256u, "two units from 1024");
    cr_assert_eq(st.n_free_blocks, 2u, "below and above");
    /* the start of a free block, the whole of one, the tail */
    cr_assert_eq(tsl_alloc_alloc_at(a, 0, 256), TSL_OK);
    cr_assert_eq(tsl_alloc_alloc_at(a, 256, 3 * 256), TSL_OK);
    cr_assert_eq(tsl_alloc_alloc_at(a, 15 * 256, 1), TSL_OK);
    cr_assert(tsl_alloc_check(a), "%s", tsl_last_error());
    tsl_alloc_get_stats(a, &st);
    cr_assert_eq(st.footprint, 16 * 256u);
    /* held, partly held, past the capacity */
    cr_assert_eq(tsl_alloc_alloc_at(a, 4 * 256, 1), TSL_ERR_BUSY);
    cr_assert(strstr(tsl_last_error(), "still held"), "%s", tsl_last_error());
    cr_assert_eq(tsl_alloc_alloc_at(a, 14 * 256, 512), TSL_ERR_BUSY, "runs into the tail block");
    cr_assert_eq(tsl_alloc_alloc_at(a, 16 * 256, 1), TSL_ERR_OOM);
    tsl_alloc_get_stats(a, &st);
    cr_assert_eq(st.n_failed, 1u, "busy is not a failure; past the capacity is");
    /* a freed place can be taken again, and the online allocator sees the gaps */
    tsl_alloc_release(a, 4 * 256);
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 512, &off), TSL_OK);
    cr_assert_eq(off, 4 * 256u, "best fit finds the freed pair of units");
    cr_assert(tsl_alloc_check(a), "%s", tsl_last_error());
    /* an injected fault fails one placement */
    tsl_alloc_fail_at(a, 1);
    cr_assert_eq(tsl_alloc_alloc_at(a, 6 * 256, 1), TSL_ERR_OOM);
    cr_assert_eq(tsl_alloc_alloc_at(a, 6 * 256, 1), TSL_OK);
    cr_assert(tsl_alloc_check(a), "%s", tsl_last_error());
    tsl_alloc_destroy(a);
}

/* Random steps under the validator: one third allocations, one third
 * frees, one third `extra` - placements at random offsets, or capacity
 * changes (each checked against the footprint). */
enum { EXTRA_PLACE, EXTRA_CAPACITY };
static void stress_with_validator(size_t capacity, uint64_t seed, int extra) {
    const int steps = getenv("TSL_TEST_QUICK") ? 4000 : 20000;
    tsl_alloc *a = tsl_alloc_new(capacity, 256);
    size_t live[256];
    int n = 0;
    uint64_t s = seed;
    for (int k = 0; k < steps; k++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int what = (int)((s >> 33) % 3);
        size_t bytes = 1 + (size_t)((s >> 40) % 2048);
        if (what == 0 && extra == EXTRA_PLACE && n < 256) {
            size_t off = ((s >> 20) % 256) * 256;
            tsl_status st = tsl_alloc_alloc_at(a, off, bytes);
            cr_assert(st == TSL_OK || st == TSL_ERR_BUSY || st == TSL_ERR_OOM);
            if (st == TSL_OK) live[n++] = off;
        } else if (what == 0 && extra == EXTRA_CAPACITY) {
            size_t cap = (size_t)((s >> 20) % (2 * capacity)), fp = stats(a).footprint;
            tsl_status st = tsl_alloc_set_capacity(a, cap);
            cr_assert_eq(st, (cap & ~(size_t)255) < fp ? TSL_ERR_BUSY : TSL_OK,
                         "step %d: capacity %zu, footprint %zu", k, cap, fp);
            if (st == TSL_OK) cr_assert_eq(stats(a).capacity, cap & ~(size_t)255);
        } else if (what == 1 && n < 256) {
            size_t off;
            if (tsl_alloc_alloc(a, bytes, &off) == TSL_OK) live[n++] = off;
        } else if (n > 0) {
            int i = (int)((s >> 24) % (uint64_t)n);
            tsl_alloc_release(a, live[i]);
            live[i] = live[--n];
        }
        cr_assert(tsl_alloc_check(a), "step %d: %s", k, tsl_last_error());
    }
    tsl_alloc_destroy(a);
}

Test(alloc, placement_stress_with_the_validator) { stress_with_validator(64 * 1024, 99, EXTRA_PLACE); }

/* ---- capacity changes (tsl_alloc_set_capacity) ----------------------------------- */

Test(alloc, set_capacity_grows_and_shrinks_the_free_tail) {
    tsl_alloc *a = tsl_alloc_new(8 * U, U);
    size_t x = must_alloc(a, 3 * U); /* [0, 3U) */
    size_t y = must_alloc(a, 100);   /* [3U, 4U) */
    cr_assert_eq(x, 0u);
    cr_assert_eq(y, 3 * U);
    /* grow: the free tail [4U, 8U) becomes [4U, 20U), rounded down */
    cr_assert_eq(tsl_alloc_set_capacity(a, 20 * U + 17), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.capacity, 20 * U);
    cr_assert_eq(st.largest_free, 16 * U);
    cr_assert_eq(st.n_free_blocks, 1u);
    cr_assert_eq(st.load, 3 * U + 100);
    cr_assert_eq(st.footprint, 4 * U);
    size_t z = must_alloc(a, 16 * U); /* the whole tail: the last block is live */
    cr_assert_eq(z, 4 * U);
    must_check(a);
    /* below the footprint: refused, naming the highest live block */
    cr_assert_eq(tsl_alloc_set_capacity(a, 19 * U), TSL_ERR_BUSY);
    cr_assert(strstr(tsl_last_error(), "offset 1024") && strstr(tsl_last_error(), "ends at 5120"),
              "%s", tsl_last_error());
    cr_assert_eq(stats(a).capacity, 20 * U, "nothing changed");
    /* grow after a live tail: a new free tail */
    cr_assert_eq(tsl_alloc_set_capacity(a, 24 * U), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    cr_assert_eq(stats(a).n_free_blocks, 1u);
    cr_assert_eq(stats(a).largest_free, 4 * U);
    /* shrink to exactly the footprint: the free tail is removed */
    cr_assert_eq(tsl_alloc_set_capacity(a, 20 * U), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    cr_assert_eq(stats(a).n_free_blocks, 0u);
    cr_assert_eq(stats(a).footprint, 20 * U);
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM, "full");
    /* free the top: the footprint falls, a shrink below the old one works */
    tsl_alloc_release(a, z);
    cr_assert_eq(stats(a).footprint, 4 * U);
    cr_assert_eq(tsl_alloc_set_capacity(a, 6 * U), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    st = stats(a);
    cr_assert_eq(st.capacity, 6 * U);
    cr_assert_eq(st.largest_free, 2 * U);
    cr_assert_eq(st.peak_footprint, 20 * U, "the peak is history");
    cr_assert_eq(tsl_alloc_alloc(a, 3 * U, &off), TSL_ERR_OOM, "past the new capacity");
    cr_assert_eq(tsl_alloc_alloc(a, 2 * U, &off), TSL_OK);
    cr_assert_eq(off, 4 * U);
    must_check(a);
    tsl_alloc_destroy(a);
}

Test(alloc, set_capacity_to_zero_and_back) {
    tsl_alloc *a = tsl_alloc_new(0, U);
    size_t off;
    cr_assert_eq(tsl_alloc_alloc(a, 1, &off), TSL_ERR_OOM);
    cr_assert_eq(tsl_alloc_set_capacity(a, 4 * U), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    cr_assert_eq(tsl_alloc_alloc(a, 4 * U, &off), TSL_OK);
    tsl_alloc_release(a, off);
    cr_assert_eq(tsl_alloc_set_capacity(a, U - 1), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    tsl_alloc_stats st = stats(a);
    cr_assert_eq(st.capacity, 0u);
    cr_assert_eq(st.n_free_blocks, 0u);
    cr_assert_eq(st.footprint, 0u);
    cr_assert_eq(tsl_alloc_set_capacity(a, 2 * U), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    cr_assert_eq(tsl_alloc_alloc_at(a, U, 1), TSL_OK, "%s", tsl_last_error());
    must_check(a);
    tsl_alloc_destroy(a);
}

Test(alloc, set_capacity_stress_with_the_validator) {
    stress_with_validator(32 * 1024, 7, EXTRA_CAPACITY);
}
