/*
 * bench_layout.c - the offline layout (tensile/layout.h, SmartPool's
 * weighted interval colouring) against the online best-fit allocator
 * (tensile/alloc.h) on the same blocks: competitive ratio (footprint / peak
 * load; SmartPool's Table I: 1.0005 - 1.016 for its pool, CnMem 1.028 -
 * 1.169) and the layout's solve time.
 *
 *   bench_layout [--sizes 1000,5000,20000] [--seeds 3] [--reps 3]
 *
 * Instances are training-like (train_like below): a stack of layers, each
 * forward output kept until its backward (nested lifetimes, freed in
 * reverse), forward and backward workspaces of one step, the chain of
 * input gradients each alive for two backward steps, weight gradients alive
 * until their optimizer step, parameters alive all iteration, and some
 * parameters swapped out between their uses (a block that wraps the
 * iteration's boundary beside one alive mid-iteration). Sizes are
 * log-uniform over 256 B .. 64 MiB (activations 64 KiB .. 64 MiB).
 *
 * The online allocator replays the blocks in step order (at each step the
 * frees first, then the allocations, each in block order): two iterations,
 * the wrapping blocks resident before the first, the peaks of the second
 * reported (the steady state). Its ratio is its peak footprint / peak load.
 *
 * Solve times are wall-clock medians over --reps runs with the min..max
 * spread, single-threaded. Every layout is checked (tsl_layout_check) and
 * its extent compared with the peak load before it is counted.
 *
 * bench_blocks() takes any block array, so the zoo models' plan layouts can
 * be measured the same way.
 */
#include <jansson.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "bench_machine.h"
#include "tensile/alloc.h"
#include "tensile/layout.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what) {
    fprintf(stderr, "bench_layout: %s: %s\n", what, tsl_last_error());
    exit(1);
}

/* ---- the online best-fit allocator on the same blocks ------------------------------ */

typedef struct event {
    int64_t at;
    int kind; /* 0 free, 1 allocation: frees first at a step */
    int32_t i;
} event;

static int cmp_event(const void *x, const void *y) {
    const event *a = x, *b = y;
    if (a->at != b->at) return a->at < b->at ? -1 : 1;
    if (a->kind != b->kind) return a->kind - b->kind;
    return (a->i > b->i) - (a->i < b->i);
}

typedef struct online_result {
    size_t peak_load, peak_footprint;
} online_result;

/* Replays the blocks through tsl_alloc_alloc/tsl_alloc_release in step
 * order over two iterations (see the head of the file); the peaks of the
 * second. */
static online_result online_best_fit(const tsl_layout_block *b, int32_t n, int64_t period,
                                     size_t alignment) {
    size_t al = alignment ? alignment : TSL_ALLOC_ALIGN, cap = al;
    for (int32_t i = 0; i < n; i++) cap += 2 * ((b[i].bytes + al - 1) / al * al + al);
    tsl_alloc *a = tsl_alloc_new(cap, al);
    event *ev = malloc((size_t)n * 2 * sizeof *ev);
    size_t *at = malloc((size_t)n * sizeof *at);
    if (!a || !ev || !at) die("online replay: out of host memory");
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) { /* a wrapping block: freed at end, back at start */
        ev[m++] = (event){b[i].start, 1, i};
        ev[m++] = (event){b[i].end, 0, i};
    }
    qsort(ev, (size_t)m, sizeof *ev, cmp_event);
    for (int32_t i = 0; i < n; i++) /* resident when the first iteration starts */
        if (b[i].wrap && tsl_alloc_alloc(a, b[i].bytes, &at[i]) != TSL_OK) die("online replay");
    online_result r = {0, 0};
    for (int it = 0; it < 2; it++) {
        if (it == 1) tsl_alloc_reset_peaks(a);
        for (int32_t k = 0; k < m; k++) {
            int32_t i = ev[k].i;
            if (ev[k].kind == 0) tsl_alloc_release(a, at[i]);
            else if (tsl_alloc_alloc(a, b[i].bytes, &at[i]) != TSL_OK) die("online replay");
        }
    }
    tsl_alloc_stats st;
    tsl_alloc_get_stats(a, &st);
    r.peak_load = st.peak_load;
    r.peak_footprint = st.peak_footprint;
    tsl_alloc_destroy(a);
    free(ev);
    free(at);
    return r;
}

/* ---- one instance ------------------------------------------------------------------ */

typedef struct bench_result {
    size_t peak, extent;
    double ratio, online_ratio;
    double ms_median, ms_min, ms_max;
} bench_result;

/* Solves the blocks `reps` times (checking every layout and that the
 * result is the same each time), replays them online, and prints one row
 * of the table (`name` first). Reusable for any block array. */
static bench_result bench_blocks(const char *name, const tsl_layout_block *b, int32_t n,
                                 int64_t period, size_t alignment, int reps) {
    size_t *off = malloc(((size_t)n + 1) * sizeof *off);
    size_t *first = malloc(((size_t)n + 1) * sizeof *first);
    double t[64];
    if (!off || !first) die("out of host memory");
    bench_result r = {0};
    r.peak = tsl_layout_peak(b, n, period);
    if (r.peak == 0 && n > 0) die(name);
    for (int k = 0; k < reps; k++) {
        size_t ext;
        double t0 = now_ms();
        if (tsl_layout_solve(b, n, period, alignment, off, &ext) != TSL_OK) die(name);
        t[k] = now_ms() - t0;
        if (!tsl_layout_check(b, n, period, alignment, off)) die(name);
        if (ext < r.peak) {
            fprintf(stderr, "bench_layout: %s: extent %zu below the peak load %zu\n", name, ext,
                    r.peak);
            exit(1);
        }
        if (k == 0) {
            r.extent = ext;
            memcpy(first, off, (size_t)n * sizeof *off);
        } else if (ext != r.extent || memcmp(first, off, (size_t)n * sizeof *off)) {
            fprintf(stderr, "bench_layout: %s: the layout differs between runs\n", name);
            exit(1);
        }
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    r.ms_median = t[reps / 2];
    r.ms_min = t[0];
    r.ms_max = t[reps - 1];
    online_result o = online_best_fit(b, n, period, alignment);
    if (o.peak_load != r.peak) {
        fprintf(stderr, "bench_layout: %s: online peak load %zu, the layout's %zu\n", name,
                o.peak_load, r.peak);
        exit(1);
    }
    r.ratio = (double)r.extent / (double)r.peak;
    r.online_ratio = (double)o.peak_footprint / (double)o.peak_load;
    int32_t wraps = 0;
    for (int32_t i = 0; i < n; i++) wraps += b[i].wrap;
    printf("| %s | %d | %lld | %d | %.2f MiB | %.2f MiB | %.4f | %.2f MiB | %.4f | %.1f | %.1f..%.1f |\n",
           name, (int)n, (long long)period, (int)wraps, r.peak / 1048576.0, r.extent / 1048576.0,
           r.ratio, o.peak_footprint / 1048576.0, r.online_ratio, r.ms_median, r.ms_min,
           r.ms_max);
    fflush(stdout);
    free(off);
    free(first);
    return r;
}

/* ---- training-like instances ------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Log-uniform bytes in [lo, hi]. */
static size_t log_bytes(uint64_t *s, double lo, double hi) {
    return (size_t)exp(log(lo) + unif(s) * (log(hi) - log(lo)));
}

/* About `target` blocks of a training iteration of L layers (see the head
 * of the file); steps: forward of layer l at l, its backward at 2L-1-l, its
 * optimizer update at 2L+l; period 3L. Returns the blocks (*n, *period). */
static tsl_layout_block *train_like(int32_t target, uint64_t seed, int32_t *n, int64_t *period) {
    int32_t L = (int32_t)((int64_t)target * 10 / 47) + 2; /* about 4.7 blocks a layer */
    tsl_layout_block *b = malloc((size_t)L * 8 * sizeof *b);
    if (!b) die("out of host memory");
    uint64_t s = seed;
    int32_t m = 0;
    int64_t P = 3 * (int64_t)L;
    size_t act_prev = log_bytes(&s, 65536, 64 << 20);
    for (int32_t l = 0; l < L && m < target; l++) {
        int64_t f = l, bw = 2 * (int64_t)L - 1 - l, opt = 2 * (int64_t)L + l;
        size_t act = log_bytes(&s, 65536, 64 << 20);
        /* the output, kept for the backward; a tenth live on for a skip
         * connection (a few more backward steps) */
        int64_t end = bw + 1;
        if (unif(&s) < 0.1) end += 1 + (int64_t)(splitmix64(&s) % 8);
        if (end > 2 * (int64_t)L) end = 2 * (int64_t)L;
        b[m++] = (tsl_layout_block){act, f, end, 0};
        if (unif(&s) < 0.5) /* forward workspace */
            b[m++] = (tsl_layout_block){log_bytes(&s, 256, 16 << 20), f, f + 1, 0};
        /* the input gradient, consumed by the next backward step */
        b[m++] = (tsl_layout_block){act_prev, bw, bw + 2 <= P ? bw + 2 : P, 0};
        if (unif(&s) < 0.5) /* backward workspace */
            b[m++] = (tsl_layout_block){log_bytes(&s, 256, 16 << 20), bw, bw + 1, 0};
        if (unif(&s) < 0.2) /* small saved statistics */
            b[m++] = (tsl_layout_block){log_bytes(&s, 256, 4096), f, bw + 1, 0};
        if (unif(&s) < 0.7) { /* a layer with parameters */
            size_t w = log_bytes(&s, 256, 16 << 20);
            if (unif(&s) < 0.15) {
                /* swapped out between its forward and its backward: resident
                 * from its update to its forward (wrapping), and again from
                 * one step before its backward to its update */
                b[m++] = (tsl_layout_block){w, opt, f + 1, 1};
                b[m++] = (tsl_layout_block){w, bw - 1 > f + 1 ? bw - 1 : f + 1, opt, 0};
            } else {
                b[m++] = (tsl_layout_block){w, 0, P, 0};
            }
            b[m++] = (tsl_layout_block){w, bw, opt + 1, 0}; /* its gradient */
        }
        act_prev = act;
    }
    *n = m;
    *period = P;
    return b;
}

int main(int argc, char **argv) {
    int32_t sizes[16] = {1000, 5000, 20000};
    int n_sizes = 3, seeds = 3, reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            n_sizes = 0;
            for (char *p = argv[++i]; *p && n_sizes < 16; p += *p == ',') {
                char *e;
                long v = strtol(p, &e, 10);
                if (e == p || v < 1 || v > 10000000) n_sizes = -1;
                if (e == p || n_sizes < 0) break;
                sizes[n_sizes++] = (int32_t)v;
                p = e;
            }
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            seeds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else {
            n_sizes = -1;
            break;
        }
    }
    if (n_sizes < 1 || seeds < 1 || seeds > 100 || reps < 1 || reps > 64) {
        fprintf(stderr, "usage: %s [--sizes 1000,5000,20000] [--seeds 3] [--reps 3]\n", argv[0]);
        return 2;
    }
    char extra[192], load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r"); /* timings are wall-clock: say how busy it was */
    if (la) {
        if (fgets(load, sizeof load, la)) load[strcspn(load, "\n")] = 0;
        fclose(la);
    }
    snprintf(extra, sizeof extra, "load average %s at the start; layout single-threaded; %d "
             "solve runs per row", load, reps);
    bench_print_machine(extra);
    printf("\nTraining-like blocks (nested activations freed in reverse, one-step workspaces, "
           "gradient chains, parameters, swapped-out parameters wrapping the boundary); "
           "alignment %d; competitive ratio = footprint / peak load (SmartPool's Table I: "
           "1.0005 - 1.016; CnMem 1.028 - 1.169)\n\n", TSL_ALLOC_ALIGN);
    printf("| instance | blocks | steps | wrapping | peak load | layout extent | layout ratio | "
           "online best-fit footprint | online ratio | solve ms (median) | spread (min..max) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < n_sizes; k++) {
        double worst = 0, worst_online = 0, sum = 0, sum_online = 0;
        for (int sd = 0; sd < seeds; sd++) {
            int32_t n;
            int64_t P;
            tsl_layout_block *b = train_like(sizes[k], 0x1A7047ull * (uint64_t)(sd + 1), &n, &P);
            char name[64];
            snprintf(name, sizeof name, "train-like %d, seed %d", (int)sizes[k], sd + 1);
            bench_result r = bench_blocks(name, b, n, P, TSL_ALLOC_ALIGN, reps);
            if (r.ratio > worst) worst = r.ratio;
            if (r.online_ratio > worst_online) worst_online = r.online_ratio;
            sum += r.ratio;
            sum_online += r.online_ratio;
            free(b);
        }
        printf("| **%d blocks: mean (worst)** | | | | | | %.4f (%.4f) | | %.4f (%.4f) | | |\n",
               (int)sizes[k], sum / seeds, worst, sum_online / seeds, worst_online);
        fflush(stdout);
    }
    return 0;
}
