/*
 * bench_machine.h - the first lines of every benchmark's output: the
 * machine, its CPU and the versions of everything measured (header-only:
 * each file of bench/ is its own program).
 */
#ifndef TSL_BENCH_MACHINE_H
#define TSL_BENCH_MACHINE_H
#include <jansson.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

/* Prints "machine: ..." (with `extra` appended when not NULL, e.g. the
 * thread counts) and "versions: ...". */
static inline void bench_print_machine(const char *extra) {
    struct utsname u;
    uname(&u);
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        fclose(f);
    }
    const dnnl_version_t *v = dnnl_version();
    printf("machine: %s %s, %s, %ld online CPUs%s%s\n", u.sysname, u.machine, model,
           sysconf(_SC_NPROCESSORS_ONLN), extra ? "; " : "", extra ? extra : "");
    printf("versions: tensile 0.1.0; gcc %s; oneDNN %d.%d.%d (cpu runtime %s); jansson %s; "
           "zlib %s\n",
           __VERSION__, v->major, v->minor, v->patch,
           v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other", JANSSON_VERSION, zlibVersion());
}
#endif
