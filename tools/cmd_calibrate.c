/*
 * cmd_calibrate.c - `tensile calibrate`: measures this machine's CPU backend
 * (tensile/calibrate.h) and writes it as a device profile.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "tensile/calibrate.h"
#include "tensile/sched_json.h"

static const char help[] =
    "usage: tensile calibrate [--out FILE] [--threads T] [--repeats R] [--quick] [--json]\n"
    "\n"
    "Measures the CPU backend of this machine and writes the figures as a\n"
    "device profile for the cost model, the planner and the simulator:\n"
    "  flops            FP32 FLOP/s of a oneDNN convolution and a oneDNN\n"
    "                   sgemm through the fast kernels (their harmonic mean)\n"
    "  mem_bw           memcpy of a 256 MiB buffer (bytes read + written)\n"
    "  h2d_bw, d2h_bw   memcpy between a host buffer and the backend's arena\n"
    "  launch_us        the time of a tiny op through the backend\n"
    "  copy_latency_us  the time of a 256-byte copy\n"
    "  mem_bytes        the machine's physical memory\n"
    "Each figure is the median of R timed runs after a warm-up. Progress goes\n"
    "to stderr, the figures to stdout.\n"
    "\n"
    "  --out FILE     profile to write (default profiles/cpu-local.json; the\n"
    "                 folder profiles/ is created if missing); name \"cpu-local\"\n"
    "  --threads T    kernel threads (default 1)\n"
    "  --repeats R    timed runs per figure (default 5)\n"
    "  --quick        small sizes and few runs: rough figures in well under a second\n"
    "  --json         print the figures as one JSON object\n"
    "\n"
    "Exit status: 0 done, 1 error (a failed write of the profile or of stdout\n"
    "included: the profile is written whole or not at all), 2 bad arguments\n"
    "(an --out that cannot be written included: checked before measuring).\n";

static void progress(const char *what, void *user) {
    (void)user;
    fprintf(stderr, "calibrate: %s\n", what);
}

int cmd_calibrate(int argc, char **argv) {
    tsl_args a = {.cmd = "calibrate", .argc = argc, .argv = argv};
    const char *out = NULL;
    int json = 0;
    tsl_calib_opts o = tsl_calib_opts_default();
    o.progress = progress;
    for (const char *opt; (opt = args_next(&a));) {
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(opt, "--out")) out = args_value(&a, opt);
        else if (!strcmp(opt, "--threads")) o.nthreads = (int)args_int(&a, opt, 1, 1024);
        else if (!strcmp(opt, "--repeats")) o.repeats = (int)args_int(&a, opt, 1, 1000);
        else if (!strcmp(opt, "--quick")) o.quick = 1;
        else if (!strcmp(opt, "--json")) json = 1;
        else args_die(&a, "unknown option '%s'", opt);
    }
    if (out && !out[0]) args_die(&a, "--out: empty file name");
    if (!out) {
        out = "profiles/cpu-local.json";
        if (mkdir("profiles", 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "tensile calibrate: cannot create folder profiles: %s\n",
                    strerror(errno));
            return 1;
        }
    }
    /* fail before measuring if the profile cannot be written; it is then
     * written whole or not at all (never a 0-byte profile on a full disk) */
    if (!tool_check_output("calibrate", "--out", out)) return 2;
    tsl_calib_result r;
    if (tsl_calibrate_cpu(&o, &r) != TSL_OK) {
        fprintf(stderr, "tensile calibrate: %s\n", tsl_last_error());
        return 1;
    }
    if (tsl_profile_save_source(out, &r.profile, r.source, NULL) != TSL_OK) {
        fprintf(stderr, "tensile calibrate: %s\n", tsl_last_error());
        return 1;
    }
    const tsl_device_profile *p = &r.profile;
    if (json) {
        json_t *j = json_object();
        json_object_set_new(j, "profile", json_string(out));
        json_object_set_new(j, "threads", json_integer(o.nthreads));
        json_object_set_new(j, "conv", json_string(r.conv_desc));
        json_object_set_new(j, "conv_flops", json_real(r.conv_flops));
        json_object_set_new(j, "gemm", json_string(r.gemm_desc));
        json_object_set_new(j, "gemm_flops", json_real(r.gemm_flops));
        json_object_set_new(j, "flops", json_real(p->flops));
        json_object_set_new(j, "mem_bw", json_real(p->mem_bw));
        json_object_set_new(j, "mem_bytes", json_integer((json_int_t)p->mem_bytes));
        json_object_set_new(j, "h2d_bw", json_real(p->h2d_bw));
        json_object_set_new(j, "d2h_bw", json_real(p->d2h_bw));
        json_object_set_new(j, "duplex", json_integer(p->duplex));
        json_object_set_new(j, "launch_us", json_real(p->launch_us));
        json_object_set_new(j, "copy_latency_us", json_real(p->copy_latency_us));
        char *s = json_dumps(j, JSON_COMPACT);
        if (s) puts(s);
        free(s);
        json_decref(j);
    } else {
        char b1[32];
        printf("conv            %.2f GFLOP/s  (%s)\n", r.conv_flops * 1e-9, r.conv_desc);
        printf("sgemm           %.2f GFLOP/s  (%s)\n", r.gemm_flops * 1e-9, r.gemm_desc);
        printf("flops           %.2f GFLOP/s  (harmonic mean)\n", p->flops * 1e-9);
        printf("mem_bw          %.2f GB/s     (memcpy, read + written)\n", p->mem_bw * 1e-9);
        printf("h2d_bw          %.2f GB/s\n", p->h2d_bw * 1e-9);
        printf("d2h_bw          %.2f GB/s\n", p->d2h_bw * 1e-9);
        printf("launch_us       %.3f us\n", p->launch_us);
        printf("copy_latency_us %.3f us\n", p->copy_latency_us);
        printf("mem_bytes       %s\n", fmt_bytes(p->mem_bytes, b1, sizeof b1));
        printf("profile         %s (%d thread%s)\n", out, o.nthreads, o.nthreads == 1 ? "" : "s");
    }
    return 0;
}
