/*
 * test_profile.c - device profiles: the shipped files load with their
 * published figures, tsl_copy_us, save -> load exact, every malformed field
 * rejected with a message naming the file, the field and the value, lookup
 * by name, and the CPU calibration.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tensile/calibrate.h"
#include "tensile/sched_json.h"

static char tmpdir[64];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tsl_test_profile_XXXXXX");
    cr_assert(mkdtemp(tmpdir), "mkdtemp failed");
}

static void remove_tmpdir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static void assert_same_profile(const tsl_device_profile *a, const tsl_device_profile *b) {
    cr_assert_str_eq(a->name, b->name);
    cr_assert(memcmp(&a->flops, &b->flops, sizeof(double)) == 0, "flops %.17g vs %.17g", a->flops, b->flops);
    cr_assert(memcmp(&a->mem_bw, &b->mem_bw, sizeof(double)) == 0, "mem_bw %.17g vs %.17g", a->mem_bw, b->mem_bw);
    cr_assert_eq(a->mem_bytes, b->mem_bytes);
    cr_assert(memcmp(&a->h2d_bw, &b->h2d_bw, sizeof(double)) == 0);
    cr_assert(memcmp(&a->d2h_bw, &b->d2h_bw, sizeof(double)) == 0);
    cr_assert_eq(a->duplex, b->duplex);
    cr_assert(memcmp(&a->launch_us, &b->launch_us, sizeof(double)) == 0);
    cr_assert(memcmp(&a->copy_latency_us, &b->copy_latency_us, sizeof(double)) == 0);
}

/* ---- shipped profiles ------------------------------------------------------------ */

Test(profile, shipped_profiles_hold_published_figures) {
    static const struct {
        const char *name;
        double peak_flops, mem_bw, pcie;
        double gib;
    } want[] = {
        {"a6000", 38.7e12, 768e9, 24e9, 48},
        {"rtx2080ti", 13.4e12, 616e9, 12e9, 11},
        {"h100-pcie", 51e12, 2.0e12, 50e9, 80},
        {"h100-sxm", 67e12, 3.35e12, 50e9, 80},
        {"v100", 15.7e12, 900e9, 12e9, 16},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tsl_device_profile p;
        cr_assert_eq(tsl_profile_load(want[i].name, &p), TSL_OK, "%s", tsl_last_error());
        cr_assert_str_eq(p.name, want[i].name);
        /* flops = 0.6 x the published peak (the file's "efficiency") */
        cr_assert(fabs(p.flops - 0.6 * want[i].peak_flops) <= 1e-9 * p.flops, "%s flops %g",
                  want[i].name, p.flops);
        cr_assert_eq(p.mem_bw, want[i].mem_bw, "%s mem_bw %g", want[i].name, p.mem_bw);
        cr_assert_eq(p.mem_bytes, (size_t)(want[i].gib * 1073741824.0));
        cr_assert_eq(p.h2d_bw, want[i].pcie);
        cr_assert_eq(p.d2h_bw, want[i].pcie);
        cr_assert_eq(p.duplex, 1);
        cr_assert_eq(p.launch_us, 5.0);
        cr_assert_eq(p.copy_latency_us, 10.0);
    }
}

Test(profile, copy_time) {
    tsl_device_profile p;
    cr_assert_eq(tsl_profile_load("a6000", &p), TSL_OK, "%s", tsl_last_error());
    /* 24e9 bytes at 24 GB/s: one second plus the 10 us latency */
    cr_assert_eq(tsl_copy_us(&p, (size_t)24000000000ull, 1), 1e6 + 10);
    cr_assert_eq(tsl_copy_us(&p, 0, 0), 10.0);
    p.d2h_bw = 1e9;
    p.h2d_bw = 4e9;
    p.copy_latency_us = 2.5;
    cr_assert(fabs(tsl_copy_us(&p, 1000000, 0) - 1002.5) < 1e-9, "%.17g", tsl_copy_us(&p, 1000000, 0));
    cr_assert(fabs(tsl_copy_us(&p, 1000000, 1) - 252.5) < 1e-9, "%.17g", tsl_copy_us(&p, 1000000, 1));
}

Test(profile, load_by_path_and_by_dir, .init = make_tmpdir, .fini = remove_tmpdir) {
    tsl_device_profile a, b;
    cr_assert_eq(tsl_profile_load("h100-sxm", &a), TSL_OK, "%s", tsl_last_error());
    char path[160];
    snprintf(path, sizeof path, "%s/mine.json", tmpdir);
    snprintf(a.name, sizeof a.name, "mine");
    a.flops = 1.2345678901234567e13; /* needs all 17 digits */
    a.launch_us = 0.1;
    a.copy_latency_us = 1.0 / 3.0;
    a.duplex = 0;
    cr_assert_eq(tsl_profile_save(path, &a), TSL_OK, "%s", tsl_last_error());
    cr_assert_eq(tsl_profile_load(path, &b), TSL_OK, "%s", tsl_last_error());
    assert_same_profile(&a, &b);
    /* by name from TSL_PROFILE_DIR */
    setenv("TSL_PROFILE_DIR", tmpdir, 1);
    memset(&b, 0, sizeof b);
    cr_assert_eq(tsl_profile_load("mine", &b), TSL_OK, "%s", tsl_last_error());
    assert_same_profile(&a, &b);
    /* a shipped profile is still found (the next folders are searched) */
    cr_assert_eq(tsl_profile_load("a6000", &b), TSL_OK, "%s", tsl_last_error());
    unsetenv("TSL_PROFILE_DIR");
    /* with a source and notes */
    cr_assert_eq(tsl_profile_save_source(path, &a, "a \"quoted\" source\n", "notes"), TSL_OK);
    cr_assert_eq(tsl_profile_load(path, &b), TSL_OK, "%s", tsl_last_error());
    assert_same_profile(&a, &b);
}

Test(profile, not_found_and_bad_names) {
    tsl_device_profile p;
    memset(&p, 0x5a, sizeof p);
    tsl_device_profile before = p;
    cr_assert_eq(tsl_profile_load("no-such-device", &p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "'no-such-device' not found"), "%s", tsl_last_error());
    cr_assert_eq(tsl_profile_load("/nonexistent/dev.json", &p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), "/nonexistent/dev.json"), "%s", tsl_last_error());
    cr_assert_eq(tsl_profile_load("bad name", &p), TSL_ERR_INVALID);
    cr_assert_eq(tsl_profile_load("", &p), TSL_ERR_INVALID);
    cr_assert(memcmp(&p, &before, sizeof p) == 0, "profile written on failure");
}

Test(profile, save_rejects_bad_values, .init = make_tmpdir, .fini = remove_tmpdir) {
    tsl_device_profile p;
    cr_assert_eq(tsl_profile_load("a6000", &p), TSL_OK, "%s", tsl_last_error());
    char path[160];
    snprintf(path, sizeof path, "%s/x.json", tmpdir);
    tsl_device_profile q = p;
    q.h2d_bw = -1;
    cr_assert_eq(tsl_profile_save(path, &q), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "field 'h2d_bw': -1"), "%s", tsl_last_error());
    q = p;
    q.launch_us = NAN;
    cr_assert_eq(tsl_profile_save(path, &q), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "field 'launch_us'"), "%s", tsl_last_error());
    q = p;
    q.duplex = 2;
    cr_assert_eq(tsl_profile_save(path, &q), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "field 'duplex': 2"), "%s", tsl_last_error());
    q = p;
    q.name[0] = '\0';
    cr_assert_eq(tsl_profile_save(path, &q), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "field 'name'"), "%s", tsl_last_error());
    cr_assert_eq(access(path, F_OK), -1, "nothing written for a bad profile");
    snprintf(path, sizeof path, "%s/no/such/dir/x.json", tmpdir);
    cr_assert_eq(tsl_profile_save(path, &p), TSL_ERR_IO);
    cr_assert(strstr(tsl_last_error(), path), "%s", tsl_last_error());
}

/* ---- strict validation ---------------------------------------------------------- */

static const char base_profile[] =
    "{\n"
    "  \"name\": \"dev\",\n"
    "  \"source\": \"test\",\n"
    "  \"flops\": 1e13,\n"
    "  \"mem_bw\": 5e11,\n"
    "  \"mem_bytes\": 1073741824,\n"
    "  \"h2d_bw\": 1e10,\n"
    "  \"d2h_bw\": 2e10,\n"
    "  \"duplex\": 1,\n"
    "  \"launch_us\": 5,\n"
    "  \"copy_latency_us\": 10\n"
    "}\n";

typedef struct bad_case {
    const char *from, *to, *expect;
} bad_case;

Test(profile, each_malformed_field_is_named, .init = make_tmpdir, .fini = remove_tmpdir) {
    static const char *const required[] = {"name", "source", "flops", "mem_bw", "mem_bytes",
                                           "h2d_bw", "d2h_bw", "duplex", "launch_us",
                                           "copy_latency_us"};
    static const bad_case cases[] = {
        {"\"flops\": 1e13", "\"flops\": -1e13", "field 'flops': -10000000000000 is not positive"},
        {"\"flops\": 1e13", "\"flops\": 0", "field 'flops': 0 is not positive"},
        {"\"flops\": 1e13", "\"flops\": 1e30", "field 'flops': 1e+30 is absurd"},
        /* rates so small that every op or copy would take forever (issue 15) */
        {"\"flops\": 1e13", "\"flops\": 5e-324", "field 'flops': 4.94065645841247e-324 is too small (expected a value in [1e+06, 1e+18])"},
        {"\"flops\": 1e13", "\"flops\": 1e-300", "field 'flops': 1e-300 is too small"},
        {"\"mem_bw\": 5e11", "\"mem_bw\": 1e-300", "field 'mem_bw': 1e-300 is too small (expected a value in [1e+06, 1e+15])"},
        {"\"h2d_bw\": 1e10", "\"h2d_bw\": 1000", "field 'h2d_bw': 1000 is too small"},
        {"\"name\": \"dev\"", "\"name\": \"a\\u001b[31mred\"", "field 'name': \"a\\u001B[31mred\" holds a control character"},
        {"\"flops\": 1e13", "\"flops\": \"fast\"", "field 'flops': \"fast\" is not a number"},
        {"\"mem_bw\": 5e11", "\"mem_bw\": -5", "field 'mem_bw': -5 is not positive"},
        {"\"mem_bw\": 5e11", "\"mem_bw\": null", "field 'mem_bw': null is not a number"},
        {"\"h2d_bw\": 1e10", "\"h2d_bw\": 0", "field 'h2d_bw': 0 is not positive"},
        {"\"d2h_bw\": 2e10", "\"d2h_bw\": -2e10", "field 'd2h_bw': -20000000000 is not positive"},
        {"\"launch_us\": 5", "\"launch_us\": -5", "field 'launch_us': -5 is not positive"},
        {"\"launch_us\": 5", "\"launch_us\": 1e9", "field 'launch_us': 1000000000 is absurd"},
        {"\"copy_latency_us\": 10", "\"copy_latency_us\": [10]", "field 'copy_latency_us': [10] is not a number"},
        {"\"mem_bytes\": 1073741824", "\"mem_bytes\": 1.5e9", "field 'mem_bytes': 1500000000.0 is not an integer"},
        {"\"mem_bytes\": 1073741824", "\"mem_bytes\": -1", "field 'mem_bytes': -1 is not positive"},
        {"\"mem_bytes\": 1073741824", "\"mem_bytes\": 0", "field 'mem_bytes': 0 is not positive"},
        {"\"mem_bytes\": 1073741824", "\"mem_bytes\": 9000000000000000000", "field 'mem_bytes': 9000000000000000000 is absurd"},
        {"\"duplex\": 1", "\"duplex\": 2", "field 'duplex': 2 is not 0 or 1"},
        {"\"duplex\": 1", "\"duplex\": true", "field 'duplex': true is not 0 or 1"},
        {"\"name\": \"dev\"", "\"name\": \"\"", "field 'name': \"\" has 0 characters"},
        {"\"name\": \"dev\"", "\"name\": 3", "field 'name': 3 is not a string"},
        {"\"name\": \"dev\"", "\"name\": \"0123456789012345678901234567890123456789012345678901234567890123456789\"",
         "field 'name': \"0123456789"},
        {"\"source\": \"test\"", "\"source\": \"\"", "field 'source': \"\" has 0 characters"},
        {"\"source\": \"test\"", "\"source\": \"test\", \"notes\": 4", "field 'notes': 4 is not a string"},
        {"\"source\": \"test\"", "\"source\": \"test\", \"efficiency\": 1.5", "field 'efficiency': 1.5 is not a number in (0, 1]"},
        {"\"source\": \"test\"", "\"source\": \"test\", \"efficiency\": 0", "field 'efficiency': 0 is not a number in (0, 1]"},
        {"\"source\": \"test\"", "\"source\": \"test\", \"bandwidth\": 4", "unknown field 'bandwidth'"},
        {"\"source\": \"test\"", "\"source\": \"test\", \"source\": \"x\"", "duplicate object key"},
        {"{\n", "[\n", "not valid JSON"},
        {"}\n", "}}\n", "not valid JSON"},
    };
    char path[160];
    snprintf(path, sizeof path, "%s/dev.json", tmpdir);
    tsl_device_profile p;
    write_text(path, base_profile);
    cr_assert_eq(tsl_profile_load(path, &p), TSL_OK, "base: %s", tsl_last_error());
    cr_assert_eq(p.d2h_bw, 2e10);
    cr_assert_eq(p.mem_bytes, (size_t)1 << 30);

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *at = strstr(base_profile, cases[c].from);
        cr_assert(at, "case %zu: '%s' not in the base", c, cases[c].from);
        char text[1024];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base_profile), base_profile, cases[c].to,
                 at + strlen(cases[c].from));
        write_text(path, text);
        memset(&p, 0, sizeof p);
        tsl_status st = tsl_profile_load(path, &p);
        cr_assert_eq(st, TSL_ERR_FORMAT, "case %zu: status %d for\n%s", c, st, text);
        cr_assert(strncmp(tsl_last_error(), path, strlen(path)) == 0,
                  "case %zu: message does not name the file: %s", c, tsl_last_error());
        cr_assert(strstr(tsl_last_error(), cases[c].expect), "case %zu: message\n  %s\nlacks\n  %s", c,
                  tsl_last_error(), cases[c].expect);
        cr_assert_eq(p.flops, 0.0, "case %zu: profile written on failure", c);
    }
    /* every required field, removed */
    for (size_t k = 0; k < sizeof required / sizeof required[0]; k++) {
        char key[64], text[1024];
        snprintf(key, sizeof key, "\"%s\":", required[k]);
        const char *at = strstr(base_profile, key);
        cr_assert(at);
        const char *line = at - 2, *end = strchr(at, '\n') + 1; /* "  \"key\": value,\n" */
        snprintf(text, sizeof text, "%.*s%s", (int)(line - base_profile), base_profile, end);
        if (k + 1 == sizeof required / sizeof required[0]) { /* last line: drop the comma before */
            char *comma = strrchr(text, ',');
            memmove(comma, comma + 1, strlen(comma));
        }
        write_text(path, text);
        cr_assert_eq(tsl_profile_load(path, &p), TSL_ERR_FORMAT, "without %s:\n%s", required[k], text);
        char want[96];
        snprintf(want, sizeof want, "field '%s': missing", required[k]);
        cr_assert(strstr(tsl_last_error(), want), "without %s: %s", required[k], tsl_last_error());
    }
}

/* ---- calibration ----------------------------------------------------------------- */

Test(calibrate, quick_run_gives_a_loadable_profile, .init = make_tmpdir, .fini = remove_tmpdir) {
    tsl_calib_opts o = tsl_calib_opts_default();
    o.quick = 1;
    o.repeats = 3;
    tsl_calib_result r;
    cr_assert_eq(tsl_calibrate_cpu(&o, &r), TSL_OK, "%s", tsl_last_error());
    printf("calibrate (quick, 1 thread): conv %.2f GFLOP/s, sgemm %.2f GFLOP/s, memcpy %.2f GB/s, "
           "h2d %.2f GB/s, d2h %.2f GB/s, launch %.3f us, copy latency %.3f us\n",
           r.conv_flops * 1e-9, r.gemm_flops * 1e-9, r.memcpy_bw * 1e-9, r.h2d_bw * 1e-9,
           r.d2h_bw * 1e-9, r.launch_us, r.copy_latency_us);
    /* floors far below any machine that runs the test suite, ceilings far
     * above: they catch unit mistakes (s vs us, bits vs bytes) */
    cr_assert(r.conv_flops > 1e8 && r.conv_flops < 1e14, "conv %g FLOP/s", r.conv_flops);
    cr_assert(r.gemm_flops > 1e8 && r.gemm_flops < 1e14, "gemm %g FLOP/s", r.gemm_flops);
    cr_assert(r.memcpy_bw > 1e8 && r.memcpy_bw < 1e13, "memcpy %g B/s", r.memcpy_bw);
    cr_assert(r.h2d_bw > 1e8 && r.h2d_bw < 1e13, "h2d %g B/s", r.h2d_bw);
    cr_assert(r.d2h_bw > 1e8 && r.d2h_bw < 1e13, "d2h %g B/s", r.d2h_bw);
    cr_assert(r.launch_us > 0 && r.launch_us < 1e4, "launch %g us", r.launch_us);
    cr_assert(r.copy_latency_us > 0 && r.copy_latency_us < 1e4, "copy latency %g us", r.copy_latency_us);
    const tsl_device_profile *p = &r.profile;
    cr_assert_str_eq(p->name, "cpu-local");
    double hm = 2.0 / (1.0 / r.conv_flops + 1.0 / r.gemm_flops);
    cr_assert(fabs(p->flops - hm) <= 1e-12 * hm);
    cr_assert_eq(p->mem_bw, r.memcpy_bw);
    cr_assert_eq(p->duplex, 1);
    cr_assert(p->mem_bytes >= (size_t)64 << 20);
    char path[160];
    snprintf(path, sizeof path, "%s/cpu-local.json", tmpdir);
    cr_assert_eq(tsl_profile_save_source(path, p, r.source, NULL), TSL_OK, "%s", tsl_last_error());
    tsl_device_profile back;
    cr_assert_eq(tsl_profile_load(path, &back), TSL_OK, "%s", tsl_last_error());
    assert_same_profile(p, &back);

    o.nthreads = 0;
    cr_assert_eq(tsl_calibrate_cpu(&o, &r), TSL_ERR_INVALID);
    cr_assert(strstr(tsl_last_error(), "nthreads 0"), "%s", tsl_last_error());
    o.nthreads = 1;
    o.repeats = 0;
    cr_assert_eq(tsl_calibrate_cpu(&o, &r), TSL_ERR_INVALID);
}
