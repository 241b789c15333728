/*
 * bench_real.c - `tensile bench paper --backend cpu`: one real measurement
 * through `tensile run` (this program run again, /proc/self/exe): vanilla
 * and the policy trained side by side on the CPU backend, synthetic data,
 * Adam, copy channels throttled to BP_REAL_GBPS, BP_REAL_ITERS iterations;
 * its --json gives the measured MSR (footprints from the allocator's
 * ledger), EOR, CBR, swaps and recomputations. A run whose final
 * parameters differ from vanilla's is a failure (invariant 5).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_paper.h"
#include "commands.h"
#include "tensile/policy.h"

/* Reads all of fd into a malloc'd string; NULL if out of memory. */
static char *read_all(int fd) {
    size_t n = 0, cap = 1 << 16;
    char *b = malloc(cap);
    for (;;) {
        if (!b) return NULL;
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
        }
        ssize_t k = read(fd, b + n, cap - n - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
    }
    b[n] = '\0';
    return b;
}

/* Runs argv with stdout captured (stderr dropped); *out the text, the
 * exit status returned (-1: could not run). */
static int capture(char *const *argv, char **out) {
    int fd[2];
    *out = NULL;
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (!freopen("/dev/null", "w", stderr)) _exit(127);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd[1]);
    *out = read_all(fd[0]);
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

json_t *bp_run_json(char *const *argv, int *rc) {
    char *text;
    *rc = capture(argv, &text);
    json_error_t e;
    json_t *j = NULL;
    if (text && *text) { /* the report is the last line */
        char *last = text + strlen(text);
        while (last > text && last[-1] == '\n') *--last = '\0';
        while (last > text && last[-1] != '\n') last--;
        j = json_loads(last, 0, &e);
    }
    free(text);
    return j;
}

bm_state bp_real_measure(const bm_spec *s, const char *policy, size_t device_memory,
                         bm_result *r) {
    memset(r, 0, sizeof *r);
    if (!tsl_policy_find(policy)) {
        r->state = BM_UNAVAILABLE;
        snprintf(r->why, sizeof r->why, "not available in this build");
        return r->state;
    }
    char batch[16], image[16], gbps[16], iters[16], mem[32];
    snprintf(batch, sizeof batch, "%d", s->batch);
    snprintf(image, sizeof image, "%d", s->image ? s->image : 32);
    snprintf(gbps, sizeof gbps, "%g", BP_REAL_GBPS);
    snprintf(iters, sizeof iters, "%d", BP_REAL_ITERS);
    snprintf(mem, sizeof mem, "%zu", device_memory);
    char *argv[32] = {"tensile", "run", "--model", (char *)s->model, "--batch", batch,
                      "--dataset", "synthetic", "--image-size", image, "--policy",
                      (char *)policy, "--pcie-gbps", gbps, "--iterations", iters,
                      "--optimizer", "adam", "--optimizer-step",
                      (char *)tool_step_names[BP_STEP], "--json", "--quiet", NULL};
    if (device_memory) {
        int k = 22;
        argv[k++] = "--device-memory";
        argv[k++] = mem;
        argv[k] = NULL;
    }
    int rc;
    json_t *j = bp_run_json(argv, &rc);
    if (!j) {
        r->state = BM_FAILED;
        if (rc == 3) /* the policy's run does not fit --device-memory */
            snprintf(r->why, sizeof r->why, "failed: does not fit in %zu bytes (tensile run: out "
                     "of device memory)", device_memory);
        else snprintf(r->why, sizeof r->why, "failed: tensile run exited %d without a report", rc);
        return r->state;
    }
    json_t *v = json_object_get(j, "vanilla"), *p = json_object_get(j, "scheduled");
    r->msr = num(j, "msr");
    r->msr_load = num(j, "msr_load");
    r->eor = num(j, "eor");
    r->cbr = num(j, "cbr");
    r->vanilla_fp = (size_t)num(v, "footprint_bytes");
    r->planned_fp = (size_t)num(p, "footprint_bytes");
    r->vanilla_load = (size_t)num(v, "peak_load_bytes");
    r->planned_load = (size_t)num(p, "peak_load_bytes");
    r->iter_us = num(p, "iter_ms") * 1e3;
    r->vanilla_iter_us = num(v, "iter_ms") * 1e3;
    r->swaps = (int)json_integer_value(json_object_get(p, "swaps"));
    r->recomputes = (int)json_integer_value(json_object_get(p, "recomputes"));
    if (!json_is_true(json_object_get(j, "identical"))) {
        r->state = BM_FAILED;
        snprintf(r->why, sizeof r->why, "failed: final parameters differ from vanilla's");
    } else if (rc == 3 || !json_is_true(json_object_get(j, "budget_met"))) {
        r->state = BM_BUDGET_UNMET;
        snprintf(r->why, sizeof r->why, "budget not met");
    } else if (rc != 0) {
        r->state = BM_FAILED;
        snprintf(r->why, sizeof r->why, "failed: tensile run exited %d", rc);
    } else {
        r->state = BM_OK;
        snprintf(r->why, sizeof r->why, "ok (measured)");
    }
    json_decref(j);
    return r->state;
}
