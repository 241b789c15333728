/*
 * bench_kernels.c - fast kernels (oneDNN, own loops) against the reference
 * kernels, one op at a time, at 1 and 2 threads.
 *
 *   bench_kernels [--reps 5] [--filter substring] [--small]
 *
 * Each case is a tiny graph whose last op is the one measured; the ops
 * before it run once with the reference kernels to give it realistic inputs
 * (batch-norm backward gets real saved statistics). Every repetition runs
 * every configuration (reference and fast, 1 and 2 threads) once, in turn,
 * so that machine noise hits them alike; the table gives the median
 * milliseconds over repetitions and the speed-up of fast over reference at
 * the same thread count, with oneDNN's implementation name. The fast
 * kernel's prepare (primitive creation) is outside the timing, as in the
 * executor, which prepares once per op. Ops without a fast path are listed
 * with their reference time only. --small uses batch 4 instead of 32 (quick
 * look). Machine, thread counts and library versions are printed first.
 */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_machine.h"
#include "backend/cpu/dnnl_util.h"
#include "backend/cpu/kernel.h"
#include "core/graph_internal.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- cases: a graph whose last op is measured ------------------------------- */

static void die(const char *what) {
    fprintf(stderr, "bench_kernels: %s: %s\n", what, tsl_last_error());
    exit(1);
}

/* Appends op `type` with new outputs of the given shapes. */
static void append(tsl_graph *g, tsl_op_type type, const char *name, const tsl_tid *in, int n_in,
                   const tsl_shape *shapes, int n_out, const void *attr, size_t attr_size) {
    tsl_tid out[4];
    char nb[TSL_NAME_MAX];
    for (int j = 0; j < n_out; j++) {
        snprintf(nb, sizeof nb, "%s.%d", name, j);
        out[j] = tsl__graph_new_tensor(g, nb, shapes[j], TSL_F32);
    }
    if (tsl__graph_add_op(g, type, name, in, n_in, out, n_out, attr, attr_size, 0) < 0) die(name);
}

static tsl_shape shape_of(const tsl_graph *g, tsl_tid t) { return tsl_graph_tensor(g, t)->shape; }

/* Builds case k (0-based) into a new graph and names it; NULL past the end. */
static tsl_graph *build_case(int k, int64_t nb) {
    const int64_t N = nb;
    tsl_graph *g = NULL;
    tsl_conv_attr c3 = tsl_conv_sp(1, 1);
    tsl_pool_attr p3 = tsl_pool_ksp(3, 2, 1);
    tsl_bn_attr bn = {1e-5f, 0.1f};
    char nm[128];
    tsl_tid x, w, b, y, dy;
    switch (k) {
    case 0: case 1: case 2: {
        static const char *what[] = {"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter+db"};
        snprintf(nm, sizeof nm, "%s (%lld,64,28,28) 64 3x3 s1 p1", what[k], (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 28, 28));
        w = tsl_param(g, "w", TSL_SHAPE(64, 64, 3, 3), TSL_INIT_NONE);
        b = tsl_param(g, "b", TSL_SHAPE(64), TSL_INIT_NONE);
        y = tsl_conv2d(g, "conv", x, w, b, c3);
        if (k == 0) break;
        dy = tsl_input(g, "dy", shape_of(g, y));
        if (k == 1) {
            tsl_tid in[2] = {dy, w};
            tsl_shape xs = shape_of(g, x);
            append(g, TSL_OP_CONV2D_BWD_DATA, "bwd_data", in, 2, &xs, 1, &c3, sizeof c3);
        } else {
            tsl_tid in[2] = {dy, x};
            tsl_shape s[2] = {shape_of(g, w), shape_of(g, b)};
            append(g, TSL_OP_CONV2D_BWD_FILTER, "bwd_filter", in, 2, s, 2, &c3, sizeof c3);
        }
        break;
    }
    case 3: {
        snprintf(nm, sizeof nm, "conv2d_transpose (%lld,64,14,14) 64 3x3 s2 p1 op1", (long long)N);
        g = tsl_graph_new(nm);
        tsl_conv_attr t = tsl_conv_sp(2, 1);
        t.out_pad_h = t.out_pad_w = 1;
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 14, 14));
        w = tsl_param(g, "w", TSL_SHAPE(64, 64, 3, 3), TSL_INIT_NONE);
        b = tsl_param(g, "b", TSL_SHAPE(64), TSL_INIT_NONE);
        tsl_conv2d_transpose(g, "deconv", x, w, b, t);
        break;
    }
    case 4: {
        snprintf(nm, sizeof nm, "conv2d depthwise (%lld,64,28,28) 3x3 s1 p1 g64", (long long)N);
        g = tsl_graph_new(nm);
        tsl_conv_attr d = c3;
        d.groups = 64;
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 28, 28));
        w = tsl_param(g, "w", TSL_SHAPE(64, 1, 3, 3), TSL_INIT_NONE);
        tsl_conv2d(g, "dwconv", x, w, TSL_NONE, d);
        break;
    }
    case 5: case 6: case 7: {
        static const char *what[] = {"maxpool2d", "maxpool2d_bwd", "avgpool2d"};
        snprintf(nm, sizeof nm, "%s (%lld,64,56,56) 3x3 s2 p1", what[k - 5], (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 56, 56));
        if (k == 7) {
            tsl_avgpool2d(g, "avg", x, p3);
            break;
        }
        y = tsl_maxpool2d(g, "max", x, p3);
        if (k == 6) {
            dy = tsl_input(g, "dy", shape_of(g, y));
            tsl_tid in[2] = {dy, x};
            tsl_shape xs = shape_of(g, x);
            append(g, TSL_OP_MAXPOOL2D_BWD, "max_bwd", in, 2, &xs, 1, &p3, sizeof p3);
        }
        break;
    }
    case 8: {
        snprintf(nm, sizeof nm, "avgpool2d_bwd (%lld,64,56,56) 3x3 s2 p1", (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 56, 56));
        y = tsl_avgpool2d(g, "avg", x, p3);
        dy = tsl_input(g, "dy", shape_of(g, y));
        tsl_shape xs = shape_of(g, x);
        append(g, TSL_OP_AVGPOOL2D_BWD, "avg_bwd", &dy, 1, &xs, 1, &p3, sizeof p3);
        break;
    }
    case 9: case 10: {
        snprintf(nm, sizeof nm, "batchnorm%s (%lld,64,28,28)", k == 9 ? " train" : "_bwd",
                 (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 28, 28));
        y = tsl_batchnorm(g, "bn", x, bn);
        if (k == 10) {
            const tsl_op *f = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
            tsl_tid in[5] = {TSL_NONE, x, f->in[1], f->out[1], f->out[2]};
            in[0] = tsl_input(g, "dy", shape_of(g, y));
            tsl_shape s[3] = {shape_of(g, x), TSL_SHAPE(64), TSL_SHAPE(64)};
            append(g, TSL_OP_BATCHNORM_BWD, "bn_bwd", in, 5, s, 3, &bn, sizeof bn);
        }
        break;
    }
    case 11: {
        snprintf(nm, sizeof nm, "global_avgpool (%lld,512,7,7)", (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 512, 7, 7));
        tsl_global_avgpool(g, "gap", x);
        break;
    }
    case 12: case 15: {
        snprintf(nm, sizeof nm, "relu%s (%lld,64,56,56)", k == 12 ? "" : "_bwd", (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N, 64, 56, 56));
        y = tsl_relu(g, "relu", x);
        if (k == 15) {
            tsl_tid in[2] = {tsl_input(g, "dy", shape_of(g, y)), y};
            tsl_shape ys = shape_of(g, y);
            append(g, TSL_OP_RELU_BWD, "relu_bwd", in, 2, &ys, 1, NULL, 0);
        }
        break;
    }
    case 16: case 17: case 18: case 19: case 20: case 21: case 22: case 23: {
        /* depthwise (g64, 1 channel per group; fwd is case 4), grouped g32
         * (4 per group), grouped g4 (32 per group): fwd, bwd data, bwd filter */
        int grp = k <= 17 ? 64 : k <= 20 ? 32 : 4, c = k <= 17 ? 64 : 128;
        int kind = k <= 17 ? k - 15 : k <= 20 ? k - 18 : k - 21; /* 0 fwd, 1 data, 2 filter */
        static const char *what[] = {"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"};
        snprintf(nm, sizeof nm, "%s g%d (%lld,%d,28,28) 3x3", what[kind], grp, (long long)N, c);
        g = tsl_graph_new(nm);
        tsl_conv_attr d = c3;
        d.groups = grp;
        x = tsl_input(g, "x", TSL_SHAPE(N, c, 28, 28));
        w = tsl_param(g, "w", TSL_SHAPE(c, c / grp, 3, 3), TSL_INIT_NONE);
        y = tsl_conv2d(g, "gconv", x, w, TSL_NONE, d);
        if (kind == 0) break;
        dy = tsl_input(g, "dy", shape_of(g, y));
        tsl_tid in[2] = {dy, kind == 1 ? w : x};
        tsl_shape s = kind == 1 ? shape_of(g, x) : shape_of(g, w);
        append(g, kind == 1 ? TSL_OP_CONV2D_BWD_DATA : TSL_OP_CONV2D_BWD_FILTER, "bwd", in, 2, &s,
               1, &d, sizeof d);
        break;
    }
    case 13: {
        snprintf(nm, sizeof nm, "linear (%lld*8,1024) x (1000,1024)^T + b", (long long)N);
        g = tsl_graph_new(nm);
        x = tsl_input(g, "x", TSL_SHAPE(N * 8, 1024));
        w = tsl_param(g, "w", TSL_SHAPE(1000, 1024), TSL_INIT_NONE);
        b = tsl_param(g, "b", TSL_SHAPE(1000), TSL_INIT_NONE);
        tsl_linear(g, "fc", x, w, b);
        break;
    }
    case 14: {
        snprintf(nm, sizeof nm, "matmul (512,512)^T x (512,512)");
        g = tsl_graph_new(nm);
        tsl_tid a = tsl_input(g, "a", TSL_SHAPE(512, 512));
        b = tsl_input(g, "b", TSL_SHAPE(512, 512));
        tsl_matmul_attr at = {1, 0};
        tsl_matmul(g, "mm", a, b, at);
        break;
    }
    default: return NULL;
    }
    if (tsl_graph_finalize(g) != TSL_OK) die(nm);
    return g;
}

/* ---- running ------------------------------------------------------------------ */

typedef struct bufs {
    void **t;
    int32_t n;
} bufs;

static bufs make_bufs(const tsl_graph *g) {
    bufs b = {calloc((size_t)tsl_graph_n_tensors(g), sizeof(void *)), tsl_graph_n_tensors(g)};
    if (!b.t) die("out of memory");
    uint64_t seed = 7;
    for (tsl_tid i = 0; i < b.n; i++) {
        const tsl_tensor *t = tsl_graph_tensor(g, i);
        b.t[i] = calloc(t->nbytes ? t->nbytes : 1, 1);
        if (!b.t[i]) die("out of memory");
        if (t->dtype != TSL_F32) continue;
        float *p = b.t[i];
        int var = strstr(t->name, "running_var") != NULL;
        for (int64_t k = 0; k < tsl_shape_numel(&t->shape); k++) {
            float u = (float)((double)(rng(&seed) >> 11) * 0x1.0p-53); /* [0,1) */
            p[k] = var ? 0.5f + u : 2.0f * u - 1.0f;
        }
    }
    return b;
}

static void free_bufs(bufs *b) {
    for (int32_t i = 0; i < b->n; i++) free(b->t[i]);
    free(b->t);
}

static void op_ptrs(const tsl_op *op, bufs *b, void **in, void **out) {
    for (int i = 0; i < op->n_in; i++) in[i] = b->t[op->in[i]];
    for (int j = 0; j < op->n_out; j++) out[j] = b->t[op->out[j]];
}

/* Runs op once with the reference (state NULL) or the fast kernel; returns
 * the wall time in ms. */
static double time_once(const tsl_graph *g, const tsl_op *op, bufs *b, int nthreads,
                        tsl_kernel_fn fn, void **state, void *ws, size_t wsb) {
    void *in[16], *out[16];
    op_ptrs(op, b, in, out);
    tsl_kernel_args a = {.g = g, .op = op, .dtype = TSL_F32, .in = in, .out = out,
                         .workspace = ws, .workspace_bytes = wsb, .step = 1,
                         .nthreads = nthreads, .training = 1, .state = state};
    tsl_cpu_set_threads(nthreads);
    double t0 = now_ms();
    if (fn(&a) != TSL_OK) die(op->name);
    return now_ms() - t0;
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, c = *(const double *)y;
    return a < c ? -1 : a > c;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define MAX_REPS 64

/* The fast kernels without a prepare step (no oneDNN primitive). */
static const char *own_kernel_name(tsl_op_type t) {
    switch (t) {
    case TSL_OP_LINEAR:
    case TSL_OP_MATMUL: return "oneDNN sgemm";
    case TSL_OP_BATCHNORM:
    case TSL_OP_BATCHNORM_BWD: return "fast_bnorm.c";
    default: return "fast_pool.c";
    }
}

/* Measures the last op of g: per repetition, reference then fast at 1 then
 * 2 threads. Prints one table row per thread count. */
static void bench_case(const tsl_graph *g, int reps) {
    const tsl_op *op = tsl_graph_op(g, tsl_graph_n_ops(g) - 1);
    bufs b = make_bufs(g);
    tsl_cpu_set_threads(2);
    for (int32_t i = 0; i + 1 < tsl_graph_n_ops(g); i++) { /* realistic inputs */
        const tsl_op *p = tsl_graph_op(g, i);
        void *in[16], *out[16];
        op_ptrs(p, &b, in, out);
        tsl_kernel_args a = {.g = g, .op = p, .dtype = TSL_F32, .in = in, .out = out, .step = 1,
                             .nthreads = 2, .training = 1};
        if (tsl_cpu_ref_kernel(p->type, TSL_F32)(&a) != TSL_OK) die(p->name);
    }
    const tsl_fast_kernel *fk = tsl_cpu_fast_kernel(op->type);
    tsl_kernel_fn ref = tsl_cpu_ref_kernel(op->type, TSL_F32);
    size_t rws = tsl_op_workspace(g, op);
    void *rw = rws ? malloc(rws) : NULL;
    void *state[2] = {NULL, NULL}, *fw[2] = {NULL, NULL};
    size_t fws[2] = {0, 0};
    for (int t = 0; t < 2 && fk->run; t++) {
        if (fk->prepare && fk->prepare(g, op, t + 1, &state[t], &fws[t]) != TSL_OK)
            die(op->name);
        fw[t] = fws[t] ? malloc(fws[t]) : NULL;
    }
    double tr[2][MAX_REPS], tf[2][MAX_REPS];
    for (int r = -1; r < reps; r++) /* r = -1: warm-up, not recorded */
        for (int t = 0; t < 2; t++) {
            double a = time_once(g, op, &b, t + 1, ref, NULL, rw, rws);
            double f = fk->run ? time_once(g, op, &b, t + 1, fk->run, &state[t], fw[t], fws[t]) : 0;
            if (r >= 0) tr[t][r] = a, tf[t][r] = f;
        }
    for (int t = 0; t < 2; t++) {
        double mr = median(tr[t], reps);
        const char *impl = "";
        if (fk->run)
            impl = fk->prepare ? tsl__dnnl_impl_name(state[t]) : own_kernel_name(op->type);
        if (fk->run) {
            double mf = median(tf[t], reps);
            printf("| %-46s | %d | %9.2f | %9.2f | %6.2fx | %-22s | %9.1f |\n", tsl_graph_name(g),
                   t + 1, mr, mf, mr / mf, impl, (double)fws[t] / 1024.0);
        } else {
            printf("| %-46s | %d | %9.2f | %9s | %7s | %-22s | %9s |\n", tsl_graph_name(g), t + 1,
                   mr, "-", "-", "(reference only)", "-");
        }
    }
    fflush(stdout);
    for (int t = 0; t < 2; t++) {
        if (fk->release) fk->release(state[t]);
        free(fw[t]);
    }
    free(rw);
    free_bufs(&b);
}

int main(int argc, char **argv) {
    int reps = 5, small = 0;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--small")) small = 1;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--filter substring] [--small]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "bench_kernels: --reps %d must be in 1..%d\n", reps, MAX_REPS);
        return 2;
    }
    bench_print_machine(NULL);
    printf("median of %d repetitions, interleaved; fast kernels prepared once per thread count\n\n",
           reps);
    printf("| %-46s | T | %9s | %9s | %7s | %-22s | %9s |\n", "op (shape)", "ref ms", "fast ms",
           "speedup", "implementation", "ws KiB");
    printf("|%s|---|%s|%s|%s|%s|%s|\n", "------------------------------------------------",
           "-----------", "-----------", "---------", "------------------------", "-----------");
    for (int k = 0;; k++) {
        tsl_graph *g = build_case(k, small ? 4 : 32);
        if (!g) break;
        if (!filter || strstr(tsl_graph_name(g), filter)) bench_case(g, reps);
        tsl_graph_free(g);
    }
    return 0;
}
